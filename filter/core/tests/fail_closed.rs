//! README "Stats": with `authorization` set, a `tools/list` response the filter cannot filter for
//! the caller is replaced by a JSON-RPC error instead of passing through, for every reason it
//! would otherwise pass through. Each reason, natively, with the exact reply, stat and log.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::{Caller, Event, Exchanged, PassReason, RequestHead};
use serde_json::{json, Value};
use support::*;

const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

const POLICY: &str = r#""authorization":{"identity":{"source":"header","header":"x-user-roles"},
    "rules":[{"claim":"roles","values":["support"],"tools":["github_*"]}],
    "default":"deny"}"#;

/// Small enough that the list below is too large, large enough for the other bodies.
const MAX_BODY: usize = 1024;

/// Every tool eager: a filtered list then shows exactly the tools the caller may use.
fn with_policy() -> TestEnv {
    TestEnv::new(&format!(
        r#"{{"max_body_bytes":{MAX_BODY},"eager_patterns":["*"],{POLICY}}}"#
    ))
}

fn without_policy() -> TestEnv {
    TestEnv::new(&format!(
        r#"{{"max_body_bytes":{MAX_BODY},"eager_patterns":["*"]}}"#
    ))
}

fn support() -> RequestHead {
    RequestHead {
        caller: Caller::from_header("roles", "support"),
        ..post("/mcp")
    }
}

/// A list with one tool the caller may use and one it may not, padded past `MAX_BODY` when
/// `large` (the padding is in forbidden tools, so a leak shows).
fn list_body(id: &str, large: bool) -> Vec<u8> {
    let mut tools = vec![
        json!({"name": "github_get_issue", "description": "Get an issue"}),
        json!({"name": "stripe_refund_charge", "description": "Refund a charge"}),
    ];
    if large {
        tools.extend((0..30).map(
            |i| json!({"name": format!("stripe_tool_{i}"), "description": "a tool for billing"}),
        ));
    }
    let id: Value = serde_json::from_str(id).unwrap();
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}}))
        .unwrap();
    assert_eq!(body.len() > MAX_BODY, large);
    body
}

fn sse(body: &[u8]) -> Vec<u8> {
    [b"event: message\ndata: ", body, b"\n\n"].concat()
}

/// The error that replaces the list (`Stream::refusal`), as the client gets it.
fn refusal(id: &str, reason: &str, sse_framed: bool) -> Vec<u8> {
    let json = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32603,"message":"the tool list could not be filtered for this caller ({reason}); ask the operator"}}}}"#
    );
    if sse_framed {
        sse(json.as_bytes())
    } else {
        json.into_bytes()
    }
}

const UNPARSEABLE: &[u8] =
    br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"stripe_refund_charge"},{]}}"#;

/// One way a list cannot be filtered: the upstream's status, content type and body pieces, why
/// it cannot be filtered, whether the reply is SSE, and the warning logged (a prefix).
struct Case {
    what: &'static str,
    content_type: &'static str,
    chunks: Vec<Vec<u8>>,
    reason: PassReason,
    sse: bool,
    warning: &'static str,
}

fn cases() -> Vec<Case> {
    let large = list_body("1", true);
    let mut not_utf8 = list_body("1", false);
    let at = not_utf8.len() - 10;
    not_utf8.insert(at, 0xff);
    vec![
        Case {
            what: "another content type",
            content_type: "text/plain",
            chunks: vec![list_body("1", false)],
            reason: PassReason::ContentType,
            sse: false,
            warning: "tools/list response refused: it cannot be filtered for the caller (content_type)",
        },
        Case {
            what: "no content type",
            content_type: "",
            chunks: vec![list_body("1", false)],
            reason: PassReason::ContentType,
            sse: false,
            warning: "tools/list response refused: it cannot be filtered for the caller (content_type)",
        },
        Case {
            what: "unparseable JSON",
            content_type: "application/json",
            chunks: vec![UNPARSEABLE.to_vec()],
            reason: PassReason::Unparseable,
            sse: false,
            warning: "tools/list response refused: it cannot be filtered for the caller (unparseable): tools/list response is not valid JSON",
        },
        Case {
            what: "JSON that is not UTF-8",
            content_type: "application/json",
            chunks: vec![not_utf8],
            reason: PassReason::Unparseable,
            sse: false,
            warning: "tools/list response refused: it cannot be filtered for the caller (unparseable): tools/list response is not UTF-8",
        },
        Case {
            what: "an unparseable SSE event",
            content_type: "text/event-stream",
            chunks: vec![sse(UNPARSEABLE)],
            reason: PassReason::Unparseable,
            sse: true,
            warning: "tools/list response refused: it cannot be filtered for the caller (unparseable): an event: ",
        },
        Case {
            what: "a JSON list larger than max_body_bytes, in pieces",
            content_type: "application/json",
            chunks: large.chunks(300).map(<[u8]>::to_vec).collect(),
            reason: PassReason::TooLarge,
            sse: false,
            warning: "tools/list response refused: it cannot be filtered for the caller (too_large)",
        },
        Case {
            what: "an SSE event larger than max_body_bytes, in pieces",
            content_type: "text/event-stream",
            chunks: sse(&large).chunks(300).map(<[u8]>::to_vec).collect(),
            reason: PassReason::TooLarge,
            sse: true,
            warning: "tools/list response refused: it cannot be filtered for the caller (too_large)",
        },
    ]
}

#[test]
fn every_list_the_filter_cannot_read_is_replaced_by_an_error_under_a_policy() {
    for case in cases() {
        let what = case.what;
        let mut env = with_policy();
        let chunks: Vec<&[u8]> = case.chunks.iter().map(Vec::as_slice).collect();
        let out = exchange(
            &mut env,
            support(),
            LIST,
            ("200", case.content_type, &chunks),
        );
        assert_eq!(
            out,
            Outcome::Upstream {
                body: refusal("1", case.reason.name(), case.sse),
                rewritten: true
            },
            "{what}: {}",
            String::from_utf8_lossy(out.body())
        );
        assert_eq!(
            env.events,
            [Event::PassedThrough(case.reason), Event::ResponseWithheld],
            "{what}: counted once, as why it could not be filtered, and as withheld"
        );
        assert_eq!(env.warnings.len(), 1, "{what}: {:?}", env.warnings);
        assert!(
            env.warnings[0].starts_with(case.warning),
            "{what}: {:?}",
            env.warnings
        );
    }
}

/// The control: what the policy refuses above is exactly what passes unchanged without one.
#[test]
fn without_a_policy_the_same_lists_pass_through_unchanged() {
    for case in cases() {
        let what = case.what;
        let mut env = without_policy();
        let chunks: Vec<&[u8]> = case.chunks.iter().map(Vec::as_slice).collect();
        let out = exchange(
            &mut env,
            post("/mcp"),
            LIST,
            ("200", case.content_type, &chunks),
        );
        assert_eq!(out.body(), case.chunks.concat().as_slice(), "{what}");
        assert_eq!(env.events, [Event::PassedThrough(case.reason)], "{what}");
    }
}

/// The readable list, as the same caller: filtered, not refused. Without this, a filter that
/// refused every list would pass the tests above.
#[test]
fn a_readable_list_is_filtered_for_the_caller_not_refused() {
    let mut env = with_policy();
    let body = list_body("1", false);
    for (content_type, framed) in [
        ("application/json", body.clone()),
        ("text/event-stream", sse(&body)),
    ] {
        let out = exchange(&mut env, support(), LIST, ("200", content_type, &[&framed]));
        let v = &messages(out.body(), content_type == "text/event-stream")[0];
        assert_eq!(
            v["result"],
            json!({"tools": [{"name": "github_get_issue", "description": "Get an issue"}], "cacheScope": "private"}),
            "{content_type}"
        );
    }
    assert_eq!(env.count(Event::ListRewritten), 2);
    assert!(env.warnings.is_empty(), "{:?}", env.warnings);
}

/// The error answers the request's own id, and every list of a batch.
#[test]
fn the_error_answers_each_list_by_its_id() {
    let mut env = with_policy();
    let request = br#"{"jsonrpc":"2.0","id":"l-1","method":"tools/list"}"#;
    let out = exchange(
        &mut env,
        support(),
        request,
        ("200", "text/plain", &[b"nope"]),
    );
    assert_eq!(out.body(), refusal(r#""l-1""#, "content_type", false));

    let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":"b","method":"tools/list","params":{"cursor":"p2"}}]"#;
    let out = exchange(
        &mut env,
        support(),
        batch,
        ("200", "application/json", &[b"[{]"]),
    );
    let want = format!(
        "[{},{}]",
        String::from_utf8(refusal("1", "unparseable", false)).unwrap(),
        String::from_utf8(refusal(r#""b""#, "unparseable", false)).unwrap()
    );
    assert_eq!(out.text(), want);
}

/// A compressed list (`content-encoding`): `true` when the filter refused it at its headers
/// (the encoding removed, the body turned into JSON), and the body the client receives.
fn encoded_exchange(
    env: &mut TestEnv,
    head: RequestHead,
    encoding: &str,
    body: &[u8],
) -> (bool, Vec<u8>) {
    let request = mcp_tool_search_core::Request {
        headers: env.request_headers(&head, LIST),
        chunks: vec![LIST.to_vec()],
        trailers: false,
    };
    let mut response = upstream_response(
        "200",
        "application/json",
        &[&body[..body.len() / 2], &body[body.len() / 2..]],
    );
    response
        .headers
        .push(("content-encoding".into(), encoding.as_bytes().to_vec()));
    let Exchanged::Upstream {
        response_headers,
        response,
        ..
    } = exchange_raw(env, &request, &response)
    else {
        panic!("the list went upstream")
    };
    let refused = !response_headers
        .iter()
        .any(|(k, _)| k == "content-encoding");
    (refused, response)
}

#[test]
fn a_compressed_list_is_refused_under_a_policy_and_passes_without_one() {
    let gz = b"\x1f\x8b\x08\x00compressed list bytes";
    for encoding in ["gzip", "br", " GZIP "] {
        let mut env = with_policy();
        let (refused, out) = encoded_exchange(&mut env, support(), encoding, gz);
        assert!(refused, "{encoding}");
        assert_eq!(out, refusal("1", "encoded", false), "{encoding}");
        assert_eq!(
            env.events,
            [
                Event::PassedThrough(PassReason::Encoded),
                Event::ResponseWithheld
            ]
        );
        assert_eq!(
            env.warnings,
            ["tools/list response refused: it cannot be filtered for the caller (encoded)"]
        );

        let mut open = without_policy();
        let (refused, out) = encoded_exchange(&mut open, post("/mcp"), encoding, gz);
        assert!(!refused, "{encoding}");
        assert_eq!(out, gz);
        assert_eq!(open.events, [Event::PassedThrough(PassReason::Encoded)]);
    }
    // `identity` is no encoding: the list is read and filtered.
    let mut env = with_policy();
    let body = list_body("1", false);
    let (refused, out) = encoded_exchange(&mut env, support(), "identity", &body);
    assert!(!refused);
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["result"]["tools"][0]["name"], "github_get_issue", "{v}");
    assert_eq!(v["result"]["tools"].as_array().unwrap().len(), 1, "{v}");
}

/// Another success status still carries a list a client reads: under a policy it is read and
/// filtered like any response the caller receives (`mcp::guard`). Error statuses are not list
/// results (and a 401 must reach the client as sent): they pass, counted, policy or not.
#[test]
fn a_list_under_another_success_status_is_filtered_under_a_policy() {
    let body = list_body("1", false);
    for status in ["201", "203"] {
        let mut env = with_policy();
        let out = exchange(
            &mut env,
            support(),
            LIST,
            (status, "application/json", &[&body]),
        );
        let v: Value = serde_json::from_slice(out.body()).unwrap();
        assert_eq!(
            v["result"]["tools"],
            json!([{"name": "github_get_issue", "description": "Get an issue"}]),
            "{status}"
        );
        assert_eq!(v["result"]["cacheScope"], "private");
        assert!(!env
            .events
            .contains(&Event::PassedThrough(PassReason::Status)));
        assert!(env.warnings.is_empty(), "{:?}", env.warnings);
    }
    let passing = ["500", "404", "401"]
        .into_iter()
        .flat_map(|status| [(status, with_policy()), (status, without_policy())])
        .chain([("201", without_policy())]);
    for (status, mut env) in passing {
        let out = exchange(
            &mut env,
            support(),
            LIST,
            (status, "application/json", &[&body]),
        );
        assert_eq!(
            out,
            Outcome::Upstream {
                body: body.clone(),
                rewritten: false
            },
            "{status}"
        );
        assert_eq!(env.events, [Event::PassedThrough(PassReason::Status)]);
        assert!(env.warnings.is_empty(), "{:?}", env.warnings);
    }
}

/// A declared `content-length` above what the filter reads is decided at the headers: the body
/// is never held (held bytes count against Envoy's buffer limit, and Envoy answers 413 itself
/// once one socket read pushes them past it). Under a policy the request is refused; without
/// one it goes upstream unread; the search endpoint refuses it either way.
#[test]
fn a_declared_length_above_the_cap_is_decided_before_the_body() {
    let declared = |path: &str, length: usize| RequestHead {
        content_length: Some(length as u64),
        ..RequestHead {
            caller: Caller::from_header("roles", "support"),
            ..post(path)
        }
    };
    // A search the filter answers whenever it reads the body.
    let search = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"refund"}}}"#;
    let upstream = ("200", "application/json", &[&b"{}"[..]][..]);
    for (mut env, refused) in [(with_policy(), true), (without_policy(), false)] {
        let out = exchange(&mut env, declared("/mcp", MAX_BODY + 1), search, upstream);
        match (&out, refused) {
            (
                Outcome::Local {
                    status: 413, body, ..
                },
                true,
            ) => {
                assert!(String::from_utf8_lossy(body).contains("request too large to authorize"));
            }
            // Not read: the search goes upstream unanswered.
            (Outcome::Upstream { .. }, false) => {}
            _ => panic!("refused {refused}: {out:?}"),
        }
        assert_eq!(env.count(Event::PassedThrough(PassReason::TooLarge)), 1);

        // At the cap, the body is read as before (and the search answered here).
        let out = exchange(&mut env, declared("/mcp", MAX_BODY), search, upstream);
        assert!(matches!(out, Outcome::Local { status: 200, .. }), "{out:?}");
    }

    let mut env = TestEnv::new(&format!(
        r#"{{"max_body_bytes":{MAX_BODY},"search":{{"http_path":"/search"}}}}"#
    ));
    let out = exchange(
        &mut env,
        declared("/search", MAX_BODY + 1),
        br#"{"query":"refund"}"#,
        upstream,
    );
    assert!(matches!(out, Outcome::Local { status: 413, .. }), "{out:?}");
}
