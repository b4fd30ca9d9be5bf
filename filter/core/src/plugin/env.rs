//! The stream's view of its VM's plugin (`Env`): the one boundary between a stream's decisions
//! (`stream`) and what the VM shares (catalog cache, store, embedding health, stats).

use super::{catalogs, view, Host, Level, Plugin};
use crate::config::entries::Entry;
use crate::fetch::{FetchSpec, Origin};
use crate::index::catalog::CatalogIndex;
use crate::insights::link::{self, LinkKey, Linked};
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
    /// Where the filter's own `tools/call`s go: the route's cluster (or, with `catalog.loopback`,
    /// the catalog's cluster, which is this listener), with the request's `:authority`.
    pub(super) route: Option<Origin>,
    /// The callback's clock, once read (ns since the epoch).
    pub(super) clock: std::cell::Cell<Option<u64>>,
    /// What the filter did with the request, for the access log (`ACCESS_PROPERTY`).
    pub(super) access: Option<String>,
}

impl Env<'_> {
    /// Where this stream's catalog is fetched from: the route's cluster (`None`: unknown), the
    /// request's `:authority`, both unless configured, and the configured path.
    pub(crate) fn with_route(mut self, cluster: Option<String>, authority: Option<String>) -> Self {
        let catalog = &self.plugin.config.catalog;
        // A loopback catalog cluster is this listener (behind Envoy's mcp_router, the only way
        // to the right server: the route's cluster is any one of them); another one is some
        // other service, never sent a caller's call.
        let call_cluster = match &catalog.cluster {
            Some(own) if catalog.loopback => Some(own.clone()),
            _ => cluster.clone(),
        };
        self.route = call_cluster.map(|cluster| Origin {
            authority: authority.clone().unwrap_or_else(|| cluster.clone()),
            cluster,
            path: catalog.path.clone(),
        });
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

    /// [`Env::namespace`], borrowed.
    pub(crate) fn namespace_str(&self) -> &str {
        &self.namespace
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

    /// Where a `tools/call` the filter makes for the caller goes: where the caller's own call
    /// would (see `route`).
    pub(crate) fn route(&self) -> Option<Origin> {
        self.route.clone()
    }

    /// The configuration, for what outlives this callback (a running script's catalog view).
    #[cfg_attr(not(feature = "code-mode"), allow(dead_code))]
    pub(crate) fn shared_config(&self) -> Rc<crate::config::Config> {
        self.plugin.config.clone()
    }

    /// A place for one more script in this VM (`code.max_running`), or `None` when it is full.
    #[cfg_attr(not(feature = "code-mode"), allow(dead_code))]
    pub(crate) fn script_slot(&self) -> Option<super::ScriptSlot> {
        self.plugin.script_slot(self.plugin.config.code.max_running)
    }

    #[cfg_attr(not(feature = "code-mode"), allow(dead_code))]
    pub(crate) fn random_u64(&self) -> u64 {
        self.host.random_u64()
    }

    /// The callback's clock, read once: every decision of one callback sees one instant.
    pub(crate) fn now_ms(&self) -> u64 {
        self.now_ns() / 1_000_000
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
        let refused = match event {
            Event::CallRefused => Some("tool_not_available"),
            Event::SearchRejected => Some("search_rejected"),
            Event::RequestRefused(why) => Some(why.name()),
            Event::ResponseWithheld => Some("response_withheld"),
            _ => None,
        };
        if let Some(reason) = refused {
            self.access(format!(
                "{{\"action\":\"refused\",\"reason\":\"{reason}\"}}"
            ));
        }
    }

    /// What the filter did with this request, as one JSON object for the access log (the last
    /// one of a request is the one logged). Off with `search.insights`.
    pub(crate) fn access(&mut self, record: String) {
        if self.insights() {
            self.access = Some(record);
        }
    }

    /// The access record of this callback, once.
    pub fn take_access(&mut self) -> Option<String> {
        self.access.take()
    }

    /// Whether searches and the calls after them are counted and linked (`search.insights`).
    pub(crate) fn insights(&self) -> bool {
        self.plugin.config.search.insights.enabled
    }

    pub(crate) fn next_search_id(&self) -> String {
        self.plugin.next_search_id()
    }

    /// Adds one to `namespace`'s counter `stat` (one of `stats::NAMESPACE_STATS`).
    pub(crate) fn count_in(&mut self, namespace: &str, stat: &str) {
        self.host
            .increment_named(&crate::stats::in_namespace(namespace, stat), 1);
    }

    /// Records `value` in `histogram` (one of `stats::HISTOGRAMS`).
    pub(crate) fn observe(&mut self, histogram: &'static str, value: u64) {
        self.host.record(histogram, value);
    }

    /// [`Env::now_ms`] in nanoseconds: the callback's start for a duration.
    pub(crate) fn now_ns(&self) -> u64 {
        if let Some(now) = self.clock.get() {
            return now;
        }
        let now = self.host.now_ns();
        self.clock.set(Some(now));
        now
    }

    /// The clock as it reads now, not at the callback's start: when a call leaves and returns
    /// after a script ran for part of the callback.
    #[cfg_attr(not(feature = "code-mode"), allow(dead_code))]
    pub(crate) fn clock_now_ns(&self) -> u64 {
        self.host.now_ns()
    }

    /// Microseconds since `start_ns` (of [`Env::now_ns`]), read from the clock now.
    pub(crate) fn elapsed_us(&self, start_ns: u64) -> u64 {
        self.host.now_ns().saturating_sub(start_ns) / 1_000
    }

    /// A search of `key`'s session returned `names` (ranked from `offset + 1`).
    pub(crate) fn remember_search<'n>(
        &mut self,
        key: LinkKey,
        id: &str,
        offset: usize,
        names: impl Iterator<Item = &'n str>,
    ) {
        let namespace = &self.namespace;
        self.plugin
            .with_insights(|p| p.links.searched(namespace, key, id, offset, names));
    }

    /// `describe_tool` gave `key`'s session the definitions of `names`.
    pub(crate) fn remember_described<'n>(
        &mut self,
        key: LinkKey,
        names: impl Iterator<Item = &'n str>,
    ) {
        let namespace = &self.namespace;
        self.plugin
            .with_insights(|p| p.links.described(namespace, key, names));
    }

    /// How a call of `name` by `key`'s session follows its searches (`None`: no link).
    pub(crate) fn link_call(&mut self, key: LinkKey, name: &str) -> Linked {
        let (namespace, host) = (&self.namespace, &self.host);
        let found = self
            .plugin
            .with_insights(|p| link::link_call(host, &p.links, namespace, key, name));
        match found {
            Some(Ok(linked)) => linked,
            Some(Err(e)) => {
                self.record(Event::Error);
                self.log_warn(&format!("search insights: shared data: {e:?}"));
                Linked::default()
            }
            None => Linked::default(),
        }
    }

    /// A tool search of this namespace answered: `zero_query` is its text when it matched
    /// nothing; `returned`, the names it returned.
    pub(crate) fn tally_search<'n>(
        &mut self,
        zero_query: Option<&str>,
        index: &Rc<CatalogIndex>,
        returned: impl Iterator<Item = (u32, &'n str)>,
    ) {
        let record = self.plugin.config.search.insights.record_queries;
        let zero = zero_query.map(|text| {
            let group = crate::insights::tally::query_group(&crate::index::tokenizer::terms(text));
            (group, record.then(|| text.to_string()))
        });
        // The callback's clock (read once per callback), only for a tally not yet dated.
        let now_ms = || self.now_ms();
        let namespace = &self.namespace;
        self.plugin.with_insights(|p| {
            if let Some(tally) = p.tally(namespace) {
                tally.started(now_ms);
                tally.searched(zero);
            }
            p.returned(namespace, index, returned);
        });
    }

    /// A call of `name` went upstream, as `linked` to this session's searches.
    pub(crate) fn tally_call(&mut self, name: &str, linked: &Linked) {
        // The callback's clock (read once per callback), only for a tally not yet dated.
        let now_ms = || self.now_ms();
        let namespace = &self.namespace;
        self.plugin.with_insights(|p| {
            if let Some(tally) = p.tally(namespace) {
                tally.started(now_ms);
                tally.called(name, linked.rank, linked.described);
            }
        });
    }

    /// `namespace`'s insights: every worker's flushed ones and this worker's own.
    pub(crate) fn insights_of(
        &mut self,
        namespace: &str,
    ) -> Result<(crate::insights::Tally, Vec<String>), StoreError> {
        let host = &self.host;
        self.plugin
            .with_insights(|p| crate::insights::pending::read(host, p, namespace))
            .unwrap_or_else(|| Ok(Default::default()))
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
