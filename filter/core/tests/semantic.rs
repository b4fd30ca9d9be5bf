//! Semantic ranking through the stream: query vectors used for the candidates that have one,
//! BM25 with the reason when the query has none, the search never failing for it, and the
//! service's recovery seen by every worker at once.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::{Event, FallbackKind, Ranking};
use serde_json::{json, Value};
use std::rc::Rc;
use support::*;

const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
const TOOLS: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_weather","description":"Weather forecast"},{"name":"stripe_refund_charge","description":"Refund a charge"},{"name":"slack_post_message","description":"Post a message"}]}}"#;
const EMB: &str = r#""embeddings":{"cluster":"emb","model_id":"m","dimensions":2}"#;

/// Vectors by tool (catalog order: get_weather, slack_post_message, stripe_refund_charge), as
/// the embeddings service answers for each tool's text (which ends with its name's words).
fn tool_service(text: &str) -> Vec<f32> {
    if text.contains("(get weather)") {
        vec![1.0, 0.0]
    } else if text.contains("(slack post message)") {
        vec![0.0, 1.0]
    } else {
        vec![0.6, 0.8]
    }
}

/// A worker that learned the catalog, with `ranking`; with `embedded`, the background worker
/// embedded every tool through the service (the real scheduler, lease and store).
fn env_with(ranking: &str, embedded: bool, extra: &str) -> TestEnv {
    env_searching(&format!(r#""ranking":"{ranking}""#), embedded, extra)
}

/// `search`: members of the search block besides the embeddings service.
fn env_searching(search: &str, embedded: bool, extra: &str) -> TestEnv {
    let mut env = TestEnv::new(&format!(r#"{{"search":{{{search},{EMB}}}{extra}}}"#));
    exchange(
        &mut env,
        post("/mcp"),
        LIST,
        ("200", "application/json", &[TOOLS]),
    );
    if embedded {
        env.tool_embedder = Some(Rc::new(tool_service));
        env.embed_tools();
    }
    env
}

fn env(ranking: &str) -> TestEnv {
    env_with(ranking, true, "")
}

fn search(env: &mut TestEnv, query: &str) -> (Vec<String>, Value) {
    let body = json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":query}}});
    let out = exchange(
        env,
        post("/mcp"),
        &serde_json::to_vec(&body).unwrap(),
        ("200", "", &[]),
    );
    let (reply, found) = local_result(&out);
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let names = found
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    (
        names,
        reply["result"]["_meta"]["mcp-tool-search/search"].clone(),
    )
}

#[test]
fn vectors_rank_when_the_query_and_every_tool_embedded() {
    let mut env = env("vector");
    // Every query points at slack's vector: the vector ranking ignores the words.
    env.query_vectors = Some(Rc::new(|_: &str| vec![0.0, 1.0]));
    let (names, meta) = search(&mut env, "weather");
    assert_eq!(names[0], "slack_post_message");
    assert_eq!(meta["strategy"], "vector");
    assert!(meta.get("fallback").is_none());
    assert_eq!(env.count(Event::SearchAnswered(Ranking::Vector)), 1);
}

#[test]
fn hybrid_fuses_both_rankings() {
    let mut env = env("hybrid");
    env.query_vectors = Some(Rc::new(|_: &str| vec![0.0, 1.0]));
    let (names, meta) = search(&mut env, "refund my money please");
    assert_eq!(meta["strategy"], "hybrid");
    // slack by meaning (cosine 1), stripe by its term (cosine 0.8); get_weather neither
    // (cosine 0, below the floor). Stripe holds one of the query's three words: the vector
    // share is 0.85 - 0.5 / 3.
    assert_eq!(names, ["slack_post_message", "stripe_refund_charge"]);
    assert_eq!(meta["matches"], 2);
}

#[test]
fn any_embedding_trouble_falls_back_to_bm25_and_says_why() {
    // Service down.
    let mut down = env("vector");
    let (names, meta) = search(&mut down, "refund");
    assert_eq!(names, ["stripe_refund_charge"]);
    assert_eq!(meta["strategy"], "bm25");
    assert_eq!(meta["fallback"]["mode"], "bm25");
    assert_eq!(meta["fallback"]["kind"], "unavailable");
    assert_eq!(
        down.count(Event::SearchFallback(FallbackKind::Unavailable)),
        1
    );
    // Tools not embedded yet (the service was down for the tools; two have precomputed
    // vectors): they rank by their BM25 score within the vector ranking, and `_meta` says how
    // many candidates had a vector.
    let precomputed = r#","tools":[{"name":"get_weather","embedding":[1,0]},{"name":"slack_post_message","embedding":[0,1]}]"#;
    let mut partial = env_with("vector", false, precomputed);
    partial.embed_tools();
    partial.query_vectors = Some(Rc::new(|_: &str| vec![0.0, 1.0]));
    let (names, meta) = search(&mut partial, "refund");
    assert_eq!(names, ["slack_post_message", "stripe_refund_charge"]);
    assert_eq!(
        (&meta["strategy"], &meta["embedded"]),
        (&json!("vector"), &json!(2))
    );
    assert!(meta.get("fallback").is_none(), "{meta}");
    // `require_all_vectors`: the whole candidate set is ranked by BM25 until each has one.
    let mut strict = env_searching(
        r#""ranking":"vector","require_all_vectors":true"#,
        false,
        precomputed,
    );
    strict.embed_tools();
    strict.query_vectors = Some(Rc::new(|_: &str| vec![0.0, 1.0]));
    let (names, meta) = search(&mut strict, "refund");
    assert_eq!(names, ["stripe_refund_charge"]);
    assert_eq!(meta["fallback"]["kind"], "not_embedded");
    assert!(meta.get("embedded").is_none(), "{meta}");
    // Wrong dimensions from the service.
    let mut wrong = env("vector");
    wrong.query_vectors = Some(Rc::new(|_: &str| vec![1.0, 0.0, 0.0]));
    let (_, meta) = search(&mut wrong, "refund");
    assert_eq!(meta["fallback"]["kind"], "dimensions");
}

/// A task of two steps that shares no word with any tool: the whole query's vector points at
/// slack alone, its first step's at the weather. The step's part lifts get_weather's cosine
/// half way (0 → 0.5), over the 0.25 floor: without parts it would not match at all.
fn task_service(texts: Rc<std::cell::RefCell<Vec<String>>>) -> Rc<Embedder> {
    Rc::new(move |text: &str| {
        texts.borrow_mut().push(text.to_string());
        if text == "how is it outside" {
            vec![1.0, 0.0]
        } else {
            vec![0.0, 1.0]
        }
    })
}

#[test]
fn a_task_is_embedded_with_its_steps_and_each_step_finds_its_tool() {
    const TASK: &str = "how is it outside, and tell the team";
    let texts = Rc::new(std::cell::RefCell::new(Vec::new()));
    let mut env = env("vector");
    env.query_vectors = Some(task_service(texts.clone()));
    let (names, meta) = search(&mut env, TASK);
    // One request: the whole query, then its parts.
    assert_eq!(
        *texts.borrow(),
        [TASK, "how is it outside", "tell the team"]
    );
    assert_eq!(meta["strategy"], "vector");
    assert_eq!(
        names,
        ["slack_post_message", "stripe_refund_charge", "get_weather"]
    );

    // The plain HTTP search sends the same texts and ranks the same way.
    texts.borrow_mut().clear();
    let head = mcp_tool_search_core::RequestHead {
        path: "/mcp/search".into(),
        ..post("/mcp")
    };
    let body = json!({ "query": TASK }).to_string();
    let out = exchange(&mut env, head, body.as_bytes(), ("200", "", &[]));
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(v["tools"][2]["name"], "get_weather", "{v}");
    assert_eq!(
        *texts.borrow(),
        [TASK, "how is it outside", "tell the team"]
    );

    // A one-step query is embedded alone, and get_weather (cosine 0, no shared word) does not
    // match it.
    texts.borrow_mut().clear();
    let (names, _) = search(&mut env, "tell the team");
    assert_eq!(*texts.borrow(), ["tell the team"]);
    assert!(!names.contains(&"get_weather".to_string()), "{names:?}");
}

#[test]
fn http_search_uses_the_same_ranking() {
    let mut env = env("vector");
    env.query_vectors = Some(Rc::new(|_: &str| vec![1.0, 0.0]));
    let head = mcp_tool_search_core::RequestHead {
        path: "/mcp/search".into(),
        ..post("/mcp")
    };
    let out = exchange(
        &mut env,
        head,
        br#"{"query":"anything","limit":1}"#,
        ("200", "", &[]),
    );
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(v["tools"][0]["name"], "get_weather");
    assert_eq!(v["metadata"]["strategy"], "vector");
}

#[test]
fn a_failing_service_opens_the_circuit_then_one_probe_closes_it() {
    let mut env = env("hybrid");
    env.host.clock_ms.set(1_767_225_600_000);
    // Down: three searches try it and fall back; then the circuit opens.
    for _ in 0..3 {
        let (_, meta) = search(&mut env, "refund");
        assert_eq!(meta["fallback"]["kind"], "unavailable");
    }
    assert_eq!(env.host.counter("embeddings_circuit.opened"), 1);
    // Open: no call at all, BM25 at once, and the reason says so.
    env.query_vectors = Some(Rc::new(|_: &str| vec![0.0, 1.0]));
    let (names, meta) = search(&mut env, "refund");
    assert_eq!(names, ["stripe_refund_charge"]);
    assert_eq!(meta["fallback"]["kind"], "circuit_open");
    assert!(env.host.take_calls().is_empty());
    assert_eq!(
        env.count(Event::SearchFallback(FallbackKind::CircuitOpen)),
        1
    );
    let health = exchange(
        &mut env,
        mcp_tool_search_core::RequestHead {
            method: "GET".into(),
            path: "/mcp/search/health".into(),
            ..post("/mcp")
        },
        b"",
        ("200", "", &[]),
    );
    let h: Value = serde_json::from_slice(health.body()).unwrap();
    assert_eq!(h["search"]["status"], "degraded");
    assert_eq!(h["search"]["circuit"]["state"], "open");
    assert!(h["search"]["circuit"]["since_ms"].as_u64().unwrap() > 0);
    // After the backoff (1 s, jittered by at most a quarter), one search probes; the service is
    // back, so the circuit closes and hybrid ranking resumes.
    env.host.clock_ms.set(env.host.clock_ms.get() + 1_300);
    let (_, meta) = search(&mut env, "refund");
    assert_eq!(meta["strategy"], "hybrid");
    assert_eq!(env.host.counter("embeddings_circuit.half_open"), 1);
    assert_eq!(env.host.counter("embeddings_circuit.closed"), 1);
    let (_, meta) = search(&mut env, "refund");
    assert_eq!(meta["strategy"], "hybrid");
}

// ---- the hybrid formula and the threshold (README "Scores") ------------------------------------

/// Three tools where words and meaning disagree on the query: `refund_charge` shares two of its
/// five terms, `refund_payment` one, `payment_undo` none but means it most.
const FUSED_TOOLS: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"refund_charge","description":"Refund a charge"},{"name":"refund_payment","description":"Refund a payment"},{"name":"payment_undo","description":"Undo a payment"}]}}"#;
const FUSED_QUERY: &str = "refund charge money back please";
/// The best lexical match holds 2 of the query's 5 terms: the vector share is the configured
/// weight less 0.5 × 2/5.
fn fused_weight(w: f32) -> f32 {
    (w - 0.2).max(0.0)
}
/// The query's vector: every cosine is the tool vector's first component.
const FUSED_QUERY_VECTOR: [f32; 2] = [1.0, 0.0];

/// Unit vectors at cosine 0.3, 0.6 and 1 from the query (all at or above the 0.25 floor, so
/// the candidates that match are exactly these three).
fn fused_vector(text: &str) -> Vec<f32> {
    if text.contains("(refund charge)") {
        vec![0.3, 0.953_939_2]
    } else if text.contains("(refund payment)") {
        vec![0.6, 0.8]
    } else {
        vec![1.0, 0.0]
    }
}

/// A worker that learned and embedded the three tools; `search_fields` are more `search` fields.
fn fused_env(ranking: &str, search_fields: &str) -> TestEnv {
    let mut env = TestEnv::new(&format!(
        r#"{{"search":{{"ranking":"{ranking}",{EMB}{search_fields}}}}}"#
    ));
    exchange(
        &mut env,
        post("/mcp"),
        LIST,
        ("200", "application/json", &[FUSED_TOOLS]),
    );
    env.tool_embedder = Some(Rc::new(fused_vector));
    env.embed_tools();
    env.query_vectors = Some(Rc::new(|_: &str| FUSED_QUERY_VECTOR.to_vec()));
    env
}

/// The same search through the core, with each result's score.
fn fused_scores(config: &str) -> Vec<(String, f32)> {
    use mcp_tool_search_core::Config;
    use mcp_tool_search_core::{search, Query, Vectors};
    use mcp_tool_search_core::{Catalog, CatalogIndex, Tool};
    let config = Config::parse(config).unwrap();
    let body: Value = serde_json::from_slice(FUSED_TOOLS).unwrap();
    let tools: Vec<Tool> = body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let raw = serde_json::value::RawValue::from_string(t.to_string()).unwrap();
            Tool::from_raw(&raw).unwrap()
        })
        .collect();
    let index = CatalogIndex::build("ns", Catalog::from_tools(tools), &config);
    let vectors: Vec<Vec<f32>> = index
        .catalog
        .tools()
        .iter()
        .map(|t| {
            let mut v = fused_vector(&mcp_tool_search_core::tool_text(t));
            mcp_tool_search_core::normalize(&mut v).unwrap();
            v
        })
        .collect();
    let lookup = |i: usize| vectors.get(i).map(Vec::as_slice);
    let query = Query {
        text: FUSED_QUERY.into(),
        limit: 10,
        offset: 0,
        group: None,
    };
    let ranked = search(
        &index,
        &config,
        &query,
        None,
        Ok(Vectors {
            query: &FUSED_QUERY_VECTOR,
            tool: &lookup,
        }),
    );
    // Every result's explanation arrives at the score it was ranked by.
    for f in &ranked.found {
        let why = mcp_tool_search_core::explain(&index, FUSED_QUERY, &ranked.scoring, f.doc);
        assert_eq!(why.name, &*f.tool.name);
        assert_eq!(why.ranking, ranked.strategy.name());
        assert!(close(why.score, f.score), "{why:?} vs {}", f.score);
        match &why.vector {
            Some(v) => {
                assert!(close(v.fused, f.score), "{why:?}");
                let cos = vectors[f.doc as usize][0];
                assert!(close(v.cosine.unwrap(), cos), "{why:?}");
            }
            None => assert_eq!(ranked.strategy.name(), "bm25", "{why:?}"),
        }
        let terms: f32 = why.bm25.terms.iter().map(|t| t.score).sum();
        assert!(close(terms, why.bm25.score), "{why:?}");
    }
    ranked
        .found
        .iter()
        .map(|f| (f.tool.name.to_string(), f.score))
        .collect()
}

fn score_of(scores: &[(String, f32)], name: &str) -> f32 {
    scores
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{name} not in {scores:?}"))
        .1
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() < 1e-5
}

/// The vector weight decides the fused order: 0.9 (0.7 for this query) follows the cosine
/// (payment_undo first, the term match last), 0.1 (0) follows BM25 (refund_charge first, the
/// term-less tool last).
#[test]
fn hybrid_vector_weight_decides_the_fused_order() {
    let weighted = |w: f32| {
        let mut env = fused_env("hybrid", &format!(r#","hybrid_vector_weight":{w}"#));
        let (names, meta) = search(&mut env, FUSED_QUERY);
        assert_eq!(meta["strategy"], "hybrid", "{meta}");
        assert!(meta.get("fallback").is_none(), "{meta}");
        names
    };
    assert_eq!(
        weighted(0.9),
        ["payment_undo", "refund_payment", "refund_charge"]
    );
    assert_eq!(
        weighted(0.1),
        ["refund_charge", "refund_payment", "payment_undo"]
    );
}

/// The scores themselves: vector scores are the cosine; hybrid scores are w × the cosine
/// min-max normalized over the matching candidates + (1 − w) × BM25 over the best candidate's,
/// w the configured weight less 0.5 × the share of the query's terms the best BM25 match holds.
#[test]
fn hybrid_score_is_the_documented_formula() {
    let config = |ranking: &str, extra: &str| {
        format!(r#"{{"search":{{"ranking":"{ranking}",{EMB}{extra}}}}}"#)
    };
    let cosine = [
        ("refund_charge", 0.3f32),
        ("refund_payment", 0.6),
        ("payment_undo", 1.0),
    ];
    let vector = fused_scores(&config("vector", ""));
    assert_eq!(vector.len(), 3, "{vector:?}");
    for (name, cos) in cosine {
        assert!(close(score_of(&vector, name), cos), "{name}: {vector:?}");
    }
    // BM25 normalized: the best candidate scores 1, a tool sharing no term 0.
    let bm25 = fused_scores(&config("bm25", ""));
    assert_eq!(bm25.len(), 2, "payment_undo shares no term: {bm25:?}");
    assert!(close(score_of(&bm25, "refund_charge"), 1.0), "{bm25:?}");
    let partial = score_of(&bm25, "refund_payment");
    assert!(partial > 0.0 && partial < 1.0, "{bm25:?}");
    let bm25_of = |name: &str| match name {
        "refund_charge" => 1.0,
        "refund_payment" => partial,
        _ => 0.0,
    };
    for w in [0.9f32, 0.1, 0.75] {
        let hybrid = fused_scores(&config(
            "hybrid",
            &format!(r#","hybrid_vector_weight":{w}"#),
        ));
        assert_eq!(hybrid.len(), 3, "{hybrid:?}");
        for (name, cos) in cosine {
            let normalized = (cos - 0.3) / (1.0 - 0.3);
            let w = fused_weight(w);
            let want = w * normalized + (1.0 - w) * bm25_of(name);
            let got = score_of(&hybrid, name);
            assert!(close(got, want), "w {w}, {name}: {got} != {want}");
        }
        let mut sorted = hybrid.clone();
        sorted.sort_by(|a, b| b.1.total_cmp(&a.1));
        assert_eq!(hybrid, sorted, "best first");
    }
}

/// `score_threshold` compares the score of the ranking that ran: the cosine under `vector`, the
/// fused score under `hybrid` (neither the BM25 share nor the raw cosine).
#[test]
fn score_threshold_applies_to_vector_and_hybrid_scores() {
    let names_with = |ranking: &str, fields: &str| {
        let mut env = fused_env(ranking, fields);
        let (names, meta) = search(&mut env, FUSED_QUERY);
        (names, meta)
    };
    // Cosines 1, 0.6, 0.3: 0.5 drops refund_charge, the best BM25 match.
    let (names, meta) = names_with("vector", "");
    assert_eq!(names, ["payment_undo", "refund_payment", "refund_charge"]);
    assert_eq!(meta["matches"], 3);
    let (names, meta) = names_with("vector", r#","score_threshold":0.5"#);
    assert_eq!(names, ["payment_undo", "refund_payment"]);
    assert_eq!(meta["matches"], 2, "{meta}");
    // Hybrid, w 0.9 (0.7 for this query): 0.7, 0.7 × 3/7 + 0.3 × BM25 share (< 0.5), 0.3 (+ 0):
    // only payment_undo reaches 0.5, though refund_payment's cosine (0.6) and refund_charge's
    // BM25 (1) would.
    let (names, meta) = names_with("hybrid", r#","hybrid_vector_weight":0.9"#);
    assert_eq!(meta["matches"], 3);
    assert_eq!(names.len(), 3);
    let (names, meta) = names_with(
        "hybrid",
        r#","hybrid_vector_weight":0.9,"score_threshold":0.5"#,
    );
    assert_eq!(names, ["payment_undo"]);
    assert_eq!(meta["matches"], 1, "{meta}");
    // w 0.1 (0): refund_charge 1; payment_undo 0, below 0.5 although its cosine is 1.
    let (names, _) = names_with(
        "hybrid",
        r#","hybrid_vector_weight":0.1,"score_threshold":0.5"#,
    );
    assert_eq!(names.first().map(String::as_str), Some("refund_charge"));
    assert!(!names.iter().any(|n| n == "payment_undo"), "{names:?}");
}

/// A worker whose background embedding failed waits out a backoff; another worker's search
/// that gets its query embedded proves the service is back, and the first worker embeds on its
/// next tick instead of at the end of its backoff.
#[test]
fn a_success_on_one_worker_ends_every_workers_backoff() {
    let config = format!(r#"{{"search":{{"ranking":"hybrid",{EMB}}}}}"#);
    let mut a = TestEnv::new(&config);
    exchange(
        &mut a,
        post("/mcp"),
        LIST,
        ("200", "application/json", &[TOOLS]),
    );
    // The service is down for A's batch: A backs off (1 s after a first failure).
    assert!(a.tick(), "A sends its first batch");
    let mut b = TestEnv::sharing(&config, Rc::clone(&a.host));
    let step = |env: &TestEnv, ms: u64| env.host.clock_ms.set(env.host.clock_ms.get() + ms);
    step(&a, 100);
    assert!(!a.tick(), "A waits out its backoff");
    // B's query is embedded: the service answers again.
    b.query_vectors = Some(Rc::new(|_: &str| vec![0.0, 1.0]));
    // (No tool has a vector yet: BM25, but the query was embedded.)
    let (_, meta) = search(&mut b, "post a message");
    assert_eq!(meta["fallback"]["kind"], "not_embedded", "{meta}");
    step(&a, 100);
    a.tool_embedder = Some(Rc::new(tool_service));
    assert!(a.tick(), "A retries at once, 200 ms into a 1 s backoff");
    let (_, meta) = search(&mut b, "post a message");
    assert_eq!(
        (&meta["strategy"], &meta["embedded"]),
        (&json!("hybrid"), &json!(3))
    );
}

/// README "Explain": under hybrid ranking each explanation carries the vector block (the
/// cosine, its min-max normalization over the matching tools, the search's vector share and
/// the fused score, which is the result's), and a query that is a tool's name marks that tool
/// `exact_name` (first whatever its score); no other explanation has the mark.
#[test]
fn explanations_show_the_vector_block_and_the_exact_name() {
    let mut env = env("hybrid");
    env.query_vectors = Some(Rc::new(|_: &str| vec![0.0, 1.0]));
    let head = mcp_tool_search_core::RequestHead {
        path: "/mcp/search".into(),
        ..post("/mcp")
    };
    let out = exchange(
        &mut env,
        head,
        br#"{"query":"stripe_refund_charge","explain":true}"#,
        ("200", "", &[]),
    );
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    let why = v["explanations"].as_array().unwrap();
    let names: Vec<&str> = why.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["stripe_refund_charge", "slack_post_message"], "{v}");
    let number = |e: &Value, key: &str| e["vector"][key].as_f64().unwrap() as f32;
    // stripe: cosine 0.8 (the least of the two matching), and every query word in its name:
    // the vector share is 0.85 - 0.5 = 0.35, fused 0.35 × 0 + 0.65 × 1.
    let stripe = &why[0];
    assert_eq!(stripe["exact_name"], true, "{stripe}");
    assert_eq!(stripe["ranking"], "hybrid");
    for (key, want) in [
        ("cosine", 0.8),
        ("normalized", 0.0),
        ("cosine_min", 0.8),
        ("cosine_max", 1.0),
        ("weight", 0.35),
        ("fused", 0.65),
    ] {
        assert!(close(number(stripe, key), want), "{key}: {stripe}");
    }
    assert!(
        close(stripe["score"].as_f64().unwrap() as f32, 0.65),
        "{stripe}"
    );
    // slack: by meaning only (cosine 1, no query term), fused 0.35 × 1 + 0.65 × 0.
    let slack = &why[1];
    assert!(slack.get("exact_name").is_none(), "{slack}");
    for (key, want) in [
        ("cosine", 1.0),
        ("normalized", 1.0),
        ("weight", 0.35),
        ("fused", 0.35),
    ] {
        assert!(close(number(slack, key), want), "{key}: {slack}");
    }
    assert!(
        close(slack["bm25"]["normalized"].as_f64().unwrap() as f32, 0.0),
        "{slack}"
    );
}

/// `search.embeddings.circuit_failures`: the circuit opens after that many query embeddings in
/// a row failed, not before.
#[test]
fn the_circuit_opens_after_the_configured_number_of_failures() {
    for failures in [1usize, 5] {
        let mut env = TestEnv::new(&format!(
            r#"{{"search":{{"ranking":"hybrid","embeddings":{{"cluster":"emb","model_id":"m","dimensions":2,"circuit_failures":{failures}}}}}}}"#
        ));
        exchange(
            &mut env,
            post("/mcp"),
            LIST,
            ("200", "application/json", &[TOOLS]),
        );
        env.tool_embedder = Some(Rc::new(tool_service));
        env.embed_tools();
        env.host.clock_ms.set(1_767_225_600_000);
        for i in 0..failures {
            assert_eq!(
                env.host.counter("embeddings_circuit.opened"),
                0,
                "after {i}"
            );
            let (_, meta) = search(&mut env, "refund");
            assert_eq!(meta["fallback"]["kind"], "unavailable", "search {i}");
        }
        assert_eq!(env.host.counter("embeddings_circuit.opened"), 1);
        let (_, meta) = search(&mut env, "refund");
        assert_eq!(meta["fallback"]["kind"], "circuit_open");
    }
}
