//! Searches by query length (`QUERY_CLASSES`): each class timed as a whole exchange, natively
//! and in the VM, in the same round robin as the rest of section 3, with how many tools its
//! queries match (a long query's cost is its matches).

use crate::inproc::{search_request, timed, Item};
use crate::native::NativeEnv;
use crate::shim::shim_search;
use host_shim::Vm;
use mcp_tool_search_core::{search, CatalogIndex, Config, Fallback, FallbackKind, Query};
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
        .map(|(words, queries)| {
            let bodies = queries
                .iter()
                .enumerate()
                .map(|(i, q)| search_request(i + 1, q))
                .collect();
            (*words, bodies)
        })
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
        let per_class = |d: Duration| d / u32::try_from(class.len().max(1)).unwrap_or(1);
        items.push((
            "native search by length",
            Box::new(move || {
                let mut total = Duration::ZERO;
                for body in class {
                    let (out, d) = timed(|| env.search(body.as_bytes()));
                    out?;
                    total += d;
                }
                Ok(per_class(total))
            }),
        ));
        items.push((
            "wasm search by length",
            Box::new(move || {
                let mut total = Duration::ZERO;
                for body in class {
                    total += shim_search(&mut vm.borrow_mut(), body)?;
                }
                Ok(per_class(total))
            }),
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
        .map(|text| {
            let q = Query {
                text: (*text).to_owned(),
                limit: 5,
                offset: 0,
                group: None,
            };
            search(
                index,
                config,
                &q,
                None,
                Err(Fallback::new(FallbackKind::Unavailable, "-")),
            )
            .matches
        })
        .collect();
    matches.sort_unstable();
    matches.get(matches.len() / 2).copied().unwrap_or(0)
}
