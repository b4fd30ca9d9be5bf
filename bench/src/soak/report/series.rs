//! Memory over time: one series per process or VM, its growth over the second half (the
//! flatness verdict) and the CSV of every sample.

use crate::memory::Sample;
use std::fmt::Write as _;
use std::time::Duration;

pub fn mib_kb(kb: u64) -> String {
    format!("{:.1} MiB", kb as f64 / 1024.0)
}

pub fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// One memory series over time: Envoy's RSS (kB) or a VM's linear memory (bytes).
pub struct Series {
    pub name: String,
    pub unit_kb: bool,
    pub points: Vec<(Duration, u64)>,
}

impl Series {
    pub fn fmt(&self, v: u64) -> String {
        if self.unit_kb {
            mib_kb(v)
        } else {
            mib(v)
        }
    }

    pub fn at_or_after(&self, t: Duration) -> Option<u64> {
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
    pub fn growth(&self, total: Duration, sample: Duration) -> Option<(u64, u64, f64)> {
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

pub fn series(samples: &[Sample]) -> Vec<Series> {
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
pub const MAX_GROWTH: f64 = 0.05;

pub fn csv(samples: &[Sample], series: &[Series]) -> String {
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
