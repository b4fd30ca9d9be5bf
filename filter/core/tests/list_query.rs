//! `tools/list` with a query (draft proposal SEP-1821): the permitted tools that match, ranked,
//! as a list result paged by `nextCursor`; the caller's policy and protocol decide what it
//! says; an off switch leaves such lists to the upstream.
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

const TOOLS: &[(&str, &str)] = &[
    ("github_get_issue", "Get an issue by number"),
    ("github_create_issue", "Create an issue in a repository"),
    ("github_close_issue", "Close an issue"),
    ("github_list_issues", "List the issues of a repository"),
    ("slack_post_message", "Post a message to a channel"),
    ("stripe_refund_charge", "Refund a charge to a customer"),
    ("stripe_get_charge", "Get a charge"),
];

fn catalog() -> Vec<u8> {
    let defs: Vec<Value> = TOOLS
        .iter()
        .map(|(n, d)| json!({"name": n, "description": d, "inputSchema": {"type": "object"}}))
        .collect();
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":{"tools": defs}})).unwrap()
}

const POLICY: &str = r#""authorization":{"identity":{"source":"header","header":"x-user-roles"},
    "rules":[{"claim":"roles","values":["support"],"tools":["github_*","slack_*"]}],
    "default":"deny"}"#;

/// A worker that learned the catalog from an unrestricted list; `github_get_*` is EAGER.
fn env_with(extra: &str) -> TestEnv {
    let sep = if extra.is_empty() { "" } else { "," };
    let mut env = TestEnv::new(&format!(
        r#"{{"eager_patterns":["github_get_*"],"search":{{"max_allowable_results":2}}{sep}{extra}}}"#
    ));
    let admin = RequestHead {
        caller: Caller::from_header("roles", "support"),
        ..post("/mcp")
    };
    let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    exchange(
        &mut env,
        admin,
        list,
        ("200", "application/json", &[&catalog()]),
    );
    env
}

fn head(role: Option<&str>, modern: bool) -> RequestHead {
    let mut head = post("/mcp");
    if let Some(role) = role {
        head.caller = Caller::from_header("roles", role);
    }
    if modern {
        head.mcp.protocol_version = vec!["2026-07-28".to_string()];
    }
    head
}

/// The reply to a `tools/list` with these params, answered by the filter.
fn list_with(env: &mut TestEnv, head: RequestHead, params: Value) -> Value {
    let body =
        serde_json::to_vec(&json!({"jsonrpc":"2.0","id":9,"method":"tools/list","params":params}))
            .unwrap();
    let out = exchange(env, head, &body, ("200", "application/json", &[]));
    let Outcome::Local {
        status: 200, body, ..
    } = out
    else {
        panic!("not answered by the filter: {out:?}")
    };
    serde_json::from_slice(&body).unwrap()
}

fn names(result: &Value) -> Vec<String> {
    result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_query_lists_the_matching_tools_ranked_and_paged() {
    let mut env = env_with("");
    let mut seen = Vec::new();
    let mut params = json!({"query": "issue"});
    let mut pages = 0;
    loop {
        let reply = list_with(&mut env, head(None, false), params.clone());
        let result = &reply["result"];
        assert_eq!(reply["id"], 9);
        let page = names(result);
        assert!(page.len() <= 2, "{result}");
        // Definitions exactly as the upstream declared them; eager and progressive alike.
        for t in result["tools"].as_array().unwrap() {
            assert_eq!(t["inputSchema"], json!({"type": "object"}));
        }
        seen.extend(page);
        // 2025-era clients get no caching hints without a policy.
        assert!(result.get("cacheScope").is_none(), "{result}");
        assert!(result.get("ttlMs").is_none(), "{result}");
        pages += 1;
        match result.get("nextCursor") {
            Some(cursor) => params = json!({"query": "issue", "cursor": cursor}),
            None => break,
        }
        assert!(pages < 10);
    }
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        [
            "github_close_issue",
            "github_create_issue",
            "github_get_issue",
            "github_list_issues"
        ]
    );
    assert_eq!(pages, 2, "pages of 2: {seen:?}");
    // Same order as the search tool ranks: the query's best first.
    let search = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"issue","limit":2}}}"#;
    let (_, found) = local_result(&exchange(
        &mut env,
        post("/mcp"),
        search,
        ("200", "application/json", &[]),
    ));
    let first: Vec<String> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(first, seen[..2]);
    // The filter's own tools are not in a query's answer.
    let reply = list_with(
        &mut env,
        head(None, false),
        json!({"query": "search tools"}),
    );
    assert!(!names(&reply["result"]).contains(&"tool_search".to_string()));
}

#[test]
fn under_a_policy_a_query_lists_only_permitted_tools_privately() {
    let mut env = env_with(POLICY);
    // A forbidden tool named exactly is not listed.
    let reply = list_with(
        &mut env,
        head(Some("support"), true),
        json!({"query": "stripe_refund_charge refund a charge"}),
    );
    let result = &reply["result"];
    assert!(
        names(result).iter().all(|n| !n.starts_with("stripe_")),
        "{result}"
    );
    assert_eq!(result["cacheScope"], "private");
    assert_eq!(result["ttlMs"], 0);
    assert_eq!(result["resultType"], "complete");
    let reply = list_with(
        &mut env,
        head(Some("nobody"), false),
        json!({"query": "issue"}),
    );
    assert_eq!(names(&reply["result"]), Vec::<String>::new());
    assert_eq!(reply["result"]["cacheScope"], "private");
    // Without a policy, a 2026-07-28 answer is public and stale at once.
    let mut open = env_with("");
    let reply = list_with(&mut open, head(None, true), json!({"query": "refund"}));
    assert_eq!(names(&reply["result"]), ["stripe_refund_charge"]);
    assert_eq!(reply["result"]["cacheScope"], "public");
    assert_eq!(reply["result"]["ttlMs"], 0);
}

#[test]
fn bad_queries_and_cursors_are_invalid_params() {
    let mut env = env_with("");
    for (params, says) in [
        (json!({"query": 5}), "params.query must be a string"),
        (json!({"query": "  "}), "`params.query` is empty"),
        (json!({"query": "x".repeat(501)}), "the maximum is 500"),
        (json!({"query": "issue", "cursor": "2"}), "Invalid cursor"),
        (
            json!({"query": "issue", "cursor": 2}),
            "params.cursor must be a string",
        ),
    ] {
        let reply = list_with(&mut env, head(None, false), params.clone());
        assert_eq!(reply["error"]["code"], -32602, "{params}: {reply}");
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{params}: {message}");
        assert_eq!(reply["id"], 9);
    }
}

#[test]
fn the_off_switch_and_the_kill_switch_leave_query_lists_to_the_upstream() {
    for config in [r#""search":{"list_query":false}"#, r#""mode":"list""#] {
        let mut env = TestEnv::new(&format!("{{{config}}}"));
        let body = br#"{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"query":"issue"}}"#;
        let out = exchange(
            &mut env,
            post("/mcp"),
            body,
            ("200", "application/json", &[&catalog()]),
        );
        assert!(matches!(out, Outcome::Upstream { .. }), "{config}: {out:?}");
        assert_eq!(sent_upstream().unwrap(), body.to_vec(), "{config}");
    }
}
