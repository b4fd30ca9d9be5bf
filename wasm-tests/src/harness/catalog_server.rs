//! The catalog MCP server (`catalog-server`, this crate's binary) as a child process.

use super::{await_listening, catalog_300, next_id, Proc, Result, TestDir};
use crate::http1;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// How long an admin request to the server may take.
const ADMIN_TIMEOUT: Duration = Duration::from_secs(10);

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
        let addr = await_listening(&mut proc, &stderr_path, Duration::from_secs(15))?;
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

impl CatalogServer {
    /// Replaces the tools this running `catalog-server` serves, from now on (`POST
    /// /admin/tools`, straight to the server, not through Envoy): `tools` are definitions as
    /// in a `--tools` file (e.g. `ToolDef::json` parsed, or `serde_json::json!({...})`), without
    /// the built-in `slow_progress`, which stays. With `notify`, every live stateful session is
    /// sent `notifications/tools/list_changed` (on its `GET /mcp` stream); stateless servers
    /// notify nobody.
    ///
    /// Returns (tools now listed, `slow_progress` included; sessions notified). On an error
    /// the server keeps its previous tools.
    pub fn set_tools(&self, tools: &[serde_json::Value], notify: bool) -> Result<(u64, u64)> {
        let mut jsonl = String::new();
        for tool in tools {
            jsonl.push_str(&tool.to_string());
            jsonl.push('\n');
        }
        self.set_tools_jsonl(&jsonl, notify)
    }

    /// [`Self::set_tools`] from JSONL text, exactly as a `--tools` file holds it (e.g.
    /// [`crate::catalog::jsonl`]`(n)`).
    pub fn set_tools_jsonl(&self, jsonl: &str, notify: bool) -> Result<(u64, u64)> {
        let request =
            http1::Request::builder("POST", &format!("/admin/tools?notify={}", u8::from(notify)))
                .header("Host", &self.addr.to_string())
                .header("Content-Type", "application/jsonl")
                .body(jsonl.as_bytes());
        let reply = http1::exchange_closing(self.addr, request.as_bytes(), ADMIN_TIMEOUT)?;
        let body = String::from_utf8_lossy(&reply.body);
        let value: Option<serde_json::Value> = serde_json::from_str(&body).ok();
        let field = |name: &str| value.as_ref()?.get(name)?.as_u64();
        match (reply.status, field("tools"), field("notified")) {
            (200, Some(tools), Some(notified)) => Ok((tools, notified)),
            (status, _, _) => {
                let why = value
                    .as_ref()
                    .and_then(|v| v.get("error"))
                    .and_then(serde_json::Value::as_str)
                    .map_or_else(|| body.clone().into_owned(), str::to_owned);
                Err(format!("catalog-server /admin/tools: {status}: {why}").into())
            }
        }
    }
}
