//! The official Python MCP SDK as test peers: `peers/fastmcp_server.py` (FastMCP 1.x,
//! Streamable HTTP) run by the Python of the venv `make test` installs it into, and
//! `peers/mcp_client.py` (the SDK's client, 1.x from that venv or 2.x from `make
//! python-peers`' second one).

use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::harness::{self, free_port, port_open, tail, wait_until, Proc, Result, TestDir};

/// The Python with the `mcp` package: `$MCP_PYTHON`, else `.venv/bin/python` at the workspace
/// root (`make python-peers` installs `mcp` there).
pub fn python() -> Result<PathBuf> {
    let p = match std::env::var_os("MCP_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => harness::workspace_root().join(".venv/bin/python"),
    };
    let ok = Command::new(&p)
        .args(["-c", "import mcp.server.fastmcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Ok(p);
    }
    Err(format!(
        "no Python with the `mcp` package at {}: run `make python-peers`, or set MCP_PYTHON",
        p.display()
    )
    .into())
}

/// How the FastMCP server answers.
#[derive(Debug, Clone, Copy, Default)]
pub struct FastMcpOptions {
    /// SSE responses instead of JSON.
    pub sse: bool,
    /// Sessions (`initialize` first) instead of stateless requests.
    pub stateful: bool,
}

/// A running FastMCP server; every tool it runs is recorded.
#[derive(Debug)]
pub struct FastMcpServer {
    _proc: Proc,
    pub addr: SocketAddr,
    record_path: PathBuf,
    log_path: PathBuf,
}

impl FastMcpServer {
    pub fn start(opts: FastMcpOptions, dir: &TestDir) -> Result<Self> {
        Self::start_paged(opts, 0, dir)
    }

    /// [`Self::start`] with `tools/list` in pages of `page_size` tools (0: one page), the
    /// cursor being the offset.
    pub fn start_paged(opts: FastMcpOptions, page_size: usize, dir: &TestDir) -> Result<Self> {
        Self::spawn(&python()?, opts, page_size, dir)
    }

    /// The same tools served by the SDK 2.x's `MCPServer` (FastMCP's successor), which also
    /// speaks protocol 2026-07-28; one page.
    pub fn start_sdk2(opts: FastMcpOptions, dir: &TestDir) -> Result<Self> {
        Self::spawn(&python2()?, opts, 0, dir)
    }

    /// [`Self::start`] on a given port: a server brought back where an Envoy cluster points.
    pub fn start_on(opts: FastMcpOptions, port: u16, dir: &TestDir) -> Result<Self> {
        Self::spawn_on(&python()?, opts, 0, port, dir)
    }

    fn spawn(python: &Path, opts: FastMcpOptions, page_size: usize, dir: &TestDir) -> Result<Self> {
        Self::spawn_on(python, opts, page_size, free_port()?, dir)
    }

    fn spawn_on(
        python: &Path,
        opts: FastMcpOptions,
        page_size: usize,
        port: u16,
        dir: &TestDir,
    ) -> Result<Self> {
        let record_path = dir.join(&format!("fastmcp-{port}.record"));
        let log_path = dir.join(&format!("fastmcp-{port}.log"));
        std::fs::write(&record_path, "")?;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/fastmcp_server.py");
        let mut cmd = Command::new(python);
        cmd.arg(script)
            .arg("--port")
            .arg(port.to_string())
            .arg("--record")
            .arg(&record_path);
        if opts.sse {
            cmd.arg("--sse");
        }
        if opts.stateful {
            cmd.arg("--stateful");
        }
        if page_size > 0 {
            cmd.arg("--page-size").arg(page_size.to_string());
        }
        let log = std::fs::File::create(&log_path)?;
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let mut proc = Proc::spawn("fastmcp", cmd)?;
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        wait_until(
            "the FastMCP server to listen",
            Duration::from_secs(30),
            || {
                if let Some(status) = proc.exited() {
                    return Some(Err(format!(
                        "FastMCP exited ({status}):\n{}",
                        tail(&log_path, 30)
                    )));
                }
                port_open(addr).then_some(Ok(()))
            },
        )??;
        Ok(Self {
            _proc: proc,
            addr,
            record_path,
            log_path,
        })
    }

    /// The tools it ran so far, one `tools/call NAME` each.
    pub fn recorded(&self) -> Vec<String> {
        std::fs::read_to_string(&self.record_path)
            .map(|t| t.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }

    pub fn log(&self) -> String {
        tail(&self.log_path, 40)
    }
}

/// The Python with the `mcp` 2.x package: `$MCP2_PYTHON`, else `.cache/venv-mcp2/bin/python` at
/// the workspace root (`make python-peers` installs it there).
pub fn python2() -> Result<PathBuf> {
    let p = match std::env::var_os("MCP2_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => harness::workspace_root().join(".cache/venv-mcp2/bin/python"),
    };
    let out = Command::new(&p)
        .args([
            "-c",
            "from importlib.metadata import version; print(version('mcp'))",
        ])
        .output();
    match out {
        Ok(o) if o.status.success() && String::from_utf8_lossy(&o.stdout).starts_with("2.") => {
            Ok(p)
        }
        _ => Err(format!(
            "no Python with `mcp` 2.x at {}: run `make python-peers`, or set MCP2_PYTHON",
            p.display()
        )
        .into()),
    }
}

/// What `peers/mcp_client.py` is asked to do (see the script).
#[derive(Debug, Clone)]
pub struct ClientFlow {
    pub url: String,
    pub query: String,
    pub limit: usize,
    /// JSON arguments of the call of the tool found.
    pub arguments: String,
    /// 2.x only: `auto`, `legacy` or a protocol version.
    pub mode: String,
    /// Extra arguments of each search call (`detail`, `max_tokens`), as a JSON object.
    pub search_arguments: String,
    /// 1.x only: the protocol version the client asks for (its latest when `None`).
    pub protocol: Option<String>,
    /// Which result of the first search is called (1: the first).
    pub call_rank: usize,
    /// More searches after the call, as a JSON list of queries.
    pub extra_queries: String,
    /// Tools called by name at the end, as a JSON list.
    pub direct_calls: String,
}

impl ClientFlow {
    pub fn new(url: &str, query: &str) -> Self {
        Self {
            url: url.to_owned(),
            query: query.to_owned(),
            limit: 1,
            arguments: "{}".to_owned(),
            mode: "auto".to_owned(),
            search_arguments: "{}".to_owned(),
            protocol: None,
            call_rank: 1,
            extra_queries: "[]".to_owned(),
            direct_calls: "[]".to_owned(),
        }
    }
}

/// Runs the SDK client of `python` through `flow` and returns its report: `sdk`, `protocol`,
/// `server`, `pages` (the listed tools, page by page), `searches` (two calls of the search tool,
/// offsets 0 and `limit`, each a `CallToolResult` with its `texts` and, where the listed search
/// tool declares an `outputSchema`, `validated`: its `structuredContent` checked against it),
/// `found` (the names the first search returned), `call` (the result of the found tool at
/// `call_rank`, with its `name`), `extra_searches` and `direct_calls`.
pub fn run_client(python: &Path, flow: &ClientFlow, dir: &TestDir) -> Result<Value> {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, Ordering::Relaxed);
    let out_path = dir.join(&format!("mcp-client-{n}.json"));
    let err_path = dir.join(&format!("mcp-client-{n}.stderr"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/mcp_client.py");
    let mut child = Command::new(python)
        .arg(script)
        .args(["--url", &flow.url, "--query", &flow.query])
        .args(["--limit", &flow.limit.to_string()])
        .args(["--arguments", &flow.arguments, "--mode", &flow.mode])
        .args(["--search-arguments", &flow.search_arguments])
        .args(["--call-rank", &flow.call_rank.to_string()])
        .args(["--extra-queries", &flow.extra_queries])
        .args(["--direct-calls", &flow.direct_calls])
        .args(
            flow.protocol
                .iter()
                .flat_map(|p| ["--protocol", p.as_str()]),
        )
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path)?)
        .stderr(std::fs::File::create(&err_path)?)
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "the MCP client did not finish in 60 s:\n{}",
                tail(&err_path, 30)
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if !status.success() {
        return Err(format!("the MCP client failed ({status}):\n{}", tail(&err_path, 40)).into());
    }
    let text = std::fs::read_to_string(&out_path)?;
    serde_json::from_str(&text)
        .map_err(|e| format!("the MCP client's report is not JSON ({e}): {text}").into())
}

/// How `peers/response_attack_server.py` runs (the tools, prompts and resources of
/// `fastmcp_server.py` plus a resource template, every request recorded).
#[derive(Debug, Clone, Copy, Default)]
pub struct AttackServerOptions {
    /// The SDK 2.x (`MCPServer`) instead of 1.x (`FastMCP`).
    pub sdk2: bool,
    /// SSE responses instead of JSON.
    pub sse: bool,
    /// Sessions (`initialize` first) instead of stateless requests.
    pub stateful: bool,
    /// An in-memory event store: SSE events carry ids, and a GET with `Last-Event-ID` replays.
    pub event_store: bool,
    /// Lists answered after this many milliseconds (1.x).
    pub list_delay_ms: u64,
    /// `ping` answered after this many milliseconds (1.x).
    pub ping_delay_ms: u64,
}

/// A running `peers/response_attack_server.py`.
#[derive(Debug)]
pub struct AttackServer {
    proc: Proc,
    pub addr: SocketAddr,
    record_path: PathBuf,
    events_path: PathBuf,
    log_path: PathBuf,
}

impl AttackServer {
    /// Starts one server per entry of `opts`, all at once, and waits until each listens.
    pub fn start_all(opts: &[AttackServerOptions], dir: &TestDir) -> Result<Vec<Self>> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/response_attack_server.py");
        let mut servers = Vec::new();
        for o in opts {
            let python = if o.sdk2 { python2()? } else { python()? };
            let port = free_port()?;
            let record_path = dir.join(&format!("attack-server-{port}.requests"));
            let events_path = dir.join(&format!("attack-server-{port}.events"));
            let log_path = dir.join(&format!("attack-server-{port}.log"));
            std::fs::write(&record_path, "")?;
            std::fs::write(&events_path, "")?;
            let mut cmd = Command::new(python);
            cmd.arg(&script)
                .arg("--port")
                .arg(port.to_string())
                .arg("--record")
                .arg(&record_path);
            if o.sse {
                cmd.arg("--sse");
            }
            if o.stateful {
                cmd.arg("--stateful");
            }
            if o.event_store {
                cmd.arg("--event-store").arg("--events").arg(&events_path);
            }
            if o.list_delay_ms > 0 {
                cmd.arg("--list-delay")
                    .arg(format!("{:.3}", o.list_delay_ms as f64 / 1000.0));
            }
            if o.ping_delay_ms > 0 {
                cmd.arg("--ping-delay")
                    .arg(format!("{:.3}", o.ping_delay_ms as f64 / 1000.0));
            }
            let log = std::fs::File::create(&log_path)?;
            cmd.stdin(Stdio::null())
                .stdout(log.try_clone()?)
                .stderr(log);
            let proc = Proc::spawn("response_attack_server", cmd)?;
            servers.push(Self {
                proc,
                addr: ([127, 0, 0, 1], port).into(),
                record_path,
                events_path,
                log_path,
            });
        }
        for s in &mut servers {
            let (addr, log_path) = (s.addr, s.log_path.clone());
            wait_until(
                "the attack server to listen",
                Duration::from_secs(30),
                || {
                    if let Some(status) = s.proc.exited() {
                        return Some(Err(format!(
                            "the attack server exited ({status}):\n{}",
                            tail(&log_path, 30)
                        )));
                    }
                    port_open(addr).then_some(Ok(()))
                },
            )??;
        }
        Ok(servers)
    }

    /// Every HTTP request that reached the server: `{"http", "last_event_id", "body"}`.
    pub fn requests(&self) -> Vec<Value> {
        json_lines(&self.record_path)
    }

    /// Every event the event store kept: `{"event_id", "stream_id", "message"}`.
    pub fn events(&self) -> Vec<Value> {
        json_lines(&self.events_path)
    }

    pub fn log(&self) -> String {
        tail(&self.log_path, 40)
    }
}

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .map(|t| {
            t.lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// A running `peers/duplicate_members_server.py`: lists with a member named twice.
#[derive(Debug)]
pub struct DuplicateMembersServer {
    _proc: Proc,
    pub addr: SocketAddr,
    record_path: PathBuf,
}

impl DuplicateMembersServer {
    pub fn start(dir: &TestDir) -> Result<Self> {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("peers/duplicate_members_server.py");
        let port = free_port()?;
        let record_path = dir.join(&format!("duplicate-members-{port}.requests"));
        let log_path = dir.join(&format!("duplicate-members-{port}.log"));
        std::fs::write(&record_path, "")?;
        let log = std::fs::File::create(&log_path)?;
        let mut cmd = Command::new(python()?);
        cmd.arg(script)
            .arg("--port")
            .arg(port.to_string())
            .arg("--record")
            .arg(&record_path)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let mut proc = Proc::spawn("duplicate_members_server", cmd)?;
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        wait_until(
            "the duplicate-members server to listen",
            Duration::from_secs(30),
            || {
                if let Some(status) = proc.exited() {
                    return Some(Err(format!(
                        "the duplicate-members server exited ({status}):\n{}",
                        tail(&log_path, 30)
                    )));
                }
                port_open(addr).then_some(Ok(()))
            },
        )??;
        Ok(Self {
            _proc: proc,
            addr,
            record_path,
        })
    }

    /// The request bodies received, one line each.
    pub fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.record_path)
            .map(|t| t.lines().map(str::to_owned).collect())
            .unwrap_or_default()
    }
}
