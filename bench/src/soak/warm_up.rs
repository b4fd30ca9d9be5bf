//! Warm-up: both catalogs listed through the filter and embedded before the load starts.

use crate::{http, load, Result, NAMESPACES, ROUTES, SEARCH_PATH};
use mcp_tool_search_wasm_tests::harness;
use serde_json::Value;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// `GET /mcp/search/health`.
fn health(addr: SocketAddr) -> Option<Value> {
    let (_, body) = harness::http_get(addr, &format!("{SEARCH_PATH}/health")).ok()?;
    serde_json::from_str(&body).ok()
}

/// Lists both catalogs through the filter (which learns them), then waits until the sidecar
/// has embedded them: the soak starts from the steady state, hybrid ranking for every search.
pub fn warm_up(addr: SocketAddr, served: usize) -> Result<String> {
    let mut conn = http::conn(addr);
    for (u, route) in ROUTES.iter().enumerate() {
        let session = load::open_session(&mut conn, route, 1)
            .map_err(|o| format!("warm-up initialize on {route}: {o:?}"))?;
        let list = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let reply = conn
            .exchange(http::post_json(route, &list.to_string(), Some(&session)).as_bytes())
            .map_err(|f| format!("warm-up tools/list on {route}: {f:?}"))?;
        if reply.status != 200 {
            return Err(format!(
                "warm-up tools/list on {route} (upstream {u}): {} {}",
                reply.status,
                reply.text()
            ));
        }
    }
    let start = Instant::now();
    // Five minutes, and more for large catalogs (`--tools`): the sidecar embeds some hundred
    // texts a second on the 2-core machine.
    let texts = u32::try_from(served * crate::UPSTREAMS).unwrap_or(u32::MAX);
    let deadline = start + Duration::from_secs(300) + Duration::from_millis(20) * texts;
    loop {
        let h = health(addr);
        let embedded = |ns: &str| -> Option<(u64, u64)> {
            let c = h.as_ref()?.get("catalogs")?.get(ns)?;
            Some((c.get("tools")?.as_u64()?, c.get("embedded")?.as_u64()?))
        };
        let counts: Vec<Option<(u64, u64)>> = NAMESPACES.iter().map(|ns| embedded(ns)).collect();
        let done = counts
            .iter()
            .all(|c| matches!(c, Some((t, e)) if *t as usize == served && e >= t));
        if done {
            return Ok(format!(
                "both catalogs ({served} tools each) listed and embedded in {:.1} s",
                start.elapsed().as_secs_f64()
            ));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "catalogs not embedded after {:?}: {counts:?}",
                deadline - start
            ));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
