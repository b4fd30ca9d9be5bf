//! `host-shim`: run a proxy-wasm `.wasm` over one captured HTTP exchange and print what the
//! client would receive, with the stats and the module's log.

use host_shim::{wire, Host, HttpMessage, LogLevel, MetricValue, Outcome, Vm, VmOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "\
usage:
  host-shim replay --wasm PATH [--config JSON_OR_FILE]
                   [--request-headers FILE] [--request-body FILE | --request-json TEXT]
                   --response-headers FILE [--response-body FILE]
                   [--chunk N] [--request-chunk N] [--empty-final-chunk]
                   [--allow-on-headers-stop-iteration] [--namespace NS]
                   [--property a.b.c=VALUE]... [--log-level trace|debug|info|warn|error]
                   [--body-only]
  host-shim imports --wasm PATH

replay runs one exchange through the module as Envoy would: the request (default: POST /mcp
with a JSON body) through the filter, then, if it reached the upstream, the captured response
(a `.headers` file: status line and headers; a `.body` file: the exact bytes), split into
--chunk-byte pieces. It prints the response the client receives, the stats and the log.
";

#[derive(Default)]
struct Args {
    command: String,
    wasm: Option<PathBuf>,
    config: Option<String>,
    request_headers: Option<PathBuf>,
    request_body: Option<PathBuf>,
    request_json: Option<String>,
    response_headers: Option<PathBuf>,
    response_body: Option<PathBuf>,
    chunk: Option<usize>,
    request_chunk: Option<usize>,
    empty_final_chunk: bool,
    allow_stop_iteration: bool,
    namespace: Option<String>,
    properties: Vec<(Vec<String>, String)>,
    log_level: LogLevel,
    body_only: bool,
}

fn parse(argv: Vec<String>) -> Result<Args, String> {
    let mut args = Args {
        log_level: LogLevel::Info,
        ..Args::default()
    };
    let mut it = argv.into_iter();
    args.command = it.next().ok_or("missing command")?;
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--wasm" => args.wasm = Some(value()?.into()),
            "--config" => args.config = Some(value()?),
            "--request-headers" => args.request_headers = Some(value()?.into()),
            "--request-body" => args.request_body = Some(value()?.into()),
            "--request-json" => args.request_json = Some(value()?),
            "--response-headers" => args.response_headers = Some(value()?.into()),
            "--response-body" => args.response_body = Some(value()?.into()),
            "--chunk" => args.chunk = Some(number(&value()?)?),
            "--request-chunk" => args.request_chunk = Some(number(&value()?)?),
            "--empty-final-chunk" => args.empty_final_chunk = true,
            "--allow-on-headers-stop-iteration" => args.allow_stop_iteration = true,
            "--namespace" => args.namespace = Some(value()?),
            "--property" => {
                let v = value()?;
                let (path, val) = v
                    .split_once('=')
                    .ok_or(format!("--property wants a.b.c=VALUE, got {v:?}"))?;
                args.properties
                    .push((path.split('.').map(str::to_string).collect(), val.into()));
            }
            "--log-level" => {
                args.log_level = match value()?.as_str() {
                    "trace" => LogLevel::Trace,
                    "debug" => LogLevel::Debug,
                    "info" => LogLevel::Info,
                    "warn" | "warning" => LogLevel::Warn,
                    "error" => LogLevel::Error,
                    "critical" => LogLevel::Critical,
                    other => return Err(format!("unknown log level {other:?}")),
                }
            }
            "--body-only" => args.body_only = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

fn number(s: &str) -> Result<usize, String> {
    s.parse::<usize>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or(format!("expected a positive number, got {s:?}"))
}

/// The configuration: a file's contents if the argument names a file, else the text itself.
fn config_text(arg: &str) -> Result<Vec<u8>, String> {
    let path = Path::new(arg);
    if !arg.trim_start().starts_with('{') && path.is_file() {
        std::fs::read(path).map_err(|e| format!("{arg}: {e}"))
    } else {
        Ok(arg.as_bytes().to_vec())
    }
}

fn print_headers(out: &mut impl Write, headers: &[(String, String)]) -> std::io::Result<()> {
    for (k, v) in headers {
        writeln!(out, "{k}: {v}")?;
    }
    Ok(())
}

fn run(args: Args) -> Result<ExitCode, String> {
    let wasm = args.wasm.clone().ok_or("--wasm is required")?;
    match args.command.as_str() {
        "imports" => {
            let module = host_shim::WasmModule::from_file(&wasm).map_err(|e| e.to_string())?;
            for import in module.imports() {
                println!("{import}");
            }
            if let Some(e) = module.link_error() {
                println!("cannot link against Envoy's host functions: {e}");
                return Ok(ExitCode::FAILURE);
            }
            Ok(ExitCode::SUCCESS)
        }
        "replay" => replay(args, &wasm),
        other => Err(format!("unknown command {other:?}")),
    }
}

fn replay(args: Args, wasm: &Path) -> Result<ExitCode, String> {
    let config = match &args.config {
        Some(c) => config_text(c)?,
        None => Vec::new(),
    };
    let mut options = VmOptions::new(config)
        .allow_on_headers_stop_iteration(args.allow_stop_iteration)
        .log_level(args.log_level)
        .strict(false);
    if let Some(ns) = &args.namespace {
        options = options.stream_property(&["xds", "cluster_name"], ns.as_bytes());
    }
    for (path, value) in &args.properties {
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        options = options.stream_property(&path, value.as_bytes());
    }
    let mut request = match &args.request_headers {
        Some(h) => wire::read_message(h, args.request_body.as_deref())?,
        None => {
            let body = match &args.request_body {
                Some(p) => std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?,
                None => Vec::new(),
            };
            HttpMessage::post("/mcp").body(body)
        }
    };
    if let Some(json) = &args.request_json {
        request = request.body(json.as_bytes().to_vec());
    }
    if let Some(n) = args.request_chunk {
        request = request.chunked(n);
    }
    let response_headers = args
        .response_headers
        .as_deref()
        .ok_or("--response-headers is required")?;
    let mut response = wire::read_message(response_headers, args.response_body.as_deref())?;
    if let Some(n) = args.chunk {
        response = response.chunked(n);
    }
    response = response.empty_final_chunk(args.empty_final_chunk);

    let host = Host::new();
    let mut vm = match Vm::load(&host, wasm, options) {
        Ok(vm) => vm,
        Err(e) => {
            eprintln!("{e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let result = vm.exchange(&request, &response);
    let mut out = std::io::stdout().lock();
    let io = |e: std::io::Error| e.to_string();
    let failed = match &result {
        Ok(x) => {
            if args.body_only {
                out.write_all(&x.client.body()).map_err(io)?;
                return Ok(ExitCode::SUCCESS);
            }
            let outcome = match x.outcome() {
                Outcome::Local { status, .. } => format!("answered by the filter ({status})"),
                Outcome::Upstream {
                    rewritten: true, ..
                } => "upstream response, rewritten".into(),
                Outcome::Upstream {
                    rewritten: false, ..
                } => "upstream response, unchanged".into(),
                Outcome::Stuck(why) => format!("stuck: {why}"),
                Outcome::Reset => "stream reset".into(),
            };
            writeln!(out, "== outcome: {outcome}").map_err(io)?;
            let upstream = if x.upstream.headers.is_none() {
                "nothing".to_string()
            } else {
                format!(
                    "{} {}, {} body bytes{}{}",
                    x.upstream.header(":method").unwrap_or("?"),
                    x.upstream.header(":path").unwrap_or("?"),
                    x.upstream.body().len(),
                    if x.upstream.end_of_stream {
                        ""
                    } else {
                        ", incomplete"
                    },
                    if x.upstream.reset { ", then reset" } else { "" },
                )
            };
            writeln!(out, "== the upstream received: {upstream}").map_err(io)?;
            writeln!(out, "== the client received:").map_err(io)?;
            print_headers(&mut out, x.client.headers.as_deref().unwrap_or_default()).map_err(io)?;
            writeln!(out).map_err(io)?;
            out.write_all(&x.client.body()).map_err(io)?;
            writeln!(out).map_err(io)?;
            false
        }
        Err(e) => {
            writeln!(out, "== error: {e}").map_err(io)?;
            true
        }
    };
    writeln!(out, "== stats").map_err(io)?;
    for (name, value) in host.metrics() {
        let v = match value {
            MetricValue::Counter(n) => n.to_string(),
            MetricValue::Gauge(n) => n.to_string(),
            MetricValue::Histogram { count, values } => format!("{count} values, first {values:?}"),
        };
        writeln!(out, "{name} = {v}").map_err(io)?;
    }
    writeln!(out, "== log").map_err(io)?;
    for line in vm.logs() {
        writeln!(out, "{line}").map_err(io)?;
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(argv) {
        Ok(a) => a,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("{e}\n");
            }
            eprint!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("host-shim: {e}");
            ExitCode::FAILURE
        }
    }
}
