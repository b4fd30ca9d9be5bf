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
pub mod entries;
pub(crate) mod glob;
pub(crate) mod metadata;
pub mod paths;
pub mod policy;
mod read;
pub mod routing;

pub use read::ConfigError;
use read::{
    boolean, duration_ms, header_map, integer, non_empty_string, string_list, tool_name, weight,
    Object,
};

use crate::config::glob::Glob;
use serde_json::Value;

pub const DEFAULT_MCP_PATH: &str = "/mcp";
pub const DEFAULT_SEARCH_TOOL_NAME: &str = "tool_search";
pub const DEFAULT_MAX_RESULTS: u32 = 5;
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
}

/// How search results are given to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultFormat {
    /// The JSON array of full definitions.
    Definitions,
    /// One line per tool; `describe_tool` and `call_tool` are offered beside the search tool.
    Summary,
}

/// Which ranking answers a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ranking {
    #[default]
    Bm25,
    Vector,
    Hybrid,
}

impl Ranking {
    pub fn name(self) -> &'static str {
        match self {
            Ranking::Bm25 => "bm25",
            Ranking::Vector => "vector",
            Ranking::Hybrid => "hybrid",
        }
    }
}

/// An OpenAI-compatible embeddings service behind an Envoy cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingsConfig {
    pub cluster: String,
    pub model_id: String,
    pub path: String,
    pub authority: String,
    /// Each call that embeds tools (background: no one waits for it).
    pub timeout_ms: u64,
    /// Each call that embeds a search's query: a search waits for it.
    pub query_timeout_ms: u64,
    /// Consecutive query-embedding failures that open the circuit.
    pub circuit_failures: u32,
    pub dimensions: usize,
    pub max_batch_size: usize,
    pub headers: Vec<(String, String)>,
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
        // The name says what a tool does in the fewest words; arguments count for less (see
        // `DEFAULT_INPUT_SCHEMA_WEIGHT`).
        FieldWeights {
            name: 2.0,
            description: 1.0,
            input_schema: DEFAULT_INPUT_SCHEMA_WEIGHT,
        }
    }
}

/// Argument names and descriptions say much of what a real tool does ("attendees", "refund
/// reason: fraudulent"), but also repeat words every tool of a service shares ("owner",
/// "repo", "limit"): weighted at a quarter of a name, so that they find what only they name
/// without outranking a tool whose name and description say it. The best of 0 to 1 on the first
/// half of the schema set (`testdata/schema-tools`, README "Retrieval quality"); at 1 the plain
/// queries there lose to shared argument words.
pub const DEFAULT_INPUT_SCHEMA_WEIGHT: f32 = 0.5;

/// How BM25 scores and re-ranks, beyond the field weights. Not plugin configuration: the
/// defaults are the measured ones (README, "Retrieval quality"); the evaluation sets the others
/// to show what each change is worth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// BM25's term-frequency saturation.
    pub k1: f32,
    /// Length normalization per field: name, description (with title), input schema.
    pub b: [f32; 3],
    /// BM25F (each field normalized by its own length before the fields are combined) rather
    /// than one normalization by the weighted length of the whole tool.
    pub per_field: bool,
    /// Pseudo-relevance feedback: how many of the best tools lend terms (0: off).
    pub feedback_docs: usize,
    /// How many terms they lend.
    pub feedback_terms: usize,
    /// The lent terms' share of the score.
    pub feedback_weight: f32,
}

impl Default for Tuning {
    fn default() -> Self {
        // Chosen on the first half of the MetaTool queries (README, "Retrieval quality"). Tool
        // descriptions are one or two sentences written to say what the tool does, so a
        // longer one is not padded with other topics: no length normalization there (b 0),
        // and a term's repetition keeps counting (k1 8, near linear). Names keep the usual
        // normalization: a long name is a long list of words, each saying less.
        // Pseudo-relevance feedback measured within noise on that half (and below on the
        // held-out one and on the schema set) for a second pass over the postings: off.
        Tuning {
            k1: 8.0,
            b: [0.75, 0.0, 0.75],
            per_field: true,
            feedback_docs: 0,
            feedback_terms: 0,
            feedback_weight: 0.0,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SearchConfig {
    pub tool_name: String,
    pub max_allowable_results: u32,
    pub weights: FieldWeights,
    pub result_format: ResultFormat,
    /// Drop results whose normalized score is below this (see `Ranking` for the scales).
    pub score_threshold: Option<f32>,
    /// The plain-HTTP search endpoint (`POST`), and `<path>/health` (`GET`).
    pub http_path: Option<String>,
    /// The namespaces the HTTP endpoint (search, groups view, health) may read besides the
    /// route's own, sorted: another route's catalog sits behind that route's access control,
    /// which a request to this route never passed.
    pub http_namespaces: Vec<String>,
    pub ranking: Ranking,
    /// The weight of the vector ranking in hybrid fusion (the lexical one gets the rest).
    pub hybrid_vector_weight: f32,
    /// The longest the filter waits for a `tools/call` it makes for `call_tool` (when request
    /// headers are forwarded before the body is read).
    pub call_timeout_ms: u64,
    /// Answer `tools/list` requests that carry `params.query` (draft SEP-1821) with the tools
    /// that match; off, they reach the upstream as sent.
    pub list_query: bool,
    /// In vector and hybrid ranking, a tool BM25 does not match matches only when its cosine
    /// with the query reaches this (`None`: every tool matches).
    pub min_cosine: Option<f32>,
    pub embeddings: Option<EmbeddingsConfig>,
    /// Flat or hierarchical (groups first) search, and stage 1's limits.
    pub strategy: routing::Strategy,
    pub routing: routing::RoutingConfig,
    /// Scorer parameters (not read from the plugin configuration).
    pub tuning: Tuning,
}

pub const DEFAULT_HTTP_SEARCH_PATH: &str = "/mcp/search";
/// Chosen on the MetaTool set (README, "Retrieval quality"): BM25 is much weaker than
/// MiniLM there, so the fusion leans on the vectors.
pub const DEFAULT_HYBRID_VECTOR_WEIGHT: f32 = 0.75;
/// Chosen on the first half of the MetaTool queries with all-MiniLM-L6-v2: the highest floor
/// (in steps of 0.05) within 0.005 of hybrid NDCG@10 without one (`make eval EMBEDDINGS=1`
/// prints the derivation); see the README, "Semantic ranking".
pub const DEFAULT_MIN_COSINE: f32 = 0.25;
/// An agent waits for a query's embedding: all-MiniLM-L6-v2 embeds one short query in a few
/// milliseconds on a CPU, so a quarter second covers a loaded sidecar and the network, and
/// stays well below what a tool call costs anyway.
pub const DEFAULT_QUERY_TIMEOUT_MS: u64 = 250;
pub const DEFAULT_CIRCUIT_FAILURES: u32 = 3;
/// Tools may run for minutes (a slow report, a long search): five minutes, as Envoy's default
/// stream idle timeout.
pub const DEFAULT_CALL_TIMEOUT_MS: u64 = 300_000;

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            tool_name: DEFAULT_SEARCH_TOOL_NAME.to_string(),
            max_allowable_results: DEFAULT_MAX_RESULTS,
            weights: FieldWeights::default(),
            result_format: ResultFormat::Definitions,
            score_threshold: None,
            http_path: Some(DEFAULT_HTTP_SEARCH_PATH.to_string()),
            http_namespaces: Vec::new(),
            ranking: Ranking::Bm25,
            hybrid_vector_weight: DEFAULT_HYBRID_VECTOR_WEIGHT,
            min_cosine: Some(DEFAULT_MIN_COSINE),
            call_timeout_ms: DEFAULT_CALL_TIMEOUT_MS,
            list_query: true,
            embeddings: None,
            strategy: routing::Strategy::Flat,
            routing: routing::RoutingConfig::default(),
            tuning: Tuning::default(),
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
}

pub const DEFAULT_SEARCH_THRESHOLD: usize = 40;

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
            mode: Mode::Search,
            search_threshold: DEFAULT_SEARCH_THRESHOLD,
            group_separator: None,
            authorization: None,
            prompts_disclosure: DisclosureMode::Eager,
            resources_disclosure: DisclosureMode::Eager,
            catalog: catalog::CatalogConfig::default(),
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
                _ => {
                    return Err(ConfigError::invalid(
                        "mode",
                        v,
                        "\"search\", \"list\" or \"auto\"",
                    ))
                }
            };
        }
        if let Some(v) = obj.take("search_threshold") {
            let n = integer("search_threshold", v, 0, 1_000_000)?;
            config.search_threshold = usize::try_from(n).unwrap_or(DEFAULT_SEARCH_THRESHOLD);
        }
        if let Some(v) = obj.take("group_separator") {
            config.group_separator = Some(non_empty_string("group_separator", v)?);
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
        self.default_disclosure_mode
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
            Some(v) => tool_name(&format!("{path}.name"), v)?,
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
    if let Some(v) = obj.take("result_format") {
        search.result_format = match v.as_str() {
            Some("definitions") => ResultFormat::Definitions,
            Some("summary") => ResultFormat::Summary,
            _ => {
                return Err(ConfigError::invalid(
                    "search.result_format",
                    v,
                    "\"definitions\" or \"summary\"",
                ))
            }
        };
    }
    if let Some(v) = obj.take("score_threshold") {
        match v.as_f64() {
            Some(t) if t.is_finite() && (-1.0..=1.0).contains(&t) => {
                search.score_threshold = Some(t as f32)
            }
            _ => {
                return Err(ConfigError::invalid(
                    "search.score_threshold",
                    v,
                    "a number from -1 to 1 (normalized score; see the README)",
                ))
            }
        }
    }
    if let Some(v) = obj.take("http_path") {
        search.http_path = match v {
            Value::Bool(false) => None,
            _ => Some(parse_paths("search.http_path", &Value::Array(vec![v.clone()]))?.remove(0)),
        };
    }
    if let Some(v) = obj.take("http_namespaces") {
        search.http_namespaces = parse_http_namespaces(v)?;
    }
    if let Some(v) = obj.take("embeddings") {
        search.embeddings = Some(parse_embeddings(v)?);
        search.ranking = Ranking::Hybrid;
    }
    if let Some(v) = obj.take("ranking") {
        search.ranking = match v.as_str() {
            Some("bm25") => Ranking::Bm25,
            Some("vector") => Ranking::Vector,
            Some("hybrid") => Ranking::Hybrid,
            _ => {
                return Err(ConfigError::invalid(
                    "search.ranking",
                    v,
                    "\"bm25\", \"vector\" or \"hybrid\"",
                ))
            }
        };
        if search.ranking != Ranking::Bm25 && search.embeddings.is_none() {
            return Err(ConfigError::invalid(
                "search.ranking",
                v,
                "\"bm25\" (vector and hybrid ranking need a `search.embeddings` block)",
            ));
        }
    }
    if let Some(v) = obj.take("strategy") {
        search.strategy = routing::parse_strategy(v)?;
    }
    if let Some(v) = obj.take("routing") {
        search.routing = routing::parse_routing(v)?;
    }
    if let Some(v) = obj.take("list_query") {
        search.list_query = boolean("search.list_query", v)?;
    }
    if let Some(v) = obj.take("call_timeout") {
        search.call_timeout_ms = duration_ms("search.call_timeout", v)?;
    }
    if let Some(v) = obj.take("min_cosine") {
        search.min_cosine = match v {
            Value::Bool(false) => None,
            _ => match v.as_f64() {
                Some(c) if (-1.0..=1.0).contains(&c) => Some(c as f32),
                _ => {
                    return Err(ConfigError::invalid(
                        "search.min_cosine",
                        v,
                        "a cosine from -1 to 1, or false (every tool matches)",
                    ))
                }
            },
        };
    }
    if let Some(v) = obj.take("hybrid_vector_weight") {
        match v.as_f64() {
            Some(w) if (0.0..=1.0).contains(&w) => search.hybrid_vector_weight = w as f32,
            _ => {
                return Err(ConfigError::invalid(
                    "search.hybrid_vector_weight",
                    v,
                    "a number from 0 to 1",
                ))
            }
        }
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

/// `search.http_namespaces`: namespace names, never one of the filter's own catalog keys
/// (`<ns>#prompts`, `<ns>@private-<digest>`: `entries::Entry::catalog_key`,
/// `index::catalog::private_key`), which are no route's namespace.
fn parse_http_namespaces(value: &Value) -> Result<Vec<String>, ConfigError> {
    let field = "search.http_namespaces";
    let mut names = string_list(field, value)?;
    for (i, name) in names.iter().enumerate() {
        if name.contains(['#', '@']) {
            return Err(ConfigError::invalid(
                &format!("{field}[{i}]"),
                &Value::String(name.clone()),
                "a namespace name without '#' or '@' (those mark the filter's internal catalog keys, such as \"<ns>#prompts\" and \"<ns>@private-<digest>\", which are not namespaces)",
            ));
        }
    }
    names.sort();
    names.dedup();
    Ok(names)
}

fn parse_embeddings(value: &Value) -> Result<EmbeddingsConfig, ConfigError> {
    let mut obj = Object::new("search.embeddings", value)?;
    let required =
        |obj: &mut Object, key: &'static str, what: &str| -> Result<String, ConfigError> {
            match obj.take(key) {
                Some(v) => non_empty_string(&format!("search.embeddings.{key}"), v),
                None => Err(ConfigError::missing(
                    &format!("search.embeddings.{key}"),
                    what,
                )),
            }
        };
    let cluster = required(
        &mut obj,
        "cluster",
        "the name of the Envoy cluster of the embeddings service",
    )?;
    let model_id = required(&mut obj, "model_id", "the model name sent in each request")?;
    let dimensions = match obj.take("dimensions") {
        Some(v) => integer("search.embeddings.dimensions", v, 1, 8192)?,
        None => {
            return Err(ConfigError::missing(
                "search.embeddings.dimensions",
                "the vector size the model returns, e.g. 384",
            ))
        }
    };
    let path = match obj.take("path") {
        Some(v) => parse_paths("search.embeddings.path", &Value::Array(vec![v.clone()]))?.remove(0),
        None => "/v1/embeddings".to_string(),
    };
    let authority = obj
        .take("authority")
        .map(|v| non_empty_string("search.embeddings.authority", v))
        .transpose()?
        .unwrap_or_else(|| cluster.clone());
    let timeout_ms = match obj.take("timeout") {
        Some(v) => duration_ms("search.embeddings.timeout", v)?,
        None => 5000,
    };
    let query_timeout_ms = match obj.take("query_timeout") {
        Some(v) => duration_ms("search.embeddings.query_timeout", v)?,
        None => DEFAULT_QUERY_TIMEOUT_MS,
    };
    let circuit_failures = match obj.take("circuit_failures") {
        Some(v) => integer("search.embeddings.circuit_failures", v, 1, 1000)?,
        None => u64::from(DEFAULT_CIRCUIT_FAILURES),
    };
    let max_batch_size = match obj.take("max_batch_size") {
        Some(v) => integer("search.embeddings.max_batch_size", v, 1, 2048)?,
        None => 64,
    };
    let headers = match obj.take("headers") {
        Some(v) => header_map("search.embeddings.headers", v)?,
        None => Vec::new(),
    };
    obj.finish()?;
    Ok(EmbeddingsConfig {
        cluster,
        model_id,
        path,
        authority,
        timeout_ms,
        query_timeout_ms,
        circuit_failures: u32::try_from(circuit_failures).unwrap_or(DEFAULT_CIRCUIT_FAILURES),
        dimensions: usize::try_from(dimensions).unwrap_or(0),
        max_batch_size: usize::try_from(max_batch_size).unwrap_or(64),
        headers,
    })
}

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
        assert!(c.is_mcp_path(&paths::candidates("/v2/mcp")));
        assert!(c.is_mcp_path(&paths::candidates("/v2/mcp/")));
        assert!(
            c.is_mcp_path(&paths::candidates("/v2/mcp/x")),
            "a prefix router serves it"
        );
        assert!(c.is_mcp_path(&paths::candidates("/v2/mcp/%2e%2e")));
        assert!(c.is_mcp_path(&paths::candidates("/x%3f/../v2/mcp")));
        assert!(!c.is_mcp_path(&paths::candidates("/v2/mcpx")));
        assert!(!c.is_mcp_path(&paths::candidates("/v2")));
        assert_eq!(c.search.tool_name, "find_tools");
        assert!(c.hold_request_headers);
        assert_eq!(c.search.weights.input_schema, 0.5);
        assert_eq!(c.disclosure_mode("ns1", "a"), DisclosureMode::Progressive);
        assert_eq!(c.disclosure_mode("ns2", "a"), DisclosureMode::Eager);
        assert_eq!(c.disclosure_mode("ns1", "b"), DisclosureMode::Eager);
    }

    #[test]
    fn search_modes_groups_and_embeddings() {
        let c = Config::parse(
            r#"{"mode":"auto","search_threshold":10,"group_separator":"_",
                "tools":[{"name":"x_tool","group":"special","embedding":[3,4]}],
                "search":{"result_format":"summary","score_threshold":0.2,"http_path":"/find",
                          "embeddings":{"cluster":"emb","model_id":"m","dimensions":2,"timeout":"250ms",
                                        "headers":{"Authorization":"Bearer k"}}}}"#,
        )
        .unwrap();
        assert_eq!(c.mode, Mode::Auto);
        assert_eq!(c.search_threshold, 10);
        assert_eq!(c.search.result_format, ResultFormat::Summary);
        assert_eq!(
            c.search.ranking,
            Ranking::Hybrid,
            "embeddings make hybrid the default"
        );
        assert_eq!(c.search.http_path.as_deref(), Some("/find"));
        let e = c.search.embeddings.as_ref().unwrap();
        assert_eq!(
            (
                e.timeout_ms,
                e.authority.as_str(),
                e.path.as_str(),
                e.max_batch_size
            ),
            (250, "emb", "/v1/embeddings", 64)
        );
        assert_eq!(
            e.headers,
            vec![("authorization".to_string(), "Bearer k".to_string())]
        );
        let v = c.tools[0].embedding.as_ref().unwrap();
        assert!((v[0] - 0.6).abs() < 1e-6);
        assert_eq!(c.group_of("ns", "x_tool"), "special");
        assert_eq!(c.group_of("ns", "github_get_issue"), "github");
        assert_eq!(Config::default().group_of("ns", "github_get_issue"), "ns");
        assert_eq!(
            Config::parse(r#"{"search":{"http_path":false}}"#)
                .unwrap()
                .search
                .http_path,
            None
        );
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
    fn http_namespaces_are_names_never_internal_keys() {
        assert!(Config::default().search.http_namespaces.is_empty());
        let c = Config::parse(r#"{"search":{"http_namespaces":["team-b","team-a","team-b"]}}"#)
            .unwrap();
        assert_eq!(c.search.http_namespaces, ["team-a", "team-b"]);
        for key in ["team-a#prompts", "team-a@private-0123"] {
            let e = error(&format!(
                r#"{{"search":{{"http_namespaces":["team-b",{key:?}]}}}}"#
            ));
            assert!(
                e.starts_with(&format!(
                    "plugin configuration field `search.http_namespaces[1]` is {key:?}; expected a namespace name without '#' or '@'"
                )),
                "{e}"
            );
        }
        assert!(error(r#"{"search":{"http_namespaces":"team-a"}}"#)
            .contains("`search.http_namespaces` is \"team-a\"; expected a list of strings"));
        assert!(error(r#"{"search":{"http_namespaces":[""]}}"#)
            .contains("`search.http_namespaces[0]` is \"\"; expected a non-empty string"));
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
            "plugin configuration field `search.max_results` is not known; allowed here: call_timeout, embeddings, http_namespaces, http_path, hybrid_vector_weight, list_query, max_allowable_results, min_cosine, ranking, result_format, routing, score_threshold, strategy, tool_name, weights"
        );
        assert_eq!(
            error(r#"{"tools":[{"disclosure_mode":"EAGER"}]}"#),
            "plugin configuration field `tools[0].name` is missing; expected the tool's name"
        );
        assert!(error(r#"{"tools":[{"name":"x","embedding":[1,2]}]}"#)
            .contains("needs a `search.embeddings` block"));
        let emb = r#""search":{"embeddings":{"cluster":"e","model_id":"m","dimensions":3}}"#;
        assert!(error(&format!(
            r#"{{{emb},"tools":[{{"name":"x","embedding":[1,2]}}]}}"#
        ))
        .contains("is \"a list of 2 numbers\"; expected a list of 3 finite numbers"));
        assert!(error(&format!(
            r#"{{{emb},"tools":[{{"name":"x","embedding":[0,0,0]}}]}}"#
        ))
        .contains("non-zero"));
        assert!(
            error(r#"{"search":{"embeddings":{"cluster":"e","model_id":"m"}}}"#)
                .contains("`search.embeddings.dimensions` is missing")
        );
        assert!(error(r#"{"search":{"embeddings":{"cluster":"e","model_id":"m","dimensions":3,"timeout":"5 minutes"}}}"#).contains("`search.embeddings.timeout`"));
        assert!(error(r#"{"search":{"ranking":"vector"}}"#)
            .contains("need a `search.embeddings` block"));
        assert!(error(r#"{"mode":"off"}"#).contains("`mode` is \"off\""));
        assert!(error(r#"{"search":{"result_format":"table"}}"#).contains("`search.result_format`"));
        assert!(
            error(r#"{"search":{"score_threshold":2}}"#).contains("`search.score_threshold` is 2")
        );
        assert!(error(r#"{"mcp_paths":["mcp"]}"#).contains("`mcp_paths[0]` is \"mcp\""));
        assert!(error(r#"{"mcp_paths":[]}"#).contains("non-empty list"));
        assert!(error(r#"{"search":{"tool_name":"has space"}}"#).contains("`search.tool_name`"));
        assert!(error(r#"{"max_body_bytes":-1}"#).contains("`max_body_bytes` is -1"));
        assert!(
            error(r#"{"search":{"weights":{"name":0,"description":0,"input_schema":0}}}"#)
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
