//! The host functions: proxy-wasm ABI 0.2.1 (`env.proxy_*`) and the WASI preview1 functions,
//! with the names, signatures and results proxy-wasm-cpp-host gives them in Envoy
//! (`src/exports.cc`, `src/wasm.cc` `registerCallbacks`), and Envoy's own semantics for the
//! parts cpp-host leaves to it (`source/extensions/common/wasm/context.cc`).
//!
//! One module per ABI area; `guest` holds what they all use to reach the module's memory.

mod buffers;
mod calls;
mod context;
mod guest;
mod headers;
mod metrics;
mod properties;
mod runtime;
mod shared;
mod wasi;

use crate::vm_state::VmState;
use wasmtime::{Engine, Linker};

/// The WASI module names Envoy registers every WASI function under.
const WASI: [&str; 2] = ["wasi_snapshot_preview1", "wasi_unstable"];

/// Every host function Envoy 1.40 gives a proxy-wasm 0.2.1 module.
pub(crate) fn linker(engine: &Engine) -> wasmtime::Result<Linker<VmState>> {
    let mut l = Linker::new(engine);
    runtime::define(&mut l)?;
    properties::define(&mut l)?;
    context::define(&mut l)?;
    shared::define(&mut l)?;
    headers::define(&mut l)?;
    buffers::define(&mut l)?;
    calls::define(&mut l)?;
    metrics::define(&mut l)?;
    for m in WASI {
        wasi::define(&mut l, m)?;
    }
    Ok(l)
}
