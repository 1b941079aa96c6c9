//! Stage 3, the contacts parry's internal-edge constraints get wrong in a valley: the triangle of
//! a mesh or height field beyond a concave edge, read along its own normal while the other shape
//! still lies over the triangle before it, or touches it along the edge.
//!
//! parry keeps bodies from catching on the edges between a surface's triangles by turning each
//! triangle's contact normal into the cone its edges allow, and then looks for the contact point
//! along the turned normal. Coming towards a concave edge, a body's closest point on the triangle
//! beyond it is on that edge, its normal is turned to the triangle's own, and the point straight
//! along it lies over the triangle before the edge, not on this one: parry drops the contact.
//! The triangle's manifold stays empty until the body's lowest point is over it, by which time
//! the body is inside it: a ball rolling at 4 m/s into a valley whose slope turns by 2.4° went
//! 2.4 mm into the rising triangle in one step. And where a body already overlaps the triangle
//! beyond, parry's cone at a concave edge still spans the two triangles' normals (its edge
//! normal is their mean, whatever the edge's turn), and it reads the body touching along the
//! edge: a cylinder standing across such an edge, its rim over the rising triangle, sank 9 mm
//! into it.
//!
//! Near a concave edge the space above the surface is exactly the part above both triangles'
//! planes, so the plane of the triangle beyond is the contact, and its own normal the only one:
//! the gap is the body's lowest point's height over it. Over the triangle before the edge that
//! plane lies below the surface, so it holds back no body resting or rolling there. The points
//! are the body's lowest point and the corners round it: a hull's face whole, a cylinder's rim
//! as `caps` reads a tilted one, else parry's feature there.
//!
//! Knows nothing of caches, reduction or bodies.

use parry3d::math::{Pose, Vec3};
use parry3d::query::{ContactManifold, Ray, TrackedContact};
use parry3d::shape::{HeightFieldFlags, PackedFeatureId, PolygonalFeature, Shape, TriMeshFlags, Triangle, TypedShape};

use super::caps::TILTED_RIM_ROUND;
use super::hull_faces::{face_vertices, nearest_hull_face};
use super::lost_contact::{TriangleAndPart, mesh_and_other, triangle_and_part, winding};
use super::refine::FACE_NORMAL;

/// The feature id of a valley reading's points on the triangle, a face parry never numbers:
/// it marks the manifolds read here ([`read_by_plane`]). Not `UNKNOWN`, which would make the
/// lowest point GJK's closest points (`reduction::is_closest_points`), and a manifold of those
/// alone suspect.
const VALLEY_FACE: PackedFeatureId = PackedFeatureId(u32::MAX);

/// Whether `manifold` is a valley reading of [`read_valley_triangles`]. Such a manifold is the
/// contact as it stands: the readings of `refine`, `caps` and `hull_faces` keep to the parts of
/// the other shape over the triangle, and the parts that matter here lie beyond its edge. A box
/// sliding at 3 m/s into a slope of 1 in 5 had its face's overlap with the slope's triangle
/// taken for the contact, empty, and went 6.9 mm into the slope.
pub(super) fn read_by_plane(manifold: &ContactManifold<(), ()>) -> bool {
    manifold
        .points
        .first()
        .is_some_and(|point| point.fid1 == VALLEY_FACE || point.fid2 == VALLEY_FACE)
}

/// Where across an edge, as a share of its length, [`rises_beyond`] looks at the surface.
const PROBE: f32 = 1e-2;

/// The least slope, rad, by which the surface beyond an edge must rise over the triangle's plane
/// for the edge to count as a valley's. Flatter, the triangle beyond reads the body itself once
/// it is over it, and the body comes at most this slope times its speed into it.
const VALLEY_SLOPE: f32 = 1e-3;

/// Reads by its triangle's plane each of `manifolds` (its triangle of `first` or `second`,
/// whichever is a mesh or height field with internal-edge constraints) that parry left empty
/// where the other shape approaches across a valley's edge: its lowest point along the
/// triangle's normal lies in front of the plane by at most `prediction`, and beyond the
/// triangle's edges by at most `prediction`, each of them concave. So, too, each that parry
/// read along a normal turned off the triangle's over its concave edges alone, where that lowest
/// point lies over the triangle or beyond concave edges only, at most `prediction` in front.
/// The points are that lowest point and the corners round it (see [`lowest_points`]) that lie
/// so too, each with its height over the plane (`pos12` takes `second`'s frame to `first`'s).
pub(super) fn read_valley_triangles(
    pos12: &Pose,
    first: &dyn Shape,
    second: &dyn Shape,
    prediction: f32,
    manifolds: &mut [ContactManifold<(), ()>],
) {
    let Some(shapes) = mesh_and_other(first, second) else {
        return;
    };
    let (triangles_first, mesh, _) = shapes;
    let upwards = match mesh.as_typed_shape() {
        TypedShape::TriMesh(mesh) if mesh.flags().contains(TriMeshFlags::FIX_INTERNAL_EDGES) => false,
        TypedShape::HeightField(field) if field.flags().contains(HeightFieldFlags::FIX_INTERNAL_EDGES) => true,
        _ => return,
    };
    for manifold in manifolds.iter_mut() {
        let Some(TriangleAndPart {
            triangle,
            part,
            mesh_to_part,
            part_to_mesh,
        }) = triangle_and_part(manifold, pos12, shapes)
        else {
            continue;
        };
        // The side the surface pushes from: a mesh's by its winding, a height field's upwards.
        let Some(normal) = triangle.normal() else {
            continue;
        };
        let out = if upwards && normal.y < 0.0 { -normal } else { normal };
        let mut edges = Edges::new(mesh, &triangle, out);
        // Where parry gave points, only along a normal it turned over valley edges alone.
        if !manifold.points.is_empty() {
            let turned = if triangles_first {
                manifold.local_n1
            } else {
                manifold.local_n2
            };
            if !edges.turned_into_valley(turned) {
                continue;
            }
        }
        let down = mesh_to_part.rotation * -out;
        let Some((lowest, corners)) = lowest_points(part, down) else {
            continue;
        };
        let in_mesh = |point: Vec3| part_to_mesh.transform_point(point);
        let height = |point: Vec3| (in_mesh(point) - triangle.a).dot(out);
        let mut footing = |point: Vec3| edges.footing(in_mesh(point) - out * height(point), prediction);
        let gap = height(lowest);
        let admitted = if manifold.points.is_empty() {
            (0.0..=prediction).contains(&gap) && footing(lowest) == Footing::InValley
        } else {
            gap <= prediction && footing(lowest) != Footing::Elsewhere
        };
        if !admitted {
            continue;
        }
        manifold.points.clear();
        let face = VALLEY_FACE;
        // The lowest point is admitted as it stands; the corners where they stand too.
        let corners = corners
            .iter()
            .copied()
            .filter(|&(corner, _)| height(corner) <= prediction && footing(corner) != Footing::Elsewhere);
        for (point, on_part) in std::iter::once((lowest, PackedFeatureId::UNKNOWN)).chain(corners) {
            let dist = height(point);
            let on_plane = in_mesh(point) - out * dist;
            manifold.points.push(if triangles_first {
                TrackedContact::new(on_plane, point, face, on_part, dist)
            } else {
                TrackedContact::new(point, on_plane, on_part, face, dist)
            });
        }
        if triangles_first {
            manifold.local_n1 = out;
            manifold.local_n2 = down;
        } else {
            manifold.local_n1 = down;
            manifold.local_n2 = out;
        }
    }
}

/// The points of `part`'s surface (in its frame) that meet a plane first coming along `down`:
/// its lowest point, and the other corners of its feature there with their ids: none for a
/// ball, a hull's whole face, a cylinder's rim round from the lowest point where its cap faces
/// the plane, else parry's feature. `None` for a shape that is neither a ball nor given by its
/// features.
fn lowest_points(part: &dyn Shape, down: Vec3) -> Option<(Vec3, Corners)> {
    let mut corners = Corners::default();
    if let Some(ball) = part.as_ball() {
        return Some((down * ball.radius, corners));
    }
    // A cylinder's cap facing the plane: its rim round from its lowest point, as `caps` reads a
    // tilted rim; parry's square of the cap leaves the rim between its corners to sag.
    if let Some(cylinder) = part.as_cylinder()
        && down.y.abs() >= RIM_DOWN
    {
        let lowest = Vec3::new(down.x, 0.0, down.z).try_normalize().unwrap_or(Vec3::X);
        let quarter = lowest.cross(Vec3::Y);
        let centre = Vec3::Y * cylinder.half_height * down.y.signum();
        let rim = |degrees: f64| {
            let (sin, cos) = degrees.to_radians().sin_cos();
            centre + (lowest * cos as f32 + quarter * sin as f32) * cylinder.radius
        };
        for (k, &degrees) in TILTED_RIM_ROUND.iter().enumerate().skip(1) {
            corners.push(rim(degrees), PackedFeatureId::vertex(k as u32));
        }
        return Some((rim(0.0), corners));
    }
    let (features, border) = part.as_polygonal_feature_map()?;
    let inner = features.local_support_point(down);
    // A hull's face whole: parry's feature holds its first four corners only (`hull_faces`).
    if let Some(hull) = part.as_convex_polyhedron()
        && let Some((index, _)) = nearest_hull_face(hull, down)
        && face_vertices(hull, index).len() <= MOST_CORNERS
    {
        for &vertex in face_vertices(hull, index) {
            corners.push(hull.points()[vertex as usize], PackedFeatureId::vertex(vertex));
        }
        return Some((inner, corners));
    }
    let mut feature = PolygonalFeature::default();
    features.local_support_feature_toward(down, inner, &mut feature);
    for k in (0..feature.num_vertices).filter(|&k| feature.vertices[k] != inner) {
        corners.push(feature.vertices[k] + down * border, feature.vids[k]);
    }
    Some((inner + down * border, corners))
}

/// How nearly along a cylinder's axis, as a cosine, the way down must lie for its cap to face a
/// plane (60°, `caps`' lean of a rim).
const RIM_DOWN: f32 = 0.5;

/// Most corners of a feature read: a hull's face with more is read by parry's four.
const MOST_CORNERS: usize = 16;

/// Up to [`MOST_CORNERS`] corners of a feature, with their ids; no allocation in the narrow
/// phase.
struct Corners {
    points: [(Vec3, PackedFeatureId); MOST_CORNERS],
    count: usize,
}

impl Default for Corners {
    fn default() -> Self {
        Self {
            points: [(Vec3::ZERO, PackedFeatureId::UNKNOWN); MOST_CORNERS],
            count: 0,
        }
    }
}

impl Corners {
    fn push(&mut self, corner: Vec3, id: PackedFeatureId) {
        self.points[self.count] = (corner, id);
        self.count += 1;
    }

    fn iter(&self) -> impl Iterator<Item = &(Vec3, PackedFeatureId)> {
        self.points[..self.count].iter()
    }
}

/// Where a point of a triangle's plane lies: over the triangle, beyond valley edges of it only,
/// or elsewhere.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Footing {
    Over,
    InValley,
    Elsewhere,
}

/// A triangle's edges, each with its unit way out of the triangle in its plane, and how the
/// surface lies beyond it, probed once: a reading asks the same edges of parry's normal, of the
/// lowest point and of each corner.
struct Edges<'a> {
    mesh: &'a dyn Shape,
    /// The triangle's unit normal.
    out: Vec3,
    /// Each edge's ends and way out; `None` for an edge without length.
    edges: [Option<((Vec3, Vec3), Vec3)>; 3],
    /// Whether the surface rises beyond each edge ([`rises_beyond`]), once asked.
    rises: [Option<bool>; 3],
}

impl<'a> Edges<'a> {
    fn new(mesh: &'a dyn Shape, triangle: &Triangle, out: Vec3) -> Self {
        let corners = [triangle.a, triangle.b, triangle.c];
        let turn = winding(triangle, out);
        let edges = [0, 1, 2].map(|k| {
            let (from, to) = (corners[k], corners[(k + 1) % 3]);
            let away = ((to - from).cross(out) * turn).try_normalize()?;
            Some(((from, to), away))
        });
        Self {
            mesh,
            out,
            edges,
            rises: [None; 3],
        }
    }

    /// The edges with their indices and ways out.
    fn each(&self) -> impl Iterator<Item = (usize, Vec3, Vec3)> + use<'a> {
        let edges = self.edges;
        (0..3).filter_map(move |k| edges[k].map(|((from, _), away)| (k, from, away)))
    }

    /// Whether the surface rises beyond edge `k`.
    fn rises(&mut self, k: usize) -> bool {
        let (mesh, out, edges) = (self.mesh, self.out, self.edges);
        *self.rises[k].get_or_insert_with(|| edges[k].is_some_and(|(edge, away)| rises_beyond(mesh, edge, away, out)))
    }

    /// Where `foot`, in the triangle's plane, lies: beyond an edge by more than `reach`, or
    /// beyond one that is not a valley's, is elsewhere.
    fn footing(&mut self, foot: Vec3, reach: f32) -> Footing {
        let mut footing = Footing::Over;
        for (k, from, away) in self.each() {
            let past = (foot - from).dot(away);
            if past <= 0.0 {
                continue;
            }
            if past > reach || !self.rises(k) {
                return Footing::Elsewhere;
            }
            footing = Footing::InValley;
        }
        footing
    }

    /// Whether parry's normal out of the triangle, `turned` (in its frame), is turned off the
    /// triangle's own (by more than `refine::FACE_NORMAL`) and leans towards valley edges
    /// alone. parry's normal at an edge lies between the two triangles' normals, leaning towards a
    /// ridge's edge and away from a valley's. Leaning towards rising edges alone, it was turned by
    /// the valley's edge across the triangle, where no normal but the triangle's own is a
    /// contact's. A normal a valley's edge turned towards a falling edge is left as parry gave it.
    fn turned_into_valley(&mut self, turned: Vec3) -> bool {
        let out = self.out;
        if turned.dot(out) >= 1.0 - FACE_NORMAL {
            return false;
        }
        let lean = turned - out * turned.dot(out);
        let mut over_any = false;
        for (k, _, away) in self.each() {
            if lean.dot(away) <= 0.0 {
                continue;
            }
            if !self.rises(k) {
                return false;
            }
            over_any = true;
        }
        over_any
    }
}

/// Whether the surface just across the edge `from`–`to` of a triangle (`away` pointing out of
/// it in its plane, `out` its normal) lies above the triangle's plane, by more than
/// [`VALLEY_SLOPE`]: a ray down along the normal from above a point [`PROBE`] of the edge's
/// length beyond its middle.
fn rises_beyond(mesh: &dyn Shape, (from, to): (Vec3, Vec3), away: Vec3, out: Vec3) -> bool {
    let step = PROBE * (to - from).length();
    // Ten steps up: the ray starts above a neighbour rising at up to 84°.
    let start = 10.0 * step;
    let ray = Ray::new((from + to) * 0.5 + away * step + out * start, -out);
    mesh.cast_local_ray(&ray, 2.0 * start, false)
        .is_some_and(|drop| drop < start - VALLEY_SLOPE * step)
}
