use super::link::{self, LinkKey, Linked, Unwritten, SEARCHES_KEPT, SLOTS};
use crate::stats;
use crate::store::{MemorySharedData, SharedData, StoreError};
use std::cell::Cell;

const NS: &str = "github";

fn session(id: &str) -> LinkKey {
    LinkKey::of_kind("session", id)
}

/// A worker's search, written to shared data as its tick writes it.
fn search(store: &dyn SharedData, key: LinkKey, id: &str, offset: usize, names: &[&str]) {
    let mut worker = Unwritten::default();
    worker.searched(NS, key, id, offset, names.iter().copied());
    worker.write(store).unwrap();
}

/// A call on another worker (nothing of its own unwritten).
fn call(store: &dyn SharedData, key: LinkKey, name: &str) -> Linked {
    link::link_call(store, &Unwritten::default(), NS, key, name).unwrap()
}

#[test]
fn a_call_is_linked_to_the_rank_at_which_its_sessions_newest_search_returned_it() {
    let store = MemorySharedData::default();
    let alice = session("alice");
    search(
        &store,
        alice,
        "s1",
        0,
        &["create_issue", "list_issues", "get_issue"],
    );
    search(&store, alice, "s2", 5, &["merge_pr", "get_issue"]);
    let got = call(&store, alice, "get_issue");
    assert_eq!(
        got.rank,
        Some(7),
        "offset 5, second result of the newest search"
    );
    assert_eq!(got.search_id.as_deref(), Some("s2"));
    assert_eq!(call(&store, alice, "list_issues").rank, Some(2));
    assert_eq!(call(&store, alice, "delete_repo"), Linked::default());
}

#[test]
fn the_worker_that_searched_links_the_call_before_its_tick() {
    let store = MemorySharedData::default();
    let mut worker = Unwritten::default();
    worker.searched(NS, session("a"), "s1", 0, ["x", "y"].into_iter());
    let linked = link::link_call(&store, &worker, NS, session("a"), "y").unwrap();
    assert_eq!(linked.rank, Some(2));
    // Another worker sees it only once this one has written it.
    assert_eq!(call(&store, session("a"), "y"), Linked::default());
    worker.write(&store).unwrap();
    assert_eq!(call(&store, session("a"), "y").rank, Some(2));
}

#[test]
fn another_sessions_searches_never_link_a_call() {
    let store = MemorySharedData::default();
    let alice = session("alice");
    search(&store, alice, "s1", 0, &["create_issue"]);
    // Bob, even in Alice's slot, sees nothing of hers; and writing there takes the slot.
    let bob = (0..100_000)
        .map(|i| session(&format!("{i}")))
        .find(|k| *k != alice && link_slot(*k) == link_slot(alice))
        .unwrap();
    assert_eq!(call(&store, bob, "create_issue"), Linked::default());
    search(&store, bob, "s2", 0, &["merge_pr"]);
    assert_eq!(call(&store, bob, "merge_pr").rank, Some(1));
    assert_eq!(call(&store, alice, "create_issue"), Linked::default());
}

fn link_slot(key: LinkKey) -> String {
    // The slot a key writes, read back through the store: the only observable of it.
    let store = MemorySharedData::default();
    search(&store, key, "x", 0, &["t"]);
    (0..SLOTS)
        .map(|slot| crate::keys::link(NS, slot))
        .find(|k| store.get(k).unwrap().0.is_some())
        .unwrap()
}

#[test]
fn a_session_keeps_its_newest_searches_and_described_names() {
    let store = MemorySharedData::default();
    let key = session("s");
    for i in 0..=SEARCHES_KEPT {
        search(&store, key, &format!("s{i}"), 0, &[&format!("tool_{i}")]);
    }
    assert_eq!(
        call(&store, key, "tool_0"),
        Linked::default(),
        "the oldest is gone"
    );
    assert_eq!(
        call(&store, key, &format!("tool_{SEARCHES_KEPT}")).rank,
        Some(1)
    );
    let mut worker = Unwritten::default();
    worker.described(NS, key, ["tool_0", "other"].into_iter());
    worker.write(&store).unwrap();
    let got = call(&store, key, "tool_0");
    assert!(got.described && got.rank.is_none());
    assert_eq!(got.stats(), [stats::CALLS_AFTER_DESCRIBE]);
    // Searching keeps what was described.
    search(&store, key, "s9", 0, &["other"]);
    let got = call(&store, key, "other");
    assert_eq!((got.rank, got.described), (Some(1), true));
    assert_eq!(
        got.stats(),
        [
            stats::SEARCH_CALLS_AFTER_RANK_1,
            stats::CALLS_AFTER_DESCRIBE
        ]
    );
}

#[test]
fn a_name_that_cannot_be_written_keeps_the_ranks_of_the_others() {
    let store = MemorySharedData::default();
    let key = session("s");
    search(&store, key, "s1", 0, &["a\tb", "c\nd", "real"]);
    assert_eq!(call(&store, key, "real").rank, Some(3));
    assert_eq!(call(&store, key, "a\tb").rank, None);
    assert_eq!(call(&store, key, "").rank, None);
}

#[test]
fn ranks_count_in_their_buckets() {
    let at = |rank| Linked {
        rank,
        ..Linked::default()
    };
    assert_eq!(at(Some(1)).stats(), [stats::SEARCH_CALLS_AFTER_RANK_1]);
    assert_eq!(at(Some(2)).stats(), [stats::SEARCH_CALLS_AFTER_RANK_2_5]);
    assert_eq!(at(Some(5)).stats(), [stats::SEARCH_CALLS_AFTER_RANK_2_5]);
    assert_eq!(at(Some(6)).stats(), [stats::SEARCH_CALLS_AFTER_RANK_OVER_5]);
    assert_eq!(at(None).stats(), [stats::CALLS_WITHOUT_SEARCH]);
}

/// Shared data whose first `conflicts` writes lose to another worker's.
struct Contested {
    inner: MemorySharedData,
    conflicts: Cell<usize>,
}

impl SharedData for Contested {
    fn get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), StoreError> {
        self.inner.get(key)
    }
    fn set(&self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), StoreError> {
        if self.conflicts.get() > 0 {
            self.conflicts.set(self.conflicts.get() - 1);
            // The other worker's write: another search of the same session.
            let (old, _) = self.inner.get(key)?;
            self.inner.set(key, &old.unwrap_or_default(), None)?;
            return Err(StoreError::CasMismatch);
        }
        self.inner.set(key, value, cas)
    }
}

#[test]
fn a_write_that_loses_to_another_worker_is_made_again_on_what_it_wrote() {
    let store = Contested {
        inner: MemorySharedData::default(),
        conflicts: Cell::new(0),
    };
    let key = session("s");
    search(&store, key, "s1", 0, &["first"]);
    store.conflicts.set(2);
    search(&store, key, "s2", 0, &["second"]);
    assert_eq!(call(&store, key, "first").rank, Some(1));
    assert_eq!(call(&store, key, "second").rank, Some(1));
    store.conflicts.set(10);
    let mut worker = Unwritten::default();
    worker.searched(NS, key, "s3", 0, ["third"].into_iter());
    let err = worker.write(&store);
    assert_eq!(
        err,
        Err(StoreError::CasMismatch),
        "gives up after a few attempts"
    );
    // ... and keeps it for the next tick.
    store.conflicts.set(0);
    worker.write(&store).unwrap();
    assert_eq!(call(&store, key, "third").rank, Some(1));
}

mod tallies {
    use crate::insights::tally::{query_group, Tally, TOOLS_KEPT, ZERO_QUERIES_KEPT};

    fn worker(seed: u64) -> Tally {
        let mut t = Tally::default();
        let mut x = seed;
        for i in 0..400u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // Skewed as real calls are: a few tools take most of them, hundreds a few each.
            let u = (x >> 33) % 600;
            let tool = format!("tool_{}", u * u / 600);
            let rank = ((x >> 20) % 8) as usize;
            t.started(|| 1_000 + seed + i);
            t.called(&tool, (rank > 0).then_some(rank), rank == 7);
            let group = format!("{:x}", (x >> 40) % 90);
            t.searched((rank == 3).then_some((group, None)));
        }
        t
    }

    #[test]
    fn merging_workers_in_any_order_keeps_the_counts_and_the_head_of_each_table() {
        let (a, b, c) = (worker(1), worker(2), worker(3));
        let mut one = a.clone();
        one.merge(&b);
        one.merge(&c);
        let mut other = c.clone();
        other.merge(&a);
        other.merge(&b);
        assert_eq!(one.searches, 1_200);
        assert_eq!(one.calls, other.calls);
        assert!(
            one.tools.len() <= TOOLS_KEPT && one.tools.len() > 200,
            "{}",
            one.tools.len()
        );
        assert!(one.zero_queries.len() <= ZERO_QUERIES_KEPT);
        // The head of the table is the same whatever the order; entries near the cut may
        // differ (each worker trimmed its own first).
        let head = |t: &Tally| {
            let mut tools: Vec<(&String, u64)> =
                t.tools.iter().map(|(n, c)| (n, c.total())).collect();
            assert!(
                t.tools.windows(2).all(|w| w[0].0 < w[1].0),
                "sorted by name"
            );
            tools.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
            tools.truncate(20);
            tools
                .into_iter()
                .map(|(n, c)| (n.clone(), c))
                .collect::<Vec<_>>()
        };
        assert_eq!(head(&one), head(&other));
        assert_eq!(one.since_ms, 1_001, "the first worker's start");
        let back = Tally::read(&one.write()).unwrap();
        assert_eq!(back, one);
        assert_eq!(Tally::read(b"not a tally"), None);
        assert_eq!(Tally::read(b"tally1\t1\t2"), None, "counts missing");
    }

    #[test]
    fn the_median_rank_is_the_middle_call() {
        let mut t = Tally::default();
        for rank in [1, 1, 4, 9] {
            t.called("x", Some(rank), false);
        }
        let tool =
            |t: &Tally, name: &str| t.tools.iter().find(|(n, _)| n == name).unwrap().1.clone();
        assert_eq!(tool(&t, "x").median_rank(), Some(1));
        t.called("x", Some(9), false);
        assert_eq!(tool(&t, "x").median_rank(), Some(4));
        t.called("y", None, false);
        assert_eq!(tool(&t, "y").median_rank(), None);
        assert_eq!((t.rank_1, t.rank_2_5, t.rank_over_5), (2, 1, 2));
    }

    #[test]
    fn names_and_queries_with_tabs_or_line_breaks_are_written_as_one_field() {
        let mut t = Tally::default();
        t.called("odd\tname\n", Some(2), true);
        t.searched(Some(("g".into(), Some("two\nlines\tand a tab".into()))));
        let back = Tally::read(&t.write()).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.tools[0].0, "odd name ");
        assert_eq!(
            back.zero_queries[0].1.text.as_deref(),
            Some("two lines and a tab")
        );
    }

    #[test]
    fn a_query_group_is_the_set_of_its_terms() {
        let terms = |s: &str| s.split(' ').map(str::to_string).collect::<Vec<_>>();
        assert_eq!(
            query_group(&terms("pod scale")),
            query_group(&terms("scale pod pod"))
        );
        assert_ne!(query_group(&terms("pod scale")), query_group(&terms("pod")));
    }
}

mod returned {
    use super::super::pending::Pending;
    use crate::config::Config;
    use crate::index::catalog::tests::tool;
    use crate::index::catalog::{Catalog, CatalogIndex};
    use crate::store::{MemorySharedData, SharedData};
    use std::rc::Rc;

    fn index(names: &[&str]) -> Rc<CatalogIndex> {
        let tools = names
            .iter()
            .map(|n| {
                tool(&format!(
                    r#"{{"name":"{n}","inputSchema":{{"type":"object"}}}}"#
                ))
            })
            .collect();
        let config = Config::parse("{}").unwrap();
        Rc::new(CatalogIndex::build(
            "github",
            Catalog::from_tools(tools),
            &config,
        ))
    }

    fn shared(store: &MemorySharedData) -> String {
        let (value, _) = store
            .get(&crate::keys::insights_returned("github"))
            .unwrap();
        String::from_utf8(value.unwrap_or_default()).unwrap()
    }

    #[test]
    fn each_returned_tool_reaches_the_shared_set_once_per_catalog_version() {
        let store = MemorySharedData::default();
        let mut pending = Pending::default();
        let v1 = index(&["a", "b", "c"]);
        pending.returned("github", &v1, [(0, "a"), (2, "c")].into_iter());
        pending.flush(&store, 10_000).unwrap();
        assert_eq!(shared(&store), "a\nc");

        // Returned again: nothing pending, so the next tick writes nothing.
        pending.returned("github", &v1, [(2, "c"), (0, "a")].into_iter());
        store
            .set(&crate::keys::insights_returned("github"), b"x", None)
            .unwrap();
        pending.flush(&store, 20_000).unwrap();
        assert_eq!(
            shared(&store),
            "x",
            "a tool already returned is not written again"
        );

        // A new version of the catalog, with other positions: learned anew.
        let v2 = index(&["c", "d"]);
        pending.returned("github", &v2, [(0, "c"), (1, "d")].into_iter());
        pending.flush(&store, 30_000).unwrap();
        assert_eq!(shared(&store), "c\nd\nx");
    }
}
