//! Stage 3, a correction between parry's manifolds and their reduction: where a cylinder's
//! curved side rests on a flat face, the contact is the exact line where they touch.
//!
//! parry finds that line through GJK, which stops at a relative tolerance of about 1e-3 on a
//! curved support map and now and then goes further astray, then clips a segment of the side
//! turned to GJK's normal against the face. Normal and points were off by a milliradian and at
//! times by tens of degrees, and a cylinder set down at rest on a 40 m slab rolled 1.5 mm to
//! 0.37 m within 5 s depending on where it lay. The face's own normal is exact, and so is the
//! line along which a cylinder's side touches a plane: where both ends of that line lie on the
//! face, this file gives the contact as those two ends, with the face's normal and their gaps
//! to its plane. Elsewhere (a cap down, the line running off the face's rim) parry's manifold
//! stands. Knows nothing of caches, reduction or bodies.

use bevy_math::{DQuat, DVec3, Vec3};
use parry3d::query::ContactManifold;
use parry3d::shape::{Shape, SupportMap, Triangle, TypedShape};

/// How far, as a cosine, parry's normal may be from the face's for the contact to count as the
/// side resting on the face (60°): on cylinders resting on a slab, GJK's normal was seen 9° and
/// 42° off. Whether the side rests on the face and not on its rim is told by where the line's
/// ends fall ([`ON_FACE`]).
const SAME_NORMAL: f64 = 0.5;

/// How far from the flat shape, relative to the distance from its origin (at least 1 m), an
/// end of the line may fall and still count as on its face: a few `f32` rounding steps.
const ON_FACE: f32 = 1e-6;

/// A cylinder's side on a face: the two ends of the line where they touch, in world
/// coordinates, for two shapes in a given order (parry's, from [`SideOnFace::of`]).
pub(super) struct SideOnFace {
    /// Unit, out of the second shape towards the first.
    pub normal: DVec3,
    /// Each end's points on the first and second shapes, and their gap.
    pub ends: [(DVec3, DVec3, f64); 2],
}

/// The face of `shape`'s part `subshape` whose normal is nearest `towards` (parry's normal out
/// of it), as its unit normal and a point of it in the part's frame: exact where parry's normal
/// and points are not. Taken from the geometry, not from the contact's feature ids, which
/// parry numbers differently in its contact and its normal queries.
fn nearest_face(shape: &dyn Shape, subshape: u32, towards: Vec3) -> Option<(Vec3, Vec3)> {
    let triangle = |triangle: Triangle| {
        let normal = triangle.normal()?;
        Some((if normal.dot(towards) < 0.0 { -normal } else { normal }, triangle.a))
    };
    match shape.as_typed_shape() {
        TypedShape::Cuboid(cuboid) => {
            let axis = towards.abs().max_position();
            let normal = Vec3::AXES[axis] * towards[axis].signum();
            Some((normal, cuboid.local_support_point(normal)))
        }
        TypedShape::ConvexPolyhedron(hull) => {
            let normal = hull
                .faces()
                .iter()
                .map(|face| face.normal)
                .max_by(|a, b| a.dot(towards).total_cmp(&b.dot(towards)))?;
            Some((normal, hull.local_support_point(normal)))
        }
        TypedShape::Triangle(t) => triangle(*t),
        TypedShape::TriMesh(mesh) => triangle(mesh.triangle(subshape)),
        TypedShape::HeightField(field) => triangle(field.triangle_at_id(subshape)?),
        TypedShape::Compound(compound) => {
            let (_, part) = compound.shapes().get(subshape as usize)?;
            nearest_face(part.as_ref(), 0, towards)
        }
        _ => None,
    }
}

/// `shape`'s part `subshape` if it is a compound, else `shape`.
fn part(shape: &dyn Shape, subshape: u32) -> &dyn Shape {
    shape
        .as_compound()
        .and_then(|compound| compound.shapes().get(subshape as usize))
        .map_or(shape, |(_, part)| part.as_ref())
}

/// `shape`'s part `subshape` as a cylinder, if it is one.
fn cylinder(shape: &dyn Shape, subshape: u32) -> Option<&parry3d::shape::Cylinder> {
    match shape.as_typed_shape() {
        TypedShape::Cylinder(cylinder) => Some(cylinder),
        TypedShape::Compound(compound) => compound
            .shapes()
            .get(subshape as usize)
            .and_then(|(_, part)| part.as_cylinder()),
        _ => None,
    }
}

impl SideOnFace {
    /// Whether `manifold` (between `first` and `second`, the shapes in parry's order, at the
    /// world rotations and translations given) is a cylinder's side resting on a face, and the
    /// line where they touch if so.
    pub fn of(
        manifold: &ContactManifold<(), ()>,
        (first, second): (&dyn Shape, &dyn Shape),
        (rotation1, translation1): (DQuat, DVec3),
        (rotation2, translation2): (DQuat, DVec3),
    ) -> Option<Self> {
        if manifold.points.is_empty() {
            return None;
        }
        let (cylinder_first, cylinder) = match (
            cylinder(first, manifold.subshape1),
            cylinder(second, manifold.subshape2),
        ) {
            (Some(c), None) => (true, c),
            (None, Some(c)) => (false, c),
            _ => return None,
        };
        let (cylinder_rotation, cylinder_translation) = if cylinder_first {
            (rotation1, translation1)
        } else {
            (rotation2, translation2)
        };
        let (flat, flat_subshape, flat_rotation, flat_translation, flat_normal) = if cylinder_first {
            (second, manifold.subshape2, rotation2, translation2, manifold.local_n2)
        } else {
            (first, manifold.subshape1, rotation1, translation1, manifold.local_n1)
        };
        let (face, on_face) = nearest_face(flat, flat_subshape, flat_normal)?;
        let parry_normal = (flat_rotation * flat_normal.as_dvec3()).normalize_or_zero();
        let face_normal = (flat_rotation * face.as_dvec3()).normalize_or_zero();
        if face_normal.dot(parry_normal) < SAME_NORMAL {
            return None;
        }
        let towards_face = cylinder_rotation.inverse() * -face_normal;
        if towards_face.y.abs() >= 0.5 {
            return None; // a cap faces it, as parry's support features tell the two apart
        }
        let radial = DVec3::new(towards_face.x, 0.0, towards_face.z).normalize();
        let plane = face_normal.dot(flat_translation + flat_rotation * on_face.as_dvec3());
        let (radius, half_height) = (cylinder.radius as f64, cylinder.half_height as f64);
        let flat = part(flat, flat_subshape);
        let end = |sign: f64| {
            let local = radial * radius + DVec3::Y * (sign * half_height);
            let on_cylinder = cylinder_translation + cylinder_rotation * local;
            let gap = face_normal.dot(on_cylinder) - plane;
            let on_face = on_cylinder - face_normal * gap;
            // Near the face's rim the line can pass beyond it, where the cylinder rests on the
            // rim instead: then parry's answer stands.
            let local = (flat_rotation.inverse() * (on_face - flat_translation)).as_vec3();
            let projected = flat.project_local_point(local, false).point;
            let ends = if cylinder_first {
                (on_cylinder, on_face, gap)
            } else {
                (on_face, on_cylinder, gap)
            };
            ((projected - local).length() <= ON_FACE * local.length().max(1.0)).then_some(ends)
        };
        Some(Self {
            normal: if cylinder_first { face_normal } else { -face_normal },
            ends: [end(-1.0)?, end(1.0)?],
        })
    }
}
