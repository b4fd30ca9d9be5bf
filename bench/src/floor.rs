//! The proxy-wasm floor (`bench/floor/`): taught the filter's search answers, then checked to
//! replay them byte for byte.

use crate::client::{self, Request};
use crate::http::requests_of;
use crate::messages;
use mcp_tool_search_bench::envoy;

/// Response headers the proxy-wasm floor does not need to replay: it sends the content-type it
/// learned, and Envoy writes these on every local reply (the filter's and the floor's alike).
const ENVOY_REPLY_HEADERS: &[&str] = &["content-length", "date", "server", "connection"];

/// Teaches the proxy-wasm floor the filter's answer to each search of `queries` the runs send to
/// `path` (the catalog at that path; the floor's answers are keyed by the request body alone, so
/// a size's lessons replace the last size's), then checks that it answers every one with the
/// filter's status, headers and body, byte for byte.
pub fn teach_floor(
    filtered: std::net::SocketAddr,
    floor: std::net::SocketAddr,
    path: &str,
    queries: &[&str],
) -> Result<(), String> {
    let mut fc = client::Conn::open(filtered).map_err(|e| e.to_string())?;
    let mut lc = client::Conn::open(floor).map_err(|e| e.to_string())?;
    let to_filter = requests_of(queries, &filtered.to_string(), path);
    let to_floor = requests_of(queries, &floor.to_string(), path);
    let mut answers = Vec::new();
    for (i, req) in to_filter.iter().enumerate() {
        let resp = fc.round_trip(req).map_err(|e| e.to_string())?;
        client::check(&resp, Some("mcp-tool-search/search"))
            .map_err(|e| format!("search {path} (to teach the proxy-wasm floor): {e}"))?;
        let not_replayed: Vec<(String, String)> = lowercase_headers(&resp)
            .filter(|(k, _)| k != "content-type" && !ENVOY_REPLY_HEADERS.contains(&k.as_str()))
            .collect();
        if !not_replayed.is_empty() {
            return Err(format!(
                "the filter's search answer at {path} has headers the proxy-wasm floor does not replay: {not_replayed:?}"
            ));
        }
        let content_type = resp
            .header("content-type")
            .ok_or_else(|| format!("the filter's search answer at {path} has no content-type"))?;
        let query = queries.get(i).copied().unwrap_or_default();
        let mut lesson = messages::search_request(i + 1, query).into_bytes();
        lesson.push(0);
        lesson.extend_from_slice(content_type.as_bytes());
        lesson.push(0);
        lesson.extend_from_slice(&resp.body);
        let learned = lc
            .round_trip(&Request::post(
                &floor.to_string(),
                envoy::FLOOR_LEARN_PATH,
                "application/octet-stream",
                &lesson,
            ))
            .map_err(|e| e.to_string())?;
        if learned.status != 204 {
            return Err(format!(
                "the proxy-wasm floor refused a lesson ({}): {}",
                learned.status,
                String::from_utf8_lossy(&learned.body)
            ));
        }
        answers.push(resp);
    }
    let comparable = |r: &client::Response| {
        let mut h: Vec<(String, String)> =
            lowercase_headers(r).filter(|(k, _)| k != "date").collect();
        h.sort();
        h
    };
    for (req, want) in to_floor.iter().zip(&answers) {
        let got = lc.round_trip(req).map_err(|e| e.to_string())?;
        if got.status != want.status || got.body != want.body {
            return Err(format!(
                "the proxy-wasm floor's answer at {path} differs from the filter's: status {} vs {}, body {:?} vs {:?}",
                got.status,
                want.status,
                String::from_utf8_lossy(got.body.get(..got.body.len().min(200)).unwrap_or_default()),
                String::from_utf8_lossy(want.body.get(..want.body.len().min(200)).unwrap_or_default())
            ));
        }
        if comparable(&got) != comparable(want) {
            return Err(format!(
                "the proxy-wasm floor's headers at {path} differ from the filter's: {:?} vs {:?}",
                got.head, want.head
            ));
        }
    }
    Ok(())
}

/// The response's headers, names lowercased (as HTTP/1.1 compares them), values trimmed.
fn lowercase_headers(r: &client::Response) -> impl Iterator<Item = (String, String)> + '_ {
    r.headers()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
}
