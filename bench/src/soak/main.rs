//! `mcp-tool-search-soak` (`make soak`): a chaos soak of the filter in a real Envoy.
//!
//! Envoy 1.40 (two workers) with the filter (hybrid ranking through the real embeddings sidecar
//! and model) in front of two `catalog-server`s, one route and catalog namespace each, under a
//! mixed load from several keep-alive connections, while the upstream catalogs change (with
//! `notifications/tools/list_changed`), the sidecar is killed and restarted, and one upstream is
//! stopped and started. Records every request, Envoy's resident memory and each Wasm VM's
//! linear memory over time, the filter's stats and Envoy's log; writes `report.md` and
//! `memory.csv` (and `memory.svg`) into the output directory and, for runs of 10 minutes or
//! more, a "Chaos soak" section into `BENCHMARKS.md`. Exits non-zero when the filter caused an
//! error, memory was not flat over the second half, too few searches were hybrid while the
//! sidecar was up, or hybrid ranking was slow to come back after a restart of the sidecar (the
//! criteria: `report/criteria.rs`).
//!
//! ```text
//! mcp-tool-search-soak --catalog-server BIN [--seconds 600] [--conns 12] [--think-ms 50]
//!     [--sample-secs 5] [--tools 120] [--catalog-every 30] [--embedder-every 90]
//!     [--embedder-down 20] [--upstream-every 120] [--upstream-down 15] [--out-dir target/soak]
//!     [--benchmarks BENCHMARKS.md]
//! ```
//!
//! `--tools N`: the tools in each upstream's catalog (`catalog-server` serves any JSONL it is
//! given, plus its built-in `slow_progress`); a change swaps and rewords the same few tools at
//! any size (see `catalogs.rs`), so `--tools 10000` measures how fast a change is embedded in a
//! large catalog.
//!
//! Envoy, the `.wasm`, the sidecar and its model are found as the end-to-end tests find them
//! (`ENVOY_BIN`, `FILTER_WASM`, `EMBEDDER_BIN`, `MODEL_DIR`, else their places in the
//! workspace).
//!
//! `upstream.rs` runs the `catalog-server`s and `catalogs.rs` the catalogs they serve,
//! `bootstrap.rs` configures Envoy and the filter, `warm_up.rs` brings the catalogs to the
//! steady state, `load.rs` (over `http.rs`) and `watch.rs` are the clients, `chaos.rs` the fault
//! timeline, `memory.rs` the memory samples, `report/` the verdict and the report.

mod bootstrap;
mod catalogs;
mod chaos;
mod http;
mod load;
mod memory;
mod report;
mod upstream;
mod warm_up;
mod watch;

use catalogs::Catalogs;
use chaos::{Event, Processes};
use mcp_tool_search_wasm_tests::harness::{self, Embedder, Envoy, TestDir};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use upstream::Upstream;

pub type Result<T> = std::result::Result<T, String>;

pub const UPSTREAMS: usize = 2;
/// The catalog namespace of each upstream's route.
pub const NAMESPACES: [&str; UPSTREAMS] = ["alpha", "beta"];
/// The route (client-facing MCP path) of each upstream.
pub const ROUTES: [&str; UPSTREAMS] = ["/alpha/mcp", "/beta/mcp"];
/// The filter's plain-HTTP search endpoint (its default).
pub const SEARCH_PATH: &str = "/mcp/search";
/// The upstream that is stopped and started (the other stays up throughout).
pub const STOPPED: usize = 1;

#[derive(Debug, Clone)]
pub struct Args {
    pub catalog_server: PathBuf,
    pub seconds: u64,
    pub conns: usize,
    pub think: Duration,
    pub sample: Duration,
    /// Tools in each catalog (`slow_progress` aside).
    pub tools: usize,
    pub catalog_every: Duration,
    pub embedder_every: Duration,
    pub embedder_down: Duration,
    pub upstream_every: Duration,
    pub upstream_down: Duration,
    pub out_dir: PathBuf,
    pub benchmarks: Option<PathBuf>,
}

fn parse_args() -> Result<Args> {
    let mut a = Args {
        catalog_server: PathBuf::new(),
        seconds: 600,
        conns: 12,
        think: Duration::from_millis(50),
        sample: Duration::from_secs(5),
        tools: catalogs::DEFAULT_TOOLS,
        catalog_every: Duration::from_secs(30),
        embedder_every: Duration::from_secs(90),
        embedder_down: Duration::from_secs(20),
        upstream_every: Duration::from_secs(120),
        upstream_down: Duration::from_secs(15),
        out_dir: PathBuf::from("target/soak"),
        benchmarks: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{arg} needs a value"));
        let secs = |v: String| -> Result<Duration> {
            v.parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s > 0.0)
                .map(Duration::from_secs_f64)
                .ok_or_else(|| format!("not a positive number of seconds: {v}"))
        };
        match arg.as_str() {
            "--catalog-server" => a.catalog_server = PathBuf::from(value()?),
            "--seconds" => a.seconds = value()?.parse().map_err(|e| format!("--seconds: {e}"))?,
            "--conns" => a.conns = value()?.parse().map_err(|e| format!("--conns: {e}"))?,
            "--think-ms" => {
                a.think =
                    Duration::from_millis(value()?.parse().map_err(|e| format!("--think-ms: {e}"))?)
            }
            "--sample-secs" => a.sample = secs(value()?)?,
            "--tools" => a.tools = value()?.parse().map_err(|e| format!("--tools: {e}"))?,
            "--catalog-every" => a.catalog_every = secs(value()?)?,
            "--embedder-every" => a.embedder_every = secs(value()?)?,
            "--embedder-down" => a.embedder_down = secs(value()?)?,
            "--upstream-every" => a.upstream_every = secs(value()?)?,
            "--upstream-down" => a.upstream_down = secs(value()?)?,
            "--out-dir" => a.out_dir = PathBuf::from(value()?),
            "--benchmarks" => a.benchmarks = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if a.catalog_server.as_os_str().is_empty() {
        return Err("--catalog-server BIN is required".to_owned());
    }
    if a.seconds == 0 || a.conns == 0 {
        return Err("--seconds and --conns must be positive".to_owned());
    }
    Ok(a)
}

/// What the load, the watchers and the sampler share.
pub struct Shared {
    pub addr: SocketAddr,
    pub stop: AtomicBool,
    pub think: Duration,
    /// The tool each upstream always serves (called through the filter).
    pub call_tools: [String; UPSTREAMS],
}

impl Shared {
    pub fn mcp_path(&self, upstream: usize) -> String {
        ROUTES.get(upstream).copied().unwrap_or("/").to_owned()
    }
}

fn log(msg: &str) {
    eprintln!("[soak] {msg}");
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mcp-tool-search-soak: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("mcp-tool-search-soak: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs the soak; `Ok(passed)`.
fn run(args: &Args) -> Result<bool> {
    std::fs::create_dir_all(&args.out_dir)
        .map_err(|e| format!("{}: {e}", args.out_dir.display()))?;
    let dir = TestDir::new("soak").map_err(|e| e.to_string())?;
    let catalogs = Catalogs::new(args.tools)?;
    let wasm = harness::filter_wasm().map_err(|e| e.to_string())?;

    log("starting the embeddings sidecar and two catalog-servers");
    let embedder = Embedder::start(&dir).map_err(|e| format!("embedder: {e}"))?;
    let tools_files = [dir.join("alpha.jsonl"), dir.join("beta.jsonl")];
    let mut upstreams: [Option<Upstream>; UPSTREAMS] = [None, None];
    let mut addrs = Vec::new();
    for (u, file) in tools_files.iter().enumerate() {
        std::fs::write(file, catalogs.jsonl(u, 0)).map_err(|e| e.to_string())?;
        let server = Upstream::start(&args.catalog_server, file, "127.0.0.1:0", dir.path())?;
        addrs.push(server.addr);
        if let Some(slot) = upstreams.get_mut(u) {
            *slot = Some(server);
        }
    }
    let addrs: [SocketAddr; UPSTREAMS] = addrs
        .try_into()
        .map_err(|_| "two upstream addresses".to_owned())?;
    let yaml = bootstrap::bootstrap(&addrs, embedder.addr, &wasm);
    let mut envoy =
        Envoy::start_yaml(&yaml, "wasm:warning", &dir).map_err(|e| format!("envoy: {e}"))?;
    log(&format!(
        "Envoy pid {} on {}; warming up",
        envoy.pid(),
        envoy.listener
    ));
    let mut procs = Processes {
        embedder,
        upstreams,
        addrs,
        tools_files,
        catalog_server: args.catalog_server.clone(),
        version: 0,
    };
    let warm = warm_up::warm_up(envoy.listener, catalogs.served())?;
    log(&warm);

    let shared = Shared {
        addr: envoy.listener,
        stop: AtomicBool::new(false),
        think: args.think,
        call_tools: [catalogs.call_tool(0), catalogs.call_tool(1)],
    };
    let watch_counts = [watch::WatchCounts::default(), watch::WatchCounts::default()];
    let stats_before = envoy.stats("mcp_tool_search").unwrap_or_default();
    let vm_stats_before = envoy.stats("wasm.envoy.wasm").unwrap_or_default();
    let events: Mutex<Vec<Event>> = Mutex::new(Vec::new());
    let plan = chaos::schedule(args);
    let end = Duration::from_secs(args.seconds);
    let load_start = report::loadavg();
    let t0 = Instant::now();
    let pid = envoy.pid();
    log(&format!(
        "load: {} connections for {} s; {} fault actions planned",
        args.conns,
        args.seconds,
        plan.len()
    ));

    let (records, samples) = std::thread::scope(|scope| {
        let shared = &shared;
        let watchers: Vec<_> = watch_counts
            .iter()
            .enumerate()
            .map(|(u, counts)| scope.spawn(move || watch::run(shared, u, counts)))
            .collect();
        let sampler = scope.spawn(move || memory::sampler(shared, pid, args.sample, t0));
        let workers: Vec<_> = (0..args.conns)
            .map(|w| scope.spawn(move || load::run(shared, w)))
            .collect();
        // The chaos, on this thread.
        let mut last_minute = 0;
        for (at, action) in &plan {
            while t0.elapsed() < *at {
                std::thread::sleep(Duration::from_millis(50));
                let minute = t0.elapsed().as_secs() / 60;
                if minute > last_minute {
                    last_minute = minute;
                    log(&format!("{minute} min"));
                }
            }
            for event in procs.act(*action, &catalogs, &dir) {
                log(&format!(
                    "t={:.1}s {:?}",
                    event.at.saturating_duration_since(t0).as_secs_f64(),
                    event.what
                ));
                if let Ok(mut e) = events.lock() {
                    e.push(event);
                }
            }
        }
        while t0.elapsed() < end {
            std::thread::sleep(Duration::from_millis(50));
        }
        shared.stop.store(true, Ordering::Relaxed);
        let mut records = Vec::new();
        for w in workers {
            records.extend(w.join().unwrap_or_default());
        }
        for w in watchers {
            let _ = w.join();
        }
        let samples = sampler.join().unwrap_or_default();
        (records, samples)
    });
    let elapsed = t0.elapsed();
    log(&format!("load done: {} requests", records.len()));

    // Let Envoy write its last log lines before it is read.
    std::thread::sleep(Duration::from_millis(300));
    let envoy_alive = envoy.running();
    let stats_after = envoy.stats("mcp_tool_search").unwrap_or_default();
    let vm_stats_after = envoy.stats("wasm.envoy.wasm").unwrap_or_default();
    let envoy_log = envoy.log();
    let _ = std::fs::write(args.out_dir.join("envoy.log"), &envoy_log);
    let events = events.into_inner().unwrap_or_default();
    let inputs = report::Inputs {
        args,
        load_start,
        t0,
        elapsed,
        warm_up: warm,
        records: &records,
        events: &events,
        samples: &samples,
        stats_before: &stats_before,
        stats_after: &stats_after,
        vm_stats_before: &vm_stats_before,
        vm_stats_after: &vm_stats_after,
        envoy_log: &envoy_log,
        envoy_alive,
        list_changed_seen: watch_counts
            .iter()
            .map(|c| c.list_changed.load(Ordering::Relaxed))
            .collect(),
        watch_streams: watch_counts
            .iter()
            .map(|c| c.streams.load(Ordering::Relaxed))
            .collect(),
        served: catalogs.served(),
    };
    let verdict = report::write(&inputs)?;
    drop(envoy);
    drop(procs);
    Ok(verdict)
}
