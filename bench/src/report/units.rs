//! How the report writes figures: sizes, counts, ratios, latencies and verdicts.

use crate::client::Samples;
use mcp_tool_search_bench::ms;
use std::time::Duration;

pub fn ratio(a: Duration, b: Duration) -> f64 {
    let b = b.as_secs_f64();
    if b > 0.0 {
        a.as_secs_f64() / b
    } else {
        f64::NAN
    }
}

pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / 1048576.0)
}

pub fn bytes(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MB", n as f64 / 1e6)
    } else if n >= 1024 {
        format!("{:.1} kB", n as f64 / 1e3)
    } else {
        format!("{n} B")
    }
}

pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Seconds as an added latency: `+1.23 ms`, `−45 µs`.
pub fn signed_ms(secs: f64) -> String {
    if !secs.is_finite() {
        "n/a".to_owned()
    } else if secs >= 0.0 {
        format!("+{}", ms(Duration::from_secs_f64(secs)))
    } else {
        format!("−{}", ms(Duration::from_secs_f64(-secs)))
    }
}

pub fn median(v: &[Duration]) -> Duration {
    let mut sorted = v.to_vec();
    sorted.sort_unstable();
    crate::client::percentile_of(&sorted, 50.0)
}

pub fn lat(s: &Samples) -> String {
    format!("{} / {}", ms(s.p50()), ms(s.p99()))
}

pub fn mark(ok: bool) -> &'static str {
    if ok {
        "**met**"
    } else {
        "**missed**"
    }
}
