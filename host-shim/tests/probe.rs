//! The shim checked against a small plugin of its own (testdata/probe-filter): a deliberately
//! broken filter is reported as a trap with its panic message, `_initialize` is restricted like
//! Envoy's, callouts complete, fail and time out, pauses and buffers behave like Envoy's.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use host_shim::{Host, HttpMessage, LogLevel, Outcome, ShimError, Vm, VmOptions, WasmModule};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Builds the probe for wasm32-wasip1 once per test run (into this test's target directory).
fn probe_wasm() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/probe-filter");
        let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("probe-filter");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let out = Command::new(cargo)
            .current_dir(&crate_dir)
            .args([
                "build",
                "--release",
                "--target",
                "wasm32-wasip1",
                "--target-dir",
            ])
            .arg(&target_dir)
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .output()
            .expect("run cargo");
        assert!(
            out.status.success(),
            "building the probe filter failed (is the wasm32-wasip1 target installed? \
             `make wasm` installs it):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        target_dir.join("wasm32-wasip1/release/probe_filter.wasm")
    })
}

fn probe(config: &str) -> Vm {
    probe_with(VmOptions::new(config))
}

fn probe_with(options: VmOptions) -> Vm {
    Vm::load(&Host::new(), probe_wasm(), options).unwrap()
}

fn ok_response() -> HttpMessage {
    HttpMessage::response(200)
        .header("content-type", "text/plain")
        .body("hello")
}

#[test]
fn a_panicking_filter_is_reported_as_a_trap_with_its_panic_message() {
    // No panic hook: Rust's default hook writes the message to stderr before the abort.
    let mut vm = probe("panic-on-missing-header");
    let err = vm
        .exchange(&HttpMessage::post("/mcp").body("{}"), &ok_response())
        .unwrap_err();
    assert!(err.is_trap(), "{err}");
    let panic = err.panic_message().unwrap_or_default();
    assert!(
        panic.contains("called `Option::unwrap()` on a `None` value"),
        "{err}"
    );
    let text = err.to_string();
    assert!(text.contains("proxy_on_request_headers"), "{text}");
    assert!(text.contains("unreachable"), "{text}");
    // The VM is dead afterwards, as in Envoy.
    assert!(matches!(
        vm.exchange(&HttpMessage::get("/"), &ok_response()),
        Err(ShimError::VmFailed { .. })
    ));

    // With a hook that logs at critical (what mcp-tool-search installs), that line is the report.
    let mut vm = probe_with(VmOptions::new("panic-on-missing-header").env("PROBE_HOOK", "1"));
    let err = vm
        .exchange(&HttpMessage::post("/mcp").body("{}"), &ok_response())
        .unwrap_err();
    let panic = err.panic_message().unwrap_or_default();
    assert!(panic.starts_with("probe panicked: "), "{err}");
    assert!(panic.contains("src/lib.rs"), "{err}");

    // The same filter is fine when the header is there.
    let mut vm = probe("panic-on-missing-header");
    let x = vm
        .exchange(
            &HttpMessage::post("/mcp")
                .header("x-required", "yes")
                .body("{}"),
            &ok_response(),
        )
        .unwrap();
    assert_eq!(x.upstream.header("x-seen"), Some("yes"));
    assert_eq!(x.client.body(), b"hello");
}

#[test]
fn hostcalls_in_initialize_trap_with_restricted_callback() {
    let err = Vm::load(
        &Host::new(),
        probe_wasm(),
        VmOptions::new("").env("PROBE_INIT_HOSTCALL", "1"),
    )
    .unwrap_err();
    assert!(err.is_trap(), "{err}");
    assert!(err.to_string().contains("restricted_callback"), "{err}");
    assert!(err.to_string().contains("_initialize"), "{err}");
}

#[test]
fn critical_logs_fail_in_strict_mode_only() {
    let mut vm = probe("critical");
    let err = vm
        .exchange(&HttpMessage::get("/"), &ok_response())
        .unwrap_err();
    assert!(
        matches!(&err, ShimError::CriticalLog { line, .. } if line.contains("very wrong")),
        "{err}"
    );
    let mut vm = probe_with(VmOptions::new("critical").strict(false));
    let x = vm.exchange(&HttpMessage::get("/"), &ok_response()).unwrap();
    assert_eq!(x.client.body(), b"hello");
    assert_eq!(
        vm.log_messages(LogLevel::Critical),
        vec!["probe: something is very wrong".to_string()]
    );
}

#[test]
fn a_refused_configuration_is_an_error_with_the_log() {
    let err = Vm::load(&Host::new(), probe_wasm(), VmOptions::new("refuse")).unwrap_err();
    let ShimError::Refused { callback, logs, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(callback, "proxy_on_configure");
    assert!(logs.iter().any(|l| l.contains("refusing")), "{logs:?}");
}

#[test]
fn callouts_complete_fail_and_time_out() {
    for how in ["complete", "fail", "time out"] {
        let mut vm = probe("callout");
        let id = vm.new_stream().unwrap();
        let request = HttpMessage::get("/x");
        vm.send_request_headers(id, request.headers.clone(), true)
            .unwrap();
        let calls = vm.pending_http_calls();
        assert_eq!(calls.len(), 1);
        let call = &calls[0];
        assert_eq!(call.cluster, "backend");
        assert_eq!(call.context, id);
        assert!(call
            .headers
            .contains(&(":path".to_string(), "/check".to_string())));
        assert_eq!(call.timeout_ms, 5000);
        // Nothing reached the upstream while the filter waits.
        let view = vm.stream_view(id).unwrap();
        assert!(view.upstream.headers.is_none());
        assert!(view.stuck.is_some());
        match how {
            "complete" => vm
                .complete_http_call(
                    call.token,
                    vec![(":status".into(), "201".into())],
                    b"from backend",
                    vec![],
                )
                .unwrap(),
            "fail" => vm.fail_http_call(call.token).unwrap(),
            _ => vm.time_out_http_call(call.token).unwrap(),
        }
        let view = vm.stream_view(id).unwrap();
        let reply = view.local_reply.clone().unwrap();
        match how {
            "complete" => {
                assert_eq!(reply.status, 200);
                assert_eq!(view.client.body(), b"from backend");
                assert_eq!(view.client.header("x-callout-status"), Some("201"));
            }
            "fail" => {
                assert_eq!(reply.status, 502);
                assert_eq!(view.client.body(), b"callout failed: 11 reset");
            }
            _ => {
                assert_eq!(reply.status, 200);
                assert_eq!(view.client.header("x-callout-status"), Some("504"));
                assert_eq!(view.client.body(), b"upstream request timeout");
            }
        }
        // Envoy adds these to every local reply.
        assert_eq!(view.client.status(), Some(reply.status));
        assert_eq!(
            view.client.header("content-length"),
            Some(view.client.body().len().to_string().as_str())
        );
        assert!(view.client.end_of_stream);
        assert!(view.upstream.headers.is_none(), "upstream never saw it");
        assert!(vm.pending_http_calls().is_empty());
        vm.finish_stream(id).unwrap();
        assert!(matches!(
            vm.fail_http_call(call.token),
            Err(ShimError::Usage(_))
        ));
    }
}

#[test]
fn reading_a_failed_callouts_headers_traps_as_in_envoy() {
    // Envoy keeps no response for a failed callout: its header map is BadArgument, which the
    // Rust SDK's `get_http_call_response_header` turns into a panic.
    let mut vm = probe("callout naive");
    let id = vm.new_stream().unwrap();
    vm.send_request_headers(id, HttpMessage::get("/x").headers, true)
        .unwrap();
    let token = vm.pending_http_calls()[0].token;
    let err = vm.fail_http_call(token).unwrap_err();
    assert!(err.is_trap(), "{err}");
    assert!(
        err.panic_message()
            .unwrap()
            .contains("unexpected status: 2"),
        "{err}"
    );
}

#[test]
fn a_paused_request_resumes_after_its_callout_with_the_body_it_held() {
    let mut vm = probe("resume");
    let id = vm.new_stream().unwrap();
    let request = HttpMessage::post("/mcp");
    vm.send_request_headers(id, request.headers.clone(), false)
        .unwrap();
    // StopAllIteration: Envoy keeps the body without calling the filter.
    vm.send_request_body(id, b"part one, ", false).unwrap();
    vm.send_request_body(id, b"part two", true).unwrap();
    let view = vm.stream_view(id).unwrap();
    assert!(view.upstream.headers.is_none());
    assert!(
        view.events.iter().all(|e| !e.contains("request_body")),
        "{:?}",
        view.events
    );
    let token = vm.pending_http_calls()[0].token;
    vm.complete_http_call(token, vec![(":status".into(), "200".into())], b"", vec![])
        .unwrap();
    let view = vm.stream_view(id).unwrap();
    assert_eq!(view.upstream.header("x-callout-status"), Some("200"));
    assert_eq!(view.upstream.body(), b"part one, part two");
    assert!(view.upstream.end_of_stream);
    assert!(
        view.events
            .iter()
            .any(|e| e.starts_with("proxy_on_request_body(18 bytes, end_of_stream=true)")),
        "{:?}",
        view.events
    );
    vm.send_response_headers(id, ok_response().headers, false)
        .unwrap();
    vm.send_response_body(id, b"done", true).unwrap();
    assert_eq!(vm.stream_view(id).unwrap().client.body(), b"done");
}

#[test]
fn a_paused_body_is_cumulative_and_the_replacement_is_what_the_client_gets() {
    let mut vm = probe("upper");
    for empty_final in [false, true] {
        vm.clear_logs();
        let response = ok_response()
            .chunks(["ab", "cd", "ef"])
            .empty_final_chunk(empty_final);
        let x = vm.exchange(&HttpMessage::get("/"), &response).unwrap();
        assert_eq!(x.client.chunks, vec![b"ABCDEF".to_vec()]);
        assert_eq!(x.client.header("content-length"), None);
        let mut want = vec![
            "response body_size=2 end_of_stream=false",
            "response body_size=4 end_of_stream=false",
        ];
        if empty_final {
            want.push("response body_size=6 end_of_stream=false");
        }
        want.push("response body_size=6 end_of_stream=true");
        assert_eq!(vm.log_messages(LogLevel::Info), want, "{empty_final}");
        assert_eq!(
            x.outcome(),
            Outcome::Upstream {
                body: b"ABCDEF".to_vec(),
                rewritten: true
            }
        );
    }
}

#[test]
fn pausing_request_headers_needs_allow_on_headers_stop_iteration() {
    let request = HttpMessage::post("/mcp").chunks(["{\"a\":", "1}"]);
    // Without it (Envoy's default): StopAllIteration, no body callback, the request hangs.
    let mut vm = probe("hold");
    let x = vm.exchange(&request, &ok_response()).unwrap();
    assert!(
        matches!(x.outcome(), Outcome::Stuck(ref why) if why.contains("StopAllIteration")),
        "{:?}",
        x.outcome()
    );
    assert!(vm.log_messages(LogLevel::Info).is_empty());
    // With it: StopIteration, body callbacks come, and the Continue at the end lets all go.
    let mut vm = probe_with(VmOptions::new("hold").allow_on_headers_stop_iteration(true));
    let x = vm.exchange(&request, &ok_response()).unwrap();
    assert_eq!(x.upstream.body(), b"{\"a\":1}");
    assert_eq!(x.upstream.chunks.len(), 1, "held, then forwarded at once");
    assert_eq!(
        vm.log_messages(LogLevel::Info),
        vec![
            "request body_size=5 end_of_stream=false",
            "request body_size=7 end_of_stream=true"
        ]
    );
    assert_eq!(x.client.body(), b"hello");
}

#[test]
fn over_the_buffer_limit_envoy_answers_413() {
    let mut vm = probe_with(
        VmOptions::new("hold")
            .allow_on_headers_stop_iteration(true)
            .buffer_limit(8),
    );
    let x = vm
        .exchange(
            &HttpMessage::post("/mcp").chunks(["0123456", "789ab", "c"]),
            &ok_response(),
        )
        .unwrap();
    let reply = x.local_reply.unwrap();
    assert_eq!(reply.status, 413);
    assert_eq!(x.client.body(), b"Payload Too Large");
    assert!(x.upstream.headers.is_none());
}

#[test]
fn ticks_and_queues() {
    let host = Host::new();
    let mut a = Vm::load(&host, probe_wasm(), VmOptions::new("tick queue")).unwrap();
    let mut b = Vm::load(&host, probe_wasm(), VmOptions::new("tick queue")).unwrap();
    assert_eq!(a.tick_period_ms(), 1000);
    assert!(a.tick().unwrap());
    assert!(b.tick().unwrap());
    assert_eq!(host.counter("probe.ticks"), 2, "stats are per name, shared");
    // b registered the queue last: it owns on_queue_ready, whoever enqueues.
    a.exchange(&HttpMessage::get("/one"), &ok_response())
        .unwrap();
    a.exchange(&HttpMessage::get("/two"), &ok_response())
        .unwrap();
    assert_eq!(host.counter("probe.dequeued"), 0);
    assert_eq!(b.deliver_queue_ready().unwrap(), 2);
    assert_eq!(host.counter("probe.dequeued"), 2);
}

#[test]
fn the_probe_imports_only_what_envoy_provides() {
    let module = WasmModule::from_file(probe_wasm()).unwrap();
    assert_eq!(module.link_error(), None);
    assert!(module
        .imports()
        .iter()
        .any(|i| i.module == "env" && i.name == "proxy_http_call"));
}

/// The census of host functions: each call counted under its ABI name, with the bytes the host
/// read from the module (keys, values) and copied into it (results); taking it empties it.
#[test]
fn every_hostcall_is_counted_with_the_bytes_it_moved() {
    let mut vm = probe("queue");
    vm.hostcalls();
    vm.exchange(&HttpMessage::get("/queued"), &ok_response())
        .unwrap();
    let census = vm.hostcalls();
    let of = |name: &str| {
        let h = census
            .functions
            .get(name)
            .unwrap_or_else(|| panic!("no {name} in {census:?}"));
        (h.calls, h.bytes_in, h.bytes_out)
    };
    // ":path" read, "/queued" returned.
    assert_eq!(of("proxy_get_header_map_value"), (1, 5, 7));
    // The VM id "" and the queue's name "probe".
    assert_eq!(of("proxy_resolve_shared_queue"), (1, 5, 0));
    assert_eq!(of("proxy_enqueue_shared_queue"), (1, 7, 0));
    assert_eq!(census.keys["proxy_get_header_map_value :path"], 1);
    assert_eq!(vm.hostcalls(), Default::default());
}
