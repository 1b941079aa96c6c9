//! Robots from URDF: links become rigid bodies with their collision geometry and inertials,
//! joints become joint entities, posed at zero joint positions.
//!
//! Owns only the translation from a parsed [`urdf_rs::Robot`] to spawned entities; parsing is
//! `urdf-rs`'s, mesh reading `stl_io`'s. Meshes become convex hulls (the solver's contacts need
//! convex pieces). What URDF has and this crate does not — planar and floating joints, mimic
//! joints — is reported in [`UrdfError`] or skipped with a warning, never silently dropped.
//!
//! ```
//! use bevy_canal::prelude::*;
//! use bevy_canal::urdf::{spawn_urdf, urdf_rs, UrdfOptions};
//!
//! let robot = urdf_rs::read_from_string(
//!     r#"<robot name="pendulum">
//!          <link name="base"/>
//!          <link name="arm">
//!            <inertial><mass value="2"/><inertia ixx="0.1" iyy="0.1" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>
//!            <collision><geometry><box size="0.1 0.1 1"/></geometry></collision>
//!          </link>
//!          <joint name="hinge" type="revolute">
//!            <parent link="base"/><child link="arm"/><axis xyz="1 0 0"/>
//!            <limit lower="-1" upper="1" effort="10" velocity="1"/>
//!          </joint>
//!        </robot>"#,
//! )
//! .unwrap();
//! let mut world = bevy_ecs::world::World::new();
//! let spawned = spawn_urdf(&mut world, &robot, &UrdfOptions::default()).unwrap();
//! assert_eq!(world.get::<Mass>(spawned.links["arm"]), Some(&Mass(2.0)));
//! assert!(world.get::<RevoluteJoint>(spawned.joints["hinge"]).is_some());
//! ```

use std::collections::HashMap;
use std::path::PathBuf;

use bevy_ecs::prelude::*;
use bevy_math::{EulerRot, Quat, Vec3};
use bevy_transform::components::Transform;

use crate::components::*;

/// The URDF parser this module reads: `urdf_rs::read_file` and `urdf_rs::read_from_string` give
/// the [`urdf_rs::Robot`] that [`spawn_urdf`] takes.
pub use urdf_rs;

/// How to spawn a robot.
#[derive(Clone, Debug)]
pub struct UrdfOptions {
    /// Pose of the root link.
    pub base: Transform,
    /// The root link is `Static` (bolted down) rather than `Dynamic`.
    pub fixed_base: bool,
    /// Where relative mesh file names (and `package://` ones, with the package name dropped) are
    /// looked up.
    pub mesh_directory: PathBuf,
}

impl Default for UrdfOptions {
    fn default() -> Self {
        Self {
            base: Transform::IDENTITY,
            fixed_base: true,
            mesh_directory: PathBuf::from("."),
        }
    }
}

/// The spawned robot: its entities by URDF name, and its movable joints in file order.
#[derive(Clone, Debug, Default)]
pub struct SpawnedRobot {
    /// Link name → body entity.
    pub links: HashMap<String, Entity>,
    /// Joint name → joint entity.
    pub joints: HashMap<String, Entity>,
    /// Names of the revolute, continuous and prismatic joints, in file order.
    pub actuated: Vec<String>,
}

/// Why a robot could not be spawned.
#[derive(Debug)]
pub enum UrdfError {
    /// A joint names a link the file does not have.
    MissingLink {
        /// The joint.
        joint: String,
        /// The missing link.
        link: String,
    },
    /// The links do not form one tree (no root, several roots, or a cycle).
    NotATree,
    /// A mesh file could not be read or gave no convex hull.
    Mesh {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A joint type this crate does not simulate.
    UnsupportedJoint {
        /// The joint.
        joint: String,
        /// Its type.
        kind: String,
    },
}

impl std::fmt::Display for UrdfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::MissingLink { joint, link } => write!(f, "joint {joint} names the unknown link {link}"),
            Self::NotATree => write!(f, "the links do not form a single tree"),
            Self::Mesh { path, reason } => write!(f, "mesh {}: {reason}", path.display()),
            Self::UnsupportedJoint { joint, kind } => write!(f, "joint {joint} has the unsupported type {kind}"),
        }
    }
}

impl std::error::Error for UrdfError {}

fn vec3(v: &urdf_rs::Vec3) -> Vec3 {
    Vec3::new(v[0] as f32, v[1] as f32, v[2] as f32)
}

/// A URDF `origin` as a transform: translation `xyz`, rotation roll–pitch–yaw about fixed X, Y, Z.
fn pose(origin: &urdf_rs::Pose) -> Transform {
    let [roll, pitch, yaw] = origin.rpy.0.map(|a| a as f32);
    Transform::from_translation(vec3(&origin.xyz)).with_rotation(Quat::from_euler(EulerRot::ZYX, yaw, pitch, roll))
}

fn mesh_hull(options: &UrdfOptions, filename: &str, scale: Vec3) -> Result<Collider, UrdfError> {
    let relative = filename
        .strip_prefix("package://")
        .map(|rest| rest.split_once('/').map_or(rest, |(_, path)| path))
        .or_else(|| filename.strip_prefix("file://"))
        .unwrap_or(filename);
    let path = options.mesh_directory.join(relative);
    let error = |reason: String| UrdfError::Mesh {
        path: path.clone(),
        reason,
    };
    let mut file = std::fs::File::open(&path).map_err(|e| error(e.to_string()))?;
    let mesh = stl_io::read_stl(&mut file).map_err(|e| error(e.to_string()))?;
    let points: Vec<Vec3> = mesh
        .vertices
        .iter()
        .map(|v| Vec3::new(v[0], v[1], v[2]) * scale)
        .collect();
    Collider::convex_hull(&points).ok_or_else(|| error("no convex hull (fewer than 4 points off a plane)".into()))
}

/// A link's collision shapes as one collider, in the link frame; `None` for a link without any.
fn link_collider(link: &urdf_rs::Link, options: &UrdfOptions) -> Result<Option<Collider>, UrdfError> {
    // URDF cylinders and capsules run along Z, this crate's along Y.
    let z_up = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    let mut parts = Vec::new();
    for collision in &link.collision {
        let at = pose(&collision.origin);
        let (shape, turn) = match &collision.geometry {
            urdf_rs::Geometry::Box { size } => {
                let s = vec3(size);
                (Collider::cuboid(s.x, s.y, s.z), Quat::IDENTITY)
            }
            urdf_rs::Geometry::Cylinder { radius, length } => {
                (Collider::cylinder(*radius as f32, *length as f32), z_up)
            }
            urdf_rs::Geometry::Capsule { radius, length } => (Collider::capsule(*radius as f32, *length as f32), z_up),
            urdf_rs::Geometry::Sphere { radius } => (Collider::sphere(*radius as f32), Quat::IDENTITY),
            urdf_rs::Geometry::Mesh { filename, scale } => {
                let scale = scale.as_ref().map_or(Vec3::ONE, vec3);
                (mesh_hull(options, filename, scale)?, Quat::IDENTITY)
            }
        };
        parts.push((at.translation, at.rotation * turn, shape));
    }
    Ok(match parts.len() {
        0 => None,
        1 if parts[0].0 == Vec3::ZERO && parts[0].1 == Quat::IDENTITY => parts.pop().map(|(_, _, c)| c),
        _ => Collider::compound(parts),
    })
}

/// Mass, centre of mass and principal inertia from a link's `<inertial>`; `None` when the link
/// declares no mass (a massless frame, kept only as a static root).
fn link_inertial(link: &urdf_rs::Link) -> Option<(Mass, CenterOfMass, PrincipalInertia)> {
    let inertial = &link.inertial;
    if inertial.mass.value <= 0.0 {
        return None;
    }
    let i = &inertial.inertia;
    let rotation = bevy_math::Mat3::from_quat(pose(&inertial.origin).rotation);
    let tensor = bevy_math::Mat3::from_cols_array(&[
        i.ixx as f32,
        i.ixy as f32,
        i.ixz as f32,
        i.ixy as f32,
        i.iyy as f32,
        i.iyz as f32,
        i.ixz as f32,
        i.iyz as f32,
        i.izz as f32,
    ]);
    let in_link = rotation * tensor * rotation.transpose();
    let diagonal = Vec3::new(in_link.x_axis.x, in_link.y_axis.y, in_link.z_axis.z);
    let off = in_link.y_axis.x.abs() + in_link.z_axis.x.abs() + in_link.z_axis.y.abs();
    if off > 1e-6 * diagonal.max_element() {
        tracing::warn!(
            "bevy_canal: URDF link {} has an inertia tensor that is not diagonal in the link frame; its products of inertia are dropped",
            link.name
        );
    }
    Some((
        Mass(inertial.mass.value as f32),
        CenterOfMass(vec3(&inertial.origin.xyz)),
        PrincipalInertia(diagonal),
    ))
}

/// Spawns `robot` into `world` at zero joint positions: one rigid body per link, one joint
/// entity per joint (revolute and prismatic with their limits, continuous as an unlimited
/// hinge, fixed as a weld).
pub fn spawn_urdf(world: &mut World, robot: &urdf_rs::Robot, options: &UrdfOptions) -> Result<SpawnedRobot, UrdfError> {
    let index: HashMap<&str, usize> = robot
        .links
        .iter()
        .enumerate()
        .map(|(i, l)| (l.name.as_str(), i))
        .collect();
    let mut parent_joint: Vec<Option<usize>> = vec![None; robot.links.len()];
    for (j, joint) in robot.joints.iter().enumerate() {
        for link in [&joint.parent.link, &joint.child.link] {
            if !index.contains_key(link.as_str()) {
                return Err(UrdfError::MissingLink {
                    joint: joint.name.clone(),
                    link: link.clone(),
                });
            }
        }
        let child = index[joint.child.link.as_str()];
        if parent_joint[child].replace(j).is_some() {
            return Err(UrdfError::NotATree);
        }
    }
    let roots: Vec<usize> = (0..robot.links.len()).filter(|&l| parent_joint[l].is_none()).collect();
    let [root] = roots[..] else {
        return Err(UrdfError::NotATree);
    };

    // World pose of every link at zero joint positions, parents first.
    let mut poses: Vec<Option<Transform>> = vec![None; robot.links.len()];
    poses[root] = Some(options.base);
    let mut order = vec![root];
    let mut cursor = 0;
    while cursor < order.len() {
        let parent = order[cursor];
        cursor += 1;
        for joint in robot.joints.iter().filter(|j| index[j.parent.link.as_str()] == parent) {
            let child = index[joint.child.link.as_str()];
            if poses[child].is_some() {
                return Err(UrdfError::NotATree);
            }
            let parent_pose = poses[parent].unwrap_or_default();
            poses[child] = Some(parent_pose * pose(&joint.origin));
            order.push(child);
        }
    }
    if order.len() != robot.links.len() {
        return Err(UrdfError::NotATree);
    }

    let mut spawned = SpawnedRobot::default();
    for &l in &order {
        let link = &robot.links[l];
        let kind = if l == root && options.fixed_base {
            RigidBody::Static
        } else {
            RigidBody::Dynamic
        };
        let mut entity = world.spawn((kind, poses[l].unwrap_or_default(), Name::new(link.name.clone())));
        if let Some(collider) = link_collider(link, options)? {
            entity.insert(collider);
        }
        if let Some(inertial) = link_inertial(link) {
            entity.insert(inertial);
        }
        spawned.links.insert(link.name.clone(), entity.id());
    }

    for joint in &robot.joints {
        let parent = spawned.links[&joint.parent.link];
        let child = spawned.links[&joint.child.link];
        let origin = pose(&joint.origin);
        // URDF gives the axis in the joint (child) frame; this crate takes it in body 1's.
        let axis = origin.rotation * vec3(&joint.axis.xyz);
        let limits = (joint.limit.lower.is_finite() && joint.limit.upper.is_finite())
            .then_some((joint.limit.lower as f32, joint.limit.upper as f32));
        let mut entity = match joint.joint_type {
            urdf_rs::JointType::Fixed => {
                world.spawn(FixedJoint::new(parent, child).with_local_anchor1(origin.translation))
            }
            urdf_rs::JointType::Revolute | urdf_rs::JointType::Continuous => {
                let mut hinge = RevoluteJoint::new(parent, child)
                    .with_local_anchor1(origin.translation)
                    .with_axis(axis);
                if let (urdf_rs::JointType::Revolute, Some((min, max))) = (&joint.joint_type, limits) {
                    hinge = hinge.with_limits(min, max);
                }
                world.spawn(hinge)
            }
            urdf_rs::JointType::Prismatic => {
                let mut slider = PrismaticJoint::new(parent, child)
                    .with_local_anchor1(origin.translation)
                    .with_axis(axis);
                if let Some((min, max)) = limits {
                    slider = slider.with_limits(min, max);
                }
                world.spawn(slider)
            }
            urdf_rs::JointType::Spherical => {
                world.spawn(SphericalJoint::new(parent, child).with_local_anchor1(origin.translation))
            }
            ref other => {
                return Err(UrdfError::UnsupportedJoint {
                    joint: joint.name.clone(),
                    kind: format!("{other:?}"),
                });
            }
        };
        entity.insert(Name::new(joint.name.clone()));
        if joint.mimic.is_some() {
            tracing::warn!(
                "bevy_canal: URDF joint {} mimics another joint; it moves freely instead",
                joint.name
            );
        }
        if !matches!(
            joint.joint_type,
            urdf_rs::JointType::Fixed | urdf_rs::JointType::Spherical
        ) {
            spawned.actuated.push(joint.name.clone());
        }
        spawned.joints.insert(joint.name.clone(), entity.id());
    }
    Ok(spawned)
}
