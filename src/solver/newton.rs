//! The inner cascade (design note §3.2–3.3): Newton's method on the convex surrogate `Φ` for a
//! fixed multiplier `λ` and frozen shift, with an exact line search.
//!
//! Owns the per-iteration buffers; reads the assembled problem, never changes it.

use nalgebra::{DVector, Matrix3, Vector3};

use super::assembly::Assembled;
use super::cone::Cone;
use super::line_search::{LineSearchInput, exact_line_search};
use super::linear::{NewtonSystem, NotPositiveDefinite, StaleFactorCg};
use super::settings::SolverSettings;

/// One Newton iteration's record, for convergence studies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NewtonTrace {
    /// Outer iteration this Newton iteration belongs to (0-based).
    pub outer: u32,
    /// `‖A⁻¹ ∇Φ‖∞` at the iterate, m/s.
    pub gradient: f64,
}

/// The surrogate's data for one outer iteration.
pub(crate) struct Surrogate<'a> {
    pub lambda: &'a [Vector3<f64>],
    /// `êᵢ`: bias plus frozen shift.
    pub bias: &'a [Vector3<f64>],
    pub beta: &'a [f64],
    pub cones: &'a [Cone],
    pub penalty: f64,
    pub outer: u32,
}

/// How far one inner solve goes, and by which directions.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InnerSolve {
    /// Stop once `‖A⁻¹∇Φ‖∞` is within this, m/s, if it is above the design note's inner tolerance.
    pub tolerance: f64,
    /// The solve is far from its answer: on a large island, seek the directions by CG first.
    pub cg_directions: bool,
}

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NewtonCounts {
    pub newton: u32,
    /// Of `newton`, the directions found by CG on a stale factorization.
    pub cg_directions: u32,
    pub line_search: u32,
}

#[derive(Default)]
pub(crate) struct NewtonSolver {
    pub system: NewtonSystem,
    gradient: DVector<f64>,
    direction: DVector<f64>,
    scratch: DVector<f64>,
    x: Vec<Vector3<f64>>,
    /// `Π(xᵢ)` at the last evaluated iterate: the returned `v`.
    projected: Vec<Vector3<f64>>,
    jd: Vec<Vector3<f64>>,
    weights: Vec<Matrix3<f64>>,
    cg: StaleFactorCg,
    pub trace: Vec<NewtonTrace>,
}

impl NewtonSolver {
    pub fn resize(&mut self, dofs: usize, contacts: usize) {
        for buffer in [&mut self.gradient, &mut self.direction, &mut self.scratch] {
            *buffer = std::mem::take(buffer).resize_vertically(dofs, 0.0);
        }
        for buffer in [&mut self.x, &mut self.projected] {
            buffer.resize(contacts, Vector3::zeros());
        }
        self.jd.resize(contacts, Vector3::zeros());
        self.weights.resize(contacts, Matrix3::zeros());
    }

    /// Gradient `A v − b − Σ Jᵢᵀ Π(xᵢ)` and Hessian weights `βᵢ ∂Π(xᵢ)` at `v`; returns the largest
    /// `|Jᵢ v + êᵢ|`.
    fn evaluate(&mut self, asm: &Assembled, s: &Surrogate, v: &DVector<f64>) -> f64 {
        asm.apply_a(v, &mut self.gradient);
        self.gradient -= &asm.rhs;
        let mut largest = 0.0_f64;
        for c in 0..asm.contacts.len() {
            let y = asm.jacobian_times(c, v) + s.bias[c];
            largest = largest.max(y.amax());
            self.x[c] = s.lambda[c] - s.beta[c] * y;
            let (p, jac) = s.cones[c].update_with_jacobian(&self.x[c], s.beta[c]);
            asm.add_jacobian_transpose(c, &(-p), &mut self.gradient);
            self.projected[c] = p;
            self.weights[c] = s.beta[c] * jac;
        }
        largest
    }

    /// `Φ(v) = ½ vᵀA v − bᵀv + Σᵢ ‖Π(xᵢ)‖² / (2βᵢ)`.
    pub fn objective(&mut self, asm: &Assembled, s: &Surrogate, v: &DVector<f64>) -> f64 {
        asm.apply_a(v, &mut self.scratch);
        let mut phi = v.dot(&self.scratch) * 0.5 - v.dot(&asm.rhs);
        for c in 0..asm.contacts.len() {
            let x = s.lambda[c] - s.beta[c] * (asm.jacobian_times(c, v) + s.bias[c]);
            phi += s.cones[c].potential(&x, s.beta[c]) / s.beta[c];
        }
        phi
    }

    /// `Π(xᵢ)` per contact at the `v` the last [`Self::minimize`] returned: the next
    /// multipliers, without another pass over the contacts.
    pub fn last_projected(&self) -> &[Vector3<f64>] {
        &self.projected
    }

    /// `xᵢ = λᵢ − βᵢ yᵢ` per contact at the last evaluated iterate.
    pub fn last_arguments(&self) -> &[Vector3<f64>] {
        &self.x
    }

    /// `βᵢ ∂Π(xᵢ)` per contact at the last evaluated iterate.
    pub fn last_weights(&self) -> &[Matrix3<f64>] {
        &self.weights
    }

    /// Factors `H` at the last evaluated iterate and lends it with that iterate's weights
    /// `βᵢ ∂Πᵢ`, for products with `∂v/∂δ` that do not form its columns.
    pub fn factored_response(
        &mut self,
        asm: &Assembled,
    ) -> Result<(&mut NewtonSystem, &[Matrix3<f64>]), NotPositiveDefinite> {
        self.system.factor(asm, &self.weights)?;
        Ok((&mut self.system, &self.weights))
    }

    /// How the surrogate's minimiser moves with the listed contacts' frozen shifts: `out[k]`
    /// becomes `∂v/∂δⱼ = −H⁻¹ Jⱼᵀ βⱼ ∂Πⱼ e_n` for `j = contacts[k]`, with `H` factored at the last
    /// evaluated iterate. Each `out[k]` must already have the problem's size.
    pub fn shift_response(
        &mut self,
        asm: &Assembled,
        contacts: &[usize],
        out: &mut [DVector<f64>],
    ) -> Result<(), NotPositiveDefinite> {
        let (system, weights) = self.factored_response(asm)?;
        for (column, &j) in out.iter_mut().zip(contacts) {
            column.fill(0.0);
            let normal_weight: Vector3<f64> = weights[j].column(0).into();
            asm.add_jacobian_transpose(j, &(-normal_weight), column);
        }
        system.solve_columns_in_place(out);
        Ok(())
    }

    /// Minimises the surrogate from `v`, in place, until `‖A⁻¹∇Φ‖∞` is within the design note's
    /// inner tolerance or `inner.tolerance` (m/s), whichever is larger. With
    /// `inner.cg_directions`, on an island of at least `SolverSettings::cg_direction_min_bodies`,
    /// a Newton direction is first sought by CG preconditioned by the factorization held. Always
    /// ends on an evaluation of the returned `v`, whose multipliers [`Self::last_projected`]
    /// exposes.
    pub fn minimize(
        &mut self,
        asm: &Assembled,
        s: &Surrogate,
        v: &mut DVector<f64>,
        settings: &SolverSettings,
        inner: InnerSolve,
        counts: &mut NewtonCounts,
    ) -> Result<(), NotPositiveDefinite> {
        let cg_iterations = if inner.cg_directions && asm.bodies.len() >= settings.cg_direction_min_bodies {
            settings.cg_direction_iterations
        } else {
            0
        };
        let mut first_gradient = None;
        // One evaluation more than factorizations: the last step's result is checked too.
        for iteration in 0..=settings.max_newton_iterations {
            let largest_y = self.evaluate(asm, s, v);
            asm.apply_a_inverse(&self.gradient, &mut self.scratch);
            let gradient_norm = self.scratch.amax();
            if !gradient_norm.is_finite() {
                return Err(NotPositiveDefinite);
            }
            if settings.record_trace {
                self.trace.push(NewtonTrace {
                    outer: s.outer,
                    gradient: gradient_norm,
                });
            }
            let floor = 64.0 * f64::EPSILON * (s.penalty * largest_y + v.amax());
            if gradient_norm <= (1e-3 * settings.tolerance).max(floor).max(inner.tolerance)
                || iteration == settings.max_newton_iterations
            {
                return Ok(());
            }
            let first = *first_gradient.get_or_insert(gradient_norm);
            let forcing = settings.cg_direction_forcing.min(gradient_norm / first);
            if self.cg.solve(
                &mut self.system,
                asm,
                &self.weights,
                &self.gradient,
                &mut self.direction,
                forcing,
                cg_iterations,
            ) {
                counts.cg_directions += 1;
            } else {
                self.system.factor(asm, &self.weights)?;
                self.direction.copy_from(&self.gradient);
                self.direction.neg_mut();
                self.system.solve_in_place(&mut self.direction);
            }
            counts.newton += 1;

            let mut linear_slope = self.gradient.dot(&self.direction);
            let initial_slope = linear_slope;
            for c in 0..asm.contacts.len() {
                self.jd[c] = asm.jacobian_times(c, &self.direction);
                // ∇Φ = (A v − b) − Σ Jᵀ Π(x): add the contact part back to get dᵀ(A v − b).
                linear_slope += self.jd[c].dot(&self.projected[c]);
            }
            if initial_slope >= 0.0 {
                // Round-off has eaten the descent direction: v is as good as it gets.
                return Ok(());
            }
            asm.apply_a(&self.direction, &mut self.scratch);
            let input = LineSearchInput {
                linear_slope,
                curvature: self.direction.dot(&self.scratch),
                x: &self.x,
                jd: &self.jd,
                beta: s.beta,
                cones: s.cones,
            };
            let (alpha, evaluations) = exact_line_search(&input, initial_slope, settings.max_line_search_iterations);
            counts.line_search += evaluations;
            v.axpy(alpha, &self.direction, 1.0);
        }
        Ok(())
    }
}
