//! How a fuzz input's bytes become an exchange: which configuration, the request, the upstream's
//! response and the pieces each body arrives in. Plain `std`, so that the `.wasm` replay
//! (`wasm-tests/tests/shim_fuzz_replay.rs`, which includes this file by path) reads a corpus
//! file exactly as the native target does.
//!
//! No `arbitrary`: leading bytes pick the configuration, flags and a chunking seed, and the rest
//! is the text a peer would send, so the seeds are readable wire samples and libFuzzer's
//! mutations (and its dictionary of compared strings) work on JSON, SSE and header lines.

/// The configurations the request target runs under: no policy, each identity source of a
/// policy, held headers, list and auto modes, summary results, embeddings, a small body cap.
pub const REQUEST_CONFIGS: [&str; 8] = [
    r#"{}"#,
    r#"{"eager_patterns":["github_get_*","echo"],"group_separator":"_","search":{"result_format":"summary"}}"#,
    r#"{"authorization":{"identity":{"source":"header","header":"x-roles"},"rules":[{"claim":"roles","values":["support"],"tools":["github_*","echo"]},{"claim":"roles","values":["intern"],"tools":["*_delete_*"],"effect":"deny"}],"default":"deny"}}"#,
    r#"{"hold_request_headers":true,"search":{"result_format":"summary"},"authorization":{"identity":{"source":"jwt_header","header":"x-jwt-payload"},"rules":[{"claim":"scope","values":["tools:read"],"tools":["*_get_*","echo"]},{"claim":"realm_access.roles","values":["*"],"tools":["*"],"namespaces":["upstream"]}],"default":"deny"}}"#,
    r#"{"authorization":{"identity":{"source":"jwt_metadata"},"rules":[{"claim":"roles","values":["support"],"tools":["github_*"]},{"claim":"roles","values":["*"],"tools":["*_delete_*"],"effect":"deny"}],"default":"allow"}}"#,
    r#"{"mode":"auto","search_threshold":2,"max_body_bytes":1024,"mcp_paths":["/mcp","/v1/mcp/"],"search":{"http_path":"/tools/search","max_allowable_results":2}}"#,
    r#"{"mode":"list","authorization":{"identity":{"source":"header","header":"x-roles","claim":"groups"},"rules":[{"claim":"groups","values":["*"],"tools":["*"]}],"default":"deny"}}"#,
    r#"{"search":{"ranking":"hybrid","min_cosine":false,"embeddings":{"cluster":"embeddings","model_id":"m","dimensions":3}}}"#,
];

/// The configurations the list target runs under: progressive, eager patterns and groups, auto
/// mode with summaries, the kill switch, policies (header and JWT header identities), the
/// smallest body cap.
pub const LIST_CONFIGS: [&str; 8] = [
    r#"{}"#,
    r#"{"eager_patterns":["github_get_*","echo","get-sum","*time*"],"group_separator":"_"}"#,
    r#"{"mode":"auto","search_threshold":3,"search":{"result_format":"summary","score_threshold":0.2}}"#,
    r#"{"mode":"list"}"#,
    r#"{"eager_patterns":["github_*"],"authorization":{"identity":{"source":"header","header":"x-roles"},"rules":[{"claim":"roles","values":["support"],"tools":["github_*","a*","*e*"]},{"claim":"roles","values":["support"],"tools":["*_delete_*"],"effect":"deny"}],"default":"deny"}}"#,
    r#"{"mode":"list","search":{"result_format":"summary"},"authorization":{"identity":{"source":"header","header":"x-roles"},"rules":[{"claim":"roles","values":["support"],"tools":["*_delete_*"],"effect":"deny"}],"default":"allow"}}"#,
    r#"{"max_body_bytes":1024,"eager_patterns":["*"],"tools":[{"name":"echo","disclosure_mode":"PROGRESSIVE","group":"misc"}]}"#,
    r#"{"hold_request_headers":true,"authorization":{"identity":{"source":"jwt_header","header":"x-jwt-payload"},"rules":[{"claim":"scope","values":["tools:read"],"tools":["*"]}],"default":"deny"}}"#,
];

/// Headers every request carries besides the fuzzed ones: the caller each policy identifies
/// (`support` for the header sources, a JWT payload for `jwt_header`).
pub const CALLER_HEADERS: [(&str, &str); 2] = [
    ("x-roles", "support"),
    // {"scope":"tools:read","realm_access":{"roles":["admin"]}}, base64url.
    (
        "x-jwt-payload",
        "eyJzY29wZSI6InRvb2xzOnJlYWQiLCJyZWFsbV9hY2Nlc3MiOnsicm9sZXMiOlsiYWRtaW4iXX19",
    ),
];

/// Whether a configuration holds request headers (the host must then allow
/// `allow_on_headers_stop_iteration`, as the README requires).
pub fn holds_headers(config: &str) -> bool {
    config.contains(r#""hold_request_headers":true"#)
}

/// The body in the pieces a host delivers it in. Seed 0: whole. Otherwise piece sizes come
/// from a small generator seeded by `seed`, at most 8, 64, 1024 or 16384 bytes (the seed's top
/// two bits), empty pieces included (Envoy delivers empty data frames).
pub fn chunks(body: &[u8], seed: u8) -> Vec<&[u8]> {
    if seed == 0 || body.is_empty() {
        return vec![body];
    }
    let max: u32 = match seed >> 6 {
        0 => 8,
        1 => 64,
        2 => 1024,
        _ => 16384,
    };
    let mut state = u32::from(seed).wrapping_mul(2_654_435_761);
    let mut out = Vec::new();
    let mut rest = body;
    let mut last_empty = false;
    while !rest.is_empty() {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let mut size = ((state >> 16) % (max + 1)) as usize;
        if size == 0 && last_empty {
            size = 1;
        }
        last_empty = size == 0;
        let (piece, tail) = rest.split_at(size.min(rest.len()));
        out.push(piece);
        rest = tail;
    }
    out
}

/// A deterministic generator (SplitMix64) for the replay's own chunkings.
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// A small catalog the filter learns before a fuzzed request, so searches have tools to rank.
pub const SEED_LIST: &[u8] = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"github_get_issue","description":"Get an issue of a GitHub repository","inputSchema":{"type":"object","properties":{"owner":{"type":"string","description":"Who owns it"},"n":{"type":"integer"}},"required":["owner"]}},{"name":"github_delete_repo","description":"Delete a repository","annotations":{"destructiveHint":true},"inputSchema":{}},{"name":"echo","description":"Echoes back","inputSchema":{"type":"object"}},{"name":"timeport","description":"Travel through time","inputSchema":{}}]}}"#;

pub const SEED_LIST_REQUEST: &[u8] =
    br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;

/// A request as the filter receives it: every header (pseudo-headers first, names lowercase,
/// values as bytes: Envoy passes values that are not UTF-8), the body, and how it arrives.
#[derive(Debug, Clone)]
pub struct RequestCase {
    pub config: usize,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
    pub chunk_seed: u8,
    /// The request ends in trailers: the body is never complete in a data frame.
    pub trailers: bool,
    /// The upstream's answer if the request reaches it: (status, content type, body).
    pub response: (&'static str, &'static str, &'static [u8]),
}

/// The responses a request target's upstream gives, chosen by two flag bits.
pub const UPSTREAM_RESPONSES: [(&str, &str, &[u8]); 4] = [
    (
        "200",
        "application/json",
        br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"github_get_issue","description":"Get an issue","inputSchema":{"type":"object"}},{"name":"x_delete_y","inputSchema":{}}],"nextCursor":"2"}}"#,
    ),
    (
        "200",
        "text/event-stream",
        b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"echo\",\"inputSchema\":{}}]}}\n\n",
    ),
    ("500", "text/plain", b"upstream failed"),
    (
        "200",
        "text/event-stream",
        b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
    ),
];

/// `[config][chunk seed][flags]` then `METHOD PATH`, header lines (`name: value`) up to an
/// empty line, and the body. Flags: bits 0-1 the upstream response, bit 2 trailers.
pub fn request_case(data: &[u8]) -> Option<RequestCase> {
    let (&config, rest) = data.split_first()?;
    let (&chunk_seed, rest) = rest.split_first()?;
    let (&flags, rest) = rest.split_first()?;
    let (head, body) = match find(rest, b"\n\n") {
        Some(at) => (rest.get(..at)?, rest.get(at + 2..)?),
        None => (rest, &[][..]),
    };
    let mut lines = head.split(|&b| b == b'\n').map(trim_cr);
    let request_line = lines.next().unwrap_or_default();
    let (method, path) = match request_line.iter().position(|&b| b == b' ') {
        Some(at) => (
            request_line.get(..at).unwrap_or_default(),
            request_line.get(at + 1..).unwrap_or_default(),
        ),
        None => (request_line, &[][..]),
    };
    let mut headers: Vec<(String, Vec<u8>)> = vec![
        (":method".into(), method.to_vec()),
        (":path".into(), path.to_vec()),
        (":authority".into(), b"mcp.test".to_vec()),
        (":scheme".into(), b"http".to_vec()),
    ];
    headers.extend(lines.filter_map(header_line));
    for (name, value) in CALLER_HEADERS {
        if !headers.iter().any(|(n, _)| n == name) {
            headers.push((name.to_string(), value.as_bytes().to_vec()));
        }
    }
    let response = UPSTREAM_RESPONSES
        .get(usize::from(flags & 3))
        .copied()
        .unwrap_or_default();
    Some(RequestCase {
        config: usize::from(config) % REQUEST_CONFIGS.len(),
        headers,
        body: body.to_vec(),
        chunk_seed,
        trailers: flags & 4 != 0,
        response,
    })
}

/// One `name: value` line (a name starting with `:` is a pseudo-header). Names are lowercased
/// and must be UTF-8, as Envoy's codecs hand them over; values stay bytes.
fn header_line(line: &[u8]) -> Option<(String, Vec<u8>)> {
    let from = usize::from(line.first() == Some(&b':'));
    let colon = from + line.get(from..)?.iter().position(|&b| b == b':')?;
    let name = std::str::from_utf8(line.get(..colon)?).ok()?.trim();
    if name.is_empty() {
        return None;
    }
    let value = line.get(colon + 1..)?;
    let start = value
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(value.len());
    Some((name.to_ascii_lowercase(), value.get(start..)?.to_vec()))
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A `tools/list` exchange with a fuzzed upstream response.
#[derive(Debug, Clone)]
pub struct ListCase {
    pub config: usize,
    /// The client's request: extra headers and the JSON-RPC body (always a `tools/list` with
    /// id 2, the id of every captured list in testdata/wire-samples).
    pub headers: Vec<(String, String)>,
    pub request: Vec<u8>,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    pub chunk_seed: u8,
    pub empty_final_chunk: bool,
    /// A `tools/call` sent after the list, answered from what the list taught the filter.
    pub follow_up: Option<Vec<u8>>,
}

pub const LIST_CONTENT_TYPES: [&str; 4] = [
    "application/json",
    "text/event-stream",
    "application/json; charset=utf-8",
    "Text/Event-Stream",
];

/// The follow-up calls, chosen by the chunk seed: searches of each shape, the injected helpers.
pub const FOLLOW_UPS: [&str; 6] = [
    r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"tool_search","arguments":{"query":"get an issue","limit":3}}}"#,
    r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"tool_search","arguments":{"query":"echo","offset":1,"group":"github"}}}"#,
    r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"describe_tool","arguments":{"names":["echo","github_get_issue","x"]}}}"#,
    r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"list_tool_groups","arguments":{}}}"#,
    r#"{"jsonrpc":"2.0","id":"s","method":"tools/list","params":{"query":"time travel game"}}"#,
    r#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"tool_search","arguments":{"query":"\u00e9t\u00e9 \u0130stanbul ß weather","limit":100}}}"#,
];

/// `[config][flags][chunk seed]` then the response body. Flags: bits 0-1 the content type, bit
/// 2 the 2026-07-28 protocol, bit 3 a later page (`cursor`), bit 4 a batch of two lists (ids 2
/// and 3), bit 5 a follow-up call, bit 6 the 2026-07-28 mirrored headers, bit 7 an empty final
/// data frame.
pub fn list_case(data: &[u8]) -> Option<ListCase> {
    let (&config, rest) = data.split_first()?;
    let (&flags, rest) = rest.split_first()?;
    let (&chunk_seed, body) = rest.split_first()?;
    let modern = flags & 4 != 0;
    let params = if flags & 8 != 0 {
        r#"{"cursor":"1"}"#
    } else {
        "{}"
    };
    let one = |id: u32| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{params}}}"#)
    };
    let request = if flags & 16 != 0 {
        format!("[{},{}]", one(2), one(3))
    } else {
        one(2)
    };
    let mut headers = Vec::new();
    if modern {
        headers.push(("mcp-protocol-version".to_string(), "2026-07-28".to_string()));
    }
    if flags & 64 != 0 && flags & 16 == 0 {
        headers.push(("mcp-method".to_string(), "tools/list".to_string()));
    }
    for (name, value) in CALLER_HEADERS {
        headers.push((name.to_string(), value.to_string()));
    }
    let follow_up = (flags & 32 != 0).then(|| {
        FOLLOW_UPS
            .get(usize::from(chunk_seed) % FOLLOW_UPS.len())
            .copied()
            .unwrap_or_default()
            .as_bytes()
            .to_vec()
    });
    Some(ListCase {
        config: usize::from(config) % LIST_CONFIGS.len(),
        headers,
        request: request.into_bytes(),
        content_type: LIST_CONTENT_TYPES
            .get(usize::from(flags & 3))
            .copied()
            .unwrap_or_default(),
        body: body.to_vec(),
        chunk_seed,
        empty_final_chunk: flags & 128 != 0,
        follow_up,
    })
}

/// A serialized `envoy.config.core.v3.Metadata` whose `jwt_authn` entry holds the payload
/// `{"roles": ["support", "intern"], "scope": "tools:read", "n": 1.5, "ok": true}`: what
/// `jwt_authn`'s `payload_in_metadata` leaves for the `jwt_metadata` identity source.
pub fn jwt_metadata() -> Vec<u8> {
    let string = |s: &str| ld(3, s.as_bytes());
    let list = ld(
        6,
        &[ld(1, &string("support")), ld(1, &string("intern"))].concat(),
    );
    let number = [vec![0x11], 1.5f64.to_le_bytes().to_vec()].concat();
    let boolean = vec![0x20, 1];
    let fields = [
        ld(1, &[ld(1, b"roles"), ld(2, &list)].concat()),
        ld(1, &[ld(1, b"scope"), ld(2, &string("tools:read"))].concat()),
        ld(1, &[ld(1, b"n"), ld(2, &number)].concat()),
        ld(1, &[ld(1, b"ok"), ld(2, &boolean)].concat()),
    ]
    .concat();
    let payload = ld(5, &fields);
    let outer = ld(1, &[ld(1, b"jwt_payload"), ld(2, &payload)].concat());
    ld(
        1,
        &[ld(1, b"envoy.filters.http.jwt_authn"), ld(2, &outer)].concat(),
    )
}

/// A length-delimited protobuf field.
fn ld(field: u32, bytes: &[u8]) -> Vec<u8> {
    let mut out = varint(u64::from(field << 3 | 2));
    out.extend(varint(bytes.len() as u64));
    out.extend_from_slice(bytes);
    out
}

fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}
