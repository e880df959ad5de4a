//! The DDM engines' hot path: one time step of the paper's scenario (§IV: every region
//! moves by half its size; Phases 1 to 4, the new pairs back on the host) at 32768
//! regions, RS = 10 x 10, grid cells 100 x 100, for REGION, GRID and the sweep. Without
//! a GPU the same kernels run on the host emulator at 512 regions (the times then say
//! nothing about a GPU).
//!
//!     cargo bench -p ddm-region --bench engine

use criterion::{criterion_group, criterion_main, Criterion};
use ddm_region::workload::{Distribution, Scenario, ScenarioParams};
use ddm_region::{Approach, Device, Engine, GridSpec, UpdateBatch};

fn engine(c: &mut Criterion) {
    let dev = Device::gpu_or_emulator_noted(0, ddm_region::PTX);
    let gpu = dev.is_gpu();
    let regions = if gpu { 32768 } else { 512 };
    let mut scenario = Scenario::new(ScenarioParams::paper(regions, 10, Distribution::Uniform), 1)
        .expect("scenario");
    let initial = UpdateBatch::everything(scenario.regions());
    let steps: Vec<UpdateBatch> = (0..30).map(|_| scenario.step()).collect();
    let grid = GridSpec::covering(2, 10_000, 100).expect("grid");
    let mut g = c.benchmark_group(if gpu {
        "ddm_step_32768_rs10"
    } else {
        "ddm_emulator_512"
    });
    g.sample_size(10);
    for approach in [Approach::Region, Approach::Grid(grid), Approach::Sweep] {
        let set = scenario.regions();
        let mut e =
            Engine::new(&dev, approach.clone(), 2, set.n_pub(), set.n_sub()).expect("engine");
        e.step(&initial, false).expect("first step");
        let mut i = 0;
        g.bench_function(approach.name(), |b| {
            b.iter(|| {
                i = (i + 1) % steps.len();
                let r = e.step(&steps[i], true).expect("step");
                if approach == Approach::Sweep {
                    e.count().expect("count")
                } else {
                    r.overlaps
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, engine);
criterion_main!(benches);
