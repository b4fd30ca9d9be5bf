//! Lists at their edges: the search tool's count on the first list after the upstream changed
//! its tools, entries that are not tools and names given twice, and `cacheScope` under a
//! policy (spec 2026-07-28 "Caching").
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::{Caller, MemoryHost, RequestHead};
use serde_json::{json, Value};
use support::*;

const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("does {name}"), "inputSchema": {"type": "object"}})
}

fn list_of(tools: Vec<Value>, extra: Value) -> Vec<u8> {
    let mut result = json!({"tools": tools});
    if let (Value::Object(r), Value::Object(e)) = (&mut result, extra) {
        r.extend(e);
    }
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":result})).unwrap()
}

fn names(n: usize, prefix: &str) -> Vec<Value> {
    (0..n).map(|i| tool(&format!("{prefix}_{i}"))).collect()
}

/// The rewritten result of a list passing through.
fn listed(env: &mut TestEnv, head: RequestHead, body: &[u8]) -> Value {
    let out = exchange(env, head, LIST, ("200", "application/json", &[body]));
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    v["result"].clone()
}

/// The names a list result shows, in order.
fn names_in(result: &Value) -> Vec<&str> {
    result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

fn search_tool_description(result: &Value) -> String {
    let tools = result["tools"].as_array().unwrap();
    let search = tools.iter().find(|t| t["name"] == "tool_search").unwrap();
    search["description"].as_str().unwrap().to_string()
}

#[test]
fn the_count_describes_the_list_being_answered() {
    let mut env = TestEnv::new("{}");
    for (before, after) in [(50, 5), (3000, 3), (5, 3)] {
        let mut env_case = TestEnv::new("{}");
        listed(
            &mut env_case,
            post("/mcp"),
            &list_of(names(before, "old"), json!({})),
        );
        let result = listed(
            &mut env_case,
            post("/mcp"),
            &list_of(names(after, "new"), json!({})),
        );
        let d = search_tool_description(&result);
        assert!(
            d.contains(&format!("do. {after} more tools")),
            "{before} then {after}: {d}"
        );
    }
    // A paged list's first page still announces the tools later pages bring.
    listed(&mut env, post("/mcp"), &list_of(names(10, "t"), json!({})));
    let first_page = listed(
        &mut env,
        post("/mcp"),
        &list_of(names(2, "t"), json!({"nextCursor": "2"})),
    );
    let d = search_tool_description(&first_page);
    assert!(d.contains("do. 10 more tools"), "{d}");
}

#[test]
fn entries_that_are_not_tools_stay_listed_and_the_first_of_a_name_wins() {
    let mut env = TestEnv::new(r#"{"eager_patterns":["keep_*"]}"#);
    let first =
        json!({"name": "keep_a", "description": "the first", "inputSchema": {"type": "object"}});
    let second =
        json!({"name": "keep_a", "description": "the second", "inputSchema": {"type": "object"}});
    let hidden_first =
        json!({"name": "hide_b", "description": "first hidden", "inputSchema": {"type": "object"}});
    let hidden_second = json!({"name": "hide_b", "description": "second hidden", "inputSchema": {"type": "object"}});
    let nameless = json!({"description": "no name"});
    let numbered = json!({"name": 7});
    let result = listed(
        &mut env,
        post("/mcp"),
        &list_of(
            vec![
                first.clone(),
                nameless.clone(),
                second,
                hidden_first,
                numbered.clone(),
                hidden_second,
            ],
            json!({}),
        ),
    );
    let tools = result["tools"].as_array().unwrap();
    // The search tool, then what stays in the upstream's order: the first keep_a, and the two
    // entries that cannot be classified.
    assert_eq!(tools[1..], [first, nameless, numbered]);
    assert!(
        search_tool_description(&result).contains("do. 1 more tools"),
        "{result}"
    );
    // Hidden: the progressive hide_b and both later definitions of a name (README "What the
    // agent sees").
    assert_eq!(env.host.counter("tools_hidden"), 3);
    // Search returns the first definition of each name, and never an entry without a name.
    let search = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"hidden"}}}"#;
    let out = exchange(&mut env, post("/mcp"), search, ("200", "", &[]));
    let (_, found) = local_result(&out);
    assert_eq!(found.as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found[0]["description"], "first hidden");
    let describe = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"keep_a"}}}"#;
    let out = exchange(&mut env, post("/mcp"), describe, ("200", "", &[]));
    let (_, found) = local_result(&out);
    assert_eq!(found[0]["description"], "the first");
}

const POLICY: &str = r#"{"authorization":{"identity":{"source":"header","header":"x-roles"},
    "rules":[{"claim":"roles","values":["ops"],"tools":["*"]}],"default":"deny"}}"#;

fn ops() -> RequestHead {
    RequestHead {
        caller: Caller::from_header("roles", "ops"),
        ..post("/mcp")
    }
}

#[test]
fn under_a_policy_lists_are_private_and_keep_or_get_a_ttl() {
    let mut env = TestEnv::new(POLICY);
    // 2025-era result: cacheScope only.
    let r = listed(&mut env, ops(), &list_of(names(3, "t"), json!({})));
    assert_eq!(r["cacheScope"], "private", "{r}");
    assert!(r.get("ttlMs").is_none(), "{r}");
    // 2026-07-28 result shared by the upstream: private, its ttlMs kept.
    let r = listed(
        &mut env,
        ops(),
        &list_of(
            names(3, "t"),
            json!({"resultType": "complete", "cacheScope": "public", "ttlMs": 60000}),
        ),
    );
    assert_eq!(
        (r["cacheScope"].clone(), r["ttlMs"].clone()),
        (json!("private"), json!(60000)),
        "{r}"
    );
    // Without a ttlMs: 0.
    let r = listed(
        &mut env,
        ops(),
        &list_of(names(3, "t"), json!({"resultType": "complete"})),
    );
    assert_eq!(
        (r["cacheScope"].clone(), r["ttlMs"].clone()),
        (json!("private"), json!(0)),
        "{r}"
    );
}

#[test]
fn without_a_policy_the_upstreams_cache_fields_pass_unchanged() {
    let mut env = TestEnv::new("{}");
    let r = listed(
        &mut env,
        post("/mcp"),
        &list_of(
            names(3, "t"),
            json!({"resultType": "complete", "cacheScope": "public", "ttlMs": 60000}),
        ),
    );
    assert_eq!(
        (r["cacheScope"].clone(), r["ttlMs"].clone()),
        (json!("public"), json!(60000)),
        "{r}"
    );
    let r = listed(
        &mut env,
        post("/mcp"),
        &list_of(names(3, "t"), json!({"resultType": "complete"})),
    );
    assert!(
        r.get("cacheScope").is_none() && r.get("ttlMs").is_none(),
        "{r}"
    );
}

/// `tools/list` is a function of the catalog, the caller's authorization and the page only
/// (2026-07-28 `server/tools`): not of the session, nor of searches, calls or other callers'
/// lists in between, on one worker or another.
#[test]
fn a_list_answer_depends_on_catalog_caller_and_page_only() {
    let host = std::rc::Rc::new(MemoryHost::default());
    host.clock_ms.set(1_767_225_600_000);
    let config = POLICY.replace(
        r#""rules":["#,
        r#""rules":[{"claim":"roles","values":["guest"],"tools":["t_1"]},"#,
    );
    let mut one = TestEnv::sharing(&config, std::rc::Rc::clone(&host));
    let mut two = TestEnv::sharing(&config, host);
    let body = list_of(names(40, "t"), json!({}));
    let in_session = |session: &str| RequestHead {
        session_id: Some(session.to_string()),
        ..ops()
    };
    let answer = |env: &mut TestEnv, head: RequestHead| {
        exchange(env, head, LIST, ("200", "application/json", &[&body]))
            .body()
            .to_vec()
    };
    let first = answer(&mut one, in_session("s-1"));
    let search = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"does t_3"}}}"#;
    exchange(&mut one, in_session("s-1"), search, ("200", "", &[]));
    let guest = RequestHead {
        caller: Caller::from_header("roles", "guest"),
        ..post("/mcp")
    };
    let for_guest = answer(&mut one, guest.clone());
    assert_ne!(
        for_guest, first,
        "another caller's authorization, another list"
    );
    let call =
        br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t_3","arguments":{}}}"#;
    exchange(
        &mut one,
        in_session("s-1"),
        call,
        ("200", "application/json", &[b"{}"]),
    );
    assert_eq!(answer(&mut one, in_session("s-2")), first);
    assert_eq!(answer(&mut two, in_session("s-1")), first);
    assert_eq!(answer(&mut two, ops()), first);
    assert_eq!(answer(&mut two, guest), for_guest);
}

/// An entry the filter cannot read (no string name; a lone surrogate, which no JSON reader
/// turns into a string) names no tool a policy could allow: a caller the policy restricts never
/// sees it, a caller it allows everything sees the list as sent.
#[test]
fn unreadable_entries_are_withheld_from_a_restricted_caller() {
    let config = r#"{"eager_patterns":["*"],"authorization":{"identity":{"source":"header","header":"x-roles"},
        "rules":[{"claim":"roles","values":["guest"],"tools":["t_1"]},
                 {"claim":"roles","values":["ops"],"tools":["*"]}],"default":"deny"}}"#;
    let body = concat!(
        r#"{"jsonrpc":"2.0","id":1,"result":{"tools":["#,
        r#"{"name":"t_1","inputSchema":{"type":"object"}},"#,
        r#"{"description":"no name"},"#,
        r#"{"name":"t_3","description":"half a pair \ud800","inputSchema":{"type":"object"}},"#,
        r#"{"name":"t_2","inputSchema":{"type":"object"}}]}}"#
    );
    let as_role = |role: &str| RequestHead {
        caller: Caller::from_header("roles", role),
        ..post("/mcp")
    };
    let mut env = TestEnv::new(config);
    let out = exchange(
        &mut env,
        as_role("guest"),
        LIST,
        ("200", "application/json", &[body.as_bytes()]),
    );
    let text = out.text();
    assert!(text.contains(r#""name":"t_1""#), "{text}");
    for withheld in ["no name", "t_3", "t_2"] {
        assert!(!text.contains(withheld), "{withheld}: {text}");
    }
    let out = exchange(
        &mut env,
        as_role("ops"),
        LIST,
        ("200", "application/json", &[body.as_bytes()]),
    );
    let text = out.text();
    for listed in ["t_1", "no name", r#"half a pair \ud800"#, "t_2"] {
        assert!(text.contains(listed), "{listed}: {text}");
    }
}

/// `search.tool_name` renames the injected tool in what the agent sees and in what the filter
/// answers; the default name is then an upstream tool's like any other.
#[test]
fn a_renamed_search_tool_is_listed_and_answered_and_the_default_name_goes_upstream() {
    let mut env = TestEnv::new(r#"{"search":{"tool_name":"find_tools"}}"#);
    let upstream_search = json!({"name": "tool_search", "description": "the server's own search",
        "inputSchema": {"type": "object"}});
    let result = listed(
        &mut env,
        post("/mcp"),
        &list_of(
            vec![upstream_search, tool("stripe_refund_charge")],
            json!({}),
        ),
    );
    assert_eq!(names_in(&result), ["find_tools"], "{result}");
    let call = |name: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"{name}","arguments":{{"query":"refund stripe charge"}}}}}}"#
        )
    };
    let out = exchange(
        &mut env,
        post("/mcp"),
        call("find_tools").as_bytes(),
        ("200", "", &[]),
    );
    let (_, found) = local_result(&out);
    assert_eq!(found[0]["name"], "stripe_refund_charge", "{found}");
    assert_eq!(sent_upstream(), None);
    let upstream_answer = br#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#;
    let out = exchange(
        &mut env,
        post("/mcp"),
        call("tool_search").as_bytes(),
        ("200", "application/json", &[upstream_answer]),
    );
    assert_eq!(
        sent_upstream().as_deref(),
        Some(call("tool_search").as_bytes())
    );
    assert_eq!(out.body(), upstream_answer);
}

/// `disclosure_defaults` behind Envoy's `mcp_router`: one server's tools stay listed, the
/// others' are found by search, without naming any tool.
#[test]
fn a_servers_tools_can_all_be_listed_by_one_default() {
    let mut env = TestEnv::new(
        r#"{"group_separator":"__","disclosure_defaults":[{"servers":["slack"],"disclosure_mode":"EAGER"}]}"#,
    );
    let result = listed(
        &mut env,
        post("/mcp"),
        &list_of(
            vec![
                tool("slack__post_message"),
                tool("stripe__refund_charge"),
                tool("slack__list_channels"),
            ],
            json!({}),
        ),
    );
    assert_eq!(
        names_in(&result),
        [
            "tool_search",
            "list_tool_groups",
            "slack__list_channels",
            "slack__post_message"
        ],
        "{result}"
    );
}
