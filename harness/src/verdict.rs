//! Reproduced or not: each number a paper states (`results/papers/<paper>.csv`) against the
//! same quantity in our recorded CSV, at the same x and for the same series; then one
//! verdict per experiment. Every number compared comes from those two files.
//!
//! What "the same quantity" is follows the paper row's unit:
//! - `x`, `>= x`, `<= x`: a speedup; series `A vs B` is A's speedup over B (B's time over
//!   A's, or A's throughput over B's), or the recorded series itself when the experiment
//!   records speedups (XML);
//! - `crossover`: the x from which A is faster than B for good; `peak`: the x where A's
//!   speedup over B is highest; `breaking point`: the last x before the series falls below
//!   [`BREAK_FRACTION`] of its value at the smallest x;
//! - `ratio per doubling`: the value at x over the value at x / 2; `ratio`: the value;
//! - any other unit (`ms`, `µs`, `MB`, `MB/s`), with or without `>=` / `<=`: the series'
//!   mean at x.
//!
//! The rules, stated once here and in results/README.md:
//! - a bound (`>=`, `<=`) is reproduced when ours satisfies it, else not;
//! - a speedup, a time or a throughput is *reproduced* when ours is within a factor
//!   [`BAND`] of the paper's, *faster* when ours is better by more than that (a modern GPU
//!   and CPU), *not reproduced* when worse by more than that;
//! - a size (MB) is reproduced within [`BAND`], else not;
//! - a ratio (Table 5, per doubling) is reproduced within [`RATIO_BAND`], faster above it
//!   (throughput or speedup falls less), not reproduced below;
//! - a crossover, peak or breaking point is reproduced when ours is within a factor
//!   [`BAND`] of the paper's x (or the paper's x lies between our two neighbouring
//!   points); a crossover earlier or a breaking point later than that is faster; the other
//!   way not reproduced.
//!
//! An experiment is *not reproduced* when any of its claims is not, *reproduced in shape,
//! faster* when every claim holds and at least one is faster, *reproduced* when every
//! claim is within the band.

use crate::experiment::Experiment;
use crate::plot::{bare_unit, fmt_num};
use crate::results::{PaperRow, Row};

/// Within this factor of the paper's number: reproduced.
pub const BAND: f64 = 2.0;
/// Within this factor of the paper's ratio: reproduced.
pub const RATIO_BAND: f64 = 1.25;
/// A breaking point: the last x whose value is at least this share of the first x's.
pub const BREAK_FRACTION: f64 = 0.8;

/// The outcome of one claim, or of an experiment.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Reproduced,
    /// Reproduced in shape, our number better than the paper's beyond the band.
    Faster,
    /// Not reproduced, with the reason in a few words.
    NotReproduced(String),
    /// Nothing of ours to compare with (series, x or quantity not recorded).
    NotMeasured(String),
}

impl Verdict {
    pub fn words(&self) -> String {
        match self {
            Verdict::Reproduced => "reproduced".into(),
            Verdict::Faster => "reproduced in shape, faster".into(),
            Verdict::NotReproduced(r) => format!("**not reproduced**: {r}"),
            Verdict::NotMeasured(r) => format!("not measured: {r}"),
        }
    }
}

/// One paper number against ours.
#[derive(Clone, Debug)]
pub struct Claim {
    pub paper: PaperRow,
    /// The paper's number in words: `gpu vs sff >= 13x at 250k`.
    pub claimed: String,
    /// Ours in the same words, or why there is none.
    pub measured: String,
    pub verdict: Verdict,
}

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Our mean of `series` at `x`: the recorded series, or for `A vs B` the speedup of A
/// over B.
pub fn measure(exp: &Experiment, rows: &[Row], series: &str, x: f64) -> Option<f64> {
    let mean = |s: &str| {
        rows.iter()
            .find(|r| r.series == s && near(r.x, x))
            .map(|r| r.mean)
    };
    if let Some(v) = mean(series) {
        return Some(v);
    }
    let (a, b) = series.split_once(" vs ")?;
    let (va, vb) = (mean(a.trim())?, mean(b.trim())?);
    let s = if exp.higher_is_better {
        va / vb
    } else {
        vb / va
    };
    s.is_finite().then_some(s)
}

/// The x values where `series` is measured, ascending.
fn xs_of(exp: &Experiment, rows: &[Row], series: &str) -> Vec<(f64, f64)> {
    let mut xs: Vec<f64> = rows.iter().map(|r| r.x).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    xs.into_iter()
        .filter_map(|x| measure(exp, rows, series, x).map(|v| (x, v)))
        .collect()
}

/// How a unit's values compare.
#[derive(Clone, Copy, PartialEq)]
enum Quantity {
    Speedup,
    Time,
    Throughput,
    Size,
    Ratio,
    Other,
}

fn quantity(unit: &str) -> Quantity {
    let u = bare_unit(unit);
    match u {
        "x" => Quantity::Speedup,
        "ratio" | "ratio per doubling" => Quantity::Ratio,
        "ms" | "µs" | "us" | "s" | "ns" => Quantity::Time,
        _ if u.ends_with("/s") => Quantity::Throughput,
        "MB" | "GB" | "kB" | "KB" | "B" => Quantity::Size,
        _ => Quantity::Other,
    }
}

/// Ours, to three significant digits, in the paper row's unit.
fn fmt_val(v: f64, unit: &str) -> String {
    with_unit(&fmt_num(v), unit)
}

/// The paper's number exactly as `results/papers/` states it, in its unit.
fn fmt_paper(v: f64, unit: &str) -> String {
    with_unit(&format!("{v}"), unit)
}

fn with_unit(n: &str, unit: &str) -> String {
    match bare_unit(unit) {
        "x" => format!("{n}x"),
        "ratio" | "ratio per doubling" => n.to_string(),
        u => format!("{n} {u}"),
    }
}

/// "at 250k", or the table row's name.
fn at(exp: &Experiment, x: f64) -> String {
    match crate::plot::categories(exp.x_label)
        .and_then(|c| c.into_iter().find(|(n, _)| near(*n, x)))
    {
        Some((_, name)) => format!("({name})"),
        None => format!("at {}", fmt_num(x)),
    }
}

fn claimed_words(exp: &Experiment, p: &PaperRow) -> String {
    let at = at(exp, p.x);
    match (p.unit.as_str(), p.value) {
        ("crossover", _) => format!("{} crossover {at}", p.series),
        ("peak", _) => format!("{} peaks {at}", p.series),
        ("breaking point", _) => format!("{} breaking point {at}", p.series),
        ("ratio per doubling", Some(v)) => {
            format!("{} x{v} per doubling {at}", p.series)
        }
        (u, Some(v)) => {
            let bound = if u.starts_with(">=") {
                ">= "
            } else if u.starts_with("<=") {
                "<= "
            } else {
                ""
            };
            format!("{} {bound}{} {at}", p.series, fmt_paper(v, u))
        }
        (u, None) => format!("{} {u} {at}", p.series),
    }
}

/// Judges a value against the paper's: `better` is how many times better ours is.
fn judge_band(better: f64, quantity: Quantity, ours: &str, theirs: &str) -> Verdict {
    let band = if quantity == Quantity::Ratio {
        RATIO_BAND
    } else {
        BAND
    };
    if better >= 1.0 / band && better <= band {
        Verdict::Reproduced
    } else if better > band && quantity != Quantity::Size && quantity != Quantity::Other {
        Verdict::Faster
    } else {
        let why = match quantity {
            Quantity::Speedup => format!("{ours} vs the paper's {theirs}"),
            Quantity::Time => format!("{ours}, the paper {theirs}: slower"),
            Quantity::Throughput => format!("{ours}, the paper {theirs}: lower"),
            Quantity::Ratio => format!("{ours} vs the paper's {theirs}"),
            Quantity::Size | Quantity::Other => format!("{ours} vs the paper's {theirs}"),
        };
        Verdict::NotReproduced(why)
    }
}

/// The first x from which `pts` (x, speedup) stay at or above 1: `(lo, hi]` holds it
/// (`lo` 0 when the first point already is), or `None` when the last point is below 1.
fn crossing(pts: &[(f64, f64)]) -> Option<(f64, f64)> {
    let last_below = pts.iter().rposition(|(_, s)| *s < 1.0);
    match last_below {
        None => pts.first().map(|(x, _)| (0.0, *x)),
        Some(i) if i + 1 < pts.len() => Some((pts[i].0, pts[i + 1].0)),
        Some(_) => None,
    }
}

fn judge_x(paper_x: f64, lo: f64, hi: f64, earlier_is_better: bool, what: &str) -> Verdict {
    let inside = paper_x > lo && paper_x <= hi;
    let close = paper_x <= hi * BAND && paper_x * BAND >= lo;
    if inside || close {
        return Verdict::Reproduced;
    }
    let ours_earlier = paper_x > hi;
    if ours_earlier == earlier_is_better {
        Verdict::Faster
    } else {
        Verdict::NotReproduced(format!(
            "{what} {} (the paper {})",
            if lo > 0.0 {
                format!("between {} and {}", fmt_num(lo), fmt_num(hi))
            } else {
                format!("at or before {}", fmt_num(hi))
            },
            fmt_num(paper_x)
        ))
    }
}

/// Evaluates one paper row against our rows.
pub fn claim(exp: &Experiment, rows: &[Row], p: &PaperRow) -> Claim {
    let claimed = claimed_words(exp, p);
    let (measured, verdict) = judge(exp, rows, p);
    Claim {
        paper: p.clone(),
        claimed,
        measured,
        verdict,
    }
}

fn judge(exp: &Experiment, rows: &[Row], p: &PaperRow) -> (String, Verdict) {
    let not = |why: String| (why.clone(), Verdict::NotMeasured(why));
    let pts = xs_of(exp, rows, &p.series);
    if pts.is_empty() {
        return not(format!("no `{}` recorded", p.series));
    }
    let (first, last) = (pts[0].0, pts[pts.len() - 1].0);
    match p.unit.as_str() {
        "crossover" => match crossing(&pts) {
            None => {
                let why = format!(
                    "{} never ahead up to {}",
                    p.series.replace(" vs ", " over "),
                    fmt_num(last)
                );
                (why.clone(), Verdict::NotReproduced(why))
            }
            Some((lo, hi)) => {
                let text = if lo > 0.0 {
                    format!("crossover between {} and {}", fmt_num(lo), fmt_num(hi))
                } else {
                    format!("ahead from the first x, {}", fmt_num(hi))
                };
                (text, judge_x(p.x, lo, hi, true, "crossover"))
            }
        },
        "peak" => {
            let (px, pv) = pts
                .iter()
                .copied()
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap_or((first, 0.0));
            let text = format!("peaks at {} ({}x)", fmt_num(px), fmt_num(pv));
            let v = if near(px, p.x) {
                Verdict::Reproduced
            } else {
                Verdict::NotReproduced(format!(
                    "peak at {}, the paper {}",
                    fmt_num(px),
                    fmt_num(p.x)
                ))
            };
            (text, v)
        }
        "breaking point" => {
            let start = pts[0].1;
            let below = pts.iter().position(|(_, v)| *v < BREAK_FRACTION * start);
            match below {
                None => {
                    let text = format!("no breaking point up to {}", fmt_num(last));
                    let v = if last * BAND >= p.x && last <= p.x * BAND {
                        Verdict::Reproduced
                    } else if last > p.x {
                        Verdict::Faster
                    } else {
                        Verdict::NotMeasured(format!("sweep ends at {}", fmt_num(last)))
                    };
                    (text, v)
                }
                Some(0) => not("falls from the first x".into()),
                Some(i) => {
                    let (lo, hi) = (pts[i - 1].0, pts[i].0);
                    (
                        format!("breaking point at {}", fmt_num(lo)),
                        // A later breaking point (more queries before the GPU is full)
                        // is the better one.
                        judge_x(p.x, lo, hi, false, "breaking point"),
                    )
                }
            }
        }
        "ratio per doubling" => {
            let (Some(v), Some(half)) = (
                measure(exp, rows, &p.series, p.x),
                pts.iter().find(|(x, _)| (x * 2.0 / p.x - 1.0).abs() < 0.03),
            ) else {
                return not(format!(
                    "no `{}` at {} and its half",
                    p.series,
                    fmt_num(p.x)
                ));
            };
            let r = v / half.1;
            let text = format!(
                "x{} from {} to {}",
                fmt_num(r),
                fmt_num(half.0),
                fmt_num(p.x)
            );
            let theirs = p.value.unwrap_or(f64::NAN);
            (
                text,
                judge_band(
                    r / theirs,
                    Quantity::Ratio,
                    &fmt_num(r),
                    &format!("{theirs}"),
                ),
            )
        }
        unit => {
            let Some(theirs) = p.value else {
                return not(format!("unit `{unit}` has no value"));
            };
            let Some(ours) = measure(exp, rows, &p.series, p.x) else {
                return not(format!("no `{}` at {}", p.series, fmt_num(p.x)));
            };
            let q = quantity(unit);
            if q == Quantity::Other && !unit.starts_with(">=") && !unit.starts_with("<=") {
                return not(format!("unit `{unit}` is not recorded"));
            }
            let text = fmt_val(ours, unit);
            if unit.starts_with(">=") || unit.starts_with("<=") {
                let holds = if unit.starts_with(">=") {
                    ours >= theirs
                } else {
                    ours <= theirs
                };
                let word = if unit.starts_with(">=") {
                    "more than"
                } else {
                    "less than"
                };
                let v = if holds {
                    Verdict::Reproduced
                } else {
                    Verdict::NotReproduced(format!(
                        "{text}, the paper: {word} {}",
                        fmt_paper(theirs, unit)
                    ))
                };
                return (text, v);
            }
            let better = match q {
                Quantity::Time => theirs / ours,
                _ => ours / theirs,
            };
            let v = judge_band(better, q, &text, &fmt_paper(theirs, unit));
            (text, v)
        }
    }
}

/// Every paper row of `exp`, evaluated.
pub fn claims(exp: &Experiment, rows: &[Row], paper: &[PaperRow]) -> Vec<Claim> {
    paper
        .iter()
        .filter(|p| p.experiment == exp.id)
        .map(|p| claim(exp, rows, p))
        .collect()
}

/// The experiment's verdict from its claims.
pub fn overall(claims: &[Claim]) -> Verdict {
    let measured: Vec<&Claim> = claims
        .iter()
        .filter(|c| !matches!(c.verdict, Verdict::NotMeasured(_)))
        .collect();
    if measured.is_empty() {
        return Verdict::NotMeasured(if claims.is_empty() {
            "the paper states no number".into()
        } else {
            "none of the paper's numbers is recorded here".into()
        });
    }
    let failed: Vec<&&Claim> = measured
        .iter()
        .filter(|c| matches!(c.verdict, Verdict::NotReproduced(_)))
        .collect();
    if let Some(first) = failed.first() {
        let Verdict::NotReproduced(why) = &first.verdict else {
            unreachable!("filtered")
        };
        let of = if measured.len() > 1 {
            format!(" ({} of {} claims)", failed.len(), measured.len())
        } else {
            String::new()
        };
        return Verdict::NotReproduced(format!("{}: {why}{of}", first.paper.series));
    }
    if measured.iter().any(|c| c.verdict == Verdict::Faster) {
        Verdict::Faster
    } else {
        Verdict::Reproduced
    }
}

/// The claims to show in one table cell: the failed ones first, then speedups, x claims,
/// ratios and values; at most `n`.
pub fn headline(claims: &[Claim], n: usize) -> Vec<&Claim> {
    let rank = |c: &Claim| -> u8 {
        let kind = match bare_unit(&c.paper.unit) {
            "x" => 1,
            "crossover" | "peak" | "breaking point" => 2,
            "ratio" | "ratio per doubling" => 3,
            _ => 4,
        };
        match c.verdict {
            Verdict::NotReproduced(_) => 0,
            Verdict::NotMeasured(_) => 10 + kind,
            _ => kind,
        }
    };
    let mut v: Vec<&Claim> = claims.iter().collect();
    v.sort_by_key(|c| rank(c));
    v.truncate(n);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Experiment, Paper};

    fn exp(higher: bool) -> Experiment {
        Experiment {
            paper: Paper::Ccm,
            id: "t",
            title: "t",
            x_label: "n",
            y_label: "time (ms)",
            log_x: true,
            log_y: true,
            higher_is_better: higher,
            baseline: Some("cpu"),
            paper_says: "",
            run: |_| Ok(()),
        }
    }

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

    fn paper(series: &str, x: f64, value: Option<f64>, unit: &str) -> PaperRow {
        PaperRow {
            experiment: "t".into(),
            series: series.into(),
            x,
            value,
            unit: unit.into(),
            where_: "here".into(),
        }
    }

    fn rows() -> Vec<Row> {
        // cpu time grows 10x per step, gpu stays at 1: speedups 0.1, 1, 10, 100.
        [1.0, 10.0, 100.0, 1000.0]
            .iter()
            .enumerate()
            .flat_map(|(i, x)| {
                [
                    row("cpu", *x, 0.1 * 10f64.powi(i as i32)),
                    row("gpu", *x, 1.0),
                ]
            })
            .collect()
    }

    #[test]
    fn speedups_within_twice_the_papers_are_reproduced_beyond_faster_below_not() {
        let e = exp(false);
        let r = rows();
        let v = |value: f64| claim(&e, &r, &paper("gpu vs cpu", 1000.0, Some(value), "x")).verdict;
        assert_eq!(v(60.0), Verdict::Reproduced);
        assert_eq!(v(20.0), Verdict::Faster);
        assert!(matches!(v(300.0), Verdict::NotReproduced(_)));
    }

    #[test]
    fn times_compare_the_other_way_and_bounds_must_hold() {
        let e = exp(false);
        let r = rows();
        let v = |s: &str, value: f64, unit: &str| {
            claim(&e, &r, &paper(s, 10.0, Some(value), unit)).verdict
        };
        assert_eq!(v("gpu", 1.5, "ms"), Verdict::Reproduced);
        assert_eq!(v("gpu", 10.0, "ms"), Verdict::Faster);
        assert!(matches!(v("gpu", 0.1, "ms"), Verdict::NotReproduced(_)));
        assert_eq!(v("gpu vs cpu", 0.5, ">= x"), Verdict::Reproduced);
        assert!(matches!(
            v("gpu vs cpu", 2.0, ">= x"),
            Verdict::NotReproduced(_)
        ));
        assert_eq!(v("gpu", 2.0, "<= ms"), Verdict::Reproduced);
        assert!(matches!(v("nope", 2.0, "ms"), Verdict::NotMeasured(_)));
    }

    #[test]
    fn crossovers_peaks_and_breaking_points_are_read_from_the_sweep() {
        let e = exp(false);
        let r = rows();
        let c = |x: f64, unit: &str, s: &str| claim(&e, &r, &paper(s, x, None, unit)).verdict;
        // Ours crosses between 1 and 10 (speedup exactly 1 at 10).
        assert_eq!(c(8.0, "crossover", "gpu vs cpu"), Verdict::Reproduced);
        assert_eq!(c(1000.0, "crossover", "gpu vs cpu"), Verdict::Faster);
        assert_eq!(c(1000.0, "peak", "gpu vs cpu"), Verdict::Reproduced);
        assert!(matches!(
            c(10.0, "peak", "gpu vs cpu"),
            Verdict::NotReproduced(_)
        ));
        // The cpu's "throughput" never falls: no breaking point up to 1000.
        let th = exp(true);
        assert_eq!(
            claim(&th, &r, &paper("cpu", 100.0, None, "breaking point")).verdict,
            Verdict::Faster
        );
    }

    #[test]
    fn an_experiment_fails_when_any_claim_fails_and_is_faster_when_one_is() {
        let e = exp(false);
        let r = rows();
        let all = claims(
            &e,
            &r,
            &[
                paper("gpu vs cpu", 1000.0, Some(60.0), "x"),
                paper("gpu vs cpu", 100.0, Some(2.0), "x"),
            ],
        );
        assert_eq!(overall(&all), Verdict::Faster);
        let with_fail = claims(
            &e,
            &r,
            &[
                paper("gpu vs cpu", 1000.0, Some(60.0), "x"),
                paper("gpu vs cpu", 10.0, Some(50.0), "x"),
            ],
        );
        assert!(matches!(overall(&with_fail), Verdict::NotReproduced(w) if w.contains("1 of 2")));
        assert!(matches!(overall(&[]), Verdict::NotMeasured(_)));
    }
}
