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

use super::assembly::{Assembled, AssembledContact, Lever, Source};
use super::cone::Cone;

/// Step sizes of the sweeps, reused across solves.
#[derive(Debug, Default)]
pub(crate) struct Smoother {
    /// `1 / trace(W_cc)` per block, where `W_cc = Σ_sides J A⁻¹ Jᵀ` is the block's Delassus
    /// diagonal: never above `1 / λ_max(W_cc)`, so each block's update is a contraction.
    step: Vec<f64>,
}

impl Smoother {
    /// Sets the step sizes for `asm`'s blocks.
    pub fn prepare(&mut self, asm: &Assembled) {
        self.step.clear();
        self.step.extend((0..asm.contacts.len()).map(|c| trace_step(asm, c)));
    }

    /// Runs `sweeps` projected Gauss–Seidel sweeps `λ_c ← P_c(λ_c − ρ_c (w_c + δ(w_c)))` with the
    /// step sizes [`Self::prepare`] set, updating the block impulses `lambda` and the body
    /// velocities `v` (kept equal to `A⁻¹(b + Jᵀλ)` up to round-off) after each block.
    pub fn sweep(&self, asm: &Assembled, lambda: &mut [Vector3<f64>], v: &mut DVector<f64>, sweeps: u32) {
        sweep_blocks(asm, lambda, v, sweeps, |c, contact, w, old| {
            natural_map_step(&contact.cone, w, old, self.step[c])
        });
    }
}

/// `sweeps` Gauss–Seidel sweeps over the blocks in order: each block's impulse `λ_c` becomes
/// `update(c, block, w_c, λ_c)`, with `w_c = J_c v + e_c` its velocity now, and the change is
/// applied to `v` at once. The sweep of the smoothing stage and of the `gauss_seidel` stage; they
/// differ only in `update`.
#[inline(always)]
pub(super) fn sweep_blocks(
    asm: &Assembled,
    lambda: &mut [Vector3<f64>],
    v: &mut DVector<f64>,
    sweeps: u32,
    update: impl Fn(usize, &AssembledContact, &Vector3<f64>, &Vector3<f64>) -> Vector3<f64>,
) {
    for _ in 0..sweeps {
        for (c, contact) in asm.contacts.iter().enumerate() {
            let w = asm.jacobian_times(c, v) + contact.bias;
            let updated = update(c, contact, &w, &lambda[c]);
            let change = updated - lambda[c];
            if change == Vector3::zeros() {
                continue;
            }
            lambda[c] = updated;
            asm.apply_impulse(c, &change, v);
        }
    }
}

/// One block's step on the natural map, `P(λ − ρ (w + δ(w)))` with step `rho`.
#[inline(always)]
pub(super) fn natural_map_step(cone: &Cone, w: &Vector3<f64>, old: &Vector3<f64>, rho: f64) -> Vector3<f64> {
    cone.update(&(old - cone.shifted(w) * rho), rho)
}

/// `1 / trace(W_cc)` of block `c` (0 for a block that does not move).
fn trace_step(asm: &Assembled, c: usize) -> f64 {
    let contact = &asm.contacts[c];
    let mut trace = 0.0;
    for side in contact.sides.iter().flatten() {
        trace += match (contact.source, side.lever) {
            // A contact's rows are a full orthonormal frame `R`: `Σₖ (r × dₖ)(r × dₖ)ᵀ =
            // [r]ₓ R Rᵀ [r]ₓᵀ = |r|² I − r rᵀ`, so the side adds `3/m + |r|² tr(I⁻¹) − rᵀ I⁻¹ r`.
            (Source::Contact(_), Lever::Point(r)) => {
                let body = &asm.bodies[side.body];
                let r = Vector3::new(r.x, r.y, r.z);
                3.0 * body.inv_mass + r.norm_squared() * body.inv_inertia.trace() - r.dot(&(body.inv_inertia * r))
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
}
