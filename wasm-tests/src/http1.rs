//! An HTTP/1.1 client over plain TCP, written byte for byte: the one client of the end-to-end
//! tests, the benchmark's closed-loop load and the soak.
//!
//! - [`Request`]: the exact bytes of one request, built header by header ([`Request::builder`])
//!   or given whole ([`Request::raw`]), so a test can send what no library would (a repeated
//!   header, a wrong length, a path as an attacker writes it).
//! - [`Conn`]: one keep-alive connection (TCP_NODELAY, connect and read timeouts). A response is
//!   read by its framing (`content-length`, chunked, or until the close) with
//!   [`Conn::exchange`] (every failure reported as it happened) or [`Conn::round_trip`] (a
//!   kept-alive connection the server closed meanwhile is reopened once); or read as it arrives
//!   with [`Conn::read_streaming`] (an SSE stream that never ends, a body the server cuts).
//! - [`exchange_closing`]: one request on a new connection with `Connection: close`.
//! - [`sse_events`]: the complete events of an SSE body.
//!
//! The load path ([`Conn::round_trip`]) allocates the head text and the body once per response
//! and writes the request with one call; headers are looked up in the head text, not copied.

mod message;
mod streamed;

pub use message::{find, Framing, Request, RequestBuilder, Response};
pub use streamed::{dechunk, exchange_closing, sse_events, SseEvent, Streamed};

use message::status_of;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long opening a connection may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one read may wait for the server.
pub const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// Bytes asked of the kernel per read.
const READ_CHUNK: usize = 64 * 1024;
/// How often [`Conn::read_streaming`] wakes to check its deadline.
const POLL: Duration = Duration::from_millis(50);

// ---- failures --------------------------------------------------------------------------------------

/// Why no response came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The connection could not be opened.
    Connect(String),
    /// The connection was closed or reset before the response was complete.
    Reset(String),
    /// No byte within the read timeout (the timeout given).
    Timeout(Duration),
    /// Bytes that are not an HTTP/1.1 response.
    Protocol(String),
}

impl Failure {
    /// A short name for tables.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Connect(_) => "connect refused",
            Failure::Reset(_) => "reset",
            Failure::Timeout(_) => "timeout",
            Failure::Protocol(_) => "bad HTTP",
        }
    }

    pub fn detail(&self) -> String {
        match self {
            Failure::Connect(d) | Failure::Reset(d) | Failure::Protocol(d) => d.clone(),
            Failure::Timeout(t) => format!("no response in {t:?}"),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind(), self.detail())
    }
}

impl std::error::Error for Failure {}

// ---- the connection --------------------------------------------------------------------------------

/// Opens a connection with TCP_NODELAY (a request leaves in one segment, at once) and
/// `read_timeout` on every read.
pub fn connect(
    addr: SocketAddr,
    connect_timeout: Duration,
    read_timeout: Duration,
) -> Result<TcpStream, Failure> {
    let s = TcpStream::connect_timeout(&addr, connect_timeout)
        .map_err(|e| Failure::Connect(format!("connect {addr}: {e}")))?;
    s.set_nodelay(true)
        .and_then(|()| s.set_read_timeout(Some(read_timeout)))
        .map_err(|e| Failure::Connect(e.to_string()))?;
    Ok(s)
}

/// What one attempt at an exchange came to.
enum Attempt {
    /// The connection was found closed before any byte of the response: a kept-alive
    /// connection the server ended between requests, worth one retry on a new one.
    Stale(Failure),
    Failed(Failure),
}

impl From<Failure> for Attempt {
    fn from(f: Failure) -> Self {
        Attempt::Failed(f)
    }
}

/// One keep-alive connection, opened when first needed and again after the server closed it.
#[derive(Debug)]
pub struct Conn {
    addr: SocketAddr,
    stream: Option<TcpStream>,
    buf: Vec<u8>,
    connect_timeout: Duration,
    read_timeout: Duration,
    opened: u64,
}

impl Conn {
    /// A connection to `addr`, opened by the first request.
    pub fn new(addr: SocketAddr) -> Conn {
        Conn {
            addr,
            stream: None,
            buf: Vec::with_capacity(READ_CHUNK),
            connect_timeout: CONNECT_TIMEOUT,
            read_timeout: READ_TIMEOUT,
            opened: 0,
        }
    }

    /// A connection to `addr`, opened now.
    pub fn open(addr: SocketAddr) -> Result<Conn, Failure> {
        let mut conn = Conn::new(addr);
        conn.connected()?;
        Ok(conn)
    }

    /// How long opening a connection may take (from the next one opened).
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Conn {
        self.connect_timeout = timeout;
        self
    }

    /// How long one read may wait.
    pub fn with_read_timeout(mut self, timeout: Duration) -> Conn {
        self.read_timeout = timeout;
        if let Some(s) = &self.stream {
            let _ = s.set_read_timeout(Some(timeout));
        }
        self
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Connections opened so far (the first included).
    pub fn opened(&self) -> u64 {
        self.opened
    }

    /// Connections opened after the first (should stay 0 under keep-alive).
    pub fn reconnects(&self) -> u64 {
        self.opened.saturating_sub(1)
    }

    /// Ends the connection; the next request opens a new one.
    pub fn close(&mut self) {
        self.stream = None;
        self.buf.clear();
    }

    fn connected(&mut self) -> Result<&mut TcpStream, Failure> {
        if self.stream.is_none() {
            let s = connect(self.addr, self.connect_timeout, self.read_timeout)?;
            self.buf.clear();
            self.opened += 1;
            return Ok(self.stream.insert(s));
        }
        self.stream
            .as_mut()
            .ok_or_else(|| Failure::Connect(format!("connect {}: no stream", self.addr)))
    }

    /// Writes `bytes` (opening the connection if needed).
    pub fn send(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.connected()?
            .write_all(bytes)
            .map_err(|e| Failure::Reset(format!("write: {e}")))
    }

    /// Sends `request` and reads the whole response. After a failure, or a response after which
    /// the server closes, the connection is dropped and the next request opens a new one.
    pub fn exchange(&mut self, request: &[u8]) -> Result<Response, Failure> {
        self.attempt(request).map_err(|a| match a {
            Attempt::Stale(f) | Attempt::Failed(f) => f,
        })
    }

    /// [`Conn::exchange`], but a connection found closed before any byte of the response is
    /// reopened and the request sent once more; a connection the server closes after a
    /// response is reopened at once (not in the next request's time).
    pub fn round_trip(&mut self, request: &Request) -> Result<Response, Failure> {
        let response = match self.attempt(&request.bytes) {
            Ok(r) => r,
            Err(Attempt::Stale(_)) => self.exchange(&request.bytes)?,
            Err(Attempt::Failed(f)) => return Err(f),
        };
        if self.stream.is_none() {
            self.connected()?;
        }
        Ok(response)
    }

    fn attempt(&mut self, request: &[u8]) -> Result<Response, Attempt> {
        // A write refused by a connection the server ended is only seen as a reset.
        let result = self.send(request).map_err(|f| match f {
            Failure::Reset(_) if self.buf.is_empty() => Attempt::Stale(f),
            f => Attempt::Failed(f),
        });
        let result = result.and_then(|()| self.read_response());
        match &result {
            Ok((_, true)) => {}
            _ => self.close(),
        }
        result.map(|(r, _)| r)
    }

    /// Reads one response by its framing; `true` when the connection can carry the next one.
    fn read_response(&mut self) -> Result<(Response, bool), Attempt> {
        let head_end = loop {
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                break end;
            }
            let empty = self.buf.is_empty();
            match self.fill() {
                Ok(0) if empty => {
                    return Err(Attempt::Stale(Failure::Reset(
                        "connection closed before the response".to_owned(),
                    )))
                }
                Ok(0) => return Err(closed("inside the response head")),
                Ok(_) => {}
                Err(f @ Failure::Reset(_)) if empty => return Err(Attempt::Stale(f)),
                Err(f) => return Err(f.into()),
            }
        };
        let head =
            String::from_utf8_lossy(self.buf.get(..head_end).unwrap_or_default()).into_owned();
        self.buf.drain(..head_end + 4);
        let status = status_of(&head)
            .ok_or_else(|| Failure::Protocol(format!("bad status line in {head:?}")))?;
        let framing = Framing::of(status, &head).map_err(Failure::Protocol)?;
        let body = match framing {
            Framing::Length(n) => {
                while self.buf.len() < n {
                    if self.fill()? == 0 {
                        return Err(closed("inside the body"));
                    }
                }
                self.buf.drain(..n).collect()
            }
            Framing::Chunked => self.read_chunked()?,
            Framing::UntilClose => {
                while self.fill()? > 0 {}
                std::mem::take(&mut self.buf)
            }
        };
        let response = Response { status, head, body };
        let keep = framing != Framing::UntilClose && !response.closes();
        Ok((response, keep))
    }

    fn read_chunked(&mut self) -> Result<Vec<u8>, Attempt> {
        let mut body = Vec::new();
        loop {
            let line_end = self.line("inside a chunk size")?;
            let line = String::from_utf8_lossy(self.buf.get(..line_end).unwrap_or_default());
            let size_text = line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|e| Failure::Protocol(format!("chunk size {size_text:?}: {e}")))?;
            self.buf.drain(..line_end + 2);
            if size == 0 {
                // Trailers (none expected), then the blank line.
                loop {
                    let end = self.line("after the last chunk")?;
                    self.buf.drain(..end + 2);
                    if end == 0 {
                        return Ok(body);
                    }
                }
            }
            while self.buf.len() < size + 2 {
                if self.fill()? == 0 {
                    return Err(closed("inside a chunk"));
                }
            }
            body.extend(self.buf.drain(..size));
            self.buf.drain(..2);
        }
    }

    /// The end of the next CRLF-terminated line in the buffer, reading as needed.
    fn line(&mut self, place: &str) -> Result<usize, Attempt> {
        loop {
            if let Some(end) = find(&self.buf, b"\r\n") {
                return Ok(end);
            }
            if self.fill()? == 0 {
                return Err(closed(place));
            }
        }
    }

    /// Reads once more into the buffer: the bytes read, 0 at the end of the stream.
    fn fill(&mut self) -> Result<usize, Failure> {
        let timeout = self.read_timeout;
        let stream = self
            .stream
            .as_mut()
            .ok_or_else(|| Failure::Reset("not connected".to_owned()))?;
        let mut chunk = [0u8; READ_CHUNK];
        match stream.read(&mut chunk) {
            Ok(n) => {
                self.buf
                    .extend_from_slice(chunk.get(..n).unwrap_or_default());
                Ok(n)
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                Err(Failure::Timeout(timeout))
            }
            Err(e) => Err(Failure::Reset(format!("read: {e}"))),
        }
    }
}

fn closed(place: &str) -> Attempt {
    Attempt::Failed(Failure::Reset(format!("connection closed {place}")))
}

#[cfg(test)]
#[path = "http1_tests.rs"]
mod tests;
