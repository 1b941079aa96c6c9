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

/// Box and goal: 0.45 m from the base, at −0.6 rad and +0.6 rad about the vertical (0.508 m
/// apart).
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

/// A pose of the hand: wrist-joint position `(x, y, height)` in the base frame (m), whether the
/// fingers close, and whether the paddle keeps its world orientation (the hand's roll cancels
/// the base yaw) on the way to the next keyframe.
#[derive(Clone, Copy)]
struct Keyframe {
    t: f32,
    x: f32,
    y: f32,
    height: f32,
    grip: bool,
    align: bool,
}

const fn key(t: f32, (x, y): (f32, f32), height: f32, grip: bool, align: bool) -> Keyframe {
    Keyframe {
        t,
        x,
        y,
        height,
        grip,
        align,
    }
}

fn polar(angle: f32, radius: f32) -> (f32, f32) {
    (radius * angle.cos(), radius * angle.sin())
}

/// The push, along the straight line from the box to the goal (pushing along an arc would let the
/// box slide off outwards: a pushed box keeps going straight). Tuck in and turn, reach behind the
/// box, lower, push, lift. The open hand spans 0.05 m either side of its centre along the push; it
/// comes down 3.5 cm clear of the box and stops with the box centre on the goal. At a wrist height
/// of 0.165 m the finger tips are 1.5 cm above the table.
fn push_plan(start: Vec3, goal: Vec3) -> Vec<Keyframe> {
    let hand = 0.05;
    let behind = (start.x, start.y - (BOX_SIZE / 2.0 + hand + 0.035));
    let end = (goal.x, goal.y - (BOX_SIZE / 2.0 + hand));
    let tucked = (
        0.2 * behind.0 / behind.0.hypot(behind.1),
        0.2 * behind.1 / behind.0.hypot(behind.1),
    );
    vec![
        key(0.0, (0.2, 0.0), 0.35, false, true),
        key(1.5, tucked, 0.35, false, true),
        key(2.5, behind, 0.35, false, true),
        key(4.0, behind, 0.165, false, true),
        key(9.0, end, 0.165, false, true),
        key(9.5, end, 0.165, false, true),
        key(11.0, end, 0.35, false, false),
    ]
}

/// The stack: pick the small box at `pick` on the table and set it on the big box at `place`.
/// Wrist at 0.155 m: the fingers span the small box from 5 mm above the table; 0.262 m sets it on
/// the big box's top.
fn stack_plan(pick: (f32, f32), place: (f32, f32)) -> Vec<Keyframe> {
    // Carry round the base, not across it: a straight chord would fold the arm onto the box.
    let (a, b) = (pick.1.atan2(pick.0), place.1.atan2(place.0));
    let via = polar(0.5 * (a + b), 0.5 * (pick.0.hypot(pick.1) + place.0.hypot(place.1)));
    vec![
        key(12.5, pick, 0.3, false, false),
        key(14.0, pick, 0.155, false, false),
        key(15.0, pick, 0.155, true, false),
        key(16.5, pick, 0.35, true, false),
        key(17.5, via, 0.35, true, false),
        key(18.5, place, 0.35, true, false),
        key(20.0, place, 0.262, true, false),
        key(21.0, place, 0.262, false, false),
        key(22.5, place, 0.4, false, false),
    ]
}

/// Joint targets at time `t` along `plan` — base yaw, shoulder, elbow, wrist pitch, hand roll —
/// and the grip.
fn targets(plan: &[Keyframe], t: f32) -> ([f32; 5], bool) {
    let next = plan.iter().position(|k| k.t > t).unwrap_or(plan.len() - 1).max(1);
    let (a, b) = (plan[next - 1], plan[next]);
    let s = ((t - a.t) / (b.t - a.t)).clamp(0.0, 1.0);
    let s = 0.5 - 0.5 * (PI * s).cos();
    let mix = |p: f32, q: f32| p + (q - p) * s;
    let (x, y) = (mix(a.x, b.x), mix(a.y, b.y));
    let yaw = y.atan2(x);
    let [shoulder, elbow, wrist] = reach(x.hypot(y), mix(a.height, b.height));
    // With the hand pointing down, its roll turns the paddle about −Z: rolling by the yaw keeps
    // the paddle's world orientation. Keyframes that do not align roll back to 0.
    let roll_at = |k: Keyframe| if k.align { k.y.atan2(k.x) } else { 0.0 };
    let roll = if a.align && b.align {
        yaw
    } else {
        mix(roll_at(a), roll_at(b))
    };
    // From the upright zero pose, blend into the first keyframe's pose while turning.
    let blend = if next == 1 { 0.5 - 0.5 * (PI * s).cos() } else { 1.0 };
    let grip = if s < 1.0 { a.grip } else { b.grip };
    (
        [yaw, shoulder * blend, elbow * blend, wrist * blend, roll * blend],
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
    // Every hinge holds 0 until the plan moves it; the fingers' drives are set by the control.
    for joint in &robot.actuated {
        set_target(&mut app, &robot, joint, 0.0, 0.0);
    }
    let at = |angle: f32| bevy_math::Vec2::from(polar(angle, REACH)).extend(BOX_SIZE / 2.0);
    let cargo = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(BOX_SIZE, BOX_SIZE, BOX_SIZE),
            Mass(0.5),
            Friction::new(0.4),
            Transform::from_translation(at(BOX_ANGLE)),
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
            Transform::from_translation(bevy_math::Vec2::from(polar(small_yaw, small_radius)).extend(SMALL / 2.0))
                .with_rotation(Quat::from_rotation_z(small_yaw)),
        ))
        .id();

    let names = ["base_yaw", "shoulder", "elbow", "wrist_2", "wrist_3"];
    let controlled = robot.clone();
    let reported = robot.clone();
    let mut plan = push_plan(at(BOX_ANGLE), goal);
    let pushing = plan.len();
    common::run_controlled(
        &mut app,
        24,
        move |app, t| {
            if t >= 11.0 && plan.len() == pushing {
                // Where the push left the big box: set the small one on it there.
                let big = app.world().get::<Transform>(cargo).unwrap().translation;
                plan.extend(stack_plan(polar(small_yaw, small_radius), (big.x, big.y)));
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
