//! One HTTP stream through the filter, as a state machine over plain data (DESIGN.md §2). The
//! proxy-wasm glue feeds it headers and bodies and carries out the actions it returns; tests
//! feed it the same way, with no host at all.

use crate::catalog::{CatalogIndex, Tool};
use crate::config::Config;
use crate::jsonrpc::{self, Incoming, Kind};
use crate::rewrite::{self, ListContext, ListTarget, RewriteError, SseGiveUp, SseRewriter};
use crate::search_tool::{self, SearchMeta};
use crate::store::StoreError;
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
    SearchAnswered,
    SearchRejected,
    PassedThrough(PassReason),
    Error,
}

/// What a stream needs from its surroundings: its namespace's catalog, learning, and stats.
pub trait Env {
    fn namespace(&self) -> String;
    fn catalog(&mut self) -> Result<Rc<CatalogIndex>, StoreError>;
    fn learn(&mut self, page: &[Tool], complete: bool) -> Result<bool, StoreError>;
    fn record(&mut self, event: Event);
    fn log_warn(&mut self, message: &str);
}

/// The request line and headers the filter decides on (names lowercase).
#[derive(Debug, Default, Clone)]
pub struct RequestHead {
    pub method: String,
    pub path: String,
    pub mcp_method: Option<String>,
    pub mcp_name: Option<String>,
    pub protocol_version: Option<String>,
    pub accept: Option<String>,
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestHeadersAction {
    /// Not ours, or not worth reading: let it through and forget the stream.
    Continue,
    /// Read the body before deciding. With `hold`, the headers wait for the body (pause);
    /// otherwise they go upstream now, and `strip_accept_encoding` must be done now because
    /// headers can only change in this callback.
    ReadBody {
        hold: bool,
        strip_accept_encoding: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalReply {
    pub status: u32,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestBodyAction {
    Continue { strip_accept_encoding: bool },
    Reply(LocalReply),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseHeadersAction {
    Continue,
    /// Remove `content-length`: the body goes through `on_response_chunk`.
    RewriteBody,
}

/// Requests larger than this are never a `tools/list` or a search: they go through unread
/// (when no authorization needs the tool name), and Envoy's default 1 MiB buffer is never
/// reached while the body is held.
pub const REQUEST_CLASSIFY_CAP: usize = 256 * 1024;

#[derive(Debug)]
enum Phase {
    Ignored,
    RequestBody,
    AwaitResponse,
    /// JSON is held in the VM, not in Envoy's buffer: Envoy resets a stream whose paused body
    /// passes its buffer limit (1 MiB by default), long before our own cap.
    Json(Vec<u8>),
    Sse(SseRewriter),
    Done,
}

/// The state of one stream.
#[derive(Debug)]
pub struct Stream {
    phase: Phase,
    head: RequestHead,
    targets: Vec<ListTarget>,
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
            .protocol_version
            .as_deref()
            .is_some_and(|v| v >= "2026-07-28")
    }

    pub fn on_request_headers(
        &mut self,
        config: &Config,
        head: RequestHead,
        end_of_stream: bool,
    ) -> RequestHeadersAction {
        let path = head.path.split('?').next().unwrap_or("");
        // GET streams and DELETE never carry a request we change (Streamable HTTP, spec
        // 2025-11-25 "Transports": only POST bodies hold client messages).
        if !config.is_mcp_path(path) || head.method != "POST" || end_of_stream {
            return RequestHeadersAction::Continue;
        }
        // Protocol 2026-07-28 names the method (and tool) in headers: skip the body when the
        // request is one we leave alone.
        let interesting = match head.mcp_method.as_deref() {
            None => true,
            Some("tools/list") => true,
            Some("tools/call") => head
                .mcp_name
                .as_deref()
                .is_none_or(|n| n == config.search.tool_name),
            Some(_) => false,
        };
        if !interesting {
            return RequestHeadersAction::Continue;
        }
        let hold = config.hold_request_headers;
        // Forwarded headers cannot wait for the body: a response that may be rewritten must
        // come back uncompressed, so every candidate request asks for identity encoding.
        let strip_accept_encoding = !hold || head.mcp_method.as_deref() == Some("tools/list");
        self.head = head;
        self.phase = Phase::RequestBody;
        RequestHeadersAction::ReadBody {
            hold,
            strip_accept_encoding,
        }
    }

    /// Whether the glue should buffer the request body for `on_request_body`.
    pub fn wants_request_body(&self) -> bool {
        matches!(self.phase, Phase::RequestBody)
    }

    /// The most request body the filter holds before letting the request go unread.
    pub fn request_cap(&self, config: &Config) -> usize {
        if config.authorization.is_some() {
            config.max_body_bytes
        } else {
            REQUEST_CLASSIFY_CAP.min(config.max_body_bytes)
        }
    }

    /// The request body was larger than the cap: let it go as it is.
    pub fn request_too_large(&mut self, env: &mut dyn Env) {
        env.record(Event::PassedThrough(PassReason::TooLarge));
        self.phase = Phase::Done;
    }

    /// The whole request body.
    pub fn on_request_body(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        body: &[u8],
    ) -> RequestBodyAction {
        let pass = RequestBodyAction::Continue {
            strip_accept_encoding: false,
        };
        self.phase = Phase::Done;
        let incoming = match jsonrpc::parse(body) {
            Ok(incoming) => incoming,
            // Not ours to judge: the upstream answers malformed requests with its own error.
            Err(_) => return pass,
        };
        let search_name = config.search.tool_name.as_str();
        let mut searches = 0;
        for m in incoming.messages() {
            match m.kind() {
                Kind::ToolsList { first_page } => {
                    if let Some(id) = m.id_value() {
                        self.targets.push(ListTarget { id, first_page });
                    }
                }
                Kind::ToolsCall { name, .. } if name == search_name => searches += 1,
                _ => {}
            }
        }
        if let Some(reply) = self.header_mismatch(&incoming) {
            return RequestBodyAction::Reply(reply);
        }
        if searches > 0 {
            if searches == incoming.messages().len() {
                return RequestBodyAction::Reply(self.answer_searches(config, env, &incoming));
            }
            // A batch mixing our tool with upstream calls cannot be split without rewriting
            // both directions; batches left the protocol in 2025-06-18, so it goes upstream.
            env.record(Event::PassedThrough(PassReason::MixedBatch));
            self.targets.clear();
            return pass;
        }
        if self.targets.is_empty() {
            return pass;
        }
        self.phase = Phase::AwaitResponse;
        RequestBodyAction::Continue {
            strip_accept_encoding: true,
        }
    }

    /// Protocol 2026-07-28: `mcp-method`/`mcp-name` must agree with the body, else 400.
    fn header_mismatch(&self, incoming: &Incoming) -> Option<LocalReply> {
        let header = self.head.mcp_method.as_deref()?;
        let Incoming::Single(m) = incoming else {
            return None;
        };
        let body_method = m.method.as_deref().unwrap_or("");
        let name_differs = match (m.kind(), self.head.mcp_name.as_deref()) {
            (Kind::ToolsCall { name, .. }, Some(h)) => name != h,
            _ => false,
        };
        if body_method == header && !name_differs {
            return None;
        }
        let message = format!(
            "mcp-method header {header:?} does not match the request body (method {body_method:?})"
        );
        Some(LocalReply {
            status: 400,
            headers: vec![("content-type".into(), "application/json".into())],
            body: jsonrpc::error_response(m.id.as_deref(), jsonrpc::INVALID_REQUEST, &message)
                .into_bytes(),
        })
    }

    fn answer_searches(
        &mut self,
        config: &Config,
        env: &mut dyn Env,
        incoming: &Incoming,
    ) -> LocalReply {
        let modern = self.modern();
        let index = env.catalog();
        let mut replies = Vec::new();
        for m in incoming.messages() {
            let (Some(id), Kind::ToolsCall { arguments, .. }) = (m.id.as_deref(), m.kind()) else {
                continue;
            };
            let result = match (&index, search_tool::parse_arguments(arguments, config)) {
                (_, Err(message)) => {
                    env.record(Event::SearchRejected);
                    search_tool::error_result(&message, modern)
                }
                (Err(e), Ok(_)) => {
                    env.record(Event::Error);
                    env.log_warn(&format!("tool search could not read the catalog: {e}"));
                    search_tool::error_result(
                        "The tool catalog is unavailable right now; list tools again and retry.",
                        modern,
                    )
                }
                (Ok(index), Ok(args)) => {
                    env.record(Event::SearchAnswered);
                    answer(index, &args, modern)
                }
            };
            replies.push(jsonrpc::result_response(id, &result));
        }
        let body = match incoming {
            Incoming::Single(_) => replies.concat(),
            Incoming::Batch(_) => format!("[{}]", replies.join(",")),
        };
        self.reply(body)
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
            env.record(Event::PassedThrough(PassReason::Encoded));
            return ResponseHeadersAction::Continue;
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
            _ => {
                env.record(Event::PassedThrough(PassReason::ContentType));
                ResponseHeadersAction::Continue
            }
        }
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
        let out = match &mut phase {
            Phase::Json(held) => {
                held.extend_from_slice(chunk);
                if held.len() > config.max_body_bytes {
                    env.record(Event::PassedThrough(PassReason::TooLarge));
                    return std::mem::take(held);
                }
                if !end_of_stream {
                    self.phase = phase;
                    return Vec::new();
                }
                let whole = std::mem::take(held);
                match self.rewrite(config, env, &whole) {
                    Ok(Some(new)) => new,
                    Ok(None) => whole,
                    Err(e) => {
                        env.record(Event::PassedThrough(PassReason::Unparseable));
                        env.log_warn(&format!("tools/list response passed through unchanged: {e}"));
                        whole
                    }
                }
            }
            Phase::Sse(rewriter) => {
                let before = rewriter.gave_up().is_some();
                let out = rewriter.push(chunk, end_of_stream, &mut |data| {
                    self.rewrite(config, env, data)
                });
                if !before {
                    match rewriter.gave_up() {
                        Some(SseGiveUp::TooLarge) => {
                            env.record(Event::PassedThrough(PassReason::TooLarge))
                        }
                        Some(SseGiveUp::Unparseable(e)) => {
                            env.record(Event::PassedThrough(PassReason::Unparseable));
                            env.log_warn(&format!(
                                "tools/list event passed through unchanged: {e}"
                            ));
                        }
                        None => {}
                    }
                }
                if !end_of_stream {
                    self.phase = phase;
                }
                out
            }
            _ => chunk.to_vec(),
        };
        out
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
        matches!(self.phase, Phase::Json(_) | Phase::Sse(_))
    }

    fn rewrite(
        &self,
        config: &Config,
        env: &mut dyn Env,
        message: &[u8],
    ) -> Result<Option<Vec<u8>>, RewriteError> {
        let known = match env.catalog() {
            Ok(index) => index
                .progressive_names(|_| true)
                .into_iter()
                .map(str::to_string)
                .collect(),
            Err(e) => {
                env.record(Event::Error);
                env.log_warn(&format!("catalog unavailable while listing: {e}"));
                Vec::new()
            }
        };
        let namespace = env.namespace();
        let ctx = ListContext {
            config,
            namespace: &namespace,
            known_progressive: known,
            allowed: &|_| true,
        };
        let Some(outcome) = rewrite::rewrite_message(message, &self.targets, &ctx)? else {
            return Ok(None);
        };
        for _ in 0..outcome.rewritten {
            env.record(Event::ListRewritten);
        }
        env.record(Event::ToolsHidden(outcome.hidden as u64));
        if let Err(e) = env.learn(&outcome.learned, outcome.complete) {
            env.record(Event::Error);
            env.log_warn(&format!("could not store the learned tools: {e}"));
        }
        Ok(Some(outcome.body))
    }
}

impl Default for Stream {
    fn default() -> Self {
        Stream::new()
    }
}

/// Answers one validated search from the index.
pub fn answer(index: &CatalogIndex, args: &search_tool::SearchArgs, modern: bool) -> String {
    if index.catalog.is_empty() {
        return search_tool::error_result(
            "No tools are known for this server yet: call tools/list once, then search again.",
            modern,
        );
    }
    if let Some(ns) = &args.namespace {
        if *ns != index.namespace {
            return search_tool::error_result(
                &format!(
                    "Namespace {ns:?} is not served here; this server's namespace is {:?}. Search again without `namespace`.",
                    index.namespace
                ),
                modern,
            );
        }
    }
    let found = index.search_bm25(&args.query, args.limit, |_| true);
    let meta = SearchMeta {
        strategy: "bm25",
        candidates: index.catalog.len(),
    };
    search_tool::result(&found, &meta, modern)
}
