//! Stage 3, a correction between parry's manifolds and their reduction: a cylinder standing on
//! its cap on a face — of a box, a hull, another cylinder's cap, a mesh's or height field's
//! triangle, a compound's part — touches at four points of its rim, fixed on the cylinder, each
//! measured against the plane of the face and kept where it stands over the face.
//!
//! parry approximates a cap by a square turned to the azimuth of GJK's closest point, and on a
//! composite it does so one triangle or part at a time: each triangle under the cap clipped its
//! own square, turned its own way, and added GJK's closest point. A contact plane then held up to
//! eight points at places that changed from step to step, and the warm start, carried by point
//! ids, no longer held the cylinder: 25 cylinders standing on a flat mesh, height field or tiles
//! were smoothed in every step and iterated in most. On a single face parry holds its square
//! while the cylinder does not roll, but at whatever azimuth GJK gave first, and 100 cylinders
//! resting on a slab were smoothed in two steps of three; with the rim points, in none.
//!
//! Knows nothing of caches, reduction or bodies.

use bevy_math::{DQuat, DVec3, Vec3};
use parry3d::query::ContactManifold;
use parry3d::shape::{Shape, Triangle, TypedShape};

use super::reduction::deepest;
use super::refine::{FACE_NORMAL, FacePlane, TouchPoint, lies_on, nearest_face, part};

/// Feature ids of the rim points, apart from any id parry gives.
const RIM_IDS: [u64; 4] = [1 << 33, 1 << 33 | 1, 1 << 33 | 2, 1 << 33 | 3];

/// How far a rim point may lie off the face it stands over and still count as over it (see
/// `refine::lies_on`). A point over an edge two triangles share then comes from both, once the
/// plane's points merge.
const OVER_FACE: f32 = 2e-6;

/// How much deeper than parry's deepest point a cap may lie under a face's plane and still
/// stand on that face, as a fraction of the cylinder's radius: a cylinder upright beside a box
/// has its cap a whole height below the box's top face.
const DEPTH_SLACK: f64 = 1e-2;

/// Where `manifold`'s shapes (parry's order, at these world rotations and translations) are a
/// cylinder standing on its cap, to [`FACE_NORMAL`], on a face of the other shape's triangle or
/// part: the rim points over that face, written to `points`, in parry's order. Not on a single
/// shape's face that misses a rim point, nor on a compound's part that misses all four and lies
/// under the cap's centre.
///
/// The face is the one the cylinder's axis is normal to, not the one nearest parry's normal: a
/// rim point exactly over the seam of two tiles touches the next tile's edge, and parry's normal
/// there is that tile's side face.
pub(super) fn cap_on_face(
    manifold: &ContactManifold<(), ()>,
    (first, second): (&dyn Shape, &dyn Shape),
    pose1: (DQuat, DVec3),
    pose2: (DQuat, DVec3),
    points: &mut Vec<(TouchPoint, u64)>,
) -> bool {
    if manifold.points.is_empty() {
        return false;
    }
    let cylinder_first = part(first, manifold.subshape1).as_cylinder();
    let (cylinder, (flat, flat_subshape), cylinder_pose, flat_pose) = match cylinder_first {
        Some(cylinder) => (cylinder, (second, manifold.subshape2), pose1, pose2),
        None => match part(second, manifold.subshape2).as_cylinder() {
            Some(cylinder) => (cylinder, (first, manifold.subshape1), pose2, pose1),
            None => return false,
        },
    };
    let (rotation, translation) = cylinder_pose;
    let flat_rotation = flat_pose.0;
    let axis = rotation * DVec3::Y;
    let deepest = deepest(&manifold.points) as f64;
    let radius = cylinder.radius as f64;
    // The face out of which the cylinder stands, along its axis one way or the other.
    let standing = [axis, -axis].into_iter().find_map(|out_of_face| {
        let towards = (flat_rotation.inverse() * out_of_face).as_vec3();
        let plane = FacePlane::new(
            cylinder_first.is_none(),
            nearest_face(flat, flat_subshape, towards)?,
            flat_pose,
        );
        let cap_centre = translation - out_of_face * cylinder.half_height as f64;
        let stands = plane.normal.dot(out_of_face) >= 1.0 - FACE_NORMAL as f64
            && plane.gap(cap_centre) >= deepest - DEPTH_SLACK * radius
            && plane.gap(translation) > 0.0;
        stands.then_some((plane, cap_centre))
    });
    let Some((plane, cap_centre)) = standing else {
        return false;
    };
    let rim = [DVec3::X, DVec3::Z, DVec3::NEG_X, DVec3::NEG_Z].map(|along| rotation * along * radius);
    let over = |point: DVec3| {
        let touch = plane.touch(point);
        over_face(flat, flat_subshape, plane.on_flat_local(&touch, flat_pose)).then_some(touch)
    };
    points.clear();
    for (offset, id) in rim.into_iter().zip(RIM_IDS) {
        points.extend(over(cap_centre + offset).map(|touch| (touch, id)));
    }
    // The rim is the contact where the face reaches beyond it, or where other triangles or parts
    // carry the rim points this one misses. A face that misses some and that nothing else
    // carries — a pedestal narrower than the cap, a compound's part under the cap's centre — is
    // left to parry, whose square is clipped to it: the rim alone would hold nothing.
    match flat.as_typed_shape() {
        TypedShape::TriMesh(_) | TypedShape::HeightField(_) => true,
        TypedShape::Compound(_) => !points.is_empty() || over(cap_centre).is_none(),
        _ => points.len() == rim.len(),
    }
}

/// Whether `local`, a point of a face's plane in the frame of `shape`'s part or triangle
/// `subshape`, lies on that part or triangle to [`OVER_FACE`].
fn over_face(shape: &dyn Shape, subshape: u32, local: Vec3) -> bool {
    let on = |shape: &dyn Shape| lies_on(shape, local, true, OVER_FACE);
    let triangle = |triangle: Triangle| on(&triangle);
    match shape.as_typed_shape() {
        TypedShape::TriMesh(mesh) => triangle(mesh.triangle(subshape)),
        TypedShape::HeightField(field) => field.triangle_at_id(subshape).is_some_and(triangle),
        _ => on(part(shape, subshape)),
    }
}
