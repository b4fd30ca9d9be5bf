//! Code mode's scripts (filter/core/tests/code_scripts, also run natively) against the
//! code-mode `.wasm` in wasmtime (host-shim), both hold modes: the script runs in the VM, its
//! calls go out as the host's callouts (answered here as the upstream would; the hanging one
//! timed out), and each limit ends its script while the VM serves the next one.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "../../filter/core/tests/code_scripts/mod.rs"]
mod code_scripts;

use code_scripts::{answer, catalog, check, request, CASES, CONFIG, HANGS};
use host_shim::{Host, HttpMessage, Vm, VmOptions};
use mcp_tool_search_wasm_tests::harness;
use serde_json::Value;

fn post(role: &str) -> HttpMessage {
    HttpMessage::post("/mcp")
        .header("mcp-protocol-version", "2025-11-25")
        .header("x-user-roles", role)
}

/// A worker running the code-mode module, that learned the catalog.
fn worker(hold: bool) -> Option<(Host, Vm)> {
    let Ok(wasm) = harness::code_wasm() else {
        harness::skip(
            "shim_code_mode",
            "the code-mode module is not built: run `make wasm`, or set CODE_WASM",
        )
        .unwrap();
        return None;
    };
    let mut config: Value = serde_json::from_str(CONFIG).unwrap();
    config["hold_request_headers"] = Value::Bool(hold);
    let options = VmOptions::new(config.to_string())
        .stream_property(&["xds", "cluster_name"], "mcp_upstream")
        .allow_on_headers_stop_iteration(hold);
    // The shim's clock moves only when read: a tenth of a millisecond a read brings the time
    // limit (100 ms) after 1,000 reads.
    let host = Host::new();
    host.set_clock_tick_ns(100_000);
    let mut vm = Vm::load(&host, &wasm, options).unwrap_or_else(|e| panic!("{e}"));
    let list = post("admin").body(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec());
    let tools = HttpMessage::response(200)
        .header("content-type", "application/json")
        .body(catalog());
    let listed = vm.exchange(&list, &tools).unwrap();
    let names: Value = serde_json::from_slice(listed.client.body().as_slice()).unwrap();
    assert_eq!(names["result"]["tools"][0]["name"], "run_script");
    Some((host, vm))
}

/// Runs `script` as `role`, answering its calls; the tool result and the calls made.
fn run(host: &Host, vm: &mut Vm, role: &str, script: &str) -> (Value, usize) {
    let req = post(role).body(request(script));
    let id = vm.new_stream().unwrap();
    vm.send_request_headers(id, req.headers.clone(), false)
        .unwrap();
    vm.send_request_body(id, &req.body_bytes(), true).unwrap();
    let mut calls = 0;
    for _ in 0..100 {
        let pending = vm.pending_http_calls();
        if pending.is_empty() {
            break;
        }
        for call in pending {
            calls += 1;
            assert_eq!(call.cluster, "mcp_upstream");
            assert_eq!(call.context, id, "made by the stream");
            let sent: Value = serde_json::from_slice(&call.body).unwrap();
            if sent["params"]["name"] == HANGS {
                host.advance_ms(u64::from(call.timeout_ms));
                vm.time_out_http_call(call.token).unwrap();
                continue;
            }
            let headers = vec![
                (":status".to_string(), "200".to_string()),
                ("content-type".to_string(), "application/json".to_string()),
            ];
            vm.complete_http_call(call.token, headers, &answer(&call.body), vec![])
                .unwrap();
        }
    }
    let view = vm.stream_view(id).unwrap();
    vm.finish_stream(id).unwrap();
    let body = view.client.body();
    let reply: Value = serde_json::from_slice(&body).unwrap_or_else(|_| {
        panic!(
            "{script}: no JSON reply: {:?} {}\n{:?}",
            view.client.status(),
            String::from_utf8_lossy(&body),
            vm.failure()
        )
    });
    (reply["result"].clone(), calls)
}

#[test]
fn every_script_comes_to_what_it_must_in_wasmtime_in_both_hold_modes() {
    for hold in [false, true] {
        let Some((host, mut vm)) = worker(hold) else {
            return;
        };
        for case in CASES {
            let (result, calls) = run(&host, &mut vm, case.role, case.script);
            check(case, &result);
            assert_eq!(calls, case.calls, "{}", case.script);
            assert!(vm.failure().is_none(), "{:?}", vm.failure());
        }
        let limits = CASES
            .iter()
            .filter(|c| matches!(c.expect, code_scripts::Expect::Limit(_)))
            .count() as u64;
        assert_eq!(vm.counter("mcp_tool_search.scripts.limit"), limits);
    }
}
