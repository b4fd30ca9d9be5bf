//! `--code-mode` (and a full run given `--code-wasm`): code mode in a one-worker Envoy in front of
//! the 300-tool catalog server (rmcp, JSON). Listener `filtered` runs code mode's module
//! (`mode: "code"`), `baseline` the search module (`tool_search`), both holding request headers.
//! Measures a script's start-up (`return 1`), a script that makes three calls against the same
//! three calls sent by the client, and the bytes the agent reads for one three-step task both
//! ways. Writes the section `## Code mode` of BENCHMARKS.md.

use crate::args::Args;
use crate::client::{self, Request};
use crate::log;
use mcp_tool_search_bench::{envoy, ms};
use mcp_tool_search_wasm_tests::envoy_config::{Bootstrap, HttpFilter, Route};
use mcp_tool_search_wasm_tests::harness::{catalog_300, TestDir};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

pub const HEADING: &str = "## Code mode";

/// Measured requests per figure (after as many unmeasured ones).
const SAMPLES: usize = 300;

/// The three calls of the task, with their arguments (tools of the 300-tool catalog).
const CALLS: [(&str, &str); 3] = [
    (
        "github_get_issue",
        r#"{"owner":"acme","repo":"shop","issue_number":42}"#,
    ),
    (
        "slack_post_message",
        r#"{"channel":"ops","text":"issue 42 triaged"}"#,
    ),
    ("gcal_list_events", r#"{"calendar_id":"primary"}"#),
];

/// The task's searches, in the words an agent would use.
const QUERIES: [&str; 3] = [
    "get a github issue",
    "post a message to a slack channel",
    "list google calendar events",
];

/// The task as one script: three searches, three calls, one combined answer.
const TASK_SCRIPT: &str = r#"const find = (q) => catalog.tools.search({query: q, limit: 1})[0].name;
const issue = find("get a github issue"), message = find("post a message to a slack channel"),
      events = find("list google calendar events");
const i = await tools.call(issue, {owner: "acme", repo: "shop", issue_number: 42});
const m = await tools.call(message, {channel: "ops", text: "issue 42 triaged"});
const e = await tools.call(events, {calendar_id: "primary"});
const ok = (r) => JSON.parse(r.content[0].text).ok;
return {called: [issue, message, events], allOk: [i, m, e].every(ok)};"#;

/// The three calls alone, in sequence, in a script.
const CALLS_SCRIPT: &str = r#"await tools.github_get_issue({owner: "acme", repo: "shop", issue_number: 42});
await tools.slack_post_message({channel: "ops", text: "issue 42 triaged"});
await tools.gcal_list_events({calendar_id: "primary"});
return 1;"#;

/// The `section`: `## Code mode` of `doc` (up to the next `## `), preceded by a blank line.
pub fn section(doc: &str) -> String {
    mcp_tool_search_bench::markdown_section(doc, HEADING)
}

/// A POST as an MCP client (protocol 2025-11-25) sends it.
fn post(addr: SocketAddr, body: &Value) -> Request {
    Request::post_json(&addr.to_string(), "/mcp", &body.to_string())
}

fn tool_call(id: u64, name: &str, arguments: &str) -> Value {
    let arguments: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

fn script(id: u64, text: &str) -> Value {
    tool_call(id, "run_script", &json!({ "script": text }).to_string())
}

/// One round trip; the response body, which must be a JSON-RPC result that is not an error.
fn round_trip(conn: &mut client::Conn, req: &Request) -> Result<Vec<u8>, String> {
    let resp = conn.round_trip(req).map_err(|e| e.to_string())?;
    let body: Value = serde_json::from_slice(&resp.body)
        .map_err(|e| format!("{e}: {}", String::from_utf8_lossy(&resp.body)))?;
    let result = body.get("result").filter(|r| !r.is_null());
    if result.is_none_or(|r| r.get("isError") == Some(&Value::Bool(true))) {
        return Err(format!("not a result: {body}"));
    }
    Ok(resp.body)
}

/// Rounds of every measurement in turn: a slower stretch of a shared machine then falls on all
/// of them alike instead of on whichever ran during it.
const ROUNDS: usize = 6;

/// The medians of `SAMPLES` timings of each of `runs` (after as many unmeasured runs of each),
/// taken in `ROUNDS` interleaved rounds.
fn medians<const N: usize>(
    runs: &mut [&mut dyn FnMut() -> Result<(), String>; N],
) -> Result<[Duration; N], String> {
    for run in runs.iter_mut() {
        for _ in 0..SAMPLES {
            run()?;
        }
    }
    let mut times: Vec<Vec<Duration>> = (0..N).map(|_| Vec::with_capacity(SAMPLES)).collect();
    for _ in 0..ROUNDS {
        for (run, times) in runs.iter_mut().zip(times.iter_mut()) {
            for _ in 0..SAMPLES / ROUNDS {
                let t = Instant::now();
                run()?;
                times.push(t.elapsed());
            }
        }
    }
    let mut out = [Duration::ZERO; N];
    for (slot, mut t) in out.iter_mut().zip(times) {
        t.sort_unstable();
        *slot = client::percentile_of(&t, 0.5);
    }
    Ok(out)
}

struct Figures {
    startup: Duration,
    script_calls: Duration,
    client_calls: Duration,
    one_call: Duration,
    /// Bytes of the answers the agent reads, code mode then the `tool_search` flow:
    /// (the list, the rest of the task).
    code_bytes: (usize, usize),
    search_bytes: (usize, usize),
}

pub fn run(args: &Args, dir: &TestDir) -> Result<String, String> {
    let started = Instant::now();
    let envoy_bin = args.envoy.clone().ok_or("--envoy is required")?;
    let server_bin = args
        .catalog_server
        .clone()
        .ok_or("--catalog-server is required")?;
    let code_wasm = args.code_wasm.clone().ok_or("--code-wasm is required")?;
    let canonical =
        |p: &std::path::Path| std::fs::canonicalize(p).map_err(|e| format!("{}: {e}", p.display()));
    let (code_wasm, wasm) = (canonical(&code_wasm)?, canonical(&args.wasm)?);
    let server = envoy::CatalogServer::start(&server_bin, &catalog_300(), true, dir.path())?;
    let route = || {
        vec![Route::path("/mcp")
            .to_cluster("catalog")
            .route_option("timeout", "0s")]
    };
    let code_config = r#"{"mode":"code","hold_request_headers":true}"#;
    let search_config = r#"{"hold_request_headers":true}"#;
    let yaml = Bootstrap::new()
        .listener(envoy::http_listener(
            "filtered",
            route(),
            vec![
                envoy::wasm_filter(&code_wasm, code_config),
                HttpFilter::router(),
            ],
        ))
        .listener(envoy::http_listener(
            "baseline",
            route(),
            vec![
                envoy::wasm_filter(&wasm, search_config),
                HttpFilter::router(),
            ],
        ))
        .cluster(envoy::cluster("catalog", server.addr))
        .to_yaml();
    log("code mode: starting Envoy (--concurrency 1) with both modules before the 300-tool server");
    let mut envoy = envoy::Envoy::start(&envoy_bin, dir.path(), &yaml)?;
    // As the other sections: idle vCPUs kept awake (see `Spinners`).
    let spinners = (!args.no_spin).then(|| {
        crate::spinners::Spinners::start(
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
        )
    });
    let result = measure(envoy.filtered, envoy.baseline);
    if let Some(s) = spinners {
        s.stop();
    }
    if !envoy.running() {
        return Err(format!(
            "Envoy exited during the run:\n{}",
            envoy.log_tail()
        ));
    }
    envoy.stop();
    drop(server);
    Ok(render(&result?, started.elapsed()))
}

fn measure(code: SocketAddr, search: SocketAddr) -> Result<Figures, String> {
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let mut conn = client::Conn::open(code).map_err(|e| e.to_string())?;
    let code_list = round_trip(&mut conn, &post(code, &list))?.len();
    let task = round_trip(&mut conn, &post(code, &script(2, TASK_SCRIPT)))?;
    let answer: Value = serde_json::from_slice(&task).map_err(|e| e.to_string())?;
    let text = answer
        .pointer("/result/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !text.contains("\"allOk\":true") {
        return Err(format!("the task script did not do the task: {answer}"));
    }
    let code_bytes = (code_list, task.len());

    log("code mode: a script's start-up, three calls in a script and from the client");
    let conn = std::cell::RefCell::new(conn);
    let send = |body: &Value| round_trip(&mut conn.borrow_mut(), &post(code, body)).map(drop);
    let [(name, args), ..] = CALLS;
    let [startup, script_calls, client_calls, one_call] = medians(&mut [
        &mut || send(&script(3, "return 1")),
        &mut || send(&script(4, CALLS_SCRIPT)),
        &mut || {
            for (i, (name, args)) in CALLS.iter().enumerate() {
                send(&tool_call(5 + i as u64, name, args))?;
            }
            Ok(())
        },
        &mut || send(&tool_call(8, name, args)),
    ])?;

    // The same task the way a search-mode agent does it: list, search three times, call the
    // first result of each.
    let mut conn = client::Conn::open(search).map_err(|e| e.to_string())?;
    let search_list = round_trip(&mut conn, &post(search, &list))?.len();
    let mut rest = 0;
    for (i, (query, (name, args))) in QUERIES.iter().zip(CALLS).enumerate() {
        let search_call = tool_call(
            10 + i as u64,
            "tool_search",
            &json!({ "query": query }).to_string(),
        );
        let found = round_trip(&mut conn, &post(search, &search_call))?;
        let found_text: Value = serde_json::from_slice(&found).map_err(|e| e.to_string())?;
        let first = found_text
            .pointer("/result/content/0/text")
            .and_then(Value::as_str)
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .and_then(|defs| defs.pointer("/0/name")?.as_str().map(str::to_owned));
        if first.as_deref() != Some(name) {
            return Err(format!(
                "tool_search {query:?} did not find {name} first: {found_text}"
            ));
        }
        rest += found.len();
        rest += round_trip(
            &mut conn,
            &post(search, &tool_call(20 + i as u64, name, args)),
        )?
        .len();
    }
    Ok(Figures {
        startup,
        script_calls,
        client_calls,
        one_call,
        code_bytes,
        search_bytes: (search_list, rest),
    })
}

fn render(f: &Figures, elapsed: Duration) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{HEADING}\n");
    let _ = writeln!(
        out,
        "Code mode's module (`mcp_tool_search_code.wasm`, `mode: \"code\"`) and the search module \
         side by side in one Envoy (V8, one worker, `hold_request_headers`), in front of the \
         300-tool catalog server (rmcp, JSON, loopback); one HTTP/1.1 keep-alive client; each \
         latency the median of {SAMPLES} requests after {SAMPLES} unmeasured, the four taken in {ROUNDS} interleaved rounds, idle vCPUs kept awake as in the other sections. Section measured in \
         {:.0} s by `make bench-code` (a full `make bench` measures it too).\n",
        elapsed.as_secs_f64()
    );
    let _ = writeln!(out, "| | p50 |\n|---|---|");
    let _ = writeln!(
        out,
        "| `run_script` of `return 1` (a script's start-up: a QuickJS runtime and context, the API, the answer) | {} |",
        ms(f.startup)
    );
    let _ = writeln!(
        out,
        "| one upstream `tools/call` sent by the client through the code-mode module | {} |",
        ms(f.one_call)
    );
    let _ = writeln!(
        out,
        "| the three calls sent by the client, one after another | {} |",
        ms(f.client_calls)
    );
    let _ = writeln!(
        out,
        "| `run_script` making the same three calls, one after another | {} |",
        ms(f.script_calls)
    );
    let over = f.script_calls.as_secs_f64() - f.client_calls.as_secs_f64();
    let _ = writeln!(
        out,
        "\nA script making three calls takes {:+.2} ms against the client making them itself \
         (the script's calls leave from Envoy: no client round trip each, but a start-up and \
         one `dispatch_http_call` each).\n",
        over * 1e3
    );
    let (cl, cr) = f.code_bytes;
    let (sl, sr) = f.search_bytes;
    let _ = writeln!(
        out,
        "What the agent reads for one three-step task (find a GitHub issue tool, a Slack tool and \
         a calendar tool, call each, combine), as response bytes (tokens ≈ bytes / 4):\n"
    );
    let _ = writeln!(
        out,
        "| flow | `tools/list` | the rest of the task | total |\n|---|---|---|---|"
    );
    let _ = writeln!(
        out,
        "| `tool_search` (search module): list, three searches (default `limit`, full definitions), three calls | {sl} B | {sr} B | {} B |",
        sl + sr
    );
    let _ = writeln!(
        out,
        "| code mode: list, one `run_script` (`TASK_SCRIPT` in `bench/src/code_mode.rs`) | {cl} B | {cr} B | {} B |",
        cl + cr
    );
    let _ = writeln!(
        out,
        "\nCode mode's total is {:.1}% of the `tool_search` flow's; the script's own text (sent, \
         not read) is {} B.",
        100.0 * (cl + cr) as f64 / (sl + sr).max(1) as f64,
        TASK_SCRIPT.len()
    );
    out
}
