//! One VM's plugin: the configuration, the catalog cache, embedding health and the embedding
//! scheduler, over a [`Host`]. Every host (the proxy-wasm glue, `MemoryHost` in tests and
//! tools) drives the same object, so the store, vector and scheduler paths are the same code
//! everywhere.

mod catalogs;
mod env;
mod health;
pub mod host;
mod scheduler;
mod view;

pub use catalogs::{
    fetch_secret, install_fetch_secret, FetchProgress, FetchStart, FETCH_MARKER_HEADER,
};
pub use env::Env;
pub use host::{Host, HttpCall, Level};
pub use scheduler::MAX_BACKOFF_MS;

use crate::config::{Config, EmbeddingsConfig};
use crate::rank::embeddings;
use crate::rank::search::{Fallback, FallbackKind};
use crate::store::{self, circuit, CatalogCache};
use scheduler::{InFlight, Worker};
use std::cell::RefCell;

/// How often a VM looks for tools to embed (the root context's tick period).
pub const EMBED_TICK_MS: u64 = 500;
/// The tick period when catalogs are fetched: how soon a due catalog starts refreshing, and how
/// soon a stream waiting on another worker's fetch goes on once it ended.
pub const CATALOG_TICK_MS: u64 = 200;

pub struct Plugin {
    /// Shared with what outlives one callback (a running script's view of the catalog).
    pub config: std::rc::Rc<Config>,
    cache: RefCell<CatalogCache>,
    worker: RefCell<Worker>,
    health: health::Health,
    /// Catalog fetches in flight from this VM.
    fetches: RefCell<Vec<catalogs::Running>>,
    /// Names this VM in embedding and fetch leases.
    vm_id: String,
    /// Whether this VM has had a stream: only those do background work (`on_tick`).
    serving: std::cell::Cell<bool>,
    /// Searches answered by this VM: with `vm_id`, what makes a search id unique.
    searches: std::cell::Cell<u64>,
    /// This VM's search insights not yet folded into shared data.
    insights: RefCell<crate::insights::Pending>,
    /// Code mode's scripts alive in this VM (each holds its heap until it ends).
    scripts: std::rc::Rc<std::cell::Cell<u32>>,
}

/// One running script's place in its VM's count, given back when the script ends or its
/// stream goes (dropped).
#[derive(Debug)]
pub(crate) struct ScriptSlot(std::rc::Rc<std::cell::Cell<u32>>);

impl Drop for ScriptSlot {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}

impl Plugin {
    /// `vm_id` must differ between the VMs of one host (the embedding lease tells them apart).
    pub fn new(config: Config, vm_id: String) -> Self {
        Plugin {
            config: std::rc::Rc::new(config),
            cache: RefCell::new(CatalogCache::new()),
            worker: RefCell::new(Worker::default()),
            health: health::Health::default(),
            fetches: RefCell::new(Vec::new()),
            vm_id,
            serving: std::cell::Cell::new(false),
            searches: std::cell::Cell::new(0),
            insights: RefCell::new(crate::insights::Pending::default()),
            scripts: std::rc::Rc::default(),
        }
    }

    /// `namespace`'s catalog as this VM has it indexed (its cache, else shared data).
    pub fn catalog(
        &self,
        host: &dyn Host,
        namespace: &str,
    ) -> Result<std::rc::Rc<crate::index::catalog::CatalogIndex>, store::StoreError> {
        self.env(host, namespace.to_string()).catalog()
    }

    /// Learns `learned` into `namespace`'s catalog as a client's list would teach it (dated,
    /// marked for embedding), for hosts that are handed a catalog rather than a list.
    pub fn learn(
        &self,
        host: &dyn Host,
        namespace: &str,
        learned: store::Learned,
    ) -> Result<bool, store::StoreError> {
        self.env(host, namespace.to_string()).learn(learned)
    }

    /// A new search id: this VM's id and its count of searches, unique across the Envoy.
    /// A place for one more script in this VM, unless `max` run already.
    #[cfg_attr(not(feature = "code-mode"), allow(dead_code))]
    pub(crate) fn script_slot(&self, max: u32) -> Option<ScriptSlot> {
        let running = self.scripts.get();
        (running < max).then(|| {
            self.scripts.set(running + 1);
            ScriptSlot(self.scripts.clone())
        })
    }

    pub(crate) fn next_search_id(&self) -> String {
        let n = self.searches.get().wrapping_add(1);
        self.searches.set(n);
        let mut id = String::with_capacity(self.vm_id.len() + 12);
        id.push_str(&self.vm_id);
        id.push('-');
        crate::mcp::json::write_u64(&mut id, n);
        id
    }

    /// A stream starts on this VM.
    pub fn stream_started(&self) {
        self.serving.set(true);
    }

    /// The tick period of the plugin's background work: refresh, publishing indexes (always),
    /// embedding.
    pub fn tick_period_ms(&self) -> Option<u64> {
        if self.config.catalog.fetch || self.config.search.embeddings.is_none() {
            return Some(CATALOG_TICK_MS);
        }
        Some(EMBED_TICK_MS)
    }

    /// The answer to a call the root context made (a background fetch or embedding).
    pub fn on_root_response(
        &self,
        host: &dyn Host,
        token: u32,
        status: Option<&str>,
        headers: &[(String, String)],
        body: &[u8],
    ) {
        if self
            .on_fetch_response(host, token, status, headers, body)
            .is_none()
        {
            self.on_tool_embeddings(host, token, status, body);
        }
    }

    /// The tools of `namespace` need vectors: embed what they lack on a later tick.
    fn mark_for_embedding(&self, namespace: &str) {
        if self.config.search.embeddings.is_none() {
            return;
        }
        if let Ok(mut worker) = self.worker.try_borrow_mut() {
            worker.mark(namespace);
        }
    }

    /// A stream's view of the plugin: its catalogs, learning, vectors and stats.
    pub(crate) fn env<'a>(&'a self, host: &'a dyn Host, namespace: String) -> Env<'a> {
        Env {
            plugin: self,
            host: view::CallbackView::new(host),
            namespace,
            origin: None,
            route: None,
            clock: std::cell::Cell::new(None),
            access: None,
        }
    }

    /// One tick of background work: refreshes that are due, then embedding. A VM that never
    /// had a stream does none: Envoy runs one on its main thread, where a fetch, an index build
    /// or an embedding batch would hold up xDS, the admin API and stats flushes, and where the
    /// memory would be spent once more for nothing.
    pub fn on_tick(&self, host: &dyn Host) {
        if !self.serving.get() {
            return;
        }
        self.refresh_due(host);
        self.publish_index(host);
        self.embed_step(host);
        self.flush_insights(host);
    }

    /// Folds this VM's search insights into shared data (at most every `pending::FLUSH_MS`).
    fn flush_insights(&self, host: &dyn Host) {
        let Ok(mut pending) = self.insights.try_borrow_mut() else {
            return;
        };
        match pending.flush(host, host.now_ms()) {
            Ok(()) | Err(store::StoreError::CasMismatch) => {}
            Err(e) => host.log(
                Level::Warn,
                &format!("could not write the search insights: {e:?}"),
            ),
        }
    }

    /// Runs `f` on this VM's unflushed insights.
    pub(crate) fn with_insights<T>(
        &self,
        f: impl FnOnce(&mut crate::insights::Pending) -> T,
    ) -> Option<T> {
        self.insights.try_borrow_mut().ok().map(|mut p| f(&mut p))
    }

    /// Publishes one index the other workers lack (`CatalogCache::publish_indexes`).
    fn publish_index(&self, host: &dyn Host) {
        let Ok(mut cache) = self.cache.try_borrow_mut() else {
            return;
        };
        if let Err(e) = cache.publish_indexes(host, &self.config) {
            host.log(
                Level::Warn,
                &format!("could not publish a catalog index: {e}"),
            );
        }
    }

    /// One step of background embedding: at most one batch in flight per VM.
    fn embed_step(&self, host: &dyn Host) {
        let Some(config) = &self.config.search.embeddings else {
            return;
        };
        let now = host.now_ms();
        let Ok(mut worker) = self.worker.try_borrow_mut() else {
            return;
        };
        if worker.backing_off(now) {
            worker.recovered(circuit::recovered_ms(host));
        }
        if !worker.due(now) {
            return;
        }
        for namespace in worker.pending() {
            let Ok(mut cache) = self.cache.try_borrow_mut() else {
                return;
            };
            let found = cache
                .index(host, &namespace, &self.config)
                .and_then(|index| {
                    let (_, missing) = cache.vectors(host, &index, &self.config)?;
                    Ok((index, missing))
                });
            let (index, missing) = match found {
                Ok(found) => found,
                Err(e) => {
                    host.log(
                        Level::Warn,
                        &format!("embedding: catalog {namespace:?} unreadable: {e}"),
                    );
                    worker.done(&namespace);
                    continue;
                }
            };
            if missing.is_empty() {
                worker.done(&namespace);
                continue;
            }
            let lease_ms = config.timeout_ms.saturating_add(1000);
            match store::take_lease(
                host,
                store::Lease::Embed,
                &namespace,
                &self.vm_id,
                now,
                lease_ms,
            ) {
                Ok(true) => {}
                // Another worker embeds this namespace; look again on a later tick.
                Ok(false) => continue,
                Err(e) => {
                    host.log(
                        Level::Warn,
                        &format!("embedding: lease for {namespace:?} failed: {e}"),
                    );
                    continue;
                }
            }
            let (texts, items) = Worker::batch(&index, &missing, config.max_batch_size);
            match call_embeddings(host, config, &texts, config.timeout_ms) {
                Ok(token) => worker.sent(InFlight {
                    token,
                    namespace,
                    items,
                }),
                Err(reason) => {
                    worker.failed(now);
                    self.embedding_failed(host, &reason);
                    let _ =
                        store::release_lease(host, store::Lease::Embed, &namespace, &self.vm_id);
                    host.log(Level::Warn, &format!("embedding: {reason}"));
                }
            }
            return;
        }
    }

    /// The answer to a call `on_tick` made (`status`: the `:status` header, `None` when the call
    /// failed without a response). Answers to other calls are ignored.
    pub fn on_tool_embeddings(
        &self,
        host: &dyn Host,
        token: u32,
        status: Option<&str>,
        body: &[u8],
    ) {
        let Some(config) = &self.config.search.embeddings else {
            return;
        };
        let Ok(mut worker) = self.worker.try_borrow_mut() else {
            return;
        };
        let Some(batch) = worker.take(token) else {
            return;
        };
        // Given back at once, so the next batch (from any worker) need not wait for it to expire.
        let _ = store::release_lease(host, store::Lease::Embed, &batch.namespace, &self.vm_id);
        match embeddings::parse_response(config, status, body, batch.items.len(), config.timeout_ms)
        {
            Ok(vectors) => {
                let items = batch
                    .items
                    .into_iter()
                    .zip(vectors)
                    .map(|((name, hash), v)| (name, hash, v))
                    .collect();
                let current =
                    self.cache.try_borrow_mut().ok().and_then(|mut cache| {
                        cache.index(host, &batch.namespace, &self.config).ok()
                    });
                match store::store_vectors(host, &batch.namespace, items, current.as_deref()) {
                    Ok(()) => {
                        worker.succeeded();
                        self.health.worked(host);
                        self.background_outcome(host, false);
                    }
                    Err(e) => host.log(
                        Level::Warn,
                        &format!("embedding: could not store vectors: {e}"),
                    ),
                }
            }
            Err(fallback) => {
                let backoff = worker.failed(host.now_ms());
                self.embedding_failed(host, &fallback.reason);
                self.background_outcome(host, true);
                host.log(
                    Level::Warn,
                    &format!(
                        "embedding {:?} failed ({}); retrying in {backoff} ms",
                        batch.namespace, fallback.reason
                    ),
                );
            }
        }
    }

    /// Starts the embeddings call for a stream's queries; its answer goes to
    /// [`Plugin::on_query_embeddings`]. `Err`: the fallback to answer with at once (the service
    /// is not configured, cannot be called, or its circuit is open).
    pub fn embed_queries(&self, host: &dyn Host, texts: &[String]) -> Result<u32, Fallback> {
        let Some(config) = &self.config.search.embeddings else {
            return Err(Fallback::new(
                FallbackKind::Unavailable,
                "embeddings are not configured",
            ));
        };
        // The probe is given for as long as its call may take, and a little more.
        let (gate, transition) = circuit::gate(
            host,
            host.now_ms(),
            config.query_timeout_ms.saturating_add(1000),
        );
        if let Some(t) = transition {
            host.increment(t.stat(), 1);
        }
        if let circuit::Gate::Skip(why) = gate {
            return Err(Fallback::new(FallbackKind::CircuitOpen, why));
        }
        call_embeddings(host, config, texts, config.query_timeout_ms).map_err(|reason| {
            self.query_outcome(host, config, Some(&reason));
            Fallback::new(FallbackKind::Unavailable, &reason)
        })
    }

    /// The answer to [`Plugin::embed_queries`]: one vector per text, or why there are none.
    pub fn on_query_embeddings(
        &self,
        host: &dyn Host,
        status: Option<&str>,
        body: &[u8],
        texts: usize,
    ) -> Result<Vec<Vec<f32>>, Fallback> {
        let Some(config) = &self.config.search.embeddings else {
            return Err(Fallback::new(
                FallbackKind::Unavailable,
                "embeddings are not configured",
            ));
        };
        let vectors =
            embeddings::parse_response(config, status, body, texts, config.query_timeout_ms);
        self.query_outcome(
            host,
            config,
            vectors.as_ref().err().map(|f| f.reason.as_str()),
        );
        vectors
    }

    /// A query embedding's outcome, for health and the circuit.
    fn query_outcome(&self, host: &dyn Host, config: &EmbeddingsConfig, failure: Option<&str>) {
        match failure {
            None => self.health.worked(host),
            Some(reason) => self.health.failed(host, reason),
        }
        if let Some(t) = circuit::record(
            host,
            host.now_ms(),
            host.random_u64(),
            failure,
            config.circuit_failures,
        ) {
            host.increment(t.stat(), 1);
            let message = match t {
                circuit::Transition::Opened => format!(
                    "embeddings circuit opened: searches rank by BM25 until a probe succeeds ({})",
                    failure.unwrap_or_default()
                ),
                circuit::Transition::Closed => {
                    "embeddings circuit closed: the service answered the probe".to_string()
                }
                circuit::Transition::HalfOpened => return,
            };
            host.log(Level::Warn, &message);
        }
    }

    /// A background batch's outcome, shared through the circuit: its failure is noted, its
    /// success closes the circuit and ends every worker's backoff (the service is back).
    fn background_outcome(&self, host: &dyn Host, failed: bool) {
        if let Some(t) = circuit::record_background(host, host.now_ms(), failed) {
            host.increment(t.stat(), 1);
            if t == circuit::Transition::Closed {
                host.log(
                    Level::Warn,
                    "embeddings circuit closed: the service embedded a batch of tools",
                );
            }
        }
    }

    /// A failure of background (tool) embedding: counted, and reported in health.
    fn embedding_failed(&self, host: &dyn Host, reason: &str) {
        host.increment(crate::stats::EMBEDDING_FAILURES_TOTAL, 1);
        self.health.failed(host, reason);
    }
}

/// Starts an embeddings call for `texts`; `Err`: why it could not be made.
fn call_embeddings(
    host: &dyn Host,
    config: &EmbeddingsConfig,
    texts: &[String],
    timeout_ms: u64,
) -> Result<u32, String> {
    host.http_call(HttpCall {
        cluster: config.cluster.clone(),
        headers: embeddings::request_headers(config),
        body: embeddings::request_body(config, texts),
        timeout_ms,
    })
    .map_err(|status| {
        format!(
            "could not call embeddings cluster {:?}: {status}",
            config.cluster
        )
    })
}
