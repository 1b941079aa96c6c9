//! Anderson (type II) acceleration of the outer fixed point on `(λᵢ/mᵢ, δᵢ)` (design note §3.6).
//!
//! A generic mixer over flat `f64` vectors: it knows nothing of cones or contacts; the caller
//! projects the mixed point back onto the admissible set.

use nalgebra::{SMatrix, SVector};

/// Largest memory the fixed-size least-squares system holds.
pub(crate) const MAX_MEMORY: usize = 8;

#[derive(Default)]
pub(crate) struct Anderson {
    memory: usize,
    len: usize,
    /// Ring buffers of `Δf` and `ΔG` columns, `memory × len` each.
    delta_f: Vec<f64>,
    delta_g: Vec<f64>,
    previous_f: Vec<f64>,
    previous_g: Vec<f64>,
    stored: usize,
    head: usize,
    has_previous: bool,
    previous_residual: f64,
}

impl Anderson {
    pub fn configure(&mut self, memory: usize, len: usize) {
        self.memory = memory.min(MAX_MEMORY);
        self.len = len;
        for buffer in [&mut self.delta_f, &mut self.delta_g] {
            buffer.clear();
            buffer.resize(self.memory * len, 0.0);
        }
        for buffer in [&mut self.previous_f, &mut self.previous_g] {
            buffer.clear();
            buffer.resize(len, 0.0);
        }
        self.reset();
    }

    /// Forgets the history: the fixed-point map changed (a new penalty, a fallback step).
    pub fn reset(&mut self) {
        self.stored = 0;
        self.head = 0;
        self.has_previous = false;
    }

    /// Given the input `s` and its image `g = G(s)`, writes the next input into `out`.
    pub fn mix(&mut self, s: &[f64], g: &[f64], out: &mut [f64]) {
        let n = self.len;
        out.copy_from_slice(g);
        if self.memory == 0 {
            return;
        }
        // Restart when the fixed-point residual grew: the map is only piecewise smooth, and an
        // extrapolation across a change of active set can wander instead of converging.
        let residual = s.iter().zip(g).map(|(a, b)| (b - a) * (b - a)).sum::<f64>().sqrt();
        if self.has_previous && residual > self.previous_residual {
            self.reset();
        }
        self.previous_residual = residual;
        if self.has_previous {
            let col = self.head * n;
            for i in 0..n {
                let f = g[i] - s[i];
                self.delta_f[col + i] = f - self.previous_f[i];
                self.delta_g[col + i] = g[i] - self.previous_g[i];
            }
            self.head = (self.head + 1) % self.memory;
            self.stored = (self.stored + 1).min(self.memory);
        }
        for i in 0..n {
            self.previous_f[i] = g[i] - s[i];
            self.previous_g[i] = g[i];
        }
        self.has_previous = true;
        let m = self.stored;
        if m == 0 {
            return;
        }
        // Normal equations of min ‖f − ΔF γ‖, padded to the fixed size with an identity.
        let mut gram = SMatrix::<f64, MAX_MEMORY, MAX_MEMORY>::identity();
        let mut rhs = SVector::<f64, MAX_MEMORY>::zeros();
        fn column(buffer: &[f64], j: usize, n: usize) -> &[f64] {
            &buffer[j * n..(j + 1) * n]
        }
        let mut trace = 0.0;
        for j in 0..m {
            let fj = column(&self.delta_f, j, n);
            rhs[j] = fj.iter().zip(&self.previous_f).map(|(a, b)| a * b).sum();
            for k in 0..=j {
                let fk = column(&self.delta_f, k, n);
                let dot: f64 = fj.iter().zip(fk).map(|(a, b)| a * b).sum();
                gram[(j, k)] = dot;
                gram[(k, j)] = dot;
            }
            trace += gram[(j, j)];
        }
        if !(trace.is_finite() && trace > 0.0) {
            return;
        }
        for j in 0..m {
            gram[(j, j)] += 1e-10 * trace;
        }
        let Some(gamma) = gram.cholesky().map(|c| c.solve(&rhs)) else {
            return;
        };
        // A nearly singular history (a fixed point drifting at constant speed, say) gives huge
        // coefficients: an extrapolation to nowhere, not an acceleration.
        if gamma.iter().any(|x| !x.is_finite() || x.abs() > 1e3) {
            self.reset();
            return;
        }
        for j in 0..m {
            let dg = column(&self.delta_g, j, n);
            for i in 0..n {
                out[i] -= gamma[j] * dg[i];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accelerates_a_slow_linear_contraction() {
        // G(s) = 0.99 s + c has its fixed point at 100 c; plain iteration needs ~1800 steps to 1e-6.
        let c = [1.0, -2.0];
        let map = |s: &[f64]| [0.99 * s[0] + c[0], 0.99 * s[1] + c[1]];
        let mut anderson = Anderson::default();
        anderson.configure(5, 2);
        let mut s = [0.0, 0.0];
        for _ in 0..10 {
            let g = map(&s);
            let mut out = [0.0; 2];
            anderson.mix(&s, &g, &mut out);
            s = out;
        }
        assert!((s[0] - 100.0).abs() < 1e-6 && (s[1] + 200.0).abs() < 1e-6, "{s:?}");
    }
}
