//! Overrides of the mass properties a collider's shape and density give.

use bevy_ecs::prelude::*;
use bevy_math::Vec3;
use bevy_reflect::prelude::*;

/// Mass of the body, kg, replacing the one computed from its collider and density. The inertia
/// computed from the shape is scaled to match unless [`PrincipalInertia`] is also given.
#[derive(Component, Reflect, Clone, Copy, Debug, PartialEq)]
#[reflect(Component, Debug, PartialEq)]
pub struct Mass(pub f32);

/// Principal moments of inertia about the centre of mass in the body's local axes, kg·m².
#[derive(Component, Reflect, Clone, Copy, Debug, PartialEq)]
#[reflect(Component, Debug, PartialEq)]
pub struct PrincipalInertia(pub Vec3);

/// Centre of mass in the body's local frame, m.
#[derive(Component, Reflect, Clone, Copy, Debug, PartialEq)]
#[reflect(Component, Debug, PartialEq)]
pub struct CenterOfMass(pub Vec3);
