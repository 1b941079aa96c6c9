//! A fast subset of the analytic validation suite of `examples/validate` (issue 4): the same
//! scenes and tolerances, fewer grid points.

mod app;
#[path = "../examples/validate/suite.rs"]
mod suite;

use suite::Check;

fn assert_all_pass(checks: &[Check]) {
    for c in checks {
        println!(
            "{}: measured {:e}, expected {:e}, tolerance {}: {}",
            c.name,
            c.measured,
            c.expected,
            c.tolerance.describe(c.unit),
            if c.pass { "pass" } else { "FAIL" }
        );
    }
    let failed: Vec<_> = checks.iter().filter(|c| !c.pass).collect();
    assert!(failed.is_empty(), "failed checks: {failed:#?}");
}

#[test]
fn free_fall_matches_the_closed_form() {
    assert_all_pass(&suite::free_fall());
}

#[test]
fn slope_map_corners_and_boundary_match_tan_theta_equals_mu() {
    // Sticks, slides, and the point 0.01° above the friction angle (35°, μ = 0.7).
    let (runs, checks) = suite::slope_map(&[10.0, 35.0, 60.0], &[0.1, 0.7, 1.0], 1.0);
    assert_eq!(runs.len(), 9);
    assert_all_pass(&checks);
}

#[test]
fn sliding_box_stops_after_the_coulomb_distance() {
    assert_all_pass(&suite::stop_distance(10.0, 0.4));
}

#[test]
fn rolling_ball_stops_after_seven_r_v0_squared_over_ten_mu_r_g() {
    assert_all_pass(&suite::rolling_stop_distance(2.0, 0.005));
}

#[test]
fn ball_rebounds_to_e_squared_h0() {
    assert_all_pass(&[suite::bounce(0.7, 2.0, 240.0)]);
}

#[test]
fn resting_box_impulses_carry_its_weight() {
    assert_all_pass(&suite::resting_impulses());
}

#[test]
fn pyramid_solve_converges_fast_locally() {
    let (data, checks) = suite::pyramid_convergence(10, 1e-10);
    assert!(data.converged && !data.newton.is_empty());
    assert_all_pass(&checks);
}

#[test]
fn sliding_trajectory_follows_the_analytic_curve() {
    assert_all_pass(&suite::trajectory().1);
}

#[test]
fn a_tumbling_box_keeps_its_angular_momentum_and_energy() {
    assert_all_pass(&suite::tumbling_box(60));
}

#[test]
fn spin_about_the_intermediate_axis_flips_and_about_the_major_axis_holds() {
    assert_all_pass(&suite::tennis_racket());
}

#[test]
fn a_level_top_precesses_at_m_g_d_over_i3_omega3() {
    assert_all_pass(&suite::level_top_precession());
}
