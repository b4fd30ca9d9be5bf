//! Semantic ranking through the stream: query vectors used when every candidate has one, BM25
//! with the reason otherwise, and the search never fails for it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::config::Ranking;
use mcp_tool_search_core::rank::search::FallbackKind;
use mcp_tool_search_core::stream::Event;
use serde_json::{json, Value};
use std::rc::Rc;
use support::*;

const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
const TOOLS: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_weather","description":"Weather forecast"},{"name":"stripe_refund_charge","description":"Refund a charge"},{"name":"slack_post_message","description":"Post a message"}]}}"#;
const EMB: &str = r#""embeddings":{"cluster":"emb","model_id":"m","dimensions":2}"#;

/// Vectors by tool (catalog order: get_weather, slack_post_message, stripe_refund_charge), as
/// the embeddings service answers for each tool's text.
fn tool_service(text: &str) -> Vec<f32> {
    if text.contains("get_weather") {
        vec![1.0, 0.0]
    } else if text.contains("slack_post_message") {
        vec![0.0, 1.0]
    } else {
        vec![0.6, 0.8]
    }
}

/// A worker that learned the catalog, with `ranking`; with `embedded`, the background worker
/// embedded every tool through the service (the real scheduler, lease and store).
fn env_with(ranking: &str, embedded: bool, extra: &str) -> TestEnv {
    let mut env = TestEnv::new(&format!(
        r#"{{"search":{{"ranking":"{ranking}",{EMB}}}{extra}}}"#
    ));
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
    let (names, meta) = search(&mut env, "refund");
    assert_eq!(meta["strategy"], "hybrid");
    // slack by meaning (cosine 1), stripe by its term (cosine 0.8); get_weather neither
    // (cosine 0, below the floor).
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
    // A tool not embedded yet (the service was down for the tools; two have precomputed
    // vectors): the whole candidate set is ranked by BM25.
    let mut partial = env_with(
        "vector",
        false,
        r#","tools":[{"name":"get_weather","embedding":[1,0]},{"name":"slack_post_message","embedding":[0,1]}]"#,
    );
    partial.embed_tools();
    partial.query_vectors = Some(Rc::new(|_: &str| vec![0.0, 1.0]));
    let (names, meta) = search(&mut partial, "refund");
    assert_eq!(names, ["stripe_refund_charge"]);
    assert_eq!(meta["fallback"]["kind"], "not_embedded");
    // Wrong dimensions from the service.
    let mut wrong = env("vector");
    wrong.query_vectors = Some(Rc::new(|_: &str| vec![1.0, 0.0, 0.0]));
    let (_, meta) = search(&mut wrong, "refund");
    assert_eq!(meta["fallback"]["kind"], "dimensions");
}

#[test]
fn http_search_uses_the_same_ranking() {
    let mut env = env("vector");
    env.query_vectors = Some(Rc::new(|_: &str| vec![1.0, 0.0]));
    let head = mcp_tool_search_core::stream::RequestHead {
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
        mcp_tool_search_core::stream::RequestHead {
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
