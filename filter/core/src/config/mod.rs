//! The plugin configuration: Envoy hands it to `on_configure` as one JSON string (the Wasm
//! filter's `configuration` field). Parsed by hand rather than with `#[derive(Deserialize)]` so
//! that every error names the full field path, the value found and what is allowed: an operator
//! reads it in Envoy's log and must be able to fix the YAML from that line alone.
//!
//! Measured against `serde` derive with `serde_path_to_error`: that version grew the `.wasm` by
//! 64 KB (+8.9%) and the parser by 62 lines, gave vaguer messages (`expected a list` with no
//! item shape, `expected string or map` for an enum) only after rewriting serde's error text,
//! and silently accepted a struct written as an array (`"weights": [1, 2, 3]`).

pub mod catalog;
pub mod code;
pub mod disclosure;
pub mod entries;
pub(crate) mod glob;
mod insights;
pub mod metadata;
pub mod paths;
pub mod policy;
mod read;
pub mod routing;
mod search;

pub use insights::InsightsConfig;
pub use read::ConfigError;
use read::{boolean, integer, non_empty_string, string_list, Object};
use search::parse_search;
pub use search::{
    EmbeddingsConfig, FieldWeights, Ranking, ResultFormat, SearchConfig, TermRules, Tuning,
    DEFAULT_HYBRID_VECTOR_WEIGHT,
};

use crate::config::glob::Glob;
use serde_json::Value;

pub const DEFAULT_MCP_PATH: &str = "/mcp";
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 * 1024 * 1024;
/// Envoy's own buffer limits must stay above our cap, and a Wasm VM's linear memory tops out at
/// 4 GiB; 256 MiB is far above any sane tool list and keeps a typo from exhausting the VM.
pub const MAX_BODY_BYTES_LIMIT: usize = 256 * 1024 * 1024;

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

/// Explicit settings for one tool (optionally only in one namespace).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSetting {
    pub name: String,
    pub namespace: Option<String>,
    pub disclosure_mode: Option<DisclosureMode>,
    pub group: Option<String>,
    /// A precomputed vector, finite, of `search.embeddings.dimensions`, normalized on load.
    pub embedding: Option<Vec<f32>>,
}

/// What the filter does to listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Hide progressive tools behind the search tool.
    Search,
    /// List every tool the caller may use: no rewriting beyond authorization (a kill switch).
    List,
    /// Search behaviour only when the caller may use more tools than `search_threshold`.
    Auto,
    /// Progressive tools hidden behind one tool that runs an agent's script against the
    /// catalog (`code`); no search tool. Only in the code-mode module.
    Code,
}

/// Whether this build runs scripts (the code-mode module, `mcp_tool_search_code.wasm`).
pub const RUNS_SCRIPTS: bool = cfg!(feature = "code-mode");

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub mcp_paths: Vec<String>,
    pub default_disclosure_mode: DisclosureMode,
    pub eager_patterns: Vec<Glob>,
    pub tools: Vec<ToolSetting>,
    /// Per namespace or server, after `tools` and `eager_patterns`, before the default.
    pub disclosure_defaults: Vec<disclosure::DisclosureDefault>,
    pub search: SearchConfig,
    pub max_body_bytes: usize,
    /// Hold request headers until the body is classified. Needs Envoy's
    /// `allow_on_headers_stop_iteration: true` on the Wasm plugin (Envoy 1.35+): without it
    /// Envoy turns a paused header callback into StopAllIteration and never shows the body.
    pub hold_request_headers: bool,
    pub mode: Mode,
    pub search_threshold: usize,
    /// Groups from names: the part before the first separator (`github_create_issue` with
    /// `_` is in `github`). `None`: a tool's group is its namespace.
    pub group_separator: Option<String>,
    pub authorization: Option<crate::config::policy::Policy>,
    pub catalog: catalog::CatalogConfig,
    /// How `prompts/list` and `resources/list` (with `resources/templates/list`) are answered:
    /// `Eager`, as the upstream sent them (the default); `Progressive`, empty, the entries found
    /// through the search tool's `type`.
    pub prompts_disclosure: DisclosureMode,
    pub resources_disclosure: DisclosureMode,
    /// Code mode's tool and limits (`mode: "code"`).
    pub code: code::CodeConfig,
}

pub const DEFAULT_SEARCH_THRESHOLD: usize = 40;

impl Default for Config {
    fn default() -> Self {
        Config {
            mcp_paths: vec![DEFAULT_MCP_PATH.to_string()],
            default_disclosure_mode: DisclosureMode::Progressive,
            eager_patterns: Vec::new(),
            tools: Vec::new(),
            disclosure_defaults: Vec::new(),
            search: SearchConfig::default(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            hold_request_headers: false,
            mode: Mode::Search,
            search_threshold: DEFAULT_SEARCH_THRESHOLD,
            group_separator: None,
            authorization: None,
            prompts_disclosure: DisclosureMode::Eager,
            resources_disclosure: DisclosureMode::Eager,
            catalog: catalog::CatalogConfig::default(),
            code: code::CodeConfig::default(),
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
        let mut first_mcp_path = DEFAULT_MCP_PATH.to_string();
        if let Some(v) = obj.take("mcp_paths") {
            config.mcp_paths = parse_paths("mcp_paths", v)?;
            if let Some(first) = v.as_array().and_then(|a| a.first()).and_then(Value::as_str) {
                first_mcp_path = first.to_string();
            }
        }
        if let Some(v) = obj.take("default_disclosure_mode") {
            config.default_disclosure_mode = DisclosureMode::parse("default_disclosure_mode", v)?;
        }
        for (key, slot) in [
            ("prompts", &mut config.prompts_disclosure),
            ("resources", &mut config.resources_disclosure),
        ] {
            if let Some(v) = obj.take(key) {
                let mut kind = Object::new(key, v)?;
                if let Some(mode) = kind.take("disclosure_mode") {
                    *slot = DisclosureMode::parse(&format!("{key}.disclosure_mode"), mode)?;
                }
                kind.finish()?;
            }
        }
        if let Some(v) = obj.take("eager_patterns") {
            config.eager_patterns = string_list("eager_patterns", v)?
                .into_iter()
                .map(|p| Glob::new(&p))
                .collect();
        }
        if let Some(v) = obj.take("search") {
            config.search = parse_search(v)?;
        }
        if let Some(v) = obj.take("tools") {
            config.tools = parse_tools(v, config.search.embeddings.as_ref())?;
        }
        if let Some(v) = obj.take("mode") {
            config.mode = match v.as_str() {
                Some("search") => Mode::Search,
                Some("list") => Mode::List,
                Some("auto") => Mode::Auto,
                Some("code") if RUNS_SCRIPTS => Mode::Code,
                Some("code") => return Err(ConfigError::invalid(
                    "mode",
                    v,
                    "\"search\", \"list\" or \"auto\"; \"code\" only in mcp_tool_search_code.wasm",
                )),
                _ => {
                    return Err(ConfigError::invalid(
                        "mode",
                        v,
                        if RUNS_SCRIPTS {
                            "\"search\", \"list\", \"auto\" or \"code\""
                        } else {
                            "\"search\", \"list\" or \"auto\""
                        },
                    ))
                }
            };
        }
        if let Some(v) = obj.take("code") {
            config.code = code::parse(v)?;
        }
        if let Some(v) = obj.take("search_threshold") {
            let n = integer("search_threshold", v, 0, 1_000_000)?;
            config.search_threshold = usize::try_from(n).unwrap_or(DEFAULT_SEARCH_THRESHOLD);
        }
        if let Some(v) = obj.take("group_separator") {
            config.group_separator = Some(non_empty_string("group_separator", v)?);
        }
        if let Some(v) = obj.take("disclosure_defaults") {
            config.disclosure_defaults = disclosure::parse(v, config.group_separator.as_deref())?;
        }
        if let Some(v) = obj.take("authorization") {
            config.authorization = Some(crate::config::policy::Policy::parse(v)?);
        }
        if let Some(v) = obj.take("max_body_bytes") {
            let n = integer("max_body_bytes", v, 1024, MAX_BODY_BYTES_LIMIT as u64)?;
            config.max_body_bytes = usize::try_from(n).unwrap_or(DEFAULT_MAX_BODY_BYTES);
        }
        if let Some(v) = obj.take("hold_request_headers") {
            config.hold_request_headers = boolean("hold_request_headers", v)?;
        }
        config.catalog = match obj.take("catalog") {
            Some(v) => catalog::parse(v, &first_mcp_path)?,
            None => catalog::CatalogConfig {
                path: first_mcp_path,
                ..catalog::CatalogConfig::default()
            },
        };
        obj.finish()?;
        if let Some(policy) = config.authorization.as_mut() {
            if let Some(i) = policy.rules.iter().position(|r| r.servers.is_some()) {
                let Some(separator) = config.group_separator.clone() else {
                    return Err(ConfigError::missing(
                        "group_separator",
                        &format!(
                            "the separator between server and tool names, \"__\" behind Envoy's \
                             mcp_router, since `authorization.rules[{i}].servers` names servers"
                        ),
                    ));
                };
                policy.server_separator = Some(separator);
            }
        }
        Ok(config)
    }

    /// A tool's disclosure mode: its explicit setting (namespace-specific first), else the first
    /// eager pattern it matches, else the default.
    /// How a kind of entry is listed (tools: the default mode; a tool's own is
    /// `disclosure_mode`).
    pub fn entry_disclosure(&self, entry: entries::Entry) -> DisclosureMode {
        match entry {
            entries::Entry::Tool => self.default_disclosure_mode,
            entries::Entry::Prompt => self.prompts_disclosure,
            entries::Entry::Resource | entries::Entry::ResourceTemplate => {
                self.resources_disclosure
            }
        }
    }

    pub fn disclosure_mode(&self, namespace: &str, tool_name: &str) -> DisclosureMode {
        if let Some(mode) = self
            .tool_setting(namespace, tool_name)
            .and_then(|t| t.disclosure_mode)
        {
            return mode;
        }
        if self.eager_patterns.iter().any(|g| g.matches(tool_name)) {
            return DisclosureMode::Eager;
        }
        let separator = self.group_separator.as_deref();
        self.disclosure_defaults
            .iter()
            .find(|d| d.applies(namespace, tool_name, separator))
            .map_or(self.default_disclosure_mode, |d| d.disclosure_mode)
    }

    /// A tool's explicit settings: the namespace-specific entry first, then the general one.
    pub fn tool_setting(&self, namespace: &str, tool_name: &str) -> Option<&ToolSetting> {
        let find = |ns: Option<&str>| {
            self.tools
                .iter()
                .find(|t| t.name == tool_name && t.namespace.as_deref() == ns)
        };
        find(Some(namespace)).or_else(|| find(None))
    }

    /// A tool's group: set in its settings, else from its name, else its namespace.
    pub fn group_of(&self, namespace: &str, tool_name: &str) -> String {
        if let Some(group) = self
            .tool_setting(namespace, tool_name)
            .and_then(|t| t.group.clone())
        {
            return group;
        }
        match &self.group_separator {
            Some(sep) => match tool_name.split_once(sep.as_str()) {
                Some((prefix, _)) if !prefix.is_empty() => prefix.to_string(),
                _ => tool_name.to_string(),
            },
            None => namespace.to_string(),
        }
    }

    /// Whether a request whose path has these forms (`paths::candidates` of the `:path` as
    /// sent) reaches an MCP endpoint on some server: any form is an MCP path or lies under one
    /// (routers that mount the endpoint also serve `/mcp/anything`).
    pub fn is_mcp_path(&self, forms: &[String]) -> bool {
        self.mcp_paths.iter().any(|p| {
            forms.iter().any(|form| {
                form == p
                    || form
                        .strip_prefix(p.as_str())
                        .is_some_and(|rest| rest.starts_with('/') || p == "/")
            })
        })
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
    // Stored in the form requests are compared in, so that no request normalizes them again.
    Ok(paths.iter().map(|p| paths::normalize(p)).collect())
}

fn parse_tools(
    value: &Value,
    embeddings: Option<&EmbeddingsConfig>,
) -> Result<Vec<ToolSetting>, ConfigError> {
    let Some(items) = value.as_array() else {
        return Err(ConfigError::invalid(
            "tools",
            value,
            "a list of {\"name\", \"namespace\"?, \"disclosure_mode\"?, \"group\"?, \"embedding\"?} objects",
        ));
    };
    let mut tools: Vec<ToolSetting> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let path = format!("tools[{i}]");
        let mut obj = Object::new(&path, item)?;
        let name = match obj.take("name") {
            // The upstream's name as it spells it: MCP allows 1 to 128 characters and suggests
            // a charset it does not require (spec 2025-11-25 "Tool names"), and Envoy's
            // mcp_router prefixes each server's names; the filter only compares them exactly.
            Some(v) => non_empty_string(&format!("{path}.name"), v)?,
            None => {
                return Err(ConfigError::missing(
                    &format!("{path}.name"),
                    "the tool's name",
                ))
            }
        };
        let namespace = obj
            .take("namespace")
            .map(|v| non_empty_string(&format!("{path}.namespace"), v))
            .transpose()?;
        let disclosure_mode = obj
            .take("disclosure_mode")
            .map(|v| DisclosureMode::parse(&format!("{path}.disclosure_mode"), v))
            .transpose()?;
        let group = obj
            .take("group")
            .map(|v| non_empty_string(&format!("{path}.group"), v))
            .transpose()?;
        let embedding = obj
            .take("embedding")
            .map(|v| parse_embedding(&format!("{path}.embedding"), v, embeddings))
            .transpose()?;
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
            group,
            embedding,
        });
    }
    Ok(tools)
}

/// A precomputed tool vector: finite, of the configured dimensions; normalized here.
fn parse_embedding(
    field: &str,
    value: &Value,
    embeddings: Option<&EmbeddingsConfig>,
) -> Result<Vec<f32>, ConfigError> {
    let Some(config) = embeddings else {
        return Err(ConfigError::invalid(
            field,
            value,
            "no embedding: a precomputed vector needs a `search.embeddings` block (for its dimensions)",
        ));
    };
    let want = format!("a list of {} finite numbers", config.dimensions);
    let items = value
        .as_array()
        .ok_or_else(|| ConfigError::invalid(field, value, &want))?;
    let mut vector = Vec::with_capacity(items.len());
    for item in items {
        match item.as_f64() {
            Some(x) if x.is_finite() && (x as f32).is_finite() => vector.push(x as f32),
            _ => return Err(ConfigError::invalid(field, item, &want)),
        }
    }
    if vector.len() != config.dimensions {
        return Err(ConfigError::invalid(
            field,
            &Value::String(format!("a list of {} numbers", vector.len())),
            &want,
        ));
    }
    crate::vector::normalize(&mut vector).ok_or_else(|| {
        ConfigError::invalid(
            field,
            &Value::String("a zero vector".into()),
            "a non-zero vector",
        )
    })?;
    Ok(vector)
}

#[cfg(test)]
mod tests;
