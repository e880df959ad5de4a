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
//!
//! | module | what |
//! | --- | --- |
//! | `style` | colours, dashes, markers of each series, from its name |
//! | `scale` | numbers on axes, an axis's range and ticks |
//! | `model` | the figure model: panels, lines, bars, the papers' marks, the layout |
//! | `compose` | rows and paper numbers to a figure: panels, notes, legend |
//! | `draw` | drawing primitives and one panel of lines or bars |
//! | `sheet` | the whole sheet: title, notes, panels, legend in columns |

mod compose;
mod draw;
mod model;
mod scale;
mod sheet;
mod style;
#[cfg(test)]
mod tests;

pub use compose::*;
use draw::*;
pub use model::*;
pub use scale::*;
use sheet::*;
pub use style::*;

use crate::experiment::Experiment;
use crate::results::{PaperRow, Row};
use anyhow::anyhow;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};
use std::sync::Once;

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
