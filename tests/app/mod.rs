//! A headless app stepping physics by hand, as tests and tools do.
#![allow(dead_code)]

pub mod joints;

use std::time::Duration;

use bevy_app::prelude::*;
use bevy_canal::prelude::*;
use bevy_ecs::prelude::*;
use bevy_math::EulerRot;
use bevy_time::{Fixed, Time, TimePlugin};

pub const G: f64 = 9.81;

/// A headless app at `hz` steps per second.
pub fn app(hz: f64) -> App {
    let mut app = App::new();
    app.add_plugins((
        TaskPoolPlugin::default(),
        TimePlugin,
        bevy_transform::TransformPlugin,
        CanalPhysicsPlugin,
    ));
    app.insert_resource(Time::<Fixed>::from_duration(Duration::from_secs_f64(1.0 / hz)));
    app
}

/// The time step the app really uses: `Duration` holds whole nanoseconds, so 1/60 s is
/// 16 666 667 ns.
pub fn dt(app: &App) -> f64 {
    app.world().resource::<Time<Fixed>>().timestep().as_secs_f64()
}

/// Runs `steps` physics steps.
pub fn step(app: &mut App, steps: usize) {
    for _ in 0..steps {
        app.world_mut().run_schedule(PhysicsSchedule);
    }
}

/// A static ground slab whose top face is the plane y = 0, `size` m wide.
pub fn ground(app: &mut App, size: f32, friction: f32) -> Entity {
    app.world_mut()
        .spawn((
            RigidBody::Static,
            Collider::cuboid(size, 1.0, size),
            Friction::new(friction),
            Transform::from_xyz(0.0, -0.5, 0.0),
        ))
        .id()
}

/// How deep the box of [`sunk_box`] starts in the ground, m.
pub const SUNK: f64 = 0.01;

/// A unit box (default friction) sunk [`SUNK`] into the ground of [`ground`].
pub fn sunk_box(app: &mut App) -> Entity {
    app.world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(1.0, 1.0, 1.0),
            bevy_transform::components::Transform::from_xyz(0.0, 0.5 - SUNK as f32, 0.0),
        ))
        .id()
}

/// How deep the box of [`sunk_box`] should be after `steps` push-outs, each lifting it by `erp` of
/// the depth left, m; and how deep it is.
pub fn sunk_depths(app: &App, sunk: Entity, steps: i32) -> (f64, f64) {
    let erp = PhysicsSettings::default().solver.erp;
    let first = 0.5 - f64::from(0.5 - SUNK as f32);
    (first * (1.0 - erp).powi(steps), 0.5 - precise(app, sunk).translation.y)
}

/// `n` unit boxes (default friction) stacked on the ground, resting face on face; bottom first.
pub fn box_stack(app: &mut App, n: usize) -> Vec<Entity> {
    (0..n)
        .map(|i| {
            app.world_mut()
                .spawn((
                    RigidBody::Dynamic,
                    Collider::cuboid(1.0, 1.0, 1.0),
                    Transform::from_xyz(0.0, 0.5 + i as f32, 0.0),
                ))
                .id()
        })
        .collect()
}

/// An app at 60 Hz solving to `tolerance` (m/s), whose sunk box or stack starts on a ground slab
/// `ground_size` m wide.
pub fn loose_app(tolerance: f64, ground_size: f32) -> App {
    let mut app = app(60.0);
    let mut settings = PhysicsSettings::default();
    settings.solver.tolerance = tolerance;
    app.insert_resource(settings);
    ground(&mut app, ground_size, 0.5);
    app
}

/// The deepest penetration among this step's contact points, m.
pub fn deepest_penetration(app: &App) -> f32 {
    let contacts = app.world().resource::<Contacts>();
    contacts
        .pairs
        .iter()
        .flat_map(|p| p.points.iter())
        .map(|p| p.penetration)
        .fold(0.0, f32::max)
}

/// Steps `app` `steps` times, one at a time, and returns the deepest penetration among the
/// contact points of any of those steps, m.
pub fn deepest_over(app: &mut App, steps: usize) -> f32 {
    (0..steps)
        .map(|_| {
            step(app, 1);
            deepest_penetration(app)
        })
        .fold(0.0, f32::max)
}

/// Distance covered by semi-implicit Euler from speed `v0` under the constant deceleration `a`
/// until it stops: the velocity falls by `a h` a step, and each step moves by the new velocity.
pub fn discrete_stop_distance(v0: f64, a: f64, h: f64) -> f64 {
    let steps = (v0 / (a * h)).floor() as usize;
    (1..=steps).map(|n| (v0 - n as f64 * a * h) * h).sum()
}

/// A displacement `moved` split into its part along the unit direction `down` and the length of
/// the rest, m.
pub fn along_and_across(moved: bevy_math::DVec3, down: bevy_math::DVec3) -> (f64, f64) {
    let along = moved.dot(down);
    (along, (moved - down * along).length())
}

pub fn precise(app: &App, entity: Entity) -> PreciseState {
    *app.world().get::<PreciseState>(entity).expect("a rigid body")
}

pub fn transform(app: &App, entity: Entity) -> Transform {
    *app.world().get::<Transform>(entity).expect("a transform")
}

pub fn stats(app: &App) -> SolverStats {
    *app.world().resource::<SolverStats>()
}

/// Drops a ball of radius 0.1 m and restitution `e` from `h0` m (its lowest point) onto ground of
/// the same restitution, stepping at `hz`; the peak height of its first rebound, or `None` if it
/// has not bounced within 4 s.
pub fn first_rebound(e: f64, h0: f64, hz: f64) -> Option<f64> {
    let radius = 0.1_f32;
    let mut app = app(hz);
    app.world_mut().spawn((
        RigidBody::Static,
        Collider::cuboid(10.0, 1.0, 10.0),
        Restitution::new(e as f32),
        Transform::from_xyz(0.0, -0.5, 0.0),
    ));
    let ball = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::sphere(radius),
            Restitution::new(e as f32),
            Transform::from_xyz(0.0, radius + h0 as f32, 0.0),
        ))
        .id();
    let (mut bounced, mut peak) = (false, 0.0_f64);
    for _ in 0..(4.0 * hz) as usize {
        step(&mut app, 1);
        let state = precise(&app, ball);
        bounced |= state.linear_velocity.y > 0.0;
        if bounced {
            peak = peak.max(state.translation.y - f64::from(radius));
            if state.linear_velocity.y < 0.0 {
                break;
            }
        }
    }
    bounced.then_some(peak)
}

/// A prism on a regular polygon of `sides` corners, `radius` round and `height` tall, as a hull.
pub fn prism_hull(sides: usize, radius: f32, height: f32) -> Collider {
    let corners: Vec<Vec3> = (0..2 * sides)
        .map(|k| {
            let angle = (k / 2) as f32 * std::f32::consts::TAU / sides as f32;
            Vec3::new(radius * angle.cos(), [-0.5, 0.5][k % 2] * height, radius * angle.sin())
        })
        .collect();
    Collider::convex_hull(&corners).unwrap()
}

/// The deepest contact of `throws` throws of `shape` onto the floor `spawn_floor` makes: each
/// dropped from 1.5 m over the origin, tilted and spinning its own way, and stepped for 3 s as
/// it tumbles and comes to rest.
pub fn deepest_of_throws(spawn_floor: impl Fn(&mut App), shape: &Collider, throws: usize) -> f32 {
    let mut deepest = 0.0f32;
    for throw in 0..throws {
        let mut app = app(60.0);
        spawn_floor(&mut app);
        let t = throw as f32;
        app.world_mut().spawn((
            RigidBody::Dynamic,
            shape.clone(),
            Friction::new(0.5),
            Transform::from_xyz(0.0, 1.5, 0.0).with_rotation(Quat::from_euler(
                EulerRot::XYZ,
                0.3 + 0.7 * t,
                0.2 * t,
                0.5 + 0.3 * t,
            )),
            AngularVelocity(Vec3::new(3.0 - t, 2.0 + 0.5 * t, t - 1.0)),
        ));
        deepest = deepest.max(deepest_over(&mut app, 180));
    }
    deepest
}
