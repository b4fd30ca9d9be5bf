//! The soak's verdict and report: causes of errors, latencies, fallbacks, memory over time.

use crate::load::{Kind, Outcome, Record, UPSTREAM_GRACE};
use crate::{Args, Event, Sample, What, NAMESPACES, STOPPED};
use mcp_tool_search_bench::ms;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

pub struct Inputs<'a> {
    pub args: &'a Args,
    /// `/proc/loadavg` (1, 5, 15 min) when the load started.
    pub load_start: String,
    pub t0: Instant,
    pub elapsed: Duration,
    pub warm_up: String,
    pub records: &'a [Record],
    pub events: &'a [Event],
    pub samples: &'a [Sample],
    pub stats_before: &'a [(String, u64)],
    pub stats_after: &'a [(String, u64)],
    pub vm_stats_before: &'a [(String, u64)],
    pub vm_stats_after: &'a [(String, u64)],
    pub envoy_log: &'a str,
    pub envoy_alive: bool,
    pub list_changed_seen: Vec<u64>,
    pub watch_streams: Vec<u64>,
    pub served: usize,
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// The fault injected explains it (the text says which).
    Expected(&'static str),
    /// Nothing injected explains it: the filter (or Envoy with it) is to blame.
    Filter,
}

impl Cause {
    fn label(&self) -> String {
        match self {
            Cause::Expected(why) => format!("expected: {why}"),
            Cause::Filter => "**filter-caused**".to_owned(),
        }
    }
}

/// The windows in which `upstream` was down: (stopped, started again or `None`).
fn down_windows(events: &[Event], upstream: usize) -> Vec<(Instant, Option<Instant>)> {
    let mut out: Vec<(Instant, Option<Instant>)> = Vec::new();
    for e in events {
        match e.what {
            What::UpstreamDown(u) if u == upstream => out.push((e.at, None)),
            What::UpstreamUp(u) if u == upstream => {
                if let Some(last) = out.last_mut() {
                    if last.1.is_none() {
                        last.1 = Some(e.at);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Assigns a cause: only requests that go to an upstream can be failed by the upstream's stop,
/// and only while it is down (plus [`UPSTREAM_GRACE`] after it is back) or, after it is back,
/// by the upstream no longer knowing a session opened before its restart (404). Searches are
/// answered by the filter from its catalog whatever the upstream and the sidecar do, so any
/// failed search is the filter's; so is anything else nothing injected explains.
pub fn classify(r: &Record, events: &[Event]) -> Option<Cause> {
    let Outcome::Failed { status, .. } = &r.outcome else {
        return None;
    };
    if r.kind.upstream_bound() && r.upstream == STOPPED {
        for (down, up) in down_windows(events, r.upstream) {
            let until = up.map(|u| u + UPSTREAM_GRACE);
            let overlaps = r.end >= down && until.is_none_or(|u| r.start <= u);
            if overlaps {
                return Some(Cause::Expected("the upstream was stopped"));
            }
        }
        let restarted_since = |opened: Instant| {
            events
                .iter()
                .any(|e| matches!(e.what, What::UpstreamUp(u) if u == r.upstream) && e.at > opened)
        };
        if *status == Some(404) && r.session_opened.is_some_and(restarted_since) {
            return Some(Cause::Expected(
                "session lost: the upstream was restarted since it was opened",
            ));
        }
    }
    Some(Cause::Filter)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted
        .get(rank.clamp(1, sorted.len()) - 1)
        .copied()
        .unwrap_or_default()
}

fn mib_kb(kb: u64) -> String {
    format!("{:.1} MiB", kb as f64 / 1024.0)
}

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn stat_delta(before: &[(String, u64)], after: &[(String, u64)]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (name, v) in after {
        let b = before
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0, |(_, v)| *v);
        out.insert(name.clone(), v.saturating_sub(b));
    }
    out
}

/// Lines of Envoy's log that show the Wasm VM failing: a Rust panic (the filter is built with
/// `panic = "abort"`, so a panic is a trap), a V8 runtime error or trap, a failed callback.
fn trap_lines(log: &str) -> Vec<&str> {
    const SIGNS: [&str; 5] = [
        "panicked",
        "runtimeerror",
        "uncaught",
        "wasm trap",
        "failed to load wasm",
    ];
    log.lines()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            SIGNS.iter().any(|s| l.contains(s))
                || (l.contains("[wasm]") && l.contains("function:") && l.contains("failed"))
        })
        .collect()
}

pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|t| t.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// How long after the sidecar is back the ranking is still counted as recovering.
const RECOVERY: Duration = Duration::from_secs(30);

/// The sidecar's down windows: (killed, restarted or `None`).
fn embedder_windows(events: &[Event]) -> Vec<(Instant, Option<Instant>)> {
    let mut out: Vec<(Instant, Option<Instant>)> = Vec::new();
    for e in events {
        match e.what {
            What::EmbedderDown => out.push((e.at, None)),
            What::EmbedderUp => {
                if let Some(last) = out.last_mut() {
                    if last.1.is_none() {
                        last.1 = Some(e.at);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Search answers by the sidecar's state when they were asked, and how long after each restart
/// the first hybrid answer came: the fallback is by design, its length is what operators see.
fn ranking_by_phase(inp: &Inputs) -> String {
    let windows = embedder_windows(inp.events);
    let phase = |at: Instant| -> &'static str {
        for (down, up) in &windows {
            if at >= *down && up.is_none_or(|u| at < u) {
                return "sidecar down";
            }
            if up.is_some_and(|u| at >= u && at < u + RECOVERY) {
                return "first 30 s after its restart";
            }
        }
        "sidecar up"
    };
    let mut table: BTreeMap<&'static str, BTreeMap<String, u64>> = BTreeMap::new();
    for r in inp.records {
        if let Outcome::Ok {
            strategy: Some(s), ..
        } = &r.outcome
        {
            *table
                .entry(phase(r.start))
                .or_default()
                .entry(s.clone())
                .or_default() += 1;
        }
    }
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\n### Search ranking by the sidecar's state\n\n| sidecar | answers | hybrid | BM25 fallbacks by kind |\n|---|---:|---:|---|"
    );
    for state in ["sidecar up", "sidecar down", "first 30 s after its restart"] {
        let Some(counts) = table.get(state) else {
            continue;
        };
        let total: u64 = counts.values().sum();
        let hybrid = counts.get("hybrid").copied().unwrap_or(0);
        let fallbacks: Vec<String> = counts
            .iter()
            .filter(|(k, _)| k.as_str() != "hybrid")
            .map(|(k, v)| {
                format!(
                    "{} {v}",
                    k.trim_start_matches("bm25 (fallback: ")
                        .trim_end_matches(')')
                )
            })
            .collect();
        let _ = writeln!(
            o,
            "| {state} | {total} | {hybrid} ({:.0}%) | {} |",
            100.0 * hybrid as f64 / total.max(1) as f64,
            fallbacks.join(", ")
        );
    }
    let recoveries: Vec<String> = windows
        .iter()
        .filter_map(|(_, up)| *up)
        .map(|up| {
            let first = inp
                .records
                .iter()
                .filter(|r| r.start >= up)
                .filter(
                    |r| matches!(&r.outcome, Outcome::Ok { strategy: Some(s) } if s == "hybrid"),
                )
                .map(|r| r.start)
                .min();
            match first {
                Some(t) => format!("{:.1} s", t.duration_since(up).as_secs_f64()),
                None => "never (before the end)".to_owned(),
            }
        })
        .collect();
    if !recoveries.is_empty() {
        let _ = writeln!(
            o,
            "\nFirst hybrid answer after each restart of the sidecar (it is ready when it prints `listening on`; the filter's circuit then waits for its next probe): {}.",
            recoveries.join(", ")
        );
    }
    o
}

/// One memory series over time: Envoy's RSS (kB) or a VM's linear memory (bytes).
struct Series {
    name: String,
    unit_kb: bool,
    points: Vec<(Duration, u64)>,
}

impl Series {
    fn fmt(&self, v: u64) -> String {
        if self.unit_kb {
            mib_kb(v)
        } else {
            mib(v)
        }
    }

    fn at_or_after(&self, t: Duration) -> Option<u64> {
        self.points
            .iter()
            .find(|(at, _)| *at >= t)
            .or(self.points.last())
            .map(|(_, v)| *v)
    }

    fn median_in(&self, from: Duration, to: Duration) -> Option<u64> {
        let mut v: Vec<u64> = self
            .points
            .iter()
            .filter(|(t, _)| *t >= from && *t <= to)
            .map(|(_, v)| *v)
            .collect();
        v.sort_unstable();
        v.get(v.len() / 2).copied()
    }

    /// Growth over the second half: the median of the last tenth of the run against the
    /// median of the tenth that starts at the middle (medians, so that one sample taken while
    /// a list was held does not decide); each window holds at least two samples.
    fn growth(&self, total: Duration, sample: Duration) -> Option<(u64, u64, f64)> {
        let half = total / 2;
        let tenth = (total / 10).max(sample * 2);
        let mid = self.median_in(half, half + tenth)?;
        let end = self.median_in(total.saturating_sub(tenth), total)?;
        let growth = if mid == 0 {
            0.0
        } else {
            end as f64 / mid as f64 - 1.0
        };
        Some((mid, end, growth))
    }
}

fn series(samples: &[Sample]) -> Vec<Series> {
    let mut out = vec![Series {
        name: "Envoy RSS".to_owned(),
        unit_kb: true,
        points: samples
            .iter()
            .filter_map(|s| s.rss_kb.map(|v| (s.at, v)))
            .collect(),
    }];
    let mut addresses: Vec<u64> = samples
        .iter()
        .flat_map(|s| s.vms.iter().map(|(a, _)| *a))
        .collect();
    addresses.sort_unstable();
    addresses.dedup();
    for (i, addr) in addresses.iter().enumerate() {
        out.push(Series {
            name: format!("VM {} (linear memory at {addr:#x})", i + 1),
            unit_kb: false,
            points: samples
                .iter()
                .filter_map(|s| {
                    s.vms
                        .iter()
                        .find(|(a, _)| a == addr)
                        .map(|(_, v)| (s.at, *v))
                })
                .collect(),
        });
    }
    out
}

/// The flatness limit over the second half.
const MAX_GROWTH: f64 = 0.05;

fn csv(samples: &[Sample], series: &[Series]) -> String {
    let mut out = String::from("seconds,envoy_rss_kib");
    for i in 1..series.len() {
        let _ = write!(out, ",vm{i}_kib");
    }
    out.push('\n');
    for s in samples {
        let _ = write!(out, "{:.1},{}", s.at.as_secs_f64(), s.rss_kb.unwrap_or(0));
        for ser in series.iter().skip(1) {
            let v = ser
                .points
                .iter()
                .find(|(t, _)| *t == s.at)
                .map_or(String::new(), |(_, v)| (v / 1024).to_string());
            let _ = write!(out, ",{v}");
        }
        out.push('\n');
    }
    out
}

/// A small chart of memory over time (no plotting library is available offline, and SVG is
/// text): Envoy's RSS above, each VM's linear memory below (scales a hundredfold apart), the
/// sidecar's and the upstream's down windows shaded.
fn svg(series: &[Series], total: Duration, inp: &Inputs) -> String {
    const W: f64 = 760.0;
    const PANEL: f64 = 200.0;
    const L: f64 = 60.0;
    const R: f64 = 170.0;
    const T: f64 = 24.0;
    const GAP: f64 = 48.0;
    let height = T + PANEL + GAP + PANEL + 36.0;
    let secs = total.as_secs_f64().max(1.0);
    let x = |t: f64| L + (W - L - R) * t / secs;
    let rel = |i: Instant| i.saturating_duration_since(inp.t0).as_secs_f64();
    let mut windows: Vec<(f64, f64, &str)> = Vec::new();
    let mut embedder_down: Option<f64> = None;
    let mut upstream_down: Option<f64> = None;
    for e in inp.events {
        match e.what {
            What::EmbedderDown => embedder_down = Some(rel(e.at)),
            What::EmbedderUp => {
                if let Some(d) = embedder_down.take() {
                    windows.push((d, rel(e.at), "#f4a261"));
                }
            }
            What::UpstreamDown(_) => upstream_down = Some(rel(e.at)),
            What::UpstreamUp(_) => {
                if let Some(d) = upstream_down.take() {
                    windows.push((d, rel(e.at), "#90be6d"));
                }
            }
            _ => {}
        }
    }
    let mut o = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" font-family="sans-serif" font-size="11">
<rect width="{W}" height="{height}" fill="white"/>
"#
    );
    const COLORS: [&str; 6] = [
        "#1d3557", "#e63946", "#457b9d", "#2a9d8f", "#8338ec", "#fb8500",
    ];
    let panels: [(&str, Vec<&Series>); 2] = [
        (
            "Envoy RSS (MiB)",
            series.iter().filter(|s| s.unit_kb).collect(),
        ),
        (
            "Wasm VM linear memory (MiB)",
            series.iter().filter(|s| !s.unit_kb).collect(),
        ),
    ];
    let mut color_index = 0;
    for (p, (title, members)) in panels.iter().enumerate() {
        let top = T + p as f64 * (PANEL + GAP);
        let mib_of = |s: &Series, v: u64| {
            if s.unit_kb {
                v as f64 / 1024.0
            } else {
                v as f64 / 1048576.0
            }
        };
        let values = || {
            members
                .iter()
                .flat_map(|s| s.points.iter().map(|(_, v)| mib_of(s, *v)))
        };
        // From just under the lowest value: the point is the shape over time.
        let hi = values().fold(0.0_f64, f64::max) * 1.05 + 0.01;
        let lo = (values().fold(f64::INFINITY, f64::min) * 0.95)
            .min(hi - 0.01)
            .max(0.0);
        let y = |m: f64| top + PANEL * (1.0 - (m - lo) / (hi - lo));
        for (from, to, color) in &windows {
            let _ = writeln!(
                o,
                r#"<rect x="{:.1}" y="{top:.1}" width="{:.1}" height="{PANEL}" fill="{color}" opacity="0.3"/>"#,
                x(*from),
                (x(to.min(secs)) - x(*from)).max(1.0),
            );
        }
        let _ = writeln!(
            o,
            r#"<text x="{L}" y="{:.1}" font-weight="bold">{title}</text>"#,
            top - 8.0
        );
        let _ = writeln!(
            o,
            r#"<line x1="{L}" y1="{b:.1}" x2="{:.1}" y2="{b:.1}" stroke="black"/><line x1="{L}" y1="{top:.1}" x2="{L}" y2="{b:.1}" stroke="black"/>"#,
            W - R,
            b = top + PANEL
        );
        for k in 0..=4 {
            let m = lo + (hi - lo) * k as f64 / 4.0;
            let _ = writeln!(
                o,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{m:.1}</text>"#,
                L - 4.0,
                y(m) + 4.0
            );
            let t = secs * k as f64 / 4.0;
            let _ = writeln!(
                o,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{t:.0} s</text>"#,
                x(t),
                top + PANEL + 14.0
            );
        }
        for (i, s) in members.iter().enumerate() {
            let color = COLORS
                .get(color_index % COLORS.len())
                .copied()
                .unwrap_or("black");
            color_index += 1;
            let points: Vec<String> = s
                .points
                .iter()
                .map(|(t, v)| format!("{:.1},{:.1}", x(t.as_secs_f64()), y(mib_of(s, *v))))
                .collect();
            let _ = writeln!(
                o,
                r#"<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{}"/>"#,
                points.join(" ")
            );
            let label = s.name.split(" (").next().unwrap_or(&s.name);
            let _ = writeln!(
                o,
                r#"<text x="{:.1}" y="{:.1}" fill="{color}">{label}</text>"#,
                W - R + 10.0,
                top + 14.0 * (i as f64 + 1.0)
            );
        }
    }
    let legend = T + PANEL + GAP + PANEL + 28.0;
    let _ = writeln!(
        o,
        r##"<rect x="{L}" y="{:.1}" width="10" height="10" fill="#f4a261" opacity="0.5"/><text x="{:.1}" y="{legend:.1}">sidecar down</text><rect x="{:.1}" y="{:.1}" width="10" height="10" fill="#90be6d" opacity="0.5"/><text x="{:.1}" y="{legend:.1}">upstream down</text>"##,
        legend - 9.0,
        L + 14.0,
        L + 110.0,
        legend - 9.0,
        L + 124.0,
    );
    o.push_str("</svg>\n");
    o
}

/// Writes the report (and the CSV, the chart, the BENCHMARKS.md section); returns whether the
/// soak passed.
pub fn write(inp: &Inputs) -> crate::Result<bool> {
    let args = inp.args;
    let total = inp.elapsed;
    let mut failures: Vec<String> = Vec::new();

    // Requests by kind.
    let mut by_kind: BTreeMap<Kind, Vec<&Record>> = BTreeMap::new();
    for r in inp.records {
        by_kind.entry(r.kind).or_default().push(r);
    }
    // Errors by (kind, what, cause).
    let mut errors: BTreeMap<(Kind, String, Cause), (u64, String)> = BTreeMap::new();
    let mut filter_errors = 0u64;
    let mut expected_errors = 0u64;
    let mut error_lines = String::from("seconds,kind,namespace,error,cause,detail\n");
    for r in inp.records {
        let Some(cause) = classify(r, inp.events) else {
            continue;
        };
        let Outcome::Failed { what, detail, .. } = &r.outcome else {
            continue;
        };
        match cause {
            Cause::Filter => filter_errors += 1,
            Cause::Expected(_) => expected_errors += 1,
        }
        let _ = writeln!(
            error_lines,
            "{:.3},{},{},{},{},{:?}",
            r.start.saturating_duration_since(inp.t0).as_secs_f64(),
            r.kind.name(),
            NAMESPACES.get(r.upstream).copied().unwrap_or_default(),
            what,
            cause.label().replace("**", ""),
            detail
        );
        let entry = errors
            .entry((r.kind, what.clone(), cause))
            .or_insert((0, detail.clone()));
        entry.0 += 1;
    }
    if filter_errors > 0 {
        failures.push(format!("{filter_errors} filter-caused request errors"));
    }

    let traps = trap_lines(inp.envoy_log);
    if !traps.is_empty() {
        failures.push(format!(
            "{} lines of Envoy's log show the Wasm VM failing",
            traps.len()
        ));
    }
    if !inp.envoy_alive {
        failures.push("Envoy exited during the soak".to_owned());
    }
    let vm_delta = stat_delta(inp.vm_stats_before, inp.vm_stats_after);
    let vms_created = vm_delta
        .iter()
        .filter(|(n, _)| n.ends_with(".created"))
        .map(|(_, v)| *v)
        .sum::<u64>();
    if vms_created > 0 {
        failures.push(format!(
            "{vms_created} Wasm VMs created during the soak (a VM was replaced)"
        ));
    }

    let vms_active = inp
        .vm_stats_after
        .iter()
        .filter(|(n, _)| n.ends_with(".active"))
        .map(|(_, v)| *v)
        .sum::<u64>();
    let series = series(inp.samples);
    let mut flat_rows = String::new();
    let mut all_flat = true;
    for s in &series {
        let start = s.points.first().map(|(_, v)| *v);
        let mid = s.at_or_after(total / 2);
        let end = s.points.last().map(|(_, v)| *v);
        let max_second_half = s
            .points
            .iter()
            .filter(|(t, _)| *t >= total / 2)
            .map(|(_, v)| *v)
            .max();
        let (growth_text, flat) = match s.growth(total, args.sample) {
            Some((_, _, g)) => (format!("{:+.1}%", g * 100.0), g <= MAX_GROWTH),
            None => ("n/a".to_owned(), false),
        };
        all_flat &= flat;
        let f = |v: Option<u64>| v.map_or("n/a".to_owned(), |v| s.fmt(v));
        // A linear memory never shrinks: when it last grew tells a plateau from a leak.
        let last_rise = s
            .points
            .windows(2)
            .rev()
            .find_map(|w| match w {
                [(_, a), (t, b)] if b > a => Some(*t),
                _ => None,
            })
            .map_or("never".to_owned(), |t| format!("{:.0} s", t.as_secs_f64()));
        let _ = writeln!(
            flat_rows,
            "| {} | {} | {} | {} | {} | {growth_text} | {last_rise} | {} |",
            s.name,
            f(start),
            f(mid),
            f(end),
            f(max_second_half),
            if flat { "flat" } else { "**grows**" }
        );
    }
    if series.len() < 2 {
        all_flat = false;
        failures.push("no Wasm VM memory found in Envoy's mappings".to_owned());
    }
    if !all_flat {
        failures.push(format!(
            "memory not flat over the second half (growth above {:.0}%)",
            MAX_GROWTH * 100.0
        ));
    }

    let passed = failures.is_empty();
    let stats = stat_delta(inp.stats_before, inp.stats_after);
    let stat = |suffix: &str| -> u64 {
        stats
            .iter()
            .filter(|(n, _)| n.ends_with(&format!("mcp_tool_search.{suffix}")))
            .map(|(_, v)| *v)
            .sum()
    };

    // ---- the report ----
    let mut o = String::new();
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .unwrap_or_default();
    let _ = writeln!(o, "# Chaos soak\n");
    let _ = writeln!(
        o,
        "{date}, {:.0} s of load. **Verdict: {}**{}\n",
        total.as_secs_f64(),
        if passed { "PASS" } else { "FAIL" },
        if passed {
            String::new()
        } else {
            format!(" ({})", failures.join("; "))
        }
    );
    let _ = writeln!(o, "## Setup\n");
    let _ = writeln!(
        o,
        "- Envoy (`--concurrency 2`) with the filter, `hold_request_headers`, \
         hybrid ranking through the embeddings sidecar (all-MiniLM-L6-v2, `query_timeout` 250 ms and every other \
         setting at its default): `{}`.",
        crate::plugin_config()
    );
    let _ = writeln!(
        o,
        "- Two rmcp `catalog-server`s (stateful, SSE), routes `{}` → namespace `{}` and `{}` → `{}`; `POST {}` searches either (the namespace in the body, `beta` listed in `search.http_namespaces`). {} tools each ({} stable, {} rotating, `slow_progress`).",
        crate::ROUTES.first().copied().unwrap_or_default(),
        NAMESPACES.first().copied().unwrap_or_default(),
        crate::ROUTES.get(1).copied().unwrap_or_default(),
        NAMESPACES.get(1).copied().unwrap_or_default(),
        crate::SEARCH_PATH,
        inp.served, crate::CORE, crate::ROTATING
    );
    let _ = writeln!(
        o,
        "- Load: {} keep-alive connections, closed loop with {} ms between requests, each cycling `tool_search`, upstream `tools/call`, `POST /mcp/search`, `tools/list` (searches half the requests) over both namespaces, with MCP sessions of its own (opened again when the upstream lost them). One watcher per upstream holds its session's `GET` stream open through Envoy (where `list_changed` arrives).",
        args.conns,
        args.think.as_millis()
    );
    let _ = writeln!(
        o,
        "- Faults: every {:.0} s both catalogs change ({} tools swapped, {} descriptions reworded; `notifications/tools/list_changed` to every session); every {:.0} s the sidecar is killed (SIGKILL) and restarted {:.0} s later (first at {:.0} s); every {:.0} s upstream `{}` is killed and started again on its port {:.0} s later (first at {:.0} s).",
        args.catalog_every.as_secs_f64(),
        crate::ROTATE_STEP,
        crate::REWORDED,
        args.embedder_every.as_secs_f64(),
        args.embedder_down.as_secs_f64(),
        args.embedder_every.as_secs_f64() / 2.0,
        args.upstream_every.as_secs_f64(),
        NAMESPACES.get(STOPPED).copied().unwrap_or_default(),
        args.upstream_down.as_secs_f64(),
        args.upstream_every.as_secs_f64() / 2.0,
    );
    let _ = writeln!(o, "- Warm-up: {}.", inp.warm_up);
    let _ = writeln!(
        o,
        "- Machine: {} cores, load average (1, 5, 15 min) {} at the start of the load, {} at the end.\n",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        inp.load_start,
        loadavg()
    );

    let count = |f: &dyn Fn(&What) -> bool| inp.events.iter().filter(|e| f(&e.what)).count();
    let changes: Vec<String> = inp
        .events
        .iter()
        .filter_map(|e| match &e.what {
            What::CatalogChanged(v, results) => Some(format!(
                "v{v}: {}",
                results
                    .iter()
                    .zip(NAMESPACES)
                    .map(|(r, ns)| match r {
                        Ok((tools, notified)) => format!("{ns} {tools} tools, {notified} notified"),
                        Err(e) => format!("{ns} {e}"),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            _ => None,
        })
        .collect();
    let _ = writeln!(o, "## Faults injected\n");
    let _ = writeln!(
        o,
        "- catalog changes: {} ({})",
        changes.len(),
        changes.join("; ")
    );
    let _ = writeln!(
        o,
        "- `list_changed` received by the watchers through Envoy: {} ({} `GET` streams opened)",
        inp.list_changed_seen
            .iter()
            .zip(NAMESPACES)
            .map(|(n, ns)| format!("{ns} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
        inp.watch_streams
            .iter()
            .zip(NAMESPACES)
            .map(|(n, ns)| format!("{ns} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        o,
        "- sidecar kills: {}, restarts: {}",
        count(&|w| matches!(w, What::EmbedderDown)),
        count(&|w| matches!(w, What::EmbedderUp))
    );
    let _ = writeln!(
        o,
        "- upstream stops: {}, starts: {}",
        count(&|w| matches!(w, What::UpstreamDown(_))),
        count(&|w| matches!(w, What::UpstreamUp(_)))
    );
    for e in inp.events {
        if let What::ActionFailed(why) = &e.what {
            let _ = writeln!(o, "- fault action failed: {why}");
        }
    }

    let _ = writeln!(o, "\n## Requests\n");
    let _ = writeln!(
        o,
        "{} requests in {:.0} s ({:.0}/s); {} failed: {} expected from the faults, {} caused by the filter.\n",
        inp.records.len(),
        total.as_secs_f64(),
        inp.records.len() as f64 / total.as_secs_f64().max(1.0),
        filter_errors + expected_errors,
        expected_errors,
        filter_errors
    );
    let _ = writeln!(
        o,
        "| kind | requests | ok | failed (expected) | failed (filter) | p50 | p99 | max |\n|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    for kind in Kind::ALL {
        let Some(rs) = by_kind.get(&kind) else {
            continue;
        };
        let mut lat: Vec<Duration> = rs
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Ok { .. }))
            .map(|r| r.end.saturating_duration_since(r.start))
            .collect();
        lat.sort_unstable();
        let causes: Vec<Cause> = rs.iter().filter_map(|r| classify(r, inp.events)).collect();
        let expected = causes
            .iter()
            .filter(|c| matches!(c, Cause::Expected(_)))
            .count();
        let filter = causes.len() - expected;
        let _ = writeln!(
            o,
            "| {} | {} | {} | {expected} | {filter} | {} | {} | {} |",
            kind.name(),
            rs.len(),
            lat.len(),
            ms(percentile(&lat, 50.0)),
            ms(percentile(&lat, 99.0)),
            ms(lat.last().copied().unwrap_or_default())
        );
    }
    let _ = writeln!(o, "\nLatencies are of successful requests, from the client (write to last byte), on a 2-core machine that also runs the sidecar, both upstreams and the load.\n");

    let _ = writeln!(o, "### Errors by kind\n");
    if errors.is_empty() {
        let _ = writeln!(o, "None.\n");
    } else {
        let _ = writeln!(
            o,
            "| request | error | cause | count | first seen (excerpt) |\n|---|---|---|---:|---|"
        );
        for ((kind, what, cause), (n, detail)) in &errors {
            let detail: String = detail.chars().take(140).collect();
            let _ = writeln!(
                o,
                "| {} | {what} | {} | {n} | `{}` |",
                kind.name(),
                cause.label(),
                detail.replace('|', "\\|").replace('`', "'")
            );
        }
        let _ = writeln!(o, "\nEvery failed request: `errors.csv`.\n");
    }

    let _ = writeln!(
        o,
        "### Search ranking per request (from each answer's `_meta`)\n"
    );
    let mut strategies: BTreeMap<(Kind, String), Vec<Duration>> = BTreeMap::new();
    for r in inp.records {
        if let Outcome::Ok {
            strategy: Some(s), ..
        } = &r.outcome
        {
            strategies
                .entry((r.kind, s.clone()))
                .or_default()
                .push(r.end.saturating_duration_since(r.start));
        }
    }
    let _ = writeln!(
        o,
        "| request | ranking | answers | p50 | p99 |\n|---|---|---:|---:|---:|"
    );
    for ((kind, s), lat) in &mut strategies {
        lat.sort_unstable();
        let _ = writeln!(
            o,
            "| {} | {s} | {} | {} | {} |",
            kind.name(),
            lat.len(),
            ms(percentile(lat, 50.0)),
            ms(percentile(lat, 99.0))
        );
    }

    o.push_str(&ranking_by_phase(inp));

    let _ = writeln!(o, "\n## Filter stats (Envoy `/stats`, during the load)\n");
    let _ = writeln!(o, "| stat | count |\n|---|---:|");
    for (name, v) in &stats {
        if *v > 0 {
            let short = name
                .split("mcp_tool_search.")
                .nth(1)
                .unwrap_or(name.as_str());
            let _ = writeln!(o, "| `{short}` | {v} |");
        }
    }
    let fallbacks: u64 = stats
        .iter()
        .filter(|(n, _)| n.contains("search_fallbacks."))
        .map(|(_, v)| *v)
        .sum();
    let _ = writeln!(
        o,
        "\nSearch fallbacks to BM25 (`search_fallbacks.*`): {fallbacks} of {} searches answered (`searches_answered.*`). Wasm VMs created during the load: {vms_created} ({vms_active} active at the end, Envoy's `wasm.envoy.wasm.runtime.v8.*`). Envoy {} at the end.\n",
        stat("searches_answered.bm25") + stat("searches_answered.vector") + stat("searches_answered.hybrid"),
        if inp.envoy_alive { "running" } else { "**not running**" }
    );

    let _ = writeln!(o, "## Envoy's log\n");
    if traps.is_empty() {
        let _ = writeln!(
            o,
            "No panic, trap or failed Wasm callback in `envoy.log` ({} lines at level warning, `wasm` included).\n",
            inp.envoy_log.lines().count()
        );
    } else {
        let _ = writeln!(o, "{} lines show the VM failing; the first:\n", traps.len());
        let _ = writeln!(o, "```");
        for l in traps.iter().take(10) {
            let _ = writeln!(o, "{l}");
        }
        let _ = writeln!(o, "```\n");
    }

    let _ = writeln!(o, "## Memory\n");
    let _ = writeln!(
        o,
        "Sampled every {:.0} s ({} samples; `memory.csv`, chart `memory.svg`). The VMs are every Wasm linear memory in Envoy's address space (one per worker thread, and those of Envoy's main thread). A VM's linear memory is read from Envoy's `/proc/PID/maps` (V8's 8 GiB reservation per memory; see `bench/src/soak/memory.rs`). Growth over the second half: the median of the last tenth of the run against the median of the tenth from the middle (each at least two samples); flat when at most {:.0}%.\n",
        args.sample.as_secs_f64(),
        inp.samples.len(),
        MAX_GROWTH * 100.0
    );
    let _ = writeln!(
        o,
        "| series | start | middle | end | max (second half) | growth | last rise | |\n|---|---:|---:|---:|---:|---:|---:|---|"
    );
    o.push_str(&flat_rows);
    let _ = writeln!(o, "\n![memory over time](memory.svg)\n");
    let _ = writeln!(o, "### Over time\n");
    let _ = writeln!(o, "| s | Envoy RSS | VMs |\n|---:|---:|---|");
    let step = (inp.samples.len() / 12).max(1);
    for (i, s) in inp.samples.iter().enumerate() {
        if i % step != 0 && i + 1 != inp.samples.len() {
            continue;
        }
        let vms: Vec<String> = s.vms.iter().map(|(_, v)| mib(*v)).collect();
        let _ = writeln!(
            o,
            "| {:.0} | {} | {} |",
            s.at.as_secs_f64(),
            s.rss_kb.map_or("n/a".to_owned(), mib_kb),
            vms.join(", ")
        );
    }

    let dir = &args.out_dir;
    let io = |what: &str, e: std::io::Error| format!("{}/{what}: {e}", dir.display());
    std::fs::write(dir.join("report.md"), &o).map_err(|e| io("report.md", e))?;
    std::fs::write(dir.join("memory.csv"), csv(inp.samples, &series))
        .map_err(|e| io("memory.csv", e))?;
    std::fs::write(dir.join("memory.svg"), svg(&series, total, inp))
        .map_err(|e| io("memory.svg", e))?;
    std::fs::write(dir.join("errors.csv"), error_lines).map_err(|e| io("errors.csv", e))?;
    eprintln!("{o}");
    eprintln!("[soak] wrote {}/report.md", dir.display());

    if let Some(path) = &args.benchmarks {
        if args.seconds >= 600 {
            let section = benchmarks_section(inp, &o, passed, &failures);
            update_benchmarks(path, &section)?;
            eprintln!("[soak] wrote the Chaos soak section of {}", path.display());
        }
    }
    Ok(passed)
}

/// The summary for BENCHMARKS.md: the report's tables, without its per-sample listing.
fn benchmarks_section(inp: &Inputs, report: &str, passed: bool, failures: &[String]) -> String {
    let mut s = String::from("## Chaos soak\n\n");
    let _ = writeln!(
        s,
        "`make soak SOAK_SECONDS={}` ({}): the summary of `target/soak/report.md` (beside it: `memory.csv`, `memory.svg`, `errors.csv`, `envoy.log`). Verdict: **{}**{}.\n",
        inp.args.seconds,
        report
            .lines()
            .nth(2)
            .and_then(|l| l.split(',').next())
            .unwrap_or(""),
        if passed { "PASS" } else { "FAIL" },
        if passed {
            String::new()
        } else {
            format!(" ({})", failures.join("; "))
        }
    );
    // Setup to the memory table, headings one level down.
    let body: Vec<&str> = report
        .lines()
        .skip_while(|l| !l.starts_with("## Setup"))
        .take_while(|l| !l.starts_with("![memory") && !l.starts_with("### Over time"))
        .collect();
    for line in body {
        if let Some(rest) = line.strip_prefix("## ") {
            let _ = writeln!(s, "### {rest}");
        } else if let Some(rest) = line.strip_prefix("### ") {
            let _ = writeln!(s, "#### {rest}");
        } else {
            // The files named are the run's, in target/soak.
            let mut line = line.to_owned();
            for file in ["errors.csv", "memory.csv", "memory.svg", "envoy.log"] {
                line = line.replace(&format!("`{file}`"), &format!("`target/soak/{file}`"));
            }
            let _ = writeln!(s, "{line}");
        }
    }
    s.trim_end().to_owned() + "\n"
}

/// Replaces the `## Chaos soak` section of `path` (up to the next `## ` heading) with `section`,
/// or appends it; everything else in the file stays as it is.
pub fn update_benchmarks(path: &std::path::Path, section: &str) -> crate::Result<()> {
    let old = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let new = replace_section(&old, section);
    std::fs::write(path, new).map_err(|e| format!("{}: {e}", path.display()))
}

fn replace_section(old: &str, section: &str) -> String {
    const HEADING: &str = "## Chaos soak\n";
    let start = if old.starts_with(HEADING) {
        Some(0)
    } else {
        old.find(&format!("\n{HEADING}")).map(|i| i + 1)
    };
    match start {
        Some(start) => {
            let after = start + HEADING.len();
            let end = old
                .get(after..)
                .and_then(|rest| rest.find("\n## "))
                .map_or(old.len(), |i| after + i + 1);
            let mut out = String::new();
            out.push_str(old.get(..start).unwrap_or_default());
            out.push_str(section);
            if end < old.len() {
                out.push('\n');
                out.push_str(old.get(end..).unwrap_or_default());
            }
            out
        }
        None => {
            let mut out = old.trim_end().to_owned();
            out.push_str("\n\n");
            out.push_str(section);
            out
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_appended_then_replaced_in_place() {
        let doc = "# B\n\n## One\n\ntext\n";
        let once = replace_section(doc, "## Chaos soak\n\nfirst\n");
        assert_eq!(once, "# B\n\n## One\n\ntext\n\n## Chaos soak\n\nfirst\n");
        let twice = replace_section(&once, "## Chaos soak\n\nsecond\n");
        assert_eq!(twice, "# B\n\n## One\n\ntext\n\n## Chaos soak\n\nsecond\n");
        let middle = "# B\n\n## Chaos soak\n\nold\n\n## Two\n\nkept\n";
        assert_eq!(
            replace_section(middle, "## Chaos soak\n\nnew\n"),
            "# B\n\n## Chaos soak\n\nnew\n\n## Two\n\nkept\n"
        );
    }

    #[test]
    fn the_benchmarks_section_is_the_report_s_summary() {
        let args = Args {
            catalog_server: "cs".into(),
            seconds: 600,
            conns: 12,
            think: Duration::from_millis(50),
            sample: Duration::from_secs(5),
            catalog_every: Duration::from_secs(30),
            embedder_every: Duration::from_secs(90),
            embedder_down: Duration::from_secs(20),
            upstream_every: Duration::from_secs(120),
            upstream_down: Duration::from_secs(15),
            out_dir: "target/soak".into(),
            benchmarks: None,
        };
        let inp = Inputs {
            args: &args,
            load_start: String::new(),
            t0: Instant::now(),
            elapsed: Duration::from_secs(600),
            warm_up: String::new(),
            records: &[],
            events: &[],
            samples: &[],
            stats_before: &[],
            stats_after: &[],
            vm_stats_before: &[],
            vm_stats_after: &[],
            envoy_log: "",
            envoy_alive: true,
            list_changed_seen: vec![],
            watch_streams: vec![],
            served: 121,
        };
        let report = "# Chaos soak\n\n2026-12-01 02:20 UTC, 600 s of load. **Verdict: PASS**\n\n## Setup\n\n- x\n\n### Errors by kind\n\nEvery failed request: `errors.csv`.\n\n## Memory\n\n| t |\n\n![memory over time](memory.svg)\n\n### Over time\n\n| 0 |\n";
        let s = benchmarks_section(&inp, report, true, &[]);
        assert!(
            s.starts_with("## Chaos soak\n\n`make soak SOAK_SECONDS=600` (2026-12-01 02:20 UTC)"),
            "{s}"
        );
        assert!(s.contains("\n### Setup\n"), "{s}");
        assert!(s.contains("\n#### Errors by kind\n"), "{s}");
        assert!(s.contains("`target/soak/errors.csv`"), "{s}");
        assert!(!s.contains("Over time") && !s.contains("![memory"), "{s}");
        assert!(s.ends_with("| t |\n"), "{s}");
    }

    #[test]
    fn trap_lines_are_found() {
        let log = "[warning][wasm] catalog fetch failed: connect\n\
                   [critical][wasm] wasm log mcp_tool_search: panicked at src/x.rs:1:1\n\
                   [error][wasm] Function: proxy_on_request_body failed: Uncaught RuntimeError: unreachable\n";
        assert_eq!(trap_lines(log).len(), 2);
    }
}
