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
//! error or memory was not flat over the second half.
//!
//! ```text
//! mcp-tool-search-soak --catalog-server BIN [--seconds 600] [--conns 12] [--think-ms 50]
//!     [--sample-secs 5] [--catalog-every 30] [--embedder-every 90] [--embedder-down 20]
//!     [--upstream-every 120] [--upstream-down 15] [--out-dir target/soak]
//!     [--benchmarks BENCHMARKS.md]
//! ```
//!
//! Envoy, the `.wasm`, the sidecar and its model are found as the end-to-end tests find them
//! (`ENVOY_BIN`, `FILTER_WASM`, `EMBEDDER_BIN`, `MODEL_DIR`, else their places in the
//! workspace).

mod http;
mod load;
mod memory;
mod report;
mod watch;

use mcp_tool_search_wasm_tests::harness::{
    self, static_cluster_yaml, Embedder, Envoy, Proc, TestDir,
};
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

// ---- the upstreams ---------------------------------------------------------------------------------

/// A running `catalog-server`: stateful (sessions, so that `list_changed` reaches the `GET`
/// streams), SSE responses, `--tcp-nodelay` as the bench runs it (without it, SSE's small writes
/// meet the client's delayed ACK and ~40 ms stalls would dominate the upstream latencies). The
/// harness's `CatalogServer` has no such option, hence this small twin.
pub struct Upstream {
    _proc: Proc,
    pub addr: SocketAddr,
}

static UPSTREAM_STARTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl Upstream {
    fn start(bin: &Path, tools: &Path, listen: &str, dir: &Path) -> Result<Upstream> {
        let n = UPSTREAM_STARTS.fetch_add(1, Ordering::Relaxed);
        let stdout = dir.join(format!("catalog-server-{n}.stdout"));
        let stderr = dir.join(format!("catalog-server-{n}.stderr"));
        let file = |p: &Path| std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()));
        let mut cmd = Command::new(bin);
        cmd.arg("--tools")
            .arg(tools)
            .arg("--listen")
            .arg(listen)
            .arg("--tcp-nodelay")
            .stdin(Stdio::null())
            .stdout(file(&stdout)?)
            .stderr(file(&stderr)?);
        let mut proc = Proc::spawn("catalog-server", cmd).map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let text = std::fs::read_to_string(&stdout).unwrap_or_default();
            if let Some(addr) = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("listening on "))
                .and_then(|a| a.parse::<SocketAddr>().ok())
            {
                return Ok(Upstream { _proc: proc, addr });
            }
            if proc.exited().is_some() || Instant::now() >= deadline {
                return Err(format!(
                    "catalog-server did not start on {listen}: {}",
                    harness::tail(&stderr, 10)
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `POST /admin/tools?notify=1`: serve `jsonl` from now on and send
    /// `notifications/tools/list_changed` to every session. Returns (tools, sessions notified).
    fn set_tools(&self, jsonl: &str) -> Result<(u64, u64)> {
        let request = format!(
            "POST /admin/tools?notify=1 HTTP/1.1\r\nHost: {}\r\nContent-Type: application/jsonl\r\nContent-Length: {}\r\n\r\n{jsonl}",
            self.addr,
            jsonl.len(),
        );
        let reply =
            harness::raw_exchange(self.addr, request.as_bytes()).map_err(|e| e.to_string())?;
        let v: Option<Value> = serde_json::from_slice(&reply.body).ok();
        let field = |name: &str| v.as_ref()?.get(name)?.as_u64();
        match (reply.status, field("tools"), field("notified")) {
            (200, Some(tools), Some(notified)) => Ok((tools, notified)),
            (status, _, _) => Err(format!(
                "/admin/tools: {status} {}",
                String::from_utf8_lossy(&reply.body)
            )),
        }
    }
}

// ---- the catalogs ----------------------------------------------------------------------------------

/// A stable core (always served, so calls to it never fail for a reason of the catalog) plus a
/// rotating window; every change swaps part of the window and rewrites a few core descriptions,
/// so that each change adds, removes and alters tools (and some must be embedded again) while
/// the catalog's size stays the same: memory has no reason to grow with the versions.
pub struct Catalogs {
    pool: Vec<Value>,
}

const CORE: usize = 100;
const ROTATING: usize = 20;
const POOL_PER_UPSTREAM: usize = 200;
/// Tools that enter (and leave) the rotating window at each change.
const ROTATE_STEP: usize = 7;
/// Core tools whose description changes at each change.
const REWORDED: usize = 3;

impl Catalogs {
    fn new() -> Result<Catalogs> {
        let pool: Vec<Value> =
            mcp_tool_search_wasm_tests::catalog::generate(POOL_PER_UPSTREAM * UPSTREAMS)
                .into_iter()
                .map(|t| serde_json::from_str(&t.json.to_json_string()))
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| format!("generated catalog: {e}"))?;
        if pool.len() < POOL_PER_UPSTREAM * UPSTREAMS {
            return Err(format!("only {} generated tools", pool.len()));
        }
        Ok(Catalogs { pool })
    }

    fn tool(&self, upstream: usize, i: usize) -> Option<&Value> {
        self.pool.get(upstream * POOL_PER_UPSTREAM + i)
    }

    /// The name of the core tool every load connection calls.
    fn call_tool(&self, upstream: usize) -> String {
        self.tool(upstream, 0)
            .and_then(|t| t.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }

    /// The JSONL `catalog-server` serves for `version` (0: the first).
    pub fn jsonl(&self, upstream: usize, version: usize) -> String {
        let mut out = String::new();
        let rotating = POOL_PER_UPSTREAM - CORE;
        let indices =
            (0..CORE).chain((0..ROTATING).map(|j| CORE + (version * ROTATE_STEP + j) % rotating));
        for i in indices {
            let Some(tool) = self.tool(upstream, i) else {
                continue;
            };
            let mut tool = tool.clone();
            let reworded = version > 0
                && i < CORE
                && (0..REWORDED).any(|k| (version * REWORDED + k) % CORE == i && i != 0);
            if reworded {
                if let Some(Value::String(d)) = tool.get_mut("description") {
                    d.push_str(&format!(" Revision {version} of this tool."));
                }
            }
            out.push_str(&tool.to_string());
            out.push('\n');
        }
        out
    }

    /// Tools served (with `catalog-server`'s built-in `slow_progress`).
    pub fn served(&self) -> usize {
        CORE + ROTATING + 1
    }
}

// ---- Envoy -------------------------------------------------------------------------------------------

fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The filter as the README configures it for hybrid ranking, `hold_request_headers` on (Envoy's
/// `allow_on_headers_stop_iteration`, as in `envoy/demo.yaml`), every other setting its default
/// but two: the soak checks what operators run. `catalog.path` is `/mcp` because the routes
/// rewrite their client-facing paths to the upstream's `/mcp`, and the filter's own fetches go
/// to the cluster directly; `search.http_namespaces` lets the endpoint's route (namespace
/// `alpha`) search `beta` too.
pub fn plugin_config() -> String {
    serde_json::json!({
        "mcp_paths": ROUTES,
        "hold_request_headers": true,
        "eager_patterns": ["github_get_*"],
        "search": {"ranking": "hybrid", "http_namespaces": ["beta"], "embeddings": {
            "cluster": "embeddings", "model_id": "all-MiniLM-L6-v2", "dimensions": 384}},
        "catalog": {"path": "/mcp"}
    })
    .to_string()
}

fn bootstrap(upstreams: &[SocketAddr; UPSTREAMS], embedder: SocketAddr, wasm: &Path) -> String {
    let mut routes = String::new();
    let mut clusters = String::new();
    for (i, addr) in upstreams.iter().enumerate() {
        let ns = NAMESPACES.get(i).copied().unwrap_or_default();
        let route = ROUTES.get(i).copied().unwrap_or_default();
        routes.push_str(&format!(
            "              - match: {{ path: {route} }}\n                route: {{ cluster: {cluster}, prefix_rewrite: \"/mcp\", timeout: 0s }}\n                metadata: {{ filter_metadata: {{ mcp_tool_search: {{ namespace: {ns} }} }} }}\n",
            route = quoted(route),
            cluster = quoted(&format!("upstream_{ns}")),
            ns = quoted(ns),
        ));
        for line in static_cluster_yaml(&format!("upstream_{ns}"), *addr).lines() {
            clusters.push_str(&format!("  {line}\n"));
        }
    }
    // The HTTP search endpoint (the namespace is in each request's body).
    routes.push_str(&format!(
        "              - match: {{ prefix: {p} }}\n                route: {{ cluster: 'upstream_alpha' }}\n                metadata: {{ filter_metadata: {{ mcp_tool_search: {{ namespace: 'alpha' }} }} }}\n",
        p = quoted(SEARCH_PATH)
    ));
    for line in static_cluster_yaml("embeddings", embedder).lines() {
        clusters.push_str(&format!("  {line}\n"));
    }
    format!(
        r#"admin:
  address: {{ socket_address: {{ address: 127.0.0.1, port_value: 0 }} }}
static_resources:
  listeners:
  - name: soak
    address: {{ socket_address: {{ address: 127.0.0.1, port_value: 0 }} }}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: soak
          stream_idle_timeout: 0s
          route_config:
            name: soak
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
{routes}          http_filters:
{filter}          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
{clusters}"#,
        filter = mcp_tool_search_bench::envoy::wasm_filter_yaml(wasm, &plugin_config()),
    )
}

// ---- the fault timeline ----------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub enum What {
    UpstreamDown(usize),
    UpstreamUp(usize),
    EmbedderDown,
    EmbedderUp,
    /// A catalog change: version, and per upstream (tools served, sessions notified) or why not.
    CatalogChanged(usize, Vec<std::result::Result<(u64, u64), String>>),
    /// A fault action that did not work (the run goes on; the report says so).
    ActionFailed(String),
}

#[derive(Debug, Clone)]
pub struct Event {
    pub at: Instant,
    pub what: What,
}

/// The planned actions, by time from the start of the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    ChangeCatalogs,
    StopEmbedder,
    StartEmbedder,
    StopUpstream,
    StartUpstream,
}

fn schedule(args: &Args) -> Vec<(Duration, Action)> {
    let end = Duration::from_secs(args.seconds);
    let mut plan = Vec::new();
    let mut t = args.catalog_every;
    while t < end {
        plan.push((t, Action::ChangeCatalogs));
        t += args.catalog_every;
    }
    // The first stop of each comes half a period in, so that the two fault kinds (and the
    // catalog changes) fall at different times in a short run, and together in a long one.
    let mut periodic = |every: Duration, down: Duration, stop: Action, start: Action| {
        let mut t = every / 2;
        while t < end {
            plan.push((t, stop));
            plan.push((t + down, start));
            t += every;
        }
    };
    periodic(
        args.embedder_every,
        args.embedder_down,
        Action::StopEmbedder,
        Action::StartEmbedder,
    );
    periodic(
        args.upstream_every,
        args.upstream_down,
        Action::StopUpstream,
        Action::StartUpstream,
    );
    plan.sort_by_key(|(t, _)| *t);
    plan
}

/// The processes the chaos acts on, owned by the main thread (the harness kills a child when
/// the thread that spawned it ends, so every start happens here).
struct Processes {
    embedder: Embedder,
    upstreams: [Option<Upstream>; UPSTREAMS],
    addrs: [SocketAddr; UPSTREAMS],
    tools_files: [PathBuf; UPSTREAMS],
    catalog_server: PathBuf,
    version: usize,
}

impl Processes {
    fn act(&mut self, action: Action, catalogs: &Catalogs, dir: &TestDir) -> Vec<What> {
        match action {
            Action::ChangeCatalogs => {
                self.version += 1;
                let mut results = Vec::new();
                for u in 0..UPSTREAMS {
                    let jsonl = catalogs.jsonl(u, self.version);
                    // A stopped upstream starts again with the version of the moment.
                    let written = self
                        .tools_files
                        .get(u)
                        .map(|f| std::fs::write(f, &jsonl).map_err(|e| e.to_string()));
                    let result = match (written, self.upstreams.get(u)) {
                        (Some(Err(e)), _) => Err(e),
                        (_, Some(Some(server))) => server.set_tools(&jsonl),
                        _ => Err("stopped: served from its next start".to_owned()),
                    };
                    results.push(result);
                }
                vec![What::CatalogChanged(self.version, results)]
            }
            Action::StopEmbedder => {
                self.embedder.stop();
                vec![What::EmbedderDown]
            }
            Action::StartEmbedder => match self.embedder.restart() {
                Ok(()) => vec![What::EmbedderUp],
                Err(e) => vec![What::ActionFailed(format!("embedder restart: {e}"))],
            },
            Action::StopUpstream => {
                if let Some(slot) = self.upstreams.get_mut(STOPPED) {
                    // Drop kills the process group (SIGKILL) and reaps it.
                    *slot = None;
                }
                vec![What::UpstreamDown(STOPPED)]
            }
            Action::StartUpstream => match self.start_upstream(STOPPED, dir) {
                Ok(()) => vec![What::UpstreamUp(STOPPED)],
                Err(e) => vec![What::ActionFailed(format!("upstream restart: {e}"))],
            },
        }
    }

    /// Starts upstream `u` again on its address (Envoy's cluster points there).
    fn start_upstream(&mut self, u: usize, dir: &TestDir) -> Result<()> {
        let addr = self.addrs.get(u).copied().ok_or("no such upstream")?;
        let tools = self.tools_files.get(u).cloned().unwrap_or_default();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match Upstream::start(&self.catalog_server, &tools, &addr.to_string(), dir.path()) {
                Ok(server) => {
                    if let Some(slot) = self.upstreams.get_mut(u) {
                        *slot = Some(server);
                    }
                    return Ok(());
                }
                Err(e) if Instant::now() >= deadline => return Err(e.to_string()),
                // The port may still be held for a moment.
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }
}

// ---- memory samples --------------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub struct Sample {
    pub at: Duration,
    pub rss_kb: Option<u64>,
    /// (linear memory start address, bytes) of each VM.
    pub vms: Vec<(u64, u64)>,
}

fn sampler(shared: &Shared, pid: u32, every: Duration, t0: Instant) -> Vec<Sample> {
    let mut out = Vec::new();
    let mut next = Instant::now();
    while !shared.stop.load(Ordering::Relaxed) {
        out.push(Sample {
            at: t0.elapsed(),
            rss_kb: memory::rss_kb(pid),
            vms: memory::linear_memories(pid),
        });
        next += every;
        while Instant::now() < next && !shared.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    out.push(Sample {
        at: t0.elapsed(),
        rss_kb: memory::rss_kb(pid),
        vms: memory::linear_memories(pid),
    });
    out
}

// ---- warm-up ---------------------------------------------------------------------------------------

/// `GET /mcp/search/health`.
fn health(addr: SocketAddr) -> Option<Value> {
    let (_, body) = harness::http_get(addr, &format!("{SEARCH_PATH}/health")).ok()?;
    serde_json::from_str(&body).ok()
}

/// Lists both catalogs through the filter (which learns them), then waits until the sidecar
/// has embedded them: the soak starts from the steady state, hybrid ranking for every search.
fn warm_up(addr: SocketAddr, served: usize) -> Result<String> {
    let mut conn = http::Conn::new(addr);
    for (u, route) in ROUTES.iter().enumerate() {
        let session = load::open_session(&mut conn, route, 1)
            .map_err(|o| format!("warm-up initialize on {route}: {o:?}"))?;
        let list = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let reply = conn
            .exchange(&http::post_json(route, &list.to_string(), Some(&session)))
            .map_err(|f| format!("warm-up tools/list on {route}: {f:?}"))?;
        if reply.status != 200 {
            return Err(format!(
                "warm-up tools/list on {route} (upstream {u}): {} {}",
                reply.status,
                reply.text()
            ));
        }
    }
    let start = Instant::now();
    let deadline = start + Duration::from_secs(300);
    loop {
        let h = health(addr);
        let embedded = |ns: &str| -> Option<(u64, u64)> {
            let c = h.as_ref()?.get("catalogs")?.get(ns)?;
            Some((c.get("tools")?.as_u64()?, c.get("embedded")?.as_u64()?))
        };
        let counts: Vec<Option<(u64, u64)>> = NAMESPACES.iter().map(|ns| embedded(ns)).collect();
        let done = counts
            .iter()
            .all(|c| matches!(c, Some((t, e)) if *t as usize == served && e >= t));
        if done {
            return Ok(format!(
                "both catalogs ({served} tools each) listed and embedded in {:.1} s",
                start.elapsed().as_secs_f64()
            ));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "catalogs not embedded after {:?}: {counts:?}",
                deadline - start
            ));
        }
        std::thread::sleep(Duration::from_millis(500));
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
    let catalogs = Catalogs::new()?;
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
    let yaml = bootstrap(&addrs, embedder.addr, &wasm);
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
    let warm = warm_up(envoy.listener, catalogs.served())?;
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
    let plan = schedule(args);
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
        let sampler = scope.spawn(move || sampler(shared, pid, args.sample, t0));
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
            let happened = Instant::now();
            for what in procs.act(*action, &catalogs, &dir) {
                log(&format!("t={:.1}s {what:?}", t0.elapsed().as_secs_f64()));
                if let Ok(mut e) = events.lock() {
                    e.push(Event { at: happened, what });
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
