//! The official Python MCP SDK on both sides of Envoy with the filter: its client
//! (`peers/mcp_client.py`, 1.x and 2.x) against its server (`peers/fastmcp_server.py`: FastMCP
//! 1.x, or 2.x's MCPServer, which speaks protocol 2026-07-28; it records every tool it runs).
//! Each flow is what an agent does: list (every page), search for a hidden tool (and page
//! through the match), call the tool it found by name. The client reports what it saw; the tests
//! judge it, and the server's record shows what really ran.
//!
//! Needs Envoy, the built filter, `mcp` 1.x at `MCP_PYTHON` and 2.x at `MCP2_PYTHON` (`make test`
//! installs all of them).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use mcp_tool_search_wasm_tests::harness::{self, Envoy, EnvoyOptions, FilterOptions, TestDir};
use mcp_tool_search_wasm_tests::python::{self, ClientFlow, FastMcpOptions, FastMcpServer};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const HIDDEN: &str = "stripe_create_refund";
const EAGER: &str = "github_get_issue";
const QUERY: &str = "refund a stripe charge";

fn envoy(server: &FastMcpServer, hold: bool, dir: &TestDir) -> Envoy {
    let config = json!({
        "mcp_paths": ["/mcp"],
        "hold_request_headers": hold,
        "eager_patterns": ["github_get_*"],
    });
    let filter = FilterOptions {
        wasm: harness::filter_wasm().unwrap_or_else(|e| panic!("{e}")),
        config_json: config.to_string(),
    };
    let mut opts = EnvoyOptions::new(server.addr, Some(filter));
    opts.allow_on_headers_stop_iteration = hold;
    Envoy::start(&opts, dir).unwrap_or_else(|e| panic!("{e}"))
}

fn python1() -> PathBuf {
    python::python().unwrap_or_else(|e| panic!("{e}"))
}

fn python2() -> PathBuf {
    python::python2().unwrap_or_else(|e| panic!("{e}"))
}

fn names(tools: &Value) -> Vec<&str> {
    tools
        .as_array()
        .unwrap_or_else(|| panic!("not a list of tools: {tools}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default())
        .collect()
}

fn ran(server: &FastMcpServer, tool: &str) -> usize {
    let line = format!("tools/call {tool}");
    server.recorded().iter().filter(|l| **l == line).count()
}

/// What every flow must show, whatever the SDK, transport or paging: the list hides the
/// progressive tools behind the filter's search tool, the search (answered by the filter, not by
/// the server's own `tool_search`) finds the hidden tool and pages on, and the call of what it
/// found runs on the server exactly once.
fn assert_agent_flow(report: &Value, server: &FastMcpServer, envoy: &Envoy, pages: usize) {
    let context = || {
        format!(
            "report: {report:#}\nserver:\n{}\nenvoy:\n{}",
            server.log(),
            envoy.log()
        )
    };
    let listed: Vec<Vec<&str>> = report["pages"]
        .as_array()
        .unwrap_or_else(|| panic!("no pages\n{}", context()))
        .iter()
        .map(names)
        .collect();
    assert_eq!(listed.len(), pages, "pages listed\n{}", context());
    // The first page starts with the filter's tool, then the eager one; later pages carry only
    // their eager tools (none here), and the server's own `tool_search` is shadowed.
    assert_eq!(listed[0], ["tool_search", EAGER], "{}", context());
    assert!(
        listed[1..].iter().all(Vec::is_empty),
        "later pages: {listed:?}\n{}",
        context()
    );
    let search_tool = &report["pages"][0][0];
    assert_eq!(
        search_tool["annotations"]["readOnlyHint"],
        true,
        "the listed tool_search is not the filter's\n{}",
        context()
    );

    let first = &report["searches"][0];
    assert_eq!(first["isError"], false, "{}", context());
    assert_eq!(report["found"], json!([HIDDEN]), "{}", context());
    let found: Value = serde_json::from_str(first["texts"][0].as_str().unwrap()).unwrap();
    assert_eq!(
        found[0]["description"],
        "Refund a Stripe charge: returns the money to the customer.",
        "the full upstream definition\n{}",
        context()
    );
    let meta = &first["_meta"]["mcp-tool-search/search"];
    assert_eq!(
        (meta["offset"].as_u64(), meta["returned"].as_u64()),
        (Some(0), Some(1)),
        "{}",
        context()
    );
    let matches = meta["matches"].as_u64().unwrap_or(0);
    assert!(
        matches >= 2,
        "the query matches more than one tool: {meta}\n{}",
        context()
    );

    let second = &report["searches"][1];
    assert_eq!(second["isError"], false, "{}", context());
    let meta = &second["_meta"]["mcp-tool-search/search"];
    assert_eq!(
        (
            meta["offset"].as_u64(),
            meta["returned"].as_u64(),
            meta["matches"].as_u64()
        ),
        (Some(1), Some(1), Some(matches)),
        "the second page of the same match\n{}",
        context()
    );
    let next: Value = serde_json::from_str(second["texts"][0].as_str().unwrap()).unwrap();
    assert_ne!(
        next[0]["name"],
        HIDDEN,
        "offset 1 repeats the first result\n{}",
        context()
    );

    let call = &report["call"];
    assert_eq!(call["name"], HIDDEN, "{}", context());
    assert_eq!(call["isError"], false, "{}", context());
    assert_eq!(
        call["texts"],
        json!([format!("{HIDDEN} ran")]),
        "{}",
        context()
    );
    assert_eq!(ran(server, HIDDEN), 1, "{}", context());
    assert_eq!(
        ran(server, "tool_search"),
        0,
        "a search reached the server's own tool_search\n{}",
        context()
    );
}

fn python1_flow(opts: FastMcpOptions, page_size: usize, hold: bool, name: &str) {
    let dir = TestDir::new(name).unwrap();
    let server =
        FastMcpServer::start_paged(opts, page_size, &dir).unwrap_or_else(|e| panic!("{e}"));
    let envoy = envoy(&server, hold, &dir);
    let flow = ClientFlow::new(&envoy.mcp_url(), QUERY);
    let report = python::run_client(&python1(), &flow, &dir)
        .unwrap_or_else(|e| panic!("{e}\nenvoy:\n{}", envoy.log()));
    assert!(
        report["sdk"].as_str().unwrap_or_default().starts_with("1."),
        "{report}"
    );
    let pages = if page_size == 0 {
        1
    } else {
        5usize.div_ceil(page_size)
    };
    assert_agent_flow(&report, &server, &envoy, pages);
}

/// Stateless, JSON responses, one page; request headers not held (Istio's only choice).
#[test]
fn python_client_and_fastmcp_stateless_json() {
    python1_flow(FastMcpOptions::default(), 0, false, "python_json");
}

/// The same with request headers held: the search never reaches the server at all.
#[test]
fn python_client_and_fastmcp_stateless_json_held_headers() {
    python1_flow(FastMcpOptions::default(), 0, true, "python_json_hold");
}

/// Sessions and SSE responses, the list in three pages (two tools each): every page passes the
/// filter, which learns the hidden tools from the later ones.
#[test]
fn python_client_and_fastmcp_sessions_sse_paged() {
    let opts = FastMcpOptions {
        sse: true,
        stateful: true,
    };
    python1_flow(opts, 2, false, "python_sse_paged");
}

/// The same, headers held.
#[test]
fn python_client_and_fastmcp_sessions_sse_paged_held_headers() {
    let opts = FastMcpOptions {
        sse: true,
        stateful: true,
    };
    python1_flow(opts, 2, true, "python_sse_paged_hold");
}

/// The Python SDK 2.x client (its protocol negotiation probes `server/discover` before falling
/// back to `initialize`) through the filter to the 1.x server: list, find the hidden tool, call it.
#[test]
fn python_sdk2_client_lists_searches_and_calls_through_envoy() {
    let dir = TestDir::new("python_sdk2").unwrap();
    let opts = FastMcpOptions {
        sse: true,
        stateful: true,
    };
    let server = FastMcpServer::start_paged(opts, 2, &dir).unwrap_or_else(|e| panic!("{e}"));
    let envoy = envoy(&server, false, &dir);
    let flow = ClientFlow::new(&envoy.mcp_url(), QUERY);
    let report = python::run_client(&python2(), &flow, &dir)
        .unwrap_or_else(|e| panic!("{e}\nenvoy:\n{}", envoy.log()));
    assert!(
        report["sdk"].as_str().unwrap_or_default().starts_with("2."),
        "{report}"
    );
    assert_agent_flow(&report, &server, &envoy, 3);
}

fn sdk2_server_flow(client: &Path, sse: bool, hold: bool, name: &str) -> Value {
    let dir = TestDir::new(name).unwrap();
    let opts = FastMcpOptions {
        sse,
        stateful: false,
    };
    let server = FastMcpServer::start_sdk2(opts, &dir).unwrap_or_else(|e| panic!("{e}"));
    let envoy = envoy(&server, hold, &dir);
    let flow = ClientFlow::new(&envoy.mcp_url(), QUERY);
    let report = python::run_client(client, &flow, &dir)
        .unwrap_or_else(|e| panic!("{e}\nserver:\n{}\nenvoy:\n{}", server.log(), envoy.log()));
    assert_agent_flow(&report, &server, &envoy, 1);
    report
}

/// Both sides 2.x: they settle on protocol 2026-07-28 (no session; every request names its
/// method and tool in `Mcp-*` headers, which the filter checks against the body), and the client
/// calls a tool it never saw listed. JSON responses, headers not held: the filter makes a
/// 2026-07-28 `call_tool` itself (see the README's Known limits); here the agent calls the tool
/// directly.
#[test]
fn python_sdk2_client_and_server_on_2026_07_28() {
    let report = sdk2_server_flow(&python2(), false, false, "python_sdk2_modern_json");
    assert_eq!(report["protocol"], "2026-07-28", "{report:#}");
}

/// The same with SSE responses and headers held.
#[test]
fn python_sdk2_client_and_server_on_2026_07_28_sse_held_headers() {
    let report = sdk2_server_flow(&python2(), true, true, "python_sdk2_modern_sse_hold");
    assert_eq!(report["protocol"], "2026-07-28", "{report:#}");
}

/// A 1.x client of the 2.x server: the handshake-era protocol, through the same filter.
#[test]
fn python_client_and_sdk2_server() {
    let report = sdk2_server_flow(&python1(), false, false, "python_sdk1_to_sdk2");
    assert!(
        report["protocol"].as_str().unwrap_or_default() < "2026",
        "{report:#}"
    );
}
