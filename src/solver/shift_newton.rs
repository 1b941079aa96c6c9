//! Newton's method on the shift fixed point (an addition to design note §3.6).
//!
//! With every multiplier frozen, the outer loop is the fixed point `δ = S(δ)` of the de Saxcé
//! shifts, `Sᵢ(δ) = μᵢ ‖w_t,ᵢ(v(δ))‖`, where `v(δ)` minimises the surrogate. On one sliding contact
//! it contracts by μ²/(1+μ²); on many coupled sliding contacts it can contract slowly or not at
//! all. Differentiating the surrogate's optimality condition `∇Φ(v; δ) = 0` gives how `v` moves
//! with each shift, `∂v/∂δⱼ = −H⁻¹ Jⱼᵀ βⱼ ∂Πⱼ e_n`, with `H` the Newton matrix already built; so
//! over the sliding contacts `Q` one step solves `(I − ∂S/∂δ) Δ = S(δ) − δ`, a dense `|Q|×|Q|`
//! system, and moves the multipliers by the same linearisation. With many sliding contacts that
//! system is solved without forming it (`linear::capacitance`).
//!
//! Owns its buffers; reads the assembled problem and the Newton solver's last evaluation, and
//! writes only the proposed `(λ, δ)`. Whether to take the step is the outer loop's decision.

use nalgebra::{DVector, Vector3};

use super::assembly::Assembled;
use super::cone::{self, Cone, ConeRegime};
use super::linear::{CapacitanceSolver, DenseLu};
use super::newton::NewtonSolver;

/// A step more than this many times the plain update's largest change is not trusted: the
/// linearisation has crossed a regime change (a contact opening or starting to stick).
const MAX_STEP_RATIO: f64 = 10.0;

/// Tangential speeds below this have no direction to differentiate, m/s.
const MIN_SLIDING_SPEED: f64 = 1e-9;

/// BiCGSTAB iterations after which the step's system counts as unsolved, and the step as refused.
/// A system that needs more is nearly singular, and its step lies beyond the 10× guard: on the
/// 1000-ball pen's step 90 (145 systems at 533–1022 sliding contacts) the 53 steps taken needed
/// 16–97 iterations but one (217), while 26 of the 92 refused ran past 100 (two without
/// converging), for 9.4 s of the step's 87. Solving such a system densely instead, as a failed
/// BiCGSTAB run once did, costs `k` more solves with `H` and a `k³/3` LU, for a step refused all
/// the same.
const MAX_KRYLOV_ITERATIONS: usize = 100;

/// What one outer iteration left: the iterate's contact velocities and the plain update.
pub(crate) struct ShiftIterate<'a> {
    pub cones: &'a [Cone],
    /// Unshifted `wᵢ = Jᵢ v + eᵢ` at the surrogate's minimiser.
    pub velocity: &'a [Vector3<f64>],
    /// The shifts the surrogate was built with, and `S(δ)`.
    pub shift: &'a [f64],
    pub shift_next: &'a [f64],
    /// The multiplier update `Π(λ − β(J v + ê))`.
    pub lambda_next: &'a [Vector3<f64>],
    /// The solve's tolerance, m/s: a contact whose plain shift update moves less than a tenth of
    /// it is left to the plain update.
    pub tolerance: f64,
    /// Sliding contacts from which the step's system goes to BiCGSTAB
    /// ([`crate::solver::SolverSettings::krylov_from`]).
    pub krylov_min_sliding: usize,
}

#[derive(Default)]
pub(crate) struct ShiftNewton {
    sliding: Vec<usize>,
    /// `∂v/∂δⱼ` per sliding contact.
    columns: Vec<DVector<f64>>,
    moved: DVector<f64>,
    /// `I − ∂S/∂δ`.
    lu: DenseLu,
    step: Vec<f64>,
    capacitance: CapacitanceSolver,
}

impl ShiftNewton {
    /// Writes the Newton step's `(λ, δ)` into `lambda`, `shift` and returns `Some(true)`;
    /// `Some(false)` (nothing written) when `H` cannot be factored, the system cannot be solved or
    /// the step is not to be trusted, and `None` when no contact slides (nothing was solved).
    pub fn step(
        &mut self,
        asm: &Assembled,
        newton: &mut NewtonSolver,
        it: &ShiftIterate,
        lambda: &mut [Vector3<f64>],
        shift: &mut [f64],
    ) -> Option<bool> {
        self.sliding.clear();
        let arguments = newton.last_arguments();
        let min_update = 0.1 * it.tolerance;
        for (c, set) in it.cones.iter().enumerate() {
            let w = it.velocity[c];
            if let Cone::Coulomb { mu } = *set
                && mu > 0.0
                && cone::tangent_norm(&w) > MIN_SLIDING_SPEED
                && (it.shift_next[c] - it.shift[c]).abs() > min_update
                && cone::project(mu, &arguments[c]).1 == ConeRegime::Slide
            {
                self.sliding.push(c);
            }
        }
        let k = self.sliding.len();
        if k == 0 {
            return None;
        }
        let dofs = asm.dofs();
        self.moved = std::mem::take(&mut self.moved).resize_vertically(dofs, 0.0);
        self.step.clear();
        let mut plain = 0.0_f64;
        for &i in &self.sliding {
            let residual = it.shift_next[i] - it.shift[i];
            plain = plain.max(residual.abs());
            self.step.push(residual);
        }
        let solved = if k >= it.krylov_min_sliding {
            self.krylov_solve(asm, newton, it)
        } else {
            self.direct_solve(asm, newton, it)
        };
        if !solved {
            return Some(false);
        }
        if self.step.iter().any(|d| d.abs() > MAX_STEP_RATIO * plain) {
            return Some(false);
        }
        shift.copy_from_slice(it.shift_next);
        for (a, &i) in self.sliding.iter().enumerate() {
            shift[i] = (it.shift[i] + self.step[a]).max(0.0);
        }
        // The multipliers follow the same linearisation: dλᵢ = −βᵢ ∂Πᵢ (Jᵢ dv + Δᵢ e_n).
        let weights = newton.last_weights();
        let mut next_sliding = self.sliding.iter().zip(&self.step).peekable();
        for c in 0..it.cones.len() {
            let mut change = asm.jacobian_times(c, &self.moved);
            // `sliding` is in contact order.
            if let Some((_, &d)) = next_sliding.next_if(|(i, _)| **i == c) {
                change.x += d;
            }
            lambda[c] = it.cones[c].project(&(it.lambda_next[c] - weights[c] * change));
        }
        Some(true)
    }

    /// The step's system solved by BiCGSTAB without forming it (`linear::capacitance`): overwrites
    /// `step` (the plain update) with the step and sets `moved`; false, leaving `step`, if it
    /// cannot be solved within [`MAX_KRYLOV_ITERATIONS`].
    fn krylov_solve(&mut self, asm: &Assembled, newton: &mut NewtonSolver, it: &ShiftIterate) -> bool {
        let Ok((system, weights)) = newton.factored_response(asm) else {
            return false;
        };
        // The rank-one terms of `∂S/∂δ`: `−βᵢ ∂Πᵢ e_n` and `μᵢ t̂ᵢ`.
        let term = |i: usize| {
            let Cone::Coulomb { mu } = it.cones[i] else {
                unreachable!("only contacts slide")
            };
            let w = it.velocity[i];
            (
                -Vector3::from(weights[i].column(0)),
                Vector3::new(0.0, w.y, w.z) * (mu / cone::tangent_norm(&w)),
            )
        };
        self.capacitance.solve(
            asm,
            system,
            &self.sliding,
            term,
            &mut self.step,
            &mut self.moved,
            Some(MAX_KRYLOV_ITERATIONS),
        )
    }

    /// The step's system solved through the columns `∂v/∂δ_b` and a dense LU: overwrites `step`
    /// (the plain update) with the step and sets `moved`; false if it cannot be solved.
    fn direct_solve(&mut self, asm: &Assembled, newton: &mut NewtonSolver, it: &ShiftIterate) -> bool {
        let (k, dofs) = (self.sliding.len(), asm.dofs());
        if self.columns.len() < k {
            self.columns.resize_with(k, || DVector::zeros(dofs));
        }
        for column in &mut self.columns[..k] {
            if column.len() != dofs {
                *column = DVector::zeros(dofs);
            }
        }
        if newton
            .shift_response(asm, &self.sliding, &mut self.columns[..k])
            .is_err()
        {
            return false;
        }

        let matrix = self.lu.matrix_mut(k);
        for (a, &i) in self.sliding.iter().enumerate() {
            let Cone::Coulomb { mu } = it.cones[i] else {
                unreachable!("only contacts slide")
            };
            let w = it.velocity[i];
            let speed = cone::tangent_norm(&w);
            for (b, column) in self.columns[..k].iter().enumerate() {
                let moved = asm.jacobian_times(i, column);
                matrix[b * k + a] = -mu * (w.y * moved.y + w.z * moved.z) / speed;
            }
            matrix[a * k + a] += 1.0;
        }
        if !self.lu.solve_in_place(&mut self.step) {
            return false;
        }
        self.moved.fill(0.0);
        for (column, &d) in self.columns[..k].iter().zip(&self.step) {
            self.moved.axpy(d, column, 1.0);
        }
        true
    }
}
