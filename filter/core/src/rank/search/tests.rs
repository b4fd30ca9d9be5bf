use super::*;
use crate::index::catalog::Catalog;
use serde_json::value::RawValue;

fn index(config: &Config) -> CatalogIndex {
    let tool = |name: &str, d: &str| {
        let raw: Box<RawValue> =
            serde_json::from_str(&format!(r#"{{"name":"{name}","description":"{d}"}}"#)).unwrap();
        Tool::from_raw(&raw).unwrap()
    };
    let catalog = Catalog::from_tools(vec![
        tool("github_create_issue", "Open an issue"),
        tool("github_close_issue", "Close an issue"),
        tool("github_list_issues", "List issues"),
        tool("slack_post_message", "Post a message"),
        tool("stripe_refund_charge", "Refund a charge"),
    ]);
    CatalogIndex::build("ns", catalog, config)
}

fn off() -> Fallback {
    Fallback::new(FallbackKind::Unavailable, "off")
}

fn q(text: &str, limit: usize, offset: usize) -> Query {
    Query {
        text: text.into(),
        limit,
        offset,
        group: None,
    }
}

fn names(r: &Ranked) -> Vec<String> {
    r.found.iter().map(|f| f.tool.name.to_string()).collect()
}

#[test]
fn paging_is_disjoint_and_covers_the_matches() {
    let config = Config::default();
    let idx = index(&config);
    let first = search(&idx, &config, &q("issue", 2, 0), None, Err(off()));
    let second = search(&idx, &config, &q("issue", 2, 2), None, Err(off()));
    assert_eq!(first.matches, 3);
    assert_eq!(first.candidates, 5);
    let mut seen = names(&first);
    seen.extend(names(&second));
    assert_eq!(seen.len(), 3);
    seen.sort();
    seen.dedup();
    assert_eq!(
        seen,
        [
            "github_close_issue",
            "github_create_issue",
            "github_list_issues"
        ]
    );
    let past = search(&idx, &config, &q("issue", 2, 10), None, Err(off()));
    assert!(past.found.is_empty());
    assert_eq!(first.strategy, Ranking::Bm25);
}

#[test]
fn groups_and_authorization() {
    let config = Config::parse(r#"{"group_separator":"_"}"#).unwrap();
    let idx = index(&config);
    let no_stripe = |t: &Tool| !t.name.starts_with("stripe");
    let r = search(
        &idx,
        &config,
        &q("refund charge", 5, 0),
        Some(&no_stripe),
        Err(off()),
    );
    assert!(r.found.is_empty());
    let mut grouped = q("issue message", 5, 0);
    grouped.group = Some("slack".into());
    let r = search(&idx, &config, &grouped, None, Err(off()));
    assert_eq!(names(&r), ["slack_post_message"]);
    assert_eq!(r.candidates, 1);
}

#[test]
fn a_candidate_without_a_vector_ranks_by_its_bm25_score_among_the_vectors() {
    let config = Config::parse(r#"{"search":{"ranking":"vector","embeddings":{"cluster":"c","model_id":"m","dimensions":2}}}"#).unwrap();
    let idx = index(&config);
    // Catalog order: close, create, list, slack, stripe. Query vector points at slack.
    let vecs: Vec<Vec<f32>> = vec![
        vec![1.0, 0.0],
        vec![0.8, 0.6],
        vec![0.6, 0.8],
        vec![0.0, 1.0],
        vec![-1.0, 0.0],
    ];
    let lookup = |i: usize| vecs.get(i).map(Vec::as_slice);
    let query = [0.0f32, 1.0];
    let r = search(
        &idx,
        &config,
        &q("anything", 2, 0),
        None,
        Ok(Vectors {
            query: &query,
            tool: &lookup,
        }),
    );
    assert_eq!(r.strategy, Ranking::Vector);
    assert_eq!(names(&r), ["slack_post_message", "github_list_issues"]);
    // Cosines 0, 0.6, 0.8, 1, -1: three reach the floor (0.25); "anything" matches no term.
    assert_eq!(r.matches, 3);
    let partial = |i: usize| {
        if i == 4 {
            None
        } else {
            vecs.get(i).map(Vec::as_slice)
        }
    };
    let r = search(
        &idx,
        &config,
        &q("refund", 2, 0),
        None,
        Ok(Vectors {
            query: &query,
            tool: &partial,
        }),
    );
    // Tool 4 without a vector still ranks, by its BM25 score, inside the vector ranking.
    assert_eq!(r.strategy, Ranking::Vector);
    assert_eq!((r.fallback.as_ref(), r.embedded), (None, Some(4)));
    assert_eq!(names(&r), ["slack_post_message", "stripe_refund_charge"]);
    // The former rule, kept as an option: BM25 until every candidate has a vector.
    let mut strict = config.clone();
    strict.search.require_all_vectors = true;
    let r = search(
        &idx,
        &strict,
        &q("refund", 2, 0),
        None,
        Ok(Vectors {
            query: &query,
            tool: &partial,
        }),
    );
    assert_eq!(r.strategy, Ranking::Bm25);
    assert_eq!(
        r.fallback,
        Some(Fallback::new(
            FallbackKind::NotEmbedded,
            "1 of 5 candidate tools have no vector yet"
        ))
    );
    assert_eq!(names(&r), ["stripe_refund_charge"]);
    // Under hybrid ranking its normalized BM25 score (1: the only tool "refund" matches)
    // stands for its normalized cosine: it leads slack (cosine 1, BM25 0). The best lexical
    // match holds every word of the query: the vector share is 0.85 - 0.5, slack's score 0.35.
    let mut hybrid = config.clone();
    hybrid.search.ranking = Ranking::Hybrid;
    let r = search(
        &idx,
        &hybrid,
        &q("refund", 2, 0),
        None,
        Ok(Vectors {
            query: &query,
            tool: &partial,
        }),
    );
    assert_eq!((r.strategy, r.embedded), (Ranking::Hybrid, Some(4)));
    assert_eq!(names(&r), ["stripe_refund_charge", "slack_post_message"]);
    assert!((r.found[0].score - 1.0).abs() < 1e-6 && (r.found[1].score - 0.35).abs() < 1e-6);
    // No candidate embedded at all: BM25, and why.
    let nothing = |_: usize| None;
    let r = search(
        &idx,
        &config,
        &q("refund", 2, 0),
        None,
        Ok(Vectors {
            query: &query,
            tool: &nothing,
        }),
    );
    assert_eq!(r.fallback.map(|f| f.kind), Some(FallbackKind::NotEmbedded));
    let down = Fallback::new(FallbackKind::Status, "embeddings service answered 500");
    let r = search(&idx, &config, &q("refund", 2, 0), None, Err(down.clone()));
    assert_eq!(r.fallback, Some(down));
}

#[test]
fn a_query_nothing_matches_finds_nothing_under_vector_and_hybrid_ranking() {
    for ranking in ["vector", "hybrid"] {
        let config = Config::parse(&format!(r#"{{"search":{{"ranking":"{ranking}","embeddings":{{"cluster":"c","model_id":"m","dimensions":2}}}}}}"#)).unwrap();
        let idx = index(&config);
        // Every tool at cosine 0.1 of the query: below the floor.
        let vecs: Vec<Vec<f32>> = (0..5).map(|_| vec![0.1, 0.995]).collect();
        let lookup = |i: usize| vecs.get(i).map(Vec::as_slice);
        let query = [1.0f32, 0.0];
        let vectors = || {
            Ok(Vectors {
                query: &query,
                tool: &lookup,
            })
        };
        let r = search(&idx, &config, &q("zzzz qqqq", 5, 0), None, vectors());
        assert_eq!((r.matches, names(&r).len()), (0, 0), "{ranking}");
        // A term match still matches, whatever its cosine.
        let r = search(&idx, &config, &q("refund", 5, 0), None, vectors());
        assert_eq!(names(&r), ["stripe_refund_charge"], "{ranking}");
        // Without a floor every tool matches.
        let mut open = config.clone();
        open.search.min_cosine = None;
        let r = search(&idx, &open, &q("zzzz qqqq", 5, 0), None, vectors());
        assert_eq!(r.matches, 5, "{ranking}");
    }
}

#[test]
fn exact_name_in_any_ascii_case_among_the_allowed() {
    let config = Config::default();
    let tool = |name: &str| {
        let raw: Box<RawValue> =
            serde_json::from_str(&format!(r#"{{"name":"{name}","description":"x"}}"#)).unwrap();
        Tool::from_raw(&raw).unwrap()
    };
    let catalog = Catalog::from_tools(vec![tool("Get_Issue"), tool("get_issue"), tool("x")]);
    let idx = CatalogIndex::build("ns", catalog, &config);
    let r = search(&idx, &config, &q(" GET_ISSUE ", 1, 0), None, Err(off()));
    assert_eq!(names(&r), ["Get_Issue"]);
    let lower_only = |t: &Tool| &*t.name != "Get_Issue";
    let r = search(
        &idx,
        &config,
        &q("GET_ISSUE", 1, 0),
        Some(&lower_only),
        Err(off()),
    );
    assert_eq!(names(&r), ["get_issue"]);
    assert_eq!(r.candidates, 2);
    assert_eq!(
        idx.named_ignoring_case("nope").count() + idx.named_ignoring_case("").count(),
        0
    );
}

/// The threshold compares BM25 scores divided by the best candidate's: the best scores 1,
/// and a threshold between two scores keeps exactly those at or above it.
#[test]
fn threshold_drops_results_below_the_normalized_score() {
    let open = Config::default();
    let idx = index(&open);
    let all = search(&idx, &open, &q("close issue", 5, 0), None, Err(off()));
    assert_eq!(all.matches, 3, "{:?}", names(&all));
    let scores: Vec<f32> = all.found.iter().map(|f| f.score).collect();
    assert_eq!(names(&all)[0], "github_close_issue");
    assert!((scores[0] - 1.0).abs() < 1e-6, "{scores:?}");
    let second = scores[1];
    assert!(second < 1.0 && second > 0.0, "{scores:?}");
    for (threshold, kept) in [
        (second, 1 + scores.iter().filter(|&&s| s == second).count()),
        ((1.0 + second) / 2.0, 1),
    ] {
        let mut config = open.clone();
        config.search.score_threshold = Some(threshold);
        let r = search(&idx, &config, &q("close issue", 5, 0), None, Err(off()));
        assert_eq!(r.matches, kept, "threshold {threshold}: {scores:?}");
        assert_eq!(r.found.len(), kept, "threshold {threshold}: {scores:?}");
        assert_eq!(names(&r)[0], "github_close_issue");
        assert!(
            r.found.iter().all(|f| f.score >= threshold),
            "{:?}",
            r.found
        );
    }
    // Over 1 nothing is left, not even the best.
    let mut config = open.clone();
    config.search.score_threshold = Some(1.01);
    let r = search(&idx, &config, &q("close issue", 5, 0), None, Err(off()));
    assert_eq!((r.matches, r.found.len()), (0, 0));
}

#[test]
fn exact_name_first_even_under_threshold() {
    let open = Config::default();
    let idx = index(&open);
    let query = q("github_list_issues", 5, 0);
    let unfiltered = search(&idx, &open, &query, None, Err(off()));
    assert!(unfiltered.matches > 1, "{:?}", names(&unfiltered));
    // 1.01: no score reaches it, yet the tool named by the query stays, alone.
    let mut config = open.clone();
    config.search.score_threshold = Some(1.01);
    let r = search(&idx, &config, &query, None, Err(off()));
    assert_eq!(names(&r), ["github_list_issues"]);
    assert_eq!(r.matches, 1);
}

fn hierarchical(extra: &str) -> Config {
    Config::parse(&format!(
        r#"{{"group_separator":"_","search":{{"strategy":"hierarchical"{extra}}}}}"#
    ))
    .unwrap()
}

#[test]
fn hierarchical_search_ranks_only_the_tools_of_the_best_groups() {
    let config = hierarchical(r#","routing":{"groups":1}"#);
    let idx = index(&config);
    // "message" is slack's word; "charge" would draw stripe in a flat search.
    let r = search(
        &idx,
        &config,
        &q("post a message about a charge", 5, 0),
        None,
        Err(off()),
    );
    let routing = r.routing.clone().unwrap();
    assert_eq!(routing.used, Strategy::Hierarchical);
    assert_eq!(routing.groups, ["slack"]);
    assert_eq!(routing.stage1_groups, 2);
    assert_eq!(names(&r), ["slack_post_message"]);
    assert_eq!(
        r.candidates, 1,
        "stage 2 ranks the chosen group's tools only"
    );
    let flat = search(
        &idx,
        &Config::parse(r#"{"group_separator":"_"}"#).unwrap(),
        &q("post a message about a charge", 5, 0),
        None,
        Err(off()),
    );
    assert_eq!(names(&flat).len(), 2);
    assert!(flat.routing.is_none());
}

#[test]
fn hierarchical_search_falls_back_to_flat_and_says_why() {
    let config = hierarchical("");
    let idx = index(&config);
    let r = search(
        &idx,
        &config,
        &q("weather tomorrow", 5, 0),
        None,
        Err(off()),
    );
    let routing = r.routing.unwrap();
    assert_eq!(routing.used, Strategy::Flat);
    assert_eq!(
        routing.fallback.as_deref(),
        Some("no group matches the query")
    );
    assert_eq!(r.candidates, 5);
    // A description matches, the group's tools do not: stage 2 finds nothing.
    let config = hierarchical(
        r#","routing":{"descriptions":{"slack":"chat with the team about payments"}}"#,
    );
    let idx = index(&config);
    let r = search(&idx, &config, &q("payments", 5, 0), None, Err(off()));
    assert_eq!(
        r.routing.unwrap().fallback.as_deref(),
        Some("no tool of the chosen groups matches the query")
    );
    // An agent's own group choice is a flat search inside it.
    let mut grouped = q("issue", 5, 0);
    grouped.group = Some("github".into());
    assert!(search(&idx, &config, &grouped, None, Err(off()))
        .routing
        .is_none());
}

#[test]
fn hierarchical_groups_are_the_callers_own() {
    let config = hierarchical("");
    let idx = index(&config);
    let no_stripe = |t: &Tool| !t.name.starts_with("stripe");
    let r = search(
        &idx,
        &config,
        &q("refund a charge", 5, 0),
        Some(&no_stripe),
        Err(off()),
    );
    let routing = r.routing.unwrap();
    assert_eq!(routing.stage1_groups, 0, "a hidden group is never ranked");
    assert_eq!(routing.used, Strategy::Flat);
    assert!(r.found.is_empty());
    let all = search(&idx, &config, &q("refund a charge", 5, 0), None, Err(off()));
    assert_eq!(all.routing.unwrap().groups, ["stripe"]);
}

/// The vector share of a hybrid score falls as the best lexical match holds more of the query:
/// the configured weight with none of its words, 0.5 less with all, never below 0.
#[test]
fn the_vector_share_falls_as_the_best_lexical_match_covers_the_query() {
    let mut config = Config::default();
    assert_eq!(vector_weight(&config, 0.0), 0.85);
    assert!((vector_weight(&config, 0.5) - 0.6).abs() < 1e-6);
    assert!((vector_weight(&config, 1.0) - 0.35).abs() < 1e-6);
    config.search.hybrid_vector_weight = 0.3;
    assert_eq!(vector_weight(&config, 1.0), 0.0);
    config.search.tuning.vector_weight_drop = 0.0;
    assert_eq!(vector_weight(&config, 1.0), 0.3);
    // The coverage counts the query's distinct terms, known to the catalog or not.
    let idx = index(&Config::default());
    let doc = idx
        .named_ignoring_case("stripe_refund_charge")
        .next()
        .unwrap();
    assert_eq!(coverage(&idx, "refund the charge", doc), 1.0);
    assert_eq!(coverage(&idx, "refund refund money", doc), 0.5);
}
