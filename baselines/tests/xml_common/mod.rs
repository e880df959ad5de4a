//! What the XML filters' property tests share: a random twig workload (queries with `*`,
//! `//` and nested predicates, documents with recursive tags) from one seed.

use proptest::prelude::*;
use xml_twig::workload::{RandomGenerator, RandomParams};
use xml_twig::{io, Document, ProfileSet, QuerySet};

/// Random workload parameters of the filters' main property tests: 1-5 tags, up to 79
/// elements nested up to 11 deep, twigs of 1-8 nodes with `*` (up to 70%), `//` (up to
/// 80%) and branches at any rate.
pub fn random_params() -> impl Strategy<Value = RandomParams> {
    (
        1usize..6,
        1usize..80,
        1usize..12,
        1usize..9,
        0.0f64..0.7,
        0.0f64..0.8,
        0.0f64..1.0,
    )
        .prop_map(
            |(tags, elements, max_depth, query_nodes, p_wildcard, p_descendant, p_branch)| {
                RandomParams {
                    tags,
                    elements,
                    max_depth,
                    query_nodes,
                    p_wildcard,
                    p_descendant,
                    p_branch,
                }
            },
        )
}

/// `queries` random twigs and `docs` random documents of `p`, parsed against the twigs'
/// tag dictionary.
pub fn random_case(
    p: RandomParams,
    seed: u64,
    queries: usize,
    docs: usize,
) -> (ProfileSet, Vec<Document>) {
    let mut g = RandomGenerator::new(p, seed);
    let set = QuerySet::from_queries((0..queries).map(|_| g.query()).collect());
    let profiles = ProfileSet::compile(&set).expect("generated twigs compile");
    let docs = (0..docs)
        .map(|_| {
            io::parse_document("r.xml", g.document().as_bytes(), &profiles.dict)
                .expect("generated documents parse")
        })
        .collect();
    (profiles, docs)
}
