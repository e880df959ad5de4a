//! Figures drawn from the recorded CSVs and the papers' stated numbers (`results/papers/`),
//! in one house style, as PNG and SVG: a figure is a pure function of its CSV rows, the
//! experiment's metadata and the paper data, so `harness plot` redraws every figure
//! without a GPU.
//!
//! The house style:
//! - one fixed colour per engine ([`engine_color`]): the same engine has the same colour in
//!   every panel of every figure; an emulator twin (`emu`, `emu-seg`, `emu batched`) takes
//!   its GPU engine's colour with hollow markers;
//! - the second factor of a series (`L=5`, `p=10%`, `RS`, `Zipf`, `vs yfilter-mc`) is the
//!   line's dash style and marker; the best CPU ([`BEST_CPU`]) a pale halo under the
//!   engine it equals;
//! - min–max over seeds as whiskers at every point (on a speedup panel: the conservative
//!   range, the baseline's min and max against the series' max and min), captioned with
//!   the seeds run (one seed: no whiskers);
//! - log axes labelled 1, 10, 100, 1k, 10k, 1M ([`fmt_num`]); x ticks at the measured x
//!   values where there are few of them, labels that would overlap dropped;
//! - a dashed line at 1 on every speedup or ratio axis;
//! - the papers' numbers as hollow markers ("paper (their GPU)": a diamond for a stated
//!   value, a triangle for "at least" / "at most", a dotted vertical line for a stated x
//!   such as a crossover), placed only where the measured x axis reaches them; the others
//!   are notes under the title ("paper (gpu-region vs brute): 200x at 32768 regions");
//!   their names and captions placed where no other text is;
//! - the legend outside the axes, to the right, in columns as tall as a panel; past ten
//!   series of two or more second factors, folded into one entry per engine (its colour)
//!   and one per factor (its dash and marker); the title wrapped over as many lines as it
//!   needs, so it never clips;
//! - a run without a GPU, or at quick sizes, says so under the title.
//!
//! The layout comes from the experiment's metadata ([`layout`]): an x label that
//! enumerates its values (`row (1: time, 2: deployment, ...)`) is a table, drawn as
//! grouped bars with one panel per unit; anything else is lines over x, with a speedup
//! panel when the experiment names a baseline. Emulator series (`emu`, `emu batched`) are
//! correctness runs: drawn on a panel of their own, labelled so, never beside a GPU time
//! or a paper's number and never in a speedup panel (an emulator's speedup is not drawn at
//! all). New experiments and series render with no change here; a series whose engine is
//! not in the palette gets a colour derived from its name, the same in every figure.
//!
//! Pure Rust (the font is embedded), so the binary needs no system libraries.

use crate::experiment::Experiment;
use crate::results::{PaperRow, Row};
use anyhow::anyhow;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};
use std::sync::Once;

static FONT: Once = Once::new();

fn register_font() {
    FONT.call_once(|| {
        // The embedded font is a valid TrueType file; if it were not, text would be
        // missing from the plots, which the plot tests would catch.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            include_bytes!("../assets/DejaVuSans.ttf"),
        );
    });
}

// ---------------------------------------------------------------------------------
// Colours, dash styles, markers.

/// An sRGB colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    fn rgb(self) -> RGBColor {
        RGBColor(self.0, self.1, self.2)
    }
    /// `#RRGGBB`, as the SVG files write it.
    #[cfg(test)]
    pub fn hex(self) -> String {
        format!("#{:02X}{:02X}{:02X}", self.0, self.1, self.2)
    }
}

/// The fixed colour of every engine (and pipeline step) the experiments record. GPU
/// engines take strong distinct hues; the papers' CPU baselines greys and browns (a
/// multi-core variant is the lighter shade of its single-core engine); the strong modern
/// CPU yardsticks (sort-based and interval-tree DDM matchers, the CCM content and hybrid
/// indexes) one green-teal family; the persistent-kernel GPU mode its own gold. Engines
/// of different papers that never share a figure may share a colour.
#[rustfmt::skip]
pub const PALETTE: &[(&str, Rgb)] = &[
    // GPU engines: CCM, CLCB.
    ("gpu", Rgb(31, 119, 180)),
    ("gpu batched", Rgb(255, 127, 14)),
    ("gpu latency", Rgb(214, 39, 40)),
    ("gpu grid", Rgb(148, 103, 189)),
    ("gpu grid batched", Rgb(227, 119, 194)),
    ("gpu grid latency", Rgb(23, 190, 207)),
    ("gpu copies", Rgb(122, 160, 214)),
    ("gpu grouped", Rgb(255, 187, 120)),
    ("gpu inline", Rgb(140, 86, 160)),
    ("gpu persistent", Rgb(191, 144, 0)),
    ("gpu index", Rgb(0, 0, 200)),
    ("gpu cells", Rgb(0, 90, 255)),
    ("gpu cells batched", Rgb(0, 0, 160)),
    // Many GPUs, CCM's three cuts: one hue each ("gpu multi" and "by-filter" keep the
    // hashed colours they had; "by-event" hashed to "gpu multi"'s).
    ("gpu multi", Rgb(0, 114, 178)),
    ("gpu multi by-filter", Rgb(204, 121, 167)),
    ("gpu multi by-event", Rgb(213, 94, 0)),
    // GPU engines: XML (gpu is the warp kernel above), DDM.
    ("gpu-block", Rgb(255, 127, 14)),
    ("gpu-seg", Rgb(148, 103, 189)),
    ("gpu-region", Rgb(31, 119, 180)),
    ("gpu-grid", Rgb(255, 127, 14)),
    ("gpu-region-sliced", Rgb(148, 103, 189)),
    ("gpu-sweep", Rgb(214, 39, 40)),
    ("gpu-sweep+upload", Rgb(240, 140, 140)),
    // The papers' CPU baselines.
    ("sff", Rgb(60, 60, 60)),
    ("sff all cores", Rgb(150, 150, 150)),
    ("rtree", Rgb(140, 86, 75)),
    ("yfilter", Rgb(60, 60, 60)),
    ("yfilter-mc", Rgb(150, 150, 150)),
    ("brute", Rgb(60, 60, 60)),
    ("brute-par", Rgb(150, 150, 150)),
    ("sort", Rgb(140, 86, 75)),
    ("sort-par", Rgb(196, 156, 148)),
    ("grid", Rgb(128, 128, 0)),
    ("grid-par", Rgb(196, 196, 110)),
    // Strong modern CPU yardsticks: one green-teal family.
    ("sbm", Rgb(1, 102, 94)),
    ("sbm-par", Rgb(90, 180, 172)),
    ("itm", Rgb(35, 139, 69)),
    ("itm-par", Rgb(140, 205, 130)),
    ("index", Rgb(0, 68, 27)),
    ("index all cores", Rgb(102, 194, 164)),
    ("hybrid", Rgb(35, 139, 69)),
    ("hybrid all cores", Rgb(140, 205, 130)),
    // Pipeline steps (CCM Fig. 5, CLCB Fig. 6).
    ("copy in", Rgb(122, 160, 214)),
    ("kernel", Rgb(255, 127, 14)),
    ("Loc", Rgb(31, 119, 180)),
    ("Cont", Rgb(255, 127, 14)),
    ("Zip", Rgb(148, 103, 189)),
    ("copy out", Rgb(44, 160, 44)),
    ("total", Rgb(0, 0, 0)),
    ("latency kernel", Rgb(214, 39, 40)),
    // The fastest CPU matcher on all cores at each point: a near-black
    // neutral, drawn dashed (see [`styles`]).
    (BEST_CPU, Rgb(17, 17, 17)),
];

/// The series the experiments against today's strong CPU methods record beside their CPU
/// baselines: per seed, the least time of the all-core CPU matchers at each x. A figure
/// whose rows have it gets a speedup panel over it (each GPU series; emulator series are
/// correctness runs and have no speedup), besides the one over the experiment's baseline.
pub const BEST_CPU: &str = "best CPU (all cores)";

/// Whether a series is a GPU engine (`gpu-sweep`, `gpu batched`); not its emulator twin
/// (`emu batched`), whose times mean nothing.
fn is_gpu_series(series: &str) -> bool {
    split_series(series).0.starts_with("gpu")
}

/// Colours for engines not in [`PALETTE`], picked by a hash of the engine's name (so the
/// same in every figure).
const FALLBACK: [Rgb; 8] = [
    Rgb(0, 114, 178),
    Rgb(213, 94, 0),
    Rgb(204, 121, 167),
    Rgb(0, 158, 115),
    Rgb(86, 180, 233),
    Rgb(230, 159, 0),
    Rgb(120, 40, 120),
    Rgb(90, 90, 160),
];

/// A series name's engine and its second factor: `gpu L=5` is (`gpu`, `L=5`),
/// `gpu vs yfilter-mc` is (`gpu`, `vs yfilter-mc`), `gpu batched` is (`gpu batched`, ``),
/// `gpu persistent p99` is (`gpu persistent`, `p99`).
pub fn split_series(series: &str) -> (String, String) {
    if let Some((a, b)) = series.split_once(" vs ") {
        return (a.trim().to_string(), format!("vs {}", b.trim()));
    }
    let toks: Vec<&str> = series.split_whitespace().collect();
    let first_factor = toks
        .iter()
        .position(|t| is_factor(t))
        .filter(|&i| i > 0)
        .unwrap_or(toks.len());
    (
        toks[..first_factor].join(" "),
        toks[first_factor..].join(" "),
    )
}

/// A token naming a value of a second factor rather than part of an engine's name.
fn is_factor(t: &str) -> bool {
    let percentile = t
        .strip_prefix('p')
        .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_digit() || c == '.'));
    t.contains('=')
        || percentile
        || UNIT_WORDS.contains(&t)
        || matches!(
            t,
            "RS" | "Zipf" | "zipf" | "uniform" | "crowded" | "small" | "large"
        )
}

/// The GPU engine an emulator engine twins (`emu` -> `gpu`, `emu-seg` -> `gpu-seg`,
/// `emu batched` -> `gpu batched`).
fn gpu_twin(engine: &str) -> Option<String> {
    let rest = engine.strip_prefix("emu")?;
    (rest.is_empty() || rest.starts_with('-') || rest.starts_with(' '))
        .then(|| format!("gpu{rest}"))
}

/// The engine's fixed colour (see [`PALETTE`]); emulator twins share their GPU engine's.
pub fn engine_color(engine: &str) -> Rgb {
    let name = gpu_twin(engine).unwrap_or_else(|| engine.to_string());
    let find = |n: &str| PALETTE.iter().find(|(k, _)| *k == n).map(|(_, c)| *c);
    if let Some(c) = find(&name) {
        return c;
    }
    // A pipeline step of one engine (`gpu copy in`): the step's colour.
    if let Some(c) = name.split_once(' ').and_then(|(_, step)| find(step)) {
        return c;
    }
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    FALLBACK[(h % FALLBACK.len() as u64) as usize]
}

/// Line dash styles, one per value of the second factor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dash {
    Solid,
    Dashed,
    Dotted,
    LongShort,
}

/// Point markers, one per value of the second factor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    Circle,
    Triangle,
    Square,
    Diamond,
    TriangleDown,
}

/// How one series is drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Style {
    pub color: Rgb,
    pub dash: Dash,
    pub marker: Marker,
    /// Emulator series: hollow markers.
    pub hollow: bool,
    /// Drawn first, wide and pale, under the other lines: [`BEST_CPU`], which lies on
    /// whichever CPU engine is fastest and would hide it if drawn over it.
    pub halo: bool,
}

const DASHES: [Dash; 4] = [Dash::Solid, Dash::Dashed, Dash::Dotted, Dash::LongShort];
const MARKERS: [Marker; 5] = [
    Marker::Circle,
    Marker::Triangle,
    Marker::Square,
    Marker::Diamond,
    Marker::TriangleDown,
];

/// Orders strings with their numbers compared as numbers (`L=5` < `L=10`).
fn natural_key(s: &str) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut num = String::new();
    for c in s.chars() {
        if c.is_ascii_digit() || (c == '.' && !num.is_empty()) {
            num.push(c);
        } else {
            if !num.is_empty() {
                out.push((std::mem::take(&mut text), num.parse().unwrap_or(0.0)));
                num.clear();
            }
            text.push(c);
        }
    }
    out.push((text, num.parse().unwrap_or(-1.0)));
    out
}

fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (ka, kb) = (natural_key(a), natural_key(b));
    for (x, y) in ka.iter().zip(&kb) {
        let o = x.0.cmp(&y.0).then(x.1.total_cmp(&y.1));
        if o.is_ne() {
            return o;
        }
    }
    ka.len().cmp(&kb.len())
}

/// The style of every series of one figure: colour by engine, dash and marker by the
/// figure's values of the second factor (in natural order: `L=5`, `L=10`, `L=15`);
/// [`BEST_CPU`] is always dashed with square markers, whatever the other series' factors,
/// and drawn as a halo under the others (with its second factors too).
pub fn styles(series: &[String]) -> Vec<(String, Style)> {
    let mut variants: Vec<String> = series
        .iter()
        .filter(|s| *s != BEST_CPU)
        .map(|s| factor(s))
        .collect();
    variants.sort_by(|a, b| natural_cmp(a, b));
    variants.dedup();
    let colors = figure_colors(series);
    series
        .iter()
        .map(|s| {
            if s == BEST_CPU {
                let style = Style {
                    color: engine_color(BEST_CPU),
                    dash: Dash::Dashed,
                    marker: Marker::Square,
                    hollow: false,
                    halo: true,
                };
                return (s.clone(), style);
            }
            let engine = split_series(s).0;
            let variant = factor(s);
            let i = variants.iter().position(|v| *v == variant).unwrap_or(0);
            let color = colors
                .iter()
                .find(|(e, _)| *e == engine)
                .map_or_else(|| engine_color(&engine), |(_, c)| *c);
            let style = Style {
                color,
                dash: DASHES[i % DASHES.len()],
                marker: MARKERS[i % MARKERS.len()],
                hollow: gpu_twin(&engine).is_some(),
                halo: engine == BEST_CPU,
            };
            (s.clone(), style)
        })
        .collect()
}

/// A series' second factor without the unit word its name may end with (`regions=1M` of
/// `gpu multi sweep count regions=1M matchings/s`): the unit picks the panel, the factor
/// the dash, the same on every panel.
fn factor(series: &str) -> String {
    let f = split_series(series).1;
    match series_unit(series) {
        Some(u) => f
            .strip_suffix(u)
            .map_or(f.clone(), |rest| rest.trim_end().to_string()),
        None => f,
    }
}

/// More colours for engines outside [`PALETTE`] whose name's colour ([`FALLBACK`]) another
/// engine of the same figure has.
const MORE: [Rgb; 8] = [
    Rgb(166, 86, 40),
    Rgb(77, 175, 74),
    Rgb(228, 26, 28),
    Rgb(152, 78, 163),
    Rgb(55, 126, 184),
    Rgb(255, 127, 0),
    Rgb(102, 102, 51),
    Rgb(0, 153, 153),
];

/// The colour of each engine of one figure: [`engine_color`], except that an engine
/// outside [`PALETTE`] whose name's colour an earlier engine of the figure has takes the
/// first colour no engine of the figure has (so many new engines in one figure, like the
/// scaling experiments', stay apart).
fn figure_colors(series: &[String]) -> Vec<(String, Rgb)> {
    let in_palette = |e: &str| {
        let name = gpu_twin(e).unwrap_or_else(|| e.to_string());
        PALETTE.iter().any(|(k, _)| *k == name)
            || name
                .split_once(' ')
                .is_some_and(|(_, step)| PALETTE.iter().any(|(k, _)| *k == step))
    };
    let mut engines: Vec<String> = Vec::new();
    for s in series {
        let e = split_series(s).0;
        if !engines.contains(&e) {
            engines.push(e);
        }
    }
    let mut out: Vec<(String, Rgb)> = engines
        .iter()
        .filter(|e| in_palette(e))
        .map(|e| (e.clone(), engine_color(e)))
        .collect();
    for e in engines.iter().filter(|e| !in_palette(e)) {
        let own = engine_color(e);
        let used = |c: Rgb| out.iter().any(|(_, u)| *u == c);
        let color = if used(own) {
            FALLBACK
                .iter()
                .chain(&MORE)
                .copied()
                .find(|c| !used(*c))
                .unwrap_or(own)
        } else {
            own
        };
        out.push((e.clone(), color));
    }
    out
}

// ---------------------------------------------------------------------------------
// Numbers on axes.

/// Significant digits, trailing zeros dropped: `sig(2.50, 3)` is `2.5`.
pub fn sig(v: f64, digits: i32) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let mag = v.abs().log10().floor() as i32;
    let decimals = (digits - 1 - mag).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// An axis number as a reader writes it: 1, 10, 100, 1k, 2.5k, 32768, 250k, 1M, 0.05.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{}G", sig(v / 1e9, 3))
    } else if a >= 1e6 {
        format!("{}M", sig(v / 1e6, 3))
    } else if a >= 1e5 || (a >= 1e3 && (a % 100.0) == 0.0) {
        format!("{}k", sig(v / 1e3, 3))
    } else if a >= 1.0 && v.fract() == 0.0 {
        format!("{v}")
    } else {
        sig(v, 3)
    }
}

/// One axis: its range and whether it is logarithmic.
#[derive(Clone, Copy, Debug)]
struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
}

impl Scale {
    /// The fraction 0..1 of the axis at `v`.
    fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    /// A range holding every value (non-positive ones dropped on a log axis), padded.
    fn fit(values: impl Iterator<Item = f64>, log: bool, from_zero: bool) -> Scale {
        let vals: Vec<f64> = values
            .filter(|v| v.is_finite() && (!log || *v > 0.0))
            .collect();
        let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !lo.is_finite() {
            return Scale {
                lo: 1.0,
                hi: 10.0,
                log,
            };
        }
        if log {
            let (lo, hi) = if hi / lo < 1.5 {
                (lo / 1.5, hi * 1.5)
            } else {
                (lo, hi)
            };
            let pad = (hi / lo).powf(0.06);
            Scale {
                lo: lo / pad,
                hi: hi * pad,
                log,
            }
        } else {
            let span = (hi - lo).max(hi.abs() * 0.1).max(1e-12);
            let lo = if from_zero && lo >= 0.0 {
                0.0
            } else {
                lo - span * 0.06
            };
            Scale {
                lo,
                hi: hi + span * 0.06,
                log,
            }
        }
    }

    /// Tick values: decades on a log axis (with 2 and 5 when it spans less than three),
    /// 1-2-5 steps on a linear one.
    fn ticks(&self) -> Vec<f64> {
        let mut out = Vec::new();
        if self.log {
            let (e0, e1) = (
                self.lo.log10().floor() as i32,
                self.hi.log10().ceil() as i32,
            );
            let mults: &[f64] = if e1 - e0 <= 2 {
                &[1.0, 2.0, 5.0]
            } else {
                &[1.0]
            };
            let step = ((e1 - e0) / 8 + 1).max(1);
            for e in (e0..=e1).filter(|e| (e - e0) % step == 0) {
                for m in mults {
                    let v = m * 10f64.powi(e);
                    if v >= self.lo * 0.999 && v <= self.hi * 1.001 {
                        out.push(v);
                    }
                }
            }
        } else {
            let raw = (self.hi - self.lo) / 6.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|m| m * mag)
                .find(|s| *s >= raw)
                .unwrap_or(mag * 10.0);
            let mut v = (self.lo / step).ceil() * step;
            while v <= self.hi + step * 1e-9 {
                out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
                v += step;
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------
// The figure model: what is drawn, before any pixel.

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

    fn paper_marks(&self) -> impl Iterator<Item = &PaperMark> {
        self.panels.iter().flat_map(|p| match p {
            Panel::Lines(l) => l.paper.iter().collect::<Vec<_>>(),
            Panel::Bars(b) => b.groups.iter().flat_map(|g| g.2.iter()).collect(),
        })
    }

    fn has_unity(&self) -> bool {
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
const UNIT_WORDS: [&str; 11] = [
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
fn label_for_unit(y_label: &str, unit: &str) -> String {
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
fn unit_fits(unit: &str, label: &str) -> bool {
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

fn mark_kind(p: &PaperRow) -> MarkKind {
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
fn placeable(p: &PaperRow) -> bool {
    p.value.is_some() || matches!(p.unit.as_str(), "crossover" | "peak" | "breaking point")
}

fn paper_mark(p: &PaperRow, color: Rgb) -> PaperMark {
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

fn series_order(rows: &[Row]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for r in rows {
        if !order.contains(&r.series) {
            order.push(r.series.clone());
        }
    }
    order
}

fn style_of<'a>(styles: &'a [(String, Style)], series: &str) -> Option<&'a Style> {
    styles.iter().find(|(s, _)| s == series).map(|(_, st)| st)
}

fn is_ratio_axis(label: &str) -> bool {
    label.contains("speedup") || label.contains("ratio")
}

/// The note under the title of a run without a GPU or at quick sizes (from the rows'
/// device and sizes), if any.
fn run_note(rows: &[Row]) -> Option<String> {
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
fn x_words(x_label: &str, x: f64) -> String {
    let noun = x_label.split(" (").next().unwrap_or(x_label).trim();
    let noun = noun.strip_prefix("number of ").unwrap_or(noun);
    if noun.contains(' ') || noun.is_empty() {
        format!("{noun} = {}", fmt_num(x))
    } else {
        format!("{} {noun}", fmt_num(x))
    }
}

/// A paper's value in words: `150x`, `0.1 ms`.
fn value_words(v: f64, unit: &str) -> String {
    match bare_unit(unit) {
        "x" => format!("{}x", sig(v, 3)),
        u => format!("{} {u}", sig(v, 3)),
    }
}

/// Notes for papers' numbers that no axis reaches: one per (x, kind, unit), with the
/// range of the values and the series they are of: `paper (gpu-region vs brute,
/// gpu-grid vs brute): 150-200x at 32768 regions`.
fn off_axis_notes(marks: &[PaperMark], x_label: &str) -> Vec<String> {
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
fn reachable(lp: &LinePanel, marks: Vec<PaperMark>) -> (Vec<PaperMark>, Vec<PaperMark>) {
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
fn legend(styles: &[(String, Style)]) -> Vec<(String, Key)> {
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
fn emulator_line_panel(
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
        let names: Vec<&str> = lines.iter().map(|l| l.series.as_str()).collect();
        notes.push(format!(
            "Emulator series checked answers; their speedups mean nothing and are not drawn: {}.",
            names.join(", ")
        ));
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

/// The y label of an emulator panel.
fn emulator_label(y_label: &str) -> String {
    format!("host emulator, correctness run (not a speed): {y_label}")
}

fn line_panels(
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
    // per unit, no speedup panel.
    let mut units: Vec<&str> = Vec::new();
    for (s, _) in styles {
        if let Some(u) = series_unit(s) {
            if !units.contains(&u) {
                units.push(u);
            }
        }
    }
    if units.len() >= 2 {
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

fn bar_panels(
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
    emulated_ratios.dedup();
    if !emulated_ratios.is_empty() {
        notes.push(format!(
            "Emulator series checked answers; their ratios mean nothing and are not drawn: {}.",
            emulated_ratios.join(", ")
        ));
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

// ---------------------------------------------------------------------------------
// Drawing.

const PANEL_W: i32 = 640;
const PANEL_H: i32 = 500;
const TICK_FONT: f64 = 17.0;
const LABEL_FONT: f64 = 18.0;
const TITLE_FONT: f64 = 23.0;
const LEGEND_FONT: f64 = 17.0;
const LEGEND_ROW: i32 = 26;

type Px = (i32, i32);

fn font(size: f64) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&BLACK)
}

fn err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("{e}")
}

/// Splits `text` into lines no wider than `width` pixels (at `size`).
fn wrap<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    size: f64,
    width: i32,
) -> Vec<String> {
    let fits = |s: &str| {
        area.estimate_text_size(s, &font(size))
            .map(|(w, _)| w as i32 <= width)
            .unwrap_or(s.len() as i32 * (size as i32) / 2 <= width)
    };
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        let cand = if cur.is_empty() {
            word.to_string()
        } else {
            format!("{cur} {word}")
        };
        if fits(&cand) || cur.is_empty() {
            cur = cand;
        } else {
            lines.push(std::mem::replace(&mut cur, word.to_string()));
        }
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

fn text_w<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, s: &str, size: f64) -> i32 {
    area.estimate_text_size(s, &font(size))
        .map(|(w, _)| w as i32)
        .unwrap_or(s.len() as i32 * size as i32 / 2)
}

fn draw_text<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    s: &str,
    at: Px,
    size: f64,
    h: HPos,
    v: VPos,
) -> anyhow::Result<()> {
    area.draw(&Text::new(
        s.to_string(),
        at,
        font(size).pos(Pos::new(h, v)),
    ))
    .map_err(err)
}

/// The pieces of a polyline drawn with `dash`.
fn dash_pieces(pts: &[Px], dash: Dash) -> Vec<Vec<Px>> {
    let pattern: &[f64] = match dash {
        Dash::Solid => return vec![pts.to_vec()],
        Dash::Dashed => &[12.0, 7.0],
        Dash::Dotted => &[3.0, 5.0],
        Dash::LongShort => &[12.0, 5.0, 3.0, 5.0],
    };
    let mut out = Vec::new();
    let mut cur: Vec<Px> = Vec::new();
    let (mut k, mut left) = (0usize, pattern[0]);
    for w in pts.windows(2) {
        let (a, b) = (w[0], w[1]);
        let (dx, dy) = (f64::from(b.0 - a.0), f64::from(b.1 - a.1));
        let len = (dx * dx + dy * dy).sqrt();
        let mut t = 0.0;
        while t < len {
            let step = left.min(len - t);
            let p0 = (a.0 as f64 + dx * t / len, a.1 as f64 + dy * t / len);
            let t1 = t + step;
            let p1 = (a.0 as f64 + dx * t1 / len, a.1 as f64 + dy * t1 / len);
            if k % 2 == 0 {
                if cur.is_empty() {
                    cur.push((p0.0.round() as i32, p0.1.round() as i32));
                }
                cur.push((p1.0.round() as i32, p1.1.round() as i32));
            }
            left -= step;
            t = t1;
            if left <= 1e-9 {
                if k % 2 == 0 && !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                k = (k + 1) % pattern.len();
                left = pattern[k];
            }
        }
    }
    if cur.len() > 1 {
        out.push(cur);
    }
    out
}

fn draw_polyline<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    pts: &[Px],
    color: RGBColor,
    width: u32,
    dash: Dash,
) -> anyhow::Result<()> {
    for piece in dash_pieces(pts, dash) {
        area.draw(&PathElement::new(piece, color.stroke_width(width)))
            .map_err(err)?;
    }
    Ok(())
}

/// A halo: the line wide and pale, its markers (squares) at each point, to lie under the
/// line it coincides with.
fn draw_halo<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    pts: &[Px],
    color: RGBColor,
    dash: Dash,
) -> anyhow::Result<()> {
    for piece in dash_pieces(pts, dash) {
        area.draw(&PathElement::new(piece, color.mix(0.28).stroke_width(9)))
            .map_err(err)?;
    }
    for &(x, y) in pts {
        area.draw(&Rectangle::new(
            [(x - 7, y - 7), (x + 7, y + 7)],
            color.mix(0.28).filled(),
        ))
        .map_err(err)?;
    }
    Ok(())
}

fn marker_points(m: Marker, (x, y): Px, r: i32) -> Vec<Px> {
    match m {
        Marker::Circle => Vec::new(),
        Marker::Triangle => vec![(x, y - r - 1), (x + r + 1, y + r), (x - r - 1, y + r)],
        Marker::TriangleDown => vec![(x, y + r + 1), (x + r + 1, y - r), (x - r - 1, y - r)],
        Marker::Square => vec![
            (x - r, y - r),
            (x + r, y - r),
            (x + r, y + r),
            (x - r, y + r),
        ],
        Marker::Diamond => vec![
            (x, y - r - 2),
            (x + r + 2, y),
            (x, y + r + 2),
            (x - r - 2, y),
        ],
    }
}

fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    m: Marker,
    at: Px,
    r: i32,
    color: RGBColor,
    hollow: bool,
    stroke: u32,
) -> anyhow::Result<()> {
    if m == Marker::Circle {
        let style = if hollow {
            color.stroke_width(stroke)
        } else {
            color.filled()
        };
        if hollow {
            area.draw(&Circle::new(at, r, WHITE.filled()))
                .map_err(err)?;
        }
        return area.draw(&Circle::new(at, r, style)).map_err(err);
    }
    let pts = marker_points(m, at, r);
    if hollow {
        area.draw(&Polygon::new(pts.clone(), WHITE.filled()))
            .map_err(err)?;
        let mut closed = pts.clone();
        closed.push(pts[0]);
        area.draw(&PathElement::new(closed, color.stroke_width(stroke)))
            .map_err(err)
    } else {
        area.draw(&Polygon::new(pts, color.filled())).map_err(err)
    }
}

/// The pixel rectangle of a panel's plotting area.
#[derive(Clone, Copy)]
struct Plot {
    x0: i32,
    y0: i32,
    x1: i32,
    y1: i32,
}

impl Plot {
    fn px(&self, sx: &Scale, x: f64) -> i32 {
        self.x0 + (sx.frac(x) * f64::from(self.x1 - self.x0)).round() as i32
    }
    fn py(&self, sy: &Scale, y: f64) -> i32 {
        self.y1 - (sy.frac(y) * f64::from(self.y1 - self.y0)).round() as i32
    }
}

fn draw_frame<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &Plot,
    sy: &Scale,
    y_label: &str,
) -> anyhow::Result<()> {
    let grid = RGBColor(225, 225, 225);
    for t in sy.ticks() {
        let y = p.py(sy, t);
        area.draw(&PathElement::new(
            vec![(p.x0, y), (p.x1, y)],
            grid.stroke_width(1),
        ))
        .map_err(err)?;
        area.draw(&PathElement::new(
            vec![(p.x0 - 5, y), (p.x0, y)],
            BLACK.stroke_width(1),
        ))
        .map_err(err)?;
        draw_text(
            area,
            &fmt_num(t),
            (p.x0 - 8, y),
            TICK_FONT,
            HPos::Right,
            VPos::Center,
        )?;
    }
    area.draw(&Rectangle::new(
        [(p.x0, p.y0), (p.x1, p.y1)],
        BLACK.stroke_width(1),
    ))
    .map_err(err)?;
    // The y label, rotated, wrapped to the panel's height.
    let lines = wrap(area, y_label, LABEL_FONT, p.y1 - p.y0);
    let n = lines.len() as i32;
    for (i, l) in lines.iter().enumerate() {
        let x = p.x0 - 62 - (n - 1 - i as i32) * 22;
        area.draw(&Text::new(
            l.clone(),
            (x, (p.y0 + p.y1) / 2),
            font(LABEL_FONT)
                .transform(FontTransform::Rotate270)
                .pos(Pos::new(HPos::Center, VPos::Center)),
        ))
        .map_err(err)?;
    }
    Ok(())
}

fn draw_unity<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &Plot,
    sy: &Scale,
) -> anyhow::Result<()> {
    if sy.lo < 1.0 && sy.hi > 1.0 {
        let y = p.py(sy, 1.0);
        draw_polyline(
            area,
            &[(p.x0, y), (p.x1, y)],
            RGBColor(90, 90, 90),
            2,
            Dash::Dashed,
        )?;
    }
    Ok(())
}

/// The rectangles text already covers in a panel: a new label goes to the first of its
/// candidate places that overlaps none of them.
#[derive(Default)]
struct Taken(Vec<(i32, i32, i32, i32)>);

impl Taken {
    fn overlaps(&self, r: (i32, i32, i32, i32)) -> bool {
        self.0
            .iter()
            .any(|t| r.0 < t.2 && t.0 < r.2 && r.1 < t.3 && t.1 < r.3)
    }

    /// The first candidate top-left corner where a `w` x `h` box is free (else the first
    /// candidate), taken.
    fn place(&mut self, w: i32, h: i32, candidates: &[Px]) -> Px {
        let free = candidates
            .iter()
            .copied()
            .find(|&(x, y)| !self.overlaps((x, y, x + w, y + h)));
        let (x, y) = free.or(candidates.first().copied()).unwrap_or((0, 0));
        self.0.push((x, y, x + w, y + h));
        (x, y)
    }
}

const NOTE_FONT: f64 = TICK_FONT - 3.0;

/// Draws `text` at the first free place of `candidates` (top-left corners).
fn draw_label<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    taken: &mut Taken,
    text: &str,
    candidates: &[Px],
) -> anyhow::Result<()> {
    let w = text_w(area, text, NOTE_FONT);
    let h = NOTE_FONT as i32 + 2;
    let at = taken.place(w, h, candidates);
    draw_text(area, text, at, NOTE_FONT, HPos::Left, VPos::Top)
}

fn draw_paper_mark<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &Plot,
    at_x: i32,
    sy: &Scale,
    m: &PaperMark,
    taken: &mut Taken,
) -> anyhow::Result<()> {
    let c = m.color.rgb();
    match (m.kind, m.y) {
        (MarkKind::AtX, y) => {
            draw_polyline(area, &[(at_x, p.y0), (at_x, p.y1)], c, 2, Dash::Dotted)?;
            let text = format!("paper: {}", m.label);
            let w = text_w(area, &text, NOTE_FONT);
            // Right of the line, else left of it; lower down while the place is taken.
            let x = if at_x + 4 + w <= p.x1 {
                at_x + 4
            } else {
                at_x - 4 - w
            };
            let candidates: Vec<Px> = (0..12).map(|k| (x, p.y0 + 4 + k * 18)).collect();
            draw_label(area, taken, &text, &candidates)?;
            if let Some(y) = y.filter(|y| sy.lo < *y && *y < sy.hi) {
                draw_marker(area, Marker::Diamond, (at_x, p.py(sy, y)), 7, c, true, 3)?;
            }
        }
        (kind, Some(y)) if (!sy.log || y > 0.0) => {
            let marker = match kind {
                MarkKind::AtLeast => Marker::Triangle,
                MarkKind::AtMost => Marker::TriangleDown,
                _ => Marker::Diamond,
            };
            draw_marker(area, marker, (at_x, p.py(sy, y)), 8, c, true, 3)?;
        }
        _ => {}
    }
    Ok(())
}

fn draw_line_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &Plot,
    lp: &LinePanel,
) -> anyhow::Result<()> {
    let xs = lp.lines.iter().flat_map(|l| l.pts.iter().map(|p| p.x));
    let mut xv: Vec<f64> = xs.clone().filter(|x| !lp.log_x || *x > 0.0).collect();
    xv.sort_by(f64::total_cmp);
    xv.dedup();
    let sx = {
        let mut s = Scale::fit(xs.chain(lp.paper.iter().map(|m| m.x)), lp.log_x, false);
        if !lp.log_x {
            let span = s.hi - s.lo;
            s.lo -= span * 0.02;
            s.hi += span * 0.02;
        }
        s
    };
    let ys = lp
        .lines
        .iter()
        .flat_map(|l| l.pts.iter().flat_map(|p| [p.y, p.lo, p.hi]))
        .chain(lp.paper.iter().filter_map(|m| m.y))
        .chain(lp.unity.then_some(1.0));
    let sy = Scale::fit(ys, lp.log_y, true);
    draw_frame(area, p, &sy, &lp.y_label)?;
    // x ticks: at the measured x values when there are few, else 1-2-5 / decades; a
    // label that would overlap the previous one is left out.
    let ticks = if (2..=12).contains(&xv.len()) {
        xv.clone()
    } else {
        sx.ticks()
    };
    let mut last_right = i32::MIN;
    for t in ticks.iter().filter(|t| **t >= sx.lo && **t <= sx.hi) {
        let x = p.px(&sx, *t);
        let s = fmt_num(*t);
        let w = text_w(area, &s, TICK_FONT);
        area.draw(&PathElement::new(
            vec![(x, p.y1), (x, p.y1 + 5)],
            BLACK.stroke_width(1),
        ))
        .map_err(err)?;
        if x - w / 2 > last_right + 6 {
            draw_text(area, &s, (x, p.y1 + 8), TICK_FONT, HPos::Center, VPos::Top)?;
            last_right = x + w / 2;
        }
    }
    let xl = wrap(area, &lp.x_label, LABEL_FONT, p.x1 - p.x0);
    for (i, l) in xl.iter().enumerate() {
        draw_text(
            area,
            l,
            ((p.x0 + p.x1) / 2, p.y1 + 34 + 21 * i as i32),
            LABEL_FONT,
            HPos::Center,
            VPos::Top,
        )?;
    }
    if lp.unity {
        draw_unity(area, p, &sy)?;
    }
    let ok = |pt: &Pt| (!lp.log_x || pt.x > 0.0) && (!lp.log_y || pt.y > 0.0) && pt.y.is_finite();
    // Halos (the best CPU) first, under the lines they coincide with.
    let halos = lp.lines.iter().filter(|l| l.style.halo);
    for l in halos.chain(lp.lines.iter().filter(|l| !l.style.halo)) {
        let c = l.style.color.rgb();
        let pix: Vec<Px> = l
            .pts
            .iter()
            .filter(|pt| ok(pt))
            .map(|pt| (p.px(&sx, pt.x), p.py(&sy, pt.y)))
            .collect();
        if l.style.halo {
            draw_halo(area, &pix, c, l.style.dash)?;
            continue;
        }
        let width = if l.style.hollow { 2 } else { 3 };
        draw_polyline(area, &pix, c, width, l.style.dash)?;
        for pt in l.pts.iter().filter(|pt| ok(pt)) {
            let x = p.px(&sx, pt.x);
            let (lo, hi) = (pt.lo.max(sy.lo), pt.hi.min(sy.hi));
            if hi > lo && (!lp.log_y || lo > 0.0) {
                let (ya, yb) = (p.py(&sy, lo), p.py(&sy, hi));
                if ya - yb >= 2 {
                    area.draw(&PathElement::new(vec![(x, ya), (x, yb)], c.stroke_width(2)))
                        .map_err(err)?;
                    for y in [ya, yb] {
                        area.draw(&PathElement::new(
                            vec![(x - 4, y), (x + 4, y)],
                            c.stroke_width(2),
                        ))
                        .map_err(err)?;
                    }
                }
            }
            draw_marker(
                area,
                l.style.marker,
                (x, p.py(&sy, pt.y)),
                5,
                c,
                l.style.hollow,
                2,
            )?;
        }
    }
    let mut taken = Taken::default();
    for m in &lp.paper {
        if (!lp.log_x || m.x > 0.0) && m.x >= sx.lo && m.x <= sx.hi {
            draw_paper_mark(area, p, p.px(&sx, m.x), &sy, m, &mut taken)?;
        }
    }
    Ok(())
}

fn draw_bar_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    p: &Plot,
    bp: &BarPanel,
) -> anyhow::Result<()> {
    let ys = bp
        .groups
        .iter()
        .flat_map(|g| {
            g.1.iter()
                .flat_map(|b| [b.mean, b.lo, b.hi])
                .chain(g.2.iter().filter_map(|m| m.y))
                .collect::<Vec<_>>()
        })
        .chain(bp.unity.then_some(1.0));
    // A log axis only where the bars span more than a factor of 20: short bars on a log
    // axis read as nearly empty.
    let ys: Vec<f64> = ys.filter(|v| v.is_finite()).collect();
    let positive = ys.iter().copied().filter(|v| *v > 0.0);
    let lo = positive.clone().fold(f64::INFINITY, f64::min);
    let hi = positive.fold(f64::NEG_INFINITY, f64::max);
    let log = bp.log_y && hi / lo > 20.0;
    let sy = Scale::fit(ys.into_iter(), log, true);
    draw_frame(area, p, &sy, &bp.y_label)?;
    let n = bp.groups.len().max(1) as i32;
    let group_w = (p.x1 - p.x0) / n;
    let base = if sy.log { sy.lo } else { sy.lo.max(0.0) };
    let mut taken = Taken::default();
    for (gi, (label, bars, marks)) in bp.groups.iter().enumerate() {
        let gx0 = p.x0 + gi as i32 * group_w;
        let unmatched: Vec<&PaperMark> = marks
            .iter()
            .filter(|m| !bars.iter().any(|b| b.series == m.series))
            .collect();
        // A slot of its own for each paper series not measured here.
        let mut unmatched_series: Vec<&str> = Vec::new();
        for m in &unmatched {
            if !unmatched_series.contains(&m.series.as_str()) {
                unmatched_series.push(&m.series);
            }
        }
        let slots = (bars.len() + unmatched_series.len()).max(1) as i32;
        let inner = group_w * 4 / 5;
        let bw = (inner / slots).min(70);
        let start = gx0 + (group_w - bw * slots) / 2;
        for (bi, b) in bars.iter().enumerate() {
            let c = b.style.color.rgb();
            let x0 = start + bi as i32 * bw + 2;
            let x1 = x0 + bw - 4;
            let cx = (x0 + x1) / 2;
            if b.mean > 0.0 || !sy.log {
                let top = p.py(&sy, b.mean.max(base).min(sy.hi));
                let bottom = p.py(&sy, base);
                let fill = if b.style.hollow {
                    c.mix(0.35)
                } else {
                    c.mix(0.9)
                };
                area.draw(&Rectangle::new([(x0, top), (x1, bottom)], fill.filled()))
                    .map_err(err)?;
                area.draw(&Rectangle::new(
                    [(x0, top), (x1, bottom)],
                    c.stroke_width(1),
                ))
                .map_err(err)?;
            }
            let (lo, hi) = (b.lo.max(sy.lo), b.hi.min(sy.hi));
            if hi > lo && (!sy.log || lo > 0.0) {
                let (ya, yb) = (p.py(&sy, lo), p.py(&sy, hi));
                if ya - yb >= 2 {
                    area.draw(&PathElement::new(
                        vec![(cx, ya), (cx, yb)],
                        BLACK.stroke_width(2),
                    ))
                    .map_err(err)?;
                    for y in [ya, yb] {
                        area.draw(&PathElement::new(
                            vec![(cx - 4, y), (cx + 4, y)],
                            BLACK.stroke_width(2),
                        ))
                        .map_err(err)?;
                    }
                }
            }
            for m in marks.iter().filter(|m| m.series == b.series) {
                draw_paper_mark(area, p, cx, &sy, m, &mut taken)?;
            }
        }
        // Paper numbers of series not measured here (e.g. BETree, or the GPU's in a run
        // without one): each series in a slot of its own, named where the name finds room.
        let slot_x = |m: &PaperMark| {
            let slot = unmatched_series
                .iter()
                .position(|s| *s == m.series)
                .unwrap_or(0);
            start + (bars.len() + slot) as i32 * bw + bw / 2
        };
        let at_y = |m: &PaperMark| m.y.filter(|y| !sy.log || *y > 0.0).map(|y| p.py(&sy, y));
        for m in &unmatched {
            let cx = slot_x(m);
            draw_paper_mark(area, p, cx, &sy, m, &mut taken)?;
            // The marker's own box, so that no name covers it.
            if let Some(my) = at_y(m) {
                taken.0.push((cx - 10, my - 10, cx + 10, my + 10));
            }
        }
        for m in &unmatched {
            let cx = slot_x(m);
            if let Some(my) = at_y(m) {
                let w = text_w(area, &m.series, NOTE_FONT);
                let h = NOTE_FONT as i32 + 2;
                let mut candidates = Vec::new();
                for k in 0..8 {
                    candidates.push((cx - w / 2, my - 14 - h - k * (h + 2)));
                    candidates.push((cx - w / 2, my + 14 + k * (h + 2)));
                }
                // Inside the frame.
                candidates.retain(|&(_, y)| y >= p.y0 + 2 && y + h <= p.y1 - 2);
                draw_label(area, &mut taken, &m.series, &candidates)?;
            }
        }
        for (li, l) in wrap(area, label, TICK_FONT, group_w - 6).iter().enumerate() {
            draw_text(
                area,
                l,
                (gx0 + group_w / 2, p.y1 + 8 + li as i32 * 20),
                TICK_FONT,
                HPos::Center,
                VPos::Top,
            )?;
        }
    }
    if bp.unity {
        draw_unity(area, p, &sy)?;
    }
    Ok(())
}

/// Legend rows: (label, what to draw).
enum LegendGlyph {
    Series(Style),
    /// An engine of a folded legend: a bar of its colour.
    Swatch(Style),
    Paper(Marker),
    Unity,
    Whisker,
    /// Words alone.
    Text,
}

/// The whiskers' caption, true to the seeds behind the points.
fn seeds_caption(seeds: (usize, usize)) -> (String, LegendGlyph) {
    match seeds {
        (_, 0 | 1) => ("one seed: no min-max".into(), LegendGlyph::Text),
        (lo, hi) if lo == hi => (format!("min-max over {hi} seeds"), LegendGlyph::Whisker),
        (lo, hi) => (
            format!("min-max over {lo}-{hi} seeds"),
            LegendGlyph::Whisker,
        ),
    }
}

fn legend_rows(fig: &Figure) -> Vec<(String, LegendGlyph)> {
    let mut rows: Vec<(String, LegendGlyph)> = fig
        .legend
        .iter()
        .map(|(s, key)| {
            let glyph = match key {
                Key::Series(st) | Key::Factor(st) => LegendGlyph::Series(st.clone()),
                Key::Engine(st) => LegendGlyph::Swatch(st.clone()),
            };
            (s.clone(), glyph)
        })
        .collect();
    if !fig.panels.is_empty() {
        rows.push(seeds_caption(fig.seeds));
    }
    let marks: Vec<&PaperMark> = fig.paper_marks().collect();
    if marks
        .iter()
        .any(|m| m.kind == MarkKind::Exact || m.kind == MarkKind::AtX)
    {
        rows.push((
            "paper (their GPU)".into(),
            LegendGlyph::Paper(Marker::Diamond),
        ));
    }
    if marks.iter().any(|m| m.kind == MarkKind::AtLeast) {
        rows.push((
            "paper: at least".into(),
            LegendGlyph::Paper(Marker::Triangle),
        ));
    }
    if marks.iter().any(|m| m.kind == MarkKind::AtMost) {
        rows.push((
            "paper: at most".into(),
            LegendGlyph::Paper(Marker::TriangleDown),
        ));
    }
    if fig.has_unity() {
        rows.push(("parity (1)".into(), LegendGlyph::Unity));
    }
    rows
}

/// Legend rows per column: as many as a panel's height holds.
const LEGEND_ROWS_PER_COLUMN: usize = ((PANEL_H - 40) / LEGEND_ROW) as usize;

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    rows: &[(String, LegendGlyph)],
    x: i32,
    y: i32,
    column_w: i32,
) -> anyhow::Result<()> {
    for (i, (label, glyph)) in rows.iter().enumerate() {
        let (col, row) = (
            (i / LEGEND_ROWS_PER_COLUMN) as i32,
            (i % LEGEND_ROWS_PER_COLUMN) as i32,
        );
        let cy = y + row * LEGEND_ROW + LEGEND_ROW / 2;
        let (a, b) = (x + col * column_w, x + col * column_w + 44);
        match glyph {
            LegendGlyph::Series(st) if st.halo => {
                draw_halo(area, &[(a, cy), (b, cy)], st.color.rgb(), st.dash)?;
            }
            LegendGlyph::Series(st) => {
                let c = st.color.rgb();
                let width = if st.hollow { 2 } else { 3 };
                draw_polyline(area, &[(a, cy), (b, cy)], c, width, st.dash)?;
                draw_marker(area, st.marker, ((a + b) / 2, cy), 5, c, st.hollow, 2)?;
            }
            LegendGlyph::Swatch(st) if st.halo => {
                draw_halo(area, &[(a, cy), (b, cy)], st.color.rgb(), Dash::Solid)?;
            }
            LegendGlyph::Swatch(st) => {
                let c = st.color.rgb();
                let fill = if st.hollow { c.mix(0.35) } else { c.mix(0.9) };
                area.draw(&Rectangle::new([(a, cy - 6), (b, cy + 6)], fill.filled()))
                    .map_err(err)?;
            }
            LegendGlyph::Paper(m) => {
                draw_marker(area, *m, ((a + b) / 2, cy), 7, BLACK, true, 3)?;
            }
            LegendGlyph::Unity => {
                draw_polyline(
                    area,
                    &[(a, cy), (b, cy)],
                    RGBColor(90, 90, 90),
                    2,
                    Dash::Dashed,
                )?;
            }
            LegendGlyph::Whisker => {
                let m = (a + b) / 2;
                for (p0, p1) in [
                    ((m, cy - 9), (m, cy + 9)),
                    ((m - 4, cy - 9), (m + 4, cy - 9)),
                    ((m - 4, cy + 9), (m + 4, cy + 9)),
                ] {
                    area.draw(&PathElement::new(vec![p0, p1], BLACK.stroke_width(2)))
                        .map_err(err)?;
                }
            }
            LegendGlyph::Text => {}
        }
        let at = if matches!(glyph, LegendGlyph::Text) {
            a
        } else {
            b + 10
        };
        draw_text(area, label, (at, cy), LEGEND_FONT, HPos::Left, VPos::Center)?;
    }
    Ok(())
}

const NOTE_LINE: i32 = 22;

/// The laid-out figure: its size, the title's and the notes' lines, the legend's
/// column width, and where the panels start.
struct Sheet {
    w: u32,
    h: u32,
    title: Vec<String>,
    notes: Vec<String>,
    top: i32,
    legend_column_w: i32,
}

/// The figure's size in pixels (it depends on text measured on a scratch area).
fn measure(fig: &Figure) -> anyhow::Result<Sheet> {
    // A scratch bitmap to measure text with the same font.
    let mut buf = vec![0u8; 3 * 4 * 4];
    let scratch = BitMapBackend::with_buffer(&mut buf, (4, 4)).into_drawing_area();
    let rows = legend_rows(fig);
    let legend_column_w = rows
        .iter()
        .map(|(l, _)| text_w(&scratch, l, LEGEND_FONT))
        .max()
        .unwrap_or(0)
        + 44
        + 10
        + 30;
    let columns = rows.len().div_ceil(LEGEND_ROWS_PER_COLUMN).max(1) as i32;
    let n = fig.panels.len().max(1) as i32;
    let w = n * PANEL_W + columns * legend_column_w;
    let title = wrap(&scratch, &fig.title, TITLE_FONT, w - 40);
    let notes: Vec<String> = fig
        .notes
        .iter()
        .flat_map(|n| wrap(&scratch, n, LEGEND_FONT - 1.0, w - 60))
        .collect();
    let top = title.len() as i32 * 29 + 16 + notes.len() as i32 * NOTE_LINE;
    let legend_h = rows.len().min(LEGEND_ROWS_PER_COLUMN) as i32 * LEGEND_ROW + 40;
    let h = top + PANEL_H.max(legend_h);
    Ok(Sheet {
        w: w as u32,
        h: h as u32,
        title,
        notes,
        top,
        legend_column_w,
    })
}

fn render<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    fig: &Figure,
    sheet: &Sheet,
) -> anyhow::Result<()> {
    area.fill(&WHITE).map_err(err)?;
    let w = sheet.w as i32;
    for (i, l) in sheet.title.iter().enumerate() {
        draw_text(
            area,
            l,
            (w / 2, 10 + i as i32 * 29),
            TITLE_FONT,
            HPos::Center,
            VPos::Top,
        )?;
    }
    let notes_y = 10 + sheet.title.len() as i32 * 29 + 2;
    for (i, l) in sheet.notes.iter().enumerate() {
        area.draw(&Text::new(
            l.clone(),
            (w / 2, notes_y + i as i32 * NOTE_LINE),
            font(LEGEND_FONT - 1.0)
                .color(&RGBColor(150, 30, 30))
                .pos(Pos::new(HPos::Center, VPos::Top)),
        ))
        .map_err(err)?;
    }
    let top = sheet.top;
    for (i, panel) in fig.panels.iter().enumerate() {
        let ox = i as i32 * PANEL_W;
        let plot = Plot {
            x0: ox + 112,
            y0: top + 14,
            x1: ox + PANEL_W - 22,
            y1: top + PANEL_H - 92,
        };
        match panel {
            Panel::Lines(lp) => draw_line_panel(area, &plot, lp)?,
            Panel::Bars(bp) => draw_bar_panel(area, &plot, bp)?,
        }
    }
    if fig.panels.is_empty() {
        draw_text(
            area,
            "nothing measured to draw (see the notes above)",
            (PANEL_W / 2, top + PANEL_H / 2),
            LABEL_FONT,
            HPos::Center,
            VPos::Center,
        )?;
    }
    let n = fig.panels.len().max(1) as i32;
    draw_legend(
        area,
        &legend_rows(fig),
        n * PANEL_W + 10,
        top + 10,
        sheet.legend_column_w,
    )?;
    area.present().map_err(err)?;
    Ok(())
}

/// Writes the figure as `<stem>.png` and `<stem>.svg`; returns both paths.
pub fn write(fig: &Figure, png: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    register_font();
    let sheet = measure(fig)?;
    if let Some(dir) = png.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let png = png.with_extension("png");
    let svg = png.with_extension("svg");
    {
        let area = BitMapBackend::new(&png, (sheet.w, sheet.h)).into_drawing_area();
        render(&area, fig, &sheet)?;
    }
    {
        let area = SVGBackend::new(&svg, (sheet.w, sheet.h)).into_drawing_area();
        render(&area, fig, &sheet)?;
    }
    Ok((png, svg))
}

/// Draws an experiment's figure from its rows and its paper's numbers, as `<stem>.png`
/// and `<stem>.svg`.
pub fn plot(exp: &Experiment, rows: &[Row], paper: &[PaperRow], png: &Path) -> anyhow::Result<()> {
    write(&figure(exp, rows, paper), png).map(|_| ())
}

/// Redraws the figure of every experiment in `exps` that has a CSV under
/// `dir` (`<dir>/<paper>/<id>.csv` -> `.png` and `.svg` beside it), with the paper data
/// of `<dir>/papers/` (or the built-in copy). Needs no GPU. Returns the files written.
pub fn redraw(exps: &[&Experiment], dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    redraw_with(exps, dir, dir)
}

/// [`redraw`] of `dir` and of every recorded run nested one level below it (such as
/// `results/regress/`), all with the paper data of `dir`: so that one `harness plot`
/// restores every figure under results/.
pub fn redraw_tree(exps: &[&Experiment], dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = redraw(exps, dir)?;
    let mut subdirs: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .filter(|p| {
                crate::experiment::Paper::ALL
                    .iter()
                    .any(|paper| p.join(paper.name()).is_dir())
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    subdirs.sort();
    for sub in subdirs {
        written.extend(redraw_with(exps, &sub, dir)?);
    }
    Ok(written)
}

fn redraw_with(exps: &[&Experiment], dir: &Path, papers: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for exp in exps {
        let csv = crate::results::csv_path(dir, exp.paper.name(), exp.id);
        if !csv.exists() {
            continue;
        }
        let rows = crate::results::read_csv(&csv)?;
        if rows.is_empty() {
            continue;
        }
        let paper = crate::results::read_papers(papers, exp.paper.name())?;
        let (png, svg) = write(&figure(exp, &rows, &paper), &csv)
            .map_err(|e| e.context(format!("plotting {}", csv.display())))?;
        written.push(png);
        written.push(svg);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_names_split_into_engine_and_second_factor() {
        let s = |n: &str| split_series(n);
        assert_eq!(s("gpu L=5"), ("gpu".into(), "L=5".into()));
        assert_eq!(
            s("gpu-block vs yfilter-mc"),
            ("gpu-block".into(), "vs yfilter-mc".into())
        );
        assert_eq!(
            s("gpu vs yfilter p=10%"),
            ("gpu".into(), "vs yfilter p=10%".into())
        );
        assert_eq!(
            s("gpu grid batched"),
            ("gpu grid batched".into(), "".into())
        );
        assert_eq!(
            s("gpu persistent p99.9"),
            ("gpu persistent".into(), "p99.9".into())
        );
        assert_eq!(s("sff all cores"), ("sff all cores".into(), "".into()));
        assert_eq!(
            s("gpu persistent events/s"),
            ("gpu persistent".into(), "events/s".into())
        );
        assert_eq!(
            s("gpu persistent p99 us"),
            ("gpu persistent".into(), "p99 us".into())
        );
    }

    #[test]
    fn emulator_twins_share_their_gpu_engines_colour_and_unknown_engines_get_a_stable_one() {
        assert_eq!(engine_color("emu"), engine_color("gpu"));
        assert_eq!(engine_color("emu-seg"), engine_color("gpu-seg"));
        assert_eq!(engine_color("emu batched"), engine_color("gpu batched"));
        assert_eq!(engine_color("gpu copy in"), engine_color("copy in"));
        assert_eq!(
            engine_color("brand-new engine"),
            engine_color("brand-new engine")
        );
        assert_ne!(engine_color("gpu"), engine_color("gpu batched"));
        assert_ne!(engine_color("gpu persistent"), engine_color("gpu"));
    }

    #[test]
    fn engines_that_share_a_figure_have_distinct_colours() {
        let figures: [&[&str]; 5] = [
            &[
                "gpu",
                "gpu batched",
                "gpu grouped",
                "gpu inline",
                "gpu latency",
                "gpu persistent",
                "sff",
                "sff all cores",
                "index",
                "index all cores",
                BEST_CPU,
            ],
            &[
                "gpu",
                "gpu batched",
                "gpu copies",
                "gpu grid",
                "gpu grid batched",
                "gpu grid latency",
                "gpu latency",
                "gpu persistent",
                "rtree",
                "sff",
            ],
            &["gpu", "gpu-block", "gpu-seg", "yfilter", "yfilter-mc"],
            &[
                "brute",
                "brute-par",
                "gpu-grid",
                "gpu-region",
                "gpu-region-sliced",
                "gpu-sweep",
                "gpu-sweep+upload",
                "grid",
                "grid-par",
                "sort",
                "sort-par",
                "sbm",
                "sbm-par",
                "itm",
                "itm-par",
                BEST_CPU,
            ],
            &[
                "copy in",
                "Loc",
                "Cont",
                "Zip",
                "copy out",
                "total",
                "latency kernel",
            ],
        ];
        for engines in figures {
            for (i, a) in engines.iter().enumerate() {
                for b in &engines[i + 1..] {
                    assert_ne!(engine_color(a), engine_color(b), "{a} and {b}");
                }
            }
        }
    }

    #[test]
    fn second_factor_values_take_dash_styles_in_natural_order() {
        let series: Vec<String> = ["gpu L=10", "gpu L=5", "yfilter L=15", "yfilter L=5"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let st = styles(&series);
        let dash = |n: &str| st.iter().find(|(s, _)| s == n).unwrap().1.dash;
        assert_eq!(dash("gpu L=5"), Dash::Solid);
        assert_eq!(dash("yfilter L=5"), Dash::Solid);
        assert_eq!(dash("gpu L=10"), Dash::Dashed);
        assert_eq!(dash("yfilter L=15"), Dash::Dotted);
    }

    #[test]
    fn axis_numbers_read_1_10_100_1k_10k_1m() {
        let f: Vec<String> = [
            1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6, 2.5e3, 32768.0, 262144.0, 0.05, 0.001, 1048576.0,
            7.19,
        ]
        .iter()
        .map(|v| fmt_num(*v))
        .collect();
        assert_eq!(
            f,
            [
                "1", "10", "100", "1k", "10k", "100k", "1M", "2.5k", "32768", "262k", "0.05",
                "0.001", "1.05M", "7.19"
            ]
        );
    }

    #[test]
    fn numbered_x_labels_are_tables_and_others_are_lines() {
        assert_eq!(
            categories("row (1: time, 2: deployment, 3: size, 4: Zipf time)").unwrap(),
            [
                (1.0, "time".into()),
                (2.0, "deployment".into()),
                (3.0, "size".into()),
                (4.0, "Zipf time".into())
            ]
        );
        assert_eq!(
            categories("factor (1 doc size 64k->1M, 2 queries 64->512)").unwrap()[1],
            (2.0, "queries 64->512".to_string())
        );
        assert!(categories("subscriptions (10 filters each)").is_none());
        assert!(categories("regions (half publications)").is_none());
        assert!(categories("numerical constraints (%)").is_none());
    }

    #[test]
    fn a_scaling_figure_draws_rates_and_speedups_on_panels_of_their_own() {
        // DDM's scaling records matchings/s and the speedup over one GPU side by side:
        // one panel each (the speedups, ~1-5, were flat at 0 on the rates' axis), and
        // the speedup panel carries the parity line.
        let exp = crate::runner::all_experiments()
            .into_iter()
            .find(|e| e.paper.name() == "ddm" && e.id == "scaling")
            .expect("ddm's scaling experiment");
        let mut rows = Vec::new();
        for k in [1.0, 2.0, 4.0] {
            let rate = "gpu multi bisect by-slab count regions=1M matchings/s";
            let speedup = "gpu multi bisect by-slab count regions=1M speedup";
            rows.push(fixture_row("ddm", "scaling", rate, k, 1500.0 * k));
            rows.push(fixture_row("ddm", "scaling", speedup, k, k));
        }
        let fig = figure(&exp, &rows, &[]);
        let panels: Vec<&LinePanel> = fig
            .panels
            .iter()
            .map(|p| match p {
                Panel::Lines(l) => l,
                _ => panic!("lines expected"),
            })
            .collect();
        assert_eq!(panels.len(), 2);
        assert!(panels[0]
            .lines
            .iter()
            .all(|l| l.series.ends_with("matchings/s")));
        assert!(!panels[0].unity);
        assert!(panels[1]
            .lines
            .iter()
            .all(|l| l.series.ends_with("speedup")));
        assert!(panels[1].unity);
        assert_eq!(panels[1].y_label, "speedup over one GPU (x)");
    }

    fn fixture_row(paper: &str, exp: &str, series: &str, x: f64, mean: f64) -> Row {
        Row {
            paper: paper.into(),
            experiment: exp.into(),
            series: series.into(),
            x,
            mean,
            min: mean * 0.9,
            max: mean * 1.1,
            n: 3,
            unit: "u".into(),
            device: "fixture".into(),
            ..Row::default()
        }
    }

    /// Fixture CSVs for three experiments of different layouts: lines with a speedup
    /// panel (ccm fig8), a table (ccm table2), lines with a second factor and emulator
    /// twins (xml fig7).
    fn fixture_dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("harness-plot-{tag}-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        let mut fig8 = Vec::new();
        for x in [250.0, 1000.0, 10000.0, 250000.0] {
            fig8.push(fixture_row("ccm", "fig8", "sff", x, x / 1e4));
            fig8.push(fixture_row("ccm", "fig8", "gpu", x, 0.03));
            fig8.push(fixture_row("ccm", "fig8", "gpu batched", x, 0.0002));
            fig8.push(fixture_row("ccm", "fig8", BEST_CPU, x, x / 1e5));
        }
        let mut table2 = Vec::new();
        for (x, v) in [(1.0, 0.1), (2.0, 400.0), (3.0, 30.0), (4.0, 0.4)] {
            table2.push(fixture_row("ccm", "table2", "sff", x, v));
            table2.push(fixture_row("ccm", "table2", "gpu", x, v / 4.0));
            if x == 1.0 || x == 4.0 {
                table2.push(fixture_row("ccm", "table2", BEST_CPU, x, v / 2.0));
            }
        }
        let mut fig7 = Vec::new();
        for x in [32.0, 256.0, 2048.0] {
            for l in ["L=5", "L=10"] {
                fig7.push(fixture_row(
                    "xml",
                    "fig7",
                    &format!("yfilter {l}"),
                    x,
                    100.0 / x,
                ));
                fig7.push(fixture_row("xml", "fig7", &format!("gpu {l}"), x, 800.0));
                fig7.push(fixture_row("xml", "fig7", &format!("emu {l}"), x, 0.5));
            }
        }
        for (id, rows) in [("fig8", &fig8), ("table2", &table2)] {
            crate::results::write_csv(&crate::results::csv_path(&dir, "ccm", id), rows).unwrap();
        }
        crate::results::write_csv(&crate::results::csv_path(&dir, "xml", "fig7"), &fig7).unwrap();
        dir
    }

    fn fixture_experiments() -> Vec<Experiment> {
        crate::runner::all_experiments()
            .into_iter()
            .filter(|e| {
                matches!(
                    (e.paper.name(), e.id),
                    ("ccm", "fig8") | ("ccm", "table2") | ("xml", "fig7")
                )
            })
            .collect()
    }

    #[test]
    fn redraw_renders_fixture_csvs_to_png_and_svg_in_the_layout_the_metadata_picks() {
        let dir = fixture_dir("render");
        let exps = fixture_experiments();
        let refs: Vec<&Experiment> = exps.iter().collect();
        let files = redraw(&refs, &dir).unwrap();
        assert_eq!(files.len(), 6, "{files:?}");
        for f in &files {
            let bytes = std::fs::metadata(f).unwrap().len();
            assert!(bytes > 5_000, "{} has {bytes} bytes", f.display());
        }
        let table2 = exps.iter().find(|e| e.id == "table2").unwrap();
        assert!(matches!(layout(table2, &[]), Layout::Bars(_)));
        let rows =
            crate::results::read_csv(&crate::results::csv_path(&dir, "ccm", "table2")).unwrap();
        let fig = figure(table2, &rows, &[]);
        // Table 2 mixes ms and MB: one panel per unit, and the speedup over the best CPU.
        assert_eq!(fig.panels.len(), 3);
        assert!(fig.panels.iter().all(|p| matches!(p, Panel::Bars(_))));
        let fig8 = exps.iter().find(|e| e.id == "fig8").unwrap();
        let rows =
            crate::results::read_csv(&crate::results::csv_path(&dir, "ccm", "fig8")).unwrap();
        let fig = figure(fig8, &rows, &[]);
        assert_eq!(
            fig.panels.len(),
            3,
            "values, speedup over sff, speedup over {BEST_CPU}"
        );
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn an_engine_has_the_same_colour_in_every_panel_of_every_figure() {
        let dir = fixture_dir("colour");
        let exps = fixture_experiments();
        let refs: Vec<&Experiment> = exps.iter().collect();
        let files = redraw(&refs, &dir).unwrap();
        let gpu = engine_color("gpu");
        let sff = engine_color("sff");
        for exp in &exps {
            let csv = crate::results::csv_path(&dir, exp.paper.name(), exp.id);
            let rows = crate::results::read_csv(&csv).unwrap();
            let fig = figure(exp, &rows, &[]);
            for (series, color) in fig.colors() {
                let engine = split_series(&series).0;
                if matches!(engine.as_str(), "gpu" | "emu") {
                    assert_eq!(color, gpu, "{} {series}", exp.id);
                }
                if engine == "sff" {
                    assert_eq!(color, sff, "{} {series}", exp.id);
                }
            }
        }
        // And in the files themselves: every SVG draws the gpu series in gpu's colour.
        for svg in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "svg"))
        {
            let text = std::fs::read_to_string(svg).unwrap();
            assert!(
                text.contains(&gpu.hex()),
                "{} lacks {}",
                svg.display(),
                gpu.hex()
            );
        }
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn paper_numbers_are_overlaid_on_the_panel_of_their_unit() {
        let dir = fixture_dir("paper");
        let exps = fixture_experiments();
        let fig8 = exps.iter().find(|e| e.id == "fig8").unwrap();
        let rows =
            crate::results::read_csv(&crate::results::csv_path(&dir, "ccm", "fig8")).unwrap();
        let paper = crate::results::read_papers(Path::new("/nonexistent"), "ccm").unwrap();
        let fig = figure(fig8, &rows, &paper);
        let Panel::Lines(values) = &fig.panels[0] else {
            panic!("lines")
        };
        let Panel::Lines(speed) = &fig.panels[1] else {
            panic!("lines")
        };
        // "below 0.05 ms" on the time panel; "overcomes 13x" and the crossover on the
        // speedup panel.
        assert!(values
            .paper
            .iter()
            .any(|m| m.kind == MarkKind::AtMost && m.y == Some(0.05)));
        assert!(speed
            .paper
            .iter()
            .any(|m| m.kind == MarkKind::AtLeast && m.y == Some(13.0)));
        assert!(speed
            .paper
            .iter()
            .any(|m| m.kind == MarkKind::AtX && m.x == 1000.0));
        assert!(speed.unity);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn best_cpu_rows_add_a_panel_of_each_gpu_series_speedup_over_it_with_parity_at_1() {
        let dir = fixture_dir("bestcpu");
        let exps = fixture_experiments();
        let fig8 = exps.iter().find(|e| e.id == "fig8").unwrap();
        let csv = crate::results::csv_path(&dir, "ccm", "fig8");
        let rows = crate::results::read_csv(&csv).unwrap();
        let fig = figure(fig8, &rows, &[]);
        let Panel::Lines(best) = &fig.panels[2] else {
            panic!("lines")
        };
        assert_eq!(best.y_label, format!("speedup over {BEST_CPU} (x)"));
        assert!(best.unity && best.log_y);
        // GPU series only, each its time divided into the best CPU's at the same x, with
        // the conservative min-max whisker.
        let names: Vec<&str> = best.lines.iter().map(|l| l.series.as_str()).collect();
        assert_eq!(names, ["gpu", "gpu batched"]);
        let gpu = &best.lines[0];
        assert_eq!(gpu.pts.len(), 4);
        let p = gpu.pts[3];
        assert_eq!(p.x, 250000.0);
        assert!((p.y - 2.5 / 0.03).abs() < 1e-9, "{p:?}");
        assert!(p.lo < p.y && p.y < p.hi, "{p:?}");
        // The best CPU is drawn dashed in its own near-black colour in the value panel.
        let Some((_, Key::Series(st))) = fig.legend.iter().find(|(s, _)| s == BEST_CPU) else {
            panic!("{BEST_CPU} in the legend")
        };
        assert_eq!(st.dash, Dash::Dashed);
        assert!(st.halo, "drawn under the engine it coincides with");
        assert_eq!(st.color, Rgb(17, 17, 17));
        // And the panel is in the file: its axis label, and the best CPU's colour.
        let (_, svg) = write(&fig, &csv).unwrap();
        let text = std::fs::read_to_string(svg).unwrap();
        assert!(text.contains("speedup over sff"), "baseline panel kept");
        assert!(
            text.contains("speedup over best CPU"),
            "best-CPU panel drawn"
        );
        assert!(text.contains(&engine_color(BEST_CPU).hex()));
        // Table 2: bars of the speedup over the best CPU in its rows (1 and 4).
        let table2 = exps.iter().find(|e| e.id == "table2").unwrap();
        let rows =
            crate::results::read_csv(&crate::results::csv_path(&dir, "ccm", "table2")).unwrap();
        let fig = figure(table2, &rows, &[]);
        let Some(Panel::Bars(bars)) = fig.panels.last() else {
            panic!("bars")
        };
        assert_eq!(bars.y_label, format!("speedup over {BEST_CPU} (x)"));
        let groups: Vec<&str> = bars.groups.iter().map(|g| g.0.as_str()).collect();
        assert_eq!(groups, ["time", "Zipf time"]);
        assert!(bars
            .groups
            .iter()
            .all(|g| g.1.len() == 1 && g.1[0].mean == 2.0));
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn emulator_series_have_a_panel_of_their_own_and_never_enter_a_speedup_panel() {
        let exps = fixture_experiments();
        let fig8 = exps.iter().find(|e| e.id == "fig8").unwrap();
        let mut rows = Vec::new();
        for x in [250.0, 1000.0] {
            rows.push(fixture_row("ccm", "fig8", "sff", x, 1.0));
            rows.push(fixture_row("ccm", "fig8", "sff all cores", x, 0.5));
            rows.push(fixture_row("ccm", "fig8", BEST_CPU, x, 0.4));
            rows.push(fixture_row("ccm", "fig8", "gpu", x, 0.01));
            for emu in ["emu", "emu batched", "emu index"] {
                rows.push(fixture_row("ccm", "fig8", emu, x, 100.0));
            }
        }
        let fig = figure(fig8, &rows, &[]);
        let mut speedup_panels = 0;
        for p in &fig.panels {
            let Panel::Lines(p) = p else { panic!("lines") };
            let names: Vec<&str> = p.lines.iter().map(|l| l.series.as_str()).collect();
            if p.y_label.contains("speedup") {
                speedup_panels += 1;
                assert!(
                    names.iter().all(|n| !n.starts_with("emu")),
                    "{}: {names:?}",
                    p.y_label
                );
                assert!(names.contains(&"gpu"), "{}: {names:?}", p.y_label);
            } else if p.y_label.starts_with("host emulator") {
                assert_eq!(names, ["emu", "emu batched", "emu index"]);
            } else {
                assert!(names.iter().all(|n| !n.starts_with("emu")), "{names:?}");
            }
        }
        assert_eq!(speedup_panels, 2, "over sff and over the best CPU");
        // A CPU-only run: the emulator alone draws no speedup panel over the best CPU.
        let rows: Vec<Row> = rows.into_iter().filter(|r| r.series != "gpu").collect();
        let fig = figure(fig8, &rows, &[]);
        let labels: Vec<String> = fig
            .panels
            .iter()
            .map(|p| match p {
                Panel::Lines(p) => p.y_label.clone(),
                Panel::Bars(p) => p.y_label.clone(),
            })
            .collect();
        assert!(!labels.iter().any(|l| l.contains(BEST_CPU)), "{labels:?}");
        // The table layout: no emulator bar over the best CPU.
        let table2 = exps.iter().find(|e| e.id == "table2").unwrap();
        let rows = vec![
            fixture_row("ccm", "table2", "sff", 1.0, 1.0),
            fixture_row("ccm", "table2", BEST_CPU, 1.0, 0.5),
            fixture_row("ccm", "table2", "emu index", 1.0, 90.0),
        ];
        let fig = figure(table2, &rows, &[]);
        assert!(fig.panels.iter().all(|p| match p {
            Panel::Bars(b) => !b.y_label.contains("speedup"),
            Panel::Lines(_) => true,
        }));
    }

    fn experiment(paper: &str, id: &str) -> Experiment {
        crate::runner::all_experiments()
            .into_iter()
            .find(|e| e.paper.name() == paper && e.id == id)
            .expect("a known experiment")
    }

    /// Rows of a run without a GPU: device `none`, quick sizes.
    fn no_gpu(mut rows: Vec<Row>) -> Vec<Row> {
        for r in &mut rows {
            r.device = "none".into();
            r.sizes = crate::results::QUICK.into();
        }
        rows
    }

    fn panel_labels(fig: &Figure) -> Vec<String> {
        fig.panels
            .iter()
            .map(|p| match p {
                Panel::Lines(p) => p.y_label.clone(),
                Panel::Bars(p) => p.y_label.clone(),
            })
            .collect()
    }

    #[test]
    fn a_run_without_a_gpu_says_so_under_the_title_and_a_gpu_run_does_not() {
        let exp = experiment("ddm", "fig5_7");
        let rows = vec![
            fixture_row("ddm", "fig5_7", "brute", 48.0, 1.0),
            fixture_row("ddm", "fig5_7", "emu-region", 48.0, 50.0),
        ];
        let fig = figure(&exp, &no_gpu(rows.clone()), &[]);
        let note = &fig.notes[0];
        assert!(
            note.starts_with("Run without a GPU at quick sizes"),
            "{note}"
        );
        assert!(note.contains("correctness runs, not speeds"), "{note}");
        let fig = figure(&exp, &rows, &[]);
        assert!(fig.notes.is_empty(), "{:?}", fig.notes);
    }

    #[test]
    fn paper_numbers_beyond_the_measured_x_are_notes_not_points_at_the_edge_of_the_axis() {
        // Quick sizes (48, 96 regions) against the paper's 150-200x at 32768.
        let exp = experiment("ddm", "fig5_7");
        let paper = crate::results::read_papers(Path::new("/nonexistent"), "ddm").unwrap();
        let mut rows = Vec::new();
        for x in [48.0, 96.0] {
            rows.push(fixture_row("ddm", "fig5_7", "brute", x, x / 10.0));
            rows.push(fixture_row("ddm", "fig5_7", "sort", x, x / 100.0));
            rows.push(fixture_row("ddm", "fig5_7", "emu-region", x, 50.0));
            rows.push(fixture_row("ddm", "fig5_7", "emu-grid", x, 60.0));
        }
        let fig = figure(&exp, &no_gpu(rows), &paper);
        assert_eq!(fig.paper_marks().count(), 0, "no point drawn off the axes");
        assert!(
            fig.notes.iter().any(|n| n
                == "paper (gpu-region vs brute, gpu-grid vs brute): 150-200x at 32768 regions"),
            "{:?}",
            fig.notes
        );
        // At the paper's sizes the same numbers are points on the speedup panel.
        let mut rows = Vec::new();
        for x in [16384.0, 32768.0] {
            rows.push(fixture_row("ddm", "fig5_7", "brute", x, x / 10.0));
            rows.push(fixture_row("ddm", "fig5_7", "gpu-region", x, 1.0));
            rows.push(fixture_row("ddm", "fig5_7", "gpu-grid", x, 1.0));
        }
        let fig = figure(&exp, &rows, &paper);
        let on_speedup: Vec<f64> = fig
            .panels
            .iter()
            .filter_map(|p| match p {
                Panel::Lines(l) if l.y_label.starts_with("speedup over brute") => Some(l),
                _ => None,
            })
            .flat_map(|l| l.paper.iter().filter_map(|m| m.y))
            .collect();
        assert!(
            on_speedup.contains(&200.0) && on_speedup.contains(&150.0),
            "{on_speedup:?}"
        );
        assert!(
            !fig.notes.iter().any(|n| n.contains("32768")),
            "{:?}",
            fig.notes
        );
    }

    #[test]
    fn emulator_times_are_drawn_apart_from_gpu_times_and_the_papers_gpu_numbers() {
        // A table (CCM Fig. 5) of emulator steps only: the paper's GPU numbers on one
        // panel, the emulator's times on one of their own, labelled as correctness runs.
        let exp = experiment("ccm", "fig5");
        let paper = crate::results::read_papers(Path::new("/nonexistent"), "ccm").unwrap();
        let rows = no_gpu(vec![
            fixture_row("ccm", "fig5", "emu copy in", 1.0, 0.003),
            fixture_row("ccm", "fig5", "emu kernel", 1.0, 12.0),
        ]);
        let fig = figure(&exp, &rows, &paper);
        for p in &fig.panels {
            let Panel::Bars(b) = p else { panic!("bars") };
            let emu = b
                .groups
                .iter()
                .flat_map(|g| g.1.iter())
                .any(|bar| bar.series.starts_with("emu"));
            let marks = b.groups.iter().any(|g| !g.2.is_empty());
            assert!(
                !(emu && marks),
                "{}: emulator bars beside paper marks",
                b.y_label
            );
            assert_eq!(emu, b.y_label.starts_with("host emulator"), "{}", b.y_label);
        }
        assert!(
            fig.paper_marks().count() > 0,
            "the paper's GPU numbers are drawn"
        );
        // Lines (CCM Fig. 8) with a GPU series and its emulator twin: never one panel.
        let exp = experiment("ccm", "fig8");
        let mut rows = Vec::new();
        for x in [250.0, 1000.0] {
            rows.push(fixture_row("ccm", "fig8", "sff", x, 1.0));
            rows.push(fixture_row("ccm", "fig8", "gpu", x, 0.01));
            rows.push(fixture_row("ccm", "fig8", "emu", x, 90.0));
        }
        let fig = figure(&exp, &rows, &[]);
        for p in &fig.panels {
            let Panel::Lines(l) = p else { panic!("lines") };
            let emu = l.lines.iter().any(|l| l.series.starts_with("emu"));
            let gpu = l.lines.iter().any(|l| l.series.starts_with("gpu"));
            assert!(!(emu && gpu), "{}", l.y_label);
        }
        assert!(panel_labels(&fig)
            .iter()
            .any(|l| l.starts_with("host emulator")));
        // A speedup experiment run on the emulator only: no panel, a note naming them.
        let exp = experiment("xml", "fig10a");
        let rows = no_gpu(vec![fixture_row(
            "xml",
            "fig10a",
            "emu vs yfilter",
            32.0,
            0.01,
        )]);
        let fig = figure(&exp, &rows, &[]);
        assert!(fig.panels.is_empty(), "{:?}", panel_labels(&fig));
        assert!(fig.legend.is_empty(), "{:?}", fig.legend);
        assert!(
            fig.notes.iter().any(|n| n.contains("emu vs yfilter")),
            "{:?}",
            fig.notes
        );
        let dir = std::env::temp_dir().join(format!("harness-plot-empty-{}", std::process::id()));
        let (png, _) = write(&fig, &dir.join("fig10a.png")).unwrap();
        assert!(std::fs::metadata(png).unwrap().len() > 1_000);
        std::fs::remove_dir_all(dir).ok();
    }

    #[test]
    fn a_legend_of_many_series_with_second_factors_folds_into_engines_and_factors() {
        let mut series: Vec<String> = Vec::new();
        for l in ["L=5", "L=10", "L=15"] {
            for e in [
                "yfilter",
                "lazy-dfa",
                "lazy-dfa-mc",
                "gpu",
                "gpu-block",
                BEST_CPU,
            ] {
                series.push(format!("{e} {l}"));
            }
        }
        let folded = legend(&styles(&series));
        let labels: Vec<&str> = folded.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(
            labels,
            [
                "yfilter",
                "lazy-dfa",
                "lazy-dfa-mc",
                "gpu",
                "gpu-block",
                BEST_CPU,
                "L=5",
                "L=10",
                "L=15"
            ]
        );
        let dash = |name: &str| match &folded.iter().find(|(s, _)| s == name).unwrap().1 {
            Key::Factor(st) => st.dash,
            k => panic!("{k:?}"),
        };
        assert_eq!(
            [dash("L=5"), dash("L=10"), dash("L=15")],
            [Dash::Solid, Dash::Dashed, Dash::Dotted]
        );
        // A few series stay one entry each.
        let few: Vec<String> = series[..6].to_vec();
        assert!(legend(&styles(&few))
            .iter()
            .all(|(_, k)| matches!(k, Key::Series(_))));
        // The best CPU lies under the others (a halo), so that the engine it equals shows.
        let st = styles(&series);
        assert!(st.iter().all(|(s, st)| st.halo == s.starts_with(BEST_CPU)));
    }

    #[test]
    fn new_engines_of_one_figure_get_colours_apart_and_a_unit_word_is_no_factor() {
        let mut series: Vec<String> = Vec::new();
        for e in [
            "gpu multi sweep count",
            "gpu multi sweep pairs",
            "gpu multi bisect count",
        ] {
            for f in ["regions=1M", "regions=4M"] {
                for u in ["matchings/s", "speedup"] {
                    series.push(format!("{e} {f} {u}"));
                }
            }
        }
        let more: Vec<String> = (0..10).map(|i| format!("new-engine-{i}")).collect();
        series.extend(more.iter().cloned());
        let st = styles(&series);
        let color = |e: &str| st.iter().find(|(s, _)| s.starts_with(e)).unwrap().1.color;
        let mut engines: Vec<&str> = vec![
            "gpu multi sweep count",
            "gpu multi sweep pairs",
            "gpu multi bisect count",
        ];
        engines.extend(more.iter().map(String::as_str));
        for (i, a) in engines.iter().enumerate() {
            for b in &engines[i + 1..] {
                assert_ne!(color(a), color(b), "{a} and {b}");
            }
        }
        // One dash per region count, on the rates' panel and the speedups' alike.
        assert_eq!(
            factor("gpu multi sweep count regions=4M speedup"),
            "regions=4M"
        );
        let dash = |s: &str| st.iter().find(|(n, _)| n == s).unwrap().1.dash;
        assert_eq!(
            dash("gpu multi sweep count regions=4M speedup"),
            dash("gpu multi sweep count regions=4M matchings/s")
        );
        assert_ne!(
            dash("gpu multi sweep count regions=4M speedup"),
            dash("gpu multi sweep count regions=1M speedup")
        );
    }

    #[test]
    fn the_whiskers_caption_is_true_to_the_seeds_run() {
        assert_eq!(seeds_caption((3, 3)).0, "min-max over 3 seeds");
        assert_eq!(seeds_caption((1, 1)).0, "one seed: no min-max");
        assert_eq!(seeds_caption((2, 5)).0, "min-max over 2-5 seeds");
        let exp = experiment("ccm", "fig8");
        let mut one = fixture_row("ccm", "fig8", "sff", 250.0, 1.0);
        one.n = 1;
        let fig = figure(&exp, &[one], &[]);
        assert_eq!(fig.seeds, (1, 1));
        let rows = legend_rows(&fig);
        assert!(rows.iter().any(|(l, _)| l == "one seed: no min-max"));
        assert!(!rows.iter().any(|(l, _)| l.contains("min-max over")));
    }

    #[test]
    fn labels_go_to_the_first_free_place() {
        let mut taken = Taken::default();
        assert_eq!(taken.place(50, 10, &[(0, 0), (0, 20)]), (0, 0));
        assert_eq!(taken.place(50, 10, &[(10, 5), (10, 20)]), (10, 20));
        assert_eq!(taken.place(50, 10, &[(100, 0)]), (100, 0));
    }

    #[test]
    fn dashes_cut_a_polyline_into_pieces_and_solid_keeps_it_whole() {
        let line = [(0, 0), (100, 0)];
        assert_eq!(dash_pieces(&line, Dash::Solid).len(), 1);
        let d = dash_pieces(&line, Dash::Dashed);
        assert!(d.len() >= 5, "{d:?}");
        assert!(d.iter().all(|p| p.len() >= 2));
    }
}
