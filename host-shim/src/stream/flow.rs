//! One direction of a stream through the filter: headers, body and trailers in, the callback
//! for each, what its status makes Envoy do with the data it holds (forward, buffer, hold), and
//! `proxy_continue_stream`, which forwards what a paused callback held.

use crate::abi::{len_i32, to_i32, DataStatus, HeadersStatus, TrailersStatus};
use crate::error::ShimError;
use crate::pairs::Headers;
use crate::stream_state::{Dir, HeadersState, Peer};
use crate::vm::Vm;

impl Vm {
    pub(super) fn headers_in(
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

    pub(super) fn body_in(
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

    pub(super) fn trailers_in(
        &mut self,
        id: u32,
        dir: Dir,
        trailers: Headers,
    ) -> Result<(), ShimError> {
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
    pub(super) fn resume(&mut self, id: u32, dir: Dir) -> Result<(), ShimError> {
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
