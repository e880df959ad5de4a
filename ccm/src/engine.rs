//! The CCM matcher on a [`Device`] (the GPU or the host emulator: one engine, the same
//! kernels).
//!
//! Per event (§4, the paper's mode, [`Ccm::match_event`]): the host selects the rows of
//! the event's names through `Names` and fills table `Input` (one copy to the device),
//! launches Algorithm 1 ([`ccm_kernels::ccm_match()`]) once, copies `Interfaces` back:
//! one stream, one synchronisation. [`Reset::InKernel`] (§4.3, the default) alternates
//! two copies of `Count` and `Interfaces`, the kernel zeroing the idle one;
//! [`Reset::Memset`] zeroes the single copy with two `cudaMemset`s first (Fig. 5).
//!
//! Beyond the paper, per event: [`Config::inline_events`] passes `Input` in the launch
//! parameters (no copy in); [`Config::mapped_output`] has the kernel append the matched
//! interfaces to a list in page-locked host memory mapped into the device (no copy
//! out). With both (the low-latency path) an event costs one launch and one
//! synchronisation, with nothing copied either way.
//!
//! Batched ([`Ccm::match_batch`], beyond the paper): many events of an [`EventBatch`] per
//! launch of [`ccm_kernels::ccm_match_batch()`]. The batch's dictionaries are
//! translated once per call and each launch's attributes copied as the batch holds
//! them; [`ccm_kernels::batch::ccm_encode_batch()`] encodes them on the device (as for
//! [`crate::GpuIndex`]), and the host decodes launch `k`'s answers while the device
//! matches launch `k + 1`.
//!
//! Persistent ([`Config::persistent`], beyond the paper): the paper's matching (§4.2;
//! round-tagged counters instead of §4.3's reset) in a persistent kernel ([`ccm_kernels::ccm_persistent()`],
//! facility [`gpu_kernels::persist`]) launched once, one block per SM: the host writes
//! each event's `Input` into a ring of slots in page-locked mapped host memory, the
//! kernel answers into mapped host memory, and the host reads the answer when its
//! sequence number appears. No launch, no copy and no synchronisation per event; with
//! [`Ccm::match_pipelined`] several events are in flight in the ring at once. **The
//! GPU busy-waits while the mode is on** (one lane per SM polls); dropping the engine
//! stops the kernel and frees the GPU. An update ([`Ccm::add`], [`Ccm::remove`]) or an
//! event longer than the ring's slots stops the kernel, and the next event starts a
//! new one with the tables up to date.
//!
//! Updates ([`Ccm::add`], [`Ccm::remove`]): the host tables change in place; the next
//! match writes only the changed rows and filter slots to the device, or re-uploads
//! the tables when a row outgrew its room.

use crate::batch::EventBatch;
use crate::index::DevDicts;
use crate::layout::{LayoutError, SubId, Tables};
use crate::model::{Event, InterfaceId, Subscription};
use ccm_kernels::batch::{ccm_encode_batch, BatchAttr, ENCODE_BLOCK};
use ccm_kernels::{DevAttr, DevConstraint, DevEvent, FilterMajorTables};
use gpu_kernels::persist::{Persistent, Ring, RingConfig};
use gpu_kernels::{Buffer, Device, GpuError, HostBuffer, LaunchConfig};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

/// How `Count` and `Interfaces` are reset between events (§4.3, Fig. 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reset {
    /// Two copies; the kernel zeroes the idle one (the paper's final version, "Kernel").
    InKernel,
    /// One copy, zeroed by two `cudaMemset`s before each launch ("Memset").
    Memset,
}

/// Engine options. `Config::default()` is the paper's configuration (in-kernel reset,
/// no grouping, 256 threads per block).
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub reset: Reset,
    /// Sort each row of `Constraints` by type, operator and value (§4.2).
    pub grouping: bool,
    /// Threads per block of Algorithm 1.
    pub block: u32,
    /// Keep the batched kernel's tables on the device (more memory).
    pub batch_tables: bool,
    /// Events per launch of the batched kernel.
    pub batch_events: usize,
    /// Events per block of the batched kernel (their signatures sit in shared memory).
    pub batch_chunk: u32,
    /// Beyond the paper: pass table `Input` in the launch's parameters (no copy to the
    /// device) when the event fits ([`ccm_kernels::INLINE_ATTRS`] attributes with
    /// constrained names, strings up to [`ccm_kernels::INLINE_BYTES`] bytes). `false`
    /// keeps the paper's copy of `Input`.
    pub inline_events: bool,
    /// Beyond the paper: the kernel also writes the matched interfaces, as a list, into
    /// page-locked host memory mapped into the device ([`Device::alloc_host`]), which the
    /// host reads after the synchronisation: no copy of `Interfaces` back. `Count` and
    /// `Interfaces` stay on the device, reset as [`Config::reset`] says. `false` keeps
    /// the paper's copy back.
    pub mapped_output: bool,
    /// Beyond the paper: match single events in a persistent kernel fed through a ring
    /// in mapped host memory (see the module's documentation); the GPU busy-waits while
    /// the engine lives. [`Config::reset`], [`Config::inline_events`] and
    /// [`Config::mapped_output`] do not apply to it (it resets in the kernel, and its
    /// input and output are in mapped memory); [`Ccm::match_batch`] is unchanged.
    pub persistent: bool,
    /// Slots of the persistent kernel's ring: the most events in flight.
    pub persistent_slots: u32,
    /// Blocks of [`Config::block`] threads per SM of the persistent kernel (fewer: fewer
    /// blocks to broadcast each event to and to count in; more: more threads for
    /// events that select many constraints). Fewer when fewer fit an SM. 2 by default:
    /// in the default scenario two blocks of 256 threads per SM answered faster, at p50
    /// and p99, than one (example `persist_tune`; its log is indexed in
    /// results/gpu-logs/README.md).
    pub persistent_blocks_per_sm: u32,
    /// Blocks of the persistent kernel's grid in all, when not 0 (at most as many as
    /// fit the GPU at once); 0: [`Config::persistent_blocks_per_sm`] per SM.
    pub persistent_blocks: u32,
}

impl Config {
    /// The persistent-kernel path (beyond the paper, see [`Config::persistent`]).
    pub fn persistent() -> Config {
        Config {
            persistent: true,
            ..Config::default()
        }
    }

    /// The low-latency per-event path (beyond the paper): the paper's in-kernel reset,
    /// `Input` in the launch parameters and the mapped output, i.e. one launch and one
    /// synchronisation per event and nothing copied.
    pub fn low_latency() -> Config {
        Config {
            inline_events: true,
            mapped_output: true,
            ..Config::default()
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            reset: Reset::InKernel,
            grouping: false,
            block: 256,
            batch_tables: false,
            batch_events: 16_384,
            batch_chunk: 256,
            inline_events: false,
            mapped_output: false,
            persistent: false,
            persistent_slots: 32,
            persistent_blocks_per_sm: 2,
            persistent_blocks: 0,
        }
    }
}

/// Errors of the engine.
#[derive(Debug, thiserror::Error)]
pub enum CcmError {
    #[error(transparent)]
    Layout(#[from] LayoutError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error("limit exceeded: {what}: {have} > {max}")]
    Limit {
        what: &'static str,
        have: u64,
        max: u64,
    },
    #[error("persistent kernel: {0}")]
    Persistent(String),
}

/// Per-event time split of Fig. 5, in milliseconds (host clock, with a device
/// synchronisation after each phase).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timing {
    /// Building `Input` through `Names`, copying it in (plus the memsets of `Memset`).
    pub copy_in_ms: f64,
    pub kernel_ms: f64,
    /// Copying `Interfaces` back and decoding it (with [`Config::mapped_output`]:
    /// reading the list from host memory).
    pub copy_out_ms: f64,
}

/// Largest attribute string (bytes) the kernel copies into shared memory.
const SH_STR_MAX: u32 = 16 * 1024;

/// The device copies of the tables, with their capacities (their lengths). The four
/// that [`ccm_kernels::ccm_persistent()`] reads are shared with its handle, which keeps
/// them alive (and the host from writing them: [`table_mut`]) while the kernel runs.
struct DevTables {
    constraints: Arc<Buffer<DevConstraint>>,
    row_start: Buffer<u32>,
    size_c: Buffer<u32>,
    cpool: Arc<Buffer<u8>>,
    size_f: Arc<Buffer<u32>>,
    filter_iface: Arc<Buffer<u32>>,
    count: [Buffer<u32>; 2],
    interfaces: [Buffer<u32>; 2],
    /// The mapped output's list counters, one per parity (the idle one reset in-kernel).
    tally: Buffer<u32>,
    batch: Option<BatchTables>,
}

struct BatchTables {
    fconstraints: Buffer<DevConstraint>,
    filter_start: Buffer<u32>,
    filter_sig: Buffer<u64>,
}

/// A table shared with the persistent kernel, for writing: the kernel must have been
/// stopped (its handle dropped), or the host would write memory the kernel reads.
fn table_mut<T>(b: &mut Arc<Buffer<T>>) -> Result<&mut Buffer<T>, CcmError> {
    Arc::get_mut(b).ok_or_else(|| {
        CcmError::Persistent("a table changed while the persistent kernel reads it".into())
    })
}

/// Room for `n` elements with 1/8 slack to grow into (never 0).
pub(crate) fn room(n: usize) -> usize {
    (n + n / 8 + 16).max(1)
}

/// Allocates `room(len)` and writes `data` at the start.
fn upload_with_room<T: bytemuck::Pod>(dev: &Device, data: &[T]) -> Result<Buffer<T>, GpuError> {
    let mut b = dev.alloc::<T>(room(data.len()))?;
    if !data.is_empty() {
        dev.write(&mut b, 0, data)?;
    }
    Ok(b)
}

/// CCM on one device.
pub struct Ccm<'d> {
    dev: &'d Device,
    cfg: Config,
    t: Tables,
    d: DevTables,
    parity: usize,
    input: Buffer<u8>,
    attrs: Vec<DevAttr>,
    bytes: Vec<u8>,
    packed: Vec<u8>,
    flags: Vec<u32>,
    /// The mapped output (with [`Config::mapped_output`]).
    mapped: Option<Mapped>,
    /// The running persistent kernel (with [`Config::persistent`]; `None` until the
    /// first event, and after an update stopped it).
    pers: Option<PersistState>,
    /// The batched kernel's input and output buffers, kept from one
    /// [`Ccm::match_batch`] to the next (a stream matched window by window allocates
    /// them once).
    batch_bufs: Option<BatchBufs>,
    /// The last batch's dictionaries on the device (their buffers reused).
    batch_dicts: Option<DevDicts>,
}

/// A running [`ccm_kernels::ccm_persistent()`]. Its handle owns the kernel's own device
/// state (moved in at the launch, freed once the kernel has stopped) and a share of the
/// tables it reads.
struct PersistState {
    run: Persistent,
    /// Bytes of the kernel's own device state: `Count` and `Interfaces` as round-tagged
    /// 64-bit words (see [`ccm_kernels::ccm_persistent()`]), the two list counters and the
    /// two lists.
    bytes: usize,
    /// Interfaces the answers can hold.
    n_if: usize,
    /// Events submitted to this kernel (it is restarted before its 32-bit round tags
    /// wrap).
    submitted: u64,
}

/// What [`Ccm::submit_persistent`] did with an event.
enum Submitted {
    /// Submitted: its answer will come from the kernel.
    Yes,
    /// Not submitted: no attribute with a constrained name, the answer is empty.
    Empty,
    /// Not submitted: it needs a new kernel, after the events in flight.
    NewKernel,
}

/// Words of a persistent request: header, attributes, string bytes.
fn request_words(n_attrs: usize, bytes: usize) -> usize {
    1 + ccm_kernels::PERSIST_ATTR_WORDS * n_attrs + bytes.div_ceil(8)
}

/// The mapped output's host side: the list the kernel appends `seq << 32 | interface`
/// to, the event sequence number, and which counter of `DevTables::tally` is in use.
struct Mapped {
    out: HostBuffer<u64>,
    seq: u32,
    parity: usize,
}

impl Mapped {
    fn new(dev: &Device, n_interfaces: usize) -> Result<Mapped, GpuError> {
        Ok(Mapped {
            out: dev.alloc_host(room(n_interfaces))?,
            seq: 1,
            parity: 0,
        })
    }
}

impl<'d> Ccm<'d> {
    /// Deploys `subs` on `dev` (Table 2's "deployment": layout on the host, allocation
    /// and copies to the device).
    ///
    /// ```
    /// use ccm::{Ccm, Config, Constraint, Event, Filter, InterfaceId, Op, Subscription, Value};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Interface 1 wants hot readings; interface 2 wants anything from area "north".
    /// let hot = Constraint::new("temp", Op::Gt, Value::Int(30))?;
    /// let north = Constraint::new("area", Op::Prefix, Value::Str("north".into()))?;
    /// let subs = vec![
    ///     Subscription { interface: InterfaceId(1), filter: Filter::new(vec![hot])? },
    ///     Subscription { interface: InterfaceId(2), filter: Filter::new(vec![north])? },
    /// ];
    /// let dev = gpu_kernels::Device::emulator();
    /// let mut ccm = Ccm::new(&dev, &subs, Config { block: 32, ..Config::default() })?;
    /// let e = Event::from_pairs([
    ///     ("temp", Value::Int(35)),
    ///     ("area", Value::Str("north-1".into())),
    /// ])?;
    /// assert_eq!(ccm.match_event(&e)?, vec![InterfaceId(1), InterfaceId(2)]);
    /// let e = Event::from_pairs([("temp", Value::Float(12.5))])?;
    /// assert_eq!(ccm.match_event(&e)?, vec![]);
    /// # Ok(()) }
    /// ```
    pub fn new(dev: &'d Device, subs: &[Subscription], cfg: Config) -> Result<Self, CcmError> {
        Self::from_tables(dev, Tables::build(subs, cfg.grouping)?, cfg)
    }

    /// Deploys tables laid out beforehand (by [`Tables::build`] or a
    /// [`crate::layout::TablesBuilder`]): allocation and copies to the device. The tables'
    /// grouping replaces `cfg.grouping`.
    pub fn from_tables(dev: &'d Device, mut t: Tables, cfg: Config) -> Result<Self, CcmError> {
        let cfg = Config {
            grouping: t.grouping,
            ..cfg
        };
        let d = Self::upload(dev, &t, cfg.batch_tables)?;
        t.dirty = Default::default();
        let input = dev.alloc::<u8>(4096)?;
        let mapped = if cfg.mapped_output {
            Some(Mapped::new(dev, t.iface_ids.len())?)
        } else {
            None
        };
        Ok(Ccm {
            dev,
            cfg,
            t,
            d,
            parity: 0,
            input,
            attrs: Vec::new(),
            bytes: Vec::new(),
            packed: Vec::new(),
            flags: Vec::new(),
            mapped,
            pers: None,
            batch_bufs: None,
            batch_dicts: None,
        })
    }

    fn upload(dev: &Device, t: &Tables, batch: bool) -> Result<DevTables, CcmError> {
        let slots = room(t.filter_slots());
        let ifaces = room(t.iface_ids.len());
        let mut size_f = dev.alloc::<u32>(slots)?;
        let mut filter_iface = dev.alloc::<u32>(slots)?;
        if t.filter_slots() > 0 {
            dev.write(&mut size_f, 0, &t.size_f)?;
            dev.write(&mut filter_iface, 0, &t.filter_iface)?;
        }
        let constraints_host = t.constraints_array();
        let mut constraints = dev.alloc::<DevConstraint>(constraints_host.len().max(1))?;
        if !constraints_host.is_empty() {
            dev.write(&mut constraints, 0, &constraints_host)?;
        }
        let batch = if batch {
            Some(Self::upload_batch(dev, t)?)
        } else {
            None
        };
        Ok(DevTables {
            constraints: Arc::new(constraints),
            row_start: upload_with_room(dev, &t.row_start())?,
            size_c: upload_with_room(dev, &t.size_c())?,
            cpool: Arc::new(upload_with_room(dev, &t.pool)?),
            size_f: Arc::new(size_f),
            filter_iface: Arc::new(filter_iface),
            count: [dev.alloc(slots)?, dev.alloc(slots)?],
            interfaces: [dev.alloc(ifaces)?, dev.alloc(ifaces)?],
            tally: dev.alloc(2)?,
            batch,
        })
    }

    fn upload_batch(dev: &Device, t: &Tables) -> Result<BatchTables, CcmError> {
        let slots = room(t.filter_slots());
        let mut filter_start = dev.alloc::<u32>(slots)?;
        let mut filter_sig = dev.alloc::<u64>(slots)?;
        if t.filter_slots() > 0 {
            dev.write(&mut filter_start, 0, &t.filter_start)?;
            dev.write(&mut filter_sig, 0, &t.filter_sig)?;
        }
        Ok(BatchTables {
            fconstraints: upload_with_room(dev, &t.fconstraints)?,
            filter_start,
            filter_sig,
        })
    }

    /// Brings the device tables up to date after [`Ccm::add`] / [`Ccm::remove`] (after
    /// stopping the persistent kernel, which reads them).
    fn sync(&mut self) -> Result<(), CcmError> {
        self.stop_persistent()?;
        let dirty = std::mem::take(&mut self.t.dirty);
        let t = &self.t;
        let d = &self.d;
        let fits = t.table_cap as usize <= d.constraints.len()
            && t.rows.len() <= d.row_start.len()
            && t.pool.len() <= d.cpool.len()
            && t.filter_slots() <= d.size_f.len()
            && t.iface_ids.len() <= d.interfaces[0].len()
            && d.batch
                .as_ref()
                .is_none_or(|b| t.fconstraints.len() <= b.fconstraints.len());
        if dirty.full || !fits {
            self.d = Self::upload(self.dev, t, self.cfg.batch_tables || self.d.batch.is_some())?;
            self.parity = 0;
            return Ok(());
        }
        let dev = self.dev;
        let d = &mut self.d;
        let mut rows = dirty.rows;
        rows.sort_unstable();
        rows.dedup();
        for r in rows {
            let row = &t.rows[r as usize];
            if !row.items.is_empty() {
                dev.write(
                    table_mut(&mut d.constraints)?,
                    row.start as usize,
                    &row.items,
                )?;
            }
            dev.write(&mut d.row_start, r as usize, &[row.start])?;
            dev.write(&mut d.size_c, r as usize, &[row.items.len() as u32])?;
        }
        if dirty.pool_from < t.pool.len() {
            dev.write(
                table_mut(&mut d.cpool)?,
                dirty.pool_from,
                &t.pool[dirty.pool_from..],
            )?;
        }
        let mut filters = dirty.filters;
        filters.sort_unstable();
        filters.dedup();
        for f in filters {
            let i = f as usize;
            dev.write(table_mut(&mut d.size_f)?, i, &t.size_f[i..=i])?;
            dev.write(table_mut(&mut d.filter_iface)?, i, &t.filter_iface[i..=i])?;
            if let Some(b) = &mut d.batch {
                dev.write(&mut b.filter_start, i, &t.filter_start[i..=i])?;
                dev.write(&mut b.filter_sig, i, &t.filter_sig[i..=i])?;
            }
        }
        if let Some(b) = &mut d.batch {
            if dirty.fc_from < t.fconstraints.len() {
                dev.write(
                    &mut b.fconstraints,
                    dirty.fc_from,
                    &t.fconstraints[dirty.fc_from..],
                )?;
            }
        }
        Ok(())
    }

    /// Adds a subscription after deployment; returns its handle for [`Ccm::remove`].
    ///
    /// ```
    /// use ccm::{Ccm, Config, Constraint, Event, Filter, InterfaceId, Op, Subscription, Value};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dev = gpu_kernels::Device::emulator();
    /// let mut ccm = Ccm::new(&dev, &[], Config { block: 32, ..Config::default() })?;
    /// let e = Event::from_pairs([("x", Value::Int(5))])?;
    /// assert_eq!(ccm.match_event(&e)?, vec![]);
    ///
    /// let id = ccm.add(&Subscription {
    ///     interface: InterfaceId(9),
    ///     filter: Filter::new(vec![Constraint::new("x", Op::Ge, Value::Int(5))?])?,
    /// })?;
    /// assert_eq!(ccm.match_event(&e)?, vec![InterfaceId(9)]);
    /// ccm.remove(id)?;
    /// assert_eq!(ccm.match_event(&e)?, vec![]);
    /// # Ok(()) }
    /// ```
    pub fn add(&mut self, s: &Subscription) -> Result<SubId, CcmError> {
        let (pool, fc) = (self.t.pool.len(), self.t.fconstraints.len());
        if !self.t.dirty.full && self.t.dirty.rows.is_empty() && self.t.dirty.filters.is_empty() {
            self.t.dirty.pool_from = pool;
            self.t.dirty.fc_from = fc;
        }
        let id = self.t.add(s)?;
        Ok(id)
    }

    /// Removes a deployed subscription.
    pub fn remove(&mut self, id: SubId) -> Result<(), CcmError> {
        if !self.t.dirty.full && self.t.dirty.rows.is_empty() && self.t.dirty.filters.is_empty() {
            self.t.dirty.pool_from = self.t.pool.len();
            self.t.dirty.fc_from = self.t.fconstraints.len();
        }
        self.t.remove(id)?;
        Ok(())
    }

    fn ensure_synced(&mut self) -> Result<(), CcmError> {
        let dirty = &self.t.dirty;
        if dirty.full || !dirty.rows.is_empty() || !dirty.filters.is_empty() {
            self.sync()?;
        }
        Ok(())
    }

    /// The host tables (Fig. 2).
    pub fn tables(&self) -> &Tables {
        &self.t
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Bytes this engine holds on the device (Table 2, row 3).
    pub fn device_bytes(&self) -> usize {
        let d = &self.d;
        let mut n = d.constraints.bytes()
            + d.row_start.bytes()
            + d.size_c.bytes()
            + d.cpool.bytes()
            + d.size_f.bytes()
            + d.filter_iface.bytes()
            + d.count.iter().map(Buffer::bytes).sum::<usize>()
            + d.interfaces.iter().map(Buffer::bytes).sum::<usize>()
            + d.tally.bytes()
            + self.input.bytes();
        if let Some(b) = &d.batch {
            n += b.fconstraints.bytes() + b.filter_start.bytes() + b.filter_sig.bytes();
        }
        if let Some(p) = &self.pers {
            n += p.bytes;
        }
        n
    }

    /// The interfaces whose predicate matches `e`, ascending (the paper's mode, or the
    /// persistent kernel with [`Config::persistent`]).
    pub fn match_event(&mut self, e: &Event) -> Result<Vec<InterfaceId>, CcmError> {
        if self.cfg.persistent {
            let mut v = self.match_pipelined(std::slice::from_ref(e), 1, None)?;
            return Ok(v.pop().unwrap_or_default());
        }
        self.match_event_inner(e, None)
    }

    /// Whether the persistent kernel is running (with [`Config::persistent`]: from the
    /// first event until an update or the engine's drop).
    pub fn persistent_running(&self) -> bool {
        self.pers.is_some()
    }

    /// Stops the persistent kernel, if one runs (the next event starts a new one).
    pub fn stop_persistent(&mut self) -> Result<(), CcmError> {
        if let Some(p) = self.pers.take() {
            p.run.stop()?;
        }
        Ok(())
    }

    /// Beyond the paper, with [`Config::persistent`]: matches `events` through the
    /// persistent kernel with up to `in_flight` of them in the ring at once (at most
    /// [`Config::persistent_slots`]): the host encodes and submits event `i + in_flight`
    /// while the kernel matches event `i`. One answer per event, in order, ascending
    /// interface ids. With `latencies`, also each event's end-to-end time in
    /// microseconds, from the start of its encoding to its answer read by the host.
    pub fn match_pipelined(
        &mut self,
        events: &[Event],
        in_flight: usize,
        mut latencies: Option<&mut Vec<f64>>,
    ) -> Result<Vec<Vec<InterfaceId>>, CcmError> {
        if !self.cfg.persistent {
            return Err(CcmError::Persistent(
                "match_pipelined needs Config::persistent".into(),
            ));
        }
        let in_flight = in_flight.clamp(1, self.cfg.persistent_slots.max(1) as usize);
        let mut answers: Vec<Vec<InterfaceId>> = vec![Vec::new(); events.len()];
        if let Some(l) = latencies.as_deref_mut() {
            l.clear();
            l.resize(events.len(), 0.0);
        }
        // (event index, when its encoding began) of the requests in flight.
        let mut pending: VecDeque<(usize, Instant)> = VecDeque::with_capacity(in_flight);
        let mut next = 0;
        // Set when the next event needs a new kernel: the events in flight first.
        let mut drain = false;
        while next < events.len() || !pending.is_empty() {
            while !drain && next < events.len() && pending.len() < in_flight {
                let t0 = Instant::now();
                match self.submit_persistent(&events[next], !pending.is_empty())? {
                    Submitted::Yes => pending.push_back((next, t0)),
                    Submitted::Empty => {
                        // No attribute with a constrained name: answered on the host.
                        if let Some(l) = latencies.as_deref_mut() {
                            l[next] = t0.elapsed().as_secs_f64() * 1e6;
                        }
                    }
                    Submitted::NewKernel => {
                        drain = true;
                        continue;
                    }
                }
                next += 1;
            }
            if pending.is_empty() {
                drain = false;
            }
            if let Some((i, t0)) = pending.pop_front() {
                answers[i] = self.wait_persistent()?;
                if let Some(l) = latencies.as_deref_mut() {
                    l[i] = t0.elapsed().as_secs_f64() * 1e6;
                }
            }
        }
        Ok(answers)
    }

    /// Encodes `e` and submits it to the persistent kernel (starting one when none
    /// runs, or a new one when the event needs larger slots or the kernel's round tags
    /// would wrap: only when `busy` is false, i.e. no request is in flight; else
    /// [`Submitted::NewKernel`]).
    fn submit_persistent(&mut self, e: &Event, busy: bool) -> Result<Submitted, CcmError> {
        let dirty = &self.t.dirty;
        if dirty.full || !dirty.rows.is_empty() || !dirty.filters.is_empty() {
            if busy {
                return Err(CcmError::Persistent(
                    "the tables changed with events in flight".into(),
                ));
            }
            // The kernel reads the tables: stop it before they change on the device.
            self.stop_persistent()?;
            self.sync()?;
        }
        self.attrs.clear();
        self.bytes.clear();
        self.t.encode_event(e, &mut self.attrs, &mut self.bytes);
        let mut total: u64 = 0;
        for a in &self.attrs {
            total += self.t.rows[a.row_id as usize].items.len() as u64;
        }
        if total == 0 {
            return Ok(Submitted::Empty);
        }
        if total > u32::MAX as u64 {
            return Err(CcmError::Limit {
                what: "constraints selected by one event",
                have: total,
                max: u32::MAX as u64,
            });
        }
        let need = request_words(self.attrs.len(), self.bytes.len());
        let fits = self.pers.as_ref().is_some_and(|p| {
            p.run.config().req_words as usize >= need && p.submitted < u32::MAX as u64 - 64
        });
        if !fits {
            if busy {
                return Ok(Submitted::NewKernel);
            }
            self.stop_persistent()?;
            self.launch_persistent(need)?;
        }
        let p = self.pers.as_mut().expect("launched above");
        let (t, attrs, bytes) = (&self.t, &self.attrs, &self.bytes);
        p.run
            .submit_with(ccm_kernels::PERSIST_EVENT, need, |w| {
                let mut first = 0u64;
                w[0] = attrs.len() as u64 | total << 32;
                for (k, a) in attrs.iter().enumerate() {
                    let row = &t.rows[a.row_id as usize];
                    let len = row.items.len() as u64;
                    let o = 1 + ccm_kernels::PERSIST_ATTR_WORDS * k;
                    w[o] = a.row_id as u64 | (a.ty as u64) << 32;
                    w[o + 1] = a.val;
                    w[o + 2] = a.str_id as u64 | (a.str_len as u64) << 32;
                    w[o + 3] = row.start as u64 | len << 32;
                    w[o + 4] = first;
                    first += len;
                }
                let at = 1 + ccm_kernels::PERSIST_ATTR_WORDS * attrs.len();
                for (j, chunk) in bytes.chunks(8).enumerate() {
                    let mut b = [0u8; 8];
                    b[..chunk.len()].copy_from_slice(chunk);
                    w[at + j] = u64::from_le_bytes(b);
                }
            })
            .map_err(CcmError::from)?;
        p.submitted += 1;
        Ok(Submitted::Yes)
    }

    /// Waits for the oldest answer of the persistent kernel.
    fn wait_persistent(&mut self) -> Result<Vec<InterfaceId>, CcmError> {
        let p = self.pers.as_mut().expect("a request is in flight");
        let n_if = p.n_if;
        let r = p.run.wait()?;
        let m = r.status as usize;
        if m > n_if || r.words.len() < m.div_ceil(2) {
            return Err(CcmError::Persistent(format!(
                "an answer of {m} interfaces in {} words, the engine has {n_if} interfaces",
                r.words.len()
            )));
        }
        let ids = &self.t.iface_ids;
        let mut out = Vec::with_capacity(m);
        for j in 0..m {
            let i = (r.words[j / 2] >> (32 * (j % 2))) as u32 as usize;
            let id = ids.get(i).ok_or_else(|| {
                CcmError::Persistent(format!("interface {i} in an answer, of {n_if}"))
            })?;
            out.push(*id);
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Launches [`ccm_kernels::ccm_persistent()`] over the current device tables, with
    /// ring slots of at least `need` words.
    fn launch_persistent(&mut self, need: usize) -> Result<(), CcmError> {
        let dev = self.dev;
        let nf = self.t.filter_slots();
        let n_if = self.t.iface_ids.len();
        let req_words = need.max(256).next_power_of_two();
        if req_words > 8192 {
            return Err(CcmError::Limit {
                what: "words of one event in the persistent kernel's ring",
                have: need as u64,
                max: 8192,
            });
        }
        let rc = RingConfig {
            slots: self.cfg.persistent_slots.max(1),
            req_words: req_words as u32,
            resp_words: n_if.div_ceil(2).max(1) as u32,
        };
        let ring = Ring::new(dev, rc)?;
        let count = dev.alloc::<u64>(nf.max(1))?;
        let interfaces = dev.alloc::<u64>(n_if.max(1))?;
        let tally = dev.alloc::<u32>(2)?;
        let list = dev.alloc::<u32>(2 * n_if.max(1))?;
        let bytes = count.bytes() + interfaces.bytes() + tally.bytes() + list.bytes();
        // The zeroed buffers must be on the device before the kernel (on another
        // stream) reads them.
        dev.synchronize()?;
        let block = self.cfg.block;
        let lc = LaunchConfig::blocks(
            1,
            block,
            gpu_kernels::persist::shared_bytes(rc.req_words) + ccm_kernels::PERSIST_SHARED_EXTRA,
        );
        let blocks = match self.cfg.persistent_blocks {
            0 => dev.resident_blocks(
                &ccm_kernels::ccm_persistent::KERNEL,
                lc,
                self.cfg.persistent_blocks_per_sm,
            )?,
            n => n.min(dev.resident_blocks(&ccm_kernels::ccm_persistent::KERNEL, lc, 64)?),
        };
        // The handle shares the tables (kept alive, and unwritable by the host, until it
        // has stopped the kernel) and owns `count` .. `list`.
        let d = &self.d;
        let run = ccm_kernels::ccm_persistent::launch_persistent(
            dev,
            lc,
            ring,
            Some(blocks),
            &d.constraints,
            &d.cpool,
            &d.size_f,
            &d.filter_iface,
            count,
            interfaces,
            tally,
            list,
            n_if as u32,
        )?;
        self.pers = Some(PersistState {
            run,
            bytes,
            n_if,
            submitted: 0,
        });
        Ok(())
    }

    /// [`Ccm::match_event`] with Fig. 5's time split.
    pub fn match_event_timed(&mut self, e: &Event) -> Result<(Vec<InterfaceId>, Timing), CcmError> {
        let mut t = Timing::default();
        let r = self.match_event_inner(e, Some(&mut t))?;
        Ok((r, t))
    }

    fn match_event_inner(
        &mut self,
        e: &Event,
        mut timing: Option<&mut Timing>,
    ) -> Result<Vec<InterfaceId>, CcmError> {
        let t0 = std::time::Instant::now();
        self.ensure_synced()?;
        self.attrs.clear();
        self.bytes.clear();
        self.t.encode_event(e, &mut self.attrs, &mut self.bytes);
        let size_c_of = |a: &DevAttr| self.t.rows[a.row_id as usize].items.len() as u32;
        let longest = self.attrs.iter().map(size_c_of).max().unwrap_or(0);
        if longest == 0 {
            return Ok(Vec::new());
        }
        let n_attrs = self.attrs.len();
        if n_attrs > 65_535 {
            return Err(CcmError::Limit {
                what: "attributes with constrained names in one event (grid rows)",
                have: n_attrs as u64,
                max: 65_535,
            });
        }
        let str_cap = self
            .attrs
            .iter()
            .filter(|a| a.ty == ccm_kernels::TY_STR as u32 && a.str_len <= SH_STR_MAX)
            .map(|a| a.str_len)
            .max()
            .unwrap_or(0);
        let dev = self.dev;
        let inline = self.cfg.inline_events
            && n_attrs <= ccm_kernels::INLINE_ATTRS
            && self
                .attrs
                .iter()
                .all(|a| a.str_len <= ccm_kernels::INLINE_BYTES);
        // Table Input, then the attributes' string bytes: one copy to the device (none
        // when Input travels in the launch parameters).
        let bytes_at = if inline {
            0
        } else {
            self.packed.clear();
            self.packed
                .extend_from_slice(bytemuck::cast_slice(&self.attrs));
            let at = self.packed.len();
            self.packed.extend_from_slice(&self.bytes);
            if self.input.len() < self.packed.len() {
                self.input = dev.alloc::<u8>(room(self.packed.len()))?;
            }
            dev.write(&mut self.input, 0, &self.packed)?;
            at
        };
        let (use_copy, reset) = match self.cfg.reset {
            Reset::InKernel => (self.parity, 1u32),
            Reset::Memset => {
                dev.zero(&mut self.d.count[0])?;
                dev.zero(&mut self.d.interfaces[0])?;
                (0, 0)
            }
        };
        let n_if = self.t.iface_ids.len();
        if let Some(m) = &mut self.mapped {
            if m.out.len() < n_if {
                // A longer list; the counter in use stays (it is the one that is zero).
                m.out = dev.alloc_host(room(n_if))?;
                m.seq = 1;
            }
        }
        let t1 = Self::phase(dev, &mut timing, t0, |t, ms| t.copy_in_ms = ms)?;
        let d = &self.d;
        let block = self.cfg.block;
        let grid = [longest.div_ceil(block), n_attrs as u32, 1];
        let idle = 1 - use_copy;
        let t = ccm_kernels::MatchTables {
            constraints: d.constraints.dev_ptr(),
            row_start: d.row_start.dev_ptr(),
            size_c: d.size_c.dev_ptr(),
            cpool: d.cpool.dev_ptr(),
            size_f: d.size_f.dev_ptr(),
            filter_iface: d.filter_iface.dev_ptr(),
            count: d.count[use_copy].dev_ptr_mut(),
            interfaces: d.interfaces[use_copy].dev_ptr_mut(),
            reset_count: d.count[idle].dev_ptr_mut(),
            reset_interfaces: d.interfaces[idle].dev_ptr_mut(),
            reset,
            n_filters: self.t.filter_slots() as u32,
            n_interfaces: n_if as u32,
        };
        // Table Input in the launch parameters (inline), with each row's place and
        // length for the mapped kernel (the device's copy is up to date).
        let mut ev = ccm_kernels::InlineEvent::default();
        if inline {
            for (k, w) in ev.attrs.iter_mut().enumerate() {
                let a = self.attrs.get(k).copied().unwrap_or_default();
                let mut sb = [0u8; 16];
                if a.ty == ccm_kernels::TY_STR as u32 {
                    let at = a.val as usize;
                    sb[..a.str_len as usize]
                        .copy_from_slice(&self.bytes[at..at + a.str_len as usize]);
                }
                let row = self.t.rows.get(a.row_id as usize).filter(|_| k < n_attrs);
                let (start, len) = row.map_or((0, 0), |r| (r.start, r.items.len() as u32));
                *w = ccm_kernels::InlineAttr {
                    a: a.row_id as u64 | (a.ty as u64) << 32,
                    v: a.val,
                    s: a.str_id as u64 | (a.str_len as u64) << 32,
                    b: u64::from_le_bytes(sb[..8].try_into().expect("8 bytes")),
                    c: u64::from_le_bytes(sb[8..].try_into().expect("8 bytes")),
                    r: start as u64 | (len as u64) << 32,
                };
            }
        }
        let shared_bytes = if inline {
            32 + ccm_kernels::INLINE_BYTES
        } else {
            32 + str_cap.next_multiple_of(16)
        };
        let cfg = LaunchConfig {
            grid,
            block: [block, 1, 1],
            shared_bytes,
        };
        // One buffer holds table Input, then the string bytes.
        let (input, ebytes) = (self.input.at(0).cast::<DevAttr>(), self.input.at(bytes_at));
        match (inline, &mut self.mapped) {
            (false, None) => ccm_kernels::ccm_match::launch(dev, cfg, t, input, ebytes, str_cap)?,
            (true, None) => ccm_kernels::ccm_match_inline::launch(dev, cfg, t, ev)?,
            (false, Some(m)) => ccm_kernels::ccm_match_mapped::launch(
                dev,
                cfg,
                t,
                input,
                ebytes,
                str_cap,
                &mut m.out,
                d.tally.at_mut(m.parity),
                d.tally.at_mut(1 - m.parity),
                m.seq,
            )?,
            (true, Some(m)) => ccm_kernels::ccm_match_inline_mapped::launch(
                dev,
                cfg,
                t,
                ev,
                &mut m.out,
                d.tally.at_mut(m.parity),
                d.tally.at_mut(1 - m.parity),
                m.seq,
            )?,
        }
        let t2 = Self::phase(dev, &mut timing, t1, |t, ms| t.kernel_ms = ms)?;
        if self.cfg.reset == Reset::InKernel {
            self.parity = idle;
        }
        let mut out: Vec<InterfaceId> = match &mut self.mapped {
            Some(m) => {
                // The one synchronisation; then the list is plain host memory.
                dev.synchronize()?;
                let seq = m.seq;
                let list: Vec<InterfaceId> = m
                    .out
                    .as_slice()
                    .iter()
                    .take(n_if)
                    .take_while(|&&e| (e >> 32) as u32 == seq)
                    .map(|&e| self.t.iface_ids[e as u32 as usize])
                    .collect();
                m.parity = 1 - m.parity;
                m.seq = if seq == u32::MAX {
                    // Entries of 2^32 - 1 events ago would read as current: start afresh.
                    m.out.as_mut_slice().fill(0);
                    1
                } else {
                    seq + 1
                };
                list
            }
            None => {
                self.flags.resize(n_if, 0);
                dev.read_into(&d.interfaces[use_copy], 0, &mut self.flags)?;
                self.flags
                    .iter()
                    .zip(&self.t.iface_ids)
                    .filter(|(f, _)| **f != 0)
                    .map(|(_, &id)| id)
                    .collect()
            }
        };
        out.sort_unstable();
        Self::phase(dev, &mut timing, t2, |t, ms| t.copy_out_ms = ms)?;
        Ok(out)
    }

    /// Records a phase's time when timing (after synchronising the device).
    fn phase(
        dev: &Device,
        timing: &mut Option<&mut Timing>,
        since: std::time::Instant,
        set: impl FnOnce(&mut Timing, f64),
    ) -> Result<std::time::Instant, CcmError> {
        if let Some(t) = timing {
            dev.synchronize()?;
            set(t, since.elapsed().as_secs_f64() * 1e3);
        }
        Ok(std::time::Instant::now())
    }

    /// Matches the events of `batch`, [`Config::batch_events`] per launch of the batched
    /// kernel; one answer per event, ascending interface ids, the same as
    /// [`Ccm::match_event`]'s:
    ///
    /// ```
    /// use ccm::{workload, Ccm, Config, Params};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let params = Params {
    ///     events: 10,
    ///     interfaces: 4,
    ///     constraints_per_filter: (1, 2),
    ///     filters_per_interface: (3, 5),
    ///     names: 4,
    ///     values: 3,
    ///     ..Params::default()
    /// };
    /// let w = workload::generate(&params, 1)?;
    /// let dev = gpu_kernels::Device::emulator();
    /// let cfg = Config { block: 32, batch_events: 4, batch_chunk: 4, ..Config::default() };
    /// let mut ccm = Ccm::new(&dev, &w.subscriptions, cfg)?;
    /// let batched = ccm.match_batch(&w.batch)?;
    /// for (e, answer) in w.events.iter().zip(&batched) {
    ///     assert_eq!(&ccm.match_event(e)?, answer);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn match_batch(&mut self, batch: &EventBatch) -> Result<Vec<Vec<InterfaceId>>, CcmError> {
        self.match_range(batch, 0..batch.len())
    }

    /// [`Ccm::match_batch`] of heap events' batch ([`EventBatch::from_events`], built
    /// once).
    pub fn match_events(&mut self, events: &[Event]) -> Result<Vec<Vec<InterfaceId>>, CcmError> {
        self.match_batch(&EventBatch::from_events(events))
    }

    /// As [`Ccm::match_batch`], for the events `events` of `batch` only. Panics when
    /// `events` is not within the batch, as slicing does.
    pub fn match_range(
        &mut self,
        batch: &EventBatch,
        events: std::ops::Range<usize>,
    ) -> Result<Vec<Vec<InterfaceId>>, CcmError> {
        assert!(
            events.start <= events.end && events.end <= batch.len(),
            "events {events:?} of a batch of {}",
            batch.len()
        );
        self.ensure_synced()?;
        if self.d.batch.is_none() {
            self.d.batch = Some(Self::upload_batch(self.dev, &self.t)?);
        }
        let n_if = self.t.iface_ids.len();
        let mut answers = Vec::with_capacity(events.len());
        if n_if == 0 || self.t.live_filters() == 0 || events.is_empty() {
            answers.resize(events.len(), Vec::new());
            return Ok(answers);
        }
        let per = self.cfg.batch_events.clamp(
            1,
            (65_535 * self.cfg.batch_chunk as usize).min(u32::MAX as usize / n_if),
        );
        let dicts = DevDicts::upload(self.dev, &self.t, batch, self.batch_dicts.take())?;
        let mut bufs: Option<BatchBufs> = self.batch_bufs.take();
        // The answers of the launch before, decoded while the device matches the next.
        let mut flags: Vec<u32> = Vec::new();
        let mut pending = 0;
        let mut first = events.start;
        while first < events.end {
            let r = first..(first + per).min(events.end);
            first = r.end;
            self.launch_batch(batch, r.clone(), &dicts, &mut bufs)?;
            self.decode_flags(&flags[..pending * n_if], &mut answers);
            pending = r.len();
            flags.resize(pending * n_if, 0);
            let b = bufs.as_ref().expect("launched");
            self.dev
                .read_into(&b.out, 0, &mut flags[..pending * n_if])?;
        }
        self.decode_flags(&flags[..pending * n_if], &mut answers);
        self.batch_bufs = bufs;
        self.batch_dicts = Some(dicts);
        Ok(answers)
    }

    /// Appends to `answers` the interfaces of each event's row of `flags`
    /// ([`ccm_kernels::ccm_match_batch()`]'s output: a flag per interface), ascending.
    fn decode_flags(&self, flags: &[u32], answers: &mut Vec<Vec<InterfaceId>>) {
        for row in flags.chunks(self.t.iface_ids.len()) {
            let mut v: Vec<InterfaceId> = row
                .iter()
                .zip(&self.t.iface_ids)
                .filter(|(f, _)| **f != 0)
                .map(|(_, &id)| id)
                .collect();
            v.sort_unstable();
            answers.push(v);
        }
    }

    /// Launches the events `events` of `batch` (copy in, the encoding on the device,
    /// the batched kernel) without waiting for them.
    fn launch_batch(
        &mut self,
        batch: &EventBatch,
        events: std::ops::Range<usize>,
        dicts: &DevDicts,
        bufs: &mut Option<BatchBufs>,
    ) -> Result<(), CcmError> {
        let dev = self.dev;
        let n_if = self.t.iface_ids.len();
        let n = events.len();
        let starts = &batch.starts()[events.start..=events.end];
        let attrs: &[BatchAttr] = bytemuck::cast_slice(&batch.attrs()[batch.attr_range(events)]);
        let need = (n, attrs.len().max(1), n * n_if);
        let fits = bufs.as_ref().is_some_and(|b| {
            b.starts.len() > need.0
                && b.events.len() >= need.0
                && b.attrs.len() >= need.1
                && b.out.len() >= need.2
        });
        if !fits {
            *bufs = Some(BatchBufs {
                starts: dev.alloc(room(need.0 + 1))?,
                input: dev.alloc(room(need.1))?,
                events: dev.alloc(room(need.0))?,
                attrs: dev.alloc(room(need.1))?,
                out: dev.alloc(room(need.2))?,
            });
        }
        let b = bufs.as_mut().expect("allocated");
        dev.write(&mut b.starts, 0, starts)?;
        if !attrs.is_empty() {
            dev.write(&mut b.input, 0, attrs)?;
        }
        dev.zero(&mut b.out)?;
        let lc = LaunchConfig::linear(n as u32, ENCODE_BLOCK);
        ccm_encode_batch::launch(
            dev,
            lc,
            dicts.input(&b.starts, &b.input, n),
            &b.events,
            &b.attrs,
        )?;
        let bt = self.d.batch.as_ref().expect("batch tables");
        let d = &self.d;
        let chunk = self.cfg.batch_chunk.max(1);
        let slots = self.t.filter_slots() as u32;
        let block = self.cfg.block;
        let cfg = LaunchConfig {
            grid: [
                slots.div_ceil(block).max(1),
                (n as u32).div_ceil(chunk).max(1),
                1,
            ],
            block: [block, 1, 1],
            shared_bytes: chunk * 8,
        };
        let tables = FilterMajorTables {
            fconstraints: bt.fconstraints.dev_ptr(),
            filter_start: bt.filter_start.dev_ptr(),
            size_f: d.size_f.dev_ptr(),
            filter_sig: bt.filter_sig.dev_ptr(),
            filter_iface: d.filter_iface.dev_ptr(),
            cpool: d.cpool.dev_ptr(),
            n_filters: slots,
            n_interfaces: n_if as u32,
        };
        let encoded = ccm_kernels::EventBatch {
            events: b.events.dev_ptr(),
            attrs: b.attrs.dev_ptr(),
            ebytes: dicts.arena.dev_ptr(),
            n_events: n as u32,
            chunk,
        };
        ccm_kernels::ccm_match_batch::launch(dev, cfg, tables, encoded, &b.out)?;
        Ok(())
    }
}

struct BatchBufs {
    /// A launch's starts and attributes as the batch holds them.
    starts: Buffer<u32>,
    input: Buffer<BatchAttr>,
    /// The same events encoded on the device.
    events: Buffer<DevEvent>,
    attrs: Buffer<DevAttr>,
    out: Buffer<u32>,
}
