//! The filter over several emulated devices ([`MultiFilter`]) answers as the one-device
//! engine and as the CPU's YFilter-like NFA, document by document in input order,
//! whatever the number of devices and the documents' sizes (runs cut by bytes, devices
//! left without documents).

use gpu_kernels::multi::{Devices, OnDevice};
use proptest::prelude::*;
use xml_twig::workload::{RandomGenerator, RandomParams};
use xml_twig::{
    io, Device, Document, Engine, EngineConfig, MultiFilter, ProfileSet, QuerySet, XmlError,
};

/// Small blocks keep the emulator (every lane run on the host) fast.
fn small_blocks() -> EngineConfig {
    EngineConfig {
        block_threads: 32,
        warps_per_block: 1,
        ..EngineConfig::default()
    }
}

/// `queries` random twigs and `docs` random documents of `elements[i]` elements each.
fn workload(seed: u64, queries: usize, elements: &[usize]) -> (ProfileSet, Vec<Document>) {
    let p = |elements| RandomParams {
        tags: 4,
        elements,
        max_depth: 6,
        query_nodes: 4,
        p_wildcard: 0.3,
        p_descendant: 0.4,
        p_branch: 0.5,
    };
    let mut g = RandomGenerator::new(p(40), seed);
    let set = QuerySet::from_queries((0..queries).map(|_| g.query()).collect());
    let profiles = ProfileSet::compile(&set).expect("generated queries compile");
    let docs = elements
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let mut g = RandomGenerator::new(p(n), seed ^ (i as u64 + 1));
            io::parse_document("random.xml", g.document().as_bytes(), &profiles.dict)
                .expect("generated documents parse")
        })
        .collect();
    (profiles, docs)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// Runs of documents of unequal sizes over 2 to 4 devices: the answers are the
    /// one-device engine's and the NFA's, by [`MultiFilter::filter`] and through
    /// [`MultiFilter::encode`].
    #[test]
    fn the_filter_over_devices_answers_as_one_device_and_the_nfa(
        seed in any::<u64>(),
        elements in prop::collection::vec(1usize..60, 1..7),
        devices in 2usize..=4,
    ) {
        let (profiles, docs) = workload(seed, 5, &elements);
        let mut one = Engine::new(Device::emulator(), &profiles, small_blocks()).unwrap();
        let want = one.filter(&docs).unwrap();
        let nfa = baselines::yfilter::Yfilter::new(&profiles).filter_batch(&docs);
        prop_assert_eq!(&want, &nfa);
        let mut multi =
            MultiFilter::new(Devices::emulated(devices).unwrap(), &profiles, small_blocks()).unwrap();
        prop_assert_eq!(&multi.filter(&docs).unwrap(), &want);
        let batch = multi.encode(&docs);
        prop_assert_eq!(batch.runs().len(), devices);
        prop_assert_eq!(&multi.filter_encoded(&batch).unwrap(), &want);
    }
}

#[test]
fn runs_are_contiguous_in_order_and_balanced_by_bytes() {
    let (profiles, mut docs) = workload(7, 2, &[5, 5, 5, 5, 5, 5]);
    for (d, bytes) in docs.iter_mut().zip([100, 100, 100, 100, 400, 0]) {
        d.bytes = bytes;
    }
    let multi = MultiFilter::new(Devices::emulated(2).unwrap(), &profiles, small_blocks()).unwrap();
    // 400 and 401 bytes (an empty document weighs one).
    assert_eq!(multi.runs(&docs), vec![0..4, 4..6]);
    let multi = MultiFilter::new(Devices::emulated(4).unwrap(), &profiles, small_blocks()).unwrap();
    let runs = multi.runs(&docs[..2]);
    assert_eq!(runs.len(), 4);
    assert_eq!(runs.iter().map(|r| r.len()).sum::<usize>(), 2);
    assert!(runs.windows(2).all(|w| w[0].end == w[1].start));
}

#[test]
fn a_new_query_set_reaches_every_device() {
    let (profiles, _) = workload(11, 6, &[]);
    let mut multi =
        MultiFilter::new(Devices::emulated(3).unwrap(), &profiles, small_blocks()).unwrap();
    let (fewer, fewer_docs) = workload(12, 3, &[30, 30, 30]);
    assert_ne!(fewer.len(), profiles.len());
    multi.load(&fewer).unwrap();
    let want = baselines::yfilter::Yfilter::new(&fewer).filter_batch(&fewer_docs);
    assert_eq!(multi.filter(&fewer_docs).unwrap(), want);
}

#[test]
fn a_document_too_deep_is_named_by_its_index_in_the_batch_and_its_device() {
    let set = io::parse_query_file("q.txt", "//a\n").unwrap();
    let profiles = ProfileSet::compile(&set).unwrap();
    let cfg = EngineConfig {
        max_shared_bytes: 1024,
        ..small_blocks()
    };
    let shallow = io::parse_document("s.xml", b"<a/>", &profiles.dict).unwrap();
    let deep_xml = format!("{}{}", "<a>".repeat(200), "</a>".repeat(200));
    let deep = io::parse_document("d.xml", deep_xml.as_bytes(), &profiles.dict).unwrap();
    let mut multi = MultiFilter::new(Devices::emulated(2).unwrap(), &profiles, cfg).unwrap();
    assert!(multi.max_depth() < 200);
    // The deep document is the second device's first: index 2 of the batch.
    let mut docs = vec![shallow.clone(), shallow, deep];
    docs[0].bytes = 10_000;
    match multi.filter(&docs) {
        Err(OnDevice::Failed {
            ordinal: 1,
            error: XmlError::DocumentTooDeep {
                doc: 2, depth: 200, ..
            },
        }) => {}
        other => panic!("expected document 2 too deep on device 1, got {other:?}"),
    }
}
