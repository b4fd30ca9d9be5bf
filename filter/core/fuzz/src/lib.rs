//! What each fuzz target runs, as Envoy runs the filter: a worker (the core's `Root`) on
//! a `MemoryHost`, fed whole exchanges by the core's own driver (`exchange`), so every
//! input goes through the callbacks the `.wasm` runs: the request headers (values as bytes),
//! the body in the pieces a fuzz input picks (`format`), trailers, the calls the filter makes
//! (answered here), and the upstream's response piece by piece. Every target's only oracle is
//! that nothing panics (a panic traps the Envoy worker), plus the few invariants the parsers
//! document (SSE bytes pass through exactly; chunking changes nothing).
//!
//! Setup that cannot fail for the fixed inputs here (the configurations) may `expect`: a panic
//! there is a broken harness, found at once. Nothing under test is unwrapped.

pub mod format;

use mcp_tool_search_core::{
    exchange, replace_data, CallResponse, CallSource, Config, Exchanged, HttpCall,
    ListChangedScanner, MemoryHost, Plugin, Request, RequestHead, Response, Root, SseParser,
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

/// The namespace and route every stream runs on: the route's cluster, which also names the
/// catalog (the `.wasm` replay gives the same cluster).
pub const NAMESPACE: &str = "upstream";

/// One worker: its root on a fresh host, so every input runs alone (a crash reproduces from
/// its input).
pub struct Worker {
    pub host: MemoryHost,
    pub root: Root,
}

/// What the client ends up with, for the few invariants checked on it.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Answered by the filter.
    Local(u32, Vec<u8>),
    /// The upstream's response body as the client receives it.
    Upstream(Vec<u8>),
    /// The filter still holds the request: it waits on something nobody answered.
    Held,
}

impl Outcome {
    /// For failure messages.
    pub fn text(&self) -> String {
        match self {
            Outcome::Local(status, body) => {
                format!("local {status}: {:?}", String::from_utf8_lossy(body))
            }
            Outcome::Upstream(body) => format!("upstream: {:?}", String::from_utf8_lossy(body)),
            Outcome::Held => "held".to_string(),
        }
    }
}

impl From<Exchanged> for Outcome {
    fn from(out: Exchanged) -> Self {
        match out {
            Exchanged::Local(reply) => Outcome::Local(reply.status, reply.body),
            Exchanged::Upstream { response, .. } => Outcome::Upstream(response),
            Exchanged::Held => Outcome::Held,
        }
    }
}

impl Worker {
    pub fn new(config: Config) -> Self {
        let host = MemoryHost::default();
        // A realistic clock: 0 means "never" in catalog ages.
        host.clock_ms.set(1_767_225_600_000);
        // What Envoy gives every stream: the route's cluster, and the dynamic metadata in which
        // `jwt_authn` left the caller's payload (the `jwt_metadata` identity source).
        host.set_property(&["xds", "cluster_name"], NAMESPACE);
        host.properties
            .borrow_mut()
            .insert("metadata".into(), format::jwt_metadata());
        Worker {
            host,
            root: Root::new(Plugin::new(config, "fuzz-vm".into())),
        }
    }

    /// One request through a fresh stream, as Envoy delivers it (`exchange`), the
    /// filter's calls answered by [`answer`].
    pub fn exchange(&self, request: &Request, response: &Response) -> Outcome {
        let embeddings = self
            .root
            .plugin
            .config
            .search
            .embeddings
            .as_ref()
            .map(|e| (e.cluster.as_str(), e.dimensions));
        let mut serve = |call: &HttpCall, _: CallSource| answer(embeddings, call);
        exchange(&self.root, &self.host, request, response, &mut serve).into()
    }

    /// The small catalog the filter learns first, so that searches have tools to rank.
    fn learn_seed_list(&self) {
        self.exchange(
            &post(&[], format::SEED_LIST_REQUEST, 0),
            &upstream_response("200", "application/json", &[format::SEED_LIST], false),
        );
    }
}

/// What answers the filter's calls, without an upstream or an embeddings service to ask:
/// - the embeddings service (`embeddings`: its cluster and dimensions) gives unit vectors for
///   an even number of texts and times out on an odd one, so both the ranking with vectors
///   and its fallback run (tools have no vectors yet: the ranking falls back, as a fresh
///   Envoy's would);
/// - the call `call_tool` stands for reaches an upstream that echoes it as its JSON answer;
/// - a catalog fetch reaches no upstream (nothing answers it).
fn answer(embeddings: Option<(&str, usize)>, call: &HttpCall) -> CallResponse {
    let message = serde_json::from_slice::<serde_json::Value>(&call.body).ok();
    let field = |name: &str| message.as_ref().and_then(|m| m.get(name));
    match embeddings {
        Some((cluster, dimensions)) if cluster == call.cluster => {
            let texts = field("input")
                .and_then(serde_json::Value::as_array)
                .map_or(0, Vec::len);
            if !texts.is_multiple_of(2) {
                return (None, Vec::new(), Vec::new());
            }
            let vector: Vec<&str> = (0..dimensions)
                .map(|i| if i == 0 { "1" } else { "0" })
                .collect();
            let vector = vector.join(",");
            let data: Vec<String> = (0..texts)
                .map(|i| format!(r#"{{"index":{i},"embedding":[{vector}]}}"#))
                .collect();
            let body = format!(r#"{{"data":[{}]}}"#, data.join(","));
            (Some("200".into()), Vec::new(), body.into_bytes())
        }
        _ if field("method").and_then(serde_json::Value::as_str) == Some("tools/call") => (
            Some("200".into()),
            vec![("content-type".into(), "application/json".into())],
            call.body.clone(),
        ),
        _ => (None, Vec::new(), Vec::new()),
    }
}

/// A request as the host delivers it: `headers`, the body in the pieces `chunk_seed` picks
/// (`format::chunks`; none when empty), and trailers after it when `trailers`.
pub fn http_request(
    headers: Vec<(String, Vec<u8>)>,
    body: &[u8],
    chunk_seed: u8,
    trailers: bool,
) -> Request {
    let chunks = if body.is_empty() {
        Vec::new()
    } else {
        format::chunks(body, chunk_seed)
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect()
    };
    Request {
        headers,
        chunks,
        trailers,
    }
}

/// A JSON-RPC `POST` to the MCP path with `extra` headers, its body in the pieces `chunk_seed`
/// picks.
fn post(extra: &[(String, String)], body: &[u8], chunk_seed: u8) -> Request {
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
    http_request(headers, body, chunk_seed, false)
}

/// The upstream's response: status, content type, body pieces, and an empty data frame after
/// them when `empty_final` (Envoy sends one; an empty body is that frame alone). A JSON body
/// carries its `content-length`, as the SDK servers send it.
pub fn upstream_response(
    status: &str,
    content_type: &str,
    pieces: &[&[u8]],
    empty_final: bool,
) -> Response {
    let mut headers = vec![
        (":status".to_string(), status.as_bytes().to_vec()),
        ("content-type".to_string(), content_type.as_bytes().to_vec()),
    ];
    if content_type.starts_with("application/json") {
        let length: usize = pieces.iter().map(|p| p.len()).sum();
        headers.push(("content-length".into(), length.to_string().into_bytes()));
    }
    let mut chunks: Vec<Vec<u8>> = pieces.iter().map(|p| p.to_vec()).collect();
    if empty_final || chunks.is_empty() {
        chunks.push(Vec::new());
    }
    Response {
        headers,
        chunks,
        trailers: false,
    }
}

/// Target `request`: request classification, header checks and authorization, the body in
/// any pieces or cut short by trailers, and the local answers, for any headers (values as any
/// bytes) and body, under every configuration of `format::REQUEST_CONFIGS`. The chunk seed
/// cuts the request body and the upstream's response alike.
pub fn request(data: &[u8]) {
    let Some(case) = format::request_case(data) else {
        return;
    };
    let worker = Worker::new(request_config(case.config));
    worker.learn_seed_list();
    let (status, content_type, body) = case.response;
    let pieces = format::chunks(body, case.chunk_seed);
    worker.exchange(
        &http_request(case.headers, &case.body, case.chunk_seed, case.trailers),
        &upstream_response(status, content_type, &pieces, false),
    );
}

/// Target `list`: the `tools/list` rewrite of any upstream response (JSON or SSE, any chunking,
/// the request body in pieces too), learning it, and a search or helper call answered from
/// what was learned.
pub fn list(data: &[u8]) {
    let Some(case) = format::list_case(data) else {
        return;
    };
    let worker = Worker::new(list_config(case.config));
    let pieces = format::chunks(&case.body, case.chunk_seed);
    let out = worker.exchange(
        &post(&case.headers, &case.request, case.chunk_seed),
        &upstream_response("200", case.content_type, &pieces, case.empty_final_chunk),
    );
    // Whole or in pieces, the client gets the same bytes: chunking is the host's business.
    if case.chunk_seed != 0 || case.empty_final_chunk {
        let whole = Worker::new(list_config(case.config));
        let again = whole.exchange(
            &post(&case.headers, &case.request, 0),
            &upstream_response("200", case.content_type, &[&case.body], false),
        );
        assert!(
            out == again,
            "the chunking changed the client's body:\n{}\nwhole:\n{}",
            out.text(),
            again.text()
        );
    }
    if let Some(call) = &case.follow_up {
        worker.exchange(
            &post(&case.headers, call, 0),
            &upstream_response("200", "application/json", &[], false),
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
    let mut parser = SseParser::new();
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

    let mut whole = SseParser::new();
    let mut again = whole.push(stream);
    let (last, whole_tail) = whole.finish();
    again.extend(last);
    assert_eq!(events, again, "the chunking changed the events");
    assert_eq!(tail, whole_tail);

    // The scanner reads events, not bytes: one push of the whole stream decides as the chunks
    // did, and it never finds a notification whose method is not in the bytes.
    let token: &[u8] = b"\"notifications/tools/list_changed\"";
    let contains = stream.windows(token.len()).any(|w| w == token);
    let at_once = mcp_tool_search_core::ListChangedScanner::default().push(stream);
    assert_eq!(
        found, at_once,
        "the chunking changed the list_changed verdict"
    );
    assert!(
        !found || contains,
        "the list_changed scanner invented a notification"
    );

    for event in &events {
        let data = event.data().unwrap_or_default();
        // The filter only writes data it serialized (compact JSON, no line break); data ending
        // in a line break (an empty last `data:` line) is not written back line for line.
        if data.ends_with(b"\n") {
            continue;
        }
        let rewritten = replace_data(event, data);
        // The rewritten event is an event again, with the same data.
        let mut p = SseParser::new();
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
        let forms = mcp_tool_search_core::path_candidates(path);
        let _ = config.is_mcp_path(&forms);
    }
    let worker = Worker::new(config);
    let _ = worker.root.plugin.tick_period_ms();
    worker.root.on_tick(&worker.host);
    // A request under the parsed configuration, learning the seed list.
    worker.exchange(
        &post(
            &[("x-roles".into(), "support".into())],
            format::SEED_LIST_REQUEST,
            0,
        ),
        &upstream_response("200", "application/json", &[format::SEED_LIST], false),
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
    let words = mcp_tool_search_core::words(&text);
    assert!(words.iter().all(|w| !w.is_empty()));
    let _ = mcp_tool_search_core::terms(&text);
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
    if let Ok(vectors) =
        mcp_tool_search_core::parse_embeddings(embeddings, status, body, inputs, 250)
    {
        assert_eq!(vectors.len(), inputs);
        assert!(vectors.iter().all(|v| v.len() == embeddings.dimensions));
    }
}

#[cfg(test)]
#[allow(clippy::panic, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    //! The harness reaches what it claims to feed: a list is rewritten and learned, a search
    //! answered from it, a request classified under a policy whatever its pieces, a body cut
    //! short by trailers refused, the caller identified from the stream's metadata; and every
    //! committed corpus input runs through its target.
    use super::*;

    /// A request target input: configuration, chunk seed, flags, then the request's text.
    fn request_input(config: u8, chunk_seed: u8, flags: u8, text: &[u8]) -> Vec<u8> {
        let mut input = vec![config, chunk_seed, flags];
        input.extend_from_slice(text);
        input
    }

    /// Runs a request target input as the target does (on `worker`, fresh), and says what the
    /// client got.
    fn run_on(worker: &Worker, input: &[u8]) -> Outcome {
        let case = format::request_case(input).expect("a case");
        worker.learn_seed_list();
        let (status, content_type, body) = case.response;
        worker.exchange(
            &http_request(case.headers, &case.body, case.chunk_seed, case.trailers),
            &upstream_response(
                status,
                content_type,
                &format::chunks(body, case.chunk_seed),
                false,
            ),
        )
    }

    fn run_request(input: &[u8]) -> Outcome {
        let case = format::request_case(input).expect("a case");
        run_on(&Worker::new(request_config(case.config)), input)
    }

    const CALL: &[u8] = b"POST /%6dcp\ncontent-type: application/json\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"stripe_refund\"}}";

    #[test]
    fn a_list_is_rewritten_and_a_search_answered_from_it() {
        let worker = Worker::new(list_config(0));
        let call = format::FOLLOW_UPS[0].as_bytes();
        let list = format::SEED_LIST_REQUEST;
        let out = worker.exchange(
            &post(&[], list, 0),
            &upstream_response("200", "application/json", &[format::SEED_LIST], false),
        );
        let Outcome::Upstream(body) = out else {
            panic!("{out:?}")
        };
        assert!(String::from_utf8_lossy(&body).contains("tool_search"));
        let out = worker.exchange(
            &post(&[], call, 0),
            &upstream_response("200", "application/json", &[], false),
        );
        let Outcome::Local(200, body) = out else {
            panic!("{out:?}")
        };
        assert!(String::from_utf8_lossy(&body).contains("github_get_issue"));
    }

    #[test]
    fn an_sse_list_in_pieces_is_rewritten_as_a_whole_one() {
        let body = [
            b"event: message\ndata: ".as_slice(),
            format::SEED_LIST,
            b"\n\n",
        ]
        .concat();
        let mut outs = Vec::new();
        for (seed, empty_final) in [(0, false), (1, true), (77, false), (200, true)] {
            let worker = Worker::new(list_config(0));
            outs.push(worker.exchange(
                &post(&[], format::SEED_LIST_REQUEST, seed),
                &upstream_response(
                    "200",
                    "text/event-stream",
                    &format::chunks(&body, seed),
                    empty_final,
                ),
            ));
        }
        let Outcome::Upstream(first) = &outs[0] else {
            panic!("{:?}", outs[0])
        };
        assert!(String::from_utf8_lossy(first).contains("tool_search"));
        assert!(outs.iter().all(|o| o == &outs[0]), "{outs:?}");
    }

    #[test]
    fn a_denied_call_is_refused_under_a_policy_in_any_pieces() {
        for seed in [0, 1, 3, 64, 200] {
            let out = run_request(&request_input(2, seed, 0, CALL));
            let Outcome::Local(200, body) = &out else {
                panic!("seed {seed}: {out:?}")
            };
            assert!(String::from_utf8_lossy(body).contains("Unknown tool"));
        }
    }

    #[test]
    fn a_body_cut_short_by_trailers_is_not_sent_on_unread() {
        let out = run_request(&request_input(2, 5, 4, CALL));
        assert!(matches!(out, Outcome::Local(..)), "{out:?}");
    }

    #[test]
    fn the_caller_is_identified_from_the_streams_metadata() {
        // Configuration 4 reads `jwt_metadata`, and has a deny rule: a caller it identifies may
        // call `echo` (no rule names it, the default allows), one it cannot is refused.
        let call = b"POST /mcp\ncontent-type: application/json\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}";
        let input = request_input(4, 0, 0, call);
        let out = run_request(&input);
        assert!(matches!(out, Outcome::Upstream(_)), "{out:?}");
        let worker = Worker::new(request_config(4));
        worker.host.properties.borrow_mut().remove("metadata");
        let out = run_on(&worker, &input);
        let Outcome::Local(200, body) = &out else {
            panic!("{out:?}")
        };
        assert!(String::from_utf8_lossy(body).contains("Unknown tool"));
    }

    #[test]
    fn the_metadata_identifies_the_caller() {
        let config = request_config(4);
        let head = RequestHead::from_headers(&config, &[], || Some(format::jwt_metadata()));
        assert_eq!(head.caller.values("roles"), ["support", "intern"]);
        assert_eq!(head.caller.values("n"), ["1.5"]);
    }

    #[test]
    fn the_embeddings_service_answers_an_even_number_of_texts() {
        let call = |texts: &[&str]| HttpCall {
            cluster: "embeddings".into(),
            headers: Vec::new(),
            body: serde_json::to_vec(&serde_json::json!({"model": "m", "input": texts}))
                .expect("JSON"),
            timeout_ms: 1000,
        };
        let (status, _, body) = answer(Some(("embeddings", 3)), &call(&["a", "b"]));
        assert_eq!(status.as_deref(), Some("200"));
        let embeddings = request_config(7).search.embeddings.expect("embeddings");
        let vectors =
            mcp_tool_search_core::parse_embeddings(&embeddings, status.as_deref(), &body, 2, 250)
                .expect("vectors");
        assert_eq!(vectors, vec![vec![1.0, 0.0, 0.0]; 2]);
        assert_eq!(
            answer(Some(("embeddings", 3)), &call(&["a"])).0,
            None,
            "an odd number of texts times out"
        );
    }

    /// Every committed input of every target runs through it: the harness still reads the
    /// corpus as the campaigns that grew it did.
    #[test]
    fn every_corpus_input_runs_through_its_target() {
        type Target = fn(&[u8]);
        let targets: [(&str, Target); 7] = [
            ("request", request),
            ("list", list),
            ("sse", sse),
            ("config", config),
            ("metadata", metadata),
            ("tokenizer", tokenizer),
            ("embeddings", embeddings),
        ];
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
        for (target, run) in targets {
            let dir = corpus.join(target);
            let mut files: Vec<_> = std::fs::read_dir(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .map(|e| e.expect("an entry").path())
                .collect();
            files.sort();
            assert!(!files.is_empty(), "{}: empty", dir.display());
            for file in files {
                let input = std::fs::read(&file).expect("an input");
                // The panic's own message is printed as it happens; this names the input.
                if std::panic::catch_unwind(|| run(&input)).is_err() {
                    panic!("{target}: {} failed", file.display());
                }
            }
        }
    }
}
