//! [`CanalPhysicsPlugin`]: the schedule, its system sets and the resources it adds.

use bevy_app::prelude::*;
use bevy_ecs::prelude::*;
use bevy_ecs::schedule::{ScheduleLabel, SingleThreadedExecutor};

use crate::components::*;
use crate::pipeline::{self, PhysicsWorld};
use crate::resources::{Contacts, Gravity, PhysicsSettings, SolverStats};

/// Exact rigid-body physics. Runs one step of [`PhysicsSchedule`] per fixed tick, from
/// `FixedPostUpdate`, before transform propagation.
///
/// ```
/// use bevy_app::prelude::*;
/// use bevy_canal::prelude::*;
/// use bevy_ecs::prelude::*;
///
/// let mut app = App::new();
/// app.add_plugins((bevy_time::TimePlugin, CanalPhysicsPlugin));
/// app.world_mut().spawn((RigidBody::Dynamic, Collider::cuboid(1.0, 1.0, 1.0), Transform::from_xyz(0.0, 5.0, 0.0)));
/// app.world_mut().run_schedule(PhysicsSchedule); // one step of Time::<Fixed>::timestep()
/// ```
pub struct CanalPhysicsPlugin;

/// One physics step of `Time::<Fixed>::timestep()`. Run it by hand (`world.run_schedule`) to step
/// headless tools, tests and benchmarks.
#[derive(ScheduleLabel, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PhysicsSchedule;

/// The stages of a step, in data-flow order, for ordering your own systems inside
/// [`PhysicsSchedule`].
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PhysicsSet {
    /// Bodies and colliders are read and validated.
    Prepare,
    /// Candidate pairs are found.
    BroadPhase,
    /// Contact points are computed.
    NarrowPhase,
    /// Islands are solved by CANAL.
    Solve,
    /// Poses are advanced.
    Integrate,
    /// Transforms, velocities, [`Contacts`] and [`SolverStats`] are written.
    WriteBack,
}

fn run_physics(world: &mut World) {
    world.run_schedule(PhysicsSchedule);
}

impl Plugin for CanalPhysicsPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<Gravity>()
            .init_resource::<PhysicsSettings>()
            .init_resource::<SolverStats>()
            .init_resource::<Contacts>()
            .init_resource::<PhysicsWorld>()
            .register_type::<RigidBody>()
            .register_type::<LinearVelocity>()
            .register_type::<AngularVelocity>()
            .register_type::<PreciseState>()
            .register_type::<ColliderDensity>()
            .register_type::<Friction>()
            .register_type::<Restitution>()
            .register_type::<RollingFriction>()
            .register_type::<Mass>()
            .register_type::<PrincipalInertia>()
            .register_type::<CenterOfMass>()
            .register_type::<ExternalForce>()
            .register_type::<ExternalImpulse>()
            .register_type::<FixedJoint>()
            .register_type::<SphericalJoint>()
            .register_type::<RevoluteJoint>()
            .register_type::<PrismaticJoint>()
            .register_type::<JointState>()
            .register_type::<Gravity>();
        let mut schedule = Schedule::new(PhysicsSchedule);
        // The stages are a chain over one resource: a single thread, no scheduling overhead.
        // Islands are parallel inside the solve stage.
        schedule.set_executor(SingleThreadedExecutor::new());
        schedule.configure_sets(
            (
                PhysicsSet::Prepare,
                PhysicsSet::BroadPhase,
                PhysicsSet::NarrowPhase,
                PhysicsSet::Solve,
                PhysicsSet::Integrate,
                PhysicsSet::WriteBack,
            )
                .chain(),
        );
        schedule.add_systems((
            pipeline::prepare::prepare.in_set(PhysicsSet::Prepare),
            pipeline::broad_phase::broad_phase.in_set(PhysicsSet::BroadPhase),
            pipeline::narrow_phase::narrow_phase.in_set(PhysicsSet::NarrowPhase),
            pipeline::solve::solve.in_set(PhysicsSet::Solve),
            pipeline::integrate::integrate.in_set(PhysicsSet::Integrate),
            pipeline::write_back::write_back.in_set(PhysicsSet::WriteBack),
        ));
        app.add_schedule(schedule);
        app.add_systems(FixedPostUpdate, run_physics);
    }
}
