//! Authorization on every path, search modes, result formats, groups and paging, natively.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::{Caller, Event, PassReason, RequestHead};
use serde_json::{json, Value};
use support::*;

const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

fn catalog() -> Vec<u8> {
    let tools = [
        ("github_get_issue", "Get an issue by number", true),
        (
            "github_create_issue",
            "Create an issue in a repository",
            false,
        ),
        ("github_close_issue", "Close an issue", false),
        ("slack_post_message", "Post a message to a channel", false),
        (
            "stripe_refund_charge",
            "Refund a charge to a customer",
            false,
        ),
        ("stripe_get_charge", "Get a charge", true),
    ];
    let defs: Vec<Value> = tools
        .iter()
        .map(|(n, d, ro)| json!({"name": n, "description": d, "inputSchema": {"type": "object", "required": ["id"]}, "annotations": {"readOnlyHint": ro}}))
        .collect();
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":{"tools": defs}})).unwrap()
}

const POLICY: &str = r#""authorization":{"identity":{"source":"header","header":"x-user-roles"},
    "rules":[{"claim":"roles","values":["support"],"tools":["github_*","slack_*"]},
             {"claim":"roles","values":["billing"],"tools":["stripe_*"]}],
    "default":"deny"}"#;

fn as_role(role: &str) -> RequestHead {
    RequestHead {
        caller: Caller::from_header("roles", role),
        ..post("/mcp")
    }
}

fn env_with(config: &str) -> TestEnv {
    let mut env = TestEnv::new(config);
    let body = catalog();
    // Learn the catalog as an unrestricted caller would see it pass.
    let admin = RequestHead {
        caller: Caller::from_header("roles", "support,billing"),
        ..post("/mcp")
    };
    exchange(&mut env, admin, LIST, ("200", "application/json", &[&body]));
    env
}

fn listed(env: &mut TestEnv, head: RequestHead) -> Value {
    let body = catalog();
    let out = exchange(env, head, LIST, ("200", "application/json", &[&body]));
    serde_json::from_slice(out.body()).unwrap()
}

fn names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

fn call(env: &mut TestEnv, head: RequestHead, tool: &str, args: Value) -> Outcome {
    let body = json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":tool,"arguments":args}});
    exchange(
        env,
        head,
        &serde_json::to_vec(&body).unwrap(),
        (
            "200",
            "application/json",
            &[br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#],
        ),
    )
}

/// A repeated list is replayed from memory; the memory is per caller's rules, so callers
/// alternating on one worker never see each other's answer, and a changed catalog is read anew.
#[test]
fn replayed_lists_stay_per_caller_and_follow_catalog_changes() {
    let config = format!(r#"{{"eager_patterns":["*_get_*"],{POLICY}}}"#);
    let mut env = env_with(&config);
    for _ in 0..4 {
        for (role, want) in [
            ("support", ["tool_search", "github_get_issue"]),
            ("billing", ["tool_search", "stripe_get_charge"]),
        ] {
            let v = listed(&mut env, as_role(role));
            assert_eq!(names(&v["result"]["tools"]), want, "{role}");
        }
        let v = listed(&mut env, as_role("intern"));
        assert_eq!(v["result"]["tools"], json!([]));
    }
    // The upstream's list changes: a new eager tool appears for support at once.
    let mut changed: Value = serde_json::from_slice(&catalog()).unwrap();
    changed["result"]["tools"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "slack_get_channel", "description": "Get a channel"}));
    let body = serde_json::to_vec(&changed).unwrap();
    for _ in 0..3 {
        let out = exchange(
            &mut env,
            as_role("support"),
            LIST,
            ("200", "application/json", &[&body]),
        );
        let v: Value = serde_json::from_slice(out.body()).unwrap();
        assert_eq!(
            names(&v["result"]["tools"]),
            ["tool_search", "github_get_issue", "slack_get_channel"]
        );
    }
    assert_eq!(env.count(Event::ListRewritten), 1 + 4 * 3 + 3);
}

#[test]
fn each_role_sees_only_its_tools_on_every_path() {
    let config = format!(r#"{{"eager_patterns":["*_get_*"],{POLICY}}}"#);
    let mut env = env_with(&config);
    let support = listed(&mut env, as_role("support"));
    let tools = &support["result"]["tools"];
    assert_eq!(names(tools), ["tool_search", "github_get_issue"]);
    let description = tools[0]["description"].as_str().unwrap();
    assert!(
        description.contains("github_close_issue") && description.contains("slack_post_message")
    );
    assert!(!description.contains("stripe"), "{description}");
    let billing = listed(&mut env, as_role("billing"));
    assert_eq!(
        names(&billing["result"]["tools"]),
        ["tool_search", "stripe_get_charge"]
    );
    let nobody = listed(&mut env, as_role("intern"));
    assert_eq!(nobody["result"]["tools"], json!([]));
    let anonymous = listed(&mut env, post("/mcp"));
    assert_eq!(anonymous["result"]["tools"], json!([]));

    // Search results.
    let out = call(
        &mut env,
        as_role("support"),
        "tool_search",
        json!({"query": "refund a charge"}),
    );
    let (_, found) = local_result(&out);
    assert!(
        names(&found).iter().all(|n| !n.starts_with("stripe")),
        "{found}"
    );
    let out = call(
        &mut env,
        as_role("billing"),
        "tool_search",
        json!({"query": "refund a charge"}),
    );
    assert_eq!(names(&local_result(&out).1)[0], "stripe_refund_charge");

    // A forbidden call never goes upstream.
    let out = call(
        &mut env,
        as_role("support"),
        "stripe_refund_charge",
        json!({"id": "ch_1"}),
    );
    let Outcome::Local {
        status: 200, body, ..
    } = &out
    else {
        panic!("{out:?}")
    };
    let err: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(err["error"]["code"], -32602);
    assert_eq!(
        err["error"]["message"],
        "Unknown tool: stripe_refund_charge"
    );
    assert_eq!(sent_upstream(), None);
    assert_eq!(env.count(Event::CallRefused), 1);
    // An allowed one does.
    let out = call(
        &mut env,
        as_role("support"),
        "github_close_issue",
        json!({"id": 1}),
    );
    assert!(matches!(out, Outcome::Upstream { .. }));
    assert!(sent_upstream().is_some());
}

#[test]
fn a_batch_with_a_forbidden_call_is_refused_whole() {
    let config = format!(r#"{{{POLICY}}}"#);
    let mut env = env_with(&config);
    let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"github_close_issue","arguments":{}}},
                     {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stripe_refund_charge","arguments":{}}}]"#;
    let out = exchange(
        &mut env,
        as_role("support"),
        batch,
        ("200", "application/json", &[]),
    );
    let Outcome::Local { body, .. } = &out else {
        panic!("{out:?}")
    };
    let replies: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(replies.as_array().unwrap().len(), 2);
    assert!(replies
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["error"]["code"] == -32600));
    assert_eq!(sent_upstream(), None);
}

#[test]
fn http_search_endpoint_filters_and_validates() {
    let config = format!(r#"{{{POLICY}}}"#);
    let mut env = env_with(&config);
    let search = |env: &mut TestEnv, role: &str, body: &str| {
        let head = RequestHead {
            path: "/mcp/search".into(),
            ..as_role(role)
        };
        exchange(env, head, body.as_bytes(), ("200", "application/json", &[]))
    };
    let out = search(
        &mut env,
        "billing",
        r#"{"query":"issue charge","limit":10}"#,
    );
    let Outcome::Local {
        status: 200, body, ..
    } = &out
    else {
        panic!("{out:?}")
    };
    let v: Value = serde_json::from_slice(body).unwrap();
    assert!(
        names(&v["tools"]).iter().all(|n| n.starts_with("stripe")),
        "{v}"
    );
    assert_eq!(v["metadata"]["strategy"], "bm25");
    for (body, says) in [
        ("not json", "not JSON"),
        (r#"{"limit":3}"#, "query"),
        (r#"{"query":""}"#, "empty"),
        (r#"{"query":"x","limit":"3"}"#, "limit"),
        (r#"{"query":"x","bogus":1}"#, "unknown field \"bogus\""),
        ("[]", "JSON object"),
    ] {
        let out = search(&mut env, "billing", body);
        let Outcome::Local {
            status,
            body: reply,
            ..
        } = &out
        else {
            panic!("{out:?}")
        };
        assert_eq!(*status, 400, "{body}");
        let e: Value = serde_json::from_slice(reply).unwrap();
        assert!(e["error"].as_str().unwrap().contains(says), "{body}: {e}");
    }
    let get = RequestHead {
        method: "GET".into(),
        path: "/mcp/search".into(),
        ..post("/mcp")
    };
    let Outcome::Local {
        status: 405,
        headers,
        ..
    } = exchange(&mut env, get, b"", ("200", "", &[]))
    else {
        panic!()
    };
    assert!(headers.contains(&("allow".into(), "POST".into())));
    let health = RequestHead {
        method: "GET".into(),
        path: "/mcp/search/health".into(),
        ..post("/mcp")
    };
    let out = exchange(&mut env, health, b"", ("200", "", &[]));
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    // Under the policy health counts what its caller may use: an unidentified one, nothing.
    assert_eq!(
        v,
        json!({"search":{"status":"ok","mode":"lexical"},"catalogs":{"upstream":{"tools":0,"embedded":0,"source":"learned","age_ms":0,"stale":false}}})
    );
}

#[test]
fn list_mode_is_a_kill_switch_and_auto_follows_the_threshold() {
    let body = catalog();
    let mut env = TestEnv::new(r#"{"mode":"list"}"#);
    let out = exchange(
        &mut env,
        post("/mcp"),
        LIST,
        ("200", "application/json", &[&body]),
    );
    assert_eq!(out.body(), body.as_slice(), "untouched");
    let out = call(&mut env, post("/mcp"), "tool_search", json!({"query":"x"}));
    assert!(
        matches!(out, Outcome::Upstream { .. }),
        "tool_search goes upstream in list mode"
    );

    let mut small = TestEnv::new(r#"{"mode":"auto","search_threshold":10}"#);
    let v = listed(&mut small, post("/mcp"));
    assert_eq!(
        names(&v["result"]["tools"]).len(),
        6,
        "6 tools ≤ 10: plain listing"
    );
    let mut large = TestEnv::new(r#"{"mode":"auto","search_threshold":3}"#);
    let v = listed(&mut large, post("/mcp"));
    assert_eq!(names(&v["result"]["tools"]), ["tool_search"]);
    // List mode still filters by authorization.
    let mut env = env_with(&format!(r#"{{"mode":"list",{POLICY}}}"#));
    let v = listed(&mut env, as_role("billing"));
    assert_eq!(
        names(&v["result"]["tools"]),
        ["stripe_get_charge", "stripe_refund_charge"]
    );
}

#[test]
fn summary_format_describe_and_call_tool() {
    let mut env = env_with(r#"{"search":{"result_format":"summary"},"group_separator":"_"}"#);
    let v = listed(&mut env, post("/mcp"));
    assert_eq!(
        names(&v["result"]["tools"]),
        [
            "tool_search",
            "list_tool_groups",
            "describe_tool",
            "call_tool"
        ]
    );
    let out = call(
        &mut env,
        post("/mcp"),
        "tool_search",
        json!({"query":"issue","limit":2}),
    );
    let (_, text) = local_result(&out);
    let lines: Vec<&str> = text.as_str().unwrap().lines().collect();
    assert_eq!(lines[0], "3 tools of 6 match \"issue\" (showing 1 to 2):");
    assert!(lines[1].contains(" · requires: id"));
    let out = call(
        &mut env,
        post("/mcp"),
        "describe_tool",
        json!({"names":["slack_post_message","nope"]}),
    );
    let (reply, defs) = local_result(&out);
    assert_eq!(names(&defs), ["slack_post_message"]);
    assert_eq!(
        reply["result"]["content"][1]["text"],
        "Not available: nope."
    );
    let out = call(&mut env, post("/mcp"), "list_tool_groups", json!({}));
    let (_, groups) = local_result(&out);
    assert_eq!(
        groups,
        json!([{"group":"github","tools":3},{"group":"slack","tools":1},{"group":"stripe","tools":2}])
    );
    // call_tool becomes a plain tools/call upstream, id and _meta kept.
    let body = br#"{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"call_tool","arguments":{"name":"slack_post_message","arguments":{"channel":"C1","text":"hi"}},"_meta":{"progressToken":5}}}"#;
    let out = exchange(
        &mut env,
        post("/mcp"),
        body,
        ("200", "application/json", &[b"{}"]),
    );
    assert!(matches!(
        out,
        Outcome::Upstream {
            rewritten: false,
            ..
        }
    ));
    let sent: Value = serde_json::from_slice(&sent_upstream().unwrap()).unwrap();
    assert_eq!(
        sent,
        json!({"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"slack_post_message","arguments":{"channel":"C1","text":"hi"},"_meta":{"progressToken":5}}})
    );
    assert_eq!(env.count(Event::CallForwarded), 1);
    // Groups restrict the search.
    let out = call(
        &mut env,
        post("/mcp"),
        "tool_search",
        json!({"query":"issue charge","group":"stripe"}),
    );
    let (_, text) = local_result(&out);
    assert!(
        text.as_str()
            .unwrap()
            .starts_with("2 tools of 2 match \"issue charge\""),
        "{text}"
    );
}

#[test]
fn call_tool_respects_authorization() {
    let mut env = env_with(&format!(
        r#"{{"search":{{"result_format":"summary"}},{POLICY}}}"#
    ));
    let out = call(
        &mut env,
        as_role("support"),
        "call_tool",
        json!({"name":"stripe_refund_charge","arguments":{}}),
    );
    let (reply, _) = local_result(&out);
    assert_eq!(reply["result"]["isError"], true);
    assert!(reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("Unknown tool: stripe_refund_charge"));
    assert_eq!(sent_upstream(), None);
    let out = call(
        &mut env,
        as_role("support"),
        "describe_tool",
        json!({"names":["stripe_refund_charge"]}),
    );
    assert_eq!(local_result(&out).0["result"]["isError"], true);
}

#[test]
fn paging_covers_the_match_and_threshold_drops_weak_results() {
    let mut env = env_with("{}");
    let page = |env: &mut TestEnv, offset: u64| {
        let out = call(
            env,
            post("/mcp"),
            "tool_search",
            json!({"query":"issue charge","limit":2,"offset":offset}),
        );
        let (reply, found) = local_result(&out);
        (
            names(&found),
            reply["result"]["_meta"]["mcp-tool-search/search"].clone(),
        )
    };
    let (first, meta) = page(&mut env, 0);
    let (second, _) = page(&mut env, 2);
    let (third, _) = page(&mut env, 4);
    assert_eq!(meta["matches"], 5);
    let mut all = [first, second, third].concat();
    assert_eq!(all.len(), 5);
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 5, "disjoint");
    let mut strict = env_with(r#"{"search":{"score_threshold":0.9}}"#);
    let out = call(
        &mut strict,
        post("/mcp"),
        "tool_search",
        json!({"query":"refund charge"}),
    );
    assert_eq!(names(&local_result(&out).1), ["stripe_refund_charge"]);
}

#[test]
fn a_list_that_cannot_be_filtered_is_refused_under_authorization() {
    let config = format!(r#"{{"max_body_bytes":1024,{POLICY}}}"#);
    let defs: Vec<Value> = (0..30)
        .map(|i| json!({"name": format!("stripe_tool_{i}"), "description": "a tool for billing"}))
        .collect();
    let body =
        serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":{"tools": defs}})).unwrap();
    assert!(body.len() > 1024);
    let chunks: Vec<&[u8]> = body.chunks(300).collect();
    let error = |reason: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":-32603,"message":"the tool list could not be filtered for this caller ({reason}); ask the operator"}}}}"#
        )
    };
    let sse = format!(
        "event: message\ndata: {}\n\n",
        String::from_utf8(body.clone()).unwrap()
    );
    let sse_chunks: Vec<&[u8]> = sse.as_bytes().chunks(300).collect();
    // (content type, body pieces, what the client gets, why, warnings logged).
    type Case<'a> = (&'a str, &'a [&'a [u8]], String, PassReason, &'a [&'a str]);
    let cases: [Case; 3] = [
        (
            "application/json",
            &chunks,
            error("too_large"),
            PassReason::TooLarge,
            &["tools/list response refused: it cannot be filtered for the caller (too_large)"],
        ),
        (
            "text/event-stream",
            &sse_chunks,
            format!("event: message\ndata: {}\n\n", error("too_large")),
            PassReason::TooLarge,
            &["tools/list response refused: it cannot be filtered for the caller (too_large)"],
        ),
        (
            "text/plain",
            &[&body],
            error("content_type"),
            PassReason::ContentType,
            &["tools/list response refused: it cannot be filtered for the caller (content_type)"],
        ),
    ];
    for (content_type, pieces, want, reason, warnings) in cases {
        let mut env = TestEnv::new(&config);
        let out = exchange(
            &mut env,
            as_role("support"),
            LIST,
            ("200", content_type, pieces),
        );
        assert_eq!(out.text(), want, "{content_type}");
        assert_eq!(
            env.events,
            [Event::PassedThrough(reason), Event::ResponseWithheld],
            "{content_type}"
        );
        assert_eq!(env.warnings, warnings, "{content_type}");
    }
    // Without authorization the same list passes unchanged.
    let mut open = TestEnv::new(r#"{"max_body_bytes":1024}"#);
    let out = exchange(
        &mut open,
        post("/mcp"),
        LIST,
        ("200", "application/json", &chunks),
    );
    assert_eq!(out.body(), body.as_slice());
    assert_eq!(open.events, [Event::PassedThrough(PassReason::TooLarge)]);
}

#[test]
fn a_list_in_a_mixed_batch_is_still_filtered() {
    let mut env = env_with(&format!(r#"{{{POLICY}}}"#));
    let events_before = env.events.len();
    // With our search tool in it, the batch cannot be split: refused whole, never upstream.
    let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"x"}}}]"#;
    let response = format!("[{}]", String::from_utf8(catalog()).unwrap());
    let out = exchange(
        &mut env,
        as_role("support"),
        batch,
        ("200", "application/json", &[response.as_bytes()]),
    );
    let refused = r#"{"code":-32600,"message":"batch refused: it calls a tool that is not available; send the requests one by one"}"#;
    let Outcome::Local {
        status: 200, body, ..
    } = &out
    else {
        panic!("{out:?}")
    };
    assert_eq!(
        String::from_utf8_lossy(body),
        format!(
            r#"[{{"jsonrpc":"2.0","id":1,"error":{refused}}},{{"jsonrpc":"2.0","id":2,"error":{refused}}}]"#
        )
    );
    assert_eq!(sent_upstream(), None);
    assert_eq!(env.events[events_before..], [Event::CallRefused]);
    // With an upstream call instead, the batch goes upstream and its list comes back filtered.
    let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"github_get_issue","arguments":{"id":1}}}]"#;
    let response = format!(
        r#"[{},{{"jsonrpc":"2.0","id":2,"result":{{"content":[]}}}}]"#,
        String::from_utf8(catalog()).unwrap()
    );
    let out = exchange(
        &mut env,
        as_role("support"),
        batch,
        ("200", "application/json", &[response.as_bytes()]),
    );
    assert_eq!(sent_upstream().as_deref(), Some(&batch[..]));
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(names(&v[0]["result"]["tools"]), ["tool_search"], "{v}");
    assert!(
        v[0]["result"]["tools"][0]["description"]
            .as_str()
            .unwrap()
            .ends_with("Tools you can find include: github_close_issue, github_create_issue, github_get_issue, slack_post_message."),
        "{v}"
    );
    assert_eq!(
        v[1],
        json!({"jsonrpc":"2.0","id":2,"result":{"content":[]}})
    );
    assert!(!out.text().contains("stripe"), "{v}");
    assert_eq!(env.count(Event::ListRewritten), 2);
    assert!(env.warnings.is_empty(), "{:?}", env.warnings);
}

#[test]
fn auto_mode_searches_until_the_whole_list_is_known() {
    let mut env = TestEnv::new(r#"{"mode":"auto","search_threshold":3}"#);
    let page = |tools: &[&str], next: Option<&str>| {
        let defs: Vec<Value> = tools
            .iter()
            .map(|n| json!({"name": n, "description": n}))
            .collect();
        let mut result = json!({"tools": defs});
        if let Some(c) = next {
            result["nextCursor"] = json!(c);
        }
        serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":result})).unwrap()
    };
    let first = page(&["a", "b"], Some("p2"));
    let v: Value = serde_json::from_slice(
        exchange(
            &mut env,
            post("/mcp"),
            LIST,
            ("200", "application/json", &[&first]),
        )
        .body(),
    )
    .unwrap();
    assert_eq!(
        names(&v["result"]["tools"]),
        ["tool_search"],
        "size unknown: search"
    );
    assert!(v["result"]["tools"][0]["description"]
        .as_str()
        .unwrap()
        .contains("At least 2 more"));
    let second = page(&["c"], None);
    let req = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"p2"}}"#;
    let v: Value = serde_json::from_slice(
        exchange(
            &mut env,
            post("/mcp"),
            req,
            ("200", "application/json", &[&second]),
        )
        .body(),
    )
    .unwrap();
    assert_eq!(v["result"]["tools"], json!([]), "same choice on every page");
    // Now 3 tools are known, not above the threshold: the next listing lists them.
    let v: Value = serde_json::from_slice(
        exchange(
            &mut env,
            post("/mcp"),
            LIST,
            ("200", "application/json", &[&first]),
        )
        .body(),
    )
    .unwrap();
    assert_eq!(names(&v["result"]["tools"]), ["a", "b"]);
}

/// With request headers forwarded before the body (`hold_request_headers: false`), a 2026-07-28
/// `call_tool` already named `call_tool` in `mcp-name` upstream: the filter makes the call
/// itself, with the caller's headers, and answers with the upstream's response as it came.
/// A tool the caller may not use is never called; an unreachable upstream is an error result.
/// A 2026-07-28 client's POST to /mcp; `mirrored`: with the `Mcp-Method`/`Mcp-Name` of a
/// `call_tool` call.
fn call_tool_headers(mirrored: bool) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = vec![
        (":method".into(), "POST".into()),
        (":path".into(), "/mcp".into()),
        (":authority".into(), "svc.local:8080".into()),
        ("content-type".into(), "application/json".into()),
        (
            "accept".into(),
            "application/json, text/event-stream".into(),
        ),
        ("mcp-protocol-version".into(), "2026-07-28".into()),
    ];
    if mirrored {
        headers.push(("mcp-method".into(), "tools/call".into()));
        headers.push(("mcp-name".into(), "call_tool".into()));
    }
    headers
}

#[test]
fn call_tool_without_held_headers_is_made_by_the_filter() {
    use std::cell::RefCell;
    use std::rc::Rc;
    let config =
        format!(r#"{{"search":{{"result_format":"summary","call_timeout":"42s"}},{POLICY}}}"#);
    let mut env = env_with(&config);
    env.route = Some(("mcp_upstream".into(), "svc.local:8080".into()));
    let seen: Rc<RefCell<Vec<mcp_tool_search_core::HttpCall>>> = Rc::default();
    let record = Rc::clone(&seen);
    env.upstream = Some(Rc::new(move |call| {
        record.borrow_mut().push(call.clone());
        (
            Some("200".into()),
            vec![
                ("content-type".into(), "text/event-stream".into()),
                ("x-upstream-private".into(), "dropped".into()),
            ],
            b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"c\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"posted\"}]}}\n\n".to_vec(),
        )
    }));
    let parsed = mcp_tool_search_core::Config::parse(&config).unwrap();
    let head = |role: &str| {
        let mut headers = call_tool_headers(true);
        headers.extend([
            ("x-user-roles".into(), role.into()),
            ("authorization".into(), "Bearer t0k3n".into()),
            ("content-length".into(), "999".into()),
        ]);
        RequestHead::from_headers(&parsed, &headers, || None)
    };
    let body = |tool: &str| {
        serde_json::to_vec(
            &json!({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{
            "name":"call_tool","arguments":{"name":tool,"arguments":{"channel":"C1"}},
            "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}),
        )
        .unwrap()
    };
    let out = exchange(
        &mut env,
        head("support"),
        &body("slack_post_message"),
        ("200", "application/json", &[]),
    );
    let Outcome::Local {
        status: 200,
        headers,
        body: answered,
    } = &out
    else {
        panic!("{out:?}")
    };
    assert_eq!(
        headers,
        &[("content-type".to_string(), "text/event-stream".to_string())]
    );
    assert!(String::from_utf8_lossy(answered).contains("\"posted\""));
    let calls = seen.borrow();
    let [made] = calls.as_slice() else {
        panic!("{calls:?}")
    };
    assert_eq!(made.cluster, "mcp_upstream");
    assert_eq!(made.timeout_ms, 42_000, "search.call_timeout");
    let header = |name: &str| {
        made.headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(header(":path"), ["/mcp"]);
    assert_eq!(header(":authority"), ["svc.local:8080"]);
    assert_eq!(header("mcp-name"), ["slack_post_message"]);
    assert_eq!(header("authorization"), ["Bearer t0k3n"]);
    assert_eq!(header("mcp-protocol-version"), ["2026-07-28"]);
    assert!(header("content-length").is_empty());
    let sent: Value = serde_json::from_slice(&made.body).unwrap();
    assert_eq!(sent["params"]["name"], "slack_post_message");
    assert_eq!(sent["params"]["arguments"], json!({"channel":"C1"}));
    assert_eq!(
        sent["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    drop(calls);

    // Not permitted: refused like any unknown tool, nothing called.
    let out = exchange(
        &mut env,
        head("support"),
        &body("stripe_refund_charge"),
        ("200", "application/json", &[]),
    );
    let (reply, _) = local_result(&out);
    assert_eq!(reply["result"]["isError"], true);
    assert_eq!(seen.borrow().len(), 1);

    // The upstream unreachable: an error result naming why, for the request's id.
    env.upstream = Some(Rc::new(|_| (None, Vec::new(), Vec::new())));
    let out = exchange(
        &mut env,
        head("support"),
        &body("slack_post_message"),
        ("200", "application/json", &[]),
    );
    let (reply, _) = local_result(&out);
    assert_eq!(reply["id"], "c");
    assert_eq!(reply["result"]["isError"], true);
    assert!(reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("did not reach the server"));
}

/// Without a policy, a request over 256 KiB goes on unread (it is no list or search); but a
/// 2026-07-28 client's `call_tool` (its `Mcp-Method`/`Mcp-Name` headers say so) is read up to
/// `max_body_bytes` however large its arguments: only the filter can answer it, and passed on
/// unread the server would answer "unknown tool".
#[test]
fn a_large_call_tool_is_read_whole_without_a_policy() {
    use std::cell::RefCell;
    use std::rc::Rc;
    let config = r#"{"search":{"result_format":"summary"}}"#;
    let mut env = env_with(config);
    env.route = Some(("mcp_upstream".into(), "svc.local:8080".into()));
    let seen: Rc<RefCell<Vec<mcp_tool_search_core::HttpCall>>> = Rc::default();
    let record = Rc::clone(&seen);
    env.upstream = Some(Rc::new(move |call| {
        record.borrow_mut().push(call.clone());
        (
            Some("200".into()),
            vec![("content-type".into(), "application/json".into())],
            br#"{"jsonrpc":"2.0","id":"c","result":{"content":[{"type":"text","text":"posted"}]}}"#
                .to_vec(),
        )
    }));
    let parsed = mcp_tool_search_core::Config::parse(config).unwrap();
    let head =
        |mirrored: bool| RequestHead::from_headers(&parsed, &call_tool_headers(mirrored), || None);
    let text = "x".repeat(400 * 1024);
    let body = serde_json::to_vec(
        &json!({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{
        "name":"call_tool","arguments":{"name":"slack_post_message","arguments":{"text": text}},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}),
    )
    .unwrap();
    let out = exchange(
        &mut env,
        head(true),
        &body,
        ("200", "application/json", &[]),
    );
    assert!(out.text().contains("\"posted\""), "{}", out.text());
    let calls = seen.borrow();
    let [made] = calls.as_slice() else {
        panic!("{} calls", calls.len())
    };
    let sent: Value = serde_json::from_slice(&made.body).unwrap();
    assert_eq!(sent["params"]["name"], "slack_post_message");
    assert_eq!(
        sent["params"]["arguments"]["text"].as_str().map(str::len),
        Some(400 * 1024)
    );
    drop(calls);
    // Without the mirrored headers (no 2026-07-28 client), it goes on unread, as before.
    let upstream_answer = br#"{"jsonrpc":"2.0","id":"c","error":{"code":-32602,"message":"Unknown tool: call_tool"}}"#;
    let out = exchange(
        &mut env,
        head(false),
        &body,
        ("200", "application/json", &[upstream_answer]),
    );
    assert_eq!(out.body(), upstream_answer);
    assert_eq!(sent_upstream().as_deref(), Some(body.as_slice()));
}

/// A 2026-07-28 client's `call_tool` carries the target's `Mcp-Param-*` headers (Streamable HTTP
/// 2026-07-28 "Custom Headers", which the server checks against the body), whether the filter
/// makes the call itself or sends the held request on rewritten.
#[test]
fn call_tool_sends_the_targets_param_headers() {
    for hold in [false, true] {
        let config =
            format!(r#"{{"search":{{"result_format":"summary"}},"hold_request_headers":{hold}}}"#);
        let mut env = TestEnv::new(&config);
        env.route = Some(("mcp_upstream".into(), "svc.local:8080".into()));
        let tools = json!({"jsonrpc":"2.0","id":1,"result":{"tools":[
            {"name":"sql_run","description":"Run SQL","inputSchema":{"type":"object","properties":{
                "region":{"type":"string","x-mcp-header":"Region"},"query":{"type":"string"}}}}]}});
        let tools = serde_json::to_vec(&tools).unwrap();
        exchange(
            &mut env,
            post("/mcp"),
            LIST,
            ("200", "application/json", &[&tools]),
        );
        let made: std::rc::Rc<std::cell::RefCell<Vec<mcp_tool_search_core::HttpCall>>> =
            std::rc::Rc::default();
        let record = std::rc::Rc::clone(&made);
        let answer = br#"{"jsonrpc":"2.0","id":"c","result":{"content":[]}}"#;
        env.upstream = Some(std::rc::Rc::new(move |call| {
            record.borrow_mut().push(call.clone());
            (Some("200".into()), vec![], answer.to_vec())
        }));
        let parsed = mcp_tool_search_core::Config::parse(&config).unwrap();
        let head = RequestHead::from_headers(&parsed, &call_tool_headers(true), || None);
        let body = serde_json::to_vec(&json!({"jsonrpc":"2.0","id":"c","method":"tools/call",
            "params":{"name":"call_tool","arguments":{"name":"sql_run",
                "arguments":{"region":"eu-west","query":"SELECT 1"}},
            "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}))
        .unwrap();
        let request = mcp_tool_search_core::Request {
            headers: env.request_headers(&head, &body),
            chunks: vec![body],
            trailers: false,
        };
        let response = upstream_response("200", "application/json", &[answer]);
        let sent: Vec<(String, String)> = match exchange_raw(&mut env, &request, &response) {
            mcp_tool_search_core::Exchanged::Local(_) if !hold => made.borrow()[0].headers.clone(),
            mcp_tool_search_core::Exchanged::Upstream { sent_headers, .. } if hold => sent_headers
                .into_iter()
                .map(|(k, v)| (k, String::from_utf8(v).unwrap()))
                .collect(),
            other => panic!("hold {hold}: {other:?}"),
        };
        let header = |name: &str| {
            sent.iter()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
                .collect::<Vec<_>>()
        };
        assert_eq!(header("mcp-name"), ["sql_run"], "hold {hold}");
        assert_eq!(header("mcp-param-region"), ["eu-west"], "hold {hold}");
    }
}
