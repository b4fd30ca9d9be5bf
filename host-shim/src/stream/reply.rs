//! Envoy ending a stream itself: a local reply (`sendLocalReply`, which also answers a body over
//! the buffer limit) goes through the filter's response callbacks like any response, and a
//! reset when the client already has response headers.

use crate::error::ShimError;
use crate::pairs::{self, Headers};
use crate::stream_state::{Dir, LocalReply, Side};
use crate::vm::Vm;

impl Vm {
    /// More data than Envoy's buffer limit: 413 for a request; for a response a 500 if the
    /// client has no headers yet, else a reset.
    pub(super) fn overflow(&mut self, id: u32, dir: Dir) -> Result<(), ShimError> {
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

    pub(super) fn reset(&mut self, id: u32) {
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
    pub(super) fn local_reply(
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
}
