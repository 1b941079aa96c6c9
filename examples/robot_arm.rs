//! A 6-DOF arm loaded from URDF (`assets/canal_arm.urdf`) on a table, driven by joint position
//! targets: it reaches behind a box, lowers its paddle and sweeps the box along an arc to a goal.
//! Prints per second the joint tracking error, the largest joint violation and the contact force
//! on the box.
//!
//! `cargo run --release --example robot_arm`

mod common;

use std::f32::consts::PI;

use bevy_app::App;
use bevy_canal::prelude::*;
use bevy_canal::urdf::{SpawnedRobot, UrdfOptions, spawn_urdf, urdf_rs};

/// Box and goal: 0.45 m from the base, at −0.6 rad and +0.6 rad about the vertical.
const REACH: f32 = 0.45;
const BOX_ANGLE: f32 = -0.6;
const GOAL_ANGLE: f32 = 0.6;
const BOX_SIZE: f32 = 0.1;

/// Shoulder, elbow and wrist pitch that put the wrist joint at horizontal distance `r` and
/// height `z` (base frame) with the paddle pointing straight down: planar two-link inverse
/// kinematics, angles from the vertical, elbow bent forward.
fn reach(r: f32, z: f32) -> [f32; 3] {
    let (upper, lower) = (0.3, 0.25 + 0.09);
    let (dx, dz) = (r, z - 0.15);
    let d2 = dx * dx + dz * dz;
    let elbow = ((d2 - upper * upper - lower * lower) / (2.0 * upper * lower))
        .clamp(-1.0, 1.0)
        .acos();
    let shoulder = dx.atan2(dz) - (lower * elbow.sin()).atan2(upper + lower * elbow.cos());
    [shoulder, elbow, PI - shoulder - elbow]
}

/// Joint targets at time `t`: (base yaw, shoulder, elbow, wrist pitch).
fn plan(t: f32) -> [f32; 4] {
    let smooth = |a: f32, b: f32, t0: f32, t1: f32| {
        let s = ((t - t0) / (t1 - t0)).clamp(0.0, 1.0);
        a + (b - a) * (0.5 - 0.5 * (PI * s).cos())
    };
    // The hand reaches 0.045 m either side of its centre along the sweep (the fingers). Lower it
    // 3.5 cm clear of the box; end the sweep with the box centre on the goal.
    let hand = 0.045;
    let behind = BOX_ANGLE - (BOX_SIZE / 2.0 + hand + 0.035) / REACH;
    let end = GOAL_ANGLE - (BOX_SIZE / 2.0 + hand) / REACH;
    // Turn first with the arm tucked in, then reach out, lower, sweep, lift.
    let yaw = if t < 4.0 {
        smooth(0.0, behind, 0.0, 1.5)
    } else {
        smooth(behind, end, 4.0, 9.0)
    };
    // Wrist joint 0.165 m up: finger tips 1.5 cm above the table, paddle across the box's side.
    let height = if t < 9.5 {
        smooth(0.35, 0.165, 2.5, 4.0)
    } else {
        smooth(0.165, 0.35, 9.5, 11.0)
    };
    let radius = smooth(0.2, REACH, 1.5, 2.5);
    // From the upright zero pose, blend into the tucked pose while turning.
    let blend = smooth(0.0, 1.0, 0.0, 1.5);
    let [shoulder, elbow, wrist] = reach(radius, height).map(|angle| angle * blend);
    [yaw, shoulder, elbow, wrist]
}

/// Sets a hinge's drive to follow `target` rad moving at `rate` rad/s (the feed-forward rate
/// keeps the damper from dragging behind a moving target).
fn set_target(app: &mut App, robot: &SpawnedRobot, joint: &str, target: f32, rate: f32) {
    let entity = robot.joints[joint];
    if let Some(mut hinge) = app.world_mut().get_mut::<RevoluteJoint>(entity) {
        let drive = hinge
            .drive
            .get_or_insert(JointDrive::position(0.0, 2e4, 1e3).with_max_force(200.0));
        drive.target_position = target;
        drive.target_velocity = rate;
    }
}

fn main() {
    let mut app = common::app();
    app.insert_resource(Gravity(Vec3::new(0.0, 0.0, -9.81)));
    app.world_mut().spawn((
        RigidBody::Static,
        Collider::cuboid(1.6, 1.6, 0.05),
        Friction::new(0.4),
        Transform::from_xyz(0.0, 0.0, -0.025),
    ));
    let urdf = urdf_rs::read_file(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/canal_arm.urdf")).expect("URDF");
    let options = UrdfOptions {
        mesh_directory: concat!(env!("CARGO_MANIFEST_DIR"), "/assets").into(),
        ..Default::default()
    };
    let robot = spawn_urdf(app.world_mut(), &urdf, &options).expect("arm");
    for joint in &robot.actuated {
        set_target(&mut app, &robot, joint, 0.0, 0.0);
        if let Some(mut slider) = app.world_mut().get_mut::<PrismaticJoint>(robot.joints[joint]) {
            slider.drive = Some(JointDrive::position(0.0, 2e3, 50.0));
        }
    }
    let at = |angle: f32| Vec3::new(REACH * angle.cos(), REACH * angle.sin(), BOX_SIZE / 2.0);
    let cargo = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(BOX_SIZE, BOX_SIZE, BOX_SIZE),
            Mass(0.5),
            Friction::new(0.4),
            Transform::from_translation(at(BOX_ANGLE)).with_rotation(Quat::from_rotation_z(BOX_ANGLE)),
        ))
        .id();
    let goal = at(GOAL_ANGLE);

    let names = ["base_yaw", "shoulder", "elbow", "wrist_2"];
    let controlled = robot.clone();
    let reported = robot.clone();
    common::run_controlled(
        &mut app,
        12,
        move |app, t| {
            let h = 1e-3;
            let (now, next) = (plan(t), plan(t + h));
            for (k, name) in names.iter().enumerate() {
                set_target(app, &controlled, name, now[k], (next[k] - now[k]) / h);
            }
        },
        move |app| {
            let world = app.world();
            let (mut tracking, mut violation) = (0.0_f32, 0.0_f32);
            for name in &reported.actuated {
                let state = world.get::<JointState>(reported.joints[name]).unwrap();
                violation = violation.max(state.anchor_separation);
                let hinge = world.get::<RevoluteJoint>(reported.joints[name]);
                if let Some(target) = hinge.and_then(|h| h.drive).map(|d| d.target_position) {
                    tracking = tracking.max((state.position - target).abs());
                }
            }
            // Contact forces on the box, from the arm and from the table.
            let dt = 1.0 / 60.0;
            let (mut from_arm, mut from_table) = (Vec3::ZERO, Vec3::ZERO);
            for pair in &world.resource::<Contacts>().pairs {
                let (force, other) = match (pair.entity1 == cargo, pair.entity2 == cargo) {
                    (true, _) => (pair.total_impulse() / dt, pair.entity2),
                    (_, true) => (-pair.total_impulse() / dt, pair.entity1),
                    _ => continue,
                };
                if reported.links.values().any(|&link| link == other) {
                    from_arm += force;
                } else {
                    from_table += force;
                }
            }
            let position = world.get::<Transform>(cargo).unwrap().translation;
            format!(
                "tracking {tracking:.1e} rad, joint gap {violation:.1e} m, box: arm {:.2} N, table {:.2} N up, \
                 at {:.3} m, {:+.3} rad ({:.3} m from goal)",
                from_arm.length(),
                from_table.z,
                position.truncate().length(),
                position.y.atan2(position.x),
                (position - goal).truncate().length()
            )
        },
    );
    let position = app.world().get::<Transform>(cargo).unwrap().translation;
    println!(
        "box ends {:.3} m from its goal (it started {:.3} m away)",
        (position - goal).truncate().length(),
        (at(BOX_ANGLE) - goal).truncate().length()
    );
}
