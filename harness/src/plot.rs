//! PNG plots shaped like the papers' figures: a value panel and, when the experiment has
//! a baseline, a speedup panel; log axes where the paper used them. Pure Rust (the font
//! is embedded), so the binary needs no system libraries on the GPU machine.

use crate::experiment::Experiment;
use crate::results::{speedups, Row};
use anyhow::anyhow;
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

static FONT: Once = Once::new();

fn register_font() {
    FONT.call_once(|| {
        // The embedded font is a valid TrueType file; if it were not, text would be
        // missing from the plots, which the plot test would catch.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            include_bytes!("../assets/DejaVuSans.ttf"),
        );
    });
}

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

type Series = Vec<(String, Vec<(f64, f64)>)>;

fn by_series(points: impl Iterator<Item = (String, f64, f64)>) -> Series {
    let mut out: Series = Vec::new();
    for (s, x, y) in points {
        match out.iter_mut().find(|(n, _)| *n == s) {
            Some((_, v)) => v.push((x, y)),
            None => out.push((s, vec![(x, y)])),
        }
    }
    out
}

/// Draws `<png>` from the experiment's rows.
pub fn plot(exp: &Experiment, rows: &[Row], png: &Path) -> anyhow::Result<()> {
    register_font();
    let values = by_series(rows.iter().map(|r| (r.series.clone(), r.x, r.mean)));
    let speed = exp
        .baseline
        .map(|b| by_series(speedups(rows, b, exp.higher_is_better).into_iter()))
        .filter(|s| !s.is_empty());
    let width = if speed.is_some() { 1400 } else { 800 };
    let root = BitMapBackend::new(png, (width, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let root = root
        .titled(exp.title, ("sans-serif", 22))
        .map_err(|e| anyhow!("{e}"))?;
    let panels = if speed.is_some() {
        root.split_evenly((1, 2))
    } else {
        vec![root]
    };
    panel(
        &panels[0],
        &values,
        exp.x_label,
        exp.y_label,
        exp.log_x,
        exp.log_y,
    )?;
    if let (Some(s), Some(p)) = (speed, panels.get(1)) {
        let label = format!("speedup over {}", exp.baseline.unwrap_or(""));
        panel(p, &s, exp.x_label, &label, exp.log_x, true)?;
    }
    Ok(())
}

fn range(v: impl Iterator<Item = f64> + Clone, log: bool) -> (f64, f64) {
    let ok = v.filter(|x| x.is_finite() && (!log || *x > 0.0));
    let lo = ok.clone().fold(f64::INFINITY, f64::min);
    let hi = ok.fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() {
        return (1.0, 10.0);
    }
    if log {
        (lo / 1.5, hi * 1.5)
    } else {
        let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.05).max(1e-9);
        ((lo - pad).min(0.0f64.max(lo - pad)), hi + pad)
    }
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    series: &Series,
    x_label: &str,
    y_label: &str,
    log_x: bool,
    log_y: bool,
) -> anyhow::Result<()> {
    let xs = series.iter().flat_map(|(_, v)| v.iter().map(|p| p.0));
    let ys = series.iter().flat_map(|(_, v)| v.iter().map(|p| p.1));
    let (x0, x1) = range(xs, log_x);
    let (y0, y1) = range(ys, log_y);
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .y_desc(y_label)
                .label_style(("sans-serif", 14))
                .draw()
                .map_err(|e| anyhow!("{e}"))?;
            for (i, (name, pts)) in series.iter().enumerate() {
                let c = COLORS[i % COLORS.len()];
                let pts: Vec<(f64, f64)> = pts
                    .iter()
                    .copied()
                    .filter(|(x, y)| (!log_x || *x > 0.0) && (!log_y || *y > 0.0) && y.is_finite())
                    .collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                    .map_err(|e| anyhow!("{e}"))?
                    .label(name.as_str())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                    });
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
                    .map_err(|e| anyhow!("{e}"))?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .label_font(("sans-serif", 14))
                .draw()
                .map_err(|e| anyhow!("{e}"))?;
        }};
    }
    let mut b = ChartBuilder::on(area);
    b.margin(15).x_label_area_size(45).y_label_area_size(70);
    match (log_x, log_y) {
        (false, false) => draw!(b
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| anyhow!("{e}"))?),
        (true, false) => draw!(b
            .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
            .map_err(|e| anyhow!("{e}"))?),
        (false, true) => draw!(b
            .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
            .map_err(|e| anyhow!("{e}"))?),
        (true, true) => {
            draw!(b
                .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
                .map_err(|e| anyhow!("{e}"))?)
        }
    }
    area.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Experiment, Paper, Sample};
    use crate::meta::Meta;

    #[test]
    fn plot_draws_a_value_panel_and_a_speedup_panel_on_log_axes() {
        let exp = Experiment {
            paper: Paper::Ccm,
            id: "plot-test",
            title: "Fig. 0: processing time vs filters",
            x_label: "filters",
            y_label: "ms per event",
            log_x: true,
            log_y: true,
            higher_is_better: false,
            baseline: Some("sff"),
            paper_says: "",
            run: |_| Ok(()),
        };
        let mut samples = Vec::new();
        for x in [1e3, 1e4, 1e5, 1e6] {
            samples.push(Sample {
                series: "gpu".into(),
                x,
                value: x / 1e5,
            });
            samples.push(Sample {
                series: "sff".into(),
                x,
                value: x / 1e3,
            });
        }
        let meta = Meta {
            device: "d".into(),
            cpu: "c".into(),
            cores: 1,
            commit: "x".into(),
            date: "d".into(),
        };
        let rows = crate::results::aggregate(&exp, &samples, &meta);
        let png = std::env::temp_dir().join(format!("harness-plot-{}.png", std::process::id()));
        plot(&exp, &rows, &png).unwrap();
        let bytes = std::fs::metadata(&png).unwrap().len();
        assert!(
            bytes > 10_000,
            "a two-panel plot with text is more than {bytes} bytes"
        );
        std::fs::copy(&png, std::env::temp_dir().join("harness-plot-last.png")).ok();
        std::fs::remove_file(png).ok();
    }
}
