//! The CANAL solver alone on ready-made scenes: one cold solve, then ten warm-started ones, with
//! the statistics every solve reports.
//!
//! `cargo run --release --example solve_scenes`

use bevy_canal::solver::scenes;
use bevy_canal::solver::*;

fn main() {
    let dt = 1.0 / 60.0;
    let scenes = [
        ("box on the ground", scenes::resting_box(1.0, 0.5, dt)),
        ("stack of 10 boxes", scenes::box_stack(10, 1.0, 0.5, dt)),
        ("pyramid of 210 boxes", scenes::box_pyramid(20, 0.5, dt)),
        ("pile of 180 spheres", scenes::sphere_pile(6, 5, 6, 0.5, dt)),
    ];
    println!(
        "{:<22} {:>6} {:>8} {:>6} {:>6} {:>6} {:>9} {:>9} {:>9} {:>7} {:>9}",
        "scene",
        "bodies",
        "contacts",
        "start",
        "outer",
        "newton",
        "ncp m/s",
        "feas m/s",
        "dyn m/s",
        "solver",
        "time ms"
    );
    for (name, problem) in scenes {
        let mut solver = Solver::new(SolverSettings::default());
        let mut cache = WarmStartCache::default();
        let mut solution = Solution::default();
        let mut problem = problem;
        for step in 0..11 {
            cache.apply(&mut problem.contacts);
            let report = solver.solve(&problem, &mut solution);
            cache.record(&problem.contacts, &solution);
            cache.finish_step();
            if step <= 1 || step == 10 {
                println!(
                    "{:<22} {:>6} {:>8} {:>6} {:>6} {:>6} {:>9.1e} {:>9.1e} {:>9.1e} {:>7} {:>9.3}{}",
                    name,
                    problem.bodies.len(),
                    problem.contacts.len(),
                    if step == 0 {
                        "cold".to_string()
                    } else {
                        format!("warm{step}")
                    },
                    report.outer_iterations,
                    report.newton_iterations,
                    report.ncp_residual,
                    report.feasibility_residual,
                    report.dynamics_residual,
                    format!("{:?}", report.linear_solver),
                    report.time.as_secs_f64() * 1e3,
                    if report.converged { "" } else { "  not converged" },
                );
            }
        }
        // The ground carries the whole weight: its contacts' impulses add up to m·g·dt.
        let ground = scenes::ground_impulse(&problem, &solution);
        let weight = scenes::weight_impulse(&problem);
        println!(
            "{:<22} ground impulse {ground:.12} N·s, weight × dt {weight:.12} N·s\n",
            ""
        );
    }
}
