//! Jointed scenes through the plugin: a 20-link chain swinging from 45°, the same chain hanging
//! with a bob 1000× its links' mass, and the shipped URDF arm holding a bent pose with drives.
//!
//! `cargo bench --bench joints` prints, before criterion's timings, one row per scene: bodies,
//! joints, median and worst time per step, the largest joint anchor separation and the worst
//! NCP residual over 300 steps. `cargo bench --bench joints -- nomatch` prints only the table.

use std::time::{Duration, Instant};

use bevy_app::prelude::*;
use bevy_canal::prelude::*;
use bevy_ecs::prelude::*;
use criterion::{Criterion, criterion_group, criterion_main};

#[path = "../tests/app/mod.rs"]
mod app;
use app::joints;

/// A 20-link chain from the pivot along `direction`, ending in a bob of `bob_mass` kg.
fn chain(bob_mass: f32, direction: Vec3) -> (App, Vec<Entity>) {
    let mut app = app::app(60.0);
    let joints = joints::chain(&mut app, 20, bob_mass, direction);
    (app, joints)
}

/// The shipped arm on a table, driven to a bent pose under gravity, a box resting beside it.
fn arm() -> (App, Vec<Entity>) {
    let mut app = app::app(60.0);
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
    let (_, spawned) = joints::spawn_arm(&mut app);
    joints::drive_arm(
        &mut app,
        &spawned,
        &[("shoulder", 0.5), ("elbow", 1.0), ("wrist_2", 0.8)],
    );
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
