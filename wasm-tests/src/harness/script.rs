//! The README's `make` targets that print a walkthrough and then run until Ctrl-C (`make demo`,
//! `make gateway`, `make playground`): started in a process group of their own, their stdout
//! read line by line, the commands they print run as printed, and stopped the way a terminal
//! stops them.

use super::{err, port_open, Result};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running script and what it printed so far.
pub struct Script {
    child: Child,
    lines: mpsc::Receiver<String>,
    pub printed: Vec<String>,
}

impl Script {
    /// Starts `command` (its stderr goes to the test's) in its own process group: Ctrl-C in a
    /// terminal reaches the script and everything it started, and so does `stop`.
    pub fn start(mut command: Command) -> Result<Script> {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Script {
            child,
            lines,
            printed: Vec::new(),
        })
    }

    /// Reads until a printed line starts with `prefix`; the whole output so far on failure.
    pub fn until(&mut self, prefix: &str, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        while !self.printed.iter().any(|l| l.starts_with(prefix)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.printed.push(line),
                Err(_) => {
                    return err(format!(
                        "no line starting {prefix:?} within {timeout:?}:\n{}",
                        self.text()
                    ))
                }
            }
        }
        Ok(())
    }

    /// Everything printed so far, one line each.
    pub fn text(&self) -> String {
        self.printed.join("\n")
    }

    /// Every shell command printed as an example (lines starting `curl `, continuation lines
    /// ending in `\` joined), in order.
    pub fn commands(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut open: Option<String> = None;
        for line in &self.printed {
            let line = line.trim();
            let part = match open.take() {
                Some(command) => command + line,
                None if line.starts_with("curl ") => line.to_string(),
                None => continue,
            };
            match part.strip_suffix('\\') {
                Some(rest) => open = Some(rest.to_string()),
                None => out.push(part),
            }
        }
        out
    }

    /// Stops the script as a terminal's Ctrl-C does and waits for it; what it printed after.
    /// SIGTERM, which the scripts trap with SIGINT: a process a non-interactive shell starts in
    /// the background has SIGINT ignored (POSIX), as a test runner's may, and a shell cannot
    /// trap a signal ignored on entry.
    pub fn stop(&mut self) -> Result<Vec<String>> {
        let group = format!("-{}", self.child.id());
        let sent = Command::new("kill")
            .args(["-s", "TERM", "--", &group])
            .status()?;
        if !sent.success() {
            return err(format!("kill -s TERM -- {group} failed"));
        }
        let mut rest = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(20)) {
            rest.push(line);
        }
        self.child.wait()?;
        Ok(rest)
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = Command::new("kill")
                .args(["-s", "KILL", "--", &format!("-{}", self.child.id())])
                .status();
            let _ = self.child.wait();
        }
    }
}

/// Runs a printed command with bash; its stdout, or why it failed.
pub fn run_printed(command: &str) -> Result<String> {
    let out = Command::new("bash").arg("-c").arg(command).output()?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return err(format!("{command}\nexited {}: {stdout}", out.status));
    }
    Ok(stdout)
}

/// The loopback `ports` something still listens on once `within` has passed (none: all closed,
/// as they must be after a script is stopped).
pub fn still_listening(ports: &[u16], within: Duration) -> Vec<u16> {
    let open = || {
        ports
            .iter()
            .copied()
            .filter(|&p| port_open(([127, 0, 0, 1], p).into()))
            .collect::<Vec<_>>()
    };
    let deadline = Instant::now() + within;
    let mut left = open();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        left = open();
    }
    left
}
