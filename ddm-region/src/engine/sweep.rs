//! Counting and enumerating every overlapping pair from scratch: the sorting engines'
//! radix sort and sweep, the bisect engine's binary searches and sorted tiles, and the
//! pairs handed to the caller.

use super::*;

impl<'d> Engine<'d> {
    /// The number of overlapping (publication, subscription) pairs now.
    pub fn count(&mut self) -> Result<u64, DdmError> {
        if self.approach.sorts() {
            self.gather_next_crew();
        }
        self.count_times = CountTimes::default();
        let t = Instant::now();
        let n = self.count_now()?;
        // (Where the count was not split, its time is all queued: the paper's engines
        // read the overlaps a step left, the tiles queue and wait at once.)
        let c = &mut self.count_times;
        if c.queue.is_zero() {
            c.queue = t.elapsed().saturating_sub(c.estimate + c.wait);
        }
        Ok(n)
    }

    /// Where the host's time of the last [`Engine::count`] went (all zeros until one ran).
    pub fn last_count_times(&self) -> CountTimes {
        self.count_times
    }

    pub(super) fn count_now(&mut self) -> Result<u64, DdmError> {
        match self.approach {
            Approach::Sweep => self.sweep_count(0),
            Approach::Bisect if self.matches_in_tiles() => self.tiled(None),
            Approach::Bisect if self.dims == 1 => match self.count_by_search()? {
                Some(n) => Ok(n),
                None => self.sweep_count(0),
            },
            Approach::Bisect => {
                let dim = self.sweep_dim()?;
                self.sweep_count(dim)
            }
            _ => self.read_overlaps(),
        }
    }

    /// The sweep dimension of the bisect engine: the one of the first
    /// [`MAX_ESTIMATED_DIMS`] where a sample of publications against a sample of
    /// subscriptions (`min(SAMPLE, max(n_pub, n_sub) / 8)` of each, every pair) overlaps
    /// least (the lowest on a tie), estimated once per step or load, with the strips of
    /// another dimension its sweep runs in ([`plan_strips`], from the live regions'
    /// largest bounds and widest ranges, [`dim_extents()`], brought back by the same read)
    /// where the sample says the whole space has [`Engine::set_strips_from`]'s candidates a
    /// region or more.
    /// Dimension 0 for the sweep engine and in one dimension.
    pub fn sweep_dim(&mut self) -> Result<u32, DdmError> {
        if self.approach != Approach::Bisect || self.dims == 1 {
            return Ok(0);
        }
        if let Some(d) = self.chosen_dim {
            return Ok(d);
        }
        let t = Instant::now();
        let s = self
            .sweep
            .as_mut()
            .expect("sorting engines keep their state");
        let ends = s.ends.as_mut().expect("the bisect engine has end buffers");
        self.dev.zero(&mut ends.per_dim)?;
        // An estimate: a small set gets a small sample (the emulator runs it too).
        let samples = SAMPLE.min(self.n_pub.max(self.n_sub) / 8).max(1);
        dim_candidates::launch(
            self.dev,
            Self::linear(samples * samples),
            &self.table,
            samples,
            &ends.per_dim,
        )?;
        let regions = self.n_pub + self.n_sub;
        if self.strips_on && regions > 0 {
            dim_extents::launch(self.dev, Self::linear(regions), &self.table, &ends.per_dim)?;
        }
        let per_dim = self.dev.read(&ends.per_dim)?;
        let estimated = (self.dims as u32).min(MAX_ESTIMATED_DIMS) as usize;
        let dim = (0..estimated).min_by_key(|&d| per_dim[d]).unwrap_or(0) as u32;
        // The whole space's candidates, from the sample: strips only where they are many
        // (`strips_from` a region).
        let candidates = per_dim[dim as usize] as f64 * self.n_pub as f64 * self.n_sub as f64
            / (samples as f64 * samples as f64);
        let many = candidates >= (self.strips_from as f64) * regions as f64;
        self.chosen_strips = many
            .then(|| {
                plan_strips(
                    dim,
                    &per_dim[EXTENT_HI..EXTENT_HI + estimated],
                    &per_dim[EXTENT_WIDTH..EXTENT_WIDTH + estimated],
                )
            })
            .flatten();
        self.chosen_dim = Some(dim);
        self.count_times.estimate = t.elapsed();
        Ok(dim)
    }

    /// The count by binary search over the end points of dimension 0 ([`Approach::Bisect`]
    /// in one dimension; in several, the overlaps in dimension 0 alone): `None` when a
    /// live range is empty there (the identity it rests on fails), while the pairs are
    /// restricted ([`Engine::set_overlaps_from`]), or for another engine.
    /// [`Engine::count`] then sweeps.
    pub fn count_by_search(&mut self) -> Result<Option<u64>, DdmError> {
        if self.approach != Approach::Bisect || self.host.overlaps_from > 0 {
            return Ok(None);
        }
        let dev = self.dev;
        let (np, ns) = (self.n_pub, self.n_sub);
        if np == 0 || ns == 0 {
            return Ok(Some(0));
        }
        let t = Instant::now();
        // Removed subscriptions' keys are u32::MAX: sorting the digits below
        // `end_bound + 1` keeps them after every live key.
        let passes = (32 - self.end_bound.saturating_add(1).leading_zeros()).div_ceil(8);
        let s = self
            .sweep
            .as_mut()
            .expect("sorting engines keep their state");
        let mut e = s.ends.take().expect("the bisect engine has end buffers");
        let r = (|| -> Result<(), DdmError> {
            dev.zero(&mut e.tally)?;
            let hi = e.sort.b_at;
            end_keys::launch(
                dev,
                Self::linear(ns),
                &self.table,
                0,
                e.sort.keys.at_mut(0),
                e.sort.vals.at_mut(0),
                e.sort.keys.at_mut(hi),
                e.sort.vals.at_mut(hi),
                &e.tally,
            )?;
            e.sort
                .sort(dev, [ns, ns], passes, [&s.hist, &s.digit_total])?;
            bisect_count::launch(
                dev,
                Self::linear(np),
                &self.table,
                0,
                e.sort.keys.at(0),
                e.sort.keys.at(hi),
                &e.tally,
            )?;
            Ok(())
        })();
        let s = self
            .sweep
            .as_mut()
            .expect("sorting engines keep their state");
        s.ends = Some(e);
        r?;
        let e = s.ends.as_ref().expect("just put back");
        self.count_times.queue = t.elapsed();
        let t = Instant::now();
        let tally = dev.read(&e.tally)?;
        self.count_times.wait = t.elapsed();
        Ok((tally[EMPTY_FLAG] == 0).then_some(tally[0]))
    }

    /// All overlapping pairs now, ordered by publication, then subscription.
    pub fn pairs(&mut self) -> Result<Vec<Pair>, DdmError> {
        match self.approach {
            Approach::Sweep | Approach::Bisect => {
                let mut all = self.pairs_unordered()?;
                all.sort_unstable();
                Ok(all)
            }
            _ => {
                let bits = self.dev.read(&self.pub_rows)?;
                Ok(crate::layout::decode_pub_rows(
                    &bits,
                    self.n_pub,
                    self.host.sub_words,
                ))
            }
        }
    }

    /// All overlapping pairs now, in no particular order: the sorting engines' pairs as
    /// they come, copied into a new `Vec` on all host threads when there are many
    /// ([`Engine::pairs`] sorts them; the other engines' are sorted anyway).
    ///
    /// ```
    /// use ddm_region::{Approach, Device, Engine, Kind, Range, RegionSet};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut set = RegionSet::new(1)?;
    /// set.push(Kind::Publication, 1, &[Range { lo: 0, hi: 10 }])?;
    /// set.push(Kind::Subscription, 2, &[Range { lo: 5, hi: 15 }])?;
    /// set.push(Kind::Subscription, 3, &[Range { lo: 8, hi: 9 }])?;
    /// let dev = Device::emulator();
    /// let mut e = Engine::with_regions(&dev, Approach::Bisect, &set)?;
    /// // A small set: the publications sorted tile by tile, two launches.
    /// assert!(e.matches_in_tiles());
    /// let mut pairs = e.pairs_unordered()?;
    /// pairs.sort_unstable();
    /// assert_eq!(pairs.len(), 2);
    /// // The same pairs from the sorts of all regions and the sweep.
    /// e.set_tiled_max(0);
    /// assert_eq!(pairs, e.pairs()?);
    /// # Ok(()) }
    /// ```
    pub fn pairs_unordered(&mut self) -> Result<Vec<Pair>, DdmError> {
        let mut all = Vec::new();
        self.pairs_into(&mut all)?;
        Ok(all)
    }

    /// All overlapping pairs now, in no particular order, into `out` (cleared first; its
    /// capacity kept, so that a simulation's steps reuse one buffer, as the paper's
    /// engine does its pair list); returns how many. The sorting engines copy the pairs
    /// out of the page-locked memory the GPU wrote them to on all host threads when
    /// there are many, the threads woken while the GPU matches (when the previous call
    /// found many: [`gpu_kernels::crew`]).
    ///
    /// ```
    /// use ddm_region::{Approach, Device, Engine, Kind, Range, RegionSet};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut set = RegionSet::new(1)?;
    /// set.push(Kind::Publication, 1, &[Range { lo: 0, hi: 10 }])?;
    /// set.push(Kind::Subscription, 2, &[Range { lo: 5, hi: 15 }])?;
    /// let dev = Device::emulator();
    /// let mut e = Engine::with_regions(&dev, Approach::Bisect, &set)?;
    /// let mut pairs = vec![Default::default(); 100];
    /// assert_eq!(e.pairs_into(&mut pairs)?, 1);
    /// assert_eq!(pairs, e.pairs()?);
    /// assert!(pairs.capacity() >= 100);
    /// # Ok(()) }
    /// ```
    pub fn pairs_into(&mut self, out: &mut Vec<Pair>) -> Result<u64, DdmError> {
        out.clear();
        if !self.approach.sorts() {
            let all = self.pairs()?;
            out.extend_from_slice(&all);
            return Ok(all.len() as u64);
        }
        let threads = self.threads;
        let mut crew = (self.last_pair_total >= 2 * COPY_OUT_PART as u64)
            .then(|| Crew::gather(threads.saturating_sub(1), COPY_CREW_WAIT));
        if crew.is_none() {
            // (A step with many pairs leaves the copy's crew awake for the next staging.)
            self.gather_next_crew();
        }
        let total = self.for_each_landed(&mut |b| append_pairs(out, b, crew.take(), threads))?;
        self.last_pair_total = total;
        Ok(total)
    }

    /// Hands all overlapping pairs to `f` in batches (unordered for the sweep engine);
    /// returns how many there were. The number of pairs is not limited by device memory.
    pub fn for_each_pair_batch(&mut self, mut f: impl FnMut(&[Pair])) -> Result<u64, DdmError> {
        if !self.approach.sorts() {
            let all = self.pairs()?;
            f(&all);
            return Ok(all.len() as u64);
        }
        let mut wide = Vec::new();
        self.gather_next_crew();
        self.for_each_landed(&mut |b| match b {
            Landed::Wide(p) => f(p),
            Landed::Narrow(w) => {
                // Unpacked a part at a time (a part stays in the cache for `f`).
                for part in w.chunks(COPY_OUT_PART) {
                    wide.clear();
                    wide.extend(part.iter().map(|&x| unpack_narrow(x)));
                    f(&wide);
                }
                if w.is_empty() {
                    f(&[]);
                }
            }
        })
    }

    /// The sorting engines' pairs, batch by batch, as they landed in host memory.
    pub(super) fn for_each_landed(&mut self, f: &mut LandedSink) -> Result<u64, DdmError> {
        if self.matches_in_tiles() {
            // More pairs than one window: the sweep enumerates them window by window.
            let total = self.tiled(Some(&mut *f))?;
            if total <= SWEEP_WINDOW {
                return Ok(total);
            }
        }
        let dim = self.sweep_dim()?;
        let (n_chunks, pairs_total) = self.sweep_prepare(dim)?;
        if pairs_total == 0 {
            return Ok(0);
        }
        let window = pairs_total.min(SWEEP_WINDOW);
        let dev = self.dev;
        let s = self.sweep.as_mut().expect("prepared");
        if s.out.len() < window as usize {
            s.out = dev.alloc(window as usize)?;
            // Page-locked, so that the copy back is one DMA (no bounce through a driver
            // buffer), and kept across calls (no allocation per call).
            s.out_host = dev.alloc_host(window as usize)?;
        }
        let s = self.sweep.as_mut().expect("prepared");
        let (out, host) = (&s.out, s.out_host.as_mut_slice());
        let (work, per_chunk) = (&s.work, &s.per_chunk);
        let mut base = 0u64;
        while base < pairs_total {
            let len = (pairs_total - base).min(window);
            Self::launch_chunks(n_chunks, |chunk_base, threads| {
                sweep_emit::launch(
                    self.dev,
                    Self::linear(threads),
                    &self.table,
                    work,
                    chunk_base,
                    n_chunks,
                    per_chunk,
                    pairs_total,
                    out,
                    base,
                    window,
                )
            })?;
            self.dev.read_into(out, 0, &mut host[..len as usize])?;
            f(Landed::Wide(&host[..len as usize]));
            base += len;
        }
        Ok(pairs_total)
    }

    /// Matching in sorted tiles ([`sort_tiles`], then [`tiled_match`]: two launches, one
    /// wait): the count, or with `hand`, the pairs handed over from mapped host memory,
    /// where the kernel wrote them (room is grown and the matching redone when there
    /// were more; not when there are more than [`SWEEP_WINDOW`], which the caller
    /// enumerates otherwise). Returns the count.
    pub(super) fn tiled(&mut self, mut hand: Option<&mut LandedSink>) -> Result<u64, DdmError> {
        let (np, ns) = (self.n_pub, self.n_sub);
        if np == 0 || ns == 0 {
            if let Some(f) = hand {
                f(Landed::Wide(&[]));
            }
            return Ok(0);
        }
        let narrow = self.tiled_narrow && np <= NARROW_MAX && ns <= NARROW_MAX;
        let dev = self.dev;
        let rows = ns.div_ceil(subs_per_block(self.dims as u32));
        // Publication slices of a whole tile or more, as many as make `tiled_fill`
        // blocks.
        let slices = (self.tiled_fill / rows).clamp(1, np.div_ceil(TILE).min(65535));
        let cfg = LaunchConfig {
            grid: [rows, slices, 1],
            block: [TILE, 1, 1],
            shared_bytes: tiled_shared_bytes(self.dims as u32),
        };
        let emit = match (&hand, narrow) {
            (None, _) => EMIT_COUNT,
            (Some(_), false) => EMIT_WIDE,
            (Some(_), true) => EMIT_NARROW,
        };
        let words_per_pair = if narrow { 1 } else { 2 };
        let n_tiles = np.div_ceil(TILE);
        let s = self
            .sweep
            .as_mut()
            .expect("sorting engines keep their state");
        if s.tiles.is_none() {
            let n = np as usize;
            let (keys, ids) = (dev.alloc::<u32>(n)?, dev.alloc::<u32>(n)?);
            let ranges = dev.alloc::<Range>(n * self.dims)?;
            let widths = dev.alloc::<u32>(n_tiles as usize)?;
            let table = dev.upload(&[SortedTiles {
                keys: addr(&keys),
                ids: addr(&ids),
                ranges: addr(&ranges),
                widths: addr(&widths),
            }])?;
            s.tiles = Some(TilesState {
                table,
                _keys: keys,
                _ids: ids,
                _ranges: ranges,
                _widths: widths,
            });
        }
        let tiles = s.tiles.as_ref().expect("just made");
        // (It zeroes `total` too: no memset before either launch.)
        sort_tiles::launch(
            dev,
            LaunchConfig::blocks(n_tiles, TILE, SORT_TILES_SHARED),
            &self.table,
            &tiles.table,
            &s.total,
        )?;
        loop {
            let s = self
                .sweep
                .as_mut()
                .expect("sorting engines keep their state");
            let tiles = &s.tiles.as_ref().expect("made above").table;
            let cap = if emit == EMIT_COUNT {
                0
            } else {
                (s.tiled_out.len() / words_per_pair) as u64
            };
            tiled_match::launch(
                dev,
                cfg,
                &self.table,
                tiles,
                s.tiled_out.at_mut(0),
                cap,
                &s.total,
                emit,
            )?;
            let total = dev.read(&s.total)?[0];
            let Some(f) = hand.as_mut() else {
                return Ok(total);
            };
            if total <= cap {
                let words = &s.tiled_out.as_slice()[..total as usize * words_per_pair];
                f(if narrow {
                    Landed::Narrow(words)
                } else {
                    Landed::Wide(bytemuck::cast_slice(words))
                });
                return Ok(total);
            }
            if total > SWEEP_WINDOW {
                return Ok(total);
            }
            s.tiled_out = dev.alloc_host(total.next_power_of_two() as usize * words_per_pair)?;
            // Matched again with room for every pair, counted from zero.
            dev.zero(&mut s.total)?;
        }
    }

    /// Launches `n_chunks` threads in launches of at most 2^30 threads.
    pub(super) fn launch_chunks(
        n_chunks: u64,
        mut launch: impl FnMut(u64, u32) -> Result<(), GpuError>,
    ) -> Result<(), DdmError> {
        let per = 1u64 << 30;
        let mut base = 0u64;
        while base < n_chunks {
            let threads = (n_chunks - base).min(per) as u32;
            launch(base, threads)?;
            base += threads as u64;
        }
        Ok(())
    }

    /// The count of the sorting engines: sorted, tasks found and scanned, then the
    /// chunking chosen on the device ([`sweep_plan`]) and the chunks walked by a grid
    /// of [`STRIDED_THREADS_PER_SM`] threads per SM ([`sweep_count_strided`]): one wait,
    /// for the count, where reading the work total back to choose the chunking on the
    /// host took a second. On a GPU its ~20 launches are recorded once and replayed as
    /// one ([`Device::record`]) while the engine's sizes stay; the emulator queues them.
    pub(super) fn sweep_count(&mut self, dim: u32) -> Result<u64, DdmError> {
        self.with_sweep_state(|e, s| e.sweep_count_with(s, dim))
    }

    /// Runs `f` with the sorting engines' state (made on first use), taken out of the
    /// engine for the call so that `f` may borrow both.
    pub(super) fn with_sweep_state<R>(
        &mut self,
        f: impl FnOnce(&mut Self, &mut SweepState) -> Result<R, DdmError>,
    ) -> Result<R, DdmError> {
        let mut s = match self.sweep.take() {
            Some(s) => s,
            None => self.sweep_state()?,
        };
        let r = f(self, &mut s);
        self.sweep = Some(s);
        r
    }

    pub(super) fn sweep_count_with(
        &mut self,
        s: &mut SweepState,
        dim: u32,
    ) -> Result<u64, DdmError> {
        let dev = self.dev;
        let (np, ns) = (self.n_pub, self.n_sub);
        if np + ns == 0 {
            return Ok(0);
        }
        let t = Instant::now();
        let (strips, passes) = self.strips_for(dim);
        let strips = strips.unwrap_or_default();
        let per = strips.entries();
        let key = CountKey {
            dim,
            strips,
            passes,
            n_pub: np,
            n_sub: ns,
            table: addr(&self.table),
            sums: addr(&s.sums),
        };
        let replay = s.count_recording.as_ref().is_some_and(|r| r.key == key);
        // The work description the launches read: the recording's own, or the addresses
        // as the sort will leave them (after an odd number of passes the keys and values
        // are in the other buffers); written before the launches (a host copy cannot be
        // recorded) and only when it changed.
        let work = match &s.count_recording {
            Some(r) if replay => r.work,
            _ => {
                let sorted = if passes % 2 == 1 {
                    [&s.sort.tmp_keys, &s.sort.tmp_vals]
                } else {
                    [&s.sort.keys, &s.sort.vals]
                };
                work_of(s, sorted, dim, strips, [np * per, ns * per])
            }
        };
        if s.work_written != Some(work) {
            dev.write(&mut s.work, 0, &[work])?;
            s.work_written = Some(work);
        }
        if let Some(rec) = s.count_recording.as_ref().filter(|_| replay) {
            dev.replay(&rec.recording)?;
        } else {
            s.count_recording = None;
            let threads = dev.sm_count().max(1) * STRIDED_THREADS_PER_SM;
            let recording = dev.record(|| -> Result<(), DdmError> {
                self.sort_and_find_tasks(s, dim, strips, passes)?;
                exclusive_scan(dev, &s.offsets, ((np + ns) * per) as u64, &s.sums, &s.total)?;
                sweep_plan::launch(dev, Self::linear(1), &s.work, &s.total, COUNT_MIN_CHUNK)?;
                sweep_count_strided::launch(
                    dev,
                    Self::linear(threads),
                    &self.table,
                    &s.work,
                    &s.total,
                )?;
                Ok(())
            })?;
            if let Some(recording) = recording {
                dev.replay(&recording)?;
                s.count_recording = Some(CountRecording {
                    key,
                    work,
                    recording,
                });
            }
        }
        // (A sweep after the one-dimensional search adds to that count's times.)
        self.count_times.queue += t.elapsed();
        let t = Instant::now();
        let total = dev.read(&s.total)?[0];
        self.count_times.wait += t.elapsed();
        Ok(total)
    }

    /// Radix passes of a sort in dimension `dim`: only the digits below the largest key
    /// ever installed need sorting.
    pub(super) fn sort_passes(&self, dim: u32) -> u32 {
        let bound = if dim == 0 {
            self.key_bound
        } else {
            self.end_bound
        };
        (32 - bound.leading_zeros()).div_ceil(8)
    }

    pub(super) fn sweep_state(&self) -> Result<SweepState, DdmError> {
        let (np, ns) = (self.n_pub as usize, self.n_sub as usize);
        let tile = RADIX_TILE as usize;
        let bisect = self.approach == Approach::Bisect;
        // Entries of each kind in the sweep's sort: two a region where it may run in
        // strips.
        let per = Self::entries_per_region(&self.approach, self.dims);
        let (pe, se) = (np * per, ns * per);
        // The sort's tile counts: one column per tile of either pair of lists.
        let tiles = (pe.div_ceil(tile) + se.div_ceil(tile)).max(if bisect {
            2 * ns.div_ceil(tile)
        } else {
            0
        });
        let tasks = pe + se;
        Ok(SweepState {
            sort: SortLists::new(self.dev, pe, se)?,
            pub_sorted: self.dev.alloc((pe * self.dims).max(1))?,
            sub_sorted: self.dev.alloc((se * self.dims).max(1))?,
            hist: self.dev.alloc(tiles.max(1) * RADIX_DIGITS as usize)?,
            digit_total: self.dev.alloc(2 * RADIX_DIGITS as usize)?,
            sums: self.dev.alloc(tasks.div_ceil(SCAN_TILE as usize).max(1))?,
            total: self.dev.alloc(1)?,
            begin: self.dev.alloc(tasks.max(1))?,
            offsets: self.dev.alloc(tasks.max(1))?,
            work: self.dev.alloc(1)?,
            work_written: None,
            count_recording: None,
            per_chunk: self.dev.alloc(1)?,
            out: self.dev.alloc(1)?,
            out_host: self.dev.alloc_host(1)?,
            // (Room for the first pairs only where the engine matches in tiles now; a
            // 1M-region engine never does.)
            tiled_out: self.dev.alloc_host(if self.matches_in_tiles() {
                TILED_FIRST_WORDS
            } else {
                1
            })?,
            tiles: None,
            ends: if bisect {
                Some(EndsState {
                    sort: SortLists::new(self.dev, ns, ns)?,
                    tally: self.dev.alloc(2)?,
                    // The sample's sums, then `dim_extents`' maxima.
                    per_dim: self.dev.alloc(EXTENT_WIDTH + MAX_ESTIMATED_DIMS as usize)?,
                })
            } else {
                None
            },
        })
    }

    /// Sorts, finds the tasks, scans their lengths, reads the work total back to choose
    /// the chunking, then counts and scans the pairs of each chunk (enumeration: each
    /// chunk's pairs land at its offset). Returns (chunks, pairs in all).
    pub(super) fn sweep_prepare(&mut self, dim: u32) -> Result<(u64, u64), DdmError> {
        self.with_sweep_state(|e, s| e.sweep_prepare_with(s, dim))
    }

    /// Sorts both kinds by their lower bounds in dimension `dim` (in `strips`: one entry
    /// per strip a region touches, keyed strip by strip; `passes` radix passes), copies
    /// their ranges in sorted order and finds each entry's run of candidates
    /// (`sweep_keys`, the radix sort, `sweep_gather`, `sweep_tasks`): launches only.
    pub(super) fn sort_and_find_tasks(
        &self,
        s: &mut SweepState,
        dim: u32,
        strips: Strips,
        passes: u32,
    ) -> Result<(), DdmError> {
        let dev = self.dev;
        let (np, ns) = (self.n_pub, self.n_sub);
        let per = strips.entries();
        let (pe, se) = (np * per, ns * per);
        let sub_at = s.sort.place(pe as usize, se as usize);
        for (first, n, at) in [(0, np, 0), (np, ns, sub_at)] {
            if n > 0 {
                sweep_keys::launch(
                    dev,
                    Self::linear(n),
                    &self.table,
                    first,
                    n,
                    dim,
                    strips.dim,
                    strips.shift,
                    strips.width,
                    strips.quantum,
                    s.sort.keys.at_mut(at),
                    s.sort.vals.at_mut(at),
                )?;
            }
        }
        s.sort
            .sort(dev, [pe, se], passes, [&s.hist, &s.digit_total])?;
        for (first, n, at, sorted) in [(0, pe, 0, &s.pub_sorted), (np, se, sub_at, &s.sub_sorted)] {
            if n > 0 {
                sweep_gather::launch(
                    dev,
                    Self::linear(n),
                    &self.table,
                    first,
                    n,
                    s.sort.vals.at(at),
                    sorted,
                )?;
            }
        }
        if pe + se > 0 {
            sweep_tasks::launch(
                dev,
                Self::linear(pe + se),
                &self.table,
                dim,
                s.sort.keys.at(0),
                s.sort.keys.at(sub_at),
                &s.pub_sorted,
                &s.sub_sorted,
                &s.begin,
                &s.offsets,
                pe,
                se,
                strips.shift,
                strips.width,
                strips.quantum,
            )?;
        }
        Ok(())
    }

    pub(super) fn sweep_prepare_with(
        &mut self,
        s: &mut SweepState,
        dim: u32,
    ) -> Result<(u64, u64), DdmError> {
        let dev = self.dev;
        let (strips, passes) = self.strips_for(dim);
        let strips = strips.unwrap_or_default();
        let per = strips.entries();
        let (pe, se) = (self.n_pub * per, self.n_sub * per);
        let tasks = pe + se;
        self.sort_and_find_tasks(s, dim, strips, passes)?;
        if tasks == 0 {
            return Ok((0, 0));
        }
        let mut work = work_of(s, [&s.sort.keys, &s.sort.vals], dim, strips, [pe, se]);
        exclusive_scan(dev, &s.offsets, tasks as u64, &s.sums, &s.total)?;
        let work_total = dev.read(&s.total)?[0];
        // Enumeration keeps its per-chunk counts 4x fewer than a count's chunks.
        let chunk = EMIT_MIN_CHUNK.max(work_total.div_ceil(1 << MAX_CHUNKS_LOG2));
        let n_chunks = work_total.div_ceil(chunk);
        s.work_written = Some(work);
        work.total = work_total;
        work.chunk = chunk;
        dev.write(&mut s.work, 0, &[work])?;
        if n_chunks == 0 {
            return Ok((0, 0));
        }
        if s.per_chunk.len() < n_chunks as usize {
            s.per_chunk = dev.alloc(n_chunks as usize)?;
        }
        let sums_needed = (n_chunks as usize).div_ceil(SCAN_TILE as usize);
        if s.sums.len() < sums_needed {
            s.sums = dev.alloc(sums_needed)?;
        }
        Self::launch_chunks(n_chunks, |chunk_base, threads| {
            // (Per chunk: `total` is not written.)
            sweep_count::launch(
                dev,
                Self::linear(threads),
                &self.table,
                &s.work,
                chunk_base,
                n_chunks,
                &s.per_chunk,
                &s.total,
                0,
            )
        })?;
        exclusive_scan(dev, &s.per_chunk, n_chunks, &s.sums, &s.total)?;
        let pairs_total = dev.read(&s.total)?[0];
        Ok((n_chunks, pairs_total))
    }
}

/// Appends `src` (pairs the GPU has just written into page-locked memory, so none is in
/// a CPU cache) to `out`: many pairs on `crew` (gathered before the device wait, so its
/// threads are up) or on `threads` pool threads gathered now, in parts of
/// [`COPY_OUT_PART`].
pub(super) fn append_pairs(out: &mut Vec<Pair>, src: Landed, crew: Option<Crew>, threads: usize) {
    let n = src.len();
    out.reserve(n);
    let len = out.len();
    if n < 2 * COPY_OUT_PART {
        src.write_to(0, &mut out.spare_capacity_mut()[..n]);
    } else {
        let parts = out.spare_capacity_mut()[..n]
            .chunks_mut(COPY_OUT_PART)
            .collect();
        let crew = crew.unwrap_or_else(|| Crew::gather(threads.saturating_sub(1), Duration::ZERO));
        crew.map(parts, |i, dst| src.write_to(i * COPY_OUT_PART, dst));
    }
    // SAFETY: `out[len..len + n]` (reserved above) was written element by element
    // through `MaybeUninit::write`, by `write_to` at once or by the parts (the spare
    // capacity cut in order; `run` returns once every part has ended); `Pair` is plain
    // data.
    unsafe { out.set_len(len + n) };
}

/// A step's pairs in a new `Vec` ([`append_pairs`] on all host threads).
pub(super) fn copy_out(src: &[Pair]) -> Vec<Pair> {
    let mut out = Vec::new();
    append_pairs(
        &mut out,
        Landed::Wide(src),
        None,
        rayon::current_num_threads(),
    );
    out
}

/// Exclusive prefix sums of `buf[..n]` in place; the total goes to `total[0]`.
pub(super) fn exclusive_scan(
    dev: &Device,
    buf: &Buffer<u64>,
    n: u64,
    sums: &Buffer<u64>,
    total: &Buffer<u64>,
) -> Result<(), GpuError> {
    let shared = SCAN_BLOCK * 8;
    if n <= 4 * SCAN_TILE as u64 {
        // Small: one block scans it all, each thread a contiguous chunk.
        return scan_top::launch(
            dev,
            LaunchConfig::blocks(1, SCAN_BLOCK, shared),
            buf,
            n,
            total,
        );
    }
    let blocks = n.div_ceil(SCAN_TILE as u64).max(1);
    assert!(sums.len() as u64 >= blocks, "scan scratch too small");
    let cfg = LaunchConfig::blocks(blocks as u32, SCAN_BLOCK, shared);
    scan_reduce::launch(dev, cfg, buf, n, sums)?;
    scan_top::launch(
        dev,
        LaunchConfig::blocks(1, SCAN_BLOCK, shared),
        sums,
        blocks,
        total,
    )?;
    // In place: input and output are the same buffer (each thread reads its own items
    // before writing them).
    scan_down::launch(dev, cfg, buf, buf, n, sums)
}

/// Sorts two lists of `(key, value)` pairs, each on its own, by their keys' low
/// `8 * passes` bits: list A at `[0, n_a)` of `keys` (with `vals`) and list B at
/// `[b_at, b_at + n_b)`, `b_at` being `n_a` rounded up to a whole [`RADIX_TILE`], so
/// that both share each launch (a sort of one list passes `n_b = 0`). Stable 8-bit LSD
/// passes (`radix_hist`, `radix_offsets`, `radix_scatter`: three launches each)
/// ping-pong between `[keys, vals]` and `[tmp_keys, tmp_vals]`; after an odd number of
/// passes the result is in the `tmp` pair. Scratch: `[hist, digit_total]`, `hist` of
/// [`RADIX_DIGITS`] words per tile, `digit_total` of two times [`RADIX_DIGITS`].
pub(super) fn radix_sort(
    dev: &Device,
    bufs: [&Buffer<u32>; 4],
    [n_a, n_b]: [u32; 2],
    passes: u32,
    scratch: [&Buffer<u32>; 2],
) -> Result<(), GpuError> {
    let [keys, vals, tmp_keys, tmp_vals] = bufs;
    let [hist, digit_total] = scratch;
    let tiles_a = n_a.div_ceil(RADIX_TILE);
    let blocks = (tiles_a + n_b.div_ceil(RADIX_TILE)).max(1);
    assert!(
        hist.len() >= (blocks * RADIX_DIGITS) as usize
            && digit_total.len() >= 2 * RADIX_DIGITS as usize,
        "radix scratch too small"
    );
    let lists = if n_b > 0 { 2 } else { 1 };
    for pass in 0..passes {
        let shift = pass * 8;
        let (ki, vi, ko, vo) = if pass % 2 == 0 {
            (keys, vals, tmp_keys, tmp_vals)
        } else {
            (tmp_keys, tmp_vals, keys, vals)
        };
        let cfg = LaunchConfig::blocks(blocks, RADIX_BLOCK, RADIX_HIST_SHARED);
        radix_hist::launch(dev, cfg, ki, n_a, tiles_a, n_b, shift, hist, blocks)?;
        let rows = offsets_rows_per_block(blocks);
        let cfg = LaunchConfig::blocks(lists * (RADIX_DIGITS / rows), RADIX_BLOCK, 0);
        radix_offsets::launch(dev, cfg, hist, blocks, tiles_a, digit_total, rows)?;
        let cfg = LaunchConfig::blocks(blocks, RADIX_BLOCK, RADIX_SCATTER_SHARED);
        radix_scatter::launch(
            dev,
            cfg,
            ki,
            vi,
            ko,
            vo,
            n_a,
            tiles_a,
            n_b,
            shift,
            hist,
            digit_total,
            blocks,
        )?;
    }
    Ok(())
}
