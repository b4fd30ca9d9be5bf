//! `notifications/tools/list_changed` (spec 2025-11-25 "Tools", List Changed Notification) seen
//! in a response stream passing through: on a POST's SSE response, the GET stream, or a
//! 2026-07-28 `subscriptions/listen` stream.
//!
//! Found as the method's JSON string token in the bytes, across chunk boundaries, without
//! parsing every event of long-lived streams. The token with both quotes unescaped cannot occur
//! inside another JSON string (there its quotes are escaped), only as a member or value; a
//! server that writes it as some other value at worst causes one early refresh.

const TOKEN: &[u8] = b"\"notifications/tools/list_changed\"";

/// Looks for the notification in a stream fed chunk by chunk.
#[derive(Debug, Default)]
pub struct ListChangedScanner {
    /// The end of the previous chunk, for a token split across two chunks.
    tail: Vec<u8>,
}

impl ListChangedScanner {
    /// Whether the token ends in `chunk`.
    pub fn push(&mut self, chunk: &[u8]) -> bool {
        let keep = TOKEN.len() - 1;
        let mut window = std::mem::take(&mut self.tail);
        window.extend_from_slice(chunk.get(..keep.min(chunk.len())).unwrap_or_default());
        let found = contains(&window) || contains(chunk);
        let from = chunk.len().saturating_sub(keep);
        if chunk.len() >= keep {
            self.tail = chunk.get(from..).unwrap_or_default().to_vec();
        } else {
            // A short chunk: the tail is what came before it plus the chunk, at most `keep`.
            let start = window.len().saturating_sub(keep);
            self.tail = window.get(start..).unwrap_or_default().to_vec();
        }
        found
    }
}

fn contains(haystack: &[u8]) -> bool {
    haystack.windows(TOKEN.len()).any(|w| w == TOKEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVENT: &str = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\r\n\r\n";

    #[test]
    fn found_at_every_split_and_in_small_chunks() {
        let bytes = format!(": ping\n\n{EVENT}").into_bytes();
        for at in 0..=bytes.len() {
            let mut s = ListChangedScanner::default();
            let (a, b) = bytes.split_at(at);
            assert!(s.push(a) | s.push(b), "split at {at}");
        }
        for size in 1..8 {
            let mut s = ListChangedScanner::default();
            assert!(
                bytes.chunks(size).fold(false, |f, c| s.push(c) | f),
                "chunks of {size}"
            );
        }
    }

    #[test]
    fn other_notifications_and_escaped_mentions_are_not_it() {
        let mut s = ListChangedScanner::default();
        assert!(!s.push(b"data: {\"method\":\"notifications/resources/list_changed\"}\n\n"));
        assert!(!s.push(
            br#"data: {"result":{"content":[{"type":"text","text":"send \"notifications/tools/list_changed\" now"}]}}"#
        ));
    }
}
