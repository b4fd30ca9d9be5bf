//! What Envoy holds for one HTTP stream: each direction's headers, body and trailers while the
//! filter holds them, what each end received, and the snapshot tests read. Plain data, so that
//! the host functions can read and change it without depending on the code that drives streams.

use crate::abi::{map, Status};
use crate::pairs::{self, Headers};
use std::collections::HashMap;

/// Which way data flows: the request (decoder) or the response (encoder) path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Request,
    Response,
}

impl Dir {
    pub(crate) fn callback(self, what: &str) -> String {
        match self {
            Dir::Request => format!("proxy_on_request_{what}"),
            Dir::Response => format!("proxy_on_response_{what}"),
        }
    }
}

/// What one end of the stream received: the upstream (the request as forwarded) or the client
/// (the response as forwarded).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Peer {
    /// The headers as they were when the filter let them go (`:status` on responses).
    pub headers: Option<Headers>,
    /// Each piece of body as forwarded, in order (a Continue forwards what the filter held).
    pub chunks: Vec<Vec<u8>>,
    pub trailers: Option<Headers>,
    pub end_of_stream: bool,
    /// The stream was reset towards this peer (a local reply cancels the upstream request).
    pub reset: bool,
}

impl Peer {
    pub fn body(&self) -> Vec<u8> {
        self.chunks.concat()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        pairs::get(self.headers.as_deref()?, name)
    }

    /// `:status` of a response.
    pub fn status(&self) -> Option<u32> {
        self.header(":status")?.parse().ok()
    }
}

/// A reply the module sent itself (`proxy_send_local_response`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalReply {
    pub status: u32,
    /// The headers the module passed (Envoy adds `:status`, `content-length` and, without one,
    /// `content-type: text/plain`).
    pub headers: Headers,
    pub body: Vec<u8>,
    pub details: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum HeadersState {
    #[default]
    Waiting,
    Stopped {
        all: bool,
    },
    Forwarded,
}

/// The body the module sees now.
pub(crate) enum BufferView<'a> {
    /// Everything held so far (the previous callback paused).
    Buffered(&'a [u8]),
    /// The chunk of this callback.
    Chunk(&'a [u8]),
    /// No body in flight.
    None,
}

/// One direction of the stream inside Envoy.
#[derive(Debug, Default, Clone)]
pub(crate) struct Side {
    pub started: bool,
    pub headers: Headers,
    pub headers_visible: bool,
    pub trailers: Option<Headers>,
    pub trailers_visible: bool,
    pub state: HeadersState,
    /// The data of the body callback in flight (Envoy's `request_body_buffer_`).
    pub chunk: Vec<u8>,
    pub chunk_visible: bool,
    /// The body callback in flight has end_of_stream (trailers may be added then).
    pub callback_end: bool,
    /// Data Envoy holds for the filter (its decoding/encoding buffer).
    pub buffered: Vec<u8>,
    /// The filter paused with StopIterationAndBuffer: it sees `buffered`, cumulative.
    pub buffering: bool,
    /// A body callback stopped iteration; data waits for Continue or `proxy_continue_stream`.
    pub data_stopped: bool,
    /// The sender finished this direction.
    pub received_end: bool,
    pub trailers_held: bool,
}

impl Side {
    pub(crate) fn view(&self) -> BufferView<'_> {
        if self.buffering {
            BufferView::Buffered(&self.buffered)
        } else if self.chunk_visible {
            BufferView::Chunk(&self.chunk)
        } else {
            BufferView::None
        }
    }

    /// Envoy `Buffer::copyFrom`: prepend (0, 0), replace all (0, >= size), append
    /// (>= size, _); anything else is BadArgument.
    pub(crate) fn write_body(&mut self, start: usize, length: usize, data: &[u8]) -> Status {
        let target = if self.buffering {
            &mut self.buffered
        } else if self.chunk_visible {
            &mut self.chunk
        } else {
            return Status::BadArgument;
        };
        if start == 0 {
            if length == 0 {
                let mut new = data.to_vec();
                new.extend_from_slice(target);
                *target = new;
            } else if length >= target.len() {
                *target = data.to_vec();
            } else {
                return Status::BadArgument;
            }
        } else if start >= target.len() {
            target.extend_from_slice(data);
        } else {
            return Status::BadArgument;
        }
        Status::Ok
    }
}

/// One stream's state: its context in the module and what each end received.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    pub properties: HashMap<Vec<u8>, Vec<u8>>,
    pub req: Side,
    pub resp: Side,
    pub upstream: Peer,
    pub client: Peer,
    pub local_reply: Option<LocalReply>,
    pub created: bool,
    pub access_log: bool,
    pub finished: bool,
    /// A local reply or a reset ended the exchange: peers' further data is dropped.
    pub ended: bool,
    /// The local reply is going through the response callbacks.
    pub replying: bool,
    /// Callbacks and what Envoy made of their results, for diagnostics.
    pub events: Vec<String>,
}

impl StreamState {
    pub(crate) fn side(&self, dir: Dir) -> &Side {
        match dir {
            Dir::Request => &self.req,
            Dir::Response => &self.resp,
        }
    }

    pub(crate) fn side_mut(&mut self, dir: Dir) -> &mut Side {
        match dir {
            Dir::Request => &mut self.req,
            Dir::Response => &mut self.resp,
        }
    }

    pub(crate) fn peer_mut(&mut self, dir: Dir) -> &mut Peer {
        match dir {
            Dir::Request => &mut self.upstream,
            Dir::Response => &mut self.client,
        }
    }

    pub(crate) fn property(&self, path: &[u8]) -> Option<Vec<u8>> {
        self.properties.get(path).cloned()
    }

    /// Envoy `getConstMap`.
    pub(crate) fn readable_map(&self, ty: i32) -> Option<Headers> {
        let log = self.access_log;
        match ty {
            map::REQUEST_HEADERS => {
                (self.req.headers_visible || log).then(|| self.req.headers.clone())
            }
            map::REQUEST_TRAILERS => (self.req.trailers_visible && !log)
                .then(|| self.req.trailers.clone())
                .flatten(),
            map::RESPONSE_HEADERS => {
                (self.resp.headers_visible || log).then(|| self.resp.headers.clone())
            }
            map::RESPONSE_TRAILERS => (self.resp.trailers_visible || log)
                .then(|| self.resp.trailers.clone())
                .flatten(),
            _ => None,
        }
    }

    /// Envoy `getMap`: trailers can be added in the last body callback.
    pub(crate) fn writable_map(&mut self, ty: i32) -> Option<&mut Headers> {
        let (side, trailers) = match ty {
            map::REQUEST_HEADERS => (&mut self.req, false),
            map::REQUEST_TRAILERS => (&mut self.req, true),
            map::RESPONSE_HEADERS => (&mut self.resp, false),
            map::RESPONSE_TRAILERS => (&mut self.resp, true),
            _ => return None,
        };
        if !trailers {
            return side.headers_visible.then_some(&mut side.headers);
        }
        if !side.trailers_visible
            && side.trailers.is_none()
            && side.chunk_visible
            && side.callback_end
        {
            side.trailers = Some(Vec::new());
            side.trailers_visible = true;
        }
        if side.trailers_visible {
            side.trailers.as_mut()
        } else {
            None
        }
    }
}

/// A snapshot of a stream for tests.
#[derive(Debug, Clone)]
pub struct StreamView {
    pub id: u32,
    pub upstream: Peer,
    pub client: Peer,
    pub local_reply: Option<LocalReply>,
    /// The exchange is over (a local reply or a reset ended it).
    pub ended: bool,
    pub finished: bool,
    pub events: Vec<String>,
    /// Why the request or the response is stuck in the filter, if it is.
    pub stuck: Option<String>,
}
