//! The headers Streamable HTTP 2026-07-28 mirrors from the body ("Request Metadata":
//! `Mcp-Method`, `Mcp-Name`, `MCP-Protocol-Version`) and the check every component that reads
//! the body must make ("Server Validation"): a header that disagrees with the body is refused
//! with `400 Bad Request` and `HeaderMismatch` (-32020). The filter never decides on these
//! headers; it only refuses requests whose headers could mislead a component that does.

use crate::base64::{self, Alphabet};
use crate::mcp::jsonrpc::{Incoming, Message};

/// Streamable HTTP 2026-07-28, "Server Validation": `HeaderMismatch`.
pub const HEADER_MISMATCH: i64 = -32020;

/// The mirrored headers of one request, as received (names lowercase). A header sent more than
/// once is kept as every value: no single one can be said to be "the" header.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Mirrored {
    pub method: Vec<String>,
    pub name: Vec<String>,
    pub protocol_version: Vec<String>,
}

impl Mirrored {
    /// Sorts one request header into place; other headers are ignored.
    pub fn add(&mut self, name: &str, value: &str) {
        let slot = if name.eq_ignore_ascii_case("mcp-method") {
            &mut self.method
        } else if name.eq_ignore_ascii_case("mcp-name") {
            &mut self.name
        } else if name.eq_ignore_ascii_case("mcp-protocol-version") {
            &mut self.protocol_version
        } else {
            return;
        };
        slot.push(value.to_string());
    }

    /// The headers a client of protocol 2026-07-28 sends, for tests and tools.
    pub fn of(method: Option<&str>, name: Option<&str>, protocol_version: Option<&str>) -> Self {
        let own = |v: Option<&str>| v.map(str::to_string).into_iter().collect();
        Mirrored {
            method: own(method),
            name: own(name),
            protocol_version: own(protocol_version),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.method.is_empty() && self.name.is_empty() && self.protocol_version.is_empty()
    }
}

/// Why a request's headers disagree with its body; `Display` is the JSON-RPC error message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// The header was sent more than once.
    Repeated(&'static str),
    /// The header names a value the body does not carry (`body` is `None` when absent).
    Differs {
        header: &'static str,
        header_value: String,
        body: Option<String>,
    },
    /// `Mcp-Name` in the Base64 sentinel form whose payload is not Base64 of UTF-8.
    BadEncoding(String),
    /// The mirrored headers describe one message; a batch holds several.
    Batch,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mismatch::Repeated(h) => write!(f, "Header mismatch: {h} header sent more than once"),
            Mismatch::Differs {
                header,
                header_value,
                body: Some(body),
            } => write!(
                f,
                "Header mismatch: {header} header value '{header_value}' does not match body value '{body}'"
            ),
            Mismatch::Differs {
                header,
                header_value,
                body: None,
            } => write!(
                f,
                "Header mismatch: {header} header value '{header_value}' has no counterpart in the body"
            ),
            Mismatch::BadEncoding(v) => write!(
                f,
                "Header mismatch: Mcp-Name header value '{v}' is not valid Base64 of UTF-8"
            ),
            Mismatch::Batch => write!(
                f,
                "Header mismatch: Mcp-Method header on a batch of several messages"
            ),
        }
    }
}

/// Checks the mirrored headers against the body the filter read. Headers that are absent are
/// not checked (the upstream decides whether it requires them).
pub fn validate(headers: &Mirrored, incoming: &Incoming) -> Result<(), Mismatch> {
    if headers.is_empty() {
        return Ok(());
    }
    let single = |values: &[String], header| match values {
        [] => Ok(None),
        [one] => Ok(Some(one.clone())),
        _ => Err(Mismatch::Repeated(header)),
    };
    let method = single(&headers.method, "Mcp-Method")?;
    let name = single(&headers.name, "Mcp-Name")?;
    let version = single(&headers.protocol_version, "MCP-Protocol-Version")?;
    let message = match incoming {
        Incoming::Single(m) => m,
        Incoming::Batch(_) if method.is_some() || name.is_some() => return Err(Mismatch::Batch),
        Incoming::Batch(messages) => {
            for m in messages {
                check_version(version.as_deref(), m)?;
            }
            return Ok(());
        }
    };
    if let Some(header_value) = method {
        if message.method.as_deref() != Some(header_value.as_str()) {
            return Err(Mismatch::Differs {
                header: "Mcp-Method",
                header_value,
                body: message.method.clone(),
            });
        }
    }
    if let Some(header_value) = name {
        let decoded = decode(&header_value).ok_or(Mismatch::BadEncoding(header_value))?;
        // A body whose name cannot be read has no value the header could match.
        let body = message.mirrored_name().ok().flatten();
        if body.as_deref() != Some(decoded.as_str()) {
            return Err(Mismatch::Differs {
                header: "Mcp-Name",
                header_value: decoded,
                body,
            });
        }
    }
    check_version(version.as_deref(), message)
}

fn check_version(header: Option<&str>, message: &Message) -> Result<(), Mismatch> {
    let Some(header_value) = header else {
        return Ok(());
    };
    match message.protocol_version() {
        Ok(Some(body)) if body != header_value => Err(Mismatch::Differs {
            header: "MCP-Protocol-Version",
            header_value: header_value.to_string(),
            body: Some(body),
        }),
        _ => Ok(()),
    }
}

/// A header value in plain form, or decoded from the sentinel form `=?base64?…?=` (Streamable
/// HTTP 2026-07-28, "Value Encoding"; the markers are case-sensitive). `None`: a sentinel whose
/// payload is not Base64 of UTF-8.
pub fn decode(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(payload) => String::from_utf8(base64::decode(payload, Alphabet::Standard)?).ok(),
        None => Some(value.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::jsonrpc;

    fn headers(method: &str, name: Option<&str>) -> Mirrored {
        let mut h = Mirrored::default();
        h.add("Mcp-Method", method);
        if let Some(n) = name {
            h.add("mcp-name", n);
        }
        h
    }

    fn call(name: &str) -> Incoming {
        jsonrpc::parse(
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":{},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}}}}"#,
                serde_json::to_string(name).unwrap()
            )
            .as_bytes(),
        )
        .unwrap()
    }

    #[test]
    fn sentinel_values_decode() {
        assert_eq!(decode("plain").as_deref(), Some("plain"));
        assert_eq!(
            decode("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(),
            Some("Hello, 世界")
        );
        assert_eq!(
            decode("=?base64?IHBhZGRlZCA=?=").as_deref(),
            Some(" padded ")
        );
        assert_eq!(
            decode("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=").as_deref(),
            Some("=?base64?literal?=")
        );
        assert_eq!(decode("=?base64?!!?="), None);
        assert_eq!(decode("=?base64?/w==?="), None, "not UTF-8");
        assert_eq!(
            decode("=?BASE64?eA==?=").as_deref(),
            Some("=?BASE64?eA==?=")
        );
    }

    #[test]
    fn agreeing_headers_pass_in_either_form() {
        assert_eq!(
            validate(
                &headers("tools/call", Some("get_weather")),
                &call("get_weather")
            ),
            Ok(())
        );
        let b64 = "=?base64?Z2V0X3dlYXRoZXI=?=";
        assert_eq!(
            validate(&headers("tools/call", Some(b64)), &call("get_weather")),
            Ok(())
        );
        let utf = "=?base64?5aSp5rCX?=";
        assert_eq!(
            validate(&headers("tools/call", Some(utf)), &call("天気")),
            Ok(())
        );
        let mut h = headers("tools/call", None);
        h.add("MCP-Protocol-Version", "2026-07-28");
        assert_eq!(validate(&h, &call("x")), Ok(()));
    }

    #[test]
    fn disagreeing_headers_name_both_values() {
        let err = validate(
            &headers("tools/call", Some("github_get_issue")),
            &call("stripe_create_refund"),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Header mismatch: Mcp-Name header value 'github_get_issue' does not match body value 'stripe_create_refund'"
        );
        let err = validate(&headers("notifications/initialized", None), &call("x")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Header mismatch: Mcp-Method header value 'notifications/initialized' does not match body value 'tools/call'"
        );
        let mut h = headers("tools/call", Some("x"));
        h.add("mcp-protocol-version", "2025-06-18");
        assert_eq!(
            validate(&h, &call("x")).unwrap_err().to_string(),
            "Header mismatch: MCP-Protocol-Version header value '2025-06-18' does not match body value '2026-07-28'"
        );
        let mut h = headers("tools/call", Some("x"));
        h.add("mcp-name", "x");
        assert_eq!(
            validate(&h, &call("x")),
            Err(Mismatch::Repeated("Mcp-Name"))
        );
        let batch = jsonrpc::parse(br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#).unwrap();
        assert_eq!(
            validate(&headers("tools/list", None), &batch),
            Err(Mismatch::Batch)
        );
        assert!(matches!(
            validate(&headers("tools/call", Some("=?base64?%%?=")), &call("x")),
            Err(Mismatch::BadEncoding(_))
        ));
    }
}
