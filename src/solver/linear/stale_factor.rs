//! Newton directions on large islands without refactoring `H`: conjugate gradients on the
//! current `H`, preconditioned by the factorization an earlier Newton iteration left.
//!
//! Between two Newton iterations only the contact weights `βᵢ ∂Πᵢ` change, and on a large pile
//! the sparse Cholesky's numeric factorization costs many times a solve with it: a cold stirred
//! 10³ ball lattice took 25 ms of solve time per Newton iteration refactoring every time, and 14
//! ms with these directions (`cargo bench --bench solver`). A factorization of a nearby `H` is
//! then a preconditioner good enough that a few CG iterations reach the direction to the forcing
//! asked for, at a solve and a product with `H` each. When they do not, the caller refactors.
//! Owns the CG buffers; reads `H` through the problem and the weights, never assembles it.

use nalgebra::{DVector, Matrix3};

use super::super::assembly::Assembled;
use super::{NewtonSystem, adds_nothing};

/// `out = H x` for `H = A + Σᵢ Jᵢᵀ Wᵢ Jᵢ`, without assembling `H`.
fn apply_h(asm: &Assembled, weights: &[Matrix3<f64>], x: &DVector<f64>, out: &mut DVector<f64>) {
    asm.apply_a(x, out);
    for (c, w) in weights.iter().enumerate() {
        if !adds_nothing(w) {
            asm.add_jacobian_transpose(c, &(w * asm.jacobian_times(c, x)), out);
        }
    }
}

/// `rᵀ A⁻¹ r`, with `out` as scratch.
fn mass_norm_squared(asm: &Assembled, r: &DVector<f64>, out: &mut DVector<f64>) -> f64 {
    asm.apply_a_inverse(r, out);
    r.dot(out)
}

/// The buffers of the preconditioned CG.
#[derive(Default)]
pub(crate) struct StaleFactorCg {
    residual: DVector<f64>,
    preconditioned: DVector<f64>,
    search: DVector<f64>,
    product: DVector<f64>,
}

impl StaleFactorCg {
    /// Sizes the buffers for `dofs` unknowns. Here rather than with the Newton solver's buffers:
    /// only islands that take CG directions need them.
    fn resize(&mut self, dofs: usize) {
        if self.residual.len() == dofs {
            return;
        }
        for buffer in [
            &mut self.residual,
            &mut self.preconditioned,
            &mut self.search,
            &mut self.product,
        ] {
            *buffer = std::mem::take(buffer).resize_vertically(dofs, 0.0);
        }
    }

    /// Overwrites `out` with a Newton direction `d` such that
    /// `‖H d + gradient‖_{A⁻¹} ≤ forcing · ‖gradient‖_{A⁻¹}` for the `H` of `weights`, in at most `max_iterations` CG iterations preconditioned by the
    /// factorization `system` holds, and returns true; false when it holds none, holds the exact
    /// one (a direct solve is then cheaper), or CG missed the forcing (`out` is then garbage).
    ///
    /// The `A⁻¹` norm, not the preconditioner's: a contact that separated since the
    /// factorization keeps a large weight in it, which would shrink the preconditioned residual
    /// along that contact by up to κ and stop CG early. Since `H ⪰ A`, the energy norm of the
    /// direction's error is bounded by the residual's `A⁻¹` norm.
    #[allow(clippy::too_many_arguments)]
    pub fn solve(
        &mut self,
        system: &mut NewtonSystem,
        asm: &Assembled,
        weights: &[Matrix3<f64>],
        gradient: &DVector<f64>,
        out: &mut DVector<f64>,
        forcing: f64,
        max_iterations: u32,
    ) -> bool {
        if max_iterations == 0 || system.factored_weights().is_none_or(|held| held == weights) {
            return false;
        }
        self.resize(gradient.len());
        out.fill(0.0);
        self.residual.copy_from(gradient);
        self.residual.neg_mut();
        let target = mass_norm_squared(asm, &self.residual, &mut self.product) * forcing * forcing;
        self.preconditioned.copy_from(&self.residual);
        system.solve_in_place(&mut self.preconditioned);
        self.search.copy_from(&self.preconditioned);
        let mut rz = self.residual.dot(&self.preconditioned);
        for _ in 0..max_iterations {
            apply_h(asm, weights, &self.search, &mut self.product);
            let curvature = self.search.dot(&self.product);
            // Round-off on a nearly solved system; the direct solve decides.
            if curvature.is_nan() || curvature <= 0.0 {
                return false;
            }
            let alpha = rz / curvature;
            out.axpy(alpha, &self.search, 1.0);
            self.residual.axpy(-alpha, &self.product, 1.0);
            if mass_norm_squared(asm, &self.residual, &mut self.product) <= target {
                return true;
            }
            self.preconditioned.copy_from(&self.residual);
            system.solve_in_place(&mut self.preconditioned);
            let rz_next = self.residual.dot(&self.preconditioned);
            self.search.axpy(1.0, &self.preconditioned, rz_next / rz);
            rz = rz_next;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use nalgebra::{DVector, Matrix3};

    use super::super::super::scenes::sphere_pile;
    use super::super::NewtonSystem;
    use super::super::tests::{assembled, diagonal_weights, patterned};
    use super::{StaleFactorCg, apply_h, mass_norm_squared};

    /// With `H` factored at other weights, the CG direction meets the forcing it reports, in the
    /// `A⁻¹` norm of its residual; with the exact factorization held it declines.
    #[test]
    fn a_stale_factorization_gives_a_direction_within_the_forcing() {
        let asm = assembled(&sphere_pile(4, 4, 4, 0.5, 1.0 / 60.0));
        let held = diagonal_weights(&asm, 1e3);
        // Two contacts separated, the rest loaded 20% more: a rank-six change and a scaling, which
        // CG on the stale factorization resolves in about a dozen iterations.
        let current: Vec<Matrix3<f64>> = held
            .iter()
            .enumerate()
            .map(|(c, w)| if c == 3 || c == 50 { Matrix3::zeros() } else { w * 1.2 })
            .collect();
        let n = asm.dofs();
        let rhs = patterned(n, 0);
        let gradient = -&rhs;
        let mut system = NewtonSystem::default();
        system.prepare(&asm, 0);
        system.factor(&asm, &held).expect("H is positive definite");
        let mut cg = StaleFactorCg::default();
        let mut direction = DVector::zeros(n);
        for forcing in [1e-1, 1e-3, 1e-6] {
            assert!(cg.solve(&mut system, &asm, &current, &gradient, &mut direction, forcing, 30));
            let mut residual = DVector::zeros(n);
            apply_h(&asm, &current, &direction, &mut residual);
            residual -= &rhs;
            let mut scratch = DVector::zeros(n);
            let ratio =
                (mass_norm_squared(&asm, &residual, &mut scratch) / mass_norm_squared(&asm, &rhs, &mut scratch)).sqrt();
            assert!(ratio <= forcing, "{ratio} > {forcing}");
            assert!(ratio > 1e-3 * forcing, "{ratio}: converged far past the forcing");
        }
        assert!(!cg.solve(&mut system, &asm, &current, &gradient, &mut direction, 1e-12, 1));
        assert!(!cg.solve(&mut system, &asm, &held, &gradient, &mut direction, 1e-1, 100));
    }
}
