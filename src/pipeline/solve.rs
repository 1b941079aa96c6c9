//! Stage 4: islands of the contact graph, each solved by the CANAL core.
//!
//! Owns the translation from simulation bodies and generated contacts into one
//! [`StepProblem`] per island, the warm-start cache, and running the islands (in parallel on
//! Bevy's compute task pool when the last step's took long enough, else in order: the results are
//! identical, each island being solved by its own solver from its own data), each followed by its
//! `push_out`. The velocity step sees a penetrating contact, and a loaded contact's gap under
//! `PhysicsSettings::resting_gap`, as touching: neither is closed or opened by a speed. Does not
//! move bodies: integration reads the solutions and the push-out's displacements.

use bevy_platform::collections::HashMap;
use std::time::{Duration, Instant};

use bevy_ecs::prelude::*;
use bevy_math::DVec3;
use bevy_tasks::{ComputeTaskPool, TaskPool};

use super::PhysicsWorld;
use super::narrow_phase::GeneratedContact;
use super::push_out::PushOut;
use super::world::SimBody;
use crate::resources::{CapturedIsland, CapturedProblems, PhysicsSettings};
use crate::solver::{ContactSide, Solution, SolveReport, Solver, SolverBody, SolverContact, StepProblem};

/// One island's problem, solver and answer, reused step after step.
#[derive(Default)]
pub(crate) struct IslandSolver {
    pub problem: StepProblem,
    pub solver: Solver,
    pub solution: Solution,
    pub report: SolveReport,
    /// Body index (in the step's bodies) of each problem body.
    pub bodies: Vec<usize>,
    /// Contact index (in the step's contacts) of each problem contact.
    pub contacts: Vec<usize>,
    /// `(joint index, block index)` of each problem constraint.
    pub joint_blocks: Vec<(usize, usize)>,
    /// True signed gap of each problem contact: the problem's own stop at zero (see `push_out`).
    pub gaps: Vec<f64>,
    /// The displacement that pushes this step's remaining penetration out.
    pub push_out: PushOut,
}

/// Union–find over dynamic bodies.
fn find(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

pub(crate) fn solver_body(body: &SimBody) -> SolverBody {
    SolverBody {
        mass: body.mass,
        inertia: body.world_inertia(),
        center_of_mass: body.center_of_mass(),
        linear_velocity: body.linear_velocity,
        angular_velocity: body.angular_velocity,
        linear_impulse: body.linear_impulse,
        angular_impulse: body.angular_impulse,
    }
}

/// A contact's or joint's side in its island's problem: the body's island index if it is dynamic,
/// else a fixed side moving with the body's velocity at `point`.
fn solver_side(body: &SimBody, local: usize, point: DVec3) -> ContactSide {
    if body.kind.is_dynamic() {
        ContactSide::Body(local)
    } else {
        ContactSide::Fixed {
            velocity: body.point_velocity(point),
            angular_velocity: body.angular_velocity,
        }
    }
}

/// The first of two bodies that is dynamic: it names the island a contact or joint belongs to.
fn first_dynamic(bodies: &[SimBody], a: usize, b: usize) -> Option<usize> {
    [a, b].into_iter().find(|&i| bodies[i].kind.is_dynamic())
}

/// Gaps below this count as touching, m: a speculative contact ends its step at gap ≈ 0 up to
/// `f32` round-off of the shapes' poses.
const TOUCHING: f64 = 1e-5;

/// The speed a contact was struck with, for restitution. A speculative contact that closes
/// within this step is braked by the solver to arrive exactly; its free normal velocity at the
/// end of the step is remembered, and the next step, now touching, rebounds from it.
fn impact_velocity(
    bodies: &[SimBody],
    impacts: &HashMap<u64, f64>,
    impacts_next: &mut HashMap<u64, f64>,
    dt: f64,
    contact: &GeneratedContact,
) -> Option<f64> {
    // Most contacts are neither bouncy-speculative nor remembered as struck: they need no
    // velocities, and computing them first was 4% of a resting ten-box stack's step.
    let struck = if contact.gap > TOUCHING {
        if contact.restitution > 0.0 {
            None
        } else {
            return None;
        }
    } else if impacts.is_empty() {
        // A resting scene remembers no strikes: no lookup for each of its contacts.
        return None;
    } else {
        Some(*impacts.get(&contact.id)?)
    };
    let (b1, b2) = (&bodies[contact.body1], &bodies[contact.body2]);
    let normal_velocity = contact
        .normal
        .dot(b1.point_velocity(contact.point) - b2.point_velocity(contact.point));
    if let Some(struck) = struck {
        return Some(struck.min(normal_velocity));
    }
    let free_change = |b: &SimBody| {
        if b.kind.is_dynamic() {
            b.linear_impulse / b.mass
        } else {
            DVec3::ZERO
        }
    };
    let free = normal_velocity + contact.normal.dot(free_change(b1) - free_change(b2));
    if contact.gap + free * dt < 0.0 {
        impacts_next.insert(contact.id, free);
    }
    None
}

pub(crate) fn solve(
    mut world: ResMut<PhysicsWorld>,
    settings: Res<PhysicsSettings>,
    capture: Option<ResMut<CapturedProblems>>,
) {
    let start = Instant::now();
    let world = &mut *world;
    let n = world.bodies.len();
    // Islands: dynamic bodies joined by contacts between two dynamic bodies.
    let mut parent: Vec<usize> = (0..n).collect();
    let links = world.contacts.iter().map(|c| (c.body1, c.body2));
    let mut last = None;
    for (a, b) in links.chain(world.joints.iter().map(|j| (j.body1, j.body2))) {
        // A manifold's points arrive together and join the same two bodies: one union will do.
        if last.replace((a, b)) == Some((a, b)) {
            continue;
        }
        if world.bodies[a].kind.is_dynamic() && world.bodies[b].kind.is_dynamic() {
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            // The smaller index is the root: islands are then numbered in body order.
            parent[ra.max(rb)] = ra.min(rb);
        }
    }
    let mut island_of = vec![usize::MAX; n];
    let mut count = 0;
    for i in 0..n {
        if world.bodies[i].kind.is_dynamic() {
            let root = find(&mut parent, i);
            if island_of[root] == usize::MAX {
                island_of[root] = count;
                count += 1;
            }
            island_of[i] = island_of[root];
        }
    }
    if world.islands.len() < count {
        world.islands.resize_with(count, IslandSolver::default);
    }
    world.island_count = count;
    let mut local = vec![usize::MAX; n];
    for island in &mut world.islands[..count] {
        island.bodies.clear();
        island.contacts.clear();
        island.gaps.clear();
        island.joint_blocks.clear();
        island.problem.bodies.clear();
        island.problem.contacts.clear();
        island.problem.constraints.clear();
        island.problem.rolling.clear();
        island.problem.dt = world.dt;
        island.solver.settings = settings.solver;
    }
    for (i, body) in world.bodies.iter().enumerate() {
        if let Some(island) = world.islands.get_mut(island_of[i]) {
            local[i] = island.bodies.len();
            island.bodies.push(i);
            island.problem.bodies.push(solver_body(body));
        }
    }
    world.impacts_next.clear();
    for (c, contact) in world.contacts.iter().enumerate() {
        let Some(anchor) = first_dynamic(&world.bodies, contact.body1, contact.body2) else {
            continue;
        };
        let impact = impact_velocity(
            &world.bodies,
            &world.impacts,
            &mut world.impacts_next,
            world.dt,
            contact,
        );
        let side = |b: usize| solver_side(&world.bodies[b], local[b], contact.point);
        let island = &mut world.islands[island_of[anchor]];
        island.contacts.push(c);
        island.gaps.push(contact.gap);
        island.problem.contacts.push(
            SolverContact::new(
                contact.id,
                side(contact.body1),
                side(contact.body2),
                contact.point,
                contact.normal,
            )
            .with_manifold(contact.manifold)
            .with_gap(contact.gap)
            .with_friction(contact.friction.max(0.0))
            .with_restitution(contact.restitution.clamp(0.0, 1.0))
            .with_impact_velocity(impact),
        );
    }
    for (j, joint) in world.joints.iter().enumerate() {
        let Some(anchor) = first_dynamic(&world.bodies, joint.body1, joint.body2) else {
            continue;
        };
        let bodies = &world.bodies;
        let sides = |g: &super::joints::JointGeometry| {
            [(joint.body1, g.anchor1), (joint.body2, g.anchor2)]
                .map(|(b, point)| solver_side(&bodies[b], local[b], point))
        };
        let island = &mut world.islands[island_of[anchor]];
        let warm = &world.joint_warm;
        super::joints::blocks(joint, bodies, world.dt, sides, |block, constraint| {
            island.joint_blocks.push((j, block));
            let warm_impulse = warm.get(&constraint.id).copied();
            island
                .problem
                .constraints
                .push(constraint.with_warm_impulse(warm_impulse));
        });
    }
    let resting_gap = f64::from(settings.resting_gap);
    for island in &mut world.islands[..count] {
        super::rolling::add_blocks(
            &mut island.problem,
            &world.contacts,
            &island.contacts,
            &world.rolling_warm,
        );
        world.warm_start.apply(&mut island.problem.contacts);
        // What the velocity step sees as touching: a penetration, which `push_out` moves out
        // after the velocities, and a loaded contact's narrow gap (`PhysicsSettings::resting_gap`).
        for contact in &mut island.problem.contacts {
            let touching = contact.gap < 0.0
                || (contact.gap < resting_gap && contact.warm_impulse.is_some_and(|w| w.dot(contact.normal) > 0.0));
            if touching {
                contact.gap = 0.0;
            }
        }
    }

    let islands = &mut world.islands[..count];
    // The last step's solve times (of whatever islands had these slots) estimate this step's work.
    let last_work: Duration = islands.iter().map(|island| island.report.time).sum();
    let run = |island: &mut IslandSolver| {
        island.report = island.solver.solve(&island.problem, &mut island.solution);
        island
            .push_out
            .run(&island.problem, &island.solution, &island.gaps, &island.solver.settings);
    };
    if settings.parallel_islands && islands.len() > 1 && last_work >= settings.parallel_min_work {
        ComputeTaskPool::get_or_init(TaskPool::default).scope(|scope| {
            for island in islands.iter_mut() {
                scope.spawn(async move { run(island) });
            }
        });
    } else {
        islands.iter_mut().for_each(run);
    }

    if let Some(mut capture) = capture {
        let step = capture.steps;
        capture.steps += 1;
        for island in &world.islands[..count] {
            capture.islands.push(CapturedIsland {
                step,
                problem: island.problem.clone(),
                report: island.report,
            });
        }
    }
    for island in &world.islands[..count] {
        // A step that found no solution is not a good guess for the next one.
        if island.report.failure != Some(crate::solver::SolveFailure::NoSolution) {
            world.warm_start.record(&island.problem.contacts, &island.solution);
        }
    }
    world.warm_start.finish_step();
    world.joint_warm.clear();
    world.rolling_warm.clear();
    for island in &world.islands[..count] {
        super::rolling::record(&island.problem, &island.solution, &mut world.rolling_warm);
        for (k, &(j, _)) in island.joint_blocks.iter().enumerate() {
            let (constraint, impulse) = (&island.problem.constraints[k], island.solution.constraint_impulses[k]);
            super::joints::accumulate(&mut world.joints[j], constraint, impulse);
            world
                .joint_warm
                .insert(constraint.id, island.solution.warm_constraint_impulses[k]);
        }
    }
    std::mem::swap(&mut world.impacts, &mut world.impacts_next);
    world.times.solve = start.elapsed();
}
