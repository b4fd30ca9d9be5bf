//! One HTTP stream through the filter, as a state machine over plain data (DESIGN.md §2). The
//! proxy-wasm glue feeds it headers and bodies and carries out the actions it returns; tests
//! feed it the same way, with no host at all.

use crate::config::policy::{Caller, Scope};
use crate::config::{Config, Mode, Ranking};
use crate::index::catalog::{Catalog, CatalogIndex, Tool};
use crate::mcp::headers::{self, Mirrored};
use crate::mcp::injected::{self, Injected};
use crate::mcp::json::{self, RawObject};
use crate::mcp::jsonrpc::{self, Incoming, Kind, Message};
use crate::mcp::list::{self, ListContext, ListTarget, RewriteError, SseGiveUp, SseRewriter};
use crate::rank::search::{self, Fallback, FallbackKind, Query, Ranked, Vectors};
use crate::store::{Learned, StoreError};
use crate::vector::ToolVectors;
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::rc::Rc;

/// Why a body the filter meant to change went through unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassReason {
    TooLarge,
    Unparseable,
    Encoded,
    ContentType,
    Status,
    MixedBatch,
}

impl PassReason {
    pub const ALL: [PassReason; 6] = [
        PassReason::TooLarge,
        PassReason::Unparseable,
        PassReason::Encoded,
        PassReason::ContentType,
        PassReason::Status,
        PassReason::MixedBatch,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PassReason::TooLarge => "too_large",
            PassReason::Unparseable => "unparseable",
            PassReason::Encoded => "encoded",
            PassReason::ContentType => "content_type",
            PassReason::Status => "status",
            PassReason::MixedBatch => "mixed_batch",
        }
    }
}

/// What the operator's stats count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    ListRewritten,
    ToolsHidden(u64),
    /// A search answered, by the ranking that ran.
    SearchAnswered(Ranking),
    /// A vector or hybrid search that ran as BM25, and why.
    SearchFallback(FallbackKind),
    SearchRejected,
    /// A `tools/call` of a tool the caller may not use, refused by the filter.
    CallRefused,
    /// A `call_tool` turned into a plain `tools/call` upstream.
    CallForwarded,
    PassedThrough(PassReason),
    /// A request refused before it reached the upstream.
    RequestRefused(Refusal),
    Error,
}

/// Why a request was refused before it reached the upstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Under a policy: a body that cannot be read in exactly one way, one too large to read,
    /// or one that could not be read whole.
    Unreadable,
    /// `Mcp-Method`, `Mcp-Name` or `MCP-Protocol-Version` disagrees with the body.
    HeaderMismatch,
}

impl Refusal {
    pub const ALL: [Refusal; 2] = [Refusal::Unreadable, Refusal::HeaderMismatch];

    pub fn name(self) -> &'static str {
        match self {
            Refusal::Unreadable => "unreadable",
            Refusal::HeaderMismatch => "header_mismatch",
        }
    }
}

/// What a stream needs from its surroundings: catalogs, learning, vectors and stats.
pub trait Env {
    /// This stream's catalog namespace (route metadata, else the upstream cluster).
    fn namespace(&self) -> String;
    fn catalog_of(&mut self, namespace: &str) -> Result<Rc<CatalogIndex>, StoreError>;
    fn learn(&mut self, learned: Learned) -> Result<bool, StoreError>;
    /// Every namespace with a learned catalog.
    fn namespaces(&mut self) -> Vec<String>;
    /// The tool vectors known for a catalog (none without embeddings).
    fn tool_vectors(&mut self, _index: &CatalogIndex) -> Option<Rc<ToolVectors>> {
        None
    }
    /// Why semantic ranking is degraded right now, if it is.
    fn embeddings_degraded(&mut self) -> Option<String> {
        None
    }
    fn record(&mut self, event: Event);
    fn log_warn(&mut self, message: &str);

    fn catalog(&mut self) -> Result<Rc<CatalogIndex>, StoreError> {
        let namespace = self.namespace();
        self.catalog_of(&namespace)
    }
}

/// The request line and headers the filter decides on (names lowercase), and the caller.
#[derive(Debug, Default, Clone)]
pub struct RequestHead {
    pub method: String,
    pub path: String,
    /// `Mcp-Method`, `Mcp-Name`, `MCP-Protocol-Version`: checked against the body, never
    /// trusted instead of it.
    pub mcp: Mirrored,
    pub accept: Option<String>,
    pub session_id: Option<String>,
    pub caller: Caller,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalReply {
    pub status: u32,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl LocalReply {
    fn json(status: u32, body: String) -> Self {
        LocalReply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into_bytes(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestHeadersAction {
    /// Not ours, or not worth reading: let it through and forget the stream.
    Continue,
    /// Read the body before deciding. With `hold`, the headers wait for the body (pause);
    /// otherwise they go upstream now, and header changes must be made now because headers
    /// can only change in this callback.
    ReadBody {
        hold: bool,
        strip_accept_encoding: bool,
        /// The body may be rewritten (`call_tool`): its length is not known yet.
        drop_content_length: bool,
    },
    /// Answer now (the HTTP search endpoint's 405 and health).
    Reply(LocalReply),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestBodyAction {
    Continue {
        strip_accept_encoding: bool,
    },
    Reply(LocalReply),
    /// Send this body upstream instead (and, with held headers, this `mcp-name`).
    Replace {
        body: Vec<u8>,
        mcp_name: Option<String>,
    },
    /// Embed these texts (one embeddings call), then call `on_query_embeddings`.
    Embed {
        texts: Vec<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseHeadersAction {
    Continue,
    /// Remove `content-length`: the body goes through `on_response_chunk`.
    RewriteBody,
    /// A list that cannot be filtered for this caller: remove `content-length` and
    /// `content-encoding`, set `content-type: application/json`; the body (through
    /// `on_response_chunk`) becomes a JSON-RPC error.
    Refuse,
}

/// Requests larger than this are never a `tools/list` or a search: they go through unread
/// (when no authorization needs the tool name), and Envoy's default 1 MiB buffer is never
/// reached while the body is held.
pub const REQUEST_CLASSIFY_CAP: usize = 256 * 1024;

/// MCP spec 2025-11-25, "Tools", Error Handling: an unknown tool is a JSON-RPC error -32602.
/// A tool the caller may not use is, to that caller, unknown.
const UNKNOWN_TOOL: i64 = jsonrpc::INVALID_PARAMS;

#[derive(Debug)]
enum Phase {
    Ignored,
    McpBody,
    SearchEndpointBody,
    /// Waiting for query vectors; the request body is kept to answer when they arrive.
    Embedding(Pending),
    AwaitResponse,
    /// JSON is held in the VM, not in Envoy's buffer: Envoy resets a stream whose paused body
    /// passes its buffer limit (1 MiB by default), long before our own cap.
    Json(Vec<u8>),
    Sse(SseRewriter),
    /// Under authorization, a list that cannot be filtered is replaced by an error, never
    /// passed on: `true` once the error has been sent (the rest is dropped).
    Refuse(PassReason, bool),
    Done,
}

#[derive(Debug)]
enum Pending {
    Mcp(Vec<u8>),
    Http(HttpSearch),
}

/// A request to the plain-HTTP search endpoint.
#[derive(Debug, Clone)]
struct HttpSearch {
    query: Query,
    namespace: Option<String>,
}

/// The state of one stream.
#[derive(Debug)]
pub struct Stream {
    phase: Phase,
    head: RequestHead,
    targets: Vec<ListTarget>,
}

impl Default for Stream {
    fn default() -> Self {
        Stream::new()
    }
}

impl Stream {
    pub fn new() -> Self {
        Stream {
            phase: Phase::Ignored,
            head: RequestHead::default(),
            targets: Vec::new(),
        }
    }

    /// Whether this request uses protocol 2026-07-28 (results then carry `resultType`).
    fn modern(&self) -> bool {
        self.head
            .mcp
            .protocol_version
            .first()
            .is_some_and(|v| v.as_str() >= "2026-07-28")
    }

    /// What the caller may see in `namespace`; `None` when that is every tool.
    fn scope<'c>(&self, config: &'c Config, namespace: &str) -> Option<Scope<'c>> {
        config
            .authorization
            .as_ref()
            .map(|policy| policy.scope(&self.head.caller, namespace))
            .filter(|scope| !scope.allows_everything())
    }

    fn allowed<'c>(&self, config: &'c Config, namespace: &str) -> impl Fn(&str) -> bool + 'c {
        let scope = self.scope(config, namespace);
        move |name: &str| scope.as_ref().is_none_or(|s| s.allows(name))
    }

    pub fn on_request_headers(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        head: RequestHead,
        end_of_stream: bool,
    ) -> RequestHeadersAction {
        let path = crate::mcp::paths::normalize(&head.path);
        if let Some(search_path) = config.search.http_path.as_deref() {
            let search_path = crate::mcp::paths::normalize(search_path);
            if path == search_path {
                self.head = head;
                if self.head.method != "POST" {
                    return RequestHeadersAction::Reply(method_not_allowed("POST"));
                }
                self.phase = Phase::SearchEndpointBody;
                if end_of_stream {
                    return RequestHeadersAction::Reply(bad_request(
                        "the body must be a JSON object with a \"query\"",
                    ));
                }
                return RequestHeadersAction::ReadBody {
                    hold: config.hold_request_headers,
                    strip_accept_encoding: false,
                    drop_content_length: false,
                };
            }
            if path.strip_prefix(search_path.as_str()) == Some("/health") {
                if head.method != "GET" {
                    return RequestHeadersAction::Reply(method_not_allowed("GET"));
                }
                return RequestHeadersAction::Reply(health(config, env));
            }
        }
        if !config.is_mcp_path(&path) || end_of_stream {
            return RequestHeadersAction::Continue;
        }
        // Only POST bodies hold client messages (Streamable HTTP, spec 2025-11-25
        // "Transports"); under a policy any body is read all the same, since what a server does
        // with an unexpected method is not ours to assume. No header lets a body go unread:
        // `Mcp-Method` and `Mcp-Name` are the client's word, the body is what the server runs.
        if head.method != "POST" && config.authorization.is_none() {
            return RequestHeadersAction::Continue;
        }
        let hold = config.hold_request_headers;
        // Forwarded headers cannot wait for the body: a response that may be rewritten must
        // come back uncompressed, so every candidate request asks for identity encoding.
        let strip_accept_encoding =
            !hold || head.mcp.method.iter().any(|m| m.as_str() == "tools/list");
        let drop_content_length =
            !hold && Injected::of(config, injected::CALL) == Some(Injected::Call);
        self.head = head;
        self.phase = Phase::McpBody;
        RequestHeadersAction::ReadBody {
            hold,
            strip_accept_encoding,
            drop_content_length,
        }
    }

    /// Whether the glue should buffer the request body for `on_request_body`.
    pub fn wants_request_body(&self) -> bool {
        matches!(self.phase, Phase::McpBody | Phase::SearchEndpointBody)
    }

    /// The most request body the filter holds before letting the request go unread.
    pub fn request_cap(&self, config: &Config) -> usize {
        if config.authorization.is_some() {
            config.max_body_bytes
        } else {
            REQUEST_CLASSIFY_CAP.min(config.max_body_bytes)
        }
    }

    /// The request body was larger than the cap: let it go as it is (or, for the search
    /// endpoint and under authorization, refuse it: an unread call cannot be authorized).
    pub fn request_too_large(&mut self, config: &Config, env: &mut dyn Env) -> Option<LocalReply> {
        env.record(Event::PassedThrough(PassReason::TooLarge));
        let endpoint = matches!(self.phase, Phase::SearchEndpointBody);
        self.phase = Phase::Done;
        if endpoint {
            return Some(LocalReply::json(
                413,
                error_json("the search request body is too large"),
            ));
        }
        config.authorization.as_ref().map(|_| {
            LocalReply::json(
                413,
                jsonrpc::error_response(
                    None,
                    jsonrpc::INVALID_REQUEST,
                    "request too large to authorize",
                ),
            )
        })
    }

    /// The request body the filter was waiting for cannot be had whole (the host could not hand
    /// it over, or request trailers ended the stream before the body did). Under a policy, or
    /// for the search endpoint, the request is refused; otherwise it goes on unread.
    pub fn request_body_unavailable(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        why: &str,
    ) -> Option<LocalReply> {
        if !self.wants_request_body() {
            return None;
        }
        let endpoint = matches!(self.phase, Phase::SearchEndpointBody);
        self.phase = Phase::Done;
        if endpoint {
            env.record(Event::SearchRejected);
            return Some(bad_request(&format!("the search request body: {why}")));
        }
        config.authorization.as_ref()?;
        Some(self.refuse_unreadable(env, why))
    }

    /// The whole request body.
    pub fn on_request_body(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        body: &[u8],
    ) -> RequestBodyAction {
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::SearchEndpointBody => self.on_search_endpoint(config, env, body),
            Phase::McpBody => self.on_mcp_body(config, env, body),
            other => {
                self.phase = other;
                RequestBodyAction::Continue {
                    strip_accept_encoding: false,
                }
            }
        }
    }

    fn on_mcp_body(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        body: &[u8],
    ) -> RequestBodyAction {
        let strict = config.authorization.is_some();
        let incoming = match jsonrpc::parse(body) {
            Ok(incoming) => incoming,
            // Under a policy, what the filter cannot read in exactly one way may be read some
            // other way by the server: it never reaches it.
            Err(e) if strict => {
                return RequestBodyAction::Reply(self.refuse_unreadable(env, &e.to_string()))
            }
            // Not ours to judge: the upstream answers malformed requests with its own error.
            Err(_) => {
                return RequestBodyAction::Continue {
                    strip_accept_encoding: false,
                }
            }
        };
        if let Err(mismatch) = headers::validate(&self.head.mcp, &incoming) {
            env.record(Event::RequestRefused(Refusal::HeaderMismatch));
            let id = match &incoming {
                Incoming::Single(m) => m.id.as_deref(),
                Incoming::Batch(_) => None,
            };
            return RequestBodyAction::Reply(LocalReply::json(
                400,
                jsonrpc::error_response(id, headers::HEADER_MISMATCH, &mismatch.to_string()),
            ));
        }
        let namespace = env.namespace();
        let listing = config.mode != Mode::List;
        let mut local = 0;
        let mut refused = 0;
        for m in incoming.messages() {
            match m.kind() {
                // The kill switch: with nobody to filter for, lists are left completely alone.
                Kind::ToolsList { .. } if !listing && config.authorization.is_none() => {}
                Kind::ToolsList { first_page } => {
                    if let Some(id) = m.id_value() {
                        self.targets.push(ListTarget { id, first_page });
                    }
                }
                Kind::ToolsCall { name, .. } => {
                    if listing && m.id.is_some() && Injected::of(config, &name).is_some() {
                        local += 1;
                    } else if !self.allowed(config, &namespace)(&name) {
                        refused += 1;
                    }
                }
                Kind::UnreadableCall(why) if strict => {
                    let reply = self.refuse_unreadable(env, &format!("tools/call {why}"));
                    return RequestBodyAction::Reply(reply);
                }
                Kind::UnreadableCall(_) | Kind::Other => {}
            }
        }
        let total = incoming.messages().len();
        if local + refused > 0 {
            if local + refused < total {
                // Nothing of a batch that calls a forbidden tool may reach the upstream; under
                // a policy neither may a call of our tools' names, which the upstream would run
                // as its own tool of that name if it has one.
                if refused > 0 || strict {
                    env.record(Event::CallRefused);
                    return RequestBodyAction::Reply(self.refuse_batch(&incoming));
                }
                // A batch mixing our tools with upstream calls cannot be split without rewriting
                // both directions; batches left the protocol in 2025-06-18, so it goes upstream
                // (a list in it is still rewritten).
                env.record(Event::PassedThrough(PassReason::MixedBatch));
                return self.await_lists();
            }
            if let Incoming::Single(m) = &incoming {
                if let Kind::ToolsCall { name, arguments } = m.kind() {
                    if Injected::of(config, &name) == Some(Injected::Call) {
                        return self.forward_call(config, env, m, arguments);
                    }
                }
            }
            if self.needs_query_vectors(config) {
                let texts = search_texts(config, &incoming);
                if !texts.is_empty() {
                    self.phase = Phase::Embedding(Pending::Mcp(body.to_vec()));
                    return RequestBodyAction::Embed { texts };
                }
            }
            return RequestBodyAction::Reply(self.answer_locally(
                config,
                env,
                &incoming,
                Err(no_vectors()),
            ));
        }
        self.await_lists()
    }

    /// Continue upstream, rewriting the response if the request holds a `tools/list`.
    fn await_lists(&mut self) -> RequestBodyAction {
        if self.targets.is_empty() {
            return RequestBodyAction::Continue {
                strip_accept_encoding: false,
            };
        }
        self.phase = Phase::AwaitResponse;
        RequestBodyAction::Continue {
            strip_accept_encoding: true,
        }
    }

    fn needs_query_vectors(&self, config: &Config) -> bool {
        config.search.ranking != Ranking::Bm25 && config.search.embeddings.is_some()
    }

    /// The query vectors arrived (or failed): answer the request that waited for them.
    pub fn on_query_embeddings(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        vectors: Result<Vec<Vec<f32>>, Fallback>,
    ) -> RequestBodyAction {
        match std::mem::replace(&mut self.phase, Phase::Done) {
            Phase::Embedding(Pending::Mcp(body)) => match jsonrpc::parse(&body) {
                Ok(incoming) => {
                    RequestBodyAction::Reply(self.answer_locally(config, env, &incoming, vectors))
                }
                Err(_) => RequestBodyAction::Continue {
                    strip_accept_encoding: false,
                },
            },
            Phase::Embedding(Pending::Http(request)) => {
                let vector = vectors.and_then(|mut v| {
                    v.pop()
                        .ok_or_else(|| Fallback::new(FallbackKind::Malformed, "no vector returned"))
                });
                RequestBodyAction::Reply(self.answer_http_search(config, env, &request, vector))
            }
            other => {
                self.phase = other;
                RequestBodyAction::Continue {
                    strip_accept_encoding: false,
                }
            }
        }
    }

    /// Whether the stream waits for query vectors.
    pub fn awaiting_embeddings(&self) -> bool {
        matches!(self.phase, Phase::Embedding(_))
    }

    /// A request the policy cannot be applied to: refused before it reaches the upstream.
    fn refuse_unreadable(&mut self, env: &mut dyn Env, why: &str) -> LocalReply {
        env.record(Event::RequestRefused(Refusal::Unreadable));
        env.log_warn(&format!(
            "request refused under the authorization policy: {why}"
        ));
        self.phase = Phase::Done;
        LocalReply::json(
            400,
            jsonrpc::error_response(
                None,
                jsonrpc::INVALID_REQUEST,
                &format!(
                    "Request refused: the authorization policy needs a body it can read in exactly one way ({why})"
                ),
            ),
        )
    }

    fn refuse_batch(&self, incoming: &Incoming) -> LocalReply {
        let replies: Vec<String> = incoming
            .messages()
            .iter()
            .filter_map(|m| m.id.as_deref())
            .map(|id| {
                jsonrpc::error_response(
                    Some(id),
                    jsonrpc::INVALID_REQUEST,
                    "batch refused: it calls a tool that is not available; send the requests one by one",
                )
            })
            .collect();
        self.reply(format!("[{}]", replies.join(",")))
    }

    /// Answers every message of a request made only of our tools and refused calls.
    fn answer_locally(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        incoming: &Incoming,
        vectors: Result<Vec<Vec<f32>>, Fallback>,
    ) -> LocalReply {
        let modern = self.modern();
        let namespace = env.namespace();
        let mut next_vector = 0;
        let mut replies = Vec::new();
        for m in incoming.messages() {
            let Kind::ToolsCall { name, arguments } = m.kind() else {
                continue;
            };
            let Some(id) = m.id.as_deref() else {
                // A notification calling a forbidden tool: withheld, and JSON-RPC has no reply.
                env.record(Event::CallRefused);
                continue;
            };
            let reply = match Injected::of(config, &name) {
                Some(Injected::Search) => {
                    let vector = match &vectors {
                        Ok(all) => {
                            let v = all.get(next_vector).cloned().ok_or_else(|| {
                                Fallback::new(FallbackKind::Malformed, "fewer vectors than queries")
                            });
                            next_vector += 1;
                            v
                        }
                        Err(f) => Err(f.clone()),
                    };
                    jsonrpc::result_response(
                        id,
                        &self.answer_search(config, env, arguments, vector),
                    )
                }
                Some(Injected::ListGroups) => {
                    jsonrpc::result_response(id, &self.answer_groups(config, env, &namespace))
                }
                Some(Injected::Describe) => jsonrpc::result_response(
                    id,
                    &self.answer_describe(config, env, &namespace, arguments),
                ),
                Some(Injected::Call) => jsonrpc::result_response(
                    id,
                    &injected::error_result(
                        "call_tool cannot be used inside a batch; send it alone.",
                        modern,
                    ),
                ),
                None => {
                    env.record(Event::CallRefused);
                    jsonrpc::error_response(
                        Some(id),
                        UNKNOWN_TOOL,
                        &format!("Unknown tool: {name}"),
                    )
                }
            };
            replies.push(reply);
        }
        if replies.is_empty() {
            // Streamable HTTP: notifications alone are answered 202 Accepted with no body.
            return LocalReply {
                status: 202,
                headers: Vec::new(),
                body: Vec::new(),
            };
        }
        let body = match incoming {
            Incoming::Single(_) => replies.concat(),
            Incoming::Batch(_) => format!("[{}]", replies.join(",")),
        };
        self.reply(body)
    }

    fn catalog_or_error(
        &self,
        env: &mut dyn Env,
        namespace: &str,
    ) -> Result<Rc<CatalogIndex>, String> {
        match env.catalog_of(namespace) {
            Ok(index) if index.catalog.is_empty() => Err(
                "No tools are known for this server yet: call tools/list once, then search again."
                    .to_string(),
            ),
            Ok(index) => Ok(index),
            Err(e) => {
                env.record(Event::Error);
                env.log_warn(&format!("tool search could not read the catalog: {e}"));
                Err(
                    "The tool catalog is unavailable right now; list tools again and retry."
                        .to_string(),
                )
            }
        }
    }

    fn answer_search(
        &self,
        config: &Config,
        env: &mut dyn Env,
        arguments: Option<&RawValue>,
        vector: Result<Vec<f32>, Fallback>,
    ) -> String {
        let modern = self.modern();
        let args = match injected::parse_search(arguments, config) {
            Ok(args) => args,
            Err(message) => {
                env.record(Event::SearchRejected);
                return injected::error_result(&message, modern);
            }
        };
        let namespace = env.namespace();
        if let Some(ns) = &args.namespace {
            if *ns != namespace {
                env.record(Event::SearchRejected);
                return injected::error_result(
                    &format!("Namespace {ns:?} is not served here; this server's namespace is {namespace:?}. Search again without `namespace`."),
                    modern,
                );
            }
        }
        let index = match self.catalog_or_error(env, &namespace) {
            Ok(index) => index,
            Err(message) => return injected::error_result(&message, modern),
        };
        let ranked = self.rank(config, env, &index, &args.query, vector);
        injected::search_result(config, &args.query, &ranked, modern)
    }

    /// Runs a search over `index` for this caller and records how it ranked.
    fn rank<'i>(
        &self,
        config: &Config,
        env: &mut dyn Env,
        index: &'i CatalogIndex,
        query: &Query,
        vector: Result<Vec<f32>, Fallback>,
    ) -> Ranked<'i> {
        let scope = self.scope(config, &index.namespace);
        let allowed = |t: &Tool| scope.as_ref().is_none_or(|s| s.allows(&t.name));
        let table = if vector.is_ok() {
            env.tool_vectors(index)
        } else {
            None
        };
        let lookup = |i: usize| table.as_ref().and_then(|t| t.get(i));
        let vectors = match (&vector, &table) {
            (Ok(q), Some(_)) => Ok(Vectors {
                query: q,
                tool: &lookup,
            }),
            (Ok(_), None) => Err(Fallback::new(
                FallbackKind::NotEmbedded,
                "no tool vectors yet",
            )),
            (Err(f), _) => Err(f.clone()),
        };
        let ranked = search::search(
            index,
            config,
            query,
            scope
                .is_some()
                .then_some(&allowed as &dyn Fn(&Tool) -> bool),
            vectors,
        );
        env.record(Event::SearchAnswered(ranked.strategy));
        if let Some(f) = &ranked.fallback {
            if config.search.ranking != Ranking::Bm25 {
                env.record(Event::SearchFallback(f.kind));
            }
        }
        ranked
    }

    fn answer_groups(&self, config: &Config, env: &mut dyn Env, namespace: &str) -> String {
        let modern = self.modern();
        let index = match self.catalog_or_error(env, namespace) {
            Ok(index) => index,
            Err(message) => return injected::error_result(&message, modern),
        };
        let allowed = self.allowed(config, namespace);
        let mut groups: Vec<(String, usize)> = Vec::new();
        for t in index.catalog.tools().iter().filter(|t| allowed(&t.name)) {
            let g = config.group_of(namespace, &t.name);
            match groups.iter_mut().find(|(name, _)| *name == g) {
                Some((_, n)) => *n += 1,
                None => groups.push((g, 1)),
            }
        }
        groups.sort();
        injected::groups_result(&groups, modern)
    }

    fn answer_describe(
        &self,
        config: &Config,
        env: &mut dyn Env,
        namespace: &str,
        arguments: Option<&RawValue>,
    ) -> String {
        let modern = self.modern();
        let names = match injected::parse_describe(arguments) {
            Ok(names) => names,
            Err(message) => return injected::error_result(&message, modern),
        };
        let index = match self.catalog_or_error(env, namespace) {
            Ok(index) => index,
            Err(message) => return injected::error_result(&message, modern),
        };
        let allowed = self.allowed(config, namespace);
        let mut found = Vec::new();
        let mut missing = Vec::new();
        for name in names {
            match index.catalog.get(&name).filter(|t| allowed(&t.name)) {
                Some(t) => found.push(t),
                None => missing.push(name),
            }
        }
        injected::describe_result(&found, &missing, modern)
    }

    /// `call_tool`: the same request, as a plain `tools/call` of the named tool.
    fn forward_call(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        message: &Message,
        arguments: Option<&RawValue>,
    ) -> RequestBodyAction {
        let modern = self.modern();
        let fail = |stream: &Self, text: &str| {
            let id = message.id.as_deref();
            let body = match id {
                Some(id) => jsonrpc::result_response(id, &injected::error_result(text, modern)),
                None => jsonrpc::error_response(None, jsonrpc::INVALID_REQUEST, text),
            };
            RequestBodyAction::Reply(stream.reply(body))
        };
        let (target, target_args) = match injected::parse_call(arguments) {
            Ok(call) => call,
            Err(text) => return fail(self, &text),
        };
        let namespace = env.namespace();
        if Injected::of(config, &target).is_some() {
            return fail(
                self,
                &format!("{target} is not called through call_tool; call it directly."),
            );
        }
        if !self.allowed(config, &namespace)(&target) {
            env.record(Event::CallRefused);
            return fail(
                self,
                &format!("Unknown tool: {target}. Use the search tool to find available tools."),
            );
        }
        // Headers already forwarded still name call_tool in `mcp-name` (2026-07-28): the
        // upstream would refuse the rewritten body.
        if !self.head.mcp.name.is_empty() && !config.hold_request_headers {
            return fail(
                self,
                &format!(
                    "Call {target} directly (this proxy cannot rename the request in flight)."
                ),
            );
        }
        match rewrite_call(message, &target, target_args.as_deref()) {
            Some(body) => {
                env.record(Event::CallForwarded);
                // Its response is the upstream's own; nothing to rewrite on the way back.
                RequestBodyAction::Replace {
                    body: body.into_bytes(),
                    mcp_name: (!self.head.mcp.name.is_empty()).then_some(target),
                }
            }
            None => fail(
                self,
                "call_tool could not be rewritten; call the tool directly.",
            ),
        }
    }

    fn on_search_endpoint(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        body: &[u8],
    ) -> RequestBodyAction {
        let request = match parse_http_search(body, config) {
            Ok(request) => request,
            Err(problem) => {
                env.record(Event::SearchRejected);
                return RequestBodyAction::Reply(bad_request(&problem));
            }
        };
        if self.needs_query_vectors(config) {
            let texts = vec![request.query.text.clone()];
            self.phase = Phase::Embedding(Pending::Http(request));
            return RequestBodyAction::Embed { texts };
        }
        RequestBodyAction::Reply(self.answer_http_search(config, env, &request, Err(no_vectors())))
    }

    fn answer_http_search(
        &self,
        config: &Config,
        env: &mut dyn Env,
        request: &HttpSearch,
        vector: Result<Vec<f32>, Fallback>,
    ) -> LocalReply {
        let namespace = request.namespace.clone().unwrap_or_else(|| env.namespace());
        let index = match env.catalog_of(&namespace) {
            Ok(index) => index,
            Err(e) => {
                env.record(Event::Error);
                return LocalReply::json(503, error_json(&format!("catalog unavailable: {e}")));
            }
        };
        if request.namespace.is_some() && index.catalog.is_empty() {
            return LocalReply::json(
                404,
                error_json(&format!("no tools are known for namespace {namespace:?}")),
            );
        }
        let ranked = self.rank(config, env, &index, &request.query, vector);
        let body = format!(
            "{{\"tools\":{},\"metadata\":{}}}",
            injected::definitions_array(ranked.found.iter().map(|f| f.tool)),
            injected::metadata_json(&ranked, request.query.offset)
        );
        LocalReply::json(200, body)
    }

    /// A 200 carrying JSON-RPC: JSON unless the client accepts only SSE (Streamable HTTP lets
    /// the server choose either; spec 2025-11-25 "Sending Messages to the Server").
    fn reply(&self, body: String) -> LocalReply {
        let accept = self.head.accept.as_deref().unwrap_or("");
        let sse_only = accept.contains("text/event-stream")
            && !accept.contains("application/json")
            && !accept.contains("*/*");
        let (content_type, body) = if sse_only {
            (
                "text/event-stream",
                format!("event: message\ndata: {body}\n\n"),
            )
        } else {
            ("application/json", body)
        };
        let mut headers = vec![("content-type".to_string(), content_type.to_string())];
        if let Some(session) = &self.head.session_id {
            headers.push(("mcp-session-id".to_string(), session.clone()));
        }
        LocalReply {
            status: 200,
            headers,
            body: body.into_bytes(),
        }
    }

    pub fn on_response_headers(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        status: Option<&str>,
        content_type: Option<&str>,
        content_encoding: Option<&str>,
    ) -> ResponseHeadersAction {
        if !matches!(self.phase, Phase::AwaitResponse) {
            return ResponseHeadersAction::Continue;
        }
        self.phase = Phase::Done;
        if status != Some("200") {
            env.record(Event::PassedThrough(PassReason::Status));
            return ResponseHeadersAction::Continue;
        }
        if content_encoding.is_some_and(|e| !e.trim().eq_ignore_ascii_case("identity")) {
            return self.cannot_filter(config, env, PassReason::Encoded);
        }
        let media = content_type
            .and_then(|c| c.split(';').next())
            .map(|c| c.trim().to_ascii_lowercase());
        match media.as_deref() {
            Some("application/json") => {
                self.phase = Phase::Json(Vec::new());
                ResponseHeadersAction::RewriteBody
            }
            Some("text/event-stream") => {
                self.phase = Phase::Sse(SseRewriter::new(config.max_body_bytes));
                ResponseHeadersAction::RewriteBody
            }
            _ => self.cannot_filter(config, env, PassReason::ContentType),
        }
    }

    /// A list the filter cannot read: unchanged without authorization, refused with it (it
    /// would show the caller tools the policy forbids).
    fn cannot_filter(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        reason: PassReason,
    ) -> ResponseHeadersAction {
        env.record(Event::PassedThrough(reason));
        if config.authorization.is_none() {
            return ResponseHeadersAction::Continue;
        }
        env.log_warn(&format!(
            "tools/list response refused: it cannot be filtered for the caller ({})",
            reason.name()
        ));
        self.phase = Phase::Refuse(reason, false);
        ResponseHeadersAction::Refuse
    }

    /// The response's declared length: a JSON list is held whole, and growing the buffer by
    /// doubling would briefly need half as much again (megabytes at 10,000 tools).
    pub fn expect_response_length(&mut self, config: &Config, length: usize) {
        if let Phase::Json(held) = &mut self.phase {
            held.reserve_exact(length.min(config.max_body_bytes));
        }
    }

    /// The JSON-RPC error that replaces a list that cannot be filtered for the caller.
    fn refusal(&self, reason: PassReason, sse: bool) -> Vec<u8> {
        let message = format!(
            "the tool list could not be filtered for this caller ({}); ask the operator",
            reason.name()
        );
        let errors: Vec<String> = self
            .targets
            .iter()
            .map(|t| {
                let id = RawValue::from_string(t.id.to_string()).ok();
                jsonrpc::error_response(id.as_deref(), jsonrpc::INTERNAL_ERROR, &message)
            })
            .collect();
        let body = if errors.len() == 1 {
            errors.concat()
        } else {
            format!("[{}]", errors.join(","))
        };
        if sse {
            format!("event: message\ndata: {body}\n\n").into_bytes()
        } else {
            body.into_bytes()
        }
    }

    /// Passing held bytes on, or, under authorization, the error instead (and nothing after).
    fn give_up(
        &mut self,
        config: &Config,
        held: Vec<u8>,
        reason: PassReason,
        sse: bool,
    ) -> Vec<u8> {
        if config.authorization.is_none() {
            return held;
        }
        self.phase = Phase::Refuse(reason, true);
        self.refusal(reason, sse)
    }

    /// A chunk of the response body; returns the bytes the client gets in its place (JSON is
    /// held until the end of the stream, SSE events go on as soon as they are complete).
    pub fn on_response_chunk(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        chunk: &[u8],
        end_of_stream: bool,
    ) -> Vec<u8> {
        let mut phase = std::mem::replace(&mut self.phase, Phase::Done);
        match &mut phase {
            Phase::Json(held) => {
                held.extend_from_slice(chunk);
                if held.len() > config.max_body_bytes {
                    env.record(Event::PassedThrough(PassReason::TooLarge));
                    let held = std::mem::take(held);
                    return self.give_up(config, held, PassReason::TooLarge, false);
                }
                if !end_of_stream {
                    self.phase = phase;
                    return Vec::new();
                }
                let whole = std::mem::take(held);
                match self.rewrite_list(config, env, &whole) {
                    Ok(Some(rewritten)) => {
                        if rewritten.outcome.body.is_some() {
                            learn_from(env, rewritten, whole).unwrap_or_default()
                        } else {
                            learn_from(env, rewritten, Vec::new());
                            whole
                        }
                    }
                    Ok(None) => whole,
                    Err(e) => {
                        env.record(Event::PassedThrough(PassReason::Unparseable));
                        env.log_warn(&format!(
                            "tools/list response passed through unchanged: {e}"
                        ));
                        self.give_up(config, whole, PassReason::Unparseable, false)
                    }
                }
            }
            Phase::Sse(rewriter) => {
                let before = rewriter.gave_up().is_some();
                let out = rewriter.push(chunk, end_of_stream, &mut |data| {
                    self.rewrite(config, env, data)
                });
                let reason = match (before, rewriter.gave_up()) {
                    (false, Some(SseGiveUp::TooLarge)) => Some(PassReason::TooLarge),
                    (false, Some(SseGiveUp::Unparseable(e))) => {
                        env.log_warn(&format!("tools/list event passed through unchanged: {e}"));
                        Some(PassReason::Unparseable)
                    }
                    _ => None,
                };
                if !end_of_stream {
                    self.phase = phase;
                }
                match reason {
                    Some(reason) => {
                        env.record(Event::PassedThrough(reason));
                        self.give_up(config, out, reason, true)
                    }
                    None => out,
                }
            }
            Phase::Refuse(reason, sent) => {
                if !*sent {
                    *sent = true;
                    let reason = *reason;
                    if !end_of_stream {
                        self.phase = phase;
                    }
                    return self.refusal(reason, false);
                }
                if !end_of_stream {
                    self.phase = phase;
                }
                Vec::new()
            }
            _ => chunk.to_vec(),
        }
    }

    /// The stream ended in trailers (HTTP/2) with bytes still held: they can no longer be sent
    /// (proxy-wasm cannot add body data in the trailers callback). Returns how many were lost.
    pub fn on_response_trailers(&mut self, env: &mut dyn Env) -> usize {
        let held = match &mut self.phase {
            Phase::Json(held) => held.len(),
            Phase::Sse(rewriter) => rewriter.pending(),
            _ => 0,
        };
        self.phase = Phase::Done;
        if held > 0 {
            env.record(Event::Error);
            env.log_warn(&format!(
                "response ended in trailers with {held} body bytes held for rewriting; they were dropped"
            ));
        }
        held
    }

    /// Whether a response to rewrite is expected.
    pub fn awaiting_response(&self) -> bool {
        matches!(self.phase, Phase::AwaitResponse)
    }

    /// Whether the response body is still being rewritten.
    pub fn rewriting_response(&self) -> bool {
        matches!(
            self.phase,
            Phase::Json(_) | Phase::Sse(_) | Phase::Refuse(..)
        )
    }

    fn rewrite(
        &self,
        config: &Config,
        env: &mut dyn Env,
        message: &[u8],
    ) -> Result<Option<Vec<u8>>, RewriteError> {
        Ok(self
            .rewrite_list(config, env, message)?
            .and_then(|rewritten| learn_from(env, rewritten, Vec::new())))
    }

    /// The rewrite of a `tools/list` response, not yet learned from: learning can wait until
    /// the response's bytes are freed (they and the learned definitions are each megabytes).
    fn rewrite_list(
        &self,
        config: &Config,
        env: &mut dyn Env,
        message: &[u8],
    ) -> Result<Option<Rewritten>, RewriteError> {
        let index = match env.catalog() {
            Ok(index) => Some(index),
            Err(e) => {
                env.record(Event::Error);
                env.log_warn(&format!("catalog unavailable while listing: {e}"));
                None
            }
        };
        let none = Catalog::default();
        let known = index.as_ref().map_or(&none, |index| &index.catalog);
        let known_complete = known.is_complete();
        let namespace = env.namespace();
        let scope = self.scope(config, &namespace);
        let allowed = |name: &str| scope.as_ref().is_none_or(|s| s.allows(name));
        let audience = scope.as_ref().map(Scope::rules);
        let ctx = ListContext {
            config,
            namespace: &namespace,
            known,
            allowed: &allowed,
            authorizing: config.authorization.is_some(),
            known_complete,
            audience,
            memo: index.as_ref().map(|i| &i.list_memo),
        };
        let outcome = list::rewrite_message(message, &self.targets, &ctx)?;
        drop(ctx);
        Ok(outcome.map(|outcome| Rewritten { outcome, index }))
    }
}

/// A rewritten list and the catalog version it was rewritten against.
struct Rewritten {
    outcome: list::Outcome,
    index: Option<Rc<CatalogIndex>>,
}

/// Learns the page of a rewritten list and counts it; returns the new body (`None`: unchanged).
/// `buffer` is the response's, spent: the catalog is written to shared data through it.
fn learn_from(env: &mut dyn Env, rewritten: Rewritten, buffer: Vec<u8>) -> Option<Vec<u8>> {
    let Rewritten { mut outcome, index } = rewritten;
    if !outcome.replayed {
        let learned = Learned {
            tools: std::mem::take(&mut outcome.learned),
            page: outcome.page,
            buffer,
        };
        match env.learn(learned) {
            // The page is already in this catalog version: the same result can be replayed.
            Ok(false) => {
                if let (Some(index), Some(memo)) = (&index, outcome.memo.take()) {
                    if let Ok(mut slot) = index.list_memo.try_borrow_mut() {
                        *slot = Some(memo);
                    }
                }
            }
            Ok(true) => {}
            Err(e) => {
                env.record(Event::Error);
                env.log_warn(&format!("could not store the learned tools: {e}"));
            }
        }
    }
    if outcome.body.is_some() {
        for _ in 0..outcome.rewritten {
            env.record(Event::ListRewritten);
        }
        env.record(Event::ToolsHidden(outcome.hidden as u64));
    }
    outcome.body
}

fn no_vectors() -> Fallback {
    Fallback::new(FallbackKind::Unavailable, "embeddings are not configured")
}

/// The queries of the search calls in a request, in order (for one embeddings call).
fn search_texts(config: &Config, incoming: &Incoming) -> Vec<String> {
    incoming
        .messages()
        .iter()
        .filter(|m| m.id.is_some())
        .filter_map(|m| match m.kind() {
            Kind::ToolsCall { name, arguments }
                if Injected::of(config, &name) == Some(Injected::Search) =>
            {
                injected::parse_search(arguments, config)
                    .ok()
                    .map(|a| a.query.text)
            }
            _ => None,
        })
        .collect()
}

/// The request with `params.name` set to `target` and `params.arguments` to `arguments`;
/// every other member (`jsonrpc`, `id`, `params._meta`) kept.
fn rewrite_call(message: &Message, target: &str, arguments: Option<&RawValue>) -> Option<String> {
    let params = message.params.as_deref()?;
    let mut params = RawObject::parse(params.get()).ok()?;
    params.0.retain(|(k, _)| k != "name" && k != "arguments");
    params.0.insert(
        0,
        (
            "name".to_string(),
            Cow::Owned(RawValue::from_string(json::string(target)).ok()?),
        ),
    );
    if let Some(args) = arguments {
        params
            .0
            .insert(1, ("arguments".to_string(), Cow::Borrowed(args)));
    }
    let mut params_text = String::new();
    params.write(&mut params_text);
    let mut out = String::from("{\"jsonrpc\":\"2.0\"");
    if let Some(id) = message.id.as_deref() {
        out.push_str(",\"id\":");
        out.push_str(id.get());
    }
    out.push_str(",\"method\":\"tools/call\",\"params\":");
    out.push_str(&params_text);
    out.push('}');
    Some(out)
}

fn error_json(message: &str) -> String {
    format!("{{\"error\":{}}}", json::string(message))
}

fn bad_request(problem: &str) -> LocalReply {
    LocalReply::json(400, error_json(problem))
}

fn method_not_allowed(allow: &str) -> LocalReply {
    let mut reply = LocalReply::json(405, error_json(&format!("method not allowed; use {allow}")));
    reply.headers.push(("allow".to_string(), allow.to_string()));
    reply
}

/// `{"query": "...", "limit": N, "namespace": "...", "offset": N, "group": "..."}`.
fn parse_http_search(body: &[u8], config: &Config) -> Result<HttpSearch, String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    let Value::Object(map) = &value else {
        return Err("the body must be a JSON object with a \"query\"".to_string());
    };
    for key in map.keys() {
        if !["query", "limit", "namespace", "offset", "group"].contains(&key.as_str()) {
            return Err(format!(
                "unknown field \"{key}\"; allowed: query, limit, offset, namespace, group"
            ));
        }
    }
    let raw = RawValue::from_string(value.to_string()).map_err(|e| e.to_string())?;
    // The same rules as the search tool, worded for an HTTP client.
    let args = injected::parse_search(Some(&raw), config)
        .map_err(|m| m.replace("Argument `", "field `"))?;
    Ok(HttpSearch {
        query: args.query,
        namespace: args.namespace,
    })
}

/// `GET <search path>/health`.
fn health(config: &Config, env: &mut dyn Env) -> LocalReply {
    let mode = match config.search.ranking {
        Ranking::Bm25 => "lexical",
        Ranking::Vector => "semantic",
        Ranking::Hybrid => "hybrid",
    };
    let degraded = if config.search.ranking == Ranking::Bm25 {
        None
    } else {
        env.embeddings_degraded()
    };
    let mut search = format!(
        "{{\"status\":{},\"mode\":\"{mode}\"",
        if degraded.is_some() {
            "\"degraded\""
        } else {
            "\"ok\""
        }
    );
    if let Some(reason) = &degraded {
        search.push_str(",\"reason\":");
        search.push_str(&json::string(reason));
    }
    search.push('}');
    let mut catalogs = Vec::new();
    for ns in env.namespaces() {
        let (tools, embedded) = match env.catalog_of(&ns) {
            Ok(index) => {
                let embedded = env.tool_vectors(&index).map(|v| v.count()).unwrap_or(0);
                (index.catalog.len(), embedded)
            }
            Err(_) => (0, 0),
        };
        catalogs.push(format!(
            "{}:{{\"tools\":{tools},\"embedded\":{embedded}}}",
            json::string(&ns)
        ));
    }
    LocalReply::json(
        200,
        format!(
            "{{\"search\":{search},\"catalogs\":{{{}}}}}",
            catalogs.join(",")
        ),
    )
}
