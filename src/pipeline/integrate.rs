//! Stage 5: advance poses by semi-implicit Euler — positions with the end-of-step velocities,
//! orientations by the exponential map, renormalised.
//!
//! Dynamic bodies take their velocities from their island's solution, kinematic bodies keep
//! their own, static bodies never move. Rotation is about the centre of mass.

use std::time::Instant;

use bevy_ecs::prelude::*;
use bevy_math::{DQuat, DVec3};

use super::PhysicsWorld;
use super::world::SimBody;

/// Moves the centre of mass by `displacement` and turns the body about it by `rotation` (a
/// rotation vector), by the exponential map.
pub(crate) fn advance_by(body: &mut SimBody, displacement: DVec3, rotation: DVec3) {
    let center = body.center_of_mass() + displacement;
    let rotation = (DQuat::from_scaled_axis(rotation) * body.rotation).normalize();
    body.rotation = rotation;
    body.translation = center - rotation * body.local_center_of_mass;
}

pub(crate) fn integrate(mut world: ResMut<PhysicsWorld>) {
    let start = Instant::now();
    let world = &mut *world;
    let dt = world.dt;
    for island in &world.islands[..world.island_count] {
        for (k, &b) in island.bodies.iter().enumerate() {
            let v = island.solution.velocities[k];
            world.bodies[b].linear_velocity = v.linear;
            world.bodies[b].angular_velocity = v.angular;
            if let Some((translation, rotation)) = island.push_out.displacement(k, dt) {
                advance_by(&mut world.bodies[b], translation, rotation);
            }
        }
    }
    for body in &mut world.bodies {
        if body.kind != crate::components::RigidBody::Static {
            let (linear, angular) = (body.linear_velocity, body.angular_velocity);
            advance_by(body, linear * dt, angular * dt);
        }
    }
    super::joints::project_positions(world);
    world.times.integrate = start.elapsed();
}
