//! Issue "Search modes", end to end with the rmcp client (and raw HTTP where the wire matters)
//! through Envoy 1.40 and the mcp-tool-search `.wasm`, against the rmcp `catalog-server`:
//! `mode` search / list / auto, summary results with `describe_tool` and `call_tool`, paging,
//! groups, and the score threshold.
//!
//! Needs Envoy (`ENVOY_BIN`, else `.venv/bin/envoy`) and the built filter (`make wasm`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use mcp_tool_search_wasm_tests::harness::{CatalogOptions, CatalogServer, TestDir};
use mcp_tool_search_wasm_tests::mcp::{self, McpClient};
use rmcp::model::{CallToolResult, NumberOrString, ProgressToken, RequestParamsMeta};
use serde_json::{json, Value};
use support::*;

/// The eager tools of the 300-tool catalog under `github_get_*`.
const EAGER: [&str; 4] = [
    "github_get_issue",
    "github_get_pull_request",
    "github_get_repository",
    "github_get_file_contents",
];

fn json_upstream() -> CatalogOptions {
    CatalogOptions {
        json: true,
        stateless: true,
        ..CatalogOptions::default()
    }
}

fn sse_upstream() -> CatalogOptions {
    CatalogOptions {
        stateless: true,
        ..CatalogOptions::default()
    }
}

/// The plugin config: eager `github_get_*`, plus these fields.
fn config(extra: Value) -> Value {
    let mut c = json!({"mcp_paths": ["/mcp"], "eager_patterns": ["github_get_*"]});
    if let (Value::Object(map), Value::Object(more)) = (&mut c, extra) {
        map.extend(more);
    }
    c
}

/// Every tool as the upstream itself serves it (no Envoy), in order.
async fn upstream_tools(stack: &Stack) -> Vec<Value> {
    let (client, _) = connect(&stack.upstream.mcp_url(), &[]).await;
    let tools = client.list_all_tools().await.expect("upstream tools/list");
    let _ = client.cancel().await;
    tools.iter().map(to_value).collect()
}

async fn list_through(client: &McpClient) -> Vec<Value> {
    client
        .list_all_tools()
        .await
        .expect("tools/list through Envoy")
        .iter()
        .map(to_value)
        .collect()
}

async fn search(client: &McpClient, args: Value) -> CallToolResult {
    let result = client
        .call_tool(call(TOOL_SEARCH, args.clone()))
        .await
        .unwrap_or_else(|e| panic!("tool_search {args}: {e}"));
    assert_ne!(
        result.is_error,
        Some(true),
        "tool_search {args}: {}",
        to_value(&result)
    );
    result
}

fn meta_u64(meta: &Value, key: &str) -> u64 {
    meta[key]
        .as_u64()
        .unwrap_or_else(|| panic!("_meta has no integer {key:?}: {meta}"))
}

/// The listing in search behaviour: the eager tools and the search tool (plus these).
fn search_view(extra: &[&str]) -> BTreeSet<String> {
    EAGER
        .iter()
        .chain([TOOL_SEARCH].iter())
        .chain(extra)
        .map(|s| (*s).to_owned())
        .collect()
}

// ---- modes ---------------------------------------------------------------------------------------

/// `mode` absent and `"search"`: progressive tools hidden behind the search tool. With no
/// `group_separator`, every tool is in one group (the namespace): no `list_tool_groups`, no
/// `group` argument.
#[tokio::test]
async fn mode_search_is_the_default() {
    let default = Setup::new(config(json!({}))).start("modes_default");
    let explicit = Setup::new(config(json!({"mode": "search"}))).start("modes_search");
    within("mode_search_is_the_default", async {
        for stack in [&default, &explicit] {
            let upstream = upstream_tools(stack).await;
            let (client, _) = connect(&stack.url(), &[]).await;
            let tools = list_through(&client).await;
            assert_eq!(name_set(&tools), search_view(&[]));
            for n in EAGER {
                assert_eq!(by_name(&tools, n), by_name(&upstream, n));
            }
            let search_tool = by_name(&tools, TOOL_SEARCH);
            assert!(
                search_tool["inputSchema"]["properties"]
                    .get("group")
                    .is_none(),
                "{search_tool}"
            );
            let d = search_tool["description"].as_str().unwrap_or("");
            assert!(d.contains("297 more tools are available"), "{d}");
            let r = search(&client, json!({"query": "refund a stripe charge"})).await;
            assert_eq!(names(&found_definitions(&r))[0], "stripe_refund_charge");
            let _ = client.cancel().await;
        }
    })
    .await;
}

/// `mode: "list"` (the kill switch): the list is exactly what the upstream sent, byte for
/// byte, and no search tool is offered or answered.
#[tokio::test]
async fn mode_list_returns_the_upstream_list_unchanged() {
    let json_stack = Setup::new(config(json!({"mode": "list"})))
        .catalog(json_upstream())
        .start("modes_list_json");
    let sse_stack = Setup::new(config(json!({"mode": "list"})))
        .catalog(CatalogOptions {
            page_size: 100,
            ..CatalogOptions::default()
        })
        .start("modes_list_sse_paged");
    within("mode_list_returns_the_upstream_list_unchanged", async {
        // Raw bytes, JSON: the same request straight to the upstream and through Envoy.
        let body = list_request(7, None);
        let h = [("mcp-protocol-version", "2025-11-25")];
        let direct = rpc(&json_stack.upstream.mcp_url(), &h, &body).await;
        let through = rpc(&json_stack.url(), &h, &body).await;
        assert_eq!(through.status, 200);
        assert_eq!(through.content_type(), direct.content_type());
        assert!(through.body == direct.body, "list mode must pass the list byte for byte");
        assert_eq!(listed(&through, 7).len(), 301);

        // The rmcp client, SSE, stateful, paged.
        for stack in [&json_stack, &sse_stack] {
            let upstream = upstream_tools(stack).await;
            let (client, _) = connect(&stack.url(), &[]).await;
            assert_eq!(list_through(&client).await, upstream, "every page unchanged");
            // tool_search is not the filter's in list mode: it goes upstream, which knows no such tool.
            let r = client.call_tool(call(TOOL_SEARCH, json!({"query": "refund"}))).await;
            assert!(r.is_err(), "tool_search must not be answered in list mode: {r:?}");
            let ok = client
                .call_tool(call("stripe_refund_charge", json!({"charge_id": "ch_1", "amount": 1})))
                .await
                .expect("tools/call");
            assert_upstream_ok(&ok, "stripe_refund_charge");
            let _ = client.cancel().await;
            let rec = stack.recorded();
            assert!(rec.contains(&format!("tools/call {TOOL_SEARCH}")), "{rec:?}");
        }
        // Nothing to rewrite, so nothing held: the upstream's framing stays (a kill switch
        // takes the filter out of the way).
        assert_eq!(
            through.header("content-length"),
            direct.header("content-length"),
            "list mode without a policy still drops content-length from tools/list responses (and holds the body)"
        );
    })
    .await;
}

/// `mode: "list"` under an authorization policy still removes what the caller may not use
/// (and lists every tool it may, eager or not).
#[tokio::test]
async fn mode_list_still_applies_the_policy() {
    let stack = Setup::new(config(json!({
        "mode": "list",
        "authorization": {
            "identity": {"source": "header", "header": "x-user-roles"},
            "rules": [{"claim": "roles", "values": ["support"], "tools": ["github_*", "slack_*"]}]
        }
    })))
    .start("modes_list_policy");
    within("mode_list_still_applies_the_policy", async {
        let upstream = upstream_tools(&stack).await;
        let (client, _) = connect(&stack.url(), &[("x-user-roles", "support")]).await;
        let tools = list_through(&client).await;
        let mut want: Vec<Value> = upstream
            .iter()
            .filter(|t| {
                let n = t["name"].as_str().unwrap_or("");
                n.starts_with("github_") || n.starts_with("slack_")
            })
            .cloned()
            .collect();
        want.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        assert_eq!(tools, want, "the caller's tools, unchanged, in name order");
        let _ = client.cancel().await;
    })
    .await;
}

/// `mode: "auto"`: search behaviour only when the caller may use more tools than
/// `search_threshold` (301 here, counting the server's `slow_progress`).
#[tokio::test]
async fn mode_auto_follows_the_threshold() {
    let above = Setup::new(config(json!({"mode": "auto", "search_threshold": 400})))
        .start("modes_auto_400");
    let at = Setup::new(config(json!({"mode": "auto", "search_threshold": 301})))
        .start("modes_auto_301");
    let below = Setup::new(config(json!({"mode": "auto", "search_threshold": 300})))
        .start("modes_auto_300");
    within("mode_auto_follows_the_threshold", async {
        for (stack, searching) in [(&above, false), (&at, false), (&below, true)] {
            let upstream = upstream_tools(stack).await;
            let (client, _) = connect(&stack.url(), &[]).await;
            let tools = list_through(&client).await;
            if searching {
                assert_eq!(name_set(&tools), search_view(&[]));
                let r = search(&client, json!({"query": "post a slack message"})).await;
                assert_eq!(names(&found_definitions(&r))[0], "slack_post_message");
            } else {
                assert_eq!(
                    tools, upstream,
                    "at or under the threshold: the list as it is"
                );
            }
            let _ = client.cancel().await;
        }
    })
    .await;
}

/// `mode: "auto"` with a paginated upstream: until a whole list has been seen its size is
/// unknown, so the very first listing is the search view (the search tool on page 1, no page
/// decided by "list"), whatever the threshold. Once every page has been seen the threshold
/// decides: 301 tools are above 150 (search again) and under 400 (the list as it is).
#[tokio::test]
async fn mode_auto_first_paged_listing_is_consistent() {
    let paged = || CatalogOptions {
        stateless: true,
        page_size: 100,
        ..CatalogOptions::default()
    };
    let above = Setup::new(config(json!({"mode": "auto", "search_threshold": 150})))
        .catalog(paged())
        .start("modes_auto_paged");
    let under = Setup::new(config(json!({"mode": "auto", "search_threshold": 400})))
        .catalog(paged())
        .start("modes_auto_paged_under");
    within("mode_auto_first_paged_listing_is_consistent", async {
        for (stack, searching_once_seen) in [(&above, true), (&under, false)] {
            let upstream = upstream_tools(stack).await;
            assert_eq!(upstream.len(), 301);
            let (client, _) = connect(&stack.url(), &[]).await;
            let first = list_through(&client).await;
            let second = list_through(&client).await;
            let _ = client.cancel().await;
            assert_eq!(
                name_set(&first),
                search_view(&[]),
                "first listing (nothing seen yet) must be the search view: {} tools, e.g. {:?}",
                first.len(),
                names(&first).iter().take(10).collect::<Vec<_>>()
            );
            if searching_once_seen {
                assert_eq!(name_set(&second), search_view(&[]), "301 > 150: search");
            } else {
                assert_eq!(
                    second, upstream,
                    "301 <= 400 once the whole list was seen: the list as it is"
                );
            }
        }
    })
    .await;
}

// ---- summary results, describe_tool, call_tool ---------------------------------------------------

/// Events spread over time, not delivered at once.
fn assert_incremental(
    what: &str,
    progress: &[Duration],
    response_at: Duration,
    steps: u32,
    delay: Duration,
) {
    assert_eq!(
        progress.len(),
        steps as usize,
        "{what}: expected {steps} progress events, got {progress:?}"
    );
    eprintln!("{what}: progress at {progress:?}, response at {response_at:?}");
    let first = progress[0];
    let last = progress[progress.len() - 1];
    let want = delay * (steps - 1) / 2;
    assert!(
        last.saturating_sub(first) >= want,
        "{what}: progress bunched together (first {first:?}, last {last:?}): buffered?"
    );
    assert!(
        response_at.saturating_sub(first) >= want,
        "{what}: first progress at {first:?}, response at {response_at:?}: buffered?"
    );
}

/// The summary format end to end on one stack: listing, the header line and one line per
/// tool, describe_tool, call_tool (record, arguments, unchanged response, streaming).
async fn summary_story(stack: &Stack, holding: bool) {
    let upstream = upstream_tools(stack).await;
    let (client, progress) = connect(&stack.url(), &[]).await;
    let tools = list_through(&client).await;
    assert_eq!(
        name_set(&tools),
        search_view(&["describe_tool", "call_tool"])
    );
    let search_tool = by_name(&tools, TOOL_SEARCH);
    assert!(search_tool["description"]
        .as_str()
        .unwrap_or("")
        .contains("one line per matching tool"));
    assert_eq!(
        by_name(&tools, "call_tool")["annotations"]["readOnlyHint"],
        false
    );
    assert_eq!(
        by_name(&tools, "describe_tool")["annotations"]["readOnlyHint"],
        true
    );

    // The search: a header line, one line per tool, a "Next:" line.
    let query = "refund a stripe charge";
    let r = search(&client, json!({"query": query, "limit": 3})).await;
    let text = first_text(&r);
    let meta = search_meta(&r);
    let lines: Vec<&str> = text.lines().collect();
    let (matches, candidates) = (meta_u64(&meta, "matches"), meta_u64(&meta, "candidates"));
    assert_eq!(candidates, 301, "{meta}");
    assert_eq!(
        lines[0],
        format!("{matches} tools of {candidates} match \"{query}\" (showing 1 to 3):"),
        "{text}"
    );
    assert_eq!(lines.len(), 5, "header, 3 tools, next: {text}");
    let shown: Vec<&str> = lines[1..4]
        .iter()
        .map(|l| l.split(" · ").next().unwrap_or(""))
        .collect();
    assert_eq!(shown[0], "stripe_refund_charge", "{text}");
    assert!(
        lines[1].starts_with("stripe_refund_charge · Refund a Stripe charge, fully or partially."),
        "{text}"
    );
    assert!(lines[1].contains("requires: charge_id"), "{text}");
    for name in &shown {
        assert!(
            upstream.iter().any(|t| t["name"] == *name),
            "{name} is an upstream tool"
        );
    }
    assert!(lines[4].starts_with("Next: call describe_tool"), "{text}");
    assert_eq!(texts(&r).len(), 1, "one text content");

    // describe_tool: the full definitions, exactly as the upstream declared them.
    let d = client
        .call_tool(call("describe_tool", json!({"names": shown})))
        .await
        .expect("describe_tool");
    assert_ne!(d.is_error, Some(true), "{}", to_value(&d));
    let defs = found_definitions(&d);
    assert_eq!(names(&defs), shown);
    for def in &defs {
        assert_eq!(def, by_name(&upstream, def["name"].as_str().unwrap_or("")));
    }

    // call_tool: the upstream gets a plain tools/call of the target with its arguments, and
    // its result comes back as it is.
    let args = json!({"charge_id": "ch_42", "amount": 1250, "reason": "requested_by_customer"});
    let forwarded = client
        .call_tool(call(
            "call_tool",
            json!({"name": "stripe_refund_charge", "arguments": args}),
        ))
        .await
        .expect("call_tool");
    let direct = client
        .call_tool(call("stripe_refund_charge", args.clone()))
        .await
        .expect("the same call, direct");
    assert_eq!(
        to_value(&forwarded),
        to_value(&direct),
        "call_tool's result is the upstream's own"
    );
    let echoed = assert_upstream_ok(&forwarded, "stripe_refund_charge");
    assert_eq!(
        echoed["arguments"], args,
        "the arguments reach the upstream unchanged"
    );
    let rec = stack.recorded();
    assert_eq!(
        rec.iter().filter(|l| *l == "tools/call stripe_refund_charge").count(),
        2,
        "call_tool and the direct call both reach the upstream as tools/call stripe_refund_charge: {rec:?}"
    );
    stack.assert_never_called(&["call_tool", "describe_tool", TOOL_SEARCH]);

    // A streamed result through call_tool: progress events still arrive one by one.
    let (steps, delay) = (5u32, Duration::from_millis(250));
    let mut params = call(
        "call_tool",
        json!({"name": "slow_progress", "arguments": {"steps": steps, "delay_ms": delay.as_millis() as u64}}),
    );
    params.set_progress_token(ProgressToken(NumberOrString::String("p-call-tool".into())));
    let start = Instant::now();
    let result = client
        .call_tool(params)
        .await
        .expect("call_tool slow_progress");
    let done = start.elapsed();
    assert_upstream_ok(&result, "slow_progress");
    let times: Vec<Duration> = progress
        .lock()
        .unwrap()
        .iter()
        .map(|(at, _)| at.saturating_duration_since(start))
        .collect();
    assert_incremental("rmcp call_tool slow_progress", &times, done, steps, delay);
    let _ = client.cancel().await;

    // Raw: the response to call_tool is byte for byte the upstream's answer to the plain call
    // (same id), whatever its content type.
    let h = [("mcp-protocol-version", "2025-11-25")];
    let wrapped = rpc(
        &stack.url(),
        &h,
        &call_request(
            9,
            "call_tool",
            json!({"name": "github_list_issues", "arguments": {"owner": "o", "repo": "r"}}),
        ),
    )
    .await;
    let plain = rpc(
        &stack.upstream.mcp_url(),
        &h,
        &call_request(9, "github_list_issues", json!({"owner": "o", "repo": "r"})),
    )
    .await;
    assert_eq!(wrapped.status, 200, "{}", wrapped.text());
    assert_eq!(wrapped.content_type(), plain.content_type());
    let strip_event_ids = |t: String| {
        t.lines()
            .filter(|l| !l.starts_with("id:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        strip_event_ids(wrapped.text()),
        strip_event_ids(plain.text()),
        "the response passes unchanged"
    );

    // A streamed raw call_tool: progress events arrive one by one.
    let body = json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {
        "name": "call_tool",
        "arguments": {"name": "slow_progress", "arguments": {"steps": steps, "delay_ms": delay.as_millis() as u64}},
        "_meta": {"progressToken": "raw-call-tool"}}});
    let resp = rpc(&stack.url(), &h, &body).await;
    assert!(
        resp.content_type().starts_with("text/event-stream"),
        "{:?}",
        resp.headers
    );
    let progress: Vec<Duration> = resp
        .messages
        .iter()
        .filter(|(_, m)| m["method"] == "notifications/progress")
        .map(|(at, _)| *at)
        .collect();
    let response_at = resp
        .messages
        .iter()
        .find(|(_, m)| m["id"] == 10)
        .map(|(at, _)| *at)
        .unwrap_or_else(|| panic!("no response: {}", resp.text()));
    assert_incremental(
        "raw call_tool slow_progress",
        &progress,
        response_at,
        steps,
        delay,
    );

    // Requests the filter answers itself: with held headers, Envoy never even opens an
    // upstream request for them; otherwise the headers have left before the body was read, so
    // each costs the upstream exactly one request, reset before its body. Envoy counts such a
    // request in `upstream_rq_total` when a pooled connection took it, or in
    // `upstream_rq_cancelled` when it was still waiting for a connection: the sum is exact,
    // which of the two is not.
    let before = upstream_requests_opened(stack);
    let posts_before = stack.recorded().len();
    for (i, (name, args)) in [
        (TOOL_SEARCH, json!({"query": "refund"})),
        ("describe_tool", json!({"names": ["stripe_refund_charge"]})),
        (
            "call_tool",
            json!({"name": "describe_tool", "arguments": {}}),
        ),
        ("list_tool_groups", json!({})),
    ]
    .into_iter()
    .enumerate()
    {
        let resp = rpc(&stack.url(), &h, &call_request(20 + i as i64, name, args)).await;
        assert_eq!(resp.status, 200, "{}", resp.text());
        result_of(&resp, 20 + i as i64);
    }
    let opened = upstream_requests_opened(stack) - before;
    let expected = if holding { 0 } else { 4 };
    assert_eq!(
        opened, expected,
        "holding={holding}: upstream requests opened (taken or cancelled while pending) for 4 \
         local answers"
    );
    assert_eq!(
        stack.recorded().len(),
        posts_before,
        "no body of a local answer reached the upstream: {:?}",
        stack.recorded()
    );

    // Protocol 2026-07-28 names the tool in `mcp-name`: with held headers the filter renames
    // it; otherwise the headers already went upstream, and the filter makes the call itself.
    let before = upstream_requests_opened(stack);
    let calls_before = posts_recorded(stack);
    let body = json!({"jsonrpc": "2.0", "id": "c-2026", "method": "tools/call", "params": {
        "name": "call_tool", "arguments": {"name": "slack_post_message", "arguments": {"channel": "C1", "text": "hi"}},
        "_meta": mcp::meta_2026()}});
    let resp = rpc(
        &stack.url(),
        &mcp::headers_2026("tools/call", Some("call_tool")),
        &body,
    )
    .await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    let result = resp
        .response_for(&json!("c-2026"))
        .unwrap_or_else(|| panic!("{}", resp.text()))["result"]
        .clone();
    let result: CallToolResult =
        serde_json::from_value(result).unwrap_or_else(|e| panic!("{e}: {}", resp.text()));
    assert_upstream_ok(&result, "slack_post_message");
    assert_eq!(
        posts_recorded(stack) - calls_before,
        1,
        "the tool ran once: {:?}",
        stack.recorded()
    );
    // Held headers: the renamed request. Forwarded headers: the caller's request (reset
    // before its body) and the filter's own call.
    assert_eq!(
        upstream_requests_opened(stack) - before,
        if holding { 1 } else { 2 },
        "holding={holding}: upstream requests opened for one call_tool"
    );
    stack.assert_never_called(&["call_tool"]);
    let forwarded = stack
        .envoy
        .stats("mcp_tool_search.calls_forwarded")
        .unwrap_or_default();
    assert!(
        forwarded.iter().any(|(_, v)| *v >= 4),
        "calls_forwarded: {forwarded:?}"
    );
}

/// How many `tools/call slack_post_message` the upstream received.
fn posts_recorded(stack: &Stack) -> usize {
    stack
        .recorded()
        .iter()
        .filter(|r| *r == "tools/call slack_post_message")
        .count()
}

/// One of Envoy's counters of the upstream cluster.
fn upstream_stat(stack: &Stack, name: &str) -> u64 {
    let full = format!("cluster.mcp_upstream.{name}");
    stack
        .envoy
        .stats(&full)
        .expect("admin /stats")
        .iter()
        .find(|(n, _)| *n == full)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no {full}"))
}

/// Every upstream request Envoy opened: sent on a connection, or cancelled while it waited for
/// one (a pending request is counted in `upstream_rq_total` only once a connection takes it).
fn upstream_requests_opened(stack: &Stack) -> u64 {
    upstream_stat(stack, "upstream_rq_total") + upstream_stat(stack, "upstream_rq_cancelled")
}

fn summary_config() -> Value {
    config(json!({"search": {"result_format": "summary"}}))
}

/// Summary results with request headers forwarded at once (the default): JSON and SSE
/// upstreams.
#[tokio::test]
async fn summary_results_describe_and_call_tool() {
    let json_stack = Setup::new(summary_config())
        .catalog(json_upstream())
        .start("modes_summary_json");
    let sse_stack = Setup::new(summary_config())
        .catalog(sse_upstream())
        .start("modes_summary_sse");
    within("summary_results_describe_and_call_tool", async {
        summary_story(&json_stack, false).await;
        summary_story(&sse_stack, false).await;
    })
    .await;
}

/// The same with `hold_request_headers` and Envoy's `allow_on_headers_stop_iteration`: a
/// locally answered request never reaches the upstream, and call_tool is renamed in headers.
#[tokio::test]
async fn summary_results_with_held_request_headers() {
    let json_stack = Setup::new(summary_config())
        .catalog(json_upstream())
        .holding()
        .start("modes_summary_json_held");
    let sse_stack = Setup::new(summary_config())
        .catalog(sse_upstream())
        .holding()
        .start("modes_summary_sse_held");
    within("summary_results_with_held_request_headers", async {
        summary_story(&json_stack, true).await;
        summary_story(&sse_stack, true).await;
    })
    .await;
}

// ---- paging ---------------------------------------------------------------------------------------

/// `offset`/`limit` pages are disjoint and together cover every match, in rank order; `_meta`
/// says where each page sits.
#[tokio::test]
async fn paging_is_disjoint_and_covers_the_match() {
    let stack =
        Setup::new(config(json!({"search": {"max_allowable_results": 4}}))).start("modes_paging");
    within("paging_is_disjoint_and_covers_the_match", async {
        let (client, _) = connect(&stack.url(), &[]).await;
        list_through(&client).await;
        for query in ["list", "create an issue", "send"] {
            let mut seen: Vec<String> = Vec::new();
            let mut matches = None;
            let mut offset = 0u64;
            loop {
                let r = search(
                    &client,
                    json!({"query": query, "offset": offset, "limit": 4}),
                )
                .await;
                let meta = search_meta(&r);
                let found = names(&found_definitions(&r));
                assert_eq!(meta["strategy"], "bm25", "{meta}");
                assert_eq!(meta_u64(&meta, "offset"), offset, "{meta}");
                assert_eq!(meta_u64(&meta, "returned"), found.len() as u64, "{meta}");
                assert_eq!(meta_u64(&meta, "candidates"), 301, "{meta}");
                let m = meta_u64(&meta, "matches");
                assert_eq!(
                    *matches.get_or_insert(m),
                    m,
                    "matches is the same on every page"
                );
                let note = texts(&r).get(1).cloned().unwrap_or_default();
                if found.is_empty() {
                    assert!(offset >= m, "an empty page before the end: {meta}");
                    break;
                }
                assert!(found.len() <= 4);
                let last = offset + found.len() as u64;
                assert!(
                    note.contains(&format!(
                        "{} of {m} matching tools (results {} to {last})",
                        found.len(),
                        offset + 1
                    )),
                    "{note}"
                );
                if last < m {
                    assert_eq!(found.len(), 4, "a full page before the last: {meta}");
                    assert!(
                        note.contains(&format!("call again with offset {last}")),
                        "{note}"
                    );
                }
                seen.extend(found);
                offset = last;
            }
            let m = matches.unwrap_or(0);
            eprintln!(
                "{query:?}: {m} matches over {} pages",
                (m as usize).div_ceil(4)
            );
            assert!(m > 8, "{query:?} should match several pages: {m}");
            let distinct: BTreeSet<&String> = seen.iter().collect();
            assert_eq!(distinct.len(), seen.len(), "pages overlap: {seen:?}");
            assert_eq!(seen.len() as u64, m, "pages cover every match");
        }
        // Beyond the end.
        let r = search(&client, json!({"query": "list", "offset": 10_000})).await;
        assert!(found_definitions(&r).is_empty());
        assert_eq!(meta_u64(&search_meta(&r), "returned"), 0);
        // A limit above the maximum is clamped; an invalid one is the model's to fix.
        let r = search(&client, json!({"query": "list", "limit": 50})).await;
        assert_eq!(found_definitions(&r).len(), 4);
        let bad = client
            .call_tool(call(TOOL_SEARCH, json!({"query": "list", "offset": -1})))
            .await
            .expect("a tool error");
        assert_eq!(bad.is_error, Some(true), "{}", to_value(&bad));
        assert!(first_text(&bad).contains("offset"), "{}", to_value(&bad));
        let _ = client.cancel().await;
    })
    .await;
}

// ---- groups --------------------------------------------------------------------------------------

/// `group_separator: "_"`: 45 groups (44 services and the server's `slow`): `list_tool_groups`
/// is offered and counts them, and the search tool's `group` argument restricts results.
#[tokio::test]
async fn groups_from_names() {
    let stack = Setup::new(config(json!({"group_separator": "_"}))).start("modes_groups");
    within("groups_from_names", async {
        let upstream = upstream_tools(&stack).await;
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for n in names(&upstream) {
            *counts
                .entry(n.split('_').next().unwrap_or("").to_owned())
                .or_default() += 1;
        }
        assert_eq!(counts.len(), 45);
        let (client, _) = connect(&stack.url(), &[]).await;
        let tools = list_through(&client).await;
        assert_eq!(name_set(&tools), search_view(&["list_tool_groups"]));
        let groups_enum: BTreeSet<String> = by_name(&tools, TOOL_SEARCH)["inputSchema"]
            ["properties"]["group"]["enum"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(groups_enum, counts.keys().cloned().collect::<BTreeSet<_>>());

        let r = client
            .call_tool(call("list_tool_groups", json!({})))
            .await
            .expect("list_tool_groups");
        assert_ne!(r.is_error, Some(true), "{}", to_value(&r));
        let listed: Vec<Value> =
            serde_json::from_str(&first_text(&r)).expect("a JSON array of groups");
        let got: BTreeMap<String, u64> = listed
            .iter()
            .map(|g| {
                (
                    g["group"].as_str().unwrap_or("?").to_owned(),
                    g["tools"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(got, counts);

        // The same query, whole catalog vs one group.
        let all = search(&client, json!({"query": "create", "limit": 5})).await;
        assert!(names(&found_definitions(&all))
            .iter()
            .any(|n| !n.starts_with("slack_")));
        for group in ["slack", "stripe", "github"] {
            let r = search(
                &client,
                json!({"query": "create", "group": group, "limit": 5}),
            )
            .await;
            let found = names(&found_definitions(&r));
            assert!(!found.is_empty(), "{group}");
            assert!(
                found.iter().all(|n| n.starts_with(&format!("{group}_"))),
                "{group}: {found:?}"
            );
            assert_eq!(
                meta_u64(&search_meta(&r), "candidates"),
                counts[group],
                "{group}"
            );
        }
        let r = search(
            &client,
            json!({"query": "create", "group": "no_such_group"}),
        )
        .await;
        assert!(found_definitions(&r).is_empty());
        let _ = client.cancel().await;
    })
    .await;
}

/// A catalog whose tools all fall into one group offers neither `list_tool_groups` nor the
/// `group` argument.
#[tokio::test]
async fn one_group_offers_no_groups() {
    let dir = TestDir::new("modes_one_group").expect("dir");
    let catalog =
        std::fs::read_to_string(mcp_tool_search_wasm_tests::harness::catalog_300()).unwrap();
    let acme: String = catalog
        .lines()
        .take(40)
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            v["name"] = json!(format!("acme_{}", v["name"].as_str().unwrap_or("")));
            format!("{v}\n")
        })
        .collect();
    let tools_file = dir.join("acme.jsonl");
    std::fs::write(&tools_file, acme).unwrap();
    let upstream = CatalogServer::start(
        CATALOG_SERVER.as_ref(),
        &CatalogOptions {
            tools: tools_file,
            stateless: true,
            ..CatalogOptions::default()
        },
        &dir,
    )
    .expect("catalog-server");
    let stack = Setup::new(json!({
        "group_separator": "_",
        "eager_patterns": ["acme_github_get_*"],
        "tools": [{"name": "slow_progress", "group": "acme"}]
    }))
    .start_envoy(dir, upstream);
    within("one_group_offers_no_groups", async {
        let (client, _) = connect(&stack.url(), &[]).await;
        let tools = list_through(&client).await;
        let listed = names(&tools);
        assert!(listed.contains(&TOOL_SEARCH.to_owned()), "{listed:?}");
        assert!(
            !listed.contains(&"list_tool_groups".to_owned()),
            "one group: {listed:?}"
        );
        let schema = &by_name(&tools, TOOL_SEARCH)["inputSchema"];
        assert!(schema["properties"].get("group").is_none(), "{schema}");
        let r = search(&client, json!({"query": "refund a charge"})).await;
        assert_eq!(
            names(&found_definitions(&r))[0],
            "acme_stripe_refund_charge"
        );
        let _ = client.cancel().await;
    })
    .await;
}

// ---- score threshold ------------------------------------------------------------------------------

/// `score_threshold` drops weak results: fewer matches, the strong ones kept in the same order.
#[tokio::test]
async fn score_threshold_drops_weak_results() {
    let open = Setup::new(config(json!({}))).start("modes_threshold_off");
    let strict =
        Setup::new(config(json!({"search": {"score_threshold": 0.6}}))).start("modes_threshold_06");
    within("score_threshold_drops_weak_results", async {
        let (a, _) = connect(&open.url(), &[]).await;
        let (b, _) = connect(&strict.url(), &[]).await;
        list_through(&a).await;
        list_through(&b).await;
        for query in [
            "refund a stripe charge",
            "send an email with an attachment",
            "create a jira ticket",
        ] {
            let args = json!({"query": query, "limit": 5});
            let loose = search(&a, args.clone()).await;
            let tight = search(&b, args).await;
            let (lm, tm) = (search_meta(&loose), search_meta(&tight));
            eprintln!("{query:?}: without threshold {lm}, with 0.6 {tm}");
            for m in [&lm, &tm] {
                assert_eq!(m["strategy"], "bm25");
                assert_eq!(meta_u64(m, "candidates"), 301);
                assert!(
                    m.get("offset").is_some() && m.get("returned").is_some(),
                    "{m}"
                );
            }
            assert!(
                meta_u64(&tm, "matches") < meta_u64(&lm, "matches"),
                "the threshold drops weak matches"
            );
            assert!(meta_u64(&tm, "matches") >= 1, "the best match stays");
            let (ln, tn) = (
                names(&found_definitions(&loose)),
                names(&found_definitions(&tight)),
            );
            assert_eq!(meta_u64(&tm, "returned"), tn.len() as u64);
            assert!(!tn.is_empty() && tn.len() <= ln.len());
            assert_eq!(
                tn[..],
                ln[..tn.len()],
                "the strong results, in the same order"
            );
        }
        let _ = a.cancel().await;
        let _ = b.cancel().await;
    })
    .await;
}
