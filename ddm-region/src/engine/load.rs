//! Loading a whole region set onto the device at once: the sorting engines' fast path
//! (page-locked staging filled in parallel, copies overlapping the fills).

use super::*;

impl<'d> Engine<'d> {
    /// Installs every region of `set`, as a step whose batch sets every region would
    /// ([`UpdateBatch::everything`]), on the fast path from host memory where it can: on
    /// the sorting engines (sweep, bisect) whose capacity is exactly the set's, the
    /// set's ranges are copied in parallel (all host threads) into page-locked staging,
    /// the regions' bounds found on the way, and the staging is copied by DMA straight
    /// into the region table ([`LOAD_CHUNKS`] chunks, each copied while the next is
    /// filled), which one kernel marks live: no records, no de-duplication; it returns
    /// when the copies are done ([`Engine::last_load_times`] tells the fills' share from
    /// the bus's). Elsewhere it is that step.
    ///
    /// ```
    /// use ddm_region::{Approach, Device, Engine, Kind, Range, RegionSet};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut set = RegionSet::new(1)?;
    /// set.push(Kind::Publication, 1, &[Range { lo: 0, hi: 10 }])?;
    /// set.push(Kind::Subscription, 2, &[Range { lo: 5, hi: 15 }])?;
    /// let dev = Device::emulator();
    /// let mut e = Engine::new(&dev, Approach::Bisect, 1, 1, 1)?;
    /// e.load(&set)?;
    /// assert_eq!(e.count()?, 1);
    /// // Two regions of one range each went to the device: 16 bytes.
    /// assert_eq!(e.last_load_times().bytes, 16);
    /// # Ok(()) }
    /// ```
    pub fn load(&mut self, set: &RegionSet) -> Result<(), DdmError> {
        let started = Instant::now();
        let exact =
            set.dims() == self.dims && set.n_pub() == self.n_pub && set.n_sub() == self.n_sub;
        if !self.approach.sorts() || !exact {
            self.step(&UpdateBatch::everything(set), false)?;
            return Ok(());
        }
        let d = self.dims;
        let n = (self.n_pub + self.n_sub) as usize * d;
        if n == 0 {
            return Ok(());
        }
        if self.epoch == u32::MAX {
            self.last.iter_mut().for_each(|k| *k.get_mut() = 0);
        }
        self.epoch = self.epoch.wrapping_add(1).max(1);
        // The previous kernels and copies are done with the staging memory.
        self.dev.synchronize()?;
        if self.pageable_load {
            return self.load_pageable(set, started);
        }
        let t = Instant::now();
        self.make_staging_ranges()?;
        let staging_us = t.elapsed().as_secs_f64() * 1e6;
        // The set's ranges in one numbering (publications first), as the region table
        // holds them, cut into chunks: while the calling thread copies chunk k to the
        // device (one DMA from page-locked memory, which waits for its end), the other
        // host threads fill chunk k + 1 of the staging. Each fill returns (largest lower
        // bound in dimension 0, largest upper bound in any dimension).
        let pubs = set.ranges(Kind::Publication);
        let subs = set.ranges(Kind::Subscription);
        let split = pubs.len();
        // Four tasks a host thread per chunk, so that every thread fills (a chunk of
        // 1M regions' ranges cut into tasks of 16384 regions was 8 tasks: half the
        // threads of a 16-core host idle, and the 1-D load bound by its fills), each
        // task whole regions.
        let threads = rayon::current_num_threads().max(1);
        let per_task = n
            .div_ceil(LOAD_CHUNKS * threads * 4)
            .max(MIN_FILL_TASK)
            .next_multiple_of(d);
        let chunk = n.div_ceil(LOAD_CHUNKS).next_multiple_of(per_task);
        let fill = |dst: &mut [Range], at: usize| -> (u32, u32) {
            dst.par_chunks_mut(per_task)
                .enumerate()
                .map(|(t, out)| {
                    let start = at + t * per_task;
                    let end = start + out.len();
                    // The publications' part, then the subscriptions'.
                    let cut = split.clamp(start, end) - start;
                    // A part wholly among the subscriptions takes no publication (its
                    // start is past them), one wholly among the publications no
                    // subscription (`end - split` would underflow).
                    // (Streaming stores: the CPU never reads the staging back. The
                    // bounds are found in the source, read anyway.)
                    let (mut lo0, mut hi) = (0, 0);
                    let mut part = |dst: &mut [Range], src: &[Range]| {
                        stream_copy(dst, src);
                        lo0 = src.iter().step_by(d).fold(lo0, |m, r| m.max(r.lo));
                        hi = src.iter().fold(hi, |m, r| m.max(r.hi));
                    };
                    if cut > 0 {
                        part(&mut out[..cut], &pubs[start..start + cut]);
                    }
                    if cut < out.len() {
                        part(&mut out[cut..], &subs[start + cut - split..end - split]);
                    }
                    (lo0, hi)
                })
                .reduce(|| (0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)))
        };
        // (Each fill timed: `LoadTimes::fill_us`.)
        let timed_fill = |dst: &mut [Range], at: usize| {
            let t = Instant::now();
            let found = fill(dst, at);
            (found, t.elapsed().as_secs_f64() * 1e6)
        };
        let dev = self.dev;
        let bounds = &mut self._bounds;
        let mut staging = &mut self.staging_ranges.as_mut_slice()[..n];
        let mut at = 0usize;
        let (first, rest) = std::mem::take(&mut staging).split_at_mut(chunk.min(n));
        staging = rest;
        let ((mut lo0, mut hi), mut fill_us) = timed_fill(first, 0);
        let mut pending: &[Range] = first;
        loop {
            let next_len = chunk.min(staging.len());
            let (next, rest) = std::mem::take(&mut staging).split_at_mut(next_len);
            staging = rest;
            let (copied, filled) = rayon::join(
                || dev.write(bounds, at, pending),
                || (next_len > 0).then(|| timed_fill(next, at + pending.len())),
            );
            copied?;
            at += pending.len();
            match filled {
                Some(((l, h), us)) => {
                    lo0 = lo0.max(l);
                    hi = hi.max(h);
                    fill_us += us;
                    pending = next;
                }
                None => break,
            }
        }
        let bytes = (n * std::mem::size_of::<Range>()) as u64;
        self.install_loaded(started, (staging_us, fill_us, bytes), (lo0, hi))
    }

    /// The end of a load, once its ranges are on the device: every region installed
    /// (`install_all`), the copies still under way waited for (the bus's share beyond
    /// the host's fills, `drain_us`), the load's times kept and the sorts' bounds raised
    /// to `(lo0, hi)` (largest lower bound in dimension 0, largest upper bound in any).
    fn install_loaded(
        &mut self,
        started: Instant,
        (staging_us, fill_us, bytes): (f64, f64, u64),
        (lo0, hi): (u32, u32),
    ) -> Result<(), DdmError> {
        install_all::launch(
            self.dev,
            Self::linear(self.n_pub + self.n_sub),
            &self.table,
            self.epoch,
        )?;
        let drain = Instant::now();
        self.dev.synchronize()?;
        self.load_times = LoadTimes {
            staging_us,
            fill_us,
            drain_us: drain.elapsed().as_secs_f64() * 1e6,
            total_us: started.elapsed().as_secs_f64() * 1e6,
            bytes,
        };
        self.key_bound = self.key_bound.max(lo0);
        self.end_bound = self.end_bound.max(hi);
        self.chosen_dim = None;
        Ok(())
    }

    /// [`Engine::load`]'s fast path with [`Engine::set_pageable_load`]: the set's
    /// publications' and subscriptions' ranges copied straight into the region table
    /// (two copies of pageable memory, which the driver stages), while the host's other
    /// threads find the bounds the sorts need.
    fn load_pageable(&mut self, set: &RegionSet, started: Instant) -> Result<(), DdmError> {
        let d = self.dims;
        let pubs = set.ranges(Kind::Publication);
        let subs = set.ranges(Kind::Subscription);
        let dev = self.dev;
        let bounds = &mut self._bounds;
        // (Largest lower bound in dimension 0, largest upper bound in any dimension.)
        let found = |rs: &[Range]| -> (u32, u32) {
            rs.par_chunks(MIN_FILL_TASK.next_multiple_of(d))
                .map(|c| {
                    let lo0 = c.iter().step_by(d).fold(0, |m, r| m.max(r.lo));
                    (lo0, c.iter().fold(0, |m, r| m.max(r.hi)))
                })
                .reduce(|| (0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)))
        };
        let (copied, ((lo0, hi), fill_us)) = rayon::join(
            || -> Result<(), GpuError> {
                dev.write(bounds, 0, pubs)?;
                dev.write(bounds, pubs.len(), subs)
            },
            || {
                let t = Instant::now();
                let (a, b) = (found(pubs), found(subs));
                (
                    (a.0.max(b.0), a.1.max(b.1)),
                    t.elapsed().as_secs_f64() * 1e6,
                )
            },
        );
        copied?;
        let bytes = ((pubs.len() + subs.len()) * std::mem::size_of::<Range>()) as u64;
        self.install_loaded(started, (0.0, fill_us, bytes), (lo0, hi))
    }
}
