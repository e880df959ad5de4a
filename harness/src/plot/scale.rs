//! Numbers on axes: significant digits, the reader's 1k / 1M, and an axis's range and
//! ticks.

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
pub(super) struct Scale {
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) log: bool,
}

impl Scale {
    /// The fraction 0..1 of the axis at `v`.
    pub(super) fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    /// A range holding every value (non-positive ones dropped on a log axis), padded.
    pub(super) fn fit(values: impl Iterator<Item = f64>, log: bool, from_zero: bool) -> Scale {
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
    pub(super) fn ticks(&self) -> Vec<f64> {
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
