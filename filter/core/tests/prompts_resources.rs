//! Prompts, resources and resource templates: learned from the lists that pass (JSON and SSE,
//! pages), searched with `type`, and under a policy filtered per caller and authorized on
//! `prompts/get`, `resources/read`, subscriptions and completions from the body. Natively.
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

const UPSTREAM: &[u8] = br#"{"jsonrpc":"2.0","id":5,"result":{"from":"upstream"}}"#;
const POLICY: &str = r#""authorization":{"identity":{"source":"header","header":"x-user-roles"},
    "rules":[{"claim":"roles","values":["support"],"tools":["*"],"prompts":["triage_*"],
              "resources":["file:///kb/*"]},
             {"claim":"roles","values":["admin"]}],
    "default":"deny"}"#;

fn prompts() -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":{"prompts":[
        {"name":"triage_ticket","title":"Triage a ticket","description":"Classify a support ticket by urgency",
         "arguments":[{"name":"ticket","required":true}]},
        {"name":"payroll_summary","description":"Summarize the month's payroll for finance"}]}}))
    .unwrap()
}

fn resources_page(cursor: Option<&str>) -> Vec<u8> {
    let (items, next) = match cursor {
        None => (
            json!([{"uri":"file:///kb/refunds.md","name":"refunds","description":"How to refund a customer"},
                   {"uri":"file:///hr/salaries.csv","name":"salaries","description":"Salary of every employee"}]),
            json!("p2"),
        ),
        Some(_) => (
            json!([{"uri":"file:///kb/shipping.md","name":"shipping","description":"Shipping delays and carriers"}]),
            Value::Null,
        ),
    };
    let mut result = json!({"resources": items});
    if !next.is_null() {
        result["nextCursor"] = next;
    }
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":result})).unwrap()
}

fn templates() -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":{"resourceTemplates":[
        {"uriTemplate":"file:///kb/{article}","name":"kb article","description":"A knowledge base article"},
        {"uriTemplate":"file:///hr/{employee}/payslip","name":"payslip","description":"An employee's payslip"}]}}))
    .unwrap()
}

fn as_role(head: RequestHead, role: &str) -> RequestHead {
    RequestHead {
        caller: Caller::from_header("roles", role),
        ..head
    }
}

fn list(method: &str, cursor: Option<&str>) -> Vec<u8> {
    let params = cursor.map_or(json!({}), |c| json!({"cursor": c}));
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"method":method,"params":params})).unwrap()
}

fn sse(body: &[u8]) -> Vec<u8> {
    let mut out = b"event: message\ndata: ".to_vec();
    out.extend_from_slice(body);
    out.extend_from_slice(b"\n\n");
    out
}

/// Every list passes through `head`'s caller; returns what the client got of each.
fn learn_all(env: &mut TestEnv, head: &RequestHead) -> Vec<Value> {
    let mut got = Vec::new();
    let answers: [(&str, Option<&str>, Vec<u8>, &str); 4] = [
        ("prompts/list", None, prompts(), "application/json"),
        (
            "resources/list",
            None,
            sse(&resources_page(None)),
            "text/event-stream",
        ),
        (
            "resources/list",
            Some("p2"),
            resources_page(Some("p2")),
            "application/json",
        ),
        (
            "resources/templates/list",
            None,
            templates(),
            "application/json",
        ),
    ];
    for (method, cursor, body, content_type) in answers {
        let out = exchange(
            env,
            head.clone(),
            &list(method, cursor),
            ("200", content_type, &[&body]),
        );
        let text = out.text();
        let json = text
            .strip_prefix("event: message\ndata: ")
            .unwrap_or(&text)
            .trim()
            .to_string();
        got.push(serde_json::from_str(&json).unwrap());
    }
    got
}

fn search(env: &mut TestEnv, head: RequestHead, args: Value) -> (Vec<(String, String)>, Value) {
    let body = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"tool_search","arguments":args}});
    let out = exchange(
        env,
        head,
        body.to_string().as_bytes(),
        ("200", "application/json", &[UPSTREAM]),
    );
    let (reply, found) = local_result(&out);
    let found = found.as_array().cloned().unwrap_or_default();
    let typed = found
        .iter()
        .map(|r| {
            let def = &r["definition"];
            let key = def["name"]
                .as_str()
                .filter(|_| r["type"] == "prompt")
                .or(def["uri"].as_str())
                .or(def["uriTemplate"].as_str())
                .unwrap_or("?");
            (r["type"].as_str().unwrap().to_string(), key.to_string())
        })
        .collect();
    (
        typed,
        reply["result"]["_meta"]["mcp-tool-search/search"].clone(),
    )
}

fn use_entry(env: &mut TestEnv, head: RequestHead, body: Value) -> Outcome {
    exchange(
        env,
        head,
        body.to_string().as_bytes(),
        ("200", "application/json", &[UPSTREAM]),
    )
}

#[test]
fn lists_pass_unchanged_without_a_policy_and_are_searched_by_type() {
    let mut env = TestEnv::new("{}");
    let got = learn_all(&mut env, &post("/mcp"));
    assert_eq!(
        got[0],
        serde_json::from_slice::<Value>(&prompts()).unwrap(),
        "listed as sent"
    );
    assert_eq!(
        got[3],
        serde_json::from_slice::<Value>(&templates()).unwrap()
    );

    let (found, meta) = search(
        &mut env,
        post("/mcp"),
        json!({"query": "triage a support ticket", "type": "prompt"}),
    );
    assert_eq!(
        found[0],
        ("prompt".into(), "triage_ticket".into()),
        "{meta}"
    );
    assert_eq!(meta["type"], "prompt");
    // Both pages of resources were learned, and templates are resources too.
    let (found, _) = search(
        &mut env,
        post("/mcp"),
        json!({"query": "shipping carriers", "type": "resource"}),
    );
    assert_eq!(
        found[0],
        ("resource".into(), "file:///kb/shipping.md".into())
    );
    let (found, _) = search(
        &mut env,
        post("/mcp"),
        json!({"query": "payslip of an employee", "type": "resource"}),
    );
    assert_eq!(
        found[0],
        (
            "resource_template".into(),
            "file:///hr/{employee}/payslip".into()
        ),
        "{found:?}"
    );
    // `all` says each result's type; without `type` the search is of tools (none known here).
    let (found, meta) = search(
        &mut env,
        post("/mcp"),
        json!({"query": "refund", "type": "all"}),
    );
    assert_eq!(
        found,
        [("resource".to_string(), "file:///kb/refunds.md".to_string())],
        "{meta}"
    );
    let body = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"tool_search","arguments":{"query":"refund","type":"tools"}}});
    let out = exchange(
        &mut env,
        post("/mcp"),
        body.to_string().as_bytes(),
        ("200", "application/json", &[UPSTREAM]),
    );
    assert!(
        out.text()
            .contains("must be \\\"tool\\\", \\\"prompt\\\", \\\"resource\\\" or \\\"all\\\""),
        "{}",
        out.text()
    );

    // The HTTP endpoint answers typed results with the same ranking.
    let http = exchange(
        &mut env,
        post("/mcp/search"),
        br#"{"query":"triage ticket","type":"all"}"#,
        ("200", "application/json", &[UPSTREAM]),
    );
    let v: Value = serde_json::from_slice(http.body()).unwrap();
    assert_eq!(v["results"][0]["type"], "prompt", "{v}");
    assert_eq!(
        v["results"][0]["definition"]["arguments"][0]["name"],
        "ticket"
    );
    assert_eq!(v["metadata"]["type"], "all");
}

#[test]
fn under_a_policy_lists_and_searches_show_the_callers_entries_only() {
    let mut env = TestEnv::new(&format!("{{{POLICY}}}"));
    let got = learn_all(&mut env, &as_role(post("/mcp"), "support"));
    let names = |v: &Value, member: &str, key: &str| -> Vec<String> {
        v["result"][member]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e[key].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&got[0], "prompts", "name"), ["triage_ticket"]);
    assert_eq!(got[0]["result"]["cacheScope"], "private");
    assert_eq!(
        names(&got[1], "resources", "uri"),
        ["file:///kb/refunds.md"]
    );
    assert_eq!(got[1]["result"]["nextCursor"], "p2", "paging is kept");
    assert_eq!(
        names(&got[3], "resourceTemplates", "uriTemplate"),
        ["file:///kb/{article}"]
    );

    // What the support caller's lists taught is every caller's catalog: the admin finds the
    // payroll prompt, support does not, by any wording.
    let (found, _) = search(
        &mut env,
        as_role(post("/mcp"), "admin"),
        json!({"query": "payroll", "type": "all"}),
    );
    assert_eq!(
        found,
        [("prompt".to_string(), "payroll_summary".to_string())]
    );
    for query in ["payroll", "salaries employee", "payslip"] {
        let (found, meta) = search(
            &mut env,
            as_role(post("/mcp"), "support"),
            json!({"query": query, "type": "all"}),
        );
        assert!(found.is_empty(), "{query}: {found:?}");
        assert_eq!(meta["matches"], 0, "{meta}");
    }
    let http = exchange(
        &mut env,
        as_role(post("/mcp/search"), "support"),
        br#"{"query":"salaries payslip payroll","type":"all"}"#,
        ("200", "application/json", &[UPSTREAM]),
    );
    let v: Value = serde_json::from_slice(http.body()).unwrap();
    assert_eq!(v["results"], json!([]), "{v}");
}

#[test]
fn get_read_subscribe_and_complete_are_authorized_from_the_body() {
    let mut env = TestEnv::new(&format!("{{{POLICY}}}"));
    let support = || as_role(post("/mcp"), "support");
    // Allowed: the request reaches the upstream as sent.
    for body in [
        json!({"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"triage_ticket","arguments":{"ticket":"1"}}}),
        json!({"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"file:///kb/refunds.md"}}),
        json!({"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"file:///kb/refunds.md"}}),
        json!({"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"triage_ticket"},"argument":{"name":"ticket","value":"1"}}}),
    ] {
        let out = use_entry(&mut env, support(), body.clone());
        assert_eq!(
            out,
            Outcome::Upstream {
                body: UPSTREAM.to_vec(),
                rewritten: false
            },
            "{body}"
        );
        assert_eq!(sent_upstream().unwrap(), body.to_string().into_bytes());
    }
    // Refused: answered as the server answers for an entry it does not have; never upstream.
    let refused = [
        (
            json!({"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"payroll_summary"}}),
            json!({"code":-32602,"message":"Unknown prompt: payroll_summary"}),
        ),
        (
            json!({"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"file:///hr/salaries.csv"}}),
            json!({"code":-32002,"message":"Resource not found","data":{"uri":"file:///hr/salaries.csv"}}),
        ),
        (
            json!({"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{"uri":"file:///hr/salaries.csv"}}),
            json!({"code":-32002,"message":"Resource not found","data":{"uri":"file:///hr/salaries.csv"}}),
        ),
        (
            json!({"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"file:///hr/{employee}/payslip"},"argument":{"name":"employee","value":"a"}}}),
            json!({"code":-32002,"message":"Resource not found","data":{"uri":"file:///hr/{employee}/payslip"}}),
        ),
    ];
    for (body, error) in refused {
        let out = use_entry(&mut env, support(), body.clone());
        let Outcome::Local {
            status: 200,
            body: reply,
            ..
        } = &out
        else {
            panic!("{body}: {out:?}")
        };
        let reply: Value = serde_json::from_slice(reply).unwrap();
        assert_eq!(reply["error"], error, "{body}");
        assert_eq!(reply["id"], 5);
        assert_eq!(sent_upstream(), None, "{body} reached the upstream");
    }
    // The admin rule names no kind: it is about every entry.
    let out = use_entry(
        &mut env,
        as_role(post("/mcp"), "admin"),
        json!({"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"file:///hr/salaries.csv"}}),
    );
    assert!(matches!(out, Outcome::Upstream { .. }), "{out:?}");
    // Nobody identified: the default (deny).
    let out = use_entry(
        &mut env,
        post("/mcp"),
        json!({"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"triage_ticket"}}),
    );
    assert!(matches!(out, Outcome::Local { .. }), "{out:?}");
    assert_eq!(sent_upstream(), None);
}

/// The attacker's tries: what the server would read differently from the filter, a notification,
/// a batch hiding a forbidden read among allowed ones.
#[test]
fn what_the_filter_cannot_read_in_one_way_never_reaches_the_upstream() {
    let mut env = TestEnv::new(&format!("{{{POLICY}}}"));
    let support = || as_role(post("/mcp"), "support");
    for raw in [
        // A second `uri`, spelled with an escape: readers disagree on which wins.
        r#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"file:///kb/a.md","\u0075ri":"file:///hr/salaries.csv"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"triage_ticket","n\u0061me":"payroll_summary"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":["file:///hr/salaries.csv"]}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"resources/read"}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"completion/complete","params":{"ref":{"type":"ref/prompt"}}}"#,
    ] {
        let out = exchange(
            &mut env,
            support(),
            raw.as_bytes(),
            ("200", "application/json", &[UPSTREAM]),
        );
        let Outcome::Local {
            status: 400, body, ..
        } = &out
        else {
            panic!("{raw}: {out:?}")
        };
        assert!(
            String::from_utf8_lossy(body).contains("exactly one way"),
            "{raw}"
        );
        assert_eq!(sent_upstream(), None, "{raw}");
    }
    // A notification is withheld (a lenient server may still act on it).
    let out = use_entry(
        &mut env,
        support(),
        json!({"jsonrpc":"2.0","method":"resources/read","params":{"uri":"file:///hr/salaries.csv"}}),
    );
    assert!(matches!(out, Outcome::Local { status: 202, .. }), "{out:?}");
    assert_eq!(sent_upstream(), None);
    // A batch with one forbidden read is refused whole.
    let batch = json!([
        {"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///kb/refunds.md"}},
        {"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///hr/salaries.csv"}}]);
    let out = exchange(
        &mut env,
        support(),
        batch.to_string().as_bytes(),
        ("200", "application/json", &[UPSTREAM]),
    );
    assert!(matches!(out, Outcome::Local { .. }), "{out:?}");
    assert_eq!(sent_upstream(), None);
    // Every spelling of the MCP path is the MCP path.
    let out = use_entry(
        &mut env,
        as_role(post("/%6Dcp"), "support"),
        json!({"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"payroll_summary"}}),
    );
    assert!(matches!(out, Outcome::Local { .. }), "{out:?}");
    assert_eq!(sent_upstream(), None);
}

/// `prompts.disclosure_mode: PROGRESSIVE`: prompts are no longer listed but still learned and
/// found by search; resources stay listed; `mode: list` lists everything (the kill switch).
#[test]
fn progressive_prompts_are_found_by_search_not_listed() {
    let mut env = TestEnv::new(r#"{"prompts":{"disclosure_mode":"PROGRESSIVE"}}"#);
    let got = learn_all(&mut env, &post("/mcp"));
    assert_eq!(got[0]["result"]["prompts"], json!([]), "{}", got[0]);
    assert_eq!(got[1]["result"]["resources"].as_array().unwrap().len(), 2);
    let (found, _) = search(
        &mut env,
        post("/mcp"),
        json!({"query": "triage a ticket", "type": "prompt"}),
    );
    assert_eq!(found[0], ("prompt".into(), "triage_ticket".into()));

    let mut listing =
        TestEnv::new(r#"{"mode":"list","prompts":{"disclosure_mode":"PROGRESSIVE"}}"#);
    let got = learn_all(&mut listing, &post("/mcp"));
    assert_eq!(got[0], serde_json::from_slice::<Value>(&prompts()).unwrap());

    let bad = mcp_tool_search_core::Config::parse(r#"{"resources":{"disclosure_mode":"LAZY"}}"#)
        .unwrap_err()
        .to_string();
    assert!(bad.contains("`resources.disclosure_mode`"), "{bad}");
}

/// `resources.disclosure_mode: PROGRESSIVE`: `resources/list` (every page, JSON and SSE) and
/// `resources/templates/list` answer empty but are still learned, and both are found by
/// search with their type; prompts stay listed.
#[test]
fn progressive_resources_are_found_by_search_not_listed() {
    let mut env = TestEnv::new(r#"{"resources":{"disclosure_mode":"PROGRESSIVE"}}"#);
    let got = learn_all(&mut env, &post("/mcp"));
    assert_eq!(got[0], serde_json::from_slice::<Value>(&prompts()).unwrap());
    for (answer, member) in [
        (&got[1], "resources"),
        (&got[2], "resources"),
        (&got[3], "resourceTemplates"),
    ] {
        assert_eq!(answer["result"][member], json!([]), "{answer}");
    }
    // The first page keeps its cursor: the client asks for the next, which the filter learns.
    assert_eq!(got[1]["result"]["nextCursor"], "p2", "{}", got[1]);
    let (found, _) = search(
        &mut env,
        post("/mcp"),
        json!({"query": "shipping delays", "type": "resource"}),
    );
    assert_eq!(
        found[0],
        ("resource".into(), "file:///kb/shipping.md".into())
    );
    let (found, _) = search(
        &mut env,
        post("/mcp"),
        json!({"query": "payslip of an employee", "type": "resource"}),
    );
    assert_eq!(
        found[0],
        (
            "resource_template".into(),
            "file:///hr/{employee}/payslip".into()
        )
    );
}

/// Health reports prompts and resources with their namespace's tools, not as namespaces.
#[test]
fn health_counts_prompts_and_resources_beside_the_tools() {
    let mut env = TestEnv::new("{}");
    learn_all(&mut env, &post("/mcp"));
    let out = exchange(&mut env, get("/mcp/search/health"), b"", ("200", "", &[]));
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    let catalogs = v["catalogs"].as_object().unwrap();
    assert_eq!(catalogs.keys().collect::<Vec<_>>(), ["upstream"], "{v}");
    assert_eq!(catalogs["upstream"]["tools"], 0);
    assert_eq!(catalogs["upstream"]["prompts"], 2);
    assert_eq!(catalogs["upstream"]["resources"], 3);
    assert_eq!(catalogs["upstream"]["resource_templates"], 2);
}

/// A server reads a resource by its URI normalized (the TypeScript SDK looks it up by
/// `new URL(uri).toString()`: scheme and host lowercased, dot segments resolved): under a policy
/// a URI that another reading could turn into a different one never reaches the upstream.
#[test]
fn a_resource_uri_a_server_would_read_otherwise_is_refused() {
    let mut env = TestEnv::new(&format!("{{{POLICY}}}"));
    let support = || as_role(post("/mcp"), "support");
    for uri in [
        "file:///kb/../hr/salaries.csv",
        "file:///kb/./../hr/salaries.csv",
        "file:///kb/%2e%2e/hr/salaries.csv",
        "file:///kb/..%2fhr/salaries.csv",
        "file:///kb/..\\hr\\salaries.csv",
        "FILE:///kb/refunds.md",
        "file://KB.example/kb/a",
        "file://user@host/kb/a",
        "file:///kb/%72efunds.md",
        "file:///kb/refunds.md\u{0}",
        " file:///kb/refunds.md",
    ] {
        let out = use_entry(
            &mut env,
            support(),
            json!({"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri": uri}}),
        );
        let Outcome::Local {
            status: 400, body, ..
        } = &out
        else {
            panic!("{uri:?}: {out:?}")
        };
        assert!(
            String::from_utf8_lossy(body).contains("exactly one way"),
            "{uri:?}"
        );
        assert_eq!(sent_upstream(), None, "{uri:?}");
    }
    // Canonical URIs, templates' braces, case in the path and a query are read as they are.
    for uri in [
        "file:///kb/refunds.md",
        "file:///kb/Refunds%20Policy.md?v=2",
        "file:///kb/{article}",
    ] {
        let out = use_entry(
            &mut env,
            support(),
            json!({"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri": uri}}),
        );
        assert!(matches!(out, Outcome::Upstream { .. }), "{uri:?}: {out:?}");
    }
    // Without a policy nothing is decided on the URI: it passes as sent.
    let mut open = TestEnv::new("{}");
    let out = use_entry(
        &mut open,
        post("/mcp"),
        json!({"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"FILE:///kb/../x"}}),
    );
    assert!(matches!(out, Outcome::Upstream { .. }), "{out:?}");
}

/// Responses are matched to requests by id: an id the server writes otherwise (`1.0` answered
/// as `1`) still matches, and under a policy a batch that repeats an id (two lists the filter
/// could mix up) never reaches the upstream.
#[test]
fn list_responses_are_matched_by_the_id_as_a_server_reads_it() {
    let mut env = TestEnv::new(&format!("{{{POLICY}}}"));
    let support = || as_role(post("/mcp"), "support");
    let answered = |body: Vec<u8>| {
        let mut v: Value = serde_json::from_slice(&body).unwrap();
        v["id"] = json!(1);
        serde_json::to_vec(&v).unwrap()
    };
    let out = exchange(
        &mut env,
        support(),
        br#"{"jsonrpc":"2.0","id":1.0,"method":"prompts/list"}"#,
        ("200", "application/json", &[&answered(prompts())]),
    );
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    let prompt_names: Vec<&str> = v["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        (&v["id"], prompt_names),
        (&json!(1), vec!["triage_ticket"]),
        "{v}"
    );
    // One tool the caller may use and one it may not: the answer must hold exactly the first.
    let refund = json!({"name":"stripe_create_refund","description":"Refund a charge","inputSchema":{"type":"object"}});
    let tools = json!({"jsonrpc":"2.0","id":1,"result":{"tools":[
        {"name":"github_get_issue","description":"Get an issue","inputSchema":{"type":"object"}},
        refund]}});
    let policy_tools = format!(
        r#"{{"eager_patterns":["*"],{}}}"#,
        POLICY.replace(r#""tools":["*"],"#, r#""tools":["stripe_*"],"#)
    );
    let mut narrow = TestEnv::new(&policy_tools);
    let out = exchange(
        &mut narrow,
        support(),
        br#"{"jsonrpc":"2.0","id":1e0,"method":"tools/list"}"#,
        ("200", "application/json", &[tools.to_string().as_bytes()]),
    );
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(
        v,
        json!({"jsonrpc":"2.0","id":1,"result":{"tools":[refund],"cacheScope":"private"}}),
        "the caller's tools, and only them"
    );

    for batch in [
        r#"[{"jsonrpc":"2.0","id":1,"method":"prompts/list"},{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
        r#"[{"jsonrpc":"2.0","id":"a","method":"resources/list"},{"jsonrpc":"2.0","id":"a","method":"resources/templates/list"}]"#,
        r#"[{"jsonrpc":"2.0","id":2,"method":"prompts/list"},{"jsonrpc":"2.0","id":2.0,"method":"tools/list"}]"#,
    ] {
        let out = exchange(
            &mut env,
            support(),
            batch.as_bytes(),
            ("200", "application/json", &[UPSTREAM]),
        );
        assert!(
            matches!(out, Outcome::Local { status: 400, .. }),
            "{batch}: {out:?}"
        );
        assert_eq!(sent_upstream(), None, "{batch}");
    }
}
