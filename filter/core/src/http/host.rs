//! What one HTTP stream needs from its host, in proxy-wasm's own primitives: header maps and
//! bodies read and replaced, a local reply, resuming a paused direction, properties, and
//! switching the effective context (proxy-wasm ABI 0.2.1: hostcalls act on the context whose
//! callback runs, or the one `set_effective_context` names from the root's tick).

/// What a callback tells the host to do with the stream: go on, or hold it where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Continue,
    Pause,
}

/// A header map of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Headers {
    Request,
    Response,
    /// The headers of the answer to a call the stream made (`dispatch_http_call`).
    CallResponse,
}

/// A body of the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    Request,
    Response,
    CallResponse,
}

/// A direction of the stream that a callback paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Request,
    Response,
}

/// The host's per-stream primitives. A failure is the host's reason, for the log.
pub trait HttpHost {
    /// Every header of `map`, repeated ones repeated, names lowercase, values as bytes: Envoy
    /// passes on values that are not UTF-8.
    fn headers(&self, map: Headers) -> Result<Vec<(String, Vec<u8>)>, String>;
    fn header(&self, map: Headers, name: &str) -> Option<Vec<u8>>;
    fn set_header(&self, map: Headers, name: &str, value: &str) -> Result<(), String>;
    fn remove_header(&self, map: Headers, name: &str) -> Result<(), String>;
    /// The first `size` bytes of `body` as the host holds it now.
    fn body(&self, body: Body, size: usize) -> Result<Vec<u8>, String>;
    /// Replaces the first `size` bytes of `body` with `new`.
    fn set_body(&self, body: Body, size: usize, new: &[u8]) -> Result<(), String>;
    /// Answers the client; the upstream response, if any, is never sent.
    fn send_reply(
        &self,
        status: u32,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<(), String>;
    fn resume(&self, direction: Direction) -> Result<(), String>;
    /// A property of the stream (route metadata, cluster), as bytes; `None`: not set.
    fn property(&self, path: &[&str]) -> Option<Vec<u8>>;
    /// Makes later hostcalls act on stream `context_id` (from the root's tick).
    fn set_effective_context(&self, context_id: u32) -> Result<(), String>;
    /// Sets a property of the stream: Envoy keeps it as filter state `wasm.<path>` (the
    /// `wasm.` prefix is Envoy's), which access logs read.
    fn set_property(&self, path: &[&str], value: &[u8]) -> Result<(), String>;
}

/// The answer to a call the stream or the root made: its `:status` (if any), headers and body.
/// A failed call (reset, no healthy host) arrives with no headers, and then the host has no
/// response map: asking it for one answers `BadArgument` (on which proxy-wasm's Rust SDK
/// panics), so it is not asked.
pub(crate) fn call_response(
    host: &dyn HttpHost,
    num_headers: usize,
    body_size: usize,
) -> crate::call::CallResponse {
    if num_headers == 0 {
        return (None, Vec::new(), Vec::new());
    }
    let headers: Vec<(String, String)> = host
        .headers(Headers::CallResponse)
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, String::from_utf8_lossy(&v).into_owned()))
        .collect();
    let status = headers
        .iter()
        .find(|(k, _)| k == ":status")
        .map(|(_, v)| v.clone());
    let body = host.body(Body::CallResponse, body_size).unwrap_or_default();
    (status, headers, body)
}
