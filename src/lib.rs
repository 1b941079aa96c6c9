//! # bevy_canal
//!
//! Exact rigid-body contact physics for Bevy. Its contact solver is CANAL, the Cascaded
//! Newton-based Augmented Lagrangian method: hard non-penetration and the true Coulomb cone,
//! solved every step to a reported tolerance.
//!
//! The [`solver`] module is ECS-free and can be used alone.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod solver;
