//! The soak's HTTP/1.1, over the shared client (`mcp_tool_search_wasm_tests::http1`): one
//! keep-alive connection per client with no retry of its own, and the MCP requests it sends.
//!
//! The bench's `Conn::round_trip` resends a request once when a kept-alive connection turns out
//! to be closed; here that would hide exactly what the soak looks for (a stream the filter reset
//! before answering), so the soak uses `Conn::exchange`: every failure is reported as it
//! happened and the connection is reopened for the next request. Response headers are kept
//! (`mcp-session-id`).

pub use mcp_tool_search_wasm_tests::http1::{
    connect, find, Conn, Failure, Request, Response, CONNECT_TIMEOUT,
};
use std::net::SocketAddr;
use std::time::Duration;

/// How long a response may take before it counts as a timeout: far above any latency the
/// filter or the upstream should show, below the length of any fault window.
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A connection to `addr` (opened by its first request) whose reads wait [`READ_TIMEOUT`].
pub fn conn(addr: SocketAddr) -> Conn {
    Conn::new(addr).with_read_timeout(READ_TIMEOUT)
}

/// A `POST` of a JSON body with the headers an MCP client (protocol 2025-11-25) sends, in
/// session `session` when given.
pub fn post_json(path: &str, body: &str, session: Option<&str>) -> Request {
    match session {
        Some(id) => Request::mcp_post("soak", path, &[("mcp-session-id", id)], body),
        None => Request::mcp_post("soak", path, &[], body),
    }
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
