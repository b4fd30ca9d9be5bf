use std::fmt;

/// What one script may use. Each limit ends the script with [`Limit`]'s error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Time running JavaScript (waiting for tool calls not counted), in milliseconds. It runs on
    /// an Envoy worker, which serves nothing else meanwhile.
    pub time_ms: u64,
    /// The engine's heap, in bytes. A Wasm VM's memory never shrinks, so this is also what one
    /// script may add to the worker's VM for good.
    pub memory_bytes: usize,
    /// The engine's stack, in bytes (deep recursion), at most [`MAX_STACK_BYTES`].
    pub stack_bytes: usize,
    /// Tool calls per script.
    pub calls: u32,
    /// Time waiting for tool calls, all of them together, in milliseconds.
    pub call_time_ms: u64,
    /// The return value's JSON and the log together, in bytes.
    pub output_bytes: usize,
}

/// The largest stack a script may have. On Wasm QuickJS measures its stack in linear memory
/// while the engine running the module (V8, wasmtime) has a native stack of its own, and running
/// out of that one traps the whole VM instead of ending the script. Every recursive path (calls,
/// getters, callbacks, the parser, JSON) ends with the stack limit at 128 KiB in Envoy 1.40's V8
/// and in wasmtime with its default 512 KiB stack; wasmtime trapped at 192 KiB and V8 at 512 KiB
/// (docs/CODE-MODE.md). Larger values are lowered to this one.
pub const MAX_STACK_BYTES: usize = 128 << 10;

impl Default for Limits {
    fn default() -> Self {
        Self {
            time_ms: 200,
            memory_bytes: 8 << 20,
            stack_bytes: 64 << 10,
            calls: 16,
            call_time_ms: 30_000,
            output_bytes: 64 << 10,
        }
    }
}

/// The limit that ended a script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Time,
    Memory,
    Stack,
    Calls,
    CallTime,
    Output,
}

impl Limit {
    /// The stats and config name of the limit.
    pub fn name(self) -> &'static str {
        match self {
            Limit::Time => "time_ms",
            Limit::Memory => "memory_bytes",
            Limit::Stack => "stack_bytes",
            Limit::Calls => "calls",
            Limit::CallTime => "call_time_ms",
            Limit::Output => "output_bytes",
        }
    }

    /// The configured value of this limit in `limits`.
    pub fn value(self, limits: &Limits) -> u64 {
        let widen = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        match self {
            Limit::Time => limits.time_ms,
            Limit::Memory => widen(limits.memory_bytes),
            Limit::Stack => widen(limits.stack_bytes),
            Limit::Calls => u64::from(limits.calls),
            Limit::CallTime => limits.call_time_ms,
            Limit::Output => widen(limits.output_bytes),
        }
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limit::Time => "the script ran longer than its time limit",
            Limit::Memory => "the script used more memory than its limit",
            Limit::Stack => "the script recursed deeper than its stack limit",
            Limit::Calls => "the script made more tool calls than its limit",
            Limit::CallTime => "the script's tool calls took longer than their time limit",
            Limit::Output => "the script's result and log are larger than their limit",
        })
    }
}
