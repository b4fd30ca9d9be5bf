//! Code mode natively: `tools/list` with `run_script`, scripts that search, describe and call
//! tools through the filter's own calls, the policy inside scripts, and the limits that end
//! them, in both hold modes. (The same flows against the `.wasm` in Envoy and wasmtime:
//! wasm-tests/tests/code_mode_e2e.rs.)
#![cfg(feature = "code-mode")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod code_scripts;
mod support;

use code_scripts::*;
use mcp_tool_search_core::{Config, Event, HttpCall, RequestHead, ScriptEnd};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;
use support::*;

const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

/// A POST to /mcp of protocol `version` with `more` headers.
fn client_headers(version: &str, more: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut headers: Vec<(String, String)> = vec![
        (":method".into(), "POST".into()),
        (":path".into(), "/mcp".into()),
        (":authority".into(), "svc.local:8080".into()),
        ("content-type".into(), "application/json".into()),
        (
            "accept".into(),
            "application/json, text/event-stream".into(),
        ),
        ("mcp-protocol-version".into(), version.into()),
    ];
    headers.extend(more.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    headers
}

/// A 2025-11-25 client's POST to /mcp in a session, as `role`.
fn head(config: &Config, role: &str) -> RequestHead {
    let headers = client_headers(
        "2025-11-25",
        &[
            ("mcp-session-id", "s-1"),
            ("authorization", "Bearer t0k3n"),
            ("x-user-roles", role),
        ],
    );
    RequestHead::from_headers(config, &headers, || None)
}

/// The calls the upstream got.
type Seen = Rc<RefCell<Vec<HttpCall>>>;

/// A worker in code mode (`code_scripts::CONFIG` with `extra` settings) that learned the
/// catalog, and an upstream that answers every call (as JSON or SSE, after a progress
/// notification) but [`HANGS`]'s, which the host ends at its timeout.
fn env_with(extra: &str, sse: bool) -> (TestEnv, Seen) {
    let config = format!("{}{extra}}}", CONFIG.trim_end().strip_suffix('}').unwrap());
    let mut env = TestEnv::new(&config);
    env.route = Some(("mcp_upstream".into(), "svc.local:8080".into()));
    let admin = head(&env.config.clone(), "admin");
    exchange(
        &mut env,
        admin,
        LIST,
        ("200", "application/json", &[&catalog()]),
    );
    let seen: Seen = Rc::default();
    let record = Rc::clone(&seen);
    let host = Rc::clone(&env.host);
    env.upstream = Some(Rc::new(move |call| {
        record.borrow_mut().push(call.clone());
        let request: Value = serde_json::from_slice(&call.body).unwrap();
        if request["params"]["name"] == HANGS {
            host.clock_ms.set(host.clock_ms.get() + call.timeout_ms);
            return (None, Vec::new(), Vec::new());
        }
        let message = String::from_utf8(answer(&call.body)).unwrap();
        if sse {
            let body = format!(
                "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":1,\"progress\":1}}}}\n\nevent: message\ndata: {message}\n\n"
            );
            (
                Some("200".into()),
                vec![("content-type".into(), "text/event-stream".into())],
                body.into_bytes(),
            )
        } else {
            (
                Some("200".into()),
                vec![("content-type".into(), "application/json".into())],
                message.into_bytes(),
            )
        }
    }));
    (env, seen)
}

fn run(env: &mut TestEnv, role: &str, script: &str) -> Value {
    let head = head(&env.config.clone(), role);
    let out = exchange(
        env,
        head,
        &request(script),
        ("200", "application/json", &[]),
    );
    let Outcome::Local {
        status: 200, body, ..
    } = &out
    else {
        panic!("not answered by the filter: {out:?}")
    };
    let reply: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(reply["id"], 7, "{reply}");
    reply["result"].clone()
}

#[test]
fn every_script_comes_to_what_it_must_in_both_hold_modes_and_both_wires() {
    for (hold, sse) in [(false, false), (true, false), (false, true), (true, true)] {
        let (mut env, seen) = env_with(&format!(r#","hold_request_headers":{hold}"#), sse);
        for case in CASES {
            let before = seen.borrow().len();
            let result = run(&mut env, case.role, case.script);
            check(case, &result);
            assert_eq!(seen.borrow().len() - before, case.calls, "{}", case.script);
        }
        // Every call went out as the caller would have sent it.
        for call in seen.borrow().iter() {
            let header = |name: &str| {
                call.headers
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.as_str())
            };
            assert_eq!(call.cluster, "mcp_upstream");
            assert_eq!(
                header("mcp-session-id"),
                Some("s-1"),
                "the caller's session"
            );
            assert_eq!(header("authorization"), Some("Bearer t0k3n"));
            assert_eq!(header("mcp-protocol-version"), Some("2025-11-25"));
            let sent: Value = serde_json::from_slice(&call.body).unwrap();
            assert_eq!(header("mcp-name"), sent["params"]["name"].as_str());
            assert_eq!(sent["method"], "tools/call");
            // The request's `_meta`, but its progress token: one request's, not every call's.
            assert_eq!(sent["params"]["_meta"], json!({}));
            assert!(sent["id"].as_u64().unwrap() < 1 << 53);
        }
        let limits = CASES
            .iter()
            .filter(|c| matches!(c.expect, Expect::Limit(_)))
            .count();
        assert_eq!(env.count(Event::Script(ScriptEnd::Limit)), limits);
        let calls: usize = CASES.iter().map(|c| c.calls).sum();
        let counted: u64 = env
            .events
            .iter()
            .filter_map(|e| match e {
                Event::ScriptCalls(n) => Some(*n),
                _ => None,
            })
            .sum();
        assert_eq!(counted, calls as u64);
    }
}

#[test]
fn the_hung_call_is_given_the_call_time_left() {
    let (mut env, seen) = env_with("", false);
    let result = run(&mut env, "support", "await tools.notes_wait({title: 't'});");
    assert_eq!(
        result["structuredContent"]["limit"], "call_time_ms",
        "{result}"
    );
    let timeouts: Vec<u64> = seen.borrow().iter().map(|c| c.timeout_ms).collect();
    assert_eq!(timeouts, [1550], "the call time left, and a little slack");
}

#[test]
fn the_list_offers_run_script_and_no_search_tool() {
    let (mut env, _) = env_with("", false);
    let head = head(&env.config.clone(), "admin");
    let out = exchange(
        &mut env,
        head,
        LIST,
        ("200", "application/json", &[&catalog()]),
    );
    let list: Value = serde_json::from_slice(out.body()).unwrap();
    let tools = list["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["run_script"],
        "progressive tools hidden, no tool_search"
    );
    let description = tools[0]["description"].as_str().unwrap();
    assert!(
        description.contains("catalog.tools.search"),
        "{description}"
    );
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["script"]));
    assert!(tools[0]["outputSchema"].is_object());
}

#[test]
fn upstream_errors_reject_the_call() {
    let (mut env, _) = env_with("", false);
    env.upstream = Some(Rc::new(|call| {
        let request: Value = serde_json::from_slice(&call.body).unwrap();
        let error = json!({"jsonrpc":"2.0","id":request["id"],"error":{"code":-32602,"message":"Unknown tool"}});
        (Some("200".into()), vec![], error.to_string().into_bytes())
    }));
    let result = run(
        &mut env,
        "support",
        "try { await tools.notes_create({}); } catch (e) { return e.message; }",
    );
    assert_eq!(
        result["structuredContent"]["result"],
        "Unknown tool (JSON-RPC error -32602)"
    );
    env.upstream = Some(Rc::new(|_| {
        (Some("503".into()), vec![], b"overloaded".to_vec())
    }));
    let result = run(
        &mut env,
        "support",
        "try { await tools.notes_create({}); } catch (e) { return e.message; }",
    );
    let message = result["structuredContent"]["result"].as_str().unwrap();
    assert!(
        message.starts_with("the server answered HTTP 503"),
        "{message}"
    );
}

#[test]
fn bad_arguments_are_errors_the_agent_can_act_on() {
    let (mut env, _) = env_with("", false);
    let body = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"run_script","arguments":{"code":"1"}}}"#;
    let support = head(&env.config.clone(), "support");
    let out = exchange(
        &mut env,
        support.clone(),
        body,
        ("200", "application/json", &[]),
    );
    let (reply, _) = local_result(&out);
    assert_eq!(reply["result"]["isError"], true);
    assert!(out.text().contains("Missing required argument `script`"));
    assert_eq!(env.count(Event::Script(ScriptEnd::Error)), 1);
    let body = br#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"run_script","arguments":{"script":" "}}}"#;
    let out = exchange(&mut env, support, body, ("200", "application/json", &[]));
    assert!(
        out.text().contains("Argument `script` is empty"),
        "{}",
        out.text()
    );
}

#[test]
fn code_mode_serves_no_search_tool() {
    let (mut env, seen) = env_with("", false);
    let body = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"weather"}}}"#;
    let admin = head(&env.config.clone(), "admin");
    let out = exchange(
        &mut env,
        admin.clone(),
        body,
        ("200", "application/json", &[b"{}"]),
    );
    assert!(
        matches!(out, Outcome::Upstream { .. }),
        "tool_search is the upstream's own name here: {out:?}"
    );
    // Nor a list with a query (SEP-1821), nor the plain-HTTP search and groups: they are the
    // route's; the health report stays.
    let body = br#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"query":"weather"}}"#;
    let out = exchange(&mut env, admin, body, ("200", "application/json", &[b"{}"]));
    assert!(matches!(out, Outcome::Upstream { .. }), "{out:?}");
    let search = exchange(
        &mut env,
        post("/mcp/search"),
        br#"{"query":"weather"}"#,
        ("404", "text/plain", &[b"no"]),
    );
    assert!(matches!(search, Outcome::Upstream { .. }), "{search:?}");
    let groups = exchange(
        &mut env,
        get("/mcp/search/groups?query=x"),
        b"",
        ("404", "text/plain", &[b"no"]),
    );
    assert!(matches!(groups, Outcome::Upstream { .. }), "{groups:?}");
    let health = exchange(
        &mut env,
        get("/mcp/search/health"),
        b"",
        ("404", "text/plain", &[b"no"]),
    );
    assert!(
        matches!(health, Outcome::Local { status: 200, .. }),
        "{health:?}"
    );
    assert!(seen.borrow().is_empty());
}

#[test]
fn a_worker_runs_at_most_max_running_scripts_at_once() {
    let (mut env, _) = env_with(r#","code":{"max_running":1}"#, false);
    // One script waits for a call nobody answers yet.
    let support = head(&env.config.clone(), "support");
    let (waiting, _) = env.start(
        support.clone(),
        &request("return await tools.notes_create({title: 't'});"),
    );
    let result = run(&mut env, "support", "return 1;");
    assert_eq!(result["isError"], true, "{result}");
    let message = result["content"][0]["text"].as_str().unwrap();
    assert!(message.contains("code.max_running"), "{message}");
    // Its stream gone (the client left), the worker runs scripts again.
    drop(waiting);
    let result = run(&mut env, "support", "return 1;");
    assert_eq!(result["structuredContent"]["result"], 1, "{result}");
}

/// Protocol 2026-07-28: a script's call carries `Mcp-Name` and the tool's `Mcp-Param-*`
/// headers as "Value Encoding" writes them (Base64 where a value could add a header line), and
/// none of the caller's own `Mcp-Param-*`.
#[test]
fn a_modern_callers_script_calls_carry_the_tools_param_headers_encoded() {
    let config = r#"{"mode":"code"}"#;
    let mut env = TestEnv::new(config);
    env.route = Some(("mcp_upstream".into(), "svc.local:8080".into()));
    let tools = json!({"jsonrpc":"2.0","id":1,"result":{"tools":[
        {"name":"sql_run","description":"Run SQL","inputSchema":{"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},"query":{"type":"string"}}}},
        {"name":"odd\r\nx-injected: 1","description":"A name no header may carry",
         "inputSchema":{"type":"object"}}]}});
    let headers = client_headers(
        "2026-07-28",
        &[
            ("mcp-method", "tools/call"),
            ("mcp-name", "run_script"),
            ("mcp-param-region", "forged"),
            ("x-envoy-upstream-rq-timeout-ms", "0"),
        ],
    );
    let parsed = Config::parse(config).unwrap();
    let head = RequestHead::from_headers(&parsed, &headers, || None);
    let list = RequestHead::from_headers(&parsed, &headers[..5], || None);
    exchange(
        &mut env,
        list,
        LIST,
        (
            "200",
            "application/json",
            &[&serde_json::to_vec(&tools).unwrap()],
        ),
    );
    let seen: Seen = Rc::default();
    let record = Rc::clone(&seen);
    env.upstream = Some(Rc::new(move |call| {
        record.borrow_mut().push(call.clone());
        (Some("200".into()), vec![], answer(&call.body))
    }));
    let script = r#"await tools.sql_run({region: "eu\nwest", query: "SELECT 1"});
                    await tools.call("odd\r\nx-injected: 1", {}); return 1;"#;
    let body = serde_json::to_vec(&json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
        "params":{"name":"run_script","arguments":{"script":script},
                  "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}))
    .unwrap();
    let out = exchange(&mut env, head, &body, ("200", "application/json", &[]));
    let (reply, _) = local_result(&out);
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    let calls = seen.borrow();
    let header = |call: &HttpCall, name: &str| -> Vec<String> {
        call.headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    };
    assert_eq!(header(&calls[0], "mcp-name"), ["sql_run"]);
    assert_eq!(
        header(&calls[0], "mcp-param-region"),
        ["=?base64?ZXUKd2VzdA==?="],
        "the tool's own header, encoded; not the caller's"
    );
    assert_eq!(
        header(&calls[1], "mcp-name"),
        ["=?base64?b2RkDQp4LWluamVjdGVkOiAx?="]
    );
    assert!(header(&calls[1], "mcp-param-region").is_empty());
    assert!(
        header(&calls[0], "x-envoy-upstream-rq-timeout-ms").is_empty(),
        "Envoy's request controls are not the caller's to set on the filter's calls"
    );
    for call in calls.iter() {
        assert!(
            call.headers
                .iter()
                .all(|(k, v)| !k.contains(['\r', '\n']) && !v.contains(['\r', '\n'])),
            "{:?}",
            call.headers
        );
    }
}

/// Where the calls go: the route's cluster, or with `catalog.loopback` the catalog's cluster
/// (this listener: behind Envoy's mcp_router the only way to the right server); another catalog
/// cluster is some other service, never sent a caller's call.
#[test]
fn script_calls_go_where_the_callers_own_call_would() {
    for (catalog, cluster) in [
        (
            r#""catalog":{"cluster":"registry","loopback":false}"#,
            "mcp_upstream",
        ),
        (r#""catalog":{"cluster":"self","loopback":true}"#, "self"),
    ] {
        let (mut env, seen) = env_with(&format!(",{catalog}"), false);
        let result = run(
            &mut env,
            "support",
            "return (await tools.notes_create({title: 't'})).isError;",
        );
        assert_eq!(result["structuredContent"]["result"], false, "{result}");
        let calls = seen.borrow();
        assert_eq!(
            calls.last().map(|c| c.cluster.as_str()),
            Some(cluster),
            "{catalog}"
        );
    }
}

/// A tool's answer above `max_body_bytes` is refused without being copied into the VM, and a
/// script that retries calls the host refuses at once ends, whatever it catches.
#[test]
fn oversized_answers_and_refused_dispatches_reject_the_call() {
    let (mut env, _) = env_with(r#","max_body_bytes":1024"#, false);
    env.upstream = Some(Rc::new(|call| {
        let big = String::from_utf8(answer(&call.body))
            .unwrap()
            .replace("done", &"x".repeat(2000));
        (Some("200".into()), vec![], big.into_bytes())
    }));
    let result = run(
        &mut env,
        "support",
        "try { await tools.notes_create({title: 't'}); } catch (e) { return e.message; }",
    );
    let message = result["structuredContent"]["result"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("larger than max_body_bytes (1024)"),
        "{result}"
    );
    *env.host.refuse_calls.borrow_mut() = Some("no healthy upstream".into());
    let result = run(
        &mut env,
        "support",
        "let n = 0; for (;;) { try { await tools.notes_create({}); } catch (e) { n++; } }",
    );
    assert_eq!(result["structuredContent"]["limit"], "calls", "{result}");
}
