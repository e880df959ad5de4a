//! The pruning index's answers against SFF's over many small launches, on the GPU when
//! there is one (else the emulator): the pipeline's two launch slots and its queues, the
//! answer lists grown and listed again, the dense kernels striding over more events than
//! their grid was sized for, the lists of the dense model's rows (8000 interfaces: 250
//! words, a block of 8 warps per event; 50 words and 2 warps in `small`), the value cells
//! of the dense model (8 slices of filters; 2 in `small`) with an interface per filter,
//! ten interfaces, 500 and one (filters sharing interfaces; with one, every slice lies in
//! one interface, whose blocks return once every event has it).
//! Small enough to run under `compute-sanitizer`; exits non-zero on the first answer that
//! differs.
//!
//!     cargo run --release -p ccm --example index_check [seed] [small [cells]]
//!
//! `small`: a fifth of the events and filters (for the sanitizers); `cells`: only the
//! dense model on the value cells, every event on them (in interface order, then in name
//! order where built), then each launch on them or walked, as the index chooses.
//! `index_check ptx` prints the kernels' PTX instead (for `ptxas -v` on the GPU host).

use baselines::sff::Sff;
use baselines::Matcher;
use ccm::workload::{self, DenseParams, NameDist, Params, Workload};
use ccm::{GpuIndex, IndexConfig};
use gpu_kernels::Device;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("ptx") {
        use std::io::Write;
        std::io::stdout().write_all(ccm::PTX.as_bytes())?;
        return Ok(());
    }
    let seed = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1);
    let k = if std::env::args().nth(2).as_deref() == Some("small") {
        5
    } else {
        1
    };
    // `cells`: only the dense model's value cells (for the sanitizers, on their kernel).
    let only_cells = std::env::args().nth(3).as_deref() == Some("cells");
    let dev = Device::gpu_or_emulator_noted(0, ccm::PTX);
    let mut cases: Vec<(String, Workload)> = Vec::new();
    for dist in [NameDist::Uniform, NameDist::Zipf(1.0)] {
        if only_cells {
            break;
        }
        let p = Params {
            events: 3000 / k,
            filters_per_interface: (900 / k, 1100 / k),
            name_dist: dist,
            ..Params::default()
        };
        cases.push((
            format!("table 1 model, {dist:?}"),
            workload::generate(&p, seed)?,
        ));
    }
    let dense = [
        (None, (20, 20)),
        (Some(10), (20, 20)),
        (None, (3, 5)),
        (Some(10), (3, 5)),
        (Some(500), (10, 10)),
        (Some(1), (10, 10)),
    ];
    for (interfaces, x) in dense {
        let p = DenseParams {
            events: 1500 / k,
            filters: 8000 / k,
            interfaces,
            names_per_event: x,
            ..DenseParams::default()
        };
        let name = format!("dense model, interfaces {interfaces:?}, names per event {x:?}");
        cases.push((name, workload::generate_dense(&p, seed)?));
    }
    let mut bad = 0;
    for (name, w) in &cases {
        let sff = Sff::build(&w.subscriptions)?;
        let want: Vec<_> = w.events.iter().map(|e| sff.match_event(e)).collect();
        // Every event on the partition walk, then every event dense (filter-major and
        // interface-major kernels), then (where the index builds them) dense events on
        // the value cells, every event (in interface order, and in name order where the
        // index builds it), or each launch every event (in either order) or the walk with
        // those beyond an eighth of the filters on the cells, as the index chooses (a
        // share below 0: every event on the cells, in name order their answers counted
        // by the cells);
        // launches of 300 events, so a call is many, the first of 37 events, each after
        // it 1.5 times the one before.
        let all = [
            (0.125f64, 32, false, false),
            (0.0, usize::MAX, false, false),
            (0.0, 1, false, false),
            (0.0, usize::MAX, true, false),
            (0.0, usize::MAX, true, true),
            (-1.0, usize::MAX, true, true),
            (0.125, usize::MAX, true, true),
        ];
        for (dense_share, iface_major_min, cells, cells_sorted) in all {
            if only_cells && !cells {
                continue;
            }
            let cfg = IndexConfig {
                dense_share: dense_share.max(0.0),
                cells,
                cells_share: dense_share,
                cells_sorted,
                sorted_counts: dense_share < 0.0,
                iface_major_min,
                batch_events: 300,
                first_launch: 37,
                ramp_growth: 1.5,
                ..IndexConfig::for_device(&dev)
            };
            let mut index = GpuIndex::new(&dev, &w.subscriptions, cfg)?;
            if cells && !index.has_cells() {
                continue;
            }
            let mut out = ccm::Answers::default();
            for round in 0..2 {
                index.match_batch_into(&w.batch, &mut out)?;
                let wrong = out
                    .iter()
                    .zip(&want)
                    .filter(|(g, w)| *g != w.as_slice())
                    .count();
                println!(
                    "{name}, dense share {dense_share}, iface_major_min {iface_major_min}, cells {cells}, \
                     sorted {cells_sorted}, round {round}: \
                     {} events, {} answers, {wrong} differ from SFF's",
                    out.len(),
                    out.total()
                );
                bad += wrong + (out.len() != want.len()) as usize;
            }
        }
    }
    if bad > 0 {
        return Err(format!("{bad} answers differ from SFF's").into());
    }
    println!("all answers equal SFF's");
    Ok(())
}
