//! The shared scenarios (`filter/core/tests/support/scenarios.rs`, natively in
//! `filter/core/tests/scenarios.rs`) against the built `.wasm` in host-shim, with the same
//! expected outputs, plus what only a host can show: what reaches the upstream, what is buffered,
//! the stats, a refused configuration, two workers sharing one catalog.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod shim_support;

use host_shim::{Host, HttpMessage, LogLevel, Outcome, ShimError, Vm};
use mcp_tool_search_core::{Event, Mirrored, PassReason, RequestHead};
use serde_json::Value;
use shim_support::native::scenarios as support_scenarios;
use shim_support::native::{self, TestEnv};
use shim_support::*;

crate::scenarios!(Both);

/// The `.wasm` driver of the shared scenarios: every exchange runs through the module and
/// natively, and the two must agree (outcome, upstream request, counts).
impl support_scenarios::Driver for Both {
    fn with_config(config: &str) -> Self {
        Both::new(config)
    }
    fn two_workers(config: &str) -> (Self, Self) {
        let host = std::rc::Rc::new(mcp_tool_search_core::MemoryHost::default());
        let first = ShimEnv::new(config);
        let second = ShimEnv::sharing(config, &first);
        (
            Both {
                shim: first,
                core: TestEnv::sharing(config, std::rc::Rc::clone(&host)),
            },
            Both {
                shim: second,
                core: TestEnv::sharing(config, host),
            },
        )
    }
    fn exchange(
        &mut self,
        head: RequestHead,
        request: &[u8],
        response: (&str, &str, &[&[u8]]),
    ) -> native::Outcome {
        Both::exchange(self, head, request, response)
    }
    fn count(&self, event: Event) -> u64 {
        Both::count(self, event)
    }
    fn events_total(&self) -> u64 {
        let native: u64 = self.core.events.iter().map(|e| e.stat().1).sum();
        // The events' counters (the namespace's counters and the histograms are not events).
        let shim: u64 = self
            .shim
            .stats()
            .iter()
            .filter(|(name, _)| mcp_tool_search_core::STATS.contains(&name.as_str()))
            .map(|(_, v)| *v)
            .sum();
        assert_eq!(shim, native, "{:?}", self.shim.stats());
        native
    }
}

const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
const TOOLS: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_weather","description":"Weather forecast for a city"},{"name":"stripe_refund_charge","description":"Refund a charge"},{"name":"slack_post_message","description":"Post a message to a Slack channel"}]}}"#;

/// A worker and the native core, fed the same exchanges: every output is compared.
struct Both {
    shim: ShimEnv,
    core: TestEnv,
}

impl Both {
    fn new(config: &str) -> Self {
        Both {
            shim: ShimEnv::new(config),
            core: TestEnv::new(config),
        }
    }

    fn exchange(
        &mut self,
        head: RequestHead,
        request: &[u8],
        response: (&str, &str, &[&[u8]]),
    ) -> native::Outcome {
        let want = native::exchange(&mut self.core, head.clone(), request, response);
        let sent = native::sent_upstream();
        let (status, content_type, chunks) = response;
        let (got, x) = exchange_full(
            &mut self.shim,
            &shim_support::request(&head, request),
            &shim_support::response(status, content_type, chunks),
        );
        // Each VM names its searches after itself (`search_id`): the rest must be the same.
        assert_eq!(
            unidentified(&got),
            unidentified(&want),
            "the .wasm and the native core disagree"
        );
        // And the upstream got the same request body (or none, for a local reply).
        match sent {
            Some(body) => assert_eq!(x.upstream.body(), body),
            None => assert!(!x.upstream.end_of_stream),
        }
        got
    }

    /// Both sides counted `event` the same number of times; returns it.
    fn count(&self, event: Event) -> u64 {
        let native = self.core.count(event) as u64;
        assert_eq!(self.shim.count(event), native, "{event:?}");
        native
    }
}

fn post(path: &str) -> RequestHead {
    native::post(path)
}

fn defs(reply: &Value) -> Value {
    serde_json::from_str(reply["result"]["content"][0]["text"].as_str().unwrap()).unwrap()
}

#[test]
fn non_mcp_traffic_get_streams_and_bodyless_requests_go_through_untouched() {
    let mut env = ShimEnv::new("{}");
    let sse = [
        "event: message\ndata: {}\n\n",
        ": ping\n\n",
        "event: message\ndata: {}\n\n",
    ];
    let cases = [
        HttpMessage::request("POST", "/other").body(LIST.to_vec()),
        HttpMessage::get("/mcp").header("accept", "text/event-stream"),
        HttpMessage::request("DELETE", "/mcp"),
        HttpMessage::request("POST", "/mcpx").body(LIST.to_vec()),
        HttpMessage::request("POST", "/mcp"),
    ];
    for case in cases {
        let req = case.header("accept-encoding", "gzip");
        let resp = HttpMessage::response(200)
            .header("content-type", "text/event-stream")
            .chunks(sse);
        let (out, x) = exchange_full(&mut env, &req, &resp);
        assert_eq!(
            out,
            native::Outcome::Upstream {
                body: sse.concat().into_bytes(),
                rewritten: false
            }
        );
        // The request went up as it came (accept-encoding included), the response came back
        // piece by piece as it was sent: nothing buffered.
        let mut sent = req.headers.clone();
        sent.retain(|(k, _)| k != "x-forwarded-proto" && k != "x-request-id");
        assert_eq!(upstream_headers(&x), sent, "{:?}", req.headers);
        assert_eq!(
            x.client.chunks,
            sse.iter()
                .map(|c| c.as_bytes().to_vec())
                .collect::<Vec<_>>()
        );
    }
    assert!(
        env.stats().iter().all(|(_, v)| *v == 0),
        "{:?}",
        env.stats()
    );
    // A query string, a trailing slash or a percent-encoded letter still name the MCP path
    // (as servers decode it): the list request goes up without compression.
    for path in ["/mcp?x=1", "/mcp/", "/%6dcp"] {
        let (_, x) = exchange_full(
            &mut env,
            &request(&post(path), LIST),
            &response("200", "application/json", &[TOOLS]),
        );
        assert_eq!(x.upstream.header("accept-encoding"), None, "{path}");
    }
    assert_eq!(env.count(Event::ListRewritten), 3);
}

#[test]
fn protocol_2026_headers_never_let_a_body_go_unread_when_request_headers_are_held() {
    let config = r#"{"hold_request_headers":true}"#;
    let host = Host::new();
    let mut env = ShimEnv::on(&host, options(config).allow_on_headers_stop_iteration(true));
    let modern = |method: &str, name: Option<&str>| RequestHead {
        mcp: Mirrored::of(Some(method), name, Some("2026-07-28")),
        ..post("/mcp")
    };
    let call = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"github_get_issue","arguments":{}}}"#;
    // Another tool's call: the headers wait for the body all the same (they are the client's
    // word, the body is what the server runs), then go up with compression kept.
    let (_, x) = exchange_full(
        &mut env,
        &request(&modern("tools/call", Some("github_get_issue")), call),
        &response("200", "application/json", &[b"{}"]),
    );
    assert_eq!(x.upstream.header("accept-encoding"), Some("gzip, deflate"));
    assert_eq!(x.upstream.body(), call.to_vec());
    assert!(
        x.events
            .iter()
            .any(|e| e.starts_with("proxy_on_request_headers") && e.ends_with("-> StopIteration")),
        "{:#?}",
        x.events
    );
    // A list: the headers wait for the body, then go up without accept-encoding.
    let (_, x) = exchange_full(
        &mut env,
        &request(&modern("tools/list", None), LIST),
        &response("200", "application/json", &[TOOLS]),
    );
    assert_eq!(x.upstream.header("accept-encoding"), None);
    assert!(
        x.events
            .iter()
            .any(|e| e.starts_with("proxy_on_request_headers") && e.ends_with("-> StopIteration")),
        "{:#?}",
        x.events
    );
    assert_eq!(env.count(Event::ListRewritten), 1);
    // A search held this way never reaches the upstream at all.
    let search = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"weather"}}}"#;
    let (out, x) = exchange_full(
        &mut env,
        &request(&modern("tools/call", Some("tool_search")), search),
        &HttpMessage::response(200),
    );
    assert!(matches!(out, native::Outcome::Local { status: 200, .. }));
    assert!(x.upstream.headers.is_none(), "{:?}", x.upstream);

    // Without Envoy's allow_on_headers_stop_iteration the held headers become
    // StopAllIteration: no body callback ever comes and the request hangs (as config.rs warns).
    let mut env = ShimEnv::on(&host, options(config));
    let x = env
        .vm
        .exchange(
            &request(&modern("tools/list", None), LIST),
            &response("200", "application/json", &[TOOLS]),
        )
        .unwrap();
    assert!(
        matches!(x.outcome(), Outcome::Stuck(ref why) if why.contains("StopAllIteration")),
        "{:?}",
        x.outcome()
    );
}

#[test]
fn oversized_bodies_pass_through() {
    let mut both = Both::new(r#"{"max_body_bytes":1024}"#);
    let big = format!(
        "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"tools\":[{{\"name\":\"a\",\"description\":\"{}\"}}]}}}}\n\n",
        "x".repeat(4000)
    );
    let chunks: Vec<&[u8]> = big.as_bytes().chunks(512).collect();
    let out = both.exchange(post("/mcp"), LIST, ("200", "text/event-stream", &chunks));
    assert_eq!(out.body(), big.as_bytes());
    assert_eq!(both.count(Event::PassedThrough(PassReason::TooLarge)), 1);
    // A JSON list over the cap: passed through as soon as the cap is crossed, with its
    // content-length (the filter already dropped it: the body may have changed).
    let json = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{{"name":"a","description":"{}"}}]}}}}"#,
        "y".repeat(3000)
    );
    let chunks: Vec<&[u8]> = json.as_bytes().chunks(700).collect();
    let (out, x) = exchange_full(
        &mut both.shim,
        &request(&post("/mcp"), LIST),
        &response("200", "application/json", &chunks),
    );
    assert_eq!(out.body(), json.as_bytes());
    assert!(x.client.chunks.len() > 1, "not held to the end");
    assert_eq!(
        both.shim.count(Event::PassedThrough(PassReason::TooLarge)),
        2
    );
    // A request body over the cap goes up as it is.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"pad":"{}"}}}}"#,
        "z".repeat(2000)
    );
    let (out, x) = exchange_full(
        &mut both.shim,
        &request(&post("/mcp"), huge.as_bytes()).chunked(600),
        &response("200", "application/json", &[TOOLS]),
    );
    assert_eq!(out.body(), TOOLS);
    assert_eq!(x.upstream.body(), huge.as_bytes());
    assert_eq!(
        both.shim.count(Event::PassedThrough(PassReason::TooLarge)),
        3
    );
}

#[test]
fn a_catalog_belongs_to_the_route_namespace_else_the_cluster() {
    // Not fetched: what is looked up where is the point here.
    let mut env = ShimEnv::new(r#"{"catalog":{"fetch":false}}"#);
    let route_ns = [
        "xds",
        "route_metadata",
        "filter_metadata",
        "mcp_tool_search",
        "namespace",
    ];
    let run = |env: &mut ShimEnv, ns: Option<&str>, body: &[u8], resp: &HttpMessage| {
        let id = env.vm.new_stream().unwrap();
        if let Some(ns) = ns {
            env.vm.set_stream_property(id, &route_ns, ns).unwrap();
        }
        env.vm
            .exchange_on(id, &request(&post("/mcp"), body), resp)
            .unwrap()
    };
    let tools = response("200", "application/json", &[TOOLS]);
    let x = run(&mut env, Some("team-a"), LIST, &tools);
    assert!(matches!(
        x.outcome(),
        Outcome::Upstream {
            rewritten: true,
            ..
        }
    ));
    let search = br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"refund"}}}"#;
    let found = run(
        &mut env,
        Some("team-a"),
        search,
        &HttpMessage::response(200),
    );
    let reply: Value = serde_json::from_slice(&found.client.body()).unwrap();
    assert_eq!(defs(&reply)[0]["name"], "stripe_refund_charge");
    // Same cluster, another route namespace: nothing learned there yet.
    let other = run(
        &mut env,
        Some("team-b"),
        search,
        &HttpMessage::response(200),
    );
    let reply: Value = serde_json::from_slice(&other.client.body()).unwrap();
    assert_eq!(reply["result"]["isError"], true);
    // No route namespace: the cluster's (`upstream`), also empty.
    let cluster = run(&mut env, None, search, &HttpMessage::response(200));
    let reply: Value = serde_json::from_slice(&cluster.client.body()).unwrap();
    assert_eq!(reply["result"]["isError"], true);
}

#[test]
fn stats_count_what_happened() {
    let mut env = ShimEnv::new(r#"{"eager_patterns":["get_*"]}"#);
    let tools = ("200", "application/json", &[TOOLS][..]);
    exchange(&mut env, post("/mcp"), LIST, tools);
    exchange(&mut env, post("/mcp"), LIST, tools);
    let search = |q: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"tool_search","arguments":{q}}}}}"#
        )
    };
    for q in [r#"{"query":"refund"}"#, r#"{"query":"slack"}"#, r#"{}"#] {
        exchange(
            &mut env,
            post("/mcp"),
            search(q).as_bytes(),
            ("200", "", &[]),
        );
    }
    exchange(
        &mut env,
        post("/mcp"),
        LIST,
        ("503", "application/json", &[b"{}"]),
    );
    let got: Vec<(String, u64)> = env.stats().into_iter().filter(|(_, v)| *v > 0).collect();
    assert_eq!(
        got,
        vec![
            // Histograms, by the values recorded (search insights).
            ("list_bytes_saved".to_string(), 2),
            ("list_rewrite_time_us".to_string(), 2),
            // The second list, the same bytes, is the first one's rewrite again.
            ("lists_replayed".to_string(), 1),
            ("lists_rewritten".to_string(), 2),
            ("passthrough.status".to_string(), 1),
            ("search_results".to_string(), 2),
            ("search_time_us".to_string(), 2),
            ("searches_answered.bm25".to_string(), 2),
            ("searches_rejected".to_string(), 1),
            ("tools_hidden".to_string(), 4),
        ]
    );
}

#[test]
fn a_bad_configuration_is_refused_with_the_filters_message() {
    for config in [
        r#"{"max_body_bytes":"lots"}"#,
        r#"{"eager_patterns":["a"],"no_such_field":1}"#,
        "not json",
    ] {
        let want = mcp_tool_search_core::Config::parse(config)
            .unwrap_err()
            .to_string();
        let err = Vm::load(&Host::new(), wasm_path(), options(config)).unwrap_err();
        let ShimError::Refused { callback, logs, .. } = &err else {
            panic!("{config}: {err}")
        };
        assert_eq!(callback, "proxy_on_configure");
        assert!(
            logs.iter()
                .any(|l| l.contains("[error]") && l.contains(&want)),
            "{config}: want {want:?} in {logs:#?}"
        );
    }
    // An empty configuration is every default.
    Vm::load(&Host::new(), wasm_path(), options("")).unwrap();
}

#[test]
fn under_a_policy_the_wasm_refuses_what_it_cannot_read_whole_or_once() {
    let config = |hold: bool| {
        format!(
            r#"{{"hold_request_headers":{hold},"authorization":{{"identity":{{"source":"header","header":"x-user-roles","claim":"roles"}},
            "rules":[{{"claim":"roles","values":["support"],"tools":["github_*"]}}],"default":"deny"}}}}"#
        )
    };
    let allowed = br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"github_get_issue","arguments":{}}}"#;
    let duplicate = br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"github_get_issue","name":"stripe_create_refund"}}"#;
    let bom = [&[0xef, 0xbb, 0xbf][..], allowed].concat();
    let at = |path: &str, body: &[u8]| {
        HttpMessage::request("POST", path)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("content-length", &body.len().to_string())
            .body(body.to_vec())
    };
    let base = |body: &[u8]| at("/mcp", body);
    for hold in [false, true] {
        let host = Host::new();
        let mut env = ShimEnv::on(
            &host,
            options(&config(hold)).allow_on_headers_stop_iteration(hold),
        );
        let cases: Vec<(&str, HttpMessage, u32, i64)> = vec![
            (
                "duplicate name",
                base(duplicate).header("x-user-roles", "support"),
                400,
                -32600,
            ),
            (
                "byte-order mark",
                base(&bom).header("x-user-roles", "support"),
                400,
                -32600,
            ),
            (
                "repeated identity header",
                base(allowed)
                    .header("x-user-roles", "support")
                    .header("x-user-roles", "support"),
                200,
                -32602,
            ),
            (
                "repeated mcp-method",
                base(allowed)
                    .header("x-user-roles", "support")
                    .header("mcp-method", "tools/call")
                    .header("mcp-method", "tools/list"),
                400,
                -32020,
            ),
            (
                "request trailers before the body ended",
                base(allowed)
                    .header("x-user-roles", "support")
                    .trailers(vec![("x-trailer".into(), "1".into())]),
                400,
                -32600,
            ),
            (
                "a percent-encoded path",
                at("/%6dcp", duplicate).header("x-user-roles", "support"),
                400,
                -32600,
            ),
        ];
        for (what, request, status, code) in cases {
            let (out, x) = exchange_full(
                &mut env,
                &request,
                &response("200", "application/json", &[b"{}"]),
            );
            let native::Outcome::Local {
                status: got, body, ..
            } = &out
            else {
                panic!("{what} (hold {hold}): not refused: {out:?}")
            };
            let reply: Value = serde_json::from_slice(body).unwrap();
            assert_eq!(
                (*got, reply["error"]["code"].as_i64()),
                (status, Some(code)),
                "{what} (hold {hold}): {reply}"
            );
            assert!(
                !x.upstream.end_of_stream,
                "{what} (hold {hold}): the upstream got the whole request"
            );
        }
        // The same call, read once and whole, goes through.
        let (out, x) = exchange_full(
            &mut env,
            &base(allowed).header("x-user-roles", "support"),
            &response("200", "application/json", &[b"{}"]),
        );
        assert!(matches!(out, native::Outcome::Upstream { .. }), "{out:?}");
        assert_eq!(x.upstream.body(), allowed.to_vec());
        assert_eq!(env.stat("requests_refused.unreadable"), 4, "hold {hold}");
        assert_eq!(
            env.stat("requests_refused.header_mismatch"),
            1,
            "hold {hold}"
        );
    }
}

// ---- what only the host shows: the scenarios above, seen as Envoy would --------------------

#[test]
fn unreadable_and_compressed_lists_as_the_host_sees_them() {
    let mut env = ShimEnv::new("{}");
    // An unparseable list is logged at warning (and nothing at critical).
    let bad = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{]}}";
    let _ = exchange(
        &mut env,
        post("/mcp"),
        LIST,
        ("200", "application/json", &[bad]),
    );
    assert!(env
        .vm
        .log_messages(LogLevel::Warn)
        .iter()
        .any(|m| m.contains("passed through unchanged")));
    // A compressed response is not ours to read: through unchanged, content-length kept.
    let gz = b"\x1f\x8b\x08\x00compressed";
    let resp = response("200", "application/json", &[gz]).header("content-encoding", "gzip");
    let (out, x) = exchange_full(&mut env, &request(&post("/mcp"), LIST), &resp);
    assert_eq!(
        out,
        native::Outcome::Upstream {
            body: gz.to_vec(),
            rewritten: false
        }
    );
    assert_eq!(x.client.header("content-length"), Some("14"));
    assert_eq!(env.count(Event::PassedThrough(PassReason::Encoded)), 1);
}

#[test]
fn responses_not_rewritten_go_back_piece_by_piece() {
    let mut env = ShimEnv::new("{}");
    let stream = [
        "event: message\ndata: {\"progress\":1}\n\n",
        ": ping\n\n",
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n",
    ];
    for body in [
        &br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#[..],
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_weather","arguments":{}}}"#,
        b"not json at all",
    ] {
        let resp = HttpMessage::response(200)
            .header("content-type", "text/event-stream")
            .chunks(stream);
        let (_, x) = exchange_full(&mut env, &request(&post("/mcp"), body), &resp);
        // Each piece went to the client with the callback that brought it.
        assert_eq!(x.client.chunks.len(), stream.len());
        assert!(
            x.events
                .iter()
                .filter(|e| e.starts_with("proxy_on_response_body"))
                .all(|e| e.ends_with("-> Continue")),
            "{:#?}",
            x.events
        );
        // Not a list, but the filter could not know before the body: it asked for identity.
        assert_eq!(x.upstream.header("accept-encoding"), None);
    }
}

#[test]
fn stats_are_envoy_s_one_per_name_whichever_worker_counted() {
    let mut worker1 = ShimEnv::new("{}");
    let mut worker2 = ShimEnv::sharing("{}", &worker1);
    let _ = exchange(
        &mut worker1,
        post("/mcp"),
        LIST,
        ("200", "application/json", &[TOOLS]),
    );
    assert!(
        !worker1.host.shared_keys("").is_empty(),
        "learned into shared data"
    );
    let search = br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"slack message"}}}"#;
    let _ = exchange(
        &mut worker2,
        post("/mcp"),
        search,
        ("200", "application/json", &[]),
    );
    assert_eq!(worker1.stat("lists_rewritten"), 1);
    assert_eq!(worker2.stat("searches_answered.bm25"), 1);
    assert_eq!(worker1.stat("searches_answered.bm25"), 1);
    // The worker that did not learn lists the same: it reads the shared catalog too.
    let a = exchange(
        &mut worker2,
        post("/mcp"),
        LIST,
        ("200", "application/json", &[TOOLS]),
    );
    let b = exchange(
        &mut worker1,
        post("/mcp"),
        LIST,
        ("200", "application/json", &[TOOLS]),
    );
    assert_eq!(a, b);
}

/// Under a policy, a list refused before its body (compressed, another content type) reaches the
/// client as the JSON error with headers that say so: a `content-encoding: gzip` left over the
/// plain error would make the client fail to decode it. Each refusal is logged at warning.
#[test]
fn under_a_policy_a_list_refused_at_its_headers_as_the_host_sees_it() {
    let config = r#"{"eager_patterns":["*"],"authorization":{
        "identity":{"source":"header","header":"x-user-roles"},
        "rules":[{"claim":"roles","values":["support"],"tools":["get_*"]}],
        "default":"deny"}}"#;
    let mut env = ShimEnv::new(config);
    let as_support = request(&post("/mcp"), LIST).header("x-user-roles", "support");
    let error = |reason: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":-32603,"message":"the tool list could not be filtered for this caller ({reason}); ask the operator"}}}}"#
        )
        .into_bytes()
    };
    let gz = b"\x1f\x8b\x08\x00compressed";
    let cases = [
        (
            response("200", "application/json", &[gz]).header("content-encoding", "gzip"),
            "encoded",
            PassReason::Encoded,
        ),
        (
            response("200", "text/html", &[TOOLS]),
            "content_type",
            PassReason::ContentType,
        ),
    ];
    for (resp, reason_name, reason) in cases {
        env.vm.clear_logs();
        let (out, x) = exchange_full(&mut env, &as_support, &resp);
        assert_eq!(
            out,
            native::Outcome::Upstream {
                body: error(reason_name),
                rewritten: true
            },
            "{reason_name}: {}",
            String::from_utf8_lossy(out.body())
        );
        assert_eq!(x.client.status(), Some(200), "{reason_name}");
        assert_eq!(
            x.client.header("content-type"),
            Some("application/json"),
            "{reason_name}"
        );
        assert_eq!(x.client.header("content-encoding"), None, "{reason_name}");
        assert_eq!(env.count(Event::PassedThrough(reason)), 1, "{reason_name}");
        assert_eq!(
            env.vm.log_messages(LogLevel::Warn),
            [format!(
                "mcp-tool-search: tools/list response refused: it cannot be filtered for the caller ({reason_name})"
            )],
            "{reason_name}"
        );
    }
    // The same caller's readable list is filtered, not refused: the refusals above are the
    // policy's, not a filter that refuses everything.
    let (out, _) = exchange_full(
        &mut env,
        &as_support,
        &response("200", "application/json", &[TOOLS]),
    );
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(
        v["result"],
        serde_json::json!({"tools": [{"name": "get_weather", "description": "Weather forecast for a city"}], "cacheScope": "private"})
    );
    assert_eq!(env.count(Event::ListRewritten), 1);
}
