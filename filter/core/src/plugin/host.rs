//! What the core needs from the process it runs in, in the host's own primitives: shared data
//! with compare-and-swap, a clock, a log, counters and an outgoing HTTP call. Envoy provides
//! them through proxy-wasm (the glue crate); `MemoryHost` (in the `http` module) provides them in
//! process memory for native tests and tools.

pub use crate::call::HttpCall;
use crate::store::SharedData;

/// Log levels the host understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

/// The host's primitives. Shared data is the one memory every worker (VM) of a host shares.
pub trait Host: SharedData {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
    fn log(&self, level: Level, message: &str);
    /// Adds `by` to the counter `stat` (one of [`crate::STATS`]).
    fn increment(&self, stat: &'static str, by: u64);
    /// Starts a call; its answer comes back with the returned token. `Err`: the host's reason
    /// it could not be started (an unknown cluster, say).
    fn http_call(&self, call: HttpCall) -> Result<u32, String>;
    /// A random number (jitter, so that many replicas do not retry in step).
    fn random_u64(&self) -> u64;
    /// Fills `out` with unpredictable bytes (names and secrets); `Err`: the host has none.
    fn fill_random(&self, out: &mut [u8]) -> Result<(), String>;
}
