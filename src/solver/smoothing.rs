//! The warm-start smoother: a few projected Gauss–Seidel sweeps on the natural map, run before the
//! outer loop when a warm start lands just outside the tolerance.
//!
//! A resting scene's warm start is last step's impulses applied again to velocities they already
//! corrected; its residual is round-off and one step's drift, a few times the tolerance, spread
//! over a handful of contacts. One Newton step on the whole island (a factorization) is far more
//! than such a correction needs; a sweep over the contacts, each moving its own impulse and its
//! bodies' velocities, is a few vector operations per contact.
//!
//! Owns the per-block step sizes and the sweeps. It must not decide whether the result is kept:
//! the caller recomputes the velocities from the impulses and accepts the pair only if its
//! residuals are within the acceptance level, dropping it otherwise.

use nalgebra::{DVector, Vector3};

use super::assembly::{Assembled, Lever, Source};

/// Step sizes of the sweeps, reused across solves.
#[derive(Debug, Default)]
pub(crate) struct Smoother {
    /// `1 / trace(W_cc)` per block, where `W_cc = Σ_sides J A⁻¹ Jᵀ` is the block's Delassus
    /// diagonal: never above `1 / λ_max(W_cc)`, so each block's update is a contraction.
    step: Vec<f64>,
}

impl Smoother {
    /// Runs `sweeps` projected Gauss–Seidel sweeps `λ_c ← P_c(λ_c − ρ_c (w_c + δ(w_c)))`, updating
    /// the block impulses `lambda` and the body velocities `v` (kept equal to `A⁻¹(b + Jᵀλ)` up to
    /// round-off) after each block.
    pub fn run(&mut self, asm: &Assembled, lambda: &mut [Vector3<f64>], v: &mut DVector<f64>, sweeps: u32) {
        self.prepare(asm);
        for _ in 0..sweeps {
            for (c, contact) in asm.contacts.iter().enumerate() {
                let y = contact.cone.shifted(&(asm.jacobian_times(c, v) + contact.bias));
                let rho = self.step[c];
                let updated = contact.cone.update(&(lambda[c] - y * rho), rho);
                let change = updated - lambda[c];
                if change == Vector3::zeros() {
                    continue;
                }
                lambda[c] = updated;
                asm.apply_impulse(c, &change, v);
            }
        }
    }

    fn prepare(&mut self, asm: &Assembled) {
        self.step.clear();
        self.step.extend(asm.contacts.iter().map(|contact| {
            let mut trace = 0.0;
            for side in contact.sides.iter().flatten() {
                trace += match (contact.source, side.lever) {
                    // A contact's rows are a full orthonormal frame `R`: `Σₖ (r × dₖ)(r × dₖ)ᵀ =
                    // [r]ₓ R Rᵀ [r]ₓᵀ = |r|² I − r rᵀ`, so the side adds `3/m + |r|² tr(I⁻¹) − rᵀ I⁻¹ r`.
                    (Source::Contact(_), Lever::Point(r)) => {
                        let body = &asm.bodies[side.body];
                        let r = Vector3::new(r.x, r.y, r.z);
                        3.0 * body.inv_mass + r.norm_squared() * body.inv_inertia.trace()
                            - r.dot(&(body.inv_inertia * r))
                    }
                    _ => (0..3)
                        .map(|row| {
                            let j = side.row(&contact.frame, row);
                            j.dot(&asm.apply_inverse_block(side.body, &j))
                        })
                        .sum(),
                };
            }
            // Joint blocks use fewer than three rows; an all-zero block keeps its impulse.
            if trace > 0.0 { 1.0 / trace } else { 0.0 }
        }));
    }
}
