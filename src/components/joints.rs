//! Joints: entities of their own that tie two bodies together, solved exactly in the same
//! augmented Lagrangian as the contacts (design note §6).
//!
//! Owns the user-facing joint components, their builders and [`JointState`], the readout the
//! pipeline writes after every step. The rows they become are built in `pipeline::joints`.

use bevy_ecs::prelude::*;
use bevy_math::Vec3;
use bevy_reflect::prelude::*;

/// What every joint shares: the two bodies, where it attaches to each, and whether they collide.
#[derive(Clone, Copy, Debug, PartialEq, Reflect)]
pub struct JointAnchors {
    /// First body (may be `Static`).
    pub body1: Entity,
    /// Second body (may be `Static`).
    pub body2: Entity,
    /// Attachment point in body 1's frame, m.
    pub local_anchor1: Vec3,
    /// Attachment point in body 2's frame, m.
    pub local_anchor2: Vec3,
    /// Whether the two bodies still collide with each other (off by default).
    pub collide: bool,
}

impl JointAnchors {
    fn new(body1: Entity, body2: Entity) -> Self {
        Self {
            body1,
            body2,
            local_anchor1: Vec3::ZERO,
            local_anchor2: Vec3::ZERO,
            collide: false,
        }
    }
}

/// A joint's travel limits: radians for a revolute joint, metres for a prismatic one.
#[derive(Clone, Copy, Debug, PartialEq, Reflect)]
pub struct JointLimits {
    /// Lower limit.
    pub min: f32,
    /// Upper limit.
    pub max: f32,
}

/// A joint motor: a spring-damper towards a target position and velocity with a force (or
/// torque) bound, treated implicitly, so stiff gains stay stable at any step size.
///
/// Drive force `f = stiffness · (target_position − position) + damping · (target_velocity −
/// velocity)`, evaluated at the end of the step and clamped to `±max_force`.
#[derive(Clone, Copy, Debug, PartialEq, Reflect)]
pub struct JointDrive {
    /// Target angle (rad) or displacement (m).
    pub target_position: f32,
    /// Target rate, rad/s or m/s.
    pub target_velocity: f32,
    /// N·m/rad or N/m.
    pub stiffness: f32,
    /// N·m·s/rad or N·s/m.
    pub damping: f32,
    /// Largest torque (N·m) or force (N) the drive applies; infinite by default.
    pub max_force: f32,
}

impl JointDrive {
    /// A drive holding `target` with the given stiffness and damping.
    pub fn position(target: f32, stiffness: f32, damping: f32) -> Self {
        Self {
            target_position: target,
            target_velocity: 0.0,
            stiffness,
            damping,
            max_force: f32::INFINITY,
        }
    }

    /// A drive tracking the rate `target` with the given damping (the motor's gain).
    pub fn velocity(target: f32, damping: f32) -> Self {
        Self {
            target_position: 0.0,
            target_velocity: target,
            stiffness: 0.0,
            damping,
            max_force: f32::INFINITY,
        }
    }

    /// Bounds the drive's force or torque.
    pub fn with_max_force(mut self, max_force: f32) -> Self {
        self.max_force = max_force;
        self
    }
}

/// The readout of a joint after each step.
#[derive(Component, Clone, Copy, Debug, Default, PartialEq, Reflect)]
#[reflect(Component, Default)]
pub struct JointState {
    /// Force the joint applied to body 1 over the step (body 2 gets the opposite), N; includes
    /// the limit's push.
    pub force: Vec3,
    /// Torque the joint applied to body 1 about its anchor (body 2 gets the opposite), N·m.
    pub torque: Vec3,
    /// Joint position: hinge angle of body 2 relative to body 1 (rad) or slide displacement (m);
    /// 0 for fixed and spherical joints.
    pub position: f32,
    /// Rate of `position`, rad/s or m/s.
    pub velocity: f32,
    /// How far apart the anchors are where the joint forbids it (across the axis for a slider),
    /// m: the joint's constraint violation.
    pub anchor_separation: f32,
}

macro_rules! joint_builders {
    () => {
        /// Sets the attachment point in body 1's frame, m.
        pub fn with_local_anchor1(mut self, anchor: Vec3) -> Self {
            self.anchors.local_anchor1 = anchor;
            self
        }

        /// Sets the attachment point in body 2's frame, m.
        pub fn with_local_anchor2(mut self, anchor: Vec3) -> Self {
            self.anchors.local_anchor2 = anchor;
            self
        }

        /// Lets the two bodies collide with each other (they do not by default).
        pub fn with_collisions(mut self, collide: bool) -> Self {
            self.anchors.collide = collide;
            self
        }
    };
}

macro_rules! axis_builders {
    () => {
        /// Sets the joint axis in body 1's frame (normalised; the default is +X).
        pub fn with_axis(mut self, axis: Vec3) -> Self {
            self.axis = axis;
            self
        }

        /// Limits the joint's travel to `[min, max]` (rad or m).
        pub fn with_limits(mut self, min: f32, max: f32) -> Self {
            self.limits = Some(JointLimits { min, max });
            self
        }

        /// Drives the joint (see [`JointDrive`]).
        pub fn with_drive(mut self, drive: JointDrive) -> Self {
            self.drive = Some(drive);
            self
        }
    };
}

/// Welds two bodies together: no relative motion at all.
///
/// ```
/// use bevy_canal::prelude::*;
/// # let mut world = bevy_ecs::world::World::new();
/// let a = world.spawn(RigidBody::Dynamic).id();
/// let b = world.spawn(RigidBody::Dynamic).id();
/// world.spawn(FixedJoint::new(a, b).with_local_anchor2(Vec3::new(0.0, 1.0, 0.0)));
/// ```
#[derive(Component, Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(Component)]
#[require(JointState)]
pub struct FixedJoint {
    /// Bodies and anchors.
    pub anchors: JointAnchors,
}

impl FixedJoint {
    /// A fixed joint between `body1` and `body2`, anchored at both centres.
    pub fn new(body1: Entity, body2: Entity) -> Self {
        Self {
            anchors: JointAnchors::new(body1, body2),
        }
    }
    joint_builders!();
}

/// A ball-and-socket joint: the anchors coincide, rotation is free.
#[derive(Component, Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(Component)]
#[require(JointState)]
pub struct SphericalJoint {
    /// Bodies and anchors.
    pub anchors: JointAnchors,
}

impl SphericalJoint {
    /// A spherical joint between `body1` and `body2`, anchored at both centres.
    pub fn new(body1: Entity, body2: Entity) -> Self {
        Self {
            anchors: JointAnchors::new(body1, body2),
        }
    }
    joint_builders!();
}

/// A hinge: the anchors coincide and body 2 turns relative to body 1 only about the axis.
///
/// The hinge angle is measured from the bodies' relative orientation when the joint first
/// enters a step.
///
/// ```
/// use bevy_canal::prelude::*;
/// # let mut world = bevy_ecs::world::World::new();
/// let ground = world.spawn(RigidBody::Static).id();
/// let door = world.spawn(RigidBody::Dynamic).id();
/// world.spawn(
///     RevoluteJoint::new(ground, door)
///         .with_axis(Vec3::Y)
///         .with_local_anchor2(Vec3::new(-0.5, 0.0, 0.0))
///         .with_limits(-1.5, 1.5),
/// );
/// ```
#[derive(Component, Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(Component)]
#[require(JointState)]
pub struct RevoluteJoint {
    /// Bodies and anchors.
    pub anchors: JointAnchors,
    /// Hinge axis in body 1's frame.
    pub axis: Vec3,
    /// Angle limits, rad.
    pub limits: Option<JointLimits>,
    /// Motor.
    pub drive: Option<JointDrive>,
}

impl RevoluteJoint {
    /// A hinge about body 1's +X axis between `body1` and `body2`, anchored at both centres.
    pub fn new(body1: Entity, body2: Entity) -> Self {
        Self {
            anchors: JointAnchors::new(body1, body2),
            axis: Vec3::X,
            limits: None,
            drive: None,
        }
    }
    joint_builders!();
    axis_builders!();
}

/// A slider: body 2 keeps its orientation relative to body 1 and moves only along the axis.
#[derive(Component, Clone, Copy, Debug, PartialEq, Reflect)]
#[reflect(Component)]
#[require(JointState)]
pub struct PrismaticJoint {
    /// Bodies and anchors.
    pub anchors: JointAnchors,
    /// Slide axis in body 1's frame.
    pub axis: Vec3,
    /// Displacement limits, m.
    pub limits: Option<JointLimits>,
    /// Motor.
    pub drive: Option<JointDrive>,
}

impl PrismaticJoint {
    /// A slider along body 1's +X axis between `body1` and `body2`, anchored at both centres.
    pub fn new(body1: Entity, body2: Entity) -> Self {
        Self {
            anchors: JointAnchors::new(body1, body2),
            axis: Vec3::X,
            limits: None,
            drive: None,
        }
    }
    joint_builders!();
    axis_builders!();
}
