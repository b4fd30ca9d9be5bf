//! The HTTP benchmarks through Envoy (sections 1 and 2 of BENCHMARKS.md): the upstreams and
//! Envoy they run against, `tool_search` beside its floors and the pass-through, `tools/list`
//! through the filter beside the baseline, and the results they produce.

use crate::args::{Args, FLOOR_WASM_MISSING};
use crate::changes::{measure_changes, ChangeRun};
use crate::client::{self, Request, Samples};
use crate::floor::teach_floor;
use crate::rounds::{interleaved, round_figures};
use crate::spinners::Spinners;
use crate::{log, messages, QUERIES, WORDS_17};
use mcp_tool_search_bench::envoy;
use mcp_tool_search_wasm_tests::harness::TestDir;
use std::time::{Duration, Instant};

/// One search measurement at one catalog size.
#[derive(Debug, Clone, Default)]
pub struct SearchRun {
    pub tools: usize,
    /// `direct_response` on the filtered listener (the floor).
    pub floor: Samples,
    /// `direct_response` on the listener without the filter.
    pub floor_nofilter: Samples,
    /// The same search requests on the `floor` listener: the proxy-wasm floor replays the
    /// filter's answer (bench/floor/).
    pub wasm_floor: Samples,
    pub search: Samples,
    /// The same request passed through to the upstream without the filter.
    pub baseline: Samples,
    /// Four connections: requests per second at saturation of the one worker.
    pub floor_tp: Samples,
    pub wasm_floor_tp: Samples,
    pub search_tp: Samples,
    pub baseline_tp: Samples,
    /// The first search after the first list (the worker builds its index), per namespace.
    pub first_search: Vec<Duration>,
    pub search_bytes: usize,
    /// search p50 / floor p50, round by round: the median.
    pub ratio: f64,
    /// search p50 / proxy-wasm floor p50, round by round: the median.
    pub wasm_ratio: f64,
    /// The same with queries of 17 words or more (`WORDS_17`), beside the proxy-wasm floor
    /// taught their answers.
    pub search_long: Samples,
    pub wasm_floor_long: Samples,
    pub long_ratio: f64,
}

#[derive(Debug, Clone, Default)]
pub struct ListRun {
    pub tools: usize,
    pub kind: &'static str,
    pub filtered: Samples,
    pub baseline: Samples,
    pub upstream_bytes: usize,
    pub client_bytes: usize,
    pub first_list: Duration,
    /// filtered p50 / baseline p50, and filtered p50 − baseline p50 (seconds), round by round:
    /// the medians.
    pub ratio: f64,
    pub added: f64,
}

#[derive(Debug, Clone, Default)]
pub struct HttpResults {
    pub searches: Vec<SearchRun>,
    pub lists: Vec<ListRun>,
    pub changes: Vec<ChangeRun>,
    pub envoy_rss_start_kb: Option<u64>,
    pub envoy_rss_end_kb: Option<u64>,
    pub stats: Vec<(String, String)>,
    /// Whether SCHED_IDLE spinners kept the CPUs busy during the measurements.
    pub spinners: bool,
}

pub fn search_requests(authority: &str, path: &str) -> Vec<Request> {
    requests_of(QUERIES, authority, path)
}

/// `tool_search` requests of `queries`, one each, ids from 1.
pub fn requests_of(queries: &[&str], authority: &str, path: &str) -> Vec<Request> {
    queries
        .iter()
        .enumerate()
        .map(|(i, q)| Request::post_json(authority, path, &messages::search_request(i + 1, q)))
        .collect()
}

pub fn run_http(
    args: &Args,
    dir: &TestDir,
    catalogs: &[(usize, String)],
) -> Result<HttpResults, String> {
    let envoy_bin = args
        .envoy
        .clone()
        .ok_or("--envoy is required for the HTTP benchmarks")?;
    let server_bin = args
        .catalog_server
        .clone()
        .ok_or("--catalog-server is required")?;
    let wasm =
        std::fs::canonicalize(&args.wasm).map_err(|e| format!("{}: {e}", args.wasm.display()))?;
    let floor_wasm = args.floor_wasm.as_ref().ok_or(FLOOR_WASM_MISSING)?;
    let floor_wasm = std::fs::canonicalize(floor_wasm)
        .map_err(|e| format!("--floor-wasm {}: {e}", floor_wasm.display()))?;
    let mut servers = Vec::new();
    let mut upstreams = Vec::new();
    for (n, jsonl) in catalogs {
        let file = dir.join(&format!("catalog-{n}.jsonl"));
        std::fs::write(&file, jsonl).map_err(|e| e.to_string())?;
        for (kind, json) in [("json", true), ("sse", false)] {
            let server = envoy::CatalogServer::start(&server_bin, &file, json, dir.path())?;
            upstreams.push(envoy::Upstream {
                cluster: format!("catalog_{kind}_{n}"),
                path: format!("/mcp/{kind}/{n}"),
                addr: server.addr,
            });
            servers.push(server);
        }
    }
    let paths: Vec<String> = upstreams.iter().map(|u| u.path.clone()).collect();
    let plugin_config = messages::plugin_config(&paths);
    let yaml = envoy::bootstrap(&upstreams, &wasm, &plugin_config, &floor_wasm);
    log("starting Envoy (--concurrency 1)");
    let mut envoy = envoy::Envoy::start(&envoy_bin, dir.path(), &yaml)?;
    let mut out = HttpResults {
        envoy_rss_start_kb: envoy.rss_kb(),
        ..HttpResults::default()
    };
    let spinners = (!args.no_spin).then(|| {
        Spinners::start(
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
        )
    });
    let result = measure_http(args, catalogs, &upstreams, &mut envoy, &mut out);
    if let Some(s) = spinners {
        out.spinners = s.stop();
    }
    result?;
    out.envoy_rss_end_kb = envoy.rss_kb();
    out.stats = envoy
        .stats("mcp_tool_search")
        .into_iter()
        .filter(|(_, v)| v != "0")
        .collect();
    if !envoy.running() {
        return Err(format!(
            "Envoy exited during the run:\n{}",
            envoy.log_tail()
        ));
    }
    envoy.stop();
    drop(servers);
    Ok(out)
}

fn measure_http(
    args: &Args,
    catalogs: &[(usize, String)],
    upstreams: &[envoy::Upstream],
    envoy: &mut envoy::Envoy,
    out: &mut HttpResults,
) -> Result<(), String> {
    let fa = envoy.filtered;
    let ba = envoy.baseline;
    let wa = envoy
        .floor
        .ok_or("the bench's Envoy has no `floor` listener")?;
    let auth = |a: std::net::SocketAddr| a.to_string();
    let list_body = messages::list_request();

    // Teach the filter every catalog (one list through it), and time the first search after
    // it: that search builds the worker's index.
    let mut firsts: Vec<(usize, &'static str, Duration, Duration)> = Vec::new();
    for (n, _) in catalogs {
        for kind in ["json", "sse"] {
            let path = format!("/mcp/{kind}/{n}");
            let mut conn = client::Conn::open(fa).map_err(|e| e.to_string())?;
            let t = Instant::now();
            let resp = conn
                .round_trip(&Request::post_json(&auth(fa), &path, &list_body))
                .map_err(|e| e.to_string())?;
            let first_list = t.elapsed();
            client::check(&resp, Some("tool_search"))
                .map_err(|e| format!("first list {path}: {e}"))?;
            let search = Request::post_json(
                &auth(fa),
                &path,
                &messages::search_request(1, QUERIES.first().copied().unwrap_or("issue")),
            );
            let t = Instant::now();
            let resp = conn.round_trip(&search).map_err(|e| e.to_string())?;
            let first_search = t.elapsed();
            client::check(&resp, Some("mcp-tool-search/search"))
                .map_err(|e| format!("first search {path}: {e}"))?;
            firsts.push((*n, kind, first_list, first_search));
        }
    }

    for (n, _) in catalogs {
        let path = format!("/mcp/json/{n}");
        log(&format!(
            "HTTP: teaching the proxy-wasm floor the filter's answers at {n} tools"
        ));
        teach_floor(fa, wa, &path, QUERIES)?;
        teach_floor(fa, wa, &path, WORDS_17)?;
        log(&format!("HTTP: tool_search at {n} tools"));
        const SEARCH: Option<&str> = Some("mcp-tool-search/search");
        // Latency runs: every target; throughput runs: the first four.
        let (floor, search, wasm_floor, baseline, floor_nofilter) = (0, 1, 2, 3, 4);
        let (search_long, wasm_floor_long) = (5, 6);
        let targets = vec![
            (fa, search_requests(&auth(fa), "/direct"), None),
            (fa, search_requests(&auth(fa), &path), SEARCH),
            // The floor answers with the filter's bytes: the same check holds.
            (wa, search_requests(&auth(wa), &path), SEARCH),
            (ba, search_requests(&auth(ba), &path), None),
            (ba, search_requests(&auth(ba), "/direct"), None),
            (fa, requests_of(WORDS_17, &auth(fa), &path), SEARCH),
            (wa, requests_of(WORDS_17, &auth(wa), &path), SEARCH),
        ];
        let (lat, p50s) = interleaved(&targets, args.rounds, args.round, 1, 20)?;
        let tp_targets: Vec<_> = targets.iter().take(4).cloned().collect();
        let (tp, _) = interleaved(&tp_targets, 1, args.round, 4, 5)?;
        let at = |v: &[Samples], i: usize| v.get(i).cloned().unwrap_or_default();
        let mut run = SearchRun {
            tools: *n,
            floor: at(&lat, floor),
            search: at(&lat, search),
            wasm_floor: at(&lat, wasm_floor),
            baseline: at(&lat, baseline),
            floor_nofilter: at(&lat, floor_nofilter),
            floor_tp: at(&tp, floor),
            search_tp: at(&tp, search),
            wasm_floor_tp: at(&tp, wasm_floor),
            baseline_tp: at(&tp, baseline),
            search_long: at(&lat, search_long),
            wasm_floor_long: at(&lat, wasm_floor_long),
            ..SearchRun::default()
        };
        run.long_ratio = round_figures(p50s.get(search_long), p50s.get(wasm_floor_long)).0;
        run.search_bytes = run.search.body_bytes;
        run.ratio = round_figures(p50s.get(search), p50s.get(floor)).0;
        run.wasm_ratio = round_figures(p50s.get(search), p50s.get(wasm_floor)).0;
        run.first_search = firsts.iter().filter(|f| f.0 == *n).map(|f| f.3).collect();
        out.searches.push(run);
    }

    for (n, _) in catalogs {
        for kind in ["json", "sse"] {
            log(&format!("HTTP: tools/list ({kind}) at {n} tools"));
            let path = format!("/mcp/{kind}/{n}");
            let targets = vec![
                (
                    fa,
                    vec![Request::post_json(&auth(fa), &path, &list_body)],
                    Some("tool_search"),
                ),
                (
                    ba,
                    vec![Request::post_json(&auth(ba), &path, &list_body)],
                    None,
                ),
            ];
            let (lat, p50s) = interleaved(&targets, args.rounds.max(2), args.round, 1, 3)?;
            let (ratio, added) = round_figures(p50s.first(), p50s.get(1));
            let mut it = lat.into_iter();
            let filtered = it.next().unwrap_or_default();
            let baseline = it.next().unwrap_or_default();
            out.lists.push(ListRun {
                tools: *n,
                kind,
                upstream_bytes: baseline.body_bytes,
                client_bytes: filtered.body_bytes,
                filtered,
                baseline,
                first_list: firsts
                    .iter()
                    .find(|f| f.0 == *n && f.1 == kind)
                    .map(|f| f.2)
                    .unwrap_or_default(),
                ratio,
                added,
            });
        }
    }

    // Last: the upstreams' catalogs change here, and nothing measured after would see them.
    out.changes = measure_changes(args, catalogs, upstreams, envoy)?;
    Ok(())
}
