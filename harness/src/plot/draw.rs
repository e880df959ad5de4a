//! Drawing primitives and panels: text, dashes, markers, halos, labels placed where no
//! other text is, a panel of lines or of bars.

use super::*;

pub(super) const PANEL_W: i32 = 640;
pub(super) const PANEL_H: i32 = 500;
pub(super) const TICK_FONT: f64 = 17.0;
pub(super) const LABEL_FONT: f64 = 18.0;
pub(super) const TITLE_FONT: f64 = 23.0;
pub(super) const LEGEND_FONT: f64 = 17.0;
pub(super) const LEGEND_ROW: i32 = 26;

pub(super) type Px = (i32, i32);

pub(super) fn font(size: f64) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&BLACK)
}

pub(super) fn err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("{e}")
}

/// Splits `text` into lines no wider than `width` pixels (at `size`).
pub(super) fn wrap<DB: DrawingBackend>(
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

pub(super) fn text_w<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, s: &str, size: f64) -> i32 {
    area.estimate_text_size(s, &font(size))
        .map(|(w, _)| w as i32)
        .unwrap_or(s.len() as i32 * size as i32 / 2)
}

pub(super) fn draw_text<DB: DrawingBackend>(
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
pub(super) fn dash_pieces(pts: &[Px], dash: Dash) -> Vec<Vec<Px>> {
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

pub(super) fn draw_polyline<DB: DrawingBackend>(
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
pub(super) fn draw_halo<DB: DrawingBackend>(
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

pub(super) fn marker_points(m: Marker, (x, y): Px, r: i32) -> Vec<Px> {
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

pub(super) fn draw_marker<DB: DrawingBackend>(
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
pub(super) struct Plot {
    pub(super) x0: i32,
    pub(super) y0: i32,
    pub(super) x1: i32,
    pub(super) y1: i32,
}

impl Plot {
    pub(super) fn px(&self, sx: &Scale, x: f64) -> i32 {
        self.x0 + (sx.frac(x) * f64::from(self.x1 - self.x0)).round() as i32
    }
    pub(super) fn py(&self, sy: &Scale, y: f64) -> i32 {
        self.y1 - (sy.frac(y) * f64::from(self.y1 - self.y0)).round() as i32
    }
}

pub(super) fn draw_frame<DB: DrawingBackend>(
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

pub(super) fn draw_unity<DB: DrawingBackend>(
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
pub(super) struct Taken(Vec<(i32, i32, i32, i32)>);

impl Taken {
    pub(super) fn overlaps(&self, r: (i32, i32, i32, i32)) -> bool {
        self.0
            .iter()
            .any(|t| r.0 < t.2 && t.0 < r.2 && r.1 < t.3 && t.1 < r.3)
    }

    /// The first candidate top-left corner where a `w` x `h` box is free (else the first
    /// candidate), taken.
    pub(super) fn place(&mut self, w: i32, h: i32, candidates: &[Px]) -> Px {
        let free = candidates
            .iter()
            .copied()
            .find(|&(x, y)| !self.overlaps((x, y, x + w, y + h)));
        let (x, y) = free.or(candidates.first().copied()).unwrap_or((0, 0));
        self.0.push((x, y, x + w, y + h));
        (x, y)
    }
}

pub(super) const NOTE_FONT: f64 = TICK_FONT - 3.0;

/// Draws `text` at the first free place of `candidates` (top-left corners).
pub(super) fn draw_label<DB: DrawingBackend>(
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

pub(super) fn draw_paper_mark<DB: DrawingBackend>(
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

pub(super) fn draw_line_panel<DB: DrawingBackend>(
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

pub(super) fn draw_bar_panel<DB: DrawingBackend>(
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

pub(super) static FONT: Once = Once::new();

pub(super) fn register_font() {
    FONT.call_once(|| {
        // The embedded font is a valid TrueType file; if it were not, text would be
        // missing from the plots, which the plot tests would catch.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            include_bytes!("../../assets/DejaVuSans.ttf"),
        );
    });
}
