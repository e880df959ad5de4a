//! A time step of the paper's approaches: Phase 1 (staging the updated regions), Phase 2
//! (clearing their old overlaps), Phase 3 (matching: region or grid), Phase 4 (the
//! overlap count and the new pairs into mapped host memory).

use super::*;

impl<'d> Engine<'d> {
    /// A launch of `threads` threads in blocks of [`BLOCK`], or of fewer (whole warps)
    /// when there are fewer threads than that.
    pub(super) fn linear(threads: u32) -> LaunchConfig {
        LaunchConfig::linear(threads, BLOCK.min(threads.next_multiple_of(32)).max(32))
    }

    /// One time step: Phases 1–4 (region) or 1–5 (grid) for the updated regions of
    /// `batch`; with `want_pairs`, Phase 4 also copies back the pairs that involve an
    /// updated region. The sweep engine only installs the regions (Phase 1); its
    /// matching is [`Engine::count`] or [`Engine::pairs`].
    ///
    /// ```
    /// use ddm_region::{Approach, Device, Engine, Kind, Pair, Range, UpdateBatch};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dev = Device::emulator();
    /// // Room for 2 publications and 1 subscription on a line; none present yet.
    /// let mut engine = Engine::new(&dev, Approach::Region, 1, 2, 1)?;
    /// let mut batch = UpdateBatch::default();
    /// batch.set(Kind::Publication, 0, &[Range { lo: 0, hi: 10 }]);
    /// batch.set(Kind::Publication, 1, &[Range { lo: 50, hi: 60 }]);
    /// batch.set(Kind::Subscription, 0, &[Range { lo: 8, hi: 12 }]);
    /// let report = engine.step(&batch, true)?;
    /// assert_eq!(report.overlaps, 1);
    /// assert_eq!(report.pairs, Some(vec![Pair { publication: 0, subscription: 0 }]));
    ///
    /// // The subscription moves next to publication 1; publication 0 is removed.
    /// let mut batch = UpdateBatch::default();
    /// batch.set(Kind::Subscription, 0, &[Range { lo: 55, hi: 70 }]);
    /// batch.remove(Kind::Publication, 0);
    /// assert_eq!(engine.step(&batch, false)?.overlaps, 1);
    /// assert_eq!(engine.pairs()?, vec![Pair { publication: 1, subscription: 0 }]);
    /// # Ok(()) }
    /// ```
    pub fn step(&mut self, batch: &UpdateBatch, want_pairs: bool) -> Result<StepReport, DdmError> {
        let t0 = Instant::now();
        self.times = StepTimes::default();
        self.staged_at = None;
        let r = self.step_phases(batch, want_pairs);
        self.times.total_us = t0.elapsed().as_secs_f64() * 1e6;
        if let Some(at) = self.staged_at {
            self.times.stage_us = (at - t0).as_secs_f64() * 1e6;
        }
        r
    }

    /// Where the host's time of the last [`Engine::step`] went.
    pub fn last_step_times(&self) -> StepTimes {
        self.times
    }

    /// Where the host's time of the last whole-set [`Engine::load`] on its fast path
    /// went (all zeros until one ran).
    pub fn last_load_times(&self) -> LoadTimes {
        self.load_times
    }

    pub(super) fn step_phases(
        &mut self,
        batch: &UpdateBatch,
        want_pairs: bool,
    ) -> Result<StepReport, DdmError> {
        self.make_step_room()?;
        if self.epoch == u32::MAX {
            // The batch counter wraps: no key may look as new as the next batches'.
            self.last.iter_mut().for_each(|k| *k.get_mut() = 0);
        }
        self.epoch = self.epoch.wrapping_add(1).max(1);
        // Phase 1: the updated regions' information, ordered and de-duplicated straight
        // into page-locked host memory (after the previous step's kernels and copies are
        // done with it), no intermediate vectors; then, by default, copied to the device.
        self.dev.synchronize()?;
        // (Both buffers are padded to one element when the engine holds no region: fuzz
        // finding ddm_diff-2; the slices passed on are the regions' own.)
        let regions = (self.n_pub + self.n_sub) as usize;
        let records = &mut self.staging.as_mut_slice()[..regions];
        let ranges = &mut self.staging_ranges.as_mut_slice()[..regions * self.dims];
        let staged = stage_into(
            batch,
            self.dims,
            (self.n_pub, self.n_sub),
            &mut self.last,
            self.epoch,
            (records, ranges),
            Hands {
                threads: self.threads,
                crew: self.next_crew.take(),
            },
        )?;
        let n = staged.records;
        self.staged_in_parallel = n as usize >= crate::layout::STAGE_PAR_MIN;
        self.staged_at = Some(Instant::now());
        if self.phase1 == Phase1::Copy && n > 0 {
            // Two DMA copies from page-locked memory (records, ranges), stream-ordered
            // before the kernels; one (ranges) for a dense batch, whose records the
            // kernels make.
            let (rec, rng) = (n as usize, n as usize * self.dims);
            if !staged.dense {
                let records = &self.staging.as_slice()[..rec];
                self.dev.write(&mut self.staging_dev, 0, records)?;
            }
            let ranges = &self.staging_ranges.as_slice()[..rng];
            self.dev.write(&mut self.staging_ranges_dev, 0, ranges)?;
        }
        if n == 0 {
            let overlaps = if self.approach.sorts() {
                0
            } else {
                self.read_overlaps()?
            };
            return Ok(StepReport {
                overlaps,
                pairs: want_pairs.then(Vec::new),
            });
        }
        if self.approach.sorts() {
            self.key_bound = self.key_bound.max(staged.max_lo0);
            self.end_bound = self.end_bound.max(staged.max_hi);
            self.chosen_dim = None;
        }
        match self.approach.clone() {
            Approach::Sweep | Approach::Bisect => {
                self.commit(staged)?;
                Ok(StepReport {
                    overlaps: 0,
                    pairs: want_pairs.then(Vec::new),
                })
            }
            Approach::Region => {
                // (commit_updates zeroes the step counters: no copy for that.)
                self.clear(n, self.staged_records(), staged.dense)?;
                self.commit(staged)?;
                self.match_region(staged)?;
                self.finish(staged, want_pairs)
            }
            Approach::Grid(_) if self.fused => {
                // Phase 2 and the unmapping, then the install and the compaction: two
                // launches where the paper's phases take four.
                let g = self.grid.as_ref().expect("grid engine has a grid");
                clear_and_unmap::launch(
                    self.dev,
                    LaunchConfig::linear(n * 32, BLOCK),
                    &self.table,
                    &g.table,
                    self.staged_records(),
                    n,
                    staged.dense as u32,
                )?;
                commit_and_compact::launch(
                    self.dev,
                    Self::linear(n.max(g.host.n_cells * 2)),
                    &self.table,
                    &g.table,
                    self.staged_records(),
                    self.staged_ranges(),
                    n,
                    staged.dense as u32,
                    self.epoch,
                    &self.updates,
                )?;
                map_regions::launch(
                    self.dev,
                    Self::linear(n),
                    &self.table,
                    &g.table,
                    &self.updates,
                    n,
                    0,
                )?;
                self.match_grid(n)?;
                self.finish(staged, want_pairs)
            }
            Approach::Grid(_) => {
                self.clear(n, self.staged_records(), staged.dense)?;
                let g = self.grid.as_ref().expect("grid engine has a grid");
                unmap_regions::launch(
                    self.dev,
                    Self::linear(n),
                    &self.table,
                    &g.table,
                    self.staged_records(),
                    n,
                    staged.dense as u32,
                )?;
                compact_cells::launch(self.dev, Self::linear(g.host.n_cells * 2), &g.table)?;
                self.commit(staged)?;
                map_regions::launch(
                    self.dev,
                    Self::linear(n),
                    &self.table,
                    &g.table,
                    &self.updates,
                    n,
                    0,
                )?;
                self.match_grid(n)?;
                self.finish(staged, want_pairs)
            }
        }
    }

    /// Phase 2 (both approaches): one warp per updated region.
    /// `records`: the staged records (before commit; none written when `dense`) or
    /// their device copy (after).
    pub(super) fn clear(
        &self,
        n: u32,
        records: In<'_, UpdatedRegion>,
        dense: bool,
    ) -> Result<(), DdmError> {
        let cfg = LaunchConfig::linear(n * 32, BLOCK);
        clear_overlaps::launch(self.dev, cfg, &self.table, records, n, dense as u32)?;
        Ok(())
    }

    /// The staged records, where the kernels read them: the device copy
    /// ([`Phase1::Copy`]) or the mapped host memory.
    pub(super) fn staged_records(&self) -> In<'_, UpdatedRegion> {
        match self.phase1 {
            Phase1::Copy => self.staging_dev.at(0),
            Phase1::Mapped => self.staging.at(0),
        }
    }

    /// The staged records' ranges, as [`Engine::staged_records`].
    pub(super) fn staged_ranges(&self) -> In<'_, Range> {
        match self.phase1 {
            Phase1::Copy => self.staging_ranges_dev.at(0),
            Phase1::Mapped => self.staging_ranges.at(0),
        }
    }

    pub(super) fn commit(&self, staged: StageCounts) -> Result<(), DdmError> {
        let n = staged.records;
        commit_updates::launch(
            self.dev,
            Self::linear(n),
            &self.table,
            self.staged_records(),
            self.staged_ranges(),
            n,
            staged.dense as u32,
            self.epoch,
            &self.updates,
        )?;
        Ok(())
    }

    /// Phase 3 of §III.B: updated publications against all subscriptions, then updated
    /// subscriptions against the publications not updated in this step.
    pub(super) fn match_region(&self, staged: StageCounts) -> Result<(), DdmError> {
        let shared = (2 * BLOCK as usize * self.dims * 8 + 8) as u32;
        let n_pub_upd = staged.n_pub_updates;
        let n_sub_upd = staged.records - n_pub_upd;
        let runs = [
            (0, n_pub_upd, self.n_pub, self.n_sub, 0u32),
            (n_pub_upd, n_sub_upd, 0, self.n_pub, 1u32),
        ];
        for (first, count, cand_base, n_cand, skip) in runs {
            if count == 0 || n_cand == 0 {
                continue;
            }
            let mut cfg = Self::linear(count).with_shared(shared);
            let tiles = n_cand.div_ceil(BLOCK);
            cfg.grid[1] = match self.slices {
                Slices::Paper => 1,
                Slices::Fill => FILL_BLOCKS.div_ceil(cfg.grid[0]).min(tiles),
                Slices::Exactly(k) => k,
            }
            .clamp(1, 65535);
            match_region::launch(
                self.dev,
                cfg,
                &self.table,
                &self.updates,
                first,
                count,
                cand_base,
                n_cand,
                skip,
                self.epoch,
            )?;
        }
        Ok(())
    }

    /// Phase 4 of §III.C.
    pub(super) fn match_grid(&self, n: u32) -> Result<(), DdmError> {
        let g = self.grid.as_ref().expect("grid engine has a grid");
        match_grid::launch(
            self.dev,
            Self::linear(n),
            &self.table,
            &g.table,
            &self.updates,
            n,
            self.epoch,
        )?;
        Ok(())
    }

    /// The last phase: copy back the counters and, when asked, the new pairs. A full
    /// pair list or cell list is grown and the step's matching redone (Phases 2 and 3
    /// are idempotent for a given region table).
    pub(super) fn finish(
        &mut self,
        staged: StageCounts,
        want_pairs: bool,
    ) -> Result<StepReport, DdmError> {
        let n = staged.records;
        self.gather_next_crew();
        loop {
            // One kernel writes the status and the pairs into page-locked host memory;
            // one wait for the whole step.
            let threads = if want_pairs {
                PUBLISH_THREADS.min(self.host.pair_cap.max(1))
            } else {
                1
            };
            publish_step::launch(
                self.dev,
                Self::linear(threads),
                &self.table,
                want_pairs as u32,
                self.status_host.at_mut(0),
                self.pairs_host.at_mut(0),
            )?;
            let wait = Instant::now();
            if let Some(at) = self.staged_at.filter(|_| self.times.enqueue_us == 0.0) {
                self.times.enqueue_us = (wait - at).as_secs_f64() * 1e6;
            }
            self.dev.synchronize()?;
            self.times.wait_us += wait.elapsed().as_secs_f64() * 1e6;
            let status = self.status_host.as_slice();
            let c: StepCounters = bytemuck::cast(status[0]);
            let grid_full = c.cell_overflow > 0;
            let list_full = c.new_pairs > self.host.pair_cap;
            if !grid_full && !list_full {
                let overlaps = status[1];
                let pairs = want_pairs
                    .then(|| copy_out(&self.pairs_host.as_slice()[..c.new_pairs as usize]));
                return Ok(StepReport { overlaps, pairs });
            }
            if list_full {
                let cap = c.new_pairs.checked_next_power_of_two().unwrap_or(u32::MAX);
                self.pairs = self.dev.alloc(cap as usize)?;
                self.pairs_host = self.dev.alloc_host(cap as usize)?;
                self.host.pairs = addr(&self.pairs);
                self.host.pair_cap = cap;
                self.dev.write(&mut self.table, 0, &[self.host])?;
            }
            if grid_full {
                let g = self.grid.take().expect("only the grid overflows");
                let cap = c
                    .cell_overflow
                    .checked_next_power_of_two()
                    .unwrap_or(u32::MAX);
                drop(g.slots);
                self.grid = Some(self.new_grid(g.spec, cap)?);
                let g = self.grid.as_ref().expect("just set");
                let all = self.n_pub + self.n_sub;
                map_regions::launch(
                    self.dev,
                    Self::linear(all),
                    &self.table,
                    &g.table,
                    &self.updates,
                    all,
                    1,
                )?;
            }
            self.dev.write(&mut self.status, 0, &[0u64])?;
            self.clear(n, self.updates.at(0), false)?;
            match self.approach {
                Approach::Region => self.match_region(staged)?,
                _ => self.match_grid(n)?,
            }
        }
    }

    pub(super) fn read_overlaps(&self) -> Result<u64, DdmError> {
        Ok(self.dev.read(&self.status)?[1])
    }
}
