//! One HTTP stream: each callback hands the core what it asks for and carries out its answer.

use super::host::{call_response, header, Shared};
use mcp_tool_search_core::plugin::{Host, Level, PluginEnv};
use mcp_tool_search_core::stream::{
    Event, HeaderChange, LocalReply, RequestBodyAction, RequestHead, RequestHeadersAction,
    ResponseHeadersAction, Stream,
};
use proxy_wasm::hostcalls;
use proxy_wasm::traits::{Context, HttpContext};
use proxy_wasm::types::{Action, BufferType, MapType};
use std::rc::Rc;

/// The route metadata the filter reads its namespace from:
/// `metadata.filter_metadata.mcp_tool_search.namespace` on the route.
const METADATA_KEY: &str = "mcp_tool_search";

pub(super) struct Http {
    shared: Rc<Shared>,
    stream: Stream,
    namespace: Option<String>,
    /// The embeddings call of this stream's queries: token, number of texts, and the size of
    /// the request body being held.
    query_call: Option<(u32, usize, usize)>,
}

fn property_string(path: Vec<&str>) -> Option<String> {
    let bytes = hostcalls::get_property(path).ok().flatten()?;
    String::from_utf8(bytes).ok().filter(|s| !s.is_empty())
}

impl Http {
    pub(super) fn new(shared: Rc<Shared>) -> Self {
        Http {
            shared,
            stream: Stream::new(),
            namespace: None,
            query_call: None,
        }
    }

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
        .or_else(|| property_string(vec!["xds", "cluster_name"]))
        .unwrap_or_else(|| "default".to_string());
        self.namespace = Some(ns.clone());
        ns
    }

    /// Runs `f` with the stream, the configuration and the stream's view of the plugin.
    fn with_env<T>(
        &mut self,
        f: impl FnOnce(&mut Stream, &mcp_tool_search_core::config::Config, &mut PluginEnv) -> T,
    ) -> T {
        let namespace = self.namespace();
        let shared = Rc::clone(&self.shared);
        let mut env = shared.plugin.env(&shared.host, namespace);
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
        }
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

impl Context for Http {
    fn on_http_call_response(
        &mut self,
        token: u32,
        headers: usize,
        body_size: usize,
        _trailers: usize,
    ) {
        let Some((expected, texts, request_size)) = self.query_call.take() else {
            return;
        };
        if token != expected {
            return;
        }
        let (status, body) = call_response(headers, body_size);
        let vectors = self.shared.plugin.on_query_embeddings(
            &self.shared.host,
            status.as_deref(),
            &body,
            texts,
        );
        let action =
            self.with_env(|stream, config, env| stream.on_query_embeddings(config, env, vectors));
        if self.carry_out(action, request_size) == Action::Continue {
            let _ = hostcalls::resume_http_request();
        }
    }
}

impl HttpContext for Http {
    fn on_http_request_headers(&mut self, _num_headers: usize, end_of_stream: bool) -> Action {
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

    fn on_http_request_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
        if self.stream.awaiting_embeddings() {
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

    fn on_http_request_trailers(&mut self, _num_trailers: usize) -> Action {
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

    fn on_http_response_headers(&mut self, _num_headers: usize, end_of_stream: bool) -> Action {
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
        if action != ResponseHeadersAction::Continue {
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

    fn on_http_response_body(&mut self, body_size: usize, end_of_stream: bool) -> Action {
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

    fn on_http_response_trailers(&mut self, _num_trailers: usize) -> Action {
        // HTTP/2 with trailers: the body never saw end_of_stream.
        if self.stream.rewriting_response() {
            self.with_env(|stream, _, env| stream.on_response_trailers(env));
        }
        Action::Continue
    }
}
