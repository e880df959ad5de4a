//! Pieces shared by the strong DDM matchers ([`crate::sbm`], [`crate::itm`]): where the
//! matches go (a count or a list of pairs, chosen at compile time so that counting
//! costs one add per candidate), a parallel LSD radix sort of 64-bit keys on their high
//! bits, the check of the dimensions after the first, and the flattening of per-thread
//! outputs.

use ddm_region::model::{Kind, Pair, Range, RegionSet};
use rayon::prelude::*;

/// The regions, flat, as the matchers read them: region `g` is publication `g` for
/// `g < n_pub`, else subscription `g - n_pub` (one numbering for the sweep's end points).
pub(crate) struct Flat<'a> {
    pub dims: usize,
    pub n_pub: usize,
    pub n_sub: usize,
    pub pubs: &'a [Range],
    pub subs: &'a [Range],
}

impl<'a> Flat<'a> {
    pub fn new(set: &'a RegionSet) -> Flat<'a> {
        Flat {
            dims: set.dims(),
            n_pub: set.n_pub() as usize,
            n_sub: set.n_sub() as usize,
            pubs: set.ranges(Kind::Publication),
            subs: set.ranges(Kind::Subscription),
        }
    }
    /// The ranges of region `g` (one numbering, publications first).
    #[inline(always)]
    pub fn region(&self, g: usize) -> &'a [Range] {
        let d = self.dims;
        if g < self.n_pub {
            &self.pubs[g * d..(g + 1) * d]
        } else {
            let s = g - self.n_pub;
            &self.subs[s * d..(s + 1) * d]
        }
    }
    #[inline(always)]
    pub fn publication(&self, i: usize) -> &'a [Range] {
        &self.pubs[i * self.dims..(i + 1) * self.dims]
    }
}

/// Where a matcher's overlapping pairs go.
pub(crate) trait Sink: Send + Default {
    /// True for a count: the matcher may add a known number of hits at once.
    const COUNTING: bool;
    fn hit(&mut self, publication: u32, subscription: u32);
    /// Adds `n` hits without naming them (only called when [`Sink::COUNTING`]).
    fn add(&mut self, n: u64);
}

/// Counts the pairs.
#[derive(Default)]
pub(crate) struct Count(pub u64);

impl Sink for Count {
    const COUNTING: bool = true;
    #[inline(always)]
    fn hit(&mut self, _: u32, _: u32) {
        self.0 += 1;
    }
    #[inline(always)]
    fn add(&mut self, n: u64) {
        self.0 += n;
    }
}

/// Collects the pairs.
#[derive(Default)]
pub(crate) struct Collect(pub Vec<Pair>);

impl Sink for Collect {
    const COUNTING: bool = false;
    #[inline(always)]
    fn hit(&mut self, publication: u32, subscription: u32) {
        self.0.push(Pair {
            publication,
            subscription,
        });
    }
    fn add(&mut self, _: u64) {
        unreachable!("add is only called on counting sinks")
    }
}

/// Half-open overlap in every one of `a`'s and `b`'s dimensions (same length).
#[inline(always)]
pub(crate) fn overlap(a: &[Range], b: &[Range]) -> bool {
    a.iter().zip(b).all(|(x, y)| x.lo < y.hi && y.lo < x.hi)
}

/// Runs `f` on `pool` when there is one, else on the calling thread.
pub(crate) fn on<R: Send>(pool: Option<&rayon::ThreadPool>, f: impl FnOnce() -> R + Send) -> R {
    match pool {
        Some(p) => p.install(f),
        None => f(),
    }
}

/// The per-thread outputs, flattened (in parallel when `parallel`).
pub(crate) fn flatten(parts: Vec<Collect>, parallel: bool) -> Vec<Pair> {
    if parts.len() == 1 {
        return parts.into_iter().next().map(|c| c.0).unwrap_or_default();
    }
    let total: usize = parts.iter().map(|c| c.0.len()).sum();
    let mut out = vec![
        Pair {
            publication: 0,
            subscription: 0
        };
        total
    ];
    let mut slices = Vec::with_capacity(parts.len());
    let mut rest: &mut [Pair] = &mut out;
    for c in &parts {
        let (head, tail) = rest.split_at_mut(c.0.len());
        slices.push(head);
        rest = tail;
    }
    if parallel {
        slices
            .into_par_iter()
            .zip(parts.par_iter())
            .for_each(|(dst, src)| dst.copy_from_slice(&src.0));
    } else {
        for (dst, src) in slices.into_iter().zip(&parts) {
            dst.copy_from_slice(&src.0);
        }
    }
    out
}

/// Bits per radix digit: 2048 buckets, whose counters stay in L1.
const DIGIT: u32 = 11;
/// Below this many keys a comparison sort is as fast.
const SMALL: usize = 1 << 12;

/// A raw pointer that may cross threads; the radix scatter writes through it.
#[derive(Clone, Copy)]
struct Out(*mut u64);
// SAFETY: `Out` is only used by `radix_sort_high` to write disjoint positions of one
// buffer from several threads (each (chunk, digit) pair owns its own output range).
unsafe impl Send for Out {}
// SAFETY: as above: shared only to write disjoint positions.
unsafe impl Sync for Out {}

impl Out {
    /// Position `i` of the buffer (a method, so that closures capture the whole `Out`).
    #[inline(always)]
    fn at(self, i: usize) -> *mut u64 {
        self.0.wrapping_add(i)
    }
}

/// Sorts `keys` by their bits `low_bit..64` (the bits below are carried along, in no
/// particular order among equal high bits): a least-significant-digit radix sort over
/// only the digits in which the keys differ, each pass stable, with `chunks` chunks
/// histogrammed and scattered in parallel when `parallel` (the caller runs it in the
/// pool it wants).
pub(crate) fn radix_sort_high(keys: &mut Vec<u64>, low_bit: u32, parallel: bool, chunks: usize) {
    if keys.len() < SMALL {
        keys.sort_unstable_by_key(|k| k >> low_bit);
        return;
    }
    let (min, max) = if parallel {
        keys.par_iter()
            .fold(
                || (u64::MAX, 0),
                |(a, b), &k| (a.min(k >> low_bit), b.max(k >> low_bit)),
            )
            .reduce(|| (u64::MAX, 0), |x, y| (x.0.min(y.0), x.1.max(y.1)))
    } else {
        keys.iter().fold((u64::MAX, 0), |(a, b), &k| {
            (a.min(k >> low_bit), b.max(k >> low_bit))
        })
    };
    let bits = 64 - (min ^ max).leading_zeros();
    if bits == 0 {
        return;
    }
    let chunks = if parallel { chunks.max(1) } else { 1 };
    let buckets = 1usize << DIGIT;
    let mut src = std::mem::take(keys);
    let mut dst = vec![0u64; src.len()];
    let chunk_len = src.len().div_ceil(chunks);
    let mut shift = low_bit;
    while shift < low_bit + bits {
        let digit = move |k: u64| ((k >> shift) as usize) & (buckets - 1);
        let histo = |c: &[u64]| {
            let mut h = vec![0usize; buckets];
            for &k in c {
                h[digit(k)] += 1;
            }
            h
        };
        let hists: Vec<Vec<usize>> = if parallel {
            src.par_chunks(chunk_len).map(histo).collect()
        } else {
            src.chunks(chunk_len).map(histo).collect()
        };
        // Start of each (chunk, digit) range: digits in order, chunks in order within a
        // digit, so that each pass is stable.
        let mut starts = vec![vec![0usize; buckets]; hists.len()];
        let mut at = 0usize;
        for d in 0..buckets {
            for (c, h) in hists.iter().enumerate() {
                starts[c][d] = at;
                at += h[d];
            }
        }
        let out = Out(dst.as_mut_ptr());
        let scatter = |(c, mut pos): (&[u64], Vec<usize>)| {
            for &k in c {
                let d = digit(k);
                // SAFETY: `pos[d]` runs over this chunk's own range of digit `d`,
                // `starts[c][d] .. starts[c][d] + hists[c][d]`, which no other chunk
                // writes, and all ranges together tile `0..dst.len()`, so the write is in
                // bounds and unshared.
                unsafe { *out.at(pos[d]) = k };
                pos[d] += 1;
            }
        };
        if parallel {
            src.par_chunks(chunk_len).zip(starts).for_each(scatter);
        } else {
            src.chunks(chunk_len).zip(starts).for_each(scatter);
        }
        std::mem::swap(&mut src, &mut dst);
        shift += DIGIT;
    }
    *keys = src;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radix_sort_orders_by_high_bits_sequential_and_parallel() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let keys: Vec<u64> = (0..20_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            })
            .collect();
        for low_bit in [0, 30, 32, 50] {
            for parallel in [false, true] {
                let mut k = keys.clone();
                radix_sort_high(&mut k, low_bit, parallel, 5);
                assert!(k.windows(2).all(|w| w[0] >> low_bit <= w[1] >> low_bit));
                let (mut a, mut b) = (k.clone(), keys.clone());
                a.sort_unstable();
                b.sort_unstable();
                assert_eq!(a, b, "a permutation");
            }
        }
    }
}
