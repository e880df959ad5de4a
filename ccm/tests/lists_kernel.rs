//! The index's answer kernels on the host emulator against a CPU listing of the same
//! bitmaps: `ccm_index_lists` (a thread per event for rows of at most `LIST_WORDS`
//! words, else a block of 1 to `LIST_WARPS` warps per event, each a segment of the row)
//! and, when the lists' buffer is too small, `ccm_index_answers` after it, as the index
//! runs them. Seeded random rows of many lengths and densities (empty, sparse, dense,
//! full words, a segment boundary inside or outside the row).

use ccm_kernels::index::{
    ccm_index_answers, ccm_index_lists, LIST_SHARED, LIST_WARPS, LIST_WORDS, WALK_SLOTS,
    WALK_STRIDE, WALK_WORDS, WARP_BLOCK,
};
use gpu_kernels::{Device, LaunchConfig};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// `n` rows of `words` words, each bit set with probability `p` (some rows empty, some
/// with a run of full words).
fn rows(rng: &mut ChaCha8Rng, n: usize, words: usize, p: f64) -> Vec<u32> {
    let mut bits = vec![0u32; n * words];
    for (e, row) in bits.chunks_exact_mut(words).enumerate() {
        if e % 5 == 3 {
            continue; // an empty row
        }
        for (w, word) in row.iter_mut().enumerate() {
            if e % 7 == 2 && w % 11 == 0 {
                *word = u32::MAX;
                continue;
            }
            for b in 0..32 {
                if rng.gen_bool(p) {
                    *word |= 1 << b;
                }
            }
        }
    }
    bits
}

/// The CPU listing: per event the user ids of its set bits, ascending by rank.
fn oracle(bits: &[u32], words: usize, user_ids: &[u32]) -> Vec<Vec<u32>> {
    bits.chunks_exact(words)
        .map(|row| {
            let mut ids = Vec::new();
            for (w, &word) in row.iter().enumerate() {
                for b in 0..32 {
                    if word >> b & 1 == 1 {
                        ids.push(user_ids[w * 32 + b]);
                    }
                }
            }
            ids
        })
        .collect()
}

/// The lists kernel's launch as the index makes it, with `warps` warps per event for
/// long rows.
fn lists_launch(words: u32, n: u32, warps: u32) -> LaunchConfig {
    if words <= LIST_WORDS {
        LaunchConfig::linear(n, WARP_BLOCK)
    } else {
        LaunchConfig::blocks(n, 32 * warps.min(words.div_ceil(32)), LIST_SHARED)
    }
}

/// The answers kernel's launch as the index makes it.
fn answers_launch(words: u32, n: u32, warps: u32) -> LaunchConfig {
    if words <= LIST_WORDS {
        LaunchConfig::blocks(n.div_ceil(WARP_BLOCK / 32), WARP_BLOCK, 0)
    } else {
        lists_launch(words, n, warps)
    }
}

/// Lists `bits` (`n` rows of `words`) on the emulator with room for `room` ids (the
/// answers kernel after, in a buffer of the total, when that is too few) and checks every
/// event's list, the spans, the total, the rows zeroed and the counters moved.
fn check(bits: &[u32], n: usize, words: usize, warps: u32, room: usize) {
    let dev = Device::emulator();
    let ranks = words * 32;
    let user_ids: Vec<u32> = (0..ranks as u32).map(|r| 3 * r + 7).collect();
    let want = oracle(bits, words, &user_ids);
    let want_total: usize = want.iter().map(Vec::len).sum();
    let bits_d = dev.upload(bits).unwrap();
    let uid = dev.upload(&user_ids).unwrap();
    let mut spans = dev.alloc_host::<u32>(2 * n).unwrap();
    let ids = dev.alloc::<u32>(room.max(1)).unwrap();
    let total = dev.alloc::<u32>(1).unwrap();
    let dense = dev.upload(&[5u32]).unwrap();
    // The walk's counters: 9 groups of filters over three of them.
    let mut counters = vec![0u32; WALK_WORDS];
    let stride = WALK_STRIDE as usize;
    (
        counters[0],
        counters[stride],
        counters[(WALK_SLOTS as usize - 1) * stride],
    ) = (4, 2, 3);
    let walked = dev.upload(&counters).unwrap();
    let mut n_dense = dev.alloc_host::<u32>(2).unwrap();
    let (w, n32) = (words as u32, n as u32);
    let cap = room as u32;
    ccm_index_lists::launch(
        &dev,
        lists_launch(w, n32, warps),
        &bits_d,
        w,
        n32,
        &uid,
        &mut spans,
        &ids,
        cap,
        &total,
        &dense,
        &walked,
        &mut n_dense,
    )
    .unwrap();
    dev.synchronize().unwrap();
    let shape = format!("{n} events, {words} words, {warps} warps, room {room}");
    assert_eq!(dev.read(&total).unwrap()[0] as usize, want_total, "{shape}");
    assert_eq!(n_dense.as_slice(), &[5, 9], "{shape}: counters moved");
    assert_eq!(dev.read(&dense).unwrap()[0], 0, "{shape}");
    assert!(
        dev.read(&walked).unwrap().iter().all(|&c| c == 0),
        "{shape}"
    );
    let sp: Vec<(usize, usize)> = spans
        .as_slice()
        .chunks_exact(2)
        .map(|s| (s[0] as usize, s[1] as usize))
        .collect();
    // The places: each event's count, disjoint, together 0..total.
    let mut placed: Vec<(usize, usize)> = sp.iter().copied().filter(|s| s.1 > 0).collect();
    placed.sort();
    let mut end = 0;
    for (i, &(_, count)) in sp.iter().enumerate() {
        assert_eq!(count, want[i].len(), "{shape}: event {i}'s count");
    }
    for &(at, count) in &placed {
        assert_eq!(at, end, "{shape}: places laid end to end");
        end += count;
    }
    assert_eq!(end, want_total, "{shape}");
    let listed = if want_total <= room {
        dev.read(&ids).unwrap()
    } else {
        // As the index does: the lists moved to a buffer of the total, the rest listed.
        let first = dev.read(&ids).unwrap();
        let mut big = dev.alloc::<u32>(want_total).unwrap();
        dev.write(&mut big, 0, &first).unwrap();
        ccm_index_answers::launch(
            &dev,
            answers_launch(w, n32, warps),
            &bits_d,
            w,
            n32,
            &uid,
            &spans,
            &big,
            want_total as u32,
            &total,
        )
        .unwrap();
        dev.synchronize().unwrap();
        dev.read(&big).unwrap()
    };
    for (i, &(at, count)) in sp.iter().enumerate() {
        assert_eq!(
            &listed[at..at + count],
            want[i].as_slice(),
            "{shape}: event {i}'s list"
        );
    }
    assert!(
        dev.read(&bits_d).unwrap().iter().all(|&b| b == 0),
        "{shape}: every row zeroed for the next batch"
    );
}

#[test]
fn lists_of_rows_short_and_long_equal_the_cpu_listing_with_room_or_listed_again() {
    let mut rng = ChaCha8Rng::seed_from_u64(53);
    // Row lengths: a thread per event (1-4 words); a block per event with one run of 32
    // words or a partial one, segments ending inside the row, more warps than runs.
    for words in [1, 3, 4, 5, 31, 32, 33, 97, 200, 641] {
        for (n, p) in [(1, 0.5), (9, 0.02), (40, 0.3)] {
            let bits = rows(&mut rng, n, words, p);
            let total: usize = bits.iter().map(|w| w.count_ones() as usize).sum();
            for warps in [1, 3, LIST_WARPS] {
                if words <= LIST_WORDS as usize && warps != 1 {
                    continue; // a thread per event: no warps to vary
                }
                check(&bits, n, words, warps, total.max(1));
                // Too little room: the lists kernel leaves some rows, the answers kernel
                // lists them.
                check(&bits, n, words, warps, total / 3);
            }
        }
    }
}

#[test]
fn a_batch_with_no_answer_lists_nothing_and_zeroes_nothing() {
    for words in [2, 70] {
        let bits = vec![0u32; 6 * words];
        check(&bits, 6, words, LIST_WARPS, 1);
    }
}
