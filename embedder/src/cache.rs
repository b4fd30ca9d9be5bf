//! A bounded LRU of vectors keyed by a 128-bit hash of (model id, exact input text), so that
//! every Envoy of a mesh asking for the same catalog costs one embedding per distinct text.
//!
//! Two places consult it. The HTTP handler looks a request up before queueing it: a request
//! that is all hits is answered at once, never waiting behind a batch. The inference thread
//! looks the remaining texts up again ([`Cached`]) just before running the model, because
//! replicas that restart together send the same batch concurrently: the copies that queued
//! behind the first then find its vectors instead of embedding them again. The lock is held
//! only for map operations, never across inference or an `.await`.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::model::{Embed, EmbedError, Embedded};

/// Two independent 64-bit SipHash values of (model id, text). Texts are not stored (a tool
/// description may be 2 KB, more than its vector); with 128 bits the chance that two texts
/// among 10^6 share a key is about 10^-27, and the hasher's keys are random per process, so
/// no one can craft a collision to get another text's vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Key(u64, u64);

struct Slot {
    vector: Arc<[f32]>,
    /// When it was last used: its key in `Lru::order`.
    used: u64,
}

/// Recency by a logical clock: `order` maps use time to key, so the least recently used entry
/// is the first of `order` (O(log n) per use, no linked list to keep consistent).
#[derive(Default)]
struct Lru {
    slots: HashMap<Key, Slot>,
    order: BTreeMap<u64, Key>,
    clock: u64,
}

impl Lru {
    fn tick(&mut self) -> u64 {
        self.clock = self.clock.wrapping_add(1);
        self.clock
    }

    fn get(&mut self, key: Key) -> Option<Arc<[f32]>> {
        let now = self.tick();
        let slot = self.slots.get_mut(&key)?;
        self.order.remove(&slot.used);
        slot.used = now;
        self.order.insert(now, key);
        Some(Arc::clone(&slot.vector))
    }

    fn put(&mut self, key: Key, vector: Arc<[f32]>, capacity: usize) {
        let now = self.tick();
        if let Some(old) = self.slots.insert(key, Slot { vector, used: now }) {
            self.order.remove(&old.used);
        }
        self.order.insert(now, key);
        while self.slots.len() > capacity {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.slots.remove(&oldest);
        }
    }
}

/// What an operator sees in `/health`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Most vectors kept (`--cache-entries`).
    pub capacity: usize,
    /// Vectors kept now.
    pub entries: usize,
    /// Input texts answered without running the model for them: found in the cache, or a
    /// repeat of a text earlier in the same request.
    pub hits: u64,
    /// Texts sent to the model. `hits + misses` is the number of input texts.
    pub misses: u64,
}

/// The vector cache of one server (one model id).
pub struct VectorCache {
    lru: Mutex<Lru>,
    hasher: RandomState,
    model_id: String,
    capacity: usize,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl std::fmt::Debug for VectorCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorCache")
            .field("model_id", &self.model_id)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

enum Found {
    Hit(Arc<[f32]>),
    /// Index into the lookup's texts to embed.
    Miss(usize),
}

/// The result of looking a batch up: the vectors found, and the distinct texts still to embed.
pub struct Lookup {
    found: Vec<Found>,
    missing: Vec<String>,
    missing_keys: Vec<Key>,
}

impl Lookup {
    /// The distinct texts not in the cache, in order of first appearance.
    pub fn missing(&self) -> &[String] {
        &self.missing
    }

    /// Takes [`Lookup::missing`] out, to send them to the model without a copy.
    pub fn take_missing(&mut self) -> Vec<String> {
        std::mem::take(&mut self.missing)
    }

    /// One vector per looked-up text, in input order, given one vector per missing text.
    pub fn fill(self, embedded: Vec<Vec<f32>>) -> Result<Vec<Vec<f32>>, EmbedError> {
        if embedded.len() != self.missing_keys.len() {
            return Err(EmbedError::Inference(format!(
                "the model returned {} vectors for {} texts",
                embedded.len(),
                self.missing_keys.len()
            )));
        }
        self.found
            .into_iter()
            .map(|found| match found {
                Found::Hit(vector) => Ok(vector.to_vec()),
                Found::Miss(i) => embedded.get(i).cloned().ok_or_else(|| {
                    EmbedError::Inference(format!("no vector for missing text {i}"))
                }),
            })
            .collect()
    }
}

impl VectorCache {
    /// A cache of at most `capacity` vectors (0 keeps nothing) for `model_id`.
    pub fn new(model_id: &str, capacity: usize) -> Self {
        Self {
            lru: Mutex::new(Lru::default()),
            hasher: RandomState::new(),
            model_id: model_id.to_string(),
            capacity,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    // A poisoned lock still guards a valid map (nothing panics while holding it).
    fn lock(&self) -> MutexGuard<'_, Lru> {
        self.lru.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn key(&self, text: &str) -> Key {
        let model = self.model_id.as_str();
        Key(
            self.hasher.hash_one((0u8, model, text)),
            self.hasher.hash_one((1u8, model, text)),
        )
    }

    /// Looks `texts` up under one short lock (hashing is done before taking it). Counts the
    /// hits, and a repeated missing text as a hit too: it is embedded once.
    pub fn lookup(&self, texts: &[String]) -> Lookup {
        let keys: Vec<Key> = texts.iter().map(|t| self.key(t)).collect();
        let cached: Vec<Option<Arc<[f32]>>> = {
            let mut lru = self.lock();
            keys.iter().map(|&key| lru.get(key)).collect()
        };
        let mut lookup = Lookup {
            found: Vec::with_capacity(texts.len()),
            missing: Vec::new(),
            missing_keys: Vec::new(),
        };
        let mut first_miss: HashMap<Key, usize> = HashMap::new();
        let mut hits = 0u64;
        for ((text, key), vector) in texts.iter().zip(keys).zip(cached) {
            let found = match vector {
                Some(vector) => {
                    hits += 1;
                    Found::Hit(vector)
                }
                None => match first_miss.get(&key) {
                    Some(&i) => {
                        hits += 1;
                        Found::Miss(i)
                    }
                    None => {
                        let i = lookup.missing.len();
                        first_miss.insert(key, i);
                        lookup.missing.push(text.clone());
                        lookup.missing_keys.push(key);
                        Found::Miss(i)
                    }
                },
            };
            lookup.found.push(found);
        }
        self.hits.fetch_add(hits, Ordering::Relaxed);
        lookup
    }

    /// Keeps the vectors of a lookup's missing texts, evicting the least recently used.
    fn store(&self, lookup: &Lookup, vectors: &[Vec<f32>]) {
        let shared: Vec<(Key, Arc<[f32]>)> = lookup
            .missing_keys
            .iter()
            .zip(vectors)
            .map(|(&key, v)| (key, Arc::from(v.as_slice())))
            .collect();
        let mut lru = self.lock();
        for (key, vector) in shared {
            lru.put(key, vector, self.capacity);
        }
    }

    /// Counters and size, for `/health`.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            capacity: self.capacity,
            entries: self.lock().slots.len(),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }
}

/// A model behind the cache: only texts it has not seen reach `inner`, in one batch, each
/// once. `tokens` counts what `inner` actually read (0 when everything was cached).
pub struct Cached {
    inner: Arc<dyn Embed>,
    cache: Arc<VectorCache>,
}

impl Cached {
    /// `inner` behind `cache`.
    pub fn new(inner: Arc<dyn Embed>, cache: Arc<VectorCache>) -> Self {
        Self { inner, cache }
    }
}

impl Embed for Cached {
    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    fn embed(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
        let mut lookup = self.cache.lookup(texts);
        let missing = lookup.take_missing();
        if missing.is_empty() {
            return Ok(Embedded {
                vectors: lookup.fill(Vec::new())?,
                tokens: 0,
            });
        }
        self.cache
            .misses
            .fetch_add(missing.len() as u64, Ordering::Relaxed);
        let embedded = self.inner.embed(&missing)?;
        if embedded.vectors.len() != missing.len() {
            return Err(EmbedError::Inference(format!(
                "the model returned {} vectors for {} texts",
                embedded.vectors.len(),
                missing.len()
            )));
        }
        self.cache.store(&lookup, &embedded.vectors);
        Ok(Embedded {
            vectors: lookup.fill(embedded.vectors)?,
            tokens: embedded.tokens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::Pool;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Condvar;
    use std::time::{Duration, Instant};

    /// Vector of a text: its length and first byte, so a misplaced vector is visible.
    fn vector_of(text: &str) -> Vec<f32> {
        vec![
            text.len() as f32,
            f32::from(text.bytes().next().unwrap_or(0)),
        ]
    }

    /// Counts calls and texts; `fail` makes every call fail.
    #[derive(Default)]
    struct Counter {
        calls: AtomicUsize,
        texts: Mutex<Vec<Vec<String>>>,
        fail: bool,
    }

    impl Embed for Counter {
        fn dimensions(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.texts.lock().unwrap().push(texts.to_vec());
            if self.fail {
                return Err(EmbedError::Inference("down".into()));
            }
            Ok(Embedded {
                vectors: texts.iter().map(|t| vector_of(t)).collect(),
                tokens: texts.iter().map(String::len).sum(),
            })
        }
    }

    fn strings(texts: &[&str]) -> Vec<String> {
        texts.iter().map(|s| s.to_string()).collect()
    }

    fn cached(capacity: usize) -> (Arc<Counter>, Arc<VectorCache>, Cached) {
        let counter = Arc::new(Counter::default());
        let cache = Arc::new(VectorCache::new("m", capacity));
        let embed = Cached::new(counter.clone(), cache.clone());
        (counter, cache, embed)
    }

    #[test]
    fn a_repeat_is_answered_without_the_model() {
        let (counter, cache, embed) = cached(10);
        let texts = strings(&["alpha", "beta"]);
        let cold = embed.embed(&texts).unwrap();
        let warm = embed.embed(&texts).unwrap();
        assert_eq!(counter.calls.load(Ordering::SeqCst), 1);
        assert_eq!(cold.vectors, warm.vectors);
        assert_eq!(cold.tokens, 9);
        assert_eq!(warm.tokens, 0, "the model read nothing the second time");
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses, stats.entries), (2, 2, 2));
    }

    #[test]
    fn only_distinct_misses_reach_the_model_and_order_is_kept() {
        let (counter, cache, embed) = cached(10);
        embed.embed(&strings(&["b", "dd"])).unwrap();
        let texts = strings(&["ccc", "b", "eeeee", "ccc", "dd", "eeeee"]);
        let got = embed.embed(&texts).unwrap();
        let want: Vec<Vec<f32>> = texts.iter().map(|t| vector_of(t)).collect();
        assert_eq!(got.vectors, want);
        assert_eq!(
            counter.texts.lock().unwrap().last().unwrap(),
            &strings(&["ccc", "eeeee"])
        );
        // 2 found + 2 repeats; 2 + 2 sent to the model over both calls.
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses), (4, 4));
        assert_eq!(stats.hits + stats.misses, 8, "one count per input text");
    }

    #[test]
    fn eviction_keeps_the_bound_and_the_recently_used() {
        let (counter, cache, embed) = cached(3);
        embed.embed(&strings(&["a", "b", "c"])).unwrap();
        // Touch "a" so that "b" is now the least recently used.
        embed.embed(&strings(&["a"])).unwrap();
        embed.embed(&strings(&["d"])).unwrap();
        assert_eq!(cache.stats().entries, 3);
        let before = counter.calls.load(Ordering::SeqCst);
        embed.embed(&strings(&["a", "c", "d"])).unwrap();
        assert_eq!(counter.calls.load(Ordering::SeqCst), before, "a, c, d kept");
        embed.embed(&strings(&["b"])).unwrap();
        assert_eq!(
            counter.calls.load(Ordering::SeqCst),
            before + 1,
            "b was evicted"
        );
        // Many more texts than room: the bound holds throughout.
        for i in 0..50 {
            embed.embed(&[format!("t{i}"), format!("u{i}")]).unwrap();
            assert!(cache.stats().entries <= 3);
        }
        let lru = cache.lock();
        assert_eq!(
            lru.slots.len(),
            lru.order.len(),
            "recency tracks every entry"
        );
    }

    #[test]
    fn capacity_zero_keeps_nothing() {
        let (counter, cache, embed) = cached(0);
        let texts = strings(&["x", "x"]);
        embed.embed(&texts).unwrap();
        embed.embed(&texts).unwrap();
        assert_eq!(counter.calls.load(Ordering::SeqCst), 2);
        assert_eq!(cache.stats().entries, 0);
    }

    #[test]
    fn the_model_id_is_part_of_the_key() {
        let a = VectorCache::new("model-a", 10);
        let b = VectorCache {
            hasher: a.hasher.clone(),
            ..VectorCache::new("model-b", 10)
        };
        assert_ne!(a.key("same text"), b.key("same text"));
        assert_eq!(a.key("same text"), a.key("same text"));
        assert_ne!(a.key("same text"), a.key("same text "));
    }

    #[test]
    fn a_failed_batch_caches_nothing() {
        let counter = Arc::new(Counter {
            fail: true,
            ..Counter::default()
        });
        let cache = Arc::new(VectorCache::new("m", 10));
        let embed = Cached::new(counter.clone(), cache.clone());
        assert!(embed.embed(&strings(&["a"])).is_err());
        assert!(embed.embed(&strings(&["a"])).is_err());
        assert_eq!(counter.calls.load(Ordering::SeqCst), 2);
        assert_eq!(cache.stats().entries, 0);
    }

    #[test]
    fn concurrent_use_keeps_the_bound_and_the_right_vectors() {
        let (_, cache, embed) = cached(16);
        let embed = Arc::new(embed);
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let embed = Arc::clone(&embed);
                std::thread::spawn(move || {
                    for i in 0..500 {
                        let texts = vec![format!("{}", i % 40), format!("{t}-{}", i % 7)];
                        let got = embed.embed(&texts).unwrap();
                        let want: Vec<Vec<f32>> = texts.iter().map(|s| vector_of(s)).collect();
                        assert_eq!(got.vectors, want);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let stats = cache.stats();
        assert!(stats.entries <= 16);
        assert_eq!(stats.hits + stats.misses, 4 * 500 * 2);
    }

    /// Records each batch, then holds it until the test opens the gate.
    #[derive(Default)]
    struct Gate {
        open: Mutex<bool>,
        cv: Condvar,
        batches: Mutex<Vec<Vec<String>>>,
    }

    impl Embed for Gate {
        fn dimensions(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
            self.batches.lock().unwrap().push(texts.to_vec());
            let mut open = self.open.lock().unwrap();
            while !*open {
                open = self.cv.wait(open).unwrap();
            }
            Ok(Embedded {
                vectors: texts.iter().map(|t| vector_of(t)).collect(),
                tokens: texts.len(),
            })
        }
    }

    /// Replicas restarting together send the same catalog at once: every copy misses before
    /// the first is embedded, queues, and must then find the first one's vectors.
    #[test]
    fn copies_queued_behind_a_batch_reuse_its_vectors() {
        let gate = Arc::new(Gate::default());
        let cache = Arc::new(VectorCache::new("m", 100));
        let pool = Pool::start(Arc::new(Cached::new(gate.clone(), cache.clone())), 1, 8).unwrap();
        let texts = strings(&["t1", "t22", "t333"]);
        let first = pool.submit(texts.clone()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while gate.batches.lock().unwrap().is_empty() {
            assert!(Instant::now() < deadline, "the worker never took the batch");
            std::thread::yield_now();
        }
        let copies: Vec<_> = (0..3)
            .map(|_| pool.submit(texts.clone()).unwrap())
            .collect();
        *gate.open.lock().unwrap() = true;
        gate.cv.notify_all();
        let want = first.blocking_recv().unwrap().unwrap().vectors;
        for copy in copies {
            let got = copy.blocking_recv().unwrap().unwrap();
            assert_eq!(got.vectors, want);
            assert_eq!(got.tokens, 0);
        }
        assert_eq!(gate.batches.lock().unwrap().len(), 1, "embedded once");
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses), (9, 3));
    }
}
