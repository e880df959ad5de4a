//! `harness report`: rebuilds the pages of recorded results from the CSVs, the papers'
//! stated numbers (`results/papers/`) and the measurement notes (`results/notes.toml`):
//! `results/README.md`, one screen per paper (what is reproduced, faster, not reproduced
//! and why, the GPU's margin over the best CPU); `results/<paper>/README.md`, the paper's
//! verdicts, its Targets and one section per experiment with its figure, the paper's
//! numbers against ours, the notes and the recorded points; and the headline table of
//! the top-level README.md, between its markers (`headline`). Never edit those by hand.

mod headline;
mod notes;

use crate::experiment::{Experiment, Paper};
use crate::plot::fmt_num;
use crate::results::{self, Row};
use crate::targets::{sig3, Check, Outcome, Target, TARGETS};
use crate::verdict::{self, Claim, Verdict};
use notes::Note;
use std::fmt::Write as _;
use std::path::Path;

/// A note longer than this (in bytes) is folded under its first words.
const LONG_NOTE: usize = 1200;

/// How many items a table cell lists before it folds the rest into "(+N more)".
const CELL_ITEMS: usize = 3;

/// The paper a crate reproduces, cited.
fn citation(p: Paper) -> &'static str {
    match p {
        Paper::Ccm => {
            "A. Margara and G. Cugola, *High Performance Content-Based Matching Using GPUs*, \
             DEBS 2011, doi:10.1145/2002259.2002285"
        }
        Paper::Clcb => {
            "G. Cugola and A. Margara, *High-Performance Location-Aware Publish-Subscribe on \
             GPUs*, Middleware 2012, doi:10.1007/978-3-642-35170-9_16"
        }
        Paper::Xml => {
            "I. Absalyamov, R. Moussalli, W. Najjar and V. J. Tsotras, *High-Performance \
             Holistic XML Twig Filtering Using GPUs*, ADMS 2013"
        }
        Paper::Ddm => {
            "S. H. Lo, Y. C. Chung and F. P. Pai, *Offloading Region Matching of Data \
             Distribution Management with CUDA*, ISMS 2010, doi:10.1109/ISMS.2010.64"
        }
    }
}

fn paper_title(p: Paper) -> &'static str {
    match p {
        Paper::Ccm => "CCM: content-based matching",
        Paper::Clcb => "CLCB: location-aware publish-subscribe",
        Paper::Xml => "XML twig filtering",
        Paper::Ddm => "DDM region matching",
    }
}

/// `a, b, c (+2 more)`.
fn folded(items: &[String], n: usize, more: &str) -> String {
    let mut out = items.iter().take(n).cloned().collect::<Vec<_>>().join("; ");
    if items.len() > n {
        let _ = write!(out, " (+{} more {more})", items.len() - n);
    }
    out
}

/// Our headline for an experiment the paper states no number for, at its largest x: the
/// speedup of the paper-faithful `gpu` series (or the first GPU series) over the baseline,
/// and the best speedup of any GPU series over the best CPU; or, with no baseline, the
/// first values at the largest x.
fn ours(exp: &Experiment, rows: &[Row]) -> String {
    let Some(last) = rows.iter().map(|r| r.x).reduce(f64::max) else {
        return "no data".into();
    };
    let at = format!("at {} = {}", exp.x_label, fmt_num(last));
    if let Some(b) = exp.baseline {
        let sp: Vec<_> = results::speedups(rows, b, exp.higher_is_better)
            .into_iter()
            .filter(|s| s.1 == last)
            .collect();
        let faithful = sp
            .iter()
            .find(|s| s.0 == "gpu")
            .or_else(|| sp.iter().find(|s| s.0.starts_with("gpu")));
        if let Some((fs, _, fv)) = faithful {
            return format!(
                "{fs} {}x over {b}{} ({at})",
                sig3(*fv),
                over_best_cpu(exp, rows, last)
            );
        }
    }
    let vals: Vec<String> = rows
        .iter()
        .filter(|r| r.x == last && !r.series.starts_with("emu"))
        .map(|r| match crate::targets::row_unit(r) {
            "x" => format!("{} {}x", r.series, sig3(r.mean)),
            _ => format!("{} {}", r.series, sig3(r.mean)),
        })
        .collect();
    format!(
        "{} ({} {at})",
        folded(&vals, CELL_ITEMS, "below"),
        exp.y_label
    )
}

/// `; best gpu-sweep 18.4x over best CPU (all cores)`: the fastest GPU series' speedup
/// over [`crate::plot::BEST_CPU`] at `x`, where the rows record it; else empty.
fn over_best_cpu(exp: &Experiment, rows: &[Row], x: f64) -> String {
    let best = crate::plot::BEST_CPU;
    results::speedups(rows, best, exp.higher_is_better)
        .into_iter()
        .filter(|s| s.1 == x && s.0.starts_with("gpu"))
        .max_by(|a, b| a.2.total_cmp(&b.2))
        .map(|(s, _, v)| format!("; best {s} {}x over {best}", sig3(v)))
        .unwrap_or_default()
}

/// One evaluated row of [`TARGETS`]: the measured value in words and whether it holds.
struct Evaluated {
    measured: String,
    met: Option<bool>,
    /// How far the value is past its threshold (above 1: met), for picking a goal's
    /// closest miss.
    margin: Option<f64>,
}

fn evaluate(tg: &Target, exp: &Experiment, dir: &Path) -> anyhow::Result<Evaluated> {
    let csv = results::csv_path(dir, tg.paper, tg.experiment);
    let rows = if csv.exists() {
        results::read_csv(&csv)?
    } else {
        Vec::new()
    };
    Ok(match tg.evaluate(&rows, exp.higher_is_better) {
        Outcome::Measured { value, met } => {
            let margin = match tg.check {
                Check::SpeedupOver { factor, .. } => value / factor,
                Check::AtMost(l, _) => l / value,
                Check::AtLeast(l, _) => value / l,
            };
            Evaluated {
                measured: tg.value_words(value),
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

/// The workload a target row reads: its paper, its experiment, its x and the factors in
/// its series' name (`gpu index F=1M` -> `F=1M`, `gpu multi model=dense F=1M speedup` ->
/// `model=dense F=1M`), so that two engines at one workload are alternatives and two
/// workloads of one goal must both meet it (the many-GPU goals name an experiment of
/// each paper, all called `scaling`: each paper's must hold).
fn workload_of(tg: &Target) -> (&'static str, &'static str, u64, String) {
    let factors: Vec<&str> = tg
        .series
        .split_whitespace()
        .filter(|w| w.contains('='))
        .collect();
    (tg.paper, tg.experiment, tg.x.to_bits(), factors.join(" "))
}

fn met_words(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "yes",
        Some(false) => "**no**",
        None => "-",
    }
}

/// One goal's line of the Targets summary: met at its worst workload, by which engine.
struct GoalLine<'a> {
    topic: &'static str,
    goal: &'static str,
    best: Option<&'a (&'static Target, Evaluated)>,
}

impl GoalLine<'_> {
    fn met(&self) -> Option<bool> {
        self.best.and_then(|(_, e)| e.met)
    }
}

/// Every goal of `rows`, judged: a goal holds at every workload it names (experiment, x,
/// and the factor in a series name such as `F=1M`); at each workload it is met when one
/// of its engines meets it. The line shows the workload that fares worst, by its best
/// engine.
fn goal_lines<'a>(rows: &'a [(&'static Target, Evaluated)]) -> Vec<GoalLine<'a>> {
    let mut goals: Vec<(&'static str, &'static str)> = Vec::new();
    for (tg, _) in rows {
        if !goals.contains(&(tg.topic, tg.goal)) {
            goals.push((tg.topic, tg.goal));
        }
    }
    goals
        .into_iter()
        .map(|(topic, goal)| {
            let of_goal: Vec<&(&Target, Evaluated)> = rows
                .iter()
                .filter(|(tg, _)| tg.topic == topic && tg.goal == goal)
                .collect();
            let margin = |r: &&(&Target, Evaluated)| r.1.margin.unwrap_or(0.0);
            let mut points: Vec<(&str, &str, u64, String)> = Vec::new();
            for (tg, _) in &of_goal {
                let p = workload_of(tg);
                if !points.contains(&p) {
                    points.push(p);
                }
            }
            let best = points
                .iter()
                .filter_map(|p| {
                    of_goal
                        .iter()
                        .filter(|(tg, e)| workload_of(tg) == *p && e.margin.is_some())
                        .max_by(|a, b| margin(a).total_cmp(&margin(b)))
                })
                .min_by(|a, b| margin(a).total_cmp(&margin(b)))
                .copied();
            GoalLine { topic, goal, best }
        })
        .collect()
}

/// The targets read from `paper`'s CSVs, evaluated.
fn evaluated(
    exps: &[Experiment],
    dir: &Path,
    paper: Paper,
) -> anyhow::Result<Vec<(&'static Target, Evaluated)>> {
    let mut rows = Vec::new();
    for tg in TARGETS.iter().filter(|t| t.paper == paper.name()) {
        if let Some(exp) = exps
            .iter()
            .find(|e| e.paper == paper && e.id == tg.experiment)
        {
            rows.push((tg, evaluate(tg, exp, dir)?));
        }
    }
    Ok(rows)
}

/// A paper page's "Targets" section: one line per goal, why the missed ones are missed
/// (their notes), then every (goal, engine) row, folded.
fn targets_section(
    rows: &[(&'static Target, Evaluated)],
    notes: &[Note],
    dir: &Path,
) -> anyhow::Result<String> {
    let mut md = String::new();
    if rows.is_empty() {
        return Ok(md);
    }
    let _ = writeln!(
        md,
        "\n## Targets\n\nThe project's speed and memory targets read from this paper's CSVs, each in \
         the unit its goal states; speedups are against the named series at the same x. A goal is \
         met when, at every workload it names, one of the engines that can serve it meets it; the \
         line shows the workload that fares worst, by its best engine.\n"
    );
    let _ = writeln!(
        md,
        "| topic | goal | met | by (or closest) | measured | threshold |"
    );
    let _ = writeln!(md, "| --- | --- | --- | --- | ---: | --- |");
    let lines = goal_lines(rows);
    for l in &lines {
        let (by, measured, threshold) = match l.best {
            Some((tg, e)) => (
                format!("{} (`{}`)", tg.what, tg.series),
                e.measured.clone(),
                tg.threshold(),
            ),
            None => ("-".into(), "not recorded".into(), "-".into()),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {by} | {measured} | {threshold} |",
            l.topic,
            l.goal,
            met_words(l.met())
        );
    }
    let mut why = String::new();
    for l in lines.iter().filter(|l| l.met() == Some(false)) {
        if let Some(n) = notes.iter().find(|n| n.goals.iter().any(|g| g == l.goal)) {
            let _ = writeln!(why, "- *{}*: {}", l.goal, n.markdown(dir)?);
        }
    }
    if !why.is_empty() {
        let _ = writeln!(
            md,
            "\nWhere a goal is missed, why (as measured; `results/notes.toml`):\n\n{why}"
        );
    }
    let _ = writeln!(
        md,
        "\n<details><summary>Every target row ({}: each goal, engine and workload)</summary>\n",
        rows.len()
    );
    let _ = writeln!(
        md,
        "| goal | engine | experiment | series | x | threshold | measured | met |"
    );
    let _ = writeln!(md, "| --- | --- | --- | --- | ---: | --- | ---: | --- |");
    for (tg, e) in rows {
        let _ = writeln!(
            md,
            "| {} | {} | [{x}](#{a}) | {} | {} | {} | {} | {} |",
            tg.goal,
            tg.what,
            tg.series,
            if tg.x.is_nan() {
                "every".to_string()
            } else {
                fmt_num(tg.x)
            },
            tg.threshold(),
            e.measured,
            met_words(e.met),
            x = tg.experiment,
            a = anchor(&format!("{}/{}", tg.paper, tg.experiment)),
        );
    }
    let _ = writeln!(md, "\n</details>");
    Ok(md)
}

/// The short name of an experiment: its title up to the first colon (`Fig. 8`).
fn short(exp: &Experiment) -> &str {
    exp.title.split(':').next().unwrap_or(exp.title)
}

/// Markdown-safe cell text.
fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

/// One row of a paper's verdict table (links relative to the paper's page).
fn verdict_row(exp: &Experiment, rows: &[Row], claims: &[Claim]) -> String {
    let id = format!("{}/{}", exp.paper.name(), exp.id);
    let name = format!("[{}](#{}) {}", exp.id, anchor(&id), short(exp));
    if rows.is_empty() {
        return format!("| {name} | | not recorded yet | | |");
    }
    let shown = verdict::headline(claims, CELL_ITEMS);
    let more = claims.len().saturating_sub(shown.len());
    let (claimed, measured) = if shown.is_empty() {
        ("no number stated".to_string(), cell(&ours(exp, rows)))
    } else {
        let mut c: Vec<String> = shown.iter().map(|c| cell(&c.claimed)).collect();
        let m: Vec<String> = shown.iter().map(|c| cell(&c.measured)).collect();
        if more > 0 {
            c.push(format!("(+{more} more below)"));
        }
        (c.join("; "), m.join("; "))
    };
    let fig = format!("[png]({x}.png) [svg]({x}.svg)", x = exp.id);
    format!(
        "| {name} | {claimed} | {measured} | {} | {fig} |",
        cell(&verdict::overall(claims).words())
    )
}

/// A table's recorded points as a Markdown table: one row per table row (category), one
/// column per series.
fn pivot(exp: &Experiment, rows: &[Row], cats: &[(f64, String)]) -> String {
    let mut series: Vec<&str> = Vec::new();
    for r in rows {
        if !series.contains(&r.series.as_str()) {
            series.push(&r.series);
        }
    }
    let units: Vec<&str> = exp.y_label.split(" / ").collect();
    let mut md = String::new();
    let _ = writeln!(md, "| row | unit | {} |", series.join(" | "));
    let _ = writeln!(md, "| --- | --- |{}", " ---: |".repeat(series.len()));
    for (i, (x, name)) in cats.iter().enumerate() {
        let unit = if units.len() == cats.len() {
            units[i]
        } else {
            exp.y_label
        };
        let vals: Vec<String> = series
            .iter()
            .map(|s| {
                rows.iter()
                    .find(|r| r.series == *s && r.x == *x)
                    .map(|r| sig3(r.mean))
                    .unwrap_or_default()
            })
            .collect();
        let _ = writeln!(
            md,
            "| {} {name} | {unit} | {} |",
            fmt_num(*x),
            vals.join(" | ")
        );
    }
    md
}

/// One experiment, read and judged.
struct Judged<'a> {
    exp: &'a Experiment,
    rows: Vec<Row>,
    claims: Vec<Claim>,
    verdict: Verdict,
}

/// The machines of a set of rows: `NVIDIA H100 with Intel Xeon (16 cores)`.
fn machines<'a>(rows: impl Iterator<Item = &'a Row>) -> (Vec<String>, Vec<String>) {
    let mut machines: Vec<String> = Vec::new();
    let mut dates: Vec<String> = Vec::new();
    for r in rows {
        let m = format!("{} with {} ({} cores)", r.device, r.cpu, r.cores);
        if !machines.contains(&m) {
            machines.push(m);
        }
        if !dates.contains(&r.date) {
            dates.push(r.date.clone());
        }
    }
    dates.sort();
    (machines, dates)
}

fn span(dates: &[String]) -> String {
    match (dates.first(), dates.last()) {
        (Some(a), Some(b)) if a != b => format!("{a} to {b}"),
        (Some(a), _) => a.clone(),
        _ => "never".into(),
    }
}

/// The experiment's section of its paper's page.
fn section(j: &Judged, notes: &[Note], dir: &Path) -> anyhow::Result<String> {
    let (exp, rows, claims) = (j.exp, &j.rows, &j.claims);
    let id = format!("{}/{}", exp.paper.name(), exp.id);
    let mut md = String::new();
    let r0 = &rows[0];
    let _ = writeln!(md, "\n## {id}\n\n{}\n", exp.title);
    let _ = writeln!(
        md,
        "Device: {}; CPU: {} ({} cores); commit {}; {}; {} seed(s). The paper: {}\n",
        r0.device, r0.cpu, r0.cores, r0.commit, r0.date, r0.n, exp.paper_says
    );
    let _ = writeln!(md, "![{id}]({}.png)\n", exp.id);
    if !claims.is_empty() {
        let _ = writeln!(
            md,
            "| the paper's number | where in the paper | ours | verdict |"
        );
        let _ = writeln!(md, "| --- | --- | --- | --- |");
        for c in claims {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} |",
                cell(&c.claimed),
                cell(&c.paper.where_),
                cell(&c.measured),
                cell(&c.verdict.words())
            );
        }
        let _ = writeln!(md);
    }
    for n in notes.iter().filter(|n| n.experiments.contains(&id)) {
        // A note on several experiments is printed in full at the first of them on this
        // page, and pointed to from the others.
        let first = n
            .experiments
            .iter()
            .find(|e| e.starts_with(&format!("{}/", exp.paper.name())));
        if let Some(first) = first.filter(|f| **f != id) {
            let head = lead_words(&n.text, 8);
            let _ = writeln!(
                md,
                "Note: *{head} ...*, under [{first}](#{}).\n",
                anchor(first)
            );
            continue;
        }
        let text = n.markdown(dir)?;
        if text.len() > LONG_NOTE {
            let head = lead_words(&n.text, 12);
            let _ = writeln!(
                md,
                "<details><summary>Note: {head} ...</summary>\n\n{text}\n\n</details>\n"
            );
        } else {
            let _ = writeln!(md, "{text}\n");
        }
    }
    let n_series = {
        let mut s: Vec<&str> = rows.iter().map(|r| r.series.as_str()).collect();
        s.dedup();
        s.len()
    };
    let _ = writeln!(
        md,
        "<details><summary>Recorded points ({} rows, {n_series} series; mean, min and max over seeds)</summary>\n",
        rows.len()
    );
    if let crate::plot::Layout::Bars(cats) = crate::plot::layout(exp, rows) {
        md.push_str(&pivot(exp, rows, &cats));
        let _ = writeln!(md, "\nMin and max over seeds are in the CSV.");
    } else {
        let _ = writeln!(md, "| series | {} | mean | min | max | unit |", exp.x_label);
        let _ = writeln!(md, "| --- | ---: | ---: | ---: | ---: | --- |");
        for r in rows {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} |",
                r.series,
                fmt_num(r.x),
                sig3(r.mean),
                sig3(r.min),
                sig3(r.max),
                r.unit
            );
        }
    }
    let _ = writeln!(md, "\n</details>");
    Ok(md)
}

/// How a verdict is reached, stated once.
fn rules() -> String {
    format!(
        "How a verdict is reached (harness/src/verdict.rs): a paper's speedup, time or throughput \
         is *reproduced* when ours, at the same x and for the same series, is within a factor {b} \
         of it, *faster* when ours is better by more than that (a modern GPU and CPU against a GTX \
         460 or a 9600 GT and their CPUs), *not reproduced* when worse by more than that; a size \
         within a factor {b}; a ratio (a change per doubling) within a factor {r}; a bound (\"more \
         than\", \"below\") must hold; a crossover, peak or breaking point must fall within a \
         factor {b} of the paper's x. An experiment is not reproduced when any of its claims is \
         not. `A vs B` is A's speedup over B, and compares the paper's engines as this project \
         implements them (`gpu`, the paper's kernels, against the paper's CPU baseline), not this \
         project's fastest engines, which the headline and the Targets compare.",
        b = verdict::BAND,
        r = verdict::RATIO_BAND
    )
}

/// Writes `<dir>/README.md`, `<dir>/<paper>/README.md` and the headline of
/// `<dir>/../README.md` (when it has the markers); returns how many experiments had
/// results.
pub fn write(exps: &[Experiment], dir: &Path) -> anyhow::Result<usize> {
    let notes = notes::read(dir)?;
    let mut found = 0;
    let mut summary = String::new();
    let mut all_rows: Vec<Row> = Vec::new();
    let _ = writeln!(summary, "# Recorded results\n");
    let _ = writeln!(
        summary,
        "Which of the four papers' claims hold on a modern GPU, and how far this project's engines \
         go past them. One page per paper holds its verdicts, targets, figures and recorded points; \
         every number comes from the CSV files beside them, the papers' stated numbers \
         ([papers/](papers)) and the measurement notes ([notes.toml](notes.toml)); the GPU \
         sessions' logs are indexed in [gpu-logs/](gpu-logs/README.md). Generated by \
         `cargo run --release -p harness -- report`; do not edit by hand.\n"
    );
    let mut paper_blocks = String::new();
    for paper in Paper::ALL {
        let mut judged: Vec<Judged> = Vec::new();
        for exp in exps.iter().filter(|e| e.paper == paper) {
            let csv = results::csv_path(dir, paper.name(), exp.id);
            let rows = if csv.exists() {
                results::read_csv(&csv)?
            } else {
                Vec::new()
            };
            let papers = results::read_papers(dir, paper.name())?;
            let claims = verdict::claims(exp, &rows, &papers);
            let verdict = verdict::overall(&claims);
            judged.push(Judged {
                exp,
                rows,
                claims,
                verdict,
            });
        }
        let recorded: Vec<&Judged> = judged.iter().filter(|j| !j.rows.is_empty()).collect();
        found += recorded.len();
        all_rows.extend(recorded.iter().flat_map(|j| j.rows.iter().cloned()));
        let targets = evaluated(exps, dir, paper)?;
        write_page(paper, &judged, &targets, &notes, dir)?;
        paper_blocks.push_str(&summary_block(paper, &recorded, &targets, exps, dir)?);
    }
    let (ms, dates) = machines(all_rows.iter());
    let _ = writeln!(
        summary,
        "Recorded on {}; {}.\n",
        ms.join("; "),
        span(&dates)
    );
    summary.push_str(&paper_blocks);
    let _ = writeln!(summary, "\n{}", rules());
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("README.md"), summary)?;
    let readme = dir.join("..").join("README.md");
    if let Ok(text) = std::fs::read_to_string(&readme) {
        if let Some(new) = headline::splice(&text, &headline::table(exps, dir)?) {
            if new != text {
                std::fs::write(&readme, new)?;
            }
        }
    }
    Ok(found)
}

/// A paper's lines of the summary page.
fn summary_block(
    paper: Paper,
    recorded: &[&Judged],
    targets: &[(&'static Target, Evaluated)],
    exps: &[Experiment],
    dir: &Path,
) -> anyhow::Result<String> {
    let mut md = String::new();
    let page = format!("{}/README.md", paper.name());
    let _ = writeln!(
        md,
        "## [{}]({page})\n\n{}.\n",
        paper_title(paper),
        citation(paper)
    );
    let link = |j: &&Judged| {
        let name = if j.exp.title.to_lowercase().contains("beyond the paper") {
            j.exp.id
        } else {
            short(j.exp)
        };
        format!(
            "[{name}]({page}#{})",
            anchor(&format!("{}/{}", paper.name(), j.exp.id))
        )
    };
    let of = |f: fn(&Verdict) -> bool| {
        recorded
            .iter()
            .filter(|j| f(&j.verdict))
            .map(link)
            .collect::<Vec<_>>()
    };
    let reproduced = of(|v| *v == Verdict::Reproduced);
    let faster = of(|v| *v == Verdict::Faster);
    let beyond = of(|v| matches!(v, Verdict::NotMeasured(_)));
    if !reproduced.is_empty() {
        let _ = writeln!(md, "- Reproduced: {}.", reproduced.join(", "));
    }
    if !faster.is_empty() {
        let _ = writeln!(md, "- Reproduced in shape, faster: {}.", faster.join(", "));
    }
    let failed: Vec<&&Judged> = recorded
        .iter()
        .filter(|j| matches!(j.verdict, Verdict::NotReproduced(_)))
        .collect();
    if !failed.is_empty() {
        let _ = writeln!(md, "- Not reproduced:");
        for j in failed {
            if let Verdict::NotReproduced(why) = &j.verdict {
                let _ = writeln!(md, "  - {}: {why}", link(j));
            }
        }
    }
    if !beyond.is_empty() {
        let _ = writeln!(
            md,
            "- No paper number to compare (beyond the paper, or not recorded here): {}.",
            beyond.join(", ")
        );
    }
    let margins = headline::margins(exps, dir, paper.name())?;
    if !margins.is_empty() {
        let _ = writeln!(
            md,
            "- The GPU over the best CPU on all cores: {}.",
            margins.join("; ")
        );
    }
    let lines = goal_lines(targets);
    if !lines.is_empty() {
        let met = lines.iter().filter(|l| l.met() == Some(true)).count();
        let missed = lines.iter().filter(|l| l.met() == Some(false)).count();
        let why = if missed > 0 {
            format!(" ([why]({page}#targets))")
        } else {
            String::new()
        };
        let _ = writeln!(
            md,
            "- Targets: {met} of {} goals met, {missed} missed{why}.",
            lines.len()
        );
    }
    let _ = writeln!(md);
    Ok(md)
}

/// Writes `<dir>/<paper>/README.md`.
fn write_page(
    paper: Paper,
    judged: &[Judged],
    targets: &[(&'static Target, Evaluated)],
    notes: &[Note],
    dir: &Path,
) -> anyhow::Result<()> {
    let mut md = String::new();
    let _ = writeln!(md, "# {}: recorded results\n", paper_title(paper));
    let _ = writeln!(
        md,
        "[All papers](../README.md). The paper: {}. Generated by \
         `cargo run --release -p harness -- report` from the CSVs beside this page; do not edit by \
         hand.\n",
        citation(paper)
    );
    let (ms, dates) = machines(judged.iter().flat_map(|j| j.rows.iter()));
    if !ms.is_empty() {
        let _ = writeln!(md, "Recorded on {}; {}.\n", ms.join("; "), span(&dates));
    }
    let _ = writeln!(md, "| experiment | what the paper claims | what we measured (same x, same series) | verdict | figure |");
    let _ = writeln!(md, "| --- | --- | --- | --- | --- |");
    for j in judged {
        let _ = writeln!(md, "{}", verdict_row(j.exp, &j.rows, &j.claims));
    }
    let _ = writeln!(md, "\n{}", rules());
    md.push_str(&targets_section(targets, notes, dir)?);
    for j in judged.iter().filter(|j| !j.rows.is_empty()) {
        md.push_str(&section(j, notes, dir)?);
    }
    let out = dir.join(paper.name());
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("README.md"), md)?;
    Ok(())
}

fn anchor(id: &str) -> String {
    id.chars()
        .filter(|c| c.is_alphanumeric() || *c == '-')
        .collect::<String>()
        .to_lowercase()
}
/// The first `n` words of a note, without its `*` (the caller sets them in italics).
fn lead_words(text: &str, n: usize) -> String {
    text.split_whitespace()
        .take(n)
        .collect::<Vec<_>>()
        .join(" ")
        .replace('*', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first target row of `series` in `experiment` at `x` whose goal `goal` accepts.
    fn target(
        experiment: &str,
        series: &str,
        x: f64,
        goal: impl Fn(&str) -> bool,
    ) -> &'static Target {
        TARGETS
            .iter()
            .find(|t| t.experiment == experiment && t.series == series && t.x == x && goal(t.goal))
            .unwrap_or_else(|| panic!("no target {experiment} {series} {x}"))
    }

    #[test]
    fn two_engines_at_one_workload_are_alternatives_and_two_workloads_of_a_goal_are_not() {
        // Alternatives: the bisect and sweep engines from host memory at 1M regions.
        let bisect = target("scaleup_a1", "gpu-bisect+upload", 1048576.0, |_| true);
        let sweep = target("scaleup_a1", "gpu-sweep+upload", 1048576.0, |g| {
            g == bisect.goal
        });
        assert_eq!(bisect.goal, sweep.goal);
        assert_eq!(workload_of(bisect), workload_of(sweep));
        // Workloads: the dense model at 100k and at 1M filters, and at 4 and 20 names.
        let small = target("dense", "gpu index F=100k", 4.0, |_| true);
        let large = target("dense", "gpu index F=1M", 4.0, |_| true);
        let many = target("dense", "gpu index F=1M", 20.0, |_| true);
        assert_eq!(small.goal, large.goal);
        assert_ne!(workload_of(small), workload_of(large));
        assert_ne!(workload_of(large), workload_of(many));
        assert_eq!(workload_of(large).3, "F=1M");
        // The many-GPU goals: each paper's `scaling` workload must hold on its own (CCM's
        // dense model meeting 1.8x on 2 GPUs does not answer for DDM), and both CCM
        // partitions of one model are alternatives.
        let two = |g: &str| g.contains("1.8x on 2 GPUs");
        let ccm_dense = target("scaling", "gpu multi model=dense F=1M speedup", 2.0, two);
        let ccm_by_iface = target("scaling", "gpu multi model=table2 F=250k speedup", 2.0, two);
        let ccm_by_filter = target(
            "scaling",
            "gpu multi by-filter model=table2 F=250k speedup",
            2.0,
            two,
        );
        let ddm = target(
            "scaling",
            "gpu multi sweep count regions=1M speedup",
            2.0,
            two,
        );
        assert_ne!(workload_of(ccm_dense), workload_of(ddm));
        assert_ne!(workload_of(ccm_dense), workload_of(ccm_by_iface));
        assert_eq!(workload_of(ccm_by_iface), workload_of(ccm_by_filter));
    }

    fn row(series: &str, x: f64, mean: f64) -> Row {
        Row {
            paper: "ccm".into(),
            experiment: "fig6".into(),
            series: series.into(),
            x,
            mean,
            min: mean,
            max: mean,
            n: 1,
            unit: "ms".into(),
            device: "fixture GPU".into(),
            ..Row::default()
        }
    }

    fn fig6_line(dir: &Path) -> String {
        let exps = crate::runner::all_experiments();
        write(&exps, dir).unwrap();
        let md = std::fs::read_to_string(dir.join("ccm").join("README.md")).unwrap();
        md.lines()
            .find(|l| l.starts_with("| [fig6]"))
            .unwrap()
            .to_string()
    }

    #[test]
    fn verdict_rows_quote_the_paper_data_csv_and_judge_our_csv_against_it() {
        let dir = std::env::temp_dir().join(format!("harness-report-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        // Ours: gpu 6x faster than sff at 9 attributes.
        let rows = [row("sff", 9.0, 0.6), row("gpu", 9.0, 0.1)];
        results::write_csv(&results::csv_path(&dir, "ccm", "fig6"), &rows).unwrap();
        let papers = results::papers_path(&dir, "ccm");
        std::fs::create_dir_all(papers.parent().unwrap()).unwrap();

        std::fs::write(
            &papers,
            "experiment,series,x,value,unit,where\nfig6,gpu vs sff,9,3.5,x,test\n",
        )
        .unwrap();
        let line = fig6_line(&dir);
        assert!(line.contains("gpu vs sff 3.5x at 9"), "{line}");
        assert!(line.contains("| 6x |"), "{line}");
        assert!(line.contains("| reproduced |"), "{line}");

        std::fs::write(
            &papers,
            "experiment,series,x,value,unit,where\nfig6,gpu vs sff,9,40,x,test\n",
        )
        .unwrap();
        let line = fig6_line(&dir);
        assert!(line.contains("gpu vs sff 40x at 9"), "{line}");
        assert!(
            line.contains("**not reproduced**: gpu vs sff: 6x vs the paper's 40x"),
            "{line}"
        );

        std::fs::write(&papers, "experiment,series,x,value,unit,where\n").unwrap();
        let line = fig6_line(&dir);
        assert!(line.contains("no number stated"), "{line}");
        assert!(line.contains("the paper states no number"), "{line}");
        std::fs::remove_dir_all(dir).ok();
    }
}
