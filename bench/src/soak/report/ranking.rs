//! Search ranking by the sidecar's state (up, down, recovering) and how long the first hybrid
//! answer took after each restart.

use super::Inputs;
use crate::chaos::{Event, What};
use crate::load::Outcome;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

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
pub fn ranking_by_phase(inp: &Inputs) -> String {
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
