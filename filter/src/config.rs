//! The plugin configuration: Envoy hands it to `on_configure` as one JSON string (the Wasm
//! filter's `configuration` field). Parsed by hand rather than with `#[derive(Deserialize)]` so
//! that every error names the full field path, the value found and what is allowed: an operator
//! reads it in Envoy's log and must be able to fix the YAML from that line alone.

use crate::glob::Glob;
use serde_json::{Map, Value};
use std::fmt;

pub const DEFAULT_MCP_PATH: &str = "/mcp";
pub const DEFAULT_SEARCH_TOOL_NAME: &str = "tool_search";
pub const DEFAULT_MAX_RESULTS: u32 = 5;
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// Envoy's own buffer limits must stay above our cap, and a Wasm VM's linear memory tops out at
/// 4 GiB; 256 MiB is far above any sane tool list and keeps a typo from exhausting the VM.
pub const MAX_BODY_BYTES_LIMIT: usize = 256 * 1024 * 1024;
/// MCP tool names are at most 128 characters (spec 2025-11-25, "Tool names"); the search tool
/// is ours, so we hold it to the conservative 64 that every client accepts.
const MAX_TOOL_NAME_LEN: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DisclosureMode {
    /// Listed in `tools/list` as the upstream declared it.
    Eager,
    /// Hidden from `tools/list`; found through the search tool.
    Progressive,
}

impl DisclosureMode {
    fn parse(path: &str, value: &Value) -> Result<Self, ConfigError> {
        match value.as_str() {
            Some("EAGER") => Ok(DisclosureMode::Eager),
            Some("PROGRESSIVE") => Ok(DisclosureMode::Progressive),
            _ => Err(ConfigError::invalid(
                path,
                value,
                "\"PROGRESSIVE\" or \"EAGER\"",
            )),
        }
    }
}

/// An explicit disclosure setting for one tool (optionally only in one namespace).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSetting {
    pub name: String,
    pub namespace: Option<String>,
    pub disclosure_mode: DisclosureMode,
}

/// How much each field of a tool counts in BM25 (a term found in the name counts `name` times).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldWeights {
    pub name: f32,
    pub description: f32,
    pub input_schema: f32,
}

impl Default for FieldWeights {
    fn default() -> Self {
        // The name says what a tool does in the fewest words; argument names describe how to
        // call it, not what for, and would drown intent when indexed by default.
        FieldWeights {
            name: 2.0,
            description: 1.0,
            input_schema: 0.0,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SearchConfig {
    pub tool_name: String,
    pub max_allowable_results: u32,
    pub weights: FieldWeights,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            tool_name: DEFAULT_SEARCH_TOOL_NAME.to_string(),
            max_allowable_results: DEFAULT_MAX_RESULTS,
            weights: FieldWeights::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub mcp_paths: Vec<String>,
    pub default_disclosure_mode: DisclosureMode,
    pub eager_patterns: Vec<Glob>,
    pub tools: Vec<ToolSetting>,
    pub search: SearchConfig,
    pub max_body_bytes: usize,
    /// Hold request headers until the body is classified. Needs Envoy's
    /// `allow_on_headers_stop_iteration: true` on the Wasm plugin (Envoy 1.35+): without it
    /// Envoy turns a paused header callback into StopAllIteration and never shows the body.
    pub hold_request_headers: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mcp_paths: vec![DEFAULT_MCP_PATH.to_string()],
            default_disclosure_mode: DisclosureMode::Progressive,
            eager_patterns: Vec::new(),
            tools: Vec::new(),
            search: SearchConfig::default(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            hold_request_headers: false,
        }
    }
}

impl Config {
    /// Parses the plugin configuration. An empty string (no `configuration` in the Envoy YAML)
    /// means every default.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        if text.trim().is_empty() {
            return Ok(Config::default());
        }
        let root: Value = serde_json::from_str(text).map_err(|e| ConfigError::Syntax {
            message: e.to_string(),
        })?;
        let mut obj = Object::new("", &root)?;
        let mut config = Config::default();
        if let Some(v) = obj.take("mcp_paths") {
            config.mcp_paths = parse_paths("mcp_paths", v)?;
        }
        if let Some(v) = obj.take("default_disclosure_mode") {
            config.default_disclosure_mode = DisclosureMode::parse("default_disclosure_mode", v)?;
        }
        if let Some(v) = obj.take("eager_patterns") {
            config.eager_patterns = string_list("eager_patterns", v)?
                .into_iter()
                .map(|p| Glob::new(&p))
                .collect();
        }
        if let Some(v) = obj.take("tools") {
            config.tools = parse_tools(v)?;
        }
        if let Some(v) = obj.take("search") {
            config.search = parse_search(v)?;
        }
        if let Some(v) = obj.take("max_body_bytes") {
            let n = integer("max_body_bytes", v, 1024, MAX_BODY_BYTES_LIMIT as u64)?;
            config.max_body_bytes = usize::try_from(n).unwrap_or(DEFAULT_MAX_BODY_BYTES);
        }
        if let Some(v) = obj.take("hold_request_headers") {
            config.hold_request_headers = v
                .as_bool()
                .ok_or_else(|| ConfigError::invalid("hold_request_headers", v, "true or false"))?;
        }
        obj.finish()?;
        Ok(config)
    }

    /// A tool's disclosure mode: its explicit setting (namespace-specific first), else the first
    /// eager pattern it matches, else the default (DESIGN.md §3).
    pub fn disclosure_mode(&self, namespace: &str, tool_name: &str) -> DisclosureMode {
        let setting = |ns: Option<&str>| {
            self.tools
                .iter()
                .find(|t| t.name == tool_name && t.namespace.as_deref() == ns)
        };
        if let Some(setting) = setting(Some(namespace)).or_else(|| setting(None)) {
            return setting.disclosure_mode;
        }
        if self.eager_patterns.iter().any(|g| g.matches(tool_name)) {
            return DisclosureMode::Eager;
        }
        self.default_disclosure_mode
    }

    pub fn is_mcp_path(&self, path: &str) -> bool {
        self.mcp_paths.iter().any(|p| p == path)
    }
}

fn parse_paths(field: &str, value: &Value) -> Result<Vec<String>, ConfigError> {
    let paths = string_list(field, value)?;
    if paths.is_empty() {
        return Err(ConfigError::invalid(
            field,
            value,
            "a non-empty list of absolute paths such as [\"/mcp\"]",
        ));
    }
    for (i, p) in paths.iter().enumerate() {
        if !p.starts_with('/') || p.contains('?') || p.contains('#') {
            return Err(ConfigError::invalid(
                &format!("{field}[{i}]"),
                &Value::String(p.clone()),
                "an absolute path starting with '/' without query or fragment",
            ));
        }
    }
    Ok(paths)
}

fn parse_tools(value: &Value) -> Result<Vec<ToolSetting>, ConfigError> {
    let Some(items) = value.as_array() else {
        return Err(ConfigError::invalid(
            "tools",
            value,
            "a list of {\"name\", \"namespace\"?, \"disclosure_mode\"} objects",
        ));
    };
    let mut tools: Vec<ToolSetting> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("tools[{i}]");
        let mut obj = Object::new(&path, item)?;
        let name = match obj.take("name") {
            Some(v) => tool_name(&format!("{path}.name"), v)?,
            None => {
                return Err(ConfigError::missing(
                    &format!("{path}.name"),
                    "the tool's name",
                ))
            }
        };
        let namespace = match obj.take("namespace") {
            Some(v) => Some(non_empty_string(&format!("{path}.namespace"), v)?),
            None => None,
        };
        let disclosure_mode = match obj.take("disclosure_mode") {
            Some(v) => DisclosureMode::parse(&format!("{path}.disclosure_mode"), v)?,
            None => {
                return Err(ConfigError::missing(
                    &format!("{path}.disclosure_mode"),
                    "\"PROGRESSIVE\" or \"EAGER\"",
                ))
            }
        };
        obj.finish()?;
        if tools
            .iter()
            .any(|t| t.name == name && t.namespace == namespace)
        {
            return Err(ConfigError::Duplicate {
                field: path,
                what: format!(
                    "tool {name:?}{}",
                    namespace
                        .as_deref()
                        .map(|n| format!(" in namespace {n:?}"))
                        .unwrap_or_default()
                ),
            });
        }
        tools.push(ToolSetting {
            name,
            namespace,
            disclosure_mode,
        });
    }
    Ok(tools)
}

fn parse_search(value: &Value) -> Result<SearchConfig, ConfigError> {
    let mut obj = Object::new("search", value)?;
    let mut search = SearchConfig::default();
    if let Some(v) = obj.take("tool_name") {
        search.tool_name = tool_name("search.tool_name", v)?;
    }
    if let Some(v) = obj.take("max_allowable_results") {
        let n = integer("search.max_allowable_results", v, 1, 100)?;
        search.max_allowable_results = u32::try_from(n).unwrap_or(DEFAULT_MAX_RESULTS);
    }
    if let Some(v) = obj.take("weights") {
        let mut w = Object::new("search.weights", v)?;
        if let Some(v) = w.take("name") {
            search.weights.name = weight("search.weights.name", v)?;
        }
        if let Some(v) = w.take("description") {
            search.weights.description = weight("search.weights.description", v)?;
        }
        if let Some(v) = w.take("input_schema") {
            search.weights.input_schema = weight("search.weights.input_schema", v)?;
        }
        w.finish()?;
        let ws = search.weights;
        if ws.name + ws.description + ws.input_schema <= 0.0 {
            return Err(ConfigError::invalid(
                "search.weights",
                v,
                "at least one weight above 0 (nothing would be indexed)",
            ));
        }
    }
    obj.finish()?;
    Ok(search)
}

/// A JSON object being read field by field; `finish` rejects what was not taken.
struct Object<'a> {
    path: String,
    map: &'a Map<String, Value>,
    taken: Vec<&'static str>,
}

impl<'a> Object<'a> {
    fn new(path: &str, value: &'a Value) -> Result<Self, ConfigError> {
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
    fn take(&mut self, key: &'static str) -> Option<&'a Value> {
        self.taken.push(key);
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn finish(self) -> Result<(), ConfigError> {
        let mut unknown: Vec<&String> = self
            .map
            .keys()
            .filter(|k| !self.taken.contains(&k.as_str()))
            .collect();
        unknown.sort();
        match unknown.first() {
            None => Ok(()),
            Some(key) => {
                let mut allowed = self.taken.clone();
                allowed.sort_unstable();
                Err(ConfigError::UnknownField {
                    field: if self.path.is_empty() {
                        (*key).clone()
                    } else {
                        format!("{}.{}", self.path, key)
                    },
                    allowed: allowed.join(", "),
                })
            }
        }
    }
}

fn string_list(field: &str, value: &Value) -> Result<Vec<String>, ConfigError> {
    let items = value
        .as_array()
        .ok_or_else(|| ConfigError::invalid(field, value, "a list of strings"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, v)| non_empty_string(&format!("{field}[{i}]"), v))
        .collect()
}

fn non_empty_string(field: &str, value: &Value) -> Result<String, ConfigError> {
    match value.as_str() {
        Some(s) if !s.is_empty() => Ok(s.to_string()),
        _ => Err(ConfigError::invalid(field, value, "a non-empty string")),
    }
}

fn tool_name(field: &str, value: &Value) -> Result<String, ConfigError> {
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

fn integer(field: &str, value: &Value, min: u64, max: u64) -> Result<u64, ConfigError> {
    match value.as_u64() {
        Some(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(ConfigError::invalid(
            field,
            value,
            &format!("an integer from {min} to {max}"),
        )),
    }
}

fn weight(field: &str, value: &Value) -> Result<f32, ConfigError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_means_defaults() {
        let c = Config::parse("").unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(Config::parse("{}").unwrap(), Config::default());
        assert_eq!(c.mcp_paths, vec!["/mcp"]);
        assert_eq!(c.search.tool_name, "tool_search");
        assert_eq!(c.search.max_allowable_results, 5);
        assert_eq!(c.max_body_bytes, 8 * 1024 * 1024);
        assert_eq!(c.default_disclosure_mode, DisclosureMode::Progressive);
    }

    #[test]
    fn full_config() {
        let c = Config::parse(
            r#"{"mcp_paths":["/mcp","/v2/mcp"],"default_disclosure_mode":"EAGER",
                "eager_patterns":["github_get_*"],
                "tools":[{"name":"a","disclosure_mode":"PROGRESSIVE"},
                         {"name":"a","namespace":"ns2","disclosure_mode":"EAGER"}],
                "search":{"tool_name":"find_tools","max_allowable_results":10,
                          "weights":{"name":3,"description":1,"input_schema":0.5}},
                "max_body_bytes":1048576,"hold_request_headers":true}"#,
        )
        .unwrap();
        assert!(c.is_mcp_path("/v2/mcp"));
        assert!(!c.is_mcp_path("/v2/mcp/"));
        assert_eq!(c.search.tool_name, "find_tools");
        assert!(c.hold_request_headers);
        assert_eq!(c.search.weights.input_schema, 0.5);
        assert_eq!(c.disclosure_mode("ns1", "a"), DisclosureMode::Progressive);
        assert_eq!(c.disclosure_mode("ns2", "a"), DisclosureMode::Eager);
        assert_eq!(c.disclosure_mode("ns1", "b"), DisclosureMode::Eager);
    }

    #[test]
    fn disclosure_precedence() {
        let c = Config::parse(
            r#"{"eager_patterns":["github_*"],
                "tools":[{"name":"github_delete_repo","disclosure_mode":"PROGRESSIVE"}]}"#,
        )
        .unwrap();
        assert_eq!(
            c.disclosure_mode("x", "github_get_issue"),
            DisclosureMode::Eager
        );
        assert_eq!(
            c.disclosure_mode("x", "github_delete_repo"),
            DisclosureMode::Progressive
        );
        assert_eq!(
            c.disclosure_mode("x", "slack_post"),
            DisclosureMode::Progressive
        );
    }

    fn error(text: &str) -> String {
        Config::parse(text).unwrap_err().to_string()
    }

    #[test]
    fn errors_name_field_value_and_allowed() {
        assert_eq!(
            error(r#"{"default_disclosure_mode":"LAZY"}"#),
            "plugin configuration field `default_disclosure_mode` is \"LAZY\"; expected \"PROGRESSIVE\" or \"EAGER\""
        );
        assert_eq!(
            error(r#"{"search":{"max_allowable_results":0}}"#),
            "plugin configuration field `search.max_allowable_results` is 0; expected an integer from 1 to 100"
        );
        assert_eq!(
            error(r#"{"search":{"max_results":3}}"#),
            "plugin configuration field `search.max_results` is not known; allowed here: max_allowable_results, tool_name, weights"
        );
        assert_eq!(
            error(r#"{"tools":[{"name":"x"}]}"#),
            "plugin configuration field `tools[0].disclosure_mode` is missing; expected \"PROGRESSIVE\" or \"EAGER\""
        );
        assert!(error(r#"{"mcp_paths":["mcp"]}"#).contains("`mcp_paths[0]` is \"mcp\""));
        assert!(error(r#"{"mcp_paths":[]}"#).contains("non-empty list"));
        assert!(error(r#"{"search":{"tool_name":"has space"}}"#).contains("`search.tool_name`"));
        assert!(error(r#"{"max_body_bytes":-1}"#).contains("`max_body_bytes` is -1"));
        assert!(
            error(r#"{"search":{"weights":{"name":0,"description":0}}}"#)
                .contains("at least one weight above 0")
        );
        assert!(error(r#"{"tools":[{"name":"a","disclosure_mode":"EAGER"},{"name":"a","disclosure_mode":"EAGER"}]}"#)
            .contains("repeats"));
        assert!(error("{").starts_with("plugin configuration is not valid JSON"));
        assert!(error("[]").contains("`(root)` is []; expected a JSON object"));
        assert!(error(r#"{"bogus":1}"#).contains("`bogus` is not known"));
        assert!(error(r#"{"hold_request_headers":"yes"}"#).contains("expected true or false"));
    }
}
