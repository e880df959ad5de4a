//! The YFilter-like NFA agrees with the brute-force tree matcher (and with the GPU
//! kernels on the emulator) on random and DBLP-schema workloads, edges included: deep
//! recursive documents, queries made only of `//` and `*`, bushy twigs.
#![cfg(feature = "xml")]

mod xml_common;
use xml_common::{random_case, random_params};

use baselines::yfilter::Yfilter;
use proptest::prelude::*;
use xml_twig::workload::{DblpGenerator, QueryGenerator, QueryParams, RandomParams};
use xml_twig::{brute, io, Device, Engine, EngineConfig, ProfileSet, QuerySet};

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn yfilter_equals_brute_force_on_random_docs_and_twigs(
        seed in any::<u64>(),
        p in random_params(),
    ) {
        let (profiles, docs) = random_case(p, seed, 12, 3);
        let y = Yfilter::new(&profiles);
        for (i, d) in docs.iter().enumerate() {
            prop_assert_eq!(y.filter(d), brute::filter(&profiles, d), "doc {} seed {}", i, seed);
        }
    }

    #[test]
    fn yfilter_on_queries_made_only_of_descendant_wildcards(seed in any::<u64>(), nodes in 1usize..7, depth in 1usize..10) {
        let p = RandomParams { tags: 2, elements: 30, max_depth: depth, query_nodes: nodes, p_wildcard: 1.0, p_descendant: 1.0, p_branch: 0.5 };
        let (profiles, docs) = random_case(p, seed, 6, 3);
        let y = Yfilter::new(&profiles);
        for d in &docs {
            prop_assert_eq!(y.filter(d), brute::filter(&profiles, d));
        }
    }
}

#[test]
fn yfilter_on_a_deep_recursive_document() {
    let set = io::parse_query_file(
        "q.txt",
        "/a/a/a\n//a//a//a\n//a[a/a][.//b]\n/a[b]\n//*/*/*/*/b\n//a[.//a[.//b]]/a\n/*//*[b][a]\n",
    )
    .unwrap();
    let profiles = ProfileSet::compile(&set).unwrap();
    let xml = format!("{}<b/>{}", "<a>".repeat(120), "</a>".repeat(120));
    let doc = io::parse_document("deep.xml", xml.as_bytes(), &profiles.dict).unwrap();
    let y = Yfilter::new(&profiles);
    assert_eq!(y.filter(&doc), brute::filter(&profiles, &doc));
    assert_eq!(y.filter(&doc), vec![0, 1, 2, 4, 5]);
}

#[test]
fn document_parallel_yfilter_equals_single_threaded() {
    let set =
        QuerySet::from_queries(QueryGenerator::new(QueryParams::paper(10, 0.3), 5).queries(200));
    let profiles = ProfileSet::compile(&set).unwrap();
    let mut g = DblpGenerator::new(9);
    let docs: Vec<_> = (0..24)
        .map(|_| io::parse_document("d.xml", g.document(4000).as_bytes(), &profiles.dict).unwrap())
        .collect();
    let y = Yfilter::new(&profiles);
    let single: Vec<_> = docs.iter().map(|d| y.filter(d)).collect();
    assert_eq!(y.filter_batch_threads(&docs, 4).unwrap(), single);
    assert!(
        single.iter().any(|m| !m.is_empty()),
        "some generated twig matches some DBLP document"
    );
}

#[test]
fn emu_equals_yfilter_and_brute_force_on_dblp_workloads() {
    for (len, p) in [(5, 0.1), (10, 0.3), (15, 0.5)] {
        let set = QuerySet::from_queries(
            QueryGenerator::new(QueryParams::paper(len, p), len as u64).queries(16),
        );
        let profiles = ProfileSet::compile(&set).unwrap();
        let mut g = DblpGenerator::new(len as u64);
        let docs: Vec<_> = (0..2)
            .map(|_| {
                io::parse_document("d.xml", g.document(1500).as_bytes(), &profiles.dict).unwrap()
            })
            .collect();
        let y = Yfilter::new(&profiles);
        let mut e = Engine::new(
            Device::emulator(),
            &profiles,
            EngineConfig {
                block_threads: 64,
                ..Default::default()
            },
        )
        .unwrap();
        let got = e.filter(&docs).unwrap();
        for (i, d) in docs.iter().enumerate() {
            let want = brute::filter(&profiles, d);
            assert_eq!(y.filter(d), want, "yfilter, length {len} doc {i}");
            assert_eq!(got[i], want, "emu, length {len} doc {i}");
        }
    }
}
