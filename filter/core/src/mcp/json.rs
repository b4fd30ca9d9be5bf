//! Order-preserving, byte-faithful JSON handling. A tool definition must reach the agent exactly
//! as the upstream wrote it (no field lost or reordered), so objects are read as ordered lists
//! of (key, raw value) and written back from those raw bytes; only what the filter changes is
//! re-serialized.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;

/// A JSON object as an ordered list of its members, each value kept as its original bytes,
/// borrowed from the text it was read from (a `tools/list` result is megabytes; only what the
/// filter replaces is owned).
#[derive(Debug, Default)]
pub struct RawObject<'a>(pub Vec<(String, Cow<'a, RawValue>)>);

impl<'a> RawObject<'a> {
    pub fn parse(text: &'a str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Like `parse`, but a member named twice (escaped or not) is an error: readers disagree on
    /// which of the two wins (Python's `json` and JavaScript's `JSON.parse` take the last).
    pub fn parse_unique(text: &'a str) -> Result<Self, serde_json::Error> {
        let object = Self::parse(text)?;
        let mut keys: Vec<&str> = object.0.iter().map(|(k, _)| k.as_str()).collect();
        keys.sort_unstable();
        if let Some(pair) = keys.windows(2).find(|pair| pair.first() == pair.get(1)) {
            let key = pair.first().copied().unwrap_or_default();
            return Err(serde::de::Error::custom(format!(
                "duplicate member {key:?}"
            )));
        }
        Ok(object)
    }

    pub fn get(&self, key: &str) -> Option<&RawValue> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_ref())
    }

    /// The value of `key` as read, for as long as the text lives (`None` when absent or set).
    pub fn borrowed(&self, key: &str) -> Option<&'a RawValue> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| match v {
                Cow::Borrowed(raw) => Some(*raw),
                Cow::Owned(_) => None,
            })
    }

    /// Replaces the value of `key` (no-op when absent).
    pub fn set(&mut self, key: &str, value: Box<RawValue>) {
        if let Some(slot) = self.0.iter_mut().find(|(k, _)| k == key) {
            slot.1 = Cow::Owned(value);
        }
    }

    /// Replaces the value of `key`, or adds the member at the end.
    pub fn put(&mut self, key: &str, value: Box<RawValue>) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = Cow::Owned(value),
            None => self.0.push((key.to_string(), Cow::Owned(value))),
        }
    }

    /// Its encoded length, give or take the quoting of keys.
    pub fn encoded_len(&self) -> usize {
        self.0
            .iter()
            .map(|(k, v)| k.len() + v.get().len() + 4)
            .sum()
    }

    /// Appends the object's JSON to `out`, each value as its raw bytes.
    pub fn write(&self, out: &mut String) {
        out.push('{');
        for (i, (key, value)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_string(out, key);
            out.push(':');
            out.push_str(value.get());
        }
        out.push('}');
    }
}

impl<'de> Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = RawObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawObject<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, &'de RawValue>()? {
                    members.push((key, Cow::Borrowed(value)));
                }
                Ok(RawObject(members))
            }
        }
        deserializer.deserialize_map(Members)
    }
}

/// Appends `s` as a JSON string literal, escaped as serde_json escapes it.
pub fn write_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    // RFC 8259 §7: only '"', '\\' and control characters must be escaped; the runs between
    // them are copied whole. Each escaped byte is ASCII, so every cut is a char boundary.
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = next_escape(bytes, 0);
    while let Some(&b) = bytes.get(i) {
        let short = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            _ => "",
        };
        out.push_str(s.get(start..i).unwrap_or_default());
        if short.is_empty() {
            out.push_str("\\u00");
            out.push(hex_digit(b >> 4));
            out.push(hex_digit(b & 0x0f));
        } else {
            out.push_str(short);
        }
        start = i + 1;
        i = next_escape(bytes, start);
    }
    out.push_str(s.get(start..).unwrap_or_default());
    out.push('"');
}

/// The position of the first byte at or after `from` that JSON must escape (`bytes.len()` if
/// none), eight bytes per step: the text of a search's definitions is kilobytes with a quote
/// every few dozen bytes, and a test per byte was most of writing it.
fn next_escape(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    // A lane's high bit is set where the lane is below `n` (n ≤ 0x80), or zero: borrows run
    // only upward, so the lowest flag is always a true one, and lanes of UTF-8 (≥ 0x80) are
    // never flagged.
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x & HIGH;
    let mut i = from;
    while let Some(Ok(lanes)) = bytes.get(i..i + 8).map(<[u8; 8]>::try_from) {
        let x = u64::from_le_bytes(lanes);
        let found = below(x, 0x20)
            | below(x ^ (ONES * u64::from(b'"')), 1)
            | below(x ^ (ONES * u64::from(b'\\')), 1);
        if found != 0 {
            return i + (found.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    let rest = bytes.get(i..).unwrap_or_default();
    let needs = |b: &u8| *b < 0x20 || *b == b'"' || *b == b'\\';
    rest.iter().position(needs).map_or(bytes.len(), |p| i + p)
}

fn hex_digit(nibble: u8) -> char {
    char::from_digit(u32::from(nibble), 16).unwrap_or('0')
}

/// Appends `n` in decimal (without `core::fmt`, whose machinery costs a search more than the
/// digits do).
pub fn write_u64(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut first = digits.len();
    for slot in digits.iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        first -= 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in digits.get(first..).unwrap_or_default() {
        out.push(char::from(d));
    }
}

/// [`write_u64`] for a count or an index.
pub fn write_usize(out: &mut String, n: usize) {
    write_u64(out, u64::try_from(n).unwrap_or(u64::MAX));
}

/// Appends a JSON array of `items`, each written by `write`.
pub fn write_array<T>(
    out: &mut String,
    items: impl IntoIterator<Item = T>,
    mut write: impl FnMut(&mut String, T),
) {
    out.push('[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write(out, item);
    }
    out.push(']');
}

/// A JSON string literal for `s`.
pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    write_string(&mut out, s);
    out
}

/// A JSON object being written by hand, in the order its members are added: `"key":value`
/// pairs, commas between (for small fixed shapes, where serde's derived serializers cost the
/// `.wasm` more than the code they save). It owns its buffer ([`Object::with_capacity`], ended
/// by [`Object::end`]) or borrows another's ([`Object::starting`], given back by
/// [`Object::close_into`]): one type, so that its methods are in the `.wasm` once.
pub struct Object {
    out: String,
    /// Where the object's `{` is in the buffer.
    start: usize,
}

impl Object {
    pub fn new() -> Object {
        Object::with_capacity(64)
    }

    pub fn with_capacity(bytes: usize) -> Object {
        let mut out = String::with_capacity(bytes);
        out.push('{');
        Object { out, start: 0 }
    }

    /// An object written at the end of `out` (a member's value in a larger message, without a
    /// copy): `out` is empty until [`Object::close_into`] gives the buffer back.
    pub fn starting(out: &mut String) -> Object {
        let mut out = std::mem::take(out);
        let start = out.len();
        out.push('{');
        Object { out, start }
    }

    pub fn end(mut self) -> String {
        self.out.push('}');
        self.out
    }

    /// Ends an object of [`Object::starting`], its buffer back in `out`.
    pub fn close_into(self, out: &mut String) {
        *out = self.end();
    }

    /// Starts member `key`: the caller writes its value into the buffer returned.
    pub fn member(&mut self, key: &str) -> &mut String {
        if self.out.len() > self.start + 1 {
            self.out.push(',');
        }
        write_string(&mut self.out, key);
        self.out.push(':');
        &mut self.out
    }

    pub fn number(&mut self, key: &str, n: u64) {
        write_u64(self.member(key), n);
    }

    pub fn count(&mut self, key: &str, n: usize) {
        write_usize(self.member(key), n);
    }

    pub fn boolean(&mut self, key: &str, b: bool) {
        self.member(key).push_str(if b { "true" } else { "false" });
    }

    pub fn text(&mut self, key: &str, text: &str) {
        let out = self.member(key);
        write_string(out, text);
    }

    /// `json` as the value, as it is (valid JSON by the caller's construction).
    pub fn raw(&mut self, key: &str, json: &str) {
        self.member(key).push_str(json);
    }
}

impl Default for Object {
    fn default() -> Self {
        Object::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_member_order_and_bytes() {
        let text = r#"{"z":1,"a":{"y": [1, 2.50],"b":"\u00e9"},"m":null}"#;
        let obj = RawObject::parse(text).unwrap();
        assert_eq!(
            obj.get("a").unwrap().get(),
            r#"{"y": [1, 2.50],"b":"\u00e9"}"#
        );
        let mut out = String::new();
        obj.write(&mut out);
        assert_eq!(out, r#"{"z":1,"a":{"y": [1, 2.50],"b":"\u00e9"},"m":null}"#);
        assert!(RawObject::parse("[1]").is_err());
        assert_eq!(string("a\"b\n"), r#""a\"b\n""#);
    }

    #[test]
    fn an_object_written_into_a_buffer_puts_its_commas_after_its_own_brace() {
        let mut out = Object::with_capacity(8);
        out.number("a", 1);
        let buffer = out.member("inner");
        let mut inner = Object::starting(buffer);
        inner.text("b", "x");
        inner.count("c", 2);
        inner.close_into(buffer);
        let buffer = out.member("empty");
        let mut empty = Object::starting(buffer);
        empty.boolean("only", true);
        empty.close_into(buffer);
        assert_eq!(
            out.end(),
            r#"{"a":1,"inner":{"b":"x","c":2},"empty":{"only":true}}"#
        );
        let mut buffer = String::from("[");
        Object::starting(&mut buffer).close_into(&mut buffer);
        assert_eq!(buffer, "[{}");
    }

    #[test]
    fn every_byte_that_needs_an_escape_is_found_at_every_position() {
        let specials = [
            '"', '\\', '\n', '\u{0}', '\u{1f}', '\u{7f}', 'é', '€', ' ', '!', '#', '[', ']',
        ];
        for len in 0..20 {
            for at in 0..len {
                for c in specials {
                    let mut text: String = "abcdefghijklmnopqrstuvwxyz".chars().take(len).collect();
                    text.replace_range(at..at + 1, &c.to_string());
                    text.push(c);
                    let mut out = String::new();
                    write_string(&mut out, &text);
                    assert_eq!(out, serde_json::to_string(&text).unwrap(), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        for s in [
            "",
            "plain_name",
            "é ☃ \u{2028} \u{7f}",
            "quote\"inside",
            "back\\slash",
            "tab\tand\u{1}control",
            "\u{1f}",
            "\u{8}\u{c}\r\n\u{0}\u{1b}\"\\",
            "ends with a quote\"",
        ] {
            assert_eq!(string(s), serde_json::to_string(s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn numbers_are_written_as_display_writes_them() {
        for n in [0, 7, 10, 99, 100, 1_000_007, u64::from(u32::MAX), u64::MAX] {
            let mut out = String::from("x");
            write_u64(&mut out, n);
            assert_eq!(out, format!("x{n}"));
        }
    }
}
