//! Stage 4b: penetration pushed out by moving bodies, not by speeding them up (a split push-out).
//!
//! The velocity step (`solve`) gives a penetrating contact the bias of a touching one, so it only
//! stops the overlap from growing. Asked in the same problem to push the overlap out at
//! `erp · depth / dt`, a pile's redundant sticking contacts demanded separation speeds that no
//! rigid motion gives, and the exact answer was a slow creep the solver took thousands of Newton
//! iterations to find, or did not find: 36 of 100 captured steps of 36 cylinders poured into a
//! pen, with 3–9 of their ~230 contacts 3e-6–4e-5 m deep, ended above the tolerance after 145k
//! Newton iterations in all; the same steps without the push-out took 21k and left 4.
//!
//! Once an island's velocities are solved, its contacts' gaps are predicted at the end of the
//! step. If one is deeper than [`SolverSettings::gap_slop`] (at a loose tolerance, than a
//! hundredth of what that tolerance lets a step close: [`LOOSE_OVERLAP_FRACTION`]), a second
//! problem is solved: the same bodies at rest and unloaded, the same contacts without friction,
//! and the joints' locks and limits, so that jointed bodies move together. Its velocities times
//! `dt` are the mass-weighted displacement that removes `erp` of each predicted depth (at most
//! `max_push_out_speed · dt` a step) and closes no other contact by more than its predicted
//! gap. Frictionless, it is convex: a few Newton iterations for a body or a small heap, 10–100
//! for a 210-box pyramid whose loosely solved steps (1e-2 m/s) leave micrometre overlaps
//! everywhere. It is solved to the velocity step's tolerance or a tenth of its fastest push-out
//! speed, whichever is tighter ([`PUSH_OUT_RELATIVE_TOLERANCE`]). Integration adds the
//! displacement to the poses; the velocities stay as solved.
//!
//! Owns each island's push-out problem, solver and displacement; reads the island's solved
//! problem, its answer and its contacts' true gaps; moves nothing itself.

use bevy_math::DVec3;

use crate::solver::{
    BodyVelocity, Cone, ContactSide, Solution, SolveFailure, SolveReport, Solver, SolverBody, SolverConstraint,
    SolverContact, SolverSettings, StepProblem,
};

/// The push-out's tolerance as a fraction of its fastest push-out speed, where that is tighter
/// than the velocity step's (at the default 1e-8 m/s it never is: a push-out's fastest speed is at
/// least `erp · gap_slop / dt`, 3.6e-5 m/s at 60 Hz). The deepest overlap then shrinks by
/// about `0.9 · erp` of itself a step, at any tolerance. Solved to a loose tolerance instead, a
/// push-out whose speeds were all below it did nothing: at 1e-2 m/s a ten-box stack stayed 0.42
/// mm deep in itself and a 210-box pyramid sank 6 mm.
const PUSH_OUT_RELATIVE_TOLERANCE: f64 = 0.1;

/// The overlap a push-out leaves, as a fraction of what the velocity step's tolerance lets a
/// contact close in one step (`tolerance · dt`), where that is more than `gap_slop`: above
/// 1.8e-2 m/s at 60 Hz. A tolerance of 1e-1 m/s accepts 1.7 mm of closing a step, and pushing out
/// the last micrometres of a settling pile cost the most: near the slop a push-out of the 210-box
/// pyramid took 60–80 Newton iterations, and its measured steps at 1e-1 m/s a mean of 3.6 ms
/// against 0.47 with this floor (sunk by 0.17 mm instead of 48 µm; `benches/scenes.rs`).
const LOOSE_OVERLAP_FRACTION: f64 = 0.01;

/// One island's push-out, reused step after step.
#[derive(Default)]
pub(crate) struct PushOut {
    problem: StepProblem,
    solver: Solver,
    solution: Solution,
    /// Whether this step's displacement is to be applied.
    active: bool,
    /// This step's push-out solve, if there was one.
    report: Option<SolveReport>,
    /// Each contact's signed gap predicted at the end of the step.
    end_gaps: Vec<f64>,
}

impl PushOut {
    /// Solves the push-out of `island` (solved into `solution`), whose contacts' true signed gaps
    /// are `gaps` (the problem's own are those of the velocity step); leaves it inactive when no
    /// contact is predicted deeper than the slop or the push-out has no answer.
    pub fn run(&mut self, island: &StepProblem, solution: &Solution, gaps: &[f64], settings: &SolverSettings) {
        self.active = false;
        self.report = None;
        let dt = island.dt;
        let end_gap = |(contact, gap): (&SolverContact, &f64)| {
            let side_velocity = |side: ContactSide| match side {
                ContactSide::Body(k) => {
                    let v = solution.velocities[k];
                    v.linear + v.angular.cross(contact.point - island.bodies[k].center_of_mass)
                }
                ContactSide::Fixed { velocity, .. } => velocity,
            };
            gap + dt
                * contact
                    .normal
                    .dot(side_velocity(contact.body1) - side_velocity(contact.body2))
        };
        if solution.velocities.len() != island.bodies.len() {
            return;
        }
        self.end_gaps.clear();
        self.end_gaps.extend(island.contacts.iter().zip(gaps).map(end_gap));
        let deepest = self.end_gaps.iter().copied().fold(f64::INFINITY, f64::min);
        let left = settings.gap_slop.max(LOOSE_OVERLAP_FRACTION * settings.tolerance * dt);
        if deepest >= -left {
            return;
        }
        self.problem.dt = dt;
        // Fixed sides hold still: their motion over the step is in the predicted gap already.
        let at_rest = |side: ContactSide| match side {
            ContactSide::Fixed { .. } => ContactSide::STATIC,
            body => body,
        };
        // The joints' locks and limits hold the displacement to what they allow (to first order:
        // their position errors are the joint projection's); their drives are forces, not locks.
        self.problem.constraints.clear();
        self.problem.constraints.extend(
            island
                .constraints
                .iter()
                .filter(|c| matches!(c.cone, Cone::Equality | Cone::Lower))
                .map(|c| SolverConstraint {
                    body1: at_rest(c.body1),
                    body2: at_rest(c.body2),
                    bias: DVec3::ZERO,
                    warm_impulse: None,
                    ..*c
                }),
        );
        self.problem.bodies.clear();
        self.problem.bodies.extend(
            island
                .bodies
                .iter()
                .map(|b| SolverBody::new(b.mass, b.inertia, b.center_of_mass)),
        );
        self.problem.contacts.clear();
        self.problem
            .contacts
            .extend(island.contacts.iter().zip(&self.end_gaps).map(|(contact, &gap)| {
                SolverContact::new(
                    contact.id,
                    at_rest(contact.body1),
                    at_rest(contact.body2),
                    contact.point,
                    contact.normal,
                )
                .with_gap(gap)
                .with_friction(0.0)
            }));
        // Solved to the velocity step's tolerance alone, a loose one would let the push-out stop
        // short of speeds all below it, and leave the overlap in place. The bias grows with the
        // depth, so the deepest contact has the fastest push-out speed.
        let fastest = -settings.gap_bias(deepest, dt);
        self.solver.settings = SolverSettings {
            warm_start: false,
            tolerance: settings.tolerance.min(PUSH_OUT_RELATIVE_TOLERANCE * fastest),
            ..*settings
        };
        let report = self.solver.solve(&self.problem, &mut self.solution);
        self.active = !matches!(
            report.failure,
            Some(SolveFailure::NoSolution | SolveFailure::InvalidInput(_))
        ) && self
            .solution
            .velocities
            .iter()
            .all(|v| v.linear.is_finite() && v.angular.is_finite());
        self.report = Some(report);
    }

    /// This step's push-out solve, if the island needed one.
    pub fn report(&self) -> Option<&SolveReport> {
        self.report.as_ref()
    }

    /// Body `k`'s displacement over the step as `(translation, rotation vector)`, if this step
    /// pushes out.
    pub fn displacement(&self, k: usize, dt: f64) -> Option<(DVec3, DVec3)> {
        let BodyVelocity { linear, angular } = *self.solution.velocities.get(k).filter(|_| self.active)?;
        Some((linear * dt, angular * dt))
    }
}
