//! Rolling and torsional friction (`StepProblem::rolling`): the bounds of a manifold's
//! resistance block are its coefficients times the manifold's normal impulses, which the solve
//! itself finds.
//!
//! Held fixed, the bounds make the block a plain bounded set that every stage of the cascade
//! handles. The outer loop moves them with the loads, as the de Saxcé shift moves with the
//! velocities: each iterate is judged with the bounds of its own loads, and the next surrogate is
//! built with them ([`AssembledResistances`]), so an outer loop that converges has converged on
//! the bounds too. The other stages (an accepted or corrected warm start, the smoothing sweeps,
//! the polish) keep the bounds they were given. So whole solves are repeated in rounds: each from
//! the problem's own warm start, with the bounds the last round's normal impulses gave (the
//! first with those of the warm start), until the answer, its blocks judged by the bounds of its
//! own loads, meets the tolerance.
//!
//! Owns only those bounds, the rounds and their report. It must not change the caller's
//! problem: the rounds set their bounds in a copy.

use nalgebra::Vector3;

use super::super::assembly::{Assembled, Source};
use super::super::cone::Cone;
use super::super::problem::{RollingResistance, StepProblem};
use super::super::report::{InvalidInput, Solution, SolveFailure, SolveReport};
use super::{Solver, write_unsolved};

/// Rounds in a row that may fail to halve the best residual before the rounds stop.
const STAGNANT_ROUNDS: u32 = 2;

/// A round whose residual under its own bounds is within this factor of its solve's residual
/// is limited by the solve, not by the bounds.
const BOUNDS_LIMIT: f64 = 10.0;

/// The rounds' buffers, kept by the solver so that stepping again allocates nothing.
#[derive(Default)]
pub(super) struct RollingRounds {
    /// The caller's problem with the bounds of the current loads.
    problem: StepProblem,
    /// Per resistance, the normal load its bounds are set from, N·s.
    loads: Vec<f64>,
    /// Per resistance, the normal load of the last answer.
    images: Vec<f64>,
    /// The best round's answer so far.
    best: Solution,
}

/// A problem's rolling resistances in assembled blocks: each outer iteration sets their bounds
/// from the multipliers' normal loads, as the de Saxcé shift follows the velocities, so that an
/// outer loop that converges has converged on the bounds too. The rounds above are left the
/// steps whose outer loop did not converge, or whose answer came from another stage.
#[derive(Default)]
pub(super) struct AssembledResistances {
    blocks: Vec<AssembledResistance>,
    /// The assembled blocks of the resistances' contacts.
    contacts: Vec<usize>,
    /// The assembled block of each problem contact, and of each problem constraint.
    contact_block: Vec<Option<usize>>,
    constraint_block: Vec<Option<usize>>,
}

/// One resistance: its assembled block, the range of its contacts' blocks in
/// [`AssembledResistances::contacts`], and its coefficients.
struct AssembledResistance {
    block: usize,
    contacts: std::ops::Range<usize>,
    torsional: f64,
    rolling: f64,
}

impl AssembledResistances {
    pub(super) fn assemble(&mut self, problem: &StepProblem, asm: &Assembled) {
        self.blocks.clear();
        self.contacts.clear();
        if problem.rolling.is_empty() {
            return;
        }
        self.contact_block.clear();
        self.contact_block.resize(problem.contacts.len(), None);
        self.constraint_block.clear();
        self.constraint_block.resize(problem.constraints.len(), None);
        for (c, block) in asm.contacts.iter().enumerate() {
            match block.source {
                Source::Contact(i) => self.contact_block[i] = Some(c),
                Source::Constraint(i) => self.constraint_block[i] = Some(c),
            }
        }
        for r in &problem.rolling {
            let Some(block) = self.constraint_block[r.constraint] else {
                continue;
            };
            let start = self.contacts.len();
            self.contacts
                .extend(r.contacts.clone().filter_map(|i| self.contact_block[i]));
            self.blocks.push(AssembledResistance {
                block,
                contacts: start..self.contacts.len(),
                torsional: r.torsional,
                rolling: r.rolling,
            });
        }
    }

    /// Sets each resistance block's bounds from the normal loads of `lambda`.
    pub(super) fn follow_loads(&self, lambda: &[Vector3<f64>], cones: &mut [Cone], asm: &mut Assembled) {
        for r in &self.blocks {
            let load: f64 = self.contacts[r.contacts.clone()]
                .iter()
                .map(|&c| lambda[c].x.max(0.0))
                .sum();
            let cone = bounds(r.torsional, r.rolling, load);
            cones[r.block] = cone;
            asm.contacts[r.block].cone = cone;
        }
    }
}

/// Sets the bounds of `problem`'s resistance blocks from `loads`, one per resistance.
fn set_bounds(problem: &mut StepProblem, rolling: &[RollingResistance], loads: &[f64]) {
    for (r, &load) in rolling.iter().zip(loads) {
        problem.constraints[r.constraint].cone = bounds(r.torsional, r.rolling, load);
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
        let mut counts = SolveReport::default();
        // The best round's report, its residual under its own bounds, and the round.
        let mut best: Option<(SolveReport, f64, u32)> = None;
        let mut stagnant = 0;
        for round in 1..=self.settings.max_rolling_rounds.max(1) {
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
            let best_worst = best.map_or(f64::INFINITY, |(best, residual, _)| residual.max(best.worst_residual()));
            stagnant = if worst <= 0.5 * best_worst { 0 } else { stagnant + 1 };
            if best.is_none() || worst < best_worst {
                best = Some((report, residual, round));
                rounds.best.clone_from(solution);
            }
            // A solve that did not converge on its own is not held back by its bounds: another
            // round from the same start would spend the same budget for the same answer.
            if stagnant >= STAGNANT_ROUNDS || residual <= BOUNDS_LIMIT * report.worst_residual() {
                break;
            }
            std::mem::swap(&mut rounds.loads, &mut rounds.images);
        }
        let Some((report, residual, round)) = best else {
            // Only when no round ran.
            self.rolling = rounds;
            return SolveReport {
                ncp_residual: f64::INFINITY,
                feasibility_residual: f64::INFINITY,
                failure: Some(SolveFailure::BudgetExhausted),
                ..counts
            };
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

/// The bounds of a resistance of coefficients `torsional` and `rolling` under `load`.
fn bounds(torsional: f64, rolling: f64, load: f64) -> Cone {
    // A non-finite load comes from a failed solve, which says so itself; it must not poison the
    // next bounds.
    let load = if load.is_finite() { load.max(0.0) } else { 0.0 };
    Cone::Resistance {
        torsional: torsional * load,
        rolling: rolling * load,
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
