//! Finding a byte in megabyte bodies (an SSE event's line end, a JSON string's end) eight bytes
//! at a time: a `tools/list` result is mostly long strings on one line.

/// The position of the first `a` or `b` at or after `from`.
pub(crate) fn first_of(bytes: &[u8], from: usize, a: u8, b: u8) -> Option<usize> {
    let rest = bytes.get(from..)?;
    let mut words = rest.chunks_exact(8);
    let mut at = from;
    for word in &mut words {
        let w = u64::from_le_bytes(<[u8; 8]>::try_from(word).unwrap_or_default());
        let found = bytes_equal(w, a) | bytes_equal(w, b);
        if found != 0 {
            // The lowest flag is exact: a false one only follows a true one.
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&c| c == a || c == b)
        .map(|i| at + i)
}

/// The high bit of each byte of `word` equal to `byte`, and possibly of bytes after one (the
/// zero-byte test of "Bit Twiddling Hacks" on `word ^ byte × 0x01…01`).
fn bytes_equal(word: u64, byte: u8) -> u64 {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let x = word ^ (LOW * u64::from(byte));
    x.wrapping_sub(LOW) & !x & HIGH
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn found_at_every_offset_with_near_bytes_around() {
        // `#` and `]` are one above `"` and `\`: the zero-byte test's false flags.
        for len in 0..40 {
            for at in 0..=len {
                let mut bytes = vec![b'#'; len];
                if let Some(b) = bytes.get_mut(at) {
                    *b = b'"';
                }
                for from in 0..=len + 1 {
                    let want = (at < len && from <= at).then_some(at);
                    assert_eq!(
                        first_of(&bytes, from, b'"', b'\\'),
                        want,
                        "{len} {at} {from}"
                    );
                }
                if let Some(b) = bytes.get_mut(at) {
                    *b = b'\\';
                }
                let want = (at < len).then_some(at);
                assert_eq!(first_of(&bytes, 0, b'"', b'\\'), want);
                assert_eq!(first_of(&bytes, 0, b'\n', b'\r'), None);
            }
        }
    }
}
