//! End to end: a real MCP client (rmcp, and raw HTTP where the SDK hides the wire) talks to a
//! real MCP server (`catalog-server`, rmcp) through a real Envoy 1.40, without the filter (the
//! baseline: Envoy must pass MCP through untouched) and with the mcp-tool-search `.wasm`.
//!
//! Needs Envoy (`ENVOY_BIN`, else `.venv/bin/envoy`) and, for the `filter_*` tests, the built
//! filter (`FILTER_WASM`, else `target/dist/mcp_tool_search.wasm`: `make wasm`).
//! Every test starts its own processes (ports chosen by the kernel) and kills them on exit.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use mcp_tool_search_wasm_tests::harness::{
    self, CatalogOptions, CatalogServer, Envoy, EnvoyOptions, FilterOptions, TestDir,
};
use mcp_tool_search_wasm_tests::mcp::{self, Lifecycle, McpClient, ProgressLog, RawResponse};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, NumberOrString, PaginatedRequestParams, ProgressToken,
    ProtocolVersion, RequestParamsMeta,
};
use serde_json::{json, Value};

const CATALOG_SERVER: &str = env!("CARGO_BIN_EXE_catalog-server");
const PLUGIN_CONFIG: &str = r#"{"mcp_paths":["/mcp"],"eager_patterns":["github_get_*"]}"#;
const TOOL_SEARCH: &str = "tool_search";
const TEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The eager tools of the 300-tool catalog under `github_get_*`.
const EAGER: [&str; 4] = [
    "github_get_issue",
    "github_get_pull_request",
    "github_get_repository",
    "github_get_file_contents",
];

// ---- fixtures ------------------------------------------------------------------------------------

/// One test's processes. Fields drop in order: Envoy, then the upstream, then the directory.
struct Stack {
    envoy: Envoy,
    upstream: CatalogServer,
    _dir: TestDir,
}

fn start(name: &str, catalog: CatalogOptions, with_filter: bool) -> Stack {
    let dir = TestDir::new(name).expect("test dir");
    let upstream =
        CatalogServer::start(CATALOG_SERVER.as_ref(), &catalog, &dir).expect("catalog-server");
    let filter = with_filter.then(|| FilterOptions {
        wasm: harness::filter_wasm().unwrap_or_else(|e| panic!("{e}")),
        config_json: PLUGIN_CONFIG.to_owned(),
    });
    let envoy = Envoy::start(&EnvoyOptions::new(upstream.addr, filter), &dir)
        .unwrap_or_else(|e| panic!("{e}"));
    Stack {
        envoy,
        upstream,
        _dir: dir,
    }
}

/// Run a test body with a deadline. Create the [`Stack`]s outside, so that on a timeout the
/// panic unwinds through them: their Drop prints the Envoy log and keeps the test directory.
async fn within<F: std::future::Future<Output = ()>>(what: &str, f: F) {
    if tokio::time::timeout(TEST_TIMEOUT, f).await.is_err() {
        panic!("{what}: timed out after {TEST_TIMEOUT:?} (a request or response never completed)");
    }
}

fn sse_stateful() -> CatalogOptions {
    CatalogOptions::default()
}

fn json_stateless() -> CatalogOptions {
    CatalogOptions {
        json: true,
        stateless: true,
        ..CatalogOptions::default()
    }
}

fn sse_stateless() -> CatalogOptions {
    CatalogOptions {
        stateless: true,
        ..CatalogOptions::default()
    }
}

async fn connect(url: &str, lifecycle: Lifecycle) -> (McpClient, ProgressLog) {
    mcp::connect(url, lifecycle)
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"))
}

fn v2025_06() -> Lifecycle {
    Lifecycle::Initialize(ProtocolVersion::V_2025_06_18)
}

fn v2025_11() -> Lifecycle {
    Lifecycle::Initialize(ProtocolVersion::V_2025_11_25)
}

fn to_value<T: serde::Serialize>(t: &T) -> Value {
    serde_json::to_value(t).expect("serialize")
}

/// Every tool as the upstream itself serves it (no Envoy), in order.
async fn upstream_tools(stack: &Stack) -> Vec<Value> {
    let (client, _) = connect(&stack.upstream.mcp_url(), v2025_11()).await;
    let tools = client.list_all_tools().await.expect("upstream tools/list");
    let _ = client.cancel().await;
    tools.iter().map(to_value).collect()
}

fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("?").to_owned())
        .collect()
}

fn by_name<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in {:?}", names(tools)))
}

fn first_text(result: &CallToolResult) -> String {
    result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_else(|| panic!("no text content in {}", to_value(result)))
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let mut p = CallToolRequestParams::new(name.to_owned());
    if let Value::Object(map) = arguments {
        p.arguments = Some(map);
    }
    p
}

/// Asserts an upstream tool result: `{"tool":NAME,"arguments":..,"ok":true}`.
fn assert_upstream_ok(result: &CallToolResult, tool: &str) {
    assert_ne!(result.is_error, Some(true), "{}", to_value(result));
    let v: Value = serde_json::from_str(&first_text(result)).expect("upstream result JSON");
    assert_eq!(v["tool"], tool, "{v}");
    assert_eq!(v["ok"], true, "{v}");
}

/// The checks on a `tool_search` answer: a JSON array of full upstream definitions, best first,
/// `_meta` naming the strategy. Returns the names found.
fn assert_search_result(
    result: &CallToolResult,
    upstream: &[Value],
    expected_first: &str,
) -> Vec<String> {
    let whole = to_value(result);
    assert_ne!(result.is_error, Some(true), "tool_search failed: {whole}");
    let text = first_text(result);
    let found: Vec<Value> = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("first text content is not a JSON array ({e}): {text}"));
    assert!(!found.is_empty(), "no results: {whole}");
    let found_names = names(&found);
    assert_eq!(
        found_names.first().map(String::as_str),
        Some(expected_first),
        "best result should be {expected_first}: {found_names:?}"
    );
    for tool in &found {
        let name = tool["name"].as_str().unwrap_or("?");
        assert_eq!(
            tool,
            by_name(upstream, name),
            "{name} must be returned exactly as the upstream declared it"
        );
    }
    let meta = &whole["_meta"]["mcp-tool-search/search"];
    eprintln!("tool_search -> {found_names:?}; _meta: {meta}");
    assert_eq!(meta["strategy"], "bm25", "_meta: {whole}");
    found_names
}

fn assert_no_local_call_reached_upstream(stack: &Stack) {
    let rec = stack.upstream.recorded();
    assert!(
        !rec.iter()
            .any(|l| l == &format!("tools/call {TOOL_SEARCH}")),
        "the upstream received a tools/call of tool_search: {rec:?}"
    );
}

fn assert_tool_search_declaration(tool: &Value) {
    let schema = &tool["inputSchema"];
    assert_eq!(schema["type"], "object", "{tool}");
    assert_eq!(schema["properties"]["query"]["type"], "string", "{tool}");
    assert!(schema["properties"].get("namespace").is_some(), "{tool}");
    assert!(schema["properties"].get("limit").is_some(), "{tool}");
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(required.contains(&"query"), "{tool}");
    assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
    assert!(
        tool["description"].as_str().is_some_and(|d| !d.is_empty()),
        "{tool}"
    );
}

/// Events spread over time, not delivered at once: the first progress arrives well before the
/// last, and well before the final response.
fn assert_incremental(
    what: &str,
    progress_times: &[Duration],
    response_at: Duration,
    steps: u32,
    delay: Duration,
) {
    assert_eq!(
        progress_times.len(),
        steps as usize,
        "{what}: expected {steps} progress events, got {progress_times:?}"
    );
    eprintln!("{what}: progress at {progress_times:?}, response at {response_at:?}");
    let first = progress_times[0];
    let last = progress_times[progress_times.len() - 1];
    let want = delay * (steps - 1) / 2;
    assert!(
        last.saturating_sub(first) >= want,
        "{what}: progress events bunched together (first {first:?}, last {last:?}): buffered?"
    );
    assert!(
        response_at.saturating_sub(first) >= want,
        "{what}: first progress at {first:?} but response at {response_at:?}: buffered?"
    );
}

/// slow_progress through the rmcp client: progress arrival times relative to the call start.
async fn rmcp_slow_progress(
    client: &McpClient,
    progress: &ProgressLog,
    steps: u32,
    delay: Duration,
) {
    let mut params = call(
        "slow_progress",
        json!({"steps": steps, "delay_ms": delay.as_millis() as u64}),
    );
    params.set_progress_token(ProgressToken(NumberOrString::String("p-1".into())));
    let start = Instant::now();
    let result = client.call_tool(params).await.expect("slow_progress");
    let done = start.elapsed();
    assert_upstream_ok(&result, "slow_progress");
    let times: Vec<Duration> = progress
        .lock()
        .unwrap()
        .iter()
        .map(|(at, _)| at.saturating_duration_since(start))
        .collect();
    assert_incremental("rmcp client", &times, done, steps, delay);
}

/// slow_progress over raw HTTP against a stateless upstream: per-event arrival times.
async fn raw_slow_progress(url: &str, steps: u32, delay: Duration) -> RawResponse {
    let body = json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {
            "name": "slow_progress",
            "arguments": {"steps": steps, "delay_ms": delay.as_millis() as u64},
            "_meta": {"progressToken": "raw-1"}
        }
    });
    let resp = mcp::post(url, &[("mcp-protocol-version", "2025-11-25")], &body)
        .await
        .expect("POST slow_progress");
    assert_eq!(resp.status, 200, "{}", resp.text());
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
        .find(|(_, m)| m["id"] == 7)
        .map(|(at, _)| *at)
        .unwrap_or_else(|| panic!("no response in {}", resp.text()));
    assert_incremental("raw HTTP", &progress, response_at, steps, delay);
    resp
}

// ---- baseline: Envoy without the filter ---------------------------------------------------------

#[tokio::test]
async fn baseline_sse_list_and_call_pass_through() {
    let stack = start("baseline_sse", sse_stateful(), false);
    within("baseline_sse_list_and_call_pass_through", async {
        let upstream = upstream_tools(&stack).await;
        assert_eq!(upstream.len(), 301, "300 catalog tools + slow_progress");

        let (client, _) = connect(&stack.envoy.mcp_url(), v2025_06()).await;
        let through: Vec<Value> = client
            .list_all_tools()
            .await
            .expect("tools/list through Envoy")
            .iter()
            .map(to_value)
            .collect();
        assert_eq!(through, upstream, "Envoy must not change tools/list");
        let result = client
            .call_tool(call(
                "github_get_issue",
                json!({"owner": "o", "repo": "r", "issue_number": 1}),
            ))
            .await
            .expect("tools/call");
        assert_upstream_ok(&result, "github_get_issue");
        let _ = client.cancel().await;
        let rec = stack.upstream.recorded();
        assert!(
            rec.contains(&"tools/call github_get_issue".to_owned()),
            "{rec:?}"
        );
        assert!(rec.contains(&"initialize".to_owned()), "{rec:?}");
    })
    .await;
}

#[tokio::test]
async fn baseline_json_stateless_pass_through() {
    let stack = start("baseline_json", json_stateless(), false);
    within("baseline_json_stateless_pass_through", async {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let resp = mcp::post(
            &stack.envoy.mcp_url(),
            &[("mcp-protocol-version", "2025-11-25")],
            &body,
        )
        .await
        .unwrap();
        assert_eq!(resp.status, 200, "{}", resp.text());
        assert!(
            resp.content_type().starts_with("application/json"),
            "{:?}",
            resp.headers
        );
        let tools = resp.response_for(&json!(1)).expect("response")["result"]["tools"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(tools.len(), 301);

        let (client, _) = connect(&stack.envoy.mcp_url(), v2025_11()).await;
        let result = client
            .call_tool(call(
                "slack_post_message",
                json!({"channel": "C1", "text": "hi"}),
            ))
            .await
            .expect("tools/call");
        assert_upstream_ok(&result, "slack_post_message");
        let _ = client.cancel().await;
    })
    .await;
}

#[tokio::test]
async fn baseline_progress_streams_incrementally() {
    let stack = start("baseline_progress", sse_stateful(), false);
    let stateless = start("baseline_progress_raw", sse_stateless(), false);
    within("baseline_progress_streams_incrementally", async {
        let (client, progress) = connect(&stack.envoy.mcp_url(), v2025_11()).await;
        rmcp_slow_progress(&client, &progress, 5, Duration::from_millis(250)).await;
        let _ = client.cancel().await;

        raw_slow_progress(&stateless.envoy.mcp_url(), 5, Duration::from_millis(250)).await;
    })
    .await;
}

#[tokio::test]
async fn baseline_2026_07_28_pass_through() {
    let stack = start("baseline_2026", sse_stateful(), false);
    within("baseline_2026_07_28_pass_through", async {
        // rmcp's own 2026-07-28 client: server/discover, no session, mcp-* headers.
        let (client, _) = connect(&stack.envoy.mcp_url(), Lifecycle::Discover).await;
        let tools = client.list_all_tools().await.expect("tools/list (2026-07-28)");
        assert_eq!(tools.len(), 301);
        let result = client
            .call_tool(call("github_get_issue", json!({"owner": "o", "repo": "r", "issue_number": 1})))
            .await
            .expect("tools/call (2026-07-28)");
        assert_upstream_ok(&result, "github_get_issue");
        let _ = client.cancel().await;

        // The same by hand.
        let body = json!({"jsonrpc": "2.0", "id": "l-1", "method": "tools/list", "params": {"_meta": mcp::meta_2026()}});
        let resp = mcp::post(&stack.envoy.mcp_url(), &mcp::headers_2026("tools/list", None), &body)
            .await
            .unwrap();
        assert_eq!(resp.status, 200, "{}", resp.text());
        let r = resp.response_for(&json!("l-1")).expect("response");
        assert_eq!(r["result"]["tools"].as_array().map(Vec::len), Some(301));
    })
    .await;
}

#[tokio::test]
async fn baseline_paginated_and_other_paths() {
    let stack = start(
        "baseline_paged",
        CatalogOptions {
            page_size: 50,
            ..sse_stateful()
        },
        false,
    );
    within("baseline_paginated_and_other_paths", async {
        let (client, _) = connect(&stack.envoy.mcp_url(), v2025_06()).await;
        let first = client
            .list_tools(Some(PaginatedRequestParams::default()))
            .await
            .expect("page 1");
        assert_eq!(first.tools.len(), 50);
        assert_eq!(first.next_cursor.as_deref(), Some("50"));
        assert_eq!(client.list_all_tools().await.expect("all pages").len(), 301);
        let _ = client.cancel().await;

        let (status, ct, body) = mcp::get(&stack.envoy.url("/direct")).await.unwrap();
        assert_eq!(
            (status, ct.as_str(), body.as_slice()),
            (200, "text/plain", &b"direct response"[..])
        );
    })
    .await;
}

#[tokio::test]
async fn baseline_large_list_passes_through() {
    let dir = TestDir::new("baseline_large_catalog").expect("dir");
    let tools_file = dir.join("catalog-3000.jsonl");
    std::fs::write(
        &tools_file,
        mcp_tool_search_wasm_tests::catalog::jsonl(3000),
    )
    .unwrap();
    let big = |json: bool| CatalogOptions {
        tools: tools_file.clone(),
        json,
        stateless: json,
        ..CatalogOptions::default()
    };
    let sse = start("baseline_large_sse", big(false), false);
    let json = start("baseline_large_json", big(true), false);
    within("baseline_large_list_passes_through", async {
        for stack in [&sse, &json] {
            let upstream = upstream_tools(stack).await;
            let (client, _) = connect(&stack.envoy.mcp_url(), v2025_11()).await;
            let listed: Vec<Value> = client
                .list_all_tools()
                .await
                .expect("a large tools/list through Envoy")
                .iter()
                .map(to_value)
                .collect();
            assert_eq!(listed, upstream);
            let _ = client.cancel().await;
        }
    })
    .await;
}

// ---- with the filter -----------------------------------------------------------------------------

/// The whole story with the rmcp client: list (rewritten), search (answered locally), call the
/// found tool (reaches the upstream). Returns the upstream tools.
async fn list_search_call(stack: &Stack, lifecycle: Lifecycle) -> Vec<Value> {
    let upstream = upstream_tools(stack).await;
    let (client, _) = connect(&stack.envoy.mcp_url(), lifecycle.clone()).await;

    let listed: Vec<Value> = client
        .list_all_tools()
        .await
        .unwrap_or_else(|e| panic!("tools/list through the filter ({lifecycle:?}): {e}"))
        .iter()
        .map(to_value)
        .collect();
    let listed_names: BTreeSet<String> = names(&listed).into_iter().collect();
    let want: BTreeSet<String> = EAGER
        .iter()
        .copied()
        .chain([TOOL_SEARCH])
        .map(str::to_owned)
        .collect();
    assert_eq!(
        listed_names, want,
        "tools/list must hold the eager tools and tool_search only"
    );
    assert_eq!(
        listed.len(),
        want.len(),
        "no duplicates: {:?}",
        names(&listed)
    );
    for name in EAGER {
        assert_eq!(
            by_name(&listed, name),
            by_name(&upstream, name),
            "eager tools pass unchanged"
        );
    }
    assert_tool_search_declaration(by_name(&listed, TOOL_SEARCH));

    let result = client
        .call_tool(call(
            TOOL_SEARCH,
            json!({"query": "refund a stripe charge"}),
        ))
        .await
        .unwrap_or_else(|e| panic!("tools/call tool_search ({lifecycle:?}): {e}"));
    assert_search_result(&result, &upstream, "stripe_refund_charge");

    let result = client
        .call_tool(call(
            "stripe_refund_charge",
            json!({"charge_id": "ch_1", "amount": 500}),
        ))
        .await
        .expect("calling the found tool");
    assert_upstream_ok(&result, "stripe_refund_charge");
    let _ = client.cancel().await;

    let rec = stack.upstream.recorded();
    assert!(
        rec.contains(&"tools/call stripe_refund_charge".to_owned()),
        "{rec:?}"
    );
    assert_no_local_call_reached_upstream(stack);
    upstream
}

fn assert_stats(stack: &Stack) {
    let stats = stack.envoy.stats("mcp_tool_search").expect("admin /stats");
    eprintln!("stats: {stats:?}");
    assert!(
        stats.iter().any(|(n, _)| n.contains("mcp_tool_search")),
        "no mcp_tool_search stats at all"
    );
    let suffix = |n: &str| n.rsplit("mcp_tool_search").next().unwrap_or("").to_owned();
    let positive = |word: &str| {
        stats
            .iter()
            .any(|(n, v)| suffix(n).contains(word) && *v > 0)
    };
    assert!(positive("list"), "no list counter > 0 in {stats:?}");
    assert!(positive("search"), "no search counter > 0 in {stats:?}");
}

#[tokio::test]
async fn filter_sse_2025_06_18_list_search_call() {
    let stack = start("filter_sse_0618", sse_stateful(), true);
    within("filter_sse_2025_06_18_list_search_call", async {
        list_search_call(&stack, v2025_06()).await;
        assert_stats(&stack);
    })
    .await;
}

#[tokio::test]
async fn filter_sse_2025_11_25_list_search_call() {
    let stack = start("filter_sse_1125", sse_stateful(), true);
    within("filter_sse_2025_11_25_list_search_call", async {
        list_search_call(&stack, v2025_11()).await;
    })
    .await;
}

#[tokio::test]
async fn filter_json_stateless_list_search_call() {
    let stack = start("filter_json", json_stateless(), true);
    within("filter_json_stateless_list_search_call", async {
        list_search_call(&stack, v2025_11()).await;

        // The rewritten list stays JSON (and its content-length right: reqwest checks it).
        let resp = mcp::post(
            &stack.envoy.mcp_url(),
            &[("mcp-protocol-version", "2025-06-18")],
            &json!({"jsonrpc": "2.0", "id": 41, "method": "tools/list"}),
        )
        .await
        .unwrap();
        assert_eq!(resp.status, 200, "{}", resp.text());
        assert!(
            resp.content_type().starts_with("application/json"),
            "{:?}",
            resp.headers
        );
        let tools = &resp.response_for(&json!(41)).expect("response")["result"]["tools"];
        assert_eq!(
            tools.as_array().map(Vec::len),
            Some(EAGER.len() + 1),
            "{tools}"
        );
    })
    .await;
}

#[tokio::test]
async fn filter_2026_07_28_rmcp_discover_client() {
    let stack = start("filter_2026_rmcp", sse_stateful(), true);
    within("filter_2026_07_28_rmcp_discover_client", async {
        list_search_call(&stack, Lifecycle::Discover).await;
    })
    .await;
}

#[tokio::test]
async fn filter_2026_07_28_raw_headers() {
    let stack = start("filter_2026_raw", json_stateless(), true);
    within("filter_2026_07_28_raw_headers", async {
        let upstream = upstream_tools(&stack).await;
        let url = stack.envoy.mcp_url();

        let list = json!({"jsonrpc": "2.0", "id": "list-1", "method": "tools/list", "params": {"_meta": mcp::meta_2026()}});
        let resp = mcp::post(&url, &mcp::headers_2026("tools/list", None), &list)
            .await
            .unwrap();
        assert_eq!(resp.status, 200, "{}", resp.text());
        let r = resp
            .response_for(&json!("list-1"))
            .unwrap_or_else(|| panic!("no response with id \"list-1\": {}", resp.text()));
        let tools = r["result"]["tools"].as_array().cloned().unwrap_or_default();
        let got: BTreeSet<String> = names(&tools).into_iter().collect();
        let want: BTreeSet<String> = EAGER.iter().copied().chain([TOOL_SEARCH]).map(str::to_owned).collect();
        assert_eq!(got, want, "{}", resp.text());

        // tool_search, decided from the headers; a string id must come back as the same string.
        let search = json!({
            "jsonrpc": "2.0", "id": "search-1", "method": "tools/call",
            "params": {"name": TOOL_SEARCH, "arguments": {"query": "transition a jira ticket to done"}, "_meta": mcp::meta_2026()}
        });
        let resp = mcp::post(&url, &mcp::headers_2026("tools/call", Some(TOOL_SEARCH)), &search)
            .await
            .unwrap();
        assert_eq!(resp.status, 200, "{}", resp.text());
        let r = resp
            .response_for(&json!("search-1"))
            .unwrap_or_else(|| panic!("no response with id \"search-1\": {}", resp.text()));
        let result: CallToolResult = serde_json::from_value(r["result"].clone())
            .unwrap_or_else(|e| panic!("not a CallToolResult ({e}): {r}"));
        assert_search_result(&result, &upstream, "jira_transition_ticket");

        // The found tool, by name, reaches the upstream.
        let args = json!({"ticket_key": "ENG-1", "transition": "Done"});
        let call_body = json!({
            "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "jira_transition_ticket", "arguments": args, "_meta": mcp::meta_2026()}
        });
        let resp = mcp::post(&url, &mcp::headers_2026("tools/call", Some("jira_transition_ticket")), &call_body)
            .await
            .unwrap();
        assert_eq!(resp.status, 200, "{}", resp.text());
        let r = resp.response_for(&json!(3)).expect("response");
        let result: CallToolResult = serde_json::from_value(r["result"].clone()).expect("CallToolResult");
        assert_upstream_ok(&result, "jira_transition_ticket");
        assert_no_local_call_reached_upstream(&stack);
        assert!(stack
            .upstream
            .recorded()
            .contains(&"tools/call jira_transition_ticket".to_owned()));
    })
    .await;
}

#[tokio::test]
async fn filter_paginated_lists_keep_cursor() {
    let stack = start(
        "filter_paged",
        CatalogOptions {
            page_size: 50,
            ..sse_stateful()
        },
        true,
    );
    within("filter_paginated_lists_keep_cursor", async {
        // The upstream's own pages.
        let (direct, _) = connect(&stack.upstream.mcp_url(), v2025_11()).await;
        let mut upstream_pages: Vec<(Vec<Value>, Option<String>)> = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = direct
                .list_tools(Some(
                    PaginatedRequestParams::default().with_cursor(cursor.clone()),
                ))
                .await
                .expect("upstream page");
            upstream_pages.push((
                page.tools.iter().map(to_value).collect(),
                page.next_cursor.clone(),
            ));
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        let _ = direct.cancel().await;
        assert_eq!(upstream_pages.len(), 7);

        let (client, _) = connect(&stack.envoy.mcp_url(), v2025_11()).await;
        let mut cursor: Option<String> = None;
        for (i, (up_tools, up_next)) in upstream_pages.iter().enumerate() {
            let page = client
                .list_tools(Some(
                    PaginatedRequestParams::default().with_cursor(cursor.clone()),
                ))
                .await
                .unwrap_or_else(|e| panic!("page {i} through the filter: {e}"));
            let got: Vec<Value> = page.tools.iter().map(to_value).collect();
            let mut want: Vec<Value> = up_tools
                .iter()
                .filter(|t| EAGER.contains(&t["name"].as_str().unwrap_or("")))
                .cloned()
                .collect();
            let got_names = names(&got);
            if i == 0 {
                assert!(
                    got_names.iter().any(|n| n == TOOL_SEARCH),
                    "page 0 must carry tool_search: {got_names:?}"
                );
                assert_tool_search_declaration(by_name(&got, TOOL_SEARCH));
                want.push(by_name(&got, TOOL_SEARCH).clone());
            } else {
                assert!(
                    !got_names.iter().any(|n| n == TOOL_SEARCH),
                    "page {i} must not repeat tool_search: {got_names:?}"
                );
            }
            let sorted = |v: &[Value]| {
                let mut n = names(v);
                n.sort();
                n
            };
            assert_eq!(sorted(&got), sorted(&want), "page {i}");
            for t in &got {
                let n = t["name"].as_str().unwrap_or("");
                if n != TOOL_SEARCH {
                    assert_eq!(t, by_name(up_tools, n), "page {i}: {n} unchanged");
                }
            }
            assert_eq!(&page.next_cursor, up_next, "page {i}: nextCursor kept");
            cursor = page.next_cursor;
        }

        // Learned from all pages: a tool from the last full page is found by its exact name.
        let (last_page_tools, _) = &upstream_pages[5];
        let target = last_page_tools[10]["name"].as_str().unwrap().to_owned();
        let all_upstream: Vec<Value> = upstream_pages.iter().flat_map(|(t, _)| t.clone()).collect();
        let result = client
            .call_tool(call(TOOL_SEARCH, json!({"query": target})))
            .await
            .expect("tool_search");
        assert_search_result(&result, &all_upstream, &target);
        let _ = client.cancel().await;
        assert_no_local_call_reached_upstream(&stack);
    })
    .await;
}

#[tokio::test]
async fn filter_progress_streams_incrementally() {
    let stack = start("filter_progress", sse_stateful(), true);
    let stateless = start("filter_progress_raw", sse_stateless(), true);
    within("filter_progress_streams_incrementally", async {
        let (client, progress) = connect(&stack.envoy.mcp_url(), v2025_11()).await;
        // A list first, so the filter knows the catalog (and rewrites something) on this stream too.
        client.list_all_tools().await.expect("tools/list");
        rmcp_slow_progress(&client, &progress, 5, Duration::from_millis(250)).await;
        let _ = client.cancel().await;

        raw_slow_progress(&stateless.envoy.mcp_url(), 5, Duration::from_millis(250)).await;
    })
    .await;
}

#[tokio::test]
async fn filter_leaves_non_mcp_paths_alone() {
    let stack = start("filter_other", sse_stateful(), true);
    within("filter_leaves_non_mcp_paths_alone", async {
        // /other answers a full tools/list result, whatever is asked: it must come back byte for byte.
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let direct = mcp::post(&format!("http://{}/other", stack.upstream.addr), &[], &body)
            .await
            .unwrap();
        let through = mcp::post(&stack.envoy.url("/other"), &[], &body)
            .await
            .unwrap();
        assert_eq!(through.status, 200);
        assert_eq!(through.content_type(), "application/json");
        assert!(
            through.body == direct.body,
            "non-MCP path was modified ({} bytes vs {} direct)",
            through.body.len(),
            direct.body.len()
        );
        let (status, _, body) = mcp::get(&stack.envoy.url("/direct")).await.unwrap();
        assert_eq!((status, body.as_slice()), (200, &b"direct response"[..]));
        let rec = stack.upstream.recorded();
        assert!(rec.is_empty(), "nothing was sent to /mcp: {rec:?}");
    })
    .await;
}

/// Searches on fresh connections (spread over Envoy's two workers) all see the catalog learned
/// from one list; `limit` is honoured and clamped; a bad call is answered locally, not forwarded.
#[tokio::test]
async fn filter_search_on_every_worker_and_arguments() {
    let stack = start("filter_workers", json_stateless(), true);
    within("filter_search_on_every_worker_and_arguments", async {
        let upstream = upstream_tools(&stack).await;
        let url = stack.envoy.mcp_url();
        let h = [("mcp-protocol-version", "2025-11-25")];
        let resp = mcp::post(
            &url,
            &h,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await
        .unwrap();
        assert_eq!(resp.status, 200, "{}", resp.text());

        let search = |id: i64, args: Value| {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": TOOL_SEARCH, "arguments": args}})
        };
        // Each mcp::post opens a new connection; Envoy spreads connections over its workers
        // (the kernel picks one per connection), so search until both have served one.
        let before = worker_connections(&stack.envoy);
        assert_eq!(before.len(), 2, "two workers (--concurrency 2): {before:?}");
        let mut searches = 0;
        while searches < 8 || !both_served(&before, &worker_connections(&stack.envoy)) {
            assert!(
                searches < 64,
                "64 connections never reached both workers: {before:?} -> {:?}",
                worker_connections(&stack.envoy)
            );
            let i = searches;
            searches += 1;
            let resp = mcp::post(
                &url,
                &h,
                &search(
                    100 + i,
                    json!({"query": "post a message to a slack channel"}),
                ),
            )
            .await
            .unwrap();
            assert_eq!(resp.status, 200, "{}", resp.text());
            let r = resp
                .response_for(&json!(100 + i))
                .unwrap_or_else(|| panic!("search {i}: no response: {}", resp.text()));
            let result: CallToolResult = serde_json::from_value(r["result"].clone())
                .unwrap_or_else(|e| panic!("search {i}: not a CallToolResult ({e}): {r}"));
            assert_search_result(&result, &upstream, "slack_post_message");
        }
        eprintln!(
            "{searches} searches; connections per worker {before:?} -> {:?}",
            worker_connections(&stack.envoy)
        );

        let count = |resp: &RawResponse, id: i64| -> usize {
            let r = resp.response_for(&json!(id)).expect("response");
            let result: CallToolResult =
                serde_json::from_value(r["result"].clone()).expect("result");
            serde_json::from_str::<Vec<Value>>(&first_text(&result))
                .expect("array")
                .len()
        };
        let resp = mcp::post(
            &url,
            &h,
            &search(200, json!({"query": "github", "limit": 2})),
        )
        .await
        .unwrap();
        assert_eq!(count(&resp, 200), 2, "limit 2: {}", resp.text());
        let resp = mcp::post(
            &url,
            &h,
            &search(201, json!({"query": "github", "limit": 50})),
        )
        .await
        .unwrap();
        // "github" matches far more than 5 tools: the clamp, not the match, sets the count.
        assert_eq!(
            count(&resp, 201),
            5,
            "limit 50 clamps to max_allowable_results (5): {}",
            resp.text()
        );

        // Bad arguments: a tool result with `isError: true` and a message naming the problem
        // (the model can act on it), never a JSON-RPC error; answered by the filter.
        for (id, args, names) in [
            (300, json!({}), "query"),
            (301, json!({"query": ""}), "query"),
            (302, json!({"query": "x".repeat(501)}), "query"),
            (303, json!({"query": "github", "limit": "two"}), "limit"),
        ] {
            let resp = mcp::post(&url, &h, &search(id, args.clone()))
                .await
                .unwrap();
            assert_eq!(resp.status, 200, "{args}: {}", resp.text());
            let r = resp
                .response_for(&json!(id))
                .unwrap_or_else(|| panic!("no answer to {args}: {} {}", resp.status, resp.text()));
            assert!(
                r.get("error").is_none(),
                "{args}: not a JSON-RPC error: {r}"
            );
            let result: CallToolResult = serde_json::from_value(r["result"].clone())
                .unwrap_or_else(|e| panic!("{args}: not a CallToolResult ({e}): {r}"));
            assert_eq!(result.is_error, Some(true), "{args}: {r}");
            let message = first_text(&result);
            assert!(
                message.contains(names),
                "{args}: the message names `{names}`: {message:?}"
            );
        }
        assert_no_local_call_reached_upstream(&stack);
    })
    .await;
}

/// Connections each Envoy worker has accepted on the (only) listener, by worker: Envoy's
/// per-worker `listener.<address>.worker_<n>.downstream_cx_total`.
fn worker_connections(envoy: &Envoy) -> Vec<(String, u64)> {
    envoy
        .stats("downstream_cx_total")
        .expect("admin /stats")
        .into_iter()
        .filter(|(n, _)| n.starts_with("listener.") && n.contains(".worker_"))
        .filter(|(n, _)| !n.starts_with("listener.admin."))
        .collect()
}

/// Whether every worker accepted a connection since `before`.
fn both_served(before: &[(String, u64)], now: &[(String, u64)]) -> bool {
    before.len() == now.len()
        && before
            .iter()
            .zip(now)
            .all(|((a, x), (b, y))| a == b && y > x)
}

/// Paginated JSON upstream: later pages carry only their eager tools, cursors pass through.
#[tokio::test]
async fn filter_paginated_json_raw() {
    let stack = start(
        "filter_paged_json",
        CatalogOptions {
            page_size: 100,
            ..json_stateless()
        },
        true,
    );
    within("filter_paginated_json_raw", async {
        let url = stack.envoy.mcp_url();
        let h = [("mcp-protocol-version", "2025-06-18")];
        let mut cursor: Option<String> = None;
        let mut pages = Vec::new();
        for id in 1..=10 {
            let mut params = json!({});
            if let Some(c) = &cursor {
                params["cursor"] = json!(c);
            }
            let resp = mcp::post(
                &url,
                &h,
                &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params}),
            )
            .await
            .unwrap();
            assert_eq!(resp.status, 200, "{}", resp.text());
            assert!(
                resp.content_type().starts_with("application/json"),
                "{:?}",
                resp.headers
            );
            let result = resp.response_for(&json!(id)).expect("response")["result"].clone();
            let tools = result["tools"].as_array().cloned().unwrap_or_default();
            pages.push(names(&tools));
            cursor = result["nextCursor"].as_str().map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        assert_eq!(pages.len(), 4, "301 tools in pages of 100: {pages:?}");
        // Catalog lines 1, 45, 89 and 132 are the github_get_* tools.
        let sorted = |p: &[String]| {
            let mut p = p.to_vec();
            p.sort();
            p
        };
        assert_eq!(
            sorted(&pages[0]),
            sorted(&[
                "github_get_issue".to_owned(),
                "github_get_pull_request".to_owned(),
                "github_get_repository".to_owned(),
                TOOL_SEARCH.to_owned()
            ]),
            "page 0"
        );
        assert_eq!(
            pages[1],
            vec!["github_get_file_contents".to_owned()],
            "page 1"
        );
        assert!(pages[2].is_empty(), "page 2: {:?}", pages[2]);
        assert!(pages[3].is_empty(), "page 3: {:?}", pages[3]);

        // Learned from every page: the last catalog tool is found by its exact name.
        let upstream = upstream_tools(&stack).await;
        let target = names(&upstream)[299].clone();
        let resp = mcp::post(
            &url,
            &h,
            &json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                    "params": {"name": TOOL_SEARCH, "arguments": {"query": target}}}),
        )
        .await
        .unwrap();
        let r = resp.response_for(&json!(99)).expect("response");
        let result: CallToolResult = serde_json::from_value(r["result"].clone()).expect("result");
        assert_search_result(&result, &upstream, &target);
    })
    .await;
}

/// A catalog whose `tools/list` response is larger than Envoy's default 1 MiB buffer limit but
/// within the filter's `max_body_bytes`: the client gets the rewritten list (README "What the
/// agent sees"), never an error made by Envoy nor the list passed through.
#[tokio::test]
async fn filter_large_list_never_breaks_the_client() {
    let dir = TestDir::new("filter_large_catalog").expect("dir");
    let tools_file = dir.join("catalog-3000.jsonl");
    std::fs::write(
        &tools_file,
        mcp_tool_search_wasm_tests::catalog::jsonl(3000),
    )
    .unwrap();
    let big = |json: bool| CatalogOptions {
        tools: tools_file.clone(),
        json,
        stateless: json,
        ..CatalogOptions::default()
    };
    let sse = start("filter_large_sse", big(false), true);
    let json = start("filter_large_json", big(true), true);
    within("filter_large_list_never_breaks_the_client", async {
        for stack in [&sse, &json] {
            let upstream = upstream_tools(stack).await;
            assert_eq!(upstream.len(), 3001);
            let size = serde_json::to_vec(&upstream).unwrap().len();
            assert!(size > 1 << 20, "the list must exceed 1 MiB: {size} bytes");
            assert!(
                size < 7 << 20,
                "the list must stay well within max_body_bytes (8 MiB): {size} bytes"
            );
            let (client, _) = connect(&stack.envoy.mcp_url(), v2025_11()).await;
            let listed: Vec<Value> = client
                .list_all_tools()
                .await
                .unwrap_or_else(|e| {
                    panic!(
                        "tools/list of {size} bytes through the filter failed: {e}\nstats: {:?}",
                        stack.envoy.stats("mcp_tool_search")
                    )
                })
                .iter()
                .map(to_value)
                .collect();
            let listed_names: BTreeSet<String> = names(&listed).into_iter().collect();
            let rewritten: BTreeSet<String> = EAGER
                .iter()
                .copied()
                .chain([TOOL_SEARCH])
                .map(str::to_owned)
                .collect();
            // Within `max_body_bytes` (8 MiB by default) the list is rewritten, however large
            // it is for Envoy's buffers: the search tool is injected, progressive tools hidden.
            assert_eq!(
                listed_names,
                rewritten,
                "a {size}-byte list is rewritten: {} tools came back, tool_search offered: {}",
                listed.len(),
                listed_names.contains(TOOL_SEARCH)
            );
            for name in EAGER {
                assert_eq!(
                    by_name(&listed, name),
                    by_name(&upstream, name),
                    "{name} as sent"
                );
            }
            let _ = client.cancel().await;
        }
    })
    .await;
}
