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
//!
//! `flow` holds the callbacks for headers, body and trailers and what their results do to the
//! data Envoy holds; `reply` the local reply and the reset; `after` the after-VM-call actions.

mod after;
mod flow;
mod reply;

use crate::abi::to_i32;
use crate::error::ShimError;
use crate::pairs::Headers;
use crate::stream_state::{Dir, HeadersState, Side, StreamState, StreamView};
use crate::vm::Vm;
use crate::vm_state::property_key;

fn no_stream(id: u32, ended: bool) -> ShimError {
    ShimError::Usage(if ended {
        format!("stream {id} has ended (its context was deleted)")
    } else {
        format!("no stream {id}")
    })
}

fn lower(headers: Headers) -> Headers {
    headers
        .into_iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect()
}

impl Vm {
    fn state(&self, id: u32) -> Result<&StreamState, ShimError> {
        let s = self.store.data();
        s.streams
            .get(&id)
            .ok_or_else(|| no_stream(id, s.ended_stream(id)))
    }

    fn state_mut(&mut self, id: u32) -> Result<&mut StreamState, ShimError> {
        let s = self.store.data_mut();
        let ended = s.ended_stream(id);
        s.streams.get_mut(&id).ok_or_else(|| no_stream(id, ended))
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
        if self.store.data().ended_stream(id) {
            return Ok(());
        }
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
        // Envoy frees a stream's state with its context; keeping it would make a long run pay
        // for every stream before it (memory, page faults) and a search's figures with it.
        self.store.data_mut().streams.remove(&id);
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
