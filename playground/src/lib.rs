//! The operator playground: the filter's core, driven the way Envoy drives it, for one pasted
//! catalog and configuration. A `tools/list` and a `tool_search` go through the core's own
//! `Root` over a `MemoryHost`, exchange by exchange (`exchange`, the driver the
//! native tests use), so what the page shows is what the filter answers; the ranking detail
//! (scores, the explain breakdown) comes from `rank::search` and `rank::explain` on the same
//! index.
//!
//! Every function here is plain Rust returning serde types or `Error`; `bindings` (browser
//! builds only) hands them to JavaScript as JSON strings.

#[cfg(target_arch = "wasm32")]
mod bindings;
pub mod input;
pub mod insights;

use mcp_tool_search_core::{
    exchange, explain, keys, normalize, parse_search, search, tool_text, Asker, CallResponse,
    CallSource, Caller, CatalogCache, Config, ConfigError, Exchanged, Explanation, Fallback,
    FallbackKind, HttpCall, Injected, Learned, MemoryHost, Page, Plugin, Request, Response, Root,
    SharedData, StoreError, Tool, Vectors, METADATA_KEY,
};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::fmt;

/// The namespace when the operator names none: what a catalog is keyed by when the route
/// names no namespace and the cluster is called `upstream`.
pub const DEFAULT_NAMESPACE: &str = "upstream";

/// A wall clock for the host in memory: catalog ages count from it, and 0 means "never".
const CLOCK_MS: u64 = 1_767_225_600_000;

const LIST_REQUEST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The parser's own error: the message Envoy logs when it refuses the configuration.
    Config(ConfigError),
    List(String),
    Vectors(String),
    Caller(String),
    /// The filter did something the playground cannot show (it would have gone upstream).
    Filter(String),
    /// A pasted insights answer that cannot be read.
    Insights(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config(e) => write!(f, "{e}"),
            Error::List(m) => write!(f, "tools/list: {m}"),
            Error::Vectors(m) => write!(f, "vectors: {m}"),
            Error::Caller(m) => write!(f, "caller: {m}"),
            Error::Filter(m) => write!(f, "{m}"),
            Error::Insights(m) => write!(f, "insights: {m}"),
        }
    }
}

impl std::error::Error for Error {}

/// A valid configuration, as the operator would paste it into Envoy or Istio.
#[derive(Debug, Serialize)]
pub struct ConfigCheck {
    /// The Wasm filter's `configuration` (YAML).
    pub envoy: String,
    /// A `WasmPlugin`'s `pluginConfig` (YAML; JSON is YAML).
    pub istio: String,
    /// How to type a caller for the configured identity source (`None`: no policy).
    pub caller_hint: Option<String>,
}

/// Validates `text` with the filter's parser (an empty text is every default, as in Envoy).
pub fn check_config(text: &str) -> Result<ConfigCheck, Error> {
    let config = Config::parse(text).map_err(Error::Config)?;
    let value: Value = if text.trim().is_empty() {
        Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_str(text).map_err(|e| Error::Filter(e.to_string()))?
    };
    let compact = serde_json::to_string(&value).map_err(|e| Error::Filter(e.to_string()))?;
    let pretty = serde_json::to_string_pretty(&value).map_err(|e| Error::Filter(e.to_string()))?;
    // A single-quoted YAML scalar escapes a quote by doubling it, and nothing else.
    let envoy = format!(
        "configuration:\n  \"@type\": type.googleapis.com/google.protobuf.StringValue\n  value: '{}'\n",
        compact.replace('\'', "''")
    );
    let mut istio = String::from("pluginConfig:\n");
    for line in pretty.lines() {
        istio.push_str("  ");
        istio.push_str(line);
        istio.push('\n');
    }
    Ok(ConfigCheck {
        envoy,
        istio,
        caller_hint: input::caller_hint(&config),
    })
}

/// One listed tool as the agent receives it.
#[derive(Debug, Serialize, PartialEq)]
pub struct Listed {
    pub name: String,
    /// One of the filter's own tools (`tool_search`, `list_tool_groups`, ...).
    pub injected: bool,
    pub description: String,
    /// The definition's size in bytes, as sent.
    pub bytes: usize,
}

/// What the agent sees of the catalog: the `tools/list` answer after the filter.
#[derive(Debug, Serialize)]
pub struct AgentView {
    /// `rewritten`, `unchanged` (passed as the upstream sent it) or `answered` (the filter
    /// answered the list itself).
    pub outcome: &'static str,
    pub tools: Vec<Listed>,
    /// Upstream tools the agent does not see in the list.
    pub hidden: usize,
    pub upstream_tools: usize,
    pub bytes_before: usize,
    pub bytes_after: usize,
    /// A rough token count (a quarter of the bytes, the usual rule of thumb for English and
    /// JSON): enough to compare before and after, not a tokenizer.
    pub tokens_before: usize,
    pub tokens_after: usize,
    /// The search tool's description, when it is listed.
    pub search_description: Option<String>,
    /// The answer to `list_tool_groups`, when it is listed.
    pub groups: Option<Value>,
    /// The JSON-RPC response the agent receives.
    pub response: Value,
}

/// One ranked tool with its score and how it comes about.
#[derive(Debug, Serialize)]
pub struct Row {
    pub rank: usize,
    pub name: String,
    pub score: f32,
    pub explain: Option<ExplainView>,
}

#[derive(Debug, Serialize)]
pub struct ExplainView {
    pub bm25: f32,
    pub bm25_normalized: f32,
    pub terms: Vec<TermView>,
    pub vector: Option<VectorView>,
}

#[derive(Debug, Serialize)]
pub struct TermView {
    pub term: String,
    pub idf: f32,
    pub tf: f32,
    pub score: f32,
    pub fields: Vec<FieldView>,
}

#[derive(Debug, Serialize)]
pub struct FieldView {
    pub field: &'static str,
    pub tf: f32,
    pub score: f32,
}

#[derive(Debug, Serialize)]
pub struct VectorView {
    /// `None`: the tool has no vector, and ranks by its BM25 score.
    pub cosine: Option<f32>,
    pub normalized: f32,
    pub weight: f32,
}

/// A search as the filter answers it, with the ranking behind the answer.
#[derive(Debug, Serialize)]
pub struct SearchView {
    /// The JSON-RPC response the filter gives the agent's `tools/call` of the search tool.
    pub answer: Value,
    /// The answer's tool names, in order (`None`: an error, or nothing to read them from).
    pub answer_names: Option<Vec<String>>,
    /// The ranking for the same query (empty when the filter refused the arguments).
    pub rows: Vec<Row>,
    pub strategy: Option<&'static str>,
    pub fallback: Option<String>,
    pub matches: usize,
    pub candidates: usize,
    /// Why the arguments were refused (the filter's own message to the model).
    pub refused: Option<String>,
}

/// One catalog under one configuration, learned by the filter's plugin.
pub struct Playground {
    config: Config,
    /// The configuration as pasted (the insights' eager suggestion edits it).
    config_text: String,
    /// The upstream tools' names, in the list's order.
    tool_names: Vec<String>,
    namespace: String,
    host: MemoryHost,
    root: Root,
    list: String,
    upstream_tools: usize,
    query_vector: Option<Vec<f32>>,
}

impl Playground {
    /// `list`: what the upstream answers to `tools/list` (see `input::list_response`);
    /// `vectors`: optional pasted vectors (see `input::Vectors`).
    pub fn new(
        config_text: &str,
        list: &str,
        namespace: &str,
        vectors: &str,
    ) -> Result<Playground, Error> {
        let config = Config::parse(config_text).map_err(Error::Config)?;
        let list = input::list_response(list)?;
        let vectors = input::vectors(vectors)?;
        let namespace = match namespace.trim() {
            "" => DEFAULT_NAMESPACE.to_string(),
            ns => ns.to_string(),
        };
        let host = MemoryHost::default();
        host.clock_ms.set(CLOCK_MS);
        // The route names the namespace, as Envoy's route metadata does; it names no cluster,
        // so the filter fetches nothing.
        host.set_property(
            &[
                "xds",
                "route_metadata",
                "filter_metadata",
                METADATA_KEY,
                "namespace",
            ],
            &namespace,
        );
        let upstream_tools = upstream_tools(&list)?;
        // A worker: its streams are this page's requests, so it embeds in the background.
        let root = Root::new(Plugin::new(config.clone(), "playground".to_string()));
        let playground = Playground {
            root,
            config,
            config_text: config_text.to_string(),
            tool_names: upstream_tools.iter().map(|t| t.name.to_string()).collect(),
            namespace,
            host,
            list,
            upstream_tools: upstream_tools.len(),
            query_vector: vectors.query.clone(),
        };
        // The first list teaches the filter the catalog, as in Envoy.
        playground.list_exchange(&input::Identity::default())?;
        if playground.needs_catalog() {
            // Lists the filter leaves alone (`mode: list`) are not learned from; searches then
            // fetch the catalog, which here is the same list.
            playground.learn(upstream_tools)?;
        }
        playground.embed_tools(&vectors);
        Ok(playground)
    }

    fn needs_catalog(&self) -> bool {
        !matches!(self.catalog(), Ok(c) if !c.catalog.is_empty())
    }

    fn catalog(&self) -> Result<std::rc::Rc<mcp_tool_search_core::CatalogIndex>, StoreError> {
        self.root.plugin.catalog(&self.host, &self.namespace)
    }

    /// Stores the whole upstream list as the namespace's catalog, as the filter keeps a list it
    /// learns: the catalog, and its meta saying it was listed now (from no origin: the route
    /// names no cluster).
    fn learn(&self, tools: Vec<Tool>) -> Result<(), Error> {
        let whole = Page {
            first: true,
            last: true,
        };
        self.root
            .plugin
            .learn(&self.host, &self.namespace, Learned::new(tools, whole))
            .map_err(|e| Error::Filter(format!("the catalog could not be stored: {e}")))?;
        Ok(())
    }

    /// An MCP path the filter handles (`catalog.path` may name another one).
    fn path(&self) -> String {
        self.config
            .mcp_paths
            .first()
            .cloned()
            .unwrap_or_else(|| mcp_tool_search_core::DEFAULT_MCP_PATH.to_string())
    }

    /// A JSON-RPC POST of `body` from the caller `identity` names, as a client sends it.
    fn request(&self, identity: &input::Identity, body: &str) -> Request {
        // The stream's dynamic metadata, where a `jwt_metadata` source reads the caller.
        match &identity.metadata {
            Some(metadata) => {
                self.host
                    .properties
                    .borrow_mut()
                    .insert("metadata".to_string(), metadata.clone());
            }
            None => {
                self.host.properties.borrow_mut().remove("metadata");
            }
        }
        let mut headers: Vec<(String, Vec<u8>)> = vec![
            (":method".into(), b"POST".to_vec()),
            (":path".into(), self.path().into_bytes()),
            (
                "accept".into(),
                b"application/json, text/event-stream".to_vec(),
            ),
            ("content-type".into(), b"application/json".to_vec()),
        ];
        headers.extend(
            identity
                .headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone().into_bytes())),
        );
        Request {
            headers,
            chunks: vec![body.as_bytes().to_vec()],
            trailers: false,
        }
    }

    /// Answers the plugin's background embedding calls with the pasted tool vectors, as the
    /// embeddings service would; a batch with a tool that has none is answered 503, and the
    /// filter then ranks by BM25 and says why.
    fn embed_tools(&self, vectors: &input::Vectors) {
        if self.config.search.embeddings.is_none() {
            return;
        }
        let Ok(index) = self.catalog() else {
            return;
        };
        let by_text: Vec<(String, Option<&Vec<f32>>)> = index
            .catalog
            .tools()
            .iter()
            .map(|t| (tool_text(t), vectors.tools.get(&*t.name)))
            .collect();
        let mut serve = |call: &HttpCall, _: CallSource| -> CallResponse {
            let data: Option<Vec<Value>> = embedding_inputs(call).and_then(|texts| {
                texts
                    .iter()
                    .enumerate()
                    .map(|(i, text)| {
                        let (_, v) = by_text.iter().find(|(t, _)| t == text)?;
                        Some(serde_json::json!({"index": i, "embedding": (*v)?}))
                    })
                    .collect()
            });
            match data {
                Some(data) => (
                    Some("200".to_string()),
                    Vec::new(),
                    serde_json::json!({ "data": data }).to_string().into_bytes(),
                ),
                None => (Some("503".to_string()), Vec::new(), Vec::new()),
            }
        };
        for _ in 0..100 {
            let after = self.host.last_token();
            self.host.enter(0);
            self.root.on_tick(&self.host);
            if self.host.last_token() == after {
                return;
            }
            self.host.answer_calls(&self.root, None, after, &mut serve);
            // Past the retry backoff a failed batch sets.
            self.host.clock_ms.set(self.host.clock_ms.get() + 1_100);
        }
    }

    /// The caller as the configuration's identity source reads `text`.
    pub fn caller(&self, text: &str) -> Result<Caller, Error> {
        let identity = input::identity(&self.config, text)?;
        Ok(input::caller(&self.config, &identity))
    }

    /// A `tools/list` from `identity` through the filter: (outcome, the body the agent
    /// receives).
    fn list_exchange(&self, identity: &input::Identity) -> Result<(&'static str, Vec<u8>), Error> {
        let request = self.request(identity, LIST_REQUEST);
        let body = self.list.as_bytes();
        let response = Response {
            headers: vec![
                (":status".into(), b"200".to_vec()),
                ("content-type".into(), b"application/json".to_vec()),
            ],
            chunks: vec![body.to_vec()],
            trailers: false,
        };
        let mut unanswered =
            |_: &HttpCall, _: CallSource| -> CallResponse { (None, Vec::new(), Vec::new()) };
        match exchange(&self.root, &self.host, &request, &response, &mut unanswered) {
            Exchanged::Local(reply) => Ok(("answered", reply.body)),
            Exchanged::Upstream { response: out, .. } if out == body => Ok(("unchanged", out)),
            Exchanged::Upstream { response: out, .. } => Ok(("rewritten", out)),
            Exchanged::Held => Err(Error::Filter(format!(
                "the filter did not send the tools/list on {} upstream",
                self.path()
            ))),
        }
    }

    /// A `tools/call` of `name` from `identity` through the filter: the JSON-RPC response.
    fn call_exchange(
        &self,
        identity: &input::Identity,
        name: &str,
        arguments: &str,
    ) -> Result<Value, Error> {
        let arguments = if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        };
        if serde_json::from_str::<&RawValue>(arguments).is_err() {
            return Err(Error::Filter(format!(
                "the arguments are not JSON: {arguments}"
            )));
        }
        let name = serde_json::to_string(name).map_err(|e| Error::Filter(e.to_string()))?;
        let body = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{{\"name\":{name},\"arguments\":{arguments}}}}}"
        );
        let request = self.request(identity, &body);
        let embeddings = self
            .config
            .search
            .embeddings
            .as_ref()
            .map(|e| e.cluster.clone());
        // The query is embedded as the pasted vector; a call elsewhere (upstream) is one the
        // page cannot show.
        let mut elsewhere = None;
        let mut serve = |call: &HttpCall, _: CallSource| -> CallResponse {
            if embeddings.as_deref() != Some(call.cluster.as_str()) {
                elsewhere = Some(call.cluster.clone());
                return (None, Vec::new(), Vec::new());
            }
            let (Some(query), Some(texts)) = (&self.query_vector, embedding_inputs(call)) else {
                return (None, Vec::new(), Vec::new());
            };
            let data: Vec<Value> = (0..texts.len())
                .map(|i| serde_json::json!({"index": i, "embedding": query}))
                .collect();
            (
                Some("200".to_string()),
                Vec::new(),
                serde_json::json!({ "data": data }).to_string().into_bytes(),
            )
        };
        // Without a query vector there is no service to call: the filter says so, and ranks by
        // BM25. Each search is the page's own: none leaves the embeddings circuit or health
        // changed for the next.
        let kept = [keys::EMBEDDINGS_CIRCUIT, keys::EMBEDDINGS_HEALTH]
            .map(|key| (key, self.host.get(key).ok().and_then(|(v, _)| v)));
        if self.query_vector.is_none() {
            *self.host.refuse_calls.borrow_mut() = Some(NO_QUERY_VECTOR.to_string());
        }
        let empty = Response::default();
        let exchanged = exchange(&self.root, &self.host, &request, &empty, &mut serve);
        *self.host.refuse_calls.borrow_mut() = None;
        for (key, value) in kept {
            // A key that was absent is written empty, which reads as absent.
            let _ = self
                .host
                .set(key, value.as_deref().unwrap_or_default(), None);
        }
        if let Some(cluster) = elsewhere {
            return Err(Error::Filter(format!(
                "the filter would not answer this call itself (it calls {cluster})"
            )));
        }
        match exchanged {
            Exchanged::Local(reply) => serde_json::from_slice(&reply.body)
                .map_err(|e| Error::Filter(format!("the filter's answer is not JSON ({e})"))),
            Exchanged::Upstream { .. } => Err(Error::Filter(
                "the filter would not answer this call itself (it sends it upstream)".into(),
            )),
            Exchanged::Held => Err(Error::Filter(
                "the filter would not answer this call itself (it holds it)".into(),
            )),
        }
    }

    /// A pasted insights answer (`GET <http_path>/insights`) beside this catalog and
    /// configuration (see `insights::view`).
    pub fn insights(&self, text: &str) -> Result<insights::InsightsView, Error> {
        insights::view(
            &self.config_text,
            &self.config,
            &self.namespace,
            &self.tool_names,
            text,
        )
    }

    /// What `caller` (see `caller`) sees when listing tools.
    pub fn agent_view(&self, caller: &str) -> Result<AgentView, Error> {
        let identity = input::identity(&self.config, caller)?;
        let (outcome, body) = self.list_exchange(&identity)?;
        let response: Value = serde_json::from_slice(&body)
            .map_err(|e| Error::Filter(format!("the list the agent receives is not JSON ({e})")))?;
        let before = result_bytes(self.list.as_bytes());
        let after = result_bytes(&body);
        let raw_tools = listed_tools(&body);
        let tools: Vec<Listed> = raw_tools
            .iter()
            .filter_map(|raw| {
                let tool = Tool::from_raw(raw).ok()?;
                Some(Listed {
                    injected: Injected::of(&self.config, &tool.name).is_some(),
                    name: tool.name.to_string(),
                    description: tool.description.to_string(),
                    bytes: raw.get().len(),
                })
            })
            .collect();
        let upstream_listed = tools.iter().filter(|t| !t.injected).count();
        let search_description = tools
            .iter()
            .find(|t| t.injected && t.name == self.config.search.tool_name)
            .map(|t| t.description.clone());
        let groups = if tools
            .iter()
            .any(|t| Injected::of(&self.config, &t.name) == Some(Injected::ListGroups))
        {
            Some(self.call_exchange(&identity, "list_tool_groups", "{}")?)
        } else {
            None
        };
        Ok(AgentView {
            outcome,
            hidden: self.upstream_tools.saturating_sub(upstream_listed),
            upstream_tools: self.upstream_tools,
            tools,
            bytes_before: before,
            bytes_after: after,
            tokens_before: before.div_ceil(4),
            tokens_after: after.div_ceil(4),
            search_description,
            groups,
            response,
        })
    }

    /// `arguments` (the search tool's, as JSON: `{"query", "limit"?, "offset"?, "group"?}`)
    /// from `caller`: the filter's answer and the ranking behind it.
    pub fn search(&self, caller: &str, arguments: &str) -> Result<SearchView, Error> {
        let identity = input::identity(&self.config, caller)?;
        let caller = input::caller(&self.config, &identity);
        let answer = self.call_exchange(&identity, &self.config.search.tool_name, arguments)?;
        let names = answer_names(&self.config, &answer);
        let mut view = SearchView {
            answer,
            answer_names: names,
            rows: Vec::new(),
            strategy: None,
            fallback: None,
            matches: 0,
            candidates: 0,
            refused: None,
        };
        let raw = RawValue::from_string(arguments.to_string())
            .map_err(|e| Error::Filter(format!("the arguments are not JSON: {e}")))?;
        let args = match parse_search(Some(&raw), &self.config, Asker::Tool) {
            Ok(args) => args,
            Err(message) => {
                view.refused = Some(message);
                return Ok(view);
            }
        };
        let index = self
            .catalog()
            .map_err(|e| Error::Filter(format!("the catalog is unreadable: {e}")))?;
        // As the filter ranks: the policy's scope for this caller, the stored tool vectors, the
        // query vector as the filter reads it from the service (normalized).
        let scope = self
            .config
            .authorization
            .as_ref()
            .map(|p| p.scope(&caller, &self.namespace))
            .filter(|s| !s.allows_everything());
        let allowed = |t: &Tool| scope.as_ref().is_none_or(|s| s.allows(&t.name));
        let allowed: Option<&dyn Fn(&Tool) -> bool> = scope.is_some().then_some(&allowed);
        let table = match (&self.config.search.embeddings, &self.query_vector) {
            (Some(_), Some(_)) => CatalogCache::new()
                .vectors(&self.host, &index, &self.config)
                .ok()
                .map(|(vectors, _)| vectors),
            _ => None,
        };
        let lookup = |i: usize| table.as_ref().and_then(|t| t.get(i));
        let query = self.query_vector.clone().map(|mut q| {
            let _ = normalize(&mut q);
            q
        });
        let vectors = match (&self.config.search.embeddings, &query, &table) {
            (None, _, _) => Err(Fallback::new(
                FallbackKind::Unavailable,
                "embeddings are not configured",
            )),
            (Some(_), None, _) => Err(no_query_vector()),
            (Some(_), Some(q), Some(_)) => Ok(Vectors {
                query: q,
                tool: &lookup,
            }),
            (Some(_), Some(_), None) => Err(Fallback::new(
                FallbackKind::NotEmbedded,
                "no tool vectors yet",
            )),
        };
        let ranked = search(&index, &self.config, &args.query, allowed, vectors);
        view.rows = ranked
            .found
            .iter()
            .enumerate()
            .map(|(i, f)| Row {
                rank: args.query.offset + i + 1,
                name: f.tool.name.to_string(),
                score: f.score,
                explain: Some(explain_view(&explain(
                    &index,
                    &args.query.text,
                    &ranked.scoring,
                    f.doc,
                ))),
            })
            .collect();
        view.strategy = Some(ranked.strategy.name());
        view.fallback = ranked
            .fallback
            .as_ref()
            .filter(|_| self.config.search.embeddings.is_some())
            .map(|f| format!("{}: {}", f.kind.name(), f.reason));
        view.matches = ranked.matches;
        view.candidates = ranked.candidates;
        Ok(view)
    }
}

/// Why a search has no query vector, in the filter's answer and the page's ranking.
const NO_QUERY_VECTOR: &str = "no query vector was pasted in the playground";

fn no_query_vector() -> Fallback {
    Fallback::new(FallbackKind::Unavailable, NO_QUERY_VECTOR)
}

/// The texts of an embeddings call (the OpenAI request's `input`).
fn embedding_inputs(call: &HttpCall) -> Option<Vec<String>> {
    let body: Value = serde_json::from_slice(&call.body).ok()?;
    Some(
        body.get("input")?
            .as_array()?
            .iter()
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect(),
    )
}

fn explain_view(e: &Explanation) -> ExplainView {
    ExplainView {
        bm25: e.bm25.score,
        bm25_normalized: e.bm25.normalized,
        terms: e
            .bm25
            .terms
            .iter()
            .map(|t| TermView {
                term: t.term.clone(),
                idf: t.idf,
                tf: t.tf,
                score: t.score,
                fields: t
                    .fields
                    .iter()
                    .map(|s| FieldView {
                        field: s.field,
                        tf: s.tf,
                        score: s.score,
                    })
                    .collect(),
            })
            .collect(),
        vector: e.vector.as_ref().map(|v| VectorView {
            cosine: v.cosine,
            normalized: v.normalized,
            weight: v.weight,
        }),
    }
}

#[derive(serde::Deserialize)]
struct ResultView<'a> {
    #[serde(borrow)]
    result: Option<&'a RawValue>,
}

#[derive(serde::Deserialize)]
struct ToolsView<'a> {
    #[serde(borrow, default)]
    tools: Vec<&'a RawValue>,
}

/// The size of a response's `result` (what the agent's context receives), else of the body.
fn result_bytes(body: &[u8]) -> usize {
    serde_json::from_slice::<ResultView>(body)
        .ok()
        .and_then(|r| r.result)
        .map_or(body.len(), |r| r.get().len())
}

/// The tool definitions of a `tools/list` response, as written.
fn listed_tools(body: &[u8]) -> Vec<Box<RawValue>> {
    let Ok(ResultView {
        result: Some(result),
    }) = serde_json::from_slice::<ResultView>(body)
    else {
        return Vec::new();
    };
    serde_json::from_str::<ToolsView>(result.get())
        .map(|t| t.tools.into_iter().map(ToOwned::to_owned).collect())
        .unwrap_or_default()
}

/// The upstream list's tools, as the filter reads them (unreadable entries are not tools).
fn upstream_tools(list: &str) -> Result<Vec<Tool>, Error> {
    let tools: Vec<Tool> = listed_tools(list.as_bytes())
        .iter()
        .filter_map(|raw| Tool::from_raw(raw).ok())
        .collect();
    if tools.is_empty() {
        return Err(Error::List(
            "the list has no tool the filter can read (each needs a string `name`)".into(),
        ));
    }
    Ok(tools)
}

/// The tool names of a search answer, in order: its `structuredContent` where the protocol has
/// one, else the JSON array of definitions (and the one-line results an answer's budget left
/// after them), or the lines of a summary. `None` for an error answer.
pub fn answer_names(config: &Config, answer: &Value) -> Option<Vec<String>> {
    let result = answer.get("result")?;
    if result.get("isError") == Some(&Value::Bool(true)) {
        return None;
    }
    if let Some(results) = result.pointer("/structuredContent/results") {
        return results
            .as_array()?
            .iter()
            .map(|r| r.get("name")?.as_str().map(str::to_string))
            .collect();
    }
    let text = result.pointer("/content/0/text")?.as_str()?;
    let line_name = |l: &str| l.split(" · ").next().map(str::to_string);
    match config.search.result_format {
        mcp_tool_search_core::ResultFormat::Definitions => {
            let defs: Vec<Value> = serde_json::from_str(text).ok()?;
            let mut names: Vec<String> = defs
                .iter()
                .map(|d| d.get("name")?.as_str().map(str::to_string))
                .collect::<Option<_>>()?;
            // Definitions, one-line results, the note: three items when the budget cut in.
            if result.pointer("/content/2").is_some() {
                let lines = result.pointer("/content/1/text")?.as_str()?;
                names.extend(lines.lines().filter_map(line_name));
            }
            Some(names)
        }
        mcp_tool_search_core::ResultFormat::Summary => Some(
            text.lines()
                .skip(1)
                .take_while(|l| !l.starts_with("Next:"))
                .filter_map(line_name)
                .collect(),
        ),
    }
}
