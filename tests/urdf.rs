//! The URDF loader on the shipped arm: what it spawns matches the file, and the spawned arm,
//! driven to hold its zero pose, holds it under gravity with its joints closed.

mod app;

use app::joints::{drive_arm, spawn_arm};
use app::*;
use bevy_canal::prelude::*;
use bevy_canal::urdf::urdf_rs;
use bevy_math::{Quat, Vec3};

#[test]
fn shipped_arm_matches_its_file() {
    let mut app = app(60.0);
    let (robot, spawned) = spawn_arm(&mut app);
    assert_eq!(spawned.links.len(), 9);
    assert_eq!(spawned.joints.len(), 8);
    assert_eq!(spawned.actuated.len(), 8);
    let world = app.world();
    for link in &robot.links {
        let entity = spawned.links[&link.name];
        let mass = f64::from(world.get::<Mass>(entity).unwrap().0);
        assert!((mass - link.inertial.mass.value).abs() < 1e-6, "{}", link.name);
        let i = &link.inertial.inertia;
        let inertia = world.get::<PrincipalInertia>(entity).unwrap().0.as_dvec3();
        assert!(
            (inertia - bevy_math::DVec3::new(i.ixx, i.iyy, i.izz))
                .abs()
                .max_element()
                < 1e-9
        );
        assert!(world.get::<Collider>(entity).is_some(), "{} has a collider", link.name);
    }
    // The base is bolted down, the rest moves.
    assert_eq!(
        world.get::<RigidBody>(spawned.links["base_link"]),
        Some(&RigidBody::Static)
    );
    assert_eq!(world.get::<RigidBody>(spawned.links["hand"]), Some(&RigidBody::Dynamic));
    for joint in &robot.joints {
        let entity = spawned.joints[&joint.name];
        let axis = Vec3::from_array(joint.axis.xyz.0.map(|x| x as f32));
        let limits = (joint.limit.lower as f32, joint.limit.upper as f32);
        match joint.joint_type {
            urdf_rs::JointType::Revolute => {
                let hinge = world.get::<RevoluteJoint>(entity).unwrap();
                assert_eq!(hinge.axis, axis, "{}", joint.name);
                let l = hinge.limits.unwrap();
                assert_eq!((l.min, l.max), limits, "{}", joint.name);
            }
            urdf_rs::JointType::Continuous => {
                let hinge = world.get::<RevoluteJoint>(entity).unwrap();
                assert_eq!((hinge.axis, hinge.limits), (axis, None));
            }
            urdf_rs::JointType::Prismatic => {
                let slider = world.get::<PrismaticJoint>(entity).unwrap();
                assert_eq!(slider.axis, axis);
                let l = slider.limits.unwrap();
                assert_eq!((l.min, l.max), limits);
            }
            ref other => panic!("unexpected joint type {other:?}"),
        }
    }
    // Zero pose: the arm points up; the hand sits on top of the chain of origins.
    let hand = world.get::<Transform>(spawned.links["hand"]).unwrap();
    assert!((hand.translation - Vec3::new(0.0, 0.0, 0.05 + 0.1 + 0.3 + 0.25 + 0.09 + 0.03)).length() < 1e-6);
}

#[test]
fn driven_arm_holds_its_pose_under_gravity() {
    // Z up, as URDF is written.
    let mut app = app(60.0);
    app.insert_resource(Gravity(Vec3::new(0.0, 0.0, -9.81)));
    let (_, spawned) = spawn_arm(&mut app);
    // Tilt the shoulder target so gravity loads every joint below the wrist.
    let targets = [("shoulder", 0.4), ("elbow", 0.6), ("wrist_2", -0.3)];
    drive_arm(&mut app, &spawned, &targets);
    let mut worst_separation = 0.0_f32;
    for _ in 0..180 {
        step(&mut app, 1);
        for name in &spawned.actuated {
            let state = app.world().get::<JointState>(spawned.joints[name]).unwrap();
            worst_separation = worst_separation.max(state.anchor_separation);
        }
    }
    let stats = stats(&app);
    let mut worst_tracking = 0.0_f32;
    for name in &spawned.actuated {
        let state = app.world().get::<JointState>(spawned.joints[name]).unwrap();
        let target = targets.iter().find(|(n, _)| n == name).map_or(0.0, |(_, t)| *t);
        println!(
            "{name}: position {:.5}, target {target}, torque {}",
            state.position, state.torque
        );
        worst_tracking = worst_tracking.max((state.position - target).abs());
    }
    println!("worst tracking {worst_tracking:.2e}, worst anchor separation {worst_separation:.2e} m, {stats:?}");
    assert!(stats.converged);
    assert!(worst_separation < 1e-5);
    // The static sag of a 2e4 N·m/rad drive under the shoulder's ≈ 6 N·m is 3e-4 rad.
    assert!(worst_tracking < 1e-3, "{worst_tracking}");
    let hand = app.world().get::<Transform>(spawned.links["hand"]).unwrap();
    assert!(
        hand.rotation.angle_between(Quat::IDENTITY) > 0.1,
        "the arm moved to its targets"
    );
}
