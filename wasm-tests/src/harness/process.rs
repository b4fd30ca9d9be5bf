//! Processes and ports: free loopback ports, waiting for a condition, per-test scratch
//! directories, child processes in their own process group, and the `listening on ADDR` line
//! the test peers print.

use super::{err, next_id, Result};
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{mpsc, Mutex, OnceLock};
use std::time::{Duration, Instant};

static HANDED_OUT: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();

/// A free loopback port (bind 127.0.0.1:0), never the same one twice in this process.
/// Prefer letting the server bind port 0 itself and report the port (as `catalog-server` and
/// [`super::Envoy`] do): that has no window in which another process can take the port.
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

/// Reads a child's stdout until its `listening on ADDR` line (what `catalog-server` and the
/// embeddings sidecar print once they accept connections).
pub(super) fn await_listening(
    proc: &mut Proc,
    stderr_path: &Path,
    timeout: Duration,
) -> Result<SocketAddr> {
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
