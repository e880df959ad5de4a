//! The lazy DFA against the NFA on one core, warm (each filter's second pass over the
//! same documents), on the XML paper's workloads: linear paths (the twig generator
//! without split points) and twigs (Figs. 7 and 9), answers checked equal.
//!
//!     cargo run --release -p baselines --example xml_lazy_dfa [-- quick] [twigs] [mc]
//!
//! `twigs`: the twig workloads only; `mc`: also both filters on all cores (batches);
//! `segmented [MB]`: only one long document (100 MB by default, 256 twigs of Fig. 7's
//! L=10, p=0.3), the trained DFA on one core against the same on all cores
//! (`LazyDfa::filter_segmented`, and a few segment counts);
//! `LAZY_DFA_ONLY=<text>`: only the workloads whose label contains it;
//! `LAZY_DFA_REPS=<n>`: best of n passes for the one-core NFA and trained DFA.

use baselines::lazy_dfa::LazyDfa;
use baselines::yfilter::Yfilter;
use std::time::Instant;
use xml_twig::workload::{DblpGenerator, QueryGenerator, QueryParams};
use xml_twig::{io, Document, ProfileSet, QuerySet};

fn ms<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let t0 = Instant::now();
    let r = f();
    (t0.elapsed().as_secs_f64() * 1e3, r)
}

fn compare(label: &str, params: QueryParams, n: usize, docs: usize, bytes: usize, seed: u64) {
    if let Ok(only) = std::env::var("LAZY_DFA_ONLY") {
        if !format!("{label} n={n}").contains(&only) {
            return;
        }
    }
    let set = QuerySet::from_queries(QueryGenerator::new(params, seed).queries(n));
    let profiles = ProfileSet::compile(&set).expect("generated queries compile");
    let mut g = DblpGenerator::new(seed ^ 0x5eed);
    let docs: Vec<Document> = (0..docs)
        .map(|_| {
            io::parse_document("gen.xml", g.document(bytes).as_bytes(), &profiles.dict)
                .expect("generated XML parses")
        })
        .collect();
    let mb = docs.iter().map(|d| d.bytes).sum::<usize>() as f64 / 1e6;
    let y = Yfilter::new(&profiles);
    let mut rt = y.runtime();
    let (_, want) = ms(|| {
        docs.iter()
            .map(|d| y.filter_with(&mut rt, d))
            .collect::<Vec<_>>()
    });
    let (t_nfa, _) = ms(|| docs.iter().map(|d| y.filter_with(&mut rt, d)).count());
    let (t_build, dfa) = ms(|| LazyDfa::new(&profiles));
    let mut cache = dfa.cache();
    let (t_cold, got) = ms(|| {
        docs.iter()
            .map(|d| dfa.filter_with(&mut cache, d))
            .collect::<Vec<_>>()
    });
    assert_eq!(got, want, "{label}: lazy DFA and NFA disagree");
    let (t_warm, _) = ms(|| docs.iter().map(|d| dfa.filter_with(&mut cache, d)).count());
    let matched: usize = want.iter().map(Vec::len).sum();
    // Trained: a fresh cache warmed on other documents of the same generator (a
    // stream's steady state), then timed on these on its first pass.
    let mut trained = dfa.cache();
    let mut other = DblpGenerator::new(seed ^ 0x7a1e);
    let mut warmed = 0;
    while warmed < bytes.max(1 << 20) {
        let d = io::parse_document("o.xml", other.document(bytes).as_bytes(), &profiles.dict)
            .expect("generated XML parses");
        warmed += d.bytes;
        dfa.filter_with(&mut trained, &d);
    }
    let before = trained.stats();
    // Best of `reps` passes, each from a fresh copy of the trained cache (as the
    // harness times it); the NFA best of as many.
    let reps: usize = std::env::var("LAZY_DFA_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    let mut t_trained = f64::INFINITY;
    let mut after = before;
    for _ in 0..reps.max(1) {
        let mut copy = trained.clone();
        let (t, got) = ms(|| {
            docs.iter()
                .map(|d| dfa.filter_with(&mut copy, d))
                .collect::<Vec<_>>()
        });
        assert_eq!(got, want, "{label}: trained lazy DFA and NFA disagree");
        t_trained = t_trained.min(t);
        after = copy.stats();
    }
    let mut t_nfa = t_nfa;
    for _ in 1..reps.max(1) {
        t_nfa = t_nfa.min(ms(|| docs.iter().map(|d| y.filter_with(&mut rt, d)).count()).0);
    }
    let elements: usize = docs.iter().map(|d| d.events.len() / 2).sum();
    if std::env::var_os("LAZY_DFA_STATS").is_some() {
        println!(
            "  elements {elements}, new closes {}, new sets {}, new dfa states {}, cache {:.1} MB",
            after.closes - before.closes,
            after.node_sets - before.node_sets,
            after.dfa_states - before.dfa_states,
            after.bytes as f64 / 1e6
        );
    }
    println!(
        "{label:<32} n={n:<5} one core: nfa {t_nfa:>8.1} ms  trained lazy DFA {t_trained:>7.1} ms ({:>5.1}x)",
        t_nfa / t_trained
    );
    if docs.len() > 1 && std::env::args().any(|a| a == "mc") {
        // All cores: the NFA's and the lazy DFA's document-parallel batches, the DFA's
        // workers each starting from a copy of the trained cache.
        let threads = rayon::current_num_threads();
        let mut t_ymc = f64::INFINITY;
        let mut t_dmc = f64::INFINITY;
        for _ in 0..reps.max(1) {
            let (t, got) = ms(|| y.filter_batch(&docs));
            assert_eq!(got, want, "{label}: multicore NFA disagrees");
            t_ymc = t_ymc.min(t);
            dfa.fill_pool(&trained, threads);
            let (t, got) = ms(|| dfa.filter_batch(&docs));
            assert_eq!(got, want, "{label}: multicore lazy DFA disagrees");
            t_dmc = t_dmc.min(t);
        }
        println!(
            "{label:<32} n={n:<5} {threads} threads: nfa {t_ymc:>8.1} ms  lazy DFA {t_dmc:>7.1} ms ({:>5.1}x)",
            t_ymc / t_dmc
        );
    }
    println!(
        "{label:<32} n={n:<5} {:>5.2} MB  nfa {:>6.2} MB/s  dfa warm {:>7.1} MB/s ({:>5.1}x)  trained {:>7.1} MB/s ({:>5.1}x)  cold+build {:>6.2} MB/s  matches {matched}",
        mb,
        mb / (t_nfa / 1e3),
        mb / (t_warm / 1e3),
        t_nfa / t_warm,
        mb / (t_trained / 1e3),
        t_nfa / t_trained,
        mb / ((t_cold + t_build) / 1e3),
    );
}

/// One long document on one core and split into segments on all cores.
fn segmented(mb: usize) {
    let reps: usize = std::env::var("LAZY_DFA_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let set =
        QuerySet::from_queries(QueryGenerator::new(QueryParams::paper(10, 0.3), 1).queries(256));
    let profiles = ProfileSet::compile(&set).expect("generated queries compile");
    let (t_gen, doc) = ms(|| {
        let xml = DblpGenerator::new(7).document(mb << 20);
        io::parse_document("big.xml", xml.as_bytes(), &profiles.dict).expect("generated XML parses")
    });
    let other = io::parse_document(
        "other.xml",
        DblpGenerator::new(8).document(1 << 20).as_bytes(),
        &profiles.dict,
    )
    .expect("generated XML parses");
    let threads = rayon::current_num_threads();
    let mb = doc.bytes as f64 / 1e6;
    println!(
        "one document: {mb:.1} MB, {} events, depth {}, 256 twigs L=10 p=0.3; {threads} rayon threads; generated+parsed in {t_gen:.0} ms",
        doc.events.len(),
        doc.max_depth
    );
    let dfa = LazyDfa::new(&profiles);
    let trained = dfa.train(std::slice::from_ref(&other));
    let mut want = None;
    let mut best = f64::MAX;
    for _ in 0..reps {
        let mut c = trained.clone();
        let (t, got) = ms(|| dfa.filter_with(&mut c, &doc));
        best = best.min(t);
        want = Some(got);
    }
    let want = want.unwrap_or_default();
    println!(
        "  one core:  {best:8.1} ms  {:7.1} MB/s  ({} queries matched)",
        mb / best * 1e3,
        want.len()
    );
    if std::env::var_os("LAZY_DFA_NFA").is_some() {
        let (t, nfa) = ms(|| Yfilter::new(&profiles).filter(&doc));
        assert_eq!(nfa, want, "lazy DFA and NFA disagree");
        println!("  NFA (one core, checked): {t:.1} ms");
    }
    let n = doc.events.len();
    for (label, seg) in [
        ("auto (4 per thread)", None),
        ("1 per thread", Some(n.div_ceil(threads))),
        ("2 per thread", Some(n.div_ceil(2 * threads))),
        ("16 per thread", Some(n.div_ceil(16 * threads))),
    ] {
        let mut best = f64::MAX;
        for _ in 0..reps {
            dfa.fill_pool(&trained, threads + 1);
            let (t, got) = ms(|| match seg {
                None => dfa.filter_segmented(&doc),
                Some(s) => dfa.filter_segmented_by(&doc, s),
            });
            assert_eq!(got, want, "segmented ({label}) and one core disagree");
            best = best.min(t);
        }
        println!(
            "  all cores, segments {label:>20}: {best:8.1} ms  {:7.1} MB/s",
            mb / best * 1e3
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(k) = args.iter().position(|a| a == "segmented") {
        let mb = args.get(k + 1).and_then(|v| v.parse().ok()).unwrap_or(100);
        segmented(mb);
        return;
    }
    let quick = std::env::args().any(|a| a == "quick");
    let only_twigs = std::env::args().any(|a| a == "twigs");
    let (big, batch) = if quick { (100_000, 50) } else { (1 << 20, 500) };
    for n in [256, 2048] {
        if only_twigs {
            break;
        }
        for p in [0.1, 0.3, 0.5] {
            let params = QueryParams {
                splits: 0,
                ..QueryParams::paper(10, p)
            };
            compare(&format!("paths L=10 p={p}, 1 MB"), params, n, 1, big, 1);
        }
    }
    for n in [1024, 2048] {
        for len in [5, 10, 15] {
            compare(
                &format!("fig7 twigs L={len} p=0.3, 1 MB"),
                QueryParams::paper(len, 0.3),
                n,
                1,
                big,
                1,
            );
        }
        for len in [5, 10, 15] {
            compare(
                &format!("fig9 twigs L={len} p=0.5, {batch}x25kB"),
                QueryParams::paper(len, 0.5),
                n,
                batch,
                25_000,
                1,
            );
        }
    }
}
