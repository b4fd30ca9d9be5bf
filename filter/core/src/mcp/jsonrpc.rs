//! JSON-RPC 2.0 messages as MCP sends them over Streamable HTTP (spec 2025-11-25, "Base
//! Protocol"): single messages or, from clients of protocol 2025-03-26, batches. Ids may be
//! numbers or strings and are echoed byte for byte.

use crate::config::entries::Entry;
use crate::mcp::json;
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
    /// The message has `"id": null`: a notification to some readers, a request to others.
    pub null_id: bool,
    /// What the message asks, read from `params` once, when the message is read: a request
    /// that waits (for a catalog fetch, for its query's embedding) is not read again.
    kind: Kind,
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default, deserialize_with = "present")]
    id: Option<Box<RawValue>>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Box<RawValue>>,
}

/// A member that is there, `null` included (serde reads a `null` `Option` as absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
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
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonRpcError {
    NotJson(String),
    /// Not plain UTF-8 JSON text: a byte-order mark, UTF-16 or UTF-32, invalid UTF-8. Lenient
    /// readers (Python's `json.loads` on bytes) accept some of these, so they cannot be
    /// passed on unread where a policy decides.
    Encoding(&'static str),
    NotAMessage,
    EmptyBatch,
}

impl fmt::Display for JsonRpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonRpcError::NotJson(e) => write!(f, "body is not JSON: {e}"),
            JsonRpcError::Encoding(what) => write!(f, "body is not plain UTF-8 JSON: {what}"),
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
    let null_id = env.id.as_ref().is_some_and(|id| id.get().trim() == "null");
    let mut message = Message {
        // `"id": null` is not a request id a reply could be matched on.
        id: env.id.filter(|_| !null_id),
        method: env.method,
        params: env.params,
        null_id,
        kind: Kind::Other,
    };
    message.kind = message.read_kind();
    Ok(message)
}

/// RFC 8259 §8.1: JSON exchanged between systems is UTF-8 without a byte-order mark. Anything
/// else is named here so that it is never mistaken for "not JSON, let the server decide".
fn encoding_problem(body: &[u8]) -> Option<&'static str> {
    if body.starts_with(&[0xef, 0xbb, 0xbf]) {
        return Some("a UTF-8 byte-order mark");
    }
    if body.starts_with(&[0xfe, 0xff]) || body.starts_with(&[0xff, 0xfe]) {
        return Some("a UTF-16 or UTF-32 byte-order mark");
    }
    if body.starts_with(&[0, 0, 0xfe, 0xff]) {
        return Some("a UTF-32 byte-order mark");
    }
    // JSON text starts with ASCII: a NUL among the first four bytes is UTF-16 or UTF-32
    // (RFC 4627 §3's detection, which Python's reader still applies).
    if body.iter().take(4).any(|&b| b == 0) {
        return Some("UTF-16 or UTF-32 text");
    }
    None
}

/// Parses a request or response body. Keys the filter reads (`id`, `method`, `params`) may
/// appear once: readers disagree on which of two wins.
pub fn parse(body: &[u8]) -> Result<Incoming, JsonRpcError> {
    if let Some(problem) = encoding_problem(body) {
        return Err(JsonRpcError::Encoding(problem));
    }
    let text = std::str::from_utf8(body).map_err(|_| JsonRpcError::Encoding("invalid UTF-8"))?;
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

/// What the filter does with a message depends on its kind.
#[derive(Debug)]
pub enum Kind {
    /// A `tools/list` request; `first_page` when it carries no cursor; `query` as
    /// [`Message::list_query`] reads it.
    ToolsList {
        first_page: bool,
        query: Option<Result<ListQuery, String>>,
    },
    /// `tools/call` of `name` with its `arguments` (raw, if any): a request, or a notification
    /// (which a lenient server may still execute, so it is authorized all the same).
    ToolsCall {
        name: String,
        arguments: Option<Box<RawValue>>,
    },
    /// A `tools/call` whose tool cannot be read in exactly one way (no `params`, `params.name`
    /// missing or not a string, a key given twice): why.
    UnreadableCall(String),
    /// A list of prompts, resources or resource templates; `first_page` when it carries no
    /// cursor.
    EntriesList {
        entry: Entry,
        first_page: bool,
    },
    /// A request that uses one prompt or resource: `prompts/get` (by name), `resources/read`,
    /// `resources/subscribe` and `resources/unsubscribe` (by URI), `completion/complete` (by
    /// its `ref`). `key` is what authorization rules match (`Entry::key_field`).
    Use {
        entry: Entry,
        key: String,
    },
    /// Such a request whose entry cannot be read in exactly one way: the method and why.
    UnreadableUse(String),
    Other,
}

/// `completion/complete`'s `params.ref` (spec 2025-11-25 "Completion"): a prompt by name or a
/// resource template by URI.
#[derive(Deserialize)]
struct CompleteParams {
    #[serde(rename = "ref")]
    reference: CompleteRef,
}

#[derive(Deserialize)]
struct CompleteRef {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uri: Option<String>,
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

/// `tools/list` with `params.query` (draft proposal SEP-1821, "Dynamic Tool Discovery"): the
/// tools that match, ranked, paged by the list's own `cursor`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    pub text: String,
    pub cursor: Option<String>,
}

#[derive(Deserialize)]
struct QueryParams {
    #[serde(default)]
    query: Option<Value>,
    #[serde(default)]
    cursor: Option<Value>,
}

/// What Streamable HTTP 2026-07-28 ("Standard Request Headers") mirrors into `Mcp-Name`:
/// `params.name` (tools, prompts) or `params.uri` (resources).
#[derive(Deserialize)]
struct NamedParams {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uri: Option<String>,
}

/// `params._meta` as far as the protocol version goes (Streamable HTTP 2026-07-28, "Protocol
/// Version Header": the header must match this field).
#[derive(Deserialize)]
struct MetaParams {
    #[serde(default, rename = "_meta")]
    meta: Option<VersionMeta>,
}

#[derive(Deserialize)]
struct VersionMeta {
    #[serde(default, rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<String>,
}

impl Message {
    pub fn is_request(&self) -> bool {
        self.id.is_some() && self.method.is_some()
    }

    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    fn read_kind(&self) -> Kind {
        match self.method.as_deref() {
            Some("tools/list") if self.is_request() => Kind::ToolsList {
                first_page: self.first_page(),
                query: self.list_query(),
            },
            Some(method @ ("prompts/list" | "resources/list" | "resources/templates/list"))
                if self.is_request() =>
            {
                Entry::of_list_method(method).map_or(Kind::Other, |entry| Kind::EntriesList {
                    entry,
                    first_page: self.first_page(),
                })
            }
            Some(
                method @ ("prompts/get"
                | "resources/read"
                | "resources/subscribe"
                | "resources/unsubscribe"
                | "completion/complete"),
            ) => match self.used_entry(method) {
                Ok((entry, key)) => Kind::Use { entry, key },
                Err(why) => Kind::UnreadableUse(format!("{method} {why}")),
            },
            Some("tools/call") => match self.params.as_deref() {
                Some(raw) => match serde_json::from_str::<CallParams>(raw.get()) {
                    Ok(p) => Kind::ToolsCall {
                        name: p.name,
                        arguments: p.arguments.map(ToOwned::to_owned),
                    },
                    Err(e) => Kind::UnreadableCall(format!("params: {e}")),
                },
                None => Kind::UnreadableCall("no params".to_string()),
            },
            _ => Kind::Other,
        }
    }

    /// Whether a list request asks for the first page (no cursor).
    fn first_page(&self) -> bool {
        let params = self.params.as_deref().map(RawValue::get).unwrap_or("{}");
        serde_json::from_str::<ListParams>(params)
            .map(|p| p.cursor.is_none_or(|c| c.is_null()))
            .unwrap_or(true)
    }

    /// The prompt or resource a request of `method` uses, read in exactly one way; else why
    /// not.
    fn used_entry(&self, method: &str) -> Result<(Entry, String), String> {
        let raw = self.params.as_deref().ok_or("no params")?;
        if method == "completion/complete" {
            let CompleteParams { reference } =
                serde_json::from_str(raw.get()).map_err(|e| format!("params: {e}"))?;
            return match (reference.kind.as_str(), reference.name, reference.uri) {
                ("ref/prompt", Some(name), _) => Ok((Entry::Prompt, name)),
                ("ref/resource", _, Some(uri)) => Ok((Entry::ResourceTemplate, uri)),
                (kind, _, _) => Err(format!(
                    "params.ref of type {kind:?} without its name or uri"
                )),
            };
        }
        let params: NamedParams =
            serde_json::from_str(raw.get()).map_err(|e| format!("params: {e}"))?;
        let (entry, key, field) = match method {
            "prompts/get" => (Entry::Prompt, params.name, "name"),
            _ => (Entry::Resource, params.uri, "uri"),
        };
        key.map(|key| (entry, key))
            .ok_or_else(|| format!("params: missing field `{field}`"))
    }

    /// A `tools/list` request's query: `None` for other messages and lists without one, `Err`
    /// (a message for the client) when `query` or `cursor` is not a string.
    fn list_query(&self) -> Option<Result<ListQuery, String>> {
        if self.method.as_deref() != Some("tools/list") || !self.is_request() {
            return None;
        }
        let raw = self.params.as_deref()?;
        let params: QueryParams = match serde_json::from_str(raw.get()) {
            Ok(p) => p,
            // Only a list that names a query is ours; any other reaches the server as sent.
            Err(_) if !raw.get().contains("\"query\"") => return None,
            Err(e) => return Some(Err(format!("params: {e}"))),
        };
        let text = match params.query? {
            Value::Null => return None,
            Value::String(s) => s,
            other => return Some(Err(format!("params.query must be a string, not {other}"))),
        };
        let cursor = match params.cursor {
            None | Some(Value::Null) => None,
            Some(Value::String(c)) => Some(c),
            Some(other) => {
                return Some(Err(format!("params.cursor must be a string, not {other}")))
            }
        };
        Some(Ok(ListQuery { text, cursor }))
    }

    /// The body value `Mcp-Name` mirrors: `Ok(None)` for other methods or when absent, `Err`
    /// when `params` cannot be read in exactly one way.
    pub fn mirrored_name(&self) -> Result<Option<String>, String> {
        let field_is_uri = match self.method.as_deref() {
            Some("tools/call" | "prompts/get") => false,
            Some("resources/read") => true,
            _ => return Ok(None),
        };
        let Some(raw) = self.params.as_deref() else {
            return Ok(None);
        };
        let params: NamedParams =
            serde_json::from_str(raw.get()).map_err(|e| format!("params: {e}"))?;
        Ok(if field_is_uri {
            params.uri
        } else {
            params.name
        })
    }

    /// `params._meta["io.modelcontextprotocol/protocolVersion"]`, if the request carries it.
    pub fn protocol_version(&self) -> Result<Option<String>, String> {
        let Some(raw) = self.params.as_deref() else {
            return Ok(None);
        };
        if !raw.get().trim_start().starts_with('{') {
            return Ok(None);
        }
        let params: MetaParams =
            serde_json::from_str(raw.get()).map_err(|e| format!("params._meta: {e}"))?;
        Ok(params.meta.and_then(|m| m.protocol_version))
    }

    /// The key that matches the message's answer to it (`None` for a notification).
    pub fn id_key(&self) -> Option<Result<IdKey, String>> {
        if self.null_id {
            return Some(Err("the request id is null".to_string()));
        }
        self.id.as_deref().map(IdKey::of)
    }
}

/// The largest integer every JSON reader holds exactly: JavaScript's `JSON.parse` reads numbers
/// as IEEE 754 doubles, so the TypeScript SDK sees 2^53 and 2^53 + 1 as one id.
const MAX_EXACT_ID: u64 = (1 << 53) - 1;

/// A request id as the SDKs key the answers they route: the Python SDK by `str(id)` (so `1`
/// and `"1"` are one key), the TypeScript SDK by the number a double holds (so `1.0`, `1e0`
/// and `1` are one key). Ids that any of them would read as the same request have one key
/// here, so that no two requests the filter tells apart can trade answers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdKey(String);

impl IdKey {
    pub fn into_string(self) -> String {
        self.0
    }

    /// The key of a JSON-RPC id (spec 2025-11-25 "Base Protocol": a string or an integer), or
    /// why it has none: an id every reader cannot hold as the same value (a number past
    /// 2^53 - 1 or with a fraction, a string with a lone surrogate escape, null, another type).
    pub fn of(raw: &RawValue) -> Result<IdKey, String> {
        let text = raw.get().trim();
        let shown = || {
            let mut shown: String = text.chars().take(24).collect();
            if shown.len() < text.len() {
                shown.push('…');
            }
            shown
        };
        if text.starts_with('"') {
            return serde_json::from_str::<String>(text)
                .map(IdKey)
                .map_err(|e| {
                    format!(
                        "the request id {} cannot be read as a string ({e})",
                        shown()
                    )
                });
        }
        let inexact = || {
            format!(
                "the request id {} is not an integer that every reader holds exactly (|id| <= 2^53 - 1)",
                shown()
            )
        };
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Number(n)) => {
                if let Some(i) = n.as_i64() {
                    return (i.unsigned_abs() <= MAX_EXACT_ID)
                        .then(|| IdKey(i.to_string()))
                        .ok_or_else(inexact);
                }
                match n.as_f64() {
                    Some(f)
                        if n.as_u64().is_none()
                            && f.fract() == 0.0
                            && f.abs() <= MAX_EXACT_ID as f64 =>
                    {
                        Ok(IdKey(format!("{}", f as i64)))
                    }
                    _ => Err(inexact()),
                }
            }
            Ok(Value::Null) => Err("the request id is null".to_string()),
            Ok(_) => Err(format!(
                "the request id {} is neither a string nor a number",
                shown()
            )),
            Err(_) => Err(inexact()),
        }
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
        assert!(matches!(
            msg.kind(),
            Kind::ToolsList {
                first_page: true,
                ..
            }
        ));
        assert_eq!(msg.id.as_ref().unwrap().get(), "\"a-1\"");
        let m =
            parse(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"abc"}}"#)
                .unwrap();
        assert!(matches!(
            m.messages()[0].kind(),
            Kind::ToolsList {
                first_page: false,
                ..
            }
        ));
        let m = parse(br#"{"jsonrpc":"2.0","id":1e0,"method":"tools/call","params":{"name":"tool_search","arguments":{"query":"x"},"_meta":{}}}"#).unwrap();
        match m.messages()[0].kind() {
            Kind::ToolsCall { name, arguments } => {
                assert_eq!(name, "tool_search");
                assert_eq!(arguments.as_deref().unwrap().get(), r#"{"query":"x"}"#);
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
        assert!(matches!(b, Incoming::Batch(_)));
        assert_eq!(b.messages().len(), 2);
        assert_eq!(parse(b"[]").unwrap_err(), JsonRpcError::EmptyBatch);
        assert!(matches!(parse(b"{"), Err(JsonRpcError::NotJson(_))));
        assert_eq!(parse(b"[1]").unwrap_err(), JsonRpcError::NotAMessage);
        assert_eq!(parse(b"\"x\"").unwrap_err(), JsonRpcError::NotAMessage);
        assert!(matches!(
            parse(&[0xff, 0xfe]),
            Err(JsonRpcError::Encoding(_))
        ));
    }

    #[test]
    fn bodies_readable_more_than_one_way_are_errors() {
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}"#;
        let encoding = |body: &[u8]| matches!(parse(body), Err(JsonRpcError::Encoding(_)));
        assert!(encoding(&[b"\xef\xbb\xbf", call.as_bytes()].concat()));
        let utf16: Vec<u8> = call.encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert!(encoding(&utf16));
        let utf16be: Vec<u8> = call.encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert!(encoding(&utf16be));
        let utf32: Vec<u8> = call
            .chars()
            .flat_map(|c| (c as u32).to_le_bytes())
            .collect();
        assert!(encoding(&utf32));
        assert!(encoding(b"{\"method\":\"\xff\"}"));
        for dup in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"me\u0074hod":"tools/call","method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"params":{"name":"b"}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"x","method":"tools/call"}]"#,
        ] {
            assert!(
                matches!(parse(dup.as_bytes()), Err(JsonRpcError::NotJson(e)) if e.contains("duplicate")),
                "{dup}"
            );
        }
        let m = parse(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","n\u0061me":"b"}}"#).unwrap();
        assert!(
            matches!(m.messages()[0].kind(), Kind::UnreadableCall(e) if e.contains("duplicate"))
        );
        // A notification is still a call a lenient server may run.
        let n = parse(br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"a"}}"#).unwrap();
        assert!(matches!(n.messages()[0].kind(), Kind::ToolsCall { name, .. } if name == "a"));
        for odd in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
        ] {
            let m = parse(odd.as_bytes()).unwrap();
            assert!(
                matches!(m.messages()[0].kind(), Kind::UnreadableCall(_)),
                "{odd}"
            );
        }
    }

    #[test]
    fn ids_that_any_reader_conflates_have_one_key_and_unholdable_ids_none() {
        let key = |id: &str| IdKey::of(&serde_json::from_str::<Box<RawValue>>(id).unwrap());
        for same in ["1", "\"1\"", "1.0", "1e0", "10e-1", "\"\\u0031\""] {
            assert_eq!(key(same), key("1"), "{same}");
        }
        assert_ne!(key("\"01\""), key("1"));
        assert_eq!(key("-0"), key("0"));
        assert!(key("9007199254740991").is_ok());
        assert!(key("-9007199254740991").is_ok());
        let big = "9".repeat(310);
        for bad in [
            "9007199254740992",
            "18446744073709551615",
            "1e30",
            "1.5",
            big.as_str(),
            "null",
            "true",
            "[1]",
            "{}",
            "\"\\ud800\"",
        ] {
            assert!(key(bad).is_err(), "{bad}");
        }
        let m = parse(br#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#).unwrap();
        assert!(m.messages()[0].id.is_none());
        assert!(matches!(m.messages()[0].id_key(), Some(Err(_))));
        let n = parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(n.messages()[0].id_key().is_none());
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
