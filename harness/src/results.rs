//! Recorded results: one CSV row per (series, x) with mean, min and max over seeds, and
//! the run's metadata. Written by `harness run`, read by `plot`, `report` and `regress`;
//! and the papers' stated numbers (`results/papers/<paper>.csv`).

use crate::experiment::{Experiment, Sample};
use crate::meta::Meta;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One CSV row.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Row {
    pub paper: String,
    pub experiment: String,
    pub series: String,
    pub x: f64,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Number of seeds measured.
    pub n: usize,
    pub unit: String,
    pub device: String,
    pub cpu: String,
    pub cores: usize,
    pub commit: String,
    pub date: String,
    /// `quick` or `full`: the sizes the run used (empty in files recorded before it was
    /// kept).
    #[serde(default)]
    pub sizes: String,
}

impl Row {
    /// The unit of the row's value: a table's `ms / ms / MB / ms` gives the part of its
    /// row number; an axis label the unit in its parentheses (`time per step (ms)`: `ms`).
    pub fn value_unit(&self) -> &str {
        let parts: Vec<&str> = self.unit.split(" / ").map(str::trim).collect();
        let i = self.x as usize;
        let unit = if parts.len() > 1 && self.x.fract() == 0.0 && (1..=parts.len()).contains(&i) {
            parts[i - 1]
        } else {
            self.unit.as_str()
        };
        crate::plot::axis_unit(unit)
    }
}

/// The [`Row::sizes`] of a run at quick sizes.
pub const QUICK: &str = "quick";

/// Mean, min and max over seeds of each (series, x), in the order series first appeared.
pub fn aggregate(exp: &Experiment, samples: &[Sample], meta: &Meta) -> Vec<Row> {
    let mut order: Vec<&str> = Vec::new();
    let mut groups: BTreeMap<(usize, u64), Vec<f64>> = BTreeMap::new();
    for s in samples {
        let si = match order.iter().position(|o| *o == s.series) {
            Some(i) => i,
            None => {
                order.push(&s.series);
                order.len() - 1
            }
        };
        groups.entry((si, s.x.to_bits())).or_default().push(s.value);
    }
    let mut rows: Vec<Row> = groups
        .into_iter()
        .map(|((si, xb), v)| Row {
            paper: exp.paper.name().to_string(),
            experiment: exp.id.to_string(),
            series: order[si].to_string(),
            x: f64::from_bits(xb),
            mean: v.iter().sum::<f64>() / v.len() as f64,
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            n: v.len(),
            unit: exp.y_label.to_string(),
            device: meta.device.clone(),
            cpu: meta.cpu.clone(),
            cores: meta.cores,
            commit: meta.commit.clone(),
            date: meta.date.clone(),
            sizes: String::new(),
        })
        .collect();
    rows.sort_by(|a, b| {
        let sa = order.iter().position(|o| *o == a.series);
        let sb = order.iter().position(|o| *o == b.series);
        sa.cmp(&sb).then(a.x.total_cmp(&b.x))
    });
    rows
}

/// `<out>/<paper>/<id>.csv`
pub fn csv_path(out: &Path, paper: &str, id: &str) -> PathBuf {
    out.join(paper).join(format!("{id}.csv"))
}

pub fn write_csv(path: &Path, rows: &[Row]) -> anyhow::Result<()> {
    write_rows(path, rows)
}

pub fn read_csv(path: &Path) -> anyhow::Result<Vec<Row>> {
    read_rows(path, "a results row")
}

/// Writes `rows` as a CSV file with a header, creating its directory.
fn write_rows<T: Serialize>(path: &Path, rows: &[T]) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("writing {}", path.display()))?;
    for r in rows {
        w.serialize(r)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    w.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Reads a CSV file with a header; a bad row is reported with its line and `what` it
/// should have been.
fn read_rows<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> anyhow::Result<Vec<T>> {
    let mut r =
        csv::Reader::from_path(path).with_context(|| format!("reading {}", path.display()))?;
    let mut rows = Vec::new();
    for (i, row) in r.deserialize().enumerate() {
        rows.push(row.with_context(|| format!("{}: line {}: not {what}", path.display(), i + 2))?);
    }
    Ok(rows)
}

/// One measurement (one seed) of a (series, x) point, as `harness run` records it beside
/// the aggregated CSV (`<id>.samples.csv`): what `regress` estimates noise from.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct SampleRow {
    pub paper: String,
    pub experiment: String,
    pub series: String,
    pub x: f64,
    pub value: f64,
    pub device: String,
}

/// `<out>/<paper>/<id>.samples.csv`
pub fn samples_path(out: &Path, paper: &str, id: &str) -> PathBuf {
    out.join(paper).join(format!("{id}.samples.csv"))
}

/// The per-seed samples of one run of an experiment.
pub fn sample_rows(exp: &Experiment, samples: &[Sample], meta: &Meta) -> Vec<SampleRow> {
    samples
        .iter()
        .map(|s| SampleRow {
            paper: exp.paper.name().to_string(),
            experiment: exp.id.to_string(),
            series: s.series.clone(),
            x: s.x,
            value: s.value,
            device: meta.device.clone(),
        })
        .collect()
}

pub fn write_samples(path: &Path, rows: &[SampleRow]) -> anyhow::Result<()> {
    write_rows(path, rows)
}

pub fn read_samples(path: &Path) -> anyhow::Result<Vec<SampleRow>> {
    read_rows(path, "a sample row")
}

/// One number a paper states (`results/papers/<paper>.csv`): which experiment and series,
/// at which x, the value (none when the claim is an x: a crossover, a peak, a breaking
/// point), its unit (`ms`, `x` for a speedup, `>= x` for "more than", `<= ms` for "less
/// than", `crossover`, `peak`, `breaking point`, `ratio per doubling`, ...) and where in
/// the paper it is stated. A series `A vs B` is A's speedup over B.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PaperRow {
    pub experiment: String,
    pub series: String,
    pub x: f64,
    pub value: Option<f64>,
    pub unit: String,
    #[serde(rename = "where")]
    pub where_: String,
}

/// The paper data shipped with the binary, for runs outside the repository.
const EMBEDDED_PAPERS: [(&str, &str); 4] = [
    ("ccm", include_str!("../../results/papers/ccm.csv")),
    ("clcb", include_str!("../../results/papers/clcb.csv")),
    ("xml", include_str!("../../results/papers/xml.csv")),
    ("ddm", include_str!("../../results/papers/ddm.csv")),
];

/// `<dir>/papers/<paper>.csv`
pub fn papers_path(dir: &Path, paper: &str) -> PathBuf {
    dir.join("papers").join(format!("{paper}.csv"))
}

fn parse_papers(text: &str, origin: &str) -> anyhow::Result<Vec<PaperRow>> {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for (i, row) in r.deserialize().enumerate() {
        rows.push(row.with_context(|| {
            format!(
                "{origin}: line {}: not a paper-data row (experiment,series,x,value,unit,where)",
                i + 2
            )
        })?);
    }
    Ok(rows)
}

/// The paper's stated numbers: `<dir>/papers/<paper>.csv` when it exists, else the copy
/// built into the binary (empty for a paper with none).
pub fn read_papers(dir: &Path, paper: &str) -> anyhow::Result<Vec<PaperRow>> {
    let path = papers_path(dir, paper);
    if path.exists() {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        return parse_papers(&text, &path.display().to_string());
    }
    match EMBEDDED_PAPERS.iter().find(|(p, _)| *p == paper) {
        Some((_, text)) => parse_papers(text, &format!("results/papers/{paper}.csv (built in)")),
        None => Ok(Vec::new()),
    }
}

/// Whether `series` is `baseline` itself or the baseline with a second factor
/// (`index F=1M` for `index`; see [`crate::plot::split_series`]).
pub fn is_baseline(series: &str, baseline: &str) -> bool {
    series == baseline || crate::plot::split_series(series).0 == baseline
}

/// Whether `series` is an emulator run: its engine (see [`crate::plot::split_series`])
/// starts with `emu` (`emu`, `emu batched`, `emu index`, `emu-sweep`, `emu vs yfilter`).
/// The kernels on the host SIMT emulator check answers; their times mean nothing, so they
/// are never turned into speedups.
pub fn is_emulator(series: &str) -> bool {
    crate::plot::split_series(series).0.starts_with("emu")
}

/// The row `series` is compared with at `x`: with a second factor (`gpu F=1M`), the
/// baseline's row of the same factor (`index F=1M`) where one is recorded, else the
/// plain baseline's row.
pub fn baseline_row<'a>(rows: &'a [Row], baseline: &str, series: &str, x: f64) -> Option<&'a Row> {
    let at = |name: &str| {
        rows.iter()
            .find(|r| r.series == name && r.x.to_bits() == x.to_bits())
    };
    let factor = crate::plot::split_series(series).1;
    if !factor.is_empty() {
        if let Some(r) = at(&format!("{baseline} {factor}")) {
            return Some(r);
        }
    }
    at(baseline)
}

/// Speedup of each series over `baseline` at each x where both exist (a series with a
/// second factor over the baseline with the same factor, where there is one: see
/// [`baseline_row`]). Emulator series ([`is_emulator`]) have none.
pub fn speedups(rows: &[Row], baseline: &str, higher_is_better: bool) -> Vec<(String, f64, f64)> {
    rows.iter()
        .filter(|r| !is_baseline(&r.series, baseline) && !is_emulator(&r.series))
        .filter_map(|r| {
            let b = baseline_row(rows, baseline, &r.series, r.x)?.mean;
            let s = if higher_is_better {
                r.mean / b
            } else {
                b / r.mean
            };
            (s.is_finite() && s > 0.0).then(|| (r.series.clone(), r.x, s))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Experiment, Paper};

    fn exp() -> Experiment {
        Experiment {
            paper: Paper::Ddm,
            id: "t",
            title: "t",
            x_label: "x",
            y_label: "ms",
            log_x: false,
            log_y: false,
            higher_is_better: false,
            baseline: Some("cpu"),
            paper_says: "",
            run: |_| Ok(()),
        }
    }

    fn meta() -> Meta {
        Meta {
            device: "d".into(),
            cpu: "c".into(),
            cores: 2,
            commit: "x".into(),
            date: "2026-01-01".into(),
        }
    }

    #[test]
    fn aggregate_gives_mean_min_max_per_series_and_x_in_first_seen_order() {
        let s = |series: &str, x: f64, value: f64| Sample {
            series: series.into(),
            x,
            value,
        };
        let samples = [
            s("gpu", 2.0, 1.0),
            s("cpu", 1.0, 10.0),
            s("gpu", 2.0, 3.0),
            s("gpu", 1.0, 5.0),
        ];
        let rows = aggregate(&exp(), &samples, &meta());
        let got: Vec<_> = rows
            .iter()
            .map(|r| (r.series.as_str(), r.x, r.mean, r.min, r.max, r.n))
            .collect();
        assert_eq!(
            got,
            [
                ("gpu", 1.0, 5.0, 5.0, 5.0, 1),
                ("gpu", 2.0, 2.0, 1.0, 3.0, 2),
                ("cpu", 1.0, 10.0, 10.0, 10.0, 1)
            ]
        );
    }

    #[test]
    fn emulator_series_have_no_speedup() {
        for s in [
            "emu",
            "emu batched",
            "emu index",
            "emu-sweep",
            "emu vs yfilter",
            "emu L=5",
        ] {
            assert!(is_emulator(s), "{s}");
        }
        for s in [
            "gpu",
            "gpu index",
            "sff",
            "index all cores",
            "best CPU (all cores)",
        ] {
            assert!(!is_emulator(s), "{s}");
        }
        let samples: Vec<Sample> = [
            ("cpu", 10.0),
            ("gpu", 2.0),
            ("emu", 500.0),
            ("emu-sweep", 0.1),
        ]
        .into_iter()
        .map(|(s, v)| Sample {
            series: s.into(),
            x: 1.0,
            value: v,
        })
        .collect();
        let rows = aggregate(&exp(), &samples, &meta());
        assert_eq!(
            speedups(&rows, "cpu", false),
            [("gpu".to_string(), 1.0, 5.0)]
        );
        let pts = crate::plot::speedup_points(&rows, "cpu", false);
        assert_eq!(pts.len(), 1);
        assert_eq!(pts[0].0, "gpu");
    }

    #[test]
    fn csv_round_trips_rows_and_speedups_divide_baseline_by_series_for_times() {
        let samples = [
            Sample {
                series: "gpu".into(),
                x: 1.0,
                value: 2.0,
            },
            Sample {
                series: "cpu".into(),
                x: 1.0,
                value: 10.0,
            },
        ];
        let rows = aggregate(&exp(), &samples, &meta());
        let dir = std::env::temp_dir().join(format!("harness-csv-{}", std::process::id()));
        let p = csv_path(&dir, "ddm", "t");
        write_csv(&p, &rows).unwrap();
        assert_eq!(read_csv(&p).unwrap(), rows);
        assert_eq!(
            speedups(&rows, "cpu", false),
            [("gpu".to_string(), 1.0, 5.0)]
        );
        assert_eq!(
            speedups(&rows, "cpu", true),
            [("gpu".to_string(), 1.0, 0.2)]
        );
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn a_csv_recorded_before_the_sizes_column_reads_with_the_sizes_unknown() {
        let dir = std::env::temp_dir().join(format!("harness-old-csv-{}", std::process::id()));
        let p = csv_path(&dir, "ccm", "fig5");
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(
            &p,
            "paper,experiment,series,x,mean,min,max,n,unit,device,cpu,cores,commit,date\n\
             ccm,fig5,gpu kernel,1.0,0.1,0.09,0.11,3,ms,NVIDIA H100,Xeon,16,abc,2026-11-23\n",
        )
        .unwrap();
        let rows = read_csv(&p).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].series.as_str(), rows[0].sizes.as_str()),
            ("gpu kernel", "")
        );
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn a_series_with_a_second_factor_is_compared_with_the_baseline_of_that_factor() {
        let row = |series: &str, mean: f64| Row {
            series: series.into(),
            x: 4.0,
            mean,
            ..Row::default()
        };
        let rows = [
            row("cpu F=1k", 10.0),
            row("cpu F=1M", 1000.0),
            row("gpu F=1k", 5.0),
            row("gpu F=1M", 10.0),
        ];
        assert_eq!(
            speedups(&rows, "cpu", false),
            [
                ("gpu F=1k".to_string(), 4.0, 2.0),
                ("gpu F=1M".to_string(), 4.0, 100.0)
            ]
        );
        // Without a baseline of its factor, a series is compared with the plain one.
        let rows = [row("cpu", 10.0), row("gpu L=5", 5.0)];
        assert_eq!(
            speedups(&rows, "cpu", false),
            [("gpu L=5".to_string(), 4.0, 2.0)]
        );
    }
}
