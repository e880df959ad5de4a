//! How warm is a trained lazy DFA on new documents of the same stream? For Fig. 9's
//! workload (500 documents of 25 kB, twigs with */// 50%), the share of documents that
//! take a transition the trained cache lacks, against the bytes it was trained on, and
//! the tags and depths of those first misses.
//!
//!     cargo run --release -p baselines --example xml_warm_misses [-- MB...]

use baselines::lazy_dfa::LazyDfa;
use std::collections::BTreeMap;
use xml_twig::workload::{DblpGenerator, QueryGenerator, QueryParams};
use xml_twig::{io, DfaTables, Document, ProfileSet, QuerySet};

fn docs(profiles: &ProfileSet, n: usize, bytes: usize, seed: u64) -> Vec<Document> {
    let mut g = DblpGenerator::new(seed);
    (0..n)
        .map(|_| io::parse_document("g.xml", g.document(bytes).as_bytes(), &profiles.dict).unwrap())
        .collect()
}

/// The first missing transition of `doc` in `t`: (depth, tag), or None.
fn first_miss(t: &DfaTables, doc: &Document) -> Option<(usize, u16)> {
    let mut stack = vec![1u32];
    for e in &doc.events {
        if e.is_open() {
            let tag = if (e.tag() as u32) < t.tags {
                e.tag()
            } else {
                0
            };
            let to = t.trans[(*stack.last().unwrap() * t.tags + tag as u32) as usize];
            if to == u32::MAX {
                return Some((stack.len(), tag));
            }
            stack.push(to);
        } else if stack.len() > 1 {
            stack.pop();
        }
    }
    None
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1, 4, 16]
    } else {
        sizes
    };
    for len in [5, 10] {
        let set = QuerySet::from_queries(
            QueryGenerator::new(QueryParams::paper(len, 0.5), 1).queries(2048),
        );
        let profiles = ProfileSet::compile(&set).unwrap();
        let batch = docs(&profiles, 500, 25_000, 1 ^ 0xba7c);
        let dfa = LazyDfa::new(&profiles);
        for &mb in &sizes {
            let training = docs(&profiles, mb * 40, 25_000, 0x7a1e_d0c5);
            let mut cache = dfa.train(&training);
            let depth = std::env::var("COMPLETE_DEPTH")
                .ok()
                .and_then(|d| d.parse().ok())
                .unwrap_or(0);
            let t0 = std::time::Instant::now();
            let added = if depth > 0 {
                dfa.complete(&mut cache, &training, depth, 1 << 20)
            } else {
                0
            };
            let took = t0.elapsed().as_secs_f64();
            let t = dfa.export(&cache).unwrap();
            println!("  completed to depth {depth}: {added} states added in {took:.2} s; {} MB of tables", (t.trans.len() * 8 + t.sparse.len() * 8) >> 20);
            let mut by: BTreeMap<(usize, String), usize> = BTreeMap::new();
            let mut missed = 0;
            for d in &batch {
                if let Some((depth, tag)) = first_miss(&t, d) {
                    missed += 1;
                    let name = profiles.dict.name(tag).unwrap_or("?").to_string();
                    *by.entry((depth, name)).or_default() += 1;
                }
            }
            let sample = &batch[..100];
            let time = |c: &baselines::lazy_dfa::Cache| {
                let mut c = c.clone();
                let t0 = std::time::Instant::now();
                let n: usize = sample
                    .iter()
                    .map(|d| dfa.filter_with(&mut c, d).len())
                    .sum();
                (t0.elapsed().as_secs_f64() * 1e3, n)
            };
            let trained = dfa.train(&training);
            let (a, na) = time(&trained);
            let (b, nb) = time(&cache);
            assert_eq!(na, nb);
            println!("  one core, 100 documents: trained {a:.1} ms, completed {b:.1} ms");
            let mut top: Vec<_> = by.into_iter().collect();
            top.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
            println!(
                "L={len} trained on {mb} MB: {} states, {missed} of {} documents miss; first misses (depth, tag): {:?}",
                t.states(),
                batch.len(),
                &top[..top.len().min(8)]
            );
        }
    }
}
