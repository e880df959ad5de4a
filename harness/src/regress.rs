//! `harness regress`: reruns experiments and says which points moved, in criterion's
//! spirit: several samples per point (one per seed), a noise estimate from them, and a
//! change reported only when it is both significant at the stated confidence and larger
//! than the noise threshold.
//!
//! For each (experiment, series, x) recorded on the same device model in the baseline:
//! the statistic is the throughput ratio now / then (the ratio of means, inverted for
//! times, so > 1 is faster). Its confidence interval comes from a bootstrap: both sides'
//! per-seed samples resampled with replacement [`RESAMPLES`] times (a baseline recorded
//! before samples were kept contributes its mean alone, so the noise is this run's). A
//! point moved when the interval excludes 1 and the ratio is more than the noise threshold
//! away from 1; it is then *faster* or *slower*, else *within noise*. The run fails when any
//! point is slower.
//!
//! Seeds in one process do not see every noise: on the H100 a second process running the
//! same binary minutes later measured quick-size GPU points 5-35% apart (clocks, the host's
//! page and pinned-memory state, launch latency), far beyond the seeds' spread. So a
//! baseline may hold a second recording, [`RERUN_DIR`], made by another process of the same
//! binary right after the first; an experiment's *drift* is then the largest change of any
//! of its compared points between the two, and a point moves only when its change is beyond
//! [`DRIFT_MARGIN`] times its experiment's drift (and beyond the noise threshold). What
//! this buys and costs: on quick sizes a rerun of the same binary stays quiet, and only
//! slowdowns beyond that margin are caught (a co-tenant on the GPU is, at 2-60x); finer
//! guarding needs `--size full`, whose drift is smaller.
//!
//! A comparison of nothing is a failure, not a pass: when no point of this run has a
//! recorded twin (no baseline CSV, another device model, no GPU here), the table says why
//! per experiment and the command exits non-zero unless `--allow-empty` is given.

use crate::experiment::Experiment;
use crate::plot::fmt_num;
use crate::results::{self, Row, SampleRow};
use crate::runner::{self, RunOpts};

/// Bootstrap resamples per point.
pub const RESAMPLES: usize = 2000;

/// The subdirectory of a baseline holding a second recording of the same binary by another
/// process, from which each series' run-to-run drift is read.
pub const RERUN_DIR: &str = "rerun";

/// A point moves only when its change is beyond this many times its series' drift.
pub const DRIFT_MARGIN: f64 = 1.5;

/// What `regress` compares and how strictly.
#[derive(Clone, Debug)]
pub struct Opts {
    pub baseline: std::path::PathBuf,
    /// Two-sided confidence of the interval (0.95).
    pub confidence: f64,
    /// Changes smaller than this fraction are noise, however significant (0.02).
    pub noise_threshold: f64,
    /// Every series, CPU ones too (noisy on shared machines); else `gpu*` only.
    pub all_series: bool,
    /// A run that compared no point passes (else it fails: a check of nothing).
    pub allow_empty: bool,
}

/// How one point moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moved {
    Faster,
    Slower,
    WithinNoise,
    /// Fewer than two samples this run: no noise estimate.
    TooFewSamples,
}

/// One compared point.
#[derive(Clone, Debug)]
pub struct Change {
    /// Throughput now / then (> 1: faster).
    pub ratio: f64,
    /// The bootstrap confidence interval of `ratio`.
    pub lo: f64,
    pub hi: f64,
    pub moved: Moved,
}

/// The baseline side of a comparison.
pub enum Then<'a> {
    Samples(&'a [f64]),
    /// A baseline recorded before per-seed samples were kept.
    Mean(f64),
}

/// splitmix64: a small deterministic generator, so that a rerun gives the same interval.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn resampled_mean(&mut self, v: &[f64]) -> f64 {
        let n = v.len();
        (0..n)
            .map(|_| v[(self.next() % n as u64) as usize])
            .sum::<f64>()
            / n as f64
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Compares this run's samples with the baseline's (see the module doc).
pub fn compare(
    then: Then<'_>,
    now: &[f64],
    higher_is_better: bool,
    confidence: f64,
    noise_threshold: f64,
    seed: u64,
) -> Change {
    let ratio_of = |then: f64, now: f64| {
        if higher_is_better {
            now / then
        } else {
            then / now
        }
    };
    let then_mean = match then {
        Then::Samples(s) => mean(s),
        Then::Mean(m) => m,
    };
    let ratio = ratio_of(then_mean, mean(now));
    if now.len() < 2 {
        return Change {
            ratio,
            lo: ratio,
            hi: ratio,
            moved: Moved::TooFewSamples,
        };
    }
    let mut rng = Rng(seed);
    let mut boot: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let t = match then {
                Then::Samples(s) => rng.resampled_mean(s),
                Then::Mean(m) => m,
            };
            ratio_of(t, rng.resampled_mean(now))
        })
        .filter(|r| r.is_finite())
        .collect();
    boot.sort_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    let at = |q: f64| boot[((q * (boot.len() - 1) as f64).round() as usize).min(boot.len() - 1)];
    let (lo, hi) = if boot.is_empty() {
        (ratio, ratio)
    } else {
        (at(tail), at(1.0 - tail))
    };
    let significant = lo > 1.0 || hi < 1.0;
    let moved = if significant && ratio > 1.0 + noise_threshold {
        Moved::Faster
    } else if significant && ratio < 1.0 - noise_threshold {
        Moved::Slower
    } else {
        Moved::WithinNoise
    };
    Change {
        ratio,
        lo,
        hi,
        moved,
    }
}

fn seed_of(parts: &[&str], x: f64) -> u64 {
    parts
        .iter()
        .flat_map(|p| p.bytes())
        .chain(x.to_bits().to_le_bytes())
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// One line of the report.
struct Line {
    what: String,
    then: f64,
    now: f64,
    unit: String,
    change: Change,
    /// The threshold this point was held to (the noise threshold, or its experiment's drift).
    threshold: f64,
}

/// An experiment's run-to-run drift: the largest relative change of a mean between the
/// baseline (`old`) and the rerun of the same binary (`rerun`), over the points of the
/// compared series (`compared`) of one device present in both, as a throughput ratio's
/// distance from 1 either way. Taken over the whole experiment, not per series: its points
/// share one process and its noise, and one rerun's per-series change underestimates it
/// (the H100's quick-size points drifted 8-90% per experiment, median 5-25%).
fn drift(
    old: &[Row],
    rerun: &[Row],
    device: &str,
    compared: impl Fn(&str) -> bool,
    higher_is_better: bool,
) -> f64 {
    old.iter()
        .filter(|o| o.device == device && compared(&o.series))
        .filter_map(|o| {
            let r = rerun
                .iter()
                .find(|r| r.device == device && r.series == o.series && r.x == o.x)?;
            let ratio = if higher_is_better {
                r.mean / o.mean
            } else {
                o.mean / r.mean
            };
            (ratio.is_finite() && ratio > 0.0).then(|| (ratio - 1.0).abs().max(1.0 / ratio - 1.0))
        })
        .fold(0.0, f64::max)
}

/// What one experiment's comparison came to: how many points, or why none.
#[derive(Clone, Debug, PartialEq)]
struct Account {
    /// `ccm/table2`.
    experiment: String,
    compared: usize,
    slower: usize,
    faster: usize,
    /// Why nothing was compared (empty when something was).
    why_none: String,
}

/// Why an experiment compared no point: the first of no baseline CSV, no rows this run,
/// no compared series this run, no baseline row on this run's device model, no common
/// (series, x).
fn why_none(old: Option<&[Row]>, new: &[&Row], all_series: bool, all_new: &[&Row]) -> String {
    let Some(old) = old else {
        return "no recording in the baseline".into();
    };
    if all_new.is_empty() {
        return "this run recorded nothing (failed, or no engine ran)".into();
    }
    if new.is_empty() && !all_series {
        return "this run has no GPU series (--all-series compares the CPU ones too)".into();
    }
    let devices = |rows: &mut dyn Iterator<Item = &Row>| {
        let mut d: Vec<String> = rows.map(|r| r.device.clone()).collect();
        d.sort();
        d.dedup();
        d.join(", ")
    };
    let here = devices(&mut new.iter().copied());
    if !old.iter().any(|o| new.iter().any(|n| n.device == o.device)) {
        return format!(
            "baseline recorded on {}, this run on {here}",
            devices(&mut old.iter())
        );
    }
    "no (series, x) of this run in the baseline".into()
}

/// Compares a fresh run (`rows`, `samples`) with the baseline directory. Returns every
/// compared point, and per experiment how many (or why none).
fn compare_all(
    exps: &[&Experiment],
    rows: &[Row],
    samples: &[SampleRow],
    opts: &Opts,
) -> anyhow::Result<(Vec<Line>, Vec<Account>)> {
    let mut out = Vec::new();
    let mut accounts = Vec::new();
    for exp in exps {
        let first = out.len();
        let of_exp: Vec<&Row> = rows
            .iter()
            .filter(|r| r.paper == exp.paper.name() && r.experiment == exp.id)
            .collect();
        let compared_rows: Vec<&Row> = of_exp
            .iter()
            .copied()
            .filter(|r| opts.all_series || r.series.starts_with("gpu"))
            .collect();
        let mut account = Account {
            experiment: format!("{}/{}", exp.paper.name(), exp.id),
            compared: 0,
            slower: 0,
            faster: 0,
            why_none: String::new(),
        };
        let path = results::csv_path(&opts.baseline, exp.paper.name(), exp.id);
        if !path.exists() {
            account.why_none = why_none(None, &compared_rows, opts.all_series, &of_exp);
            accounts.push(account);
            continue;
        }
        let old = results::read_csv(&path)?;
        let rerun_path =
            results::csv_path(&opts.baseline.join(RERUN_DIR), exp.paper.name(), exp.id);
        let rerun = if rerun_path.exists() {
            results::read_csv(&rerun_path)?
        } else {
            Vec::new()
        };
        let spath = results::samples_path(&opts.baseline, exp.paper.name(), exp.id);
        let old_samples = if spath.exists() {
            results::read_samples(&spath)?
        } else {
            Vec::new()
        };
        for new in compared_rows.iter().copied() {
            let Some(rec) = old
                .iter()
                .find(|o| o.device == new.device && o.series == new.series && o.x == new.x)
            else {
                continue;
            };
            let pick = |s: &[SampleRow]| -> Vec<f64> {
                s.iter()
                    .filter(|s| {
                        s.paper == new.paper
                            && s.experiment == new.experiment
                            && s.series == new.series
                            && s.x == new.x
                            && s.device == new.device
                    })
                    .map(|s| s.value)
                    .collect()
            };
            let now = pick(samples);
            let then = pick(&old_samples);
            let then = if then.len() >= 2 {
                Then::Samples(&then)
            } else {
                Then::Mean(rec.mean)
            };
            let threshold = opts.noise_threshold.max(
                DRIFT_MARGIN
                    * drift(
                        &old,
                        &rerun,
                        &new.device,
                        |s| opts.all_series || s.starts_with("gpu"),
                        exp.higher_is_better,
                    ),
            );
            let change = compare(
                then,
                &now,
                exp.higher_is_better,
                opts.confidence,
                threshold,
                seed_of(&[&new.paper, &new.experiment, &new.series], new.x),
            );
            out.push(Line {
                what: format!(
                    "{}/{} | {} | {}",
                    new.paper,
                    new.experiment,
                    new.series,
                    fmt_num(new.x)
                ),
                then: rec.mean,
                now: new.mean,
                unit: new.unit.clone(),
                change,
                threshold,
            });
        }
        let mine = &out[first..];
        account.compared = mine.len();
        account.slower = mine
            .iter()
            .filter(|l| l.change.moved == Moved::Slower)
            .count();
        account.faster = mine
            .iter()
            .filter(|l| l.change.moved == Moved::Faster)
            .count();
        if mine.is_empty() {
            account.why_none = why_none(Some(&old), &compared_rows, opts.all_series, &of_exp);
        }
        accounts.push(account);
    }
    Ok((out, accounts))
}

/// The table of what each experiment compared (markdown, for standard output): points,
/// slower, faster, or why nothing.
fn account_lines(accounts: &[Account]) -> Vec<String> {
    let mut lines = vec![
        "| experiment | points compared | slower | faster | note |".to_string(),
        "| --- | ---: | ---: | ---: | --- |".to_string(),
    ];
    for a in accounts {
        lines.push(format!(
            "| {} | {} | {} | {} | {} |",
            a.experiment,
            a.compared,
            a.slower,
            a.faster,
            if a.compared == 0 {
                format!("nothing compared: {}", a.why_none)
            } else {
                String::new()
            }
        ));
    }
    lines
}

fn pct(r: f64) -> String {
    format!("{:+.1}%", (r - 1.0) * 100.0)
}

/// Runs `exps` with `run` and compares them with the baseline; prints the table of what
/// moved; fails when a point got slower.
pub fn regress(exps: &[&Experiment], run: &RunOpts, opts: &Opts) -> anyhow::Result<()> {
    println!(
        "regress: {} sizes{}, {} sample(s) (seeds) per point, {:.0}% confidence, changes \
         under {:.1}% are noise; baseline {}",
        if run.quick { "quick" } else { "full" },
        if run.quick {
            " (the default; --size full for the papers' sizes)"
        } else {
            ""
        },
        run.seeds,
        opts.confidence * 100.0,
        opts.noise_threshold * 100.0,
        opts.baseline.display()
    );
    if opts.baseline.join(RERUN_DIR).is_dir() {
        println!(
            "regress: each experiment's points also held to {DRIFT_MARGIN} times its largest \
             change between the baseline and {} (the same binary, another process)",
            opts.baseline.join(RERUN_DIR).display()
        );
    } else {
        println!(
            "regress: {} has no {RERUN_DIR}/ recording: no run-to-run drift known, only the \
             seeds' noise (expect false alarms between processes)",
            opts.baseline.display()
        );
    }
    let (rows, samples) = runner::run_with_samples(exps, run)?;
    let (lines, accounts) = compare_all(exps, &rows, &samples, opts)?;
    println!("\nregress: this run's files are in {}", run.out.display());
    println!("\ncompared with {}:", opts.baseline.display());
    for l in account_lines(&accounts) {
        println!("{l}");
    }
    if lines.is_empty() {
        println!(
            "\nNOTHING COMPARED: {} holds no recorded point of these experiments that this run \
             measured on the same device model{}",
            opts.baseline.display(),
            if opts.allow_empty {
                " (--allow-empty: not a failure)"
            } else {
                ""
            }
        );
        anyhow::ensure!(
            opts.allow_empty,
            "regress compared nothing with {} (see the table above); pass --allow-empty to \
             accept a run that checks nothing",
            opts.baseline.display()
        );
        return Ok(());
    }
    let count = |m: Moved| lines.iter().filter(|l| l.change.moved == m).count();
    let (slower, faster) = (count(Moved::Slower), count(Moved::Faster));
    let moved: Vec<&Line> = lines
        .iter()
        .filter(|l| matches!(l.change.moved, Moved::Slower | Moved::Faster))
        .collect();
    if moved.is_empty() {
        println!("nothing moved beyond noise");
    } else {
        println!(
            "\n| experiment | series | x | then | now | unit | throughput change | {:.0}% interval | threshold | moved |",
            opts.confidence * 100.0
        );
        println!("| --- | --- | ---: | ---: | ---: | --- | ---: | --- | ---: | --- |");
        for l in &moved {
            println!(
                "| {} | {} | {} | {} | {} | {} to {} | +-{:.1}% | {} |",
                l.what,
                crate::plot::sig(l.then, 4),
                crate::plot::sig(l.now, 4),
                l.unit,
                pct(l.change.ratio),
                pct(l.change.lo),
                pct(l.change.hi),
                l.threshold * 100.0,
                if l.change.moved == Moved::Slower {
                    "**slower**"
                } else {
                    "faster"
                }
            );
        }
    }
    let noisy: Vec<f64> = lines
        .iter()
        .filter(|l| l.change.moved != Moved::TooFewSamples)
        .map(|l| (l.change.hi - l.change.lo) / 2.0 / l.change.ratio)
        .collect();
    let median_noise = {
        let mut n = noisy.clone();
        n.sort_by(f64::total_cmp);
        n.get(n.len() / 2).copied().unwrap_or(0.0)
    };
    println!(
        "\n{} points compared: {slower} slower, {faster} faster, {} within noise, {} with \
         too few samples (median noise +-{:.1}%)",
        lines.len(),
        count(Moved::WithinNoise),
        count(Moved::TooFewSamples),
        median_noise * 100.0
    );
    anyhow::ensure!(
        slower == 0,
        "throughput regression in {slower} of {} points (see the table above)",
        lines.len()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(center: f64, rel: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| center * (1.0 + rel * ((i as f64 / (n - 1) as f64) * 2.0 - 1.0)))
            .collect()
    }

    #[test]
    fn the_same_distribution_is_within_noise() {
        let a = spread(10.0, 0.05, 5);
        let b = spread(10.1, 0.05, 5);
        let c = compare(Then::Samples(&a), &b, false, 0.95, 0.02, 1);
        assert_eq!(c.moved, Moved::WithinNoise, "{c:?}");
        assert!(c.lo < 1.0 && c.hi > 1.0, "{c:?}");
    }

    #[test]
    fn a_time_up_by_a_third_with_small_noise_is_slower_and_down_is_faster() {
        let a = spread(10.0, 0.02, 5);
        let slow = spread(13.0, 0.02, 5);
        let c = compare(Then::Samples(&a), &slow, false, 0.95, 0.02, 7);
        assert_eq!(c.moved, Moved::Slower, "{c:?}");
        assert!((c.ratio - 10.0 / 13.0).abs() < 1e-9);
        let fast = spread(7.0, 0.02, 5);
        assert_eq!(
            compare(Then::Samples(&a), &fast, false, 0.95, 0.02, 7).moved,
            Moved::Faster
        );
        // A throughput up is faster.
        assert_eq!(
            compare(Then::Samples(&a), &slow, true, 0.95, 0.02, 7).moved,
            Moved::Faster
        );
    }

    #[test]
    fn a_significant_change_below_the_noise_threshold_is_noise_and_wide_noise_hides_a_change() {
        let a = spread(10.0, 0.001, 5);
        let b = spread(10.1, 0.001, 5);
        let c = compare(Then::Samples(&a), &b, false, 0.95, 0.02, 3);
        assert!(c.hi < 1.0, "significant: {c:?}");
        assert_eq!(c.moved, Moved::WithinNoise);
        let wide = spread(12.0, 0.6, 5);
        assert_eq!(
            compare(Then::Mean(10.0), &wide, false, 0.95, 0.02, 3).moved,
            Moved::WithinNoise
        );
        assert_eq!(
            compare(Then::Mean(10.0), &[20.0], false, 0.95, 0.02, 3).moved,
            Moved::TooFewSamples
        );
    }

    fn row(series: &str, x: f64, mean: f64) -> Row {
        Row {
            paper: "ccm".into(),
            experiment: "table2".into(),
            series: series.into(),
            x,
            mean,
            min: mean,
            max: mean,
            n: 5,
            unit: "ms".into(),
            device: "H100".into(),
            cpu: String::new(),
            cores: 16,
            commit: String::new(),
            date: String::new(),
            sizes: String::new(),
        }
    }

    #[test]
    fn an_experiments_drift_is_its_largest_change_between_baseline_and_rerun_either_way() {
        let gpu = |s: &str| s.starts_with("gpu");
        let old = [
            row("gpu", 1.0, 10.0),
            row("gpu batched", 2.0, 10.0),
            row("cpu", 1.0, 1.0),
        ];
        // Times: 10 -> 12 is a throughput ratio of 0.833, a drift of 0.2; 10 -> 9 is 0.11;
        // the CPU series' 5x is not compared, so not counted.
        let rerun = [
            row("gpu", 1.0, 12.0),
            row("gpu batched", 2.0, 9.0),
            row("cpu", 1.0, 5.0),
        ];
        let d = drift(&old, &rerun, "H100", gpu, false);
        assert!((d - 0.2).abs() < 1e-9, "{d}");
        assert!((drift(&old, &rerun, "H100", |_| true, false) - 4.0).abs() < 1e-9);
        assert_eq!(drift(&old, &[], "H100", gpu, false), 0.0);
        assert_eq!(drift(&old, &rerun, "A100", gpu, false), 0.0);
        // A point that drifted 20% holds a 25% slowdown within noise at 1.5x the drift.
        let a = spread(10.0, 0.001, 5);
        let b = spread(12.5, 0.001, 5);
        let c = compare(Then::Samples(&a), &b, false, 0.95, DRIFT_MARGIN * d, 5);
        assert_eq!(c.moved, Moved::WithinNoise, "{c:?}");
        let b = spread(15.0, 0.001, 5);
        let c = compare(Then::Samples(&a), &b, false, 0.95, DRIFT_MARGIN * d, 5);
        assert_eq!(c.moved, Moved::Slower, "{c:?}");
    }

    #[test]
    fn a_run_that_compares_nothing_says_why_per_experiment() {
        let all = crate::runner::all_experiments();
        let exps: Vec<&Experiment> = all
            .iter()
            .filter(|e| e.paper.name() == "ccm" && matches!(e.id, "table2" | "fig5"))
            .collect();
        let dir = std::env::temp_dir().join(format!("harness-regress-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        // The baseline records table2 on a GPU and has no fig5.
        results::write_csv(
            &results::csv_path(&dir, "ccm", "table2"),
            &[row("gpu", 1.0, 10.0)],
        )
        .unwrap();
        let opts = Opts {
            baseline: dir.clone(),
            confidence: 0.95,
            noise_threshold: 0.02,
            all_series: false,
            allow_empty: false,
        };
        // This run, without a GPU: emulator and CPU series on device "none".
        let mut emu = row("emu index", 1.0, 30.0);
        emu.device = "none".into();
        let mut gpu_elsewhere = row("gpu", 1.0, 10.0);
        gpu_elsewhere.device = "none".into();
        let (lines, accounts) = compare_all(&exps, &[emu.clone()], &[], &opts).unwrap();
        assert!(lines.is_empty());
        let why = |e: &str, acc: &[Account]| {
            acc.iter()
                .find(|a| a.experiment == e)
                .map(|a| a.why_none.clone())
                .unwrap()
        };
        assert_eq!(why("ccm/fig5", &accounts), "no recording in the baseline");
        assert!(
            why("ccm/table2", &accounts).starts_with("this run has no GPU series"),
            "{accounts:?}"
        );
        let (_, accounts) = compare_all(&exps, &[gpu_elsewhere], &[], &opts).unwrap();
        assert_eq!(
            why("ccm/table2", &accounts),
            "baseline recorded on H100, this run on none"
        );
        let table = account_lines(&accounts).join("\n");
        assert!(
            table
                .contains("| ccm/table2 | 0 | 0 | 0 | nothing compared: baseline recorded on H100"),
            "{table}"
        );
        // The same device: one point compared, no note.
        let (lines, accounts) = compare_all(&exps, &[row("gpu", 1.0, 10.0)], &[], &opts).unwrap();
        assert_eq!(lines.len(), 1);
        let t2 = accounts
            .iter()
            .find(|a| a.experiment == "ccm/table2")
            .unwrap();
        assert_eq!((t2.compared, t2.why_none.as_str()), (1, ""));
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn the_interval_is_the_same_on_a_rerun() {
        let a = spread(10.0, 0.1, 6);
        let b = spread(11.0, 0.1, 6);
        let c1 = compare(Then::Samples(&a), &b, false, 0.95, 0.02, 42);
        let c2 = compare(Then::Samples(&a), &b, false, 0.95, 0.02, 42);
        assert_eq!((c1.lo, c1.hi), (c2.lo, c2.hi));
    }
}
