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
//! Where a tool begins as a remembered one does, the scan steps over the remembered length and
//! fingerprints those bytes instead of reading their JSON: bytes with a remembered tool's
//! fingerprint are that valid value, and reading strings and brackets took most of the time
//! of a gateway's list (a 6 MB list of 10,000 tools).

use crate::find;
use crate::index::catalog::Unordered;
use crate::index::fnv::{self, mix};
use serde_json::value::RawValue;

/// How many of a tool's first bytes find it among the remembered ones: its name is in them as
/// servers write a tool (`{"name":"…`). A tool shorter than that is read as JSON, which costs
/// little for so few bytes.
pub(crate) const HEAD: usize = 64;

/// How many remembered tools that begin alike are tried where one of them begins: each costs a
/// fingerprint of its length, so tools that begin alike by the hundred (a server that writes
/// its schema first) are read as JSON instead.
const ALIKE: usize = 4;

pub(crate) type Heads = [(u64, usize, u64)];

/// The print of `result` (a JSON object's bytes) whose `tools` array holds `tools` (slices of
/// `result`) with fingerprints `prints`, and the tools by their first bytes; `None` without a
/// tool.
pub(crate) fn of_tools(result: &[u8], tools: &[&RawValue], prints: &[u64]) -> Option<Unordered> {
    let (first, last) = (tools.first()?.get(), tools.last()?.get());
    let offset = |p: *const u8| (p as usize).checked_sub(result.as_ptr() as usize);
    let first = offset(first.as_ptr())?;
    let end = offset(last.as_ptr())?.checked_add(last.len())?;
    let sum = prints.iter().fold(0u64, |sum, &p| sum.wrapping_add(mix(p)));
    // A shorter tool is read as JSON.
    let mut heads: Vec<(u64, usize, u64)> = tools
        .iter()
        .zip(prints)
        .filter_map(|(tool, &print)| {
            let bytes = tool.get().as_bytes();
            Some((fnv::fingerprint(bytes.get(..HEAD)?), bytes.len(), print))
        })
        .collect();
    crate::sort::sort(&mut heads);
    Some(Unordered {
        print: combine(result, first, end, prints.len() as u64, sum),
        heads,
    })
}

/// The print of `result` read here, where it names its tools `"tools"` as written (a key spelled
/// with escapes is another member here, and only the exact bytes can match); `None` when the
/// bytes are no object this scan can read or hold no tool. `heads`: the remembered tools
/// (`Unordered::heads`), stepped over where they begin.
pub(crate) fn fingerprint(result: &[u8], heads: &Heads) -> Option<u64> {
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
                tools = Some(scan.elements(heads)?);
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
    fn elements(&mut self, heads: &Heads) -> Option<(usize, usize, u64, u64)> {
        self.expect(b'[')?;
        self.whitespace();
        let first = self.at;
        let (mut count, mut sum) = (0u64, 0u64);
        loop {
            let print = match self.known(heads) {
                Some(print) => print,
                None => fnv::fingerprint(self.value()?),
            };
            let end = self.at;
            count += 1;
            sum = sum.wrapping_add(mix(print));
            self.whitespace();
            match self.next()? {
                b',' => self.whitespace(),
                b']' => return Some((first, end, count, sum)),
                _ => return None,
            }
        }
    }

    /// The fingerprint of the remembered tool that begins here, stepped over; `None` (nothing
    /// read) when none begins here or these bytes are not all of it.
    fn known(&mut self, heads: &Heads) -> Option<u64> {
        let rest = self.bytes.get(self.at..)?;
        let head = fnv::fingerprint(rest.get(..HEAD)?);
        let alike = heads.get(heads.partition_point(|&(h, _, _)| h < head)..)?;
        let (len, print) = alike
            .iter()
            .take_while(|&&(h, _, _)| h == head)
            .take(ALIKE)
            .find(|&&(_, len, print)| rest.get(..len).map(fnv::fingerprint) == Some(print))
            .map(|&(_, len, print)| (len, print))?;
        self.at += len;
        Some(print)
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
        fingerprint(text.as_bytes(), &[])
    }

    #[derive(serde::Deserialize)]
    struct Result<'a> {
        #[serde(borrow)]
        tools: Vec<&'a RawValue>,
    }

    /// What a rewrite reading `text` remembers.
    fn learned(text: &str) -> Option<Unordered> {
        let read: Result = serde_json::from_str(text).unwrap();
        let prints: Vec<u64> = read
            .tools
            .iter()
            .map(|t| fnv::fingerprint(t.get().as_bytes()))
            .collect();
        of_tools(text.as_bytes(), &read.tools, &prints)
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
        assert_eq!(learned(text).map(|u| u.print), print(text));
        assert!(print(text).is_some());
        assert!(learned(r#"{"tools":[]}"#).is_none());
    }

    /// A list of remembered tools in another order is read by stepping over each tool's
    /// remembered bytes: its print is the scan's, and so is that of every list near it.
    #[test]
    fn remembered_tools_are_stepped_over_to_the_same_print() {
        let tool = |name: &str, about: &str| {
            format!(
                r#"{{"name":"{name}","description":"{about} [\"quoted\"] with words enough to pass the first bytes that find a tool among the remembered ones, up to its head"}}"#
            )
        };
        let (a, b, c) = (tool("a", "A"), tool("b", "B"), tool("c", "C"));
        let list =
            |tools: &[&str]| format!(r#"{{"tools":[{}],"nextCursor":"n"}}"#, tools.join(","));
        let remembered = learned(&list(&[&a, &b, &c])).unwrap();
        assert_eq!(remembered.heads.len(), 3);
        let heads = &remembered.heads;
        let stepped = |text: &str| fingerprint(text.as_bytes(), heads);
        assert_eq!(stepped(&list(&[&c, &a, &b])), Some(remembered.print));
        // A tool that begins as a remembered one and then differs, is longer, shorter, or runs
        // into the next: read as JSON, as without a memo.
        let longer = a.replacen('}', r#","x":1}"#, 1);
        let changed = a.replace("head", "heaD");
        let cut = a.get(..a.len() - 2).unwrap().to_string() + "}";
        for text in [
            list(&[&c, &longer, &b]),
            list(&[&c, &changed, &b]),
            list(&[&c, &cut, &b]),
            list(&[&c, &(a.clone() + &b)]),
            list(&[&c, &(a.clone() + " x"), &b]),
            list(&[&c, &a]),
            list(&[&c, &a, &b, &a]),
        ] {
            assert_ne!(stepped(&text), Some(remembered.print), "{text}");
            assert_eq!(stepped(&text), print(&text), "{text}");
        }
        // The step itself: over a remembered tool, not over one that differs after its head.
        let text = format!("{a},{changed}");
        let mut scan = Scan {
            bytes: text.as_bytes(),
            at: 0,
        };
        assert!(scan.known(heads).is_some());
        assert_eq!(scan.at, a.len());
        scan.at += 1;
        assert_eq!(scan.known(heads), None);
        assert_eq!(scan.at, a.len() + 1);
        // Tools that begin alike are each found, up to `ALIKE` of them; more are read as JSON.
        let twins: Vec<String> = (0..=ALIKE)
            .map(|i| a.replace("head", &format!("tail {i}")))
            .collect();
        let of = |tools: &[String]| list(&tools.iter().map(String::as_str).collect::<Vec<_>>());
        let few = learned(&of(&twins[..ALIKE])).unwrap();
        let many = learned(&of(&twins)).unwrap();
        let mut moved = twins.clone();
        moved.reverse();
        assert_eq!(
            fingerprint(of(&moved).as_bytes(), &many.heads),
            Some(many.print)
        );
        let steps = |heads: &Heads| {
            twins
                .iter()
                .filter(|twin| {
                    let mut scan = Scan {
                        bytes: twin.as_bytes(),
                        at: 0,
                    };
                    scan.known(heads).is_some()
                })
                .count()
        };
        assert_eq!(steps(&few.heads), ALIKE);
        assert_eq!(steps(&many.heads), ALIKE);
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
