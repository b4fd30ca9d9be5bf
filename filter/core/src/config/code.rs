//! The `code` block: code mode's injected tool and the limits every script runs under
//! (docs/CODE-MODE.md). Only the limits an operator sets are kept; the sandbox
//! (`mcp-tool-search-script`) holds the defaults, so that they are written once.

#[cfg(feature = "code-mode")]
use super::read::{integer, tool_name, Object};
use super::ConfigError;
use serde_json::Value;

pub const DEFAULT_SCRIPT_TOOL_NAME: &str = "run_script";
/// Scripts one worker runs at once by default: each keeps its heap (`memory_bytes`) while it
/// waits for its calls, and a Wasm VM's memory never shrinks, so this bounds what scripts can
/// add to a worker (16 × 8 MiB by default).
pub const DEFAULT_MAX_RUNNING: u32 = 16;

/// The largest stack a script may be given: the sandbox's `MAX_STACK_BYTES` (a larger one lets a
/// deep recursion trap the Wasm VM instead of ending the script), checked equal in its tests.
#[cfg(feature = "code-mode")]
pub const MAX_STACK_BYTES: u64 = 128 << 10;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeConfig {
    /// The injected tool that runs a script.
    pub tool_name: String,
    pub limits: LimitOverrides,
    /// Scripts one worker (Wasm VM) runs at once; one more is answered with an error.
    pub max_running: u32,
}

impl Default for CodeConfig {
    fn default() -> Self {
        CodeConfig {
            tool_name: DEFAULT_SCRIPT_TOOL_NAME.to_string(),
            limits: LimitOverrides::default(),
            max_running: DEFAULT_MAX_RUNNING,
        }
    }
}

/// `code.limits`: the limits the operator set (`None`: the sandbox's default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitOverrides {
    pub time_ms: Option<u64>,
    pub memory_bytes: Option<u64>,
    pub stack_bytes: Option<u64>,
    pub calls: Option<u64>,
    pub call_time_ms: Option<u64>,
    pub output_bytes: Option<u64>,
}

/// Where a limit is kept in [`LimitOverrides`].
#[cfg(feature = "code-mode")]
type Slot = fn(&mut LimitOverrides) -> &mut Option<u64>;

#[cfg(feature = "code-mode")]
/// Each limit with the range it may take: a script runs on an Envoy worker, which serves nothing
/// else meanwhile (time), and what it allocates stays in the worker's Wasm VM for good (memory).
const RANGES: [(&str, u64, u64, Slot); 6] = [
    ("time_ms", 1, 10_000, |l| &mut l.time_ms),
    ("memory_bytes", 256 << 10, 256 << 20, |l| {
        &mut l.memory_bytes
    }),
    ("stack_bytes", 16 << 10, MAX_STACK_BYTES, |l| {
        &mut l.stack_bytes
    }),
    ("calls", 0, 1_000, |l| &mut l.calls),
    ("call_time_ms", 1, 600_000, |l| &mut l.call_time_ms),
    ("output_bytes", 1 << 10, 16 << 20, |l| &mut l.output_bytes),
];

/// The `code` block. The search module, which runs no script, refuses it rather than carry a
/// parser for settings it cannot use (its `.wasm` has a size budget).
#[cfg(not(feature = "code-mode"))]
pub(super) fn parse(value: &Value) -> Result<CodeConfig, ConfigError> {
    Err(ConfigError::invalid(
        "code",
        value,
        "no `code` block in this module: code mode runs only in mcp_tool_search_code.wasm",
    ))
}

#[cfg(feature = "code-mode")]
pub(super) fn parse(value: &Value) -> Result<CodeConfig, ConfigError> {
    let mut obj = Object::new("code", value)?;
    let mut code = CodeConfig::default();
    if let Some(v) = obj.take("tool_name") {
        code.tool_name = tool_name("code.tool_name", v)?;
    }
    if let Some(v) = obj.take("max_running") {
        let n = integer("code.max_running", v, 1, 1_000)?;
        code.max_running = u32::try_from(n).unwrap_or(DEFAULT_MAX_RUNNING);
    }
    if let Some(v) = obj.take("limits") {
        let mut limits = Object::new("code.limits", v)?;
        for (key, min, max, slot) in RANGES {
            if let Some(v) = limits.take(key) {
                *slot(&mut code.limits) =
                    Some(integer(&format!("code.limits.{key}"), v, min, max)?);
            }
        }
        limits.finish()?;
    }
    obj.finish()?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    #[cfg(feature = "code-mode")]
    use super::*;
    #[cfg(feature = "code-mode")]
    use serde_json::json;

    #[test]
    #[cfg(feature = "code-mode")]
    fn limits_are_kept_only_where_set() {
        let code =
            parse(&json!({"tool_name": "js", "limits": {"calls": 3, "time_ms": 50}})).unwrap();
        assert_eq!(code.tool_name, "js");
        assert_eq!(code.limits.calls, Some(3));
        assert_eq!(code.limits.time_ms, Some(50));
        assert_eq!(code.limits.memory_bytes, None);
    }

    #[test]
    fn mode_code_needs_the_code_mode_module() {
        let parsed = crate::config::Config::parse(r#"{"mode":"code","code":{"max_running":4}}"#);
        if cfg!(feature = "code-mode") {
            let config = parsed.unwrap();
            assert_eq!(config.mode, crate::config::Mode::Code);
            assert_eq!(config.code.max_running, 4);
        } else {
            let error = parsed.unwrap_err().to_string();
            assert!(error.contains("mcp_tool_search_code.wasm"), "{error}");
        }
    }

    #[test]
    #[cfg(feature = "code-mode")]
    fn a_limit_out_of_range_names_the_field_and_the_range() {
        let error = parse(&json!({"limits": {"stack_bytes": 1048576}}))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "plugin configuration field `code.limits.stack_bytes` is 1048576; expected an integer from 16384 to 131072"
        );
        let error = parse(&json!({"limits": {"heap": 1}}))
            .unwrap_err()
            .to_string();
        assert!(error.contains("`code.limits.heap` is not known"), "{error}");
    }
}
