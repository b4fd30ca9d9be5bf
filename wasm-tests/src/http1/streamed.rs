//! Reading a response as it arrives (an SSE stream that never ends, a body the server cuts),
//! one request per connection, and the events of an SSE body.

use super::{find, status_of, Conn, Failure, Framing, Response, POLL, READ_CHUNK};
use std::io::{ErrorKind, Read};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

impl Conn {
    /// Reads the response to the request sent (with [`Conn::send`]) as it arrives, until its
    /// body ends, the server closes or resets, `enough` says what came so far suffices, or
    /// `timeout` passes; then drops the connection (a stream cut short cannot carry another
    /// request).
    pub fn read_streaming(
        &mut self,
        timeout: Duration,
        mut enough: impl FnMut(&Streamed) -> bool,
    ) -> Streamed {
        let deadline = Instant::now() + timeout;
        let mut out = Streamed {
            raw: std::mem::take(&mut self.buf),
            ..Streamed::default()
        };
        let Some(mut stream) = self.stream.take() else {
            out.error = Some(format!("{}: not connected", self.addr));
            return out;
        };
        let mut chunk = [0u8; READ_CHUNK];
        loop {
            out.decode();
            if out.complete || (out.response.status != 0 && enough(&out)) {
                return out;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                out.error = Some(format!("no end of the response in {timeout:?}"));
                return out;
            }
            let _ = stream.set_read_timeout(Some(left.min(POLL)));
            match stream.read(&mut chunk) {
                Ok(0) => {
                    out.ended_by_close();
                    return out;
                }
                Ok(n) => out
                    .raw
                    .extend_from_slice(chunk.get(..n).unwrap_or_default()),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => {
                    out.error = Some(e.to_string());
                    return out;
                }
            }
        }
    }
}

/// A response as far as [`Conn::read_streaming`] read it; dereferences to the [`Response`]
/// (status 0 and an empty head while no whole head has come).
#[derive(Debug, Clone, Default)]
pub struct Streamed {
    pub response: Response,
    /// Every byte received, head and chunk framing included.
    pub raw: Vec<u8>,
    /// The body's framing, once the head has come.
    pub framing: Option<Framing>,
    /// The body ended as its framing says (length reached, last chunk, or the close that ends
    /// a body without framing).
    pub complete: bool,
    /// The read error that ended it (a reset), or the timeout.
    pub error: Option<String>,
}

impl std::ops::Deref for Streamed {
    type Target = Response;

    fn deref(&self) -> &Response {
        &self.response
    }
}

impl Streamed {
    /// The head (once whole) and the body so far; a chunk still arriving counts as far as it
    /// came.
    fn decode(&mut self) {
        let Some(head_end) = find(&self.raw, b"\r\n\r\n") else {
            return;
        };
        if self.framing.is_none() {
            let head = String::from_utf8_lossy(self.raw.get(..head_end).unwrap_or_default());
            self.response.status = status_of(&head).unwrap_or(0);
            // A length that is not a number leaves the close to end the body.
            self.framing =
                Some(Framing::of(self.response.status, &head).unwrap_or(Framing::UntilClose));
            self.response.head = head.into_owned();
        }
        let bytes = self.raw.get(head_end + 4..).unwrap_or_default();
        match self.framing {
            Some(Framing::Length(n)) => {
                self.response.body = bytes.get(..n).unwrap_or(bytes).to_vec();
                self.complete = bytes.len() >= n;
            }
            Some(Framing::Chunked) => {
                let (body, ended) = dechunk(bytes);
                self.response.body = body;
                self.complete = ended;
            }
            Some(Framing::UntilClose) | None => self.response.body = bytes.to_vec(),
        }
    }

    fn ended_by_close(&mut self) {
        self.decode();
        if self.framing == Some(Framing::UntilClose) {
            self.complete = true;
        }
    }
}

/// The data of the chunks in `raw` (the last one possibly partial), and whether the last chunk
/// has come. Stops at a chunk size that is not hexadecimal.
pub fn dechunk(mut raw: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    loop {
        let Some(eol) = find(raw, b"\r\n") else {
            return (out, false);
        };
        let size = std::str::from_utf8(raw.get(..eol).unwrap_or_default())
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next().unwrap_or("").trim(), 16).ok());
        let Some(size) = size else {
            return (out, false);
        };
        if size == 0 {
            return (out, true);
        }
        let data = raw.get(eol + 2..).unwrap_or_default();
        let Some(chunk) = data.get(..size) else {
            out.extend_from_slice(data);
            return (out, false);
        };
        out.extend_from_slice(chunk);
        raw = data.get(size + 2..).unwrap_or_default();
    }
}

// ---- one request per connection --------------------------------------------------------------------

/// Sends `request` (whole, byte for byte) on a new connection with `Connection: close` added
/// after the request line, and reads the response to its end; a read error or no end within
/// `timeout` is a failure. The body is de-chunked.
pub fn exchange_closing(
    addr: SocketAddr,
    request: &[u8],
    timeout: Duration,
) -> Result<Response, Failure> {
    let line_end =
        find(request, b"\r\n").ok_or_else(|| Failure::Protocol("no request line".to_owned()))?;
    let (line, rest) = request.split_at(line_end + 2);
    let mut conn = Conn::new(addr).with_connect_timeout(Duration::from_secs(2));
    conn.send(line)?;
    conn.send(b"Connection: close\r\n")?;
    conn.send(rest)?;
    let streamed = conn.read_streaming(timeout, |_| false);
    if let Some(e) = streamed.error {
        return Err(Failure::Reset(format!("{addr}: {e}")));
    }
    if streamed.framing.is_none() {
        return Err(Failure::Protocol(format!(
            "no HTTP response head from {addr}: {:?}",
            String::from_utf8_lossy(&streamed.raw)
        )));
    }
    Ok(streamed.response)
}

// ---- server-sent events ----------------------------------------------------------------------------

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// `id:`, leading spaces removed.
    pub id: Option<String>,
    /// `event:`, leading spaces removed.
    pub event: Option<String>,
    /// The `data:` lines (one leading space removed) joined with `\n`; `None` without any.
    pub data: Option<String>,
}

/// The complete events of an SSE body (LF or CRLF line ends): an event still arriving (no blank
/// line after it yet) is not one; a block of only comments is skipped.
pub fn sse_events(body: &[u8]) -> Vec<SseEvent> {
    let text = String::from_utf8_lossy(body).replace("\r\n", "\n");
    let mut blocks: Vec<&str> = text.split("\n\n").collect();
    blocks.pop();
    blocks
        .into_iter()
        .filter_map(|block| {
            let mut event = SseEvent::default();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    event.id = Some(v.trim_start().to_owned());
                } else if let Some(v) = line.strip_prefix("event:") {
                    event.event = Some(v.trim_start().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    let v = v.strip_prefix(' ').unwrap_or(v);
                    match &mut event.data {
                        Some(d) => {
                            d.push('\n');
                            d.push_str(v);
                        }
                        None => event.data = Some(v.to_owned()),
                    }
                }
            }
            (event != SseEvent::default()).then_some(event)
        })
        .collect()
}
