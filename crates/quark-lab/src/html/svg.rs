//! Minimal hand-written SVG charts: line charts on linear or log axes, and
//! grouped or stacked bar charts. Output is well-formed XML.

use std::fmt::Write;

/// Colours for series, in order (colour-blind friendly palette).
pub const PALETTE: &[&str] = &[
    "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000",
    "#999999",
];

/// Escapes text for HTML and XML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An axis: range and scale.
#[derive(Debug, Clone, Copy)]
pub struct Axis {
    /// Lowest value shown.
    pub min: f64,
    /// Highest value shown.
    pub max: f64,
    /// Logarithmic (base 10).
    pub log: bool,
}

impl Axis {
    /// An axis covering `values` (padded to whole decades when logarithmic).
    pub fn fit(values: impl Iterator<Item = f64>, log: bool) -> Axis {
        let (mut min, mut max) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
            min = min.min(v);
            max = max.max(v);
        }
        if !min.is_finite() {
            (min, max) = if log { (1.0, 10.0) } else { (0.0, 1.0) };
        }
        if log {
            Axis {
                min: 10f64.powf(min.log10().floor()),
                max: 10f64.powf(max.log10().ceil().max(min.log10().floor() + 1.0)),
                log,
            }
        } else {
            Axis {
                min: min.min(0.0),
                max: if max > min.min(0.0) { max * 1.05 } else { 1.0 },
                log,
            }
        }
    }

    /// Position of `v` in `[0, 1]`.
    fn frac(&self, v: f64) -> f64 {
        let f = if self.log {
            (v.max(self.min).log10() - self.min.log10()) / (self.max.log10() - self.min.log10())
        } else {
            (v - self.min) / (self.max - self.min)
        };
        if f.is_finite() {
            f.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let (a, b) = (
                self.min.log10().round() as i32,
                self.max.log10().round() as i32,
            );
            (a..=b).map(|e| 10f64.powi(e)).collect()
        } else {
            let span = self.max - self.min;
            let raw = span / 5.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|m| m * mag)
                .find(|s| *s >= raw)
                .unwrap_or(mag * 10.0);
            let mut t = (self.min / step).ceil() * step;
            let mut v = Vec::new();
            while t <= self.max + step * 1e-9 && v.len() < 12 {
                v.push(t);
                t += step;
            }
            v
        }
    }
}

/// A plot area with axes and labels.
pub struct Frame {
    /// Width in px.
    pub w: f64,
    /// Height in px.
    pub h: f64,
    /// X axis.
    pub x: Axis,
    /// Y axis.
    pub y: Axis,
}

const LEFT: f64 = 70.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 45.0;

impl Frame {
    /// Pixel x of value `v`.
    pub fn px(&self, v: f64) -> f64 {
        LEFT + self.x.frac(v) * (self.w - LEFT - RIGHT)
    }

    /// Pixel y of value `v`.
    pub fn py(&self, v: f64) -> f64 {
        self.h - BOTTOM - self.y.frac(v) * (self.h - TOP - BOTTOM)
    }

    /// Opens the `<svg>` and draws title, axes, ticks and labels.
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        &self,
        out: &mut String,
        kind: &str,
        title: &str,
        xlabel: &str,
        ylabel: &str,
        fmt_x: &dyn Fn(f64) -> String,
        fmt_y: &dyn Fn(f64) -> String,
    ) {
        let (w, h) = (self.w, self.h);
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{kind}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">"#
        );
        let _ = write!(
            out,
            r#"<text x="{}" y="18" font-size="13" font-weight="bold">{}</text>"#,
            LEFT,
            esc(title)
        );
        let (x0, x1, y0, y1) = (LEFT, w - RIGHT, TOP, h - BOTTOM);
        let _ = write!(
            out,
            r##"<rect x="{x0}" y="{y0}" width="{}" height="{}" fill="none" stroke="#444"/>"##,
            x1 - x0,
            y1 - y0
        );
        for t in self.x.ticks() {
            let x = self.px(t);
            let _ = write!(
                out,
                r##"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{y1}" stroke="#ddd"/>"##
            );
            let _ = write!(
                out,
                r#"<text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
                y1 + 14.0,
                esc(&fmt_x(t))
            );
        }
        for t in self.y.ticks() {
            let y = self.py(t);
            let _ = write!(
                out,
                r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#ddd"/>"##
            );
            let _ = write!(
                out,
                r#"<text x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
                x0 - 4.0,
                y + 4.0,
                esc(&fmt_y(t))
            );
        }
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            (x0 + x1) / 2.0,
            h - 8.0,
            esc(xlabel)
        );
        let _ = write!(
            out,
            r#"<text transform="translate(14 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            (y0 + y1) / 2.0,
            esc(ylabel)
        );
    }

    /// Draws a legend entry at row `i`.
    pub fn legend(&self, out: &mut String, i: usize, color: &str, label: &str) {
        let (x, y) = (self.w - RIGHT + 12.0, TOP + 6.0 + 16.0 * i as f64);
        let _ = write!(
            out,
            r#"<rect x="{x}" y="{y}" width="10" height="10" fill="{color}"/>"#
        );
        let _ = write!(
            out,
            r#"<text x="{}" y="{}">{}</text>"#,
            x + 14.0,
            y + 9.0,
            esc(label)
        );
    }

    /// Draws a series as a polyline with point markers.
    pub fn line(
        &self,
        out: &mut String,
        color: &str,
        name: &str,
        points: &[(f64, f64)],
        markers: bool,
    ) {
        let pts: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", self.px(x), self.py(y)))
            .collect();
        let _ = write!(
            out,
            r#"<polyline class="series" data-series="{}" fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
            esc(name),
            pts.join(" ")
        );
        if markers {
            for &(x, y) in points {
                let _ = write!(
                    out,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"/>"#,
                    self.px(x),
                    self.py(y)
                );
            }
        }
    }

    /// Draws one bar segment for group `g` of `groups`, slot `s` of `slots`, from `y0` to `y1`.
    #[allow(clippy::too_many_arguments)]
    pub fn bar(
        &self,
        out: &mut String,
        g: usize,
        groups: usize,
        s: usize,
        slots: usize,
        y0: f64,
        y1: f64,
        color: &str,
        title: &str,
    ) {
        let plot = self.w - LEFT - RIGHT;
        let gw = plot / groups.max(1) as f64;
        let bw = gw * 0.8 / slots.max(1) as f64;
        let x = LEFT + gw * g as f64 + gw * 0.1 + bw * s as f64;
        let (top, bottom) = (self.py(y1), self.py(y0));
        let _ = write!(
            out,
            r#"<rect class="bar" x="{x:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="{color}"><title>{}</title></rect>"#,
            (bw - 1.0).max(1.0),
            (bottom - top).max(0.0),
            esc(title)
        );
    }

    /// Labels bar group `g` under the axis.
    pub fn group_label(&self, out: &mut String, g: usize, groups: usize, label: &str) {
        let plot = self.w - LEFT - RIGHT;
        let gw = plot / groups.max(1) as f64;
        let x = LEFT + gw * (g as f64 + 0.5);
        let _ = write!(
            out,
            r#"<text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
            self.h - BOTTOM + 28.0,
            esc(label)
        );
    }

    /// Closes the `<svg>`.
    pub fn close(&self, out: &mut String) {
        out.push_str("</svg>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_axis_covers_decades() {
        let a = Axis::fit([2000.0, 2e8].into_iter(), true);
        assert_eq!((a.min, a.max), (1000.0, 1e9));
        assert_eq!(a.ticks().len(), 7);
        assert_eq!(a.frac(1000.0), 0.0);
        assert_eq!(a.frac(1e9), 1.0);
    }

    #[test]
    fn linear_ticks_are_round() {
        let a = Axis {
            min: 0.0,
            max: 1.0,
            log: false,
        };
        assert_eq!(a.ticks(), vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]);
    }
}
