//! Stage 3, a contact parry's internal-edge constraints drop in a valley: the triangle of a mesh
//! or height field beyond a concave edge, read along its own normal while the other shape still
//! lies over the triangle before it.
//!
//! parry keeps bodies from catching on the edges between a surface's triangles by turning each
//! triangle's contact normal into the cone its edges allow, and then looks for the contact point
//! along the turned normal. Coming towards a concave edge, a body's closest point on the triangle
//! beyond it is on that edge, its normal is turned to the triangle's own, and the point straight
//! along it lies over the triangle before the edge, not on this one: parry drops the contact.
//! The triangle's manifold stays empty until the body's lowest point is over it, by which time
//! the body is inside it: a ball rolling at 4 m/s into a valley whose slope turns by 2.4° went
//! 2.4 mm into the rising triangle in one step.
//!
//! Near a concave edge the space above the surface is exactly the part above both triangles'
//! planes, so the plane of the triangle beyond is the contact: the gap is the body's lowest
//! point's height over it. Over the triangle before the edge that plane lies below the surface,
//! so it holds back no body resting or rolling there.
//!
//! Knows nothing of caches, reduction or bodies.

use parry3d::math::{Pose, Vec3};
use parry3d::query::{ContactManifold, Ray, TrackedContact};
use parry3d::shape::{HeightFieldFlags, PackedFeatureId, PolygonalFeature, Shape, TriMeshFlags, Triangle, TypedShape};

use super::lost_contact::{mesh_and_other, part_frames, triangle_and_part, triangle_and_part_ids};

/// Where across an edge, as a share of its length, [`rises_beyond`] looks at the surface.
const PROBE: f32 = 1e-2;

/// The least slope, rad, by which the surface beyond an edge must rise over the triangle's plane
/// for the edge to count as a valley's. Flatter, the triangle beyond reads the body itself once
/// it is over it, and the body comes at most this slope times its speed into it.
const VALLEY_SLOPE: f32 = 1e-3;

/// Reads each of `manifolds` that parry left empty whose triangle (of `first` or `second`,
/// whichever is a mesh or height field with internal-edge constraints) the other shape
/// approaches across a valley's edge: its lowest point along the triangle's normal lies in
/// front of the triangle's plane by at most `prediction`, and beyond its edges by at most
/// `prediction`, each of them concave. The points are that lowest point and the corners of the
/// other shape's feature there, each with its height over the plane (`pos12` takes `second`'s
/// frame to `first`'s).
pub(super) fn read_valley_triangles(
    pos12: &Pose,
    first: &dyn Shape,
    second: &dyn Shape,
    prediction: f32,
    manifolds: &mut [ContactManifold<(), ()>],
) {
    let Some((triangles_first, mesh, other)) = mesh_and_other(first, second) else {
        return;
    };
    let upwards = match mesh.as_typed_shape() {
        TypedShape::TriMesh(mesh) if mesh.flags().contains(TriMeshFlags::FIX_INTERNAL_EDGES) => false,
        TypedShape::HeightField(field) if field.flags().contains(HeightFieldFlags::FIX_INTERNAL_EDGES) => true,
        _ => return,
    };
    for manifold in manifolds.iter_mut().filter(|manifold| manifold.points.is_empty()) {
        let (triangle_id, part_id) = triangle_and_part_ids(manifold, triangles_first);
        let Some((triangle, part_pose, part)) = triangle_and_part(mesh, other, triangle_id, part_id) else {
            continue;
        };
        // The side the surface pushes from: a mesh's by its winding, a height field's upwards.
        let Some(normal) = triangle.normal() else {
            continue;
        };
        let out = if upwards && normal.y < 0.0 { -normal } else { normal };
        let (mesh_to_part, part_to_mesh) = part_frames(triangles_first, pos12, part_pose);
        let down = mesh_to_part.rotation * -out;
        let Some((lowest, corners)) = lowest_points(part, down) else {
            continue;
        };
        let height = |point: Vec3| (part_to_mesh.transform_point(point) - triangle.a).dot(out);
        let gap = height(lowest);
        if !(0.0..=prediction).contains(&gap) {
            continue;
        }
        let foot = part_to_mesh.transform_point(lowest) - out * gap;
        if !beyond_valley_edges(mesh, &triangle, out, foot, prediction) {
            continue;
        }
        // On the triangle, its face; the lowest point is not GJK's closest points
        // (`reduction::is_closest_points`), which alone would make the manifold suspect.
        let face = PackedFeatureId::face(0);
        let points = std::iter::once((lowest, PackedFeatureId::UNKNOWN)).chain(corners.iter().copied());
        for (point, on_part) in points {
            let dist = height(point);
            if dist > prediction {
                continue;
            }
            let on_plane = part_to_mesh.transform_point(point) - out * dist;
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
/// its lowest point, and the other corners of its feature there with their ids (none for a
/// ball). `None` for a shape that is neither a ball nor given by its features.
fn lowest_points(part: &dyn Shape, down: Vec3) -> Option<(Vec3, Corners)> {
    let mut corners = Corners::default();
    if let Some(ball) = part.as_ball() {
        return Some((down * ball.radius, corners));
    }
    let (features, border) = part.as_polygonal_feature_map()?;
    let inner = features.local_support_point(down);
    let mut feature = PolygonalFeature::default();
    features.local_support_feature_toward(down, inner, &mut feature);
    for k in (0..feature.num_vertices).filter(|&k| feature.vertices[k] != inner) {
        corners.points[corners.count] = (feature.vertices[k] + down * border, feature.vids[k]);
        corners.count += 1;
    }
    Some((inner + down * border, corners))
}

/// Up to four corners of a feature, with their ids; no allocation in the narrow phase.
struct Corners {
    points: [(Vec3, PackedFeatureId); 4],
    count: usize,
}

impl Default for Corners {
    fn default() -> Self {
        Self {
            points: [(Vec3::ZERO, PackedFeatureId::UNKNOWN); 4],
            count: 0,
        }
    }
}

impl Corners {
    fn iter(&self) -> impl Iterator<Item = &(Vec3, PackedFeatureId)> {
        self.points[..self.count].iter()
    }
}

/// Whether `foot`, in the plane of `triangle` (`out` its unit normal), lies outside it across at
/// least one edge, by at most `reach` across each, and every edge it lies across is a valley's.
fn beyond_valley_edges(mesh: &dyn Shape, triangle: &Triangle, out: Vec3, foot: Vec3, reach: f32) -> bool {
    let corners = [triangle.a, triangle.b, triangle.c];
    // The corners' turn about `out`, to tell the side away from the triangle whatever the winding.
    let turn = (triangle.b - triangle.a)
        .cross(triangle.c - triangle.a)
        .dot(out)
        .signum();
    let mut beyond = false;
    for k in 0..3 {
        let (from, to) = (corners[k], corners[(k + 1) % 3]);
        let Some(away) = ((to - from).cross(out) * turn).try_normalize() else {
            return false;
        };
        let past = (foot - from).dot(away);
        if past <= 0.0 {
            continue;
        }
        if past > reach || !rises_beyond(mesh, (from, to), away, out) {
            return false;
        }
        beyond = true;
    }
    beyond
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
