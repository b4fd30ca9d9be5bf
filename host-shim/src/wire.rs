//! Reading captured HTTP messages: a `.headers` file (start line and header lines, as in
//! `testdata/wire-samples/`) and a `.body` file (the exact body bytes).

use crate::exchange::HttpMessage;
use crate::pairs::Headers;
use std::path::Path;

/// Hop-by-hop headers Envoy's HTTP/1 codec consumes; filters never see them.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

/// Parses a start line and headers. A status line (`HTTP/1.1 200 OK`) gives `:status`; a
/// request line (`POST /mcp HTTP/1.1`) gives `:method`, `:path` and `:scheme`, and `Host`
/// becomes `:authority`, as Envoy presents them to filters.
fn parse_head(text: &str) -> Result<Headers, String> {
    let mut lines = text.lines().map(|l| l.trim_end_matches('\r'));
    let start = lines
        .find(|l| !l.trim().is_empty())
        .ok_or_else(|| "empty headers file".to_string())?;
    let mut parts = start.split_whitespace();
    let first = parts.next().unwrap_or_default();
    let second = parts.next().unwrap_or_default();
    let mut headers: Headers = Vec::new();
    let request = if first.starts_with("HTTP/") {
        if second.parse::<u32>().is_err() {
            return Err(format!("bad status line: {start:?}"));
        }
        headers.push((":status".into(), second.into()));
        false
    } else {
        if second.is_empty() {
            return Err(format!("bad request line: {start:?}"));
        }
        headers.push((":method".into(), first.into()));
        headers.push((":path".into(), second.into()));
        headers.push((":scheme".into(), "http".into()));
        true
    };
    for line in lines {
        if line.trim().is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(format!("bad header line: {line:?}"));
        };
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim().to_string();
        if HOP_BY_HOP.contains(&name.as_str()) {
            continue;
        }
        if request && name == "host" {
            headers.push((":authority".into(), value));
        } else {
            headers.push((name, value));
        }
    }
    if request && !headers.iter().any(|(k, _)| k == ":authority") {
        headers.push((":authority".into(), "mcp.test".into()));
    }
    Ok(headers)
}

/// A message from a `.headers` file and an optional `.body` file.
pub fn read_message(headers_file: &Path, body_file: Option<&Path>) -> Result<HttpMessage, String> {
    let text = std::fs::read_to_string(headers_file)
        .map_err(|e| format!("{}: {e}", headers_file.display()))?;
    let headers = parse_head(&text).map_err(|e| format!("{}: {e}", headers_file.display()))?;
    let body = match body_file {
        Some(p) => std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?,
        None => Vec::new(),
    };
    Ok(HttpMessage {
        headers,
        ..HttpMessage::default()
    }
    .body(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_and_request_lines() {
        let h = parse_head("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n").unwrap();
        assert_eq!(
            h,
            vec![
                (":status".to_string(), "200".to_string()),
                ("content-type".to_string(), "text/event-stream".to_string())
            ]
        );
        let h = parse_head("POST /mcp HTTP/1.1\nHost: 127.0.0.1:8000\nAccept: */*\n").unwrap();
        assert_eq!(
            h.first(),
            Some(&(":method".to_string(), "POST".to_string()))
        );
        assert!(h.contains(&(":authority".to_string(), "127.0.0.1:8000".to_string())));
        assert!(parse_head("").is_err());
    }
}
