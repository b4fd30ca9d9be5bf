//! The filter in front of Envoy's own MCP aggregation (`envoy.filters.http.mcp` +
//! `envoy.filters.http.mcp_router` over two `catalog-server`s): the route's cluster is one
//! backend only, so the filter fetches the catalog through a loopback cluster to its own
//! listener, marked with this Envoy's secret so that it lets its own fetch through untouched,
//! and sees what a client sees: the aggregated, prefixed list.
//!
//! Needs Envoy (`ENVOY_BIN`, else `.venv/bin/envoy`) and the built filter (`make wasm`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_wasm_tests::envoy_config::{
    Bootstrap, Cluster, HttpFilter, Listener, McpServer, Route, WasmFilter,
};
use mcp_tool_search_wasm_tests::harness::{
    filter_wasm, free_port, CatalogOptions, CatalogServer, Envoy, TestDir,
};
use serde_json::{json, Value};
use support::*;

/// Our filter, then `mcp`, then `mcp_router` over `alpha` and `beta`; `self` is the listener.
fn gateway_yaml(port: u16, alpha: &CatalogServer, beta: &CatalogServer, config: &Value) -> String {
    let wasm = filter_wasm().unwrap();
    let listener = Listener::new("gateway")
        .port(port)
        .no_stream_idle_timeout()
        .routes(vec![Route::prefix("/").to_cluster_untimed("alpha")])
        .filter(HttpFilter::wasm(&WasmFilter::new(
            &wasm,
            &config.to_string(),
        )))
        .filter(HttpFilter::mcp())
        .filter(HttpFilter::mcp_router(&[
            McpServer::new("alpha"),
            McpServer::new("beta"),
        ]));
    Bootstrap::new()
        .listener(listener)
        .cluster(Cluster::new("alpha", alpha.addr))
        .cluster(Cluster::new("beta", beta.addr))
        .cluster(Cluster::new(
            "self",
            format!("127.0.0.1:{port}").parse().unwrap(),
        ))
        .to_yaml()
}

struct Gateway {
    envoy: Envoy,
    alpha: CatalogServer,
    beta: CatalogServer,
    _dir: TestDir,
}

fn start(name: &str, config: Value) -> Gateway {
    let dir = TestDir::new(name).unwrap();
    let all = std::fs::read_to_string(mcp_tool_search_wasm_tests::harness::catalog_300()).unwrap();
    let lines: Vec<&str> = all.lines().filter(|l| !l.trim().is_empty()).collect();
    let (a, b) = lines.split_at(150);
    let (a_path, b_path) = (dir.join("alpha.jsonl"), dir.join("beta.jsonl"));
    std::fs::write(&a_path, a.join("\n")).unwrap();
    std::fs::write(&b_path, b.join("\n")).unwrap();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_catalog-server"));
    let server = |tools| {
        CatalogServer::start(
            bin,
            &CatalogOptions {
                tools,
                ..CatalogOptions::default()
            },
            &dir,
        )
        .unwrap()
    };
    let (alpha, beta) = (server(a_path), server(b_path));
    let port = free_port().unwrap();
    let yaml = gateway_yaml(port, &alpha, &beta, &config);
    let envoy = Envoy::start_yaml(&yaml, "wasm:debug", &dir).unwrap();
    Gateway {
        envoy,
        alpha,
        beta,
        _dir: dir,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fresh_gateway_searches_the_aggregated_catalog_and_calls_reach_their_server() {
    let gw = start(
        "router-fresh",
        json!({"catalog": {"cluster": "self", "loopback": true}}),
    );
    let url = gw.envoy.mcp_url();
    // No client has listed: the filter fetches through its own listener, past the router.
    let (client, _) = connect(&url, &[]).await;
    let found = client
        .call_tool(call("tool_search", json!({"query": "refund a payment"})))
        .await
        .unwrap();
    let names: Vec<String> = found_definitions(&found)
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        names.contains(&"beta__square_refund_payment".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"alpha__stripe_refund_charge".to_owned()),
        "{names:?}"
    );
    assert_eq!(gw.envoy.stat("catalog_fetches.ok").unwrap(), 1);
    // The fetch saw the router's whole list, not the filter's rewrite of it.
    let (status, body) =
        mcp_tool_search_wasm_tests::harness::http_get(gw.envoy.listener, "/mcp/search/health")
            .unwrap();
    assert_eq!(status, 200, "{body}");
    let health: Value = serde_json::from_str(&body).unwrap();
    let catalogs = health["catalogs"].as_object().unwrap();
    assert_eq!(catalogs.len(), 1, "{health}");
    let (_, alpha) = catalogs.iter().next().unwrap();
    assert_eq!(
        alpha["tools"], 302,
        "150 + 150 + each server's slow_progress: {health}"
    );
    assert_eq!(alpha["source"], "fetched");
    // A hidden tool found by search is called by its prefixed name and reaches its server.
    let result = client
        .call_tool(call(
            "beta__square_refund_payment",
            json!({"payment_id": "p1", "amount": 5}),
        ))
        .await
        .unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert!(gw
        .beta
        .recorded()
        .iter()
        .any(|l| l.contains("square_refund_payment")));
    assert!(!gw
        .alpha
        .recorded()
        .iter()
        .any(|l| l.contains("square_refund_payment")));
    let _ = client.cancel().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_fetch_marker_gets_an_ordinary_rewritten_list() {
    let gw = start(
        "router-forged",
        json!({"catalog": {"cluster": "self", "loopback": true}}),
    );
    let url = gw.envoy.mcp_url();
    let forged = "0123456789abcdef0123456789abcdef";
    let resp = rpc(
        &url,
        &[("x-mcp-tool-search-fetch", forged)],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    )
    .await;
    let session = resp.header("mcp-session-id").unwrap().to_owned();
    let resp = rpc(
        &url,
        &[
            ("x-mcp-tool-search-fetch", forged),
            ("mcp-session-id", &session),
            ("mcp-protocol-version", "2025-06-18"),
        ],
        &list_request(2, None),
    )
    .await;
    let tools = listed(&resp, 2);
    assert_eq!(
        names(&tools),
        ["tool_search"],
        "every aggregated tool is progressive"
    );
}
