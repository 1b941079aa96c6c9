//! The CANAL core alone, on problems assembled from stacks, pyramids and sphere piles of 1 to
//! ~1000 bodies, cold started, warm started from the exact impulses (a pile at rest one step
//! later) and from impulses 1% off.
//!
//! Run with `cargo bench --bench solver`. Before criterion's timings it prints one table row per
//! problem — bodies, contacts, iterations, residual reached, median time per solve — and the
//! exponent of a power-law fit of time against size, then compares the dense and the sparse
//! Cholesky on islands of growing size (which sets `SolverSettings::dense_max_bodies`).

use std::hint::black_box;
use std::time::{Duration, Instant};

use bevy_canal::solver::scenes;
use bevy_canal::solver::*;
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};

const DT: f64 = 1.0 / 60.0;

fn problems() -> Vec<(String, StepProblem)> {
    let mut list = vec![("box".to_string(), scenes::resting_box(1.0, 0.5, DT))];
    for n in [10, 40] {
        list.push((format!("stack{n}"), scenes::box_stack(n, 1.0, 0.5, DT)));
    }
    for layers in [5, 10, 20, 30] {
        list.push((format!("pyramid{layers}"), scenes::box_pyramid(layers, 0.5, DT)));
    }
    for (nx, ny, nz) in [(3, 3, 3), (6, 5, 6), (10, 10, 10)] {
        list.push((
            format!("spheres{}", nx * ny * nz),
            scenes::sphere_pile(nx, ny, nz, 0.5, DT),
        ));
    }
    list
}

/// The same problem carrying the impulses of its own solution scaled by `factor`: a pile at rest
/// one step later (`factor` = 1), or with a warm start that is off by `1 − factor`, as when the
/// bodies moved a little between steps.
fn warm(problem: &StepProblem, settings: SolverSettings, factor: f64) -> StepProblem {
    let mut solution = Solution::default();
    Solver::new(settings).solve(problem, &mut solution);
    let mut cache = WarmStartCache::default();
    cache.record(&problem.contacts, &solution);
    cache.finish_step();
    let mut warm = problem.clone();
    cache.apply(&mut warm.contacts);
    for contact in &mut warm.contacts {
        contact.warm_impulse = contact.warm_impulse.map(|w| w * factor);
    }
    warm
}

fn median_time(solver: &mut Solver, problem: &StepProblem) -> (Duration, SolveReport) {
    let mut solution = Solution::default();
    let mut report = solver.solve(problem, &mut solution);
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 5 || (start.elapsed() < Duration::from_millis(300) && times.len() < 200) {
        let t = Instant::now();
        report = solver.solve(problem, &mut solution);
        times.push(t.elapsed());
    }
    times.sort();
    (times[times.len() / 2], report)
}

fn fit_exponent(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x.ln(), b + y.ln()));
    let (mx, my) = (sx / n, sy / n);
    let num: f64 = points.iter().map(|(x, y)| (x.ln() - mx) * (y.ln() - my)).sum();
    let den: f64 = points.iter().map(|(x, _)| (x.ln() - mx).powi(2)).sum();
    num / den
}

fn summary(tolerance: f64) {
    let settings = SolverSettings {
        tolerance,
        ..Default::default()
    };
    println!("\nCANAL solve, tolerance {tolerance:e} m/s, dt = 1/60 s");
    println!(
        "{:<11} {:>6} {:>8} | {:>5} {:>6} {:>8} {:>9} | {:>5} {:>6} {:>8} {:>9} | {:>5} {:>6} {:>8} {:>9}",
        "problem",
        "bodies",
        "contacts",
        "outer",
        "newton",
        "residual",
        "cold ms",
        "outer",
        "newton",
        "residual",
        "warm ms",
        "outer",
        "newton",
        "residual",
        "warm1% ms"
    );
    let mut cold_points = Vec::new();
    let mut warm_points = Vec::new();
    for (name, problem) in problems() {
        let mut solver = Solver::new(settings);
        let (cold_time, cold) = median_time(&mut solver, &problem);
        let (warm_time, hot) = median_time(&mut solver, &warm(&problem, settings, 1.0));
        let (near_time, near) = median_time(&mut solver, &warm(&problem, settings, 0.99));
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "{:<11} {:>6} {:>8} | {:>5} {:>6} {:>8.1e} {:>9.3} | {:>5} {:>6} {:>8.1e} {:>9.3} | {:>5} {:>6} {:>8.1e} {:>9.3}{}",
            name,
            problem.bodies.len(),
            problem.contacts.len(),
            cold.outer_iterations,
            cold.newton_iterations,
            cold.worst_residual(),
            ms(cold_time),
            hot.outer_iterations,
            hot.newton_iterations,
            hot.worst_residual(),
            ms(warm_time),
            near.outer_iterations,
            near.newton_iterations,
            near.worst_residual(),
            ms(near_time),
            if cold.converged && hot.converged && near.converged {
                ""
            } else {
                "  NOT CONVERGED"
            },
        );
        if problem.bodies.len() >= 10 {
            cold_points.push((problem.bodies.len() as f64, cold_time.as_secs_f64()));
            warm_points.push((problem.bodies.len() as f64, warm_time.as_secs_f64()));
        }
    }
    println!(
        "power-law fit over problems of ≥ 10 bodies: cold time ∝ n^{:.2}, warm time ∝ n^{:.2}",
        fit_exponent(&cold_points),
        fit_exponent(&warm_points)
    );
}

fn linear_algebra_switch() {
    println!("\nDense against sparse Cholesky, cold solve to 1e-8 m/s (median ms):");
    println!("{:<11} {:>6} {:>10} {:>10}", "problem", "bodies", "dense", "sparse");
    let mut cases: Vec<(String, StepProblem)> = [2, 4, 8, 12, 16, 24, 32]
        .iter()
        .map(|&n| (format!("stack{n}"), scenes::box_stack(n, 1.0, 0.5, DT)))
        .collect();
    cases.extend(
        [3, 4, 5, 6, 8]
            .iter()
            .map(|&l| (format!("pyramid{l}"), scenes::box_pyramid(l, 0.5, DT))),
    );
    for (name, problem) in cases {
        let time = |dense_max_bodies| {
            let mut solver = Solver::new(SolverSettings {
                dense_max_bodies,
                ..Default::default()
            });
            median_time(&mut solver, &problem).0.as_secs_f64() * 1e3
        };
        println!(
            "{:<11} {:>6} {:>10.3} {:>10.3}",
            name,
            problem.bodies.len(),
            time(usize::MAX),
            time(0)
        );
    }
}

/// Newton directions by CG on a stale factorization against a factorization every Newton
/// iteration, on stirred piles of growing size (one cold solve each, retries off).
fn cg_direction_switch() {
    println!(
        "\nNewton directions by CG on a stale factorization, stirred ball lattices \
         (`scenes::stirred_sphere_pile`), cold, retries off:"
    );
    println!(
        "{:<8} {:>6} | {:>6} {:>8} {:>11} | {:>6} {:>6} {:>8} {:>9}",
        "problem", "bodies", "newton", "residual", "refactor ms", "newton", "by CG", "residual", "CG ms"
    );
    for n in [5, 6, 7, 8, 10] {
        let problem = scenes::stirred_sphere_pile(n, 0.5, DT);
        let run = |cg_direction_min_bodies| {
            let mut solver = Solver::new(SolverSettings {
                cg_direction_min_bodies,
                retry_above: f64::INFINITY,
                ..Default::default()
            });
            let start = Instant::now();
            let report = solver.solve(&problem, &mut Solution::default());
            (report, start.elapsed().as_secs_f64() * 1e3)
        };
        let ((refactor, refactor_ms), (cg, cg_ms)) = (run(usize::MAX), run(0));
        println!(
            "{:<8} {:>6} | {:>6} {:>8.1e} {:>11.0} | {:>6} {:>6} {:>8.1e} {:>9.0}",
            format!("stirred{}", n * n * n),
            problem.bodies.len(),
            refactor.newton_iterations,
            refactor.worst_residual(),
            refactor_ms,
            cg.newton_iterations,
            cg.cg_directions,
            cg.worst_residual(),
            cg_ms,
        );
    }
}

fn bench(c: &mut Criterion) {
    summary(1e-8);
    summary(1e-6);
    linear_algebra_switch();
    cg_direction_switch();
    let mut group = c.benchmark_group("solve");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    for (name, problem) in problems() {
        let settings = SolverSettings {
            tolerance: 1e-6,
            ..Default::default()
        };
        let warm_problem = warm(&problem, settings, 1.0);
        let near_problem = warm(&problem, settings, 0.99);
        for (start, p) in [("cold", &problem), ("warm", &warm_problem), ("warm1%", &near_problem)] {
            let mut solver = Solver::new(settings);
            let mut solution = Solution::default();
            group.bench_with_input(
                BenchmarkId::new(format!("{name}/{start}"), problem.bodies.len()),
                p,
                |b, p| b.iter(|| black_box(solver.solve(p, &mut solution))),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
