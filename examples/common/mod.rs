//! What every headless example shares: the app and a once-per-simulated-second report.

use std::time::{Duration, Instant};

use bevy_app::prelude::*;
use bevy_canal::prelude::*;
use bevy_time::{Fixed, Time, TimePlugin};

/// A headless app stepping at 60 Hz.
pub fn app() -> App {
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

/// A static slab whose top face is the plane y = 0.
#[allow(dead_code)] // not every example has a floor
pub fn ground(app: &mut App, size: f32) {
    app.world_mut().spawn((
        RigidBody::Static,
        Collider::cuboid(size, 1.0, size),
        Transform::from_xyz(0.0, -0.5, 0.0),
    ));
}

/// Steps `seconds` of simulated time, printing once per simulated second the solver statistics
/// and `describe`'s scene-specific line.
#[allow(dead_code)]
pub fn run(app: &mut App, seconds: u32, describe: impl Fn(&App) -> String) {
    run_controlled(app, seconds, |_, _| {}, describe);
}

/// [`run`], calling `control(app, t)` before every step with the simulated time `t` in seconds.
pub fn run_controlled(
    app: &mut App,
    seconds: u32,
    mut control: impl FnMut(&mut App, f32),
    describe: impl Fn(&App) -> String,
) {
    let steps_per_second = 60;
    println!(
        "{:>4} {:>6} {:>8} {:>7} {:>6} {:>7} {:>9} {:>9} {:>5} {:>8}  scene",
        "t s", "bodies", "contacts", "islands", "outer", "newton", "ncp m/s", "feas m/s", "conv", "ms/step"
    );
    for second in 1..=seconds {
        let (mut outer, mut newton, mut ncp, mut feasibility, mut converged) = (0, 0, 0.0_f64, 0.0_f64, true);
        let mut wall = Duration::ZERO;
        for k in 0..steps_per_second {
            control(app, (second - 1) as f32 + k as f32 / steps_per_second as f32);
            let start = Instant::now();
            app.world_mut().run_schedule(PhysicsSchedule);
            wall += start.elapsed();
            let stats = app.world().resource::<SolverStats>();
            outer += stats.outer_iterations;
            newton += stats.newton_iterations;
            ncp = ncp.max(stats.ncp_residual);
            feasibility = feasibility.max(stats.feasibility_residual);
            converged &= stats.converged;
        }
        let stats = *app.world().resource::<SolverStats>();
        println!(
            "{:>4} {:>6} {:>8} {:>7} {:>6.1} {:>7.1} {:>9.1e} {:>9.1e} {:>5} {:>8.3}  {}",
            second,
            stats.bodies,
            stats.contacts,
            stats.islands,
            outer as f64 / steps_per_second as f64,
            newton as f64 / steps_per_second as f64,
            ncp,
            feasibility,
            if converged { "yes" } else { "NO" },
            wall.as_secs_f64() * 1e3 / steps_per_second as f64,
            describe(app),
        );
    }
}
