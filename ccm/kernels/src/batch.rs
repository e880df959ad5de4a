//! Beyond the paper: a flat batch of events (`ccm::batch::EventBatch` on the host: names
//! and strings interned in dictionaries, 16-byte attributes, where each event begins)
//! turned on the device into the encoded events the batched kernels read
//! ([`DevEvent`], [`DevAttr`]: §4.2's table `Input`, a name's row in `Constraints` per
//! attribute), so that the host copies the batch's arrays as they are instead of
//! encoding every attribute.
//!
//! The host translates the batch's two dictionaries once per batch (a few names, the
//! distinct strings): per name id its row ([`NO_ROW`] for a name no constraint has),
//! per string id its place in the batch's string arena and its id in the constraints'
//! dictionary (`NO_STR` for a string no constraint has: equal to none). Per launch it
//! copies the launch's attributes and starts; [`ccm_encode_batch()`] does the rest, with
//! the encoding `ccm::layout::Tables::encode_into` does on the host: attributes of names
//! no constraint has left out, the others in the event's order, and the signature of the
//! event's rows.

use crate::{DevAttr, DevEvent, TY_STR};
use gpu_kernels::prelude::*;
use gpu_kernels::{kernel, DevPtr, KernelStruct};

/// One attribute of a batch as the host holds it (`ccm::batch::Attr`, the same
/// layout): the name's id in the batch's names dictionary, the type (`TY_INT`,
/// `TY_FLOAT`, `TY_STR`), and the value: an integer's bits, a float's bits, or the
/// string's id in the batch's strings dictionary.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct BatchAttr {
    pub name: u32,
    pub ty: u32,
    pub val: u64,
}

/// One string of a batch's dictionary as the kernels compare it: its bytes
/// `arena[off..off + len]` (for `prefix`, `suffix`, `substr`) and its id in the
/// constraints' dictionary (for `=` and `!=`; `NO_STR` when no constraint has it).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(
    not(target_arch = "nvptx64"),
    derive(bytemuck::Pod, bytemuck::Zeroable)
)]
pub struct BatchStr {
    pub off: u32,
    pub len: u32,
    pub str_id: u32,
    pub pad: u32,
}

/// The row of a name no constraint has: its attributes are left out.
pub const NO_ROW: u32 = u32::MAX;

/// A launch's part of a batch: `n_events` events, event `e`'s attributes
/// `attrs[starts[e] - starts[0] .. starts[e + 1] - starts[0]]` (the starts as the
/// batch holds them, `n_events + 1` of them), and the batch's dictionaries translated:
/// `name_rows[name]` (`n_names` entries), `strs[string]` (`n_strs` entries).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BatchInput<'a> {
    pub attrs: DevPtr<'a, BatchAttr>,
    pub starts: DevPtr<'a, u32>,
    pub name_rows: DevPtr<'a, u32>,
    pub strs: DevPtr<'a, BatchStr>,
    pub n_events: u32,
    pub n_names: u32,
    pub n_strs: u32,
}

// SAFETY: `#[repr(C)]`; device pointers and integers; `Host<'a>` differs only in the
// lifetime.
unsafe impl KernelStruct for BatchInput<'static> {
    type Host<'a> = BatchInput<'a>;
}

/// Threads per block of [`ccm_encode_batch()`].
pub const ENCODE_BLOCK: u32 = 256;

kernel! {
    /// Beyond the paper: the batch's events encoded for the batched kernels (module
    /// docs), what the host's `Tables::encode_into` does for heap events.
    ///
    /// Grid: a thread per event `e` of the launch. The thread reads `e`'s two starts and
    /// its attributes (`b`: global, read-only; consecutive records, read once), looks
    /// each name up in `name_rows` and each string in `strs` (global, read-only: a few
    /// entries, cached), and writes the attributes of names some constraint has, in the
    /// event's order, from `e`'s own first place in `out` (global; an event's encoded
    /// attributes are at most its attributes, so events never overlap and no prefix sum
    /// is needed), then `events[e]` (global): the signature of their rows (bit
    /// `row % 64`), where they start, how many. A string attribute's `val` becomes its
    /// offset in the batch's arena, which the launch's kernels read as the events'
    /// string bytes. A name id outside the dictionary counts as a name no constraint
    /// has, a string id outside it as a string none has (never read out of bounds). No
    /// shared memory, no barrier.
    pub fn ccm_encode_batch(b: BatchInput<'static>, events: *mut DevEvent, out: *mut DevAttr) {
        let e = global_id_x();
        if e >= b.n_events {
            return;
        }
        let base = b.starts.read(0);
        let from = b.starts.read(e as usize) - base;
        let to = b.starts.read(e as usize + 1) - base;
        let mut k = from;
        let mut sig = 0u64;
        let mut a = from;
        while a < to {
            let at = b.attrs.read(a as usize);
            let row = if at.name < b.n_names { b.name_rows.read(at.name as usize) } else { NO_ROW };
            if row != NO_ROW {
                let d = if at.ty == TY_STR as u32 {
                    let s = if at.val < b.n_strs as u64 {
                        b.strs.read(at.val as usize)
                    } else {
                        BatchStr { off: 0, len: 0, str_id: crate::NO_STR, pad: 0 }
                    };
                    DevAttr { row_id: row, ty: at.ty, val: s.off as u64, str_id: s.str_id, str_len: s.len }
                } else {
                    DevAttr { row_id: row, ty: at.ty, val: at.val, str_id: 0, str_len: 0 }
                };
                *out.add(k as usize) = d;
                sig |= 1u64 << (row % 64);
                k += 1;
            }
            a += 1;
        }
        *events.add(e as usize) = DevEvent { sig, start: from, len: k - from };
    }
}
