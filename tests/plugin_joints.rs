//! Joints through the plugin, each against a number a soft or wrong joint misses: pendulum period
//! and circle, a chain with a 1000× bob, a hinge limit, energy of a double pendulum, and bad
//! joint input.

mod app;

use std::f64::consts::TAU;

use app::joints::{PIVOT, chain, pivot};
use app::*;
use bevy_app::App;
use bevy_canal::prelude::*;
use bevy_ecs::prelude::*;
use bevy_math::{Quat, Vec3};

/// A small heavy ball hanging `length` below the pivot, swung out by `angle` about Z.
fn pendulum(app: &mut App, length: f32, angle: f32) -> (Entity, Entity) {
    let pivot = pivot(app);
    let offset = Quat::from_rotation_z(angle) * Vec3::new(0.0, -length, 0.0);
    let bob = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::sphere(0.01),
            ColliderDensity(1000.0),
            Transform::from_translation(PIVOT + offset),
        ))
        .id();
    let joint = app
        .world_mut()
        .spawn(SphericalJoint::new(pivot, bob).with_local_anchor2(-offset))
        .id();
    (bob, joint)
}

#[test]
fn small_swing_has_the_pendulum_period() {
    let mut app = app(240.0);
    let length = 1.0;
    let (bob, _) = pendulum(&mut app, length, 0.05);
    // Time between downward zero crossings of x, interpolated linearly.
    let dt = dt(&app);
    let mut crossings = Vec::new();
    let mut previous = precise(&app, bob).translation.x;
    for k in 1..=(240 * 12) {
        step(&mut app, 1);
        let x = precise(&app, bob).translation.x;
        if previous > 0.0 && x <= 0.0 {
            crossings.push((k as f64 - 1.0 + previous / (previous - x)) * dt);
        }
        previous = x;
    }
    assert!(crossings.len() >= 5, "{crossings:?}");
    let periods = crossings.len() - 1;
    let period = (crossings[periods] - crossings[0]) / periods as f64;
    let expected = TAU * (f64::from(length) / G).sqrt();
    let error = (period - expected).abs() / expected;
    println!(
        "period {period:.5} s, 2π√(L/g) = {expected:.5} s, error {:.3}%",
        100.0 * error
    );
    assert!(error < 0.005);
}

#[test]
fn wide_swing_keeps_the_bob_on_its_circle() {
    let mut app = app(60.0);
    let length = 1.0;
    let (bob, joint) = pendulum(&mut app, length, 60f32.to_radians());
    let mut worst = 0.0_f64;
    let mut lowest = f64::INFINITY;
    for _ in 0..(60 * 5) {
        step(&mut app, 1);
        let p = precise(&app, bob).translation;
        worst = worst.max(((p - PIVOT.as_dvec3()).length() - f64::from(length)).abs());
        lowest = lowest.min(p.y);
    }
    let state = *app.world().get::<JointState>(joint).unwrap();
    println!("largest radius error {worst:.2e} m, lowest point {lowest:.4} m, {state:?}");
    assert!(worst < 1e-5);
    // It really swung through the bottom of the circle.
    assert!((lowest - (f64::from(PIVOT.y) - f64::from(length))).abs() < 1e-3);
}

fn worst_separation_over(app: &mut App, joints: &[Entity], steps: usize) -> f64 {
    let mut worst = 0.0_f64;
    for _ in 0..steps {
        step(app, 1);
        for &joint in joints {
            let state = app.world().get::<JointState>(joint).unwrap();
            worst = worst.max(f64::from(state.anchor_separation));
        }
    }
    worst
}

#[test]
fn hanging_chain_holds_a_bob_a_thousand_times_heavier() {
    for (bob_mass, tolerance) in [(1.0, 1e-5), (1000.0, 1e-4)] {
        let mut app = app(60.0);
        let joints = chain(&mut app, 20, bob_mass, Vec3::NEG_Y);
        let worst = worst_separation_over(&mut app, &joints, 600);
        let stats = stats(&app);
        println!("bob {bob_mass} kg: largest anchor separation over 10 s {worst:.2e} m, {stats:?}");
        assert!(worst <= tolerance, "bob {bob_mass} kg: {worst:.2e} m");
    }
}

#[test]
fn swinging_chain_holds_together() {
    let mut app = app(60.0);
    let joints = chain(&mut app, 20, 1.0, Vec3::new(1.0, -1.0, 0.0));
    let worst = worst_separation_over(&mut app, &joints, 180);
    println!("swinging chain: largest anchor separation over 3 s {worst:.2e} m");
    assert!(worst <= 1e-5, "{worst:.2e} m");
}

#[test]
fn hinge_stops_at_its_limit() {
    // A rod hinged at its top end about Z, with gravity pulling it towards the −0.4 rad limit.
    let mut app = app(60.0);
    let pivot = pivot(&mut app);
    let start = Quat::from_rotation_z(-0.3);
    let rod = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(1.0, 0.1, 0.1),
            Transform::from_translation(PIVOT + start * Vec3::new(0.5, 0.0, 0.0)).with_rotation(start),
        ))
        .id();
    let joint = app
        .world_mut()
        .spawn(
            RevoluteJoint::new(pivot, rod)
                .with_axis(Vec3::Z)
                .with_local_anchor1(Vec3::ZERO)
                .with_local_anchor2(Vec3::new(-0.5, 0.0, 0.0))
                .with_limits(-0.4 - 0.3, 1.0),
        )
        .id();
    // The hinge angle counts from the pose the joint first saw, so the limit −0.7 rad lies at
    // −1.0 rad from horizontal.
    step(&mut app, 240);
    let state = *app.world().get::<JointState>(joint).unwrap();
    let rotation = precise(&app, rod).rotation;
    let (axis, angle) = rotation.to_axis_angle();
    println!("{state:?}, rod at {:.6} rad about {axis}", angle * axis.z.signum());
    assert!((f64::from(state.position) + 0.7).abs() < 1e-4, "{state:?}");
    assert!((angle * axis.z.signum() + 1.0).abs() < 1e-4);
    assert!(f64::from(state.velocity).abs() < 1e-4);
    // The limit holds the rod's weight: its torque about the hinge balances m g L/2 cos(1 rad).
    let weight_torque = 1.0 * 0.1 * 0.1 * G * 0.5 * 1f64.cos();
    assert!(((f64::from(state.torque.z)).abs() - weight_torque).abs() < 1e-3 * weight_torque);
}

#[test]
fn double_pendulum_does_not_gain_energy() {
    let mut app = app(120.0);
    let pivot = pivot(&mut app);
    let mass = |app: &App, e: Entity| app.world().get::<Mass>(e).unwrap().0 as f64;
    let spawn_ball = |app: &mut App, at: Vec3| {
        app.world_mut()
            .spawn((
                RigidBody::Dynamic,
                Collider::sphere(0.05),
                Mass(1.0),
                Transform::from_translation(at),
            ))
            .id()
    };
    let p1 = PIVOT + Vec3::new(1.0, 0.0, 0.0);
    let p2 = p1 + Vec3::new(0.0, 1.0, 0.0);
    let (a, b) = (spawn_ball(&mut app, p1), spawn_ball(&mut app, p2));
    app.world_mut()
        .spawn(SphericalJoint::new(pivot, a).with_local_anchor2(Vec3::new(-1.0, 0.0, 0.0)));
    app.world_mut()
        .spawn(SphericalJoint::new(a, b).with_local_anchor2(Vec3::new(0.0, -1.0, 0.0)));
    let energy = |app: &App| -> f64 {
        [a, b]
            .iter()
            .map(|&e| {
                let s = precise(app, e);
                let m = mass(app, e);
                let inertia = 0.4 * m * 0.05 * 0.05;
                0.5 * m * s.linear_velocity.length_squared()
                    + 0.5 * inertia * s.angular_velocity.length_squared()
                    + m * G * s.translation.y
            })
            .sum()
    };
    // PreciseState is written by the first step.
    step(&mut app, 1);
    let start = energy(&app);
    let mut highest = start;
    for _ in 0..(120 * 10) {
        step(&mut app, 1);
        highest = highest.max(energy(&app));
    }
    let end = energy(&app);
    println!("energy {start:.6} J → {end:.6} J, highest {highest:.6} J");
    assert!(
        highest <= start + 1e-3 * start.abs().max(1.0),
        "gained {} J",
        highest - start
    );
    // It is a chaotic swing, not a body at rest: it moved fast at some point.
    assert!(end.is_finite());
}

#[test]
fn joined_bodies_do_not_collide_unless_asked() {
    for collide in [false, true] {
        let mut app = app(60.0);
        let a = app
            .world_mut()
            .spawn((
                RigidBody::Dynamic,
                Collider::cuboid(1.0, 1.0, 1.0),
                Transform::from_xyz(0.0, 5.0, 0.0),
            ))
            .id();
        let b = app
            .world_mut()
            .spawn((
                RigidBody::Dynamic,
                Collider::cuboid(1.0, 1.0, 1.0),
                Transform::from_xyz(0.9, 5.0, 0.0),
            ))
            .id();
        app.world_mut().spawn(
            FixedJoint::new(a, b)
                .with_local_anchor1(Vec3::new(0.45, 0.0, 0.0))
                .with_local_anchor2(Vec3::new(-0.45, 0.0, 0.0))
                .with_collisions(collide),
        );
        step(&mut app, 1);
        let pairs = app.world().resource::<Contacts>().pairs.len();
        assert_eq!(pairs > 0, collide, "collide = {collide}: {pairs} contact pairs");
    }
}

#[test]
fn joint_to_a_despawned_body_is_ignored_and_the_rest_simulates() {
    let mut app = app(60.0);
    let (bob, joint) = pendulum(&mut app, 1.0, 0.5);
    let gone = app.world_mut().spawn(RigidBody::Dynamic).id();
    let broken = app.world_mut().spawn(SphericalJoint::new(gone, bob)).id();
    app.world_mut().despawn(gone);
    step(&mut app, 30);
    let state = *app.world().get::<JointState>(broken).unwrap();
    assert_eq!(state, JointState::default());
    let good = *app.world().get::<JointState>(joint).unwrap();
    assert!(f64::from(good.anchor_separation) < 1e-5 && good.force.length() > 0.0);
}

#[test]
fn slider_falls_to_its_limit_and_keeps_its_orientation() {
    // A box on a vertical slider through the pivot, free to fall 0.5 m, then held by the limit.
    let mut app = app(60.0);
    let pivot = pivot(&mut app);
    let tilt = Quat::from_rotation_y(0.3);
    let block = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(0.2, 0.2, 0.2),
            Transform::from_translation(PIVOT).with_rotation(tilt),
            AngularVelocity(Vec3::new(0.0, 2.0, 1.0)),
        ))
        .id();
    let joint = app
        .world_mut()
        .spawn(
            PrismaticJoint::new(pivot, block)
                .with_axis(Vec3::Y)
                .with_limits(-0.5, 0.5),
        )
        .id();
    step(&mut app, 120);
    let state = *app.world().get::<JointState>(joint).unwrap();
    let body = precise(&app, block);
    println!("{state:?} {body:?}");
    assert!((f64::from(state.position) + 0.5).abs() < 1e-4, "{state:?}");
    assert!(f64::from(state.anchor_separation) < 1e-6);
    assert!((body.translation - (PIVOT.as_dvec3() - bevy_math::DVec3::Y * 0.5)).length() < 1e-4);
    assert!(body.rotation.angle_between(tilt.as_dquat()) < 1e-6);
    // At rest on the limit, the limit carries the weight.
    let weight = 1000.0 * 0.008 * 1e-3 * G;
    assert!((f64::from(-state.force.y) - weight).abs() < 1e-3 * weight, "{state:?}");
}

#[test]
fn welded_cantilever_holds_its_pose_and_carries_the_moment() {
    // A 1 m bar welded at one end to the static pivot: it must not sag or turn.
    let mut app = app(60.0);
    let pivot = pivot(&mut app);
    let start = PIVOT + Vec3::new(0.5, 0.0, 0.0);
    let bar = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(1.0, 0.1, 0.1),
            Transform::from_translation(start),
        ))
        .id();
    let joint = app
        .world_mut()
        .spawn(FixedJoint::new(pivot, bar).with_local_anchor2(Vec3::new(-0.5, 0.0, 0.0)))
        .id();
    step(&mut app, 300);
    let body = precise(&app, bar);
    let state = *app.world().get::<JointState>(joint).unwrap();
    println!("{state:?} {body:?}");
    assert!((body.translation - start.as_dvec3()).length() < 1e-6);
    assert!(body.rotation.angle_between(bevy_math::DQuat::IDENTITY) < 1e-6);
    // The weld's torque on the pivot side balances the bar's weight moment m g L/2.
    let mass = 1000.0 * 0.01 * 1.0 * 1e-3;
    let moment = mass * G * 0.5;
    assert!(
        (f64::from(state.torque.z).abs() - moment).abs() < 1e-3 * moment,
        "{state:?}"
    );
}

#[test]
fn a_bar_welded_to_a_spinning_kinematic_hub_turns_with_it() {
    // A weld to a kinematic body locks the bar's orientation to the hub's as the hub turns, not
    // one step behind it.
    let mut app = app(60.0);
    let spin = 2.0;
    let hub = app
        .world_mut()
        .spawn((
            RigidBody::Kinematic,
            Transform::from_translation(PIVOT),
            AngularVelocity(Vec3::new(0.0, spin, 0.0)),
        ))
        .id();
    let bar = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(1.0, 0.1, 0.1),
            Transform::from_translation(PIVOT + Vec3::new(0.5, 0.0, 0.0)),
        ))
        .id();
    app.world_mut()
        .spawn(FixedJoint::new(hub, bar).with_local_anchor2(Vec3::new(-0.5, 0.0, 0.0)));
    let mut worst = 0.0_f64;
    for _ in 0..60 {
        step(&mut app, 1);
        let hub_rotation = precise(&app, hub).rotation;
        worst = worst.max(precise(&app, bar).rotation.angle_between(hub_rotation));
    }
    let body = precise(&app, bar);
    println!(
        "bar off the hub's orientation by up to {worst:.2e} rad, turning at {}",
        body.angular_velocity
    );
    // One step behind would be spin · dt = 3.3e-2 rad.
    assert!(worst < 1e-6, "lags the hub by {worst} rad");
    assert!(
        (body.angular_velocity - bevy_math::DVec3::new(0.0, f64::from(spin), 0.0)).length() < 1e-6,
        "{}",
        body.angular_velocity
    );
}

/// A 1 m, 1 kg rod hinged at one end about Z, held horizontal by `drive` against gravity.
fn driven_rod(drive: JointDrive) -> (App, Entity, Entity) {
    let mut app = app(60.0);
    let pivot = pivot(&mut app);
    let rod = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(1.0, 0.1, 0.1),
            Mass(1.0),
            Transform::from_translation(PIVOT + Vec3::new(0.5, 0.0, 0.0)),
        ))
        .id();
    let joint = RevoluteJoint::new(pivot, rod)
        .with_axis(Vec3::Z)
        .with_local_anchor2(Vec3::new(-0.5, 0.0, 0.0))
        .with_drive(drive);
    let joint = app.world_mut().spawn(joint).id();
    (app, rod, joint)
}

#[test]
fn position_drive_reaches_and_holds_its_target_under_load() {
    // Raise the rod to 0.3 rad and hold it there against its weight torque (≈ 4.2 N·m).
    let (mut app, _, joint) = driven_rod(JointDrive::position(0.3, 2e4, 1e3));
    step(&mut app, 180);
    let state = *app.world().get::<JointState>(joint).unwrap();
    let weight_torque = 1.0 * G * 0.5 * 0.3f64.cos();
    println!("{state:?}; weight torque {weight_torque:.4} N·m");
    // The spring's static sag is τ/k_p ≈ 2e-4 rad.
    assert!((f64::from(state.position) - 0.3).abs() < 1e-3, "{state:?}");
    assert!(f64::from(state.velocity).abs() < 1e-4);
    assert!((f64::from(state.torque.z).abs() - weight_torque).abs() < 1e-3 * weight_torque);
}

#[test]
fn torque_bound_below_the_load_cannot_hold_and_gives_exactly_the_bound() {
    let bound = 2.0; // N·m, below the rod's 4.9 N·m weight torque when horizontal.
    let (mut app, _, joint) = driven_rod(JointDrive::position(0.0, 2e4, 1e3).with_max_force(bound));
    step(&mut app, 20);
    let state = *app.world().get::<JointState>(joint).unwrap();
    println!("{state:?}");
    assert!(state.position < -0.05, "the rod sags: {state:?}");
    assert!((f64::from(state.torque.z).abs() - f64::from(bound)).abs() < 1e-4 * f64::from(bound));
}

/// A box sunk 1 cm into the ground with a lighter box welded beside it, clear of the ground. The
/// push-out moves both as the weld holds them: each step lifts the pair by `erp` of the depth
/// left, so after n steps the sunk box is `1 cm · (1 − erp)ⁿ` deep, and the weld does not open.
/// Pushed out alone, the sunk box opened the weld, and the joint projection that closed it again
/// pulled the box back down.
#[test]
fn a_sunk_box_welded_to_another_is_lifted_out_with_it() {
    let mut app = app(60.0);
    ground(&mut app, 10.0, 0.5);
    let sunk = sunk_box(&mut app);
    let beside = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(1.0, 1.0, 1.0),
            Mass(0.1),
            Transform::from_xyz(1.2, 0.89, 0.0),
        ))
        .id();
    let weld = app
        .world_mut()
        .spawn(
            FixedJoint::new(sunk, beside)
                .with_local_anchor1(Vec3::new(0.6, 0.2, 0.0))
                .with_local_anchor2(Vec3::new(-0.6, -0.2, 0.0)),
        )
        .id();
    for n in 1..=20 {
        step(&mut app, 1);
        let (expected, depth) = sunk_depths(&app, sunk, n);
        let opened = f64::from(app.world().get::<JointState>(weld).unwrap().anchor_separation);
        assert!(
            (depth - expected).abs() < 1e-6,
            "step {n}: {depth} m deep, not {expected}"
        );
        assert!(opened < 1e-9, "step {n}: the weld opened by {opened} m");
    }
}
