//! The TypeScript MCP SDK as a test peer: `@modelcontextprotocol/server-everything`
//! (Streamable HTTP, sessions, SSE answers), installed by `make node-peers`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::harness::{self, port_open, tail, wait_until, Proc, Result, TestDir};

/// server-everything's entry point: `$SERVER_EVERYTHING`, else where `make node-peers` installs
/// it under the workspace root.
pub fn server_everything() -> Result<PathBuf> {
    let p = match std::env::var_os("SERVER_EVERYTHING") {
        Some(p) => PathBuf::from(p),
        None => harness::workspace_root().join(
            ".cache/node-peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
        ),
    };
    if !p.is_file() {
        return Err(format!(
            "no server-everything at {}: run `make node-peers` (needs Node.js and npm), or set \
             SERVER_EVERYTHING",
            p.display()
        )
        .into());
    }
    let node_ok = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !node_ok {
        return Err("no `node` on PATH: server-everything needs Node.js".into());
    }
    Ok(p)
}

/// A running server-everything (`streamableHttp`, `/mcp`).
#[derive(Debug)]
pub struct ServerEverything {
    proc: Proc,
    pub addr: SocketAddr,
    log_path: PathBuf,
}

impl ServerEverything {
    pub fn start_on(port: u16, dir: &TestDir) -> Result<Self> {
        let script = server_everything()?;
        let log_path = dir.join(&format!("everything-{port}.log"));
        let log = std::fs::File::create(&log_path)?;
        let mut cmd = Command::new("node");
        cmd.arg(script)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let mut proc = Proc::spawn("server-everything", cmd)?;
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        wait_until(
            "server-everything to listen",
            Duration::from_secs(30),
            || {
                if let Some(status) = proc.exited() {
                    return Some(Err(format!(
                        "server-everything exited ({status}):\n{}",
                        tail(&log_path, 30)
                    )));
                }
                port_open(addr).then_some(Ok(()))
            },
        )??;
        Ok(Self {
            proc,
            addr,
            log_path,
        })
    }

    pub fn log(&self) -> String {
        tail(&self.log_path, 40)
    }

    pub fn stop(&mut self) {
        self.proc.kill();
    }
}
