//! README "Quick start": `make demo` (`envoy/demo.sh`) prints its progress, then the MCP
//! endpoint, a sample `tool_search` result and a curl flow to paste that reuses the demo's real
//! `mcp-session-id`; the flow works as printed, Envoy's access log says what the filter did with
//! the demo's search, and Ctrl-C stops everything the demo started.
//!
//! Needs Envoy in `.venv` and the built filter (`make test` provides both); the catalog server
//! is this crate's.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use mcp_tool_search_wasm_tests::harness::{
    free_port, run_printed, still_listening, workspace_root, Script,
};
use std::process::Command;
use std::time::Duration;

const CATALOG_SERVER: &str = env!("CARGO_BIN_EXE_catalog-server");

#[test]
fn make_demo_prints_what_the_readme_says_and_its_curl_flow_works() {
    let (listen, upstream, admin) = (
        free_port().unwrap(),
        free_port().unwrap(),
        free_port().unwrap(),
    );
    let mut command = Command::new("envoy/demo.sh");
    command
        .current_dir(workspace_root())
        .env("LISTEN", listen.to_string())
        .env("UPSTREAM_PORT", upstream.to_string())
        .env("ADMIN", admin.to_string())
        .env("CATALOG_SERVER", CATALOG_SERVER);
    let mut demo = Script::start(command).unwrap();
    demo.until("Or point any MCP client at", Duration::from_secs(180))
        .unwrap();
    let text = demo.text();
    let endpoint = format!("http://127.0.0.1:{listen}/mcp");
    for expected in [
        "==> starting the catalog MCP server (300 tools".to_string(),
        "==> tools/list through the filter".to_string(),
        "tools listed instead of 300: tool_search, ".to_string(),
        "==> tool_search {\"query\": \"refund a customer payment\", \"limit\": 3}".to_string(),
        "    1. ".to_string(),
        "    first definition, as the upstream declared it:".to_string(),
        format!("MCP endpoint: {endpoint}"),
    ] {
        assert!(text.contains(&expected), "no {expected:?} in:\n{text}");
    }
    // The first command of the curl flow, as printed, with the session the demo opened: a
    // search answered by the filter.
    let commands = demo.commands();
    let command = commands
        .first()
        .unwrap_or_else(|| panic!("no curl flow in:\n{text}"));
    assert!(command.contains("mcp-session-id: "), "{command}");
    let answer = run_printed(command).unwrap();
    assert!(
        answer.contains("slack") && answer.contains("\"result\""),
        "{command}\n{answer}"
    );

    // Ctrl-C: the script stops what it started and says so.
    let rest = demo.stop().unwrap();
    let logs = rest
        .iter()
        .find_map(|l| l.strip_prefix("stopped (logs in "))
        .and_then(|l| l.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{rest:?}"));
    // Envoy's access log says what the filter did with each request: the demo's search, how it
    // was ranked and how many tools it returned (README "Search insights").
    let log = std::fs::read_to_string(format!("{logs}/envoy.log")).unwrap();
    let searches: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| l.split_once("mcp_tool_search=").map(|(_, r)| r))
        .filter_map(|r| serde_json::from_str(r).ok())
        .filter(|r: &serde_json::Value| r["action"] == "search")
        .collect();
    let first = searches
        .first()
        .unwrap_or_else(|| panic!("no search in the access log:\n{log}"));
    assert_eq!(
        (&first["ranking"], &first["results"], &first["namespace"]),
        (
            &serde_json::json!("bm25"),
            &serde_json::json!(3),
            &serde_json::json!("demo")
        ),
        "{log}"
    );
    let left = still_listening(&[listen, upstream], Duration::from_secs(10));
    assert!(
        left.is_empty(),
        "still listening after Ctrl-C: {left:?} (Envoy {listen}, the catalog server {upstream})"
    );
}
