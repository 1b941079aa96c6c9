//! The analytic validation suite: scenes with a known answer, each measured through the plugin (or
//! the solver alone, for convergence) and turned into [`Check`]s — name, measured, expected,
//! tolerance, pass. Shared by `examples/validate` (the full report) and `tests/validate_subset.rs`
//! (a fast subset); the including crate provides the headless-app helpers as `crate::app`.
#![allow(dead_code)] // the test uses a subset

use bevy_app::App;
use bevy_canal::prelude::*;
use bevy_canal::solver::{Solution, Solver, scenes};
use bevy_ecs::entity::Entity;
use bevy_math::{DMat3, DVec3};

use crate::app::*;

/// How close a measurement must come to its expected value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    /// `|measured − expected| ≤ tol`, in the check's unit.
    Absolute(f64),
    /// `|measured − expected| ≤ tol · |expected|`.
    Relative(f64),
    /// `|measured − expected| ≤ rel · |expected| + abs`.
    Mixed { rel: f64, abs: f64 },
    /// `measured ≤ expected` (expected is a bound).
    AtMost,
    /// `measured ≥ expected` (expected is a bound).
    AtLeast,
}

/// A number as the report prints it: plain for moderate magnitudes, scientific otherwise.
pub fn number(x: f64) -> String {
    if x == 0.0 || (1e-3..1e5).contains(&x.abs()) {
        let plain = format!("{x:.6}");
        plain.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{x:.3e}")
    }
}

impl Tolerance {
    fn admits(self, measured: f64, expected: f64) -> bool {
        let error = (measured - expected).abs();
        match self {
            Self::Absolute(tol) => error <= tol,
            Self::Relative(rel) => error <= rel * expected.abs(),
            Self::Mixed { rel, abs } => error <= rel * expected.abs() + abs,
            Self::AtMost => measured <= expected,
            Self::AtLeast => measured >= expected,
        }
    }

    /// The tolerance as the report prints it.
    pub fn describe(self, unit: &str) -> String {
        match self {
            Self::Absolute(0.0) => "exact".to_string(),
            Self::Absolute(tol) => format!("± {} {unit}", number(tol)).trim_end().to_string(),
            Self::Relative(rel) => format!("± {}%", number(rel * 100.0)),
            Self::Mixed { rel, abs } => format!("± ({}% + {} {unit})", number(rel * 100.0), number(abs)),
            Self::AtMost => "at most".to_string(),
            Self::AtLeast => "at least".to_string(),
        }
    }
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub name: String,
    pub measured: f64,
    pub expected: f64,
    pub unit: &'static str,
    pub tolerance: Tolerance,
    pub pass: bool,
}

impl Check {
    pub fn new(
        name: impl Into<String>,
        measured: f64,
        expected: f64,
        unit: &'static str,
        tolerance: Tolerance,
    ) -> Self {
        Self {
            name: name.into(),
            measured,
            expected,
            unit,
            tolerance,
            pass: measured.is_finite() && tolerance.admits(measured, expected),
        }
    }
}

/// Free fall with an initial velocity: the semi-implicit Euler closed form
/// `x_n = x₀ + n h v₀ + g h² n(n+1)/2`, which differs from the continuous `x₀ + v₀ t + g t²/2` by
/// exactly the integrator's O(h) error `g h t/2`.
pub fn free_fall() -> Vec<Check> {
    let mut app = app(60.0);
    let h = dt(&app);
    let (x0, v0) = (DVec3::new(0.0, 10.0, 0.0), DVec3::new(1.0, 2.0, -0.5));
    let body = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::sphere(0.25),
            Transform::from_translation(x0.as_vec3()),
            LinearVelocity(v0.as_vec3()),
        ))
        .id();
    let n = 90;
    step(&mut app, n);
    let g = Gravity::default().0.as_dvec3();
    let (nf, t) = (n as f64, n as f64 * h);
    let discrete = x0 + v0 * t + g * (h * h * nf * (nf + 1.0) / 2.0);
    let continuous = x0 + v0 * t + g * (t * t / 2.0);
    let state = precise(&app, body);
    vec![
        Check::new(
            "free fall 1.5 s: position against the discrete closed form",
            (state.translation - discrete).length(),
            0.0,
            "m",
            Tolerance::Absolute(1e-12),
        ),
        Check::new(
            "free fall 1.5 s: velocity against v₀ + g t",
            (state.linear_velocity - (v0 + g * t)).length(),
            0.0,
            "m/s",
            Tolerance::Absolute(1e-12),
        ),
        Check::new(
            "free fall 1.5 s: position error against the continuous curve is g h t/2",
            (state.translation - continuous).length(),
            -g.y * h * t / 2.0,
            "m",
            Tolerance::Absolute(1e-9),
        ),
    ]
}

/// A dynamic unit cube with friction `mu` at `pose`, moving at `velocity`.
fn unit_box(app: &mut App, mu: f64, pose: Transform, velocity: Vec3) -> Entity {
    let cube = (
        RigidBody::Dynamic,
        Collider::cuboid(1.0, 1.0, 1.0),
        Friction::new(mu as f32),
    );
    app.world_mut().spawn((cube, pose, LinearVelocity(velocity))).id()
}

/// A box released at rest on a slope.
#[derive(Clone, Debug, PartialEq)]
pub struct SlopeRun {
    pub degrees: f64,
    pub mu: f64,
    /// The slope angle the `f32` rotation really has, rad.
    pub theta: f64,
    /// Displacement along the slope (downhill positive) after each step, with its time.
    pub trajectory: Vec<(f64, f64)>,
    pub dt: f64,
}

impl SlopeRun {
    /// Displacement at the end, m.
    pub fn displacement(&self) -> f64 {
        self.trajectory.last().map_or(0.0, |&(_, s)| s)
    }

    /// The exact Coulomb acceleration `g (sin θ − μ cos θ)`, or 0 where the box sticks, m/s².
    pub fn exact_acceleration(&self) -> f64 {
        (G * (self.theta.sin() - self.mu * self.theta.cos())).max(0.0)
    }

    /// The acceleration the end displacement implies under semi-implicit Euler from rest,
    /// `s_n = a h² n(n+1)/2`, m/s².
    pub fn measured_acceleration(&self) -> f64 {
        let n = self.trajectory.len() as f64;
        2.0 * self.displacement() / (self.dt * self.dt * n * (n + 1.0))
    }

    /// `s_k = a h² k(k+1)/2`, the discrete analytic curve.
    pub fn analytic(&self, k: usize) -> f64 {
        let k = k as f64;
        self.exact_acceleration() * self.dt * self.dt * k * (k + 1.0) / 2.0
    }

    /// Angular distance from the friction angle atan μ, degrees.
    pub fn margin_degrees(&self) -> f64 {
        (self.theta - self.mu.atan()).to_degrees()
    }
}

/// A unit box on a slope of `degrees` with μ = `mu` on both surfaces, released at rest and stepped
/// for `seconds` at 60 Hz.
pub fn slope(degrees: f64, mu: f64, seconds: f64) -> SlopeRun {
    let mut app = app(60.0);
    let rotation = Quat::from_rotation_z(degrees.to_radians() as f32);
    let down = (rotation * Vec3::NEG_X).as_dvec3();
    let up = (rotation * Vec3::Y).as_dvec3();
    app.world_mut().spawn((
        RigidBody::Static,
        Collider::cuboid(60.0, 1.0, 10.0),
        Friction::new(mu as f32),
        Transform::from_translation((up * -0.5).as_vec3()).with_rotation(rotation),
    ));
    let start = up * 0.5;
    let pose = Transform::from_translation(start.as_vec3()).with_rotation(rotation);
    let cube = unit_box(&mut app, mu, pose, Vec3::ZERO);
    let h = dt(&app);
    let steps = (seconds * 60.0).round() as usize;
    let trajectory = (1..=steps)
        .map(|k| {
            step(&mut app, 1);
            (k as f64 * h, (precise(&app, cube).translation - start).dot(down))
        })
        .collect();
    let r = rotation.as_dquat();
    SlopeRun {
        degrees,
        mu,
        theta: 2.0 * r.z.atan2(r.w),
        trajectory,
        dt: h,
    }
}

/// A box slides iff it moved more than this along the slope over the run, m. Away from the
/// boundary a sliding box moves ≥ 8 cm in 1 s and a sticking one < 1e-6 m.
pub const SLIDE_THRESHOLD: f64 = 1e-4;
/// Grid points closer than this to the friction angle are not classified: their acceleration
/// check alone decides, degrees.
pub const BOUNDARY_BAND: f64 = 1.0;
/// Acceleration tolerance on the slope map: 0.5% of the exact value plus this, m/s².
pub const SLOPE_ACCEL_ABS: f64 = 1e-5;

/// The stick/slide map over `degrees × mus`, one run of `seconds` per point, and its checks: per
/// point the measured acceleration against `g (sin θ − μ cos θ)⁺`, and the stick/slide class
/// against `tan θ > μ` for points outside the boundary band.
pub fn slope_map(degrees: &[f64], mus: &[f64], seconds: f64) -> (Vec<SlopeRun>, Vec<Check>) {
    let runs: Vec<SlopeRun> = degrees
        .iter()
        .flat_map(|&d| mus.iter().map(move |&mu| slope(d, mu, seconds)))
        .collect();
    let mut checks: Vec<Check> = runs
        .iter()
        .map(|run| {
            Check::new(
                format!("slope {}°, μ = {:.1}: acceleration", run.degrees, run.mu),
                run.measured_acceleration(),
                run.exact_acceleration(),
                "m/s²",
                Tolerance::Mixed {
                    rel: 0.005,
                    abs: SLOPE_ACCEL_ABS,
                },
            )
        })
        .collect();
    let classified: Vec<_> = runs
        .iter()
        .filter(|r| r.margin_degrees().abs() >= BOUNDARY_BAND)
        .collect();
    let agree = classified
        .iter()
        .filter(|r| (r.displacement() > SLIDE_THRESHOLD) == (r.theta.tan() > r.mu))
        .count();
    checks.push(Check::new(
        format!(
            "slope map: stick/slide agrees with tan θ = μ ({} points ≥ {BOUNDARY_BAND}° from it)",
            classified.len()
        ),
        agree as f64,
        classified.len() as f64,
        "points",
        Tolerance::Absolute(0.0),
    ));
    let worst_creep = runs
        .iter()
        .filter(|r| r.margin_degrees() <= -BOUNDARY_BAND)
        .map(|r| r.displacement().abs())
        .fold(0.0, f64::max);
    checks.push(Check::new(
        "slope map: largest creep of a sticking box",
        worst_creep,
        1e-6,
        "m",
        Tolerance::AtMost,
    ));
    (runs, checks)
}

/// A unit box launched at `v0` along the ground with μ = `mu`: it stops after the discrete
/// distance `h Σ_k max(0, v₀ − k μ g h)`, which is `v₀²/(2μg) − v₀h/2 + O(h²)`: against the
/// continuous answer the tolerance is one step's travel at the launch speed, `v₀h`.
pub fn stop_distance(v0: f64, mu: f64) -> Vec<Check> {
    let mut app = app(60.0);
    ground(&mut app, 100.0, mu as f32);
    let x0 = -40.0;
    let pose = Transform::from_xyz(x0 as f32, 0.5, 0.0);
    let cube = unit_box(&mut app, mu, pose, Vec3::new(v0 as f32, 0.0, 0.0));
    let h = dt(&app);
    let stop_steps = v0 / (mu * G * h);
    step(&mut app, stop_steps.ceil() as usize + 30);
    let state = precise(&app, cube);
    let distance = state.translation.x - x0;
    let v0 = v0 as f32 as f64;
    let discrete = discrete_stop_distance(v0, mu * G, h);
    let continuous = v0 * v0 / (2.0 * mu * G);
    vec![
        Check::new(
            format!("slide from {v0} m/s, μ = {mu}: stop distance against v₀²/(2μg)"),
            distance,
            continuous,
            "m",
            Tolerance::Absolute(v0 * h),
        ),
        Check::new(
            format!("slide from {v0} m/s, μ = {mu}: stop distance against the discrete sum"),
            distance,
            discrete,
            "m",
            Tolerance::Relative(1e-4),
        ),
        Check::new(
            format!("slide from {v0} m/s, μ = {mu}: speed after stopping"),
            state.linear_velocity.length(),
            1e-6,
            "m/s",
            Tolerance::AtMost,
        ),
    ]
}

/// A solid ball of radius 0.1 m rolling from `v0` m/s on ground, both with rolling friction
/// `mu_r` m: the resisting torque `μ_r m g` slows it at `(5/7) g μ_r / r` until it stops, after
/// `7 r v₀² / (10 μ_r g)`. Every step must meet the solver's tolerance under the bounds its own
/// normal impulses give.
pub fn rolling_stop_distance(v0: f64, mu_r: f64) -> Vec<Check> {
    let radius = 0.1;
    let mut app = app(60.0);
    let ground = ground(&mut app, 100.0, 0.5);
    let resistance = RollingFriction::new(mu_r as f32, 0.0);
    app.world_mut().entity_mut(ground).insert(resistance);
    let x0 = -40.0;
    let ball = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::sphere(radius as f32),
            resistance,
            Transform::from_xyz(x0 as f32, radius as f32, 0.0),
            LinearVelocity(Vec3::new(v0 as f32, 0.0, 0.0)),
            AngularVelocity(Vec3::new(0.0, 0.0, -(v0 / radius) as f32)),
        ))
        .id();
    let h = dt(&app);
    let a = 5.0 / 7.0 * G * mu_r as f32 as f64 / radius;
    let mut worst = 0.0_f64;
    for _ in 0..(v0 / (a * h)).ceil() as usize + 30 {
        step(&mut app, 1);
        worst = worst.max(app.world().resource::<SolverStats>().worst_residual());
    }
    let state = precise(&app, ball);
    let distance = state.translation.x - x0;
    let name = |what: &str| format!("ball rolling from {v0} m/s, μ_r = {mu_r} m: {what}");
    vec![
        Check::new(
            name("stop distance against 7 r v₀²/(10 μ_r g)"),
            distance,
            v0 * v0 / (2.0 * a),
            "m",
            Tolerance::Absolute(v0 * h),
        ),
        Check::new(
            name("stop distance against the discrete sum"),
            distance,
            discrete_stop_distance(v0, a, h),
            "m",
            Tolerance::Relative(1e-4),
        ),
        Check::new(
            name("speed after stopping"),
            state.linear_velocity.length(),
            1e-6,
            "m/s",
            Tolerance::AtMost,
        ),
        Check::new(
            name("worst residual of its steps"),
            worst,
            SolverSettings::default().tolerance,
            "m/s",
            Tolerance::AtMost,
        ),
    ]
}

/// A ball of restitution `e` dropped from `h0` m onto ground of the same restitution at `hz`:
/// the first rebound peaks at `e² h₀`.
pub fn bounce(e: f64, h0: f64, hz: f64) -> Check {
    let peak = first_rebound(e, h0, hz).unwrap_or(0.0);
    Check::new(
        format!("ball e = {e} dropped from {h0} m ({hz} Hz): rebound height against e²h₀"),
        peak,
        e * e * h0,
        "m",
        Tolerance::Relative(0.02),
    )
}

/// A 1 × 2 × 1 box of density 3 (6 kg) resting on the ground: its contact normal impulses add up
/// to its weight times the step, and their moments about its centre of mass cancel.
pub fn resting_impulses() -> Vec<Check> {
    let mut app = app(60.0);
    ground(&mut app, 10.0, 0.5);
    let mass = 6.0;
    let cube = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(1.0, 2.0, 1.0),
            ColliderDensity(3.0),
            Transform::from_xyz(0.0, 1.0, 0.0),
        ))
        .id();
    step(&mut app, 30);
    let weight_impulse = mass * G * dt(&app);
    let center = precise(&app, cube).translation;
    let contacts = app.world().resource::<Contacts>();
    let (mut total, mut moment, mut points, mut smallest) = (0.0, DVec3::ZERO, 0, f64::INFINITY);
    for pair in contacts.of(cube) {
        let sign = if pair.entity1 == cube { 1.0 } else { -1.0 };
        for p in &pair.points {
            let impulse = p.normal.as_dvec3() * (sign * p.normal_impulse as f64);
            total += impulse.y;
            moment += (p.point.as_dvec3() - center).cross(impulse);
            smallest = smallest.min(p.normal_impulse as f64);
            points += 1;
        }
    }
    vec![
        Check::new(
            "resting 6 kg box: contact points",
            points as f64,
            4.0,
            "points",
            Tolerance::Absolute(0.0),
        ),
        Check::new(
            "resting 6 kg box: Σ normal impulses against m g h",
            total,
            weight_impulse,
            "N·s",
            Tolerance::Relative(1e-5),
        ),
        Check::new(
            "resting 6 kg box: moment of the normal impulses about the centre of mass",
            moment.length(),
            0.0,
            "N·m·s",
            Tolerance::Absolute(1e-5 * weight_impulse),
        ),
        Check::new(
            "resting 6 kg box: smallest normal impulse",
            smallest,
            0.0,
            "N·s",
            Tolerance::AtLeast,
        ),
    ]
}

/// The convergence history of one cold solve.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Convergence {
    pub bodies: usize,
    pub contacts: usize,
    pub tolerance: f64,
    /// Per Newton iterate, in order: its outer iteration and `‖A⁻¹ ∇Φ‖∞`, m/s. Each outer
    /// iteration's last entry is the surrogate's minimiser, where the outer residuals are taken.
    pub newton: Vec<(u32, f64)>,
    /// Per outer iteration: the index in `newton` of its last iterate, the NCP and feasibility
    /// residuals there (m/s), and its Newton steps.
    pub outer: Vec<(usize, f64, f64, usize)>,
    pub converged: bool,
    pub ncp_residual: f64,
}

impl Convergence {
    /// The outer iterations of the second half of the solve: the local phase.
    fn local_phase(&self) -> &[(usize, f64, f64, usize)] {
        &self.outer[self.outer.len() / 2..]
    }

    /// Mean Newton steps per outer iteration of the local phase. The mean, not the most: the
    /// outer iteration after a shift Newton step starts from multipliers that step moved, and
    /// its surrogate took 6 steps where the others took 1–4.
    pub fn local_newton_steps(&self) -> f64 {
        let phase = self.local_phase();
        phase.iter().map(|o| o.3 as f64).sum::<f64>() / phase.len().max(1) as f64
    }

    /// The NCP residual's mean contraction per outer iteration over the local phase (geometric).
    pub fn local_outer_rate(&self) -> f64 {
        let phase = self.local_phase();
        match (phase.first(), phase.last()) {
            (Some(first), Some(last)) if phase.len() > 1 && first.1 > 0.0 => {
                (last.1.max(f64::MIN_POSITIVE) / first.1).powf(1.0 / (phase.len() - 1) as f64)
            }
            _ => 0.0,
        }
    }
}

/// A cold solve of the 2-D box pyramid of `layers` rows (μ = 0.5, 60 Hz) by the solver alone,
/// with its trace, and its checks: the tolerance is reached, in few outer iterations, and in the
/// local phase (the second half of the outer iterations) each surrogate is minimised in a few
/// Newton steps while the residual falls geometrically.
pub fn pyramid_convergence(layers: usize, tolerance: f64) -> (Convergence, Vec<Check>) {
    let problem = scenes::box_pyramid(layers, 0.5, 1.0 / 60.0);
    let mut solver = Solver::new(SolverSettings {
        tolerance,
        record_trace: true,
        ..Default::default()
    });
    let mut solution = Solution::default();
    let report = solver.solve(&problem, &mut solution);
    let newton: Vec<(u32, f64)> = solver.newton_trace().iter().map(|t| (t.outer, t.gradient)).collect();
    let outer = solver
        .outer_trace()
        .iter()
        .enumerate()
        .map(|(l, t)| {
            let steps = newton.iter().filter(|n| n.0 as usize == l).count().saturating_sub(1);
            let last = newton.iter().rposition(|n| n.0 as usize == l).unwrap_or(0);
            (last, t.ncp_residual, t.feasibility_residual, steps)
        })
        .collect();
    let data = Convergence {
        bodies: problem.bodies.len(),
        contacts: problem.contacts.len(),
        tolerance,
        newton,
        outer,
        converged: report.converged,
        ncp_residual: report.worst_residual(),
    };
    let name = format!("pyramid of {} boxes, cold solve", data.bodies);
    let checks = vec![
        Check::new(
            format!("{name}: NCP and feasibility residual"),
            data.ncp_residual,
            tolerance,
            "m/s",
            Tolerance::AtMost,
        ),
        Check::new(
            format!("{name}: outer iterations"),
            report.outer_iterations as f64,
            20.0,
            "",
            Tolerance::AtMost,
        ),
        Check::new(
            format!("{name}: mean Newton steps per outer iteration, second half"),
            data.local_newton_steps(),
            4.0,
            "",
            Tolerance::AtMost,
        ),
        Check::new(
            format!("{name}: NCP residual's mean contraction per outer iteration, second half"),
            data.local_outer_rate(),
            0.3,
            "",
            Tolerance::AtMost,
        ),
    ];
    (data, checks)
}

/// The trajectory check: a box sliding down 30° with μ = 0.3 for 2 s, every step's displacement
/// against the discrete analytic curve.
pub fn trajectory() -> (SlopeRun, Vec<Check>) {
    let run = slope(30.0, 0.3, 2.0);
    let worst = run
        .trajectory
        .iter()
        .enumerate()
        .map(|(k, &(_, s))| (s - run.analytic(k + 1)).abs() / run.analytic(k + 1))
        .fold(0.0, f64::max);
    let check = Check::new(
        "slide down 30°, μ = 0.3, 2 s: worst relative error of s(t) against a h² k(k+1)/2",
        worst,
        0.005,
        "",
        Tolerance::AtMost,
    );
    (run, vec![check])
}

/// A 0.1 × 0.4 × 0.8 m box of unit density, weightless, turning at `spin` (world frame), and its
/// inertia about its centre in its own frame.
fn weightless_box(spin: DVec3, turn: Quat) -> (App, Entity, DMat3) {
    let mut app = app(60.0);
    app.insert_resource(Gravity(Vec3::ZERO));
    let size = DVec3::new(0.1, 0.4, 0.8);
    let body = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(size.x as f32, size.y as f32, size.z as f32),
            Transform::from_rotation(turn),
            AngularVelocity(spin.as_vec3()),
        ))
        .id();
    let squares = size * size;
    let inertia = DMat3::from_diagonal(
        DVec3::new(squares.y + squares.z, squares.x + squares.z, squares.x + squares.y)
            * (size.element_product() / 12.0),
    );
    (app, body, inertia)
}

/// A body's angular velocity in its own frame.
fn own_spin(app: &App, body: Entity) -> DVec3 {
    let state = precise(app, body);
    state.rotation.inverse() * state.angular_velocity
}

/// A weightless box tumbling off its principal axes, at (1, 2, 3) rad/s, for `seconds`: its
/// angular momentum and kinetic energy are conserved. The implicit midpoint rule keeps the
/// energy and |L| exactly; L's direction wanders by the step's O(dt) error, and stays bounded.
pub fn tumbling_box(seconds: usize) -> Vec<Check> {
    let (mut app, body, inertia) = weightless_box(DVec3::new(1.0, 2.0, 3.0), Quat::from_rotation_x(0.3));
    let momentum = |app: &App| {
        let w = own_spin(app, body);
        (precise(app, body).rotation * (inertia * w), 0.5 * w.dot(inertia * w))
    };
    step(&mut app, 1);
    let (l0, e0) = momentum(&app);
    let (mut size, mut direction, mut energy) = (0.0_f64, 0.0_f64, 0.0_f64);
    for _ in 0..seconds * 60 {
        step(&mut app, 1);
        let (l, e) = momentum(&app);
        size = size.max((l.length() / l0.length() - 1.0).abs());
        direction = direction.max(l.angle_between(l0));
        energy = energy.max((e / e0 - 1.0).abs());
    }
    let name = |what: &str| format!("box tumbling weightless at (1, 2, 3) rad/s, {seconds} s: {what}");
    vec![
        Check::new(
            name("size of its angular momentum off its start, relative"),
            size,
            1e-6,
            "",
            Tolerance::AtMost,
        ),
        Check::new(
            name("kinetic energy off its start, relative"),
            energy,
            1e-6,
            "",
            Tolerance::AtMost,
        ),
        Check::new(
            name("its angular momentum turned from its start"),
            direction,
            0.05,
            "rad",
            Tolerance::AtMost,
        ),
    ]
}

/// The tennis-racket theorem: the same box spun at 5 rad/s about its intermediate axis, nudged
/// by 0.01 rad/s about its major axis, flips within 5 s (its own spin about that axis reaches
/// −5 rad/s); spun about its major axis, nudged about the intermediate one, it holds.
pub fn tennis_racket() -> Vec<Check> {
    let least_spin_about = |axis: DVec3, nudge: DVec3| {
        let (mut app, body, _) = weightless_box(axis * 5.0 + nudge * 0.01, Quat::IDENTITY);
        (0..300)
            .map(|_| {
                step(&mut app, 1);
                own_spin(&app, body).dot(axis)
            })
            .fold(f64::INFINITY, f64::min)
    };
    vec![
        Check::new(
            "box spun at 5 rad/s about its intermediate axis, 5 s: least own spin about it (it flips)",
            least_spin_about(DVec3::Y, DVec3::X),
            -5.0,
            "rad/s",
            Tolerance::Absolute(0.1),
        ),
        Check::new(
            "box spun at 5 rad/s about its major axis, 5 s: least own spin about it (it holds)",
            least_spin_about(DVec3::X, DVec3::Y),
            5.0,
            "rad/s",
            Tolerance::Absolute(0.01),
        ),
    ]
}

/// A disc of radius 0.2 m spun at 40 rad/s about its axle, held level at a pivot 0.1 m from its
/// centre and set turning at the steady precession rate `m g d / (I₃ ω₃)` (exact for a level
/// axle): how far its axle has turned about the vertical after 2 s at `hz`, that rate times 2 s,
/// and the most its axle's tip dipped.
fn level_top(hz: f64) -> (f64, f64, f64) {
    let (radius, thickness, reach, spin) = (0.2_f64, 0.04_f64, 0.1_f64, 40.0_f64);
    let precession = G * reach / (0.5 * radius * radius * spin);
    let mut app = app(hz);
    let pivot = app.world_mut().spawn((RigidBody::Static, Transform::default())).id();
    let level = Quat::from_rotation_z(-std::f32::consts::FRAC_PI_2);
    let top = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cylinder(radius as f32, thickness as f32),
            ColliderDensity(1000.0),
            Transform::from_xyz(reach as f32, 0.0, 0.0).with_rotation(level),
            AngularVelocity(Vec3::new(spin as f32, precession as f32, 0.0)),
            LinearVelocity(Vec3::new(0.0, 0.0, -(precession * reach) as f32)),
        ))
        .id();
    app.world_mut()
        .spawn(SphericalJoint::new(pivot, top).with_local_anchor2(Vec3::new(0.0, -reach as f32, 0.0)));
    let steps = (2.0 * hz) as usize;
    let mut dip = 0.0_f64;
    for _ in 0..steps {
        step(&mut app, 1);
        dip = dip.max(-(precise(&app, top).rotation * DVec3::Y).y);
    }
    let axle = precise(&app, top).rotation * DVec3::Y;
    ((-axle.z).atan2(axle.x), precession * steps as f64 * dt(&app), dip)
}

/// The level top at 240 and 960 Hz: the angle it precesses through in 2 s against
/// `m g d t / (I₃ ω₃)`, and its axle's dip, which is semi-implicit Euler's first-order error on
/// the fast spin and shrinks with the step.
pub fn level_top_precession() -> Vec<Check> {
    let ((turned_240, expected, dip_240), (turned_960, _, dip_960)) = (level_top(240.0), level_top(960.0));
    vec![
        Check::new(
            "disc spun at 40 rad/s, axle level on a pivot 0.1 m off, 2 s at 240 Hz: precession against m g d t / (I₃ ω₃)",
            turned_240,
            expected,
            "rad",
            Tolerance::Relative(1e-2),
        ),
        Check::new(
            "the same at 960 Hz",
            turned_960,
            expected,
            "rad",
            Tolerance::Relative(2e-3),
        ),
        Check::new(
            "the same: the axle's dip at 960 Hz over its dip at 240 Hz (first order: 1/4)",
            dip_960 / dip_240,
            0.3,
            "",
            Tolerance::AtMost,
        ),
    ]
}
