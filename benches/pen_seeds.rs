//! Poured sphere pens over many starts: how often the solver misses its tolerance, on average.
//!
//! One pen's trajectory is chaotic, so any change to the solver sends its balls elsewhere and
//! single runs of a dozen pens spread by a factor of two either way (`docs/sphere-pen.md`). This
//! benchmark steps each pen of `PENS` (default `5x5,6x4,4x8,5x6`: a side × layers grid of balls,
//! as `scene_set::sphere_pen`) from each start of `SEEDS` (default `1,2,3,4,5,6`: every ball
//! moved sideways by up to ±1 cm with that seed) through the plugin with the default settings, and
//! prints per trajectory, over steps `FROM`..`STEPS` (default 60..240): the steps not converged,
//! those above 100× the tolerance (1e-6 m/s), the worst residual, the Newton iterations and the
//! mean step time; then the sums. Counts are deterministic; times are not. The defaults take
//! 35–45 minutes on two cores (their measured steps alone 30–42 minutes in the runs of
//! 4 December 2026).
//!
//! `cargo bench --bench pen_seeds`

use bevy_canal::prelude::*;

mod scene_set;

fn env<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Moves every dynamic body of `scene` sideways by up to ±1 cm in x and z, drawn with `seed`.
fn jittered(mut scene: scene_set::Scene, seed: u32) -> scene_set::Scene {
    let mut state = seed.wrapping_mul(2_654_435_761).wrapping_add(12345);
    let mut jitter = || {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (state >> 8) as f32 / (1 << 24) as f32 * 0.02 - 0.01
    };
    for body in scene.bodies.iter_mut().filter(|b| b.dynamic) {
        body.position.x += jitter();
        body.position.z += jitter();
    }
    scene
}

#[derive(Default)]
struct Tally {
    unconverged: usize,
    above: usize,
    worst: f64,
    newton: u64,
    seconds: f64,
}

fn main() {
    let pens: String = env("PENS", "5x5,6x4,4x8,5x6".to_string());
    let seeds: String = env("SEEDS", "1,2,3,4,5,6".to_string());
    let (from, steps): (usize, usize) = (env("FROM", 60), env("STEPS", 240));
    let mut all = Tally::default();
    for pen in pens.split(',') {
        let Some((side, layers)) = pen
            .split_once('x')
            .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        else {
            eprintln!("PENS: `{pen}` is not side x layers");
            continue;
        };
        for seed in seeds.split(',').filter_map(|s| s.parse().ok()) {
            let (mut app, _) = scene_set::canal_app(&jittered(scene_set::sphere_pen(side, layers), seed), None);
            let tolerance = app.world().resource::<PhysicsSettings>().solver.tolerance;
            let mut tally = Tally::default();
            for step in 0..steps {
                let start = std::time::Instant::now();
                app.world_mut().run_schedule(PhysicsSchedule);
                if step < from {
                    continue;
                }
                tally.seconds += start.elapsed().as_secs_f64();
                let stats = app.world().resource::<SolverStats>();
                let residual = stats.ncp_residual.max(stats.feasibility_residual);
                tally.unconverged += usize::from(!stats.converged);
                tally.above += usize::from(residual > 100.0 * tolerance);
                tally.worst = tally.worst.max(residual);
                tally.newton += u64::from(stats.newton_iterations);
            }
            let measured = steps.saturating_sub(from).max(1) as f64;
            println!(
                "pen {pen} seed {seed}: unconverged {}, above 1e-6 m/s {}, worst {:.1e} m/s, Newton {}, {:.1} ms a step",
                tally.unconverged,
                tally.above,
                tally.worst,
                tally.newton,
                tally.seconds * 1e3 / measured
            );
            all.unconverged += tally.unconverged;
            all.above += tally.above;
            all.worst = all.worst.max(tally.worst);
            all.newton += tally.newton;
        }
    }
    println!(
        "all: unconverged {}, above 1e-6 m/s {}, worst {:.1e} m/s, Newton {}",
        all.unconverged, all.above, all.worst, all.newton
    );
}
