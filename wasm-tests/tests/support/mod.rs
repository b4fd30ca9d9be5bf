//! Fixtures shared by the Envoy end-to-end tests (`*_e2e.rs`, `mod support`): one test's
//! processes (the catalog MCP server, Envoy with optional `jwt_authn` in front of the Wasm filter),
//! the rmcp client, raw JSON-RPC over HTTP, and small helpers over tool lists and results.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::time::Duration;

use mcp_tool_search_wasm_tests::envoy_config::Cluster;
use mcp_tool_search_wasm_tests::harness::{
    self, CatalogOptions, CatalogServer, Envoy, EnvoyOptions, FilterOptions, JwtAuthnOptions,
    TestDir,
};
use mcp_tool_search_wasm_tests::mcp::{self, Lifecycle, McpClient, ProgressLog, RawResponse};
use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion};
use serde_json::{json, Value};

pub const CATALOG_SERVER: &str = env!("CARGO_BIN_EXE_catalog-server");
pub const TOOL_SEARCH: &str = "tool_search";
pub const TEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The namespace the tests put in route metadata.
pub const NAMESPACE: &str = "saas";
pub const SEARCH_PATH: &str = "/mcp/search";

/// One test's processes. Fields drop in order: Envoy, then the upstream, then the directory.
pub struct Stack {
    pub envoy: Envoy,
    pub upstream: CatalogServer,
    pub dir: TestDir,
}

/// What to start.
#[derive(Clone)]
pub struct Setup {
    pub catalog: CatalogOptions,
    /// The plugin configuration.
    pub config: Value,
    pub jwt: Option<JwtAuthnOptions>,
    /// `allow_on_headers_stop_iteration: true` (pairs with `"hold_request_headers": true`).
    pub allow_stop: bool,
    /// Route metadata namespace (default [`NAMESPACE`]).
    pub namespace: Option<String>,
    /// More Envoy clusters (e.g. the filter's `embeddings`), see
    /// [`EnvoyOptions::extra_clusters`].
    pub extra_clusters: Vec<Cluster>,
    /// Load code mode's module instead of the filter's.
    pub code_module: bool,
}

impl Setup {
    /// A stateless SSE upstream (raw JSON-RPC needs no session) with this plugin config.
    pub fn new(config: Value) -> Self {
        Self {
            catalog: CatalogOptions {
                stateless: true,
                ..CatalogOptions::default()
            },
            config,
            jwt: None,
            allow_stop: false,
            namespace: Some(NAMESPACE.to_owned()),
            extra_clusters: Vec::new(),
            code_module: false,
        }
    }

    /// Code mode's module (`mcp_tool_search_code.wasm`) instead of the filter's.
    pub fn code_module(mut self) -> Self {
        self.code_module = true;
        self
    }

    /// `"hold_request_headers": true` in the plugin config, and Envoy's
    /// `allow_on_headers_stop_iteration`.
    pub fn holding(mut self) -> Self {
        if let Value::Object(map) = &mut self.config {
            map.insert("hold_request_headers".to_owned(), Value::Bool(true));
        }
        self.allow_stop = true;
        self
    }

    pub fn catalog(mut self, catalog: CatalogOptions) -> Self {
        self.catalog = catalog;
        self
    }

    pub fn jwt(mut self, jwt: JwtAuthnOptions) -> Self {
        self.jwt = Some(jwt);
        self
    }

    /// Start the upstream and Envoy (with the filter) in a fresh test directory.
    pub fn start(&self, name: &str) -> Stack {
        let dir = TestDir::new(name).expect("test dir");
        let upstream = CatalogServer::start(CATALOG_SERVER.as_ref(), &self.catalog, &dir)
            .unwrap_or_else(|e| panic!("catalog-server: {e}"));
        self.start_envoy(dir, upstream)
    }

    /// Start Envoy (with the filter) in front of an already running upstream.
    pub fn start_envoy(&self, dir: TestDir, upstream: CatalogServer) -> Stack {
        let filter = FilterOptions {
            wasm: if self.code_module {
                harness::code_wasm()
            } else {
                harness::filter_wasm()
            }
            .unwrap_or_else(|e| panic!("{e}")),
            config_json: self.config.to_string(),
        };
        let mut opts = EnvoyOptions::new(upstream.addr, Some(filter));
        opts.allow_on_headers_stop_iteration = self.allow_stop;
        opts.route_namespace = self.namespace.clone();
        opts.search_prefix = Some(SEARCH_PATH.to_owned());
        opts.extra_clusters = self.extra_clusters.clone();
        if let Some(jwt) = &self.jwt {
            opts.http_filters_before.push(jwt.filter());
            opts.component_log_level = "wasm:debug,http:debug,jwt:debug".to_owned();
        }
        let envoy = Envoy::start(&opts, &dir).unwrap_or_else(|e| panic!("{e}"));
        Stack {
            envoy,
            upstream,
            dir,
        }
    }
}

impl Stack {
    pub fn url(&self) -> String {
        self.envoy.mcp_url()
    }

    /// What the upstream received so far (`tools/call NAME`, `tools/list`, ...).
    pub fn recorded(&self) -> Vec<String> {
        self.upstream.recorded()
    }

    /// Asserts the upstream never received a `tools/call` of any of these tools.
    pub fn assert_never_called(&self, tools: &[&str]) {
        let rec = self.recorded();
        for t in tools {
            assert!(
                !rec.iter().any(|l| l == &format!("tools/call {t}")),
                "the upstream received tools/call {t}: {rec:?}"
            );
        }
    }

    /// The Envoy log lines that mention the filter.
    pub fn filter_log(&self) -> String {
        self.envoy
            .log()
            .lines()
            .filter(|l| l.contains("mcp-tool-search") || l.contains("wasm"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Run a test body with a deadline. Create the [`Stack`]s outside, so that on a timeout the
/// panic unwinds through them: their Drop prints the Envoy log and keeps the test directory.
pub async fn within<F: std::future::Future<Output = ()>>(what: &str, f: F) {
    if tokio::time::timeout(TEST_TIMEOUT, f).await.is_err() {
        panic!("{what}: timed out after {TEST_TIMEOUT:?} (a request or response never completed)");
    }
}

pub fn v2025_11() -> Lifecycle {
    Lifecycle::Initialize(ProtocolVersion::V_2025_11_25)
}

pub async fn connect(url: &str, headers: &[(&str, &str)]) -> (McpClient, ProgressLog) {
    mcp::connect_with_headers(url, v2025_11(), headers)
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"))
}

pub fn to_value<T: serde::Serialize>(t: &T) -> Value {
    serde_json::to_value(t).expect("serialize")
}

pub fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("?").to_owned())
        .collect()
}

pub fn name_set(tools: &[Value]) -> BTreeSet<String> {
    names(tools).into_iter().collect()
}

pub fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

pub fn by_name<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in {:?}", names(tools)))
}

pub fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let mut p = CallToolRequestParams::new(name.to_owned());
    if let Value::Object(map) = arguments {
        p.arguments = Some(map);
    }
    p
}

/// Every text content of a result, in order.
pub fn texts(result: &CallToolResult) -> Vec<String> {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

pub fn first_text(result: &CallToolResult) -> String {
    texts(result)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no text content in {}", to_value(result)))
}

/// The definitions of a `definitions`-format search result (its first text content).
pub fn found_definitions(result: &CallToolResult) -> Vec<Value> {
    let text = first_text(result);
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("first text content is not a JSON array ({e}): {text}"))
}

/// `_meta["mcp-tool-search/search"]` of a search result.
pub fn search_meta(result: &CallToolResult) -> Value {
    to_value(result)["_meta"]["mcp-tool-search/search"].clone()
}

/// Asserts an upstream tool result (`{"tool":NAME,"arguments":..,"ok":true}`); returns it.
pub fn assert_upstream_ok(result: &CallToolResult, tool: &str) -> Value {
    assert_ne!(result.is_error, Some(true), "{}", to_value(result));
    let v: Value = serde_json::from_str(&first_text(result)).expect("upstream result JSON");
    assert_eq!(v["tool"], tool, "{v}");
    assert_eq!(v["ok"], true, "{v}");
    v
}

/// Every tool of the 300-tool catalog plus the server's built-in `slow_progress`.
pub fn catalog_names() -> Vec<String> {
    let text = std::fs::read_to_string(harness::catalog_300()).expect("catalog-300.jsonl");
    let mut out: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("catalog line");
            v["name"].as_str().unwrap_or("?").to_owned()
        })
        .collect();
    out.push("slow_progress".to_owned());
    out
}

/// One JSON-RPC request over raw HTTP (Accept JSON and SSE), with extra headers.
pub async fn rpc(url: &str, headers: &[(&str, &str)], body: &Value) -> RawResponse {
    mcp::post(url, headers, body)
        .await
        .unwrap_or_else(|e| panic!("POST {url} {body}: {e}"))
}

/// A `tools/list` request body.
pub fn list_request(id: i64, cursor: Option<&str>) -> Value {
    match cursor {
        Some(c) => {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"cursor": c}})
        }
        None => json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}),
    }
}

/// A `tools/call` request body.
pub fn call_request(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

/// The result of the response with this id (panics, showing the body, when there is none).
pub fn result_of(resp: &RawResponse, id: i64) -> Value {
    let r = resp
        .response_for(&json!(id))
        .unwrap_or_else(|| panic!("no response with id {id}: {} {}", resp.status, resp.text()));
    r.get("result")
        .cloned()
        .unwrap_or_else(|| panic!("response {id} is not a result: {r}"))
}

/// The tools of a raw `tools/list` response (panics, showing the body, when the result has no
/// `tools` array: an empty list and a malformed one must not read the same).
pub fn listed(resp: &RawResponse, id: i64) -> Vec<Value> {
    result_of(resp, id)["tools"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "response {id} has no tools array: {} {}",
                resp.status,
                resp.text()
            )
        })
}

/// POST a body to the HTTP search endpoint: (status, headers, parsed JSON or `null`).
pub async fn http_search(
    stack: &Stack,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, reqwest::header::HeaderMap, Value) {
    let mut h = vec![("content-type", "application/json")];
    h.extend_from_slice(headers);
    let (status, headers, body) = mcp::request(
        "POST",
        &stack.envoy.url(SEARCH_PATH),
        &h,
        Some(body.to_vec()),
    )
    .await
    .unwrap_or_else(|e| panic!("POST {SEARCH_PATH}: {e}"));
    let v = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if v.is_null() && status < 300 {
        eprintln!(
            "{SEARCH_PATH}: {status}, not JSON: {}",
            String::from_utf8_lossy(&body)
        );
    }
    (status, headers, v)
}

/// Whole-word occurrences of tool `name` in `text` (a name inside a longer identifier does not
/// count).
pub fn mentions(text: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.';
    text.match_indices(name).any(|(at, _)| {
        let before = text.get(..at).and_then(|s| s.chars().next_back());
        let after = text.get(at + name.len()..).and_then(|s| s.chars().next());
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}
