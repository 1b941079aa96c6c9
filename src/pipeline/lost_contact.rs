//! Stage 3, the last resorts of the narrow phase for a pair that touched last step and now gets
//! no point from parry, even asked with its shapes swapped: two convex shapes are asked again
//! drawn a little apart ([`ask_drawn_apart`]); a pair with a triangle mesh or a height field,
//! one triangle at a time without the internal-edge constraints ([`ask_each_triangle`]). Also a
//! triangle whose query parry gave up on, read along the triangle's normal
//! ([`read_given_up_triangles`]).
//!
//! parry checks each triangle's contact normal against the cone of normals its edges allow, so
//! that nothing catches on the edge between two triangles of one surface. A ball or a capsule
//! whose lowest point lies exactly over such an edge has its normal a round-off outside both
//! triangles' cones and loses the contact for a step: rolling at 3 m/s along a height field's
//! grid, a ball fell by g·dt² (2.7 mm) and lost 4.5e-3 m/s. Without the constraints each
//! triangle gives its true closest points; the constraints only keep sliding bodies off edges
//! they would catch on, which for one step matters less than a fall.
//!
//! Knows nothing of caches, reduction or bodies.

use parry3d::bounding_volume::BoundingVolume;
use parry3d::math::{Pose, Vec3};
use parry3d::query::{ContactManifold, DefaultQueryDispatcher, PersistentQueryDispatcher, TrackedContact};
use parry3d::shape::{PackedFeatureId, PolygonalFeature, PolygonalFeatureMap, Shape, Triangle, TypedShape};

use super::refine::triangle_of;

/// How far, m, [`ask_drawn_apart`] draws two shapes apart.
pub(super) const DRAWN_APART: f32 = 1e-3;

/// Fills `manifolds` with the manifolds of two convex shapes asked for with `second` drawn away
/// from `first` by `apart` (in `first`'s frame, `pos12` taking `second`'s frame to `first`'s),
/// each point's gap measured again where the shapes are, those within `prediction` kept.
/// parry's GJK hands shapes that overlap to EPA, which on two curved shapes a few µm deep can
/// find nothing: in a poured pile of cylinders one resting 2e-5 m deep on another got no point
/// in either order and fell by g·dt² (2.7 mm at 60 Hz). Drawn apart they do not overlap, and
/// GJK's closest points lie on the shapes' surfaces, where the shapes are in their own frames.
pub(super) fn ask_drawn_apart(
    pos12: &Pose,
    first: &dyn Shape,
    second: &dyn Shape,
    apart: Vec3,
    prediction: f32,
    manifolds: &mut Vec<ContactManifold<(), ()>>,
) {
    manifolds.clear();
    let drawn = Pose::from_parts(pos12.translation + apart, pos12.rotation);
    let mut workspace = None;
    let asked = DefaultQueryDispatcher.contact_manifolds(
        &drawn,
        first,
        second,
        prediction + apart.length(),
        manifolds,
        &mut workspace,
    );
    if asked.is_err() {
        manifolds.clear();
    }
    for manifold in manifolds.iter_mut() {
        let normal = manifold.local_n1;
        for point in &mut manifold.points {
            point.dist = (pos12.transform_point(point.local_p2) - point.local_p1).dot(normal);
        }
        // Only what the usual query would have given: pairs that parted stay parted.
        manifold.points.retain(|point| point.dist <= prediction);
    }
}

/// Fills `manifolds` with one manifold per triangle of `first` or `second` (whichever is a mesh
/// or height field) and convex shape or compound part of the other within `prediction` of each
/// other, found without normal constraints, in the order given (`pos12` takes `second`'s frame
/// to `first`'s). Leaves `manifolds` empty if neither is a mesh or height field.
pub(super) fn ask_each_triangle(
    pos12: &Pose,
    first: &dyn Shape,
    second: &dyn Shape,
    prediction: f32,
    manifolds: &mut Vec<ContactManifold<(), ()>>,
) {
    manifolds.clear();
    let Some((triangles_first, mesh, other)) = mesh_and_other(first, second) else {
        return;
    };
    // The other shape's parts: itself, or a compound's, each with its index and pose. A rare
    // path: the list is not worth a kept buffer.
    let parts: Vec<(u32, Option<Pose>, &dyn Shape)> = match other.as_compound() {
        Some(compound) => compound
            .shapes()
            .iter()
            .enumerate()
            .map(|(k, (pose, part))| (k as u32, Some(*pose), part.as_ref()))
            .collect(),
        None => vec![(0, None, other)],
    };
    for (index, part_pose, part) in parts {
        let (mesh_to_part, part_to_mesh) = part_frames(triangles_first, pos12, part_pose);
        let aabb = part.compute_aabb(&part_to_mesh).loosened(prediction);
        let mut ask = |i: u32, triangle: &Triangle| {
            // In the order given: the triangle where the mesh is.
            let (pos, shapes, ids): (&Pose, (&dyn Shape, &dyn Shape), _) = if triangles_first {
                (&part_to_mesh, (triangle, part), (i, index))
            } else {
                (&mesh_to_part, (part, triangle), (index, i))
            };
            let mut manifold = ContactManifold::with_data(ids.0, ids.1, ());
            let asked = DefaultQueryDispatcher.contact_manifold_convex_convex(
                pos,
                shapes.0,
                shapes.1,
                None,
                None,
                prediction,
                &mut manifold,
            );
            if asked.is_ok() && !manifold.points.is_empty() {
                if triangles_first {
                    manifold.set_subshape_pos2(part_pose);
                } else {
                    manifold.set_subshape_pos1(part_pose);
                }
                manifolds.push(manifold);
            }
        };
        match mesh.as_typed_shape() {
            TypedShape::TriMesh(mesh) => {
                for i in mesh.bvh().intersect_aabb(&aabb) {
                    ask(i, &mesh.triangle(i));
                }
            }
            TypedShape::HeightField(field) => field.map_elements_in_local_aabb(&aabb, &mut ask),
            _ => {}
        }
    }
}

/// Which of `first` and `second` is a triangle mesh or height field: whether it is `first`, the
/// mesh, the other shape. `None` if neither is.
pub(super) fn mesh_and_other<'a>(
    first: &'a dyn Shape,
    second: &'a dyn Shape,
) -> Option<(bool, &'a dyn Shape, &'a dyn Shape)> {
    match (first.as_typed_shape(), second.as_typed_shape()) {
        (TypedShape::TriMesh(_) | TypedShape::HeightField(_), _) => Some((true, first, second)),
        (_, TypedShape::TriMesh(_) | TypedShape::HeightField(_)) => Some((false, second, first)),
        _ => None,
    }
}

/// A manifold's triangle of a mesh or height field, the other shape's part it is with, and
/// the frames from the mesh's to the part's and back.
pub(super) struct TriangleAndPart<'a> {
    pub triangle: Triangle,
    pub part: &'a dyn Shape,
    pub mesh_to_part: Pose,
    pub part_to_mesh: Pose,
}

/// `manifold`'s triangle and part, for shapes `(triangles_first, mesh, other)` as
/// [`mesh_and_other`] gives them and `pos12` taking the second shape's frame to the first's.
pub(super) fn triangle_and_part<'a>(
    manifold: &ContactManifold<(), ()>,
    pos12: &Pose,
    (triangles_first, mesh, other): (bool, &dyn Shape, &'a dyn Shape),
) -> Option<TriangleAndPart<'a>> {
    let (triangle_id, part_id) = if triangles_first {
        (manifold.subshape1, manifold.subshape2)
    } else {
        (manifold.subshape2, manifold.subshape1)
    };
    let triangle = triangle_of(mesh, triangle_id)?;
    let (part_pose, part) = match other.as_compound() {
        Some(compound) => {
            let (pose, part) = compound.shapes().get(part_id as usize)?;
            (Some(*pose), part.as_ref())
        }
        None => (None, other),
    };
    let (mesh_to_part, part_to_mesh) = part_frames(triangles_first, pos12, part_pose);
    Some(TriangleAndPart {
        triangle,
        part,
        mesh_to_part,
        part_to_mesh,
    })
}

/// From the mesh's frame to a part's of the other shape (at `part_pose` in it, if a compound's
/// part), and back; `pos12` takes the second shape's frame to the first's.
fn part_frames(triangles_first: bool, pos12: &Pose, part_pose: Option<Pose>) -> (Pose, Pose) {
    let part_pose = part_pose.unwrap_or(Pose::IDENTITY);
    let mesh_to_part = if triangles_first {
        part_pose.inverse() * pos12.inverse()
    } else {
        part_pose.inverse() * *pos12
    };
    (mesh_to_part, mesh_to_part.inverse())
}

/// The direction parry's convex query leaves in a manifold where it gave up: GJK took two shapes
/// for overlapping, and EPA found no face to go by (`contact_support_map_support_map_with_params`).
const GAVE_UP: Vec3 = Vec3::X;

/// How far outside a triangle's edges, as a share of its longest edge, the other shape's lowest
/// point may lie and still count as over it. A point over an edge two triangles share is then
/// read by both, and the reduction merges the two.
const OVER_TRIANGLE: f32 = 1e-6;

/// Reads again each of `manifolds` whose triangle (of `first` or `second`, whichever is a mesh
/// or height field) parry's query gave up on: along the triangle's normal, by parry's own
/// clipping of the two shapes' features there, without GJK; with the other shape's lowest point
/// along it where that lies over the triangle, as parry adds GJK's closest points.
///
/// parry's GJK judges the distance it reaches against the size of the shapes' difference. On a
/// floor of two triangles 40 m across, a prism's corners under a millimetre above a triangle
/// read as overlapping, EPA then found nothing, and the triangle's manifold came back empty for
/// a step: a corner went 1.5 cm into the floor. Started along the triangle's normal, GJK gave up
/// as well. Over a triangle of a surface the triangle's normal is the contact's; where the other
/// shape reaches beyond the triangle, the clipping keeps to the part over it, and the triangles
/// across its edges read the rest.
pub(super) fn read_given_up_triangles(
    pos12: &Pose,
    first: &dyn Shape,
    second: &dyn Shape,
    prediction: f32,
    manifolds: &mut [ContactManifold<(), ()>],
) {
    let Some(shapes) = mesh_and_other(first, second) else {
        return;
    };
    let triangles_first = shapes.0;
    for manifold in manifolds
        .iter_mut()
        .filter(|manifold| manifold.points.is_empty() && manifold.local_n1 == GAVE_UP)
    {
        let Some(TriangleAndPart {
            triangle,
            part,
            mesh_to_part,
            part_to_mesh,
        }) = triangle_and_part(manifold, pos12, shapes)
        else {
            continue;
        };
        let (Some(normal), Some((features, border))) = (triangle.normal(), part.as_polygonal_feature_map()) else {
            continue;
        };
        // Out of the triangle, towards the part; and the part's lowest point along it.
        let centre = part_to_mesh.transform_point(part.compute_local_bounding_sphere().center);
        let out = if normal.dot(centre - triangle.a) < 0.0 {
            -normal
        } else {
            normal
        };
        let down = mesh_to_part.rotation * -out;
        let lowest = features.local_support_point(down);
        let lowest_in_mesh = part_to_mesh.transform_point(lowest);
        let gap = (lowest_in_mesh - triangle.a).dot(out) - border;
        let foot = lowest_in_mesh - out * (gap + border);
        if gap > prediction {
            continue;
        }
        let mut triangle_face = PolygonalFeature::default();
        let mut part_feature = PolygonalFeature::default();
        triangle.local_support_feature(out, &mut triangle_face);
        features.local_support_feature_toward(down, lowest, &mut part_feature);
        if triangles_first {
            PolygonalFeature::contacts(
                &part_to_mesh,
                &mesh_to_part,
                out,
                down,
                &triangle_face,
                &part_feature,
                manifold,
                false,
            );
            manifold.local_n1 = out;
            manifold.local_n2 = down;
        } else {
            PolygonalFeature::contacts(
                &mesh_to_part,
                &part_to_mesh,
                down,
                out,
                &part_feature,
                &triangle_face,
                manifold,
                false,
            );
            manifold.local_n1 = down;
            manifold.local_n2 = out;
        }
        if over(&triangle, out, foot) {
            // The lowest point itself, as parry adds GJK's closest points.
            let (local_p1, local_p2) = if triangles_first {
                (foot, lowest)
            } else {
                (lowest, foot)
            };
            manifold.points.push(TrackedContact::new(
                local_p1,
                local_p2,
                PackedFeatureId::UNKNOWN,
                PackedFeatureId::UNKNOWN,
                gap + border,
            ));
        }
        if border != 0.0 {
            let (normal1, normal2) = (manifold.local_n1, manifold.local_n2);
            for contact in &mut manifold.points {
                if triangles_first {
                    contact.local_p2 += normal2 * border;
                } else {
                    contact.local_p1 += normal1 * border;
                }
                contact.dist -= border;
            }
        }
    }
}

/// Whether `point`, in `triangle`'s plane (`out` its unit normal), lies inside it to
/// [`OVER_TRIANGLE`].
fn over(triangle: &Triangle, out: Vec3, point: Vec3) -> bool {
    let corners = [triangle.a, triangle.b, triangle.c];
    let longest = (0..3)
        .map(|i| (corners[(i + 1) % 3] - corners[i]).length())
        .fold(0.0, f32::max);
    let turn = winding(triangle, out);
    (0..3).all(|i| {
        let (from, to) = (corners[i], corners[(i + 1) % 3]);
        let edge = to - from;
        turn * edge.cross(point - from).dot(out) >= -OVER_TRIANGLE * longest * edge.length()
    })
}

/// The turn of `triangle`'s corners about `out` (+1 counter-clockwise, −1 clockwise), to tell
/// the inside of its edges from the outside whatever the winding.
pub(super) fn winding(triangle: &Triangle, out: Vec3) -> f32 {
    (triangle.b - triangle.a)
        .cross(triangle.c - triangle.a)
        .dot(out)
        .signum()
}

#[cfg(test)]
mod tests {
    use super::super::manifold_view::WorldPose;
    use super::super::reduction::deepest;
    use super::*;
    use bevy_math::{DQuat, DVec3};
    use parry3d::shape::Cylinder;

    /// Two cylinders of the pour in `tests/plugin_physics.rs` at step 324, `a` resting 3e-5 m
    /// deep on `b`: asked with `b` first, parry finds no point.
    #[test]
    fn shapes_drawn_apart_find_the_contact_parry_lost() {
        let a = WorldPose {
            translation: DVec3::new(-0.6245729883611062, 1.7140723286621848, 0.8690153351391074),
            rotation: DQuat::from_xyzw(
                -0.39413955261334105,
                -0.5708521709641841,
                -0.5711778623179412,
                -0.43879113661187436,
            )
            .normalize(),
        };
        let b = WorldPose {
            translation: DVec3::new(-0.3275428303392999, 1.1737811431028693, 0.823803903445712),
            rotation: DQuat::from_xyzw(
                -0.4443248418880648,
                -0.6541137920606619,
                0.6057469882468304,
                0.08821092986167668,
            )
            .normalize(),
        };
        let cylinder = Cylinder::new(0.5, 0.25);
        let mut asked = Vec::new();
        DefaultQueryDispatcher
            .contact_manifolds(&a.inv_mul(&b), &cylinder, &cylinder, 0.01, &mut asked, &mut None)
            .unwrap();
        let found = asked.pop().unwrap();
        DefaultQueryDispatcher
            .contact_manifolds(&b.inv_mul(&a), &cylinder, &cylinder, 0.01, &mut asked, &mut None)
            .unwrap();
        assert!(asked.iter().all(|m| m.points.is_empty()), "parry found it after all");
        // Drawn apart along the normal `a`'s order gave, out of `b` towards `a`.
        let normal = a.rotation * -found.local_n1.as_dvec3();
        let apart = (b.rotation.inverse() * normal * DRAWN_APART as f64).as_vec3();
        ask_drawn_apart(&b.inv_mul(&a), &cylinder, &cylinder, apart, 0.01, &mut asked);
        let drawn = asked.pop().unwrap();
        let out_of_b = b.rotation * drawn.local_n1.as_dvec3();
        assert!(out_of_b.dot(normal) > 0.9999, "{out_of_b} against {normal}");
        let (drawn, found) = (deepest(&drawn.points), deepest(&found.points));
        assert!(found < -2e-5);
        assert!((drawn - found).abs() < 1e-6, "{drawn} against {found}");
    }
}
