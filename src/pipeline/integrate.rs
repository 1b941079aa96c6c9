//! Stage 5: advance poses by semi-implicit Euler — positions with the end-of-step velocities,
//! orientations by the exponential map, renormalised.
//!
//! Dynamic bodies take their velocities from their island's solution, kinematic bodies keep
//! their own, static bodies never move. Rotation is about the centre of mass.

use std::time::Instant;

use bevy_ecs::prelude::*;
use bevy_math::DQuat;

use super::PhysicsWorld;
use super::world::SimBody;

fn advance(body: &mut SimBody, dt: f64) {
    let center = body.center_of_mass() + body.linear_velocity * dt;
    let rotation = (DQuat::from_scaled_axis(body.angular_velocity * dt) * body.rotation).normalize();
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
        }
    }
    for body in &mut world.bodies {
        if body.kind != crate::components::RigidBody::Static {
            advance(body, dt);
        }
    }
    world.times.integrate = start.elapsed();
}
