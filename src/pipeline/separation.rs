//! Stage 3, a check on parry's normal for two convex shapes: whether each shape's contact points
//! are its farthest points along the normal, from the shapes' support maps. Along the true normal
//! they are; a normal along which a shape reaches far beyond its contact points is GJK's
//! accident, not the contact's. Two upright cylinders stacked cap on cap, placed exactly
//! touching and 5e-8 m into each other once rounded to `f32`, got a horizontal normal in both
//! orders, and the upper one fell by g·dt² (2.7 mm at 60 Hz) before the next step found the
//! caps.
//!
//! Also the direction to draw such shapes apart along, to ask again (`lost_contact`): from
//! centre to centre. Knows nothing of caches, reduction or bodies.

use parry3d::math::{Pose, Vec3};
use parry3d::query::ContactManifold;
use parry3d::shape::Shape;

use super::reduction::DEPTH_SLACK;

/// How far behind its own farthest point along the normal a shape's contact point may lie, as a
/// share of the shape's bounding radius, before the normal counts as astray: about the sine of
/// the angle by which the normal is off. Rough normals are corrected later (`caps`, `refine`),
/// and asked again they move a pile's trajectories for nothing: between the cylinders of a
/// poured pile GJK's normals left the points more than a tenth of a radius behind in thousands
/// of steps, and less than half in 96% of them. Its accident between two caps stacked at
/// touching left them 71% and 83% behind.
const ASTRAY_SHARE: f32 = 0.5;

/// How far `shape`'s farthest point along `normal` (unit, in its frame) lies beyond the
/// farthest of `points` (its contact points, in its frame), m. `None` where the shape has no
/// support map (composites, meshes).
fn behind(shape: &dyn Shape, normal: Vec3, points: impl Iterator<Item = Vec3>) -> Option<f32> {
    let farthest = shape.as_support_map()?.local_support_point(normal).dot(normal);
    Some(farthest - points.map(|point| point.dot(normal)).fold(f32::NEG_INFINITY, f32::max))
}

/// Whether the manifold's normal (parry's, for `shapes` in the order parry was asked) is GJK's
/// accident: on either shape its contact points lie behind the shape's farthest point along it
/// by more than [`ASTRAY_SHARE`] of the shape's bounding radius (at least [`DEPTH_SLACK`]). A
/// normal that is right, or a few degrees off, leaves each shape's contact points within that
/// of its extreme. Each shape is measured on its own scale: along a normal a little tilted, a
/// slab 40 m wide pokes up a metre beyond a small cylinder resting on it.
pub(super) fn astray(manifold: &ContactManifold<(), ()>, (first, second): (&dyn Shape, &dyn Shape)) -> bool {
    let (normal1, normal2) = (manifold.local_n1, manifold.local_n2);
    if manifold.points.is_empty() || !normal1.is_normalized() || !normal2.is_normalized() {
        return false;
    }
    // The bounding radius only where the points lie behind at all: it is dearer than the rest.
    let far_behind = |shape: &dyn Shape, normal: Vec3, points: &mut dyn Iterator<Item = Vec3>| {
        behind(shape, normal, points).is_some_and(|behind| {
            behind > DEPTH_SLACK && behind > ASTRAY_SHARE * shape.compute_local_bounding_sphere().radius
        })
    };
    far_behind(first, normal1, &mut manifold.points.iter().map(|p| p.local_p1))
        || far_behind(second, normal2, &mut manifold.points.iter().map(|p| p.local_p2))
}

/// `length` along the line from `first`'s centre to `second`'s (the centres of their bounding
/// spheres, `second` at `pos12`), in `first`'s frame: the way to draw two convex shapes apart.
/// Where each centre lies inside its shape, as a ball's, a box's, a cylinder's and a capsule's
/// do, the two lie on either side of any plane that separates the shapes, and moving `second`
/// this way parts them. `None` where the centres coincide.
pub(super) fn centres_apart(pos12: &Pose, (first, second): (&dyn Shape, &dyn Shape), length: f32) -> Option<Vec3> {
    let centre1 = first.compute_local_bounding_sphere().center;
    let centre2 = pos12.transform_point(second.compute_local_bounding_sphere().center);
    let line = centre2 - centre1;
    let distance = line.length();
    (distance > 0.0).then(|| line * (length / distance))
}

#[cfg(test)]
mod tests {
    use super::*;
    use parry3d::query::{DefaultQueryDispatcher, PersistentQueryDispatcher};
    use parry3d::shape::Cylinder;

    /// The upper of two cylinders stacked cap on cap, off centre, 5e-8 m into the lower once its
    /// pose is rounded to `f32`, as `tests/plugin_physics.rs` sets one exactly on the other.
    fn stacked() -> (Cylinder, Cylinder, Pose) {
        (
            Cylinder::new(0.2, 0.3),
            Cylinder::new(0.5, 0.5),
            Pose::from_translation(Vec3::new(-0.2, -0.700_000_05, -0.1)),
        )
    }

    #[test]
    fn a_horizontal_normal_between_stacked_caps_is_astray() {
        let (upper, lower, pos12) = stacked();
        let mut manifolds = Vec::new();
        DefaultQueryDispatcher
            .contact_manifolds(&pos12, &upper, &lower, 0.01, &mut manifolds, &mut None)
            .unwrap();
        let [manifold] = manifolds.as_slice() else {
            panic!("{} manifolds", manifolds.len())
        };
        assert!(
            manifold.local_n1.y.abs() < 0.1,
            "parry found the caps after all: {}",
            manifold.local_n1
        );
        assert!(astray(manifold, (&upper, &lower)));
        // Across, the upper cylinder reaches nearly its radius (0.3 m) beyond the contact points.
        let points = manifold.points.iter().map(|p| p.local_p1);
        let behind = behind(&upper, manifold.local_n1, points).unwrap();
        assert!(behind > 0.25, "{behind}");
    }

    /// The caps 0.1 mm apart, asked by parry: the right normal is not astray, nor one 4° off.
    #[test]
    fn a_normal_a_few_degrees_off_is_not_astray() {
        let (upper, lower, pos12) = stacked();
        let mut manifolds = Vec::new();
        let apart = Pose::from_translation(Vec3::new(0.0, -1e-4, 0.0)) * pos12;
        DefaultQueryDispatcher
            .contact_manifolds(&apart, &upper, &lower, 0.01, &mut manifolds, &mut None)
            .unwrap();
        let [manifold] = manifolds.as_mut_slice() else {
            panic!("{} manifolds", manifolds.len())
        };
        assert!(manifold.local_n1.dot(Vec3::NEG_Y) > 0.9999, "{}", manifold.local_n1);
        assert!(!astray(manifold, (&upper, &lower)));
        let tilt = bevy_math::Quat::from_rotation_x(4f32.to_radians());
        manifold.local_n1 = tilt * manifold.local_n1;
        manifold.local_n2 = tilt * manifold.local_n2;
        assert!(!astray(manifold, (&upper, &lower)), "4° off");
    }

    #[test]
    fn the_caps_found_drawn_apart_are_not_astray() {
        let (upper, lower, pos12) = stacked();
        let shapes: (&dyn Shape, &dyn Shape) = (&upper, &lower);
        let apart = centres_apart(&pos12, shapes, super::super::lost_contact::DRAWN_APART).unwrap();
        let mut manifolds = Vec::new();
        super::super::lost_contact::ask_drawn_apart(&pos12, &upper, &lower, apart, 0.01, &mut manifolds);
        let [manifold] = manifolds.as_slice() else {
            panic!("{} manifolds", manifolds.len())
        };
        assert!(manifold.local_n1.dot(Vec3::NEG_Y) > 0.9999, "{}", manifold.local_n1);
        assert!(!astray(manifold, shapes));
        let least = super::super::reduction::deepest(&manifold.points);
        assert!(least.abs() < 1e-6, "{least}");
    }
}
