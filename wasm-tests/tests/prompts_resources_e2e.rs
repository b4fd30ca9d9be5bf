//! Prompts and resources, and hierarchical search, through a real Envoy: the Python SDK's
//! FastMCP and the TypeScript SDK's server-everything serve prompts, resources and resource
//! templates; the filter learns their lists as they pass (JSON and SSE), searches them with
//! `type`, and under a policy filters them and authorizes `prompts/get` and `resources/read`
//! from the body.
//!
//! Needs Envoy (`ENVOY_BIN`), the built filter (`FILTER_WASM`), the Python SDK (`MCP_PYTHON`,
//! `make python-peers`) and server-everything (`SERVER_EVERYTHING`, `make node-peers`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_wasm_tests::envoy_config::Cluster;
use mcp_tool_search_wasm_tests::harness::{
    self, free_port, Embedder, Envoy, EnvoyOptions, FilterOptions, TestDir,
};
use mcp_tool_search_wasm_tests::mcp;
use mcp_tool_search_wasm_tests::node::ServerEverything;
use mcp_tool_search_wasm_tests::python::{FastMcpOptions, FastMcpServer};
use serde_json::{json, Value};
use std::net::SocketAddr;
use support::*;

fn envoy(upstream: SocketAddr, config: Value, dir: &TestDir) -> Envoy {
    envoy_with(upstream, config, Vec::new(), dir)
}

fn envoy_with(upstream: SocketAddr, config: Value, clusters: Vec<Cluster>, dir: &TestDir) -> Envoy {
    let filter = FilterOptions {
        wasm: harness::filter_wasm().unwrap_or_else(|e| panic!("{e}")),
        config_json: config.to_string(),
    };
    let mut opts = EnvoyOptions::new(upstream, Some(filter));
    opts.catch_all_route = true;
    opts.extra_clusters = clusters;
    Envoy::start(&opts, dir).unwrap_or_else(|e| panic!("{e}"))
}

/// A JSON-RPC client of one endpoint, with the caller's headers (and session, once opened).
struct Client {
    url: String,
    headers: Vec<(String, String)>,
}

impl Client {
    fn new(envoy: &Envoy, headers: &[(&str, &str)]) -> Client {
        let mut all = vec![("mcp-protocol-version".to_owned(), "2025-06-18".to_owned())];
        all.extend(
            headers
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        Client {
            url: envoy.mcp_url(),
            headers: all,
        }
    }

    /// `initialize` and `notifications/initialized`, for a stateful server.
    async fn open(mut self) -> Client {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "prompts-resources-e2e", "version": "1"}}});
        let resp = rpc(&self.url, &self.h(), &init).await;
        let session = resp
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("no session: {}", resp.text()))
            .to_owned();
        self.headers.push(("mcp-session-id".to_owned(), session));
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        rpc(&self.url, &self.h(), &done).await;
        self
    }

    fn h(&self) -> Vec<(&str, &str)> {
        self.headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    /// The whole JSON-RPC response to one request.
    async fn send(&self, method: &str, params: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let resp = rpc(&self.url, &self.h(), &body).await;
        resp.response_for(&json!(7))
            .cloned()
            .unwrap_or_else(|| panic!("{body}: no response: {} {}", resp.status, resp.text()))
    }

    /// Every entry of a list (all pages), by its key field.
    async fn list(&self, method: &str, member: &str, key: &str) -> (Vec<String>, Value) {
        let (mut keys, mut cursor) = (Vec::new(), None::<String>);
        loop {
            let params = cursor.as_ref().map_or(json!({}), |c| json!({"cursor": c}));
            let r = self.send(method, params).await;
            let result = r["result"].clone();
            let items = result[member]
                .as_array()
                .unwrap_or_else(|| panic!("{method}: {r}"));
            keys.extend(items.iter().map(|e| e[key].as_str().unwrap().to_owned()));
            cursor = result["nextCursor"].as_str().map(str::to_owned);
            if cursor.is_none() {
                return (keys, result);
            }
        }
    }

    /// `tool_search` with `type`: (type, key) of each result, and the search metadata.
    async fn search(&self, arguments: Value) -> (Vec<(String, String)>, Value) {
        let r = self
            .send(
                "tools/call",
                json!({"name": "tool_search", "arguments": arguments}),
            )
            .await;
        let result = &r["result"];
        assert_ne!(result["isError"], true, "{arguments}: {r}");
        let text = result["content"][0]["text"].as_str().unwrap();
        let found: Vec<Value> = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {r}"));
        let typed = found
            .iter()
            .map(|f| {
                let d = &f["definition"];
                let key = match f["type"].as_str().unwrap() {
                    "resource" => d["uri"].as_str(),
                    "resource_template" => d["uriTemplate"].as_str(),
                    _ => d["name"].as_str(),
                };
                (
                    f["type"].as_str().unwrap().to_owned(),
                    key.unwrap().to_owned(),
                )
            })
            .collect();
        (typed, result["_meta"]["mcp-tool-search/search"].clone())
    }
}

fn policy() -> Value {
    json!({"authorization": {
        "identity": {"source": "header", "header": "x-user-roles"},
        "rules": [
            {"claim": "roles", "values": ["support"], "tools": ["*"], "prompts": ["triage_*"], "resources": ["kb://*"]},
            {"claim": "roles", "values": ["admin"]}],
        "default": "deny"}})
}

fn entry(t: &str, key: &str) -> (String, String) {
    (t.to_owned(), key.to_owned())
}

/// The Python SDK's server: lists learned as they pass, searched by type, filtered per caller;
/// `prompts/get` and `resources/read` of what the policy hides never reach the server.
#[tokio::test]
async fn python_sdk_prompts_and_resources_are_searched_and_authorized() {
    let dir = TestDir::new("prompts_resources_python").unwrap();
    let server = FastMcpServer::start(FastMcpOptions::default(), &dir).unwrap();
    let envoy = envoy(server.addr, policy(), &dir);
    within("prompts and resources, Python SDK", async {
        let admin = Client::new(&envoy, &[("x-user-roles", "admin")]);
        let support = Client::new(&envoy, &[("x-user-roles", "support")]);
        let (prompts, _) = admin.list("prompts/list", "prompts", "name").await;
        assert_eq!(prompts, ["triage_ticket", "payroll_summary"]);
        let (resources, _) = admin.list("resources/list", "resources", "uri").await;
        assert_eq!(resources, ["kb://refunds", "hr://salaries"]);
        let (templates, _) = admin
            .list("resources/templates/list", "resourceTemplates", "uriTemplate")
            .await;
        assert_eq!(templates, ["kb://articles/{slug}"]);

        // The support role's lists, filtered and private.
        let (prompts, result) = support.list("prompts/list", "prompts", "name").await;
        assert_eq!(prompts, ["triage_ticket"]);
        assert_eq!(result["cacheScope"], "private", "{result}");
        let (resources, _) = support.list("resources/list", "resources", "uri").await;
        assert_eq!(resources, ["kb://refunds"]);

        // Searches by type, for each caller.
        let (found, meta) = support
            .search(json!({"query": "classify a ticket by urgency", "type": "prompt"}))
            .await;
        assert_eq!(found, [entry("prompt", "triage_ticket")], "{meta}");
        let (found, _) = admin
            .search(json!({"query": "salary of every employee", "type": "resource"}))
            .await;
        assert_eq!(found[0], entry("resource", "hr://salaries"));
        let (found, _) = admin
            .search(json!({"query": "knowledge base article", "type": "resource"}))
            .await;
        assert_eq!(found[0], entry("resource_template", "kb://articles/{slug}"));
        let (found, meta) = support
            .search(json!({"query": "salary employee payroll finance", "type": "all"}))
            .await;
        assert!(found.is_empty(), "{found:?} {meta}");
        let (status, _, v) = {
            let (status, headers, body) = mcp::request(
                "POST",
                &envoy.url("/mcp/search"),
                &[("content-type", "application/json"), ("x-user-roles", "admin")],
                Some(br#"{"query":"refund a customer","type":"all"}"#.to_vec()),
            )
            .await
            .unwrap();
            (status, headers, serde_json::from_slice::<Value>(&body).unwrap())
        };
        assert_eq!(status, 200, "{v}");
        // `all` ranks the server's tools (fetched on this first search) with the rest.
        let typed: Vec<(String, String)> = v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let d = &r["definition"];
                let key = d["uri"].as_str().or(d["name"].as_str()).unwrap();
                (r["type"].as_str().unwrap().to_owned(), key.to_owned())
            })
            .collect();
        assert_eq!(
            typed,
            [entry("tool", "stripe_create_refund"), entry("resource", "kb://refunds")],
            "{v}"
        );

        // Use: allowed ones reach the server, hidden ones never do.
        let r = support.send("prompts/get", json!({"name": "triage_ticket", "arguments": {"ticket": "42"}})).await;
        assert!(r["result"]["messages"][0]["content"]["text"].as_str().unwrap().contains("42"), "{r}");
        let r = support.send("resources/read", json!({"uri": "kb://refunds"})).await;
        assert!(r["result"]["contents"][0]["text"].as_str().unwrap().contains("Refund"), "{r}");
        let r = support.send("prompts/get", json!({"name": "payroll_summary"})).await;
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert_eq!(r["error"]["message"], "Unknown prompt: payroll_summary");
        let r = support.send("resources/read", json!({"uri": "hr://salaries"})).await;
        assert_eq!(r["error"]["code"], -32002, "{r}");
        assert_eq!(r["error"]["data"]["uri"], "hr://salaries");
        // Two `uri`s, one escaped: readers disagree on which wins, so neither is read.
        let mut h = support.h();
        h.push(("content-type", "application/json"));
        h.push(("accept", "application/json, text/event-stream"));
        let (status, _, body) = mcp::request(
            "POST",
            &envoy.mcp_url(),
            &h,
            Some(br#"{"jsonrpc":"2.0","id":8,"method":"resources/read","params":{"uri":"kb://refunds","\u0075ri":"hr://salaries"}}"#.to_vec()),
        )
        .await
        .unwrap();
        assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
        let recorded = server.recorded();
        assert!(recorded.contains(&"prompts/get triage_ticket".to_owned()), "{recorded:?}");
        assert!(recorded.contains(&"resources/read kb://refunds".to_owned()), "{recorded:?}");
        assert!(!recorded.iter().any(|l| l.contains("payroll") || l.contains("salaries")), "{recorded:?}");
        // The admin rule names no kind: it is about every entry.
        let r = admin.send("resources/read", json!({"uri": "hr://salaries"})).await;
        assert!(r["result"]["contents"].is_array(), "{r}");
    })
    .await;
}

/// server-everything answers lists as SSE, in a session: its prompts, resources and templates
/// are learned from the stream and searched.
#[tokio::test]
async fn server_everything_prompts_and_resources_over_sse_are_searched() {
    let dir = TestDir::new("prompts_resources_everything").unwrap();
    let everything = ServerEverything::start_on(free_port().unwrap(), &dir).unwrap();
    let envoy = envoy(everything.addr, json!({}), &dir);
    within("prompts and resources, server-everything", async {
        let client = Client::new(&envoy, &[]).open().await;
        let (prompts, _) = client.list("prompts/list", "prompts", "name").await;
        assert!(
            prompts.contains(&"completable-prompt".to_owned()),
            "{prompts:?}"
        );
        let (resources, _) = client.list("resources/list", "resources", "uri").await;
        assert!(resources.len() > 1, "{resources:?}");
        let (templates, _) = client
            .list(
                "resources/templates/list",
                "resourceTemplates",
                "uriTemplate",
            )
            .await;
        assert!(templates.contains(&"demo://resource/dynamic/blob/{resourceId}".to_owned()));

        let (found, meta) = client
            .search(
                json!({"query": "choose a team member to lead the department", "type": "prompt"}),
            )
            .await;
        assert_eq!(found[0], entry("prompt", "completable-prompt"), "{meta}");
        let (found, _) = client
            .search(json!({"query": "binary base64 dynamic resource", "type": "resource"}))
            .await;
        assert_eq!(
            found[0],
            entry(
                "resource_template",
                "demo://resource/dynamic/blob/{resourceId}"
            )
        );
        let (found, _) = client
            .search(json!({"query": "architecture document", "type": "all", "limit": 3}))
            .await;
        assert_eq!(
            found[0],
            entry(
                "resource",
                &resources
                    .iter()
                    .find(|u| u.ends_with("architecture.md"))
                    .unwrap()
                    .clone()
            )
        );
        // The prompt found is the server's: get it through Envoy.
        let r = client
            .send("prompts/get", json!({"name": "simple-prompt"}))
            .await;
        assert!(r["result"]["messages"].is_array(), "{r}");
    })
    .await;
}

/// Hierarchical search through Envoy: the metadata says which groups stage 1 chose, and a query
/// no group matches falls back to flat search and says why.
#[tokio::test]
async fn hierarchical_search_metadata_and_its_fallback() {
    let dir = TestDir::new("hierarchical_e2e").unwrap();
    let server = FastMcpServer::start(FastMcpOptions::default(), &dir).unwrap();
    let config = json!({"group_separator": "_", "search": {"strategy": "hierarchical", "routing": {"groups": 1}}});
    let envoy = envoy(server.addr, config, &dir);
    within("hierarchical search", async {
        let client = Client::new(&envoy, &[]);
        client.send("tools/list", json!({})).await;
        let r = client
            .send("tools/call", json!({"name": "tool_search", "arguments": {"query": "refund a charge to the customer"}}))
            .await;
        let meta = &r["result"]["_meta"]["mcp-tool-search/search"];
        assert_eq!(meta["strategy_used"], "hierarchical", "{r}");
        assert_eq!(meta["groups_used"], json!(["stripe"]), "{r}");
        assert_eq!(meta["stage2_candidate_count"], 2, "{r}");
        let text = r["result"]["content"][0]["text"].as_str().unwrap();
        let found: Vec<Value> = serde_json::from_str(text).unwrap();
        assert_eq!(found[0]["name"], "stripe_create_refund");

        let r = client
            .send("tools/call", json!({"name": "tool_search", "arguments": {"query": "weather forecast tomorrow"}}))
            .await;
        let meta = &r["result"]["_meta"]["mcp-tool-search/search"];
        assert_eq!(meta["strategy_used"], "flat", "{r}");
        assert_eq!(meta["routing_fallback"]["reason"], "no group matches the query", "{r}");

        let (status, _, body) =
            mcp::get(&envoy.url("/mcp/search/groups?query=refund+a+charge")).await.unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["groups"][0]["group"], "stripe", "{v}");
        assert_eq!(v["groups"][0]["chosen"], true);
    })
    .await;
}

/// A replica that learned a server's tools from a client's `tools/list` (so it never fetched)
/// knows none of its prompts or resources: a typed search for them, through the search tool and
/// the HTTP endpoint, fetches them and answers in the same request.
#[tokio::test]
async fn a_replica_that_saw_only_tools_finds_prompts_and_resources_in_the_same_request() {
    let dir = TestDir::new("prompts_resources_unseen").unwrap();
    let everything = ServerEverything::start_on(free_port().unwrap(), &dir).unwrap();
    let envoy = envoy(everything.addr, json!({}), &dir);
    within("unseen kinds fetched, server-everything", async {
        let client = Client::new(&envoy, &[]).open().await;
        let (tools, _) = client.list("tools/list", "tools", "name").await;
        assert_eq!(tools, ["tool_search"], "every tool progressive");
        let (found, meta) = client
            .search(
                json!({"query": "choose a team member to lead the department", "type": "prompt"}),
            )
            .await;
        assert_eq!(
            found.first(),
            Some(&entry("prompt", "completable-prompt")),
            "{meta}"
        );
        let (status, _, body) = mcp::request(
            "POST",
            &envoy.url("/mcp/search"),
            &[("content-type", "application/json")],
            Some(br#"{"query":"binary base64 dynamic resource","type":"resource"}"#.to_vec()),
        )
        .await
        .unwrap();
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status, 200, "{v}");
        assert_eq!(
            v["results"][0]["definition"]["uriTemplate"],
            "demo://resource/dynamic/blob/{resourceId}",
            "{v}"
        );
    })
    .await;
}

/// Under hybrid ranking prompts are embedded like tools (through the real sidecar): a prompt is
/// found by a paraphrase that shares no word with it.
#[tokio::test]
async fn under_hybrid_ranking_a_prompt_is_found_by_paraphrase() {
    let dir = TestDir::new("prompts_hybrid").unwrap();
    let sidecar = Embedder::start(&dir).unwrap_or_else(|e| panic!("{e}"));
    let everything = ServerEverything::start_on(free_port().unwrap(), &dir).unwrap();
    let config = json!({"search": {"ranking": "hybrid", "embeddings": {
        "cluster": "embeddings", "model_id": "all-MiniLM-L6-v2", "dimensions": 384}}});
    let envoy = envoy_with(
        everything.addr,
        config,
        vec![Cluster::new("embeddings", sidecar.addr)],
        &dir,
    );
    within("a prompt by paraphrase, hybrid", async {
        let client = Client::new(&envoy, &[]).open().await;
        client.list("prompts/list", "prompts", "name").await;
        let query = json!({"query": "promote an employee to head a division", "type": "prompt"});
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let (found, meta) = loop {
            let (found, meta) = client.search(query.clone()).await;
            let embedded = meta["embedded"]
                .as_u64()
                .is_some_and(|n| Some(n) == meta["candidates"].as_u64());
            if embedded || std::time::Instant::now() > deadline {
                break (found, meta);
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        };
        assert_eq!(meta["strategy"], "hybrid", "{meta}");
        assert_eq!(
            meta["embedded"], meta["candidates"],
            "every prompt embedded: {meta}"
        );
        assert_eq!(
            found.first(),
            Some(&entry("prompt", "completable-prompt")),
            "{found:?} {meta}"
        );
    })
    .await;
}
