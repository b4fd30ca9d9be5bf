//! `memory.svg`: memory over time, drawn as SVG text.

use super::series::Series;
use super::Inputs;
use crate::chaos::What;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// A small chart of memory over time (no plotting library is available offline, and SVG is
/// text): Envoy's RSS above, each VM's linear memory below (scales a hundredfold apart), the
/// sidecar's and the upstream's down windows shaded.
pub fn svg(series: &[Series], total: Duration, inp: &Inputs) -> String {
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
