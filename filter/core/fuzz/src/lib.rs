//! What each fuzz target runs, as the proxy-wasm glue (`filter/src/glue/http.rs`) would run it:
//! a `Stream` per request on the core's `Plugin` over a `MemoryHost`, fed the headers, body and
//! response pieces a fuzz input decodes to (`format`). Every target's only oracle is that
//! nothing panics (a panic traps the Envoy worker), plus the few invariants the parsers
//! document (SSE bytes pass through exactly; chunking changes nothing).
//!
//! Setup that cannot fail for the fixed inputs here (the configurations) may `expect`: a panic
//! there is a broken harness, found at once. Nothing under test is unwrapped.

pub mod format;

use mcp_tool_search_core::config::Config;
use mcp_tool_search_core::mcp::notify::ListChangedScanner;
use mcp_tool_search_core::mcp::sse;
use mcp_tool_search_core::plugin::{FetchProgress, FetchStart, MemoryHost, Plugin, PluginEnv};
use mcp_tool_search_core::rank::search::{Fallback, FallbackKind};
use mcp_tool_search_core::stream::{
    RequestBodyAction, RequestHead, RequestHeadersAction, ResponseHeadersAction, Stream,
};
use std::cell::OnceCell;

thread_local! {
    static REQUEST_CONFIGS: OnceCell<Vec<Config>> = const { OnceCell::new() };
    static LIST_CONFIGS: OnceCell<Vec<Config>> = const { OnceCell::new() };
}

// The configurations are constants: one that does not parse is a broken harness, not a finding.
#[allow(clippy::expect_used)]
fn parsed(texts: &[&str]) -> Vec<Config> {
    texts
        .iter()
        .map(|t| Config::parse(t).expect("a fuzz configuration is valid"))
        .collect()
}

fn request_config(i: usize) -> Config {
    REQUEST_CONFIGS.with(|c| {
        c.get_or_init(|| parsed(&format::REQUEST_CONFIGS))
            .get(i)
            .cloned()
            .unwrap_or_default()
    })
}

fn list_config(i: usize) -> Config {
    LIST_CONFIGS.with(|c| {
        c.get_or_init(|| parsed(&format::LIST_CONFIGS))
            .get(i)
            .cloned()
            .unwrap_or_default()
    })
}

/// The namespace and route every stream runs on (the `.wasm` replay gives the same cluster).
pub const NAMESPACE: &str = "upstream";

/// One worker: its plugin on a fresh host, so every input runs alone (a crash reproduces from
/// its input).
pub struct Worker {
    pub host: MemoryHost,
    pub plugin: Plugin,
}

/// What the client ends up with, for the few invariants checked on it.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Local(u32, Vec<u8>),
    Upstream(Vec<u8>),
}

impl Outcome {
    /// For failure messages.
    pub fn text(&self) -> String {
        match self {
            Outcome::Local(status, body) => {
                format!("local {status}: {:?}", String::from_utf8_lossy(body))
            }
            Outcome::Upstream(body) => format!("upstream: {:?}", String::from_utf8_lossy(body)),
        }
    }
}

impl Worker {
    pub fn new(config: Config) -> Self {
        let host = MemoryHost::default();
        // A realistic clock: 0 means "never" in catalog ages.
        host.clock_ms.set(1_767_225_600_000);
        Worker {
            host,
            plugin: Plugin::new(config, "fuzz-vm".into()),
        }
    }

    fn env(&self) -> PluginEnv<'_> {
        self.plugin
            .env(&self.host, NAMESPACE.into())
            .with_route(Some(NAMESPACE.into()), Some("mcp.test".into()))
    }

    /// One request through a fresh stream, as the glue drives it; `response` is the upstream's
    /// answer (status, content type, body pieces, empty final frame) if the request reaches it.
    pub fn exchange(
        &mut self,
        headers: &[(String, Vec<u8>)],
        body: &[u8],
        trailers: bool,
        response: (&str, &str, &[&[u8]], bool),
    ) -> Outcome {
        let config = self.plugin.config.clone();
        // The glue reads header values as bytes and lossily, remembering which were not UTF-8.
        let mut invalid = Vec::new();
        let pairs: Vec<(String, String)> = headers
            .iter()
            .map(|(name, value)| match String::from_utf8(value.clone()) {
                Ok(v) => (name.clone(), v),
                Err(e) => {
                    invalid.push(name.clone());
                    (
                        name.clone(),
                        String::from_utf8_lossy(e.as_bytes()).into_owned(),
                    )
                }
            })
            .collect();
        let mut head = RequestHead::from_headers(&config, &pairs, || Some(format::jwt_metadata()));
        head.invalid_utf8 = invalid;
        let mut stream = Stream::new();
        let end_on_headers = body.is_empty() && !trailers;
        let action = stream.on_request_headers(&config, &mut self.env(), head, end_on_headers);
        match action {
            RequestHeadersAction::Reply(r) => return Outcome::Local(r.status, r.body),
            RequestHeadersAction::Continue => {}
            RequestHeadersAction::ReadBody { .. } => {
                if let Some(reply) = self.request_body(&config, &mut stream, body, trailers) {
                    return reply;
                }
            }
        }
        self.response(&config, &mut stream, response)
    }

    /// The body phase: `Some` when the filter answered.
    fn request_body(
        &mut self,
        config: &Config,
        stream: &mut Stream,
        body: &[u8],
        trailers: bool,
    ) -> Option<Outcome> {
        if !stream.wants_request_body() {
            return None;
        }
        let reply = if body.len() > stream.request_cap(config) {
            stream.request_too_large(config, &mut self.env())
        } else if trailers {
            stream.request_body_unavailable(config, &mut self.env(), "request trailers")
        } else {
            let mut action = stream.on_request_body(config, &mut self.env(), body);
            // Each of these ends in another action; a chain longer than this is a loop.
            for _ in 0..4 {
                action = match action {
                    RequestBodyAction::Fetch { namespace, spec } => {
                        self.fetch(config, stream, &namespace, spec)
                    }
                    RequestBodyAction::Embed { texts } => {
                        // Unit vectors of the configured dimensions: tools have none yet, so
                        // the ranking falls back, as a fresh Envoy's would.
                        let dims = config
                            .search
                            .embeddings
                            .as_ref()
                            .map_or(3, |e| e.dimensions);
                        let vectors = if texts.len() % 2 == 0 {
                            Ok(texts
                                .iter()
                                .map(|_| {
                                    let mut v = vec![0.0; dims];
                                    if let Some(x) = v.first_mut() {
                                        *x = 1.0;
                                    }
                                    v
                                })
                                .collect())
                        } else {
                            Err(Fallback::new(FallbackKind::Timeout, "fuzz"))
                        };
                        stream.on_query_embeddings(config, &mut self.env(), vectors)
                    }
                    RequestBodyAction::Call(call) => stream.on_call_answer(
                        config,
                        &mut self.env(),
                        Ok((
                            Some("200".into()),
                            vec![("content-type".into(), "application/json".into())],
                            call.body,
                        )),
                    ),
                    done => {
                        action = done;
                        break;
                    }
                };
            }
            match action {
                RequestBodyAction::Reply(r) => Some(r),
                _ => None,
            }
        };
        reply.map(|r| Outcome::Local(r.status, r.body))
    }

    /// A catalog fetch for `namespace`, each call answered with a failure (no upstream here).
    fn fetch(
        &mut self,
        config: &Config,
        stream: &mut Stream,
        namespace: &str,
        spec: mcp_tool_search_core::fetch::FetchSpec,
    ) -> RequestBodyAction {
        let result = match self.plugin.start_fetch(&self.host, namespace, spec) {
            FetchStart::Started(_) => {
                let mut result = Err("the fetch did not finish".to_string());
                for _ in 0..16 {
                    let calls = self.host.take_calls();
                    if calls.is_empty() {
                        break;
                    }
                    for (token, _) in calls {
                        if let Some(FetchProgress::Finished { result: r, .. }) = self
                            .plugin
                            .on_fetch_response(&self.host, token, None, &[], &[])
                        {
                            result = r;
                        }
                    }
                }
                result
            }
            FetchStart::Busy => {
                return stream.on_catalog_settled(config, &mut self.env(), namespace)
            }
            FetchStart::Failed(e) => Err(e.to_string()),
        };
        stream.on_catalog(config, &mut self.env(), result)
    }

    fn response(
        &mut self,
        config: &Config,
        stream: &mut Stream,
        (status, content_type, chunks, empty_final): (&str, &str, &[&[u8]], bool),
    ) -> Outcome {
        let action = stream.on_response_headers(
            config,
            &mut self.env(),
            Some(status),
            Some(content_type),
            None,
        );
        if action == ResponseHeadersAction::Continue {
            return Outcome::Upstream(chunks.concat());
        }
        if content_type.starts_with("application/json") {
            stream.expect_response_length(config, chunks.iter().map(|c| c.len()).sum());
        }
        let mut out = Vec::new();
        let n = chunks.len();
        for (i, c) in chunks.iter().enumerate() {
            let end = i + 1 == n && !empty_final;
            out.extend(stream.on_response_chunk(config, &mut self.env(), c, end));
        }
        if n == 0 || empty_final {
            out.extend(stream.on_response_chunk(config, &mut self.env(), &[], true));
        }
        Outcome::Upstream(out)
    }
}

fn post_headers(extra: &[(String, String)], body: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut headers: Vec<(String, Vec<u8>)> = [
        (":method", "POST"),
        (":path", "/mcp"),
        (":authority", "mcp.test"),
        (":scheme", "http"),
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
    .collect();
    headers.push(("content-length".into(), body.len().to_string().into_bytes()));
    headers.extend(
        extra
            .iter()
            .map(|(k, v)| (k.clone(), v.as_bytes().to_vec())),
    );
    headers
}

/// Target `request`: request classification, header checks and authorization, and the local
/// answers, for any headers and body, under every configuration of `format::REQUEST_CONFIGS`.
pub fn request(data: &[u8]) {
    let Some(case) = format::request_case(data) else {
        return;
    };
    let mut worker = Worker::new(request_config(case.config));
    let list_headers = post_headers(&[], format::SEED_LIST_REQUEST);
    worker.exchange(
        &list_headers,
        format::SEED_LIST_REQUEST,
        false,
        ("200", "application/json", &[format::SEED_LIST], false),
    );
    let (status, content_type, body) = case.response;
    let pieces = format::chunks(body, case.chunk_seed);
    worker.exchange(
        &case.headers,
        &case.body,
        case.trailers,
        (status, content_type, &pieces, false),
    );
}

/// Target `list`: the `tools/list` rewrite of any upstream response (JSON or SSE, any chunking),
/// learning it, and a search or helper call answered from what was learned.
pub fn list(data: &[u8]) {
    let Some(case) = format::list_case(data) else {
        return;
    };
    let mut worker = Worker::new(list_config(case.config));
    let pieces = format::chunks(&case.body, case.chunk_seed);
    let headers = post_headers(&case.headers, &case.request);
    let out = worker.exchange(
        &headers,
        &case.request,
        false,
        ("200", case.content_type, &pieces, case.empty_final_chunk),
    );
    // Whole or in pieces, the client gets the same bytes: chunking is the host's business.
    if case.chunk_seed != 0 || case.empty_final_chunk {
        let mut whole = Worker::new(list_config(case.config));
        let again = whole.exchange(
            &headers,
            &case.request,
            false,
            ("200", case.content_type, &[&case.body], false),
        );
        assert!(
            out == again,
            "the chunking changed the client's body:\n{}\nwhole:\n{}",
            out.text(),
            again.text()
        );
    }
    if let Some(call) = &case.follow_up {
        let headers = post_headers(&case.headers, call);
        worker.exchange(
            &headers,
            call,
            false,
            ("200", "application/json", &[], false),
        );
    }
}

/// Target `sse`: the SSE parser under any chunking. Every byte leaves in exactly one event or
/// the unfinished tail, the events do not depend on the chunking, rewriting an event's data
/// does not panic, and the `list_changed` scanner agrees with a search of the whole stream.
pub fn sse(data: &[u8]) {
    let Some((&seed, stream)) = data.split_first() else {
        return;
    };
    let mut parser = sse::Parser::new();
    let mut scanner = ListChangedScanner::default();
    let mut events = Vec::new();
    let mut found = false;
    for piece in format::chunks(stream, seed) {
        events.extend(parser.push(piece));
        found |= scanner.push(piece);
    }
    let (last, tail) = parser.finish();
    events.extend(last);
    let mut replayed: Vec<u8> = events.iter().flat_map(|e| e.raw.clone()).collect();
    replayed.extend_from_slice(&tail);
    assert_eq!(replayed, stream, "the parser lost or added bytes");

    let mut whole = sse::Parser::new();
    let mut again = whole.push(stream);
    let (last, whole_tail) = whole.finish();
    again.extend(last);
    assert_eq!(events, again, "the chunking changed the events");
    assert_eq!(tail, whole_tail);

    // The scanner reads events, not bytes: one push of the whole stream decides as the chunks
    // did, and it never finds a notification whose method is not in the bytes.
    let token: &[u8] = b"\"notifications/tools/list_changed\"";
    let contains = stream.windows(token.len()).any(|w| w == token);
    let at_once = mcp_tool_search_core::mcp::notify::ListChangedScanner::default().push(stream);
    assert_eq!(found, at_once, "the chunking changed the list_changed verdict");
    assert!(!found || contains, "the list_changed scanner invented a notification");

    for event in &events {
        let data = event.data().unwrap_or_default();
        // The filter only writes data it serialized (compact JSON, no line break); data ending
        // in a line break (an empty last `data:` line) is not written back line for line.
        if data.ends_with(b"\n") {
            continue;
        }
        let rewritten = sse::replace_data(event, data);
        // The rewritten event is an event again, with the same data.
        let mut p = sse::Parser::new();
        let mut reread = p.push(&rewritten);
        reread.extend(p.finish().0);
        if let [one] = reread.as_slice() {
            assert_eq!(one.data().unwrap_or_default(), data);
        }
    }
}

/// Target `config`: the plugin configuration parser on any text, and what a parsed one is asked.
pub fn config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(config) = Config::parse(&text) else {
        return;
    };
    let names = ["github_get_issue", "", "a_b_c", "ß*", "echo"];
    for name in names {
        let _ = config.disclosure_mode(NAMESPACE, name);
        let _ = config.group_of(NAMESPACE, name);
        let _ = config.tool_setting("other", name);
    }
    for path in ["/mcp", "/MCP/x", "/%2e%2e/mcp", "", "/mcp/search/health"] {
        let forms = mcp_tool_search_core::config::paths::candidates(path);
        let _ = config.is_mcp_path(&forms);
    }
    let worker = Worker::new(config);
    let _ = worker.plugin.tick_period_ms();
    worker.plugin.on_tick(&worker.host);
    // A request under the parsed configuration, learning the seed list.
    let mut worker = worker;
    let headers = post_headers(
        &[("x-roles".into(), "support".into())],
        format::SEED_LIST_REQUEST,
    );
    worker.exchange(
        &headers,
        format::SEED_LIST_REQUEST,
        false,
        ("200", "application/json", &[format::SEED_LIST], false),
    );
}

/// Target `metadata`: Envoy's serialized dynamic metadata, read for the `jwt_metadata` identity
/// (the protobuf reader, then the claims and the policy).
pub fn metadata(data: &[u8]) {
    let config = request_config(4);
    let headers = vec![(":path".to_string(), "/mcp".to_string())];
    let head = RequestHead::from_headers(&config, &headers, || Some(data.to_vec()));
    let Some(policy) = &config.authorization else {
        return;
    };
    for claim in ["roles", "scope", "realm_access.roles", "a.b.c", ""] {
        let _ = head.caller.values(claim);
    }
    let scope = policy.scope(&head.caller, NAMESPACE);
    let _ = scope.allows("github_get_issue");
    let _ = scope.allows_everything();
}

/// Target `tokenizer`: words and search terms (the stemmer sees every lowercase ASCII word) of
/// any text.
pub fn tokenizer(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let words = mcp_tool_search_core::index::tokenizer::words(&text);
    assert!(words.iter().all(|w| !w.is_empty()));
    let _ = mcp_tool_search_core::index::tokenizer::terms(&text);
}

/// Target `embeddings`: an embeddings service's answer, for any status, input count and body.
pub fn embeddings(data: &[u8]) {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    const STATUSES: [Option<&str>; 8] = [
        Some("200"),
        Some("201"),
        Some("503"),
        Some("504"),
        Some("500"),
        None,
        Some("2"),
        Some(""),
    ];
    let status = STATUSES.get(usize::from(pick & 7)).copied().flatten();
    let inputs = usize::from(pick >> 3 & 7);
    let config = request_config(7);
    let Some(embeddings) = &config.search.embeddings else {
        return;
    };
    if let Ok(vectors) = mcp_tool_search_core::rank::embeddings::parse_response(
        embeddings, status, body, inputs, 250,
    ) {
        assert_eq!(vectors.len(), inputs);
        assert!(vectors.iter().all(|v| v.len() == embeddings.dimensions));
    }
}

#[cfg(test)]
#[allow(clippy::panic, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    //! The harness reaches what it claims to feed: a list is rewritten and learned, a search
    //! answered from it, a request classified under a policy.
    use super::*;

    #[test]
    fn a_list_is_rewritten_and_a_search_answered_from_it() {
        let mut worker = Worker::new(list_config(0));
        let call = format::FOLLOW_UPS[0].as_bytes();
        let list = format::SEED_LIST_REQUEST;
        let out = worker.exchange(
            &post_headers(&[], list),
            list,
            false,
            (
                "200",
                "application/json",
                &[format::SEED_LIST.to_vec().as_slice()],
                false,
            ),
        );
        let Outcome::Upstream(body) = out else {
            panic!("{out:?}")
        };
        assert!(String::from_utf8_lossy(&body).contains("tool_search"));
        let out = worker.exchange(
            &post_headers(&[], call),
            call,
            false,
            ("200", "application/json", &[], false),
        );
        let Outcome::Local(200, body) = out else {
            panic!("{out:?}")
        };
        assert!(String::from_utf8_lossy(&body).contains("github_get_issue"));
    }

    #[test]
    fn a_denied_call_is_refused_under_a_policy() {
        let mut input = vec![2, 0, 0];
        input.extend_from_slice(
            b"POST /%6dcp\ncontent-type: application/json\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"stripe_refund\"}}",
        );
        let case = format::request_case(&input).expect("a case");
        let mut worker = Worker::new(request_config(case.config));
        let out = worker.exchange(
            &case.headers,
            &case.body,
            false,
            ("200", "text/plain", &[], false),
        );
        let Outcome::Local(200, body) = out else {
            panic!("{out:?}")
        };
        assert!(String::from_utf8_lossy(&body).contains("Unknown tool"));
    }

    #[test]
    fn the_metadata_identifies_the_caller() {
        let config = request_config(4);
        let head = RequestHead::from_headers(&config, &[], || Some(format::jwt_metadata()));
        assert_eq!(head.caller.values("roles"), ["support", "intern"]);
        assert_eq!(head.caller.values("n"), ["1.5"]);
    }
}
