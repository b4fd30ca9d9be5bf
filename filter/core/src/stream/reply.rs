//! Local replies: JSON-RPC over JSON or SSE (whichever the client accepts), and the plain
//! JSON errors of the HTTP endpoint.

use super::*;

impl Stream {
    /// A 200 carrying JSON-RPC: JSON unless the client accepts only SSE (Streamable HTTP lets
    /// the server choose either; spec 2025-11-25 "Sending Messages to the Server").
    pub(super) fn reply(&self, body: String) -> LocalReply {
        let accept = self.head.accept.as_deref().unwrap_or("");
        let sse_only = accept.contains("text/event-stream")
            && !accept.contains("application/json")
            && !accept.contains("*/*");
        let (content_type, body) = if sse_only {
            (
                "text/event-stream",
                format!("event: message\ndata: {body}\n\n"),
            )
        } else {
            ("application/json", body)
        };
        let mut headers = vec![("content-type".to_string(), content_type.to_string())];
        if let Some(session) = &self.head.session_id {
            headers.push(("mcp-session-id".to_string(), session.clone()));
        }
        LocalReply {
            status: 200,
            headers,
            body: body.into_bytes(),
        }
    }
}

pub(super) fn error_json(message: &str) -> String {
    crate::mcp::result::http_error(message)
}

pub(super) fn bad_request(problem: &str) -> LocalReply {
    LocalReply::json(400, error_json(problem))
}

pub(super) fn method_not_allowed(allow: &str) -> LocalReply {
    let mut reply = LocalReply::json(405, error_json(&format!("method not allowed; use {allow}")));
    reply.headers.push(("allow".to_string(), allow.to_string()));
    reply
}
