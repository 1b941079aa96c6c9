//! A headless app stepping physics by hand, as tests and tools do.
#![allow(dead_code)]

pub mod joints;

use std::time::Duration;

use bevy_app::prelude::*;
use bevy_canal::prelude::*;
use bevy_ecs::prelude::*;
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

pub fn precise(app: &App, entity: Entity) -> PreciseState {
    *app.world().get::<PreciseState>(entity).expect("a rigid body")
}

pub fn transform(app: &App, entity: Entity) -> Transform {
    *app.world().get::<Transform>(entity).expect("a transform")
}

pub fn stats(app: &App) -> SolverStats {
    *app.world().resource::<SolverStats>()
}
