//! Search ranking by the sidecar's state (up, down, recovering), how long the first hybrid
//! answer took after each restart, and how long each catalog change took to be embedded (the
//! numbers are `criteria.rs`'s).

use super::criteria::{Change, Embedding, Restart};
use super::{percentile, Inputs};
use crate::chaos::{Event, What};
use crate::load::Outcome;
use crate::NAMESPACES;
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
pub fn ranking_by_phase(inp: &Inputs, restarts: &[Restart]) -> String {
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
    if !restarts.is_empty() {
        let _ = writeln!(
            o,
            "\nFirst hybrid answer after each restart of the sidecar, from its `listening on` (a search's start; the filter's circuit then waits for its next probe): {}.",
            restarts
                .iter()
                .map(|r| r.recovery.text())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    o
}

/// The measured times, sorted, and how many changes were still not embedded at the next one.
fn measured(embeddings: &[(Change, Embedding)]) -> (Vec<Duration>, usize) {
    let mut took: Vec<Duration> = embeddings
        .iter()
        .filter_map(|(_, e)| match e {
            Embedding::Took(d) => Some(*d),
            _ => None,
        })
        .collect();
    took.sort_unstable();
    let open = embeddings
        .iter()
        .filter(|(_, e)| matches!(e, Embedding::NotBefore(_)))
        .count();
    (took, open)
}

/// One line: p50 and max of the time a change took to be embedded.
pub fn embeddings_summary(embeddings: &[(Change, Embedding)], reported: bool) -> String {
    if !reported {
        return "not reported by the filter (no answer has `embedded`)".to_owned();
    }
    if embeddings.is_empty() {
        return "no catalog change".to_owned();
    }
    let (took, open) = measured(embeddings);
    let open = (open > 0).then(|| format!("{open} not all embedded before the next change"));
    match (took.last(), open) {
        (Some(max), open) => format!(
            "p50 {:.2} s, max {:.2} s ({} of {} measured{})",
            percentile(&took, 50.0).as_secs_f64(),
            max.as_secs_f64(),
            took.len(),
            embeddings.len(),
            open.map(|o| format!("; {o}")).unwrap_or_default()
        ),
        (None, Some(open)) => format!("none of {} measured ({open})", embeddings.len()),
        (None, None) => format!("none of {} measured", embeddings.len()),
    }
}

/// Each catalog change, per namespace: how long until an answer had every candidate embedded.
pub fn embeddings_section(
    inp: &Inputs,
    embeddings: &[(Change, Embedding)],
    reported: bool,
) -> String {
    let mut o = String::from("\n### Catalog changes embedded\n\n");
    if !reported {
        let _ = writeln!(
            o,
            "`embedded` is not reported by the filter (no search answer's `_meta` or `metadata` has it): not measured."
        );
        return o;
    }
    let _ = writeln!(
        o,
        "From the upstream's answer to the swap (tools replaced, `list_changed` sent) to the start of the first search in the namespace whose `embedded` equals its `candidates`, once an answer had shown the change (see the definitions under the verdict). {}.\n",
        embeddings_summary(embeddings, reported)
    );
    let _ = writeln!(
        o,
        "| change | at | {} |\n|---|---:|{}",
        NAMESPACES.join(" | "),
        "---|".repeat(NAMESPACES.len())
    );
    let mut versions: Vec<usize> = embeddings.iter().map(|(c, _)| c.version).collect();
    versions.dedup();
    for v in versions {
        let of = |ns: usize| {
            embeddings
                .iter()
                .find(|(c, _)| c.version == v && c.namespace == ns)
        };
        let at = of(0).or_else(|| of(1)).map_or(0.0, |(c, _)| {
            c.at.saturating_duration_since(inp.t0).as_secs_f64()
        });
        let cells: Vec<String> = (0..NAMESPACES.len())
            .map(|ns| of(ns).map_or("n/a".to_owned(), |(_, e)| e.text()))
            .collect();
        let _ = writeln!(o, "| v{v} | {at:.1} s | {} |", cells.join(" | "));
    }
    o
}
