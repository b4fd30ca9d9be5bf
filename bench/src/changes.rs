//! The first `tools/list` after the upstream's catalog changed (section 2 of BENCHMARKS.md):
//! the changed catalog, how the upstream is told to serve it, and the rounds that time it.

use crate::args::Args;
use crate::client::{self, Request};
use crate::rounds::round_figures;
use crate::{log, messages};
use mcp_tool_search_bench::envoy;
use std::time::{Duration, Instant};

/// The first `tools/list` after the upstream's catalog changed, round by round: each round
/// changes the catalog, then lists through the filter twice (the first list after the change,
/// then a repeated one) and once through the baseline listener.
#[derive(Debug, Clone, Default)]
pub struct ChangeRun {
    pub tools: usize,
    pub kind: &'static str,
    pub first: Vec<Duration>,
    pub repeated: Vec<Duration>,
    pub baseline: Vec<Duration>,
    /// Medians over rounds of the first (repeated) list minus the baseline list of the same
    /// round, seconds.
    pub added_first: f64,
    pub added_repeated: f64,
}

/// `jsonl` with " (v2)" appended to the first tool's description: a catalog change the filter
/// must notice (a new catalog version) at the same size.
pub fn changed_catalog(jsonl: &str) -> Result<String, String> {
    let (first, rest) = jsonl.split_once('\n').unwrap_or((jsonl, ""));
    let tool: serde_json::Value =
        serde_json::from_str(first).map_err(|e| format!("the catalog's first tool: {e}"))?;
    let description = tool
        .get("description")
        .and_then(|d| d.as_str())
        .ok_or("the catalog's first tool has no description")?;
    let encode = |d: &str| serde_json::to_string(d).map_err(|e| e.to_string());
    let old = format!("\"description\":{}", encode(description)?);
    let new = format!(
        "\"description\":{}",
        encode(&format!("{description}{CHANGE_MARK}"))?
    );
    if !first.contains(&old) {
        return Err(format!(
            "the catalog's first tool does not spell its description as {old}"
        ));
    }
    Ok(format!("{}\n{rest}", first.replacen(&old, &new, 1)))
}

pub const CHANGE_MARK: &str = " (v2)";

/// `POST /admin/tools` to a catalog-server: it serves `jsonl` from now on (nobody notified:
/// the bench's upstreams are stateless).
fn set_upstream_tools(server: std::net::SocketAddr, jsonl: &str) -> Result<(), String> {
    let mut conn = client::Conn::open(server).map_err(|e| e.to_string())?;
    let resp = conn
        .round_trip(&Request::post(
            &server.to_string(),
            "/admin/tools",
            "application/jsonl",
            jsonl.as_bytes(),
        ))
        .map_err(|e| e.to_string())?;
    if resp.status != 200 {
        return Err(format!(
            "catalog-server {server} /admin/tools: {} {}",
            resp.status,
            String::from_utf8_lossy(&resp.body)
        ));
    }
    Ok(())
}

/// The first `tools/list` after a catalog change, at 1,000 tools and up (JSON and SSE
/// upstreams): `rounds` times, each upstream in turn switches between its catalog and a changed
/// one, then is listed through the filter (the first list after the change: the filter learns
/// a new catalog version), through the filter again (repeated), and through the baseline.
pub fn measure_changes(
    args: &Args,
    catalogs: &[(usize, String)],
    upstreams: &[envoy::Upstream],
    envoy: &envoy::Envoy,
) -> Result<Vec<ChangeRun>, String> {
    let (fa, ba) = (envoy.filtered, envoy.baseline);
    let list_body = messages::list_request();
    let mut runs = Vec::new();
    for (n, jsonl) in catalogs.iter().filter(|(n, _)| *n >= 1000) {
        let changed = changed_catalog(jsonl)?;
        for kind in ["json", "sse"] {
            let path = format!("/mcp/{kind}/{n}");
            let server = upstreams
                .iter()
                .find(|u| u.path == path)
                .map(|u| u.addr)
                .ok_or_else(|| format!("no upstream for {path}"))?;
            runs.push((
                ChangeRun {
                    tools: *n,
                    kind,
                    ..ChangeRun::default()
                },
                server,
                [jsonl.clone(), changed.clone()],
            ));
        }
    }
    if runs.is_empty() {
        return Ok(Vec::new());
    }
    let mut fconn = client::Conn::open(fa).map_err(|e| e.to_string())?;
    let mut bconn = client::Conn::open(ba).map_err(|e| e.to_string())?;
    let timed = |conn: &mut client::Conn, req: &Request, expect: Option<&str>, what: &str| {
        let t = Instant::now();
        let resp = conn.round_trip(req).map_err(|e| e.to_string())?;
        let took = t.elapsed();
        client::check(&resp, expect).map_err(|e| format!("{what}: {e}"))?;
        Ok::<_, String>((took, resp))
    };
    for round in 0..args.change_rounds {
        log(&format!(
            "HTTP: first tools/list after a catalog change, round {} of {}",
            round + 1,
            args.change_rounds
        ));
        // Round 0 serves the changed catalog (the upstream started with the original).
        let changed = round % 2 == 0;
        for (run, server, versions) in runs.iter_mut() {
            let path = format!("/mcp/{}/{}", run.kind, run.tools);
            let serve = versions
                .get(usize::from(changed))
                .map_or("", String::as_str);
            set_upstream_tools(*server, serve)?;
            let through = Request::post_json(&fa.to_string(), &path, &list_body);
            let (first, _) = timed(
                &mut fconn,
                &through,
                Some("tool_search"),
                &format!("first list {path} after a change"),
            )?;
            let (repeated, _) = timed(
                &mut fconn,
                &through,
                Some("tool_search"),
                &format!("repeated list {path} after a change"),
            )?;
            let (baseline, resp) = timed(
                &mut bconn,
                &Request::post_json(&ba.to_string(), &path, &list_body),
                None,
                &format!("baseline list {path} after a change"),
            )?;
            // The upstream did change: the baseline passes its list unchanged.
            let seen = resp
                .body
                .windows(CHANGE_MARK.len())
                .any(|w| w == CHANGE_MARK.as_bytes());
            if seen != changed {
                return Err(format!(
                    "{path}: the upstream's list after /admin/tools {} the changed description",
                    if changed { "lacks" } else { "still has" }
                ));
            }
            run.first.push(first);
            run.repeated.push(repeated);
            run.baseline.push(baseline);
        }
    }
    Ok(runs
        .into_iter()
        .map(|(mut run, _, _)| {
            run.added_first = round_figures(Some(&run.first), Some(&run.baseline)).1;
            run.added_repeated = round_figures(Some(&run.repeated), Some(&run.baseline)).1;
            run
        })
        .collect())
}
