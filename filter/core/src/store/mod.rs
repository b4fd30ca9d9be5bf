//! The catalog shared by every Envoy worker. Each worker runs its own VM; proxy-wasm shared data
//! (ABI 0.2.1 `proxy_get_shared_data`/`proxy_set_shared_data`, compare-and-swap on a per-key
//! `cas` token) is the one memory they share. A small version key lets a worker tell in one read
//! whether its cached index is current; the catalog key holds the definitions.

use crate::config::entries::Entry;
use crate::config::Config;
use crate::index::catalog::{version_of, Catalog, CatalogIndex, ListMemo, Page, Tool};
use crate::index::fnv::FnvHashMap;
use crate::index::snapshot;
use crate::rank::embeddings::{self, Missing, VectorStore};
use crate::vector::ToolVectors;
use std::fmt;
use std::rc::Rc;

pub mod circuit;
use crate::keys;
mod lease;
mod meta;
pub use lease::{fetch_leased_by_other, release_lease, take_lease, Lease};
pub use meta::{read_meta, update_meta, CatalogMeta, Source};

/// The host's shared-data store, as the proxy-wasm ABI offers it.
pub trait SharedData {
    /// The value and its CAS token; `(None, None)` when the key was never set.
    fn get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), StoreError>;
    /// Sets the value if `cas` still matches (or unconditionally with `None`).
    fn set(&self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), StoreError>;
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// Another worker wrote the key between our read and our write.
    CasMismatch,
    Host(String),
    Corrupt(String),
    /// The catalog kept changing under us; the page will be learned on the next list.
    Contended,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::CasMismatch => write!(f, "shared data changed concurrently"),
            StoreError::Host(e) => write!(f, "shared data call failed: {e}"),
            StoreError::Corrupt(e) => write!(f, "shared catalog is unreadable: {e}"),
            StoreError::Contended => write!(f, "shared catalog too contended to update"),
        }
    }
}

impl std::error::Error for StoreError {}

const MAX_CAS_RETRIES: usize = 8;

/// Every namespace a catalog was learned for, sorted.
pub fn namespaces(shared: &dyn SharedData) -> Result<Vec<String>, StoreError> {
    let (data, _) = shared.get(keys::NAMESPACES)?;
    match data {
        None => Ok(Vec::new()),
        Some(bytes) => {
            serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt(e.to_string()))
        }
    }
}

pub(crate) fn register_namespace(
    shared: &dyn SharedData,
    namespace: &str,
) -> Result<(), StoreError> {
    for _ in 0..MAX_CAS_RETRIES {
        let (data, cas) = shared.get(keys::NAMESPACES)?;
        let mut all: Vec<String> = match data {
            None => Vec::new(),
            Some(bytes) => {
                serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt(e.to_string()))?
            }
        };
        if all.iter().any(|n| n == namespace) {
            return Ok(());
        }
        all.push(namespace.to_string());
        crate::sort::sort(&mut all);
        let bytes = serde_json::to_vec(&all).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        match shared.set(keys::NAMESPACES, &bytes, cas) {
            Ok(()) => return Ok(()),
            Err(StoreError::CasMismatch) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Contended)
}

/// A namespace's tool vectors as resolved against one catalog version.
struct ResolvedVectors {
    catalog: Rc<CatalogIndex>,
    version: Vec<u8>,
    vectors: Rc<ToolVectors>,
    missing: Rc<Missing>,
}

/// A VM's view of the shared catalogs: each namespace's index, rebuilt only when the shared
/// version changes; likewise its tool vectors.
#[derive(Default)]
pub struct CatalogCache {
    entries: FnvHashMap<String, (Vec<u8>, Rc<CatalogIndex>)>,
    /// A catalog this VM wrote, by the version it wrote: its index is built from it without
    /// reading back and parsing what was just stored.
    written: FnvHashMap<String, (Vec<u8>, Catalog, Option<ListMemo>)>,
    /// The catalog versions this VM wrote and indexed from memory: it builds and publishes
    /// their index in the background (`publish_indexes`), so that no worker builds it in a
    /// request.
    wrote: Vec<(String, Vec<u8>)>,
    /// The index version of each namespace that is in shared data (published or loaded here).
    published: Vec<(String, Vec<u8>)>,
    vectors: FnvHashMap<String, ResolvedVectors>,
}

impl CatalogCache {
    pub fn new() -> Self {
        CatalogCache::default()
    }

    /// The current index of `namespace` (an empty one if nothing was learned yet).
    pub fn index(
        &mut self,
        shared: &dyn SharedData,
        namespace: &str,
        config: &Config,
    ) -> Result<Rc<CatalogIndex>, StoreError> {
        let (version, _) = shared.get(&keys::version(namespace))?;
        let version = version.unwrap_or_default();
        if let Some((seen, index)) = self.entries.get(namespace) {
            if *seen == version {
                return Ok(Rc::clone(index));
            }
        }
        let index = match self.written.remove(namespace) {
            Some((written, catalog, memo)) if written == version => {
                mark(&mut self.wrote, namespace, &version);
                let index = CatalogIndex::lazy(namespace, catalog, config);
                *index.list_memo.borrow_mut() = memo;
                index
            }
            _ => match load_snapshot(shared, namespace, &version, config)? {
                Some(index) => {
                    mark(&mut self.published, namespace, &version);
                    index
                }
                None => match shared.get(&keys::catalog(namespace))? {
                    (Some(bytes), _) => CatalogIndex::lazy(namespace, parse(&bytes)?, config),
                    (None, _) => CatalogIndex::lazy(namespace, Catalog::default(), config),
                },
            },
        };
        let index = Rc::new(index);
        self.entries
            .insert(namespace.to_string(), (version, Rc::clone(&index)));
        Ok(index)
    }

    /// Publishes the indexes this VM holds that the other workers do not have yet: those it
    /// built for a search, and those of catalogs it wrote (built here, from the root tick, so
    /// that neither the list that taught the catalog nor any worker's first search waits for
    /// the build). At most one per call: a build of 10,000 tools holds the worker for tens of
    /// milliseconds.
    pub fn publish_indexes(
        &mut self,
        shared: &dyn SharedData,
        config: &Config,
    ) -> Result<(), StoreError> {
        // A catalog written by a list since: indexed (lazily) first, as its next search would.
        let written: Vec<String> = self.written.keys().cloned().collect();
        for namespace in written {
            self.index(shared, &namespace, config)?;
        }
        let marked = |marks: &[(String, Vec<u8>)], ns: &str, version: &Vec<u8>| {
            marks.iter().any(|(n, v)| n == ns && v == version)
        };
        // The first due by name: deterministic whatever the map's order.
        let due = self
            .entries
            .iter()
            .filter(|(ns, (version, index))| {
                !marked(&self.published, ns, version)
                    && !index.catalog.is_empty()
                    && (index.built_bm25().is_some() || marked(&self.wrote, ns, version))
            })
            .min_by(|a, b| a.0.cmp(b.0));
        let Some((namespace, (version, index))) = due else {
            return Ok(());
        };
        let (namespace, version, index) = (namespace.clone(), version.clone(), Rc::clone(index));
        mark(&mut self.published, &namespace, &version);
        let (current, _) = shared.get(&keys::version(&namespace))?;
        let (in_shared, _) = shared.get(&keys::index_version(&namespace))?;
        if current.as_ref() != Some(&version) || in_shared.as_ref() == Some(&version) {
            return Ok(());
        }
        index.bm25();
        let Some(bytes) = snapshot::encode(&index, &version) else {
            return Ok(());
        };
        shared.set(&keys::index(&namespace), &bytes, None)?;
        drop(bytes);
        shared.set(&keys::index_version(&namespace), &version, None)
    }

    /// Learns the tools of a `tools/list` page (a whole list replaces the catalog). Returns
    /// whether the shared catalog changed.
    pub fn learn(
        &mut self,
        shared: &dyn SharedData,
        namespace: &str,
        learned: Learned,
    ) -> Result<bool, StoreError> {
        let Learned {
            tools,
            page: at,
            buffer,
            memo,
            ..
        } = learned;
        // Every list of an unchanged catalog: when this VM's index is the shared version and
        // the page changes nothing in it, the stored catalog (megabytes) is not read at all.
        // The version key is written after the catalog key, so a concurrent writer can be
        // missed here; its list and ours then simply race, as they would anyway.
        let (version, _) = shared.get(&keys::version(namespace))?;
        if let Some((seen, index)) = self.entries.get(namespace) {
            if *seen == version.as_deref().unwrap_or_default()
                && index.catalog.unchanged_by(&tools, at)
            {
                return Ok(false);
            }
        }
        let whole = at.first && at.last;
        // A cleared buffer is valid UTF-8; its allocation is what is reused.
        let mut json = String::from_utf8(clear(buffer)).unwrap_or_default();
        if whole {
            return self.learn_whole(shared, namespace, (tools, at, memo), version, json);
        }
        let key = keys::catalog(namespace);
        for _ in 0..MAX_CAS_RETRIES {
            let (data, cas) = shared.get(&key)?;
            let current = match data {
                Some(bytes) => parse(&bytes)?,
                None => Catalog::default(),
            };
            if current.unchanged_by(&tools, at) {
                return Ok(false);
            }
            // The page is kept for a retry, which merges it into what the other writer stored.
            let next = current.merge(tools.clone(), at);
            if next.same_as(&current) {
                return Ok(false);
            }
            next.write_json(&mut json);
            // Without a token the key does not exist yet; 0 asks the host for "no check",
            // so a first write races; a second writer then merges on its retry.
            match shared.set(&key, json.as_bytes(), cas) {
                Ok(()) => {
                    let version = format!("{:016x}", version_of(&json));
                    drop(json);
                    return self.stored(shared, namespace, version, next, None, current.is_empty());
                }
                Err(StoreError::CasMismatch) => {}
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Contended)
    }

    /// A whole list replaces the catalog, so the stored one is not parsed (at 10,000 tools
    /// that was a third of the first list after a change): the new catalog's stored form is
    /// compared with the stored version, then with the stored bytes, and written in its place.
    fn learn_whole(
        &mut self,
        shared: &dyn SharedData,
        namespace: &str,
        (tools, at, memo): (Vec<Tool>, Page, Option<ListMemo>),
        stored_version: Option<Vec<u8>>,
        mut json: String,
    ) -> Result<bool, StoreError> {
        let next = Catalog::default().merge(tools, at);
        next.write_json(&mut json);
        let version = format!("{:016x}", version_of(&json));
        if stored_version.as_deref() == Some(version.as_bytes()) {
            return Ok(false);
        }
        let key = keys::catalog(namespace);
        for _ in 0..MAX_CAS_RETRIES {
            let (data, cas) = shared.get(&key)?;
            if data.as_deref() == Some(json.as_bytes()) {
                return Ok(false);
            }
            drop(data);
            match shared.set(&key, json.as_bytes(), cas) {
                Ok(()) => {
                    drop(json);
                    return self.stored(shared, namespace, version, next, memo, true);
                }
                // Another writer came between: a whole list replaces whatever it wrote.
                Err(StoreError::CasMismatch) => {}
                Err(e) => return Err(e),
            }
        }
        Err(StoreError::Contended)
    }

    /// Once `next`'s stored form, of `version`, is in `namespace`'s catalog key: the version key
    /// that announces it, the namespace in the list of namespaces (`register`), and this VM's
    /// own copy, indexed without reading back what was just stored.
    fn stored(
        &mut self,
        shared: &dyn SharedData,
        namespace: &str,
        version: String,
        next: Catalog,
        memo: Option<ListMemo>,
        register: bool,
    ) -> Result<bool, StoreError> {
        shared.set(&keys::version(namespace), version.as_bytes(), None)?;
        if register {
            register_namespace(shared, namespace)?;
        }
        self.written
            .insert(namespace.to_string(), (version.into_bytes(), next, memo));
        Ok(true)
    }
}

/// Records `version` as `namespace`'s in `marks` (a few namespaces: a list, not a map).
fn mark(marks: &mut Vec<(String, Vec<u8>)>, namespace: &str, version: &[u8]) {
    match marks.iter_mut().find(|(n, _)| n == namespace) {
        Some((_, v)) => *v = version.to_vec(),
        None => marks.push((namespace.to_string(), version.to_vec())),
    }
}

/// The published index of `namespace` at `version`, if there is one this configuration can use.
fn load_snapshot(
    shared: &dyn SharedData,
    namespace: &str,
    version: &[u8],
    config: &Config,
) -> Result<Option<CatalogIndex>, StoreError> {
    // The small key first: a snapshot of another version is megabytes not worth copying.
    if shared.get(&keys::index_version(namespace))?.0.as_deref() != Some(version) {
        return Ok(None);
    }
    let Some(bytes) = shared.get(&keys::index(namespace))?.0 else {
        return Ok(None);
    };
    Ok(snapshot::decode(
        bytes,
        version,
        namespace,
        config.search.weights,
        config.search.tuning,
    ))
}

fn clear(mut buffer: Vec<u8>) -> Vec<u8> {
    buffer.clear();
    buffer
}

/// What a `tools/list` response taught: its tools, where the page stands, and the response's
/// spent buffer, reused to write the catalog to shared data (both are megabytes at 10,000
/// tools, and a VM's memory never shrinks).
#[derive(Debug, Default)]
pub struct Learned {
    /// What the list listed: the entries go to that kind's catalog of the namespace.
    pub entry: Entry,
    pub tools: Vec<Tool>,
    pub page: Page,
    pub buffer: Vec<u8>,
    /// The list was `cacheScope: "private"`: it belongs to `credential` only.
    pub private: bool,
    pub credential: String,
    /// The rewrite of this list, when it is a whole list: it is what the next identical list
    /// gets, so the catalog version the list writes remembers it from the start.
    pub memo: Option<ListMemo>,
}

impl Learned {
    pub fn new(tools: Vec<Tool>, page: Page) -> Learned {
        Learned {
            entry: Entry::Tool,
            tools,
            page,
            buffer: Vec::new(),
            private: false,
            credential: String::new(),
            memo: None,
        }
    }
}

impl CatalogCache {
    /// The vectors of `index`'s tools (stored or precomputed) and the tools still to embed
    /// (catalog position, text).
    pub fn vectors(
        &mut self,
        shared: &dyn SharedData,
        index: &Rc<CatalogIndex>,
        config: &Config,
    ) -> Result<(Rc<ToolVectors>, Rc<Missing>), StoreError> {
        let namespace = index.namespace.as_str();
        let (version, _) = shared.get(&keys::vectors_version(namespace))?;
        let version = version.unwrap_or_default();
        if let Some(r) = self.vectors.get(namespace) {
            if r.version == version && Rc::ptr_eq(&r.catalog, index) {
                return Ok((Rc::clone(&r.vectors), Rc::clone(&r.missing)));
            }
        }
        let store = load_vectors(shared, namespace)?;
        let (vectors, missing) = embeddings::resolve(index, config, &store);
        let resolved = ResolvedVectors {
            catalog: Rc::clone(index),
            version,
            vectors: Rc::new(vectors),
            missing: Rc::new(missing),
        };
        let out = (Rc::clone(&resolved.vectors), Rc::clone(&resolved.missing));
        self.vectors.insert(namespace.to_string(), resolved);
        Ok(out)
    }
}

fn load_vectors(shared: &dyn SharedData, namespace: &str) -> Result<VectorStore, StoreError> {
    match shared.get(&keys::vectors(namespace))?.0 {
        None => Ok(VectorStore::default()),
        Some(bytes) => VectorStore::decode(&bytes)
            .ok_or_else(|| StoreError::Corrupt("tool vectors blob".to_string())),
    }
}

/// Adds freshly embedded vectors (name, text hash, unit vector) to the namespace's store, and
/// drops those of tools no longer in the catalog (`current`, when known): a server whose tool
/// names change over time would otherwise grow the store, and every VM's decoded copy of it,
/// without bound.
pub fn store_vectors(
    shared: &dyn SharedData,
    namespace: &str,
    items: Vec<(String, u64, Vec<f32>)>,
    current: Option<&CatalogIndex>,
) -> Result<(), StoreError> {
    let key = keys::vectors(namespace);
    for _ in 0..MAX_CAS_RETRIES {
        let (data, cas) = shared.get(&key)?;
        let mut store = match data {
            None => VectorStore::default(),
            Some(bytes) => VectorStore::decode(&bytes)
                .ok_or_else(|| StoreError::Corrupt("tool vectors blob".to_string()))?,
        };
        store.merge(items.clone());
        // Only a whole list says which tools are gone; a partly learned one does not.
        if let Some(index) = current.filter(|index| index.catalog.is_complete()) {
            store.retain(|name| index.catalog.get(name).is_some());
        }
        let bytes = store.encode();
        match shared.set(&key, &bytes, cas) {
            Ok(()) => {
                let version = format!("{:016x}", crate::index::fnv::fingerprint(&bytes));
                return shared.set(&keys::vectors_version(namespace), version.as_bytes(), None);
            }
            Err(StoreError::CasMismatch) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Contended)
}

fn parse(bytes: &[u8]) -> Result<Catalog, StoreError> {
    let text = std::str::from_utf8(bytes).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Catalog::from_json(text).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// Shared data in process memory with the host's CAS rules, for native tests and tools.
#[derive(Default)]
pub struct MemorySharedData {
    map: std::cell::RefCell<FnvHashMap<String, (Vec<u8>, u32)>>,
}

impl MemorySharedData {
    /// Every key set so far, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.map.borrow().keys().cloned().collect();
        keys.sort();
        keys
    }
}

impl SharedData for MemorySharedData {
    fn get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), StoreError> {
        Ok(match self.map.borrow().get(key) {
            Some((v, cas)) => (Some(v.clone()), Some(*cas)),
            None => (None, None),
        })
    }

    fn set(&self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), StoreError> {
        let mut map = self.map.borrow_mut();
        let current = map.get(key).map(|(_, c)| *c);
        if let (Some(want), Some(have)) = (cas, current) {
            if want != 0 && want != have {
                return Err(StoreError::CasMismatch);
            }
        }
        let next = current.unwrap_or(0).wrapping_add(1).max(1);
        map.insert(key.to_string(), (value.to_vec(), next));
        Ok(())
    }
}

#[cfg(test)]
mod tests;
