//! `harness ddm match` and `harness ddm generate`: HLA DDM region matching (Lo, Chung &
//! Pai) on the user's own regions.

use super::{fallback_note, Stats};
use crate::bad_input;
use crate::engines::DdmEngine;
use anyhow::Context as _;
use baselines::ddm::{Algorithm, DdmMatcher};
use ddm_region::workload::{Distribution, Scenario, ScenarioParams};
use ddm_region::{Approach, Device, Engine, GridSpec, Kind, MultiEngine, Pair, RegionSet, Slices};
use gpu_kernels::multi::DeviceSpec;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// `harness ddm ...`: the user's own regions.
#[derive(clap::Subcommand, Debug)]
pub enum Cmd {
    /// Match publication and subscription regions: prints the number of overlapping
    /// (publication, subscription) pairs, or with --pairs one `pub_id,sub_id` line per pair.
    Match {
        /// CSV with header `kind,id,lo0,hi0,lo1,hi1,...` (kind `pub` or `sub`; half-open
        /// ranges [lo, hi) of unsigned 32-bit integers; any number of dimensions; ids
        /// unique within their kind); `-`: standard input. Blank lines and lines starting
        /// with `#` are skipped; the file is read to its end and every bad line reported
        /// (file:line:column, the first 20, then a count), with exit code 2.
        #[arg(long)]
        regions: PathBuf,
        /// Default: the strongest CPU engine (bisect in one dimension, sbm in more) for a
        /// file under 64 MB (it answers before the GPU is open); else gpu-bisect when a
        /// GPU can be opened, else the CPU engine, with a note saying why.
        #[arg(long, value_enum)]
        engine: Option<DdmEngine>,
        /// Print the pairs (ordered by publication, then subscription, by file order)
        /// instead of their number.
        #[arg(long)]
        pairs: bool,
        /// Threads of the CPU baselines (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Cell side of the grid engines: one value, or one per dimension, comma-separated
        /// (default: the regions' mean side).
        #[arg(long, value_delimiter = ',')]
        cell_size: Vec<u32>,
        /// GPU ordinal.
        #[arg(long, default_value_t = 0)]
        device: usize,
        /// The device engine over several GPUs (`all` or ordinals such as `0,1`;
        /// overrides --device): publications partitioned over them, every subscription
        /// on each. With an emu-* engine, as many emulated devices as ordinals named
        /// (`all`: one per GPU present, at least two). Default engine: gpu-bisect.
        #[arg(long)]
        devices: Option<gpu_kernels::multi::DeviceSpec>,
        /// Print the time of each phase (load, upload, match, write) to standard error.
        #[arg(long)]
        stats: bool,
    },
    /// Write the regions of a §IV scenario (after `--steps` moves) as a CSV file.
    Generate {
        #[arg(long)]
        out: PathBuf,
        #[arg(long, default_value_t = 2048)]
        regions: u32,
        /// Side of every region (RS = size x size).
        #[arg(long, default_value_t = 10)]
        size: u32,
        /// Scenario II: 20 % of the regions around three crowded areas.
        #[arg(long)]
        crowded: bool,
        #[arg(long, default_value_t = 0)]
        steps: u32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

pub fn run_cmd(cmd: Cmd) -> anyhow::Result<()> {
    match cmd {
        Cmd::Match {
            regions,
            engine,
            pairs,
            threads,
            cell_size,
            device,
            devices,
            stats,
        } => {
            let mut stats = Stats::new(stats);
            let t0 = std::time::Instant::now();
            let (n_pairs, bytes) = match_cmd(
                &regions,
                engine,
                (pairs, threads, &cell_size, device),
                devices.as_ref(),
                &mut stats,
            )?;
            stats.print(n_pairs, "pairs", bytes, t0.elapsed());
            Ok(())
        }
        Cmd::Generate {
            out,
            regions,
            size,
            crowded,
            steps,
            seed,
        } => {
            let dist = if crowded {
                Distribution::Crowded
            } else {
                Distribution::Uniform
            };
            let mut s = Scenario::new(ScenarioParams::paper(regions, size, dist), seed)
                .map_err(bad_input)?;
            for _ in 0..steps {
                s.step();
            }
            let mut w = super::create(&out)?;
            ddm_region::io::write_regions(s.regions(), &mut w)?;
            w.flush()?;
            Ok(())
        }
    }
}

fn host_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `ddm match`: returns the number of overlapping pairs and the bytes of input read.
/// `opts`: (print the pairs, CPU threads, cell size, GPU ordinal); `devices`: the GPUs
/// of `--devices` (the engine partitioned over them).
/// Bytes of a regions file from which the default engine is the GPU's (`gpu-bisect`);
/// below, the strongest CPU engine (bisect in one dimension, sbm in more), which
/// answers before the GPU is open. On an H200 with 16 host cores (driver cache warm),
/// 1M 2-D regions (30 MB): `sbm` 0.10-0.11 s for the whole command, `gpu-bisect`
/// 0.39-0.40 s (opening the GPU 0.23 s, closing it at exit about 0.14 s); 4M (124 MB):
/// `sbm` 0.91-0.92 s, `gpu-bisect` 0.49-0.51 s. The bound lies between, where the two
/// lines meet (about 2M regions).
const GPU_FROM_BYTES: u64 = 64_000_000;

fn match_cmd(
    path: &Path,
    engine: Option<DdmEngine>,
    opts: (bool, Option<usize>, &[u32], usize),
    devices: Option<&DeviceSpec>,
    stats: &mut Stats,
) -> anyhow::Result<(u64, u64)> {
    let (want_pairs, threads, cell_size, device) = opts;
    use DdmEngine as D;
    // The GPU opens on its own thread while the regions load.
    let on_gpu = |e: DdmEngine| {
        matches!(
            e,
            D::GpuRegion | D::GpuRegionSliced | D::GpuGrid | D::GpuSweep | D::GpuBisect
        )
    };
    // The default engine on a small file: the CPU, which answers before the GPU is open.
    let small = engine.is_none()
        && devices.is_none()
        && std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() < GPU_FROM_BYTES);
    // On the opening thread, once the GPU is open and the load has sent the regions'
    // sizes, the engine's device memory is taken into the allocator's pool, so that the
    // engine's allocation after the load takes memory already mapped (on an H200, 1M 2-D
    // regions: 0.001-0.002 s against 0.009-0.012 s, results/e2e/e2e-ddm-2026-11-29-1950.*;
    // the opening, 0.2-0.3 s, outlasts the load, so the command waits no longer). A
    // throwaway first count there shortened nothing
    // (results/gpu-logs/ddm-start-up-H200-2026-11-29/): the count's time was the 2-D
    // sweep's own, which the strips of `Engine::set_strips` cut.
    // The sizes of the regions loaded (dropped unsent when the load fails: the opening
    // thread then reserves nothing).
    let (sizes_tx, sizes) = std::sync::mpsc::sync_channel(1);
    let open = |approach: Option<Approach>| match approach {
        Some(a) => super::GpuOpening::start_warmed(device, ddm_region::PTX, reserve(a, sizes)),
        None => super::GpuOpening::start(device, ddm_region::PTX),
    };
    let mut opening = match (engine, devices) {
        (None, None) if small => None,
        (None, None) | (Some(D::GpuBisect), None) => Some(open(Some(Approach::Bisect))),
        (Some(D::GpuSweep), None) => Some(open(Some(Approach::Sweep))),
        (Some(e), None) if on_gpu(e) => Some(open(None)),
        _ => None,
    };
    let set = stats.time("load", || {
        ddm_region::io::read_regions(path).map_err(bad_input)
    })?;
    let _ = sizes_tx.send((set.dims(), set.n_pub(), set.n_sub()));
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    let note = format!(
        "({} publications, {} subscriptions, {} dimensions, on all cores)",
        set.n_pub(),
        set.n_sub(),
        set.dims()
    );
    stats.add("load", std::time::Duration::ZERO, note);
    let mut gpu = None;
    let engine = match engine {
        Some(e) => e,
        None if devices.is_some() => DdmEngine::GpuBisect,
        None if small => {
            let best = if set.dims() == 1 { D::Bisect } else { D::Sbm };
            stats.add(
                "default engine",
                std::time::Duration::ZERO,
                format!(
                    "({}: a file under {} MB is matched on the CPU, which answers before the \
                     GPU is open; --engine gpu-bisect for the GPU)",
                    crate::engines::name(&best),
                    GPU_FROM_BYTES / 1_000_000
                ),
            );
            best
        }
        None => match opening
            .take()
            .map_or_else(|| Device::gpu(device, ddm_region::PTX), |o| o.wait(stats))
        {
            Ok(d) => {
                gpu = Some(d);
                DdmEngine::GpuBisect
            }
            Err(e) => {
                // The strongest CPU engine: bisect in one dimension, sbm in more (its
                // sweep beats bisect's and itm's there: `run ddm density_2d`).
                let best = if set.dims() == 1 { D::Bisect } else { D::Sbm };
                fallback_note(&e, &crate::engines::name(&best), "gpu-bisect");
                best
            }
        },
    };
    let cell: Option<Vec<u32>> = match cell_size.len() {
        0 => None,
        1 => Some(vec![cell_size[0]; set.dims()]),
        k if k == set.dims() => Some(cell_size.to_vec()),
        k => {
            return Err(bad_input(anyhow::anyhow!(
                "--cell-size has {k} values; give 1 or {}",
                set.dims()
            )))
        }
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let pub_ids = set.ids(Kind::Publication);
    let sub_ids = set.ids(Kind::Subscription);
    let print = |pairs: &[Pair], out: &mut dyn std::io::Write| -> std::io::Result<()> {
        write_pairs(pairs, pub_ids, sub_ids, out)
    };
    let cpu = |a: Algorithm| DdmMatcher::new(a, threads.unwrap_or_else(host_threads));
    let cpu_matcher = match engine {
        D::Brute => Some(cpu(Algorithm::Brute)),
        D::Grid => Some(cpu(Algorithm::Grid { cell: cell.clone() })),
        D::Sort => Some(cpu(Algorithm::Sort)),
        D::Sbm => Some(cpu(Algorithm::Sbm)),
        D::Itm => Some(cpu(Algorithm::Itm)),
        D::Bisect => Some(cpu(Algorithm::Bisect)),
        _ => None,
    };
    if let (Some(_), Some(_)) = (&cpu_matcher, devices) {
        return Err(bad_input(anyhow::anyhow!(
            "--devices runs the device engines (gpu-*, emu-*), not {}",
            crate::engines::name(&engine)
        )));
    }
    if let Some(m) = cpu_matcher {
        let n = if want_pairs {
            let pairs = stats.time("match", || m.pairs(&set));
            stats.time("write", || print(&pairs, &mut out))?;
            pairs.len() as u64
        } else {
            let n = stats.time("match", || m.count(&set));
            writeln!(out, "{n}")?;
            n
        };
        stats.time("write", || out.flush())?;
        return Ok((n, bytes));
    }
    let grid = || -> anyhow::Result<Approach> {
        Ok(Approach::Grid(
            GridSpec::fit(&set, cell.as_deref()).map_err(bad_input)?,
        ))
    };
    let (on_gpu, approach, slices) = match engine {
        D::GpuRegion => (true, Approach::Region, Slices::Paper),
        D::GpuRegionSliced => (true, Approach::Region, Slices::Fill),
        D::GpuGrid => (true, grid()?, Slices::Paper),
        D::GpuSweep => (true, Approach::Sweep, Slices::Paper),
        D::GpuBisect => (true, Approach::Bisect, Slices::Paper),
        D::EmuRegion => (false, Approach::Region, Slices::Paper),
        D::EmuRegionSliced => (false, Approach::Region, Slices::Fill),
        D::EmuGrid => (false, grid()?, Slices::Paper),
        D::EmuBisect => (false, Approach::Bisect, Slices::Paper),
        D::EmuSweep | D::Brute | D::Grid | D::Sort | D::Sbm | D::Itm | D::Bisect => {
            (false, Approach::Sweep, Slices::Paper)
        }
    };
    if let Some(spec) = devices {
        let n = match_multi(
            &set,
            (on_gpu, approach, slices),
            spec,
            want_pairs,
            stats,
            &mut out,
            print,
        )?;
        stats.time("write", || out.flush())?;
        return Ok((n, bytes));
    }
    let dev = match (on_gpu, gpu) {
        (true, Some(d)) => d,
        (true, None) => match opening.take() {
            Some(o) => o.wait(stats),
            None => stats.time("open the GPU", || Device::gpu(device, ddm_region::PTX)),
        }
        .context("opening the GPU (use --engine bisect or sbm for the CPU)")?,
        (false, _) => Device::emulator(),
    };
    let mut e = stats.time("allocate the engine", || {
        Engine::new(&dev, approach, set.dims(), set.n_pub(), set.n_sub())
    })?;
    let nt = e.new_times();
    stats.add(
        "allocate the engine",
        std::time::Duration::ZERO,
        format!(
            "(device {:.4} s, page-locked {:.4}, sort state {:.4})",
            nt.device.as_secs_f64(),
            nt.host.as_secs_f64(),
            nt.rest.as_secs_f64()
        ),
    );
    e.set_slices(slices);
    // The set's ranges copied to the device straight from its memory: on one H200 with 16
    // host cores, 1M 2-D regions were uploaded in 0.002 s so, where the engine's
    // page-locked staging took 0.009-0.011 s to make, fill and copy (made once, it pays
    // only for repeated loads; results/gpu-logs/ddm-start-up-H200-2026-11-29/).
    e.set_pageable_load(true);
    // The upload is the sorting engines' whole step (Phase 1); the paper's engines match
    // while adding, so their step is timed as matching.
    let phase = if e.approach().sorts() {
        "upload"
    } else {
        "upload + match"
    };
    stats.time(phase, || -> anyhow::Result<()> {
        e.load(&set)?;
        dev.synchronize()?;
        Ok(())
    })?;
    if e.approach().sorts() {
        let lt = e.last_load_times();
        stats.add(
            phase,
            std::time::Duration::ZERO,
            format!(
                "(copied from the regions' memory; their bounds found beside it in {:.4} s, \
                 the install waited for {:.4})",
                lt.fill_us / 1e6,
                lt.drain_us / 1e6
            ),
        );
    }
    let n = if want_pairs {
        if e.approach().sorts() {
            // Streamed in windows: any number of pairs; each window ordered.
            let mut err = None;
            let (mut matching, mut writing) =
                (std::time::Duration::ZERO, std::time::Duration::ZERO);
            let mut t = std::time::Instant::now();
            let n = e.for_each_pair_batch(|b| {
                matching += t.elapsed();
                let t1 = std::time::Instant::now();
                // Ordered on all cores (one core took most of the write's 0.075 s for
                // 0.9M pairs on an H200's host).
                let mut b = b.to_vec();
                {
                    use rayon::prelude::*;
                    b.par_sort_unstable();
                }
                if let Err(x) = print(&b, &mut out) {
                    err.get_or_insert(x);
                }
                writing += t1.elapsed();
                t = std::time::Instant::now();
            })?;
            stats.add("match", matching + t.elapsed(), String::new());
            stats.add("write", writing, String::new());
            if let Some(x) = err {
                return Err(x.into());
            }
            n
        } else {
            let pairs = stats.time("match", || e.pairs())?;
            stats.time("write", || print(&pairs, &mut out))?;
            pairs.len() as u64
        }
    } else {
        let n = stats.time("match", || e.count())?;
        let c = e.last_count_times();
        for (phase, d) in [
            ("match: dimension estimate", c.estimate),
            ("match: launches queued", c.queue),
            ("match: wait + read back", c.wait),
        ] {
            stats.add(phase, d, String::new());
        }
        writeln!(out, "{n}")?;
        n
    };
    if let Some(s) = e.strips() {
        stats.add(
            "match",
            std::time::Duration::ZERO,
            format!(
                "(swept along dimension {} in strips of dimension {}, {} wide)",
                e.sweep_dim()?,
                s.dim,
                s.width
            ),
        );
    }
    stats.time("write", || out.flush())?;
    // The device's memory and context go with the process, after the output and the
    // stats: closing the GPU takes 0.10-0.17 s (on an H200) here or at exit alike, so
    // this moves it out of the stream's time, not out of the command's.
    super::keep_until_exit(e);
    super::keep_until_exit(dev);
    Ok((n, bytes))
}

/// The opening thread's work for `ddm match` once the GPU is open ([`super::Warm`]): when
/// the load has sent the regions' sizes, the device memory an engine of `approach`
/// allocates for them ([`Engine::device_bytes`]) taken into the allocator's pool
/// ([`super::reserve_phase`]).
fn reserve(approach: Approach, sizes: std::sync::mpsc::Receiver<(usize, u32, u32)>) -> super::Warm {
    Box::new(move |dev: &Device| {
        let Ok((dims, n_pub, n_sub)) = sizes.recv() else {
            return Vec::new();
        };
        let bytes = Engine::device_bytes(&approach, dims, n_pub, n_sub);
        vec![super::reserve_phase(dev, bytes as usize)]
    })
}

/// Pairs one task of [`write_pairs`] formats (about 230 KB of lines).
const WRITE_PART: usize = 1 << 14;

/// Parts [`write_pairs`] formats at once per thread: it holds at most three such groups
/// (one being formatted, one waiting, one being written), whatever the number of pairs.
const WRITE_PARTS_PER_THREAD: usize = 2;

/// Writes one `pub_id,sub_id` line per pair, in the pairs' order: formatted on all cores
/// a group of parts of [`WRITE_PART`] pairs at a time (each part by a pool thread, into a
/// buffer reused from group to group), while the calling thread writes the group before,
/// so that formatting and writing overlap and the memory held is a few parts a thread
/// (not every line at once).
fn write_pairs(
    pairs: &[Pair],
    pub_ids: &[u64],
    sub_ids: &[u64],
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    use rayon::prelude::*;
    let group = WRITE_PART * WRITE_PARTS_PER_THREAD * rayon::current_num_threads();
    let format = |buf: &mut Vec<u8>, c: &[Pair]| {
        buf.clear();
        buf.reserve(c.len() * 16);
        let (mut a, mut b) = (itoa::Buffer::new(), itoa::Buffer::new());
        for p in c {
            buf.extend_from_slice(a.format(pub_ids[p.publication as usize]).as_bytes());
            buf.push(b',');
            buf.extend_from_slice(b.format(sub_ids[p.subscription as usize]).as_bytes());
            buf.push(b'\n');
        }
    };
    // Formatted groups go to the writer (this thread: `out` stays here) one ahead at
    // most; their buffers come back to be reused.
    let (ready, formatted) = std::sync::mpsc::sync_channel::<Vec<Vec<u8>>>(1);
    let (give_back, returned) = std::sync::mpsc::channel::<Vec<Vec<u8>>>();
    std::thread::scope(|scope| {
        scope.spawn(move || {
            for g in pairs.chunks(group) {
                let mut bufs = returned.try_recv().unwrap_or_default();
                bufs.resize_with(g.len().div_ceil(WRITE_PART), Vec::new);
                bufs.par_iter_mut()
                    .zip(g.par_chunks(WRITE_PART))
                    .for_each(|(buf, c)| format(buf, c));
                if ready.send(bufs).is_err() {
                    // The writer stopped on an error.
                    return;
                }
            }
        });
        for bufs in formatted {
            bufs.iter().try_for_each(|b| out.write_all(b))?;
            let _ = give_back.send(bufs);
        }
        Ok(())
    })
}

/// `ddm match --devices`: the engine `(on a GPU, approach, slices)` with the publications
/// partitioned over the devices `spec` names ([`MultiEngine`]); prints the count, or the
/// pairs through `print`. Returns the number of pairs.
fn match_multi(
    set: &RegionSet,
    (on_gpu, approach, slices): (bool, Approach, Slices),
    spec: &DeviceSpec,
    want_pairs: bool,
    stats: &mut Stats,
    out: &mut dyn std::io::Write,
    print: impl Fn(&[Pair], &mut dyn std::io::Write) -> std::io::Result<()>,
) -> anyhow::Result<u64> {
    if slices != Slices::Paper {
        return Err(bad_input(anyhow::anyhow!(
            "--devices runs the engines with the paper's Phase 3 (not gpu-region-sliced)"
        )));
    }
    let devs = super::devices_of(spec, ddm_region::PTX, !on_gpu, stats)?;
    // As on one device: the sorting engines' load is their upload, the paper's
    // engines match while adding.
    let phase = if approach.sorts() {
        "upload"
    } else {
        "upload + match"
    };
    let mut e = MultiEngine::new(&devs, approach, set.dims(), set.n_pub(), set.n_sub())?;
    stats.time(phase, || e.load(set))?;
    let n = if want_pairs {
        let pairs = stats.time("match", || e.pairs())?;
        stats.time("write", || print(&pairs, out))?;
        pairs.len() as u64
    } else {
        let n = stats.time("match", || e.count())?;
        writeln!(out, "{n}")?;
        n
    };
    Ok(n)
}
