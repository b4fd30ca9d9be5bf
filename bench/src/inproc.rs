//! Cost inside the VM: the filter's core natively (the `mcp-tool-search` crate: index build,
//! search, and whole exchanges through `exchange` on a `MemoryHost`) and the real `.wasm` in the
//! host-shim (wasmtime), with the linear memory of each VM.

use crate::messages::{
    self, list_request, list_response, plugin_config, rotated_lists, search_request,
};
use crate::native::{list_response as native_response, timed_list, NativeEnv};
use crate::shim::{shim_list, shim_list_replayed, shim_noop, shim_search, start_vm};
use crate::vmmem;
use host_shim::{Host, HostcallCensus, HttpMessage, Vm, WasmModule};
use mcp_tool_search_core::{
    search, Catalog, CatalogCache, CatalogIndex, Config, Fallback, FallbackKind, GroupIndex,
    Learned, MemoryHost, MemorySharedData, Page, Query, Tool, Vectors,
};
use serde_json::value::RawValue;
use std::cell::RefCell;
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
    // Native exchanges (`exchange`: the callbacks the VM runs, on a host in memory).
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
    /// A JSON list of the same tools in another order (as `mcp_router` joins its servers'
    /// lists): the catalog rotated by one to four eighths, one rotation per sample.
    pub wasm_list_shuffled: Duration,
    /// Another worker's first search: it loads the index the listing VM published.
    pub wasm_first_search: Duration,
    pub wasm_search_exchange: Duration,
    /// The listing VM's root tick after its first list: it builds the catalog's index and
    /// publishes it to shared data (off any request's path).
    pub wasm_publish: Duration,
    /// The same natively.
    pub native_publish: Duration,
    /// Linear memory (bytes) of a VM that rewrote lists and searched.
    pub mem_list_vm: Option<u64>,
    /// Linear memory of a VM that only searched (another worker: it built its index from shared
    /// data).
    pub mem_search_vm: Option<u64>,
    /// Linear memory of a freshly configured VM.
    pub mem_fresh_vm: Option<u64>,
    pub found_first: String,
    /// Hierarchical search (`group_separator` `_`): its groups, a search (group index built),
    /// and building the group index.
    pub groups: usize,
    pub native_hierarchical_search: Duration,
    pub native_group_index_build: Duration,
    /// Rounds of the round robin (samples per figure).
    pub rounds: usize,
    /// The host functions one search exchange calls (the first query, after the VM's first
    /// search), and one exchange the filter lets through untouched: counts and bytes, the same
    /// in any host.
    pub search_hostcalls: HostcallCensus,
    pub noop_hostcalls: HostcallCensus,
    /// A search exchange by query length (`QUERY_CLASSES`), natively and in the VM.
    pub by_length: Vec<crate::lengths::LengthCosts>,
}

impl SizeCosts {
    /// In-VM load of the published index: the first search of another worker's VM minus a
    /// later search.
    pub fn wasm_load(&self) -> Duration {
        self.wasm_first_search
            .saturating_sub(self.wasm_search_exchange)
    }

    pub fn native_load(&self) -> Duration {
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

    /// The filter's own time for a list in another order: its exchange minus the shim's cost
    /// of an untouched exchange of the same size.
    pub fn wasm_list_shuffled_net(&self) -> Duration {
        self.wasm_list_shuffled.saturating_sub(self.wasm_noop_list)
    }
}

fn parse_tools(jsonl: &str) -> Result<Vec<Tool>> {
    messages::tool_lines(jsonl)
        .map(|l| {
            let raw: Box<RawValue> = serde_json::from_str(l).map_err(|e| e.to_string())?;
            Tool::from_raw(&raw).map_err(|e| e.to_string())
        })
        .collect()
}

/// Runs `f` at least `min` times and until `budget` is spent (at most `max` times); the
/// durations it returned.
pub fn reps(
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

pub fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let t = thread_cpu();
    let r = f();
    (r, thread_cpu().saturating_sub(t))
}

/// A query as the bench asks it (`limit` 5).
pub fn query(text: &str) -> Query {
    Query {
        text: text.to_owned(),
        limit: 5,
        offset: 0,
        group: None,
    }
}

/// What `search` is given for vectors when the bench ranks by BM25 alone.
pub fn bm25_only() -> std::result::Result<Vectors<'static>, Fallback> {
    Err(Fallback::new(FallbackKind::Unavailable, "bm25 only"))
}

/// `search` (BM25, `limit` 5) of every query, timed together (CPU time).
fn search_kernel(index: &CatalogIndex, config: &Config, queries: &[&str]) -> Result<Duration> {
    let mut total = Duration::ZERO;
    for text in queries {
        let q = query(text);
        let (r, d) = timed(|| search(index, config, &q, None, bm25_only()));
        if r.found.is_empty() {
            return Err(format!("no result for {text:?}"));
        }
        total += d;
    }
    Ok(total)
}

/// The `tool_search` request bodies of `queries`, ids from 1.
pub fn search_bodies(queries: &[&str]) -> Vec<String> {
    queries
        .iter()
        .enumerate()
        .map(|(i, q)| search_request(i + 1, q))
        .collect()
}

/// The mean search exchange of `bodies`, natively (CPU time).
pub fn native_mean(env: &NativeEnv, bodies: &[String]) -> Result<Duration> {
    let mut total = Duration::ZERO;
    for body in bodies {
        let (out, d) = timed(|| env.search(body.as_bytes()));
        out?;
        total += d;
    }
    Ok(total / u32::try_from(bodies.len().max(1)).unwrap_or(1))
}

/// The mean search exchange of `bodies` in the VM.
pub fn wasm_mean(vm: &RefCell<Vm>, bodies: &[String]) -> Result<Duration> {
    let mut total = Duration::ZERO;
    for body in bodies {
        total += shim_search(&mut vm.borrow_mut(), body)?;
    }
    Ok(total / u32::try_from(bodies.len().max(1)).unwrap_or(1))
}

/// Where the native time goes at one size (CPU time, medians): the filter's own functions.
#[derive(Debug, Clone, Default)]
pub struct Breakdown {
    pub tools: usize,
    /// `Tool::from_raw` of every definition in a list (done by the list rewrite).
    pub from_raw_all: Duration,
    /// `CatalogCache::learn` of an unchanged complete list (done by a list not replayed).
    pub learn_unchanged: Duration,
    /// `Catalog::from_json` of the stored catalog (inside learn, and the first search).
    pub from_json: Duration,
    /// `Catalog::unchanged_by` of an unchanged complete page (inside learn).
    pub unchanged_by: Duration,
    /// `fnv::fingerprint` of the list (how a list is recognised for replay).
    pub fingerprint: Duration,
    /// A JSON list exchange with nothing to replay.
    pub list_not_remembered: Duration,
    /// `CatalogIndex::build`.
    pub build: Duration,
    /// `tokenizer::for_each_word` of every tool's name and title+description (inside build).
    pub words_all: Duration,
    pub tokens: usize,
    pub distinct_tokens: usize,
    /// `search`, and the `Bm25Index::scores` inside it.
    pub search: Duration,
    pub scores: Duration,
    /// Matching tools per query (median): what `top_k` orders.
    pub matches: usize,
}

// ---- all of it, round robin ---------------------------------------------------------------------

pub(crate) type Item<'a> = (&'static str, Box<dyn FnMut() -> Result<Duration> + 'a>);

/// Runs every item once per round, rounds until `budget` is spent (at least `min_rounds`, at
/// most `max_rounds`): every item sees the same machine, so their ratios hold while the
/// machine's speed drifts. Every other round runs them in reverse order: an item that always
/// ran first (after the others' data took the caches) would carry that cost alone. The samples
/// of each item, in order.
pub(crate) fn round_robin(
    items: &mut [Item<'_>],
    min_rounds: usize,
    max_rounds: usize,
    budget: Duration,
) -> Result<Vec<Vec<Duration>>> {
    let start = Instant::now();
    let mut samples = vec![Vec::new(); items.len()];
    let mut rounds = 0;
    while rounds < min_rounds || (rounds < max_rounds && start.elapsed() < budget) {
        let mut order: Vec<usize> = (0..items.len()).collect();
        if rounds % 2 == 1 {
            order.reverse();
        }
        for i in order {
            if let (Some((name, f)), Some(out)) = (items.get_mut(i), samples.get_mut(i)) {
                out.push(f().map_err(|e| format!("{name}: {e}"))?);
            }
        }
        rounds += 1;
    }
    Ok(samples)
}

/// Every in-process figure at one size: native and Wasm interleaved round by round (and, with
/// `breakdown`, the filter's functions one by one).
pub fn measure(
    module: &WasmModule,
    jsonl: &str,
    queries: &[&str],
    budget: Duration,
    with_breakdown: bool,
) -> Result<(SizeCosts, Option<Breakdown>)> {
    let config = Config::parse(&plugin_config(&["/mcp".to_owned()])).map_err(|e| e.to_string())?;
    let plugin = plugin_config(&["/mcp".to_owned()]);
    let tools = parse_tools(jsonl)?;
    let catalog = Catalog::from_tools(tools.clone());
    let stored = catalog.to_json();
    let index = CatalogIndex::build("bench", catalog.clone(), &config);
    let (list_json, list_sse) = list_response(jsonl);
    let request = list_request();
    let bodies = search_bodies(queries);
    let first_body = bodies.first().ok_or("no queries")?.clone();
    let classes = crate::lengths::bodies();
    let per_query = |d: Duration| d / u32::try_from(queries.len().max(1)).unwrap_or(1);
    let mut costs = SizeCosts {
        tools: catalog.len(),
        list_json_bytes: list_json.len(),
        stored_bytes: stored.len(),
        ..SizeCosts::default()
    };
    if let Some(q) = queries.first() {
        let q = Query {
            text: (*q).to_owned(),
            limit: 1,
            offset: 0,
            group: None,
        };
        let r = search(&index, &config, &q, None, bm25_only());
        costs.found_first = r
            .found
            .first()
            .map(|f| f.tool.name.to_string())
            .unwrap_or_default();
    }

    // Native: a worker that has learned the list.
    let shared = Rc::new(MemoryHost::default());
    let env = NativeEnv::new(&config, &shared);
    let (native_json, native_sse) = (
        native_response("application/json", &list_json),
        native_response("text/event-stream", &list_sse),
    );
    let first = env.list(request.as_bytes(), &native_json)?;
    if !String::from_utf8_lossy(&first).contains("tool_search") {
        return Err("native list: no tool_search in the rewritten list".to_owned());
    }
    costs.native_publish = timed(|| env.tick()).1;
    env.search(first_body.as_bytes())?;

    // Wasm: one VM (worker) that rewrites lists and searches; fresh VMs for first searches.
    // As an upstream's JSON response arrives: with its length (the SSE stream has none).
    let as_arrives = |json: &str| {
        HttpMessage::response(200)
            .header("content-type", "application/json")
            .header("content-length", &json.len().to_string())
            .body(json.as_bytes().to_vec())
            .chunked(RESPONSE_CHUNK)
    };
    let json_response = as_arrives(&list_json);
    let shuffled: Vec<HttpMessage> = rotated_lists(jsonl, 1..=4)
        .iter()
        .map(|json| as_arrives(json))
        .collect();
    let shuffled_round = std::cell::Cell::new(0usize);
    let sse_response = HttpMessage::response(200)
        .header("content-type", "text/event-stream")
        .body(list_sse.clone().into_bytes())
        .chunked(RESPONSE_CHUNK);
    let small_response = HttpMessage::response(200)
        .header("content-type", "application/json")
        .body(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec());
    let host = Host::new();
    let (vm, mem) = start_vm(&host, module, &plugin)?;
    costs.mem_fresh_vm = mem.and_then(vmmem::size_of);
    let vm = RefCell::new(vm);
    costs.wasm_first_list = shim_list(&mut vm.borrow_mut(), &json_response)?;
    let before = thread_cpu();
    vm.borrow_mut().tick().map_err(|e| e.to_string())?;
    costs.wasm_publish = thread_cpu().saturating_sub(before);
    shim_search(&mut vm.borrow_mut(), &first_body)?;
    {
        let mut vm = vm.borrow_mut();
        vm.hostcalls();
        shim_search(&mut vm, &first_body)?;
        costs.search_hostcalls = vm.hostcalls();
        shim_noop(&mut vm, &first_body, &small_response)?;
        costs.noop_hostcalls = vm.hostcalls();
    }
    // A gateway's worker: its lists always come in another order (the memo checks the way the
    // last list matched first, so the one-server VM above keeps its own).
    let (mut gateway_vm, _) = start_vm(&host, module, &plugin)?;
    shim_list(&mut gateway_vm, &json_response)?;
    let gateway_vm = RefCell::new(gateway_vm);
    let search_mem: RefCell<Option<u64>> = RefCell::new(None);

    let whole = Page {
        first: true,
        last: true,
    };
    let bd_shared = MemorySharedData::default();
    let bd_cache = RefCell::new(CatalogCache::new());
    bd_cache
        .borrow_mut()
        .learn(&bd_shared, "bench", Learned::new(tools.clone(), whole))
        .map_err(|e| e.to_string())?;
    // As a list finds it: this VM's index is the shared version.
    bd_cache
        .borrow_mut()
        .index(&bd_shared, "bench", &config)
        .map_err(|e| e.to_string())?;
    let raws: Vec<Box<RawValue>> = jsonl
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| e.to_string()))
        .collect::<Result<_>>()?;
    let complete = catalog.merge(tools.clone(), whole);
    let abouts: Vec<String> = catalog.tools().iter().map(Tool::about).collect();
    let texts: Vec<(&str, &str)> = catalog
        .tools()
        .iter()
        .zip(&abouts)
        .map(|(t, about)| (t.name.as_ref(), about.as_str()))
        .collect();
    let token_count = RefCell::new(0usize);

    let mut grouped = config.clone();
    grouped.group_separator = Some("_".to_string());
    grouped.search.strategy = mcp_tool_search_core::Strategy::Hierarchical;
    let grouped_index = CatalogIndex::build("bench", catalog.clone(), &grouped);
    costs.groups = GroupIndex::build(&grouped_index, &grouped, |_| true)
        .groups
        .len();
    let mut items: Vec<Item<'_>> = vec![
        (
            "native parse",
            Box::new(|| {
                let (c, d) = timed(|| Catalog::from_json(&stored));
                c.map_err(|e| e.to_string())?;
                Ok(d)
            }),
        ),
        (
            "native build",
            Box::new(|| {
                let c = catalog.clone();
                let (index, d) = timed(|| CatalogIndex::build("bench", c, &config));
                drop(index);
                Ok(d)
            }),
        ),
        (
            "native search kernel",
            Box::new(|| search_kernel(&index, &config, queries).map(per_query)),
        ),
        (
            "native list json",
            Box::new(|| timed_list(&env, &request, &native_json)),
        ),
        (
            "native list sse",
            Box::new(|| timed_list(&env, &request, &native_sse)),
        ),
        (
            "native first search",
            Box::new(|| {
                // Another worker: a new cache over the same shared data builds its index.
                let fresh = NativeEnv::new(&config, &shared);
                let (out, d) = timed(|| fresh.search(first_body.as_bytes()));
                out?;
                Ok(d)
            }),
        ),
        ("native search", Box::new(|| native_mean(&env, &bodies))),
        (
            "wasm no-op small",
            Box::new(|| {
                let mut total = Duration::ZERO;
                for _ in &bodies {
                    total += shim_noop(&mut vm.borrow_mut(), &first_body, &small_response)?;
                }
                Ok(per_query(total))
            }),
        ),
        (
            "wasm no-op list",
            Box::new(|| shim_noop(&mut vm.borrow_mut(), &request, &json_response)),
        ),
        (
            "wasm list json",
            Box::new(|| shim_list(&mut vm.borrow_mut(), &json_response)),
        ),
        (
            "wasm list sse",
            Box::new(|| shim_list(&mut vm.borrow_mut(), &sse_response)),
        ),
        (
            "wasm first search",
            Box::new(|| {
                // Another worker: a fresh VM on the same host finds the catalog in shared data.
                let (mut fresh, fresh_mem) = start_vm(&host, module, &plugin)?;
                let d = shim_search(&mut fresh, &first_body)?;
                for body in &bodies {
                    shim_search(&mut fresh, body)?;
                }
                let m = fresh_mem.and_then(vmmem::size_of);
                let mut slot = search_mem.borrow_mut();
                *slot = (*slot).max(m);
                Ok(d)
            }),
        ),
        ("wasm search", Box::new(|| wasm_mean(&vm, &bodies))),
    ];
    items.push((
        "native hierarchical search kernel",
        Box::new(|| search_kernel(&grouped_index, &grouped, queries).map(per_query)),
    ));
    items.push((
        "native group index build",
        Box::new(|| {
            let (groups, d) = timed(|| GroupIndex::build(&grouped_index, &grouped, |_| true));
            drop(groups);
            Ok(d)
        }),
    ));
    items.push((
        "wasm list shuffled",
        Box::new(|| {
            let round = shuffled_round.get();
            shuffled_round.set(round + 1);
            let response = shuffled
                .get(round % shuffled.len())
                .ok_or("no shuffled lists")?;
            shim_list_replayed(&mut gateway_vm.borrow_mut(), response)
        }),
    ));
    let by_length_at = items.len();
    items.extend(crate::lengths::items(&env, &vm, &classes));
    let core = items.len();
    if with_breakdown {
        items.push((
            "from_raw all",
            Box::new(|| {
                let (r, d) = timed(|| {
                    raws.iter()
                        .map(|r| Tool::from_raw(r))
                        .collect::<std::result::Result<Vec<_>, _>>()
                });
                r.map_err(|e| e.to_string())?;
                Ok(d)
            }),
        ));
        items.push((
            "learn unchanged",
            Box::new(|| {
                let learned = Learned::new(tools.clone(), whole);
                let (r, d) = timed(|| bd_cache.borrow_mut().learn(&bd_shared, "bench", learned));
                if r.map_err(|e| e.to_string())? {
                    return Err("an unchanged list changed the catalog".to_owned());
                }
                Ok(d)
            }),
        ));
        items.push((
            "unchanged by",
            Box::new(|| {
                let (r, d) = timed(|| complete.unchanged_by(&tools, whole));
                if !r {
                    return Err("an unchanged list is not recognised".to_owned());
                }
                Ok(d)
            }),
        ));
        items.push((
            "fingerprint",
            Box::new(|| {
                let (r, d) = timed(|| mcp_tool_search_core::fingerprint(list_json.as_bytes()));
                std::hint::black_box(r);
                Ok(d)
            }),
        ));
        items.push((
            "native list json, not remembered",
            Box::new(|| {
                env.forget_list()?;
                timed_list(&env, &request, &native_json)
            }),
        ));
        items.push((
            "words all",
            Box::new(|| {
                // The splitting and lowercasing `Bm25Index::build` does for every token (each
                // distinct word is then stemmed once).
                let mut n = 0;
                let mut buf = String::new();
                let (_, d) = timed(|| {
                    for (name, about) in &texts {
                        mcp_tool_search_core::for_each_word(name, &mut buf, |_| n += 1);
                        mcp_tool_search_core::for_each_word(about, &mut buf, |_| n += 1);
                    }
                });
                *token_count.borrow_mut() = n;
                Ok(d)
            }),
        ));
        items.push((
            "scores",
            Box::new(|| {
                let mut total = Duration::ZERO;
                for text in queries {
                    let (r, d) = timed(|| index.bm25().scores(text));
                    drop(r);
                    total += d;
                }
                Ok(per_query(total))
            }),
        ));
    }
    let samples = round_robin(&mut items, 5, 1000, budget)?;
    drop(items);
    let m = |i: usize| samples.get(i).map(|v| median(v)).unwrap_or_default();
    costs.native_parse = m(0);
    costs.native_build = m(1);
    costs.native_search = m(2);
    costs.native_list_json = m(3);
    costs.native_list_sse = m(4);
    costs.native_first_search = m(5);
    costs.native_search_exchange = m(6);
    costs.wasm_noop_small = m(7);
    costs.wasm_noop_list = m(8);
    costs.wasm_list_json = m(9);
    costs.wasm_list_sse = m(10);
    costs.wasm_first_search = m(11);
    costs.wasm_search_exchange = m(12);
    costs.native_hierarchical_search = m(13);
    costs.native_group_index_build = m(14);
    costs.wasm_list_shuffled = m(15);
    costs.by_length = crate::lengths::costs(&index, &config, &samples, by_length_at);
    costs.rounds = samples.first().map(Vec::len).unwrap_or(0);
    costs.mem_list_vm = mem.and_then(vmmem::size_of);
    costs.mem_search_vm = search_mem.into_inner();
    let breakdown = with_breakdown.then(|| {
        let mut distinct = std::collections::HashSet::new();
        for (name, about) in &texts {
            distinct.extend(mcp_tool_search_core::words(name));
            distinct.extend(mcp_tool_search_core::words(about));
        }
        Breakdown {
            tools: catalog.len(),
            from_raw_all: m(core),
            learn_unchanged: m(core + 1),
            from_json: costs.native_parse,
            unchanged_by: m(core + 2),
            fingerprint: m(core + 3),
            list_not_remembered: m(core + 4),
            build: costs.native_build,
            words_all: m(core + 5),
            tokens: token_count.into_inner(),
            distinct_tokens: distinct.len(),
            search: costs.native_search,
            scores: m(core + 6),
            matches: crate::lengths::median_matches(&index, &config, queries),
        }
    });
    Ok((costs, breakdown))
}
