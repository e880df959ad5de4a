//! Model -> flat device tables (§III.A, Fig. 1: the region information and the overlap
//! information live in device memory), and back.
//!
//! - Region table: publications and subscriptions share one index space (publication
//!   `p` is region `p`, subscription `s` is region `n_pub + s`, with `n_pub` the
//!   engine's publication capacity); region `r`'s ranges are `bounds[r * dims ..][..dims]`.
//! - Overlap information: two bit matrices ([`DdmTables`](ddm_region_kernels::DdmTables)),
//!   row `p` of `pub_rows` for publication `p`, row `s` of `sub_rows` for subscription
//!   `s`.
//! - Updated regions: [`UpdatedRegion`] records, publications first, then their ranges.
//! - Grid (§III.C, Fig. 3): [`GridSpec`] -> [`GridTables`](ddm_region_kernels::grid::GridTables).

use crate::engine::DdmError;
use crate::model::{Change, Kind, Pair, Range, RegionSet, UpdateBatch};
use ddm_region_kernels::grid::GRID_MAX_DIMS;
use ddm_region_kernels::UpdatedRegion;
use gpu_kernels::crew::{claim_map, Crew};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// Most cells a grid may have.
pub const MAX_CELLS: u64 = 1 << 24;

/// Phase 1's payload: the updated regions of a batch in device form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StagedUpdates {
    /// Publications first, then subscriptions; one record per region (the last change wins).
    pub records: Vec<UpdatedRegion>,
    /// `dims` ranges per record (zeros for a removed region).
    pub ranges: Vec<Range>,
    /// How many records are publications.
    pub n_pub_updates: u32,
}

/// What [`stage_into`] wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StageCounts {
    /// Records written (one per distinct updated region).
    pub records: u32,
    /// How many of them (the first ones) are publications.
    pub n_pub_updates: u32,
    /// The largest lower bound in dimension 0 of any `Set` entry (0 when none).
    pub max_lo0: u32,
    /// The largest upper bound in any dimension of any `Set` entry (0 when none).
    pub max_hi: u32,
    /// The batch set every region once, in index order: record `i` is region `i`, alive,
    /// and the records were not written (only the ranges); the device makes them
    /// (`ddm_region_kernels::staged_update`).
    pub dense: bool,
}

/// The host threads a staging ([`stage_into`]) may use.
pub struct Hands {
    /// At most this many threads, the caller's included, on a batch of at least
    /// [`STAGE_PAR_MIN`] entries.
    pub threads: usize,
    /// Pool threads gathered before ([`Crew::gather`]), awake: an ordered batch's parts
    /// go to them and the caller.
    pub crew: Option<Crew>,
}

impl Hands {
    /// Up to `threads` threads, the pool's woken as the staging starts.
    pub fn threads(threads: usize) -> Hands {
        Hands {
            threads,
            crew: None,
        }
    }
}

/// Batches with fewer entries are staged by one thread (a thread costs more than it saves).
pub const STAGE_PAR_MIN: usize = 1 << 13;

/// The fewest entries a thread of a parallel staging takes.
pub const STAGE_CHUNK_MIN: usize = 1 << 11;

/// The key [`stage_into`] keeps per region: the batch that last saw it (high half) and
/// its last entry there (low half). Keys only grow within a batch and from batch to
/// batch, so a parallel pass finds each region's last entry with `fetch_max`.
#[inline(always)]
fn stage_key(batch_no: u32, entry: usize) -> u64 {
    (batch_no as u64) << 32 | entry as u64
}

/// Orders and de-duplicates a batch for the device (allocating form of [`stage_into`],
/// for tests and one-off use). `last` has one slot per region of the unified space, all
/// below `batch_no << 32` (zeros, or those of earlier batches).
pub fn stage_updates(
    batch: &UpdateBatch,
    dims: usize,
    n_pub: u32,
    n_sub: u32,
    last: &mut [AtomicU64],
    batch_no: u32,
) -> Result<StagedUpdates, DdmError> {
    let n = batch.entries().len().min(last.len());
    let mut records = vec![UpdatedRegion::default(); n];
    let mut ranges = vec![Range::default(); n * dims];
    let c = stage_into(
        batch,
        dims,
        (n_pub, n_sub),
        last,
        batch_no,
        (&mut records, &mut ranges),
        Hands::threads(1),
    )?;
    records.truncate(c.records as usize);
    ranges.truncate(c.records as usize * dims);
    if c.dense {
        for (i, r) in records.iter_mut().enumerate() {
            *r = UpdatedRegion {
                region: i as u32,
                alive: 1,
            };
        }
    }
    Ok(StagedUpdates {
        records,
        ranges,
        n_pub_updates: c.n_pub_updates,
    })
}

/// Phase 1 on the host: orders and de-duplicates `batch` straight into the engine's
/// staging memory (mapped page-locked host memory): `out.0` gets one [`UpdatedRegion`]
/// per distinct updated region, publications first, each kind in batch order, the last
/// change of a region winning; `out.1` gets `dims` ranges per record (zeros for a
/// removed region). Both must have room for every distinct region of the batch.
///
/// `last` (one slot per region of the unified space, owned by the engine) must hold
/// keys of earlier batches only (`< batch_no << 32`). No allocation: the first pass
/// checks the entries and stores each region's last entry in `last`; the last pass
/// writes the entries that are their region's last. A batch of at least
/// [`STAGE_PAR_MIN`] entries is cut into up to `threads` chunks, run on rayon's pool
/// (then a middle pass counts what each chunk writes, so that each writes its own slots).
/// An ordered batch's chunks go to `hands.crew` when one is given (helpers gathered
/// before, already awake), else to up to `hands.threads - 1` pool threads woken now.
pub fn stage_into(
    batch: &UpdateBatch,
    dims: usize,
    caps: (u32, u32),
    last: &mut [AtomicU64],
    batch_no: u32,
    out: (&mut [UpdatedRegion], &mut [Range]),
    hands: Hands,
) -> Result<StageCounts, DdmError> {
    let Hands { threads, crew } = hands;
    // One copy of the passes per small dimensionality, so that a region's ranges are
    // copied with a few moves instead of a `memcpy` call.
    let s = Stage {
        batch,
        dims,
        n_pub: caps.0,
        n_sub: caps.1,
        batch_no,
    };
    match dims {
        1 => s.run::<1>(last, out, threads, crew),
        2 => s.run::<2>(last, out, threads, crew),
        3 => s.run::<3>(last, out, threads, crew),
        4 => s.run::<4>(last, out, threads, crew),
        _ => s.run::<0>(last, out, threads, crew),
    }
}

struct Stage<'a> {
    batch: &'a UpdateBatch,
    dims: usize,
    n_pub: u32,
    n_sub: u32,
    batch_no: u32,
}

/// What one chunk of a parallel staging found in its first two passes.
#[derive(Clone, Copy, Default)]
struct ChunkCounts {
    /// `Set` entries (ranges used).
    sets: usize,
    /// Entries that are their region's last, by kind (what the chunk writes); after
    /// pass 1, entries by kind (the same when no region is updated twice).
    kept: [u32; 2],
    /// Pass 1 saw a region updated twice in this batch.
    duplicates: bool,
}

/// What one part of [`Stage::ordered`] wrote.
#[derive(Clone, Copy, Default)]
struct OrderedPart {
    max_lo0: u32,
    max_hi: u32,
    inverted: bool,
}

impl Stage<'_> {
    #[inline(always)]
    fn dims<const D: usize>(&self) -> usize {
        if D == 0 {
            self.dims
        } else {
            D
        }
    }

    fn check_total(&self, sets: usize) -> Result<(), DdmError> {
        let used = sets * self.dims;
        if used != self.batch.ranges().len() {
            return Err(DdmError::BadBatch(format!(
                "{} ranges given, the Set entries use {used}",
                self.batch.ranges().len()
            )));
        }
        Ok(())
    }

    fn run<const D: usize>(
        &self,
        last: &mut [AtomicU64],
        out: (&mut [UpdatedRegion], &mut [Range]),
        threads: usize,
        crew: Option<Crew>,
    ) -> Result<StageCounts, DdmError> {
        let n = self.batch.entries().len();
        let chunks = if n >= STAGE_PAR_MIN {
            threads.clamp(1, n / STAGE_CHUNK_MIN)
        } else {
            1
        };
        if let Some(counts) = self.ordered::<D>((&mut *out.0, &mut *out.1), chunks, crew)? {
            return Ok(counts);
        }
        if chunks == 1 {
            self.sequential::<D>(last, out)
        } else {
            self.parallel::<D>(last, out, chunks)
        }
    }

    /// The fast path of an ordered batch ([`UpdateBatch::is_ordered`], recorded by the
    /// batch as it was built: only `Set` entries, (kind, index) strictly increasing,
    /// publications first, as [`UpdateBatch::everything`] and the paper's scenarios,
    /// where every region moves, make them): it names no region twice and is already in
    /// the device's order, so record `i` is entry `i`'s region and the ranges are the
    /// batch's, copied as they are, their bounds found on the way. Its entries need no
    /// check but each kind's last index against its capacity. `chunks` parts, claimed by
    /// the calling thread from the start and by pool threads as they wake
    /// ([`gpu_kernels::crew`]). `None` for any other batch (the general passes run,
    /// and report a capacity error). `last` is not read or written: only keys of the
    /// batch being staged are ever compared, and the ones it holds stay older.
    /// With `crew` (helpers gathered before), the parts go to it instead.
    fn ordered<const D: usize>(
        &self,
        out: (&mut [UpdatedRegion], &mut [Range]),
        chunks: usize,
        crew: Option<Crew>,
    ) -> Result<Option<StageCounts>, DdmError> {
        let dims = self.dims::<D>();
        let entries = self.batch.entries();
        let n = entries.len();
        let pubs = self.batch.publications() as usize;
        let (records, ranges) = out;
        if n == 0
            || !self.batch.is_ordered()
            || self.batch.ranges().len() != n * dims
            || records.len() < n
            || ranges.len() < n * dims
            || (pubs > 0 && entries[pubs - 1].1 >= self.n_pub)
            || (pubs < n && entries[n - 1].1 >= self.n_sub)
        {
            return Ok(None);
        }
        // Every region: no record need be written (the device makes them).
        let dense = n == (self.n_pub + self.n_sub) as usize;
        let per = n.div_ceil(chunks);
        let (records, ranges) = (&mut records[..n], &mut ranges[..n * dims]);
        let found: Vec<OrderedPart> = if chunks == 1 {
            vec![self.ordered_part_fast::<D>(0, records, ranges, dense)]
        } else {
            // The calling thread stages parts from the start; pool threads join as they
            // wake (after a device wait they sleep).
            let parts: Vec<_> = records
                .chunks_mut(per)
                .zip(ranges.chunks_mut(per * dims))
                .collect();
            let part = |c: usize, (rec, rng): (&mut [UpdatedRegion], &mut [Range])| {
                self.ordered_part_fast::<D>(c * per, rec, rng, dense)
            };
            match crew {
                Some(crew) => crew.map(parts, part),
                None => claim_map(parts, chunks - 1, part),
            }
        };
        if found.iter().any(|p| p.inverted) {
            return Err(self.inverted_error());
        }
        Ok(Some(StageCounts {
            records: n as u32,
            n_pub_updates: pubs as u32,
            max_lo0: found.iter().map(|p| p.max_lo0).max().unwrap_or(0),
            max_hi: found.iter().map(|p| p.max_hi).max().unwrap_or(0),
            dense,
        }))
    }

    /// [`Stage::ordered_part`] compiled for AVX2 where the CPU has it (detected once by
    /// std): the ranges' bounds are unsigned 32-bit compares and maxima, which x86-64's
    /// baseline SSE2 lacks, so the baseline build finds them a range at a time
    /// (measured on an AMD EPYC: 48-55 µs for the copy and bounds of 32768 moved
    /// regions' ranges, against 20 µs in AVX2).
    #[inline(always)]
    fn ordered_part_fast<const D: usize>(
        &self,
        start: usize,
        rec: &mut [UpdatedRegion],
        rng: &mut [Range],
        dense: bool,
    ) -> OrderedPart {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (detected just above), the only precondition of
            // calling a function compiled with it enabled.
            return unsafe { self.ordered_part_avx2::<D>(start, rec, rng, dense) };
        }
        self.ordered_part::<D>(start, rec, rng, dense)
    }

    /// [`Stage::ordered_part`] with AVX2 enabled.
    ///
    /// # Safety
    /// The CPU supports AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn ordered_part_avx2<const D: usize>(
        &self,
        start: usize,
        rec: &mut [UpdatedRegion],
        rng: &mut [Range],
        dense: bool,
    ) -> OrderedPart {
        self.ordered_part::<D>(start, rec, rng, dense)
    }

    /// One part of [`Stage::ordered`]: entries `start..start + rec.len()` written to
    /// `rec` (unless `dense`) and their ranges to `rng` (plain stores: the staging is
    /// rewritten every step and stays in the cache, where non-temporal stores would
    /// send every line to memory first), with their bounds.
    #[inline(always)]
    fn ordered_part<const D: usize>(
        &self,
        start: usize,
        rec: &mut [UpdatedRegion],
        rng: &mut [Range],
        dense: bool,
    ) -> OrderedPart {
        let dims = self.dims::<D>();
        if !dense {
            let entries = &self.batch.entries()[start..start + rec.len()];
            for (&(kind, index, _), out) in entries.iter().zip(rec.iter_mut()) {
                *out = UpdatedRegion {
                    region: unified(kind, index, self.n_pub),
                    alive: 1,
                };
            }
        }
        let src = &self.batch.ranges()[start * dims..][..rng.len()];
        let (mut inverted, mut max_hi, mut max_lo0) = (false, 0u32, 0u32);
        for (to, from) in rng.chunks_exact_mut(dims).zip(src.chunks_exact(dims)) {
            for (t, f) in to.iter_mut().zip(from) {
                *t = *f;
                inverted |= f.lo > f.hi;
                max_hi = max_hi.max(f.hi);
            }
            max_lo0 = max_lo0.max(from[0].lo);
        }
        OrderedPart {
            max_lo0,
            max_hi,
            inverted,
        }
    }

    /// The region's slot in `last` and its kind's index (0 publications, 1 subscriptions),
    /// or the capacity error.
    #[inline(always)]
    fn slot(&self, kind: Kind, index: u32) -> Result<(usize, usize), DdmError> {
        let (cap, base, k) = match kind {
            Kind::Publication => (self.n_pub, 0, 0),
            Kind::Subscription => (self.n_sub, self.n_pub, 1),
        };
        if index >= cap {
            return Err(DdmError::Capacity {
                kind: kind.word(),
                index,
                capacity: cap,
            });
        }
        Ok(((base + index) as usize, k))
    }

    /// The error for a batch whose ranges [`Stage::write`] found inverted.
    fn inverted_error(&self) -> DdmError {
        let dims = self.dims;
        self.batch
            .ranges()
            .chunks_exact(dims)
            .find_map(|r| crate::model::check_ranges(dims, r).err())
            .map_or_else(
                || DdmError::BadBatch("inverted range".into()),
                DdmError::from,
            )
    }

    /// One thread, two passes: (1) check indices, count `Set` entries, store each
    /// region's last entry in `last` and count the regions first seen; (2) write.
    fn sequential<const D: usize>(
        &self,
        last: &mut [AtomicU64],
        out: (&mut [UpdatedRegion], &mut [Range]),
    ) -> Result<StageCounts, DdmError> {
        let dims = self.dims::<D>();
        let mut distinct = [0u32; 2];
        let mut sets = 0usize;
        for (i, &(kind, index, change)) in self.batch.entries().iter().enumerate() {
            let (r, k) = self.slot(kind, index)?;
            sets += (change == Change::Set) as usize;
            let slot = last[r].get_mut();
            distinct[k] += (*slot >> 32 != self.batch_no as u64) as u32;
            *slot = stage_key(self.batch_no, i);
        }
        self.check_total(sets)?;
        let total = (distinct[0] + distinct[1]) as usize;
        let (records, ranges) = out;
        assert!(
            records.len() >= total && ranges.len() >= total * dims,
            "staging holds fewer records than the batch's regions"
        );
        let (pub_rec, sub_rec) = records[..total].split_at_mut(distinct[0] as usize);
        let (pub_rng, sub_rng) = ranges[..total * dims].split_at_mut(distinct[0] as usize * dims);
        let (max_lo0, max_hi, inverted) = self.write::<D>(
            0..self.batch.entries().len(),
            0,
            last,
            [pub_rec, sub_rec],
            [pub_rng, sub_rng],
        );
        if inverted {
            return Err(self.inverted_error());
        }
        Ok(StageCounts {
            records: total as u32,
            n_pub_updates: distinct[0],
            max_lo0,
            max_hi,
            dense: false,
        })
    }

    /// Writes the entries of `range` that are their region's last (`at`: where their
    /// ranges start in the batch) into the slots given, per kind, in order. Returns the
    /// largest lower bound in dimension 0 and the largest upper bound in any dimension
    /// of the `Set` entries read, and whether any of their ranges is inverted (`lo > hi`).
    #[inline(always)]
    fn write<const D: usize>(
        &self,
        range: std::ops::Range<usize>,
        at: usize,
        last: &[AtomicU64],
        rec: [&mut [UpdatedRegion]; 2],
        rng: [&mut [Range]; 2],
    ) -> (u32, u32, bool) {
        let dims = self.dims::<D>();
        let mut src = self.batch.ranges()[at..].chunks_exact(dims);
        let [pub_rec, sub_rec] = rec;
        let [pub_rng, sub_rng] = rng;
        let mut outs = [
            pub_rec.iter_mut().zip(pub_rng.chunks_exact_mut(dims)),
            sub_rec.iter_mut().zip(sub_rng.chunks_exact_mut(dims)),
        ];
        let (mut max_lo0, mut max_hi, mut inverted) = (0u32, 0u32, false);
        let lo = range.start;
        for (i, &(kind, index, change)) in self.batch.entries()[range].iter().enumerate() {
            let alive = change == Change::Set;
            // The counting pass checked that there is one chunk per `Set` entry.
            let from = if alive { src.next() } else { None };
            if let Some(from) = from {
                inverted |= from.iter().fold(false, |bad, x| bad | (x.lo > x.hi));
                max_hi = from.iter().fold(max_hi, |m, x| m.max(x.hi));
                max_lo0 = max_lo0.max(from.first().map_or(0, |x| x.lo));
            }
            let r = unified(kind, index, self.n_pub);
            if last[r as usize].load(Ordering::Relaxed) == stage_key(self.batch_no, lo + i) {
                let k = (kind == Kind::Subscription) as usize;
                let (rec, dst) = outs[k]
                    .next()
                    .expect("the counting pass sized each kind's slots");
                *rec = UpdatedRegion {
                    region: r,
                    alive: alive as u32,
                };
                match from {
                    Some(from) => dst.copy_from_slice(from),
                    None => dst.fill(Range::default()),
                }
            }
        }
        (max_lo0, max_hi, inverted)
    }

    /// `chunks` threads, two passes, three when the batch updates a region twice: (1)
    /// check indices, count `Set` entries and entries per kind, store each region's key
    /// in `last` (a swap; a swap that finds a key of this batch marks a duplicate and
    /// restores the larger key with `fetch_max`, so the last entry wins whatever the
    /// interleaving); (2, duplicates only) count the entries each chunk will write; (3)
    /// write, each chunk into its own slots.
    fn parallel<const D: usize>(
        &self,
        last: &mut [AtomicU64],
        out: (&mut [UpdatedRegion], &mut [Range]),
        chunks: usize,
    ) -> Result<StageCounts, DdmError> {
        let dims = self.dims::<D>();
        let entries = &self.batch.entries();
        let n = entries.len();
        let per = n.div_ceil(chunks);
        let bounds: Vec<std::ops::Range<usize>> = (0..chunks)
            .map(|c| c * per..((c + 1) * per).min(n))
            .collect();
        let last: &[AtomicU64] = last;
        // rayon's pool: its threads stay up between steps (no spawn per pass).
        let each = |f: &(dyn Fn(usize) -> Result<ChunkCounts, DdmError> + Sync)| {
            (0..chunks)
                .into_par_iter()
                .map(f)
                .collect::<Result<Vec<ChunkCounts>, DdmError>>()
        };
        // Pass 1.
        let mut counts = each(&|c| {
            let mut k = ChunkCounts::default();
            for i in bounds[c].clone() {
                let (kind, index, change) = entries[i];
                let (r, kk) = self.slot(kind, index)?;
                k.sets += (change == Change::Set) as usize;
                k.kept[kk] += 1;
                let key = stage_key(self.batch_no, i);
                let prev = last[r].swap(key, Ordering::Relaxed);
                if prev >> 32 == self.batch_no as u64 {
                    k.duplicates = true;
                    last[r].fetch_max(prev.max(key), Ordering::Relaxed);
                }
            }
            Ok(k)
        })?;
        let sets: usize = counts.iter().map(|k| k.sets).sum();
        self.check_total(sets)?;
        let mut range_at = Vec::with_capacity(chunks);
        let mut at = 0;
        for k in &counts {
            range_at.push(at);
            at += k.sets * dims;
        }
        // Pass 2, when a region is updated twice: what each chunk keeps.
        if counts.iter().any(|k| k.duplicates) {
            counts = each(&|c| {
                let mut k = ChunkCounts::default();
                for i in bounds[c].clone() {
                    let (kind, index, _) = entries[i];
                    let r = unified(kind, index, self.n_pub) as usize;
                    if last[r].load(Ordering::Relaxed) == stage_key(self.batch_no, i) {
                        k.kept[(kind == Kind::Subscription) as usize] += 1;
                    }
                }
                Ok(k)
            })?;
        }
        let distinct = counts
            .iter()
            .fold([0u32; 2], |a, k| [a[0] + k.kept[0], a[1] + k.kept[1]]);
        let total = (distinct[0] + distinct[1]) as usize;
        let (records, ranges) = out;
        assert!(
            records.len() >= total && ranges.len() >= total * dims,
            "staging holds fewer records than the batch's regions"
        );
        // Pass 3: cut the output into each chunk's slots, then write.
        let (mut pub_rec, mut sub_rec) = records[..total].split_at_mut(distinct[0] as usize);
        let (mut pub_rng, mut sub_rng) =
            ranges[..total * dims].split_at_mut(distinct[0] as usize * dims);
        let mut parts = Vec::with_capacity(chunks);
        for k in &counts {
            let (p, rest) = std::mem::take(&mut pub_rec).split_at_mut(k.kept[0] as usize);
            pub_rec = rest;
            let (s, rest) = std::mem::take(&mut sub_rec).split_at_mut(k.kept[1] as usize);
            sub_rec = rest;
            let (pr, rest) = std::mem::take(&mut pub_rng).split_at_mut(k.kept[0] as usize * dims);
            pub_rng = rest;
            let (sr, rest) = std::mem::take(&mut sub_rng).split_at_mut(k.kept[1] as usize * dims);
            sub_rng = rest;
            parts.push(([p, s], [pr, sr]));
        }
        let written: Vec<(u32, u32, bool)> = parts
            .into_par_iter()
            .enumerate()
            .map(|(c, (rec, rng))| self.write::<D>(bounds[c].clone(), range_at[c], last, rec, rng))
            .collect();
        if written.iter().any(|w| w.2) {
            return Err(self.inverted_error());
        }
        Ok(StageCounts {
            records: total as u32,
            n_pub_updates: distinct[0],
            max_lo0: written.iter().map(|w| w.0).max().unwrap_or(0),
            max_hi: written.iter().map(|w| w.1).max().unwrap_or(0),
            dense: false,
        })
    }
}

/// Copies `src` into `dst` (the same length), with non-temporal stores where the CPU
/// has them (x86-64): the page-locked staging is read by the GPU's copy engine, never
/// again by this CPU, so its cache lines need not be fetched for ownership first (a
/// third of the memory traffic of a plain copy) nor evict what the host works on.
/// Ends with a store fence, so the data is in memory before the caller hands the
/// buffer to a copy.
pub fn stream_copy(dst: &mut [Range], src: &[Range]) {
    assert_eq!(dst.len(), src.len(), "stream_copy: lengths differ");
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
        let n = dst.len();
        let addr = dst.as_ptr() as usize;
        if n < 4 || !addr.is_multiple_of(8) {
            dst.copy_from_slice(src);
            return;
        }
        // One plain range first when `dst` is 8 but not 16-byte aligned, then pairs of
        // ranges (16 bytes) streamed, then the odd last range, if any.
        let head = (addr % 16 / 8).min(n);
        dst[..head].copy_from_slice(&src[..head]);
        let pairs = (n - head) / 2;
        let d = dst[head..].as_mut_ptr() as *mut __m128i;
        let s = src[head..].as_ptr() as *const __m128i;
        for i in 0..pairs {
            // SAFETY: `d` is 16-byte aligned (`addr + 8 * head` is a multiple of 16) and
            // pair `i < pairs` lies inside `dst[head..]`; the load is unaligned and
            // inside `src[head..]`, of the same length. SSE2 is part of x86-64.
            unsafe { _mm_stream_si128(d.add(i), _mm_loadu_si128(s.add(i))) };
        }
        let done = head + 2 * pairs;
        dst[done..].copy_from_slice(&src[done..]);
        // SAFETY: a store fence has no precondition; it orders the streaming stores
        // above before any later store (the caller's signal that the part is filled).
        unsafe { _mm_sfence() };
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

/// Region `index` of `kind` in the unified index space.
pub fn unified(kind: Kind, index: u32, n_pub: u32) -> u32 {
    match kind {
        Kind::Publication => index,
        Kind::Subscription => n_pub + index,
    }
}

/// The pairs of a `pub_rows` bit matrix (`rows` rows of `words` words), in order.
pub fn decode_pub_rows(bits: &[u32], rows: u32, words: u32) -> Vec<Pair> {
    let mut out = Vec::new();
    for p in 0..rows {
        for (w, &word) in bits[(p * words) as usize..][..words as usize]
            .iter()
            .enumerate()
        {
            let mut m = word;
            while m != 0 {
                let b = m.trailing_zeros();
                m &= m - 1;
                out.push(Pair {
                    publication: p,
                    subscription: w as u32 * 32 + b,
                });
            }
        }
    }
    out
}

/// The number of cells of a grid of `cells[d]` cells along dimension `d`; `None` past
/// `u64::MAX` (8 dimensions of up to 2^32 cells: a plain product overflows).
fn total_cells(cells: &[u32]) -> Option<u64> {
    cells.iter().try_fold(1u64, |t, &c| t.checked_mul(c as u64))
}

/// The grid of §III.C: equal cells, `cells[d]` of side `cell[d]` from `origin[d]` in each
/// dimension. Coordinates outside the grid belong to its border cells, so any grid gives
/// exact answers; a good one has cells about as large as the regions (§II.B, §IV: 100 x 100).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GridSpec {
    pub origin: Vec<u32>,
    pub cell: Vec<u32>,
    pub cells: Vec<u32>,
}

impl GridSpec {
    /// A grid from its parts, checked: 1 to 8 dimensions, sizes >= 1, at most [`MAX_CELLS`] cells.
    pub fn new(origin: Vec<u32>, cell: Vec<u32>, cells: Vec<u32>) -> Result<GridSpec, DdmError> {
        let dims = origin.len();
        if dims == 0 || dims > GRID_MAX_DIMS || cell.len() != dims || cells.len() != dims {
            return Err(DdmError::Grid(format!(
                "a grid has 1 to {GRID_MAX_DIMS} dimensions, one origin, cell and count each"
            )));
        }
        if cell.contains(&0) || cells.contains(&0) {
            return Err(DdmError::Grid(
                "cell sizes and counts must be at least 1".into(),
            ));
        }
        match total_cells(&cells) {
            Some(total) if total <= MAX_CELLS => {}
            total => {
                let total =
                    total.map_or_else(|| format!("more than {}", u64::MAX), |t| t.to_string());
                return Err(DdmError::Grid(format!(
                    "{total} cells, at most {MAX_CELLS}: use larger cells"
                )));
            }
        }
        Ok(GridSpec {
            origin,
            cell,
            cells,
        })
    }

    /// The paper's grid: the space `[0, space)` in each of `dims` dimensions cut into
    /// cells of side `cell` (§IV: 10000 / 100).
    pub fn covering(dims: usize, space: u32, cell: u32) -> Result<GridSpec, DdmError> {
        let cell = cell.max(1);
        let n = space.div_ceil(cell).max(1);
        GridSpec::new(vec![0; dims], vec![cell; dims], vec![n; dims])
    }

    /// A grid over the bounding box of `set`, with cells of side `cell` (per dimension)
    /// or, by default, the regions' mean side; cells grow (doubling) until there are at
    /// most [`MAX_CELLS`] / 16 of them and, by default, at most 4 per region (more cells
    /// than regions only cost empty lists).
    pub fn fit(set: &RegionSet, cell: Option<&[u32]>) -> Result<GridSpec, DdmError> {
        let dims = set.dims();
        if dims > GRID_MAX_DIMS {
            return Err(DdmError::Grid(format!(
                "{dims} dimensions; the grid engine supports at most {GRID_MAX_DIMS}"
            )));
        }
        let mut lo = vec![u32::MAX; dims];
        let mut hi = vec![0u32; dims];
        let mut sum = vec![0u64; dims];
        let mut n = 0u64;
        for kind in [Kind::Publication, Kind::Subscription] {
            for r in set.ranges(kind).chunks(dims) {
                for d in 0..dims {
                    lo[d] = lo[d].min(r[d].lo);
                    hi[d] = hi[d].max(r[d].hi);
                    sum[d] += (r[d].hi - r[d].lo) as u64;
                }
                n += 1;
            }
        }
        if n == 0 {
            return GridSpec::new(vec![0; dims], vec![1; dims], vec![1; dims]);
        }
        let limit = match cell {
            Some(_) => MAX_CELLS / 16,
            None => (MAX_CELLS / 16).min(4 * n.max(16)),
        };
        let mut size: Vec<u32> = match cell {
            Some(c) if c.len() == dims => c.iter().map(|&c| c.max(1)).collect(),
            Some(c) => {
                return Err(DdmError::Grid(format!(
                    "{} cell sizes for {dims} dimensions",
                    c.len()
                )))
            }
            None => sum
                .iter()
                .map(|&s| (s / n).clamp(1, u32::MAX as u64) as u32)
                .collect(),
        };
        loop {
            let cells: Vec<u32> = (0..dims)
                .map(|d| {
                    ((hi[d].saturating_sub(lo[d]) as u64)
                        .div_ceil(size[d] as u64)
                        .max(1)) as u32
                })
                .collect();
            if total_cells(&cells).is_some_and(|t| t <= limit) {
                return GridSpec::new(lo, size, cells);
            }
            for s in size.iter_mut() {
                *s = s.saturating_mul(2);
            }
        }
    }

    pub fn dims(&self) -> usize {
        self.origin.len()
    }
    pub fn n_cells(&self) -> u32 {
        self.cells.iter().product()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_puts_publications_first_and_keeps_the_last_change() {
        let mut b = UpdateBatch::default();
        let r = |x| [Range { lo: x, hi: x + 1 }];
        b.set(Kind::Subscription, 0, &r(1));
        b.set(Kind::Publication, 2, &r(2));
        b.set(Kind::Subscription, 0, &r(3));
        b.remove(Kind::Publication, 1);
        let mut last: Vec<AtomicU64> = (0..8).map(|_| AtomicU64::new(0)).collect();
        let s = stage_updates(&b, 1, 4, 4, &mut last, 1).unwrap();
        assert_eq!(s.n_pub_updates, 2);
        let regions: Vec<u32> = s.records.iter().map(|u| u.region).collect();
        assert_eq!(regions, [2, 1, 4]);
        assert_eq!(s.records[1].alive, 0);
        assert_eq!(s.ranges, [r(2)[0], Range::default(), r(3)[0]]);
    }

    #[test]
    fn parallel_staging_equals_sequential_staging() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (n_pub, n_sub, dims) = (40_000u32, 30_000u32, 3usize);
        let mut b = UpdateBatch::default();
        // Duplicates (in and across chunks), removals, both kinds interleaved.
        for _ in 0..3 * STAGE_PAR_MIN / 2 {
            let kind = if rng.gen_bool(0.5) {
                Kind::Publication
            } else {
                Kind::Subscription
            };
            let cap = if kind == Kind::Publication {
                n_pub
            } else {
                n_sub
            };
            let index = rng.gen_range(0..cap);
            if rng.gen_bool(0.1) {
                b.remove(kind, index);
            } else {
                let r: Vec<Range> = (0..dims)
                    .map(|_| {
                        let lo = rng.gen_range(0..1000);
                        Range {
                            lo,
                            hi: lo + rng.gen_range(0..10),
                        }
                    })
                    .collect();
                b.set(kind, index, &r);
            }
        }
        let total = (n_pub + n_sub) as usize;
        let fresh = || -> Vec<AtomicU64> { (0..total).map(|_| AtomicU64::new(1)).collect() };
        let (mut l1, mut l4) = (fresh(), fresh());
        for batch_no in [1, 2] {
            let mut out1 = (
                vec![UpdatedRegion::default(); total],
                vec![Range::default(); total * dims],
            );
            let mut out4 = out1.clone();
            let c1 = stage_into(
                &b,
                dims,
                (n_pub, n_sub),
                &mut l1,
                batch_no,
                (&mut out1.0, &mut out1.1),
                Hands::threads(1),
            )
            .unwrap();
            let c4 = stage_into(
                &b,
                dims,
                (n_pub, n_sub),
                &mut l4,
                batch_no,
                (&mut out4.0, &mut out4.1),
                Hands::threads(4),
            )
            .unwrap();
            assert_eq!(c1, c4);
            assert!(c1.records < b.len() as u32 && c1.n_pub_updates > 0);
            assert_eq!(out1, out4);
        }
        // The parallel path reports bad input too.
        let short = b.ranges()[..b.ranges().len() - 1].to_vec();
        let bad = UpdateBatch::from_parts(b.entries().to_vec(), short);
        let mut out = (
            vec![UpdatedRegion::default(); total],
            vec![Range::default(); total * dims],
        );
        assert!(matches!(
            stage_into(
                &bad,
                dims,
                (n_pub, n_sub),
                &mut l4,
                3,
                (&mut out.0, &mut out.1),
                Hands::threads(4)
            ),
            Err(DdmError::BadBatch(_))
        ));
    }

    #[test]
    fn parallel_staging_of_distinct_regions_equals_sequential_and_checks_ranges() {
        // Every region once (no duplicate: the two-pass parallel path), kinds
        // interleaved, one removal in the middle.
        let (n_pub, n_sub) = (STAGE_PAR_MIN as u32, STAGE_PAR_MIN as u32 / 2);
        let mut b = UpdateBatch::default();
        for i in 0..n_pub {
            b.set(
                Kind::Publication,
                n_pub - 1 - i,
                &[Range { lo: i, hi: i + 3 }],
            );
            if i < n_sub {
                if i == n_sub / 2 {
                    b.remove(Kind::Subscription, i);
                } else {
                    b.set(
                        Kind::Subscription,
                        i,
                        &[Range {
                            lo: 2 * i,
                            hi: 2 * i,
                        }],
                    );
                }
            }
        }
        let total = (n_pub + n_sub) as usize;
        let stage = |b: &UpdateBatch, threads| {
            let mut last: Vec<AtomicU64> = (0..total).map(|_| AtomicU64::new(0)).collect();
            let mut out = (
                vec![UpdatedRegion::default(); total],
                vec![Range::default(); total],
            );
            stage_into(
                b,
                1,
                (n_pub, n_sub),
                &mut last,
                1,
                (&mut out.0, &mut out.1),
                Hands::threads(threads),
            )
            .map(|c| (c, out))
        };
        let (c1, out1) = stage(&b, 1).unwrap();
        let (c4, out4) = stage(&b, 4).unwrap();
        assert_eq!((c1, &out1), (c4, &out4));
        assert_eq!(
            (c1.records, c1.n_pub_updates, c1.max_lo0),
            (total as u32, n_pub, n_pub - 1)
        );
        assert_eq!(out1.0[0].region, n_pub - 1);
        assert_eq!(out1.0[n_pub as usize + n_sub as usize / 2].alive, 0);
        // An inverted range is reported by both paths.
        let mut ranges = b.ranges().to_vec();
        ranges[1000] = Range { lo: 9, hi: 8 };
        let b = UpdateBatch::from_parts(b.entries().to_vec(), ranges);
        for threads in [1, 4] {
            assert!(matches!(stage(&b, threads), Err(DdmError::Model(_))));
        }
    }

    /// The general passes alone (one thread), bypassing the ordered fast path.
    fn stage_general(
        b: &UpdateBatch,
        dims: usize,
        caps: (u32, u32),
        last: &mut [AtomicU64],
        batch_no: u32,
    ) -> Result<(StageCounts, Vec<UpdatedRegion>, Vec<Range>), DdmError> {
        let total = (caps.0 + caps.1) as usize;
        let mut out = (
            vec![UpdatedRegion::default(); total],
            vec![Range::default(); total * dims],
        );
        let s = Stage {
            batch: b,
            dims,
            n_pub: caps.0,
            n_sub: caps.1,
            batch_no,
        };
        let c = s.sequential::<0>(last, (&mut out.0, &mut out.1))?;
        Ok((c, out.0, out.1))
    }

    #[test]
    fn ordered_batches_take_one_pass_that_equals_the_general_passes() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let (n_pub, n_sub, dims) = (30_000u32, 20_000u32, 2usize);
        let total = (n_pub + n_sub) as usize;
        let square = |rng: &mut rand_chacha::ChaCha8Rng| -> Vec<Range> {
            (0..dims)
                .map(|_| {
                    let lo = rng.gen_range(0..1_000_000);
                    Range {
                        lo,
                        hi: lo + rng.gen_range(0..100),
                    }
                })
                .collect()
        };
        // Every kind in index order, some regions left out: the fast path's batch.
        let mut ordered = UpdateBatch::default();
        for (kind, cap) in [(Kind::Publication, n_pub), (Kind::Subscription, n_sub)] {
            for i in 0..cap {
                if rng.gen_bool(0.9) {
                    ordered.set(kind, i, &square(&mut rng));
                }
            }
        }
        // Almost ordered: the last entry goes back (a part stops after writing most of
        // its entries); a removal in the middle; a region named twice.
        let mut late = ordered.clone();
        late.set(Kind::Subscription, 3, &square(&mut rng));
        let mut entries = ordered.entries().to_vec();
        entries[ordered.len() / 2].2 = Change::Remove;
        let mut ranges = ordered.ranges().to_vec();
        let cut = (ordered.len() / 2) * dims;
        ranges.drain(cut..cut + dims);
        let removal = UpdateBatch::from_parts(entries, ranges);
        assert!(ordered.is_ordered() && !removal.is_ordered());
        let mut twice = ordered.clone();
        let (k, i, _) = twice.entries()[100];
        twice.set(k, i, &square(&mut rng));
        // Every region, in order: dense (no records written).
        let mut every = UpdateBatch::default();
        for (kind, cap) in [(Kind::Publication, n_pub), (Kind::Subscription, n_sub)] {
            for i in 0..cap {
                every.set(kind, i, &square(&mut rng));
            }
        }
        let fresh = || -> Vec<AtomicU64> { (0..total).map(|_| AtomicU64::new(1)).collect() };
        // One thread, four woken at the call, four gathered before it (a crew).
        for (threads, crew) in [(1, false), (4, false), (4, true)] {
            // The same sequence through both: the fast path leaves `last` alone, and
            // the batches after it stage as they would have.
            let (mut l_fast, mut l_general) = (fresh(), fresh());
            let batches = [&ordered, &late, &every, &ordered, &removal, &twice, &every];
            for (batch_no, b) in batches.into_iter().enumerate() {
                let batch_no = batch_no as u32 + 1;
                let mut out = (
                    vec![UpdatedRegion::default(); total],
                    vec![Range::default(); total * dims],
                );
                let got = stage_into(
                    b,
                    dims,
                    (n_pub, n_sub),
                    &mut l_fast,
                    batch_no,
                    (&mut out.0, &mut out.1),
                    Hands {
                        threads,
                        crew: crew.then(|| {
                            Crew::gather(threads - 1, std::time::Duration::from_millis(5))
                        }),
                    },
                )
                .unwrap();
                let (want, records, ranges) =
                    stage_general(b, dims, (n_pub, n_sub), &mut l_general, batch_no).unwrap();
                // Only the batch of every region is dense; its records are the identity.
                assert_eq!(got.dense, std::ptr::eq(b, &every), "batch {batch_no}");
                let got = StageCounts {
                    dense: false,
                    ..got
                };
                assert_eq!(
                    got, want,
                    "batch {batch_no}, {threads} threads, crew {crew}"
                );
                if std::ptr::eq(b, &every) {
                    out.0 = (0..total as u32)
                        .map(|region| UpdatedRegion { region, alive: 1 })
                        .collect();
                }
                if batch_no == 1 {
                    // The ordered batch took the fast path: no key was written.
                    assert!(l_fast.iter_mut().all(|k| *k.get_mut() == 1));
                }
                let n = want.records as usize;
                assert_eq!(out.0[..n], records[..n], "batch {batch_no}");
                assert_eq!(out.1[..n * dims], ranges[..n * dims], "batch {batch_no}");
            }
        }
        // Errors: an index past its kind's capacity at the very end, an inverted range.
        let mut past = ordered.clone();
        past.set(Kind::Subscription, n_sub, &square(&mut rng));
        let mut ranges = ordered.ranges().to_vec();
        ranges[7] = Range { lo: 9, hi: 8 };
        let inverted = UpdateBatch::from_parts(ordered.entries().to_vec(), ranges);
        for threads in [1, 4] {
            let mut out = (
                vec![UpdatedRegion::default(); total + 1],
                vec![Range::default(); (total + 1) * dims],
            );
            let mut stage = |b: &UpdateBatch| {
                stage_into(
                    b,
                    dims,
                    (n_pub, n_sub),
                    &mut fresh(),
                    1,
                    (&mut out.0, &mut out.1),
                    Hands::threads(threads),
                )
            };
            assert!(matches!(stage(&past), Err(DdmError::Capacity { .. })));
            assert!(matches!(stage(&inverted), Err(DdmError::Model(_))));
        }
    }

    #[test]
    fn stream_copy_equals_a_plain_copy_at_every_alignment_and_length() {
        let src: Vec<Range> = (0..300u32)
            .map(|i| Range {
                lo: i,
                hi: i.wrapping_mul(2654435761),
            })
            .collect();
        // `dst` of u64s: 8-byte aligned; offsets 0 and 1 cover both 16-byte phases.
        let mut backing = vec![0u64; 320];
        let ranges: &mut [Range] = bytemuck::cast_slice_mut(&mut backing);
        for offset in 0..3 {
            for len in [0, 1, 2, 3, 4, 5, 6, 7, 64, 199, 296] {
                ranges.fill(Range::default());
                let from = &src[3..3 + len];
                stream_copy(&mut ranges[offset..offset + len], from);
                assert_eq!(
                    &ranges[offset..offset + len],
                    from,
                    "offset {offset}, len {len}"
                );
                assert!(ranges[..offset].iter().all(|r| *r == Range::default()));
                assert!(ranges[offset + len..]
                    .iter()
                    .all(|r| *r == Range::default()));
            }
        }
    }

    #[test]
    fn staging_rejects_indices_past_capacity() {
        let mut b = UpdateBatch::default();
        b.set(Kind::Publication, 4, &[Range { lo: 0, hi: 1 }]);
        let mut last: Vec<AtomicU64> = (0..8).map(|_| AtomicU64::new(0)).collect();
        assert!(matches!(
            stage_updates(&b, 1, 4, 4, &mut last, 1),
            Err(DdmError::Capacity { .. })
        ));
    }

    #[test]
    fn pub_rows_decode_to_ordered_pairs() {
        let bits = [0b101, 0, 0, 1 << 31];
        let pairs = decode_pub_rows(&bits, 2, 2);
        let want = [(0, 0), (0, 2), (1, 63)].map(|(p, s)| Pair {
            publication: p,
            subscription: s,
        });
        assert_eq!(pairs, want);
    }

    /// The true number of cells of `g`, without overflow.
    fn true_cells(g: &GridSpec) -> u128 {
        g.cells.iter().map(|&c| c as u128).product()
    }

    #[test]
    fn grid_specs_whose_cell_count_overflows_u64_are_a_typed_error() {
        // 2^16 cells in each of 4 dimensions: 2^64 cells, which a u64 product wraps to 0.
        // 2^32 - 1 in each of 8: far past u64.
        for cells in [
            vec![1 << 16; 4],
            vec![u32::MAX; 8],
            vec![1 << 22, 1 << 21, 1 << 21],
        ] {
            let dims = cells.len();
            let e = GridSpec::new(vec![0; dims], vec![1; dims], cells.clone()).unwrap_err();
            let DdmError::Grid(msg) = &e else {
                panic!("{e}")
            };
            assert!(
                msg.contains(&format!("at most {MAX_CELLS}")),
                "{cells:?}: {msg}"
            );
        }
        let e = GridSpec::new(vec![0; 3], vec![1; 3], vec![u32::MAX; 3]).unwrap_err();
        assert!(
            e.to_string()
                .contains("more than 18446744073709551615 cells"),
            "{e}"
        );
    }

    #[test]
    fn fitted_grids_over_extreme_coordinates_and_tiny_cells_stay_under_the_cell_limit() {
        // fuzz/regressions/ddm_diff-1.bin's workload (3 dimensions, one region near 0,
        // one at u32::MAX: about 2^32 cells of the mean side 1 per dimension), and 4
        // dimensions of span 2^16 with cells of side 1 (2^64 cells, a u64 product of 0).
        let region = |lo: u32, hi: u32, dims| vec![Range { lo, hi }; dims];
        let mut far = RegionSet::new(3).unwrap();
        far.push(
            Kind::Publication,
            0,
            &[
                Range { lo: 12, hi: 12 },
                Range { lo: 10, hi: 13 },
                Range { lo: 1, hi: 1 },
            ],
        )
        .unwrap();
        far.push(Kind::Subscription, 0, &region(u32::MAX, u32::MAX, 3))
            .unwrap();
        let mut wide = RegionSet::new(4).unwrap();
        wide.push(Kind::Publication, 0, &region(0, 1, 4)).unwrap();
        wide.push(Kind::Subscription, 0, &region(0, 1 << 16, 4))
            .unwrap();
        for (set, cell) in [
            (&far, None),
            (&far, Some(vec![1; 3])),
            (&wide, None),
            (&wide, Some(vec![1; 4])),
        ] {
            let g = GridSpec::fit(set, cell.as_deref()).unwrap();
            assert!(true_cells(&g) <= (MAX_CELLS / 16) as u128, "{g:?}");
            assert_eq!(g.n_cells() as u128, true_cells(&g));
        }
    }

    #[test]
    fn fitted_grid_stays_under_the_cell_limit() {
        let mut set = RegionSet::new(2).unwrap();
        set.push(
            Kind::Publication,
            0,
            &[Range { lo: 0, hi: 1 }, Range { lo: 0, hi: 1 }],
        )
        .unwrap();
        set.push(
            Kind::Subscription,
            0,
            &[
                Range {
                    lo: 0,
                    hi: 4_000_000_000,
                },
                Range { lo: 0, hi: 1 },
            ],
        )
        .unwrap();
        let g = GridSpec::fit(&set, None).unwrap();
        assert!(g.n_cells() as u64 <= MAX_CELLS / 16);
    }
}
