//! Rigid bodies and their velocities.

use bevy_ecs::prelude::*;
use bevy_math::{DQuat, DVec3, Quat, Vec3};
use bevy_reflect::prelude::*;
use bevy_transform::components::Transform;

/// How a body moves. The body's pose is its entity's [`Transform`].
///
/// ```
/// use bevy_canal::prelude::*;
/// use bevy_ecs::prelude::*;
///
/// let mut world = World::new();
/// world.spawn((RigidBody::Dynamic, Collider::sphere(0.5), Transform::from_xyz(0.0, 2.0, 0.0)));
/// ```
#[derive(Component, Reflect, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[reflect(Component, Default, Debug, PartialEq)]
#[require(Transform, LinearVelocity, AngularVelocity, PreciseState)]
pub enum RigidBody {
    /// Moved by gravity, forces and contacts.
    #[default]
    Dynamic,
    /// Never moves; infinite mass.
    Static,
    /// Moves with its [`LinearVelocity`] and [`AngularVelocity`], unaffected by anything; pushes
    /// dynamic bodies (with friction) like an infinitely heavy body. Joints and rolling friction
    /// follow its turning as well as its motion: a body welded to a spinning kinematic hub spins
    /// with it.
    Kinematic,
}

impl RigidBody {
    /// Whether the solver moves this body.
    pub fn is_dynamic(self) -> bool {
        self == Self::Dynamic
    }
}

/// Linear velocity of the body's centre of mass, world frame, m/s.
#[derive(Component, Reflect, Clone, Copy, Debug, Default, PartialEq)]
#[reflect(Component, Default, Debug, PartialEq)]
pub struct LinearVelocity(pub Vec3);

/// Angular velocity, world frame, rad/s.
#[derive(Component, Reflect, Clone, Copy, Debug, Default, PartialEq)]
#[reflect(Component, Default, Debug, PartialEq)]
pub struct AngularVelocity(pub Vec3);

/// The body's state in double precision, as the solver sees it.
///
/// [`Transform`] and the velocity components are `f32`; the simulation keeps this `f64` copy
/// between steps so that rounding does not accumulate (a box sticking on a slope must not creep
/// by an `f32` ulp a step). A user write to `Transform`, [`LinearVelocity`] or
/// [`AngularVelocity`] takes precedence (a teleport): the copy is re-read from them.
#[derive(Component, Reflect, Clone, Copy, Debug, Default, PartialEq)]
#[reflect(Component, Default, Debug, PartialEq)]
pub struct PreciseState {
    /// Position of the entity's origin, m.
    pub translation: DVec3,
    /// Orientation.
    pub rotation: DQuat,
    /// Linear velocity of the centre of mass, m/s.
    pub linear_velocity: DVec3,
    /// Angular velocity, rad/s.
    pub angular_velocity: DVec3,
    /// What the last step wrote into the `f32` components; `None` before the first step.
    #[reflect(ignore)]
    pub(crate) written: Option<(Vec3, Quat, Vec3, Vec3)>,
}
