use super::*;

fn spec(context: Context) -> FetchSpec {
    FetchSpec {
        origin: Origin {
            cluster: "upstream".into(),
            authority: "svc.local".into(),
            path: "/mcp".into(),
        },
        context,
        headers: vec![("authorization".into(), "Bearer t".into())],
        timeout_ms: 1000,
        max_bytes: 1 << 20,
        credential: String::new(),
    }
}

fn header<'a>(call: &'a HttpCall, name: &str) -> Option<&'a str> {
    call.headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn body(call: &HttpCall) -> serde_json::Value {
    serde_json::from_slice(&call.body).unwrap()
}

fn tool(name: &str) -> String {
    format!(r#"{{"name":"{name}","description":"does {name}","inputSchema":{{"type":"object"}}}}"#)
}

fn list_result(id: u64, names: &[&str], extra: &str) -> String {
    let tools: Vec<String> = names.iter().map(|n| tool(n)).collect();
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[{}]{extra}}}}}"#,
        tools.join(",")
    )
}

fn call(step: Step) -> HttpCall {
    match step {
        Step::Call(c) => c,
        Step::Done(r, _) => panic!("expected a call, got {r:?}"),
    }
}

fn done(step: Step) -> (Result<Fetched, FetchError>, Option<HttpCall>) {
    match step {
        Step::Done(r, c) => (r, c),
        Step::Call(c) => panic!("expected the end, got a call {c:?}"),
    }
}

/// The end of a fetch in a caller's context, after the prompts, resources and templates lists
/// it then asks for, each answered "method not found" (a server with tools only).
fn done_without_extras(
    fetch: &mut Fetch,
    mut step: Step,
) -> (Result<Fetched, FetchError>, Option<HttpCall>) {
    for method in ["prompts/list", "resources/list", "resources/templates/list"] {
        let next = call(step);
        let b = body(&next);
        assert_eq!(b["method"], method);
        let refusal = format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32601,"message":"Method not found"}}}}"#,
            b["id"]
        );
        step = fetch.on_response(Some("200"), &[], refusal.as_bytes(), 1);
    }
    done(step)
}

fn names(f: &Fetched) -> Vec<&str> {
    f.tools.iter().map(|t| t.name.as_ref()).collect()
}

#[test]
fn own_session_initializes_lists_every_page_and_closes() {
    let (mut fetch, first) = Fetch::start(spec(Context::Own), 0);
    assert_eq!(header(&first, ":method"), Some("POST"));
    assert_eq!(header(&first, ":path"), Some("/mcp"));
    assert_eq!(header(&first, ":authority"), Some("svc.local"));
    assert_eq!(header(&first, "authorization"), Some("Bearer t"));
    assert_eq!(header(&first, "mcp-session-id"), None);
    assert_eq!(body(&first)["method"], "initialize");
    assert_eq!(
        body(&first)["params"]["protocolVersion"],
        OWN_PROTOCOL_VERSION
    );

    let init =
        r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{}}}"#;
    let session = vec![("mcp-session-id".to_string(), "s-1".to_string())];
    let notified = call(fetch.on_response(Some("200"), &session, init.as_bytes(), 5));
    assert_eq!(body(&notified)["method"], "notifications/initialized");
    assert_eq!(header(&notified, "mcp-session-id"), Some("s-1"));
    assert_eq!(
        header(&notified, "mcp-protocol-version"),
        Some("2025-06-18")
    );

    let page1 = call(fetch.on_response(Some("202"), &[], b"", 6));
    assert_eq!(body(&page1)["method"], "tools/list");
    assert_eq!(body(&page1)["params"], serde_json::json!({}));
    assert_eq!(header(&page1, "mcp-session-id"), Some("s-1"));
    let id = body(&page1)["id"].as_u64().unwrap();

    // SSE with CRLF, a notification before the response, as the Python SDK sends it.
    let sse = format!(
        "event: message\r\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{}}}}\r\n\r\nevent: message\r\ndata: {}\r\n\r\n",
        list_result(id, &["b_tool", "a_tool"], r#","nextCursor":"p2""#)
    );
    let page2 = call(fetch.on_response(Some("200"), &[], sse.as_bytes(), 7));
    assert_eq!(body(&page2)["params"]["cursor"], "p2");
    let id = body(&page2)["id"].as_u64().unwrap();
    let (result, close) = done(fetch.on_response(
        Some("200"),
        &[],
        list_result(id, &["c_tool"], "").as_bytes(),
        8,
    ));
    let fetched = result.unwrap();
    assert_eq!(names(&fetched), ["b_tool", "a_tool", "c_tool"]);
    assert_eq!(fetched.pages, 2);
    let close = close.expect("the filter's own session is closed");
    assert_eq!(header(&close, ":method"), Some("DELETE"));
    assert_eq!(header(&close, "mcp-session-id"), Some("s-1"));
}

#[test]
fn a_stateless_server_gets_no_delete() {
    let (mut fetch, _) = Fetch::start(spec(Context::Own), 0);
    let init = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}"#;
    let _ = call(fetch.on_response(Some("200"), &[], init.as_bytes(), 1));
    let list = call(fetch.on_response(Some("202"), &[], b"", 1));
    assert_eq!(header(&list, "mcp-session-id"), None);
    let id = body(&list)["id"].as_u64().unwrap();
    let (result, close) =
        done(fetch.on_response(Some("200"), &[], list_result(id, &["x"], "").as_bytes(), 2));
    assert_eq!(names(&result.unwrap()), ["x"]);
    assert!(close.is_none());
}

#[test]
fn the_callers_session_is_used_and_replaced_by_an_own_one_when_refused() {
    let (mut fetch, first) = Fetch::start(
        spec(Context::Session {
            id: "caller".into(),
            protocol_version: "2025-06-18".into(),
        }),
        0,
    );
    assert_eq!(body(&first)["method"], "tools/list");
    assert_eq!(header(&first, "mcp-session-id"), Some("caller"));
    assert_eq!(header(&first, "mcp-protocol-version"), Some("2025-06-18"));
    let init = call(fetch.on_response(Some("404"), &[], b"session not found", 1));
    assert_eq!(body(&init)["method"], "initialize");
    assert_eq!(header(&init, "mcp-session-id"), None);
    // A caller's session is never closed by the filter.
    let (mut fetch, _) = Fetch::start(
        spec(Context::Session {
            id: "caller".into(),
            protocol_version: "2025-06-18".into(),
        }),
        0,
    );
    let step = fetch.on_response(Some("200"), &[], list_result(1, &["t"], "").as_bytes(), 1);
    let (result, close) = done_without_extras(&mut fetch, step);
    assert!(result.is_ok());
    assert!(close.is_none());
}

#[test]
fn modern_lists_are_stateless_with_meta_and_report_cache_scope() {
    let (mut fetch, first) = Fetch::start(spec(Context::Modern), 0);
    let b = body(&first);
    assert_eq!(b["method"], "tools/list");
    assert_eq!(
        b["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        MODERN_PROTOCOL_VERSION
    );
    assert_eq!(header(&first, "mcp-method"), Some("tools/list"));
    assert_eq!(
        header(&first, "mcp-protocol-version"),
        Some(MODERN_PROTOCOL_VERSION)
    );
    let step = fetch.on_response(
        Some("200"),
        &[],
        list_result(
            1,
            &["t"],
            r#","cacheScope":"private","ttlMs":30000,"resultType":"complete""#,
        )
        .as_bytes(),
        1,
    );
    let (result, _) = done_without_extras(&mut fetch, step);
    let fetched = result.unwrap();
    assert!(fetched.private);
    assert_eq!(fetched.ttl_ms, Some(30000));
}

#[test]
fn a_server_without_initialize_is_asked_the_2026_way() {
    for refusal in [
        (Some("400"), r#"{"error":"unsupported"}"#.to_string()),
        (
            Some("200"),
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}"#
                .to_string(),
        ),
    ] {
        let (mut fetch, _) = Fetch::start(spec(Context::Own), 0);
        let next = call(fetch.on_response(refusal.0, &[], refusal.1.as_bytes(), 1));
        assert_eq!(body(&next)["method"], "tools/list");
        assert_eq!(header(&next, "mcp-method"), Some("tools/list"));
    }
}

#[test]
fn failures_name_the_step_and_the_reason() {
    let listing = || {
        Fetch::start(
            spec(Context::Session {
                id: "s".into(),
                protocol_version: "2025-06-18".into(),
            }),
            100,
        )
        .0
    };
    let error = |mut fetch: Fetch, status: Option<&str>, body: &[u8], now: u64| {
        done(fetch.on_response(status, &[], body, now))
            .0
            .unwrap_err()
    };
    assert_eq!(
        error(listing(), None, b"", 1100),
        FetchError::Timeout {
            step: "tools/list",
            after_ms: 1000
        }
    );
    assert_eq!(
        error(listing(), None, b"", 150),
        FetchError::Unreachable { step: "tools/list" }
    );
    // Envoy's own answers: a connect failure, and a timeout seen a millisecond early.
    assert_eq!(
        error(
            Fetch::start(spec(Context::Modern), 100).0,
            Some("503"),
            b"upstream connect error or disconnect/reset before headers. reset reason: remote connection failure",
            110
        ),
        FetchError::Unreachable { step: "tools/list" }
    );
    assert_eq!(
        error(listing(), Some("504"), b"upstream request timeout", 1099),
        FetchError::Timeout {
            step: "tools/list",
            after_ms: 1000
        }
    );
    assert_eq!(
        error(listing(), Some("504"), b"upstream request timeout", 1100),
        FetchError::Timeout {
            step: "tools/list",
            after_ms: 1000
        }
    );
    assert_eq!(
        error(
            Fetch::start(spec(Context::Modern), 100).0,
            Some("504"),
            b"gateway timeout",
            150
        )
        .kind(),
        "status",
        "a server's own 504 before the timeout is its answer"
    );
    let (mut own, _) = Fetch::start(spec(Context::Own), 0);
    assert_eq!(
        done(own.on_response(Some("500"), &[], b"oops", 1))
            .0
            .unwrap_err(),
        FetchError::Status {
            step: "initialize",
            status: "500".into()
        }
    );
    let garbage = error(listing(), Some("200"), b"<html>oops</html>", 101);
    assert_eq!(garbage.kind(), "unparseable");
    assert!(garbage.to_string().starts_with("tools/list: "), "{garbage}");
    let rpc = error(
        listing(),
        Some("200"),
        br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"boom"}}"#,
        101,
    );
    assert_eq!(
        rpc.to_string(),
        "tools/list: the server answered JSON-RPC error -32603: boom"
    );
    let shapeless = error(
        listing(),
        Some("200"),
        br#"{"jsonrpc":"2.0","id":1,"result":{"tools":{}}}"#,
        101,
    );
    assert_eq!(shapeless.kind(), "unparseable");
    let other_id = error(
        listing(),
        Some("200"),
        list_result(7, &["t"], "").as_bytes(),
        101,
    );
    assert_eq!(
        other_id,
        FetchError::Reply {
            step: "tools/list",
            error: ReplyError::NoResponse
        }
    );
    let mut small = spec(Context::Modern);
    small.max_bytes = 10;
    let (fetch, _) = Fetch::start(small, 0);
    assert_eq!(
        error(fetch, Some("200"), list_result(1, &["t"], "").as_bytes(), 1),
        FetchError::TooLarge { limit: 10 }
    );
}

#[test]
fn a_cursor_loop_ends_the_fetch() {
    let (mut fetch, _) = Fetch::start(spec(Context::Modern), 0);
    let page = |id| list_result(id, &["t"], r#","nextCursor":"same""#);
    let _ = call(fetch.on_response(Some("200"), &[], page(1).as_bytes(), 1));
    let (result, _) = done(fetch.on_response(Some("200"), &[], page(2).as_bytes(), 1));
    assert_eq!(result.unwrap_err(), FetchError::TooManyPages);
}

#[test]
fn entries_that_are_not_tools_are_skipped_as_learning_skips_them() {
    let (mut fetch, _) = Fetch::start(spec(Context::Modern), 0);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{},{{"name":7}},{{"description":"no name"}},"text",{{"name":"ok","description":"second"}}]}}}}"#,
        tool("ok")
    );
    let step = fetch.on_response(Some("200"), &[], body.as_bytes(), 1);
    let (result, _) = done_without_extras(&mut fetch, step);
    let fetched = result.unwrap();
    assert_eq!(names(&fetched), ["ok"]);
    assert_eq!(
        &*fetched.tools[0].description, "does ok",
        "the first of a name wins"
    );
}

/// A server that declares prompts and resources has them listed after its tools, every page;
/// templates it refuses are none; what it did not declare is not asked for.
#[test]
fn declared_prompts_and_resources_are_listed_after_the_tools() {
    let (mut fetch, _) = Fetch::start(spec(Context::Own), 0);
    let init = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"prompts":{},"resources":{"subscribe":true}}}}"#;
    let session = vec![("mcp-session-id".to_string(), "s-9".to_string())];
    let _ = call(fetch.on_response(Some("200"), &session, init.as_bytes(), 1));
    let tools = call(fetch.on_response(Some("202"), &[], b"", 1));
    let id = body(&tools)["id"].as_u64().unwrap();
    let prompts =
        call(fetch.on_response(Some("200"), &[], list_result(id, &["t"], "").as_bytes(), 1));
    assert_eq!(body(&prompts)["method"], "prompts/list");
    assert_eq!(body(&prompts)["params"], serde_json::json!({}));
    let reply = |call: &HttpCall, result: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
            body(call)["id"]
        )
    };
    let page2 = call(fetch.on_response(Some("200"), &[],
        reply(&prompts, r#"{"prompts":[{"name":"triage","description":"Triage a ticket"}],"nextCursor":"n"}"#).as_bytes(), 1));
    assert_eq!(body(&page2)["method"], "prompts/list");
    assert_eq!(body(&page2)["params"]["cursor"], "n");
    let resources = call(
        fetch.on_response(
            Some("200"),
            &[],
            reply(
                &page2,
                r#"{"prompts":[{"name":"standup"},{"name":"triage"}]}"#,
            )
            .as_bytes(),
            1,
        ),
    );
    assert_eq!(body(&resources)["method"], "resources/list");
    let templates = call(
        fetch.on_response(
            Some("200"),
            &[],
            reply(
                &resources,
                r#"{"resources":[{"uri":"kb://a","name":"a"},{"name":"no uri"}]}"#,
            )
            .as_bytes(),
            1,
        ),
    );
    assert_eq!(body(&templates)["method"], "resources/templates/list");
    let (result, close) = done(fetch.on_response(Some("404"), &[], b"not here", 1));
    let fetched = result.unwrap();
    assert_eq!(names(&fetched), ["t"]);
    let kinds: Vec<(Entry, Vec<&str>)> = fetched
        .entries
        .iter()
        .map(|(e, list)| (*e, list.iter().map(|t| t.name.as_ref()).collect()))
        .collect();
    assert_eq!(
        kinds,
        [
            (Entry::Prompt, vec!["triage", "standup"]),
            (Entry::Resource, vec!["kb://a"])
        ]
    );
    assert!(close.is_some());

    // Declared: tools only. Nothing else is asked for.
    let (mut fetch, _) = Fetch::start(spec(Context::Own), 0);
    let init = r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}}}}"#;
    let _ = call(fetch.on_response(Some("200"), &[], init.as_bytes(), 1));
    let tools = call(fetch.on_response(Some("202"), &[], b"", 1));
    let id = body(&tools)["id"].as_u64().unwrap();
    let (result, _) =
        done(fetch.on_response(Some("200"), &[], list_result(id, &["t"], "").as_bytes(), 1));
    assert!(result.unwrap().entries.is_empty());

    // A timed-out extra list leaves the tools fetched.
    let (mut fetch, _) = Fetch::start(
        spec(Context::Session {
            id: "s".into(),
            protocol_version: "2025-06-18".into(),
        }),
        0,
    );
    let prompts =
        call(fetch.on_response(Some("200"), &[], list_result(1, &["t"], "").as_bytes(), 1));
    assert_eq!(body(&prompts)["method"], "prompts/list");
    let resources = call(fetch.on_response(None, &[], b"", 2000));
    assert_eq!(body(&resources)["method"], "resources/list");
}

/// Prompts and resources never cost the tools: a private list is not kept, an unreadable page
/// or a cursor loop leaves that kind out, and the fetch goes on.
#[test]
fn extra_lists_the_filter_cannot_keep_are_left_out() {
    let (mut fetch, _) = Fetch::start(spec(Context::Modern), 0);
    let reply = |call: &HttpCall, result: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#,
            body(call)["id"]
        )
    };
    let prompts =
        call(fetch.on_response(Some("200"), &[], list_result(1, &["t"], "").as_bytes(), 1));
    let resources = call(
        fetch.on_response(
            Some("200"),
            &[],
            reply(
                &prompts,
                r#"{"prompts":[{"name":"mine"}],"cacheScope":"private"}"#,
            )
            .as_bytes(),
            1,
        ),
    );
    assert_eq!(body(&resources)["method"], "resources/list");
    let loop1 = call(
        fetch.on_response(
            Some("200"),
            &[],
            reply(
                &resources,
                r#"{"resources":[{"uri":"kb://a"}],"nextCursor":"c"}"#,
            )
            .as_bytes(),
            1,
        ),
    );
    assert_eq!(body(&loop1)["params"]["cursor"], "c");
    let templates = call(
        fetch.on_response(
            Some("200"),
            &[],
            reply(
                &loop1,
                r#"{"resources":[{"uri":"kb://b"}],"nextCursor":"c"}"#,
            )
            .as_bytes(),
            1,
        ),
    );
    assert_eq!(body(&templates)["method"], "resources/templates/list");
    let (result, _) = done(fetch.on_response(
        Some("200"),
        &[],
        reply(&templates, r#"{"resourceTemplates":"not a list"}"#).as_bytes(),
        1,
    ));
    let fetched = result.unwrap();
    assert_eq!(names(&fetched), ["t"]);
    assert!(fetched.entries.is_empty(), "{:?}", fetched.entries);
}
