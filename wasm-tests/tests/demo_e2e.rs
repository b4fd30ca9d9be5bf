//! README "Quick start": `make demo` (`envoy/demo.sh`) prints its progress, then the MCP
//! endpoint, a sample `tool_search` result and a curl flow to paste that reuses the demo's real
//! `mcp-session-id`; the flow works as printed, and Ctrl-C stops everything the demo started.
//!
//! Needs Envoy in `.venv` and the built filter (`make test` provides both); the catalog server
//! is this crate's.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use mcp_tool_search_wasm_tests::harness::workspace_root;
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const CATALOG_SERVER: &str = env!("CARGO_BIN_EXE_catalog-server");

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// SIGTERM to process group `pgid` (the script and what it started).
fn stop(pgid: u32) -> bool {
    Command::new("kill")
        .args(["-s", "TERM", "--", &format!("-{pgid}")])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn make_demo_prints_what_the_readme_says_and_its_curl_flow_works() {
    let (listen, upstream, admin) = (free_port(), free_port(), free_port());
    let mut demo = Command::new("envoy/demo.sh")
        .current_dir(workspace_root())
        .env("LISTEN", listen.to_string())
        .env("UPSTREAM_PORT", upstream.to_string())
        .env("ADMIN", admin.to_string())
        .env("CATALOG_SERVER", CATALOG_SERVER)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        // Its own process group: Ctrl-C reaches the script and everything it started.
        .process_group(0)
        .spawn()
        .unwrap();
    let (lines, read) = mpsc::channel();
    let stdout = demo.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let mut printed = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(180);
    while !printed
        .last()
        .is_some_and(|l: &String| l.starts_with("Or point any MCP client at"))
    {
        let left = deadline.saturating_duration_since(Instant::now());
        match read.recv_timeout(left) {
            Ok(line) => printed.push(line),
            Err(_) => {
                stop(demo.id());
                panic!("the demo did not finish printing:\n{}", printed.join("\n"));
            }
        }
    }
    let text = printed.join("\n");
    let endpoint = format!("http://127.0.0.1:{listen}/mcp");
    for expected in [
        "==> starting the catalog MCP server (300 tools".to_string(),
        "==> tools/list through the filter".to_string(),
        "tools listed instead of 300: tool_search, ".to_string(),
        "==> tool_search {\"query\": \"refund a customer payment\", \"limit\": 3}".to_string(),
        "    1. ".to_string(),
        "    first definition, as the upstream declared it:".to_string(),
        format!("MCP endpoint: {endpoint}"),
    ] {
        assert!(text.contains(&expected), "no {expected:?} in:\n{text}");
    }
    // The first command of the curl flow, as printed (continuation lines joined), with the
    // session the demo opened: a search answered by the filter.
    let start = printed
        .iter()
        .position(|l| l.trim_start().starts_with("curl -s -X POST"))
        .unwrap_or_else(|| panic!("no curl flow in:\n{text}"));
    let mut command = String::new();
    for line in &printed[start..] {
        let line = line.trim();
        match line.strip_suffix('\\') {
            Some(part) => command.push_str(part),
            None => {
                command.push_str(line);
                break;
            }
        }
    }
    assert!(command.contains("mcp-session-id: "), "{command}");
    let out = Command::new("bash")
        .arg("-c")
        .arg(&command)
        .output()
        .unwrap();
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && answer.contains("slack") && answer.contains("\"result\""),
        "{command}\n{answer}"
    );

    // Ctrl-C: the script stops what it started and says so. SIGTERM takes the same trap as
    // SIGINT in the script; SIGINT itself is ignored by a process a non-interactive shell
    // started in the background (POSIX), as a test runner's may be, and a shell cannot trap a
    // signal ignored on entry.
    assert!(stop(demo.id()));
    let mut rest = Vec::new();
    while let Ok(line) = read.recv_timeout(Duration::from_secs(20)) {
        rest.push(line);
    }
    demo.wait().unwrap();
    assert!(
        rest.iter().any(|l| l.starts_with("stopped (logs in ")),
        "{rest:?}"
    );
    let gone = Instant::now() + Duration::from_secs(10);
    while (listening(listen) || listening(upstream)) && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!listening(listen), "Envoy still listens on {listen}");
    assert!(
        !listening(upstream),
        "the catalog server still listens on {upstream}"
    );
}
