//! Sparse Cholesky of `H` (faer), for large islands.
//!
//! The fill-reducing ordering is computed on the body graph (AMD, one node per body) and `H` is
//! assembled directly in that order, so the numeric factorization never permutes: each Newton
//! iteration only refills the values and factors them into preallocated buffers. The pattern and
//! its symbolic analysis are kept while the island's body–contact graph keeps its shape.

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::sparse::linalg::cholesky::{
    CholeskySymbolicParams, LltRef, SymbolicCholesky, SymmetricOrdering, factorize_symbolic_cholesky,
};
use faer::sparse::linalg::{SupernodalThreshold, amd};
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

/// The CSC pattern of the transpose: columns become rows. Output row indices come out sorted.
fn transpose_pattern(n: usize, col_ptr: &[usize], row_idx: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let mut ptr = vec![0usize; n + 1];
    for &r in row_idx {
        ptr[r + 1] += 1;
    }
    for i in 0..n {
        ptr[i + 1] += ptr[i];
    }
    let mut next = ptr.clone();
    let mut idx = vec![0usize; row_idx.len()];
    for col in 0..n {
        for &r in &row_idx[col_ptr[col]..col_ptr[col + 1]] {
            idx[next[r]] = col;
            next[r] += 1;
        }
    }
    (ptr, idx)
}

/// Where a coupled body pair's block lives in the lower triangle of the reordered `H`.
#[derive(Clone, Copy, Default)]
struct PairSlot {
    /// Offset of the block's first entry in its column (after the diagonal block's part).
    column_block: usize,
    /// Position of the row block among the column's off-diagonal blocks.
    position: usize,
    /// The stored block is the transpose of the one assembled (the pair's order flipped).
    transposed: bool,
}

#[derive(Default)]
pub(super) struct SparseCholesky {
    bodies: usize,
    pairs: Vec<(usize, usize)>,
    /// `order[new] = old` and `rank[old] = new` body indices.
    order: Vec<usize>,
    rank: Vec<usize>,
    slots: Vec<PairSlot>,
    col_ptr: Vec<usize>,
    row_idx: Vec<usize>,
    values: Vec<f64>,
    symbolic: Option<SymbolicCholesky<usize>>,
    factor_values: Vec<f64>,
    stack: Option<MemBuffer>,
    permuted_rhs: Vec<f64>,
    /// Scratch of multi-column solves, sized for `many_columns` right-hand sides.
    many_stack: Option<MemBuffer>,
    many_columns: usize,
    many_rhs: Vec<f64>,
    factored: bool,
}

impl SparseCholesky {
    /// Rebuilds the ordering, pattern and symbolic analysis, unless the island has the same graph
    /// as in the last call (a resting pile, say), when all are kept.
    pub fn prepare(&mut self, asm: &Assembled) {
        let unchanged = self.symbolic.is_some() && self.bodies == asm.bodies.len() && self.pairs == asm.pairs;
        if unchanged {
            return;
        }
        self.bodies = asm.bodies.len();
        self.pairs.clone_from(&asm.pairs);
        self.symbolic = None;
        if self.order_bodies().is_none() {
            return;
        }
        self.build_pattern();
        let n = 6 * self.bodies;
        // With the identity ordering faer's symbolic analysis reads the upper triangle as given
        // (whatever `side` says); the numeric factorization then takes the lower one unpermuted.
        let (upper_ptr, upper_idx) = transpose_pattern(n, &self.col_ptr, &self.row_idx);
        let upper = SymbolicSparseColMatRef::new_checked(n, n, &upper_ptr, None, &upper_idx);
        // Only fails on allocation failure; leave the solver without a factorization then.
        self.symbolic =
            factorize_symbolic_cholesky(upper, Side::Upper, SymmetricOrdering::Identity, symbolic_params()).ok();
        if let Some(symbolic) = &self.symbolic {
            self.factor_values.resize(symbolic.len_val(), 0.0);
            let req = StackReq::any_of(&[
                symbolic.factorize_numeric_llt_scratch::<f64>(Par::Seq, Default::default()),
                symbolic.solve_in_place_scratch::<f64>(1, Par::Seq),
            ]);
            self.stack = Some(MemBuffer::new(req));
        }
        self.permuted_rhs.resize(n, 0.0);
        self.many_stack = None;
        self.many_columns = 0;
    }

    /// AMD on the body graph: one node per body, an edge per coupled pair.
    fn order_bodies(&mut self) -> Option<()> {
        let nb = self.bodies;
        let mut col_ptr = vec![0usize; nb + 1];
        for &(a, _) in &self.pairs {
            col_ptr[a + 1] += 1;
        }
        for a in 0..nb {
            col_ptr[a + 1] += col_ptr[a];
        }
        // Pairs are sorted by (a, b): column a lists its b > a in order, one triangle of the
        // symmetric pattern; AMD orders A + Aᵀ.
        let row_idx: Vec<usize> = self.pairs.iter().map(|&(_, b)| b).collect();
        let graph = SymbolicSparseColMatRef::new_checked(nb, nb, &col_ptr, None, &row_idx);
        self.order.resize(nb, 0);
        self.rank.resize(nb, 0);
        let mut buffer = MemBuffer::new(amd::order_maybe_unsorted_scratch::<usize>(nb, row_idx.len()));
        amd::order_maybe_unsorted(
            &mut self.order,
            &mut self.rank,
            graph,
            amd::Control::default(),
            MemStack::new(&mut buffer),
        )
        .ok()
        .map(|_| ())
    }

    /// The lower-triangular CSC pattern of the reordered `H`, 6×6 blocks, and each pair's slot.
    fn build_pattern(&mut self) {
        let nb = self.bodies;
        // Off-diagonal row blocks of each new column block, as (row block, pair index).
        let mut below: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nb];
        for (p, &(a, b)) in self.pairs.iter().enumerate() {
            let (ra, rb) = (self.rank[a], self.rank[b]);
            below[ra.min(rb)].push((ra.max(rb), p));
        }
        self.slots.resize(self.pairs.len(), PairSlot::default());
        self.col_ptr.clear();
        self.row_idx.clear();
        self.col_ptr.push(0);
        for (col, rows) in below.iter_mut().enumerate() {
            rows.sort_unstable();
            for (position, &(_, p)) in rows.iter().enumerate() {
                let (a, b) = self.pairs[p];
                // assemble_into hands over the block with the larger *old* index as row.
                self.slots[p] = PairSlot {
                    column_block: col,
                    position,
                    transposed: self.rank[b] < self.rank[a],
                };
            }
            for c in 0..6 {
                self.row_idx.extend(6 * col + c..6 * col + 6);
                for &(row, _) in rows.iter() {
                    self.row_idx.extend(6 * row..6 * row + 6);
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
        let n = 6 * self.bodies;
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
        to_factor_order(&self.order, rhs.as_slice(), &mut self.permuted_rhs);
        let n = self.permuted_rhs.len();
        let llt = LltRef::new(symbolic, &self.factor_values);
        let x = MatMut::from_column_major_slice_mut(&mut self.permuted_rhs, n, 1);
        llt.solve_in_place_with_conj(Conj::No, x, Par::Seq, MemStack::new(buffer));
        from_factor_order(&self.order, &self.permuted_rhs, rhs.as_mut_slice());
    }

    /// Overwrites each column with `H⁻¹ column` in one multi-column solve, which streams the
    /// factor once for all of them instead of once per column.
    pub fn solve_columns_in_place(&mut self, columns: &mut [DVector<f64>]) {
        let (true, Some(symbolic)) = (self.factored, &self.symbolic) else {
            return;
        };
        let (n, k) = (self.permuted_rhs.len(), columns.len());
        if k == 0 {
            return;
        }
        if self.many_stack.is_none() || self.many_columns < k {
            // Grow geometrically so that a slowly rising count of columns allocates rarely.
            self.many_columns = k.max(2 * self.many_columns);
            self.many_stack = Some(MemBuffer::new(
                symbolic.solve_in_place_scratch::<f64>(self.many_columns, Par::Seq),
            ));
        }
        self.many_rhs.resize(n * k, 0.0);
        for (column, out) in columns.iter().zip(self.many_rhs.chunks_exact_mut(n)) {
            to_factor_order(&self.order, column.as_slice(), out);
        }
        let llt = LltRef::new(symbolic, &self.factor_values);
        let x = MatMut::from_column_major_slice_mut(&mut self.many_rhs[..n * k], n, k);
        let buffer = self.many_stack.as_mut().expect("sized above");
        llt.solve_in_place_with_conj(Conj::No, x, Par::Seq, MemStack::new(buffer));
        for (column, solved) in columns.iter_mut().zip(self.many_rhs.chunks_exact(n)) {
            from_factor_order(&self.order, solved, column.as_mut_slice());
        }
    }
}

/// Copies a vector of body 6-blocks into the factor's body order (`order[new] = old`).
fn to_factor_order(order: &[usize], from: &[f64], to: &mut [f64]) {
    for (new, &old) in order.iter().enumerate() {
        to[6 * new..6 * new + 6].copy_from_slice(&from[6 * old..6 * old + 6]);
    }
}

/// Copies a vector in the factor's body order back into the bodies' order.
fn from_factor_order(order: &[usize], from: &[f64], to: &mut [f64]) {
    for (new, &old) in order.iter().enumerate() {
        to[6 * old..6 * old + 6].copy_from_slice(&from[6 * new..6 * new + 6]);
    }
}

impl LowerBlocks for SparseCholesky {
    fn add_block(&mut self, row: usize, col: usize, pair: Option<usize>, block: &Matrix6<f64>) {
        match pair {
            None => {
                // Without its pair an off-diagonal block would land on the diagonal: the pairs
                // are indexed only by `Assembled::index_pairs`, after the assembly.
                debug_assert_eq!(row, col, "a coupling block without its pair");
                let start_col = 6 * self.rank[col];
                for c in 0..6 {
                    let start = self.col_ptr[start_col + c];
                    for r in c..6 {
                        self.values[start + r - c] += block[(r, c)];
                    }
                }
            }
            Some(p) => {
                debug_assert_eq!(self.pairs[p], (col, row));
                let slot = self.slots[p];
                for c in 0..6 {
                    let start = self.col_ptr[6 * slot.column_block + c] + (6 - c) + 6 * slot.position;
                    for r in 0..6 {
                        let value = if slot.transposed { block[(c, r)] } else { block[(r, c)] };
                        self.values[start + r] += value;
                    }
                }
            }
        }
    }
}
