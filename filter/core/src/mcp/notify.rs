//! `notifications/tools/list_changed` (spec 2025-11-25 "Tools", List Changed Notification) seen
//! in a response stream passing through: on a POST's SSE response, the GET stream, or a
//! 2026-07-28 `subscriptions/listen` stream.
//!
//! Decided on what a client acts on: a JSON-RPC notification (JSON-RPC 2.0 §4.1: a request
//! without an `id` member) whose `method` is that one, in the data of an SSE event a client
//! dispatches as a message. The method's name anywhere else (a `ping` whose id a client chose
//! to be that string and the server echoes, a server request with an id, a tool result) is not
//! a list change, and must not make the filter fetch the catalog again.
//!
//! Long-lived streams are read without holding them: events are split incrementally (WHATWG
//! HTML §9.2.6), only the data and the type of the event being read are kept, up to
//! `MAX_EVENT_BYTES`, and only an event whose data holds the method's JSON token is parsed.

use crate::mcp::json::RawObject;
use serde_json::value::RawValue;

pub const METHOD: &str = "notifications/tools/list_changed";
/// The method as a JSON string token, unescaped: what a server writes (neither SDK escapes
/// `/`). A notification written with escapes in its method is missed, and the catalog is
/// refreshed at its age instead.
const TOKEN: &[u8] = b"\"notifications/tools/list_changed\"";
/// The largest event data read for a notification. A list_changed notification is under a
/// hundred bytes (plus an optional `params._meta`); a larger event (a tool result, a list) is
/// let through without being kept, so that a watched stream costs a bounded buffer.
pub const MAX_EVENT_BYTES: usize = 16 * 1024;
/// The longest event type kept: only an empty one or `message` matters.
const MAX_TYPE_BYTES: usize = 16;

/// Finds list_changed notifications in an SSE stream fed chunk by chunk. The verdict does not
/// depend on where the chunks split.
#[derive(Debug, Default)]
pub struct ListChangedScanner {
    /// The line being read (its first `MAX_EVENT_BYTES` bytes), and whether it was longer.
    line: Vec<u8>,
    line_cut: bool,
    /// The last byte seen was a CR: an LF right after it ends no second line.
    after_cr: bool,
    /// The event being read: its data lines joined by LF, whether it has any, whether its data
    /// was longer than `MAX_EVENT_BYTES`, and its type (the last `event:` field).
    data: Vec<u8>,
    has_data: bool,
    data_cut: bool,
    kind: Vec<u8>,
    kind_cut: bool,
}

impl ListChangedScanner {
    pub fn new() -> Self {
        ListChangedScanner::default()
    }

    /// Reads `chunk`: whether an event it completes is a list_changed notification.
    pub fn push(&mut self, chunk: &[u8]) -> bool {
        let mut found = false;
        let mut rest = chunk;
        while !rest.is_empty() {
            if std::mem::take(&mut self.after_cr) {
                if let Some(after_lf) = rest.strip_prefix(b"\n") {
                    rest = after_lf;
                    continue;
                }
            }
            // A list's event is one data line of megabytes: found eight bytes at a time.
            match crate::mcp::sse::line_break(rest, 0) {
                None => {
                    self.extend_line(rest);
                    break;
                }
                Some(at) => {
                    self.extend_line(rest.get(..at).unwrap_or_default());
                    self.after_cr = rest.get(at) == Some(&b'\r');
                    found |= self.end_line();
                    rest = rest.get(at + 1..).unwrap_or_default();
                }
            }
        }
        found
    }

    fn extend_line(&mut self, bytes: &[u8]) {
        let room = MAX_EVENT_BYTES.saturating_sub(self.line.len());
        if bytes.len() > room {
            self.line_cut = true;
        }
        self.line
            .extend_from_slice(bytes.get(..room.min(bytes.len())).unwrap_or_default());
    }

    /// A line ended: a field of the event, or (empty) the event's end.
    fn end_line(&mut self) -> bool {
        let cut = std::mem::take(&mut self.line_cut);
        if self.line.is_empty() && !cut {
            return self.end_event();
        }
        let line = std::mem::take(&mut self.line);
        if line.first() != Some(&b':') {
            // A field: its name up to the first colon, its value after it (one leading space
            // dropped); a line without a colon is a name with an empty value.
            let (name, value) = match line.iter().position(|&b| b == b':') {
                Some(at) => {
                    let value = line.get(at + 1..).unwrap_or_default();
                    (
                        line.get(..at).unwrap_or_default(),
                        value.strip_prefix(b" ").unwrap_or(value),
                    )
                }
                None => (line.as_slice(), &[][..]),
            };
            match name {
                b"data" => {
                    if self.has_data {
                        self.data.push(b'\n');
                    }
                    self.has_data = true;
                    self.data_cut |= cut || self.data.len() + value.len() > MAX_EVENT_BYTES;
                    if self.data_cut {
                        self.data = Vec::new();
                    } else {
                        self.data.extend_from_slice(value);
                    }
                }
                b"event" => {
                    self.kind_cut = cut || value.len() > MAX_TYPE_BYTES;
                    self.kind.clear();
                    if !self.kind_cut {
                        self.kind.extend_from_slice(value);
                    }
                }
                _ => {}
            }
        }
        // The line's buffer is reused, short: a long line must not keep its memory.
        self.line = line;
        self.line.clear();
        self.line.shrink_to(256);
        false
    }

    /// An empty line: the event is dispatched if it has data (§9.2.6 "dispatch the event").
    fn end_event(&mut self) -> bool {
        let message = !self.kind_cut && (self.kind.is_empty() || self.kind == b"message");
        let found = message && self.has_data && !self.data_cut && is_list_changed(&self.data);
        self.data.clear();
        self.data.shrink_to(256);
        self.has_data = false;
        self.data_cut = false;
        self.kind.clear();
        self.kind_cut = false;
        found
    }
}

/// Whether a parsed event is one the scanner finds: a message event whose data (at most
/// `MAX_EVENT_BYTES`) is a list_changed notification.
pub fn is_list_changed_event(event: &crate::mcp::sse::Event) -> bool {
    event.is_message()
        && event
            .data()
            .is_some_and(|d| d.len() <= MAX_EVENT_BYTES && is_list_changed(d))
}

fn contains_token(haystack: &[u8]) -> bool {
    haystack.windows(TOKEN.len()).any(|w| w == TOKEN)
}

/// Whether `body` (an SSE event's data, or a whole `application/json` body) is a
/// list_changed notification, or a batch (2025-03-26) with one among its elements. Only a body
/// holding the method's token is parsed.
pub fn is_list_changed(body: &[u8]) -> bool {
    if !contains_token(body) {
        return false;
    }
    let Ok(text) = std::str::from_utf8(body) else {
        return false;
    };
    if text.trim_start().starts_with('[') {
        return serde_json::from_str::<Vec<&RawValue>>(text)
            .is_ok_and(|messages| messages.iter().any(|m| is_notification(m.get())));
    }
    is_notification(text)
}

/// One JSON-RPC message: `"jsonrpc": "2.0"`, `"method"` this one, no `id`, `params` absent or
/// an object (what the SDKs' clients accept as a notification). A member named twice is not
/// read in one way (readers differ on which wins): not a notification.
fn is_notification(text: &str) -> bool {
    let Ok(message) = RawObject::parse(text) else {
        return false;
    };
    let count = |key: &str| message.0.iter().filter(|(k, _)| k == key).count();
    if count("id") != 0 || count("method") != 1 || count("jsonrpc") != 1 || count("params") > 1 {
        return false;
    }
    let string = |key: &str| {
        message
            .get(key)
            .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
    };
    let params_ok = message
        .get("params")
        .is_none_or(|p| p.get().starts_with('{'));
    string("method").as_deref() == Some(METHOD)
        && string("jsonrpc").as_deref() == Some("2.0")
        && params_ok
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &str = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\r\n\r\n";

    fn scan(chunks: &[&[u8]]) -> bool {
        let mut s = ListChangedScanner::new();
        chunks.iter().fold(false, |found, c| s.push(c) | found)
    }

    /// Every split of `bytes` in two and in three gives `want`, and so do chunks of 1 to 7.
    fn same_at_every_split(bytes: &[u8], want: bool) {
        let text = String::from_utf8_lossy(bytes);
        for i in 0..=bytes.len() {
            assert_eq!(scan(&[&bytes[..i], &bytes[i..]]), want, "{text:?} at {i}");
            for j in i..=bytes.len() {
                assert_eq!(
                    scan(&[&bytes[..i], &bytes[i..j], &bytes[j..]]),
                    want,
                    "{text:?} at {i},{j}"
                );
            }
        }
        for size in 1..8 {
            let chunks: Vec<&[u8]> = bytes.chunks(size).collect();
            assert_eq!(scan(&chunks), want, "{text:?} in chunks of {size}");
        }
    }

    #[test]
    fn a_notification_is_found_at_every_split() {
        for body in [
            format!(": ping\n\n{EVENT}"),
            EVENT.replace("\r\n", "\n"),
            EVENT.replace("\r\n", "\r"),
            format!("data: {{}}\r\n\r{EVENT}"),
            "id: 3\ndata: {\"method\":\"notifications/tools/list_changed\",\ndata: \"jsonrpc\":\"2.0\",\"params\":{}}\nretry: 10\n\n".to_string(),
            "data:[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}]\n\n".to_string(),
        ] {
            same_at_every_split(body.as_bytes(), true);
        }
    }

    /// The attack of issue 30 (class 7) and its relatives: the method's token in bytes a
    /// client chose or does not read as a notification.
    #[test]
    fn what_is_not_a_notification_is_not_found_at_any_split() {
        for body in [
            // A ping's answer, its id chosen by the client.
            "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"notifications/tools/list_changed\",\"result\":{}}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"notifications/tools/list_changed\"}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"notifications/tools/list_changed\"}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"method\":\"ping\"}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"method\":\"notifications/tools/list_changed\"}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
            "data: {\"method\":\"notifications/tools/list_changed\"}\n\n",
            "data: {\"jsonrpc\":\"1.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":[]}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"} x\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\"}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\\\"notifications/tools/list_changed\\\"\"}],\"structuredContent\":{\"method\":\"notifications/tools/list_changed\"}}}\n\n",
            "data: [{\"jsonrpc\":\"2.0\",\"id\":\"notifications/tools/list_changed\",\"result\":{}}]\n\n",
            // Outside the data, or in an event of another type.
            ": {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
            "id: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\ndata: {}\n\n",
            "event: other\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
            "event: message\nevent: x\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
            // Never dispatched: the stream ends before the event does.
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n",
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\r",
        ] {
            same_at_every_split(body.as_bytes(), false);
        }
    }

    #[test]
    fn the_event_type_message_counts_and_the_last_type_wins() {
        let data =
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n";
        assert!(scan(&[format!("event: message\n{data}").as_bytes()]));
        assert!(scan(&[format!("event:\n{data}").as_bytes()]));
        assert!(scan(&[
            format!("event: x\nevent: message\n{data}").as_bytes()
        ]));
        // The type is the event's: the next event is a message again.
        assert!(scan(&[format!("event: x\ndata: 1\n\n{data}").as_bytes()]));
        assert!(!scan(&[format!("event: Message\n{data}").as_bytes()]));
    }

    /// A big event is let through without being kept, and the next event is read as usual.
    #[test]
    fn big_events_are_not_held() {
        let mut s = ListChangedScanner::new();
        let big = format!(
            "data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":{{\"pad\":\"{}\"}}}}\n\n",
            "x".repeat(MAX_EVENT_BYTES)
        );
        for chunk in big.as_bytes().chunks(1000) {
            assert!(!s.push(chunk));
            assert!(s.line.capacity() <= 2 * MAX_EVENT_BYTES);
            assert!(s.data.capacity() <= 2 * MAX_EVENT_BYTES);
        }
        assert!(s.data.capacity() <= 256 && s.line.capacity() <= 256);
        // A data line of megabytes, in pieces.
        let mut s = ListChangedScanner::new();
        assert!(!s.push(b"data: "));
        for _ in 0..100 {
            assert!(!s.push(&[b'y'; 10_000]));
            assert!(s.line.len() <= MAX_EVENT_BYTES);
        }
        assert!(!s.push(b"\n\n"));
        assert!(s.push(EVENT.as_bytes()));
        // Several data lines that add up to more than the limit.
        let mut s = ListChangedScanner::new();
        let line = format!("data: {}\n", " ".repeat(MAX_EVENT_BYTES / 2));
        let mut event = line.repeat(3);
        event.push_str(
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n",
        );
        assert!(!s.push(event.as_bytes()));
        assert!(s.push(EVENT.as_bytes()));
    }

    /// The events a client dispatches are the ones `mcp::sse` splits, whatever the chunking.
    #[test]
    fn agrees_with_the_sse_parser() {
        let stream = format!(
            "data: a\r\n\r\n: c\n\n{EVENT}data: {{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{}}}}\r\rdata:{}\n\n",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}"
        );
        let mut parser = crate::mcp::sse::Parser::new();
        let events = parser.push(stream.as_bytes());
        let notifications: Vec<bool> = events
            .iter()
            .map(|e| e.data().is_some_and(is_list_changed))
            .collect();
        assert_eq!(notifications, [false, false, true, false, true]);
        let mut s = ListChangedScanner::new();
        let per_event: Vec<bool> = events.iter().map(|e| s.push(&e.raw)).collect();
        assert_eq!(per_event, notifications);
    }

    /// Random streams of SSE pieces in random chunks: the scanner finds a notification exactly
    /// when `mcp::sse` splits out an event of type `message` whose data is one.
    #[test]
    fn agrees_with_the_sse_parser_on_random_streams() {
        const FIELDS: &[&str] = &[
            "data: ",
            "data: ",
            "data: ",
            "data:",
            "data",
            "event: message",
            "event: other",
            "event:",
            ": ",
            "id: ",
            "retry: ",
        ];
        const VALUES: &[&str] = &[
            "",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":\"notifications/tools/list_changed\",\"result\":{}}",
            "{\"jsonrpc\":\"2.0\",",
            "\"method\":\"notifications/tools/list_changed\"}",
            "x",
        ];
        const ENDS: &[&str] = &["\n", "\r", "\r\n"];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let (mut positives, mut gave_up) = (0, 0);
        for _ in 0..3000 {
            let mut stream = String::new();
            for _ in 0..next(3) + 1 {
                for _ in 0..next(3) + 1 {
                    stream.push_str(FIELDS[next(FIELDS.len())]);
                    stream.push_str(VALUES[next(VALUES.len())]);
                    stream.push_str(ENDS[next(ENDS.len())]);
                }
                // Most events end; some are cut by the end of the stream or run into the next.
                if next(5) > 0 {
                    stream.push_str(ENDS[next(ENDS.len())]);
                }
            }
            let bytes = stream.as_bytes();
            let mut parser = crate::mcp::sse::Parser::new();
            let mut events = parser.push(bytes);
            events.extend(parser.finish().0);
            let want = events.iter().any(|e| {
                let mut kind: &[u8] = b"";
                for line in e.raw.split(|&b| b == b'\n' || b == b'\r') {
                    if let Some(value) = line.strip_prefix(b"event:") {
                        kind = value.strip_prefix(b" ").unwrap_or(value);
                    } else if line == b"event" {
                        kind = b"";
                    }
                }
                (kind.is_empty() || kind == b"message") && e.data().is_some_and(is_list_changed)
            });
            positives += usize::from(want);
            let mut chunks = Vec::new();
            let mut rest = bytes;
            while !rest.is_empty() {
                let (a, b) = rest.split_at(next(rest.len()) + 1);
                chunks.push(a);
                rest = b;
            }
            assert_eq!(scan(&chunks), want, "{stream:?} in {chunks:?}");
            // A rewritten stream is read for it by the rewriter: the parser's events, then the
            // scanner once the rewriter gives up (an event over its cap, an event it cannot read).
            let mut rewriter = crate::mcp::list::SseRewriter::new(8 + next(200));
            let unreadable = next(4) == 0;
            let mut rewrite = |_: &[u8]| match unreadable {
                true => Err(crate::mcp::list::RewriteError::NotJson("no".into())),
                false => Ok(None),
            };
            let (mut found, mut out) = (false, Vec::new());
            for (i, chunk) in chunks.iter().enumerate() {
                out.extend(rewriter.push(chunk, i + 1 == chunks.len(), &mut rewrite));
                found |= rewriter.take_list_changed();
            }
            assert_eq!(found, want, "rewriter: {stream:?} in {chunks:?}");
            assert_eq!(out, bytes);
            gave_up += usize::from(rewriter.gave_up().is_some());
        }
        assert!(positives > 300, "{positives}");
        assert!(gave_up > 300, "{gave_up}");
    }

    #[test]
    fn json_bodies_and_batches() {
        assert!(is_list_changed(
            br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#
        ));
        assert!(is_list_changed(
            br#" [{"jsonrpc":"2.0","id":1,"result":{}}, {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{}}}] "#
        ));
        // Escaped, the method is not looked for (no server writes it so).
        assert!(!is_list_changed(
            br#"{"jsonrpc":"2.0","method":"notifications\/tools\/list_changed"}"#
        ));
        assert!(!is_list_changed(
            br#"{"jsonrpc":"2.0","id":"notifications/tools/list_changed","result":{}}"#
        ));
        assert!(!is_list_changed(b"[]"));
        assert!(!is_list_changed(b"\xff"));
        assert!(!is_list_changed(b"null"));
        assert!(!is_list_changed(
            br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","\u0069d":1}"#
        ));
    }
}
