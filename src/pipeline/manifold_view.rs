//! Stage 3, reading parry's answers: a parry manifold's normal, points and feature ids in
//! world coordinates (`f64`) and in the order of the pair, whichever order parry was asked in,
//! and the points `refine` and `seams` put in their place. Knows nothing of caches, reduction
//! or bodies beyond their poses.

use bevy_math::{DQuat, DVec3, Vec3};
use parry3d::math::Pose;
use parry3d::query::{ContactManifold, TrackedContact};
use parry3d::shape::Shape;

use super::caps::cylinder_on_face;
use super::refine::{
    CROSSED_ID, LINE_END_IDS, TouchPoint, crossed, face_contact, line_contact, rest_on_ends, side_by_side, side_on_cap,
};
use super::seams::{PartCones, across_seam};

/// A pose in `f64`. parry works in `f32`; its relative pose and its answers in the shapes' own
/// frames are then only ~1e-7 off, where the same `f32` arithmetic on world coordinates would
/// round a point 10 m from the origin to ~1e-6 m. A contact point that jumps by such an ulp moves
/// its lever arm and, on a resting 210-box pyramid, starts the next solve up to 2e-7 m/s off.
#[derive(Clone, Copy)]
pub(super) struct WorldPose {
    pub rotation: DQuat,
    pub translation: DVec3,
}

impl WorldPose {
    pub fn of(body: &super::world::SimBody) -> Self {
        Self {
            rotation: body.rotation,
            translation: body.translation,
        }
    }

    /// This pose followed by `local`, a pose in its frame.
    fn then(self, local: &Pose) -> Self {
        Self {
            rotation: self.rotation * local.rotation.as_dquat(),
            translation: self.transform_point(local.translation),
        }
    }

    fn transform_point(&self, point: Vec3) -> DVec3 {
        self.translation + self.rotation * point.as_dvec3()
    }

    /// `self⁻¹ · other` for parry, rounded to `f32` only once it is small.
    pub fn inv_mul(&self, other: &Self) -> Pose {
        let inverse = self.rotation.inverse();
        Pose::from_parts(
            (inverse * (other.translation - self.translation)).as_vec3(),
            (inverse * other.rotation).as_quat(),
        )
    }
}

/// One of parry's manifolds of a pair, read from the pair's side: `swapped` if parry was given
/// the pair's second shape first.
pub(super) struct ManifoldView<'a> {
    pub manifold: &'a ContactManifold<(), ()>,
    swapped: bool,
    /// Poses of the shapes (or parts) parry was given first and second.
    first: WorldPose,
    second: WorldPose,
}

impl<'a> ManifoldView<'a> {
    pub fn new(manifold: &'a ContactManifold<(), ()>, swapped: bool, pose1: WorldPose, pose2: WorldPose) -> Self {
        let (first, second) = if swapped { (pose2, pose1) } else { (pose1, pose2) };
        let (first, second) = match &manifold.subshape_poses {
            Some(poses) => (
                poses.pos1.map_or(first, |p| first.then(&p)),
                poses.pos2.map_or(second, |p| second.then(&p)),
            ),
            None => (first, second),
        };
        Self {
            manifold,
            swapped,
            first,
            second,
        }
    }

    /// Unit normal from the pair's second body towards its first, if parry gave one.
    pub fn normal(&self) -> Option<DVec3> {
        let outward_of_first = self.first.rotation * self.manifold.local_n1.as_dvec3();
        let normal = if self.swapped {
            outward_of_first
        } else {
            -outward_of_first
        };
        (normal.is_finite() && normal.length_squared() >= 0.5).then(|| normal.normalize())
    }

    /// The pair's first and second sub-shape indices.
    pub fn subshapes(&self) -> (u32, u32) {
        self.parry_order((self.manifold.subshape1, self.manifold.subshape2))
    }

    /// A pair of anything, from the pair's order to parry's, or back.
    fn parry_order<T>(&self, (a, b): (T, T)) -> (T, T) {
        if self.swapped { (b, a) } else { (a, b) }
    }

    /// The world rotations and translations of the shapes (or parts) parry was given first and
    /// second.
    fn poses(&self) -> ((DQuat, DVec3), (DQuat, DVec3)) {
        (
            (self.first.rotation, self.first.translation),
            (self.second.rotation, self.second.translation),
        )
    }

    /// Whether parry's manifold is replaced, and if so by which points (none where it is
    /// dropped), written to `points` in the pair's order with their feature ids: a cylinder's
    /// cap on a face (`caps`), else across a cut between a compound's parts (`seams`), else a
    /// line of contact (`refine::line_contact`), with two axes' crossing between its ends where
    /// they lie askew, or its ends lowered onto that crossing where they lie nearly parallel
    /// (`refine::rest_on_ends`), else a side lying across a cylinder's cap
    /// (`refine::side_on_cap`), else that crossing alone (`refine::crossed`), else a flat
    /// contact found through GJK (`refine::face_contact`). `shapes` and their parts' `cones` in
    /// the pair's order.
    pub fn replaced(
        &self,
        shapes: (&dyn Shape, &dyn Shape),
        cones: (Option<&PartCones>, Option<&PartCones>),
        (composite, prediction): (bool, f64),
        points: &mut Vec<(TouchPoint, u64)>,
    ) -> bool {
        let (first, second) = self.poses();
        let shapes = self.parry_order(shapes);
        // A cap stands on a face's exact plane, whichever part it is: no seam's cone to ask.
        let replaced = if cylinder_on_face(self.manifold, shapes, first, second, points)
            || across_seam(self.manifold, shapes, self.parry_order(cones), first, second, points).is_some()
        {
            true
        } else if let Some(mut ends) = line_contact(self.manifold, shapes, first, second) {
            points.clear();
            let crossing = crossed(self.manifold, shapes, first, second);
            let rested = crossing
                .as_ref()
                .is_some_and(|crossing| rest_on_ends(&mut ends, crossing));
            points.extend(ends.into_iter().zip(LINE_END_IDS));
            if !rested {
                points.extend(crossing.map(|point| (point, CROSSED_ID)));
            }
            true
        } else if let Some(ends) = side_on_cap(self.manifold, shapes, first, second) {
            points.clear();
            points.extend(ends.into_iter().zip(LINE_END_IDS));
            true
        } else if let Some(point) = crossed(self.manifold, shapes, first, second) {
            points.clear();
            points.push((point, CROSSED_ID));
            true
        } else {
            face_contact(self.manifold, shapes, (composite, prediction), first, second, points)
        };
        if replaced && self.swapped {
            for (point, _) in points.iter_mut() {
                *point = point.swapped();
            }
        }
        replaced
    }

    /// Whether `shapes` (in the pair's order) are two cylinders or capsules lying side by side,
    /// or across each other, whose contact [`replaced`](Self::replaced) rebuilds from their axes,
    /// whatever parry's normal and points.
    pub fn touches_by_axes(&self, shapes: (&dyn Shape, &dyn Shape)) -> bool {
        let (first, second) = self.poses();
        let shapes = self.parry_order(shapes);
        side_by_side(self.manifold, shapes, first, second).is_some()
            || crossed(self.manifold, shapes, first, second).is_some()
    }

    /// A point's positions on the pair's first and second shapes, and their feature ids.
    pub fn point(&self, point: &TrackedContact<()>) -> (DVec3, DVec3, (u32, u32)) {
        let on_first = self.first.transform_point(point.local_p1);
        let on_second = self.second.transform_point(point.local_p2);
        if self.swapped {
            (on_second, on_first, (point.fid2.0, point.fid1.0))
        } else {
            (on_first, on_second, (point.fid1.0, point.fid2.0))
        }
    }
}
