//! What the agent reads, through Envoy 1.40 and the `.wasm`: search answers within their
//! budget on a catalog of large schemas (`catalog-server`), and `structuredContent` that the
//! official Python SDK 2.x client validates against the search tool's `outputSchema` on every
//! protocol that defines one (2025-06-18, 2025-11-25, 2026-07-28), at every `detail`.
//!
//! Needs Envoy, the built filter and `mcp` 2.x at `MCP2_PYTHON` (`make test` installs them).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::tokens_read;
use mcp_tool_search_wasm_tests::harness::{
    self, CatalogOptions, CatalogServer, Envoy, EnvoyOptions, FilterOptions, TestDir,
};
use mcp_tool_search_wasm_tests::python::{self, ClientFlow, FastMcpOptions, FastMcpServer};
use serde_json::{json, Value};
use support::{call_request, list_request, result_of, rpc, Setup, TOOL_SEARCH};

const HIDDEN: &str = "stripe_create_refund";
const QUERY: &str = "refund a stripe charge";

/// 60 tools whose schemas run from a few arguments to hundreds (up to ~60 kB a definition), all
/// matching the query; the small ones (CSV) best.
fn large_schemas(dir: &TestDir) -> std::path::PathBuf {
    let mut jsonl = String::new();
    for i in 0..60_usize {
        let arguments = if i.is_multiple_of(5) { 300 } else { 3 + i % 7 };
        let properties: serde_json::Map<String, Value> = (0..arguments)
            .map(|p| {
                (
                    format!("option_{p}"),
                    json!({"type": "string", "description": "A setting, as the vendor names it. ".repeat(3)}),
                )
            })
            .collect();
        let tool = json!({
            "name": format!("report_export_{i:02}"),
            "description": format!("Export report {i} of the billing account as a {} file. It runs for minutes on large accounts.", if i.is_multiple_of(5) { "PDF" } else { "CSV" }),
            "inputSchema": {"type": "object", "properties": properties, "required": ["option_0"]},
            "annotations": {"readOnlyHint": i % 2 == 0}
        });
        jsonl.push_str(&tool.to_string());
        jsonl.push('\n');
    }
    let path = dir.join("large-schemas.jsonl");
    std::fs::write(&path, jsonl).unwrap();
    path
}

#[tokio::test]
async fn answers_fit_their_budget_on_a_catalog_of_large_schemas() {
    let dir = TestDir::new("answer_budget_large").unwrap();
    let catalog = CatalogOptions {
        tools: large_schemas(&dir),
        stateless: true,
        json: true,
        ..CatalogOptions::default()
    };
    let upstream = CatalogServer::start(support::CATALOG_SERVER.as_ref(), &catalog, &dir)
        .unwrap_or_else(|e| panic!("catalog-server: {e}"));
    let config = json!({"mcp_paths": ["/mcp"],
        "search": {"max_allowable_results": 20, "max_result_tokens": 6000}});
    let stack = Setup::new(config).start_envoy(dir, upstream);
    let url = stack.url();
    // The list teaches the filter the catalog.
    let listed = rpc(
        &url,
        &[("mcp-protocol-version", "2025-11-25")],
        &list_request(1, None),
    )
    .await;
    assert_eq!(listed.status, 200, "{}", listed.text());
    let mut id = 2;
    let mut full_first = 0;
    for (max_tokens, detail) in [
        (None, "full"),
        (Some(500), "full"),
        (Some(1200), "full"),
        (Some(3000), "full"),
        (Some(100_000), "full"),
        (Some(800), "compact"),
        (None, "names"),
    ] {
        for version in ["2025-03-26", "2025-11-25", "2026-07-28"] {
            let mut arguments =
                json!({"query": "export the billing report as csv", "limit": 20, "detail": detail});
            if let Some(t) = max_tokens {
                arguments["max_tokens"] = json!(t);
            }
            let mut headers = vec![("mcp-protocol-version", version)];
            let mut body = call_request(id, TOOL_SEARCH, arguments);
            if version == "2026-07-28" {
                headers =
                    mcp_tool_search_wasm_tests::mcp::headers_2026("tools/call", Some(TOOL_SEARCH));
                body["params"]["_meta"] = mcp_tool_search_wasm_tests::mcp::meta_2026();
            }
            let resp = rpc(&url, &headers, &body).await;
            let result = result_of(&resp, id);
            id += 1;
            let budget = max_tokens.unwrap_or(6000).clamp(500, 6000);
            let what = format!("{detail}, max_tokens {max_tokens:?}, protocol {version}");
            assert_eq!(result["isError"], false, "{what}: {result}");
            assert!(
                tokens_read(&result.to_string()).unwrap() <= budget,
                "{what}: {} tokens over {budget}",
                tokens_read(&result.to_string()).unwrap()
            );
            let structured = result.get("structuredContent");
            assert_eq!(
                structured.is_some(),
                version != "2025-03-26",
                "{what}: {result}"
            );
            let returned = result["_meta"]["mcp-tool-search/search"]["returned"]
                .as_u64()
                .unwrap();
            assert!(returned >= 1, "{what}: nothing shown");
            if let Some(s) = structured {
                let results = s["results"].as_array().unwrap();
                assert_eq!(results.len() as u64, returned, "{what}");
                assert_eq!(s["matches"], 60, "{what}");
                // The best result is a full definition whenever it fits: every tool but each
                // fifth (300 arguments, ~60 kB) is ~1.3 kB, which fits 1,200 tokens.
                let best = results[0]["name"].as_str().unwrap();
                let n: usize = best.trim_start_matches("report_export_").parse().unwrap();
                if detail == "full" && budget >= 1200 && !n.is_multiple_of(5) {
                    assert_eq!(results[0]["detail"], "full", "{what}: {best}");
                    full_first += 1;
                }
            }
        }
    }
    assert!(
        full_first > 0,
        "no answer's best result was a small definition"
    );
    // Every answer was the filter's: the upstream ran no search.
    stack.assert_never_called(&[TOOL_SEARCH]);
}

fn envoy(server: &FastMcpServer, dir: &TestDir) -> Envoy {
    let config = json!({"mcp_paths": ["/mcp"], "eager_patterns": ["github_get_*"]});
    let filter = FilterOptions {
        wasm: harness::filter_wasm().unwrap_or_else(|e| panic!("{e}")),
        config_json: config.to_string(),
    };
    Envoy::start(&EnvoyOptions::new(server.addr, Some(filter)), dir)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// The Python SDK 2.x client, one protocol version at a time, against the 2.x server: the
/// listed search tool declares its `outputSchema`; every search answer carries
/// `structuredContent` that the SDK (and the client script, with `jsonschema`) validates; the
/// tool it names is the one the agent then calls, and the server runs it.
#[test]
fn the_python_sdk_validates_structured_answers_on_every_protocol() {
    let dir = TestDir::new("answer_budget_sdk2").unwrap();
    let server = FastMcpServer::start_sdk2(FastMcpOptions::default(), &dir)
        .unwrap_or_else(|e| panic!("{e}"));
    let envoy = envoy(&server, &dir);
    let (python1, python2) = (
        python::python().unwrap_or_else(|e| panic!("{e}")),
        python::python2().unwrap_or_else(|e| panic!("{e}")),
    );
    // The 1.x client asks for 2025-06-18 as clients of that era did; 2.x's handshake settles on
    // 2025-11-25, its discovery on 2026-07-28.
    for (version, detail, shown) in [
        ("2025-06-18", "full", "full"),
        ("2025-11-25", "compact", "compact"),
        ("2026-07-28", "names", "name"),
        ("2026-07-28", "full", "full"),
    ] {
        let mut flow = ClientFlow::new(&envoy.mcp_url(), QUERY);
        let python = match version {
            "2025-06-18" => {
                flow.protocol = Some(version.to_owned());
                &python1
            }
            "2025-11-25" => {
                flow.mode = "legacy".to_owned();
                &python2
            }
            _ => {
                flow.mode = version.to_owned();
                &python2
            }
        };
        flow.search_arguments = json!({"detail": detail, "max_tokens": 2000}).to_string();
        let report = python::run_client(python, &flow, &dir).unwrap_or_else(|e| {
            panic!(
                "{version} {detail}: {e}\nserver:\n{}\nenvoy:\n{}",
                server.log(),
                envoy.log()
            )
        });
        let what = format!("{version} {detail}: {report:#}");
        assert_eq!(report["protocol"], version, "{what}");
        let search_tool = &report["pages"][0][0];
        assert_eq!(search_tool["name"], TOOL_SEARCH, "{what}");
        assert_eq!(search_tool["outputSchema"]["type"], "object", "{what}");
        for search in report["searches"].as_array().unwrap() {
            assert_eq!(search["isError"], false, "{what}");
            assert_eq!(search["validated"], true, "{what}");
            for r in search["structuredContent"]["results"].as_array().unwrap() {
                assert_eq!(r["detail"], shown, "{what}");
            }
        }
        let first = &report["searches"][0]["structuredContent"];
        assert_eq!(first["results"][0]["name"], HIDDEN, "{what}");
        assert_eq!(first["results"][0]["rank"], 1, "{what}");
        assert_eq!(report["found"][0], HIDDEN, "{what}");
        assert_eq!(report["call"]["isError"], false, "{what}");
    }
    let line = format!("tools/call {HIDDEN}");
    assert_eq!(
        server.recorded().iter().filter(|l| **l == line).count(),
        4,
        "each flow's call ran once on the server"
    );
}
