//! `search.http_path`: the plain-HTTP search endpoint and its health follow the configured path,
//! and `false` removes them, natively.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::stream::RequestHead;
use serde_json::{json, Value};
use support::*;

const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
const SEARCH: &[u8] = br#"{"query":"refund a charge","limit":3}"#;
/// What the upstream answers to anything the filter lets through: recognisable, so that a
/// reply the filter made up cannot pass for it.
const UPSTREAM: &[u8] = br#"{"from":"upstream"}"#;

fn catalog() -> Vec<u8> {
    let defs: Vec<Value> = [
        ("stripe_refund_charge", "Refund a charge to a customer"),
        ("github_get_issue", "Get an issue by number"),
        ("slack_post_message", "Post a message to a channel"),
    ]
    .iter()
    .map(|(n, d)| json!({"name": n, "description": d, "inputSchema": {"type": "object"}}))
    .collect();
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":{"tools": defs}})).unwrap()
}

/// A worker that has learned the catalog from a list passing through `/mcp`, the list itself
/// rewritten (so the filter is otherwise at work on this configuration).
fn env_with(config: &str) -> TestEnv {
    let mut env = TestEnv::new(config);
    let body = catalog();
    let out = exchange(
        &mut env,
        post("/mcp"),
        LIST,
        ("200", "application/json", &[&body]),
    );
    let Outcome::Upstream {
        rewritten: true, ..
    } = &out
    else {
        panic!("the list was not rewritten: {out:?}")
    };
    env
}

/// The request reached the upstream as the client sent it and its answer came back unchanged.
fn assert_passes(env: &mut TestEnv, head: RequestHead, request: &[u8]) {
    let what = format!("{} {}", head.method, head.path);
    let out = exchange(env, head, request, ("200", "application/json", &[UPSTREAM]));
    assert_eq!(
        out,
        Outcome::Upstream {
            body: UPSTREAM.to_vec(),
            rewritten: false
        },
        "{what} was not left to the upstream"
    );
    assert_eq!(
        sent_upstream().as_deref(),
        Some(request),
        "{what}: the upstream did not get the request body unchanged"
    );
}

/// The endpoint answered a search itself, with the learned tool ranked first.
fn assert_searches(env: &mut TestEnv, path: &str) {
    let out = exchange(
        env,
        post(path),
        SEARCH,
        ("200", "application/json", &[UPSTREAM]),
    );
    let Outcome::Local {
        status: 200, body, ..
    } = &out
    else {
        panic!("POST {path} was not answered by the filter: {out:?}")
    };
    let v: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(v["tools"][0]["name"], "stripe_refund_charge", "{v}");
    assert_eq!(v["metadata"]["strategy"], "bm25", "{v}");
    assert_eq!(sent_upstream(), None, "POST {path} reached the upstream");
}

fn assert_health(env: &mut TestEnv, path: &str) {
    let out = exchange(
        env,
        get(path),
        b"",
        ("200", "application/json", &[UPSTREAM]),
    );
    let Outcome::Local {
        status: 200, body, ..
    } = &out
    else {
        panic!("GET {path} was not answered by the filter: {out:?}")
    };
    let v: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(v["search"]["status"], "ok", "{v}");
    assert_eq!(v["catalogs"]["upstream"]["tools"], 3, "{v}");
}

#[test]
fn the_default_path_serves_search_and_health() {
    // The baseline the other tests move away from: without it, a filter that never answered
    // the default path would pass them.
    let mut env = env_with("{}");
    assert_searches(&mut env, "/mcp/search");
    assert_health(&mut env, "/mcp/search/health");
}

#[test]
fn a_moved_path_takes_search_and_health_along_and_frees_the_default() {
    let mut env = env_with(r#"{"search":{"http_path":"/find"}}"#);
    assert_searches(&mut env, "/find");
    assert_health(&mut env, "/find/health");
    let out = exchange(&mut env, get("/find"), b"", ("200", "", &[UPSTREAM]));
    let Outcome::Local {
        status: 405,
        headers,
        ..
    } = &out
    else {
        panic!("GET /find: {out:?}")
    };
    assert!(
        headers.contains(&("allow".into(), "POST".into())),
        "{headers:?}"
    );
    let out = exchange(
        &mut env,
        post("/find/health"),
        b"{}",
        ("200", "", &[UPSTREAM]),
    );
    assert!(
        matches!(out, Outcome::Local { status: 405, .. }),
        "POST /find/health: {out:?}"
    );

    // The old paths are now ordinary traffic: neither answered nor refused here.
    assert_passes(&mut env, post("/mcp/search"), SEARCH);
    assert_passes(&mut env, get("/mcp/search"), b"");
    assert_passes(&mut env, get("/mcp/search/health"), b"");
}

#[test]
fn a_moved_path_outside_the_mcp_paths_is_still_the_endpoint() {
    // `/api/tools/search` is under no MCP path, so only `http_path` can make it the endpoint.
    let mut env = env_with(r#"{"search":{"http_path":"/api/tools/search"}}"#);
    assert_searches(&mut env, "/api/tools/search");
    assert_health(&mut env, "/api/tools/search/health");
    assert_passes(&mut env, post("/mcp/search"), SEARCH);
}

#[test]
fn false_removes_the_endpoint_and_its_health() {
    let mut env = env_with(r#"{"search":{"http_path":false}}"#);
    assert_passes(&mut env, post("/mcp/search"), SEARCH);
    assert_passes(&mut env, get("/mcp/search"), b"");
    assert_passes(&mut env, get("/mcp/search/health"), b"");
    // Nothing else took the endpoint's place either.
    assert_passes(&mut env, post("/search"), SEARCH);
    assert_passes(&mut env, get("/health"), b"");
}

fn search_json(env: &mut TestEnv, body: &[u8]) -> (u32, Value) {
    let out = exchange(
        env,
        post("/mcp/search"),
        body,
        ("200", "application/json", &[UPSTREAM]),
    );
    let Outcome::Local { status, body, .. } = &out else {
        panic!("POST /mcp/search was not answered by the filter: {out:?}")
    };
    (*status, serde_json::from_slice(body).unwrap())
}

#[test]
fn explain_true_explains_each_result_term_by_term_and_field_by_field() {
    let mut env = env_with("{}");
    let (status, v) = search_json(
        &mut env,
        br#"{"query":"refund a charge message","limit":3,"explain":true}"#,
    );
    assert_eq!(status, 200, "{v}");
    let tools = v["tools"].as_array().unwrap();
    let explained = v["explanations"].as_array().unwrap();
    assert_eq!(explained.len(), tools.len(), "{v}");
    for (tool, why) in tools.iter().zip(explained) {
        assert_eq!(tool["name"], why["name"], "{v}");
        assert_eq!(why["ranking"], "bm25", "{v}");
        // The terms' scores add up to the BM25 score, and the normalized score is the result's.
        let terms = why["bm25"]["terms"].as_array().unwrap();
        let sum: f64 = terms.iter().map(|t| t["score"].as_f64().unwrap()).sum();
        assert!(
            (sum - why["bm25"]["score"].as_f64().unwrap()).abs() < 1e-4,
            "{why}"
        );
        let best = why["bm25"]["best"].as_f64().unwrap();
        assert!(
            (why["score"].as_f64().unwrap() - sum / best).abs() < 1e-4,
            "{why}"
        );
        // Each term's field shares add up to its score.
        for t in terms {
            let fields = t["fields"].as_array().unwrap();
            let share: f64 = fields.iter().map(|f| f["score"].as_f64().unwrap()).sum();
            assert!((share - t["score"].as_f64().unwrap()).abs() < 1e-4, "{t}");
        }
    }
    // stripe_refund_charge: "refund" in name and description, "charg" likewise; in that order
    // (query order), each with the name field first.
    let first = &explained[0];
    assert_eq!(first["name"], "stripe_refund_charge", "{v}");
    let terms: Vec<&str> = first["bm25"]["terms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["term"].as_str().unwrap())
        .collect();
    assert_eq!(terms, ["refund", "charg"], "{first}");
    let fields: Vec<&str> = first["bm25"]["terms"][0]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["name", "description"], "{first}");
    assert_eq!(first["score"], 1.0, "{first}");
    assert!(first.get("vector").is_none(), "{first}");
    // The second result matched only "message".
    assert_eq!(explained[1]["name"], "slack_post_message", "{v}");
    assert_eq!(explained[1]["bm25"]["terms"][0]["term"], "messag", "{v}");

    // Without it, no explanations; a non-boolean is refused with the field named.
    let (_, plain) = search_json(&mut env, br#"{"query":"refund","explain":false}"#);
    assert!(plain.get("explanations").is_none(), "{plain}");
    let (status, bad) = search_json(&mut env, br#"{"query":"refund","explain":"yes"}"#);
    assert_eq!(status, 400, "{bad}");
    assert!(
        bad["error"]
            .as_str()
            .unwrap()
            .contains("\"explain\" must be true or false"),
        "{bad}"
    );
}
