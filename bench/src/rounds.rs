//! Side-by-side measurements: targets run in turn, round after round, and the per-round
//! medians that compare them.

use crate::client::{self, Request, Samples};
use std::time::Duration;

/// Runs the targets one after the other, `rounds` times over (so that a change in the
/// machine's speed hits all of them alike), pooling each target's latencies.
pub fn interleaved(
    targets: &[(std::net::SocketAddr, Vec<Request>, Option<&str>)],
    rounds: usize,
    round: Duration,
    conns: usize,
    min: usize,
) -> Result<(Vec<Samples>, Vec<Vec<Duration>>), String> {
    let mut pooled = vec![Samples::default(); targets.len()];
    let mut p50s = vec![Vec::new(); targets.len()];
    for _ in 0..rounds {
        for (i, (addr, reqs, expect)) in targets.iter().enumerate() {
            let s = client::run(*addr, reqs, conns, round, min, *expect)?;
            if s.errors > 0 {
                return Err(format!(
                    "{} of {} responses failed the check at {addr}",
                    s.errors,
                    s.count()
                ));
            }
            if let Some(p) = p50s.get_mut(i) {
                p.push(s.p50());
            }
            if let Some(p) = pooled.get_mut(i) {
                p.merge(s);
            }
        }
    }
    Ok((pooled, p50s))
}

fn median_f64(mut v: Vec<f64>) -> f64 {
    v.sort_by(|x, y| x.total_cmp(y));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Round by round, `a`'s p50 over `b`'s p50 (the ratio) and minus it (seconds): medians.
pub fn round_figures(a: Option<&Vec<Duration>>, b: Option<&Vec<Duration>>) -> (f64, f64) {
    let (Some(a), Some(b)) = (a, b) else {
        return (f64::NAN, f64::NAN);
    };
    let pairs: Vec<(f64, f64)> = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x.as_secs_f64(), y.as_secs_f64()))
        .collect();
    (
        median_f64(
            pairs
                .iter()
                .filter(|p| p.1 > 0.0)
                .map(|p| p.0 / p.1)
                .collect(),
        ),
        median_f64(pairs.iter().map(|p| p.0 - p.1).collect()),
    )
}
