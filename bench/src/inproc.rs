//! Cost inside the VM: the filter's core natively (the `mcp-tool-search` crate: index build,
//! search, and whole `Stream` exchanges over in-memory shared data) and the real `.wasm` in the
//! host-shim (wasmtime), with the linear memory of each VM.

use crate::vmmem;
use host_shim::{Host, HttpMessage, LogLevel, Outcome, Vm, VmOptions, WasmModule};
use mcp_tool_search::catalog::{Catalog, CatalogIndex, Page, Tool};
use mcp_tool_search::config::Config;
use mcp_tool_search::search::{self, Fallback, FallbackKind, Query};
use mcp_tool_search::store::{CatalogCache, MemorySharedData, StoreError};
use mcp_tool_search::stream::{
    Env, Event, RequestBodyAction, RequestHead, RequestHeadersAction, ResponseHeadersAction, Stream,
};
use serde_json::value::RawValue;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

pub type Result<T> = std::result::Result<T, String>;

/// What Envoy delivers per body callback in the shim and native runs (a large list arrives in
/// pieces; the filter reads each once).
pub const RESPONSE_CHUNK: usize = 64 * 1024;

/// The measurements at one catalog size.
#[derive(Debug, Clone, Default)]
pub struct SizeCosts {
    pub tools: usize,
    pub list_json_bytes: usize,
    pub stored_bytes: usize,
    // Native kernels.
    pub native_parse: Duration,
    pub native_build: Duration,
    pub native_search: Duration,
    // Native `Stream` exchanges (the same code path as in the VM, without a host).
    pub native_list_json: Duration,
    pub native_list_sse: Duration,
    pub native_first_search: Duration,
    pub native_search_exchange: Duration,
    // The .wasm in the shim.
    pub wasm_noop_small: Duration,
    pub wasm_noop_list: Duration,
    pub wasm_first_list: Duration,
    pub wasm_list_json: Duration,
    pub wasm_list_sse: Duration,
    pub wasm_first_search: Duration,
    pub wasm_search_exchange: Duration,
    /// Linear memory (bytes) of a VM that rewrote lists and searched.
    pub mem_list_vm: Option<u64>,
    /// Linear memory of a VM that only searched (another worker: it built its index from shared
    /// data).
    pub mem_search_vm: Option<u64>,
    /// Linear memory of a freshly configured VM.
    pub mem_fresh_vm: Option<u64>,
    pub found_first: String,
}

impl SizeCosts {
    /// In-VM index build: the first search of a VM (read the shared catalog, parse, build, then
    /// search) minus a later search.
    pub fn wasm_build(&self) -> Duration {
        self.wasm_first_search
            .saturating_sub(self.wasm_search_exchange)
    }

    pub fn native_build_exchange(&self) -> Duration {
        self.native_first_search
            .saturating_sub(self.native_search_exchange)
    }

    /// A search exchange in the VM minus the shim's cost of an exchange the filter ignores.
    pub fn wasm_search_net(&self) -> Duration {
        self.wasm_search_exchange
            .saturating_sub(self.wasm_noop_small)
    }

    pub fn wasm_list_net(&self) -> Duration {
        self.wasm_list_json.saturating_sub(self.wasm_noop_list)
    }
}

/// The plugin configuration used everywhere (Envoy adds its `mcp_paths`).
pub fn plugin_config(mcp_paths: &[String]) -> String {
    let paths: Vec<String> = mcp_paths.iter().map(|p| format!("\"{p}\"")).collect();
    format!(
        "{{\"mcp_paths\":[{}],\"hold_request_headers\":true,\"max_body_bytes\":33554432,\"eager_patterns\":[\"github_get_*\"]}}",
        paths.join(",")
    )
}

pub fn list_request() -> String {
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#.to_owned()
}

pub fn search_request(id: usize, query: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"tool_search","arguments":{{"query":{},"limit":5}}}}}}"#,
        serde_json::Value::String(query.to_owned())
    )
}

/// The list response an upstream sends, as JSON and as one SSE event.
pub fn list_response(jsonl: &str) -> (String, String) {
    let tools: Vec<&str> = jsonl.lines().filter(|l| !l.trim().is_empty()).collect();
    let json = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{}]}}}}"#,
        tools.join(",")
    );
    let sse = format!("event: message\ndata: {json}\n\n");
    (json, sse)
}

fn parse_tools(jsonl: &str) -> Result<Vec<Tool>> {
    jsonl
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let raw: Box<RawValue> = serde_json::from_str(l).map_err(|e| e.to_string())?;
            Tool::from_raw(&raw).map_err(|e| e.to_string())
        })
        .collect()
}

/// Runs `f` at least `min` times and until `budget` is spent (at most `max` times); the
/// durations it returned.
fn reps(
    min: usize,
    max: usize,
    budget: Duration,
    mut f: impl FnMut() -> Result<Duration>,
) -> Result<Vec<Duration>> {
    let start = Instant::now();
    let mut out = Vec::new();
    while out.len() < min || (out.len() < max && start.elapsed() < budget) {
        out.push(f()?);
    }
    Ok(out)
}

pub fn median(v: &[Duration]) -> Duration {
    let mut s = v.to_vec();
    s.sort_unstable();
    s.get(s.len() / 2).copied().unwrap_or_default()
}

/// This thread's CPU time. In-process figures are CPU time, not wall time: on a shared machine
/// a descheduled thread would otherwise count other processes' work.
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = thread_cpu();
    let r = f();
    (r, thread_cpu().saturating_sub(t))
}

// ---- native -------------------------------------------------------------------------------------

struct NativeEnv {
    config: Config,
    shared: Rc<MemorySharedData>,
    cache: CatalogCache,
}

impl Env for NativeEnv {
    fn namespace(&self) -> String {
        "bench".to_owned()
    }
    fn catalog_of(&mut self, namespace: &str) -> std::result::Result<Rc<CatalogIndex>, StoreError> {
        self.cache
            .index(self.shared.as_ref(), namespace, &self.config)
    }
    fn learn(&mut self, page: &[Tool], at: Page) -> std::result::Result<bool, StoreError> {
        self.cache.learn(self.shared.as_ref(), "bench", page, at)
    }
    fn namespaces(&mut self) -> Vec<String> {
        mcp_tool_search::store::namespaces(self.shared.as_ref()).unwrap_or_default()
    }
    fn record(&mut self, _event: Event) {}
    fn log_warn(&mut self, _message: &str) {}
}

fn head() -> RequestHead {
    RequestHead {
        method: "POST".into(),
        path: "/mcp".into(),
        accept: Some("application/json, text/event-stream".into()),
        protocol_version: Some("2025-11-25".into()),
        ..RequestHead::default()
    }
}

/// A search through `Stream`: the local reply's body.
fn native_search(env: &mut NativeEnv, body: &[u8]) -> Result<Vec<u8>> {
    let config = env.config.clone();
    let mut s = Stream::new();
    match s.on_request_headers(&config, env, head(), false) {
        RequestHeadersAction::ReadBody { .. } => {}
        other => return Err(format!("search headers: {other:?}")),
    }
    match s.on_request_body(&config, env, body) {
        RequestBodyAction::Reply(r) if r.status == 200 => Ok(r.body),
        other => Err(format!("search body: {other:?}")),
    }
}

/// A list through `Stream`: the body the client gets.
fn native_list(
    env: &mut NativeEnv,
    request: &[u8],
    content_type: &str,
    response: &[u8],
) -> Result<Vec<u8>> {
    let config = env.config.clone();
    let mut s = Stream::new();
    match s.on_request_headers(&config, env, head(), false) {
        RequestHeadersAction::ReadBody { .. } => {}
        other => return Err(format!("list headers: {other:?}")),
    }
    match s.on_request_body(&config, env, request) {
        RequestBodyAction::Continue { .. } => {}
        other => return Err(format!("list body: {other:?}")),
    }
    match s.on_response_headers(&config, env, Some("200"), Some(content_type), None) {
        ResponseHeadersAction::RewriteBody => {}
        other => return Err(format!("list response not rewritten: {other:?}")),
    }
    let mut out = Vec::new();
    let chunks: Vec<&[u8]> = response.chunks(RESPONSE_CHUNK).collect();
    let n = chunks.len();
    for (i, c) in chunks.into_iter().enumerate() {
        out.extend(s.on_response_chunk(&config, env, c, i + 1 == n));
    }
    Ok(out)
}

/// Native figures at one size; fills the native fields of `costs`.
pub fn native(
    costs: &mut SizeCosts,
    jsonl: &str,
    queries: &[&str],
    budget: Duration,
) -> Result<()> {
    let config = Config::parse(&plugin_config(&["/mcp".to_owned()])).map_err(|e| e.to_string())?;
    let tools = parse_tools(jsonl)?;
    let catalog = Catalog::from_tools(tools);
    costs.tools = catalog.len();
    let stored = catalog.to_json();
    costs.stored_bytes = stored.len();

    // Kernels: parse the stored catalog, build the index, search it.
    let parse = reps(3, 200, budget, || {
        let (c, d) = timed(|| Catalog::from_json(&stored));
        c.map_err(|e| e.to_string())?;
        Ok(d)
    })?;
    costs.native_parse = median(&parse);
    let build = reps(3, 200, budget, || {
        let c = catalog.clone();
        let (index, d) = timed(|| CatalogIndex::build("bench", c, &config));
        drop(index);
        Ok(d)
    })?;
    costs.native_build = median(&build);
    let index = CatalogIndex::build("bench", catalog.clone(), &config);
    let mut qi = 0usize;
    let searches = reps(200, 100_000, budget, || {
        let text = queries
            .get(qi % queries.len().max(1))
            .copied()
            .unwrap_or("issue");
        qi += 1;
        let q = Query {
            text: text.to_owned(),
            limit: 5,
            offset: 0,
            group: None,
        };
        let (r, d) = timed(|| {
            search::search(
                &index,
                &config,
                &q,
                &|_| true,
                Err(Fallback::new(FallbackKind::Unavailable, "bm25 only")),
            )
        });
        if r.found.is_empty() {
            return Err(format!("no result for {text:?}"));
        }
        Ok(d)
    })?;
    costs.native_search = median(&searches);
    if let Some(q) = queries.first() {
        let q = Query {
            text: (*q).to_owned(),
            limit: 1,
            offset: 0,
            group: None,
        };
        let r = search::search(
            &index,
            &config,
            &q,
            &|_| true,
            Err(Fallback::new(FallbackKind::Unavailable, "-")),
        );
        costs.found_first = r
            .found
            .first()
            .map(|f| f.tool.name.clone())
            .unwrap_or_default();
    }

    // Whole exchanges through the same `Stream` code the VM runs.
    let (list_json, list_sse) = list_response(jsonl);
    costs.list_json_bytes = list_json.len();
    let request = list_request();
    let shared = Rc::new(MemorySharedData::default());
    let mut env = NativeEnv {
        config: config.clone(),
        shared: Rc::clone(&shared),
        cache: CatalogCache::new(),
    };
    let first = native_list(
        &mut env,
        request.as_bytes(),
        "application/json",
        list_json.as_bytes(),
    )?;
    if !String::from_utf8_lossy(&first).contains("tool_search") {
        return Err("native list: no tool_search in the rewritten list".to_owned());
    }
    let lists = reps(3, 100, budget, || {
        let (out, d) = timed(|| {
            native_list(
                &mut env,
                request.as_bytes(),
                "application/json",
                list_json.as_bytes(),
            )
        });
        out?;
        Ok(d)
    })?;
    costs.native_list_json = median(&lists);
    let lists = reps(3, 100, budget, || {
        let (out, d) = timed(|| {
            native_list(
                &mut env,
                request.as_bytes(),
                "text/event-stream",
                list_sse.as_bytes(),
            )
        });
        out?;
        Ok(d)
    })?;
    costs.native_list_sse = median(&lists);
    let bodies: Vec<String> = queries
        .iter()
        .enumerate()
        .map(|(i, q)| search_request(i + 1, q))
        .collect();
    // A "fresh worker": a new cache over the same shared data builds its index on first search.
    let firsts = reps(3, 50, budget, || {
        let mut fresh = NativeEnv {
            config: config.clone(),
            shared: Rc::clone(&shared),
            cache: CatalogCache::new(),
        };
        let body = bodies.first().ok_or("no queries")?;
        let (out, d) = timed(|| native_search(&mut fresh, body.as_bytes()));
        out?;
        Ok(d)
    })?;
    costs.native_first_search = median(&firsts);
    let mut bi = 0usize;
    let steady = reps(200, 100_000, budget, || {
        let body = bodies.get(bi % bodies.len().max(1)).ok_or("no queries")?;
        bi += 1;
        let (out, d) = timed(|| native_search(&mut env, body.as_bytes()));
        out?;
        Ok(d)
    })?;
    costs.native_search_exchange = median(&steady);
    Ok(())
}

// ---- the .wasm in the host-shim -----------------------------------------------------------------

fn vm_options(config: &str) -> VmOptions {
    VmOptions::new(config.as_bytes().to_vec())
        .allow_on_headers_stop_iteration(true)
        .log_level(LogLevel::Warn)
        .strict(false)
        .buffer_limit(64 << 20)
        .stream_property(&["xds", "cluster_name"], "bench".as_bytes().to_vec())
}

fn post(path: &str, body: &str) -> HttpMessage {
    HttpMessage::post(path)
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.as_bytes().to_vec())
}

fn shim_search(vm: &mut Vm, body: &str) -> Result<Duration> {
    let req = post("/mcp", body);
    let resp = HttpMessage::response(500);
    let (ex, d) = timed(|| vm.exchange(&req, &resp));
    let ex = ex.map_err(|e| format!("shim search: {e}"))?;
    match ex.outcome() {
        Outcome::Local {
            status: 200, body, ..
        } if String::from_utf8_lossy(&body).contains("mcp-tool-search/search") => Ok(d),
        other => Err(format!(
            "shim search: unexpected outcome {:?}",
            truncate(&format!("{other:?}"))
        )),
    }
}

fn shim_list(vm: &mut Vm, response: &HttpMessage) -> Result<Duration> {
    let req = post("/mcp", &list_request());
    let (ex, d) = timed(|| vm.exchange(&req, response));
    let ex = ex.map_err(|e| format!("shim list: {e}"))?;
    match ex.outcome() {
        Outcome::Upstream {
            rewritten: true,
            body,
        } if String::from_utf8_lossy(&body).contains("tool_search") => Ok(d),
        other => Err(format!(
            "shim list: unexpected outcome {}",
            truncate(&format!("{other:?}"))
        )),
    }
}

/// An exchange the filter lets through untouched (not an MCP path): the shim's own cost.
fn shim_noop(vm: &mut Vm, body: &str, response: &HttpMessage) -> Result<Duration> {
    let req = post("/not-mcp", body);
    let (ex, d) = timed(|| vm.exchange(&req, response));
    let ex = ex.map_err(|e| format!("shim no-op: {e}"))?;
    match ex.outcome() {
        Outcome::Upstream {
            rewritten: false, ..
        } => Ok(d),
        other => Err(format!(
            "shim no-op: unexpected outcome {}",
            truncate(&format!("{other:?}"))
        )),
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(300).collect()
}

/// Loads (and compiles) the module once.
pub fn load_module(wasm: &Path) -> Result<(WasmModule, Duration)> {
    let (m, d) = timed(|| WasmModule::from_file(wasm));
    Ok((m.map_err(|e| format!("{}: {e}", wasm.display()))?, d))
}

/// Starts a VM and finds its linear memory in this process's mappings.
fn start_vm(host: &Host, module: &WasmModule, config: &str) -> Result<(Vm, Option<u64>)> {
    let before = vmmem::linear_memories();
    let vm =
        Vm::new(host, module, vm_options(config)).map_err(|e| format!("starting the VM: {e}"))?;
    let after = vmmem::linear_memories();
    let mine = after
        .iter()
        .map(|m| m.0)
        .find(|start| !before.iter().any(|b| b.0 == *start));
    Ok((vm, mine))
}

/// The .wasm figures at one size; fills the wasm fields of `costs`.
pub fn wasm(
    costs: &mut SizeCosts,
    module: &WasmModule,
    jsonl: &str,
    queries: &[&str],
    budget: Duration,
) -> Result<()> {
    let config = plugin_config(&["/mcp".to_owned()]);
    let (list_json, list_sse) = list_response(jsonl);
    let json_response = HttpMessage::response(200)
        .header("content-type", "application/json")
        .body(list_json.into_bytes())
        .chunked(RESPONSE_CHUNK);
    let sse_response = HttpMessage::response(200)
        .header("content-type", "text/event-stream")
        .body(list_sse.into_bytes())
        .chunked(RESPONSE_CHUNK);
    let bodies: Vec<String> = queries
        .iter()
        .enumerate()
        .map(|(i, q)| search_request(i + 1, q))
        .collect();
    let first_body = bodies.first().ok_or("no queries")?.clone();
    let small_response = HttpMessage::response(200)
        .header("content-type", "application/json")
        .body(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec());

    let host = Host::new();
    let (mut vm, mem) = start_vm(&host, module, &config)?;
    costs.mem_fresh_vm = mem.and_then(vmmem::size_of);

    // The shim's own cost per exchange, small and list-sized.
    costs.wasm_noop_small = median(&reps(20, 2000, budget / 4, || {
        shim_noop(&mut vm, &first_body, &small_response)
    })?);
    costs.wasm_noop_list = median(&reps(3, 50, budget / 2, || {
        shim_noop(&mut vm, &list_request(), &json_response)
    })?);

    // Lists: the first one writes the shared catalog; later ones find it unchanged.
    costs.wasm_first_list = shim_list(&mut vm, &json_response)?;
    costs.wasm_list_json = median(&reps(3, 50, budget, || shim_list(&mut vm, &json_response))?);
    costs.wasm_list_sse = median(&reps(3, 50, budget, || shim_list(&mut vm, &sse_response))?);
    // This VM's first search builds its index.
    shim_search(&mut vm, &first_body)?;
    let mut bi = 0usize;
    let steady = reps(100, 50_000, budget, || {
        let body = bodies.get(bi % bodies.len().max(1)).ok_or("no queries")?;
        bi += 1;
        shim_search(&mut vm, body)
    })?;
    costs.wasm_search_exchange = median(&steady);
    costs.mem_list_vm = mem.and_then(vmmem::size_of);

    // Other workers: fresh VMs on the same host find the catalog in shared data and build their
    // index on their first search.
    let mut search_mem = None;
    let firsts = reps(3, 20, budget, || {
        let (mut fresh, fresh_mem) = start_vm(&host, module, &config)?;
        let d = shim_search(&mut fresh, &first_body)?;
        for body in &bodies {
            shim_search(&mut fresh, body)?;
        }
        search_mem = fresh_mem.and_then(vmmem::size_of).or(search_mem);
        Ok(d)
    })?;
    costs.wasm_first_search = median(&firsts);
    costs.mem_search_vm = search_mem;
    Ok(())
}

/// Runs one native operation in a loop for `duration` (for `perf record`): `list` (a JSON
/// `tools/list` exchange over a learned catalog), `build` (a fresh worker's first search) or
/// `search` (a search exchange). Returns the number of iterations and the median time.
pub fn perf_loop(what: &str, jsonl: &str, duration: Duration) -> Result<(usize, Duration)> {
    let config = Config::parse(&plugin_config(&["/mcp".to_owned()])).map_err(|e| e.to_string())?;
    let (list_json, _) = list_response(jsonl);
    let request = list_request();
    let shared = Rc::new(MemorySharedData::default());
    let mut env = NativeEnv {
        config: config.clone(),
        shared: Rc::clone(&shared),
        cache: CatalogCache::new(),
    };
    native_list(
        &mut env,
        request.as_bytes(),
        "application/json",
        list_json.as_bytes(),
    )?;
    let body = search_request(1, "send a message to a slack channel");
    native_search(&mut env, body.as_bytes())?;
    let times = reps(1, usize::MAX, duration, || match what {
        "list" => {
            let (r, d) = timed(|| {
                native_list(
                    &mut env,
                    request.as_bytes(),
                    "application/json",
                    list_json.as_bytes(),
                )
            });
            r.map(|_| d)
        }
        "build" => {
            let mut fresh = NativeEnv {
                config: config.clone(),
                shared: Rc::clone(&shared),
                cache: CatalogCache::new(),
            };
            let (r, d) = timed(|| native_search(&mut fresh, body.as_bytes()));
            r.map(|_| d)
        }
        "search" => {
            let (r, d) = timed(|| native_search(&mut env, body.as_bytes()));
            r.map(|_| d)
        }
        other => Err(format!(
            "unknown --perf operation {other:?} (list, build, search)"
        )),
    })?;
    Ok((times.len(), median(&times)))
}

/// Where the native time goes at one size (CPU time, medians): the filter's own functions.
#[derive(Debug, Clone, Default)]
pub struct Breakdown {
    pub tools: usize,
    /// `Tool::from_raw` of every definition in a list (done by the list rewrite).
    pub from_raw_all: Duration,
    /// `CatalogCache::learn` of an unchanged complete list (done by every list).
    pub learn_unchanged: Duration,
    /// `Catalog::from_json` of the stored catalog (inside learn, and the first search).
    pub from_json: Duration,
    /// `Catalog::merged` of an unchanged complete page (inside learn).
    pub merged: Duration,
    /// `CatalogIndex::build`.
    pub build: Duration,
    /// `tokenizer::terms` of every tool's name and title+description (inside build).
    pub terms_all: Duration,
    pub tokens: usize,
    pub distinct_tokens: usize,
    /// `search::search`, and the `Bm25Index::scores` inside it.
    pub search: Duration,
    pub scores: Duration,
    /// Matching tools per query (median): what `top_k` orders.
    pub matches: usize,
}

pub fn breakdown(jsonl: &str, queries: &[&str], budget: Duration) -> Result<Breakdown> {
    let config = Config::parse(&plugin_config(&["/mcp".to_owned()])).map_err(|e| e.to_string())?;
    let raws: Vec<Box<RawValue>> = jsonl
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| e.to_string()))
        .collect::<Result<_>>()?;
    let tools = parse_tools(jsonl)?;
    let mut b = Breakdown {
        tools: tools.len(),
        ..Breakdown::default()
    };
    b.from_raw_all = median(&reps(3, 100, budget, || {
        let (r, d) = timed(|| {
            raws.iter()
                .map(|r| Tool::from_raw(r))
                .collect::<std::result::Result<Vec<_>, _>>()
        });
        r.map_err(|e| e.to_string())?;
        Ok(d)
    })?);
    let catalog = Catalog::from_tools(tools.clone());
    let stored = catalog.to_json();
    b.from_json = median(&reps(3, 100, budget, || {
        let (r, d) = timed(|| Catalog::from_json(&stored));
        r.map_err(|e| e.to_string())?;
        Ok(d)
    })?);
    let whole = Page {
        first: true,
        last: true,
    };
    let stored_catalog = Catalog::from_json(&stored).map_err(|e| e.to_string())?;
    b.merged = median(&reps(3, 100, budget, || {
        let (r, d) = timed(|| stored_catalog.merged(&tools, whole));
        drop(r);
        Ok(d)
    })?);
    let shared = MemorySharedData::default();
    let mut cache = CatalogCache::new();
    cache
        .learn(&shared, "bench", &tools, whole)
        .map_err(|e| e.to_string())?;
    b.learn_unchanged = median(&reps(3, 100, budget, || {
        let (r, d) = timed(|| cache.learn(&shared, "bench", &tools, whole));
        if r.map_err(|e| e.to_string())? {
            return Err("an unchanged list changed the catalog".to_owned());
        }
        Ok(d)
    })?);
    b.build = median(&reps(3, 100, budget, || {
        let c = catalog.clone();
        let (index, d) = timed(|| CatalogIndex::build("bench", c, &config));
        drop(index);
        Ok(d)
    })?);
    let texts: Vec<(&str, &str)> = catalog
        .tools()
        .iter()
        .map(|t| (t.name.as_str(), t.about.as_str()))
        .collect();
    let mut distinct = std::collections::HashSet::new();
    b.terms_all = median(&reps(3, 100, budget, || {
        let mut n = 0;
        let (_, d) = timed(|| {
            for (name, about) in &texts {
                n += mcp_tool_search::tokenizer::terms(name).len();
                n += mcp_tool_search::tokenizer::terms(about).len();
            }
        });
        b.tokens = n;
        Ok(d)
    })?);
    for (name, about) in &texts {
        distinct.extend(mcp_tool_search::tokenizer::words(name));
        distinct.extend(mcp_tool_search::tokenizer::words(about));
    }
    b.distinct_tokens = distinct.len();
    let index = CatalogIndex::build("bench", catalog.clone(), &config);
    let mut qi = 0usize;
    let mut matches = Vec::new();
    b.search = median(&reps(100, 100_000, budget, || {
        let text = queries
            .get(qi % queries.len().max(1))
            .copied()
            .unwrap_or("issue");
        qi += 1;
        let q = Query {
            text: text.to_owned(),
            limit: 5,
            offset: 0,
            group: None,
        };
        let (r, d) = timed(|| {
            search::search(
                &index,
                &config,
                &q,
                &|_| true,
                Err(Fallback::new(FallbackKind::Unavailable, "-")),
            )
        });
        if matches.len() < queries.len() {
            matches.push(r.matches);
        }
        Ok(d)
    })?);
    matches.sort_unstable();
    b.matches = matches.get(matches.len() / 2).copied().unwrap_or(0);
    let mut qi = 0usize;
    b.scores = median(&reps(100, 100_000, budget, || {
        let text = queries
            .get(qi % queries.len().max(1))
            .copied()
            .unwrap_or("issue");
        qi += 1;
        let (r, d) = timed(|| index.bm25.scores(text));
        drop(r);
        Ok(d)
    })?);
    Ok(b)
}
