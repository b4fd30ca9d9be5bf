//! Fetching a namespace's catalog from the upstream itself: the MCP exchange a client would
//! make to list tools, as a sequence of host HTTP calls (proxy-wasm `dispatch_http_call`).
//!
//! The exchange follows the caller's context when the server needs one: a 2025-era session
//! (`mcp-session-id` and `mcp-protocol-version`, spec 2025-11-25 "Transports", Session
//! Management) is reused; a 2026-07-28 caller's list is stateless (`params._meta` and the
//! `Mcp-Method` header). Otherwise the filter opens its own session (`initialize`,
//! `notifications/initialized`, the pages, then `DELETE`), which also serves stateless 2025-era
//! servers; a server that refuses `initialize` is asked the 2026-07-28 way.
//!
//! After the tools, the same exchange lists the server's prompts, resources and resource
//! templates: those its `initialize` result declares, or, in a caller's context (where the
//! filter did not see it), each of them, a server's refusal of one meaning it has none.

mod reply;

use crate::call::HttpCall;
use crate::config::entries::Entry;
use crate::index::catalog::Tool;
use crate::mcp::json;
pub(crate) use reply::read_reply;
use reply::ListPage;
use std::fmt;

pub use reply::ReplyError;

/// The protocol version the filter's own session asks for (the newest 2025-era one).
pub const OWN_PROTOCOL_VERSION: &str = "2025-11-25";
/// The version whose requests are stateless and carry `_meta` (spec 2026-07-28).
pub const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";
/// A listing longer than this many pages is a cursor loop or a server at fault.
pub const MAX_PAGES: usize = 1000;
/// The header marking the filter's own fetch through a loopback cluster (its value is a
/// per-Envoy secret). Removed from every request before it goes upstream.
pub const MARKER_HEADER: &str = "x-mcp-tool-search-fetch";
/// How early (by the VM's clock) a call Envoy timed out may seem to end.
const TIMER_SLACK_MS: u64 = 50;
/// What a fetch lists after the tools, in order.
pub const KINDS_AFTER_TOOLS: [Entry; 3] = [Entry::Prompt, Entry::Resource, Entry::ResourceTemplate];
/// Identifies a fetch to the server (and to this filter behind a loopback cluster).
pub const CLIENT_NAME: &str = "mcp-tool-search";

/// Where a fetch goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub cluster: String,
    pub authority: String,
    pub path: String,
}

/// Whose context the listing runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Context {
    /// The caller's 2025-era session.
    Session {
        id: String,
        protocol_version: String,
    },
    /// A 2026-07-28 exchange (no session).
    Modern,
    /// A session of the filter's own.
    Own,
}

/// What to fetch, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchSpec {
    pub origin: Origin,
    pub context: Context,
    /// Forwarded caller headers, configured headers and any loopback marker (names lowercase).
    pub headers: Vec<(String, String)>,
    pub timeout_ms: u64,
    /// The most response bytes a whole fetch may read.
    pub max_bytes: usize,
    /// Whose list this is (a digest of the forwarded caller headers): a private list is kept
    /// for this credential only.
    pub credential: String,
}

/// Why a fetch failed, in words an operator (and, in a search result, an agent) can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// The host would not start the call (an unknown cluster, say).
    NotStarted {
        cluster: String,
        reason: String,
    },
    /// No response: reset, refused or no healthy upstream.
    Unreachable {
        step: &'static str,
    },
    Timeout {
        step: &'static str,
        after_ms: u64,
    },
    Status {
        step: &'static str,
        status: String,
    },
    Reply {
        step: &'static str,
        error: ReplyError,
    },
    TooLarge {
        limit: usize,
    },
    TooManyPages,
}

impl FetchError {
    /// The short name health reports and stats could group by.
    pub fn kind(&self) -> &'static str {
        match self {
            FetchError::NotStarted { .. } => "not_started",
            FetchError::Unreachable { .. } => "unreachable",
            FetchError::Timeout { .. } => "timeout",
            FetchError::Status { .. } => "status",
            FetchError::Reply { .. } => "unparseable",
            FetchError::TooLarge { .. } => "too_large",
            FetchError::TooManyPages => "too_many_pages",
        }
    }
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::NotStarted { cluster, reason } => {
                write!(
                    f,
                    "the call to cluster {cluster:?} could not start ({reason})"
                )
            }
            FetchError::Unreachable { step } => {
                write!(
                    f,
                    "{step}: no response from the server (reset or unreachable)"
                )
            }
            FetchError::Timeout { step, after_ms } => {
                write!(f, "{step}: no response within {after_ms} ms")
            }
            FetchError::Status { step, status } => {
                write!(f, "{step}: the server answered HTTP {status}")
            }
            FetchError::Reply { step, error } => write!(f, "{step}: {error}"),
            FetchError::TooLarge { limit } => {
                write!(
                    f,
                    "the tool list is larger than max_body_bytes ({limit} bytes)"
                )
            }
            FetchError::TooManyPages => write!(
                f,
                "tools/list: more than {MAX_PAGES} pages (a cursor loop?)"
            ),
        }
    }
}

impl std::error::Error for FetchError {}

/// The digest that names one caller's credentials (the forwarded header values).
pub fn credential_of(forwarded: &[(String, String)]) -> String {
    let mut text = String::new();
    for (name, value) in forwarded {
        text.push_str(name);
        text.push(':');
        text.push_str(value);
        text.push('\n');
    }
    format!("{:016x}", crate::index::fnv::hash(text.as_bytes()))
}

/// A whole listing.
#[derive(Debug, Default)]
pub struct Fetched {
    pub tools: Vec<Tool>,
    pub pages: usize,
    /// The server said the list is shaped by the caller (`cacheScope: "private"`, spec
    /// 2026-07-28 "Caching").
    pub private: bool,
    /// The server's `ttlMs`, if it gave one.
    pub ttl_ms: Option<u64>,
    /// Whole lists of prompts, resources and resource templates, by kind (those the server
    /// listed).
    pub entries: Vec<(Entry, Vec<Tool>)>,
}

/// What to do next.
#[derive(Debug)]
pub enum Step {
    Call(HttpCall),
    /// The listing, and a last call to make without waiting for its answer (closing the
    /// filter's own session).
    Done(Result<Fetched, FetchError>, Option<HttpCall>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Initialize,
    Initialized,
    List,
}

impl Stage {
    fn name(self, listing: Entry) -> &'static str {
        match self {
            Stage::Initialize => "initialize",
            Stage::Initialized => "notifications/initialized",
            Stage::List => listing.list_method(),
        }
    }
}

/// One fetch in progress.
#[derive(Debug)]
pub struct Fetch {
    spec: FetchSpec,
    stage: Stage,
    modern: bool,
    session: Option<String>,
    protocol_version: String,
    /// Whether the session is the filter's own (closed at the end).
    own: bool,
    /// Whether the caller's session failed and the filter's own is being tried.
    retried: bool,
    next_id: u64,
    /// What is being listed, and what is to be listed after it.
    listing: Entry,
    then: Vec<Entry>,
    /// The entries of the list being read (prompts, resources or templates).
    entries: Vec<Tool>,
    cursor: Option<String>,
    seen_cursors: Vec<String>,
    fetched: Fetched,
    names: crate::index::fnv::FnvHashSet<String>,
    bytes: usize,
    sent_at_ms: u64,
}

impl Fetch {
    /// Starts a fetch: the fetch and its first call.
    pub fn start(spec: FetchSpec, now_ms: u64) -> (Fetch, HttpCall) {
        let mut fetch = Fetch {
            spec,
            stage: Stage::List,
            modern: false,
            session: None,
            protocol_version: OWN_PROTOCOL_VERSION.to_string(),
            own: false,
            retried: false,
            next_id: 0,
            listing: Entry::Tool,
            then: KINDS_AFTER_TOOLS.to_vec(),
            entries: Vec::new(),
            cursor: None,
            seen_cursors: Vec::new(),
            fetched: Fetched::default(),
            names: Default::default(),
            bytes: 0,
            sent_at_ms: now_ms,
        };
        match fetch.spec.context.clone() {
            Context::Session {
                id,
                protocol_version,
            } => {
                fetch.session = Some(id);
                fetch.protocol_version = protocol_version;
            }
            Context::Modern => {
                fetch.modern = true;
                fetch.protocol_version = MODERN_PROTOCOL_VERSION.to_string();
            }
            Context::Own => {
                fetch.own = true;
                fetch.stage = Stage::Initialize;
            }
        }
        let call = fetch.call();
        (fetch, call)
    }

    pub fn origin(&self) -> &Origin {
        &self.spec.origin
    }

    pub fn credential(&self) -> &str {
        &self.spec.credential
    }

    /// The answer to the last call (`status`: `:status`, `None` when the call failed without a
    /// response).
    pub fn on_response(
        &mut self,
        status: Option<&str>,
        headers: &[(String, String)],
        body: &[u8],
        now_ms: u64,
    ) -> Step {
        match self.advance(status, headers, body, now_ms) {
            Ok(Some(call)) => {
                self.sent_at_ms = now_ms;
                Step::Call(call)
            }
            Ok(None) => {
                let fetched = std::mem::take(&mut self.fetched);
                Step::Done(Ok(fetched), self.close())
            }
            Err(e) => Step::Done(Err(e), self.close()),
        }
    }

    fn advance(
        &mut self,
        status: Option<&str>,
        headers: &[(String, String)],
        body: &[u8],
        now_ms: u64,
    ) -> Result<Option<HttpCall>, FetchError> {
        let step = self.stage.name(self.listing);
        let after_ms = now_ms.saturating_sub(self.sent_at_ms);
        let timeout = FetchError::Timeout {
            step,
            after_ms: self.spec.timeout_ms,
        };
        // The clock a VM reads is coarser than Envoy's timer: a call Envoy ended at its
        // timeout may look a few milliseconds early.
        let timed_out = after_ms.saturating_add(TIMER_SLACK_MS) >= self.spec.timeout_ms;
        let Some(status) = status else {
            // Prompts and resources are extras: a server that does not answer for them still
            // has its tools listed.
            if self.stage == Stage::List && self.listing != Entry::Tool {
                return Ok(self.next_list());
            }
            return Err(if timed_out {
                timeout
            } else {
                FetchError::Unreachable { step }
            });
        };
        // Envoy answers a dispatched call itself when it cannot reach the server (a local 503
        // saying so) and when the call runs out of time (a local 504): those are not the
        // server's answers.
        let envoy_says = |prefix: &[u8]| body.starts_with(prefix);
        if status == "504" && (timed_out || envoy_says(b"upstream request timeout")) {
            return Err(timeout);
        }
        if status == "503"
            && (envoy_says(b"upstream connect error") || envoy_says(b"no healthy upstream"))
        {
            return Err(FetchError::Unreachable { step });
        }
        self.bytes = self.bytes.saturating_add(body.len());
        if self.bytes > self.spec.max_bytes {
            return Err(FetchError::TooLarge {
                limit: self.spec.max_bytes,
            });
        }
        let ok = status.len() == 3 && status.starts_with('2');
        match self.stage {
            Stage::Initialize => {
                if !ok {
                    // A 2026-07-28 server has no `initialize`: ask it the stateless way.
                    if status.starts_with('4') {
                        return Ok(Some(self.go_modern()));
                    }
                    return Err(FetchError::Status {
                        step,
                        status: status.to_string(),
                    });
                }
                let result = match read_reply(body, self.next_id) {
                    Ok(result) => result,
                    Err(ReplyError::Rpc { .. }) => return Ok(Some(self.go_modern())),
                    Err(error) => return Err(FetchError::Reply { step, error }),
                };
                if let Some(v) = reply::protocol_version(&result) {
                    self.protocol_version = v;
                }
                let (prompts, resources) = reply::serves(&result);
                self.then.retain(|e| match e {
                    Entry::Prompt => prompts,
                    _ => resources,
                });
                self.session = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id"))
                    .map(|(_, v)| v.clone());
                self.stage = Stage::Initialized;
                Ok(Some(self.call()))
            }
            Stage::Initialized => {
                if !ok {
                    return Err(FetchError::Status {
                        step,
                        status: status.to_string(),
                    });
                }
                self.stage = Stage::List;
                Ok(Some(self.call()))
            }
            Stage::List if self.listing != Entry::Tool => {
                // A kind the server refuses to list (an HTTP or JSON-RPC error) is one it does
                // not have: the catalog of tools stands without it.
                // Nor does one it answers in a way the filter cannot use (unreadable, a
                // cursor loop): its tools stand, this kind is left out.
                let page = match (ok, read_reply(body, self.next_id)) {
                    (true, Ok(result)) => match ListPage::read(&result, self.listing) {
                        Ok(page) => page,
                        Err(_) => return Ok(self.next_list()),
                    },
                    _ => return Ok(self.next_list()),
                };
                self.fetched.pages += 1;
                // A list shaped for the caller is never kept for others.
                if page.private {
                    return Ok(self.next_list());
                }
                let firsts = self.first_of_each_name(page.tools);
                self.entries.extend(firsts);
                match page.next_cursor {
                    None => {
                        let entries = std::mem::take(&mut self.entries);
                        self.fetched.entries.push((self.listing, entries));
                        Ok(self.next_list())
                    }
                    Some(cursor) => Ok(self.next_page(cursor).ok().or_else(|| self.next_list())),
                }
            }
            Stage::List => {
                if !ok {
                    // The caller's session may have ended (404) or be refused for a list from
                    // here (400): a session of the filter's own is tried once.
                    if self.session.is_some() && !self.own && !self.retried {
                        return Ok(Some(self.restart_own()));
                    }
                    return Err(FetchError::Status {
                        step,
                        status: status.to_string(),
                    });
                }
                let page = read_reply(body, self.next_id)
                    .and_then(|result| ListPage::read(&result, Entry::Tool))
                    .map_err(|error| FetchError::Reply { step, error })?;
                self.fetched.pages += 1;
                self.fetched.private |= page.private;
                if page.ttl_ms.is_some() {
                    self.fetched.ttl_ms = page.ttl_ms;
                }
                let firsts = self.first_of_each_name(page.tools);
                self.fetched.tools.extend(firsts);
                match page.next_cursor {
                    None => Ok(self.next_list()),
                    Some(cursor) => self.next_page(cursor).map(Some),
                }
            }
        }
    }

    /// The entries of a page whose name this list has not had yet: the first definition of a
    /// name is the entry, as in a list passing through.
    fn first_of_each_name(&mut self, page: Vec<Tool>) -> Vec<Tool> {
        page.into_iter()
            .filter(|e| self.names.insert(e.name.to_string()))
            .collect()
    }

    /// The call for the page after `cursor`.
    fn next_page(&mut self, cursor: String) -> Result<HttpCall, FetchError> {
        if self.fetched.pages >= MAX_PAGES || self.seen_cursors.contains(&cursor) {
            return Err(FetchError::TooManyPages);
        }
        self.seen_cursors.push(cursor.clone());
        self.cursor = Some(cursor);
        Ok(self.call())
    }

    /// The first call of the next kind to list, if any is left.
    fn next_list(&mut self) -> Option<HttpCall> {
        if self.then.is_empty() {
            return None;
        }
        self.listing = self.then.remove(0);
        self.entries.clear();
        self.names.clear();
        self.cursor = None;
        self.seen_cursors.clear();
        Some(self.call())
    }

    fn go_modern(&mut self) -> HttpCall {
        self.own = false;
        self.modern = true;
        self.session = None;
        self.protocol_version = MODERN_PROTOCOL_VERSION.to_string();
        self.stage = Stage::List;
        self.call()
    }

    fn restart_own(&mut self) -> HttpCall {
        self.retried = true;
        self.own = true;
        self.session = None;
        self.protocol_version = OWN_PROTOCOL_VERSION.to_string();
        self.stage = Stage::Initialize;
        self.fetched = Fetched::default();
        self.listing = Entry::Tool;
        self.then = KINDS_AFTER_TOOLS.to_vec();
        self.entries.clear();
        self.names.clear();
        self.cursor = None;
        self.seen_cursors.clear();
        self.call()
    }

    /// The `DELETE` that ends the filter's own session (spec 2025-11-25 "Transports": a client
    /// that no longer needs a session SHOULD end it).
    fn close(&mut self) -> Option<HttpCall> {
        if !self.own {
            return None;
        }
        let id = self.session.take()?;
        let mut headers = self.base_headers("DELETE");
        headers.push(("mcp-session-id".to_string(), id));
        headers.push((
            "mcp-protocol-version".to_string(),
            self.protocol_version.clone(),
        ));
        Some(HttpCall {
            cluster: self.spec.origin.cluster.clone(),
            headers,
            body: Vec::new(),
            timeout_ms: self.spec.timeout_ms,
        })
    }

    fn base_headers(&self, method: &str) -> Vec<(String, String)> {
        let mut headers = vec![
            (":method".to_string(), method.to_string()),
            (":path".to_string(), self.spec.origin.path.clone()),
            (":authority".to_string(), self.spec.origin.authority.clone()),
        ];
        headers.extend(self.spec.headers.iter().cloned());
        headers
    }

    /// The call of the current stage.
    fn call(&mut self) -> HttpCall {
        let (method_name, body) = match self.stage {
            Stage::Initialize => {
                self.next_id += 1;
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{},"method":"initialize","params":{{"protocolVersion":{},"capabilities":{{}},"clientInfo":{{"name":"{CLIENT_NAME}","version":"{}"}}}}}}"#,
                    self.next_id,
                    json::string(OWN_PROTOCOL_VERSION),
                    env!("CARGO_PKG_VERSION"),
                );
                ("initialize", body)
            }
            Stage::Initialized => (
                "notifications/initialized",
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
            ),
            Stage::List => {
                self.next_id += 1;
                let mut params = Vec::new();
                if let Some(cursor) = &self.cursor {
                    params.push(format!("\"cursor\":{}", json::string(cursor)));
                }
                if self.modern {
                    params.push(format!(
                        r#""_meta":{{"io.modelcontextprotocol/protocolVersion":{},"io.modelcontextprotocol/clientInfo":{{"name":"{CLIENT_NAME}","version":"{}"}},"io.modelcontextprotocol/clientCapabilities":{{}}}}"#,
                        json::string(MODERN_PROTOCOL_VERSION),
                        env!("CARGO_PKG_VERSION"),
                    ));
                }
                let method = self.listing.list_method();
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{},"method":"{method}","params":{{{}}}}}"#,
                    self.next_id,
                    params.join(",")
                );
                (method, body)
            }
        };
        let mut headers = self.base_headers("POST");
        headers.push(("content-type".to_string(), "application/json".to_string()));
        headers.push((
            "accept".to_string(),
            "application/json, text/event-stream".to_string(),
        ));
        if self.stage != Stage::Initialize {
            headers.push((
                "mcp-protocol-version".to_string(),
                self.protocol_version.clone(),
            ));
        }
        if let Some(id) = &self.session {
            headers.push(("mcp-session-id".to_string(), id.clone()));
        }
        if self.modern {
            headers.push(("mcp-method".to_string(), method_name.to_string()));
        }
        HttpCall {
            cluster: self.spec.origin.cluster.clone(),
            headers,
            body: body.into_bytes(),
            timeout_ms: self.spec.timeout_ms,
        }
    }
}

#[cfg(test)]
mod tests;
