//! Stage 3, a correction between parry's manifolds and their reduction: where two shapes touch
//! along a line and parry gives a point or two off it, the contact is that line's two ends.
//!
//! Three such cases. A cylinder's side or a capsule resting on a face: parry finds it through
//! GJK, which stops at a relative tolerance of about 1e-3 on a curved support map (and for a
//! segment parallel to a face) and now and then goes further astray, then clips a segment turned
//! to GJK's normal against the face. Normal and points were off by a milliradian and at times by
//! tens of degrees: a cylinder set down at rest on a 40 m slab rolled 1.5 mm to 0.37 m within
//! 5 s depending on where it lay, a capsule crept up to 1.2e-4 m. And two cylinders or capsules
//! lying side by side, axes parallel or within 30° of it: parry gives them its single nearest
//! point, at an arbitrary end of the overlap, where both ends bear. The face's own normal is
//! exact, and so are the lines along which a cylinder or a capsule touches a plane and parallel
//! axes touch each other, and the gap at each end of skewed axes' overlap. The face is the one
//! nearest parry's normal, or, where that normal went astray, the one the lying shape's axis
//! lies outside of; a line longer than the face touches along the stretch over it, where it lies
//! along the face. Elsewhere (a line beside a face's rim, or tilted across it) parry's manifold
//! stands, and axes skewed further touch where they cross ([`crossed`]) or as parry says. And a
//! cylinder's side or a capsule lying across a cylinder's cap, which touches along the chord
//! the cap's rim cuts from its lowest line ([`side_on_cap`]), where parry gives GJK's nearest
//! point at one end of it.
//!
//! And where GJK found a flat contact — a hull or a cylinder's cap on a face, a hull's corner on
//! one — the face's exact normal and plane ([`face_contact`], [`FacePlane`]) in place of GJK's
//! normal, a few µrad off, and of its own closest point, which it puts anywhere on the face.
//! Where a hull's face there has more than four corners, which parry cuts to four, the points
//! are the faces' whole overlap (`hull_faces`). Knows nothing of caches, reduction or bodies.

use bevy_math::{DQuat, DVec2, DVec3, Vec3};
use parry3d::query::{ContactManifold, Ray, TrackedContact};

use super::hull_faces::{faces_contact, long_face_in};
use super::reduction::is_closest_points;
use parry3d::shape::{Capsule, Cylinder, Shape, ShapeType, SupportMap, Triangle, TypedShape};

/// How far, as `1 − cos` (about 1.4 mrad), a normal may be from a face's and still count as
/// that face's: GJK's normals between two flat faces are off by up to a few µrad in `f32`, and
/// the cone of `seams` rounds its projection in `f32` too.
pub(super) const FACE_NORMAL: f32 = 1e-6;

/// How far, as `1 − cos` (about 8°), a normal may be from a face's and still count as that
/// face's where a hull's face of more than four corners is in the contact: whatever the normal,
/// parry's points there come from four of that face's corners (`hull_faces`), and GJK's normal
/// was about 3 mrad off a slab's for a prism's corner landing on it, 7° off for a prism resting
/// flat on it. Elsewhere parry's own points stand beyond [`FACE_NORMAL`].
const LONG_FACE_NORMAL: f64 = 1e-2;

/// The plane of a face of one of a manifold's shapes (the flat one), against which the other
/// shape's points are measured: the face's normal is exact where parry's is not, or points
/// through a cut (`seams`).
pub(super) struct FacePlane {
    /// Whether the flat shape is parry's first.
    flat_first: bool,
    /// Unit, out of the flat shape, in the world.
    pub normal: DVec3,
    offset: f64,
}

impl FacePlane {
    /// The face `(normal, point)`, in the flat shape's (part's) frame, at the flat shape's world
    /// rotation and translation.
    pub fn new(flat_first: bool, (normal, point): (Vec3, Vec3), (rotation, translation): (DQuat, DVec3)) -> Self {
        let normal = (rotation * normal.as_dvec3()).normalize();
        Self {
            flat_first,
            normal,
            offset: normal.dot(translation + rotation * point.as_dvec3()),
        }
    }

    /// How far `point` (world) lies out of the plane, m: negative under it.
    pub fn gap(&self, point: DVec3) -> f64 {
        self.normal.dot(point) - self.offset
    }

    /// The contact of the other shape's point `on_other` (world) with the plane.
    pub fn touch(&self, on_other: DVec3) -> TouchPoint {
        let gap = self.gap(on_other);
        let on_flat = on_other - self.normal * gap;
        let touch = TouchPoint {
            on_first: on_other,
            on_second: on_flat,
            gap,
            normal: self.normal,
        };
        if self.flat_first { touch.swapped() } else { touch }
    }

    /// Where `touch` (one of [`Self::touch`]'s) lies on the flat shape, in the world.
    fn on_flat(&self, touch: &TouchPoint) -> DVec3 {
        if self.flat_first {
            touch.on_first
        } else {
            touch.on_second
        }
    }

    /// Where `touch` (one of [`Self::touch`]'s) lies on the flat shape, in the frame of the flat
    /// shape at `(rotation, translation)`.
    pub fn on_flat_local(&self, touch: &TouchPoint, (rotation, translation): (DQuat, DVec3)) -> Vec3 {
        (rotation.inverse() * (self.on_flat(touch) - translation)).as_vec3()
    }

    /// The stretch of the line of contact from `start` to `end` (two of [`Self::touch`]'s) that
    /// lies on the face of `part`, the flat shape at `pose`: its two ends, and the fraction of the
    /// line it covers.
    pub fn clip(
        &self,
        part: &dyn Shape,
        pose: (DQuat, DVec3),
        [start, end]: [TouchPoint; 2],
    ) -> Option<([TouchPoint; 2], f64)> {
        let (from, to) = clip(part, pose, self.normal, self.on_flat(&start), self.on_flat(&end))?;
        let at = |t: f64| TouchPoint {
            on_first: start.on_first.lerp(end.on_first, t),
            on_second: start.on_second.lerp(end.on_second, t),
            gap: start.gap + (end.gap - start.gap) * t,
            normal: start.normal,
        };
        Some(([at(from), at(to)], to - from))
    }

    /// parry's points on the other shape (at its world rotation and translation), measured
    /// against the plane, with their feature ids, appended to `points`: where the other shape
    /// touches with a flat feature or a corner, these stay where they are.
    pub fn parrys_points(
        &self,
        manifold: &ContactManifold<(), ()>,
        (rotation, translation): (DQuat, DVec3),
        points: &mut Vec<(TouchPoint, u64)>,
    ) {
        // GJK's own closest points lie anywhere inside a polygon of three or more corners, which
        // already spans the contact: carried by its id to another place next step, its impulse
        // tipped resting hulls, and 100 of them on a slab iterated from about step 100 on.
        let corners = manifold.points.iter().filter(|p| !is_closest_points(p)).count();
        let kept = |p: &&TrackedContact<()>| corners < 3 || !is_closest_points(p);
        points.extend(manifold.points.iter().filter(kept).map(|point| {
            let (local, feature) = if self.flat_first {
                (point.local_p2, point.fid2.0)
            } else {
                (point.local_p1, point.fid1.0)
            };
            (self.touch(translation + rotation * local.as_dvec3()), feature as u64)
        }));
    }
}

/// Ids of the two ends of a line of contact: the ids parry gives the ends of its segment along a
/// cylinder's side, so that they stay apart from any point parry numbers.
pub(super) const LINE_END_IDS: [u64; 2] = [1 << 32 | 1, 1 << 32 | 11];

/// How far, as a cosine, parry's normal may be from the face's for the contact to count as the
/// side resting on the face (60°): on cylinders resting on a slab, GJK's normal was seen 9° and
/// 42° off. Whether the side rests on the face and not on its rim is told by where the line's
/// ends fall ([`ON_FACE`]).
const SAME_NORMAL: f64 = 0.5;

/// How far from the flat shape, relative to the distance from its origin (at least 1 m), an
/// end of the line may fall and still count as on its face: a few `f32` rounding steps.
const ON_FACE: f32 = 1e-6;

/// Id of the point where two shapes lying across each other touch, apart from any id parry
/// gives and from [`LINE_END_IDS`].
pub(super) const CROSSED_ID: u64 = 1 << 32 | 21;

/// Least fraction of a line of contact that must lie over a face for the stretch to count as
/// resting on it: a shorter one is the line grazing the face's rim.
const CLIPPED_STRETCH: f64 = 1e-3;

/// The steepest slope, as the rise of its gap along it, at which a line of contact that runs off
/// its face is clipped to it (0.6°).
const CLIPPED_SLOPE: f64 = 1e-2;

/// A point where two shapes touch — one end of a line of contact, or a point across a seam
/// (`seams`) — in world coordinates, for the two shapes in a given order (parry's).
#[derive(Clone, Copy)]
pub(super) struct TouchPoint {
    pub on_first: DVec3,
    pub on_second: DVec3,
    pub gap: f64,
    /// Unit, out of the second shape towards the first.
    pub normal: DVec3,
}

impl TouchPoint {
    /// The same point for the shapes in the other order.
    pub fn swapped(self) -> Self {
        Self {
            on_first: self.on_second,
            on_second: self.on_first,
            gap: self.gap,
            normal: -self.normal,
        }
    }
}

/// The line along which `manifold`'s shapes (`first` and `second`, in parry's order, at the
/// world rotations and translations given) touch, where parry gives a point or two off it: a
/// cylinder's side resting on a face, or two cylinders or capsules lying side by side.
pub(super) fn line_contact(
    manifold: &ContactManifold<(), ()>,
    shapes: (&dyn Shape, &dyn Shape),
    pose1: (DQuat, DVec3),
    pose2: (DQuat, DVec3),
) -> Option<[TouchPoint; 2]> {
    if manifold.points.is_empty() {
        return None;
    }
    side_on_face(manifold, shapes, pose1, pose2, None).or_else(|| side_by_side(manifold, shapes, pose1, pose2))
}

/// The face of `shape`'s part `subshape` whose normal is nearest `towards` (parry's normal out
/// of it), as its unit normal and a point of it in the part's frame: exact where parry's normal
/// and points are not. Taken from the geometry, not from the contact's feature ids, which
/// parry numbers differently in its contact and its normal queries.
pub(super) fn nearest_face(shape: &dyn Shape, subshape: u32, towards: Vec3) -> Option<(Vec3, Vec3)> {
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
        TypedShape::TriMesh(_) | TypedShape::HeightField(_) => triangle(triangle_of(shape, subshape)?),
        TypedShape::Compound(compound) => {
            let (_, part) = compound.shapes().get(subshape as usize)?;
            nearest_face(part.as_ref(), 0, towards)
        }
        // A cap, where `towards` is nearly along the axis: a side is no face.
        TypedShape::Cylinder(cylinder) if towards.y.abs() >= 1.0 - FACE_NORMAL => {
            let normal = Vec3::Y * towards.y.signum();
            Some((normal, normal * cylinder.half_height))
        }
        _ => None,
    }
}

/// Whether `local` (in `shape`'s frame) lies on `shape`, to `tolerance` relative to its distance
/// from the origin (at least 1 m): a few `f32` rounding steps. `solid` as parry's projection.
pub(super) fn lies_on(shape: &dyn Shape, local: Vec3, solid: bool, tolerance: f32) -> bool {
    let projected = shape.project_local_point(local, solid).point;
    (projected - local).length() <= tolerance * local.length().max(1.0)
}

/// `shape`'s triangle `subshape` where it is a mesh or a height field.
pub(super) fn triangle_of(shape: &dyn Shape, subshape: u32) -> Option<Triangle> {
    match shape.as_typed_shape() {
        TypedShape::TriMesh(mesh) => Some(mesh.triangle(subshape)),
        TypedShape::HeightField(field) => field.triangle_at_id(subshape),
        _ => None,
    }
}

/// What a contact with `shape`'s subshape `subshape` lies on: a mesh's or height field's
/// triangle, a compound's part, else the shape.
pub(super) enum Piece<'a> {
    Triangle(Triangle),
    Part(&'a dyn Shape),
}

impl Piece<'_> {
    pub fn shape(&self) -> &dyn Shape {
        match self {
            Piece::Triangle(triangle) => triangle,
            Piece::Part(part) => *part,
        }
    }
}

/// The [`Piece`] of `shape` that `subshape` names.
pub(super) fn piece(shape: &dyn Shape, subshape: u32) -> Piece<'_> {
    match triangle_of(shape, subshape) {
        Some(triangle) => Piece::Triangle(triangle),
        None => Piece::Part(part(shape, subshape)),
    }
}

/// `shape`'s part `subshape` if it is a compound, else `shape`.
pub(super) fn part(shape: &dyn Shape, subshape: u32) -> &dyn Shape {
    shape
        .as_compound()
        .and_then(|compound| compound.shapes().get(subshape as usize))
        .map_or(shape, |(_, part)| part.as_ref())
}

/// A shape that can lie along a face, touching it along a line.
pub(super) enum Lying<'a> {
    Cylinder(&'a Cylinder),
    Capsule(&'a Capsule),
}

impl Lying<'_> {
    /// Its axis segment's ends and its radius, in its frame.
    pub fn axis(&self) -> (Vec3, Vec3, f32) {
        match self {
            Lying::Capsule(capsule) => (capsule.segment.a, capsule.segment.b, capsule.radius),
            Lying::Cylinder(cylinder) => (
                Vec3::NEG_Y * cylinder.half_height,
                Vec3::Y * cylinder.half_height,
                cylinder.radius,
            ),
        }
    }

    /// Whether parry's normal out of this shape, `local_normal` in its frame (zero where parry
    /// gave none), may leave it by its side: not within 30° of a cylinder's axis
    /// ([`CAP_FACING`]), where its cap touches. Only then can it be lying beside another. A
    /// cylinder leaning on another's cap, axes 29.6° apart, was read as lying beside it, with a
    /// normal 60° off the cap's, and sank 1.9 cm into it within four steps. A capsule has no flat
    /// end to lean on.
    fn side_along(&self, local_normal: Vec3) -> bool {
        match self {
            Lying::Capsule(_) => true,
            Lying::Cylinder(_) => local_normal.y.abs() < CAP_FACING,
        }
    }

    /// Where this shape's end at `centre` (the end of its axis, unit `along`) touches the side
    /// of `other`, lying along `axis`: for a capsule its end sphere's point nearest the axis,
    /// for a cylinder its rim's: the rim point that lies across this axis towards the nearest
    /// point of the other, found by taking the one and then the other in turn until the rim
    /// point moves by less than a picometre (contracting the faster the nearer parallel the
    /// axes).
    ///
    /// The gap is measured across the axis from the segment's nearest point, which for a
    /// capsule covers its end spheres too. A cylinder has no end spheres: a point past its cap's
    /// plane is at least that far out of it. Measured from the axis's end, a rim 2.4 cm past
    /// another cylinder's cap and 1.2 cm inside its radius read 1.1 cm deep, where parry found
    /// the two 2e-5 m apart, a depth the push-out then set out to remove (a poured pile, axes
    /// 26° askew). The side's normal is kept, so that the end of a line contact that ends at a
    /// cap's rim, a log beside another with their ends level, holds whichever side of the cap's
    /// plane round-off puts it. Also whether the point lies past `other`'s cap, a cylinder's.
    fn end_on_side(&self, centre: DVec3, along: DVec3, other: &Lying, axis: &Axis) -> Option<(TouchPoint, bool)> {
        let (point, rounding) = match self {
            Lying::Capsule(capsule) => (centre, capsule.radius as f64),
            Lying::Cylinder(cylinder) => {
                let mut point = centre;
                for _ in 0..RIM_STEPS {
                    let towards = axis.nearest(point) - centre;
                    let across = (towards - along * along.dot(towards)).try_normalize()?;
                    let next = centre + across * cylinder.radius as f64;
                    let moved = (next - point).length();
                    point = next;
                    if moved < 1e-12 {
                        break;
                    }
                }
                (point, 0.0)
            }
        };
        let radius = other.axis().2 as f64;
        let along_other = axis.along.dot(point - axis.start);
        let on_axis = match other {
            Lying::Capsule(_) => axis.nearest(point),
            Lying::Cylinder(_) => axis.at(along_other),
        };
        let apart = point - on_axis;
        let normal = apart.try_normalize()?;
        let on_first = point - normal * rounding;
        let mut touch = TouchPoint {
            on_first,
            on_second: on_axis + normal * radius,
            gap: apart.length() - rounding - radius,
            normal,
        };
        let past_cap = matches!(other, Lying::Cylinder(_)) && !(0.0..=axis.length).contains(&along_other);
        let beyond = (-along_other).max(along_other - axis.length) - rounding;
        if past_cap && beyond > touch.gap {
            touch.gap = beyond;
            touch.on_second = on_first - normal * beyond;
        }
        Some((touch, past_cap))
    }
}

/// `shape`'s part `subshape` as a shape that can lie along a face, if it is one.
pub(super) fn lying(shape: &dyn Shape, subshape: u32) -> Option<Lying<'_>> {
    match part(shape, subshape).as_typed_shape() {
        TypedShape::Cylinder(cylinder) => Some(Lying::Cylinder(cylinder)),
        TypedShape::Capsule(capsule) => Some(Lying::Capsule(capsule)),
        _ => None,
    }
}

/// A cylinder's side or a capsule resting on a face: the exact line where they touch (for a
/// capsule in any attitude, the lowest points of its two end spheres), clipped to the face
/// where it runs off it, if some of it lies over the face. The face is the flat shape's
/// nearest parry's normal, else the one of a box or a hull that the lying shape's axis lies
/// farthest outside of; or `face` (normal and a point of it, in the part's frame) where `seams`
/// turned parry's normal: the line is then given whole, since the face runs on across a seam,
/// and the caller clips it.
pub(super) fn side_on_face(
    manifold: &ContactManifold<(), ()>,
    (first, second): (&dyn Shape, &dyn Shape),
    (rotation1, translation1): (DQuat, DVec3),
    (rotation2, translation2): (DQuat, DVec3),
    face: Option<(Vec3, Vec3)>,
) -> Option<[TouchPoint; 2]> {
    let (lying_first, lying) = match (lying(first, manifold.subshape1), lying(second, manifold.subshape2)) {
        (Some(shape), None) => (true, shape),
        (None, Some(shape)) => (false, shape),
        _ => return None,
    };
    let (lying_rotation, lying_translation) = if lying_first {
        (rotation1, translation1)
    } else {
        (rotation2, translation2)
    };
    let (flat, flat_subshape, flat_rotation, flat_translation, flat_normal) = if lying_first {
        (second, manifold.subshape2, rotation2, translation2, manifold.local_n2)
    } else {
        (first, manifold.subshape1, rotation1, translation1, manifold.local_n1)
    };
    let flat_pose = (flat_rotation, flat_translation);
    let lying_pose = (lying_rotation, lying_translation);
    let flat_piece = piece(flat, flat_subshape);
    let on = |face, checked| {
        line_on_face(
            &lying,
            lying_first,
            lying_pose,
            (part(flat, flat_subshape), flat_piece.shape()),
            flat_pose,
            face,
            checked,
        )
    };
    if let Some(face) = face {
        return on(face, false);
    }
    // The face nearest parry's normal, if the lying shape's centre lies outside its plane;
    // else, where GJK's normal went astray, the face the centre lies farthest outside of. A
    // wheel of 0.2 m rolling on a slab got a normal 45° off, on the slab's side; a cylinder
    // lying on a 40 m slab got one turned over three steps to 17° below the horizontal, whose
    // nearest face, the slab's bottom, read it 1.5 m deep.
    let (a, b, _) = lying.axis();
    let centre = lying_translation + lying_rotation * ((a + b) * 0.5).as_dvec3();
    let centre = (flat_rotation.inverse() * (centre - flat_translation)).as_vec3();
    let parrys = nearest_face(flat, flat_subshape, flat_normal).filter(|(face, on_face)| {
        let parry_normal = (flat_rotation * flat_normal.as_dvec3()).normalize_or_zero();
        (flat_rotation * face.as_dvec3()).dot(parry_normal) >= SAME_NORMAL && face.dot(centre - *on_face) > 0.0
    });
    parrys
        .and_then(|face| on(face, true))
        .or_else(|| on(facing(part(flat, flat_subshape), centre)?, true))
}

/// A cylinder's or a capsule's side lying on a cylinder's cap (parry's normal leaves the one
/// by its cap, within 30° of its axis, and the other by its side): the exact line where they
/// touch, clipped to the cap's disc, where some of it lies over the disc. parry finds the pair
/// through GJK and gives its nearest point, at one end of the chord or the other: a log laid
/// across an upright cylinder's cap off its centre rocked from end to end and slid off, and in a
/// poured pile a cylinder standing on another's side rocked on the chord's ends, 1–4 mm deep,
/// for 90 steps.
pub(super) fn side_on_cap(
    manifold: &ContactManifold<(), ()>,
    (first, second): (&dyn Shape, &dyn Shape),
    pose1: (DQuat, DVec3),
    pose2: (DQuat, DVec3),
) -> Option<[TouchPoint; 2]> {
    if manifold.points.is_empty() {
        return None;
    }
    let (shape1, shape2) = (lying(first, manifold.subshape1)?, lying(second, manifold.subshape2)?);
    let cap_facing =
        |shape: &Lying, local_normal| matches!(shape, Lying::Cylinder(_)) && !shape.side_along(local_normal);
    let cap_first = match (
        cap_facing(&shape1, manifold.local_n1),
        cap_facing(&shape2, manifold.local_n2),
    ) {
        (true, false) => true,
        (false, true) => false,
        _ => return None,
    };
    // The cap's, then the lying shape's.
    fn ordered<T>(cap_first: bool, a: T, b: T) -> (T, T) {
        if cap_first { (a, b) } else { (b, a) }
    }
    let (cylinder, lying) = ordered(cap_first, shape1, shape2);
    let (cap_pose, lying_pose) = ordered(cap_first, pose1, pose2);
    let (out_of_cap, _) = ordered(cap_first, manifold.local_n1, manifold.local_n2);
    let ((flat, subshape), _) = ordered(cap_first, (first, manifold.subshape1), (second, manifold.subshape2));
    let Lying::Cylinder(cylinder) = cylinder else {
        return None;
    };
    let normal = Vec3::Y * out_of_cap.y.signum();
    let on_cap = normal * cylinder.half_height;
    // The lying shape's centre outside the cap's plane, as it lies on it.
    let (a, b, _) = lying.axis();
    let centre = lying_pose.1 + lying_pose.0 * ((a + b) * 0.5).as_dvec3();
    let local_centre = cap_pose.0.inverse() * (centre - cap_pose.1);
    if normal.as_dvec3().dot(local_centre - on_cap.as_dvec3()) <= 0.0 {
        return None;
    }
    line_on_face(
        &lying,
        !cap_first,
        lying_pose,
        (part(flat, subshape), part(flat, subshape)),
        cap_pose,
        (normal, on_cap),
        true,
    )
}

/// The face of a box or a hull (in its frame) that `point` lies farthest outside of, as its unit
/// normal and a point of it.
fn facing(shape: &dyn Shape, point: Vec3) -> Option<(Vec3, Vec3)> {
    match shape.as_typed_shape() {
        TypedShape::Cuboid(cuboid) => {
            let outside = point.abs() - cuboid.half_extents;
            let axis = outside.max_position();
            let normal = Vec3::AXES[axis] * point[axis].signum();
            Some((normal, cuboid.local_support_point(normal)))
        }
        TypedShape::ConvexPolyhedron(hull) => hull
            .faces()
            .iter()
            .map(|face| (face.normal, hull.local_support_point(face.normal)))
            .max_by(|a, b| a.0.dot(point - a.1).total_cmp(&b.0.dot(point - b.1))),
        _ => None,
    }
}

/// The line along which `lying` (at its world rotation and translation) touches `flat`'s face
/// `(normal, point)` (in `flat`'s frame, at its world pose), if `checked` and its ends do not
/// both lie on `flat`, clipped to `piece` of it (a mesh's triangle, or `flat` itself) and only
/// where some of it lies over that; in the pair's order given by `lying_first`.
///
/// A line on a flat mesh lies on the mesh whole, and every triangle under it gives it whole.
/// On a bumpy one its ends fall on other triangles' slopes, and each triangle gives the stretch
/// over itself: clipped to the whole mesh instead, a log's line over one triangle was cut to
/// 2 cm at its far end from its lowest point, which went 9 mm into the triangle.
fn line_on_face(
    lying: &Lying,
    lying_first: bool,
    (lying_rotation, lying_translation): (DQuat, DVec3),
    (flat, piece): (&dyn Shape, &dyn Shape),
    (flat_rotation, flat_translation): (DQuat, DVec3),
    (face, on_face): (Vec3, Vec3),
    checked: bool,
) -> Option<[TouchPoint; 2]> {
    let flat_pose = (flat_rotation, flat_translation);
    let plane = FacePlane::new(!lying_first, (face, on_face), flat_pose);
    let towards_face = lying_rotation.inverse() * -plane.normal;
    // The lowest points of the two ends, in the lying shape's frame.
    let lowest = match lying {
        Lying::Cylinder(cylinder) => {
            if towards_face.y.abs() >= 0.5 {
                return None; // a cap faces it, as parry's support features tell the two apart
            }
            let radial = DVec3::new(towards_face.x, 0.0, towards_face.z).normalize() * cylinder.radius as f64;
            let half_height = DVec3::Y * cylinder.half_height as f64;
            [radial - half_height, radial + half_height]
        }
        Lying::Capsule(capsule) => {
            let radial = towards_face * capsule.radius as f64;
            [
                capsule.segment.a.as_dvec3() + radial,
                capsule.segment.b.as_dvec3() + radial,
            ]
        }
    };
    let ends = lowest.map(|local| plane.touch(lying_translation + lying_rotation * local));
    let on_part = |touch: &TouchPoint| lies_on(flat, plane.on_flat_local(touch, flat_pose), false, ON_FACE);
    if !checked || ends.iter().all(on_part) {
        return Some(ends);
    }
    // A line longer than the face (a plank on logs) touches along the stretch of it over the
    // face, whose ends lie on the face's rim; parry's own points for it came from GJK, a
    // hundredth of the radius astray. Where no stretch lies over the face (the line beside
    // it, the cylinder resting on the rim instead), parry's answer stands.
    // A clipped end lies on the face's rim, where the face's normal is the contact's only if the
    // line lies along the face: tilted, the rim's edge cuts into the lying shape's side, whose
    // own normal is the contact's. A cylinder lying 26° askew across another's cap, read at the
    // cap's rim against the cap's plane, was driven 11 mm under that rim.
    let slope = (ends[1].gap - ends[0].gap).abs() / (ends[1].on_first - ends[0].on_first).length();
    if !slope.is_finite() || slope > CLIPPED_SLOPE {
        return None;
    }
    let (clipped, covered) = plane.clip(piece, flat_pose, ends)?;
    (covered > CLIPPED_STRETCH).then_some(clipped)
}

/// Whether parry found the pair's contact through GJK, whose normal between two flat faces is
/// a few µrad off (boxes against boxes or triangles go through an exact separating-axis test,
/// and balls and capsules through their own closest points). A ball's closest point is its
/// centre's projection onto the other shape, exact on a box or a cylinder, but on a hull found
/// by GJK, to within a lateral offset that leaves the distance unchanged to `f32`.
fn through_gjk(first: &dyn Shape, second: &dyn Shape) -> bool {
    let kind = |shape: &dyn Shape| shape.shape_type();
    let gjk = |shape| {
        matches!(
            kind(shape),
            ShapeType::ConvexPolyhedron | ShapeType::Cylinder | ShapeType::Cone
        )
    };
    let exact = |shape, other| match kind(shape) {
        ShapeType::Capsule => true,
        ShapeType::Ball => kind(other) != ShapeType::ConvexPolyhedron,
        _ => false,
    };
    (gjk(first) || gjk(second)) && !exact(first, second) && !exact(second, first)
}

/// A contact parry found through GJK whose normal is, to [`FACE_NORMAL`], a face's of one of
/// the two shapes (the nearer, if both have one): a hull or a cylinder's cap resting on a face,
/// a hull's corner on a face. The face's normal is exact where GJK's is not, and parry's points
/// on the other shape are measured against the face's plane, written to `points`; where a hull's
/// face of more than four corners is in the contact, the faces' overlap within `prediction`
/// instead (`hull_faces`), for a normal as far as [`LONG_FACE_NORMAL`] from the face's. Off
/// every face beyond that, the face whose axis parts the shapes at least as well as GJK's normal
/// ([`parting_face`]), and the faces' overlap, whatever their corners.
///
/// A cylinder's cap standing flat on a face is `super::caps`'. Not for a cylinder on a mesh, a
/// height field or a compound (`composite`) otherwise: parry's points there come one triangle at
/// a time, and measured against the triangles' planes, one of 100 cylinders resting on a mesh
/// (before `caps`) rocked by 0.1 mm in a step, where parry's own gaps kept it within 4e-9 m.
pub(super) fn face_contact(
    manifold: &ContactManifold<(), ()>,
    (first, second): (&dyn Shape, &dyn Shape),
    (composite, prediction): (bool, f64),
    pose1: (DQuat, DVec3),
    pose2: (DQuat, DVec3),
    points: &mut Vec<(TouchPoint, u64)>,
) -> bool {
    let (part1, part2) = (part(first, manifold.subshape1), part(second, manifold.subshape2));
    let cylinder = |shape: &dyn Shape| shape.shape_type() == ShapeType::Cylinder;
    // A triangle's manifold without points may lie under a hull's face beyond the four corners
    // parry clipped (`hull_faces`): its normal is still the pair's.
    let pointless = manifold.points.is_empty();
    if (pointless && !(composite && manifold.local_n1.is_normalized()))
        || !through_gjk(part1, part2)
        || (composite && (cylinder(part1) || cylinder(part2)))
    {
        return false;
    }
    let face_of = |shape, subshape, outward: Vec3| {
        let (normal, point) = nearest_face(shape, subshape, outward)?;
        Some((normal.as_dvec3().dot(outward.as_dvec3()), (normal, point)))
    };
    let faces = [
        face_of(first, manifold.subshape1, manifold.local_n1).map(|(cos, face)| (cos, true, face)),
        face_of(second, manifold.subshape2, manifold.local_n2).map(|(cos, face)| (cos, false, face)),
    ];
    let nearest = faces.into_iter().flatten().max_by(|a, b| a.0.total_cmp(&b.0));
    let Some(nearest) = nearest else {
        return false;
    };
    // A mesh's or height field's part is the manifold's triangle.
    let pieces = (piece(first, manifold.subshape1), piece(second, manifold.subshape2));
    let sides = [(pieces.0.shape(), pose1), (pieces.1.shape(), pose2)];
    let arranged = |flat_first: bool| if flat_first { sides } else { [sides[1], sides[0]] };
    // Off every face by more than round-off, the face whose axis parts the shapes as well as
    // GJK's normal does is the contact's, exactly (`parting_face`).
    let parting = (nearest.0 < 1.0 - FACE_NORMAL as f64 && !pointless)
        .then(|| parting_face(manifold, faces, sides))
        .flatten();
    let (cos, flat_first, face) = parting.unwrap_or(nearest);
    // Leaning beyond `FACE_NORMAL`, only the faces' whole overlap replaces parry's points: a
    // long face's, whose four corners left out the corner of a landing prism that struck next,
    // 1.3 cm deep; any face's whose axis parts the shapes, parry's points clipped along a normal
    // the face corrects.
    let leaning = cos < 1.0 - FACE_NORMAL as f64;
    if cos < 1.0 - LONG_FACE_NORMAL && parting.is_none() {
        return false;
    }
    let [(flat_part, flat_pose), (other_part, other_pose)] = arranged(flat_first);
    points.clear();
    let plane = FacePlane::new(flat_first, face, flat_pose);
    match other_part.as_ball() {
        Some(_) if leaning => return false,
        // A ball touches under its centre. parry's point lay off it by the offset of GJK's
        // projection, a lever for the ball's weight: a ball set at rest on a hull's face began
        // to roll after 6 s, its speed doubling every 15 steps, and kept 4.9e-4 m/s.
        Some(ball) => points.push((plane.touch(other_pose.1 - plane.normal * ball.radius as f64), 0)),
        None => {
            let flat = (flat_part, flat_pose, face.0);
            let other = (other_part, other_pose);
            let overlapped = (parting.is_some()
                || long_face_in(&plane, (flat_part, face.0), (other_part, other_pose.0)))
                && faces_contact(&plane, flat, other, prediction, points);
            if !overlapped {
                if pointless || leaning {
                    return false;
                }
                plane.parrys_points(manifold, other_pose, points);
            }
        }
    }
    true
}

/// A face of one of a manifold's two shapes near parry's normal: the cosine between their
/// normals, whether it is the first shape's, and the face (unit normal, a point of it) in its
/// part's frame.
type NearFace = (f64, bool, (Vec3, Vec3));

/// How much less, m, a face's axis may part two shapes by than parry's normal and still be
/// taken for their contact's normal: about `f32` round-off on shapes tens of metres across.
const PARTING_SLACK: f64 = 1e-5;

/// Of the two shapes' faces nearest parry's normal (`faces`, as `face_contact` finds them), the
/// one whose axis parts the shapes most, where it parts them at least as well as parry's normal
/// does, to [`PARTING_SLACK`]. Along the contact's normal two convex shapes lie furthest apart
/// (least deep) of all directions, so of these axes it is the contact's. GJK finds the normal
/// only to within the size of the shapes' difference: a seven-sided prism settling flat on a
/// slab 40 m across got a normal 19° off both faces, along an edge of its face 0.13 mm above the
/// slab, and the corners across its face went 7 mm into the slab in the step. `sides` are the
/// two parts at their poses in parry's order.
fn parting_face(
    manifold: &ContactManifold<(), ()>,
    faces: [Option<NearFace>; 2],
    sides: [(&dyn Shape, (DQuat, DVec3)); 2],
) -> Option<NearFace> {
    let [(first, (rotation1, _)), (second, _)] = sides;
    if first.as_ball().is_some() || second.as_ball().is_some() {
        return None;
    }
    // How far `to` lies beyond `from` along `normal` (world, out of `from`).
    let apart = |(from, (rotation, translation)): (&dyn Shape, (DQuat, DVec3)),
                 (to, (to_rotation, to_translation)): (&dyn Shape, (DQuat, DVec3)),
                 normal: DVec3| {
        let outmost = from
            .as_support_map()?
            .local_support_point((rotation.inverse() * normal).as_vec3());
        let lowest = to
            .as_support_map()?
            .local_support_point((to_rotation.inverse() * -normal).as_vec3());
        let outmost = translation + rotation * outmost.as_dvec3();
        let lowest = to_translation + to_rotation * lowest.as_dvec3();
        Some((lowest - outmost).dot(normal))
    };
    let parrys = (rotation1 * manifold.local_n1.as_dvec3()).normalize();
    let along_parrys = apart(sides[0], sides[1], parrys)?;
    let parted = |&(cos, flat_first, face): &NearFace| {
        let (flat, other) = if flat_first {
            (sides[0], sides[1])
        } else {
            (sides[1], sides[0])
        };
        let normal = (flat.1.0 * face.0.as_dvec3()).normalize();
        let gap = apart(flat, other, normal)?;
        (gap >= along_parrys - PARTING_SLACK).then_some((gap, (cos, flat_first, face)))
    };
    faces
        .iter()
        .flatten()
        .filter_map(parted)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, face)| face)
}

/// How parallel, as a cosine, two axes must be for their shapes to touch along a line (0.1°):
/// between skewed axes the two ends' gaps exceed the least gap between them by up to
/// (θ·l/2)²/(2d), under 0.5 µm here for bodies a metre long and a metre apart.
const PARALLEL: f64 = 0.999_998_5;

/// How far from parallel, as a cosine (30°), two skewed axes may be for their shapes to rest on
/// each other at both ends of their overlap, where their common perpendicular misses it.
const NEARLY_PARALLEL: f64 = 0.866;

/// Two cylinders or capsules lying side by side, axes parallel or nearly so and overlapping
/// along them. For parallel axes parry gives capsules a single closest point, which lands at an
/// arbitrary end of their overlap and jumped from end to end between steps; cylinders get GJK's
/// rough normal. The contact is the two ends of the overlap, each with the normal and gap
/// between the axes there. For skewed axes, the two ends too: at each, one shape's end (a
/// cylinder's rim, a capsule's end sphere) against the other's side; where their common
/// perpendicular meets both, they touch nearest there ([`crossed`], a third point). parry gives
/// the nearest point alone, and once another touches, one or the other: in a poured pile a
/// cylinder lying 3.3° askew on another got a point at alternate ends, 0.8 m apart, and sank
/// 4.5 cm into it within 20 steps; given only where the axes cross, at 1.6° askew, its ends
/// fell 3 mm whenever that crossing ran into the overlap.
pub(super) fn side_by_side(
    manifold: &ContactManifold<(), ()>,
    (first, second): (&dyn Shape, &dyn Shape),
    (rotation1, translation1): (DQuat, DVec3),
    (rotation2, translation2): (DQuat, DVec3),
) -> Option<[TouchPoint; 2]> {
    let (lying1, lying2) = (lying(first, manifold.subshape1)?, lying(second, manifold.subshape2)?);
    if !(lying1.side_along(manifold.local_n1) && lying2.side_along(manifold.local_n2)) {
        return None;
    }
    let (a1, b1, radius1) = lying1.axis();
    let (a2, b2, radius2) = lying2.axis();
    let world1 = |p: Vec3| translation1 + rotation1 * p.as_dvec3();
    let world2 = |p: Vec3| translation2 + rotation2 * p.as_dvec3();
    let (start1, end1, start2, end2) = (world1(a1), world1(b1), world2(a2), world2(b2));
    let length1 = (end1 - start1).length();
    let length2 = (end2 - start2).length();
    let along1 = (end1 - start1) / length1;
    let along2 = (end2 - start2).normalize();
    let cos = along1.dot(along2).abs();
    if !(length1 > 0.0 && length2 > 0.0 && cos >= NEARLY_PARALLEL) {
        return None;
    }
    let (radius1, radius2) = (radius1 as f64, radius2 as f64);
    let axis1 = Axis {
        start: start1,
        end: end1,
        along: along1,
        length: length1,
    };
    let axis2 = Axis {
        start: start2,
        end: end2,
        along: along2,
        length: length2,
    };
    let overlap = axis1.overlap(&axis2)?;
    let (low, high) = (overlap.low, overlap.high);
    // Ends pressed into each other overlap along the axes by their depth: the sides would have to
    // overlap further across them to be what touches. Two cylinders standing end on end, 0.25°
    // apart and 4.4 mm into each other, read side by side 0.37 m deep with a normal 90° astray,
    // and the solver drove them into each other step after step.
    let middle = axis1.at(0.5 * (low + high));
    let across = (middle - axis2.nearest(middle)).length();
    if radius1 + radius2 - across > high - low {
        return None;
    }
    if cos < PARALLEL {
        let ends = askew_ends((&lying1, &axis1), (&lying2, &axis2), &overlap)?;
        if ends.iter().any(|(_, past_cap)| *past_cap) {
            let other_way = axis2
                .overlap(&axis1)
                .and_then(|overlap| askew_ends((&lying2, &axis2), (&lying1, &axis1), &overlap))
                .filter(|ends| ends.iter().all(|(_, past_cap)| !past_cap));
            if let Some([(a, _), (b, _)]) = other_way {
                let (a, b) = (a.swapped(), b.swapped());
                // Along the first axis, as the ends' ids are.
                return Some(if along1.dot(b.on_first - a.on_first) >= 0.0 {
                    [a, b]
                } else {
                    [b, a]
                });
            }
        }
        return Some(ends.map(|(end, _)| end));
    }
    let end = |s: f64| {
        let on_axis1 = axis1.at(s);
        let on_axis2 = axis2.nearest(on_axis1);
        let apart = on_axis1 - on_axis2;
        let distance = apart.length();
        let normal = apart.try_normalize()?;
        Some(TouchPoint {
            on_first: on_axis1 - normal * radius1,
            on_second: on_axis2 + normal * radius2,
            gap: distance - radius1 - radius2,
            normal,
        })
    };
    Some([end(low)?, end(high)?])
}

/// The two ends of the `overlap` of two shapes lying askew, taken along the first's axis: at each,
/// the end of one axis against the other shape's side, and whether that end's rim lies past the
/// other's cap. Such an end is not where the overlap ends: taken along the other axis, the
/// overlap ends elsewhere. Two cylinders of a poured pile, 26° askew and 1.9e-5 m apart, had
/// their ends read along one axis as the second's rim against the first's side at 4.5e-5 m deep,
/// and along the other as the first's rim 2.4 cm past the second's cap, with no point where
/// they touched. Another pair, read in one order and then the other from step to step, read
/// up to 3.5 cm deep within 50 steps.
fn askew_ends(
    (lying1, axis1): (&Lying, &Axis),
    (lying2, axis2): (&Lying, &Axis),
    &Overlap { s2a, s2b, low, high }: &Overlap,
) -> Option<[(TouchPoint, bool); 2]> {
    let end = |s: f64| {
        if s <= 0.0 || s >= axis1.length {
            lying1.end_on_side(axis1.at(s), axis1.along, lying2, axis2)
        } else {
            let end2 = if (s - s2a).abs() <= (s - s2b).abs() {
                axis2.start
            } else {
                axis2.end
            };
            lying2
                .end_on_side(end2, axis2.along, lying1, axis1)
                .map(|(touch, past_cap)| (touch.swapped(), past_cap))
        }
    };
    Some([end(low)?, end(high)?])
}

/// How far, m, [`rest_on_ends`] may lower the two ends of an overlap onto the crossing of
/// nearly parallel axes: about a third of one step's fall at 60 Hz (g·dt² = 2.7 mm).
const REST_ON_ENDS: f64 = 1e-3;

/// Two shapes lying nearly parallel rest on the two ends of their overlap (`ends`), lowered
/// together, by at most [`REST_ON_ENDS`], until the line between them passes through
/// `crossing`, where their axes pass nearest: whether they were lowered. The line between the
/// ends then reads the crossing's gap where the crossing lies, and the ends hover at most that
/// far above the other's side.
///
/// Where the axes pass nearest is ill-conditioned at a small angle θ: a turn by ε moves it by
/// about d·ε/θ² along the axes, d their distance. Two cylinders of 0.25 m lying 1.32° askew
/// had it jump 15 cm and back every step while the upper one turned by 0.007°. Resting on
/// it, the upper one is a rocker whose contact runs 940 m per radian of tilt, too fast for a
/// step of 1/60 s: it rocked from end to end, its ends' normals, which lean sin θ along its
/// axis, pushing it to and fro at 2.4e-3 m/s for good. Lowered ends keep the line's slope, so
/// the shape still tilts on them as the true ends' gaps say.
pub(super) fn rest_on_ends(ends: &mut [TouchPoint; 2], crossing: &TouchPoint) -> bool {
    let [low, high] = &*ends;
    let span = high.on_first - low.on_first;
    let length_squared = span.length_squared();
    if length_squared <= 0.0 {
        return false;
    }
    let u = (crossing.on_first - low.on_first).dot(span) / length_squared;
    let chord = low.gap + (high.gap - low.gap) * u.clamp(0.0, 1.0);
    let lowered = chord - crossing.gap;
    if !(0.0..=REST_ON_ENDS).contains(&lowered) {
        return false;
    }
    for end in ends.iter_mut() {
        end.gap -= lowered;
        end.on_second += end.normal * lowered;
    }
    true
}

/// The least `|cos|` between a cylinder's axis and parry's normal out of it (30°) at which its
/// cap, not its side, is what touches. GJK's normal between two sides was seen up to 42°
/// astray (36° on three logs at rest), never so near an axis.
const CAP_FACING: f32 = 0.866;

/// Most steps `Lying::end_on_side` takes towards a rim's point nearest another axis.
const RIM_STEPS: usize = 32;

/// A lying shape's axis segment in the world.
struct Axis {
    start: DVec3,
    end: DVec3,
    /// Unit.
    along: DVec3,
    length: f64,
}

/// Where another axis segment lies along this one: its ends' projections (`s2a` its start's,
/// `s2b` its end's, from this one's start) and the stretch of this segment between them.
struct Overlap {
    s2a: f64,
    s2b: f64,
    low: f64,
    high: f64,
}

impl Axis {
    fn at(&self, s: f64) -> DVec3 {
        self.start + self.along * s
    }

    /// Where `other` lies along this axis; `None` where the two only meet end to end, and no
    /// side touches the other.
    fn overlap(&self, other: &Axis) -> Option<Overlap> {
        let (s2a, s2b) = (
            self.along.dot(other.start - self.start),
            self.along.dot(other.end - self.start),
        );
        let (low, high) = (s2a.min(s2b).max(0.0), s2a.max(s2b).min(self.length));
        (high - low > 1e-6 * self.length).then_some(Overlap { s2a, s2b, low, high })
    }

    /// The point of the segment nearest `point`.
    fn nearest(&self, point: DVec3) -> DVec3 {
        self.at(self.along.dot(point - self.start).clamp(0.0, self.length))
    }
}

/// Two cylinders, or a cylinder and a capsule, lying across each other, axes skewed: they touch
/// where the common perpendicular of their axes meets both sides, if it meets both axes within
/// their segments (else a cap's rim or a capsule's end touches, and parry's answer stands).
/// parry finds the point through GJK, whose normal was about a milliradian astray, always the
/// same way: the upper logs of a log cabin rolled off their supports, accelerating at 1.3e-3 g.
/// Two capsules are left to parry's own segment test, which is exact, unless they lie nearly
/// parallel: then [`side_by_side`] gives the ends of their overlap too.
pub(super) fn crossed(
    manifold: &ContactManifold<(), ()>,
    (first, second): (&dyn Shape, &dyn Shape),
    (rotation1, translation1): (DQuat, DVec3),
    (rotation2, translation2): (DQuat, DVec3),
) -> Option<TouchPoint> {
    if manifold.points.is_empty() {
        return None;
    }
    let (lying1, lying2) = (lying(first, manifold.subshape1)?, lying(second, manifold.subshape2)?);
    let (a1, b1, radius1) = lying1.axis();
    let (a2, b2, radius2) = lying2.axis();
    let start1 = translation1 + rotation1 * a1.as_dvec3();
    let start2 = translation2 + rotation2 * a2.as_dvec3();
    let (d1, d2) = (rotation1 * (b1 - a1).as_dvec3(), rotation2 * (b2 - a2).as_dvec3());
    let (l1, l2) = (d1.length_squared(), d2.length_squared());
    let cross = d1.dot(d2);
    let capsules = matches!((&lying1, &lying2), (Lying::Capsule(_), Lying::Capsule(_)));
    if capsules && cross * cross < NEARLY_PARALLEL * NEARLY_PARALLEL * l1 * l2 {
        return None;
    }
    let skew = l1 * l2 - cross * cross;
    if !(l1 > 0.0 && l2 > 0.0) || cross * cross >= PARALLEL * PARALLEL * l1 * l2 {
        return None; // parallel: `side_by_side`'s
    }
    // The closest points of the two lines, as fractions along each axis segment.
    let w = start1 - start2;
    let (e1, e2) = (d1.dot(w), d2.dot(w));
    let s = (cross * e2 - l2 * e1) / skew;
    let t = (l1 * e2 - cross * e1) / skew;
    if !((0.0..=1.0).contains(&s) && (0.0..=1.0).contains(&t)) {
        return None;
    }
    let (on_axis1, on_axis2) = (start1 + d1 * s, start2 + d2 * t);
    let apart = on_axis1 - on_axis2;
    let normal = apart.try_normalize()?;
    let (radius1, radius2) = (radius1 as f64, radius2 as f64);
    Some(TouchPoint {
        on_first: on_axis1 - normal * radius1,
        on_second: on_axis2 + normal * radius2,
        gap: apart.length() - radius1 - radius2,
        normal,
    })
}

/// How far inside a part, m, a line on its face is clipped to it: a ray along the face itself
/// grazes it, and `f32` rounding decides whether it hits.
const INSET: f32 = 1e-4;

/// The stretch, as fractions from `start` to `end`, of a line on a face of `part` (at `pose`,
/// `normal` the face's outward normal in the world) that lies on the part's face.
fn clip(
    part: &dyn Shape,
    (rotation, translation): (DQuat, DVec3),
    normal: DVec3,
    start: DVec3,
    end: DVec3,
) -> Option<(f64, f64)> {
    if let Some(cylinder) = part.as_cylinder() {
        return clip_to_disc(cylinder.radius as f64, (rotation, translation), start, end);
    }
    if let TypedShape::Triangle(triangle) = part.as_typed_shape() {
        let local = |p: DVec3| rotation.inverse() * (p - translation);
        return clip_to_triangle(triangle, local(start), local(end));
    }
    let inside = (rotation.inverse() * normal).as_vec3() * -INSET;
    let local = |p: DVec3| (rotation.inverse() * (p - translation)).as_vec3() + inside;
    let (start, end) = (local(start), local(end));
    let from = part.cast_local_ray(&Ray::new(start, end - start), 1.0, true)?;
    let to = 1.0 - part.cast_local_ray(&Ray::new(end, start - end), 1.0, true)?;
    (from <= to).then_some((from as f64, to as f64))
}

/// The stretch, as fractions from `start` to `end` (in the triangle's plane and frame), of a
/// line that lies over `triangle`: a ray along the line 1e-4 m under a face, as [`clip`] casts
/// on solids, would pass under a triangle, which has no inside.
fn clip_to_triangle(triangle: &Triangle, start: DVec3, end: DVec3) -> Option<(f64, f64)> {
    let corners = [triangle.a, triangle.b, triangle.c].map(Vec3::as_dvec3);
    let turn = (corners[1] - corners[0]).cross(corners[2] - corners[0]);
    let (mut from, mut to) = (0.0_f64, 1.0_f64);
    for k in 0..3 {
        let (a, b) = (corners[k], corners[(k + 1) % 3]);
        // How far inside the edge, in units of its length times the turn's.
        let inside = |p: DVec3| (b - a).cross(p - a).dot(turn);
        let (at_start, at_end) = (inside(start), inside(end));
        if at_start < 0.0 && at_end < 0.0 {
            return None;
        }
        if at_start < 0.0 {
            from = from.max(at_start / (at_start - at_end));
        } else if at_end < 0.0 {
            to = to.min(at_start / (at_start - at_end));
        }
    }
    (from <= to).then_some((from, to))
}

/// The stretch, as fractions from `start` to `end`, of a line on a cylinder's cap (at `pose`,
/// of `radius`) that lies on the cap's disc: exactly, where parry casts a ray on a cylinder
/// through GJK.
fn clip_to_disc(radius: f64, (rotation, translation): (DQuat, DVec3), start: DVec3, end: DVec3) -> Option<(f64, f64)> {
    let across_axis = |p: DVec3| {
        let local = rotation.inverse() * (p - translation);
        DVec2::new(local.x, local.z)
    };
    let (from, to) = (across_axis(start), across_axis(end));
    let [enter, leave] = circle_crossings(from, to - from, radius)?;
    let (enter, leave) = (enter.max(0.0), leave.min(1.0));
    (enter <= leave).then_some((enter, leave))
}

/// Where the line `from + t·along`, in a plane and about a circle's centre, crosses the circle
/// of `radius`: the two values of `t`, the smaller first. `None` where it misses or only grazes
/// the circle, or `along` is zero.
pub(super) fn circle_crossings(from: DVec2, along: DVec2, radius: f64) -> Option<[f64; 2]> {
    // |from + t·along|² = radius²
    let (a, half_b, c) = (
        along.length_squared(),
        from.dot(along),
        from.length_squared() - radius * radius,
    );
    let discriminant = half_b * half_b - a * c;
    if a <= 0.0 || discriminant <= 0.0 {
        return None;
    }
    let root = discriminant.sqrt();
    Some([(-half_b - root) / a, (-half_b + root) / a])
}

#[cfg(test)]
mod tests {
    use super::super::reduction::manifold_with_a_point;
    use super::*;
    use parry3d::query::PersistentQueryDispatcher;
    use parry3d::shape::Cuboid;

    /// A pose captured in `f64` as parry's, translated by `-origin` so that `f32` keeps its
    /// micrometres.
    fn parry_pose((rotation, translation): (DQuat, DVec3), origin: DVec3) -> parry3d::math::Pose {
        parry3d::math::Pose::from_parts((translation - origin).as_vec3(), rotation.as_quat())
    }

    /// The least gap between the rim of a cylinder's end (centre, unit axis, radius) and the side
    /// of another (its axis segment and radius), by sampling the rim.
    fn rim_gap_sampled(centre: DVec3, axis: DVec3, radius: f64, side: (DVec3, DVec3), side_radius: f64) -> f64 {
        let across = axis.any_orthonormal_vector();
        let other = axis.cross(across);
        let (start, end) = side;
        let along = (end - start).normalize();
        let length = (end - start).length();
        (0..200_000)
            .map(|k| {
                let angle = std::f64::consts::TAU * k as f64 / 200_000.0;
                let rim = centre + (across * angle.cos() + other * angle.sin()) * radius;
                let on_axis = start + along * along.dot(rim - start).clamp(0.0, length);
                (rim - on_axis).length() - side_radius
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// Two cylinders lying one on the other, 1°–30° askew, their axes' common perpendicular
    /// beyond both: they touch at both ends of their overlap, one end of each on the other's
    /// side, each end's gap the least over its rim.
    #[test]
    fn cylinders_lying_askew_touch_at_both_ends_of_their_overlap() {
        for degrees in [1.0, 3.0, 10.0, 30.0] {
            cylinders_askew(degrees);
        }
    }

    fn cylinders_askew(degrees: f64) {
        let cylinder = Cylinder::new(0.5, 0.25);
        let lying = DQuat::from_rotation_z(-std::f64::consts::FRAC_PI_2);
        let askew = DQuat::from_rotation_y(f64::to_radians(degrees)) * lying;
        let (first, second) = ((lying, DVec3::ZERO), (askew, DVec3::new(0.2, 0.499, 0.1)));
        let manifold = ContactManifold::with_data(0, 0, ());
        let [low, high] = side_by_side(&manifold, (&cylinder, &cylinder), first, second).unwrap();
        let axis = |(rotation, translation): (DQuat, DVec3)| {
            let along = rotation * DVec3::Y;
            (translation - along * 0.5, translation + along * 0.5, along)
        };
        let ((start1, end1, along1), (start2, end2, along2)) = (axis(first), axis(second));
        // The overlap runs from the second's start to the first's end.
        let low_sampled = rim_gap_sampled(start2, along2, 0.25, (start1, end1), 0.25);
        let high_sampled = rim_gap_sampled(end1, along1, 0.25, (start2, end2), 0.25);
        for (point, sampled) in [(low, low_sampled), (high, high_sampled)] {
            assert!(
                (point.gap - sampled).abs() < 1e-9,
                "gap {} against {sampled}",
                point.gap
            );
            assert!((point.on_first - point.on_second - point.normal * point.gap).length() < 1e-12);
        }
        assert!(
            low.normal.dot(along1).abs() < 1e-12,
            "the first's side: normal across its axis"
        );
        assert!(
            high.normal.dot(along2).abs() < 1e-12,
            "the second's side: normal across its axis"
        );
    }

    /// Two cylinders of a poured pile, axes 26° askew, the second's rim 2.4 cm past the first's
    /// cap and 1.2 cm inside its radius, the two 1.9e-5 m apart by parry. Taken along the first
    /// axis, the overlap ends where the second's end lies, and measured from the first's axis's
    /// end, as a capsule's would be, that rim read 1.07 cm deep. Either way round, the ends are
    /// now the first's rim against the second's side, within parry's tolerance of touching, and
    /// the second's far end.
    #[test]
    fn cylinders_askew_read_the_same_ends_either_way_round() {
        let cylinder = Cylinder::new(0.5, 0.25);
        let first = (
            DQuat::from_xyzw(
                0.29286124973183075,
                0.7443349547110572,
                -0.43060376786393634,
                -0.41806477811719595,
            ),
            DVec3::new(0.638245346092363, 1.6602807414757177, -0.027879716379201905),
        );
        let second = (
            DQuat::from_xyzw(
                -0.897821779558668,
                -0.08763584902958692,
                -0.31060840881187657,
                -0.2995971069458522,
            ),
            DVec3::new(0.7334165050417963, 1.1059896836835146, -0.46060761596950245),
        );
        let pose = |at| parry_pose(at, first.1);
        let contact = parry3d::query::contact(&pose(first), &cylinder, &pose(second), &cylinder, 0.01);
        let apart = contact.unwrap().unwrap().dist as f64;
        let shapes: (&dyn Shape, &dyn Shape) = (&cylinder, &cylinder);
        let manifold = ContactManifold::with_data(0, 0, ());
        let ends = side_by_side(&manifold, shapes, first, second).unwrap();
        let other_way = side_by_side(&manifold, shapes, second, first)
            .unwrap()
            .map(TouchPoint::swapped);
        let by_gap = |mut ends: [TouchPoint; 2]| {
            ends.sort_by(|a, b| a.gap.total_cmp(&b.gap));
            ends
        };
        let [near, far] = by_gap(ends);
        assert!(
            (near.gap - apart).abs() < 1e-4,
            "touching: {} against parry's {apart}",
            near.gap
        );
        assert!(far.gap > 0.4, "the far end: {}", far.gap);
        for (end, other) in [near, far].iter().zip(by_gap(other_way)) {
            assert_eq!(
                (end.gap, end.on_first, end.normal),
                (other.gap, other.on_first, other.normal)
            );
            assert!((end.on_first - end.on_second - end.normal * end.gap).length() < 1e-12);
        }
        let along = first.0 * DVec3::Y;
        assert!(
            along.dot(ends[1].on_first - ends[0].on_first) >= 0.0,
            "along the first axis"
        );
    }

    /// Two cylinders of a poured pile, axes 29.6° apart, the first's rim on the second's cap
    /// 9e-6 m deep by parry: its normal is the cap's, and the two are not lying side by side,
    /// whichever is asked first. Read as lying side by side, they got a normal 60° off the
    /// cap's, and the first sank 1.9 cm into the second within four steps.
    #[test]
    fn a_cylinder_leaning_on_a_cap_does_not_lie_beside_it() {
        let cylinder = Cylinder::new(0.5, 0.25);
        let leaning = (
            DQuat::from_xyzw(
                0.45111172688224904,
                -0.4620974135563138,
                0.09457935202255677,
                0.757640374072603,
            ),
            DVec3::new(0.046136828885612394, 1.6049435053780163, -0.19967514537824108),
        );
        let under = (
            DQuat::from_xyzw(
                0.27414478282596566,
                -0.11294174047057172,
                0.7079959504392084,
                -0.6409606348836598,
            ),
            DVec3::new(-0.9186599044355784, 1.6127770574105558, 0.27149985649029934),
        );
        let pose = |at| parry_pose(at, under.1);
        let shapes: (&dyn Shape, &dyn Shape) = (&cylinder, &cylinder);
        for (first, second) in [(leaning, under), (under, leaning)] {
            let mut manifolds = Vec::new();
            parry3d::query::DefaultQueryDispatcher
                .contact_manifolds(
                    &pose(first).inv_mul(&pose(second)),
                    &cylinder,
                    &cylinder,
                    0.01,
                    &mut manifolds,
                    &mut None,
                )
                .unwrap();
            let manifold = &manifolds[0];
            assert!(!manifold.points.is_empty());
            let cap_normal = if first == under {
                manifold.local_n1
            } else {
                manifold.local_n2
            };
            assert!(cap_normal.y.abs() > 0.99, "out of the cap: {cap_normal}");
            assert!(side_by_side(manifold, shapes, first, second).is_none());
        }
    }

    /// Two cylinders standing end on end, axes 0.25° apart and 4.4 mm into each other: their
    /// ends touch, not their sides, however nearly parallel the axes.
    #[test]
    fn cylinders_end_on_end_do_not_lie_side_by_side() {
        let cylinder = Cylinder::new(0.5, 0.25);
        let tilted = DQuat::from_rotation_z(0.25f64.to_radians());
        let upper = DVec3::new(0.01, 1.0 - 0.0044, 0.0);
        let manifold = ContactManifold::with_data(0, 0, ());
        let shapes: (&dyn Shape, &dyn Shape) = (&cylinder, &cylinder);
        assert!(side_by_side(&manifold, shapes, (DQuat::IDENTITY, DVec3::ZERO), (tilted, upper)).is_none());
    }

    /// A cylinder lying on another 1.32° askew, the common perpendicular of their axes within
    /// the overlap: it rests on the overlap's two ends, lowered together so that the line
    /// between them reads the crossing's gap where the crossing lies.
    #[test]
    fn cylinders_nearly_parallel_rest_on_lowered_ends() {
        let cylinder = Cylinder::new(0.5, 0.25);
        let lying = DQuat::from_rotation_z(-std::f64::consts::FRAC_PI_2);
        let askew = DQuat::from_rotation_y(1.32f64.to_radians()) * lying;
        let (first, second) = ((lying, DVec3::ZERO), (askew, DVec3::new(0.08, 0.5, 0.0)));
        let shapes: (&dyn Shape, &dyn Shape) = (&cylinder, &cylinder);
        let mut ends = side_by_side(&ContactManifold::with_data(0, 0, ()), shapes, first, second).unwrap();
        let touching = manifold_with_a_point(0.0);
        let crossing = crossed(&touching, shapes, first, second).unwrap();
        let before = ends.map(|end| end.gap);
        assert!(
            before.iter().all(|gap| *gap > crossing.gap + 1e-5),
            "the ends lie higher"
        );
        assert!(rest_on_ends(&mut ends, &crossing));
        let lowered = before[0] - ends[0].gap;
        assert!((before[1] - ends[1].gap - lowered).abs() < 1e-15, "lowered together");
        assert!(lowered > 0.0 && lowered <= REST_ON_ENDS);
        let span = ends[1].on_first - ends[0].on_first;
        let u = (crossing.on_first - ends[0].on_first).dot(span) / span.length_squared();
        let line = ends[0].gap + (ends[1].gap - ends[0].gap) * u;
        assert!(
            (line - crossing.gap).abs() < 1e-12,
            "line {line} at the crossing's {}",
            crossing.gap
        );
        for end in ends {
            assert!((end.on_first - end.on_second - end.normal * end.gap).length() < 1e-12);
        }
    }

    /// A cylinder lying on a 40 m slab, parry's normal out of the slab astray 73° below the
    /// horizontal: it rests on the slab's top face, not on the bottom one nearest that normal.
    #[test]
    fn a_side_rests_on_the_face_it_lies_outside_of() {
        let cylinder = Cylinder::new(0.5, 0.25);
        let slab = Cuboid::new(Vec3::new(20.0, 0.5, 20.0));
        let lying = (
            DQuat::from_rotation_z(std::f64::consts::FRAC_PI_2),
            DVec3::new(0.1, 0.25, 0.1),
        );
        let ground = (DQuat::IDENTITY, DVec3::new(0.0, -0.5, 0.0));
        let mut manifold = manifold_with_a_point(0.0);
        manifold.local_n2 = Vec3::new(-0.26, -0.955, -0.15).normalize();
        manifold.local_n1 = lying.0.inverse().as_quat() * -manifold.local_n2;
        let shapes: (&dyn Shape, &dyn Shape) = (&cylinder, &slab);
        let ends = side_on_face(&manifold, shapes, lying, ground, None).unwrap();
        for end in ends {
            assert!(end.gap.abs() < 1e-6, "gap {}", end.gap);
            assert!(end.normal.y > 1.0 - 1e-12, "normal {}", end.normal);
        }
    }

    /// A seven-sided prism settling flat on a slab 40 m across, 2° from flat, its lowest corner
    /// 0.1 mm above the slab, with a normal such as GJK gave it: 19° off both faces, out of an
    /// edge of the prism's face. The slab's face parts the shapes most, and the prism's face is
    /// read against it, each corner at its own height.
    #[test]
    fn a_normal_off_both_faces_turns_to_the_face_that_parts_the_shapes() {
        let corners: Vec<Vec3> = (0..14)
            .map(|k| {
                let angle = (k / 2) as f32 * std::f32::consts::TAU / 7.0;
                Vec3::new(0.3 * angle.cos(), [-0.15, 0.15][k % 2], 0.3 * angle.sin())
            })
            .collect();
        let prism = parry3d::shape::ConvexPolyhedron::from_convex_hull(&corners).unwrap();
        let slab = Cuboid::new(Vec3::new(20.0, 0.5, 20.0));
        let tilt = DQuat::from_rotation_x(2f64.to_radians());
        let height = |corner: Vec3| (tilt * corner.as_dvec3()).y;
        let lowest = corners
            .iter()
            .map(|&corner| height(corner))
            .fold(f64::INFINITY, f64::min);
        let prism_pose = (tilt, DVec3::new(0.0, 1e-4 - lowest, 0.0));
        let ground = (DQuat::IDENTITY, DVec3::new(0.0, -0.5, 0.0));
        let off = 19f64.to_radians();
        let gjks = DVec3::new(0.0, -off.cos(), off.sin());
        let mut manifold = manifold_with_a_point(1e-4);
        manifold.local_n1 = (tilt.inverse() * gjks).as_vec3();
        manifold.local_n2 = (-gjks).as_vec3();
        let mut points = Vec::new();
        let shapes: (&dyn Shape, &dyn Shape) = (&prism, &slab);
        assert!(face_contact(
            &manifold,
            shapes,
            (false, 0.05),
            prism_pose,
            ground,
            &mut points
        ));
        let mut gaps: Vec<f64> = points.iter().map(|(point, _)| point.gap).collect();
        let mut heights: Vec<f64> = corners
            .iter()
            .filter(|corner| corner.y < 0.0)
            .map(|&corner| height(corner) + prism_pose.1.y)
            .collect();
        gaps.sort_by(f64::total_cmp);
        heights.sort_by(f64::total_cmp);
        assert_eq!(gaps.len(), 7, "{gaps:?}");
        for (gap, height) in gaps.iter().zip(&heights) {
            assert!((gap - height).abs() < 1e-7, "gap {gap} at a corner {height} high");
        }
        for (point, _) in &points {
            assert!(point.normal.y > 1.0 - 1e-12, "normal {}", point.normal);
        }
    }

    /// Two capsules lying one on the other, 3° askew, their axes' common perpendicular within
    /// both: besides the ends of their overlap, they touch nearest there, at the axes' distance.
    #[test]
    fn capsules_lying_askew_touch_where_their_axes_cross() {
        let capsule = Capsule::new_y(0.5, 0.25);
        let lying = DQuat::from_rotation_z(-std::f64::consts::FRAC_PI_2);
        let askew = DQuat::from_rotation_y(3f64.to_radians()) * lying;
        let (first, second) = ((lying, DVec3::ZERO), (askew, DVec3::new(0.2, 0.499, 0.0)));
        let manifold = ContactManifold::with_data(0, 0, ());
        let shapes: (&dyn Shape, &dyn Shape) = (&capsule, &capsule);
        let ends = side_by_side(&manifold, shapes, first, second).unwrap();
        let touching = manifold_with_a_point(0.0);
        let nearest = crossed(&touching, shapes, first, second).unwrap();
        // Skew lines: the distance along their common perpendicular.
        let (along1, along2) = (first.0 * DVec3::Y, second.0 * DVec3::Y);
        let perpendicular = along1.cross(along2).normalize();
        let distance = (second.1 - first.1).dot(perpendicular).abs();
        assert!((nearest.gap - (distance - 0.5)).abs() < 1e-12, "gap {}", nearest.gap);
        assert!(
            ends.iter().all(|end| end.gap > nearest.gap + 1e-6),
            "the ends lie farther apart"
        );
    }

    /// A log (radius 0.25 m) lying across an upright cylinder's cap (radius 0.5 m) 0.2 m off its
    /// centre, 1 mm into it: it touches along the chord the cap's rim cuts from its lowest line,
    /// at both ends, 1 mm deep, along the cap's normal, whichever shape parry takes first.
    /// Tilted 5° along its length, that chord's ends lie on the rim, where the cap's normal is
    /// not the contact's: parry's answer stands.
    #[test]
    fn a_side_lying_across_a_cap_touches_along_the_chord() {
        let (upright, log) = (Cylinder::new(0.5, 0.5), Cylinder::new(1.0, 0.25));
        let standing = (DQuat::IDENTITY, DVec3::ZERO);
        let along_z = DQuat::from_rotation_x(std::f64::consts::FRAC_PI_2);
        let across = |tilt: f64| (DQuat::from_rotation_x(tilt) * along_z, DVec3::new(0.2, 0.749, 0.1));
        let half_chord = (0.25f64 - 0.04).sqrt();
        for (tilt, touches) in [(0.0, true), (5f64.to_radians(), false)] {
            let lying = across(tilt);
            for (first, second, shapes) in [
                (standing, lying, (&upright as &dyn Shape, &log as &dyn Shape)),
                (lying, standing, (&log as &dyn Shape, &upright as &dyn Shape)),
            ] {
                let mut manifolds = Vec::new();
                parry3d::query::DefaultQueryDispatcher
                    .contact_manifolds(
                        &parry_pose(first, DVec3::ZERO).inv_mul(&parry_pose(second, DVec3::ZERO)),
                        shapes.0,
                        shapes.1,
                        0.01,
                        &mut manifolds,
                        &mut None,
                    )
                    .unwrap();
                let ends = side_on_cap(&manifolds[0], shapes, first, second);
                assert_eq!(ends.is_some(), touches, "tilted {tilt} rad");
                let Some(ends) = ends else { continue };
                let out_of_second = if first == standing { DVec3::NEG_Y } else { DVec3::Y };
                for (end, z) in ends.iter().zip([-half_chord, half_chord]) {
                    let on_cap = if first == standing { end.on_first } else { end.on_second };
                    assert!((end.gap + 1e-3).abs() < 1e-12, "gap {}", end.gap);
                    assert!((end.normal - out_of_second).length() < 1e-12, "normal {}", end.normal);
                    let expected = DVec3::new(0.2, 0.5, z);
                    assert!((on_cap - expected).length() < 1e-12, "{on_cap} against {expected}");
                }
            }
        }
    }
}
