//! The Newton systems `H d = −∇Φ` (design note §5).
//!
//! `H = A + Σᵢ βᵢ Jᵢᵀ ∂Πᵢ Jᵢ` has the sparsity of the island's body–contact graph in 6×6 blocks.
//! This module builds it block by block into whichever factorization the island's size calls for
//! — dense Cholesky for small islands, sparse Cholesky with a fill-reducing ordering for large ones
//! — and solves with it, solves the systems of rank-one terms added to it (`capacitance`), and
//! solves with a nearby `H`'s factorization as a preconditioner (`stale_factor`). It knows the
//! assembled problem's shape, not the iteration.

mod capacitance;
mod dense;
mod dense_lu;
mod sparse;
mod stale_factor;

use nalgebra::{DVector, Matrix3, Matrix6};

use super::assembly::Assembled;
use super::report::LinearSolverKind;
use dense::DenseCholesky;
use sparse::SparseCholesky;

pub(crate) use capacitance::CapacitanceSolver;
pub(crate) use dense_lu::DenseLu;
pub(crate) use stale_factor::StaleFactorCg;

/// The factorization failed: `H` was not numerically positive definite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct NotPositiveDefinite;

/// Storage of the lower block triangle of `H`.
trait LowerBlocks {
    /// `H[row, col] += block` for the 6×6 block of bodies `row ≥ col`, or, when `pair` is given,
    /// the off-diagonal block of that body pair (`row > col`).
    fn add_block(&mut self, row: usize, col: usize, pair: Option<usize>, block: &Matrix6<f64>);
}

/// A contact whose weight is zero (open, its projection zero) adds nothing to `H`.
fn adds_nothing(weight: &Matrix3<f64>) -> bool {
    weight.iter().all(|x| *x == 0.0)
}

/// Adds `A` and every contact's `βᵢ Jᵢᵀ Dᵢ Jᵢ` to `h`; `weights[i]` is `βᵢ Dᵢ`.
fn assemble_into(h: &mut impl LowerBlocks, asm: &Assembled, weights: &[Matrix3<f64>]) {
    for (i, body) in asm.bodies.iter().enumerate() {
        let mut block = Matrix6::zeros();
        block.fixed_view_mut::<3, 3>(0, 0).fill_diagonal(body.mass);
        block.fixed_view_mut::<3, 3>(3, 3).copy_from(&body.inertia);
        h.add_block(i, i, None, &block);
    }
    for (contact, w) in asm.contacts.iter().zip(weights) {
        if adds_nothing(w) {
            continue;
        }
        let jac = contact.sides.map(|side| side.map(|s| s.matrix(&contact.frame)));
        let mut weighted = [None, None];
        for (k, side) in contact.sides.iter().enumerate() {
            if let (Some(side), Some(jac)) = (side, &jac[k]) {
                let wj = w * jac;
                h.add_block(side.body, side.body, None, &(jac.transpose() * wj));
                weighted[k] = Some(wj);
            }
        }
        if let ([Some(s1), Some(s2)], [Some(j1), Some(j2)], [Some(w1), Some(w2)]) = (&contact.sides, jac, weighted) {
            // Store the block whose row body is the larger index.
            let (row, col, jr, wc) = if s1.body > s2.body {
                (s1, s2, j1, w2)
            } else {
                (s2, s1, j2, w1)
            };
            h.add_block(row.body, col.body, contact.pair, &(jr.transpose() * wc));
        }
    }
}

/// Builds, factors and solves the Newton systems of one island, reusing its buffers.
#[derive(Default)]
pub(crate) struct NewtonSystem {
    kind: LinearSolverKind,
    dense: DenseCholesky,
    sparse: SparseCholesky,
    /// The weights of the factorization held; empty when it is not valid for the problem last
    /// prepared.
    factored: Vec<Matrix3<f64>>,
}

impl NewtonSystem {
    /// Chooses the factorization for this island and analyses its sparsity pattern.
    pub fn prepare(&mut self, asm: &Assembled, dense_max_bodies: usize) {
        self.factored.clear();
        if asm.bodies.len() <= dense_max_bodies {
            self.kind = LinearSolverKind::Dense;
            self.dense.prepare(asm.dofs());
        } else {
            self.kind = LinearSolverKind::Sparse;
            self.sparse.prepare(asm);
        }
    }

    /// The weights of the factorization held, if one is held.
    pub fn factored_weights(&self) -> Option<&[Matrix3<f64>]> {
        (!self.factored.is_empty()).then_some(&self.factored[..])
    }

    /// Whether a factorization is held and every block's weight in it is diagonal: no weight
    /// couples a block's rows, as a sliding contact's does.
    pub fn factored_diagonal(&self) -> bool {
        self.factored_weights().is_some_and(|weights| {
            weights
                .iter()
                .all(|w| (0..3).all(|r| (0..3).all(|c| r == c || w[(r, c)] == 0.0)))
        })
    }

    pub fn kind(&self) -> LinearSolverKind {
        self.kind
    }

    /// Assembles `H` with contact weights `βᵢ ∂Πᵢ` and factors it, unless the factorization held
    /// was made with these very weights for the problem last prepared: once the active set has
    /// settled, every sticking contact's `∂Πᵢ` is the identity and each outer iteration's Newton
    /// step (at the same penalty) meets the same `H`. Assembling and factoring it is about 40%
    /// of a Newton step on the 210-box pyramid.
    pub fn factor(&mut self, asm: &Assembled, weights: &[Matrix3<f64>]) -> Result<(), NotPositiveDefinite> {
        if !self.factored.is_empty() && self.factored == weights {
            return Ok(());
        }
        self.factored.clear();
        let result = match self.kind {
            LinearSolverKind::Sparse => {
                self.sparse.clear();
                assemble_into(&mut self.sparse, asm, weights);
                self.sparse.factor()
            }
            _ => {
                self.dense.clear();
                assemble_into(&mut self.dense, asm, weights);
                self.dense.factor()
            }
        };
        if result.is_ok() {
            self.factored.extend_from_slice(weights);
        }
        result
    }

    /// Overwrites each column with `H⁻¹ column`, using the last factorization.
    pub fn solve_columns_in_place(&mut self, columns: &mut [DVector<f64>]) {
        match self.kind {
            LinearSolverKind::Sparse => self.sparse.solve_columns_in_place(columns),
            _ => columns.iter_mut().for_each(|column| self.dense.solve_in_place(column)),
        }
    }

    /// Overwrites `rhs` with `H⁻¹ rhs`, using the last factorization.
    pub fn solve_in_place(&mut self, rhs: &mut DVector<f64>) {
        match self.kind {
            LinearSolverKind::Sparse => self.sparse.solve_in_place(rhs),
            _ => self.dense.solve_in_place(rhs),
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use nalgebra::{DVector, Matrix3};

    use super::super::assembly::Assembled;
    use super::super::scenes::sphere_pile;
    use super::super::settings::SolverSettings;
    use super::NewtonSystem;
    use crate::solver::StepProblem;

    /// `problem` assembled with its body pairs indexed, as a solve prepares it.
    pub(in crate::solver::linear) fn assembled(problem: &StepProblem) -> Assembled {
        let mut asm = Assembled::default();
        asm.assemble(problem, &SolverSettings::default(), &mut DVector::zeros(0))
            .expect("valid pile");
        asm.index_pairs();
        asm
    }

    /// Diagonal contact weights `scale`, `2 scale` or `3 scale`, in turn from contact to contact.
    pub(in crate::solver::linear) fn diagonal_weights(asm: &Assembled, scale: f64) -> Vec<Matrix3<f64>> {
        (0..asm.contacts.len())
            .map(|c| Matrix3::from_diagonal_element(scale * (1 + c % 3) as f64))
            .collect()
    }

    /// A right-hand side of integers in [−5, 5]; another `pattern` gives another vector.
    pub(in crate::solver::linear) fn patterned(n: usize, pattern: usize) -> DVector<f64> {
        DVector::from_fn(n, |i, _| ((i * 7 + pattern * 13) % 11) as f64 - 5.0)
    }

    /// A factorization is reused only for the same weights on the problem last prepared: after
    /// `prepare` on another problem with the same contact count and weights, `H` is factored
    /// anew (a stale one would solve the previous step's system).
    #[test]
    fn a_factorization_is_reused_only_for_the_problem_it_was_made_for() {
        let light = sphere_pile(3, 3, 3, 0.5, 1.0 / 60.0);
        let mut heavy = light.clone();
        for body in &mut heavy.bodies {
            body.mass *= 7.0;
            body.inertia *= 7.0;
        }
        let (light, heavy) = (assembled(&light), assembled(&heavy));
        let weights = diagonal_weights(&light, 10.0);
        let rhs = patterned(light.dofs(), 0);
        let solved = |system: &mut NewtonSystem| {
            let mut x = rhs.clone();
            system.solve_in_place(&mut x);
            x
        };
        for dense_max_bodies in [0, 100] {
            let mut fresh = NewtonSystem::default();
            fresh.prepare(&heavy, dense_max_bodies);
            fresh.factor(&heavy, &weights).expect("H is positive definite");
            let expected = solved(&mut fresh);

            let mut reused = NewtonSystem::default();
            reused.prepare(&light, dense_max_bodies);
            reused.factor(&light, &weights).expect("H is positive definite");
            let light_solution = solved(&mut reused);
            assert_ne!(light_solution, expected);
            reused.prepare(&heavy, dense_max_bodies);
            reused.factor(&heavy, &weights).expect("H is positive definite");
            assert_eq!(solved(&mut reused), expected);
            // The same weights again on the same problem: the factorization held is the answer.
            reused.factor(&heavy, &weights).expect("H is positive definite");
            assert_eq!(solved(&mut reused), expected);
        }
    }

    /// The multi-column solve the shift Newton step uses gives what one solve per column gives.
    #[test]
    fn solving_columns_together_matches_solving_them_one_by_one() {
        let asm = assembled(&sphere_pile(3, 3, 3, 0.5, 1.0 / 60.0));
        let weights = diagonal_weights(&asm, 10.0);
        for dense_max_bodies in [0, 100] {
            let mut system = NewtonSystem::default();
            system.prepare(&asm, dense_max_bodies);
            system.factor(&asm, &weights).expect("H is positive definite");
            let n = asm.dofs();
            let mut columns: Vec<DVector<f64>> = (0..5).map(|k| patterned(n, k)).collect();
            let mut one_by_one = columns.clone();
            for column in &mut one_by_one {
                system.solve_in_place(column);
            }
            system.solve_columns_in_place(&mut columns);
            for (together, alone) in columns.iter().zip(&one_by_one) {
                let scale = alone.amax();
                assert!(scale > 0.0);
                assert!(
                    (together - alone).amax() <= 1e-12 * scale,
                    "{}",
                    (together - alone).amax()
                );
            }
        }
    }
}
