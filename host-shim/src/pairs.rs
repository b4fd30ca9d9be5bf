//! Header maps and their proxy-wasm wire format ("pairs"): a little-endian u32 count, then a
//! (key length, value length) u32 pair per entry, then every key and value each followed by NUL.

/// An ordered header map with lower-case names, like Envoy's (duplicates allowed).
pub type Headers = Vec<(String, String)>;

/// Serializes pairs for the guest.
pub fn encode(pairs: &[(String, String)]) -> Vec<u8> {
    let mut size = 4;
    for (k, v) in pairs {
        size += 8 + k.len() + v.len() + 2;
    }
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(&len32(pairs.len()).to_le_bytes());
    for (k, v) in pairs {
        out.extend_from_slice(&len32(k.len()).to_le_bytes());
        out.extend_from_slice(&len32(v.len()).to_le_bytes());
    }
    for (k, v) in pairs {
        out.extend_from_slice(k.as_bytes());
        out.push(0);
        out.extend_from_slice(v.as_bytes());
        out.push(0);
    }
    out
}

fn len32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn read_u32(bytes: &[u8], at: usize) -> Option<usize> {
    let b = bytes.get(at..at.checked_add(4)?)?;
    let arr: [u8; 4] = b.try_into().ok()?;
    usize::try_from(u32::from_le_bytes(arr)).ok()
}

/// Parses pairs from the guest. Like proxy-wasm-cpp-host's `PairsUtil::toPairs`, malformed input
/// gives an empty list. Non-UTF-8 bytes are replaced (headers are text in every test here).
pub fn decode(bytes: &[u8]) -> Headers {
    decode_checked(bytes).unwrap_or_default()
}

fn decode_checked(bytes: &[u8]) -> Option<Headers> {
    if bytes.is_empty() {
        return Some(Vec::new());
    }
    let count = read_u32(bytes, 0)?;
    // Each entry needs at least 8 bytes of sizes and two NULs.
    if count > bytes.len() / 10 + 1 {
        return None;
    }
    let mut sizes = Vec::with_capacity(count);
    for i in 0..count {
        let at = 4 + i * 8;
        sizes.push((read_u32(bytes, at)?, read_u32(bytes, at + 4)?));
    }
    let mut p = 4 + count * 8;
    let mut out = Vec::with_capacity(count);
    for (klen, vlen) in sizes {
        let key = bytes.get(p..p.checked_add(klen)?)?;
        p += klen;
        if bytes.get(p) != Some(&0) {
            return None;
        }
        p += 1;
        let value = bytes.get(p..p.checked_add(vlen)?)?;
        p += vlen;
        if bytes.get(p) != Some(&0) {
            return None;
        }
        p += 1;
        out.push((
            String::from_utf8_lossy(key).into_owned(),
            String::from_utf8_lossy(value).into_owned(),
        ));
    }
    Some(out)
}

/// The first value of `name` (case-insensitive), as Envoy's `getHeaderMapValue` answers.
pub fn get<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Removes every entry named `name`.
pub fn remove(headers: &mut Headers, name: &str) {
    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
}

/// Envoy's `setCopy`: replaces the first entry's value in place and drops the others, or appends.
pub fn replace(headers: &mut Headers, name: &str, value: &str) {
    let lower = name.to_ascii_lowercase();
    let mut seen = false;
    headers.retain_mut(|(k, v)| {
        if !k.eq_ignore_ascii_case(&lower) {
            return true;
        }
        if seen {
            return false;
        }
        seen = true;
        *v = value.to_string();
        true
    });
    if !seen {
        headers.push((lower, value.to_string()));
    }
}

/// Envoy's `addCopy`: appends (names are lower-cased).
pub fn add(headers: &mut Headers, name: &str, value: &str) {
    headers.push((name.to_ascii_lowercase(), value.to_string()));
}

/// Envoy's `HeaderMap::byteSize`: the sum of every key and value length.
pub fn byte_size(headers: &[(String, String)]) -> usize {
    headers.iter().map(|(k, v)| k.len() + v.len()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let h: Headers = vec![
            (":status".into(), "200".into()),
            ("content-type".into(), "application/json".into()),
            ("x-empty".into(), String::new()),
        ];
        assert_eq!(decode(&encode(&h)), h);
        assert_eq!(decode(&[]), Vec::new());
        assert_eq!(decode(&[1, 0, 0, 0, 9]), Vec::new());
    }

    #[test]
    fn replace_keeps_position() {
        let mut h: Headers = vec![
            ("a".into(), "1".into()),
            ("b".into(), "2".into()),
            ("a".into(), "3".into()),
        ];
        replace(&mut h, "A", "x");
        assert_eq!(h, vec![("a".into(), "x".into()), ("b".into(), "2".into())]);
        replace(&mut h, "c", "y");
        assert_eq!(h.last(), Some(&("c".into(), "y".into())));
    }
}
