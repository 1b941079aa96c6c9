//! Stage 1: read bodies and colliders from the ECS into [`PhysicsWorld::bodies`], validating them.
//!
//! Owns the rules for what enters a step: mass properties from shape and density (or the
//! overrides; kept in `shape_cache` until those components change), teleports (a user write to
//! `Transform` or a velocity wins over the `f64` copy), external loads over the step, and leaving
//! out — with one warning naming the entity — anything non-finite or non-physical. Writes nothing
//! back to the ECS but zeroed one-shot impulses.

use std::time::Instant;

use bevy_ecs::prelude::*;
use bevy_ecs::query::QueryData;
use bevy_math::{DMat3, DQuat, DVec3};
use bevy_time::{Fixed, Time};
use bevy_transform::components::Transform;

use bevy_platform::collections::{HashMap, HashSet};

use super::PhysicsWorld;
use super::joints::admit_joint;
use super::shape_cache::{ShapeStamp, changed};
use super::world::SimBody;
use crate::components::*;
use crate::resources::Gravity;

#[derive(QueryData)]
#[query_data(mutable)]
pub(crate) struct BodyData {
    entity: Entity,
    kind: &'static RigidBody,
    transform: &'static Transform,
    linear: &'static LinearVelocity,
    angular: &'static AngularVelocity,
    state: &'static mut PreciseState,
    // `Ref`s: their change ticks decide when `ShapeCache` recomputes.
    collider: Option<Ref<'static, Collider>>,
    density: Option<Ref<'static, ColliderDensity>>,
    friction: Option<&'static Friction>,
    restitution: Option<&'static Restitution>,
    rolling_friction: Option<&'static RollingFriction>,
    mass: Option<Ref<'static, Mass>>,
    inertia: Option<Ref<'static, PrincipalInertia>>,
    center_of_mass: Option<Ref<'static, CenterOfMass>>,
    force: Option<&'static ExternalForce>,
    impulse: Option<&'static mut ExternalImpulse>,
}

/// A collider without a rigid body: static geometry.
type StaticColliderData = (
    Entity,
    Ref<'static, Collider>,
    &'static Transform,
    Option<&'static Friction>,
    Option<&'static Restitution>,
    Option<&'static RollingFriction>,
);

/// The joint components, one query per joint type.
type JointQueries<'w, 's> = (
    Query<'w, 's, (Entity, &'static FixedJoint)>,
    Query<'w, 's, (Entity, &'static SphericalJoint)>,
    Query<'w, 's, (Entity, &'static RevoluteJoint)>,
    Query<'w, 's, (Entity, &'static PrismaticJoint)>,
);

/// `entity`'s rolling friction, or none where a coefficient is negative or not finite: an
/// infinite bound times a zero load would be a NaN in the solve.
fn admitted_rolling_friction(
    reported: &mut super::world::Reported,
    entity: Entity,
    rolling_friction: Option<&RollingFriction>,
) -> RollingFriction {
    let Some(&given) = rolling_friction else {
        return RollingFriction::default();
    };
    let admissible = |c: f32| c.is_finite() && c >= 0.0;
    if admissible(given.rolling) && admissible(given.torsional) {
        return given;
    }
    reported.substitute(
        entity,
        format!("has a rolling friction that is negative or not finite ({given:?}); physics uses none"),
    );
    RollingFriction::default()
}

/// This step's joints, in entity order, between the bodies admitted above.
fn admit_joints(world: &mut PhysicsWorld, (fixed, spherical, revolute, prismatic): &JointQueries) {
    let index_of: HashMap<Entity, usize> = world.bodies.iter().enumerate().map(|(i, b)| (b.entity, i)).collect();
    world.joints.clear();
    world.joint_filter.clear();
    let mut entities: Vec<Entity> = fixed
        .iter()
        .map(|(e, _)| e)
        .chain(spherical.iter().map(|(e, _)| e))
        .chain(revolute.iter().map(|(e, _)| e))
        .chain(prismatic.iter().map(|(e, _)| e))
        .collect();
    entities.sort_unstable();
    for &entity in &entities {
        if let Ok((_, j)) = fixed.get(entity) {
            admit_joint(world, &index_of, entity, j);
        } else if let Ok((_, j)) = spherical.get(entity) {
            admit_joint(world, &index_of, entity, j);
        } else if let Ok((_, j)) = revolute.get(entity) {
            admit_joint(world, &index_of, entity, j);
        } else if let Ok((_, j)) = prismatic.get(entity) {
            admit_joint(world, &index_of, entity, j);
        }
    }
    let present: HashSet<Entity> = entities.into_iter().collect();
    world.joint_rest.retain(|e, _| present.contains(e));
}

/// Mass, centre of mass and inertia about it (body frame) of a body.
pub(crate) fn mass_properties(
    collider: Option<&Collider>,
    density: f32,
    overrides: (Option<&Mass>, Option<&PrincipalInertia>, Option<&CenterOfMass>),
) -> Result<(f64, DVec3, DMat3), String> {
    let (mass_override, inertia_override, com_override) = overrides;
    if !(density.is_finite() && density > 0.0) {
        return Err(format!(
            "has collider density {density}, which must be finite and positive"
        ));
    }
    let (mut mass, mut com, mut inertia) = match collider {
        Some(collider) => {
            let own = super::shape_mass::of(collider.shape().as_ref(), f64::from(density));
            (own.mass, own.center, own.inertia)
        }
        None => (0.0, DVec3::ZERO, DMat3::ZERO),
    };
    if let Some(Mass(m)) = mass_override {
        if !(m.is_finite() && *m > 0.0) {
            return Err(format!("has mass {m} kg, which must be finite and positive"));
        }
        // Keep the shape's inertia distribution, scaled to the new mass.
        inertia *= if mass > 0.0 { *m as f64 / mass } else { 0.0 };
        mass = *m as f64;
    }
    if let Some(PrincipalInertia(i)) = inertia_override {
        if !(i.is_finite() && i.min_element() > 0.0) {
            return Err(format!(
                "has principal inertia {i} kg·m², which must be finite and positive"
            ));
        }
        inertia = DMat3::from_diagonal(i.as_dvec3());
    }
    if let Some(CenterOfMass(c)) = com_override {
        if !c.is_finite() {
            return Err(format!("has a non-finite centre of mass {c}"));
        }
        com = c.as_dvec3();
    }
    let positive_definite = inertia.is_finite() && {
        let m = nalgebra::Matrix3::from_column_slice(&inertia.to_cols_array());
        m.cholesky().is_some()
    };
    if !(mass.is_finite() && mass > 0.0 && positive_definite) {
        return Err(format!(
            "has mass {mass} kg and inertia {inertia}; a dynamic body needs a collider with volume or Mass and \
             PrincipalInertia"
        ));
    }
    Ok((mass, com, inertia))
}

/// The pose and velocities the step starts from: the `f64` copy, unless the user changed the
/// `f32` components since the last step wrote them.
fn start_state(body: &BodyDataItem) -> (DVec3, DQuat, DVec3, DVec3) {
    let state = &*body.state;
    let (t, r, v, w) = (
        body.transform.translation,
        body.transform.rotation,
        body.linear.0,
        body.angular.0,
    );
    match state.written {
        Some((wt, wr, wv, ww)) => (
            if (wt, wr) == (t, r) {
                state.translation
            } else {
                t.as_dvec3()
            },
            if (wt, wr) == (t, r) {
                state.rotation
            } else {
                r.as_dquat().normalize()
            },
            if wv == v { state.linear_velocity } else { v.as_dvec3() },
            if ww == w { state.angular_velocity } else { w.as_dvec3() },
        ),
        None => (t.as_dvec3(), r.as_dquat().normalize(), v.as_dvec3(), w.as_dvec3()),
    }
}

pub(crate) fn prepare(
    mut world: ResMut<PhysicsWorld>,
    time: Res<Time<Fixed>>,
    gravity: Res<Gravity>,
    mut bodies: Query<BodyData>,
    statics: Query<StaticColliderData, Without<RigidBody>>,
    joints: JointQueries,
) {
    let start = Instant::now();
    let world = &mut *world;
    let dt = time.timestep().as_secs_f64();
    world.dt = dt;
    world.bodies.clear();
    world.reported.begin_step();
    world.shape_cache.begin_step();
    let g = gravity.0.as_dvec3();
    for mut body in bodies.iter_mut() {
        let entity = body.entity;
        let (translation, rotation, linear_velocity, angular_velocity) = start_state(&body);
        if !(translation.is_finite() && rotation.is_finite() && rotation.length() > 0.5) {
            world
                .reported
                .warn(entity, format!("has a non-finite transform ({:?})", body.transform));
            continue;
        }
        if !(linear_velocity.is_finite() && angular_velocity.is_finite()) {
            world.reported.warn(
                entity,
                format!("has a non-finite velocity ({linear_velocity}, {angular_velocity})"),
            );
            continue;
        }
        let stamp = ShapeStamp::of([
            changed(&body.collider),
            changed(&body.density),
            changed(&body.mass),
            changed(&body.inertia),
            changed(&body.center_of_mass),
        ]);
        let collider = body.collider.as_deref();
        let invalid = world
            .shape_cache
            .invalid_reason(entity, stamp, || collider.and_then(Collider::invalid_reason));
        if let Some(reason) = invalid {
            world
                .reported
                .error(entity, format!("has an invalid collider: {reason}"));
            continue;
        }
        let kind = *body.kind;
        let (mass, local_center_of_mass, local_inertia, turning_sweep) = if kind.is_dynamic() {
            let density = body.density.as_deref().map_or(1.0, |d| d.0);
            let overrides = (
                body.mass.as_deref(),
                body.inertia.as_deref(),
                body.center_of_mass.as_deref(),
            );
            let props = world.shape_cache.mass_properties(entity, stamp, || {
                mass_properties(collider, density, overrides).map(|(mass, center, inertia)| {
                    let sweep = collider.map_or(0.0, |c| {
                        super::shape_mass::turning_sweep(c.shape().as_ref(), center, inertia)
                    });
                    (mass, center, inertia, sweep)
                })
            });
            match props {
                Ok(props) => props,
                Err(reason) => {
                    world.reported.error(entity, reason);
                    continue;
                }
            }
        } else {
            (0.0, DVec3::ZERO, DMat3::ZERO, 0.0)
        };
        let (mut linear_impulse, mut angular_impulse) = (DVec3::ZERO, DVec3::ZERO);
        if kind.is_dynamic() {
            linear_impulse += g * (mass * dt);
            angular_impulse += super::gyroscopic::impulse(rotation, local_inertia, angular_velocity, dt);
            if let Some(f) = body.force {
                linear_impulse += f.force.as_dvec3() * dt;
                angular_impulse += f.torque.as_dvec3() * dt;
            }
            if let Some(impulse) = body.impulse.as_deref_mut() {
                linear_impulse += impulse.impulse.as_dvec3();
                angular_impulse += impulse.angular_impulse.as_dvec3();
                *impulse = ExternalImpulse::default();
            }
            if !(linear_impulse.is_finite() && angular_impulse.is_finite()) {
                world
                    .reported
                    .warn(entity, "has a non-finite external force or impulse".to_string());
                continue;
            }
        }
        world.bodies.push(SimBody {
            entity,
            kind,
            translation,
            rotation,
            linear_velocity: if kind == RigidBody::Static {
                DVec3::ZERO
            } else {
                linear_velocity
            },
            angular_velocity: if kind == RigidBody::Static {
                DVec3::ZERO
            } else {
                angular_velocity
            },
            local_center_of_mass,
            mass,
            local_inertia,
            turning_sweep,
            linear_impulse,
            angular_impulse,
            collider: collider.cloned(),
            collider_changed: body.collider.as_ref().is_some_and(DetectChanges::is_changed),
            friction: body.friction.copied().unwrap_or_default(),
            restitution: body.restitution.copied().unwrap_or_default(),
            rolling_friction: admitted_rolling_friction(&mut world.reported, entity, body.rolling_friction),
        });
    }
    for (entity, collider, transform, friction, restitution, rolling_friction) in &statics {
        let stamp = ShapeStamp::of([Some(collider.is_changed())]);
        let invalid = world
            .shape_cache
            .invalid_reason(entity, stamp, || collider.invalid_reason());
        if let Some(reason) = invalid {
            world
                .reported
                .error(entity, format!("has an invalid collider: {reason}"));
            continue;
        }
        if !(transform.translation.is_finite() && transform.rotation.is_finite()) {
            world
                .reported
                .warn(entity, format!("has a non-finite transform ({transform:?})"));
            continue;
        }
        world.bodies.push(SimBody {
            entity,
            kind: RigidBody::Static,
            translation: transform.translation.as_dvec3(),
            rotation: transform.rotation.as_dquat().normalize(),
            linear_velocity: DVec3::ZERO,
            angular_velocity: DVec3::ZERO,
            local_center_of_mass: DVec3::ZERO,
            mass: 0.0,
            local_inertia: DMat3::ZERO,
            turning_sweep: 0.0,
            linear_impulse: DVec3::ZERO,
            angular_impulse: DVec3::ZERO,
            collider: Some(Collider::clone(&collider)),
            collider_changed: collider.is_changed(),
            friction: friction.copied().unwrap_or_default(),
            restitution: restitution.copied().unwrap_or_default(),
            rolling_friction: admitted_rolling_friction(&mut world.reported, entity, rolling_friction),
        });
    }
    // Query order follows storage, which moves when components are added; sort for determinism.
    world.bodies.sort_by_key(|b| b.entity);
    admit_joints(world, &joints);
    world.reported.end_step();
    world.shape_cache.end_step();
    world.times.prepare = start.elapsed();
}
