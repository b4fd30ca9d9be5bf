//! One HTTP stream: each callback hands the core what it asks for and carries out its answer.
//!
//! The stream's state lives behind an `Rc` so that the root context can resume a request that
//! waits on another worker's catalog fetch (the root tick is the only timer a VM has).

use super::host::{call_response, header, Shared};
use mcp_tool_search_core::plugin::{
    FetchProgress, FetchStart, Host, Level, PluginEnv, FETCH_MARKER_HEADER,
};
use mcp_tool_search_core::stream::{
    Event, HeaderChange, LocalReply, RequestBodyAction, RequestHead, RequestHeadersAction,
    ResponseHeadersAction, Stream,
};
use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext};
use proxy_wasm::types::{Action, BufferType, MapType};
use std::cell::RefCell;
use std::rc::Rc;

/// The route metadata the filter reads its namespace from:
/// `metadata.filter_metadata.mcp_tool_search.namespace` on the route.
const METADATA_KEY: &str = "mcp_tool_search";

pub(super) struct Http(Rc<RefCell<Inner>>);

pub(super) struct Inner {
    shared: Rc<Shared>,
    context_id: u32,
    stream: Stream,
    namespace: Option<String>,
    cluster: Option<Option<String>>,
    authority: Option<String>,
    /// The embeddings call of this stream's queries: token, number of texts, and the size of
    /// the request body being held.
    query_call: Option<(u32, usize, usize)>,
    /// The current call of this stream's catalog fetch, and the request body size held.
    fetch_call: Option<(u32, usize)>,
    /// Another worker fetches the catalog this request needs: (namespace, body size held).
    wait: Option<(String, usize)>,
    /// The `tools/call` the filter makes for `call_tool`, and the request body size held.
    upstream_call: Option<(u32, usize)>,
    /// The upstream answered a request the filter is answering itself (its headers went ahead
    /// of its body): that response waits, unsent, for the local reply to replace it.
    response_held: bool,
    /// This filter sent the response: it passes its own callbacks untouched.
    replied: bool,
}

/// A request waiting on another worker's fetch of `namespace`, resumed by the root tick.
struct Waiter {
    context_id: u32,
    namespace: String,
    body_size: usize,
    inner: std::rc::Weak<RefCell<Inner>>,
}

thread_local! {
    /// This VM's waiting requests (a VM is one thread).
    static WAITING: RefCell<Vec<Waiter>> = const { RefCell::new(Vec::new()) };
}

fn property_string(path: Vec<&str>) -> Option<String> {
    let bytes = hostcalls::get_property(path).ok().flatten()?;
    String::from_utf8(bytes).ok().filter(|s| !s.is_empty())
}

impl Http {
    pub(super) fn new(shared: Rc<Shared>, context_id: u32) -> Self {
        Http(Rc::new(RefCell::new(Inner {
            shared,
            context_id,
            stream: Stream::new(),
            namespace: None,
            cluster: None,
            authority: None,
            query_call: None,
            fetch_call: None,
            wait: None,
            upstream_call: None,
            response_held: false,
            replied: false,
        })))
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> Option<T> {
        // A callback re-entered while another runs would find the state borrowed: it is left
        // alone (let through) rather than trap the VM.
        self.0.try_borrow_mut().ok().map(|mut inner| f(&mut inner))
    }
}

/// Resumes the requests whose awaited fetch (another worker's) has ended. From the root tick.
pub(super) fn resume_waiters() {
    let Ok(waiting) = WAITING.try_with(|w| w.try_borrow_mut().map(|mut w| std::mem::take(&mut *w)))
    else {
        return;
    };
    let Ok(waiting) = waiting else {
        return;
    };
    let mut still = Vec::new();
    for waiter in waiting {
        let Some(rc) = waiter.inner.upgrade() else {
            continue;
        };
        let Ok(mut inner) = rc.try_borrow_mut() else {
            still.push(waiter);
            continue;
        };
        let shared = Rc::clone(&inner.shared);
        if !shared.plugin.fetch_settled(&shared.host, &waiter.namespace) {
            drop(inner);
            still.push(waiter);
            continue;
        }
        if hostcalls::set_effective_context(waiter.context_id).is_err() {
            continue;
        }
        let action = inner.with_env(|stream, config, env| {
            stream.on_catalog_settled(config, env, &waiter.namespace)
        });
        inner.carry_out_later(action, waiter.body_size);
        drop(inner);
        register_wait(&rc);
    }
    let _ = WAITING.try_with(|w| {
        if let Ok(mut w) = w.try_borrow_mut() {
            w.extend(still);
        }
    });
}

impl Inner {
    /// The catalog namespace: the route's metadata, else the upstream cluster.
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
        .or_else(|| self.cluster())
        .unwrap_or_else(|| "default".to_string());
        self.namespace = Some(ns.clone());
        ns
    }

    /// The route's upstream cluster.
    fn cluster(&mut self) -> Option<String> {
        if let Some(cluster) = &self.cluster {
            return cluster.clone();
        }
        let cluster = property_string(vec!["xds", "cluster_name"]);
        self.cluster = Some(cluster.clone());
        cluster
    }

    /// Runs `f` with the stream, the configuration and the stream's view of the plugin.
    fn with_env<T>(
        &mut self,
        f: impl FnOnce(&mut Stream, &mcp_tool_search_core::config::Config, &mut PluginEnv) -> T,
    ) -> T {
        let namespace = self.namespace();
        let cluster = self.cluster();
        let shared = Rc::clone(&self.shared);
        let mut env = shared
            .plugin
            .env(&shared.host, namespace)
            .with_route(cluster, self.authority.clone());
        f(&mut self.stream, &shared.plugin.config, &mut env)
    }

    /// A hostcall the stream needed failed: logged and counted in `errors`.
    fn hostcall_failed(&self, what: &str) {
        self.shared.host.log(Level::Warn, what);
        let (stat, by) = Event::Error.stat();
        self.shared.host.increment(stat, by);
    }

    /// Sends a local reply; the stream ends here (a local reply is followed by Pause).
    fn send(&mut self, reply: LocalReply) -> Action {
        let headers: Vec<(&str, &str)> = reply
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        // The reply goes through this filter's own response callbacks, within this call.
        self.replied = true;
        match hostcalls::send_http_response(reply.status, headers, Some(&reply.body)) {
            Ok(()) => Action::Pause,
            Err(status) => {
                self.hostcall_failed(&format!("could not send the local reply: {status:?}"));
                // A reply that could not be sent may be a refusal: holding the stream (until
                // Envoy times it out) is safe, forwarding it would not be.
                Action::Pause
            }
        }
    }

    /// `carry_out` for a request that paused (for a call, a fetch, another worker): a request
    /// going on resumes, and so does an upstream response held meanwhile.
    fn carry_out_later(&mut self, action: RequestBodyAction, body_size: usize) {
        if self.carry_out(action, body_size) == Action::Continue {
            let _ = hostcalls::resume_http_request();
            if std::mem::take(&mut self.response_held) {
                let _ = hostcalls::resume_http_response();
            }
        }
    }

    fn carry_out(&mut self, action: RequestBodyAction, body_size: usize) -> Action {
        match action {
            RequestBodyAction::Continue { headers } => {
                change_request_headers(&headers);
                Action::Continue
            }
            RequestBodyAction::Reply(reply) => self.send(reply),
            RequestBodyAction::Replace { body, headers } => {
                self.replace_body(BufferType::HttpRequestBody, body_size, &body);
                change_request_headers(&headers);
                Action::Continue
            }
            RequestBodyAction::Embed { texts } => {
                match self.shared.plugin.embed_queries(&self.shared.host, &texts) {
                    Ok(token) => {
                        self.query_call = Some((token, texts.len(), body_size));
                        // The reply is sent from on_http_call_response.
                        Action::Pause
                    }
                    Err(fallback) => {
                        let action = self.with_env(|stream, config, env| {
                            stream.on_query_embeddings(config, env, Err(fallback))
                        });
                        self.carry_out(action, body_size)
                    }
                }
            }
            RequestBodyAction::Call(call) => match self.shared.host.http_call(call) {
                Ok(token) => {
                    self.upstream_call = Some((token, body_size));
                    Action::Pause
                }
                Err(reason) => {
                    let action = self.with_env(|stream, config, env| {
                        stream.on_call_answer(config, env, Err(reason))
                    });
                    self.carry_out(action, body_size)
                }
            },
            RequestBodyAction::Fetch { namespace, spec } => {
                match self
                    .shared
                    .plugin
                    .start_fetch(&self.shared.host, &namespace, spec)
                {
                    FetchStart::Started(token) => {
                        self.fetch_call = Some((token, body_size));
                        Action::Pause
                    }
                    FetchStart::Busy => {
                        self.wait_for(namespace, body_size);
                        Action::Pause
                    }
                    FetchStart::Failed(error) => {
                        let action = self.with_env(|stream, config, env| {
                            stream.on_catalog(config, env, Err(error.to_string()))
                        });
                        self.carry_out(action, body_size)
                    }
                }
            }
        }
    }

    /// Asks to be resumed once another worker's fetch of `namespace` ends (registered by
    /// [`register_wait`] after the callback, which holds the `Rc`).
    fn wait_for(&mut self, namespace: String, body_size: usize) {
        self.wait = Some((namespace, body_size));
    }

    fn read_body(&self, buffer: BufferType, size: usize) -> Option<Vec<u8>> {
        match hostcalls::get_buffer(buffer, 0, size) {
            Ok(body) => Some(body.unwrap_or_default()),
            Err(status) => {
                self.hostcall_failed(&format!("could not read the body: {status:?}"));
                None
            }
        }
    }

    fn replace_body(&self, buffer: BufferType, size: usize, new: &[u8]) {
        if let Err(status) = hostcalls::set_buffer(buffer, 0, size, new) {
            self.hostcall_failed(&format!("could not replace the body: {status:?}"));
        }
    }

    /// A reply the core asked for, or Continue.
    fn reply_or_continue(&mut self, reply: Option<LocalReply>) -> Action {
        match reply {
            Some(reply) => self.send(reply),
            None => Action::Continue,
        }
    }
}

/// Registers the stream as waiting if its last action asked to.
fn register_wait(inner: &Rc<RefCell<Inner>>) {
    let Ok(mut state) = inner.try_borrow_mut() else {
        return;
    };
    let Some((namespace, body_size)) = state.wait.take() else {
        return;
    };
    let waiter = Waiter {
        context_id: state.context_id,
        namespace,
        body_size,
        inner: Rc::downgrade(inner),
    };
    drop(state);
    let _ = WAITING.try_with(|w| {
        if let Ok(mut w) = w.try_borrow_mut() {
            w.push(waiter);
        }
    });
}

fn change_request_headers(changes: &[HeaderChange]) {
    for change in changes {
        let _ = match change {
            HeaderChange::Remove(name) => {
                hostcalls::remove_map_value(MapType::HttpRequestHeaders, name)
            }
            HeaderChange::Set(name, value) => {
                hostcalls::set_map_value(MapType::HttpRequestHeaders, name, Some(value))
            }
        };
    }
}

impl Inner {
    fn on_call_response(&mut self, token: u32, headers: usize, body_size: usize) {
        if let Some((expected, request_size)) = self.upstream_call {
            if token == expected {
                self.upstream_call = None;
                let answer = call_response(headers, body_size);
                let action = self
                    .with_env(|stream, config, env| stream.on_call_answer(config, env, Ok(answer)));
                self.carry_out_later(action, request_size);
                return;
            }
        }
        if let Some((expected, request_size)) = self.fetch_call {
            if token == expected {
                self.fetch_call = None;
                let (status, response_headers, body) = call_response(headers, body_size);
                let progress = self.shared.plugin.on_fetch_response(
                    &self.shared.host,
                    token,
                    status.as_deref(),
                    &response_headers,
                    &body,
                );
                match progress {
                    Some(FetchProgress::Next(next)) => self.fetch_call = Some((next, request_size)),
                    Some(FetchProgress::Finished { result, .. }) => {
                        let action = self
                            .with_env(|stream, config, env| stream.on_catalog(config, env, result));
                        self.carry_out_later(action, request_size);
                    }
                    None => {}
                }
                return;
            }
        }
        let Some((expected, texts, request_size)) = self.query_call.take() else {
            return;
        };
        if token != expected {
            self.query_call = Some((expected, texts, request_size));
            return;
        }
        let (status, _, body) = call_response(headers, body_size);
        let vectors = self.shared.plugin.on_query_embeddings(
            &self.shared.host,
            status.as_deref(),
            &body,
            texts,
        );
        let action =
            self.with_env(|stream, config, env| stream.on_query_embeddings(config, env, vectors));
        self.carry_out_later(action, request_size);
    }

    fn on_request_headers(&mut self, end_of_stream: bool) -> Action {
        // Every value of a repeated header: Envoy's single-value lookup would show only one.
        // Values as bytes: Envoy passes on values that are not UTF-8, and the SDK's string
        // accessors panic on them (which would trap the VM).
        let raw = hostcalls::get_map_bytes(MapType::HttpRequestHeaders).unwrap_or_default();
        let mut invalid = Vec::new();
        let pairs: Vec<(String, String)> = raw
            .into_iter()
            .map(|(name, value)| {
                let value = match String::from_utf8(value) {
                    Ok(v) => v,
                    Err(e) => {
                        invalid.push(name.clone());
                        String::from_utf8_lossy(e.as_bytes()).into_owned()
                    }
                };
                (name, value)
            })
            .collect();
        let mut head = RequestHead::from_headers(&self.shared.plugin.config, &pairs, || {
            hostcalls::get_property(vec!["metadata"]).ok().flatten()
        });
        head.invalid_utf8 = invalid;
        if head.fetch_marker.is_some() {
            // Never reaches the upstream, whether it is ours or forged.
            let _ = hostcalls::remove_map_value(MapType::HttpRequestHeaders, FETCH_MARKER_HEADER);
        }
        self.authority = head.authority.clone();
        let action = self.with_env(|stream, config, env| {
            stream.on_request_headers(config, env, head, end_of_stream)
        });
        match action {
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

    fn on_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if self.stream.awaiting_embeddings()
            || self.stream.awaiting_catalog()
            || self.upstream_call.is_some()
        {
            return Action::Pause;
        }
        if !self.stream.wants_request_body() {
            return Action::Continue;
        }
        if body_size > self.stream.request_cap(&self.shared.plugin.config) {
            let reply = self.with_env(|stream, config, env| stream.request_too_large(config, env));
            return self.reply_or_continue(reply);
        }
        if !end_of_stream {
            // Envoy keeps the chunks while we pause; `body_size` then counts all of them.
            return Action::Pause;
        }
        let Some(body) = self.read_body(BufferType::HttpRequestBody, body_size) else {
            let reply = self.with_env(|stream, config, env| {
                stream.request_body_unavailable(
                    config,
                    env,
                    "the host could not hand over the body",
                )
            });
            return self.reply_or_continue(reply);
        };
        let action =
            self.with_env(|stream, config, env| stream.on_request_body(config, env, &body));
        self.carry_out(action, body_size)
    }

    fn on_request_trailers(&mut self) -> Action {
        // HTTP/2 request trailers end the stream: a body still held was never seen whole, and
        // continuing would send it upstream unread.
        let reply = self.with_env(|stream, config, env| {
            stream.request_body_unavailable(
                config,
                env,
                "request trailers ended the body before it could be read",
            )
        });
        self.reply_or_continue(reply)
    }

    fn on_response_headers(&mut self, end_of_stream: bool) -> Action {
        // Envoy replaces a response whose headers have not gone downstream with a local reply
        // (it resets one whose headers have): held here, the upstream's early answer (a 404 for
        // the search endpoint's path, say) never reaches the client.
        if !self.replied && self.stream.answering_locally() {
            self.response_held = true;
            return Action::Pause;
        }
        if end_of_stream || !self.stream.awaiting_response() {
            return Action::Continue;
        }
        let h = |name| header(MapType::HttpResponseHeaders, name);
        let (status, content_type, encoding) =
            (h(":status"), h("content-type"), h("content-encoding"));
        let action = self.with_env(|stream, config, env| {
            stream.on_response_headers(
                config,
                env,
                status.as_deref(),
                content_type.as_deref(),
                encoding.as_deref(),
            )
        });
        if matches!(
            action,
            ResponseHeadersAction::RewriteBody | ResponseHeadersAction::Refuse
        ) {
            if let Some(length) = h("content-length").and_then(|v| v.trim().parse().ok()) {
                self.stream
                    .expect_response_length(&self.shared.plugin.config, length);
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

    fn on_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        // Continuing the body would let the held headers go.
        if self.response_held {
            return Action::Pause;
        }
        if !self.stream.rewriting_response() {
            return Action::Continue;
        }
        // Always Continue: the core holds what it must (in the VM), so Envoy's buffer limit
        // never turns a large list into a reset stream.
        let Some(chunk) = self.read_body(BufferType::HttpResponseBody, body_size) else {
            return Action::Continue;
        };
        let out = self.with_env(|stream, config, env| {
            stream.on_response_chunk(config, env, &chunk, end_of_stream)
        });
        if out != chunk {
            self.replace_body(BufferType::HttpResponseBody, body_size, &out);
        }
        Action::Continue
    }

    fn on_response_trailers(&mut self) -> Action {
        // HTTP/2 with trailers: the body never saw end_of_stream.
        if self.stream.rewriting_response() {
            self.with_env(|stream, _, env| stream.on_response_trailers(env));
        }
        Action::Continue
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
        self.with(|inner| inner.on_call_response(token, headers, body_size));
        register_wait(&self.0);
    }
}

impl HttpContext for Http {
    fn on_http_request_headers(&mut self, _num_headers: usize, end_of_stream: bool) -> Action {
        self.with(|inner| inner.on_request_headers(end_of_stream))
            .unwrap_or(Action::Continue)
    }

    fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        let action = self
            .with(|inner| inner.on_request_body(body_size, end_of_stream))
            .unwrap_or(Action::Continue);
        register_wait(&self.0);
        action
    }

    fn on_http_request_trailers(&mut self, _num_trailers: usize) -> Action {
        self.with(Inner::on_request_trailers)
            .unwrap_or(Action::Continue)
    }

    fn on_http_response_headers(&mut self, _num_headers: usize, end_of_stream: bool) -> Action {
        self.with(|inner| inner.on_response_headers(end_of_stream))
            .unwrap_or(Action::Continue)
    }

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        self.with(|inner| inner.on_response_body(body_size, end_of_stream))
            .unwrap_or(Action::Continue)
    }

    fn on_http_response_trailers(&mut self, _num_trailers: usize) -> Action {
        self.with(Inner::on_response_trailers)
            .unwrap_or(Action::Continue)
    }
}
