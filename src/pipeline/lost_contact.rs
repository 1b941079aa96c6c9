//! Stage 3, a last resort of the narrow phase: a pair with a triangle mesh or a height field that
//! touched last step and now gets no point from parry, even asked with its shapes swapped, asked
//! again one triangle at a time without the internal-edge constraints.
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
use parry3d::math::Pose;
use parry3d::query::{ContactManifold, DefaultQueryDispatcher, PersistentQueryDispatcher};
use parry3d::shape::{Shape, Triangle, TypedShape};

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
    let (triangles_first, mesh, other) = match (first.as_typed_shape(), second.as_typed_shape()) {
        (TypedShape::TriMesh(_) | TypedShape::HeightField(_), _) => (true, first, second),
        (_, TypedShape::TriMesh(_) | TypedShape::HeightField(_)) => (false, second, first),
        _ => return,
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
        let part_pose_or_identity = part_pose.unwrap_or(Pose::IDENTITY);
        // From the mesh's frame to the part's, and the part's box in the mesh's frame.
        let mesh_to_part = if triangles_first {
            part_pose_or_identity.inverse() * pos12.inverse()
        } else {
            part_pose_or_identity.inverse() * *pos12
        };
        let part_to_mesh = mesh_to_part.inverse();
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
