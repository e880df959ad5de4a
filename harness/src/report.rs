//! `harness report`: rebuilds results/README.md from the recorded CSVs, comparing each
//! table and figure with the paper's headline number. Never edit that file by hand.

use crate::experiment::Experiment;
use crate::results::{self, Row};
use crate::targets::{Check, Outcome, TARGETS};
use std::fmt::Write as _;
use std::path::Path;

/// The paper's speedup, when its headline states one as `<number>x`.
fn paper_speedup(says: &str) -> Option<f64> {
    says.split(|c: char| c.is_whitespace() || c == '(' || c == ',' || c == ';')
        .find_map(|w| {
            w.strip_suffix('x')
                .or_else(|| w.strip_suffix('×'))
                .and_then(|n| n.parse::<f64>().ok())
        })
}

/// Our headline for an experiment, at its largest x: the speedup of the paper-faithful
/// `gpu` series (or the first GPU series) and the best speedup of any series, or the values
/// at the largest x when there is no baseline. The ratio column uses the faithful one.
fn ours(exp: &Experiment, rows: &[Row]) -> (String, Option<f64>) {
    let Some(last) = rows.iter().map(|r| r.x).reduce(f64::max) else {
        return ("no data".into(), None);
    };
    if let Some(b) = exp.baseline {
        let sp: Vec<_> = results::speedups(rows, b, exp.higher_is_better)
            .into_iter()
            .filter(|s| s.1 == last)
            .collect();
        let faithful = sp
            .iter()
            .find(|s| s.0 == "gpu")
            .or_else(|| sp.iter().find(|s| s.0.starts_with("gpu")));
        let best = sp.iter().max_by(|a, b| a.2.total_cmp(&b.2));
        if let (Some((fs, _, fv)), Some((bs, _, bv))) = (faithful, best) {
            let mut text = format!("{fs} {fv:.1}x over {b}");
            if bs != fs {
                let _ = write!(text, "; best {bs} {bv:.1}x");
            }
            let _ = write!(text, " (at {} = {last})", exp.x_label);
            return (text, Some(*fv));
        }
    }
    let vals: Vec<String> = rows
        .iter()
        .filter(|r| r.x == last)
        .map(|r| format!("{} {:.4}", r.series, r.mean))
        .collect();
    (
        format!(
            "{} ({} at {} = {last})",
            vals.join(", "),
            exp.y_label,
            exp.x_label
        ),
        None,
    )
}

/// One evaluated row of [`TARGETS`]: the measured value in words and whether it holds.
struct Evaluated {
    measured: String,
    met: Option<bool>,
    /// The value compared with the threshold, for picking a goal's closest miss.
    margin: Option<f64>,
}

fn evaluate(
    tg: &crate::targets::Target,
    exp: &Experiment,
    dir: &Path,
) -> anyhow::Result<Evaluated> {
    let csv = results::csv_path(dir, tg.paper, tg.experiment);
    let rows = if csv.exists() {
        results::read_csv(&csv)?
    } else {
        Vec::new()
    };
    Ok(match tg.evaluate(&rows, exp.higher_is_better) {
        Outcome::Measured { value, met } => {
            let (measured, margin) = match tg.check {
                Check::SpeedupOver { factor, .. } => (format!("{value:.1}x"), value / factor),
                // Table rows mixing units ("ms / ms / MB / ms") leave the unit to the
                // target's wording.
                Check::AtMost(l) | Check::AtLeast(l) => {
                    let v = match rows.first().map(|r| r.unit.as_str()) {
                        Some(u) if !u.contains(" / ") => format!("{value:.4} {u}"),
                        _ => format!("{value:.4}"),
                    };
                    let m = match tg.check {
                        Check::AtMost(_) => l / value,
                        _ => value / l,
                    };
                    (v, m)
                }
            };
            Evaluated {
                measured,
                met: Some(met),
                margin: Some(margin),
            }
        }
        Outcome::NotRecorded => Evaluated {
            measured: "not recorded".into(),
            met: None,
            margin: None,
        },
    })
}

/// The "Targets" section: a summary with one line per goal of the issues (met, and by
/// which engine; or the closest miss), then every (goal, engine) row read from the
/// recorded CSVs.
fn targets_table(exps: &[Experiment], dir: &Path) -> anyhow::Result<String> {
    let mut rows = Vec::new();
    for tg in TARGETS {
        if let Some(exp) = exps
            .iter()
            .find(|e| e.paper.name() == tg.paper && e.id == tg.experiment)
        {
            rows.push((tg, evaluate(tg, exp, dir)?));
        }
    }
    let mut md = String::new();
    let _ = writeln!(
        md,
        "\n## Targets\n\nThe speed and memory targets of the issues, each read from recorded \
         points (series at x) of the CSVs; speedups are against the named series at the same x. \
         A goal is met when one of the engines that can serve it meets it; the rows below the \
         summary show every engine, the paper-faithful ones included.\n"
    );
    let _ = writeln!(
        md,
        "| issue | goal | met | by (or closest) | measured | threshold |"
    );
    let _ = writeln!(md, "| --- | --- | --- | --- | ---: | --- |");
    let mut goals: Vec<(u32, &str)> = Vec::new();
    for (tg, _) in &rows {
        if !goals.contains(&(tg.issue, tg.goal)) {
            goals.push((tg.issue, tg.goal));
        }
    }
    for (issue, goal) in goals {
        let of_goal: Vec<_> = rows
            .iter()
            .filter(|(tg, _)| tg.issue == issue && tg.goal == goal)
            .collect();
        let best = of_goal
            .iter()
            .filter(|(_, e)| e.margin.is_some())
            .max_by(|a, b| {
                a.1.margin
                    .unwrap_or(0.0)
                    .total_cmp(&b.1.margin.unwrap_or(0.0))
            });
        let (met, by, measured, threshold) = match best {
            Some((tg, e)) => (
                if e.met == Some(true) { "yes" } else { "**no**" },
                format!("{} (`{}`)", tg.what, tg.series),
                e.measured.clone(),
                tg.threshold(),
            ),
            None => ("-", "-".into(), "not recorded".into(), "-".into()),
        };
        let _ = writeln!(
            md,
            "| {issue} | {goal} | {met} | {by} | {measured} | {threshold} |"
        );
    }
    let _ = writeln!(
        md,
        "\n| issue | goal | engine | experiment | series | x | threshold | measured | met |"
    );
    let _ = writeln!(
        md,
        "| --- | --- | --- | --- | --- | ---: | --- | ---: | --- |"
    );
    for (tg, e) in &rows {
        let met = match e.met {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "-",
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | [{p}/{x}](#{a}) | {} | {} | {} | {} | {met} |",
            tg.issue,
            tg.goal,
            tg.what,
            tg.series,
            tg.x,
            tg.threshold(),
            e.measured,
            p = tg.paper,
            x = tg.experiment,
            a = anchor(&format!("{}/{}", tg.paper, tg.experiment)),
        );
    }
    Ok(md)
}

/// Writes `<dir>/README.md`; returns how many experiments had results.
pub fn write(exps: &[Experiment], dir: &Path) -> anyhow::Result<usize> {
    let mut md = String::new();
    let mut found = 0;
    let _ = writeln!(md, "# Recorded results\n");
    let _ = writeln!(
        md,
        "Generated by `cargo run --release -p harness -- report` from the CSV files beside this page; \
         do not edit by hand. Each CSV row is one (series, x) point: mean, min and max over seeds, with \
         the device, CPU, commit and date of the run. Every run checked that all engines gave the same \
         answers on every workload.\n"
    );
    let _ = writeln!(
        md,
        "| experiment | the paper says | ours | ratio (ours / paper) | device | date |"
    );
    let _ = writeln!(md, "| --- | --- | --- | --- | --- | --- |");
    let mut sections = String::new();
    for exp in exps {
        let csv = results::csv_path(dir, exp.paper.name(), exp.id);
        let rows = if csv.exists() {
            results::read_csv(&csv)?
        } else {
            Vec::new()
        };
        let id = format!("{}/{}", exp.paper.name(), exp.id);
        if rows.is_empty() {
            let _ = writeln!(
                md,
                "| {id}: {} | {} | not recorded yet | | | |",
                exp.title, exp.paper_says
            );
            continue;
        }
        found += 1;
        let (text, ours_v) = ours(exp, &rows);
        let ratio = match (ours_v, paper_speedup(exp.paper_says)) {
            (Some(o), Some(p)) if p > 0.0 => format!("{:.1}", o / p),
            _ => String::new(),
        };
        let r0 = &rows[0];
        let _ = writeln!(
            md,
            "| [{id}](#{}) {} | {} | {text} | {ratio} | {} | {} |",
            anchor(&id),
            exp.title,
            exp.paper_says,
            r0.device,
            r0.date
        );
        let _ = writeln!(sections, "\n## {id}\n\n{}\n", exp.title);
        let _ = writeln!(
            sections,
            "Device: {}; CPU: {} ({} cores); commit {}; {}; {} seed(s).\n",
            r0.device, r0.cpu, r0.cores, r0.commit, r0.date, r0.n
        );
        let _ = writeln!(sections, "![{id}]({}/{}.png)\n", exp.paper.name(), exp.id);
        let _ = writeln!(
            sections,
            "| series | {} | mean | min | max | unit |",
            exp.x_label
        );
        let _ = writeln!(sections, "| --- | ---: | ---: | ---: | ---: | --- |");
        for r in &rows {
            let _ = writeln!(
                sections,
                "| {} | {} | {:.6} | {:.6} | {:.6} | {} |",
                r.series, r.x, r.mean, r.min, r.max, r.unit
            );
        }
    }
    md.push_str(&targets_table(exps, dir)?);
    md.push_str(&sections);
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("README.md"), md)?;
    Ok(found)
}

fn anchor(id: &str) -> String {
    id.chars()
        .filter(|c| c.is_alphanumeric() || *c == '-')
        .collect::<String>()
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    #[test]
    fn paper_speedup_reads_the_first_number_followed_by_x() {
        assert_eq!(
            super::paper_speedup("144 us per event, 7.2x over SFF"),
            Some(7.2)
        );
        assert_eq!(super::paper_speedup("up to 9x (1 MB document)"), Some(9.0));
        assert_eq!(super::paper_speedup("306 us per event"), None);
    }
}
