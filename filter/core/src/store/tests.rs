use super::*;
use serde_json::value::RawValue;

fn tool(name: &str, description: &str) -> Tool {
    let raw: Box<RawValue> = serde_json::from_str(&format!(
        r#"{{"name":"{name}","description":"{description}"}}"#
    ))
    .unwrap();
    Tool::from_raw(&raw).unwrap()
}

#[test]
fn two_vms_share_one_catalog() {
    let shared = MemorySharedData::default();
    let config = Config::default();
    let mut vm1 = CatalogCache::new();
    let mut vm2 = CatalogCache::new();
    assert!(vm2
        .index(&shared, "ns", &config)
        .unwrap()
        .catalog
        .is_empty());
    assert!(vm1
        .learn(
            &shared,
            "ns",
            Learned::new(vec![tool("a", "alpha")], Page::default())
        )
        .unwrap());
    assert!(
        !vm1.learn(
            &shared,
            "ns",
            Learned::new(vec![tool("a", "alpha")], Page::default())
        )
        .unwrap(),
        "no change"
    );
    assert!(vm1
        .learn(
            &shared,
            "ns",
            Learned::new(vec![tool("b", "beta")], Page::default())
        )
        .unwrap());
    let index = vm2.index(&shared, "ns", &config).unwrap();
    assert_eq!(index.catalog.len(), 2);
    let again = vm2.index(&shared, "ns", &config).unwrap();
    assert!(Rc::ptr_eq(&index, &again), "cached while the version holds");
    assert!(vm1
        .learn(
            &shared,
            "ns",
            Learned::new(
                vec![tool("c", "gamma")],
                Page {
                    first: true,
                    last: true
                }
            )
        )
        .unwrap());
    assert_eq!(vm2.index(&shared, "ns", &config).unwrap().catalog.len(), 1);
    assert!(vm2
        .index(&shared, "other", &config)
        .unwrap()
        .catalog
        .is_empty());
}

#[test]
fn an_index_one_worker_published_is_loaded_by_the_others_without_the_catalog() {
    let shared = Counting::default();
    let config = Config::default();
    let whole = Page {
        first: true,
        last: true,
    };
    let mut writer = CatalogCache::new();
    let tools = vec![
        tool("refund_charge", "refund a card charge"),
        tool("b", "beta"),
    ];
    assert!(writer
        .learn(&shared, "ns", Learned::new(tools, whole))
        .unwrap());
    // The list that taught the catalog indexes it lazily: no BM25 build in its path.
    let own = writer.index(&shared, "ns", &config).unwrap();
    assert!(own.built_bm25().is_none());
    // The root tick builds and publishes it; a second tick has nothing to do.
    writer.publish_indexes(&shared, &config).unwrap();
    assert!(own.built_bm25().is_some());
    let published = shared.inner.get(&keys::index("ns")).unwrap().0.unwrap();
    writer.publish_indexes(&shared, &config).unwrap();
    assert_eq!(
        shared.inner.get(&keys::index("ns")).unwrap().0.unwrap(),
        published
    );

    shared.reads.borrow_mut().clear();
    let mut other = CatalogCache::new();
    let loaded = other.index(&shared, "ns", &config).unwrap();
    assert!(loaded.built_bm25().is_some(), "loaded, not rebuilt");
    assert!(
        !shared.reads.borrow().contains(&keys::catalog("ns")),
        "the stored catalog is not read: {:?}",
        shared.reads.borrow()
    );
    assert_eq!(loaded.catalog.to_json(), own.catalog.to_json());
    assert_eq!(loaded.bm25().scores("refund"), own.bm25().scores("refund"));
    // A worker holding a loaded index has nothing to publish.
    other.publish_indexes(&shared, &config).unwrap();

    // The catalog changes: the published index is of the old version and is not used.
    assert!(writer
        .learn(&shared, "ns", Learned::new(vec![tool("c", "gamma")], whole))
        .unwrap());
    let fresh = CatalogCache::new().index(&shared, "ns", &config).unwrap();
    assert_eq!(fresh.catalog.len(), 1);
    assert!(fresh.built_bm25().is_none(), "indexed from the catalog");
    assert_eq!(
        other.index(&shared, "ns", &config).unwrap().catalog.len(),
        1
    );
}

/// A cache that learned the whole list `[a]` into `shared`.
fn taught_a(shared: &MemorySharedData) -> CatalogCache {
    let mut writer = CatalogCache::new();
    let whole = Page {
        first: true,
        last: true,
    };
    writer
        .learn(shared, "ns", Learned::new(vec![tool("a", "alpha")], whole))
        .unwrap();
    writer
}

#[test]
fn the_root_tick_alone_publishes_the_index_of_a_catalog_a_list_taught() {
    let shared = MemorySharedData::default();
    let config = Config::default();
    let mut writer = taught_a(&shared);
    writer.publish_indexes(&shared, &config).unwrap();
    let loaded = CatalogCache::new().index(&shared, "ns", &config).unwrap();
    assert!(loaded.built_bm25().is_some());
    assert_eq!(loaded.catalog.len(), 1);
}

#[test]
fn a_whole_list_that_changed_the_catalog_is_remembered_by_the_new_version() {
    use crate::index::catalog::MemoKey;
    let shared = MemorySharedData::default();
    let config = Config::default();
    let mut cache = CatalogCache::new();
    let memo = |n: usize| ListMemo {
        key: MemoKey {
            len: n,
            fingerprint: 7,
            first_page: true,
            audience: None,
            structured: false,
        },
        unordered: None,
        reordered: Default::default(),
        tail: 1,
        result: Some("{}".to_string()),
        hidden: n,
        page: Page {
            first: true,
            last: n == 1,
        },
    };
    let learned = |tools, m: ListMemo| Learned {
        page: m.page,
        memo: Some(m),
        ..Learned::new(tools, Page::default())
    };
    assert!(cache
        .learn(&shared, "ns", learned(vec![tool("a", "alpha")], memo(1)))
        .unwrap());
    let index = cache.index(&shared, "ns", &config).unwrap();
    assert_eq!(index.list_memo.borrow().as_ref().map(|m| m.hidden), Some(1));
    // A first page of several changes the catalog too, but is not all of it.
    assert!(cache
        .learn(&shared, "ns", learned(vec![tool("b", "beta")], memo(2)))
        .unwrap());
    let index = cache.index(&shared, "ns", &config).unwrap();
    assert!(index.list_memo.borrow().is_none());
}

#[test]
fn a_worker_that_built_an_index_for_a_search_publishes_it() {
    let shared = MemorySharedData::default();
    let config = Config::default();
    taught_a(&shared);
    let mut searcher = CatalogCache::new();
    let index = searcher.index(&shared, "ns", &config).unwrap();
    // Not learned here and not searched yet: nothing to publish.
    searcher.publish_indexes(&shared, &config).unwrap();
    assert!(shared.get(&keys::index("ns")).unwrap().0.is_none());
    index.bm25();
    searcher.publish_indexes(&shared, &config).unwrap();
    assert!(shared.get(&keys::index("ns")).unwrap().0.is_some());
}

/// Counts reads of each key.
#[derive(Default)]
struct Counting {
    inner: MemorySharedData,
    reads: std::cell::RefCell<Vec<String>>,
}

impl SharedData for Counting {
    fn get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), StoreError> {
        self.reads.borrow_mut().push(key.to_string());
        self.inner.get(key)
    }
    fn set(&self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), StoreError> {
        self.inner.set(key, value, cas)
    }
}

#[test]
fn an_unchanged_list_reads_no_stored_catalog() {
    let shared = Counting::default();
    let config = Config::default();
    let whole = Page {
        first: true,
        last: true,
    };
    let page = [tool("a", "alpha"), tool("b", "beta")];
    let mut vm = CatalogCache::new();
    vm.index(&shared, "ns", &config).unwrap();
    assert!(vm
        .learn(&shared, "ns", Learned::new(page.to_vec(), whole))
        .unwrap());
    let catalog_reads = |s: &Counting| {
        s.reads
            .borrow()
            .iter()
            .filter(|k| **k == keys::catalog("ns"))
            .count()
    };
    let before = catalog_reads(&shared);
    // The index of what this VM wrote comes from memory, and later lists compare to it.
    assert_eq!(vm.index(&shared, "ns", &config).unwrap().catalog.len(), 2);
    assert!(!vm
        .learn(&shared, "ns", Learned::new(page.to_vec(), whole))
        .unwrap());
    assert_eq!(catalog_reads(&shared), before);
    // A changed list is written; another VM reads it from shared data.
    assert!(vm
        .learn(
            &shared,
            "ns",
            Learned::new(vec![tool("a", "changed")], whole)
        )
        .unwrap());
    let mut other = CatalogCache::new();
    let index = other.index(&shared, "ns", &config).unwrap();
    assert_eq!(&*index.catalog.get("a").unwrap().description, "changed");
    assert_eq!(catalog_reads(&shared), before + 2);
    assert_eq!(vm.index(&shared, "ns", &config).unwrap().catalog.len(), 1);
}

/// A store whose first write always loses the race, as when another worker wrote between.
struct Racing {
    inner: MemorySharedData,
    lost: std::cell::Cell<usize>,
}

impl SharedData for Racing {
    fn get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), StoreError> {
        self.inner.get(key)
    }
    fn set(&self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), StoreError> {
        if key.ends_with(keys::CATALOG) && self.lost.get() < 2 {
            self.lost.set(self.lost.get() + 1);
            // The other worker's write: a different tool.
            let other = Catalog::from_tools(vec![tool(&format!("other{}", self.lost.get()), "x")]);
            let (_, c) = self.inner.get(key)?;
            self.inner.set(key, other.to_json().as_bytes(), c)?;
            let _ = cas;
            return Err(StoreError::CasMismatch);
        }
        self.inner.set(key, value, cas)
    }
}

#[test]
fn cas_conflicts_retry_and_merge() {
    let shared = Racing {
        inner: MemorySharedData::default(),
        lost: std::cell::Cell::new(0),
    };
    let mut vm = CatalogCache::new();
    assert!(vm
        .learn(
            &shared,
            "ns",
            Learned::new(vec![tool("mine", "m")], Page::default())
        )
        .unwrap());
    let index = vm.index(&shared, "ns", &Config::default()).unwrap();
    let names: Vec<&str> = index
        .catalog
        .tools()
        .iter()
        .map(|t| t.name.as_ref())
        .collect();
    assert_eq!(names, ["mine", "other2"]);
}

#[test]
fn vectors_of_tools_gone_from_a_whole_list_are_dropped() {
    let shared = MemorySharedData::default();
    let config = Config::default();
    let mut vm = CatalogCache::new();
    let learn = |vm: &mut CatalogCache, names: &[&str], last: bool| {
        let tools = names.iter().map(|n| tool(n, "does things")).collect();
        vm.learn(
            &shared,
            "ns",
            Learned::new(tools, Page { first: true, last }),
        )
        .unwrap();
        vm.index(&shared, "ns", &config).unwrap()
    };
    let vector = |name: &str| (name.to_string(), 7, vec![1.0, 0.0]);
    let stored = || {
        let store = load_vectors(&shared, "ns").unwrap();
        store.names().map(str::to_string).collect::<Vec<_>>()
    };
    let index = learn(&mut vm, &["a", "b", "gone"], true);
    store_vectors(
        &shared,
        "ns",
        vec![vector("a"), vector("gone")],
        Some(&index),
    )
    .unwrap();
    assert_eq!(stored(), ["a", "gone"]);

    // The server renamed `gone` to `new`: once `new` is embedded, `gone`'s vector goes.
    let index = learn(&mut vm, &["a", "b", "new"], true);
    store_vectors(
        &shared,
        "ns",
        vec![vector("b"), vector("new")],
        Some(&index),
    )
    .unwrap();
    assert_eq!(stored(), ["a", "b", "new"]);

    // A list not seen whole does not say the others are gone.
    let shared_partial = MemorySharedData::default();
    let mut fresh = CatalogCache::new();
    fresh
        .learn(
            &shared_partial,
            "ns",
            Learned::new(
                vec![tool("c", "does things")],
                Page {
                    first: true,
                    last: false,
                },
            ),
        )
        .unwrap();
    let partial = fresh.index(&shared_partial, "ns", &config).unwrap();
    assert!(!partial.catalog.is_complete());
    store_vectors(&shared, "ns", vec![vector("c")], Some(&partial)).unwrap();
    assert_eq!(stored(), ["a", "b", "c", "new"]);
}

#[test]
fn vectors_are_shared_and_leases_exclusive() {
    let shared = MemorySharedData::default();
    let config =
        Config::parse(r#"{"search":{"embeddings":{"cluster":"e","model_id":"m","dimensions":2}}}"#)
            .unwrap();
    let mut vm1 = CatalogCache::new();
    let mut vm2 = CatalogCache::new();
    vm1.learn(
        &shared,
        "ns",
        Learned::new(
            vec![tool("a", "alpha"), tool("b", "beta")],
            Page {
                first: true,
                last: true,
            },
        ),
    )
    .unwrap();
    let index = vm2.index(&shared, "ns", &config).unwrap();
    let (vectors, missing) = vm2.vectors(&shared, &index, &config).unwrap();
    assert_eq!((vectors.count(), missing.len()), (0, 2));
    let items = missing
        .iter()
        .map(|(i, text)| {
            (
                index.catalog.tools()[*i].name.to_string(),
                embeddings::text_hash(text),
                vec![1.0, 0.0],
            )
        })
        .collect();
    store_vectors(&shared, "ns", items, None).unwrap();
    let index1 = vm1.index(&shared, "ns", &config).unwrap();
    let (vectors, missing) = vm1.vectors(&shared, &index1, &config).unwrap();
    assert_eq!((vectors.count(), missing.len()), (2, 0));
    assert!(take_lease(&shared, Lease::Embed, "ns", "vm1", 1000, 500).unwrap());
    assert!(!take_lease(&shared, Lease::Embed, "ns", "vm2", 1200, 500).unwrap());
    assert!(
        take_lease(&shared, Lease::Embed, "ns", "vm1", 1200, 500).unwrap(),
        "renewal"
    );
    assert!(
        take_lease(&shared, Lease::Embed, "ns", "vm2", 1800, 500).unwrap(),
        "expired"
    );
}

#[test]
fn corrupt_shared_data_is_an_error_not_a_panic() {
    let shared = MemorySharedData::default();
    shared.set(&keys::catalog("ns"), b"\xff", None).unwrap();
    shared.set(&keys::version("ns"), b"1", None).unwrap();
    let mut vm = CatalogCache::new();
    assert!(matches!(
        vm.index(&shared, "ns", &Config::default()),
        Err(StoreError::Corrupt(_))
    ));
}
