//! Latency of the embedder on this machine: model load, one query, a batch of 64 tool
//! descriptions, in process and over HTTP; then a 121-tool catalog through the vector cache,
//! cold (every text new: the model runs) and warm (every text cached, as for the second and
//! later replicas of a mesh). `make bench-embedder` (release build).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_tool_search_embedder::model::DEFAULT_MODEL_DIR;
use mcp_tool_search_embedder::{
    router, serve, Cached, Embed, SentenceEncoder, Settings, VectorCache, DEFAULT_CACHE_ENTRIES,
};

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

/// Tools in the catalog of the cache measurement (the size of a large MCP server's list).
const CATALOG: usize = 121;
/// Cold runs are slow (seconds each): a few are enough for a median.
const COLD_RUNS: usize = 3;
const WARM_RUNS: usize = 50;

/// `CATALOG` distinct tool descriptions like [`descriptions`], tagged with `version` so that
/// each cold run embeds texts the cache has never seen.
fn catalog(version: usize) -> Vec<String> {
    let verbs = [
        "List",
        "Create",
        "Delete",
        "Search",
        "Update",
        "Fetch",
        "Summarize",
        "Export",
        "Archive",
        "Count",
        "Watch",
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
        "S3 objects under a prefix with their storage class and last modified date",
        "Confluence pages in a space edited by a given author this month",
        "Datadog monitors in alert state for a service, with their thresholds",
    ];
    let mut out = Vec::with_capacity(CATALOG);
    for verb in verbs {
        for thing in things {
            out.push(format!(
                "{verb} {thing}. Returns JSON (v{version}). Use this when the user asks about {thing}."
            ));
        }
    }
    out.truncate(CATALOG);
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
    http(addr, "POST", "/v1/embeddings", body).map(drop)
}

/// One request on a fresh connection; the body of a 200, else the whole answer as the error.
fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> Result<String, String> {
    let mut stream = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
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
    let response = String::from_utf8_lossy(&response).into_owned();
    match response.split_once("\r\n\r\n") {
        Some((head, body)) if head.starts_with("HTTP/1.1 200") => Ok(body.to_string()),
        _ => Err(response),
    }
}

/// The catalog as the filter sends it: requests of at most `max_batch` texts.
fn catalog_requests(version: usize, max_batch: usize) -> Vec<String> {
    catalog(version)
        .chunks(max_batch)
        .map(|texts| serde_json::json!({ "input": texts }).to_string())
        .collect()
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

    // The worker's path: the cache consulted, only misses sent to the model.
    let cached = Cached::new(
        encoder.clone(),
        Arc::new(VectorCache::new("all-MiniLM-L6-v2", DEFAULT_CACHE_ENTRIES)),
    );
    let mut version = 0;
    let mut catalog_tokens = 0;
    let cold = time(COLD_RUNS, || {
        version += 1;
        let texts = catalog(version);
        catalog_tokens = cached.embed(&texts).map_err(|e| e.to_string())?.tokens;
        Ok(())
    })?;
    let warm_texts = catalog(version);
    let warm = time(WARM_RUNS, || {
        let hit = cached.embed(&warm_texts).map_err(|e| e.to_string())?;
        // A warm run that reached the model would time inference, not the cache.
        if hit.tokens == 0 {
            Ok(())
        } else {
            Err("a warm run missed the cache".to_string())
        }
    })?;
    println!(
        "{CATALOG} texts, cold, in process:  {}   ({catalog_tokens} tokens)",
        cold.show()
    );
    println!("{CATALOG} texts, cached, in process: {}", warm.show());

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    // The same texts again and again: without a cache, or these lines would time lookups.
    let uncached = Server::start(
        &runtime,
        encoder.clone(),
        Settings {
            cache_entries: 0,
            ..Settings::default()
        },
    )?;
    let one = serde_json::json!({ "input": QUERY }).to_string();
    let many = serde_json::json!({ "input": batch }).to_string();
    println!(
        "1 text, over HTTP:      {}",
        time(50, || http_post(uncached.addr, &one))?.show()
    );
    println!(
        "64 texts, over HTTP:    {}",
        time(10, || http_post(uncached.addr, &many))?.show()
    );
    uncached.stop(&runtime);

    // The default settings, so the default cache. Requests of --max-batch texts like the
    // filter's; new texts per cold run, then the last cold run's texts again (what every later
    // replica sends).
    let settings = Settings::default();
    let max_batch = settings.max_batch;
    let server = Server::start(&runtime, encoder.clone(), settings)?;
    let addr = server.addr;
    let cold = time(COLD_RUNS, || {
        version += 1;
        catalog_requests(version, max_batch)
            .iter()
            .try_for_each(|body| http_post(addr, body))
    })?;
    let warm_requests = catalog_requests(version, max_batch);
    let warm = time(WARM_RUNS, || {
        warm_requests
            .iter()
            .try_for_each(|body| http_post(addr, body))
    })?;
    println!(
        "{CATALOG} texts, cold, over HTTP:  {}   ({} requests)",
        cold.show(),
        warm_requests.len()
    );
    println!("{CATALOG} texts, cached, over HTTP: {}", warm.show());
    let health: serde_json::Value = serde_json::from_str(&http(addr, "GET", "/health", "")?)
        .map_err(|e| format!("/health is not JSON: {e}"))?;
    println!(
        "server cache after the runs: {}",
        health.get("cache").unwrap_or(&serde_json::Value::Null)
    );
    server.stop(&runtime);
    Ok(())
}

/// The sidecar's router on a loopback port of `runtime`.
struct Server {
    addr: SocketAddr,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Server {
    fn start(
        runtime: &tokio::runtime::Runtime,
        encoder: Arc<SentenceEncoder>,
        settings: Settings,
    ) -> Result<Self, String> {
        let app = router(encoder, settings).map_err(|e| e.to_string())?;
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .map_err(|e| e.to_string())?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = runtime.spawn(serve(listener, app, async {
            let _ = stopped.await;
        }));
        Ok(Self { addr, stop, task })
    }

    fn stop(self, runtime: &tokio::runtime::Runtime) {
        let _ = self.stop.send(());
        let _ = runtime.block_on(self.task);
    }
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
