//! The kernels on the emulator agree with the brute-force tree matcher on random
//! documents and twigs: recursive tags, `*` and `//` chains, bushy twigs, documents
//! with tags no query names, and more than 127 distinct tags (the wide encoding).

use proptest::prelude::*;
use xml_twig::workload::{RandomGenerator, RandomParams};
use xml_twig::{brute, io, Device, Engine, EngineConfig, KernelKind, ProfileSet, QuerySet};

/// Small blocks keep the emulator (every lane run on the host) fast.
fn small_blocks() -> EngineConfig {
    EngineConfig {
        block_threads: 32,
        warps_per_block: 2,
        ..EngineConfig::default()
    }
}

/// Both whole-document kernels: the paper's block kernel and the warp-synchronous one.
fn both_kernels(base: EngineConfig) -> [EngineConfig; 2] {
    [
        EngineConfig {
            kernel: KernelKind::Block,
            ..base.clone()
        },
        EngineConfig {
            kernel: KernelKind::Warp,
            ..base
        },
    ]
}

fn check(p: RandomParams, seed: u64, queries: usize, docs: usize) -> Result<(), TestCaseError> {
    let mut g = RandomGenerator::new(p, seed);
    let set = QuerySet::from_queries((0..queries).map(|_| g.query()).collect());
    let profiles = ProfileSet::compile(&set).unwrap();
    let docs: Vec<_> = (0..docs)
        .map(|_| io::parse_document("random.xml", g.document().as_bytes(), &profiles.dict).unwrap())
        .collect();
    for cfg in both_kernels(small_blocks()) {
        let mut engine = Engine::new(Device::emulator(), &profiles, cfg.clone()).unwrap();
        let got = engine.filter(&docs).unwrap();
        for (d, doc) in docs.iter().enumerate() {
            let want = brute::filter(&profiles, doc);
            prop_assert_eq!(
                &got[d],
                &want,
                "document {} of seed {}, {:?}",
                d,
                seed,
                cfg.kernel
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn emu_equals_brute_force_on_random_docs_and_twigs(
        seed in any::<u64>(),
        tags in 1usize..5,
        depth in 1usize..9,
        nodes in 1usize..7,
        p_wildcard in 0.0f64..0.6,
        p_descendant in 0.0f64..0.7,
        p_branch in 0.0f64..1.0,
    ) {
        let p = RandomParams { tags, elements: 40, max_depth: depth, query_nodes: nodes, p_wildcard, p_descendant, p_branch };
        check(p, seed, 6, 3)?;
    }
}

#[test]
fn emu_equals_brute_force_with_more_than_127_tags() {
    // 200 tag names: the queries' dictionary no longer fits 7 bits.
    let p = RandomParams {
        tags: 200,
        elements: 60,
        max_depth: 5,
        query_nodes: 2,
        p_wildcard: 0.3,
        p_descendant: 0.5,
        p_branch: 0.5,
    };
    let mut g = RandomGenerator::new(p.clone(), 7);
    let mut text: Vec<String> = (0..200).map(|i| format!("//t{i}")).collect();
    text.extend((0..40).map(|_| g.query().to_string()));
    let set = io::parse_query_file("q.txt", &text.join("\n")).unwrap();
    let profiles = ProfileSet::compile(&set).unwrap();
    assert!(!profiles.dict.is_narrow());
    let docs: Vec<_> = (0..3)
        .map(|_| io::parse_document("d.xml", g.document().as_bytes(), &profiles.dict).unwrap())
        .collect();
    for cfg in both_kernels(small_blocks()) {
        let mut engine = Engine::new(Device::emulator(), &profiles, cfg).unwrap();
        assert!(!engine.is_narrow());
        let got = engine.filter(&docs).unwrap();
        for (d, doc) in docs.iter().enumerate() {
            let kind = engine.kernel();
            assert_eq!(
                got[d],
                brute::filter(&profiles, doc),
                "document {d}, {kind:?}"
            );
            assert!(
                !got[d].is_empty(),
                "every document has some t_i element, so some //t_i matches"
            );
        }
    }
}

#[test]
fn paper_figure_4_twig_needs_both_paths_under_one_split_node() {
    // Fig. 4: /a//c//d and /a//c/e both match, but /a//c[//d]/e does not.
    let set = io::parse_query_file(
        "q.txt",
        "/a//c[.//d]/e\n/a//c//d\n/a//c/e\n/a//c[.//d]//e\n",
    )
    .unwrap();
    let profiles = ProfileSet::compile(&set).unwrap();
    let doc = io::parse_document(
        "d.xml",
        b"<a><c><b><d/></b></c><c><e/></c><b><c><e/></c></b></a>",
        &profiles.dict,
    )
    .unwrap();
    for cfg in both_kernels(small_blocks()) {
        let mut engine = Engine::new(Device::emulator(), &profiles, cfg).unwrap();
        let got = engine.filter(std::slice::from_ref(&doc)).unwrap();
        assert_eq!(got[0], vec![1, 2], "{:?}", engine.kernel());
    }
    assert_eq!(brute::filter(&profiles, &doc), vec![1, 2]);
}

#[test]
fn leaf_elements_at_every_offset_of_the_warp_kernels_event_windows() {
    // The warp kernel reads events 32 at a time and walks an open event followed by its
    // close as one step: put a leaf, and an element with one leaf child, at every
    // offset of a window (both parities), across window borders included.
    let set = io::parse_query_file(
        "q.txt",
        "/a//b/c\n//b[c]\n/a/c\n//c[x]\n/a/*/c\n//y[x][b/c]\n//b[c][.//c]\n/a/x\n",
    )
    .unwrap();
    let profiles = ProfileSet::compile(&set).unwrap();
    let mut docs = Vec::new();
    for pad in 0..36 {
        for (open, close) in [("<a>", "</a>"), ("<a><y>", "</y></a>")] {
            let xml = format!("{open}{}<b><c/></b><c/>{close}", "<x/>".repeat(pad));
            docs.push(io::parse_document("leaves.xml", xml.as_bytes(), &profiles.dict).unwrap());
        }
    }
    // The answers differ between the families, so a kernel that lost a leaf shows.
    assert_eq!(brute::filter(&profiles, &docs[2]), vec![0, 1, 2, 4, 6, 7]);
    assert_eq!(brute::filter(&profiles, &docs[3]), vec![0, 1, 4, 5, 6]);
    for cfg in both_kernels(small_blocks()) {
        let mut engine = Engine::new(Device::emulator(), &profiles, cfg.clone()).unwrap();
        let got = engine.filter(&docs).unwrap();
        for (d, doc) in docs.iter().enumerate() {
            assert_eq!(
                got[d],
                brute::filter(&profiles, doc),
                "document {d}, {:?}",
                cfg.kernel
            );
        }
    }
}

#[test]
fn document_deeper_than_the_shared_stack_is_refused() {
    let set = io::parse_query_file("q.txt", "//a").unwrap();
    let profiles = ProfileSet::compile(&set).unwrap();
    let xml = format!("{}{}", "<a>".repeat(300), "</a>".repeat(300));
    let doc = io::parse_document("deep.xml", xml.as_bytes(), &profiles.dict).unwrap();
    // 48 kB hold 187 levels of 256 block columns, 191 of 8 warps' columns.
    let base = EngineConfig {
        max_shared_bytes: 48 * 1024,
        warps_per_block: 8,
        ..EngineConfig::default()
    };
    for cfg in both_kernels(base) {
        let mut engine = Engine::new(Device::emulator(), &profiles, cfg).unwrap();
        let e = engine.filter(std::slice::from_ref(&doc)).unwrap_err();
        assert!(
            matches!(e, xml_twig::XmlError::DocumentTooDeep { depth: 300, .. }),
            "{e}"
        );
    }
}

#[test]
fn several_blocks_and_documents_in_one_and_in_two_launches() {
    // 40 queries of up to 6 nodes do not fit one 32-column block: several query groups,
    // times 4 documents, in one grid.
    let p = RandomParams {
        tags: 3,
        elements: 30,
        max_depth: 6,
        query_nodes: 5,
        p_wildcard: 0.2,
        p_descendant: 0.4,
        p_branch: 0.5,
    };
    let mut g = RandomGenerator::new(p, 11);
    let set = QuerySet::from_queries((0..40).map(|_| g.query()).collect());
    let profiles = ProfileSet::compile(&set).unwrap();
    let docs: Vec<_> = (0..4)
        .map(|_| io::parse_document("d.xml", g.document().as_bytes(), &profiles.dict).unwrap())
        .collect();
    // At most 3 documents per launch: the 4th runs in a second launch.
    for cfg in both_kernels(EngineConfig {
        max_docs_per_launch: 3,
        ..small_blocks()
    }) {
        let mut engine = Engine::new(Device::emulator(), &profiles, cfg).unwrap();
        assert!(engine.layout().blocks > 4);
        let got = engine.filter(&docs).unwrap();
        for (d, doc) in docs.iter().enumerate() {
            let kind = engine.kernel();
            assert_eq!(
                got[d],
                brute::filter(&profiles, doc),
                "document {d}, {kind:?}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// The document-segment engine: any segment size, including segments of one event
    /// and segments that start and end at any depth, gives the whole-document answer.
    #[test]
    fn segmented_emu_equals_brute_force(
        seed in any::<u64>(),
        depth in 1usize..8,
        nodes in 1usize..7,
        segment in 1usize..90,
        p_descendant in 0.0f64..0.7,
    ) {
        let p = RandomParams { tags: 3, elements: 40, max_depth: depth, query_nodes: nodes, p_wildcard: 0.2, p_descendant, p_branch: 0.5 };
        let mut g = RandomGenerator::new(p, seed);
        let set = QuerySet::from_queries((0..6).map(|_| g.query()).collect());
        let profiles = ProfileSet::compile(&set).unwrap();
        let doc = io::parse_document("r.xml", g.document().as_bytes(), &profiles.dict).unwrap();
        for cfg in both_kernels(small_blocks()) {
            let mut engine = Engine::new(Device::emulator(), &profiles, cfg).unwrap();
            let got = engine.filter_segmented(&doc, segment).unwrap();
            prop_assert_eq!(got, brute::filter(&profiles, &doc), "segment size {}", segment);
        }
    }
}

#[test]
fn one_engine_serves_growing_and_shrinking_batches_and_new_query_sets() {
    // Cached device buffers are reused and regrown; `load` swaps the query set.
    let p = RandomParams {
        tags: 3,
        elements: 25,
        max_depth: 6,
        query_nodes: 4,
        p_wildcard: 0.2,
        p_descendant: 0.4,
        p_branch: 0.5,
    };
    let mut g = RandomGenerator::new(p, 3);
    let sets: Vec<ProfileSet> = (0..2)
        .map(|i| {
            ProfileSet::compile(&QuerySet::from_queries(
                (0..5 + 10 * i).map(|_| g.query()).collect(),
            ))
            .unwrap()
        })
        .collect();
    let mut engine = Engine::new(Device::emulator(), &sets[0], small_blocks()).unwrap();
    for (round, n_docs) in [1usize, 4, 2, 5].into_iter().enumerate() {
        let profiles = &sets[round % 2];
        engine.load(profiles).unwrap();
        let docs: Vec<_> = (0..n_docs)
            .map(|_| io::parse_document("d.xml", g.document().as_bytes(), &profiles.dict).unwrap())
            .collect();
        let got = engine.filter(&docs).unwrap();
        for (d, doc) in docs.iter().enumerate() {
            let want = brute::filter(profiles, doc);
            assert_eq!(got[d], want, "round {round} document {d}");
            assert_eq!(
                engine.filter_segmented(doc, 7).unwrap(),
                want,
                "segments, round {round} document {d}"
            );
        }
    }
}
