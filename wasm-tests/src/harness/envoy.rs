//! Envoy as a child process: the e2e bootstrap (an MCP upstream, this filter or none, the
//! filters and clusters a test adds), or any bootstrap whose admin and listener bind port 0;
//! its admin API (ready, listeners, stats).

use super::{envoy_bin, err, next_id, port_open, tail, Proc, Result, TestDir};
use crate::envoy_config::{Bootstrap, Cluster, HttpFilter, Listener, Route, WasmFilter};
use crate::http1;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The Wasm filter to load, and its plugin configuration (JSON text).
#[derive(Debug, Clone)]
pub struct FilterOptions {
    pub wasm: PathBuf,
    pub config_json: String,
}

/// How to run Envoy.
#[derive(Debug, Clone)]
pub struct EnvoyOptions {
    /// The MCP server behind cluster `mcp_upstream`.
    pub upstream: SocketAddr,
    /// The MCP path (exact match; route timeout 0s).
    pub mcp_path: String,
    /// `None`: the no-filter baseline.
    pub filter: Option<FilterOptions>,
    /// Envoy `--component-log-level` (the global level is `warning`): by default the filter's
    /// own logs and the HTTP connection manager's (stream resets, buffer limits) at debug.
    pub component_log_level: String,
    /// HTTP filters placed before the Wasm filter (e.g. [`crate::envoy_config::JwtAuthnOptions::filter`]).
    pub http_filters_before: Vec<HttpFilter>,
    /// `allow_on_headers_stop_iteration: true` on the Wasm `PluginConfig` (Envoy 1.35+): lets
    /// the filter hold request headers until it has read the body (`hold_request_headers`).
    pub allow_on_headers_stop_iteration: bool,
    /// Route metadata `metadata.filter_metadata.mcp_tool_search.namespace` on every route to
    /// the upstream (the filter's catalog namespace; else the cluster name, `mcp_upstream`).
    pub route_namespace: Option<String>,
    /// Also route this prefix to the upstream (the filter's HTTP search endpoint and its
    /// `/health`, e.g. `/mcp/search`), with the same metadata.
    pub search_prefix: Option<String>,
    /// More clusters after `mcp_upstream`, e.g. the filter's `embeddings`.
    pub extra_clusters: Vec<Cluster>,
    /// Route every other path to the upstream too (as `make run` does), with Envoy's path
    /// normalization off: what reaches the server is the path as the client wrote it.
    pub catch_all_route: bool,
}

impl EnvoyOptions {
    pub fn new(upstream: SocketAddr, filter: Option<FilterOptions>) -> Self {
        Self {
            upstream,
            mcp_path: "/mcp".to_owned(),
            filter,
            component_log_level: "wasm:debug,http:debug".to_owned(),
            http_filters_before: Vec::new(),
            allow_on_headers_stop_iteration: false,
            route_namespace: None,
            search_prefix: None,
            extra_clusters: Vec::new(),
            catch_all_route: false,
        }
    }
}

/// The upstream's cluster in [`bootstrap_yaml`].
const UPSTREAM_CLUSTER: &str = "mcp_upstream";

/// The e2e bootstrap: listener `mcp_listener` routing the MCP path, `/other` and (when asked)
/// the search prefix and every other path to `mcp_upstream`, `/direct` answered by Envoy; the
/// filters before, this filter (unless the baseline), the router. Admin and listener bind port
/// 0; [`Envoy::start`] reads the real ports back from the admin API, so concurrent tests never
/// race for a port.
pub fn bootstrap_yaml(opts: &EnvoyOptions) -> String {
    let ns = opts.route_namespace.as_deref();
    let mut routes = Vec::new();
    if let Some(prefix) = &opts.search_prefix {
        routes.push(
            Route::prefix(prefix)
                .to_cluster(UPSTREAM_CLUSTER)
                .namespace_opt(ns),
        );
    }
    routes.push(
        Route::path(&opts.mcp_path)
            .to_cluster_untimed(UPSTREAM_CLUSTER)
            .namespace_opt(ns),
    );
    routes.push(
        Route::prefix("/other")
            .to_cluster(UPSTREAM_CLUSTER)
            .namespace_opt(ns),
    );
    routes.push(Route::prefix("/direct").direct(200, Some("direct response")));
    if opts.catch_all_route {
        routes.push(
            Route::prefix("/")
                .to_cluster_untimed(UPSTREAM_CLUSTER)
                .namespace_opt(ns),
        );
    }
    let mut filters = opts.http_filters_before.clone();
    if let Some(f) = &opts.filter {
        filters.push(HttpFilter::wasm(
            &WasmFilter::new(&f.wasm, &f.config_json)
                .allow_on_headers_stop_iteration(opts.allow_on_headers_stop_iteration),
        ));
    }
    filters.push(HttpFilter::router());
    let listener = Listener::new("mcp_listener")
        .stat_prefix("mcp")
        .no_stream_idle_timeout()
        .route_config_name("local")
        .routes(routes)
        .filters(filters);
    Bootstrap::new()
        .listener(listener)
        .cluster(Cluster::new(UPSTREAM_CLUSTER, opts.upstream).connect_timeout("5s"))
        .clusters(opts.extra_clusters.iter().cloned())
        .to_yaml()
}

/// A running Envoy.
#[derive(Debug)]
pub struct Envoy {
    proc: Proc,
    pub admin: SocketAddr,
    pub listener: SocketAddr,
    pub log_path: PathBuf,
    pub config_path: PathBuf,
    pub base_id: u32,
}

/// How long an admin request (or a [`raw_exchange`]) may take.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// Blocking HTTP GET on loopback (for the admin API), returning (status, body).
pub fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String)> {
    let reply = raw_exchange(
        addr,
        http1::Request::builder("GET", path)
            .header("Host", &addr.to_string())
            .finish()
            .as_bytes(),
    )?;
    Ok((reply.status, reply.text()))
}

/// Blocking HTTP POST without a body on loopback (admin commands such as `/runtime_modify`),
/// returning (status, body).
pub fn http_post(addr: SocketAddr, path: &str) -> Result<(u16, String)> {
    let request = http1::Request::builder("POST", path)
        .header("Host", &addr.to_string())
        .header("Content-Length", "0")
        .finish();
    let reply = raw_exchange(addr, request.as_bytes())?;
    Ok((reply.status, reply.text()))
}

/// Sends `request` (a whole HTTP/1.1 request, written byte for byte as given: any path, any
/// headers, any body) on a new connection with `Connection: close` and reads the response to
/// its end (see [`http1::exchange_closing`]).
pub fn raw_exchange(addr: SocketAddr, request: &[u8]) -> Result<http1::Response> {
    Ok(http1::exchange_closing(addr, request, EXCHANGE_TIMEOUT)?)
}

/// Why an Envoy did not start: only the first kind is worth another try.
enum StartError {
    /// Another Envoy holds the hot-restart socket or shared memory of this base id.
    BaseIdInUse(String),
    Failed(String),
}

/// Envoy 1.40's words (on stderr) for a base id another Envoy holds: the hot-restart domain
/// socket it cannot bind (`errno=98`, EADDRINUSE), or the shared memory region that exists.
pub(super) fn base_id_in_use(stderr: &str) -> bool {
    stderr.contains("unable to bind domain socket with base_id=")
        || (stderr.contains("cannot open shared memory region") && stderr.contains("File exists"))
}

impl Envoy {
    /// Start Envoy (`--concurrency 2`, unique `--base-id`, log to a file in `dir`) and wait until
    /// its admin says LIVE and the listener accepts connections.
    pub fn start(opts: &EnvoyOptions, dir: &TestDir) -> Result<Self> {
        Self::start_yaml(&bootstrap_yaml(opts), &opts.component_log_level, dir)
    }

    /// Start Envoy from any bootstrap whose admin and (first) listener bind port 0, e.g.
    /// [`embeddings_front_yaml`]; same process handling as [`Envoy::start`].
    pub fn start_yaml(yaml: &str, component_log_level: &str, dir: &TestDir) -> Result<Self> {
        let bin = envoy_bin()?;
        // Only a base id another Envoy holds (a process outside this test, since ours are
        // unique per pid and counter) is worth another try, with the next id; any other failure
        // is this test's or the filter's and must show at once, not after two more starts.
        let mut attempt = 1;
        loop {
            match Self::start_once(&bin, yaml, component_log_level, dir) {
                Ok(e) => return Ok(e),
                Err(StartError::BaseIdInUse(why)) if attempt < 3 => {
                    eprintln!("envoy start {attempt}: base id in use, retrying:\n{why}");
                    attempt += 1;
                }
                Err(StartError::BaseIdInUse(why) | StartError::Failed(why)) => return err(why),
            }
        }
    }

    fn start_once(
        bin: &Path,
        yaml: &str,
        component_log_level: &str,
        dir: &TestDir,
    ) -> std::result::Result<Self, StartError> {
        let n = next_id();
        let config_path = dir.join(&format!("envoy-{n}.yaml"));
        let log_path = dir.join(&format!("envoy-{n}.log"));
        let admin_path = dir.join(&format!("envoy-{n}.admin"));
        let stderr_path = dir.join(&format!("envoy-{n}.stderr"));
        let io = |e: std::io::Error| StartError::Failed(format!("envoy {n}: {e}"));
        std::fs::write(&config_path, yaml).map_err(io)?;
        // Unique among concurrently running test processes: pid-based, plus a counter.
        let base_id = (std::process::id() % 400_000) * 1000 + (n % 1000);
        let mut cmd = Command::new(bin);
        cmd.arg("-c")
            .arg(&config_path)
            .arg("--concurrency")
            .arg("2")
            .arg("--base-id")
            .arg(base_id.to_string())
            .arg("--log-path")
            .arg(&log_path)
            .arg("--log-level")
            .arg("warning")
            .arg("--component-log-level")
            .arg(component_log_level)
            .arg("--file-flush-interval-msec")
            .arg("50")
            .arg("--admin-address-path")
            .arg(&admin_path)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(dir.join(&format!("envoy-{n}.stdout"))).map_err(io)?)
            .stderr(std::fs::File::create(&stderr_path).map_err(io)?);
        let mut proc = Proc::spawn("envoy", cmd).map_err(|e| StartError::Failed(e.to_string()))?;
        let fail = |proc: &mut Proc, why: String| -> StartError {
            let status = proc
                .exited()
                .map(|s| format!(" (exited: {s})"))
                .unwrap_or_default();
            proc.kill();
            // Envoy reports what stops it before its log opens (options, the hot-restart
            // socket) on stderr, the rest in the log file: both are needed to say why.
            let stderr = tail(&stderr_path, 20);
            let message = format!(
                "envoy did not start{status}: {why}\n--- {} ---\n{}\n--- {} ---\n{stderr}",
                log_path.display(),
                tail(&log_path, 40),
                stderr_path.display(),
            );
            if base_id_in_use(&stderr) {
                StartError::BaseIdInUse(message)
            } else {
                StartError::Failed(message)
            }
        };
        let deadline = Instant::now() + Duration::from_secs(40);
        // 1. the admin address file
        let admin = loop {
            if let Some(a) = std::fs::read_to_string(&admin_path)
                .ok()
                .and_then(|t| t.trim().parse::<SocketAddr>().ok())
            {
                break a;
            }
            if proc.exited().is_some() || Instant::now() >= deadline {
                return Err(fail(&mut proc, "no admin address".to_owned()));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // 2. LIVE
        loop {
            if let Ok((200, body)) = http_get(admin, "/ready") {
                if body.trim() == "LIVE" {
                    break;
                }
            }
            if proc.exited().is_some() || Instant::now() >= deadline {
                return Err(fail(&mut proc, "admin /ready never LIVE".to_owned()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // 3. the listener's real port
        let listener = match http_get(admin, "/listeners?format=json") {
            Ok((200, body)) => match parse_listener(&body) {
                Some(a) => a,
                None => return Err(fail(&mut proc, format!("no listener in {body}"))),
            },
            other => return Err(fail(&mut proc, format!("/listeners: {other:?}"))),
        };
        while !port_open(listener) {
            if proc.exited().is_some() || Instant::now() >= deadline {
                return Err(fail(
                    &mut proc,
                    format!("listener {listener} not accepting"),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Self {
            proc,
            admin,
            listener,
            log_path,
            config_path,
            base_id,
        })
    }

    /// `http://127.0.0.1:PORT/mcp` through Envoy.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.listener)
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.listener)
    }

    /// The Envoy log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Stats whose name contains `filter` (admin `/stats?filter=`), as (name, value) for the
    /// integer ones.
    pub fn stats(&self, filter: &str) -> Result<Vec<(String, u64)>> {
        let (status, body) = http_get(self.admin, &format!("/stats?filter={filter}"))?;
        if status != 200 {
            return err(format!("/stats: {status} {body}"));
        }
        Ok(body
            .lines()
            .filter_map(|l| {
                let (name, value) = l.rsplit_once(':')?;
                Some((name.trim().to_owned(), value.trim().parse().ok()?))
            })
            .collect())
    }

    /// The filter's counter `wasmcustom.mcp_tool_search.<name>`: 0 when the admin API has no
    /// such stat (the filter defines its counters at start; an older build lacks new ones).
    pub fn stat(&self, name: &str) -> Result<u64> {
        let full = format!("wasmcustom.mcp_tool_search.{name}");
        Ok(self
            .stats("mcp_tool_search")?
            .into_iter()
            .find(|(k, _)| *k == full)
            .map_or(0, |(_, v)| v))
    }

    /// Is the Envoy process still running?
    pub fn running(&mut self) -> bool {
        self.proc.exited().is_none()
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }
}

impl Drop for Envoy {
    fn drop(&mut self) {
        if std::thread::panicking() {
            std::thread::sleep(Duration::from_millis(150)); // let Envoy flush its log
            eprintln!(
                "--- last lines of {} ---\n{}",
                self.log_path.display(),
                tail(&self.log_path, 60)
            );
        }
        self.proc.kill();
    }
}

fn parse_listener(body: &str) -> Option<SocketAddr> {
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    let statuses = v.get("listener_statuses")?.as_array()?;
    statuses.iter().find_map(|s| {
        let sa = s.get("local_address")?.get("socket_address")?;
        let ip = sa.get("address")?.as_str()?;
        let port = sa.get("port_value")?.as_u64()?;
        format!("{ip}:{port}").parse().ok()
    })
}

/// A cluster as one YAML list item (`- name: ...`), unindented: plain HTTP/1.1 to one static
/// endpoint, connect timeout 1 s (see [`Cluster`]).
pub fn static_cluster_yaml(name: &str, addr: SocketAddr) -> String {
    Cluster::new(name, addr).to_yaml()
}
