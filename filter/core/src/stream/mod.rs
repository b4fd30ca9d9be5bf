//! One HTTP stream through the filter, as a state machine over plain data. The proxy-wasm glue
//! feeds it headers and bodies and carries out the actions it returns; tests feed it the same
//! way, over a host in memory. In the order a request meets them: `request` (classification,
//! header checks, authorization), `local` (the answers given here), `upstream` (the calls the
//! filter sends itself: `call_tool`'s), `script` (code mode's scripts), `http_api` (the
//! plain-HTTP search endpoint), `response` (the list rewrite), `reply` (how local answers are
//! framed).

use crate::config::entries::{Entry, SearchType};
use crate::config::policy::{Caller, Scope};
use crate::config::{Config, Mode, Ranking};
use crate::fetch::{FetchSpec, Origin};
use crate::index::catalog::{Catalog, CatalogIndex, Tool};
use crate::mcp::headers::{self, Mirrored};
use crate::mcp::injected::{self, Injected};
use crate::mcp::json::{self, RawObject};
use crate::mcp::jsonrpc::{self, Incoming, Kind, ListQuery, Message};
use crate::mcp::list::{self, ListContext, ListTarget, RewriteError, SseGiveUp, SseRewriter};
use crate::rank::search::{self, Fallback, FallbackKind, Query, Ranked, Vectors};
use crate::store::{Learned, StoreError};

pub(crate) use crate::plugin::Env;

mod catalog;
mod http_api;
mod insight;
mod local;
mod reply;
mod request;
mod response;
#[cfg(feature = "code-mode")]
mod script;
mod upstream;

pub use crate::stats::{Event, PassReason, Refusal};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::rc::Rc;

/// The request line and headers the filter decides on (names lowercase), and the caller.
#[derive(Debug, Default, Clone)]
pub struct RequestHead {
    pub method: String,
    pub path: String,
    /// `Mcp-Method`, `Mcp-Name`, `MCP-Protocol-Version`: checked against the body, never
    /// trusted instead of it.
    pub mcp: Mirrored,
    pub accept: Option<String>,
    /// Every `content-type` and `content-encoding` value sent.
    pub content_type: Vec<String>,
    pub content_encoding: Vec<String>,
    /// The declared `content-length`, when it is one number.
    pub content_length: Option<u64>,
    /// Names of the headers whose value was not UTF-8 (read lossily into this head).
    pub invalid_utf8: Vec<String>,
    pub session_id: Option<String>,
    pub caller: Caller,
    pub authority: Option<String>,
    /// The caller's values of `catalog.forward_headers`, for a fetch made for this caller.
    pub forwarded: Vec<(String, String)>,
    /// The fetch marker header, if the request carries one.
    pub fetch_marker: Option<String>,
    /// Every header as sent, kept only where headers are forwarded before the body is read:
    /// `call_tool` is then performed by the filter with the caller's headers.
    pub headers: Vec<(String, String)>,
}

impl RequestHead {
    /// The head of a request from all its headers (pseudo-headers included, names lowercase,
    /// repeated headers repeated), and the caller the configuration identifies in them.
    pub fn from_headers(
        config: &Config,
        headers: &[(String, String)],
        metadata: impl FnOnce() -> Option<Vec<u8>>,
    ) -> RequestHead {
        let first = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        let mut mcp = Mirrored::default();
        for (name, value) in headers {
            mcp.add(name, value);
        }
        let caller = match &config.authorization {
            Some(policy) => Caller::identify(&policy.identity, headers, metadata),
            None => Caller::anonymous(),
        };
        let all = |name: &str| {
            headers
                .iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
                .collect()
        };
        RequestHead {
            method: first(":method").unwrap_or_default(),
            path: first(":path").unwrap_or_default(),
            mcp,
            accept: first("accept"),
            content_type: all("content-type"),
            content_encoding: all("content-encoding"),
            content_length: match all("content-length").as_slice() {
                [one] => one.trim().parse().ok(),
                _ => None,
            },
            invalid_utf8: Vec::new(),
            session_id: first("mcp-session-id"),
            caller,
            authority: first(":authority"),
            forwarded: config
                .catalog
                .forward_headers
                .iter()
                .flat_map(|name| {
                    headers
                        .iter()
                        .filter(move |(k, _)| k == name)
                        .map(|(k, v)| (k.clone(), v.clone()))
                })
                .collect(),
            fetch_marker: first(crate::fetch::MARKER_HEADER),
            // Code mode's scripts call tools with the caller's headers whatever the hold mode.
            headers: if config.hold_request_headers && config.mode != Mode::Code {
                Vec::new()
            } else {
                headers.to_vec()
            },
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LocalReply {
    pub status: u32,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl LocalReply {
    /// Streamable HTTP: notifications alone are answered 202 Accepted with no body.
    fn accepted() -> Self {
        LocalReply {
            status: 202,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    fn json(status: u32, body: String) -> Self {
        LocalReply {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.into_bytes(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RequestHeadersAction {
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

/// A change to request headers the filter still holds (`hold_request_headers`); forwarded
/// headers can no longer change, so none is asked for then.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeaderChange {
    Remove(&'static str),
    Set(&'static str, String),
    /// A header named at run time (a tool's `Mcp-Param-*`).
    Add(String, String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RequestBodyAction {
    Continue {
        headers: Vec<HeaderChange>,
    },
    Reply(LocalReply),
    /// Send this body upstream instead.
    Replace {
        body: Vec<u8>,
        headers: Vec<HeaderChange>,
    },
    /// Embed these texts (one embeddings call), then call `on_query_embeddings`.
    Embed {
        texts: Vec<String>,
    },
    /// Fetch this namespace's catalog (`Plugin::start_fetch`), then call `on_catalog`.
    Fetch {
        namespace: String,
        spec: FetchSpec,
    },
    /// Make this call (the `tools/call` that `call_tool` stands for), then hand its answer to
    /// `on_call_answer`.
    Call(crate::call::HttpCall),
    /// Make these calls (a script's `tools/call`s, by the script's call id), then hand each
    /// answer to `on_script_reply`.
    #[cfg(feature = "code-mode")]
    ScriptCalls(Vec<(u32, crate::call::HttpCall)>),
    /// Nothing to do until a call this stream made answers.
    #[cfg(feature = "code-mode")]
    Wait,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResponseHeadersAction {
    Continue,
    /// Remove `content-length`: the body goes through `on_response_chunk`.
    RewriteBody,
    /// A list that cannot be filtered for this caller: remove `content-length` and
    /// `content-encoding`, set `content-type: application/json`; the body (through
    /// `on_response_chunk`) becomes a JSON-RPC error.
    Refuse,
    /// An SSE stream to watch for `notifications/tools/list_changed`: its body goes through
    /// `on_response_chunk` and comes back unchanged.
    Watch,
}

/// Requests larger than this are never a `tools/list` or a search: they go through unread
/// (when no authorization needs the tool name). A declared length above it is decided at the
/// headers, since a held body counts against Envoy's buffer limit (1 MiB by default) and one
/// socket read can add most of a megabyte to it.
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
    /// Waiting for the catalog (this worker's fetch, or another's); likewise.
    Fetching(Pending),
    /// Waiting for the answer to a `tools/call` the filter made for `call_tool` (the request's
    /// id, to answer a failure with).
    Calling(Option<Box<RawValue>>),
    /// A script runs (code mode), between its steps.
    #[cfg(feature = "code-mode")]
    Script(Box<script::Scripting>),
    AwaitResponse,
    /// JSON is held in the VM, not in Envoy's buffer: Envoy resets a stream whose paused body
    /// passes its buffer limit (1 MiB by default), long before our own cap.
    Json(Vec<u8>),
    Sse(SseRewriter),
    /// Under authorization, a list that cannot be filtered is replaced by an error, never
    /// passed on: `true` once the error has been sent (the rest is dropped).
    Refuse(PassReason, bool),
    /// An SSE stream read for `notifications/tools/list_changed` only.
    Watch(crate::mcp::notify::ListChangedScanner),
    Done,
}

/// A request kept while it waits, as it was classified: it is never read again.
#[derive(Debug)]
enum Pending {
    Mcp(Incoming),
    Http(HttpSearch),
}

/// A request to the plain-HTTP search endpoint.
#[derive(Debug, Clone)]
struct HttpSearch {
    query: Query,
    namespace: Option<String>,
    kind: crate::config::entries::SearchType,
    /// Answer with each result's score explained (`rank::explain`).
    explain: bool,
    /// Definitions, lines (`"summary"`) or names.
    detail: crate::mcp::injected::answer::Detail,
}

/// The state of one stream.
#[derive(Debug)]
pub(crate) struct Stream {
    phase: Phase,
    head: RequestHead,
    targets: Vec<ListTarget>,
    /// The request is on an MCP path: an SSE response is watched for list changes.
    watch: bool,
    /// Why the catalog fetched for this request could not be had (then the search says so).
    fetch_error: Option<String>,
    /// A fetch was made for this request (at most one).
    fetched: bool,
    /// Under a policy that restricts this caller: every list result on the response is
    /// filtered, whatever its id (`mcp::guard`).
    guarding: bool,
    /// The id of the request when it is one message, to answer a withheld response with.
    reply_id: Option<Box<RawValue>>,
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
            watch: false,
            fetch_error: None,
            fetched: false,
            guarding: false,
            reply_id: None,
        }
    }

    /// Whether a script runs on this stream (code mode): its answer is the filter's own.
    fn running_script(&self) -> bool {
        #[cfg(feature = "code-mode")]
        {
            matches!(self.phase, Phase::Script(_))
        }
        #[cfg(not(feature = "code-mode"))]
        {
            false
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

    /// Whether the caller's protocol defines tools' `outputSchema` and `structuredContent`
    /// (MCP 2025-06-18 and later, from `MCP-Protocol-Version`; without it a server assumes
    /// 2025-03-26, Streamable HTTP "Protocol Version Header").
    fn structured(&self) -> bool {
        self.head
            .mcp
            .protocol_version
            .first()
            .is_some_and(|v| v.as_str() >= crate::mcp::injected::answer::STRUCTURED_SINCE)
    }

    /// How a search's answer is shaped for this caller.
    fn shape(
        &self,
        args: &crate::mcp::injected::SearchArgs,
    ) -> crate::mcp::injected::answer::Shape {
        crate::mcp::injected::answer::Shape {
            detail: args.detail,
            max_tokens: args.max_tokens,
            structured: self.structured(),
            modern: self.modern(),
        }
    }

    /// What the caller may see in `namespace`; `None` when that is every tool.
    fn scope<'c>(&self, config: &'c Config, namespace: &str) -> Option<Scope<'c>> {
        config
            .authorization
            .as_ref()
            .map(|policy| policy.scope(&self.head.caller, namespace))
            .filter(|scope| !scope.allows_everything())
    }

    /// Whether this caller may use a prompt, resource or resource template (by its key).
    fn entry_allowed<'c>(
        &self,
        config: &'c Config,
        namespace: &str,
    ) -> impl Fn(Entry, &str) -> bool + 'c {
        let scope = config
            .authorization
            .as_ref()
            .map(|policy| policy.scope(&self.head.caller, namespace));
        move |entry: Entry, key: &str| scope.as_ref().is_none_or(|s| s.allows_entry(entry, key))
    }

    /// Whether the policy keeps any entry of any kind from this caller in `namespace`.
    fn restricted(&self, config: &Config, namespace: &str) -> bool {
        config.authorization.as_ref().is_some_and(|policy| {
            let scope = policy.scope(&self.head.caller, namespace);
            Entry::ALL.iter().any(|&entry| !scope.allows_every(entry))
        })
    }

    /// What a guarded response may carry (`mcp::guard`): the entries the policy allows this
    /// caller, and the filter's own tools, which it answers itself.
    fn receivable<'c>(
        &self,
        config: &'c Config,
        namespace: &str,
    ) -> impl Fn(Entry, Option<&str>) -> bool + 'c {
        let scope = config
            .authorization
            .as_ref()
            .map(|policy| policy.scope(&self.head.caller, namespace));
        let injecting = config.mode != Mode::List;
        move |entry: Entry, key: Option<&str>| {
            let Some(scope) = &scope else {
                return true;
            };
            match key {
                Some(_) if scope.allows_every(entry) => true,
                Some(key) if entry == Entry::Tool => {
                    (injecting && Injected::of(config, key).is_some())
                        || scope.allows_entry(entry, key)
                }
                // A URI a server would read otherwise than as written (`HTTPS://…:443/x`) is
                // matched by no rule as the server reads it: listed, it would pass a deny glob.
                Some(key) if entry != Entry::Prompt => {
                    crate::config::paths::resource_uri_problem(key).is_none()
                        && scope.allows_entry(entry, key)
                }
                Some(key) => scope.allows_entry(entry, key),
                // No rule can allow an entry without a readable key, unless the caller may
                // have every entry of its kind.
                None => scope.allows_every(entry),
            }
        }
    }

    fn allowed<'c>(&self, config: &'c Config, namespace: &str) -> impl Fn(&str) -> bool + 'c {
        let scope = self.scope(config, namespace);
        move |name: &str| scope.as_ref().is_none_or(|s| s.allows(name))
    }
}

fn no_vectors() -> Fallback {
    Fallback::new(FallbackKind::Unavailable, "embeddings are not configured")
}
