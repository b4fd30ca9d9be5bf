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
    /// Adds `by` to a counter named at run time (a namespace's, `stats::in_namespace`), which
    /// the host defines the first time it is named.
    fn increment_named(&self, stat: &str, by: u64);
    /// Records `value` in the histogram `histogram` (one of `stats::HISTOGRAMS`).
    fn record(&self, histogram: &'static str, value: u64);
    /// Nanoseconds since the Unix epoch: what a duration is measured with.
    fn now_ns(&self) -> u64;
    /// Starts a call; its answer comes back with the returned token. `Err`: the host's reason
    /// it could not be started (an unknown cluster, say).
    fn http_call(&self, call: HttpCall) -> Result<u32, String>;
    /// A random number (jitter, so that many replicas do not retry in step).
    fn random_u64(&self) -> u64;
    /// Fills `out` with unpredictable bytes (names and secrets); `Err`: the host has none.
    fn fill_random(&self, out: &mut [u8]) -> Result<(), String>;
}

/// `Host` for a wrapper that keeps or watches a host's shared data (it implements `SharedData`
/// itself) and hands every other function to the host in its field `$field`: a callback's view
/// of shared data (`plugin::view`), and tests that interleave another worker's writes.
#[macro_export]
macro_rules! host_beside_shared_data {
    ($wrapper:ty, $field:ident) => {
        impl $crate::Host for $wrapper {
            fn now_ms(&self) -> u64 {
                #[allow(unused_imports)]
                use $crate::Host as _;
                self.$field.now_ms()
            }
            fn log(&self, level: $crate::Level, message: &str) {
                #[allow(unused_imports)]
                use $crate::Host as _;
                self.$field.log(level, message)
            }
            fn increment(&self, stat: &'static str, by: u64) {
                #[allow(unused_imports)]
                use $crate::Host as _;
                self.$field.increment(stat, by)
            }
            fn increment_named(&self, stat: &str, by: u64) {
                #[allow(unused_imports)]
                use $crate::Host as _;
                self.$field.increment_named(stat, by)
            }
            fn record(&self, histogram: &'static str, value: u64) {
                #[allow(unused_imports)]
                use $crate::Host as _;
                self.$field.record(histogram, value)
            }
            fn now_ns(&self) -> u64 {
                #[allow(unused_imports)]
                use $crate::Host as _;
                self.$field.now_ns()
            }
            fn http_call(&self, call: $crate::HttpCall) -> Result<u32, String> {
                #[allow(unused_imports)]
                use $crate::Host as _;
                self.$field.http_call(call)
            }
            fn random_u64(&self) -> u64 {
                #[allow(unused_imports)]
                use $crate::Host as _;
                self.$field.random_u64()
            }
            fn fill_random(&self, out: &mut [u8]) -> Result<(), String> {
                #[allow(unused_imports)]
                use $crate::Host as _;
                self.$field.fill_random(out)
            }
        }
    };
}
