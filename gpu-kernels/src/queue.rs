//! [`Queue`]s of copies beside a [`Device`]'s stream, and [`Signal`]s between them: so that
//! a pipeline copies one batch in and another's results out while the device's stream
//! runs the kernels of a third (on a GPU its copy engines and its SMs work at once).
//!
//! A queue runs its copies in order; a [`Signal`] marks a point of a queue (or of the
//! device's stream) that another queue, the device's stream or the host can wait for.
//! On the emulator a copy is done when its call returns, and signals are always reached.
//!
//! ```
//! use gpu_kernels::Device;
//! # fn main() -> Result<(), gpu_kernels::GpuError> {
//! let dev = Device::emulator();
//! let copies = dev.queue()?;
//! let mut staged = dev.alloc_host::<u32>(4)?;
//! staged.as_mut_slice().copy_from_slice(&[1, 2, 3, 4]);
//! let mut buf = dev.alloc::<u32>(4)?;
//! // SAFETY: nothing touches `staged` or `buf` until the signal is reached.
//! unsafe { dev.write_on(&copies, &mut buf, 0, &staged, 0..4)? };
//! let copied = dev.signal(Some(&copies))?;
//! dev.wait(None, &copied)?; // the device's stream: kernels queued from now see the copy
//! dev.reach(&copied)?; // the host waits too
//! assert_eq!(dev.read(&buf)?, vec![1, 2, 3, 4]);
//! # Ok(()) }
//! ```

use crate::device::{check_range, Backend, Buffer, GpuError, HostBuffer, Mem};
use crate::Device;
use std::ops::Range;
use std::sync::atomic::Ordering;

/// A queue of copies of its own beside a device's stream ([`Device::queue`]): on a GPU a
/// CUDA stream. Dropping it waits for its copies.
pub struct Queue {
    #[cfg(feature = "cuda")]
    stream: Option<std::sync::Arc<cudarc::driver::CudaStream>>,
}

impl Queue {
    /// A GPU queue's CUDA stream (every queue of a GPU has one).
    #[cfg(feature = "cuda")]
    pub(crate) fn cuda_stream(&self) -> &std::sync::Arc<cudarc::driver::CudaStream> {
        self.stream.as_ref().expect("a GPU's queue has a stream")
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        #[cfg(feature = "cuda")]
        if let Some(s) = &self.stream {
            // A copy may still use buffers freed after the queue: wait for it.
            let _ = s.synchronize();
        }
    }
}

/// A point of a queue or of a device's stream ([`Device::signal`]): reached once the
/// work queued there before it has ended.
pub struct Signal {
    #[cfg(feature = "cuda")]
    event: Option<cudarc::driver::CudaEvent>,
    /// For a point of the device's stream: its typed launches so far (mapped host
    /// buffers they used may be read once the signal is reached).
    launched: Option<u64>,
}

impl Device {
    /// A new [`Queue`] of copies beside this device's stream.
    pub fn queue(&self) -> Result<Queue, GpuError> {
        match &self.backend {
            Backend::Emu => Ok(Queue {
                #[cfg(feature = "cuda")]
                stream: None,
            }),
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => Ok(Queue {
                stream: Some(g.new_queue()?),
            }),
        }
    }

    /// Queues a copy of `src[range]` (page-locked host memory) into `dst[offset..]` on
    /// `q` (on a GPU, a DMA transfer that runs while the host goes on).
    ///
    /// # Safety
    /// The host must not write `src[range]` until a [`Signal`] of `q` queued after this
    /// copy is reached ([`Device::reach`]), nor free `dst` or queue work that reads or
    /// writes `dst[offset..]` on another queue or the device's stream before waiting for
    /// such a signal ([`Device::wait`]).
    pub unsafe fn write_on<T: bytemuck::Pod>(
        &self,
        q: &Queue,
        dst: &mut Buffer<T>,
        offset: usize,
        src: &HostBuffer<T>,
        range: Range<usize>,
    ) -> Result<(), GpuError> {
        // SAFETY: the caller keeps the host from writing these elements while the copy
        // may read them; this call only reads them.
        let src = unsafe { &src.as_slice_unchecked()[range] };
        self.copy_in(dst, offset, src, Some(q), "Device::write_on")
    }

    /// Queues a copy of `src[offset..offset + range.len()]` into `dst[range]` (page-locked
    /// host memory) on `q`.
    ///
    /// # Safety
    /// The host must not read or write `dst[range]` until a [`Signal`] of `q` queued after
    /// this copy is reached ([`Device::reach`]); work that writes `src` must have been
    /// waited for by `q` ([`Device::wait`]) and `src` must not be freed or written before
    /// such a signal is waited for.
    pub unsafe fn read_on<T: bytemuck::Pod>(
        &self,
        q: &Queue,
        src: &Buffer<T>,
        offset: usize,
        dst: &mut HostBuffer<T>,
        range: Range<usize>,
    ) -> Result<(), GpuError> {
        let _ = q;
        // SAFETY: the caller keeps the host off these elements until the copy has ended.
        let dst = unsafe { &mut dst.as_mut_slice_unchecked()[range] };
        check_range(src.len(), offset, dst.len(), "Device::read_on");
        let size = std::mem::size_of::<T>();
        let bytes: &mut [u8] = bytemuck::cast_slice_mut(dst);
        match (&self.backend, &src.mem) {
            // SAFETY: `check_range` keeps the range within the buffer's allocation; the
            // destination is a distinct allocation.
            (Backend::Emu, Mem::Host { ptr, .. }) => unsafe {
                std::ptr::copy_nonoverlapping(
                    ptr.as_ptr().add(offset * size),
                    bytes.as_mut_ptr(),
                    bytes.len(),
                );
            },
            #[cfg(feature = "cuda")]
            (Backend::Gpu(g), Mem::Gpu(s)) => {
                g.read_on(q.cuda_stream(), s, offset * size, bytes)?
            }
            #[allow(unreachable_patterns)]
            _ => panic!("buffer used with a device it was not allocated on"),
        }
        Ok(())
    }

    /// A [`Signal`] at the current end of `q`, or of the device's stream (`None`).
    pub fn signal(&self, q: Option<&Queue>) -> Result<Signal, GpuError> {
        let launched = q
            .is_none()
            .then(|| self.clock.launched.load(Ordering::SeqCst));
        match &self.backend {
            Backend::Emu => Ok(Signal {
                #[cfg(feature = "cuda")]
                event: None,
                launched,
            }),
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => {
                let stream = q.and_then(|q| q.stream.as_ref());
                Ok(Signal {
                    event: Some(g.signal(stream)?),
                    launched,
                })
            }
        }
    }

    /// Makes `q` (or the device's stream, `None`) wait for `s` before the work queued on
    /// it from now on; the host goes on.
    pub fn wait(&self, q: Option<&Queue>, s: &Signal) -> Result<(), GpuError> {
        let _ = (q, s);
        match &self.backend {
            Backend::Emu => Ok(()),
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => {
                let event = s.event.as_ref().expect("a GPU's signal has an event");
                g.wait_on(q.and_then(|q| q.stream.as_ref()), event)
            }
        }
    }

    /// Waits on the host until `s` is reached.
    pub fn reach(&self, s: &Signal) -> Result<(), GpuError> {
        match &self.backend {
            Backend::Emu => {}
            #[cfg(feature = "cuda")]
            Backend::Gpu(g) => g.reach(s.event.as_ref().expect("a GPU's signal has an event"))?,
        }
        if let Some(n) = s.launched {
            self.clock.synced.fetch_max(n, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// Large host tables copied to the device through a few page-locked parts
/// ([`Device::stager`]): each part of a table copied on all cores into the next free
/// page-locked part, then its copy queued on a [`Queue`] of the stager's own, a DMA
/// transfer that runs while the host fills the next part. A plain [`Device::write`]
/// from pageable memory goes through the driver's own staging on the calling thread
/// alone: the CLCB cell index's tables (about 515 MB copied) took 0.068-0.075 s that way
/// on an H200's host (7 GB/s), 0.023-0.029 s through a stager of four 4 MiB parts
/// (about 20 GB/s).
pub struct Stager {
    // Declared first, dropped first: its drop waits for the copies reading the parts.
    queue: Queue,
    /// The page-locked parts, each with the point of the queue after the last copy
    /// that reads it.
    parts: Vec<(HostBuffer<u8>, Option<Signal>)>,
    /// The part the next piece is staged in.
    next: usize,
}

/// Bytes of a staged piece that one task of the pool copies.
const STAGE_TASK_BYTES: usize = 256 << 10;

impl Device {
    /// A [`Stager`] of `parts` page-locked parts (at least two) of `part_bytes` each (at
    /// least 4 KiB, rounded up to 4 KiB): allocating page-locked memory takes about a
    /// millisecond a megabyte on an H200's host, so a program that opens the device on a
    /// thread of its own makes it there.
    pub fn stager(&self, parts: usize, part_bytes: usize) -> Result<Stager, GpuError> {
        let part_bytes = part_bytes.max(1).next_multiple_of(4096);
        let parts = (0..parts.max(2))
            .map(|_| Ok((self.alloc_host::<u8>(part_bytes)?, None)))
            .collect::<Result<_, GpuError>>()?;
        Ok(Stager {
            queue: self.queue()?,
            parts,
            next: 0,
        })
    }
}

impl Stager {
    /// Bytes of each page-locked part.
    pub fn part_bytes(&self) -> usize {
        self.parts.first().map_or(0, |p| p.0.len())
    }

    /// Queues a copy of `src` into `dst[offset..]` (`dev` the device the stager was
    /// made on), piece by piece through the page-locked parts; returns once every
    /// piece is staged, the last copies possibly still running. They run after the work
    /// queued on the device's stream before this call (a new buffer's zeroing); the
    /// device's stream and the host see them once [`Stager::finish`] has returned. A
    /// type aligned past 16 bytes, or larger than a part, is copied by
    /// [`Device::write`] instead.
    pub fn write<T: bytemuck::Pod + Send + Sync>(
        &mut self,
        dev: &Device,
        dst: &mut Buffer<T>,
        offset: usize,
        src: &[T],
    ) -> Result<(), GpuError> {
        check_range(dst.len(), offset, src.len(), "Stager::write");
        let size = std::mem::size_of::<T>();
        if src.is_empty() {
            return Ok(());
        }
        if std::mem::align_of::<T>() > 16 || size == 0 || size > self.part_bytes() {
            return dev.write(dst, offset, src);
        }
        let after = dev.signal(None)?;
        dev.wait(Some(&self.queue), &after)?;
        let per = self.part_bytes() / size;
        for (k, piece) in src.chunks(per).enumerate() {
            let n = self.parts.len();
            let (buf, pending) = &mut self.parts[self.next];
            self.next = (self.next + 1) % n;
            if let Some(s) = pending.take() {
                dev.reach(&s)?;
            }
            // SAFETY: the copy that last read this part has ended (its signal was reached
            // just above, or it was never read), and no kernel is given a stager's part.
            let bytes = unsafe { buf.as_mut_slice_unchecked() };
            // Page-locked memory is page-aligned, the emulator's 16-byte aligned (and
            // `T`'s alignment is at most 16, checked above).
            let staged: &mut [T] =
                bytemuck::cast_slice_mut(&mut bytes[..std::mem::size_of_val(piece)]);
            crate::crew::par_copy(staged, piece, (STAGE_TASK_BYTES / size).max(1));
            dev.copy_in(
                dst,
                offset + k * per,
                staged,
                Some(&self.queue),
                "Stager::write",
            )?;
            *pending = Some(dev.signal(Some(&self.queue))?);
        }
        Ok(())
    }

    /// Waits on the host until every copy queued by [`Stager::write`] has ended: the
    /// buffers hold the tables, for the host's reads and every queue's work from now on.
    pub fn finish(&mut self, dev: &Device) -> Result<(), GpuError> {
        let done = dev.signal(Some(&self.queue))?;
        dev.reach(&done)?;
        for (_, pending) in &mut self.parts {
            *pending = None;
        }
        Ok(())
    }
}

/// A call's events in launches of a pipeline that grow from `first` by `growth` (at least
/// one event more each time; 2 where `growth` is not finite, never below 1) up to `per`
/// events: the first launch's staging, which nothing overlaps, is short. Yields ranges of
/// `events`, in order, every event once. [`Ramp::tapered`] shrinks them again at the end,
/// so that the last launch's kernels, which nothing overlaps either, are short too.
///
/// ```
/// use gpu_kernels::Ramp;
/// let launches: Vec<_> = Ramp::new(0..20, 2, 2.0, 8).collect();
/// assert_eq!(launches, vec![0..2, 2..6, 6..14, 14..20]);
/// let sizes: Vec<_> = Ramp::tapered(0..40, 2, 2.0, 8).map(|l| l.len()).collect();
/// assert_eq!(sizes, vec![2, 4, 8, 6, 6, 8, 4, 2]);
/// ```
pub struct Ramp {
    next: usize,
    /// The launches' sizes, in order.
    sizes: std::collections::VecDeque<usize>,
}

impl Ramp {
    /// The launches of `events`, the first of `first` events (within 1..=`per`; `per`
    /// at least 1).
    pub fn new(events: Range<usize>, first: usize, growth: f64, per: usize) -> Ramp {
        let (mut s, per) = Ramp::start(first, per);
        let mut sizes = std::collections::VecDeque::new();
        let mut rest = events.len();
        while rest > 0 {
            sizes.push_back(s.min(rest));
            rest -= s.min(rest);
            s = Ramp::grown(s, growth, per);
        }
        Ramp {
            next: events.start,
            sizes,
        }
    }

    /// The launches of `events` growing as [`Ramp::new`]'s from `first` and shrinking
    /// in the same steps at the end, back to `first` (launches of at most `per` in
    /// the middle; where the events are too few for the whole ramp, the ones left over
    /// at its top are cut in two).
    pub fn tapered(events: Range<usize>, first: usize, growth: f64, per: usize) -> Ramp {
        let (mut s, per) = Ramp::start(first, per);
        let (mut front, mut back) = (Vec::new(), Vec::new());
        let mut rest = events.len();
        while rest > 0 {
            if rest <= 2 * s {
                let half = if rest <= s { 0 } else { rest / 2 };
                front.push(rest - half);
                back.extend((half > 0).then_some(half));
                break;
            }
            front.push(s);
            back.push(s);
            rest -= 2 * s;
            if s == per {
                while rest > 2 * per {
                    front.push(per);
                    rest -= per;
                }
            } else {
                s = Ramp::grown(s, growth, per);
            }
        }
        front.extend(back.into_iter().rev());
        Ramp {
            next: events.start,
            sizes: front.into(),
        }
    }

    fn start(first: usize, per: usize) -> (usize, usize) {
        let per = per.max(1);
        (first.clamp(1, per), per)
    }

    fn grown(s: usize, growth: f64, per: usize) -> usize {
        let growth = if growth.is_finite() {
            growth.max(1.0)
        } else {
            2.0
        };
        ((s as f64 * growth).ceil() as usize).max(s + 1).min(per)
    }
}

impl Iterator for Ramp {
    type Item = Range<usize>;

    fn next(&mut self) -> Option<Range<usize>> {
        let n = self.sizes.pop_front()?;
        let now = self.next..self.next + n;
        self.next += n;
        Some(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ramp_covers_the_events_once_in_launches_growing_to_a_full_one() {
        for (first, growth, per, n) in [
            (8192, 2.0, 65_536, 262_144),
            (4096, 1.5, 65_536, 300_001),
            (1, 1.0, 7, 50),
            (100, 3.0, 9, 40),
            (3, f64::NAN, 64, 1000),
            (0, 0.5, 5, 17),
        ] {
            let launches: Vec<Range<usize>> = Ramp::new(10..10 + n, first, growth, per).collect();
            let at = format!("first {first}, growth {growth}, per {per}, {n} events");
            assert_eq!(launches[0].len(), first.clamp(1, per).min(n), "{at}");
            let mut next = 10;
            for (k, l) in launches.iter().enumerate() {
                assert_eq!(l.start, next, "{at}: launch {k} follows the one before");
                assert!(
                    !l.is_empty() && l.len() <= per,
                    "{at}: launch {k} of {}",
                    l.len()
                );
                let last = k + 1 == launches.len();
                if k > 0 && !last {
                    assert!(
                        l.len() > launches[k - 1].len() || l.len() == per,
                        "{at}: launch {k} grows"
                    );
                }
                next = l.end;
            }
            assert_eq!(next, 10 + n, "{at}: every event once");
        }
    }

    #[test]
    fn a_tapered_ramp_covers_the_events_once_and_ends_as_it_began() {
        for (first, growth, per, n) in [
            (8192, 2.0, 65_536, 65_536),
            (4096, 2.0, 32_768, 65_536),
            (4096, 1.5, 65_536, 300_001),
            (1, 1.0, 7, 50),
            (100, 3.0, 9, 40),
            (3, f64::NAN, 64, 1000),
            (0, 0.5, 5, 17),
            (10, 2.0, 64, 15),
            (10, 2.0, 64, 1),
        ] {
            let launches: Vec<Range<usize>> =
                Ramp::tapered(10..10 + n, first, growth, per).collect();
            let at = format!("first {first}, growth {growth}, per {per}, {n} events");
            let first = first.clamp(1, per);
            let mut next = 10;
            for (k, l) in launches.iter().enumerate() {
                assert_eq!(l.start, next, "{at}: launch {k} follows the one before");
                assert!(!l.is_empty() && l.len() <= per, "{at}: launch {k}");
                next = l.end;
            }
            assert_eq!(next, 10 + n, "{at}: every event once");
            if n >= 2 * first {
                assert_eq!(launches[0].len(), first, "{at}: the first launch");
                assert_eq!(
                    launches.last().unwrap().len(),
                    first,
                    "{at}: the last launch"
                );
            }
        }
    }

    #[test]
    fn copies_on_a_queue_land_where_asked_and_back() {
        let dev = Device::emulator();
        let q = dev.queue().unwrap();
        let mut host = dev.alloc_host::<u32>(6).unwrap();
        host.as_mut_slice().copy_from_slice(&[9, 8, 7, 6, 5, 4]);
        let mut buf = dev.alloc::<u32>(5).unwrap();
        // SAFETY: the signal below is reached before the host touches either again.
        unsafe { dev.write_on(&q, &mut buf, 1, &host, 2..6).unwrap() };
        let mut back = dev.alloc_host::<u32>(3).unwrap();
        // SAFETY: as above.
        unsafe { dev.read_on(&q, &buf, 2, &mut back, 1..3).unwrap() };
        let s = dev.signal(Some(&q)).unwrap();
        dev.wait(None, &s).unwrap();
        dev.reach(&s).unwrap();
        assert_eq!(dev.read(&buf).unwrap(), vec![0, 7, 6, 5, 4]);
        assert_eq!(back.as_slice(), &[0, 6, 5]);
    }

    #[test]
    fn a_stager_copies_tables_of_any_record_through_its_parts() {
        let dev = Device::emulator();
        let mut st = dev.stager(2, 1).unwrap();
        assert_eq!(st.part_bytes(), 4096);
        let words: Vec<u32> = (0..5000).collect();
        let pairs: Vec<[u64; 2]> = (0..700).map(|i| [i, 3 * i]).collect();
        let mut a = dev.alloc::<u32>(5003).unwrap();
        let mut b = dev.alloc::<[u64; 2]>(700).unwrap();
        st.write(&dev, &mut a, 3, &words).unwrap();
        st.write(&dev, &mut b, 0, &pairs).unwrap();
        st.write(&dev, &mut a, 0, &[]).unwrap();
        st.finish(&dev).unwrap();
        let back = dev.read(&a).unwrap();
        assert_eq!(&back[..3], &[0, 0, 0]);
        assert_eq!(&back[3..], &words[..]);
        assert_eq!(dev.read(&b).unwrap(), pairs);
    }

    #[test]
    #[should_panic(expected = "Device::write_on")]
    fn a_copy_past_the_buffer_is_refused() {
        let dev = Device::emulator();
        let q = dev.queue().unwrap();
        let host = dev.alloc_host::<u32>(4).unwrap();
        let mut buf = dev.alloc::<u32>(2).unwrap();
        // SAFETY: nothing else uses the buffers.
        unsafe { dev.write_on(&q, &mut buf, 0, &host, 0..4).unwrap() };
    }
}
