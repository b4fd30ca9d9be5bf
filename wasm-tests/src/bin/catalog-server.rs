//! `catalog-server`: a real MCP server (rmcp, Streamable HTTP) serving a tool catalog from a
//! JSONL file, as the upstream for end-to-end tests of the filter.
//!
//! ```text
//! catalog-server --tools FILE.jsonl [--listen 127.0.0.1:0] [--json] [--stateless]
//!                [--page-size N] [--record FILE] [--tcp-nodelay]
//! ```
//!
//! - Serves `POST/GET/DELETE /mcp` (the MCP endpoint) and `/other` (not MCP: any method answers
//!   a canned JSON-RPC `tools/list` result with every tool, so a test can check the filter leaves
//!   non-MCP paths alone).
//! - Every served tool succeeds with one text content `{"tool":NAME,"arguments":{..},"ok":true}`.
//! - Built-in `slow_progress` (`steps`, `delay_ms`): one `notifications/progress` per step
//!   (when the request carries a progress token), `delay_ms` apart, then the result.
//! - `--json`: JSON responses (rmcp only does this for stateless handling, so `--json` implies
//!   `--stateless`; a handler that notifies before answering falls back to SSE, which is what
//!   `slow_progress` does).
//! - `--tcp-nodelay`: set `TCP_NODELAY` on accepted connections (as most production servers do;
//!   hyper does not by default, and SSE's separate small writes then meet the peer's delayed
//!   ACK: ~40 ms stalls on keep-alive connections). The benchmarks use it.
//! - `--record FILE`: one line per JSON-RPC message received on `/mcp`: its method, plus the
//!   tool name for `tools/call` (`tools/call github_get_issue`); `response` for client replies.
//! - `POST /admin/tools?notify=1` (or `notify=0`, the default): replaces the served tool set
//!   while running, so that tests can check that a filter notices catalog changes (refresh on
//!   `notifications/tools/list_changed`, or on its own schedule when nothing is announced). Not
//!   MCP, not recorded. The body is JSONL exactly as `--tools` reads it (an empty body serves
//!   only `slow_progress`). The swap is atomic: every `tools/list` page (`--page-size` cursors
//!   are offsets into the current set), `tools/call` and `/other` answered after it uses the
//!   new set. With `notify=1`, `notifications/tools/list_changed` is then sent to every live
//!   stateful session (those that sent `notifications/initialized` or `tools/list`; it goes
//!   out on the session's standalone `GET /mcp` stream, or is held for it); sessions whose
//!   send fails (closed, deleted) are forgotten. Stateless mode has no sessions: nobody is
//!   notified. The server always advertises `capabilities.tools.listChanged: true`. Answers
//!   200 `{"tools":N,"notified":M}` (N: tools now listed, `slow_progress` included; M: sessions
//!   the notification was handed to), or 400 `{"error":"..."}` with the tool set unchanged
//!   (bad JSONL, a tool named `slow_progress`, a bad query).
//!
//! Prints `listening on 127.0.0.1:PORT` on stdout (flushed) once bound.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt as _;
use axum::Router;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::{json, Value};

const SLOW_PROGRESS: &str = "slow_progress";

#[derive(Debug)]
struct Args {
    tools: String,
    listen: String,
    json: bool,
    stateless: bool,
    page_size: usize,
    record: Option<String>,
    tcp_nodelay: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        tools: String::new(),
        listen: "127.0.0.1:0".to_owned(),
        json: false,
        stateless: false,
        page_size: 0,
        record: None,
        tcp_nodelay: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--tools" => args.tools = value("--tools")?,
            "--listen" => args.listen = value("--listen")?,
            "--json" => args.json = true,
            "--stateless" => args.stateless = true,
            "--page-size" => {
                args.page_size = value("--page-size")?
                    .parse()
                    .map_err(|e| format!("--page-size: {e}"))?
            }
            "--record" => args.record = Some(value("--record")?),
            "--tcp-nodelay" => args.tcp_nodelay = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.tools.is_empty() {
        return Err("--tools FILE.jsonl is required".to_owned());
    }
    Ok(args)
}

fn load_tools(path: &str) -> Result<Vec<Tool>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    parse_tools(&text, path)
}

/// The tools of a JSONL text (one definition a line, blank lines skipped), followed by the
/// built-in `slow_progress`. `origin` names the text in errors (`FILE:LINE: ...`).
fn parse_tools(text: &str, origin: &str) -> Result<Vec<Tool>, String> {
    let mut tools = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let tool: Tool =
            serde_json::from_str(line).map_err(|e| format!("{origin}:{}: {e}", n + 1))?;
        if tool.name == SLOW_PROGRESS {
            return Err(format!("{origin}:{}: {SLOW_PROGRESS} is built in", n + 1));
        }
        tools.push(tool);
    }
    tools.push(slow_progress_tool());
    Ok(tools)
}

fn slow_progress_tool() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "steps": {"type": "integer", "description": "Number of progress notifications to send"},
            "delay_ms": {"type": "integer", "description": "Delay before each step, in milliseconds"}
        }
    });
    let schema: JsonObject = match schema {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    };
    let mut annotations = ToolAnnotations::default();
    annotations.read_only_hint = Some(true);
    Tool::new(
        SLOW_PROGRESS,
        "Test tool: sends one progress notification per step, delay_ms apart, then answers.",
        Arc::new(schema),
    )
    .with_title("Slow progress (test)")
    .with_annotations(annotations)
}

/// A poisoned lock only means another thread panicked while holding it: the data (a tool set,
/// a list of peers) is still whole.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What every session (and the admin endpoint) shares.
struct Shared {
    /// The tool set served now; replaced whole by `POST /admin/tools`.
    tools: RwLock<Arc<Vec<Tool>>>,
    /// One peer per live stateful session, to announce tool set changes to.
    peers: Mutex<Vec<Peer<RoleServer>>>,
    /// False when stateless: a per-request service has no session to notify later.
    track_peers: bool,
    /// Serializes tool set changes (swap, then notify) so that announcements keep their order.
    admin: tokio::sync::Mutex<()>,
}

impl Shared {
    fn tools(&self) -> Arc<Vec<Tool>> {
        self.tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set_tools(&self, tools: Vec<Tool>) {
        *self.tools.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(tools);
    }

    /// Sends `notifications/tools/list_changed` to every known session; forgets those whose
    /// send fails. Returns how many took it.
    async fn notify_tool_list_changed(&self) -> usize {
        let peers = std::mem::take(&mut *lock(&self.peers));
        let sends = peers.into_iter().map(|peer| async move {
            // A standalone GET stream whose reader stalls would block the send: bounded.
            match tokio::time::timeout(Duration::from_secs(5), peer.notify_tool_list_changed())
                .await
            {
                Ok(Ok(())) => (Some(peer), true),
                Ok(Err(_closed)) => (None, false),
                Err(_elapsed) => {
                    eprintln!(
                        "catalog-server: tools/list_changed: a session did not take it in 5 s"
                    );
                    (Some(peer), false)
                }
            }
        });
        let mut notified = 0;
        let mut live = Vec::new();
        for (peer, ok) in futures::future::join_all(sends).await {
            notified += usize::from(ok);
            live.extend(peer);
        }
        // Sessions initialized meanwhile were added to the (emptied) list: keep them too.
        lock(&self.peers).extend(live);
        notified
    }
}

/// One per session (stateful) or per request (stateless).
#[derive(Clone)]
struct Catalog {
    shared: Arc<Shared>,
    page_size: usize,
    /// Whether this session's peer is in `shared.peers` already.
    registered: Arc<AtomicBool>,
}

impl Catalog {
    fn new(shared: Arc<Shared>, page_size: usize) -> Self {
        Self {
            shared,
            page_size,
            registered: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Remembers this session's peer (once) so that tool set changes can be announced to it.
    fn register(&self, peer: &Peer<RoleServer>) {
        if self.shared.track_peers && !self.registered.swap(true, Ordering::AcqRel) {
            lock(&self.shared.peers).push(peer.clone());
        }
    }

    fn page(&self, cursor: Option<&str>) -> Result<ListToolsResult, ErrorData> {
        let tools = self.shared.tools();
        let all = tools.as_slice();
        if self.page_size == 0 {
            return Ok(ListToolsResult::with_all_items(all.to_vec()));
        }
        let start: usize = match cursor {
            None => 0,
            Some(c) => c
                .parse()
                .ok()
                .filter(|s| *s <= all.len())
                .ok_or_else(|| ErrorData::invalid_params(format!("bad cursor {c:?}"), None))?,
        };
        let end = (start + self.page_size).min(all.len());
        let mut result =
            ListToolsResult::with_all_items(all.get(start..end).unwrap_or(&[]).to_vec());
        if end < all.len() {
            result.next_cursor = Some(end.to_string());
        }
        Ok(result)
    }
}

fn arg_u64(args: &Option<JsonObject>, key: &str, default: u64) -> u64 {
    args.as_ref()
        .and_then(|a| a.get(key))
        .and_then(Value::as_u64)
        .unwrap_or(default)
}

impl ServerHandler for Catalog {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new(
            "catalog-server",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions("Fake SaaS tool catalog for proxy tests.")
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.register(&context.peer);
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // Also here: a client that skipped `notifications/initialized` still lists tools.
        self.register(&context.peer);
        self.page(request.as_ref().and_then(|r| r.cursor.as_deref()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared.tools().iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.shared.tools().iter().any(|t| t.name == request.name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {:?}", request.name),
                None,
            ));
        }
        if request.name == SLOW_PROGRESS {
            let steps = arg_u64(&request.arguments, "steps", 5).min(1000);
            let delay = arg_u64(&request.arguments, "delay_ms", 200).min(60_000);
            let token = context.meta.get_progress_token();
            for step in 1..=steps {
                tokio::time::sleep(Duration::from_millis(delay)).await;
                if let Some(token) = token.clone() {
                    let param = ProgressNotificationParam::new(token, step as f64)
                        .with_total(steps as f64)
                        .with_message(format!("step {step}/{steps}"));
                    if let Err(e) = context.peer.notify_progress(param).await {
                        eprintln!("catalog-server: progress notification failed: {e}");
                    }
                }
            }
        }
        let text = json!({
            "tool": request.name,
            "arguments": request.arguments.clone().map(Value::Object).unwrap_or_else(|| json!({})),
            "ok": true,
        })
        .to_string();
        Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
    }
}

/// Appends one line per JSON-RPC message received on /mcp.
#[derive(Clone)]
struct Recorder(Option<Arc<Mutex<std::fs::File>>>);

fn describe(message: &Value) -> Option<String> {
    let method = message.get("method").and_then(Value::as_str);
    match method {
        Some("tools/call") => {
            let name = message
                .pointer("/params/name")
                .and_then(Value::as_str)
                .unwrap_or("?");
            Some(format!("tools/call {name}"))
        }
        Some(method) => Some(method.to_owned()),
        None if message.get("result").is_some() || message.get("error").is_some() => {
            Some("response".to_owned())
        }
        None => None,
    }
}

async fn record(State(recorder): State<Recorder>, request: Request, next: Next) -> Response {
    let Some(file) = recorder.0.clone() else {
        return next.run(request).await;
    };
    if !request.uri().path().starts_with("/mcp") || request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, 64 << 20).await {
        Ok(bytes) => bytes,
        Err(e) => {
            return (axum::http::StatusCode::BAD_REQUEST, format!("body: {e}")).into_response()
        }
    };
    if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
        let messages = match value {
            Value::Array(items) => items,
            one => vec![one],
        };
        let mut lines = String::new();
        for m in &messages {
            if let Some(line) = describe(m) {
                lines.push_str(&line);
                lines.push('\n');
            }
        }
        if let Ok(mut f) = file.lock() {
            let _ = f.write_all(lines.as_bytes()).and_then(|()| f.flush());
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn other_body(tools: &[Tool]) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}).to_string()
}

fn json_response(status: axum::http::StatusCode, body: &Value) -> Response {
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `notify` from the query string: absent, `0`/`false` or `1`/`true`; nothing else.
fn parse_notify(query: Option<&str>) -> Result<bool, String> {
    let mut notify = false;
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=').unwrap_or((pair, "")) {
            ("notify", "1" | "true") => notify = true,
            ("notify", "0" | "false") => notify = false,
            ("notify", other) => return Err(format!("notify must be 0 or 1, not {other:?}")),
            (name, _) => return Err(format!("unknown query parameter {name:?}")),
        }
    }
    Ok(notify)
}

/// `POST /admin/tools?notify=0|1` (see the top of this file).
async fn admin_tools(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let bad = |msg: String| {
        eprintln!("catalog-server: /admin/tools: {msg}");
        json_response(
            axum::http::StatusCode::BAD_REQUEST,
            &json!({ "error": msg }),
        )
    };
    let notify = match parse_notify(request.uri().query()) {
        Ok(n) => n,
        Err(e) => return bad(e),
    };
    let bytes = match axum::body::to_bytes(request.into_body(), 64 << 20).await {
        Ok(bytes) => bytes,
        Err(e) => return bad(format!("body: {e}")),
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return bad("body is not UTF-8".to_owned());
    };
    let tools = match parse_tools(text, "body") {
        Ok(t) => t,
        Err(e) => return bad(e),
    };
    let count = tools.len();
    let _serial = shared.admin.lock().await;
    shared.set_tools(tools);
    let notified = if notify {
        shared.notify_tool_list_changed().await
    } else {
        0
    };
    eprintln!("catalog-server: /admin/tools: now {count} tools, notified {notified} sessions");
    json_response(
        axum::http::StatusCode::OK,
        &json!({ "tools": count, "notified": notified }),
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> std::process::ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("catalog-server: {e}");
            eprintln!("usage: catalog-server --tools FILE.jsonl [--listen ADDR] [--json] [--stateless] [--page-size N] [--record FILE] [--tcp-nodelay]");
            return std::process::ExitCode::from(2);
        }
    };
    let tools = match load_tools(&args.tools) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("catalog-server: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let tool_count = tools.len();
    let stateless = args.stateless || args.json;
    if args.json && !args.stateless {
        eprintln!(
            "catalog-server: --json implies --stateless (rmcp answers JSON only statelessly)"
        );
    }
    let recorder = Recorder(match &args.record {
        None => None,
        Some(path) => match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            Ok(f) => Some(Arc::new(Mutex::new(f))),
            Err(e) => {
                eprintln!("catalog-server: --record {path}: {e}");
                return std::process::ExitCode::FAILURE;
            }
        },
    });

    let shared = Arc::new(Shared {
        tools: RwLock::new(Arc::new(tools)),
        peers: Mutex::new(Vec::new()),
        track_peers: !stateless,
        admin: tokio::sync::Mutex::new(()),
    });
    let page_size = args.page_size;
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_legacy_session_mode(!stateless)
        .with_json_response(args.json)
        .with_sse_keep_alive(Some(Duration::from_secs(15)));
    let for_sessions = shared.clone();
    // A fresh `Catalog` per session, so that each registers its own peer.
    let factory = move || Ok(Catalog::new(for_sessions.clone(), page_size));
    let mcp_router: Router = if stateless {
        let service =
            StreamableHttpService::new(factory, Arc::new(NeverSessionManager::default()), config);
        Router::new().nest_service("/mcp", service)
    } else {
        let service =
            StreamableHttpService::new(factory, Arc::new(LocalSessionManager::default()), config);
        Router::new().nest_service("/mcp", service)
    };
    let for_other = shared.clone();
    let admin: Router = Router::new()
        .route("/admin/tools", axum::routing::post(admin_tools))
        .with_state(shared);
    let router = mcp_router
        .route(
            "/other",
            axum::routing::any(move || {
                let other = other_body(&for_other.tools());
                async move {
                    (
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        other,
                    )
                }
            }),
        )
        .merge(admin)
        .layer(middleware::from_fn_with_state(recorder, record));

    let listener = match tokio::net::TcpListener::bind(&args.listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("catalog-server: bind {}: {e}", args.listen);
            return std::process::ExitCode::FAILURE;
        }
    };
    let addr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("catalog-server: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on {addr}").and_then(|()| out.flush());
    }
    eprintln!(
        "catalog-server: {} tools, stateless={stateless}, json={}, page_size={}",
        tool_count, args.json, args.page_size
    );
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let nodelay = args.tcp_nodelay;
    let listener = listener.tap_io(move |tcp| {
        if nodelay {
            let _ = tcp.set_nodelay(true);
        }
    });
    if let Err(e) = axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
    {
        eprintln!("catalog-server: {e}");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
