//! The proxy-wasm layer: Envoy's callbacks mapped onto the core. Kept thin on purpose; every
//! decision lives in `stream` and below, where it is tested natively.
//!
//! Hostcalls are only made through the SDK's `Result`-returning functions (never the
//! convenience trait methods, which unwrap), and a failed hostcall degrades to "let the traffic
//! through": a panic here would trap the VM and take the listener's filter chain down with it.

use crate::catalog::{CatalogIndex, Tool};
use crate::config::Config;
use crate::store::{CatalogCache, SharedData, StoreError};
use crate::config::Ranking;
use crate::policy::{Caller, IdentitySource};
use crate::search::FallbackKind;
use crate::stream::{
    Env, Event, LocalReply, PassReason, RequestBodyAction, RequestHead, RequestHeadersAction,
    ResponseHeadersAction, Stream,
};
use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext, RootContext};
use proxy_wasm::types::{Action, BufferType, ContextType, LogLevel, MapType, MetricType, Status};
use std::cell::RefCell;
use std::rc::Rc;

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
pub fn start() {
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(log::LevelFilter::Warn);
    std::panic::set_hook(Box::new(|info| {
        let _ = hostcalls::log(
            LogLevel::Critical,
            &format!("mcp-tool-search panicked: {info}"),
        );
    }));
    proxy_wasm::set_root_context(|_| Box::new(Root::default()));
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
    passthrough: Vec<(PassReason, Option<u32>)>,
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
            passthrough: PassReason::ALL
                .iter()
                .map(|&r| (r, counter(&format!("passthrough.{}", r.name()))))
                .collect(),
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
}

#[derive(Default)]
struct Root {
    plugin: Option<Rc<Plugin>>,
}

impl Context for Root {}

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
                self.plugin = Some(Rc::new(Plugin {
                    config,
                    metrics: Metrics::define(),
                    cache: RefCell::new(CatalogCache::new()),
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

    fn create_http_context(&self, _context_id: u32) -> Option<Box<dyn HttpContext>> {
        let plugin = Rc::clone(self.plugin.as_ref()?);
        Some(Box::new(Http {
            plugin,
            stream: Stream::new(),
            namespace: None,
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
    fn caller(&self) -> Caller {
        let Some(policy) = &self.plugin.config.authorization else {
            return Caller::anonymous();
        };
        match &policy.identity {
            IdentitySource::Header { header: name, claim } => header(MapType::HttpRequestHeaders, name)
                .map(|v| Caller::from_header(claim, &v))
                .unwrap_or_default(),
            IdentitySource::JwtHeader { header: name } => header(MapType::HttpRequestHeaders, name)
                .map(|v| Caller::from_base64url_json(&v))
                .unwrap_or_default(),
            IdentitySource::JwtMetadata { filter, key } => hostcalls::get_property(vec!["metadata"])
                .ok()
                .flatten()
                .and_then(|bytes| crate::proto::filter_metadata(&bytes, filter))
                .and_then(|v| v.get(key.as_str()).cloned())
                .filter(serde_json::Value::is_object)
                .map(Caller::from_payload)
                .unwrap_or_default(),
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
                    let _ = hostcalls::remove_map_value(MapType::HttpRequestHeaders, "accept-encoding");
                }
                Action::Continue
            }
            RequestBodyAction::Reply(reply) => self.send(reply),
            RequestBodyAction::Replace { body, mcp_name } => {
                replace_body(BufferType::HttpRequestBody, body_size, &body, &self.plugin);
                if self.plugin.config.hold_request_headers {
                    let length = body.len().to_string();
                    let _ = hostcalls::set_map_value(MapType::HttpRequestHeaders, "content-length", Some(&length));
                    if let Some(name) = mcp_name {
                        let _ = hostcalls::set_map_value(MapType::HttpRequestHeaders, "mcp-name", Some(&name));
                    }
                }
                Action::Continue
            }
            RequestBodyAction::Embed { texts } => {
                // Semantic ranking comes with the embeddings issue; until a call is dispatched the
                // search is answered by BM25 at once.
                let _ = texts;
                let mut env = self.env();
                let action = self.stream.on_query_embeddings(
                    &self.plugin.config,
                    &mut env,
                    Err(crate::search::Fallback::new(FallbackKind::Unavailable, "embeddings are not wired yet")),
                );
                self.carry_out(action, body_size)
            }
        }
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
        crate::store::namespaces(&HostSharedData).unwrap_or_default()
    }

    fn learn(&mut self, page: &[Tool], complete: bool) -> Result<bool, StoreError> {
        self.plugin
            .cache
            .try_borrow_mut()
            .map_err(|_| StoreError::Host("catalog cache busy".into()))?
            .learn(&HostSharedData, &self.namespace, page, complete)
    }

    fn record(&mut self, event: Event) {
        self.plugin.metrics.record(event);
    }

    fn log_warn(&mut self, message: &str) {
        log::warn!("{message}");
    }
}

impl Context for Http {}

impl HttpContext for Http {
    fn on_http_request_headers(&mut self, _num_headers: usize, end_of_stream: bool) -> Action {
        let h = |name| header(MapType::HttpRequestHeaders, name);
        let head = RequestHead {
            method: h(":method").unwrap_or_default(),
            path: h(":path").unwrap_or_default(),
            mcp_method: h("mcp-method"),
            mcp_name: h("mcp-name"),
            protocol_version: h("mcp-protocol-version"),
            accept: h("accept"),
            session_id: h("mcp-session-id"),
            caller: self.caller(),
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
                    let _ = hostcalls::remove_map_value(MapType::HttpRequestHeaders, "accept-encoding");
                }
                if drop_content_length {
                    let _ = hostcalls::remove_map_value(MapType::HttpRequestHeaders, "content-length");
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
            return Action::Continue;
        };
        let action = self.stream.on_request_body(config, &mut env, &body);
        self.carry_out(action, body_size)
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
            // The body's length changes; headers can only change in this callback.
            let _ = hostcalls::remove_map_value(MapType::HttpResponseHeaders, "content-length");
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
