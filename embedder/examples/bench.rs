//! Latency of the embedder on this machine: model load, one query, a batch of 64 tool
//! descriptions, in process and over HTTP. `make bench-embedder` (release build).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_tool_search_embedder::model::DEFAULT_MODEL_DIR;
use mcp_tool_search_embedder::{router, serve, Embed, SentenceEncoder, Settings};

const QUERY: &str = "find a tool that lists open pull requests in a repository";

/// 64 tool descriptions of the length MCP servers ship (about 20 to 60 tokens).
fn descriptions() -> Vec<String> {
    let verbs = [
        "List",
        "Create",
        "Delete",
        "Search",
        "Update",
        "Fetch",
        "Summarize",
        "Export",
    ];
    let things = [
        "issues in a GitHub repository, filtered by label, assignee and state",
        "calendar events for a user between two dates, including recurring events",
        "rows of a Postgres table matching a SQL where clause, with pagination",
        "files in a Google Drive folder, returning names, sizes and modification times",
        "Slack messages in a channel since a timestamp, with thread replies",
        "Jira tickets assigned to the current sprint, grouped by status",
        "Kubernetes pods in a namespace with their restart counts and readiness",
        "invoices from Stripe for a customer, newest first, with amounts and status",
    ];
    let mut out = Vec::new();
    for verb in verbs {
        for thing in things {
            out.push(format!(
                "{verb} {thing}. Returns JSON. Use this when the user asks about {thing}."
            ));
        }
    }
    out
}

fn stats(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples.get(i).copied().map_or(0.0, ms)
    };
    format!(
        "median {:8.2} ms   p90 {:8.2} ms   min {:8.2} ms   (n={})",
        at(0.5),
        at(0.9),
        at(0.0),
        samples.len()
    )
}

/// CPU time (user + system) of this process so far, from /proc (Linux); None elsewhere.
/// On a machine shared with other work, CPU time per call is what the call would take alone
/// on one core; wall time includes waiting for a core.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesized command name; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    // Linux reports clock ticks of 1/100 s (USER_HZ) on every mainstream architecture.
    Some(Duration::from_millis((utime + stime) * 10))
}

struct Timing {
    wall: Vec<Duration>,
    cpu_per_run: Option<Duration>,
}

impl Timing {
    fn show(self) -> String {
        let cpu = self.cpu_per_run.map_or_else(String::new, |d| {
            format!("   cpu/run {:8.2} ms", d.as_secs_f64() * 1000.0)
        });
        format!("{}{cpu}", stats(self.wall))
    }
}

fn time<F: FnMut() -> Result<(), String>>(runs: usize, mut f: F) -> Result<Timing, String> {
    let mut wall = Vec::with_capacity(runs);
    let cpu_start = cpu_time();
    for _ in 0..runs {
        let start = Instant::now();
        f()?;
        wall.push(start.elapsed());
    }
    let cpu_per_run = match (cpu_start, cpu_time()) {
        (Some(a), Some(b)) => u32::try_from(runs)
            .ok()
            .filter(|&n| n > 0)
            .map(|n| b.saturating_sub(a) / n),
        _ => None,
    };
    Ok(Timing { wall, cpu_per_run })
}

fn http_post(addr: SocketAddr, body: &str) -> Result<(), String> {
    let mut stream = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    let request = format!(
        "POST /v1/embeddings HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .map_err(|e| e.to_string())?;
    if response.starts_with(b"HTTP/1.1 200") {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&response).into_owned())
    }
}

fn run() -> Result<(), String> {
    let dir = std::env::args()
        .nth(1)
        .map_or_else(|| PathBuf::from(DEFAULT_MODEL_DIR), PathBuf::from);
    let (encoder, load) = SentenceEncoder::load_timed(&dir).map_err(|e| e.to_string())?;
    let encoder = Arc::new(encoder);
    println!(
        "cores: {}   inference threads (RAYON_NUM_THREADS): {}   model load: {:.0} ms",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "all".to_string()),
        load.as_secs_f64() * 1000.0
    );

    let query = vec![QUERY.to_string()];
    let batch = descriptions();
    let embed = |texts: &[String]| encoder.embed(texts).map(|_| ()).map_err(|e| e.to_string());
    let first = time(1, || embed(&query))?;
    println!("first call (cold):      {}", stats(first.wall));
    println!(
        "1 text, in process:     {}",
        time(50, || embed(&query))?.show()
    );
    let batch_tokens = encoder.embed(&batch).map_err(|e| e.to_string())?.tokens;
    println!(
        "64 texts, in process:   {}   ({batch_tokens} tokens)",
        time(10, || embed(&batch))?.show()
    );

    let app = router(encoder.clone(), Settings::default()).map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = runtime.spawn(serve(listener, app, async {
        let _ = stopped.await;
    }));
    let one = serde_json::json!({ "input": QUERY }).to_string();
    let many = serde_json::json!({ "input": batch }).to_string();
    println!(
        "1 text, over HTTP:      {}",
        time(50, || http_post(addr, &one))?.show()
    );
    println!(
        "64 texts, over HTTP:    {}",
        time(10, || http_post(addr, &many))?.show()
    );
    let _ = stop.send(());
    let _ = runtime.block_on(server);
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}
