//! Joint blocks in the CANAL solver (design note §6), each checked against a hand-computed answer:
//! one step of a hanging body on a ball joint, a chain carrying a bob 1000× its links' mass, a
//! one-sided limit and a torque-bounded motor.

use bevy_canal::solver::*;
use glam::{DMat3, DVec3};

const DT: f64 = 1.0 / 60.0;
const G: DVec3 = DVec3::new(0.0, -9.81, 0.0);

fn solve(problem: &StepProblem) -> (SolveReport, Solution) {
    let mut solver = Solver::new(SolverSettings {
        tolerance: 1e-10,
        ..Default::default()
    });
    let mut solution = Solution::default();
    let report = solver.solve(problem, &mut solution);
    (report, solution)
}

fn cross_matrix(r: DVec3) -> DMat3 {
    DMat3::from_cols(
        DVec3::new(0.0, r.z, -r.y),
        DVec3::new(-r.z, 0.0, r.x),
        DVec3::new(r.y, -r.x, 0.0),
    )
}

#[test]
fn ball_joint_step_matches_the_hand_solved_impulse() {
    // A box hanging from a fixed point 0.8 m above its centre, struck sideways and spinning.
    let anchor = DVec3::new(0.0, 0.8, 0.0);
    let body = SolverBody::cuboid(2.0, DVec3::new(0.3, 0.5, 0.4), DVec3::ZERO)
        .with_force(G * 2.0, DT)
        .with_velocity(DVec3::new(1.5, 0.2, -0.4), DVec3::new(0.3, -1.0, 2.0));
    let joint = SolverConstraint::ball(7, ContactSide::Body(0), ContactSide::STATIC, anchor, anchor, DT);
    let problem = StepProblem {
        bodies: vec![body],
        constraints: vec![joint],
        dt: DT,
        ..Default::default()
    };
    let (report, solution) = solve(&problem);
    assert!(report.converged, "{report:?}");

    // By hand: v' = v + (g dt) + P/m, ω' = ω + I⁻¹(r × P), and the anchor must stop: v' + ω' × r = 0.
    // Eliminating v', ω' gives the 3×3 system K P = −(v + g dt + ω × r), K = I/m − [r]× I⁻¹ [r]×.
    let r = anchor;
    let inv_inertia = body.inertia.inverse();
    let k = DMat3::IDENTITY / body.mass - cross_matrix(r) * inv_inertia * cross_matrix(r);
    let free = body.linear_velocity + G * DT + body.angular_velocity.cross(r);
    let expected = k.inverse() * -free;
    let got = solution.constraint_impulses[0];
    assert!(
        (got - expected).length() < 1e-9 * expected.length(),
        "{got} vs {expected}"
    );
    let v = solution.velocities[0];
    let anchor_velocity = v.linear + v.angular.cross(r);
    assert!(anchor_velocity.length() < 1e-10, "anchor drifts at {anchor_velocity}");
    assert!(report.dynamics_residual < 1e-12);
}

#[test]
fn chain_carries_a_bob_a_thousand_times_heavier_exactly() {
    // 20 links of 1 kg, each 0.1 m long, hanging from a fixed point with a 1000 kg bob at the end.
    let (links, length) = (20, 0.1);
    let top = DVec3::new(0.0, 3.0, 0.0);
    let centre = |i: usize| top - DVec3::Y * (length * (i as f64 + 0.5));
    let mut bodies: Vec<SolverBody> = (0..links)
        .map(|i| SolverBody::cuboid(1.0, DVec3::new(0.02, length, 0.02), centre(i)).with_force(G, DT))
        .collect();
    let bob = top - DVec3::Y * (length * links as f64 + 0.1);
    bodies.push(SolverBody::sphere(1000.0, 0.1, bob).with_force(G * 1000.0, DT));
    let mut constraints = vec![SolverConstraint::ball(
        0,
        ContactSide::Body(0),
        ContactSide::STATIC,
        top,
        top,
        DT,
    )];
    for i in 1..=links {
        // The top of link i (or of the bob) meets the bottom of link i − 1.
        let joint_point = top - DVec3::Y * (length * i as f64);
        constraints.push(SolverConstraint::ball(
            i as u64,
            ContactSide::Body(i),
            ContactSide::Body(i - 1),
            joint_point,
            joint_point,
            DT,
        ));
    }
    let problem = StepProblem {
        bodies,
        constraints,
        dt: DT,
        ..Default::default()
    };
    let (report, solution) = solve(&problem);
    assert!(report.converged, "{report:?}");
    // Joint k (0 = top) carries everything below it: (links − k) kg of chain plus the bob.
    for (k, impulse) in solution.constraint_impulses.iter().enumerate() {
        let below = (links - k) as f64 + 1000.0;
        let expected = 9.81 * DT * below;
        // Joint k acts on body k (side 1) from body k − 1: it holds body k up.
        assert!(
            (impulse.y - expected).abs() < 1e-9 * expected && impulse.x.abs() < 1e-9 && impulse.z.abs() < 1e-9,
            "joint {k}: {impulse} vs {expected}"
        );
    }
    let fastest = scenes::fastest_speed(&solution);
    assert!(fastest < 1e-9, "the chain moves at {fastest}");
}

/// A body spinning about z at `spin` rad/s with one angular row about z in `cone`, biased by `bias`.
fn spinning_body_with_row(spin: f64, torque_impulse: f64, cone: Cone, bias: f64) -> StepProblem {
    let mut body =
        SolverBody::cuboid(3.0, DVec3::new(1.0, 0.5, 0.2), DVec3::ZERO).with_velocity(DVec3::ZERO, DVec3::Z * spin);
    body.angular_impulse = DVec3::Z * torque_impulse;
    let row = ConstraintRows::Angular {
        axes: [DVec3::Z, DVec3::ZERO, DVec3::ZERO],
        count: 1,
    };
    let constraint = SolverConstraint::new(0, ContactSide::Body(0), ContactSide::STATIC, row)
        .with_cone(cone)
        .with_bias(DVec3::X * bias);
    StepProblem {
        bodies: vec![body],
        constraints: vec![constraint],
        dt: DT,
        ..Default::default()
    }
}

#[test]
fn limit_stops_rotation_at_the_limit_and_never_pulls() {
    // 0.01 rad from its lower limit, turning towards it at 2 rad/s: the step may close 0.01 rad.
    let room = 0.01;
    let problem = spinning_body_with_row(-2.0, 0.0, Cone::Lower, room / DT);
    let (report, solution) = solve(&problem);
    assert!(report.converged, "{report:?}");
    let spin = solution.velocities[0].angular.z;
    assert!((spin + room / DT).abs() < 1e-10, "ends at {spin} rad/s");
    let inertia_z = problem.bodies[0].inertia.z_axis.z;
    let expected = inertia_z * (2.0 - room / DT);
    assert!((solution.constraint_impulses[0].x - expected).abs() < 1e-10 * expected);

    // Turning away from the limit: the row stays inactive.
    let problem = spinning_body_with_row(2.0, 0.0, Cone::Lower, room / DT);
    let (report, solution) = solve(&problem);
    assert!(report.converged);
    assert_eq!(solution.constraint_impulses[0].x, 0.0);
    assert!((solution.velocities[0].angular.z - 2.0).abs() < 1e-12);
}

#[test]
fn bounded_motor_gives_exactly_its_bound_when_the_load_exceeds_it() {
    // A velocity motor (target 0 rad/s, row w = ω_z) against a torque of 5 N·m, bounded at 3 N·m.
    let (load, bound) = (5.0, 3.0);
    let problem = spinning_body_with_row(0.0, load * DT, Cone::Bounded { max: bound * DT }, 0.0);
    let (report, solution) = solve(&problem);
    assert!(report.converged, "{report:?}");
    let impulse = solution.constraint_impulses[0].x;
    assert!((impulse + bound * DT).abs() < 1e-12, "motor impulse {impulse}");
    let inertia_z = problem.bodies[0].inertia.z_axis.z;
    let expected_spin = (load - bound) * DT / inertia_z;
    assert!((solution.velocities[0].angular.z - expected_spin).abs() < 1e-10);

    // Within its bound the motor holds the target exactly.
    let problem = spinning_body_with_row(0.0, load * DT, Cone::Bounded { max: 2.0 * load * DT }, 0.0);
    let (report, solution) = solve(&problem);
    assert!(report.converged);
    assert!(solution.velocities[0].angular.z.abs() < 1e-10);
    assert!((solution.constraint_impulses[0].x + load * DT).abs() < 1e-10);
}

#[test]
fn angular_row_follows_a_turning_fixed_side() {
    // Locked about z to a kinematic hub turning at 1.5 rad/s: the body, at rest, is brought to the
    // hub's spin, not held still.
    let hub_spin = 1.5;
    let mut problem = spinning_body_with_row(0.0, 0.0, Cone::Equality, 0.0);
    problem.constraints[0].body2 = ContactSide::Fixed {
        velocity: DVec3::ZERO,
        angular_velocity: DVec3::Z * hub_spin,
    };
    let (report, solution) = solve(&problem);
    assert!(report.converged, "{report:?}");
    let spin = solution.velocities[0].angular.z;
    assert!((spin - hub_spin).abs() < 1e-10, "ends at {spin} rad/s");
    let inertia_z = problem.bodies[0].inertia.z_axis.z;
    let impulse = solution.constraint_impulses[0].x;
    assert!((impulse - inertia_z * hub_spin).abs() < 1e-10 * inertia_z, "{impulse}");
}

#[test]
fn malformed_joint_block_is_rejected_without_nan() {
    let mut problem = spinning_body_with_row(1.0, 0.0, Cone::Equality, 0.0);
    problem.constraints[0].rows = ConstraintRows::Angular {
        axes: [DVec3::new(0.0, 0.0, 2.0), DVec3::ZERO, DVec3::ZERO],
        count: 1,
    };
    let (report, solution) = solve(&problem);
    assert_eq!(
        report.failure,
        Some(SolveFailure::InvalidInput(InvalidInput::Constraint(0)))
    );
    assert!(solution.constraint_impulses[0].is_finite());
    assert_eq!(solution.velocities[0].angular, DVec3::Z);
}

#[test]
fn drive_row_is_the_implicit_spring_damper_and_respects_its_bound() {
    // PD drive about z towards 0.2 rad from 0 rad: gain γ = h²k_p + h k_d, bias −(h k_p θ_err)/γ.
    let (kp, kd, load) = (400.0, 20.0, 5.0);
    let gain = DT * DT * kp + DT * kd;
    let target_rate = DT * kp * 0.2 / gain;
    let solve_with = |max: f64| {
        let problem = spinning_body_with_row(0.5, load * DT, Cone::Drive { gain, max }, -target_rate);
        let (report, solution) = solve(&problem);
        assert!(report.converged, "{report:?}");
        (problem.bodies[0].inertia.z_axis.z, solution)
    };
    // Unbounded: λ = −γ(ω' − ω*) with ω' = ω₀ + (τh + λ)/I, solved by hand.
    let (inertia, solution) = solve_with(f64::INFINITY);
    let spin = (0.5 + load * DT / inertia + gain * target_rate / inertia) / (1.0 + gain / inertia);
    assert!((solution.velocities[0].angular.z - spin).abs() < 1e-10);
    let impulse = solution.constraint_impulses[0].x;
    assert!((impulse + gain * (spin - target_rate)).abs() < 1e-10);
    // Bounded below what the spring asks: the drive gives exactly its bound.
    let bound = 0.5 * impulse.abs();
    let (_, solution) = solve_with(bound);
    assert!((solution.constraint_impulses[0].x.abs() - bound).abs() < 1e-12);
}
