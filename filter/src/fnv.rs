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

/// The FNV-1a hash of some bytes.
pub fn hash(bytes: &[u8]) -> u64 {
    let mut h = Fnv1a::default();
    h.write(bytes);
    h.finish()
}
