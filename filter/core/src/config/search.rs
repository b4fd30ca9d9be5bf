//! The `search` block of the plugin configuration: how the search tool is named and answers,
//! how BM25 weighs a tool's fields, which ranking (BM25, vector, hybrid) answers, the
//! embeddings service, and the HTTP search endpoint.

use super::read::{
    boolean, duration_ms, header_map, integer, non_empty_string, string_list, tool_name, weight,
    Object,
};
use super::{parse_paths, routing, ConfigError};
use serde_json::Value;

pub const DEFAULT_SEARCH_TOOL_NAME: &str = "tool_search";
pub const DEFAULT_MAX_RESULTS: u32 = 5;
/// Well under what clients keep of one tool result (Claude Code about 25,000 tokens), and
/// room for five large definitions.
pub const DEFAULT_MAX_RESULT_TOKENS: usize = 10_000;
/// The common client cut of a tool description (Claude Code keeps 2 KB).
pub const DEFAULT_MAX_DESCRIPTION_CHARS: usize = 2048;
/// The search tool's description with its 256 names of a large catalog (about 6 KB).
pub const DEFAULT_MAX_DESCRIPTION_TOKENS: usize = 2_000;

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
/// reason: fraudulent"; real servers' descriptions are terse and their arguments rich): they
/// count as much as the description. Words every tool of a service shares ("owner", "repo",
/// "limit") are held down by their idf and by the saturation (`Tuning::k1`). Chosen with `k1`
/// on the first halves of every set (README "Retrieval quality"): at 0.5 the first halves of the
/// schema set and the service groups lose 0.035 and 0.010 NDCG@10, `mcp-real`'s gains 0.012.
pub const DEFAULT_INPUT_SCHEMA_WEIGHT: f32 = 1.0;

/// How a word becomes a search term (applied by `index::tokenizer`). The shipped ranking drops
/// English stop words and stems (Porter2); turning either off exists to measure what it brings
/// (the eval's `--set stem=0`, `--set stop_words=0`; README "Retrieval quality").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermRules {
    pub stem: bool,
    pub stop_words: bool,
}

impl Default for TermRules {
    fn default() -> Self {
        TermRules {
            stem: true,
            stop_words: true,
        }
    }
}

/// How BM25 scores and re-ranks, beyond the field weights. Not plugin configuration: the
/// defaults are the measured ones (README, "Retrieval quality"); the evaluation sets the others
/// to show what each change is worth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tuning {
    /// BM25's term-frequency saturation.
    pub k1: f32,
    /// Length normalization per field: name, description (with title), input schema.
    pub b: [f32; 3],
    /// Per field, whether its `b` is derived from the catalog instead (see
    /// `Bm25Index::derived_b`): `b` above is then unused for that field.
    pub b_from_lengths: [bool; 3],
    /// BM25F (each field normalized by its own length before the fields are combined) rather
    /// than one normalization by the weighted length of the whole tool.
    pub per_field: bool,
    /// The weight of a second BM25 over names alone, their words as written (0: off). Names
    /// are identifiers, and their word forms say what a tool does (`list_issues` lists,
    /// `get_issue` gets one): stemming, which the other fields need for questions worded
    /// unlike the descriptions, makes both one term.
    pub name_as_written: f32,
    /// How much of the hybrid vector share goes as the best lexical match holds all of the
    /// query's words (`search::vector_weight`).
    pub vector_weight_drop: f32,
    /// Pseudo-relevance feedback: how many of the best tools lend terms (0: off).
    pub feedback_docs: usize,
    /// How many terms they lend.
    pub feedback_terms: usize,
    /// The lent terms' share of the score.
    pub feedback_weight: f32,
    /// Stop words and stemming (both on).
    pub terms: TermRules,
}

impl Default for Tuning {
    fn default() -> Self {
        // Chosen on the first halves of MetaTool, the schema set, the service groups and
        // `mcp-real` together (README, "Retrieval quality"), preferring what holds on all four.
        // Descriptions: their length normalization is derived from the catalog
        // (`Bm25Index::derived_b`): 0 where descriptions are one or two sentences each, as
        // MetaTool's (a longer one says more, it is not padded), the textbook 0.75 where some
        // are manuals and others four words, as real servers' (on `mcp-real`, NDCG@10 0.644 →
        // 0.727 over the fixed 0). Saturation k1 2: a term's repetition counts, but a tool
        // whose name and arguments repeat one query word does not outrank one that holds
        // several (k1 8, best on MetaTool alone by 0.007, lost 0.01 to 0.06 on the others).
        // Names as written at 0.2: +0.03 on `mcp-real`'s first half over none, +0.008 on
        // MetaTool's; 0.3 and above gain on `mcp-real` and lose on the service groups. Names
        // keep the usual normalization: a long name is a long list of words, each saying less. Pseudo-relevance feedback measured within noise on MetaTool's first half
        // (and below on the held-out one and on the schema set) for a second pass over the
        // postings: off.
        Tuning {
            k1: 2.0,
            b: [0.75, 0.0, 0.75],
            b_from_lengths: [false, true, false],
            per_field: true,
            name_as_written: 0.2,
            vector_weight_drop: 0.5,
            feedback_docs: 0,
            feedback_terms: 0,
            feedback_weight: 0.0,
            terms: TermRules::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SearchConfig {
    pub tool_name: String,
    pub max_allowable_results: u32,
    pub weights: FieldWeights,
    pub result_format: ResultFormat,
    /// The most tokens a search's answer may take (bytes / 4 of what the agent reads): full
    /// definitions while they fit, then one line each (`mcp/answer.rs`).
    pub max_result_tokens: usize,
    /// The longest description (characters) a one-line result shows before it is cut at a
    /// sentence, with a marker; full definitions are never cut.
    pub max_description_chars: usize,
    /// The most tokens the search tool's own description may take in `tools/list` (the names
    /// of the tools it finds fill what is left).
    pub max_description_tokens: usize,
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
    /// Rank by vectors only once every candidate has one (BM25 until then). Off (the default),
    /// candidates not embedded yet rank by their BM25 score within the fused ranking.
    pub require_all_vectors: bool,
    pub embeddings: Option<EmbeddingsConfig>,
    /// Flat or hierarchical (groups first) search, and stage 1's limits.
    pub strategy: routing::Strategy,
    pub routing: routing::RoutingConfig,
    /// What is kept of searches and the calls after them, for the operator.
    pub insights: super::InsightsConfig,
    /// Scorer parameters (not read from the plugin configuration).
    pub tuning: Tuning,
}

pub const DEFAULT_HTTP_SEARCH_PATH: &str = "/mcp/search";
/// The vector share of a hybrid score where the best lexical match holds none of the query's
/// words; it falls as that match holds more (`Tuning::vector_weight_drop`, `search::vector_weight`).
/// Chosen with the drop on the first halves of every set (README, "Retrieval quality").
pub const DEFAULT_HYBRID_VECTOR_WEIGHT: f32 = 0.85;
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
            max_result_tokens: DEFAULT_MAX_RESULT_TOKENS,
            max_description_chars: DEFAULT_MAX_DESCRIPTION_CHARS,
            max_description_tokens: DEFAULT_MAX_DESCRIPTION_TOKENS,
            score_threshold: None,
            http_path: Some(DEFAULT_HTTP_SEARCH_PATH.to_string()),
            http_namespaces: Vec::new(),
            ranking: Ranking::Bm25,
            hybrid_vector_weight: DEFAULT_HYBRID_VECTOR_WEIGHT,
            min_cosine: Some(DEFAULT_MIN_COSINE),
            require_all_vectors: false,
            call_timeout_ms: DEFAULT_CALL_TIMEOUT_MS,
            list_query: true,
            embeddings: None,
            strategy: routing::Strategy::Flat,
            routing: routing::RoutingConfig::default(),
            insights: super::InsightsConfig::default(),
            tuning: Tuning::default(),
        }
    }
}

pub(super) fn parse_search(value: &Value) -> Result<SearchConfig, ConfigError> {
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
    if let Some(v) = obj.take("max_result_tokens") {
        let n = integer("search.max_result_tokens", v, 500, 1_000_000)?;
        search.max_result_tokens = usize::try_from(n).unwrap_or(DEFAULT_MAX_RESULT_TOKENS);
    }
    if let Some(v) = obj.take("max_description_chars") {
        let n = integer("search.max_description_chars", v, 40, 1_000_000)?;
        search.max_description_chars = usize::try_from(n).unwrap_or(DEFAULT_MAX_DESCRIPTION_CHARS);
    }
    if let Some(v) = obj.take("max_description_tokens") {
        let n = integer("search.max_description_tokens", v, 250, 1_000_000)?;
        search.max_description_tokens =
            usize::try_from(n).unwrap_or(DEFAULT_MAX_DESCRIPTION_TOKENS);
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
    if let Some(v) = obj.take("insights") {
        search.insights = super::insights::parse_insights(v)?;
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
    if let Some(v) = obj.take("require_all_vectors") {
        search.require_all_vectors = boolean("search.require_all_vectors", v)?;
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
/// (a kind's or a credential's catalog: `Entry::catalog_key` and `private_key` in `keys`,
/// `index::catalog::private_key`), which are no route's namespace.
fn parse_http_namespaces(value: &Value) -> Result<Vec<String>, ConfigError> {
    let field = "search.http_namespaces";
    let mut names = string_list(field, value)?;
    for (i, name) in names.iter().enumerate() {
        if name.contains(['#', '@']) {
            return Err(ConfigError::invalid(
                &format!("{field}[{i}]"),
                &Value::String(name.clone()),
                "a namespace name without '#' or '@' (those two characters mark the filter's internal catalog keys, which are not namespaces)",
            ));
        }
    }
    crate::sort::sort(&mut names);
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
