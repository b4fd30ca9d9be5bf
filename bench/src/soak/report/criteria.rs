//! The ranking half of the verdict (how many searches were hybrid while the sidecar was up, how
//! soon hybrid came back after each restart) and how fast each catalog change was embedded:
//! pure functions over the sidecar's timeline ([`Up`]) and the search answers ([`Answer`]), so
//! that the tests below can judge a made-up run.
//!
//! The definitions, as the report states them ([`DEFINITIONS`]):
//!
//! - **Sidecar up**: from the moment it printed `listening on` (before the load for its first
//!   start; the `EmbedderUp` event after a restart) until it was killed (`EmbedderDown`, stamped
//!   when the SIGKILL is sent). A search is *made while the sidecar is up* when it started in
//!   such a window (a search in flight at the kill counts as made while it was up).
//! - **Hybrid share**: the share of the searches (`tool_search` and `POST /mcp/search`, failed
//!   ones included) made while the sidecar is up whose answer's ranking was `hybrid` with no
//!   fallback, counted from the start of the first search of the load answered `hybrid` (the
//!   catalogs were all embedded during the warm-up, so that is the first moment the filter used
//!   their vectors; when no answer was hybrid, from the start of the load). At least
//!   [`MIN_HYBRID_PERCENT`].
//! - **Hybrid back after a restart**: for each restart of the sidecar, from its `listening on`
//!   to the start of the first search made in that up window answered `hybrid`. At most
//!   [`MAX_RECOVERY`]. An up window with no search is reported, not judged; one with searches
//!   but no hybrid answer fails, unless it ended (the next kill, or the end of the run) less
//!   than [`MAX_RECOVERY`] after `listening on` (reported, not judged: hybrid had not had its
//!   chance).
//! - **Change embedded** (reported, not judged): for each catalog change and namespace, from the
//!   moment its upstream answered the swap (the tools replaced, `list_changed` handed to every
//!   session) to the start of the first search in that namespace whose answer's `embedded`
//!   equals its `candidates` (every candidate vector-ranked). Before the filter has the new
//!   catalog its answers come from the old one, all embedded; so the clock stops only at such
//!   an answer made after the change *showed*: after an answer in the namespace with `embedded`
//!   below `candidates`. Measured only when the sidecar was up from the change to that answer
//!   and the namespace's last answer before the change (in the same up window) had every
//!   candidate embedded; otherwise the report says why not.

use crate::chaos::{Event, What};
use crate::load::{Kind, Outcome, Record};
use std::time::{Duration, Instant};

/// The least share of searches made while the sidecar is up that must be hybrid, in percent.
/// An operator running hybrid ranking expects it whenever the sidecar is up: a catalog change
/// no longer makes the filter fall back (candidates not embedded yet rank by BM25 within the
/// hybrid answer), so the 5% left is for what the chaos itself costs while the sidecar is up:
/// the searches in flight when it is killed and the seconds after each restart before the
/// filter trusts it again. At the default schedule (up 70 s of every 90 s) that is 3.5 s per
/// up window; the run before this criterion had 8%.
pub const MIN_HYBRID_PERCENT: u64 = 95;

/// How soon after the sidecar prints `listening on` hybrid ranking must be back: the filter's
/// circuit breaker lets a probe through on its schedule and closes on its success, so a few
/// seconds plus one query embedding on a busy 2-core machine; 10 s bounds that with room, and
/// tells it from the minutes (15-284 s) the run before this criterion showed.
pub const MAX_RECOVERY: Duration = Duration::from_secs(10);

/// The definitions above, for the report (Markdown).
pub const DEFINITIONS: &str = "Definitions: the sidecar is *up* from the moment it printed `listening on` until it is killed (SIGKILL sent); a search is made while it is up when it *started* then. *Hybrid share*: of the searches (`tool_search` and `POST /mcp/search`, failed ones included) made while the sidecar is up, counted from the start of the first search of the load answered `hybrid` (the catalogs were all embedded in the warm-up), those whose answer's ranking is `hybrid` with no fallback. *Hybrid back*: per restart, from `listening on` to the start of the first search of that up window answered `hybrid`; a window with no search is not judged, nor one that ended (killed again, or the run ended) less than the limit after `listening on` without a hybrid answer; searches but no hybrid answer in a longer window fail. *Change embedded* (not judged): per catalog change and namespace, from the upstream's answer to the swap (tools replaced, `list_changed` sent) to the start of the first search in the namespace whose `_meta.embedded` equals its `candidates`, after an answer had shown the change (`embedded` below `candidates`: before the filter has the new catalog it answers from the old one, all embedded); measured only with the sidecar up throughout and the catalog all embedded just before the change.";

/// A window in which the sidecar was up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Up {
    /// When it printed `listening on` (for its first start: the start of the load).
    pub from: Instant,
    /// When it was killed; `None`: up to the end of the run.
    pub until: Option<Instant>,
    /// After a restart (not its first start, before the load).
    pub restart: bool,
}

impl Up {
    pub fn contains(&self, at: Instant) -> bool {
        at >= self.from && self.until.is_none_or(|u| at < u)
    }
}

/// The sidecar's up windows from the fault events; it was up (listening) at `start`.
pub fn up_windows(events: &[Event], start: Instant) -> Vec<Up> {
    let mut out = vec![Up {
        from: start,
        until: None,
        restart: false,
    }];
    for e in events {
        match e.what {
            What::EmbedderDown => {
                if let Some(last) = out.last_mut() {
                    if last.until.is_none() {
                        last.until = Some(e.at);
                    }
                }
            }
            What::EmbedderUp if out.last().is_none_or(|l| l.until.is_some()) => {
                out.push(Up {
                    from: e.at,
                    until: None,
                    restart: true,
                });
            }
            _ => {}
        }
    }
    out
}

/// One search, as the criteria see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// When the search was sent.
    pub at: Instant,
    pub namespace: usize,
    /// Answered with ranking `hybrid` and no fallback (a failed search is not).
    pub hybrid: bool,
    /// The answer's `candidates` and `embedded`, when it reports them.
    pub candidates: Option<u64>,
    pub embedded: Option<u64>,
}

impl Answer {
    /// Whether every candidate had a vector; `None` when the answer does not say (BM25, a
    /// fallback before vectors were looked at, a filter that does not report `embedded`).
    pub fn all_embedded(&self) -> Option<bool> {
        Some(self.embedded? >= self.candidates?)
    }
}

/// The searches of the load, by the time they were sent.
pub fn answers(records: &[Record]) -> Vec<Answer> {
    let mut out: Vec<Answer> = records
        .iter()
        .filter(|r| matches!(r.kind, Kind::Search | Kind::HttpSearch))
        .map(|r| match &r.outcome {
            Outcome::Ok {
                strategy,
                candidates,
                embedded,
            } => Answer {
                at: r.start,
                namespace: r.upstream,
                hybrid: strategy.as_deref() == Some("hybrid"),
                candidates: *candidates,
                embedded: *embedded,
            },
            Outcome::Failed { .. } => Answer {
                at: r.start,
                namespace: r.upstream,
                hybrid: false,
                candidates: None,
                embedded: None,
            },
        })
        .collect();
    out.sort_by_key(|a| a.at);
    out
}

/// Criterion 1: hybrid answers among the searches made while the sidecar was up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HybridShare {
    /// The start of the first search answered `hybrid` (counting starts there); `None`: none was.
    pub from: Option<Instant>,
    pub searches: u64,
    pub hybrid: u64,
}

impl HybridShare {
    pub fn percent(&self) -> Option<f64> {
        (self.searches > 0).then(|| 100.0 * self.hybrid as f64 / self.searches as f64)
    }

    /// At least [`MIN_HYBRID_PERCENT`] (no search at all fails: nothing was shown).
    pub fn passed(&self) -> bool {
        self.searches > 0 && self.hybrid * 100 >= MIN_HYBRID_PERCENT * self.searches
    }
}

pub fn hybrid_share(up: &[Up], answers: &[Answer]) -> HybridShare {
    let from = answers.iter().filter(|a| a.hybrid).map(|a| a.at).min();
    let (mut searches, mut hybrid) = (0, 0);
    for a in answers {
        if from.is_some_and(|f| a.at < f) || !up.iter().any(|w| w.contains(a.at)) {
            continue;
        }
        searches += 1;
        hybrid += u64::from(a.hybrid);
    }
    HybridShare {
        from,
        searches,
        hybrid,
    }
}

/// Criterion 2, for one restart of the sidecar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// The first hybrid answer of the up window was asked this long after `listening on`.
    Back(Duration),
    /// No search was made in the up window (not judged).
    NoSearch,
    /// Searches, none hybrid, in an up window that ended this soon, under [`MAX_RECOVERY`]
    /// (not judged).
    Cut(Duration),
    /// Searches, none hybrid, in an up window of at least [`MAX_RECOVERY`].
    Never {
        /// The window ended with a kill (else with the run).
        killed: bool,
    },
}

impl Recovery {
    /// `None`: not judged.
    pub fn passed(&self) -> Option<bool> {
        match self {
            Recovery::Back(d) => Some(*d <= MAX_RECOVERY),
            Recovery::Never { .. } => Some(false),
            Recovery::NoSearch | Recovery::Cut(_) => None,
        }
    }

    pub fn text(&self) -> String {
        match self {
            Recovery::Back(d) => format!("{:.1} s", d.as_secs_f64()),
            Recovery::NoSearch => "no search while it was up (not judged)".to_owned(),
            Recovery::Cut(d) => format!(
                "not yet when its window ended {:.1} s later (not judged)",
                d.as_secs_f64()
            ),
            Recovery::Never { killed: true } => "never (before it was killed again)".to_owned(),
            Recovery::Never { killed: false } => "never (before the end)".to_owned(),
        }
    }
}

/// One restart of the sidecar and how hybrid ranking came back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restart {
    /// When it printed `listening on`.
    pub listening: Instant,
    pub recovery: Recovery,
}

/// Every restart's recovery; `end` is the end of the run.
pub fn recoveries(up: &[Up], answers: &[Answer], end: Instant) -> Vec<Restart> {
    up.iter()
        .filter(|w| w.restart)
        .map(|w| {
            let in_window: Vec<&Answer> = answers.iter().filter(|a| w.contains(a.at)).collect();
            let window = w.until.unwrap_or(end).saturating_duration_since(w.from);
            let recovery = match in_window.iter().find(|a| a.hybrid) {
                Some(a) => Recovery::Back(a.at.saturating_duration_since(w.from)),
                None if in_window.is_empty() => Recovery::NoSearch,
                None if window < MAX_RECOVERY => Recovery::Cut(window),
                None => Recovery::Never {
                    killed: w.until.is_some(),
                },
            };
            Restart {
                listening: w.from,
                recovery,
            }
        })
        .collect()
}

/// One namespace's part of a catalog change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub version: usize,
    pub namespace: usize,
    /// When the change was made (the event).
    pub at: Instant,
    /// When the upstream answered the swap, or why it did not swap.
    pub swapped: std::result::Result<Instant, String>,
}

/// Every namespace's part of every catalog change, in order.
pub fn changes(events: &[Event]) -> Vec<Change> {
    let mut out = Vec::new();
    for e in events {
        if let What::CatalogChanged(version, results) = &e.what {
            for (namespace, r) in results.iter().enumerate() {
                out.push(Change {
                    version: *version,
                    namespace,
                    at: e.at,
                    swapped: r.as_ref().map(|s| s.at).map_err(Clone::clone),
                });
            }
        }
    }
    out
}

/// How long one change took to be embedded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Embedding {
    /// From the swap to the first search answered with every candidate embedded.
    Took(Duration),
    /// With the sidecar up throughout, still not all embedded when the next change came, this
    /// long after.
    NotBefore(Duration),
    /// Not measured, and why.
    NotMeasured(String),
}

impl Embedding {
    pub fn text(&self) -> String {
        match self {
            Embedding::Took(d) => format!("{:.2} s", d.as_secs_f64()),
            Embedding::NotBefore(d) => {
                format!("> {:.1} s (not before the next change)", d.as_secs_f64())
            }
            Embedding::NotMeasured(why) => format!("not measured: {why}"),
        }
    }
}

/// How long `change` took to be embedded (see the module's definitions); `next` is the next
/// change in its namespace, `end` the end of the run.
pub fn embedding(
    change: &Change,
    next: Option<Instant>,
    up: &[Up],
    answers: &[Answer],
    end: Instant,
) -> Embedding {
    let not = |why: &str| Embedding::NotMeasured(why.to_owned());
    let t = match &change.swapped {
        Ok(t) => *t,
        Err(e) => return Embedding::NotMeasured(format!("no swap ({e})")),
    };
    let Some(w) = up.iter().find(|w| w.contains(t)) else {
        return not("the sidecar was down at the change");
    };
    let mine: Vec<&Answer> = answers
        .iter()
        .filter(|a| a.namespace == change.namespace)
        .collect();
    let before = mine
        .iter()
        .filter(|a| a.at < t && w.contains(a.at))
        .filter_map(|a| a.all_embedded())
        .next_back();
    match before {
        None => return not("no vector-ranked answer between the sidecar's start and the change"),
        Some(false) => return not("the catalog was not all embedded when it changed"),
        Some(true) => {}
    }
    // Until the next change, the next kill or the end, whichever comes first.
    let mut limits = vec![(end, "end")];
    limits.extend(next.map(|n| (n, "next")));
    limits.extend(w.until.map(|k| (k, "kill")));
    let (limit, why) = limits
        .into_iter()
        .min_by_key(|(at, _)| *at)
        .unwrap_or((end, "end"));
    let after = limit.saturating_duration_since(t).as_secs_f64();
    let within: Vec<&Answer> = mine
        .into_iter()
        .filter(|a| a.at >= t && a.at < limit)
        .collect();
    let Some(shown) = within.iter().find(|a| a.all_embedded() == Some(false)) else {
        return Embedding::NotMeasured(if within.iter().any(|a| a.all_embedded().is_some()) {
            "not seen: every vector-ranked answer after it had all candidates embedded (the filter took it and embedded it between two searches, or did not take it)".to_owned()
        } else {
            "no vector-ranked answer after it".to_owned()
        });
    };
    let done = within
        .iter()
        .find(|a| a.at > shown.at && a.all_embedded() == Some(true));
    match (done, why) {
        (Some(a), _) => Embedding::Took(a.at.saturating_duration_since(t)),
        (None, "next") => Embedding::NotBefore(limit.saturating_duration_since(t)),
        (None, "kill") => Embedding::NotMeasured(format!(
            "the sidecar was killed {after:.1} s after it, before it was all embedded"
        )),
        (None, _) => Embedding::NotMeasured(format!(
            "the run ended {after:.1} s after it, before it was all embedded"
        )),
    }
}

/// Every change's embedding: (change, result), in the order of the changes.
pub fn embeddings(
    changes: &[Change],
    up: &[Up],
    answers: &[Answer],
    end: Instant,
) -> Vec<(Change, Embedding)> {
    changes
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let next = changes
                .iter()
                .skip(i + 1)
                .find(|n| n.namespace == c.namespace)
                .map(|n| n.swapped.clone().unwrap_or(n.at));
            (c.clone(), embedding(c, next, up, answers, end))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::chaos::Swap;

    fn secs(t0: Instant, s: f64) -> Instant {
        t0 + Duration::from_secs_f64(s)
    }

    fn event(t0: Instant, s: f64, what: What) -> Event {
        Event {
            at: secs(t0, s),
            what,
        }
    }

    fn answer(t0: Instant, s: f64, hybrid: bool) -> Answer {
        Answer {
            at: secs(t0, s),
            namespace: 0,
            hybrid,
            candidates: hybrid.then_some(120),
            embedded: hybrid.then_some(120),
        }
    }

    /// `n` searches 0.1 s apart from `from` s, of which the first `hybrid` are hybrid.
    fn searches(t0: Instant, from: f64, n: usize, hybrid: usize) -> Vec<Answer> {
        (0..n)
            .map(|i| answer(t0, from + 0.1 * i as f64, i < hybrid))
            .collect()
    }

    /// Killed at 45 s, `listening on` again at 65 s, killed at 135 s; the run ends at 150 s.
    fn timeline(t0: Instant) -> Vec<Up> {
        up_windows(
            &[
                event(t0, 45.0, What::EmbedderDown),
                event(t0, 65.0, What::EmbedderUp),
                event(t0, 135.0, What::EmbedderDown),
            ],
            t0,
        )
    }

    #[test]
    fn up_windows_run_from_listening_to_the_kill() {
        let t0 = Instant::now();
        let up = timeline(t0);
        assert_eq!(up.len(), 2);
        assert!(up[0].contains(secs(t0, 44.9)) && !up[0].contains(secs(t0, 45.0)));
        assert!(!up[0].restart && up[1].restart);
        assert!(up[1].contains(secs(t0, 65.0)) && up[1].contains(secs(t0, 134.9)));
        assert!(!up.iter().any(|w| w.contains(secs(t0, 50.0))));
        assert!(!up.iter().any(|w| w.contains(secs(t0, 140.0))));
    }

    #[test]
    fn a_run_at_96_percent_hybrid_passes_and_one_at_90_fails() {
        let t0 = Instant::now();
        let up = timeline(t0);
        // 100 searches while up (first hybrid at 1 s), plus non-hybrid ones that must not
        // count: before the first hybrid answer, and while the sidecar is down.
        let run = |hybrid: usize| {
            let mut a = vec![answer(t0, 0.5, false)];
            a.extend(searches(t0, 1.0, 100, hybrid));
            a.extend(searches(t0, 50.0, 50, 0));
            a.extend(searches(t0, 140.0, 50, 0));
            a.sort_by_key(|a| a.at);
            hybrid_share(&up, &a)
        };
        let passing = run(96);
        assert_eq!((passing.searches, passing.hybrid), (100, 96));
        assert_eq!(passing.from, Some(secs(t0, 1.0)));
        assert!(passing.passed());
        let failing = run(90);
        assert_eq!((failing.searches, failing.hybrid), (100, 90));
        assert!(!failing.passed());
        assert!(run(95).passed() && !run(94).passed());
        // No hybrid answer at all: every search while up counts, and it fails.
        let none = hybrid_share(&up, &searches(t0, 1.0, 10, 0));
        assert_eq!((none.from, none.searches, none.hybrid), (None, 10, 0));
        assert!(!none.passed());
        assert!(!hybrid_share(&up, &[]).passed());
    }

    /// A recorded search: searches sent while the sidecar is down are ignored by the window.
    fn recovery(t0: Instant, back_after: Option<f64>) -> Recovery {
        let up = timeline(t0);
        let mut a = searches(t0, 50.0, 100, 0);
        // Searches every 0.5 s from `listening on`, BM25 until `back_after`.
        for i in 0..100 {
            let s = 0.5 * i as f64;
            a.push(answer(
                t0,
                65.0 + s,
                back_after.is_some_and(|after| s >= after),
            ));
        }
        let r = recoveries(&up, &a, secs(t0, 150.0));
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].listening, secs(t0, 65.0));
        r[0].recovery
    }

    #[test]
    fn hybrid_back_4_s_after_a_restart_passes_12_s_fails_never_fails() {
        let t0 = Instant::now();
        let four = recovery(t0, Some(4.0));
        assert_eq!(four, Recovery::Back(Duration::from_secs(4)));
        assert_eq!(four.passed(), Some(true));
        let twelve = recovery(t0, Some(12.0));
        assert_eq!(twelve, Recovery::Back(Duration::from_secs(12)));
        assert_eq!(twelve.passed(), Some(false));
        let never = recovery(t0, None);
        assert_eq!(never, Recovery::Never { killed: true });
        assert_eq!(never.passed(), Some(false));
        assert_eq!(recovery(t0, Some(10.0)).passed(), Some(true));
    }

    #[test]
    fn a_restart_with_no_search_or_a_short_window_is_reported_not_judged() {
        let t0 = Instant::now();
        let up = timeline(t0);
        let r = recoveries(&up, &searches(t0, 1.0, 10, 10), secs(t0, 150.0));
        assert_eq!(r[0].recovery, Recovery::NoSearch);
        assert_eq!(r[0].recovery.passed(), None);
        // Restarted 5 s before the end of the run, BM25 throughout: not judged.
        let up = up_windows(
            &[
                event(t0, 45.0, What::EmbedderDown),
                event(t0, 95.0, What::EmbedderUp),
            ],
            t0,
        );
        let r = recoveries(&up, &searches(t0, 95.0, 40, 0), secs(t0, 100.0));
        assert_eq!(r[0].recovery, Recovery::Cut(Duration::from_secs(5)));
        assert_eq!(r[0].recovery.passed(), None);
        // The same 15 s before the end: never, and a failure.
        let r = recoveries(&up, &searches(t0, 95.0, 40, 0), secs(t0, 110.0));
        assert_eq!(r[0].recovery, Recovery::Never { killed: false });
        assert_eq!(r[0].recovery.passed(), Some(false));
    }

    fn vectors(t0: Instant, s: f64, embedded: Option<u64>) -> Answer {
        Answer {
            at: secs(t0, s),
            namespace: 0,
            hybrid: embedded.is_some(),
            candidates: Some(120),
            embedded,
        }
    }

    fn change(t0: Instant, at: f64) -> Change {
        Change {
            version: 1,
            namespace: 0,
            at: secs(t0, at),
            swapped: Ok(secs(t0, at + 0.01)),
        }
    }

    #[test]
    fn a_change_is_embedded_at_the_first_full_answer_after_it_showed() {
        let t0 = Instant::now();
        let up = timeline(t0);
        let end = secs(t0, 150.0);
        // All embedded before; still the old catalog (all embedded) just after the change;
        // then 110 of 120 from 30.5 s; all from 31.2 s.
        let mut a = vec![vectors(t0, 29.0, Some(120)), vectors(t0, 30.2, Some(120))];
        a.extend((0..6).map(|i| vectors(t0, 30.5 + 0.1 * i as f64, Some(110))));
        a.push(vectors(t0, 31.2, Some(120)));
        // Another namespace's answers do not count.
        a.push(Answer {
            namespace: 1,
            ..vectors(t0, 30.7, Some(120))
        });
        a.sort_by_key(|a| a.at);
        let c = change(t0, 30.0);
        let near = |d: &Duration, s: f64| (d.as_secs_f64() - s).abs() < 1e-6;
        let took = embedding(&c, Some(secs(t0, 60.0)), &up, &a, end);
        assert!(
            matches!(&took, Embedding::Took(d) if near(d, 1.19)),
            "{took:?}"
        );
        // Never all embedded before the next change: a lower bound.
        let partial: Vec<Answer> = a
            .iter()
            .filter(|x| x.at < secs(t0, 31.0))
            .copied()
            .collect();
        let open = embedding(&c, Some(secs(t0, 40.0)), &up, &partial, end);
        assert!(
            matches!(&open, Embedding::NotBefore(d) if near(d, 9.99)),
            "{open:?}"
        );
        // The change never showed (every answer all embedded): not measured.
        let full = vec![vectors(t0, 29.0, Some(120)), vectors(t0, 31.0, Some(120))];
        assert!(matches!(
            embedding(&c, None, &up, &full, end),
            Embedding::NotMeasured(_)
        ));
        // Killed at 45 s before it was all embedded: not measured.
        let c40 = change(t0, 40.0);
        let killed = vec![vectors(t0, 39.0, Some(120)), vectors(t0, 41.0, Some(110))];
        assert!(matches!(
            embedding(&c40, None, &up, &killed, end),
            Embedding::NotMeasured(why) if why.contains("killed")
        ));
        // Changed while the sidecar was down: not measured.
        assert!(matches!(
            embedding(&change(t0, 50.0), None, &up, &a, end),
            Embedding::NotMeasured(why) if why.contains("down")
        ));
        // The catalog was not all embedded before the change: not measured.
        let pending = vec![vectors(t0, 29.0, Some(110)), vectors(t0, 31.0, Some(120))];
        assert!(matches!(
            embedding(&c, None, &up, &pending, end),
            Embedding::NotMeasured(why) if why.contains("not all embedded")
        ));
        // A filter that does not report `embedded`.
        let old: Vec<Answer> = a
            .iter()
            .map(|x| Answer {
                embedded: None,
                ..*x
            })
            .collect();
        assert!(matches!(
            embedding(&c, None, &up, &old, end),
            Embedding::NotMeasured(_)
        ));
    }

    #[test]
    fn changes_and_their_next_come_from_the_events() {
        let t0 = Instant::now();
        let swap = |s: f64| {
            Ok(Swap {
                tools: 121,
                notified: 3,
                at: secs(t0, s),
            })
        };
        let events = vec![
            event(
                t0,
                30.0,
                What::CatalogChanged(1, vec![swap(30.01), Err("stopped".to_owned())]),
            ),
            event(
                t0,
                60.0,
                What::CatalogChanged(2, vec![swap(60.01), swap(60.02)]),
            ),
        ];
        let c = changes(&events);
        assert_eq!(c.len(), 4);
        assert_eq!(c[1].swapped, Err("stopped".to_owned()));
        let up = up_windows(&[], t0);
        let e = embeddings(&c, &up, &[], secs(t0, 90.0));
        assert!(matches!(&e[1].1, Embedding::NotMeasured(why) if why.contains("stopped")));
        assert_eq!(e.len(), 4);
    }
}
