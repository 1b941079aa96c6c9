//! Stage 3, a correction of parry's manifolds on compounds: where two parts of a compound meet
//! face to face — the tiles of a floor, the blocks of a level — the faces they share are cuts
//! inside the union, and no contact may push out through one.
//!
//! parry answers each part on its own. A box sliding over a floor of box tiles met the next
//! tile's side face at every seam (parry's box–box test takes the axis of least overlap, the
//! seam's, until the box is over the tile by more than it sinks in) and stopped after 0.61 m
//! where on one slab it slides 1.50 m; a ball rolling over the seams lost 0.31 m/s. parry's
//! [`CompoundFlags::FIX_INTERNAL_EDGES`] computes each part's cone of outward normals of the
//! union, but its box–box test ignores them, and its convex–convex test, given them, drops the
//! points the turned normal makes more than five times deeper than GJK's: a hull resting on
//! the tiles lost its contacts. So the cones are computed by parry once per collider
//! ([`part_cones`]) and applied here.
//!
//! Between two compounds (a bar of two cubes sliding over the tiles) each side's cone is asked,
//! and the first that turns the normal by more than round-off decides.
//!
//! Owns the test of a manifold's normal against its part's cone and the contact that replaces
//! it where the normal pointed through a cut: the other shape's points against the plane of
//! the part's face the normal is turned onto — parry's points on a flat feature, a lying
//! cylinder's or capsule's line (`refine`) clipped to the part, a curved side's lowest point.
//! Knows nothing of caches, reduction or bodies.

use std::sync::Arc;

use bevy_math::{DQuat, DVec3, Vec3};
use parry3d::query::ContactManifold;
use parry3d::query::details::NormalConstraints;
use parry3d::shape::{Compound, CompoundFlags, CompoundPseudoNormals, Shape, ShapeType};

use super::reduction::{DEPTH_SLACK, deepest};
use super::refine::{FACE_NORMAL, FacePlane, LINE_END_IDS, TouchPoint, lying, nearest_face, part, side_on_face};

/// Each part's cone of outward normals of the union (`None` for a part with curved sides,
/// which shares no face).
pub(crate) type PartCones = Arc<[Option<CompoundPseudoNormals>]>;

/// The cones of `compound`'s parts, if any two of its parts share a face; else `None`, since
/// a part's own faces then bound every normal parry gives it. parry computes them under the
/// flag, and the flag is cleared again, so that parry does not apply them itself.
pub(crate) fn part_cones(compound: &mut Compound) -> Option<PartCones> {
    compound.set_flags(CompoundFlags::FIX_INTERNAL_EDGES, None);
    let cones: Vec<_> = (0..compound.shapes().len() as u32)
        .map(|i| compound.part_normal_constraints(i).cloned())
        .collect();
    compound.set_flags(CompoundFlags::empty(), None);
    let has_cut = compound.shapes().iter().zip(&cones).any(|((_, part), cone)| {
        let faces = match part.shape_type() {
            ShapeType::Cuboid => 6,
            _ => part.as_convex_polyhedron().map_or(0, |hull| hull.faces().len()),
        };
        cone.as_ref().is_some_and(|cone| cone.boundary_faces.len() < faces)
    });
    has_cut.then(|| cones.into())
}

fn part_cone(cones: Option<&PartCones>, subshape: u32) -> Option<&CompoundPseudoNormals> {
    cones?.get(subshape as usize)?.as_ref()
}

/// How far, as `1 − cos`, a cone may turn a normal and leave it standing: parry's normals on a
/// part's own face are a few µrad off in `f32` (3e-6 rad seen), and the cone turns them onto the
/// face. Turned that little, the normal is the part's own face's, and the other side's cone may
/// still have to turn it (two compounds).
const ROUND_OFF_TURN: f64 = 1e-10;

/// Where `manifold`'s normal out of a compound part (of `first` or `second`, in parry's order,
/// with `cones` their parts' cones and at the world rotations and translations of the parts
/// touching) points through a cut, the points that replace it, written to `points`: `Some(true)`
/// with them, `Some(false)` when the manifold is dropped (the part lies buried in the union, or
/// the face lies where the shapes do not meet), `None` when parry's manifold stands.
pub(super) fn across_seam(
    manifold: &ContactManifold<(), ()>,
    (first, second): (&dyn Shape, &dyn Shape),
    (cones1, cones2): (Option<&PartCones>, Option<&PartCones>),
    pose1: (DQuat, DVec3),
    pose2: (DQuat, DVec3),
    points: &mut Vec<(TouchPoint, u64)>,
) -> Option<bool> {
    if manifold.points.is_empty() {
        return None;
    }
    // The side whose part's cone turns the normal (for two compounds, the first that does), as:
    // whether it is parry's first, its shape and subshape, the other's, the normal turned,
    // whether it was, and the other's radius if it is a cylinder or a capsule.
    let mut chosen = None;
    for flat_first in [true, false] {
        let ((flat, flat_subshape, outward, cones), (other, other_subshape)) = if flat_first {
            (
                (first, manifold.subshape1, manifold.local_n1, cones1),
                (second, manifold.subshape2),
            )
        } else {
            (
                (second, manifold.subshape2, manifold.local_n2, cones2),
                (first, manifold.subshape1),
            )
        };
        let Some(cone) = part_cone(cones, flat_subshape) else {
            continue;
        };
        let Some(turned) = cone.project_local_normal(outward) else {
            points.clear();
            return Some(false);
        };
        // A cylinder's side or a capsule goes through GJK, whose normal is never quite the
        // face's: their exact line is taken wherever the normal is a face's, turned or not.
        let turned_by_cone = turned.as_dvec3().dot(outward.as_dvec3()) < 1.0 - ROUND_OFF_TURN;
        let lying_other = lying(other, other_subshape).map(|shape| shape.axis().2);
        if turned_by_cone || lying_other.is_some() {
            chosen = Some((
                flat_first,
                flat,
                flat_subshape,
                other,
                other_subshape,
                turned,
                turned_by_cone,
                lying_other,
            ));
            break;
        }
    }
    let (flat_first, flat, flat_subshape, other, other_subshape, turned, turned_by_cone, lying_other) = chosen?;
    // Turned onto a face of the part, the contact is that face's plane; turned into the cone of
    // one of the union's own convex edges, there is no plane to take, and parry's answer stands.
    let (face, on_face) = nearest_face(flat, flat_subshape, turned)?;
    if face.dot(turned) < 1.0 - FACE_NORMAL {
        return None;
    }
    let ((flat_rotation, flat_translation), other_pose) = if flat_first { (pose1, pose2) } else { (pose2, pose1) };
    let plane = FacePlane::new(flat_first, (face, on_face), (flat_rotation, flat_translation));
    points.clear();
    let other = part(other, other_subshape);
    if lying_other.is_some() {
        match side_on_face(manifold, (first, second), pose1, pose2, Some((face, on_face))) {
            // Along the face: the line, clipped to this part, so that a line across a seam is
            // shared between the parts on either side.
            Some(line) => {
                let pose = (flat_rotation, flat_translation);
                if let Some((ends, _)) = plane.clip(part(flat, flat_subshape), pose, line) {
                    points.extend(ends.into_iter().zip(LINE_END_IDS));
                }
            }
            // A cylinder's cap down, flat.
            None if turned_by_cone => plane.parrys_points(manifold, other_pose, points),
            None => return None,
        }
    } else if matches!(
        other.shape_type(),
        ShapeType::Cuboid | ShapeType::ConvexPolyhedron | ShapeType::Triangle
    ) {
        plane.parrys_points(manifold, other_pose, points);
    } else {
        // A curved side touches the plane at its lowest point along the turned normal.
        let (other_rotation, other_translation) = other_pose;
        let towards_face: Vec3 = (other_rotation.inverse() * -plane.normal).as_vec3();
        let lowest = other.as_support_map()?.local_support_point_toward(towards_face);
        points.push((plane.touch(other_translation + other_rotation * lowest.as_dvec3()), 0));
    }
    // A normal along a cut is as near the face behind the part as the one the other shape
    // is on, and may be turned onto the wrong one: a hull sliding over a seam was put a tile's
    // thickness deep. No contact of parry's lies there: drop it. parry's own depth for a
    // cylinder or a capsule comes from GJK, to about 1e-3 of its radius.
    let deepest = deepest(&manifold.points);
    let slack = DEPTH_SLACK.max(lying_other.unwrap_or(0.0) * 1e-2);
    if points.iter().any(|(point, _)| point.gap < (deepest - slack) as f64) {
        points.clear();
        return Some(false);
    }
    Some(true)
}
