//! MCP clients for the tests: the rmcp Streamable HTTP client (with a handler that timestamps
//! progress notifications), and raw HTTP for what an SDK hides (headers, exact bodies, the
//! arrival time of each SSE event).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};

use crate::harness::Result;

/// Progress notifications received, with their arrival time.
pub type ProgressLog = Arc<Mutex<Vec<(Instant, ProgressNotificationParam)>>>;

/// An rmcp client handler that records progress notifications.
#[derive(Clone)]
pub struct TestClient {
    info: ClientConfig,
    pub progress: ProgressLog,
    /// `notifications/tools/list_changed` received (reach it with `client.service()`).
    pub list_changed: Arc<AtomicUsize>,
}

impl TestClient {
    pub fn new(version: ProtocolVersion) -> Self {
        Self {
            info: ClientConfig::new(
                ClientCapabilities::default(),
                Implementation::new("mcp-tool-search-e2e", "0.1.0"),
            )
            .with_protocol_version(version),
            progress: Arc::default(),
            list_changed: Arc::default(),
        }
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Ok(mut log) = self.progress.lock() {
            log.push((Instant::now(), params));
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.fetch_add(1, Ordering::SeqCst);
    }
}

/// How the rmcp client starts its session.
#[derive(Debug, Clone)]
pub enum Lifecycle {
    /// `initialize` + `notifications/initialized` at this version (2025-06-18, 2025-11-25).
    Initialize(ProtocolVersion),
    /// 2026-07-28: `server/discover`, no session, per-request `_meta` and `mcp-*` headers.
    Discover,
}

pub type McpClient = RunningService<RoleClient, TestClient>;

/// Connect the rmcp Streamable HTTP client to `url`.
pub async fn connect(url: &str, lifecycle: Lifecycle) -> Result<(McpClient, ProgressLog)> {
    connect_with_headers(url, lifecycle, &[]).await
}

/// Connect the rmcp Streamable HTTP client to `url`, sending these headers (e.g.
/// `authorization: Bearer ...`) on every request of the session.
pub async fn connect_with_headers(
    url: &str,
    lifecycle: Lifecycle,
    headers: &[(&str, &str)],
) -> Result<(McpClient, ProgressLog)> {
    let http = reqwest::Client::builder().no_proxy().build()?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
    for (name, value) in headers {
        config.custom_headers.insert(
            reqwest::header::HeaderName::from_bytes(name.as_bytes())?,
            reqwest::header::HeaderValue::from_str(value)?,
        );
    }
    let transport = StreamableHttpClientTransport::with_client(http, config);
    let (handler, mode) = match lifecycle {
        Lifecycle::Initialize(v) => (TestClient::new(v), None),
        Lifecycle::Discover => (
            TestClient::new(ProtocolVersion::V_2026_07_28),
            Some(ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            }),
        ),
    };
    let progress = handler.progress.clone();
    let client = match mode {
        None => handler.serve(transport).await?,
        Some(mode) => handler.serve_with_lifecycle(transport, mode).await?,
    };
    Ok((client, progress))
}

// ---- raw HTTP --------------------------------------------------------------------------------------

/// One HTTP exchange, with each JSON-RPC message and the time it arrived (SSE events are
/// timestamped as soon as their blank line arrives).
#[derive(Debug, Clone)]
pub struct RawResponse {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
    /// (time since the request was sent, message). For JSON bodies: one message, at the end.
    pub messages: Vec<(Duration, Value)>,
    /// SSE events whose data was not JSON (priming events have empty data and are skipped).
    pub non_json_events: Vec<String>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn content_type(&self) -> &str {
        self.header("content-type").unwrap_or("")
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON-RPC response (the message with `result` or `error`) with this id.
    pub fn response_for(&self, id: &Value) -> Option<&Value> {
        self.messages.iter().map(|(_, m)| m).find(|m| {
            m.get("id") == Some(id) && (m.get("result").is_some() || m.get("error").is_some())
        })
    }
}

/// Incremental SSE parser (LF or CRLF line endings): returns each event's `data` (lines joined
/// with `\n`) once the event is complete. Works on bytes, so a chunk may split anything.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    data: Vec<String>,
    has_data: bool,
    pending_cr: bool,
}

impl SseParser {
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut bytes = bytes;
        if self.pending_cr {
            self.pending_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(rel) = self
            .buf
            .get(start..)
            .and_then(|b| b.iter().position(|&c| c == b'\n' || c == b'\r'))
        {
            let pos = start + rel;
            let line =
                String::from_utf8_lossy(self.buf.get(start..pos).unwrap_or(&[])).into_owned();
            let mut next = pos + 1;
            if self.buf.get(pos) == Some(&b'\r') {
                match self.buf.get(pos + 1) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.pending_cr = true,
                }
            }
            start = next;
            if line.is_empty() {
                if self.has_data {
                    out.push(self.data.join("\n"));
                    self.data.clear();
                    self.has_data = false;
                }
            } else if let Some(d) = line.strip_prefix("data:") {
                self.data.push(d.strip_prefix(' ').unwrap_or(d).to_owned());
                self.has_data = true;
            }
        }
        self.buf.drain(..start.min(self.buf.len()));
        out
    }
}

/// POST a JSON-RPC message (`Accept: application/json, text/event-stream`) with extra headers,
/// reading the body chunk by chunk.
pub async fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> Result<RawResponse> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()?;
    post_with(&http, url, headers, body).await
}

/// [`post`] through a given client (e.g. one that keeps its connection, so every request reaches
/// the same Envoy worker).
pub async fn post_with(
    http: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> Result<RawResponse> {
    let mut req = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(serde_json::to_vec(body)?);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let start = Instant::now();
    let mut resp = req.send().await?;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let is_sse = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let mut parser = SseParser::default();
    let mut out = RawResponse {
        status,
        headers,
        body: Vec::new(),
        messages: Vec::new(),
        non_json_events: Vec::new(),
    };
    while let Some(chunk) = resp.chunk().await? {
        let at = start.elapsed();
        out.body.extend_from_slice(&chunk);
        if is_sse {
            for data in parser.push(&chunk) {
                if data.is_empty() {
                    continue; // priming event
                }
                match serde_json::from_str::<Value>(&data) {
                    Ok(v) => out.messages.push((at, v)),
                    Err(_) => out.non_json_events.push(data),
                }
            }
        }
    }
    if !is_sse && !out.body.is_empty() {
        if let Ok(v) = serde_json::from_slice::<Value>(&out.body) {
            out.messages.push((start.elapsed(), v));
        }
    }
    Ok(out)
}

/// GET `url` and return (status, content-type, body).
pub async fn get(url: &str) -> Result<(u16, String, Vec<u8>)> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()?;
    let resp = http.get(url).send().await?;
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    Ok((status, ct, resp.bytes().await?.to_vec()))
}

/// A plain HTTP exchange (any method, any body): (status, headers, body).
pub async fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> Result<(u16, reqwest::header::HeaderMap, Vec<u8>)> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()?;
    let mut req = http.request(reqwest::Method::from_bytes(method.as_bytes())?, url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(body) = body {
        req = req.body(body);
    }
    let resp = req.send().await?;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    Ok((status, headers, resp.bytes().await?.to_vec()))
}

/// The `params._meta` a 2026-07-28 client sends with every request.
pub fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-tool-search-e2e", "version": "0.1.0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// Headers of a 2026-07-28 request for `method` (and `mcp-name` for tools/call).
pub fn headers_2026<'a>(method: &'a str, name: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(n) = name {
        h.push(("mcp-name", n));
    }
    h
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn all_splits(input: &str) -> Vec<Vec<String>> {
        let bytes = input.as_bytes();
        (0..=bytes.len())
            .map(|i| {
                let mut p = SseParser::default();
                let mut out = p.push(&bytes[..i]);
                out.extend(p.push(&bytes[i..]));
                out
            })
            .collect()
    }

    #[test]
    fn sse_parser_is_split_invariant_lf_and_crlf() {
        for input in [
            "id: 0\nretry: 3000\ndata: \n\nevent: message\ndata: {\"a\":1}\n\n: ping\n\ndata: x\ndata: y\n\n",
            "event: message\r\ndata: {\"a\":1}\r\n\r\ndata: 2\r\n\r\n",
        ] {
            let whole = {
                let mut p = SseParser::default();
                p.push(input.as_bytes())
            };
            assert!(!whole.is_empty());
            for got in all_splits(input) {
                assert_eq!(got, whole, "{input:?}");
            }
        }
        let mut p = SseParser::default();
        assert_eq!(
            p.push(b"data: {\"a\":1}\n\n: ping\n\ndata: x\ndata: y\n\n"),
            vec!["{\"a\":1}".to_owned(), "x\ny".to_owned()]
        );
    }
}
