//! Just enough protobuf to read a JWT payload out of Envoy's dynamic metadata (and to write one,
//! for hosts other than Envoy). Envoy's
//! `get_property(["metadata"])` returns the stream's `envoy.config.core.v3.Metadata` serialized;
//! `jwt_authn`'s `payload_in_metadata` puts the payload there as a `google.protobuf.Struct`.
//! Field numbers: Metadata.filter_metadata = 1 (map<string, Struct>); Struct.fields = 1
//! (map<string, Value>); Value: null 1, number 2, string 3, bool 4, struct 5, list 6;
//! ListValue.values = 1; map entries: key 1, value 2.

use serde_json::{Map, Number, Value};

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

enum Field<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0 }
    }

    fn varint(&mut self) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.bytes.get(self.at)?;
            self.at += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }

    /// The next field, or `None` at the end (or on malformed input).
    fn next(&mut self) -> Option<(u64, Field<'a>)> {
        if self.at >= self.bytes.len() {
            return None;
        }
        let tag = self.varint()?;
        let field = match tag & 7 {
            0 => Field::Varint(self.varint()?),
            1 => {
                let raw = self.bytes.get(self.at..self.at + 8)?;
                self.at += 8;
                Field::Fixed64(u64::from_le_bytes(raw.try_into().ok()?))
            }
            2 => {
                let len = usize::try_from(self.varint()?).ok()?;
                let raw = self.bytes.get(self.at..self.at.checked_add(len)?)?;
                self.at += len;
                Field::Bytes(raw)
            }
            5 => {
                self.at += 4;
                Field::Fixed32
            }
            _ => return None,
        };
        Some((tag >> 3, field))
    }
}

/// A map entry's key and value bytes.
fn entry(bytes: &[u8]) -> Option<(String, &[u8])> {
    let mut r = Reader::new(bytes);
    let (mut key, mut value) = (None, &[][..]);
    while let Some((n, f)) = r.next() {
        match (n, f) {
            (1, Field::Bytes(k)) => key = Some(String::from_utf8(k.to_vec()).ok()?),
            (2, Field::Bytes(v)) => value = v,
            _ => {}
        }
    }
    Some((key?, value))
}

fn structure(bytes: &[u8]) -> Value {
    let mut map = Map::new();
    let mut r = Reader::new(bytes);
    while let Some((n, f)) = r.next() {
        if let (1, Field::Bytes(e)) = (n, f) {
            if let Some((k, v)) = entry(e) {
                map.insert(k, value(v));
            }
        }
    }
    Value::Object(map)
}

fn value(bytes: &[u8]) -> Value {
    let mut r = Reader::new(bytes);
    let mut out = Value::Null;
    while let Some((n, f)) = r.next() {
        out = match (n, f) {
            (2, Field::Fixed64(bits)) => Number::from_f64(f64::from_bits(bits))
                .map(|n| match n.as_f64() {
                    Some(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => Value::from(x as i64),
                    _ => Value::Number(n),
                })
                .unwrap_or(Value::Null),
            (3, Field::Bytes(s)) => Value::String(String::from_utf8_lossy(s).into_owned()),
            (4, Field::Varint(b)) => Value::Bool(b != 0),
            (5, Field::Bytes(s)) => structure(s),
            (6, Field::Bytes(list)) => {
                let mut items = Vec::new();
                let mut lr = Reader::new(list);
                while let Some((ln, lf)) = lr.next() {
                    if let (1, Field::Bytes(v)) = (ln, lf) {
                        items.push(value(v));
                    }
                }
                Value::Array(items)
            }
            _ => Value::Null,
        };
    }
    out
}

/// `metadata.filter_metadata[filter]` as JSON, from a serialized `Metadata`.
pub fn filter_metadata(metadata: &[u8], filter: &str) -> Option<Value> {
    let mut r = Reader::new(metadata);
    while let Some((n, f)) = r.next() {
        if let (1, Field::Bytes(e)) = (n, f) {
            let (k, v) = entry(e)?;
            if k == filter {
                return Some(structure(v));
            }
        }
    }
    None
}

fn write_varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn write_field(n: u64, data: &[u8], out: &mut Vec<u8>) {
    write_varint(n << 3 | 2, out);
    write_varint(data.len() as u64, out);
    out.extend_from_slice(data);
}

fn write_entry(key: &str, value: &[u8]) -> Vec<u8> {
    let mut e = Vec::new();
    write_field(1, key.as_bytes(), &mut e);
    write_field(2, value, &mut e);
    e
}

/// A `google.protobuf.Struct` of an object's fields.
fn write_structure(fields: &Map<String, Value>) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in fields {
        write_field(1, &write_entry(k, &write_value(v)), &mut out);
    }
    out
}

/// A `google.protobuf.Value`.
fn write_value(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    match v {
        Value::Null => {
            write_varint(1 << 3, &mut out);
            write_varint(0, &mut out);
        }
        Value::Number(n) => {
            write_varint(2 << 3 | 1, &mut out);
            out.extend_from_slice(&n.as_f64().unwrap_or(0.0).to_bits().to_le_bytes());
        }
        Value::String(s) => write_field(3, s.as_bytes(), &mut out),
        Value::Bool(b) => {
            write_varint(4 << 3, &mut out);
            write_varint(u64::from(*b), &mut out);
        }
        Value::Object(fields) => write_field(5, &write_structure(fields), &mut out),
        Value::Array(items) => {
            let mut list = Vec::new();
            for item in items {
                write_field(1, &write_value(item), &mut list);
            }
            write_field(6, &list, &mut out);
        }
    }
    out
}

/// Envoy's dynamic metadata as `jwt_authn`'s `payload_in_metadata` leaves it:
/// `Metadata.filter_metadata[filter]` = `Struct { key: payload }`, serialized (the inverse of
/// [`filter_metadata`]), for a host that carries a caller as Envoy would (the playground).
pub fn encode_filter_metadata(filter: &str, key: &str, payload: &Value) -> Vec<u8> {
    let mut fields = Map::new();
    fields.insert(key.to_string(), payload.clone());
    let mut out = Vec::new();
    write_field(1, &write_entry(filter, &write_structure(&fields)), &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string_value(s: &str) -> Vec<u8> {
        let mut v = Vec::new();
        write_field(3, s.as_bytes(), &mut v);
        v
    }

    #[test]
    fn reads_a_jwt_payload_struct() {
        // Struct {"sub": "u1", "roles": ["a", "b"], "exp": 17, "ok": true}
        let mut list = Vec::new();
        write_field(1, &string_value("a"), &mut list);
        write_field(1, &string_value("b"), &mut list);
        let mut roles = Vec::new();
        write_field(6, &list, &mut roles);
        let mut exp = Vec::new();
        write_varint(2 << 3 | 1, &mut exp);
        exp.extend_from_slice(&17f64.to_bits().to_le_bytes());
        let ok = vec![4 << 3, 1];
        let mut payload = Vec::new();
        for (k, v) in [
            ("sub", string_value("u1")),
            ("roles", roles),
            ("exp", exp),
            ("ok", ok),
        ] {
            write_field(1, &write_entry(k, &v), &mut payload);
        }
        // Struct {"jwt_payload": <payload as struct_value>}
        let mut payload_value = Vec::new();
        write_field(5, &payload, &mut payload_value);
        let mut filter_struct = Vec::new();
        write_field(
            1,
            &write_entry("jwt_payload", &payload_value),
            &mut filter_struct,
        );
        let mut metadata = Vec::new();
        write_field(1, &write_entry("other", &[]), &mut metadata);
        write_field(
            1,
            &write_entry("envoy.filters.http.jwt_authn", &filter_struct),
            &mut metadata,
        );
        let got = filter_metadata(&metadata, "envoy.filters.http.jwt_authn").unwrap();
        assert_eq!(
            got,
            serde_json::json!({"jwt_payload": {"sub": "u1", "roles": ["a", "b"], "exp": 17, "ok": true}})
        );
        assert!(filter_metadata(&metadata, "missing").is_none());
        assert!(filter_metadata(&[0xff, 0xff], "x").is_none());
        assert!(
            filter_metadata(&[0x0a, 0x50, 1], "x").is_none(),
            "truncated"
        );
    }

    #[test]
    fn what_is_encoded_reads_back() {
        let payload = serde_json::json!({"roles": ["a", "b"], "n": 2.5, "ok": true, "x": null, "o": {"k": "v"}});
        let bytes = encode_filter_metadata("envoy.filters.http.jwt_authn", "jwt_payload", &payload);
        let read = filter_metadata(&bytes, "envoy.filters.http.jwt_authn").unwrap();
        assert_eq!(read["jwt_payload"], payload);
    }
}
