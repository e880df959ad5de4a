//! YFilter-like NFA at the XML paper's default scale (§5): 256 twigs of 10 nodes on a
//! 1 MB DBLP-schema document (Fig. 8's setting), and the document-parallel mode on a
//! batch of 500 documents of 25 kB with 128 twigs of 5 nodes (Figs. 9-10).

use baselines::yfilter::Yfilter;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use xml_twig::workload::{DblpGenerator, QueryGenerator, QueryParams};
use xml_twig::{io, ProfileSet, QuerySet};

fn single_document(c: &mut Criterion) {
    let mut group = c.benchmark_group("yfilter_1MB_256x10");
    group.sample_size(10);
    for p in [0.1, 0.3, 0.5] {
        let set =
            QuerySet::from_queries(QueryGenerator::new(QueryParams::paper(10, p), 1).queries(256));
        let profiles = ProfileSet::compile(&set).expect("generated queries compile");
        let xml = DblpGenerator::new(2).document(1 << 20);
        let doc = io::parse_document("gen.xml", xml.as_bytes(), &profiles.dict)
            .expect("generated XML parses");
        let y = Yfilter::new(&profiles);
        let mut rt = y.runtime();
        group.throughput(Throughput::Bytes(doc.bytes as u64));
        group.bench_with_input(BenchmarkId::new("p", p), &doc, |b, d| {
            b.iter(|| y.filter_with(&mut rt, d))
        });
    }
    group.finish();
}

fn document_batch(c: &mut Criterion) {
    let mut group = c.benchmark_group("yfilter_batch_500x25kB_128x5");
    group.sample_size(10);
    let set =
        QuerySet::from_queries(QueryGenerator::new(QueryParams::paper(5, 0.5), 3).queries(128));
    let profiles = ProfileSet::compile(&set).expect("generated queries compile");
    let mut g = DblpGenerator::new(4);
    let docs: Vec<_> = (0..500)
        .map(|_| {
            io::parse_document("gen.xml", g.document(25_000).as_bytes(), &profiles.dict)
                .expect("parses")
        })
        .collect();
    let y = Yfilter::new(&profiles);
    group.throughput(Throughput::Bytes(docs.iter().map(|d| d.bytes as u64).sum()));
    group.bench_function("single_thread", |b| {
        let mut rt = y.runtime();
        b.iter(|| {
            docs.iter()
                .map(|d| y.filter_with(&mut rt, d).len())
                .sum::<usize>()
        })
    });
    group.bench_function("all_cores", |b| b.iter(|| y.filter_batch(&docs)));
    group.finish();
}

criterion_group!(benches, single_document, document_batch);
criterion_main!(benches);
