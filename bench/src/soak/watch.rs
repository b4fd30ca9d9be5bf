//! One MCP client per upstream that keeps the standalone `GET` stream of its session open
//! through Envoy, as an agent's SDK does: that is where `catalog-server` sends
//! `notifications/tools/list_changed`, and the filter, watching the stream pass, refreshes the
//! namespace's catalog. When the upstream is stopped the stream ends; the watcher opens a new
//! session once the upstream is back.

use crate::http::{self, Request};
use crate::Shared;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, Default)]
pub struct WatchCounts {
    /// `notifications/tools/list_changed` events received.
    pub list_changed: AtomicU64,
    /// Streams opened (a new session each).
    pub streams: AtomicU64,
}

const NEEDLE: &[u8] = b"notifications/tools/list_changed";

pub fn run(shared: &Shared, upstream: usize, counts: &WatchCounts) {
    let path = shared.mcp_path(upstream);
    while !shared.stop.load(Ordering::Relaxed) {
        let mut conn = http::conn(shared.addr);
        let Ok(session) = crate::load::open_session(&mut conn, &path, 1) else {
            std::thread::sleep(Duration::from_millis(500));
            continue;
        };
        // Short reads so that the stop flag is seen; the stream itself has no timeout.
        let Ok(mut stream) = http::connect(
            shared.addr,
            http::CONNECT_TIMEOUT,
            Duration::from_millis(500),
        ) else {
            std::thread::sleep(Duration::from_millis(500));
            continue;
        };
        let request = Request::builder("GET", &path)
            .header("host", "soak")
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", &session)
            .finish();
        if stream.write_all(request.as_bytes()).is_err() {
            continue;
        }
        counts.streams.fetch_add(1, Ordering::Relaxed);
        let mut pending: Vec<u8> = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        while !shared.stop.load(Ordering::Relaxed) {
            match stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    pending.extend_from_slice(chunk.get(..n).unwrap_or_default());
                    while let Some(at) = http::find(&pending, NEEDLE) {
                        counts.list_changed.fetch_add(1, Ordering::Relaxed);
                        pending.drain(..at + NEEDLE.len());
                    }
                    // Keep only what could be the start of a needle cut by the read.
                    let keep = pending.len().min(NEEDLE.len());
                    pending.drain(..pending.len() - keep);
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
