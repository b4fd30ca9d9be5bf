//! The soak's verdict and report: causes of errors, latencies, fallbacks, memory over time.
//! `causes.rs` tells expected errors from the filter's, `series.rs` and `chart.rs` hold memory
//! over time, `criteria.rs` the ranking criteria of the verdict and how fast catalog changes
//! are embedded, `ranking.rs` the search ranking by the sidecar's state, `benchmarks.rs` the
//! section of BENCHMARKS.md.

mod benchmarks;
mod causes;
mod chart;
mod criteria;
mod ranking;
mod series;

use crate::chaos::{Event, What};
use crate::load::{Kind, Outcome, Record};
use crate::memory::Sample;
use crate::{Args, NAMESPACES, STOPPED};
use causes::{classify, Cause};
use mcp_tool_search_bench::ms;
use series::{mib, mib_kb, MAX_GROWTH};
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
    let series = series::series(inp.samples);
    let mut flat_rows = String::new();
    let mut all_flat = true;
    // The series that grew most over the second half: (growth, name).
    let mut worst: Option<(f64, &str)> = None;
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
            Some((_, _, g)) => {
                if worst.is_none_or(|(w, _)| g > w) {
                    worst = Some((g, s.name.as_str()));
                }
                (format!("{:+.1}%", g * 100.0), g <= MAX_GROWTH)
            }
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

    // Ranking: hybrid while the sidecar is up, hybrid back after each restart; and how fast
    // each catalog change was embedded (reported, not judged).
    let end = inp.t0 + total;
    let up = criteria::up_windows(inp.events, inp.t0);
    let answers = criteria::answers(inp.records);
    let share = criteria::hybrid_share(&up, &answers);
    let restarts = criteria::recoveries(&up, &answers, end);
    let embeddings = criteria::embeddings(&criteria::changes(inp.events), &up, &answers, end);
    let embedded_reported = answers.iter().any(|a| a.embedded.is_some());
    let share_text = match share.percent() {
        Some(p) => format!("{p:.1}% ({} of {})", share.hybrid, share.searches),
        None => "no search".to_owned(),
    };
    if !share.passed() {
        failures.push(format!(
            "hybrid {share_text} of the searches made while the sidecar was up, below {}%",
            criteria::MIN_HYBRID_PERCENT
        ));
    }
    let slow: Vec<String> = restarts
        .iter()
        .filter(|r| r.recovery.passed() == Some(false))
        .map(|r| r.recovery.text())
        .collect();
    if !slow.is_empty() {
        failures.push(format!(
            "hybrid not back within {:.0} s after {} of {} sidecar restarts ({})",
            criteria::MAX_RECOVERY.as_secs_f64(),
            slow.len(),
            restarts.len(),
            slow.join(", ")
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
    let verdict = |ok: bool| if ok { "PASS" } else { "**FAIL**" };
    let _ = writeln!(o, "## Verdict\n");
    let _ = writeln!(o, "| criterion | must be | measured | |\n|---|---|---|---|");
    let _ = writeln!(
        o,
        "| filter-caused request errors | 0 | {filter_errors} | {} |",
        verdict(filter_errors == 0)
    );
    let _ = writeln!(
        o,
        "| lines of Envoy's log showing the Wasm VM failing | 0 | {} | {} |",
        traps.len(),
        verdict(traps.is_empty())
    );
    let _ = writeln!(
        o,
        "| Envoy running at the end | yes | {} | {} |",
        if inp.envoy_alive { "yes" } else { "no" },
        verdict(inp.envoy_alive)
    );
    let _ = writeln!(
        o,
        "| Wasm VMs created during the load | 0 | {vms_created} | {} |",
        verdict(vms_created == 0)
    );
    let _ = writeln!(
        o,
        "| memory growth over the second half, worst series | at most {:.0}% each | {} | {} |",
        MAX_GROWTH * 100.0,
        worst.map_or("n/a".to_owned(), |(g, name)| format!(
            "{:+.1}% ({})",
            g * 100.0,
            name.split(" (").next().unwrap_or(name)
        )),
        verdict(all_flat)
    );
    let _ = writeln!(
        o,
        "| searches hybrid while the sidecar is up, from the first hybrid answer ({}) | at least {}% | {share_text} | {} |",
        share.from.map_or("none".to_owned(), |f| format!(
            "{:.1} s",
            f.saturating_duration_since(inp.t0).as_secs_f64()
        )),
        criteria::MIN_HYBRID_PERCENT,
        verdict(share.passed())
    );
    let _ = writeln!(
        o,
        "| hybrid back after each restart of the sidecar, from its `listening on` | within {:.0} s | {} | {} |",
        criteria::MAX_RECOVERY.as_secs_f64(),
        if restarts.is_empty() {
            "no restart".to_owned()
        } else {
            restarts
                .iter()
                .map(|r| r.recovery.text())
                .collect::<Vec<_>>()
                .join(", ")
        },
        if restarts.iter().all(|r| r.recovery.passed().is_none()) {
            "not judged"
        } else {
            verdict(slow.is_empty())
        }
    );
    let _ = writeln!(
        o,
        "| a catalog change embedded: to the first answer with `embedded` = `candidates` | (reported) | {} | not judged |",
        ranking::embeddings_summary(&embeddings, embedded_reported)
    );
    let _ = writeln!(o, "\n{}\n", criteria::DEFINITIONS);
    let _ = writeln!(o, "## Setup\n");
    let _ = writeln!(
        o,
        "- Envoy (`--concurrency 2`) with the filter, `hold_request_headers`, \
         hybrid ranking through the embeddings sidecar (all-MiniLM-L6-v2, `query_timeout` 250 ms and every other \
         setting at its default): `{}`.",
        crate::bootstrap::plugin_config()
    );
    let _ = writeln!(
        o,
        "- Two rmcp `catalog-server`s (stateful, SSE), routes `{}` → namespace `{}` and `{}` → `{}`; `POST {}` searches either (the namespace in the body, `beta` listed in `search.http_namespaces`). {} tools each ({} stable, {} rotating, `slow_progress`).",
        crate::ROUTES.first().copied().unwrap_or_default(),
        NAMESPACES.first().copied().unwrap_or_default(),
        crate::ROUTES.get(1).copied().unwrap_or_default(),
        NAMESPACES.get(1).copied().unwrap_or_default(),
        crate::SEARCH_PATH,
        inp.served,
        inp.served.saturating_sub(crate::catalogs::ROTATING + 1),
        crate::catalogs::ROTATING
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
        crate::catalogs::ROTATE_STEP,
        crate::catalogs::REWORDED,
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
                        Ok(swap) => format!("{ns} {swap:?}"),
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

    o.push_str(&ranking::ranking_by_phase(inp, &restarts));
    o.push_str(&ranking::embeddings_section(
        inp,
        &embeddings,
        embedded_reported,
    ));

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
    std::fs::write(dir.join("memory.csv"), series::csv(inp.samples, &series))
        .map_err(|e| io("memory.csv", e))?;
    std::fs::write(dir.join("memory.svg"), chart::svg(&series, total, inp))
        .map_err(|e| io("memory.svg", e))?;
    std::fs::write(dir.join("errors.csv"), error_lines).map_err(|e| io("errors.csv", e))?;
    eprintln!("{o}");
    eprintln!("[soak] wrote {}/report.md", dir.display());
    if passed {
        eprintln!("[soak] verdict: PASS");
    } else {
        eprintln!("[soak] verdict: FAIL: {}", failures.join("; "));
    }

    if let Some(path) = &args.benchmarks {
        if args.seconds >= 600 {
            let section = benchmarks::benchmarks_section(inp, &o, passed, &failures);
            benchmarks::update_benchmarks(path, &section)?;
            eprintln!("[soak] wrote the Chaos soak section of {}", path.display());
        }
    }
    Ok(passed)
}

#[cfg(test)]
mod tests;
