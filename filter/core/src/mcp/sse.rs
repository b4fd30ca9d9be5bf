//! Server-sent events (WHATWG HTML, "Server-sent events", §9.2.6 parsing), incrementally and on
//! bytes: a body arrives in arbitrary chunks, a UTF-8 character or a CRLF may be split across
//! two of them, and every event the filter does not change must leave exactly as it came.

use std::ops::Range;

/// One complete event: its exact bytes (terminating blank line included) and its parsed data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub raw: Vec<u8>,
    /// Its non-empty lines in `raw`, terminators excluded (found once, by the parser).
    lines: Vec<Range<usize>>,
    data: Option<Data>,
}

/// Where an event's data is. A response is nearly always one `data:` line, megabytes long for
/// a big `tools/list`: it is then read in place rather than copied.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Data {
    Line(Range<usize>),
    Joined(Vec<u8>),
}

impl Event {
    pub fn new(raw: Vec<u8>) -> Event {
        let lines = line_ranges(&raw)
            .into_iter()
            .filter(|r| !r.is_empty())
            .collect();
        Event::with_lines(raw, lines)
    }

    fn with_lines(raw: Vec<u8>, lines: Vec<Range<usize>>) -> Event {
        let mut parts: Vec<Range<usize>> = lines
            .iter()
            .filter_map(|r| {
                let line = raw.get(r.clone()).unwrap_or_default();
                let (name, value) = field(line);
                (!line.is_empty() && line.first() != Some(&b':') && name == b"data")
                    .then(|| (r.end - value.len())..r.end)
            })
            .collect();
        let data = match parts.len() {
            0 => None,
            1 => parts.pop().map(Data::Line),
            _ => Some(Data::Joined(
                parts
                    .iter()
                    .map(|r| raw.get(r.clone()).unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(&b"\n"[..]),
            )),
        };
        Event { raw, lines, data }
    }

    /// Whether clients read the event as a JSON-RPC message: its type (the last `event:` field,
    /// WHATWG HTML §9.2.6) is `message`, or it has none. The SDKs' clients skip other types.
    pub fn is_message(&self) -> bool {
        let mut kind: &[u8] = b"message";
        for line in self
            .lines
            .iter()
            .map(|r| self.raw.get(r.clone()).unwrap_or_default())
        {
            let (name, value) = field(line);
            if line.first() != Some(&b':') && name == b"event" {
                kind = value;
            }
        }
        kind == b"message" || kind.is_empty()
    }

    /// `data:` lines joined with `\n`; `None` when the event has no data line.
    pub fn data(&self) -> Option<&[u8]> {
        match self.data.as_ref()? {
            Data::Line(r) => self.raw.get(r.clone()),
            Data::Joined(d) => Some(d),
        }
    }
}

/// Splits a byte stream into events. Lines end in CRLF, LF or CR; an empty line ends an event.
#[derive(Debug, Default)]
pub struct Parser {
    buf: Vec<u8>,
    /// Where scanning resumes in `buf` (bytes before it belong to complete lines of the
    /// current event).
    scan: usize,
    /// The end of the last complete line (its terminator included).
    line_start: usize,
    /// The non-empty lines of the event being read, in `buf`.
    lines: Vec<Range<usize>>,
}

impl Parser {
    pub fn new() -> Self {
        Parser::default()
    }

    /// Bytes held for an event not yet complete.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// Feeds bytes; returns every event completed by them.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.buf.extend_from_slice(chunk);
        self.events(false)
    }

    fn events(&mut self, at_end: bool) -> Vec<Event> {
        let mut events = Vec::new();
        let mut event_start = 0;
        while let Some(&b) = self.buf.get(self.scan) {
            let end = match b {
                b'\n' => self.scan + 1,
                b'\r' => match self.buf.get(self.scan + 1) {
                    Some(b'\n') => self.scan + 2,
                    Some(_) => self.scan + 1,
                    // A CR at the end of the buffer may be the first half of a CRLF.
                    None if !at_end => break,
                    None => self.scan + 1,
                },
                _ => {
                    self.scan = line_break(&self.buf, self.scan).unwrap_or(self.buf.len());
                    continue;
                }
            };
            let empty_line = self.scan == self.line_start;
            if !empty_line {
                self.lines.push(self.line_start..self.scan);
            }
            self.scan = end;
            self.line_start = end;
            if empty_line {
                let lines: Vec<Range<usize>> = self
                    .lines
                    .drain(..)
                    .map(|r| r.start - event_start..r.end - event_start)
                    .collect();
                if event_start == 0 && end == self.buf.len() {
                    // The event is all that is held (a big response arriving on its own): the
                    // buffer is handed over rather than copied.
                    self.scan = 0;
                    self.line_start = 0;
                    events.push(Event::with_lines(std::mem::take(&mut self.buf), lines));
                } else {
                    let raw = self.buf.get(event_start..end).unwrap_or_default().to_vec();
                    events.push(Event::with_lines(raw, lines));
                    event_start = end;
                }
            }
        }
        if event_start > 0 {
            self.buf.drain(..event_start);
            self.scan -= event_start;
            self.line_start -= event_start;
            for line in &mut self.lines {
                *line = line.start - event_start..line.end - event_start;
            }
        }
        events
    }

    /// Ends the stream: the events a final CR completes, and the bytes of an unfinished event
    /// (to pass on unchanged).
    pub fn finish(&mut self) -> (Vec<Event>, Vec<u8>) {
        let events = self.events(true);
        self.scan = 0;
        self.line_start = 0;
        self.lines.clear();
        (events, std::mem::take(&mut self.buf))
    }
}

/// The position of the first CR or LF at or after `from`.
pub(crate) fn line_break(bytes: &[u8], from: usize) -> Option<usize> {
    crate::find::first_of(bytes, from, b'\n', b'\r')
}

/// Lines of `raw` without their terminators.
fn lines(raw: &[u8]) -> Vec<&[u8]> {
    line_ranges(raw)
        .into_iter()
        .map(|r| raw.get(r).unwrap_or_default())
        .collect()
}

/// Where the lines of `raw` are, terminators excluded.
fn line_ranges(raw: &[u8]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    while let Some(end) = line_break(raw, start) {
        out.push(start..end);
        start = end
            + if raw.get(end) == Some(&b'\r') && raw.get(end + 1) == Some(&b'\n') {
                2
            } else {
                1
            };
    }
    if start < raw.len() {
        out.push(start..raw.len());
    }
    out
}

/// A line's field name and value (one leading space of the value removed, per the spec).
fn field(line: &[u8]) -> (&[u8], &[u8]) {
    match line.iter().position(|&b| b == b':') {
        Some(at) => {
            let name = line.get(..at).unwrap_or_default();
            let value = line.get(at + 1..).unwrap_or_default();
            (name, value.strip_prefix(b" ").unwrap_or(value))
        }
        None => (line, &[]),
    }
}

/// The line ending an event uses (its first), so a rewritten event matches its neighbours.
fn line_ending(raw: &[u8]) -> &'static [u8] {
    match raw.iter().position(|&b| b == b'\n' || b == b'\r') {
        Some(at) if raw.get(at) == Some(&b'\r') && raw.get(at + 1) == Some(&b'\n') => b"\r\n",
        Some(at) if raw.get(at) == Some(&b'\r') => b"\r",
        _ => b"\n",
    }
}

/// `event`'s bytes with its data replaced by `data`: every other line (`event:`, `id:`,
/// `retry:`, comments) kept in place, the data written where the first data line was, one
/// `data:` line per line of `data`.
pub fn replace_data(event: &Event, data: &[u8]) -> Vec<u8> {
    let eol = line_ending(&event.raw);
    let mut out = Vec::with_capacity(data.len() + event.raw.len() / 4 + 16);
    let mut written = false;
    let write_data = |out: &mut Vec<u8>| {
        for line in lines(data) {
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(line);
            out.extend_from_slice(eol);
        }
        if data.is_empty() {
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(eol);
        }
    };
    for line in event
        .lines
        .iter()
        .map(|r| event.raw.get(r.clone()).unwrap_or_default())
    {
        let is_data = line.first() != Some(&b':') && field(line).0 == b"data";
        if is_data {
            if !written {
                write_data(&mut out);
                written = true;
            }
            continue;
        }
        out.extend_from_slice(line);
        out.extend_from_slice(eol);
    }
    if !written {
        write_data(&mut out);
    }
    out.extend_from_slice(eol);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_events(chunks: &[&[u8]]) -> (Vec<Event>, Vec<u8>) {
        let mut p = Parser::new();
        let mut events = Vec::new();
        for c in chunks {
            events.extend(p.push(c));
        }
        let (last, rest) = p.finish();
        events.extend(last);
        (events, rest)
    }

    #[test]
    fn lf_crlf_cr_comments_ids_and_priming() {
        let body = b"id: 1\ndata: \n\n: ping\n\nevent: message\r\ndata: {\"a\":1}\r\n\r\ndata: x\rdata: y\r\r";
        let (events, rest) = all_events(&[body]);
        assert!(rest.is_empty());
        assert_eq!(events.len(), 4);
        assert_eq!(events[0].data(), Some(&b""[..]));
        assert_eq!(events[1].data(), None);
        assert_eq!(events[2].data(), Some(&b"{\"a\":1}"[..]));
        assert_eq!(events[3].data(), Some(&b"x\ny"[..]));
        let joined: Vec<u8> = events.iter().flat_map(|e| e.raw.clone()).collect();
        assert_eq!(joined, body.to_vec());
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let body = "event: message\r\nid: 7\r\ndata: {\"t\":\"é€😀\"}\r\n\r\n: c\n\ndata: a\ndata: b\n\ntail".as_bytes();
        let (whole, whole_rest) = all_events(&[body]);
        for i in 0..=body.len() {
            for j in i..=body.len() {
                let (events, rest) = all_events(&[&body[..i], &body[i..j], &body[j..]]);
                assert_eq!(events, whole, "split at {i},{j}");
                for e in &events {
                    assert_eq!(
                        *e,
                        Event::new(e.raw.clone()),
                        "lines as found by the parser"
                    );
                }
                assert_eq!(rest, whole_rest);
            }
        }
        assert_eq!(whole_rest, b"tail");
        assert_eq!(whole[2].data(), Some(&b"a\nb"[..]));
    }

    #[test]
    fn line_breaks_found_at_every_offset() {
        for len in 0..40 {
            for at in 0..=len {
                for brk in [b'\n', b'\r'] {
                    let mut bytes = vec![b'x'; len];
                    if at < len {
                        bytes[at] = brk;
                    }
                    for from in 0..=len {
                        let want = (at < len && at >= from).then_some(at);
                        assert_eq!(line_break(&bytes, from), want, "{len} {at} {from}");
                    }
                }
            }
        }
        assert_eq!(line_break(b"ab", 5), None);
    }

    #[test]
    fn trailing_cr_waits_for_possible_lf() {
        let mut p = Parser::new();
        assert!(p.push(b"data: x\r\n\r").is_empty());
        let events = p.push(b"\n");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].raw, b"data: x\r\n\r\n");
        assert_eq!(p.finish(), (vec![], vec![]));
    }

    #[test]
    fn replace_keeps_other_lines_and_line_ending() {
        let (events, _) =
            all_events(&[b"event: message\r\nid: 9\r\ndata: old\r\ndata: more\r\n\r\n"]);
        let out = replace_data(&events[0], b"{\"new\":\n1}");
        assert_eq!(
            out,
            b"event: message\r\nid: 9\r\ndata: {\"new\":\r\ndata: 1}\r\n\r\n".to_vec()
        );
        let (again, _) = all_events(&[&out]);
        assert_eq!(again[0].data(), Some(&b"{\"new\":\n1}"[..]));
    }
}
