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
use mcp_tool_search_core::stream::{Event, PassReason, RequestHead, RequestHeadersAction, Stream};
use support::scenarios as support_scenarios;
use support::*;

crate::scenarios!(TestEnv);

use support_scenarios::LIST;

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
