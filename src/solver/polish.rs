//! Semismooth Newton on the natural map of the whole step (an addition to the design note), for
//! when the augmented-Lagrangian outer loop stalls.
//!
//! With `v(λ) = A⁻¹(b + Jᵀλ)` the dynamics hold exactly, and the step's NCP is the fixed point
//! `λᵢ = Pᵢ(λᵢ − mᵢ ŷᵢ)` of the multiplier update at the contacts' effective masses, with
//! `ŷᵢ = Jᵢ v + eᵢ + μᵢ‖w_t,ᵢ‖ n` the de Saxcé-shifted velocity: the very residual of §4. Its
//! generalized Jacobian is `(I − Gᵢ) δᵢⱼ + mᵢ Gᵢ Mᵢ Wᵢⱼ`, with `Gᵢ = ∂Pᵢ`, `Mᵢ = ∂ŷᵢ/∂wᵢ` (the
//! shift's derivative) and the Delassus blocks `Wᵢⱼ = Jᵢ A⁻¹ Jⱼᵀ`; a sparse non-symmetric system
//! of three rows per contact, solved by faer's sparse LU, damped Levenberg–Marquardt style.
//! Unlike the outer loop, which freezes the shift in each surrogate, this linearises the shift
//! and the multipliers together, and converges quadratically where its Jacobian is regular.
//!
//! It runs only on a solve that spent its outer budget. On the 125-sphere pen 59 such steps in
//! three seconds started at 3e-7–2e-4 m/s; 30 ended at or below 1e-6 and one reached 1e-8. It
//! stalls on a redundant set of sticking contacts whose biases disagree (a sphere wedged into a
//! corner of the pen by its neighbours), where the exact answer slides at a speed of the order of
//! the disagreement and the Jacobian of the sticking set is singular.
//!
//! Owns its buffers; reads the assembled problem; writes only `(v, λ)`. Being a rescue path, it
//! builds its matrix from triplets and factors it afresh each iteration (the symbolic analysis is
//! kept within a run): not allocation-free.

use faer::sparse::linalg::solvers::{Lu, SymbolicLu};
use faer::sparse::{SparseColMat, Triplet};
use faer::{MatMut, linalg::solvers::Solve};
use nalgebra::{DVector, Matrix3, Matrix3x6, Matrix6x3, Vector3};

use super::assembly::Assembled;
use super::cone::{self, Cone};
use super::residual::{ContactResiduals, contact_residuals};

/// Tangential speeds below this give the shift no direction to differentiate, m/s.
const MIN_SLIDING_SPEED: f64 = 1e-12;

/// Levenberg–Marquardt damping added to the diagonal (the rows are scaled so that theirs is about
/// 1): redundant sticking contacts (four on a sphere, or more) make the Jacobian singular, and an
/// undamped step runs off along the impulses that change no velocity. Divided by 10 after a step
/// that lowers the residual, multiplied by 10 after one that does not.
const INITIAL_DAMPING: f64 = 1e-3;
const MIN_DAMPING: f64 = 1e-12;
const MAX_DAMPING: f64 = 1e3;

#[derive(Default)]
pub(crate) struct Polish {
    /// `A_b⁻¹ Jᵢ,bᵀ` per contact side.
    inverse_transposed: Vec<[Option<Matrix6x3<f64>>; 2]>,
    /// The contacts touching each body, with the side.
    by_body: Vec<Vec<(usize, usize)>>,
    triplets: Vec<Triplet<usize, usize, f64>>,
    /// The LU's symbolic analysis: the pattern is fixed within a run.
    symbolic: Option<SymbolicLu<usize>>,
    residual: Vec<Vector3<f64>>,
    rows: Vec<Matrix3<f64>>,
    diagonal: Vec<Matrix3<f64>>,
    step: Vec<f64>,
    trial: Vec<Vector3<f64>>,
    scratch: DVector<f64>,
    trial_v: DVector<f64>,
}

impl Polish {
    /// Runs up to `iterations` Newton steps from `lambda` (and `v = v(λ)`, recomputed), taking a
    /// step only if it lowers the summed squared residual. Writes the final `(v, λ)` back and
    /// returns their residuals and the number of linear systems solved.
    pub fn run(
        &mut self,
        asm: &Assembled,
        v: &mut DVector<f64>,
        lambda: &mut [Vector3<f64>],
        tolerance: f64,
        iterations: u32,
    ) -> (ContactResiduals, u32) {
        let nc = asm.contacts.len();
        self.prepare(asm);
        self.symbolic = None;
        self.scratch = std::mem::take(&mut self.scratch).resize_vertically(asm.dofs(), 0.0);
        self.trial_v = std::mem::take(&mut self.trial_v).resize_vertically(asm.dofs(), 0.0);
        asm.velocities_for(lambda, &mut self.scratch, v);
        let mut current = self.evaluate(asm, v, lambda, true);
        let mut damping = INITIAL_DAMPING;
        let mut solved = 0;
        for _ in 0..iterations {
            let residuals = contact_residuals(asm, v, lambda);
            if residuals.within(tolerance) || !current.is_finite() || damping > MAX_DAMPING {
                break;
            }
            if !self.solve_step(asm, nc, damping) {
                break;
            }
            solved += 1;
            self.trial.clear();
            self.trial.extend(
                (0..nc).map(|c| lambda[c] + Vector3::new(self.step[3 * c], self.step[3 * c + 1], self.step[3 * c + 2])),
            );
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

    fn prepare(&mut self, asm: &Assembled) {
        let nc = asm.contacts.len();
        self.by_body.resize_with(asm.bodies.len(), Vec::new);
        self.by_body.iter_mut().for_each(Vec::clear);
        self.inverse_transposed.clear();
        for (c, contact) in asm.contacts.iter().enumerate() {
            let mut sides = [None, None];
            for (k, side) in contact.sides.iter().enumerate() {
                if let Some(side) = side {
                    let jt = side.jac.transpose();
                    let mut block = Matrix6x3::zeros();
                    for col in 0..3 {
                        block.set_column(col, &asm.apply_inverse_block(side.body, &jt.column(col).into_owned()));
                    }
                    sides[k] = Some(block);
                    self.by_body[side.body].push((c, k));
                }
            }
            self.inverse_transposed.push(sides);
        }
        self.residual.resize(nc, Vector3::zeros());
        self.rows.resize(nc, Matrix3::zeros());
        self.diagonal.resize(nc, Matrix3::zeros());
    }

    /// The summed squares of `rᵢ = (λᵢ − Pᵢ(λᵢ − mᵢŷᵢ)) / mᵢ` (m/s); with `linearise`, keeps each
    /// `rᵢ` and the blocks of row `i` of the Jacobian of `mᵢ rᵢ`: `I − Gᵢ` and `mᵢ Gᵢ Mᵢ`.
    fn evaluate(&mut self, asm: &Assembled, v: &DVector<f64>, lambda: &[Vector3<f64>], linearise: bool) -> f64 {
        let mut merit = 0.0;
        for (c, contact) in asm.contacts.iter().enumerate() {
            let m = contact.mass;
            let w = asm.jacobian_times(c, v) + contact.bias;
            let mut y = w;
            y.x += contact.cone.shift(&w);
            let (p, g) = contact.cone.update_with_jacobian(&(lambda[c] - m * y), m);
            let r = (lambda[c] - p) / m;
            merit += r.norm_squared();
            if !linearise {
                continue;
            }
            self.residual[c] = r;
            let mut shift_derivative = Matrix3::identity();
            if let Cone::Coulomb { mu } = contact.cone {
                let speed = cone::tangent_norm(&w);
                if speed > MIN_SLIDING_SPEED {
                    shift_derivative[(0, 1)] = mu * w.y / speed;
                    shift_derivative[(0, 2)] = mu * w.z / speed;
                }
            }
            self.diagonal[c] = Matrix3::identity() - g;
            self.rows[c] = m * g * shift_derivative;
        }
        if merit.is_nan() { f64::INFINITY } else { merit }
    }

    /// Solves `∂F · dλ = −R` into `step`; false if the factorization fails or is not finite.
    fn solve_step(&mut self, asm: &Assembled, nc: usize, damping: f64) -> bool {
        let n = 3 * nc;
        self.triplets.clear();
        for c in 0..nc {
            let mut d = self.diagonal[c];
            for k in 0..3 {
                d[(k, k)] += damping;
            }
            push_block(&mut self.triplets, c, c, &d);
        }
        // Row i, column j: Gᵢ Mᵢ Jᵢ,b A_b⁻¹ Jⱼ,bᵀ over the bodies b both touch.
        for contacts in &self.by_body {
            for &(i, si) in contacts {
                let jac: Matrix3x6<f64> = asm.contacts[i].sides[si].expect("listed side").jac;
                let left = self.rows[i] * jac;
                for &(j, sj) in contacts {
                    let right = self.inverse_transposed[j][sj].expect("listed side");
                    push_block(&mut self.triplets, i, j, &(left * right));
                }
            }
        }
        let Ok(matrix) = SparseColMat::<usize, f64>::try_new_from_triplets(n, n, &self.triplets) else {
            return false;
        };
        if self.symbolic.is_none() {
            self.symbolic = SymbolicLu::try_new(matrix.symbolic()).ok();
        }
        let Some(symbolic) = self.symbolic.clone() else {
            return false;
        };
        let Ok(lu) = Lu::try_new_with_symbolic(symbolic, matrix.as_ref()) else {
            return false;
        };
        self.step.clear();
        self.step.extend(
            self.residual
                .iter()
                .zip(&asm.contacts)
                .flat_map(|(r, contact)| [-r.x, -r.y, -r.z].map(|x| x * contact.mass)),
        );
        lu.solve_in_place(MatMut::from_column_major_slice_mut(&mut self.step, n, 1));
        self.step.iter().all(|x| x.is_finite())
    }
}

fn push_block(triplets: &mut Vec<Triplet<usize, usize, f64>>, i: usize, j: usize, block: &Matrix3<f64>) {
    for col in 0..3 {
        for row in 0..3 {
            triplets.push(Triplet::new(3 * i + row, 3 * j + col, block[(row, col)]));
        }
    }
}
