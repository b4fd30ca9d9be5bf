//! Issue "the filter fetches and refreshes the catalog itself", end to end through Envoy 1.40
//! and the mcp-tool-search `.wasm`: a search that finds no catalog makes the filter list the
//! upstream's tools itself (every page, in the caller's session, a 2026-07-28 stateless
//! exchange, or a session of its own), on each Envoy replica and again after a restart; the
//! root tick refreshes a catalog on `notifications/tools/list_changed` and after `max_age`;
//! failed fetches are reported to the agent, to HTTP callers, in health and in stats, and the
//! next search after the server is back succeeds.
//!
//! Peers: the rmcp `catalog-server` (its tools changed at run time through `/admin/tools`), the
//! Python SDK's FastMCP 1.x, and a raw TCP server that misbehaves on purpose.
//!
//! Needs Envoy (`ENVOY_BIN`, else `.venv/bin/envoy`), the built filter (`make wasm`) and the
//! Python `mcp` package (`MCP_PYTHON`, else `.venv/bin/python`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_tool_search_wasm_tests::harness::{
    self, CatalogOptions, CatalogServer, Envoy, EnvoyOptions, FilterOptions, TestDir,
};
use mcp_tool_search_wasm_tests::mcp::{self, McpClient};
use mcp_tool_search_wasm_tests::python::{FastMcpOptions, FastMcpServer};
use rmcp::model::CallToolResult;
use serde_json::{json, Value};
use support::*;

/// The eager tools of the 300-tool catalog under `github_get_*`.
const EAGER: [&str; 4] = [
    "github_get_issue",
    "github_get_pull_request",
    "github_get_repository",
    "github_get_file_contents",
];
/// A progressive tool on the first page, and a query that ranks it first.
const REFUND: &str = "stripe_refund_charge";
const REFUND_QUERY: &str = "refund a stripe charge";
/// Line 300 of the catalog: on page 6 of 7 with `page_size` 50, so only a fetch that follows
/// every cursor knows it.
const LATE: &str = "gitlab_retry_pipeline";
const LATE_QUERY: &str = "retry the failed jobs of a gitlab pipeline";
/// Pages of the 301 tools (300 and `slow_progress`) at 50 a page.
const PAGE_SIZE: usize = 50;
const PAGES: usize = 7;
/// The tool the catalog-server gains at run time, and a query only it matches well.
const ADDED: &str = "acme_polish_widget";
const ADDED_QUERY: &str = "polish an acme widget";
/// The FastMCP peer's refund tool.
const PY_REFUND: &str = "stripe_create_refund";

// ---- fixtures ------------------------------------------------------------------------------------

/// The plugin config: eager `github_get_*`, and this `catalog` section.
fn config(catalog: Value) -> Value {
    json!({"mcp_paths": ["/mcp"], "eager_patterns": ["github_get_*"], "catalog": catalog})
}

/// Envoy with the filter in front of `upstream`, route namespace [`NAMESPACE`], the HTTP search
/// endpoint routed.
fn start_envoy(upstream: SocketAddr, config: &Value, dir: &TestDir) -> Envoy {
    start_envoy_holding(upstream, config, dir, false)
}

/// [`start_envoy`]; with `hold`, `"hold_request_headers": true` and Envoy's
/// `allow_on_headers_stop_iteration`: a request the filter answers never reaches the router.
fn start_envoy_holding(upstream: SocketAddr, config: &Value, dir: &TestDir, hold: bool) -> Envoy {
    let mut config = config.clone();
    if hold {
        config["hold_request_headers"] = json!(true);
    }
    let filter = FilterOptions {
        wasm: harness::filter_wasm().unwrap_or_else(|e| panic!("{e}")),
        config_json: config.to_string(),
    };
    let mut opts = EnvoyOptions::new(upstream, Some(filter));
    opts.allow_on_headers_stop_iteration = hold;
    opts.route_namespace = Some(NAMESPACE.to_owned());
    opts.search_prefix = Some(SEARCH_PATH.to_owned());
    Envoy::start(&opts, dir).unwrap_or_else(|e| panic!("{e}"))
}

fn start_catalog(opts: &CatalogOptions, dir: &TestDir) -> CatalogServer {
    CatalogServer::start(CATALOG_SERVER.as_ref(), opts, dir)
        .unwrap_or_else(|e| panic!("catalog-server: {e}"))
}

fn stateful_paged() -> CatalogOptions {
    CatalogOptions {
        page_size: PAGE_SIZE,
        ..CatalogOptions::default()
    }
}

fn stateless_json_paged() -> CatalogOptions {
    CatalogOptions {
        json: true,
        stateless: true,
        page_size: PAGE_SIZE,
        ..CatalogOptions::default()
    }
}

/// (`catalog_fetches.ok`, `catalog_fetches.failed`) of this Envoy.
fn fetches(envoy: &Envoy) -> (u64, u64) {
    let stats = envoy.stats("catalog_fetches").expect("admin /stats");
    let get = |which: &str| {
        let suffix = format!("mcp_tool_search.catalog_fetches.{which}");
        stats
            .iter()
            .find(|(n, _)| n.ends_with(&suffix))
            .map(|(_, v)| *v)
            .unwrap_or_else(|| panic!("no {suffix} in {stats:?}"))
    };
    (get("ok"), get("failed"))
}

/// `GET /mcp/search/health`: the namespace's catalog entry.
async fn catalog_health(envoy: &Envoy) -> Value {
    health(envoy).await["catalogs"][NAMESPACE].clone()
}

/// `GET /mcp/search/health`.
async fn health(envoy: &Envoy) -> Value {
    let url = envoy.url(&format!("{SEARCH_PATH}/health"));
    let (status, _, body) = mcp::get(&url)
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, 200, "{text}");
    serde_json::from_slice(&body).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Asserts a catalog the filter fetched: `tools` tools, fresh, no error.
async fn assert_fetched_health(envoy: &Envoy, tools: u64) {
    let h = catalog_health(envoy).await;
    assert_eq!(h["tools"], tools, "{h}");
    assert_eq!(h["source"], "fetched", "{h}");
    assert_eq!(h["stale"], false, "{h}");
    assert!(h["age_ms"].is_u64(), "{h}");
    assert!(h.get("last_error").is_none(), "{h}");
    assert!(h.get("failures").is_none(), "{h}");
}

/// Asserts the catalog's `source` and `tools` in health.
async fn assert_catalog_source(envoy: &Envoy, source: &str, tools: u64) {
    let h = catalog_health(envoy).await;
    assert_eq!(
        (&h["source"], &h["tools"]),
        (&json!(source), &json!(tools)),
        "{h}"
    );
}

/// Asserts one successful fetch and none failed (`why` says which), and the fetched catalog's
/// health with `tools` tools.
async fn assert_fetched_once(envoy: &Envoy, tools: u64, why: &str) {
    assert_eq!(fetches(envoy), (1, 0), "{why}");
    assert_fetched_health(envoy, tools).await;
}

/// Asserts what the catalog-server received: `initialize` `initializes` times (`whose` says
/// whose), and a `tools/list` for each page, once.
fn assert_every_page_listed_once(server: &CatalogServer, initializes: usize, whose: &str) {
    let rec = server.recorded();
    assert_eq!(
        received(server, "initialize"),
        initializes,
        "{whose}: {rec:?}"
    );
    assert_eq!(received(server, "tools/list"), PAGES, "one fetch: {rec:?}");
}

/// `tool_search` through the rmcp client (the result as it came, error or not).
async fn search(client: &McpClient, query: &str) -> CallToolResult {
    client
        .call_tool(call(TOOL_SEARCH, json!({"query": query})))
        .await
        .unwrap_or_else(|e| panic!("tool_search {query:?}: {e}"))
}

/// The tool names a successful search found, best first.
fn found(result: &CallToolResult) -> Vec<String> {
    assert_ne!(result.is_error, Some(true), "{}", to_value(result));
    names(&found_definitions(result))
}

/// Asserts a successful search that found `name` first.
fn assert_found_first(result: &CallToolResult, name: &str) {
    assert_eq!(
        found(result).first().map(String::as_str),
        Some(name),
        "{}",
        to_value(result)
    );
}

/// Connects an rmcp client to `url`, asserts that a search for `query` finds `name` first, and
/// closes the client.
async fn assert_client_finds_first(url: &str, query: &str, name: &str) {
    let (client, _) = connect(url, &[]).await;
    assert_found_first(&search(&client, query).await, name);
    let _ = client.cancel().await;
}

/// `POST /mcp/search` with this JSON body: asserts the answer's `status` and returns its JSON.
async fn http_search(envoy: &Envoy, body: &Value, status: u16) -> Value {
    let (got, _, bytes) = mcp::request(
        "POST",
        &envoy.url(SEARCH_PATH),
        &[("content-type", "application/json")],
        Some(body.to_string().into_bytes()),
    )
    .await
    .unwrap_or_else(|e| panic!("POST {SEARCH_PATH}: {e}"));
    let text = String::from_utf8_lossy(&bytes);
    assert_eq!(got, status, "{text}");
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// `tool_search` as one raw JSON-RPC POST with these headers (no session unless given).
async fn raw_search(envoy: &Envoy, headers: &[(&str, &str)], params: Value) -> CallToolResult {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let resp = rpc(&envoy.mcp_url(), headers, &body).await;
    assert_eq!(resp.status, 200, "{}", resp.text());
    serde_json::from_value(result_of(&resp, 1))
        .unwrap_or_else(|e| panic!("not a tools/call result ({e}): {}", resp.text()))
}

/// A 2025-era raw search without a session.
async fn raw_search_2025(envoy: &Envoy, query: &str) -> CallToolResult {
    raw_search(
        envoy,
        &[("mcp-protocol-version", "2025-11-25")],
        json!({"name": TOOL_SEARCH, "arguments": {"query": query}}),
    )
    .await
}

/// How many times the catalog-server received `line` (`initialize`, `tools/list`, ...).
fn received(server: &CatalogServer, line: &str) -> usize {
    server.recorded().iter().filter(|l| *l == line).count()
}

/// The 300-tool catalog without `removed`, plus [`ADDED`].
fn changed_catalog(removed: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(harness::catalog_300()).expect("catalog-300.jsonl");
    let mut tools: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("catalog line"))
        .filter(|t: &Value| t["name"] != removed)
        .collect();
    assert_eq!(tools.len(), 299, "{removed} is in the catalog");
    tools.push(json!({
        "name": ADDED,
        "title": "Polish Acme widget",
        "description": "Polish an Acme widget until it shines; returns the widget's new gloss level.",
        "inputSchema": {
            "type": "object",
            "properties": {"widget_id": {"type": "string", "description": "Acme widget ID"}},
            "required": ["widget_id"]
        }
    }));
    tools
}

/// Polls `check` every 100 ms until it returns `Some`, or panics after `timeout`.
async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if Instant::now() >= deadline {
            panic!("{what}: not within {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// After the upstream's tools changed (REFUND removed, ADDED added): polls searches, with no
/// client `tools/list`, until ADDED is found; then REFUND must be gone. Returns when ADDED
/// was first found.
async fn wait_for_the_change(client: &McpClient, timeout: Duration) -> Instant {
    let found_at = eventually(
        &format!("a search finding {ADDED} (the refreshed catalog)"),
        timeout,
        || async move {
            let r = search(client, ADDED_QUERY).await;
            (found(&r).first().map(String::as_str) == Some(ADDED)).then(Instant::now)
        },
    )
    .await;
    for query in [REFUND_QUERY, REFUND] {
        let r = search(client, query).await;
        let names = found(&r);
        assert!(!names.is_empty(), "{query:?} still matches other tools");
        assert!(
            !names.iter().any(|n| n == REFUND),
            "{REFUND} was removed upstream but {query:?} still finds it: {names:?}"
        );
    }
    found_at
}

// ---- fetch on a miss -----------------------------------------------------------------------------

/// Two Envoy replicas in front of one server: a client lists through A (which learns the
/// catalog from that list); a search through B, which never saw a list, fetches the catalog
/// itself and finds the hidden tool; so does a restarted B.
#[tokio::test]
async fn each_replica_fetches_its_own_catalog_and_again_after_a_restart() {
    let dir = TestDir::new("catalog_replicas").expect("dir");
    let upstream = start_catalog(&CatalogOptions::default(), &dir);
    let cfg = config(json!({}));
    let a = start_envoy(upstream.addr, &cfg, &dir);
    let b = start_envoy(upstream.addr, &cfg, &dir);
    within("replica A lists, replica B searches", async {
        let (ca, _) = connect(&a.mcp_url(), &[]).await;
        let listed: Vec<Value> = ca
            .list_all_tools()
            .await
            .expect("tools/list through A")
            .iter()
            .map(to_value)
            .collect();
        let want: BTreeSet<String> = EAGER
            .iter()
            .chain(&[TOOL_SEARCH])
            .map(|s| (*s).to_owned())
            .collect();
        assert_eq!(
            name_set(&listed),
            want,
            "A lists the eager tools and the search tool only"
        );
        let _ = ca.cancel().await;

        let (cb, _) = connect(&b.mcp_url(), &[]).await;
        assert_found_first(&search(&cb, REFUND_QUERY).await, REFUND);
        let called = cb
            .call_tool(call(REFUND, json!({"charge_id": "ch_1", "amount": 5})))
            .await
            .expect("tools/call through B");
        assert_upstream_ok(&called, REFUND);
        let _ = cb.cancel().await;

        assert_eq!(fetches(&a), (0, 0), "A learned its catalog from the list");
        assert_catalog_source(&a, "learned", 301).await;
        assert_fetched_once(&b, 301, "B fetched its catalog once").await;
    })
    .await;

    // A new B (a new process, another port): nothing learned, nothing fetched yet.
    drop(b);
    let b = start_envoy(upstream.addr, &cfg, &dir);
    assert_eq!(fetches(&b), (0, 0));
    within("the restarted replica B searches", async {
        assert_client_finds_first(&b.mcp_url(), REFUND_QUERY, REFUND).await;
        assert_fetched_once(&b, 301, "the restarted B fetched its catalog once").await;
        assert_eq!(fetches(&a), (0, 0), "A never needed a fetch");
    })
    .await;
}

/// A search before any list, on a fresh Envoy, against the rmcp catalog-server (stateful SSE
/// and stateless JSON, 50 tools a page): the found tool is on page 6, so every page was
/// fetched. The server's record shows whose context the fetch ran in: the rmcp client's
/// session (no second `initialize`), the filter's own session (a raw request without a
/// session to a stateful server; an rmcp client of a stateless server, which has no session to
/// lend), or a 2026-07-28 stateless list (no `initialize` at all).
#[tokio::test]
async fn a_search_before_any_list_fetches_every_page_from_rmcp_servers() {
    let dir = TestDir::new("catalog_first_search_rmcp").expect("dir");
    let cfg = config(json!({}));
    let sse_session = start_catalog(&stateful_paged(), &dir);
    let sse_own = start_catalog(&stateful_paged(), &dir);
    let json_rmcp = start_catalog(&stateless_json_paged(), &dir);
    let json_2026 = start_catalog(&stateless_json_paged(), &dir);
    let e_sse_session = start_envoy(sse_session.addr, &cfg, &dir);
    let e_sse_own = start_envoy(sse_own.addr, &cfg, &dir);
    let e_json_rmcp = start_envoy(json_rmcp.addr, &cfg, &dir);
    let e_json_2026 = start_envoy(json_2026.addr, &cfg, &dir);
    within("first searches against rmcp servers", async {
        // The rmcp client's session on a stateful SSE server.
        assert_client_finds_first(&e_sse_session.mcp_url(), LATE_QUERY, LATE).await;
        assert_every_page_listed_once(&sse_session, 1, "the client's session was reused");

        // No session at all on a stateful SSE server: the filter's own session.
        assert_found_first(&raw_search_2025(&e_sse_own, LATE_QUERY).await, LATE);
        assert_every_page_listed_once(&sse_own, 1, "the filter's own initialize");
        let rec = sse_own.recorded();
        assert_eq!(received(&sse_own, "notifications/initialized"), 1, "{rec:?}");
        assert_eq!(rec.first().map(String::as_str), Some("initialize"), "{rec:?}");

        // The rmcp client on a stateless JSON server (no session id to reuse).
        assert_client_finds_first(&e_json_rmcp.mcp_url(), LATE_QUERY, LATE).await;
        assert_every_page_listed_once(&json_rmcp, 2, "the client's and the filter's own");

        // A 2026-07-28 caller: a stateless list with `_meta`, no initialize.
        let r = raw_search(
            &e_json_2026,
            &mcp::headers_2026("tools/call", Some(TOOL_SEARCH)),
            json!({"name": TOOL_SEARCH, "arguments": {"query": LATE_QUERY}, "_meta": mcp::meta_2026()}),
        )
        .await;
        assert_found_first(&r, LATE);
        assert_every_page_listed_once(&json_2026, 0, "a stateless list");
        // rmcp marks 2026-07-28 lists `cacheScope: "private"`: the catalog is kept for this
        // caller's credentials (none, here as in the search). Health reports it under the
        // namespace for the caller it belongs to, and never names a credential's key.
        let h = health(&e_json_2026).await;
        let listed: Vec<&String> = h["catalogs"]
            .as_object()
            .map(|all| all.keys().collect())
            .unwrap_or_default();
        assert_eq!(listed, [NAMESPACE], "{h}");
        let own = &h["catalogs"][NAMESPACE];
        assert_eq!(own["tools"], 301, "{h}");
        assert_eq!(own["source"], "fetched", "{h}");
        assert_eq!(own["private"], true, "{h}");

        for (envoy, upstream) in [
            (&e_sse_session, &sse_session),
            (&e_sse_own, &sse_own),
            (&e_json_rmcp, &json_rmcp),
            (&e_json_2026, &json_2026),
        ] {
            assert_eq!(fetches(envoy), (1, 0), "{:?}", upstream.recorded());
            assert_eq!(received(upstream, &format!("tools/call {TOOL_SEARCH}")), 0);
        }
        for envoy in [&e_sse_session, &e_sse_own, &e_json_rmcp] {
            assert_fetched_health(envoy, 301).await;
        }

        // `tools/list` with a query (draft SEP-1821): answered by the filter from the catalog,
        // the server asked nothing.
        let before = sse_own.recorded().len();
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"query": LATE_QUERY}});
        let resp = rpc(
            &e_sse_own.mcp_url(),
            &[("mcp-protocol-version", "2025-11-25")],
            &body,
        )
        .await;
        assert_eq!(resp.status, 200, "{}", resp.text());
        let result = result_of(&resp, 7);
        assert_eq!(result["tools"][0]["name"], LATE, "{result}");
        assert_eq!(result["_meta"]["mcp-tool-search/search"]["strategy"], "bm25");
        assert_eq!(sse_own.recorded().len(), before, "{:?}", sse_own.recorded());
    })
    .await;
}

/// The same against the Python SDK's FastMCP 1.x (stateful SSE: the rmcp client's session and
/// a raw request without one; stateless JSON). The server has a `tool_search` of its own: the
/// filter's answers, and the server runs nothing.
#[tokio::test]
async fn a_search_before_any_list_fetches_from_python_fastmcp() {
    let dir = TestDir::new("catalog_first_search_python").expect("dir");
    let cfg = config(json!({}));
    let stateful = FastMcpServer::start(
        FastMcpOptions {
            sse: true,
            stateful: true,
        },
        &dir,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let stateless =
        FastMcpServer::start(FastMcpOptions::default(), &dir).unwrap_or_else(|e| panic!("{e}"));
    let e_session = start_envoy(stateful.addr, &cfg, &dir);
    let e_own = start_envoy(stateful.addr, &cfg, &dir);
    let e_stateless = start_envoy(stateless.addr, &cfg, &dir);
    within("first searches against FastMCP", async {
        for envoy in [&e_session, &e_stateless] {
            assert_client_finds_first(&envoy.mcp_url(), REFUND_QUERY, PY_REFUND).await;
        }
        assert_found_first(&raw_search_2025(&e_own, REFUND_QUERY).await, PY_REFUND);
        for envoy in [&e_session, &e_own, &e_stateless] {
            assert_fetched_once(envoy, 5, "FastMCP").await;
        }
        assert_eq!(
            stateful.recorded(),
            Vec::<String>::new(),
            "{}",
            stateful.log()
        );
        assert_eq!(
            stateless.recorded(),
            Vec::<String>::new(),
            "{}",
            stateless.log()
        );
    })
    .await;
}

/// `POST /mcp/search` on a fresh Envoy: the filter fetches the catalog in a session of its own
/// (an HTTP caller has no MCP session) and answers 200 with the tool from page 6.
#[tokio::test]
async fn http_search_endpoint_fetches_on_a_fresh_envoy() {
    let dir = TestDir::new("catalog_http_endpoint").expect("dir");
    let upstream = start_catalog(&stateful_paged(), &dir);
    let envoy = start_envoy(upstream.addr, &config(json!({})), &dir);
    within("HTTP search on a fresh Envoy", async {
        for round in 0..2 {
            let v = http_search(&envoy, &json!({"query": LATE_QUERY, "limit": 3}), 200).await;
            let tools = v["tools"].as_array().cloned().unwrap_or_default();
            assert_eq!(tools.len(), 3, "{v}");
            assert_eq!(tools[0]["name"], LATE, "round {round}: {v}");
            assert!(tools[0]["inputSchema"]["properties"].is_object(), "{v}");
        }
        assert_every_page_listed_once(&upstream, 1, "the filter's own session, for both");
        assert_fetched_once(&envoy, 301, "one fetch for both").await;
    })
    .await;
}

// ---- refresh -------------------------------------------------------------------------------------

/// A stateful server announces a change (`notifications/tools/list_changed` on the rmcp
/// client's `GET /mcp` stream, through Envoy): the filter, which saw it pass, refreshes the
/// catalog from its tick, with no client `tools/list`; the removed tool is gone.
#[tokio::test]
async fn list_changed_on_the_client_stream_refreshes_the_catalog() {
    let dir = TestDir::new("catalog_list_changed").expect("dir");
    let upstream = start_catalog(&CatalogOptions::default(), &dir);
    // The first fetch was just made: with the default 5 s between two refreshes of a
    // namespace, the change would wait that long.
    let envoy = start_envoy(
        upstream.addr,
        &config(json!({"min_refresh_interval": "1s"})),
        &dir,
    );
    within("list_changed refresh", async {
        let (client, _) = connect(&envoy.mcp_url(), &[]).await;
        assert_found_first(&search(&client, REFUND_QUERY).await, REFUND);
        assert_eq!(fetches(&envoy), (1, 0));
        let lists_before = received(&upstream, "tools/list");

        let (tools, notified) = upstream
            .set_tools(&changed_catalog(REFUND), true)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (tools, notified),
            (301, 1),
            "the rmcp client's session is notified"
        );
        let changed_at = Instant::now();
        let found_at = wait_for_the_change(&client, Duration::from_secs(5)).await;
        eprintln!(
            "the change was found {:?} after it was announced",
            found_at - changed_at
        );

        let seen = &client.service().list_changed;
        eventually(
            "the client to receive list_changed through Envoy",
            Duration::from_secs(2),
            || async move { (seen.load(Ordering::SeqCst) > 0).then_some(()) },
        )
        .await;
        let _ = client.cancel().await;
        assert_eq!(
            fetches(&envoy),
            (2, 0),
            "one refresh, from the notification"
        );
        assert_eq!(received(&upstream, "tools/list"), lists_before + 1);
        assert_fetched_health(&envoy, 301).await;
    })
    .await;
}

/// `max_age: 2s` and a change nobody announces (a stateless server notifies nobody): the
/// catalog is used as it is until it is 2 s old, then refreshed from the tick. That it is used
/// as it is while young is shown by a second Envoy in front of the same server with `max_age:
/// 3600s`: a check against the 2 s one would race the clock on a slow machine, while the hour's
/// catalog is young whatever the machine, before the change and after the 2 s one refreshed.
#[tokio::test]
async fn max_age_refreshes_an_unannounced_change() {
    let dir = TestDir::new("catalog_max_age").expect("dir");
    let upstream = start_catalog(
        &CatalogOptions {
            json: true,
            stateless: true,
            ..CatalogOptions::default()
        },
        &dir,
    );
    let aging = start_envoy(upstream.addr, &config(json!({"max_age": "2s"})), &dir);
    let young = start_envoy(upstream.addr, &config(json!({"max_age": "3600s"})), &dir);
    within("max_age refresh", async {
        let (young_client, _) = connect(&young.mcp_url(), &[]).await;
        assert_found_first(&search(&young_client, REFUND_QUERY).await, REFUND);
        assert_eq!(fetches(&young), (1, 0));
        let (client, _) = connect(&aging.mcp_url(), &[]).await;
        // Taken before the search: the fetch it makes can only be later.
        let searched_at = Instant::now();
        let r = search(&client, REFUND_QUERY).await;
        assert_found_first(&r, REFUND);
        assert_eq!(fetches(&aging), (1, 0));

        let (tools, notified) = upstream
            .set_tools(&changed_catalog(REFUND), false)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((tools, notified), (301, 0));
        // Younger than max_age: the catalog is used as it is (no fetch per search).
        assert_found_first(&search(&young_client, REFUND_QUERY).await, REFUND);
        assert_eq!(fetches(&young), (1, 0));

        let found_at = wait_for_the_change(&client, Duration::from_secs(6)).await;
        let after = found_at - searched_at;
        eprintln!("the change was found {after:?} after the first search");
        // Less 10 ms: the filter's ages are whole milliseconds of another clock.
        assert!(
            after >= Duration::from_millis(1990),
            "refreshed before max_age: {after:?}"
        );
        let _ = client.cancel().await;
        let (ok, failed) = fetches(&aging);
        assert!(ok >= 2, "a refresh at least: {ok}");
        assert_eq!(failed, 0);
        assert_catalog_source(&aging, "fetched", 301).await;

        // Older than the other's max_age, younger than its own: still the catalog it fetched.
        assert_found_first(&search(&young_client, REFUND_QUERY).await, REFUND);
        assert_eq!(fetches(&young), (1, 0));
        let _ = young_client.cancel().await;
    })
    .await;
}

// ---- failures ------------------------------------------------------------------------------------

/// What the raw TCP upstream does with every request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Misbehaviour {
    /// `500 Internal Server Error`.
    Status500,
    /// `200`, `content-type: application/json`, body `<html>`.
    NotJson,
    /// Reads the request and never answers.
    Silent,
}

/// A raw HTTP/1.1 server on a thread that misbehaves on every request; it records each
/// request's line and body. It answers only once a request's whole body is in: the client's
/// own `tools/call`, whose headers Envoy forwards before the filter answers it (no
/// `hold_request_headers`), never gets its body here, so only the filter's fetch is answered.
struct BadServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<String>>>,
}

impl BadServer {
    fn start(mode: Misbehaviour) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let requests: Arc<Mutex<Vec<String>>> = Arc::default();
        let log = requests.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { break };
                let log = log.clone();
                std::thread::spawn(move || {
                    let _ = serve_badly(conn, mode, &log);
                });
            }
        });
        Self { addr, requests }
    }

    /// Asserts that the filter's fetch reached this server: an `initialize` at least.
    fn assert_initialized(&self) {
        let initializes = self
            .requests
            .lock()
            .map(|r| {
                r.iter()
                    .filter(|l| l.contains("\"method\":\"initialize\""))
                    .count()
            })
            .unwrap_or(0);
        assert!(
            initializes >= 1,
            "{:?}",
            self.requests.lock().map(|r| r.clone())
        );
    }
}

fn serve_badly(
    conn: TcpStream,
    mode: Misbehaviour,
    log: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut out = conn;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let request_line = line.trim_end().to_owned();
        let (mut length, mut chunked) = (0usize, false);
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                let name = name.trim().to_ascii_lowercase();
                if name == "content-length" {
                    length = value.trim().parse().unwrap_or(0);
                } else if name == "transfer-encoding"
                    && value.to_ascii_lowercase().contains("chunked")
                {
                    chunked = true;
                }
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                line.clear();
                reader.read_line(&mut line)?;
                let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
                let mut chunk = vec![0u8; size + 2];
                reader.read_exact(&mut chunk)?;
                chunk.truncate(size);
                body.extend_from_slice(&chunk);
                if size == 0 {
                    break;
                }
            }
        } else {
            body.resize(length, 0);
            reader.read_exact(&mut body)?;
        }
        if let Ok(mut l) = log.lock() {
            l.push(format!("{request_line} {}", String::from_utf8_lossy(&body)));
        }
        let reply: &[u8] = match mode {
            Misbehaviour::Status500 => b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\ncontent-length: 15\r\n\r\nsomething broke",
            Misbehaviour::NotJson => b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 6\r\n\r\n<html>",
            Misbehaviour::Silent => {
                // Hold the connection, unanswered, until the peer gives up on it.
                let mut sink = [0u8; 1024];
                while reader.read(&mut sink).is_ok_and(|n| n > 0) {}
                return Ok(());
            }
        };
        out.write_all(reply)?;
        out.flush()?;
    }
}

/// The agent's text for a failed fetch.
fn fetch_failed_text(why: &str) -> String {
    format!(
        "The tool catalog could not be fetched from the server ({why}). Retry the search later."
    )
}

/// Asserts a failed search (isError, one text) and returns its text.
fn failed_search_text(result: &CallToolResult) -> String {
    assert_eq!(result.is_error, Some(true), "{}", to_value(result));
    assert_eq!(texts(result).len(), 1, "{}", to_value(result));
    first_text(result)
}

/// Asserts an Envoy whose fetches all failed: no fetch succeeded and one failed at least; health
/// shows no tools and a failure at least. Returns `catalog_fetches.failed` and the health entry.
async fn assert_fetches_failed(envoy: &Envoy) -> (u64, Value) {
    let (ok, failed) = fetches(envoy);
    assert_eq!(ok, 0);
    assert!(failed >= 1, "catalog_fetches.failed: {failed}");
    let h = catalog_health(envoy).await;
    assert_eq!(h["tools"], 0, "{h}");
    assert!(h["failures"].as_u64().is_some_and(|n| n >= 1), "{h}");
    (failed, h)
}

/// A search whose fetch fails answers the agent with the reason; so does the HTTP endpoint
/// (502), health and stats. `why`: the reason the filter must give.
async fn assert_fetch_fails(envoy: &Envoy, server: &BadServer, why: &str) {
    let r = raw_search_2025(envoy, REFUND_QUERY).await;
    assert_eq!(failed_search_text(&r), fetch_failed_text(why));
    server.assert_initialized();
    let (failed, h) = assert_fetches_failed(envoy).await;
    assert_eq!(h["last_error"], why, "{h}");

    let v = http_search(envoy, &json!({"query": REFUND_QUERY}), 502).await;
    assert_eq!(
        v["error"],
        format!("the tool catalog of namespace \"{NAMESPACE}\" could not be fetched: {why}"),
        "{v}"
    );
    let (_, failed_after) = fetches(envoy);
    assert!(
        failed_after > failed,
        "the HTTP search fetched again and failed: {failed_after}"
    );
}

/// [`assert_fetch_fails`] in front of a [`BadServer`] that misbehaves as `mode`.
async fn assert_misbehaviour_is_reported(dir: &str, mode: Misbehaviour, why: &str) {
    let dir = TestDir::new(dir).expect("dir");
    let server = BadServer::start(mode);
    let envoy = start_envoy(server.addr, &config(json!({})), &dir);
    within(
        &format!("{mode:?}"),
        assert_fetch_fails(&envoy, &server, why),
    )
    .await;
}

#[tokio::test]
async fn fetch_failure_http_500_is_reported() {
    assert_misbehaviour_is_reported(
        "catalog_fail_500",
        Misbehaviour::Status500,
        "initialize: the server answered HTTP 500",
    )
    .await;
}

#[tokio::test]
async fn fetch_failure_not_json_is_reported() {
    assert_misbehaviour_is_reported(
        "catalog_fail_garbage",
        Misbehaviour::NotJson,
        "initialize: the answer is not JSON (neither a JSON body nor an event stream with data)",
    )
    .await;
}

#[tokio::test]
async fn fetch_failure_timeout_is_reported() {
    let dir = TestDir::new("catalog_fail_slow").expect("dir");
    let server = BadServer::start(Misbehaviour::Silent);
    let envoy = start_envoy(server.addr, &config(json!({"timeout": "1s"})), &dir);
    within("no answer within catalog.timeout", async {
        let started = Instant::now();
        let r = raw_search_2025(&envoy, REFUND_QUERY).await;
        let took = started.elapsed();
        let text = failed_search_text(&r);
        assert!(
            (Duration::from_millis(950)..Duration::from_secs(4)).contains(&took),
            "answered after {took:?}: {text}"
        );
        // The reason names the time waited: catalog.timeout, give or take the timer's tick.
        let why = text
            .strip_prefix("The tool catalog could not be fetched from the server (")
            .and_then(|t| t.strip_suffix("). Retry the search later."))
            .unwrap_or_else(|| panic!("{text}"))
            .to_owned();
        let waited: u64 = why
            .strip_prefix("initialize: no response within ")
            .and_then(|t| t.strip_suffix(" ms"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("not a timeout: {text}"));
        assert!((1000..1500).contains(&waited), "{text}");
        server.assert_initialized();
        let (_, h) = assert_fetches_failed(&envoy).await;
        let last = h["last_error"]
            .as_str()
            .unwrap_or_else(|| panic!("no last_error: {h}"));
        assert!(last.starts_with("initialize: no response within "), "{h}");
    })
    .await;
}

/// The server is down (nothing listens on the cluster's port): the search reports it; once a
/// server listens there, the next search fetches and finds the tool. With held request headers:
/// otherwise the router already has the search's headers, fails to connect and answers the
/// client 503 itself before the filter's fetch comes back.
#[tokio::test]
async fn fetch_failure_server_down_then_recovers() {
    let dir = TestDir::new("catalog_fail_down").expect("dir");
    let port = harness::free_port().expect("free port");
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let envoy = start_envoy_holding(addr, &config(json!({})), &dir, true);
    let why = "initialize: no response from the server (reset or unreachable)";
    // The exact reason is checked last, so that a wrong one does not hide how recovery goes.
    let mut reported = (String::new(), Value::Null);
    within("server down", async {
        let r = raw_search_2025(&envoy, REFUND_QUERY).await;
        let text = failed_search_text(&r);
        assert!(
            text.starts_with("The tool catalog could not be fetched from the server (initialize: "),
            "{text}"
        );
        let (_, h) = assert_fetches_failed(&envoy).await;
        reported = (text, h["last_error"].clone());
    })
    .await;

    let upstream = CatalogServer::start_at(
        CATALOG_SERVER.as_ref(),
        &CatalogOptions::default(),
        &dir,
        &addr.to_string(),
    )
    .unwrap_or_else(|e| panic!("catalog-server on {addr}: {e}"));
    within("the server is back", async {
        assert_client_finds_first(&envoy.mcp_url(), REFUND_QUERY, REFUND).await;
        assert_eq!(fetches(&envoy).0, 1, "one successful fetch");
        assert_fetched_health(&envoy, 301).await;
        assert!(received(&upstream, "tools/list") >= 1);
    })
    .await;
    assert_eq!(
        reported.0,
        fetch_failed_text(why),
        "the search's reason while the server was down"
    );
    assert_eq!(
        reported.1, why,
        "health's last_error while the server was down"
    );
}
