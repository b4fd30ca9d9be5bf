//! Scenarios written once and run by every driver: natively over the core (`TestEnv`,
//! `filter/core/tests/scenarios.rs`), against the built `.wasm` in host-shim
//! (`wasm-tests/tests/shim_scenarios.rs`, where each exchange also runs natively and the two must
//! agree) and in real Envoy (`wasm-tests/tests/scenarios_e2e.rs`). A scenario states what a
//! client and the upstream see; what only a host can show (headers, chunks, logs) stays with that
//! host's own tests.

use super::{messages, post, Outcome};
use mcp_tool_search_core::{Caller, Event, Mirrored, PassReason, Ranking, RequestHead};
use serde_json::Value;

pub const LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
pub const TOOLS: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"get_weather","description":"Weather forecast for a city"},{"name":"stripe_refund_charge","description":"Refund a charge"},{"name":"slack_post_message","description":"Post a message to a Slack channel"}]}}"#;

/// What runs a scenario: one worker of the filter, fed whole exchanges.
pub trait Driver: Sized {
    fn with_config(config: &str) -> Self;
    /// Two workers of one host (their shared data is one).
    fn two_workers(config: &str) -> (Self, Self);
    /// One exchange: the request (head and body) and the upstream's response (status, content
    /// type, body pieces as they arrive); what the client ends up with.
    fn exchange(
        &mut self,
        head: RequestHead,
        request: &[u8],
        response: (&str, &str, &[&[u8]]),
    ) -> Outcome;
    /// How many times the filter counted `event`.
    fn count(&self, event: Event) -> u64;
    /// Everything the filter counted.
    fn events_total(&self) -> u64;
}

/// A worker that has seen the catalog's list.
pub fn learned<D: Driver>(config: &str) -> D {
    let mut d = D::with_config(config);
    let out = d.exchange(post("/mcp"), LIST, ("200", "application/json", &[TOOLS]));
    assert!(matches!(
        out,
        Outcome::Upstream {
            rewritten: true,
            ..
        }
    ));
    d
}

/// A `tool_search` call with these arguments: the JSON-RPC reply.
pub fn search<D: Driver>(d: &mut D, args: &str) -> Value {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"tool_search","arguments":{args}}}}}"#
    );
    match d.exchange(
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

/// One `#[test]` per scenario for driver `$d`.
#[macro_export]
macro_rules! scenarios {
    ($d:ty) => {
        $crate::scenarios!(@each $d;
            protocol_2026_search_reply_says_complete_and_mismatch_is_400,
            search_replies_and_argument_errors,
            search_before_any_list_tells_the_agent_what_to_do,
            sse_only_clients_get_an_sse_reply_with_their_session,
            bodies_that_cannot_be_rewritten_pass_through_unchanged_and_are_counted,
            lists_that_cannot_be_filtered_are_refused_under_a_policy,
            notifications_calls_and_other_methods_are_not_buffered_on_the_way_back,
            batches,
            paginated_lists_learn_every_page_and_only_the_first_gets_the_search_tool,
            a_catalog_learned_on_one_worker_is_searched_on_another,
            an_oversized_sse_event_passes_through_and_is_counted,
            an_oversized_json_list_passes_through_whole_and_is_counted
        );
    };
    (@each $d:ty; $($name:ident),*) => {
        $(
            #[test]
            fn $name() {
                support_scenarios::$name::<$d>();
            }
        )*
    };
}

pub fn protocol_2026_search_reply_says_complete_and_mismatch_is_400<D: Driver>() {
    let mut env = learned::<D>("{}");
    let modern = |method: &str, name: &str| RequestHead {
        mcp: Mirrored::of(Some(method), Some(name), Some("2026-07-28")),
        ..post("/mcp")
    };
    let body = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"refund"},"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"t"}}}}"#;
    let out = env.exchange(
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
    let out = env.exchange(
        modern("tools/call", "other_tool"),
        body,
        ("200", "application/json", &[]),
    );
    assert_eq!(
        mismatch(out),
        "Header mismatch: Mcp-Name header value 'other_tool' does not match body value 'tool_search'"
    );
    let out = env.exchange(
        modern("tools/list", "tool_search"),
        body,
        ("200", "application/json", &[]),
    );
    assert_eq!(
        mismatch(out),
        "Header mismatch: Mcp-Method header value 'tools/list' does not match body value 'tools/call'"
    );
    // The name in the Base64 sentinel form (Streamable HTTP 2026-07-28, "Value Encoding").
    let out = env.exchange(
        modern("tools/call", "=?base64?dG9vbF9zZWFyY2g=?="),
        body,
        ("200", "application/json", &[]),
    );
    let reply: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
}

pub fn search_replies_and_argument_errors<D: Driver>() {
    let mut env = learned::<D>(r#"{"eager_patterns":["get_*"]}"#);
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
    assert_eq!(env.count(Event::SearchAnswered(Ranking::Bm25)), 3);
    let other_ns = search(&mut env, r#"{"query":"x","namespace":"elsewhere"}"#);
    assert_eq!(other_ns["result"]["isError"], true);
}

/// With fetching off (on, the filter fetches the catalog itself: `catalog_fetch.rs` and the
/// Envoy end-to-end tests).
pub fn search_before_any_list_tells_the_agent_what_to_do<D: Driver>() {
    let mut env = D::with_config(r#"{"catalog":{"fetch":false}}"#);
    let reply = search(&mut env, r#"{"query":"anything"}"#);
    assert_eq!(reply["result"]["isError"], true);
    assert!(reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("call tools/list"));
}

pub fn sse_only_clients_get_an_sse_reply_with_their_session<D: Driver>() {
    let mut env = learned::<D>("{}");
    let head = RequestHead {
        accept: Some("text/event-stream".into()),
        session_id: Some("s-1".into()),
        ..post("/mcp")
    };
    let body = br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"weather"}}}"#;
    let Outcome::Local { headers, body, .. } = env.exchange(head, body, ("200", "", &[])) else {
        panic!()
    };
    assert!(headers.contains(&("content-type".into(), "text/event-stream".into())));
    assert!(headers.contains(&("mcp-session-id".into(), "s-1".into())));
    let msgs = messages(&body, true);
    assert_eq!(msgs[0]["id"], 4);
}

pub fn bodies_that_cannot_be_rewritten_pass_through_unchanged_and_are_counted<D: Driver>() {
    let mut env = D::with_config("{}");
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
        let out = env.exchange(post("/mcp"), LIST, (status, ct, &[body]));
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
    // Unparseable SSE: the event goes through as it came, and the stream goes on.
    let sse = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[}\n\n: after\n\n";
    let out = env.exchange(post("/mcp"), LIST, ("200", "text/event-stream", &[sse]));
    assert_eq!(out.body(), sse);
    assert_eq!(env.count(Event::PassedThrough(PassReason::Unparseable)), 2);
}

/// Under a policy, a list the filter cannot read would show the caller tools it may not use: it
/// is replaced by a JSON-RPC error instead (README "Stats": fail closed). The caller is named in
/// `mcp-session-id`, the one free-form header every driver sends from a `RequestHead`.
pub fn lists_that_cannot_be_filtered_are_refused_under_a_policy<D: Driver>() {
    let config = r#"{"max_body_bytes":1024,"eager_patterns":["*"],"authorization":{
        "identity":{"source":"header","header":"mcp-session-id"},
        "rules":[{"claim":"roles","values":["support"],"tools":["get_*","slack_*"]}],
        "default":"deny"}}"#;
    let mut env = D::with_config(config);
    let support = || RequestHead {
        session_id: Some("support".into()),
        caller: Caller::from_header("roles", "support"),
        ..post("/mcp")
    };
    let error = |reason: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":-32603,"message":"the tool list could not be filtered for this caller ({reason}); ask the operator"}}}}"#
        )
    };
    let sse = |data: &str| format!("event: message\ndata: {data}\n\n");
    let tools = std::str::from_utf8(TOOLS).unwrap();

    // The control: a list it can read is filtered for the caller, not refused.
    let out = env.exchange(support(), LIST, ("200", "application/json", &[TOOLS]));
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    let names: Vec<&str> = v["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["get_weather", "slack_post_message"], "{v}");
    assert_eq!(env.count(Event::ListRewritten), 1);

    let unparseable =
        r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"stripe_refund_charge"},{]}}"#;
    let large = tools.replace(
        r#"{"name":"stripe_refund_charge","description":"Refund a charge"}"#,
        &vec![r#"{"name":"stripe_refund_charge","description":"Refund a charge"}"#; 20].join(","),
    );
    assert!(large.len() > 1024 && TOOLS.len() < 1024);
    let large_sse = sse(&large);
    fn pieces(s: &str) -> Vec<&[u8]> {
        s.as_bytes().chunks(300).collect()
    }
    let unparseable_sse = sse(unparseable);
    // (status, content type, body pieces, what the client gets, why).
    type Case<'a> = (&'a str, &'a str, Vec<&'a [u8]>, String, PassReason);
    let cases: [Case; 5] = [
        (
            "200",
            "text/plain",
            vec![TOOLS],
            error("content_type"),
            PassReason::ContentType,
        ),
        (
            "200",
            "application/json",
            vec![unparseable.as_bytes()],
            error("unparseable"),
            PassReason::Unparseable,
        ),
        (
            "200",
            "text/event-stream",
            vec![unparseable_sse.as_bytes()],
            sse(&error("unparseable")),
            PassReason::Unparseable,
        ),
        (
            "200",
            "application/json",
            pieces(&large),
            error("too_large"),
            PassReason::TooLarge,
        ),
        (
            "200",
            "text/event-stream",
            pieces(&large_sse),
            sse(&error("too_large")),
            PassReason::TooLarge,
        ),
    ];
    for (status, content_type, chunks, want, reason) in cases {
        let before = env.count(Event::PassedThrough(reason));
        let out = env.exchange(support(), LIST, (status, content_type, &chunks));
        assert_eq!(
            out,
            Outcome::Upstream {
                body: want.into_bytes(),
                rewritten: true
            },
            "{content_type} ({reason:?}): {}",
            String::from_utf8_lossy(out.body())
        );
        assert_eq!(
            env.count(Event::PassedThrough(reason)),
            before + 1,
            "{reason:?}"
        );
    }
    // Under another status the code passes the list on unchanged, policy or not, although README
    // "Stats" names "not 200" among the reasons a list is refused under a policy.
    let out = env.exchange(support(), LIST, ("500", "application/json", &[TOOLS]));
    assert_eq!(
        out,
        Outcome::Upstream {
            body: TOOLS.to_vec(),
            rewritten: false
        }
    );
    assert_eq!(env.count(Event::PassedThrough(PassReason::Status)), 1);
    assert_eq!(
        env.count(Event::ListRewritten),
        1,
        "nothing refused was counted as rewritten"
    );
}

pub fn notifications_calls_and_other_methods_are_not_buffered_on_the_way_back<D: Driver>() {
    let mut env = D::with_config("{}");
    let stream: [&[u8]; 3] = [
        b"event: message\ndata: {\"progress\":1}\n\n",
        b": ping\n\n",
        b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n",
    ];
    for body in [
        &br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#[..],
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_weather","arguments":{}}}"#,
        br#"{"jsonrpc":"2.0","id":3,"method":"resources/list"}"#,
        b"not json at all",
    ] {
        let out = env.exchange(post("/mcp"), body, ("200", "text/event-stream", &stream));
        assert_eq!(
            out,
            Outcome::Upstream {
                body: stream.concat(),
                rewritten: false
            }
        );
    }
    assert_eq!(env.events_total(), 0);
}

pub fn batches<D: Driver>() {
    let mut env = learned::<D>("{}");
    // A batch of searches is answered locally, as a batch.
    let body = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"slack"}}},{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"tool_search","arguments":{"query":"weather"}}}]"#;
    let out = env.exchange(post("/mcp"), body, ("200", "application/json", &[]));
    let replies: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(replies[0]["id"], 1);
    assert_eq!(replies[1]["id"], "b");
    // Mixed with an upstream call: passes through, counted.
    let mixed = br#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"slack"}}},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#;
    let out = env.exchange(post("/mcp"), mixed, ("200", "application/json", &[b"[]"]));
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
    let out = env.exchange(
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

pub fn paginated_lists_learn_every_page_and_only_the_first_gets_the_search_tool<D: Driver>() {
    let mut env = D::with_config("{}");
    let page1 = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a_one","description":"first"}],"nextCursor":"p2"}}"#;
    let page2 =
        br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"b_two","description":"second"}]}}"#;
    let out = env.exchange(post("/mcp"), LIST, ("200", "application/json", &[page1]));
    let v: Value = serde_json::from_slice(out.body()).unwrap();
    assert_eq!(v["result"]["tools"][0]["name"], "tool_search");
    assert_eq!(v["result"]["nextCursor"], "p2");
    let req2 = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"p2"}}"#;
    let out = env.exchange(post("/mcp"), req2, ("200", "application/json", &[page2]));
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

pub fn a_catalog_learned_on_one_worker_is_searched_on_another<D: Driver>() {
    let (mut worker1, mut worker2) = D::two_workers("{}");
    let _ = worker1.exchange(post("/mcp"), LIST, ("200", "application/json", &[TOOLS]));
    let reply = search(&mut worker2, r#"{"query":"slack message"}"#);
    let defs: Value =
        serde_json::from_str(reply["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(defs[0]["name"], "slack_post_message");
}

/// An SSE event larger than `max_body_bytes` is not held to be rewritten: it reaches the client
/// as the upstream sent it, piece by piece, and is counted.
pub fn an_oversized_sse_event_passes_through_and_is_counted<D: Driver>() {
    let mut env = D::with_config(r#"{"max_body_bytes":1024}"#);
    let big = format!(
        "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"tools\":[{{\"name\":\"a\",\"description\":\"{}\"}}]}}}}\n\n",
        "x".repeat(4000)
    );
    let chunks: Vec<&[u8]> = big.as_bytes().chunks(512).collect();
    let out = env.exchange(post("/mcp"), LIST, ("200", "text/event-stream", &chunks));
    assert_eq!(out.body(), big.as_bytes());
    assert_eq!(env.count(Event::PassedThrough(PassReason::TooLarge)), 1);
}

/// A JSON list larger than `max_body_bytes` goes through whole and unchanged, and is counted.
pub fn an_oversized_json_list_passes_through_whole_and_is_counted<D: Driver>() {
    let mut env = D::with_config(r#"{"max_body_bytes":1024}"#);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{{"name":"a","description":"{}"}}]}}}}"#,
        "x".repeat(5000)
    );
    let chunks: Vec<&[u8]> = big.as_bytes().chunks(700).collect();
    let out = env.exchange(post("/mcp"), LIST, ("200", "application/json", &chunks));
    assert_eq!(out.body(), big.as_bytes());
    assert_eq!(env.count(Event::PassedThrough(PassReason::TooLarge)), 1);
}
