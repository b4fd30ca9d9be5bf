//! A small HTTP/1.1 load client: keep-alive connections, closed loop (each connection sends its
//! next request when the previous response is complete), every latency recorded.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

pub type Result<T> = std::result::Result<T, String>;

/// One prepared request: the exact bytes on the wire.
#[derive(Debug, Clone)]
pub struct Request {
    pub bytes: Vec<u8>,
}

impl Request {
    /// `POST path` with a JSON body and the headers an MCP client sends.
    pub fn post_json(authority: &str, path: &str, body: &str) -> Request {
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: {authority}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\n\
             content-length: {}\r\n\r\n",
            body.len()
        );
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body.as_bytes());
        Request { bytes }
    }

    /// `POST path` with any body (not an MCP request: the proxy-wasm floor's lessons, a
    /// catalog-server's new tools).
    pub fn post(authority: &str, path: &str, content_type: &str, body: &[u8]) -> Request {
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: {authority}\r\ncontent-type: {content_type}\r\n\
             content-length: {}\r\n\r\n",
            body.len()
        );
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        Request { bytes }
    }
}

/// What came back.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// Header names lowercased, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One keep-alive connection.
pub struct Conn {
    addr: SocketAddr,
    stream: TcpStream,
    buf: Vec<u8>,
    /// Reconnections after the server closed the connection (should stay 0).
    pub reconnects: u64,
}

impl Conn {
    pub fn open(addr: SocketAddr) -> Result<Conn> {
        let stream = connect(addr)?;
        Ok(Conn {
            addr,
            stream,
            buf: Vec::with_capacity(64 * 1024),
            reconnects: 0,
        })
    }

    /// Sends `req` and reads the whole response. A connection the server closed between
    /// requests is reopened once.
    pub fn round_trip(&mut self, req: &Request) -> Result<Response> {
        match self.try_round_trip(req) {
            Ok(r) => Ok(r),
            Err(Retry::Closed) => {
                self.stream = connect(self.addr)?;
                self.buf.clear();
                self.reconnects += 1;
                self.try_round_trip(req).map_err(|e| match e {
                    Retry::Closed => "connection closed twice in a row".to_owned(),
                    Retry::Fail(e) => e,
                })
            }
            Err(Retry::Fail(e)) => Err(e),
        }
    }

    fn try_round_trip(&mut self, req: &Request) -> std::result::Result<Response, Retry> {
        if let Err(e) = self.stream.write_all(&req.bytes) {
            return Err(if self.buf.is_empty() {
                Retry::Closed
            } else {
                Retry::Fail(e.to_string())
            });
        }
        let (head_end, status, headers, framing, close) = loop {
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                let head =
                    String::from_utf8_lossy(self.buf.get(..end).unwrap_or_default()).into_owned();
                let (status, headers, framing, close) = parse_head(&head).map_err(Retry::Fail)?;
                break (end + 4, status, headers, framing, close);
            }
            if self.fill()? == 0 {
                return Err(if self.buf.is_empty() {
                    Retry::Closed
                } else {
                    Retry::Fail("connection closed inside the response head".to_owned())
                });
            }
        };
        self.buf.drain(..head_end);
        let body = match framing {
            Framing::Length(n) => {
                while self.buf.len() < n {
                    if self.fill()? == 0 {
                        return Err(Retry::Fail("connection closed inside the body".to_owned()));
                    }
                }
                self.buf.drain(..n).collect()
            }
            Framing::Chunked => self.read_chunked()?,
            Framing::Close => {
                while self.fill()? > 0 {}
                std::mem::take(&mut self.buf)
            }
        };
        if close || matches!(framing, Framing::Close) {
            self.stream = connect(self.addr).map_err(Retry::Fail)?;
            self.buf.clear();
            self.reconnects += 1;
        }
        Ok(Response {
            status,
            headers,
            body,
        })
    }

    fn read_chunked(&mut self) -> std::result::Result<Vec<u8>, Retry> {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(e) = find(&self.buf, b"\r\n") {
                    break e;
                }
                if self.fill()? == 0 {
                    return Err(Retry::Fail(
                        "connection closed inside a chunk size".to_owned(),
                    ));
                }
            };
            let size_text =
                String::from_utf8_lossy(self.buf.get(..line_end).unwrap_or_default()).into_owned();
            let size_text = size_text.split(';').next().unwrap_or("").trim().to_owned();
            let size = usize::from_str_radix(&size_text, 16)
                .map_err(|e| Retry::Fail(format!("bad chunk size {size_text:?}: {e}")))?;
            self.buf.drain(..line_end + 2);
            if size == 0 {
                // Trailers (none expected), then the final CRLF.
                loop {
                    if let Some(e) = find(&self.buf, b"\r\n") {
                        let empty = e == 0;
                        self.buf.drain(..e + 2);
                        if empty {
                            return Ok(body);
                        }
                        continue;
                    }
                    if self.fill()? == 0 {
                        return Err(Retry::Fail(
                            "connection closed after the last chunk".to_owned(),
                        ));
                    }
                }
            }
            while self.buf.len() < size + 2 {
                if self.fill()? == 0 {
                    return Err(Retry::Fail("connection closed inside a chunk".to_owned()));
                }
            }
            body.extend(self.buf.drain(..size));
            self.buf.drain(..2);
        }
    }

    fn fill(&mut self) -> std::result::Result<usize, Retry> {
        let mut chunk = [0u8; 64 * 1024];
        match self.stream.read(&mut chunk) {
            Ok(n) => {
                self.buf
                    .extend_from_slice(chunk.get(..n).unwrap_or_default());
                Ok(n)
            }
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Ok(0),
            Err(e) => Err(Retry::Fail(format!("read: {e}"))),
        }
    }
}

enum Retry {
    Closed,
    Fail(String),
}

impl From<String> for Retry {
    fn from(e: String) -> Self {
        Retry::Fail(e)
    }
}

enum Framing {
    Length(usize),
    Chunked,
    Close,
}

type Head = (u16, Vec<(String, String)>, Framing, bool);

fn parse_head(head: &str) -> Result<Head> {
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line {status_line:?}"))?;
    let mut framing = Framing::Close;
    let mut close = false;
    let mut headers = Vec::new();
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        let name = name.trim().to_ascii_lowercase();
        headers.push((name.clone(), value.to_owned()));
        match name.as_str() {
            "content-length" => {
                framing = Framing::Length(
                    value
                        .parse()
                        .map_err(|e| format!("content-length {value:?}: {e}"))?,
                )
            }
            "transfer-encoding" if value.eq_ignore_ascii_case("chunked") => {
                framing = Framing::Chunked
            }
            "connection" if value.eq_ignore_ascii_case("close") => close = true,
            _ => {}
        }
    }
    // 1xx, 204 and 304 responses have no body whatever their headers say (RFC 9112 §6.3).
    if status / 100 == 1 || status == 204 || status == 304 {
        framing = Framing::Length(0);
    }
    Ok((status, headers, framing, close))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn connect(addr: SocketAddr) -> Result<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    Ok(s)
}

/// Latencies of one measurement (possibly pooled over rounds) and the wall time they took.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    pub latencies: Vec<Duration>,
    /// Wall time of the runs (for requests per second).
    pub elapsed: Duration,
    pub errors: u64,
    pub reconnects: u64,
    /// Response bytes of the last response seen.
    pub body_bytes: usize,
}

impl Samples {
    pub fn merge(&mut self, other: Samples) {
        self.latencies.extend(other.latencies);
        self.elapsed += other.elapsed;
        self.errors += other.errors;
        self.reconnects += other.reconnects;
        self.body_bytes = other.body_bytes.max(self.body_bytes);
    }

    pub fn count(&self) -> usize {
        self.latencies.len()
    }

    /// The `p`th percentile (0..=100), nearest rank.
    pub fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        percentile_of(&sorted, p)
    }

    pub fn p50(&self) -> Duration {
        self.percentile(50.0)
    }

    pub fn p99(&self) -> Duration {
        self.percentile(99.0)
    }

    pub fn rps(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.latencies.len() as f64 / secs
        } else {
            0.0
        }
    }
}

pub fn percentile_of(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    let i = rank.clamp(1, sorted.len()) - 1;
    sorted.get(i).copied().unwrap_or_default()
}

/// Checks one response: 200 and, when given, a body containing `expect`.
pub fn check(resp: &Response, expect: Option<&str>) -> Result<()> {
    if resp.status != 200 {
        return Err(format!(
            "status {}: {}",
            resp.status,
            String::from_utf8_lossy(
                resp.body
                    .get(..resp.body.len().min(300))
                    .unwrap_or_default()
            )
        ));
    }
    if let Some(want) = expect {
        if find(&resp.body, want.as_bytes()).is_none() {
            return Err(format!(
                "response lacks {want:?}: {}",
                String::from_utf8_lossy(
                    resp.body
                        .get(..resp.body.len().min(300))
                        .unwrap_or_default()
                )
            ));
        }
    }
    Ok(())
}

/// Closed loop over `conns` connections (one thread each) for `duration`, cycling through
/// `requests`; at least `min_requests` per connection. Every response must pass `check`
/// with `expect`.
pub fn run(
    addr: SocketAddr,
    requests: &[Request],
    conns: usize,
    duration: Duration,
    min_requests: usize,
    expect: Option<&str>,
) -> Result<Samples> {
    let start = Instant::now();
    let results: Vec<Result<Samples>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..conns.max(1))
            .map(|c| {
                scope.spawn(move || -> Result<Samples> {
                    let mut conn = Conn::open(addr)?;
                    let mut samples = Samples::default();
                    let deadline = Instant::now() + duration;
                    let mut i = c;
                    while Instant::now() < deadline || samples.count() < min_requests {
                        let req = requests
                            .get(i % requests.len().max(1))
                            .ok_or("no requests")?;
                        i += 1;
                        let t = Instant::now();
                        let resp = conn.round_trip(req)?;
                        samples.latencies.push(t.elapsed());
                        if check(&resp, expect).is_err() {
                            samples.errors += 1;
                        }
                        samples.body_bytes = resp.body.len();
                    }
                    samples.reconnects = conn.reconnects;
                    Ok(samples)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("load thread failed".to_owned()))
            })
            .collect()
    });
    let elapsed = start.elapsed();
    let mut all = Samples::default();
    for r in results {
        all.merge(r?);
    }
    all.elapsed = elapsed;
    Ok(all)
}
