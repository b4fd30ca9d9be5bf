//! Code mode's sandbox: an agent's script, run in QuickJS next to the catalog.
//!
//! A [`Run`] is one `run_script` call. The host starts it with the script, the caller's view of
//! the catalog ([`Host`]) and the [`Limits`], and drives it step by step: each step runs the
//! script until it settles or waits for tool calls ([`Step`]). The host performs those calls
//! upstream (in Envoy, through `dispatch_http_call`) and hands each reply back with
//! [`Run::resume`]. The script sees no I/O but `catalog.tools.search`, `catalog.tools.describe`,
//! `tools.call` (and `tools.<name>(args)`) and `console.log`; the API is [`API`].
//!
//! Every limit ends the script with a [`ScriptError::Limit`]; nothing a script does reaches the
//! host as a panic or a trap.

mod error;
mod limits;
mod memory;
mod run;

pub use error::ScriptError;
pub use limits::{Limit, Limits, MAX_STACK_BYTES};
pub use run::Run;

/// The script API, as the injected tool's description documents it.
pub const API: &str = include_str!("api.md");

/// What a script may reach: the catalog as the caller may use it, and the policy for calls.
pub trait Host {
    /// `catalog.tools.search`: compact entries, as a JSON array, ranked and clamped as
    /// `tool_search` ranks and clamps, over every tool the caller may use.
    fn search(
        &mut self,
        query: &str,
        namespace: Option<&str>,
        limit: Option<u32>,
    ) -> Result<String, String>;
    /// `catalog.tools.describe`: the full definitions of the named tools the caller may use, as a
    /// JSON array in the order asked (names it may not use, or that do not exist, are left out).
    fn describe(&mut self, names: &[String]) -> Result<String, String>;
    /// Whether the caller may call `name` with `arguments` (a JSON object); the error is the
    /// message the script's `tools.call` rejects with. A refused call never leaves the filter.
    fn authorize(&mut self, name: &str, arguments: &str) -> Result<(), String>;
    /// A monotonic clock in nanoseconds, for the script's time limit.
    fn now_ns(&self) -> u64;
}

/// A tool call the script is waiting for: the host sends `tools/call` with these and resumes the
/// run with the reply under the same `id`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: u32,
    pub name: String,
    /// The arguments as a JSON object.
    pub arguments: String,
}

/// The upstream's reply to a [`ToolCall`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The JSON-RPC `result` (an MCP `CallToolResult`, `isError` included): the script gets it
    /// as an object.
    Result(String),
    /// A JSON-RPC error or a failed exchange, as a message: the call rejects with it.
    Error(String),
    /// The call outlived what was left of [`Limits::call_time_ms`]: the script ends.
    TimedOut,
}

/// What a step left the run waiting for, or how the script ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Waiting for replies: `calls` are the new calls to send (others may still be in flight).
    Waiting {
        calls: Vec<ToolCall>,
    },
    Done(Outcome),
}

/// How a script ended, with what it logged and how many tool calls it made.
#[derive(Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The script's return value as JSON text (`null` for `undefined`).
    pub result: Result<String, ScriptError>,
    pub log: String,
    pub calls: u32,
}
