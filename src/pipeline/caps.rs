//! Stage 3, a correction between parry's manifolds and their reduction: a cylinder standing on
//! its cap on a face — of a box, a hull, another cylinder's cap, a mesh's or height field's
//! triangle, a compound's part — touches at four points of its rim, fixed on the cylinder, each
//! measured against the plane of the face and kept where it stands over the face
//! ([`cap_on_face`]). Tilted on its rim on a box's or a hull's face, on a flat stretch of a
//! mesh or on another cylinder's cap, it touches at the rim's lowest point, with seven more round
//! the rim turned with it ([`rim_on_face`]).
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
use parry3d::shape::{Cylinder, Shape, ShapeType, TypedShape};

use super::reduction::deepest;
use super::refine::{FACE_NORMAL, FacePlane, TouchPoint, lies_on, nearest_face, part, triangle_of};

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

/// Where one of `manifold`'s shapes (parry's order, at these world rotations and translations)
/// is a cylinder on a face of the other: standing on its cap ([`cap_on_face`]), else tilted on
/// its rim ([`rim_on_face`]); its points written to `points`.
pub(super) fn cylinder_on_face(
    manifold: &ContactManifold<(), ()>,
    shapes: (&dyn Shape, &dyn Shape),
    pose1: (DQuat, DVec3),
    pose2: (DQuat, DVec3),
    points: &mut Vec<(TouchPoint, u64)>,
) -> bool {
    CylinderOnFlat::of(manifold, shapes, pose1, pose2)
        .is_some_and(|on_flat| cap_on_face(manifold, &on_flat, points) || rim_on_face(manifold, &on_flat, points))
}

/// Where `on_flat` is a cylinder standing on its cap, to [`FACE_NORMAL`], on a face of the other
/// shape's triangle or part: the rim points over that face, written to `points`, in parry's
/// order. Not on a single shape's face that misses a rim point, nor on a compound's part that
/// misses all four and lies under the cap's centre.
///
/// The face is the one the cylinder's axis is normal to, not the one nearest parry's normal: a
/// rim point exactly over the seam of two tiles touches the next tile's edge, and parry's normal
/// there is that tile's side face.
fn cap_on_face(
    manifold: &ContactManifold<(), ()>,
    on_flat: &CylinderOnFlat,
    points: &mut Vec<(TouchPoint, u64)>,
) -> bool {
    let CylinderOnFlat {
        cylinder,
        cylinder_first,
        flat: (flat, flat_subshape),
        cylinder_pose,
        flat_pose,
    } = *on_flat;
    let (rotation, translation) = cylinder_pose;
    let flat_rotation = flat_pose.0;
    let axis = rotation * DVec3::Y;
    let deepest = deepest(&manifold.points) as f64;
    let radius = cylinder.radius as f64;
    // The face out of which the cylinder stands, along its axis one way or the other.
    let standing = [axis, -axis].into_iter().find_map(|out_of_face| {
        let towards = (flat_rotation.inverse() * out_of_face).as_vec3();
        let plane = FacePlane::new(!cylinder_first, nearest_face(flat, flat_subshape, towards)?, flat_pose);
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
    let over = |point: DVec3| on_flat.touch_over(&plane, point);
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
/// `subshape`, lies on that part or triangle to [`OVER_FACE`]: for a triangle, relative to its
/// farthest corner from the origin. parry projects onto a triangle in `f32` from its corners, and
/// a point inside a triangle of a 40 m floor came back 3.2 µm off itself: no rim point of a
/// cylinder standing across the floor's two triangles was over either, and it fell through the
/// floor for ten steps.
fn over_face(shape: &dyn Shape, subshape: u32, local: Vec3) -> bool {
    match shape.as_typed_shape() {
        TypedShape::TriMesh(_) | TypedShape::HeightField(_) => triangle_of(shape, subshape).is_some_and(|triangle| {
            let reach = [triangle.a, triangle.b, triangle.c]
                .map(Vec3::length)
                .into_iter()
                .fold(0.0, f32::max);
            projects_onto(&triangle, local, true, reach)
        }),
        _ => lies_on(part(shape, subshape), local, true, OVER_FACE),
    }
}

/// Whether `local`, a point in the frame of a mesh or height field, lies on it, to
/// [`OVER_FACE`] relative to its farthest reach from the origin, as [`over_face`] measures.
fn on_mesh(mesh: &dyn Shape, local: Vec3) -> bool {
    let aabb = mesh.compute_local_aabb();
    projects_onto(mesh, local, false, aabb.mins.length().max(aabb.maxs.length()))
}

/// Whether `shape` projects `local` onto itself to [`OVER_FACE`] of `reach` (at least 1 m),
/// the farthest from its origin the coordinates go from which parry projects.
fn projects_onto(shape: &dyn Shape, local: Vec3, solid: bool, reach: f32) -> bool {
    (shape.project_local_point(local, solid).point - local).length() <= OVER_FACE * reach.max(1.0)
}

/// A manifold's cylinder and the other shape, in parry's order.
#[derive(Clone, Copy)]
struct CylinderOnFlat<'a> {
    cylinder: &'a Cylinder,
    /// Whether the cylinder is parry's first shape.
    cylinder_first: bool,
    /// The other shape and the part or triangle of it the manifold is with.
    flat: (&'a dyn Shape, u32),
    cylinder_pose: (DQuat, DVec3),
    flat_pose: (DQuat, DVec3),
}

impl<'a> CylinderOnFlat<'a> {
    /// Where one of `manifold`'s shapes (parts) is a cylinder and the manifold holds a point.
    fn of(
        manifold: &ContactManifold<(), ()>,
        (first, second): (&'a dyn Shape, &'a dyn Shape),
        pose1: (DQuat, DVec3),
        pose2: (DQuat, DVec3),
    ) -> Option<Self> {
        if manifold.points.is_empty() {
            return None;
        }
        let first_part = part(first, manifold.subshape1).as_cylinder();
        Some(match first_part {
            Some(cylinder) => Self {
                cylinder,
                cylinder_first: true,
                flat: (second, manifold.subshape2),
                cylinder_pose: pose1,
                flat_pose: pose2,
            },
            None => Self {
                cylinder: part(second, manifold.subshape2).as_cylinder()?,
                cylinder_first: false,
                flat: (first, manifold.subshape1),
                cylinder_pose: pose2,
                flat_pose: pose1,
            },
        })
    }

    /// `point` measured against `plane`, a face of the flat shape's part or triangle, where it
    /// stands over that face.
    fn touch_over(&self, plane: &FacePlane, point: DVec3) -> Option<TouchPoint> {
        let touch = plane.touch(point);
        let (flat, subshape) = self.flat;
        over_face(flat, subshape, plane.on_flat_local(&touch, self.flat_pose)).then_some(touch)
    }
}

/// Where a tilted cap's rim points lie, in degrees round the rim from its lowest point.
///
/// Eight, the most `reduction` keeps of a manifold, and not four: each rim point holds only
/// itself, and the rim between two of them `φ` apart sags below the plane through them by
/// `r sin θ (1 − cos(φ/2))`, θ the tilt. Where the lowest point runs round the rim, that is
/// how deep it can go in a step: a disc of 0.3 m spinning at 5 rad/s and falling flat from
/// 20° sank its rim 12.5 mm into the ground with four points and 3.7 mm with eight evenly
/// spaced. Crowded towards the lowest point, where the rim touches next: a cylinder thrown
/// spinning onto a slab, wobbling on its rim as a coin does, its lowest point running about
/// 20° round a step, went 12.8 mm deep with eight evenly spaced and 1.6 mm with these.
pub(super) const TILTED_RIM_ROUND: [f64; 8] = [0.0, 15.0, -15.0, 50.0, -50.0, 110.0, -110.0, 180.0];

/// Ids of a tilted cap's rim points, in [`TILTED_RIM_ROUND`]'s order. Apart from [`RIM_IDS`],
/// whose points stay fixed on the cylinder.
const TILTED_RIM_IDS: [u64; 8] = [
    1 << 33 | 4,
    1 << 33 | 5,
    1 << 33 | 6,
    1 << 33 | 7,
    1 << 33 | 8,
    1 << 33 | 9,
    1 << 33 | 10,
    1 << 33 | 11,
];

/// The least cosine between a cylinder's axis and a face's normal at which its rim rests on the
/// face (60°). Leaning further, it rests on its side's ends, `refine::side_on_face`'s.
const RIM_LEAN: f64 = 0.5;

/// Where `on_flat` is a cylinder resting tilted on its rim on the face of a box, a hull, a mesh's
/// or a height field's triangle, or on another cylinder's cap (the one parry's normal leaves
/// within 60° of), its axis leaning from the face's normal by more than
/// [`FACE_NORMAL`] allows [`cap_on_face`] and less than [`RIM_LEAN`]: the rim's lowest point, and
/// seven more round from it ([`TILTED_RIM_ROUND`]), each measured against the face's plane and
/// kept where it stands over the face (on a mesh, over the triangles of the face's plane),
/// written to `points` in parry's order. Not where the lowest point lies off the face, or off
/// the triangles of its plane (on an edge, parry's answer stands), nor where it reads deeper
/// than parry's points on that face by more than [`DEPTH_SLACK`] of the radius and the rim's
/// sag between the corners of parry's square.
///
/// On triangles, parry clipped its square of the cap one triangle at a time: cylinders and discs
/// thrown onto a flat mesh went 14 and 23 mm into it, where on a slab they went 1.9 and 2.0 mm.
/// Onto a cylinder's cap, left to parry's square, they went 2.7 and 3.7 cm in. Where the lowest
/// point lies beyond the cap, the rims cross, and parry's answer stands.
///
/// The face is the one nearest parry's normal. parry's points for a rim are a square turned to
/// the azimuth of GJK's closest point when the pair was last computed, fixed on the cylinder
/// while it turns little: a cylinder rocking on its rim in a poured pile rested on two corners
/// with its lowest point between them 1.6 mm under the ground, and in the steps where parry
/// computed afresh, GJK's normal was 35° astray or its depths 2 mm shallow.
fn rim_on_face(
    manifold: &ContactManifold<(), ()>,
    on_flat: &CylinderOnFlat,
    points: &mut Vec<(TouchPoint, u64)>,
) -> bool {
    let CylinderOnFlat {
        cylinder,
        cylinder_first,
        flat: (flat, flat_subshape),
        cylinder_pose: (rotation, translation),
        flat_pose,
    } = *on_flat;
    let parrys_normal = if cylinder_first {
        manifold.local_n2
    } else {
        manifold.local_n1
    };
    let mesh = matches!(flat.shape_type(), ShapeType::TriMesh | ShapeType::HeightField);
    let face = match flat.as_typed_shape() {
        // Another cylinder's cap, the one parry's normal leaves from.
        TypedShape::Cylinder(other) if parrys_normal.y.abs() >= RIM_LEAN as f32 => {
            let normal = Vec3::Y * parrys_normal.y.signum();
            Some((normal, normal * other.half_height))
        }
        TypedShape::Cuboid(_) | TypedShape::ConvexPolyhedron(_) => nearest_face(flat, flat_subshape, parrys_normal),
        _ if mesh => nearest_face(flat, flat_subshape, parrys_normal),
        _ => None,
    };
    let Some(face) = face else {
        return false;
    };
    let plane = FacePlane::new(!cylinder_first, face, flat_pose);
    let axis = rotation * DVec3::Y;
    let out_of_face = if axis.dot(plane.normal) >= 0.0 { axis } else { -axis };
    let lean = out_of_face.dot(plane.normal);
    if !(RIM_LEAN..1.0 - FACE_NORMAL as f64).contains(&lean) || plane.gap(translation) <= 0.0 {
        return false;
    }
    let radius = cylinder.radius as f64;
    let cap_centre = translation - out_of_face * cylinder.half_height as f64;
    let down = -plane.normal;
    let lowest = (down - out_of_face * down.dot(out_of_face)).normalize();
    let quarter = out_of_face.cross(lowest);
    let lowest_point = cap_centre + lowest * radius;
    let touch = plane.touch(lowest_point);
    // On a mesh every triangle in the plane under the lowest point reads the whole rim, over
    // whichever triangles of that plane (the reduction merges their copies): the triangle under
    // it may have a manifold without points, and a triangle the rim is about to strike too.
    let on_plane = |touch: &TouchPoint| mesh && on_mesh(flat, plane.on_flat_local(touch, flat_pose));
    if on_flat.touch_over(&plane, lowest_point).is_some() {
        // parry's square may stand on the rim anywhere round it: the lowest point between two
        // of its corners lies deeper than they by the rim's sag over a quarter turn.
        let sag = radius * (1.0 - lean * lean).sqrt() * (1.0 - std::f64::consts::FRAC_1_SQRT_2);
        if touch.gap < deepest(&manifold.points) as f64 - DEPTH_SLACK * radius - sag {
            return false;
        }
    } else if !on_plane(&touch) {
        return false;
    }
    points.clear();
    for (round, id) in TILTED_RIM_ROUND.iter().zip(TILTED_RIM_IDS) {
        let (sin, cos) = round.to_radians().sin_cos();
        let rim = cap_centre + (lowest * cos + quarter * sin) * radius;
        let touch = plane.touch(rim);
        if on_plane(&touch) || on_flat.touch_over(&plane, rim).is_some() {
            points.push((touch, id));
        }
    }
    // A rim reaching beyond another cylinder's cap crosses its rim, and the cap's edge may cut
    // into this one's cap away from every rim point: a poured pile rested on such a pair 2.1 cm
    // deep. parry's answer stands there.
    flat.as_cylinder().is_none() || points.len() == TILTED_RIM_IDS.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use parry3d::math::Pose;
    use parry3d::query::{DefaultQueryDispatcher, PersistentQueryDispatcher, TrackedContact};
    use parry3d::shape::{Cuboid, PackedFeatureId};

    const RADIUS: f64 = 0.25;
    const HALF_HEIGHT: f64 = 0.5;

    /// A slab whose top face is the plane y = 0, and a cylinder tilted `tilt` rad about z whose
    /// lowest rim point lies `depth` m under it.
    fn tilted_on_slab(tilt: f64, depth: f64) -> ((DQuat, DVec3), (DQuat, DVec3)) {
        let rotation = DQuat::from_rotation_z(tilt);
        let height = HALF_HEIGHT * tilt.cos() + RADIUS * tilt.sin() - depth;
        (
            (rotation, DVec3::new(0.0, height, 0.0)),
            (DQuat::IDENTITY, DVec3::new(0.0, -0.5, 0.0)),
        )
    }

    /// The cylinder and the slab of [`tilted_on_slab`].
    fn cylinder_and_slab() -> (Cylinder, Cuboid) {
        (
            Cylinder::new(HALF_HEIGHT as f32, RADIUS as f32),
            Cuboid::new(Vec3::new(5.0, 0.5, 5.0)),
        )
    }

    fn rim_points(
        manifold: &ContactManifold<(), ()>,
        poses: ((DQuat, DVec3), (DQuat, DVec3)),
    ) -> Vec<(TouchPoint, u64)> {
        let (cylinder, slab) = cylinder_and_slab();
        let on_flat = CylinderOnFlat::of(manifold, (&cylinder, &slab), poses.0, poses.1).expect("a cylinder");
        let mut points = Vec::new();
        assert!(rim_on_face(manifold, &on_flat, &mut points));
        points
    }

    /// A cylinder tilted 10° on its rim rests on the rim's lowest point, read at its exact depth
    /// with the face's normal, and on the points round from it, higher by `r sin θ (1 − cos φ)`
    /// at `φ` round.
    #[test]
    fn a_tilted_rim_rests_on_its_lowest_point() {
        let (tilt, depth) = (10f64.to_radians(), 1e-3);
        let poses = tilted_on_slab(tilt, depth);
        let (cylinder, slab) = cylinder_and_slab();
        let pose =
            |(rotation, translation): (DQuat, DVec3)| Pose::from_parts(translation.as_vec3(), rotation.as_quat());
        let mut manifolds = Vec::new();
        DefaultQueryDispatcher
            .contact_manifolds(
                &pose(poses.0).inv_mul(&pose(poses.1)),
                &cylinder,
                &slab,
                0.01,
                &mut manifolds,
                &mut None,
            )
            .unwrap();
        let points = rim_points(&manifolds[0], poses);
        assert_eq!(points.len(), TILTED_RIM_IDS.len());
        for (((point, id), expected_id), round) in points.iter().zip(TILTED_RIM_IDS).zip(TILTED_RIM_ROUND) {
            let round = round.to_radians();
            let gap = RADIUS * tilt.sin() * (1.0 - round.cos()) - depth;
            assert!((point.gap - gap).abs() < 1e-12, "gap {} against {gap}", point.gap);
            assert_eq!(*id, expected_id);
            assert!(
                (point.normal - DVec3::Y).length() < 1e-15,
                "out of the slab, the second shape"
            );
            assert!((point.on_first - point.on_second - point.normal * point.gap).length() < 1e-12);
        }
        let lowest = points[0].0.on_first;
        let under_the_cap = DVec3::new(HALF_HEIGHT * tilt.sin() - RADIUS * tilt.cos(), -depth, 0.0);
        assert!(
            (lowest - under_the_cap).length() < 1e-12,
            "{lowest} against {under_the_cap}"
        );
    }

    /// parry's normal 35° astray, as GJK gave it for a rocking cylinder: the rim still rests on
    /// the face nearest it, at its exact depth.
    #[test]
    fn a_rim_rests_on_the_face_whatever_gjk_says() {
        let (tilt, depth) = (4f64.to_radians(), 1.6e-3);
        let mut manifold = ContactManifold::with_data(0, 0, ());
        let astray = Vec3::new(0.42, 0.81, 0.40).normalize();
        manifold.local_n2 = astray;
        manifold.local_n1 = -astray;
        manifold.points.push(TrackedContact::new(
            Vec3::ZERO,
            Vec3::ZERO,
            PackedFeatureId::UNKNOWN,
            PackedFeatureId::UNKNOWN,
            -2e-4,
        ));
        let points = rim_points(&manifold, tilted_on_slab(tilt, depth));
        assert!((points[0].0.gap + depth).abs() < 1e-12, "{}", points[0].0.gap);
    }
}
