//! The lazy DFA agrees with the brute-force tree matcher and the NFA on random documents
//! and twigs (`*`, `//`, nested predicates, recursive tags), with one cache shared by
//! every document (memo entries built on one document are reused on the next), with a
//! budget small enough to flush and fall back to the NFA mid-stream, on all cores, and
//! on real documents with twigs drawn from their own paths (there also one document
//! cut into segments on all cores; `lazy_dfa_segmented.rs` tests that path). The GPU's
//! warm path ([`xml_twig::DfaEngine`], on the emulator) walks the tables a trained cache
//! exports: every document it finishes has the brute-force answers, and every document
//! the cache was trained on is finished.
#![cfg(feature = "xml")]

mod xml_common;
use xml_common::{random_case, random_params};

use baselines::lazy_dfa::LazyDfa;
use baselines::yfilter::Yfilter;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xml_twig::layout::{EventBatch, EventWords};
use xml_twig::workload::{DblpGenerator, QueryGenerator, QueryParams, RandomParams};
use xml_twig::{brute, io, Device, DfaEngine, Document, Matches, ProfileSet, QuerySet};

/// The GPU's warm path (emulator) over `docs` with the tables of a cache trained on
/// `trained_on`: each document's answers, `None` where it was handed back; the same
/// with the accumulators in shared and in global memory, with the leaf bundles ORed
/// from their full words and from their sparse ones, and with the documents cut into
/// segments between their roots' children (at every child, every few events, and at
/// every child with one launch per segment).
fn warm_path(dfa: &LazyDfa, trained_on: &[Document], docs: &[Document]) -> Vec<Option<Matches>> {
    let tables = dfa
        .export(&dfa.train(trained_on))
        .expect("a narrow accumulator");
    let mut gpu = DfaEngine::new(Device::emulator(), &tables).expect("the exported tables check");
    gpu.set_shared_max(200 * 1024);
    let shared = gpu.filter(docs).expect("the emulator runs");
    // `filter` uploads the paper's 1-byte events where the tags fit (they do here),
    // encoded straight into page-locked memory; the 2-byte ones, and either kind in
    // ordinary memory (staged by the call), give the same answers.
    let locked = gpu.encode(docs);
    assert!(locked.events.is_narrow() && matches!(locked.events, EventWords::Locked(_)));
    for narrow in [false, true] {
        let staged = EventBatch::encode(docs, narrow);
        assert_eq!(
            gpu.filter_encoded(&staged).expect("the emulator runs"),
            shared,
            "events in ordinary memory, narrow {narrow}"
        );
    }
    let wide = EventBatch::encode_locked(docs, false, gpu.device()).expect("emulator memory");
    assert_eq!(
        gpu.filter_encoded(&wide).expect("the emulator runs"),
        shared,
        "2-byte events in page-locked memory"
    );
    // A bit set only where a load shows it unset: the same answers.
    gpu.set_check_bits(true);
    assert_eq!(
        gpu.filter_encoded(&locked).expect("the emulator runs"),
        shared,
        "bits checked first"
    );
    gpu.set_check_bits(false);
    // The general kernel on every automaton (the lean walk runs by default where no
    // leaf bundle reports to an accumulator).
    gpu.set_walk_only(false);
    assert_eq!(
        gpu.filter(docs).expect("the emulator runs"),
        shared,
        "the general kernel"
    );
    gpu.set_walk_only(true);
    gpu.set_shared_max(0);
    let global = gpu.filter(docs).expect("the emulator runs");
    assert_eq!(global, shared, "accumulators in global memory");
    gpu.set_dense_bundles(false);
    let sparse = gpu.filter(docs).expect("the emulator runs");
    assert_eq!(sparse, shared, "leaf bundles from their sparse words");
    gpu.set_dense_bundles(true);
    gpu.set_shared_max(200 * 1024);
    gpu.set_segment_events(Some(0));
    assert_eq!(
        gpu.filter(docs).expect("the emulator runs"),
        shared,
        "whole documents"
    );
    for seg in [1, 7] {
        gpu.set_segment_events(Some(seg));
        let cut = gpu.filter(docs).expect("the emulator runs");
        assert_eq!(cut, shared, "segments of at least {seg} events");
    }
    // A launch a warp, accumulators in global memory: every launch past the first
    // starts at its own unit and cut document.
    gpu.set_shared_max(0);
    gpu.set_launch_bytes(1);
    let one_by_one = gpu.filter(docs).expect("the emulator runs");
    assert_eq!(one_by_one, shared, "segments one launch each");
    // The same cuts on the general kernel, where the lean walk ran above.
    gpu.set_walk_only(false);
    for seg in [1, 7] {
        gpu.set_segment_events(Some(seg));
        let cut = gpu.filter(docs).expect("the emulator runs");
        assert_eq!(
            cut, shared,
            "the general kernel, segments of at least {seg} events"
        );
    }
    gpu.set_walk_only(true);
    // The lean walk (where it runs) on the host's list of units instead of the units
    // its warps find on the device: whole documents, the engine's choice, cut at every
    // child and every few events.
    gpu.set_plan_on_device(false);
    for seg in [Some(0), None, Some(1), Some(7)] {
        gpu.set_segment_events(seg);
        let cut = gpu.filter(docs).expect("the emulator runs");
        assert_eq!(cut, shared, "the host's plan, segments {seg:?}");
    }
    // A warp per unit on the device's plan (a thread per unit ran above).
    gpu.set_plan_on_device(true);
    gpu.set_walk_lanes(false);
    for seg in [None, Some(1), Some(7)] {
        gpu.set_segment_events(seg);
        let cut = gpu.filter(docs).expect("the emulator runs");
        assert_eq!(cut, shared, "a warp per unit, segments {seg:?}");
    }
    gpu.set_walk_lanes(true);
    gpu.set_segment_events(None);
    // The host's walk of the transitions names the documents handed back, no more.
    let handed_back: Vec<usize> = (0..docs.len()).filter(|&i| shared[i].is_none()).collect();
    assert_eq!(
        gpu.handed_back(),
        handed_back.len(),
        "documents handed back, counted"
    );
    let batch = EventBatch::encode(docs, false);
    assert_eq!(
        tables.unfinished(&batch),
        handed_back,
        "documents the tables cannot finish"
    );
    shared
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn lazy_dfa_equals_brute_force_on_random_docs_and_twigs(
        seed in any::<u64>(),
        p in random_params(),
        budget in prop_oneof![Just(usize::MAX), 2_000usize..60_000],
    ) {
        let (profiles, docs) = random_case(p, seed, 12, 4);
        let dfa = LazyDfa::with_budget(&profiles, budget);
        let mut cache = dfa.cache();
        // Twice over the documents: the second pass runs on what the first built.
        for pass in 0..2 {
            for (i, d) in docs.iter().enumerate() {
                prop_assert_eq!(dfa.filter_with(&mut cache, d), brute::filter(&profiles, d), "pass {} doc {} seed {}", pass, i, seed);
            }
        }
    }

    #[test]
    fn lazy_dfa_equals_brute_force_with_many_bushy_twigs(
        seed in any::<u64>(),
        tags in 1usize..5,
        elements in 1usize..60,
        depth in 1usize..8,
        nodes in 2usize..9,
        p_wildcard in 0.0f64..0.6,
        p_descendant in 0.0f64..0.7,
        queries in 60usize..200,
    ) {
        // Enough twigs that the join planes and pass regions of a state span several
        // words, and bushy ones, so that nodes of 1 to 8 children share a word.
        let p = RandomParams { tags, elements, max_depth: depth, query_nodes: nodes, p_wildcard, p_descendant, p_branch: 0.8 };
        let (profiles, docs) = random_case(p, seed, queries, 3);
        let dfa = LazyDfa::new(&profiles);
        let mut cache = dfa.cache();
        for pass in 0..2 {
            for (i, d) in docs.iter().enumerate() {
                prop_assert_eq!(dfa.filter_with(&mut cache, d), brute::filter(&profiles, d), "pass {} doc {} seed {}", pass, i, seed);
            }
        }
    }

    #[test]
    fn gpu_warm_path_equals_brute_force_and_finishes_what_it_was_trained_on(
        seed in any::<u64>(),
        p in random_params(),
        queries in prop_oneof![Just(12usize), 60usize..160],
    ) {
        // Up to 160 twigs: join planes and masks that span several words.
        let (profiles, docs) = random_case(p, seed, queries, 5);
        let dfa = LazyDfa::new(&profiles);
        let got = warm_path(&dfa, &docs[..3], &docs);
        for (i, (d, g)) in docs.iter().zip(&got).enumerate() {
            let want = brute::filter(&profiles, d);
            if let Some(m) = g {
                prop_assert_eq!(m, &want, "doc {} seed {}", i, seed);
            } else {
                // (Training stops reading a document once every query matched: the
                // rest of it may take transitions never built.)
                prop_assert!(i >= 3 || want.len() == profiles.ids.len(), "doc {} was trained on, yet handed back (seed {})", i, seed);
            }
        }
    }

    #[test]
    fn lazy_dfa_on_queries_made_only_of_descendant_wildcards(seed in any::<u64>(), nodes in 1usize..7, depth in 1usize..10) {
        let p = RandomParams { tags: 2, elements: 30, max_depth: depth, query_nodes: nodes, p_wildcard: 1.0, p_descendant: 1.0, p_branch: 0.5 };
        let (profiles, docs) = random_case(p, seed, 6, 3);
        let dfa = LazyDfa::new(&profiles);
        for d in &docs {
            prop_assert_eq!(dfa.filter(d), brute::filter(&profiles, d));
        }
    }
}

#[test]
fn lazy_dfa_on_a_deep_recursive_document() {
    let set = io::parse_query_file(
        "q.txt",
        "/a/a/a\n//a//a//a\n//a[a/a][.//b]\n/a[b]\n//*/*/*/*/b\n//a[.//a[.//b]]/a\n/*//*[b][a]\n",
    )
    .unwrap();
    let profiles = ProfileSet::compile(&set).unwrap();
    let xml = format!("{}<b/>{}", "<a>".repeat(120), "</a>".repeat(120));
    let doc = io::parse_document("deep.xml", xml.as_bytes(), &profiles.dict).unwrap();
    let dfa = LazyDfa::new(&profiles);
    assert_eq!(dfa.filter(&doc), vec![0, 1, 2, 4, 5]);
    assert_eq!(dfa.filter(&doc), brute::filter(&profiles, &doc));
}

#[test]
fn lazy_dfa_equals_the_nfa_on_paper_workloads_one_core_and_all_cores() {
    for (len, p, splits) in [
        (5, 0.5, None),
        (10, 0.3, None),
        (15, 0.5, None),
        (4, 0.3, Some(0)),
    ] {
        let mut params = QueryParams::paper(len, p);
        if let Some(s) = splits {
            params.splits = s;
        }
        let set = QuerySet::from_queries(QueryGenerator::new(params, len as u64).queries(300));
        let profiles = ProfileSet::compile(&set).unwrap();
        let mut g = DblpGenerator::new(9 + len as u64);
        let docs: Vec<_> = (0..24)
            .map(|_| {
                io::parse_document("d.xml", g.document(4000).as_bytes(), &profiles.dict).unwrap()
            })
            .collect();
        let y = Yfilter::new(&profiles);
        let want: Vec<_> = docs.iter().map(|d| y.filter(d)).collect();
        let dfa = LazyDfa::new(&profiles);
        // All cores first (caches built by several threads), then one core on a cache
        // trained on other documents, then the pool again (warm).
        assert_eq!(dfa.filter_batch_threads(&docs, 4).unwrap(), want, "L={len}");
        let other: Vec<_> = (0..8)
            .map(|_| {
                io::parse_document("o.xml", g.document(4000).as_bytes(), &profiles.dict).unwrap()
            })
            .collect();
        let mut trained = dfa.train(&other);
        let got: Vec<_> = docs
            .iter()
            .map(|d| dfa.filter_with(&mut trained, d))
            .collect();
        assert_eq!(got, want, "L={len} trained");
        dfa.fill_pool(&trained, 3);
        assert_eq!(dfa.filter_batch(&docs), want, "L={len} pooled");
        assert!(
            want.iter().any(|m| !m.is_empty()),
            "L={len}: something matches"
        );
        for (d, w) in docs.iter().zip(&want).take(3) {
            assert_eq!(&brute::filter(&profiles, d), w);
        }
        // The GPU's warm path: trained on other documents it finishes some (with the
        // NFA's answers) and hands the rest back; trained on these, it finishes all.
        let got = warm_path(&dfa, &other, &docs);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(g.as_ref().is_none_or(|g| g == w), "L={len} doc {i}");
        }
        assert!(
            got.iter().any(Option::is_some),
            "L={len}: a document finished"
        );
        let all: Vec<_> = want.iter().cloned().map(Some).collect();
        assert_eq!(
            warm_path(&dfa, &docs, &docs),
            all,
            "L={len} trained on them"
        );
    }
}

#[test]
fn gpu_lean_walk_matches_linear_paths_and_the_roots_own_queries_in_cut_documents() {
    // Linear paths only: no leaf bundle reports to an accumulator, so the lean walk runs;
    // `/r` is matched by the root's own leaf bundle, which a cut document's segments never
    // close (its first segment matches it).
    let set = io::parse_query_file("q.txt", "/r\n//a\n/r/b/c\n/x/a\n//b/*\n").unwrap();
    let profiles = ProfileSet::compile(&set).unwrap();
    let docs: Vec<Document> = [
        "<r><a/><b><c/></b><a/><b/><q><a/></q></r>",
        "<r><b/><b/><b/><b/><b/></r>",
        "<x><a/><y/></x>",
        "<r><q/><q/><q/><b><c/><c/></b></r>",
    ]
    .iter()
    .map(|x| io::parse_document("d.xml", x.as_bytes(), &profiles.dict).unwrap())
    .collect();
    let want: Vec<Option<Matches>> = docs
        .iter()
        .map(|d| Some(brute::filter(&profiles, d)))
        .collect();
    assert!(
        want.iter().all(|m| m.as_ref().is_some_and(|m| m.len() < 5)),
        "never every query"
    );
    let dfa = LazyDfa::new(&profiles);
    let tables = dfa.export(&dfa.train(&docs)).expect("a narrow accumulator");
    let gpu = DfaEngine::new(Device::emulator(), &tables).expect("the exported tables check");
    assert!(gpu.walks_only(), "linear paths run the lean walk");
    // Whole, cut at every child, and the other modes, each against the general kernel.
    assert_eq!(warm_path(&dfa, &docs, &docs), want);
}

#[test]
fn gpu_lean_walk_plans_its_units_on_the_device_as_the_host_does_over_many_documents() {
    // Linear paths (Fig. 9's `paths` workload, smaller) over more than 32 documents,
    // some with more than 32 children under the root: the warps' searches for their
    // document and their cuts take more than one round of votes. A thread per unit and
    // a warp per unit on the device's plan, and the host's plan, against the CPU.
    let params = QueryParams {
        splits: 0,
        ..QueryParams::paper(3, 0.5)
    };
    let set = QuerySet::from_queries(QueryGenerator::new(params, 3).queries(256));
    let profiles = ProfileSet::compile(&set).unwrap();
    let mut g = DblpGenerator::new(5);
    let docs: Vec<Document> = (0..40)
        .map(|i| {
            let bytes = if i % 9 == 4 { 14_000 } else { 600 };
            io::parse_document("d.xml", g.document(bytes).as_bytes(), &profiles.dict).unwrap()
        })
        .collect();
    let batch = EventBatch::encode(&docs, true);
    assert!(
        (0..docs.len()).any(|d| batch.children_of(d).len() > 40),
        "a root with more than 40 children"
    );
    let dfa = LazyDfa::new(&profiles);
    let want: Vec<Option<Matches>> = dfa.filter_batch(&docs).into_iter().map(Some).collect();
    let ids: usize = want.iter().flatten().map(Vec::len).sum();
    assert!(
        ids > 8 * docs.len(),
        "{ids} ids: the first call reads them in two copies"
    );
    let tables = dfa.export(&dfa.train(&docs)).expect("a narrow accumulator");
    let mut gpu = DfaEngine::new(Device::emulator(), &tables).expect("the exported tables check");
    assert!(gpu.walks_only(), "linear paths run the lean walk");
    for seg in [None, Some(0), Some(1), Some(3), Some(50), Some(400)] {
        gpu.set_segment_events(seg);
        gpu.set_plan_on_device(true);
        gpu.set_walk_lanes(true);
        let lanes = gpu.filter_encoded(&batch).expect("the emulator runs");
        assert_eq!(lanes, want, "a thread per unit, segments {seg:?}");
        gpu.set_decode_on_device(false);
        let rows = gpu.filter_encoded(&batch).expect("the emulator runs");
        assert_eq!(rows, want, "rows decoded on the host, segments {seg:?}");
        gpu.set_decode_on_device(true);
        gpu.set_walk_lanes(false);
        let device = gpu.filter_encoded(&batch).expect("the emulator runs");
        assert_eq!(device, want, "a warp per unit, segments {seg:?}");
        let units = gpu.phases().units;
        gpu.set_plan_on_device(false);
        let host = gpu.filter_encoded(&batch).expect("the emulator runs");
        assert_eq!(host, want, "the host's plan, segments {seg:?}");
        if seg == Some(1) {
            assert!(units > 2 * docs.len(), "documents cut: {units} units");
        }
    }
}

#[test]
fn gpu_warm_path_hands_back_a_document_deeper_than_its_stack() {
    let set = io::parse_query_file("q.txt", "//a//a//b\n/a/a\n").unwrap();
    let profiles = ProfileSet::compile(&set).unwrap();
    let nest = |n: usize| {
        let xml = format!("{}<b/>{}", "<a>".repeat(n), "</a>".repeat(n));
        io::parse_document("deep.xml", xml.as_bytes(), &profiles.dict).unwrap()
    };
    let (shallow, deep) = (nest(62), nest(63));
    let dfa = LazyDfa::new(&profiles);
    let docs = [shallow.clone(), deep.clone()];
    assert_eq!(warm_path(&dfa, &docs, &docs), vec![Some(vec![0, 1]), None]);
    assert_eq!(dfa.filter(&deep), vec![0, 1]);
}

// ---------------------------------------------------------------------------------
// Real documents.

/// Where the real documents are: `$XML_REAL_DIR`, else the project's shared folder.
fn real_dir() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("XML_REAL_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/xml-real")
        });
    dir.is_dir().then_some(dir)
}

/// The root-to-element name paths of every element of `xml`.
fn element_paths(xml: &[u8]) -> Vec<Vec<String>> {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_reader(xml);
    let mut stack: Vec<String> = Vec::new();
    let mut out = Vec::new();
    let mut buf = Vec::new();
    loop {
        match r
            .read_event_into(&mut buf)
            .expect("real documents are well-formed")
        {
            Event::Start(e) => {
                stack.push(String::from_utf8_lossy(e.name().as_ref()).into_owned());
                out.push(stack.clone());
            }
            Event::Empty(e) => {
                stack.push(String::from_utf8_lossy(e.name().as_ref()).into_owned());
                out.push(stack.clone());
                stack.pop();
            }
            Event::End(_) => {
                stack.pop();
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    out
}

/// Steps `path[from..]` as query text: each step `/` or (sometimes) `//` past a skipped
/// ancestor, each name sometimes `*`.
fn steps(rng: &mut ChaCha8Rng, path: &[String], from: usize, relative: bool) -> String {
    let mut s = String::new();
    let mut i = from;
    let mut first = true;
    while i < path.len() {
        let skip = i + 1 < path.len() && rng.gen_bool(0.2);
        if skip {
            i += 1;
        }
        let desc = skip || rng.gen_bool(0.15);
        let name = if rng.gen_bool(0.15) {
            "*"
        } else {
            path[i].as_str()
        };
        s += match (first && relative, desc) {
            (true, false) => "",
            (true, true) => ".//",
            (false, false) => "/",
            (false, true) => "//",
        };
        s += name;
        first = false;
        i += 1;
    }
    s
}

/// A twig drawn from the document's own paths: a path, with up to two predicates taken
/// from other paths that share a prefix with it; one in three has a step renamed to
/// another of the document's names (so that some twigs do not match).
fn drawn_query(rng: &mut ChaCha8Rng, paths: &[Vec<String>]) -> String {
    let mut p = paths[rng.gen_range(0..paths.len())].clone();
    if rng.gen_bool(0.33) {
        let other = &paths[rng.gen_range(0..paths.len())];
        let k = rng.gen_range(0..p.len());
        p[k] = other[rng.gen_range(0..other.len())].clone();
    }
    let p = &p;
    let split = rng.gen_range(0..p.len());
    let mut preds = String::new();
    for _ in 0..rng.gen_range(0..=2) {
        // Another path below the same prefix: a few draws, else none.
        for _ in 0..20 {
            let q = &paths[rng.gen_range(0..paths.len())];
            if q.len() > split + 1 && q[..=split] == p[..=split] {
                preds += &format!("[{}]", steps(rng, q, split + 1, true));
                break;
            }
        }
    }
    let head = steps(rng, &p[..=split], 0, false);
    let tail = steps(rng, p, split + 1, false);
    format!("{head}{preds}{tail}")
}

#[test]
fn lazy_dfa_equals_brute_force_and_the_nfa_on_real_documents() {
    let Some(dir) = real_dir() else {
        eprintln!("note: no real documents (set XML_REAL_DIR): nothing checked");
        return;
    };
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "gz") {
            continue;
        }
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(&path)
            .output()
            .expect("gzip runs");
        assert!(out.status.success(), "{}", path.display());
        let xml = out.stdout;
        let paths = element_paths(&xml);
        let mut rng = ChaCha8Rng::seed_from_u64(xml.len() as u64);
        let text: String = (0..60)
            .map(|_| drawn_query(&mut rng, &paths) + "\n")
            .collect();
        let set = io::parse_query_file("drawn.txt", &text).unwrap();
        let profiles = ProfileSet::compile(&set).unwrap();
        let doc = io::parse_document(&path.display().to_string(), &xml, &profiles.dict).unwrap();
        let want = brute::filter(&profiles, &doc);
        assert_eq!(
            Yfilter::new(&profiles).filter(&doc),
            want,
            "{}",
            path.display()
        );
        let dfa = LazyDfa::new(&profiles);
        assert_eq!(dfa.filter(&doc), want, "{}", path.display());
        assert_eq!(dfa.filter(&doc), want, "{} warm", path.display());
        let one = std::slice::from_ref(&doc);
        assert_eq!(
            warm_path(&dfa, one, one),
            vec![Some(want.clone())],
            "{} on the GPU's warm path",
            path.display()
        );
        // One document on all cores, cut into segments (boundaries inside its records).
        for seg in [7, 101, doc.events.len() / 5 + 1] {
            assert_eq!(
                dfa.filter_segmented_by(&doc, seg),
                want,
                "{} segments of {seg}",
                path.display()
            );
        }
        assert!(
            !want.is_empty() && want.len() < set.len(),
            "{}: drawn twigs match some, not all ({} of {})",
            path.display(),
            want.len(),
            set.len()
        );
        checked += 1;
    }
    assert!(checked >= 6, "every real document checked ({checked})");
}
