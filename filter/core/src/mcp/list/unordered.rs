//! The fingerprint of a `tools/list` result whatever order its tools come in. A gateway such as
//! Envoy's `mcp_router` joins its servers' lists in the order their answers arrive, so the same
//! tools come in another order list after list; a rewrite that does not depend on their order
//! (`list::rewrite_object`) can be replayed for any of them.
//!
//! The print: the bytes of the result before its first tool and after its last, and the tools
//! as a multiset (each one's `fnv::fingerprint`, mixed, summed). A rewrite reading the list
//! anyway has each tool's fingerprint (`of_tools`); a list not read whole is scanned once
//! (`fingerprint`): the scan checks the punctuation between values and takes each value's bytes
//! as written, so bytes whose print is a remembered result's are a valid result of its tools.

use crate::find;
use crate::index::fnv::{self, mix};

/// The print of `result` (a JSON object's bytes) whose `tools` array holds tools with
/// fingerprints `prints`, from `first` to `last` (slices of `result`); `None` without a tool.
pub(crate) fn of_tools(result: &[u8], first: &[u8], last: &[u8], prints: &[u64]) -> Option<u64> {
    if prints.is_empty() {
        return None;
    }
    let offset = |p: *const u8| (p as usize).checked_sub(result.as_ptr() as usize);
    let first = offset(first.as_ptr())?;
    let end = offset(last.as_ptr())?.checked_add(last.len())?;
    let sum = prints.iter().fold(0u64, |sum, &p| sum.wrapping_add(mix(p)));
    Some(combine(result, first, end, prints.len() as u64, sum))
}

/// The print of `result` read here, where it names its tools `"tools"` as written (a key spelled
/// with escapes is another member here, and only the exact bytes can match); `None` when the
/// bytes are no object this scan can read or hold no tool.
pub(crate) fn fingerprint(result: &[u8]) -> Option<u64> {
    let mut scan = Scan {
        bytes: result,
        at: 0,
    };
    let mut tools = None;
    scan.whitespace();
    scan.expect(b'{')?;
    scan.whitespace();
    if scan.peek() == Some(b'}') {
        scan.at += 1;
    } else {
        loop {
            scan.whitespace();
            let key = scan.string()?;
            scan.whitespace();
            scan.expect(b':')?;
            scan.whitespace();
            if key == b"\"tools\"" && tools.is_none() && scan.peek() == Some(b'[') {
                tools = Some(scan.elements()?);
            } else {
                scan.value()?;
            }
            scan.whitespace();
            match scan.next()? {
                b',' => continue,
                b'}' => break,
                _ => return None,
            }
        }
    }
    scan.whitespace();
    let (first, end, count, sum) = tools?;
    (scan.at == result.len() && count > 0).then(|| combine(result, first, end, count, sum))
}

/// The print from its parts: the bytes before `first` and from `end`, `count` tools between
/// whose mixed fingerprints sum to `sum`.
fn combine(result: &[u8], first: usize, end: usize, count: u64, sum: u64) -> u64 {
    let before = result.get(..first).unwrap_or_default();
    let after = result.get(end..).unwrap_or_default();
    let mut h = mix(result.len() as u64 ^ count.rotate_left(32));
    h = mix(h ^ fnv::fingerprint(before));
    h = mix(h ^ fnv::fingerprint(after));
    mix(h ^ sum)
}

struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn expect(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// JSON's whitespace (RFC 8259, section 2).
    fn whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// The elements of a non-empty array: where the first begins and the last ends, how many,
    /// and the sum of their mixed fingerprints.
    fn elements(&mut self) -> Option<(usize, usize, u64, u64)> {
        self.expect(b'[')?;
        self.whitespace();
        let first = self.at;
        let (mut count, mut sum) = (0u64, 0u64);
        loop {
            let element = self.value()?;
            let end = self.at;
            count += 1;
            sum = sum.wrapping_add(mix(fnv::fingerprint(element)));
            self.whitespace();
            match self.next()? {
                b',' => self.whitespace(),
                b']' => return Some((first, end, count, sum)),
                _ => return None,
            }
        }
    }

    /// One value's bytes, as written.
    fn value(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        match self.peek()? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => depth = depth.checked_sub(1)?,
                        _ => {}
                    }
                    self.at += 1;
                    if depth == 0 {
                        break;
                    }
                }
            }
            _ => {
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.at += 1;
                }
            }
        }
        self.bytes.get(start..self.at).filter(|v| !v.is_empty())
    }

    /// A string's bytes with their quotes.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        self.expect(b'"')?;
        loop {
            self.at = find::first_of(self.bytes, self.at, b'"', b'\\').unwrap_or(self.bytes.len());
            match self.next()? {
                b'"' => return self.bytes.get(start..self.at),
                b'\\' => self.at += 1,
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn print(text: &str) -> Option<u64> {
        fingerprint(text.as_bytes())
    }

    #[test]
    fn the_tools_order_does_not_count_and_every_other_byte_does() {
        let a = r#"{"tools":[{"name":"a","description":"say \"hi\" \\ [x]"},{"name":"b"}, {"name":"c"}],"nextCursor":"n"}"#;
        let b = r#"{"tools":[{"name":"c"},{"name":"a","description":"say \"hi\" \\ [x]"}, {"name":"b"}],"nextCursor":"n"}"#;
        let p = print(a).unwrap();
        assert_eq!(print(b), Some(p));
        for other in [
            // A tool changed, lost, repeated or moved out of the array.
            r#"{"tools":[{"name":"c"},{"name":"a","description":"say \"hi\" \\ [y]"}, {"name":"b"}],"nextCursor":"n"}"#,
            r#"{"tools":[{"name":"c"},{"name":"a","description":"say \"hi\" \\ [x]"}],"nextCursor":"n"}"#,
            r#"{"tools":[{"name":"c"},{"name":"c"},{"name":"a","description":"say \"hi\" \\ [x]"}, {"name":"b"}],"nextCursor":"n"}"#,
            // Other members keep their order and bytes.
            r#"{"nextCursor":"n","tools":[{"name":"a","description":"say \"hi\" \\ [x]"},{"name":"b"}, {"name":"c"}]}"#,
            r#"{"tools":[{"name":"a","description":"say \"hi\" \\ [x]"},{"name":"b"}, {"name":"c"}],"nextCursor":"m"}"#,
        ] {
            assert_ne!(print(other), Some(p), "{other}");
        }
        // Whitespace may move between tools (the result's length counts).
        assert_eq!(
            print(r#"{ "tools" : [ {"name":"x"} ,{"name":"y"}] }"#),
            print(r#"{ "tools" : [ {"name":"y"}, {"name":"x"}] }"#)
        );
        assert_ne!(
            print(r#"{ "tools" : [ {"name":"x"} ,{"name":"y"}] }"#),
            print(r#"{ "tools" : [ {"name":"y"},{"name":"x"} ] }"#)
        );
    }

    /// What a rewrite reading the list computes from its tools is what the scan finds.
    #[test]
    fn the_print_of_a_read_list_is_the_scanned_print() {
        let text =
            r#"{ "tools": [{"name":"a","d":"x\"]"} , 7,"s" ,{"b":[1,{}]}],"_meta":{"k":[]}}"#;
        #[derive(serde::Deserialize)]
        struct Result<'a> {
            #[serde(borrow)]
            tools: Vec<&'a serde_json::value::RawValue>,
        }
        let read: Result = serde_json::from_str(text).unwrap();
        let tools: Vec<&[u8]> = read.tools.iter().map(|t| t.get().as_bytes()).collect();
        let prints: Vec<u64> = tools.iter().map(|t| fnv::fingerprint(t)).collect();
        assert_eq!(tools.len(), 4);
        let (first, last) = (tools[0], tools[3]);
        assert_eq!(of_tools(text.as_bytes(), first, last, &prints), print(text));
        assert!(print(text).is_some());
        assert_eq!(of_tools(text.as_bytes(), first, last, &[]), None);
    }

    #[test]
    fn what_is_not_a_result_with_tools_has_none() {
        for text in [
            "",
            "[]",
            "{}",
            r#"{"tools":[]}"#,
            r#"{"tools":{}}"#,
            r#"{"tool\u0073":[1,2]}"#,
            r#"{"tools":[1 2]}"#,
            r#"{"tools":[1,]}"#,
            r#"{"tools":[1]"#,
            r#"{"tools":[1]} x"#,
            r#"{"tools":[1],}"#,
            r#"{"tools":[{"a":"unterminated}]}"#,
            r#"{"tools":[}]}"#,
            r#"{"tools" [1]}"#,
            r#"{tools:[1]}"#,
        ] {
            assert_eq!(print(text), None, "{text}");
        }
        // A string's quote after a backslash pair ends it; one after a lone backslash does not.
        assert!(print(r#"{"tools":["a\\"]}"#).is_some());
        assert_eq!(print(r#"{"tools":["a\"]}"#), None);
    }

    #[test]
    fn a_quote_is_found_at_every_position_of_a_word() {
        for pad in 0..20 {
            let moved = format!(r#"{{"tools":["b","{}"],"x":1}}"#, "a".repeat(pad));
            let text = format!(r#"{{"tools":["{}","b"],"x":1}}"#, "a".repeat(pad));
            assert!(print(&text).is_some(), "{text}");
            assert_eq!(print(&text), print(&moved), "{text}");
            let longer = format!(r#"{{"tools":["{}","b"],"x":1}}"#, "a".repeat(pad + 1));
            assert_ne!(print(&text), print(&longer));
            // Bytes one above a quote or a backslash (`#`, `]`), next to one or alone.
            let near = format!(r##"{{"tools":["{}#\]\\#]","#"],"x":1}}"##, "a".repeat(pad));
            let near_moved = format!(r##"{{"tools":["#","{}#\]\\#]"],"x":1}}"##, "a".repeat(pad));
            assert!(print(&near).is_some(), "{near}");
            assert_eq!(print(&near), print(&near_moved));
        }
    }
}
