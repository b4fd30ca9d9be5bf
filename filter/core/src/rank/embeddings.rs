//! Semantic ranking's plumbing: the text a tool is embedded from, the OpenAI-compatible
//! embeddings request and response (`POST /v1/embeddings`), and the shared store of tool
//! vectors (one blob per namespace, so each tool is embedded once per Envoy, not per worker).

use crate::config::entries::Entry;
use crate::config::{Config, EmbeddingsConfig};
use crate::index::catalog::{truncate, CatalogIndex, Tool};
use crate::index::fnv;
use crate::rank::search::{Fallback, FallbackKind};
use crate::vector::{self, ToolVectors};
use serde::Deserialize;

/// The most text sent for one tool: enough for name, description and arguments, and a bound
/// on the request size whatever the upstream declares.
pub const MAX_TOOL_TEXT_BYTES: usize = 2000;

/// What a tool is embedded from: its title and description, then its name split into words in
/// parentheses, then its arguments (`Tool::argument_text`: a tool's by name, a prompt's with
/// their descriptions), capped at 2000 bytes. The name as written
/// (`ndricks_sports_api`) is no English for a sentence encoder: dropped, it raised
/// all-MiniLM-L6-v2's NDCG@10 on the first half of MetaTool from 0.592 to 0.640, and the
/// description first with the words after it measured best of the orders tried. Arguments by
/// name only: their descriptions ("The cursor returned by the previous call") are alike across
/// tools and drown a short description in one sentence vector (hybrid NDCG@10 on the first
/// halves: `mcp-real` 0.774 → 0.783, the service groups 0.849 → 0.878, the schema set at
/// 1.000 and MetaTool, which has no schemas, unchanged; README, "Retrieval quality").
pub fn tool_text(tool: &Tool) -> String {
    let words = crate::index::tokenizer::words(&tool.name).join(" ");
    let about = tool.about();
    let mut text = if about.is_empty() {
        words
    } else {
        format!("{about} ({words})")
    };
    let arguments = tool.argument_text();
    if !arguments.is_empty() {
        text.push_str(" Arguments: ");
        text.push_str(&arguments);
    }
    truncate(&mut text, MAX_TOOL_TEXT_BYTES);
    text
}

/// The request body for `texts`.
pub fn request_body(config: &EmbeddingsConfig, texts: &[String]) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Request<'a> {
        model: &'a str,
        input: &'a [String],
        encoding_format: &'static str,
    }
    let request = Request {
        model: &config.model_id,
        input: texts,
        encoding_format: "float",
    };
    // Strings, a slice of strings: serializing cannot fail.
    serde_json::to_vec(&request).unwrap_or_default()
}

/// The headers of an embeddings call (`dispatch_http_call` needs the pseudo-headers).
pub fn request_headers(config: &EmbeddingsConfig) -> Vec<(String, String)> {
    let mut headers = vec![
        (":method".to_string(), "POST".to_string()),
        (":path".to_string(), config.path.clone()),
        (":authority".to_string(), config.authority.clone()),
        ("content-type".to_string(), "application/json".to_string()),
    ];
    headers.extend(config.headers.iter().cloned());
    headers
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f64>,
}

/// Reads an embeddings response: one unit vector per input, in input order. Any problem is a
/// fallback reason (the search then ranks by BM25).
/// `timeout_ms`: the call's timeout (a 504 past it is the call timing out).
pub fn parse_response(
    config: &EmbeddingsConfig,
    status: Option<&str>,
    body: &[u8],
    inputs: usize,
    timeout_ms: u64,
) -> Result<Vec<Vec<f32>>, Fallback> {
    let status = match status {
        None => {
            return Err(Fallback::new(
                FallbackKind::Unavailable,
                format!("embeddings cluster {:?} did not answer", config.cluster),
            ))
        }
        Some(s) => s,
    };
    if status == "504" {
        return Err(Fallback::new(
            FallbackKind::Timeout,
            format!("embeddings service did not answer within {timeout_ms} ms"),
        ));
    }
    // Envoy answers for a service it cannot reach (connection refused, no healthy host) with a
    // local 503 whose body says so: that is the service being unavailable, not its answer.
    let envoy_local =
        body.starts_with(b"upstream connect error") || body.starts_with(b"no healthy upstream");
    if status == "503" && envoy_local {
        return Err(Fallback::new(
            FallbackKind::Unavailable,
            format!(
                "embeddings cluster {:?} is unreachable: {}",
                config.cluster,
                String::from_utf8_lossy(body.get(..120).unwrap_or(body))
            ),
        ));
    }
    if !status.starts_with('2') {
        return Err(Fallback::new(
            FallbackKind::Status,
            format!("embeddings service answered {status}"),
        ));
    }
    let response: Response = serde_json::from_slice(body).map_err(|e| {
        Fallback::new(
            FallbackKind::Malformed,
            format!("embeddings response is not the OpenAI shape: {e}"),
        )
    })?;
    if response.data.len() != inputs {
        return Err(Fallback::new(
            FallbackKind::Malformed,
            format!(
                "embeddings response has {} vectors for {inputs} inputs",
                response.data.len()
            ),
        ));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; inputs];
    for (position, item) in response.data.into_iter().enumerate() {
        let at = item.index.unwrap_or(position);
        if item.embedding.len() != config.dimensions {
            return Err(Fallback::new(
                FallbackKind::Dimensions,
                format!(
                    "embeddings service returned {} dimensions; the configuration says {}",
                    item.embedding.len(),
                    config.dimensions
                ),
            ));
        }
        let mut v: Vec<f32> = item.embedding.iter().map(|&x| x as f32).collect();
        if v.iter().any(|x| !x.is_finite()) || vector::normalize(&mut v).is_none() {
            return Err(Fallback::new(
                FallbackKind::Dimensions,
                "embeddings service returned a vector with non-finite or zero values",
            ));
        }
        match out.get_mut(at) {
            Some(slot @ None) => *slot = Some(v),
            _ => {
                return Err(Fallback::new(
                    FallbackKind::Malformed,
                    format!("embeddings response has a bad or repeated index {at}"),
                ))
            }
        }
    }
    out.into_iter().collect::<Option<Vec<_>>>().ok_or_else(|| {
        Fallback::new(
            FallbackKind::Malformed,
            "embeddings response misses an index",
        )
    })
}

/// Stored tool vectors of one namespace: by tool name, each with the hash of the text it was
/// embedded from (a changed description is re-embedded).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VectorStore {
    /// Sorted by name.
    entries: Vec<(String, u64, Vec<f32>)>,
}

const MAGIC: &[u8; 4] = b"MTV1";

impl VectorStore {
    fn find(&self, name: &str) -> Option<&(String, u64, Vec<f32>)> {
        self.entries
            .binary_search_by(|(n, _, _)| n.as_str().cmp(name))
            .ok()
            .and_then(|i| self.entries.get(i))
    }

    /// Adds or replaces vectors.
    pub fn merge(&mut self, items: Vec<(String, u64, Vec<f32>)>) {
        for item in items {
            match self
                .entries
                .binary_search_by(|(n, _, _)| n.as_str().cmp(&item.0))
            {
                Ok(i) => {
                    if let Some(slot) = self.entries.get_mut(i) {
                        *slot = item;
                    }
                }
                Err(i) => self.entries.insert(i, item),
            }
        }
    }

    /// The tools that have a vector, by name.
    #[cfg(test)]
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(name, _, _)| name.as_str())
    }

    /// Keeps the vectors of the tools `keep` names.
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.entries.retain(|(name, _, _)| keep(name));
    }

    /// Binary: magic, then per entry: name length (u16), name, text hash (u64), dimensions
    /// (u16), f32 values; little-endian. JSON would triple the size of 10k×384 floats.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            4 + self
                .entries
                .iter()
                .map(|(n, _, v)| n.len() + 12 + v.len() * 4)
                .sum::<usize>(),
        );
        out.extend_from_slice(MAGIC);
        for (name, hash, v) in &self.entries {
            out.extend_from_slice(&u16::try_from(name.len()).unwrap_or(0).to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&hash.to_le_bytes());
            out.extend_from_slice(&u16::try_from(v.len()).unwrap_or(0).to_le_bytes());
            for x in v {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<VectorStore> {
        let mut rest = bytes.strip_prefix(MAGIC.as_slice())?;
        let mut take = |n: usize| -> Option<&[u8]> {
            let (head, tail) = (rest.get(..n)?, rest.get(n..)?);
            rest = tail;
            Some(head)
        };
        let mut entries = Vec::new();
        while let Some(len) = take(2) {
            let len = usize::from(u16::from_le_bytes(len.try_into().ok()?));
            let name = String::from_utf8(take(len)?.to_vec()).ok()?;
            let hash = u64::from_le_bytes(take(8)?.try_into().ok()?);
            let dims = usize::from(u16::from_le_bytes(take(2)?.try_into().ok()?));
            let raw = take(dims * 4)?;
            let v: Vec<f32> = raw
                .chunks_exact(4)
                .filter_map(|c| c.try_into().ok().map(f32::from_le_bytes))
                .collect();
            entries.push((name, hash, v));
        }
        crate::sort::sort_by(&mut entries, |a, b| a.0.cmp(&b.0));
        Some(VectorStore { entries })
    }
}

/// The hash of the text a tool is embedded from.
pub fn text_hash(text: &str) -> u64 {
    fnv::hash(text.as_bytes())
}

/// Tools still to embed: catalog position and the text to embed.
pub type Missing = Vec<(usize, String)>;

/// Each catalog tool's vector: configured (precomputed) first, else stored with the current
/// text's hash. Also the tools still to embed: (catalog position, text).
pub fn resolve(
    index: &CatalogIndex,
    config: &Config,
    store: &VectorStore,
) -> (ToolVectors, Missing) {
    let mut by_position = Vec::with_capacity(index.catalog.len());
    let mut missing = Vec::new();
    // `tools[].embedding` names tools: a prompt of the same name is embedded from its text.
    let tools = Entry::of_catalog_key(&index.namespace).0 == Entry::Tool;
    for (i, tool) in index.catalog.tools().iter().enumerate() {
        if let Some(v) = config
            .tool_setting(&index.namespace, &tool.name)
            .filter(|_| tools)
            .and_then(|t| t.embedding.clone())
        {
            by_position.push(Some(v));
            continue;
        }
        let text = tool_text(tool);
        let hash = text_hash(&text);
        match store.find(&tool.name) {
            Some((_, h, v)) if *h == hash => by_position.push(Some(v.clone())),
            _ => {
                by_position.push(None);
                missing.push((i, text));
            }
        }
    }
    (ToolVectors { by_position }, missing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::catalog::Catalog;
    use serde_json::value::RawValue;

    fn emb(dims: usize) -> EmbeddingsConfig {
        match Config::parse(&format!(
            r#"{{"search":{{"embeddings":{{"cluster":"e","model_id":"m","dimensions":{dims}}}}}}}"#
        ))
        .unwrap()
        .search
        .embeddings
        {
            Some(e) => e,
            None => unreachable!(),
        }
    }

    fn tool(def: &str) -> Tool {
        let raw: Box<RawValue> = serde_json::from_str(def).unwrap();
        Tool::from_raw(&raw).unwrap()
    }

    #[test]
    fn tool_text_is_about_words_and_arguments_capped() {
        let t = tool(
            r#"{"name":"github_createIssue","title":"Create","description":"Open one.","inputSchema":{"properties":{"repo":{"description":"Repository"},"issueTitle":{"type":"string","properties":{"nested":{}}}}}}"#,
        );
        // The arguments by name, top level only, their descriptions left out.
        assert_eq!(
            tool_text(&t),
            "Create. Open one. (github create issue) Arguments: issue title, repo"
        );
        let prompt = tool(
            r#"{"name":"review","description":"Review code.","arguments":[{"name":"pull_request","description":"Which one"}]}"#,
        );
        // A prompt's arguments keep their descriptions.
        assert_eq!(
            tool_text(&prompt),
            "Review code. (review) Arguments: pull request: Which one"
        );
        // Without title or description, the name's words alone.
        assert_eq!(tool_text(&tool(r#"{"name":"getWeather"}"#)), "get weather");
        let long = tool(&format!(
            r#"{{"name":"x","description":"{}"}}"#,
            "é".repeat(1500)
        ));
        let text = tool_text(&long);
        assert!(text.len() <= MAX_TOOL_TEXT_BYTES && text.len() > 1990);
    }

    #[test]
    fn requests_and_responses() {
        let e = emb(2);
        let body: serde_json::Value =
            serde_json::from_slice(&request_body(&e, &["a\"b".into()])).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"model":"m","input":["a\"b"],"encoding_format":"float"})
        );
        assert_eq!(
            request_headers(&e)[2],
            (":authority".to_string(), "e".to_string())
        );
        let ok = br#"{"object":"list","data":[{"index":1,"embedding":[0,2]},{"index":0,"embedding":[3,4]}]}"#;
        let v = parse_response(&e, Some("200"), ok, 2, 1000).unwrap();
        assert_eq!(v, vec![vec![0.6, 0.8], vec![0.0, 1.0]]);
        let kind = |status: Option<&str>, body: &[u8], n| {
            parse_response(&e, status, body, n, 1000).unwrap_err().kind
        };
        assert_eq!(kind(None, b"", 1), FallbackKind::Unavailable);
        assert_eq!(
            kind(Some("504"), b"upstream request timeout", 1),
            FallbackKind::Timeout
        );
        assert_eq!(kind(Some("500"), b"", 1), FallbackKind::Status);
        assert_eq!(kind(Some("503"), b"upstream connect error or disconnect/reset before headers. reset reason: remote connection failure", 1), FallbackKind::Unavailable);
        assert_eq!(
            kind(Some("503"), b"no healthy upstream", 1),
            FallbackKind::Unavailable
        );
        assert_eq!(
            kind(Some("503"), b"{\"error\":\"busy\"}", 1),
            FallbackKind::Status
        );
        assert_eq!(kind(Some("200"), b"garbage", 1), FallbackKind::Malformed);
        assert_eq!(kind(Some("200"), ok, 3), FallbackKind::Malformed);
        assert_eq!(
            kind(Some("200"), br#"{"data":[{"embedding":[1,2,3]}]}"#, 1),
            FallbackKind::Dimensions
        );
        assert_eq!(
            kind(Some("200"), br#"{"data":[{"embedding":[0,0]}]}"#, 1),
            FallbackKind::Dimensions
        );
        assert_eq!(
            kind(
                Some("200"),
                br#"{"data":[{"index":0,"embedding":[1,0]},{"index":0,"embedding":[1,0]}]}"#,
                2
            ),
            FallbackKind::Malformed
        );
    }

    #[test]
    fn store_round_trips_and_resolves_changed_texts() {
        let config = Config::parse(
            r#"{"search":{"embeddings":{"cluster":"e","model_id":"m","dimensions":2}},
            "tools":[{"name":"pre","embedding":[1,0]}]}"#,
        )
        .unwrap();
        let catalog = Catalog::from_tools(vec![
            tool(r#"{"name":"a","description":"alpha"}"#),
            tool(r#"{"name":"b","description":"beta"}"#),
            tool(r#"{"name":"pre","description":"given"}"#),
        ]);
        let index = CatalogIndex::build("ns", catalog, &config);
        let a = &index.catalog.tools()[0];
        let mut store = VectorStore::default();
        store.merge(vec![
            ("a".into(), text_hash(&tool_text(a)), vec![0.0, 1.0]),
            ("b".into(), 12345, vec![1.0, 0.0]),
        ]);
        let back = VectorStore::decode(&store.encode()).unwrap();
        assert_eq!(back, store);
        assert!(VectorStore::decode(b"nope").is_none());
        assert!(
            VectorStore::decode(&store.encode()[..9]).is_none(),
            "truncated"
        );
        let (vectors, missing) = resolve(&index, &config, &back);
        assert_eq!(vectors.get(0), Some(&[0.0, 1.0][..]));
        assert_eq!(vectors.get(1), None, "stale hash: re-embed");
        assert_eq!(vectors.get(2), Some(&[1.0, 0.0][..]), "precomputed");
        assert_eq!(missing.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [1]);
    }
}
