//! Rolling and torsional friction (`RollingFriction`), checked against the motion of a solid
//! ball of radius R: rolling on flat ground it slows at (5/7) g μ_r / R; on a slope it holds
//! still up to tan θ = μ_r / R and beyond rolls down at (5/7) g (sin θ − (μ_r / R) cos θ);
//! spinning in place its spin falls at μ_s m g / I = (5/2) g μ_s / R².

mod app;

use app::*;
use bevy_app::App;
use bevy_canal::prelude::*;
use bevy_ecs::prelude::*;
use bevy_math::DVec3;

const RADIUS: f64 = 0.1;

/// A ball of [`RADIUS`] with `resistance`, touching a static slab of the same resistance whose
/// top face is turned by `tilt` about the origin; both at μ = 0.5. Returns the ball, its centre
/// and the slab.
fn ball_on_slab(tilt: Quat, resistance: RollingFriction) -> (App, Entity, DVec3, Entity) {
    let mut app = app(60.0);
    let up = (tilt * Vec3::Y).as_dvec3();
    let slab = app
        .world_mut()
        .spawn((
            RigidBody::Static,
            Collider::cuboid(40.0, 1.0, 40.0),
            Friction::new(0.5),
            resistance,
            Transform::from_translation((up * -0.5).as_vec3()).with_rotation(tilt),
        ))
        .id();
    let centre = up * RADIUS;
    let ball = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::sphere(RADIUS as f32),
            Friction::new(0.5),
            resistance,
            Transform::from_translation(centre.as_vec3()),
        ))
        .id();
    (app, ball, centre, slab)
}

/// A solid cylinder lying on its side touches along a line, two points of one manifold: their
/// normal forces together bound its rolling torque, and it slows at (2/3) g μ_r / R.
#[test]
fn a_rolling_cylinder_stops_at_three_r_v0_squared_over_four_mu_r_g() {
    let (radius, mu_r, v0) = (0.3, 0.01, 1.5);
    let resistance = RollingFriction::new(mu_r as f32, 0.0);
    let mut app = app(60.0);
    let slab = ground(&mut app, 40.0, 0.5);
    app.world_mut().entity_mut(slab).insert(resistance);
    let lying = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    let start = DVec3::new(0.0, radius, 0.0);
    let cylinder = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cylinder(radius as f32, 1.0),
            Friction::new(0.5),
            resistance,
            Transform::from_translation(start.as_vec3()).with_rotation(lying),
            LinearVelocity(Vec3::new(v0 as f32, 0.0, 0.0)),
            AngularVelocity(Vec3::new(0.0, 0.0, -(v0 / radius) as f32)),
        ))
        .id();
    let a = 2.0 / 3.0 * G * mu_r / radius;
    let mut points = 0;
    // It stops after v0 / a = 6.9 s.
    for k in 0..480 {
        step(&mut app, 1);
        points = points.max(stats(&app).contacts);
        if k == 60 {
            // While it rolls, `Contacts` reports the whole bound, resisting its turn about −z.
            let contacts = app.world().resource::<Contacts>();
            let pair = contacts.of(cylinder).next().expect("it touches the ground");
            let sign = if pair.entity1 == cylinder { 1.0 } else { -1.0 };
            let torque = pair.resisting_torque_impulse * sign;
            let load: f32 = pair.points.iter().map(|p| p.normal_impulse).sum();
            println!("rolling torque impulse {torque} N·m·s on a load of {load} N·s");
            assert!(
                (torque.z - mu_r as f32 * load).abs() < 1e-5 * mu_r as f32 * load,
                "{torque}"
            );
            assert!(torque.x.abs() < 1e-9 && torque.y.abs() < 1e-9, "{torque}");
        }
    }
    let state = precise(&app, cylinder);
    let travelled = (state.translation - start).x;
    let expected = discrete_stop_distance(v0, a, dt(&app));
    println!("stopped after {travelled:.6} m, expected {expected:.6} m, on up to {points} points");
    assert!(points >= 2, "a line contact: {points} points");
    assert!(
        (travelled - expected).abs() < 1e-4 * expected,
        "rolled {travelled} m, expected {expected}"
    );
    assert!(
        state.linear_velocity.length() < 1e-6,
        "still moving: {}",
        state.linear_velocity
    );
}

/// Where the ball is after two seconds on a slope of `degrees`, released at rest: along the slope
/// (downhill positive) and off its line, m; the steps taken and the time step.
fn release_on_slope(degrees: f64, mu_r: f64) -> (f64, f64, usize, f64) {
    let tilt = Quat::from_rotation_z((degrees as f32).to_radians());
    let (mut app, ball, start, _) = ball_on_slab(tilt, RollingFriction::new(mu_r as f32, 0.0));
    let down = (tilt * Vec3::NEG_X).as_dvec3();
    let steps = 120;
    step(&mut app, steps);
    let (along, across) = along_and_across(precise(&app, ball).translation - start, down);
    (along, across, steps, dt(&app))
}

#[test]
fn a_ball_holds_on_a_slope_up_to_tan_theta_equal_to_mu_r_over_r() {
    let mu_r = 0.01;
    // The boundary: tan θ = 0.1, θ = 5.71°.
    let (along, across, _, _) = release_on_slope(5.5, mu_r);
    println!("5.5°: moved {along:.2e} m down, {across:.2e} m across");
    assert!(
        along.abs() < 1e-6 && across < 1e-6,
        "crept {along} m down, {across} m across"
    );

    let theta = 6.5_f64.to_radians();
    let (along, across, steps, h) = release_on_slope(6.5, mu_r);
    let a = 5.0 / 7.0 * G * (theta.sin() - mu_r / RADIUS * theta.cos());
    // Semi-implicit Euler from rest: s_n = a h² n(n+1)/2.
    let n = steps as f64;
    let expected = a * h * h * n * (n + 1.0) / 2.0;
    println!("6.5°: rolled {along:.6} m, expected {expected:.6} m, {across:.1e} m across");
    assert!(
        (along - expected).abs() < 1e-4 * expected,
        "rolled {along} m, expected {expected}"
    );
    assert!(across < 1e-6, "{across} m off its line");
}

#[test]
fn a_spinning_ball_stops_turning_at_five_halves_g_mu_s_over_r_squared() {
    let mu_s = 0.002;
    let (mut app, ball, start, _) = ball_on_slab(Quat::IDENTITY, RollingFriction::new(0.0, mu_s as f32));
    let spin = 10.0;
    app.world_mut()
        .entity_mut(ball)
        .insert(AngularVelocity(Vec3::new(0.0, spin as f32, 0.0)));
    let h = dt(&app);
    let alpha = 2.5 * G * mu_s / (RADIUS * RADIUS);
    let steps = 60;
    step(&mut app, steps);
    let after_one_second = precise(&app, ball).angular_velocity.y;
    let expected = spin - steps as f64 * alpha * h;
    println!("spin after 1 s: {after_one_second:.6} rad/s, expected {expected:.6}");
    assert!(
        (after_one_second - expected).abs() < 1e-5 * spin,
        "{after_one_second} rad/s, expected {expected}"
    );
    step(&mut app, 120);
    let state = precise(&app, ball);
    assert!(
        state.angular_velocity.length() < 1e-6,
        "still spinning: {}",
        state.angular_velocity
    );
    assert!((state.translation - start).length() < 1e-6, "wandered off");
}

#[test]
fn a_negative_or_non_finite_rolling_friction_counts_as_none() {
    let mut app = app(60.0);
    ground(&mut app, 40.0, 0.5);
    let v0 = 1.0_f32;
    let balls: Vec<Entity> = [
        RollingFriction::new(f32::NAN, 0.0),
        RollingFriction::new(-1e-3, 0.0),
        RollingFriction::new(f32::INFINITY, f32::INFINITY),
    ]
    .into_iter()
    .enumerate()
    .map(|(k, resistance)| {
        app.world_mut()
            .spawn((
                RigidBody::Dynamic,
                Collider::sphere(RADIUS as f32),
                resistance,
                Transform::from_xyz(0.0, RADIUS as f32, 2.0 * k as f32),
                LinearVelocity(Vec3::new(v0, 0.0, 0.0)),
                AngularVelocity(Vec3::new(0.0, 0.0, -v0 / RADIUS as f32)),
            ))
            .id()
    })
    .collect();
    step(&mut app, 60);
    assert!(stats(&app).converged);
    for ball in balls {
        let speed = precise(&app, ball).linear_velocity.x;
        assert!((speed - f64::from(v0)).abs() < 1e-6, "{ball}: {speed} m/s");
    }
}

/// Torsional friction acts on the spin relative to what the ball stands on: a ball resting on the
/// axis of a kinematic turntable is spun up at (5/2) g μ_s / R² until it turns with the table.
#[test]
fn a_turntable_spins_a_ball_up_at_five_halves_g_mu_s_over_r_squared() {
    let (mu_s, table_spin) = (0.002, 3.0);
    let (mut app, ball, start, table) = ball_on_slab(Quat::IDENTITY, RollingFriction::new(0.0, mu_s as f32));
    app.world_mut().entity_mut(table).insert((
        RigidBody::Kinematic,
        AngularVelocity(Vec3::new(0.0, table_spin as f32, 0.0)),
    ));
    let h = dt(&app);
    let alpha = 2.5 * G * mu_s / (RADIUS * RADIUS);
    // It catches the table after 3 / 4.9 = 0.61 s.
    let steps = 30;
    step(&mut app, steps);
    let after_half_a_second = precise(&app, ball).angular_velocity.y;
    let expected = steps as f64 * alpha * h;
    println!("spin after 0.5 s: {after_half_a_second:.6} rad/s, expected {expected:.6}");
    assert!(
        (after_half_a_second - expected).abs() < 1e-5 * table_spin,
        "{after_half_a_second} rad/s, expected {expected}"
    );
    step(&mut app, 60);
    let state = precise(&app, ball);
    println!("spin after 1.5 s: {:.9} rad/s", state.angular_velocity.y);
    assert!(
        (state.angular_velocity - DVec3::new(0.0, table_spin, 0.0)).length() < 1e-6,
        "not turning with the table: {}",
        state.angular_velocity
    );
    assert!((state.translation - start).length() < 1e-6, "wandered off");
}
