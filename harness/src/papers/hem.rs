//! The `hem` experiment of `harness run ccm` (beyond the paper): the REIN / HEM suite's
//! own dense model (Shi & Qian, DASFAA 2022: 20 numeric names, 1-5 range predicates per
//! filter, one interface per filter) with events carrying 3-5, 10 or all 20 uniform
//! names, or 5-10 names drawn from a Zipf law (exponent 1, the suite's skewed events),
//! at 100k and 1M filters: every CPU engine on one core and on all cores and every GPU
//! engine, so that the GPU's margin is read against the strongest CPU method there. The
//! CPU engines: SFF, the content index, the hybrid index (which has the bit index among
//! its choices here, every filter being integer bounds) and, as the series `bits`, the
//! bit index alone (HEM class: [`baselines::bit_index`]), each on one core and on all.
//! `GPU_MATCH_HEM_SIZES` (comma-separated filter counts, e.g. `1000000`) replaces the
//! filter counts at full size, so that one size can be recorded in a run of its own.
//!
//! A child of [`super`] (the CCM experiments): it measures through the same engines,
//! checks and series as the `dense` experiment. The suite's own matchers (HEM5DD,
//! HEM5DD-avxOR) are C++ outside this project; `baselines/examples/dense_bench.rs
//! --dump` writes these workloads for a side-by-side driver of theirs.

use super::*;

const TITLE: &str = "The HEM suite's dense model, one interface per filter (beyond the paper): processing time vs names per event (20 numeric names, 1-5 range \
    predicates per filter), events with 3-5 (x = 4), 10 or 20 uniform names, or 5-10 Zipf-drawn names (x = 7.5, series `Zipf`), 100k and 1M filters (F=)";
const X: &str = "names per event (of 20; 4: 3 to 5; 7.5: 5 to 10 by Zipf)";
const SAYS: &str =
    "not in the paper: the HEM suite's workloads (Shi & Qian, DASFAA 2022), where HEM5DD beat the hybrid index before it had the bit index among its choices";

/// The experiment, for [`super::experiments`].
pub(super) fn experiment() -> Experiment {
    Experiment {
        paper: Paper::Ccm,
        id: "hem",
        title: TITLE,
        x_label: X,
        y_label: "processing time per event (ms)",
        log_x: false,
        log_y: true,
        higher_is_better: false,
        baseline: Some("index"),
        paper_says: SAYS,
        run,
    }
}

/// The workloads: x, names per event, how they are drawn, the series' tag.
const CASES: [(f64, (usize, usize), NameDist, &str); 4] = [
    (4.0, (3, 5), NameDist::Uniform, ""),
    (10.0, (10, 10), NameDist::Uniform, ""),
    (20.0, (20, 20), NameDist::Uniform, ""),
    (7.5, (5, 10), NameDist::Zipf(1.0), " Zipf"),
];

/// The filter counts: the dense experiments' ([`dense_sizes`]), or at full size those
/// listed in `GPU_MATCH_HEM_SIZES`.
fn sizes(quick: bool) -> anyhow::Result<(Vec<usize>, usize)> {
    let (filters, events) = dense_sizes(quick);
    let Some(v) = std::env::var_os("GPU_MATCH_HEM_SIZES").filter(|_| !quick) else {
        return Ok((filters.to_vec(), events));
    };
    let listed = v
        .to_string_lossy()
        .split(',')
        .map(|n| {
            n.trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .with_context(|| format!("GPU_MATCH_HEM_SIZES: `{n}` is not a filter count"))
        })
        .collect::<anyhow::Result<Vec<usize>>>()?;
    Ok((listed, events))
}

fn run(ctx: &mut Ctx) -> anyhow::Result<()> {
    let mut engines = Engines::of(ctx);
    engines.bits = ctx.wants("bits", EngineKind::Cpu);
    let devices = engines.devices()?;
    let (filters, events) = sizes(ctx.quick)?;
    let steps = STEPS_PER_WORKLOAD + usize::from(engines.bits);
    ctx.set_steps((filters.len() * CASES.len() * ctx.seeds.len() * steps) as u64);
    for &f in &filters {
        for (x, names_per_event, event_names, tag) in CASES {
            let factor = format!("{}{tag}", filters_factor(f));
            let p = DenseParams {
                events,
                filters: f,
                names_per_event,
                event_names,
                ..DenseParams::default()
            };
            for seed in ctx.seeds.clone() {
                ctx.step(&format!(
                    "seed {seed}: generating {f} dense filters, {names_per_event:?} names per event{tag}"
                ));
                let w = generate_dense(&p, seed).context("HEM suite workload parameters")?;
                let label = format!("hem {factor}, x = {x}, seed {seed}");
                let at = At {
                    x,
                    factor: &factor,
                    label: &label,
                };
                measure(ctx, &engines, &devices, &w, &at, true)?;
            }
        }
    }
    Ok(())
}
