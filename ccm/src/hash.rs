//! A fast hash for the small keys every matcher looks up per event attribute (names,
//! interned strings, partition keys): a multiply-rotate hash in the manner of FxHash,
//! several times cheaper than std's SipHash on short keys. Not resistant to chosen
//! keys, which a matcher's own tables do not face.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The hasher: 8 bytes at a time, rotate, xor, multiply.
#[derive(Default, Clone, Copy)]
pub struct FastHasher(u64);

const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
            self.write_u64(w);
        }
        let mut last = [0u8; 8];
        let tail = chunks.remainder();
        last[..tail.len()].copy_from_slice(tail);
        self.write_u64(u64::from_le_bytes(last) ^ (tail.len() as u64) << 56);
    }
    #[inline]
    fn write_u64(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
    }
    #[inline]
    fn write_u8(&mut self, b: u8) {
        self.write_u64(b as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 29)
    }
}

/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_differ_in_length_or_in_the_last_bytes_hash_apart() {
        let h = |s: &str| {
            let mut f = FastHasher::default();
            f.write(s.as_bytes());
            f.finish()
        };
        assert_ne!(h("n1"), h("n10"));
        assert_ne!(h("abcdefgh"), h("abcdefgh\0"));
        assert_ne!(h(""), h("\0"));
    }
}
