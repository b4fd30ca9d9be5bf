//! What can go wrong when driving a module: the module's own failures (a trap, a critical log
//! line, a refused configuration) and misuse of the shim.

use crate::abi::LogLevel;
use std::fmt;

/// A log line the module wrote (`proxy_log`, or stdout/stderr through WASI `fd_write`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// Which VM (worker) wrote it.
    pub vm: usize,
    pub level: LogLevel,
    pub message: String,
    /// `proxy_log`, or `stdout`/`stderr` for WASI writes (Envoy logs those at info and error).
    pub source: LogSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogSource {
    ProxyLog,
    Stdout,
    Stderr,
}

impl fmt::Display for LogLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let src = match self.source {
            LogSource::ProxyLog => "",
            LogSource::Stdout => " (stdout)",
            LogSource::Stderr => " (stderr)",
        };
        write!(
            f,
            "[vm {}] [{}]{src} {}",
            self.vm,
            self.level.name(),
            self.message
        )
    }
}

#[derive(Debug, Clone)]
pub enum ShimError {
    /// The module could not be read, compiled or linked (e.g. it imports a function no host
    /// provides).
    Load(String),
    /// The module trapped (a Rust panic ends in `unreachable`; a restricted hostcall in
    /// `_initialize` traps with `restricted_callback`). The VM is dead afterwards, as in Envoy.
    Trap {
        vm: usize,
        /// The export that was running, e.g. `proxy_on_request_headers`.
        callback: String,
        /// The runtime's description of the trap.
        trap: String,
        /// What the module logged at critical or wrote to stderr during that call: where a
        /// panic hook (or Rust's default one) puts the panic message.
        panic: Vec<String>,
    },
    /// The module logged at critical without trapping (strict mode fails on it).
    CriticalLog {
        vm: usize,
        callback: String,
        line: String,
    },
    /// `proxy_on_vm_start` or `proxy_on_configure` returned false: Envoy refuses the plugin.
    Refused {
        vm: usize,
        callback: String,
        /// Everything the module logged while refusing.
        logs: Vec<String>,
    },
    /// A VM that trapped before is used again.
    VmFailed { vm: usize, reason: String },
    /// The shim was driven in a way Envoy never would (an unknown stream, a response before
    /// the request reached upstream, ...).
    Usage(String),
}

impl ShimError {
    /// The panic message the module reported before trapping, if any.
    pub fn panic_message(&self) -> Option<String> {
        match self {
            ShimError::Trap { panic, .. } if !panic.is_empty() => Some(panic.join("\n")),
            ShimError::CriticalLog { line, .. } => Some(line.clone()),
            _ => None,
        }
    }

    pub fn is_trap(&self) -> bool {
        matches!(self, ShimError::Trap { .. })
    }
}

impl fmt::Display for ShimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShimError::Load(m) => write!(f, "could not load the module: {m}"),
            ShimError::Trap {
                vm,
                callback,
                trap,
                panic,
            } => {
                write!(f, "the module trapped in {callback} (VM {vm}): {trap}")?;
                if panic.is_empty() {
                    write!(
                        f,
                        "\n  (it logged nothing at critical and nothing on stderr)"
                    )?;
                }
                for line in panic {
                    write!(f, "\n  module said: {line}")?;
                }
                Ok(())
            }
            ShimError::CriticalLog { vm, callback, line } => {
                write!(
                    f,
                    "the module logged at critical in {callback} (VM {vm}): {line}"
                )
            }
            ShimError::Refused { vm, callback, logs } => {
                write!(
                    f,
                    "the plugin was refused: {callback} returned false (VM {vm})"
                )?;
                for line in logs {
                    write!(f, "\n  module said: {line}")?;
                }
                Ok(())
            }
            ShimError::VmFailed { vm, reason } => {
                write!(f, "VM {vm} failed earlier and cannot be used: {reason}")
            }
            ShimError::Usage(m) => write!(f, "host-shim misuse: {m}"),
        }
    }
}

impl std::error::Error for ShimError {}

/// Why a hostcall ended the module's run (a host-side trap).
#[derive(Debug)]
pub(crate) enum HostAbort {
    /// A hostcall Envoy does not allow in this phase (`_initialize`, memory allocation).
    Restricted(String),
}

impl fmt::Display for HostAbort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostAbort::Restricted(name) => write!(f, "restricted_callback (called {name})"),
        }
    }
}

impl std::error::Error for HostAbort {}
