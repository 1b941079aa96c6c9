//! Stage 3, second half: which of a pair's contact points the solver gets.
//!
//! Owns the test of a manifold for a normal parry got wrong ([`suspect`]) and the dropping of
//! points that cannot be right, the reduction of a manifold to the points that span it (every
//! corner of two boxes' clipped faces, near-duplicates merged), and for pairs with a triangle
//! mesh, height field or compound, the merging of the manifolds that lie in one plane — one per
//! triangle or part the other shape overlaps — to the corners of their points' convex hull
//! before that reduction. Knows nothing of parry's
//! caches or of bodies.

use bevy_math::{DVec3, Vec3};
use parry3d::query::{ContactManifold, TrackedContact};
use parry3d::shape::PackedFeatureId;

/// Most points kept of a flat manifold: all of them when two boxes' faces meet, whose clipped
/// polygon has up to eight corners (an octagon when the faces are turned 45° to each other).
/// Every corner is a point the top box can tip onto: kept to four, a box resting on another at
/// an angle rocked about the edge between two kept corners onto a dropped one, which was found
/// penetrated a step late and pushed out, and that push kept a heap of 100 boxes rocking for
/// good.
const FLAT_POINTS: usize = 8;

/// Most points kept of a manifold that leans (see [`LEANING`]): every corner of a hull's face of
/// up to sixteen (`hull_faces`) may be the next to strike. Kept to the eight that span it,
/// whatever their gaps, a twelve-sided prism's face leaning onto a slab kept corners 3 cm up and
/// dropped one between two of the lowest, which struck next, 1.4 mm deep.
pub(super) const MAX_POINTS: usize = 16;

/// How far the gaps of a manifold's points may spread, as a share of its extent, for it to
/// count as flat (about a milliradian), and keep [`FLAT_POINTS`]: resting faces keep the points
/// they always had.
const LEANING: f32 = 1e-3;

/// Points of a manifold closer together than this fraction of its extent count as one: clipped
/// against each other, two boxes' coincident faces give every corner twice, and a box turned by
/// less than about 0.1° on another gives pairs of corners under a millimetre apart per metre.
const MERGE_FRACTION: f32 = 1e-3;

/// Of `len` points of one contact plane, at `position(i)` (in any frame) and `gap(i)` apart, the
/// indices of those kept: all of them with near-duplicates merged (see [`MERGE_FRACTION`]), in
/// their order; beyond [`FLAT_POINTS`], or [`MAX_POINTS`] where the manifold leans, those that
/// span them: the deepest, then each time the one farthest from all those kept.
pub(super) fn reduce(
    len: usize,
    position: impl Fn(usize) -> Vec3,
    gap: impl Fn(usize) -> f32,
    nearest: &mut Vec<f32>,
) -> [Option<usize>; MAX_POINTS] {
    let mut kept = [None; MAX_POINTS];
    let p = position;
    let deepest = (0..len).min_by(|&a, &b| gap(a).total_cmp(&gap(b))).unwrap_or(0);
    // Each point's squared distance to the nearest kept one, the deepest to begin with.
    nearest.clear();
    nearest.extend((0..len).map(|i| (p(i) - p(deepest)).length_squared()));
    let extent_squared = nearest.iter().copied().fold(0.0, f32::max);
    let merge_squared = MERGE_FRACTION * MERGE_FRACTION * extent_squared;
    let (lowest, highest) = (0..len).fold((f32::INFINITY, f32::NEG_INFINITY), |(lowest, highest), i| {
        (lowest.min(gap(i)), highest.max(gap(i)))
    });
    let most = if highest - lowest > LEANING * extent_squared.sqrt() {
        MAX_POINTS
    } else {
        FLAT_POINTS
    };
    if len <= most {
        let mut count = 0;
        for i in 0..len {
            let nearest_kept = kept[..count]
                .iter()
                .flatten()
                .map(|&k| (p(i) - p(k)).length_squared())
                .fold(f32::INFINITY, f32::min);
            if nearest_kept > merge_squared {
                kept[count] = Some(i);
                count += 1;
            }
        }
        return kept;
    }
    kept[0] = Some(deepest);
    for slot in kept[..most].iter_mut().skip(1) {
        // A loop, not `max_by`: a comparator scores both sides, every point twice. Ties go to
        // the last point, as `max_by`'s do.
        let mut best = (0, f32::NEG_INFINITY);
        for (i, &score) in nearest.iter().enumerate() {
            if score.total_cmp(&best.1).is_ge() {
                best = (i, score);
            }
        }
        if best.1 <= merge_squared {
            break;
        }
        *slot = Some(best.0);
        let added = p(best.0);
        for (i, score) in nearest.iter_mut().enumerate() {
            *score = score.min((p(i) - added).length_squared());
        }
    }
    kept
}

/// Manifolds of one pair whose normals agree to this (cosine; about 1.4e-4 rad) and whose
/// planes lie within [`PLANE_TOLERANCE`] are one contact plane: a flat mesh's or height field's
/// triangles, a floor's tiles, computed in `f32`.
const SAME_NORMAL: f64 = 1.0 - 1e-8;

/// How far apart, m, two parallel planes of one pair may be and still count as one.
const PLANE_TOLERANCE: f64 = 1e-4;

/// How much deeper, m, than the closest points parry found (by GJK, for shapes given as
/// polygonal feature maps: hulls, boxes against them, cylinders, triangles) a point of the same
/// manifold may lie. With the right normal none lies deeper. Clipped along a wrong one, they can:
/// a box-shaped hull resting 25 m from the centre of a 40 m slab got, once in 300 steps, a
/// normal turned 176° and four points 2.0 m deep beside a closest point 6e-8 m deep, and was
/// pushed into the slab at 1 m/s. The narrow phase then asks parry again with the shapes in the
/// other order; points still implausible are dropped.
pub(super) const DEPTH_SLACK: f32 = 1e-3;

/// Whether the point is parry's closest points (by GJK), not one of the shapes' features.
pub(super) fn is_closest_points(point: &TrackedContact<()>) -> bool {
    point.fid1 == PackedFeatureId::UNKNOWN && point.fid2 == PackedFeatureId::UNKNOWN
}

/// The least gap among a manifold's points, m (infinite for none).
pub(super) fn deepest(points: &[TrackedContact<()>]) -> f32 {
    points.iter().map(|p| p.dist).fold(f32::INFINITY, f32::min)
}

/// The least gap a point of the manifold may have (see [`DEPTH_SLACK`]).
fn depth_floor(points: &[TrackedContact<()>]) -> f32 {
    let closest = points
        .iter()
        .filter(|p| is_closest_points(p))
        .map(|p| p.dist)
        .fold(f32::INFINITY, f32::min);
    if closest.is_finite() {
        closest - DEPTH_SLACK
    } else {
        f32::NEG_INFINITY
    }
}

/// Whether the manifold's normal is suspect: parry gave points but no normal, or only its
/// closest points with no feature of either shape found along the normal, or points deeper
/// than its closest points allow.
pub(super) fn suspect(manifold: &ContactManifold<(), ()>) -> bool {
    let points = &manifold.points;
    let floor = depth_floor(points);
    !points.is_empty()
        && (!manifold.local_n1.is_normalized()
            || points.iter().all(is_closest_points)
            || points.iter().any(|p| p.dist < floor))
}

/// How near touching, m, the nearest point of a manifold whose normal turned against the pair's
/// last one must lie for the manifold to be read the other way round (see [`reverse`]).
const REVERSAL_GAP: f32 = 1e-4;

/// How nearly opposite, as a cosine, a manifold's normal must point to the pair's last one to be
/// read as parry's sign slipped (within 26° of it): a slipped sign negates the normal. GJK's
/// normal between two cylinders lying end to side at touching distance was once vertical, 90°
/// off the pair's; read as slipped whenever the next normal leaned past the perpendicular, the
/// right one was negated, its face taken on the far cap, and the pair read 1 m deep.
const REVERSAL_COS: f64 = -0.9;

/// Whether the manifold's normal `now` points against the pair's normal of the last step,
/// `before` (both in one frame, unit), while the shapes touch within [`REVERSAL_GAP`]: parry's
/// sign slipped, not the bodies through each other.
pub(super) fn reversed(manifold: &ContactManifold<(), ()>, now: DVec3, before: DVec3) -> bool {
    now.dot(before) < REVERSAL_COS && manifold.points.iter().any(|p| p.dist.abs() < REVERSAL_GAP)
}

/// Reads the manifold the other way round: the normals and every gap negated, the points where
/// they are. At touching distance, whether parry's GJK finds two shapes apart or overlapping is
/// decided by round-off, and the two readings of the same witness points differ exactly so.
/// Pouring 36 cylinders into a pen, one lay on another 2e-6 m deep at step 377; at step 378
/// parry gave no point in one order and, in the other, the manifold it had given before with
/// the normal and every gap negated. Read as given, the two were 2e-6 m apart: the top one fell
/// freely for a step, 2.2 mm into the other, and a later such step (1262) set the pile moving at
/// 0.5 m/s.
pub(super) fn reverse(manifold: &mut ContactManifold<(), ()>) {
    manifold.local_n1 = -manifold.local_n1;
    manifold.local_n2 = -manifold.local_n2;
    for point in &mut manifold.points {
        point.dist = -point.dist;
    }
}

/// One contact point of a pair in world coordinates, before reduction.
#[derive(Clone, Copy)]
pub(super) struct Candidate {
    /// Midway between the surfaces.
    pub point: DVec3,
    /// On the second shape's surface: fixes the plane.
    pub on_surface2: DVec3,
    /// Unit, from the second body towards the first.
    pub normal: DVec3,
    pub gap: f64,
    pub id: u64,
}

/// The points of one composite pair, gathered over all its manifolds, and scratch for merging
/// and reducing them; kept across steps so that reducing allocates nothing.
///
/// A unit box resting on a flat mesh of 1 m squares overlaps up to eight triangles, and parry
/// gives each its own manifold: 22 to 26 points where one slab gives four, and a hundred such
/// boxes cost 0.72 ms a step against 0.12. A cylinder gave up to 28 points, and a hundred of
/// them 17.6 ms a step against 0.82.
#[derive(Default)]
pub(super) struct Reduction {
    candidates: Vec<Candidate>,
    planes: Vec<(DVec3, f64)>,
    plane_of: Vec<usize>,
    members: Vec<usize>,
    nearest: Vec<f32>,
    plausible: Vec<usize>,
    /// One manifold's points taken by [`Self::take_points`], for a pair that is not composite.
    points: Vec<Candidate>,
    hull: PlaneHull,
}

/// Which points of one contact plane are corners of their convex hull, with scratch kept across
/// steps. Clipped against a mesh's triangles one at a time, a box's face on a flat mesh gave,
/// besides its four corners, the points where the triangles' edges cross its own: on its edges,
/// they carry nothing the corners do not, but they shared the load with them in whatever way
/// a solve left it, and a box resting on a mesh was smoothed every other step where on a slab
/// it is accepted every step.
#[derive(Default)]
struct PlaneHull {
    order: Vec<usize>,
    chain: Vec<usize>,
    /// Per point: a corner of the hull.
    corner: Vec<bool>,
}

impl PlaneHull {
    /// Marks the corners among `len` points at in-plane coordinates `at(i)`: the exact hull by
    /// Andrew's monotone chain, then, nearest first, each corner within [`ON_HULL_EDGE`] of the
    /// segment between its neighbours dropped. All of them for fewer than three.
    ///
    /// The tolerance is not applied inside the chain: there a point a round-off short of a true
    /// corner's edge could pop the corner. On a height field, a box corner then went missing
    /// every few steps, two points on its edges stood in for it, and the solve iterated each
    /// time the plane's points changed.
    fn mark(&mut self, len: usize, at: impl Fn(usize) -> (f64, f64)) {
        self.corner.clear();
        self.corner.resize(len, len < 3);
        if len < 3 {
            return;
        }
        self.order.clear();
        self.order.extend(0..len);
        self.order.sort_by(|&a, &b| {
            at(a)
                .partial_cmp(&at(b))
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.cmp(&b))
        });
        let (first, last) = (at(self.order[0]), at(self.order[len - 1]));
        let extent_squared = (last.0 - first.0).powi(2) + (last.1 - first.1).powi(2);
        let turn = |o: usize, a: usize, b: usize| {
            let (o, a, b) = (at(o), at(a), at(b));
            (a.0 - o.0) * (b.1 - o.1) - (a.1 - o.1) * (b.0 - o.0)
        };
        self.chain.clear();
        for pass in 0..2 {
            let start = self.chain.len();
            for step in 0..len {
                let i = if pass == 0 {
                    self.order[step]
                } else {
                    self.order[len - 1 - step]
                };
                while self.chain.len() >= start + 2
                    && turn(self.chain[self.chain.len() - 2], self.chain[self.chain.len() - 1], i) <= 0.0
                {
                    self.chain.pop();
                }
                self.chain.push(i);
            }
            // Each half ends where the other begins.
            self.chain.pop();
        }
        // A corner is dropped only where it lies between its neighbours: the ends of a line of
        // points (a log lying across tiles) are a round-off from the line through theirs.
        let tolerance = ON_HULL_EDGE * extent_squared.sqrt();
        let off_edge = |prev: usize, corner: usize, next: usize| {
            let ((px, py), (cx, cy), (nx, ny)) = (at(prev), at(corner), at(next));
            let (ex, ey, dx, dy) = (nx - px, ny - py, cx - px, cy - py);
            let length_squared = ex * ex + ey * ey;
            let along = (dx * ex + dy * ey) / length_squared;
            let between = (0.0..=1.0).contains(&along);
            between.then(|| (ex * dy - ey * dx).abs() / length_squared.sqrt())
        };
        while self.chain.len() > 2 {
            let n = self.chain.len();
            let flattest = (0..n)
                .filter_map(|k| {
                    let (prev, next) = (self.chain[(k + n - 1) % n], self.chain[(k + 1) % n]);
                    off_edge(prev, self.chain[k], next).map(|distance| (distance, k))
                })
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            match flattest {
                Some((distance, k)) if distance <= tolerance => {
                    self.chain.remove(k);
                }
                _ => break,
            }
        }
        for &i in &self.chain {
            self.corner[i] = true;
        }
    }
}

/// How far from the segment between its neighbours, as a fraction of the plane's extent, a hull
/// corner still counts as on that edge: 1e-6 of a 1 m face is a micrometre.
const ON_HULL_EDGE: f64 = 1e-6;

impl Reduction {
    /// Takes one manifold's points, those of them that are [plausible](DEPTH_SLACK): a composite
    /// pair's are kept for [`Self::drain`], any other's are reduced at once and each kept one
    /// handed to `emit`.
    pub fn take_manifold(
        &mut self,
        points: &[TrackedContact<()>],
        composite: bool,
        candidate: impl Fn(&TrackedContact<()>) -> Candidate,
        mut emit: impl FnMut(&Candidate),
    ) {
        let floor = depth_floor(points);
        self.plausible.clear();
        self.plausible
            .extend((0..points.len()).filter(|&i| points[i].dist >= floor));
        if composite {
            let plausible = self.plausible.iter().map(|&i| candidate(&points[i]));
            self.candidates.extend(plausible);
            return;
        }
        let point = |k: usize| &points[self.plausible[k]];
        let kept = reduce(
            self.plausible.len(),
            |k| point(k).local_p1,
            |k| point(k).dist,
            &mut self.nearest,
        );
        for k in kept.into_iter().flatten() {
            emit(&candidate(point(k)));
        }
    }

    /// Takes points found otherwise than in parry's manifold (`super::refine`, `super::seams`),
    /// as few as span their contact: a composite pair's are kept for [`Self::drain`], any
    /// other's reduced at once and each kept one handed to `emit`.
    pub fn take_points(
        &mut self,
        points: impl IntoIterator<Item = Candidate>,
        composite: bool,
        mut emit: impl FnMut(&Candidate),
    ) {
        if composite {
            self.candidates.extend(points);
            return;
        }
        self.points.clear();
        self.points.extend(points);
        let Some(origin) = self.points.first().map(|c| c.point) else {
            return;
        };
        let point = |k: usize| &self.points[k];
        let kept = reduce(
            self.points.len(),
            |k| (point(k).point - origin).as_vec3(),
            |k| point(k).gap as f32,
            &mut self.nearest,
        );
        for k in kept.into_iter().flatten() {
            emit(point(k));
        }
    }

    /// Hands each kept point to `emit` with the id of its plane (for warm starts by manifold),
    /// then forgets them all.
    pub fn drain(&mut self, pair_hash: u64, mut emit: impl FnMut(&Candidate, u64)) {
        self.planes.clear();
        self.plane_of.clear();
        for c in &self.candidates {
            let offset = c.normal.dot(c.on_surface2);
            let plane = match self
                .planes
                .iter()
                .position(|&(n, o)| n.dot(c.normal) >= SAME_NORMAL && (o - offset).abs() <= PLANE_TOLERANCE)
            {
                Some(plane) => plane,
                None => {
                    self.planes.push((c.normal, offset));
                    self.planes.len() - 1
                }
            };
            self.plane_of.push(plane);
        }
        for (plane, &(normal, offset)) in self.planes.iter().enumerate() {
            self.members.clear();
            self.members
                .extend((0..self.candidates.len()).filter(|&i| self.plane_of[i] == plane));
            let origin = self.candidates[self.members[0]].point;
            let (across, along) = normal.any_orthonormal_pair();
            let candidates = &self.candidates;
            let members = &self.members;
            let in_plane = |k: usize| {
                let p = candidates[members[k]].point - origin;
                (p.dot(across), p.dot(along))
            };
            self.hull.mark(members.len(), in_plane);
            let mut k = 0;
            self.members.retain(|_| {
                k += 1;
                self.hull.corner[k - 1]
            });
            let member = |k: usize| &self.candidates[self.members[k]];
            let kept = reduce(
                self.members.len(),
                |k| (member(k).point - origin).as_vec3(),
                |k| member(k).gap as f32,
                &mut self.nearest,
            );
            // Named by the plane, not by a triangle: the same while a body slides across them.
            let quantized = (normal * 1024.0).round().as_i64vec3();
            let id = [quantized.x, quantized.y, quantized.z, (offset * 1000.0).round() as i64]
                .into_iter()
                .fold(pair_hash, |hash, value| super::narrow_phase::mix(hash, value as u64));
            for k in kept.into_iter().flatten() {
                emit(member(k), id);
            }
        }
        self.candidates.clear();
    }
}

/// A manifold holding one point `dist` apart (where, the tests that ask do not look).
#[cfg(test)]
pub(super) fn manifold_with_a_point(dist: f32) -> ContactManifold<(), ()> {
    let mut manifold = ContactManifold::with_data(0, 0, ());
    manifold.points.push(TrackedContact::new(
        Vec3::ZERO,
        Vec3::ZERO,
        PackedFeatureId::UNKNOWN,
        PackedFeatureId::UNKNOWN,
        dist,
    ));
    manifold
}

#[cfg(test)]
mod tests {
    use super::super::manifold_view::WorldPose;
    use super::*;
    use bevy_math::DQuat;
    use parry3d::query::{DefaultQueryDispatcher, PersistentQueryDispatcher};
    use parry3d::shape::Cylinder;

    /// Two cylinders of the pour in `tests/plugin_physics.rs` at step 377, `b` resting on `a`
    /// 2e-6 m deep: asked with `b` first, parry negates the normal and every gap.
    #[test]
    fn a_manifold_read_the_other_way_round_is_the_other_orders() {
        let a = WorldPose {
            translation: DVec3::new(0.7303665080314031, 1.0044131075363536, 0.7430367696318),
            rotation: DQuat::from_xyzw(
                -0.8611066652277898,
                0.4000830068574252,
                -0.3095561256157832,
                0.05102846086197566,
            )
            .normalize(),
        };
        let b = WorldPose {
            translation: DVec3::new(0.5788537429695773, 1.320659586811558, 0.35272983982487904),
            rotation: DQuat::from_xyzw(
                -0.5850194253845443,
                0.4293548189577507,
                -0.6311299435040141,
                -0.2740104117969148,
            )
            .normalize(),
        };
        let cylinder = Cylinder::new(0.5, 0.25);
        // The manifold with the first shape at `first`, and that shape's outward normal.
        let ask = |first: &WorldPose, second: &WorldPose| {
            let mut manifolds = Vec::new();
            DefaultQueryDispatcher
                .contact_manifolds(
                    &first.inv_mul(second),
                    &cylinder,
                    &cylinder,
                    0.01,
                    &mut manifolds,
                    &mut None,
                )
                .unwrap();
            let manifold = manifolds.pop().unwrap();
            let outward = first.rotation * manifold.local_n1.as_dvec3();
            (manifold, outward)
        };
        let (right, out_of_a) = ask(&a, &b);
        let (mut wrong, out_of_b) = ask(&b, &a);
        let closest = |m: &ContactManifold<(), ()>| m.points.iter().find(|p| is_closest_points(p)).unwrap().dist;
        // Both orders should give the normal from `b` towards `a`, and `b` 1–2 µm deep.
        assert!(closest(&right) < 0.0 && closest(&wrong) > 0.0);
        assert!(out_of_b.dot(-out_of_a) < -0.99, "{out_of_b} against {}", -out_of_a);
        assert!(reversed(&wrong, out_of_b, -out_of_a));
        reverse(&mut wrong);
        let turned = b.rotation * wrong.local_n1.as_dvec3();
        assert!(turned.dot(-out_of_a) > 0.9999, "{turned} against {}", -out_of_a);
        assert!((closest(&wrong) - closest(&right)).abs() < 1e-6);
        assert!((deepest(&wrong.points) - deepest(&right.points)).abs() < 1e-6);
    }

    /// GJK's normal between two cylinders lying end to side, 1e-6 m apart, was vertical at one
    /// step and right, horizontal, at the next: turned across, not negated. A negated normal,
    /// at that distance, is a slipped sign.
    #[test]
    fn a_normal_turned_across_is_no_slipped_sign() {
        let manifold = manifold_with_a_point(-1.07e-6);
        let before = DVec3::new(3.249740934665186e-5, 0.9999999994012811, 1.1889325154879996e-5);
        let now = DVec3::new(0.9812637453732159, -0.000614987914524358, 0.19266832590229593);
        assert!(now.dot(before) < 0.0);
        assert!(!reversed(&manifold, now, before));
        assert!(reversed(&manifold, -before, before));
    }
}
