//! Stage 6: write the step's result back to the ECS — `Transform`, velocities, the `f64`
//! [`PreciseState`] — and publish [`Contacts`] and [`SolverStats`].

use std::time::Instant;

use bevy_ecs::prelude::*;
use bevy_math::Vec3;
use bevy_transform::components::Transform;

use super::PhysicsWorld;
use super::joints::{self, JointKind};
use crate::components::{AngularVelocity, JointState, LinearVelocity, PreciseState, RigidBody};
use crate::resources::{ContactPair, ContactPoint, Contacts, SolverStats};

/// What a step writes on each moving body.
type MovedBody = (
    &'static mut Transform,
    &'static mut LinearVelocity,
    &'static mut AngularVelocity,
    &'static mut PreciseState,
);

pub(crate) fn write_back(
    mut world: ResMut<PhysicsWorld>,
    mut stats: ResMut<SolverStats>,
    mut contacts: ResMut<Contacts>,
    mut bodies: Query<MovedBody, With<RigidBody>>,
    mut joint_states: Query<&mut JointState>,
) {
    let start = Instant::now();
    let world = &mut *world;
    for body in world.bodies.iter().filter(|b| b.kind != RigidBody::Static) {
        let Ok((mut transform, mut linear, mut angular, mut state)) = bodies.get_mut(body.entity) else {
            continue;
        };
        transform.translation = body.translation.as_vec3();
        transform.rotation = body.rotation.as_quat();
        linear.0 = body.linear_velocity.as_vec3();
        angular.0 = body.angular_velocity.as_vec3();
        *state = PreciseState {
            translation: body.translation,
            rotation: body.rotation,
            linear_velocity: body.linear_velocity,
            angular_velocity: body.angular_velocity,
            written: Some((transform.translation, transform.rotation, linear.0, angular.0)),
        };
    }

    for joint in &world.joints {
        let Ok(mut state) = joint_states.get_mut(joint.entity) else {
            continue;
        };
        let (b1, b2) = (&world.bodies[joint.body1], &world.bodies[joint.body2]);
        let geometry = joints::geometry(joint, b1, b2);
        let rate = match joint.kind {
            JointKind::Revolute { .. } => geometry.axis.dot(b2.angular_velocity - b1.angular_velocity),
            JointKind::Prismatic { .. } => geometry
                .axis
                .dot(b2.point_velocity(geometry.anchor2) - b1.point_velocity(geometry.anchor1)),
            _ => 0.0,
        };
        *state = JointState {
            force: (joint.linear_impulse / world.dt).as_vec3(),
            torque: (joint.angular_impulse / world.dt).as_vec3(),
            position: geometry.position as f32,
            velocity: rate as f32,
            anchor_separation: geometry.violation() as f32,
        };
    }

    // The pairs and their point lists are reused from the last step: a resting pyramid has
    // hundreds of pairs, and dropping and reallocating each one's list every step is avoidable.
    let mut impulses = std::mem::take(&mut world.contact_impulses);
    impulses.clear();
    impulses.resize(world.contacts.len(), Default::default());
    for island in &world.islands[..world.island_count] {
        for (k, &c) in island.contacts.iter().enumerate() {
            impulses[c] = island.solution.impulses[k];
        }
    }
    let mut torques = std::mem::take(&mut world.contact_torques);
    super::rolling::applied_torques(&world.islands[..world.island_count], world.contacts.len(), &mut torques);
    let mut used = 0;
    for (c, contact) in world.contacts.iter().enumerate() {
        let (e1, e2) = (world.bodies[contact.body1].entity, world.bodies[contact.body2].entity);
        let same_pair = used > 0 && {
            let last = &contacts.pairs[used - 1];
            (last.entity1, last.entity2) == (e1, e2)
        };
        if !same_pair {
            if used == contacts.pairs.len() {
                contacts.pairs.push(ContactPair {
                    entity1: e1,
                    entity2: e2,
                    points: Vec::new(),
                    resisting_torque_impulse: Vec3::ZERO,
                });
            }
            let pair = &mut contacts.pairs[used];
            pair.entity1 = e1;
            pair.entity2 = e2;
            pair.points.clear();
            pair.resisting_torque_impulse = Vec3::ZERO;
            used += 1;
        }
        let impulse = impulses[c];
        if let Some(torque) = torques.get(c) {
            contacts.pairs[used - 1].resisting_torque_impulse += torque.as_vec3();
        }
        contacts.pairs[used - 1].points.push(ContactPoint {
            point: contact.point.as_vec3(),
            normal: contact.normal.as_vec3(),
            penetration: -contact.gap as f32,
            normal_impulse: impulse.normal as f32,
            impulse: impulse.world.as_vec3(),
        });
    }
    contacts.pairs.truncate(used);
    world.contact_impulses = impulses;
    world.contact_torques = torques;

    let mut summary = SolverStats {
        bodies: world.bodies.iter().filter(|b| b.kind.is_dynamic()).count(),
        contacts: world.contacts.len(),
        islands: world.island_count,
        converged: true,
        ..Default::default()
    };
    for island in &world.islands[..world.island_count] {
        let report = &island.report;
        summary.outer_iterations += report.outer_iterations;
        summary.newton_iterations += report.newton_iterations;
        summary.cg_directions += report.cg_directions;
        summary.shift_newton_steps += report.shift_newton_steps;
        summary.shift_newton_taken += report.shift_newton_taken;
        summary.polish_iterations += report.polish_iterations;
        summary.distribution_solves += report.distribution_solves;
        summary.smoothing_sweeps += report.smoothing_sweeps;
        summary.gauss_seidel_sweeps += report.gauss_seidel_sweeps;
        summary.held_steps += report.held_steps;
        summary.retries += report.retries;
        summary.rolling_rounds = summary.rolling_rounds.max(report.rolling_rounds);
        summary.ncp_residual = summary.ncp_residual.max(report.ncp_residual);
        summary.feasibility_residual = summary.feasibility_residual.max(report.feasibility_residual);
        summary.converged &= report.converged;
        if let Some(push_out) = island.push_out.report() {
            summary.push_out_islands += 1;
            summary.push_out_newton_iterations += push_out.newton_iterations;
        }
    }
    if !summary.converged && stats.converged {
        tracing::warn!(
            "bevy_canal: the solver did not converge this step (NCP residual {:.1e} m/s, feasibility {:.1e} m/s); \
             the step completed with its best iterate",
            summary.ncp_residual,
            summary.feasibility_residual
        );
    }
    world.times.write_back = start.elapsed();
    summary.times = world.times;
    *stats = summary;
}
