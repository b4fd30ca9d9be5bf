//! `gen-catalog --count N`: print N realistic MCP tool definitions as JSONL on stdout.
//! Same N, same bytes (see `mcp_tool_search_wasm_tests::catalog`).

use std::io::Write;
use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!("usage: gen-catalog --count N   (JSONL tool definitions on stdout)");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut count: Option<usize> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--count" | "-n" => match args.next().and_then(|v| v.parse().ok()) {
                Some(n) => count = Some(n),
                None => return usage(),
            },
            "--help" | "-h" => {
                let _ = usage();
                return ExitCode::SUCCESS;
            }
            _ => return usage(),
        }
    }
    let Some(count) = count else {
        return usage();
    };
    let text = mcp_tool_search_wasm_tests::catalog::jsonl(count);
    let produced = text.lines().count();
    let mut out = std::io::stdout().lock();
    if out
        .write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    if produced < count {
        eprintln!("gen-catalog: only {produced} tools could be generated");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
