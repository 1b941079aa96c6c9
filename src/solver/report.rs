//! What one call of the solver returns: velocities, impulses and the [`SolveReport`].

use std::time::Duration;

use glam::DVec3;

/// Which part of a [`StepProblem`](super::StepProblem) was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvalidInput {
    /// The time step was not finite and positive.
    TimeStep,
    /// This body had a non-finite value, a mass ≤ 0 or an inertia that is not symmetric positive
    /// definite.
    Body(usize),
    /// This contact had a non-finite value, a frame that is not orthonormal, μ < 0, a restitution
    /// outside [0, 1], a body index out of range, or the same body on both sides.
    Contact(usize),
    /// This joint block had a non-finite value, a row that is not a unit vector, 0 or more than 3
    /// rows, a friction cone or a negative bound for its set, a body index out of range, or the
    /// same body on both sides.
    Constraint(usize),
}

/// Why a solve did not converge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SolveFailure {
    /// Nothing was solved: the bodies keep their step-start velocities (zero where not finite).
    InvalidInput(InvalidInput),
    /// The iteration budget was spent before the tolerance was met.
    BudgetExhausted,
    /// A Newton system could not be factored.
    SingularSystem,
    /// The multipliers grew without the constraints becoming feasible: the contacts ask for
    /// something no velocity satisfies (a body wedged between penetrating walls, say).
    NoSolution,
}

/// Which factorization solved the Newton systems.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LinearSolverKind {
    /// No Newton system was needed (no contacts, or the warm start was already converged).
    #[default]
    None,
    /// Dense Cholesky.
    Dense,
    /// Sparse supernodal/simplicial Cholesky with an AMD ordering.
    Sparse,
}

/// Solver statistics of one island's step, MuJoCo-style: every step says how well it was solved.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct SolveReport {
    /// Augmented-Lagrangian iterations.
    pub outer_iterations: u32,
    /// Newton iterations, summed over the outer iterations.
    pub newton_iterations: u32,
    /// Newton directions found by conjugate gradients preconditioned by an earlier factorization,
    /// without refactoring ([`SolverSettings::cg_direction_min_bodies`](super::SolverSettings::cg_direction_min_bodies));
    /// included in `newton_iterations`.
    pub cg_directions: u32,
    /// Line-search evaluations, summed.
    pub line_search_iterations: u32,
    /// Newton steps on the de Saxcé shifts of the sliding contacts attempted: their system was
    /// solved, or its solve failed (design note §3.6; one solve with the Newton matrix per sliding
    /// contact, or a BiCGSTAB run over them on large piles). Not counted in `newton_iterations`.
    pub shift_newton_steps: u32,
    /// Of those, the steps taken. The others were refused: the step crossed a regime change (a
    /// contact opening or starting to stick), or its system could not be solved.
    pub shift_newton_taken: u32,
    /// Semismooth Newton steps of the polish that follows a spent outer budget
    /// ([`SolverSettings::polish_iterations`](super::SolverSettings::polish_iterations)).
    pub polish_iterations: u32,
    /// Projected Gauss–Seidel sweeps run on the warm start
    /// ([`SolverSettings::smoothing_sweeps`](super::SolverSettings::smoothing_sweeps), up to
    /// [`SolverSettings::smoothing_budget`](super::SolverSettings::smoothing_budget)).
    pub smoothing_sweeps: u32,
    /// Nonsmooth Gauss–Seidel sweeps run before the outer loop
    /// ([`SolverSettings::gauss_seidel_sweeps`](super::SolverSettings::gauss_seidel_sweeps)).
    pub gauss_seidel_sweeps: u32,
    /// Steps through the factorization an earlier solve of the island left, given to a warm start
    /// that missed the acceptance level narrowly (tried before the smoothing sweeps).
    pub held_steps: u32,
    /// Worst contact's natural-map residual, m/s (design note §4).
    pub ncp_residual: f64,
    /// Worst contact's distance of the shifted velocity from the dual cone, m/s (design note §4).
    pub feasibility_residual: f64,
    /// `‖A⁻¹(A v − b − Jᵀλ)‖∞`: how far the returned velocities and impulses are from satisfying
    /// the discrete dynamics, m/s. Zero for an accepted warm start, whose velocities are computed
    /// from its impulses.
    pub dynamics_residual: f64,
    /// Both residuals reached the tolerance.
    pub converged: bool,
    /// Why not, when not.
    pub failure: Option<SolveFailure>,
    /// The dimensionless penalty κ at the end.
    pub penalty: f64,
    /// The warm start met the tolerance without an outer iteration: as given, or after the
    /// smoothing sweeps.
    pub warm_start_accepted: bool,
    /// Runs of the outer loop after the first, each from another start, because the best answer
    /// was still far above the tolerance
    /// ([`SolverSettings::retry_above`](super::SolverSettings::retry_above)); the counts above
    /// include every run.
    pub retries: u32,
    /// Factorizations spent moving the answer to the impulses nearest the start
    /// ([`SolverSettings::nearest_impulses`](super::SolverSettings::nearest_impulses)).
    pub distribution_solves: u32,
    /// Whole solves run to settle rolling-friction bounds
    /// ([`StepProblem::rolling`](super::StepProblem::rolling)): 0 without any, else at least 1;
    /// the counts above include every one, and `ncp_residual` judges the answer's resistance
    /// blocks by the bounds its own normal impulses give. A step whose bounds had not settled
    /// within [`SolverSettings::max_rolling_rounds`](super::SolverSettings::max_rolling_rounds)
    /// is not converged.
    pub rolling_rounds: u32,
    /// How the Newton systems were factored.
    pub linear_solver: LinearSolverKind,
    /// Wall time of the solve.
    pub time: Duration,
}

impl SolveReport {
    /// The larger of the NCP and feasibility residuals, m/s: what the tolerance bounds.
    ///
    /// ```
    /// use bevy_canal::solver::{scenes, Solution, Solver, SolverSettings};
    ///
    /// let problem = scenes::resting_box(1.0, 0.5, 1.0 / 60.0);
    /// let report = Solver::new(SolverSettings::default()).solve(&problem, &mut Solution::default());
    /// assert!(report.converged && report.worst_residual() <= SolverSettings::default().tolerance);
    /// ```
    pub fn worst_residual(&self) -> f64 {
        self.ncp_residual.max(self.feasibility_residual)
    }
}

/// End-of-step velocities of one body.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct BodyVelocity {
    /// m/s.
    pub linear: DVec3,
    /// rad/s.
    pub angular: DVec3,
}

/// The impulse one contact applied over the step, on `body1` (its opposite acts on `body2`).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct ContactImpulse {
    /// Normal component λ_n ≥ 0, N·s.
    pub normal: f64,
    /// Tangential components along the contact's two tangents, N·s.
    pub tangent: [f64; 2],
    /// The whole impulse as a world vector, N·s.
    pub world: DVec3,
}

/// What a solve writes: one entry per body and per contact, in input order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Solution {
    /// End-of-step velocities.
    pub velocities: Vec<BodyVelocity>,
    /// Contact impulses.
    pub impulses: Vec<ContactImpulse>,
    /// Per [`SolverConstraint`](super::SolverConstraint): the impulse of each of its rows, N·s on
    /// linear rows, N·m·s on angular rows (unused rows 0).
    pub constraint_impulses: Vec<DVec3>,
    /// Per contact, the world impulse to warm-start the next step with: `impulses`, less the part
    /// that stopped the velocities this step began with where the solve can tell it (a solve that
    /// iterated from a near warm start; see the solver's `holding` stage), else the same.
    pub warm_impulses: Vec<DVec3>,
    /// Per [`SolverConstraint`](super::SolverConstraint), the row impulses to warm-start the next
    /// step with, as `warm_impulses` is for contacts.
    pub warm_constraint_impulses: Vec<DVec3>,
}
