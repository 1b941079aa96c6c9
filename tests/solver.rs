//! The CANAL core against physics and against an independent reference (issue: solver core).

mod common;

use bevy_canal::solver::scenes::{self, GRAVITY};
use bevy_canal::solver::*;
use common::{DT, random_problem, reference_impulses};
use glam::DVec3;

fn solve(problem: &StepProblem, settings: SolverSettings) -> (SolveReport, Solution, Solver) {
    let mut solver = Solver::new(settings);
    let mut solution = Solution::default();
    let report = solver.solve(problem, &mut solution);
    (report, solution, solver)
}

fn tight() -> SolverSettings {
    SolverSettings {
        tolerance: 1e-10,
        ..Default::default()
    }
}

/// The largest difference between two solutions' body velocities, linear (m/s) or angular (rad/s).
fn velocities_apart(a: &Solution, b: &Solution) -> f64 {
    a.velocities
        .iter()
        .zip(&b.velocities)
        .map(|(x, y)| (x.linear - y.linear).length().max((x.angular - y.angular).length()))
        .fold(0.0, f64::max)
}

/// Mass of the body of [`point_mass_on_ground`], kg.
const POINT_MASS: f64 = 2.0;

/// A body whose only contact acts at its centre of mass: a point mass, no rotation couples in.
fn point_mass_on_ground(velocity: DVec3, mu: f64) -> StepProblem {
    let body = SolverBody::sphere(POINT_MASS, 0.1, DVec3::ZERO)
        .with_force(GRAVITY * POINT_MASS, DT)
        .with_velocity(velocity, DVec3::ZERO);
    let contact = SolverContact::new(0, ContactSide::Body(0), ContactSide::STATIC, DVec3::ZERO, DVec3::Y)
        .with_friction(mu)
        .with_tangents(DVec3::X, DVec3::NEG_Z);
    StepProblem {
        bodies: vec![body],
        contacts: vec![contact],
        dt: DT,
        ..Default::default()
    }
}

#[test]
fn resting_box_carries_its_weight_exactly() {
    for mass in [1e-3, 1.0, 1e3] {
        let problem = scenes::resting_box(mass, 0.5, DT);
        let (report, solution, _) = solve(&problem, tight());
        assert!(report.converged, "{report:?}");
        let total: f64 = solution.impulses.iter().map(|i| i.normal).sum();
        let expected = mass * 9.81 * DT;
        assert!(
            ((total - expected) / expected).abs() < 1e-9,
            "mass {mass}: {total} vs {expected}"
        );
        let v = solution.velocities[0];
        assert!(v.linear.length() < 1e-10 && v.angular.length() < 1e-10, "{v:?}");
        assert!(report.ncp_residual <= 1e-10 && report.feasibility_residual <= 1e-10);
        assert!(report.dynamics_residual < 1e-12, "{report:?}");
    }
}

#[test]
fn open_contact_applies_nothing() {
    // Rising at 1 m/s: after one step still rising, so the contact stays open.
    let problem = point_mass_on_ground(DVec3::new(0.3, 1.0, 0.0), 0.5);
    let (report, solution, _) = solve(&problem, tight());
    assert!(report.converged);
    assert_eq!(solution.impulses[0].world, DVec3::ZERO);
    let expected = DVec3::new(0.3, 1.0 - 9.81 * DT, 0.0);
    assert!((solution.velocities[0].linear - expected).length() < 1e-14);
}

#[test]
fn sticking_contact_stops_the_body() {
    // Landing at 1 m/s with 0.1 m/s sideways, μ = 0.5: λ = −m v_free, inside the cone.
    let (m, mu) = (POINT_MASS, 0.5);
    let v0 = DVec3::new(0.1, -1.0, 0.0);
    let (report, solution, _) = solve(&point_mass_on_ground(v0, mu), tight());
    assert!(report.converged, "{report:?}");
    let free = v0 + GRAVITY * DT;
    let impulse = solution.impulses[0];
    assert!((impulse.normal - (-m * free.y)).abs() < 1e-10 * m);
    assert!((impulse.tangent[0] - (-m * free.x)).abs() < 1e-10 * m);
    assert!(impulse.tangent[1].abs() < 1e-12);
    assert!(solution.velocities[0].linear.length() < 1e-10);
}

#[test]
fn sliding_contact_opposes_the_slip_on_the_cone() {
    // 3 m/s sideways: friction saturates, λ_t = −μ λ_n t̂, the normal velocity vanishes.
    let (m, mu) = (POINT_MASS, 0.5);
    let v0 = DVec3::new(3.0, -0.5, 0.0);
    let (report, solution, _) = solve(&point_mass_on_ground(v0, mu), tight());
    assert!(report.converged, "{report:?}");
    let free = v0 + GRAVITY * DT;
    let lambda_n = -m * free.y;
    let impulse = solution.impulses[0];
    assert!((impulse.normal - lambda_n).abs() < 1e-10 * m, "{impulse:?}");
    assert!((impulse.tangent[0] - (-mu * lambda_n)).abs() < 1e-10 * m, "{impulse:?}");
    assert!(impulse.tangent[1].abs() < 1e-12);
    let v = solution.velocities[0].linear;
    assert!(
        (v.x - (free.x - mu * lambda_n / m)).abs() < 1e-10 && v.y.abs() < 1e-10,
        "{v:?}"
    );
}

#[test]
fn frictionless_box_lifts_off() {
    let mut problem = scenes::resting_box(1.0, 0.0, DT);
    problem.bodies[0].linear_velocity = DVec3::new(0.0, 2.0, 0.0);
    let (report, solution, _) = solve(&problem, tight());
    assert!(report.converged);
    assert!(
        solution.impulses.iter().all(|i| i.world == DVec3::ZERO),
        "a contact pulled"
    );
    assert!((solution.velocities[0].linear.y - (2.0 - 9.81 * DT)).abs() < 1e-14);
}

#[test]
fn box_wedged_between_penetrating_walls_has_no_solution() {
    let body = SolverBody::cuboid(1.0, DVec3::ONE, DVec3::ZERO);
    let wall = |id, x: f64, normal| {
        SolverContact::new(
            id,
            ContactSide::Body(0),
            ContactSide::STATIC,
            DVec3::new(x, 0.0, 0.0),
            normal,
        )
        .with_gap(-0.05)
        .with_friction(0.3)
    };
    let problem = StepProblem {
        bodies: vec![body],
        contacts: vec![wall(0, -0.5, DVec3::X), wall(1, 0.5, DVec3::NEG_X)],
        dt: DT,
        ..Default::default()
    };
    let (report, solution, _) = solve(&problem, SolverSettings::default());
    assert!(!report.converged);
    assert_eq!(report.failure, Some(SolveFailure::NoSolution), "{report:?}");
    assert!(
        report.outer_iterations < SolverSettings::default().max_outer_iterations,
        "divergence not detected early"
    );
    assert!(solution.impulses.iter().all(|i| i.world.is_finite()));
    assert!(
        solution
            .velocities
            .iter()
            .all(|v| v.linear.is_finite() && v.angular.is_finite())
    );
}

#[test]
fn random_well_posed_problems_converge() {
    let settings = SolverSettings::default();
    let mut outer = Vec::new();
    let mut newton = Vec::new();
    let mut failed = Vec::new();
    for seed in 0..300 {
        let problem = random_problem(seed);
        let (report, solution, _) = solve(&problem, settings);
        // Whatever happens, the answer is finite and satisfies the dynamics.
        assert!(solution.impulses.iter().all(|i| i.world.is_finite()), "seed {seed}");
        assert!(report.dynamics_residual < 1e-8, "seed {seed}: {report:?}");
        if report.converged {
            assert!(
                report.ncp_residual <= 1e-8 && report.feasibility_residual <= 1e-8,
                "seed {seed}"
            );
            outer.push(report.outer_iterations);
            newton.push(report.newton_iterations);
        } else {
            assert_eq!(
                report.failure,
                Some(SolveFailure::BudgetExhausted),
                "seed {seed}: {report:?}"
            );
            failed.push(seed);
        }
    }
    let quantiles = |v: &mut Vec<u32>| {
        v.sort_unstable();
        let q = |p: f64| v[((v.len() - 1) as f64 * p) as usize];
        (q(0.0), q(0.5), q(0.9), q(0.99), q(1.0))
    };
    println!(
        "converged {} of 300; not within the budget: seeds {failed:?}",
        outer.len()
    );
    println!("outer iterations  min/median/p90/p99/max: {:?}", quantiles(&mut outer));
    println!("newton iterations min/median/p90/p99/max: {:?}", quantiles(&mut newton));
    assert!(failed.is_empty(), "not converged: {failed:?}");
}

#[test]
fn impulses_agree_with_an_independent_reference() {
    let mut compared = 0;
    let mut unsolved = Vec::new();
    for seed in 1000..1100 {
        let mut problem = random_problem(seed);
        // Tiny problems: the reference is a slow first-order method.
        problem.bodies.truncate(2);
        problem.contacts.retain(|c| {
            [c.body1, c.body2]
                .iter()
                .all(|s| !matches!(s, ContactSide::Body(b) if *b >= 2))
        });
        let (report, solution, _) = solve(&problem, tight());
        let (reference, reference_converged) = reference_impulses(&problem, 1_000_000);
        if !report.converged {
            unsolved.push((seed, reference_converged));
            continue;
        }
        assert!(
            reference_converged,
            "seed {seed}: CANAL converged, the reference did not"
        );
        let scale = reference.iter().map(|l| l.length()).fold(0.0, f64::max).max(1e-300);
        for (c, (ours, theirs)) in solution.impulses.iter().zip(&reference).enumerate() {
            let ours = DVec3::new(ours.normal, ours.tangent[0], ours.tangent[1]);
            assert!(
                (ours - *theirs).length() <= 1e-6 * scale,
                "seed {seed} contact {c}: {ours} vs {theirs}"
            );
        }
        compared += 1;
    }
    println!("compared {compared}; CANAL not converged (seed, reference converged): {unsolved:?}");
    assert!(compared >= 97, "compared only {compared}: {unsolved:?}");
}

#[test]
fn newton_converges_quadratically_near_the_solution() {
    // Sliding boxes: the cone's curved surface makes Φ truly nonlinear, so the Newton tail shows
    // its order (on a sticking pile Φ is piecewise quadratic and Newton ends in one exact step).
    let mut problem = scenes::box_stack(3, 1.0, 0.5, DT);
    for (i, body) in problem.bodies.iter_mut().enumerate() {
        body.linear_velocity = DVec3::new(2.0 + i as f64, 0.0, 1.0 - i as f64);
    }
    let settings = SolverSettings {
        record_trace: true,
        tolerance: 1e-10,
        ..Default::default()
    };
    let (report, _, solver) = solve(&problem, settings);
    assert!(report.converged, "{report:?}");
    let trace = solver.newton_trace();
    let mut checked = 0;
    for outer in 0..report.outer_iterations {
        let g: Vec<f64> = trace.iter().filter(|t| t.outer == outer).map(|t| t.gradient).collect();
        let shown: Vec<String> = g.iter().map(|x| format!("{x:.2e}")).collect();
        println!("outer {outer}: gradients {shown:?}");
        // The run's last step from the asymptotic range (below 1e-3 m/s) squares the error
        // (g₊ ≤ 100 g²; a linear rate r would need g ≤ r/100), counting a step that lands at
        // round-off. Steps from below 3e-8, where 100 g² is itself round-off, cannot be judged;
        // earlier steps may still change the active set.
        let judged = g
            .windows(2)
            .rfind(|pair| pair[0] < 1e-3 && 100.0 * pair[0] * pair[0] > 1e-13);
        if let Some(&[before, last]) = judged {
            assert!(
                last <= 100.0 * before * before,
                "outer {outer}: not quadratic: {shown:?}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 5, "too few asymptotic Newton steps to judge: {trace:?}");
}

/// `problem` with `solution`'s impulses as its warm start, as the next step would see it.
fn warm_started(problem: &StepProblem, solution: &Solution) -> StepProblem {
    let mut warm = problem.clone();
    let mut cache = WarmStartCache::default();
    cache.record(&warm.contacts, solution);
    cache.finish_step();
    cache.apply(&mut warm.contacts);
    warm
}

/// `settled` warm-started with its own tight solution, every body arriving sinking at `speed` m/s.
fn arriving_sinking(settled: &StepProblem, speed: f64) -> StepProblem {
    arriving_sinking_after(settled, speed, tight())
}

/// As [`arriving_sinking`], the pile first solved cold with `settle`.
fn arriving_sinking_after(settled: &StepProblem, speed: f64, settle: SolverSettings) -> StepProblem {
    let (exact, held, _) = solve(settled, settle);
    assert!(exact.converged, "{exact:?}");
    let mut arriving = warm_started(settled, &held);
    for body in &mut arriving.bodies {
        body.linear_velocity = DVec3::new(0.0, -speed, 0.0);
    }
    arriving
}

#[test]
fn warm_start_from_the_solution_is_accepted_without_iterating() {
    let problem = scenes::box_pyramid(10, 0.5, DT);
    // Without the headroom iterations, which would add one to each count below.
    let settings = SolverSettings {
        headroom: 1.0,
        ..Default::default()
    };
    let (cold, solution, mut solver) = solve(&problem, settings);
    assert!(cold.converged, "{cold:?}");
    let mut warm = warm_started(&problem, &solution);
    let mut again = Solution::default();
    let report = solver.solve(&warm, &mut again);
    assert!(report.converged && report.outer_iterations <= 1, "{report:?}");
    assert!(cold.outer_iterations > report.outer_iterations);

    // A warm start 1% off, as after the bodies moved a little, starts at the stiffer warm penalty
    // and needs a few outer iterations: 5 here, where the cold solve takes 9 and a warm start at
    // the cold penalty 7.
    for contact in &mut warm.contacts {
        contact.warm_impulse = contact.warm_impulse.map(|w| w * 0.99);
    }
    let near = solver.solve(&warm, &mut again);
    assert!(
        near.converged && near.outer_iterations <= 5,
        "{near:?} (cold: {cold:?})"
    );

    // Impulses three times too large leave a residual of about 2 g h, far above
    // `warm_penalty_max_residual`: that solve starts at the cold penalty, the near one at the warm.
    // No retry: it would report its own penalty.
    let first = SolverSettings {
        max_outer_iterations: 1,
        polish_iterations: 0,
        retry_above: f64::INFINITY,
        ..Default::default()
    };
    let near_first = Solver::new(first).solve(&warm, &mut again);
    assert_eq!(near_first.penalty, first.warm_initial_penalty, "{near_first:?}");
    for contact in &mut warm.contacts {
        contact.warm_impulse = contact.warm_impulse.map(|w| w * (3.0 / 0.99));
    }
    let far_first = Solver::new(first).solve(&warm, &mut again);
    assert_eq!(far_first.penalty, first.initial_penalty, "{far_first:?}");
}

/// A settled ten-box stack that arrives sinking at `speed` m/s (a creep its accepted warm starts
/// let build up, or a gentle landing) is stopped by the step; the impulse that stops it is not
/// the one to warm-start the next step with. The next step is solved from the end-of-step
/// velocities: warm-started with the impulses that hold them (`Solution::warm_impulses`) it is
/// accepted at once, warm-started with the stopping impulses it would push the stack back up at
/// `speed` and has to iterate again. On the 210-box pyramid that repetition kept half the steps
/// iterating beyond step 630.
#[test]
fn the_next_warm_start_holds_the_bodies_instead_of_stopping_them_again() {
    let speed = 1e-4;
    let settled = scenes::box_stack(10, 1.0, 0.5, DT);
    let arriving = arriving_sinking(&settled, speed);
    let (report, stopped, mut solver) = solve(&arriving, SolverSettings::default());
    assert!(report.converged && report.newton_iterations >= 1, "{report:?}");
    let weight = scenes::weight_impulse(&settled);
    let stopping = 10.0 * 1.0 * speed;
    let ground = |impulses: &[DVec3]| -> f64 {
        settled
            .contacts
            .iter()
            .zip(impulses)
            .filter(|(c, _)| c.body2 == ContactSide::STATIC)
            .map(|(_, i)| i.y)
            .sum()
    };
    let applied: Vec<DVec3> = stopped.impulses.iter().map(|i| i.world).collect();
    println!(
        "ground impulse: applied {:.9}, warm {:.9}, weight × dt {weight:.9} N·s",
        ground(&applied),
        ground(&stopped.warm_impulses)
    );
    assert!((ground(&applied) - weight - stopping).abs() < 1e-9 * weight);
    assert!(
        (ground(&stopped.warm_impulses) - weight).abs() < 1e-3 * stopping,
        "the warm impulses still carry {:e} N·s of the stop",
        ground(&stopped.warm_impulses) - weight
    );

    let mut next = warm_started(&arriving, &stopped);
    for (body, v) in next.bodies.iter_mut().zip(&stopped.velocities) {
        body.linear_velocity = v.linear;
        body.angular_velocity = v.angular;
    }
    let report = solver.solve(&next, &mut Solution::default());
    assert!(report.warm_start_accepted && report.outer_iterations == 0, "{report:?}");

    for (contact, impulse) in next.contacts.iter_mut().zip(&stopped.impulses) {
        contact.warm_impulse = Some(impulse.world);
    }
    let report = solver.solve(&next, &mut Solution::default());
    println!("warm-started with the stopping impulses: {report:?}");
    assert!(
        !report.warm_start_accepted && report.outer_iterations >= 1,
        "{report:?}"
    );
}

#[test]
fn a_resting_solve_goes_on_to_the_headroom_target() {
    // A settled pyramid whose bodies arrive sinking slightly: its solve starts near its answer,
    // settles within a few outer iterations with every contact sticking, and goes on to the
    // headroom target, so that the impulses it hands the next step hold for many steps. (With
    // one headroom iteration, as for any other solve, it stopped at 4.7e-10 m/s.) Also after a
    // cold settle with loose inner solves, which leaves this indeterminate pile on other loads:
    // from those, the outer iteration that reached the tolerance was the one to pay two Newton
    // steps for the last change of the active set, and judged by that cost the solve stopped at
    // 7.0e-9 m/s.
    for inner_forcing in [0.0, 0.1] {
        let settings = SolverSettings {
            inner_forcing,
            ..Default::default()
        };
        let settle = SolverSettings {
            tolerance: 1e-10,
            ..settings
        };
        let arriving = arriving_sinking_after(&scenes::box_pyramid(20, 0.5, DT), 1e-6, settle);
        let (report, _, _) = solve(&arriving, settings);
        println!("inner_forcing {inner_forcing}: {report:?}");
        assert!(report.converged && report.outer_iterations >= 2, "{report:?}");
        assert!(
            report.worst_residual() <= settings.headroom_target(),
            "inner_forcing {inner_forcing}: stopped at {:e} m/s, above the headroom target {:e}",
            report.worst_residual(),
            settings.headroom_target()
        );
    }
}

/// `problem` solved to 1e-10 m/s, and the problem warm-started from its impulses with contact
/// `c`'s off by the relative error `error(c)`. Also returns the exact solution.
fn warm_started_off_by(problem: &StepProblem, error: impl Fn(usize) -> f64) -> (StepProblem, Solution) {
    let (exact, solution, _) = solve(problem, tight());
    assert!(exact.converged, "{exact:?}");
    let mut warm = warm_started(problem, &solution);
    for (c, contact) in warm.contacts.iter_mut().enumerate() {
        let error = error(c);
        contact.warm_impulse = contact.warm_impulse.map(|w| w * (1.0 + error));
    }
    (warm, solution)
}

/// A ten-row pyramid warm-started with uneven relative errors of `scale` × (2, −1, 0.5): what a
/// step of drift leaves (a uniform scaling would be the slowest mode for Gauss–Seidel).
fn pyramid_warm_started_off_by(scale: f64) -> (StepProblem, Solution) {
    warm_started_off_by(&scenes::box_pyramid(10, 0.5, DT), |c| scale * [2.0, -1.0, 0.5][c % 3])
}

/// The worst residual of `warm`'s warm start as given: no sweeps, no iterations.
fn residual_as_given(warm: &StepProblem) -> f64 {
    start_residual(warm, SolverSettings::default())
}

/// The worst residual of the start `settings` take for `warm`, before any sweep or iteration.
fn start_residual(warm: &StepProblem, settings: SolverSettings) -> f64 {
    let as_given = SolverSettings {
        smoothing_sweeps: 0,
        max_outer_iterations: 0,
        polish_iterations: 0,
        ..settings
    };
    Solver::new(as_given)
        .solve(warm, &mut Solution::default())
        .worst_residual()
}

/// A stack pushed sideways a little harder every step: its loads shift steadily, so the warm
/// start carried on by each contact's trend, as the cache records it from step to step, is
/// about a tenth as far from the answer as last step's impulses (it carries nine tenths of the
/// trend), and the solve from it takes no more Newton iterations.
#[test]
fn a_steady_shift_of_loads_is_carried_into_the_warm_start() {
    let pushed = |step: usize| {
        let mut problem = scenes::box_stack(3, 1.0, 0.5, DT);
        let top = problem.bodies.last_mut().expect("three boxes");
        top.linear_impulse += DVec3::new(0.3 * step as f64, 0.0, 0.0) * DT;
        problem
    };
    let mut cache = WarmStartCache::default();
    for step in 0..3 {
        let mut problem = pushed(step);
        cache.apply(&mut problem.contacts);
        let (report, solution, _) = solve(&problem, tight());
        assert!(report.converged, "{report:?}");
        cache.record(&problem.contacts, &solution);
        cache.finish_step();
    }
    let mut next = pushed(3);
    cache.apply(&mut next.contacts);
    assert!(next.contacts.iter().all(|c| c.warm_trend.is_some()));
    let trend = SolverSettings {
        warm_trend: true,
        ..Default::default()
    };
    let (from_plain, from_carried) = (
        start_residual(&next, SolverSettings::default()),
        start_residual(&next, trend),
    );
    println!("start residual: plain {from_plain:.3e} m/s, carried {from_carried:.3e} m/s");
    assert!(
        from_carried < 0.2 * from_plain,
        "{from_carried:.3e} against {from_plain:.3e}"
    );
    let (carried, _, _) = solve(&next, trend);
    let (without, _, _) = solve(&next, SolverSettings::default());
    assert!(carried.converged && without.converged, "{carried:?}\n{without:?}");
    assert!(
        carried.newton_iterations <= without.newton_iterations,
        "{carried:?}\n{without:?}"
    );
}

/// A warm start a few times the tolerance off (last step's impulses, the bodies having moved a
/// hair) is brought within it by the smoothing sweeps, without a Newton step; unsmoothed, the
/// same warm start goes to Newton.
#[test]
fn a_near_miss_warm_start_is_smoothed_without_newton() {
    let (warm, solution) = pyramid_warm_started_off_by(1e-8);
    let initial = residual_as_given(&warm);
    let settings = SolverSettings::default();
    assert!(
        initial > settings.tolerance && initial <= settings.smoothing_max_ratio * settings.tolerance,
        "the warm start's residual {initial:e} m/s is not a near miss"
    );

    let mut smoothed = Solution::default();
    let report = Solver::new(settings).solve(&warm, &mut smoothed);
    println!("warm start at {initial:.1e} m/s, smoothed: {report:?}");
    assert!(report.converged && report.warm_start_accepted, "{report:?}");
    assert_eq!(
        (report.outer_iterations, report.newton_iterations),
        (0, 0),
        "{report:?}"
    );
    assert_eq!(report.smoothing_sweeps, settings.smoothing_sweeps);
    for (a, b) in smoothed.velocities.iter().zip(&solution.velocities) {
        assert!((a.linear - b.linear).length() < 1e-7, "{a:?} vs {b:?}");
    }

    let unsmoothed = SolverSettings {
        smoothing_sweeps: 0,
        ..Default::default()
    };
    let report = Solver::new(unsmoothed).solve(&warm, &mut Solution::default());
    assert!(report.converged && report.newton_iterations >= 1, "{report:?}");
}

/// A settled pile of balls drifts further from its last answer in a step than a box pyramid: the
/// warm starts of settled pens of 96 and 108 balls missed the acceptance level by more than ten
/// times in almost every step, and by less than a hundred in most. The smoothing sweeps step
/// each contact's normal row by its own effective mass, and bring such a start within the level
/// with no Newton iteration, in a fraction of the sweeps the old step of `1 / tr W` (an eighth
/// of a ball contact's normal mass) needed.
#[test]
fn a_ball_pile_missing_the_acceptance_level_tenfold_is_smoothed_without_newton() {
    let pile = scenes::sphere_pile(4, 4, 4, 0.5, DT);
    let (warm, solution) = warm_started_off_by(&pile, |c| 4e-7 * (1.0 + (c % 3) as f64));
    let initial = residual_as_given(&warm);
    let settings = SolverSettings::default();
    assert!(
        initial > 10.0 * settings.tolerance && initial <= settings.smoothing_max_ratio * settings.tolerance,
        "the warm start's residual {initial:e} m/s is not ten to a hundred times the tolerance"
    );

    let mut smoothed = Solution::default();
    let report = Solver::new(settings).solve(&warm, &mut smoothed);
    println!("warm start at {initial:.1e} m/s: {report:?}");
    assert!(report.converged && report.warm_start_accepted, "{report:?}");
    // With the step of `1 / tr W` this start took 200 sweeps to come within the level (8.6e-9
    // m/s), more than the budget of 60, and went to Newton.
    assert_eq!(report.newton_iterations, 0, "{report:?}");
    assert!(report.smoothing_sweeps <= settings.smoothing_budget, "{report:?}");
    assert!(velocities_apart(&smoothed, &solution) < 1e-7);
}

/// A solver that has iterated on an island keeps that solve's factorization of `H`. A near miss of
/// the same island later is corrected through it (Woodbury's identity turns `H⁻¹` into the
/// Delassus inverse of the sticking blocks) instead of by the sweeps: to the headroom target in
/// at most three solves, where the sweeps stop just inside the tolerance, so that the resting
/// 210-box pyramid needed them in 256 of 600 steps. A fresh solver, holding nothing, sweeps, and
/// so does one told not to (`SolverSettings::held_steps = 0`).
#[test]
fn a_near_miss_is_corrected_through_the_factorization_an_earlier_solve_left() {
    let settings = SolverSettings::default();
    let (earlier, _) = pyramid_warm_started_off_by(1e-6);
    let mut solver = Solver::new(settings);
    let report = solver.solve(&earlier, &mut Solution::default());
    assert!(report.converged && report.outer_iterations >= 1, "{report:?}");

    let (warm, solution) = pyramid_warm_started_off_by(1e-8);
    let mut corrected = Solution::default();
    let report = solver.solve(&warm, &mut corrected);
    println!("near miss through the held factorization: {report:?}");
    assert!(report.converged && report.warm_start_accepted, "{report:?}");
    assert_eq!((report.outer_iterations, report.smoothing_sweeps), (0, 0), "{report:?}");
    assert!((1..=3).contains(&report.held_steps), "{report:?}");
    assert!(
        report.worst_residual() <= settings.headroom_target(),
        "corrected only to {:e} m/s",
        report.worst_residual()
    );
    for (a, b) in corrected.velocities.iter().zip(&solution.velocities) {
        assert!((a.linear - b.linear).length() < 1e-9, "{a:?} vs {b:?}");
    }

    let report = Solver::new(settings).solve(&warm, &mut Solution::default());
    assert!(report.held_steps == 0 && report.smoothing_sweeps > 0, "{report:?}");

    solver.settings.held_steps = 0;
    let report = solver.solve(&warm, &mut Solution::default());
    assert!(report.held_steps == 0 && report.smoothing_sweeps > 0, "{report:?}");
}

/// At a loose tolerance a warm start inside it but above `warm_start_accept` is not taken as it
/// is: the step is solved on (here to 1e-8 m/s by the headroom), so a resting scene does not
/// creep at the tolerance step after step. With the limit lifted the same warm start is accepted.
/// The smoothing sweeps are off: they too would bring this warm start within 1e-8 m/s.
#[test]
fn a_loose_tolerance_does_not_accept_a_creeping_warm_start() {
    let (warm, _) = pyramid_warm_started_off_by(1e-7);
    let loose = SolverSettings {
        tolerance: 1e-6,
        smoothing_sweeps: 0,
        ..Default::default()
    };
    let report = Solver::new(loose).solve(&warm, &mut Solution::default());
    println!("warm start 2e-7 off at 1e-6 m/s: {report:?}");
    assert!(report.converged && !report.warm_start_accepted, "{report:?}");
    assert!(report.outer_iterations >= 1, "{report:?}");
    let residual = report.worst_residual();
    assert!(residual <= 1e-8, "solved only to {residual:e} m/s");

    let lifted = SolverSettings {
        warm_start_accept: f64::INFINITY,
        ..loose
    };
    let report = Solver::new(lifted).solve(&warm, &mut Solution::default());
    assert!(report.warm_start_accepted && report.outer_iterations == 0, "{report:?}");
    let residual = report.worst_residual();
    assert!(residual > 1e-8 && residual <= 1e-6, "{residual:e} m/s");
}

/// A resting box whose corner contact `c` belongs to manifold `manifold(c)`, solved; the cache
/// holds its impulses for the next step.
fn cached_resting_box(manifold: impl Fn(usize) -> u64) -> (StepProblem, Solution, WarmStartCache) {
    let mut problem = scenes::resting_box(1.0, 0.5, DT);
    for (c, contact) in problem.contacts.iter_mut().enumerate() {
        *contact = contact.with_manifold(manifold(c));
    }
    let (report, solution, _) = solve(&problem, SolverSettings::default());
    assert!(report.converged, "{report:?}");
    let mut cache = WarmStartCache::default();
    cache.record(&problem.contacts, &solution);
    cache.finish_step();
    (problem, solution, cache)
}

#[test]
fn warm_start_matches_a_renamed_point_by_position_within_its_manifold() {
    let (mut problem, _, mut cache) = cached_resting_box(|_| 7);
    let weight = -GRAVITY.y * DT;
    // The same corners under new feature ids, one of them moved by 1 mm.
    for (c, contact) in problem.contacts.iter_mut().enumerate() {
        contact.id += 100;
        if c == 0 {
            contact.point.x += 1e-3;
        }
    }
    cache.apply(&mut problem.contacts);
    for contact in &problem.contacts {
        let w = contact.warm_impulse.expect("every corner inherits an impulse");
        assert!((w.y - weight / 4.0).abs() < 1e-9, "{w}");
    }
    // Without a manifold only ids match, and new ids start cold.
    let (mut problem, _, mut cache) = cached_resting_box(|_| 7);
    for contact in &mut problem.contacts {
        contact.id += 100;
        contact.manifold = None;
    }
    cache.apply(&mut problem.contacts);
    assert!(problem.contacts.iter().all(|c| c.warm_impulse.is_none()));
}

#[test]
fn warm_start_matches_by_position_when_manifolds_are_recorded_interleaved() {
    let (mut problem, solution, mut cache) = cached_resting_box(|c| c as u64 % 2);
    let remembered: Vec<_> = solution.impulses.iter().map(|i| i.world).collect();
    for contact in &mut problem.contacts {
        contact.id += 100;
    }
    cache.apply(&mut problem.contacts);
    for (contact, impulse) in problem.contacts.iter().zip(remembered) {
        assert_eq!(contact.warm_impulse, Some(impulse));
    }
    // Same ids, in the recorded order, but the last corner lost: its load still goes on.
    let (mut problem, _, mut cache) = cached_resting_box(|c| c as u64 % 2);
    problem.contacts.pop().expect("four corners");
    cache.apply(&mut problem.contacts);
    let total: DVec3 = problem.contacts.iter().filter_map(|c| c.warm_impulse).sum();
    assert!((total.y + GRAVITY.y * DT).abs() < 1e-9, "{total}");
}

#[test]
fn warm_start_keeps_the_load_of_a_manifold_that_lost_a_point() {
    let (mut problem, _, mut cache) = cached_resting_box(|_| 7);
    let lost = problem.contacts.pop().expect("four corners");
    cache.apply(&mut problem.contacts);
    let total: DVec3 = problem.contacts.iter().filter_map(|c| c.warm_impulse).sum();
    assert!((total.y + GRAVITY.y * DT).abs() < 1e-9, "{total}");
    // The lost corner's share went to the nearest corner left.
    let nearest = (0..3)
        .min_by(|&a, &b| {
            let d = |c: usize| problem.contacts[c].point.distance(lost.point);
            d(a).total_cmp(&d(b))
        })
        .expect("three corners");
    let share = problem.contacts[nearest].warm_impulse.expect("inherited").y;
    assert!((share + GRAVITY.y * DT / 2.0).abs() < 1e-9, "{share}");
}

#[test]
fn warm_start_per_island_keeps_the_load_of_a_later_island_that_lost_a_point() {
    // Two islands recorded one after the other, applied in the same order: the first comes back
    // unchanged, the second lost its last corner, whose entry lies just past the contacts given.
    let (first, first_solution, _) = cached_resting_box(|_| 7);
    let (mut second, second_solution, _) = cached_resting_box(|_| 8);
    for contact in &mut second.contacts {
        contact.id += 100;
    }
    let mut cache = WarmStartCache::default();
    cache.record(&first.contacts, &first_solution);
    cache.record(&second.contacts, &second_solution);
    cache.finish_step();
    let (mut first_contacts, mut second_contacts) = (first.contacts.clone(), second.contacts.clone());
    second_contacts.pop().expect("four corners");
    cache.apply(&mut first_contacts);
    cache.apply(&mut second_contacts);
    for (contact, impulse) in first_contacts.iter().zip(&first_solution.impulses) {
        assert_eq!(contact.warm_impulse, Some(impulse.world));
    }
    let total: DVec3 = second_contacts.iter().filter_map(|c| c.warm_impulse).sum();
    assert!((total.y + GRAVITY.y * DT).abs() < 1e-9, "{total}");
}

#[test]
fn bad_input_returns_finite_unsolved_state() {
    let mut problem = scenes::resting_box(1.0, 0.5, DT);
    problem.bodies[0].mass = -1.0;
    let (report, solution, _) = solve(&problem, SolverSettings::default());
    assert_eq!(report.failure, Some(SolveFailure::InvalidInput(InvalidInput::Body(0))));
    assert!(!report.converged);
    assert_eq!(solution.impulses.len(), 4);

    let mut problem = scenes::resting_box(1.0, 0.5, DT);
    problem.bodies[0].linear_velocity.x = f64::NAN;
    let (report, solution, _) = solve(&problem, SolverSettings::default());
    assert_eq!(report.failure, Some(SolveFailure::InvalidInput(InvalidInput::Body(0))));
    assert!(solution.velocities[0].linear.is_finite());

    let mut problem = scenes::resting_box(1.0, 0.5, DT);
    problem.contacts[2].normal = DVec3::new(0.0, f64::INFINITY, 0.0);
    let (report, _, _) = solve(&problem, SolverSettings::default());
    assert_eq!(
        report.failure,
        Some(SolveFailure::InvalidInput(InvalidInput::Contact(2)))
    );
}

#[test]
fn dense_and_sparse_paths_agree() {
    let problem = scenes::box_pyramid(6, 0.5, DT);
    let dense = solve(
        &problem,
        SolverSettings {
            dense_max_bodies: usize::MAX,
            tolerance: 1e-10,
            ..Default::default()
        },
    );
    let sparse = solve(
        &problem,
        SolverSettings {
            dense_max_bodies: 0,
            tolerance: 1e-10,
            ..Default::default()
        },
    );
    assert_eq!(dense.0.linear_solver, LinearSolverKind::Dense);
    assert_eq!(sparse.0.linear_solver, LinearSolverKind::Sparse);
    assert!(dense.0.converged && sparse.0.converged);
    for (a, b) in dense.1.velocities.iter().zip(&sparse.1.velocities) {
        assert!((a.linear - b.linear).length() < 1e-9 && (a.angular - b.angular).length() < 1e-9);
    }
}

/// The `k × k` systems of the shift Newton step and the polish solved by BiCGSTAB
/// (`krylov_min_sliding`, `krylov_min_bodies`: the path of large piles) give the answers the dense LU gives: the
/// random problems take the same iterations and end at the same velocities, solved in full and
/// polished after one outer iteration. A wrong operator does not: with the sign of its coupling
/// flipped, 33 of the 300 full solves took the same iterations (velocities 1.6 m/s apart), and
/// with the polish's terms flipped alone, 44 of the polished ones (3.1 m/s).
#[test]
fn the_krylov_path_solves_as_the_dense_one() {
    let full = SolverSettings::default();
    let polished = SolverSettings {
        max_outer_iterations: 1,
        ..full
    };
    for (label, direct) in [("full", full), ("polished", polished)] {
        let krylov = SolverSettings {
            krylov_min_sliding: 0,
            krylov_min_bodies: 0,
            ..direct
        };
        let (mut same_count, mut worst, mut residuals) = (0, 0.0_f64, 0.0_f64);
        for seed in 0..300 {
            let problem = random_problem(seed);
            let (a, first, _) = solve(&problem, direct);
            let (b, second, _) = solve(&problem, krylov);
            same_count +=
                usize::from(a.outer_iterations == b.outer_iterations && a.polish_iterations == b.polish_iterations);
            residuals = residuals.max((a.worst_residual() - b.worst_residual()).abs());
            for (x, y) in first.velocities.iter().zip(&second.velocities) {
                worst = worst.max((x.linear - y.linear).length().max((x.angular - y.angular).length()));
            }
        }
        println!(
            "{label}: same iterations on {same_count} of 300 seeds; velocities apart by {worst:.1e} m/s, \
             residuals by {residuals:.1e}"
        );
        assert!(same_count >= 285, "{label}: {same_count}");
        assert!(worst < 1e-6, "{label}: {worst}");
    }
}

#[test]
fn solving_twice_is_bit_identical() {
    let problem = scenes::sphere_pile(4, 3, 4, 0.6, DT);
    let (_, first, mut solver) = solve(&problem, SolverSettings::default());
    let mut second = Solution::default();
    solver.solve(&problem, &mut second);
    assert_eq!(first, second);
}

/// parry's `f32` geometry gives a resting contact a gap of round-off, about ±1e-6 m, not zero.
/// Within the slop that noise must not change the problem: a pile with noisy gaps is solved
/// exactly as the clean one. (Without the slop the same 5³ pile took 81 Newton iterations, not 6.)
#[test]
fn gap_noise_within_the_slop_leaves_a_resting_pile_unchanged() {
    let settings = SolverSettings::default();
    let clean = scenes::sphere_pile(5, 5, 5, 0.5, DT);
    let mut noisy = clean.clone();
    let mut seed = 7_u32;
    for contact in &mut noisy.contacts {
        seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let unit = f64::from(seed >> 8) / f64::from(1_u32 << 24) - 0.5;
        contact.gap = 2e-6 * unit;
    }
    let (clean_report, clean_solution, _) = solve(&clean, settings);
    let (noisy_report, noisy_solution, _) = solve(&noisy, settings);
    assert!(noisy_report.converged, "{noisy_report:?}");
    assert_eq!(noisy_report.newton_iterations, clean_report.newton_iterations);
    assert_eq!(noisy_solution, clean_solution);
    // Outside the slop the bias is the gap's as before: closing speed g/h, push-out erp·g/h.
    let gap = 10.0 * settings.gap_slop;
    assert_eq!(settings.gap_bias(gap, DT), gap / DT);
    assert_eq!(settings.gap_bias(-gap, DT), -settings.erp * gap / DT);
}

#[test]
fn a_spinning_box_landing_on_four_sliding_contacts_converges() {
    // Taken from the falling_boxes example: a box spinning at 6 rad/s meets the ground with four
    // speculative corner contacts, all sliding. Four corners of a tilted face cannot all end the
    // step touching, so one must let go; plain outer iterations (and the Gauss–Seidel reference)
    // drift towards that by tiny steps with the NCP residual stuck near 1e-6 m/s, until the
    // solver detects the drift and jumps along it.
    let i = 0.16666667163372043;
    let body = SolverBody {
        mass: 1.0,
        inertia: glam::DMat3::from_diagonal(DVec3::splat(i)),
        center_of_mass: DVec3::new(-1.5229308850011014, 0.5458087178256502, -4.174135195487812),
        linear_velocity: DVec3::new(0.7746203073935813, -6.444117454368565, -2.434544238458816),
        angular_velocity: DVec3::new(-5.751340296222785, -0.8884662392096904, -2.801263908390511),
        linear_impulse: DVec3::new(0.0, -0.1635000102636118, 0.0),
        angular_impulse: DVec3::ZERO,
    };
    let pts = [
        (
            DVec3::new(-1.321835696697235, 0.021430909633636475, -3.4984084367752075),
            0.04286453127861023,
        ),
        (
            DVec3::new(-2.178159236907959, 0.0014231503009796143, -4.013295650482178),
            0.0028493499848991632,
        ),
        (
            DVec3::new(-1.665093183517456, 0.02535019814968109, -4.870309591293335),
            0.05070297420024872,
        ),
        (
            DVec3::new(-0.808769553899765, 0.045357540249824524, -4.355422496795654),
            0.09071823209524155,
        ),
    ];
    let contacts = pts
        .iter()
        .enumerate()
        .map(|(k, (p, g))| {
            SolverContact::new(k as u64, ContactSide::Body(0), ContactSide::STATIC, *p, DVec3::Y).with_gap(*g)
        })
        .collect();
    let problem = StepProblem {
        bodies: vec![body],
        contacts,
        dt: 0.016666667,
        ..Default::default()
    };
    let (report, _, _) = solve(&problem, SolverSettings::default());
    assert!(report.converged, "{report:?}");
}

/// A solve that ends far above the tolerance is run again at the retry penalty, and keeps the
/// better of the two runs: here, one outer iteration each on a cold pyramid.
#[test]
fn a_far_unconverged_solve_is_retried_and_keeps_the_better_run() {
    let problem = scenes::box_pyramid(6, 0.5, DT);
    let once = |initial_penalty: f64| {
        let settings = SolverSettings {
            max_outer_iterations: 1,
            polish_iterations: 0,
            retry_above: f64::INFINITY,
            initial_penalty,
            ..Default::default()
        };
        let (report, solution, _) = solve(&problem, settings);
        assert!(!report.converged && report.retries == 0, "{report:?}");
        (report, solution)
    };
    let defaults = SolverSettings::default();
    let (first, _) = once(defaults.initial_penalty);
    let (second, second_solution) = once(defaults.retry_penalty);
    // The stiffer start is the better one here, so the retried solve must return its answer.
    assert!(second.worst_residual() < first.worst_residual(), "{first:?} {second:?}");

    let settings = SolverSettings {
        max_outer_iterations: 1,
        polish_iterations: 0,
        ..Default::default()
    };
    let (retried, solution, _) = solve(&problem, settings);
    // Without a warm start the cold starts repeat these two runs, so there is one retry.
    assert_eq!(retried.retries, 1, "{retried:?}");
    assert_eq!(retried.outer_iterations, 2);
    assert_eq!(
        retried.newton_iterations,
        first.newton_iterations + second.newton_iterations
    );
    assert_eq!(retried.worst_residual(), second.worst_residual());
    assert_eq!(retried.penalty, second.penalty);
    assert_eq!(solution, second_solution);

    // Within `retry_above` × the tolerance there is no retry.
    let near = SolverSettings {
        retry_above: 2.0 * first.worst_residual() / settings.tolerance,
        ..settings
    };
    let (kept, _, _) = solve(&problem, near);
    assert!(kept.retries == 0 && kept.outer_iterations == 1, "{kept:?}");
}

/// A warm-started solve that stays far off retries from each start in turn: the warm start at the
/// retry penalty, then zero impulses at the initial and at the retry penalty; it keeps the best
/// of the four runs, and stops at `max_retries`.
#[test]
fn retries_take_each_start_in_turn_and_keep_the_best_run() {
    let problem = scenes::box_pyramid(6, 0.5, DT);
    let (exact, solution, _) = solve(&problem, tight());
    assert!(exact.converged, "{exact:?}");
    // Impulses three times too large: far off, so the first run starts at the initial penalty.
    let mut warm = warm_started(&problem, &solution);
    for contact in &mut warm.contacts {
        contact.warm_impulse = contact.warm_impulse.map(|w| w * 3.0);
    }
    let settings = SolverSettings {
        max_outer_iterations: 1,
        polish_iterations: 0,
        ..Default::default()
    };
    let runs = [(true, false), (true, true), (false, false), (false, true)].map(|(warm_start, stiff)| {
        let single = SolverSettings {
            warm_start,
            initial_penalty: if stiff {
                settings.retry_penalty
            } else {
                settings.initial_penalty
            },
            max_retries: 0,
            ..settings
        };
        let (report, _, _) = solve(&warm, single);
        assert!(
            !report.converged && report.worst_residual() > 100.0 * settings.tolerance,
            "{report:?}"
        );
        report
    });
    let (all, _, _) = solve(&warm, settings);
    assert_eq!(all.retries, 3, "{all:?}");
    assert_eq!(all.outer_iterations, 4);
    assert_eq!(
        all.newton_iterations,
        runs.iter().map(|r| r.newton_iterations).sum::<u32>()
    );
    let best = runs
        .iter()
        .map(SolveReport::worst_residual)
        .fold(f64::INFINITY, f64::min);
    // A later start does better here, so keeping the first run's answer would fail.
    assert!(best < runs[0].worst_residual(), "{runs:?}");
    assert_eq!(all.worst_residual(), best, "{runs:?}");

    let (one, _, _) = solve(
        &warm,
        SolverSettings {
            max_retries: 1,
            ..settings
        },
    );
    assert_eq!(one.retries, 1, "{one:?}");
    assert_eq!(
        one.worst_residual(),
        runs[0].worst_residual().min(runs[1].worst_residual())
    );
}

#[test]
fn polish_finishes_a_solve_whose_outer_budget_ran_out() {
    for problem in [scenes::box_pyramid(6, 0.5, DT), scenes::sphere_pile(3, 3, 3, 0.5, DT)] {
        // A residual τ leaves each impulse off by about τ·m (design note §4): the 1e-9 check of
        // the ground's share below needs τ = 1e-10.
        let mut settings = SolverSettings {
            max_outer_iterations: 1,
            tolerance: 1e-10,
            ..Default::default()
        };
        settings.polish_iterations = 0;
        let (unpolished, _, _) = solve(&problem, settings);
        assert!(
            !unpolished.converged && unpolished.ncp_residual > 1e-3,
            "{unpolished:?}"
        );

        settings.polish_iterations = SolverSettings::default().polish_iterations;
        let (report, solution, _) = solve(&problem, settings);
        assert!(report.converged && report.failure.is_none(), "{report:?}");
        assert!(report.ncp_residual <= 1e-10 && report.feasibility_residual <= 1e-10);
        // The same answer as the outer loop's: everything at rest, the weight on the ground.
        let fastest = scenes::fastest_speed(&solution);
        assert!(fastest < 1e-8, "{fastest}");
        let ground = scenes::ground_impulse(&problem, &solution);
        let weight = scenes::weight_impulse(&problem);
        assert!((ground - weight).abs() < 1e-9 * weight, "{ground} against {weight}");
    }
}

/// On a statically indeterminate pile the velocities fix the loads only up to loads that cancel
/// on every body, and which of those a solve ends at depends on its path: the outer loop's, or
/// the polish's after one outer iteration. `nearest_impulses` returns the admissible loads
/// nearest the warm start instead, whichever path led there, with the same velocities.
#[test]
fn a_solve_returns_the_loads_nearest_its_warm_start_whatever_its_path() {
    let (warm, _) = pyramid_warm_started_off_by(0.05);
    let largest =
        |pairs: &mut dyn Iterator<Item = (DVec3, DVec3)>| pairs.map(|(a, b)| (a - b).length()).fold(0.0, f64::max);
    let from_warm = |s: &Solution| {
        let pairs = s.impulses.iter().zip(&warm.contacts);
        largest(&mut pairs.map(|(i, c)| (i.world, c.warm_impulse.unwrap())))
    };
    let apart =
        |a: &Solution, b: &Solution| largest(&mut a.impulses.iter().zip(&b.impulses).map(|(x, y)| (x.world, y.world)));
    let mut answers = vec![];
    for nearest_impulses in [false, true] {
        let full = SolverSettings {
            nearest_impulses,
            ..Default::default()
        };
        let short = SolverSettings {
            max_outer_iterations: 1,
            ..full
        };
        let (full_report, full, _) = solve(&warm, full);
        let (short_report, short, _) = solve(&warm, short);
        assert!(
            full_report.converged && short_report.converged,
            "{full_report:?} {short_report:?}"
        );
        assert!(short_report.polish_iterations > 0, "{short_report:?}");
        assert_eq!(full_report.distribution_solves > 0, nearest_impulses, "{full_report:?}");
        answers.push((full, short));
    }
    let (plain, nearest) = (&answers[0], &answers[1]);
    for (a, b) in [(&plain.0, &plain.1), (&plain.0, &nearest.0), (&plain.0, &nearest.1)] {
        let off = velocities_apart(a, b);
        assert!(off < 1e-7, "velocities {off} m/s apart");
    }
    // Measured: the two paths end 3.9e-2 N·s apart and 6.5e-2 from the warm start, and 4e-7
    // apart and 1.4e-2 from it with the move.
    assert!(apart(&plain.0, &plain.1) > 1e-2, "{}", apart(&plain.0, &plain.1));
    assert!(
        apart(&nearest.0, &nearest.1) < 1e-5,
        "{}",
        apart(&nearest.0, &nearest.1)
    );
    assert!(
        from_warm(&nearest.0) < 0.5 * from_warm(&plain.0),
        "{} against {}",
        from_warm(&nearest.0),
        from_warm(&plain.0)
    );
}

/// A box on four corners carries its weight on any loads `W/4 + α(1, −1, −1, 1)` (corners
/// `(x0,z0), (x1,z0), (x0,z1), (x1,z1)`): the diagonals trade load without moving it. From a
/// warm start with 20% too much on one corner, the nearest of them shares the excess `0.05 W`
/// as `α = 0.0125 W`: a quarter on each corner, in the pattern. (The outer loop alone lands there
/// too on one box; the pyramid above is where the paths part.)
#[test]
fn a_lopsided_warm_start_on_four_corners_keeps_its_nearest_admissible_share() {
    let problem = scenes::resting_box(2.0, 0.5, DT);
    let weight = scenes::weight_impulse(&problem);
    let mut warm = problem.clone();
    for (c, contact) in warm.contacts.iter_mut().enumerate() {
        let share = if c == 0 { 1.2 } else { 1.0 };
        contact.warm_impulse = Some(DVec3::Y * share * weight / 4.0);
    }
    let settings = SolverSettings {
        nearest_impulses: true,
        ..Default::default()
    };
    let (report, solution, _) = solve(&warm, settings);
    assert!(
        report.converged && !report.warm_start_accepted && report.distribution_solves > 0,
        "{report:?}"
    );
    for (c, impulse) in solution.impulses.iter().enumerate() {
        let expected = weight * (0.25 + 0.0125 * [1.0, -1.0, -1.0, 1.0][c]);
        assert!(
            (impulse.normal - expected).abs() < 1e-6 * weight,
            "corner {c}: {} against {expected}",
            impulse.normal
        );
        let tangent = DVec3::new(0.0, impulse.tangent[0], impulse.tangent[1]).length();
        assert!(tangent < 1e-9 * weight, "corner {c}: friction {tangent}");
    }
}

/// Far from the answer Newton stops at `inner_forcing` times the last outer residual; the solve
/// still ends within the tolerance, at the exact inner solves' velocities, and on a pair that
/// satisfies the dynamics to round-off (the velocities are recomputed from the multipliers).
/// Measured: 46 Newton iterations with exact inner solves, 21 with loose ones.
#[test]
fn loose_inner_solves_far_off_still_return_an_exact_pair() {
    let mut problem = scenes::box_stack(3, 1.0, 0.5, DT);
    for (i, body) in problem.bodies.iter_mut().enumerate() {
        body.linear_velocity = DVec3::new(2.0 + i as f64, 0.0, 1.0 - i as f64);
    }
    let settings = |inner_forcing| SolverSettings {
        record_trace: true,
        inner_forcing,
        ..tight()
    };
    let (exact, exact_solution, _) = solve(&problem, settings(0.0));
    let (loose, loose_solution, solver) = solve(&problem, settings(0.1));
    println!(
        "Newton iterations: exact inner solves {}, loose {}",
        exact.newton_iterations, loose.newton_iterations
    );
    assert!(exact.converged && loose.converged, "{exact:?}\n{loose:?}");
    assert!(loose.dynamics_residual < 1e-12, "{loose:?}");
    // Both within 1e-10 m/s at every contact, yet up to 6.4e-7 m/s and 1.2e-5 rad/s apart: how
    // the sliding boxes' corners share their load is not unique, and the share turns them. The
    // boxes slide at metres per second and spin at tenths of a radian per second.
    let off = velocities_apart(&exact_solution, &loose_solution);
    assert!(off < 1e-4, "velocities {off} apart");
    // Some outer iteration really stopped Newton early: at a gradient above 1e-3 m/s, where the
    // design note's inner tolerance is 1e-13.
    let trace = solver.newton_trace();
    let stopped_loose = (0..loose.outer_iterations).any(|outer| {
        trace
            .iter()
            .rfind(|t| t.outer == outer)
            .is_some_and(|t| t.gradient > 1e-3)
    });
    assert!(stopped_loose, "{trace:?}");
}

/// A unit box of 1 kg at rest on four corners of a 30° slope (gravity tilted instead) with
/// friction `mu` below tan 30°: it slides, and its velocity after one step is exactly
/// `dt·g(sin θ − μ cos θ)` down the slope.
fn box_on_slope(mu: f64) -> (StepProblem, DVec3) {
    let theta = 30f64.to_radians();
    let gravity = 9.81 * DVec3::new(theta.sin(), -theta.cos(), 0.0);
    let mut problem = scenes::resting_box(1.0, mu, DT);
    problem.bodies[0] = SolverBody::cuboid(1.0, DVec3::ONE, DVec3::new(0.0, 0.5, 0.0)).with_force(gravity, DT);
    let expected = DVec3::X * DT * 9.81 * (theta.sin() - mu * theta.cos());
    (problem, expected)
}

#[test]
fn gauss_seidel_sweeps_alone_reach_a_loose_tolerance_at_the_exact_sliding_answer() {
    let (problem, expected) = box_on_slope(0.3);
    let settings = SolverSettings {
        tolerance: 1e-6,
        ..Default::default()
    };
    let (report, solution, _) = solve(&problem, settings);
    println!("{report:?}");
    assert!(report.converged && report.gauss_seidel_sweeps > 0, "{report:?}");
    assert_eq!(
        (report.outer_iterations, report.newton_iterations),
        (0, 0),
        "{report:?}"
    );
    assert_eq!(report.dynamics_residual, 0.0, "{report:?}");
    // A fixed point with the associated flow rule would lift the sliding box (w_n = μ‖w_t‖); one
    // whose friction does not oppose the slip would turn or slow it.
    let v = solution.velocities[0];
    assert!((v.linear - expected).length() < 1e-6, "{v:?} against {expected}");
    assert!(v.angular.length() < 1e-6, "{v:?}");
    // At the default tolerance the stage stays out: the outer loop solves it.
    let (report, solution, _) = solve(&problem, SolverSettings::default());
    assert!(report.converged && report.gauss_seidel_sweeps == 0 && report.newton_iterations > 0);
    assert!((solution.velocities[0].linear - expected).length() < 1e-8);
}

/// A 4 × 3 × 4 lattice of balls landing at 1 m/s with sideways speeds up to 0.5 m/s, μ = 0.5.
fn landing_pile() -> StepProblem {
    let mut problem = scenes::sphere_pile(4, 3, 4, 0.5, DT);
    for (i, body) in problem.bodies.iter_mut().enumerate() {
        let phase = i as f64;
        body.linear_velocity += DVec3::new(0.5 * phase.sin(), -1.0, 0.5 * phase.cos());
    }
    problem
}

#[test]
fn a_landing_pile_at_a_loose_tolerance_is_solved_by_the_sweeps_as_the_outer_loop_would() {
    let problem = landing_pile();
    let loose = SolverSettings {
        tolerance: 1e-2,
        ..Default::default()
    };
    let (swept, swept_solution, _) = solve(&problem, loose);
    let no_sweeps = SolverSettings {
        gauss_seidel_sweeps: 0,
        ..loose
    };
    let (newton, newton_solution, _) = solve(&problem, no_sweeps);
    let (exact, exact_solution, _) = solve(&problem, tight());
    println!("sweeps: {swept:?}\nouter loop: {newton:?}\nexact: {exact:?}");
    assert!(
        swept.converged && swept.gauss_seidel_sweeps > 0 && swept.newton_iterations == 0,
        "{swept:?}"
    );
    assert!(newton.converged && newton.newton_iterations > 0 && exact.converged);
    // Both loose answers lie about as far from the exact one.
    let swept_off = velocities_apart(&swept_solution, &exact_solution);
    let newton_off = velocities_apart(&newton_solution, &exact_solution);
    println!("off the exact answer: sweeps {swept_off:.2e}, outer loop {newton_off:.2e}");
    assert!(swept_off < 0.05 && newton_off < 0.05, "{swept_off} {newton_off}");
}

/// Newton directions found by CG on a stale factorization change the path, not the answer: a
/// stirred pile far from its answer, solved with them and with a factorization every Newton
/// iteration, ends within the tolerance at the same velocities, and they stand in for most of its
/// factorizations. A resting pile's re-solve warm-started 1% off begins near its answer, and
/// keeps exact directions.
#[test]
fn cg_directions_on_a_stale_factorization_reach_the_same_answer() {
    let problem = scenes::stirred_sphere_pile(5, 0.5, DT);
    let settings = |cg_direction_min_bodies| SolverSettings {
        cg_direction_min_bodies,
        ..Default::default()
    };
    let (exact, exact_solution, _) = solve(&problem, settings(usize::MAX));
    let (cg, cg_solution, _) = solve(&problem, settings(0));
    assert!(exact.converged && cg.converged, "{exact:?}\n{cg:?}");
    assert_eq!(exact.cg_directions, 0);
    assert!(2 * cg.cg_directions > cg.newton_iterations, "{cg:?}");
    let apart = velocities_apart(&exact_solution, &cg_solution);
    assert!(apart < 1e-7, "{apart:e} m/s apart");

    let resting = scenes::sphere_pile(5, 5, 5, 0.5, DT);
    let (_, rest_solution, _) = solve(&resting, settings(0));
    let mut nudged = warm_started(&resting, &rest_solution);
    for contact in &mut nudged.contacts {
        contact.warm_impulse = contact.warm_impulse.map(|w| w * 0.99);
    }
    let (warm, _, _) = solve(&nudged, settings(0));
    assert!(
        warm.converged && warm.newton_iterations > 0 && warm.cg_directions == 0,
        "{warm:?}"
    );
}

/// The report counts the Newton steps on the shifts of sliding contacts: a stirred pile solved
/// cold has dozens of sliding contacts and takes such a step at most of its outer iterations;
/// the same pile without friction has no shift to solve for.
#[test]
fn shift_newton_steps_are_reported_where_contacts_slide() {
    let (sliding, _, _) = solve(&scenes::stirred_sphere_pile(4, 0.5, DT), SolverSettings::default());
    assert!(sliding.converged, "{sliding:?}");
    assert!(
        2 * sliding.shift_newton_steps > sliding.outer_iterations
            && sliding.shift_newton_taken > 0
            && sliding.shift_newton_taken <= sliding.shift_newton_steps,
        "{sliding:?}"
    );
    let (frictionless, _, _) = solve(&scenes::stirred_sphere_pile(4, 0.0, DT), SolverSettings::default());
    assert!(
        frictionless.converged && frictionless.outer_iterations > 1,
        "{frictionless:?}"
    );
    assert_eq!(frictionless.shift_newton_steps, 0, "{frictionless:?}");
}

/// A near miss that the first `smoothing_sweeps` leave outside the acceptance level is swept on,
/// within `smoothing_budget`, to an accepted answer without a Newton step, where a budget of the
/// first sweeps alone sends it to the outer loop. A uniform error in every impulse is the slowest
/// mode for the sweeps. The held factorization, which would correct the near miss first, is not
/// there: a fresh solver holds none, as a settled pile with slipping contacts cannot use one.
#[test]
fn a_near_miss_the_first_sweeps_leave_outside_is_swept_on_within_the_budget() {
    let settings = SolverSettings::default();
    let (warm, solution) = warm_started_off_by(&scenes::box_pyramid(20, 0.5, DT), |_| 1.6e-7);

    let first_only = SolverSettings {
        smoothing_budget: settings.smoothing_sweeps,
        ..settings
    };
    let report = Solver::new(first_only).solve(&warm, &mut Solution::default());
    println!("the first sweeps alone: {report:?}");
    assert_eq!(report.smoothing_sweeps, settings.smoothing_sweeps, "{report:?}");
    assert!(report.converged && report.newton_iterations >= 1, "{report:?}");

    let mut swept = Solution::default();
    let report = Solver::new(settings).solve(&warm, &mut swept);
    println!("within the budget: {report:?}");
    assert!(report.converged && report.warm_start_accepted, "{report:?}");
    assert_eq!(report.newton_iterations, 0, "{report:?}");
    assert!(
        (settings.smoothing_sweeps + 1..=settings.smoothing_budget).contains(&report.smoothing_sweeps),
        "{report:?}"
    );
    assert!(velocities_apart(&swept, &solution) < 1e-7);
}

/// A 2 kg ball of radius 0.1 m rolling at `speed` along x on the ground, resisting rolling with
/// the lever arm `mu_r` through one resistance block; no warm starts.
fn rolling_ball(speed: f64, mu_r: f64) -> StepProblem {
    let radius = 0.1;
    let centre = DVec3::new(0.0, radius, 0.0);
    let body = SolverBody::sphere(POINT_MASS, radius, centre)
        .with_force(GRAVITY * POINT_MASS, DT)
        .with_velocity(DVec3::X * speed, DVec3::Z * (-speed / radius));
    let contact = SolverContact::new(0, ContactSide::Body(0), ContactSide::STATIC, DVec3::ZERO, DVec3::Y);
    let rows = ConstraintRows::Angular {
        axes: [DVec3::Y, DVec3::X, DVec3::Z],
        count: 3,
    };
    StepProblem {
        bodies: vec![body],
        contacts: vec![contact],
        constraints: vec![SolverConstraint::new(
            1,
            ContactSide::Body(0),
            ContactSide::STATIC,
            rows,
        )],
        rolling: vec![RollingResistance {
            constraint: 0,
            contacts: 0..1,
            torsional: 0.0,
            rolling: mu_r,
        }],
        dt: DT,
    }
}

#[test]
fn rolling_resistance_settles_on_the_bound_its_own_normal_impulse_sets() {
    let (speed, mu_r, radius) = (2.0, 0.005, 0.1);
    let problem = rolling_ball(speed, mu_r);
    let (report, solution, _) = solve(&problem, tight());
    assert!(report.converged, "{report:?}");
    // No warm start: the bound starts at zero and follows the load the outer loop finds.
    assert!((1..=2).contains(&report.rolling_rounds), "{report:?}");
    let normal = solution.impulses[0].normal;
    let torque = solution.constraint_impulses[0];
    println!(
        "λ_n = {normal:.12} N·s, rolling torque impulse {:.12} N·m·s in {} rounds",
        torque.z, report.rolling_rounds
    );
    // Within the tolerance's impulse, 1e-10 m/s times the mass.
    assert!((normal - POINT_MASS * 9.81 * DT).abs() < 1e-9, "λ_n = {normal}");
    // The whole bound, resisting the spin about −z.
    assert!((torque.z - mu_r * normal).abs() < 1e-9 * mu_r * normal, "{torque}");
    assert!(torque.x.abs() < 1e-15 && torque.y.abs() < 1e-15, "{torque}");
    // Rolling on: m Δv = f, I Δω = −f R − μ_r λ_n with Δv = R Δω, so Δv = −μ_r λ_n / (1.4 m R).
    let expected = speed - mu_r * normal / (1.4 * POINT_MASS * radius);
    let v = solution.velocities[0];
    assert!(
        (v.linear.x - expected).abs() < 1e-10,
        "{} m/s, expected {expected}",
        v.linear.x
    );
    assert!((v.angular.z * radius + v.linear.x).abs() < 1e-10, "slips: {v:?}");
}

#[test]
fn a_rolling_resistance_naming_a_missing_block_is_refused() {
    let mut problem = rolling_ball(1.0, 0.005);
    problem.rolling[0].constraint = 3;
    let (report, solution, _) = solve(&problem, tight());
    assert_eq!(
        report.failure,
        Some(SolveFailure::InvalidInput(InvalidInput::Constraint(3)))
    );
    assert!(solution.velocities[0].linear.is_finite());
    problem.rolling[0].constraint = 0;
    problem.rolling[0].rolling = f64::NAN;
    let (report, _, _) = solve(&problem, tight());
    assert!(
        matches!(report.failure, Some(SolveFailure::InvalidInput(_))),
        "{report:?}"
    );
}
