//! Why a request failed: the fault injected that explains it, or the filter.

use crate::chaos::{Event, What};
use crate::load::{Outcome, Record, UPSTREAM_GRACE};
use crate::STOPPED;
use std::time::Instant;

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Cause {
    /// The fault injected explains it (the text says which).
    Expected(&'static str),
    /// Nothing injected explains it: the filter (or Envoy with it) is to blame.
    Filter,
}

impl Cause {
    pub fn label(&self) -> String {
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
