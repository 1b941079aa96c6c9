//! The analytic validation suite: free fall, a stick/slide map on slopes, stopping distances
//! (sliding, and rolling against rolling friction),
//! restitution, contact impulses, the solver's convergence on a pyramid, a sliding box's
//! trajectory, and free rotation (a tumbling box's conserved momentum and energy, the
//! tennis-racket flip, a top's precession), each against its exact answer and a stated tolerance.
//!
//! `cargo run --release --example validate` writes `target/validation/report.md` and SVG plots
//! beside it, prints the summary table, and exits with status 1 if any check fails.
//! `tests/validate_subset.rs` runs a fast subset of the same suite.

#[path = "../../tests/app/mod.rs"]
mod app;
mod plots;
mod report;
mod suite;

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use suite::Check;

/// The slope map's grid and run length.
const DEGREES: [f64; 12] = [5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0, 45.0, 50.0, 55.0, 60.0];
const MUS: [f64; 10] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];
const SLOPE_SECONDS: f64 = 1.0;

fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    eprintln!("{what}: {:.1} s", start.elapsed().as_secs_f64());
    out
}

fn main() -> ExitCode {
    let dir = Path::new("target/validation");
    if let Err(e) = std::fs::create_dir_all(dir) {
        eprintln!("cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let mut summary: Vec<Check> = timed("free fall", suite::free_fall);
    let (runs, mut map_checks) = timed("slope map", || suite::slope_map(&DEGREES, &MUS, SLOPE_SECONDS));
    let map_summary = map_checks.split_off(runs.len());
    let passing = map_checks.iter().filter(|c| c.pass).count();
    summary.push(Check::new(
        format!(
            "slope map {}×{}: acceleration within tolerance (per point below)",
            DEGREES.len(),
            MUS.len()
        ),
        passing as f64,
        runs.len() as f64,
        "points",
        suite::Tolerance::Absolute(0.0),
    ));
    summary.extend(map_summary);
    timed("stop distances", || {
        for mu in [0.2, 0.4, 0.8] {
            summary.extend(suite::stop_distance(10.0, mu));
        }
    });
    timed("rolling stop distances", || {
        for mu_r in [0.002, 0.005, 0.01] {
            summary.extend(suite::rolling_stop_distance(2.0, mu_r));
        }
    });
    timed("bounces", || {
        for e in [0.3, 0.5, 0.7, 0.9] {
            summary.push(suite::bounce(e, 2.0, 240.0));
        }
    });
    summary.extend(timed("resting impulses", suite::resting_impulses));
    let (convergence, checks) = timed("pyramid convergence", || suite::pyramid_convergence(20, 1e-10));
    summary.extend(checks);
    let (slide, checks) = timed("trajectory", suite::trajectory);
    summary.extend(checks);
    timed("rotation", || {
        summary.extend(suite::tumbling_box(60));
        summary.extend(suite::tennis_racket());
        summary.extend(suite::level_top_precession());
    });

    let failed: Vec<bool> = map_checks.iter().map(|c| !c.pass).collect();
    let plotted = [
        (
            "slope_map.svg",
            plots::slope_map(&dir.join("slope_map.svg"), &runs, &failed),
        ),
        (
            "slope_acceleration.svg",
            plots::slope_acceleration(&dir.join("slope_acceleration.svg"), &runs),
        ),
        (
            "convergence.svg",
            plots::convergence(&dir.join("convergence.svg"), &convergence),
        ),
        ("trajectory.svg", plots::trajectory(&dir.join("trajectory.svg"), &slide)),
    ];
    let mut ok = true;
    for (name, result) in plotted {
        if let Err(e) = result {
            eprintln!("plot {name} failed: {e}");
            ok = false;
        }
    }
    if let Err(e) = std::fs::write(dir.join("convergence.csv"), report::convergence_csv(&convergence)) {
        eprintln!("cannot write the convergence trace: {e}");
        ok = false;
    }
    let text = report::report(&summary, &runs, &map_checks, SLOPE_SECONDS);
    if let Err(e) = std::fs::write(dir.join("report.md"), &text) {
        eprintln!("cannot write the report: {e}");
        ok = false;
    }
    println!("{}", report::table(&summary));
    let failures = summary.iter().chain(&map_checks).filter(|c| !c.pass).count();
    println!(
        "{} checks, {failures} failed; report and plots in {}",
        summary.len() + map_checks.len(),
        dir.display()
    );
    if ok && failures == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
