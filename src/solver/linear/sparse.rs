//! Sparse Cholesky of `H` (faer), for large islands: AMD fill-reducing ordering, symbolic
//! analysis reused while the body–contact graph keeps its shape, numeric factorization per
//! Newton iteration into preallocated buffers.

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::sparse::linalg::SupernodalThreshold;
use faer::sparse::linalg::cholesky::{
    CholeskySymbolicParams, LltRef, SymbolicCholesky, SymmetricOrdering, factorize_symbolic_cholesky,
};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{Conj, MatMut, Par, Side};
use nalgebra::{DVector, Matrix6};

use super::super::assembly::Assembled;
use super::{LowerBlocks, NotPositiveDefinite};

/// Always supernodal: `H` is made of dense 6×6 blocks, so its fronts are dense from the start.
/// faer's automatic choice picked the simplicial factorization for the 210-box pyramid, which
/// made a Newton step 35% slower there (`benches/solver.rs`); no scene measured got slower.
fn symbolic_params() -> CholeskySymbolicParams<'static> {
    CholeskySymbolicParams {
        supernodal_flop_ratio_threshold: SupernodalThreshold::FORCE_SUPERNODAL,
        ..Default::default()
    }
}

/// Lower-triangular CSC pattern of `H` built from 6×6 blocks.
#[derive(Default, PartialEq)]
struct BlockPattern {
    bodies: usize,
    pairs: Vec<(usize, usize)>,
}

#[derive(Default)]
pub(super) struct SparseCholesky {
    pattern: BlockPattern,
    col_ptr: Vec<usize>,
    row_idx: Vec<usize>,
    values: Vec<f64>,
    /// First pair index of each body's column block (pairs are sorted by their smaller body).
    pair_start: Vec<usize>,
    symbolic: Option<SymbolicCholesky<usize>>,
    factor_values: Vec<f64>,
    stack: Option<MemBuffer>,
    factored: bool,
}

impl SparseCholesky {
    /// Rebuilds the pattern and its symbolic analysis, unless the island has the same graph as in
    /// the last call (a resting pile, say), when both are kept.
    pub fn prepare(&mut self, asm: &Assembled) {
        let unchanged =
            self.symbolic.is_some() && self.pattern.bodies == asm.bodies.len() && self.pattern.pairs == asm.pairs;
        if unchanged {
            return;
        }
        self.pattern.bodies = asm.bodies.len();
        self.pattern.pairs.clone_from(&asm.pairs);
        self.build_pattern();
        let n = 6 * self.pattern.bodies;
        let structure = SymbolicSparseColMatRef::new_checked(n, n, &self.col_ptr, None, &self.row_idx);
        // Only fails on allocation failure; leave the solver without a factorization then.
        self.symbolic =
            factorize_symbolic_cholesky(structure, Side::Lower, SymmetricOrdering::Amd, symbolic_params()).ok();
        if let Some(symbolic) = &self.symbolic {
            self.factor_values.resize(symbolic.len_val(), 0.0);
            let req = StackReq::any_of(&[
                symbolic.factorize_numeric_llt_scratch::<f64>(Par::Seq, Default::default()),
                symbolic.solve_in_place_scratch::<f64>(1, Par::Seq),
            ]);
            self.stack = Some(MemBuffer::new(req));
        }
    }

    fn build_pattern(&mut self) {
        let bodies = self.pattern.bodies;
        let mut degree = vec![0usize; bodies];
        self.pair_start.clear();
        self.pair_start.resize(bodies, 0);
        for (p, &(a, _)) in self.pattern.pairs.iter().enumerate().rev() {
            degree[a] += 1;
            self.pair_start[a] = p;
        }
        self.col_ptr.clear();
        self.row_idx.clear();
        self.col_ptr.push(0);
        for (a, &count) in degree.iter().enumerate() {
            let neighbours = &self.pattern.pairs[self.pair_start[a]..self.pair_start[a] + count];
            for c in 0..6 {
                self.row_idx.extend(6 * a + c..6 * a + 6);
                for &(_, b) in neighbours {
                    self.row_idx.extend(6 * b..6 * b + 6);
                }
                self.col_ptr.push(self.row_idx.len());
            }
        }
        self.values.clear();
        self.values.resize(self.row_idx.len(), 0.0);
    }

    pub fn clear(&mut self) {
        self.values.fill(0.0);
        self.factored = false;
    }

    pub fn factor(&mut self) -> Result<(), NotPositiveDefinite> {
        let (Some(symbolic), Some(buffer)) = (&self.symbolic, &mut self.stack) else {
            return Err(NotPositiveDefinite);
        };
        let n = 6 * self.pattern.bodies;
        let structure = SymbolicSparseColMatRef::new_checked(n, n, &self.col_ptr, None, &self.row_idx);
        let matrix = SparseColMatRef::new(structure, &self.values);
        let result = symbolic.factorize_numeric_llt(
            &mut self.factor_values,
            matrix,
            Side::Lower,
            LltRegularization::default(),
            Par::Seq,
            MemStack::new(buffer),
            Default::default(),
        );
        self.factored = result.is_ok();
        result.map(|_| ()).map_err(|_| NotPositiveDefinite)
    }

    pub fn solve_in_place(&mut self, rhs: &mut DVector<f64>) {
        let (true, Some(symbolic), Some(buffer)) = (self.factored, &self.symbolic, &mut self.stack) else {
            return;
        };
        let n = rhs.len();
        let llt = LltRef::new(symbolic, &self.factor_values);
        let rhs = MatMut::from_column_major_slice_mut(rhs.as_mut_slice(), n, 1);
        llt.solve_in_place_with_conj(Conj::No, rhs, Par::Seq, MemStack::new(buffer));
    }
}

impl LowerBlocks for SparseCholesky {
    fn add_block(&mut self, row: usize, col: usize, pair: Option<usize>, block: &Matrix6<f64>) {
        match pair {
            None => {
                for c in 0..6 {
                    let start = self.col_ptr[6 * col + c];
                    for r in c..6 {
                        self.values[start + r - c] += block[(r, c)];
                    }
                }
            }
            Some(p) => {
                debug_assert_eq!(self.pattern.pairs[p], (col, row));
                let k = p - self.pair_start[col];
                for c in 0..6 {
                    let start = self.col_ptr[6 * col + c] + (6 - c) + 6 * k;
                    for r in 0..6 {
                        self.values[start + r] += block[(r, c)];
                    }
                }
            }
        }
    }
}
