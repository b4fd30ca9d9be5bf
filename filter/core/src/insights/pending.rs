//! One worker's search insights not yet in shared data, and how they get there: on the tick,
//! the sessions' search links are written to their slots, each namespace's tally is merged
//! into the shared one under compare-and-swap, and the names
//! its searches returned are added to the shared set (written only when a name is new to it, so
//! that the set, bounded by the catalog, stops costing anything once every tool was returned).

use super::tally::Tally;
use crate::index::catalog::CatalogIndex;
use crate::index::fnv::FnvHashSet;
use crate::keys;
use crate::store::{SharedData, StoreError};
use std::rc::{Rc, Weak};

/// How often a worker folds its counts into shared data: the endpoint is at most this late.
pub const FLUSH_MS: u64 = 1_000;
/// The most names the shared set of returned tools holds.
pub const RETURNED_KEPT: usize = 200_000;

/// One namespace's part of [`Pending`].
#[derive(Debug, Default)]
struct Namespace {
    tally: Tally,
    /// Names returned since the last flush that the shared set may not hold (at most
    /// `RETURNED_KEPT`: a worker that cannot flush stops adding).
    returned: FnvHashSet<String>,
    /// The catalog positions this worker's searches returned, of one catalog version: a name
    /// goes to `returned` the first time, and a search after that costs a bit test per result.
    seen: Seen,
}

/// One bit per tool of the catalog version `of` (a `Weak`, so that a new version is never
/// taken for this one, even at the same address).
#[derive(Debug, Default)]
struct Seen {
    of: Weak<CatalogIndex>,
    bits: Vec<u64>,
}

impl Seen {
    /// Marks `doc` of `index`; whether it was new (any doc is, once the version changed).
    fn mark(&mut self, index: &Rc<CatalogIndex>, doc: u32) -> bool {
        if !std::ptr::eq(self.of.as_ptr(), Rc::as_ptr(index)) {
            self.of = Rc::downgrade(index);
            self.bits.clear();
            self.bits.resize(index.catalog.len().div_ceil(64), 0);
        }
        let (word, bit) = ((doc / 64) as usize, 1u64 << (doc % 64));
        match self.bits.get_mut(word) {
            Some(w) if *w & bit != 0 => false,
            Some(w) => {
                *w |= bit;
                true
            }
            None => true,
        }
    }
}

#[derive(Debug, Default)]
pub struct Pending {
    /// By namespace (a route serves one or a few).
    namespaces: Vec<(String, Namespace)>,
    /// What this worker's searches returned, for the calls after them.
    pub links: super::link::Unwritten,
    last_flush_ms: u64,
}

impl Pending {
    /// `namespace`'s part, made the first time (looked up by `&str`: no allocation on a
    /// search's path); `None` never happens once it is made.
    fn of(&mut self, namespace: &str) -> Option<&mut Namespace> {
        if !self.namespaces.iter().any(|(n, _)| n == namespace) {
            self.namespaces
                .push((namespace.to_string(), Namespace::default()));
        }
        self.namespaces
            .iter_mut()
            .find(|(n, _)| n == namespace)
            .map(|(_, ns)| ns)
    }

    pub fn tally(&mut self, namespace: &str) -> Option<&mut Tally> {
        self.of(namespace).map(|ns| &mut ns.tally)
    }

    /// A search of `namespace` returned the tools at these positions of `index`, with their
    /// names.
    pub fn returned<'n>(
        &mut self,
        namespace: &str,
        index: &Rc<CatalogIndex>,
        found: impl Iterator<Item = (u32, &'n str)>,
    ) {
        let Some(ns) = self.of(namespace) else {
            return;
        };
        for (doc, name) in found {
            if ns.returned.len() >= RETURNED_KEPT {
                return;
            }
            if ns.seen.mark(index, doc) && !name.contains('\n') {
                ns.returned.insert(name.to_string());
            }
        }
    }

    /// Folds what is pending into shared data, at most every [`FLUSH_MS`]. What cannot be
    /// written now (another worker won the race, or the host failed) stays for the next tick.
    pub fn flush(&mut self, store: &dyn SharedData, now_ms: u64) -> Result<(), StoreError> {
        if now_ms.saturating_sub(self.last_flush_ms) < FLUSH_MS {
            return Ok(());
        }
        self.last_flush_ms = now_ms;
        let mut result = self.links.write(store);
        for (name, ns) in &mut self.namespaces {
            if !ns.tally.is_empty() {
                match merge_tally(store, name, &ns.tally) {
                    Ok(()) => ns.tally = Tally::default(),
                    Err(e) => result = Err(e),
                }
            }
            if !ns.returned.is_empty() {
                match merge_returned(store, name, &ns.returned) {
                    Ok(()) => ns.returned.clear(),
                    Err(e) => result = Err(e),
                }
            }
        }
        result
    }
}

fn merge_tally(store: &dyn SharedData, namespace: &str, tally: &Tally) -> Result<(), StoreError> {
    let key = keys::insights(namespace);
    let (value, cas) = store.get(&key)?;
    let mut shared = value.as_deref().and_then(Tally::read).unwrap_or_default();
    shared.merge(tally);
    store.set(&key, &shared.write(), cas)
}

/// Adds `names` to the shared set.
fn merge_returned(
    store: &dyn SharedData,
    namespace: &str,
    names: &FnvHashSet<String>,
) -> Result<(), StoreError> {
    let key = keys::insights_returned(namespace);
    let (value, cas) = store.get(&key)?;
    let mut all = parse_returned(value.as_deref());
    let before = all.len();
    all.extend(names.iter().cloned());
    all.sort_unstable();
    all.dedup();
    all.truncate(RETURNED_KEPT.max(before));
    if all.len() > before {
        store.set(&key, all.join("\n").as_bytes(), cas)?;
    }
    Ok(())
}

/// The shared set of returned names, sorted.
fn parse_returned(value: Option<&[u8]>) -> Vec<String> {
    let mut names: Vec<String> = value
        .and_then(|v| std::str::from_utf8(v).ok())
        .map(|text| {
            text.split('\n')
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    names.sort_unstable();
    names
}

/// `namespace`'s shared tally and returned names (sorted), with this worker's unflushed ones
/// added.
pub fn read(
    store: &dyn SharedData,
    pending: &Pending,
    namespace: &str,
) -> Result<(Tally, Vec<String>), StoreError> {
    let (tally, _) = store.get(&keys::insights(namespace))?;
    let mut tally = tally.as_deref().and_then(Tally::read).unwrap_or_default();
    let (returned, _) = store.get(&keys::insights_returned(namespace))?;
    let mut returned = parse_returned(returned.as_deref());
    if let Some((_, own)) = pending.namespaces.iter().find(|(n, _)| n == namespace) {
        tally.merge(&own.tally);
        returned.extend(own.returned.iter().cloned());
        returned.sort_unstable();
        returned.dedup();
    }
    Ok((tally, returned))
}
