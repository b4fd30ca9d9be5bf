//! The stream's view of its VM's plugin (`Env`): the one boundary between a stream's decisions
//! (`stream`) and what the VM shares (catalog cache, store, embedding health, stats).

use super::{catalogs, view, Host, Level, Plugin};
use crate::config::entries::Entry;
use crate::fetch::{FetchSpec, Origin};
use crate::index::catalog::CatalogIndex;
use crate::stats::Event;
use crate::store::{self, circuit, CatalogMeta, Learned, SharedData, StoreError};
use crate::vector::ToolVectors;
use std::rc::Rc;

/// What a stream sees of its VM's plugin: the catalogs, learning, vectors, stats and log, for
/// the namespace the stream's route names.
pub struct Env<'a> {
    pub(super) plugin: &'a Plugin,
    pub(super) host: view::CallbackView<'a>,
    pub(super) namespace: String,
    pub(super) origin: Option<Origin>,
}

impl Env<'_> {
    /// Where this stream's catalog is fetched from: the route's cluster (`None`: unknown), the
    /// request's `:authority`, both unless configured, and the configured path.
    pub(crate) fn with_route(mut self, cluster: Option<String>, authority: Option<String>) -> Self {
        let catalog = &self.plugin.config.catalog;
        self.origin = catalog.cluster.clone().or(cluster).map(|cluster| Origin {
            authority: catalog
                .authority
                .clone()
                .or(authority)
                .unwrap_or_else(|| cluster.clone()),
            cluster,
            path: catalog.path.clone(),
        });
        self
    }
}

impl Env<'_> {
    /// A last page of a client's list was learned: the catalog is as old as now, and is
    /// refreshed from where that list came from. Written only when something changed, so that
    /// repeated lists cost one small read.
    fn listed(&self, key: &str, changed: bool) {
        let now = self.host.now_ms();
        let origin = self.origin.clone();
        let private = key != self.namespace;
        let _ = store::update_meta(&self.host, key, |meta| {
            let moved = origin
                .as_ref()
                .is_some_and(|o| meta.origin() != Some(o.clone()));
            let aged = now.saturating_sub(meta.updated_ms) >= catalogs::LISTED_RESOLUTION_MS;
            if !(changed || meta.stale || moved || aged) {
                return false;
            }
            meta.updated_ms = now;
            meta.source = store::Source::Learned;
            meta.stale = false;
            meta.private = private;
            if let Some(o) = &origin {
                meta.set_origin(o);
            }
            true
        });
    }
}

impl Env<'_> {
    pub(crate) fn namespace(&self) -> String {
        self.namespace.clone()
    }

    pub(crate) fn catalog_of(&mut self, namespace: &str) -> Result<Rc<CatalogIndex>, StoreError> {
        self.plugin
            .cache
            .try_borrow_mut()
            .map_err(|_| StoreError::Host("catalog cache busy".into()))?
            .index(&self.host, namespace, &self.plugin.config)
    }

    /// Whether a catalog was ever stored under `key` (an empty one counts: the server has none
    /// of that kind).
    pub(crate) fn catalog_known(&mut self, key: &str) -> bool {
        matches!(self.host.get(&crate::keys::version(key)), Ok((Some(_), _)))
    }

    pub(crate) fn namespaces(&mut self) -> Vec<String> {
        store::namespaces(&self.host).unwrap_or_default()
    }

    pub(crate) fn tool_vectors(&mut self, index: &CatalogIndex) -> Option<Rc<ToolVectors>> {
        self.plugin.config.search.embeddings.as_ref()?;
        let (vectors, missing) = {
            let mut cache = self.plugin.cache.try_borrow_mut().ok()?;
            // Vectors are resolved against the cached index (the same Rc a search holds).
            let shared_index = cache
                .index(&self.host, &index.namespace, &self.plugin.config)
                .ok()?;
            cache
                .vectors(&self.host, &shared_index, &self.plugin.config)
                .ok()?
        };
        if !missing.is_empty() {
            self.plugin.mark_for_embedding(&index.namespace);
        }
        Some(vectors)
    }

    pub(crate) fn embeddings_degraded(&mut self) -> Option<String> {
        self.plugin.health.degraded(&self.host)
    }

    pub(crate) fn embeddings_circuit(&mut self) -> Option<circuit::Circuit> {
        self.plugin.config.search.embeddings.as_ref()?;
        Some(circuit::read(&self.host))
    }

    pub(crate) fn learn(&mut self, learned: Learned) -> Result<bool, StoreError> {
        if learned.entry != Entry::Tool {
            // Prompts and resources are kept whole from the lists that pass (a fetch brings
            // them with the tools), and embedded like tools.
            let key = learned.entry.catalog_key(&self.namespace);
            self.plugin.mark_for_embedding(&key);
            return self
                .plugin
                .cache
                .try_borrow_mut()
                .map_err(|_| StoreError::Host("catalog cache busy".into()))?
                .learn(&self.host, &key, learned);
        }
        let last = learned.page.last;
        let key = self
            .plugin
            .learned_key(&self.host, &self.namespace, &learned);
        let changed = self
            .plugin
            .cache
            .try_borrow_mut()
            .map_err(|_| StoreError::Host("catalog cache busy".into()))?
            .learn(&self.host, &key, learned)?;
        self.plugin.mark_for_embedding(&key);
        if last {
            self.listed(&key, changed);
        }
        Ok(changed)
    }

    pub(crate) fn origin(&mut self) -> Option<Origin> {
        self.origin.clone()
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.host.now_ms()
    }

    pub(crate) fn catalog_meta(&mut self, namespace: &str) -> CatalogMeta {
        self.host.meta(namespace)
    }

    pub(crate) fn fetch_spec(
        &mut self,
        origin: Origin,
        context: crate::fetch::Context,
        forwarded: Vec<(String, String)>,
    ) -> FetchSpec {
        self.plugin
            .fetch_spec(&self.host, origin, context, forwarded)
    }

    /// A server's `notifications/tools/list_changed` passed (only `mcp::notify` decides that):
    /// the catalog is due. Nothing is fetched here; the root tick refreshes due catalogs, at most
    /// once per `catalog.min_refresh_interval`. Written (and logged) only when it changes
    /// something: a catalog already stale, or one never obtained (due anyway, and not to be
    /// created by a notification), is left as it is.
    pub(crate) fn mark_stale(&mut self, namespace: &str) {
        let mut marked = false;
        let _ = store::update_meta(&self.host, namespace, |meta| {
            marked = meta.updated_ms != 0 && !meta.stale;
            meta.stale |= marked;
            marked
        });
        if marked {
            self.host.log(
                Level::Info,
                &format!("catalog {namespace:?}: the server announced a tool list change"),
            );
        }
    }

    pub(crate) fn is_own_fetch(&mut self, marker: &str) -> bool {
        catalogs::is_own_fetch(&self.host, marker)
    }

    pub(crate) fn record(&mut self, event: Event) {
        let (stat, by) = event.stat();
        if by > 0 {
            self.host.increment(stat, by);
        }
    }

    pub(crate) fn log_warn(&mut self, message: &str) {
        self.host.log(Level::Warn, message);
    }

    /// This stream's catalog.
    pub(crate) fn catalog(&mut self) -> Result<Rc<CatalogIndex>, StoreError> {
        let namespace = self.namespace();
        self.catalog_of(&namespace)
    }
}
