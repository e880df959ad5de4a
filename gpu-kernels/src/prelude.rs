//! The device prelude: what a kernel body may call. Same names on the GPU (`nvptx64`:
//! hardware intrinsics) and on the host (the [`emu`](crate::emu) lane context).
//!
//! - ids and sizes: [`thread_idx_x`] .. [`grid_dim_z`], [`global_id_x`], [`lane_id`], [`warp_id`]
//! - block barrier: [`sync_threads`] (threads that returned no longer hold it back)
//! - shared memory: [`dynamic_shared`] (size chosen at launch, 16-byte aligned)
//! - atomics on global or shared memory: [`atomic_add`] .. [`atomic_cas`], [`atomic_add_u64`]
//! - a clock shared by the SMs, for timing a kernel's stages: [`global_timer`]
//! - fences: [`thread_fence`], [`thread_fence_block`], [`fence_system`]
//! - memory another agent (the host, another block) changes while the kernel runs:
//!   [`volatile_load_u32`], [`volatile_load_u64`], [`volatile_store_u32`],
//!   [`volatile_store_u64`] (never cached, never hoisted out of a loop),
//!   [`store_release_system_u64`] and [`load_acquire_system_u64`] (flags that publish
//!   data to or take it from the host), [`volatile_load_pair`] and
//!   [`volatile_store_pair`] (a word and its tag in one transaction),
//!   [`red_release_add`] and [`load_acquire_u32`] (arrival counters), and
//!   [`spin_pause`] in each turn of a spin loop; [`atomic_cas_u64`], [`atomic_exch_u64`],
//!   [`atomic_max_u64`]
//! - warp ops over the full warp: [`ballot`], [`any_sync`], [`all_sync`], [`shfl`],
//!   [`shfl_xor`], [`shfl_down`], [`shfl_up`], and [`sync_warp`] (the warp's barrier,
//!   which orders its lanes' shared-memory accesses). All live lanes of the warp must call
//!   them together, as CUDA requires with a full mask. Built on them: [`warp_scan`] (a
//!   prefix sum over the warp) and [`lane_holding`] (the lane holding an item of items
//!   laid end to end by that sum).
//! - math that `core` lacks on the GPU: [`sqrtf`], [`floorf`].
//! - device memory accesses the emulator bounds-checks (plain accesses on the GPU):
//!   [`load`], [`store`], [`device_slice`], [`device_slice_mut`].

pub use crate::kernel;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

#[cfg(not(target_arch = "nvptx64"))]
pub use crate::emu::lane::{
    all_sync, any_sync, ballot, block_dim_x, block_dim_y, block_dim_z, block_idx_x, block_idx_y,
    block_idx_z, dynamic_shared, fence_system, grid_dim_x, grid_dim_y, grid_dim_z, shfl, shfl_down,
    shfl_up, shfl_xor, spin_pause, sync_threads, sync_warp, thread_fence, thread_fence_block,
    thread_idx_x, thread_idx_y, thread_idx_z,
};
#[cfg(target_arch = "nvptx64")]
pub use crate::prelude::gpu::*;

/// Lanes per warp.
pub const WARP_SIZE: u32 = 32;

/// Exclusive prefix sum of `v` over the warp, with the warp's total: a scan by
/// [`shfl_up`] (five steps), the total from lane 31. Every lane calls it. Lanes that
/// lay their items end to end (lane `k`'s from the `start` it returns) then find an
/// item's lane with [`lane_holding`].
#[inline(always)]
pub fn warp_scan(v: u32) -> (u32, u32) {
    let lane = lane_id();
    let mut x = v;
    let mut d = 1;
    while d < WARP_SIZE {
        let y = shfl_up(x, d);
        if lane >= d {
            x += y;
        }
        d *= 2;
    }
    (x - v, shfl(x, WARP_SIZE - 1))
}

/// How many lanes of `mask` (a [`ballot`]) lie below the calling lane: the lane's rank
/// among the lanes that voted `true`, the slot it takes when they write side by side.
#[inline(always)]
pub fn lanes_below(mask: u32) -> u32 {
    (mask & ((1u32 << lane_id()) - 1)).count_ones()
}

/// The lane `k` whose `start` (ascending over the lanes, as [`warp_scan`] gives) is the
/// last at or below `i`: the lane holding item `i` of the warp's items laid end to end
/// (a lane with no items shares its start with the next, so the lane found holds `i`
/// while `i` is below the total). Every lane calls it (a binary search of five
/// [`shfl`]s).
#[inline(always)]
pub fn lane_holding(start: u32, i: u32) -> u32 {
    let mut k = 0;
    let mut step = WARP_SIZE / 2;
    while step > 0 {
        if shfl(start, k + step) <= i {
            k += step;
        }
        step /= 2;
    }
    k
}

/// A scheduling point of the running lane on the emulator (records the caller's source
/// location for hang reports; seeded yields); nothing on the GPU.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
fn host_point() {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::lane::touch(core::panic::Location::caller());
}

/// Element `i` of the array at `p` in device memory (global, shared or mapped host):
/// `*p.add(i)`. On the emulator the access is bounds-checked against the allocation `p`
/// lies in (a launch failure naming the address, the allocation and this call's source
/// line); on the GPU it is a plain load.
///
/// # Safety
/// On the GPU: `p.add(i)` must be valid for reads of a `T` (on the emulator an access
/// outside `p`'s allocation is caught instead).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn load<T: Copy>(p: *const T, i: usize) -> T {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::check_access("load", p as usize, i, core::mem::size_of::<T>(), 1);
    // SAFETY: in bounds: checked just above on the emulator, the caller's guarantee on
    // the GPU.
    unsafe { *p.add(i) }
}

/// Writes `v` to element `i` of the array at `p` in device memory: `*p.add(i) = v`,
/// bounds-checked on the emulator as [`load`] is.
///
/// # Safety
/// On the GPU: `p.add(i)` must be valid for writes of a `T`, and no other thread may
/// access it meanwhile except through atomics.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn store<T: Copy>(p: *mut T, i: usize, v: T) {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::check_access("store", p as usize, i, core::mem::size_of::<T>(), 1);
    // SAFETY: in bounds: checked just above on the emulator, the caller's guarantee on
    // the GPU.
    unsafe { *p.add(i) = v }
}

/// The `n` elements at `p` in device memory as a slice (a kernel argument and its
/// length): indexing it is bounds-checked on both targets (a trap on the GPU), and on
/// the emulator the slice itself is checked to lie inside `p`'s allocation.
///
/// # Safety
/// `p` must point to `n` initialised `T`s that no thread writes while the slice lives
/// (on the emulator a slice leaving the allocation is caught instead).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn device_slice<'a, T>(p: *const T, n: usize) -> &'a [T] {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::check_access("device_slice", p as usize, 0, core::mem::size_of::<T>(), n);
    // SAFETY: the caller's guarantee; in bounds checked above on the emulator.
    unsafe { core::slice::from_raw_parts(p, n) }
}

/// [`device_slice`], mutable.
///
/// # Safety
/// `p` must point to `n` initialised `T`s that no other thread reads or writes while
/// the slice lives (on the emulator a slice leaving the allocation is caught instead).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn device_slice_mut<'a, T>(p: *mut T, n: usize) -> &'a mut [T] {
    #[cfg(not(target_arch = "nvptx64"))]
    crate::emu::check_access(
        "device_slice_mut",
        p as usize,
        0,
        core::mem::size_of::<T>(),
        n,
    );
    // SAFETY: the caller's guarantee; in bounds checked above on the emulator.
    unsafe { core::slice::from_raw_parts_mut(p, n) }
}

/// `block_idx_x() * block_dim_x() + thread_idx_x()`.
#[inline(always)]
pub fn global_id_x() -> u32 {
    block_idx_x() * block_dim_x() + thread_idx_x()
}

/// The thread's linear index inside its block.
#[inline(always)]
pub fn thread_rank() -> u32 {
    (thread_idx_z() * block_dim_y() + thread_idx_y()) * block_dim_x() + thread_idx_x()
}

/// The thread's lane in its warp (0..32).
#[inline(always)]
pub fn lane_id() -> u32 {
    thread_rank() % WARP_SIZE
}

/// The warp's index inside its block.
#[inline(always)]
pub fn warp_id() -> u32 {
    thread_rank() / WARP_SIZE
}

macro_rules! atomic_u32 {
    ($($(#[$m:meta])* $name:ident => $method:ident;)*) => {$(
        $(#[$m])*
        /// Returns the old value. `p` points into global or shared memory, 4-byte aligned.
        ///
        /// # Safety
        /// `p` must be valid for reads and writes for the whole launch.
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub unsafe fn $name(p: *mut u32, v: u32) -> u32 {
            host_point();
            // SAFETY: the caller guarantees `p` is valid and aligned for the launch, and
            // every access to it while the kernel runs is atomic.
            unsafe { AtomicU32::from_ptr(p) }.$method(v, Relaxed)
        }
    )*};
}

atomic_u32! {
    /// `*p += v` (wrapping).
    atomic_add => fetch_add;
    /// `*p -= v` (wrapping).
    atomic_sub => fetch_sub;
    /// `*p &= v`.
    atomic_and => fetch_and;
    /// `*p |= v`.
    atomic_or => fetch_or;
    /// `*p ^= v`.
    atomic_xor => fetch_xor;
    /// `*p = min(*p, v)` (unsigned).
    atomic_min => fetch_min;
    /// `*p = max(*p, v)` (unsigned).
    atomic_max => fetch_max;
    /// `*p = v`.
    atomic_exch => swap;
}

/// Compare-and-swap: `if *p == compare { *p = new }`; returns the old value.
///
/// # Safety
/// `p` must be valid for reads and writes for the whole launch.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn atomic_cas(p: *mut u32, compare: u32, new: u32) -> u32 {
    host_point();
    // SAFETY: the caller guarantees `p` is valid and aligned for the launch, and every
    // access to it while the kernel runs is atomic.
    match unsafe { AtomicU32::from_ptr(p) }.compare_exchange(compare, new, Relaxed, Relaxed) {
        Ok(old) | Err(old) => old,
    }
}

/// `*p += v` on a 64-bit counter; returns the old value.
///
/// # Safety
/// `p` must be valid for reads and writes for the whole launch, 8-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn atomic_add_u64(p: *mut u64, v: u64) -> u64 {
    host_point();
    // SAFETY: the caller guarantees `p` is valid and aligned for the launch, and every
    // access to it while the kernel runs is atomic.
    unsafe { AtomicU64::from_ptr(p) }.fetch_add(v, Relaxed)
}

/// `*p = max(*p, v)` on a 64-bit word (unsigned); returns the old value.
///
/// # Safety
/// `p` must be valid for reads and writes for the whole launch, 8-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn atomic_max_u64(p: *mut u64, v: u64) -> u64 {
    host_point();
    // SAFETY: the caller guarantees `p` is valid and aligned for the launch, and every
    // access to it while the kernel runs is atomic.
    unsafe { AtomicU64::from_ptr(p) }.fetch_max(v, Relaxed)
}

/// A clock in nanoseconds shared by every SM (`%globaltimer` on the GPU, the system
/// clock on the host): for timing stages of a kernel, not for arithmetic.
#[inline(always)]
pub fn global_timer() -> u64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u64;
        // SAFETY: an instruction on registers only (no memory operand).
        unsafe { core::arch::asm!("mov.u64 {r}, %globaltimer;", r = out(reg64) r) };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    }
}

/// Compare-and-swap on a 64-bit word: `if *p == compare { *p = new }`; returns the old value.
///
/// # Safety
/// `p` must be valid for reads and writes for the whole launch, 8-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn atomic_cas_u64(p: *mut u64, compare: u64, new: u64) -> u64 {
    host_point();
    // SAFETY: the caller guarantees `p` is valid and aligned for the launch, and every
    // access to it while the kernel runs is atomic.
    match unsafe { AtomicU64::from_ptr(p) }.compare_exchange(compare, new, Relaxed, Relaxed) {
        Ok(old) | Err(old) => old,
    }
}

/// `*p = v` on a 64-bit word; returns the old value.
///
/// # Safety
/// `p` must be valid for reads and writes for the whole launch, 8-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn atomic_exch_u64(p: *mut u64, v: u64) -> u64 {
    host_point();
    // SAFETY: the caller guarantees `p` is valid and aligned for the launch, and every
    // access to it while the kernel runs is atomic.
    unsafe { AtomicU64::from_ptr(p) }.swap(v, Relaxed)
}

/// Reads a word that another agent (the host, another block) may change while the
/// kernel runs: on the GPU `ld.volatile` (a relaxed system-scope load: not cached in L1,
/// and, being inline assembly, never hoisted out of a spin loop); on the host emulator
/// a sequentially consistent atomic load.
///
/// # Safety
/// `p` must be valid for reads, 4-byte aligned (global, shared or mapped host memory).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn volatile_load_u32(p: *const u32) -> u32 {
    host_point();
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: the caller guarantees `p` is valid for reads and aligned.
        unsafe {
            core::arch::asm!("ld.volatile.u32 {r}, [{p}];", r = out(reg32) r, p = in(reg64) p)
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        // SAFETY: the caller guarantees `p` is valid and aligned for the launch, and every
        // access to it while the kernel runs is atomic.
        unsafe { AtomicU32::from_ptr(p as *mut u32) }.load(core::sync::atomic::Ordering::SeqCst)
    }
}

/// [`volatile_load_u32`] for a 64-bit word (8-byte aligned).
///
/// # Safety
/// `p` must be valid for reads, 8-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn volatile_load_u64(p: *const u64) -> u64 {
    host_point();
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u64;
        // SAFETY: the caller guarantees `p` is valid for reads and aligned.
        unsafe {
            core::arch::asm!("ld.volatile.u64 {r}, [{p}];", r = out(reg64) r, p = in(reg64) p)
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        // SAFETY: the caller guarantees `p` is valid and aligned for the launch, and every
        // access to it while the kernel runs is atomic.
        unsafe { AtomicU64::from_ptr(p as *mut u64) }.load(core::sync::atomic::Ordering::SeqCst)
    }
}

/// Writes a word another agent reads while the kernel runs (`st.volatile` on the GPU,
/// a sequentially consistent atomic store on the host emulator).
///
/// # Safety
/// `p` must be valid for writes, 4-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn volatile_store_u32(p: *mut u32, v: u32) {
    host_point();
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller guarantees `p` is valid for writes and aligned.
    unsafe {
        core::arch::asm!("st.volatile.u32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v)
    };
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller guarantees `p` is valid and aligned for the launch, and every
    // access to it while the kernel runs is atomic.
    unsafe { AtomicU32::from_ptr(p) }.store(v, core::sync::atomic::Ordering::SeqCst);
}

/// [`volatile_store_u32`] for a 64-bit word (8-byte aligned).
///
/// # Safety
/// `p` must be valid for writes, 8-byte aligned.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn volatile_store_u64(p: *mut u64, v: u64) {
    host_point();
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller guarantees `p` is valid for writes and aligned.
    unsafe {
        core::arch::asm!("st.volatile.u64 [{p}], {v};", p = in(reg64) p, v = in(reg64) v)
    };
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller guarantees `p` is valid and aligned for the launch, and every
    // access to it while the kernel runs is atomic.
    unsafe { AtomicU64::from_ptr(p) }.store(v, core::sync::atomic::Ordering::SeqCst);
}

/// Publishes a word to the host and the whole GPU: every earlier write of this thread
/// becomes visible before it (`st.release.sys` on the GPU: one instruction instead of
/// `membar.sys` and a store; a release store on the host emulator). The flag store of
/// a result written to mapped host memory.
///
/// # Safety
/// `p` must be valid for writes, 8-byte aligned.
#[inline(always)]
pub unsafe fn store_release_system_u64(p: *mut u64, v: u64) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract (`# Safety`): `p` is valid and aligned for
    // this access; the instruction touches only that memory.
    unsafe {
        core::arch::asm!("st.release.sys.u64 [{p}], {v};", p = in(reg64) p, v = in(reg64) v)
    };
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller's contract (`# Safety`): `p` is valid and aligned for
    // this access; on the host every agent touches the word atomically.
    unsafe { AtomicU64::from_ptr(p) }.store(v, core::sync::atomic::Ordering::SeqCst);
}

/// Reads a word the host or another block publishes with a release store: no later
/// read of this thread is satisfied before it (`ld.acquire.sys` on the GPU, never
/// cached, never hoisted; an acquire load on the host emulator). The flag load of a
/// spin loop, without a separate `membar.sys` once the flag is seen.
///
/// # Safety
/// `p` must be valid for reads, 8-byte aligned (global or mapped host memory).
#[inline(always)]
pub unsafe fn load_acquire_system_u64(p: *const u64) -> u64 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u64;
        // SAFETY: the caller's contract (`# Safety`): `p` is valid and aligned for
        // this access; the instruction touches only that memory.
        unsafe {
            core::arch::asm!("ld.acquire.sys.u64 {r}, [{p}];", r = out(reg64) r, p = in(reg64) p)
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        // SAFETY: the caller's contract (`# Safety`): `p` is valid and aligned for
        // this access; on the host every agent touches the word atomically.
        unsafe { AtomicU64::from_ptr(p as *mut u64) }.load(core::sync::atomic::Ordering::SeqCst)
    }
}

/// Reads a tagged pair `[tag, word]` (16-byte aligned) that another agent writes with
/// [`volatile_store_pair`] or, on the host, word first and tag last: one 16-byte
/// `ld.volatile.v2.u64` on the GPU, so that one transaction brings both (a request
/// polled this way needs no second round trip over the bus); on the host emulator the
/// tag then the word, each a sequentially consistent atomic load, so that a tag seen
/// new vouches for its word.
///
/// # Safety
/// `p` must be valid for reads of two words, 16-byte aligned.
#[inline(always)]
pub unsafe fn volatile_load_pair(p: *const u64) -> (u64, u64) {
    #[cfg(target_arch = "nvptx64")]
    {
        let (t, w): (u64, u64);
        // SAFETY: the caller's contract (`# Safety`): `p` is valid and aligned for
        // this access; the instruction touches only that memory.
        unsafe {
            core::arch::asm!(
                "ld.volatile.v2.u64 {{{t}, {w}}}, [{p}];",
                t = out(reg64) t, w = out(reg64) w, p = in(reg64) p
            )
        };
        (t, w)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        // SAFETY: the caller's contract (`# Safety`): `p` is valid and aligned for
        // this access; on the host every agent touches the word atomically.
        let t = unsafe { AtomicU64::from_ptr(p as *mut u64) }
            .load(core::sync::atomic::Ordering::SeqCst);
        // SAFETY: the caller's contract (`# Safety`): `p` is valid and aligned for
        // this access; on the host every agent touches the word atomically.
        let w = unsafe { AtomicU64::from_ptr(p.add(1) as *mut u64) }
            .load(core::sync::atomic::Ordering::SeqCst);
        (t, w)
    }
}

/// Writes a tagged pair `[tag, word]` (16-byte aligned) that other blocks read with
/// [`volatile_load_pair`]: one 16-byte `st.volatile.v2.u64` on the GPU; on the host
/// emulator the word, then the tag.
///
/// # Safety
/// `p` must be valid for writes of two words, 16-byte aligned.
#[inline(always)]
pub unsafe fn volatile_store_pair(p: *mut u64, tag: u64, word: u64) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract (`# Safety`): `p` is valid and aligned for
    // this access; the instruction touches only that memory.
    unsafe {
        core::arch::asm!(
            "st.volatile.v2.u64 [{p}], {{{t}, {w}}};",
            p = in(reg64) p, t = in(reg64) tag, w = in(reg64) word
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        // SAFETY: the caller's contract (`# Safety`): `p` is valid and aligned for
        // this access; on the host every agent touches the word atomically.
        unsafe { AtomicU64::from_ptr(p.add(1)) }.store(word, core::sync::atomic::Ordering::SeqCst);
        // SAFETY: the caller's contract (`# Safety`): `p` is valid and aligned for
        // this access; on the host every agent touches the word atomically.
        unsafe { AtomicU64::from_ptr(p) }.store(tag, core::sync::atomic::Ordering::SeqCst);
    }
}

/// `*p += v` with release semantics at GPU scope and no result (`red.release.gpu.add`
/// on the GPU: the block's arrival, which need not wait for the atomic's answer; a
/// sequentially consistent add on the host emulator).
///
/// # Safety
/// `p` must be valid for reads and writes, 4-byte aligned, in global memory.
#[inline(always)]
pub unsafe fn red_release_add(p: *mut u32, v: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller's contract (`# Safety`): `p` is valid and aligned for
    // this access; the instruction touches only that memory.
    unsafe {
        core::arch::asm!("red.release.gpu.add.u32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v)
    };
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller's contract (`# Safety`): `p` is valid and aligned for
    // this access; on the host every agent touches the word atomically.
    unsafe { AtomicU32::from_ptr(p) }.fetch_add(v, core::sync::atomic::Ordering::SeqCst);
}

/// Reads a word that other blocks change with release operations
/// ([`red_release_add`]), with acquire semantics at GPU scope (`ld.acquire.gpu`: never
/// cached in L1, never hoisted; a sequentially consistent load on the host emulator).
///
/// # Safety
/// `p` must be valid for reads, 4-byte aligned, in global memory.
#[inline(always)]
pub unsafe fn load_acquire_u32(p: *const u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: u32;
        // SAFETY: the caller's contract (`# Safety`): `p` is valid and aligned for
        // this access; the instruction touches only that memory.
        unsafe {
            core::arch::asm!("ld.acquire.gpu.u32 {r}, [{p}];", r = out(reg32) r, p = in(reg64) p)
        };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        // SAFETY: the caller's contract (`# Safety`): `p` is valid and aligned for
        // this access; on the host every agent touches the word atomically.
        unsafe { AtomicU32::from_ptr(p as *mut u32) }.load(core::sync::atomic::Ordering::SeqCst)
    }
}

/// Square root (IEEE, correctly rounded).
#[inline(always)]
pub fn sqrtf(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: an instruction on registers only (no memory operand).
        unsafe { core::arch::asm!("sqrt.rn.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x) };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.sqrt()
    }
}

/// Largest integer value not greater than `x`.
#[inline(always)]
pub fn floorf(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let r: f32;
        // SAFETY: an instruction on registers only (no memory operand).
        unsafe { core::arch::asm!("cvt.rmi.f32.f32 {r}, {x};", r = out(reg32) r, x = in(reg32) x) };
        r
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x.floor()
    }
}

/// The hardware side of the prelude.
#[cfg(target_arch = "nvptx64")]
mod gpu {
    use core::arch::nvptx;

    macro_rules! sreg {
        ($($name:ident => $intr:ident;)*) => {$(
            #[doc = concat!("`", stringify!($intr), "` of the running thread.")]
            #[inline(always)]
            pub fn $name() -> u32 {
                // SAFETY: a special-register read or `bar.sync`, valid in any kernel.
                unsafe { nvptx::$intr() as u32 }
            }
        )*};
    }
    sreg! {
        thread_idx_x => _thread_idx_x; thread_idx_y => _thread_idx_y; thread_idx_z => _thread_idx_z;
        block_idx_x => _block_idx_x; block_idx_y => _block_idx_y; block_idx_z => _block_idx_z;
        block_dim_x => _block_dim_x; block_dim_y => _block_dim_y; block_dim_z => _block_dim_z;
        grid_dim_x => _grid_dim_x; grid_dim_y => _grid_dim_y; grid_dim_z => _grid_dim_z;
    }

    /// Block-wide barrier (`bar.sync 0`).
    #[inline(always)]
    pub fn sync_threads() {
        // SAFETY: a special-register read or `bar.sync`, valid in any kernel.
        unsafe { nvptx::_syncthreads() }
    }

    #[repr(C, align(16))]
    struct Align16([u8; 16]);

    /// The block's dynamic shared memory (size set at launch), 16-byte aligned.
    #[inline(always)]
    pub fn dynamic_shared<T>() -> *mut T {
        core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<Align16>() as *mut T
    }

    /// Orders this thread's memory accesses for every thread of the device (`membar.gl`).
    #[inline(always)]
    pub fn thread_fence() {
        // SAFETY: an instruction on registers only (no memory operand).
        unsafe { core::arch::asm!("membar.gl;") }
    }

    /// Orders this thread's memory accesses for every agent of the system, the host
    /// included (`membar.sys`): the write of a result to mapped host memory before the
    /// write of the flag that publishes it.
    #[inline(always)]
    pub fn fence_system() {
        // SAFETY: an instruction on registers only (no memory operand).
        unsafe { core::arch::asm!("membar.sys;") }
    }

    /// One turn of a spin loop (nothing on the GPU: the loop's volatile load is its pace).
    #[inline(always)]
    pub fn spin_pause() {}

    /// Orders this thread's memory accesses for the threads of its block (`membar.cta`).
    #[inline(always)]
    pub fn thread_fence_block() {
        // SAFETY: an instruction on registers only (no memory operand).
        unsafe { core::arch::asm!("membar.cta;") }
    }

    #[allow(improper_ctypes)]
    extern "C" {
        #[link_name = "llvm.nvvm.vote.ballot.sync"]
        fn vote_ballot(mask: u32, p: bool) -> u32;
        #[link_name = "llvm.nvvm.vote.any.sync"]
        fn vote_any(mask: u32, p: bool) -> bool;
        #[link_name = "llvm.nvvm.vote.all.sync"]
        fn vote_all(mask: u32, p: bool) -> bool;
        #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
        fn shfl_idx(mask: u32, v: i32, lane: i32, c: i32) -> i32;
        #[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]
        fn shfl_bfly(mask: u32, v: i32, lane_mask: i32, c: i32) -> i32;
        #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
        fn shfl_dn(mask: u32, v: i32, delta: i32, c: i32) -> i32;
        #[link_name = "llvm.nvvm.shfl.sync.up.i32"]
        fn shfl_u(mask: u32, v: i32, delta: i32, c: i32) -> i32;
        #[link_name = "llvm.nvvm.bar.warp.sync"]
        fn bar_warp_sync(mask: u32);
    }
    const FULL: u32 = 0xffff_ffff;

    /// Bit `i` set iff lane `i` of the warp passed `true`.
    #[inline(always)]
    pub fn ballot(p: bool) -> u32 {
        // SAFETY: a warp intrinsic with the full mask; every live lane of the warp
        // calls it together (the prelude's documented rule).
        unsafe { vote_ballot(FULL, p) }
    }
    /// True iff some lane of the warp passed `true`.
    #[inline(always)]
    pub fn any_sync(p: bool) -> bool {
        // SAFETY: a warp intrinsic with the full mask; every live lane of the warp
        // calls it together (the prelude's documented rule).
        unsafe { vote_any(FULL, p) }
    }
    /// True iff every lane of the warp passed `true`.
    #[inline(always)]
    pub fn all_sync(p: bool) -> bool {
        // SAFETY: a warp intrinsic with the full mask; every live lane of the warp
        // calls it together (the prelude's documented rule).
        unsafe { vote_all(FULL, p) }
    }
    /// The warp's barrier (`bar.warp.sync`): every lane waits for the others, and the
    /// shared-memory accesses before it are visible to every lane after it.
    #[inline(always)]
    pub fn sync_warp() {
        // SAFETY: a warp intrinsic with the full mask; every live lane of the warp
        // calls it together (the prelude's documented rule).
        unsafe { bar_warp_sync(FULL) }
    }
    /// `v` of lane `src`.
    #[inline(always)]
    pub fn shfl(v: u32, src: u32) -> u32 {
        // SAFETY: a warp intrinsic with the full mask; every live lane of the warp
        // calls it together (the prelude's documented rule).
        unsafe { shfl_idx(FULL, v as i32, src as i32, 0x1f) as u32 }
    }
    /// `v` of lane `lane_id() ^ lane_mask`.
    #[inline(always)]
    pub fn shfl_xor(v: u32, lane_mask: u32) -> u32 {
        // SAFETY: a warp intrinsic with the full mask; every live lane of the warp
        // calls it together (the prelude's documented rule).
        unsafe { shfl_bfly(FULL, v as i32, lane_mask as i32, 0x1f) as u32 }
    }
    /// `v` of lane `lane_id() + delta`, or the caller's own `v` past the warp's end.
    #[inline(always)]
    pub fn shfl_down(v: u32, delta: u32) -> u32 {
        // SAFETY: a warp intrinsic with the full mask; every live lane of the warp
        // calls it together (the prelude's documented rule).
        unsafe { shfl_dn(FULL, v as i32, delta as i32, 0x1f) as u32 }
    }
    /// `v` of lane `lane_id() - delta`, or the caller's own `v` below lane 0.
    #[inline(always)]
    pub fn shfl_up(v: u32, delta: u32) -> u32 {
        // SAFETY: a warp intrinsic with the full mask; every live lane of the warp
        // calls it together (the prelude's documented rule).
        unsafe { shfl_u(FULL, v as i32, delta as i32, 0) as u32 }
    }
}
