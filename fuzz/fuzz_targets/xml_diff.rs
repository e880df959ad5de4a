//! Differential: xml-twig's engine on the host SIMT emulator (the paper's `Block` kernel
//! and the warp-synchronous `Warp` kernel) against the YFilter-like CPU baseline
//! (`baselines::yfilter::Yfilter`) and the crate's brute-force tree matcher, on tiny
//! workloads built from the fuzz bytes: 1-6 twigs of 1-6 nodes over tags a, b, c and `*`
//! with `/` and `//`, and 1-3 documents of up to 24 elements (depth up to 8) over a, b,
//! c and d (d is a tag no query names), written as XML and read by `parse_document`.
#![no_main]

use baselines::yfilter::Yfilter;
use gpu_kernels::Device;
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use xml_twig::model::{Axis, NodeTest};
use xml_twig::{brute, io, Engine, EngineConfig, KernelKind, ProfileSet, Query, QuerySet};

const QUERY_TAGS: &[&str] = &["a", "b", "c"];
const DOC_TAGS: &[&str] = &["a", "b", "c", "d"];

fn query(u: &mut Unstructured) -> Result<Query> {
    let mut q = Query { nodes: Vec::new() };
    for i in 0..u.int_in_range(1..=6usize)? {
        let parent = if i == 0 { None } else { Some(u.int_in_range(0..=i - 1)?) };
        let axis = if u.arbitrary()? { Axis::Descendant } else { Axis::Child };
        let test = if u.ratio(1, 4)? {
            NodeTest::Wildcard
        } else {
            NodeTest::Name(u.choose(QUERY_TAGS)?.to_string())
        };
        q.push(parent, axis, test);
    }
    Ok(q)
}

/// A random element tree as XML text: `budget` elements at most, depth at most 8.
fn element(u: &mut Unstructured, out: &mut String, depth: usize, budget: &mut usize) -> Result<()> {
    *budget -= 1;
    let tag = *u.choose(DOC_TAGS)?;
    let children = if depth >= 8 { 0 } else { u.int_in_range(0..=3u8)? };
    if children == 0 && u.arbitrary()? {
        out.push_str(&format!("<{tag}/>"));
        return Ok(());
    }
    out.push_str(&format!("<{tag}>"));
    for _ in 0..children {
        if *budget == 0 {
            break;
        }
        element(u, out, depth + 1, budget)?;
    }
    out.push_str(&format!("</{tag}>"));
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let build = |u: &mut Unstructured| -> Result<(Vec<Query>, Vec<String>)> {
        let mut qs = Vec::new();
        for _ in 0..u.int_in_range(1..=6u8)? {
            qs.push(query(u)?);
        }
        let mut docs = Vec::new();
        for _ in 0..u.int_in_range(1..=3u8)? {
            let mut s = String::new();
            let mut budget = 24;
            element(u, &mut s, 1, &mut budget)?;
            docs.push(s);
        }
        Ok((qs, docs))
    };
    let Ok((queries, texts)) = build(&mut u) else { return };
    let set = QuerySet::from_queries(queries);
    let shown: Vec<String> = set.queries.iter().map(|q| q.to_string()).collect();
    let profiles = ProfileSet::compile(&set).expect("compile");
    let docs: Vec<_> = texts
        .iter()
        .map(|t| io::parse_document("fuzz.xml", t.as_bytes(), &profiles.dict).expect("generated XML parses"))
        .collect();
    let yf = Yfilter::new(&profiles);
    for (d, doc) in docs.iter().enumerate() {
        assert_eq!(
            yf.filter(doc),
            brute::filter(&profiles, doc),
            "yfilter vs brute, document {d}: {}\nqueries {shown:?}",
            texts[d]
        );
    }
    for kernel in [KernelKind::Block, KernelKind::Warp] {
        let cfg = EngineConfig { kernel, block_threads: 32, warps_per_block: 2, ..EngineConfig::default() };
        let mut engine = Engine::new(Device::emulator(), &profiles, cfg).expect("engine");
        let got = engine.filter(&docs).expect("filter");
        for (d, doc) in docs.iter().enumerate() {
            assert_eq!(
                got[d],
                yf.filter(doc),
                "emu {kernel:?} vs yfilter, document {d}: {}\nqueries {shown:?}",
                texts[d]
            );
        }
    }
});
