//! README "Catalogs and namespaces": a catalog is shared by every Envoy worker through proxy-wasm
//! shared data. Proven in real Envoy (two workers) with fetching off, so that a worker can only
//! know the catalog from another worker: one connection lists the tools, and the worker that
//! accepted it is read from Envoy's per-worker listener counters; then new connections search
//! until one lands on the other worker, which must answer from the shared catalog.
//!
//! Needs Envoy and the built filter (`make test` provides both).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use mcp_tool_search_wasm_tests::harness::Envoy;
use mcp_tool_search_wasm_tests::http1::{exchange_closing, Request};
use serde_json::{json, Value};
use std::time::Duration;
use support::*;

/// Connections accepted so far by each worker of the MCP listener
/// (`listener.<address>.worker_<n>.downstream_cx_total`), by worker.
fn accepted(envoy: &Envoy) -> Vec<(String, u64)> {
    let mut workers: Vec<(String, u64)> = envoy
        .stats("downstream_cx_total")
        .unwrap()
        .into_iter()
        // The MCP listener is the only one with workers (the admin listener has none); its
        // stats are named by the address it was configured with (port 0).
        .filter(|(name, _)| name.starts_with("listener.") && name.contains(".worker_"))
        .collect();
    workers.sort();
    workers
}

/// The worker that accepted the one connection `send` opened.
fn worker_of(envoy: &Envoy, send: impl FnOnce()) -> String {
    let before = accepted(envoy);
    send();
    let after = accepted(envoy);
    let moved: Vec<&String> = after
        .iter()
        .zip(&before)
        .filter(|((_, a), (_, b))| a > b)
        .map(|((name, _), _)| name)
        .collect();
    assert_eq!(moved.len(), 1, "before {before:?}, after {after:?}");
    moved[0].clone()
}

#[test]
fn a_catalog_one_worker_learned_is_searched_on_another_with_fetching_off() {
    let stack = Setup::new(json!({"catalog": {"fetch": false}})).start("workers_share");
    let envoy = &stack.envoy;
    assert_eq!(
        accepted(envoy).len(),
        2,
        "two workers: {:?}",
        accepted(envoy)
    );
    let authority = envoy.listener.to_string();
    let post = |path: &str, body: &str| {
        let request = Request::post_json(&authority, path, body);
        exchange_closing(envoy.listener, &request.bytes, Duration::from_secs(10)).unwrap()
    };
    let search = || {
        let response = post(SEARCH_PATH, r#"{"query":"refund a stripe charge"}"#);
        let v: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
        (response.status, v)
    };
    // Nothing listed yet: with fetching off no worker knows the catalog.
    let (_, v) = search();
    assert!(v["tools"].as_array().is_none_or(Vec::is_empty), "{v}");
    let lister = worker_of(envoy, || {
        let listed = post("/mcp", r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        assert_eq!(listed.status, 200, "{}", listed.text());
        assert!(listed.text().contains("tool_search"), "{}", listed.text());
    });
    let mut searched_on = Vec::new();
    for _ in 0..60 {
        let mut answer = (0, Value::Null);
        let worker = worker_of(envoy, || answer = search());
        let (status, v) = answer;
        assert_eq!(status, 200, "on {worker}: {v}");
        assert_eq!(
            v["tools"][0]["name"], "stripe_refund_charge",
            "on {worker}: {v}"
        );
        searched_on.push(worker.clone());
        if worker != lister {
            break;
        }
    }
    assert!(
        searched_on.iter().any(|w| *w != lister),
        "every search landed on the lister's worker {lister}: {searched_on:?}"
    );
    // No worker fetched: what the other worker answered from came from the lister's list.
    assert!(
        stack
            .recorded()
            .iter()
            .filter(|r| r.starts_with("tools/list"))
            .count()
            == 1
    );
}
