//! Self-tests of `gpu-kernels` with known answers: a block reduction through shared
//! memory and barriers, early-returning threads followed by a barrier, warp ballot and
//! shuffles, heavy atomic contention, and kernels reading and writing mapped host memory.
//!
//! [`run_all`] runs each on a [`Device`] (the GPU or the emulator) and compares with the
//! answer computed on the host. `cargo test` runs them on the emulator; `harness
//! selftest` on the GPU.

use gpu_kernels::{Device, GpuError, LaunchConfig};
use gpu_selftest_kernels as k;

/// PTX of the self-test kernels.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/kernels.ptx"));

/// One self-test's outcome.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub name: &'static str,
    /// `None` when the answer was right, else what differed.
    pub failure: Option<String>,
}

/// Input sizes: small for the emulator, larger for the GPU.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub blocks: u32,
    pub block: u32,
    pub reps: u32,
}

impl Sizes {
    /// A few blocks: what the emulator runs in a second.
    pub const SMALL: Sizes = Sizes {
        blocks: 3,
        block: 128,
        reps: 4,
    };
    /// Enough blocks to fill a large GPU.
    pub const LARGE: Sizes = Sizes {
        blocks: 4096,
        block: 256,
        reps: 64,
    };
}

/// Runs every self-test on `dev`; `Err` only when the device itself fails.
pub fn run_all(dev: &Device, s: Sizes) -> Result<Vec<Outcome>, GpuError> {
    Ok(vec![
        Outcome {
            name: "block_sum (shared memory, barriers)",
            failure: block_sum(dev, s)?,
        },
        Outcome {
            name: "early_exit_barrier (exited threads leave the barrier)",
            failure: early_exit(dev, s)?,
        },
        Outcome {
            name: "warp_vote_shuffle (ballot, shfl, shfl_xor, shfl_down)",
            failure: warp(dev, s)?,
        },
        Outcome {
            name: "atomic_contention (add, or, max, add_u64)",
            failure: atomics(dev, s)?,
        },
        Outcome {
            name: "block_sum over mapped host memory (zero-copy in and out)",
            failure: mapped(dev, s)?,
        },
        Outcome {
            name: "struct_params (a #[repr(C)] parameter struct passed by value)",
            failure: struct_params(dev, s)?,
        },
        Outcome {
            name: "persistent_sum (persistent kernel: ring in mapped memory, pipelined, stop)",
            failure: persistent(dev, s)?,
        },
    ])
}

/// The persistent kernel: `reps * 16` requests of up to 1000 words, up to 8 in flight,
/// one block per SM on the GPU (3 blocks on the emulator); every answer checked, then
/// an orderly stop.
fn persistent(dev: &Device, s: Sizes) -> Result<Option<String>, GpuError> {
    use gpu_kernels::persist::{Ring, RingConfig};
    let cfg = RingConfig {
        slots: 8,
        req_words: 1000,
        resp_words: 3,
    };
    let ring = Ring::new(dev, cfg)?;
    let lc = LaunchConfig::blocks(
        1,
        s.block,
        gpu_kernels::persist::shared_bytes(cfg.req_words),
    );
    let blocks = if dev.is_gpu() { None } else { Some(s.blocks) };
    // `acc` (moved in) lives as long as the kernel: the handle frees it once stopped.
    let acc = dev.alloc::<u64>(2)?;
    let mut run = k::persistent_sum::launch_persistent(dev, lc, ring, blocks, acc)?;
    let n = s.reps as usize * 16;
    let payloads: Vec<Vec<u64>> = (0..n)
        .map(|r| {
            let len = (r * 37) % 1001;
            (0..len as u64).map(|i| i * 3 + r as u64).collect()
        })
        .collect();
    let (mut next, mut done) = (0, 0);
    while done < n {
        while next < n && !run.is_full() {
            run.submit(7, &payloads[next])?;
            next += 1;
        }
        let r = run.wait()?;
        let want = payloads[done].iter().sum::<u64>();
        if r.status != 7 || r.words.len() != 3 || r.words[0] != want || r.words[1] != done as u64 {
            return Ok(Some(format!(
                "request {}: expected status 7, sum {want}, round {done}; got status {}, {:?}",
                done + 1,
                r.status,
                r.words
            )));
        }
        done += 1;
    }
    run.stop()?;
    Ok(None)
}

fn first_diff(what: &str, want: &[u32], got: &[u32]) -> Option<String> {
    (0..want.len())
        .find(|&i| want[i] != got[i])
        .map(|i| format!("{what}[{i}]: expected {}, got {}", want[i], got[i]))
}

fn block_sum(dev: &Device, s: Sizes) -> Result<Option<String>, GpuError> {
    let n = s.blocks * s.block - s.block / 3; // the last block is partly past the input
    let input: Vec<u32> = (0..n)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 20)
        .collect();
    let inp = dev.upload(&input)?;
    let sums = dev.alloc::<u32>(s.blocks as usize)?;
    let cfg = LaunchConfig::blocks(s.blocks, s.block, s.block * 4);
    k::block_sum::launch(dev, cfg, &inp, n, &sums)?;
    let want: Vec<u32> = input
        .chunks(s.block as usize)
        .map(|c| c.iter().sum())
        .collect();
    Ok(first_diff("sums", &want, &dev.read(&sums)?))
}

fn mapped(dev: &Device, s: Sizes) -> Result<Option<String>, GpuError> {
    let n = s.blocks * s.block;
    let mut input = dev.alloc_host::<u32>(n as usize)?;
    for (i, v) in input.as_mut_slice().iter_mut().enumerate() {
        *v = (i as u32).wrapping_mul(40_503) >> 7;
    }
    let mut sums = dev.alloc_host::<u32>(s.blocks as usize)?;
    let cfg = LaunchConfig::blocks(s.blocks, s.block, s.block * 4);
    k::block_sum::launch(dev, cfg, &input, n, &mut sums)?;
    dev.synchronize()?;
    let want: Vec<u32> = input
        .as_slice()
        .chunks(s.block as usize)
        .map(|c| c.iter().sum())
        .collect();
    Ok(first_diff("sums", &want, sums.as_slice()))
}

fn early_exit(dev: &Device, s: Sizes) -> Result<Option<String>, GpuError> {
    let out = dev.alloc::<u32>(s.blocks as usize)?;
    let cfg = LaunchConfig::blocks(s.blocks, s.block, s.block / 2 * 4);
    k::early_exit_barrier::launch(dev, cfg, &out)?;
    let even_sum: u32 = (0..s.block).filter(|t| t % 2 == 0).sum();
    Ok(first_diff(
        "out",
        &vec![even_sum; s.blocks as usize],
        &dev.read(&out)?,
    ))
}

fn warp(dev: &Device, s: Sizes) -> Result<Option<String>, GpuError> {
    let threads = s.blocks * s.block;
    let out = dev.alloc::<u32>(4 * threads as usize)?;
    k::warp_vote_shuffle::launch(dev, LaunchConfig::blocks(s.blocks, s.block, 0), &out)?;
    let ballot = (0..32)
        .filter(|l| l % 3 == 0)
        .fold(0u32, |m, l| m | (1 << l));
    let want: Vec<u32> = (0..threads)
        .flat_map(|t| {
            let lane = t % 32;
            [
                ballot,
                (0..32).sum(),
                1,
                if lane == 31 { 31 } else { lane + 1 },
            ]
        })
        .collect();
    Ok(first_diff("out", &want, &dev.read(&out)?))
}

fn atomics(dev: &Device, s: Sizes) -> Result<Option<String>, GpuError> {
    let n = s.blocks * s.block;
    let buckets = 7u32;
    let counters = dev.alloc::<u32>(buckets as usize + 1)?;
    let bits = dev.alloc::<u32>(n.div_ceil(32) as usize)?;
    let sum64 = dev.alloc::<u64>(1)?;
    k::atomic_contention::launch(
        dev,
        LaunchConfig::blocks(s.blocks, s.block, 0),
        &counters,
        buckets,
        s.reps,
        &bits,
        &sum64,
        n,
    )?;
    let mut want: Vec<u32> = (0..buckets)
        .map(|b| (0..n).filter(|i| i % buckets == b).count() as u32 * s.reps)
        .collect();
    want.push(n - 1);
    if let Some(d) = first_diff("counters", &want, &dev.read(&counters)?) {
        return Ok(Some(d));
    }
    let want_bits: Vec<u32> = (0..n.div_ceil(32))
        .map(|w| {
            (0..32)
                .filter(|b| w * 32 + b < n)
                .fold(0, |m, b| m | (1 << b))
        })
        .collect();
    if let Some(d) = first_diff("bits", &want_bits, &dev.read(&bits)?) {
        return Ok(Some(d));
    }
    let want_sum = n as u64 * (n as u64 - 1) / 2;
    let got = dev.read(&sum64)?[0];
    Ok((got != want_sum).then(|| format!("sum64: expected {want_sum}, got {got}")))
}

fn struct_params(dev: &Device, s: Sizes) -> Result<Option<String>, GpuError> {
    let n = s.blocks * s.block - 5;
    let x: Vec<u32> = (0..n)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 12)
        .collect();
    let xb = dev.upload(&x)?;
    let y = dev.alloc::<u64>(n as usize)?;
    let table = [1u64 << 40, 3, 5 << 33, 7];
    let (a, scale, extra) = (1_000_003u32, 2.5f32, 11u32);
    let p = k::AxpyParams {
        x: xb.dev_ptr(),
        y: y.dev_ptr_mut(),
        n,
        a,
        table,
        scale,
    };
    k::struct_params::launch(dev, LaunchConfig::linear(n, s.block), p, extra)?;
    let got = dev.read(&y)?;
    let want: Vec<u64> = (0..n)
        .map(|i| {
            x[i as usize] as u64 * a as u64
                + table[i as usize % 4]
                + (scale * i as f32) as u64
                + extra as u64
        })
        .collect();
    Ok((0..n as usize)
        .find(|&i| want[i] != got[i])
        .map(|i| format!("y[{i}]: expected {}, got {}", want[i], got[i])))
}

/// What the ping examples (`persist_latency`, `persist_probe`) share: their ring and
/// their percentiles.
pub mod ping {
    use gpu_kernels::persist::{Ring, RingConfig};
    use gpu_kernels::{Device, GpuError};

    /// 8 slots, requests of up to 64 words, answers of 3.
    pub const RING: RingConfig = RingConfig {
        slots: 8,
        req_words: 64,
        resp_words: 3,
    };

    /// A zeroed [`RING`] on `dev`, its request slots write-combined (the default of
    /// [`Ring::new`]) or cached.
    pub fn ring(dev: &Device, write_combined: bool) -> Result<Ring, GpuError> {
        if write_combined {
            Ring::new(dev, RING)
        } else {
            Ring::with_cached_requests(dev, RING)
        }
    }

    /// The `p`-quantile (0..=1, nearest rank) of `v`, which it sorts; `v` not empty.
    pub fn percentile(v: &mut [f64], p: f64) -> f64 {
        v.sort_by(f64::total_cmp);
        v[((v.len() as f64 - 1.0) * p).round() as usize]
    }
}
