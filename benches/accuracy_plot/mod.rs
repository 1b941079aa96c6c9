//! The time-to-accuracy sweep of `scenes.rs` drawn and saved: one panel per scene, each
//! setting's median step time against the worst residual its measured steps reached, CANAL by
//! tolerance and Rapier by iteration count, both axes logarithmic. Writes
//! `target/bench/time_to_accuracy.svg` and the same figures as `time_to_accuracy.csv`; the
//! README's plot (`docs/time_to_accuracy.svg`) is a copy of one run's. Knows nothing of the
//! engines: it is handed the numbers.

use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

/// One setting of one engine on one scene.
pub struct Point {
    /// The tolerance (CANAL) or iteration count (Rapier), as printed.
    pub setting: String,
    pub median_ms: f64,
    pub mean_ms: f64,
    /// Worst residual over the measured steps, m/s.
    pub residual: f64,
}

/// One scene's sweep.
pub struct Sweep {
    pub scene: &'static str,
    pub canal: Vec<Point>,
    pub rapier: Vec<Point>,
}

/// The residual the issue asks of every step, m/s: drawn as a line.
const TARGET: f64 = 1e-6;

const PANEL: (u32, u32) = (560, 480);

const CANAL_COLOR: RGBColor = RGBColor(0, 90, 200);
const RAPIER_COLOR: RGBColor = RGBColor(210, 60, 20);

/// Writes the plot and the CSV into `target/bench/` and returns the plot's path.
pub fn write(sweeps: &[Sweep]) -> Result<PathBuf, Box<dyn Error>> {
    let dir = Path::new("target/bench");
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("time_to_accuracy.csv"), csv(sweeps))?;
    let path = dir.join("time_to_accuracy.svg");
    plot(&path, sweeps)?;
    Ok(path)
}

fn csv(sweeps: &[Sweep]) -> String {
    let mut out = String::from("scene,engine,setting,median_ms,mean_ms,worst_residual_m_per_s\n");
    for sweep in sweeps {
        for (engine, points) in [("canal", &sweep.canal), ("rapier", &sweep.rapier)] {
            for p in points {
                let _ = writeln!(
                    out,
                    "{},{engine},{},{},{},{}",
                    sweep.scene, p.setting, p.median_ms, p.mean_ms, p.residual
                );
            }
        }
    }
    out
}

/// The least and the largest of the positive, finite `values` (infinity and zero if none): a
/// residual of zero has no place on a log axis, and is drawn at the floor.
fn positive_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values
        .filter(|&x| x > 0.0 && x.is_finite())
        .fold((f64::INFINITY, 0.0), |(least, largest), x| {
            (least.min(x), largest.max(x))
        })
}

/// The decade at or below (`down`) or at or above `x`.
fn decade(x: f64, down: bool) -> f64 {
    let exponent = x.log10();
    10f64.powf(if down { exponent.floor() } else { exponent.ceil() })
}

fn plot(path: &Path, sweeps: &[Sweep]) -> Result<(), Box<dyn Error>> {
    let size = (PANEL.0 * sweeps.len().max(1) as u32, PANEL.1);
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    for (area, sweep) in root.split_evenly((1, sweeps.len().max(1))).iter().zip(sweeps) {
        panel(area, sweep)?;
    }
    root.present()?;
    Ok(())
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    sweep: &Sweep,
) -> Result<(), Box<dyn Error>>
where
    DB::ErrorType: 'static,
{
    let all = || sweep.canal.iter().chain(&sweep.rapier);
    let (smallest, largest) = positive_range(all().map(|p| p.residual));
    let (smallest, largest) = (smallest.min(TARGET), largest.max(TARGET));
    let (x_min, x_max) = (decade(smallest, true) / 10.0, decade(largest, false) * 10.0);
    let (fastest, slowest) = positive_range(all().map(|p| p.median_ms));
    // A decade above the slowest point keeps the legend off the data.
    let (y_min, y_max) = (
        decade(fastest, true),
        10.0 * decade(slowest, false).max(10.0 * decade(fastest, true)),
    );
    let mut chart = ChartBuilder::on(area)
        .caption(sweep.scene, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d((x_min..x_max).log_scale(), (y_min..y_max).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("worst residual over the measured steps, m/s")
        .y_desc("median step time, ms")
        .x_label_formatter(&|x| format!("{x:.0e}"))
        .y_label_formatter(&|y| format!("{y}"))
        .draw()?;
    chart
        .draw_series(LineSeries::new(
            [(TARGET, y_min), (TARGET, y_max)],
            BLACK.mix(0.6).stroke_width(2),
        ))?
        .label("1e-6 m/s: the issue's target for every step")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.6).stroke_width(2)));
    let engines = [
        (&sweep.canal, CANAL_COLOR, "CANAL by tolerance, full NCP residual"),
        (&sweep.rapier, RAPIER_COLOR, "Rapier by iterations, normal part only"),
    ];
    for (points, color, label) in engines {
        let at = |p: &Point| (p.residual.max(x_min), p.median_ms.max(y_min));
        chart
            .draw_series(LineSeries::new(points.iter().map(at), color.stroke_width(2)))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(points.iter().map(|p| Circle::new(at(p), 4, color.filled())))?;
        chart.draw_series(labelled(points).into_iter().map(|(p, label)| {
            EmptyElement::at(at(p)) + Text::new(label, (6, -14), ("sans-serif", 12).into_font().color(&color))
        }))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// The points that carry a label, each with the settings of the points that land on it joined
/// into one: CANAL's steps end at the same residuals over several tolerances, and their labels
/// would overprint.
fn labelled(points: &[Point]) -> Vec<(&Point, String)> {
    // Within about a tenth of a decade on both axes counts as the same place: a label's height.
    let near = |a: &Point, b: &Point| {
        (a.residual.log10() - b.residual.log10()).abs() < 0.11
            && (a.median_ms.log10() - b.median_ms.log10()).abs() < 0.11
    };
    let mut out: Vec<(&Point, String)> = Vec::new();
    for p in points {
        match out.iter_mut().find(|(q, _)| near(p, q)) {
            Some((_, label)) => {
                label.push_str(", ");
                label.push_str(&p.setting);
            }
            None => out.push((p, p.setting.clone())),
        }
    }
    out
}
