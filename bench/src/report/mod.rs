//! BENCHMARKS.md: the machine, the commands, the targets and the sections the runs measured.
//! `machine.rs` probes the machine, `targets.rs` judges the targets, `http.rs` (sections 1
//! and 2), `vm.rs` (section 3) and `quality.rs` (section 4) write the measurements, `units.rs`
//! formats the figures.

mod http;
mod machine;
mod quality;
mod targets;
mod units;
mod vm;

pub use machine::{loadavg, utc_now, Machine};

use crate::args::Args;
use crate::http::HttpResults;
use crate::InprocResults;
use std::fmt::Write as _;
use std::time::Duration;
pub(crate) use units::thousands;
use units::{mark, mib};

pub struct Inputs<'a> {
    pub args: &'a Args,
    pub machine: &'a Machine,
    pub load_end: String,
    pub elapsed: Duration,
    pub inproc: Option<&'a InprocResults>,
    pub http: Option<&'a HttpResults>,
    pub tokens: &'a [crate::tokens::TokenRow],
}

/// Section 4b: what the agent reads.
fn write_tokens(o: &mut String, rows: &[crate::tokens::TokenRow]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(o, "### What the agent reads (tokens)\n");
    let _ = writeln!(
        o,
        "Tokens estimated as the filter estimates them (bytes / 4 of the text and `structuredContent`; see the README, *What the agent sees*), natively (`bench/src/tokens.rs`), as a 2025-11-25 client: \
         a `tools/list` without and with the filter, and the `tool_search` answers to the {} bench queries at `limit` 5 (median / largest), \
         without a budget (`search.max_result_tokens` 1,000,000) and within the default budget (10,000), with how many results were full definitions within it (fewest–most; a query may match fewer than 5). \
         *Large schemas*: the same tools, each with 12 more documented arguments and every fifth with 300 (`wasm-tests/src/large_schemas.rs`), up to {} tools (10,000 of them make an 80 MB list).\n",
        crate::QUERIES.len(),
        thousands(crate::tokens::LARGE_MAX_TOOLS)
    );
    let _ = writeln!(
        o,
        "| catalog | tools | largest definition | list without / with the filter | search answer, no budget | search answer, budget 10,000 | full definitions shown (fewest–most) |\n|---|---|---|---|---|---|---|"
    );
    for r in rows {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} / {} | {} / {} | {} / {} | {}–{} |",
            r.catalog,
            thousands(r.tools),
            units::bytes(r.largest),
            thousands(r.list_upstream),
            thousands(r.list_filtered),
            thousands(r.search_unbudgeted.0),
            thousands(r.search_unbudgeted.1),
            thousands(r.search_budgeted.0),
            thousands(r.search_budgeted.1),
            r.full_shown.0,
            r.full_shown.1
        );
    }
    let _ = writeln!(o);
}

pub fn render(inp: &Inputs) -> String {
    let m = inp.machine;
    let a = inp.args;
    let mut o = String::new();
    let _ = writeln!(o, "# Benchmarks\n");
    let _ = writeln!(
        o,
        "Written by `make bench` (`bench/`, package `mcp-tool-search-bench`) on {}; the run took {:.0} s. \
         Every figure below comes from that one run: the measurements that are compared were taken \
         side by side and interleaved (each target in turn, {} rounds of {:.1} s), so a change in the machine's speed \
         during the run affects them alike; the ratios are the figures to rely on.\n",
        m.date,
        inp.elapsed.as_secs_f64(),
        a.rounds,
        a.round.as_secs_f64()
    );
    let _ = writeln!(o, "## Machine\n");
    let _ = writeln!(o, "| | |\n|---|---|");
    let _ = writeln!(o, "| cores | {} |", m.cores);
    let _ = writeln!(o, "| CPU | {} |", m.cpu);
    let _ = writeln!(o, "| memory | {} |", m.memory);
    let _ = writeln!(o, "| kernel | Linux {} |", m.kernel);
    let _ = writeln!(
        o,
        "| load average (1, 5, 15 min) at start / end | {} / {} |",
        m.load_start, inp.load_end
    );
    let _ = writeln!(o, "| Envoy | {} |", m.envoy);
    let _ = writeln!(o, "| Rust | {} |", m.rustc);
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "The machine is shared (other builds ran during the run when the load average is above the core count): \
         absolute latencies are upper bounds, the ratios between side-by-side figures are what to compare.\n"
    );

    let _ = writeln!(o, "## How it was run\n");
    match a
        .commands
        .as_ref()
        .and_then(|c| std::fs::read_to_string(c).ok())
    {
        Some(text) => {
            let _ = writeln!(o, "```sh\n{}\n```\n", text.trim_end());
        }
        None => {
            let _ = writeln!(o, "```sh\nmake bench\n```\n");
        }
    }
    let _ = writeln!(
        o,
        "- Catalogs: {} tools from the deterministic generator (`cargo run -p mcp-tool-search-wasm-tests --bin gen-catalog -- --count N`), \
         served whole (one page) by `catalog-server --json --stateless --tcp-nodelay` and, for SSE, `catalog-server --stateless --tcp-nodelay` (plus its built-in `slow_progress` tool; `--tcp-nodelay`, added for the bench, avoids ~40 ms Nagle/delayed-ACK stalls on SSE over keep-alive).",
        a.sizes.iter().map(|n| thousands(*n)).collect::<Vec<_>>().join(", ")
    );
    let _ = writeln!(
        o,
        "- Envoy: one process, `--concurrency 1`, three listeners: *filtered* (the filter, configured \
         `{}` with the bench's paths), *baseline* (no filter, as `envoy/baseline.yaml`) and *floor* (the proxy-wasm floor, \
         `bench/floor/`, see section 1; with `--concurrency 1` its one worker VM holds every answer it was taught). \
         *filtered* and *baseline* have a `direct_response` route `/direct`; all three have the MCP routes. The `/direct` route runs Envoy's buffer filter first (disabled on the MCP routes): a \
         `direct_response` sent before the request body is read closes an HTTP/1.1 connection, so the floor is: read the \
         request, answer it locally (what the filter does for a search). `per_connection_buffer_limit_bytes` 256 MiB on \
         listeners and clusters. Log level warning.",
        crate::messages::plugin_config(&["/mcp".to_owned()])
    );
    let _ = writeln!(
        o,
        "- Load: the bench's own HTTP/1.1 client (keep-alive, closed loop, `TCP_NODELAY`, every latency recorded; \
         latency runs on 1 connection, throughput runs on 4), {} `tool_search` queries in rotation, `limit` 5. Loopback only. {}\n",
        crate::QUERIES.len(),
        match inp.http {
            Some(h) if h.spinners => "During the HTTP runs one `SCHED_IDLE` spinner thread per core keeps the CPUs from idling: \
                on a virtual machine, waking a halted vCPU for every request adds a hypervisor round trip to each latency \
                (in trial runs on this machine the floor was ~50 µs with busy CPUs and 150–210 µs idle); `SCHED_IDLE` threads run only when \
                nothing else wants the CPU.",
            Some(_) => "No spinners (`--no-spin`): latencies include waking idle vCPUs.",
            None => "",
        }
    );

    let _ = writeln!(o, "## Targets\n");
    let _ = writeln!(o, "| target | figure | |\n|---|---|---|");
    for t in targets::targets(inp) {
        let _ = writeln!(
            o,
            "| {} | {} | {} |",
            t.what,
            t.figure,
            t.ok.map(mark).unwrap_or("not measured")
        );
    }
    let _ = writeln!(o);

    if let Some(http) = inp.http {
        http::write_search(&mut o, http);
        http::write_list(&mut o, http, inp.args.change_rounds);
    }

    if let Some(ip) = inp.inproc {
        vm::write_costs(&mut o, ip);
        vm::write_insights(&mut o, ip);
        vm::write_breakdown(&mut o, ip);
        vm::write_hostcalls(&mut o, ip);
    }

    quality::write(&mut o, a);

    write_tokens(&mut o, inp.tokens);

    let _ = writeln!(o, "## 5. Artifact\n");
    let size = std::fs::metadata(&a.wasm).map(|m| m.len()).unwrap_or(0);
    let _ = writeln!(
        o,
        "`{}`: {} bytes ({}), built by `make wasm` (release: LTO, one codegen unit, `opt-level = 3`, `panic = \"abort\"`, stripped, then binaryen's `wasm-opt -O3`).\n",
        a.wasm.display(),
        thousands(size as usize),
        mib(size)
    );

    if let Some(notes) = &a.notes {
        if let Ok(text) = std::fs::read_to_string(notes) {
            let _ = writeln!(o, "{}", text.trim_end());
        }
    }
    o
}
