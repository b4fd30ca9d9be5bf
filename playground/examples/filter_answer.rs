//! The filter's own answer to a `tool_search`, computed natively the way the proxy-wasm glue
//! drives the core (`tests/support/filter.rs`), for the browser test to compare the page with.
//!
//! filter-answer --config FILE --list FILE [--header name:value]... --search ARGUMENTS_JSON
//! filter-answer --config FILE --check-config     (prints the parser's message, or "ok")

#[path = "../tests/support/filter.rs"]
mod filter;

use std::process::ExitCode;

fn run() -> Result<String, String> {
    let mut args = std::env::args().skip(1);
    let (mut config, mut list, mut search, mut check) = (None, None, None, false);
    let mut headers: Vec<(String, String)> = Vec::new();
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--config" => config = Some(read(&value()?)?),
            "--list" => list = Some(read(&value()?)?),
            "--search" => search = Some(value()?),
            "--header" => {
                let header = value()?;
                let (k, v) = header
                    .split_once(':')
                    .ok_or(format!("--header {header}: expected name:value"))?;
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
            "--check-config" => check = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    let config = config.ok_or("--config FILE is required")?;
    if check {
        return Ok(match filter::Filter::new(&config, "upstream") {
            Ok(_) => "ok".to_string(),
            Err(message) => message,
        });
    }
    let filter = filter::Filter::new(&config, "upstream")?;
    let list = list.ok_or("--list FILE is required")?;
    let search = search.ok_or("--search ARGUMENTS is required")?;
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    filter.list(&[], filter::response_of(&list).as_bytes())?;
    let name = filter.config.search.tool_name.clone();
    let answer = filter.call(&headers, &name, &search)?;
    Ok(answer.to_string())
}

fn read(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))
}

fn main() -> ExitCode {
    match run() {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("filter-answer: {e}");
            ExitCode::from(2)
        }
    }
}
