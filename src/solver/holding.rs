//! The next step's warm start (design note §3, warm start): this step's impulses, less the part
//! that changed the constrained velocities over the step.
//!
//! A body that arrives at its support with a small velocity `a` is stopped by an impulse that
//! includes `m·a`. Warm-starting the next step with that impulse applies `m·a` again to a body
//! already at rest, which leaves at `−a` unless the solve iterates once more. On a resting scene
//! such a solve absorbs the creep its accepted warm starts let build up; its answer then makes the
//! creep run the other way, and a creep of a few 1e-9 m/s kept half the steps iterating: the
//! 210-box pyramid beyond step 630 swung with period 4 (accepted at `+P`, iterating at `+2P`,
//! accepted at `−P`, iterating at `−2P`).
//!
//! The impulses wanted are those of the next step if only the velocities changed: its free
//! momentum exceeds this step's by `A (v − v₀)`. The change `μ` they need solves the linear
//! system of the blocks the factorization holds active, and the augmented-Lagrangian iteration
//! with that factorization and its weights,
//!
//! ```text
//! u = H⁻¹ (A (v − v₀) + Jᵀ μ),    μᵢ ← μᵢ − Wᵢ Jᵢ u,    Wᵢ = βᵢ ∂Pᵢ,    μ₀ = 0,
//! ```
//!
//! converges on it while the active set holds. Each iterate `Π(λ + μ)` is judged by the residual
//! the next step would start at from it, and the best is kept if it beats the step's impulses.
//! The updates stop when one no longer gains: what is left then is the solve's own residual.
//!
//! Only where the weights keep each block's rows apart (every block sticking, open, or a joint
//! row): a sliding contact's shift moves with its slip, which `H` holds fixed.
//!
//! Owns that guess only. It must not touch the step's own impulses or velocities: they are the
//! answer, and this is a guess for the next step.

use nalgebra::{DVector, Vector3, Vector6};

use super::assembly::Assembled;
use super::linear::NewtonSystem;
use super::problem::SolverBody;
use super::residual::contact_residuals;

/// Most updates spent on the guess. A 20-row pyramid that absorbed 1.75e-6 m/s starts the next
/// step at 1.4e-10 m/s from the guess, where the step's impulses leave 1.8e-6; on the resting
/// pyramid the first update is usually the best.
const MAX_UPDATES: usize = 8;

/// The step's answer and what the guess is made from.
pub(crate) struct Answer<'a> {
    /// The step-start velocities.
    pub start: &'a [SolverBody],
    /// End-of-step velocities.
    pub v: &'a DVector<f64>,
    /// The step's impulses.
    pub lambda: &'a [Vector3<f64>],
}

/// Buffers of the guess, reused across steps.
#[derive(Debug, Default)]
pub(crate) struct Holding {
    /// The best guess.
    pub held: Vec<Vector3<f64>>,
    lambda: Vec<Vector3<f64>>,
    /// The change μ from the step's impulses.
    change: Vec<Vector3<f64>>,
    momentum: DVector<f64>,
    drift: DVector<f64>,
    u: DVector<f64>,
    scratch: DVector<f64>,
}

impl Holding {
    /// Sets [`Self::held`] to the impulses that hold `answer.v`: the best of the updates, which
    /// run while each gains, up to [`MAX_UPDATES`], until the next step's residual is within
    /// `target` m/s. False, leaving it unspecified, if the factorization held does not allow the
    /// guess or the guess is no nearer than `answer.lambda`.
    pub fn guess(&mut self, asm: &Assembled, system: &mut NewtonSystem, answer: &Answer, target: f64) -> bool {
        if !system.factored_diagonal() {
            return false;
        }
        let dofs = asm.dofs();
        for buffer in [&mut self.momentum, &mut self.drift, &mut self.u, &mut self.scratch] {
            *buffer = std::mem::take(buffer).resize_vertically(dofs, 0.0);
        }
        for (i, body) in answer.start.iter().enumerate() {
            let (l, w) = (body.linear_velocity, body.angular_velocity);
            let change = answer.v.fixed_rows::<6>(6 * i) - Vector6::new(l.x, l.y, l.z, w.x, w.y, w.z);
            self.drift.fixed_rows_mut::<6>(6 * i).copy_from(&change);
        }
        asm.apply_a(&self.drift, &mut self.momentum);
        let nc = answer.lambda.len();
        self.lambda.clear();
        self.lambda.extend_from_slice(answer.lambda);
        self.held.clear();
        self.held.extend_from_slice(answer.lambda);
        self.change.clear();
        self.change.resize(nc, Vector3::zeros());
        let start = self.next_step_residual(asm);
        let mut best = start;
        for _ in 0..MAX_UPDATES {
            if best <= target {
                break;
            }
            // The augmented-Lagrangian update of the change μ: u = H⁻¹(A (v − v₀) + Jᵀ μ),
            // μ ← μ − W J u.
            self.u.copy_from(&self.momentum);
            for (c, change) in self.change.iter().enumerate() {
                asm.add_jacobian_transpose(c, change, &mut self.u);
            }
            system.solve_in_place(&mut self.u);
            let Some(weights) = system.factored_weights() else {
                return false;
            };
            for (c, contact) in asm.contacts.iter().enumerate() {
                self.change[c] -= weights[c] * asm.jacobian_times(c, &self.u);
                self.lambda[c] = contact.cone.project(&(answer.lambda[c] + self.change[c]));
            }
            let residual = self.next_step_residual(asm);
            // The updates converge on the velocities' part of the answer; once they stop gaining,
            // what is left is the solve's own residual.
            if residual.partial_cmp(&best) != Some(std::cmp::Ordering::Less) {
                break;
            }
            best = residual;
            self.held.copy_from_slice(&self.lambda);
        }
        // A NaN fails the comparison and keeps the step's impulses.
        best < start
    }

    /// The residual the next step would start at from `self.lambda`, if only the velocities
    /// changed: its velocities are this step's for the same impulses plus the step's change.
    fn next_step_residual(&mut self, asm: &Assembled) -> f64 {
        asm.velocities_for(&self.lambda, &mut self.scratch, &mut self.u);
        self.u += &self.drift;
        contact_residuals(asm, &self.u, &self.lambda).worst()
    }
}
