//! Jointed scenes shared by the joint tests and the joint benchmark: a pivot, a chain of rods, the
//! shipped URDF arm and its drives.

use bevy_app::App;
use bevy_canal::prelude::*;
use bevy_canal::urdf::{SpawnedRobot, UrdfOptions, spawn_urdf, urdf_rs};
use bevy_ecs::prelude::*;
use bevy_math::{Quat, Vec3};

pub const PIVOT: Vec3 = Vec3::new(0.0, 5.0, 0.0);

pub fn pivot(app: &mut App) -> Entity {
    app.world_mut()
        .spawn((RigidBody::Static, Transform::from_translation(PIVOT)))
        .id()
}

/// A chain of `links` rods of 1 kg, each 0.1 m, laid out from the pivot along `direction`, with a
/// bob of `bob_mass` kg at the end; returns the joints.
pub fn chain(app: &mut App, links: usize, bob_mass: f32, direction: Vec3) -> Vec<Entity> {
    let pivot = pivot(app);
    let length = 0.1;
    let direction = direction.normalize();
    let rotation = Quat::from_rotation_arc(Vec3::NEG_Y, direction);
    let mut joints = Vec::new();
    let mut above = pivot;
    let mut anchor_above = Vec3::ZERO;
    for i in 0..links {
        let centre = PIVOT + direction * length * (i as f32 + 0.5);
        let link = app
            .world_mut()
            .spawn((
                RigidBody::Dynamic,
                Collider::cuboid(0.02, length, 0.02),
                Mass(1.0),
                Transform::from_translation(centre).with_rotation(rotation),
            ))
            .id();
        let joint = SphericalJoint::new(above, link)
            .with_local_anchor1(anchor_above)
            .with_local_anchor2(Vec3::new(0.0, length / 2.0, 0.0));
        joints.push(app.world_mut().spawn(joint).id());
        above = link;
        anchor_above = Vec3::new(0.0, -length / 2.0, 0.0);
    }
    let end = PIVOT + direction * (length * links as f32 + 0.05);
    let bob = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::sphere(0.05),
            Mass(bob_mass),
            Transform::from_translation(end),
        ))
        .id();
    let joint = SphericalJoint::new(above, bob)
        .with_local_anchor1(anchor_above)
        .with_local_anchor2(-direction * 0.05);
    joints.push(app.world_mut().spawn(joint).id());
    joints
}

const ARM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/canal_arm.urdf");

pub fn spawn_arm(app: &mut App) -> (urdf_rs::Robot, SpawnedRobot) {
    let robot = urdf_rs::read_file(ARM).expect("the shipped URDF parses");
    let options = UrdfOptions {
        mesh_directory: concat!(env!("CARGO_MANIFEST_DIR"), "/assets").into(),
        ..Default::default()
    };
    let spawned = spawn_urdf(app.world_mut(), &robot, &options).expect("the shipped arm spawns");
    (robot, spawned)
}

/// Position drives on every hinge of `spawned` (2e4 N·m/rad, 1e3 N·m·s/rad, at most 100 N·m),
/// aimed at `targets` by joint name or 0; sliders held at 0.
pub fn drive_arm(app: &mut App, spawned: &SpawnedRobot, targets: &[(&str, f32)]) {
    for name in &spawned.actuated {
        let target = targets.iter().find(|(n, _)| n == name).map_or(0.0, |(_, t)| *t);
        let mut joint = app.world_mut().entity_mut(spawned.joints[name]);
        if let Some(mut hinge) = joint.get_mut::<RevoluteJoint>() {
            hinge.drive = Some(JointDrive::position(target, 2e4, 1e3).with_max_force(100.0));
        } else if let Some(mut slider) = joint.get_mut::<PrismaticJoint>() {
            slider.drive = Some(JointDrive::position(0.0, 2e4, 1e3));
        }
    }
}
