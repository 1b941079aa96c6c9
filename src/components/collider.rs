//! Collision shapes, by parry3d, and their density.

use bevy_ecs::prelude::*;
use bevy_math::{Quat, Vec3};
use bevy_reflect::prelude::*;
use parry3d::math::Pose;
pub use parry3d::shape::TriMeshFlags;
use parry3d::shape::{Ball, Capsule, Compound, Cuboid, Cylinder, HeightFieldFlags, SharedShape, TypedShape};

use crate::pipeline::seams::{PartCones, part_cones};

/// The shape of a body (or, without a [`RigidBody`](super::RigidBody), of static geometry),
/// in the entity's local frame.
///
/// Sizes follow Bevy's primitives: [`Collider::cuboid`] takes full side lengths like
/// `Cuboid::new`, capsules and cylinders stand along local Y.
#[derive(Component, Clone)]
pub struct Collider {
    shape: SharedShape,
    /// For a compound whose parts share faces, each part's cone of outward normals of the union.
    part_cones: Option<PartCones>,
}

impl std::fmt::Debug for Collider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Collider({:?})", self.shape.shape_type())
    }
}

impl Collider {
    /// A box with full side lengths `x_length × y_length × z_length`, m.
    pub fn cuboid(x_length: f32, y_length: f32, z_length: f32) -> Self {
        Self::of(SharedShape::cuboid(0.5 * x_length, 0.5 * y_length, 0.5 * z_length))
    }

    /// A ball of `radius`, m.
    pub fn sphere(radius: f32) -> Self {
        Self::of(SharedShape::ball(radius))
    }

    /// A capsule along local Y: a cylinder of `length` capped by hemispheres of `radius`.
    pub fn capsule(radius: f32, length: f32) -> Self {
        Self::of(SharedShape::capsule_y(0.5 * length, radius))
    }

    /// A cylinder along local Y of `radius` and full `height`.
    pub fn cylinder(radius: f32, height: f32) -> Self {
        Self::of(SharedShape::cylinder(0.5 * height, radius))
    }

    /// The convex hull of `points`; `None` if they span no volume.
    pub fn convex_hull(points: &[Vec3]) -> Option<Self> {
        SharedShape::convex_hull(points).map(Self::of)
    }

    /// A triangle mesh (for static geometry: it has no volume, so no mass); `None` if the
    /// indices do not fit the vertices.
    ///
    /// One-sided, and smooth across its inner edges: a triangle pushes only along normals
    /// between its own and its neighbours' ([`TriMeshFlags::FIX_INTERNAL_EDGES`]), so a box
    /// sliding over a flat mesh meets no ledge where two triangles meet. Without that, parry
    /// takes the edge a corner crosses for an obstacle: on a flat mesh of 1 m squares a box at
    /// 3 m/s stopped after 0.47 m instead of 1.50 m and hopped 8 cm. Triangles face the side
    /// from which their vertices run counter-clockwise; a body behind them passes through. Use
    /// [`Collider::trimesh_with_flags`] with [`TriMeshFlags::empty()`] for a two-sided mesh or
    /// one whose triangles are not wound alike.
    ///
    /// ```
    /// use bevy_canal::prelude::*;
    ///
    /// // A 2 m square floor of two triangles, facing +Y.
    /// let vertices = vec![
    ///     Vec3::new(-1.0, 0.0, -1.0),
    ///     Vec3::new(-1.0, 0.0, 1.0),
    ///     Vec3::new(1.0, 0.0, 1.0),
    ///     Vec3::new(1.0, 0.0, -1.0),
    /// ];
    /// let floor = Collider::trimesh(vertices, vec![[0, 1, 2], [0, 2, 3]]).unwrap();
    /// assert!(floor.invalid_reason().is_none());
    /// ```
    pub fn trimesh(vertices: Vec<Vec3>, indices: Vec<[u32; 3]>) -> Option<Self> {
        Self::trimesh_with_flags(vertices, indices, TriMeshFlags::FIX_INTERNAL_EDGES)
    }

    /// A triangle mesh preprocessed with parry's `flags`; `None` if the indices do not fit the
    /// vertices or the flags' preprocessing fails.
    pub fn trimesh_with_flags(vertices: Vec<Vec3>, indices: Vec<[u32; 3]>, flags: TriMeshFlags) -> Option<Self> {
        SharedShape::trimesh_with_flags(vertices, indices, flags)
            .ok()
            .map(Self::of)
    }

    /// A height field over the XZ plane, centred on the origin: `heights` in row-major order
    /// with `rows × columns` samples, spanning `scale` (x extent, height factor, z extent). A
    /// row runs along X and the rows follow each other along Z, as the rows of an image seen
    /// from above: sample `heights[r * columns + c]` stands at
    /// `x = scale.x · (c / (columns − 1) − ½)`, `z = scale.z · (r / (rows − 1) − ½)`. Like
    /// [`Collider::trimesh`], smooth across the edges of its triangles and one-sided: it pushes
    /// upwards. (parry 0.31 then loses a ball's contact for one step when the ball's centre
    /// lies exactly over a cell's edge: it drops by g·dt² and is pushed back.)
    ///
    /// ```
    /// use bevy_canal::prelude::*;
    /// use parry3d::query::{Ray, RayCast};
    ///
    /// // Three rows of five samples over 8 m (x) by 4 m (z), rising by 0.25 m a column.
    /// let heights = (0..3).flat_map(|_row| (0..5).map(|column| 0.25 * column as f32)).collect();
    /// let ramp = Collider::heightfield(heights, 3, 5, Vec3::new(8.0, 1.0, 4.0)).unwrap();
    /// // Above x = 4 (the last column) the ground is 1 m high, above x = −4 at 0, whatever z.
    /// for (x, z, ground) in [(4.0, -2.0, 1.0), (4.0, 1.0, 1.0), (-4.0, 2.0, 0.0), (0.0, 0.5, 0.5)] {
    ///     let down = Ray::new(Vec3::new(x, 5.0, z), Vec3::NEG_Y);
    ///     let drop = ramp.shape().cast_local_ray(&down, 10.0, true).unwrap();
    ///     assert!((5.0 - drop - ground).abs() < 1e-5, "({x}, {z}): {}", 5.0 - drop);
    /// }
    /// ```
    pub fn heightfield(heights: Vec<f32>, rows: usize, columns: usize, scale: Vec3) -> Option<Self> {
        if heights.len() != rows * columns || rows < 2 || columns < 2 {
            return None;
        }
        // parry's array is column-major, its rows along Z and its columns along X.
        let column_major = (0..columns)
            .flat_map(|c| (0..rows).map(move |r| (r, c)))
            .map(|(r, c)| heights[r * columns + c])
            .collect();
        let matrix = parry3d::utils::Array2::new(rows, columns, column_major);
        Some(Self::of(SharedShape::heightfield_with_flags(
            matrix,
            scale,
            HeightFieldFlags::FIX_INTERNAL_EDGES,
        )))
    }

    /// Several shapes, each at a pose relative to the entity; `None` if `parts` is empty.
    ///
    /// Where two boxes or convex hulls among the parts share a face exactly (the tiles of a
    /// floor, the blocks of a level), that face is inside the union: no contact pushes out
    /// through it, so bodies slide and roll over the seam as over one surface. A floor of
    /// separate static boxes, one entity each, does not get this: a box sliding over it catches
    /// on the next box's side at every seam (stopping after 0.61 m where one slab lets it slide
    /// 1.50 m), as in other engines. Build such a floor as one compound or one mesh.
    pub fn compound(parts: Vec<(Vec3, Quat, Collider)>) -> Option<Self> {
        if parts.is_empty() {
            return None;
        }
        let parts = parts
            .into_iter()
            .map(|(t, r, c)| (Pose::from_parts(t, r), c.shape))
            .collect();
        let mut compound = Compound::new(parts);
        Some(Self {
            part_cones: part_cones(&mut compound),
            shape: SharedShape::new(compound),
        })
    }

    /// A collider of a shape that is not a compound.
    fn of(shape: SharedShape) -> Self {
        Self {
            shape,
            part_cones: None,
        }
    }

    /// The parry3d shape.
    pub fn shape(&self) -> &SharedShape {
        &self.shape
    }

    /// For a compound whose parts share faces, each part's cone of outward normals of the union.
    pub(crate) fn part_cones(&self) -> Option<&PartCones> {
        self.part_cones.as_ref()
    }

    /// Why this shape cannot be simulated, if it cannot: zero, negative or non-finite sizes.
    pub fn invalid_reason(&self) -> Option<String> {
        let positive = |x: f32| x.is_finite() && x > 0.0;
        let reason = match self.shape.as_typed_shape() {
            TypedShape::Cuboid(Cuboid { half_extents }) => {
                (!(positive(half_extents.x) && positive(half_extents.y) && positive(half_extents.z)))
                    .then(|| format!("cuboid half extents {half_extents} must be finite and positive"))
            }
            TypedShape::Ball(Ball { radius }) => {
                (!positive(*radius)).then(|| format!("sphere radius {radius} must be finite and positive"))
            }
            TypedShape::Capsule(capsule) => {
                let Capsule { segment, radius } = capsule;
                (!(positive(*radius) && segment.a.is_finite() && segment.b.is_finite()))
                    .then(|| format!("capsule radius {radius} must be finite and positive, length finite"))
            }
            TypedShape::Cylinder(Cylinder { half_height, radius }) => (!(positive(*half_height) && positive(*radius)))
                .then(|| format!("cylinder half height {half_height} and radius {radius} must be finite and positive")),
            TypedShape::ConvexPolyhedron(hull) => {
                (!hull.points().iter().all(|p| p.is_finite())).then(|| "convex hull has non-finite points".into())
            }
            TypedShape::HeightField(field) => {
                let scale = field.scale();
                (!(positive(scale.x) && positive(scale.z) && scale.y.is_finite()))
                    .then(|| format!("height field scale {scale} must be finite, its x and z extents positive"))
            }
            TypedShape::TriMesh(mesh) => {
                (!mesh.vertices().iter().all(|p| p.is_finite())).then(|| "triangle mesh has non-finite vertices".into())
            }
            TypedShape::Compound(compound) => compound.shapes().iter().find_map(|(pose, part)| {
                if !(pose.translation.is_finite() && pose.rotation.is_finite()) {
                    return Some("compound part has a non-finite pose".to_string());
                }
                Collider::of(part.clone()).invalid_reason()
            }),
            _ => None,
        };
        reason.or_else(|| {
            let aabb = self.shape.compute_local_aabb();
            (!(aabb.mins.is_finite() && aabb.maxs.is_finite())).then(|| "shape has a non-finite extent".into())
        })
    }
}

/// Density of a collider's material, kg/m³ (default 1.0). Sets the body's mass and inertia
/// unless [`Mass`](super::Mass) overrides them.
#[derive(Component, Reflect, Clone, Copy, Debug, PartialEq)]
#[reflect(Component, Default, Debug, PartialEq)]
pub struct ColliderDensity(pub f32);

impl Default for ColliderDensity {
    fn default() -> Self {
        Self(1.0)
    }
}
