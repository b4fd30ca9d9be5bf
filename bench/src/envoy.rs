//! The bench's Envoy: one process, one worker (`--concurrency 1`), three listeners side by side:
//! `filtered` (the mcp-tool-search filter, as in envoy/demo.yaml), `baseline` (the same
//! without the filter, as in envoy/baseline.yaml) and `floor` (the proxy-wasm floor,
//! bench/floor/: a filter that only replays learned answers). `filtered` and `baseline` have a
//! `direct_response` route (`/direct`, the `direct_response` floor, answered once the request
//! body is read); all three have one MCP route per upstream (`/mcp/<kind>/<tools>`, rewritten to
//! the upstream's `/mcp`), so that a request differs between them only in its `host`.

use mcp_tool_search_wasm_tests::envoy_config::{
    Bootstrap, Cluster, HttpFilter, Listener, Route, WasmFilter,
};
use mcp_tool_search_wasm_tests::harness::{http_get, Proc};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub type Result<T> = std::result::Result<T, String>;

/// Large enough for a 100,000-tool list (about 60 MB) held whole.
pub const BUFFER_LIMIT: u64 = 256 << 20;

/// One upstream MCP server and the path that reaches it.
#[derive(Debug, Clone)]
pub struct Upstream {
    pub cluster: String,
    pub path: String,
    pub addr: SocketAddr,
}

pub struct Envoy {
    proc: Proc,
    pub admin: SocketAddr,
    pub filtered: SocketAddr,
    pub baseline: SocketAddr,
    /// The proxy-wasm floor's listener, when the configuration has one (`bootstrap`'s does;
    /// the many-servers bench's has none).
    pub floor: Option<SocketAddr>,
    pub log_path: PathBuf,
}

/// The `direct_response` floor's answer.
const DIRECT_BODY: &str = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;

/// The buffer filter's limit: a search request is far smaller.
const BUFFER_MAX_REQUEST: u64 = 1 << 20;

/// The route to an upstream MCP server at `path`, rewritten to the upstream's `/mcp`, with no
/// route timeout.
fn mcp_route(path: &str, cluster: &str) -> Route {
    Route::path(path)
        .to_cluster(cluster)
        .route_option("prefix_rewrite", "/mcp")
        .route_option("timeout", "0s")
}

/// The routes of `filtered` and `baseline`: the `direct_response` floor, then the MCP routes.
/// The buffer filter runs on `/direct` only: a `direct_response` sent before Envoy has read the
/// request body closes an HTTP/1.1 connection (`connection: close`), which would put a
/// reconnection in every floor request. With the body read first, the floor is what the filter
/// itself does for a search: read the request, answer it locally.
fn routes(upstreams: &[Upstream]) -> Vec<Route> {
    let mut out = vec![Route::prefix("/direct").direct(200, Some(DIRECT_BODY))];
    out.extend(upstreams.iter().map(|u| {
        mcp_route(&u.path, &u.cluster)
            .per_filter_config("envoy.filters.http.buffer", HttpFilter::buffer_disabled())
    }));
    out
}

/// The path on the `floor` listener that teaches the proxy-wasm floor an answer
/// (bench/floor/src/lib.rs).
pub const FLOOR_LEARN_PATH: &str = "/floor/learn";

/// The `floor` listener's routes: the MCP routes of the others (the floor answers before the
/// router, so the cluster is never reached) and the learning path.
fn floor_routes(upstreams: &[Upstream]) -> Vec<Route> {
    let mut out: Vec<Route> = upstreams
        .iter()
        .map(|u| mcp_route(&u.path, &u.cluster))
        .collect();
    if let Some(u) = upstreams.first() {
        out.push(Route::path(FLOOR_LEARN_PATH).to_cluster_untimed(&u.cluster));
    }
    out
}

/// The proxy-wasm floor, in a VM of its own. `allow_on_headers_stop_iteration` as for the
/// filter: without it Envoy withholds the body from a filter that paused the headers, and a
/// floor that let the headers go would start an upstream request that the real filter (holding
/// its headers) never starts.
fn floor_filter(wasm: &Path) -> HttpFilter {
    HttpFilter::wasm(&WasmFilter {
        name: "bench_floor".to_owned(),
        wasm: wasm.to_path_buf(),
        configuration: None,
        allow_on_headers_stop_iteration: true,
        vm_id: Some("bench_floor".to_owned()),
    })
}

/// The filter (as in envoy/demo.yaml: V8, `allow_on_headers_stop_iteration` for
/// `hold_request_headers`), `config` its plugin configuration.
pub fn wasm_filter(wasm: &Path, config: &str) -> HttpFilter {
    HttpFilter::wasm(&WasmFilter::new(wasm, config).allow_on_headers_stop_iteration(true))
}

/// A listener on a free port with an HTTP connection manager (`stream_idle_timeout` 0 s, the
/// buffer limit on its connections, a route configuration named as the listener).
pub fn http_listener(name: &str, routes: Vec<Route>, filters: Vec<HttpFilter>) -> Listener {
    Listener::new(name)
        .buffer_limit(BUFFER_LIMIT)
        .no_stream_idle_timeout()
        .route_config_name(name)
        .routes(routes)
        .filters(filters)
}

/// A cluster to one upstream, with the buffer limit on its connections.
pub fn cluster(name: &str, addr: SocketAddr) -> Cluster {
    Cluster::new(name, addr)
        .connect_timeout("5s")
        .buffer_limit(BUFFER_LIMIT)
}

/// The bootstrap YAML: `wasm` is the filter's `.wasm`, `floor_wasm` the proxy-wasm floor's.
pub fn bootstrap(
    upstreams: &[Upstream],
    wasm: &Path,
    plugin_config: &str,
    floor_wasm: &Path,
) -> String {
    let buffered = |first: Option<HttpFilter>| -> Vec<HttpFilter> {
        first
            .into_iter()
            .chain([HttpFilter::buffer(BUFFER_MAX_REQUEST), HttpFilter::router()])
            .collect()
    };
    Bootstrap::new()
        .listener(http_listener(
            "filtered",
            routes(upstreams),
            buffered(Some(wasm_filter(wasm, plugin_config))),
        ))
        .listener(http_listener("baseline", routes(upstreams), buffered(None)))
        .listener(http_listener(
            "floor",
            floor_routes(upstreams),
            vec![floor_filter(floor_wasm), HttpFilter::router()],
        ))
        .clusters(upstreams.iter().map(|u| cluster(&u.cluster, u.addr)))
        .to_yaml()
}

impl Envoy {
    pub fn start(bin: &Path, dir: &Path, yaml: &str) -> Result<Envoy> {
        let config_path = dir.join("envoy-bench.yaml");
        let log_path = dir.join("envoy-bench.log");
        let admin_path = dir.join("envoy-bench.admin");
        std::fs::write(&config_path, yaml).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(&admin_path);
        let base_id = 700_000 + std::process::id() % 100_000;
        let mut cmd = Command::new(bin);
        cmd.arg("-c")
            .arg(&config_path)
            .arg("--concurrency")
            .arg("1")
            .arg("--base-id")
            .arg(base_id.to_string())
            .arg("--log-level")
            .arg("warning")
            .arg("--log-path")
            .arg(&log_path)
            .arg("--admin-address-path")
            .arg(&admin_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(
                std::fs::File::create(dir.join("envoy-bench.stderr")).map_err(|e| e.to_string())?,
            );
        let mut proc = Proc::spawn("envoy", cmd).map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(90);
        let tail = |p: &Path| -> String {
            let t = std::fs::read_to_string(p).unwrap_or_default();
            let lines: Vec<&str> = t.lines().collect();
            lines
                .get(lines.len().saturating_sub(30)..)
                .unwrap_or_default()
                .join("\n")
        };
        let admin = loop {
            if let Some(a) = std::fs::read_to_string(&admin_path)
                .ok()
                .and_then(|t| t.trim().parse::<SocketAddr>().ok())
            {
                break a;
            }
            if proc.exited().is_some() || Instant::now() >= deadline {
                return Err(format!("envoy did not start:\n{}", tail(&log_path)));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        loop {
            if let Ok((200, body)) = http_get(admin, "/ready") {
                if body.trim() == "LIVE" {
                    break;
                }
            }
            if proc.exited().is_some() || Instant::now() >= deadline {
                return Err(format!("envoy never LIVE:\n{}", tail(&log_path)));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let (_, body) = http_get(admin, "/listeners?format=json").map_err(|e| e.to_string())?;
        let v: serde_json::Value =
            serde_json::from_str(&body).map_err(|e| format!("/listeners: {e}"))?;
        let find = |name: &str| -> Result<SocketAddr> {
            v.get("listener_statuses")
                .and_then(|s| s.as_array())
                .and_then(|all| {
                    all.iter()
                        .find(|s| s.get("name").and_then(|n| n.as_str()) == Some(name))
                })
                .and_then(|s| s.get("local_address")?.get("socket_address").cloned())
                .and_then(|sa| {
                    let ip = sa.get("address")?.as_str()?.to_owned();
                    let port = sa.get("port_value")?.as_u64()?;
                    format!("{ip}:{port}").parse().ok()
                })
                .ok_or_else(|| format!("listener {name} not found in {body}"))
        };
        let filtered = find("filtered")?;
        let baseline = find("baseline")?;
        let floor = find("floor").ok();
        Ok(Envoy {
            proc,
            admin,
            filtered,
            baseline,
            floor,
            log_path,
        })
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }

    pub fn running(&mut self) -> bool {
        self.proc.exited().is_none()
    }

    /// Resident memory of the Envoy process (kB), from /proc.
    pub fn rss_kb(&self) -> Option<u64> {
        crate::procfs::rss_kb(self.pid())
    }

    /// Admin `/stats` lines containing `filter`.
    pub fn stats(&self, filter: &str) -> Vec<(String, String)> {
        match http_get(self.admin, &format!("/stats?filter={filter}")) {
            Ok((200, body)) => body
                .lines()
                .filter_map(|l| {
                    l.split_once(": ")
                        .map(|(a, b)| (a.to_owned(), b.to_owned()))
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The last lines of Envoy's log (for failure messages).
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log_path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines
            .get(lines.len().saturating_sub(20)..)
            .unwrap_or_default()
            .join("\n")
    }

    pub fn stop(mut self) {
        self.proc.kill();
    }
}

/// A `catalog-server` (stateless; JSON or SSE responses) with `--tcp-nodelay`.
pub struct CatalogServer {
    _proc: Proc,
    pub addr: SocketAddr,
}

impl CatalogServer {
    pub fn start(bin: &Path, tools: &Path, json: bool, dir: &Path) -> Result<CatalogServer> {
        let name = tools
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stderr = dir.join(format!(
            "{name}-{}.stderr",
            if json { "json" } else { "sse" }
        ));
        let mut cmd = Command::new(bin);
        cmd.arg("--tools")
            .arg(tools)
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--stateless")
            .arg("--tcp-nodelay");
        if json {
            cmd.arg("--json");
        }
        let stdout = dir.join(format!(
            "{name}-{}.stdout",
            if json { "json" } else { "sse" }
        ));
        cmd.stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).map_err(|e| e.to_string())?)
            .stderr(std::fs::File::create(&stderr).map_err(|e| e.to_string())?);
        let mut proc = Proc::spawn("catalog-server", cmd).map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(30);
        let addr = loop {
            let text = std::fs::read_to_string(&stdout).unwrap_or_default();
            if let Some(addr) = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("listening on "))
                .and_then(|a| a.parse::<SocketAddr>().ok())
            {
                break addr;
            }
            if proc.exited().is_some() || Instant::now() >= deadline {
                return Err(format!(
                    "catalog-server did not start: {}",
                    std::fs::read_to_string(&stderr).unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Ok(CatalogServer { _proc: proc, addr })
    }
}
