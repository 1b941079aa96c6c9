//! The CANAL solver alone on island problems captured from the plugin.
//!
//! A scene's trajectory is chaotic: change the solver's settings and the bodies go elsewhere, so
//! two settings stepped through the plugin solve different problems. This benchmark first steps
//! each scene of `scenes.rs` through the plugin with [`CapturedProblems`] inserted, keeps the
//! island problems of its measured steps (warm starts included), and then re-solves exactly those
//! with a fresh [`Solver`]: with default settings, and on the sphere pen also with the variants of
//! [`variants`], all on the same problems. (The capture itself runs the solver as built, so two
//! versions of the solver see the same problems only while their trajectories agree.)
//!
//! `cargo bench --bench replay -- nomatch` prints, per scene and setting: the captured steps and
//! islands, Newton and polish iterations summed and per step (median, 90th percentile, largest),
//! the shift Newton steps attempted and taken, the islands that did not converge, the worst
//! residual and the solve time per step; then the five costliest steps; then, for the defaults,
//! where the solves that converged in their first run spent their Newton iterations, by the
//! residual each outer iteration started from.
//! Criterion then times the replay of each scene's first ten measured steps. `SCENES=pen` keeps
//! only the scenes whose names contain one of the comma-separated words.

use std::time::Duration;

use bevy_canal::prelude::*;
use bevy_canal::solver::{Solution, SolveReport, Solver};
use criterion::{Criterion, criterion_group, criterion_main};

mod scene_set;
use scene_set::{Scene, scenes};

/// Steps `scene` through the plugin and returns the island problems of its measured steps, each
/// numbered from the first measured step.
fn capture(scene: &Scene) -> Vec<CapturedIsland> {
    let (mut app, _) = scene_set::canal_app(scene, None);
    for _ in 0..scene.settle {
        app.world_mut().run_schedule(PhysicsSchedule);
    }
    app.init_resource::<CapturedProblems>();
    for _ in 0..scene.measure {
        app.world_mut().run_schedule(PhysicsSchedule);
    }
    let mut captured = app
        .world_mut()
        .remove_resource::<CapturedProblems>()
        .unwrap_or_default()
        .islands;
    captured.retain(|island| !island.problem.contacts.is_empty() || !island.problem.constraints.is_empty());
    captured
}

/// The settings compared with the defaults on the sphere pen, each with its label.
fn variants() -> Vec<(&'static str, SolverSettings)> {
    let default = SolverSettings::default();
    vec![
        (
            "κ₀ 300 always",
            SolverSettings {
                warm_penalty_max_residual: f64::INFINITY,
                ..default
            },
        ),
        (
            "no polish",
            SolverSettings {
                polish_iterations: 0,
                ..default
            },
        ),
        (
            "no retry",
            SolverSettings {
                retry_above: f64::INFINITY,
                ..default
            },
        ),
        (
            "warm trend",
            SolverSettings {
                warm_trend: true,
                ..default
            },
        ),
    ]
}

/// Solves every problem with one solver, as the plugin reuses one per island.
fn replay(problems: &[CapturedIsland], settings: SolverSettings) -> Vec<SolveReport> {
    let mut solver = Solver::new(settings);
    let mut solution = Solution::default();
    problems
        .iter()
        .map(|c| solver.solve(&c.problem, &mut solution))
        .collect()
}

/// The value at fraction `q` of `values`, sorted in place.
fn quantile(values: &mut [u32], q: f64) -> u32 {
    values.sort_unstable();
    values[((values.len() - 1) as f64 * q).round() as usize]
}

fn summary(label: &str, scene: &Scene, problems: &[CapturedIsland], reports: &[SolveReport]) {
    let steps = scene.measure;
    // Per step: the islands' Newton and polish iterations and solve times add up.
    let mut newton = vec![0_u32; steps];
    let mut polish = vec![0_u32; steps];
    let mut time = vec![Duration::ZERO; steps];
    let mut failed = 0;
    let mut worst = 0.0_f64;
    let (mut shift_steps, mut shift_taken) = (0_u32, 0_u32);
    for (c, r) in problems.iter().zip(reports) {
        let k = c.step;
        newton[k] += r.newton_iterations;
        polish[k] += r.polish_iterations;
        shift_steps += r.shift_newton_steps;
        shift_taken += r.shift_newton_taken;
        time[k] += r.time;
        failed += usize::from(!r.converged);
        worst = worst.max(r.worst_residual());
    }
    let total_ms = time.iter().sum::<Duration>().as_secs_f64() * 1e3;
    let costliest = {
        let mut order: Vec<usize> = (0..steps).collect();
        order.sort_by(|&a, &b| time[b].cmp(&time[a]));
        order.truncate(5);
        order
            .iter()
            .map(|&k| {
                format!(
                    "{} ({} Newton, {:.1} ms)",
                    scene.settle + k,
                    newton[k] + polish[k],
                    time[k].as_secs_f64() * 1e3
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut solves: Vec<u32> = newton.iter().zip(&polish).map(|(n, p)| n + p).collect();
    println!(
        "{:<16} {:<13} {:>9} {:>7} | {:>8} {:>7} {:>11} | {:>6} {:>6} {:>6} | {:>6} {:>9} | {:>9}",
        scene.name,
        label,
        format!("{}..{}", scene.settle, scene.settle + steps),
        problems.len(),
        newton.iter().sum::<u32>(),
        polish.iter().sum::<u32>(),
        format!("{shift_steps}/{shift_taken}"),
        quantile(&mut solves, 0.5),
        quantile(&mut solves, 0.9),
        quantile(&mut solves, 1.0),
        failed,
        format!("{worst:.1e}"),
        format!("{:.3}", total_ms / steps as f64),
    );
    println!("{:<30} costliest steps: {costliest}", "");
}

/// Where a scene's converging solves spend their Newton iterations: each outer iteration of a
/// solve that converged in its first run, counted in the band of the residual it started from
/// (the last outer iteration's; the first one counts in the top band). Solved again with
/// `record_trace`, which changes no iterate.
fn iteration_profile(scene: &Scene, problems: &[CapturedIsland]) {
    const BANDS: [f64; 8] = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8];
    let mut solver = Solver::new(SolverSettings {
        record_trace: true,
        ..SolverSettings::default()
    });
    let mut solution = Solution::default();
    let (mut outer, mut newton) = ([0_u32; BANDS.len() + 1], [0_u32; BANDS.len() + 1]);
    for captured in problems {
        let report = solver.solve(&captured.problem, &mut solution);
        if !report.converged || report.retries > 0 {
            continue;
        }
        let (mut started_at, mut newton_before) = (f64::INFINITY, 0);
        for iteration in solver.outer_trace() {
            let band = BANDS.iter().take_while(|&&edge| started_at <= edge).count();
            outer[band] += 1;
            newton[band] += iteration.newton_iterations - newton_before;
            newton_before = iteration.newton_iterations;
            started_at = iteration.ncp_residual.max(iteration.feasibility_residual);
        }
    }
    println!(
        "{:<16} converged first runs' outer iterations by the residual they started from (m/s): outer / Newton",
        scene.name
    );
    let bands = (0..=BANDS.len()).map(|band| {
        let label = match band {
            0 => format!("> {:.0e}", BANDS[0]),
            b if b == BANDS.len() => format!("≤ {:.0e}", BANDS[b - 1]),
            b => format!("{:.0e}–{:.0e}", BANDS[b], BANDS[b - 1]),
        };
        format!("{label}: {} / {}", outer[band], newton[band])
    });
    println!("{:<16} {}", "", bands.collect::<Vec<_>>().join(", "));
}

fn bench(c: &mut Criterion) {
    println!(
        "\nThe solver alone, default settings and on the pen variants, on the island problems the plugin captured in each \
         scene's measured steps; Newton and polish iterations are linear solves; shift/taken counts the \
         Newton steps on the sliding contacts' shifts attempted and taken"
    );
    println!(
        "{:<16} {:<13} {:>9} {:>7} | {:>8} {:>7} {:>11} | {:>6} {:>6} {:>6} | {:>6} {:>9} | {:>9}",
        "scene",
        "settings",
        "steps",
        "islands",
        "Newton",
        "polish",
        "shift/taken",
        "median",
        "p90",
        "max",
        "failed",
        "worst m/s",
        "ms/step"
    );
    let captured: Vec<(Scene, Vec<CapturedIsland>)> = scenes()
        .into_iter()
        .map(|scene| {
            let problems = capture(&scene);
            (scene, problems)
        })
        .collect();
    for (scene, problems) in &captured {
        summary("default", scene, problems, &replay(problems, SolverSettings::default()));
        iteration_profile(scene, problems);
        if scene.name.contains("pen") {
            for (label, settings) in variants() {
                summary(label, scene, problems, &replay(problems, settings));
            }
        }
    }
    for (scene, problems) in &captured {
        let first: Vec<&CapturedIsland> = problems.iter().take_while(|c| c.step < 10).collect();
        let mut group = c.benchmark_group(format!("replay/{}", scene.name));
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(2))
            .warm_up_time(Duration::from_millis(300));
        let mut solver = Solver::new(SolverSettings::default());
        let mut solution = Solution::default();
        group.bench_function("first 10 steps", |b| {
            b.iter(|| {
                for captured in &first {
                    solver.solve(&captured.problem, &mut solution);
                }
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
