//! The soak's Envoy: the filter's plugin configuration and the bootstrap around it.

use crate::{NAMESPACES, ROUTES, SEARCH_PATH, UPSTREAMS};
use mcp_tool_search_bench::envoy::wasm_filter;
use mcp_tool_search_wasm_tests::envoy_config::{Bootstrap, Cluster, HttpFilter, Listener, Route};
use std::net::SocketAddr;
use std::path::Path;

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

/// One listener, `soak`: a route per upstream (its client-facing path rewritten to `/mcp`, its
/// catalog namespace) and the HTTP search endpoint, through the filter and the router; a
/// cluster per upstream and the sidecar's.
pub fn bootstrap(upstreams: &[SocketAddr; UPSTREAMS], embedder: SocketAddr, wasm: &Path) -> String {
    let mut routes = Vec::new();
    let mut clusters = Vec::new();
    for (i, addr) in upstreams.iter().enumerate() {
        let ns = NAMESPACES.get(i).copied().unwrap_or_default();
        let route = ROUTES.get(i).copied().unwrap_or_default();
        let cluster = format!("upstream_{ns}");
        routes.push(
            Route::path(route)
                .to_cluster(&cluster)
                .route_option("prefix_rewrite", "/mcp")
                .route_option("timeout", "0s")
                .namespace(ns),
        );
        clusters.push(Cluster::new(&cluster, *addr));
    }
    // The HTTP search endpoint (the namespace is in each request's body).
    routes.push(
        Route::prefix(SEARCH_PATH)
            .to_cluster("upstream_alpha")
            .namespace("alpha"),
    );
    clusters.push(Cluster::new("embeddings", embedder));
    let listener = Listener::new("soak")
        .no_stream_idle_timeout()
        .route_config_name("soak")
        .routes(routes)
        .filter(wasm_filter(wasm, &plugin_config()))
        .filter(HttpFilter::router());
    Bootstrap::new()
        .listener(listener)
        .clusters(clusters)
        .to_yaml()
}
