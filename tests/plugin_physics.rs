//! The plugin end to end against analytic answers (issue: CanalPhysicsPlugin end to end).

mod app;

use app::*;
use bevy_canal::prelude::*;
use bevy_math::DVec3;

#[test]
fn free_fall_is_the_semi_implicit_euler_closed_form() {
    let mut app = app(60.0);
    let h = dt(&app);
    let v0 = DVec3::new(1.0, 2.0, -0.5);
    let body = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::sphere(0.25),
            Transform::from_xyz(0.0, 10.0, 0.0),
            LinearVelocity(v0.as_vec3()),
        ))
        .id();
    let n = 90;
    step(&mut app, n);
    // v_k = v0 + k g h, x_n = x0 + h Σ_{k=1..n} v_k = x0 + n h v0 + g h² n(n+1)/2.
    let g = Gravity::default().0.as_dvec3();
    let nf = n as f64;
    let expected =
        DVec3::new(0.0, 10.0, 0.0) + v0.as_vec3().as_dvec3() * (nf * h) + g * (h * h * nf * (nf + 1.0) / 2.0);
    let state = precise(&app, body);
    assert!(
        (state.translation - expected).length() < 1e-12,
        "{} vs {expected}",
        state.translation
    );
    let v = v0.as_vec3().as_dvec3() + g * (nf * h);
    assert!((state.linear_velocity - v).length() < 1e-12);
    assert!((transform(&app, body).translation - expected.as_vec3()).length() < 1e-5);
    assert_eq!(stats(&app).contacts, 0);
}

#[test]
fn a_box_resting_on_the_ground_stays_put_for_ten_seconds() {
    let mut app = app(60.0);
    ground(&mut app, 10.0, 0.5);
    let cube = box_stack(&mut app, 1)[0];
    step(&mut app, 600);
    let state = precise(&app, cube);
    let moved = (state.translation - DVec3::new(0.0, 0.5, 0.0)).length();
    println!("resting box moved {moved:e} m in 10 s");
    assert!(moved < 1e-6, "moved {moved} m");
    let stats = stats(&app);
    assert!(
        stats.converged && stats.contacts == 4 && stats.push_out_islands == 0,
        "{stats:?}"
    );
}

/// A box sunk 1 cm into the ground is pushed out by moving it, not by speeding it up. The velocity
/// step treats the overlap as touching and leaves the box at rest; each step's push-out then lifts
/// it by `erp` of the depth left, so after n steps it is `1 cm · (1 − erp)ⁿ` deep. Pushed out by a
/// bias in the velocity step instead, the box left the first step rising at `erp · depth / dt`,
/// 0.12 m/s.
#[test]
fn a_sunk_box_is_lifted_out_at_rest() {
    let mut app = app(60.0);
    ground(&mut app, 10.0, 0.5);
    let sunk = sunk_box(&mut app);
    for n in 1..=20 {
        step(&mut app, 1);
        let state = precise(&app, sunk);
        let speed = state.linear_velocity.length() + state.angular_velocity.length();
        assert!(speed < 1e-7, "step {n}: the box moves at {speed} m/s");
        let pushed = stats(&app).push_out_islands;
        assert_eq!(pushed, 1, "step {n}: {pushed} islands pushed out");
        let (expected, depth) = sunk_depths(&app, sunk, n);
        assert!(
            (depth - expected).abs() < 1e-6,
            "step {n}: {depth} m deep, not {expected}"
        );
    }
    println!(
        "sunk box after 20 steps: {:e} m deep",
        0.5 - precise(&app, sunk).translation.y
    );
}

/// The same box at a loose tolerance, 1e-2 m/s, is lifted out the same way. The push-out's speeds
/// (`erp · depth / dt`: 0.12 m/s at 1 cm, below 1e-2 m/s under 0.83 mm) were solved to the
/// velocity step's tolerance, so its answer could stop short by up to that: the box lagged, 0.69
/// mm deep at step 13 where 0.55 mm was due. It is solved to a tenth of its fastest speed now.
#[test]
fn a_sunk_box_is_lifted_out_at_a_loose_tolerance_too() {
    let mut app = loose_app(1e-2, 10.0);
    let sunk = sunk_box(&mut app);
    // Until the depth due nears `gap_slop` (3 µm), below which nothing is pushed out.
    for n in 1..=30 {
        step(&mut app, 1);
        let (expected, depth) = sunk_depths(&app, sunk, n);
        if n % 10 == 0 {
            println!("step {n}: {depth:e} m deep, 1 cm · 0.8ⁿ = {expected:e}");
        }
        assert!(
            (depth - expected).abs() < 1e-6 + 1e-2 * expected,
            "step {n}: {depth} m deep, not {expected}"
        );
    }
}

/// How far `shape`, set down at rest at `start` on a ground slab `ground_size` m wide, moves at
/// most over `steps` steps.
fn farthest_from_rest(shape: Collider, start: Transform, ground_size: f32, steps: usize) -> f64 {
    let mut app = app(60.0);
    ground(&mut app, ground_size, 0.5);
    let body = app.world_mut().spawn((RigidBody::Dynamic, shape, start)).id();
    (0..steps)
        .map(|_| {
            step(&mut app, 1);
            (precise(&app, body).translation - start.translation.as_dvec3()).length()
        })
        .fold(0.0, f64::max)
}

/// A convex hull of a box's eight corners, `half_extents` from its centre: the same solid as a
/// cuboid, whose contacts parry finds by GJK instead of its box tests.
fn box_hull(half_extents: Vec3) -> Collider {
    let corners: Vec<Vec3> = (0..8)
        .map(|k| Vec3::new([-1.0, 1.0][k & 1], [-1.0, 1.0][(k >> 1) & 1], [-1.0, 1.0][k >> 2]) * half_extents)
        .collect();
    Collider::convex_hull(&corners).unwrap()
}

/// A box-shaped convex hull resting on a 40 m slab far from its centre. parry computes hull
/// contacts by GJK, in `f32` and in the slab's frame, where the hull lies 19–25 m out; in these
/// placements it returned, once in a few hundred steps, a normal turned 176° with points 2 m
/// deep (the hull was driven 1.7 cm into the slab and came out 1.2 mm off), or no normal, or a
/// horizontal one (the hull fell freely for a step, 2.7 mm). Asked with the shapes in the other
/// order, parry gets those steps right.
#[test]
fn a_hull_resting_far_from_the_centre_of_a_slab_stays_put() {
    for (x, z) in [(-17.7, -17.7), (13.5, 13.5), (17.4, 17.4)] {
        let hull = box_hull(Vec3::splat(0.5));
        let farthest = farthest_from_rest(hull, Transform::from_xyz(x, 0.5, z), 40.0, 300);
        println!("hull at ({x}, {z}): moved at most {farthest:e} m in 5 s");
        assert!(farthest < 1e-7, "hull at ({x}, {z}): moved up to {farthest} m");
    }
}

/// Two seven-sided prisms stacked, the upper turned by 0.2 rad, and a box on top. parry tells
/// its clipping a face by at most four corners, and of a hull's face it took the first four: the
/// lower prism stood on four corners to one side of its centre, tipped over that chord and sank
/// 28 cm into the slab within a second. Each face now touches the other shape over their whole
/// overlap: the prism's seven corners on the slab, eight of the fourteen crossings of the two
/// prisms' edges (the reduction's most, spanning them), the box's four corners.
#[test]
fn hulls_with_faces_of_seven_corners_rest() {
    let prism = prism_hull(7, 0.3, 0.3);
    let bodies = [
        (prism.clone(), Transform::from_xyz(3.0, 0.15, 0.0)),
        (
            prism,
            Transform::from_xyz(3.0, 0.45, 0.0).with_rotation(Quat::from_rotation_y(0.2)),
        ),
        (Collider::cuboid(0.3, 0.2, 0.3), Transform::from_xyz(3.0, 0.7, 0.0)),
    ];
    let moved = rest_twenty_seconds(&bodies, 30, 7 + 8 + 4, "prisms");
    println!("two seven-sided prisms and a box, 20 s: moved {moved:e} m");
    assert!(moved < 1e-6, "moved {moved} m");
}

/// A cylinder standing on a seven-sided prism, and a prism standing on a cylinder's cap. Where a
/// cap meets a face that parry cuts short, the contact is their overlap: the rim's points over
/// the face, the face's corners over the cap and the crossings of the face's edges with the rim.
/// Read with parry's four corners of the face instead, the cylinder sank 4.9 mm into the prism
/// within a second, and the prism tipped over and 28 cm into the cylinder.
#[test]
fn a_cylinder_and_a_seven_sided_prism_stand_on_each_other() {
    let prism = prism_hull(7, 0.3, 0.3);
    let cylinder_on_prism = [
        (prism.clone(), Transform::from_xyz(-2.0, 0.15, 1.0)),
        (Collider::cylinder(0.28, 0.4), Transform::from_xyz(-2.0, 0.5, 1.0)),
    ];
    // Seven corners on the slab; the rim crosses the face's seven edges twice, and the
    // reduction keeps eight of those points.
    let moved = rest_twenty_seconds(&cylinder_on_prism, 30, 7 + 8, "cylinder on a prism");
    println!("cylinder on a seven-sided prism, 20 s: moved {moved:e} m");
    assert!(moved < 1e-6, "cylinder on a prism moved {moved} m");
    let prism_on_cylinder = [
        (Collider::cylinder(0.5, 0.4), Transform::from_xyz(-2.0, 0.2, 1.0)),
        (
            prism,
            Transform::from_xyz(-2.0, 0.55, 1.0).with_rotation(Quat::from_rotation_y(0.4)),
        ),
    ];
    // Four rim points on the slab; the prism's seven corners on the cap.
    let moved = rest_twenty_seconds(&prism_on_cylinder, 30, 4 + 7, "prism on a cylinder");
    println!("seven-sided prism on a cylinder, 20 s: moved {moved:e} m");
    assert!(moved < 1e-6, "prism on a cylinder moved {moved} m");
}

/// The deepest contact of six throws of `shape` onto the 40 m slab of [`ground`], of friction
/// `friction` (`deepest_of_throws`).
fn deepest_of_six_throws_onto_a_slab(shape: &Collider, friction: f32) -> f32 {
    deepest_of_throws(
        |app| {
            ground(app, 40.0, friction);
        },
        shape,
        6,
    )
}

/// Prisms of five and seven sides and a cylinder dropped from 1.5 m, tilted and spinning, six
/// throws each, tumble and come to rest on the slab.
/// - A prism landing on a corner of its seven-sided face got from GJK a normal 2.8 mrad off the
///   slab's, too far to count as the slab's face, and parry's four corners of that face left out
///   the corner that struck next: it went 1.3 cm into the slab in one step. A five-sided prism
///   resting flat got a normal 7° off and sank 0.9 mm. Where a face of more than four corners is
///   in the contact, a normal within 8° of a face's now counts as that face's, and the contact is
///   the faces' whole overlap.
/// - The cylinder wobbles on its rim as a coin does, its lowest point running about 20° round
///   the rim a step. With its eight rim points evenly spaced, the rim between them went 12.8 mm
///   into the slab; crowded towards the lowest point, 1.6 mm.
#[test]
fn prisms_and_cylinders_thrown_onto_a_slab_land_without_sinking() {
    let shapes = [
        ("5-sided prism", prism_hull(5, 0.3, 0.3), 1e-3),
        ("7-sided prism", prism_hull(7, 0.3, 0.3), 1e-3),
        ("cylinder", Collider::cylinder(0.3, 0.3), 3e-3),
    ];
    for (name, shape, bound) in shapes {
        let deepest = deepest_of_six_throws_onto_a_slab(&shape, 0.5);
        println!("{name} thrown six times: deepest contact {deepest:e} m");
        assert!(deepest < bound, "{name}: {deepest} m deep");
    }
}

/// A seven-sided prism thrown spinning onto a slab of friction 0.3 settles flat without sinking.
/// Settling, it got from GJK a normal 19° off both faces, out of an edge of its face 0.13 mm
/// above the slab, and the corners across its face went 7 mm into the slab in the step. The
/// slab's face, along which the two lie furthest apart, is now taken for the normal
/// (`pipeline::refine`).
#[test]
fn a_prism_settling_flat_on_a_slab_keeps_the_slabs_normal() {
    let deepest = deepest_of_six_throws_onto_a_slab(&prism_hull(7, 0.3, 0.3), 0.3);
    println!("seven-sided prism thrown six times: deepest contact {deepest:e} m");
    assert!(deepest < 1e-3, "{deepest} m deep");
}

/// A twelve-sided prism thrown spinning onto a slab lands on its whole face. A manifold kept at
/// most eight points, those that span it whatever their gaps: of the twelve corners of a face
/// leaning onto the slab it kept corners 3 cm up and dropped one between two of the lowest,
/// which struck next, 1.4 mm deep. A manifold that leans now keeps up to sixteen
/// (`pipeline::reduction`).
#[test]
fn a_twelve_sided_prism_thrown_onto_a_slab_lands_on_its_whole_face() {
    let deepest = deepest_of_six_throws_onto_a_slab(&prism_hull(12, 0.3, 0.3), 0.5);
    println!("twelve-sided prism thrown six times: deepest contact {deepest:e} m");
    assert!(deepest < 5e-4, "{deepest} m deep");
}

/// A cylinder and a disc thrown tilted and spinning onto a large upright cylinder's cap land as
/// on a slab. A rim tilted on a cap was left to parry's square of the rim, and the rim between
/// its corners went 2.7 cm (the cylinder) and 3.7 cm (the disc) into the cap; it now rests on
/// the eight rim points it rests on over a box's face, where its lowest point lies over the cap.
#[test]
fn cylinders_thrown_onto_a_cylinders_cap_land_as_on_a_slab() {
    let pedestal = |app: &mut bevy_app::App| {
        app.world_mut().spawn((
            RigidBody::Static,
            Collider::cylinder(1.5, 1.0),
            Friction::new(0.5),
            Transform::from_xyz(0.0, -0.5, 0.0),
        ));
    };
    for (name, shape) in [
        ("cylinder", Collider::cylinder(0.3, 0.3)),
        ("disc", Collider::cylinder(0.3, 0.06)),
    ] {
        let on_cap = deepest_of_throws(pedestal, &shape, 6);
        let on_slab = deepest_of_six_throws_onto_a_slab(&shape, 0.5);
        println!(
            "{name} thrown six times onto a cylinder's cap: deepest contact {on_cap:e} m (on a slab {on_slab:e} m)"
        );
        assert!(on_cap < 3e-3, "{name}: {on_cap} m deep");
    }
}

/// A ball set down at rest on the top face of a box-shaped hull. parry projects the ball's
/// centre onto a hull by GJK, which leaves the closest point off the one under the centre by an
/// offset that changes the distance by less than `f32` can tell. At that point the ball's
/// weight has a lever: on a hull shaped as a frustum a ball began to roll after 6 s, its speed
/// doubling every 15 steps up to 4.9e-4 m/s, and here the ball and hull moved 3.7e-3 m in 20 s.
/// Now the ball touches under its centre along the face's normal, and they move 1.4e-5 m:
/// rolling costs no energy, and the hull's face under the ball turns a little (by 4.5e-8 rad
/// under the ball on the frustum).
#[test]
fn a_ball_resting_on_a_hull_stays_put() {
    let bodies = [
        (box_hull(Vec3::new(0.8, 0.25, 0.8)), Transform::from_xyz(0.0, 0.25, 0.0)),
        (Collider::sphere(0.3), Transform::from_xyz(0.0, 0.8, 0.0)),
    ];
    // The hull's four corners on the ground, the ball's point on the hull.
    let moved = rest_twenty_seconds(&bodies, 30, 5, "ball on a hull");
    println!("ball on a hull, 20 s: moved {moved:e} m");
    assert!(moved < 1e-4, "moved {moved} m");
}

/// A hundred box-shaped hulls, then a hundred upright cylinders, resting on a slab: settled,
/// every step accepts its warm start, on each body's four corners. parry finds these contacts
/// through GJK, whose normal is a few µrad off the face's, and adds its own closest points,
/// which GJK puts anywhere inside the face; their impulses, carried to another place the next
/// step, tipped the bodies, and from about step 100 the slab's hulls iterated in most steps
/// (3448 outer iterations in 300 steps, cylinders 11 804, on five points each). The face's
/// own normal and plane are taken now, without the closest points.
#[test]
fn hulls_and_cylinders_at_rest_accept_their_warm_start_on_four_corners() {
    let shapes = [
        ("hull", box_hull(Vec3::splat(0.5))),
        ("cylinder", Collider::cylinder(0.5, 1.0)),
    ];
    for (name, shape) in shapes {
        let mut app = app(60.0);
        ground(&mut app, 40.0, 0.5);
        for i in 0..10 {
            for j in 0..10 {
                let at = Transform::from_xyz(i as f32 * 3.9 - 17.7, 0.5, j as f32 * 3.9 - 17.7);
                app.world_mut().spawn((RigidBody::Dynamic, shape.clone(), at));
            }
        }
        step(&mut app, 60);
        let mut outer = 0;
        for _ in 0..300 {
            step(&mut app, 1);
            outer += stats(&app).outer_iterations;
            assert_eq!(stats(&app).contacts, 400, "{name}s: {:?}", stats(&app));
        }
        println!("100 {name}s at rest, 300 steps: {outer} outer iterations");
        assert!(outer == 0, "{name}s: {outer} outer iterations");
    }
}

/// Ten cylinders standing on each other's flat caps. parry gives a cap's contact points from a
/// square whose corners it turns to the azimuth of the step's closest point; recomputed every
/// step (as a rolling side needs), they went round the rim from step to step, and the top
/// cylinder wandered 1.25 cm in 10 s while each step took 2 ms. A cap keeps its points now.
#[test]
fn a_stack_of_upright_cylinders_stays_put() {
    let mut app = app(60.0);
    ground(&mut app, 10.0, 0.5);
    let top = (0..10)
        .map(|i| {
            app.world_mut()
                .spawn((
                    RigidBody::Dynamic,
                    Collider::cylinder(0.5, 1.0),
                    Transform::from_xyz(0.0, 0.5 + i as f32, 0.0),
                ))
                .id()
        })
        .last()
        .unwrap();
    step(&mut app, 1);
    let start = precise(&app, top).translation;
    let mut farthest = 0.0_f64;
    for _ in 0..600 {
        step(&mut app, 1);
        farthest = farthest.max((precise(&app, top).translation - start).length());
        assert!(stats(&app).converged, "{:?}", stats(&app));
    }
    println!("ten upright cylinders, 10 s: top moved at most {farthest:e} m");
    assert!(farthest < 1e-6, "top moved up to {farthest} m");
}

/// Upright cylinders of different radii set exactly on each other's caps, centred and off centre.
/// Rounded to `f32`, the upper lies 5e-8 m into the lower, and GJK gave such pairs a horizontal
/// normal in both orders: the upper cylinder fell by g·dt², 2.7 mm, before the next step found
/// the caps. Asked once more drawn apart, GJK finds them at once.
#[test]
fn cylinders_of_different_radii_set_on_each_others_caps_do_not_fall() {
    for (name, offset) in [("centred", Vec3::ZERO), ("off centre", Vec3::new(0.2, 0.0, 0.1))] {
        let mut app = app(60.0);
        ground(&mut app, 10.0, 0.5);
        let stack = [(0.5, 1.0, 0.5), (0.3, 0.4, 1.2), (0.6, 0.2, 1.5)].map(|(radius, height, y)| {
            let at = Vec3::new(0.0, y, 0.0) + if y > 1.0 { offset } else { Vec3::ZERO };
            let body = (
                RigidBody::Dynamic,
                Collider::cylinder(radius, height),
                Transform::from_translation(at),
            );
            (app.world_mut().spawn(body).id(), at.as_dvec3())
        });
        let (mut deepest, mut farthest) = (0.0_f32, 0.0_f64);
        for _ in 0..60 {
            step(&mut app, 1);
            deepest = deepest.max(deepest_penetration(&app));
            for (id, start) in stack {
                farthest = farthest.max((precise(&app, id).translation - start).length());
            }
        }
        println!("three cylinders stacked {name}, 1 s: deepest contact {deepest:e} m, moved at most {farthest:e} m");
        assert!(deepest < 1e-6, "{name}: {deepest} m deep");
        assert!(farthest < 1e-6, "{name}: moved {farthest} m");
    }
}

/// A cylinder lying on its side, as a wheel rests, and a capsule lying down. parry's GJK found
/// where a curved side touches only roughly, its normal a milliradian and at times tens of
/// degrees off: set down at rest on a 40 m slab in these placements, the cylinder rolled 2.4 cm
/// to 0.37 m within 5 s and the capsule up to 1.2e-4 m. The contact is now the exact line.
#[test]
fn a_cylinder_or_capsule_lying_on_its_side_stays_put() {
    let lying = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    for (name, shape, radius) in [
        ("cylinder", Collider::cylinder(0.5, 0.3), 0.5),
        ("capsule", Collider::capsule(0.3, 1.0), 0.3),
    ] {
        for (x, z) in [(0.3, 0.0), (9.6, -17.7), (-17.7, -17.7)] {
            let start = Transform::from_xyz(x, radius, z).with_rotation(lying);
            let farthest = farthest_from_rest(shape.clone(), start, 40.0, 300);
            println!("{name} on its side at ({x}, {z}): moved at most {farthest:e} m in 5 s");
            assert!(farthest < 1e-7, "{name} at ({x}, {z}): moved up to {farthest} m");
        }
    }
}

/// A disc (a cylinder 0.3 m in radius and 0.2 m high) set on its rim at 20° and spun at 5 rad/s
/// about the vertical topples onto its cap and rests there. On the way down its rim's lowest
/// point runs round the rim by up to 44° a step, and between the rim points that hold it the
/// rim sags into the ground. The lowest point, from the pose, reached 12.5 mm under the ground
/// with parry's four corners of a square, 3.7 mm with eight rim points evenly spaced from the
/// lowest, and 1.2 mm with them crowded towards it (`pipeline::caps`): a bound on a sag, not a
/// law.
#[test]
fn a_spinning_disc_falls_flat_without_digging_its_rim_in() {
    let (radius, height, tilt) = (0.3, 0.2, 20_f64.to_radians());
    let mut app = app(60.0);
    ground(&mut app, 40.0, 0.5);
    let start = Transform::from_xyz(0.0, (0.5 * height * tilt.cos() + radius * tilt.sin()) as f32, 0.0)
        .with_rotation(Quat::from_rotation_z(tilt as f32));
    let disc = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cylinder(radius as f32, height as f32),
            Friction::new(0.5),
            start,
            AngularVelocity(Vec3::new(0.0, 5.0, 0.0)),
        ))
        .id();
    let lowest_rim_point = |state: &PreciseState| {
        let axis = state.rotation * DVec3::Y;
        let up = if axis.y >= 0.0 { axis } else { -axis };
        let cap = state.translation - up * (0.5 * height);
        let down = DVec3::NEG_Y - up * DVec3::NEG_Y.dot(up);
        (cap + down.normalize_or_zero() * radius).y
    };
    let mut deepest = 0.0_f64;
    for _ in 0..240 {
        step(&mut app, 1);
        deepest = deepest.max(-lowest_rim_point(&precise(&app, disc)));
    }
    let state = precise(&app, disc);
    let tilt_left = (state.rotation * DVec3::Y).y.abs().acos();
    println!(
        "spinning disc: rim at most {deepest:.2e} m deep, at rest {:.1e} m/s with its cap {:.1e} rad from flat, {:.1e} m deep",
        state.linear_velocity.length(),
        tilt_left,
        -lowest_rim_point(&state)
    );
    assert!(deepest < 2.5e-3, "the rim dug {deepest} m in");
    assert!(state.linear_velocity.length() < 1e-6 && state.angular_velocity.length() < 1e-6);
    // Flat up to `PhysicsSettings::resting_gap` (0.1 mm), which a loaded rim point may hover.
    let resting_gap = f64::from(PhysicsSettings::default().resting_gap);
    assert!(
        tilt_left < resting_gap / radius && lowest_rim_point(&state).abs() < resting_gap,
        "rests flat"
    );
}

/// A solid cylinder rolling without slipping down a 20° slope (μ = 0.5 > tan θ / 3) speeds up at
/// a = (2/3) g sin θ: a third of its weight's pull goes into its spin.
#[test]
fn a_cylinder_rolls_down_a_slope_at_two_thirds_of_g_sin_theta() {
    let theta = 20_f64.to_radians();
    let lying = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    let (along, across, steps, h) = release_on_slope(20.0, 0.5, Collider::cylinder(0.5, 0.3), lying, 2.0);
    let a = G * theta.sin() * 2.0 / 3.0;
    // Semi-implicit Euler from rest: s_n = a h² n(n+1)/2.
    let n = steps as f64;
    let expected = a * h * h * n * (n + 1.0) / 2.0;
    let error = (along - expected).abs() / expected;
    println!(
        "rolled {along:.6} m in 2 s, expected {expected:.6} m ({error:.1e} relative), {across:.1e} m off its line"
    );
    assert!(error < 1e-4, "rolled {along} m, expected {expected} m");
    assert!(across < 1e-4, "{across} m off its line");
}

/// Sets `bodies` down at rest on a 40 m slab, all at μ = 0.8, lets them settle for `settle`
/// steps, then steps 20 s checking that every step has `contacts` points; how far any body
/// moved over those 20 s, m.
fn rest_twenty_seconds(bodies: &[(Collider, Transform)], settle: usize, contacts: usize, name: &str) -> f64 {
    let mut app = app(60.0);
    ground(&mut app, 40.0, 0.8);
    let ids: Vec<_> = bodies
        .iter()
        .map(|(collider, at)| {
            app.world_mut()
                .spawn((RigidBody::Dynamic, collider.clone(), Friction::new(0.8), *at))
                .id()
        })
        .collect();
    step(&mut app, settle);
    let starts: Vec<_> = ids.iter().map(|&id| precise(&app, id).translation).collect();
    for k in 0..1200 {
        step(&mut app, 1);
        let found = stats(&app).contacts;
        assert_eq!(found, contacts, "{name}: {found} contacts at step {k}");
    }
    ids.iter()
        .zip(&starts)
        .map(|(&id, start)| (precise(&app, id).translation - *start).length())
        .fold(0.0, f64::max)
}

/// Three logs, two lying side by side on the ground and one in the groove between them, μ = 0.8:
/// more than the 2 − √3 ≈ 0.27 they need to hold. parry gives two capsules a single point,
/// which for parallel axes lands at an arbitrary end of their overlap and jumped from end to
/// end between steps; the pile of capsules rolled apart, 0.11 m in 10 s, and one of cylinders
/// crept 1 mm. Side by side, they now touch along the line where they meet. They keep touching
/// there every step: after 12.8 s parry once gave the top cylinder a single point with a normal
/// 36° astray, asked again the other way round no point, and it fell 0.75 mm into its neighbour.
#[test]
fn a_pile_of_three_logs_rests() {
    let lying = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    for (name, log) in [
        ("capsules", Collider::capsule(0.5, 1.0)),
        ("cylinders", Collider::cylinder(0.5, 2.0)),
    ] {
        let logs = [(3.0, 0.5), (4.0, 0.5), (3.5, 0.5 + 0.75_f32.sqrt())]
            .map(|(x, y)| (log.clone(), Transform::from_xyz(x, y, 2.0).with_rotation(lying)));
        // Two ends of each line of contact: two on the ground, one between the lower logs, two
        // under the top one.
        let farthest = rest_twenty_seconds(&logs, 1, 10, name);
        println!("pile of three {name}, 20 s: moved at most {farthest:e} m");
        assert!(farthest < 1e-6, "{name}: moved up to {farthest} m");
    }
}

/// A plank resting across two logs lying on the ground, logs longer than the plank is wide
/// (μ = 0.8): the line along each log's top runs off the plank's face, and touches along the
/// stretch under it. Before, parry's own points stood there, from GJK a hundredth of the radius
/// astray, and the logs rolled the plank 0.19 m in 50 s; the capsules' pile held to 7e-9 m.
#[test]
fn a_plank_rests_on_two_logs_longer_than_it_is_wide() {
    let lying = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    let log = Collider::cylinder(0.5, 2.0);
    let bodies = [
        (log.clone(), Transform::from_xyz(-1.0, 0.5, 0.0).with_rotation(lying)),
        (log, Transform::from_xyz(1.0, 0.5, 0.0).with_rotation(lying)),
        (Collider::cuboid(3.0, 0.5, 1.5), Transform::from_xyz(0.0, 1.25, 0.0)),
    ];
    // Two ends of each line: on the ground and under the plank, for each log.
    let farthest = rest_twenty_seconds(&bodies, 30, 8, "plank");
    println!("plank on two logs, 20 s: moved at most {farthest:e} m");
    assert!(farthest < 1e-6, "moved up to {farthest} m");
}

/// A log cabin's first course: two logs lying on the ground, two more across them (μ = 0.8).
/// Crossed sides touch at the point where their axes' common perpendicular meets them. parry
/// finds it through GJK, and its normal, about a milliradian astray and always outward, rolled
/// the upper logs off their supports within seconds. Rolling along the logs below costs no
/// energy, so what the solver's tolerance leaves drifts them slowly: 2e-6 m/s after 25 s.
#[test]
fn a_log_cabins_crossed_logs_rest() {
    let along_z = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    let along_x = Quat::from_rotation_z(std::f32::consts::FRAC_PI_2);
    let log = Collider::cylinder(0.5, 2.0);
    let logs = [
        Transform::from_xyz(-0.7, 0.5, 0.0).with_rotation(along_z),
        Transform::from_xyz(0.7, 0.5, 0.0).with_rotation(along_z),
        Transform::from_xyz(0.0, 1.5, -0.7).with_rotation(along_x),
        Transform::from_xyz(0.0, 1.5, 0.7).with_rotation(along_x),
    ]
    .map(|at| (log.clone(), at));
    // Two ends of each lower log's line on the ground, one point at each crossing.
    let farthest = rest_twenty_seconds(&logs, 30, 8, "log cabin");
    println!("log cabin, 20 s: moved at most {farthest:e} m");
    assert!(farthest < 1e-4, "moved up to {farthest} m");
}

/// A log laid across an upright cylinder's cap, off its centre, rests on the chord the cap's rim
/// cuts from its lowest line, at both ends of it (μ = 0.8). parry gave the pair GJK's nearest
/// point, at one end of the chord or the other: the log rocked from end to end and slid off
/// within 10 s in each of these placements (0.6–4.4 m).
#[test]
fn a_log_across_an_upright_cylinders_cap_rests() {
    let along_z = Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
    for (x, z, turn) in [(0.2, 0.3, 0.0), (-0.3, 0.1, 0.7), (0.35, -0.2, 1.3)] {
        let bodies = [
            (Collider::cylinder(0.5, 1.0), Transform::from_xyz(0.0, 0.5, 0.0)),
            (
                Collider::cylinder(0.25, 2.0),
                Transform::from_xyz(x, 1.25, z).with_rotation(Quat::from_rotation_y(turn) * along_z),
            ),
        ];
        // Four rim points on the ground, the chord's two ends under the log.
        let farthest = rest_twenty_seconds(&bodies, 30, 6, "log on a cap");
        println!("log across a cap at ({x}, {z}), turned {turn}: moved at most {farthest:e} m in 20 s");
        assert!(farthest < 1e-4, "({x}, {z}), turned {turn}: moved up to {farthest} m");
    }
}

/// What one pour of [`pour_cylinders`] came to.
struct Pour {
    /// Steps in which a pair's normal turned against its last step's.
    turned: usize,
    /// The deepest contact once the pile has landed (steps 150–400), m.
    deepest: f32,
    /// Pairs with a contact deeper than 1 mm (less than one step's fall, g·dt² = 2.7 mm), counted
    /// in each of steps 150–400.
    deep_pairs: usize,
    /// Steps 300–400 in which no cylinder moved faster than 1e-5 m/s.
    resting_steps: usize,
}

/// 36 cylinders poured into a walled pen (μ = 0.5), cylinder `k` first turned by
/// `(0.7 + jitter)·k` radians about x: a pile of rims on sides, sides askew on sides and caps on
/// rims, where parry's GJK and EPA answer on curved shapes a few µm apart.
fn pour_cylinders(jitter: f32) -> Pour {
    let mut app = app(60.0);
    ground(&mut app, 40.0, 0.5);
    for (x, z, w, d) in [
        (-1.6, 0.0, 0.2, 3.4),
        (1.6, 0.0, 0.2, 3.4),
        (0.0, -1.6, 3.4, 0.2),
        (0.0, 1.6, 3.4, 0.2),
    ] {
        app.world_mut().spawn((
            RigidBody::Static,
            Collider::cuboid(w, 3.0, d),
            Friction::new(0.5),
            Transform::from_xyz(x, 1.5, z),
        ));
    }
    let mut cylinders = Vec::new();
    for k in 1..=36 {
        let (layer, i, j) = ((k - 1) / 9, (k - 1) / 3 % 3, (k - 1) % 3);
        let turn = Quat::from_euler(
            bevy_math::EulerRot::XYZ,
            (0.7 + jitter) * k as f32,
            1.3 * k as f32,
            0.4 * k as f32,
        );
        let at = Transform::from_xyz(-0.9 + 0.9 * i as f32, 1.0 + 0.9 * layer as f32, -0.9 + 0.9 * j as f32);
        let cylinder = app.world_mut().spawn((
            RigidBody::Dynamic,
            Collider::cylinder(0.25, 1.0),
            Friction::new(0.5),
            at.with_rotation(turn),
        ));
        cylinders.push(cylinder.id());
    }
    let mut normals = std::collections::HashMap::new();
    let mut pour = Pour {
        turned: 0,
        deepest: 0.0,
        deep_pairs: 0,
        resting_steps: 0,
    };
    for k in 0..400 {
        step(&mut app, 1);
        let fastest = cylinders
            .iter()
            .map(|&c| precise(&app, c).linear_velocity.length())
            .fold(0.0, f64::max);
        pour.resting_steps += usize::from(k >= 300 && fastest < 1e-5);
        let mut now = std::collections::HashMap::new();
        let (mut turned, mut deepest, mut deep_pairs) = (false, 0.0_f32, 0);
        for pair in &app.world().resource::<Contacts>().pairs {
            let normal = pair.points.iter().map(|p| p.normal).sum::<Vec3>();
            turned |= normals
                .get(&(pair.entity1, pair.entity2))
                .is_some_and(|before: &Vec3| normal.dot(*before) < 0.0);
            now.insert((pair.entity1, pair.entity2), normal);
            let pair_deepest = pair.points.iter().map(|p| p.penetration).fold(0.0, f32::max);
            deepest = deepest.max(pair_deepest);
            deep_pairs += usize::from(pair_deepest > 1e-3);
        }
        normals = now;
        pour.turned += usize::from(turned);
        if k >= 150 {
            pour.deepest = pour.deepest.max(deepest);
            pour.deep_pairs += deep_pairs;
        }
    }
    pour
}

/// Poured cylinders keep their contacts: judged over 24 pours, not one. Each fault fixed here
/// showed on some pours only: a cylinder resting on another got, for one step, its normal and
/// gaps negated (the pair read 2e-6 m apart, and the top one fell 2.2 mm); one lost its contact
/// in both orders and fell 2.7 mm; one lying 3.3° askew on another touched at alternate ends
/// and sank 4.5 cm; while the velocity step closed every loaded contact's gap of a few µm at
/// `gap/dt`, piles jiggled at 1e-2 m/s for good (`PhysicsSettings::resting_gap`).
///
/// One pile is no measure. The pile is chaotic: a change in the last bits of the Newton matrix
/// (one product re-associated) sends it elsewhere. The test once asked one pour (jitter 0) to
/// keep every contact within 1 mm after landing, no normal ever to turn, and the pile to rest in
/// 90 of steps 300–400. `main` at ae0ab15 passed that on 5 of these 24 pours, and three builds
/// that differ from it only in round-off on 4, 8 and 11. So the bounds below are on the 24 pours
/// together, set from those four builds (`docs/sphere-pen.md`, thirty-sixth session):
/// - pours with a turned normal: 0–1 (15 before the thirty-third session's fixes);
/// - the worst contact: 3.4–17 mm (34 and 52 mm with the exact rim reading the thirty-fourth
///   session tried);
/// - pair-steps deeper than 1 mm: 30–113 in all. With `refine::rest_on_ends` off, a fault that
///   acts on a few configurations only, two of those builds gave 137 and 191. The bound of 130
///   sits between: a gate on a statistic, not on a law;
/// - steps at rest: 1095–1763 of 2400. Rolling cylinders and slow rockers are physical here,
///   with no rolling resistance, so a pile need not rest; a pile that jiggles for good would.
#[test]
fn cylinders_poured_into_a_pen_keep_their_contacts() {
    const JITTERS: [f32; 24] = [
        0.0, 0.01, -0.01, 0.02, -0.02, 0.03, 0.04, -0.04, 0.05, 0.015, -0.03, -0.05, 0.06, -0.06, 0.07, -0.07, 0.08,
        -0.08, 0.09, -0.09, 0.1, -0.1, 0.11, -0.11,
    ];
    let next = std::sync::atomic::AtomicUsize::new(0);
    let pours = std::sync::Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&jitter) = JITTERS.get(i) else { break };
                    let pour = pour_cylinders(jitter);
                    pours.lock().expect("no worker panicked").push((i, pour));
                }
            });
        }
    });
    let mut pours = pours.into_inner().expect("no worker panicked");
    pours.sort_by_key(|(i, _)| *i);
    assert_eq!(pours.len(), JITTERS.len());
    for (i, pour) in &pours {
        println!(
            "cylinders poured, jitter {:+.3}: {} steps with a turned normal, deepest contact after landing {:.2e} m, \
             {} pair-steps deeper than 1 mm, {} of steps 300-400 at rest",
            JITTERS[*i], pour.turned, pour.deepest, pour.deep_pairs, pour.resting_steps
        );
    }
    let turned = pours.iter().filter(|(_, pour)| pour.turned > 0).count();
    let deepest = pours.iter().map(|(_, pour)| pour.deepest).fold(0.0, f32::max);
    let deep_pairs: usize = pours.iter().map(|(_, pour)| pour.deep_pairs).sum();
    let resting_steps: usize = pours.iter().map(|(_, pour)| pour.resting_steps).sum();
    println!(
        "cylinders poured, 24 pours: {turned} with a turned normal, deepest {deepest:e} m, {deep_pairs} pair-steps \
         deeper than 1 mm, {resting_steps} of 2400 steps at rest"
    );
    assert!(
        turned <= 2,
        "{turned} pours with a normal turned against its last step's"
    );
    assert!(deepest < 3e-2, "a contact {deepest} m deep");
    assert!(
        deep_pairs <= 130,
        "{deep_pairs} pair-steps with a contact deeper than 1 mm"
    );
    assert!(resting_steps >= 600, "only {resting_steps} of 2400 steps at rest");
}

/// A box set down on another, turned about the vertical, rests on the polygon where their faces
/// overlap: five or six corners in these cases, its centre of mass 2–18 cm inside. With that
/// polygon cut to four corners, each of these boxes crept by 3.7e-6 to 1e-4 m within three
/// seconds; with every corner it holds to 1e-8 m.
#[test]
fn a_box_turned_on_another_rests_on_every_corner_of_their_overlap() {
    let cases = [
        (30.0_f32, -0.48_f32, 0.16_f32),
        (45.0, -0.48, 0.0),
        (60.0, 0.48, 0.16),
        (30.0, 0.16, 0.48),
        (45.0, 0.0, 0.32),
    ];
    for (degrees, x, z) in cases {
        let mut app = app(60.0);
        ground(&mut app, 10.0, 0.5);
        app.world_mut().spawn((
            RigidBody::Static,
            Collider::cuboid(1.0, 1.0, 1.0),
            Transform::from_xyz(0.0, 0.5, 0.0),
        ));
        let start = Transform::from_xyz(x, 1.5, z).with_rotation(Quat::from_rotation_y(degrees.to_radians()));
        let top = app
            .world_mut()
            .spawn((RigidBody::Dynamic, Collider::cuboid(1.0, 1.0, 1.0), start))
            .id();
        step(&mut app, 180);
        let moved = (precise(&app, top).translation - start.translation.as_dvec3()).length();
        println!("turned {degrees}°, centre over ({x}, {z}) m: moved {moved:e} m in 3 s");
        assert!(
            moved < 1e-7,
            "turned {degrees}°, centre over ({x}, {z}): moved {moved} m"
        );
        assert!(stats(&app).converged, "{:?}", stats(&app));
    }
}

/// A capsule lying on its side on flat ground is free to roll but nothing pushes it: it must stay
/// where it was set down. Round-off (it lies 6 m from the origin) starts it rolling at 1e-7 m/s.
/// With contact points that parry carried along with the rolling body for up to a degree, the
/// touching point lagged behind the lowest one, and the weight's lever about it rolled the capsule
/// away, 0.22 m within 6 s and accelerating.
#[test]
fn a_capsule_lying_on_its_side_does_not_roll_away() {
    let start = Transform::from_xyz(6.0, 0.3, 0.0).with_rotation(Quat::from_rotation_z(std::f32::consts::FRAC_PI_2));
    let farthest = farthest_from_rest(Collider::capsule(0.3, 1.0), start, 20.0, 360);
    println!("capsule lying 6 s: moved at most {farthest:e} m");
    assert!(farthest < 1e-4, "moved up to {farthest} m");
}

/// A box on a slope of `degrees` with μ = `mu` (both surfaces), released at rest; returns its
/// displacement along the slope after `seconds`, the number of steps and the time step.
fn slide_on_slope(degrees: f64, mu: f32, seconds: f64) -> (f64, usize, f64) {
    let (along, _, steps, h) = release_on_slope(degrees, mu, Collider::cuboid(1.0, 1.0, 1.0), Quat::IDENTITY, seconds);
    (along, steps, h)
}

/// `shape`, turned by `turn` on a slope of `degrees` with μ = `mu` (both surfaces) and resting
/// on it with its centre 0.5 m above, released at rest; returns its displacement along the
/// slope and across it after `seconds`, the number of steps and the time step.
fn release_on_slope(degrees: f64, mu: f32, shape: Collider, turn: Quat, seconds: f64) -> (f64, f64, usize, f64) {
    let mut app = app(60.0);
    let theta = degrees.to_radians();
    let rotation = Quat::from_rotation_z(theta as f32);
    // The slab's top face passes through the origin, tilted about z: downhill is −x along it.
    let down = (rotation * Vec3::NEG_X).as_dvec3();
    let up = (rotation * Vec3::Y).as_dvec3();
    app.world_mut().spawn((
        RigidBody::Static,
        Collider::cuboid(40.0, 1.0, 10.0),
        Friction::new(mu),
        Transform::from_translation((up * -0.5).as_vec3()).with_rotation(rotation),
    ));
    let start = up * 0.5;
    let body = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            shape,
            Friction::new(mu),
            Transform::from_translation(start.as_vec3()).with_rotation(rotation * turn),
        ))
        .id();
    let steps = (seconds * 60.0).round() as usize;
    step(&mut app, steps);
    let (along, across) = along_and_across(precise(&app, body).translation - start, down);
    (along, across, steps, dt(&app))
}

#[test]
fn a_box_slides_down_a_slope_with_the_coulomb_acceleration() {
    let (theta, mu) = (30.0_f64, 0.5);
    let (distance, steps, h) = slide_on_slope(theta, mu as f32, 2.0);
    let a = G * (theta.to_radians().sin() - mu * theta.to_radians().cos());
    // Semi-implicit Euler from rest: s_n = a h² n(n+1)/2.
    let n = steps as f64;
    let expected = a * h * h * n * (n + 1.0) / 2.0;
    let error = (distance - expected).abs() / expected;
    println!(
        "slid {distance:.6} m in {steps} steps, expected {expected:.6} m ({:.4}%)",
        error * 100.0
    );
    assert!(
        error < 0.005,
        "slid {distance} m, expected {expected} m ({:.3}%)",
        error * 100.0
    );
}

#[test]
fn a_box_sticks_on_a_slope_below_the_friction_angle() {
    let (distance, _, _) = slide_on_slope(30.0, 0.7, 5.0);
    println!("crept {distance:e} m in 5 s");
    assert!(distance.abs() < 1e-6, "crept {distance} m");
}

#[test]
fn a_sliding_box_stops_after_the_coulomb_distance() {
    let (v0, mu) = (10.0_f64, 0.3_f64);
    let mut app = app(60.0);
    ground(&mut app, 80.0, mu as f32);
    let cube = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(1.0, 1.0, 1.0),
            Friction::new(mu as f32),
            Transform::from_xyz(-30.0, 0.5, 0.0),
            LinearVelocity(Vec3::new(v0 as f32, 0.0, 0.0)),
        ))
        .id();
    step(&mut app, 300);
    let state = precise(&app, cube);
    let distance = state.translation.x + 30.0;
    let analytic = v0 * v0 / (2.0 * mu * G);
    println!("stopped after {distance:.5} m, v0²/(2μg) = {analytic:.5} m");
    assert!(
        state.linear_velocity.length() < 1e-6,
        "still moving: {}",
        state.linear_velocity
    );
    assert!(
        (distance - analytic).abs() / analytic < 0.01,
        "stopped after {distance} m, v0²/(2μg) = {analytic} m"
    );
}

#[test]
fn a_ten_box_stack_keeps_its_height() {
    let mut app = app(60.0);
    ground(&mut app, 10.0, 0.5);
    let boxes = box_stack(&mut app, 10);
    let mut worst = 0.0_f64;
    for _ in 0..60 {
        step(&mut app, 10);
        let top = precise(&app, boxes[9]).translation;
        worst = worst.max((top - DVec3::new(0.0, 9.5, 0.0)).length());
    }
    println!("top box's largest displacement in 10 s: {worst:e} m");
    assert!(worst < 1e-3, "the top box moved {worst} m");
    assert!(stats(&app).converged, "{:?}", stats(&app));
}

/// Stacks of unit boxes whose masses differ 1000:1 between neighbours, or with one 1000 kg box
/// on four of 1 kg: a solver that iterates on impulses (PGS) converges slowest exactly there.
/// Every step converges, and no box moves by more than round-off in 10 s (measured: at most
/// 5.0e-8 m with the heavy top, 8.5e-11 alternating).
#[test]
fn stacks_with_a_thousand_to_one_mass_ratio_hold() {
    for masses in [[1.0, 1000.0, 1.0, 1000.0, 1.0], [1.0, 1.0, 1.0, 1.0, 1000.0]] {
        let mut app = app(60.0);
        ground(&mut app, 10.0, 0.5);
        let boxes = box_stack(&mut app, masses.len());
        for (&body, mass) in boxes.iter().zip(masses) {
            app.world_mut().entity_mut(body).insert(Mass(mass));
        }
        let mut farthest = 0.0_f64;
        for k in 0..600 {
            step(&mut app, 1);
            let stats = stats(&app);
            assert!(stats.converged, "{masses:?}, step {k}: {stats:?}");
            for (i, &body) in boxes.iter().enumerate() {
                let rest = DVec3::new(0.0, 0.5 + i as f64, 0.0);
                farthest = farthest.max((precise(&app, body).translation - rest).length());
            }
        }
        println!("masses {masses:?}, 10 s: moved at most {farthest:e} m");
        assert!(farthest < 1e-6, "{masses:?}: moved up to {farthest} m");
    }
}

/// A settled stack's warm start holds step after step: solves that iterate go on below the
/// tolerance (`SolverSettings::headroom`). Without the headroom every other step iterated: 56
/// Newton iterations over these 120 steps, 64 warm starts accepted, with or without the
/// smoothing sweeps (a tower's error is its slowest mode for Gauss–Seidel).
#[test]
fn a_resting_stack_is_held_by_its_warm_start() {
    let (newton, accepted) = resting_stack_warm_starts(PhysicsSettings::default().solver.tolerance);
    assert!(accepted >= 110, "only {accepted} of 120 warm starts were accepted");
    assert!(newton <= 10, "{newton} Newton iterations");
}

/// At a tolerance far looser than `warm_start_accept` the stack is held as well: a warm start is
/// accepted only within that level, so a solve that iterates goes on below it while that is
/// cheap (`SolverSettings::headroom_target`). Aiming at a hundredth of the tolerance instead, as
/// before, left 2 of these 120 warm starts accepted at 1e-2 m/s, for 71 Newton iterations.
#[test]
fn a_loosely_solved_resting_stack_is_held_by_its_warm_start() {
    let (newton, accepted) = resting_stack_warm_starts(1e-2);
    assert!(accepted >= 110, "only {accepted} of 120 warm starts were accepted");
    assert!(newton <= 10, "{newton} Newton iterations");
}

/// Newton iterations and warm starts accepted over steps 60–180 of a resting ten-box stack solved
/// to `tolerance`, every step converged.
fn resting_stack_warm_starts(tolerance: f64) -> (u32, usize) {
    let mut app = loose_app(tolerance, 10.0);
    box_stack(&mut app, 10);
    step(&mut app, 60);
    let (mut newton, mut accepted) = (0, 0);
    for _ in 0..120 {
        step(&mut app, 1);
        let stats = stats(&app);
        assert!(stats.converged, "{stats:?}");
        newton += stats.newton_iterations;
        accepted += usize::from(stats.outer_iterations == 0);
    }
    println!(
        "steps 60–180 of a resting stack at {tolerance:e} m/s: {newton} Newton iterations, {accepted} warm starts accepted"
    );
    (newton, accepted)
}

/// A loose tolerance lets velocities err by up to it, not bodies sink: over 2.5 s of a ten-box
/// stack at 1e-4 m/s the deepest contact stays within a few µm (the push-out corrects an error
/// of 1e-4 m/s × h per step). It was written when the smoothing sweeps' rejected iterates were
/// handed to the outer loop: they moved load between each box's corners, and stopped early the
/// stack tilted until corners dug in 6 mm by step 48. Since warm starts are accepted only within
/// `warm_start_accept`, that hand-over no longer reproduces the dig-in here, so this checks the
/// outcome, not the mechanism. The Gauss–Seidel stage hands its pair over the same way on a step
/// far from its answer (the cold first step here), and the count shows it ran.
#[test]
fn a_loosely_solved_stack_does_not_dig_in() {
    let mut app = loose_app(1e-4, 60.0);
    box_stack(&mut app, 10);
    let mut deepest = 0.0_f32;
    let mut sweeps = 0;
    for _ in 0..150 {
        step(&mut app, 1);
        sweeps += app.world().resource::<SolverStats>().gauss_seidel_sweeps;
        deepest = deepest.max(deepest_penetration(&app));
    }
    println!("ten-box stack at 1e-4 m/s, 150 steps: deepest penetration {deepest:e} m, {sweeps} Gauss–Seidel sweeps");
    assert!(deepest < 2e-5, "a contact penetrated {deepest} m");
    assert!(sweeps > 0);
}

/// At 1e-2 m/s a stack's cold first step is solved loosely and leaves its boxes overlapping by
/// a fraction of a millimetre. The push-out then lifts them out within a few dozen steps, as it
/// would at the default tolerance; solved to the loose tolerance, it left them 0.42 mm deep.
#[test]
fn a_stack_settled_into_itself_at_a_loose_tolerance_is_pushed_apart() {
    let mut app = loose_app(1e-2, 60.0);
    box_stack(&mut app, 10);
    let mut deepest = 0.0_f32;
    for n in 1..=120 {
        step(&mut app, 1);
        deepest = deepest.max(deepest_penetration(&app));
        if n % 30 == 0 {
            println!(
                "ten-box stack at 1e-2 m/s, step {n}: deepest penetration {:e} m",
                deepest_penetration(&app)
            );
        }
    }
    let last = deepest_penetration(&app);
    println!("ten-box stack at 1e-2 m/s: deepest penetration {deepest:e} m over 2 s, {last:e} m at the end");
    assert!(last < 5e-6, "still {last} m deep after 2 s");
}

#[test]
fn a_stack_at_a_loose_tolerance_comes_to_rest_on_accepted_warm_starts() {
    // A loose solve's warm start lands just above the level below which no sweep takes a pile;
    // solved by the sweeps again it stays there, and every step pushes out what it let sink.
    let mut app = loose_app(1e-2, 60.0);
    box_stack(&mut app, 10);
    step(&mut app, 30);
    let (mut pushed_out, mut accepted) = (0, 0);
    for _ in 0..90 {
        step(&mut app, 1);
        let stats = stats(&app);
        pushed_out += usize::from(stats.push_out_islands > 0);
        accepted += usize::from(stats.newton_iterations == 0 && stats.gauss_seidel_sweeps == 0);
    }
    println!("ten-box stack at 1e-2 m/s, steps 31-120: {pushed_out} pushed out, {accepted} accepted as warm-started");
    assert_eq!(pushed_out, 0, "{pushed_out} of 90 resting steps pushed out");
    assert!(
        accepted >= 85,
        "only {accepted} of 90 resting steps accepted their warm start"
    );
}

#[test]
fn a_loosely_solved_pyramid_leaves_overlaps_within_its_tolerance() {
    // At 1e-1 m/s a settling step may close a contact by 1.7 mm; the push-out leaves overlaps up
    // to a hundredth of that instead of working them down to `gap_slop`, where it cost the most.
    let tolerance = 1e-1;
    let mut app = loose_app(tolerance, 60.0);
    let rows = 10;
    let mut top = None;
    for row in 0..rows {
        for j in 0..rows - row {
            let x = j as f32 * 1.05 - (rows - row - 1) as f32 * 0.525;
            let entity = app.world_mut().spawn((
                RigidBody::Dynamic,
                Collider::cuboid(1.0, 1.0, 1.0),
                Transform::from_xyz(x, 0.5 + row as f32, 0.0),
            ));
            top = Some(entity.id());
        }
    }
    let top = top.expect("a pyramid");
    let (mut deepest, mut newton) = (0.0_f32, 0);
    for _ in 0..120 {
        step(&mut app, 1);
        deepest = deepest.max(deepest_penetration(&app));
        newton += stats(&app).push_out_newton_iterations;
    }
    let sink = f64::from(rows as f32 - 0.5) - precise(&app, top).translation.y;
    let left = 1e-2 * tolerance / 60.0;
    let last = deepest_penetration(&app);
    println!(
        "10-row pyramid at 1e-1 m/s, 2 s: {newton} push-out Newton iterations, deepest {deepest:e} m, \
         {last:e} m at the end (left: {left:e}), top box {sink:e} m lower"
    );
    assert!(f64::from(last) < 1.1 * left, "left {last} m deep");
    assert!(sink < f64::from(rows) * left, "the top box sank {sink} m");
    assert!(newton < 60, "{newton} push-out Newton iterations");
}

#[test]
fn a_ball_rebounds_to_e_squared_of_its_drop_height() {
    // 240 Hz: semi-implicit Euler's own ballistic error, O(g h / v), stays well below 2%.
    let (e, h0) = (0.7_f64, 2.0_f64);
    let rebound = first_rebound(e, h0, 240.0);
    assert!(rebound.is_some(), "the ball never bounced");
    let peak = rebound.unwrap_or_default();
    let expected = e * e * h0;
    println!("rebounded to {peak:.5} m, e²h₀ = {expected:.5} m");
    assert!(
        (peak - expected).abs() / expected < 0.02,
        "rebounded to {peak} m, e²h₀ = {expected} m"
    );
}

#[test]
fn a_box_rides_a_moving_kinematic_platform() {
    let mut app = app(60.0);
    let speed = 1.0;
    let platform = app
        .world_mut()
        .spawn((
            RigidBody::Kinematic,
            Collider::cuboid(20.0, 1.0, 20.0),
            Transform::from_xyz(0.0, -0.5, 0.0),
            LinearVelocity(Vec3::new(speed, 0.0, 0.0)),
        ))
        .id();
    let cube = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(1.0, 1.0, 1.0),
            Transform::from_xyz(0.0, 0.5, 0.0),
        ))
        .id();
    step(&mut app, 120);
    let platform_x = precise(&app, platform).translation.x;
    let state = precise(&app, cube);
    let travelled = speed as f64 * 120.0 * dt(&app);
    assert!(
        (platform_x - travelled).abs() < 1e-9,
        "the platform moved to {platform_x}"
    );
    // The box slips, accelerated by μg, until it matches the platform's speed, lagging by
    // v²/(2μg); then static friction carries it along.
    assert!(
        (state.linear_velocity.x - speed as f64).abs() < 1e-6,
        "{}",
        state.linear_velocity
    );
    let lag = platform_x - state.translation.x;
    let expected = (speed * speed) as f64 / (2.0 * 0.5 * G);
    println!("box lags the platform by {lag:.5} m, v²/(2μg) = {expected:.5} m");
    assert!((lag - expected).abs() < 0.01, "lag {lag} m, v²/(2μg) = {expected} m");
    assert!((state.translation.y - 0.5).abs() < 1e-4);
}

#[test]
fn identical_apps_step_bit_identically() {
    let run = || {
        let mut app = app(60.0);
        ground(&mut app, 20.0, 0.5);
        let mut entities = Vec::new();
        for i in 0..12 {
            let x = (i % 4) as f32 * 1.1 - 1.5;
            let y = 0.6 + (i / 4) as f32 * 1.2;
            entities.push(
                app.world_mut()
                    .spawn((
                        RigidBody::Dynamic,
                        Collider::cuboid(1.0, 1.0, 1.0),
                        Transform::from_xyz(x, y, 0.1 * i as f32).with_rotation(Quat::from_rotation_y(0.1 * i as f32)),
                    ))
                    .id(),
            );
        }
        step(&mut app, 60);
        // Bodies despawned and spawned mid-run (freed broad-phase leaves reused, the contact and
        // warm-start caches pruned) must not make two runs differ either.
        for &e in &entities[..4] {
            app.world_mut().despawn(e);
        }
        for i in 0..4 {
            entities.push(
                app.world_mut()
                    .spawn((
                        RigidBody::Dynamic,
                        Collider::cuboid(1.0, 1.0, 1.0),
                        Transform::from_xyz(i as f32 * 1.1 - 1.5, 5.0, 0.3),
                    ))
                    .id(),
            );
        }
        step(&mut app, 60);
        entities[4..].iter().map(|&e| transform(&app, e)).collect::<Vec<_>>()
    };
    let (a, b) = (run(), run());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(
            x.translation.to_array().map(f32::to_bits),
            y.translation.to_array().map(f32::to_bits)
        );
        assert_eq!(
            x.rotation.to_array().map(f32::to_bits),
            y.rotation.to_array().map(f32::to_bits)
        );
    }
}

#[test]
fn contacts_report_the_impulses_that_hold_a_box_up() {
    let mut app = app(60.0);
    ground(&mut app, 10.0, 0.5);
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
    let contacts = app.world().resource::<Contacts>();
    let pairs: Vec<_> = contacts.of(cube).collect();
    assert_eq!(pairs.len(), 1);
    assert_eq!(pairs[0].points.len(), 4, "a box on a plane is a four-point patch");
    // The impulse on the box (entity1 or entity2) over a step is its weight times the step.
    let sign = if pairs[0].entity1 == cube { 1.0 } else { -1.0 };
    let total = sign * pairs[0].total_impulse().y as f64;
    let weight_impulse = 3.0 * 2.0 * G * dt(&app);
    assert!(
        (total - weight_impulse).abs() < 1e-5 * weight_impulse,
        "{total} vs {weight_impulse}"
    );
    for point in &pairs[0].points {
        assert!(
            point.normal_impulse > 0.0 && point.penetration.abs() < 1e-4,
            "{point:?}"
        );
    }
}

#[test]
fn parallel_islands_give_the_serial_result() {
    let run = |parallel: bool| {
        let mut app = app(60.0);
        app.insert_resource(PhysicsSettings {
            parallel_islands: parallel,
            // In parallel every step, however little work its islands are.
            parallel_min_work: std::time::Duration::ZERO,
            ..Default::default()
        });
        ground(&mut app, 40.0, 0.5);
        let boxes: Vec<_> = (0..16)
            .map(|i| {
                let (x, y) = ((i % 8) as f32 * 3.0 - 10.0, 0.6 + (i / 8) as f32 * 1.1);
                app.world_mut()
                    .spawn((
                        RigidBody::Dynamic,
                        Collider::cuboid(1.0, 1.0, 1.0),
                        Transform::from_xyz(x, y, 0.0).with_rotation(Quat::from_rotation_z(0.05 * i as f32)),
                    ))
                    .id()
            })
            .collect();
        step(&mut app, 60);
        assert!(stats(&app).islands > 1);
        boxes.iter().map(|&b| transform(&app, b)).collect::<Vec<_>>()
    };
    assert_eq!(run(true), run(false));
}

#[test]
fn the_plugin_steps_once_per_fixed_tick_from_the_main_loop() {
    use bevy_time::TimeUpdateStrategy;
    let mut app = app(60.0);
    // Each frame advances virtual time by exactly one fixed step.
    let step = std::time::Duration::from_nanos((dt(&app) * 1e9).round() as u64);
    app.insert_resource(TimeUpdateStrategy::ManualDuration(step));
    let ball = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::sphere(0.5),
            Transform::from_xyz(0.0, 10.0, 0.0),
        ))
        .id();
    for _ in 0..31 {
        app.update();
    }
    // The first update only starts the clock; each later one runs one fixed tick.
    let h = dt(&app);
    let g = -Gravity::default().0.y as f64;
    let expected = 10.0 - g * h * h * 30.0 * 31.0 / 2.0;
    let y = precise(&app, ball).translation.y;
    assert!(
        (y - expected).abs() < 1e-9,
        "ball at {y}, expected {expected} after 30 ticks"
    );
    // Transform propagation ran after physics in the same frame.
    let global = app
        .world()
        .get::<bevy_transform::components::GlobalTransform>(ball)
        .unwrap();
    assert_eq!(global.translation(), transform(&app, ball).translation);
}

/// Mass properties and collider checks are cached between steps: a shape or mass component
/// that changes, appears or goes away must still take effect on the next step. Measured through
/// the speed a constant 6 N force adds in one step, h F / m.
#[test]
fn changed_shape_and_mass_components_take_effect_the_next_step() {
    let mut app = app(60.0);
    app.insert_resource(Gravity(bevy_math::Vec3::ZERO));
    let h = dt(&app);
    let body = app
        .world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(1.0, 1.0, 1.0),
            ExternalForce {
                force: bevy_math::Vec3::X * 6.0,
                torque: bevy_math::Vec3::ZERO,
            },
            Transform::default(),
        ))
        .id();
    let mass_seen = |app: &mut bevy_app::App| {
        let before = precise(app, body).linear_velocity.x;
        step(app, 1);
        6.0 * h / (precise(app, body).linear_velocity.x - before)
    };
    let near = |m: f64, expected: f64, what: &str| {
        assert!(
            (m - expected).abs() < 1e-4 * expected,
            "{what}: mass {m} kg, expected {expected}"
        )
    };
    near(mass_seen(&mut app), 1.0, "unit cube");
    near(mass_seen(&mut app), 1.0, "unit cube, cached");
    app.world_mut().entity_mut(body).insert(Collider::cuboid(2.0, 1.0, 1.0));
    near(mass_seen(&mut app), 2.0, "collider replaced");
    app.world_mut().entity_mut(body).insert(Mass(4.0));
    near(mass_seen(&mut app), 4.0, "Mass added");
    app.world_mut().entity_mut(body).remove::<Mass>();
    near(mass_seen(&mut app), 2.0, "Mass removed");
    app.world_mut().entity_mut(body).insert(ColliderDensity(0.5));
    near(mass_seen(&mut app), 1.0, "density added");
    app.world_mut().get_mut::<ColliderDensity>(body).unwrap().0 = 3.0;
    near(mass_seen(&mut app), 6.0, "density changed in place");
}

/// A user who resizes a collider (a power-up, a level editor) expects the body to rest on its
/// new surface. parry keeps a manifold's points on both shapes while the pair hardly moves, so
/// without invalidation the resting box kept touching at its old half-size: grown to 2 m it sat
/// 0.5 m deep in the ground for good, shrunk it would hover.
#[test]
fn a_box_whose_collider_is_resized_rests_on_its_new_surface() {
    let mut app = app(60.0);
    ground(&mut app, 10.0, 0.5);
    let cube = box_stack(&mut app, 1)[0];
    step(&mut app, 30);
    for size in [2.0_f32, 0.5] {
        app.world_mut()
            .entity_mut(cube)
            .insert(Collider::cuboid(size, size, size));
        step(&mut app, 90);
        let height = precise(&app, cube).translation.y;
        println!("resized to {size} m: centre at {height} m, expected {} m", size / 2.0);
        assert!(
            (height - size as f64 / 2.0).abs() < 1e-4,
            "resized to {size} m: centre at {height} m"
        );
        assert!(stats(&app).converged, "{:?}", stats(&app));
    }
}

/// An upright cylinder standing on a pedestal narrower than its cap (a box, a compound's part),
/// and a wide cylinder on a narrow one, rest where they stand. The cap's rim points (`caps`) lie
/// beyond such a face; taken alone, they would hold nothing, and the cylinder would fall through.
#[test]
fn a_cylinder_rests_on_a_pedestal_narrower_than_its_cap() {
    let pedestals = [
        ("box", Collider::cuboid(0.4, 1.0, 0.4)),
        ("cylinder", Collider::cylinder(0.2, 1.0)),
        (
            "compound's part",
            Collider::compound(vec![(Vec3::ZERO, Quat::IDENTITY, Collider::cuboid(0.4, 1.0, 0.4))]).unwrap(),
        ),
    ];
    for (name, pedestal) in pedestals {
        let mut app = app(60.0);
        app.world_mut()
            .spawn((RigidBody::Static, pedestal, Transform::from_xyz(0.0, -0.5, 0.0)));
        let cylinder = app
            .world_mut()
            .spawn((
                RigidBody::Dynamic,
                Collider::cylinder(0.5, 1.0),
                Transform::from_xyz(0.0, 0.5, 0.0),
            ))
            .id();
        step(&mut app, 1);
        let start = precise(&app, cylinder).translation;
        step(&mut app, 120);
        let moved = (precise(&app, cylinder).translation - start).length();
        println!("cylinder on a narrow {name}, 2 s: moved {moved:e} m");
        assert!(moved < 1e-6, "on a narrow {name}: moved {moved} m");
    }
}
