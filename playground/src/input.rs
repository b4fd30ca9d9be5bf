//! What an operator pastes, read into what the filter would see: a `tools/list` answer in any of
//! the shapes operators have at hand, vectors, and a caller.

use crate::Error;
use mcp_tool_search_core::{Caller, Config, IdentitySource, SseParser};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;

/// The id of the `tools/list` request the playground sends through the filter; the upstream's
/// answer is given the same id, whatever id it was captured with.
pub const LIST_ID: u32 = 1;

#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow)]
    result: &'a RawValue,
}

/// The upstream's answer to the playground's `tools/list` (a JSON-RPC response body) from: a
/// JSON-RPC response, a captured SSE body holding one, a `tools/list` result (`{"tools": [...]}`),
/// an array of tool definitions, or JSON lines of them (as `testdata/metatool/tools.jsonl`).
/// The result's bytes are kept as written: the filter keeps every byte of a definition.
pub fn list_response(text: &str) -> Result<String, Error> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Error::List(
            "paste a tools/list result, or load a sample".into(),
        ));
    }
    let json = if text.starts_with("event:") || text.starts_with("data:") || text.starts_with(':') {
        sse_data(text)?
    } else {
        text.to_string()
    };
    let result = match serde_json::from_str::<&RawValue>(&json) {
        Ok(raw) => result_of(raw)?,
        Err(first) => json_lines(&json).ok_or_else(|| {
            Error::List(format!(
                "not JSON, SSE or JSON lines of tool definitions: {first}"
            ))
        })?,
    };
    Ok(format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{LIST_ID},\"result\":{result}}}"
    ))
}

fn result_of(raw: &RawValue) -> Result<String, Error> {
    let trimmed = raw.get().trim_start();
    if trimmed.starts_with('[') {
        return Ok(format!("{{\"tools\":{}}}", raw.get()));
    }
    if let Ok(Response { result }) = serde_json::from_str::<Response>(raw.get()) {
        return checked_result(result.get());
    }
    let value: Value = serde_json::from_str(raw.get()).map_err(|e| Error::List(e.to_string()))?;
    if value.get("error").is_some() {
        return Err(Error::List(format!(
            "the pasted answer is a JSON-RPC error, not a tools/list result: {}",
            value.get("error").map(Value::to_string).unwrap_or_default()
        )));
    }
    checked_result(raw.get())
}

fn checked_result(result: &str) -> Result<String, Error> {
    let value: Value = serde_json::from_str(result).map_err(|e| Error::List(e.to_string()))?;
    match value.get("tools") {
        Some(Value::Array(_)) => Ok(result.to_string()),
        _ => Err(Error::List(
            "a tools/list result needs a `tools` array (paste the response, its `result`, or an array of tools)".into(),
        )),
    }
}

/// The last SSE event whose data is a JSON-RPC response, read by the filter's own SSE parser.
fn sse_data(text: &str) -> Result<String, Error> {
    let mut parser = SseParser::new();
    // Trimmed, the last event lost the blank line that ends it.
    let mut events = parser.push(format!("{text}\n\n").as_bytes());
    events.extend(parser.finish().0);
    events
        .iter()
        .filter_map(|e| e.data())
        .filter_map(|d| std::str::from_utf8(d).ok())
        .rfind(|d| serde_json::from_str::<Value>(d).is_ok_and(|v| v.get("result").is_some()))
        .map(str::to_string)
        .ok_or_else(|| Error::List("no SSE event carries a JSON-RPC result".into()))
}

fn json_lines(text: &str) -> Option<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.len() < 2
        || !lines
            .iter()
            .all(|l| serde_json::from_str::<&RawValue>(l).is_ok())
    {
        return None;
    }
    Some(format!("{{\"tools\":[{}]}}", lines.join(",")))
}

/// Pasted vectors: `{"query": [...], "tools": {"name": [...]}}`, both optional. The filter
/// normalizes and checks them itself (dimensions, finiteness), as it does the service's.
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vectors {
    #[serde(default)]
    pub query: Option<Vec<f32>>,
    #[serde(default)]
    pub tools: BTreeMap<String, Vec<f32>>,
}

pub fn vectors(text: &str) -> Result<Vectors, Error> {
    if text.trim().is_empty() {
        return Ok(Vectors::default());
    }
    serde_json::from_str(text).map_err(|e| {
        Error::Vectors(format!(
            "expected {{\"query\": [numbers], \"tools\": {{\"tool name\": [numbers]}}}}: {e}"
        ))
    })
}

/// What the caller's identity looks like on the request, as the configured identity source
/// reads it: the headers it comes in, and the stream's dynamic metadata (a serialized
/// `envoy.config.core.v3.Metadata`) for a `jwt_metadata` source.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Identity {
    pub headers: Vec<(String, String)>,
    pub metadata: Option<Vec<u8>>,
}

/// The caller as the operator types them: for a `header` source the header's value
/// (comma-separated), otherwise the JWT payload as JSON; empty: nobody. Without a policy the
/// filter reads no identity, so neither does this.
pub fn identity(config: &Config, text: &str) -> Result<Identity, Error> {
    let text = text.trim();
    let Some(policy) = config.authorization.as_ref() else {
        return Ok(Identity::default());
    };
    if text.is_empty() {
        return Ok(Identity::default());
    }
    if let IdentitySource::Header { header, .. } = &policy.identity {
        if !text.starts_with('{') {
            return Ok(Identity {
                headers: vec![(header.clone(), text.to_string())],
                metadata: None,
            });
        }
    }
    let claims = serde_json::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object)
        .ok_or_else(|| {
            Error::Caller(format!(
                "{text:?} is not a JSON object of claims (e.g. {{\"roles\": [\"support\"]}})"
            ))
        })?;
    Ok(match &policy.identity {
        // The header carries one claim's values; the others cannot reach the filter this way.
        IdentitySource::Header { header, claim } => {
            let values = Caller::from_payload(claims).values(claim);
            Identity {
                headers: if values.is_empty() {
                    Vec::new()
                } else {
                    vec![(header.clone(), values.join(","))]
                },
                metadata: None,
            }
        }
        IdentitySource::JwtHeader { header } => Identity {
            headers: vec![(header.clone(), base64url(claims.to_string().as_bytes()))],
            metadata: None,
        },
        IdentitySource::JwtMetadata { filter, key } => Identity {
            headers: Vec::new(),
            metadata: Some(mcp_tool_search_core::encode_filter_metadata(
                filter, key, &claims,
            )),
        },
    })
}

/// The caller the filter reads from `identity` (its own reading, so the page ranks for the
/// caller the filter answers).
pub fn caller(config: &Config, identity: &Identity) -> Caller {
    match &config.authorization {
        Some(policy) => {
            let metadata = identity.metadata.clone();
            Caller::identify(&policy.identity, &identity.headers, || metadata)
        }
        None => Caller::anonymous(),
    }
}

/// Base64url without padding (RFC 4648 §5), as `jwt_authn`'s `forward_payload_header` sends.
fn base64url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..=chunk.len() {
            let at = (n >> (18 - 6 * i)) & 63;
            if let Some(&c) = ALPHABET.get(at as usize) {
                out.push(char::from(c));
            }
        }
    }
    out
}

/// What the operator types a caller as, for the configured identity source.
pub fn caller_hint(config: &Config) -> Option<String> {
    let policy = config.authorization.as_ref()?;
    Some(match &policy.identity {
        IdentitySource::Header { header, claim } => format!(
            "the value of header {header} (comma-separated, read as claim {claim}), or the claims as JSON"
        ),
        IdentitySource::JwtHeader { header } => {
            format!("the JWT payload forwarded in {header}, as JSON")
        }
        IdentitySource::JwtMetadata { filter, key } => {
            format!("the JWT payload {filter} stores as {key}, as JSON")
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]
    use super::*;

    #[test]
    fn every_shape_of_a_list_gives_the_same_response() {
        let tools = r#"[{"name":"a","description":"x"},{"name":"b"}]"#;
        let want = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":{tools}}}}}"#);
        for pasted in [
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"tools":{tools}}}}}"#),
            format!(r#"{{"tools":{tools}}}"#),
            tools.to_string(),
            "{\"name\":\"a\",\"description\":\"x\"}\n{\"name\":\"b\"}\n".to_string(),
            format!(
                "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{\"tools\":{tools}}}}}\n\n"
            ),
        ] {
            assert_eq!(list_response(&pasted).unwrap(), want, "{pasted}");
        }
        for bad in [
            "",
            "nope",
            r#"{"tools": 3}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#,
        ] {
            assert!(matches!(list_response(bad), Err(Error::List(_))), "{bad}");
        }
    }

    #[test]
    fn callers_as_the_identity_source_reads_them() {
        let header = Config::parse(
            r#"{"authorization":{"identity":{"source":"header","header":"x-roles"},"rules":[]}}"#,
        )
        .unwrap();
        let read = |config: &Config, text: &str| {
            identity(config, text).map(|identity| caller(config, &identity))
        };
        assert_eq!(read(&header, "a, b").unwrap().values("roles"), ["a", "b"]);
        assert_eq!(
            read(&header, r#"{"roles":["c"]}"#).unwrap().values("roles"),
            ["c"]
        );
        let jwt = Config::default();
        assert_eq!(read(&jwt, "").unwrap(), Caller::anonymous());
        assert_eq!(read(&jwt, "admin").unwrap(), Caller::anonymous());
        let jwt =
            Config::parse(r#"{"authorization":{"identity":{"source":"jwt_metadata"},"rules":[]}}"#)
                .unwrap();
        assert!(matches!(read(&jwt, "admin"), Err(Error::Caller(_))));
        let payload = r#"{"scope":"a b","roles":["x",2],"n":{"ok":true,"z":null}}"#;
        let claims: Value = serde_json::from_str(payload).unwrap();
        assert_eq!(
            read(&jwt, payload).unwrap(),
            Caller::from_payload(claims.clone())
        );
        assert_eq!(read(&jwt, payload).unwrap().values("scope"), ["a", "b"]);
        let forwarded = Config::parse(
            r#"{"authorization":{"identity":{"source":"jwt_header","header":"x-jwt"},"rules":[]}}"#,
        )
        .unwrap();
        for text in ["{}", r#"{"a":1}"#, r#"{"ab":"c"}"#, payload] {
            let want: Value = serde_json::from_str(text).unwrap();
            assert_eq!(read(&forwarded, text).unwrap(), Caller::from_payload(want));
        }
        assert!(caller_hint(&header).unwrap().contains("x-roles"));
        assert!(caller_hint(&Config::default()).is_none());
        assert!(matches!(vectors("[1]"), Err(Error::Vectors(_))));
        assert_eq!(vectors(" ").unwrap(), Vectors::default());
    }
}
