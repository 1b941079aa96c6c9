//! Stage 3, a hull's face of more than four corners in a contact on a face: parry describes a face
//! to its clipping by at most four corners and, for a hull, takes the face's first four
//! ([`parry3d::shape::ConvexPolyhedron`]'s `local_support_feature`, "TODO: if there are more
//! than 4 vertices …"). A seven-sided prism set flat on a slab was held on four corners to one
//! side of its centre; it tipped over that chord and sank 28 cm into the slab within a second.
//!
//! Where such a face, or the other shape's, is in the contact, the contact is the two faces'
//! overlap in the flat face's plane, each point's gap measured exactly: the corners of each that
//! lie over the other, and where their edges cross; against a cylinder's cap, the rim's points
//! over the face, the face's corners over the cap, and where the face's edges cross the rim.
//! The faces may lean on each other (a prism landing on a corner): the corners that parry left
//! out are those that strike next. So, too, for faces of any corners where parry clipped them
//! along a normal GJK turned off both (`refine::face_contact`). Knows nothing of caches,
//! reduction or bodies.

use bevy_math::{DQuat, DVec2, DVec3, Vec3};
use parry3d::shape::{ConvexPolyhedron, Shape, TypedShape};

use super::refine::{FacePlane, TouchPoint, circle_crossings};

/// Most corners a face is read with: a hull's face with more is left to parry.
const MOST_CORNERS: usize = 64;

/// A face of a shape in the world, its corners in order round it.
struct Polygon {
    corners: [DVec3; MOST_CORNERS],
    count: usize,
}

impl Polygon {
    fn new() -> Self {
        Self {
            corners: [DVec3::ZERO; MOST_CORNERS],
            count: 0,
        }
    }

    fn push(&mut self, corner: DVec3) -> Option<()> {
        *self.corners.get_mut(self.count)? = corner;
        self.count += 1;
        Some(())
    }

    fn corners(&self) -> &[DVec3] {
        &self.corners[..self.count]
    }

    fn edges(&self) -> impl Iterator<Item = (usize, DVec3, DVec3)> + '_ {
        let n = self.count;
        (0..n).map(move |i| (i, self.corners[i], self.corners[(i + 1) % n]))
    }

    /// A point of its plane and its unit normal, either way round.
    fn plane(&self) -> (DVec3, DVec3) {
        let [a, b, c] = [self.corners[0], self.corners[1], self.corners[2]];
        (a, (b - a).cross(c - a).normalize_or_zero())
    }
}

/// The hull's face whose normal is nearest `towards` (in its frame): its index and normal.
pub(super) fn nearest_hull_face(hull: &ConvexPolyhedron, towards: Vec3) -> Option<(usize, Vec3)> {
    hull.faces()
        .iter()
        .enumerate()
        .map(|(index, face)| (index, face.normal))
        .max_by(|a, b| a.1.dot(towards).total_cmp(&b.1.dot(towards)))
}

/// The indices of the hull's face `index`'s corners, in order round it.
pub(super) fn face_vertices(hull: &ConvexPolyhedron, index: usize) -> &[u32] {
    let face = hull.faces()[index];
    let first = face.first_vertex_or_edge as usize;
    &hull.vertices_adj_to_face()[first..first + face.num_vertices_or_edges as usize]
}

/// Whether `shape`'s face nearest `towards` (its frame) has more than four corners: one parry
/// cuts short.
fn has_long_face(shape: &dyn Shape, towards: Vec3) -> bool {
    shape.as_convex_polyhedron().is_some_and(|hull| {
        nearest_hull_face(hull, towards).is_some_and(|(index, _)| hull.faces()[index].num_vertices_or_edges > 4)
    })
}

/// `shape`'s face nearest `towards` (its frame), at `pose`: the feature parry clips, whole.
/// Where it leans, its corners and crossings lie at their own gaps, and those beyond the
/// prediction are dropped, as parry drops them. `None` for a shape without faces, or a face of
/// more than [`MOST_CORNERS`].
fn face(shape: &dyn Shape, towards: Vec3, (rotation, translation): (DQuat, DVec3)) -> Option<Polygon> {
    let world = |p: Vec3| translation + rotation * p.as_dvec3();
    let mut polygon = Polygon::new();
    match shape.as_typed_shape() {
        TypedShape::ConvexPolyhedron(hull) => {
            let (index, _) = nearest_hull_face(hull, towards)?;
            for &vertex in face_vertices(hull, index) {
                polygon.push(world(hull.points()[vertex as usize]))?;
            }
        }
        TypedShape::Cuboid(cuboid) => {
            let axis = towards.abs().max_position();
            let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
            for (su, sv) in [(1.0, 1.0), (-1.0, 1.0), (-1.0, -1.0), (1.0, -1.0)] {
                let mut corner = cuboid.half_extents;
                corner[axis] *= towards[axis].signum();
                corner[u] *= su;
                corner[v] *= sv;
                polygon.push(world(corner))?;
            }
        }
        TypedShape::Triangle(triangle) => {
            for corner in [triangle.a, triangle.b, triangle.c] {
                polygon.push(world(corner))?;
            }
        }
        _ => return None,
    }
    (polygon.count >= 3).then_some(polygon)
}

/// Whether `point` lies inside the convex polygon `corners` (in order, either way round), or on
/// its boundary.
fn inside(corners: &[DVec2], point: DVec2) -> bool {
    let n = corners.len();
    let mut sign = 0.0;
    for i in 0..n {
        let (a, b) = (corners[i], corners[(i + 1) % n]);
        let side = (b - a).perp_dot(point - a);
        if side * sign < 0.0 {
            return false;
        }
        if side != 0.0 {
            sign = side;
        }
    }
    true
}

/// The corner after corner `i` round a polygon, in the plane's coordinates.
fn following(corners: &[DVec2], i: usize) -> DVec2 {
    corners[(i + 1) % corners.len()]
}

/// Where segments `a0`–`a1` and `b0`–`b1` cross strictly inside both: the parameter along each.
fn crossing(a0: DVec2, a1: DVec2, b0: DVec2, b1: DVec2) -> Option<(f64, f64)> {
    let (da, db) = (a1 - a0, b1 - b0);
    let denominator = da.perp_dot(db);
    if denominator == 0.0 {
        return None;
    }
    let s = (b0 - a0).perp_dot(db) / denominator;
    let t = (b0 - a0).perp_dot(da) / denominator;
    (s > 0.0 && s < 1.0 && t > 0.0 && t < 1.0).then_some((s, t))
}

/// A cylinder's cap in the world: its centre, unit normal out of the cylinder, radius, and two
/// directions across it fixed on the cylinder, which place its rim points.
struct Cap {
    centre: DVec3,
    normal: DVec3,
    radius: f64,
    across: [DVec3; 2],
}

/// How many rim points a cap is read with: the most `reduction` keeps of a manifold.
const RIM_POINTS: usize = 8;

/// How nearly, as a cosine (8°), a cylinder's axis must be along the face's normal for its cap
/// to lie on the face.
const FACING: f64 = 0.99;

/// `shape`'s cap facing `towards` (its frame) within [`FACING`], at `pose`, if it is a cylinder.
fn cap(shape: &dyn Shape, towards: Vec3, (rotation, translation): (DQuat, DVec3)) -> Option<Cap> {
    let cylinder = shape.as_cylinder()?;
    let out = DVec3::Y * f64::from(towards.y.signum());
    (f64::from(towards.y.abs()) >= FACING).then(|| Cap {
        centre: translation + rotation * out * f64::from(cylinder.half_height),
        normal: rotation * out,
        radius: f64::from(cylinder.radius),
        across: [rotation * DVec3::X, rotation * DVec3::Z],
    })
}

/// Ids of the kinds of point, apart from each other and from the ids parry, `refine`, `caps`
/// and `seams` give.
const OTHER_CORNER: u64 = 1 << 40;
const FACE_CORNER: u64 = 2 << 40;
const CROSSING: u64 = 3 << 40;
const RIM: u64 = 4 << 40;
const RIM_CROSSING: u64 = 5 << 40;

/// The points of a contact between the flat shape's face, `plane`, and the other shape's face or
/// cap, in the plane's coordinates; each measured from the other shape to the plane, those
/// within the prediction kept.
struct Overlap<'a> {
    plane: &'a FacePlane,
    /// Directions across the plane.
    across: [DVec3; 2],
    /// A point of the other shape's face or cap and its unit normal.
    other: (DVec3, DVec3),
    prediction: f64,
    points: &'a mut Vec<(TouchPoint, u64)>,
}

impl<'a> Overlap<'a> {
    /// The overlap of `plane` with the other shape's face or cap, `other` (a point of it and its
    /// unit normal), its points to be written to `points`: none where the other leans more than
    /// 60° from the plane, which is no flat contact.
    fn new(
        plane: &'a FacePlane,
        other: (DVec3, DVec3),
        prediction: f64,
        points: &'a mut Vec<(TouchPoint, u64)>,
    ) -> Option<Self> {
        let normal = plane.normal;
        if other.1.dot(normal).abs() < 0.5 {
            return None;
        }
        points.clear();
        let across = normal.any_orthonormal_vector();
        Some(Self {
            plane,
            across: [across, normal.cross(across)],
            other,
            prediction,
            points,
        })
    }

    /// Coordinates in the plane.
    fn flat(&self, point: DVec3) -> DVec2 {
        DVec2::new(point.dot(self.across[0]), point.dot(self.across[1]))
    }

    fn flat_all(&self, polygon: &Polygon) -> [DVec2; MOST_CORNERS] {
        let mut flat = [DVec2::ZERO; MOST_CORNERS];
        for (flat, corner) in flat.iter_mut().zip(polygon.corners()) {
            *flat = self.flat(*corner);
        }
        flat
    }

    /// The other shape's point over `point`, a point of either face, as `id`.
    fn touch_over(&mut self, point: DVec3, id: u64) {
        let normal = self.plane.normal;
        let (on_other, other_normal) = self.other;
        let on_flat = point - normal * self.plane.gap(point);
        let up = other_normal.dot(on_other - on_flat) / other_normal.dot(normal);
        let touch = self.plane.touch(on_flat + normal * up);
        if touch.gap <= self.prediction {
            self.points.push((touch, id));
        }
    }

    /// The points where two faces overlap: the corners of each over the other, and where their
    /// edges cross.
    fn faces(&mut self, face: &Polygon, other: &Polygon) {
        let (face2, other2) = (self.flat_all(face), self.flat_all(other));
        let (face2, other2) = (&face2[..face.count], &other2[..other.count]);
        for (k, (corner, corner2)) in other.corners().iter().zip(other2).enumerate() {
            if inside(face2, *corner2) {
                self.touch_over(*corner, OTHER_CORNER | k as u64);
            }
        }
        for (i, (corner, corner2)) in face.corners().iter().zip(face2).enumerate() {
            if inside(other2, *corner2) {
                self.touch_over(*corner, FACE_CORNER | i as u64);
            }
        }
        for (i, a0, a1) in face.edges() {
            for j in 0..other2.len() {
                let crossed = crossing(face2[i], following(face2, i), other2[j], following(other2, j));
                if let Some((s, _)) = crossed {
                    self.touch_over(a0.lerp(a1, s), CROSSING | (i as u64) << 16 | j as u64);
                }
            }
        }
    }

    /// The points where a cap and a face overlap: the rim's points over the face, the face's
    /// corners over the cap, and where the face's edges cross the rim.
    fn cap_and_face(&mut self, cap: &Cap, face: &Polygon) {
        let face2 = self.flat_all(face);
        let face2 = &face2[..face.count];
        let centre2 = self.flat(cap.centre);
        for k in 0..RIM_POINTS {
            let angle = k as f64 * std::f64::consts::TAU / RIM_POINTS as f64;
            let rim = cap.centre + (cap.across[0] * angle.cos() + cap.across[1] * angle.sin()) * cap.radius;
            if inside(face2, self.flat(rim)) {
                self.touch_over(rim, RIM | k as u64);
            }
        }
        for (i, (corner, corner2)) in face.corners().iter().zip(face2).enumerate() {
            if corner2.distance_squared(centre2) <= cap.radius * cap.radius {
                self.touch_over(*corner, FACE_CORNER | i as u64);
            }
        }
        for (i, a, b) in face.edges() {
            let (from, to) = (face2[i] - centre2, following(face2, i) - centre2);
            let Some(crossings) = circle_crossings(from, to - from, cap.radius) else {
                continue;
            };
            // Strictly inside the edge: a crossing at a corner is that corner's.
            for (which, t) in crossings.into_iter().enumerate() {
                if t > 0.0 && t < 1.0 {
                    self.touch_over(a.lerp(b, t), RIM_CROSSING | (i as u64) << 1 | which as u64);
                }
            }
        }
    }
}

/// Whether a hull's face of more than four corners is in a flat contact: `flat`'s face of
/// `face_normal` (its frame) whose plane is `plane`, or `other`'s face (at `other_rotation`)
/// towards it. Where neither is, parry's points stand.
pub(super) fn long_face_in(
    plane: &FacePlane,
    (flat, face_normal): (&dyn Shape, Vec3),
    (other, other_rotation): (&dyn Shape, DQuat),
) -> bool {
    has_long_face(flat, face_normal) || has_long_face(other, (other_rotation.inverse() * -plane.normal).as_vec3())
}

/// The points of a flat contact in which a face meets the other shape's face or a cylinder's
/// cap: `flat` is the shape (part) whose face `plane` is, at its pose, with the face's normal in
/// its frame; `other` the other shape at its pose. Points whose gap exceeds `prediction` are
/// dropped. Writes the points to `points` and says whether it did: not where the other shape
/// has neither a face nor a cap facing the plane.
pub(super) fn faces_contact(
    plane: &FacePlane,
    (flat, flat_pose, face_normal): (&dyn Shape, (DQuat, DVec3), Vec3),
    (other, other_pose): (&dyn Shape, (DQuat, DVec3)),
    prediction: f64,
    points: &mut Vec<(TouchPoint, u64)>,
) -> bool {
    let into_other = (other_pose.0.inverse() * -plane.normal).as_vec3();
    let faces = (face(flat, face_normal, flat_pose), face(other, into_other, other_pose));
    let caps = (cap(flat, face_normal, flat_pose), cap(other, into_other, other_pose));
    match (caps, faces) {
        ((Some(cap), _), (_, Some(other_face))) => Overlap::new(plane, other_face.plane(), prediction, points)
            .map(|mut overlap| overlap.cap_and_face(&cap, &other_face)),
        ((_, Some(cap)), (Some(face), _)) => Overlap::new(plane, (cap.centre, cap.normal), prediction, points)
            .map(|mut overlap| overlap.cap_and_face(&cap, &face)),
        (_, (Some(face), Some(other_face))) => Overlap::new(plane, other_face.plane(), prediction, points)
            .map(|mut overlap| overlap.faces(&face, &other_face)),
        _ => None,
    }
    .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_inside_a_polygon_either_way_round() {
        let square = [DVec2::ZERO, DVec2::X, DVec2::ONE, DVec2::Y];
        let mut reversed = square;
        reversed.reverse();
        for corners in [square, reversed] {
            assert!(inside(&corners, DVec2::splat(0.5)));
            assert!(inside(&corners, DVec2::new(1.0, 0.5)), "on an edge");
            assert!(!inside(&corners, DVec2::new(1.1, 0.5)));
        }
    }

    /// A prism on a regular polygon of `sides` corners, 0.3 m round and 0.3 m tall.
    fn prism(sides: usize) -> ConvexPolyhedron {
        let corners: Vec<Vec3> = (0..2 * sides)
            .map(|k| {
                let angle = (k / 2) as f32 * std::f32::consts::TAU / sides as f32;
                Vec3::new(0.3 * angle.cos(), [-0.15, 0.15][k % 2], 0.3 * angle.sin())
            })
            .collect();
        ConvexPolyhedron::from_convex_hull(&corners).unwrap()
    }

    /// The points of `flat`'s upward face (through the point given, in its frame) with `other`,
    /// the second shape, within 1 cm.
    fn overlap(
        (flat, flat_pose, on_face): (&dyn Shape, (DQuat, DVec3), Vec3),
        other: (&dyn Shape, (DQuat, DVec3)),
    ) -> Vec<(TouchPoint, u64)> {
        let plane = FacePlane::new(false, (Vec3::Y, on_face), flat_pose);
        let mut points = Vec::new();
        assert!(long_face_in(&plane, (flat, Vec3::Y), (other.0, other.1.0)));
        assert!(faces_contact(
            &plane,
            (flat, flat_pose, Vec3::Y),
            other,
            0.01,
            &mut points
        ));
        points
    }

    /// A seven-sided prism standing `gap` m above a slab's top face (the flat one): its seven
    /// corners, each `gap` m off the face.
    #[test]
    fn a_face_of_seven_corners_touches_at_all_seven() {
        let slab = parry3d::shape::Cuboid::new(Vec3::new(5.0, 0.5, 5.0));
        let prism = prism(7);
        let gap = 1e-4;
        let slab_pose = (DQuat::IDENTITY, DVec3::new(0.0, -0.5, 0.0));
        let prism_pose = (DQuat::from_rotation_y(0.3), DVec3::new(1.0, 0.15 + gap, -2.0));
        let points = overlap((&slab, slab_pose, Vec3::new(0.0, 0.5, 0.0)), (&prism, prism_pose));
        assert_eq!(points.len(), 7);
        for (touch, _) in &points {
            assert!((touch.gap - gap).abs() < 1e-7, "{}", touch.gap);
            let from_axis = (touch.on_first - prism_pose.1).with_y(0.0).length();
            assert!((from_axis - 0.3).abs() < 1e-6, "{from_axis}: not a corner");
        }
    }

    /// A cap 0.28 m round on the same prism's top face, whose edges lie 0.27 m from its axis: the
    /// rim crosses each edge twice, and its points over the face touch too; every point lies on
    /// both the cap and the face, at the gap between them.
    #[test]
    fn a_cap_on_a_face_of_seven_corners_touches_over_their_overlap() {
        let prism = prism(7);
        let cylinder = parry3d::shape::Cylinder::new(0.2, 0.28);
        let gap = 1e-4;
        let prism_pose = (DQuat::IDENTITY, DVec3::new(0.0, 0.15, 0.0));
        let cylinder_pose = (DQuat::from_rotation_y(0.1), DVec3::new(0.0, 0.5 + gap, 0.0));
        let points = overlap(
            (&prism, prism_pose, Vec3::new(0.0, 0.15, 0.0)),
            (&cylinder, cylinder_pose),
        );
        let crossings = points.iter().filter(|(_, id)| id & (7 << 40) == RIM_CROSSING).count();
        assert_eq!(crossings, 14);
        assert!(points.len() > 14, "no rim point over the face");
        let inradius = 0.3 * (std::f64::consts::PI / 7.0).cos();
        for (touch, _) in &points {
            assert!((touch.gap - gap).abs() < 1e-7, "{}", touch.gap);
            let from_axis = touch.on_second.with_y(0.0).length();
            assert!(from_axis <= 0.28 + 1e-6 && from_axis >= inradius - 1e-6, "{from_axis}");
        }
    }

    #[test]
    fn crossing_edges_meet_where_they_cross() {
        let (s, t) = crossing(
            DVec2::ZERO,
            DVec2::new(2.0, 0.0),
            DVec2::new(0.5, -1.0),
            DVec2::new(0.5, 1.0),
        )
        .unwrap();
        assert!((s - 0.25).abs() < 1e-15 && (t - 0.5).abs() < 1e-15);
        assert!(crossing(DVec2::ZERO, DVec2::X, DVec2::new(2.0, -1.0), DVec2::new(2.0, 1.0)).is_none());
    }
}
