//! Bad input never panics and never poisons the rest of the world (issue: plugin, bad input).

mod app;

use app::*;
use bevy_app::App;
use bevy_canal::prelude::*;
use bevy_ecs::prelude::*;

/// A ball falling freely next to whatever a test breaks: the rest of the world must keep
/// simulating exactly.
fn witness(app: &mut App) -> Entity {
    app.world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::sphere(0.5),
            Transform::from_xyz(100.0, 50.0, 0.0),
        ))
        .id()
}

fn witness_fell(app: &App, ball: Entity, steps: usize) {
    let h = dt(app);
    let n = steps as f64;
    let g = -Gravity::default().0.y as f64;
    let expected = 50.0 - g * h * h * n * (n + 1.0) / 2.0;
    let y = precise(app, ball).translation.y;
    assert!(
        (y - expected).abs() < 1e-9,
        "the unrelated ball is at {y}, expected {expected}"
    );
}

#[test]
fn non_finite_transforms_and_velocities_leave_only_that_body_out() {
    let mut app = app(60.0);
    ground(&mut app, 10.0, 0.5);
    let ball = witness(&mut app);
    let nan_position = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(1.0, 1.0, 1.0),
            Transform::from_xyz(f32::NAN, 1.0, 0.0),
        ))
        .id();
    let infinite_velocity = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(1.0, 1.0, 1.0),
            Transform::from_xyz(3.0, 0.5, 0.0),
            LinearVelocity(Vec3::new(f32::INFINITY, 0.0, 0.0)),
        ))
        .id();
    step(&mut app, 30);
    witness_fell(&app, ball, 30);
    assert!(transform(&app, nan_position).translation.x.is_nan(), "left untouched");
    assert_eq!(transform(&app, infinite_velocity).translation, Vec3::new(3.0, 0.5, 0.0));
    let first = stats(&app);
    assert_eq!(first.bodies, 1, "only the witness is simulated: {first:?}");
    assert!(first.converged);

    // Fixing the velocity brings the body back into the step.
    app.world_mut().get_mut::<LinearVelocity>(infinite_velocity).unwrap().0 = Vec3::ZERO;
    step(&mut app, 30);
    assert_eq!(stats(&app).bodies, 2);
    let y = precise(&app, infinite_velocity).translation.y;
    assert!((y - 0.5).abs() < 1e-6, "it rests on the ground: {y}");
}

#[test]
fn invalid_sizes_and_densities_are_ignored() {
    let mut app = app(60.0);
    let ball = witness(&mut app);
    let bad = [
        app.world_mut()
            .spawn((
                RigidBody::Dynamic,
                Collider::cuboid(0.0, 1.0, 1.0),
                Transform::from_xyz(0.0, 5.0, 0.0),
            ))
            .id(),
        app.world_mut()
            .spawn((
                RigidBody::Dynamic,
                Collider::sphere(-1.0),
                Transform::from_xyz(3.0, 5.0, 0.0),
            ))
            .id(),
        app.world_mut()
            .spawn((
                RigidBody::Dynamic,
                Collider::capsule(f32::NAN, 1.0),
                Transform::from_xyz(6.0, 5.0, 0.0),
            ))
            .id(),
        app.world_mut()
            .spawn((
                RigidBody::Dynamic,
                Collider::sphere(0.5),
                ColliderDensity(-2.0),
                Transform::from_xyz(9.0, 5.0, 0.0),
            ))
            .id(),
        app.world_mut()
            .spawn((
                RigidBody::Dynamic,
                Collider::sphere(0.5),
                Mass(0.0),
                Transform::from_xyz(12.0, 5.0, 0.0),
            ))
            .id(),
        app.world_mut()
            .spawn((RigidBody::Dynamic, Transform::from_xyz(15.0, 5.0, 0.0)))
            .id(),
    ];
    step(&mut app, 20);
    witness_fell(&app, ball, 20);
    for entity in bad {
        assert_eq!(transform(&app, entity).translation.y, 5.0, "{entity} moved");
    }
    assert_eq!(stats(&app).bodies, 1);
}

/// Shapes that cannot be built are `None`, not a panic (parry asserts that a compound has a
/// part); those that can be built but not simulated name what is wrong and are left out.
#[test]
fn empty_compounds_and_flat_height_fields_are_refused() {
    assert!(Collider::compound(Vec::new()).is_none());
    let mut app = app(60.0);
    let ball = witness(&mut app);
    for scale in [
        Vec3::new(0.0, 1.0, 10.0),
        Vec3::new(10.0, 1.0, -10.0),
        Vec3::new(10.0, f32::NAN, 10.0),
    ] {
        let field = Collider::heightfield(vec![0.0; 9], 3, 3, scale).unwrap();
        let reason = field.invalid_reason();
        assert!(
            reason.as_deref().is_some_and(|r| r.contains("scale")),
            "{scale}: {reason:?}"
        );
        app.world_mut().spawn((field, Transform::default()));
    }
    step(&mut app, 20);
    witness_fell(&app, ball, 20);
}

#[test]
fn despawning_bodies_and_removing_colliders_mid_run_is_fine() {
    let mut app = app(60.0);
    ground(&mut app, 10.0, 0.5);
    let stack = box_stack(&mut app, 5);
    step(&mut app, 30);
    assert_eq!(stats(&app).contacts, 20);
    app.world_mut().despawn(stack[2]);
    step(&mut app, 1);
    let contacts = app.world().resource::<Contacts>();
    assert!(
        contacts
            .pairs
            .iter()
            .all(|p| p.entity1 != stack[2] && p.entity2 != stack[2])
    );
    // The two boxes above the gap fall onto the one below it.
    step(&mut app, 120);
    let y = precise(&app, stack[3]).translation.y;
    assert!((y - 2.5).abs() < 1e-4, "box 3 fell into the gap: {y}");
    app.world_mut().entity_mut(stack[4]).remove::<Collider>();
    step(&mut app, 10);
    assert_eq!(stats(&app).bodies, 3, "a body without collider nor mass is left out");
    assert!(stats(&app).converged);
}

#[test]
fn deep_initial_overlap_separates_without_launching() {
    let mut app = app(60.0);
    ground(&mut app, 10.0, 0.5);
    // Two boxes sunk half into each other and into the ground.
    let lower = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(1.0, 1.0, 1.0),
            Transform::from_xyz(0.0, 0.1, 0.0),
        ))
        .id();
    let upper = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(1.0, 1.0, 1.0),
            Transform::from_xyz(0.0, 0.6, 0.0),
        ))
        .id();
    // Each contact pushes out at most at the cap: the lower box leaves the ground at ≤ cap, the
    // upper one leaves the lower one at ≤ cap relative to it.
    let (mut lower_fastest, mut relative_fastest) = (0.0_f64, 0.0_f64);
    for _ in 0..180 {
        step(&mut app, 1);
        let (vl, vu) = (
            precise(&app, lower).linear_velocity,
            precise(&app, upper).linear_velocity,
        );
        lower_fastest = lower_fastest.max(vl.length());
        relative_fastest = relative_fastest.max((vu - vl).length());
    }
    let cap = PhysicsSettings::default().solver.max_push_out_speed;
    assert!(
        lower_fastest <= cap * (1.0 + 1e-6),
        "the lower box launched at {lower_fastest} m/s"
    );
    assert!(
        relative_fastest <= cap * (1.0 + 1e-6),
        "the upper box launched at {relative_fastest} m/s"
    );
    let (a, b) = (precise(&app, lower).translation.y, precise(&app, upper).translation.y);
    assert!(
        (a - 0.5).abs() < 1e-3 && (b - 1.5).abs() < 1e-3,
        "separated to {a}, {b}"
    );
}

/// A six-box stack spawned in `app`, bottom first.
fn spawn_stack(app: &mut App) -> Vec<Entity> {
    ground(app, 10.0, 0.5);
    box_stack(app, 6)
}

#[test]
fn a_solver_that_runs_out_of_budget_still_completes_the_step() {
    let mut app = app(60.0);
    let mut settings = PhysicsSettings::default();
    settings.solver.max_outer_iterations = 1;
    settings.solver.max_newton_iterations = 1;
    settings.solver.polish_iterations = 0;
    app.insert_resource(settings);
    let boxes = spawn_stack(&mut app);
    step(&mut app, 1);
    let stats = stats(&app);
    assert!(!stats.converged, "{stats:?}");
    assert!(stats.ncp_residual.is_finite());
    for entity in boxes {
        let state = precise(&app, entity);
        assert!(state.translation.is_finite() && state.linear_velocity.is_finite());
    }
}

#[test]
fn the_polish_finishes_a_spent_outer_budget_and_the_stats_count_its_steps() {
    let mut app = app(60.0);
    let mut settings = PhysicsSettings::default();
    settings.solver.max_outer_iterations = 1;
    app.insert_resource(settings);
    spawn_stack(&mut app);
    step(&mut app, 1);
    let stats = stats(&app);
    assert!(stats.converged, "{stats:?}");
    assert_eq!(stats.outer_iterations, 1);
    assert!(stats.polish_iterations > 0, "{stats:?}");
    assert!(
        stats.ncp_residual <= 1e-8 && stats.feasibility_residual <= 1e-8,
        "{stats:?}"
    );
}
