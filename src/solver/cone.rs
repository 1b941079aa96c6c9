//! The sets impulses live in: the Coulomb friction cone (closed-form projection, its generalized
//! Jacobian and the de Saxcé shift, design note §2) and the sets of joint rows (§6).
//!
//! Owns only pointwise math on one block's 3-vector — a contact's `(normal, tangent₁, tangent₂)`
//! or up to three joint rows. It knows nothing of bodies, Jacobians or iterations.

use nalgebra::{Matrix3, Vector3};

/// Which piece of the cone's boundary a projected point landed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConeRegime {
    /// The point is in the polar cone: the projection is the apex, the contact separates.
    Open,
    /// The point is inside the cone (or on the half-line when μ = 0): kept as is.
    Stick,
    /// The point is outside both: projected onto the cone's surface.
    Slide,
}

/// The set `K` one block's impulse is confined to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cone {
    /// A contact: `{λ_n ≥ 0, ‖λ_t‖ ≤ μ λ_n}`.
    Coulomb {
        /// Friction coefficient μ ≥ 0.
        mu: f64,
    },
    /// Bilateral joint rows: `K = ℝ³`, the projection is the identity and the rows always act.
    Equality,
    /// A one-sided row (a joint limit): `λ₀ ≥ 0`; rows 1 and 2 are unused (`{0}`).
    Lower,
    /// A row with a bounded impulse (a motor): `|λ₀| ≤ max`, N·s; rows 1 and 2 unused.
    Bounded {
        /// Largest impulse magnitude over the step, N·s (N·m·s on an angular row).
        max: f64,
    },
    /// An implicit spring-damper drive on row 0: `λ₀ = clamp(−gain · w₀, ±max)`. A PD drive with
    /// stiffness `k_p` and damping `k_d` over a step `h` has `gain = h² k_p + h k_d` and its target
    /// in the bias. Rows 1 and 2 unused.
    Drive {
        /// Impulse per unit of row velocity, N·s per m/s (N·m·s per rad/s on an angular row).
        gain: f64,
        /// Largest impulse magnitude over the step.
        max: f64,
    },
    /// Rolling and torsional friction of one contact manifold, on three angular rows about the
    /// contact normal and its two tangents: `|λ₀| ≤ torsional`, `‖(λ₁, λ₂)‖ ≤ rolling`, N·m·s.
    /// A [`RollingResistance`](super::problem::RollingResistance) ties both bounds to the
    /// manifold's normal impulses.
    Resistance {
        /// Largest torque impulse about the normal.
        torsional: f64,
        /// Largest torque impulse about the tangent plane's axes, as one vector.
        rolling: f64,
    },
}

impl Cone {
    /// `Π_K(x)`: the nearest admissible impulse (for a drive, the bound).
    // Always inline, as `update`, `shift`, `shifted`, `violation_squared` and the free
    // functions they call: the residuals and the smoothing sweeps call them per contact, and as
    // calls the 3-vector went through memory and stalled on store forwarding. Inlining took a
    // resting pyramid's step from 0.60 to 0.50 ms; a plain `#[inline]` was later dropped by the
    // compiler once `Assembled::jacobian_times` was inlined into the residuals (146 µs for that
    // pyramid's accepted solve instead of 135).
    #[inline(always)]
    pub fn project(&self, x: &Vector3<f64>) -> Vector3<f64> {
        match *self {
            Cone::Coulomb { mu } => project(mu, x).0,
            Cone::Equality => *x,
            Cone::Lower => Vector3::new(x.x.max(0.0), 0.0, 0.0),
            Cone::Bounded { max } | Cone::Drive { max, .. } => Vector3::new(x.x.clamp(-max, max), 0.0, 0.0),
            Cone::Resistance { torsional, rolling } => {
                let r = tangent_norm(x);
                let scale = if r <= rolling { 1.0 } else { rolling / r };
                Vector3::new(x.x.clamp(-torsional, torsional), scale * x.y, scale * x.z)
            }
        }
    }

    /// The multiplier update `λ⁺ = P(x)`, `x = λ − β y`: `Π_K(x)` for a set; for a drive,
    /// `clamp(s x, ±max)` with `s = gain / (gain + β)`, whose fixed point is `λ = clamp(−gain·y)`.
    #[inline(always)]
    pub fn update(&self, x: &Vector3<f64>, beta: f64) -> Vector3<f64> {
        // Not `update_with_jacobian(..).0`: the residuals and the smoothing sweeps call this for
        // every contact of every step, and the Jacobian they dropped was 8% of a resting
        // pyramid's step.
        match *self {
            Cone::Drive { gain, max } => Vector3::new((gain / (gain + beta) * x.x).clamp(-max, max), 0.0, 0.0),
            _ => self.project(x),
        }
    }

    /// [`Self::update`] and an element of its generalized Jacobian (symmetric PSD).
    pub fn update_with_jacobian(&self, x: &Vector3<f64>, beta: f64) -> (Vector3<f64>, Matrix3<f64>) {
        let first_row = |slope: f64| Matrix3::from_diagonal(&Vector3::new(slope, 0.0, 0.0));
        let active = |on: bool| first_row(f64::from(u8::from(on)));
        match *self {
            Cone::Coulomb { mu } => project_with_jacobian(mu, x),
            Cone::Equality => (*x, Matrix3::identity()),
            // At x₀ = 0 the active side, as for contacts: a row at its limit enters Newton at once.
            Cone::Lower => (self.project(x), active(x.x >= 0.0)),
            Cone::Bounded { max } => (self.project(x), active(x.x.abs() <= max)),
            Cone::Resistance { torsional, rolling } => {
                let mut jacobian = active(x.x.abs() <= torsional);
                let r = tangent_norm(x);
                if r <= rolling {
                    jacobian[(1, 1)] = 1.0;
                    jacobian[(2, 2)] = 1.0;
                } else {
                    // On the disk's rim the rows may only turn the impulse, not lengthen it.
                    let (ty, tz, c) = (x.y / r, x.z / r, rolling / r);
                    jacobian[(1, 1)] = c * (1.0 - ty * ty);
                    jacobian[(1, 2)] = -c * ty * tz;
                    jacobian[(2, 1)] = -c * ty * tz;
                    jacobian[(2, 2)] = c * (1.0 - tz * tz);
                }
                (self.project(x), jacobian)
            }
            Cone::Drive { gain, max } => {
                let s = gain / (gain + beta);
                let p = s * x.x;
                (
                    Vector3::new(p.clamp(-max, max), 0.0, 0.0),
                    first_row(if p.abs() <= max { s } else { 0.0 }),
                )
            }
        }
    }

    /// `ψ(x)` with `ψ' = P` (see [`Self::update`]): the surrogate's term is `ψ(xᵢ) / βᵢ`. For a
    /// cone `ψ = ½‖Π(x)‖²`.
    pub fn potential(&self, x: &Vector3<f64>, beta: f64) -> f64 {
        // ∫₀ˣ clamp(s t, ±max) dt.
        let clamped_quadratic = |s: f64, max: f64| {
            let t = x.x.abs();
            if s * t <= max {
                0.5 * s * t * t
            } else {
                max * t - 0.5 * max * max / s
            }
        };
        match *self {
            Cone::Bounded { max } => clamped_quadratic(1.0, max),
            Cone::Drive { gain, max } => clamped_quadratic(gain / (gain + beta), max),
            Cone::Resistance { torsional, rolling } => {
                let r = tangent_norm(x);
                let disk = if r <= rolling {
                    0.5 * r * r
                } else {
                    rolling * r - 0.5 * rolling * rolling
                };
                clamped_quadratic(1.0, torsional) + disk
            }
            _ => 0.5 * self.project(x).norm_squared(),
        }
    }

    /// The de Saxcé shift of the block's velocity: `μ ‖w_t‖` for contacts, 0 for joint rows.
    #[inline(always)]
    pub fn shift(&self, w: &Vector3<f64>) -> f64 {
        match *self {
            Cone::Coulomb { mu } => shift(mu, w),
            _ => 0.0,
        }
    }

    /// `ŷ = w + δ(w) e_n`: a block's velocity `w = J v + e` with its de Saxcé shift on the normal
    /// row, the velocity the residuals and updates act on.
    #[inline(always)]
    pub fn shifted(&self, w: &Vector3<f64>) -> Vector3<f64> {
        let mut y = *w;
        y.x += self.shift(w);
        y
    }

    /// The squared feasibility violation `‖Π_K(−y)‖²` of a (shifted) velocity `y`: 0 iff `y ∈ K*`.
    /// A bounded row has no velocity condition of its own (at its bound it may move), so it reports
    /// 0 and is judged by the NCP residual alone. Squared because the residuals take the worst
    /// over all contacts, and one square root at the end is cheaper than one per contact.
    #[inline(always)]
    pub fn violation_squared(&self, y: &Vector3<f64>) -> f64 {
        match self {
            Cone::Bounded { .. } | Cone::Drive { .. } | Cone::Resistance { .. } => 0.0,
            _ => self.project(&(-y)).norm_squared(),
        }
    }
}

/// `‖(x₁, x₂)‖`. Not `f64::hypot`: its overflow-safe libm path cost 18% of a pyramid step, and
/// impulses and velocities here are nowhere near 1e154.
#[inline(always)]
pub(crate) fn tangent_norm(x: &Vector3<f64>) -> f64 {
    (x.y * x.y + x.z * x.z).sqrt()
}

/// `Π_K(x)` for the cone `K = {λ_n ≥ 0, ‖λ_t‖ ≤ μ λ_n}`, with its regime.
///
/// The regimes are tested open first: testing stick first turns `x = (−1, 0, 0)` with μ = 0 into a
/// pulling contact (design note §2).
#[inline(always)]
pub fn project(mu: f64, x: &Vector3<f64>) -> (Vector3<f64>, ConeRegime) {
    let r = tangent_norm(x);
    if mu * r <= -x.x {
        return (Vector3::zeros(), ConeRegime::Open);
    }
    if mu == 0.0 {
        return (Vector3::new(x.x, 0.0, 0.0), ConeRegime::Stick);
    }
    if r <= mu * x.x {
        return (*x, ConeRegime::Stick);
    }
    let alpha = (x.x + mu * r) / (1.0 + mu * mu);
    let scale = mu * alpha / r;
    (Vector3::new(alpha, scale * x.y, scale * x.z), ConeRegime::Slide)
}

/// `Π_K(x)` and the symmetric positive semi-definite generalized Jacobian `∂Π_K(x)`.
///
/// On the boundary between open and a contact regime (`μ r = −x_n`, the apex `x = 0` included)
/// `Π` is not differentiable and either side's Jacobian is a valid element. The contact side's is
/// returned: bodies at rest relative to each other (`x = 0`) then enter Newton's Hessian at once
/// instead of one contact per iteration, as a cold-started stack would otherwise need.
pub fn project_with_jacobian(mu: f64, x: &Vector3<f64>) -> (Vector3<f64>, Matrix3<f64>) {
    let (p, regime) = project(mu, x);
    let r = tangent_norm(x);
    let on_open_boundary = regime == ConeRegime::Open && mu * r == -x.x;
    let jacobian = match regime {
        ConeRegime::Open if !on_open_boundary => Matrix3::zeros(),
        _ if mu == 0.0 => Matrix3::from_diagonal(&Vector3::new(1.0, 0.0, 0.0)),
        ConeRegime::Stick => Matrix3::identity(),
        _ if r == 0.0 => Matrix3::identity(),
        _ => {
            let (ty, tz) = (x.y / r, x.z / r);
            let alpha = (x.x + mu * r).max(0.0) / (1.0 + mu * mu);
            let a = Vector3::new(1.0, mu * ty, mu * tz);
            // μα/r lies in [0, 1) on this branch, so it stays bounded as r → 0.
            let c = mu * alpha / r;
            let mut jac = a * a.transpose() / (1.0 + mu * mu);
            jac[(1, 1)] += c * (1.0 - ty * ty);
            jac[(1, 2)] -= c * ty * tz;
            jac[(2, 1)] -= c * ty * tz;
            jac[(2, 2)] += c * (1.0 - tz * tz);
            jac
        }
    };
    (p, jacobian)
}

/// `Π_K*(y)` onto the dual cone `K* = {μ‖y_t‖ ≤ y_n}`, by Moreau: `y + Π_K(−y)`.
pub fn project_dual(mu: f64, y: &Vector3<f64>) -> Vector3<f64> {
    y + project(mu, &(-y)).0
}

/// The de Saxcé shift's normal component `μ ‖w_t‖` of a relative velocity `w`.
#[inline(always)]
pub fn shift(mu: f64, w: &Vector3<f64>) -> f64 {
    mu * tangent_norm(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finite_difference(mu: f64, x: &Vector3<f64>) -> Matrix3<f64> {
        let h = 1e-7;
        let mut jac = Matrix3::zeros();
        for j in 0..3 {
            let mut xp = *x;
            let mut xm = *x;
            xp[j] += h;
            xm[j] -= h;
            let col = (project(mu, &xp).0 - project(mu, &xm).0) / (2.0 * h);
            jac.set_column(j, &col);
        }
        jac
    }

    #[test]
    fn regimes_are_classified_open_first() {
        assert_eq!(project(0.0, &Vector3::new(-1.0, 0.0, 0.0)).1, ConeRegime::Open);
        assert_eq!(project(0.0, &Vector3::new(-1.0, 0.0, 0.0)).0, Vector3::zeros());
        assert_eq!(project(0.5, &Vector3::new(-1.0, 0.0, 0.0)).1, ConeRegime::Open);
        assert_eq!(project(0.5, &Vector3::new(1.0, 0.3, 0.4)).1, ConeRegime::Stick);
        assert_eq!(project(0.5, &Vector3::new(1.0, 3.0, 4.0)).1, ConeRegime::Slide);
        // μ = 0 is a half-line: the tangential part is dropped, never kept.
        let (p, regime) = project(0.0, &Vector3::new(2.0, 1.0, -1.0));
        assert_eq!((p, regime), (Vector3::new(2.0, 0.0, 0.0), ConeRegime::Stick));
    }

    #[test]
    fn slide_projection_lies_on_the_surface_and_is_idempotent() {
        let mu = 0.7;
        let x = Vector3::new(0.2, -1.5, 2.5);
        let (p, regime) = project(mu, &x);
        assert_eq!(regime, ConeRegime::Slide);
        assert!((p.y.hypot(p.z) - mu * p.x).abs() < 1e-15);
        // The residual x − Π(x) lies in the polar cone and is orthogonal to Π(x).
        assert!(p.dot(&(x - p)).abs() < 1e-14);
        assert!((project(mu, &p).0 - p).norm() < 1e-15);
    }

    #[test]
    fn moreau_decomposition_holds() {
        let mu = 0.4;
        for x in [
            Vector3::new(1.0, 0.1, 0.0),
            Vector3::new(-1.0, 2.0, 0.5),
            Vector3::new(0.3, 1.0, -1.0),
        ] {
            let sum = project(mu, &x).0 - project_dual(mu, &(-x));
            assert!((sum - x).norm() < 1e-14, "{x:?}");
        }
    }

    #[test]
    fn jacobian_matches_finite_differences_in_every_regime() {
        let cases = [
            (0.5, Vector3::new(-1.0, 0.2, 0.1)),  // open
            (0.5, Vector3::new(1.0, 0.2, -0.3)),  // stick
            (0.5, Vector3::new(0.4, 1.2, -0.9)),  // slide, x_n > 0
            (0.8, Vector3::new(-0.3, 1.2, 0.9)),  // slide, x_n < 0
            (0.0, Vector3::new(1.0, 0.7, -0.3)),  // frictionless, pressed
            (0.0, Vector3::new(-1.0, 0.7, -0.3)), // frictionless, open
            (1.0, Vector3::new(0.0, 1e-3, 0.0)),  // slide near the apex
        ];
        for (mu, x) in cases {
            let (_, jac) = project_with_jacobian(mu, &x);
            let fd = finite_difference(mu, &x);
            assert!((jac - fd).abs().max() < 1e-6, "μ={mu} x={x:?}\n{jac}\n{fd}");
            assert!((jac - jac.transpose()).abs().max() < 1e-15);
            assert!(jac.symmetric_eigenvalues().min() > -1e-15);
        }
    }

    #[test]
    fn boundary_points_take_the_contact_side_jacobian() {
        assert_eq!(project_with_jacobian(0.5, &Vector3::zeros()).1, Matrix3::identity());
        let frictionless = project_with_jacobian(0.0, &Vector3::zeros()).1;
        assert_eq!(frictionless, Matrix3::from_diagonal(&Vector3::new(1.0, 0.0, 0.0)));
        // On the open/slide boundary: the rank-one slide element, projection still the apex.
        let (p, jac) = project_with_jacobian(0.5, &Vector3::new(-0.5, 1.0, 0.0));
        assert_eq!(p, Vector3::zeros());
        assert!((jac[(0, 0)] - 1.0 / 1.25).abs() < 1e-15 && jac[(2, 2)] == 0.0);
    }

    #[test]
    fn joint_row_sets_project_and_differentiate() {
        let x = Vector3::new(-2.0, 1.0, 3.0);
        assert_eq!(Cone::Equality.update_with_jacobian(&x, 3.0), (x, Matrix3::identity()));
        assert_eq!(Cone::Equality.violation_squared(&x), x.norm_squared());
        assert_eq!(Cone::Lower.project(&x), Vector3::zeros());
        assert_eq!(Cone::Lower.project(&(-x)), Vector3::new(2.0, 0.0, 0.0));
        assert_eq!(Cone::Lower.violation_squared(&x), 4.0);
        let bounded = Cone::Bounded { max: 0.5 };
        assert_eq!(bounded.project(&x), Vector3::new(-0.5, 0.0, 0.0));
        assert_eq!(bounded.update_with_jacobian(&x, 3.0).1, Matrix3::zeros());
        let inside = Vector3::new(0.25, 1.0, 1.0);
        assert_eq!(bounded.update_with_jacobian(&inside, 3.0).1[(0, 0)], 1.0);
        assert_eq!(Cone::Lower.shift(&x), 0.0);
        assert_eq!(Cone::Coulomb { mu: 0.5 }.shift(&x), 0.5 * 10f64.sqrt());
    }

    #[test]
    fn resistance_clamps_its_rows_apart_and_differentiates() {
        let cone = Cone::Resistance {
            torsional: 0.2,
            rolling: 0.5,
        };
        let p = cone.project(&Vector3::new(-0.7, 0.3, 0.3));
        assert!((p - Vector3::new(-0.2, 0.3, 0.3)).norm() < 1e-15, "{p}");
        let p = cone.project(&Vector3::new(0.1, 3.0, -4.0));
        assert!((p - Vector3::new(0.1, 0.3, -0.4)).norm() < 1e-15, "{p}");
        let h = 1e-7;
        for x in [
            Vector3::new(0.1, 0.2, -0.1),
            Vector3::new(-0.7, 0.3, 0.3),
            Vector3::new(0.1, 3.0, -4.0),
            Vector3::new(1.0, -0.6, 0.1),
        ] {
            let (_, jac) = cone.update_with_jacobian(&x, 2.0);
            for j in 0..3 {
                let mut e = Vector3::zeros();
                e[j] = h;
                let column = (cone.project(&(x + e)) - cone.project(&(x - e))) / (2.0 * h);
                assert!((jac.column(j) - column).abs().max() < 1e-6, "{x:?} column {j}\n{jac}");
            }
            assert!((jac - jac.transpose()).abs().max() < 1e-15);
            assert!(jac.symmetric_eigenvalues().min() > -1e-15);
        }
        assert_eq!(cone.shift(&Vector3::new(1.0, 2.0, 3.0)), 0.0);
        assert_eq!(cone.violation_squared(&Vector3::new(1.0, 2.0, 3.0)), 0.0);
    }

    #[test]
    fn drive_update_has_the_spring_law_as_fixed_point_and_potential_as_integral() {
        let drive = Cone::Drive { gain: 2.0, max: 1.5 };
        let beta = 5.0;
        for y in [-0.3, 0.1, 0.6, -2.0] {
            // Iterate λ ← P(λ − β y): it converges to clamp(−gain·y).
            let mut lambda = 0.0;
            for _ in 0..200 {
                lambda = drive.update(&Vector3::new(lambda - beta * y, 0.0, 0.0), beta).x;
            }
            assert!(
                (lambda - (-2.0 * y).clamp(-1.5, 1.5)).abs() < 1e-12,
                "y = {y}: {lambda}"
            );
        }
        for cone in [
            drive,
            Cone::Resistance {
                torsional: 0.5,
                rolling: 1.5,
            },
            Cone::Bounded { max: 0.7 },
            Cone::Lower,
            Cone::Coulomb { mu: 0.4 },
        ] {
            for x in [
                Vector3::new(0.3, 0.2, -0.1),
                Vector3::new(-4.0, 1.0, 0.5),
                Vector3::new(9.0, -3.0, 2.0),
            ] {
                let h = 1e-6;
                for k in 0..3 {
                    let mut e = Vector3::zeros();
                    e[k] = h;
                    let derivative = (cone.potential(&(x + e), beta) - cone.potential(&(x - e), beta)) / (2.0 * h);
                    let (p, _) = cone.update_with_jacobian(&x, beta);
                    assert!((derivative - p[k]).abs() < 1e-6, "{cone:?} {x:?} row {k}");
                    assert_eq!(cone.update(&x, beta), p, "{cone:?} {x:?}");
                }
            }
        }
    }

    #[test]
    fn vanishing_tangent_gives_no_nan() {
        for mu in [0.0, 0.3, 1.0] {
            for x in [
                Vector3::zeros(),
                Vector3::new(1.0, 0.0, 0.0),
                Vector3::new(-1.0, 0.0, 0.0),
            ] {
                let (p, jac) = project_with_jacobian(mu, &x);
                assert!(p.iter().chain(jac.iter()).all(|v| v.is_finite()));
            }
        }
    }
}
