//! Joints in the step: from the joint components to [`SimJoint`]s (read in `prepare`), from their
//! bodies' current poses to solver rows, and the post-step projection that puts jointed bodies
//! back on their constraint manifold.
//!
//! Owns joint kinematics — anchors, axes, hinge angle and slide displacement, the position errors
//! that bias the rows — and nothing of islands or the ECS beyond reading the joint components.
//! A velocity-level joint drifts by about `|ω|² r dt²` per step; the projection removes that
//! drift with the same mass-weighted solver, so joints hold to round-off instead of millimetres.

use bevy_platform::collections::HashMap;

use bevy_ecs::prelude::*;
use bevy_math::{DQuat, DVec3};

use super::PhysicsWorld;
use super::world::SimBody;
use crate::components::{
    FixedJoint, JointAnchors, JointDrive, JointLimits, PrismaticJoint, RevoluteJoint, SphericalJoint,
};
use crate::solver::{Cone, ConstraintRows, ContactSide, Solution, Solver, SolverBody, SolverConstraint, StepProblem};

/// What a joint locks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum JointKind {
    Fixed,
    Spherical,
    /// Axis in body 1's frame, unit.
    Revolute {
        axis: DVec3,
        limits: Option<JointLimits>,
        drive: Option<JointDrive>,
    },
    Prismatic {
        axis: DVec3,
        limits: Option<JointLimits>,
        drive: Option<JointDrive>,
    },
}

/// A joint between two simulation bodies of this step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SimJoint {
    pub entity: Entity,
    pub body1: usize,
    pub body2: usize,
    pub local_anchor1: DVec3,
    pub local_anchor2: DVec3,
    pub kind: JointKind,
    /// Body 2's orientation relative to body 1 when the joint first entered a step: the zero of
    /// the hinge angle and the orientation a fixed or prismatic joint holds.
    pub rest: DQuat,
    /// Impulse and angular impulse the joint applied to body 1 this step, N·s and N·m·s.
    pub linear_impulse: DVec3,
    pub angular_impulse: DVec3,
}

/// A joint component's view as the pipeline needs it.
pub(crate) trait JointComponent: Component {
    fn anchors(&self) -> &JointAnchors;
    fn kind(&self) -> JointKind;
}

impl JointComponent for FixedJoint {
    fn anchors(&self) -> &JointAnchors {
        &self.anchors
    }
    fn kind(&self) -> JointKind {
        JointKind::Fixed
    }
}

impl JointComponent for SphericalJoint {
    fn anchors(&self) -> &JointAnchors {
        &self.anchors
    }
    fn kind(&self) -> JointKind {
        JointKind::Spherical
    }
}

impl JointComponent for RevoluteJoint {
    fn anchors(&self) -> &JointAnchors {
        &self.anchors
    }
    fn kind(&self) -> JointKind {
        JointKind::Revolute {
            axis: self.axis.as_dvec3(),
            limits: self.limits,
            drive: self.drive,
        }
    }
}

impl JointComponent for PrismaticJoint {
    fn anchors(&self) -> &JointAnchors {
        &self.anchors
    }
    fn kind(&self) -> JointKind {
        JointKind::Prismatic {
            axis: self.axis.as_dvec3(),
            limits: self.limits,
            drive: self.drive,
        }
    }
}

/// Validates one joint component and adds it to the step, or reports why it is ignored.
pub(crate) fn admit_joint(
    world: &mut PhysicsWorld,
    index_of: &HashMap<Entity, usize>,
    entity: Entity,
    joint: &impl JointComponent,
) {
    let anchors = joint.anchors();
    let kind = joint.kind();
    let (Some(&body1), Some(&body2)) = (index_of.get(&anchors.body1), index_of.get(&anchors.body2)) else {
        let missing = if index_of.contains_key(&anchors.body1) {
            anchors.body2
        } else {
            anchors.body1
        };
        world.reported.error(
            entity,
            format!("is a joint whose body {missing} is not a simulated rigid body (despawned or invalid)"),
        );
        return;
    };
    let axis_ok = match kind {
        JointKind::Revolute { axis, limits, drive } | JointKind::Prismatic { axis, limits, drive } => {
            axis.is_finite()
                && axis.length() > 1e-6
                && limits.is_none_or(|l| l.min.is_finite() && l.max.is_finite() && l.min <= l.max)
                && drive.is_none_or(|d| {
                    [d.target_position, d.target_velocity, d.stiffness, d.damping]
                        .iter()
                        .all(|x| x.is_finite())
                        && d.stiffness >= 0.0
                        && d.damping >= 0.0
                        && d.max_force >= 0.0
                })
        }
        _ => true,
    };
    let anchors_ok = anchors.local_anchor1.is_finite() && anchors.local_anchor2.is_finite();
    if body1 == body2 || !axis_ok || !anchors_ok {
        world.reported.error(
            entity,
            "is a joint with the same body on both sides, a non-finite anchor, a zero axis, limits with \
             min > max, or a drive with a non-finite or negative gain"
                .to_string(),
        );
        return;
    }
    let kind = match kind {
        JointKind::Revolute { axis, limits, drive } => JointKind::Revolute {
            axis: axis.normalize(),
            limits,
            drive,
        },
        JointKind::Prismatic { axis, limits, drive } => JointKind::Prismatic {
            axis: axis.normalize(),
            limits,
            drive,
        },
        other => other,
    };
    let (b1, b2) = (&world.bodies[body1], &world.bodies[body2]);
    let rest = *world
        .joint_rest
        .entry(entity)
        .or_insert_with(|| (b1.rotation.inverse() * b2.rotation).normalize());
    world.joints.push(SimJoint {
        entity,
        body1,
        body2,
        local_anchor1: anchors.local_anchor1.as_dvec3(),
        local_anchor2: anchors.local_anchor2.as_dvec3(),
        kind,
        rest,
        linear_impulse: DVec3::ZERO,
        angular_impulse: DVec3::ZERO,
    });
    if !anchors.collide {
        world.joint_filter.insert(ordered(b1.entity, b2.entity));
    }
}

/// An unordered entity pair as a set key.
pub(crate) fn ordered(a: Entity, b: Entity) -> (Entity, Entity) {
    if a <= b { (a, b) } else { (b, a) }
}

/// Two unit vectors perpendicular to `axis` and to each other.
fn perpendiculars(axis: DVec3) -> [DVec3; 3] {
    let (p, q) = axis.any_orthonormal_pair();
    [p, q, DVec3::ZERO]
}

/// The measured state of a joint at its bodies' current poses.
pub(crate) struct JointGeometry {
    pub anchor1: DVec3,
    pub anchor2: DVec3,
    /// World axis (body 1's), unit; X for joints without one.
    pub axis: DVec3,
    /// Hinge angle (rad) or slide displacement (m).
    pub position: f64,
    /// Rotation that would bring body 2 to its held orientation, as a rotation vector.
    pub orientation_error: DVec3,
    /// A slider: the anchors may part along the axis.
    pub slides: bool,
}

impl JointGeometry {
    /// How far the anchors are apart where the joint forbids it, m: all of their separation, or
    /// its part across the axis of a slider.
    pub fn violation(&self) -> f64 {
        let separation = self.anchor2 - self.anchor1;
        if self.slides {
            (separation - self.axis * separation.dot(self.axis)).length()
        } else {
            separation.length()
        }
    }
}

pub(crate) fn geometry(joint: &SimJoint, b1: &SimBody, b2: &SimBody) -> JointGeometry {
    let anchor1 = b1.translation + b1.rotation * joint.local_anchor1;
    let anchor2 = b2.translation + b2.rotation * joint.local_anchor2;
    // Body 2's rotation beyond its rest orientation, in body 1's frame.
    let relative = (b1.rotation.inverse() * b2.rotation * joint.rest.inverse()).normalize();
    let held = b1.rotation * joint.rest;
    let orientation_error = (held * b2.rotation.inverse()).normalize().to_scaled_axis();
    let (axis, position) = match joint.kind {
        JointKind::Revolute { axis, .. } => {
            let twist = DVec3::new(relative.x, relative.y, relative.z).dot(axis);
            let angle = 2.0 * twist.atan2(relative.w);
            // q and −q are the same rotation: keep the angle in (−π, π].
            let angle = if angle > std::f64::consts::PI {
                angle - std::f64::consts::TAU
            } else if angle <= -std::f64::consts::PI {
                angle + std::f64::consts::TAU
            } else {
                angle
            };
            (b1.rotation * axis, angle)
        }
        JointKind::Prismatic { axis, .. } => {
            let world_axis = b1.rotation * axis;
            (world_axis, (anchor2 - anchor1).dot(world_axis))
        }
        _ => (DVec3::X, 0.0),
    };
    JointGeometry {
        anchor1,
        anchor2,
        axis,
        position,
        orientation_error,
        slides: matches!(joint.kind, JointKind::Prismatic { .. }),
    }
}

/// The joint's blocks at the bodies' current poses, each biased to remove its position error in
/// one step of `dt`; `sides` names the two solver sides given the joint's geometry, and
/// `push(block_index, constraint)` receives the blocks.
pub(crate) fn blocks(
    joint: &SimJoint,
    bodies: &[SimBody],
    dt: f64,
    sides: impl FnOnce(&JointGeometry) -> [ContactSide; 2],
    mut push: impl FnMut(usize, SolverConstraint),
) {
    let (b1, b2) = (&bodies[joint.body1], &bodies[joint.body2]);
    let g = geometry(joint, b1, b2);
    let id = |block: usize| (joint.entity.to_bits() << 2) | block as u64;
    let linear = |directions: [DVec3; 3], count: usize| ConstraintRows::Linear {
        anchor1: g.anchor1,
        anchor2: g.anchor2,
        directions,
        count,
    };
    let separation = g.anchor1 - g.anchor2;
    let [s1, s2] = sides(&g);
    let new = |block, rows| SolverConstraint::new(id(block), s1, s2, rows);
    let hold_orientation = |axes: [DVec3; 3], count: usize| {
        let mut bias = DVec3::ZERO;
        for k in 0..count {
            bias[k] = g.orientation_error.dot(axes[k]) / dt;
        }
        new(1, ConstraintRows::Angular { axes, count }).with_bias(bias)
    };
    match joint.kind {
        JointKind::Spherical | JointKind::Fixed | JointKind::Revolute { .. } => {
            push(
                0,
                new(0, linear([DVec3::X, DVec3::Y, DVec3::Z], 3)).with_bias(separation / dt),
            );
        }
        JointKind::Prismatic { .. } => {
            let axes = perpendiculars(g.axis);
            let bias = DVec3::new(separation.dot(axes[0]), separation.dot(axes[1]), 0.0) / dt;
            push(0, new(0, linear(axes, 2)).with_bias(bias));
        }
    }
    match joint.kind {
        JointKind::Spherical => {}
        JointKind::Fixed | JointKind::Prismatic { .. } => push(1, hold_orientation([DVec3::X, DVec3::Y, DVec3::Z], 3)),
        JointKind::Revolute { .. } => push(1, hold_orientation(perpendiculars(g.axis), 2)),
    }
    let (limits, drive) = match joint.kind {
        JointKind::Revolute { limits, drive, .. } | JointKind::Prismatic { limits, drive, .. } => (limits, drive),
        _ => (None, None),
    };
    let angular = matches!(joint.kind, JointKind::Revolute { .. });
    // A row along ±axis: angular for a hinge, between the anchors for a slider.
    let axial = |direction: DVec3| {
        let directions = [direction, DVec3::ZERO, DVec3::ZERO];
        if angular {
            ConstraintRows::Angular {
                axes: directions,
                count: 1,
            }
        } else {
            linear(directions, 1)
        }
    };
    if let Some(JointLimits { min, max }) = limits {
        // Lower: position − min + dt·(rate) ≥ 0, with rate = axis·(v₂ − v₁): the row's direction
        // is −axis (rows read body 1 minus body 2). Upper: the mirror image.
        for (block, direction, room) in [
            (2, -g.axis, g.position - f64::from(min)),
            (3, g.axis, f64::from(max) - g.position),
        ] {
            let limit = new(block, axial(direction)).with_cone(Cone::Lower);
            push(block, limit.with_bias(DVec3::X * room / dt));
        }
    }
    if let Some(drive) = drive {
        // The row −axis reads the joint rate; its impulse acts on body 2 along +axis. The
        // implicit PD law h·f = h k_p (θ* − θ − h θ̇') + h k_d (θ̇* − θ̇') is λ = −γ (θ̇' − θ̇_ref)
        // with γ = h² k_p + h k_d (design note §6).
        let (kp, kd) = (f64::from(drive.stiffness), f64::from(drive.damping));
        let gain = dt * dt * kp + dt * kd;
        if gain > 0.0 {
            let mut error = f64::from(drive.target_position) - g.position;
            if angular {
                error = (error + std::f64::consts::PI).rem_euclid(std::f64::consts::TAU) - std::f64::consts::PI;
            }
            let reference = (dt * kp * error + dt * kd * f64::from(drive.target_velocity)) / gain;
            let cone = Cone::Drive {
                gain,
                max: dt * f64::from(drive.max_force),
            };
            push(
                4,
                new(4, axial(-g.axis)).with_cone(cone).with_bias(-DVec3::X * reference),
            );
        }
    }
}

/// Adds a solved block's row impulses to its joint's world impulse and angular impulse.
pub(crate) fn accumulate(joint: &mut SimJoint, constraint: &SolverConstraint, rows: DVec3) {
    match constraint.rows {
        ConstraintRows::Linear { directions, count, .. } => {
            joint.linear_impulse += (0..count).map(|k| directions[k] * rows[k]).sum::<DVec3>();
        }
        ConstraintRows::Angular { axes, count } => {
            joint.angular_impulse += (0..count).map(|k| axes[k] * rows[k]).sum::<DVec3>();
        }
    }
}

/// Joint position error the projection stops at, m (rad on angular rows).
const POSITION_TOLERANCE: f64 = 1e-10;

/// The post-step projection's buffers, kept between steps.
#[derive(Default)]
pub(crate) struct JointProjection {
    problem: StepProblem,
    solver: Solver,
    solution: Solution,
    /// Step body index of each projected body.
    members: Vec<usize>,
    /// Projection index of each step body, `usize::MAX` if not projected.
    local: Vec<usize>,
}

/// Post-step projection: moves jointed dynamic bodies, mass-weighted and without touching their
/// velocities, until every joint's position error is below [`POSITION_TOLERANCE`]. Each pass is
/// one Gauss–Newton step on the constraint manifold; light links turned by a heavy load need a
/// few, a resting joint none.
pub(crate) fn project_positions(world: &mut PhysicsWorld) {
    const PASSES: usize = 8;
    if world.joints.is_empty() {
        return;
    }
    let dt = world.dt;
    let p = &mut world.projection;
    p.solver.settings.warm_start = false;
    p.members.clear();
    p.local.clear();
    p.local.resize(world.bodies.len(), usize::MAX);
    for joint in &world.joints {
        for b in [joint.body1, joint.body2] {
            if world.bodies[b].kind.is_dynamic() && p.local[b] == usize::MAX {
                p.local[b] = p.members.len();
                p.members.push(b);
            }
        }
    }
    for _ in 0..PASSES {
        // At rest and unloaded: the solve's velocities times dt are the position correction.
        p.problem.bodies.clear();
        p.problem.bodies.extend(p.members.iter().map(|&b| {
            let body = &world.bodies[b];
            SolverBody::new(body.mass, body.world_inertia(), body.center_of_mass())
        }));
        p.problem.constraints.clear();
        p.problem.dt = dt;
        for joint in &world.joints {
            let local = &p.local;
            let sides = |_: &JointGeometry| {
                [joint.body1, joint.body2].map(|b| {
                    if local[b] == usize::MAX {
                        ContactSide::STATIC
                    } else {
                        ContactSide::Body(local[b])
                    }
                })
            };
            // Drives are forces, not constraints: the projection restores only what joints lock.
            let constraints = &mut p.problem.constraints;
            blocks(joint, &world.bodies, dt, sides, |_, c| {
                if !matches!(c.cone, Cone::Drive { .. }) {
                    constraints.push(c);
                }
            });
        }
        let error = p
            .problem
            .constraints
            .iter()
            .map(|c| match c.cone {
                Cone::Lower => (-c.bias.x).max(0.0),
                _ => c.bias.abs().max_element(),
            })
            .fold(0.0, f64::max)
            * dt;
        if error <= POSITION_TOLERANCE {
            break;
        }
        p.solver.solve(&p.problem, &mut p.solution);
        for (k, &b) in p.members.iter().enumerate() {
            let v = p.solution.velocities[k];
            super::integrate::advance_by(&mut world.bodies[b], v.linear * dt, v.angular * dt);
        }
    }
}
