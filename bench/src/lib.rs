//! What the bench (`make bench`, `src/main.rs`) and the chaos soak (`make soak`,
//! `src/soak/`) share: the filter's Envoy configuration, process memory from `/proc`, and how
//! durations are written in reports.

pub mod envoy;
pub mod procfs;

use std::time::Duration;

/// The section of the Markdown `doc` under `heading` (a `## ` line, without its newline), up to
/// the next `## ` heading, preceded by a blank line; empty when there is none. The bench keeps
/// the sections other runs wrote (`make soak`, `make bench-gateway`) when it rewrites the file.
pub fn markdown_section(doc: &str, heading: &str) -> String {
    let Some(start) = doc.find(&format!("\n{heading}\n")).map(|i| i + 1) else {
        return String::new();
    };
    let rest = doc.get(start..).unwrap_or_default();
    let end = rest
        .get(1..)
        .and_then(|r| r.find("\n## "))
        .map_or(rest.len(), |i| i + 2);
    format!("\n{}", rest.get(..end).unwrap_or_default().trim_end()) + "\n"
}

/// `doc` with its section under `heading` replaced by `new` (or `new` added before `## Chaos
/// soak`, which `make soak` keeps last, else at the end).
pub fn replace_markdown_section(doc: &str, heading: &str, new: &str) -> String {
    let old = markdown_section(doc, heading);
    let without = if old.is_empty() {
        doc.to_owned()
    } else {
        doc.replacen(old.trim_start_matches('\n'), "", 1)
    };
    let without = without.trim_end().to_owned() + "\n";
    match without.find("\n## Chaos soak\n") {
        Some(i) => format!(
            "{}\n\n{}\n{}",
            without.get(..i).unwrap_or_default().trim_end(),
            new.trim(),
            without.get(i..).unwrap_or_default()
        ),
        None => format!("{}\n{}\n", without, new.trim()),
    }
}

/// A small difference in µs with one decimal (`ms` rounds below 1 ms to whole µs).
pub fn us_tenths(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// A duration as reports write it: three significant digits, µs below a millisecond.
pub fn ms(d: Duration) -> String {
    let v = d.as_secs_f64() * 1000.0;
    if v >= 100.0 {
        format!("{v:.0} ms")
    } else if v >= 10.0 {
        format!("{v:.1} ms")
    } else if v >= 1.0 {
        format!("{v:.2} ms")
    } else {
        format!("{:.0} µs", v * 1000.0)
    }
}
