//! The proxy-wasm layer: Envoy's callbacks mapped onto the core. Kept thin on purpose; every
//! decision lives in `stream` and below, where it is tested natively.
//!
//! Hostcalls are only made through the SDK's `Result`-returning functions (never the
//! convenience trait methods, which unwrap), and a failed hostcall degrades to "let the traffic
//! through": a panic here would trap the VM and take the listener's filter chain down with it.
//! Those functions still panic on a status they do not expect (SDK 0.2.5), so a call is only
//! made where the host has what it asks for: request headers are changed only while held (or in
//! the headers callback), a call response's headers are read only when it has some.

use mcp_tool_search_core::config::policy::{Caller, IdentitySource};
use mcp_tool_search_core::config::Config;
use mcp_tool_search_core::config::{EmbeddingsConfig, Ranking};
use mcp_tool_search_core::index::catalog::CatalogIndex;
use mcp_tool_search_core::mcp::headers::Mirrored;
use mcp_tool_search_core::rank::embeddings::{self, InFlight, Worker};
use mcp_tool_search_core::rank::search::Fallback;
use mcp_tool_search_core::rank::search::FallbackKind;
use mcp_tool_search_core::store;
use mcp_tool_search_core::store::{CatalogCache, Learned, SharedData, StoreError};
use mcp_tool_search_core::stream::{
    Env, Event, LocalReply, PassReason, Refusal, RequestBodyAction, RequestHead,
    RequestHeadersAction, ResponseHeadersAction, Stream,
};
use mcp_tool_search_core::vector::ToolVectors;
use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, BufferType, ContextType, LogLevel, MapType, MetricType, Status};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};

/// The route metadata the filter reads its namespace from:
/// `metadata.filter_metadata.mcp_tool_search.namespace` on the route.
pub const METADATA_KEY: &str = "mcp_tool_search";

/// Routes the `log` crate to Envoy's log, dropping what the host refuses.
struct HostLogger;

impl log::Log for HostLogger {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let level = match record.level() {
            log::Level::Error => LogLevel::Error,
            log::Level::Warn => LogLevel::Warn,
            log::Level::Info => LogLevel::Info,
            log::Level::Debug => LogLevel::Debug,
            log::Level::Trace => LogLevel::Trace,
        };
        let _ = hostcalls::log(level, &format!("mcp-tool-search: {}", record.args()));
    }

    fn flush(&self) {}
}

static LOGGER: HostLogger = HostLogger;

/// Called once per VM from `_initialize`, where the host allows almost no hostcalls (Envoy
/// answers `restricted_callback`): only register what later callbacks need.
pub(crate) fn start() {
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(log::LevelFilter::Warn);
    std::panic::set_hook(Box::new(|info| {
        let _ = hostcalls::log(
            LogLevel::Critical,
            &format!("mcp-tool-search panicked: {info}"),
        );
    }));
    proxy_wasm::set_root_context(|context_id| {
        Box::new(Root {
            context_id,
            plugin: None,
        })
    });
}

/// Follows Envoy's log level: formatting a message Envoy would drop is wasted work.
fn follow_host_log_level() {
    let max = match hostcalls::get_log_level() {
        Ok(LogLevel::Trace) => log::LevelFilter::Trace,
        Ok(LogLevel::Debug) => log::LevelFilter::Debug,
        Ok(LogLevel::Info) => log::LevelFilter::Info,
        Ok(LogLevel::Warn) | Err(_) => log::LevelFilter::Warn,
        Ok(LogLevel::Error) => log::LevelFilter::Error,
        Ok(LogLevel::Critical) => log::LevelFilter::Off,
    };
    log::set_max_level(max);
}

/// Stat counters, defined once per VM (Envoy shares a name's counter across VMs).
#[derive(Default)]
struct Metrics {
    lists_rewritten: Option<u32>,
    tools_hidden: Option<u32>,
    searches: Vec<(Ranking, Option<u32>)>,
    fallbacks: Vec<(FallbackKind, Option<u32>)>,
    searches_rejected: Option<u32>,
    calls_refused: Option<u32>,
    calls_forwarded: Option<u32>,
    errors: Option<u32>,
    embedding_failures: Option<u32>,
    passthrough: Vec<(PassReason, Option<u32>)>,
    refused: Vec<(Refusal, Option<u32>)>,
}

fn counter(name: &str) -> Option<u32> {
    match hostcalls::define_metric(MetricType::Counter, &format!("mcp_tool_search.{name}")) {
        Ok(id) => Some(id),
        Err(status) => {
            log::warn!("could not define stat {name}: {status:?}");
            None
        }
    }
}

impl Metrics {
    fn define() -> Self {
        Metrics {
            lists_rewritten: counter("lists_rewritten"),
            tools_hidden: counter("tools_hidden"),
            searches: [Ranking::Bm25, Ranking::Vector, Ranking::Hybrid]
                .iter()
                .map(|&r| (r, counter(&format!("searches_answered.{}", r.name()))))
                .collect(),
            fallbacks: FallbackKind::ALL
                .iter()
                .map(|&k| (k, counter(&format!("search_fallbacks.{}", k.name()))))
                .collect(),
            searches_rejected: counter("searches_rejected"),
            calls_refused: counter("calls_refused"),
            calls_forwarded: counter("calls_forwarded"),
            errors: counter("errors"),
            embedding_failures: counter("embedding_failures_total"),
            passthrough: PassReason::ALL
                .iter()
                .map(|&r| (r, counter(&format!("passthrough.{}", r.name()))))
                .collect(),
            refused: Refusal::ALL
                .iter()
                .map(|&r| (r, counter(&format!("requests_refused.{}", r.name()))))
                .collect(),
        }
    }

    fn record_embedding_failure(&self) {
        if let Some(id) = self.embedding_failures {
            let _ = hostcalls::increment_metric(id, 1);
        }
    }

    fn record(&self, event: Event) {
        let (id, by) = match event {
            Event::ListRewritten => (self.lists_rewritten, 1),
            Event::ToolsHidden(n) => (self.tools_hidden, i64::try_from(n).unwrap_or(i64::MAX)),
            Event::SearchAnswered(r) => (find(&self.searches, r), 1),
            Event::SearchFallback(k) => (find(&self.fallbacks, k), 1),
            Event::SearchRejected => (self.searches_rejected, 1),
            Event::CallRefused => (self.calls_refused, 1),
            Event::CallForwarded => (self.calls_forwarded, 1),
            Event::Error => (self.errors, 1),
            Event::PassedThrough(reason) => (find(&self.passthrough, reason), 1),
            Event::RequestRefused(reason) => (find(&self.refused, reason), 1),
        };
        if let Some(id) = id {
            if by > 0 {
                let _ = hostcalls::increment_metric(id, by);
            }
        }
    }
}

fn find<K: PartialEq>(ids: &[(K, Option<u32>)], key: K) -> Option<u32> {
    ids.iter().find(|(k, _)| *k == key).and_then(|(_, id)| *id)
}

/// What a VM's contexts share.
struct Plugin {
    config: Config,
    metrics: Metrics,
    cache: RefCell<CatalogCache>,
    worker: RefCell<Worker>,
    /// What this VM last wrote to the shared health key.
    degraded: RefCell<Option<String>>,
    /// Names this VM in embedding leases.
    vm_id: String,
}

/// Why semantic ranking is degraded (empty: it is not), shared by every worker so that health
/// answers the same wherever it is asked.
const HEALTH_KEY: &str = "mcp-tool-search/v1/embeddings-health";

impl Plugin {
    fn embedding_failed(&self, reason: &str) {
        self.set_health(reason);
    }

    fn embedding_worked(&self) {
        self.set_health("");
    }

    fn set_health(&self, reason: &str) {
        // Written only on a change, to keep shared-data traffic off the search path.
        let Ok(mut last) = self.degraded.try_borrow_mut() else {
            return;
        };
        let next = (!reason.is_empty()).then(|| reason.to_string());
        if *last != next || last.is_none() {
            let _ = hostcalls::set_shared_data(HEALTH_KEY, Some(reason.as_bytes()), None);
            *last = next;
        }
    }

    fn degraded(&self) -> Option<String> {
        let (value, _) = hostcalls::get_shared_data(HEALTH_KEY).ok()?;
        let reason = String::from_utf8(value?).ok()?;
        (!reason.is_empty()).then_some(reason)
    }
}

#[derive(Default)]
struct Root {
    context_id: u32,
    plugin: Option<Rc<Plugin>>,
}

/// How often a VM looks for tools to embed.
const EMBED_TICK: Duration = Duration::from_millis(500);

fn now_ms() -> u64 {
    hostcalls::get_current_time()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Sends an embeddings request through Envoy; the token identifies the answer.
fn dispatch_embeddings(config: &EmbeddingsConfig, texts: &[String]) -> Result<u32, String> {
    let headers = embeddings::request_headers(config);
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let body = embeddings::request_body(config, texts);
    hostcalls::dispatch_http_call(
        &config.cluster,
        headers,
        Some(&body),
        Vec::new(),
        Duration::from_millis(config.timeout_ms),
    )
    .map_err(|status| {
        format!(
            "could not call embeddings cluster {:?}: {status:?}",
            config.cluster
        )
    })
}

/// The answer to a dispatched call: its `:status` (if any) and body. A failed call (reset, no
/// healthy host) arrives with no headers at all, and then the host has no response map: asking
/// it for a header answers BadArgument, on which the SDK panics, so it is not asked.
fn call_response(num_headers: usize, body_size: usize) -> (Option<String>, Vec<u8>) {
    if num_headers == 0 {
        return (None, Vec::new());
    }
    let status = header(MapType::HttpCallResponseHeaders, ":status");
    let body = hostcalls::get_buffer(BufferType::HttpCallResponseBody, 0, body_size)
        .ok()
        .flatten()
        .unwrap_or_default();
    (status, body)
}

impl Root {
    /// One step of background embedding: at most one batch in flight per VM.
    fn embed_next(&self, plugin: &Plugin, config: &EmbeddingsConfig) {
        let now = now_ms();
        let Ok(mut worker) = plugin.worker.try_borrow_mut() else {
            return;
        };
        if !worker.due(now) {
            return;
        }
        for namespace in worker.pending() {
            let Ok(mut cache) = plugin.cache.try_borrow_mut() else {
                return;
            };
            let found = cache
                .index(&HostSharedData, &namespace, &plugin.config)
                .and_then(|index| {
                    let (_, missing) = cache.vectors(&HostSharedData, &index, &plugin.config)?;
                    Ok((index, missing))
                });
            let (index, missing) = match found {
                Ok(found) => found,
                Err(e) => {
                    log::warn!("embedding: catalog {namespace:?} unreadable: {e}");
                    worker.done(&namespace);
                    continue;
                }
            };
            if missing.is_empty() {
                worker.done(&namespace);
                continue;
            }
            let lease_ms = config.timeout_ms.saturating_add(1000);
            match store::take_lease(&HostSharedData, &namespace, &plugin.vm_id, now, lease_ms) {
                Ok(true) => {}
                // Another worker embeds this namespace; look again on a later tick.
                Ok(false) => continue,
                Err(e) => {
                    log::warn!("embedding: lease for {namespace:?} failed: {e}");
                    continue;
                }
            }
            let (texts, items) = Worker::batch(&index, &missing, config.max_batch_size);
            match dispatch_embeddings(config, &texts) {
                Ok(token) => worker.sent(InFlight {
                    token,
                    namespace,
                    items,
                }),
                Err(reason) => {
                    worker.failed(now);
                    plugin.metrics.record_embedding_failure();
                    plugin.embedding_failed(&reason);
                    log::warn!("embedding: {reason}");
                }
            }
            return;
        }
    }
}

impl Context for Root {
    fn on_http_call_response(
        &mut self,
        token: u32,
        headers: usize,
        body_size: usize,
        _trailers: usize,
    ) {
        let Some(plugin) = self.plugin.as_ref() else {
            return;
        };
        let Some(config) = plugin.config.search.embeddings.as_ref() else {
            return;
        };
        let Ok(mut worker) = plugin.worker.try_borrow_mut() else {
            return;
        };
        let Some(batch) = worker.take(token) else {
            return;
        };
        let (status, body) = call_response(headers, body_size);
        match embeddings::parse_response(config, status.as_deref(), &body, batch.items.len()) {
            Ok(vectors) => {
                let items = batch
                    .items
                    .into_iter()
                    .zip(vectors)
                    .map(|((name, hash), v)| (name, hash, v))
                    .collect();
                match store::store_vectors(&HostSharedData, &batch.namespace, items) {
                    Ok(()) => {
                        worker.succeeded();
                        plugin.embedding_worked();
                    }
                    Err(e) => log::warn!("embedding: could not store vectors: {e}"),
                }
            }
            Err(fallback) => {
                let backoff = worker.failed(now_ms());
                plugin.metrics.record_embedding_failure();
                plugin.embedding_failed(&fallback.reason);
                log::warn!(
                    "embedding {:?} failed ({}); retrying in {backoff} ms",
                    batch.namespace,
                    fallback.reason
                );
            }
        }
    }
}

impl RootContext for Root {
    fn on_configure(&mut self, size: usize) -> bool {
        follow_host_log_level();
        let bytes = match hostcalls::get_buffer(BufferType::PluginConfiguration, 0, size) {
            Ok(bytes) => bytes.unwrap_or_default(),
            Err(status) => {
                log::error!("could not read the plugin configuration: {status:?}");
                return false;
            }
        };
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(_) => {
                log::error!("plugin configuration is not UTF-8 text");
                return false;
            }
        };
        match Config::parse(&text) {
            Ok(config) => {
                if config.search.embeddings.is_some() {
                    if let Err(status) = hostcalls::set_tick_period(EMBED_TICK) {
                        log::error!("could not start the embedding timer: {status:?}");
                        return false;
                    }
                }
                self.plugin = Some(Rc::new(Plugin {
                    config,
                    metrics: Metrics::define(),
                    cache: RefCell::new(CatalogCache::new()),
                    worker: RefCell::new(Worker::default()),
                    degraded: RefCell::new(None),
                    vm_id: format!("{:x}-{}", now_ms(), self.context_id),
                }));
                true
            }
            Err(e) => {
                // Envoy refuses the plugin when this returns false; the operator sees why here.
                log::error!("{e}");
                false
            }
        }
    }

    fn on_tick(&mut self) {
        if let Some(plugin) = &self.plugin {
            if let Some(config) = &plugin.config.search.embeddings {
                self.embed_next(plugin, config);
            }
        }
    }

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        let plugin = Rc::clone(self.plugin.as_ref()?);
        Some(Box::new(Http {
            plugin,
            stream: Stream::new(),
            namespace: None,
            query_call: None,
        }))
    }

    fn get_type(&self) -> Option<ContextType> {
        Some(ContextType::HttpContext)
    }
}

struct Http {
    plugin: Rc<Plugin>,
    stream: Stream,
    namespace: Option<String>,
    /// The embeddings call of this stream's query: token, number of texts, and the size of
    /// the request body being held.
    query_call: Option<(u32, usize, usize)>,
}

/// Shared data through the host.
struct HostSharedData;

impl SharedData for HostSharedData {
    fn get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), StoreError> {
        hostcalls::get_shared_data(key).map_err(|s| StoreError::Host(format!("{s:?}")))
    }

    fn set(&self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), StoreError> {
        match hostcalls::set_shared_data(key, Some(value), cas) {
            Ok(()) => Ok(()),
            Err(Status::CasMismatch) => Err(StoreError::CasMismatch),
            Err(s) => Err(StoreError::Host(format!("{s:?}"))),
        }
    }
}

fn header(map: MapType, name: &str) -> Option<String> {
    hostcalls::get_map_value(map, name).ok().flatten()
}

/// A request header that must be sent once: a repeated identity header (one value set by the
/// trusted proxy, one by the client) names nobody.
fn single_header(headers: &[(String, String)], name: &str) -> Option<String> {
    let mut values = headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name));
    let (_, first) = values.next()?;
    values.next().is_none().then(|| first.clone())
}

fn property_string(path: Vec<&str>) -> Option<String> {
    let bytes = hostcalls::get_property(path).ok().flatten()?;
    String::from_utf8(bytes).ok().filter(|s| !s.is_empty())
}

impl Http {
    /// The catalog namespace: the route's metadata, else the upstream cluster (DESIGN.md §3).
    fn namespace(&mut self) -> String {
        if let Some(ns) = &self.namespace {
            return ns.clone();
        }
        let ns = property_string(vec![
            "xds",
            "route_metadata",
            "filter_metadata",
            METADATA_KEY,
            "namespace",
        ])
        .or_else(|| property_string(vec!["xds", "cluster_name"]))
        .unwrap_or_else(|| "default".to_string());
        self.namespace = Some(ns.clone());
        ns
    }

    /// The caller's claims, from the configured identity source.
    fn caller(&self, headers: &[(String, String)]) -> Caller {
        let Some(policy) = &self.plugin.config.authorization else {
            return Caller::anonymous();
        };
        match &policy.identity {
            IdentitySource::Header {
                header: name,
                claim,
            } => single_header(headers, name)
                .map(|v| Caller::from_header(claim, &v))
                .unwrap_or_default(),
            IdentitySource::JwtHeader { header: name } => single_header(headers, name)
                .map(|v| Caller::from_base64url_json(&v))
                .unwrap_or_default(),
            IdentitySource::JwtMetadata { filter, key } => {
                hostcalls::get_property(vec!["metadata"])
                    .ok()
                    .flatten()
                    .and_then(|bytes| {
                        mcp_tool_search_core::config::metadata::filter_metadata(&bytes, filter)
                    })
                    .and_then(|v| v.get(key.as_str()).cloned())
                    .filter(serde_json::Value::is_object)
                    .map(Caller::from_payload)
                    .unwrap_or_default()
            }
        }
    }

    /// Sends a local reply; the stream ends here (a local reply is followed by Pause).
    fn send(&mut self, reply: LocalReply) -> Action {
        let headers: Vec<(&str, &str)> = reply
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        match hostcalls::send_http_response(reply.status, headers, Some(&reply.body)) {
            Ok(()) => Action::Pause,
            Err(status) => {
                log::warn!("could not send the local reply: {status:?}");
                self.plugin.metrics.record(Event::Error);
                Action::Continue
            }
        }
    }

    fn carry_out(&mut self, action: RequestBodyAction, body_size: usize) -> Action {
        match action {
            RequestBodyAction::Continue {
                strip_accept_encoding,
            } => {
                // The response will be rewritten: it must come back uncompressed. (Headers held
                // by `hold_request_headers` can still change here.)
                if strip_accept_encoding && self.plugin.config.hold_request_headers {
                    let _ =
                        hostcalls::remove_map_value(MapType::HttpRequestHeaders, "accept-encoding");
                }
                Action::Continue
            }
            RequestBodyAction::Reply(reply) => self.send(reply),
            RequestBodyAction::Replace { body, mcp_name } => {
                replace_body(BufferType::HttpRequestBody, body_size, &body, &self.plugin);
                if self.plugin.config.hold_request_headers {
                    let length = body.len().to_string();
                    let _ = hostcalls::set_map_value(
                        MapType::HttpRequestHeaders,
                        "content-length",
                        Some(&length),
                    );
                    if let Some(name) = mcp_name {
                        let _ = hostcalls::set_map_value(
                            MapType::HttpRequestHeaders,
                            "mcp-name",
                            Some(&name),
                        );
                    }
                }
                Action::Continue
            }
            RequestBodyAction::Embed { texts } => {
                let Some(config) = self.plugin.config.search.embeddings.clone() else {
                    return self.answer_without_vectors("embeddings are not configured", body_size);
                };
                match dispatch_embeddings(&config, &texts) {
                    Ok(token) => {
                        self.query_call = Some((token, texts.len(), body_size));
                        // The reply is sent from on_http_call_response.
                        Action::Pause
                    }
                    Err(reason) => self.answer_without_vectors(&reason, body_size),
                }
            }
        }
    }

    fn answer_without_vectors(&mut self, reason: &str, body_size: usize) -> Action {
        self.plugin.embedding_failed(reason);
        let mut env = self.env();
        let fallback = Fallback::new(FallbackKind::Unavailable, reason);
        let action = self
            .stream
            .on_query_embeddings(&self.plugin.config, &mut env, Err(fallback));
        self.carry_out(action, body_size)
    }

    fn env(&mut self) -> HostEnv {
        HostEnv {
            namespace: self.namespace(),
            plugin: Rc::clone(&self.plugin),
        }
    }

    fn read_body(&self, buffer: BufferType, size: usize) -> Option<Vec<u8>> {
        match hostcalls::get_buffer(buffer, 0, size) {
            Ok(body) => Some(body.unwrap_or_default()),
            Err(status) => {
                log::warn!("could not read the body: {status:?}");
                self.plugin.metrics.record(Event::Error);
                None
            }
        }
    }
}

struct HostEnv {
    namespace: String,
    plugin: Rc<Plugin>,
}

impl Env for HostEnv {
    fn namespace(&self) -> String {
        self.namespace.clone()
    }

    fn catalog_of(&mut self, namespace: &str) -> Result<Rc<CatalogIndex>, StoreError> {
        self.plugin
            .cache
            .try_borrow_mut()
            .map_err(|_| StoreError::Host("catalog cache busy".into()))?
            .index(&HostSharedData, namespace, &self.plugin.config)
    }

    fn namespaces(&mut self) -> Vec<String> {
        mcp_tool_search_core::store::namespaces(&HostSharedData).unwrap_or_default()
    }

    fn tool_vectors(&mut self, index: &CatalogIndex) -> Option<Rc<ToolVectors>> {
        self.plugin.config.search.embeddings.as_ref()?;
        let mut cache = self.plugin.cache.try_borrow_mut().ok()?;
        // Vectors are resolved against the cached index (the same Rc a search holds).
        let shared_index = cache
            .index(&HostSharedData, &index.namespace, &self.plugin.config)
            .ok()?;
        let (vectors, missing) = cache
            .vectors(&HostSharedData, &shared_index, &self.plugin.config)
            .ok()?;
        if !missing.is_empty() {
            if let Ok(mut worker) = self.plugin.worker.try_borrow_mut() {
                worker.mark(&index.namespace);
            }
        }
        Some(vectors)
    }

    fn embeddings_degraded(&mut self) -> Option<String> {
        self.plugin.degraded()
    }

    fn learn(&mut self, learned: Learned) -> Result<bool, StoreError> {
        self.plugin
            .cache
            .try_borrow_mut()
            .map_err(|_| StoreError::Host("catalog cache busy".into()))?
            .learn(&HostSharedData, &self.namespace, learned)
            .inspect(|_| {
                if self.plugin.config.search.embeddings.is_some() {
                    if let Ok(mut worker) = self.plugin.worker.try_borrow_mut() {
                        worker.mark(&self.namespace);
                    }
                }
            })
    }

    fn record(&mut self, event: Event) {
        self.plugin.metrics.record(event);
    }

    fn log_warn(&mut self, message: &str) {
        log::warn!("{message}");
    }
}

impl Context for Http {
    fn on_http_call_response(
        &mut self,
        token: u32,
        headers: usize,
        body_size: usize,
        _trailers: usize,
    ) {
        let Some((expected, inputs, request_size)) = self.query_call.take() else {
            return;
        };
        if token != expected {
            return;
        }
        let Some(config) = self.plugin.config.search.embeddings.clone() else {
            return;
        };
        let (status, body) = call_response(headers, body_size);
        let vectors = embeddings::parse_response(&config, status.as_deref(), &body, inputs);
        match &vectors {
            Ok(_) => self.plugin.embedding_worked(),
            Err(f) => self.plugin.embedding_failed(&f.reason),
        }
        let mut env = self.env();
        let action = self
            .stream
            .on_query_embeddings(&self.plugin.config, &mut env, vectors);
        if self.carry_out(action, request_size) == Action::Continue {
            let _ = hostcalls::resume_http_request();
        }
    }
}

impl HttpContext for Http {
    fn on_http_request_headers(&mut self, _num_headers: usize, end_of_stream: bool) -> Action {
        let h = |name| header(MapType::HttpRequestHeaders, name);
        // Every value of a repeated header: Envoy's single-value lookup would show only one.
        let pairs = hostcalls::get_map(MapType::HttpRequestHeaders).unwrap_or_default();
        let mut mcp = Mirrored::default();
        for (name, value) in &pairs {
            mcp.add(name, value);
        }
        let head = RequestHead {
            method: h(":method").unwrap_or_default(),
            path: h(":path").unwrap_or_default(),
            mcp,
            accept: h("accept"),
            session_id: h("mcp-session-id"),
            caller: self.caller(&pairs),
        };
        let mut env = self.env();
        match self
            .stream
            .on_request_headers(&self.plugin.config, &mut env, head, end_of_stream)
        {
            RequestHeadersAction::Continue => Action::Continue,
            RequestHeadersAction::ReadBody {
                hold,
                strip_accept_encoding,
                drop_content_length,
            } => {
                if strip_accept_encoding {
                    let _ =
                        hostcalls::remove_map_value(MapType::HttpRequestHeaders, "accept-encoding");
                }
                if drop_content_length {
                    let _ =
                        hostcalls::remove_map_value(MapType::HttpRequestHeaders, "content-length");
                }
                if hold {
                    Action::Pause
                } else {
                    Action::Continue
                }
            }
            RequestHeadersAction::Reply(reply) => self.send(reply),
        }
    }

    fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if self.stream.awaiting_embeddings() {
            return Action::Pause;
        }
        if !self.stream.wants_request_body() {
            return Action::Continue;
        }
        let mut env = self.env();
        let config = &self.plugin.config;
        if body_size > self.stream.request_cap(config) {
            return match self.stream.request_too_large(config, &mut env) {
                Some(reply) => self.send(reply),
                None => Action::Continue,
            };
        }
        if !end_of_stream {
            // Envoy keeps the chunks while we pause; `body_size` then counts all of them.
            return Action::Pause;
        }
        let Some(body) = self.read_body(BufferType::HttpRequestBody, body_size) else {
            return match self.stream.request_body_unavailable(
                config,
                &mut env,
                "the host could not hand over the body",
            ) {
                Some(reply) => self.send(reply),
                None => Action::Continue,
            };
        };
        let action = self.stream.on_request_body(config, &mut env, &body);
        self.carry_out(action, body_size)
    }

    fn on_http_request_trailers(&mut self, _num_trailers: usize) -> Action {
        // HTTP/2 request trailers end the stream: a body still held was never seen whole, and
        // continuing would send it upstream unread.
        let mut env = self.env();
        match self.stream.request_body_unavailable(
            &self.plugin.config,
            &mut env,
            "request trailers ended the body before it could be read",
        ) {
            Some(reply) => self.send(reply),
            None => Action::Continue,
        }
    }

    fn on_http_response_headers(&mut self, _num_headers: usize, end_of_stream: bool) -> Action {
        if end_of_stream || !self.stream.awaiting_response() {
            return Action::Continue;
        }
        let h = |name| header(MapType::HttpResponseHeaders, name);
        let mut env = self.env();
        let action = self.stream.on_response_headers(
            &self.plugin.config,
            &mut env,
            h(":status").as_deref(),
            h("content-type").as_deref(),
            h("content-encoding").as_deref(),
        );
        if action != ResponseHeadersAction::Continue {
            if let Some(length) = h("content-length").and_then(|v| v.trim().parse().ok()) {
                self.stream
                    .expect_response_length(&self.plugin.config, length);
            }
            // The body's length changes; headers can only change in this callback.
            let _ = hostcalls::remove_map_value(MapType::HttpResponseHeaders, "content-length");
        }
        if action == ResponseHeadersAction::Refuse {
            let _ = hostcalls::remove_map_value(MapType::HttpResponseHeaders, "content-encoding");
            let _ = hostcalls::set_map_value(
                MapType::HttpResponseHeaders,
                "content-type",
                Some("application/json"),
            );
        }
        Action::Continue
    }

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if !self.stream.rewriting_response() {
            return Action::Continue;
        }
        let mut env = self.env();
        // Always Continue: the core holds what it must (in the VM), so Envoy's buffer limit
        // never turns a large list into a reset stream.
        let Some(chunk) = self.read_body(BufferType::HttpResponseBody, body_size) else {
            return Action::Continue;
        };
        let out =
            self.stream
                .on_response_chunk(&self.plugin.config, &mut env, &chunk, end_of_stream);
        if out != chunk {
            replace_body(BufferType::HttpResponseBody, body_size, &out, &self.plugin);
        }
        Action::Continue
    }

    fn on_http_response_trailers(&mut self, _num_trailers: usize) -> Action {
        // HTTP/2 with trailers: the body never saw end_of_stream (DESIGN.md §6).
        if self.stream.rewriting_response() {
            let mut env = self.env();
            self.stream.on_response_trailers(&mut env);
        }
        Action::Continue
    }
}

fn replace_body(buffer: BufferType, size: usize, new: &[u8], plugin: &Plugin) {
    if let Err(status) = hostcalls::set_buffer(buffer, 0, size, new) {
        log::warn!("could not replace the body: {status:?}");
        plugin.metrics.record(Event::Error);
    }
}
