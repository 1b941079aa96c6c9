//! The CANAL step solver: ECS-free, `f64`, plain structs in and out.
//!
//! One call of [`Solver::solve`] solves one time step of one island of rigid bodies in contact as
//! the exact Signorini–Coulomb problem — hard non-penetration, the true friction cone — and says in
//! a [`SolveReport`] how well it did. The method, step by step, is in the crate's design note
//! (`canal-solver.md`): the data flows
//!
//! [`problem`] → `assembly` (A, b, J, e) → `canal` (`held_step`, a near-miss warm start corrected through an earlier solve's factorization, else smoothed by `gauss_seidel` sweeps, which also start a solve far from its answer at a loose tolerance; then the outer multiplier loop, `shift_newton` on the sliding contacts' shifts, `polish` when its budget is spent, `distribution` to the impulses nearest the start) → `newton` (surrogate
//! minimisation, `linear` systems, `line_search`) → [`report`] (velocities, impulses, residuals).
//!
//! Nothing here knows about Bevy; the plugin converts its components into a [`StepProblem`].

mod anderson;
mod assembly;
mod canal;
pub mod cone;
mod distribution;
mod gauss_seidel;
mod held_step;
mod holding;
mod line_search;
mod linear;
mod newton;
mod polish;
pub mod problem;
pub mod report;
mod residual;
pub mod scenes;
pub mod settings;
mod shift_newton;
mod warm_start;

pub use canal::{OuterTrace, Solver};
pub use cone::Cone;
pub use newton::NewtonTrace;
pub use problem::{
    ConstraintRows, ContactSide, RollingResistance, SolverBody, SolverConstraint, SolverContact, StepProblem,
};
pub use report::{BodyVelocity, ContactImpulse, InvalidInput, LinearSolverKind, Solution, SolveFailure, SolveReport};
pub use settings::SolverSettings;
pub use warm_start::WarmStartCache;
