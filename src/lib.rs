//! # bevy_canal
//!
//! Exact rigid-body contact physics for Bevy. Its contact solver is CANAL, the Cascaded
//! Newton-based Augmented Lagrangian method: hard non-penetration and the true Coulomb cone,
//! solved every step to a reported tolerance.
//!
//! ```
//! use bevy_app::prelude::*;
//! use bevy_canal::prelude::*;
//! use bevy_ecs::prelude::*;
//!
//! let mut app = App::new();
//! app.add_plugins((bevy_time::TimePlugin, CanalPhysicsPlugin));
//! app.world_mut().spawn((RigidBody::Static, Collider::cuboid(10.0, 1.0, 10.0), Transform::from_xyz(0.0, -0.5, 0.0)));
//! let cube = app
//!     .world_mut()
//!     .spawn((RigidBody::Dynamic, Collider::cuboid(1.0, 1.0, 1.0), Friction::new(0.5), Transform::from_xyz(0.0, 0.5, 0.0)))
//!     .id();
//! for _ in 0..60 {
//!     app.world_mut().run_schedule(PhysicsSchedule);
//! }
//! let stats = app.world().resource::<SolverStats>();
//! assert!(stats.converged && stats.ncp_residual <= 1e-8);
//! let y = app.world().get::<Transform>(cube).unwrap().translation.y;
//! assert!((y - 0.5).abs() < 1e-5, "the cube rests: {y}");
//! ```
//!
//! Data flows through the modules in this order: [`components`] (what users spawn) →
//! `pipeline` (prepare, broad phase, narrow phase, solve, integrate, write back) → [`resources`]
//! ([`SolverStats`](resources::SolverStats), [`Contacts`](resources::Contacts)). The [`solver`]
//! module is ECS-free and can be used alone.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod components;
mod pipeline;
pub mod plugin;
pub mod resources;
pub mod solver;
pub mod urdf;

/// Everything a game needs, in one import.
pub mod prelude {
    pub use crate::components::*;
    pub use crate::plugin::{CanalPhysicsPlugin, PhysicsSchedule, PhysicsSet};
    pub use crate::resources::{
        CapturedIsland, CapturedProblems, ContactPair, ContactPoint, Contacts, Gravity, PhysicsSettings, SolverStats,
        StageTimes,
    };
    pub use crate::solver::SolverSettings;
    pub use bevy_math::{Quat, Vec3};
    pub use bevy_transform::components::Transform;
}
