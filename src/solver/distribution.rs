//! Of the impulses that give the solved velocities, the nearest to the solve's start (an
//! addition to the design note).
//!
//! On a statically indeterminate island — a box on four corners, a pyramid — the contacts'
//! velocities fix the impulses only up to a `d` with `Jᵀd = 0`: loads that cancel on every body.
//! The residual cannot tell such answers apart, and which one a solve returns depends on its
//! path: the outer loop from one start, the polish's Newton steps from another (a sticking
//! contact enters them with weight `mᵢ/ε`, so they move along `d` freely), each retry from its
//! own. A robot reading the forces would see them change with the number of iterations a step
//! happened to take.
//!
//! This stage makes the answer a function of the start: it moves the impulses `λ` along such
//! `d` to the admissible answer nearest the start `λ₀` (the warm start, last step's impulses, or
//! zero on a cold start, which gives the least-norm loads). Each contact's `d` stays on its face
//! of the cone at the answer: `Wᵢ = I` at rest (any load in the cone), `gᵢgᵢᵀ` along the impulse
//! `gᵢ` sliding, `0` opening and on joint blocks, so the velocities and complementarity are
//! unchanged. Then
//! `min Σ ‖λᵢ + dᵢ − λ₀ᵢ‖² / mᵢ` subject to `Jᵀd = 0` is
//!
//! ```text
//! dᵢ = Wᵢ (mᵢ Jᵢ y − δᵢ),   (A + Σ Jᵢᵀ Wᵢ mᵢ/ε Jᵢ) y = Σ Jᵢᵀ Wᵢ δᵢ / ε,   δ = λ − λ₀,
//! ```
//!
//! one factorization with the Newton matrix's sparsity. The `εA` that keeps it regular leaves
//! `Jᵀd = −εAy`; passes through the same factor take that out again. A sticking impulse that
//! would leave its cone stops the move there and moves on only along its generator, or not at
//! all once it stops on that too (a primal active-set step), for at most `MAX_ROUNDS`
//! factorizations. The caller keeps the move only if the residuals stay within what it accepts.
//!
//! Owns its buffers; reads the assembled problem; factors with the solver's Newton system (same
//! sparsity); writes only `(v, λ)`.

use nalgebra::{DVector, Matrix3, Vector3};

use super::assembly::{Assembled, AssembledContact};
use super::cone::{self, Cone, ConeRegime};
use super::linear::NewtonSystem;
use super::residual::{ContactResiduals, contact_residuals};

/// `ε` of the regularisation, dimensionless: a moving contact enters the system with weight
/// `mᵢ/ε`, the same conditioning bound as the polish's damping floor.
const REGULARISATION: f64 = 1e-8;

/// Passes through the factorization that take out the regularisation's velocity change.
const REFINEMENTS: u32 = 2;

/// Most active-set rounds, each one factorization. On a 20-row pyramid warm-started 10% off
/// unevenly (each impulse scaled by 0.9–1.1), six rounds left the answer 0.042 N·s from the warm
/// start, where the outer loop's ended 0.29 N·s from it.
const MAX_ROUNDS: u32 = 6;

/// Relative slack of the cone test, for sliding impulses that move along the cone's surface.
const CONE_SLACK: f64 = 1e-9;

#[derive(Default)]
pub(crate) struct Distribution {
    /// Per contact, the projector `Wᵢ` onto its face; zero once it stopped a move.
    faces: Vec<Matrix3<f64>>,
    weights: Vec<Matrix3<f64>>,
    trial: Vec<Vector3<f64>>,
    correction: Vec<Vector3<f64>>,
    rhs: DVector<f64>,
    scratch: DVector<f64>,
    trial_v: DVector<f64>,
}

impl Distribution {
    /// Moves `(v, λ)` towards `start` as above, treating a contact whose shifted velocity is
    /// within half of `accept` as at rest. Returns the new residuals if the moved pair is within
    /// `accept` (and leaves `(v, λ)` as they were otherwise), with the factorizations spent.
    pub fn nearest(
        &mut self,
        asm: &Assembled,
        system: &mut NewtonSystem,
        start: &[Vector3<f64>],
        v: &mut DVector<f64>,
        lambda: &mut [Vector3<f64>],
        accept: f64,
    ) -> (Option<ContactResiduals>, u32) {
        let rest = 0.5 * accept;
        let nc = asm.contacts.len();
        let dofs = asm.dofs();
        for buffer in [&mut self.rhs, &mut self.scratch, &mut self.trial_v] {
            *buffer = std::mem::take(buffer).resize_vertically(dofs, 0.0);
        }
        self.faces.clear();
        self.faces.extend(
            asm.contacts
                .iter()
                .enumerate()
                .map(|(c, contact)| face(contact, &(asm.jacobian_times(c, v) + contact.bias), &lambda[c], rest)),
        );
        self.weights.resize(nc, Matrix3::zeros());
        self.trial.clear();
        self.trial.extend_from_slice(lambda);
        let mut rounds = 0;
        while rounds < MAX_ROUNDS {
            rounds += 1;
            if !self.solve_move(asm, system, start) {
                return (None, rounds);
            }
            let fraction = (0..nc).fold(1.0_f64, |f, c| f.min(self.reach(asm, c)));
            for (trial, correction) in self.trial.iter_mut().zip(&self.correction) {
                *trial += correction * fraction;
            }
            if fraction >= 1.0 {
                break;
            }
            // An impulse that stopped the move inside its cone moves on only along its generator;
            // one that stopped on its generator keeps its value from here on.
            for c in 0..nc {
                let beyond = self.trial[c] + self.correction[c] * 1e-6;
                if self.faces[c] != Matrix3::zeros() && !admissible(&asm.contacts[c].cone, &beyond) {
                    self.faces[c] = narrowed(&self.faces[c], &self.trial[c]);
                }
            }
        }
        asm.velocities_for(&self.trial, &mut self.scratch, &mut self.trial_v);
        let moved = contact_residuals(asm, &self.trial_v, &self.trial);
        if !moved.within(accept) {
            return (None, rounds);
        }
        lambda.copy_from_slice(&self.trial);
        v.copy_from(&self.trial_v);
        (Some(moved), rounds)
    }

    /// Solves for the move `d` from `trial` over the current faces into `correction`; false if
    /// the factorization fails or the move is not finite.
    fn solve_move(&mut self, asm: &Assembled, system: &mut NewtonSystem, start: &[Vector3<f64>]) -> bool {
        self.rhs.fill(0.0);
        for (c, contact) in asm.contacts.iter().enumerate() {
            let face = self.faces[c];
            self.weights[c] = face * (contact.mass / REGULARISATION);
            let delta = self.trial[c] - start[c];
            asm.add_jacobian_transpose(c, &(face * delta / REGULARISATION), &mut self.rhs);
        }
        if system.factor(asm, &self.weights).is_err() {
            return false;
        }
        system.solve_in_place(&mut self.rhs);
        self.correction.clear();
        for (c, contact) in asm.contacts.iter().enumerate() {
            let delta = self.trial[c] - start[c];
            let along = contact.mass * asm.jacobian_times(c, &self.rhs);
            self.correction.push(self.faces[c] * (along - delta));
        }
        for _ in 0..REFINEMENTS {
            self.scratch.fill(0.0);
            for (c, correction) in self.correction.iter().enumerate() {
                asm.add_jacobian_transpose(c, &(correction / REGULARISATION), &mut self.scratch);
            }
            system.solve_in_place(&mut self.scratch);
            for (c, contact) in asm.contacts.iter().enumerate() {
                let along = contact.mass * asm.jacobian_times(c, &self.scratch);
                self.correction[c] -= self.faces[c] * along;
            }
        }
        self.correction.iter().all(|d| d.iter().all(|x| x.is_finite()))
    }

    /// The largest `t ≤ 1` with `trial + t·correction` in contact `c`'s cone. The cone is convex
    /// and holds `t = 0`, so the admissible `t` form an interval; bisection finds its end.
    fn reach(&self, asm: &Assembled, c: usize) -> f64 {
        let (x, d) = (self.trial[c], self.correction[c]);
        let cone = &asm.contacts[c].cone;
        if self.faces[c] == Matrix3::zeros() || admissible(cone, &(x + d)) {
            return 1.0;
        }
        let (mut low, mut high) = (0.0, 1.0);
        for _ in 0..40 {
            let middle = 0.5 * (low + high);
            if admissible(cone, &(x + d * middle)) {
                low = middle;
            } else {
                high = middle;
            }
        }
        low
    }
}

/// The projector onto the directions contact `c`'s impulse may move in without leaving its face
/// of the cone, at unshifted contact velocity `w` and impulse `lambda`. A contact at rest (its
/// shifted velocity within `rest`) may take any load in its cone, whether it carries one now or
/// not, and whether on the cone's surface or inside: another answer may load a touching contact
/// that this one leaves empty, or hold off the slip of one that this one brings to the verge of
/// it. A sliding one may only scale its impulse along the cone's surface, and an opening one
/// carries none.
fn face(contact: &AssembledContact, w: &Vector3<f64>, lambda: &Vector3<f64>, rest: f64) -> Matrix3<f64> {
    let Cone::Coulomb { mu } = contact.cone else {
        return Matrix3::zeros();
    };
    let y = contact.cone.shifted(w);
    if y.norm() <= rest {
        if mu == 0.0 {
            Matrix3::from_diagonal(&Vector3::new(1.0, 0.0, 0.0))
        } else {
            Matrix3::identity()
        }
    } else if cone::project(mu, &(lambda - contact.mass * y)).1 == ConeRegime::Slide && lambda.norm() > 0.0 {
        generator(lambda)
    } else {
        Matrix3::zeros()
    }
}

/// The projector onto the half-line through `lambda`, the one direction along which an impulse
/// on the cone's surface stays on it.
fn generator(lambda: &Vector3<f64>) -> Matrix3<f64> {
    let g = lambda.normalize();
    g * g.transpose()
}

/// The face left to an impulse `lambda` that stopped a move on face `face`.
fn narrowed(face: &Matrix3<f64>, lambda: &Vector3<f64>) -> Matrix3<f64> {
    if *face == Matrix3::identity() && lambda.norm() > 0.0 {
        generator(lambda)
    } else {
        Matrix3::zeros()
    }
}

fn admissible(cone: &Cone, x: &Vector3<f64>) -> bool {
    match *cone {
        Cone::Coulomb { mu } => x.x >= 0.0 && cone::tangent_norm(x) <= mu * x.x * (1.0 + CONE_SLACK),
        _ => true,
    }
}
