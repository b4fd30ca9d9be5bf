//! The embeddings service as `eval` reaches it: plain HTTP/1.1 to an OpenAI-compatible
//! endpoint, and a file cache of the vectors between runs.

use mcp_tool_search_core::{embeddings_request, parse_embeddings, Config};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;

/// Embeds `texts` through an OpenAI-compatible endpoint (`http://host:port/path`), 64 at a time.
pub fn embed(url: &str, texts: &[String]) -> Result<Vec<Vec<f32>>, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or("only http:// embeddings URLs")?;
    let (authority, path) = rest
        .split_once('/')
        .map(|(a, p)| (a, format!("/{p}")))
        .unwrap_or((rest, "/v1/embeddings".to_string()));
    let config = Config::parse(
        r#"{"search":{"embeddings":{"cluster":"eval","model_id":"all-MiniLM-L6-v2","dimensions":384}}}"#,
    )
    .map_err(|e| e.to_string())?;
    let emb = config.search.embeddings.ok_or("no embeddings config")?;
    let mut out = Vec::with_capacity(texts.len());
    for batch in texts.chunks(64) {
        let body = embeddings_request(&emb, batch);
        let mut stream = TcpStream::connect(authority).map_err(|e| format!("{authority}: {e}"))?;
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: {authority}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        stream
            .write_all(head.as_bytes())
            .and_then(|_| stream.write_all(&body))
            .map_err(|e| e.to_string())?;
        let mut response = Vec::new();
        stream
            .read_to_end(&mut response)
            .map_err(|e| e.to_string())?;
        let split = response
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or("no HTTP header end")?;
        let (head, body) = response.split_at(split + 4);
        let head = String::from_utf8_lossy(head);
        let status = head.split_whitespace().nth(1).map(str::to_string);
        let body = if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            dechunk(body)
        } else {
            body.to_vec()
        };
        let vectors = parse_embeddings(&emb, status.as_deref(), &body, batch.len(), emb.timeout_ms)
            .map_err(|f| f.reason)?;
        out.extend(vectors);
    }
    Ok(out)
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(end) = body.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(body.get(..end).unwrap_or_default())
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 {
            break;
        }
        out.extend_from_slice(body.get(end + 2..end + 2 + size).unwrap_or_default());
        body = body.get(end + 4 + size..).unwrap_or_default();
    }
    out
}

/// Vectors for `texts`, from `cache` when it holds exactly these texts, else from the service
/// (and then stored in `cache`).
pub fn embed_cached(
    url: &str,
    texts: &[String],
    cache: Option<&Path>,
) -> Result<Vec<Vec<f32>>, String> {
    let key = mcp_tool_search_core::hash(texts.join("\n").as_bytes());
    let path = cache.map(|c| c.with_extension(format!("{key:016x}.bin")));
    if let Some(bytes) = path.as_ref().and_then(|p| std::fs::read(p).ok()) {
        let floats: Vec<f32> = bytes
            .chunks_exact(4)
            .filter_map(|c| <[u8; 4]>::try_from(c).ok())
            .map(f32::from_le_bytes)
            .collect();
        if !texts.is_empty() && floats.len().is_multiple_of(texts.len()) {
            let dim = floats.len() / texts.len();
            return Ok(floats.chunks(dim).map(<[f32]>::to_vec).collect());
        }
    }
    let out = embed(url, texts)?;
    if let Some(p) = path {
        let bytes: Vec<u8> = out.iter().flatten().flat_map(|f| f.to_le_bytes()).collect();
        std::fs::write(&p, bytes).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(out)
}
