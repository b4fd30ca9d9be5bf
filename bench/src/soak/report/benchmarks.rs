//! The soak's section of BENCHMARKS.md: the report's summary, and how it replaces the old one.

use super::Inputs;
use std::fmt::Write as _;

/// The summary for BENCHMARKS.md: the report's tables, without its per-sample listing.
pub fn benchmarks_section(inp: &Inputs, report: &str, passed: bool, failures: &[String]) -> String {
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
    // The verdict's criteria (or, from an older report, the setup) to the memory table,
    // headings one level down.
    let body: Vec<&str> = report
        .lines()
        .skip_while(|l| !l.starts_with("## Verdict") && !l.starts_with("## Setup"))
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
    use crate::Args;
    use std::time::{Duration, Instant};

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
            tools: 120,
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
        let report = "# Chaos soak\n\n2026-12-01 02:20 UTC, 600 s of load. **Verdict: PASS**\n\n## Verdict\n\n| criterion | must be | measured | |\n\n## Setup\n\n- x\n\n### Errors by kind\n\nEvery failed request: `errors.csv`.\n\n## Memory\n\n| t |\n\n![memory over time](memory.svg)\n\n### Over time\n\n| 0 |\n";
        let s = benchmarks_section(&inp, report, true, &[]);
        assert!(
            s.starts_with("## Chaos soak\n\n`make soak SOAK_SECONDS=600` (2026-12-01 02:20 UTC)"),
            "{s}"
        );
        assert!(s.contains("\n### Setup\n"), "{s}");
        assert!(
            s.contains("\n### Verdict\n\n| criterion | must be | measured | |\n"),
            "{s}"
        );
        assert!(s.contains("\n#### Errors by kind\n"), "{s}");
        assert!(s.contains("`target/soak/errors.csv`"), "{s}");
        assert!(!s.contains("Over time") && !s.contains("![memory"), "{s}");
        assert!(s.ends_with("| t |\n"), "{s}");
    }
}
