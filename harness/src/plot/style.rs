//! Colours, dash styles and markers: how each series of a figure is drawn, from its name.

use super::*;

/// An sRGB colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    pub(super) fn rgb(self) -> RGBColor {
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
    ("bits", Rgb(0, 109, 44)),
    ("bits all cores", Rgb(116, 196, 118)),
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
pub(super) fn is_gpu_series(series: &str) -> bool {
    split_series(series).0.starts_with("gpu")
}

/// Colours for engines not in [`PALETTE`], picked by a hash of the engine's name (so the
/// same in every figure).
pub(super) const FALLBACK: [Rgb; 8] = [
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
pub(super) fn is_factor(t: &str) -> bool {
    let percentile = t
        .strip_prefix('p')
        .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_digit() || c == '.'));
    t.contains('=')
        || percentile
        || UNIT_WORDS.contains(&t)
        || matches!(
            t,
            "RS" | "Zipf" | "zipf" | "uniform" | "crowded" | "small" | "large" | "rect"
        )
}

/// The GPU engine an emulator engine twins (`emu` -> `gpu`, `emu-seg` -> `gpu-seg`,
/// `emu batched` -> `gpu batched`).
pub(super) fn gpu_twin(engine: &str) -> Option<String> {
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

pub(super) const DASHES: [Dash; 4] = [Dash::Solid, Dash::Dashed, Dash::Dotted, Dash::LongShort];
pub(super) const MARKERS: [Marker; 5] = [
    Marker::Circle,
    Marker::Triangle,
    Marker::Square,
    Marker::Diamond,
    Marker::TriangleDown,
];

/// Orders strings with their numbers compared as numbers (`L=5` < `L=10`).
pub(super) fn natural_key(s: &str) -> Vec<(String, f64)> {
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

pub(super) fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
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
pub(super) fn factor(series: &str) -> String {
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
pub(super) const MORE: [Rgb; 8] = [
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
pub(super) fn figure_colors(series: &[String]) -> Vec<(String, Rgb)> {
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
