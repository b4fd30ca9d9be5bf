//! JSON-RPC 2.0 messages as MCP sends them over Streamable HTTP (spec 2025-11-25, "Base
//! Protocol"): single messages or, from clients of protocol 2025-03-26, batches. Ids may be
//! numbers or strings and are echoed byte for byte.

use crate::json;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::fmt;

/// One JSON-RPC message, with only what the filter decides on read out.
#[derive(Debug)]
pub struct Message {
    /// The id exactly as sent (`None` for notifications).
    pub id: Option<Box<RawValue>>,
    pub method: Option<String>,
    pub params: Option<Box<RawValue>>,
    pub has_result: bool,
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<Box<RawValue>>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Box<RawValue>>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
}

#[derive(Debug)]
pub enum Incoming {
    Single(Message),
    Batch(Vec<Message>),
}

impl Incoming {
    pub fn messages(&self) -> &[Message] {
        match self {
            Incoming::Single(m) => std::slice::from_ref(m),
            Incoming::Batch(ms) => ms,
        }
    }

    pub fn is_batch(&self) -> bool {
        matches!(self, Incoming::Batch(_))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonRpcError {
    NotJson(String),
    NotAMessage,
    EmptyBatch,
}

impl fmt::Display for JsonRpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonRpcError::NotJson(e) => write!(f, "body is not JSON: {e}"),
            JsonRpcError::NotAMessage => write!(f, "body is not a JSON-RPC object or batch"),
            JsonRpcError::EmptyBatch => write!(f, "empty JSON-RPC batch"),
        }
    }
}

impl std::error::Error for JsonRpcError {}

fn message(raw: &RawValue) -> Result<Message, JsonRpcError> {
    if !raw.get().trim_start().starts_with('{') {
        return Err(JsonRpcError::NotAMessage);
    }
    let env: Envelope =
        serde_json::from_str(raw.get()).map_err(|e| JsonRpcError::NotJson(e.to_string()))?;
    Ok(Message {
        // `"id": null` is not a request id a reply could be matched on.
        id: env.id.filter(|id| id.get() != "null"),
        method: env.method,
        params: env.params,
        has_result: env.result.is_some(),
    })
}

/// Parses a request or response body.
pub fn parse(body: &[u8]) -> Result<Incoming, JsonRpcError> {
    let text = std::str::from_utf8(body).map_err(|e| JsonRpcError::NotJson(e.to_string()))?;
    let raw: &RawValue =
        serde_json::from_str(text).map_err(|e| JsonRpcError::NotJson(e.to_string()))?;
    if raw.get().trim_start().starts_with('[') {
        let items: Vec<&RawValue> =
            serde_json::from_str(raw.get()).map_err(|e| JsonRpcError::NotJson(e.to_string()))?;
        if items.is_empty() {
            return Err(JsonRpcError::EmptyBatch);
        }
        let messages = items.into_iter().map(message).collect::<Result<_, _>>()?;
        Ok(Incoming::Batch(messages))
    } else {
        Ok(Incoming::Single(message(raw)?))
    }
}

/// The two requests whose handling the filter changes.
#[derive(Debug)]
pub enum Kind<'a> {
    /// `tools/list`; `first_page` when the request carries no cursor.
    ToolsList {
        first_page: bool,
    },
    /// `tools/call` of `name` with its `arguments` (raw, if any).
    ToolsCall {
        name: String,
        arguments: Option<&'a RawValue>,
    },
    Other,
}

#[derive(Deserialize)]
struct CallParams<'a> {
    name: String,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ListParams {
    #[serde(default)]
    cursor: Option<Value>,
}

impl Message {
    pub fn is_request(&self) -> bool {
        self.id.is_some() && self.method.is_some()
    }

    pub fn kind(&self) -> Kind<'_> {
        if !self.is_request() {
            return Kind::Other;
        }
        let params = self.params.as_deref().map(RawValue::get).unwrap_or("{}");
        match self.method.as_deref() {
            Some("tools/list") => {
                let first_page = serde_json::from_str::<ListParams>(params)
                    .map(|p| p.cursor.is_none_or(|c| c.is_null()))
                    .unwrap_or(true);
                Kind::ToolsList { first_page }
            }
            Some("tools/call") => match self.params.as_deref() {
                Some(raw) => match serde_json::from_str::<CallParams>(raw.get()) {
                    Ok(p) => Kind::ToolsCall {
                        name: p.name,
                        arguments: p.arguments,
                    },
                    Err(_) => Kind::Other,
                },
                None => Kind::Other,
            },
            _ => Kind::Other,
        }
    }

    /// The id as a value, for matching a response to its request (servers may re-serialize).
    pub fn id_value(&self) -> Option<Value> {
        self.id
            .as_deref()
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
    }
}

/// `{"jsonrpc":"2.0","id":<id>,"result":<result>}` with the id's original bytes.
pub fn result_response(id: &RawValue, result: &str) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{result}}}",
        id.get()
    )
}

/// A JSON-RPC error response (`code` per JSON-RPC 2.0 §5.1).
pub fn error_response(id: Option<&RawValue>, code: i64, message: &str) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{},\"error\":{{\"code\":{code},\"message\":{}}}}}",
        id.map(RawValue::get).unwrap_or("null"),
        json::string(message)
    )
}

pub const INVALID_PARAMS: i64 = -32602;
pub const INVALID_REQUEST: i64 = -32600;
pub const INTERNAL_ERROR: i64 = -32603;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_requests() {
        let m = parse(br#"{"jsonrpc":"2.0","id":"a-1","method":"tools/list","params":{"_meta":{"progressToken":1}}}"#).unwrap();
        let msg = &m.messages()[0];
        assert!(matches!(msg.kind(), Kind::ToolsList { first_page: true }));
        assert_eq!(msg.id.as_ref().unwrap().get(), "\"a-1\"");
        let m =
            parse(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"abc"}}"#)
                .unwrap();
        assert!(matches!(
            m.messages()[0].kind(),
            Kind::ToolsList { first_page: false }
        ));
        let m = parse(br#"{"jsonrpc":"2.0","id":1e0,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"x"},"_meta":{}}}"#).unwrap();
        match m.messages()[0].kind() {
            Kind::ToolsCall { name, arguments } => {
                assert_eq!(name, "tool_search");
                assert_eq!(arguments.unwrap().get(), r#"{"query":"x"}"#);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(m.messages()[0].id.as_ref().unwrap().get(), "1e0");
        let n = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(n.messages()[0].kind(), Kind::Other));
        assert!(!n.messages()[0].is_request());
    }

    #[test]
    fn batches_and_errors() {
        let b = parse(
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"x"}]"#,
        )
        .unwrap();
        assert!(b.is_batch());
        assert_eq!(b.messages().len(), 2);
        assert_eq!(parse(b"[]").unwrap_err(), JsonRpcError::EmptyBatch);
        assert!(matches!(parse(b"{"), Err(JsonRpcError::NotJson(_))));
        assert_eq!(parse(b"[1]").unwrap_err(), JsonRpcError::NotAMessage);
        assert_eq!(parse(b"\"x\"").unwrap_err(), JsonRpcError::NotAMessage);
        assert!(matches!(
            parse(&[0xff, 0xfe]),
            Err(JsonRpcError::NotJson(_))
        ));
    }

    #[test]
    fn responses_echo_ids() {
        let id: Box<RawValue> = serde_json::from_str("\"x\\u0041\"").unwrap();
        assert_eq!(
            result_response(&id, "{}"),
            r#"{"jsonrpc":"2.0","id":"x\u0041","result":{}}"#
        );
        assert_eq!(
            error_response(None, INVALID_REQUEST, "bad \"x\""),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad \"x\""}}"#
        );
    }
}
