//! The native test harness: a worker (the core's `Root`) on a `MemoryHost`, fed whole
//! exchanges by the core's own driver (`exchange`), shared by the native scenario tests
//! and, through host-shim, the `.wasm` ones.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use mcp_tool_search_core::{
    Action, CallSource, CatalogMeta, Config, Context, Event, Exchanged, FetchProgress, HttpCall,
    IdentitySource, MemoryHost, MemoryStream, Plugin, Request, RequestHead, Response, Root,
    SseParser, METADATA_KEY,
};
use std::path::PathBuf;
use std::rc::Rc;

pub mod scenarios;

/// Text to vector: the embeddings service in native tests.
pub type Embedder = dyn Fn(&str) -> Vec<f32>;

/// One worker (the core's `Root`) on a host in memory, with what its exchanges recorded
/// kept for assertions. Workers built with [`TestEnv::sharing`] share the host, as Envoy's
/// workers share one process.
pub struct TestEnv {
    pub config: Config,
    pub host: Rc<MemoryHost>,
    pub root: Root,
    /// What this worker's exchanges counted, event by event.
    pub events: Vec<Event>,
    /// What this worker's exchanges logged as warnings.
    pub warnings: Vec<String>,
    /// The route's catalog namespace (route metadata).
    pub namespace: String,
    /// The embeddings service as query embedding reaches it (`None`: down).
    pub query_vectors: Option<Rc<Embedder>>,
    /// The embeddings service as background tool embedding reaches it (`None`: down).
    pub tool_embedder: Option<Rc<Embedder>>,
    /// The route's cluster (`None`: unknown, so nothing is fetched) and the request authority.
    pub route: Option<(String, String)>,
    /// The upstream as the filter's own calls reach it (fetches, the call `call_tool` makes).
    pub upstream: Option<Rc<Upstream>>,
}

/// An upstream answering the filter's own calls: (`:status` or `None` when unreachable,
/// response headers, body).
pub type Upstream = dyn Fn(&HttpCall) -> mcp_tool_search_core::CallResponse;

static NEXT_VM: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl TestEnv {
    pub fn new(config: &str) -> Self {
        let host = MemoryHost::default();
        // A realistic wall clock: 0 means "never" in catalog ages.
        host.clock_ms.set(1_767_225_600_000);
        TestEnv::sharing(config, Rc::new(host))
    }

    /// A worker on the same host as others (their shared data is one).
    pub fn sharing(config: &str, host: Rc<MemoryHost>) -> Self {
        let config = Config::parse(config).unwrap();
        let vm = NEXT_VM.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root = Root::new(Plugin::new(config.clone(), format!("test-vm-{vm}")));
        // A worker: it serves streams (background work runs only on those).
        root.plugin.stream_started();
        TestEnv {
            root,
            config,
            host,
            events: Vec::new(),
            warnings: Vec::new(),
            namespace: "upstream".into(),
            query_vectors: None,
            tool_embedder: None,
            route: None,
            upstream: None,
        }
    }

    pub fn plugin(&self) -> &Plugin {
        &self.root.plugin
    }

    /// What the store knows of a catalog besides its tools.
    pub fn plugin_env_meta(&self, namespace: &str) -> CatalogMeta {
        mcp_tool_search_core::read_meta(self.host.as_ref(), namespace).unwrap_or_default()
    }

    /// Answers the calls made so far (by this worker's root) until none is left; returns what
    /// each fetch came to.
    pub fn serve_fetches(&mut self) -> Vec<FetchProgress> {
        let mut finished = Vec::new();
        for _ in 0..10_000 {
            let calls = self.host.take_calls();
            if calls.is_empty() {
                break;
            }
            for (token, call) in calls {
                let (status, headers, body) = match &self.upstream {
                    Some(upstream) => upstream(&call),
                    None => (None, Vec::new(), Vec::new()),
                };
                if let Some(progress) = self.root.plugin.on_fetch_response(
                    self.host.as_ref(),
                    token,
                    status.as_deref(),
                    &headers,
                    &body,
                ) {
                    if matches!(progress, FetchProgress::Finished { .. }) {
                        finished.push(progress);
                    }
                }
            }
        }
        finished
    }

    pub fn count(&self, want: Event) -> usize {
        self.events.iter().filter(|e| **e == want).count()
    }

    /// Runs the background embedding (the root's tick) until every learned tool has a vector
    /// or the service fails, answering its calls with `tool_embedder`.
    pub fn embed_tools(&mut self) {
        for _ in 0..100 {
            if !self.tick() {
                return;
            }
            // Past any backoff the worker set after a failure.
            self.host.clock_ms.set(self.host.clock_ms.get() + 120_000);
        }
    }

    /// One tick of the root's background work at the host's clock, its calls answered by the
    /// services; whether it made any.
    pub fn tick(&mut self) -> bool {
        let after = self.host.last_token();
        self.host.enter(0);
        self.root.plugin.on_tick(self.host.as_ref());
        if self.host.last_token() == after {
            return false;
        }
        let mut serve = self.service();
        self.host.answer_calls(&self.root, None, after, &mut serve);
        true
    }

    /// What answers the filter's calls: the embeddings services (by cluster and who calls),
    /// else the upstream.
    fn service(&self) -> impl FnMut(&HttpCall, CallSource) -> mcp_tool_search_core::CallResponse {
        let embeddings = self
            .config
            .search
            .embeddings
            .as_ref()
            .map(|e| e.cluster.clone());
        let query = self.query_vectors.clone();
        let tools = self.tool_embedder.clone();
        let upstream = self.upstream.clone();
        move |call: &HttpCall, source: CallSource| {
            if embeddings.as_deref() == Some(call.cluster.as_str()) {
                let service = match source {
                    CallSource::Stream => query.as_deref(),
                    CallSource::Root => tools.as_deref(),
                };
                let (status, body) = answer(service, &call.body);
                return (status.map(str::to_string), Vec::new(), body);
            }
            // The call `call_tool` stands for is what reaches the upstream (a fetch is not).
            let method = serde_json::from_slice::<serde_json::Value>(&call.body)
                .ok()
                .and_then(|m| m["method"].as_str().map(str::to_string));
            if source == CallSource::Stream && method.as_deref() == Some("tools/call") {
                SENT_UPSTREAM.with(|s| *s.borrow_mut() = Some(call.body.clone()));
            }
            match &upstream {
                Some(upstream) => upstream(call),
                None => (None, Vec::new(), Vec::new()),
            }
        }
    }

    /// The route's properties as Envoy gives them to the stream.
    fn set_route(&self) {
        if let Some((cluster, _)) = &self.route {
            self.host.set_property(&["xds", "cluster_name"], cluster);
        }
        self.host.set_property(
            &[
                "xds",
                "route_metadata",
                "filter_metadata",
                METADATA_KEY,
                "namespace",
            ],
            &self.namespace,
        );
    }

    /// Only the request headers of a fresh stream: what the filter answers (`Pause`: it holds
    /// them for the body) and the headers that go on.
    pub fn request_headers_only(
        &mut self,
        head: RequestHead,
        end_of_stream: bool,
    ) -> (Action, Vec<(String, Vec<u8>)>) {
        let (mut stream, id) = self.open(&head, b"");
        let action = stream.on_request_headers(&self.root, self.host.as_ref(), end_of_stream);
        (action, self.host.stream(id).request_headers)
    }

    /// A fresh stream of this worker with the request's headers at the host.
    fn open(&mut self, head: &RequestHead, body: &[u8]) -> (Context, u32) {
        self.set_route();
        let id = self.host.next_context_id();
        let headers = self.request_headers(head, body);
        self.host.streams.borrow_mut().insert(
            id,
            MemoryStream {
                request_headers: headers,
                ..Default::default()
            },
        );
        self.host.enter(id);
        (self.root.context(id), id)
    }

    /// A stream given the request's headers and whole body, left where the filter leaves it
    /// (waiting on a call or another worker's fetch, say); the calls it made are not answered.
    pub fn start(&mut self, head: RequestHead, body: &[u8]) -> (Context, u32) {
        let (mut stream, id) = self.start_headers(head, body);
        self.send_body(&mut stream, id, body);
        (stream, id)
    }

    /// A fresh stream given only its request headers (the body `body` announced by them).
    pub fn start_headers(&mut self, head: RequestHead, body: &[u8]) -> (Context, u32) {
        let (mut stream, id) = self.open(&head, body);
        let _ = stream.on_request_headers(&self.root, self.host.as_ref(), false);
        (stream, id)
    }

    /// The whole request body of stream `id`, started with [`TestEnv::start_headers`].
    pub fn send_body(&mut self, stream: &mut Context, id: u32, body: &[u8]) {
        if let Some(s) = self.host.streams.borrow_mut().get_mut(&id) {
            s.request_body = body.to_vec();
        }
        self.host.enter(id);
        let _ = stream.on_request_body(&self.root, self.host.as_ref(), body.len(), true);
    }

    /// Answers every call this worker's streams and root have made with its services.
    pub fn answer(&mut self, stream: Option<&mut Context>) {
        let mut serve = self.service();
        self.host.answer_calls(&self.root, stream, 0, &mut serve);
    }

    /// The request as the client sends it: the head's headers, the caller's identity in the
    /// header the policy reads, the route's authority.
    pub fn request_headers(&self, head: &RequestHead, body: &[u8]) -> Vec<(String, Vec<u8>)> {
        let mut headers: Vec<(String, String)> = Vec::new();
        if !head.headers.is_empty() {
            // Every header as sent, with the request line the test gave.
            headers = head.headers.clone();
            for (name, value) in [(":method", &head.method), (":path", &head.path)] {
                headers.retain(|(k, _)| k != name);
                headers.push((name.to_string(), value.clone()));
            }
        } else {
            headers.push((":method".into(), head.method.clone()));
            headers.push((":path".into(), head.path.clone()));
            // Clients ask for compression; the filter must strip it where it rewrites.
            headers.push(("accept-encoding".into(), "gzip, deflate".into()));
            let authority = head
                .authority
                .clone()
                .or_else(|| self.route.as_ref().map(|(_, a)| a.clone()));
            if let Some(a) = authority {
                headers.push((":authority".into(), a));
            }
            if let Some(accept) = &head.accept {
                headers.push(("accept".into(), accept.clone()));
            }
            if let Some(id) = &head.session_id {
                headers.push(("mcp-session-id".into(), id.clone()));
            }
            let mirrored = [
                ("mcp-method", &head.mcp.method),
                ("mcp-name", &head.mcp.name),
                ("mcp-protocol-version", &head.mcp.protocol_version),
            ];
            for (name, values) in mirrored {
                headers.extend(values.iter().map(|v| (name.to_string(), v.clone())));
            }
            if head.content_type.is_empty() && !body.is_empty() {
                headers.push(("content-type".into(), "application/json".into()));
            }
            headers.extend(
                head.content_type
                    .iter()
                    .map(|v| ("content-type".to_string(), v.clone())),
            );
            headers.extend(
                head.content_encoding
                    .iter()
                    .map(|v| ("content-encoding".to_string(), v.clone())),
            );
            match head.content_length {
                Some(length) => headers.push(("content-length".into(), length.to_string())),
                None if !body.is_empty() => {
                    headers.push(("content-length".into(), body.len().to_string()))
                }
                None => {}
            }
            headers.extend(head.forwarded.iter().cloned());
            if let Some(marker) = &head.fetch_marker {
                headers.push((mcp_tool_search_core::MARKER_HEADER.into(), marker.clone()));
            }
            if let Some(policy) = &self.config.authorization {
                if let IdentitySource::Header { header, claim } = &policy.identity {
                    let values = head.caller.values(claim);
                    let sent = headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(header));
                    if !values.is_empty() && !sent {
                        headers.push((header.clone(), values.join(",")));
                    }
                }
            }
        }
        for name in &head.invalid_utf8 {
            if !headers.iter().any(|(k, _)| k == name) {
                headers.push((name.clone(), String::new()));
            }
        }
        // A header the head names as not UTF-8 is sent with a byte that is not.
        headers
            .into_iter()
            .map(|(k, v)| {
                let mut value = v.into_bytes();
                if head.invalid_utf8.contains(&k) {
                    value.push(0xff);
                }
                (k, value)
            })
            .collect()
    }
}

/// The embeddings service's answer to an OpenAI request body: `None` status when it is down.
fn answer(service: Option<&Embedder>, request: &[u8]) -> (Option<&'static str>, Vec<u8>) {
    let Some(service) = service else {
        return (None, Vec::new());
    };
    let request: serde_json::Value = serde_json::from_slice(request).unwrap();
    let data: Vec<serde_json::Value> = request["input"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"index": i, "embedding": service(t.as_str().unwrap())}))
        .collect();
    (
        Some("200"),
        serde_json::to_vec(&serde_json::json!({"data": data})).unwrap(),
    )
}

pub fn post(path: &str) -> RequestHead {
    RequestHead {
        method: "POST".into(),
        path: path.into(),
        accept: Some("application/json, text/event-stream".into()),
        ..RequestHead::default()
    }
}

/// A `GET` of `path` (the HTTP endpoint's health and groups view).
pub fn get(path: &str) -> RequestHead {
    RequestHead {
        method: "GET".into(),
        ..post(path)
    }
}

/// The JSON-RPC result of a local reply, and the JSON array in its first text content.
pub fn local_result(out: &Outcome) -> (serde_json::Value, serde_json::Value) {
    let Outcome::Local {
        status: 200, body, ..
    } = out
    else {
        panic!("not a local reply: {out:?}")
    };
    let reply: serde_json::Value = serde_json::from_slice(body).unwrap();
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("null")
        .to_string();
    let parsed = serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text));
    (reply, parsed)
}

/// What the client ends up with.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Answered by the filter; the upstream never saw the request.
    Local {
        status: u32,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// The upstream's response as the client receives it.
    Upstream { body: Vec<u8>, rewritten: bool },
    /// The filter still holds the request (it waits on something nobody answered).
    Held,
}

// What reached the upstream in the last exchange of this thread (`None`: nothing).
thread_local! {
    pub static SENT_UPSTREAM: std::cell::RefCell<Option<Vec<u8>>> = const { std::cell::RefCell::new(None) };
}

/// The request body the upstream received in this thread's last exchange.
pub fn sent_upstream() -> Option<Vec<u8>> {
    SENT_UPSTREAM.with(|s| s.borrow().clone())
}

impl Outcome {
    pub fn body(&self) -> &[u8] {
        match self {
            Outcome::Local { body, .. } | Outcome::Upstream { body, .. } => body,
            Outcome::Held => &[],
        }
    }
    pub fn text(&self) -> String {
        String::from_utf8(self.body().to_vec()).unwrap()
    }
}

/// The upstream's response as it reaches the filter: status, content type (none if empty) and
/// body pieces; a JSON body carries its `content-length`, as the SDK servers send it.
pub fn upstream_response(status: &str, content_type: &str, chunks: &[&[u8]]) -> Response {
    let mut headers = vec![(":status".to_string(), status.as_bytes().to_vec())];
    if !content_type.is_empty() {
        headers.push(("content-type".into(), content_type.as_bytes().to_vec()));
    }
    if content_type.starts_with("application/json") {
        let length: usize = chunks.iter().map(|c| c.len()).sum();
        headers.push(("content-length".into(), length.to_string().into_bytes()));
    }
    Response {
        headers,
        chunks: chunks.iter().map(|c| c.to_vec()).collect(),
        trailers: false,
    }
}

/// Runs one exchange through a fresh stream of this worker, as Envoy delivers it
/// (`exchange`). `response` is the upstream's status, content type and body pieces.
pub fn exchange(
    env: &mut TestEnv,
    head: RequestHead,
    request: &[u8],
    response: (&str, &str, &[&[u8]]),
) -> Outcome {
    let request = Request {
        headers: env.request_headers(&head, request),
        chunks: if request.is_empty() {
            Vec::new()
        } else {
            vec![request.to_vec()]
        },
        trailers: false,
    };
    exchange_request(env, &request, response)
}

/// [`exchange`] of a request given as the host delivers it (headers, body pieces, trailers).
pub fn exchange_request(
    env: &mut TestEnv,
    request: &Request,
    response: (&str, &str, &[&[u8]]),
) -> Outcome {
    let (status, content_type, chunks) = response;
    let out = exchange_raw(
        env,
        request,
        &upstream_response(status, content_type, chunks),
    );
    outcome(out, &chunks.concat())
}

/// One exchange as the host sees it, headers included, recorded in the worker's events and
/// warnings.
pub fn exchange_raw(env: &mut TestEnv, request: &Request, response: &Response) -> Exchanged {
    SENT_UPSTREAM.with(|s| *s.borrow_mut() = None);
    env.set_route();
    let counted = env.host.increments.borrow().len();
    let logged = env.host.logs.borrow().len();
    let mut serve = env.service();
    let out =
        mcp_tool_search_core::exchange(&env.root, env.host.as_ref(), request, response, &mut serve);
    drop(serve);
    env.events.extend(
        env.host.increments.borrow()[counted..]
            .iter()
            .filter_map(|&(stat, by)| Event::from_stat(stat, by)),
    );
    env.warnings.extend(
        env.host.logs.borrow()[logged..]
            .iter()
            .filter(|(level, _)| *level <= mcp_tool_search_core::Level::Warn)
            .map(|(_, m)| m.clone()),
    );
    if let Exchanged::Upstream { sent, .. } = &out {
        if sent_upstream().is_none() {
            SENT_UPSTREAM.with(|s| *s.borrow_mut() = Some(sent.clone()));
        }
    }
    out
}

/// What the client ends up with, from what the host saw; `upstream`: the response body the
/// upstream sent.
fn outcome(out: Exchanged, upstream: &[u8]) -> Outcome {
    match out {
        Exchanged::Local(reply) => Outcome::Local {
            status: reply.status,
            headers: reply.headers,
            body: reply.body,
        },
        Exchanged::Upstream { response: body, .. } => {
            let rewritten = body != upstream;
            Outcome::Upstream { body, rewritten }
        }
        Exchanged::Held => Outcome::Held,
    }
}

pub fn wire_dir() -> PathBuf {
    // This file is compiled into the core's tests and into wasm-tests: find the repository's
    // testdata from whichever crate it is.
    let start = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    start
        .ancestors()
        .map(|dir| dir.join("testdata/wire-samples"))
        .find(|dir| dir.is_dir())
        .unwrap()
}

pub fn wire(name: &str) -> Vec<u8> {
    std::fs::read(wire_dir().join(name)).unwrap()
}

/// The content type recorded in a `.headers` file.
pub fn wire_content_type(name: &str) -> String {
    let text = String::from_utf8(wire(name)).unwrap();
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-type")
                .then(|| v.trim().to_string())
        })
        .unwrap()
}

/// The JSON-RPC messages in a body: the JSON itself, or each SSE event's data.
pub fn messages(body: &[u8], sse: bool) -> Vec<serde_json::Value> {
    if !sse {
        return vec![serde_json::from_slice(body).unwrap()];
    }
    let mut parser = SseParser::new();
    let mut events = parser.push(body);
    events.extend(parser.finish().0);
    events
        .iter()
        .filter_map(|e| e.data())
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_slice(d).unwrap())
        .collect()
}

/// The native driver of the shared scenarios.
impl scenarios::Driver for TestEnv {
    fn with_config(config: &str) -> Self {
        TestEnv::new(config)
    }
    fn two_workers(config: &str) -> (Self, Self) {
        let host = Rc::new(MemoryHost::default());
        (
            TestEnv::sharing(config, Rc::clone(&host)),
            TestEnv::sharing(config, host),
        )
    }
    fn exchange(
        &mut self,
        head: RequestHead,
        request: &[u8],
        response: (&str, &str, &[&[u8]]),
    ) -> Outcome {
        exchange(self, head, request, response)
    }
    fn count(&self, event: Event) -> u64 {
        TestEnv::count(self, event) as u64
    }
    fn events_total(&self) -> u64 {
        self.events.iter().map(|e| e.stat().1).sum()
    }
}

/// The response message's JSON text: the body, or the data of the last SSE event that has some.
pub fn response_data(body: &[u8], sse: bool) -> Vec<u8> {
    if !sse {
        return body.to_vec();
    }
    let mut parser = SseParser::new();
    let mut events = parser.push(body);
    events.extend(parser.finish().0);
    events
        .iter()
        .filter_map(|e| e.data())
        .rfind(|d| !d.is_empty())
        .expect("an event with data")
        .to_vec()
}

/// Each tool definition of a `tools/list` response, as the exact bytes it was written with.
pub fn raw_tools(data: &[u8]) -> Vec<String> {
    let message: std::collections::HashMap<String, Box<serde_json::value::RawValue>> =
        serde_json::from_slice(data).unwrap();
    let result: std::collections::HashMap<String, Box<serde_json::value::RawValue>> =
        serde_json::from_str(message["result"].get()).unwrap();
    let tools: Vec<Box<serde_json::value::RawValue>> =
        serde_json::from_str(result["tools"].get()).unwrap();
    tools.iter().map(|t| t.get().to_owned()).collect()
}

/// The rewritten list keeps, after the search tool, the `kept` upstream definitions byte for
/// byte, in upstream order, and each is in the body the client receives.
pub fn assert_definitions_kept_verbatim<K: AsRef<str> + std::fmt::Debug>(
    name: &str,
    original: &[u8],
    rewritten: &[u8],
    sse: bool,
    kept: &[K],
) {
    let name_of =
        |raw: &str| serde_json::from_str::<serde_json::Value>(raw).unwrap()["name"].clone();
    let upstream: Vec<String> = raw_tools(&response_data(original, sse))
        .into_iter()
        .filter(|raw| kept.iter().any(|k| name_of(raw) == k.as_ref()))
        .collect();
    assert_eq!(upstream.len(), kept.len(), "{name}: {kept:?}");
    let data = response_data(rewritten, sse);
    let listed = raw_tools(&data);
    assert_eq!(listed.len(), kept.len() + 1, "{name}");
    assert_eq!(name_of(&listed[0]), "tool_search", "{name}");
    let data = String::from_utf8(data).unwrap();
    for (got, want) in listed[1..].iter().zip(&upstream) {
        assert_eq!(got, want, "{name}: a kept definition changed bytes");
        assert!(data.contains(want.as_str()), "{name}: {want}");
    }
}

/// A list result of `member` (`tools`, `prompts`) holding `(name, description)` entries.
pub fn list_of(member: &str, entries: &[(&str, &str)]) -> Vec<u8> {
    use serde_json::{json, Value};
    let entries: Vec<Value> = entries
        .iter()
        .map(|(n, d)| json!({"name": n, "description": d, "inputSchema": {"type": "object"}}))
        .collect();
    serde_json::to_vec(&json!({"jsonrpc":"2.0","id":1,"result":{member: entries}})).unwrap()
}
