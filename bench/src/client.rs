//! The bench's closed-loop load over the shared HTTP/1.1 client
//! (`mcp_tool_search_wasm_tests::http1`): keep-alive connections, each sending its next request
//! when the previous response is complete (`Conn::round_trip`, which reopens a kept-alive
//! connection the server closed once), every latency recorded; what a response must hold.

use mcp_tool_search_wasm_tests::http1::find;
pub use mcp_tool_search_wasm_tests::http1::{Conn, Request, Response};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

pub type Result<T> = std::result::Result<T, String>;

/// Latencies of one measurement (possibly pooled over rounds) and the wall time they took.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    pub latencies: Vec<Duration>,
    /// Wall time of the runs (for requests per second).
    pub elapsed: Duration,
    pub errors: u64,
    pub reconnects: u64,
    /// Response bytes of the last response seen.
    pub body_bytes: usize,
}

impl Samples {
    pub fn merge(&mut self, other: Samples) {
        self.latencies.extend(other.latencies);
        self.elapsed += other.elapsed;
        self.errors += other.errors;
        self.reconnects += other.reconnects;
        self.body_bytes = other.body_bytes.max(self.body_bytes);
    }

    pub fn count(&self) -> usize {
        self.latencies.len()
    }

    /// The `p`th percentile (0..=100), nearest rank.
    pub fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        percentile_of(&sorted, p)
    }

    pub fn p50(&self) -> Duration {
        self.percentile(50.0)
    }

    pub fn p99(&self) -> Duration {
        self.percentile(99.0)
    }

    pub fn rps(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.latencies.len() as f64 / secs
        } else {
            0.0
        }
    }
}

pub fn percentile_of(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    let i = rank.clamp(1, sorted.len()) - 1;
    sorted.get(i).copied().unwrap_or_default()
}

/// Checks one response: 200 and, when given, a body containing `expect`.
pub fn check(resp: &Response, expect: Option<&str>) -> Result<()> {
    if resp.status != 200 {
        return Err(format!(
            "status {}: {}",
            resp.status,
            String::from_utf8_lossy(
                resp.body
                    .get(..resp.body.len().min(300))
                    .unwrap_or_default()
            )
        ));
    }
    if let Some(want) = expect {
        if find(&resp.body, want.as_bytes()).is_none() {
            return Err(format!(
                "response lacks {want:?}: {}",
                String::from_utf8_lossy(
                    resp.body
                        .get(..resp.body.len().min(300))
                        .unwrap_or_default()
                )
            ));
        }
    }
    Ok(())
}

/// Closed loop over `conns` connections (one thread each) for `duration`, cycling through
/// `requests`; at least `min_requests` per connection. Every response must pass `check`
/// with `expect`.
pub fn run(
    addr: SocketAddr,
    requests: &[Request],
    conns: usize,
    duration: Duration,
    min_requests: usize,
    expect: Option<&str>,
) -> Result<Samples> {
    let start = Instant::now();
    let results: Vec<Result<Samples>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..conns.max(1))
            .map(|c| {
                scope.spawn(move || -> Result<Samples> {
                    let mut conn = Conn::open(addr).map_err(|e| e.to_string())?;
                    let mut samples = Samples::default();
                    let deadline = Instant::now() + duration;
                    let mut i = c;
                    while Instant::now() < deadline || samples.count() < min_requests {
                        let req = requests
                            .get(i % requests.len().max(1))
                            .ok_or("no requests")?;
                        i += 1;
                        let t = Instant::now();
                        let resp = conn.round_trip(req).map_err(|e| e.to_string())?;
                        samples.latencies.push(t.elapsed());
                        if check(&resp, expect).is_err() {
                            samples.errors += 1;
                        }
                        samples.body_bytes = resp.body.len();
                    }
                    samples.reconnects = conn.reconnects();
                    Ok(samples)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("load thread failed".to_owned()))
            })
            .collect()
    });
    let elapsed = start.elapsed();
    let mut all = Samples::default();
    for r in results {
        all.merge(r?);
    }
    all.elapsed = elapsed;
    Ok(all)
}
