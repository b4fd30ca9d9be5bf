//! Reading the answer to one call of a fetch: a JSON body, or an SSE stream (spec 2025-11-25
//! "Transports": a server may answer a POST either way) whose events may also carry
//! notifications and requests before the response.

use crate::config::entries::Entry;
use crate::index::catalog::Tool;
use crate::mcp::json::RawObject;
use crate::mcp::sse;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyError {
    NotUtf8,
    NotJson(String),
    /// No JSON-RPC response with the request's id.
    NoResponse,
    /// The server answered with a JSON-RPC error.
    Rpc {
        code: i64,
        message: String,
    },
    /// A result without the shape the method defines.
    BadResult(String),
}

impl fmt::Display for ReplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplyError::NotUtf8 => write!(f, "the answer is not UTF-8"),
            ReplyError::NotJson(e) => write!(f, "the answer is not JSON ({e})"),
            ReplyError::NoResponse => write!(f, "the answer holds no response to the request"),
            ReplyError::Rpc { code, message } => {
                write!(f, "the server answered JSON-RPC error {code}: {message}")
            }
            ReplyError::BadResult(why) => write!(f, "the result is malformed ({why})"),
        }
    }
}

#[derive(Deserialize)]
struct Response<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<RpcError>,
}

#[derive(Deserialize)]
struct RpcError {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    message: String,
}

/// The `result` of the response to request `id` in `body`.
pub(crate) fn read_reply(body: &[u8], id: u64) -> Result<Box<RawValue>, ReplyError> {
    let text = std::str::from_utf8(body).map_err(|_| ReplyError::NotUtf8)?;
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        return response_in(trimmed.as_bytes(), id)?.ok_or(ReplyError::NoResponse);
    }
    let mut parser = sse::Parser::new();
    let mut events = parser.push(body);
    events.extend(parser.finish().0);
    let mut any = false;
    for event in &events {
        if let Some(data) = event.data().filter(|d| !d.is_empty()) {
            any = true;
            if let Some(result) = response_in(data, id)? {
                return Ok(result);
            }
        }
    }
    if !any {
        return Err(ReplyError::NotJson(
            "neither a JSON body nor an event stream with data".to_string(),
        ));
    }
    Err(ReplyError::NoResponse)
}

/// The result for `id` if `message` (one message or a batch) holds its response.
fn response_in(message: &[u8], id: u64) -> Result<Option<Box<RawValue>>, ReplyError> {
    let text = std::str::from_utf8(message).map_err(|_| ReplyError::NotUtf8)?;
    let messages: Vec<Response> = if text.trim_start().starts_with('[') {
        serde_json::from_str(text).map_err(|e| ReplyError::NotJson(e.to_string()))?
    } else {
        vec![serde_json::from_str(text).map_err(|e| ReplyError::NotJson(e.to_string()))?]
    };
    let wanted = id.to_string();
    for m in messages {
        let matches =
            m.id.is_some_and(|v| v.get() == wanted || v.get() == format!("\"{wanted}\""));
        if !matches {
            continue;
        }
        if let Some(e) = m.error {
            return Err(ReplyError::Rpc {
                code: e.code,
                message: e.message,
            });
        }
        return match m.result {
            Some(r) => Ok(Some(r.to_owned())),
            None => Err(ReplyError::BadResult(
                "neither result nor error".to_string(),
            )),
        };
    }
    Ok(None)
}

/// The protocol version an `initialize` result agreed on.
pub(super) fn protocol_version(result: &RawValue) -> Option<String> {
    #[derive(Deserialize)]
    struct Init {
        #[serde(rename = "protocolVersion")]
        protocol_version: Option<String>,
    }
    serde_json::from_str::<Init>(result.get())
        .ok()?
        .protocol_version
}

/// Whether an `initialize` result declares prompts and resources (spec 2025-11-25
/// "Lifecycle", capability negotiation: a server lists only what it declared).
pub(super) fn serves(result: &RawValue) -> (bool, bool) {
    #[derive(Deserialize)]
    struct Init<'a> {
        #[serde(default, borrow)]
        capabilities: Option<Capabilities<'a>>,
    }
    #[derive(Deserialize)]
    struct Capabilities<'a> {
        #[serde(default, borrow)]
        prompts: Option<&'a RawValue>,
        #[serde(default, borrow)]
        resources: Option<&'a RawValue>,
    }
    let caps = serde_json::from_str::<Init>(result.get())
        .ok()
        .and_then(|i| i.capabilities);
    let declared = |c: Option<&RawValue>| c.is_some_and(|c| c.get().trim() != "null");
    caps.map_or((false, false), |c| {
        (declared(c.prompts), declared(c.resources))
    })
}

/// One page of a list result (`tools`, `prompts`, `resources` or `resourceTemplates`).
pub(super) struct ListPage {
    /// The readable entries, each named by its key (`Entry::key_field`).
    pub tools: Vec<Tool>,
    pub next_cursor: Option<String>,
    pub private: bool,
    pub ttl_ms: Option<u64>,
}

impl ListPage {
    pub(super) fn read(result: &RawValue, entry: Entry) -> Result<ListPage, ReplyError> {
        #[derive(Deserialize)]
        struct Page {
            #[serde(default, rename = "nextCursor")]
            next_cursor: Option<String>,
            #[serde(default, rename = "cacheScope")]
            cache_scope: Option<String>,
            #[serde(default, rename = "ttlMs")]
            ttl_ms: Option<u64>,
        }
        let bad = |e: String| ReplyError::BadResult(format!("{} result: {e}", entry.list_method()));
        let page: Page = serde_json::from_str(result.get()).map_err(|e| bad(e.to_string()))?;
        let members = RawObject::parse(result.get()).map_err(|e| bad(e.to_string()))?;
        let items: Vec<&RawValue> = match members.get(entry.list_member()) {
            Some(raw) => serde_json::from_str(raw.get()).map_err(|e| bad(e.to_string()))?,
            None => return Err(bad(format!("missing field `{}`", entry.list_member()))),
        };
        // Entries that cannot be read are skipped here as learning from a list skips them.
        let tools = items
            .iter()
            .filter_map(|raw| Tool::from_entry(entry, raw).ok())
            .collect();
        Ok(ListPage {
            tools,
            next_cursor: page.next_cursor,
            private: page.cache_scope.as_deref() == Some("private"),
            ttl_ms: page.ttl_ms,
        })
    }
}
