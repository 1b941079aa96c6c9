//! The simulation's own state between and within steps: `f64` bodies, the broad- and
//! narrow-phase caches, the contacts of this step and the island solvers.

use bevy_platform::collections::{HashMap, HashSet};

use bevy_ecs::prelude::*;
use bevy_math::{DMat3, DQuat, DVec3};
use parry3d::math::Pose;

use super::broad_phase::BroadPhase;
use super::narrow_phase::{GeneratedContact, NarrowPhase};
use super::solve::IslandSolver;
use crate::components::{Collider, Friction, Restitution, RigidBody, RollingFriction};
use crate::resources::StageTimes;
use crate::solver::WarmStartCache;

/// One body as the step sees it.
#[derive(Clone, Debug)]
pub(crate) struct SimBody {
    pub entity: Entity,
    pub kind: RigidBody,
    /// Pose of the entity's origin.
    pub translation: DVec3,
    pub rotation: DQuat,
    /// Velocities of the centre of mass.
    pub linear_velocity: DVec3,
    pub angular_velocity: DVec3,
    /// Centre of mass in the body frame.
    pub local_center_of_mass: DVec3,
    pub mass: f64,
    /// Inertia about the centre of mass in the body frame.
    pub local_inertia: DMat3,
    /// The most `|ω × r|²` over the shape's points `r` per unit of `ωᵀ I ω`, 1/kg
    /// (`shape_mass::turning_sweep`); zero for a ball and for bodies the solver does not move.
    pub turning_sweep: f64,
    /// External impulse over the step, gravity included.
    pub linear_impulse: DVec3,
    pub angular_impulse: DVec3,
    pub collider: Option<Collider>,
    /// The `Collider` component was added or changed since the last step: contact points
    /// cached from the old shape no longer lie on this one.
    pub collider_changed: bool,
    pub friction: Friction,
    pub restitution: Restitution,
    pub rolling_friction: RollingFriction,
}

impl SimBody {
    pub fn center_of_mass(&self) -> DVec3 {
        self.translation + self.rotation * self.local_center_of_mass
    }

    pub fn world_inertia(&self) -> DMat3 {
        let r = DMat3::from_quat(self.rotation);
        let i = r * self.local_inertia * r.transpose();
        (i + i.transpose()) * 0.5
    }

    /// The collider's pose for parry.
    pub fn pose(&self) -> Pose {
        Pose::from_parts(self.translation.as_vec3(), self.rotation.as_quat())
    }

    /// Velocity of the body's material point at `point`.
    pub fn point_velocity(&self, point: DVec3) -> DVec3 {
        self.linear_velocity + self.angular_velocity.cross(point - self.center_of_mass())
    }
}

/// Messages already logged, so that a bad entity is named once, not every step.
#[derive(Default)]
pub(crate) struct Reported {
    messages: HashMap<Entity, String>,
    seen: HashSet<Entity>,
}

impl Reported {
    /// Logs a warning (bad state: NaN poses or velocities) for `entity` unless it was the last
    /// message logged for it.
    pub fn warn(&mut self, entity: Entity, message: String) {
        if self.is_new(entity, &message) {
            tracing::warn!("bevy_canal: entity {entity} {message}; it is left out of the physics step");
        }
    }

    /// Logs an error (bad setup: sizes, densities, masses) for `entity` unless it was the last
    /// message logged for it.
    pub fn error(&mut self, entity: Entity, message: String) {
        if self.is_new(entity, &message) {
            tracing::error!("bevy_canal: entity {entity} {message}; it is ignored by physics");
        }
    }

    /// Logs a warning for `entity` whose `message` says what physics uses instead of a bad
    /// setting, unless it was the last message logged for it. The entity stays in the step.
    pub fn substitute(&mut self, entity: Entity, message: String) {
        if self.is_new(entity, &message) {
            tracing::warn!("bevy_canal: entity {entity} {message}");
        }
    }

    fn is_new(&mut self, entity: Entity, message: &str) -> bool {
        self.seen.insert(entity);
        let new = self.messages.get(&entity).map(String::as_str) != Some(message);
        if new {
            self.messages.insert(entity, message.to_string());
        }
        new
    }

    /// Starts a step: entities not reported during it are forgotten by [`Self::end_step`].
    pub fn begin_step(&mut self) {
        self.seen.clear();
    }

    pub fn end_step(&mut self) {
        let seen = &self.seen;
        self.messages.retain(|entity, _| seen.contains(entity));
    }
}

#[derive(Resource, Default)]
pub(crate) struct PhysicsWorld {
    pub dt: f64,
    pub bodies: Vec<SimBody>,
    pub broad_phase: BroadPhase,
    /// Candidate pairs of body indices, `a < b`, sorted.
    pub pairs: Vec<(usize, usize)>,
    pub narrow_phase: NarrowPhase,
    pub contacts: Vec<GeneratedContact>,
    pub islands: Vec<IslandSolver>,
    pub island_count: usize,
    pub warm_start: WarmStartCache,
    /// Impact speeds of contacts that closed speculatively last step, by contact id.
    pub impacts: HashMap<u64, f64>,
    pub impacts_next: HashMap<u64, f64>,
    pub reported: Reported,
    pub times: StageTimes,
    /// This step's joints.
    pub joints: Vec<super::joints::SimJoint>,
    /// Each joint's rest orientation, kept from the step it first appeared in.
    pub joint_rest: HashMap<Entity, bevy_math::DQuat>,
    /// Body pairs whose joint turns their collisions off.
    pub joint_filter: HashSet<(Entity, Entity)>,
    /// Row impulses of last step's joint blocks, by block id, for warm starting.
    pub joint_warm: HashMap<u64, DVec3>,
    /// World torque impulses of last step's rolling-friction blocks, by manifold.
    pub rolling_warm: HashMap<u64, DVec3>,
    pub projection: super::joints::JointProjection,
    /// Collider checks and mass properties, kept until the components they come from change.
    pub shape_cache: super::shape_cache::ShapeCache,
    /// Write-back's impulse per contact of this step, a buffer kept across steps.
    pub contact_impulses: Vec<crate::solver::ContactImpulse>,
    /// Per contact of this step, the torque impulse of rolling friction's block whose first
    /// point it is (zero elsewhere), for `Contacts`; empty when no island has one.
    pub contact_torques: Vec<DVec3>,
}
