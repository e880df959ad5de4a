//! From an experiment's rows and its paper's numbers to a figure: panels, speedups,
//! emulator panels, the papers' marks on the axes or in notes, the legend.

use super::*;

/// The note under the title of a run without a GPU or at quick sizes (from the rows'
/// device and sizes), if any.
pub(super) fn run_note(rows: &[Row]) -> Option<String> {
    let quick = rows.iter().any(|r| r.sizes == crate::results::QUICK);
    let sizes = if quick {
        " at quick sizes (not the paper's)"
    } else {
        ""
    };
    if !rows.is_empty() && rows.iter().all(|r| r.device == "none") {
        let emulated = rows.iter().any(|r| crate::results::is_emulator(&r.series));
        return Some(format!(
            "Run without a GPU{sizes}: the CPU engines{}.",
            if emulated {
                ", and the GPU kernels on the host emulator, whose times are correctness runs, \
                 not speeds (drawn apart, never as speedups)"
            } else {
                ""
            }
        ));
    }
    quick.then(|| "Quick sizes (not the paper's).".to_string())
}

/// An x value in words, with the noun of the x label: `32768 regions`, `queries = 256`.
pub(super) fn x_words(x_label: &str, x: f64) -> String {
    let noun = x_label.split(" (").next().unwrap_or(x_label).trim();
    let noun = noun.strip_prefix("number of ").unwrap_or(noun);
    if noun.contains(' ') || noun.is_empty() {
        format!("{noun} = {}", fmt_num(x))
    } else {
        format!("{} {noun}", fmt_num(x))
    }
}

/// A paper's value in words: `150x`, `0.1 ms`.
pub(super) fn value_words(v: f64, unit: &str) -> String {
    match bare_unit(unit) {
        "x" => format!("{}x", sig(v, 3)),
        u => format!("{} {u}", sig(v, 3)),
    }
}

/// Notes for papers' numbers that no axis reaches: one per (x, kind, unit), with the
/// range of the values and the series they are of: `paper (gpu-region vs brute,
/// gpu-grid vs brute): 150-200x at 32768 regions`.
pub(super) fn off_axis_notes(marks: &[PaperMark], x_label: &str) -> Vec<String> {
    let mut groups: Vec<(f64, MarkKind, String, Vec<&PaperMark>)> = Vec::new();
    for m in marks {
        let unit = bare_unit(&m.label).to_string();
        match groups
            .iter_mut()
            .find(|g| g.0 == m.x && g.1 == m.kind && g.2 == unit)
        {
            Some(g) => g.3.push(m),
            None => groups.push((m.x, m.kind, unit, vec![m])),
        }
    }
    groups
        .into_iter()
        .map(|(x, kind, unit, ms)| {
            let mut series: Vec<&str> = ms.iter().map(|m| m.series.as_str()).collect();
            series.dedup();
            let ys: Vec<f64> = ms.iter().filter_map(|m| m.y).collect();
            let lo = ys.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = ys.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let what = match kind {
                MarkKind::AtX => unit.clone(),
                _ if lo == hi => value_words(lo, &unit),
                _ => format!("{}-{}", sig(lo, 3), value_words(hi, &unit)),
            };
            let what = match kind {
                MarkKind::AtLeast => format!("at least {what}"),
                MarkKind::AtMost => format!("at most {what}"),
                _ => what,
            };
            format!(
                "paper ({}): {what} at {}",
                series.join(", "),
                x_words(x_label, x)
            )
        })
        .collect()
}

/// Splits a line panel's paper marks into those its x axis reaches (the measured x range,
/// widened by a factor of 2 on a log axis, a tenth of the span on a linear one) and those
/// it does not.
pub(super) fn reachable(lp: &LinePanel, marks: Vec<PaperMark>) -> (Vec<PaperMark>, Vec<PaperMark>) {
    let xs: Vec<f64> = lp
        .lines
        .iter()
        .flat_map(|l| l.pts.iter().map(|p| p.x))
        .filter(|x| x.is_finite() && (!lp.log_x || *x > 0.0))
        .collect();
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        return (Vec::new(), marks);
    }
    let (from, to) = if lp.log_x {
        (lo / 2.0, hi * 2.0)
    } else {
        let span = (hi - lo).max(hi.abs() * 0.1);
        (lo - span * 0.1, hi + span * 0.1)
    };
    marks.into_iter().partition(|m| (from..=to).contains(&m.x))
}

/// The legend: every series, or, past ten series of two or more second factors, folded
/// into one entry per engine (its colour) and one per factor (its dash and marker).
pub(super) fn legend(styles: &[(String, Style)]) -> Vec<(String, Key)> {
    let mut variants: Vec<String> = styles.iter().map(|(s, _)| factor(s)).collect();
    variants.sort_by(|a, b| natural_cmp(a, b));
    variants.dedup();
    if styles.len() <= 10 || variants.len() < 2 {
        return styles
            .iter()
            .map(|(s, st)| (s.clone(), Key::Series(st.clone())))
            .collect();
    }
    let mut out: Vec<(String, Key)> = Vec::new();
    for (s, st) in styles {
        let engine = split_series(s).0;
        if !out.iter().any(|(e, _)| *e == engine) {
            out.push((engine, Key::Engine(st.clone())));
        }
    }
    for v in &variants {
        let Some((_, st)) = styles.iter().find(|(s, st)| factor(s) == *v && !st.halo) else {
            continue;
        };
        let label = if v.is_empty() { "(no factor)" } else { v };
        let grey = Style {
            color: Rgb(90, 90, 90),
            hollow: false,
            halo: false,
            ..st.clone()
        };
        out.push((label.to_string(), Key::Factor(grey)));
    }
    out
}

/// The figure of an experiment from its recorded rows and its paper's numbers.
pub fn figure(exp: &Experiment, rows: &[Row], paper: &[PaperRow]) -> Figure {
    let order = series_order(rows);
    let styles = styles(&order);
    let paper: Vec<&PaperRow> = paper
        .iter()
        .filter(|p| p.experiment == exp.id && placeable(p))
        .collect();
    let color_of = |series: &str| -> Rgb {
        style_of(&styles, series)
            .map(|s| s.color)
            .unwrap_or_else(|| engine_color(&split_series(series).0))
    };
    let (panels, notes) = match layout(exp, rows) {
        Layout::Bars(cats) => bar_panels(exp, rows, &paper, &styles, &cats, &color_of),
        Layout::Lines => line_panels(exp, rows, &paper, &styles, &color_of),
    };
    let n = rows.iter().map(|r| r.n);
    // The legend names the series drawn (not an emulator's speedup, which is not).
    let drawn: Vec<(String, Style)> = styles
        .iter()
        .filter(|(s, _)| {
            panels.iter().any(|p| match p {
                Panel::Lines(l) => l.lines.iter().any(|l| l.series == *s),
                Panel::Bars(b) => b.groups.iter().any(|g| g.1.iter().any(|b| b.series == *s)),
            })
        })
        .cloned()
        .collect();
    Figure {
        title: exp.title.to_string(),
        notes: run_note(rows).into_iter().chain(notes).collect(),
        panels,
        legend: legend(&drawn),
        seeds: (n.clone().min().unwrap_or(0), n.max().unwrap_or(0)),
    }
}

/// The panel of emulator series: their times apart from any GPU time or paper number,
/// labelled as correctness runs; none for a speedup or ratio axis (an emulator's speedup
/// means nothing), then a note names them.
pub(super) fn emulator_line_panel(
    x_label: &str,
    y_label: &str,
    log_x: bool,
    log_y: bool,
    lines: Vec<Line>,
    notes: &mut Vec<String>,
) -> Option<Panel> {
    if lines.is_empty() {
        return None;
    }
    if is_ratio_axis(y_label) {
        let names: Vec<String> = lines.iter().map(|l| l.series.clone()).collect();
        notes.push(emulator_note(&names, "speedups"));
        return None;
    }
    Some(Panel::Lines(LinePanel {
        x_label: x_label.to_string(),
        y_label: emulator_label(y_label),
        log_x,
        log_y,
        lines,
        paper: Vec::new(),
        unity: false,
    }))
}

/// The note naming the emulator engines whose `what` (speedups, ratios) are not drawn.
pub(super) fn emulator_note(series: &[String], what: &str) -> String {
    let mut engines: Vec<String> = Vec::new();
    for s in series {
        let e = split_series(s).0;
        if !engines.contains(&e) {
            engines.push(e);
        }
    }
    format!(
        "Emulator engines ({}) checked answers only; their {what} mean nothing and are not drawn.",
        engines.join(", ")
    )
}

/// The y label of an emulator panel.
pub(super) fn emulator_label(y_label: &str) -> String {
    format!("host emulator, correctness run (not a speed): {y_label}")
}

pub(super) fn line_panels(
    exp: &Experiment,
    rows: &[Row],
    paper: &[&PaperRow],
    styles: &[(String, Style)],
    color_of: &dyn Fn(&str) -> Rgb,
) -> (Vec<Panel>, Vec<String>) {
    let mut all: Vec<Line> = styles
        .iter()
        .map(|(s, st)| Line {
            series: s.clone(),
            style: st.clone(),
            pts: Vec::new(),
        })
        .collect();
    for r in rows {
        if let Some(l) = all.iter_mut().find(|l| l.series == r.series) {
            l.pts.push(Pt {
                x: r.x,
                y: r.mean,
                lo: r.min,
                hi: r.max,
            });
        }
    }
    for l in &mut all {
        l.pts.sort_by(|a, b| a.x.total_cmp(&b.x));
    }
    let (emulated, lines): (Vec<Line>, Vec<Line>) = all
        .into_iter()
        .partition(|l| crate::results::is_emulator(&l.series));
    let mut notes = Vec::new();
    // One experiment recording several quantities (series ending in a unit): one panel
    // per unit, no speedup panel; so too when a run recorded one of them only (the rates
    // of a run without a GPU, which has no speedup over one GPU).
    let mut units: Vec<&str> = Vec::new();
    for (s, _) in styles {
        if let Some(u) = series_unit(s) {
            if !units.contains(&u) {
                units.push(u);
            }
        }
    }
    if !units.is_empty() {
        let of_unit = |lines: &[Line], u: &str| -> Vec<Line> {
            lines
                .iter()
                .filter(|l| series_unit(&l.series) == Some(u))
                .cloned()
                .collect()
        };
        let mut panels: Vec<Panel> = units
            .iter()
            .map(|u| (u, of_unit(&lines, u)))
            .filter(|(_, lines)| !lines.is_empty())
            .map(|(u, lines)| {
                Panel::Lines(LinePanel {
                    x_label: exp.x_label.to_string(),
                    y_label: label_for_unit(exp.y_label, u),
                    log_x: exp.log_x,
                    log_y: exp.log_y,
                    lines,
                    paper: Vec::new(),
                    // Speedups over one GPU (the scaling experiments): parity at 1.
                    unity: *u == "speedup",
                })
            })
            .collect();
        for u in &units {
            let label = label_for_unit(exp.y_label, u);
            let label = if *u == "speedup" {
                format!("{label} speedup")
            } else {
                label
            };
            panels.extend(emulator_line_panel(
                exp.x_label,
                &label,
                exp.log_x,
                exp.log_y,
                of_unit(&emulated, u),
                &mut notes,
            ));
        }
        return (panels, notes);
    }
    let has_series = |s: &str| styles.iter().any(|(n, _)| n == s);
    // Paper numbers of a recorded series in the panel's unit, or speedups when the
    // values are speedups; stated x's (crossovers) of the value panel's own series.
    let on_values: Vec<PaperMark> = paper
        .iter()
        .filter(|p| has_series(&p.series) && (p.value.is_none() || unit_fits(&p.unit, exp.y_label)))
        .map(|p| paper_mark(p, color_of(&p.series)))
        .collect();
    let mut panels = Vec::new();
    let mut values = LinePanel {
        x_label: exp.x_label.to_string(),
        y_label: exp.y_label.to_string(),
        log_x: exp.log_x,
        log_y: exp.log_y,
        lines,
        paper: Vec::new(),
        unity: is_ratio_axis(exp.y_label),
    };
    let (on, off) = reachable(&values, on_values);
    values.paper = on;
    notes.extend(off_axis_notes(&off, exp.x_label));
    if !values.lines.is_empty() {
        panels.push(Panel::Lines(values));
    }
    if let Some(base) = exp.baseline {
        let sp = speedup_points(rows, base, exp.higher_is_better);
        let speed_lines: Vec<Line> = styles
            .iter()
            .filter(|(s, _)| s != base)
            .map(|(s, st)| Line {
                series: s.clone(),
                style: st.clone(),
                pts: sp.iter().filter(|(n, _)| n == s).map(|(_, p)| *p).collect(),
            })
            .filter(|l| !l.pts.is_empty())
            .collect();
        let marks: Vec<PaperMark> = paper
            .iter()
            .filter(|p| {
                p.series
                    .split_once(" vs ")
                    .is_some_and(|(_, b)| b.trim() == base)
            })
            .map(|p| {
                let engine = p.series.split(" vs ").next().unwrap_or("");
                let mut m = paper_mark(p, color_of(engine));
                if p.unit == "crossover" {
                    m.y = Some(1.0);
                }
                m
            })
            .collect();
        let mut speed = LinePanel {
            x_label: exp.x_label.to_string(),
            y_label: format!("speedup over {base} (x)"),
            log_x: exp.log_x,
            log_y: true,
            lines: speed_lines,
            paper: Vec::new(),
            unity: true,
        };
        let (on, off) = reachable(&speed, marks);
        speed.paper = on;
        notes.extend(off_axis_notes(&off, exp.x_label));
        if !speed.lines.is_empty() {
            panels.push(Panel::Lines(speed));
        }
    }
    // The best CPU, or its variants with a second factor (`best CPU (all cores) F=1M`).
    let has_best = styles.iter().any(|(n, _)| split_series(n).0 == BEST_CPU);
    if has_best && exp.baseline != Some(BEST_CPU) {
        let sp = speedup_points(rows, BEST_CPU, exp.higher_is_better);
        let best_lines: Vec<Line> = styles
            .iter()
            .filter(|(s, _)| is_gpu_series(s))
            .map(|(s, st)| Line {
                series: s.clone(),
                style: st.clone(),
                pts: sp.iter().filter(|(n, _)| n == s).map(|(_, p)| *p).collect(),
            })
            .filter(|l| !l.pts.is_empty())
            .collect();
        if !best_lines.is_empty() {
            panels.push(Panel::Lines(LinePanel {
                x_label: exp.x_label.to_string(),
                y_label: format!("speedup over {BEST_CPU} (x)"),
                log_x: exp.log_x,
                log_y: true,
                lines: best_lines,
                paper: Vec::new(),
                unity: true,
            }));
        }
    }
    panels.extend(emulator_line_panel(
        exp.x_label,
        exp.y_label,
        exp.log_x,
        exp.log_y,
        emulated,
        &mut notes,
    ));
    (panels, notes)
}

pub(super) fn bar_panels(
    exp: &Experiment,
    rows: &[Row],
    paper: &[&PaperRow],
    styles: &[(String, Style)],
    cats: &[(f64, String)],
    color_of: &dyn Fn(&str) -> Rgb,
) -> (Vec<Panel>, Vec<String>) {
    let units: Vec<&str> = exp.y_label.split(" / ").collect();
    let unit_of = |i: usize| -> String {
        if units.len() == cats.len() {
            units[i].trim().to_string()
        } else {
            exp.y_label.to_string()
        }
    };
    let mut panels: Vec<BarPanel> = Vec::new();
    let mut emulator: Vec<BarPanel> = Vec::new();
    let mut notes = Vec::new();
    let mut emulated_ratios: Vec<String> = Vec::new();
    for (i, (x, label)) in cats.iter().enumerate() {
        let unit = unit_of(i);
        let (emu_bars, bars): (Vec<Bar>, Vec<Bar>) = styles
            .iter()
            .filter_map(|(s, st)| {
                let r = rows.iter().find(|r| r.series == *s && r.x == *x)?;
                Some(Bar {
                    series: s.clone(),
                    style: st.clone(),
                    mean: r.mean,
                    lo: r.min,
                    hi: r.max,
                })
            })
            .partition(|b| crate::results::is_emulator(&b.series));
        let marks: Vec<PaperMark> = paper
            .iter()
            .filter(|p| p.x == *x && p.value.is_some() && !p.series.contains(" vs "))
            .filter(|p| unit_fits(&p.unit, &unit))
            .map(|p| paper_mark(p, color_of(&p.series)))
            .collect();
        if !emu_bars.is_empty() {
            if is_ratio_axis(&unit) {
                emulated_ratios.extend(emu_bars.iter().map(|b| b.series.clone()));
            } else {
                let y_label = emulator_label(&unit);
                let group = (label.clone(), emu_bars, Vec::new());
                match emulator.iter_mut().find(|p| p.y_label == y_label) {
                    Some(p) => p.groups.push(group),
                    None => emulator.push(BarPanel {
                        y_label,
                        log_y: exp.log_y,
                        groups: vec![group],
                        unity: false,
                    }),
                }
            }
        }
        if bars.is_empty() && marks.is_empty() {
            continue;
        }
        let group = (label.clone(), bars, marks);
        match panels.iter_mut().find(|p| p.y_label == unit) {
            Some(p) => p.groups.push(group),
            None => panels.push(BarPanel {
                unity: is_ratio_axis(&unit),
                y_label: unit,
                log_y: exp.log_y,
                groups: vec![group],
            }),
        }
    }
    if !emulated_ratios.is_empty() {
        notes.push(emulator_note(&emulated_ratios, "ratios"));
    }
    // The speedup of each GPU series over [`BEST_CPU`], in the rows that record it.
    let sp = speedup_points(rows, BEST_CPU, exp.higher_is_better);
    let groups: Vec<(String, Vec<Bar>, Vec<PaperMark>)> = cats
        .iter()
        .filter_map(|(x, label)| {
            let bars: Vec<Bar> = styles
                .iter()
                .filter(|(s, _)| is_gpu_series(s))
                .filter_map(|(s, st)| {
                    let (_, p) = sp.iter().find(|(n, p)| n == s && p.x == *x)?;
                    Some(Bar {
                        series: s.clone(),
                        style: st.clone(),
                        mean: p.y,
                        lo: p.lo,
                        hi: p.hi,
                    })
                })
                .collect();
            (!bars.is_empty()).then(|| (label.clone(), bars, Vec::new()))
        })
        .collect();
    if !groups.is_empty() && exp.baseline != Some(BEST_CPU) {
        panels.push(BarPanel {
            y_label: format!("speedup over {BEST_CPU} (x)"),
            log_y: true,
            groups,
            unity: true,
        });
    }
    let panels = panels
        .into_iter()
        .chain(emulator)
        .map(Panel::Bars)
        .collect();
    (panels, notes)
}
