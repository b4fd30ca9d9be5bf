//! The mixed load: closed-loop connections, each sending `tool_search` (MCP), upstream
//! `tools/call`s, `tools/list` and `POST /mcp/search` in turn to both routes, with MCP sessions
//! of its own (opened again when the upstream lost them). Every request is recorded with its
//! outcome; causes are assigned afterwards, against the fault timeline (see `classify`).

use crate::http::{self, Conn, Failure, Response};
use crate::{Shared, UPSTREAMS};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `tools/call` of `tool_search`, answered by the filter.
    Search,
    /// `POST /mcp/search`, answered by the filter.
    HttpSearch,
    /// `tools/call` of an upstream tool, through the filter.
    Call,
    /// `tools/list`, rewritten by the filter.
    List,
    /// `initialize` + `notifications/initialized`: a session with an upstream.
    Init,
}

impl Outcome {
    /// A valid answer that is not a search.
    pub fn ok() -> Outcome {
        Outcome::Ok {
            strategy: None,
            candidates: None,
            embedded: None,
        }
    }

    /// A search answer, from its `_meta` (or `metadata`) object.
    fn search(meta: &Value) -> Outcome {
        let count = |field: &str| meta.get(field).and_then(Value::as_u64);
        Outcome::Ok {
            strategy: Some(strategy(meta)),
            candidates: count("candidates"),
            embedded: count("embedded"),
        }
    }
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Search,
        Kind::HttpSearch,
        Kind::Call,
        Kind::List,
        Kind::Init,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Search => "tool_search (MCP)",
            Kind::HttpSearch => "POST /mcp/search",
            Kind::Call => "tools/call upstream",
            Kind::List => "tools/list",
            Kind::Init => "initialize",
        }
    }

    /// Does the request reach an upstream (and so depend on it being up)?
    pub fn upstream_bound(self) -> bool {
        matches!(self, Kind::Call | Kind::List | Kind::Init)
    }
}

/// What came back.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// A valid answer; for searches, what its `_meta` (`metadata` over HTTP) reports.
    Ok {
        /// The ranking: `hybrid`, or `bm25 (fallback: KIND)`.
        strategy: Option<String>,
        /// `candidates`: the tools in scope.
        candidates: Option<u64>,
        /// `embedded`: how many candidates had a vector when vector or hybrid ranking ran
        /// (absent under BM25, and from a filter that does not report it).
        embedded: Option<u64>,
    },
    Failed {
        /// A short name: `reset`, `status 503`, `jsonrpc -32603`, `isError`, ...
        what: String,
        detail: String,
        /// The HTTP status when there was one.
        status: Option<u16>,
    },
}

#[derive(Debug, Clone)]
pub struct Record {
    pub kind: Kind,
    pub upstream: usize,
    pub start: Instant,
    pub end: Instant,
    pub outcome: Outcome,
    /// When the session this request used was opened (upstream-bound MCP requests).
    pub session_opened: Option<Instant>,
}

/// The search queries, one a request in turn: SaaS tasks phrased as an agent would, some
/// sharing no word with any tool (those only vectors match).
pub const QUERIES: &[&str] = &[
    "create an issue in a github repository",
    "refund a stripe charge",
    "send a message to a slack channel",
    "schedule a calendar meeting",
    "upload a file to dropbox",
    "search jira tickets",
    "list open pull requests",
    "add a row to a spreadsheet",
    "reimburse a buyer",
    "tell the team something in chat",
    "run a sql query",
    "acknowledge a pagerduty incident",
];

/// The order of request kinds a connection sends (searches dominate, as with an agent).
const PLAN: [Kind; 8] = [
    Kind::Search,
    Kind::Call,
    Kind::HttpSearch,
    Kind::List,
    Kind::Search,
    Kind::Call,
    Kind::Search,
    Kind::HttpSearch,
];

struct Session {
    id: String,
    opened: Instant,
}

struct Worker<'a> {
    shared: &'a Shared,
    conn: Conn,
    sessions: [Option<Session>; UPSTREAMS],
    next_id: i64,
    records: Vec<Record>,
}

/// One connection's closed loop until `shared.stop`; returns its records.
pub fn run(shared: &Shared, worker: usize) -> Vec<Record> {
    let mut w = Worker {
        shared,
        conn: http::conn(shared.addr),
        sessions: [None, None],
        next_id: 1,
        records: Vec::new(),
    };
    let mut i = worker;
    while !shared.stop.load(Ordering::Relaxed) {
        let kind = PLAN.get(i % PLAN.len()).copied().unwrap_or(Kind::Search);
        // Both upstreams for every kind: the upstream flips once per lap of the plan too.
        let upstream = (i + i / PLAN.len()) % UPSTREAMS;
        let query = QUERIES.get(i % QUERIES.len()).copied().unwrap_or("search");
        match kind {
            Kind::Search => w.search(upstream, query),
            Kind::HttpSearch => w.http_search(upstream, query),
            Kind::Call => w.upstream_request(upstream, Kind::Call),
            Kind::List => w.upstream_request(upstream, Kind::List),
            Kind::Init => {}
        }
        i += 1;
        std::thread::sleep(shared.think);
    }
    w.records
}

impl Worker<'_> {
    fn id(&mut self) -> i64 {
        self.next_id += 1;
        self.next_id
    }

    fn record(
        &mut self,
        kind: Kind,
        upstream: usize,
        start: Instant,
        outcome: Outcome,
        session_opened: Option<Instant>,
    ) {
        self.records.push(Record {
            kind,
            upstream,
            start,
            end: Instant::now(),
            outcome,
            session_opened,
        });
    }

    fn search(&mut self, upstream: usize, query: &str) {
        let id = self.id();
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "tool_search", "arguments": {"query": query, "limit": 5}}});
        let path = self.shared.mcp_path(upstream);
        let session = self.sessions.get(upstream).and_then(Option::as_ref);
        let request = http::post_json(&path, &body.to_string(), session.map(|s| s.id.as_str()));
        let start = Instant::now();
        let result = self.conn.exchange(request.as_bytes());
        let outcome = match result {
            Ok(reply) => match tool_result(&reply, id) {
                Ok(result) => match result
                    .get("_meta")
                    .and_then(|m| m.get("mcp-tool-search/search"))
                {
                    Some(meta) => Outcome::search(meta),
                    None => failed("no search _meta", &reply),
                },
                Err(outcome) => outcome,
            },
            Err(f) => transport(&f),
        };
        self.record(Kind::Search, upstream, start, outcome, None);
    }

    fn http_search(&mut self, upstream: usize, query: &str) {
        let body =
            json!({"query": query, "limit": 5, "namespace": crate::NAMESPACES.get(upstream)});
        let request = http::post_json(crate::SEARCH_PATH, &body.to_string(), None);
        let start = Instant::now();
        let outcome = match self.conn.exchange(request.as_bytes()) {
            Ok(reply) if reply.status == 200 => {
                match serde_json::from_slice::<Value>(&reply.body) {
                    Ok(v) if v.get("tools").is_some_and(Value::is_array) => {
                        match v.get("metadata").or_else(|| v.get("_meta")) {
                            Some(meta) => Outcome::search(meta),
                            None => Outcome::ok(),
                        }
                    }
                    _ => failed("bad body", &reply),
                }
            }
            Ok(reply) => status_failure(&reply),
            Err(f) => transport(&f),
        };
        self.record(Kind::HttpSearch, upstream, start, outcome, None);
    }

    /// A `tools/call` of the upstream's always-present tool, or a `tools/list`, in this
    /// connection's session with that upstream (opened first when there is none).
    fn upstream_request(&mut self, upstream: usize, kind: Kind) {
        if self.sessions.get(upstream).is_some_and(Option::is_none) && !self.open_session(upstream)
        {
            return;
        }
        let Some(Some(session)) = self.sessions.get(upstream) else {
            return;
        };
        let (session_id, opened) = (session.id.clone(), session.opened);
        let id = self.id();
        let body = if kind == Kind::Call {
            let tool = self
                .shared
                .call_tools
                .get(upstream)
                .cloned()
                .unwrap_or_default();
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": {}}})
        } else {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}})
        };
        let request = http::post_json(
            &self.shared.mcp_path(upstream),
            &body.to_string(),
            Some(&session_id),
        );
        let start = Instant::now();
        let outcome = match self.conn.exchange(request.as_bytes()) {
            Ok(reply) => {
                if reply.status == 404 {
                    // The upstream no longer knows the session (it was restarted): open another
                    // next time, as a client does.
                    if let Some(s) = self.sessions.get_mut(upstream) {
                        *s = None;
                    }
                }
                match tool_or_list(&reply, id, kind) {
                    Ok(()) => Outcome::ok(),
                    Err(o) => o,
                }
            }
            Err(f) => transport(&f),
        };
        self.record(kind, upstream, start, outcome, Some(opened));
    }

    /// `initialize` then `notifications/initialized`, recorded as one [`Kind::Init`].
    fn open_session(&mut self, upstream: usize) -> bool {
        let path = self.shared.mcp_path(upstream);
        let start = Instant::now();
        let outcome = match open_session(&mut self.conn, &path, self.next_id + 1) {
            Ok(id) => {
                self.next_id += 1;
                if let Some(s) = self.sessions.get_mut(upstream) {
                    *s = Some(Session { id, opened: start });
                }
                Outcome::ok()
            }
            Err(o) => o,
        };
        let ok = matches!(outcome, Outcome::Ok { .. });
        self.record(Kind::Init, upstream, start, outcome, None);
        ok
    }
}

/// Opens an MCP session at `path` through Envoy; returns its `mcp-session-id`.
pub fn open_session(conn: &mut Conn, path: &str, id: i64) -> Result<String, Outcome> {
    let init = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mcp-tool-search-soak", "version": "0.1.0"}}});
    let reply = conn
        .exchange(http::post_json(path, &init.to_string(), None).as_bytes())
        .map_err(|f| transport(&f))?;
    if reply.status != 200 {
        return Err(status_failure(&reply));
    }
    let session = reply
        .header("mcp-session-id")
        .map(str::to_owned)
        .ok_or_else(|| failed("no mcp-session-id", &reply))?;
    match http::jsonrpc_answer(&reply.body, id) {
        Some(v) if v.get("result").is_some() => {}
        _ => return Err(failed("bad initialize answer", &reply)),
    }
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let reply = conn
        .exchange(http::post_json(path, &note.to_string(), Some(&session)).as_bytes())
        .map_err(|f| transport(&f))?;
    if !(200..300).contains(&reply.status) {
        return Err(status_failure(&reply));
    }
    Ok(session)
}

fn strategy(meta: &Value) -> String {
    let s = meta
        .get("strategy")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned();
    match meta
        .get("fallback")
        .and_then(|f| f.get("kind"))
        .and_then(Value::as_str)
    {
        Some(kind) => format!("{s} (fallback: {kind})"),
        None => s,
    }
}

fn transport(f: &Failure) -> Outcome {
    Outcome::Failed {
        what: f.kind().to_owned(),
        detail: f.detail(),
        status: None,
    }
}

fn excerpt(reply: &Response) -> String {
    let text = reply.text();
    let cut: String = text.chars().take(240).collect();
    cut.replace(['\r', '\n'], " ")
}

fn failed(what: &str, reply: &Response) -> Outcome {
    Outcome::Failed {
        what: what.to_owned(),
        detail: excerpt(reply),
        status: Some(reply.status),
    }
}

fn status_failure(reply: &Response) -> Outcome {
    failed(&format!("status {}", reply.status), reply)
}

/// The `result` of a JSON-RPC `tools/call` answer that is not an error, or why not.
fn tool_result(reply: &Response, id: i64) -> Result<Value, Outcome> {
    if reply.status != 200 {
        return Err(status_failure(reply));
    }
    let Some(answer) = http::jsonrpc_answer(&reply.body, id) else {
        return Err(failed("no JSON-RPC answer", reply));
    };
    if let Some(e) = answer.get("error") {
        let code = e.get("code").and_then(Value::as_i64).unwrap_or(0);
        return Err(failed(&format!("jsonrpc {code}"), reply));
    }
    let Some(result) = answer.get("result") else {
        return Err(failed("no result", reply));
    };
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        return Err(failed("isError", reply));
    }
    Ok(result.clone())
}

fn tool_or_list(reply: &Response, id: i64, kind: Kind) -> Result<(), Outcome> {
    let result = tool_result(reply, id)?;
    let ok = if kind == Kind::List {
        // The filter's rewrite: its search tool is listed.
        result
            .get("tools")
            .and_then(Value::as_array)
            .is_some_and(|tools| {
                tools
                    .iter()
                    .any(|t| t.get("name").and_then(Value::as_str) == Some("tool_search"))
            })
    } else {
        // catalog-server answers every call with `{"tool":NAME,...,"ok":true}`.
        result.to_string().contains(r#"\"ok\":true"#)
    };
    if ok {
        Ok(())
    } else {
        Err(failed(
            if kind == Kind::List {
                "list not rewritten"
            } else {
                "unexpected call result"
            },
            reply,
        ))
    }
}

/// How long after an upstream is back a failure of a request to it still counts as caused by
/// its stop: Envoy may still hold connections to the dead process in its pool.
pub const UPSTREAM_GRACE: Duration = Duration::from_secs(5);
