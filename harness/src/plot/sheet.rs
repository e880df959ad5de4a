//! A whole figure on one sheet: the title and notes above, panels side by side, the legend
//! in columns at the right.

use super::*;

/// Legend rows: (label, what to draw).
pub(super) enum LegendGlyph {
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
pub(super) fn seeds_caption(seeds: (usize, usize)) -> (String, LegendGlyph) {
    match seeds {
        (_, 0 | 1) => ("one seed: no min-max".into(), LegendGlyph::Text),
        (lo, hi) if lo == hi => (format!("min-max over {hi} seeds"), LegendGlyph::Whisker),
        (lo, hi) => (
            format!("min-max over {lo}-{hi} seeds"),
            LegendGlyph::Whisker,
        ),
    }
}

pub(super) fn legend_rows(fig: &Figure) -> Vec<(String, LegendGlyph)> {
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
pub(super) const LEGEND_ROWS_PER_COLUMN: usize = ((PANEL_H - 40) / LEGEND_ROW) as usize;

pub(super) fn draw_legend<DB: DrawingBackend>(
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
                draw_halo(area, &[(a + 7, cy), (b - 7, cy)], st.color.rgb(), st.dash)?;
            }
            LegendGlyph::Series(st) => {
                let c = st.color.rgb();
                let width = if st.hollow { 2 } else { 3 };
                draw_polyline(area, &[(a, cy), (b, cy)], c, width, st.dash)?;
                draw_marker(area, st.marker, ((a + b) / 2, cy), 5, c, st.hollow, 2)?;
            }
            LegendGlyph::Swatch(st) if st.halo => {
                draw_halo(
                    area,
                    &[(a + 7, cy), (b - 7, cy)],
                    st.color.rgb(),
                    Dash::Solid,
                )?;
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

pub(super) const NOTE_LINE: i32 = 22;

/// The height below the notes of a figure with no panel.
const EMPTY_H: i32 = 80;

/// The laid-out figure: its size, the title's and the notes' lines, the legend's
/// column width, and where the panels start.
pub(super) struct Sheet {
    pub(super) w: u32,
    pub(super) h: u32,
    title: Vec<String>,
    notes: Vec<String>,
    top: i32,
    legend_column_w: i32,
}

/// The figure's size in pixels (it depends on text measured on a scratch area).
pub(super) fn measure(fig: &Figure) -> anyhow::Result<Sheet> {
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
    // A figure with nothing measured to draw: its notes and one line saying so.
    let body_h = if fig.panels.is_empty() {
        EMPTY_H.max(legend_h)
    } else {
        PANEL_H.max(legend_h)
    };
    let h = top + body_h;
    Ok(Sheet {
        w: w as u32,
        h: h as u32,
        title,
        notes,
        top,
        legend_column_w,
    })
}

pub(super) fn render<DB: DrawingBackend>(
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
            (PANEL_W / 2, top + EMPTY_H / 2),
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
