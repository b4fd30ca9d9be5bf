//! What one Envoy process holds for all its workers: shared data, shared queues, stats, the
//! clock. Every `Vm` made from a [`Host`] is one worker's VM and sees the same store.

use crate::abi::{MetricType, Status};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

/// A stat as Envoy keeps it: one per name, whichever VM defined it.
#[derive(Debug, Clone, PartialEq)]
pub enum MetricValue {
    Counter(u64),
    Gauge(i64),
    /// Values recorded, and the first [`HISTOGRAM_VALUES_KEPT`] of them: Envoy keeps a
    /// histogram in bounded memory, so a long run (a benchmark loop) does not grow it either.
    Histogram {
        count: u64,
        values: Vec<u64>,
    },
}

/// The values of a histogram the shim keeps for tests to read.
pub const HISTOGRAM_VALUES_KEPT: usize = 1_024;

#[derive(Debug, Default)]
pub(crate) struct Queue {
    pub data: VecDeque<Vec<u8>>,
    /// The VM and root context that registered the queue last (they get `on_queue_ready`).
    pub owner_vm: usize,
    pub owner_context: u32,
}

#[derive(Debug)]
pub(crate) struct Store {
    /// vm_id -> key -> (value, cas). Keyed by vm_id as in proxy-wasm-cpp-host's `SharedData`.
    pub shared: HashMap<String, HashMap<String, (Vec<u8>, u32)>>,
    next_cas: u32,
    pub queue_tokens: HashMap<(String, String), u32>,
    pub queues: HashMap<u32, Queue>,
    next_queue_token: u32,
    /// (vm, context, token) of `on_queue_ready` calls not delivered yet.
    pub queue_ready: Vec<(usize, u32, u32)>,
    /// Stat name → its slot in `metric_values` (slots are never reused: a VM's metric id
    /// resolves to its slot once, as Envoy resolves it to the stat, with no lookup by name on a
    /// hostcall).
    pub metrics: BTreeMap<String, usize>,
    pub metric_values: Vec<MetricValue>,
    /// Wall clock in nanoseconds since the epoch, and the monotonic clock.
    pub now_ns: u64,
    pub monotonic_ns: u64,
    /// How far both clocks move on each read by a module ([`Host::set_clock_tick_ns`]).
    pub tick_ns: u64,
    pub next_vm: usize,
}

impl Store {
    fn new() -> Self {
        let now_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        Store {
            shared: HashMap::new(),
            next_cas: 1,
            queue_tokens: HashMap::new(),
            queues: HashMap::new(),
            next_queue_token: 1,
            queue_ready: Vec::new(),
            metrics: BTreeMap::new(),
            metric_values: Vec::new(),
            now_ns,
            monotonic_ns: 1_000_000_000,
            tick_ns: 0,
            next_vm: 0,
        }
    }

    fn next_cas(&mut self) -> u32 {
        let cas = self.next_cas;
        self.next_cas = self.next_cas.wrapping_add(1);
        if self.next_cas == 0 {
            self.next_cas = 1;
        }
        cas
    }

    pub fn get_shared(&self, vm_id: &str, key: &str) -> Option<(Vec<u8>, u32)> {
        self.shared.get(vm_id)?.get(key).cloned()
    }

    /// proxy-wasm-cpp-host `SharedData::set`: cas 0 writes unconditionally; otherwise it must
    /// match the stored value's cas. Every write gets a fresh cas.
    pub fn set_shared(&mut self, vm_id: &str, key: &str, value: &[u8], cas: u32) -> Status {
        let current = self
            .shared
            .get(vm_id)
            .and_then(|m| m.get(key))
            .map(|(_, c)| *c);
        if let Some(stored) = current {
            if cas != 0 && cas != stored {
                return Status::CasMismatch;
            }
        }
        let next = self.next_cas();
        self.shared
            .entry(vm_id.to_string())
            .or_default()
            .insert(key.to_string(), (value.to_vec(), next));
        Status::Ok
    }

    pub fn register_queue(&mut self, vm_id: &str, name: &str, vm: usize, context: u32) -> u32 {
        let key = (vm_id.to_string(), name.to_string());
        let token = match self.queue_tokens.get(&key) {
            Some(t) => *t,
            None => {
                let mut t = self.next_queue_token;
                while t == 0 || self.queues.contains_key(&t) {
                    t = t.wrapping_add(1);
                }
                self.next_queue_token = t.wrapping_add(1);
                self.queue_tokens.insert(key, t);
                t
            }
        };
        let q = self.queues.entry(token).or_default();
        q.owner_vm = vm;
        q.owner_context = context;
        token
    }

    pub fn resolve_queue(&self, vm_id: &str, name: &str) -> Option<u32> {
        self.queue_tokens
            .get(&(vm_id.to_string(), name.to_string()))
            .copied()
    }

    pub fn enqueue(&mut self, token: u32, value: &[u8]) -> Status {
        let Some(q) = self.queues.get_mut(&token) else {
            return Status::NotFound;
        };
        q.data.push_back(value.to_vec());
        let (vm, ctx) = (q.owner_vm, q.owner_context);
        self.queue_ready.push((vm, ctx, token));
        Status::Ok
    }

    pub fn dequeue(&mut self, token: u32) -> Result<Vec<u8>, Status> {
        let Some(q) = self.queues.get_mut(&token) else {
            return Err(Status::NotFound);
        };
        q.data.pop_front().ok_or(Status::Empty)
    }

    /// The slot of stat `name`, made at its first definition.
    pub fn define_metric(&mut self, kind: MetricType, name: &str) -> usize {
        if let Some(&slot) = self.metrics.get(name) {
            return slot;
        }
        let slot = self.metric_values.len();
        self.metric_values.push(match kind {
            MetricType::Counter => MetricValue::Counter(0),
            MetricType::Gauge => MetricValue::Gauge(0),
            MetricType::Histogram => MetricValue::Histogram {
                count: 0,
                values: Vec::new(),
            },
        });
        self.metrics.insert(name.to_string(), slot);
        slot
    }

    fn metric(&self, name: &str) -> Option<&MetricValue> {
        self.metrics
            .get(name)
            .and_then(|&slot| self.metric_values.get(slot))
    }
}

/// One Envoy process: the store its workers' VMs share. Cheap to clone (a handle).
#[derive(Clone, Debug)]
pub struct Host {
    pub(crate) store: Arc<Mutex<Store>>,
}

impl Default for Host {
    fn default() -> Self {
        Host::new()
    }
}

impl Host {
    pub fn new() -> Self {
        Host {
            store: Arc::new(Mutex::new(Store::new())),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Store> {
        // A poisoned lock only means a test thread panicked while holding it; the data is
        // still consistent enough for the next test to read.
        match self.store.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// A stat by the name the module defined (Envoy prefixes custom stats with
    /// `wasmcustom.` when it exports them; here the plain name is kept).
    pub fn metric(&self, name: &str) -> Option<MetricValue> {
        self.lock().metric(name).cloned()
    }

    /// A counter's or gauge's value, 0 if it was never defined.
    pub fn counter(&self, name: &str) -> u64 {
        match self.metric(name) {
            Some(MetricValue::Counter(n)) => n,
            Some(MetricValue::Gauge(n)) => u64::try_from(n).unwrap_or(0),
            Some(MetricValue::Histogram { count, .. }) => count,
            None => 0,
        }
    }

    /// Every stat, by name.
    pub fn metrics(&self) -> BTreeMap<String, MetricValue> {
        let store = self.lock();
        store
            .metrics
            .keys()
            .filter_map(|name| Some((name.clone(), store.metric(name)?.clone())))
            .collect()
    }

    /// Shared data as a module would read it (for the vm_id the VMs were made with).
    pub fn shared_data(&self, vm_id: &str, key: &str) -> Option<(Vec<u8>, u32)> {
        self.lock().get_shared(vm_id, key)
    }

    /// Every shared-data key of a vm_id.
    pub fn shared_keys(&self, vm_id: &str) -> Vec<String> {
        let mut keys: Vec<String> = self
            .lock()
            .shared
            .get(vm_id)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        keys.sort();
        keys
    }

    /// Writes shared data as a module would (cas 0: unconditional).
    pub fn set_shared_data(&self, vm_id: &str, key: &str, value: &[u8], cas: u32) -> bool {
        self.lock().set_shared(vm_id, key, value, cas) == Status::Ok
    }

    /// The wall clock the modules see (`proxy_get_current_time_nanoseconds`).
    pub fn now_ns(&self) -> u64 {
        self.lock().now_ns
    }

    pub fn set_now_ns(&self, ns: u64) {
        self.lock().now_ns = ns;
    }

    /// Makes time pass as modules work: every read of a clock by a module (proxy-wasm's or
    /// WASI's) moves both clocks forward by `ns` after it. For code that bounds its own running
    /// time by the clock, such as code mode's sandbox, which the host-shim clock, still unless
    /// advanced, would let run forever.
    pub fn set_clock_tick_ns(&self, ns: u64) {
        self.lock().tick_ns = ns;
    }

    /// A module's read of clock `id` (0 the wall clock, 1 the monotonic one), which moves the
    /// clocks by the tick.
    pub(crate) fn read_clock(&self, id: u32) -> Option<u64> {
        let mut s = self.lock();
        let now = match id {
            0 => s.now_ns,
            1 => s.monotonic_ns,
            _ => return None,
        };
        let tick = s.tick_ns;
        s.now_ns = s.now_ns.saturating_add(tick);
        s.monotonic_ns = s.monotonic_ns.saturating_add(tick);
        Some(now)
    }

    /// Moves both clocks forward.
    pub fn advance_ms(&self, ms: u64) {
        let mut s = self.lock();
        s.now_ns = s.now_ns.saturating_add(ms.saturating_mul(1_000_000));
        s.monotonic_ns = s.monotonic_ns.saturating_add(ms.saturating_mul(1_000_000));
    }

    pub(crate) fn next_vm_index(&self) -> usize {
        let mut s = self.lock();
        let n = s.next_vm;
        s.next_vm += 1;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cas_like_envoy() {
        let host = Host::new();
        let mut s = host.lock();
        assert_eq!(s.set_shared("", "k", b"a", 0), Status::Ok);
        let (_, cas) = s.get_shared("", "k").unwrap();
        assert_eq!(s.set_shared("", "k", b"b", cas + 1), Status::CasMismatch);
        assert_eq!(s.set_shared("", "k", b"b", cas), Status::Ok);
        assert_eq!(s.set_shared("", "k", b"c", cas), Status::CasMismatch);
        assert_eq!(s.set_shared("", "k", b"c", 0), Status::Ok);
        // A key that does not exist yet is written whatever cas says (as in Envoy).
        assert_eq!(s.set_shared("", "new", b"x", 77), Status::Ok);
        assert_eq!(s.get_shared("other-vm-id", "k"), None);
    }
}
