//! Rotation against Euler's equations, `I ω̇ = τ − ω × I ω`: a free body tumbling off its
//! principal axes keeps its angular momentum, spin about the intermediate axis is unstable and
//! about the major axis stable (the tennis-racket theorem), and a top held at a pivot with its
//! axis level precesses at `m g d / (I₃ ω₃)`.

mod app;

use app::*;
use bevy_app::App;
use bevy_canal::prelude::*;
use bevy_ecs::prelude::*;
use bevy_math::{DMat3, DVec3};

/// A 0.1 × 0.4 × 0.8 m box of unit density, weightless, turning at `spin` (world frame).
fn weightless_box(spin: DVec3, turn: Quat) -> (App, Entity, DMat3) {
    let mut app = app(60.0);
    app.insert_resource(Gravity(Vec3::ZERO));
    let size = DVec3::new(0.1, 0.4, 0.8);
    let body = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(size.x as f32, size.y as f32, size.z as f32),
            Transform::from_rotation(turn),
            AngularVelocity(spin.as_vec3()),
        ))
        .id();
    let mass = size.x * size.y * size.z;
    let squares = size * size;
    let inertia = DMat3::from_diagonal(
        DVec3::new(squares.y + squares.z, squares.x + squares.z, squares.x + squares.y) * (mass / 12.0),
    );
    (app, body, inertia)
}

/// The body's angular velocity in its own frame.
fn body_spin(app: &App, body: Entity) -> DVec3 {
    let state = precise(app, body);
    state.rotation.inverse() * state.angular_velocity
}

#[test]
fn a_free_body_tumbling_off_its_axes_keeps_its_angular_momentum() {
    let (mut app, body, inertia) = weightless_box(DVec3::new(1.0, 2.0, 3.0), Quat::from_rotation_x(0.3));
    let momentum = |app: &App| {
        let w = body_spin(app, body);
        (precise(app, body).rotation * (inertia * w), 0.5 * w.dot(inertia * w))
    };
    step(&mut app, 1);
    let (l0, e0) = momentum(&app);
    let (mut size, mut direction, mut energy) = (0.0_f64, 0.0_f64, 0.0_f64);
    for _ in 0..3600 {
        step(&mut app, 1);
        let (l, e) = momentum(&app);
        size = size.max((l.length() / l0.length() - 1.0).abs());
        direction = direction.max(l.angle_between(l0));
        energy = energy.max((e / e0 - 1.0).abs());
    }
    println!(
        "over 60 s: |L| within {size:.1e} of its start, its direction within {direction:.1e} rad, energy within {energy:.1e}"
    );
    // The midpoint rule keeps the energy and |L|; the direction wanders by O(dt), but stays bounded.
    assert!(size < 1e-6 && energy < 1e-6, "|L| off by {size}, energy by {energy}");
    assert!(direction < 0.05, "angular momentum turned by {direction} rad");
}

/// The smallest component, over `seconds`, of a box's own spin along its `axis`, started at
/// 5 rad/s about that axis with 0.01 rad/s about another.
fn least_spin_about(axis: DVec3, nudge: DVec3, seconds: usize) -> f64 {
    let (mut app, body, _) = weightless_box(axis * 5.0 + nudge * 0.01, Quat::IDENTITY);
    (0..seconds * 60)
        .map(|_| {
            step(&mut app, 1);
            body_spin(&app, body).dot(axis)
        })
        .fold(f64::INFINITY, f64::min)
}

#[test]
fn spin_about_the_intermediate_axis_flips_and_about_the_major_axis_holds() {
    let intermediate = least_spin_about(DVec3::Y, DVec3::X, 5);
    let major = least_spin_about(DVec3::X, DVec3::Y, 5);
    println!("least own spin over 5 s: intermediate axis {intermediate:.4} rad/s, major axis {major:.4} rad/s");
    // The flip grows at 3.6 /s from 0.01 rad/s: it turns over within about two seconds.
    assert!(intermediate < -4.9, "did not flip: {intermediate} rad/s");
    assert!(major > 4.99, "the major axis wandered: {major} rad/s");
}

/// A disc of radius 0.2 m spun at 40 rad/s about its axle, held level at a pivot 0.1 m from its
/// centre and set turning at the steady precession rate `m g d / (I₃ ω₃)` (exact for a level
/// axis): how far its axle has turned about the vertical after 2 s at `hz`, that rate times 2 s,
/// and how far the axle's tip has dipped.
fn level_top(hz: f64) -> (f64, f64, f64) {
    let (radius, thickness, reach, spin) = (0.2_f64, 0.04_f64, 0.1_f64, 40.0_f64);
    let precession = G * reach / (0.5 * radius * radius * spin);
    let mut app = app(hz);
    let pivot = app.world_mut().spawn((RigidBody::Static, Transform::default())).id();
    let level = Quat::from_rotation_z(-std::f32::consts::FRAC_PI_2);
    let top = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cylinder(radius as f32, thickness as f32),
            ColliderDensity(1000.0),
            Transform::from_xyz(reach as f32, 0.0, 0.0).with_rotation(level),
            AngularVelocity(Vec3::new(spin as f32, precession as f32, 0.0)),
            LinearVelocity(Vec3::new(0.0, 0.0, -(precession * reach) as f32)),
        ))
        .id();
    app.world_mut()
        .spawn(SphericalJoint::new(pivot, top).with_local_anchor2(Vec3::new(0.0, -reach as f32, 0.0)));
    let steps = (2.0 * hz) as usize;
    let mut dip = 0.0_f64;
    for _ in 0..steps {
        step(&mut app, 1);
        dip = dip.max(-(precise(&app, top).rotation * DVec3::Y).y);
    }
    let axle = precise(&app, top).rotation * DVec3::Y;
    ((-axle.z).atan2(axle.x), precession * steps as f64 * dt(&app), dip)
}

#[test]
fn a_level_top_precesses_at_m_g_d_over_i3_omega3() {
    let mut dips = Vec::new();
    for (hz, within) in [(240.0, 1e-2), (960.0, 2e-3)] {
        let (turned, expected, dip) = level_top(hz);
        println!("{hz} Hz: turned {turned:.5} rad in 2 s, expected {expected:.5}; the axle dipped {dip:.3} rad");
        assert!(
            (turned - expected).abs() < within * expected,
            "{hz} Hz: turned {turned} rad, expected {expected}"
        );
        dips.push(dip);
    }
    // The axle sinks by the integrator's first-order error in the fast spin, not by physics: it
    // shrinks with the step.
    assert!(dips[1] < 0.3 * dips[0], "dipped {dips:?}");
}
