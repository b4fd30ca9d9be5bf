//! Search insights through Envoy with the official Python MCP SDK (1.x) as the agent: it lists,
//! searches, calls the second result, searches for something no tool does, and calls a listed
//! tool directly. Envoy's own stats then say exactly that, per namespace, and the histograms
//! (search time and results, list rewrite time and bytes saved) appear in its Prometheus output;
//! with agents on both workers, `/mcp/search/insights` reports what both counted.
//!
//! Needs Envoy, the built filter and `mcp` 1.x at `MCP_PYTHON` (`make test` installs them).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use mcp_tool_search_wasm_tests::harness::{
    self, http_get, Envoy, EnvoyOptions, FilterOptions, TestDir,
};
use mcp_tool_search_wasm_tests::python::{self, ClientFlow, FastMcpOptions, FastMcpServer};
use serde_json::json;
use std::time::{Duration, Instant};

const PREFIX: &str = "wasmcustom.mcp_tool_search.namespace.mcp_upstream.";

#[test]
fn a_search_then_a_call_of_its_second_result_moves_exactly_these_stats_json() {
    agent_flow(false);
}

#[test]
fn a_search_then_a_call_of_its_second_result_moves_exactly_these_stats_sse() {
    agent_flow(true);
}

/// The flow against a FastMCP server that keeps sessions (the link between a search and the
/// call after it is the session), answering in JSON or SSE.
/// A FastMCP server that keeps sessions (the link between a search and the call after it is the
/// session), answering in JSON or SSE, behind Envoy with the filter.
fn stack(sse: bool, dir: &TestDir) -> (FastMcpServer, Envoy) {
    stack_with(sse, json!({}), dir)
}

/// [`stack`] with more of the filter's `search` block.
fn stack_with(sse: bool, search: serde_json::Value, dir: &TestDir) -> (FastMcpServer, Envoy) {
    stack_config(sse, json!({"search": search}), dir)
}

/// [`stack`] with more of the filter's configuration.
fn stack_config(sse: bool, more: serde_json::Value, dir: &TestDir) -> (FastMcpServer, Envoy) {
    let opts = FastMcpOptions {
        sse,
        stateful: true,
    };
    let server = FastMcpServer::start(opts, dir).unwrap();
    let filter = FilterOptions {
        wasm: harness::filter_wasm().unwrap_or_else(|e| panic!("{e}")),
        config_json: {
            let mut config = json!({"mcp_paths": ["/mcp"], "eager_patterns": ["github_get_*"]});
            if let (Some(c), Some(more)) = (config.as_object_mut(), more.as_object()) {
                c.extend(more.clone());
            }
            config.to_string()
        },
    };
    let mut opts = EnvoyOptions::new(server.addr, Some(filter));
    opts.search_prefix = Some("/mcp/search".to_string());
    let envoy = Envoy::start(&opts, dir).unwrap_or_else(|e| panic!("{e}"));
    (server, envoy)
}

/// What the agent does: search, call the second result, search for what no tool does, call a
/// listed tool by name.
fn run_agent(envoy: &Envoy, dir: &TestDir) -> serde_json::Value {
    let mut flow = ClientFlow::new(&envoy.mcp_url(), "refund a stripe charge");
    flow.limit = 2;
    flow.call_rank = 2;
    flow.extra_queries = json!(["kubernetes pod autoscaler"]).to_string();
    flow.direct_calls = json!(["github_get_issue"]).to_string();
    let python = python::python().unwrap_or_else(|e| panic!("{e}"));
    python::run_client(&python, &flow, dir).unwrap_or_else(|e| panic!("{e}"))
}

fn agent_flow(sse: bool) {
    let dir = TestDir::new("insights-e2e").unwrap();
    let (_server, envoy) = stack(sse, &dir);
    let report = run_agent(&envoy, &dir);
    let context = || format!("report: {report:#}\nenvoy:\n{}", envoy.log());

    let meta = &report["searches"][0]["_meta"]["mcp-tool-search/search"];
    let second = meta["results"][1]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", context()));
    assert_eq!(meta["results"][1]["rank"], 2, "{}", context());
    assert!(meta["search_id"].is_string(), "{}", context());
    assert_eq!(report["call"]["name"], second, "{}", context());
    assert_eq!(report["call"]["isError"], false, "{}", context());
    let nothing = &report["extra_searches"][0]["_meta"]["mcp-tool-search/search"];
    assert_eq!(nothing["matches"], 0, "{}", context());
    assert_eq!(report["direct_calls"][0]["isError"], false, "{}", context());

    let stats: Vec<(String, u64)> = envoy
        .stats(PREFIX)
        .unwrap()
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| (name.trim_start_matches(PREFIX).to_string(), n))
        .collect();
    assert_eq!(
        stats,
        [
            ("calls_without_search".to_string(), 1),
            ("search_calls_after.rank_2_5".to_string(), 1),
            ("search_zero_results".to_string(), 1),
        ],
        "{}",
        context()
    );

    // Histograms reach the admin output at Envoy's stats flush (every 5 s by default). Envoy
    // writes a Wasm module's metrics to Prometheus without its own prefix and namespace
    // (`wasmcustom` is a custom stat namespace): `mcp_tool_search_…`.
    let wanted = [
        "mcp_tool_search_search_time_us_count",
        "mcp_tool_search_search_results_count",
        "mcp_tool_search_list_rewrite_time_us_count",
        "mcp_tool_search_list_bytes_saved_count",
    ];
    let deadline = Instant::now() + Duration::from_secs(20);
    let prometheus = loop {
        let (status, body) = http_get(envoy.admin, "/stats?format=prometheus").unwrap();
        assert_eq!(status, 200);
        let counted = |name: &str| {
            body.lines()
                .find(|l| l.split(['{', ' ']).next() == Some(name))
                .and_then(|l| l.rsplit(' ').next())
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0)
        };
        // Three searches (two pages and the one that found nothing), at least one list.
        if counted(wanted[0]) >= 3 && wanted.iter().all(|w| counted(w) > 0) {
            break body;
        }
        assert!(
            Instant::now() < deadline,
            "histograms missing from /stats?format=prometheus:\n{}",
            body.lines()
                .filter(|l| l.contains("mcp_tool_search"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(
        prometheus.contains("\nmcp_tool_search_search_time_us_bucket{le="),
        "{prometheus}"
    );
}

/// Connections each worker of the MCP listener accepted.
fn accepted(envoy: &Envoy) -> Vec<u64> {
    envoy
        .stats("downstream_cx_total")
        .unwrap()
        .into_iter()
        .filter(|(name, _)| name.starts_with("listener.") && name.contains(".worker_"))
        .map(|(_, n)| n)
        .collect()
}

#[test]
fn the_insights_endpoint_reports_what_every_worker_counted() {
    let dir = TestDir::new("insights-e2e-workers").unwrap();
    let (_server, envoy) = stack(false, &dir);
    // Agents until both workers have served one (Envoy hands each connection to a worker).
    let mut agents = 0;
    while accepted(&envoy).iter().filter(|n| **n > 0).count() < 2 {
        assert!(
            agents < 12,
            "every agent landed on one worker: {:?}",
            accepted(&envoy)
        );
        run_agent(&envoy, &dir);
        agents += 1;
    }
    let stat = |name: &str| -> u64 {
        envoy
            .stats(&format!("{PREFIX}{name}"))
            .unwrap()
            .into_iter()
            .filter(|(n, _)| n == &format!("{PREFIX}{name}"))
            .map(|(_, v)| v)
            .sum()
    };
    let searches: u64 = envoy
        .stats("wasmcustom.mcp_tool_search.searches_answered.bm25")
        .unwrap()
        .into_iter()
        .map(|(_, v)| v)
        .sum();
    assert_eq!(searches, 3 * agents, "three searches an agent");
    // Each worker folds its counts into shared data every second: a worker's last call may
    // reach it a tick after its searches did.
    let deadline = Instant::now() + Duration::from_secs(10);
    let body = loop {
        let (status, body) = http_get(envoy.listener, "/mcp/search/insights").unwrap();
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let ns = &v["insights"]["mcp_upstream"];
        if ns["searches"] == searches && ns["calls"]["total"] == 2 * agents {
            break v;
        }
        assert!(
            Instant::now() < deadline,
            "not every worker's searches: {v:#}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let ns = &body["insights"]["mcp_upstream"];
    assert_eq!(ns["zero_results"], stat("search_zero_results"), "{body:#}");
    assert_eq!(ns["zero_results"], agents, "{body:#}");
    assert_eq!(
        ns["calls"]["rank_2_5"],
        stat("search_calls_after.rank_2_5"),
        "{body:#}"
    );
    assert_eq!(
        ns["calls"]["without_search"],
        stat("calls_without_search"),
        "{body:#}"
    );
    assert_eq!(ns["calls"]["total"], 2 * agents, "{body:#}");
    assert_eq!(
        ns["called_without_search"],
        json!([{"name": "github_get_issue", "calls": agents, "eager": true}]),
        "{body:#}"
    );
    assert_eq!(ns["zero_result_queries"][0]["count"], agents, "{body:#}");
    assert!(
        ns["zero_result_queries"][0].get("query").is_none(),
        "{body:#}"
    );
}

#[test]
fn with_recording_on_the_query_that_found_nothing_is_listed_as_the_agent_wrote_it() {
    let dir = TestDir::new("insights-e2e-record").unwrap();
    let (_server, envoy) = stack_with(false, json!({"insights": {"record_queries": true}}), &dir);
    run_agent(&envoy, &dir);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, body) = http_get(envoy.listener, "/mcp/search/insights").unwrap();
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let queries = &v["insights"]["mcp_upstream"]["zero_result_queries"];
        if queries[0]["count"] == 1 {
            assert_eq!(queries[0]["query"], "kubernetes pod autoscaler", "{v:#}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no zero-result query listed: {v:#}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn under_a_policy_a_caller_with_no_tool_of_the_namespace_gets_nothing_of_it() {
    let dir = TestDir::new("insights-e2e-policy").unwrap();
    let policy = json!({"authorization": {
        "identity": {"source": "header", "header": "x-user-roles"},
        "rules": [{"claim": "roles", "values": ["admin"], "tools": ["*"]}],
        "default": "deny"}});
    let (_server, envoy) = stack_config(false, policy, &dir);
    // The server checks `Host` (DNS rebinding protection): the address it was reached at.
    let host = envoy.listener.to_string();
    let get = |headers: &str, path: &str| {
        let request =
            format!("GET {path} HTTP/1.1\r\nhost: {host}\r\n{headers}connection: close\r\n\r\n");
        let reply = harness::raw_exchange(envoy.listener, request.as_bytes()).unwrap();
        (
            reply.status,
            String::from_utf8_lossy(&reply.body).to_string(),
        )
    };
    // The admin searches (the catalog is fetched for it), then reads the insights.
    let admin = "x-user-roles: admin\r\n";
    let search = json!({"query": "refund a stripe charge"}).to_string();
    let request = format!(
        "POST /mcp/search HTTP/1.1\r\nhost: {host}\r\n{admin}content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{search}",
        search.len()
    );
    let reply = harness::raw_exchange(envoy.listener, request.as_bytes()).unwrap();
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let (status, body) = get(admin, "/mcp/search/insights");
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        v["insights"]["mcp_upstream"]["auto_mode"]["tools"].as_u64() > Some(0),
        "{v:#}"
    );
    // A caller the policy gives no tool: nothing, and 403 for the namespace asked by name.
    let (status, body) = get("", "/mcp/search/insights");
    assert_eq!((status, body.as_str()), (200, r#"{"insights":{}}"#));
    let (status, body) = get(
        "x-user-roles: intern\r\n",
        "/mcp/search/insights?namespace=mcp_upstream",
    );
    assert_eq!(status, 403, "{body}");
}
