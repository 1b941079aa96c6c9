//! A near-miss warm start corrected through the factorization an earlier solve left: the
//! impulse change that stops the sticking blocks, found with the `H` of the island's last solve
//! that iterated, for as long as the island keeps that solve's bodies and blocks.
//!
//! A resting scene's warm starts drift out of the acceptance level by round-off and one step's
//! creep at a time. The smoothing sweeps (`gauss_seidel`) bring such a start back inside it, but
//! only just: on the 210-box pyramid, three sweeps (of the step size they had then) left 2–4e-9
//! m/s against the 1e-8 level, and the next step's warm start, which repeats the sweeps'
//! correction, started above 5e-9 again, so that 256 of 600 steps were smoothed. Through the
//! held factorization each step gains about a factor of ten (1.3e-8 → 3.9e-9 → 2.8e-10 →
//! 3.2e-11 m/s on that pyramid), and the holding guess (`holding`) made with the same
//! factorization then hands the next steps a warm start that holds.
//!
//! The step uses `H` only through Woodbury's identity, as the inverse of the sticking blocks'
//! Delassus matrix. An augmented-Lagrangian iteration through it diverged instead: its multiplier
//! update multiplies the error of an `H` made for other positions by the penalty, and at κ = 1000
//! the residual grew a thousandfold a step.
//!
//! Owns the step only. Whether a factorization fits the island, and whether its answer is kept,
//! is the caller's: the caller compares the pattern, and judges the pair by its residuals.

use nalgebra::{DVector, Vector3};

use super::assembly::Assembled;
use super::cone::Cone;
use super::linear::NewtonSystem;

/// Buffers of the step, reused across steps.
#[derive(Debug, Default)]
pub(crate) struct HeldStep {
    /// Per block, the diagonal of its weight in the factorization (zero where open).
    weight: Vec<Vector3<f64>>,
    /// Per block, the velocity change that stops it, `−w`.
    stop: Vec<Vector3<f64>>,
    direction: DVector<f64>,
}

impl HeldStep {
    /// Whether `system` holds a factorization this step can use for `asm`: one with a weight
    /// per block, none coupling a block's rows (no contact sliding), and no drive (whose update
    /// is not the plain multiplier step).
    pub fn usable(asm: &Assembled, system: &NewtonSystem) -> bool {
        system.factored_diagonal()
            && system.factored_weights().is_some_and(|w| w.len() == asm.contacts.len())
            && asm.contacts.iter().all(|c| !matches!(c.cone, Cone::Drive { .. }))
    }

    /// From `(λ, v)` with `v = v(λ)`: the change of the active blocks' impulses that stops
    /// their velocities, `Δλ = (B⁻¹ + J A⁻¹ Jᵀ)⁻¹ (−w) = B (−w − J H⁻¹ Jᵀ B (−w))` by Woodbury's
    /// identity with `H = A + Jᵀ B J` the factorization held (`B` its weights), then
    /// `λ ← P(λ + Δλ)`. The caller recomputes `v(λ)`.
    pub fn run(&mut self, asm: &Assembled, system: &mut NewtonSystem, lambda: &mut [Vector3<f64>], v: &DVector<f64>) {
        let Some(weights) = system.factored_weights() else {
            return;
        };
        self.weight.clear();
        self.weight.extend(weights.iter().map(|w| w.diagonal()));
        self.stop.clear();
        self.stop.extend(
            asm.contacts
                .iter()
                .enumerate()
                .map(|(c, contact)| -contact.cone.shifted(&(asm.jacobian_times(c, v) + contact.bias))),
        );
        self.direction = std::mem::take(&mut self.direction).resize_vertically(asm.dofs(), 0.0);
        self.direction.fill(0.0);
        for c in 0..asm.contacts.len() {
            let weighted = self.weight[c].component_mul(&self.stop[c]);
            asm.add_jacobian_transpose(c, &weighted, &mut self.direction);
        }
        system.solve_in_place(&mut self.direction);
        for (c, contact) in asm.contacts.iter().enumerate() {
            let change = self.weight[c].component_mul(&(self.stop[c] - asm.jacobian_times(c, &self.direction)));
            lambda[c] = contact.cone.project(&(lambda[c] + change));
        }
    }
}
