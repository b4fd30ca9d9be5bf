//! The soak's upstreams: a running `catalog-server`, and how its catalog is changed.

use crate::http::Request;
use crate::Result;
use mcp_tool_search_wasm_tests::harness::{self, Proc};
use mcp_tool_search_wasm_tests::http1::exchange_closing;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

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
    pub fn start(bin: &Path, tools: &Path, listen: &str, dir: &Path) -> Result<Upstream> {
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
    pub fn set_tools(&self, jsonl: &str) -> Result<(u64, u64)> {
        let request = Request::post(
            &self.addr.to_string(),
            "/admin/tools?notify=1",
            "application/jsonl",
            jsonl.as_bytes(),
        );
        let reply = exchange_closing(self.addr, request.as_bytes(), Duration::from_secs(10))
            .map_err(|e| e.to_string())?;
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
