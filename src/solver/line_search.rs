//! The exact line search of the Newton step (design note §3.3): the minimiser of the convex,
//! C¹, piecewise-quadratic `φ(α) = Φ(v + α d)` by safeguarded 1-D Newton on `φ'(α) = 0`.
//!
//! Works on per-contact data the Newton loop precomputed (`Jᵢ d`, `xᵢ`), so each trial costs
//! O(contacts); it never touches bodies or matrices.

use nalgebra::Vector3;

use super::cone::Cone;

/// What the line search needs of one Newton step.
pub(crate) struct LineSearchInput<'a> {
    /// `dᵀ(A v − b)`.
    pub linear_slope: f64,
    /// `dᵀ A d`.
    pub curvature: f64,
    /// Per contact: `xᵢ = λᵢ − βᵢ(Jᵢ v + êᵢ)`.
    pub x: &'a [Vector3<f64>],
    /// Per contact: `Jᵢ d`.
    pub jd: &'a [Vector3<f64>],
    pub beta: &'a [f64],
    pub cones: &'a [Cone],
}

impl LineSearchInput<'_> {
    /// `(φ'(α), φ''(α))`.
    fn derivatives(&self, alpha: f64) -> (f64, f64) {
        let mut first = self.linear_slope + alpha * self.curvature;
        let mut second = self.curvature;
        for i in 0..self.x.len() {
            let jd = &self.jd[i];
            let (p, jac) = self.cones[i].update_with_jacobian(&(self.x[i] - alpha * self.beta[i] * jd), self.beta[i]);
            first -= jd.dot(&p);
            second += self.beta[i] * jd.dot(&(jac * jd));
        }
        (first, second)
    }

    /// Below this `|φ'|` is round-off: `|x| ~ β|w| ≫ |λ|` on fast sliding contacts, and without the
    /// floor the search would spin.
    fn round_off_floor(&self) -> f64 {
        let contacts: f64 = self.x.iter().zip(self.jd).map(|(x, jd)| x.norm() * jd.norm()).sum();
        16.0 * f64::EPSILON * (self.linear_slope.abs() + self.curvature + contacts)
    }
}

/// Returns the step length and the number of `φ'` evaluations.
pub(crate) fn exact_line_search(input: &LineSearchInput, initial_slope: f64, max_evaluations: u32) -> (f64, u32) {
    let tolerance = (1e-10 * initial_slope.abs()).max(input.round_off_floor());
    let (mut lo, mut hi) = (0.0_f64, f64::INFINITY);
    let mut alpha = 1.0;
    let mut evaluations = 0;
    while evaluations < max_evaluations {
        let (first, second) = input.derivatives(alpha);
        evaluations += 1;
        if first.abs() <= tolerance || !first.is_finite() {
            break;
        }
        if first < 0.0 {
            lo = alpha;
        } else {
            hi = alpha;
        }
        let newton = alpha - first / second;
        let next = if hi.is_infinite() {
            if newton > alpha { newton } else { 2.0 * alpha }
        } else if newton > lo && newton < hi {
            newton
        } else {
            0.5 * (lo + hi)
        };
        if hi.is_finite() && hi - lo <= 1e-15 * hi {
            break;
        }
        alpha = next;
    }
    (alpha, evaluations)
}
