use std::fmt;

use crate::limits::{Limit, Limits};

/// Why a script ended without a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptError {
    /// The script threw (or its promise rejected) and did not catch it; `line` is the script's
    /// own line where the engine knows it.
    Thrown { message: String, line: Option<u32> },
    /// A limit ended it: the limit and its configured value.
    Limit { limit: Limit, value: u64 },
    /// The script returned something JSON cannot hold (a `BigInt`, a cycle).
    NotJson(String),
    /// The script waits for a promise that nothing can settle.
    Stalled,
    /// The engine could not start (out of memory before the script ran).
    Engine(String),
}

impl ScriptError {
    /// `limit` ended the script: the error names it with its value in `limits`.
    pub fn limit(limit: Limit, limits: &Limits) -> Self {
        ScriptError::Limit {
            limit,
            value: limit.value(limits),
        }
    }
}

impl fmt::Display for ScriptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScriptError::Thrown {
                message,
                line: Some(line),
            } => write!(f, "line {line}: {message}"),
            ScriptError::Thrown {
                message,
                line: None,
            } => f.write_str(message),
            ScriptError::Limit { limit, value } => {
                write!(f, "{limit} ({} = {value})", limit.name())
            }
            ScriptError::NotJson(why) => write!(f, "the script's return value is not JSON: {why}"),
            ScriptError::Stalled => f.write_str(
                "the script awaits a promise that nothing settles (no tool call is in flight)",
            ),
            ScriptError::Engine(why) => write!(f, "the script engine could not start: {why}"),
        }
    }
}
