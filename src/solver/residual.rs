//! How accuracy is measured (design note §4): NCP, feasibility and dynamics residuals, all in m/s.
//!
//! Pure functions of an assembled problem, velocities and impulses; used both to stop the
//! iteration and to report the result.

use nalgebra::{DVector, Vector3};

use super::assembly::Assembled;

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

/// `rᵢ = ‖λᵢ − Π(λᵢ − mᵢ(wᵢ + δᵢ))‖ / mᵢ` and `‖Π_K(−(wᵢ + δᵢ))‖`, worst over contacts, where
/// `velocity(i)` gives the unshifted `wᵢ = Jᵢ v + eᵢ`. A non-finite value anywhere reports as
/// infinite. The worst squares are kept and rooted once: every step computes these for every
/// contact, and the per-contact roots and divisions were a sixth of an accepted warm start.
fn worst_residuals(
    asm: &Assembled,
    lambda: &[Vector3<f64>],
    velocity: impl Fn(usize) -> Vector3<f64>,
) -> ContactResiduals {
    let (mut ncp, mut feasibility) = (0.0_f64, 0.0_f64);
    let mut finite = true;
    for (c, l) in lambda.iter().enumerate() {
        let contact = &asm.contacts[c];
        let y = contact.cone.shifted(&velocity(c));
        let step = l - contact.cone.update(&(l - contact.mass * y), contact.mass);
        let ncp_squared = step.norm_squared() / (contact.mass * contact.mass);
        let feasibility_squared = contact.cone.violation_squared(&y);
        finite &= !(ncp_squared.is_nan() || feasibility_squared.is_nan());
        ncp = ncp.max(ncp_squared);
        feasibility = feasibility.max(feasibility_squared);
    }
    if !finite {
        return ContactResiduals {
            ncp: f64::INFINITY,
            feasibility: f64::INFINITY,
        };
    }
    ContactResiduals {
        ncp: ncp.sqrt(),
        feasibility: feasibility.sqrt(),
    }
}

/// The residuals at body velocities `v`.
pub(crate) fn contact_residuals(asm: &Assembled, v: &DVector<f64>, lambda: &[Vector3<f64>]) -> ContactResiduals {
    worst_residuals(asm, lambda, |c| asm.jacobian_times(c, v) + asm.contacts[c].bias)
}

/// The residuals at precomputed contact velocities `w` (`wᵢ = Jᵢ v + eᵢ`, unshifted).
pub(crate) fn contact_residuals_at(asm: &Assembled, w: &[Vector3<f64>], lambda: &[Vector3<f64>]) -> ContactResiduals {
    worst_residuals(asm, lambda, |c| w[c])
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
