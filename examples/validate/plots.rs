//! SVG plots of the suite's measurements (plotters, SVG backend: no fonts needed).

use std::error::Error;
use std::ops::Range;
use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use crate::suite::{BOUNDARY_BAND, Convergence, SLIDE_THRESHOLD, SlopeRun};

type Result = std::result::Result<(), Box<dyn Error>>;

const SIZE: (u32, u32) = (760, 500);

/// An axis: its label, range and tick-label format.
type Axis<'a, R> = (&'a str, R, &'a dyn Fn(&<R as AsRangedCoord>::Value) -> String);

/// Tick labels with `digits` decimals.
fn fixed(digits: usize) -> impl Fn(&f64) -> String {
    move |x| format!("{x:.digits$}")
}

/// Tick labels of a log axis: powers of ten.
fn power(x: &f64) -> String {
    format!("{x:.0e}")
}

/// Draws one titled chart with axis labels into `path`, then lets `draw` add the series; the
/// legend goes at `legend`.
fn chart<X, Y>(
    path: &Path,
    title: &str,
    (x_desc, x_range, x_format): Axis<X>,
    (y_desc, y_range, y_format): Axis<Y>,
    legend: SeriesLabelPosition,
    draw: impl FnOnce(&mut ChartContext<SVGBackend, Cartesian2d<X::CoordDescType, Y::CoordDescType>>) -> Result,
) -> Result
where
    X: AsRangedCoord,
    Y: AsRangedCoord,
    X::CoordDescType: ValueFormatter<X::Value>,
    Y::CoordDescType: ValueFormatter<Y::Value>,
{
    let root: DrawingArea<SVGBackend, Shift> = SVGBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x_range, y_range)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_label_formatter(x_format)
        .y_label_formatter(y_format)
        .draw()?;
    draw(&mut chart)?;
    chart
        .configure_series_labels()
        .position(legend)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// A legend entry: a short line in `color`.
fn line_key(color: RGBColor) -> impl Fn((i32, i32)) -> PathElement<(i32, i32)> {
    move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
}

/// The stick/slide map: each grid point marked by what the box did, the boundary tan θ = μ, and a
/// cross on every point whose acceleration check failed.
pub fn slope_map(path: &Path, runs: &[SlopeRun], failed: &[bool]) -> Result {
    chart(
        path,
        "Box on a slope, 1 s from rest: slides iff it moved > 0.1 mm",
        ("slope θ, degrees", 0.0..65.0, &fixed(0)),
        ("friction coefficient μ", 0.0..1.35, &fixed(1)),
        SeriesLabelPosition::UpperLeft,
        |chart| {
            let boundary = (0..=650).map(|i| i as f64 / 10.0).map(|d| (d, d.to_radians().tan()));
            chart
                .draw_series(LineSeries::new(boundary.filter(|p| p.1 <= 1.1), BLACK.stroke_width(2)))?
                .label("exact boundary tan θ = μ")
                .legend(line_key(BLACK));
            let band = runs.iter().filter(|r| r.margin_degrees().abs() < BOUNDARY_BAND);
            chart
                .draw_series(band.map(|r| Circle::new((r.degrees, r.mu), 9, BLACK.stroke_width(2))))?
                .label(format!("within {BOUNDARY_BAND}° of it: class not checked"))
                .legend(|(x, y)| Circle::new((x + 10, y), 7, BLACK.stroke_width(2)));
            for (slides, color, label) in [(true, RED, "slid"), (false, BLUE, "stuck")] {
                let points = runs.iter().filter(|r| (r.displacement() > SLIDE_THRESHOLD) == slides);
                chart
                    .draw_series(points.map(|r| Circle::new((r.degrees, r.mu), 5, color.filled())))?
                    .label(label)
                    .legend(move |(x, y)| Circle::new((x + 10, y), 5, color.filled()));
            }
            let failures = runs.iter().zip(failed).filter(|(_, f)| **f);
            chart.draw_series(failures.map(|(r, _)| Cross::new((r.degrees, r.mu), 8, BLACK.stroke_width(2))))?;
            Ok(())
        },
    )
}

/// Measured against exact acceleration on every grid point.
pub fn slope_acceleration(path: &Path, runs: &[SlopeRun]) -> Result {
    let top = runs.iter().map(SlopeRun::exact_acceleration).fold(1.0, f64::max) * 1.05;
    chart(
        path,
        "Slope map: measured acceleration against g(sin θ − μ cos θ)⁺",
        ("exact acceleration, m/s²", 0.0..top, &fixed(0)),
        ("measured acceleration, m/s²", 0.0..top, &fixed(0)),
        SeriesLabelPosition::UpperLeft,
        |chart| {
            chart
                .draw_series(LineSeries::new([(0.0, 0.0), (top, top)], BLACK.stroke_width(1)))?
                .label("measured = exact")
                .legend(line_key(BLACK));
            chart
                .draw_series(
                    runs.iter()
                        .map(|r| Circle::new((r.exact_acceleration(), r.measured_acceleration()), 4, RED.filled())),
                )?
                .label("grid point")
                .legend(|(x, y)| Circle::new((x + 10, y), 4, RED.filled()));
            Ok(())
        },
    )
}

/// NCP residual per outer iteration and the Newton gradient per Newton iteration, log scale.
pub fn convergence(path: &Path, data: &Convergence) -> Result {
    let floor = data
        .newton
        .iter()
        .map(|n| n.1)
        .chain(data.outer.iter().map(|o| o.1))
        .filter(|v| *v > 0.0)
        .fold(data.tolerance, f64::min)
        / 1e3; // room for the legend below the data
    let last = data.newton.len().max(1) as f64;
    let title = format!(
        "Cold solve of a {}-box pyramid ({} contacts), tolerance {:.0e} m/s",
        data.bodies, data.contacts, data.tolerance
    );
    let y: Range<f64> = floor..1e3;
    chart(
        path,
        &title,
        (
            "Newton iterate (cumulative over the outer iterations)",
            0.0..last + 1.0,
            &fixed(0),
        ),
        ("m/s", y.log_scale(), &power),
        SeriesLabelPosition::LowerLeft,
        |chart| {
            let newton: Vec<(u32, (f64, f64))> = (data.newton.iter().enumerate())
                .map(|(k, n)| (n.0, ((k + 1) as f64, n.1.max(floor))))
                .collect();
            // One line per outer iteration: each is a separate Newton solve of its surrogate.
            for (i, run) in newton.chunk_by(|a, b| a.0 == b.0).enumerate() {
                let series = chart.draw_series(LineSeries::new(run.iter().map(|p| p.1), BLUE.stroke_width(1)))?;
                if i == 0 {
                    series
                        .label("Newton: ‖A⁻¹∇Φ‖∞ on each outer iteration's surrogate")
                        .legend(line_key(BLUE));
                }
            }
            chart.draw_series(newton.iter().map(|p| Circle::new(p.1, 2, BLUE.filled())))?;
            let outer = data.outer.iter().map(|o| ((o.0 + 1) as f64, o.1.max(floor)));
            chart
                .draw_series(LineSeries::new(outer.clone(), RED.stroke_width(2)))?
                .label("outer: NCP residual")
                .legend(line_key(RED));
            chart.draw_series(outer.map(|p| Circle::new(p, 4, RED.filled())))?;
            chart
                .draw_series(LineSeries::new(
                    [(0.0, data.tolerance), (last + 1.0, data.tolerance)],
                    BLACK.stroke_width(1),
                ))?
                .label("tolerance")
                .legend(line_key(BLACK));
            Ok(())
        },
    )
}

/// A sliding box's displacement against the analytic curves.
pub fn trajectory(path: &Path, run: &SlopeRun) -> Result {
    let a = run.exact_acceleration();
    let end = run.trajectory.last().map_or(1.0, |p| p.0);
    let title = format!(
        "Box sliding down {}°, μ = {}: s(t) against a t²/2, a = {a:.4} m/s²",
        run.degrees, run.mu
    );
    chart(
        path,
        &title,
        ("t, s", 0.0..end * 1.02, &fixed(1)),
        ("distance along the slope, m", 0.0..run.displacement() * 1.05, &fixed(1)),
        SeriesLabelPosition::UpperLeft,
        |chart| {
            let curve = (0..=200).map(|i| end * i as f64 / 200.0).map(|t| (t, a * t * t / 2.0));
            chart
                .draw_series(LineSeries::new(curve, BLACK.stroke_width(2)))?
                .label("analytic a t²/2")
                .legend(line_key(BLACK));
            let h = run.dt;
            let discrete = (0..=run.trajectory.len()).map(|k| (k as f64 * h, run.analytic(k)));
            chart
                .draw_series(LineSeries::new(discrete, BLUE.stroke_width(1)))?
                .label("semi-implicit Euler a h² k(k+1)/2")
                .legend(line_key(BLUE));
            chart
                .draw_series(
                    run.trajectory
                        .iter()
                        .step_by(4)
                        .map(|&p| Circle::new(p, 3, RED.filled())),
                )?
                .label("measured (every 4th step)")
                .legend(|(x, y)| Circle::new((x + 10, y), 3, RED.filled()));
            Ok(())
        },
    )
}
