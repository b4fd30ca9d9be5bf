//! Issue "Reliability proven": a table of upstream and client misbehaviour, each row run through
//! a real Envoy with the built filter. Every row states its outcome (the bytes the upstream sent,
//! passed on unchanged; a rewrite; or a reset that the upstream itself caused) and the filter's
//! counters it moves (Envoy `/stats`, README "Stats"). After every row the Envoy log shows no
//! Wasm trap or panic, and the worker keeps serving: a normal list is rewritten and a search is
//! answered. Rows whose outcome is a reset are also run through an Envoy without the filter, and
//! the client must see the same thing there: the reset is the upstream's, not the filter's.
//!
//! One Envoy with the filter, one without and one scripted upstream serve every row, so the file
//! stays well under a minute. The upstream is a raw TCP server (after `scripted_upstream` in
//! `authorization_e2e.rs`) whose answer to each request is computed by a handler the row sets:
//! any bytes, in any chunks, then a close, a TCP reset or a stream that never ends. The client is
//! raw HTTP/1.1 too, so that a truncated body or a reset is seen as such, not hidden by a library.
//!
//! | row | input | outcome | counters (`wasmcustom.mcp_tool_search.`) |
//! |---|---|---|---|
//! | 1 | gzip JSON list | passed through byte for byte | `passthrough.encoded` |
//! | 2 | SSE: non-JSON data, then invalid UTF-8 | passed through byte for byte | `passthrough.unparseable` |
//! | 3 | SSE list in 7-byte chunks, CRLF | rewritten, CRLF kept | `lists_rewritten`, `tools_hidden` |
//! | 4, 5 | `{"tools": {…}}`; truncated JSON | passed through byte for byte | `passthrough.unparseable` |
//! | 6 | 12.9 MB list | passed through byte for byte | `passthrough.too_large` |
//! | 7 | 10 MB request | upstream gets it whole, unread | `passthrough.too_large` |
//! | 8-10 | reset mid-body; close after headers; `content-length` too long | upstream reset, as without the filter | none |
//! | 11 | two `content-type`s | passed through byte for byte | `passthrough.content_type` |
//! | 12 | 500 with HTML | passed through byte for byte | `passthrough.status` |
//! | 13 | SSE that never ends | events so far, list rewritten | `lists_rewritten`, `tools_hidden` |
//! | 14 | batch of 1,000 lists | each response rewritten | `lists_rewritten` ×1000 |
//! | 15 | 10,000-deep request | upstream call unchanged; search refused, `isError` | none; `searches_rejected` |
//! | 16 | 10,000-deep tool in a list | rewritten, found by search byte for byte | `lists_rewritten`, `tools_hidden` |
//! | 17 | lone surrogates | those entries listed as sent, rest rewritten | `lists_rewritten`, `tools_hidden` |
//! | 18 | 64 KB name, 64 KB description | rewritten, found by search | `lists_rewritten`, `tools_hidden` |
//! | 19 | 100,000 tools in 10 pages | each page rewritten, a last-page tool found | `lists_rewritten` ×10 |
//!
//! Needs Envoy (`ENVOY_BIN`, else `.venv/bin/envoy`) and the built filter (`make wasm`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_tool_search_wasm_tests::harness::{self, Envoy, EnvoyOptions, FilterOptions, TestDir};
use mcp_tool_search_wasm_tests::http1;
use serde_json::{json, Value};
use support::NAMESPACE;

// ---- the scripted upstream ---------------------------------------------------------------------

/// A request as the upstream received it.
#[derive(Debug, Clone)]
struct Request {
    head: String,
    body: Vec<u8>,
}

impl Request {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// One step of the upstream's answer.
enum Step {
    /// These bytes, at once.
    Write(Vec<u8>),
    /// These bytes in pieces of this size, each written on its own (`TCP_NODELAY`, and a
    /// millisecond apart so that Envoy reads them as separate chunks).
    Trickle(Vec<u8>, usize),
    /// A TCP reset (`SO_LINGER` 0, then close): the connection is cut, not ended.
    Reset,
    /// Keep the connection open until the peer (Envoy) closes it: a stream that never ends.
    Hang,
}

type Handler = Box<dyn Fn(&Request) -> Vec<Step> + Send + Sync>;

struct Upstream {
    addr: SocketAddr,
    handler: Arc<Mutex<Handler>>,
    received: Arc<Mutex<Vec<Request>>>,
}

impl Upstream {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let handler: Arc<Mutex<Handler>> = Arc::new(Mutex::new(Box::new(|_: &Request| {
            vec![Step::Write(raw_response("503", &[], b"no script"))]
        })));
        let received = Arc::new(Mutex::new(Vec::new()));
        let (h, r) = (Arc::clone(&handler), Arc::clone(&received));
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let (h, r) = (Arc::clone(&h), Arc::clone(&r));
                // One thread per connection: a row's never-ending stream must not hold up the
                // next request.
                std::thread::spawn(move || serve(conn, &h, &r));
            }
        });
        Self {
            addr,
            handler,
            received,
        }
    }

    /// Answer every request with `f(request)` from now on.
    fn script(&self, f: impl Fn(&Request) -> Vec<Step> + Send + Sync + 'static) {
        *self.handler.lock().unwrap() = Box::new(f);
    }

    /// Answer every request with these bytes.
    fn always(&self, response: Vec<u8>) {
        self.script(move |_| vec![Step::Write(response.clone())]);
    }

    fn take_received(&self) -> Vec<Request> {
        std::mem::take(&mut *self.received.lock().unwrap())
    }
}

fn serve(conn: TcpStream, handler: &Mutex<Handler>, received: &Mutex<Vec<Request>>) {
    let _ = conn.set_nodelay(true);
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut conn = conn;
    let mut head = String::new();
    let mut length = 0;
    let mut chunked = false;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return; // Envoy gave up on the request (e.g. a search answered by the filter)
        }
        head.push_str(&line);
        let lower = line.trim_end().to_ascii_lowercase();
        if lower.is_empty() {
            break;
        }
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        }
    }
    let body = if chunked {
        let mut body = Vec::new();
        loop {
            let mut size = String::new();
            if reader.read_line(&mut size).unwrap_or(0) == 0 {
                return;
            }
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            let mut chunk = vec![0; n + 2];
            if reader.read_exact(&mut chunk).is_err() {
                return;
            }
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
        body
    } else {
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        body
    };
    let request = Request { head, body };
    let steps = (handler.lock().unwrap())(&request);
    received.lock().unwrap().push(request);
    for step in steps {
        match step {
            Step::Write(bytes) => {
                if conn.write_all(&bytes).is_err() {
                    return;
                }
            }
            Step::Trickle(bytes, size) => {
                for piece in bytes.chunks(size) {
                    if conn.write_all(piece).is_err() {
                        return;
                    }
                    let _ = conn.flush();
                    // The upstream's pace, not a wait of the test: pieces written back to back
                    // would reach Envoy as one read.
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            Step::Reset => {
                reset(&conn);
                return;
            }
            Step::Hang => {
                let mut sink = [0u8; 1024];
                while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
                return;
            }
        }
    }
    let _ = conn.flush();
    let _ = conn.shutdown(std::net::Shutdown::Write);
    // Drain until Envoy closes its side, so that closing ours sends a FIN, never a reset.
    let mut sink = [0u8; 1024];
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    while matches!(reader.read(&mut sink), Ok(n) if n > 0) {}
}

/// Close `conn` with a TCP RST: `SO_LINGER` on with a zero timeout.
fn reset(conn: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a plain setsockopt on a socket this function borrows, with a valid `linger`
    // whose exact size is passed.
    unsafe {
        libc::setsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            std::ptr::from_ref(&linger).cast(),
            u32::try_from(std::mem::size_of::<libc::linger>()).unwrap(),
        );
    }
    // No shutdown (that would send a FIN first): the caller drops every handle of the socket,
    // and the close sends the RST.
}

/// A whole HTTP/1.1 response with `content-length`; `connection: close` so that Envoy never
/// reuses a connection a row may cut.
fn raw_response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = head(status, headers);
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out
}

/// A status line and headers, without the blank line that ends them.
fn head(status: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut head = format!("HTTP/1.1 {status} X\r\nconnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.into_bytes()
}

/// A response whose body is ended by closing the connection (no length, not chunked).
fn until_close(status: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = head(status, headers);
    out.extend_from_slice(b"\r\n");
    out
}

const JSON: (&str, &str) = ("content-type", "application/json");
const SSE: (&str, &str) = ("content-type", "text/event-stream");

// ---- the raw client ------------------------------------------------------------------------------

/// What the client saw.
#[derive(Debug, Clone)]
struct Seen {
    status: u16,
    head: String,
    /// The body (de-chunked) as far as it came.
    body: Vec<u8>,
    /// The body ended as its framing says (length reached, last chunk, or the close that ends
    /// a body without framing).
    complete: bool,
    /// The read error that ended it, if any (a reset shows here).
    error: Option<String>,
}

impl Seen {
    fn header(&self, name: &str) -> Vec<String> {
        self.head
            .lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_owned())
            })
            .collect()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }

    fn text(&self) -> String {
        let shown = String::from_utf8_lossy(&self.body[..self.body.len().min(2000)]);
        if self.body.len() > 2000 {
            format!("{shown}... ({} bytes)", self.body.len())
        } else {
            shown.into_owned()
        }
    }

    /// What a client can tell about how the exchange ended (for comparing with the baseline).
    fn ending(&self) -> (u16, bool) {
        (self.status, self.complete)
    }
}

/// Whether the body read so far suffices.
type Enough = dyn Fn(&[u8]) -> bool;

/// POST `body` to `/mcp` at `addr` over a fresh connection; reads until the body ends, the
/// connection fails, or `enough` says the bytes so far suffice (a bounded read of a stream that
/// never ends).
fn post_raw(
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: &[u8],
    enough: Option<&Enough>,
) -> Seen {
    let mut head = http1::Request::builder("POST", "/mcp")
        .header("host", &addr.to_string())
        .header("connection", "close")
        .header("accept", "application/json, text/event-stream")
        .header("content-length", &body.len().to_string());
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
    {
        head = head.header("content-type", "application/json");
    }
    let mut conn = http1::Conn::new(addr);
    conn.send(head.headers(headers).finish().as_bytes())
        .unwrap();
    // A request the upstream cuts may not be read whole: a write error is part of the outcome.
    let write_error = conn.send(body).err().map(|e| e.detail());
    let read = conn.read_streaming(Duration::from_secs(30), |s| {
        enough.is_some_and(|f| f(&s.body))
    });
    let error = read.error.clone().or(write_error);
    if read.framing.is_none() {
        panic!(
            "no response head ({error:?}): {:?}",
            String::from_utf8_lossy(&read.raw)
        );
    }
    // A body that only the close ends is whole when nothing failed.
    let complete =
        read.complete && (read.framing != Some(http1::Framing::UntilClose) || error.is_none());
    Seen {
        status: read.status,
        head: read.head.clone(),
        body: read.response.body,
        complete,
        error,
    }
}

/// The `data` of each complete SSE event in `body` (LF or CRLF).
fn sse_data(body: &[u8]) -> Vec<String> {
    http1::sse_events(body)
        .into_iter()
        .filter_map(|e| e.data)
        .collect()
}

// ---- the stack and its checks --------------------------------------------------------------------

struct Rig {
    /// Streams the filtered Envoy reset so far (the reset rows' own, all caused upstream).
    resets: usize,
    filtered: Envoy,
    baseline: Envoy,
    upstream: Upstream,
    _dir: TestDir,
}

const PREFIX: &str = "wasmcustom.mcp_tool_search.";

impl Rig {
    fn stats(&self) -> BTreeMap<String, u64> {
        self.filtered
            .stats("mcp_tool_search")
            .unwrap()
            .into_iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(PREFIX)?.to_owned(), v)))
            .collect()
    }

    /// Waits until the counters moved by exactly `want` since `before` (they are written in
    /// the filter's callbacks, which may still run after the client has its bytes).
    /// `lists_replayed` counts only where `want` names it: whether a list is answered from the
    /// memo of the last one depends on what the rows before taught the catalog, and either way
    /// the answer is the same.
    fn assert_delta(&self, row: &str, before: &BTreeMap<String, u64>, want: &[(&str, u64)]) {
        let want: BTreeMap<String, u64> = want.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect();
        let counted = |k: &String| k != "lists_replayed" || want.contains_key(k);
        let delta = |now: &BTreeMap<String, u64>| -> BTreeMap<String, u64> {
            now.iter()
                .filter(|(k, _)| counted(k))
                .filter_map(|(k, v)| {
                    let d = v - before.get(k).copied().unwrap_or(0);
                    (d > 0).then(|| (k.clone(), d))
                })
                .collect()
        };
        let got = harness::wait_until(row, Duration::from_secs(10), || {
            let got = delta(&self.stats());
            (got == want).then_some(got)
        });
        if got.is_err() {
            panic!(
                "{row}: counters moved by {:?}, expected {want:?}",
                delta(&self.stats())
            );
        }
    }

    /// No Wasm trap or panic so far, and both Envoys still run.
    fn assert_no_trap(&mut self, row: &str) {
        let log = self.filtered.log();
        for sign in [
            "panicked",
            "Uncaught",
            "RuntimeError",
            "Function: proxy_on",
            "VM is broken",
        ] {
            if let Some(line) = log.lines().find(|l| l.contains(sign)) {
                panic!("{row}: the filter trapped ({sign}): {line}");
            }
        }
        let resets = reset_reasons(&self.filtered);
        assert_eq!(
            resets.len(),
            self.resets,
            "{row}: Envoy reset a client stream: {resets:?}"
        );
        assert!(self.filtered.running(), "{row}: Envoy exited");
        assert!(self.baseline.running(), "{row}: the baseline Envoy exited");
    }

    /// The worker still serves: a normal list is rewritten, a search is answered.
    fn assert_serving(&mut self, row: &str) {
        self.assert_no_trap(row);
        self.upstream.always(raw_response(
            "200",
            &[JSON],
            &list_body(&json!(1), &small_tools(), None),
        ));
        let before = self.stats();
        let seen = post_raw(self.filtered.listener, &[], &list_request(1, None), None);
        assert_eq!(
            seen.ending(),
            (200, true),
            "{row}: list after: {}",
            seen.text()
        );
        let names = names(&seen.json()["result"]["tools"]);
        assert_eq!(
            names,
            ["tool_search", "github_get_issue"],
            "{row}: list after"
        );
        let seen = post_raw(
            self.filtered.listener,
            &[],
            &search_request(2, "refund a charge"),
            None,
        );
        assert_eq!(seen.ending(), (200, true), "{row}: search after");
        assert!(
            found(&seen).contains(&"stripe_refund_charge".to_owned()),
            "{row}: search after: {}",
            seen.text()
        );
        self.assert_delta(
            &format!("{row}: serving after"),
            &before,
            &[
                ("lists_rewritten", 1),
                ("tools_hidden", 2),
                ("searches_answered.bm25", 1),
            ],
        );
        self.assert_no_trap(row);
        self.upstream.take_received();
    }

    /// The same request through the Envoy without the filter.
    fn baseline(&self, body: &[u8]) -> Seen {
        post_raw(self.baseline.listener, &[], body, None)
    }
}

/// Why Envoy reset each client stream so far (its `http` debug log, e.g.
/// `upstream_reset_after_response_started{protocol_error}`).
fn reset_reasons(envoy: &Envoy) -> Vec<String> {
    envoy
        .log()
        .lines()
        .filter_map(|l| l.split_once("Resetting stream due to ").map(|(_, r)| r))
        .map(|r| r.split(". ").next().unwrap_or(r).to_owned())
        .collect()
}

/// Waits until `envoy` has logged `n` stream resets (its log is flushed every 50 ms).
fn wait_resets(envoy: &Envoy, n: usize) -> Vec<String> {
    harness::wait_until(
        "the reset in the Envoy log",
        Duration::from_secs(10),
        || {
            let r = reset_reasons(envoy);
            (r.len() >= n).then_some(r)
        },
    )
    .unwrap_or_else(|e| panic!("{e}: {:?}", reset_reasons(envoy)))
}

fn start() -> Rig {
    let dir = TestDir::new("bad_input").unwrap();
    let upstream = Upstream::start();
    // Searches are answered in Envoy (held headers: they never reach the upstream), and the
    // catalog is only learned from lists: a background fetch would meet whatever a row scripted.
    // A search answer may be as large as the 64 KB names of row 18 (over the default budget).
    let config = json!({
        "hold_request_headers": true,
        "eager_patterns": ["*_get_*"],
        "catalog": {"fetch": false},
        "search": {"max_result_tokens": 100_000}
    });
    let filter = FilterOptions {
        wasm: harness::filter_wasm().unwrap_or_else(|e| panic!("{e}")),
        config_json: config.to_string(),
    };
    let mut opts = EnvoyOptions::new(upstream.addr, Some(filter));
    opts.allow_on_headers_stop_iteration = true;
    opts.route_namespace = Some(NAMESPACE.to_owned());
    let filtered = Envoy::start(&opts, &dir).unwrap_or_else(|e| panic!("{e}"));
    let baseline = Envoy::start(&EnvoyOptions::new(upstream.addr, None), &dir)
        .unwrap_or_else(|e| panic!("{e}"));
    Rig {
        resets: 0,
        filtered,
        baseline,
        upstream,
        _dir: dir,
    }
}

// ---- messages ------------------------------------------------------------------------------------

fn list_request(id: i64, cursor: Option<&str>) -> Vec<u8> {
    let v = match cursor {
        Some(c) => {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"cursor": c}})
        }
        None => json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}),
    };
    serde_json::to_vec(&v).unwrap()
}

fn search_request(id: i64, query: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "tool_search", "arguments": {"query": query, "limit": 5}}}))
    .unwrap()
}

fn tool(name: &str, description: &str) -> Value {
    json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
}

/// One eager tool (`*_get_*`) and two progressive ones.
fn small_tools() -> Vec<Value> {
    vec![
        tool("github_get_issue", "Get an issue"),
        tool(
            "stripe_refund_charge",
            "Refund a charge, fully or partially",
        ),
        tool("slack_post_message", "Post a message to a channel"),
    ]
}

/// A `tools/list` response body.
fn list_body(id: &Value, tools: &[Value], next: Option<&str>) -> Vec<u8> {
    let mut result = json!({"tools": tools});
    if let Some(n) = next {
        result["nextCursor"] = json!(n);
    }
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": result})).unwrap()
}

fn names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .unwrap_or_else(|| panic!("not a tools array: {tools}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("?").to_owned())
        .collect()
}

/// The tool names of a `definitions` search result.
fn found(seen: &Seen) -> Vec<String> {
    let v = seen.json();
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a search result: {v}"));
    let defs: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    names(&defs)
}

/// A gzip member holding `data` in stored (uncompressed) deflate blocks: real gzip, with no
/// compression library.
fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    let blocks: Vec<&[u8]> = data.chunks(65535).collect();
    for (i, block) in blocks.iter().enumerate() {
        out.push(u8::from(i + 1 == blocks.len()));
        let len = u16::try_from(block.len()).unwrap();
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&u32::try_from(data.len()).unwrap().to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// `depth` nested arrays around a zero.
fn nested(depth: usize) -> String {
    format!("{}0{}", "[".repeat(depth), "]".repeat(depth))
}

/// The tools of page `page` (of `size`) of the 100,000-tool catalog: every 1,000th is eager;
/// the last page's tools share a word no other tool has.
fn paged_tools(page: usize, size: usize) -> Vec<Value> {
    (page * size..(page + 1) * size)
        .map(|i| {
            let last = page == PAGES - 1;
            let name = if i % 1000 == 0 {
                format!("svc{i}_get_item")
            } else {
                format!("svc{i}_do_thing")
            };
            let description = if last {
                format!("Feed quokka number {i}")
            } else {
                format!("Does thing {i} for a service")
            };
            tool(&name, &description)
        })
        .collect()
}

const PAGES: usize = 10;
const PAGE_SIZE: usize = 10_000;

// ---- the table -----------------------------------------------------------------------------------

/// Every row, in one test on one rig. Each row: upstream script, request, outcome, counters,
/// then the rig must still serve.
#[test]
fn bad_inputs_never_break_the_client_or_the_worker() {
    let started = Instant::now();
    let mut rig = start();
    let addr = rig.filtered.listener;
    rig.assert_serving("start");
    let list1 = list_request(1, None);

    // 1. A gzip-compressed list (the client asked for no encoding; the upstream compressed anyway):
    //    passed through byte for byte, counted `passthrough.encoded`.
    {
        let row = "gzip list";
        let plain = list_body(&json!(1), &small_tools(), None);
        let wire = raw_response("200", &[JSON, ("content-encoding", "gzip")], &gzip(&plain));
        rig.upstream.always(wire.clone());
        let before = rig.stats();
        let seen = post_raw(addr, &[], &list1, None);
        assert_eq!(seen.ending(), (200, true), "{row}");
        assert_eq!(seen.header("content-encoding"), ["gzip"], "{row}");
        assert_eq!(seen.body, gzip(&plain), "{row}: not byte-identical");
        rig.assert_delta(row, &before, &[("passthrough.encoded", 1)]);
        rig.assert_serving(row);
    }

    // 2. An SSE list response whose events hold non-JSON data, then invalid UTF-8: non-JSON
    //    text is not a message (kept), invalid UTF-8 cannot be read (the stream passes on
    //    unchanged from there), counted `passthrough.unparseable`.
    {
        let row = "SSE non-JSON and invalid UTF-8";
        let mut body = b"event: message\ndata: this is not JSON\n\nevent: message\ndata: ".to_vec();
        body.extend_from_slice(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"a\xff\xfe\"}]}}\n\n",
        );
        rig.upstream.always(raw_response("200", &[SSE], &body));
        let before = rig.stats();
        let seen = post_raw(addr, &[], &list1, None);
        assert_eq!(seen.ending(), (200, true), "{row}");
        assert_eq!(seen.body, body, "{row}: not byte-identical");
        rig.assert_delta(row, &before, &[("passthrough.unparseable", 1)]);
        rig.assert_serving(row);
    }

    // 3. An SSE list in 7-byte chunks with CRLF line ends: rewritten, CRLF kept.
    {
        let row = "SSE list in 7-byte chunks, CRLF";
        let data = String::from_utf8(list_body(&json!(1), &small_tools(), None)).unwrap();
        let body = format!("id: 1\r\ndata: \r\n\r\nevent: message\r\ndata: {data}\r\n\r\n");
        let mut wire = head("200", &[SSE]);
        wire.extend_from_slice(b"\r\n");
        rig.upstream.script(move |_| {
            vec![
                Step::Write(wire.clone()),
                Step::Trickle(body.clone().into_bytes(), 7),
            ]
        });
        let before = rig.stats();
        let seen = post_raw(addr, &[], &list1, None);
        assert_eq!(seen.ending(), (200, true), "{row}");
        let text = String::from_utf8(seen.body.clone()).unwrap();
        assert!(
            text.starts_with("id: 1\r\ndata: \r\n\r\nevent: message\r\ndata: {"),
            "{row}: {text}"
        );
        assert!(
            text.ends_with("}\r\n\r\n") && !text.replace("\r\n", "").contains('\n'),
            "{row}: {text:?}"
        );
        let events = sse_data(&seen.body);
        let list: Value = serde_json::from_str(events.last().unwrap()).unwrap();
        assert_eq!(
            names(&list["result"]["tools"]),
            ["tool_search", "github_get_issue"],
            "{row}"
        );
        rig.assert_delta(row, &before, &[("lists_rewritten", 1), ("tools_hidden", 2)]);
        rig.assert_serving(row);
    }

    // 4. `tools` that is an object, not an array; 5. a list cut short (valid length): neither
    //    is a list the filter can read, both pass through byte for byte, `passthrough.unparseable`.
    for (row, body) in [
        (
            "tools is an object",
            br#"{"jsonrpc":"2.0","id":1,"result":{"tools":{"name":"github_get_issue"}}}"#.to_vec(),
        ),
        (
            "truncated JSON",
            br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"github_get_issue","descr"#
                .to_vec(),
        ),
    ] {
        rig.upstream.always(raw_response("200", &[JSON], &body));
        let before = rig.stats();
        let seen = post_raw(addr, &[], &list1, None);
        assert_eq!(seen.ending(), (200, true), "{row}");
        assert_eq!(seen.body, body, "{row}: not byte-identical");
        rig.assert_delta(row, &before, &[("passthrough.unparseable", 1)]);
        rig.assert_serving(row);
    }

    // 6. A 12.9 MB list, above `max_body_bytes` (8 MiB): passed through byte for byte (the
    //    filter holds it in the VM, not in Envoy's 1 MiB buffer), `passthrough.too_large`.
    {
        let row = "12.9 MB list";
        let filler = "x".repeat(900);
        let tools: Vec<Value> = (0..13_130)
            .map(|i| tool(&format!("big{i}_do_thing"), &format!("{i} {filler}")))
            .collect();
        let body = list_body(&json!(1), &tools, None);
        assert!(
            (12_800_000..13_000_000).contains(&body.len()),
            "{}",
            body.len()
        );
        rig.upstream.always(raw_response("200", &[JSON], &body));
        let before = rig.stats();
        let seen = post_raw(addr, &[], &list1, None);
        assert_eq!(seen.ending(), (200, true), "{row}");
        assert!(
            seen.body == body,
            "{row}: not byte-identical ({} bytes)",
            seen.body.len()
        );
        rig.assert_delta(row, &before, &[("passthrough.too_large", 1)]);
        rig.assert_serving(row);
    }

    // 7. A 10 MB request (a `tools/call` with a huge argument): above the 256 KiB the filter
    //    reads to classify a request, it goes upstream unread and whole, `passthrough.too_large`.
    {
        let row = "10 MB request";
        let request = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "stripe_refund_charge", "arguments": {"note": "n".repeat(10_000_000)}}}))
        .unwrap();
        let answer =
            br#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"ok"}]}}"#;
        rig.upstream.always(raw_response("200", &[JSON], answer));
        let before = rig.stats();
        let seen = post_raw(addr, &[], &request, None);
        assert_eq!(seen.ending(), (200, true), "{row}: {}", seen.text());
        assert_eq!(seen.body, answer, "{row}");
        let got = rig.upstream.take_received();
        assert_eq!(got.len(), 1, "{row}");
        let length = format!("content-length: {}", request.len());
        assert!(
            got[0].head.to_ascii_lowercase().contains(&length),
            "{row}: {}",
            got[0].head
        );
        assert!(
            got[0].body == request,
            "{row}: the upstream got {} bytes",
            got[0].body.len()
        );
        rig.assert_delta(row, &before, &[("passthrough.too_large", 1)]);
        rig.assert_serving(row);
    }

    // 8-10. The upstream breaks the response: reset mid-body, closes after the headers, or
    //    promises more bytes than it sends. The client sees the upstream's failure, exactly as
    //    through an Envoy without the filter (same status, body incomplete in both); the filter
    //    counts nothing (no list was read whole).
    {
        let list = list_body(&json!(1), &small_tools(), None);
        let half = list[..list.len() / 2].to_vec();
        let mut cut = head("200", &[JSON]);
        cut.extend_from_slice(format!("content-length: {}\r\n\r\n", list.len()).as_bytes());
        cut.extend_from_slice(&half);
        let mut headers_only = head("200", &[JSON]);
        headers_only
            .extend_from_slice(format!("content-length: {}\r\n\r\n", list.len()).as_bytes());
        let mut short = head("200", &[JSON]);
        short.extend_from_slice(format!("content-length: {}\r\n\r\n", list.len() + 100).as_bytes());
        short.extend_from_slice(&list);
        type Row = (&'static str, Vec<u8>, bool);
        let rows: [Row; 3] = [
            ("reset mid-body", cut, true),
            ("closed after the headers", headers_only, false),
            ("content-length longer than the body", short, false),
        ];
        for (row, wire, with_reset) in rows {
            rig.upstream.script(move |_| {
                let mut steps = vec![Step::Write(wire.clone())];
                if with_reset {
                    steps.push(Step::Reset);
                }
                steps
            });
            let before = rig.stats();
            let base_resets = reset_reasons(&rig.baseline).len();
            let seen = post_raw(addr, &[], &list1, None);
            let base = rig.baseline(&list1);
            // Envoy says why it reset the client's stream: the same upstream reason with and
            // without the filter.
            rig.resets += 1;
            let ours = wait_resets(&rig.filtered, rig.resets);
            let theirs = wait_resets(&rig.baseline, base_resets + 1);
            assert_eq!(ours.len(), rig.resets, "{row}: {ours:?}");
            assert_eq!(ours.last(), theirs.last(), "{row}");
            assert!(
                ours.last().is_some_and(|r| r.starts_with("upstream_reset")),
                "{row}: {ours:?}"
            );
            assert_eq!(
                seen.ending(),
                base.ending(),
                "{row}: not what the upstream alone does ({:?}, {:?})",
                seen.error,
                base.error
            );
            assert!(!seen.complete, "{row}: the body must read as incomplete");
            assert!(list.starts_with(&base.body), "{row}: {}", base.text());
            // The filter holds a JSON list until its end, which never comes: the client gets
            // the headers and no body bytes (without the filter, the bytes that came), never a
            // half-rewritten list.
            assert!(seen.body.is_empty(), "{row}: {}", seen.text());
            rig.assert_delta(row, &before, &[]);
            rig.assert_serving(row);
        }
    }

    // 11. Two `content-type` headers (JSON, then HTML). Envoy's HTTP/1 codec joins them into
    //     one value, `application/json,text/html`, which is not a media type the filter reads:
    //     passed through byte for byte, `passthrough.content_type`, as without the filter.
    {
        let row = "duplicate content-type";
        let body = list_body(&json!(1), &small_tools(), None);
        rig.upstream.always(raw_response(
            "200",
            &[JSON, ("content-type", "text/html")],
            &body,
        ));
        let before = rig.stats();
        let seen = post_raw(addr, &[], &list1, None);
        assert_eq!(seen.ending(), (200, true), "{row}");
        assert_eq!(seen.body, body, "{row}: not byte-identical");
        rig.assert_delta(row, &before, &[("passthrough.content_type", 1)]);
        let base = rig.baseline(&list1);
        assert_eq!(
            seen.header("content-type"),
            base.header("content-type"),
            "{row}: not what Envoy alone sends"
        );
        rig.assert_serving(row);
    }

    // 12. A 500 with an HTML body: not a list result, passed through byte for byte,
    //     `passthrough.status`.
    {
        let row = "500 with HTML";
        let body = b"<html><body><h1>500 Internal Server Error</h1></body></html>".to_vec();
        rig.upstream
            .always(raw_response("500", &[("content-type", "text/html")], &body));
        let before = rig.stats();
        let seen = post_raw(addr, &[], &list1, None);
        assert_eq!(seen.ending(), (500, true), "{row}");
        assert_eq!(seen.body, body, "{row}");
        rig.assert_delta(row, &before, &[("passthrough.status", 1)]);
        rig.assert_serving(row);
    }

    // 13. An SSE stream that never ends: a notification, then the list response, then nothing.
    //     The client gets both events (the list rewritten) while the stream is still open.
    {
        let row = "SSE that never ends";
        let note = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"listing"}}"#;
        let data = String::from_utf8(list_body(&json!(1), &small_tools(), None)).unwrap();
        let body = format!("event: message\ndata: {note}\n\nevent: message\ndata: {data}\n\n");
        let wire = [until_close("200", &[SSE]), body.into_bytes()].concat();
        rig.upstream
            .script(move |_| vec![Step::Write(wire.clone()), Step::Hang]);
        let before = rig.stats();
        let two_events = |b: &[u8]| sse_data(b).len() >= 2;
        let seen = post_raw(addr, &[], &list1, Some(&two_events));
        assert_eq!(seen.status, 200, "{row}");
        assert!(!seen.complete, "{row}: the stream cannot have ended");
        // The read stopped at the second event, not at a timeout or a reset.
        assert_eq!(seen.error, None, "{row}");
        let events = sse_data(&seen.body);
        assert_eq!(events[0], note, "{row}");
        let list: Value = serde_json::from_str(&events[1]).unwrap();
        assert_eq!(
            names(&list["result"]["tools"]),
            ["tool_search", "github_get_issue"],
            "{row}"
        );
        rig.assert_delta(row, &before, &[("lists_rewritten", 1), ("tools_hidden", 2)]);
        rig.assert_serving(row);
    }

    // 14. A batch of 1,000 `tools/list` requests: each response in the upstream's batch is
    //     rewritten.
    {
        let row = "batch of 1,000";
        let batch: Vec<Value> = (1..=1000)
            .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "tools/list"}))
            .collect();
        rig.upstream.script(|req| {
            let answers: Vec<Value> = req
                .json()
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|m| {
                            serde_json::from_slice(&list_body(&m["id"], &small_tools(), None))
                                .unwrap()
                        })
                        .collect()
                })
                .unwrap_or_default();
            vec![Step::Write(raw_response(
                "200",
                &[JSON],
                &serde_json::to_vec(&answers).unwrap(),
            ))]
        });
        let before = rig.stats();
        let seen = post_raw(addr, &[], &serde_json::to_vec(&batch).unwrap(), None);
        assert_eq!(seen.ending(), (200, true), "{row}");
        let answers = seen.json();
        let answers = answers.as_array().unwrap();
        assert_eq!(answers.len(), 1000, "{row}");
        for a in answers {
            assert_eq!(
                names(&a["result"]["tools"]),
                ["tool_search", "github_get_issue"],
                "{row}"
            );
        }
        rig.assert_delta(
            row,
            &before,
            &[("lists_rewritten", 1000), ("tools_hidden", 2000)],
        );
        rig.assert_serving(row);
    }

    // 15. 10,000 levels of nesting in a request. The filter reads a request's `params` as raw
    //     JSON (no depth limit, no recursion): a `tools/call` of an upstream tool goes upstream
    //     byte for byte and its answer comes back, counted only as a call no search preceded
    //     (search insights); a `tool_search` whose
    //     arguments nest that deep is refused by the filter itself with `isError` (its arguments
    //     are read with serde's 128-level limit), `searches_rejected`.
    {
        let row = "deep request";
        let request = format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"stripe_refund_charge","arguments":{{"deep":{}}}}}}}"#,
            nested(10_000)
        )
        .into_bytes();
        let answer = br#"{"jsonrpc":"2.0","id":9,"error":{"code":-32602,"message":"too deep"}}"#;
        rig.upstream.always(raw_response("200", &[JSON], answer));
        let before = rig.stats();
        let seen = post_raw(addr, &[], &request, None);
        assert_eq!(seen.ending(), (200, true), "{row}");
        assert_eq!(seen.body, answer, "{row}");
        let got = rig.upstream.take_received();
        assert!(got.len() == 1 && got[0].body == request, "{row}");
        rig.assert_delta(row, &before, &[("namespace.saas.calls_without_search", 1)]);
        let search = format!(
            r#"{{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{{"name":"tool_search","arguments":{{"query":"refund","deep":{}}}}}}}"#,
            nested(10_000)
        );
        let before = rig.stats();
        let seen = post_raw(addr, &[], search.as_bytes(), None);
        assert_eq!(seen.ending(), (200, true), "{row}: search");
        // A clear error the model can act on (`isError`), counted `searches_rejected`.
        assert_eq!(
            seen.json(),
            json!({"jsonrpc": "2.0", "id": 10, "result": {"content": [{"type": "text",
                "text": "Arguments are not valid JSON: recursion limit exceeded at line 1 column 152"}],
                "isError": true}}),
            "{row}: search"
        );
        rig.assert_delta(row, &before, &[("searches_rejected", 1)]);
        assert!(
            rig.upstream.take_received().is_empty(),
            "{row}: the search went upstream"
        );
        rig.assert_serving(row);
    }

    // 16. 10,000 levels of nesting in a list (a progressive tool's inputSchema). The filter
    //     reads tools as raw JSON (no depth limit, no recursion), so the list is rewritten: the
    //     deep tool is hidden and learned, and a search returns its definition byte for byte.
    {
        let row = "deep list";
        let deep_tool = format!(
            r#"{{"name":"deep_do_thing","description":"Deep nesting","inputSchema":{{"type":"object","x":{}}}}}"#,
            nested(10_000)
        );
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{deep_tool},{{"name":"github_get_issue","description":"Get an issue","inputSchema":{{"type":"object"}}}}]}}}}"#
        )
        .into_bytes();
        rig.upstream.always(raw_response("200", &[JSON], &body));
        let before = rig.stats();
        let seen = post_raw(addr, &[], &list1, None);
        assert_eq!(seen.ending(), (200, true), "{row}");
        assert_eq!(
            names(&seen.json()["result"]["tools"]),
            ["tool_search", "github_get_issue"],
            "{row}"
        );
        rig.assert_delta(row, &before, &[("lists_rewritten", 1), ("tools_hidden", 1)]);
        let seen = post_raw(addr, &[], &search_request(2, "deep nesting"), None);
        assert_eq!(seen.ending(), (200, true), "{row}");
        // The test's own JSON reader stops at 128 levels: the definition is compared as text.
        let text = seen.json()["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert_eq!(
            text,
            format!("[{deep_tool}]"),
            "{row}: the definition changed"
        );
        rig.assert_serving(row);
    }

    // 17. Lone surrogates (`\ud800`, `\udfff`) in a name and in a description. A strict reader
    //     cannot read those entries, so they are not tools the filter can hide or learn: they
    //     stay listed exactly as sent, after the named tools (as an entry without a string name
    //     does, README "What the agent sees"), the rest of the list is rewritten and searchable.
    {
        let row = "lone surrogates";
        let bad_name =
            r#"{"name":"bad\ud800name","description":"x","inputSchema":{"type":"object"}}"#;
        let bad_desc = r#"{"name":"odd_do_thing","description":"half \udfff a pair","inputSchema":{"type":"object"}}"#;
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{bad_name},{bad_desc},{{"name":"github_get_issue","description":"Get an issue","inputSchema":{{"type":"object"}}}},{{"name":"stripe_refund_charge","description":"Refund a charge","inputSchema":{{"type":"object"}}}}]}}}}"#
        )
        .into_bytes();
        rig.upstream.always(raw_response("200", &[JSON], &body));
        let before = rig.stats();
        let seen = post_raw(addr, &[], &list1, None);
        assert_eq!(seen.ending(), (200, true), "{row}");
        // serde_json refuses lone surrogates too: the answer is checked as text.
        let text = String::from_utf8(seen.body.clone()).unwrap();
        let search_at = text
            .find(r#"{"name":"tool_search""#)
            .expect("the search tool");
        // Listed after the named tools, in the upstream's order.
        let kept = format!(
            r#",{{"name":"github_get_issue","description":"Get an issue","inputSchema":{{"type":"object"}}}},{bad_name},{bad_desc}]"#
        );
        let kept_at = text.find(&kept).unwrap_or_else(|| panic!("{row}: {text}"));
        assert!(search_at < kept_at, "{row}: {text}");
        assert!(
            !text.contains(r#""name":"stripe_refund_charge""#),
            "{row}: {text}"
        );
        rig.assert_delta(row, &before, &[("lists_rewritten", 1), ("tools_hidden", 1)]);
        let seen = post_raw(
            addr,
            &[],
            &search_request(2, "refund a charge half pair"),
            None,
        );
        assert_eq!(found(&seen), ["stripe_refund_charge"], "{row}");
        rig.assert_serving(row);
    }

    // 18. 64 KB names and descriptions.
    {
        let row = "64 KB name and description";
        let long_name = format!("huge_{}", "segment".repeat(64 * 1024 / 7));
        let long_desc = format!("Fetch a wombat. {}", "lorem ipsum ".repeat(64 * 1024 / 12));
        let tools = vec![
            tool(&long_name, "A tool with a very long name"),
            tool("wombat_get_thing", &long_desc),
            tool("stripe_refund_charge", "Refund a charge"),
        ];
        let body = list_body(&json!(1), &tools, None);
        rig.upstream.always(raw_response("200", &[JSON], &body));
        let before = rig.stats();
        let seen = post_raw(addr, &[], &list1, None);
        assert_eq!(seen.ending(), (200, true), "{row}");
        let listed = seen.json()["result"]["tools"].clone();
        assert_eq!(names(&listed), ["tool_search", "wombat_get_thing"], "{row}");
        assert_eq!(listed[1], tools[1], "{row}: the eager tool changed");
        rig.assert_delta(row, &before, &[("lists_rewritten", 1), ("tools_hidden", 2)]);
        let seen = post_raw(addr, &[], &search_request(2, "very long name"), None);
        assert_eq!(seen.ending(), (200, true), "{row}");
        assert!(found(&seen).contains(&long_name), "{row}: {}", seen.text());
        rig.assert_serving(row);
    }

    // 19. 100,000 tools in 10 pages: each page rewritten (the first carries the search tool,
    //     each keeps its eager tools and `nextCursor`), and a search then finds a tool of the
    //     last page.
    {
        let row = "100,000 tools in pages";
        let pages: Arc<Vec<Vec<u8>>> = Arc::new(
            (0..PAGES)
                .map(|p| {
                    let next = (p + 1 < PAGES).then(|| format!("page-{}", p + 1));
                    list_body(&json!(1), &paged_tools(p, PAGE_SIZE), next.as_deref())
                })
                .collect(),
        );
        let served = Arc::clone(&pages);
        rig.upstream.script(move |req| {
            let cursor = req.json()["params"]["cursor"].as_str().map(str::to_owned);
            let page: usize = cursor
                .and_then(|c| c.strip_prefix("page-").and_then(|n| n.parse().ok()))
                .unwrap_or(0);
            vec![Step::Write(raw_response("200", &[JSON], &served[page]))]
        });
        let before = rig.stats();
        let mut cursor: Option<String> = None;
        for p in 0..PAGES {
            let seen = post_raw(addr, &[], &list_request(1, cursor.as_deref()), None);
            assert_eq!(seen.ending(), (200, true), "{row}: page {p}");
            let result = seen.json()["result"].clone();
            let mut want: Vec<String> = paged_tools(p, PAGE_SIZE)
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .filter(|n| n.contains("_get_"))
                .collect();
            if p == 0 {
                want.insert(0, "tool_search".to_owned());
            }
            assert_eq!(names(&result["tools"]), want, "{row}: page {p}");
            cursor = result["nextCursor"].as_str().map(str::to_owned);
            assert_eq!(cursor.is_some(), p + 1 < PAGES, "{row}: page {p}");
        }
        let eager = PAGES * PAGE_SIZE / 1000;
        rig.assert_delta(
            row,
            &before,
            &[
                ("lists_rewritten", PAGES as u64),
                ("tools_hidden", (PAGES * PAGE_SIZE - eager) as u64),
            ],
        );
        let seen = post_raw(addr, &[], &search_request(2, "feed quokka 99999"), None);
        assert_eq!(seen.ending(), (200, true), "{row}");
        let hits = found(&seen);
        assert!(
            hits.contains(&"svc99999_do_thing".to_owned()),
            "{row}: {hits:?}"
        );
        rig.assert_serving(row);
    }

    eprintln!("bad-input table: {:?}", started.elapsed());
}

/// A plugin configuration the filter refuses is refused by Envoy itself: `envoy --mode
/// validate` fails and so does a real start, each showing the filter's own message (the field,
/// the value, what is allowed); the same Envoy configuration with a good plugin configuration
/// validates and starts. Loaded fail-closed, the default: no listener serves without the filter.
#[test]
fn a_configuration_the_filter_refuses_stops_envoy_with_the_filters_message() {
    use mcp_tool_search_wasm_tests::envoy_config::{
        Bootstrap, HttpFilter, Listener, Route, VirtualHost, WasmFilter,
    };
    let wasm = harness::filter_wasm().unwrap_or_else(|e| panic!("{e}"));
    let dir = TestDir::new("bad_configuration").unwrap();
    let yaml = |plugin: &str| {
        let listener = Listener::new("mcp_listener")
            .virtual_host(VirtualHost::new(
                "local",
                &["*"],
                vec![Route::prefix("/").direct(200, Some("ok"))],
            ))
            .filter(HttpFilter::wasm(&WasmFilter::new(&wasm, plugin)))
            .filter(HttpFilter::router());
        Bootstrap::new().listener(listener).to_yaml()
    };
    let bad = r#"{"search":{"max_allowable_results":0}}"#;
    let message = "plugin configuration field `search.max_allowable_results` is 0; expected an integer from 1 to 100";
    let validate = |plugin: &str, name: &str| {
        let path = dir.join(name);
        std::fs::write(&path, yaml(plugin)).unwrap();
        std::process::Command::new(harness::envoy_bin().unwrap())
            .args(["--mode", "validate", "--log-level", "warning", "-c"])
            .arg(&path)
            .output()
            .unwrap()
    };
    let out = validate(bad, "bad.yaml");
    let log = String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned();
    assert!(!out.status.success(), "validate passed:\n{log}");
    assert!(log.contains(message), "{log}");
    let out = validate(r#"{"search":{"max_allowable_results":1}}"#, "good.yaml");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let why = match Envoy::start_yaml(&yaml(bad), "wasm:info", &dir) {
        Err(why) => why.to_string(),
        Ok(_) => panic!("Envoy started with a configuration the filter refuses"),
    };
    assert!(why.contains(message), "{why}");
    let envoy = Envoy::start_yaml(&yaml("{}"), "wasm:info", &dir).unwrap();
    drop(envoy);
}
