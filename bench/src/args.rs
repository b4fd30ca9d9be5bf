//! The command line: `Args` and how `parse_args` reads it.

use crate::gateway;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Args {
    pub envoy: Option<PathBuf>,
    pub wasm: PathBuf,
    /// `--floor-wasm`: the proxy-wasm floor (`bench/floor/`), needed by the HTTP benchmarks.
    pub floor_wasm: Option<PathBuf>,
    pub catalog_server: Option<PathBuf>,
    pub out: PathBuf,
    pub sizes: Vec<usize>,
    pub round: Duration,
    pub rounds: usize,
    /// `--change-rounds`: catalog changes per upstream for the first list after a change.
    pub change_rounds: usize,
    pub eval: Vec<PathBuf>,
    pub notes: Option<PathBuf>,
    pub commands: Option<PathBuf>,
    pub skip_http: bool,
    pub skip_inproc: bool,
    pub budget: Duration,
    /// `--perf list|list-fresh|list-change|list-change-sse|list-sse|list-shuffled|build|load|search|search-session|search-session-off`: loop one native operation (for `perf record`) and exit; `vm-search`, `vm-search-off`: searches in a session in the `.wasm` (host-shim), insights on or off.
    pub perf: Option<String>,
    /// `--no-spin`: no SCHED_IDLE spinners during the HTTP benchmarks.
    pub no_spin: bool,
    /// `--gateway SERVERSxTOOLS`: only the many-servers section (mcp_router).
    pub gateway: Option<(usize, usize)>,
    /// `--skip-gateway`: a full run without the many-servers section (the file's is kept).
    pub skip_gateway: bool,
    /// `--code-wasm`: code mode's module; a full run then measures code mode too.
    pub code_wasm: Option<PathBuf>,
    /// `--code-mode`: only the code-mode section.
    pub code_mode_only: bool,
}

pub fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        envoy: None,
        wasm: mcp_tool_search_wasm_tests::harness::filter_wasm_path(),
        floor_wasm: None,
        catalog_server: None,
        out: PathBuf::from("BENCHMARKS.md"),
        sizes: vec![100, 1000, 10_000, 100_000],
        round: Duration::from_millis(750),
        rounds: 8,
        change_rounds: 8,
        eval: Vec::new(),
        notes: None,
        commands: None,
        skip_http: false,
        skip_inproc: false,
        budget: Duration::from_secs(10),
        perf: None,
        no_spin: false,
        gateway: None,
        skip_gateway: false,
        code_wasm: None,
        code_mode_only: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--envoy" => a.envoy = Some(value()?.into()),
            "--wasm" => a.wasm = value()?.into(),
            "--floor-wasm" => a.floor_wasm = Some(value()?.into()),
            "--catalog-server" => a.catalog_server = Some(value()?.into()),
            "--out" => a.out = value()?.into(),
            "--sizes" => {
                a.sizes = value()?
                    .split(',')
                    .map(|s| {
                        s.trim()
                            .parse::<usize>()
                            .map_err(|e| format!("--sizes: {e}"))
                    })
                    .collect::<Result<_, _>>()?
            }
            "--round-secs" => {
                let s: f64 = value()?.parse().map_err(|e| format!("--round-secs: {e}"))?;
                a.round = Duration::from_secs_f64(s.max(0.05));
            }
            "--rounds" => a.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--change-rounds" => {
                a.change_rounds = value()?
                    .parse()
                    .map_err(|e| format!("--change-rounds: {e}"))?
            }
            "--budget-secs" => {
                let s: f64 = value()?
                    .parse()
                    .map_err(|e| format!("--budget-secs: {e}"))?;
                a.budget = Duration::from_secs_f64(s.max(0.05));
            }
            "--eval" => a.eval.push(value()?.into()),
            "--notes" => a.notes = Some(value()?.into()),
            "--commands" => a.commands = Some(value()?.into()),
            "--skip-http" => a.skip_http = true,
            "--perf" => a.perf = Some(value()?),
            "--no-spin" => a.no_spin = true,
            "--gateway" => a.gateway = Some(gateway::parse_spec(&value()?)?),
            "--skip-inproc" => a.skip_inproc = true,
            "--skip-gateway" => a.skip_gateway = true,
            "--code-wasm" => a.code_wasm = Some(value()?.into()),
            "--code-mode" => a.code_mode_only = true,
            "--quick" => {
                // 10,000 tools on 21 servers is no quick check.
                a.skip_gateway = true;
                a.sizes = vec![100, 1000];
                a.round = Duration::from_millis(400);
                a.rounds = 2;
                a.change_rounds = 3;
                a.budget = Duration::from_secs(1);
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    a.rounds = a.rounds.max(1);
    a.change_rounds = a.change_rounds.max(1);
    Ok(a)
}

/// The usage line printed when the arguments are wrong.
pub const USAGE: &str = "usage: mcp-tool-search-bench --envoy BIN --wasm FILE --floor-wasm FILE --catalog-server BIN [--out FILE] [--sizes 100,1000,10000,100000] [--round-secs S] [--rounds N] [--change-rounds N] [--budget-secs S] [--eval FILE]... [--notes FILE] [--commands FILE] [--skip-http] [--skip-inproc] [--quick] [--no-spin] [--perf list|list-fresh|list-change|list-change-sse|list-sse|list-shuffled|build|load|search|search-session|search-session-off|vm-search|vm-search-off] [--gateway SERVERSxTOOLS] [--skip-gateway] [--code-wasm FILE] [--code-mode]";

/// What `--floor-wasm` is for, when it is missing.
pub const FLOOR_WASM_MISSING: &str = "--floor-wasm is required for the HTTP benchmarks: the proxy-wasm floor, \
     target/dist/mcp_tool_search_bench_floor.wasm \
     (`make bench` builds it: cargo build --release --target wasm32-wasip1 -p mcp-tool-search-bench-floor, then wasm-opt)";
