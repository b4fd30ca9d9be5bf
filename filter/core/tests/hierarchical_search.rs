//! `search.strategy: "hierarchical"`: stage 1 ranks the caller's groups, stage 2 the tools of
//! the best ones; what each stage did is in the search's metadata (MCP `_meta` and the HTTP
//! endpoint), and `GET <http_path>/groups` shows stage 1. Natively.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::{Caller, RequestHead};
use serde_json::{json, Value};
use support::*;

const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
const UPSTREAM: &[u8] = br#"{"from":"upstream"}"#;
const HIERARCHICAL: &str =
    r#""group_separator":"_","search":{"strategy":"hierarchical","routing":{"groups":1}}"#;
const POLICY: &str = r#""authorization":{"identity":{"source":"header","header":"x-user-roles"},
    "rules":[{"claim":"roles","values":["support"],"tools":["github_*","slack_*"]},
             {"claim":"roles","values":["billing"],"tools":["stripe_*"]}],
    "default":"deny"}"#;

fn catalog() -> Vec<u8> {
    let defs: Vec<Value> = [
        ("github_create_issue", "Open an issue in a repository"),
        ("github_list_issues", "List the issues of a repository"),
        ("slack_post_message", "Post a message to a channel"),
        ("slack_list_channels", "List the channels of a workspace"),
        ("stripe_refund_charge", "Refund a charge to a customer"),
        ("stripe_list_charges", "List the charges of a customer"),
    ]
    .iter()
    .map(|(n, d)| json!({"name": n, "description": d, "inputSchema": {"type": "object"}}))
    .collect();
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":{"tools": defs}})).unwrap()
}

fn as_role(head: RequestHead, role: &str) -> RequestHead {
    RequestHead {
        caller: Caller::from_header("roles", role),
        ..head
    }
}

fn learned(config: &str) -> TestEnv {
    let mut env = TestEnv::new(&format!("{{{config}}}"));
    let head = as_role(post("/mcp"), "support,billing");
    exchange(
        &mut env,
        head,
        LIST,
        ("200", "application/json", &[&catalog()]),
    );
    env
}

fn local(env: &mut TestEnv, head: RequestHead, body: &[u8]) -> (u32, Value) {
    let what = format!("{} {}", head.method, head.path);
    let out = exchange(env, head, body, ("200", "application/json", &[UPSTREAM]));
    let Outcome::Local { status, body, .. } = &out else {
        panic!("{what} was not answered by the filter: {out:?}")
    };
    (*status, serde_json::from_slice(body).unwrap())
}

fn tool_search(env: &mut TestEnv, head: RequestHead, query: &str) -> (Vec<String>, Value) {
    let body = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"tool_search","arguments":{"query": query}}});
    let (_, reply) = local(env, head, body.to_string().as_bytes());
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    let found: Vec<Value> = serde_json::from_str(text).unwrap();
    let names = found
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    (
        names,
        reply["result"]["_meta"]["mcp-tool-search/search"].clone(),
    )
}

/// The groups of a `/groups` answer, in its order.
fn group_names(v: &Value) -> Vec<&str> {
    v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["group"].as_str().unwrap())
        .collect()
}

#[test]
fn stage_one_picks_the_group_and_the_metadata_says_so_over_mcp_and_http() {
    let mut env = learned(HIERARCHICAL);
    // "list" is in every group; "channels" and "message" make it slack's.
    let query = "list the channels to post a message";
    let (names, meta) = tool_search(&mut env, post("/mcp"), query);
    assert_eq!(
        names,
        ["slack_post_message", "slack_list_channels"],
        "{meta}"
    );
    assert_eq!(meta["strategy_used"], "hierarchical", "{meta}");
    assert_eq!(meta["groups_used"], json!(["slack"]));
    assert_eq!(meta["stage1_group_count"], 3);
    assert_eq!(meta["stage2_candidate_count"], 2);
    assert_eq!(meta["final_count"], 2);
    assert!(meta.get("routing_fallback").is_none(), "{meta}");

    let body = json!({"query": query, "limit": 5}).to_string();
    let (status, v) = local(&mut env, post("/mcp/search"), body.as_bytes());
    assert_eq!(status, 200);
    // The same but for what links an agent's search to its calls (HTTP has no session).
    let mut linked = meta.as_object().unwrap().clone();
    assert!(linked.remove("search_id").is_some() && linked.remove("results").is_some());
    assert_eq!(
        v["metadata"],
        Value::Object(linked),
        "one metadata for both interfaces"
    );

    // A flat search of the same catalog lists every group's tools, and no routing fields.
    let mut flat = learned(r#""group_separator":"_""#);
    let (names, meta) = tool_search(&mut flat, post("/mcp"), query);
    assert_eq!(names.len(), 4, "the other groups' lists too: {names:?}");
    assert!(meta.get("strategy_used").is_none(), "{meta}");
}

#[test]
fn no_group_matching_is_a_flat_search_with_the_reason() {
    let config = r#""group_separator":"_","search":{"strategy":"hierarchical",
        "routing":{"descriptions":{"slack":"team chat about payments"}}}"#;
    let mut env = learned(config);
    let (names, meta) = tool_search(&mut env, post("/mcp"), "weather tomorrow");
    assert!(names.is_empty());
    assert_eq!(meta["strategy_used"], "flat", "{meta}");
    assert_eq!(
        meta["routing_fallback"]["reason"],
        "no group matches the query"
    );
    assert_eq!(meta["stage2_candidate_count"], 6);
    // Stage 1 finds slack by its description, stage 2 none of its tools.
    let (names, meta) = tool_search(&mut env, post("/mcp"), "payments");
    assert!(names.is_empty(), "{meta}");
    assert_eq!(meta["groups_used"], json!([]), "{meta}");
    assert_eq!(
        meta["routing_fallback"]["reason"],
        "no tool of the chosen groups matches the query"
    );
}

#[test]
fn the_groups_view_shows_stage_one_for_the_caller_only() {
    let mut env = learned(&format!("{HIERARCHICAL},{POLICY}"));
    let path = "/mcp/search/groups?query=refund+a+charge%20or+post+a+message";
    let (status, v) = local(&mut env, as_role(get(path), "support,billing"), b"");
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["query"], "refund a charge or post a message");
    assert_eq!(v["strategy"], "hierarchical");
    assert_eq!(v["group_count"], 3);
    let groups = group_names(&v);
    assert_eq!(groups[..2], ["stripe", "slack"], "{v}");
    assert_eq!(v["groups"][0]["chosen"], true);
    assert_eq!(v["groups"][0]["tools"], 2);
    assert_eq!(v["groups"][1]["chosen"], false, "routing.groups is 1");

    // The support role sees neither stripe's group nor its words.
    let (_, v) = local(&mut env, as_role(get(path), "support"), b"");
    assert_eq!(v["group_count"], 2, "{v}");
    let groups = group_names(&v);
    assert_eq!(groups, ["slack"], "{v}");
    let (names, meta) = tool_search(
        &mut env,
        as_role(post("/mcp"), "support"),
        "refund a charge",
    );
    assert!(names.is_empty(), "{names:?}");
    assert_eq!(meta["stage1_group_count"], 0, "{meta}");

    let (status, v) = local(&mut env, get("/mcp/search/groups"), b"");
    assert_eq!(status, 400, "{v}");
    assert!(v["error"].as_str().unwrap().contains("`query`"), "{v}");
    let (status, _) = local(&mut env, post("/mcp/search/groups?query=x"), b"{}");
    assert_eq!(status, 405);
}

/// README "Plain HTTP search and health": the groups view reads the catalog this Envoy knows,
/// and answers 404 until one is known (it never fetches; a search does); then 200.
#[test]
fn the_groups_view_answers_404_until_a_catalog_is_known() {
    let mut env = TestEnv::new(&format!("{{{HIERARCHICAL}}}"));
    // A route whose upstream the filter could fetch from.
    env.route = Some(("upstream".into(), "svc.local:8080".into()));
    let path = "/mcp/search/groups?query=refund";
    let (status, v) = local(&mut env, get(path), b"");
    assert_eq!(status, 404, "{v}");
    assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{v}");
    assert!(env.host.take_calls().is_empty(), "the groups view fetched");
    let mut env = learned(HIERARCHICAL);
    let (status, v) = local(&mut env, get(path), b"");
    assert_eq!(status, 200, "{v}");
    assert_eq!(group_names(&v)[0], "stripe", "{v}");
}
