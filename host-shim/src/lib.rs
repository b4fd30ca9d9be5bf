//! host-shim: a small, stateful proxy-wasm host (ABI 0.2.1) on wasmtime that behaves like Envoy
//! 1.40 (proxy-wasm-cpp-host + the Wasm HTTP filter), for testing a plugin's `.wasm` without
//! Envoy: deterministic, in-process, and loud when the module traps or logs at critical.
//!
//! - [`Host`]: one Envoy process — shared data (with CAS), shared queues, stats, the clock.
//! - [`Vm`]: one worker's instance of the plugin on a host. Two `Vm`s on one `Host` are two
//!   workers sharing data, as in Envoy.
//! - Streams: [`Vm::exchange`] runs a whole request/response through the filter; the
//!   `send_request_*`/`send_response_*` methods drive one event at a time.
//! - Callouts: [`Vm::pending_http_calls`], then [`Vm::complete_http_call`],
//!   [`Vm::fail_http_call`] or [`Vm::time_out_http_call`].
//! - Every driving call returns `Err(`[`ShimError`]`)` when the module traps (with what it
//!   logged at critical or wrote to stderr: its panic message) or, in strict mode, when it logs
//!   at critical.

// Layered so that module imports never form a cycle: a module uses only modules in the groups
// above its own. `vm_state` and `stream_state` hold the data the host functions (`imports`)
// share with the VM, so the host functions need nothing from the code that drives them.
mod abi;
mod pairs;

mod error;
mod host;
mod options;
mod stream_state;

mod vm_state;

mod imports;

mod module;

mod vm;

mod stream;

mod exchange;
mod root;

pub mod wire;

pub use abi::LogLevel;
pub use error::{LogLine, LogSource, ShimError};
pub use exchange::{Exchange, HttpMessage, Outcome};
pub use host::{Host, MetricValue, HISTOGRAM_VALUES_KEPT};
pub use module::{Import, WasmModule};
pub use options::VmOptions;
pub use pairs::Headers;
pub use stream_state::{LocalReply, Peer, StreamView};
pub use vm::Vm;
pub use vm_state::{HostcallCensus, Hostcalls, HttpCall};
