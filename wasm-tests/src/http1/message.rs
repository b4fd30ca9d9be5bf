//! The bytes of a request, and a response read whole: its head, its framing, its body.

/// One request: the exact bytes on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub bytes: Vec<u8>,
}

impl Request {
    /// `METHOD target HTTP/1.1`, then the headers given to the builder, in that order.
    pub fn builder(method: &str, target: &str) -> RequestBuilder {
        let mut bytes = Vec::with_capacity(256);
        bytes.extend_from_slice(method.as_bytes());
        bytes.push(b' ');
        bytes.extend_from_slice(target.as_bytes());
        bytes.extend_from_slice(b" HTTP/1.1\r\n");
        RequestBuilder { bytes }
    }

    /// Bytes sent exactly as given (a malformed request included).
    pub fn raw(bytes: impl Into<Vec<u8>>) -> Request {
        Request {
            bytes: bytes.into(),
        }
    }

    /// `POST path` with a JSON body and the headers an MCP client (protocol 2025-11-25) sends,
    /// `extra` headers (e.g. `mcp-session-id`) just before `content-length`.
    pub fn mcp_post(authority: &str, path: &str, extra: &[(&str, &str)], body: &str) -> Request {
        Request::builder("POST", path)
            .header("host", authority)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .headers(extra)
            .body(body.as_bytes())
    }

    /// [`Request::mcp_post`] without extra headers.
    pub fn post_json(authority: &str, path: &str, body: &str) -> Request {
        Request::mcp_post(authority, path, &[], body)
    }

    /// `POST path` with any body (not an MCP request).
    pub fn post(authority: &str, path: &str, content_type: &str, body: &[u8]) -> Request {
        Request::builder("POST", path)
            .header("host", authority)
            .header("content-type", content_type)
            .body(body)
    }

    /// `GET path`, no body.
    pub fn get(authority: &str, path: &str) -> Request {
        Request::builder("GET", path)
            .header("host", authority)
            .finish()
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// A request head being written (see [`Request::builder`]).
#[derive(Debug, Clone)]
pub struct RequestBuilder {
    bytes: Vec<u8>,
}

impl RequestBuilder {
    /// One header line `name: value`, written as given.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.bytes.extend_from_slice(name.as_bytes());
        self.bytes.extend_from_slice(b": ");
        self.bytes.extend_from_slice(value.as_bytes());
        self.bytes.extend_from_slice(b"\r\n");
        self
    }

    /// Header lines, in order.
    pub fn headers(self, headers: &[(&str, &str)]) -> Self {
        headers
            .iter()
            .fold(self, |b, (name, value)| b.header(name, value))
    }

    /// `content-length` of `body` as the last header, then the body.
    pub fn body(self, body: &[u8]) -> Request {
        self.header("content-length", &body.len().to_string())
            .raw_body(body)
    }

    /// The end of the head, then `body` byte for byte: its framing (if any) is the caller's.
    pub fn raw_body(mut self, body: &[u8]) -> Request {
        self.bytes.extend_from_slice(b"\r\n");
        self.bytes.extend_from_slice(body);
        Request { bytes: self.bytes }
    }

    /// The end of the head, no body.
    pub fn finish(self) -> Request {
        self.raw_body(&[])
    }
}

/// A response read whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// The status line and the header lines as received (without the blank line).
    pub head: String,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Response {
    /// The headers in the order received: names as sent, values trimmed.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &str)> {
        header_lines(&self.head)
    }

    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// Every value of header `name` (any case), in order.
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
            .collect()
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Result<serde_json::Value> {
        serde_json::from_slice(&self.body)
    }

    /// `connection: close`: the server ends the connection after this response.
    pub fn closes(&self) -> bool {
        self.header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"))
    }
}

fn header_lines(head: &str) -> impl Iterator<Item = (&str, &str)> {
    head.split("\r\n").skip(1).filter_map(|line| {
        let (name, value) = line.split_once(':')?;
        Some((name.trim(), value.trim()))
    })
}

/// How a response body ends (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `content-length` bytes (0 for 1xx, 204 and 304, whatever their headers say).
    Length(usize),
    /// `transfer-encoding: chunked`, up to the last chunk.
    Chunked,
    /// Neither: the body ends when the server closes the connection.
    UntilClose,
}

impl Framing {
    /// The framing `head` declares; a `content-length` that is not a number is an error.
    pub fn of(status: u16, head: &str) -> Result<Framing, String> {
        if status / 100 == 1 || status == 204 || status == 304 {
            return Ok(Framing::Length(0));
        }
        let mut length = None;
        for (name, value) in header_lines(head) {
            if name.eq_ignore_ascii_case("transfer-encoding")
                && value.eq_ignore_ascii_case("chunked")
            {
                return Ok(Framing::Chunked);
            }
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(
                    value
                        .parse()
                        .map_err(|e| format!("content-length {value:?}: {e}"))?,
                );
            }
        }
        Ok(length.map_or(Framing::UntilClose, Framing::Length))
    }
}

/// The status code of a status line (`HTTP/1.1 200 OK`).
pub(super) fn status_of(head: &str) -> Option<u16> {
    head.split_whitespace().nth(1)?.parse().ok()
}

/// The position of `needle` in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
