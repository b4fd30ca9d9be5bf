//! The official Python MCP SDK as a test peer: `peers/fastmcp_server.py` (FastMCP 1.x,
//! Streamable HTTP) run by the Python of the venv `make test` installs it into.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

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
        let python = python()?;
        let port = free_port()?;
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
