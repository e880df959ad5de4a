//! What the papers' `scaling` experiments share (beyond the papers, which use one GPU):
//! the device counts, the device sets, the timing of a stream and the series.
//!
//! Each paper's `scaling` experiment runs its partitioned engine (`gpu multi`) on the
//! first 1, 2, 4, 8 GPUs of `--devices` (and on all of them when that is not a power of
//! two), at the paper's largest workload and at 4x it, and records per workload
//! (`model=... F=...`, the series' second factor):
//! - `gpu multi <workload> events/s` (or the paper's unit per second): throughput at
//!   x = number of GPUs;
//! - `gpu multi <workload> speedup`: that throughput over the same engine's on one GPU
//!   (same seed), the ratio the targets read (1.8x on 2 GPUs, 3.4x on 4);
//! - `gpu index <workload> events/s` (the paper's one-GPU engine, named by each paper) at
//!   x = 1: the multi-device path on one GPU must be no slower.
//!
//! Every answer of the partitioned engine is checked against the one-GPU engine's on
//! the workload's own requests. Without a GPU the same runs on 1, 2 and 4 emulated
//! devices (`emu multi`) at quick sizes: a check of partition and merge, with no
//! speedup recorded (emulator times mean nothing).

use crate::experiment::{Ctx, EngineKind};
use anyhow::Context as _;
use gpu_kernels::multi::Devices;
use std::time::Duration;

/// Device counts of a scaling experiment on the emulator.
const EMULATED: [usize; 3] = [1, 2, 4];

/// Wall-clock budget of one timed stream (after its warm-up round).
pub const BUDGET: Duration = Duration::from_millis(1500);

/// Where a scaling experiment runs: GPUs (their ordinals) or emulated devices.
pub struct Scale {
    /// `gpu` or `emu`: the series' prefix.
    pub prefix: &'static str,
    ordinals: Vec<usize>,
    /// The device counts, ascending, starting at 1.
    pub counts: Vec<usize>,
}

impl Scale {
    /// The GPUs of `--devices` when there is a GPU and `gpu-multi` is wanted, else
    /// emulated devices when `emu-multi` is; `None` when neither runs.
    pub fn of(ctx: &Ctx) -> Option<Scale> {
        if !ctx.gpus.is_empty() && ctx.wants("gpu-multi", EngineKind::Gpu) {
            let n = ctx.gpus.len();
            let mut counts: Vec<usize> = [1, 2, 4, 8].into_iter().filter(|&k| k <= n).collect();
            if !counts.contains(&n) {
                counts.push(n);
            }
            return Some(Scale {
                prefix: "gpu",
                ordinals: ctx.gpus.clone(),
                counts,
            });
        }
        ctx.wants("emu-multi", EngineKind::Emu).then(|| Scale {
            prefix: "emu",
            ordinals: Vec::new(),
            counts: EMULATED.to_vec(),
        })
    }

    /// Whether the series are the GPU's (whose times and speedups mean something).
    pub fn is_gpu(&self) -> bool {
        self.prefix == "gpu"
    }

    /// The first `k` devices, with `ptx` loaded.
    pub fn open(&self, k: usize, ptx: &str) -> anyhow::Result<Devices> {
        if self.is_gpu() {
            let o = &self.ordinals[..k.min(self.ordinals.len())];
            Devices::gpus(o, ptx).with_context(|| format!("opening GPUs {o:?}"))
        } else {
            Ok(Devices::emulated(k)?)
        }
    }

    /// Records, at `k` devices, the partitioned engine `engine`'s throughput on
    /// `workload` (`unit` per second) and, on GPUs, its speedup over `one` (its
    /// throughput on one device, same seed).
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &self,
        ctx: &mut Ctx,
        engine: &str,
        workload: &str,
        unit: &str,
        k: usize,
        rate: f64,
        one: f64,
    ) {
        let series = format!("{} {engine} {workload}", self.prefix);
        ctx.record(&format!("{series} {unit}"), k as f64, rate);
        if self.is_gpu() && one > 0.0 {
            ctx.record(&format!("{series} speedup"), k as f64, rate / one);
        }
    }
}

/// Requests per second of `run` over `stream`, run in rounds of `round` requests: one
/// round to warm up (buffers and page-locked areas at their size, as a stream runs),
/// then rounds until [`BUDGET`] is spent (at least one; every round in quick mode).
/// `run` returns the time its matching took (what it does after, such as counting the
/// answers, is not timed) and the round's answer count. Returns the rate, the requests
/// timed and their answers (for a check of the answers' total).
pub fn rate<T>(
    quick: bool,
    stream: &[T],
    round: usize,
    mut run: impl FnMut(&[T]) -> anyhow::Result<(Duration, usize)>,
) -> anyhow::Result<(f64, usize, usize)> {
    let round = round.clamp(1, stream.len().max(1));
    if !quick {
        run(&stream[..round.min(stream.len())])?;
    }
    let (mut spent, mut n, mut answers) = (Duration::ZERO, 0usize, 0usize);
    for part in stream.chunks(round) {
        let (took, found) = run(part)?;
        spent += took;
        answers += found;
        n += part.len();
        if !quick && spent > BUDGET {
            break;
        }
    }
    Ok((n as f64 / spent.as_secs_f64().max(1e-9), n, answers))
}

/// What the papers' tests of their `scaling` experiments share.
#[cfg(test)]
pub mod testing {
    use crate::experiment::{Ctx, Experiment};

    /// Runs the `scaling` experiment of `experiments` in quick mode on emulated devices
    /// (`emu-multi`) and checks what every paper's must show: `checks` answer checks,
    /// all in agreement; each of `series` recorded at 1, 2 and 4 devices; `one_device`
    /// (the one-device engine's series) at x = 1; and no speedup (emulator times mean
    /// nothing).
    pub fn check_emulated_run(
        experiments: Vec<Experiment>,
        checks: usize,
        series: &[&str],
        one_device: &str,
    ) {
        let exp = experiments
            .into_iter()
            .find(|e| e.id == "scaling")
            .expect("scaling");
        let mut ctx = Ctx::new(
            true,
            vec![1],
            Some(vec!["emu-multi".to_string()]),
            None,
            std::sync::Arc::new(indicatif::ProgressBar::hidden()),
        );
        (exp.run)(&mut ctx).unwrap_or_else(|e| panic!("scaling: {e:#}"));
        assert_eq!(ctx.checks(), (checks, 0), "(agreed, disagreed) checks");
        for k in [1.0, 2.0, 4.0] {
            for s in series {
                assert!(
                    ctx.samples.iter().any(|x| x.series == *s && x.x == k),
                    "{s} at {k}"
                );
            }
        }
        assert!(
            ctx.samples
                .iter()
                .any(|x| x.series == one_device && x.x == 1.0),
            "{one_device} at 1"
        );
        assert!(ctx.samples.iter().all(|x| !x.series.ends_with("speedup")));
    }
}
