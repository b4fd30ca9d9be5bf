//! The soak's Envoy: the filter's plugin configuration and the bootstrap around it.

use crate::{NAMESPACES, ROUTES, SEARCH_PATH, UPSTREAMS};
use mcp_tool_search_wasm_tests::harness::static_cluster_yaml;
use std::net::SocketAddr;
use std::path::Path;

fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The filter as the README configures it for hybrid ranking, `hold_request_headers` on (Envoy's
/// `allow_on_headers_stop_iteration`, as in `envoy/demo.yaml`), every other setting its default
/// but two: the soak checks what operators run. `catalog.path` is `/mcp` because the routes
/// rewrite their client-facing paths to the upstream's `/mcp`, and the filter's own fetches go
/// to the cluster directly; `search.http_namespaces` lets the endpoint's route (namespace
/// `alpha`) search `beta` too.
pub fn plugin_config() -> String {
    serde_json::json!({
        "mcp_paths": ROUTES,
        "hold_request_headers": true,
        "eager_patterns": ["github_get_*"],
        "search": {"ranking": "hybrid", "http_namespaces": ["beta"], "embeddings": {
            "cluster": "embeddings", "model_id": "all-MiniLM-L6-v2", "dimensions": 384}},
        "catalog": {"path": "/mcp"}
    })
    .to_string()
}

pub fn bootstrap(upstreams: &[SocketAddr; UPSTREAMS], embedder: SocketAddr, wasm: &Path) -> String {
    let mut routes = String::new();
    let mut clusters = String::new();
    for (i, addr) in upstreams.iter().enumerate() {
        let ns = NAMESPACES.get(i).copied().unwrap_or_default();
        let route = ROUTES.get(i).copied().unwrap_or_default();
        routes.push_str(&format!(
            "              - match: {{ path: {route} }}\n                route: {{ cluster: {cluster}, prefix_rewrite: \"/mcp\", timeout: 0s }}\n                metadata: {{ filter_metadata: {{ mcp_tool_search: {{ namespace: {ns} }} }} }}\n",
            route = quoted(route),
            cluster = quoted(&format!("upstream_{ns}")),
            ns = quoted(ns),
        ));
        for line in static_cluster_yaml(&format!("upstream_{ns}"), *addr).lines() {
            clusters.push_str(&format!("  {line}\n"));
        }
    }
    // The HTTP search endpoint (the namespace is in each request's body).
    routes.push_str(&format!(
        "              - match: {{ prefix: {p} }}\n                route: {{ cluster: 'upstream_alpha' }}\n                metadata: {{ filter_metadata: {{ mcp_tool_search: {{ namespace: 'alpha' }} }} }}\n",
        p = quoted(SEARCH_PATH)
    ));
    for line in static_cluster_yaml("embeddings", embedder).lines() {
        clusters.push_str(&format!("  {line}\n"));
    }
    format!(
        r#"admin:
  address: {{ socket_address: {{ address: 127.0.0.1, port_value: 0 }} }}
static_resources:
  listeners:
  - name: soak
    address: {{ socket_address: {{ address: 127.0.0.1, port_value: 0 }} }}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: soak
          stream_idle_timeout: 0s
          route_config:
            name: soak
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
{routes}          http_filters:
{filter}          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
{clusters}"#,
        filter = mcp_tool_search_bench::envoy::wasm_filter_yaml(wasm, &plugin_config()),
    )
}
