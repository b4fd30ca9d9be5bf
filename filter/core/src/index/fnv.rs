//! FNV-1a: a fixed hash for term dictionaries and catalog versions. std's `RandomState` would
//! seed from the host's randomness on every VM; a fixed hash keeps every Envoy worker's index
//! (and its iteration order) identical and needs no `random_get` import.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const PRIME: u64 = 0x0000_0100_0000_01b3;

#[derive(Clone, Copy)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(OFFSET)
    }
}

impl Hasher for Fnv1a {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(PRIME);
        }
    }
}

pub type FnvHashMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv1a>>;
pub type FnvHashSet<K> = std::collections::HashSet<K, BuildHasherDefault<Fnv1a>>;

/// The FNV-1a hash of some bytes.
pub fn hash(bytes: &[u8]) -> u64 {
    let mut h = Fnv1a::default();
    h.write(bytes);
    h.finish()
}

/// A 64-bit fingerprint of a large byte string, thirty-two bytes per step: FNV-1a's byte per
/// step took about 10 ms over a 6 MB `tools/list` result. Not for adversarial collisions; callers
/// compare lengths too, and a collision could only replay the same upstream's earlier answer.
pub fn fingerprint(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let step = |h: u64, w: u64| (h.rotate_left(5) ^ w).wrapping_mul(K);
    let word = |w: &[u8]| u64::from_le_bytes(<[u8; 8]>::try_from(w).unwrap_or_default());
    // Four independent lanes: one multiply chain waits on the last (a multiply's latency per
    // eight bytes), four keep the multiplier busy, which is what a megabyte-sized list needs.
    let mut lanes = [
        OFFSET ^ bytes.len() as u64,
        PRIME,
        K,
        OFFSET.rotate_left(32),
    ];
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        for (lane, w) in lanes.iter_mut().zip(block.chunks_exact(8)) {
            *lane = step(*lane, word(w));
        }
    }
    let mut h = lanes.iter().fold(0, |h: u64, &lane| step(h, lane));
    let rest = blocks.remainder();
    let mut words = rest.chunks_exact(8);
    for w in &mut words {
        h = step(h, word(w));
    }
    for &b in words.remainder() {
        h = step(h, u64::from(b));
    }
    // A final avalanche, so that a change in the last word reaches every bit.
    let h = xorshift_multiply(h, FMIX_1);
    h ^ (h >> 33)
}

const FMIX_1: u64 = 0xff51_afd7_ed55_8ccd;
const FMIX_2: u64 = 0xc4ce_b9fe_1a85_ec53;

fn xorshift_multiply(h: u64, k: u64) -> u64 {
    (h ^ (h >> 33)).wrapping_mul(k)
}

/// MurmurHash3's 64-bit finalizer: each input bit reaches every output bit, so sums of mixed
/// fingerprints do not cancel as sums of raw ones could.
pub(crate) fn mix(h: u64) -> u64 {
    let h = xorshift_multiply(xorshift_multiply(h, FMIX_1), FMIX_2);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_differ_for_any_changed_byte() {
        let base: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
        let f = fingerprint(&base);
        assert_eq!(f, fingerprint(&base.clone()));
        for at in [0, 7, 8, 31, 32, 500, 959, 960, 991, 992, 999] {
            let mut changed = base.clone();
            changed[at] ^= 1;
            assert_ne!(fingerprint(&changed), f, "byte {at}");
        }
        assert_ne!(fingerprint(&base[..999]), f);
        assert_ne!(fingerprint(b""), fingerprint(b"\0"));
    }

    #[test]
    fn mix_is_murmur3_fmix64() {
        assert_eq!(mix(0), 0);
        assert_eq!(mix(1), 0xb456_bcfc_34c2_cb2c);
        assert_eq!(mix(42), 0x8108_7960_8e42_59cc);
        assert_eq!(mix(0x0123_4567_89ab_cdef), 0x87cb_fbfe_8902_2cea);
    }
}
