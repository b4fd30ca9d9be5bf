//! Search insights: each search answer names itself and its results' ranks; a tool call is
//! counted, per namespace, by the rank at which a recent search of the same session (or, with no
//! session, the same identified caller) returned the tool, as made after `describe_tool`, or as
//! made without a search; searches that match nothing are counted; searches and list rewrites
//! are timed and sized in histograms. Across workers, and never across sessions.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::stats::{
    CALLS_AFTER_DESCRIBE, CALLS_WITHOUT_SEARCH, LIST_BYTES_SAVED, LIST_REWRITE_TIME_US,
    NAMESPACE_STATS, SEARCH_CALLS_AFTER_RANK_1, SEARCH_CALLS_AFTER_RANK_2_5,
    SEARCH_CALLS_AFTER_RANK_OVER_5, SEARCH_RESULTS, SEARCH_TIME_US, SEARCH_ZERO_RESULTS,
};
use mcp_tool_search_core::{Caller, MemoryHost, RequestHead};
use serde_json::{json, Value};
use std::rc::Rc;
use support::*;

const TOOLS: &[(&str, &str)] = &[
    ("github_create_issue", "Create an issue in a repository"),
    ("github_list_issues", "List the issues of a repository"),
    ("github_close_issue", "Close an issue"),
    ("github_comment_issue", "Comment on an issue"),
    ("github_label_issue", "Label an issue"),
    ("github_assign_issue", "Assign an issue to a user"),
    ("github_lock_issue", "Lock an issue's conversation"),
    ("slack_post_message", "Post a message to a channel"),
];

fn catalog() -> Vec<u8> {
    list_of("tools", TOOLS)
}

const CONFIG: &str = r#"{"search":{"max_allowable_results":10,"result_format":"summary"}}"#;

/// A worker that learned the catalog from a client's list.
fn listed(config: &str, host: Option<Rc<MemoryHost>>) -> TestEnv {
    let mut env = match host {
        Some(host) => TestEnv::sharing(config, host),
        None => TestEnv::new(config),
    };
    let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    exchange(
        &mut env,
        post("/mcp"),
        list,
        ("200", "application/json", &[&catalog()]),
    );
    env
}

fn in_session(session: &str) -> RequestHead {
    RequestHead {
        session_id: Some(session.to_string()),
        ..post("/mcp")
    }
}

fn tool_call(name: &str, arguments: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
        "params":{"name": name, "arguments": arguments}}))
    .unwrap()
}

/// The `_meta` of a search's answer.
fn search(env: &mut TestEnv, head: RequestHead, query: &str) -> Value {
    let out = exchange(
        env,
        head,
        &tool_call("tool_search", json!({"query": query})),
        ("200", "application/json", &[]),
    );
    let (reply, _) = local_result(&out);
    reply["result"]["_meta"]["mcp-tool-search/search"].clone()
}

/// A call that goes upstream (the upstream answers it).
fn call(env: &mut TestEnv, head: RequestHead, name: &str) {
    let answer = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
    let out = exchange(
        env,
        head,
        &tool_call(name, json!({})),
        ("200", "application/json", &[answer]),
    );
    assert!(matches!(out, Outcome::Upstream { .. }), "{out:?}");
    assert!(sent_upstream().is_some());
}

/// Every per-namespace counter of the route's namespace that is not 0.
fn counted(env: &TestEnv) -> Vec<(&'static str, u64)> {
    NAMESPACE_STATS
        .iter()
        .map(|&stat| (stat, env.host.namespace_counter(&env.namespace, stat)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

#[test]
fn a_search_answer_names_itself_and_its_results_ranks() {
    let mut env = listed(CONFIG, None);
    let meta = search(&mut env, in_session("s1"), "issue");
    let id = meta["search_id"].as_str().unwrap().to_string();
    let results = meta["results"].as_array().unwrap();
    assert_eq!(results.len(), meta["returned"].as_u64().unwrap() as usize);
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r["rank"], json!(i + 1));
        assert!(r["name"].as_str().unwrap().starts_with("github_"), "{r}");
    }
    let again = search(&mut env, in_session("s1"), "issue");
    assert_ne!(
        again["search_id"].as_str().unwrap(),
        id,
        "every search is its own"
    );
}

#[test]
fn a_call_of_the_second_result_counts_at_rank_2_to_5_and_nothing_else() {
    let mut env = listed(CONFIG, None);
    let meta = search(&mut env, in_session("s1"), "issue");
    let second = meta["results"][1]["name"].as_str().unwrap().to_string();
    call(&mut env, in_session("s1"), &second);
    assert_eq!(counted(&env), [(SEARCH_CALLS_AFTER_RANK_2_5, 1)]);
    let first = meta["results"][0]["name"].as_str().unwrap().to_string();
    call(&mut env, in_session("s1"), &first);
    let seventh = meta["results"][6]["name"].as_str().unwrap().to_string();
    call(&mut env, in_session("s1"), &seventh);
    assert_eq!(
        counted(&env),
        [
            (SEARCH_CALLS_AFTER_RANK_1, 1),
            (SEARCH_CALLS_AFTER_RANK_2_5, 1),
            (SEARCH_CALLS_AFTER_RANK_OVER_5, 1)
        ]
    );
}

#[test]
fn a_call_no_search_of_its_session_returned_counts_as_without_search() {
    let mut env = listed(CONFIG, None);
    search(&mut env, in_session("alice"), "issue");
    // Bob calls what Alice's search returned; a caller with no session and no identity cannot
    // be linked at all; Alice calls a tool her search did not return.
    call(&mut env, in_session("bob"), "github_create_issue");
    call(&mut env, post("/mcp"), "github_create_issue");
    call(&mut env, in_session("alice"), "slack_post_message");
    assert_eq!(counted(&env), [(CALLS_WITHOUT_SEARCH, 3)]);
}

#[test]
fn a_search_that_matches_nothing_is_counted() {
    let mut env = listed(CONFIG, None);
    let meta = search(&mut env, in_session("s1"), "kubernetes pod autoscaler");
    assert_eq!(meta["matches"], 0);
    assert_eq!(counted(&env), [(SEARCH_ZERO_RESULTS, 1)]);
    assert_eq!(env.host.histogram(SEARCH_RESULTS), [0]);
}

#[test]
fn a_call_after_describe_tool_is_counted_as_such() {
    let mut env = listed(CONFIG, None);
    let describe = tool_call("describe_tool", json!({"names": ["slack_post_message"]}));
    exchange(
        &mut env,
        in_session("s1"),
        &describe,
        ("200", "application/json", &[]),
    );
    call(&mut env, in_session("s1"), "slack_post_message");
    assert_eq!(counted(&env), [(CALLS_AFTER_DESCRIBE, 1)]);
}

#[test]
fn call_tool_counts_the_tool_it_calls() {
    let mut env = listed(
        r#"{"hold_request_headers":true,"search":{"max_allowable_results":10,"result_format":"summary"}}"#,
        None,
    );
    let meta = search(&mut env, in_session("s1"), "issue");
    let first = meta["results"][0]["name"].as_str().unwrap().to_string();
    let body = tool_call("call_tool", json!({"name": first, "arguments": {}}));
    let answer = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
    exchange(
        &mut env,
        in_session("s1"),
        &body,
        ("200", "application/json", &[answer]),
    );
    let sent: Value = serde_json::from_slice(&sent_upstream().unwrap()).unwrap();
    assert_eq!(sent["params"]["name"], json!(first));
    assert_eq!(counted(&env), [(SEARCH_CALLS_AFTER_RANK_1, 1)]);
}

#[test]
fn a_search_on_one_worker_links_the_call_another_worker_forwards() {
    let host = Rc::new({
        let h = MemoryHost::default();
        h.clock_ms.set(1_767_225_600_000);
        h
    });
    let mut a = listed(CONFIG, Some(host.clone()));
    let mut b = TestEnv::sharing(CONFIG, host);
    let meta = search(&mut a, in_session("s1"), "issue");
    let third = meta["results"][2]["name"].as_str().unwrap().to_string();
    // The searching worker writes its links on its tick (every second): an agent reads the
    // search's answer before it calls.
    a.tick();
    call(&mut b, in_session("s1"), &third);
    assert_eq!(counted(&b), [(SEARCH_CALLS_AFTER_RANK_2_5, 1)]);
}

#[test]
fn with_no_session_an_identified_caller_is_linked_and_another_is_not() {
    let config = r#"{"search":{"max_allowable_results":10,"result_format":"summary"},
        "authorization":{"identity":{"source":"header","header":"x-user"},
        "rules":[{"claim":"roles","values":["alice","bob"],"tools":["*"]}],"default":"deny"}}"#;
    let mut env = listed(config, None);
    let as_user = |user: &str| RequestHead {
        caller: Caller::from_header("roles", user),
        ..post("/mcp")
    };
    let meta = search(&mut env, as_user("alice"), "issue");
    let first = meta["results"][0]["name"].as_str().unwrap().to_string();
    call(&mut env, as_user("bob"), &first);
    call(&mut env, as_user("alice"), &first);
    assert_eq!(
        counted(&env),
        [(SEARCH_CALLS_AFTER_RANK_1, 1), (CALLS_WITHOUT_SEARCH, 1)]
    );
}

#[test]
fn a_refused_call_is_not_counted_as_a_call() {
    let config = r#"{"search":{"max_allowable_results":10,"result_format":"summary"},
        "authorization":{"identity":{"source":"header","header":"x-user"},
        "rules":[{"claim":"roles","values":["alice"],"tools":["github_*"]}],"default":"deny"}}"#;
    let mut env = listed(config, None);
    let alice = RequestHead {
        caller: Caller::from_header("roles", "alice"),
        ..in_session("s1")
    };
    let out = exchange(
        &mut env,
        alice,
        &tool_call("slack_post_message", json!({})),
        ("200", "application/json", &[]),
    );
    assert!(matches!(out, Outcome::Local { .. }), "{out:?}");
    assert_eq!(counted(&env), []);
}

#[test]
fn searches_and_list_rewrites_are_timed_and_sized() {
    let mut env = listed(CONFIG, None);
    // Eight short tools make a list longer than the three tools that replace them.
    assert_eq!(env.host.histogram(LIST_BYTES_SAVED), [0]);
    let many: Vec<Value> = (0..100)
        .map(|i| {
            json!({"name": format!("tool_{i}"), "description": "Does one thing well.",
            "inputSchema": {"type": "object"}})
        })
        .collect();
    let list =
        serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":{"tools": many}})).unwrap();
    let sent = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let out = exchange(
        &mut env,
        post("/mcp"),
        sent,
        ("200", "application/json", &[&list]),
    );
    let saved = env.host.histogram(LIST_BYTES_SAVED);
    assert_eq!(saved.len(), 2);
    assert_eq!(saved[1] as usize, list.len() - out.body().len());
    assert_eq!(env.host.histogram(LIST_REWRITE_TIME_US).len(), 2);
    search(&mut env, in_session("s1"), "tool_7");
    assert_eq!(env.host.histogram(SEARCH_TIME_US).len(), 1);
    assert_eq!(env.host.histogram(SEARCH_RESULTS), [10]);
}

#[test]
fn the_off_switch_keeps_nothing() {
    let config = r#"{"search":{"max_allowable_results":10,"result_format":"summary","insights":{"enabled":false}}}"#;
    let mut env = listed(config, None);
    let meta = search(&mut env, in_session("s1"), "issue");
    assert!(
        meta.get("search_id").is_none() && meta.get("results").is_none(),
        "{meta}"
    );
    search(&mut env, in_session("s1"), "kubernetes");
    call(&mut env, in_session("s1"), "github_create_issue");
    assert_eq!(counted(&env), []);
    assert!(env.host.histograms.borrow().is_empty());
    let link = mcp_tool_search_core::keys::LINK;
    assert!(env.host.shared.keys().iter().all(|k| !k.contains(link)));
}

/// `GET /mcp/search/insights` (with `query`, e.g. `?namespace=x`) as `head`'s caller: status and body.
fn insights(env: &mut TestEnv, head: RequestHead, query: &str) -> (u32, Value) {
    let head = RequestHead {
        method: "GET".into(),
        path: format!("/mcp/search/insights{query}"),
        ..head
    };
    let out = exchange(env, head, b"", ("200", "application/json", &[]));
    let Outcome::Local { status, body, .. } = out else {
        panic!("not answered by the filter: {out:?}")
    };
    (status, serde_json::from_slice(&body).unwrap())
}

/// Two workers of one Envoy, the catalog learned.
fn two_workers(config: &str) -> (TestEnv, TestEnv) {
    let host = Rc::new({
        let h = MemoryHost::default();
        h.clock_ms.set(1_767_225_600_000);
        h
    });
    let a = listed(config, Some(host.clone()));
    let b = TestEnv::sharing(config, host);
    (a, b)
}

/// Both workers' ticks, a second apart: each folds its counts into shared data.
fn flush(a: &mut TestEnv, b: &mut TestEnv) {
    for env in [a, b] {
        let now = env.host.clock_ms.get();
        env.host.clock_ms.set(now + 1_000);
        env.tick();
    }
}

#[test]
fn the_insights_endpoint_merges_every_workers_searches_and_calls() {
    let (mut a, mut b) = two_workers(CONFIG);
    let meta = search(&mut a, in_session("s1"), "issue");
    let second = meta["results"][1]["name"].as_str().unwrap().to_string();
    // The searching worker's tick writes its links (and its counts so far) for the others.
    a.tick();
    call(&mut b, in_session("s1"), &second);
    call(&mut b, in_session("s1"), &second);
    search(&mut b, in_session("s2"), "kubernetes pod autoscaler");
    search(&mut a, in_session("s3"), "autoscaler kubernetes pod pod");
    call(&mut a, in_session("s3"), "slack_post_message");
    // Before their next tick, each worker reports what the others wrote and what it counted.
    let (status, own) = insights(&mut a, post("/mcp"), "");
    assert_eq!(status, 200);
    assert_eq!(own["insights"]["upstream"]["searches"], 2, "{own}");
    flush(&mut a, &mut b);
    let (_, merged) = insights(&mut a, post("/mcp"), "");
    let ns = &merged["insights"]["upstream"];
    assert_eq!(ns["searches"], 3, "{merged}");
    assert_eq!(ns["zero_results"], 2);
    assert_eq!(
        ns["calls"],
        json!({"total": 3, "after_search": 2, "without_search": 1, "after_describe": 0,
               "rank_1": 0, "rank_2_5": 2, "rank_over_5": 0})
    );
    // The two wordings of one query are one group, and no query text is kept by default.
    let groups = ns["zero_result_queries"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{merged}");
    assert_eq!(groups[0]["count"], 2);
    assert!(groups[0].get("query").is_none(), "{merged}");
    assert_eq!(
        ns["called_after_search"],
        json!([{"name": second, "calls": 2, "median_rank": 2}])
    );
    assert_eq!(
        ns["called_without_search"],
        json!([{"name": "slack_post_message", "calls": 1, "eager": false}])
    );
    let suggested = &ns["suggested_eager"];
    assert_eq!(suggested["tools"][0]["name"], json!(second), "{suggested}");
    assert_eq!(suggested["tools"][0]["share"], 0.667);
    assert_eq!(suggested["share"], 1.0, "two tools took every call");
    // Seven of the eight tools were returned by the first search: slack's never was.
    assert_eq!(
        ns["never_returned"],
        json!({"count": 1, "tools": ["slack_post_message"]})
    );
    assert_eq!(
        ns["auto_mode"],
        json!({"mode": "search", "search_threshold": 40, "tools": 8, "decides": "list"})
    );
    // The other worker reads the same.
    let (_, from_b) = insights(&mut b, post("/mcp"), "");
    assert_eq!(from_b, merged);
}

#[test]
fn query_text_is_kept_only_when_the_operator_asks() {
    let config = r#"{"search":{"max_allowable_results":10,"result_format":"summary","insights":{"record_queries":true}}}"#;
    let mut env = listed(config, None);
    let long = format!("kubernetes {}", "autoscaler ".repeat(30));
    search(&mut env, in_session("s1"), &long);
    let (_, got) = insights(&mut env, post("/mcp"), "");
    let query = got["insights"]["upstream"]["zero_result_queries"][0]["query"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(query.chars().count(), 120, "cut: {query}");
    assert!(long.starts_with(&query));
}

#[test]
fn a_restricted_caller_sees_only_its_tools_and_nothing_of_a_namespace_it_cannot_use() {
    let config = r#"{"search":{"max_allowable_results":10,"result_format":"summary",
        "http_namespaces":["other"]},
        "authorization":{"identity":{"source":"header","header":"x-user"},
        "rules":[{"claim":"roles","values":["admin"],"tools":["*"]},
                 {"claim":"roles","values":["support"],"tools":["slack_*"]}],"default":"deny"}}"#;
    let mut env = listed(config, None);
    let as_role = |role: &str| RequestHead {
        caller: Caller::from_header("roles", role),
        ..in_session(role)
    };
    let meta = search(&mut env, as_role("admin"), "issue");
    let first = meta["results"][0]["name"].as_str().unwrap().to_string();
    call(&mut env, as_role("admin"), &first);
    search(&mut env, as_role("admin"), "kubernetes");
    call(&mut env, as_role("support"), "slack_post_message");
    let (status, admin) = insights(&mut env, as_role("admin"), "");
    assert_eq!(status, 200);
    assert_eq!(
        admin["insights"]["upstream"]["calls"]["total"], 2,
        "{admin}"
    );
    let (_, support) = insights(&mut env, as_role("support"), "");
    let ns = &support["insights"]["upstream"];
    assert_eq!(ns["restricted"], true, "{support}");
    for withheld in ["searches", "zero_results", "calls", "zero_result_queries"] {
        assert!(ns.get(withheld).is_none(), "{withheld}: {support}");
    }
    assert_eq!(
        ns["called_after_search"],
        json!([]),
        "admin's github call is not shown"
    );
    assert_eq!(
        ns["called_without_search"],
        json!([{"name": "slack_post_message", "calls": 1, "eager": false}])
    );
    assert_eq!(ns["auto_mode"]["tools"], 1);
    // A caller the policy gives nothing: no namespace at all, and 403 for one asked by name.
    let (status, nobody) = insights(&mut env, post("/mcp"), "");
    assert_eq!((status, &nobody), (200, &json!({"insights": {}})));
    let (status, _) = insights(&mut env, post("/mcp"), "?namespace=upstream");
    assert_eq!(status, 403);
    // A namespace outside the route's and `http_namespaces` is refused as search refuses it.
    let (status, _) = insights(&mut env, as_role("admin"), "?namespace=elsewhere");
    assert_eq!(status, 403);
}

#[test]
fn with_insights_off_the_endpoint_says_so() {
    let config = r#"{"search":{"insights":{"enabled":false}}}"#;
    let mut env = listed(config, None);
    let (status, body) = insights(&mut env, post("/mcp"), "");
    assert_eq!(status, 404);
    assert!(
        body["error"].as_str().unwrap().contains("insights"),
        "{body}"
    );
}

/// What the filter set for the access log on the last stream of `env` that set something
/// (`None`: nothing was ever set); the set is emptied.
fn access_record(env: &TestEnv) -> Option<Value> {
    let set = std::mem::take(&mut *env.host.properties_set.borrow_mut());
    let (_, path, value) = set.last()?;
    assert_eq!(path, mcp_tool_search_core::ACCESS_PROPERTY);
    Some(serde_json::from_slice(value).unwrap())
}

#[test]
fn each_request_tells_the_access_log_what_the_filter_did_with_it() {
    let mut env = TestEnv::new(CONFIG);
    let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let big: Vec<Value> = (0..200)
        .map(|i| json!({"name": format!("tool_{i}"), "description": "Does one thing well."}))
        .collect();
    let body =
        serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":{"tools": big}})).unwrap();
    exchange(
        &mut env,
        post("/mcp"),
        list,
        ("200", "application/json", &[&body]),
    );
    let record = access_record(&env).unwrap();
    assert_eq!(record["action"], "list_rewritten", "{record}");
    assert_eq!(record["hidden"], 200);
    assert!(record["bytes_saved"].as_u64().unwrap() > 0, "{record}");

    let meta = search(&mut env, in_session("s1"), "tool_7");
    let record = access_record(&env).unwrap();
    assert_eq!(
        (
            &record["action"],
            &record["ranking"],
            &record["results"],
            &record["search_id"]
        ),
        (
            &json!("search"),
            &json!("bm25"),
            &meta["returned"],
            &meta["search_id"]
        ),
        "{record}"
    );
    assert_eq!(record["namespace"], "upstream");

    call(&mut env, in_session("s1"), "tool_7");
    let record = access_record(&env).unwrap();
    assert_eq!(
        record,
        json!({"action": "call", "namespace": "upstream", "tool": "tool_7",
               "linked": "rank_1", "search_id": meta["search_id"]})
    );

    let refused = tool_call("describe_tool", json!("not an object"));
    exchange(
        &mut env,
        in_session("s1"),
        &refused,
        ("200", "application/json", &[]),
    );
    let bad = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_search","arguments":{}}}"#;
    exchange(
        &mut env,
        in_session("s1"),
        bad,
        ("200", "application/json", &[]),
    );
    assert_eq!(
        access_record(&env).unwrap(),
        json!({"action": "refused", "reason": "search_rejected"})
    );
}

#[test]
fn with_insights_off_nothing_is_set_for_the_access_log() {
    let config = r#"{"search":{"insights":{"enabled":false}}}"#;
    let mut env = listed(config, None);
    search(&mut env, in_session("s1"), "issue");
    call(&mut env, in_session("s1"), "slack_post_message");
    assert_eq!(access_record(&env), None);
}
