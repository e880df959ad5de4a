//! The speed and memory targets of the issues, as data: `harness report` checks each one
//! against the recorded CSVs and prints a "Targets" table (met, missed, or not recorded).
//! A target names the experiment, the series and the x value it is read from, so the
//! number quoted is exactly one of the recorded points, never a hand-copied value.

use crate::results::Row;

/// What a target asks of the recorded mean at (series, x).
#[derive(Clone, Copy, Debug)]
pub enum Check {
    /// The value (in the experiment's unit) must not exceed this.
    AtMost(f64),
    /// The value must reach at least this.
    AtLeast(f64),
    /// The series must be at least `factor` times faster than `over` at the same x
    /// (for times: over / series; for throughputs: series / over).
    SpeedupOver { over: &'static str, factor: f64 },
}

/// One target of one issue.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    pub issue: u32,
    /// The target as the issue states it.
    pub what: &'static str,
    pub paper: &'static str,
    pub experiment: &'static str,
    pub series: &'static str,
    pub x: f64,
    pub check: Check,
}

const fn t(
    issue: u32,
    what: &'static str,
    (paper, experiment): (&'static str, &'static str),
    series: &'static str,
    x: f64,
    check: Check,
) -> Target {
    Target {
        issue,
        what,
        paper,
        experiment,
        series,
        x,
        check,
    }
}

const fn over(over: &'static str, factor: f64) -> Check {
    Check::SpeedupOver { over, factor }
}

/// Every target of issues 5 to 8, each with the engine that is meant to meet it (and, where
/// the paper-faithful engine differs, that engine too, so a reader sees both).
#[rustfmt::skip]
pub const TARGETS: &[Target] = &[
    // Issue 5, CCM: Table 2 rows are x = 1 (ms per event) and x = 3 (MB).
    t(5, "default scenario: at most 15 µs per event end to end", ("ccm", "table2"), "gpu latency", 1.0, Check::AtMost(0.015)),
    t(5, "default scenario, paper-faithful path: at most 15 µs per event", ("ccm", "table2"), "gpu", 1.0, Check::AtMost(0.015)),
    t(5, "at least 100x the single-threaded SFF baseline, per event", ("ccm", "table2"), "gpu latency", 1.0, over("sff", 100.0)),
    t(5, "batched: at least 1,000,000 events/s (at most 1 µs per event)", ("ccm", "table2"), "gpu batched", 1.0, Check::AtMost(0.001)),
    t(5, "batched: at least 10x SFF on all host cores", ("ccm", "table2"), "gpu batched", 1.0, over("sff all cores", 10.0)),
    t(5, "GPU memory within 2x of the paper's 33.9 MB", ("ccm", "table2"), "gpu", 3.0, Check::AtMost(67.8)),
    t(5, "GPU memory within 2x of 33.9 MB, batched engine", ("ccm", "table2"), "gpu batched", 3.0, Check::AtMost(67.8)),
    // Issue 6, CLCB: Table 2 x = 2 is ms per event with location, x = 3 ms per update.
    t(6, "default scenario: at most 30 µs per event end to end (paper's Loc/Cont/Zip)", ("clcb", "table2"), "gpu", 2.0, Check::AtMost(0.030)),
    t(6, "default scenario: at most 30 µs per event (GPU spatial grid)", ("clcb", "table2"), "gpu grid", 2.0, Check::AtMost(0.030)),
    t(6, "batched: at most 2 µs per event", ("clcb", "table2"), "gpu batched", 2.0, Check::AtMost(0.002)),
    t(6, "default scenario: at most 30 µs per event (low-latency path, every filter)", ("clcb", "table2"), "gpu latency", 2.0, Check::AtMost(0.030)),
    t(6, "default scenario: at most 30 µs per event (low-latency path over the grid)", ("clcb", "table2"), "gpu grid latency", 2.0, Check::AtMost(0.030)),
    t(6, "batched: at most 2 µs per event (grid candidates)", ("clcb", "table2"), "gpu grid batched", 2.0, Check::AtMost(0.002)),
    t(6, "one area update: at most 3 µs", ("clcb", "table2"), "gpu", 3.0, Check::AtMost(0.003)),
    t(6, "one area update: at most 3 µs (two copies, no kernel)", ("clcb", "table2"), "gpu copies", 3.0, Check::AtMost(0.003)),
    t(6, "one area update: at most 3 µs (low-latency mode: one 16-byte copy)", ("clcb", "table2"), "gpu latency", 3.0, Check::AtMost(0.003)),
    t(6, "batched updates: at least 10M per second (at most 0.1 µs each), 1M subscriptions", ("clcb", "fig5a"), "gpu batched", 1e6, Check::AtMost(0.1)),
    t(6, "at least 100x rstar at 1M subscriptions, 1 % coverage, uniform", ("clcb", "fig3d"), "gpu batched", 1e6, over("rtree", 100.0)),
    t(6, "at least 100x rstar at 1M subscriptions, 1 % coverage, uniform (per event)", ("clcb", "fig3d"), "gpu grid", 1e6, over("rtree", 100.0)),
    t(6, "at least 100x rstar at 1M subscriptions, 1 % coverage, uniform (batched over the grid)", ("clcb", "fig3d"), "gpu grid batched", 1e6, over("rtree", 100.0)),
    t(6, "at least 100x rstar at 1M subscriptions, 1 % coverage, Zipf", ("clcb", "fig4d"), "gpu batched", 1e6, over("rtree", 100.0)),
    t(6, "at least 100x rstar at 1M subscriptions, 1 % coverage, Zipf (batched over the grid)", ("clcb", "fig4d"), "gpu grid batched", 1e6, over("rtree", 100.0)),
    t(6, "at least 100x rstar at 1M subscriptions, 1 % coverage, Zipf (per event)", ("clcb", "fig4d"), "gpu grid", 1e6, over("rtree", 100.0)),
    // Issue 7, XML: Fig. 7 is MB/s (higher is better) over one 1 MB document.
    t(7, "at least 10x the single-threaded NFA, 256 queries of 10 nodes, 1 MB document", ("xml", "fig7"), "gpu L=10", 256.0, over("yfilter L=10", 10.0)),
    t(7, "moonshot: toward 50x the NFA on one document (segmented engine)", ("xml", "fig7"), "gpu-seg L=10", 256.0, over("yfilter L=10", 50.0)),
    t(7, "at least 5x the NFA on all host cores, 1000 documents of 25 kB, 1000 queries", ("xml", "fig10b"), "gpu vs yfilter-mc", 1000.0, Check::AtLeast(5.0)),
    // Issue 8, DDM: times per step (ms) at 32768 regions; counting time at 1M regions.
    t(8, "at least 200x single-threaded brute force at 32768 regions, RS 10 (paper's REGION)", ("ddm", "fig5_7"), "gpu-region", 32768.0, over("brute", 200.0)),
    t(8, "at least 200x single-threaded brute force at 32768 regions, RS 10 (GRID)", ("ddm", "fig5_7"), "gpu-grid", 32768.0, over("brute", 200.0)),
    t(8, "at least 200x single-threaded brute force at 32768 regions, RS 10 (REGION, sliced Phase 3)", ("ddm", "fig5_7"), "gpu-region-sliced", 32768.0, over("brute", 200.0)),
    t(8, "at least 200x single-threaded brute force at 32768 regions, RS 100 (paper's REGION)", ("ddm", "fig6_8"), "gpu-region", 32768.0, over("brute", 200.0)),
    t(8, "at least 200x single-threaded brute force at 32768 regions, RS 100 (GRID)", ("ddm", "fig6_8"), "gpu-grid", 32768.0, over("brute", 200.0)),
    t(8, "at least 200x single-threaded brute force at 32768 regions, RS 100 (REGION, sliced Phase 3)", ("ddm", "fig6_8"), "gpu-region-sliced", 32768.0, over("brute", 200.0)),
    t(8, "at least 20x the single-threaded sort baseline at 32768 regions, RS 10", ("ddm", "fig5_7"), "gpu-grid", 32768.0, over("sort", 20.0)),
    t(8, "at least 20x the single-threaded sort baseline at 32768 regions, RS 100", ("ddm", "fig6_8"), "gpu-grid", 32768.0, over("sort", 20.0)),
    t(8, "at least 10x sort on all host cores at 1M regions, counting, alpha 1 (regions on the device)", ("ddm", "scaleup_a1"), "gpu-sweep", 1048576.0, over("sort-par", 10.0)),
    t(8, "the same, counting the upload of the regions", ("ddm", "scaleup_a1"), "gpu-sweep+upload", 1048576.0, over("sort-par", 10.0)),
    t(8, "at least 10x sort on all host cores at 1M regions, counting, alpha 100 (regions on the device)", ("ddm", "scaleup_a100"), "gpu-sweep", 1048576.0, over("sort-par", 10.0)),
    t(8, "the same, counting the upload of the regions", ("ddm", "scaleup_a100"), "gpu-sweep+upload", 1048576.0, over("sort-par", 10.0)),
];

/// The outcome of one target on the recorded rows of its experiment.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The measured value (a speedup for [`Check::SpeedupOver`]) and whether it holds.
    Measured { value: f64, met: bool },
    /// The experiment, series or x value is not in the recorded CSV.
    NotRecorded,
}

fn mean(rows: &[Row], series: &str, x: f64) -> Option<f64> {
    rows.iter()
        .find(|r| r.series == series && (r.x - x).abs() <= 1e-9 * x.abs().max(1.0))
        .map(|r| r.mean)
}

impl Target {
    /// Evaluates the target on `rows`, the recorded rows of its experiment.
    pub fn evaluate(&self, rows: &[Row], higher_is_better: bool) -> Outcome {
        let Some(v) = mean(rows, self.series, self.x) else {
            return Outcome::NotRecorded;
        };
        match self.check {
            Check::AtMost(limit) => Outcome::Measured {
                value: v,
                met: v <= limit,
            },
            Check::AtLeast(limit) => Outcome::Measured {
                value: v,
                met: v >= limit,
            },
            Check::SpeedupOver { over, factor } => {
                let Some(b) = mean(rows, over, self.x) else {
                    return Outcome::NotRecorded;
                };
                let s = if higher_is_better { v / b } else { b / v };
                Outcome::Measured {
                    value: s,
                    met: s >= factor,
                }
            }
        }
    }

    /// The threshold in words: "<= 0.015", ">= 100x sff".
    pub fn threshold(&self) -> String {
        match self.check {
            Check::AtMost(l) => format!("<= {l}"),
            Check::AtLeast(l) => format!(">= {l}"),
            Check::SpeedupOver { over, factor } => format!(">= {factor}x {over}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(series: &str, x: f64, mean: f64) -> Row {
        Row {
            series: series.into(),
            x,
            mean,
            min: mean,
            max: mean,
            n: 1,
            ..Row::default()
        }
    }

    #[test]
    fn speedup_targets_divide_the_right_way_for_times_and_throughputs() {
        let rows = [row("gpu", 1.0, 2.0), row("cpu", 1.0, 300.0)];
        let tg = t(0, "", ("p", "e"), "gpu", 1.0, over("cpu", 100.0));
        assert_eq!(
            tg.evaluate(&rows, false),
            Outcome::Measured {
                value: 150.0,
                met: true
            }
        );
        let Outcome::Measured { value, met } = tg.evaluate(&rows, true) else {
            panic!("recorded")
        };
        assert!((value - 2.0 / 300.0).abs() < 1e-12 && !met);
    }

    #[test]
    fn limits_and_missing_points_are_reported_as_such() {
        let rows = [row("gpu", 1.0, 0.02)];
        let at_most = t(0, "", ("p", "e"), "gpu", 1.0, Check::AtMost(0.015));
        assert_eq!(
            at_most.evaluate(&rows, false),
            Outcome::Measured {
                value: 0.02,
                met: false
            }
        );
        let elsewhere = t(0, "", ("p", "e"), "gpu", 2.0, Check::AtMost(1.0));
        assert_eq!(elsewhere.evaluate(&rows, false), Outcome::NotRecorded);
        let no_base = t(0, "", ("p", "e"), "gpu", 1.0, over("cpu", 1.0));
        assert_eq!(no_base.evaluate(&rows, false), Outcome::NotRecorded);
    }

    #[test]
    fn every_target_names_an_existing_experiment() {
        let exps = crate::runner::all_experiments();
        for tg in TARGETS {
            assert!(
                exps.iter()
                    .any(|e| e.paper.name() == tg.paper && e.id == tg.experiment),
                "{}/{}",
                tg.paper,
                tg.experiment
            );
        }
    }
}
