//! Shared helpers of the solver tests: random well-posed problems and an independent reference
//! solver.
#![allow(dead_code)]

use bevy_canal::solver::*;
use glam::{DMat3, DQuat, DVec3};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

pub const DT: f64 = 1.0 / 60.0;

fn log_uniform(rng: &mut StdRng, lo: f64, hi: f64) -> f64 {
    (rng.random_range(lo.ln()..hi.ln())).exp()
}

fn unit(rng: &mut StdRng) -> DVec3 {
    loop {
        let v = DVec3::new(
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
        );
        if v.length_squared() > 0.05 && v.length_squared() <= 1.0 {
            return v.normalize();
        }
    }
}

/// A random island: 1–5 bodies with masses in 1e-3..1e3 kg and rotated box inertias, each on the
/// ground through 1–4 contacts with tilted normals, some touching each other, μ in [0, 1], random
/// velocities, gaps in [0, 1 mm] (so that v = 0 is feasible and a solution exists).
pub fn random_problem(seed: u64) -> StepProblem {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = rng.random_range(1..=5);
    let mut bodies = Vec::new();
    for i in 0..n {
        let mass = log_uniform(&mut rng, 1e-3, 1e3);
        let size = DVec3::new(
            log_uniform(&mut rng, 0.05, 2.0),
            log_uniform(&mut rng, 0.05, 2.0),
            log_uniform(&mut rng, 0.05, 2.0),
        );
        let rotation = DMat3::from_quat(DQuat::from_axis_angle(unit(&mut rng), rng.random_range(0.0..3.0)));
        let local = SolverBody::cuboid(mass, size, DVec3::ZERO).inertia;
        let center = DVec3::new(1.5 * i as f64, size.y, 0.0);
        let mut body = SolverBody::new(mass, rotation * local * rotation.transpose(), center)
            .with_force(DVec3::new(0.0, -9.81 * mass, 0.0), DT)
            .with_velocity(
                unit(&mut rng) * rng.random_range(0.0..2.0),
                unit(&mut rng) * rng.random_range(0.0..2.0),
            );
        body.inertia = (body.inertia + body.inertia.transpose()) * 0.5;
        bodies.push(body);
    }
    let mut contacts = Vec::new();
    for (i, body) in bodies.iter().enumerate() {
        for _ in 0..rng.random_range(1..=4) {
            let normal = (DVec3::Y + 0.3 * unit(&mut rng)).normalize();
            let offset = DVec3::new(rng.random_range(-0.5..0.5), -0.5, rng.random_range(-0.5..0.5));
            let id = contacts.len() as u64;
            contacts.push(
                SolverContact::new(
                    id,
                    ContactSide::Body(i),
                    ContactSide::STATIC,
                    body.center_of_mass + offset,
                    normal,
                )
                .with_gap(rng.random_range(0.0..1e-3))
                .with_friction(rng.random_range(0.0..1.0)),
            );
        }
        if i > 0 && rng.random_bool(0.7) {
            let point = 0.5 * (body.center_of_mass + bodies[i - 1].center_of_mass) + 0.2 * unit(&mut rng);
            let normal = (DVec3::X + 0.3 * unit(&mut rng)).normalize();
            let id = contacts.len() as u64;
            contacts.push(
                SolverContact::new(id, ContactSide::Body(i), ContactSide::Body(i - 1), point, normal)
                    .with_gap(rng.random_range(0.0..1e-3))
                    .with_friction(rng.random_range(0.0..1.0)),
            );
        }
    }
    StepProblem {
        bodies,
        contacts,
        dt: DT,
        ..Default::default()
    }
}

/// One contact side's Jacobian rows `(linear, angular)` for `(n, t₁, t₂)`, with its body.
type SideRows = (usize, [(DVec3, DVec3); 3]);

/// An independent reference: builds the Delassus operator `W = J A⁻¹ Jᵀ` densely from the problem
/// and runs the projected block Gauss–Seidel natural-map iteration
/// `λᵢ ← Π(λᵢ − ρᵢ(wᵢ + δᵢ))` with the shift updated every sweep, until the impulses stop changing
/// by more than `1e-12` relative. Shares no code with the solver but the cone projection (which
/// has its own finite-difference tests). Only gaps ≥ 0, no restitution. Returns the impulses and
/// whether the iteration settled within `sweeps`.
pub fn reference_impulses(problem: &StepProblem, sweeps: usize) -> (Vec<DVec3>, bool) {
    let nc = problem.contacts.len();
    let inverse: Vec<(f64, DMat3)> = problem
        .bodies
        .iter()
        .map(|b| (1.0 / b.mass, b.inertia.inverse()))
        .collect();
    // Per contact and side: the 3 rows [d, r × d] with sign, as (body, [(lin, ang); 3]).
    let mut rows: Vec<Vec<SideRows>> = Vec::new();
    let mut free = Vec::new();
    for contact in &problem.contacts {
        let (n, t1, t2) = contact.frame();
        let mut sides = Vec::new();
        let mut fixed = DVec3::ZERO;
        for (side, sign) in [(contact.body1, 1.0), (contact.body2, -1.0)] {
            match side {
                ContactSide::Body(b) => {
                    let r = contact.point - problem.bodies[b].center_of_mass;
                    let row = |d: DVec3| (d * sign, r.cross(d) * sign);
                    sides.push((b, [row(n), row(t1), row(t2)]));
                }
                ContactSide::Fixed { velocity, .. } => fixed += sign * velocity,
            }
        }
        free.push((
            DVec3::new(n.dot(fixed), t1.dot(fixed), t2.dot(fixed)),
            contact.gap / problem.dt,
        ));
        rows.push(sides);
    }
    // Unconstrained end velocities.
    let base: Vec<(DVec3, DVec3)> = problem
        .bodies
        .iter()
        .zip(&inverse)
        .map(|(b, (im, ii))| {
            (
                b.linear_velocity + b.linear_impulse * *im,
                b.angular_velocity + *ii * b.angular_impulse,
            )
        })
        .collect();
    let mut velocity = base.clone();
    let relative = |velocity: &[(DVec3, DVec3)], c: usize| -> DVec3 {
        let mut w = free[c].0 + DVec3::new(free[c].1, 0.0, 0.0);
        for (b, r) in &rows[c] {
            for k in 0..3 {
                w[k] += r[k].0.dot(velocity[*b].0) + r[k].1.dot(velocity[*b].1);
            }
        }
        w
    };
    // Dense 3×3 diagonal Delassus blocks.
    let diagonal: Vec<DMat3> = (0..nc)
        .map(|c| {
            let mut w = DMat3::ZERO;
            for (b, r) in &rows[c] {
                let (im, ii) = inverse[*b];
                for i in 0..3 {
                    for j in 0..3 {
                        let v = r[i].0.dot(r[j].0) * im + r[i].1.dot(ii * r[j].1);
                        w.col_mut(j)[i] += v;
                    }
                }
            }
            w
        })
        .collect();
    let mut lambda = vec![DVec3::ZERO; nc];
    for _ in 0..sweeps {
        let mut change = 0.0_f64;
        let mut scale = 1e-300_f64;
        for c in 0..nc {
            let w = relative(&velocity, c);
            let mu = problem.contacts[c].friction;
            let shifted = nalgebra::Vector3::new(w.x + mu * w.y.hypot(w.z), w.y, w.z);
            let rho = 1.0 / diagonal[c].col(0).x.max(diagonal[c].col(1).y).max(diagonal[c].col(2).z);
            let old = nalgebra::Vector3::new(lambda[c].x, lambda[c].y, lambda[c].z);
            let new = cone::project(mu, &(old - rho * shifted)).0;
            let delta = DVec3::new(new.x - old.x, new.y - old.y, new.z - old.z);
            for (b, r) in &rows[c] {
                let (im, ii) = inverse[*b];
                for k in 0..3 {
                    velocity[*b].0 += r[k].0 * (delta[k] * im);
                    velocity[*b].1 += ii * r[k].1 * delta[k];
                }
            }
            lambda[c] += delta;
            change = change.max(delta.length());
            scale = scale.max(lambda[c].length());
        }
        if change <= 1e-12 * scale {
            return (lambda, true);
        }
    }
    (lambda, false)
}
