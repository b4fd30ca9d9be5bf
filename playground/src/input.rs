//! What an operator pastes, read into what the filter would see: a `tools/list` answer in any of
//! the shapes operators have at hand, vectors, and a caller.

use crate::Error;
use mcp_tool_search_core::config::policy::{Caller, IdentitySource};
use mcp_tool_search_core::config::Config;
use mcp_tool_search_core::mcp::sse;
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
    let mut parser = sse::Parser::new();
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

/// The caller as the configured identity source would read them: for a `header` source the
/// header's value (comma-separated), otherwise the JWT payload as JSON. Empty: nobody.
/// Without a policy the filter reads no identity, so neither does this.
pub fn caller(config: &Config, text: &str) -> Result<Caller, Error> {
    let text = text.trim();
    if text.is_empty() || config.authorization.is_none() {
        return Ok(Caller::anonymous());
    }
    if let Some(IdentitySource::Header { claim, .. }) =
        config.authorization.as_ref().map(|p| &p.identity)
    {
        if !text.starts_with('{') {
            return Ok(Caller::from_header(claim, text));
        }
    }
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object)
        .map(Caller::from_payload)
        .ok_or_else(|| {
            Error::Caller(format!(
                "{text:?} is not a JSON object of claims (e.g. {{\"roles\": [\"support\"]}})"
            ))
        })
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
        assert_eq!(caller(&header, "a, b").unwrap().values("roles"), ["a", "b"]);
        assert_eq!(
            caller(&header, r#"{"roles":["c"]}"#)
                .unwrap()
                .values("roles"),
            ["c"]
        );
        let jwt = Config::default();
        assert_eq!(caller(&jwt, "").unwrap(), Caller::anonymous());
        assert_eq!(caller(&jwt, "admin").unwrap(), Caller::anonymous());
        let jwt =
            Config::parse(r#"{"authorization":{"identity":{"source":"jwt_metadata"},"rules":[]}}"#)
                .unwrap();
        assert!(matches!(caller(&jwt, "admin"), Err(Error::Caller(_))));
        assert_eq!(
            caller(&jwt, r#"{"scope":"a b"}"#).unwrap().values("scope"),
            ["a", "b"]
        );
        assert!(caller_hint(&header).unwrap().contains("x-roles"));
        assert!(caller_hint(&Config::default()).is_none());
        assert!(matches!(vectors("[1]"), Err(Error::Vectors(_))));
        assert_eq!(vectors(" ").unwrap(), Vectors::default());
    }
}
