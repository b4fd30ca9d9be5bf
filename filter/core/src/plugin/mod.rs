//! One VM's plugin: the configuration, the catalog cache, embedding health and the embedding
//! scheduler, over a [`Host`]. Every host (the proxy-wasm glue, `MemoryHost` in tests and
//! tools) drives the same object, so the store, vector and scheduler paths are the same code
//! everywhere.

mod health;
pub mod host;
mod scheduler;

pub use host::{Host, HttpCall, Level, MemoryHost};
pub use scheduler::MAX_BACKOFF_MS;

use crate::config::{Config, EmbeddingsConfig};
use crate::index::catalog::CatalogIndex;
use crate::rank::embeddings;
use crate::rank::search::{Fallback, FallbackKind};
use crate::store::{self, CatalogCache, Learned, StoreError};
use crate::stream::{Env, Event};
use crate::vector::ToolVectors;
use scheduler::{InFlight, Worker};
use std::cell::RefCell;
use std::rc::Rc;

/// How often a VM looks for tools to embed (the root context's tick period).
pub const EMBED_TICK_MS: u64 = 500;

pub struct Plugin {
    pub config: Config,
    cache: RefCell<CatalogCache>,
    worker: RefCell<Worker>,
    health: health::Health,
    /// Names this VM in embedding leases.
    vm_id: String,
}

impl Plugin {
    /// `vm_id` must differ between the VMs of one host (the embedding lease tells them apart).
    pub fn new(config: Config, vm_id: String) -> Self {
        Plugin {
            config,
            cache: RefCell::new(CatalogCache::new()),
            worker: RefCell::new(Worker::default()),
            health: health::Health::default(),
            vm_id,
        }
    }

    /// The tick period the plugin needs, if any (background embedding).
    pub fn tick_period_ms(&self) -> Option<u64> {
        self.config
            .search
            .embeddings
            .as_ref()
            .map(|_| EMBED_TICK_MS)
    }

    /// A stream's view of the plugin: its catalogs, learning, vectors and stats.
    pub fn env<'a>(&'a self, host: &'a dyn Host, namespace: String) -> PluginEnv<'a> {
        PluginEnv {
            plugin: self,
            host,
            namespace,
        }
    }

    /// One step of background embedding: at most one batch in flight per VM.
    pub fn on_tick(&self, host: &dyn Host) {
        let Some(config) = &self.config.search.embeddings else {
            return;
        };
        let now = host.now_ms();
        let Ok(mut worker) = self.worker.try_borrow_mut() else {
            return;
        };
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
            match store::take_lease(host, &namespace, &self.vm_id, now, lease_ms) {
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
            match call_embeddings(host, config, &texts) {
                Ok(token) => worker.sent(InFlight {
                    token,
                    namespace,
                    items,
                }),
                Err(reason) => {
                    worker.failed(now);
                    self.embedding_failed(host, &reason);
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
        match embeddings::parse_response(config, status, body, batch.items.len()) {
            Ok(vectors) => {
                let items = batch
                    .items
                    .into_iter()
                    .zip(vectors)
                    .map(|((name, hash), v)| (name, hash, v))
                    .collect();
                match store::store_vectors(host, &batch.namespace, items) {
                    Ok(()) => {
                        worker.succeeded();
                        self.health.worked(host);
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
    /// [`Plugin::on_query_embeddings`]. `Err`: the fallback to answer with at once.
    pub fn embed_queries(&self, host: &dyn Host, texts: &[String]) -> Result<u32, Fallback> {
        let Some(config) = &self.config.search.embeddings else {
            return Err(Fallback::new(
                FallbackKind::Unavailable,
                "embeddings are not configured",
            ));
        };
        call_embeddings(host, config, texts).map_err(|reason| {
            self.health.failed(host, &reason);
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
        let vectors = embeddings::parse_response(config, status, body, texts);
        match &vectors {
            Ok(_) => self.health.worked(host),
            Err(f) => self.health.failed(host, &f.reason),
        }
        vectors
    }

    /// A failure of background (tool) embedding: counted, and reported in health.
    fn embedding_failed(&self, host: &dyn Host, reason: &str) {
        host.increment("embedding_failures_total", 1);
        self.health.failed(host, reason);
    }
}

/// Starts an embeddings call for `texts`; `Err`: why it could not be made.
fn call_embeddings(
    host: &dyn Host,
    config: &EmbeddingsConfig,
    texts: &[String],
) -> Result<u32, String> {
    host.http_call(HttpCall {
        cluster: config.cluster.clone(),
        headers: embeddings::request_headers(config),
        body: embeddings::request_body(config, texts),
        timeout_ms: config.timeout_ms,
    })
    .map_err(|status| {
        format!(
            "could not call embeddings cluster {:?}: {status}",
            config.cluster
        )
    })
}

/// What a stream sees of the plugin (see [`Env`]).
pub struct PluginEnv<'a> {
    plugin: &'a Plugin,
    host: &'a dyn Host,
    namespace: String,
}

impl PluginEnv<'_> {
    fn mark_for_embedding(&self, namespace: &str) {
        if self.plugin.config.search.embeddings.is_none() {
            return;
        }
        if let Ok(mut worker) = self.plugin.worker.try_borrow_mut() {
            worker.mark(namespace);
        }
    }
}

impl Env for PluginEnv<'_> {
    fn namespace(&self) -> String {
        self.namespace.clone()
    }

    fn catalog_of(&mut self, namespace: &str) -> Result<Rc<CatalogIndex>, StoreError> {
        self.plugin
            .cache
            .try_borrow_mut()
            .map_err(|_| StoreError::Host("catalog cache busy".into()))?
            .index(self.host, namespace, &self.plugin.config)
    }

    fn namespaces(&mut self) -> Vec<String> {
        store::namespaces(self.host).unwrap_or_default()
    }

    fn tool_vectors(&mut self, index: &CatalogIndex) -> Option<Rc<ToolVectors>> {
        self.plugin.config.search.embeddings.as_ref()?;
        let (vectors, missing) = {
            let mut cache = self.plugin.cache.try_borrow_mut().ok()?;
            // Vectors are resolved against the cached index (the same Rc a search holds).
            let shared_index = cache
                .index(self.host, &index.namespace, &self.plugin.config)
                .ok()?;
            cache
                .vectors(self.host, &shared_index, &self.plugin.config)
                .ok()?
        };
        if !missing.is_empty() {
            self.mark_for_embedding(&index.namespace);
        }
        Some(vectors)
    }

    fn embeddings_degraded(&mut self) -> Option<String> {
        self.plugin.health.degraded(self.host)
    }

    fn learn(&mut self, learned: Learned) -> Result<bool, StoreError> {
        let changed = self
            .plugin
            .cache
            .try_borrow_mut()
            .map_err(|_| StoreError::Host("catalog cache busy".into()))?
            .learn(self.host, &self.namespace, learned)?;
        self.mark_for_embedding(&self.namespace);
        Ok(changed)
    }

    fn record(&mut self, event: Event) {
        let (stat, by) = event.stat();
        if by > 0 {
            self.host.increment(stat, by);
        }
    }

    fn log_warn(&mut self, message: &str) {
        self.host.log(Level::Warn, message);
    }
}
