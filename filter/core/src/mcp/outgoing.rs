//! The headers of a `tools/call` the filter sends itself (`call_tool`, a script's calls) to a
//! server of protocol 2026-07-28, which checks them against the body (Streamable HTTP
//! 2026-07-28, "Server Validation"): `Mcp-Name` and the `Mcp-Param-{Name}` of every argument the
//! tool's `inputSchema` marks with `x-mcp-header` ("Custom Headers"), each written as "Value
//! Encoding" says: plain when it is a safe header value, else `=?base64?…?=`, so that no name or
//! argument can add a header line.

use crate::base64;
use serde_json::Value;

const SENTINEL: &str = "=?base64?";

/// `value` as a header value: as it is when every character is visible ASCII or an inner space
/// or tab (RFC 9110 field values) and it does not look like the Base64 form, else that form.
pub fn header_value(value: &str) -> String {
    let safe = value
        .bytes()
        .all(|b| (0x21..=0x7e).contains(&b) || b == b' ' || b == b'\t')
        && !value.starts_with([' ', '\t'])
        && !value.ends_with([' ', '\t'])
        && !value.starts_with(SENTINEL);
    if safe {
        value.to_string()
    } else {
        format!("{SENTINEL}{}?=", base64::encode(value.as_bytes()))
    }
}

/// The `mcp-param-*` headers of a call with `arguments` (a JSON object) of the tool `definition`
/// declares: one for each property reached from the schema's root through `properties` alone
/// that names a header in `x-mcp-header` and whose argument is a string, an integer within
/// JavaScript's safe range, or a boolean; an argument that is absent has no header.
pub fn param_headers(definition: &str, arguments: &str) -> Vec<(String, String)> {
    let (Ok(definition), Ok(arguments)) = (
        serde_json::from_str::<Value>(definition),
        serde_json::from_str::<Value>(arguments),
    ) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(schema) = definition.get("inputSchema") {
        collect(schema, Some(&arguments), &mut out);
    }
    out
}

/// What a property's value is written as in its header, when it is one a header carries.
fn text_of(value: &Value) -> Option<String> {
    const SAFE: i64 = (1 << 53) - 1;
    match value {
        Value::String(s) => Some(header_value(s)),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => n
            .as_i64()
            .filter(|i| (-SAFE..=SAFE).contains(i))
            .map(|i| i.to_string()),
        _ => None,
    }
}

/// A header name's token (RFC 9110 `tchar`).
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn collect(schema: &Value, arguments: Option<&Value>, out: &mut Vec<(String, String)>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, property) in properties {
        let argument = arguments.and_then(|a| a.get(key));
        let header = property.get("x-mcp-header").and_then(Value::as_str);
        if let (Some(header), Some(text)) =
            (header.filter(|h| is_token(h)), argument.and_then(text_of))
        {
            out.push((format!("mcp-param-{}", header.to_ascii_lowercase()), text));
        }
        collect(property, argument, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_that_could_add_a_header_line_are_written_in_base64() {
        assert_eq!(header_value("get_weather"), "get_weather");
        assert_eq!(header_value("a b"), "a b");
        assert_eq!(
            header_value("x\r\nx-admin: 1"),
            "=?base64?eA0KeC1hZG1pbjogMQ==?="
        );
        assert_eq!(header_value(" padded"), "=?base64?IHBhZGRlZA==?=");
        assert_eq!(header_value("天気"), "=?base64?5aSp5rCX?=");
        assert_eq!(
            header_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        for value in ["x\r\nx-admin: 1", " padded", "天気", "=?base64?literal?="] {
            assert_eq!(
                crate::mcp::headers::decode(&header_value(value)).as_deref(),
                Some(value)
            );
        }
    }

    #[test]
    fn annotated_arguments_become_param_headers() {
        let definition = r#"{"name":"execute_sql","inputSchema":{"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "query":{"type":"string"},
            "limit":{"type":"integer","x-mcp-header":"Limit"},
            "dry":{"type":"boolean","x-mcp-header":"Dry-Run"},
            "target":{"type":"object","properties":{"db":{"type":"string","x-mcp-header":"Db"}}},
            "bad":{"type":"string","x-mcp-header":"Bad Name"},
            "tags":{"type":"array","items":{"type":"string","x-mcp-header":"Tag"}}}}}"#;
        let arguments = r#"{"region":"us-west1","query":"SELECT 1","limit":9007199254740991,
            "dry":false,"target":{"db":"main\n"},"bad":"x","tags":["a"]}"#;
        let mut headers = param_headers(definition, arguments);
        headers.sort();
        assert_eq!(
            headers,
            [
                (
                    "mcp-param-db".to_string(),
                    "=?base64?bWFpbgo=?=".to_string()
                ),
                ("mcp-param-dry-run".to_string(), "false".to_string()),
                (
                    "mcp-param-limit".to_string(),
                    "9007199254740991".to_string()
                ),
                ("mcp-param-region".to_string(), "us-west1".to_string()),
            ]
        );
        // An argument left out has no header; one beyond JavaScript's safe integers neither.
        assert!(param_headers(definition, r#"{"limit":9007199254740992}"#).is_empty());
        assert!(param_headers("{}", "{}").is_empty());
    }
}
