//! The stream state machine on the cases an operator relies on: what is left alone, what is
//! answered locally, what passes through unchanged and why.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::{Action, Mirrored, RequestHead};
use support::scenarios as support_scenarios;
use support::*;

crate::scenarios!(TestEnv);

#[test]
fn non_mcp_traffic_get_streams_and_bodyless_requests_are_not_touched() {
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
    // A search the filter would answer, were it reading the body: sent, it goes upstream.
    let upstream = ("200", "application/json", &[&b"{}"[..]][..]);
    for (head, end_of_stream) in cases {
        let body: &[u8] = if end_of_stream { b"" } else { SEARCH };
        let out = exchange(&mut env, head.clone(), body, upstream);
        assert!(matches!(out, Outcome::Upstream { .. }), "{head:?}: {out:?}");
    }
    // Every spelling a server routes to its MCP endpoint is MCP traffic.
    for path in ["/mcp?x=1", "/mcp/", "/%6dcp", "//mcp", "/a/../mcp", "/MCP"] {
        let q = RequestHead {
            method: "POST".into(),
            path: path.into(),
            ..Default::default()
        };
        let out = exchange(&mut env, q, SEARCH, upstream);
        assert!(
            matches!(out, Outcome::Local { status: 200, .. }),
            "{path}: {out:?}"
        );
    }
    // Read, with the headers forwarded at once (not held) and compression no longer asked for.
    let q = RequestHead {
        method: "POST".into(),
        path: "/mcp?x=1".into(),
        ..Default::default()
    };
    let (action, headers) = env.request_headers_only(q, false);
    assert_eq!(action, Action::Continue);
    assert!(!headers.iter().any(|(k, _)| k == "accept-encoding"));
}

const SEARCH: &[u8] = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"weather"}}}"#;

#[test]
fn protocol_2026_headers_never_let_a_body_go_unread() {
    let head = |method: &str, name: Option<&str>| RequestHead {
        method: "POST".into(),
        path: "/mcp".into(),
        mcp: Mirrored::of(Some(method), name, Some("2026-07-28")),
        ..Default::default()
    };
    let mut env = TestEnv::new(r#"{"hold_request_headers":true}"#);
    // Held for the body (Pause); `strip`: compression is no longer asked for.
    let mut held = |h, strip: bool| {
        let (action, headers) = env.request_headers_only(h, false);
        assert_eq!(action, Action::Pause);
        assert_eq!(!headers.iter().any(|(k, _)| k == "accept-encoding"), strip);
    };
    held(head("tools/call", Some("github_get_issue")), false);
    held(head("notifications/initialized", None), false);
    held(head("resources/list", None), false);
    held(head("tools/list", None), true);
    held(head("tools/call", Some("tool_search")), false);
}
