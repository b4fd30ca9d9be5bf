//! One worker's search insights not yet in shared data, and how they get there: on the tick,
//! the sessions' search links are written to their slots, each namespace's tally is merged
//! into the shared one under compare-and-swap, and the names
//! its searches returned are added to the shared set (written only when a name is new to it, so
//! that the set, bounded by the catalog, stops costing anything once every tool was returned).

use super::tally::Tally;
use crate::index::fnv::FnvHashSet;
use crate::keys;
use crate::store::{SharedData, StoreError};

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
    /// Names this worker knows the shared set holds, or `returned` will add to it.
    known: FnvHashSet<String>,
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

    /// A search of `namespace` returned `names`.
    pub fn returned<'n>(&mut self, namespace: &str, names: impl Iterator<Item = &'n str>) {
        let Some(ns) = self.of(namespace) else {
            return;
        };
        for name in names {
            // One lookup per name: `known` holds what was returned since the last flush too.
            if ns.known.contains(name) || name.contains('\n') || ns.returned.len() >= RETURNED_KEPT
            {
                continue;
            }
            ns.known.insert(name.to_string());
            ns.returned.insert(name.to_string());
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
                    Ok(all) => {
                        ns.returned.clear();
                        ns.known = all.into_iter().collect();
                    }
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

/// Adds `names` to the shared set; returns the set as it now is, sorted.
fn merge_returned(
    store: &dyn SharedData,
    namespace: &str,
    names: &FnvHashSet<String>,
) -> Result<Vec<String>, StoreError> {
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
    Ok(all)
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
