//! `--gateway SERVERSxTOOLS` (e.g. `20x500`): the filter in front of Envoy's `mcp_router` over
//! many generated servers, beside one server holding the same tools, in one Envoy and one
//! sitting. Writes the section `## Many servers behind one endpoint` of BENCHMARKS.md and
//! leaves the rest of the file as it is (a full `make bench` keeps the section).

use crate::args::Args;
use crate::client::{self, Request, Samples};
use crate::http::search_requests;
use crate::rounds::{interleaved, round_figures};
use crate::spinners::Spinners;
use crate::{log, messages, QUERIES};
use mcp_tool_search_bench::envoy;
use mcp_tool_search_bench::ms;
use mcp_tool_search_wasm_tests::envoy_config::{Bootstrap, HttpFilter, Listener, McpServer, Route};
use mcp_tool_search_wasm_tests::harness::{http_get, TestDir};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

pub const HEADING: &str = "## Many servers behind one endpoint";
/// The size a full `make bench` measures: a platform team's gateway (tens of servers, each
/// with a few hundred tools), at the 10,000 tools of the single-server sections' largest size.
pub const FULL_RUN: (usize, usize) = (20, 500);

/// `20x500` → (20, 500).
pub fn parse_spec(text: &str) -> Result<(usize, usize), String> {
    let (s, t) = text
        .split_once('x')
        .ok_or_else(|| format!("--gateway {text}: expected SERVERSxTOOLS, e.g. 20x500"))?;
    let n = |v: &str| -> Result<usize, String> {
        v.parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| format!("--gateway {text}: {v:?} is not a positive integer"))
    };
    Ok((n(s)?, n(t)?))
}

/// The `## Many servers behind one endpoint` section of a BENCHMARKS.md (up to the next `## `
/// heading), preceded by a blank line; empty when there is none.
pub fn section(doc: &str) -> String {
    mcp_tool_search_bench::markdown_section(doc, HEADING)
}

struct Figures {
    search: [Samples; 2],
    search_ratio: f64,
    lists: [Samples; 4],
    list_added: [f64; 2],
    call: [Samples; 2],
    call_added: f64,
    first_list: [Duration; 2],
    first_search: [Duration; 2],
    servers_in_results: usize,
    rss_kb: Option<u64>,
    /// Of `REPLAY_LISTS` gateway lists after the run: how many the filter replayed
    /// (`lists_replayed`), and how many distinct bodies as many lists of the router had.
    replayed: Option<(u64, usize)>,
}

/// How many lists `replays` sends to each of the gateway's listeners.
const REPLAY_LISTS: usize = 10;

/// Sends `REPLAY_LISTS` lists through the filtered gateway, counting the filter's replays, and
/// as many to the router alone, counting the distinct bodies it answered with.
fn replays(envoy: &envoy::Envoy, gw: SocketAddr, gb: SocketAddr) -> Result<(u64, usize), String> {
    let replayed = || -> u64 {
        envoy
            .stats("lists_replayed")
            .iter()
            .filter(|(name, _)| name.ends_with(".lists_replayed"))
            .filter_map(|(_, v)| v.trim().parse::<u64>().ok())
            .sum()
    };
    let list_body = messages::list_request();
    let mut bodies = std::collections::BTreeSet::new();
    let before = replayed();
    for (addr, distinct) in [(gw, false), (gb, true)] {
        let mut conn = client::Conn::open(addr).map_err(|e| e.to_string())?;
        for _ in 0..REPLAY_LISTS {
            let resp = conn
                .round_trip(&Request::post_json(&addr.to_string(), "/mcp", &list_body))
                .map_err(|e| e.to_string())?;
            if distinct {
                bodies.insert(resp.body);
            }
        }
    }
    Ok((replayed() - before, bodies.len()))
}

/// A listener whose one route sends everything to `route_cluster`, in catalog namespace `name`.
fn listener(name: &str, route_cluster: &str, filters: Vec<HttpFilter>) -> Listener {
    let route = Route::prefix("/")
        .to_cluster_untimed(route_cluster)
        .namespace(name);
    envoy::http_listener(name, vec![route], filters)
}

/// Four listeners: `filtered` (the filter, mcp, mcp_router over the servers, as
/// envoy/gateway.yaml), `baseline` (mcp and mcp_router only), `one_filtered` and
/// `one_baseline` (one server with every tool, with and without the filter, as demo.yaml and
/// baseline.yaml). `mcp_router` answers itself: its listeners have no router after it.
fn bootstrap(servers: &[SocketAddr], one: SocketAddr, wasm: &Path) -> String {
    // No catalog fetch: the listeners learn from the lists the bench sends, and a background
    // refresh through the route's cluster would see one server only (envoy/gateway.yaml
    // fetches through a loopback cluster instead).
    let gw_config = r#"{"mcp_paths":["/"],"hold_request_headers":true,"max_body_bytes":33554432,"group_separator":"__","catalog":{"fetch":false}}"#;
    let one_config = r#"{"mcp_paths":["/mcp"],"hold_request_headers":true,"max_body_bytes":33554432,"catalog":{"fetch":false}}"#;
    let names: Vec<String> = (0..servers.len()).map(|i| format!("s{i:02}")).collect();
    let mcp_servers: Vec<McpServer> = names
        .iter()
        .map(|n| McpServer::new(n).timeout("30s"))
        .collect();
    let router = || vec![HttpFilter::mcp(), HttpFilter::mcp_router(&mcp_servers)];
    let filtered = std::iter::once(envoy::wasm_filter(wasm, gw_config))
        .chain(router())
        .collect();
    Bootstrap::new()
        .listener(listener("filtered", "s00", filtered))
        .listener(listener("baseline", "s00", router()))
        .listener(listener(
            "one_filtered",
            "one",
            vec![envoy::wasm_filter(wasm, one_config), HttpFilter::router()],
        ))
        .listener(listener("one_baseline", "one", vec![HttpFilter::router()]))
        .clusters(
            names
                .iter()
                .zip(servers)
                .map(|(n, a)| envoy::cluster(n, *a)),
        )
        .cluster(envoy::cluster("one", one))
        .to_yaml()
}

fn listener_addr(admin: SocketAddr, name: &str) -> Result<SocketAddr, String> {
    let (_, body) = http_get(admin, "/listeners?format=json").map_err(|e| e.to_string())?;
    let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    v.get("listener_statuses")
        .and_then(|s| s.as_array())
        .and_then(|all| {
            all.iter()
                .find(|s| s.get("name").and_then(|n| n.as_str()) == Some(name))
        })
        .and_then(|s| s.get("local_address")?.get("socket_address").cloned())
        .and_then(|sa| {
            let ip = sa.get("address")?.as_str()?.to_owned();
            let port = sa.get("port_value")?.as_u64()?;
            format!("{ip}:{port}").parse().ok()
        })
        .ok_or_else(|| format!("listener {name} not found in {body}"))
}

pub fn run(args: &Args, spec: (usize, usize), dir: &TestDir) -> Result<String, String> {
    let started = Instant::now();
    let load_start = crate::report::loadavg();
    let (n_servers, per_server) = spec;
    let envoy_bin = args.envoy.clone().ok_or("--envoy is required")?;
    let server_bin = args
        .catalog_server
        .clone()
        .ok_or("--catalog-server is required")?;
    let wasm =
        std::fs::canonicalize(&args.wasm).map_err(|e| format!("{}: {e}", args.wasm.display()))?;
    // One generated catalog, dealt out to the servers in order: the gateway and the single
    // server hold exactly the same tools.
    let all = mcp_tool_search_wasm_tests::catalog::jsonl(n_servers * per_server);
    let lines: Vec<&str> = all.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut servers = Vec::new();
    let mut call_tool = String::new();
    for (i, chunk) in lines.chunks(per_server).enumerate() {
        let file = dir.join(&format!("server-{i:02}.jsonl"));
        std::fs::write(&file, chunk.join("\n") + "\n").map_err(|e| e.to_string())?;
        if i == n_servers / 2 {
            let first: serde_json::Value =
                serde_json::from_str(chunk.first().copied().unwrap_or("{}"))
                    .map_err(|e| e.to_string())?;
            let name = first
                .get("name")
                .and_then(|n| n.as_str())
                .unwrap_or("missing");
            call_tool = format!("s{i:02}__{name}");
        }
        servers.push(envoy::CatalogServer::start(
            &server_bin,
            &file,
            true,
            dir.path(),
        )?);
    }
    let one_file = dir.join("one.jsonl");
    std::fs::write(&one_file, &all).map_err(|e| e.to_string())?;
    let one = envoy::CatalogServer::start(&server_bin, &one_file, true, dir.path())?;
    let addrs: Vec<SocketAddr> = servers.iter().map(|s| s.addr).collect();
    let yaml = bootstrap(&addrs, one.addr, &wasm);
    log(&format!(
        "gateway: starting Envoy (--concurrency 1) with mcp_router over {n_servers} servers of {per_server} tools"
    ));
    let mut envoy = envoy::Envoy::start(&envoy_bin, dir.path(), &yaml)?;
    let (gw, gb) = (envoy.filtered, envoy.baseline);
    let (of, ob) = (
        listener_addr(envoy.admin, "one_filtered")?,
        listener_addr(envoy.admin, "one_baseline")?,
    );
    // As the single-server sections: idle vCPUs kept awake (see `Spinners`).
    let spinners = (!args.no_spin).then(|| {
        Spinners::start(
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
        )
    });
    let result = measure(args, [gw, gb, of, ob], &call_tool);
    if let Some(s) = spinners {
        s.stop();
    }
    let rss_kb = envoy.rss_kb();
    if !envoy.running() {
        return Err(format!(
            "Envoy exited during the run:\n{}",
            envoy.log_tail()
        ));
    }
    let mut figures = result?;
    figures.rss_kb = rss_kb;
    figures.replayed = Some(replays(&envoy, gw, gb)?);
    envoy.stop();
    drop(servers);
    drop(one);
    Ok(render(
        args,
        spec,
        &figures,
        &call_tool,
        &load_start,
        started.elapsed(),
    ))
}

fn measure(args: &Args, addrs: [SocketAddr; 4], call_tool: &str) -> Result<Figures, String> {
    let [gw, gb, of, ob] = addrs;
    let auth = |a: SocketAddr| a.to_string();
    let list_body = messages::list_request();
    // Each filtered listener learns its catalog from one list; the first search builds the
    // worker's index.
    let mut first_list = [Duration::ZERO; 2];
    let mut first_search = [Duration::ZERO; 2];
    let mut servers_in_results = 0;
    for (i, (addr, path)) in [(gw, "/mcp"), (of, "/mcp")].into_iter().enumerate() {
        let mut conn = client::Conn::open(addr).map_err(|e| e.to_string())?;
        let t = Instant::now();
        let resp = conn
            .round_trip(&Request::post_json(&auth(addr), path, &list_body))
            .map_err(|e| e.to_string())?;
        if let Some(d) = first_list.get_mut(i) {
            *d = t.elapsed();
        }
        client::check(&resp, Some("tool_search")).map_err(|e| format!("first list: {e}"))?;
        let t = Instant::now();
        let search = messages::search_request(1, QUERIES.first().copied().unwrap_or("issue"));
        let resp = conn
            .round_trip(&Request::post_json(&auth(addr), path, &search))
            .map_err(|e| e.to_string())?;
        if let Some(d) = first_search.get_mut(i) {
            *d = t.elapsed();
        }
        client::check(&resp, Some("mcp-tool-search/search"))
            .map_err(|e| format!("first search: {e}"))?;
        if addr == gw {
            // The searches rank tools of many servers together: count the servers the twelve
            // queries' results come from.
            let mut seen = std::collections::BTreeSet::new();
            for (k, q) in QUERIES.iter().enumerate() {
                let resp = conn
                    .round_trip(&Request::post_json(
                        &auth(addr),
                        path,
                        &messages::search_request(k + 2, q),
                    ))
                    .map_err(|e| e.to_string())?;
                let text = String::from_utf8_lossy(&resp.body).into_owned();
                for part in text.split("\\\"name\\\":\\\"s").skip(1) {
                    if let Some(num) = part.get(..2) {
                        seen.insert(num.to_owned());
                    }
                }
            }
            servers_in_results = seen.len();
        }
    }

    log("gateway: tool_search, gateway vs one server");
    let targets = vec![
        (
            gw,
            search_requests(&auth(gw), "/mcp"),
            Some("mcp-tool-search/search"),
        ),
        (
            of,
            search_requests(&auth(of), "/mcp"),
            Some("mcp-tool-search/search"),
        ),
    ];
    let (lat, p50s) = interleaved(&targets, args.rounds, args.round, 1, 20)?;
    let search_ratio = round_figures(p50s.first(), p50s.get(1)).0;
    let mut it = lat.into_iter();
    let search = [it.next().unwrap_or_default(), it.next().unwrap_or_default()];

    log("gateway: tools/list, filtered vs baseline, gateway and one server");
    let list = |a: SocketAddr| vec![Request::post_json(&auth(a), "/mcp", &list_body)];
    let targets = vec![
        (gw, list(gw), Some("tool_search")),
        (gb, list(gb), None),
        (of, list(of), Some("tool_search")),
        (ob, list(ob), None),
    ];
    let (lat, p50s) = interleaved(&targets, args.rounds.max(2), args.round, 1, 3)?;
    let list_added = [
        round_figures(p50s.first(), p50s.get(1)).1,
        round_figures(p50s.get(2), p50s.get(3)).1,
    ];
    let mut it = lat.into_iter();
    let lists = [
        it.next().unwrap_or_default(),
        it.next().unwrap_or_default(),
        it.next().unwrap_or_default(),
        it.next().unwrap_or_default(),
    ];

    log(&format!(
        "gateway: tools/call {call_tool} through the router"
    ));
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{call_tool}","arguments":{{}}}}}}"#
    );
    let targets = vec![
        (
            gw,
            vec![Request::post_json(&auth(gw), "/mcp", &body)],
            Some("\"result\""),
        ),
        (
            gb,
            vec![Request::post_json(&auth(gb), "/mcp", &body)],
            Some("\"result\""),
        ),
    ];
    let (lat, p50s) = interleaved(&targets, args.rounds, args.round, 1, 20)?;
    let call_added = round_figures(p50s.first(), p50s.get(1)).1;
    let mut it = lat.into_iter();
    let call = [it.next().unwrap_or_default(), it.next().unwrap_or_default()];
    Ok(Figures {
        search,
        search_ratio,
        lists,
        list_added,
        call,
        call_added,
        first_list,
        first_search,
        servers_in_results,
        rss_kb: None,
        replayed: None,
    })
}

fn signed_ms(s: f64) -> String {
    let sign = if s < 0.0 { "-" } else { "+" };
    format!("{sign}{}", ms(Duration::from_secs_f64(s.abs())))
}

fn kb(n: usize) -> String {
    if n >= 1_000_000 {
        format!("{:.2} MB", n as f64 / 1e6)
    } else {
        format!("{:.1} kB", n as f64 / 1e3)
    }
}

fn lat(s: &Samples) -> String {
    format!("{} / {}", ms(s.p50()), ms(s.p99()))
}

fn render(
    args: &Args,
    (n_servers, per_server): (usize, usize),
    f: &Figures,
    call_tool: &str,
    load_start: &str,
    elapsed: Duration,
) -> String {
    let total = n_servers * per_server;
    let mut o = String::new();
    let _ = writeln!(o, "{HEADING}\n");
    let _ = writeln!(
        o,
        "Written by {} on {} UTC; the run took {:.0} s; load average at start / end: {load_start} / {}. The filter in front of Envoy's `mcp` + `mcp_router` over {n_servers} `catalog-server`s of {per_server} generated tools each ({total} tools, the router prefixing each with `sNN__`), beside one `catalog-server` holding the same {total} tools behind the filter alone; one Envoy (`--concurrency 1`), four listeners, interleaved as above ({} rounds of {:.1} s). Servers: `catalog-server --json --stateless --tcp-nodelay`; plugin configuration as `envoy/gateway.yaml` (`group_separator` `__`, `mcp_paths` `/`), the catalog learned from a list. The searches of the twelve queries ranked tools of {} of the {n_servers} servers into their top five.\n",
        if args.gateway.is_some() {
            format!("`mcp-tool-search-bench --gateway {n_servers}x{per_server}` (`make bench-gateway`)")
        } else {
            "`make bench`".to_owned()
        },
        crate::report::utc_now(),
        elapsed.as_secs_f64(),
        crate::report::loadavg(),
        args.rounds,
        args.round.as_secs_f64(),
        f.servers_in_results,
    );
    let _ = writeln!(o, "| | {n_servers} servers × {per_server} tools, through `mcp_router` | one server, {total} tools |");
    let _ = writeln!(o, "|---|---|---|");
    let _ = writeln!(
        o,
        "| `tool_search` p50 / p99 (answered by the filter) | {} | {} |",
        lat(&f.search[0]),
        lat(&f.search[1])
    );
    let _ = writeln!(
        o,
        "| gateway search / one-server search (p50, median over rounds) | **{:.2}×** | |",
        f.search_ratio
    );
    let _ = writeln!(
        o,
        "| `tools/list` upstream response (what the client would get without the filter) | {} | {} |",
        kb(f.lists[1].body_bytes),
        kb(f.lists[3].body_bytes)
    );
    let _ = writeln!(
        o,
        "| `tools/list` client gets (filtered) | {} | {} |",
        kb(f.lists[0].body_bytes),
        kb(f.lists[2].body_bytes)
    );
    let _ = writeln!(
        o,
        "| `tools/list` p50 / p99 without the filter | {} | {} |",
        lat(&f.lists[1]),
        lat(&f.lists[3])
    );
    let _ = writeln!(
        o,
        "| `tools/list` p50 / p99 with the filter | {} | {} |",
        lat(&f.lists[0]),
        lat(&f.lists[2])
    );
    let _ = writeln!(
        o,
        "| **list rewrite added p50** (median over rounds) | **{}** | **{}** |",
        signed_ms(f.list_added[0]),
        signed_ms(f.list_added[1])
    );
    let _ = writeln!(
        o,
        "| first list (learns the catalog) / first search (builds the index) | {} / {} | {} / {} |",
        ms(f.first_list[0]),
        ms(f.first_search[0]),
        ms(f.first_list[1]),
        ms(f.first_search[1])
    );
    let _ = writeln!(
        o,
        "| `tools/call {call_tool}` p50 / p99 with the filter, without | {}, {} (added {}) | |",
        lat(&f.call[0]),
        lat(&f.call[1]),
        signed_ms(f.call_added)
    );
    let _ = writeln!(
        o,
        "| samples (search; lists filtered, baseline; calls) | {}; {}, {}; {} | {}; {}, {} |",
        f.search[0].count(),
        f.lists[0].count(),
        f.lists[1].count(),
        f.call[0].count(),
        f.search[1].count(),
        f.lists[2].count(),
        f.lists[3].count()
    );
    let replays = f.replayed.map_or("not counted".to_owned(), |(replayed, distinct)| {
        format!("after the run, {replayed} of {REPLAY_LISTS} gateway lists were replayed (`lists_replayed`), while {REPLAY_LISTS} lists of the router alone came in {distinct} distinct bodies")
    });
    let _ = writeln!(
        o,
        "\nEnvoy resident memory at the end: {}. `mcp_router` joins the servers' lists in the order their answers arrive, so two lists of the gateway rarely have the same bytes: the filter recognises the tools of the list it last rewrote in any order (a fingerprint of the tools as a multiset, taken by stepping from one remembered tool to the next) and answers with the same rewritten list, in name order, without parsing the list again; the one server's repeated lists are recognised by their bytes ({replays}). The *first list* row is the full reading, once. The router's own list (the *without the filter* row) varies by tens of milliseconds from list to list, which bounds what the *added* row can resolve.",
        f.rss_kb
            .map_or("unknown".to_owned(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
    );
    o
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn specs_and_sections() {
        assert_eq!(parse_spec("20x500").unwrap(), (20, 500));
        assert!(parse_spec("20").is_err());
        assert!(parse_spec("0x5").is_err());
        let doc = "# B\n\n## One\n\nx\n\n## Chaos soak\n\ny\n";
        let with = mcp_tool_search_bench::replace_markdown_section(
            doc,
            HEADING,
            &format!("{HEADING}\n\nfig 1\n"),
        );
        assert_eq!(
            with,
            format!("# B\n\n## One\n\nx\n\n{HEADING}\n\nfig 1\n\n## Chaos soak\n\ny\n")
        );
        assert_eq!(section(&with), format!("\n{HEADING}\n\nfig 1\n"));
        let again = mcp_tool_search_bench::replace_markdown_section(
            &with,
            HEADING,
            &format!("{HEADING}\n\nfig 2\n"),
        );
        assert_eq!(again, with.replace("fig 1", "fig 2"));
        let plain = mcp_tool_search_bench::replace_markdown_section(
            "# B\n",
            HEADING,
            &format!("{HEADING}\n\nf\n"),
        );
        assert_eq!(plain, format!("# B\n\n{HEADING}\n\nf\n"));
    }
}
