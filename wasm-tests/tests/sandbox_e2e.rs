//! Code mode's sandbox in Envoy's V8 and in wasmtime (host-shim): every hostile script of the
//! sandbox's own tests (filter/script/tests/hostile) ends with its limit's error inside the VM,
//! soon after the limit, and the VM serves the next request. Natively a script that escapes the
//! stack limit crashes the test; in a Wasm VM it traps the VM, which then fails every request of
//! that worker, and one that escapes the time limit holds the worker for seconds. So these run
//! against the `.wasm`: `make sandbox-wasm` builds the sandbox alone in a proxy-wasm module
//! (filter/script/sandbox-module), found at `$SANDBOX_WASM`. wasmtime's native stack (512 KiB by
//! default) is about half of V8's, so the two engines bound the stack differently.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

#[path = "../../filter/script/tests/hostile/mod.rs"]
mod hostile;

use host_shim::{Host, HttpMessage, Outcome, Vm, VmOptions};
use hostile::{CAUGHT, HOSTILE};
use mcp_tool_search_wasm_tests::envoy_config::{
    Bootstrap, Cluster, HttpFilter, Listener, Route, WasmFilter,
};
use mcp_tool_search_wasm_tests::harness::{self, raw_exchange, Envoy, TestDir};
use mcp_tool_search_wasm_tests::http1::Request;
use serde_json::Value;
use std::cell::RefCell;
use std::path::PathBuf;

/// The time limit's default (`Limits::default().time_ms`): a script that ends with any limit
/// must have ended within ten times it.
const TIME_LIMIT_MS: f64 = 200.0;

/// The sandbox module, or `None` when it is not built (a skip, except under CI, where the test
/// fails).
fn sandbox_wasm() -> Option<PathBuf> {
    let path = std::env::var_os("SANDBOX_WASM").map_or_else(
        || harness::workspace_root().join("target/dist/mcp_tool_search_sandbox_module.wasm"),
        PathBuf::from,
    );
    if path.is_file() {
        return Some(std::fs::canonicalize(&path).unwrap_or(path));
    }
    harness::skip(
        "sandbox_e2e",
        "the sandbox module is not built: run `make sandbox-wasm`, or set SANDBOX_WASM",
    )
    .unwrap();
    None
}

fn run(envoy: &Envoy, script: &str) -> (u16, Value) {
    let authority = envoy.listener.to_string();
    let request = Request::post(&authority, "/", "text/javascript", script.as_bytes());
    let response = raw_exchange(envoy.listener, request.as_bytes()).unwrap();
    let outcome = serde_json::from_slice(&response.body)
        .unwrap_or_else(|_| Value::String(format!("{}\n\n{}", response.head, response.text())));
    (response.status, outcome)
}

/// Runs every hostile script through `run` (status and outcome), and after each a few scripts
/// that must succeed; `state` says what the VM went through, for the failure message. Then the
/// scripts that catch what the engine throws: each must be answered, with whatever it returns.
fn hostile_scripts_end_with_their_limit(
    mut run: impl FnMut(&str) -> (u16, Value),
    state: impl Fn() -> String,
) {
    for script in CAUGHT {
        let (status, outcome) = run(script);
        assert_eq!(status, 200, "{script}: {outcome}\n{}", state());
        let ms = outcome["ms"].as_f64().unwrap();
        assert!(ms < 10.0 * TIME_LIMIT_MS, "{script}: {outcome}");
    }
    for hostile in &HOSTILE {
        let (status, outcome) = run(hostile.script);
        assert_eq!(status, 200, "{}: {outcome}\n{}", hostile.script, state());
        assert_eq!(
            outcome["limit"], hostile.ends_with,
            "{}: {outcome}",
            hostile.script
        );
        let ms = outcome["ms"].as_f64().unwrap();
        assert!(ms < 10.0 * TIME_LIMIT_MS, "{}: {outcome}", hostile.script);
        // In Envoy, new connections spread over both workers: each VM still runs scripts.
        for _ in 0..4 {
            let (status, outcome) = run("return 1 + 1");
            assert_eq!(
                (status, &outcome["result"]),
                (200, &Value::from(2)),
                "after {}: {outcome}\n{}",
                hostile.script,
                state()
            );
        }
    }
}

#[test]
fn hostile_scripts_end_with_their_limit_in_envoy_and_the_worker_serves_on() {
    let Some(wasm) = sandbox_wasm() else {
        return;
    };
    // The route's cluster never answers: the module answers every request itself, holding it
    // from its headers on.
    let listener = Listener::new("sandbox")
        .routes(vec![Route::prefix("/").to_cluster("nowhere")])
        .filter(HttpFilter::wasm(
            &WasmFilter::new(&wasm, "{}").allow_on_headers_stop_iteration(true),
        ))
        .filter(HttpFilter::router());
    let nowhere = Cluster::new("nowhere", "127.0.0.1:9".parse().unwrap());
    let yaml = Bootstrap::new()
        .listener(listener)
        .cluster(nowhere)
        .to_yaml();
    let dir = TestDir::new("sandbox_e2e").unwrap();
    let envoy = Envoy::start_yaml(&yaml, "wasm:info", &dir).unwrap();

    // Envoy flushes its log every 50 ms: a failure's own line may come after the failing answer.
    let log = || {
        std::thread::sleep(std::time::Duration::from_millis(200));
        envoy.log()
    };
    hostile_scripts_end_with_their_limit(|script| run(&envoy, script), log);
    let log = envoy.log();
    assert!(
        !log.lines()
            .any(|l| l.contains("[wasm]") && l.contains("failed")),
        "a VM failed:\n{log}"
    );
}

#[test]
fn hostile_scripts_end_with_their_limit_in_wasmtime_and_the_vm_serves_on() {
    let Some(wasm) = sandbox_wasm() else {
        return;
    };
    let options = VmOptions::new("{}").allow_on_headers_stop_iteration(true);
    // The shim's clock stands still unless moved: a tenth of a millisecond per read makes the
    // time limit (200 ms) come after 2,000 reads, which the sandbox makes every 1,000 polls and
    // 256 allocations.
    let host = Host::new();
    host.set_clock_tick_ns(100_000);
    let vm = RefCell::new(Vm::load(&host, &wasm, options).unwrap());
    let run = |script: &str| {
        let request = HttpMessage::post("/").body(script.as_bytes().to_vec());
        let exchange = vm
            .borrow_mut()
            .exchange(&request, &HttpMessage::response(200));
        match exchange.map(|x| x.outcome()) {
            Ok(Outcome::Local { status, body, .. }) => (
                u16::try_from(status).unwrap(),
                serde_json::from_slice(&body).unwrap_or(Value::Null),
            ),
            other => (0, Value::String(format!("{other:?}"))),
        }
    };
    hostile_scripts_end_with_their_limit(run, || format!("{:?}", vm.borrow().failure()));
}
