//! What the recent searches of a session (or caller) returned, and the tools `describe_tool`
//! gave it, so that a tool call can be linked to the search that offered the tool.
//!
//! A worker keeps what its searches returned in its own memory ([`Unwritten`]), where a call on
//! the same worker finds it at once, and writes it to shared data on its tick (every second,
//! with the tally): a client's requests may arrive on several connections (an SSE `GET` beside
//! pooled `POST`s), and Envoy spreads connections over its workers, so the search and the call
//! that follows it may meet different VMs. Writing on the tick keeps shared data off a search's
//! path; a call on another worker within that second finds nothing yet (an agent reads a
//! search's answer before it calls). Memory is bounded: a namespace has [`SLOTS`] keys, a
//! session hashes to one, and a slot keeps the last session written to it (a session whose slot
//! another took since its search has its call counted as made without a search). Each slot
//! holds at most [`SEARCHES_KEPT`] searches of [`NAMES_PER_SEARCH`] names and
//! [`DESCRIBED_KEPT`] described names; a worker holds at most [`UNWRITTEN_KEPT`] sessions'
//! records between two ticks.

use crate::index::fnv::FnvHashMap;
use crate::keys;
use crate::store::{SharedData, StoreError};

/// Keys per namespace.
pub const SLOTS: usize = 256;
/// Searches kept per session, newest first: an agent often searches twice before it calls.
pub const SEARCHES_KEPT: usize = 4;
/// Names kept per search, in rank order (a call of a later one counts as without search).
pub const NAMES_PER_SEARCH: usize = 50;
/// Names `describe_tool` gave a session, newest first.
pub const DESCRIBED_KEPT: usize = 32;
/// Sessions a worker holds between two ticks (more are not linked across workers).
pub const UNWRITTEN_KEPT: usize = 4_096;
/// A compare-and-swap that keeps losing to other workers gives up (the link is only a count).
const ATTEMPTS: usize = 3;

/// Whose searches and calls these are: a hash of the MCP session id, else of the caller's
/// identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkKey(u64);

impl LinkKey {
    /// The key of `text` of a kind (a session id, a caller), kinds apart: FNV-1a, the same on
    /// every worker and after a restart.
    pub fn of_kind(kind: &str, text: &str) -> LinkKey {
        use std::hash::Hasher;
        let mut h = crate::index::fnv::Fnv1a::default();
        h.write(kind.as_bytes());
        h.write(b" ");
        h.write(text.as_bytes());
        LinkKey(h.finish())
    }

    fn slot(self) -> usize {
        usize::try_from(self.0 % SLOTS as u64).unwrap_or(0)
    }
}

/// How a call relates to what its session searched and described.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Linked {
    /// The rank at which the newest search that returned the tool returned it.
    pub rank: Option<usize>,
    /// That search's id.
    pub search_id: Option<String>,
    /// `describe_tool` gave the session this tool's definition.
    pub described: bool,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Search {
    id: String,
    /// The rank of the first name is `offset + 1`.
    offset: usize,
    /// The names in rank order, tab-separated (a name that cannot be written is empty), as the
    /// slot's line holds them: one buffer, reused for the session's next search.
    names: String,
}

impl Search {
    /// The rank of `name` in this search.
    fn rank_of(&self, name: &str) -> Option<usize> {
        if self.names.is_empty() {
            return None;
        }
        let i = self.names.split('\t').position(|n| n == name)?;
        Some(self.offset + i + 1)
    }

    /// Becomes search `id` of `names` (ranked from `offset + 1`), in the buffers it has.
    fn set<'n>(&mut self, id: &str, offset: usize, names: impl Iterator<Item = &'n str>) {
        self.id.clear();
        self.id.push_str(id);
        self.offset = offset;
        self.names.clear();
        for (i, name) in names.take(NAMES_PER_SEARCH).enumerate() {
            if i > 0 {
                self.names.push('\t');
            }
            if writable(name) {
                self.names.push_str(name);
            }
        }
    }
}

/// One slot's value: the session that owns it, its searches (newest first) and the names
/// described to it (newest first). Written as lines: `<owner hex>`, then `s <id> <offset>` and
/// `d`, each followed by its names, tab-separated (a name holding a tab or a line break is
/// left out: it is never linked).
#[derive(Debug, Default, PartialEq, Eq)]
struct Record {
    owner: u64,
    searches: Vec<Search>,
    described: Vec<String>,
}

fn writable(name: &str) -> bool {
    // Bytes, not chars: both separators are ASCII, and a name is tested on every search.
    !name.is_empty() && !name.bytes().any(|b| b == b'\t' || b == b'\n')
}

impl Record {
    fn parse(bytes: &[u8]) -> Option<Record> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut lines = text.split('\n');
        let owner = u64::from_str_radix(lines.next()?, 16).ok()?;
        let mut record = Record {
            owner,
            ..Record::default()
        };
        for line in lines {
            let (head, names) = line.split_once('\t').unwrap_or((line, ""));
            if head == "d" {
                record.described = names
                    .split('\t')
                    .filter(|n| !n.is_empty())
                    .map(str::to_string)
                    .collect();
            } else if let Some(rest) = head.strip_prefix("s ") {
                let (id, offset) = rest.split_once(' ')?;
                record.searches.push(Search {
                    id: id.to_string(),
                    offset: offset.parse().ok()?,
                    names: names.to_string(),
                });
            }
        }
        Some(record)
    }

    fn link(&self, name: &str) -> Linked {
        if !writable(name) {
            return Linked::default();
        }
        let found = self
            .searches
            .iter()
            .find_map(|s| Some((s.rank_of(name)?, s.id.clone())));
        Linked {
            rank: found.as_ref().map(|(rank, _)| *rank),
            search_id: found.map(|(_, id)| id),
            described: self.described.iter().any(|n| n == name),
        }
    }

    /// Puts `newer` (the same session's, since) in front of these.
    fn take_newer(&mut self, newer: &Record) {
        let older = std::mem::take(&mut self.searches);
        self.searches = newer
            .searches
            .iter()
            .map(Search::clone)
            .chain(older)
            .collect();
        self.searches.truncate(SEARCHES_KEPT);
        for name in newer.described.iter().rev() {
            self.describe(name);
        }
    }

    /// `describe_tool` gave the session `name`: first of the described names, once.
    fn describe(&mut self, name: &str) {
        self.described.retain(|n| n != name);
        self.described.insert(0, name.to_string());
        self.described.truncate(DESCRIBED_KEPT);
    }

    fn write(&self) -> Vec<u8> {
        let mut out = format!("{:x}", self.owner);
        for s in &self.searches {
            out.push_str(&format!("\ns {} {}", s.id, s.offset));
            if !s.names.is_empty() {
                out.push('\t');
                out.push_str(&s.names);
            }
        }
        if !self.described.is_empty() {
            out.push_str("\nd");
            for name in &self.described {
                out.push('\t');
                out.push_str(name);
            }
        }
        out.into_bytes()
    }
}

/// Reads `key`'s slot as `key`'s record (empty when another session owns it), changes it and
/// writes it back, retrying when another worker wrote the slot meanwhile.
fn update(
    store: &dyn SharedData,
    namespace: &str,
    key: LinkKey,
    change: impl Fn(&mut Record),
) -> Result<(), StoreError> {
    let slot = keys::link(namespace, key.slot());
    let mut last = Err(StoreError::Contended);
    for _ in 0..ATTEMPTS {
        let (value, cas) = store.get(&slot)?;
        let mut record = value
            .as_deref()
            .and_then(Record::parse)
            .filter(|r| r.owner == key.0)
            .unwrap_or(Record {
                owner: key.0,
                ..Record::default()
            });
        change(&mut record);
        last = store.set(&slot, &record.write(), cas);
        if last != Err(StoreError::CasMismatch) {
            return last;
        }
    }
    last
}

/// What this worker's searches returned and `describe_tool` gave, by namespace and session,
/// since its last tick.
#[derive(Debug, Default)]
pub struct Unwritten {
    /// By namespace (a route serves one or a few, looked up by `&str`: nothing allocated on a
    /// search's path), then by session.
    namespaces: Vec<(String, FnvHashMap<u64, Record>)>,
}

impl Unwritten {
    fn record(&mut self, namespace: &str, key: LinkKey) -> Option<&mut Record> {
        let i = match self.namespaces.iter().position(|(n, _)| n == namespace) {
            Some(i) => i,
            None => {
                self.namespaces
                    .push((namespace.to_string(), FnvHashMap::default()));
                self.namespaces.len() - 1
            }
        };
        let held: usize = self.namespaces.iter().map(|(_, r)| r.len()).sum();
        let (_, records) = self.namespaces.get_mut(i)?;
        if !records.contains_key(&key.0) && held >= UNWRITTEN_KEPT {
            return None;
        }
        Some(records.entry(key.0).or_insert_with(|| Record {
            owner: key.0,
            ..Record::default()
        }))
    }

    /// A search of `key`'s session returned `names` (in rank order, the first at `offset + 1`).
    pub fn searched<'n>(
        &mut self,
        namespace: &str,
        key: LinkKey,
        id: &str,
        offset: usize,
        names: impl Iterator<Item = &'n str>,
    ) {
        let Some(record) = self.record(namespace, key) else {
            return;
        };
        // The oldest search's buffers hold the newest once the session has searched enough.
        let mut search = if record.searches.len() >= SEARCHES_KEPT {
            record.searches.pop().unwrap_or_default()
        } else {
            Search::default()
        };
        search.set(id, offset, names);
        record.searches.insert(0, search);
        record.searches.truncate(SEARCHES_KEPT);
    }

    /// `describe_tool` gave `key`'s session the definitions of `names`.
    pub fn described<'n>(
        &mut self,
        namespace: &str,
        key: LinkKey,
        names: impl Iterator<Item = &'n str>,
    ) {
        let Some(record) = self.record(namespace, key) else {
            return;
        };
        for name in names.filter(|n| writable(n)) {
            record.describe(name);
        }
    }

    /// What this worker holds of `key`'s session about `name`.
    fn link(&self, namespace: &str, key: LinkKey, name: &str) -> Linked {
        self.namespaces
            .iter()
            .find(|(n, _)| n == namespace)
            .and_then(|(_, records)| records.get(&key.0))
            .map(|r| r.link(name))
            .unwrap_or_default()
    }

    /// Writes every session's records into its slot (in front of what the slot holds for the
    /// same session). What cannot be written now stays for the next tick.
    pub fn write(&mut self, store: &dyn SharedData) -> Result<(), StoreError> {
        let mut result = Ok(());
        for (namespace, records) in &mut self.namespaces {
            for (owner, record) in std::mem::take(records) {
                let key = LinkKey(owner);
                if let Err(e) = update(store, namespace, key, |slot| slot.take_newer(&record)) {
                    records.insert(owner, record);
                    result = Err(e);
                }
            }
        }
        result
    }
}

/// How a call of `name` by `key`'s session relates to its recent searches: this worker's own
/// first, then the slot (one read).
pub fn link_call(
    store: &dyn SharedData,
    unwritten: &Unwritten,
    namespace: &str,
    key: LinkKey,
    name: &str,
) -> Result<Linked, StoreError> {
    let own = unwritten.link(namespace, key, name);
    if own.rank.is_some() {
        return Ok(own);
    }
    let (value, _) = store.get(&keys::link(namespace, key.slot()))?;
    let written = value
        .as_deref()
        .and_then(Record::parse)
        .filter(|r| r.owner == key.0)
        .map(|r| r.link(name))
        .unwrap_or_default();
    Ok(Linked {
        described: own.described || written.described,
        ..written
    })
}
