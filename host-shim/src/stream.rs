//! One HTTP stream through the plugin, the way Envoy's filter manager and the Wasm filter's
//! `Context` (source/extensions/common/wasm/context.cc) drive it:
//!
//! - Header maps are readable and writable while the filter holds them: from the header
//!   callback until it returns Continue (or calls `proxy_continue_stream`).
//! - Body buffers: while a body callback returns Pause (StopIterationAndBuffer) Envoy keeps
//!   the data and the next callback sees everything so far (`body_size` is cumulative); on
//!   Continue the (possibly replaced) buffer is what the next hop receives and later callbacks
//!   see one chunk each.
//! - Pause in a header callback is StopAllIteration (no body callbacks until the filter resumes)
//!   unless `allow_on_headers_stop_iteration` makes it StopIteration.
//! - A local reply is sent after the callback returns, goes through the filter's response
//!   callbacks like any response, and cancels the upstream request.

use crate::abi::{len_i32, to_i32, DataStatus, HeadersStatus, TrailersStatus};
use crate::error::ShimError;
use crate::pairs::{self, Headers};
use crate::stream_state::{Dir, HeadersState, LocalReply, Peer, Side, StreamState, StreamView};
use crate::vm::Vm;
use crate::vm_state::{property_key, After};

fn lower(headers: Headers) -> Headers {
    headers
        .into_iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect()
}

impl Vm {
    fn state(&self, id: u32) -> Result<&StreamState, ShimError> {
        self.store
            .data()
            .streams
            .get(&id)
            .ok_or_else(|| ShimError::Usage(format!("no stream {id}")))
    }

    fn state_mut(&mut self, id: u32) -> Result<&mut StreamState, ShimError> {
        self.store
            .data_mut()
            .streams
            .get_mut(&id)
            .ok_or_else(|| ShimError::Usage(format!("no stream {id}")))
    }

    fn note(&mut self, id: u32, event: String) {
        if let Ok(st) = self.state_mut(id) {
            st.events.push(event);
        }
    }

    /// A new HTTP stream (its context is created with the request headers, as in Envoy), with
    /// the stream properties of the options.
    pub fn new_stream(&mut self) -> Result<u32, ShimError> {
        self.root_context()?;
        let s = self.store.data_mut();
        let id = s.next_context_id;
        s.next_context_id += 1;
        let properties = s
            .opts
            .stream_properties
            .iter()
            .map(|(p, v)| (property_key(p), v.clone()))
            .collect();
        s.streams.insert(
            id,
            StreamState {
                properties,
                ..StreamState::default()
            },
        );
        Ok(id)
    }

    /// Sets a property the module reads with `proxy_get_property` on this stream, e.g.
    /// `&["xds", "route_metadata", "filter_metadata", "mcp_tool_search", "namespace"]`.
    pub fn set_stream_property(
        &mut self,
        id: u32,
        path: &[&str],
        value: impl Into<Vec<u8>>,
    ) -> Result<(), ShimError> {
        let key = path.join("\0").into_bytes();
        self.state_mut(id)?.properties.insert(key, value.into());
        Ok(())
    }

    /// A snapshot of a stream.
    pub fn stream_view(&self, id: u32) -> Result<StreamView, ShimError> {
        let st = self.state(id)?;
        Ok(StreamView {
            id,
            upstream: st.upstream.clone(),
            client: st.client.clone(),
            local_reply: st.local_reply.clone(),
            ended: st.ended,
            finished: st.finished,
            events: st.events.clone(),
            stuck: stuck(st),
        })
    }

    /// The client sends request headers.
    pub fn send_request_headers(
        &mut self,
        id: u32,
        headers: Headers,
        end_of_stream: bool,
    ) -> Result<(), ShimError> {
        self.headers_in(id, Dir::Request, lower(headers), end_of_stream)
    }

    /// The client sends a piece of request body.
    pub fn send_request_body(
        &mut self,
        id: u32,
        chunk: &[u8],
        end_of_stream: bool,
    ) -> Result<(), ShimError> {
        self.body_in(id, Dir::Request, chunk, end_of_stream)
    }

    pub fn send_request_trailers(&mut self, id: u32, trailers: Headers) -> Result<(), ShimError> {
        self.trailers_in(id, Dir::Request, lower(trailers))
    }

    /// The upstream answers: only once the request reached it (Envoy's router forwarded it).
    pub fn send_response_headers(
        &mut self,
        id: u32,
        headers: Headers,
        end_of_stream: bool,
    ) -> Result<(), ShimError> {
        let st = self.state(id)?;
        if st.upstream.headers.is_none() && !st.ended {
            return Err(ShimError::Usage(
                "the upstream cannot answer a request it never received".into(),
            ));
        }
        self.headers_in(id, Dir::Response, lower(headers), end_of_stream)
    }

    pub fn send_response_body(
        &mut self,
        id: u32,
        chunk: &[u8],
        end_of_stream: bool,
    ) -> Result<(), ShimError> {
        self.body_in(id, Dir::Response, chunk, end_of_stream)
    }

    pub fn send_response_trailers(&mut self, id: u32, trailers: Headers) -> Result<(), ShimError> {
        self.trailers_in(id, Dir::Response, lower(trailers))
    }

    /// Ends the stream as Envoy does once both sides are done (or the client went away):
    /// `proxy_on_log` (headers readable), `proxy_on_done`, `proxy_on_delete`.
    pub fn finish_stream(&mut self, id: u32) -> Result<(), ShimError> {
        let (finished, created) = {
            let st = self.state(id)?;
            (st.finished, st.created)
        };
        if finished {
            return Ok(());
        }
        self.state_mut(id)?.finished = true;
        if !created {
            self.create_context(id)?;
        }
        self.state_mut(id)?.access_log = true;
        let logged = self.call("proxy_on_log", id, &[to_i32(id)]);
        self.state_mut(id)?.access_log = false;
        logged?;
        self.call("proxy_on_done", id, &[to_i32(id)])?;
        self.call("proxy_on_delete", id, &[to_i32(id)])?;
        self.state_mut(id)?.deleted = true;
        // Whatever the module asked for while the stream was going away has nowhere to go.
        self.store.data_mut().after.clear();
        self.deliver_queue_ready()?;
        Ok(())
    }

    fn create_context(&mut self, id: u32) -> Result<(), ShimError> {
        let root = self.root_context()?;
        self.state_mut(id)?.created = true;
        self.call("proxy_on_context_create", id, &[to_i32(id), to_i32(root)])?;
        self.run_after_actions()
    }

    /// Whether peers' data for `dir` is dropped now.
    fn closed_for(&self, id: u32, dir: Dir) -> Result<bool, ShimError> {
        let st = self.state(id)?;
        Ok(st.ended && !(dir == Dir::Response && st.replying))
    }

    fn headers_in(
        &mut self,
        id: u32,
        dir: Dir,
        headers: Headers,
        end_of_stream: bool,
    ) -> Result<(), ShimError> {
        if self.closed_for(id, dir)? {
            return Ok(());
        }
        let count = headers.len();
        {
            let side = self.state_mut(id)?.side_mut(dir);
            if side.started {
                return Err(ShimError::Usage(format!("{dir:?} headers sent twice")));
            }
            side.started = true;
            side.headers = headers;
            side.headers_visible = true;
            side.received_end = end_of_stream;
        }
        if dir == Dir::Request && !self.state(id)?.created {
            self.create_context(id)?;
        }
        let callback = dir.callback("headers");
        let raw = self.call(
            &callback,
            id,
            &[to_i32(id), len_i32(count), i32::from(end_of_stream)],
        )?;
        let stop = self.take_stop_iteration();
        let allow = self.options().allow_on_headers_stop_iteration;
        let status = HeadersStatus::from_vm(raw.unwrap_or(0), stop, allow);
        self.note(
            id,
            format!("{callback}(end_of_stream={end_of_stream}) -> {status:?}"),
        );
        self.run_after_actions()?;
        if self.closed_for(id, dir)? {
            return Ok(());
        }
        let st = self.state_mut(id)?;
        match status {
            HeadersStatus::Continue | HeadersStatus::ContinueAndDontEndStream => {
                let end = end_of_stream && status == HeadersStatus::Continue;
                let side = st.side_mut(dir);
                side.state = HeadersState::Forwarded;
                side.headers_visible = false;
                let headers = side.headers.clone();
                let peer = st.peer_mut(dir);
                peer.headers = Some(headers);
                peer.end_of_stream |= end;
            }
            HeadersStatus::StopIteration => {
                st.side_mut(dir).state = HeadersState::Stopped { all: false };
            }
            HeadersStatus::StopAllIterationAndBuffer
            | HeadersStatus::StopAllIterationAndWatermark => {
                st.side_mut(dir).state = HeadersState::Stopped { all: true };
            }
        }
        Ok(())
    }

    fn body_in(
        &mut self,
        id: u32,
        dir: Dir,
        chunk: &[u8],
        end_of_stream: bool,
    ) -> Result<(), ShimError> {
        if self.closed_for(id, dir)? {
            return Ok(());
        }
        let limit = self.options().buffer_limit;
        let over = {
            let side = self.state_mut(id)?.side_mut(dir);
            if !side.started {
                return Err(ShimError::Usage(format!("{dir:?} body before headers")));
            }
            if side.received_end {
                return Err(ShimError::Usage(format!(
                    "{dir:?} body after end of stream"
                )));
            }
            side.received_end = end_of_stream;
            if side.state == (HeadersState::Stopped { all: true }) {
                // StopAllIteration: Envoy holds the data without calling the filter.
                side.buffered.extend_from_slice(chunk);
                Some(side.buffered.len() > limit)
            } else {
                None
            }
        };
        match over {
            Some(true) => self.overflow(id, dir),
            Some(false) => Ok(()),
            None => self.body_callback(id, dir, chunk.to_vec(), end_of_stream),
        }
    }

    fn body_callback(
        &mut self,
        id: u32,
        dir: Dir,
        chunk: Vec<u8>,
        end_of_stream: bool,
    ) -> Result<(), ShimError> {
        let limit = self.options().buffer_limit;
        let (size, was_buffering) = {
            let side = self.state_mut(id)?.side_mut(dir);
            if side.buffering {
                side.buffered.extend_from_slice(&chunk);
                side.chunk.clear();
            } else {
                side.chunk = chunk;
            }
            side.chunk_visible = true;
            side.callback_end = end_of_stream;
            let size = if side.buffering {
                side.buffered.len()
            } else {
                side.chunk.len()
            };
            (size, side.buffering)
        };
        if was_buffering && size > limit {
            return self.overflow(id, dir);
        }
        let callback = dir.callback("body");
        let raw = self.call(
            &callback,
            id,
            &[to_i32(id), len_i32(size), i32::from(end_of_stream)],
        )?;
        let stop = self.take_stop_iteration();
        let status = DataStatus::from_vm(raw.unwrap_or(0), stop);
        self.note(
            id,
            format!("{callback}({size} bytes, end_of_stream={end_of_stream}) -> {status:?}"),
        );
        self.state_mut(id)?.side_mut(dir).buffering = false;
        self.run_after_actions()?;
        if self.closed_for(id, dir)? {
            return Ok(());
        }
        let st = self.state_mut(id)?;
        let side = st.side_mut(dir);
        side.callback_end = false;
        let mut over = false;
        match status {
            DataStatus::Continue => {
                let mut data = std::mem::take(&mut side.buffered);
                if !was_buffering {
                    data.extend_from_slice(&std::mem::take(&mut side.chunk));
                }
                side.chunk.clear();
                side.chunk_visible = false;
                side.data_stopped = false;
                let held_headers = matches!(side.state, HeadersState::Stopped { .. });
                side.state = HeadersState::Forwarded;
                side.headers_visible = false;
                let headers = side.headers.clone();
                let trailers = side.trailers.clone();
                let peer = st.peer_mut(dir);
                if held_headers {
                    peer.headers = Some(headers);
                }
                forward(peer, data, end_of_stream, trailers);
            }
            DataStatus::StopIterationAndBuffer | DataStatus::StopIterationAndWatermark => {
                if !was_buffering {
                    let chunk = std::mem::take(&mut side.chunk);
                    side.buffered.extend_from_slice(&chunk);
                }
                side.buffering = status == DataStatus::StopIterationAndBuffer;
                side.data_stopped = true;
                over = side.buffered.len() > limit;
            }
            DataStatus::StopIterationNoBuffer => {
                if !was_buffering {
                    side.chunk.clear();
                }
                side.data_stopped = true;
            }
        }
        if over {
            return self.overflow(id, dir);
        }
        Ok(())
    }

    fn trailers_in(&mut self, id: u32, dir: Dir, trailers: Headers) -> Result<(), ShimError> {
        if self.closed_for(id, dir)? {
            return Ok(());
        }
        let count = trailers.len();
        {
            let side = self.state_mut(id)?.side_mut(dir);
            if !side.started || side.received_end {
                return Err(ShimError::Usage(format!(
                    "{dir:?} trailers before headers or after end of stream"
                )));
            }
            side.received_end = true;
            side.trailers = Some(trailers);
            if side.state == (HeadersState::Stopped { all: true }) {
                side.trailers_held = true;
                return Ok(());
            }
        }
        self.trailers_callback(id, dir, count)
    }

    fn trailers_callback(&mut self, id: u32, dir: Dir, count: usize) -> Result<(), ShimError> {
        self.state_mut(id)?.side_mut(dir).trailers_visible = true;
        let callback = dir.callback("trailers");
        let raw = self.call(&callback, id, &[to_i32(id), len_i32(count)])?;
        let stop = self.take_stop_iteration();
        let status = TrailersStatus::from_vm(raw.unwrap_or(0), stop);
        self.note(id, format!("{callback} -> {status:?}"));
        self.run_after_actions()?;
        if self.closed_for(id, dir)? {
            return Ok(());
        }
        let st = self.state_mut(id)?;
        let side = st.side_mut(dir);
        match status {
            TrailersStatus::Continue => {
                side.trailers_visible = false;
                self.release(id, dir)
            }
            TrailersStatus::StopIteration => {
                side.trailers_held = true;
                Ok(())
            }
        }
    }

    /// Forwards everything Envoy holds for `dir` (headers, data, trailers) to the next hop.
    fn release(&mut self, id: u32, dir: Dir) -> Result<(), ShimError> {
        let st = self.state_mut(id)?;
        let side = st.side_mut(dir);
        let held_headers = matches!(side.state, HeadersState::Stopped { .. });
        side.state = HeadersState::Forwarded;
        side.headers_visible = false;
        side.data_stopped = false;
        side.buffering = false;
        side.chunk_visible = false;
        side.trailers_held = false;
        let data = std::mem::take(&mut side.buffered);
        let end = side.received_end;
        let headers = side.headers.clone();
        let trailers = side.trailers.clone();
        let peer = st.peer_mut(dir);
        if held_headers {
            peer.headers = Some(headers);
        }
        forward(peer, data, end, trailers);
        Ok(())
    }

    /// `proxy_continue_stream`: Envoy's `continueDecoding`/`continueEncoding`.
    fn resume(&mut self, id: u32, dir: Dir) -> Result<(), ShimError> {
        if self.closed_for(id, dir)? {
            return Ok(());
        }
        self.note(id, format!("proxy_continue_stream({dir:?})"));
        let (state, data_stopped, trailers_held) = {
            let side = self.state(id)?.side(dir);
            (side.state, side.data_stopped, side.trailers_held)
        };
        match state {
            HeadersState::Stopped { all: true } => {
                // Headers go on from the next filter; the held body is then given to this
                // filter (Envoy iterates from the current filter after StopAllIteration).
                let (data, end, has_trailers, count) = {
                    let st = self.state_mut(id)?;
                    let side = st.side_mut(dir);
                    side.state = HeadersState::Forwarded;
                    side.headers_visible = false;
                    let data = std::mem::take(&mut side.buffered);
                    let end = side.received_end;
                    let has_trailers = side.trailers.is_some();
                    let count = side.trailers.as_ref().map_or(0, Vec::len);
                    let headers_end = end && data.is_empty() && !has_trailers;
                    let headers = side.headers.clone();
                    let peer = st.peer_mut(dir);
                    peer.headers = Some(headers);
                    peer.end_of_stream |= headers_end;
                    (data, end, has_trailers, count)
                };
                if !data.is_empty() || (end && !has_trailers && !self.peer_ended(id, dir)?) {
                    self.body_callback(id, dir, data, end && !has_trailers)?;
                }
                if trailers_held && !self.closed_for(id, dir)? {
                    self.state_mut(id)?.side_mut(dir).trailers_held = false;
                    self.trailers_callback(id, dir, count)?;
                }
                Ok(())
            }
            HeadersState::Stopped { all: false } => self.release(id, dir),
            HeadersState::Forwarded if data_stopped || trailers_held => self.release(id, dir),
            _ => Ok(()),
        }
    }

    fn peer_ended(&self, id: u32, dir: Dir) -> Result<bool, ShimError> {
        let st = self.state(id)?;
        Ok(match dir {
            Dir::Request => st.upstream.end_of_stream,
            Dir::Response => st.client.end_of_stream,
        })
    }

    /// More data than Envoy's buffer limit: 413 for a request; for a response a 500 if the
    /// client has no headers yet, else a reset.
    fn overflow(&mut self, id: u32, dir: Dir) -> Result<(), ShimError> {
        self.note(id, format!("{dir:?} buffer over the limit"));
        match dir {
            Dir::Request => self.local_reply(
                id,
                413,
                Vec::new(),
                b"Payload Too Large".to_vec(),
                "request_payload_too_large".into(),
            ),
            Dir::Response => {
                if self.state(id)?.client.headers.is_none() {
                    self.local_reply(
                        id,
                        500,
                        Vec::new(),
                        b"Internal Server Error".to_vec(),
                        "response_payload_too_large".into(),
                    )
                } else {
                    self.reset(id);
                    Ok(())
                }
            }
        }
    }

    fn reset(&mut self, id: u32) {
        if let Ok(st) = self.state_mut(id) {
            st.ended = true;
            st.replying = false;
            if !st.client.end_of_stream {
                st.client.reset = true;
            }
            if st.upstream.headers.is_some() && !st.resp.received_end {
                st.upstream.reset = true;
            }
            st.events.push("stream reset".into());
        }
    }

    /// Envoy `sendLocalReply`.
    fn local_reply(
        &mut self,
        id: u32,
        status: u32,
        headers: Headers,
        body: Vec<u8>,
        details: String,
    ) -> Result<(), ShimError> {
        {
            let st = self.state_mut(id)?;
            if st.replying || st.client.headers.is_some() {
                // The client has response headers already: all Envoy can do is reset.
                self.reset(id);
                return Ok(());
            }
            st.events.push(format!("local reply {status} ({details})"));
            st.local_reply = Some(LocalReply {
                status,
                headers: headers.clone(),
                body: body.clone(),
                details,
            });
            if st.upstream.headers.is_some() && !st.resp.received_end {
                st.upstream.reset = true;
            }
            st.ended = true;
            st.replying = true;
            st.resp = Side::default();
        }
        let mut full: Headers = vec![(":status".to_string(), status.to_string())];
        for (k, v) in headers {
            pairs::add(&mut full, &k, &v);
        }
        if !body.is_empty() {
            pairs::replace(&mut full, "content-length", &body.len().to_string());
            if pairs::get(&full, "content-type").is_none() {
                pairs::add(&mut full, "content-type", "text/plain");
            }
        }
        let result = self
            .headers_in(id, Dir::Response, full, body.is_empty())
            .and_then(|()| {
                if body.is_empty() {
                    Ok(())
                } else {
                    self.body_in(id, Dir::Response, &body, true)
                }
            });
        if let Ok(st) = self.state_mut(id) {
            st.replying = false;
        }
        result
    }

    /// Runs what the module asked for during the last callback (Envoy's after-VM-call actions).
    pub(crate) fn run_after_actions(&mut self) -> Result<(), ShimError> {
        loop {
            let actions = std::mem::take(&mut self.store.data_mut().after);
            if actions.is_empty() {
                return Ok(());
            }
            for action in actions {
                match action {
                    After::LocalReply {
                        context,
                        status,
                        headers,
                        body,
                        details,
                    } => self.local_reply(context, status, headers, body, details)?,
                    After::Continue { context, dir } => self.resume(context, dir)?,
                    After::Close { context } => self.reset(context),
                }
            }
        }
    }

    // Here rather than with the other root-context events (`root`): finishing a stream delivers
    // them too, and delivering them runs the after-VM-call actions above.
    /// Delivers `proxy_on_queue_ready` for every enqueue (by any VM) on a queue this VM
    /// registered. Envoy posts these to the owner's worker; here they run when asked (and
    /// after each driven stream event).
    pub fn deliver_queue_ready(&mut self) -> Result<usize, ShimError> {
        let index = self.index();
        let mine: Vec<(u32, u32)> = {
            let mut store = self.host().lock();
            let mut mine = Vec::new();
            store.queue_ready.retain(|(vm, ctx, token)| {
                if *vm == index {
                    mine.push((*ctx, *token));
                    false
                } else {
                    true
                }
            });
            mine
        };
        for (ctx, token) in &mine {
            if self.store.data().context_exists(*ctx) {
                self.call(
                    "proxy_on_queue_ready",
                    *ctx,
                    &[to_i32(*ctx), to_i32(*token)],
                )?;
                self.run_after_actions()?;
            }
        }
        Ok(mine.len())
    }
}

fn forward(peer: &mut Peer, data: Vec<u8>, end: bool, trailers: Option<Headers>) {
    if !data.is_empty() {
        peer.chunks.push(data);
    }
    if end {
        if trailers.is_some() {
            peer.trailers = trailers;
        }
        peer.end_of_stream = true;
    }
}

fn stuck(st: &StreamState) -> Option<String> {
    if st.ended {
        return None;
    }
    let describe = |side: &Side, what: &str| -> Option<String> {
        match side.state {
            HeadersState::Stopped { all: true } => Some(format!(
                "the {what} headers callback paused and Envoy made it StopAllIteration \
                 (no allow_on_headers_stop_iteration): no body callback until \
                 proxy_continue_stream, which never came"
            )),
            HeadersState::Stopped { all: false } if side.received_end => Some(format!(
                "the {what} is held by the filter (headers paused, body paused) and was never \
                 resumed"
            )),
            HeadersState::Forwarded
                if (side.data_stopped || side.trailers_held) && side.received_end =>
            {
                Some(format!(
                    "the {what} body is held by the filter (paused at end of stream) and was \
                     never resumed"
                ))
            }
            _ => None,
        }
    };
    if st.req.received_end && !st.upstream.end_of_stream {
        return describe(&st.req, "request").or_else(|| Some("the request is stuck".into()));
    }
    if st.resp.received_end && !st.client.end_of_stream {
        return describe(&st.resp, "response").or_else(|| Some("the response is stuck".into()));
    }
    None
}
