//! The persistent-kernel facility (`gpu_kernels::persist`) on the emulator: the kernel
//! runs beside the host thread that feeds it, as on a GPU.

use gpu_kernels::persist::{self, DeviceRing, RingConfig, STOP};
use gpu_kernels::prelude::*;
use gpu_kernels::{Device, GpuError, LaunchConfig};
use std::sync::Arc;
use std::time::Duration;

/// Request kinds of [`ring_sum`].
const SUM: u32 = 1;
const HOLD: u32 = 2;
const FAIL: u32 = 3;

kernel! {
    /// A persistent service: a `SUM` request's payload words are summed by the whole grid
    /// (grid-stride, 64-bit atomics into `acc[round % 2]`, block 0 zeroing the other
    /// word for the next round); the answer is `[sum, round, blocks]`, status = kind.
    /// `HOLD`: thread 0 of block 0 answers only once the host has submitted the next
    /// request (its header's tag is in the next slot). `FAIL`: the kernel fails (a panic
    /// on the emulator).
    fn ring_sum(
        req: *const u64,
        resp: *mut u64,
        ctl: *mut u32,
        bcast: *mut u64,
        slots: u32,
        req_words: u32,
        resp_words: u32,
        acc: *mut u64,
    ) {
        let ring = DeviceRing { req, resp, ctl, bcast, slots, req_words, resp_words };
        persist::serve(
            &ring,
            dynamic_shared::<u64>(),
            |r| {
                if r.kind == FAIL {
                    panic!("asked to fail");
                }
                let parity = (r.round % 2) as usize;
                if global_id_x() == 0 {
                    *acc.add(1 - parity) = 0;
                }
                let mut i = global_id_x();
                let stride = grid_dim_x() * block_dim_x();
                while i < r.len {
                    atomic_add_u64(acc.add(parity), *r.words.add(i as usize));
                    i += stride;
                }
            },
            |r, out| {
                if thread_idx_x() == 0 {
                    if r.kind == HOLD {
                        let stride = persist::request_slot_words(req_words);
                        let next = req.add(((r.round + 1) % slots) as usize * stride);
                        while volatile_load_u64(next) != r.round as u64 + 2 {
                            spin_pause();
                        }
                    }
                    out.put(0, volatile_load_u64(acc.add((r.round % 2) as usize)));
                    out.put(1, r.round as u64);
                    out.put(2, grid_dim_x() as u64);
                }
                (r.kind, 3)
            },
        );
    }
}

fn launch(dev: &Device, slots: u32, blocks: u32) -> persist::Persistent {
    launch_with(dev, slots, blocks, 32, |_| {})
}

/// [`launch`] with `threads` per block, `setup` preparing the ring before the launch.
fn launch_with(
    dev: &Device,
    slots: u32,
    blocks: u32,
    threads: u32,
    setup: impl FnOnce(&mut persist::Ring),
) -> persist::Persistent {
    let cfg = RingConfig {
        slots,
        req_words: 100,
        resp_words: 4,
    };
    let mut ring = persist::Ring::new(dev, cfg).unwrap();
    setup(&mut ring);
    let lc = LaunchConfig::blocks(1, threads, persist::shared_bytes(cfg.req_words));
    // `acc` moves into the handle, which frees it once the kernel has stopped.
    let acc = dev.alloc::<u64>(2).unwrap();
    let mut k = ring_sum::launch_persistent(dev, lc, ring, Some(blocks), acc).unwrap();
    k.set_timeout(Duration::from_secs(30));
    k
}

fn payload(n: u64, seed: u64) -> Vec<u64> {
    (0..n).map(|i| i * 7 + seed).collect()
}

#[test]
fn persistent_kernel_answers_each_request_in_order_with_the_whole_grid() {
    let dev = Device::emulator();
    let mut k = launch(&dev, 4, 3);
    for round in 0..12u64 {
        let p = payload(round * 8 + 1, round);
        let seq = k.submit(SUM, &p).unwrap();
        assert_eq!(seq, round + 1);
        let r = k.wait().unwrap();
        assert_eq!(r.seq, round + 1);
        assert_eq!(r.status, SUM);
        assert_eq!(r.words, &[p.iter().sum::<u64>(), round, 3]);
    }
    k.stop().unwrap();
}

#[test]
fn persistent_kernel_with_stamps_answers_long_requests_in_order() {
    let dev = Device::emulator();
    let stamps = Arc::new(dev.alloc::<u64>(4 * persist::STAMP_WORDS).unwrap());
    // Blocks of two warps: the second reads the request that the first copied.
    let mut k = launch_with(&dev, 2, 3, 64, |ring| {
        ring.set_stamps(&dev, &stamps).unwrap();
    });
    for round in 0..6u64 {
        // 0, 20, ..., 100 words: within the first chunk of 32 pairs, and past it.
        let p = payload(round * 20, round);
        k.submit(SUM, &p).unwrap();
        let r = k.wait().unwrap();
        assert_eq!(r.seq, round + 1);
        assert_eq!(r.words, &[p.iter().sum::<u64>(), round, 3]);
    }
    k.stop().unwrap();
    // The first 4 rounds are stamped, in order of the stages (see `STAMP_WORDS`: poll
    // start, seen, broadcast; in shared, work done, all arrived, answered; the spare
    // word stays 0); the later ones are not.
    let st = dev.read(&stamps).unwrap();
    for r in st.chunks(persist::STAMP_WORDS) {
        assert!(r[0] > 0 && r[7] == 0, "{r:?}");
        let order = [(6, 0), (0, 1), (0, 2), (2, 3), (3, 4), (4, 5)];
        for (a, b) in order {
            assert!(r[a] <= r[b], "stage {a} after stage {b}: {r:?}");
        }
    }
}

#[test]
fn stage_times_are_medians_after_the_request_was_seen_skipping_unstamped_rounds() {
    let w = persist::STAMP_WORDS;
    let mut st = vec![0u64; 4 * w];
    // Rounds 0..3 stamped (seen at 1000 * (i + 1) ns), round 3 never reached.
    for i in 0..3u64 {
        let r = &mut st[i as usize * w..][..w];
        let seen = 1000 * (i + 1);
        r.copy_from_slice(&[
            seen,
            seen + 100,
            seen + 200 + 10 * i,
            seen + 300,
            seen + 400,
            seen + 500,
            seen - 50,
            0,
        ]);
    }
    let t = persist::StageTimes::from_stamps(&st);
    assert_eq!(t.rounds, 3);
    assert!((t.broadcast - 0.1).abs() < 1e-9);
    assert!(
        (t.in_shared - 0.21).abs() < 1e-9,
        "median of 0.20, 0.21, 0.22: {t:?}"
    );
    assert!((t.answered - 0.5).abs() < 1e-9);
    assert!((t.poll_start + 0.05).abs() < 1e-9);
    assert!(persist::StageTimes::from_stamps(&[]).broadcast.is_nan());
}

#[test]
fn persistent_kernel_pipelines_requests_up_to_the_ring_size() {
    let dev = Device::emulator();
    let mut k = launch(&dev, 3, 2);
    let payloads: Vec<Vec<u64>> = (0..20).map(|i| payload(5 + i % 7, i)).collect();
    let mut next = 0;
    let mut answered = 0;
    while answered < payloads.len() {
        while next < payloads.len() && !k.is_full() {
            k.submit(SUM, &payloads[next]).unwrap();
            next += 1;
        }
        assert!(k.in_flight() <= 3);
        // A full ring refuses one more request rather than overwrite a slot.
        if next < payloads.len() {
            assert!(matches!(
                k.submit(SUM, &payloads[next]),
                Err(GpuError::Persistent { .. })
            ));
        }
        let r = k.wait().unwrap();
        assert_eq!(r.seq, answered as u64 + 1);
        assert_eq!(r.words[0], payloads[answered].iter().sum::<u64>());
        answered += 1;
    }
}

#[test]
fn persistent_kernel_stops_in_order_after_the_requests_in_flight() {
    let dev = Device::emulator();
    let mut k = launch(&dev, 4, 2);
    for i in 0..3 {
        k.submit(SUM, &payload(4, i)).unwrap();
    }
    // Stop waits for the three answers, then the kernel ends without an error.
    k.stop().unwrap();
    // Dropping a handle stops its kernel too (no request in flight).
    let k = launch(&dev, 2, 2);
    drop(k);
}

#[test]
fn persistent_kernel_that_does_not_answer_is_a_timeout_error_not_a_hang() {
    let dev = Device::emulator();
    let mut k = launch(&dev, 2, 2);
    k.set_timeout(Duration::from_millis(300));
    k.submit(HOLD, &payload(3, 1)).unwrap();
    let e = k.wait().unwrap_err();
    assert!(
        matches!(&e, GpuError::Persistent { message, .. } if message.contains("no answer")),
        "{e}"
    );
    // Released by the next request, it answers the held one, then the next.
    k.submit(SUM, &[5, 6]).unwrap();
    k.set_timeout(Duration::from_secs(30));
    let r = k.wait().unwrap();
    assert_eq!((r.seq, r.status, r.words[0]), (1, HOLD, 24));
    assert_eq!(k.wait().unwrap().words[0], 11);
}

#[test]
fn persistent_kernel_failure_is_reported_by_wait_and_later_calls() {
    let dev = Device::emulator();
    let mut k = launch(&dev, 2, 2);
    k.submit(FAIL, &[]).unwrap();
    let e = k.wait().unwrap_err();
    assert!(
        matches!(&e, GpuError::Kernel { message, .. } if message.contains("asked to fail")),
        "{e}"
    );
    assert!(k.submit(SUM, &[1]).is_err());
    // Dropping the failed kernel's handle does not hang.
    drop(k);
}

#[test]
fn persistent_ring_refuses_reserved_kinds_and_oversized_requests() {
    let dev = Device::emulator();
    let mut k = launch(&dev, 2, 1);
    assert!(k.submit(STOP, &[]).is_err());
    assert!(k.submit(SUM, &[0; 101]).is_err());
    assert!(k.wait().is_err(), "nothing in flight");
    k.submit(SUM, &[0; 100]).unwrap();
    assert_eq!(k.wait().unwrap().words[0], 0);
}

#[test]
fn persistent_kernel_keeps_its_buffers_alive_and_unwritable_until_it_stops() {
    let dev = Device::emulator();
    let cfg = RingConfig {
        slots: 2,
        req_words: 100,
        resp_words: 4,
    };
    let ring = persist::Ring::new(&dev, cfg).unwrap();
    let before = dev.allocated_bytes(); // the ring's control block and broadcast area
    let mut acc = Arc::new(dev.alloc::<u64>(2).unwrap());
    let lc = LaunchConfig::blocks(1, 32, persist::shared_bytes(cfg.req_words));
    let mut k = ring_sum::launch_persistent(&dev, lc, ring, Some(2), &acc).unwrap();
    // The kernel holds a clone: the host cannot write the buffer (`Device::write` and
    // `Device::zero` take `&mut Buffer`)...
    assert!(Arc::get_mut(&mut acc).is_none());
    // ...and dropping the host's handle does not free it.
    drop(acc);
    assert_eq!(dev.allocated_bytes(), before + 16);
    k.submit(SUM, &[1, 2, 3]).unwrap();
    assert_eq!(k.wait().unwrap().words[0], 6);
    k.stop().unwrap();
    // Stopped, the handle freed it with the ring (the device's only buffers).
    assert_eq!(dev.allocated_bytes(), 0);
}
