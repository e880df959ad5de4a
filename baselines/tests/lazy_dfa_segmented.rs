//! One document filtered on all cores by the lazy DFA, split into segments
//! (`LazyDfa::filter_segmented_by`), gives exactly the answers of the one-core filter,
//! the NFA and the brute-force matcher: on random nested documents and twigs (`*`,
//! `//`, nested predicates, recursive tags) with segments as short as one event (a
//! boundary after every event, so at every depth and inside every element), and on the
//! generated DBLP documents of the twig paper's workloads with boundaries inside
//! records, from fresh, trained and too-small caches.
#![cfg(feature = "xml")]

mod xml_common;
use xml_common::{random_case, random_params};

use baselines::lazy_dfa::LazyDfa;
use baselines::yfilter::Yfilter;
use proptest::prelude::*;
use xml_twig::workload::{DblpGenerator, QueryGenerator, QueryParams};
use xml_twig::{brute, io, ProfileSet, QuerySet};

/// Runs `f` on a rayon pool of `threads` workers.
fn on<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn lazy_dfa_segmented_equals_one_core_and_brute_force_on_random_docs_and_twigs(
        seed in any::<u64>(),
        p in random_params(),
        queries in prop_oneof![1usize..4, 12usize..80],
        seg in 1usize..40,
        threads in 1usize..5,
        budget in prop_oneof![4 => Just(usize::MAX), 1 => 2_000usize..60_000],
    ) {
        let (profiles, docs) = random_case(p, seed, queries, 3);
        let dfa = LazyDfa::with_budget(&profiles, budget);
        let mut one = dfa.cache();
        // Twice over the documents: the second pass runs on the caches the first built.
        for pass in 0..2 {
            for (i, d) in docs.iter().enumerate() {
                let want = brute::filter(&profiles, d);
                prop_assert_eq!(&dfa.filter_with(&mut one, d), &want, "one core: pass {} doc {} seed {}", pass, i, seed);
                for s in [1, 2, 3, seg] {
                    let got = on(threads, || dfa.filter_segmented_by(d, s));
                    prop_assert_eq!(&got, &want, "segments of {} on {} threads: pass {} doc {} seed {}", s, threads, pass, i, seed);
                }
            }
        }
    }
}

#[test]
fn lazy_dfa_segmented_on_a_deep_recursive_document_with_a_boundary_after_every_event() {
    let set = io::parse_query_file(
        "q.txt",
        "/a/a/a\n//a//a//a\n//a[a/a][.//b]\n/a[b]\n//*/*/*/*/b\n//a[.//a[.//b]]/a\n/*//*[b][a]\n//a[b][c]\n",
    )
    .unwrap();
    let profiles = ProfileSet::compile(&set).unwrap();
    let xml = format!(
        "{}<b/>{}<c/>{}",
        "<a>".repeat(60),
        "</a>".repeat(30),
        "</a>".repeat(30)
    );
    let doc = io::parse_document("deep.xml", xml.as_bytes(), &profiles.dict).unwrap();
    let dfa = LazyDfa::new(&profiles);
    let want = brute::filter(&profiles, &doc);
    assert_eq!(dfa.filter(&doc), want);
    for s in 1..doc.events.len() + 2 {
        assert_eq!(
            on(2, || dfa.filter_segmented_by(&doc, s)),
            want,
            "segments of {s}"
        );
    }
}

#[test]
fn lazy_dfa_segmented_equals_one_core_and_the_nfa_on_paper_workloads() {
    for (len, p, queries) in [(10, 0.3, 256), (5, 0.5, 300), (15, 0.5, 128), (10, 0.3, 3)] {
        let set = QuerySet::from_queries(
            QueryGenerator::new(QueryParams::paper(len, p), len as u64 + 1).queries(queries),
        );
        let profiles = ProfileSet::compile(&set).unwrap();
        let mut g = DblpGenerator::new(31 + len as u64);
        let doc =
            io::parse_document("d.xml", g.document(300_000).as_bytes(), &profiles.dict).unwrap();
        let other =
            io::parse_document("o.xml", g.document(100_000).as_bytes(), &profiles.dict).unwrap();
        let want = Yfilter::new(&profiles).filter(&doc);
        let dfa = LazyDfa::new(&profiles);
        assert_eq!(dfa.filter(&doc), want, "L={len} one core");
        let n = doc.events.len();
        // Fresh caches, then caches trained on another document, one per worker.
        for s in [97, 1000, 4321, n / 8 + 1, n / 2] {
            assert_eq!(
                on(3, || dfa.filter_segmented_by(&doc, s)),
                want,
                "L={len} s={s}"
            );
        }
        let trained = dfa.train(std::slice::from_ref(&other));
        for s in [50, 2500, n / 4 + 1] {
            dfa.fill_pool(&trained, 3);
            assert_eq!(
                on(2, || dfa.filter_segmented_by(&doc, s)),
                want,
                "L={len} trained s={s}"
            );
        }
        // A budget too small for the automaton: the segments overflow, the document
        // goes to one core (and there to the NFA).
        let tiny = LazyDfa::with_budget(&profiles, 4096);
        assert_eq!(
            on(2, || tiny.filter_segmented_by(&doc, 5000)),
            want,
            "L={len} tiny"
        );
        // Below the threshold, the automatic split is the one-core filter.
        assert_eq!(on(2, || dfa.filter_segmented(&doc)), want, "L={len} auto");
    }
}

#[test]
fn lazy_dfa_segmented_splits_a_document_past_the_threshold_by_itself() {
    let set =
        QuerySet::from_queries(QueryGenerator::new(QueryParams::paper(10, 0.3), 77).queries(128));
    let profiles = ProfileSet::compile(&set).unwrap();
    let xml = DblpGenerator::new(78).document(1_500_000);
    let doc = io::parse_document("d.xml", xml.as_bytes(), &profiles.dict).unwrap();
    assert!(doc.events.len() >= baselines::lazy_dfa::SEGMENT_MIN_EVENTS);
    let want = Yfilter::new(&profiles).filter(&doc);
    let dfa = LazyDfa::new(&profiles);
    for threads in [1, 2, 3, 8] {
        assert_eq!(
            dfa.filter_segmented_threads(&doc, threads).unwrap(),
            want,
            "{threads} threads"
        );
    }
}
