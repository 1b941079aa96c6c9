//! The Markdown report: a summary table of every check, then the slope map point by point.

use std::fmt::Write;

use crate::suite::{BOUNDARY_BAND, Check, Convergence, SLIDE_THRESHOLD, SlopeRun, number};

fn verdict(pass: bool) -> &'static str {
    if pass { "pass" } else { "**FAIL**" }
}

/// One table of checks.
pub fn table(checks: &[Check]) -> String {
    let mut out = String::from("| check | measured | expected | tolerance | result |\n|---|---:|---:|---|---|\n");
    for c in checks {
        let unit = if c.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", c.unit)
        };
        let _ = writeln!(
            out,
            "| {} | {}{unit} | {}{unit} | {} | {} |",
            c.name,
            number(c.measured),
            number(c.expected),
            c.tolerance.describe(c.unit),
            verdict(c.pass)
        );
    }
    out
}

/// The whole report. `summary` are the checks shown first; the slope map's per-point checks are
/// `map_checks`, one per run of `runs`.
pub fn report(summary: &[Check], runs: &[SlopeRun], map_checks: &[Check], seconds: f64) -> String {
    let failed = summary.iter().chain(map_checks).filter(|c| !c.pass).count();
    let total = summary.len() + map_checks.len();
    let mut out = String::from("# bevy_canal validation report\n\n");
    let _ = writeln!(
        out,
        "Produced by `cargo run --release --example validate`. {} of {total} checks pass{}.\n",
        total - failed,
        if failed == 0 {
            String::new()
        } else {
            format!(", **{failed} fail**")
        }
    );
    out.push_str("## Summary\n\n");
    out.push_str(&table(summary));
    let _ = write!(
        out,
        "\n## Stick/slide map\n\nA unit box released at rest on a slope θ with μ on both surfaces, {seconds} s at \
         60 Hz. It *slides* iff it moved more than {SLIDE_THRESHOLD:e} m along the slope. The class is checked \
         against tan θ > μ on every point at least {BOUNDARY_BAND}° from the friction angle atan μ; every point's \
         acceleration, from s = a h² n(n+1)/2, is checked against the exact g(sin θ − μ cos θ)⁺ (θ as the `f32` \
         rotation has it) to 0.5% plus 1e-5 m/s².\n\n"
    );
    out.push_str(
        "| θ | μ | θ − atan μ | displacement, m | class | measured a, m/s² | exact a, m/s² | result |\n\
         |---:|---:|---:|---:|---|---:|---:|---|\n",
    );
    for (run, check) in runs.iter().zip(map_checks) {
        let slides = run.displacement() > SLIDE_THRESHOLD;
        let class = match (run.margin_degrees().abs() < BOUNDARY_BAND, slides) {
            (true, true) => "slid (boundary band)",
            (true, false) => "stuck (boundary band)",
            (false, true) => "slid",
            (false, false) => "stuck",
        };
        let _ = writeln!(
            out,
            "| {}° | {:.1} | {:+.2}° | {} | {class} | {} | {} | {} |",
            run.degrees,
            run.mu,
            run.margin_degrees(),
            number(run.displacement()),
            number(check.measured),
            number(check.expected),
            verdict(check.pass)
        );
    }
    out
}

/// The pyramid solve's trace as CSV: one row per Newton iterate, with the outer iteration's
/// residuals on the row of its last iterate.
pub fn convergence_csv(data: &Convergence) -> String {
    let mut out = String::from("newton_iterate,outer_iteration,newton_gradient,outer_ncp_residual,outer_feasibility\n");
    for (k, (outer, gradient)) in data.newton.iter().enumerate() {
        let _ = write!(out, "{},{outer},{gradient:e}", k + 1);
        match data.outer.iter().find(|o| o.0 == k) {
            Some((_, ncp, feasibility, _)) => {
                let _ = writeln!(out, ",{ncp:e},{feasibility:e}");
            }
            None => out.push_str(",,\n"),
        }
    }
    out
}
