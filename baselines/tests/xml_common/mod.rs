//! What the XML filters' property tests share: a random twig workload (queries with `*`,
//! `//` and nested predicates, documents with recursive tags) from one seed.

use xml_twig::workload::{RandomGenerator, RandomParams};
use xml_twig::{io, Document, ProfileSet, QuerySet};

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
