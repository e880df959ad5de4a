//! The figure model, what is drawn before any pixel: panels of lines or bars, the papers'
//! marks, the legend's keys, and the layout an experiment's metadata picks.

use super::*;

/// A point: mean and the min–max whisker.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pt {
    pub x: f64,
    pub y: f64,
    pub lo: f64,
    pub hi: f64,
}

/// One series in a panel.
#[derive(Clone, Debug)]
pub struct Line {
    pub series: String,
    pub style: Style,
    pub pts: Vec<Pt>,
}

/// What a paper's number states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkKind {
    /// A value.
    Exact,
    /// "more than", "overcomes".
    AtLeast,
    /// "less than", "below".
    AtMost,
    /// An x without a value: a crossover, a peak, a breaking point.
    AtX,
}

/// A paper's number overlaid on a panel.
#[derive(Clone, Debug)]
pub struct PaperMark {
    pub series: String,
    pub color: Rgb,
    pub x: f64,
    pub y: Option<f64>,
    pub kind: MarkKind,
    /// For [`MarkKind::AtX`]: what the x is ("crossover").
    pub label: String,
}

/// A panel of lines over x.
#[derive(Clone, Debug)]
pub struct LinePanel {
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    pub log_y: bool,
    pub lines: Vec<Line>,
    pub paper: Vec<PaperMark>,
    /// A dashed line at y = 1 (speedups, ratios).
    pub unity: bool,
}

/// One bar of a grouped-bar panel.
#[derive(Clone, Debug)]
pub struct Bar {
    pub series: String,
    pub style: Style,
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
}

/// A panel of grouped bars: one group per category (a table's row), one bar per series.
#[derive(Clone, Debug)]
pub struct BarPanel {
    pub y_label: String,
    pub log_y: bool,
    /// (category label, its bars, the paper's numbers for it).
    pub groups: Vec<(String, Vec<Bar>, Vec<PaperMark>)>,
    pub unity: bool,
}

#[derive(Clone, Debug)]
pub enum Panel {
    Lines(LinePanel),
    Bars(BarPanel),
}

/// One legend entry's key.
#[derive(Clone, Debug, PartialEq)]
pub enum Key {
    /// A series: its line and marker.
    Series(Style),
    /// An engine of a folded legend: its colour (its series' dash and marker are the
    /// [`Key::Factor`] entries').
    Engine(Style),
    /// A second factor's value of a folded legend: its dash and marker, in grey.
    Factor(Style),
}

/// A whole figure: title, notes under it, panels, and the legend (every series once, in
/// order; folded into engines and second factors where there are many).
#[derive(Clone, Debug)]
pub struct Figure {
    pub title: String,
    /// Under the title: what kind of run drew it (no GPU, quick sizes) and the papers'
    /// numbers that lie off the axes.
    pub notes: Vec<String>,
    pub panels: Vec<Panel>,
    pub legend: Vec<(String, Key)>,
    /// The fewest and the most seeds behind a point (the whiskers' caption).
    pub seeds: (usize, usize),
}

impl Figure {
    /// Every (series, colour) drawn in any panel: for checking the house style.
    #[cfg(test)]
    pub fn colors(&self) -> Vec<(String, Rgb)> {
        let mut out = Vec::new();
        for p in &self.panels {
            match p {
                Panel::Lines(l) => {
                    out.extend(l.lines.iter().map(|l| (l.series.clone(), l.style.color)))
                }
                Panel::Bars(b) => out.extend(
                    b.groups
                        .iter()
                        .flat_map(|g| g.1.iter().map(|b| (b.series.clone(), b.style.color))),
                ),
            }
        }
        out
    }

    pub(super) fn paper_marks(&self) -> impl Iterator<Item = &PaperMark> {
        self.panels.iter().flat_map(|p| match p {
            Panel::Lines(l) => l.paper.iter().collect::<Vec<_>>(),
            Panel::Bars(b) => b.groups.iter().flat_map(|g| g.2.iter()).collect(),
        })
    }

    pub(super) fn has_unity(&self) -> bool {
        self.panels.iter().any(|p| match p {
            Panel::Lines(l) => l.unity,
            Panel::Bars(b) => b.unity,
        })
    }
}

/// How an experiment is laid out.
#[derive(Clone, Debug, PartialEq)]
pub enum Layout {
    /// Lines over x (and a speedup panel when there is a baseline).
    Lines,
    /// A table: grouped bars, one group per numbered row, one panel per unit.
    Bars(Vec<(f64, String)>),
}

/// The layout of an experiment, from its metadata: an x label that numbers its values,
/// `row (1: time, 2: deployment, 3: size)` or `factor (1 doc size, 2 queries)`, makes a
/// table of those rows; an x that is a percentile (`p50`, `p99`, `p99.9`) makes one bar
/// group per recorded percentile; anything else is lines.
pub fn layout(exp: &Experiment, rows: &[Row]) -> Layout {
    if let Some(c) = categories(exp.x_label) {
        return Layout::Bars(c);
    }
    if exp.x_label.trim() == "percentile" {
        let mut xs: Vec<f64> = rows.iter().map(|r| r.x).collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        return Layout::Bars(xs.into_iter().map(|x| (x, format!("p{x}"))).collect());
    }
    Layout::Lines
}

/// Unit words a series name may end with, when one experiment records several
/// quantities (`gpu persistent events/s`, `gpu persistent p99 us`).
pub(super) const UNIT_WORDS: [&str; 11] = [
    "events/s",
    "matchings/s",
    "speedup",
    "MB/s",
    "us",
    "µs",
    "ms",
    "s",
    "MB",
    "GB",
    "updates/s",
];

/// The unit a series name ends with, if any.
pub fn series_unit(series: &str) -> Option<&str> {
    series
        .split_whitespace()
        .last()
        .filter(|t| UNIT_WORDS.contains(t) && series.split_whitespace().count() > 1)
}

/// The part of an axis label (`events/s, and p99 latency (µs)`) that names `unit`.
pub(super) fn label_for_unit(y_label: &str, unit: &str) -> String {
    let unit_alt = if unit == "us" { "µs" } else { unit };
    y_label
        .split(", and ")
        .flat_map(|p| p.split(", "))
        .find(|p| p.contains(unit) || p.contains(unit_alt))
        .map(|p| p.trim().to_string())
        .unwrap_or_else(|| unit_alt.to_string())
}

/// The numbered categories of an x label, if it has them (at least two, numbered 1, 2, ...).
pub fn categories(x_label: &str) -> Option<Vec<(f64, String)>> {
    let open = x_label.find('(')?;
    let close = x_label.rfind(')')?;
    let inner = x_label.get(open + 1..close)?;
    let mut items: Vec<String> = Vec::new();
    for part in inner.split(", ") {
        let starts_numbered = part.chars().next().is_some_and(|c| c.is_ascii_digit());
        match items.last_mut() {
            Some(last) if !starts_numbered => {
                last.push_str(", ");
                last.push_str(part);
            }
            _ => items.push(part.to_string()),
        }
    }
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let digits: String = item.chars().take_while(|c| c.is_ascii_digit()).collect();
        let n: usize = digits.parse().ok()?;
        if n != i + 1 {
            return None;
        }
        let rest = item[digits.len()..].trim_start_matches(':').trim();
        out.push((n as f64, rest.to_string()));
    }
    (out.len() >= 2).then_some(out)
}

/// The unit in parentheses at the end of an axis label, or the label itself:
/// `processing time per event (ms)` -> `ms`.
pub fn axis_unit(label: &str) -> &str {
    match (label.rfind('('), label.ends_with(')')) {
        (Some(i), true) => &label[i + 1..label.len() - 1],
        _ => label,
    }
}

/// Whether a paper number in `unit` belongs on an axis labelled `label`.
pub(super) fn unit_fits(unit: &str, label: &str) -> bool {
    let u = bare_unit(unit);
    if u == "x" {
        return label.contains("speedup");
    }
    axis_unit(label) == u || label == u || label.split_whitespace().any(|w| w == u)
}

/// A paper unit without its bound: `>= x` -> `x`.
pub fn bare_unit(unit: &str) -> &str {
    unit.trim_start_matches(">=")
        .trim_start_matches("<=")
        .trim()
}

pub(super) fn mark_kind(p: &PaperRow) -> MarkKind {
    if p.value.is_none() {
        MarkKind::AtX
    } else if p.unit.starts_with(">=") {
        MarkKind::AtLeast
    } else if p.unit.starts_with("<=") {
        MarkKind::AtMost
    } else {
        MarkKind::Exact
    }
}

/// Whether a paper row can be placed on a panel (ratios per doubling, shares of
/// interfaces and the like have no place on the axes).
pub(super) fn placeable(p: &PaperRow) -> bool {
    p.value.is_some() || matches!(p.unit.as_str(), "crossover" | "peak" | "breaking point")
}

pub(super) fn paper_mark(p: &PaperRow, color: Rgb) -> PaperMark {
    PaperMark {
        series: p.series.clone(),
        color,
        x: p.x,
        y: p.value,
        kind: mark_kind(p),
        label: p.unit.clone(),
    }
}

/// Speedup of each series over `baseline` at each common x, with the conservative
/// min–max range (baseline's extremes against the series' opposite extremes); a series
/// with a second factor (`gpu F=1M`) over the baseline of the same factor (`index F=1M`)
/// where one is recorded ([`crate::results::baseline_row`]). Emulator series
/// ([`crate::results::is_emulator`]) have none: their times mean nothing.
pub fn speedup_points(rows: &[Row], baseline: &str, higher_is_better: bool) -> Vec<(String, Pt)> {
    rows.iter()
        .filter(|r| {
            !crate::results::is_baseline(&r.series, baseline)
                && !crate::results::is_emulator(&r.series)
        })
        .filter_map(|r| {
            let b = crate::results::baseline_row(rows, baseline, &r.series, r.x)?;
            let (y, lo, hi) = if higher_is_better {
                (r.mean / b.mean, r.min / b.max, r.max / b.min)
            } else {
                (b.mean / r.mean, b.min / r.max, b.max / r.min)
            };
            (y.is_finite() && y > 0.0).then(|| {
                let fin = |v: f64| if v.is_finite() { v } else { y };
                (
                    r.series.clone(),
                    Pt {
                        x: r.x,
                        y,
                        lo: fin(lo),
                        hi: fin(hi),
                    },
                )
            })
        })
        .collect()
}

pub(super) fn series_order(rows: &[Row]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for r in rows {
        if !order.contains(&r.series) {
            order.push(r.series.clone());
        }
    }
    order
}

pub(super) fn style_of<'a>(styles: &'a [(String, Style)], series: &str) -> Option<&'a Style> {
    styles.iter().find(|(s, _)| s == series).map(|(_, st)| st)
}

pub(super) fn is_ratio_axis(label: &str) -> bool {
    label.contains("speedup") || label.contains("ratio")
}
