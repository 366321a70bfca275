//! The profile as an SVG chart: one bar per dispatch (its median span, in tape order), the
//! slowest ones named by kernel, under the disclaimer and both identities.

use std::fmt::Write as _;

use super::report::{Profile, hex};

/// Plot width and height in pixels (the bars' area).
const PLOT_W: f64 = 1450.0;
const PLOT_H: f64 = 320.0;
/// Left margin (axis labels) and top margin (the text above the plot).
const LEFT: f64 = 70.0;
const TOP: f64 = 160.0;
/// Dispatches named on the chart.
const NAMED_MAX: usize = 5;

/// The chart (a whole SVG document).
#[must_use]
pub fn render(profile: &Profile) -> String {
    let n = profile.dispatches.len().max(1);
    let width = LEFT + PLOT_W + 30.0;
    let height = TOP + PLOT_H + 60.0 + 16.0 * f64::from(u32::try_from(NAMED_MAX).unwrap_or(5));
    let max_ns = profile.dispatches.iter().map(|d| d.median_ns).fold(0.0, f64::max).max(1.0);
    // CAST: a dispatch count far below 2^52.
    #[allow(clippy::cast_precision_loss)]
    let bar_w = PLOT_W / n as f64;
    let named: Vec<usize> = profile.slowest.iter().take(NAMED_MAX).map(|s| s.index).collect();
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let c = &profile.certified;
    let i = &profile.instrumented;
    let lines = [
        format!(
            "redline profile: {} dispatches, median span per dispatch over {} tokens ({})",
            profile.dispatches.len(),
            profile.positions.len(),
            profile.architecture
        ),
        format!("certified: {} dwords, tape sequence hash {}", c.body_dwords, hex(&c.tape.sequence_hash)),
        format!("instrumented: {} dwords, sequence hash {}", i.body_dwords, i.sequence_hash),
        format!(
            "span sum / device time: median {:.4}, min {:.4}",
            profile.span_fraction.median, profile.span_fraction.min
        ),
    ];
    let mut y = 20.0;
    for line in &lines {
        let _ = writeln!(s, r#"<text x="10" y="{y:.0}">{}</text>"#, escape(line));
        y += 16.0;
    }
    // One sentence a line, never broken inside, so that each reads (and is found) whole.
    for line in sentences(super::DISCLAIMER) {
        let _ = writeln!(s, r##"<text x="10" y="{y:.0}" font-size="10" fill="#8a1c1c">{}</text>"##, escape(line));
        y += 14.0;
    }
    let _ = writeln!(
        s,
        r##"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{:.0}" stroke="#333"/><line x1="{LEFT}" y1="{:.0}" x2="{:.0}" y2="{:.0}" stroke="#333"/>"##,
        TOP + PLOT_H,
        TOP + PLOT_H,
        LEFT + PLOT_W,
        TOP + PLOT_H
    );
    let _ = writeln!(s, r#"<text x="5" y="{:.0}">{}</text>"#, TOP + 4.0, escape(&format_ns(max_ns)));
    let _ = writeln!(s, r#"<text x="5" y="{:.0}">0</text>"#, TOP + PLOT_H);
    for (k, d) in profile.dispatches.iter().enumerate() {
        // CAST: as above.
        #[allow(clippy::cast_precision_loss)]
        let x = LEFT + bar_w * k as f64;
        let h = PLOT_H * d.median_ns / max_ns;
        let fill = if named.contains(&d.index) { "#c0392b" } else { "#4a78b0" };
        let _ = writeln!(
            s,
            r#"<rect x="{x:.2}" y="{:.2}" width="{:.2}" height="{h:.2}" fill="{fill}"><title>{}</title></rect>"#,
            TOP + PLOT_H - h,
            (bar_w * 0.9).max(0.5),
            escape(&format!("dispatch {}: {} median {}", d.index, d.kernel, format_ns(d.median_ns)))
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="{:.0}">dispatch index (tape order) 0 .. {}</text>"#,
        TOP + PLOT_H + 18.0,
        n - 1
    );
    let mut y = TOP + PLOT_H + 40.0;
    for slow in profile.slowest.iter().take(NAMED_MAX) {
        let text = format!("slowest: dispatch {} {} median {}", slow.index, slow.kernel, format_ns(slow.median_ns));
        let _ = writeln!(s, r##"<text x="{LEFT}" y="{y:.0}" fill="#c0392b">{}</text>"##, escape(&text));
        y += 16.0;
    }
    s.push_str("</svg>\n");
    s
}

/// Nanoseconds for people: ns, µs or ms.
#[must_use]
pub fn format_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

/// Text as XML character data: `&`, `<`, `>` and quotes escaped, control characters dropped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `text`'s sentences (split after ". ").
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(". ") {
        out.push(&rest[..=at]);
        rest = &rest[at + 2..];
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_control_characters() {
        assert_eq!(escape("a<b>&\"'\x1b"), "a&lt;b&gt;&amp;&quot;&apos;");
    }

    #[test]
    fn splits_sentences() {
        assert_eq!(sentences("A b. C d (e. f). G."), vec!["A b.", "C d (e.", "f).", "G."]);
    }
}
