//! Rolling and torsional friction (`StepProblem::rolling`): the bounds of a manifold's
//! resistance block are its coefficients times the manifold's normal impulses, which the solve
//! itself finds.
//!
//! Held fixed, the bounds make the block a plain bounded set that every stage of the cascade
//! already handles. So the coupling is met by a fixed point over whole solves: each round solves
//! the step from the problem's own warm start with the bounds the last round's normal impulses
//! gave, the first round with those of the warm start. The rounds stop when the answer, its blocks
//! judged by the bounds its own normal impulses give, meets the tolerance: a bound that moved
//! where it holds no impulse leaves the answer as it was.
//!
//! Owns only those rounds and their report. It must not change the caller's problem: the bounds
//! are set in a copy.

use super::super::anderson::Anderson;
use super::super::assembly::Source;
use super::super::cone::Cone;
use super::super::problem::{RollingResistance, StepProblem};
use super::super::report::{InvalidInput, Solution, SolveFailure, SolveReport};
use super::{Solver, write_unsolved};

/// Most whole solves spent settling the bounds. A resting or rolling ball needs one or two: the
/// normal impulses hardly depend on the resisting torques, whose lever arms are millimetres.
pub const MAX_ROLLING_ROUNDS: u32 = 8;

/// Anderson memory over the rounds' loads.
const ANDERSON_MEMORY: usize = 3;

/// The rounds' buffers, kept by the solver so that stepping again allocates nothing.
#[derive(Default)]
pub(super) struct RollingRounds {
    /// The caller's problem with the bounds of the current loads.
    problem: StepProblem,
    /// Per resistance, the normal load its bounds are set from, N·s.
    loads: Vec<f64>,
    /// Per resistance, the normal load of the last answer.
    images: Vec<f64>,
    mixed: Vec<f64>,
    anderson: Anderson,
    /// The best round's answer so far.
    best: Solution,
}

/// Sets the bounds of `problem`'s resistance blocks from `loads`, one per resistance.
fn set_bounds(problem: &mut StepProblem, rolling: &[RollingResistance], loads: &[f64]) {
    for (r, &load) in rolling.iter().zip(loads) {
        problem.constraints[r.constraint].cone = bounds(r, load);
    }
}

impl Solver {
    pub(super) fn solve_rolling(&mut self, problem: &StepProblem, solution: &mut Solution) -> SolveReport {
        if let Some(invalid) = problem.rolling.iter().find(|r| !valid(problem, r)) {
            write_unsolved(problem, solution);
            return SolveReport {
                failure: Some(SolveFailure::InvalidInput(InvalidInput::Constraint(invalid.constraint))),
                ncp_residual: f64::INFINITY,
                feasibility_residual: f64::INFINITY,
                dynamics_residual: f64::INFINITY,
                ..Default::default()
            };
        }
        let mut rounds = std::mem::take(&mut self.rolling);
        rounds.problem.clone_from(problem);
        rounds.loads.clear();
        rounds.loads.extend(problem.rolling.iter().map(|r| {
            problem.contacts[r.contacts.clone()]
                .iter()
                .map(|c| c.warm_impulse.map_or(0.0, |w| w.dot(c.normal).max(0.0)))
                .sum::<f64>()
        }));
        rounds.images.resize(problem.rolling.len(), 0.0);
        rounds.mixed.resize(problem.rolling.len(), 0.0);
        rounds.anderson.configure(ANDERSON_MEMORY, problem.rolling.len());
        let mut counts = SolveReport::default();
        // The best round's report, its residual under its own bounds, and the round.
        let mut best: Option<(SolveReport, f64, u32)> = None;
        for round in 1..=MAX_ROLLING_ROUNDS {
            set_bounds(&mut rounds.problem, &problem.rolling, &rounds.loads);
            let report = self.solve_with_fixed_bounds(&rounds.problem, solution);
            counts = accumulated(counts, report, round);
            if matches!(report.failure, Some(SolveFailure::InvalidInput(_))) {
                self.rolling = rounds;
                return report;
            }
            for (image, r) in rounds.images.iter_mut().zip(&problem.rolling) {
                *image = solution.impulses[r.contacts.clone()].iter().map(|i| i.normal).sum();
            }
            // The answer as an answer of the coupled problem: its own blocks judged by the
            // bounds its normal impulses give.
            set_bounds(&mut rounds.problem, &problem.rolling, &rounds.images);
            let residual = self.residual_with_bounds(&rounds.problem);
            if residual <= self.settings.tolerance {
                // No earlier round was as good: it would have settled too.
                best = Some((report, residual, round));
                break;
            }
            let worst = residual.max(report.worst_residual());
            if best.is_none_or(|(best, residual, _)| worst < residual.max(best.worst_residual())) {
                best = Some((report, residual, round));
                rounds.best.clone_from(solution);
            }
            // The loads move by a constant fraction a round (about a tenth in a pile of balls):
            // extrapolated, they take fewer rounds than one per decade.
            rounds.anderson.mix(&rounds.loads, &rounds.images, &mut rounds.mixed);
            for (load, mixed) in rounds.loads.iter_mut().zip(&rounds.mixed) {
                *load = mixed.max(0.0);
            }
        }
        let Some((report, residual, round)) = best else {
            self.rolling = rounds;
            return counts;
        };
        if round < counts.rolling_rounds {
            // Rounds that cycle (the loads of a wedged ball are not unique) may end on a worse
            // answer than an earlier one.
            std::mem::swap(solution, &mut rounds.best);
        }
        let settled = residual <= self.settings.tolerance;
        let total = SolveReport {
            ncp_residual: report.ncp_residual.max(residual),
            feasibility_residual: report.feasibility_residual,
            dynamics_residual: report.dynamics_residual,
            converged: report.converged && settled,
            failure: report.failure.or((!settled).then_some(SolveFailure::BudgetExhausted)),
            penalty: report.penalty,
            warm_start_accepted: report.warm_start_accepted,
            linear_solver: report.linear_solver,
            ..counts
        };
        self.rolling = rounds;
        total
    }
}

impl Solver {
    /// The worst natural-map residual of the last answer's resistance blocks under `bounded`'s
    /// bounds, as [`super::super::residual`] measures it.
    fn residual_with_bounds(&self, bounded: &StepProblem) -> f64 {
        let mut worst = 0.0_f64;
        for (c, block) in self.asm.contacts.iter().enumerate() {
            let Source::Constraint(i) = block.source else {
                continue;
            };
            let cone = bounded.constraints[i].cone;
            if !matches!(cone, Cone::Resistance { .. }) {
                continue;
            }
            let l = self.best_lambda[c];
            let y = self.asm.jacobian_times(c, &self.best_v) + block.bias;
            let step = l - cone.update(&(l - block.mass * y), block.mass);
            let residual = step.norm() / block.mass;
            worst = if residual.is_nan() {
                f64::INFINITY
            } else {
                worst.max(residual)
            };
        }
        worst
    }
}

fn valid(problem: &StepProblem, r: &RollingResistance) -> bool {
    r.constraint < problem.constraints.len()
        && r.contacts.start <= r.contacts.end
        && r.contacts.end <= problem.contacts.len()
        && r.torsional.is_finite()
        && r.torsional >= 0.0
        && r.rolling.is_finite()
        && r.rolling >= 0.0
}

fn bounds(r: &RollingResistance, load: f64) -> Cone {
    // A non-finite load comes from a failed solve, which says so itself; it must not poison the
    // next round's bounds.
    let load = if load.is_finite() { load.max(0.0) } else { 0.0 };
    Cone::Resistance {
        torsional: r.torsional * load,
        rolling: r.rolling * load,
    }
}

/// The counts and times of every round so far: `total`'s and `last`'s summed.
fn accumulated(total: SolveReport, last: SolveReport, round: u32) -> SolveReport {
    SolveReport {
        outer_iterations: total.outer_iterations + last.outer_iterations,
        newton_iterations: total.newton_iterations + last.newton_iterations,
        cg_directions: total.cg_directions + last.cg_directions,
        line_search_iterations: total.line_search_iterations + last.line_search_iterations,
        shift_newton_steps: total.shift_newton_steps + last.shift_newton_steps,
        shift_newton_taken: total.shift_newton_taken + last.shift_newton_taken,
        polish_iterations: total.polish_iterations + last.polish_iterations,
        smoothing_sweeps: total.smoothing_sweeps + last.smoothing_sweeps,
        gauss_seidel_sweeps: total.gauss_seidel_sweeps + last.gauss_seidel_sweeps,
        held_steps: total.held_steps + last.held_steps,
        retries: total.retries + last.retries,
        distribution_solves: total.distribution_solves + last.distribution_solves,
        rolling_rounds: round,
        time: total.time + last.time,
        ..SolveReport::default()
    }
}
