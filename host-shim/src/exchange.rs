//! One request/response exchange driven end to end, the way a client, Envoy and an upstream
//! would play it: the request goes through the filter; if it reaches the upstream whole, the
//! upstream's response goes through the filter; the stream then ends.

use crate::error::ShimError;
use crate::pairs::{self, Headers};
use crate::stream_state::{LocalReply, Peer, StreamView};
use crate::vm::Vm;

/// A request or a response as one side sends it: headers (pseudo-headers included), the body
/// in the pieces it arrives in, optional trailers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpMessage {
    pub headers: Headers,
    pub chunks: Vec<Vec<u8>>,
    pub trailers: Option<Headers>,
    /// End the body with an empty data frame carrying end_of_stream (as HTTP/1.1 chunked
    /// transfer does), instead of marking the last chunk.
    pub empty_final_chunk: bool,
}

impl HttpMessage {
    /// A request line, with the `:authority` and `:scheme` Envoy always has.
    pub fn request(method: &str, path: &str) -> Self {
        HttpMessage {
            headers: vec![
                (":method".into(), method.into()),
                (":path".into(), path.into()),
                (":authority".into(), "mcp.test".into()),
                (":scheme".into(), "http".into()),
            ],
            ..HttpMessage::default()
        }
    }

    /// A POST as MCP clients send it (JSON body, accepting JSON and SSE).
    pub fn post(path: &str) -> Self {
        HttpMessage::request("POST", path)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
    }

    pub fn get(path: &str) -> Self {
        HttpMessage::request("GET", path)
    }

    /// A response status line.
    pub fn response(status: u32) -> Self {
        HttpMessage {
            headers: vec![(":status".into(), status.to_string())],
            ..HttpMessage::default()
        }
    }

    /// Appends a header (names are lower-cased, as Envoy's codecs do).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        pairs::add(&mut self.headers, name, value);
        self
    }

    /// Replaces a header's value (or adds it).
    pub fn set_header(mut self, name: &str, value: &str) -> Self {
        pairs::replace(&mut self.headers, name, value);
        self
    }

    pub fn without_header(mut self, name: &str) -> Self {
        pairs::remove(&mut self.headers, name);
        self
    }

    /// The body in one piece (none if empty).
    pub fn body(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        let bytes = bytes.into();
        self.chunks = if bytes.is_empty() {
            Vec::new()
        } else {
            vec![bytes]
        };
        self
    }

    /// The body in these pieces (empty pieces are kept: Envoy can deliver empty data frames).
    pub fn chunks<I, B>(mut self, chunks: I) -> Self
    where
        I: IntoIterator<Item = B>,
        B: AsRef<[u8]>,
    {
        self.chunks = chunks.into_iter().map(|c| c.as_ref().to_vec()).collect();
        self
    }

    /// Re-splits the body into pieces of at most `size` bytes.
    pub fn chunked(mut self, size: usize) -> Self {
        let body = self.body_bytes();
        self.chunks = body.chunks(size.max(1)).map(<[u8]>::to_vec).collect();
        self
    }

    /// Re-splits the body in two at `at` (both pieces kept, even empty).
    pub fn split_at(mut self, at: usize) -> Self {
        let body = self.body_bytes();
        let at = at.min(body.len());
        let (a, b) = body.split_at(at);
        self.chunks = vec![a.to_vec(), b.to_vec()];
        self
    }

    pub fn trailers(mut self, trailers: Headers) -> Self {
        self.trailers = Some(trailers);
        self
    }

    pub fn empty_final_chunk(mut self, on: bool) -> Self {
        self.empty_final_chunk = on;
        self
    }

    pub fn body_bytes(&self) -> Vec<u8> {
        self.chunks.concat()
    }

    pub fn header_value(&self, name: &str) -> Option<&str> {
        pairs::get(&self.headers, name)
    }
}

/// What the client got, in the terms of the native scenario tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Answered by the filter; the upstream never got the whole request. `headers` are the
    /// ones the filter set (Envoy adds `:status`, `content-length`, ...: see
    /// [`Exchange::client`]).
    Local {
        status: u32,
        headers: Headers,
        body: Vec<u8>,
    },
    /// The upstream's response as the client received it.
    Upstream { body: Vec<u8>, rewritten: bool },
    /// The filter held the request or the response and never let it go (Envoy would wait until
    /// a timeout).
    Stuck(String),
    /// The stream was reset (a local reply after response headers, a close, an overflow).
    Reset,
}

impl Outcome {
    pub fn body(&self) -> &[u8] {
        match self {
            Outcome::Local { body, .. } | Outcome::Upstream { body, .. } => body,
            Outcome::Stuck(_) | Outcome::Reset => &[],
        }
    }
}

/// Everything about one exchange.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub stream: u32,
    /// The request as the upstream received it (`reset` if a local reply cancelled it).
    pub upstream: Peer,
    /// The response as the client received it.
    pub client: Peer,
    pub local_reply: Option<LocalReply>,
    /// The response the upstream sent (when it got the whole request).
    pub upstream_response: Option<HttpMessage>,
    pub stuck: Option<String>,
    pub events: Vec<String>,
}

impl Exchange {
    pub fn outcome(&self) -> Outcome {
        if let Some(reply) = &self.local_reply {
            if !self.client.reset {
                return Outcome::Local {
                    status: reply.status,
                    headers: reply.headers.clone(),
                    body: self.client.body(),
                };
            }
        }
        if let Some(why) = &self.stuck {
            return Outcome::Stuck(why.clone());
        }
        if self.client.reset {
            return Outcome::Reset;
        }
        let body = self.client.body();
        let rewritten = match &self.upstream_response {
            Some(r) => r.body_bytes() != body,
            None => false,
        };
        Outcome::Upstream { body, rewritten }
    }

    fn from_view(view: StreamView, response: Option<HttpMessage>) -> Self {
        Exchange {
            stream: view.id,
            upstream: view.upstream,
            client: view.client,
            local_reply: view.local_reply,
            upstream_response: response,
            stuck: view.stuck,
            events: view.events,
        }
    }
}

impl Vm {
    /// Sends one message's headers, body pieces and trailers in `dir`.
    fn send_message(&mut self, id: u32, msg: &HttpMessage, request: bool) -> Result<(), ShimError> {
        let ends_on_headers =
            msg.chunks.is_empty() && msg.trailers.is_none() && !msg.empty_final_chunk;
        if request {
            self.send_request_headers(id, msg.headers.clone(), ends_on_headers)?;
        } else {
            self.send_response_headers(id, msg.headers.clone(), ends_on_headers)?;
        }
        let n = msg.chunks.len();
        for (i, chunk) in msg.chunks.iter().enumerate() {
            let end = i + 1 == n && msg.trailers.is_none() && !msg.empty_final_chunk;
            if request {
                self.send_request_body(id, chunk, end)?;
            } else {
                self.send_response_body(id, chunk, end)?;
            }
        }
        if msg.empty_final_chunk && msg.trailers.is_none() {
            if request {
                self.send_request_body(id, &[], true)?;
            } else {
                self.send_response_body(id, &[], true)?;
            }
        }
        if let Some(t) = &msg.trailers {
            if request {
                self.send_request_trailers(id, t.clone())?;
            } else {
                self.send_response_trailers(id, t.clone())?;
            }
        }
        Ok(())
    }

    /// Runs one exchange on a new stream: the request through the filter; the upstream's
    /// `response` if the request reached it whole; then the end of the stream.
    pub fn exchange(
        &mut self,
        request: &HttpMessage,
        response: &HttpMessage,
    ) -> Result<Exchange, ShimError> {
        let id = self.new_stream()?;
        self.exchange_on(id, request, response)
    }

    /// [`Vm::exchange`] on a stream made with [`Vm::new_stream`] (to set its properties first).
    pub fn exchange_on(
        &mut self,
        id: u32,
        request: &HttpMessage,
        response: &HttpMessage,
    ) -> Result<Exchange, ShimError> {
        let mut request = request.clone();
        // Envoy's connection manager adds these before any filter runs.
        if request.header_value("x-forwarded-proto").is_none() {
            request = request.header("x-forwarded-proto", "http");
        }
        if request.header_value("x-request-id").is_none() {
            let rid = format!("00000000-0000-4000-8000-{:012x}", u64::from(id));
            request = request.header("x-request-id", &rid);
        }
        self.send_message(id, &request, true)?;
        let view = self.stream_view(id)?;
        let mut sent = None;
        if !view.ended && view.upstream.end_of_stream && !view.upstream.reset {
            self.send_message(id, response, false)?;
            sent = Some(response.clone());
        }
        let view = self.stream_view(id)?;
        self.finish_stream(id)?;
        self.deliver_queue_ready()?;
        Ok(Exchange::from_view(view, sent))
    }
}
