//! How accuracy is measured (design note §4): NCP, feasibility and dynamics residuals, all in m/s.
//!
//! Pure functions of an assembled problem, velocities and impulses; used both to stop the
//! iteration and to report the result.

use nalgebra::{DVector, Vector3};

use super::assembly::Assembled;
use super::cone;

/// Worst-contact NCP and feasibility residuals, m/s.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ContactResiduals {
    pub ncp: f64,
    pub feasibility: f64,
}

impl ContactResiduals {
    pub fn worst(&self) -> f64 {
        self.ncp.max(self.feasibility)
    }

    pub fn within(&self, tolerance: f64) -> bool {
        self.ncp <= tolerance && self.feasibility <= tolerance
    }
}

/// The shifted relative velocity `w + δ` of contact `c` at velocities `v`.
pub(crate) fn shifted_velocity(asm: &Assembled, c: usize, v: &DVector<f64>) -> Vector3<f64> {
    let contact = &asm.contacts[c];
    let mut w = asm.jacobian_times(c, v) + contact.bias;
    w.x += cone::shift(contact.mu, &w);
    w
}

/// `rᵢ = ‖λᵢ − Π(λᵢ − mᵢ(wᵢ + δᵢ))‖ / mᵢ` and `‖Π_K(−(wᵢ + δᵢ))‖`, worst over contacts. A
/// non-finite value anywhere reports as infinite.
pub(crate) fn contact_residuals(asm: &Assembled, v: &DVector<f64>, lambda: &[Vector3<f64>]) -> ContactResiduals {
    let mut worst = ContactResiduals::default();
    for (c, l) in lambda.iter().enumerate() {
        let contact = &asm.contacts[c];
        let y = shifted_velocity(asm, c, v);
        let ncp = (l - cone::project(contact.mu, &(l - contact.mass * y)).0).norm() / contact.mass;
        let feasibility = cone::project(contact.mu, &(-y)).0.norm();
        worst.ncp = if ncp.is_nan() {
            f64::INFINITY
        } else {
            worst.ncp.max(ncp)
        };
        worst.feasibility = if feasibility.is_nan() {
            f64::INFINITY
        } else {
            worst.feasibility.max(feasibility)
        };
    }
    worst
}

/// `‖A⁻¹(A v − b − Jᵀλ)‖∞`, m/s.
pub(crate) fn dynamics_residual(
    asm: &Assembled,
    v: &DVector<f64>,
    lambda: &[Vector3<f64>],
    scratch: &mut DVector<f64>,
    out: &mut DVector<f64>,
) -> f64 {
    asm.velocities_for(lambda, scratch, out);
    let mut worst = 0.0_f64;
    for (a, b) in v.iter().zip(out.iter()) {
        let r = (a - b).abs();
        if r.is_nan() {
            return f64::INFINITY;
        }
        worst = worst.max(r);
    }
    worst
}
