//! Dense Cholesky of `H` (nalgebra), for small islands where a sparse ordering does not pay.

use nalgebra::{Cholesky, DMatrix, DVector, Dyn, Matrix6};

use super::{LowerBlocks, NotPositiveDefinite};

#[derive(Default)]
pub(super) struct DenseCholesky {
    n: usize,
    matrix: DMatrix<f64>,
    factor: Option<Cholesky<f64, Dyn>>,
}

impl DenseCholesky {
    pub fn prepare(&mut self, n: usize) {
        self.n = n;
    }

    /// Zeroes the matrix, taking back the storage of the last factor (or of a failed one's
    /// replacement) so that steady state allocates nothing.
    pub fn clear(&mut self) {
        if let Some(factor) = self.factor.take() {
            self.matrix = factor.unpack_dirty();
        }
        if self.matrix.nrows() != self.n {
            self.matrix = DMatrix::zeros(self.n, self.n);
        } else {
            self.matrix.fill(0.0);
        }
    }

    pub fn factor(&mut self) -> Result<(), NotPositiveDefinite> {
        // Cholesky::new reads only the lower triangle and factors in place: no allocation.
        self.factor = Cholesky::new(std::mem::take(&mut self.matrix));
        self.factor.as_ref().map(|_| ()).ok_or(NotPositiveDefinite)
    }

    pub fn solve_in_place(&mut self, rhs: &mut DVector<f64>) {
        if let Some(factor) = &self.factor {
            factor.solve_mut(rhs);
        }
    }
}

impl LowerBlocks for DenseCholesky {
    fn add_block(&mut self, row: usize, col: usize, _pair: Option<usize>, block: &Matrix6<f64>) {
        let mut view = self.matrix.fixed_view_mut::<6, 6>(6 * row, 6 * col);
        view += block;
    }
}
