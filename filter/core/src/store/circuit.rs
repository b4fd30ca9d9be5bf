//! The circuit breaker of query embeddings, shared by every worker: a service that keeps failing
//! (down, hung, answering garbage) is not asked again for a while, so that searches answer by
//! BM25 at once instead of each waiting for its timeout. After a backoff one search probes it
//! (half-open); its success closes the circuit, its failure opens it again for longer.
//!
//! The circuit also tells every worker when the service came back: any success after a failure
//! (a query's or a background batch's) stamps `recovered_ms`, and a worker whose background
//! embedding is backing off retries at once when it sees a recovery newer than its failure.

use super::{keys, SharedData, StoreError};
use serde::{Deserialize, Serialize};

const FIRST_BACKOFF_MS: u64 = 1_000;
/// The longest the circuit stays open before a search probes again. A probe costs one search
/// at most `query_timeout` (a refused connection costs nothing), while every second the circuit
/// stays open after the service came back is a second of BM25 answers: a sidecar restarted
/// after a crash is ranking again within this (plus a quarter of jitter).
pub const MAX_CIRCUIT_BACKOFF_MS: u64 = 4_000;
const MAX_CAS_RETRIES: usize = 8;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    #[default]
    Closed,
    Open,
    HalfOpen,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::HalfOpen => "half_open",
        }
    }
}

/// The shared state (one small key).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Circuit {
    pub state: State,
    /// Consecutive failures while closed.
    #[serde(default)]
    pub failures: u32,
    /// When the state was entered (ms since the epoch).
    #[serde(default)]
    pub since_ms: u64,
    /// Open: when a probe may go. Half-open: until when the probe is given (a worker that took
    /// it and vanished does not keep the circuit half-open for ever).
    #[serde(default)]
    pub until_ms: u64,
    /// Times opened in a row without a success (the backoff doubles with each).
    #[serde(default)]
    pub opens: u32,
    /// Why it opened.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The last failure of any embeddings call, background batches included.
    #[serde(default)]
    pub failed_ms: u64,
    /// The first success after the last failure.
    #[serde(default)]
    pub recovered_ms: u64,
}

/// What a search may do about its query's embedding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    Call,
    /// Call as the probe of a half-open circuit.
    Probe,
    /// Do not call: the circuit is open (the text says why and until when).
    Skip(String),
}

/// A change of state, for the stats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    Opened,
    HalfOpened,
    Closed,
}

impl Transition {
    pub fn stat(self) -> &'static str {
        match self {
            Transition::Opened => crate::stats::EMBEDDINGS_CIRCUIT_OPENED,
            Transition::HalfOpened => crate::stats::EMBEDDINGS_CIRCUIT_HALF_OPEN,
            Transition::Closed => crate::stats::EMBEDDINGS_CIRCUIT_CLOSED,
        }
    }
}

pub fn read(host: &dyn SharedData) -> Circuit {
    host.get(keys::EMBEDDINGS_CIRCUIT)
        .ok()
        .and_then(|(v, _)| v)
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Changes the shared circuit with compare-and-swap; `change` says what it did (nothing is
/// written when it did nothing).
fn update<T>(
    host: &dyn SharedData,
    mut change: impl FnMut(&mut Circuit) -> (bool, T),
) -> Result<T, StoreError> {
    for _ in 0..MAX_CAS_RETRIES {
        let (data, cas) = host.get(keys::EMBEDDINGS_CIRCUIT)?;
        let mut circuit: Circuit = data
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        let (changed, out) = change(&mut circuit);
        if !changed {
            return Ok(out);
        }
        let bytes = serde_json::to_vec(&circuit).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        match host.set(keys::EMBEDDINGS_CIRCUIT, &bytes, cas) {
            Ok(()) => return Ok(out),
            Err(StoreError::CasMismatch) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(StoreError::Contended)
}

/// Whether a search may call the service now. A half-open circuit gives its probe to one
/// search across workers; the others skip until it answers.
pub fn gate(host: &dyn SharedData, now: u64, probe_ms: u64) -> (Gate, Option<Transition>) {
    let circuit = read(host);
    match circuit.state {
        State::Closed => return (Gate::Call, None),
        State::Open | State::HalfOpen if now < circuit.until_ms => {
            let wait = circuit.until_ms.saturating_sub(now);
            return (
                Gate::Skip(format!(
                    "the embeddings service failed {} times in a row ({}); the circuit is {} for {wait} ms more",
                    circuit.failures.max(1),
                    circuit.reason,
                    circuit.state.name()
                )),
                None,
            );
        }
        State::Open | State::HalfOpen => {}
    }
    let took = update(host, |c| {
        let due = c.state != State::Closed && now >= c.until_ms;
        if due {
            c.state = State::HalfOpen;
            c.since_ms = now;
            c.until_ms = now.saturating_add(probe_ms);
        }
        (due, due)
    });
    match took {
        Ok(true) => (Gate::Probe, Some(Transition::HalfOpened)),
        // Another search took the probe (or the circuit closed meanwhile).
        Ok(false) if read(host).state == State::Closed => (Gate::Call, None),
        _ => (
            Gate::Skip("another search is probing the embeddings service".to_string()),
            None,
        ),
    }
}

/// The outcome of a query embedding: a success closes the circuit; `threshold` consecutive
/// failures (or a failed probe) open it, for a backoff that doubles per opening up to a minute,
/// jittered so that replicas do not probe in step.
/// `jitter`: a random number.
pub fn record(
    host: &dyn SharedData,
    now: u64,
    jitter: u64,
    failure: Option<&str>,
    threshold: u32,
) -> Option<Transition> {
    update(host, |c| match failure {
        None => succeeded(c, now),
        Some(reason) => {
            c.failed_ms = now;
            c.failures = c.failures.saturating_add(1);
            let opens = match c.state {
                State::Closed if c.failures >= threshold => true,
                State::HalfOpen => true,
                // Open already (a call that started before it opened): nothing more to do.
                State::Closed | State::Open => false,
            };
            if opens {
                c.opens = c.opens.saturating_add(1);
                let exp = c.opens.saturating_sub(1).min(16);
                let base = FIRST_BACKOFF_MS
                    .saturating_mul(1u64 << exp)
                    .min(MAX_CIRCUIT_BACKOFF_MS);
                c.state = State::Open;
                c.since_ms = now;
                c.until_ms = now
                    .saturating_add(base)
                    .saturating_add(jitter % (base / 4 + 1));
                c.reason = reason.to_string();
            }
            (true, opens.then_some(Transition::Opened))
        }
    })
    .ok()
    .flatten()
}

/// A success: the circuit closes, and a success after a failure is stamped as a recovery.
fn succeeded(c: &mut Circuit, now: u64) -> (bool, Option<Transition>) {
    let recovering = c.failed_ms >= c.recovered_ms && c.failed_ms > 0;
    if c.state == State::Closed && c.failures == 0 && !recovering {
        return (false, None);
    }
    let was = c.state;
    *c = Circuit {
        since_ms: if was == State::Closed {
            c.since_ms
        } else {
            now
        },
        failed_ms: c.failed_ms,
        recovered_ms: if recovering {
            now.max(c.failed_ms + 1)
        } else {
            c.recovered_ms
        },
        ..Circuit::default()
    };
    (true, (was != State::Closed).then_some(Transition::Closed))
}

/// The outcome of a background (tool) embedding batch. A failure is noted, not counted toward
/// opening the circuit: one batch can fail for its own reasons (its size, one text) while
/// queries work. A success proves the service answers: it closes the circuit like a probe.
pub fn record_background(host: &dyn SharedData, now: u64, failed: bool) -> Option<Transition> {
    update(host, |c| {
        if failed {
            c.failed_ms = now;
            (true, None)
        } else {
            succeeded(c, now)
        }
    })
    .ok()
    .flatten()
}

/// When the service last recovered (0: never failed, or never recovered since).
pub fn recovered_ms(host: &dyn SharedData) -> u64 {
    read(host).recovered_ms
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemorySharedData;

    struct Host {
        shared: MemorySharedData,
        now: std::cell::Cell<u64>,
    }

    impl Host {
        fn new() -> Self {
            Host {
                shared: MemorySharedData::default(),
                now: std::cell::Cell::new(0),
            }
        }
    }

    fn at(host: &Host, ms: u64) {
        host.now.set(ms);
    }

    fn gate(host: &Host, probe_ms: u64) -> (Gate, Option<Transition>) {
        super::gate(&host.shared, host.now.get(), probe_ms)
    }

    fn record(host: &Host, failure: Option<&str>, threshold: u32) -> Option<Transition> {
        super::record(&host.shared, host.now.get(), 12_345, failure, threshold)
    }

    fn read(host: &Host) -> Circuit {
        super::read(&host.shared)
    }

    #[test]
    fn opens_after_the_threshold_probes_once_and_closes_on_success() {
        let host = Host::new();
        at(&host, 10_000);
        assert_eq!(gate(&host, 500).0, Gate::Call);
        assert_eq!(record(&host, Some("timeout"), 3), None);
        assert_eq!(record(&host, Some("timeout"), 3), None);
        assert_eq!(gate(&host, 500).0, Gate::Call, "two failures: still closed");
        assert_eq!(record(&host, Some("timeout"), 3), Some(Transition::Opened));
        let c = read(&host);
        assert_eq!(c.state, State::Open);
        assert!((11_000..=11_250).contains(&c.until_ms), "{c:?}");
        let Gate::Skip(why) = gate(&host, 500).0 else {
            panic!()
        };
        assert!(why.contains("3 times in a row (timeout)"), "{why}");
        at(&host, c.until_ms);
        assert_eq!(
            gate(&host, 500),
            (Gate::Probe, Some(Transition::HalfOpened))
        );
        // One probe across workers: the next search skips while it is out.
        assert!(matches!(gate(&host, 500).0, Gate::Skip(_)));
        assert_eq!(record(&host, None, 3), Some(Transition::Closed));
        assert_eq!(read(&host).state, State::Closed);
        assert_eq!(gate(&host, 500).0, Gate::Call);
    }

    #[test]
    fn a_failed_probe_reopens_for_longer_up_to_the_maximum() {
        let host = Host::new();
        at(&host, 0);
        record(&host, Some("down"), 1);
        let mut last = read(&host).until_ms;
        let mut waits = Vec::new();
        for _ in 0..10 {
            at(&host, last);
            assert_eq!(gate(&host, 500).0, Gate::Probe);
            assert_eq!(record(&host, Some("down"), 1), Some(Transition::Opened));
            let c = read(&host);
            waits.push(c.until_ms - last);
            last = c.until_ms;
        }
        assert!(waits.windows(2).take(1).all(|w| w[1] > w[0]), "{waits:?}");
        assert!(
            waits.iter().all(|&w| w <= MAX_CIRCUIT_BACKOFF_MS * 5 / 4),
            "{waits:?}"
        );
    }

    #[test]
    fn a_success_after_any_failure_is_stamped_as_a_recovery() {
        let host = Host::new();
        at(&host, 1_000);
        assert_eq!(record(&host, None, 3), None);
        assert_eq!(
            read(&host),
            Circuit::default(),
            "a healthy success writes nothing"
        );
        // A background batch fails: noted, the circuit stays closed for queries.
        assert_eq!(super::record_background(&host.shared, 2_000, true), None);
        assert_eq!(
            (read(&host).state, read(&host).failed_ms),
            (State::Closed, 2_000)
        );
        at(&host, 3_000);
        assert_eq!(record(&host, None, 3), None);
        assert_eq!(super::recovered_ms(&host.shared), 3_000);
        // Queries fail until the circuit opens; a background batch's success closes it.
        at(&host, 4_000);
        for _ in 0..3 {
            record(&host, Some("down"), 3);
        }
        assert_eq!(read(&host).state, State::Open);
        assert_eq!(
            super::record_background(&host.shared, 4_500, false),
            Some(Transition::Closed)
        );
        let c = read(&host);
        assert_eq!((c.state, c.recovered_ms), (State::Closed, 4_500));
        assert_eq!(gate(&host, 500).0, Gate::Call);
        // Later successes write nothing more.
        assert_eq!(super::record_background(&host.shared, 5_000, false), None);
        assert_eq!(super::recovered_ms(&host.shared), 4_500);
    }

    #[test]
    fn a_probe_whose_worker_vanished_is_given_again() {
        let host = Host::new();
        at(&host, 0);
        record(&host, Some("down"), 1);
        at(&host, 5_000);
        assert_eq!(gate(&host, 500).0, Gate::Probe);
        at(&host, 5_600);
        assert_eq!(gate(&host, 500).0, Gate::Probe);
    }
}
