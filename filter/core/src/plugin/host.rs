//! What the core needs from the process it runs in, in the host's own primitives: shared data
//! with compare-and-swap, a clock, a log, counters and an outgoing HTTP call. Envoy provides
//! them through proxy-wasm (the glue crate); `MemoryHost` provides them in process memory for
//! native tests and tools.

pub use crate::call::HttpCall;
use crate::store::{MemorySharedData, SharedData, StoreError};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

/// Log levels the host understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

/// The host's primitives. Shared data is the one memory every worker (VM) of a host shares.
pub trait Host: SharedData {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
    fn log(&self, level: Level, message: &str);
    /// Adds `by` to the counter `stat` (one of [`crate::stream::STATS`]).
    fn increment(&self, stat: &'static str, by: u64);
    /// Starts a call; its answer comes back with the returned token. `Err`: the host's reason
    /// it could not be started (an unknown cluster, say).
    fn http_call(&self, call: HttpCall) -> Result<u32, String>;
    /// A random number (jitter, so that many replicas do not retry in step).
    fn random_u64(&self) -> u64;
}

/// A host in process memory: shared data with the host's CAS rules, a settable clock, the log
/// and counters kept for inspection, and calls queued for the test to answer.
#[derive(Default)]
pub struct MemoryHost {
    pub shared: MemorySharedData,
    pub clock_ms: Cell<u64>,
    pub logs: RefCell<Vec<(Level, String)>>,
    pub counters: RefCell<BTreeMap<&'static str, u64>>,
    /// Calls made and not yet answered, with their tokens.
    pub calls: RefCell<Vec<(u32, HttpCall)>>,
    next_token: Cell<u32>,
    /// Make `http_call` fail with this reason (an unknown cluster, say).
    pub refuse_calls: RefCell<Option<String>>,
    /// The state of a deterministic generator (SplitMix64): tests repeat exactly.
    pub random: Cell<u64>,
}

impl MemoryHost {
    pub fn counter(&self, stat: &str) -> u64 {
        self.counters.borrow().get(stat).copied().unwrap_or(0)
    }

    /// The calls made so far, taken out of the queue.
    pub fn take_calls(&self) -> Vec<(u32, HttpCall)> {
        std::mem::take(&mut *self.calls.borrow_mut())
    }

    pub fn warnings(&self) -> Vec<String> {
        self.logs
            .borrow()
            .iter()
            .filter(|(level, _)| *level <= Level::Warn)
            .map(|(_, m)| m.clone())
            .collect()
    }
}

impl SharedData for MemoryHost {
    fn get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), StoreError> {
        self.shared.get(key)
    }

    fn set(&self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), StoreError> {
        self.shared.set(key, value, cas)
    }
}

impl Host for MemoryHost {
    fn now_ms(&self) -> u64 {
        self.clock_ms.get()
    }

    fn log(&self, level: Level, message: &str) {
        self.logs.borrow_mut().push((level, message.to_string()));
    }

    fn increment(&self, stat: &'static str, by: u64) {
        *self.counters.borrow_mut().entry(stat).or_default() += by;
    }

    fn http_call(&self, call: HttpCall) -> Result<u32, String> {
        if let Some(reason) = self.refuse_calls.borrow().clone() {
            return Err(reason);
        }
        let token = self.next_token.get().wrapping_add(1);
        self.next_token.set(token);
        self.calls.borrow_mut().push((token, call));
        Ok(token)
    }

    fn random_u64(&self) -> u64 {
        let next = self.random.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        self.random.set(next);
        let mut z = next;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
