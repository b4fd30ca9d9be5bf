//! A `text/event-stream` response rewritten event by event, and read for
//! `notifications/tools/list_changed` as it passes (`mcp::notify`).

use super::RewriteError;
use crate::mcp::notify::{self, ListChangedScanner};
use crate::mcp::sse;

/// Rewrites one event's data: `Some(new data)` for the target response, `None` to keep it.
pub type EventRewrite<'a> = dyn FnMut(&[u8]) -> Result<Option<Vec<u8>>, RewriteError> + 'a;

/// Why an SSE rewrite stopped rewriting and let the rest of the stream through unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseGiveUp {
    TooLarge,
    Unparseable(RewriteError),
}

/// Rewrites a `text/event-stream` response chunk by chunk: each event is passed on as soon as it
/// is complete, the target response's event is rewritten.
#[derive(Debug)]
pub struct SseRewriter {
    parser: sse::Parser,
    cap: usize,
    gave_up: Option<SseGiveUp>,
    /// After giving up: the rest of the stream, read for list changes only.
    watch: Option<ListChangedScanner>,
    list_changed: bool,
}

impl SseRewriter {
    pub fn new(cap: usize) -> Self {
        SseRewriter {
            parser: sse::Parser::new(),
            cap,
            gave_up: None,
            watch: None,
            list_changed: false,
        }
    }

    /// Bytes held for an event not yet complete.
    pub fn pending(&self) -> usize {
        self.parser.pending()
    }

    /// Why rewriting stopped, if it did (the first reason only).
    pub fn gave_up(&self) -> Option<&SseGiveUp> {
        self.gave_up.as_ref()
    }

    /// Feeds a chunk; returns the bytes to send on now. `rewrite` gets each event's data and
    /// returns the new data for a rewritten event.
    pub fn push(
        &mut self,
        chunk: &[u8],
        end_of_stream: bool,
        rewrite: &mut EventRewrite<'_>,
    ) -> Vec<u8> {
        if let Some(watch) = &mut self.watch {
            self.list_changed |= watch.push(chunk);
            return chunk.to_vec();
        }
        let mut out = Vec::with_capacity(chunk.len());
        let mut events = self.parser.push(chunk);
        let rest = if end_of_stream {
            let (last, rest) = self.parser.finish();
            events.extend(last);
            rest
        } else {
            Vec::new()
        };
        for event in events {
            self.list_changed |= notify::is_list_changed_event(&event);
            if self.gave_up.is_none() && event.raw.len() > self.cap {
                self.gave_up = Some(SseGiveUp::TooLarge);
            }
            if self.gave_up.is_some() {
                out.extend_from_slice(&event.raw);
                continue;
            }
            let new_data = match event.data().filter(|_| event.is_message()) {
                Some(data) => match rewrite(data) {
                    Ok(new) => new,
                    Err(e) => {
                        self.gave_up = Some(SseGiveUp::Unparseable(e));
                        None
                    }
                },
                None => None,
            };
            match new_data {
                Some(data) => out.extend_from_slice(&sse::replace_data(&event, &data)),
                None => out.extend_from_slice(&event.raw),
            }
        }
        out.extend_from_slice(&rest);
        if self.gave_up.is_none() && self.parser.pending() > self.cap {
            self.gave_up = Some(SseGiveUp::TooLarge);
        }
        if self.gave_up.is_some() {
            // From here on chunks pass as they come: what the parser still holds of this one
            // (the start of the next event) goes first, or it would be lost.
            let (last, held) = self.parser.finish();
            for event in last {
                self.list_changed |= notify::is_list_changed_event(&event);
                out.extend_from_slice(&event.raw);
            }
            // The held bytes begin an event: the scanner reads on from there.
            let mut watch = ListChangedScanner::new();
            self.list_changed |= watch.push(&held);
            self.watch = Some(watch);
            out.extend_from_slice(&held);
        }
        out
    }

    /// Whether an event read since the last call was a list_changed notification (the
    /// parser's events while rewriting, then the scanner's reading of the rest): each byte of
    /// the stream is read for it once.
    pub fn take_list_changed(&mut self) -> bool {
        std::mem::take(&mut self.list_changed)
    }
}
