//! A fast hash for the small keys every matcher looks up per event attribute (names,
//! interned strings, partition keys): a multiply-rotate hash in the manner of FxHash,
//! several times cheaper than std's SipHash on short keys. Not resistant to chosen
//! keys, which a matcher's own tables do not face.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};

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

/// How many times each item of every element of `items` (`of` lists an element's)
/// occurs: counted in parts of 4,096 elements on all cores, then the parts' maps summed
/// (the smaller into the larger).
pub fn count_in_parts<T: Sync, K: Copy + Hash + Eq + Send, I: Iterator<Item = K>>(
    items: &[T],
    of: impl Fn(&T) -> I + Sync,
) -> FastMap<K, u32> {
    use rayon::prelude::*;
    items
        .par_chunks(4096)
        .map(|part| {
            let mut m: FastMap<K, u32> = FastMap::default();
            for k in part.iter().flat_map(&of) {
                *m.entry(k).or_default() += 1;
            }
            m
        })
        .reduce(FastMap::default, |a, b| {
            let (mut big, small) = if a.len() >= b.len() { (a, b) } else { (b, a) };
            for (k, v) in small {
                *big.entry(k).or_default() += v;
            }
            big
        })
}

/// A map from short byte strings, looked up per event attribute (names to rows,
/// strings to their ids): a key of up to 16 bytes is known by its length and at most
/// two words read from its ends (which determine it), found in an open-addressing table
/// by comparing those words, without hashing its bytes a word at a time or calling
/// `memcmp`; a longer key goes to a [`FastMap`]. Encoding events spent three quarters
/// of its time in `FastMap<String, u32>` lookups of the names.
#[derive(Clone, Debug)]
pub struct ShortKeyMap<V> {
    /// Slots `(first word, last word, length, value)`, a power of two, at most half
    /// full; length `u32::MAX` marks an empty slot.
    slots: Vec<(u64, u64, u32, V)>,
    short: usize,
    long: FastMap<Box<[u8]>, V>,
}

impl<V> Default for ShortKeyMap<V> {
    fn default() -> Self {
        ShortKeyMap {
            slots: Vec::new(),
            short: 0,
            long: FastMap::default(),
        }
    }
}

const EMPTY_SLOT: u32 = u32::MAX;

/// The two words that determine a key of at most 16 bytes (with its length), or `None`
/// for a longer one: the first and last 8 bytes (overlapping below 16), the first and
/// last 4 below 8, the first, middle and last byte below 4.
#[inline(always)]
fn short_key(b: &[u8]) -> Option<(u64, u64)> {
    let n = b.len();
    let word = |x: &[u8]| u64::from_le_bytes(x.try_into().expect("8 bytes"));
    let half = |x: &[u8]| u32::from_le_bytes(x.try_into().expect("4 bytes")) as u64;
    Some(match n {
        0 => (0, 0),
        1..=3 => (
            b[0] as u64 | (b[n / 2] as u64) << 8 | (b[n - 1] as u64) << 16,
            0,
        ),
        4..=7 => (half(&b[..4]), half(&b[n - 4..])),
        8..=16 => (word(&b[..8]), word(&b[n - 8..])),
        _ => return None,
    })
}

#[inline(always)]
fn slot_of(a: u64, b: u64, n: usize, mask: usize) -> usize {
    let h = (a ^ b.rotate_left(29) ^ (n as u64) << 57).wrapping_mul(K);
    (h >> 32) as usize & mask
}

impl<V: Copy + Default> ShortKeyMap<V> {
    /// The value of `key`, if it has one.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<V> {
        let Some((x, y)) = short_key(key) else {
            return self.long.get(key).copied();
        };
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut i = slot_of(x, y, key.len(), mask);
        loop {
            let (sx, sy, len, v) = self.slots[i];
            if len == EMPTY_SLOT {
                return None;
            }
            if sx == x && sy == y && len as usize == key.len() {
                return Some(v);
            }
            i = (i + 1) & mask;
        }
    }

    /// Gives `key` the value `v` (a key is inserted once).
    pub fn insert(&mut self, key: &[u8], v: V) {
        let Some((x, y)) = short_key(key) else {
            self.long.insert(key.into(), v);
            return;
        };
        if 2 * (self.short + 1) > self.slots.len() {
            let old = std::mem::take(&mut self.slots);
            self.slots = vec![(0, 0, EMPTY_SLOT, V::default()); (2 * old.len()).max(16)];
            for &(sx, sy, len, v) in old.iter().filter(|s| s.2 != EMPTY_SLOT) {
                self.place(sx, sy, len, v);
            }
        }
        self.place(x, y, key.len() as u32, v);
        self.short += 1;
    }

    fn place(&mut self, x: u64, y: u64, len: u32, v: V) {
        let mask = self.slots.len() - 1;
        let mut i = slot_of(x, y, len as usize, mask);
        while self.slots[i].2 != EMPTY_SLOT {
            i = (i + 1) & mask;
        }
        self.slots[i] = (x, y, len, v);
    }

    /// Removes every key, keeping the table's memory.
    pub fn clear(&mut self) {
        self.slots.fill((0, 0, EMPTY_SLOT, V::default()));
        self.short = 0;
        self.long.clear();
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.short + self.long.len()
    }

    /// Bytes on the heap: the slots, and the long keys with their map.
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<(u64, u64, u32, V)>()
            + self.long.keys().map(|k| k.len()).sum::<usize>()
            + self.long.capacity() * (std::mem::size_of::<(Box<[u8]>, V)>() + 1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

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

    #[test]
    fn short_key_map_finds_every_key_of_every_length_and_no_other() {
        let mut t = ShortKeyMap::<u32>::default();
        let mut names: Vec<String> = Vec::new();
        for len in 0..=24 {
            for c in ["a", "b", "é"] {
                let s: String = c.repeat(len);
                if s.len() <= 40 && !names.contains(&s) {
                    names.push(s);
                }
            }
            // Names that differ only in a middle byte: the key's words must tell them
            // apart wherever it is (lengths up to 16 read both ends, which overlap).
            let mut v = vec![b'x'; len];
            if len > 0 {
                v[len / 2] = b'y';
                names.push(String::from_utf8(v).unwrap());
            }
        }
        names.sort();
        names.dedup();
        for (r, n) in names.iter().enumerate() {
            t.insert(n.as_bytes(), r as u32);
        }
        assert_eq!(t.len(), names.len());
        for (r, n) in names.iter().enumerate() {
            assert_eq!(t.get(n.as_bytes()), Some(r as u32), "{n:?}");
        }
        for n in [
            "c",
            "ab",
            "xyx",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "xxxxxxxxyxxxxxxxx",
        ] {
            if !names.iter().any(|m| m == n) {
                assert_eq!(t.get(n.as_bytes()), None, "{n:?}");
            }
        }
    }
}
