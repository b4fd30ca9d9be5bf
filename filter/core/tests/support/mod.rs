//! A native harness for `Stream`: the core's `Plugin` on a `MemoryHost`, and a driver that feeds
//! an exchange the way Envoy does (buffered JSON, chunked SSE), shared by the native scenario
//! tests and, through host-shim, the `.wasm` ones.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use mcp_tool_search_core::config::Config;
use mcp_tool_search_core::fetch::{Context, FetchSpec, Origin};
use mcp_tool_search_core::index::catalog::CatalogIndex;
use mcp_tool_search_core::plugin::{
    FetchProgress, FetchStart, HttpCall, MemoryHost, Plugin, PluginEnv,
};
use mcp_tool_search_core::store::CatalogMeta;
use mcp_tool_search_core::store::{Learned, StoreError};
use mcp_tool_search_core::stream::{
    Env, Event, RequestBodyAction, RequestHead, RequestHeadersAction, ResponseHeadersAction, Stream,
};
use mcp_tool_search_core::vector::ToolVectors;
use std::path::PathBuf;
use std::rc::Rc;

pub mod scenarios;

/// Text to vector: the embeddings service in native tests.
pub type Embedder = dyn Fn(&str) -> Vec<f32>;

/// One worker (the core's `Plugin`) on a host in memory, with what the stream recorded kept
/// for assertions. Workers built with [`TestEnv::sharing`] share the host, as Envoy's workers
/// share one process.
pub struct TestEnv {
    pub config: Config,
    pub host: Rc<MemoryHost>,
    pub plugin: Plugin,
    pub events: Vec<Event>,
    pub warnings: Vec<String>,
    pub namespace: String,
    /// The embeddings service as query embedding reaches it (`None`: down).
    pub query_vectors: Option<Rc<Embedder>>,
    /// The embeddings service as background tool embedding reaches it (`None`: down).
    pub tool_embedder: Option<Rc<Embedder>>,
    /// The route's cluster (`None`: unknown, so nothing is fetched) and the request authority.
    pub route: Option<(String, String)>,
    /// The upstream as the filter's own fetches reach it.
    pub upstream: Option<Rc<Upstream>>,
}

/// An upstream answering the filter's own calls: (`:status` or `None` when unreachable,
/// response headers, body).
pub type Upstream = dyn Fn(&HttpCall) -> mcp_tool_search_core::call::CallResponse;

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
        // A worker: it serves streams (`Plugin::on_tick` works only on those).
        let plugin = Plugin::new(config.clone(), format!("test-vm-{vm}"));
        plugin.stream_started();
        TestEnv {
            plugin,
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

    /// What the store knows of a catalog besides its tools.
    pub fn plugin_env_meta(&self, namespace: &str) -> CatalogMeta {
        self.plugin_env().catalog_meta(namespace)
    }

    /// Answers the calls the plugin made with `upstream` until none is left; returns what each
    /// fetch came to.
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
                if let Some(progress) = self.plugin.on_fetch_response(
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

    /// Runs a stream's catalog fetch to its end and hands the stream the result.
    pub fn fetch_for(
        &mut self,
        stream: &mut Stream,
        namespace: &str,
        spec: FetchSpec,
    ) -> RequestBodyAction {
        let config = self.config.clone();
        let result = match self.plugin.start_fetch(self.host.as_ref(), namespace, spec) {
            FetchStart::Started(_) => match self.serve_fetches().pop() {
                Some(FetchProgress::Finished { result, .. }) => result,
                other => panic!("the fetch did not finish: {other:?}"),
            },
            FetchStart::Busy => return stream.on_catalog_settled(&config, self, namespace),
            FetchStart::Failed(e) => Err(e.to_string()),
        };
        stream.on_catalog(&config, self, result)
    }

    pub fn count(&self, want: Event) -> usize {
        self.events.iter().filter(|e| **e == want).count()
    }

    fn plugin_env(&self) -> PluginEnv<'_> {
        let (cluster, authority) = match &self.route {
            Some((c, a)) => (Some(c.clone()), Some(a.clone())),
            None => (None, None),
        };
        self.plugin
            .env(self.host.as_ref(), self.namespace.clone())
            .with_route(cluster, authority)
    }

    /// Runs the background embedding (the root context's tick) until every learned tool has a
    /// vector or the service fails, answering its calls with `tool_embedder`.
    pub fn embed_tools(&mut self) {
        for _ in 0..100 {
            self.plugin.on_tick(self.host.as_ref());
            let calls = self.host.take_calls();
            if calls.is_empty() {
                return;
            }
            for (token, call) in calls {
                let (status, body) = answer(self.tool_embedder.as_deref(), &call.body);
                self.plugin
                    .on_tool_embeddings(self.host.as_ref(), token, status, &body);
            }
            // Past any backoff the worker set after a failure.
            self.host.clock_ms.set(self.host.clock_ms.get() + 120_000);
        }
    }

    /// The query embedding a stream asked for, answered by `query_vectors`.
    pub fn embed_queries(
        &mut self,
        texts: &[String],
    ) -> Result<Vec<Vec<f32>>, mcp_tool_search_core::rank::search::Fallback> {
        self.plugin.embed_queries(self.host.as_ref(), texts)?;
        let (_, call) = self.host.take_calls().pop().unwrap();
        let (status, body) = answer(self.query_vectors.as_deref(), &call.body);
        self.plugin
            .on_query_embeddings(self.host.as_ref(), status, &body, texts.len())
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

impl Env for TestEnv {
    fn namespace(&self) -> String {
        self.namespace.clone()
    }
    fn catalog_of(&mut self, namespace: &str) -> Result<Rc<CatalogIndex>, StoreError> {
        self.plugin_env().catalog_of(namespace)
    }
    fn namespaces(&mut self) -> Vec<String> {
        self.plugin_env().namespaces()
    }
    fn learn(&mut self, learned: Learned) -> Result<bool, StoreError> {
        self.plugin_env().learn(learned)
    }
    fn tool_vectors(&mut self, index: &CatalogIndex) -> Option<Rc<ToolVectors>> {
        self.plugin_env().tool_vectors(index)
    }
    fn embeddings_degraded(&mut self) -> Option<String> {
        self.plugin_env().embeddings_degraded()
    }
    fn embeddings_circuit(&mut self) -> Option<mcp_tool_search_core::store::circuit::Circuit> {
        self.plugin_env().embeddings_circuit()
    }
    fn record(&mut self, event: Event) {
        self.plugin_env().record(event);
        self.events.push(event);
    }
    fn log_warn(&mut self, message: &str) {
        self.plugin_env().log_warn(message);
        self.warnings.push(message.to_string());
    }
    fn now_ms(&self) -> u64 {
        self.plugin_env().now_ms()
    }
    fn origin(&mut self) -> Option<Origin> {
        self.plugin_env().origin()
    }
    fn catalog_meta(&mut self, namespace: &str) -> CatalogMeta {
        self.plugin_env().catalog_meta(namespace)
    }
    fn fetch_spec(
        &mut self,
        origin: Origin,
        context: Context,
        forwarded: Vec<(String, String)>,
    ) -> FetchSpec {
        self.plugin_env().fetch_spec(origin, context, forwarded)
    }
    fn mark_stale(&mut self, namespace: &str) {
        self.plugin_env().mark_stale(namespace);
    }
    fn is_own_fetch(&mut self, marker: &str) -> bool {
        self.plugin_env().is_own_fetch(marker)
    }
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
        }
    }
    pub fn text(&self) -> String {
        String::from_utf8(self.body().to_vec()).unwrap()
    }
}

/// Runs one exchange through a fresh `Stream`. `response` is the upstream's status,
/// content type and body chunks (as Envoy would deliver them).
pub fn exchange(
    env: &mut TestEnv,
    head: RequestHead,
    request: &[u8],
    response: (&str, &str, &[&[u8]]),
) -> Outcome {
    SENT_UPSTREAM.with(|s| *s.borrow_mut() = None);
    let config = env.config.clone();
    let mut stream = Stream::new();
    let action = stream.on_request_headers(&config, env, head, request.is_empty());
    let mut sent = request.to_vec();
    match action {
        RequestHeadersAction::Reply(r) => {
            return Outcome::Local {
                status: r.status,
                headers: r.headers,
                body: r.body,
            }
        }
        RequestHeadersAction::ReadBody { .. } if stream.wants_request_body() => {
            let mut action = stream.on_request_body(&config, env, request);
            if let RequestBodyAction::Fetch { namespace, spec } = action {
                action = env.fetch_for(&mut stream, &namespace, spec);
            }
            if let RequestBodyAction::Call(call) = &action {
                SENT_UPSTREAM.with(|s| *s.borrow_mut() = Some(call.body.clone()));
                let answer = match &env.upstream {
                    Some(upstream) => Ok(upstream(call)),
                    None => Err("no upstream in this test".to_string()),
                };
                action = stream.on_call_answer(&config, env, answer);
            }
            if let RequestBodyAction::Embed { texts } = &action {
                let texts = texts.clone();
                let vectors = env.embed_queries(&texts);
                action = stream.on_query_embeddings(&config, env, vectors);
            }
            match action {
                RequestBodyAction::Reply(r) => {
                    return Outcome::Local {
                        status: r.status,
                        headers: r.headers,
                        body: r.body,
                    }
                }
                RequestBodyAction::Replace { body, .. } => sent = body,
                RequestBodyAction::Continue { .. } => {}
                RequestBodyAction::Embed { .. } => panic!("embedding twice"),
                RequestBodyAction::Fetch { .. } => panic!("fetching twice"),
                RequestBodyAction::Call(_) => panic!("calling twice"),
            }
        }
        _ => {}
    }
    SENT_UPSTREAM.with(|s| *s.borrow_mut() = Some(sent));
    let (status, content_type, chunks) = response;
    let action = stream.on_response_headers(&config, env, Some(status), Some(content_type), None);
    if matches!(
        action,
        ResponseHeadersAction::Continue | ResponseHeadersAction::Watch
    ) {
        if action == ResponseHeadersAction::Watch {
            let n = chunks.len();
            for (i, c) in chunks.iter().enumerate() {
                assert_eq!(stream.on_response_chunk(&config, env, c, i + 1 == n), *c);
            }
        }
        return Outcome::Upstream {
            body: chunks.concat(),
            rewritten: false,
        };
    }
    let mut out = Vec::new();
    let n = chunks.len();
    for (i, c) in chunks.iter().enumerate() {
        out.extend(stream.on_response_chunk(&config, env, c, i + 1 == n));
    }
    if n == 0 {
        out.extend(stream.on_response_chunk(&config, env, &[], true));
    }
    let rewritten = out != chunks.concat();
    Outcome::Upstream {
        body: out,
        rewritten,
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
    let mut parser = mcp_tool_search_core::mcp::sse::Parser::new();
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
    let mut parser = mcp_tool_search_core::mcp::sse::Parser::new();
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
