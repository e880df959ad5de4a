//! Where the time of a batch on several GPUs goes (the `scaling` experiment's workload:
//! Fig. 10b's 1000 DBLP documents of 25 kB and 2000 twigs of 5 nodes, */// 50%): the
//! one-device engine on the whole batch; then, with the batch cut over k devices as
//! [`MultiFilter`] cuts it (equal bytes, `split_weighted`), each device's run filtered
//! alone (the others idle), and all runs at once (each on a host thread of its own,
//! `par_each_on`, as `MultiFilter::filter_encoded`). If the runs alone add up to the
//! whole but together take longer than the slowest alone, the devices contend for
//! something they share (the host, the bus, the power); if the slowest alone is already
//! above a k-th of the whole, the cut or a device's fixed costs are the limit. Median of
//! `reps` calls each. Without GPUs it runs on 2 emulated devices on a small case.
//!
//!     cargo run --release -p xml-twig --example devices_split [reps] [docs]

use gpu_kernels::multi::{par_each_on, split_weighted, Devices};
use std::time::Instant;
use xml_twig::workload::{DblpGenerator, QueryGenerator, QueryParams};
use xml_twig::{io, Engine, EngineConfig, ProfileSet, QuerySet};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn median_ms(reps: usize, mut f: impl FnMut() -> Res<()>) -> Res<f64> {
    let mut t = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let s = Instant::now();
        f()?;
        t.push(s.elapsed().as_secs_f64() * 1e3);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

fn main() -> Res<()> {
    let devs = match Devices::all(xml_twig::PTX) {
        Ok(d) if d.len() >= 2 => d,
        _ => Devices::emulated(2)?,
    };
    let gpu = devs.get(0).is_some_and(|d| d.is_gpu());
    let arg = |i: usize, default: usize| -> Res<usize> {
        Ok(match std::env::args().nth(i) {
            Some(a) => a.parse()?,
            None => default,
        })
    };
    let reps = arg(1, if gpu { 20 } else { 2 })?;
    let n_docs = arg(2, if gpu { 1000 } else { 8 })?;
    let (queries, doc_bytes) = if gpu { (2000, 25 << 10) } else { (40, 2 << 10) };
    let cfg = EngineConfig::for_device(devs.get(0).ok_or("a device")?);
    let set =
        QuerySet::from_queries(QueryGenerator::new(QueryParams::paper(5, 0.5), 1).queries(queries));
    let profiles = ProfileSet::compile(&set)?;
    let mut g = DblpGenerator::new(1 ^ 0x5ca1);
    let docs = (0..n_docs)
        .map(|_| {
            io::parse_document(
                "generated.xml",
                g.document(doc_bytes).as_bytes(),
                &profiles.dict,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mb = docs.iter().map(|d| d.bytes).sum::<usize>() as f64 / 1e6;
    println!(
        "{}: {n_docs} documents ({mb:.1} MB), {queries} twigs, {reps} reps",
        devs.name()
    );
    let mut parts = devs.into_parts();
    let ordinals: Vec<usize> = parts.iter().map(|(o, _)| *o).collect();
    // One engine per device, each with every query.
    let mut engines = Vec::new();
    for (_, dev) in parts.drain(..) {
        engines.push(Engine::new(dev, &profiles, cfg.clone())?);
    }
    let whole = engines[0].encode(&docs);
    let want = engines[0].filter_encoded(&whole)?;
    let t1 = median_ms(reps, || {
        engines[0].filter_encoded(&whole)?;
        Ok(())
    })?;
    println!(
        "one device, whole batch: {t1:.3} ms ({:.0} MB/s)",
        mb / t1 * 1e3
    );
    let bytes: Vec<u64> = docs.iter().map(|d| d.bytes.max(1) as u64).collect();
    let mut k = 2;
    while k <= engines.len() {
        let runs = split_weighted(&bytes, k);
        let batches: Vec<_> = runs
            .iter()
            .zip(&engines)
            .map(|(r, e)| e.encode(&docs[r.clone()]))
            .collect();
        let mut alone = Vec::new();
        for (d, b) in batches.iter().enumerate() {
            let got = engines[d].filter_encoded(b)?;
            assert_eq!(got, want[runs[d].clone()], "device {d}'s run, alone");
            alone.push(median_ms(reps, || {
                engines[d].filter_encoded(b)?;
                Ok(())
            })?);
        }
        let mut work: Vec<(&mut Engine, &xml_twig::layout::EventBatch)> =
            engines.iter_mut().take(k).zip(&batches).collect();
        let together = median_ms(reps, || {
            par_each_on(&ordinals[..k], &mut work, |(e, b)| e.filter_encoded(b))?;
            Ok(())
        })?;
        let slowest = alone.iter().copied().fold(0.0, f64::max);
        println!(
            "{k} devices: runs alone {} ms (sum {:.3}, slowest {slowest:.3}); all at once {together:.3} ms: {:.2}x one device (slowest alone would give {:.2}x)",
            alone.iter().map(|t| format!("{t:.3}")).collect::<Vec<_>>().join(" / "),
            alone.iter().sum::<f64>(),
            t1 / together,
            t1 / slowest
        );
        k *= 2;
    }
    Ok(())
}
