//! Dense LU with partial pivoting (faer) of small non-symmetric systems, its buffers kept: the
//! sliding contacts' systems of the shift Newton step and of the polish.

use faer::dyn_stack::{MemBuffer, MemStack, StackReq};
use faer::linalg::lu::partial_pivoting::{factor, solve};
use faer::{MatMut, Par};

#[derive(Default)]
pub(crate) struct DenseLu {
    size: usize,
    /// Column-major, then the LU factors.
    matrix: Vec<f64>,
    perm: Vec<usize>,
    perm_inv: Vec<usize>,
    stack: Option<MemBuffer>,
    stack_size: usize,
}

impl DenseLu {
    /// A zeroed `k × k` column-major matrix to fill: entry `(row, col)` is at `col * k + row`.
    pub fn matrix_mut(&mut self, k: usize) -> &mut [f64] {
        self.size = k;
        self.matrix.clear();
        self.matrix.resize(k * k, 0.0);
        &mut self.matrix
    }

    /// Factors the filled matrix and solves `matrix · x = rhs` in place; false if the solution
    /// is not finite.
    pub fn solve_in_place(&mut self, rhs: &mut [f64]) -> bool {
        let k = self.size;
        debug_assert_eq!(rhs.len(), k);
        if self.stack.is_none() || self.stack_size < k {
            let req = StackReq::any_of(&[
                factor::lu_in_place_scratch::<usize, f64>(k, k, Par::Seq, Default::default()),
                solve::solve_in_place_scratch::<usize, f64>(k, 1, Par::Seq),
            ]);
            self.stack = Some(MemBuffer::new(req));
            self.stack_size = k;
        }
        let stack = MemStack::new(self.stack.as_mut().expect("sized above"));
        self.perm.resize(k, 0);
        self.perm_inv.resize(k, 0);
        let mut lu = MatMut::from_column_major_slice_mut(&mut self.matrix, k, k);
        let (_, perm) = factor::lu_in_place(
            lu.as_mut(),
            &mut self.perm,
            &mut self.perm_inv,
            Par::Seq,
            stack,
            Default::default(),
        );
        let x = MatMut::from_column_major_slice_mut(rhs, k, 1);
        let lu = lu.as_ref();
        solve::solve_in_place(lu, lu, perm, x, Par::Seq, stack);
        rhs.iter().all(|d| d.is_finite())
    }
}
