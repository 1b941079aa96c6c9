//! The outer cascade (design note §3): a solve's path from the warm start to the final report.
//! This file owns the [`Solver`] and its buffers, the warm start, the path through the stages,
//! the best-iterate bookkeeping, the move to the nearest loads and the report; `start` the
//! corrections of a warm start before the outer loop and the Gauss–Seidel sweeps; `outer_loop`
//! the augmented-Lagrangian multiplier loop with the de Saxcé shift, its penalty rule, Anderson
//! mixing with a damped fallback, and the retries of a run that ends far from the tolerance;
//! `rolling` the rolling-friction bounds the outer loop moves with its loads, and the rounds of
//! whole solves for answers still off the bounds of their own loads.
//!
//! [`Solver`] owns every buffer a solve needs, so stepping the same island again allocates nothing.

use std::time::Instant;

use glam::DVec3;
use nalgebra::{DVector, Vector3};

use super::anderson::Anderson;
use super::assembly::{Assembled, Source};
use super::cone::Cone;
use super::distribution::Distribution;
use super::gauss_seidel::GaussSeidel;
use super::held_step::HeldStep;
use super::holding::{Answer, Holding};
use super::newton::{NewtonSolver, NewtonTrace};
use super::polish::Polish;
use super::problem::StepProblem;
use super::report::{BodyVelocity, ContactImpulse, LinearSolverKind, Solution, SolveFailure, SolveReport};
use super::residual::{ContactResiduals, contact_residuals, dynamics_residual};
use super::settings::SolverSettings;
use super::shift_newton::ShiftNewton;

mod outer_loop;
mod rolling;
mod start;

/// How much the move to the nearest impulses may raise the residuals, below the tolerance: a
/// move that removes a residual of round-off size from one contact can add one to another.
const NEAREST_SLACK: f64 = 2.0;

/// A warm start within this many times `warm_penalty_max_residual` skips the Gauss–Seidel sweeps
/// and goes straight to the outer loop. The sweeps stop just inside `warm_penalty_max_residual`,
/// below which no sweep's linear rate takes a pile to the acceptance level, so the next step's
/// warm start lands just outside it again. A 210-box pyramid settling at 1e-2 m/s stayed in that
/// loop for 50 steps (warm starts at 1.0–2.2e-2 m/s), each leaving a micrometre overlap whose
/// push-out cost 20–100 Newton iterations; the outer loop's headroom ends the loop in a few steps.
/// Impacts (the poured pen's warm starts lie at 5e-2–3 m/s) and cold starts still sweep.
const SWEEP_MIN_WARM_RATIO: f64 = 3.0;

/// One outer iteration's record, for convergence studies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OuterTrace {
    /// Newton iterations done so far in this solve.
    pub newton_iterations: u32,
    /// NCP residual of the iterate, m/s.
    pub ncp_residual: f64,
    /// Feasibility residual of the iterate, m/s.
    pub feasibility_residual: f64,
    /// Penalty κ used.
    pub penalty: f64,
}

/// The CANAL step solver. Keep one per island (or one per thread) and call [`Solver::solve`]
/// every step; its buffers are reused.
///
/// ```
/// use bevy_canal::solver::*;
/// use glam::DVec3;
///
/// // A 1 kg unit box resting on the ground, four corner contacts, one 60 Hz step.
/// let dt = 1.0 / 60.0;
/// let body = SolverBody::cuboid(1.0, DVec3::ONE, DVec3::new(0.0, 0.5, 0.0))
///     .with_force(DVec3::new(0.0, -9.81, 0.0), dt);
/// let contacts = [(-0.5, -0.5), (0.5, -0.5), (-0.5, 0.5), (0.5, 0.5)].map(|(x, z)| {
///     SolverContact::new(0, ContactSide::Body(0), ContactSide::STATIC, DVec3::new(x, 0.0, z), DVec3::Y)
/// });
/// let problem = StepProblem { bodies: vec![body], contacts: contacts.to_vec(), dt, ..Default::default() };
///
/// let mut solver = Solver::new(SolverSettings::default());
/// let mut solution = Solution::default();
/// let report = solver.solve(&problem, &mut solution);
/// assert!(report.converged);
/// let total: f64 = solution.impulses.iter().map(|i| i.normal).sum();
/// assert!((total - 9.81 * dt).abs() < 1e-9);
/// assert!(solution.velocities[0].linear.length() < 1e-8);
/// ```
#[derive(Default)]
pub struct Solver {
    /// Settings used by the next solve.
    pub settings: SolverSettings,
    asm: Assembled,
    newton: NewtonSolver,
    anderson: Anderson,
    v: DVector<f64>,
    best_v: DVector<f64>,
    scratch: DVector<f64>,
    scratch2: DVector<f64>,
    lambda: Vec<Vector3<f64>>,
    lambda_next: Vec<Vector3<f64>>,
    best_lambda: Vec<Vector3<f64>>,
    shift: Vec<f64>,
    shift_next: Vec<f64>,
    bias: Vec<Vector3<f64>>,
    /// Unshifted contact velocities `J v + e` of the last Newton solution.
    velocity: Vec<Vector3<f64>>,
    beta: Vec<f64>,
    cones: Vec<Cone>,
    mix_in: Vec<f64>,
    mix_image: Vec<f64>,
    mix_out: Vec<f64>,
    outer_trace: Vec<OuterTrace>,
    /// Last outer iteration's image `(λ⁺, δ⁺)` and the step between the last two images.
    last_image: Vec<Vector3<f64>>,
    last_image_shift: Vec<f64>,
    image_step: Vec<Vector3<f64>>,
    image_shift_step: Vec<f64>,
    shift_newton: ShiftNewton,
    shift_proposal: Vec<f64>,
    polish: Polish,
    polish_lambda: Vec<Vector3<f64>>,
    polish_v: DVector<f64>,
    /// The first run's best pair while a retry runs.
    retry_v: DVector<f64>,
    retry_lambda: Vec<Vector3<f64>>,
    gauss_seidel: GaussSeidel,
    /// The first run's start impulses, and the stage that moves the answer towards them.
    start_lambda: Vec<Vector3<f64>>,
    distribution: Distribution,
    /// The impulses that hold the answer's velocities, valid when `held`.
    holding: Holding,
    held: bool,
    /// The fingerprint of the problem the factorization held was made for (`Assembled::pattern`).
    factored_pattern: Option<u64>,
    held_step: HeldStep,
    /// The rounds that settle rolling-friction bounds.
    rolling: rolling::RollingRounds,
    /// The problem's rolling resistances by assembled block, whose bounds the outer loop moves
    /// with the loads.
    resistances: rolling::AssembledResistances,
}

impl Solver {
    /// A solver with the given settings.
    pub fn new(settings: SolverSettings) -> Self {
        Self {
            settings,
            ..Default::default()
        }
    }

    /// Per-Newton-iteration trace of the last solve (filled when `settings.record_trace`).
    pub fn newton_trace(&self) -> &[NewtonTrace] {
        &self.newton.trace
    }

    /// Per-outer-iteration trace of the last solve (filled when `settings.record_trace`).
    pub fn outer_trace(&self) -> &[OuterTrace] {
        &self.outer_trace
    }

    /// Solves one step of `problem`, writing end-of-step velocities and impulses into `solution`.
    /// Never panics on bad numbers and never writes a NaN: see [`SolveReport::failure`].
    ///
    /// With [`StepProblem::rolling`] blocks, the outer loop moves their bounds with its normal
    /// loads; an answer that still misses the tolerance under the bounds of its own loads is
    /// solved again with them, from the problem's own warm start (see
    /// [`SolverSettings::max_rolling_rounds`](super::SolverSettings::max_rolling_rounds) and
    /// [`SolveReport::rolling_rounds`]).
    pub fn solve(&mut self, problem: &StepProblem, solution: &mut Solution) -> SolveReport {
        if problem.rolling.is_empty() {
            self.solve_with_fixed_bounds(problem, solution)
        } else {
            self.solve_rolling(problem, solution)
        }
    }

    /// [`Self::solve`] with every constraint's set as given.
    fn solve_with_fixed_bounds(&mut self, problem: &StepProblem, solution: &mut Solution) -> SolveReport {
        let start = Instant::now();
        self.newton.trace.clear();
        self.outer_trace.clear();
        self.held = false;
        let settings = self.settings;
        let mut report = match self.asm.assemble(problem, &settings, &mut self.v) {
            Ok(()) => self.iterate(problem, &settings),
            Err(invalid) => {
                write_unsolved(problem, solution);
                return SolveReport {
                    failure: Some(SolveFailure::InvalidInput(invalid)),
                    ncp_residual: f64::INFINITY,
                    feasibility_residual: f64::INFINITY,
                    dynamics_residual: f64::INFINITY,
                    time: start.elapsed(),
                    ..Default::default()
                };
            }
        };
        // An accepted warm start's velocities were computed from its impulses by the same
        // `velocities_for` the residual would call again: it is zero by construction.
        report.dynamics_residual = if report.warm_start_accepted {
            0.0
        } else {
            dynamics_residual(
                &self.asm,
                &self.best_v,
                &self.best_lambda,
                &mut self.scratch,
                &mut self.scratch2,
            )
        };
        self.write_solution(problem, solution);
        report.time = start.elapsed();
        report
    }

    fn resize(&mut self) {
        let dofs = self.asm.dofs();
        let nc = self.asm.contacts.len();
        for buffer in [&mut self.best_v, &mut self.scratch, &mut self.scratch2] {
            *buffer = std::mem::take(buffer).resize_vertically(dofs, 0.0);
        }
        for buffer in [&mut self.lambda, &mut self.lambda_next, &mut self.best_lambda] {
            buffer.clear();
            buffer.resize(nc, Vector3::zeros());
        }
        self.cones.clear();
        self.cones.resize(nc, Cone::Equality);
    }

    /// Sizes the buffers only the outer loop uses. Not done in [`Self::resize`]: most steps of a
    /// resting scene end at the warm-start check, and zeroing these was 4% of such a step.
    fn resize_outer(&mut self) {
        let nc = self.asm.contacts.len();
        for buffer in [
            &mut self.bias,
            &mut self.velocity,
            &mut self.last_image,
            &mut self.image_step,
        ] {
            buffer.clear();
            buffer.resize(nc, Vector3::zeros());
        }
        for buffer in [
            &mut self.shift,
            &mut self.shift_next,
            &mut self.beta,
            &mut self.last_image_shift,
            &mut self.image_shift_step,
            &mut self.shift_proposal,
        ] {
            buffer.clear();
            buffer.resize(nc, 0.0);
        }
        for buffer in [&mut self.mix_in, &mut self.mix_image, &mut self.mix_out] {
            buffer.clear();
            buffer.resize(4 * nc, 0.0);
        }
        self.newton.resize(self.asm.dofs(), nc);
    }

    /// Sets `λ` to the problem's warm start (zero where there is none, and everywhere unless
    /// `warm`) and `v = v(λ)`; says whether any impulse was warm started.
    fn load_start(&mut self, problem: &StepProblem, settings: &SolverSettings, warm: bool) -> bool {
        for (c, contact) in self.asm.contacts.iter().enumerate() {
            // Contacts warm-start from world impulses, joint blocks from their row impulses.
            let start = match contact.source {
                Source::Contact(i) => problem.contacts[i].warm_impulse.map(|w| contact.rows_of(w)),
                Source::Constraint(i) => problem.constraints[i].warm_impulse.map(|w| Vector3::new(w.x, w.y, w.z)),
            };
            let start = start.filter(|w| warm && settings.warm_start && w.iter().all(|x| x.is_finite()));
            self.lambda[c] = start.map_or(Vector3::zeros(), |w| contact.cone.project(&w));
        }
        self.asm.velocities_for(&self.lambda, &mut self.scratch, &mut self.v);
        self.lambda.iter().any(|l| *l != Vector3::zeros())
    }

    /// The whole solve after assembly. Leaves the answer in `best_v`, `best_lambda`.
    fn iterate(&mut self, problem: &StepProblem, settings: &SolverSettings) -> SolveReport {
        self.resize();
        let nc = self.asm.contacts.len();
        for (c, contact) in self.asm.contacts.iter().enumerate() {
            self.cones[c] = contact.cone;
        }
        self.resistances.assemble(problem, &self.asm);
        let warm_started = self.load_start(problem, settings, true);
        if settings.nearest_impulses {
            self.start_lambda.clear();
            self.start_lambda.extend_from_slice(&self.lambda);
        }
        let mut report = SolveReport {
            penalty: settings.initial_penalty,
            ..Default::default()
        };
        let mut initial = contact_residuals(&self.asm, &self.v, &self.lambda);
        self.keep_best();
        // A warm start is accepted as it is only within `warm_start_accept` too: see there why a
        // loose tolerance must not let a resting scene creep.
        let accept = if warm_started {
            settings.warm_start_level()
        } else {
            settings.tolerance
        };
        if warm_started && settings.warm_trend && !initial.within(accept) {
            initial = self.carry_trend(problem, initial);
        }
        if initial.within(accept) {
            report.warm_start_accepted = nc > 0;
            return self.finish(report, initial, None);
        }
        // Near its answer: the first penalty can be stiff, and the answer's holding impulses
        // follow by linearization.
        let near = warm_started && initial.worst() <= settings.warm_penalty_max_residual;
        self.asm.index_pairs();
        let near_miss = warm_started && initial.worst() <= settings.smoothing_max_ratio * accept;
        if near_miss && let Some(corrected) = self.correct_through_held(problem, settings, accept) {
            report.warm_start_accepted = true;
            report.held_steps = corrected.1;
            return self.finish(report, corrected.0, None);
        }
        if near_miss
            && settings.smoothing_sweeps > 0
            && let Some(smoothed) = self.smooth_warm_start(settings, accept, &mut report)
        {
            report.warm_start_accepted = true;
            return self.finish(report, smoothed, None);
        }

        // At or below the acceptance level a resting scene must end below it (the headroom) to
        // stay accepted, which the sweeps' linear rate does not reach: see `gauss_seidel_sweeps`.
        let mut start = initial;
        let almost_near = warm_started && initial.worst() <= SWEEP_MIN_WARM_RATIO * settings.warm_penalty_max_residual;
        if !almost_near && settings.gauss_seidel_sweeps > 0 && settings.tolerance > settings.warm_start_accept {
            let (swept, solved) = self.sweep_from_start(settings, initial, &mut report);
            if solved {
                return self.finish(report, swept, None);
            }
            start = swept;
        }
        self.resize_outer();
        self.newton.system.prepare(&self.asm, settings.dense_max_bodies);
        report.linear_solver = self.newton.system.kind();
        let first_penalty = if near {
            settings.warm_initial_penalty
        } else {
            settings.initial_penalty
        };
        let first = self.run(settings, first_penalty, near, start, &mut report);
        let (mut best, failure) = self.retry(problem, settings, (warm_started, first_penalty), first, &mut report);
        if settings.nearest_impulses && failure.is_none() && best.within(settings.tolerance) {
            best = self.move_to_nearest(best, settings, &mut report);
        }
        let report = self.finish(report, best, failure);
        self.factored_pattern = self.newton.system.factored_weights().map(|_| self.asm.pattern());
        // Not after the polish, a retry or the move to the nearest loads: the factorization held
        // is then not the one the answer settled with. Only after a solve that began near its
        // answer, as a resting scene's do; given to every converged solve, the guess showed
        // neither loss nor gain on 24 pen trajectories (`docs/sphere-pen.md`).
        self.held = near
            && report.converged
            && report.polish_iterations == 0
            && report.retries == 0
            && report.distribution_solves == 0
            && self.guess_holding(problem, settings.headroom_target());
        report
    }

    /// Makes the holding guess (`holding`) for the answer in `best_v`, `best_lambda` with the
    /// factorization held, aiming for `target` m/s; whether it is nearer than the answer.
    fn guess_holding(&mut self, problem: &StepProblem, target: f64) -> bool {
        self.holding.guess(
            &self.asm,
            &mut self.newton.system,
            &Answer {
                start: &problem.bodies,
                v: &self.best_v,
                lambda: &self.best_lambda,
            },
            target,
        )
    }

    /// Moves a converged answer, along the impulses that change no velocity, to the one nearest
    /// the first run's start (see the `distribution` stage), if its residuals stay within the
    /// tolerance and within twice the answer's or the headroom target.
    fn move_to_nearest(
        &mut self,
        best: ContactResiduals,
        settings: &SolverSettings,
        report: &mut SolveReport,
    ) -> ContactResiduals {
        let accept = (NEAREST_SLACK * best.worst())
            .max(settings.headroom_target())
            .min(settings.tolerance);
        let (moved, solves) = self.distribution.nearest(
            &self.asm,
            &mut self.newton.system,
            &self.start_lambda,
            &mut self.best_v,
            &mut self.best_lambda,
            accept,
        );
        report.distribution_solves = solves;
        moved.unwrap_or(best)
    }

    /// Records `(v, λ)` as the best consistent pair so far.
    fn keep_best(&mut self) {
        self.best_v.copy_from(&self.v);
        self.best_lambda.copy_from_slice(&self.lambda);
    }

    fn finish(&self, mut report: SolveReport, best: ContactResiduals, failure: Option<SolveFailure>) -> SolveReport {
        report.ncp_residual = best.ncp;
        report.feasibility_residual = best.feasibility;
        report.failure = failure;
        report.converged = failure.is_none() && best.within(self.settings.tolerance);
        if report.linear_solver == LinearSolverKind::None && report.newton_iterations > 0 {
            report.linear_solver = self.newton.system.kind();
        }
        report
    }

    fn write_solution(&self, problem: &StepProblem, solution: &mut Solution) {
        solution.velocities.clear();
        solution.velocities.extend((0..problem.bodies.len()).map(|i| {
            let v = self.best_v.fixed_rows::<6>(6 * i);
            BodyVelocity {
                linear: DVec3::new(v[0], v[1], v[2]),
                angular: DVec3::new(v[3], v[4], v[5]),
            }
        }));
        zero_impulses(problem, solution);
        for (c, contact) in self.asm.contacts.iter().enumerate() {
            let l = self.best_lambda[c];
            let warm = if self.held { self.holding.held[c] } else { l };
            match contact.source {
                Source::Contact(i) => {
                    let world =
                        |l: Vector3<f64>| contact.frame[0] * l.x + contact.frame[1] * l.y + contact.frame[2] * l.z;
                    solution.impulses[i] = ContactImpulse {
                        normal: l.x,
                        tangent: [l.y, l.z],
                        world: world(l),
                    };
                    solution.warm_impulses[i] = world(warm);
                }
                Source::Constraint(i) => {
                    solution.constraint_impulses[i] = DVec3::new(l.x, l.y, l.z);
                    solution.warm_constraint_impulses[i] = DVec3::new(warm.x, warm.y, warm.z);
                }
            }
        }
    }
}

/// Bad input: keep each body's step-start velocity where finite (zero where not), no impulses.
fn write_unsolved(problem: &StepProblem, solution: &mut Solution) {
    let finite_or_zero = |v: DVec3| if v.is_finite() { v } else { DVec3::ZERO };
    solution.velocities.clear();
    solution.velocities.extend(problem.bodies.iter().map(|b| BodyVelocity {
        linear: finite_or_zero(b.linear_velocity),
        angular: finite_or_zero(b.angular_velocity),
    }));
    zero_impulses(problem, solution);
}

/// Sizes the solution's impulse vectors (applied and warm, contacts and constraints) to the
/// problem, all zero.
fn zero_impulses(problem: &StepProblem, solution: &mut Solution) {
    let (nc, nk) = (problem.contacts.len(), problem.constraints.len());
    solution.impulses.clear();
    solution.impulses.resize(nc, ContactImpulse::default());
    solution.constraint_impulses.clear();
    solution.constraint_impulses.resize(nk, DVec3::ZERO);
    solution.warm_impulses.clear();
    solution.warm_impulses.resize(nc, DVec3::ZERO);
    solution.warm_constraint_impulses.clear();
    solution.warm_constraint_impulses.resize(nk, DVec3::ZERO);
}
