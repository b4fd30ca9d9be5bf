//! Sections 1 and 2 of the report: `tool_search` and `tools/list` through Envoy.

use super::units::{bytes, lat, median, mib, signed_ms, thousands};
use crate::http::HttpResults;
use mcp_tool_search_bench::ms;
use std::fmt::Write as _;

/// Section 1: `tool_search` beside its floors and the pass-through, and the index build.
pub fn write_search(o: &mut String, http: &HttpResults) {
    let _ = writeln!(o, "## 1. `tool_search` through Envoy\n");
    let _ = writeln!(
        o,
        "One Envoy worker, HTTP/1.1 keep-alive. *direct_response floor*: `direct_response` on the filtered listener \
         (the filter runs its request-headers callback and lets the request go); *search*: `tools/call` of \
         `tool_search`, answered by the filter; *proxy-wasm floor*: the same requests (the same bytes but for `host`) on a \
         third listener whose only filter is `bench/floor/` (package `mcp-tool-search-bench-floor`), in a V8 VM of its own: \
         per request it reads `:path`, holds the headers, waits for the whole body, copies it out of Envoy, looks it up in \
         a hash map and answers with `send_http_response` the status, `content-type` and body the filter answered for \
         that body (taught before the runs through `/floor/learn`, and checked byte for byte). Any proxy-wasm filter that \
         answers from the request body pays at least that: the V8 callbacks, the body copy and the local reply through \
         the filter chain; what the search costs above it is the filter's own work (JSON-RPC parse, ranking, rendering). \
         *pass-through*: the same request on the listener without the filter, answered by the upstream \
         (an `Unknown tool` error from the rmcp server). Latency p50 / p99 on one connection (all rounds pooled); each \
         ratio is the median over rounds of search p50 / that floor's p50 in the same round; requests per second on one \
         connection and on four.\n"
    );
    let _ = writeln!(
        o,
        "| tools | direct_response floor p50 / p99 | proxy-wasm floor p50 / p99 | search p50 / p99 | **search / direct_response floor (p50)** | **search / proxy-wasm floor (p50)** | pass-through p50 / p99 | direct_response without the filter p50 | req/s direct_response floor (1 / 4 conns) | req/s proxy-wasm floor (1 / 4) | req/s search (1 / 4) | req/s pass-through (1 / 4) | search response |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &http.searches {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | **{:.2}×** | **{:.2}×** | {} | {} | {:.0} / {:.0} | {:.0} / {:.0} | {:.0} / {:.0} | {:.0} / {:.0} | {} |",
            thousands(r.tools),
            lat(&r.floor),
            lat(&r.wasm_floor),
            lat(&r.search),
            r.ratio,
            r.wasm_ratio,
            lat(&r.baseline),
            ms(r.floor_nofilter.p50()),
            r.floor.rps(),
            r.floor_tp.rps(),
            r.wasm_floor.rps(),
            r.wasm_floor_tp.rps(),
            r.search.rps(),
            r.search_tp.rps(),
            r.baseline.rps(),
            r.baseline_tp.rps(),
            bytes(r.search_bytes)
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "Samples per cell (latency runs; direct_response floor / proxy-wasm floor / search / pass-through): {}. \
         Reconnections (keep-alive connections the server closed): {}. The filter's own work through Envoy (V8), \
         estimated as search p50 minus proxy-wasm floor p50: {}.\n",
        http.searches
            .iter()
            .map(|r| format!("{} tools: {} / {} / {} / {}", thousands(r.tools), r.floor.count(), r.wasm_floor.count(), r.search.count(), r.baseline.count()))
            .collect::<Vec<_>>()
            .join("; "),
        http.searches
            .iter()
            .map(|r| {
                r.floor.reconnects
                    + r.wasm_floor.reconnects
                    + r.search.reconnects
                    + r.baseline.reconnects
                    + r.floor_nofilter.reconnects
            })
            .sum::<u64>(),
        http.searches
            .iter()
            .map(|r| format!("{} at {} tools", ms(r.search.p50().saturating_sub(r.wasm_floor.p50())), thousands(r.tools)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        o,
        "**Queries as agents write them.** The same runs, interleaved with the above, with the 12 queries of 17 words \
         or more of `WORDS_17` (20 to 23 words; `bench/src/main.rs`), beside the proxy-wasm floor taught their answers:\n\n\
         | tools | proxy-wasm floor p50 / p99 | search p50 / p99 | **search / proxy-wasm floor (p50)** | the search adds (p50) |\n|---|---|---|---|---|"
    );
    for r in &http.searches {
        let _ = writeln!(
            o,
            "| {} | {} | {} | **{:.2}×** | {} |",
            thousands(r.tools),
            lat(&r.wasm_floor_long),
            lat(&r.search_long),
            r.long_ratio,
            ms(r.search_long.p50().saturating_sub(r.wasm_floor_long.p50()))
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "**Index build in Envoy (V8).** The first `tool_search` right after the first `tools/list` builds the worker's \
         index from the catalog the list taught it (the worker's tick has not yet published it for the other workers): \
         its round trip, once per namespace (JSON, SSE upstream), minus the steady search p50:\n"
    );
    let _ = writeln!(o, "| tools | first search (JSON, SSE namespace) | steady p50 | index build ≈ |\n|---|---|---|---|");
    for r in &http.searches {
        let firsts: Vec<String> = r.first_search.iter().map(|d| ms(*d)).collect();
        let min_first = r.first_search.iter().min().copied().unwrap_or_default();
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} |",
            thousands(r.tools),
            firsts.join(", "),
            ms(r.search.p50()),
            ms(min_first.saturating_sub(r.search.p50()))
        );
    }
    let _ = writeln!(o);
}

/// Section 2: the `tools/list` rewrite, steady and after a catalog change; Envoy's memory and
/// the filter's stats at the end of the run.
pub fn write_list(o: &mut String, http: &HttpResults, change_rounds: usize) {
    let _ = writeln!(o, "## 2. `tools/list` rewrite overhead\n");
    let _ = writeln!(
        o,
        "`tools/list` through the filtered listener (the filter holds the whole list, learns it, and answers with \
         `tool_search` plus the eager `github_get_*` tools) vs the baseline listener (the list passes unchanged). The \
         client reads the whole response in both cases, so the baseline includes sending the full list to the client. *Added* and *ratio*: \
         medians over rounds of the filtered p50 minus (over) the baseline p50 of the same round.\n"
    );
    let _ = writeln!(
        o,
        "| tools | body | upstream response | client gets (filtered) | baseline p50 / p99 | filtered p50 / p99 | **added p50** | ratio | first list (learns the catalog) | samples |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|---|---|");
    for l in &http.lists {
        let added = signed_ms(l.added);
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | **{}** | {:.2}× | {} | {} / {} |",
            thousands(l.tools),
            l.kind.to_uppercase(),
            bytes(l.upstream_bytes),
            bytes(l.client_bytes),
            lat(&l.baseline),
            lat(&l.filtered),
            added,
            l.ratio,
            ms(l.first_list),
            l.baseline.count(),
            l.filtered.count()
        );
    }
    let _ = writeln!(o);
    if !http.changes.is_empty() {
        let _ = writeln!(
            o,
            "**The first `tools/list` after a catalog change.** The table above is the steady state: the upstream \
             answers the same list every time, and the filter replays its rewrite. Here, {} rounds: each round switches \
             the upstream (`catalog-server`'s `POST /admin/tools`) between its catalog and the same catalog with \
             \"{}\" appended to the first tool's description, then lists through the filtered listener (*first*: the \
             filter finds a new catalog version, learns it, stores it for the other workers and rewrites the list), \
             through it again (*repeated*: replayed) and through the baseline listener. One sample of each per round; \
             *added*: the median over rounds of that list minus the baseline list of the same round.\n",
            change_rounds,
            crate::changes::CHANGE_MARK.trim()
        );
        let _ = writeln!(
            o,
            "| tools | body | baseline p50 | first after the change p50 | **first: added** | repeated p50 | repeated: added | rounds |"
        );
        let _ = writeln!(o, "|---|---|---|---|---|---|---|---|");
        for c in &http.changes {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} | **{}** | {} | {} | {} |",
                thousands(c.tools),
                c.kind.to_uppercase(),
                ms(median(&c.baseline)),
                ms(median(&c.first)),
                signed_ms(c.added_first),
                ms(median(&c.repeated)),
                signed_ms(c.added_repeated),
                c.first.len()
            );
        }
        let _ = writeln!(o);
    }
    if let (Some(s), Some(e)) = (http.envoy_rss_start_kb, http.envoy_rss_end_kb) {
        let _ = writeln!(
            o,
            "Envoy resident memory: {} after start, {} at the end (one worker VM holding {} catalogs, plus Envoy's buffers).\n",
            mib(s * 1024),
            mib(e * 1024),
            http.lists.len()
        );
    }
    if !http.stats.is_empty() {
        let _ = writeln!(o, "Filter stats at the end of the run (non-zero):\n\n```");
        for (k, v) in &http.stats {
            let _ = writeln!(o, "{k}: {v}");
        }
        let _ = writeln!(o, "```\n");
    }
}
