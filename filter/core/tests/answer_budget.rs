//! What the agent reads, through whole exchanges: the search tool a client lists declares an
//! `outputSchema` when the client's protocol has one (2025-06-18 and later) and its answers then
//! carry `structuredContent`; older protocols get the text alone; every answer keeps to its
//! budget (`search.max_result_tokens`, lowered by `max_tokens`) on a catalog of large schemas.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_core::{tokens_read, RequestHead};
use serde_json::{json, Value};
use support::*;

/// 40 tools; every fourth has 300 documented arguments (~40 kB), the rest three.
fn catalog() -> Vec<u8> {
    let defs: Vec<Value> = (0..40)
        .map(|i| {
            let arguments = if i % 4 == 0 { 300 } else { 3 };
            let properties: serde_json::Map<String, Value> = (0..arguments)
                .map(|p| {
                    (
                        format!("field_{p}"),
                        json!({"type": "string", "description": "A field of the invoice, as the ledger names it."}),
                    )
                })
                .collect();
            json!({"name": format!("invoice_send_{i:02}"),
                "description": format!("Send invoice batch {i} to the customer. It emails a PDF."),
                "inputSchema": {"type": "object", "properties": properties}})
        })
        .collect();
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":{"tools": defs}})).unwrap()
}

fn head(version: Option<&str>) -> RequestHead {
    let mut head = post("/mcp");
    head.mcp.protocol_version = version.map(str::to_owned).into_iter().collect();
    head
}

/// The search tool the client at `version` is listed.
fn listed_search_tool(env: &mut TestEnv, version: Option<&str>) -> Value {
    let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let out = exchange(
        env,
        head(version),
        list,
        ("200", "application/json", &[&catalog()]),
    );
    let Outcome::Upstream {
        body,
        rewritten: true,
    } = out
    else {
        panic!("not rewritten: {out:?}")
    };
    let v: Value = serde_json::from_slice(&body).unwrap();
    v["result"]["tools"][0].clone()
}

fn search(env: &mut TestEnv, version: Option<&str>, arguments: Value) -> Value {
    let body = serde_json::to_vec(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"tool_search","arguments":arguments}}))
    .unwrap();
    let out = exchange(env, head(version), &body, ("200", "application/json", &[]));
    let Outcome::Local {
        status: 200, body, ..
    } = out
    else {
        panic!("not answered by the filter: {out:?}")
    };
    serde_json::from_slice::<Value>(&body).unwrap()["result"].clone()
}

#[test]
fn structured_content_follows_the_callers_protocol() {
    let mut env = TestEnv::new(r#"{"search":{"max_allowable_results":10}}"#);
    for (version, structured) in [
        (None, false),
        (Some("2025-03-26"), false),
        (Some("2025-06-18"), true),
        (Some("2025-11-25"), true),
        (Some("2026-07-28"), true),
    ] {
        let tool = listed_search_tool(&mut env, version);
        assert_eq!(tool["name"], "tool_search");
        assert_eq!(
            tool.get("outputSchema").is_some(),
            structured,
            "{version:?}"
        );
        let result = search(&mut env, version, json!({"query": "send invoice pdf"}));
        assert_eq!(
            result.get("structuredContent").is_some(),
            structured,
            "{version:?}: {result}"
        );
        if structured {
            let s = &result["structuredContent"];
            assert_eq!(s["matches"], 40, "{version:?}");
            assert_eq!(s["results"][0]["rank"], 1, "{version:?}");
            assert!(s["results"][0]["name"]
                .as_str()
                .unwrap()
                .starts_with("invoice_send_"));
        }
    }
}

#[test]
fn every_answer_keeps_to_its_budget() {
    let mut env =
        TestEnv::new(r#"{"search":{"max_allowable_results":20,"max_result_tokens":4000}}"#);
    listed_search_tool(&mut env, Some("2025-11-25"));
    for max_tokens in [None, Some(500), Some(900), Some(2500), Some(1_000_000)] {
        for detail in ["full", "compact", "names"] {
            let mut arguments = json!({"query": "send invoice pdf", "limit": 20, "detail": detail});
            if let Some(t) = max_tokens {
                arguments["max_tokens"] = json!(t);
            }
            let result = search(&mut env, Some("2025-11-25"), arguments);
            let budget = max_tokens.unwrap_or(4000).clamp(500, 4000);
            assert_eq!(result["isError"], false);
            assert!(
                tokens_read(&result.to_string()).unwrap() <= budget,
                "{detail} {max_tokens:?}: {} > {budget}",
                tokens_read(&result.to_string()).unwrap()
            );
            let results = result["structuredContent"]["results"].as_array().unwrap();
            assert!(
                !results.is_empty(),
                "{detail} {max_tokens:?}: nothing shown"
            );
            assert_eq!(
                result["_meta"]["mcp-tool-search/search"]["returned"],
                results.len()
            );
        }
    }
}
