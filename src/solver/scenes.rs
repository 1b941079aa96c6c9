//! Ready-made step problems — a box on the ground, stacks, pyramids, sphere piles — as the
//! collision pipeline would produce them for bodies at rest under gravity. They exercise the
//! solver alone in tests, benchmarks and studies of its convergence.

use glam::DVec3;

use super::problem::{ContactSide, SolverBody, SolverContact, StepProblem};
use super::report::Solution;

/// Standard gravity used by the scenes, m/s².
pub const GRAVITY: DVec3 = DVec3::new(0.0, -9.81, 0.0);

/// The upward impulse static geometry carries in `solution`, N·s: for a scene at rest, its
/// weight × dt ([`weight_impulse`]).
pub fn ground_impulse(problem: &StepProblem, solution: &Solution) -> f64 {
    problem
        .contacts
        .iter()
        .zip(&solution.impulses)
        .filter(|(c, _)| c.body2 == ContactSide::STATIC)
        .map(|(_, i)| i.world.y)
        .sum()
}

/// The largest linear (m/s) or angular (rad/s) speed of a body in `solution`: 0 for a scene that
/// stays at rest.
pub fn fastest_speed(solution: &Solution) -> f64 {
    solution
        .velocities
        .iter()
        .map(|v| v.linear.length().max(v.angular.length()))
        .fold(0.0, f64::max)
}

/// The downward impulse the bodies' external forces give over the step, N·s.
pub fn weight_impulse(problem: &StepProblem) -> f64 {
    problem.bodies.iter().map(|b| -b.linear_impulse.y).sum()
}

fn resting(mass: f64, size: DVec3, center: DVec3, dt: f64) -> SolverBody {
    SolverBody::cuboid(mass, size, center).with_force(GRAVITY * mass, dt)
}

/// The four corners of the rectangle `[x0, x1] × [z0, z1]` at height `y`.
fn patch(x0: f64, x1: f64, z0: f64, z1: f64, y: f64) -> [DVec3; 4] {
    [
        DVec3::new(x0, y, z0),
        DVec3::new(x1, y, z0),
        DVec3::new(x0, y, z1),
        DVec3::new(x1, y, z1),
    ]
}

fn push_patch(contacts: &mut Vec<SolverContact>, upper: usize, lower: ContactSide, points: [DVec3; 4], mu: f64) {
    for point in points {
        let id = contacts.len() as u64;
        contacts.push(SolverContact::new(id, ContactSide::Body(upper), lower, point, DVec3::Y).with_friction(mu));
    }
}

/// A unit box of `mass` kg resting on static ground with four corner contacts.
pub fn resting_box(mass: f64, mu: f64, dt: f64) -> StepProblem {
    box_stack(1, mass, mu, dt)
}

/// `count` unit boxes of `mass` kg stacked on static ground, four corner contacts per interface.
pub fn box_stack(count: usize, mass: f64, mu: f64, dt: f64) -> StepProblem {
    let mut bodies = Vec::with_capacity(count);
    let mut contacts = Vec::with_capacity(4 * count);
    for i in 0..count {
        bodies.push(resting(mass, DVec3::ONE, DVec3::new(0.0, i as f64 + 0.5, 0.0), dt));
        let lower = if i == 0 {
            ContactSide::STATIC
        } else {
            ContactSide::Body(i - 1)
        };
        push_patch(&mut contacts, i, lower, patch(-0.5, 0.5, -0.5, 0.5, i as f64), mu);
    }
    StepProblem {
        bodies,
        contacts,
        dt,
        ..Default::default()
    }
}

/// A two-dimensional pyramid of unit boxes of 1 kg with `layers` rows (`layers·(layers+1)/2`
/// boxes): each box rests on the two below it over half its width, one four-point patch each.
pub fn box_pyramid(layers: usize, mu: f64, dt: f64) -> StepProblem {
    let mut bodies = Vec::new();
    let mut contacts = Vec::new();
    let mut row_start = Vec::with_capacity(layers);
    for row in 0..layers {
        row_start.push(bodies.len());
        for j in 0..layers - row {
            let x = j as f64 + 0.5 * row as f64;
            let y = row as f64;
            let me = bodies.len();
            bodies.push(resting(1.0, DVec3::ONE, DVec3::new(x, y + 0.5, 0.0), dt));
            if row == 0 {
                push_patch(
                    &mut contacts,
                    me,
                    ContactSide::STATIC,
                    patch(x - 0.5, x + 0.5, -0.5, 0.5, y),
                    mu,
                );
            } else {
                let left = row_start[row - 1] + j;
                push_patch(
                    &mut contacts,
                    me,
                    ContactSide::Body(left),
                    patch(x - 0.5, x, -0.5, 0.5, y),
                    mu,
                );
                push_patch(
                    &mut contacts,
                    me,
                    ContactSide::Body(left + 1),
                    patch(x, x + 0.5, -0.5, 0.5, y),
                    mu,
                );
            }
        }
    }
    StepProblem {
        bodies,
        contacts,
        dt,
        ..Default::default()
    }
}

/// An `n³` [`sphere_pile`] in the middle of an impact: each ball's velocity gains up to 1, 2 and
/// 1 m/s along x, y and z, in a fixed pattern that differs from ball to ball. The solve starts far
/// from its answer, and contacts open, close, stick and slip as it goes.
pub fn stirred_sphere_pile(n: usize, mu: f64, dt: f64) -> StepProblem {
    let mut problem = sphere_pile(n, n, n, mu, dt);
    for (i, body) in problem.bodies.iter_mut().enumerate() {
        let phase = i as f64;
        body.linear_velocity += DVec3::new(
            (1.7 * phase).sin(),
            2.0 * (2.3 * phase + 1.0).sin(),
            (3.1 * phase).cos(),
        );
    }
    problem
}

/// A cubic lattice of `nx × ny × nz` touching balls of radius 0.5 m and 1 kg on static ground,
/// with a contact between every pair of lattice neighbours.
pub fn sphere_pile(nx: usize, ny: usize, nz: usize, mu: f64, dt: f64) -> StepProblem {
    let index = |x: usize, y: usize, z: usize| (y * nz + z) * nx + x;
    let mut bodies = Vec::with_capacity(nx * ny * nz);
    let mut contacts = Vec::new();
    for y in 0..ny {
        for z in 0..nz {
            for x in 0..nx {
                let center = DVec3::new(x as f64, y as f64 + 0.5, z as f64);
                bodies.push(SolverBody::sphere(1.0, 0.5, center).with_force(GRAVITY, dt));
            }
        }
    }
    let mut add = |body1: usize, body2: ContactSide, point: DVec3, normal: DVec3| {
        let id = contacts.len() as u64;
        contacts.push(SolverContact::new(id, ContactSide::Body(body1), body2, point, normal).with_friction(mu));
    };
    for y in 0..ny {
        for z in 0..nz {
            for x in 0..nx {
                let me = index(x, y, z);
                let c = bodies[me].center_of_mass;
                if y == 0 {
                    add(me, ContactSide::STATIC, c - DVec3::Y * 0.5, DVec3::Y);
                } else {
                    add(me, ContactSide::Body(index(x, y - 1, z)), c - DVec3::Y * 0.5, DVec3::Y);
                }
                if x > 0 {
                    add(me, ContactSide::Body(index(x - 1, y, z)), c - DVec3::X * 0.5, DVec3::X);
                }
                if z > 0 {
                    add(me, ContactSide::Body(index(x, y, z - 1)), c - DVec3::Z * 0.5, DVec3::Z);
                }
            }
        }
    }
    StepProblem {
        bodies,
        contacts,
        dt,
        ..Default::default()
    }
}
