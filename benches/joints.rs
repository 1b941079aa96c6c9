//! Jointed scenes through the plugin: a 20-link chain swinging from 45°, the same chain hanging
//! with a bob 1000× its links' mass, and the shipped URDF arm holding a bent pose with drives.
//!
//! `cargo bench --bench joints` prints, before criterion's timings, one row per scene: bodies,
//! joints, median and worst time per step, the largest joint anchor separation and the worst
//! NCP residual over 300 steps. `cargo bench --bench joints -- nomatch` prints only the table.

use std::time::{Duration, Instant};

use bevy_app::prelude::*;
use bevy_canal::prelude::*;
use bevy_canal::urdf::{UrdfOptions, spawn_urdf, urdf_rs};
use bevy_ecs::prelude::*;
use bevy_time::{Fixed, Time, TimePlugin};
use criterion::{Criterion, criterion_group, criterion_main};

fn app() -> App {
    let mut app = App::new();
    app.add_plugins((
        TaskPoolPlugin::default(),
        TimePlugin,
        bevy_transform::TransformPlugin,
        CanalPhysicsPlugin,
    ));
    app.insert_resource(Time::<Fixed>::from_hz(60.0));
    app
}

/// 20 links of 1 kg, 0.1 m each, from a fixed pivot along `direction`, ending in a bob.
fn chain(bob_mass: f32, direction: Vec3) -> (App, Vec<Entity>) {
    let mut app = app();
    let top = Vec3::new(0.0, 5.0, 0.0);
    let mut above = app
        .world_mut()
        .spawn((RigidBody::Static, Transform::from_translation(top)))
        .id();
    let direction = direction.normalize();
    let rotation = Quat::from_rotation_arc(Vec3::NEG_Y, direction);
    let (length, mut anchor_above, mut joints) = (0.1, Vec3::ZERO, Vec::new());
    for i in 0..20 {
        let link = app
            .world_mut()
            .spawn((
                RigidBody::Dynamic,
                Collider::cuboid(0.02, length, 0.02),
                Mass(1.0),
                Transform::from_translation(top + direction * length * (i as f32 + 0.5)).with_rotation(rotation),
            ))
            .id();
        let joint = SphericalJoint::new(above, link)
            .with_local_anchor1(anchor_above)
            .with_local_anchor2(Vec3::new(0.0, length / 2.0, 0.0));
        joints.push(app.world_mut().spawn(joint).id());
        above = link;
        anchor_above = Vec3::new(0.0, -length / 2.0, 0.0);
    }
    let bob = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::sphere(0.05),
            Mass(bob_mass),
            Transform::from_translation(top + direction * (length * 20.0 + 0.05)),
        ))
        .id();
    let joint = SphericalJoint::new(above, bob)
        .with_local_anchor1(anchor_above)
        .with_local_anchor2(-direction * 0.05);
    joints.push(app.world_mut().spawn(joint).id());
    (app, joints)
}

/// The shipped arm on a table, driven to a bent pose under gravity, a box resting beside it.
fn arm() -> (App, Vec<Entity>) {
    let mut app = app();
    app.insert_resource(Gravity(Vec3::new(0.0, 0.0, -9.81)));
    app.world_mut().spawn((
        RigidBody::Static,
        Collider::cuboid(1.6, 1.6, 0.05),
        Transform::from_xyz(0.0, 0.0, -0.025),
    ));
    app.world_mut().spawn((
        RigidBody::Dynamic,
        Collider::cuboid(0.1, 0.1, 0.1),
        Mass(0.5),
        Transform::from_xyz(0.45, 0.0, 0.05),
    ));
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/assets");
    let robot = urdf_rs::read_file(format!("{dir}/canal_arm.urdf")).expect("URDF");
    let options = UrdfOptions {
        mesh_directory: dir.into(),
        ..Default::default()
    };
    let spawned = spawn_urdf(app.world_mut(), &robot, &options).expect("arm");
    let pose = [("shoulder", 0.5), ("elbow", 1.0), ("wrist_2", 0.8)];
    for name in &spawned.actuated {
        let target = pose.iter().find(|(n, _)| n == name).map_or(0.0, |(_, t)| *t);
        let mut entity = app.world_mut().entity_mut(spawned.joints[name]);
        if let Some(mut hinge) = entity.get_mut::<RevoluteJoint>() {
            hinge.drive = Some(JointDrive::position(target, 2e4, 1e3).with_max_force(200.0));
        } else if let Some(mut slider) = entity.get_mut::<PrismaticJoint>() {
            slider.drive = Some(JointDrive::position(0.0, 2e3, 50.0));
        }
    }
    let joints = spawned.actuated.iter().map(|n| spawned.joints[n]).collect();
    (app, joints)
}

fn scenes() -> Vec<(&'static str, App, Vec<Entity>)> {
    let (swinging, j1) = chain(1.0, Vec3::new(1.0, -1.0, 0.0));
    let (heavy, j2) = chain(1000.0, Vec3::NEG_Y);
    let (robot, j3) = arm();
    vec![
        ("chain20 swinging", swinging, j1),
        ("chain20 + 1000x bob", heavy, j2),
        ("urdf arm", robot, j3),
    ]
}

fn summary() {
    println!(
        "{:<20} {:>6} {:>6} {:>11} {:>10} {:>14} {:>10}",
        "scene", "bodies", "joints", "median ms", "worst ms", "max gap m", "worst ncp"
    );
    for (name, mut app, joints) in scenes() {
        let (mut times, mut gap, mut ncp) = (Vec::new(), 0.0_f32, 0.0_f64);
        for _ in 0..300 {
            let start = Instant::now();
            app.world_mut().run_schedule(PhysicsSchedule);
            times.push(start.elapsed());
            for &joint in &joints {
                gap = gap.max(app.world().get::<JointState>(joint).unwrap().anchor_separation);
            }
            ncp = ncp.max(app.world().resource::<SolverStats>().ncp_residual);
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let bodies = app.world().resource::<SolverStats>().bodies;
        println!(
            "{name:<20} {bodies:>6} {:>6} {:>11.3} {:>10.3} {gap:>14.1e} {ncp:>10.1e}",
            joints.len(),
            ms(times[times.len() / 2]),
            ms(times[times.len() - 1]),
        );
    }
}

fn bench(c: &mut Criterion) {
    summary();
    let mut group = c.benchmark_group("joints");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(300));
    for (name, mut app, _) in scenes() {
        group.bench_function(name, |b| b.iter(|| app.world_mut().run_schedule(PhysicsSchedule)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
