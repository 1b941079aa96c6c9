//! The outer cascade (design note §3): the augmented-Lagrangian multiplier loop with the de Saxcé
//! shift, the penalty rule, Anderson acceleration with a damped fallback, warm start, best-iterate
//! bookkeeping, the retry of a solve that ends far from the tolerance, and the final report.
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
use super::newton::{NewtonCounts, NewtonSolver, NewtonTrace, Surrogate};
use super::polish::Polish;
use super::problem::StepProblem;
use super::report::{BodyVelocity, ContactImpulse, LinearSolverKind, Solution, SolveFailure, SolveReport};
use super::residual::{ContactResiduals, contact_residuals, contact_residuals_at, dynamics_residual};
use super::settings::SolverSettings;
use super::shift_newton::{ShiftIterate, ShiftNewton};
use super::smoothing::Smoother;

/// Outer iterations whose images move in one direction (cosine ≥ 0.999) before the solver jumps
/// along it. Three already rescued the degenerate landing box, but moved random seed 187's
/// failure to seed 151; six keeps the random suite as it was and still rescues the box.
const DRIFT_PATIENCE: u32 = 6;

/// How much the move to the nearest impulses may raise the residuals, below the tolerance: a
/// move that removes a residual of round-off size from one contact can add one to another.
const NEAREST_SLACK: f64 = 2.0;

/// A solve that reaches the tolerance within this many outer iterations started near its answer,
/// as a resting scene's does, and only such a solve stretches its headroom to the warm-start
/// acceptance level ([`SolverSettings::headroom_budget`]): a scene whose solves take longer is
/// moving, and its next warm start is not accepted anyway. On the 125-ball pen at 1e-6 m/s (one
/// trajectory each), stretching every solve's headroom took the mean step from 90 to 129 ms.
const SETTLED_OUTER_ITERATIONS: u32 = 8;

/// Headroom iterations that a settled solve (above) which also began near its answer and ends
/// with no contact sliding may spend beyond [`SolverSettings::headroom_budget`]. With none, such a
/// solve on the resting 210-box pyramid stopped near 2e-9 m/s, its holding impulses held only to
/// that level, the warm starts after it crept back over the acceptance level within about ten
/// steps, and a step in seven iterated. With three it reaches the headroom target.
const SETTLED_HEADROOM_ITERATIONS: u32 = 3;

/// The starts of the retries, in order: from the warm start (true) or from zero impulses, at
/// `retry_penalty` (true) or `initial_penalty`. On six windows of captured sphere-pen steps, the
/// first alone cut the steps left above 1e-6 m/s from 27 to 14, all three to 7.
const RETRY_STARTS: [(bool, bool); 3] = [(true, true), (false, false), (false, true)];

/// Gauss–Seidel sweeps between two checks of their residuals: a check (the velocities from the
/// impulses, then the residuals) costs about as much as a sweep.
const SWEEPS_PER_CHECK: u32 = 5;

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
    smoother: Smoother,
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
    pub fn solve(&mut self, problem: &StepProblem, solution: &mut Solution) -> SolveReport {
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
                Source::Contact(i) => problem.contacts[i].warm_impulse.map(|w| {
                    Vector3::new(
                        w.dot(contact.frame[0]),
                        w.dot(contact.frame[1]),
                        w.dot(contact.frame[2]),
                    )
                }),
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
        let warm_started = self.load_start(problem, settings, true);
        if settings.nearest_impulses {
            self.start_lambda.clear();
            self.start_lambda.extend_from_slice(&self.lambda);
        }
        let mut report = SolveReport {
            penalty: settings.initial_penalty,
            ..Default::default()
        };
        let initial = contact_residuals(&self.asm, &self.v, &self.lambda);
        // Near its answer: the first penalty can be stiff, and the answer's holding impulses
        // follow by linearization.
        let near = warm_started && initial.worst() <= settings.warm_penalty_max_residual;
        self.keep_best();
        // A warm start is accepted as it is only within `warm_start_accept` too: see there why a
        // loose tolerance must not let a resting scene creep.
        let accept = if warm_started {
            settings.warm_start_level()
        } else {
            settings.tolerance
        };
        if initial.within(accept) {
            report.warm_start_accepted = nc > 0;
            return self.finish(report, initial, None);
        }
        self.asm.index_pairs();
        let near_miss = warm_started && initial.worst() <= settings.smoothing_max_ratio * accept;
        if near_miss && let Some(corrected) = self.correct_through_held(problem, settings, accept) {
            report.warm_start_accepted = true;
            report.held_steps = corrected.1;
            return self.finish(report, corrected.0, None);
        }
        if near_miss && settings.smoothing_sweeps > 0 {
            report.smoothing_sweeps = settings.smoothing_sweeps;
            if let Some(smoothed) = self.smooth_warm_start(settings.smoothing_sweeps, accept) {
                report.warm_start_accepted = true;
                return self.finish(report, smoothed, None);
            }
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

    /// While the best answer so far spent a run's budget and is above `tolerance × retry_above`,
    /// runs the outer loop again from the next start of [`RETRY_STARTS`] that no run has used,
    /// up to `max_retries` times, keeping the best answer (in `best_v`, `best_lambda`). A stalled
    /// run sits at a fixed point of the shift iteration that does not contract, and another path
    /// often ends nearer the solution. `first` is the first run's start (whether warm) and
    /// initial penalty, and its result.
    fn retry(
        &mut self,
        problem: &StepProblem,
        settings: &SolverSettings,
        first: (bool, f64),
        mut best: (ContactResiduals, Option<SolveFailure>),
        report: &mut SolveReport,
    ) -> (ContactResiduals, Option<SolveFailure>) {
        let (warm_started, first_penalty) = first;
        // The starts of the runs so far: the first, then one per retry.
        let mut used = [(warm_started, first_penalty); RETRY_STARTS.len() + 1];
        for (warm, stiff) in RETRY_STARTS {
            let far = best.0.worst() > settings.tolerance * settings.retry_above;
            if best.1 != Some(SolveFailure::BudgetExhausted) || !far || report.retries >= settings.max_retries {
                break;
            }
            // Without a warm start, a warm start is a cold one.
            let start = (
                warm && warm_started,
                if stiff {
                    settings.retry_penalty
                } else {
                    settings.initial_penalty
                },
            );
            let runs = report.retries as usize + 1;
            if used[..runs].contains(&start) {
                continue;
            }
            used[runs] = start;
            report.retries += 1;
            self.retry_v = std::mem::take(&mut self.retry_v).resize_vertically(self.asm.dofs(), 0.0);
            self.retry_v.copy_from(&self.best_v);
            self.retry_lambda.clear();
            self.retry_lambda.extend_from_slice(&self.best_lambda);
            let best_penalty = report.penalty;
            self.load_start(problem, settings, start.0);
            let initial = contact_residuals(&self.asm, &self.v, &self.lambda);
            self.keep_best();
            let run = self.run(settings, start.1, false, initial, report);
            if run.0.worst() < best.0.worst() {
                best = run;
            } else {
                self.best_v.copy_from(&self.retry_v);
                self.best_lambda.copy_from_slice(&self.retry_lambda);
                report.penalty = best_penalty;
            }
        }
        best
    }

    /// One run of the outer loop from `(λ, v)` at initial penalty `kappa`, then the polish if the
    /// budget ran out; `near` if it starts from a warm start near its answer (it may then earn
    /// [`SETTLED_HEADROOM_ITERATIONS`]). `initial` are the residuals of the starting pair, which
    /// `best_v`, `best_lambda` hold. Adds its counts to `report` and sets its final penalty;
    /// returns the best residuals and why the run did not converge, if it did not.
    fn run(
        &mut self,
        settings: &SolverSettings,
        mut kappa: f64,
        near: bool,
        initial: ContactResiduals,
        report: &mut SolveReport,
    ) -> (ContactResiduals, Option<SolveFailure>) {
        let nc = self.asm.contacts.len();
        let mut best = initial;
        self.set_penalty(kappa);
        for c in 0..nc {
            self.shift[c] = self.cones[c].shift(&(self.asm.jacobian_times(c, &self.v) + self.asm.contacts[c].bias));
        }
        self.anderson.configure(settings.anderson_memory, 4 * nc);
        let mut counts = NewtonCounts::default();
        let mut previous_primal = f64::INFINITY;
        let mut since_best = 0;
        let mut stalled_at_cap = 0;
        let mut drifting = 0;
        let mut failure = Some(SolveFailure::BudgetExhausted);
        let mut headroom_left = None;
        let mut last_worst = initial.worst();

        for outer in 0..settings.max_outer_iterations {
            report.outer_iterations += 1;
            for c in 0..nc {
                self.bias[c] = self.asm.contacts[c].bias + Vector3::new(self.shift[c], 0.0, 0.0);
            }
            let surrogate = Surrogate {
                lambda: &self.lambda,
                bias: &self.bias,
                beta: &self.beta,
                cones: &self.cones,
                penalty: kappa,
                outer,
            };
            // Start Newton from the better of the last velocities and those the multipliers alone
            // give: after a penalty raise or a mixing step the latter can carry the right active
            // set where the former shows every contact open, costing one Newton step per body.
            self.asm
                .velocities_for(&self.lambda, &mut self.scratch, &mut self.scratch2);
            if self.newton.objective(&self.asm, &surrogate, &self.scratch2)
                < self.newton.objective(&self.asm, &surrogate, &self.v)
            {
                std::mem::swap(&mut self.v, &mut self.scratch2);
            }
            let newton_before = counts.newton;
            // Far from the answer an exact minimiser of this surrogate is wasted: the next one
            // moves anyway (`SolverSettings::inner_forcing`). A run that began near its answer
            // keeps exact solves, so a resting scene's solves stay as they were.
            let loose = !near && settings.inner_forcing > 0.0 && last_worst > 100.0 * settings.tolerance;
            let inner_tolerance = if loose {
                settings.inner_forcing * last_worst
            } else {
                0.0
            };
            if self
                .newton
                .minimize(
                    &self.asm,
                    &surrogate,
                    &mut self.v,
                    settings,
                    inner_tolerance,
                    &mut counts,
                )
                .is_err()
            {
                failure = Some(SolveFailure::SingularSystem);
                break;
            }

            let mut primal = 0.0_f64;
            let mut shift_change = 0.0_f64;
            // Newton's last evaluation was at this v: λ^{l+1} = Π(λ − β(J v + ê)) and J v + ê come
            // from it.
            let (projected, shifted) = self.newton.last_evaluation();
            self.lambda_next.copy_from_slice(projected);
            if loose {
                // A loose minimiser leaves `A v − b − Jᵀλ⁺` at up to the inner tolerance: judge,
                // and keep, the pair that satisfies the dynamics instead.
                self.asm
                    .velocities_for(&self.lambda_next, &mut self.scratch, &mut self.v);
                for c in 0..nc {
                    self.velocity[c] = self.asm.jacobian_times(c, &self.v) + self.asm.contacts[c].bias;
                }
            } else {
                for ((velocity, shifted), shift) in self.velocity.iter_mut().zip(shifted).zip(&self.shift) {
                    *velocity = shifted - Vector3::new(*shift, 0.0, 0.0);
                }
            }
            for c in 0..nc {
                primal = primal.max((self.lambda_next[c] - self.lambda[c]).norm() / self.beta[c]);
                self.shift_next[c] = self.cones[c].shift(&self.velocity[c]);
                // A separating contact's shift does not matter: any shift keeps it feasible.
                if self.lambda_next[c].x > 0.0 || self.velocity[c].x <= 0.0 {
                    shift_change = shift_change.max((self.shift_next[c] - self.shift[c]).abs());
                }
            }
            let residuals = contact_residuals_at(&self.asm, &self.velocity, &self.lambda_next);
            last_worst = residuals.worst();
            if settings.record_trace {
                self.outer_trace.push(OuterTrace {
                    newton_iterations: counts.newton,
                    ncp_residual: residuals.ncp,
                    feasibility_residual: residuals.feasibility,
                    penalty: kappa,
                });
            }
            // Within the tolerance, only a better iterate replaces the best: the headroom
            // iterations below must not trade it for a worse one.
            if residuals.worst() < best.worst()
                || (residuals.within(settings.tolerance) && !best.within(settings.tolerance))
            {
                best = residuals;
                std::mem::swap(&mut self.lambda, &mut self.lambda_next);
                self.keep_best();
                std::mem::swap(&mut self.lambda, &mut self.lambda_next);
                since_best = 0;
            } else {
                since_best += 1;
            }
            if residuals.within(settings.tolerance) {
                failure = None;
                // Headroom: while an outer iteration costs at most one Newton step (the iterate
                // is near the solution, the active set settled), go on below the level a warm
                // start is accepted at, so that the next step's warm start, these impulses
                // again, is accepted. A settled sticking solve does not judge the iteration that
                // reached the tolerance by its cost: whether that one or the one before paid for
                // the last change of the active set depends on the loads it started from.
                let settled = outer < SETTLED_OUTER_ITERATIONS;
                let reached_now = headroom_left.is_none();
                // Only the iteration that reaches the tolerance asks: it sets the budget.
                let sticking = reached_now && settled && near && self.newton.system.factored_diagonal();
                let cheap = counts.newton - newton_before <= 1 || sticking;
                let left = headroom_left.get_or_insert_with(|| {
                    if settled {
                        settings.headroom_budget() + if sticking { SETTLED_HEADROOM_ITERATIONS } else { 0 }
                    } else {
                        settings.headroom_iterations
                    }
                });
                if *left == 0 || !cheap || residuals.within(settings.headroom_target()) {
                    break;
                }
                *left -= 1;
            }

            // §3.7: at the penalty cap, a run without a better residual in which every outer
            // iteration still moves the multipliers by about the constraint violation (primal ≈
            // feasibility residual) means they grow without bound: no velocity satisfies the
            // constraints. A slow drift along a degenerate contact set also stalls, but with
            // multiplier steps far below the violation.
            if failure.is_some()
                && kappa >= settings.max_penalty
                && since_best > 0
                && primal >= 0.5 * residuals.feasibility
            {
                stalled_at_cap += 1;
                if stalled_at_cap >= 2 * settings.patience {
                    failure = Some(SolveFailure::NoSolution);
                    break;
                }
            } else {
                stalled_at_cap = 0;
            }
            // §3.5: raise the penalty only when the primal residual stalls and is not just the slow
            // frozen-shift fixed point of sliding contacts. (Raising it on any stall as well
            // rescued random seed 246 but took seed 187 to the cap, where the dynamics residual's
            // round-off floor eps·κ·|w| reached 4e-8 m/s.)
            let raise = primal > 0.25 * previous_primal && primal > shift_change && kappa < settings.max_penalty;
            previous_primal = primal;
            if raise {
                kappa = (kappa * settings.penalty_growth).min(settings.max_penalty);
                self.set_penalty(kappa);
                self.anderson.reset();
            }
            // A drift: the images keep moving the same way without a better residual. On a
            // degenerate contact set (four corners of a face, three of them sliding) the fixed point
            // lies where one contact lets go, hundreds of small steps away; jump there.
            drifting = if outer > 0 && self.images_drift() {
                drifting + 1
            } else {
                0
            };
            self.remember_image(outer > 0);
            if drifting >= DRIFT_PATIENCE && since_best > 0 && self.jump_along_drift() {
                drifting = 0;
                self.anderson.reset();
                continue;
            }
            // §3.6: after a run without a new best residual, one damped shift update.
            let fallback = since_best >= settings.patience;
            if fallback {
                since_best = 0;
            }
            // While the iterates improve, a Newton step on the shifts of the sliding contacts;
            // otherwise Anderson mixing or the damped fallback. (Newton at every iteration solved
            // random seeds 187 and 246 but lost 15 others, cycling across regime changes.)
            if since_best == 0 && !fallback && self.shift_newton_step() {
                self.anderson.reset();
                continue;
            }
            self.next_outer_input(fallback);
        }
        if failure == Some(SolveFailure::BudgetExhausted) && settings.polish_iterations > 0 {
            let (reached, steps) = self.polish_best(&mut best, settings.polish_iterations);
            report.polish_iterations += steps;
            if reached {
                failure = None;
            }
        }
        report.newton_iterations += counts.newton;
        report.line_search_iterations += counts.line_search;
        report.penalty = kappa;
        (best, failure)
    }

    /// Smooths the warm start `(λ, v)` in scratch buffers and, if the smoothed pair (with `v`
    /// recomputed from the impulses, so it satisfies the dynamics exactly) is within `accept`,
    /// keeps it as the answer and returns its residuals.
    /// Otherwise the outer loop starts from the warm start as given: a smoothed iterate moves
    /// load between a body's redundant contacts, and a loose solve continued from there let a
    /// ten-box stack at 1e-4 m/s tilt until corners dug in 6 mm.
    fn smooth_warm_start(&mut self, sweeps: u32, accept: f64) -> Option<ContactResiduals> {
        self.begin_trial();
        self.smoother
            .run(&self.asm, &mut self.lambda_next, &mut self.scratch2, sweeps);
        let smoothed = self.trial_residuals();
        if !smoothed.within(accept) {
            return None;
        }
        self.keep_trial();
        Some(smoothed)
    }

    /// The `gauss_seidel` stage from the start `(λ, v)`, whose residuals are `initial`: sweeps in
    /// the trial buffers, checked every [`SWEEPS_PER_CHECK`], until their pair is within
    /// `min(tolerance, warm_penalty_max_residual)` or their last rate of contraction says the
    /// budget will not get there. Their pair becomes `(λ, v)` and the best if it is nearer the
    /// answer than the start; returns the residuals of `(λ, v)` then, and whether they are within
    /// that level (the pair is then the answer).
    fn sweep_from_start(
        &mut self,
        settings: &SolverSettings,
        initial: ContactResiduals,
        report: &mut SolveReport,
    ) -> (ContactResiduals, bool) {
        let target = settings.tolerance.min(settings.warm_penalty_max_residual);
        let budget = settings.gauss_seidel_sweeps;
        self.gauss_seidel.prepare(&self.asm);
        self.begin_trial();
        let mut swept = initial;
        while report.gauss_seidel_sweeps < budget {
            let sweeps = SWEEPS_PER_CHECK.min(budget - report.gauss_seidel_sweeps);
            self.gauss_seidel
                .sweep(&self.asm, &mut self.lambda_next, &mut self.scratch2, sweeps);
            report.gauss_seidel_sweeps += sweeps;
            let last = swept.worst();
            swept = self.trial_residuals();
            if swept.within(target) {
                break;
            }
            // Sweeps still needed at the last check's rate; NaN and a rate of 1 or more give up.
            let rate = swept.worst() / last;
            let needed = f64::from(sweeps) * (target / swept.worst()).ln() / rate.ln();
            let within_budget = rate < 1.0 && f64::from(report.gauss_seidel_sweeps) + needed <= f64::from(budget);
            if report.gauss_seidel_sweeps >= 2 * SWEEPS_PER_CHECK && !within_budget {
                break;
            }
        }
        if swept.worst() >= initial.worst() {
            return (initial, false);
        }
        self.keep_trial();
        (swept, swept.within(target))
    }

    /// Starts a trial correction of the warm start: its impulses in `lambda_next`, its velocities
    /// in `scratch2`, leaving `(λ, v)` as they are until [`Self::keep_trial`].
    fn begin_trial(&mut self) {
        self.lambda_next.copy_from_slice(&self.lambda);
        self.scratch2.copy_from(&self.v);
    }

    /// Sets the trial's velocities to those of its impulses and returns the pair's residuals.
    fn trial_residuals(&mut self) -> ContactResiduals {
        self.asm
            .velocities_for(&self.lambda_next, &mut self.scratch, &mut self.scratch2);
        contact_residuals(&self.asm, &self.scratch2, &self.lambda_next)
    }

    /// Makes the trial `(λ, v)` and the best pair.
    fn keep_trial(&mut self) {
        std::mem::swap(&mut self.lambda, &mut self.lambda_next);
        std::mem::swap(&mut self.v, &mut self.scratch2);
        self.keep_best();
    }

    /// The warm start corrected through the factorization an earlier solve left (`held_step`),
    /// if that factorization fits the island and the correction ends within `accept`, with the
    /// number of steps taken; the next step's warm start is then the holding guess made with it.
    fn correct_through_held(
        &mut self,
        problem: &StepProblem,
        settings: &SolverSettings,
        accept: f64,
    ) -> Option<(ContactResiduals, u32)> {
        if settings.held_steps == 0
            || self.factored_pattern != Some(self.asm.pattern())
            || !HeldStep::usable(&self.asm, &self.newton.system)
        {
            return None;
        }
        self.begin_trial();
        let target = settings.headroom_target();
        let mut steps = 0;
        let corrected = loop {
            steps += 1;
            self.held_step.run(
                &self.asm,
                &mut self.newton.system,
                &mut self.lambda_next,
                &self.scratch2,
            );
            let residuals = self.trial_residuals();
            if residuals.within(target) || steps >= settings.held_steps {
                break residuals;
            }
        };
        if !corrected.within(accept) {
            return None;
        }
        self.keep_trial();
        self.held = self.guess_holding(problem, target);
        Some((corrected, steps))
    }

    /// Chooses the next outer iteration's `(λ, δ)` from the last image: Anderson-mixed, or, on
    /// `fallback`, the damped shift update `δ ← δ + ½(δ(v) − δ)` of §3.6 with a fresh history.
    fn next_outer_input(&mut self, fallback: bool) {
        let nc = self.lambda.len();
        if fallback {
            self.anderson.reset();
            for c in 0..nc {
                self.shift[c] += 0.5 * (self.shift_next[c] - self.shift[c]);
            }
            std::mem::swap(&mut self.lambda, &mut self.lambda_next);
            return;
        }
        for c in 0..nc {
            let m = self.asm.contacts[c].mass;
            for k in 0..3 {
                self.mix_in[4 * c + k] = self.lambda[c][k] / m;
                self.mix_image[4 * c + k] = self.lambda_next[c][k] / m;
            }
            self.mix_in[4 * c + 3] = self.shift[c];
            self.mix_image[4 * c + 3] = self.shift_next[c];
        }
        self.anderson.mix(&self.mix_in, &self.mix_image, &mut self.mix_out);
        for c in 0..nc {
            let m = self.asm.contacts[c].mass;
            let mixed = Vector3::new(self.mix_out[4 * c], self.mix_out[4 * c + 1], self.mix_out[4 * c + 2]) * m;
            self.lambda[c] = self.cones[c].project(&mixed);
            self.shift[c] = self.mix_out[4 * c + 3].max(0.0);
        }
    }

    /// Replaces `(λ, δ)` by a Newton step on the shift fixed point; false when none was taken.
    fn shift_newton_step(&mut self) -> bool {
        let iterate = ShiftIterate {
            cones: &self.cones,
            velocity: &self.velocity,
            shift: &self.shift,
            shift_next: &self.shift_next,
            lambda_next: &self.lambda_next,
            tolerance: self.settings.tolerance,
        };
        let taken = self.shift_newton.step(
            &self.asm,
            &mut self.newton,
            &iterate,
            &mut self.lambda,
            &mut self.shift_proposal,
        );
        if taken {
            std::mem::swap(&mut self.shift, &mut self.shift_proposal);
        }
        taken
    }

    /// Semismooth Newton from the best iterate, in its own buffers; keeps the result as the new
    /// best if it is better. Says whether it reached the tolerance, and its step count. Run once
    /// the budget is spent: also running it at the first damped fallback (15 steps) made the
    /// sphere pen 13% slower and no more accurate.
    fn polish_best(&mut self, best: &mut ContactResiduals, steps: u32) -> (bool, u32) {
        self.polish_lambda.clear();
        self.polish_lambda.extend_from_slice(&self.best_lambda);
        self.polish_v = std::mem::take(&mut self.polish_v).resize_vertically(self.asm.dofs(), 0.0);
        let tolerance = self.settings.tolerance;
        let (polished, taken) = self.polish.run(
            &self.asm,
            &mut self.newton.system,
            &mut self.polish_v,
            &mut self.polish_lambda,
            tolerance,
            steps,
        );
        if polished.worst() < best.worst() {
            *best = polished;
            self.best_v.copy_from(&self.polish_v);
            self.best_lambda.copy_from_slice(&self.polish_lambda);
        }
        (best.within(tolerance), taken)
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

    /// Whether this image moved from the last along the same direction as the previous move.
    fn images_drift(&self) -> bool {
        let (mut dot, mut now, mut before) = (0.0, 0.0, 0.0);
        for c in 0..self.lambda.len() {
            let m = self.asm.contacts[c].mass;
            let step = (self.lambda_next[c] - self.last_image[c]) / m;
            let previous = self.image_step[c] / m;
            let shift_step = self.shift_next[c] - self.last_image_shift[c];
            dot += step.dot(&previous) + shift_step * self.image_shift_step[c];
            now += step.norm_squared() + shift_step * shift_step;
            before += previous.norm_squared() + self.image_shift_step[c].powi(2);
        }
        now > 0.0 && before > 0.0 && dot >= 0.999 * (now * before).sqrt()
    }

    fn remember_image(&mut self, has_previous: bool) {
        for c in 0..self.lambda.len() {
            if has_previous {
                self.image_step[c] = self.lambda_next[c] - self.last_image[c];
                self.image_shift_step[c] = self.shift_next[c] - self.last_image_shift[c];
            }
            self.last_image[c] = self.lambda_next[c];
            self.last_image_shift[c] = self.shift_next[c];
        }
    }

    /// Moves `(λ, δ)` from the last image along the drift until the first normal impulse reaches
    /// zero (at most 1e4 steps); false when no normal impulse is shrinking.
    fn jump_along_drift(&mut self) -> bool {
        let mut steps = f64::INFINITY;
        for c in 0..self.lambda.len() {
            let (l, d) = (self.lambda_next[c].x, self.image_step[c].x);
            if d < 0.0 && l > 0.0 && matches!(self.cones[c], Cone::Coulomb { .. }) {
                steps = steps.min(-l / d);
            }
        }
        if !(steps.is_finite() && steps > 1.0) {
            return false;
        }
        let steps = steps.min(1e4);
        for c in 0..self.lambda.len() {
            let moved = self.lambda_next[c] + self.image_step[c] * steps;
            self.lambda[c] = self.cones[c].project(&moved);
            self.shift[c] = (self.shift_next[c] + self.image_shift_step[c] * steps).max(0.0);
        }
        true
    }

    fn set_penalty(&mut self, kappa: f64) {
        for (beta, contact) in self.beta.iter_mut().zip(&self.asm.contacts) {
            *beta = kappa * contact.mass;
        }
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
