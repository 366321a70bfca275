//! The bench plot: tok/s of every row of both arms over the row index, hand-written SVG.
//! One colour per arm; warm-up rows hollow circles, gate rows small dots, timed rows filled
//! squares; a failed row is a cross on the axis; each arm's settled window is a shaded band.

use std::fmt::Write as _;

/// One arm's points.
#[derive(Clone, Debug)]
pub struct PlotArm {
    /// The arm's name.
    pub name: String,
    /// (row index, phase, tok/s) per row.
    pub rows: Vec<(usize, &'static str, Option<f64>)>,
    /// The settled window, as row indices `start..end`.
    pub settled: Option<(usize, usize)>,
}

/// What the plot shows.
#[derive(Clone, Debug)]
pub struct PlotData {
    /// The arms, in order.
    pub arms: Vec<PlotArm>,
}

const WIDTH: f64 = 800.0;
const HEIGHT: f64 = 420.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 50.0;
const COLOURS: [&str; 2] = ["#d62728", "#1f77b4"];

/// The SVG document.
#[must_use]
pub fn svg(data: &PlotData) -> String {
    let values = data.arms.iter().flat_map(|a| a.rows.iter().filter_map(|r| r.2));
    let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let lo = if lo.is_finite() { (lo * 0.9).max(0.0) } else { 0.0 };
    let hi = if hi > lo { hi * 1.05 } else { lo + 1.0 };
    let rows_max = data.arms.iter().map(|a| a.rows.len()).max().unwrap_or(1).max(2);
    // CAST: row counts are small, exact in f64.
    #[allow(clippy::cast_precision_loss)]
    let x = |i: usize| LEFT + (WIDTH - LEFT - RIGHT) * i as f64 / (rows_max - 1) as f64;
    let y = |v: f64| HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * (v - lo) / (hi - lo);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>"#);
    for (arm, colour) in data.arms.iter().zip(COLOURS) {
        if let Some((start, end)) = arm.settled {
            let (x0, x1) = (x(start), x(end.saturating_sub(1)));
            let _ = writeln!(
                s,
                r#"<rect class="settled" data-arm="{}" x="{x0:.1}" y="{TOP}" width="{:.1}" height="{:.1}" fill="{colour}" fill-opacity="0.08"/>"#,
                arm.name,
                (x1 - x0).max(2.0),
                HEIGHT - TOP - BOTTOM
            );
        }
    }
    axes(&mut s, lo, hi, rows_max, &x, &y);
    for (arm, colour) in data.arms.iter().zip(COLOURS) {
        for &(index, phase, value) in &arm.rows {
            let cx = x(index);
            let _ = match (value, phase) {
                (None, _) => writeln!(
                    s,
                    r#"<path class="failed" d="M{:.1},{:.1}l8,8m0,-8l-8,8" stroke="{colour}"/>"#,
                    cx - 4.0,
                    HEIGHT - BOTTOM - 4.0
                ),
                (Some(v), "timed") => writeln!(
                    s,
                    r#"<rect class="timed" data-arm="{}" x="{:.1}" y="{:.1}" width="6" height="6" fill="{colour}"/>"#,
                    arm.name,
                    cx - 3.0,
                    y(v) - 3.0
                ),
                (Some(v), "warmup") => writeln!(
                    s,
                    r#"<circle class="warmup" data-arm="{}" cx="{cx:.1}" cy="{:.1}" r="4" fill="none" stroke="{colour}"/>"#,
                    arm.name,
                    y(v)
                ),
                (Some(v), _) => writeln!(
                    s,
                    r#"<circle class="gate" data-arm="{}" cx="{cx:.1}" cy="{:.1}" r="2.5" fill="{colour}"/>"#,
                    arm.name,
                    y(v)
                ),
            };
        }
    }
    legend(&mut s, data);
    s.push_str("</svg>\n");
    s
}

fn axes(s: &mut String, lo: f64, hi: f64, rows_max: usize, x: &dyn Fn(usize) -> f64, y: &dyn Fn(f64) -> f64) {
    let (x0, x1, y0) = (LEFT, WIDTH - RIGHT, HEIGHT - BOTTOM);
    let _ = writeln!(s, r##"<path d="M{x0},{TOP}V{y0}H{x1}" stroke="#333" fill="none"/>"##);
    for k in 0..=4 {
        let v = lo + (hi - lo) * f64::from(k) / 4.0;
        let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{v:.2}</text>"#, x0 - 6.0, y(v) + 4.0);
    }
    let step = (rows_max / 10).max(1);
    for i in (0..rows_max).step_by(step) {
        let _ = writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{i}</text>"#, x(i), y0 + 16.0);
    }
    let _ =
        writeln!(s, r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">row</text>"#, f64::midpoint(x0, x1), y0 + 36.0);
    let _ = writeln!(
        s,
        r#"<text x="14" y="{:.1}" transform="rotate(-90 14 {:.1})" text-anchor="middle">tok/s</text>"#,
        f64::midpoint(TOP, y0),
        f64::midpoint(TOP, y0)
    );
}

fn legend(s: &mut String, data: &PlotData) {
    let lx = WIDTH - RIGHT + 16.0;
    let mut ly = TOP + 10.0;
    for (arm, colour) in data.arms.iter().zip(COLOURS) {
        let _ = writeln!(
            s,
            r#"<rect x="{lx}" y="{:.1}" width="10" height="10" fill="{colour}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            ly - 9.0,
            lx + 16.0,
            ly,
            arm.name
        );
        ly += 18.0;
    }
    for line in ["○ warm-up", "• gate", "■ timed", "shaded: settled window", "× failed row"] {
        let _ = writeln!(s, r#"<text x="{lx}" y="{ly:.1}">{line}</text>"#);
        ly += 16.0;
    }
}
