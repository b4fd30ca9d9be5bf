//! Reading the plugin configuration's JSON field by field, and the error an operator sees: the
//! field's path, the value found and what is allowed.

use super::glob::Glob;
use serde_json::{Map, Value};
use std::fmt;

/// MCP tool names are at most 128 characters (spec 2025-11-25, "Tool names"); the search tool
/// is ours, so we hold it to the conservative 64 that every client accepts.
const MAX_TOOL_NAME_LEN: usize = 64;

/// A JSON object being read field by field; `finish` rejects what was not taken.
pub(crate) struct Object<'a> {
    path: String,
    map: &'a Map<String, Value>,
    taken: Vec<&'static str>,
}

impl<'a> Object<'a> {
    pub(crate) fn new(path: &str, value: &'a Value) -> Result<Self, ConfigError> {
        match value.as_object() {
            Some(map) => Ok(Object {
                path: path.to_string(),
                map,
                taken: Vec::new(),
            }),
            None => Err(ConfigError::invalid(
                if path.is_empty() { "(root)" } else { path },
                value,
                "a JSON object",
            )),
        }
    }

    /// A field's value; an explicit `null` counts as absent (the default applies).
    pub(crate) fn take(&mut self, key: &'static str) -> Option<&'a Value> {
        self.taken.push(key);
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub(crate) fn finish(self) -> Result<(), ConfigError> {
        let unknown = self
            .map
            .keys()
            .filter(|k| !self.taken.contains(&k.as_str()))
            .min();
        match unknown {
            None => Ok(()),
            Some(key) => {
                let mut allowed = self.taken.clone();
                allowed.sort_unstable();
                Err(ConfigError::UnknownField {
                    field: if self.path.is_empty() {
                        key.clone()
                    } else {
                        format!("{}.{}", self.path, key)
                    },
                    allowed: allowed.join(", "),
                })
            }
        }
    }
}

pub(crate) fn string_list(field: &str, value: &Value) -> Result<Vec<String>, ConfigError> {
    let items = value
        .as_array()
        .ok_or_else(|| ConfigError::invalid(field, value, "a list of strings"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, v)| non_empty_string(&format!("{field}[{i}]"), v))
        .collect()
}

/// A list of name globs (`*` matches any run of characters).
pub(crate) fn glob_list(field: &str, value: &Value) -> Result<Vec<Glob>, ConfigError> {
    Ok(string_list(field, value)?
        .iter()
        .map(|p| Glob::new(p))
        .collect())
}

/// Server-name globs (`servers` behind Envoy's `mcp_router`): an empty list would name no
/// server, so an entry holding it would never apply; leaving the field out means every server.
pub(crate) fn server_globs(field: &str, value: &Value) -> Result<Vec<Glob>, ConfigError> {
    let globs = glob_list(field, value)?;
    if globs.is_empty() {
        return Err(ConfigError::invalid(
            field,
            value,
            "a non-empty list of server names or `*` globs (leave the field out for every server)",
        ));
    }
    Ok(globs)
}

pub(crate) fn boolean(field: &str, value: &Value) -> Result<bool, ConfigError> {
    value
        .as_bool()
        .ok_or_else(|| ConfigError::invalid(field, value, "true or false"))
}

pub(crate) fn non_empty_string(field: &str, value: &Value) -> Result<String, ConfigError> {
    match value.as_str() {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        _ => Err(ConfigError::invalid(field, value, "a non-empty string")),
    }
}

pub(crate) fn tool_name(field: &str, value: &Value) -> Result<String, ConfigError> {
    let name = non_empty_string(field, value)?;
    let legal = name.len() <= MAX_TOOL_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if legal {
        Ok(name)
    } else {
        Err(ConfigError::invalid(
            field,
            value,
            "a tool name of 1 to 64 characters from A-Z, a-z, 0-9, '_', '-', '.'",
        ))
    }
}

/// The longest duration most fields take: a wait or an interval longer than ten minutes is a
/// mistake an operator wants to hear about at load.
const MAX_DURATION_MS: u64 = 600_000;

/// A duration as Envoy writes them (`"5s"`, `"250ms"`, `"1.5s"`) or a number of milliseconds,
/// from 1 ms to ten minutes.
pub(crate) fn duration_ms(field: &str, value: &Value) -> Result<u64, ConfigError> {
    duration_ms_within(field, value, MAX_DURATION_MS)
}

/// A duration from 1 ms to `max_ms`.
pub(crate) fn duration_ms_within(
    field: &str,
    value: &Value,
    max_ms: u64,
) -> Result<u64, ConfigError> {
    let ms = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => {
            let s = s.trim();
            if let Some(ms) = s.strip_suffix("ms") {
                ms.trim().parse::<f64>().ok()
            } else if let Some(secs) = s.strip_suffix('s') {
                secs.trim().parse::<f64>().ok().map(|x| x * 1000.0)
            } else {
                None
            }
        }
        _ => None,
    };
    match ms {
        Some(ms) if ms.is_finite() && (1.0..=max_ms as f64).contains(&ms) => Ok(ms as u64),
        _ => Err(ConfigError::invalid(
            field,
            value,
            &format!(
                "a duration from 1ms to {}s, such as \"5s\" or \"250ms\"",
                max_ms / 1000
            ),
        )),
    }
}

/// An object of header name to value: names lowercased, never a pseudo-header.
pub(crate) fn header_map(field: &str, value: &Value) -> Result<Vec<(String, String)>, ConfigError> {
    let map = value
        .as_object()
        .ok_or_else(|| ConfigError::invalid(field, value, "an object of header name to value"))?;
    let mut headers = Vec::new();
    for (name, value) in map {
        let entry = format!("{field}.{name}");
        let value = value
            .as_str()
            .ok_or_else(|| ConfigError::invalid(&entry, value, "a string"))?;
        if !is_header_name(name) {
            return Err(ConfigError::invalid(
                &entry,
                &Value::String(name.clone()),
                "a regular header name",
            ));
        }
        headers.push((name.to_ascii_lowercase(), value.to_string()));
    }
    Ok(headers)
}

/// An HTTP field name (RFC 9110 §5.1 token), never a pseudo-header.
pub(crate) fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'\''
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'`'
                        | b'|'
                        | b'~'
                )
        })
}

pub(crate) fn integer(field: &str, value: &Value, min: u64, max: u64) -> Result<u64, ConfigError> {
    match value.as_u64() {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(ConfigError::invalid(
            field,
            value,
            &format!("an integer from {min} to {max}"),
        )),
    }
}

pub(crate) fn weight(field: &str, value: &Value) -> Result<f32, ConfigError> {
    match value.as_f64() {
        Some(w) if w.is_finite() && (0.0..=100.0).contains(&w) => Ok(w as f32),
        _ => Err(ConfigError::invalid(field, value, "a number from 0 to 100")),
    }
}

/// Why a configuration was refused. Each message is one line an operator can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    Syntax {
        message: String,
    },
    Invalid {
        field: String,
        found: String,
        allowed: String,
    },
    Missing {
        field: String,
        allowed: String,
    },
    UnknownField {
        field: String,
        allowed: String,
    },
    Duplicate {
        field: String,
        what: String,
    },
}

impl ConfigError {
    pub(crate) fn invalid(field: &str, found: &Value, allowed: &str) -> Self {
        let mut found = found.to_string();
        if found.len() > 80 {
            let cut = (0..=77)
                .rev()
                .find(|&i| found.is_char_boundary(i))
                .unwrap_or(0);
            found.truncate(cut);
            found.push_str("...");
        }
        ConfigError::Invalid {
            field: field.to_string(),
            found,
            allowed: allowed.to_string(),
        }
    }

    pub(crate) fn missing(field: &str, allowed: &str) -> Self {
        ConfigError::Missing {
            field: field.to_string(),
            allowed: allowed.to_string(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Syntax { message } => {
                write!(f, "plugin configuration is not valid JSON: {message}")
            }
            ConfigError::Invalid {
                field,
                found,
                allowed,
            } => write!(
                f,
                "plugin configuration field `{field}` is {found}; expected {allowed}"
            ),
            ConfigError::Missing { field, allowed } => write!(
                f,
                "plugin configuration field `{field}` is missing; expected {allowed}"
            ),
            ConfigError::UnknownField { field, allowed } => write!(
                f,
                "plugin configuration field `{field}` is not known; allowed here: {allowed}"
            ),
            ConfigError::Duplicate { field, what } => write!(
                f,
                "plugin configuration field `{field}` repeats the setting for {what}"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}
