//! Base64 (RFC 4648) for the places the filter meets it: `Mcp-Name` and `Mcp-Param-*` in the
//! 2026-07-28 sentinel form (standard alphabet; decoded from clients, encoded in the filter's own
//! calls) and `jwt_authn`'s forwarded payload (base64url).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alphabet {
    /// `+` and `/` (RFC 4648 §4).
    Standard,
    /// `-` and `_` (§5), or the standard ones: a payload header may come from either encoder.
    UrlOrStandard,
}

/// The bytes `text` encodes, padding optional; `None` for a character outside the alphabet or
/// a non-canonical ending (a dangling character, or bits left over that are not zero).
pub(crate) fn decode(text: &str, alphabet: Alphabet) -> Option<Vec<u8>> {
    let url = alphabet == Alphabet::UrlOrStandard;
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'-' if url => 62,
            b'_' if url => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    (bits < 6 && acc == 0).then_some(out)
}

/// `bytes` in the standard alphabet, padded (RFC 4648 §4).
pub(crate) fn encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let digit = |v: u32| char::from(ALPHABET.get((v & 63) as usize).copied().unwrap_or(b'A'));
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let mut group = [0u8; 3];
        for (slot, b) in group.iter_mut().zip(chunk) {
            *slot = *b;
        }
        let [a, b, c] = group;
        let n = (u32::from(a) << 16) | (u32::from(b) << 8) | u32::from(c);
        out.push(digit(n >> 18));
        out.push(digit(n >> 12));
        out.push(if chunk.len() > 1 { digit(n >> 6) } else { '=' });
        out.push(if chunk.len() > 2 { digit(n) } else { '=' });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_is_what_decoding_reads() {
        for (bytes, text) in [
            (&b""[..], ""),
            (&b"H"[..], "SA=="),
            (&b"Hi"[..], "SGk="),
            (&b"Hi!"[..], "SGkh"),
            (&[0xfb, 0xff][..], "+/8="),
        ] {
            assert_eq!(encode(bytes), text);
            assert_eq!(decode(text, Alphabet::Standard).as_deref(), Some(bytes));
        }
    }

    #[test]
    fn both_alphabets_and_canonical_endings() {
        assert_eq!(
            decode("SGk=", Alphabet::Standard).as_deref(),
            Some(&b"Hi"[..])
        );
        assert_eq!(
            decode("SGk", Alphabet::Standard).as_deref(),
            Some(&b"Hi"[..])
        );
        assert_eq!(
            decode("-_8", Alphabet::UrlOrStandard).as_deref(),
            Some(&[0xfb, 0xff][..])
        );
        assert_eq!(
            decode("+/8", Alphabet::UrlOrStandard).as_deref(),
            Some(&[0xfb, 0xff][..])
        );
        assert_eq!(decode("-_8", Alphabet::Standard), None);
        assert_eq!(decode("SGl", Alphabet::Standard), None, "bits left over");
        assert_eq!(
            decode("SGkhA", Alphabet::Standard),
            None,
            "a dangling character"
        );
        assert_eq!(decode("", Alphabet::Standard).as_deref(), Some(&b""[..]));
    }
}
