//! Charts: drawn in Rust with `plotters`' SVG backend, each with its numbers
//! as a table.
//!
//! A chart is **data**: the server draws it (feature `charts`) and ships the
//! SVG text in the view, the page shows that text. So the picture is the same
//! bytes in the server-rendered page and after the browser took over, and the
//! browser's bundle carries no drawing code. (plotters measures text in the
//! browser through the DOM, which would make the two renderings differ; on the
//! server it uses a fixed estimate, which is what makes a drawing
//! reproducible: the same figures give the same SVG.)
//!
//! Every chart has a title, axes with their units, a legend when it has more
//! than one series, and a [`Table`] of exactly the figures it draws.

use serde::{Deserialize, Serialize};

/// A drawn chart and the figures it shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Chart {
    pub title: String,
    /// `<svg …>…</svg>`; empty when there is nothing to draw.
    pub svg: String,
    pub table: Table,
}

/// The numbers behind a chart, as text, one row per drawn mark.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// One line on a chart over time: `(unix seconds, value)` points in time order.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// One row of a timeline: segments `(from, to, phase)` in unix seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineRow {
    pub label: String,
    pub segments: Vec<(f64, f64, Phase)>,
}

/// What a stretch of a cell's time was spent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Waiting for a slot once its batch started.
    Queued,
    /// An attempt that ended well (or is still running).
    Running,
    /// An attempt that failed and was run again.
    Retried,
    /// Between a stop and the resume that ran it again.
    Paused,
    /// An attempt that failed and was not run again.
    Failed,
}

impl Phase {
    pub const ALL: [Phase; 5] = [Phase::Queued, Phase::Running, Phase::Retried, Phase::Paused, Phase::Failed];

    pub fn word(self) -> &'static str {
        match self {
            Phase::Queued => "queued",
            Phase::Running => "running",
            Phase::Retried => "retried attempt",
            Phase::Paused => "paused",
            Phase::Failed => "failed attempt",
        }
    }
}

/// One labelled estimate with its interval (a pass rate and its 95 % interval).
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalRow {
    pub label: String,
    pub estimate: f64,
    pub lo: f64,
    pub hi: f64,
}

/// One dot of a scatter chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Dot {
    pub x: f64,
    pub y: f64,
    /// Index into the chart's groups (its colour and legend entry).
    pub group: usize,
}

/// A reference line on a scatter chart: vertical at `x` or horizontal at `y`.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    Vertical { x: f64, label: String },
    Horizontal { y: f64, label: String },
}

/// The palette every chart draws from, in order (distinguishable for the
/// common colour-vision deficiencies: Okabe–Ito).
pub const PALETTE: [(u8, u8, u8); 8] = [
    (0, 114, 178),
    (230, 159, 0),
    (0, 158, 115),
    (204, 121, 167),
    (86, 180, 233),
    (213, 94, 0),
    (240, 228, 66),
    (0, 0, 0),
];

/// A phase's colour on the timeline.
pub fn phase_colour(p: Phase) -> (u8, u8, u8) {
    match p {
        Phase::Queued => (200, 204, 209),
        Phase::Running => (0, 114, 178),
        Phase::Retried => (230, 159, 0),
        Phase::Paused => (240, 228, 66),
        Phase::Failed => (213, 94, 0),
    }
}

/// A unix time as the axis shows it (UTC): the date when the span is days,
/// else the time of day.
pub fn time_label(secs: f64, span: f64) -> String {
    let Ok(t) = time::OffsetDateTime::from_unix_timestamp(secs.round() as i64) else { return String::new() };
    if span > 3.0 * 86_400.0 {
        format!("{:04}-{:02}-{:02}", t.year(), u8::from(t.month()), t.day())
    } else if span > 86_400.0 {
        format!("{:02}-{:02} {:02}:{:02}", u8::from(t.month()), t.day(), t.hour(), t.minute())
    } else if span > 120.0 {
        format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second())
    } else {
        // A short span: fractions of a second, so the ticks differ.
        // A tick on a whole second says no fraction ("10:00:03", never
        // "10:00:03.0").
        let t = time::OffsetDateTime::from_unix_timestamp(secs.floor() as i64).unwrap_or(t);
        let frac = secs - secs.floor();
        let (tenths, hundredths) = ((frac * 10.0).round() as u8, (frac * 100.0).round() as u8);
        match (span > 5.0, tenths, hundredths) {
            (true, 0 | 10, _) | (false, _, 0 | 100) => {
                let t = if tenths == 10 || hundredths == 100 { t + time::Duration::SECOND } else { t };
                format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second())
            }
            (true, d, _) => format!("{:02}:{:02}:{:02}.{d}", t.hour(), t.minute(), t.second()),
            (false, _, d) => format!("{:02}:{:02}:{:02}.{d:02}", t.hour(), t.minute(), t.second()),
        }
    }
}

/// A unix time in full, for tables (`2026-11-30 09:41:07Z`).
pub fn time_full(secs: f64) -> String {
    let Ok(t) = time::OffsetDateTime::from_unix_timestamp(secs.round() as i64) else { return String::new() };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// A number for a table: integers without decimals, others with `digits`.
pub fn num(v: f64, digits: usize) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.digits$}")
    }
}

#[cfg(feature = "charts")]
pub use draw::*;

#[cfg(feature = "charts")]
mod draw {
    use super::*;
    use plotters::prelude::*;
    use plotters::style::text_anchor::{HPos, Pos, VPos};

    const W: u32 = 720;
    const FONT: &str = "sans-serif";

    /// The label of a row band: row `i` is drawn in band `n - 1 - i`, so the
    /// first row is on top.
    fn band_label<'a>(v: &SegmentValue<i32>, mut labels: impl Iterator<Item = &'a str>, n: usize) -> String {
        match v {
            SegmentValue::CenterOf(b) if (0..n as i32).contains(b) => {
                labels.nth(n - 1 - *b as usize).unwrap_or("").to_owned()
            }
            _ => String::new(),
        }
    }

    /// The height a legend takes under a chart.
    const LEGEND_H: u32 = 26;

    /// How a legend entry is marked: as its series is drawn.
    #[derive(Clone, Copy)]
    enum Mark {
        Line,
        Bar,
        Dot,
    }

    /// The legend in one row at the foot of the picture, under the axes —
    /// never over the data (a framed legend in a corner hid the points under
    /// it). The chart leaves [`LEGEND_H`] free at its bottom for it.
    fn legend_row(
        root: &DrawingArea<SVGBackend, plotters::coord::Shift>,
        h: u32,
        items: &[(String, RGBColor, Mark)],
    ) -> Result<(), String> {
        let y = h as i32 - LEGEND_H as i32 / 2 - 2;
        let mut x = 64;
        let font = TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
        for (name, c, mark) in items {
            let drawn = match mark {
                Mark::Line => root.draw(&PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))),
                Mark::Bar => root.draw(&Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled())),
                Mark::Dot => root.draw(&Circle::new((x + 7, y), 4, c.filled())),
            };
            drawn.map_err(|e| e.to_string())?;
            root.draw(&Text::new(name.clone(), (x + 22, y), font.clone())).map_err(|e| e.to_string())?;
            x += 22 + 8 * name.chars().count() as i32 + 18;
        }
        Ok(())
    }

    fn colour(c: (u8, u8, u8)) -> RGBColor {
        RGBColor(c.0, c.1, c.2)
    }

    /// Pads a range that is a single point, so an axis can be drawn.
    fn span(lo: f64, hi: f64) -> (f64, f64) {
        if !(lo.is_finite() && hi.is_finite()) {
            return (0.0, 1.0);
        }
        if hi - lo < 1e-9 {
            (lo - 0.5, hi + 0.5)
        } else {
            (lo, hi)
        }
    }

    /// Runs a drawing into an SVG string; a drawing error leaves the chart
    /// without a picture (its table still says everything).
    fn render(
        h: u32,
        f: impl FnOnce(&DrawingArea<SVGBackend, plotters::coord::Shift>) -> Result<(), String>,
    ) -> String {
        let mut out = String::new();
        let ok = {
            let root = SVGBackend::with_string(&mut out, (W, h)).into_drawing_area();
            let drawn = root.fill(&WHITE).map_err(|e| e.to_string()).and_then(|_| f(&root));
            drawn.and_then(|_| root.present().map_err(|e| e.to_string())).is_ok()
        };
        if ok {
            out
        } else {
            String::new()
        }
    }

    /// Lines over time, one per series, with a legend.
    pub fn lines_over_time(title: &str, y_desc: &str, series: &[Series]) -> Chart {
        let mut table = Table { columns: vec!["series".into(), "time (UTC)".into(), y_desc.into()], rows: vec![] };
        for s in series {
            for (t, v) in &s.points {
                table.rows.push(vec![s.name.clone(), time_full(*t), num(*v, 2)]);
            }
        }
        let pts = series.iter().flat_map(|s| s.points.iter());
        let (x0, x1) = span(
            pts.clone().map(|p| p.0).fold(f64::INFINITY, f64::min),
            pts.clone().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max),
        );
        let y1 = pts.map(|p| p.1).fold(0.0_f64, f64::max);
        let (y0, y1) = span(0.0, if y1 > 0.0 { y1 * 1.08 } else { 1.0 });
        if table.rows.is_empty() {
            return Chart { title: title.into(), svg: String::new(), table };
        }
        let x_span = x1 - x0;
        let keyed = series.len() > 1;
        let h = 320 + if keyed { LEGEND_H } else { 0 };
        let svg = render(h, |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(title, (FONT, 20))
                .margin(12)
                .margin_bottom(12 + if keyed { LEGEND_H } else { 0 })
                .x_label_area_size(36)
                .y_label_area_size(56)
                .build_cartesian_2d(x0..x1, y0..y1)
                .map_err(|e| e.to_string())?;
            let fmt_x = |v: &f64| time_label(*v, x_span);
            let fmt_y = |v: &f64| num(*v, 1);
            chart
                .configure_mesh()
                .x_labels(6)
                .y_labels(6)
                .x_label_formatter(&fmt_x)
                .y_label_formatter(&fmt_y)
                .x_desc("time (UTC)")
                .y_desc(y_desc)
                .light_line_style(RGBColor(238, 240, 242))
                .label_style((FONT, 14))
                .axis_desc_style((FONT, 15))
                .draw()
                .map_err(|e| e.to_string())?;
            for (i, s) in series.iter().enumerate() {
                let c = colour(PALETTE[i % PALETTE.len()]);
                chart
                    .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))
                    .map_err(|e| e.to_string())?;
                chart
                    .draw_series(s.points.iter().map(|p| Circle::new(*p, 2, c.filled())))
                    .map_err(|e| e.to_string())?;
            }
            if keyed {
                let items: Vec<_> = series
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (s.name.clone(), colour(PALETTE[i % PALETTE.len()]), Mark::Line))
                    .collect();
                legend_row(root, h, &items)?;
            }
            Ok(())
        });
        Chart { title: title.into(), svg, table }
    }

    /// A timeline: one row per label, its segments coloured by phase, with a
    /// legend of the phases drawn.
    pub fn timeline(title: &str, rows: &[TimelineRow]) -> Chart {
        let mut table = Table {
            columns: vec!["row".into(), "phase".into(), "from (UTC)".into(), "to (UTC)".into(), "seconds".into()],
            rows: vec![],
        };
        for r in rows {
            for (a, b, p) in &r.segments {
                table.rows.push(vec![r.label.clone(), p.word().into(), time_full(*a), time_full(*b), num(b - a, 1)]);
            }
        }
        if table.rows.is_empty() {
            return Chart { title: title.into(), svg: String::new(), table };
        }
        let segs = rows.iter().flat_map(|r| r.segments.iter());
        let (x0, x1) = span(
            segs.clone().map(|s| s.0).fold(f64::INFINITY, f64::min),
            segs.clone().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max),
        );
        let n = rows.len();
        let used: Vec<Phase> = Phase::ALL.into_iter().filter(|p| segs.clone().any(|s| s.2 == *p)).collect();
        let h = (80 + 18 * n as u32 + 30).clamp(160, 2400) + LEGEND_H;
        let x_span = x1 - x0;
        let svg = render(h, |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(title, (FONT, 20))
                .margin(12)
                .margin_bottom(12 + LEGEND_H)
                .x_label_area_size(36)
                .y_label_area_size(150)
                .build_cartesian_2d(x0..x1, (0..n as i32).into_segmented())
                .map_err(|e| e.to_string())?;
            let fmt_x = |v: &f64| time_label(*v, x_span);
            let fmt_y = |v: &SegmentValue<i32>| band_label(v, rows.iter().map(|r| r.label.as_str()), n);
            chart
                .configure_mesh()
                .x_labels(6)
                .y_labels(n)
                .x_label_formatter(&fmt_x)
                .y_label_formatter(&fmt_y)
                .disable_y_mesh()
                .x_desc("time (UTC)")
                .light_line_style(RGBColor(238, 240, 242))
                .label_style((FONT, 14))
                .axis_desc_style((FONT, 15))
                .draw()
                .map_err(|e| e.to_string())?;
            for (i, r) in rows.iter().enumerate() {
                let y = (n - 1 - i) as i32;
                chart
                    .draw_series(r.segments.iter().map(|(a, b, p)| {
                        let mut bar = Rectangle::new(
                            [(*a, SegmentValue::Exact(y)), (b.max(*a + x_span * 0.002), SegmentValue::Exact(y + 1))],
                            colour(phase_colour(*p)).filled(),
                        );
                        bar.set_margin(3, 3, 0, 0);
                        bar
                    }))
                    .map_err(|e| e.to_string())?;
            }
            let items: Vec<_> =
                used.iter().map(|p| (p.word().to_owned(), colour(phase_colour(*p)), Mark::Bar)).collect();
            legend_row(root, h, &items)?;
            Ok(())
        });
        Chart { title: title.into(), svg, table }
    }

    /// Proportions with their intervals, one row each (a forest plot), drawn
    /// ×100: on a 0–100 % axis when `percent`, else as differences in
    /// percentage points around zero, with a line at 0.
    pub fn intervals(title: &str, x_desc: &str, rows: &[IntervalRow], percent: bool) -> Chart {
        let scale = 100.0;
        let table = Table {
            columns: vec!["row".into(), x_desc.into(), "95 % low".into(), "95 % high".into()],
            rows: rows
                .iter()
                .map(|r| vec![r.label.clone(), num(r.estimate * scale, 1), num(r.lo * scale, 1), num(r.hi * scale, 1)])
                .collect(),
        };
        if rows.is_empty() {
            return Chart { title: title.into(), svg: String::new(), table };
        }
        let (x0, x1) = if percent {
            (0.0, 100.0)
        } else {
            let m = (rows.iter().map(|r| r.lo.abs().max(r.hi.abs())).fold(0.05_f64, f64::max) * scale * 1.1).min(110.0);
            (-m, m)
        };
        let n = rows.len();
        let h = (70 + 26 * n as u32 + 30).clamp(140, 2400);
        let svg = render(h, |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(title, (FONT, 20))
                .margin(12)
                .margin_right(30)
                .x_label_area_size(36)
                .y_label_area_size(170)
                .build_cartesian_2d(x0..x1, (0..n as i32).into_segmented())
                .map_err(|e| e.to_string())?;
            let fmt_y = |v: &SegmentValue<i32>| band_label(v, rows.iter().map(|r| r.label.as_str()), n);
            let fmt_x = |v: &f64| if percent { format!("{v:.0} %") } else { format!("{v:+.0} pp") };
            chart
                .configure_mesh()
                .x_labels(11)
                .y_labels(n)
                .x_label_formatter(&fmt_x)
                .y_label_formatter(&fmt_y)
                .disable_y_mesh()
                .x_desc(x_desc)
                .light_line_style(RGBColor(238, 240, 242))
                .label_style((FONT, 14))
                .axis_desc_style((FONT, 15))
                .draw()
                .map_err(|e| e.to_string())?;
            if !percent {
                chart
                    .draw_series(LineSeries::new(
                        [(0.0, SegmentValue::Exact(0)), (0.0, SegmentValue::Exact(n as i32))],
                        RGBColor(87, 96, 106),
                    ))
                    .map_err(|e| e.to_string())?;
            }
            let c = colour(PALETTE[0]);
            for (i, r) in rows.iter().enumerate() {
                let y = SegmentValue::CenterOf((n - 1 - i) as i32);
                chart
                    .draw_series(LineSeries::new(
                        [(r.lo * scale, y.clone()), (r.hi * scale, y.clone())],
                        c.stroke_width(3),
                    ))
                    .map_err(|e| e.to_string())?;
                chart
                    .draw_series([Circle::new((r.estimate * scale, y), 4, BLACK.filled())])
                    .map_err(|e| e.to_string())?;
            }
            Ok(())
        });
        Chart { title: title.into(), svg, table }
    }

    /// A scatter of dots by group, with reference lines and a legend.
    pub fn scatter(
        title: &str,
        (x_desc, y_desc): (&str, &str),
        groups: &[&str],
        dots: &[(Dot, String)],
        rules: &[Rule],
        x_range: Option<(f64, f64)>,
    ) -> Chart {
        let table = Table {
            columns: vec!["point".into(), "group".into(), x_desc.into(), y_desc.into()],
            rows: dots
                .iter()
                .map(|(d, label)| {
                    vec![label.clone(), groups.get(d.group).copied().unwrap_or("").into(), num(d.x, 3), num(d.y, 3)]
                })
                .collect(),
        };
        if dots.is_empty() {
            return Chart { title: title.into(), svg: String::new(), table };
        }
        let ys = dots.iter().map(|d| d.0.y).chain(rules.iter().filter_map(|r| match r {
            Rule::Horizontal { y, .. } => Some(*y),
            Rule::Vertical { .. } => None,
        }));
        let (y0, y1) = span(ys.clone().fold(0.0_f64, f64::min), ys.fold(f64::NEG_INFINITY, f64::max));
        let pad = (y1 - y0) * 0.06;
        let (y0, y1) = (y0 - pad, y1 + pad);
        let (x0, x1) = x_range.unwrap_or_else(|| {
            span(
                dots.iter().map(|d| d.0.x).fold(f64::INFINITY, f64::min),
                dots.iter().map(|d| d.0.x).fold(f64::NEG_INFINITY, f64::max),
            )
        });
        let h = 360 + LEGEND_H;
        let svg = render(h, |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(title, (FONT, 20))
                .margin(12)
                .margin_bottom(12 + LEGEND_H)
                .x_label_area_size(36)
                .y_label_area_size(56)
                .build_cartesian_2d(x0..x1, y0..y1)
                .map_err(|e| e.to_string())?;
            let fmt = |v: &f64| num(*v, 1);
            chart
                .configure_mesh()
                .x_desc(x_desc)
                .y_desc(y_desc)
                .x_label_formatter(&|v: &f64| num(*v, 2))
                .y_label_formatter(&fmt)
                .light_line_style(RGBColor(238, 240, 242))
                .label_style((FONT, 14))
                .axis_desc_style((FONT, 15))
                .draw()
                .map_err(|e| e.to_string())?;
            let rule_colour = RGBColor(154, 103, 0);
            let label_style =
                TextStyle::from((FONT, 14).into_font()).color(&rule_colour).pos(Pos::new(HPos::Right, VPos::Bottom));
            for r in rules {
                let (line, at) = match r {
                    Rule::Horizontal { y, label } => ([(x0, *y), (x1, *y)], ((x1, *y), label)),
                    Rule::Vertical { x, label } => ([(*x, y0), (*x, y1)], ((*x, y1), label)),
                };
                chart
                    .draw_series(DashedLineSeries::new(line, 5, 4, rule_colour.stroke_width(1)))
                    .map_err(|e| e.to_string())?;
                chart.draw_series([Text::new(at.1.clone(), at.0, label_style.clone())]).map_err(|e| e.to_string())?;
            }
            for g in 0..groups.len() {
                let c = colour(PALETTE[g % PALETTE.len()]);
                chart
                    .draw_series(
                        dots.iter()
                            .filter(|d| d.0.group == g)
                            .map(|d| Circle::new((d.0.x, d.0.y), 4, c.mix(0.8).filled())),
                    )
                    .map_err(|e| e.to_string())?;
            }
            let items: Vec<_> = groups
                .iter()
                .enumerate()
                .map(|(g, name)| ((*name).to_owned(), colour(PALETTE[g % PALETTE.len()]), Mark::Dot))
                .collect();
            legend_row(root, h, &items)?;
            Ok(())
        });
        Chart { title: title.into(), svg, table }
    }
}

#[cfg(all(test, feature = "charts"))]
mod tests {
    use super::*;

    /// Issue 40 (item 10): a tick on a whole second has no ".0"; one
    /// between seconds keeps its fraction, so the ticks still differ.
    #[test]
    fn time_axes_say_no_empty_fraction() {
        let t0 = 1_764_000_000.0; // 16:00:00 UTC
        assert_eq!(time_label(t0 + 3.0, 60.0), "16:00:03");
        assert_eq!(time_label(t0 + 3.5, 60.0), "16:00:03.5");
        assert_eq!(time_label(t0 + 2.999_99, 60.0), "16:00:03");
        assert_eq!(time_label(t0 + 1.0, 4.0), "16:00:01");
        assert_eq!(time_label(t0 + 1.25, 4.0), "16:00:01.25");
    }

    /// Issue 40 (item 10): the legend is drawn under the axes, never over the data.
    #[test]
    fn legends_sit_under_the_chart() {
        let c = lines_over_time("Progress", "cells", &series());
        let h: f64 = c.svg.split("height=\"").nth(1).and_then(|r| r.split('"').next()).unwrap().parse().unwrap();
        for name in ["covered", "failed"] {
            let tag = c
                .svg
                .split("<text")
                .filter_map(|t| t.split("</text>").next()?.split_once('>'))
                .find(|(_, text)| text.trim() == name)
                .map(|(tag, _)| tag)
                .unwrap_or_else(|| panic!("{name} in the legend"));
            let y: f64 = tag.split(" y=\"").nth(1).and_then(|r| r.split('"').next()).unwrap().parse().unwrap();
            assert!(y > h - 30.0, "{name}'s legend entry at y={y} is under the axes (picture {h} high)");
        }
    }

    fn series() -> Vec<Series> {
        vec![
            Series { name: "covered".into(), points: vec![(1_764_000_000.0, 1.0), (1_764_003_600.0, 5.0)] },
            Series { name: "failed".into(), points: vec![(1_764_000_000.0, 0.0), (1_764_003_600.0, 2.0)] },
        ]
    }

    #[test]
    fn a_chart_is_the_same_svg_for_the_same_figures_with_its_legend_and_axes() {
        let a = lines_over_time("Progress", "cells", &series());
        let b = lines_over_time("Progress", "cells", &series());
        assert_eq!(a, b);
        assert!(a.svg.starts_with("<svg"), "{}", &a.svg[..a.svg.len().min(80)]);
        for text in ["Progress", "covered", "failed", "time (UTC)", "cells"] {
            assert!(a.svg.contains(text), "the chart shows {text}");
        }
        assert_eq!(a.table.rows.len(), 4);
        assert_eq!(a.table.rows[1], vec!["covered".to_string(), "2025-11-24 17:00:00Z".into(), "5".into()]);
    }

    #[test]
    fn nothing_to_draw_is_an_empty_picture_and_an_empty_table() {
        let c = lines_over_time("Progress", "cells", &[]);
        assert!(c.svg.is_empty() && c.table.rows.is_empty());
        let t = timeline("Cells", &[]);
        assert!(t.svg.is_empty());
    }

    #[test]
    fn a_timeline_names_each_row_and_each_phase_drawn() {
        let rows = vec![
            TimelineRow { label: "c-1".into(), segments: vec![(0.0, 5.0, Phase::Queued), (5.0, 20.0, Phase::Running)] },
            TimelineRow {
                label: "c-2".into(),
                segments: vec![(0.0, 8.0, Phase::Retried), (8.0, 9.0, Phase::Paused), (9.0, 30.0, Phase::Running)],
            },
        ];
        let c = timeline("Cells", &rows);
        for text in ["c-1", "c-2", "queued", "running", "retried attempt", "paused"] {
            assert!(c.svg.contains(text), "the timeline shows {text}");
        }
        assert!(!c.svg.contains("failed attempt"), "a phase not drawn is not in the legend");
        assert_eq!(c.table.rows.len(), 5);
        assert_eq!(c.table.rows[4][4], "21");
    }

    #[test]
    fn intervals_and_scatter_draw_every_row_and_rule() {
        let c = intervals(
            "Pass rate",
            "pass rate",
            &[IntervalRow { label: "A".into(), estimate: 0.5, lo: 0.3, hi: 0.7 }],
            true,
        );
        assert!(c.svg.contains(">\nA\n</text>"), "{}", c.svg);
        assert_eq!(c.table.rows[0], vec!["A".to_string(), "50".into(), "30".into(), "70".into()]);
        let s = scatter(
            "Admission",
            ("|corr|", "t"),
            &["accepted", "refused"],
            &[(Dot { x: 0.2, y: 3.0, group: 0 }, "t1".into()), (Dot { x: 0.9, y: 1.0, group: 1 }, "t2".into())],
            &[Rule::Horizontal { y: 2.0, label: "t threshold 2.00".into() }],
            Some((0.0, 1.0)),
        );
        for text in ["accepted", "refused", "t threshold 2.00", "|corr|"] {
            assert!(s.svg.contains(text), "the scatter shows {text}");
        }
    }
}
