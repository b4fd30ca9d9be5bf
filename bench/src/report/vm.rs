//! Section 3 of the report: the cost inside the VM (native and in host-shim), and where the
//! time goes, function by function.

use super::units::{bytes, mib, ratio, thousands};
use crate::InprocResults;
use mcp_tool_search_bench::{ms, us_tenths};
use std::fmt::Write as _;
use std::time::Duration;

/// Section 3: the in-process table, publish, hierarchical search, shim cost and memory.
pub fn write_costs(o: &mut String, ip: &InprocResults) {
    let _ = writeln!(o, "## 3. Cost inside the VM\n");
    let _ = writeln!(
        o,
        "**Native**: the `mcp-tool-search` crate compiled for this machine (profile `bench-build`: release \
         optimizations, the filter crate in one codegen unit, no LTO). All in-process figures are medians of this thread's \
         **CPU time** (`CLOCK_THREAD_CPUTIME_ID`), so that other processes on a shared machine do not count. *Kernels*: `Catalog::from_json` of the stored \
         catalog, `catalog::CatalogIndex::build`, `search::search` (BM25, `limit` 5). *Exchanges*: the same \
         callbacks the VM runs (`http::Context`), driven by the core's `http::exchange` on its `MemoryHost` (shared data, \
         clock, stats and catalog meta in memory; a list: request, response headers, the body in {} KiB chunks; a search: \
         request headers and body to the local reply).\n\n\
         **Wasm**: the real `.wasm` in `host-shim` (wasmtime 48, Cranelift; module compiled once in {}), driven as Envoy \
         drives it, one exchange per stream. The listing VM's root tick runs after its first list, as Envoy's timer would: it \
         builds the catalog's index and publishes it to shared data (*publish*, below the table). *Load* = the first \
         search of a fresh VM (another worker: it loads the published index) minus a later search; the same difference \
         natively. \
         *Net* = minus the shim's cost of an exchange of the same size that the filter lets through untouched. \
         *Memory*: the VM's linear memory size (read from the process's mappings: host-shim has no accessor), which only grows.\n",
        crate::inproc::RESPONSE_CHUNK / 1024,
        ms(ip.module_compile)
    );
    let _ = writeln!(
        o,
        "| tools | list JSON | native: parse stored / build index / search | native exchange: first search / search / list JSON / list SSE | wasm: first search / search (net) / list JSON (net) / list SSE | **load** wasm / native (ratio) | **search** wasm net / native (ratio) | **list** wasm net / native (ratio) |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|");
    for s in &ip.sizes {
        let _ = writeln!(
            o,
            "| {} | {} | {} / {} / {} | {} / {} / {} / {} | {} / {} ({}) / {} ({}) / {} | {} / {} ({:.2}×) | {} / {} ({:.2}×) | {} / {} ({:.2}×) |",
            thousands(s.tools),
            bytes(s.list_json_bytes),
            ms(s.native_parse),
            ms(s.native_build),
            ms(s.native_search),
            ms(s.native_first_search),
            ms(s.native_search_exchange),
            ms(s.native_list_json),
            ms(s.native_list_sse),
            ms(s.wasm_first_search),
            ms(s.wasm_search_exchange),
            ms(s.wasm_search_net()),
            ms(s.wasm_list_json),
            ms(s.wasm_list_net()),
            ms(s.wasm_list_sse),
            ms(s.wasm_load()),
            ms(s.native_load()),
            ratio(s.wasm_load(), s.native_load()),
            ms(s.wasm_search_net()),
            ms(s.native_search_exchange),
            ratio(s.wasm_search_net(), s.native_search_exchange),
            ms(s.wasm_list_net()),
            ms(s.native_list_json),
            ratio(s.wasm_list_net(), s.native_list_json),
        );
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "Every figure of a row is the median of {} samples: native and Wasm measurements (and the functions below) \
         ran round robin, one sample each per round, so that they share the machine's conditions. A search sample is the \
         mean of the {} queries.\n",
        ip.sizes.iter().map(|s| format!("{} ({} tools)", s.rounds, thousands(s.tools))).collect::<Vec<_>>().join(", "),
        crate::QUERIES.len()
    );
    let _ = writeln!(
        o,
        "*Publish*, the listing VM's tick after its first list (it builds the index's BM25 part, writes the snapshot and \
         stores it in shared data; off any request's path, though it holds that worker meanwhile), wasm / native: {}.\n",
        ip.sizes
            .iter()
            .map(|s| format!("{} / {} at {} tools", ms(s.wasm_publish), ms(s.native_publish), thousands(s.tools)))
            .collect::<Vec<_>>()
            .join("; ")
    );
    let _ = writeln!(
        o,
        "*A list in another order* (as `mcp_router` joins its servers' lists: a JSON list of the same tools rotated by one to \
         four eighths, one order per sample, each answered from the memo of the last rewrite), wasm / net: {}.\n",
        ip.sizes
            .iter()
            .map(|s| format!("{} / {} at {} tools", ms(s.wasm_list_shuffled), ms(s.wasm_list_shuffled_net()), thousands(s.tools)))
            .collect::<Vec<_>>()
            .join("; ")
    );
    let _ = writeln!(
        o,
        "Hierarchical search (`search.strategy: \"hierarchical\"`, `group_separator: \"_\"`: the generator's \
         first name segment, services up to 1,000 tools and tenants beyond), natively, BM25: a search whose group \
         index is built (it is built once per catalog version and set of visible tools), and that build.\n\n\
         | tools | groups | flat search | hierarchical search | group index build |\n|---|---|---|---|---|"
    );
    for s in &ip.sizes {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            thousands(s.tools),
            s.groups,
            ms(s.native_search),
            ms(s.native_hierarchical_search),
            ms(s.native_group_index_build)
        );
    }
    let _ = writeln!(o);
    write_by_length(o, ip);
    let _ = writeln!(o, "Shim cost of an untouched exchange (subtracted for *net*): small request {}, list-sized response {} at the largest size.\n",
        ip.sizes.last().map(|s| ms(s.wasm_noop_small)).unwrap_or_default(),
        ip.sizes.last().map(|s| ms(s.wasm_noop_list)).unwrap_or_default());
    let _ = writeln!(o, "| tools | memory per VM: fresh | after lists + searches (rewrote the list) | after searches only (another worker) | stored catalog |\n|---|---|---|---|---|");
    let opt = |v: Option<u64>| v.map(mib).unwrap_or_else(|| "n/a".to_owned());
    for s in &ip.sizes {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            thousands(s.tools),
            opt(s.mem_fresh_vm),
            opt(s.mem_list_vm),
            opt(s.mem_search_vm),
            bytes(s.stored_bytes)
        );
    }
    let _ = writeln!(o);
}

/// A search exchange by query length: what a longer query costs, natively and in the VM, and
/// how many tools its words match.
fn write_by_length(o: &mut String, ip: &InprocResults) {
    let classes: Vec<usize> = ip
        .sizes
        .first()
        .map(|s| s.by_length.iter().map(|c| c.words).collect())
        .unwrap_or_default();
    if classes.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "A search exchange by query length (12 queries per class, `bench/src/main.rs` `QUERY_CLASSES`: \
         two words as a person types them, eight, and seventeen or more, 20 to 23 here, as agents write \
         tasks; stop words included), native / wasm (not net), and the median number of tools a query \
         of the class matches:\n"
    );
    let mut head = String::from("| tools |");
    let mut rule = String::from("|---|");
    for words in &classes {
        let label = if *words >= 17 {
            format!("{words}+ words")
        } else {
            format!("{words} words")
        };
        head.push_str(&format!(" {label}: native / wasm | matched |"));
        rule.push_str("---|---|");
    }
    let _ = writeln!(o, "{head}\n{rule}");
    for s in &ip.sizes {
        let mut row = format!("| {} |", thousands(s.tools));
        for c in &s.by_length {
            row.push_str(&format!(
                " {} / {} | {} |",
                ms(c.native),
                ms(c.wasm),
                thousands(c.matches)
            ));
        }
        let _ = writeln!(o, "{row}");
    }
    let _ = writeln!(o);
}

/// *Where the time goes*: the filter's functions timed one by one at the size of the
/// breakdown, as shares of the native exchange.
pub fn write_breakdown(o: &mut String, ip: &InprocResults) {
    if let (Some(b), Some(s)) = (
        &ip.breakdown,
        ip.sizes
            .iter()
            .find(|s| Some(s.tools) == ip.breakdown.as_ref().map(|b| b.tools)),
    ) {
        let share = |part: Duration, whole: Duration| {
            let r = ratio(part, whole);
            if r.is_finite() {
                format!("{:.0}%", r * 100.0)
            } else {
                "".to_owned()
            }
        };
        let _ = writeln!(
            o,
            "### Where the time goes ({} tools, native, CPU time)\n",
            thousands(b.tools)
        );
        let _ = writeln!(
            o,
            "The filter's own functions timed one by one (medians) on the same catalog; the shares are of the native \
             exchange above (the Wasm figures are {:.1}–{:.1}× these).\n",
            ratio(s.wasm_search_net(), s.native_search_exchange).min(ratio(s.wasm_load(), s.native_load())).min(ratio(s.wasm_list_net(), s.native_list_json)),
            ratio(s.wasm_search_net(), s.native_search_exchange).max(ratio(s.wasm_load(), s.native_load())).max(ratio(s.wasm_list_net(), s.native_list_json)),
        );
        let _ = writeln!(o, "| path | function | time | share |\n|---|---|---|---|");
        let _ = writeln!(
            o,
            "| `tools/list` (steady: the same response as last time, replayed; JSON) | whole exchange (`http::exchange`) | {} | 100% |",
            ms(s.native_list_json)
        );
        let _ = writeln!(o, "| | … of which `fnv::fingerprint` of the list (how the response is recognised) | {} | {} |", ms(b.fingerprint), share(b.fingerprint, s.native_list_json));
        let nr = b.list_not_remembered;
        let _ = writeln!(o, "| a list not yet remembered (the first after a catalog change, or for another caller or page) | whole exchange (`http::exchange`) | {} | 100% |", ms(nr));
        let _ = writeln!(o, "| | `catalog::Tool::from_raw` × {} (name, title, description read; the schema skipped) | {} | {} |", thousands(b.tools), ms(b.from_raw_all), share(b.from_raw_all, nr));
        let _ = writeln!(
            o,
            "| | `store::CatalogCache::learn` of the unchanged page (compared with this VM's index; the stored catalog is not read) | {} | {} |",
            ms(b.learn_unchanged),
            share(b.learn_unchanged, nr)
        );
        let _ = writeln!(
            o,
            "| | … of which `catalog::Catalog::unchanged_by` | {} | {} |",
            ms(b.unchanged_by),
            share(b.unchanged_by, nr)
        );
        let _ = writeln!(o, "| first search of another worker (loads the published index) | whole exchange minus a later search | {} | 100% |", ms(s.native_load()));
        let _ = writeln!(o, "| the listing worker's tick (builds the index, publishes it) | whole tick | {} | 100% |", ms(s.native_publish));
        let _ = writeln!(
            o,
            "| | `catalog::Catalog::from_json` (not on this path: a worker parses the stored catalog only when no index of its version is published) | {} | {} |",
            ms(b.from_json),
            share(b.from_json, s.native_publish)
        );
        let _ = writeln!(
            o,
            "| | `catalog::CatalogIndex::build` | {} | {} |",
            ms(b.build),
            share(b.build, s.native_publish)
        );
        let _ = writeln!(o, "| | … of which splitting names and descriptions into words (`tokenizer::for_each_word`; {} tokens, {} distinct words, each stemmed once) | {} | {} |", thousands(b.tokens), thousands(b.distinct_tokens), ms(b.words_all), share(b.words_all, s.native_publish));
        let _ = writeln!(
            o,
            "| `tool_search` (steady) | whole exchange (`http::exchange`) | {} | 100% |",
            ms(s.native_search_exchange)
        );
        let _ = writeln!(
            o,
            "| | `search::search` (median {} matching tools per query) | {} | {} |",
            thousands(b.matches),
            ms(b.search),
            share(b.search, s.native_search_exchange)
        );
        let _ = writeln!(
            o,
            "| | … of which `bm25::Bm25Index::scores` | {} | {} |",
            ms(b.scores),
            share(b.scores, s.native_search_exchange)
        );
        let _ = writeln!(o);
    }
}

/// *Host functions a request calls*: the census of ABI crossings of one search and of one
/// exchange the filter lets through, at every size (the same calls in any host; what each costs
/// is the host's).
pub fn write_hostcalls(o: &mut String, ip: &InprocResults) {
    let Some(first) = ip.sizes.first() else {
        return;
    };
    let mut names: Vec<&'static str> = ip
        .sizes
        .iter()
        .flat_map(|s| {
            s.search_hostcalls
                .functions
                .keys()
                .chain(s.noop_hostcalls.functions.keys())
        })
        .copied()
        .collect();
    names.sort_unstable();
    names.dedup();
    let _ = writeln!(o, "### Host functions a request calls\n");
    let _ = writeln!(
        o,
        "Every proxy-wasm and WASI function the `.wasm` called in the host-shim during one `tool_search` exchange \
         (the first query, after the VM's first search) and during one exchange the filter lets through untouched \
         (a small POST to a path that is not MCP): calls, bytes the host read from the module's memory, bytes it \
         copied into the module. These are the same in Envoy; what each costs is the host's.\n"
    );
    let sizes: Vec<String> = ip.sizes.iter().map(|s| thousands(s.tools)).collect();
    let _ = writeln!(
        o,
        "| function | pass-through: calls | search at {} tools: calls / bytes in / bytes out |\n|---|---|---|",
        sizes.join(" · ")
    );
    for name in &names {
        let through = first
            .noop_hostcalls
            .functions
            .get(name)
            .map_or(0, |h| h.calls);
        let searches: Vec<String> = ip
            .sizes
            .iter()
            .map(|s| {
                s.search_hostcalls.functions.get(name).map_or_else(
                    || "–".to_owned(),
                    |h| format!("{} / {} / {}", h.calls, h.bytes_in, h.bytes_out),
                )
            })
            .collect();
        let _ = writeln!(o, "| `{name}` | {through} | {} |", searches.join(" · "));
    }
    let total = |c: &host_shim::HostcallCensus| c.functions.values().map(|h| h.calls).sum::<u64>();
    let totals: Vec<String> = ip
        .sizes
        .iter()
        .map(|s| total(&s.search_hostcalls).to_string())
        .collect();
    let _ = writeln!(
        o,
        "| **all** | **{}** | **{}** |\n",
        total(&first.noop_hostcalls),
        totals.join(" · ")
    );
    let keys: Vec<String> = first
        .search_hostcalls
        .keys
        .iter()
        .map(|(key, n)| format!("`{key}` ×{n}"))
        .collect();
    let _ = writeln!(
        o,
        "What the search read by key at {} tools (shared-data keys, property paths, header names): {}.\n",
        thousands(first.tools),
        keys.join(", ")
    );
}

/// What search insights add to a search in the VM (issue 35: at most 3 µs).
pub fn write_insights(o: &mut String, ip: &InprocResults) {
    if ip.insights.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "### Search insights on and off
"
    );
    let _ = writeln!(
        o,
        "The same searches (the {} queries, `limit` 5) in {} VMs of this `.wasm`, each of which listed the catalog and \
         published its index: `search.insights` on (the default) in {each} and off in {each}, made in the Thue-Morse order \
         (on, off, off, on, …: a VM made earlier ran slower, and this order gives both settings the same places) and run \
         round robin (every other round in reverse order), every search in one MCP session \
         (`Mcp-Session-Id`), so that what insights do per search is all in it: the clock read once more, two histograms, \
         the access record, the session's link and the worker's tally kept in the VM (written to shared data on its tick). A sample is the mean exchange of the \
         queries (CPU time); a VM's figure is its median over rounds, a setting's the mean of its VMs. The VMs \
         with insights off run the same code on the same data: how far apart the fastest and the slowest land is what \
         one VM per setting could not resolve.\n",
        crate::QUERIES.len(),
        2 * crate::insights::VMS_EACH,
        each = crate::insights::VMS_EACH,
    );
    let _ = writeln!(
        o,
        "| tools | search, insights on | search, insights off | added | VMs with insights off land apart by | rounds |"
    );
    let _ = writeln!(o, "|---|---|---|---|---|---|");
    for c in &ip.insights {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} |",
            thousands(c.tools),
            ms(c.on),
            ms(c.off),
            us_tenths(c.added()),
            us_tenths(c.alike()),
            c.rounds
        );
    }
    let _ = writeln!(o);
}
