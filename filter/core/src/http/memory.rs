//! The one native host: `MemoryHost` keeps in process memory what Envoy keeps for the filter
//! (shared data with Envoy's compare-and-swap rules, a settable clock, the log and counters,
//! outgoing calls queued for the caller to answer, and one stream's headers and bodies), and
//! [`exchange`] feeds a stream's callbacks the way Envoy does. Tests, the fuzzer, the benchmarks
//! and the playground drive the filter through it, so every driver runs the same callbacks the
//! `.wasm` runs.

use super::host::{Action, Body, Direction, Headers, HttpHost};
use super::Root;
use crate::call::{CallResponse, HttpCall};
use crate::plugin::{Host, Level};
use crate::store::{MemorySharedData, SharedData, StoreError};
use crate::stream::Event;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

/// A host in process memory. Several roots (workers) may share one, as Envoy's workers share
/// one process's shared data.
#[derive(Default)]
pub struct MemoryHost {
    pub shared: MemorySharedData,
    pub clock_ms: Cell<u64>,
    pub logs: RefCell<Vec<(Level, String)>>,
    pub counters: RefCell<BTreeMap<&'static str, u64>>,
    /// Every increment, in order: what the filter counted, event by event.
    pub increments: RefCell<Vec<(&'static str, u64)>>,
    /// Counters named at run time (a namespace's), by name.
    pub named: RefCell<BTreeMap<String, u64>>,
    /// Every value recorded, by histogram, in order.
    pub histograms: RefCell<BTreeMap<&'static str, Vec<u64>>>,
    /// Calls made and not yet answered, with their tokens.
    pub calls: RefCell<Vec<(u32, HttpCall)>>,
    /// The context that made each call (0: a root), by token.
    callers: RefCell<BTreeMap<u32, u32>>,
    next_token: Cell<u32>,
    /// Make `http_call` fail with this reason (an unknown cluster, say).
    pub refuse_calls: RefCell<Option<String>>,
    /// The state of a deterministic generator (SplitMix64): tests repeat exactly.
    pub random: Cell<u64>,
    /// Stream properties by path joined with `.` (`xds.cluster_name`, …).
    pub properties: RefCell<BTreeMap<String, Vec<u8>>>,
    /// What the host holds for each stream, by context id; hostcalls act on the effective one.
    pub streams: RefCell<BTreeMap<u32, MemoryStream>>,
    /// The context hostcalls act on (0: a root).
    effective: Cell<u32>,
    next_context: Cell<u32>,
    /// Make `send_reply` fail (as Envoy refuses a reply after the response started).
    pub refuse_replies: Cell<bool>,
    /// Every stream property the filter set (`set_property`), in order: the stream's context
    /// id, the path joined by `.`, the value.
    pub properties_set: RefCell<Vec<(u32, String, Vec<u8>)>>,
}

/// What the host holds for one stream.
#[derive(Debug, Default, Clone)]
pub struct MemoryStream {
    pub request_headers: Vec<(String, Vec<u8>)>,
    /// The request body held (paused) or being delivered.
    pub request_body: Vec<u8>,
    pub response_headers: Vec<(String, Vec<u8>)>,
    pub response_body: Vec<u8>,
    pub call_headers: Vec<(String, Vec<u8>)>,
    pub call_body: Vec<u8>,
    pub reply: Option<Reply>,
    pub request_resumed: bool,
    pub response_resumed: bool,
}

/// A local reply the filter sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u32,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl MemoryHost {
    /// What the host holds for stream `id` now.
    pub fn stream(&self, id: u32) -> MemoryStream {
        self.streams.borrow().get(&id).cloned().unwrap_or_default()
    }

    /// Runs `f` on what the host holds for the effective stream.
    fn current<T>(&self, f: impl FnOnce(&mut MemoryStream) -> T) -> T {
        let mut streams = self.streams.borrow_mut();
        f(streams.entry(self.effective.get()).or_default())
    }

    pub fn counter(&self, stat: &str) -> u64 {
        self.counters.borrow().get(stat).copied().unwrap_or(0)
    }

    /// A namespace's counter (`stats::in_namespace`).
    pub fn namespace_counter(&self, namespace: &str, stat: &str) -> u64 {
        let name = crate::stats::in_namespace(namespace, stat);
        self.named.borrow().get(&name).copied().unwrap_or(0)
    }

    /// The values recorded in `histogram`, in order.
    pub fn histogram(&self, histogram: &str) -> Vec<u64> {
        self.histograms
            .borrow()
            .get(histogram)
            .cloned()
            .unwrap_or_default()
    }

    /// How many times the filter recorded `event`.
    pub fn count(&self, event: Event) -> usize {
        let want = event.stat();
        self.increments
            .borrow()
            .iter()
            .filter(|&&got| got == want)
            .count()
    }

    /// The calls made so far, taken out of the queue.
    pub fn take_calls(&self) -> Vec<(u32, HttpCall)> {
        std::mem::take(&mut *self.calls.borrow_mut())
    }

    pub fn warnings(&self) -> Vec<String> {
        self.logs
            .borrow()
            .iter()
            .filter(|(level, _)| *level <= Level::Warn)
            .map(|(_, m)| m.clone())
            .collect()
    }

    /// Sets a stream property (`path` as proxy-wasm names it, e.g. `["xds", "cluster_name"]`).
    pub fn set_property(&self, path: &[&str], value: &str) {
        self.properties
            .borrow_mut()
            .insert(path.join("."), value.as_bytes().to_vec());
    }

    /// A fresh context id, unique on this host (workers sharing it included).
    pub fn next_context_id(&self) -> u32 {
        let id = self.next_context.get().wrapping_add(1).max(1);
        self.next_context.set(id);
        id
    }

    /// Makes the host act on context `id` (0: a root), as Envoy does around a callback.
    pub fn enter(&self, id: u32) {
        self.effective.set(id);
    }

    /// Answers the queued calls made by context `id` (0: the roots), made with a token above
    /// `after`, until none is left: each answer goes to the context that made the call.
    pub fn answer_calls(
        &self,
        root: &Root,
        context: Option<&mut super::Context>,
        after: u32,
        serve: &mut Serve<'_>,
    ) {
        let mut context = context;
        for _ in 0..10_000 {
            let mine: Vec<(u32, HttpCall)> = {
                let mut calls = self.calls.borrow_mut();
                let (mine, others) = std::mem::take(&mut *calls)
                    .into_iter()
                    .partition(|(token, _)| *token > after);
                *calls = others;
                mine
            };
            if mine.is_empty() {
                return;
            }
            for (token, call) in mine {
                let caller = self.callers.borrow_mut().remove(&token).unwrap_or(0);
                let source = if caller == 0 {
                    CallSource::Root
                } else {
                    CallSource::Stream
                };
                let (status, headers, body) = serve(&call, source);
                let num_headers = match &status {
                    Some(status) => {
                        let mut all = vec![(":status".to_string(), status.as_bytes().to_vec())];
                        all.extend(
                            headers
                                .into_iter()
                                .filter(|(k, _)| k != ":status")
                                .map(|(k, v)| (k, v.into_bytes())),
                        );
                        all
                    }
                    None => Vec::new(),
                };
                let size = body.len();
                let count = num_headers.len();
                self.enter(caller);
                self.current(|stream| {
                    stream.call_headers = num_headers;
                    stream.call_body = body;
                });
                match context.as_deref_mut() {
                    Some(ctx) if caller != 0 => {
                        ctx.on_http_call_response(root, self, token, count, size)
                    }
                    _ => root.on_http_call_response(self, token, count, size),
                }
            }
        }
    }

    /// The last token handed out: calls made from now on have higher ones.
    pub fn last_token(&self) -> u32 {
        self.next_token.get()
    }
}

/// Who made a call: a stream (a query embedding, a fetch for a request, the call `call_tool`
/// stands for) or a root (background fetch or tool embedding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallSource {
    Stream,
    Root,
}

/// What answers the filter's calls in a native exchange.
pub type Serve<'a> = dyn FnMut(&HttpCall, CallSource) -> CallResponse + 'a;

impl SharedData for MemoryHost {
    fn get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), StoreError> {
        self.shared.get(key)
    }

    fn set(&self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), StoreError> {
        self.shared.set(key, value, cas)
    }
}

impl Host for MemoryHost {
    fn now_ms(&self) -> u64 {
        self.clock_ms.get()
    }

    fn log(&self, level: Level, message: &str) {
        self.logs.borrow_mut().push((level, message.to_string()));
    }

    fn increment(&self, stat: &'static str, by: u64) {
        *self.counters.borrow_mut().entry(stat).or_default() += by;
        self.increments.borrow_mut().push((stat, by));
    }

    fn increment_named(&self, stat: &str, by: u64) {
        *self.named.borrow_mut().entry(stat.to_string()).or_default() += by;
    }

    fn record(&self, histogram: &'static str, value: u64) {
        self.histograms
            .borrow_mut()
            .entry(histogram)
            .or_default()
            .push(value);
    }

    fn now_ns(&self) -> u64 {
        self.clock_ms.get().saturating_mul(1_000_000)
    }

    fn http_call(&self, call: HttpCall) -> Result<u32, String> {
        if let Some(reason) = self.refuse_calls.borrow().clone() {
            return Err(reason);
        }
        let token = self.next_token.get().wrapping_add(1);
        self.next_token.set(token);
        self.callers
            .borrow_mut()
            .insert(token, self.effective.get());
        self.calls.borrow_mut().push((token, call));
        Ok(token)
    }

    fn random_u64(&self) -> u64 {
        let next = self.random.get().wrapping_add(0x9e37_79b9_7f4a_7c15);
        self.random.set(next);
        let mut z = next;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn fill_random(&self, out: &mut [u8]) -> Result<(), String> {
        for chunk in out.chunks_mut(8) {
            let bytes = self.random_u64().to_le_bytes();
            for (o, b) in chunk.iter_mut().zip(bytes) {
                *o = b;
            }
        }
        Ok(())
    }
}

impl MemoryStream {
    fn map(&mut self, map: Headers) -> &mut Vec<(String, Vec<u8>)> {
        match map {
            Headers::Request => &mut self.request_headers,
            Headers::Response => &mut self.response_headers,
            Headers::CallResponse => &mut self.call_headers,
        }
    }

    fn buffer(&mut self, body: Body) -> &mut Vec<u8> {
        match body {
            Body::Request => &mut self.request_body,
            Body::Response => &mut self.response_body,
            Body::CallResponse => &mut self.call_body,
        }
    }
}

impl HttpHost for MemoryHost {
    fn headers(&self, map: Headers) -> Result<Vec<(String, Vec<u8>)>, String> {
        Ok(self.current(|s| s.map(map).clone()))
    }

    fn header(&self, map: Headers, name: &str) -> Option<Vec<u8>> {
        self.current(|s| {
            s.map(map)
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        })
    }

    fn set_header(&self, map: Headers, name: &str, value: &str) -> Result<(), String> {
        self.current(|s| {
            let headers = s.map(map);
            headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
            headers.push((name.to_string(), value.as_bytes().to_vec()));
        });
        Ok(())
    }

    fn remove_header(&self, map: Headers, name: &str) -> Result<(), String> {
        self.current(|s| s.map(map).retain(|(k, _)| !k.eq_ignore_ascii_case(name)));
        Ok(())
    }

    fn body(&self, body: Body, size: usize) -> Result<Vec<u8>, String> {
        Ok(self.current(|s| {
            let buffer = s.buffer(body);
            buffer
                .get(..size.min(buffer.len()))
                .unwrap_or_default()
                .to_vec()
        }))
    }

    fn set_body(&self, body: Body, size: usize, new: &[u8]) -> Result<(), String> {
        self.current(|s| {
            let buffer = s.buffer(body);
            let size = size.min(buffer.len());
            buffer.splice(..size, new.iter().copied());
        });
        Ok(())
    }

    fn send_reply(
        &self,
        status: u32,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<(), String> {
        let refuse = self.refuse_replies.get();
        self.current(|s| {
            if refuse || s.reply.is_some() {
                return Err("the host refused the local reply".to_string());
            }
            s.reply = Some(Reply {
                status,
                headers: headers.to_vec(),
                body: body.to_vec(),
            });
            Ok(())
        })
    }

    fn resume(&self, direction: Direction) -> Result<(), String> {
        self.current(|s| match direction {
            Direction::Request => s.request_resumed = true,
            Direction::Response => s.response_resumed = true,
        });
        Ok(())
    }

    fn property(&self, path: &[&str]) -> Option<Vec<u8>> {
        self.properties.borrow().get(&path.join(".")).cloned()
    }

    fn set_effective_context(&self, context_id: u32) -> Result<(), String> {
        self.enter(context_id);
        Ok(())
    }

    fn set_property(&self, path: &[&str], value: &[u8]) -> Result<(), String> {
        let set = (self.effective.get(), path.join("."), value.to_vec());
        self.properties_set.borrow_mut().push(set);
        Ok(())
    }
}

/// A request as the client sends it: headers (pseudo-headers included) and body pieces as
/// they arrive; `trailers`: the body ends with trailers rather than end of stream.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub headers: Vec<(String, Vec<u8>)>,
    pub chunks: Vec<Vec<u8>>,
    pub trailers: bool,
}

/// The upstream's response: headers (`:status` included) and body pieces as they arrive.
#[derive(Debug, Clone, Default)]
pub struct Response {
    pub headers: Vec<(String, Vec<u8>)>,
    pub chunks: Vec<Vec<u8>>,
    pub trailers: bool,
}

/// What an exchange came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exchanged {
    /// The filter answered; the upstream's response, if any, never reached the client.
    Local(Reply),
    /// The request went upstream as `sent`; the client received `response`.
    Upstream {
        sent_headers: Vec<(String, Vec<u8>)>,
        sent: Vec<u8>,
        response_headers: Vec<(String, Vec<u8>)>,
        response: Vec<u8>,
    },
    /// The filter still holds the request: it waits on something nobody answered.
    Held,
}

/// Runs one exchange through a fresh stream of `root` the way Envoy delivers it: request
/// headers, body pieces (buffered while the filter pauses), trailers; then the calls the filter
/// makes, answered by `serve`; a request waiting on another worker's fetch is resumed as the
/// root's tick would; then the upstream's response, piece by piece.
pub fn exchange(
    root: &Root,
    host: &MemoryHost,
    request: &Request,
    response: &Response,
    serve: &mut Serve<'_>,
) -> Exchanged {
    let id = host.next_context_id();
    let after = host.last_token();
    host.streams.borrow_mut().insert(
        id,
        MemoryStream {
            request_headers: request.headers.clone(),
            ..MemoryStream::default()
        },
    );
    let out = run(root, host, id, after, request, response, serve);
    host.streams.borrow_mut().remove(&id);
    out
}

fn run(
    root: &Root,
    host: &MemoryHost,
    id: u32,
    after: u32,
    request: &Request,
    response: &Response,
    serve: &mut Serve<'_>,
) -> Exchanged {
    let on = |f: &mut dyn FnMut(&mut MemoryStream)| {
        if let Some(stream) = host.streams.borrow_mut().get_mut(&id) {
            f(stream);
        }
    };
    let replied = || host.stream(id).reply;
    host.enter(id);
    let mut ctx = root.context(id);
    let mut sent = Vec::new();
    let no_body = request.chunks.is_empty() && !request.trailers;
    let mut going = ctx.on_request_headers(root, host, no_body) == Action::Continue;
    let pieces = request.chunks.len();
    for (i, chunk) in request.chunks.iter().enumerate() {
        if let Some(reply) = replied() {
            return Exchanged::Local(reply);
        }
        let mut size = 0;
        on(&mut |s| {
            s.request_body.extend_from_slice(chunk);
            size = s.request_body.len();
        });
        let last = i + 1 == pieces && !request.trailers;
        host.enter(id);
        going = ctx.on_request_body(root, host, size, last) == Action::Continue;
        if going {
            on(&mut |s| sent.append(&mut s.request_body));
        }
    }
    if request.trailers && replied().is_none() {
        host.enter(id);
        going = ctx.on_request_trailers(root, host) == Action::Continue;
    }
    // The calls the request waits on, and the wait on another worker's fetch.
    for _ in 0..100 {
        host.answer_calls(root, Some(&mut ctx), after, serve);
        if !root.has_waiting() {
            break;
        }
        host.enter(0);
        root.resume_waiting(host);
        if root.has_waiting() {
            break;
        }
    }
    if let Some(reply) = replied() {
        return Exchanged::Local(reply);
    }
    if !going && !host.stream(id).request_resumed {
        return Exchanged::Held;
    }
    on(&mut |s| {
        sent.append(&mut s.request_body);
        s.response_headers = response.headers.clone();
    });
    let sent_headers = host.stream(id).request_headers;
    let no_body = response.chunks.is_empty() && !response.trailers;
    host.enter(id);
    ctx.on_response_headers(root, host, no_body);
    let mut out = Vec::new();
    let pieces = response.chunks.len();
    for (i, chunk) in response.chunks.iter().enumerate() {
        let mut size = 0;
        on(&mut |s| {
            s.response_body.extend_from_slice(chunk);
            size = s.response_body.len();
        });
        let last = i + 1 == pieces && !response.trailers;
        host.enter(id);
        if ctx.on_response_body(root, host, size, last) == Action::Continue {
            on(&mut |s| out.append(&mut s.response_body));
        }
    }
    if response.trailers {
        host.enter(id);
        ctx.on_response_trailers(root, host);
    }
    on(&mut |s| out.append(&mut s.response_body));
    if let Some(reply) = replied() {
        return Exchanged::Local(reply);
    }
    Exchanged::Upstream {
        sent_headers,
        sent,
        response_headers: host.stream(id).response_headers,
        response: out,
    }
}
