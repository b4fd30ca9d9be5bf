//! The real `.wasm` in the host-shim (wasmtime): a VM per worker, exchanges timed in CPU time.

use crate::inproc::{timed, Result};
use crate::messages::list_request;
use crate::vmmem;
use host_shim::{Host, HttpMessage, LogLevel, Outcome, Vm, VmOptions, WasmModule};
use std::path::Path;
use std::time::Duration;

pub fn vm_options(config: &str) -> VmOptions {
    VmOptions::new(config.as_bytes().to_vec())
        .allow_on_headers_stop_iteration(true)
        .log_level(LogLevel::Warn)
        .strict(false)
        .buffer_limit(256 << 20)
        .stream_property(&["xds", "cluster_name"], "bench".as_bytes().to_vec())
}

pub fn post(path: &str, body: &str) -> HttpMessage {
    HttpMessage::post(path)
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.as_bytes().to_vec())
}

pub fn shim_search(vm: &mut Vm, body: &str) -> Result<Duration> {
    shim_search_in(vm, body, None)
}

/// [`shim_search`] in an MCP session (`Mcp-Session-Id`).
pub fn shim_search_in(vm: &mut Vm, body: &str, session: Option<&str>) -> Result<Duration> {
    let mut req = post("/mcp", body);
    if let Some(session) = session {
        req = req.header("mcp-session-id", session);
    }
    let resp = HttpMessage::response(500);
    let (ex, d) = timed(|| vm.exchange(&req, &resp));
    let ex = ex.map_err(|e| format!("shim search: {e}"))?;
    match ex.outcome() {
        Outcome::Local {
            status: 200, body, ..
        } if String::from_utf8_lossy(&body).contains("mcp-tool-search/search") => Ok(d),
        other => Err(format!(
            "shim search: unexpected outcome {:?}",
            truncate(&format!("{other:?}"))
        )),
    }
}

pub fn shim_list(vm: &mut Vm, response: &HttpMessage) -> Result<Duration> {
    let req = post("/mcp", &list_request());
    let (ex, d) = timed(|| vm.exchange(&req, response));
    let ex = ex.map_err(|e| format!("shim list: {e}"))?;
    match ex.outcome() {
        Outcome::Upstream {
            rewritten: true,
            body,
        } if String::from_utf8_lossy(&body).contains("tool_search") => Ok(d),
        other => Err(format!(
            "shim list: unexpected outcome {}",
            truncate(&format!("{other:?}"))
        )),
    }
}

/// `shim_list` of a list the VM must answer from its memo (`lists_replayed` counts it): a
/// list read again would not measure the replay.
pub fn shim_list_replayed(vm: &mut Vm, response: &HttpMessage) -> Result<Duration> {
    const LISTS_REPLAYED: &str = "mcp_tool_search.lists_replayed";
    let replayed = vm.counter(LISTS_REPLAYED);
    let d = shim_list(vm, response)?;
    if vm.counter(LISTS_REPLAYED) == replayed {
        return Err("shim list: the list was read again, not replayed".to_owned());
    }
    Ok(d)
}

/// An exchange the filter lets through untouched (not an MCP path): the shim's own cost.
pub fn shim_noop(vm: &mut Vm, body: &str, response: &HttpMessage) -> Result<Duration> {
    let req = post("/not-mcp", body);
    let (ex, d) = timed(|| vm.exchange(&req, response));
    let ex = ex.map_err(|e| format!("shim no-op: {e}"))?;
    match ex.outcome() {
        Outcome::Upstream {
            rewritten: false, ..
        } => Ok(d),
        other => Err(format!(
            "shim no-op: unexpected outcome {}",
            truncate(&format!("{other:?}"))
        )),
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(300).collect()
}

/// Loads (and compiles) the module once.
pub fn load_module(wasm: &Path) -> Result<(WasmModule, Duration)> {
    let (m, d) = timed(|| WasmModule::from_file(wasm));
    Ok((m.map_err(|e| format!("{}: {e}", wasm.display()))?, d))
}

/// Starts a VM and finds its linear memory in this process's mappings.
pub fn start_vm(host: &Host, module: &WasmModule, config: &str) -> Result<(Vm, Option<u64>)> {
    let before = vmmem::linear_memories();
    let vm =
        Vm::new(host, module, vm_options(config)).map_err(|e| format!("starting the VM: {e}"))?;
    let after = vmmem::linear_memories();
    let mine = after
        .iter()
        .map(|m| m.0)
        .find(|start| !before.iter().any(|b| b.0 == *start));
    Ok((vm, mine))
}
