//! Where the time of one call of the lazy DFA's warm path ([`DfaEngine`], `gpu-dfa`)
//! goes on the `paths` experiment's workload (Fig. 9's batch: 500 DBLP documents of 25
//! kB; 2048 linear paths of `L` nodes, */// 30%, so the lean walk `walk_dfa_lanes`
//! runs), at L = 5 and 10, with the batch in ordinary memory (staged by each call into
//! page-locked memory, then copied: the engine before batches were encoded straight
//! into page-locked memory) and in page-locked memory ([`DfaEngine::encode`]), each with
//! a query's bit set by an atomic OR always or only after a load shows it unset
//! ([`DfaEngine::set_check_bits`]), these four with the device's clock around the
//! kernels; last, the engine's defaults: page-locked, atomic ORs, no device clock
//! ([`DfaEngine::set_device_clock`]). Per way: the median and best of `reps` calls, and
//! the median of each phase ([`xml_twig::Phases`]: plan, upload, kernels by the
//! device's clock and of them the answers' listing, launch + wait + read back, decode).
//! Beside them, the lazy DFA on all cores from the same automaton (the harness's
//! `lazy-dfa-ahead-mc`, best of 5). Every answer is checked against the CPU's. The
//! automaton is built as the harness builds it: trained on 1 MB of other documents,
//! grown ahead. Without a GPU, the emulator on a small case.
//!
//!     cargo run --release -p xml-twig --example dfa_split [reps [documents queries]]

use baselines::lazy_dfa::LazyDfa;
use std::time::{Duration, Instant};
use xml_twig::layout::EventBatch;
use xml_twig::workload::{DblpGenerator, QueryGenerator, QueryParams};
use xml_twig::{io, Device, DfaEngine, Document, Matches, Phases, ProfileSet, QuerySet};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn docs(profiles: &ProfileSet, n: usize, bytes: usize, seed: u64) -> Res<Vec<Document>> {
    let mut g = DblpGenerator::new(seed);
    (0..n)
        .map(|_| {
            Ok(io::parse_document(
                "g.xml",
                g.document(bytes).as_bytes(),
                &profiles.dict,
            )?)
        })
        .collect()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Res<()> {
    let (dev, gpu) = match Device::gpu(0, xml_twig::PTX) {
        Ok(d) => (d, true),
        Err(e) => {
            println!("no GPU ({e}): the emulator on a small case");
            (Device::emulator(), false)
        }
    };
    let reps: usize = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None if gpu => 200,
        None => 3,
    };
    // The harness's `paths` workload (seed 1) on a GPU, a small one on the emulator;
    // or as many documents (of 25 kB) and queries as asked (a small run under
    // compute-sanitizer).
    let arg = |i: usize| std::env::args().nth(i).map(|a| a.parse::<usize>());
    let (queries, n_docs, doc_bytes) = match (arg(2), arg(3)) {
        (Some(d), Some(q)) => (q?, d?, 25_000),
        _ if gpu => (2048, 500, 25_000),
        _ => (64, 12, 3_000),
    };
    // The device goes to the first engine; the second length loads its tables there.
    let mut dev = Some(dev);
    let mut slot: Option<DfaEngine> = None;
    for len in [5, 10] {
        let params = QueryParams {
            splits: 0,
            ..QueryParams::paper(len, 0.3)
        };
        let set = QuerySet::from_queries(QueryGenerator::new(params, 1).queries(queries));
        let profiles = ProfileSet::compile(&set)?;
        let batch = docs(&profiles, n_docs, doc_bytes, 1 ^ 0x9a7)?;
        let mb = batch.iter().map(|d| d.bytes).sum::<usize>() as f64 / 1e6;
        let dfa = LazyDfa::with_budget(&profiles, 1 << 30);
        let training = docs(
            &profiles,
            (1usize << 20).div_ceil(doc_bytes).min(500),
            doc_bytes,
            0x7a1e_d0c5,
        )?;
        let mut ahead = dfa.train(&training);
        let depth = training.iter().map(|d| d.max_depth).max().unwrap_or(0) as usize + 2;
        dfa.complete(&mut ahead, &training, depth, usize::MAX);
        let tables = dfa.export(&ahead).ok_or("the accumulator is too wide")?;
        // The CPU on all cores from the same automaton, each run from fresh copies.
        let mut cpu = f64::INFINITY;
        let mut want: Vec<Matches> = Vec::new();
        for _ in 0..5 {
            dfa.fill_pool(&ahead, rayon::current_num_threads() + 1);
            let t0 = Instant::now();
            want = dfa.filter_batch(&batch);
            cpu = cpu.min(t0.elapsed().as_secs_f64() * 1e3);
        }
        let engine = match (&mut slot, dev.take()) {
            (Some(e), _) => {
                e.load(&tables)?;
                e
            }
            (None, Some(d)) => slot.insert(DfaEngine::new(d, &tables)?),
            (None, None) => return Err("no device".into()),
        };
        let narrow = engine.encode(&batch[..1]).events.is_narrow();
        let staged = EventBatch::encode(&batch, narrow);
        let locked = engine.encode(&batch);
        let ids: usize = want.iter().map(Vec::len).sum();
        println!(
            "L={len}: {queries} paths, {n_docs} documents, {mb:.1} MB, {} events ({} bytes each), {ids} ids matched; \
             lazy DFA on {} cores (the automaton grown ahead): {cpu:.3} ms",
            staged.events(),
            staged.bytes_per_event(),
            rayon::current_num_threads(),
        );
        for (what, b, check, clock) in [
            (
                "ordinary memory, staged by the call; atomic OR always",
                &staged,
                false,
                true,
            ),
            (
                "ordinary memory, staged by the call; bits checked first",
                &staged,
                true,
                true,
            ),
            (
                "page-locked memory, encoded there; atomic OR always",
                &locked,
                false,
                true,
            ),
            (
                "page-locked memory, encoded there; bits checked first",
                &locked,
                true,
                true,
            ),
            (
                "page-locked memory, atomic OR always, no device clock (kernels: 0): the engine's defaults",
                &locked,
                false,
                false,
            ),
        ] {
            engine.set_check_bits(check);
            engine.set_device_clock(clock);
            for _ in 0..3 {
                engine.filter_encoded(b)?; // warm-up: PTX JIT, buffers, pool threads
            }
            let mut calls = Vec::with_capacity(reps);
            let mut phases: Vec<Phases> = Vec::with_capacity(reps);
            let mut back = 0;
            for _ in 0..reps.max(1) {
                let t0 = Instant::now();
                let got = engine.filter_encoded(b)?;
                calls.push(t0.elapsed().as_secs_f64() * 1e3);
                phases.push(engine.phases());
                back = 0;
                for (d, (g, w)) in got.iter().zip(&want).enumerate() {
                    match g {
                        Some(g) if g != w => {
                            return Err(format!(
                                "L={len} {what}: document {d} differs from the CPU's"
                            )
                            .into())
                        }
                        Some(_) => {}
                        None => back += 1,
                    }
                }
            }
            let best = calls.iter().copied().fold(f64::INFINITY, f64::min);
            let call = median(calls);
            let med =
                |f: fn(&Phases) -> Duration| median(phases.iter().map(|p| ms(f(p))).collect());
            println!(
                "  {what}: call median {call:.3} ms (best {best:.3}; {:.1}x the CPU at the median, {:.0} MB/s), {back} handed back\n    \
                 medians: plan {:.3}, upload {:.3}, kernels {:.3} (device; answers' listing {:.3}), launch + wait + read {:.3}, decode {:.3} ms",
                cpu / call,
                mb / call * 1e3,
                med(|p| p.plan),
                med(|p| p.upload),
                med(|p| p.kernels),
                med(|p| p.compact),
                med(|p| p.read),
                med(|p| p.decode),
            );
        }
    }
    Ok(())
}
