//! A 6-DOF arm loaded from URDF (`assets/canal_arm.urdf`) on a table, driven by joint position
//! targets: it reaches behind a box, lowers its paddle and sweeps the box along an arc towards a
//! goal, then picks a small box with its fingers and sets it on the big one. Prints per second the
//! joint tracking error, the largest joint violation and the contact forces on both boxes (from
//! the arm, and from what supports them).
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
/// The small box to stack: 5 cm, 0.4 m out at −1.6 rad, clear of the sweep.
const SMALL: f32 = 0.05;
const SMALL_AT: (f32, f32) = (-1.6, 0.4);

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

/// A pose of the hand: base yaw (rad), wrist-joint radius and height (m), gripper closed or not.
#[derive(Clone, Copy)]
struct Keyframe {
    t: f32,
    yaw: f32,
    radius: f32,
    height: f32,
    grip: bool,
}

const fn key(t: f32, yaw: f32, radius: f32, height: f32, grip: bool) -> Keyframe {
    Keyframe {
        t,
        yaw,
        radius,
        height,
        grip,
    }
}

/// The push: turn with the arm tucked in, reach out behind the box, lower, sweep, lift. The hand
/// reaches 0.045 m either side of its centre along the sweep (the fingers); it is lowered 3.5 cm
/// clear of the box and stops with the box centre on the goal. At a wrist height of 0.165 m the
/// finger tips are 1.5 cm above the table.
fn push_plan() -> Vec<Keyframe> {
    let hand = 0.045;
    let behind = BOX_ANGLE - (BOX_SIZE / 2.0 + hand + 0.035) / REACH;
    let end = GOAL_ANGLE - (BOX_SIZE / 2.0 + hand) / REACH;
    vec![
        key(0.0, 0.0, 0.2, 0.35, false),
        key(1.5, behind, 0.2, 0.35, false),
        key(2.5, behind, REACH, 0.35, false),
        key(4.0, behind, REACH, 0.165, false),
        key(9.0, end, REACH, 0.165, false),
        key(9.5, end, REACH, 0.165, false),
        key(11.0, end, REACH, 0.35, false),
    ]
}

/// The stack: pick the small box at `(pick_yaw, pick_radius)` on the table and set it on the big
/// box, found at `(place_yaw, place_radius)`. Wrist at 0.155 m: the fingers span the small box
/// from 5 mm above the table; 0.26 m sets it on the big box's top.
fn stack_plan(pick_yaw: f32, pick_radius: f32, place_yaw: f32, place_radius: f32) -> Vec<Keyframe> {
    vec![
        key(12.5, pick_yaw, pick_radius, 0.3, false),
        key(14.0, pick_yaw, pick_radius, 0.155, false),
        key(15.0, pick_yaw, pick_radius, 0.155, true),
        key(16.5, pick_yaw, pick_radius, 0.35, true),
        key(18.5, place_yaw, place_radius, 0.35, true),
        key(20.0, place_yaw, place_radius, 0.262, true),
        key(21.0, place_yaw, place_radius, 0.262, false),
        key(22.5, place_yaw, place_radius, 0.4, false),
    ]
}

/// Joint targets at time `t` along `plan` — base yaw, shoulder, elbow, wrist pitch — and the grip.
fn targets(plan: &[Keyframe], t: f32) -> ([f32; 4], bool) {
    let next = plan.iter().position(|k| k.t > t).unwrap_or(plan.len() - 1).max(1);
    let (a, b) = (plan[next - 1], plan[next]);
    let s = ((t - a.t) / (b.t - a.t)).clamp(0.0, 1.0);
    let s = 0.5 - 0.5 * (PI * s).cos();
    let mix = |x: f32, y: f32| x + (y - x) * s;
    let [shoulder, elbow, wrist] = reach(mix(a.radius, b.radius), mix(a.height, b.height));
    // From the upright zero pose, blend into the first keyframe's pose while turning.
    let blend = (t / plan[1].t).clamp(0.0, 1.0).min(1.0);
    let blend = if next == 1 { 0.5 - 0.5 * (PI * blend).cos() } else { 1.0 };
    let grip = if s < 1.0 { a.grip } else { b.grip };
    (
        [mix(a.yaw, b.yaw), shoulder * blend, elbow * blend, wrist * blend],
        grip,
    )
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

/// Contact forces on `body` over the last step: from the robot's links, and from everything else.
fn contact_forces(
    world: &bevy_ecs::world::World,
    body: bevy_ecs::entity::Entity,
    robot: &SpawnedRobot,
) -> (Vec3, Vec3) {
    let dt = 1.0 / 60.0;
    let (mut from_arm, mut from_rest) = (Vec3::ZERO, Vec3::ZERO);
    for pair in &world.resource::<Contacts>().pairs {
        let (force, other) = match (pair.entity1 == body, pair.entity2 == body) {
            (true, _) => (pair.total_impulse() / dt, pair.entity2),
            (_, true) => (-pair.total_impulse() / dt, pair.entity1),
            _ => continue,
        };
        if robot.links.values().any(|&link| link == other) {
            from_arm += force;
        } else {
            from_rest += force;
        }
    }
    (from_arm, from_rest)
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
    let (small_yaw, small_radius) = SMALL_AT;
    let small = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(SMALL, SMALL, SMALL),
            Mass(0.1),
            Friction::new(0.6),
            Transform::from_xyz(
                small_radius * small_yaw.cos(),
                small_radius * small_yaw.sin(),
                SMALL / 2.0,
            )
            .with_rotation(Quat::from_rotation_z(small_yaw)),
        ))
        .id();

    let names = ["base_yaw", "shoulder", "elbow", "wrist_2"];
    let controlled = robot.clone();
    let reported = robot.clone();
    let mut plan = push_plan();
    common::run_controlled(
        &mut app,
        24,
        move |app, t| {
            if t >= 11.0 && plan.len() == push_plan().len() {
                // Where the push left the big box: set the small one on it there.
                let big = app.world().get::<Transform>(cargo).unwrap().translation;
                let place = (big.y.atan2(big.x), big.truncate().length());
                plan.extend(stack_plan(small_yaw, small_radius, place.0, place.1));
            }
            let h = 1e-3;
            let ((now, grip), (next, _)) = (targets(&plan, t), targets(&plan, t + h));
            for (k, name) in names.iter().enumerate() {
                set_target(app, &controlled, name, now[k], (next[k] - now[k]) / h);
            }
            // Open: fingers 1 cm out; closed: squeezing with at most 8 N each.
            for finger in ["finger_left_slide", "finger_right_slide"] {
                let mut slider = app
                    .world_mut()
                    .get_mut::<PrismaticJoint>(controlled.joints[finger])
                    .unwrap();
                slider.drive = Some(if grip {
                    JointDrive::position(-0.03, 2e3, 50.0).with_max_force(8.0)
                } else {
                    JointDrive::position(0.01, 2e3, 50.0)
                });
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
            let (arm_on_big, rest_on_big) = contact_forces(world, cargo, &reported);
            let (arm_on_small, rest_on_small) = contact_forces(world, small, &reported);
            let big = world.get::<Transform>(cargo).unwrap().translation;
            let small_at = world.get::<Transform>(small).unwrap().translation;
            format!(
                "tracking {tracking:.1e} rad, joint gap {violation:.1e} m | big box: arm {:.2} N, support {:.2} N, \
                 {:.3} m from goal | small box: arm {:.2} N, support {:.2} N, height {:.3} m",
                arm_on_big.length(),
                rest_on_big.z,
                (big - goal).truncate().length(),
                arm_on_small.length(),
                rest_on_small.z,
                small_at.z,
            )
        },
    );
    let position = app.world().get::<Transform>(cargo).unwrap().translation;
    let on_top = app.world().get::<Transform>(small).unwrap().translation;
    println!(
        "big box ends {:.3} m from its goal (it started {:.3} m away); small box at height {:.4} m \
         (on the big box: {:.4} m), {:.3} m off its centre",
        (position - goal).truncate().length(),
        (at(BOX_ANGLE) - goal).truncate().length(),
        on_top.z,
        BOX_SIZE + SMALL / 2.0,
        (on_top - position).truncate().length()
    );
}
