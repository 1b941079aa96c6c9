//! World-wide settings and what each step reports: gravity, solver settings, solver statistics
//! and the contacts with the impulses the solver applied.

use std::time::Duration;

use bevy_ecs::prelude::*;
use bevy_math::Vec3;
use bevy_reflect::prelude::*;

use crate::solver::{SolveReport, SolverSettings, StepProblem};

/// Gravitational acceleration, m/s² (default `(0, −9.81, 0)`).
#[derive(Resource, Reflect, Clone, Copy, Debug, PartialEq)]
#[reflect(Resource, Default, Debug, PartialEq)]
pub struct Gravity(pub Vec3);

impl Default for Gravity {
    fn default() -> Self {
        Self(Vec3::new(0.0, -9.81, 0.0))
    }
}

/// How the physics step runs.
#[derive(Resource, Clone, Copy, Debug, PartialEq)]
pub struct PhysicsSettings {
    /// Tolerances, budgets and penalties of the CANAL solver (see [`SolverSettings`]).
    pub solver: SolverSettings,
    /// Contacts are generated for shapes closer than this, m, plus the distance the two bodies
    /// can close within one step: the solver then lets them touch, not pass (speculative contact).
    pub contact_margin: f32,
    /// A contact that carried load last step and now reads a gap narrower than this, m, counts as
    /// touching: the velocity step does not ask the bodies to close it, and they may rest up to
    /// this far apart there. Closing one hairline gap of a resting body tilts it and opens
    /// another, and in a heap the exact answer to such demands shuffled it for good: 36 poured
    /// cylinders jiggled at 1e-2 m/s, and the solver stalled on the creep: re-solving 60 captured
    /// landing steps of 100 tumbling boxes (646 island solves) left 33 above the tolerance after
    /// 92.7k Newton iterations, and with these gaps touching 12 after 46.6k. A new contact's gap
    /// is always closed exactly, so falling bodies still land on the surface. 0 turns it off.
    pub resting_gap: f32,
    /// Solve islands on Bevy's compute task pool. The results are the same as in serial.
    pub parallel_islands: bool,
    /// With `parallel_islands`, the least total solve time of the last step's islands at which
    /// this step's are solved in parallel (default 0.5 ms). Below it, waking the pool's threads
    /// costs more than they save: on two cores, 100 resting three-box stacks took 0.22 ms a step
    /// in the solve stage in parallel and 0.19 ms in order, while four pens of 36 poured balls
    /// took 38 ms a step in parallel and 56 ms in order.
    pub parallel_min_work: Duration,
}

impl Default for PhysicsSettings {
    fn default() -> Self {
        Self {
            solver: SolverSettings::default(),
            contact_margin: 0.02,
            resting_gap: 1e-4,
            parallel_islands: true,
            parallel_min_work: Duration::from_micros(500),
        }
    }
}

/// Wall time of each stage of the last step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// Reading bodies and colliders from the world.
    pub prepare: Duration,
    /// Finding pairs of overlapping bounding boxes.
    pub broad_phase: Duration,
    /// Computing contact manifolds.
    pub narrow_phase: Duration,
    /// Building islands and solving them.
    pub solve: Duration,
    /// Advancing poses.
    pub integrate: Duration,
    /// Writing transforms, velocities and contacts back.
    pub write_back: Duration,
}

/// Solver statistics of the last step, MuJoCo-style: every step says how well it was solved.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq)]
pub struct SolverStats {
    /// Dynamic bodies simulated.
    pub bodies: usize,
    /// Contact points handed to the solver.
    pub contacts: usize,
    /// Islands solved.
    pub islands: usize,
    /// Outer (augmented-Lagrangian) iterations, summed over islands.
    pub outer_iterations: u32,
    /// Newton iterations, summed over islands.
    pub newton_iterations: u32,
    /// Of those, the Newton directions found by conjugate gradients preconditioned by an earlier
    /// factorization, on islands of at least `SolverSettings::cg_direction_min_bodies` bodies.
    pub cg_directions: u32,
    /// Newton steps on the shifts of sliding contacts attempted, summed over islands
    /// (`SolveReport::shift_newton_steps`).
    pub shift_newton_steps: u32,
    /// Of those, the steps taken, summed over islands.
    pub shift_newton_taken: u32,
    /// Projected Gauss–Seidel sweeps run on near-miss warm starts, summed over islands (see
    /// `SolverSettings::smoothing_sweeps` and `smoothing_budget`).
    pub smoothing_sweeps: u32,
    /// Nonsmooth Gauss–Seidel sweeps run before the outer loop by solves far from their answer,
    /// summed over islands (see `SolverSettings::gauss_seidel_sweeps`).
    pub gauss_seidel_sweeps: u32,
    /// Steps through an earlier solve's factorization given to near-miss warm starts, summed
    /// over islands (`SolveReport::held_steps`).
    pub held_steps: u32,
    /// Semismooth Newton steps of the polish that follows a spent outer budget, summed over
    /// islands (see `SolverSettings::polish_iterations`).
    pub polish_iterations: u32,
    /// Factorizations spent moving answers to the impulses nearest their warm starts, summed over
    /// islands (see `SolverSettings::nearest_impulses`).
    pub distribution_solves: u32,
    /// Retries of solves that ended far above the tolerance, summed over islands (see
    /// `SolverSettings::retry_above`).
    pub retries: u32,
    /// Most whole solves an island took to settle its rolling-friction bounds
    /// (`SolveReport::rolling_rounds`): 0 where no contact resists rolling or spin.
    pub rolling_rounds: u32,
    /// Islands with a contact left deeper than `SolverSettings::gap_slop`, whose penetration was
    /// then pushed out by moving their bodies (a frictionless solve at rest after the velocities;
    /// the velocities stay as solved).
    pub push_out_islands: usize,
    /// Newton iterations of those push-out solves, summed over islands.
    pub push_out_newton_iterations: u32,
    /// Worst island's NCP residual, m/s.
    pub ncp_residual: f64,
    /// Worst island's feasibility residual, m/s.
    pub feasibility_residual: f64,
    /// Every island converged.
    pub converged: bool,
    /// Wall time per stage.
    pub times: StageTimes,
}

impl SolverStats {
    /// The larger of the worst island's NCP and feasibility residuals, m/s: what the tolerance
    /// bounds.
    pub fn worst_residual(&self) -> f64 {
        self.ncp_residual.max(self.feasibility_residual)
    }
}

/// One contact point of a pair, with what the solver did there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactPoint {
    /// World position (midway between the two surfaces), m.
    pub point: Vec3,
    /// Unit normal, world frame, pointing from `entity2` towards `entity1`.
    pub normal: Vec3,
    /// Penetration depth, m (negative: a gap, a speculative contact).
    pub penetration: f32,
    /// Normal impulse on `entity1` over the step, N·s (≥ 0).
    pub normal_impulse: f32,
    /// Whole impulse on `entity1` over the step, world frame, N·s; `entity2` receives its
    /// opposite. Divide by the time step for the contact force.
    pub impulse: Vec3,
}

/// The contacts of one colliding pair of entities.
#[derive(Clone, Debug, PartialEq)]
pub struct ContactPair {
    /// First entity.
    pub entity1: bevy_ecs::entity::Entity,
    /// Second entity.
    pub entity2: bevy_ecs::entity::Entity,
    /// The points.
    pub points: Vec<ContactPoint>,
    /// The torque impulse of the pair's rolling and torsional friction on `entity1`, N·m·s
    /// (zero without [`RollingFriction`](crate::components::RollingFriction)).
    pub resisting_torque_impulse: Vec3,
}

impl ContactPair {
    /// Sum of the impulses on `entity1`, N·s.
    pub fn total_impulse(&self) -> Vec3 {
        self.points.iter().map(|p| p.impulse).sum()
    }
}

/// Every colliding pair of the last step with its contact points and impulses.
#[derive(Resource, Clone, Debug, Default, PartialEq)]
pub struct Contacts {
    /// Pairs, ordered by entity.
    pub pairs: Vec<ContactPair>,
}

impl Contacts {
    /// The pairs involving `entity`.
    pub fn of(&self, entity: bevy_ecs::entity::Entity) -> impl Iterator<Item = &ContactPair> {
        self.pairs
            .iter()
            .filter(move |p| p.entity1 == entity || p.entity2 == entity)
    }
}

/// Every island's solver problem and report, step after step, kept only while this resource
/// exists: insert it to capture a scene's steps and replay them with the solver alone — to
/// compare solver settings on the same problems, or to attach a step that did not converge to a
/// bug report. Each problem is exactly what the solver was given, warm-start impulses included.
///
/// ```
/// use bevy_app::prelude::*;
/// use bevy_canal::prelude::*;
/// use bevy_canal::solver::{Solution, Solver};
///
/// let mut app = App::new();
/// app.add_plugins((bevy_time::TimePlugin, CanalPhysicsPlugin));
/// app.init_resource::<CapturedProblems>();
/// app.world_mut().spawn((RigidBody::Static, Collider::cuboid(10.0, 1.0, 10.0), Transform::from_xyz(0.0, -0.5, 0.0)));
/// app.world_mut().spawn((RigidBody::Dynamic, Collider::cuboid(1.0, 1.0, 1.0), Transform::from_xyz(0.0, 0.5, 0.0)));
/// app.world_mut().run_schedule(PhysicsSchedule);
/// let captured = app.world_mut().resource_mut::<CapturedProblems>().islands.pop().unwrap();
/// let replayed = Solver::new(SolverSettings::default()).solve(&captured.problem, &mut Solution::default());
/// assert_eq!(replayed.newton_iterations, captured.report.newton_iterations);
/// ```
#[derive(Resource, Clone, Debug, Default)]
pub struct CapturedProblems {
    /// In step order, and by island within a step.
    pub islands: Vec<CapturedIsland>,
    /// Physics steps run since the resource was inserted.
    pub steps: usize,
}

/// One island's step as the solver saw it, with how it went.
#[derive(Clone, Debug)]
pub struct CapturedIsland {
    /// The step it was solved in, counted from 0 when the resource was inserted.
    pub step: usize,
    /// The problem, warm start included.
    pub problem: StepProblem,
    /// The solver's report.
    pub report: SolveReport,
}
