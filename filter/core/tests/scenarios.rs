//! The stream state machine on the cases an operator relies on: what is left alone, what is
//! answered locally, what passes through unchanged and why.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::mcp::headers::Mirrored;
use mcp_tool_search_core::stream::{
    Event, PassReason, RequestHead, RequestHeadersAction, ResponseHeadersAction, Stream,
};
use serde_json::Value;
use std::rc::Rc;
use support::*;

const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
const TOOLS: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_weather","description":"Weather forecast for a city"},{"name":"stripe_refund_charge","description":"Refund a charge"},{"name":"slack_post_message","description":"Post a message to a Slack channel"}]}}"#;

fn learned_env(config: &str) -> TestEnv {
    let mut env = TestEnv::new(config);
    let out = exchange(
        &mut env,
        post("/mcp"),
        LIST,
        ("200", "application/json", &[TOOLS]),
    );
    assert!(matches!(
        out,
        Outcome::Upstream {
            rewritten: true,
            ..
        }
    ));
    env
}

fn search(env: &mut TestEnv, args: &str) -> Value {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"tool_search","arguments":{args}}}}}"#
    );
    match exchange(
        env,
        post("/mcp"),
        body.as_bytes(),
        ("200", "application/json", &[]),
    ) {
        Outcome::Local {
            status: 200, body, ..
        } => serde_json::from_slice(&body).unwrap(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn non_mcp_traffic_get_streams_and_bodyless_requests_are_not_touched() {
    let config = mcp_tool_search_core::config::Config::default();
    let cases = [
        (
            RequestHead {
                method: "POST".into(),
                path: "/other".into(),
                ..Default::default()
            },
            false,
        ),
        (
            RequestHead {
                method: "GET".into(),
                path: "/mcp".into(),
                ..Default::default()
            },
            true,
        ),
        (
            RequestHead {
                method: "DELETE".into(),
                path: "/mcp".into(),
                ..Default::default()
            },
            true,
        ),
        (
            RequestHead {
                method: "POST".into(),
                path: "/mcpx".into(),
                ..Default::default()
            },
            false,
        ),
        (
            RequestHead {
                method: "POST".into(),
                path: "/mcp".into(),
                ..Default::default()
            },
            true,
        ),
    ];
    let mut env = TestEnv::new("{}");
    for (head, end_of_stream) in cases {
        let mut stream = Stream::new();
        let action = stream.on_request_headers(&config, &mut env, head.clone(), end_of_stream);
        assert_eq!(action, RequestHeadersAction::Continue, "{head:?}");
        assert!(!stream.wants_request_body());
    }
    // Every spelling a server routes to its MCP endpoint is MCP traffic.
    for path in ["/mcp?x=1", "/mcp/", "/%6dcp", "//mcp", "/a/../mcp", "/MCP"] {
        let mut stream = Stream::new();
        let q = RequestHead {
            method: "POST".into(),
            path: path.into(),
            ..Default::default()
        };
        assert!(
            matches!(
                stream.on_request_headers(&config, &mut env, q, false),
                RequestHeadersAction::ReadBody { .. }
            ),
            "{path}"
        );
    }
    let mut stream = Stream::new();
    let q = RequestHead {
        method: "POST".into(),
        path: "/mcp?x=1".into(),
        ..Default::default()
    };
    assert!(matches!(
        stream.on_request_headers(&config, &mut env, q, false),
        RequestHeadersAction::ReadBody {
            hold: false,
            strip_accept_encoding: true,
            drop_content_length: false
        }
    ));
}

#[test]
fn protocol_2026_headers_never_let_a_body_go_unread() {
    let config =
        mcp_tool_search_core::config::Config::parse(r#"{"hold_request_headers":true}"#).unwrap();
    let head = |method: &str, name: Option<&str>| RequestHead {
        method: "POST".into(),
        path: "/mcp".into(),
        mcp: Mirrored::of(Some(method), name, Some("2026-07-28")),
        ..Default::default()
    };
    let mut env = TestEnv::new("{}");
    let mut action = |h| Stream::new().on_request_headers(&config, &mut env, h, false);
    let read = |strip| RequestHeadersAction::ReadBody {
        hold: true,
        strip_accept_encoding: strip,
        drop_content_length: false,
    };
    assert_eq!(
        action(head("tools/call", Some("github_get_issue"))),
        read(false)
    );
    assert_eq!(action(head("notifications/initialized", None)), read(false));
    assert_eq!(action(head("resources/list", None)), read(false));
    assert_eq!(action(head("tools/list", None)), read(true));
    assert_eq!(action(head("tools/call", Some("tool_search"))), read(false));
}

#[test]
fn protocol_2026_search_reply_says_complete_and_mismatch_is_400() {
    let mut env = learned_env("{}");
    let modern = |method: &str, name: &str| RequestHead {
        mcp: Mirrored::of(Some(method), Some(name), Some("2026-07-28")),
        ..post("/mcp")
    };
    let body = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"refund"},"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"t"}}}}"#;
    let out = exchange(
        &mut env,
        modern("tools/call", "tool_search"),
        body,
        ("200", "application/json", &[]),
    );
    let reply: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(reply["result"]["resultType"], "complete");
    // Streamable HTTP 2026-07-28 "Server Validation": a header naming another tool than the
    // body is refused (an intermediary routing on it would disagree with the server).
    let mismatch = |out: Outcome| {
        let Outcome::Local {
            status: 400, body, ..
        } = out
        else {
            panic!("{out:?}")
        };
        let error: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(error["error"]["code"], -32020);
        assert_eq!(error["id"], 3);
        error["error"]["message"].as_str().unwrap().to_string()
    };
    let out = exchange(
        &mut env,
        modern("tools/call", "other_tool"),
        body,
        ("200", "application/json", &[]),
    );
    assert_eq!(
        mismatch(out),
        "Header mismatch: Mcp-Name header value 'other_tool' does not match body value 'tool_search'"
    );
    let out = exchange(
        &mut env,
        modern("tools/list", "tool_search"),
        body,
        ("200", "application/json", &[]),
    );
    assert_eq!(
        mismatch(out),
        "Header mismatch: Mcp-Method header value 'tools/list' does not match body value 'tools/call'"
    );
    // The name in the Base64 sentinel form (Streamable HTTP 2026-07-28, "Value Encoding").
    let out = exchange(
        &mut env,
        modern("tools/call", "=?base64?dG9vbF9zZWFyY2g=?="),
        body,
        ("200", "application/json", &[]),
    );
    let reply: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
}

#[test]
fn search_replies_and_argument_errors() {
    let mut env = learned_env(r#"{"eager_patterns":["get_*"]}"#);
    let reply = search(&mut env, r#"{"query":"refund a payment"}"#);
    let defs: Value =
        serde_json::from_str(reply["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(defs[0]["name"], "stripe_refund_charge");
    // Every tool with any matching term, however weak; none that match nothing.
    assert_eq!(defs.as_array().unwrap().len(), 1);
    let weak = search(&mut env, r#"{"query":"refund a message"}"#);
    let defs: Value =
        serde_json::from_str(weak["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(defs.as_array().unwrap().len(), 2, "no minimum score");
    let exact = search(&mut env, r#"{"query":"slack_post_message","limit":1}"#);
    let defs: Value =
        serde_json::from_str(exact["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(defs[0]["name"], "slack_post_message");
    assert_eq!(defs.as_array().unwrap().len(), 1);
    for (args, says) in [
        (r#"{}"#, "Missing required argument `query`"),
        (r#"{"query":""}"#, "empty"),
        (r#"{"query":"x","limit":"many"}"#, "integer"),
    ] {
        let reply = search(&mut env, args);
        assert_eq!(reply["result"]["isError"], true, "{args}");
        assert!(
            reply["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains(says),
            "{args}"
        );
    }
    assert_eq!(env.count(Event::SearchRejected), 3);
    let other_ns = search(&mut env, r#"{"query":"x","namespace":"elsewhere"}"#);
    assert_eq!(other_ns["result"]["isError"], true);
}

#[test]
fn search_before_any_list_tells_the_agent_what_to_do() {
    let mut env = TestEnv::new("{}");
    let reply = search(&mut env, r#"{"query":"anything"}"#);
    assert_eq!(reply["result"]["isError"], true);
    assert!(reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("call tools/list"));
}

#[test]
fn sse_only_clients_get_an_sse_reply_with_their_session() {
    let mut env = learned_env("{}");
    let head = RequestHead {
        accept: Some("text/event-stream".into()),
        session_id: Some("s-1".into()),
        ..post("/mcp")
    };
    let body = br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"weather"}}}"#;
    let Outcome::Local { headers, body, .. } = exchange(&mut env, head, body, ("200", "", &[]))
    else {
        panic!()
    };
    assert!(headers.contains(&("content-type".into(), "text/event-stream".into())));
    assert!(headers.contains(&("mcp-session-id".into(), "s-1".into())));
    let msgs = messages(&body, true);
    assert_eq!(msgs[0]["id"], 4);
}

#[test]
fn bodies_that_cannot_be_rewritten_pass_through_unchanged_and_are_counted() {
    let mut env = TestEnv::new("{}");
    let cases: [(&str, &str, &[u8], PassReason); 3] = [
        ("500", "application/json", TOOLS, PassReason::Status),
        ("200", "text/plain", TOOLS, PassReason::ContentType),
        (
            "200",
            "application/json",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{]}}",
            PassReason::Unparseable,
        ),
    ];
    for (status, ct, body, reason) in cases {
        let out = exchange(&mut env, post("/mcp"), LIST, (status, ct, &[body]));
        assert_eq!(
            out,
            Outcome::Upstream {
                body: body.to_vec(),
                rewritten: false
            },
            "{reason:?}"
        );
        assert_eq!(env.count(Event::PassedThrough(reason)), 1, "{reason:?}");
    }
    // Compressed responses are not ours to read.
    let config = env.config.clone();
    let mut stream = Stream::new();
    let _ = stream.on_request_headers(&config, &mut env, post("/mcp"), false);
    let _ = stream.on_request_body(&config, &mut env, LIST);
    let action = stream.on_response_headers(
        &config,
        &mut env,
        Some("200"),
        Some("application/json"),
        Some("gzip"),
    );
    assert_eq!(action, ResponseHeadersAction::Continue);
    assert_eq!(env.count(Event::PassedThrough(PassReason::Encoded)), 1);
    // Unparseable SSE: the event goes through as it came, and the stream goes on.
    let sse = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[}\n\n: after\n\n";
    let out = exchange(
        &mut env,
        post("/mcp"),
        LIST,
        ("200", "text/event-stream", &[sse]),
    );
    assert_eq!(out.body(), sse);
    assert_eq!(env.count(Event::PassedThrough(PassReason::Unparseable)), 2);
}

#[test]
fn oversized_sse_event_passes_through() {
    let mut env = TestEnv::new(r#"{"max_body_bytes":1024}"#);
    let big = format!(
        "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"tools\":[{{\"name\":\"a\",\"description\":\"{}\"}}]}}}}\n\n",
        "x".repeat(4000)
    );
    let chunks: Vec<&[u8]> = big.as_bytes().chunks(512).collect();
    let out = exchange(
        &mut env,
        post("/mcp"),
        LIST,
        ("200", "text/event-stream", &chunks),
    );
    assert_eq!(out.body(), big.as_bytes());
    assert_eq!(env.count(Event::PassedThrough(PassReason::TooLarge)), 1);
}

#[test]
fn notifications_calls_and_other_methods_are_not_buffered_on_the_way_back() {
    let mut env = TestEnv::new("{}");
    for body in [
        &br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#[..],
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_weather","arguments":{}}}"#,
        br#"{"jsonrpc":"2.0","id":3,"method":"resources/list"}"#,
        b"not json at all",
    ] {
        let config = env.config.clone();
        let mut stream = Stream::new();
        let _ = stream.on_request_headers(&config, &mut env, post("/mcp"), false);
        let _ = stream.on_request_body(&config, &mut env, body);
        assert!(!stream.awaiting_response());
        let action = stream.on_response_headers(&config, &mut env, Some("200"), Some("text/event-stream"), None);
        assert_eq!(action, ResponseHeadersAction::Continue);
    }
    assert!(env.events.is_empty(), "{:?}", env.events);
}

#[test]
fn batches() {
    let mut env = learned_env("{}");
    // A batch of searches is answered locally, as a batch.
    let body = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"slack"}}},{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"tool_search","arguments":{"query":"weather"}}}]"#;
    let out = exchange(
        &mut env,
        post("/mcp"),
        body,
        ("200", "application/json", &[]),
    );
    let replies: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(replies[0]["id"], 1);
    assert_eq!(replies[1]["id"], "b");
    // Mixed with an upstream call: passes through, counted.
    let mixed = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"slack"}}},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#;
    let out = exchange(
        &mut env,
        post("/mcp"),
        mixed,
        ("200", "application/json", &[b"[]"]),
    );
    assert!(matches!(
        out,
        Outcome::Upstream {
            rewritten: false,
            ..
        }
    ));
    assert_eq!(env.count(Event::PassedThrough(PassReason::MixedBatch)), 1);
    // A batch holding a list: its response is rewritten in place.
    let list_batch = br#"[{"jsonrpc":"2.0","id":7,"method":"tools/list"},{"jsonrpc":"2.0","id":8,"method":"ping"}]"#;
    let response = format!(
        r#"[{{"jsonrpc":"2.0","id":8,"result":{{}}}},{}]"#,
        String::from_utf8(TOOLS.to_vec())
            .unwrap()
            .replace("\"id\":1", "\"id\":7")
    );
    let out = exchange(
        &mut env,
        post("/mcp"),
        list_batch,
        ("200", "application/json", &[response.as_bytes()]),
    );
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(
        v[0],
        serde_json::json!({"jsonrpc":"2.0","id":8,"result":{}})
    );
    assert_eq!(v[1]["result"]["tools"][0]["name"], "tool_search");
}

#[test]
fn paginated_lists_learn_every_page_and_only_the_first_gets_the_search_tool() {
    let mut env = TestEnv::new("{}");
    let page1 = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a_one","description":"first"}],"nextCursor":"p2"}}"#;
    let page2 =
        br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"b_two","description":"second"}]}}"#;
    let out = exchange(
        &mut env,
        post("/mcp"),
        LIST,
        ("200", "application/json", &[page1]),
    );
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(v["result"]["tools"][0]["name"], "tool_search");
    assert_eq!(v["result"]["nextCursor"], "p2");
    let req2 = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"p2"}}"#;
    let out = exchange(
        &mut env,
        post("/mcp"),
        req2,
        ("200", "application/json", &[page2]),
    );
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(v["result"]["tools"], serde_json::json!([]));
    let reply = search(&mut env, r#"{"query":"second"}"#);
    let defs: Value =
        serde_json::from_str(reply["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(defs[0]["name"], "b_two");
    let reply = search(&mut env, r#"{"query":"first second"}"#);
    let defs: Value =
        serde_json::from_str(reply["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(defs.as_array().unwrap().len(), 2, "both pages learned");
}

#[test]
fn a_catalog_learned_on_one_worker_is_searched_on_another() {
    let host = Rc::new(mcp_tool_search_core::plugin::MemoryHost::default());
    let mut worker1 = TestEnv::sharing("{}", Rc::clone(&host));
    let mut worker2 = TestEnv::sharing("{}", host);
    let _ = exchange(
        &mut worker1,
        post("/mcp"),
        LIST,
        ("200", "application/json", &[TOOLS]),
    );
    let reply = search(&mut worker2, r#"{"query":"slack message"}"#);
    let defs: Value =
        serde_json::from_str(reply["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(defs[0]["name"], "slack_post_message");
}

#[test]
fn oversized_json_passes_through_whole_and_is_counted() {
    let mut env = TestEnv::new(r#"{"max_body_bytes":1024}"#);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{{"name":"a","description":"{}"}}]}}}}"#,
        "x".repeat(5000)
    );
    let chunks: Vec<&[u8]> = big.as_bytes().chunks(700).collect();
    let out = exchange(
        &mut env,
        post("/mcp"),
        LIST,
        ("200", "application/json", &chunks),
    );
    assert_eq!(out.body(), big.as_bytes());
    assert_eq!(env.count(Event::PassedThrough(PassReason::TooLarge)), 1);
}
