//! The `k × k` systems of `k` rank-one terms added to the Newton matrix, solved by BiCGSTAB
//! (faer's) without forming them, for islands with many sliding contacts.
//!
//! Two stages linearise each sliding contact's de Saxcé shift as one rank-one term on top of a
//! matrix `H` they hold factored: the shift Newton step (`I − ∂S/∂δ`) and the polish (by the
//! Sherman–Morrison–Woodbury formula). Both come down to
//!
//! ```text
//! (I − G J_Q H⁻¹ N) x = r,      N x = Σ_b x_b J_bᵀ n_b,      (G J_Q y)_a = g_a · J_a y,
//! ```
//!
//! over the sliding contacts `Q`, with a 3-vector `n_b` and `g_a` per contact. Formed, it takes
//! `k` solves with `H`, `k²` Jacobian products and a dense LU of `k³/3`. BiCGSTAB needs only its
//! products with a vector, one solve each, and on a landing pile it converges in a few dozen
//! products whatever `k` is. Timed on the same shift Newton iterates of a 1000-ball pen (scratch
//! harness), the two cost the same near 100 sliding contacts; at 200–250 this took 14 ms against
//! 28, at 500–550 27 against 107. On the 125-ball pen, whose solves with `H` are cheap next to
//! BiCGSTAB's own work, the dense path was the faster at every count met (up to about 100), so
//! small islands keep it (`SolverSettings::krylov_min_bodies`).
//!
//! Owns the operator and BiCGSTAB's buffers. Which path a stage takes is the stage's.

use std::sync::{Mutex, PoisonError};

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::matrix_free::bicgstab::{BicgParams, bicgstab, bicgstab_scratch};
use faer::matrix_free::{IdentityPrecond, InitialGuessStatus, LinOp};
use faer::{MatMut, MatRef, Par};
use nalgebra::{DVector, Vector3};

use super::NewtonSystem;
use crate::solver::assembly::Assembled;

/// Relative residual at which BiCGSTAB stops: the answer is then as exact as the dense LU's (on
/// the random problems of `tests/solver.rs` the shift Newton steps of the two agreed to within
/// 3e-11 of the step).
const TOLERANCE: f64 = 1e-10;

/// The rank-one terms: per sliding contact `Q[a]`, its `n_a` and `g_a`.
struct RankOneTerms<'a> {
    contacts: &'a [usize],
    normals: &'a [Vector3<f64>],
    gains: &'a [Vector3<f64>],
}

/// `dv = H⁻¹ N x`.
fn response(
    asm: &Assembled,
    terms: &RankOneTerms,
    x: impl Fn(usize) -> f64,
    system: &mut NewtonSystem,
    dv: &mut DVector<f64>,
) {
    dv.fill(0.0);
    for (a, &c) in terms.contacts.iter().enumerate() {
        asm.add_jacobian_transpose(c, &(terms.normals[a] * x(a)), dv);
    }
    system.solve_in_place(dv);
}

/// `x ↦ x − G J_Q H⁻¹ N x`.
struct CapacitanceOperator<'a> {
    asm: &'a Assembled,
    terms: &'a RankOneTerms<'a>,
    /// The factorization and the velocity buffer a product works in: faer's `LinOp::apply`
    /// takes `&self`.
    work: Mutex<(&'a mut NewtonSystem, &'a mut DVector<f64>)>,
}

impl std::fmt::Debug for CapacitanceOperator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapacitanceOperator")
            .field("terms", &self.terms.contacts.len())
            .finish_non_exhaustive()
    }
}

impl LinOp<f64> for CapacitanceOperator<'_> {
    fn apply_scratch(&self, _rhs_ncols: usize, _par: Par) -> StackReq {
        StackReq::EMPTY
    }

    fn nrows(&self) -> usize {
        self.terms.contacts.len()
    }

    fn ncols(&self) -> usize {
        self.terms.contacts.len()
    }

    fn apply(&self, mut out: MatMut<'_, f64>, rhs: MatRef<'_, f64>, _par: Par, _stack: &mut MemStack) {
        let mut guard = self.work.lock().unwrap_or_else(PoisonError::into_inner);
        let (system, dv) = &mut *guard;
        for column in 0..rhs.ncols() {
            response(self.asm, self.terms, |a| rhs[(a, column)], system, dv);
            for (a, &c) in self.terms.contacts.iter().enumerate() {
                out[(a, column)] = rhs[(a, column)] - self.terms.gains[a].dot(&self.asm.jacobian_times(c, dv));
            }
        }
    }

    fn conj_apply(&self, out: MatMut<'_, f64>, rhs: MatRef<'_, f64>, par: Par, stack: &mut MemStack) {
        self.apply(out, rhs, par, stack);
    }
}

/// The terms and BiCGSTAB's buffers, reused across solves.
#[derive(Default)]
pub(crate) struct CapacitanceSolver {
    normals: Vec<Vector3<f64>>,
    gains: Vec<Vector3<f64>>,
    solution: Vec<f64>,
    /// BiCGSTAB's scratch, and the count of terms it was sized for.
    stack: Option<(usize, MemBuffer)>,
}

impl CapacitanceSolver {
    /// Overwrites `rhs` with the solution `x` of `(I − G J_Q H⁻¹ N) x = rhs` over the blocks
    /// `contacts`, whose `(n, g)` `term` gives, with `H` the factorization `system` holds, and
    /// `moved` with `H⁻¹ N x`. False, leaving `rhs` as it was, if BiCGSTAB does not converge
    /// within `k` iterations, or `iteration_cap` where that is fewer.
    #[allow(clippy::too_many_arguments)]
    pub fn solve(
        &mut self,
        asm: &Assembled,
        system: &mut NewtonSystem,
        contacts: &[usize],
        term: impl Fn(usize) -> (Vector3<f64>, Vector3<f64>),
        rhs: &mut [f64],
        moved: &mut DVector<f64>,
        iteration_cap: Option<usize>,
    ) -> bool {
        let k = contacts.len();
        self.normals.clear();
        self.gains.clear();
        for &c in contacts {
            let (normal, gain) = term(c);
            self.normals.push(normal);
            self.gains.push(gain);
        }
        let terms = RankOneTerms {
            contacts,
            normals: &self.normals,
            gains: &self.gains,
        };
        let operator = CapacitanceOperator {
            asm,
            terms: &terms,
            work: Mutex::new((system, moved)),
        };
        let identity = IdentityPrecond { dim: k };
        if self.stack.as_ref().is_none_or(|(size, _)| *size < k) {
            let req = bicgstab_scratch(identity, identity, &operator, 1, Par::Seq);
            self.stack = Some((k, MemBuffer::new(req)));
        }
        let Some((_, buffer)) = &mut self.stack else {
            return false;
        };
        self.solution.clear();
        self.solution.resize(k, 0.0);
        // Not `InitialGuessStatus::Zero`: faer 0.24's BiCGSTAB then never sets its residual to
        // the right-hand side, and returns NaN. A zero guess costs one product more.
        let params = BicgParams {
            initial_guess: InitialGuessStatus::MaybeNonZero,
            abs_tolerance: 0.0,
            rel_tolerance: TOLERANCE,
            max_iters: iteration_cap.map_or(k, |cap| cap.min(k)),
            ..Default::default()
        };
        let solved = bicgstab(
            MatMut::from_column_major_slice_mut(&mut self.solution, k, 1),
            identity,
            identity,
            &operator,
            MatRef::from_column_major_slice(rhs, k, 1),
            params,
            |_| {},
            Par::Seq,
            MemStack::new(buffer),
        );
        let (system, moved) = operator.work.into_inner().unwrap_or_else(PoisonError::into_inner);
        if solved.is_err() {
            return false;
        }
        rhs.copy_from_slice(&self.solution);
        response(asm, &terms, |a| rhs[a], system, moved);
        true
    }
}
