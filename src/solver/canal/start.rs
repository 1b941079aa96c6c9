//! Before the outer loop: a warm start whose contacts' loads shift steadily is carried on by
//! their trends (`carry_trend`), a warm start that just misses the acceptance level is corrected
//! through the factorization an earlier solve left (`held_step`) or by a few smoothing sweeps,
//! and a solve that starts far from its answer at a loose tolerance first runs the Gauss–Seidel
//! sweeps. Each works on a trial pair and keeps it only if it is better.
//!
//! Part of [`Solver`]: works on its buffers, which `mod.rs` sizes; reads the assembled problem.

use super::Solver;
use crate::solver::assembly::Source;
use crate::solver::held_step::HeldStep;
use crate::solver::problem::StepProblem;
use crate::solver::report::SolveReport;
use crate::solver::residual::{ContactResiduals, contact_residuals};
use crate::solver::settings::SolverSettings;

/// Gauss–Seidel sweeps between two checks of their residuals: a check (the velocities from the
/// impulses, then the residuals) costs about as much as a sweep.
const SWEEPS_PER_CHECK: u32 = 5;

/// Smoothing sweeps between two checks once the first `smoothing_sweeps` have missed.
const SMOOTHING_SWEEPS_PER_CHECK: u32 = 10;

/// The fraction of each contact's trend the carried warm start adds (`SolverSettings::warm_trend`).
/// Below 1, so that a drift of loads that changes no velocity (a statically indeterminate pile's),
/// carried along with a real trend, dies away instead of going on step after step.
const TREND_CARRY: f64 = 0.9;

impl Solver {
    /// Replaces the warm start `(λ, v)`, whose residuals are `plain`, by the one carried on by
    /// [`TREND_CARRY`] of the contacts' trends if that has the smaller residual (see
    /// `SolverSettings::warm_trend`); returns the residuals of the start kept.
    pub(super) fn carry_trend(&mut self, problem: &StepProblem, plain: ContactResiduals) -> ContactResiduals {
        let mut any = false;
        self.begin_trial();
        for (c, contact) in self.asm.contacts.iter().enumerate() {
            let Source::Contact(i) = contact.source else {
                continue;
            };
            let (Some(warm), Some(trend)) = (problem.contacts[i].warm_impulse, problem.contacts[i].warm_trend) else {
                continue;
            };
            let carried = warm + TREND_CARRY * trend;
            if !carried.is_finite() {
                continue;
            }
            self.lambda_next[c] = contact.cone.project(&contact.rows_of(carried));
            any = true;
        }
        if !any {
            return plain;
        }
        let carried = self.trial_residuals();
        if carried.worst() >= plain.worst() {
            return plain;
        }
        self.keep_trial();
        carried
    }

    /// Smooths the warm start `(λ, v)` in scratch buffers and, if the smoothed pair (with `v`
    /// recomputed from the impulses, so it satisfies the dynamics exactly) is within `accept`,
    /// keeps it as the answer and returns its residuals; `report` counts the sweeps. The first
    /// `smoothing_sweeps` stop at `accept`, as they always have on a resting pyramid; if they
    /// miss it, the sweeps go on up to `smoothing_budget`, and stop early only at the headroom
    /// target: a settled pile smoothed just inside `accept` starts the next step just outside it
    /// again.
    /// Otherwise the outer loop starts from the warm start as given: a smoothed iterate moves
    /// load between a body's redundant contacts, and a loose solve continued from there let a
    /// ten-box stack at 1e-4 m/s tilt until corners dug in 6 mm.
    pub(super) fn smooth_warm_start(
        &mut self,
        settings: &SolverSettings,
        accept: f64,
        report: &mut SolveReport,
    ) -> Option<ContactResiduals> {
        let first = settings.smoothing_sweeps;
        let budget = settings.smoothing_budget.max(first);
        self.gauss_seidel.prepare(&self.asm);
        self.begin_trial();
        let smoothed = loop {
            let sweeps = if report.smoothing_sweeps == 0 {
                first
            } else {
                SMOOTHING_SWEEPS_PER_CHECK.min(budget - report.smoothing_sweeps)
            };
            self.gauss_seidel
                .sweep(&self.asm, &mut self.lambda_next, &mut self.scratch2, sweeps);
            report.smoothing_sweeps += sweeps;
            let smoothed = self.trial_residuals();
            let goal = if report.smoothing_sweeps == first {
                accept
            } else {
                settings.headroom_target()
            };
            if smoothed.within(goal) || report.smoothing_sweeps >= budget {
                break smoothed;
            }
        };
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
    pub(super) fn sweep_from_start(
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
    pub(super) fn correct_through_held(
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
}
