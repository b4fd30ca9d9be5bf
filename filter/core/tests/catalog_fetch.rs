//! Catalogs the filter fetches itself: on a miss, in the caller's context or its own session;
//! refreshed when stale (max age, `list_changed`); failures answered clearly and recovered
//! from; one fetch per namespace across workers. Natively, against a scripted MCP upstream.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::{
    fetch_secret, install_fetch_secret, Event, HttpCall, MemoryHost, RequestHead,
};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;
use support::*;

/// A scripted MCP server: its tools (changeable), whether it is up, and every call it got.
#[derive(Default)]
struct Server {
    tools: RefCell<Vec<&'static str>>,
    /// Lists shaped by the caller: extra tools per `authorization` value, `cacheScope: private`.
    private: RefCell<Vec<(&'static str, &'static str)>>,
    down: RefCell<Option<&'static str>>,
    seen: RefCell<Vec<HttpCall>>,
    page_size: usize,
    /// Prompts, declared in `initialize` when there are any.
    prompts: RefCell<Vec<&'static str>>,
    /// `ttlMs` on every list page (2026-07-28 "Caching").
    ttl_ms: RefCell<Option<u64>>,
    /// Lists shaped by the caller without saying so (a 2025-era server: no `cacheScope`).
    unmarked: RefCell<bool>,
}

impl Server {
    fn new(tools: &[&'static str]) -> Rc<Server> {
        Rc::new(Server {
            tools: RefCell::new(tools.to_vec()),
            page_size: 2,
            ..Server::default()
        })
    }

    fn answer(&self, call: &HttpCall) -> mcp_tool_search_core::CallResponse {
        self.seen.borrow_mut().push(call.clone());
        match *self.down.borrow() {
            Some("reset") => return (None, vec![], vec![]),
            Some("500") => return (Some("500".into()), vec![], b"boom".to_vec()),
            Some("garbage") => return (Some("200".into()), vec![], b"<html>".to_vec()),
            _ => {}
        }
        let header = |n: &str| call_header(call, n);
        if header(":method").as_deref() == Some("DELETE") {
            return (Some("200".into()), vec![], vec![]);
        }
        let req: Value = serde_json::from_slice(&call.body).unwrap();
        match req["method"].as_str().unwrap() {
            "initialize" => (
                Some("200".into()),
                vec![("mcp-session-id".into(), "own-session".into())],
                serde_json::to_vec(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"protocolVersion":"2025-06-18","capabilities":if self.prompts.borrow().is_empty() {
                    json!({"tools":{"listChanged":true}})
                } else {
                    json!({"tools":{"listChanged":true},"prompts":{}})
                },"serverInfo":{"name":"s","version":"1"}}})).unwrap(),
            ),
            "prompts/list" if !self.prompts.borrow().is_empty() => {
                let prompts: Vec<Value> = self
                    .prompts
                    .borrow()
                    .iter()
                    .map(|n| json!({"name": n, "description": format!("{} prompt", n.replace('_', " "))}))
                    .collect();
                (
                    Some("200".into()),
                    vec![],
                    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":req["id"],"result":{"prompts":prompts}})).unwrap(),
                )
            }
            "notifications/initialized" => (Some("202".into()), vec![], vec![]),
            "tools/list" => {
                let mut tools = self.tools.borrow().clone();
                let private = self.private.borrow();
                let token = header("authorization").unwrap_or_default();
                tools.extend(private.iter().filter(|(t, _)| *t == token).map(|(_, n)| *n));
                let start: usize = req["params"]["cursor"]
                    .as_str()
                    .map_or(0, |c| c.parse().unwrap());
                let end = (start + self.page_size).min(tools.len());
                let page: Vec<Value> = tools[start..end]
                    .iter()
                    .map(|n| json!({"name": n, "description": format!("{} things", n.replace('_', " ")), "inputSchema": {"type": "object"}}))
                    .collect();
                let mut result = json!({"tools": page});
                if !private.is_empty() && !*self.unmarked.borrow() {
                    result["cacheScope"] = json!("private");
                }
                if let Some(ttl) = *self.ttl_ms.borrow() {
                    result["ttlMs"] = json!(ttl);
                }
                if end < tools.len() {
                    result["nextCursor"] = json!(end.to_string());
                }
                // SSE, as the Python SDK answers.
                let body = format!(
                    "event: message\r\ndata: {}\r\n\r\n",
                    json!({"jsonrpc":"2.0","id":req["id"],"result":result})
                );
                (Some("200".into()), vec![], body.into_bytes())
            }
            // A server of tools only, as the MCP SDKs answer for an unregistered method.
            "prompts/list" | "resources/list" | "resources/templates/list" => (
                Some("200".into()),
                vec![],
                serde_json::to_vec(&json!({"jsonrpc":"2.0","id":req["id"],"error":{"code":-32601,"message":"Method not found"}})).unwrap(),
            ),
            other => panic!("unexpected {other}"),
        }
    }
}

fn env_for(server: &Rc<Server>, config: &str) -> TestEnv {
    env_on(server, config, Rc::new(fresh_host()))
}

fn fresh_host() -> MemoryHost {
    let host = MemoryHost::default();
    host.clock_ms.set(1_767_225_600_000);
    host
}

fn env_on(server: &Rc<Server>, config: &str, host: Rc<MemoryHost>) -> TestEnv {
    let mut env = TestEnv::sharing(config, host);
    env.route = Some(("upstream".into(), "svc.local:8080".into()));
    let s = Rc::clone(server);
    env.upstream = Some(Rc::new(move |call: &HttpCall| s.answer(call)));
    env
}

fn head(config: &str, headers: &[(&str, &str)]) -> RequestHead {
    let mut all: Vec<(String, String)> = vec![
        (":method".into(), "POST".into()),
        (":path".into(), "/mcp".into()),
        (":authority".into(), "svc.local:8080".into()),
        (
            "accept".into(),
            "application/json, text/event-stream".into(),
        ),
        ("content-type".into(), "application/json".into()),
    ];
    all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    RequestHead::from_headers(
        &mcp_tool_search_core::Config::parse(config).unwrap(),
        &all,
        || None,
    )
}

const EVERY_LIST: [&str; 4] = [
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
];

/// A server's `notifications/tools/list_changed`, as an SSE event.
const LIST_CHANGED: &[u8] =
    b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n";

const SEARCH: &[u8] =
    br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"refund a charge"}}}"#;

/// The names a search answered with, or its error text.
fn search(env: &mut TestEnv, head: RequestHead) -> Result<Vec<String>, String> {
    let out = exchange(env, head, SEARCH, ("200", "application/json", &[]));
    found(&out)
}

/// The names a search's answer holds, or its error text.
fn found(out: &Outcome) -> Result<Vec<String>, String> {
    let (reply, parsed) = local_result(out);
    if reply["result"]["isError"] == json!(true) {
        return Err(reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string());
    }
    Ok(parsed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect())
}

fn methods(server: &Server) -> Vec<String> {
    server
        .seen
        .borrow()
        .iter()
        .map(|c| {
            if c.body.is_empty() {
                return call_header(c, ":method").unwrap();
            }
            let v: Value = serde_json::from_slice(&c.body).unwrap();
            v["method"].as_str().unwrap().to_string()
        })
        .collect()
}

fn call_header(call: &HttpCall, name: &str) -> Option<String> {
    call.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

/// `GET /mcp/search/health` through the filter, parsed.
fn health(env: &mut TestEnv) -> Value {
    let out = exchange(env, get("/mcp/search/health"), b"", ("200", "", &[]));
    serde_json::from_slice(out.body()).unwrap()
}

#[test]
fn a_search_before_any_list_fetches_every_page_in_an_own_session_and_answers() {
    let server = Server::new(&[
        "stripe_refund_charge",
        "github_get_issue",
        "slack_post",
        "x_y",
    ]);
    let mut env = env_for(&server, "");
    let found = search(
        &mut env,
        head("", &[("authorization", "Bearer abc"), ("cookie", "c=1")]),
    )
    .unwrap();
    assert_eq!(found[0], "stripe_refund_charge");
    assert_eq!(
        methods(&server),
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/list",
            "DELETE"
        ]
    );
    let seen = server.seen.borrow();
    let list = &seen[2];
    assert_eq!(list.cluster, "upstream");
    assert_eq!(
        call_header(list, ":authority").as_deref(),
        Some("svc.local:8080")
    );
    assert_eq!(call_header(list, ":path").as_deref(), Some("/mcp"));
    assert_eq!(
        call_header(list, "mcp-session-id").as_deref(),
        Some("own-session")
    );
    // `authorization` is forwarded by default; nothing else of the caller's is.
    assert_eq!(
        call_header(list, "authorization").as_deref(),
        Some("Bearer abc")
    );
    assert_eq!(call_header(list, "cookie"), None);
    assert_eq!(env.host.counter("catalog_fetches.ok"), 1);
    drop(seen);
    // The catalog is now known: the next search fetches nothing.
    search(&mut env, head("", &[])).unwrap();
    assert_eq!(server.seen.borrow().len(), 5);
    let v = health(&mut env);
    assert_eq!(v["catalogs"]["upstream"]["source"], "fetched");
    assert_eq!(v["catalogs"]["upstream"]["tools"], 4);
    assert_eq!(v["catalogs"]["upstream"]["stale"], false);
}

#[test]
fn the_callers_session_and_protocol_are_used_when_it_has_them() {
    let server = Server::new(&["stripe_refund_charge"]);
    let mut env = env_for(&server, "");
    let h = head(
        "",
        &[
            ("mcp-session-id", "caller-1"),
            ("mcp-protocol-version", "2025-06-18"),
        ],
    );
    search(&mut env, h).unwrap();
    // The tools, then the kinds a server may have besides (the caller's initialize, which
    // says which it has, was not the filter's to read).
    assert_eq!(methods(&server), EVERY_LIST);
    for call in server.seen.borrow().iter() {
        assert_eq!(
            call_header(call, "mcp-session-id").as_deref(),
            Some("caller-1")
        );
    }
    let call = server.seen.borrow()[0].clone();
    assert_eq!(
        call_header(&call, "mcp-session-id").as_deref(),
        Some("caller-1")
    );
    assert_eq!(
        call_header(&call, "mcp-protocol-version").as_deref(),
        Some("2025-06-18")
    );
}

#[test]
fn a_2026_caller_gets_a_stateless_fetch() {
    let server = Server::new(&["stripe_refund_charge"]);
    let mut env = env_for(&server, "");
    let body = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"refund"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
    let h = head(
        "",
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "tool_search"),
        ],
    );
    let out = exchange(&mut env, h, body, ("200", "application/json", &[]));
    let (reply, parsed) = local_result(&out);
    assert_eq!(parsed[0]["name"], "stripe_refund_charge", "{reply}");
    assert_eq!(methods(&server), EVERY_LIST);
    let call = server.seen.borrow()[0].clone();
    assert_eq!(
        call_header(&call, "mcp-method").as_deref(),
        Some("tools/list")
    );
    let sent: Value = serde_json::from_slice(&call.body).unwrap();
    assert_eq!(
        sent["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
}

#[test]
fn failures_are_told_to_the_agent_counted_reported_and_recovered_from() {
    let server = Server::new(&["stripe_refund_charge"]);
    let mut env = env_for(&server, "");
    for (down, expect) in [
        ("reset", "no response from the server"),
        ("500", "the server answered HTTP 500"),
        ("garbage", "the answer is not JSON"),
    ] {
        *server.down.borrow_mut() = Some(down);
        let err = search(&mut env, head("", &[])).unwrap_err();
        assert!(
            err.starts_with("The tool catalog could not be fetched from the server (")
                && err.contains(expect),
            "{down}: {err}"
        );
    }
    assert_eq!(env.host.counter("catalog_fetches.failed"), 3);
    assert!(env
        .host
        .warnings()
        .iter()
        .any(|w| w.contains("catalog fetch")));
    let v = health(&mut env);
    let ns = &v["catalogs"]["upstream"];
    assert_eq!(ns["tools"], 0);
    assert_eq!(ns["failures"], 3);
    assert!(
        ns["last_error"].as_str().unwrap().contains("not JSON"),
        "{v}"
    );
    // The server is back: the next search fetches and answers.
    *server.down.borrow_mut() = None;
    assert_eq!(
        search(&mut env, head("", &[])).unwrap()[0],
        "stripe_refund_charge"
    );
    assert_eq!(env.host.counter("catalog_fetches.ok"), 1);
}

#[test]
fn without_a_route_or_with_fetch_off_the_agent_is_told_to_list_first() {
    let server = Server::new(&["stripe_refund_charge"]);
    let mut off = env_for(&server, r#"{"catalog":{"fetch":false}}"#);
    let err = search(&mut off, head("", &[])).unwrap_err();
    assert!(err.contains("call tools/list once"), "{err}");
    let mut no_route = env_for(&server, "");
    no_route.route = None;
    assert!(search(&mut no_route, head("", &[]))
        .unwrap_err()
        .contains("call tools/list once"));
    assert!(server.seen.borrow().is_empty());
}

#[test]
fn one_worker_fetches_while_another_waits_for_it() {
    let server = Server::new(&["stripe_refund_charge", "github_get_issue"]);
    let host = Rc::new(fresh_host());
    let mut a = env_on(&server, "", Rc::clone(&host));
    let mut b = env_on(&server, "", Rc::clone(&host));
    let (mut sa, first) = a.start(head("", &[]), SEARCH);
    let (_sb, second) = b.start(head("", &[]), SEARCH);
    // The second worker found the first one's fetch under way: it waits for it.
    assert!(b.root.has_waiting());
    let namespace = b.namespace.clone();
    assert!(!b.root.plugin.fetch_settled(host.as_ref(), &namespace));
    a.answer(Some(&mut sa));
    assert!(host.stream(first).reply.is_some());
    assert!(b.root.plugin.fetch_settled(host.as_ref(), &namespace));
    assert!(host.stream(second).reply.is_none());
    host.enter(0);
    b.root.resume_waiting(host.as_ref());
    let reply = host
        .stream(second)
        .reply
        .expect("answered once the fetch ended");
    let v: Value = serde_json::from_slice(&reply.body).unwrap();
    assert!(v["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("stripe_refund_charge"));
    assert_eq!(
        methods(&server)
            .iter()
            .filter(|m| *m == "initialize")
            .count(),
        1
    );
}

#[test]
fn list_changed_on_a_passing_stream_makes_the_tick_refresh_and_removed_tools_go() {
    let server = Server::new(&["stripe_refund_charge", "github_get_issue"]);
    let mut env = env_for(&server, "");
    search(&mut env, head("", &[])).unwrap();
    *server.tools.borrow_mut() = vec!["square_refund_payment", "github_get_issue"];
    // The GET stream carries the notification; the filter watches it and passes it unchanged.
    let get = RequestHead {
        method: "GET".into(),
        ..head("", &[("mcp-session-id", "caller-1")])
    };
    let out = exchange(
        &mut env,
        get,
        b"",
        (
            "200",
            "text/event-stream",
            &[&LIST_CHANGED[..20], &LIST_CHANGED[20..]],
        ),
    );
    assert_eq!(out.body(), LIST_CHANGED);
    assert!(env.plugin_env_meta("upstream").stale);
    // Still the old catalog until the tick (stale while revalidate)...
    assert_eq!(
        search(&mut env, head("", &[])).unwrap()[0],
        "stripe_refund_charge"
    );
    // ... and until `catalog.min_refresh_interval` (5 s) has passed since the last fetch.
    env.host.clock_ms.set(env.host.clock_ms.get() + 4_000);
    env.root.plugin.on_tick(env.host.as_ref());
    assert!(env.serve_fetches().is_empty(), "refreshed within 5 s");
    env.host.clock_ms.set(env.host.clock_ms.get() + 1_000);
    env.root.plugin.on_tick(env.host.as_ref());
    env.serve_fetches();
    let found = search(&mut env, head("", &[])).unwrap();
    assert_eq!(found[0], "square_refund_payment");
    assert!(!found.contains(&"stripe_refund_charge".to_string()));
}

#[test]
fn without_a_notification_a_catalog_older_than_max_age_is_refreshed() {
    let server = Server::new(&["stripe_refund_charge"]);
    let mut env = env_for(&server, r#"{"catalog":{"max_age":"60s"}}"#);
    search(&mut env, head("", &[])).unwrap();
    *server.tools.borrow_mut() = vec!["square_refund_payment"];
    env.host.clock_ms.set(env.host.clock_ms.get() + 30_000);
    env.root.plugin.on_tick(env.host.as_ref());
    assert!(env.serve_fetches().is_empty(), "not due yet");
    env.host.clock_ms.set(env.host.clock_ms.get() + 31_000);
    env.root.plugin.on_tick(env.host.as_ref());
    assert_eq!(env.serve_fetches().len(), 1);
    assert_eq!(
        search(&mut env, head("", &[])).unwrap(),
        ["square_refund_payment"]
    );
    // The background refresh carries no caller's credentials.
    let seen = server.seen.borrow();
    assert!(seen
        .iter()
        .skip(5)
        .all(|c| call_header(c, "authorization").is_none()));
}

/// Envoy's main thread has a VM that never gets a stream: it does no background work, which
/// would hold up xDS and the admin API there.
#[test]
fn only_a_vm_that_serves_streams_refreshes_in_the_background() {
    let server = Server::new(&["stripe_refund_charge"]);
    let mut worker = env_for(&server, r#"{"catalog":{"max_age":"60s"}}"#);
    search(&mut worker, head("", &[])).unwrap();
    worker
        .host
        .clock_ms
        .set(worker.host.clock_ms.get() + 61_000);
    let main_thread = mcp_tool_search_core::Plugin::new(worker.config.clone(), "main".into());
    main_thread.on_tick(worker.host.as_ref());
    assert!(
        worker.host.take_calls().is_empty(),
        "the main thread's VM fetched"
    );
    main_thread.stream_started();
    main_thread.on_tick(worker.host.as_ref());
    assert_eq!(worker.host.take_calls().len(), 1, "a serving VM refreshes");
}

#[test]
fn the_http_endpoint_fetches_on_a_fresh_filter_without_forwarding_its_callers_headers() {
    let server = Server::new(&["stripe_refund_charge"]);
    let mut env = env_for(&server, "");
    let h = RequestHead {
        path: "/mcp/search".into(),
        ..head("", &[("authorization", "Bearer from-http")])
    };
    let out = exchange(&mut env, h, br#"{"query":"refund"}"#, ("200", "", &[]));
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(v["tools"][0]["name"], "stripe_refund_charge", "{v}");
    assert!(server
        .seen
        .borrow()
        .iter()
        .all(|c| call_header(c, "authorization").is_none()));
}

#[test]
fn only_this_envoys_secret_marks_a_fetch_the_filter_lets_through_untouched() {
    let server = Server::new(&["stripe_refund_charge"]);
    let mut env = env_for(
        &server,
        r#"{"catalog":{"cluster":"loopback","loopback":true}}"#,
    );
    install_fetch_secret(env.host.as_ref(), [7; 16]);
    let secret = fetch_secret(env.host.as_ref()).unwrap();
    // Fetches go through the configured cluster, with the marker.
    search(&mut env, head("", &[])).unwrap();
    {
        let seen = server.seen.borrow();
        assert_eq!(seen[0].cluster, "loopback");
        assert_eq!(
            call_header(&seen[0], "x-mcp-tool-search-fetch"),
            Some(secret.clone())
        );
    }
    let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let upstream = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","inputSchema":{"type":"object"}}]}}"#;
    let own = exchange(
        &mut env,
        head("", &[("x-mcp-tool-search-fetch", &secret)]),
        list,
        ("200", "application/json", &[upstream]),
    );
    assert_eq!(own.body(), upstream, "the own fetch sees the list as sent");
    let forged = exchange(
        &mut env,
        head("", &[("x-mcp-tool-search-fetch", &"0".repeat(32))]),
        list,
        ("200", "application/json", &[upstream]),
    );
    assert_ne!(
        forged.body(),
        upstream,
        "a forged marker is an ordinary list"
    );
    assert_eq!(env.count(Event::ListRewritten), 1);
}

/// A list shaped per caller: one more tool for each of Alice and Bob (`Server::private`).
const ALICE_AND_BOB: [(&str, &str); 2] = [
    ("Bearer alice", "stripe_refund_charge"),
    ("Bearer bob", "square_refund_payment"),
];

/// A request with the caller's `authorization`.
fn bearer(credential: &str) -> RequestHead {
    head("", &[("authorization", credential)])
}

#[test]
fn a_private_list_is_kept_per_credential_and_never_searched_for_another_caller() {
    let server = Server::new(&["github_get_issue"]);
    *server.private.borrow_mut() = ALICE_AND_BOB.to_vec();
    let mut env = env_for(&server, "");
    let (alice, bob) = (|| bearer("Bearer alice"), || bearer("Bearer bob"));
    assert_eq!(search(&mut env, alice()).unwrap(), ["stripe_refund_charge"]);
    // Bob's first search fetches with his credentials: Alice's list is not his.
    let found = search(&mut env, bob()).unwrap();
    assert_eq!(found, ["square_refund_payment"]);
    // A caller without credentials gets neither.
    let anonymous = search(&mut env, head("", &[])).unwrap();
    assert!(
        !anonymous.iter().any(|n| n.contains("refund")),
        "{anonymous:?}"
    );
    assert_eq!(search(&mut env, alice()).unwrap(), ["stripe_refund_charge"]);
    assert_eq!(env.host.counter("catalog_fetches.ok"), 3);
    // Lists passing through are kept per credential the same way.
    let carol_list = br#"{"jsonrpc":"2.0","id":1,"result":{"cacheScope":"private","tools":[{"name":"carol_refund_tool","description":"refund a charge for carol","inputSchema":{"type":"object"}}]}}"#;
    let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    exchange(
        &mut env,
        head("", &[("authorization", "Bearer carol")]),
        list,
        ("200", "application/json", &[carol_list]),
    );
    assert_eq!(
        search(&mut env, head("", &[("authorization", "Bearer carol")])).unwrap(),
        ["carol_refund_tool"]
    );
    assert_eq!(search(&mut env, bob()).unwrap(), ["square_refund_payment"]);
}

/// What a stream learns of the shared catalogs lasts one callback: two callers whose lists the
/// server marks private, their callbacks interleaved on one worker (Alice's headers, Bob's
/// headers, Bob's body, Alice's body), each searches only the catalog of their own credentials.
#[test]
fn interleaved_callers_on_one_worker_each_search_only_their_own_private_catalog() {
    let server = Server::new(&["github_get_issue"]);
    *server.private.borrow_mut() = ALICE_AND_BOB.to_vec();
    let mut env = env_for(&server, "");
    let (alice, bob) = (|| bearer("Bearer alice"), || bearer("Bearer bob"));
    assert_eq!(search(&mut env, alice()).unwrap(), ["stripe_refund_charge"]);
    assert_eq!(search(&mut env, bob()).unwrap(), ["square_refund_payment"]);
    let names = |env: &TestEnv, id: u32| {
        let reply = env.host.stream(id).reply.expect("answered here");
        found(&Outcome::Local {
            status: reply.status,
            headers: reply.headers,
            body: reply.body,
        })
        .unwrap()
    };
    for _ in 0..2 {
        let (mut a, ida) = env.start_headers(alice(), SEARCH);
        let (mut b, idb) = env.start_headers(bob(), SEARCH);
        env.send_body(&mut b, idb, SEARCH);
        env.send_body(&mut a, ida, SEARCH);
        assert_eq!(names(&env, idb), ["square_refund_payment"]);
        assert_eq!(names(&env, ida), ["stripe_refund_charge"]);
    }
    assert_eq!(env.host.counter("catalog_fetches.ok"), 2, "no fetch more");
}

/// A server that starts shaping its lists per caller: once another worker learned a list marked
/// `cacheScope: "private"`, this worker's next search for Bob is answered from Bob's own list,
/// never from the shared catalog this worker searched a moment before (nothing a worker read
/// of the shared data outlives the callback that read it).
#[test]
fn a_list_turned_private_on_another_worker_is_seen_by_the_next_search_here() {
    let server = Server::new(&["github_get_issue", "stripe_refund_charge"]);
    let host = Rc::new(fresh_host());
    let mut here = env_on(&server, "", Rc::clone(&host));
    let mut other = env_on(&server, "", Rc::clone(&host));
    let bob = || bearer("Bearer bob");
    assert_eq!(search(&mut here, bob()).unwrap(), ["stripe_refund_charge"]);
    *server.tools.borrow_mut() = vec!["github_get_issue"];
    *server.private.borrow_mut() = ALICE_AND_BOB.to_vec();
    let alice_list = br#"{"jsonrpc":"2.0","id":1,"result":{"cacheScope":"private","tools":[{"name":"stripe_refund_charge","description":"refund a charge","inputSchema":{"type":"object"}}]}}"#;
    exchange(
        &mut other,
        bearer("Bearer alice"),
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        ("200", "application/json", &[alice_list]),
    );
    assert_eq!(search(&mut here, bob()).unwrap(), ["square_refund_payment"]);
}

/// Issue 30, contract D: under a policy of ours too, a list the server marks private is kept
/// per credential, and the policy filters that credential's catalog.
#[test]
fn under_a_policy_a_private_list_is_still_kept_per_credential_and_filtered() {
    let server = Server::new(&["github_get_issue"]);
    *server.private.borrow_mut() = vec![("Bearer alice", "stripe_refund_charge")];
    let config = r#"{"authorization":{"identity":{"source":"header","header":"x-roles"},
        "rules":[{"claim":"roles","values":["billing"],"tools":["stripe_*"]}],"default":"allow"}}"#;
    let mut env = env_for(&server, config);
    let h = head(
        config,
        &[("authorization", "Bearer alice"), ("x-roles", "billing")],
    );
    assert_eq!(search(&mut env, h).unwrap(), ["stripe_refund_charge"]);
    assert!(env.plugin_env_meta("upstream").private);
    // Bob has the same role and another credential: Alice's list is not his.
    let h = head(
        config,
        &[("authorization", "Bearer bob"), ("x-roles", "billing")],
    );
    let found = search(&mut env, h).unwrap();
    assert!(
        !found.contains(&"stripe_refund_charge".to_string()),
        "{found:?}"
    );
}

/// One worker's view of the shared data, which lets another worker's fetch end at the worst
/// moment: between this worker reading the meta (a refresh is due) and taking the lease.
struct Interleaved<'a> {
    host: &'a MemoryHost,
    before_lease: RefCell<Option<Box<dyn FnOnce() + 'a>>>,
}

impl mcp_tool_search_core::SharedData for Interleaved<'_> {
    fn get(
        &self,
        key: &str,
    ) -> Result<(Option<Vec<u8>>, Option<u32>), mcp_tool_search_core::StoreError> {
        if key.ends_with(mcp_tool_search_core::keys::FETCH_LEASE) {
            if let Some(other_worker) = self.before_lease.borrow_mut().take() {
                other_worker();
            }
        }
        self.host.get(key)
    }
    fn set(
        &self,
        key: &str,
        value: &[u8],
        cas: Option<u32>,
    ) -> Result<(), mcp_tool_search_core::StoreError> {
        self.host.set(key, value, cas)
    }
}

mcp_tool_search_core::host_beside_shared_data!(Interleaved<'_>, host);

/// A `list_changed` makes two workers' ticks find the catalog due. One refreshes it; the other
/// read the meta before that refresh ended and takes the lease after it: it must see the
/// refresh and not fetch the same list again.
#[test]
fn a_refresh_another_worker_just_finished_is_not_repeated() {
    let server = Server::new(&["stripe_refund_charge", "github_get_issue"]);
    let host = Rc::new(fresh_host());
    let mut a = env_on(&server, "", Rc::clone(&host));
    let b = env_on(&server, "", Rc::clone(&host));
    search(&mut a, head("", &[])).unwrap();
    let lists = |server: &Server| {
        methods(server)
            .iter()
            .filter(|m| *m == "tools/list")
            .count()
    };
    let listed = lists(&server);
    *server.tools.borrow_mut() = vec!["square_refund_payment", "github_get_issue"];
    // The server announced a change (what a `list_changed` notification does to the catalog).
    mcp_tool_search_core::update_meta(host.as_ref(), &a.namespace, |meta| {
        meta.stale = true;
        true
    })
    .unwrap();
    host.clock_ms.set(host.clock_ms.get() + 5_000);

    let a = RefCell::new(a);
    let b_view = Interleaved {
        host: host.as_ref(),
        before_lease: RefCell::new(Some(Box::new(|| {
            let mut a = a.borrow_mut();
            a.root.plugin.on_tick(host.as_ref());
            assert_eq!(a.serve_fetches().len(), 1, "the first worker refreshes");
        }))),
    };
    b.root.plugin.on_tick(&b_view);
    assert!(
        b_view.before_lease.borrow().is_none(),
        "the interleaving ran"
    );
    assert!(
        host.take_calls().is_empty(),
        "the second worker fetched again"
    );
    assert_eq!(lists(&server), listed + 1);
    assert_eq!(
        search(&mut a.borrow_mut(), head("", &[])).unwrap()[0],
        "square_refund_payment"
    );
}

/// The filter's own session lists the prompts the server declares with its tools: a prompt
/// search on a fresh worker finds them; a server that declares none is not asked.
#[test]
fn a_fetch_brings_the_declared_prompts_with_the_tools() {
    let server = Server::new(&["stripe_refund_charge"]);
    server.prompts.borrow_mut().push("weekly_report");
    let mut env = env_for(&server, "");
    let body = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"weekly report","type":"prompt"}}}"#;
    let out = exchange(
        &mut env,
        post("/mcp"),
        body,
        ("200", "application/json", &[]),
    );
    let (reply, parsed) = local_result(&out);
    assert_eq!(parsed[0]["type"], "prompt", "{reply}");
    assert_eq!(parsed[0]["definition"]["name"], "weekly_report", "{reply}");
    assert_eq!(
        methods(&server),
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "prompts/list",
            "DELETE"
        ]
    );

    let tools_only = Server::new(&["stripe_refund_charge"]);
    let mut env = env_for(&tools_only, "");
    search(&mut env, post("/mcp")).unwrap();
    assert_eq!(
        methods(&tools_only),
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "DELETE"
        ]
    );
}

/// A replica that learned the tools from a client's list never fetched, so it knows no
/// prompts: a search for prompts fetches the catalog (prompts with it) and answers from it in
/// the same request; a kind the server does not have is then known empty, and searching it
/// again fetches nothing.
#[test]
fn a_search_for_a_kind_never_seen_fetches_it_and_answers_in_the_same_request() {
    let server = Server::new(&["stripe_refund_charge"]);
    server.prompts.borrow_mut().push("weekly_report");
    let mut env = env_for(&server, "");
    let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let tools = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"stripe_refund_charge","description":"Refund a charge"}]}}"#;
    answered(&mut env, list, "application/json", tools);
    assert!(methods(&server).is_empty(), "the list taught the tools");
    search(&mut env, post("/mcp")).unwrap();
    assert!(methods(&server).is_empty(), "tools are known: no fetch");

    let prompt = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"weekly report","type":"prompt"}}}"#;
    let out = exchange(
        &mut env,
        post("/mcp"),
        prompt,
        ("200", "application/json", &[]),
    );
    let (reply, parsed) = local_result(&out);
    assert_eq!(parsed[0]["definition"]["name"], "weekly_report", "{reply}");
    assert_eq!(lists(&server), 1);
    assert!(methods(&server).contains(&"prompts/list".to_string()));

    // Resources: the server has none (it refuses the lists); known empty since that fetch.
    let resource = br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"weekly report","type":"resource"}}}"#;
    let out = exchange(
        &mut env,
        post("/mcp"),
        resource,
        ("200", "application/json", &[]),
    );
    let (reply, parsed) = local_result(&out);
    assert_eq!(parsed, json!([]), "{reply}");
    assert_eq!(lists(&server), 1, "no second fetch: {:?}", methods(&server));
}

/// How many `tools/list` the server answered.
fn lists(server: &Server) -> usize {
    methods(server)
        .iter()
        .filter(|m| *m == "tools/list")
        .count()
}

/// One root tick, its fetches answered: how many refreshes ended.
fn tick(env: &mut TestEnv) -> usize {
    env.root.plugin.on_tick(env.host.as_ref());
    env.serve_fetches().len()
}

/// `body` passes through as the upstream's answer to a client's POST of `request`.
fn answered(env: &mut TestEnv, request: &[u8], content_type: &str, body: &[u8]) {
    let h = head("", &[("mcp-session-id", "caller-1")]);
    exchange(env, h, request, ("200", content_type, &[body]));
}

/// Issue 30, class 7. A client sends a `ping` whose id is the notification's method; the server
/// echoes the id in its answer. Only a server notification (a message with that `method` and no
/// `id`) is a list change: no answer a client can shape marks the catalog stale, and the tick
/// does not refetch the catalog however often the client asks.
#[test]
fn a_client_echoing_the_method_as_an_id_does_not_make_the_filter_refetch() {
    let server = Server::new(&["stripe_refund_charge"]);
    let mut env = env_for(&server, "");
    search(&mut env, head("", &[])).unwrap();
    let listed = lists(&server);
    let ping = br#"{"jsonrpc":"2.0","id":"notifications/tools/list_changed","method":"ping"}"#;
    let answers: &[(&str, &[u8])] = &[
        // The server's answer to the ping, on SSE (the Python SDK) and JSON.
        (
            "text/event-stream",
            b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"notifications/tools/list_changed\",\"result\":{}}\n\n",
        ),
        (
            "application/json",
            br#"{"jsonrpc":"2.0","id":"notifications/tools/list_changed","result":{}}"#,
        ),
        // A request with that method has an id: it is not the notification.
        (
            "text/event-stream",
            b"data: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"notifications/tools/list_changed\"}\n\n",
        ),
        // The method named twice: a reader may take either.
        (
            "text/event-stream",
            b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"method\":\"ping\"}\n\n",
        ),
        // In a tool's result (a client chooses what an echo tool returns).
        (
            "text/event-stream",
            b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"structuredContent\":{\"method\":\"notifications/tools/list_changed\"}}}\n\n",
        ),
        // In a comment or an `id:` field: no client reads those as a message.
        (
            "text/event-stream",
            b": \"notifications/tools/list_changed\"\nid: \"notifications/tools/list_changed\"\ndata: {}\n\n",
        ),
        // An event of another type: the SDKs' clients skip it.
        (
            "text/event-stream",
            b"event: other\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
        ),
        // An event the stream ends before completing is never dispatched (WHATWG HTML 9.2.6).
        (
            "text/event-stream",
            b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n",
        ),
    ];
    for (i, (content_type, body)) in answers.iter().enumerate() {
        // Well past any interval between refreshes each time.
        env.host.clock_ms.set(env.host.clock_ms.get() + 10_000);
        answered(&mut env, ping, content_type, body);
        assert!(
            !env.plugin_env_meta("upstream").stale,
            "answer {i} marked the catalog stale"
        );
        assert_eq!(tick(&mut env), 0, "answer {i} made the tick refetch");
    }
    assert_eq!(lists(&server), listed);
}

/// A notification in the forms servers send it: CRLF lines, split anywhere, with `params`,
/// several data lines, among other events, or as an element of a (2025-03-26) batch.
#[test]
fn a_server_notification_marks_the_catalog_stale_in_every_form() {
    let forms: &[&[u8]] = &[
        LIST_CHANGED,
        b"event: message\r\nid: 4\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\r\n\r\n",
        b"data: {\"method\":\"notifications/tools/list_changed\",\"params\":{\"_meta\":{\"k\":1}},\"jsonrpc\":\"2.0\"}\r\r",
        b": ping\n\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"method\":\"notifications/tools/list_changed\"}\n\n",
        b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\ndata:{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
        b"data: [{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}},{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}]\n\n",
    ];
    for (i, form) in forms.iter().enumerate() {
        let server = Server::new(&["stripe_refund_charge"]);
        let mut env = env_for(&server, "");
        search(&mut env, head("", &[])).unwrap();
        let get = RequestHead {
            method: "GET".into(),
            ..head("", &[("mcp-session-id", "caller-1")])
        };
        let chunks: Vec<&[u8]> = form.chunks(7).collect();
        exchange(&mut env, get, b"", ("200", "text/event-stream", &chunks));
        assert!(env.plugin_env_meta("upstream").stale, "form {i}");
        env.host.clock_ms.set(env.host.clock_ms.get() + 5_000);
        assert_eq!(tick(&mut env), 1, "form {i}");
    }
}

/// A 2026-07-28 client opens a `subscriptions/listen` stream (a POST, spec 2026-07-28 "Subscriptions")
/// instead of the GET stream; the server's first event acknowledges the filter, later ones carry
/// notifications tagged with the subscription. The list change on that stream marks the
/// catalog stale and the next tick refreshes it, with or without a policy guarding the
/// answers; the stream reaches the client unchanged.
#[test]
fn a_list_change_on_a_subscriptions_listen_stream_refreshes_the_catalog() {
    let listen = br#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"notifications":{"toolsListChanged":true}}}"#;
    let stream: &[u8] = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"notifications\":{\"toolsListChanged\":true}}}\n\n\
event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":\"1\"}}}\n\n";
    let policy = r#"{"authorization":{"identity":{"source":"header","header":"x-roles"},
        "rules":[{"claim":"roles","values":["billing"],"tools":["*"]}],"default":"deny"}}"#;
    for config in ["", policy] {
        let server = Server::new(&["stripe_refund_charge"]);
        let mut env = env_for(&server, config);
        let caller = [
            ("x-roles", "billing"),
            ("mcp-protocol-version", "2026-07-28"),
        ];
        let listener = [caller[0], caller[1], ("mcp-method", "subscriptions/listen")];
        search(&mut env, head(config, &caller)).unwrap();
        *server.tools.borrow_mut() = vec!["square_refund_payment"];
        let chunks: Vec<&[u8]> = stream.chunks(11).collect();
        let out = exchange(
            &mut env,
            head(config, &listener),
            listen,
            ("200", "text/event-stream", &chunks),
        );
        assert_eq!(out.body(), stream, "config {config:?}");
        assert!(env.plugin_env_meta("upstream").stale, "config {config:?}");
        env.host.clock_ms.set(env.host.clock_ms.get() + 5_000);
        assert_eq!(tick(&mut env), 1, "config {config:?}");
        let found = search(&mut env, head(config, &caller)).unwrap();
        assert_eq!(found, ["square_refund_payment"], "config {config:?}");
    }
}

/// A server announcing changes in a burst (or one a client can make announce them, by changing
/// what it lists for it) costs one catalog fetch per `catalog.min_refresh_interval` (5 s by
/// default), the interval counted from the last fetch.
#[test]
fn notifications_within_the_interval_give_one_refresh() {
    let server = Server::new(&["stripe_refund_charge"]);
    let mut env = env_for(&server, "");
    search(&mut env, head("", &[])).unwrap();
    let notify = |env: &mut TestEnv| {
        let get = RequestHead {
            method: "GET".into(),
            ..head("", &[("mcp-session-id", "caller-1")])
        };
        exchange(env, get, b"", ("200", "text/event-stream", &[LIST_CHANGED]));
    };
    let start = env.host.clock_ms.get();
    let at = |env: &mut TestEnv, ms: u64| env.host.clock_ms.set(start + ms);
    at(&mut env, 6_000);
    notify(&mut env);
    assert_eq!(tick(&mut env), 1, "the first notification refreshes");
    let mut refreshes = 0;
    for ms in (7_000..11_000).step_by(500) {
        at(&mut env, ms);
        notify(&mut env);
        refreshes += tick(&mut env);
    }
    assert_eq!(refreshes, 0, "refreshed again within 5 s");
    at(&mut env, 11_000);
    assert_eq!(tick(&mut env), 1, "the last notification is not lost");
    assert_eq!(tick(&mut env), 0);
    assert_eq!(lists(&server), 3);

    // A configured interval.
    let server = Server::new(&["stripe_refund_charge"]);
    let config = r#"{"catalog":{"min_refresh_interval":"30s"}}"#;
    let mut env = env_for(&server, config);
    search(&mut env, head(config, &[])).unwrap();
    let start = env.host.clock_ms.get();
    notify(&mut env);
    env.host.clock_ms.set(start + 29_000);
    assert_eq!(tick(&mut env), 0);
    env.host.clock_ms.set(start + 30_000);
    assert_eq!(tick(&mut env), 1);
}

/// `catalog.max_age` shorter than the default interval is honoured (the interval defaults to
/// the shorter of 5 s and `max_age`, and is never under 1 s).
#[test]
fn a_short_max_age_still_refreshes_at_that_age() {
    let server = Server::new(&["stripe_refund_charge"]);
    let config = r#"{"catalog":{"max_age":"2s"}}"#;
    let mut env = env_for(&server, config);
    search(&mut env, head(config, &[])).unwrap();
    let start = env.host.clock_ms.get();
    env.host.clock_ms.set(start + 1_900);
    assert_eq!(tick(&mut env), 0);
    env.host.clock_ms.set(start + 2_000);
    assert_eq!(tick(&mut env), 1);
}

/// `catalog.cluster` at an upstream (`loopback: false`): the fetches go there and never carry
/// this Envoy's fetch secret, neither on a miss nor in a background refresh.
#[test]
fn the_fetch_marker_is_never_sent_to_a_cluster_that_is_not_a_loopback() {
    let server = Server::new(&["stripe_refund_charge"]);
    let config = r#"{"catalog":{"cluster":"elsewhere","loopback":false,"max_age":"60s"}}"#;
    let mut env = env_for(&server, config);
    install_fetch_secret(env.host.as_ref(), [7; 16]);
    search(&mut env, head(config, &[])).unwrap();
    env.host.clock_ms.set(env.host.clock_ms.get() + 61_000);
    assert_eq!(tick(&mut env), 1);
    let seen = server.seen.borrow();
    assert!(seen.len() > 5, "a fetch and a refresh");
    for call in seen.iter() {
        assert_eq!(call.cluster, "elsewhere");
        assert_eq!(call_header(call, "x-mcp-tool-search-fetch"), None);
    }
}

#[test]
fn a_catalog_cluster_must_say_whether_it_is_a_loopback() {
    let err = |config: &str| {
        mcp_tool_search_core::Config::parse(config)
            .unwrap_err()
            .to_string()
    };
    let e = err(r#"{"catalog":{"cluster":"self"}}"#);
    assert!(
        e.contains("`catalog.loopback` is missing")
            && e.contains("\"loopback\": true")
            && e.contains("\"loopback\": false"),
        "{e}"
    );
    let e = err(r#"{"catalog":{"loopback":true}}"#);
    assert!(
        e.contains("`catalog.loopback`") && e.contains("`catalog.cluster`"),
        "{e}"
    );
    let e = err(r#"{"catalog":{"cluster":"self","loopback":"yes"}}"#);
    assert!(e.contains("`catalog.loopback` is \"yes\""), "{e}");
    let e = err(r#"{"catalog":{"min_refresh_interval":"0.5s"}}"#);
    assert!(e.contains("`catalog.min_refresh_interval`"), "{e}");
    for ok in [
        r#"{"catalog":{"cluster":"self","loopback":true}}"#,
        r#"{"catalog":{"cluster":"mcp","loopback":false}}"#,
        r#"{"catalog":{"min_refresh_interval":"10s"}}"#,
    ] {
        mcp_tool_search_core::Config::parse(ok).unwrap();
    }
}

/// A server's `ttlMs` shortens a catalog's lifetime (2026-07-28 "Caching"), to no less than
/// 10 s whatever it says, and never lengthens it past `catalog.max_age`.
#[test]
fn a_servers_ttl_shortens_a_catalogs_life_to_no_less_than_ten_seconds() {
    for (ttl, max_age, due_ms) in [
        (30_000, "300s", 30_000),
        (0, "300s", 10_000),
        (2_000, "300s", 10_000),
        (600_000, "60s", 60_000),
    ] {
        let server = Server::new(&["stripe_refund_charge"]);
        *server.ttl_ms.borrow_mut() = Some(ttl);
        let config = format!(r#"{{"catalog":{{"max_age":"{max_age}"}}}}"#);
        let mut env = env_for(&server, &config);
        search(&mut env, head(&config, &[])).unwrap();
        let start = env.host.clock_ms.get();
        env.host.clock_ms.set(start + due_ms - 100);
        assert_eq!(tick(&mut env), 0, "ttlMs {ttl}: refreshed early");
        env.host.clock_ms.set(start + due_ms);
        assert_eq!(
            tick(&mut env),
            1,
            "ttlMs {ttl}: not refreshed at {due_ms} ms"
        );
    }
}

/// A refresh that fails is retried no sooner than `catalog.min_refresh_interval` after the
/// attempt, then after a backoff that doubles per failure up to a minute, jittered by at most a
/// quarter; never twice a second. The server back, one refresh succeeds and the backoff ends.
#[test]
fn failed_refreshes_back_off_up_to_a_minute_and_recover() {
    let server = Server::new(&["stripe_refund_charge"]);
    let config = r#"{"catalog":{"max_age":"60s"}}"#;
    let mut env = env_for(&server, config);
    search(&mut env, head(config, &[])).unwrap();
    *server.down.borrow_mut() = Some("500");
    let start = env.host.clock_ms.get() + 60_000;
    let mut attempts = Vec::new();
    // Every root tick (200 ms) for five minutes past the catalog's age.
    for t in (0..300_000).step_by(200) {
        env.host.clock_ms.set(start + t);
        let before = server.seen.borrow().len();
        env.root.plugin.on_tick(env.host.as_ref());
        env.serve_fetches();
        if server.seen.borrow().len() > before {
            attempts.push(t);
        }
    }
    let gaps: Vec<u64> = attempts.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(attempts[0], 0, "the due refresh starts at once");
    // Bases 5 s (the interval), doubling per failure: 10 s, 20 s, 40 s, then the one-minute cap.
    let bases = [5_000u64, 10_000, 20_000, 40_000, 60_000, 60_000, 60_000];
    assert!(gaps.len() >= bases.len(), "attempts at {attempts:?}");
    for (i, (gap, base)) in gaps.iter().zip(bases).enumerate() {
        assert!(
            *gap >= base && *gap <= base + base / 4 + 200,
            "retry {i} after {gap} ms, base {base} ms: attempts at {attempts:?}"
        );
    }
    assert!(gaps.iter().all(|g| *g >= 1_000));
    assert_eq!(
        health(&mut env)["catalogs"]["upstream"]["failures"],
        json!(attempts.len())
    );
    // Back: the next attempt succeeds, and the one after waits only for the catalog's age.
    *server.down.borrow_mut() = None;
    *server.tools.borrow_mut() = vec!["square_refund_payment"];
    let back = start + 300_000;
    let mut refreshed_at = None;
    for t in (0..70_000).step_by(200) {
        env.host.clock_ms.set(back + t);
        if tick(&mut env) == 1 {
            refreshed_at = Some(t);
            break;
        }
    }
    assert!(
        refreshed_at.is_some(),
        "never refreshed after the server came back"
    );
    assert_eq!(
        search(&mut env, head(config, &[])).unwrap(),
        ["square_refund_payment"]
    );
    assert_eq!(
        health(&mut env)["catalogs"]["upstream"]["failures"],
        json!(null)
    );
}

/// `catalog.headers` go on every fetch, on a miss and in the background; `forward_headers`
/// (here not `authorization`) copies only the named caller headers, only into a fetch made for
/// that caller; `catalog.authority` is the `:authority` of every fetch.
#[test]
fn configured_headers_forwarded_headers_and_authority_shape_every_fetch() {
    let server = Server::new(&["stripe_refund_charge"]);
    let config = r#"{"catalog":{"headers":{"X-Service-Key":"svc-1"},"forward_headers":["x-tenant"],
        "authority":"mcp.internal","max_age":"60s"}}"#;
    let mut env = env_for(&server, config);
    search(
        &mut env,
        head(
            config,
            &[("authorization", "Bearer caller"), ("x-tenant", "t-7")],
        ),
    )
    .unwrap();
    let on_miss = server.seen.borrow().len();
    assert!(on_miss >= 3, "initialize, initialized, a page");
    env.host.clock_ms.set(env.host.clock_ms.get() + 61_000);
    assert_eq!(tick(&mut env), 1);
    let seen = server.seen.borrow();
    assert!(seen.len() > on_miss, "a background refresh");
    for (i, call) in seen.iter().enumerate() {
        let on = if i < on_miss { "miss" } else { "refresh" };
        assert_eq!(
            call_header(call, ":authority").as_deref(),
            Some("mcp.internal"),
            "{on}"
        );
        assert_eq!(
            call_header(call, "x-service-key").as_deref(),
            Some("svc-1"),
            "{on}"
        );
        assert_eq!(
            call_header(call, "authorization"),
            None,
            "{on}: not forwarded"
        );
        let tenant = call_header(call, "x-tenant");
        if i < on_miss {
            assert_eq!(tenant.as_deref(), Some("t-7"), "the caller's, on its miss");
        } else {
            assert_eq!(tenant, None, "no caller's header in the background");
        }
    }
}

/// The fetch marker never reaches an upstream from a client's request: this Envoy's own
/// secret (the filter's fetch coming back through the loopback), a forged one or an empty
/// one, on a list, a call and a GET, with a loopback configured or not.
#[test]
fn the_fetch_marker_is_removed_from_every_request_that_goes_upstream() {
    for config in [
        r#"{"catalog":{"cluster":"loopback","loopback":true}}"#,
        "{}",
    ] {
        let server = Server::new(&["stripe_refund_charge"]);
        let mut env = env_for(&server, config);
        install_fetch_secret(env.host.as_ref(), [7; 16]);
        let secret = fetch_secret(env.host.as_ref()).unwrap();
        let requests: [(&str, &[u8]); 3] = [
            ("POST", br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            (
                "POST",
                br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"stripe_refund_charge"}}"#,
            ),
            ("GET", b""),
        ];
        for marker in [secret.as_str(), &"0".repeat(32), ""] {
            for (method, body) in requests {
                let h = RequestHead {
                    method: method.into(),
                    ..head(config, &[("x-mcp-tool-search-fetch", marker)])
                };
                let request = mcp_tool_search_core::Request {
                    headers: env.request_headers(&h, body),
                    chunks: if body.is_empty() {
                        vec![]
                    } else {
                        vec![body.to_vec()]
                    },
                    trailers: false,
                };
                assert!(request
                    .headers
                    .iter()
                    .any(|(k, _)| k == "x-mcp-tool-search-fetch"));
                let response = upstream_response(
                    "200",
                    "application/json",
                    &[br#"{"jsonrpc":"2.0","id":1,"result":{}}"#],
                );
                let out = exchange_raw(&mut env, &request, &response);
                let mcp_tool_search_core::Exchanged::Upstream { sent_headers, .. } = out else {
                    panic!("{config} {method} {marker:?}: {out:?}")
                };
                assert!(
                    sent_headers
                        .iter()
                        .all(|(k, _)| !k.eq_ignore_ascii_case("x-mcp-tool-search-fetch")),
                    "{config} {method} {marker:?}: {sent_headers:?}"
                );
            }
        }
    }
}

/// `catalog.scope: "credential"`: a server that shapes its lists per caller without saying so
/// (a 2025-era server cannot) has every list kept per credential, fetched or passing through,
/// as if it were marked private; shared (the default), the first caller's list is everyone's,
/// which is why the option exists.
#[test]
fn catalog_scope_credential_keeps_every_list_per_caller() {
    let shaped = || {
        let server = Server::new(&["github_get_issue"]);
        *server.private.borrow_mut() = vec![
            ("Bearer alice", "stripe_refund_charge"),
            ("Bearer bob", "square_refund_payment"),
        ];
        *server.unmarked.borrow_mut() = true;
        server
    };
    let alice = |config: &str| head(config, &[("authorization", "Bearer alice")]);
    let bob = |config: &str| head(config, &[("authorization", "Bearer bob")]);

    let server = shaped();
    let mut shared = env_for(&server, "");
    assert_eq!(
        search(&mut shared, alice("")).unwrap(),
        ["stripe_refund_charge"]
    );
    assert_eq!(
        search(&mut shared, bob("")).unwrap(),
        ["stripe_refund_charge"],
        "shared: Alice's list answers Bob"
    );

    let config = r#"{"catalog":{"scope":"credential"}}"#;
    let server = shaped();
    let mut env = env_for(&server, config);
    assert_eq!(
        search(&mut env, alice(config)).unwrap(),
        ["stripe_refund_charge"]
    );
    assert_eq!(
        search(&mut env, bob(config)).unwrap(),
        ["square_refund_payment"]
    );
    let anonymous = search(&mut env, head(config, &[])).unwrap();
    assert!(
        !anonymous.iter().any(|n| n.contains("refund")),
        "{anonymous:?}"
    );
    assert_eq!(env.host.counter("catalog_fetches.ok"), 3);
    // A list passing through, unmarked, is its caller's only.
    let carol_list = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"carol_refund_tool","description":"refund a charge for carol","inputSchema":{"type":"object"}}]}}"#;
    let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let carol = || head(config, &[("authorization", "Bearer carol")]);
    exchange(
        &mut env,
        carol(),
        list,
        ("200", "application/json", &[carol_list]),
    );
    assert_eq!(search(&mut env, carol()).unwrap(), ["carol_refund_tool"]);
    assert_eq!(
        search(&mut env, bob(config)).unwrap(),
        ["square_refund_payment"]
    );
    assert_eq!(health(&mut env)["catalogs"]["upstream"]["private"], true);

    let e = mcp_tool_search_core::Config::parse(r#"{"catalog":{"scope":"user"}}"#)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`catalog.scope` is \"user\"") && e.contains("\"credential\""),
        "{e}"
    );
}
