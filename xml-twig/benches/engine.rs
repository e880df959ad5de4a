//! The twig filter's hot paths (§4): 256 queries of 10 nodes against one 1 MB DBLP
//! document (Fig. 7's point) with the paper's block kernel, the warp kernel and document
//! segments, and a batch of 500 documents of 25 kB (Fig. 9). Without a GPU the same
//! kernels run on the host emulator over a small document and batch (the times then say
//! nothing about a GPU).
//!
//!     cargo bench -p xml-twig --bench engine

use criterion::{criterion_group, criterion_main, Criterion};
use gpu_kernels::Device;
use xml_twig::engine::segment_events;
use xml_twig::workload::{DblpGenerator, QueryGenerator, QueryParams};
use xml_twig::{io, Document, Engine, EngineConfig, KernelKind, ProfileSet, QuerySet};

fn docs(profiles: &ProfileSet, n: usize, bytes: usize) -> Vec<Document> {
    let mut g = DblpGenerator::new(1);
    (0..n)
        .map(|_| {
            io::parse_document(
                "generated.xml",
                g.document(bytes).as_bytes(),
                &profiles.dict,
            )
            .expect("generated documents parse")
        })
        .collect()
}

fn engine(c: &mut Criterion) {
    let dev = Device::gpu_or_emulator_noted(0, xml_twig::PTX);
    let gpu = dev.is_gpu();
    let (queries, one, batch, small) = if gpu {
        (256, 1 << 20, 500, 25 << 10)
    } else {
        (16, 4 << 10, 4, 2 << 10)
    };
    let set = QuerySet::from_queries(
        QueryGenerator::new(QueryParams::paper(10, 0.3), 1).queries(queries),
    );
    let profiles = ProfileSet::compile(&set).expect("queries compile");
    let doc = docs(&profiles, 1, one);
    let many = docs(&profiles, batch, small);
    let mut g = c.benchmark_group(if gpu {
        "xml_fig7_fig9"
    } else {
        "xml_emulator_small"
    });
    g.sample_size(10);
    for (name, kernel) in [("block", KernelKind::Block), ("warp", KernelKind::Warp)] {
        let cfg = EngineConfig {
            kernel,
            ..EngineConfig::default()
        };
        let mut e = Engine::new(
            Device::gpu_or_emulator_noted(0, xml_twig::PTX),
            &profiles,
            cfg,
        )
        .expect("engine");
        g.bench_function(format!("{name}_one_document"), |b| {
            b.iter(|| e.filter(&doc).expect("filter"))
        });
        g.bench_function(format!("{name}_batch_of_{batch}"), |b| {
            b.iter(|| e.filter(&many).expect("filter"))
        });
    }
    let mut e = Engine::new(dev, &profiles, EngineConfig::default()).expect("engine");
    let per = segment_events(&doc[0]);
    g.bench_function("segments_one_document", |b| {
        b.iter(|| e.filter_segmented(&doc[0], per).expect("filter"))
    });
    g.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
