//! What the bench (`make bench`, `src/main.rs`) and the chaos soak (`make soak`,
//! `src/soak/`) share: the filter's Envoy configuration, process memory from `/proc`, and how
//! durations are written in reports.

pub mod envoy;
pub mod procfs;

use std::time::Duration;

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
