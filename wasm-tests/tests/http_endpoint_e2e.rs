//! `search.http_path` end to end through Envoy 1.40 and the mcp-tool-search `.wasm`, against
//! the rmcp `catalog-server`: a moved endpoint answers search and health at its new path while
//! the default path goes to the upstream like any request, and `false` leaves no endpoint.
//!
//! Whether Envoy's upstream saw a request is read from Envoy's own counter of requests sent to
//! the upstream cluster (`cluster.mcp_upstream.upstream_rq_total`), not from what came back.
//!
//! With held request headers (`hold_request_headers` and Envoy's
//! `allow_on_headers_stop_iteration`) the upstream never sees a search; without them (the
//! default) a search's headers reach the upstream before the filter has read the body, and
//! `catalog-server`, which serves no `/find`, answers 404 at once: the filter holds that
//! response until its own answer replaces it.
//!
//! Needs Envoy (`ENVOY_BIN`, else `.venv/bin/envoy`) and the built filter (`make wasm`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use std::time::Duration;

use mcp_tool_search_wasm_tests::harness::{
    self, CatalogOptions, CatalogServer, Envoy, EnvoyOptions, FilterOptions, TestDir,
};
use serde_json::{json, Value};
use support::CATALOG_SERVER;

const DEFAULT_PATH: &str = "/mcp/search";
const QUERY: &str = "get a github issue";

/// Envoy with the filter (`config`) in front of the catalog server, `/mcp` and `endpoint`
/// routed to it and every other path too (so that a path the filter leaves alone reaches
/// the upstream, as on a catch-all route).
struct World {
    envoy: Envoy,
    _upstream: CatalogServer,
    _dir: TestDir,
    http: reqwest::Client,
    holding: bool,
}

impl World {
    fn start(name: &str, config: &Value, endpoint: Option<&str>) -> Self {
        World::start_holding(name, config, endpoint, true)
    }

    fn start_holding(name: &str, config: &Value, endpoint: Option<&str>, holding: bool) -> Self {
        let dir = TestDir::new(name).expect("test dir");
        let catalog = CatalogOptions {
            stateless: true,
            ..CatalogOptions::default()
        };
        let upstream = CatalogServer::start(CATALOG_SERVER.as_ref(), &catalog, &dir)
            .unwrap_or_else(|e| panic!("catalog-server: {e}"));
        let mut config = config.clone();
        config["hold_request_headers"] = json!(holding);
        let filter = FilterOptions {
            wasm: harness::filter_wasm().unwrap_or_else(|e| panic!("{e}")),
            config_json: config.to_string(),
        };
        let mut opts = EnvoyOptions::new(upstream.addr, Some(filter));
        opts.allow_on_headers_stop_iteration = holding;
        opts.route_namespace = Some(support::NAMESPACE.to_owned());
        opts.search_prefix = endpoint.map(str::to_owned);
        opts.catch_all_route = true;
        let envoy = Envoy::start(&opts, &dir).unwrap_or_else(|e| panic!("{e}"));
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("HTTP client");
        World {
            envoy,
            _upstream: upstream,
            _dir: dir,
            http,
            holding,
        }
    }

    /// Requests Envoy sent to the upstream cluster so far (the filter's own catalog fetches
    /// included).
    fn upstream_requests(&self) -> u64 {
        let name = "cluster.mcp_upstream.upstream_rq_total";
        self.envoy
            .stats(name)
            .unwrap_or_else(|e| panic!("stats: {e}"))
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .sum()
    }

    /// (status, body, upstream requests it took).
    async fn send(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, String, u64) {
        let before = self.upstream_requests();
        let url = self.envoy.url(path);
        let mut req = match method {
            "GET" => self.http.get(&url),
            "POST" => self.http.post(&url),
            other => panic!("{other}"),
        };
        if let Some(body) = body {
            req = req.json(body);
        }
        let resp = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        (status, text, self.upstream_requests() - before)
    }

    /// The filter answered a search at `path` itself: tools ranked, none of it upstream's.
    async fn assert_searches(&self, path: &str) {
        // A first search fetches the catalog (upstream requests of the filter's own); a
        // second has it, so any upstream request would be the search itself.
        let (status, body, _) = self.search(path).await;
        assert_eq!(status, 200, "POST {path}: {body}");
        assert!(body.contains("github_get_issue"), "POST {path}: {body}");
        let (status, body, upstream) = self.search(path).await;
        assert_eq!(status, 200, "POST {path}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert_eq!(
            v["tools"][0]["name"], "github_get_issue",
            "POST {path}: {v}"
        );
        assert_eq!(v["metadata"]["strategy"], "bm25", "POST {path}: {v}");
        // Forwarded headers may open an upstream request (reset before its body).
        let most = u64::from(!self.holding);
        assert!(
            upstream <= most,
            "POST {path}: {upstream} upstream requests"
        );
    }

    async fn search(&self, path: &str) -> (u16, String, u64) {
        self.send("POST", path, Some(&json!({ "query": QUERY })))
            .await
    }

    async fn assert_health(&self, path: &str) {
        let (status, body, upstream) = self.send("GET", path, None).await;
        assert_eq!(status, 200, "GET {path}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert_eq!(v["search"]["status"], "ok", "GET {path}: {v}");
        assert!(
            v["catalogs"][support::NAMESPACE]["tools"].as_u64() > Some(0),
            "GET {path}: {v}"
        );
        assert_eq!(upstream, 0, "GET {path} reached the upstream");
    }

    /// `method path` went to the upstream, exactly once, and what came back is not one of the
    /// filter's answers.
    async fn assert_upstream(&self, method: &str, path: &str, body: Option<&Value>) {
        let (status, text, upstream) = self.send(method, path, body).await;
        assert_eq!(
            upstream, 1,
            "{method} {path} was not sent upstream once ({status}: {text})"
        );
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            assert!(
                v.get("tools").is_none() && v.get("search").is_none(),
                "{method} {path} was answered by the filter: {v}"
            );
        }
    }
}

/// The baseline: with no `http_path`, the default path is the filter's and never the
/// upstream's (without it, the other tests could pass on an endpoint that never worked).
#[tokio::test]
async fn the_default_path_is_the_endpoint() {
    let world = World::start("http_default", &json!({}), Some(DEFAULT_PATH));
    world.assert_searches(DEFAULT_PATH).await;
    world.assert_health(&format!("{DEFAULT_PATH}/health")).await;
}

#[tokio::test]
async fn a_moved_endpoint_answers_at_its_path_and_the_default_path_is_ordinary_traffic() {
    let world = World::start(
        "http_moved",
        &json!({"search": {"http_path": "/find"}}),
        Some("/find"),
    );
    world.assert_searches("/find").await;
    world.assert_health("/find/health").await;
    let search = json!({ "query": QUERY });
    world
        .assert_upstream("POST", DEFAULT_PATH, Some(&search))
        .await;
    world
        .assert_upstream("GET", &format!("{DEFAULT_PATH}/health"), None)
        .await;
}

/// The default `hold_request_headers: false`: the upstream's immediate 404 for `/find` (it saw
/// the request's headers) never reaches the client; the filter's answer does.
#[tokio::test]
async fn a_moved_endpoint_answers_when_request_headers_go_ahead() {
    let world = World::start_holding(
        "http_moved_forwarded",
        &json!({"search": {"http_path": "/find"}}),
        Some("/find"),
        false,
    );
    world.assert_searches("/find").await;
    world.assert_health("/find/health").await;
}

#[tokio::test]
async fn false_leaves_no_endpoint() {
    let world = World::start("http_off", &json!({"search": {"http_path": false}}), None);
    let search = json!({ "query": QUERY });
    world
        .assert_upstream("POST", DEFAULT_PATH, Some(&search))
        .await;
    world
        .assert_upstream("GET", &format!("{DEFAULT_PATH}/health"), None)
        .await;
}
