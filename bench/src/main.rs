//! `mcp-tool-search-bench`: the benchmarks behind `make bench`. Runs, in one process and one
//! sitting, the cost inside the VM (native core and the real `.wasm` in host-shim), then
//! `tool_search` and `tools/list` through a one-worker Envoy beside two floors (a
//! `direct_response` and the proxy-wasm floor, `bench/floor/`) and a no-filter baseline, and
//! writes `BENCHMARKS.md`.
//!
//! ```text
//! mcp-tool-search-bench --envoy BIN --wasm FILE --floor-wasm FILE --catalog-server BIN
//!     [--out BENCHMARKS.md] [--sizes 100,1000,10000] [--round-secs 1.5] [--rounds 4]
//!     [--change-rounds 8] [--eval FILE]...
//!     [--notes FILE] [--commands FILE] [--skip-http] [--skip-inproc] [--quick] [--no-spin]
//!     [--budget-secs S] [--perf list|list-fresh|list-sse|build|load|search]
//!     [--gateway SERVERSxTOOLS] [--skip-gateway]
//! ```
//!
//! A full run ends with the many-servers section (20 servers × 500 tools through Envoy's
//! `mcp_router`, `gateway.rs`). `--gateway 20x500` measures only the filter in front of Envoy's `mcp_router` over that many
//! generated servers (see `gateway.rs`) and replaces only that section of `--out`.

mod client;
use mcp_tool_search_bench::envoy;
mod gateway;
mod inproc;
mod report;
mod vmmem;

use client::{Request, Samples};
use inproc::SizeCosts;
use mcp_tool_search_wasm_tests::harness::TestDir;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Queries a user of a SaaS tool catalog would type (every one has matches at every size).
pub const QUERIES: &[&str] = &[
    "create an issue in a github repository",
    "refund a stripe charge",
    "send a message to a slack channel",
    "schedule a calendar meeting",
    "upload a file to dropbox",
    "search jira tickets",
    "list open pull requests",
    "add a row to a spreadsheet",
    "send an email",
    "create a support ticket",
    "run a sql query",
    "acknowledge a pagerduty incident",
];

#[derive(Debug, Clone)]
pub struct Args {
    pub envoy: Option<PathBuf>,
    pub wasm: PathBuf,
    /// `--floor-wasm`: the proxy-wasm floor (`bench/floor/`), needed by the HTTP benchmarks.
    pub floor_wasm: Option<PathBuf>,
    pub catalog_server: Option<PathBuf>,
    pub out: PathBuf,
    pub sizes: Vec<usize>,
    pub round: Duration,
    pub rounds: usize,
    /// `--change-rounds`: catalog changes per upstream for the first list after a change.
    pub change_rounds: usize,
    pub eval: Vec<PathBuf>,
    pub notes: Option<PathBuf>,
    pub commands: Option<PathBuf>,
    pub skip_http: bool,
    pub skip_inproc: bool,
    pub budget: Duration,
    /// `--perf list|list-fresh|list-sse|build|load|search`: loop one native operation (for `perf record`) and exit.
    pub perf: Option<String>,
    /// `--no-spin`: no SCHED_IDLE spinners during the HTTP benchmarks.
    pub no_spin: bool,
    /// `--gateway SERVERSxTOOLS`: only the many-servers section (mcp_router).
    pub gateway: Option<(usize, usize)>,
    /// `--skip-gateway`: a full run without the many-servers section (the file's is kept).
    pub skip_gateway: bool,
}

/// The `## Chaos soak` section `make soak` wrote into an earlier BENCHMARKS.md, kept.
fn soak_section(doc: &str) -> String {
    mcp_tool_search_bench::markdown_section(doc, "## Chaos soak")
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        envoy: None,
        wasm: PathBuf::from("target/wasm32-wasip1/release/mcp_tool_search.wasm"),
        floor_wasm: None,
        catalog_server: None,
        out: PathBuf::from("BENCHMARKS.md"),
        sizes: vec![100, 1000, 10_000],
        round: Duration::from_millis(750),
        rounds: 8,
        change_rounds: 8,
        eval: Vec::new(),
        notes: None,
        commands: None,
        skip_http: false,
        skip_inproc: false,
        budget: Duration::from_secs(10),
        perf: None,
        no_spin: false,
        gateway: None,
        skip_gateway: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--envoy" => a.envoy = Some(value()?.into()),
            "--wasm" => a.wasm = value()?.into(),
            "--floor-wasm" => a.floor_wasm = Some(value()?.into()),
            "--catalog-server" => a.catalog_server = Some(value()?.into()),
            "--out" => a.out = value()?.into(),
            "--sizes" => {
                a.sizes = value()?
                    .split(',')
                    .map(|s| {
                        s.trim()
                            .parse::<usize>()
                            .map_err(|e| format!("--sizes: {e}"))
                    })
                    .collect::<Result<_, _>>()?
            }
            "--round-secs" => {
                let s: f64 = value()?.parse().map_err(|e| format!("--round-secs: {e}"))?;
                a.round = Duration::from_secs_f64(s.max(0.05));
            }
            "--rounds" => a.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--change-rounds" => {
                a.change_rounds = value()?
                    .parse()
                    .map_err(|e| format!("--change-rounds: {e}"))?
            }
            "--budget-secs" => {
                let s: f64 = value()?
                    .parse()
                    .map_err(|e| format!("--budget-secs: {e}"))?;
                a.budget = Duration::from_secs_f64(s.max(0.05));
            }
            "--eval" => a.eval.push(value()?.into()),
            "--notes" => a.notes = Some(value()?.into()),
            "--commands" => a.commands = Some(value()?.into()),
            "--skip-http" => a.skip_http = true,
            "--perf" => a.perf = Some(value()?),
            "--no-spin" => a.no_spin = true,
            "--gateway" => a.gateway = Some(gateway::parse_spec(&value()?)?),
            "--skip-inproc" => a.skip_inproc = true,
            "--skip-gateway" => a.skip_gateway = true,
            "--quick" => {
                // 10,000 tools on 21 servers is no quick check.
                a.skip_gateway = true;
                a.sizes = vec![100, 1000];
                a.round = Duration::from_millis(400);
                a.rounds = 2;
                a.change_rounds = 3;
                a.budget = Duration::from_secs(1);
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    a.rounds = a.rounds.max(1);
    a.change_rounds = a.change_rounds.max(1);
    Ok(a)
}

/// One search measurement at one catalog size.
#[derive(Debug, Clone, Default)]
pub struct SearchRun {
    pub tools: usize,
    /// `direct_response` on the filtered listener (the floor).
    pub floor: Samples,
    /// `direct_response` on the listener without the filter.
    pub floor_nofilter: Samples,
    /// The same search requests on the `floor` listener: the proxy-wasm floor replays the
    /// filter's answer (bench/floor/).
    pub wasm_floor: Samples,
    pub search: Samples,
    /// The same request passed through to the upstream without the filter.
    pub baseline: Samples,
    /// Four connections: requests per second at saturation of the one worker.
    pub floor_tp: Samples,
    pub wasm_floor_tp: Samples,
    pub search_tp: Samples,
    pub baseline_tp: Samples,
    /// The first search after the first list (the worker builds its index), per namespace.
    pub first_search: Vec<Duration>,
    pub search_bytes: usize,
    /// search p50 / floor p50, round by round: the median.
    pub ratio: f64,
    /// search p50 / proxy-wasm floor p50, round by round: the median.
    pub wasm_ratio: f64,
}

#[derive(Debug, Clone, Default)]
pub struct ListRun {
    pub tools: usize,
    pub kind: &'static str,
    pub filtered: Samples,
    pub baseline: Samples,
    pub upstream_bytes: usize,
    pub client_bytes: usize,
    pub first_list: Duration,
    /// filtered p50 / baseline p50, and filtered p50 − baseline p50 (seconds), round by round:
    /// the medians.
    pub ratio: f64,
    pub added: f64,
}

/// The first `tools/list` after the upstream's catalog changed, round by round: each round
/// changes the catalog, then lists through the filter twice (the first list after the change,
/// then a repeated one) and once through the baseline listener.
#[derive(Debug, Clone, Default)]
pub struct ChangeRun {
    pub tools: usize,
    pub kind: &'static str,
    pub first: Vec<Duration>,
    pub repeated: Vec<Duration>,
    pub baseline: Vec<Duration>,
    /// Medians over rounds of the first (repeated) list minus the baseline list of the same
    /// round, seconds.
    pub added_first: f64,
    pub added_repeated: f64,
}

#[derive(Debug, Clone, Default)]
pub struct HttpResults {
    pub searches: Vec<SearchRun>,
    pub lists: Vec<ListRun>,
    pub changes: Vec<ChangeRun>,
    pub envoy_rss_start_kb: Option<u64>,
    pub envoy_rss_end_kb: Option<u64>,
    pub stats: Vec<(String, String)>,
    pub config_yaml: String,
    /// Whether SCHED_IDLE spinners kept the CPUs busy during the measurements.
    pub spinners: bool,
}

#[derive(Debug, Clone, Default)]
pub struct InprocResults {
    pub sizes: Vec<SizeCosts>,
    pub breakdown: Option<inproc::Breakdown>,
    pub module_compile: Duration,
}

fn log(msg: &str) {
    eprintln!("[bench {}] {msg}", chrono_now());
}

fn chrono_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!(
        "{:02}:{:02}:{:02}",
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60
    )
}

fn run_inproc(args: &Args, catalogs: &[(usize, String)]) -> Result<InprocResults, String> {
    let (module, compile) = inproc::load_module(&args.wasm)?;
    let mut out = InprocResults {
        module_compile: compile,
        ..InprocResults::default()
    };
    let last = catalogs.len().saturating_sub(1);
    for (i, (n, jsonl)) in catalogs.iter().enumerate() {
        log(&format!(
            "in-process: {n} tools, native and .wasm in host-shim, interleaved"
        ));
        let (costs, breakdown) = inproc::measure(&module, jsonl, QUERIES, args.budget, i == last)?;
        out.sizes.push(costs);
        if breakdown.is_some() {
            out.breakdown = breakdown;
        }
    }
    Ok(out)
}

fn search_requests(authority: &str, path: &str) -> Vec<Request> {
    QUERIES
        .iter()
        .enumerate()
        .map(|(i, q)| Request::post_json(authority, path, &inproc::search_request(i + 1, q)))
        .collect()
}

/// Runs the targets one after the other, `rounds` times over (so that a change in the
/// machine's speed hits all of them alike), pooling each target's latencies.
fn interleaved(
    targets: &[(std::net::SocketAddr, Vec<Request>, Option<&str>)],
    rounds: usize,
    round: Duration,
    conns: usize,
    min: usize,
) -> Result<(Vec<Samples>, Vec<Vec<Duration>>), String> {
    let mut pooled = vec![Samples::default(); targets.len()];
    let mut p50s = vec![Vec::new(); targets.len()];
    for _ in 0..rounds {
        for (i, (addr, reqs, expect)) in targets.iter().enumerate() {
            let s = client::run(*addr, reqs, conns, round, min, *expect)?;
            if s.errors > 0 {
                return Err(format!(
                    "{} of {} responses failed the check at {addr}",
                    s.errors,
                    s.count()
                ));
            }
            if let Some(p) = p50s.get_mut(i) {
                p.push(s.p50());
            }
            if let Some(p) = pooled.get_mut(i) {
                p.merge(s);
            }
        }
    }
    Ok((pooled, p50s))
}

fn median_f64(mut v: Vec<f64>) -> f64 {
    v.sort_by(|x, y| x.total_cmp(y));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Round by round, `a`'s p50 over `b`'s p50 (the ratio) and minus it (seconds): medians.
fn round_figures(a: Option<&Vec<Duration>>, b: Option<&Vec<Duration>>) -> (f64, f64) {
    let (Some(a), Some(b)) = (a, b) else {
        return (f64::NAN, f64::NAN);
    };
    let pairs: Vec<(f64, f64)> = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x.as_secs_f64(), y.as_secs_f64()))
        .collect();
    (
        median_f64(
            pairs
                .iter()
                .filter(|p| p.1 > 0.0)
                .map(|p| p.0 / p.1)
                .collect(),
        ),
        median_f64(pairs.iter().map(|p| p.0 - p.1).collect()),
    )
}

/// Threads that spin at `SCHED_IDLE` (they run only when no other thread wants the CPU) while
/// the HTTP benchmarks run: on a virtual machine an idle vCPU halts, and waking it for every
/// request adds a hypervisor round trip (about 150 µs on the machine these figures were first
/// taken on) to every latency, the floor included. Kept busy, the vCPUs answer at once.
struct Spinners {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handles: Vec<std::thread::JoinHandle<bool>>,
}

impl Spinners {
    fn start(n: usize) -> Spinners {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let handles = (0..n)
            .map(|_| {
                let stop = std::sync::Arc::clone(&stop);
                std::thread::spawn(move || {
                    let param = libc::sched_param { sched_priority: 0 };
                    // SAFETY: plain syscall on the calling thread (pid 0) with a valid param.
                    let idle =
                        unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } == 0;
                    if !idle {
                        return false;
                    }
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                    true
                })
            })
            .collect();
        Spinners { stop, handles }
    }

    /// Stops them; whether they ran at SCHED_IDLE.
    fn stop(self) -> bool {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let idle: Vec<bool> = self
            .handles
            .into_iter()
            .map(|h| h.join().unwrap_or(false))
            .collect();
        idle.into_iter().all(|b| b)
    }
}

fn run_http(
    args: &Args,
    dir: &TestDir,
    catalogs: &[(usize, String)],
) -> Result<HttpResults, String> {
    let envoy_bin = args
        .envoy
        .clone()
        .ok_or("--envoy is required for the HTTP benchmarks")?;
    let server_bin = args
        .catalog_server
        .clone()
        .ok_or("--catalog-server is required")?;
    let wasm =
        std::fs::canonicalize(&args.wasm).map_err(|e| format!("{}: {e}", args.wasm.display()))?;
    let floor_wasm = args.floor_wasm.as_ref().ok_or(FLOOR_WASM_MISSING)?;
    let floor_wasm = std::fs::canonicalize(floor_wasm)
        .map_err(|e| format!("--floor-wasm {}: {e}", floor_wasm.display()))?;
    let mut servers = Vec::new();
    let mut upstreams = Vec::new();
    for (n, jsonl) in catalogs {
        let file = dir.join(&format!("catalog-{n}.jsonl"));
        std::fs::write(&file, jsonl).map_err(|e| e.to_string())?;
        for (kind, json) in [("json", true), ("sse", false)] {
            let server = envoy::CatalogServer::start(&server_bin, &file, json, dir.path())?;
            upstreams.push(envoy::Upstream {
                cluster: format!("catalog_{kind}_{n}"),
                path: format!("/mcp/{kind}/{n}"),
                addr: server.addr,
            });
            servers.push(server);
        }
    }
    let paths: Vec<String> = upstreams.iter().map(|u| u.path.clone()).collect();
    let plugin_config = inproc::plugin_config(&paths);
    let yaml = envoy::bootstrap(&upstreams, &wasm, &plugin_config, &floor_wasm);
    log("starting Envoy (--concurrency 1)");
    let mut envoy = envoy::Envoy::start(&envoy_bin, dir.path(), &yaml)?;
    let mut out = HttpResults {
        envoy_rss_start_kb: envoy.rss_kb(),
        config_yaml: yaml,
        ..HttpResults::default()
    };
    let spinners = (!args.no_spin).then(|| {
        Spinners::start(
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
        )
    });
    let result = measure_http(args, catalogs, &upstreams, &mut envoy, &mut out);
    if let Some(s) = spinners {
        out.spinners = s.stop();
    }
    result?;
    out.envoy_rss_end_kb = envoy.rss_kb();
    out.stats = envoy
        .stats("mcp_tool_search")
        .into_iter()
        .filter(|(_, v)| v != "0")
        .collect();
    if !envoy.running() {
        return Err(format!(
            "Envoy exited during the run:\n{}",
            envoy.log_tail()
        ));
    }
    envoy.stop();
    drop(servers);
    Ok(out)
}

/// What `--floor-wasm` is for, when it is missing.
const FLOOR_WASM_MISSING: &str = "--floor-wasm is required for the HTTP benchmarks: the proxy-wasm floor, \
     target/wasm32-wasip1/release/mcp_tool_search_bench_floor.wasm \
     (cargo build --release --target wasm32-wasip1 -p mcp-tool-search-bench-floor; `make bench` builds it)";

/// Response headers the proxy-wasm floor does not need to replay: it sends the content-type it
/// learned, and Envoy writes these on every local reply (the filter's and the floor's alike).
const ENVOY_REPLY_HEADERS: &[&str] = &["content-length", "date", "server", "connection"];

/// Teaches the proxy-wasm floor the filter's answer to each search request the runs send to
/// `path` (the catalog at that path; the floor's answers are keyed by the request body alone, so
/// a size's lessons replace the last size's), then checks that it answers every one with the
/// filter's status, headers and body, byte for byte.
fn teach_floor(
    filtered: std::net::SocketAddr,
    floor: std::net::SocketAddr,
    path: &str,
) -> Result<(), String> {
    let mut fc = client::Conn::open(filtered)?;
    let mut lc = client::Conn::open(floor)?;
    let to_filter = search_requests(&filtered.to_string(), path);
    let to_floor = search_requests(&floor.to_string(), path);
    let mut answers = Vec::new();
    for (i, req) in to_filter.iter().enumerate() {
        let resp = fc.round_trip(req)?;
        client::check(&resp, Some("mcp-tool-search/search"))
            .map_err(|e| format!("search {path} (to teach the proxy-wasm floor): {e}"))?;
        let not_replayed: Vec<&(String, String)> = resp
            .headers
            .iter()
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
        let query = QUERIES.get(i).copied().unwrap_or_default();
        let mut lesson = inproc::search_request(i + 1, query).into_bytes();
        lesson.push(0);
        lesson.extend_from_slice(content_type.as_bytes());
        lesson.push(0);
        lesson.extend_from_slice(&resp.body);
        let learned = lc.round_trip(&Request::post(
            &floor.to_string(),
            envoy::FLOOR_LEARN_PATH,
            "application/octet-stream",
            &lesson,
        ))?;
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
        let mut h: Vec<(String, String)> = r
            .headers
            .iter()
            .filter(|(k, _)| k != "date")
            .cloned()
            .collect();
        h.sort();
        h
    };
    for (req, want) in to_floor.iter().zip(&answers) {
        let got = lc.round_trip(req)?;
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
                got.headers, want.headers
            ));
        }
    }
    Ok(())
}

/// `jsonl` with " (v2)" appended to the first tool's description: a catalog change the filter
/// must notice (a new catalog version) at the same size.
fn changed_catalog(jsonl: &str) -> Result<String, String> {
    let (first, rest) = jsonl.split_once('\n').unwrap_or((jsonl, ""));
    let tool: serde_json::Value =
        serde_json::from_str(first).map_err(|e| format!("the catalog's first tool: {e}"))?;
    let description = tool
        .get("description")
        .and_then(|d| d.as_str())
        .ok_or("the catalog's first tool has no description")?;
    let encode = |d: &str| serde_json::to_string(d).map_err(|e| e.to_string());
    let old = format!("\"description\":{}", encode(description)?);
    let new = format!(
        "\"description\":{}",
        encode(&format!("{description}{CHANGE_MARK}"))?
    );
    if !first.contains(&old) {
        return Err(format!(
            "the catalog's first tool does not spell its description as {old}"
        ));
    }
    Ok(format!("{}\n{rest}", first.replacen(&old, &new, 1)))
}

const CHANGE_MARK: &str = " (v2)";

/// `POST /admin/tools` to a catalog-server: it serves `jsonl` from now on (nobody notified:
/// the bench's upstreams are stateless).
fn set_upstream_tools(server: std::net::SocketAddr, jsonl: &str) -> Result<(), String> {
    let mut conn = client::Conn::open(server)?;
    let resp = conn.round_trip(&Request::post(
        &server.to_string(),
        "/admin/tools",
        "application/jsonl",
        jsonl.as_bytes(),
    ))?;
    if resp.status != 200 {
        return Err(format!(
            "catalog-server {server} /admin/tools: {} {}",
            resp.status,
            String::from_utf8_lossy(&resp.body)
        ));
    }
    Ok(())
}

/// The first `tools/list` after a catalog change, at 1,000 tools and up (JSON and SSE
/// upstreams): `rounds` times, each upstream in turn switches between its catalog and a changed
/// one, then is listed through the filter (the first list after the change: the filter learns
/// a new catalog version), through the filter again (repeated), and through the baseline.
fn measure_changes(
    args: &Args,
    catalogs: &[(usize, String)],
    upstreams: &[envoy::Upstream],
    envoy: &envoy::Envoy,
) -> Result<Vec<ChangeRun>, String> {
    let (fa, ba) = (envoy.filtered, envoy.baseline);
    let list_body = inproc::list_request();
    let mut runs = Vec::new();
    for (n, jsonl) in catalogs.iter().filter(|(n, _)| *n >= 1000) {
        let changed = changed_catalog(jsonl)?;
        for kind in ["json", "sse"] {
            let path = format!("/mcp/{kind}/{n}");
            let server = upstreams
                .iter()
                .find(|u| u.path == path)
                .map(|u| u.addr)
                .ok_or_else(|| format!("no upstream for {path}"))?;
            runs.push((
                ChangeRun {
                    tools: *n,
                    kind,
                    ..ChangeRun::default()
                },
                server,
                [jsonl.clone(), changed.clone()],
            ));
        }
    }
    if runs.is_empty() {
        return Ok(Vec::new());
    }
    let mut fconn = client::Conn::open(fa)?;
    let mut bconn = client::Conn::open(ba)?;
    let timed = |conn: &mut client::Conn, req: &Request, expect: Option<&str>, what: &str| {
        let t = Instant::now();
        let resp = conn.round_trip(req)?;
        let took = t.elapsed();
        client::check(&resp, expect).map_err(|e| format!("{what}: {e}"))?;
        Ok::<_, String>((took, resp))
    };
    for round in 0..args.change_rounds {
        log(&format!(
            "HTTP: first tools/list after a catalog change, round {} of {}",
            round + 1,
            args.change_rounds
        ));
        // Round 0 serves the changed catalog (the upstream started with the original).
        let changed = round % 2 == 0;
        for (run, server, versions) in runs.iter_mut() {
            let path = format!("/mcp/{}/{}", run.kind, run.tools);
            let serve = versions
                .get(usize::from(changed))
                .map_or("", String::as_str);
            set_upstream_tools(*server, serve)?;
            let through = Request::post_json(&fa.to_string(), &path, &list_body);
            let (first, _) = timed(
                &mut fconn,
                &through,
                Some("tool_search"),
                &format!("first list {path} after a change"),
            )?;
            let (repeated, _) = timed(
                &mut fconn,
                &through,
                Some("tool_search"),
                &format!("repeated list {path} after a change"),
            )?;
            let (baseline, resp) = timed(
                &mut bconn,
                &Request::post_json(&ba.to_string(), &path, &list_body),
                None,
                &format!("baseline list {path} after a change"),
            )?;
            // The upstream did change: the baseline passes its list unchanged.
            let seen = resp
                .body
                .windows(CHANGE_MARK.len())
                .any(|w| w == CHANGE_MARK.as_bytes());
            if seen != changed {
                return Err(format!(
                    "{path}: the upstream's list after /admin/tools {} the changed description",
                    if changed { "lacks" } else { "still has" }
                ));
            }
            run.first.push(first);
            run.repeated.push(repeated);
            run.baseline.push(baseline);
        }
    }
    Ok(runs
        .into_iter()
        .map(|(mut run, _, _)| {
            run.added_first = round_figures(Some(&run.first), Some(&run.baseline)).1;
            run.added_repeated = round_figures(Some(&run.repeated), Some(&run.baseline)).1;
            run
        })
        .collect())
}

fn measure_http(
    args: &Args,
    catalogs: &[(usize, String)],
    upstreams: &[envoy::Upstream],
    envoy: &mut envoy::Envoy,
    out: &mut HttpResults,
) -> Result<(), String> {
    let fa = envoy.filtered;
    let ba = envoy.baseline;
    let wa = envoy
        .floor
        .ok_or("the bench's Envoy has no `floor` listener")?;
    let auth = |a: std::net::SocketAddr| a.to_string();
    let list_body = inproc::list_request();

    // Teach the filter every catalog (one list through it), and time the first search after
    // it: that search builds the worker's index.
    let mut firsts: Vec<(usize, &'static str, Duration, Duration)> = Vec::new();
    for (n, _) in catalogs {
        for kind in ["json", "sse"] {
            let path = format!("/mcp/{kind}/{n}");
            let mut conn = client::Conn::open(fa)?;
            let t = Instant::now();
            let resp = conn.round_trip(&Request::post_json(&auth(fa), &path, &list_body))?;
            let first_list = t.elapsed();
            client::check(&resp, Some("tool_search"))
                .map_err(|e| format!("first list {path}: {e}"))?;
            let search = Request::post_json(
                &auth(fa),
                &path,
                &inproc::search_request(1, QUERIES.first().copied().unwrap_or("issue")),
            );
            let t = Instant::now();
            let resp = conn.round_trip(&search)?;
            let first_search = t.elapsed();
            client::check(&resp, Some("mcp-tool-search/search"))
                .map_err(|e| format!("first search {path}: {e}"))?;
            firsts.push((*n, kind, first_list, first_search));
        }
    }

    for (n, _) in catalogs {
        let path = format!("/mcp/json/{n}");
        log(&format!(
            "HTTP: teaching the proxy-wasm floor the filter's answers at {n} tools"
        ));
        teach_floor(fa, wa, &path)?;
        log(&format!("HTTP: tool_search at {n} tools"));
        const SEARCH: Option<&str> = Some("mcp-tool-search/search");
        // Latency runs: every target; throughput runs: the first four.
        let (floor, search, wasm_floor, baseline, floor_nofilter) = (0, 1, 2, 3, 4);
        let targets = vec![
            (fa, search_requests(&auth(fa), "/direct"), None),
            (fa, search_requests(&auth(fa), &path), SEARCH),
            // The floor answers with the filter's bytes: the same check holds.
            (wa, search_requests(&auth(wa), &path), SEARCH),
            (ba, search_requests(&auth(ba), &path), None),
            (ba, search_requests(&auth(ba), "/direct"), None),
        ];
        let (lat, p50s) = interleaved(&targets, args.rounds, args.round, 1, 20)?;
        let tp_targets: Vec<_> = targets.iter().take(4).cloned().collect();
        let (tp, _) = interleaved(&tp_targets, 1, args.round, 4, 5)?;
        let at = |v: &[Samples], i: usize| v.get(i).cloned().unwrap_or_default();
        let mut run = SearchRun {
            tools: *n,
            floor: at(&lat, floor),
            search: at(&lat, search),
            wasm_floor: at(&lat, wasm_floor),
            baseline: at(&lat, baseline),
            floor_nofilter: at(&lat, floor_nofilter),
            floor_tp: at(&tp, floor),
            search_tp: at(&tp, search),
            wasm_floor_tp: at(&tp, wasm_floor),
            baseline_tp: at(&tp, baseline),
            ..SearchRun::default()
        };
        run.search_bytes = run.search.body_bytes;
        run.ratio = round_figures(p50s.get(search), p50s.get(floor)).0;
        run.wasm_ratio = round_figures(p50s.get(search), p50s.get(wasm_floor)).0;
        run.first_search = firsts.iter().filter(|f| f.0 == *n).map(|f| f.3).collect();
        out.searches.push(run);
    }

    for (n, _) in catalogs {
        for kind in ["json", "sse"] {
            log(&format!("HTTP: tools/list ({kind}) at {n} tools"));
            let path = format!("/mcp/{kind}/{n}");
            let targets = vec![
                (
                    fa,
                    vec![Request::post_json(&auth(fa), &path, &list_body)],
                    Some("tool_search"),
                ),
                (
                    ba,
                    vec![Request::post_json(&auth(ba), &path, &list_body)],
                    None,
                ),
            ];
            let (lat, p50s) = interleaved(&targets, args.rounds.max(2), args.round, 1, 3)?;
            let (ratio, added) = round_figures(p50s.first(), p50s.get(1));
            let mut it = lat.into_iter();
            let filtered = it.next().unwrap_or_default();
            let baseline = it.next().unwrap_or_default();
            out.lists.push(ListRun {
                tools: *n,
                kind,
                upstream_bytes: baseline.body_bytes,
                client_bytes: filtered.body_bytes,
                filtered,
                baseline,
                first_list: firsts
                    .iter()
                    .find(|f| f.0 == *n && f.1 == kind)
                    .map(|f| f.2)
                    .unwrap_or_default(),
                ratio,
                added,
            });
        }
    }

    // Last: the upstreams' catalogs change here, and nothing measured after would see them.
    out.changes = measure_changes(args, catalogs, upstreams, envoy)?;
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("mcp-tool-search-bench: {e}");
            }
            eprintln!("usage: mcp-tool-search-bench --envoy BIN --wasm FILE --floor-wasm FILE --catalog-server BIN [--out FILE] [--sizes 100,1000,10000] [--round-secs S] [--rounds N] [--change-rounds N] [--budget-secs S] [--eval FILE]... [--notes FILE] [--commands FILE] [--skip-http] [--skip-inproc] [--quick] [--no-spin] [--perf list|list-fresh|list-sse|build|load|search] [--gateway SERVERSxTOOLS] [--skip-gateway]");
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    // Before the in-process part (minutes), not after it.
    if args.perf.is_none() && args.gateway.is_none() && !args.skip_http && args.floor_wasm.is_none()
    {
        eprintln!("mcp-tool-search-bench: {FLOOR_WASM_MISSING}");
        return ExitCode::from(2);
    }
    if let Some(what) = &args.perf {
        for &n in &args.sizes {
            let jsonl = mcp_tool_search_wasm_tests::catalog::jsonl(n);
            match inproc::perf_loop(what, &jsonl, args.budget) {
                Ok((count, median)) => {
                    println!("{what} at {n} tools: {count} iterations, median {median:?}")
                }
                Err(e) => {
                    eprintln!("mcp-tool-search-bench: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        return ExitCode::SUCCESS;
    }
    if let Some(spec) = args.gateway {
        return run_gateway(&args, spec);
    }
    let machine = report::Machine::probe(args.envoy.as_deref());
    let catalogs: Vec<(usize, String)> = args
        .sizes
        .iter()
        .map(|&n| (n, mcp_tool_search_wasm_tests::catalog::jsonl(n)))
        .collect();
    let inproc = if args.skip_inproc {
        None
    } else {
        match run_inproc(&args, &catalogs) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("mcp-tool-search-bench: in-process benchmarks failed: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    let http = if args.skip_http {
        None
    } else {
        let dir = match TestDir::new("bench") {
            Ok(d) => d,
            Err(e) => {
                eprintln!("mcp-tool-search-bench: {e}");
                return ExitCode::FAILURE;
            }
        };
        match run_http(&args, &dir, &catalogs) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("mcp-tool-search-bench: HTTP benchmarks failed: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    // The many-servers section, measured in the same run unless the HTTP benchmarks are off
    // (`--skip-http`, `--quick`, `--skip-gateway`); otherwise the file's old one is kept.
    let gateway_section = if args.skip_http || args.skip_gateway {
        None
    } else {
        match TestDir::new("bench-gateway")
            .map_err(|e| e.to_string())
            .and_then(|dir| gateway::run(&args, gateway::FULL_RUN, &dir))
        {
            Ok(s) => Some(format!("\n{s}")),
            Err(e) => {
                eprintln!("mcp-tool-search-bench: gateway benchmark failed: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    let load_end = report::loadavg();
    let text = report::render(&report::Inputs {
        args: &args,
        machine: &machine,
        load_end,
        elapsed: started.elapsed(),
        inproc: inproc.as_ref(),
        http: http.as_ref(),
    });
    // `make soak` writes the "Chaos soak" section of the same file (10-minute runs only, far
    // less often than this): a benchmark run keeps it.
    // ... and `--gateway` its own section, also kept.
    let old = std::fs::read_to_string(&args.out).unwrap_or_default();
    let text =
        text + &gateway_section.unwrap_or_else(|| gateway::section(&old)) + &soak_section(&old);
    if let Err(e) = std::fs::write(&args.out, text) {
        eprintln!("mcp-tool-search-bench: {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    log(&format!(
        "wrote {} in {:.0} s",
        args.out.display(),
        started.elapsed().as_secs_f64()
    ));
    ExitCode::SUCCESS
}

/// `--gateway`: only the many-servers section, written into `--out` in place of the old one.
fn run_gateway(args: &Args, spec: (usize, usize)) -> ExitCode {
    let section = TestDir::new("bench-gateway")
        .map_err(|e| e.to_string())
        .and_then(|dir| gateway::run(args, spec, &dir));
    let section = match section {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mcp-tool-search-bench: gateway benchmark failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    print!("{section}");
    let old = std::fs::read_to_string(&args.out).unwrap_or_default();
    if let Err(e) = std::fs::write(&args.out, gateway::replace_section(&old, &section)) {
        eprintln!("mcp-tool-search-bench: {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    log(&format!(
        "wrote the gateway section of {}",
        args.out.display()
    ));
    ExitCode::SUCCESS
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::soak_section;

    #[test]
    fn a_benchmark_run_keeps_the_soak_section() {
        assert_eq!(soak_section("# B\n\n## One\n"), "");
        assert_eq!(
            soak_section("# B\n\n## Chaos soak\n\nfigures\n\n## Next\n"),
            "\n## Chaos soak\n\nfigures\n"
        );
        assert_eq!(
            soak_section("# B\n\n## Chaos soak\n\nfigures\n"),
            "\n## Chaos soak\n\nfigures\n"
        );
    }
}
