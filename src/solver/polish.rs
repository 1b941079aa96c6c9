//! Semismooth Newton on the natural map of the whole step (an addition to the design note), for
//! when the augmented-Lagrangian outer loop stalls.
//!
//! With `v(λ) = A⁻¹(b + Jᵀλ)` the dynamics hold exactly, and the step's NCP is the fixed point
//! `λᵢ = Pᵢ(λᵢ − mᵢ ŷᵢ)` of the multiplier update at the contacts' effective masses, with
//! `ŷᵢ = Jᵢ v + eᵢ + μᵢ‖w_t,ᵢ‖ n` the de Saxcé-shifted velocity: the very residual of §4. Unlike
//! the outer loop, which freezes the shift in each surrogate, this linearises the shift and the
//! multipliers together, and converges quadratically where its Jacobian is regular.
//!
//! One step, Levenberg–Marquardt damped by `ε`, solves for `(Δv, Δλ)`
//!
//! ```text
//! A Δv − Jᵀ Δλ = 0
//! (I − Gᵢ + ε) Δλᵢ + mᵢ Gᵢ Mᵢ Jᵢ Δv = −Rᵢ        Rᵢ = λᵢ − Pᵢ,  Gᵢ = ∂Pᵢ,  Mᵢ = ∂ŷᵢ/∂wᵢ
//! ```
//!
//! Eliminating each contact's `Δλᵢ` (its 3×3 block `Cᵢ = I − Gᵢ + ε` is invertible) leaves a
//! system in the body velocities with the sparsity of the Newton matrix,
//! `(A + Σ Jᵢᵀ mᵢ Cᵢ⁻¹ Gᵢ Mᵢ Jᵢ) Δv = −Σ Jᵢᵀ Cᵢ⁻¹ Rᵢ`. Without the shift (`Mᵢ = I`) it is symmetric
//! positive definite (`Cᵢ⁻¹` and `Gᵢ` commute) and goes through the same sparse Cholesky as the
//! Newton steps; the shift adds `Mᵢ − I = e_n uᵢᵀ`, `uᵢ = (0, μᵢ w_t,ᵢ/‖w_t,ᵢ‖)`, one rank-one
//! term per contact, taken by the Sherman–Morrison–Woodbury formula over the sliding contacts
//! (a dense LU of their count, or BiCGSTAB without forming it when they are many:
//! `linear::capacitance`). On a sticking contact `w_t` vanishes at the solution, where
//! `uᵢ = 0` is an element of the shift's generalized Jacobian, so it is dropped there. Started from
//! the warm start of 15 captured steps of the 125-sphere pen, this took 706 steps in all where the
//! earlier solve over the Delassus blocks (faer sparse LU, every contact's shift linearised) took
//! 705, and 1.2 s instead of 5.5 s; 11 steps converged instead of 10.
//!
//! It runs only on a solve that spent its outer budget. It stalls on a redundant set of sticking
//! contacts whose biases disagree (a sphere wedged into a corner of the pen by its neighbours),
//! where the exact answer slides at a speed of the order of the disagreement and the Jacobian of
//! the sticking set is singular: the damping keeps each step finite there.
//!
//! Owns its buffers; reads the assembled problem; factors with the solver's Newton system (same
//! sparsity); writes only `(v, λ)`.

use nalgebra::{DVector, Matrix3, Vector3};

use super::assembly::Assembled;
use super::cone::{self, Cone, ConeRegime};
use super::linear::{CapacitanceSolver, DenseLu, NewtonSystem};
use super::residual::{ContactResiduals, contact_residuals};

/// Tangential speeds below this give the shift no direction to differentiate, m/s.
const MIN_SLIDING_SPEED: f64 = 1e-12;

/// Levenberg–Marquardt damping `ε` of `I − Gᵢ` (dimensionless): redundant sticking contacts
/// (four on a sphere, or more) make the Jacobian singular, and an undamped step runs off along
/// the impulses that change no velocity. Divided by 10 after a step that lowers the residual,
/// multiplied by 10 after one that does not. A sticking contact enters the velocity system with
/// weight `mᵢ/ε`, so the floor keeps that system's condition number within what a Cholesky
/// factorization resolves (the same bound as the outer loop's largest penalty).
const INITIAL_DAMPING: f64 = 1e-3;
const MIN_DAMPING: f64 = 1e-8;
const MAX_DAMPING: f64 = 1e3;

/// How far one polish goes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PolishLimits {
    /// The residual it stops within, m/s.
    pub tolerance: f64,
    /// Most steps.
    pub iterations: u32,
    /// Sliding contacts from which the Woodbury system goes to BiCGSTAB
    /// ([`crate::solver::SolverSettings::krylov_from`]).
    pub krylov_min_sliding: usize,
}

#[derive(Default)]
pub(crate) struct Polish {
    /// Per contact: `Rᵢ = λᵢ − Pᵢ`, `Gᵢ` and `uᵢ`, zero unless the contact slides (then its shift
    /// is linearised).
    residual: Vec<Vector3<f64>>,
    jacobian: Vec<Matrix3<f64>>,
    shift_row: Vec<Vector3<f64>>,
    /// Per contact, for the current damping: `Cᵢ⁻¹` and `mᵢ Cᵢ⁻¹ Gᵢ`.
    inverse: Vec<Matrix3<f64>>,
    weights: Vec<Matrix3<f64>>,
    /// The sliding contacts, `K_s⁻¹ pₖ` for each, and the capacitance system.
    active: Vec<usize>,
    columns: Vec<DVector<f64>>,
    capacitance: DenseLu,
    coefficients: Vec<f64>,
    /// The Krylov path's solver, and its `−K_s⁻¹ P c`.
    krylov: CapacitanceSolver,
    moved: DVector<f64>,
    rhs: DVector<f64>,
    trial: Vec<Vector3<f64>>,
    scratch: DVector<f64>,
    trial_v: DVector<f64>,
}

impl Polish {
    /// Runs up to `limits.iterations` Newton steps from `lambda` (and `v = v(λ)`, recomputed),
    /// until within `limits.tolerance`, taking a step only if it lowers the summed squared
    /// residual. Writes the final `(v, λ)` back and returns their residuals and the number of
    /// linear systems solved.
    pub fn run(
        &mut self,
        asm: &Assembled,
        system: &mut NewtonSystem,
        v: &mut DVector<f64>,
        lambda: &mut [Vector3<f64>],
        limits: PolishLimits,
    ) -> (ContactResiduals, u32) {
        let nc = asm.contacts.len();
        let dofs = asm.dofs();
        for buffer in [&mut self.rhs, &mut self.scratch, &mut self.trial_v, &mut self.moved] {
            *buffer = std::mem::take(buffer).resize_vertically(dofs, 0.0);
        }
        for buffer in [&mut self.residual, &mut self.shift_row] {
            buffer.resize(nc, Vector3::zeros());
        }
        for buffer in [&mut self.jacobian, &mut self.inverse, &mut self.weights] {
            buffer.resize(nc, Matrix3::zeros());
        }
        asm.velocities_for(lambda, &mut self.scratch, v);
        let mut current = self.evaluate(asm, v, lambda, true);
        let mut damping = INITIAL_DAMPING;
        let mut solved = 0;
        for _ in 0..limits.iterations {
            let residuals = contact_residuals(asm, v, lambda);
            if residuals.within(limits.tolerance) || !current.is_finite() || damping > MAX_DAMPING {
                break;
            }
            if !self.solve_step(asm, system, lambda, damping, limits.krylov_min_sliding) {
                break;
            }
            solved += 1;
            let trial = std::mem::take(&mut self.trial);
            asm.velocities_for(&trial, &mut self.scratch, &mut self.trial_v);
            let trial_v = std::mem::take(&mut self.trial_v);
            let evaluation = self.evaluate(asm, &trial_v, &trial, false);
            self.trial = trial;
            self.trial_v = trial_v;
            if evaluation >= current {
                damping *= 10.0;
                continue;
            }
            damping = (damping * 0.1).max(MIN_DAMPING);
            lambda.copy_from_slice(&self.trial);
            v.copy_from(&self.trial_v);
            current = self.evaluate(asm, v, lambda, true);
        }
        (contact_residuals(asm, v, lambda), solved)
    }

    /// The summed squares of `rᵢ = (λᵢ − Pᵢ(λᵢ − mᵢŷᵢ)) / mᵢ` (m/s); with `linearise`, keeps each
    /// `Rᵢ = mᵢ rᵢ`, `Gᵢ` and, on a sliding contact, the shift's row `uᵢ`.
    fn evaluate(&mut self, asm: &Assembled, v: &DVector<f64>, lambda: &[Vector3<f64>], linearise: bool) -> f64 {
        let mut merit = 0.0;
        for (c, contact) in asm.contacts.iter().enumerate() {
            let m = contact.mass;
            let w = asm.jacobian_times(c, v) + contact.bias;
            let y = contact.cone.shifted(&w);
            let argument = lambda[c] - m * y;
            let (p, g) = contact.cone.update_with_jacobian(&argument, m);
            let r = lambda[c] - p;
            merit += (r / m).norm_squared();
            if !linearise {
                continue;
            }
            self.residual[c] = r;
            self.jacobian[c] = g;
            self.shift_row[c] = Vector3::zeros();
            if let Cone::Coulomb { mu } = contact.cone {
                let speed = cone::tangent_norm(&w);
                if speed > MIN_SLIDING_SPEED && cone::project(mu, &argument).1 == ConeRegime::Slide {
                    self.shift_row[c] = Vector3::new(0.0, mu * w.y / speed, mu * w.z / speed);
                }
            }
        }
        if merit.is_nan() { f64::INFINITY } else { merit }
    }

    /// The Woodbury correction by BiCGSTAB (`linear::capacitance`): `(I + Qᵀ K_s⁻¹ P) c =
    /// Qᵀ K_s⁻¹ rhs` with `rhs` holding `K_s⁻¹ rhs`, leaving `−K_s⁻¹ P c` in `moved`; false if
    /// BiCGSTAB does not converge.
    fn krylov_correction(&mut self, asm: &Assembled, system: &mut NewtonSystem) -> bool {
        self.coefficients.clear();
        for &c in &self.active {
            self.coefficients
                .push(self.shift_row[c].dot(&asm.jacobian_times(c, &self.rhs)));
        }
        // The rank-one terms: `−pₖ`'s block (column 0 of `mₖ Cₖ⁻¹ Gₖ`), and `uₖ`.
        let (weights, shift_row) = (&self.weights, &self.shift_row);
        let term = |c: usize| (-Vector3::from(weights[c].column(0)), shift_row[c]);
        self.krylov.solve(
            asm,
            system,
            &self.active,
            term,
            &mut self.coefficients,
            &mut self.moved,
            None,
        )
    }

    /// Solves the damped step into `trial` (`λ + Δλ`); false if a factorization fails or the step
    /// is not finite.
    fn solve_step(
        &mut self,
        asm: &Assembled,
        system: &mut NewtonSystem,
        lambda: &[Vector3<f64>],
        damping: f64,
        krylov_min_sliding: usize,
    ) -> bool {
        self.active.clear();
        for (c, contact) in asm.contacts.iter().enumerate() {
            let g = self.jacobian[c];
            let Some(inverse) = (Matrix3::identity() * (1.0 + damping) - g).try_inverse() else {
                return false;
            };
            let weight = contact.mass * inverse * g;
            self.inverse[c] = inverse;
            // Symmetric in exact arithmetic; made so to the bit for the Cholesky.
            self.weights[c] = 0.5 * (weight + weight.transpose());
            if self.shift_row[c] != Vector3::zeros() {
                self.active.push(c);
            }
        }
        if system.factor(asm, &self.weights).is_err() {
            return false;
        }
        // Δv = K⁻¹ rhs with K = K_s + Σₖ pₖ qₖᵀ, pₖ = Jₖᵀ (column 0 of mₖ Cₖ⁻¹ Gₖ), qₖ = Jₖᵀ uₖ.
        self.rhs.fill(0.0);
        for c in 0..asm.contacts.len() {
            asm.add_jacobian_transpose(c, &(-(self.inverse[c] * self.residual[c])), &mut self.rhs);
        }
        system.solve_in_place(&mut self.rhs);
        let k = self.active.len();
        if k > 0 && k >= krylov_min_sliding && self.krylov_correction(asm, system) {
            self.rhs += &self.moved;
        } else if k > 0 {
            let dofs = asm.dofs();
            if self.columns.len() < k {
                self.columns.resize_with(k, || DVector::zeros(dofs));
            }
            for (column, &c) in self.columns[..k].iter_mut().zip(&self.active) {
                *column = std::mem::take(column).resize_vertically(dofs, 0.0);
                column.fill(0.0);
                asm.add_jacobian_transpose(c, &self.weights[c].column(0).into(), column);
            }
            system.solve_columns_in_place(&mut self.columns[..k]);
            // (I + Qᵀ K_s⁻¹ P) c = Qᵀ K_s⁻¹ rhs, then Δv = K_s⁻¹ rhs − K_s⁻¹ P c.
            let matrix = self.capacitance.matrix_mut(k);
            self.coefficients.clear();
            for (a, &i) in self.active.iter().enumerate() {
                let u = self.shift_row[i];
                for (b, column) in self.columns[..k].iter().enumerate() {
                    matrix[b * k + a] = u.dot(&asm.jacobian_times(i, column));
                }
                matrix[a * k + a] += 1.0;
                self.coefficients.push(u.dot(&asm.jacobian_times(i, &self.rhs)));
            }
            if !self.capacitance.solve_in_place(&mut self.coefficients) {
                return false;
            }
            for (column, &coefficient) in self.columns[..k].iter().zip(&self.coefficients) {
                self.rhs.axpy(-coefficient, column, 1.0);
            }
        }
        if !self.rhs.iter().all(|x| x.is_finite()) {
            return false;
        }
        // Δλᵢ = −Cᵢ⁻¹ (Rᵢ + mᵢ Gᵢ Mᵢ Jᵢ Δv).
        self.trial.clear();
        for (c, contact) in asm.contacts.iter().enumerate() {
            let mut moved = asm.jacobian_times(c, &self.rhs);
            moved.x += self.shift_row[c].dot(&moved);
            let change = -(self.inverse[c] * (self.residual[c] + contact.mass * self.jacobian[c] * moved));
            self.trial.push(lambda[c] + change);
        }
        true
    }
}
