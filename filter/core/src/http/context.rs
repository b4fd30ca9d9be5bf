//! One HTTP stream, callback by callback: each hands the stream's decisions (`stream::Stream`)
//! what they need from the host and carries out what they decide, the calls they wait on
//! included. The state lives behind an `Rc` so that the root's tick can resume a request that
//! waits on another worker's catalog fetch (a VM has one timer, the root's).

use super::host::{call_response, Action, Body, Direction, Headers, HttpHost};
use super::{Root, Waiter};
use crate::plugin::{Env, FetchProgress, FetchStart, Host, Level, FETCH_MARKER_HEADER};
use crate::stream::{
    Event, HeaderChange, LocalReply, RequestBodyAction, RequestHead, RequestHeadersAction,
    ResponseHeadersAction, Stream,
};
use std::cell::RefCell;
use std::rc::Rc;

/// The route metadata the filter reads its namespace from:
/// `metadata.filter_metadata.mcp_tool_search.namespace` on the route.
pub const METADATA_KEY: &str = "mcp_tool_search";

/// The stream property that says what the filter did with a request (a search answered, a list
/// rewritten, a call linked, a refusal), one JSON object: Envoy keeps it as filter state
/// `wasm.mcp_tool_search`, which `%FILTER_STATE(wasm.mcp_tool_search:PLAIN)%` logs.
pub const ACCESS_PROPERTY: &str = "mcp_tool_search";

/// One HTTP stream through the filter.
pub struct Context {
    state: Rc<RefCell<State>>,
}

/// A call the stream waits on (a catalog fetch's calls are the plugin's, by their tokens).
#[derive(Debug, Clone, Copy)]
enum Awaited {
    /// The query embeddings of a search, for this many texts.
    Query { texts: usize },
    /// The `tools/call` that `call_tool` stands for.
    Upstream,
    /// A script's `tools/call` (code mode), by the script's call id.
    #[cfg(feature = "code-mode")]
    Script(u32),
}

pub(super) struct State {
    id: u32,
    stream: Stream,
    /// The catalog namespace and the upstream cluster, read once from the route.
    route: Option<(String, Option<String>)>,
    authority: Option<String>,
    /// The size of the request body Envoy holds while the stream waits.
    held: usize,
    calls: Vec<(u32, Awaited)>,
    /// Another worker fetches the catalog of this namespace, which the request needs.
    waiting: Option<String>,
    /// The upstream answered a request the filter is answering itself (its headers went ahead
    /// of its body): that response waits, unsent, for the local reply to replace it.
    response_held: bool,
    /// This filter sent the response: it passes its own callbacks untouched.
    replied: bool,
}

impl Context {
    pub(super) fn new(id: u32) -> Self {
        Context {
            state: Rc::new(RefCell::new(State {
                id,
                stream: Stream::new(),
                route: None,
                authority: None,
                held: 0,
                calls: Vec::new(),
                waiting: None,
                response_held: false,
                replied: false,
            })),
        }
    }

    /// Runs a callback on the state. One re-entered while another runs finds the state
    /// borrowed: it is let through rather than trap the VM. A request that started waiting on
    /// another worker's fetch is handed to the root, whose tick resumes it.
    fn with<T>(&self, root: &Root, default: T, f: impl FnOnce(&mut State) -> T) -> T {
        let Ok(mut state) = self.state.try_borrow_mut() else {
            return default;
        };
        let out = f(&mut state);
        if let Some(namespace) = state.waiting.take() {
            root.wait(Waiter {
                context_id: state.id,
                namespace,
                state: Rc::downgrade(&self.state),
            });
        }
        out
    }

    pub fn on_request_headers<H: Host + HttpHost>(
        &mut self,
        root: &Root,
        host: &H,
        end_of_stream: bool,
    ) -> Action {
        self.with(root, Action::Continue, |s| {
            s.on_request_headers(root, host, end_of_stream)
        })
    }

    pub fn on_request_body<H: Host + HttpHost>(
        &mut self,
        root: &Root,
        host: &H,
        body_size: usize,
        end_of_stream: bool,
    ) -> Action {
        self.with(root, Action::Continue, |s| {
            s.on_request_body(root, host, body_size, end_of_stream)
        })
    }

    pub fn on_request_trailers<H: Host + HttpHost>(&mut self, root: &Root, host: &H) -> Action {
        self.with(root, Action::Continue, |s| {
            s.on_request_trailers(root, host)
        })
    }

    pub fn on_response_headers<H: Host + HttpHost>(
        &mut self,
        root: &Root,
        host: &H,
        end_of_stream: bool,
    ) -> Action {
        self.with(root, Action::Continue, |s| {
            s.on_response_headers(root, host, end_of_stream)
        })
    }

    pub fn on_response_body<H: Host + HttpHost>(
        &mut self,
        root: &Root,
        host: &H,
        body_size: usize,
        end_of_stream: bool,
    ) -> Action {
        self.with(root, Action::Continue, |s| {
            s.on_response_body(root, host, body_size, end_of_stream)
        })
    }

    pub fn on_response_trailers<H: Host + HttpHost>(&mut self, root: &Root, host: &H) -> Action {
        self.with(root, Action::Continue, |s| {
            s.on_response_trailers(root, host)
        })
    }

    /// The answer to a call this stream made (`num_headers` 0: the call failed).
    pub fn on_http_call_response<H: Host + HttpHost>(
        &mut self,
        root: &Root,
        host: &H,
        token: u32,
        num_headers: usize,
        body_size: usize,
    ) {
        self.with(root, (), |s| {
            s.on_call_response(root, host, token, num_headers, body_size)
        })
    }
}

impl State {
    /// The catalog namespace (the route's metadata, else the upstream cluster) and the cluster.
    fn route(&mut self, host: &dyn HttpHost) -> (String, Option<String>) {
        if let Some(route) = &self.route {
            return route.clone();
        }
        let property = |path: &[&str]| {
            host.property(path)
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .filter(|s| !s.is_empty())
        };
        let cluster = property(&["xds", "cluster_name"]);
        let namespace = property(&[
            "xds",
            "route_metadata",
            "filter_metadata",
            METADATA_KEY,
            "namespace",
        ])
        .or_else(|| cluster.clone())
        .unwrap_or_else(|| "default".to_string());
        let route = (namespace, cluster);
        self.route = Some(route.clone());
        route
    }

    /// Runs `f` with the stream, the configuration and the stream's view of the plugin.
    fn run<H: Host + HttpHost, T>(
        &mut self,
        root: &Root,
        host: &H,
        f: impl FnOnce(&mut Stream, &crate::config::Config, &mut Env) -> T,
    ) -> T {
        let (namespace, cluster) = self.route(host);
        let mut env = root
            .plugin
            .env(host, namespace)
            .with_route(cluster, self.authority.clone());
        let out = f(&mut self.stream, &root.plugin.config, &mut env);
        if let Some(record) = env.take_access() {
            if let Err(status) = host.set_property(&[ACCESS_PROPERTY], record.as_bytes()) {
                Self::hostcall_failed(host, &format!("could not set the access record: {status}"));
            }
        }
        out
    }

    /// A hostcall the stream needed failed: logged and counted in `errors`.
    fn hostcall_failed(host: &dyn Host, what: &str) {
        host.log(Level::Warn, what);
        let (stat, by) = Event::Error.stat();
        host.increment(stat, by);
    }

    /// Sends a local reply; the stream ends here (a local reply is followed by Pause).
    fn send<H: Host + HttpHost>(&mut self, host: &H, reply: LocalReply) -> Action {
        // The reply goes through this filter's own response callbacks, within this call.
        self.replied = true;
        if let Err(status) = host.send_reply(reply.status, &reply.headers, &reply.body) {
            // A reply that could not be sent may be a refusal: holding the stream (until Envoy
            // times it out) is safe, forwarding it would not be.
            Self::hostcall_failed(host, &format!("could not send the local reply: {status}"));
        }
        Action::Pause
    }

    fn reply_or_continue<H: Host + HttpHost>(
        &mut self,
        host: &H,
        reply: Option<LocalReply>,
    ) -> Action {
        match reply {
            Some(reply) => self.send(host, reply),
            None => Action::Continue,
        }
    }

    /// `carry_out` for a request that paused (for a call, a fetch, another worker): a request
    /// going on resumes, and so does an upstream response held meanwhile.
    pub(super) fn carry_out_later<H: Host + HttpHost>(
        &mut self,
        root: &Root,
        host: &H,
        action: RequestBodyAction,
    ) {
        if self.carry_out(root, host, action) == Action::Continue {
            let _ = host.resume(Direction::Request);
            if std::mem::take(&mut self.response_held) {
                let _ = host.resume(Direction::Response);
            }
        }
    }

    fn carry_out<H: Host + HttpHost>(
        &mut self,
        root: &Root,
        host: &H,
        action: RequestBodyAction,
    ) -> Action {
        match action {
            RequestBodyAction::Continue { headers } => {
                change_request_headers(host, &headers);
                Action::Continue
            }
            RequestBodyAction::Reply(reply) => self.send(host, reply),
            RequestBodyAction::Replace { body, headers } => {
                if let Err(status) = host.set_body(Body::Request, self.held, &body) {
                    Self::hostcall_failed(host, &format!("could not replace the body: {status}"));
                }
                change_request_headers(host, &headers);
                Action::Continue
            }
            RequestBodyAction::Embed { texts } => match root.plugin.embed_queries(host, &texts) {
                Ok(token) => {
                    self.calls
                        .push((token, Awaited::Query { texts: texts.len() }));
                    Action::Pause
                }
                Err(fallback) => {
                    let action = self.run(root, host, |stream, config, env| {
                        stream.on_query_embeddings(config, env, Err(fallback))
                    });
                    self.carry_out(root, host, action)
                }
            },
            RequestBodyAction::Call(call) => match host.http_call(call) {
                Ok(token) => {
                    self.calls.push((token, Awaited::Upstream));
                    Action::Pause
                }
                Err(reason) => {
                    let action = self.run(root, host, |stream, config, env| {
                        stream.on_call_answer(config, env, Err(reason))
                    });
                    self.carry_out(root, host, action)
                }
            },
            #[cfg(feature = "code-mode")]
            RequestBodyAction::ScriptCalls(calls) => {
                // Every call is sent before any failure resumes the script (a failure can end
                // it, and the calls sent with it are then answered to nobody), and the failures
                // are handed back in a loop: a script retrying calls the host refuses at once
                // must not deepen the native stack it runs on.
                let mut failed = std::collections::VecDeque::new();
                self.send_script_calls(host, calls, &mut failed);
                while let Some((id, reason)) = failed.pop_front() {
                    let next = self.run(root, host, |stream, config, env| {
                        stream.on_script_reply(config, env, id, Err(reason))
                    });
                    match next {
                        RequestBodyAction::ScriptCalls(more) => {
                            self.send_script_calls(host, more, &mut failed)
                        }
                        RequestBodyAction::Wait => {}
                        done => return self.carry_out(root, host, done),
                    }
                }
                Action::Pause
            }
            #[cfg(feature = "code-mode")]
            RequestBodyAction::Wait => Action::Pause,
            RequestBodyAction::Fetch { namespace, spec } => {
                match root.plugin.start_fetch(host, &namespace, spec) {
                    // The fetch's calls answer through `on_call_response`; the plugin knows
                    // their tokens.
                    FetchStart::Started(_) => Action::Pause,
                    FetchStart::Busy => {
                        self.waiting = Some(namespace);
                        Action::Pause
                    }
                    FetchStart::Failed(error) => {
                        let action = self.run(root, host, |stream, config, env| {
                            stream.on_catalog(config, env, Err(error.to_string()))
                        });
                        self.carry_out(root, host, action)
                    }
                }
            }
        }
    }

    /// Starts a script's calls; those the host refuses at once go to `failed`.
    #[cfg(feature = "code-mode")]
    fn send_script_calls<H: Host + HttpHost>(
        &mut self,
        host: &H,
        calls: Vec<(u32, crate::call::HttpCall)>,
        failed: &mut std::collections::VecDeque<(u32, String)>,
    ) {
        for (id, call) in calls {
            match host.http_call(call) {
                Ok(token) => self.calls.push((token, Awaited::Script(id))),
                Err(reason) => failed.push_back((id, reason)),
            }
        }
    }

    /// The namespace of another worker's fetch this request started waiting on.
    pub(super) fn take_waiting(&mut self) -> Option<String> {
        self.waiting.take()
    }

    /// Another worker's fetch of `namespace`, which this request waited for, ended.
    pub(super) fn on_catalog_settled<H: Host + HttpHost>(
        &mut self,
        root: &Root,
        host: &H,
        namespace: &str,
    ) {
        let action = self.run(root, host, |stream, config, env| {
            stream.on_catalog_settled(config, env, namespace)
        });
        self.carry_out_later(root, host, action);
    }

    fn on_call_response<H: Host + HttpHost>(
        &mut self,
        root: &Root,
        host: &H,
        token: u32,
        num_headers: usize,
        body_size: usize,
    ) {
        if let Some(at) = self.calls.iter().position(|(t, _)| *t == token) {
            let (_, awaited) = self.calls.swap_remove(at);
            // A tool's answer larger than the filter relays is never copied into the VM (whose
            // memory never shrinks): several calls in flight could each bring hundreds of MB.
            let cap = root.plugin.config.max_body_bytes;
            let tool_answer = || match body_size > cap {
                true => Err(format!(
                    "its response is larger than max_body_bytes ({cap})"
                )),
                false => Ok(call_response(host, num_headers, body_size)),
            };
            let action = match awaited {
                Awaited::Upstream => {
                    let answer = tool_answer();
                    self.run(root, host, |stream, config, env| {
                        stream.on_call_answer(config, env, answer)
                    })
                }
                #[cfg(feature = "code-mode")]
                Awaited::Script(id) => {
                    let answer = tool_answer();
                    self.run(root, host, |stream, config, env| {
                        stream.on_script_reply(config, env, id, answer)
                    })
                }
                Awaited::Query { texts } => {
                    let (status, _, body) = call_response(host, num_headers, body_size);
                    let vectors =
                        root.plugin
                            .on_query_embeddings(host, status.as_deref(), &body, texts);
                    self.run(root, host, |stream, config, env| {
                        stream.on_query_embeddings(config, env, vectors)
                    })
                }
            };
            self.carry_out_later(root, host, action);
            return;
        }
        let (status, headers, body) = call_response(host, num_headers, body_size);
        let progress =
            root.plugin
                .on_fetch_response(host, token, status.as_deref(), &headers, &body);
        if let Some(FetchProgress::Finished { result, .. }) = progress {
            if self.stream.awaiting_catalog() {
                let action = self.run(root, host, |stream, config, env| {
                    stream.on_catalog(config, env, result)
                });
                self.carry_out_later(root, host, action);
            }
        }
    }

    fn on_request_headers<H: Host + HttpHost>(
        &mut self,
        root: &Root,
        host: &H,
        end_of_stream: bool,
    ) -> Action {
        // Every value of a repeated header: a single-value lookup would show only one.
        let raw = host.headers(Headers::Request).unwrap_or_default();
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
        let mut head =
            RequestHead::from_headers(&root.plugin.config, &pairs, || host.property(&["metadata"]));
        head.invalid_utf8 = invalid;
        if head.fetch_marker.is_some() {
            // Never reaches the upstream, whether it is ours or forged.
            let _ = host.remove_header(Headers::Request, FETCH_MARKER_HEADER);
        }
        self.authority = head.authority.clone();
        let action = self.run(root, host, |stream, config, env| {
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
                    let _ = host.remove_header(Headers::Request, "accept-encoding");
                }
                if drop_content_length {
                    let _ = host.remove_header(Headers::Request, "content-length");
                }
                if hold {
                    Action::Pause
                } else {
                    Action::Continue
                }
            }
            RequestHeadersAction::Reply(reply) => self.send(host, reply),
        }
    }

    fn on_request_body<H: Host + HttpHost>(
        &mut self,
        root: &Root,
        host: &H,
        body_size: usize,
        end_of_stream: bool,
    ) -> Action {
        if self.stream.awaiting_embeddings()
            || self.stream.awaiting_catalog()
            || !self.calls.is_empty()
            || self.waiting.is_some()
        {
            return Action::Pause;
        }
        if !self.stream.wants_request_body() {
            return Action::Continue;
        }
        if body_size > self.stream.request_cap(&root.plugin.config) {
            let reply = self.run(root, host, |stream, config, env| {
                stream.request_too_large(config, env)
            });
            return self.reply_or_continue(host, reply);
        }
        if !end_of_stream {
            // Envoy keeps the chunks while we pause; `body_size` then counts all of them.
            return Action::Pause;
        }
        let body = match host.body(Body::Request, body_size) {
            Ok(body) => body,
            Err(status) => {
                Self::hostcall_failed(host, &format!("could not read the body: {status}"));
                let reply = self.run(root, host, |stream, config, env| {
                    stream.request_body_unavailable(
                        config,
                        env,
                        "the host could not hand over the body",
                    )
                });
                return self.reply_or_continue(host, reply);
            }
        };
        self.held = body_size;
        let action = self.run(root, host, |stream, config, env| {
            stream.on_request_body(config, env, &body)
        });
        self.carry_out(root, host, action)
    }

    fn on_request_trailers<H: Host + HttpHost>(&mut self, root: &Root, host: &H) -> Action {
        // HTTP/2 request trailers end the stream: a body still held was never seen whole, and
        // continuing would send it upstream unread.
        let reply = self.run(root, host, |stream, config, env| {
            stream.request_body_unavailable(
                config,
                env,
                "request trailers ended the body before it could be read",
            )
        });
        self.reply_or_continue(host, reply)
    }

    fn on_response_headers<H: Host + HttpHost>(
        &mut self,
        root: &Root,
        host: &H,
        end_of_stream: bool,
    ) -> Action {
        // Envoy replaces a response whose headers have not gone downstream with a local reply
        // (it resets one whose headers have): held here, the upstream's early answer (a 404 for
        // the search endpoint's path, say) never reaches the client.
        if !self.replied && self.stream.answering_locally() {
            self.response_held = true;
            return Action::Pause;
        }
        // After a local reply the headers are that reply's (Envoy runs a filter's own local
        // reply through its encode path): built here from what the caller may see, they are
        // neither read nor guarded again.
        if self.replied || end_of_stream || !self.stream.awaiting_response() {
            return Action::Continue;
        }
        let header = |name: &str| {
            host.header(Headers::Response, name)
                .map(|v| String::from_utf8_lossy(&v).into_owned())
        };
        let (status, content_type, encoding) = (
            header(":status"),
            header("content-type"),
            header("content-encoding"),
        );
        let action = self.run(root, host, |stream, config, env| {
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
            if let Some(length) = header("content-length").and_then(|v| v.trim().parse().ok()) {
                self.stream
                    .expect_response_length(&root.plugin.config, length);
            }
            // The body's length changes; headers can only change in this callback.
            let _ = host.remove_header(Headers::Response, "content-length");
        }
        if action == ResponseHeadersAction::Refuse {
            let _ = host.remove_header(Headers::Response, "content-encoding");
            let _ = host.set_header(Headers::Response, "content-type", "application/json");
        }
        Action::Continue
    }

    fn on_response_body<H: Host + HttpHost>(
        &mut self,
        root: &Root,
        host: &H,
        body_size: usize,
        end_of_stream: bool,
    ) -> Action {
        // Continuing the body would let the held headers go.
        if self.response_held {
            return Action::Pause;
        }
        if !self.stream.rewriting_response() {
            return Action::Continue;
        }
        // Always Continue: the core holds what it must (in the VM), so Envoy's buffer limit
        // never turns a large list into a reset stream.
        let chunk = match host.body(Body::Response, body_size) {
            Ok(chunk) => chunk,
            Err(status) => {
                Self::hostcall_failed(host, &format!("could not read the body: {status}"));
                return Action::Continue;
            }
        };
        let out = self.run(root, host, |stream, config, env| {
            stream.on_response_chunk(config, env, &chunk, end_of_stream)
        });
        if out != chunk {
            if let Err(status) = host.set_body(Body::Response, body_size, &out) {
                Self::hostcall_failed(host, &format!("could not replace the body: {status}"));
            }
        }
        Action::Continue
    }

    fn on_response_trailers<H: Host + HttpHost>(&mut self, root: &Root, host: &H) -> Action {
        // HTTP/2 with trailers: the body never saw end_of_stream.
        if self.stream.rewriting_response() {
            self.run(root, host, |stream, _, env| {
                stream.on_response_trailers(env)
            });
        }
        Action::Continue
    }
}

fn change_request_headers(host: &dyn HttpHost, changes: &[HeaderChange]) {
    for change in changes {
        let _ = match change {
            HeaderChange::Remove(name) => host.remove_header(Headers::Request, name),
            HeaderChange::Set(name, value) => host.set_header(Headers::Request, name, value),
            HeaderChange::Add(name, value) => host.set_header(Headers::Request, name, value),
        };
    }
}
