//! The soak's HTTP/1.1 client: one keep-alive connection, no retry of its own.
//!
//! The bench's `client::Conn` resends a request once when a kept-alive connection turns out to
//! be closed; here that would hide exactly what the soak looks for (a stream the filter reset
//! before answering), so every failure is reported as it happened and the connection is
//! reopened for the next request. Response headers are kept (`mcp-session-id`).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long a response may take before it counts as a timeout: far above any latency the
/// filter or the upstream should show, below the length of any fault window.
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Why no response came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The connection could not be opened.
    Connect(String),
    /// The connection was closed or reset before the response was complete.
    Reset(String),
    /// No complete response within [`READ_TIMEOUT`].
    Timeout,
    /// Bytes that are not an HTTP/1.1 response.
    Protocol(String),
}

impl Failure {
    /// A short name for tables.
    pub fn kind(&self) -> &'static str {
        match self {
            Failure::Connect(_) => "connect refused",
            Failure::Reset(_) => "reset",
            Failure::Timeout => "timeout",
            Failure::Protocol(_) => "bad HTTP",
        }
    }

    pub fn detail(&self) -> String {
        match self {
            Failure::Connect(d) | Failure::Reset(d) | Failure::Protocol(d) => d.clone(),
            Failure::Timeout => format!("no response in {READ_TIMEOUT:?}"),
        }
    }
}

pub struct Conn {
    addr: SocketAddr,
    stream: Option<TcpStream>,
    buf: Vec<u8>,
    /// Connections opened (the first included).
    pub opened: u64,
}

pub fn connect(addr: SocketAddr, read_timeout: Duration) -> Result<TcpStream, Failure> {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .map_err(|e| Failure::Connect(format!("connect {addr}: {e}")))?;
    s.set_nodelay(true)
        .and_then(|()| s.set_read_timeout(Some(read_timeout)))
        .map_err(|e| Failure::Connect(e.to_string()))?;
    Ok(s)
}

impl Conn {
    pub fn new(addr: SocketAddr) -> Conn {
        Conn {
            addr,
            stream: None,
            buf: Vec::with_capacity(64 * 1024),
            opened: 0,
        }
    }

    /// Sends `request` (whole, as on the wire) and reads the whole response. After a failure
    /// the connection is dropped; the next exchange opens a new one.
    pub fn exchange(&mut self, request: &[u8]) -> Result<Reply, Failure> {
        let result = self.try_exchange(request);
        match &result {
            Ok(reply) if !closes(reply) => {}
            _ => {
                self.stream = None;
                self.buf.clear();
            }
        }
        result
    }

    fn try_exchange(&mut self, request: &[u8]) -> Result<Reply, Failure> {
        if self.stream.is_none() {
            self.stream = Some(connect(self.addr, READ_TIMEOUT)?);
            self.buf.clear();
            self.opened += 1;
        }
        let stream = self.stream.as_mut().ok_or(Failure::Timeout)?;
        stream
            .write_all(request)
            .map_err(|e| Failure::Reset(format!("write: {e}")))?;
        let head_end = loop {
            if let Some(end) = find(&self.buf, b"\r\n\r\n") {
                break end;
            }
            self.fill("in the response head")?;
        };
        let head =
            String::from_utf8_lossy(self.buf.get(..head_end).unwrap_or_default()).into_owned();
        self.buf.drain(..head_end + 4);
        let (status, headers) = parse_head(&head)?;
        let length = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| v.trim().parse::<usize>())
            .transpose()
            .map_err(|e| Failure::Protocol(format!("content-length: {e}")))?;
        let chunked = headers.iter().any(|(n, v)| {
            n.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked")
        });
        let body = if chunked {
            self.read_chunked()?
        } else if let Some(n) = length {
            while self.buf.len() < n {
                self.fill("in the body")?;
            }
            self.buf.drain(..n).collect()
        } else if status == 204 || status == 304 || (100..200).contains(&status) {
            Vec::new()
        } else {
            // Delimited by the close.
            while self.fill_or_eof()? > 0 {}
            std::mem::take(&mut self.buf)
        };
        Ok(Reply {
            status,
            headers,
            body,
        })
    }

    fn read_chunked(&mut self) -> Result<Vec<u8>, Failure> {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(e) = find(&self.buf, b"\r\n") {
                    break e;
                }
                self.fill("in a chunk size")?;
            };
            let line =
                String::from_utf8_lossy(self.buf.get(..line_end).unwrap_or_default()).into_owned();
            let size_text = line.split(';').next().unwrap_or("").trim().to_owned();
            let size = usize::from_str_radix(&size_text, 16)
                .map_err(|e| Failure::Protocol(format!("chunk size {size_text:?}: {e}")))?;
            self.buf.drain(..line_end + 2);
            if size == 0 {
                loop {
                    if let Some(e) = find(&self.buf, b"\r\n") {
                        self.buf.drain(..e + 2);
                        if e == 0 {
                            return Ok(body);
                        }
                        continue;
                    }
                    self.fill("after the last chunk")?;
                }
            }
            while self.buf.len() < size + 2 {
                self.fill("in a chunk")?;
            }
            body.extend(self.buf.drain(..size));
            self.buf.drain(..2);
        }
    }

    /// Reads more; the end of the stream is a failure `where`.
    fn fill(&mut self, place: &str) -> Result<(), Failure> {
        match self.fill_or_eof()? {
            0 => Err(Failure::Reset(format!("connection closed {place}"))),
            _ => Ok(()),
        }
    }

    fn fill_or_eof(&mut self) -> Result<usize, Failure> {
        let stream = self.stream.as_mut().ok_or(Failure::Timeout)?;
        let mut chunk = [0u8; 64 * 1024];
        match stream.read(&mut chunk) {
            Ok(n) => {
                self.buf
                    .extend_from_slice(chunk.get(..n).unwrap_or_default());
                Ok(n)
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                Err(Failure::Timeout)
            }
            Err(e) => Err(Failure::Reset(format!("read: {e}"))),
        }
    }
}

/// Does the server close the connection after this response?
fn closes(reply: &Reply) -> bool {
    reply
        .header("connection")
        .is_some_and(|v| v.eq_ignore_ascii_case("close"))
}

fn parse_head(head: &str) -> Result<(u16, Vec<(String, String)>), Failure> {
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Failure::Protocol(format!("status line {status_line:?}")))?;
    let headers = lines
        .filter_map(|l| {
            let (n, v) = l.split_once(':')?;
            Some((n.trim().to_owned(), v.trim().to_owned()))
        })
        .collect();
    Ok((status, headers))
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A `POST` of a JSON body with the headers an MCP client (protocol 2025-11-25) sends.
pub fn post_json(path: &str, body: &str, session: Option<&str>) -> Vec<u8> {
    let session = session
        .map(|s| format!("mcp-session-id: {s}\r\n"))
        .unwrap_or_default();
    let mut out = format!(
        "POST {path} HTTP/1.1\r\nhost: soak\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\n\
         {session}content-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// The JSON-RPC message answering `id` in a JSON or SSE body.
pub fn jsonrpc_answer(body: &[u8], id: i64) -> Option<serde_json::Value> {
    let text = String::from_utf8_lossy(body);
    let answers =
        |v: &serde_json::Value| v.get("id").and_then(serde_json::Value::as_i64) == Some(id);
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(&text).ok().filter(answers);
    }
    // SSE: one JSON message per event; a multi-line `data:` is joined with newlines.
    let mut data = String::new();
    let mut found = None;
    for line in text.lines().chain(std::iter::once("")) {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            if !data.is_empty() {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(&data) {
                    if answers(&v) {
                        found = Some(v);
                    }
                }
                data.clear();
            }
        } else if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        }
    }
    found
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn answers_from_json_and_sse() {
        let json = br#"{"jsonrpc":"2.0","id":7,"result":{"a":1}}"#;
        assert_eq!(jsonrpc_answer(json, 7).unwrap()["result"]["a"], 1);
        assert!(jsonrpc_answer(json, 8).is_none());
        let sse = b"id: 0\ndata:\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n\n";
        assert!(jsonrpc_answer(sse, 3).is_some());
    }
}
