//! Searches by query length (`QUERY_CLASSES`): each class timed as a whole exchange, natively
//! and in the VM, in the same round robin as the rest of section 3, with how many tools its
//! queries match (a long query's cost is its matches).

use crate::inproc::{bm25_only, native_mean, query, search_bodies, wasm_mean, Item};
use crate::native::NativeEnv;
use host_shim::Vm;
use mcp_tool_search_core::{search, CatalogIndex, Config};
use std::cell::RefCell;
use std::time::Duration;

/// Searches of one query length at one catalog size: the mean exchange of the class's queries
/// (medians over rounds) and the median number of tools its queries match.
#[derive(Debug, Clone, Default)]
pub struct LengthCosts {
    pub words: usize,
    pub native: Duration,
    pub wasm: Duration,
    pub matches: usize,
}

/// Each class's search requests, by the class's length.
pub fn bodies() -> Vec<(usize, Vec<String>)> {
    crate::QUERY_CLASSES
        .iter()
        .map(|(words, queries)| (*words, search_bodies(queries)))
        .collect()
}

/// Two round-robin items per class, native then wasm: the mean exchange of its queries.
pub fn items<'a>(
    env: &'a NativeEnv,
    vm: &'a RefCell<Vm>,
    classes: &'a [(usize, Vec<String>)],
) -> Vec<Item<'a>> {
    let mut items: Vec<Item<'a>> = Vec::new();
    for (_, class) in classes {
        items.push((
            "native search by length",
            Box::new(move || native_mean(env, class)),
        ));
        items.push((
            "wasm search by length",
            Box::new(move || wasm_mean(vm, class)),
        ));
    }
    items
}

/// The classes' figures from the round robin's samples (`items` added at `at`).
pub fn costs(
    index: &CatalogIndex,
    config: &Config,
    samples: &[Vec<Duration>],
    at: usize,
) -> Vec<LengthCosts> {
    let m = |i: usize| {
        samples
            .get(i)
            .map(|v| crate::inproc::median(v))
            .unwrap_or_default()
    };
    crate::QUERY_CLASSES
        .iter()
        .enumerate()
        .map(|(k, (words, queries))| LengthCosts {
            words: *words,
            native: m(at + 2 * k),
            wasm: m(at + 2 * k + 1),
            matches: median_matches(index, config, queries),
        })
        .collect()
}

/// The median number of tools `queries` match (BM25, no limit on what matches).
pub fn median_matches(index: &CatalogIndex, config: &Config, queries: &[&str]) -> usize {
    let mut matches: Vec<usize> = queries
        .iter()
        .map(|text| search(index, config, &query(text), None, bm25_only()).matches)
        .collect();
    matches.sort_unstable();
    matches.get(matches.len() / 2).copied().unwrap_or(0)
}
