//! What users push bodies with.

use bevy_ecs::prelude::*;
use bevy_math::Vec3;
use bevy_reflect::prelude::*;

/// A force and torque (world frame, about the centre of mass) applied every step while present,
/// N and N·m.
#[derive(Component, Reflect, Clone, Copy, Debug, Default, PartialEq)]
#[reflect(Component, Default, Debug, PartialEq)]
pub struct ExternalForce {
    /// N.
    pub force: Vec3,
    /// N·m.
    pub torque: Vec3,
}

/// An impulse and angular impulse (world frame) applied once, at the next step, then zeroed.
#[derive(Component, Reflect, Clone, Copy, Debug, Default, PartialEq)]
#[reflect(Component, Default, Debug, PartialEq)]
pub struct ExternalImpulse {
    /// N·s.
    pub impulse: Vec3,
    /// N·m·s.
    pub angular_impulse: Vec3,
}
