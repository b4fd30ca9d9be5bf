//! `mcp-tool-search-bench`: the benchmarks behind `make bench`. Runs, in one process and one
//! sitting, the cost inside the VM (native core and the real `.wasm` in host-shim), then
//! `tool_search` and `tools/list` through a one-worker Envoy beside two floors (a
//! `direct_response` and the proxy-wasm floor, `bench/floor/`) and a no-filter baseline, and
//! writes `BENCHMARKS.md`.
//!
//! ```text
//! mcp-tool-search-bench --envoy BIN --wasm FILE --floor-wasm FILE --catalog-server BIN
//!     [--out BENCHMARKS.md] [--sizes 100,1000,10000,100000] [--round-secs 1.5] [--rounds 4]
//!     [--change-rounds 8] [--eval FILE]...
//!     [--notes FILE] [--commands FILE] [--skip-http] [--skip-inproc] [--quick] [--no-spin]
//!     [--budget-secs S] [--perf list|list-fresh|list-change|list-change-sse|list-sse|list-shuffled|build|load|search|search-session|search-session-off|vm-search|vm-search-off]
//!     [--gateway SERVERSxTOOLS] [--skip-gateway]
//! ```
//!
//! A full run ends with the many-servers section (20 servers × 500 tools through Envoy's
//! `mcp_router`, `gateway.rs`). `--gateway 20x500` measures only the filter in front of Envoy's `mcp_router` over that many
//! generated servers (see `gateway.rs`) and replaces only that section of `--out`.
//!
//! `args.rs` reads the command line; `inproc.rs` measures inside the VM (`lengths.rs`: searches
//! by query length); `http.rs` runs the
//! benchmarks through Envoy, with `floor.rs` (the proxy-wasm floor taught the filter's answers),
//! `changes.rs` (the first list after a catalog change), `rounds.rs` (interleaved rounds and
//! their medians), `spinners.rs` and `client.rs` (the load client); `gateway.rs` the
//! many-servers section; `tokens.rs` what the agent reads; `report/` writes BENCHMARKS.md.

mod args;
mod changes;
mod client;
mod code_mode;
mod embed_change;
mod floor;
mod gateway;
mod http;
mod inproc;
mod insights;
mod lengths;
mod messages;
mod native;
mod report;
mod rounds;
mod shim;
mod spinners;
mod tokens;
mod vmmem;

use args::{Args, FLOOR_WASM_MISSING};
use inproc::SizeCosts;
use mcp_tool_search_wasm_tests::harness::TestDir;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Queries a user of a SaaS tool catalog would type (every one has matches at every size).
pub const QUERIES: &[&str] = &[
    "create an issue in a github repository",
    "refund a stripe charge",
    "send a message to a slack channel",
    "schedule a calendar meeting",
    "upload a file to dropbox",
    "search jira tickets",
    "list open pull requests",
    "add a row to a spreadsheet",
    "send an email",
    "create a support ticket",
    "run a sql query",
    "acknowledge a pagerduty incident",
];

/// Queries by length (words as written, stop words included), as the bench ranks them: two
/// words as a person types them, eight and seventeen or more as agents write their tasks. The
/// in-VM section times each class; section 1 runs the longest through Envoy beside its floor.
pub const QUERY_CLASSES: &[(usize, &[&str])] = &[(2, WORDS_2), (8, WORDS_8), (17, WORDS_17)];

const WORDS_2: &[&str] = &[
    "refund charge",
    "slack message",
    "github issue",
    "calendar meeting",
    "dropbox upload",
    "jira tickets",
    "pull requests",
    "spreadsheet row",
    "send email",
    "support ticket",
    "sql query",
    "pagerduty incident",
];

const WORDS_8: &[&str] = &[
    "refund the last stripe charge for this customer",
    "post the release notes to the slack channel",
    "open a github issue about the failing build",
    "schedule a calendar meeting with the design team",
    "upload the quarterly report file to shared dropbox",
    "find every jira ticket assigned to the team",
    "list the open pull requests waiting for review",
    "add a row with these totals to spreadsheet",
    "send an email to the customer about delays",
    "create a support ticket for the login problem",
    "run a sql query against the orders database",
    "acknowledge the pagerduty incident and add a note",
];

/// Seventeen words or more each.
pub const WORDS_17: &[&str] = &[
    "the customer was charged twice for the same order last week so refund the duplicate stripe charge and tell them",
    "post a short summary of the deployment that just finished to the engineering slack channel and mention the on call engineer",
    "open a new github issue in the web repository describing the flaky login test and assign it to the frontend team",
    "find a free slot next tuesday afternoon and schedule a calendar meeting with the design team to review the new onboarding flow",
    "take the quarterly finance report that was generated this morning and upload the file to the shared dropbox folder for the board",
    "search jira for every open ticket about the payment outage that is assigned to the backend team and list their current status",
    "list the open pull requests in the api repository that have been waiting for a review for more than three days",
    "append a new row to the sales spreadsheet with the totals for each region from this month and last month side by side",
    "send an email to the customer who reported the broken invoice explaining that the fix ships tomorrow and apologising for the delay",
    "create a support ticket for the enterprise customer who cannot log in since the password reset and mark it as high priority",
    "run a sql query against the orders database to count how many orders were placed per day over the last two weeks",
    "acknowledge the pagerduty incident that fired for the checkout service a few minutes ago and add a note that we are investigating",
];

/// The `## Chaos soak` section `make soak` wrote into an earlier BENCHMARKS.md, kept.
fn soak_section(doc: &str) -> String {
    mcp_tool_search_bench::markdown_section(doc, "## Chaos soak")
}

/// The measurements inside the VM (section 3): one row per catalog size, the breakdown at the
/// largest.
#[derive(Debug, Clone, Default)]
pub struct InprocResults {
    pub sizes: Vec<SizeCosts>,
    pub breakdown: Option<inproc::Breakdown>,
    pub module_compile: Duration,
    /// A search in the VM with search insights on and off, by size.
    pub insights: Vec<insights::InsightsCost>,
}

fn log(msg: &str) {
    eprintln!("[bench {}] {msg}", chrono_now());
}

fn chrono_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!(
        "{:02}:{:02}:{:02}",
        (secs / 3600) % 24,
        (secs / 60) % 60,
        secs % 60
    )
}

fn run_inproc(args: &Args, catalogs: &[(usize, String)]) -> Result<InprocResults, String> {
    let (module, compile) = shim::load_module(&args.wasm)?;
    let mut out = InprocResults {
        module_compile: compile,
        ..InprocResults::default()
    };
    // Where the time goes is broken down at 10,000 tools (the size most targets name), else at
    // the largest size.
    let broken_down = catalogs
        .iter()
        .position(|(n, _)| *n == 10_000)
        .unwrap_or(catalogs.len().saturating_sub(1));
    for (i, (n, jsonl)) in catalogs.iter().enumerate() {
        log(&format!(
            "in-process: {n} tools, native and .wasm in host-shim, interleaved"
        ));
        let (costs, breakdown) =
            inproc::measure(&module, jsonl, QUERIES, args.budget, i == broken_down)?;
        out.sizes.push(costs);
        if breakdown.is_some() {
            out.breakdown = breakdown;
        }
        // At the sizes a deployment serves most (the catalog does not change what insights
        // do per search, only what the search around them costs).
        if *n <= 10_000 {
            log(&format!(
                "in-process: {n} tools, search insights on and off"
            ));
            let budget = args.budget / 2;
            out.insights
                .push(insights::measure(&module, *n, jsonl, QUERIES, budget)?);
        }
    }
    Ok(out)
}

fn main() -> ExitCode {
    let args = match args::parse_args() {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("mcp-tool-search-bench: {e}");
            }
            eprintln!("{}", args::USAGE);
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    // Before the in-process part (minutes), not after it.
    let one_section = args.gateway.is_some() || args.code_mode_only;
    if args.perf.is_none() && !one_section && !args.skip_http && args.floor_wasm.is_none() {
        eprintln!("mcp-tool-search-bench: {FLOOR_WASM_MISSING}");
        return ExitCode::from(2);
    }
    if let Some(what) = &args.perf {
        for &n in &args.sizes {
            let jsonl = mcp_tool_search_wasm_tests::catalog::jsonl(n);
            let measured = match what.as_str() {
                "vm-search" | "vm-search-off" => {
                    shim::load_module(&args.wasm).and_then(|(m, _)| {
                        insights::perf_loop(&m, &jsonl, QUERIES, what == "vm-search", args.budget)
                    })
                }
                _ => native::perf_loop(what, &jsonl, args.budget),
            };
            match measured {
                Ok((count, median)) => {
                    println!("{what} at {n} tools: {count} iterations, median {median:?}")
                }
                Err(e) => {
                    eprintln!("mcp-tool-search-bench: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        return ExitCode::SUCCESS;
    }
    if let Some(spec) = args.gateway {
        return run_only(&args, "bench-gateway", gateway::HEADING, |dir| {
            gateway::run(&args, spec, dir)
        });
    }
    if args.code_mode_only {
        return run_only(&args, "bench-code", code_mode::HEADING, |dir| {
            code_mode::run(&args, dir)
        });
    }
    let machine = report::Machine::probe(args.envoy.as_deref());
    let catalogs: Vec<(usize, String)> = args
        .sizes
        .iter()
        .map(|&n| (n, mcp_tool_search_wasm_tests::catalog::jsonl(n)))
        .collect();
    let inproc = if args.skip_inproc {
        None
    } else {
        match run_inproc(&args, &catalogs) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("mcp-tool-search-bench: in-process benchmarks failed: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    log("tokens the agent reads: lists and search answers, generated and large schemas");
    let tokens = match tokens::measure(&catalogs) {
        Ok(rows) => rows,
        Err(e) => {
            eprintln!("mcp-tool-search-bench: token figures failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    log("embedding a catalog change: the filter's part, 121 and 10,000 tools");
    let embed_change = match embed_change::measure() {
        Ok(rows) => embed_change::section(&rows),
        Err(e) => {
            eprintln!("mcp-tool-search-bench: embedding a change failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let http = if args.skip_http {
        None
    } else {
        let dir = match TestDir::new("bench") {
            Ok(d) => d,
            Err(e) => {
                eprintln!("mcp-tool-search-bench: {e}");
                return ExitCode::FAILURE;
            }
        };
        match http::run_http(&args, &dir, &catalogs) {
            Ok(r) => Some(r),
            Err(e) => {
                eprintln!("mcp-tool-search-bench: HTTP benchmarks failed: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    // The many-servers section, measured in the same run unless the HTTP benchmarks are off
    // (`--skip-http`, `--quick`, `--skip-gateway`); otherwise the file's old one is kept.
    let gateway_section = if args.skip_http || args.skip_gateway {
        None
    } else {
        match TestDir::new("bench-gateway")
            .map_err(|e| e.to_string())
            .and_then(|dir| gateway::run(&args, gateway::FULL_RUN, &dir))
        {
            Ok(s) => Some(format!("\n{s}")),
            Err(e) => {
                eprintln!("mcp-tool-search-bench: gateway benchmark failed: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    // Code mode, given its module (`make bench` passes it); otherwise the file's section is kept.
    let code_section = if args.skip_http || args.code_wasm.is_none() {
        None
    } else {
        match TestDir::new("bench-code")
            .map_err(|e| e.to_string())
            .and_then(|dir| code_mode::run(&args, &dir))
        {
            Ok(s) => Some(format!("\n{s}")),
            Err(e) => {
                eprintln!("mcp-tool-search-bench: code mode benchmark failed: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    let load_end = report::loadavg();
    let text = report::render(&report::Inputs {
        args: &args,
        machine: &machine,
        load_end,
        elapsed: started.elapsed(),
        inproc: inproc.as_ref(),
        http: http.as_ref(),
        tokens: &tokens,
    });
    // `make soak` writes the "Chaos soak" section of the same file (10-minute runs only, far
    // less often than this): a benchmark run keeps it.
    // ... and `--gateway` its own section, also kept.
    let old = std::fs::read_to_string(&args.out).unwrap_or_default();
    let text = text
        + &embed_change
        + &gateway_section.unwrap_or_else(|| gateway::section(&old))
        + &code_section.unwrap_or_else(|| code_mode::section(&old))
        + &soak_section(&old);
    if let Err(e) = std::fs::write(&args.out, text) {
        eprintln!("mcp-tool-search-bench: {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    log(&format!(
        "wrote {} in {:.0} s",
        args.out.display(),
        started.elapsed().as_secs_f64()
    ));
    ExitCode::SUCCESS
}

/// `--gateway`, `--code-mode`: only one section (`measure` writes it), put into `--out` in place
/// of the old one under `heading`.
fn run_only(
    args: &Args,
    name: &str,
    heading: &str,
    measure: impl FnOnce(&TestDir) -> Result<String, String>,
) -> ExitCode {
    let section = TestDir::new(name)
        .map_err(|e| e.to_string())
        .and_then(|dir| measure(&dir));
    let section = match section {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mcp-tool-search-bench: {name} failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    print!("{section}");
    let old = std::fs::read_to_string(&args.out).unwrap_or_default();
    let new = mcp_tool_search_bench::replace_markdown_section(&old, heading, &section);
    if let Err(e) = std::fs::write(&args.out, new) {
        eprintln!("mcp-tool-search-bench: {}: {e}", args.out.display());
        return ExitCode::FAILURE;
    }
    log(&format!("wrote {heading:?} of {}", args.out.display()));
    ExitCode::SUCCESS
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::soak_section;

    #[test]
    fn a_benchmark_run_keeps_the_soak_section() {
        assert_eq!(soak_section("# B\n\n## One\n"), "");
        assert_eq!(
            soak_section("# B\n\n## Chaos soak\n\nfigures\n\n## Next\n"),
            "\n## Chaos soak\n\nfigures\n"
        );
        assert_eq!(
            soak_section("# B\n\n## Chaos soak\n\nfigures\n"),
            "\n## Chaos soak\n\nfigures\n"
        );
    }
}
