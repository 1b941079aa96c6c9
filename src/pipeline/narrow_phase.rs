//! Stage 3: contact points for each candidate pair, from parry3d's persistent contact manifolds.
//!
//! Owns the per-pair manifold caches (parry reuses their points while a pair turns little, except
//! where a shape rolls; dropped when either collider changes), the speculative margin, and the
//! stable id of each point (pair + feature ids) that the solver warm starts by, and asks parry
//! again when its answer is suspect or empty (the last resorts [`super::lost_contact`]'s), and
//! each convex pair's normal of the last step, against which a reversed one is caught. Reading
//! a manifold is [`super::manifold_view`]'s, its corrections [`super::caps`]', [`super::seams`]'
//! and [`super::refine`]'s, which points of it are kept [`super::reduction`]'s. Produces
//! [`GeneratedContact`]s; knows nothing of islands or impulses.

use bevy_platform::collections::HashMap;
use std::time::Instant;

use bevy_ecs::prelude::*;
use bevy_math::{DVec3, Vec3};
use parry3d::math::Pose;
use parry3d::query::{
    ContactManifold, ContactManifoldsWorkspace, DefaultQueryDispatcher, PersistentQueryDispatcher, TrackedContact,
};
use parry3d::shape::{Shape, ShapeType};

use super::PhysicsWorld;
use super::lost_contact::{DRAWN_APART, ask_drawn_apart, ask_each_triangle, read_given_up_triangles};
use super::manifold_view::{ManifoldView, WorldPose};
use super::reduction::{Candidate, Reduction, reverse, reversed, suspect};
use super::refine::{TouchPoint, part};
use super::separation::{astray, centres_apart};
use super::shape_mass::farthest;
use super::valleys::{read_by_plane, read_valley_triangles};
use super::world::SimBody;
use crate::resources::PhysicsSettings;

/// One contact point between bodies `body1` and `body2` (indices into the step's bodies).
#[derive(Clone, Copy, Debug)]
pub(crate) struct GeneratedContact {
    pub body1: usize,
    pub body2: usize,
    pub point: DVec3,
    /// Unit normal from `body2` towards `body1`.
    pub normal: DVec3,
    /// Signed distance, m: negative is penetration.
    pub gap: f64,
    pub friction: f64,
    pub restitution: f64,
    /// Rolling and torsional coefficients of the pair, m.
    pub rolling: f64,
    pub torsional: f64,
    pub id: u64,
    /// Pair and sub-shapes: shared by the points of one manifold.
    pub manifold: u64,
}

#[derive(Default)]
struct PairCache {
    manifolds: Vec<ContactManifold<(), ()>>,
    workspace: Option<ContactManifoldsWorkspace>,
    seen: bool,
    /// Whether the pair's manifolds had a point last step: kept apart from `manifolds`, which a
    /// step that asked with the shapes swapped leaves empty.
    touched: bool,
    /// The normal of the pair's one manifold last step, in world coordinates and the pair's
    /// order: `None` for composite pairs, whose manifolds face every way, and pairs that did not
    /// touch.
    normal: Option<DVec3>,
    /// The least gap among the points of the pair's one manifold last step, m, when it had any;
    /// `None` for composite pairs.
    deepest: Option<f32>,
}

impl PairCache {
    /// Drops what parry would otherwise carry into the next query of the pair.
    fn forget(&mut self) {
        self.manifolds.clear();
        self.workspace = None;
    }
}

#[derive(Default)]
pub(crate) struct NarrowPhase {
    cache: HashMap<(Entity, Entity), PairCache>,
    reduction: Reduction,
    /// A pair's manifolds asked for with its shapes swapped, for this step only.
    swapped_manifolds: Vec<ContactManifold<(), ()>>,
    /// A pair's manifolds asked for swapped and drawn apart, for this step only.
    drawn_manifolds: Vec<ContactManifold<(), ()>>,
    /// The points replacing one manifold (`ManifoldView::replaced`), with their feature ids.
    replaced_points: Vec<(TouchPoint, u64)>,
    /// Per body this step, `ωᵀ I ω`, twice its energy of turning (`turning_reach`): once a body,
    /// not once each of its pairs.
    spin_energies: Vec<f64>,
}

/// Whether the point where a shape touches moves over its surface as it rolls. parry keeps a
/// manifold's points fixed on both bodies until the normal has turned by 1° or a point has
/// drifted by 1 mm since they were computed (`try_update_contacts`). Flat faces touch at corners
/// and edges that move with the bodies, so for them that stays close; a curved surface touches
/// at another material point as it rolls, while the old one hardly drifts. A capsule lying on
/// the ground then touched up to a degree of rolling behind its lowest point, and its weight's
/// lever about that point rolled it ever faster: from round-off at rest to 0.14 m/s within 6 s.
fn rolls(shape: &dyn Shape) -> bool {
    match shape.shape_type() {
        ShapeType::Cuboid
        | ShapeType::ConvexPolyhedron
        | ShapeType::TriMesh
        | ShapeType::HeightField
        | ShapeType::Triangle
        | ShapeType::Polyline
        | ShapeType::Segment
        | ShapeType::HalfSpace
        | ShapeType::Voxels => false,
        ShapeType::Compound => shape
            .as_compound()
            .is_some_and(|compound| compound.shapes().iter().any(|(_, part)| rolls(part.as_ref()))),
        _ => true,
    }
}

/// Whether `shape` (its part `subshape`, for a compound) rolls where it touches along
/// `local_normal`, its outward normal there in the part's frame. A cylinder's caps are flat and
/// only its side rolls: the caps' points, recomputed every step, came from a square whose
/// corners parry turns to the azimuth of that step's closest point, so they moved round the
/// rim from step to step, and a stack of ten upright cylinders never came to rest.
fn rolls_at(shape: &dyn Shape, subshape: u32, local_normal: Vec3) -> bool {
    let part = part(shape, subshape);
    match part.shape_type() {
        // The side is where parry's own support features take it to be.
        ShapeType::Cylinder => local_normal.y.abs() < 0.5,
        _ => rolls(part),
    }
}

/// The least gap among the points of `manifolds`, m (infinite if they hold none).
fn least_gap(manifolds: &[ContactManifold<(), ()>]) -> f32 {
    manifolds
        .iter()
        .flat_map(|manifold| &manifold.points)
        .map(|point| point.dist)
        .fold(f32::INFINITY, f32::min)
}

/// How much nearer over one step two bodies' surfaces can come, m: `prediction` (the margin and
/// their approach) and what their turning sweeps, each shape's farthest point from its origin
/// moving at `|ω| r`.
fn reach(
    body1: &SimBody,
    body2: &SimBody,
    (shape1, shape2): (&dyn Shape, &dyn Shape),
    prediction: f32,
    dt: f64,
) -> f32 {
    let swept = |body: &SimBody, shape: &dyn Shape| {
        let sphere = shape.compute_local_bounding_sphere();
        body.angular_velocity.length() as f32 * (sphere.center.length() + sphere.radius)
    };
    prediction + (swept(body1, shape1) + swept(body2, shape2)) * dt as f32
}

/// How fast, at most, a point of `body`'s `shape` can move by turning in this step, m/s: the
/// whole of its kinetic energy relative to the other body (moving at `other_velocity`) spent on
/// turning it the way that moves its shape fastest (`shape_mass::turning_sweep`). An impact
/// turns a falling body about the point it strikes, and its far side swings down faster than
/// anything moved before the step: a five-sided prism landing on a corner at 5 m/s swung the
/// far corners of its face, beyond the margin when the step began, 5 mm into the slab. A body
/// the solver does not move turns only as it does.
/// `spin_energy` is the body's `ωᵀ I ω`.
fn turning_reach((body, spin_energy): (&SimBody, f64), shape: &dyn Shape, other_velocity: DVec3) -> f32 {
    let speed = if body.kind.is_dynamic() {
        let twice_energy = body.mass * (body.linear_velocity - other_velocity).length_squared() + spin_energy;
        (twice_energy * body.turning_sweep).sqrt()
    } else if body.angular_velocity == DVec3::ZERO {
        0.0
    } else {
        body.angular_velocity.length() * farthest(shape, body.local_center_of_mass)
    };
    if speed.is_finite() { speed as f32 } else { 0.0 }
}

/// How near, as a cosine (2.6°), a convex pair's normal must stay to its last step's for the
/// check on its extremes (`separation::astray`) to be spared: made for every pair, the check
/// (two support-map queries) cost about 0.04 ms of the 0.62 ms step of 100 resting stacks of
/// hulls and cylinders, and spared, the poured-cylinder test's four draws stepped the same.
const STEADY_NORMAL: f64 = 0.999;

/// How much deeper than parry's one-shot query a convex pair's manifold may read, m, before it
/// counts as strayed. Where both are right they agreed within tens of µm in a poured cylinder
/// pile; on overlaps of centimetres they differed by up to 0.9 mm, and asking again then read
/// the same.
const STRAYED_DEPTH: f32 = 5e-4;

/// The gap parry's one-shot query, which keeps no points from the last step, finds for a convex
/// pair whose manifolds read `least` deeper than [`STRAYED_DEPTH`] (in the pair's order, `pos12`
/// the second's pose in the first's frame): at least `prediction` where it finds no contact. A
/// manifold deeper than that by more than [`STRAYED_DEPTH`] has strayed: in a poured pile, two
/// cylinders, one's cap against the other's side, read 3.3 mm deep, and 1–3 mm over the next
/// steps, where that query had them 0.8 mm apart with a normal about 40° from the manifold's.
fn found_gap(least: f32, pos12: &Pose, (shape1, shape2): (&dyn Shape, &dyn Shape), prediction: f32) -> Option<f32> {
    if least >= -STRAYED_DEPTH {
        return None;
    }
    match parry3d::query::contact(&Pose::IDENTITY, shape1, pos12, shape2, prediction) {
        Ok(Some(contact)) => Some(contact.dist),
        Ok(None) => Some(prediction),
        Err(_) => None,
    }
}

/// Whether any of a pair's manifolds holds a point.
fn any_point(manifolds: &[ContactManifold<(), ()>]) -> bool {
    manifolds.iter().any(|manifold| !manifold.points.is_empty())
}

/// Whether a pair with this shape may need its manifolds corrected (`seams`, `refine`): boxes
/// and balls against each other come from parry's exact tests. Skipping the checks there took
/// the resting 210-box pyramid's narrow phase from 126 to 104 µs a step.
fn may_refine(shape: &dyn Shape) -> bool {
    !matches!(shape.shape_type(), ShapeType::Cuboid | ShapeType::Ball)
}

/// Whether parry gives the pair one manifold per triangle or part of this shape that the other
/// overlaps.
fn is_composite(shape: &dyn Shape) -> bool {
    matches!(
        shape.shape_type(),
        ShapeType::TriMesh | ShapeType::HeightField | ShapeType::Compound | ShapeType::Polyline | ShapeType::Voxels
    )
}

pub(super) fn mix(hash: u64, value: u64) -> u64 {
    (hash ^ value).wrapping_mul(0x100_0000_01b3).rotate_left(29)
}

pub(crate) fn narrow_phase(mut world: ResMut<PhysicsWorld>, settings: Res<PhysicsSettings>) {
    let start = Instant::now();
    let world = &mut *world;
    let dt = world.dt;
    world.contacts.clear();
    for cache in world.narrow_phase.cache.values_mut() {
        cache.seen = false;
    }
    let spin_energies = &mut world.narrow_phase.spin_energies;
    spin_energies.clear();
    spin_energies.extend(world.bodies.iter().map(|body| {
        let own_spin = body.rotation.inverse() * body.angular_velocity;
        own_spin.dot(body.local_inertia * own_spin)
    }));
    for &(a, b) in &world.pairs {
        let (body1, body2) = (&world.bodies[a], &world.bodies[b]);
        let (Some(c1), Some(c2)) = (&body1.collider, &body2.collider) else {
            continue;
        };
        if world
            .joint_filter
            .contains(&super::joints::ordered(body1.entity, body2.entity))
        {
            continue;
        }
        let NarrowPhase {
            cache,
            reduction,
            swapped_manifolds,
            drawn_manifolds,
            replaced_points,
            spin_energies,
        } = &mut world.narrow_phase;
        let cache = cache.entry((body1.entity, body2.entity)).or_default();
        cache.seen = true;
        if body1.collider_changed || body2.collider_changed {
            // parry would carry the old shape's points until the pair turned or moved, and the
            // kept normal is the old shape's.
            cache.forget();
            cache.normal = None;
            cache.deepest = None;
        }
        let relative_speed = (body1.linear_velocity - body2.linear_velocity).length() as f32;
        let (shape1, shape2) = (c1.shape().as_ref(), c2.shape().as_ref());
        let prediction = settings.contact_margin
            + (relative_speed
                + turning_reach((body1, spin_energies[a]), shape1, body2.linear_velocity)
                + turning_reach((body2, spin_energies[b]), shape2, body1.linear_velocity))
                * dt as f32;
        if rolls(shape1) || rolls(shape2) {
            for manifold in &mut cache.manifolds {
                if rolls_at(shape1, manifold.subshape1, manifold.local_n1)
                    || rolls_at(shape2, manifold.subshape2, manifold.local_n2)
                {
                    manifold.mark_shapes_deformed();
                }
            }
        }
        let (pose1, pose2) = (WorldPose::of(body1), WorldPose::of(body2));
        let pos12 = pose1.inv_mul(&pose2);
        let touched = cache.touched;
        if DefaultQueryDispatcher
            .contact_manifolds(
                &pos12,
                shape1,
                shape2,
                prediction,
                &mut cache.manifolds,
                &mut cache.workspace,
            )
            .is_err()
        {
            continue;
        }
        read_given_up_triangles(&pos12, shape1, shape2, prediction, &mut cache.manifolds);
        read_valley_triangles(&pos12, shape1, shape2, prediction, &mut cache.manifolds);
        // A wrong normal from parry's GJK (see `reduction::DEPTH_SLACK`) is a numerical accident
        // of one configuration in one order: in every such step seen, parry asked the other way
        // round got it right. So is a pair that touched last step and now has no point at all:
        // a wheel rolling on a slab got none from GJK every few dozen steps, and fell by g·dt²
        // (2.7 mm at 60 Hz). This step only; the next asks in the usual order again. Not for
        // two shapes lying side by side or across each other, whose contact comes from their
        // axes whatever parry gave: for three cylinders piled at rest parry gave the top one a
        // single closest point with a normal 36° astray, asked the other way round no point at
        // all, and the top one fell 0.75 mm into its neighbour. A pair lost in both orders has
        // its last resort (`lost_contact`); a normal that turned inside out since the last step
        // is read the other way round (`reduction::reverse`). So, too, is a convex pair's
        // manifold that strayed since the last step further than the bodies moved: its least
        // gap deeper by more than their `reach` (two cylinders at rest 2e-5 m deep read 7.8e-2 m
        // deep, the normal 100° off), or its normal turned against the last step's beyond the
        // touching distance where `reverse` applies (two cylinders 1.6 mm apart read 0.45 mm
        // deep, the normal 98° off), or its least gap deeper than parry's one-shot query finds
        // (`found_gap`). So, too, is a manifold whose normal the shapes' extremes contradict
        // (`separation::astray`), and where the other order's answer is implausible too (astray,
        // or suspect), the pair is asked once more drawn apart: two upright cylinders stacked
        // cap on cap, exactly touching, got a horizontal normal in both orders, and the upper
        // one fell 2.7 mm.
        let lost = touched && !any_point(&cache.manifolds);
        let composite = is_composite(shape1) || is_composite(shape2);
        let refined = may_refine(shape1) || may_refine(shape2);
        let least = least_gap(&cache.manifolds);
        let deepened = cache
            .deepest
            .is_some_and(|before| least < before - reach(body1, body2, (shape1, shape2), prediction, dt));
        // The one manifold's normal and the pair's last one, for a convex pair that touched.
        let normals = match (cache.manifolds.as_slice(), cache.normal) {
            ([manifold], Some(before)) if !composite => ManifoldView::new(manifold, false, pose1, pose2)
                .normal()
                .map(|now| (manifold, now, before)),
            _ => None,
        };
        let turned =
            normals.is_some_and(|(manifold, now, before)| now.dot(before) < 0.0 && !reversed(manifold, now, before));
        // A normal within 2.6° of the last step's, which was taken, is no accident of this step.
        let steady = normals.is_some_and(|(_, now, before)| now.dot(before) > STEADY_NORMAL);
        let rebuilt = |manifold: &ContactManifold<(), ()>, swapped: bool| {
            ManifoldView::new(manifold, swapped, pose1, pose2).touches_by_axes((shape1, shape2))
        };
        // A convex pair's manifold whose normal the shapes' extremes contradict, where parry
        // does not read the pair exactly and the axes do not rebuild it.
        let astray_unrebuilt = |manifold: &ContactManifold<(), ()>, swapped: bool| {
            let parrys_order = if swapped { (shape2, shape1) } else { (shape1, shape2) };
            refined && !composite && astray(manifold, parrys_order) && !rebuilt(manifold, swapped)
        };
        // Or one whose normal parry's own points contradict.
        let suspect_unrebuilt =
            |manifold: &ContactManifold<(), ()>, swapped: bool| suspect(manifold) && !rebuilt(manifold, swapped);
        let implausible = |manifold: &ContactManifold<(), ()>, swapped: bool| {
            astray_unrebuilt(manifold, swapped) || suspect_unrebuilt(manifold, swapped)
        };
        let astray_here = !steady && cache.manifolds.iter().any(|manifold| astray_unrebuilt(manifold, false));
        let other_order = lost
            || deepened
            || turned
            || astray_here
            || cache
                .manifolds
                .iter()
                .any(|manifold| suspect_unrebuilt(manifold, false));
        let found = if other_order || composite {
            None
        } else {
            found_gap(least, &pos12, (shape1, shape2), prediction)
        };
        let swapped = other_order || found.is_some_and(|found| found > least + STRAYED_DEPTH);
        if swapped {
            swapped_manifolds.clear();
            let mut workspace = None;
            let pos21 = pose2.inv_mul(&pose1);
            let _ = DefaultQueryDispatcher.contact_manifolds(
                &pos21,
                shape2,
                shape1,
                prediction,
                swapped_manifolds,
                &mut workspace,
            );
            if lost && !any_point(swapped_manifolds) {
                match cache.normal {
                    // Kept for convex pairs only.
                    Some(normal) => {
                        let apart = (pose2.rotation.inverse() * normal * DRAWN_APART as f64).as_vec3();
                        ask_drawn_apart(&pos21, shape2, shape1, apart, prediction, swapped_manifolds);
                    }
                    None => ask_each_triangle(&pos21, shape2, shape1, prediction, swapped_manifolds),
                }
            } else if let [manifold] = swapped_manifolds.as_slice()
                && astray_here
                && implausible(manifold, true)
                && let Some(apart) = centres_apart(&pos21, (shape2, shape1), DRAWN_APART)
            {
                // Astray in this order, implausible in the other: GJK lost its way where the
                // shapes just touch. Drawn apart, its closest points are on their surfaces.
                ask_drawn_apart(&pos21, shape2, shape1, apart, prediction, drawn_manifolds);
                if let [drawn] = drawn_manifolds.as_slice()
                    && !implausible(drawn, true)
                {
                    std::mem::swap(swapped_manifolds, drawn_manifolds);
                }
            }
        }
        // The other order can stray further than this one: taken only where it reads nearer the
        // one-shot query. Two cylinders of a poured pile, their normal about 45° from both axes,
        // read 2.2 mm deep where that query had them 1.2 mm apart, and 6.6 cm deep the other way
        // round, the normal turned by 96°. The query was itself astray: from step to step it
        // alternated between that and the manifold's reading.
        let swapped =
            swapped && !found.is_some_and(|found| (least_gap(swapped_manifolds) - found).abs() > (least - found).abs());
        if swapped {
            cache.forget();
        }
        let manifolds = if swapped {
            swapped_manifolds
        } else {
            &mut cache.manifolds
        };
        cache.touched = any_point(manifolds);
        // Unswapped, these are the manifolds whose least gap the checks above took.
        cache.deepest = (!composite && cache.touched).then(|| if swapped { least_gap(manifolds) } else { least });
        cache.normal = match manifolds.as_mut_slice() {
            [manifold] if !composite && cache.touched => {
                let now = ManifoldView::new(manifold, swapped, pose1, pose2).normal();
                match now.zip(cache.normal) {
                    Some((now, before)) if reversed(manifold, now, before) => {
                        reverse(manifold);
                        Some(-now)
                    }
                    _ => now,
                }
            }
            _ => None,
        };
        let manifolds = &*manifolds;
        let friction = body1.friction.combine_rule.combine(
            body2.friction.combine_rule,
            body1.friction.coefficient,
            body2.friction.coefficient,
        ) as f64;
        let restitution = body1.restitution.combine_rule.combine(
            body2.restitution.combine_rule,
            body1.restitution.coefficient,
            body2.restitution.coefficient,
        ) as f64;
        let (r1, r2) = (body1.rolling_friction, body2.rolling_friction);
        let combined = |a: f32, b: f32| f64::from(r1.combine_rule.combine(r2.combine_rule, a, b));
        let (rolling, torsional) = (combined(r1.rolling, r2.rolling), combined(r1.torsional, r2.torsional));
        let pair_hash = mix(
            mix(0xcbf2_9ce4_8422_2325, body1.entity.to_bits()),
            body2.entity.to_bits(),
        );
        let contacts = &mut world.contacts;
        let mut contact = |c: &Candidate, manifold: u64| {
            contacts.push(GeneratedContact {
                body1: a,
                body2: b,
                point: c.point,
                normal: c.normal,
                gap: c.gap,
                friction,
                restitution,
                rolling,
                torsional,
                id: c.id,
                manifold,
            });
        };
        let cones = (c1.part_cones(), c2.part_cones());
        for view in manifolds.iter().map(|m| ManifoldView::new(m, swapped, pose1, pose2)) {
            let Some(normal) = view.normal() else { continue };
            let (subshape1, subshape2) = view.subshapes();
            let manifold_hash = mix(mix(pair_hash, subshape1 as u64), subshape2 as u64);
            let touching = |point: &TouchPoint, feature: u64| Candidate {
                point: (point.on_first + point.on_second) * 0.5,
                on_surface2: point.on_second,
                normal: point.normal,
                gap: point.gap,
                id: mix(manifold_hash, feature),
            };
            if refined
                && !read_by_plane(view.manifold)
                && view.replaced((shape1, shape2), cones, (composite, prediction as f64), replaced_points)
            {
                let points = replaced_points.iter().map(|(point, feature)| touching(point, *feature));
                reduction.take_points(points, composite, |c| contact(c, manifold_hash));
                continue;
            }
            let candidate = |point: &TrackedContact<()>| {
                let (p1, p2, (fid1, fid2)) = view.point(point);
                Candidate {
                    point: (p1 + p2) * 0.5,
                    on_surface2: p2,
                    normal,
                    gap: point.dist as f64,
                    id: mix(mix(manifold_hash, fid1 as u64), fid2 as u64),
                }
            };
            reduction.take_manifold(&view.manifold.points, composite, candidate, |c| {
                contact(c, manifold_hash)
            });
        }
        if composite {
            reduction.drain(pair_hash, |candidate, plane| contact(candidate, plane));
        }
    }
    world.narrow_phase.cache.retain(|_, cache| cache.seen);
    world.times.narrow_phase = start.elapsed();
}

#[cfg(test)]
mod tests {
    use super::*;
    use parry3d::shape::Cylinder;

    /// A cylinder lying across another's cap, `apart` m above it (negative: into it).
    fn across_a_cap(apart: f32) -> Pose {
        Pose::from_parts(
            Vec3::new(0.1, 0.75 + apart, 0.0),
            bevy_math::Quat::from_rotation_z(std::f32::consts::FRAC_PI_2),
        )
    }

    /// A manifold that reads 3.3 mm deep where the cylinders lie 0.8 mm apart, or 2.3 mm deeper
    /// than they overlap, has strayed; one that reads what they are has not.
    #[test]
    fn a_manifold_deeper_than_the_shapes_lie_has_strayed() {
        let cylinder = Cylinder::new(0.5, 0.25);
        let shapes: (&dyn Shape, &dyn Shape) = (&cylinder, &cylinder);
        let strayed = |least, apart| {
            found_gap(least, &across_a_cap(apart), shapes, 0.01).is_some_and(|found| found > least + STRAYED_DEPTH)
        };
        assert!(strayed(-3.3e-3, 8e-4));
        assert!(strayed(-3.3e-3, -1e-3));
        assert!(!strayed(-1e-3, -1e-3));
        assert!(!strayed(-1.2e-3, -1e-3), "within the tolerance");
        assert!(!strayed(-3e-4, 5e-2), "too shallow to ask");
    }
}
