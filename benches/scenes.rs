//! The same scenes stepped by bevy_canal (through the plugin) and by Rapier 0.36 (its defaults,
//! sleeping off) in one process: a ten-box stack, the 20-row pyramid of `examples/pyramid.rs`,
//! 100 separate three-box stacks, the same 100 stacks of box-shaped convex hulls and upright
//! cylinders, and 125 spheres poured into a walled pen. 60 Hz throughout.
//!
//! `cargo bench --bench scenes` prints, before criterion's timings, one row per scene: bodies,
//! median ms per step of both engines and their ratio, CANAL's mean, the largest penetration
//! either engine's contacts report, how far the tracked top boxes sank and drifted sideways from
//! their resting spawn pose, both engines' worst residuals (design note §4; for Rapier only its
//! normal part, see [`Rapier::signorini_residual`]) and how many of CANAL's measured steps ended
//! above its tolerance. Rapier's
//! manifold `dist` goes stale under its default contact recycling, so its overlap is also recomputed
//! from the current poses (`rap. geom`). Then a time-to-accuracy sweep on the ten-box
//! stack, the pyramid and the sphere pen: CANAL's tolerance from 1 to 1e-10 m/s (the loosest
//! where Rapier's residuals lie) against Rapier's `num_solver_iterations` from 4 to 256, with
//! median and mean step times, plotted (step time against the worst residual reached) in
//! `target/bench/time_to_accuracy.svg`, with the figures in `time_to_accuracy.csv` beside it.
//! `cargo bench --bench scenes -- nomatch` prints only the tables;
//! `SCENES=pyramid,pen` keeps only the scenes whose names contain one of those words;
//! `SCENES=spheres1000` runs the 1000-sphere pen, left out by default (about 45 minutes).
//! `MEASURE=570` measures steps 30–600 instead of 30–150 (the pen: 60–630); `SETTLE=600` starts
//! measuring at step 600 (the pen's heap settled, `SCENES=pen SETTLE=600 MEASURE=600`).

use std::time::{Duration, Instant};

use bevy_app::prelude::*;
use bevy_canal::prelude::*;
use bevy_ecs::prelude::*;
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use rapier3d::prelude as rp;

mod accuracy_plot;
mod scene_set;
use accuracy_plot::{Point, Sweep};
use scene_set::{Scene, Shape, pyramid, scenes, selected, sphere_pen, stack};

/// What one engine needs to step a scene and read back the accuracy figures.
trait Engine {
    fn step(&mut self);
    /// Deepest penetration among the contacts the engine reports, m (0 if none penetrate), and,
    /// where that report can be stale, the deepest overlap of the reported pairs recomputed from
    /// the current poses.
    fn max_penetration(&self) -> (f32, Option<f32>);
    /// Positions of the tracked bodies.
    fn tracked(&self) -> Vec<Vec3>;
    /// The step's NCP residual, m/s, where the engine reports one.
    fn ncp_residual(&self) -> Option<f64>;
    /// Whether the step met the engine's own tolerance, where it has one.
    fn converged(&self) -> Option<bool>;
}

struct Canal {
    app: App,
    tracked: Vec<Entity>,
}

impl Canal {
    fn new(scene: &Scene, tolerance: Option<f64>) -> Self {
        let (app, tracked) = scene_set::canal_app(scene, tolerance);
        Self { app, tracked }
    }
}

impl Engine for Canal {
    fn step(&mut self) {
        self.app.world_mut().run_schedule(PhysicsSchedule);
    }
    fn max_penetration(&self) -> (f32, Option<f32>) {
        let contacts = self.app.world().resource::<Contacts>();
        let reported = contacts
            .pairs
            .iter()
            .flat_map(|pair| pair.points.iter())
            .map(|p| p.penetration)
            .fold(0.0, f32::max);
        (reported, None)
    }
    fn tracked(&self) -> Vec<Vec3> {
        self.tracked
            .iter()
            .map(|&e| self.app.world().get::<Transform>(e).unwrap().translation)
            .collect()
    }
    fn ncp_residual(&self) -> Option<f64> {
        let stats = self.app.world().resource::<SolverStats>();
        Some(stats.worst_residual())
    }
    fn converged(&self) -> Option<bool> {
        Some(self.app.world().resource::<SolverStats>().converged)
    }
}

struct Rapier {
    world: rp::PhysicsWorld,
    tracked: Vec<rp::RigidBodyHandle>,
    /// Collider poses and body centres of mass at the start of the last step: the residual is
    /// that of the step's problem, posed at its start.
    start_poses: std::collections::HashMap<rp::ColliderHandle, rp::Pose>,
    start_centers: std::collections::HashMap<rp::RigidBodyHandle, rp::Vector>,
}

impl Rapier {
    fn new(scene: &Scene, iterations: Option<usize>) -> Self {
        let mut world = rp::PhysicsWorld {
            integration_parameters: rp::IntegrationParameters {
                dt: 1.0 / 60.0,
                ..Default::default()
            },
            ..Default::default()
        };
        if let Some(iterations) = iterations {
            world.integration_parameters.num_solver_iterations = iterations;
        }
        let mut tracked = Vec::new();
        for body in &scene.bodies {
            let v = |p: Vec3| rp::Vector::new(p.x, p.y, p.z);
            let collider = match body.shape {
                Shape::Cuboid(half) => rp::ColliderBuilder::cuboid(half.x, half.y, half.z),
                Shape::Sphere(radius) => rp::ColliderBuilder::ball(radius),
                Shape::Hull(half) => {
                    let corners: Vec<_> = Shape::corners(half).into_iter().map(v).collect();
                    rp::ColliderBuilder::convex_hull(&corners).expect("a box's corners span a volume")
                }
                Shape::Cylinder(half_height, radius) => rp::ColliderBuilder::cylinder(half_height, radius),
            }
            .friction(0.5)
            .density(1.0);
            let builder = if body.dynamic {
                rp::RigidBodyBuilder::dynamic().can_sleep(false)
            } else {
                rp::RigidBodyBuilder::fixed()
            };
            let (handle, _) = world.insert(builder.translation(v(body.position)), collider);
            if body.tracked {
                tracked.push(handle);
            }
        }
        Self {
            world,
            tracked,
            start_poses: Default::default(),
            start_centers: Default::default(),
        }
    }

    /// The normal (Signorini) part of the design note's §4 residual over every manifold point,
    /// m/s: `|λ_n − max(0, λ_n − m w_n)| / m` and `max(0, −w_n)`, the worse of the two. `λ_n` is
    /// the point's total impulse over the step, `m` its effective normal mass, and
    /// `w_n = (v₂ − v₁)·n + e_n` its normal velocity at the end of the step plus CANAL's bias for
    /// the gap `g` at the step's start: `g/h` when open, `max(erp·g/h, −max push-out)` when
    /// penetrating, with CANAL's default settings. Friction is left out — Rapier's default
    /// friction is one manifold-level constraint plus a twist, not a cone per point — so this is a
    /// lower bound of the residual CANAL reports for itself.
    fn signorini_residual(&self) -> f64 {
        let dt = f64::from(self.world.integration_parameters.dt);
        let canal = SolverSettings::default();
        let mut worst = 0.0_f64;
        for pair in self.world.narrow_phase.contact_pairs() {
            let (Some(pose1), Some(pose2)) = (
                self.start_poses.get(&pair.collider1),
                self.start_poses.get(&pair.collider2),
            ) else {
                continue;
            };
            for manifold in pair.manifolds() {
                let bodies = [manifold.data.rigid_body1, manifold.data.rigid_body2]
                    .map(|h| h.map(|h| (&self.world.bodies[h], self.start_centers[&h])));
                let normal = pose1.rotation * manifold.local_n1;
                for point in &manifold.points {
                    let (p1, p2) = (pose1 * point.local_p1, pose2 * point.local_p2);
                    let gap = f64::from((p2 - p1).dot(normal));
                    let at = (p1 + p2) * 0.5;
                    let (mut velocity, mut inverse_mass) = ([rp::Vector::ZERO; 2], 0.0_f32);
                    for (k, side) in bodies.iter().enumerate() {
                        let Some((body, center)) = side else { continue };
                        let arm = at - *center;
                        velocity[k] = body.linvel() + body.angvel().cross(arm);
                        let props = body.mass_properties();
                        let rn = arm.cross(normal);
                        inverse_mass += props.effective_inv_mass.x + rn.dot(props.effective_world_inv_inertia * rn);
                    }
                    if inverse_mass <= 0.0 {
                        continue;
                    }
                    let mass = 1.0 / f64::from(inverse_mass);
                    // CANAL's velocity step biases only open gaps: penetration is pushed out by moving the
                    // bodies afterwards, so no push-out speed is owed here either. (Nor does it bias a
                    // loaded contact's gap under `resting_gap`; loads are not tracked here, so Rapier
                    // keeps every open gap's allowance and the residual stays a lower bound.)
                    let w = f64::from((velocity[1] - velocity[0]).dot(normal)) + canal.gap_bias(gap.max(0.0), dt);
                    let lambda = f64::from(point.data.impulse);
                    let ncp = (lambda - (lambda - mass * w).max(0.0)).abs() / mass;
                    worst = worst.max(ncp).max(-w);
                }
            }
        }
        worst
    }
}

impl Engine for Rapier {
    fn step(&mut self) {
        self.start_poses.clear();
        self.start_poses
            .extend(self.world.colliders.iter().map(|(h, c)| (h, *c.position())));
        self.start_centers.clear();
        self.start_centers
            .extend(self.world.bodies.iter().map(|(h, b)| (h, b.center_of_mass())));
        self.world.step();
    }
    fn max_penetration(&self) -> (f32, Option<f32>) {
        let pairs = || self.world.narrow_phase.contact_pairs();
        let reported = pairs()
            .flat_map(|pair| pair.manifolds().iter())
            .flat_map(|m| m.points.iter())
            .map(|p| -p.dist)
            .fold(0.0, f32::max);
        // With `contact_recycling` (a default) a pair whose relative pose drifted less than
        // `contact_recycle_distance` keeps its manifold points, `dist` included, from the last
        // full update: a stack sinking slowly keeps reporting the distance at spawn.
        let geometric = pairs()
            .filter_map(|pair| {
                let (c1, c2) = (
                    &self.world.colliders[pair.collider1],
                    &self.world.colliders[pair.collider2],
                );
                rapier3d::parry::query::contact(c1.position(), c1.shape(), c2.position(), c2.shape(), 0.0)
                    .ok()
                    .flatten()
            })
            .map(|c| -c.dist)
            .fold(0.0, f32::max);
        (reported, Some(geometric))
    }
    fn tracked(&self) -> Vec<Vec3> {
        self.tracked
            .iter()
            .map(|&h| {
                let t = self.world.bodies[h].translation();
                Vec3::new(t.x, t.y, t.z)
            })
            .collect()
    }
    fn ncp_residual(&self) -> Option<f64> {
        Some(self.signorini_residual())
    }
    fn converged(&self) -> Option<bool> {
        None
    }
}

/// What a run of `settle + measure` steps measured.
struct Run {
    median: Duration,
    /// Mean step time: where steps alternate between cheap and costly the median shows only one.
    mean: Duration,
    /// Largest penetration over the measured steps, m: reported, and recomputed (see
    /// [`Engine::max_penetration`]).
    penetration: f32,
    overlap: Option<f32>,
    /// Largest height loss and sideways drift of a tracked body at the end, m.
    sink: f32,
    drift: f32,
    /// Worst residual over the measured steps, m/s.
    ncp: Option<f64>,
    /// Measured steps that ended above the engine's tolerance.
    unconverged: usize,
}

fn run(engine: &mut dyn Engine, settle: usize, measure: usize) -> Run {
    let start = engine.tracked();
    for _ in 0..settle {
        engine.step();
    }
    let (mut times, mut penetration, mut overlap, mut ncp, mut unconverged) =
        (Vec::with_capacity(measure), 0.0_f32, None::<f32>, None::<f64>, 0);
    for _ in 0..measure {
        let t = Instant::now();
        engine.step();
        times.push(t.elapsed());
        let (reported, recomputed) = engine.max_penetration();
        penetration = penetration.max(reported);
        if let Some(d) = recomputed {
            overlap = Some(overlap.map_or(d, |o| o.max(d)));
        }
        if let Some(r) = engine.ncp_residual() {
            ncp = Some(ncp.map_or(r, |n| n.max(r)));
        }
        unconverged += usize::from(engine.converged() == Some(false));
    }
    times.sort();
    let end = engine.tracked();
    let (mut sink, mut drift) = (0.0_f32, 0.0_f32);
    for (a, b) in start.iter().zip(&end) {
        sink = sink.max(a.y - b.y);
        drift = drift.max(Vec3::new(b.x - a.x, 0.0, b.z - a.z).length());
    }
    Run {
        median: times[times.len() / 2],
        mean: times.iter().sum::<Duration>() / times.len() as u32,
        penetration,
        overlap,
        sink,
        drift,
        ncp,
        unconverged,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn summary() {
    println!(
        "\nbevy_canal (CANAL, tolerance 1e-8 m/s) against Rapier 0.36 (defaults, sleeping off), 60 Hz; \
         median over the measured steps after the settling ones; sink and drift of the top box(es) \
         at the end against the resting spawn pose"
    );
    println!(
        "{:<16} {:>6} {:>7} | {:>9} {:>9} {:>6} {:>9} | {:>9} {:>9} {:>9} | {:>9} {:>9} | {:>9} {:>9} | {:>9} {:>9} {:>9}",
        "scene",
        "bodies",
        "steps",
        "canal ms",
        "rapier ms",
        "ratio",
        "can. mean",
        "pen canal",
        "pen rap.",
        "rap. geom",
        "sink can.",
        "sink rap.",
        "drift can",
        "drift rap",
        "canal ncp",
        "rap. ncp",
        "can. fail"
    );
    for scene in scenes() {
        let bodies = scene.bodies.iter().filter(|b| b.dynamic).count();
        let canal = run(&mut Canal::new(&scene, None), scene.settle, scene.measure);
        let rapier = run(&mut Rapier::new(&scene, None), scene.settle, scene.measure);
        let tracked = scene.bodies.iter().any(|b| b.tracked);
        let opt = |x: f32| if tracked { format!("{x:.1e}") } else { "—".to_string() };
        println!(
            "{:<16} {:>6} {:>7} | {:>9.3} {:>9.3} {:>6.2} {:>9.3} | {:>9.1e} {:>9.1e} {:>9.1e} | {:>9} {:>9} | {:>9} {:>9} | {:>9.1e} {:>9.1e} {:>9}",
            scene.name,
            bodies,
            format!("{}+{}", scene.settle, scene.measure),
            ms(canal.median),
            ms(rapier.median),
            ms(canal.median) / ms(rapier.median),
            ms(canal.mean),
            canal.penetration,
            rapier.penetration,
            rapier.overlap.unwrap_or(f32::NAN),
            opt(canal.sink),
            opt(rapier.sink),
            opt(canal.drift),
            opt(rapier.drift),
            canal.ncp.unwrap_or(f64::NAN),
            rapier.ncp.unwrap_or(f64::NAN),
            format!("{}/{}", canal.unconverged, scene.measure),
        );
    }
}

fn sweep() {
    let sweeps: Vec<Sweep> = selected(vec![stack(10), pyramid(20), sphere_pen(5, 5)], Vec::new())
        .iter()
        .map(sweep_scene)
        .collect();
    if sweeps.is_empty() {
        return;
    }
    match accuracy_plot::write(&sweeps) {
        Ok(path) => println!("\nTime to accuracy plotted in {}", path.display()),
        Err(e) => println!("\nTime to accuracy not plotted: {e}"),
    }
}

/// The sweep's point for one run: its residual is the worst over the measured steps.
fn point(setting: String, r: &Run) -> Point {
    Point {
        setting,
        median_ms: ms(r.median),
        mean_ms: ms(r.mean),
        residual: r.ncp.unwrap_or(f64::NAN),
    }
}

fn sweep_scene(scene: &Scene) -> Sweep {
    let (settle, measure) = (scene.settle, scene.measure);
    let header = |first: &str| {
        println!(
            "{:>10} {:>9} {:>9} {:>10} {:>9} {:>9} {:>9}",
            first, "ms/step", "mean ms", "worst ncp", "pen m", "geom pen", "sink m"
        )
    };
    let row = |setting: String, r: &Run| {
        println!(
            "{:>10} {:>9.3} {:>9.3} {:>10} {:>9.1e} {:>9} {:>9.1e}",
            setting,
            ms(r.median),
            ms(r.mean),
            r.ncp.map_or("—".to_string(), |n| format!("{n:.1e}")),
            r.penetration,
            r.overlap.map_or("—".to_string(), |o| format!("{o:.1e}")),
            r.sink
        )
    };
    println!(
        "\nTime to accuracy, {}, {settle}+{measure} steps: CANAL by tolerance (m/s), its full residual",
        scene.name
    );
    header("tolerance");
    let mut canal = Vec::new();
    for exponent in [0, 1, 2, 4, 6, 8, 10] {
        let tolerance = 10f64.powi(-exponent);
        let r = run(&mut Canal::new(scene, Some(tolerance)), settle, measure);
        let setting = format!("{tolerance:.0e}");
        row(setting.clone(), &r);
        canal.push(point(setting, &r));
    }
    println!("Rapier by num_solver_iterations, the normal part of the same residual (a lower bound)");
    header("iterations");
    let mut rapier = Vec::new();
    for iterations in [4, 8, 16, 32, 64, 128, 256] {
        let r = run(&mut Rapier::new(scene, Some(iterations)), settle, measure);
        let setting = iterations.to_string();
        row(setting.clone(), &r);
        rapier.push(point(setting, &r));
    }
    Sweep {
        scene: scene.name,
        canal,
        rapier,
    }
}

/// One step of `engine`, built and settled on first use: a filter that skips the benchmark skips
/// the settling too.
fn bench_engine<E: Engine>(group: &mut BenchmarkGroup<WallTime>, name: &str, build: impl Fn() -> E, settle: usize) {
    let mut engine: Option<E> = None;
    group.bench_function(name, |b| {
        let engine = engine.get_or_insert_with(|| {
            let mut e = build();
            (0..settle).for_each(|_| e.step());
            e
        });
        b.iter(|| engine.step())
    });
}

fn bench(c: &mut Criterion) {
    summary();
    sweep();
    for scene in scenes() {
        let mut group = c.benchmark_group(format!("scenes/{}", scene.name));
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(2))
            .warm_up_time(Duration::from_millis(300));
        bench_engine(&mut group, "canal", || Canal::new(&scene, None), scene.settle);
        bench_engine(&mut group, "rapier", || Rapier::new(&scene, None), scene.settle);
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
