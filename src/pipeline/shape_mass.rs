//! Part of stage 1: a shape's mass, centre of mass and inertia matrix about it, in the shape's
//! own frame, in `f64`.
//!
//! parry gives the primitives' mass properties in closed form. For hulls, meshes and compounds
//! it integrates the inertia matrix, then diagonalises it and keeps only the principal moments
//! and axes. Its 3 × 3 eigensolver (glamx 0.3) takes the axis of the smallest moment first, even
//! where that moment is double and its axis not unique, and below its threshold answers the x
//! axis. A disc or a short prism has its two smallest moments equal, so when its axis was
//! turned, as a wheel in a compound or a hull of a regular prism can be, parry returned axes
//! that were wrong. A wheel turned 0.31 rad in a compound got the inertia of one not turned.
//! The solver wants the matrix, not its axes, so this file integrates the matrix and never
//! diagonalises it.
//!
//! Owns those integrals; the user's overrides (`Mass`, `PrincipalInertia`, `CenterOfMass`) are
//! `prepare`'s.

use bevy_math::{DMat3, DQuat, DVec3};
use parry3d::shape::{Shape, TypedShape};

/// A solid's mass, kg, centre of mass, m, and inertia about that centre, kg·m², in the frame of
/// its shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ShapeMass {
    pub mass: f64,
    pub center: DVec3,
    pub inertia: DMat3,
}

impl ShapeMass {
    const ZERO: Self = Self {
        mass: 0.0,
        center: DVec3::ZERO,
        inertia: DMat3::ZERO,
    };
}

/// `shape`'s mass properties at `density`, kg/m³. A mesh that encloses no volume has none.
pub(crate) fn of(shape: &dyn Shape, density: f64) -> ShapeMass {
    match shape.as_typed_shape() {
        TypedShape::Compound(compound) => combined(compound.shapes().iter().map(|(pose, part)| {
            let rotation = pose.rotation.as_dquat();
            let own = of(part.as_ref(), density);
            (own, rotation, pose.translation.as_dvec3())
        })),
        TypedShape::ConvexPolyhedron(hull) => {
            let (vertices, triangles) = hull.to_trimesh();
            enclosed(&vertices, &triangles, density)
        }
        TypedShape::TriMesh(mesh) => enclosed(mesh.vertices(), mesh.indices(), density),
        _ => {
            // Closed forms, whose principal axes parry sets directly.
            let props = shape.mass_properties(density as f32);
            let axes = DMat3::from_quat(props.principal_inertia_local_frame.as_dquat());
            ShapeMass {
                mass: f64::from(props.mass()),
                center: props.local_com.as_dvec3(),
                inertia: axes * DMat3::from_diagonal(props.principal_inertia().as_dvec3()) * axes.transpose(),
            }
        }
    }
}

/// Parts, each with the rotation and translation placing it in the whole, as one solid: the
/// parts' inertias turned into the whole's frame and moved to its centre of mass.
fn combined(parts: impl Iterator<Item = (ShapeMass, DQuat, DVec3)> + Clone) -> ShapeMass {
    let placed = parts.map(|(part, rotation, translation)| {
        let turn = DMat3::from_quat(rotation);
        ShapeMass {
            mass: part.mass,
            center: rotation * part.center + translation,
            inertia: turn * part.inertia * turn.transpose(),
        }
    });
    let mass: f64 = placed.clone().map(|part| part.mass).sum();
    if mass <= 0.0 {
        return ShapeMass::ZERO;
    }
    let center = placed.clone().map(|part| part.center * part.mass).sum::<DVec3>() / mass;
    let inertia = placed
        .map(|part| {
            let d = part.center - center;
            part.inertia + (DMat3::from_diagonal(DVec3::splat(d.length_squared())) - outer(d, d)) * part.mass
        })
        .fold(DMat3::ZERO, |sum, i| sum + i);
    ShapeMass { mass, center, inertia }
}

/// The solid a closed triangle mesh encloses, integrated as tetrahedra from its vertices'
/// average. A mesh wound inwards counts as wound outwards.
fn enclosed(vertices: &[parry3d::math::Vector], triangles: &[[u32; 3]], density: f64) -> ShapeMass {
    if vertices.is_empty() {
        return ShapeMass::ZERO;
    }
    let origin = vertices.iter().map(|v| v.as_dvec3()).sum::<DVec3>() / vertices.len() as f64;
    let (mut volume, mut first, mut second) = (0.0, DVec3::ZERO, DMat3::ZERO);
    for triangle in triangles {
        let [a, b, c] = triangle.map(|i| vertices[i as usize].as_dvec3() - origin);
        // The tetrahedron (origin, a, b, c): its volume, first moment and second moment
        // ∫ x xᵀ = V/20 (a aᵀ + b bᵀ + c cᵀ + s sᵀ), s = a + b + c.
        let v = a.dot(b.cross(c)) / 6.0;
        let s = a + b + c;
        volume += v;
        first += s * (v / 4.0);
        second += (outer(a, a) + outer(b, b) + outer(c, c) + outer(s, s)) * (v / 20.0);
    }
    if volume == 0.0 || !volume.is_finite() {
        return ShapeMass::ZERO;
    }
    let offset = first / volume;
    // Second moment about the centre of mass, for the solid's real (positive) volume.
    let about_center = (second - outer(offset, offset) * volume) * (density * volume.signum());
    ShapeMass {
        mass: volume.abs() * density,
        center: origin + offset,
        inertia: DMat3::from_diagonal(DVec3::splat(
            about_center.x_axis.x + about_center.y_axis.y + about_center.z_axis.z,
        )) - about_center,
    }
}

/// The most `|ω × r|²` can be over `shape`'s points `r` (from `center`) for a turning of
/// `ωᵀ I ω = 1`, 1/kg: times twice a body's kinetic energy, the square of the fastest its shape
/// could sweep were all that energy spent on turning it (`narrow_phase::turning_reach`). Zero
/// for a ball, which turning does not move.
///
/// `|ω × r|² ≤ (ωᵀ I ω) · rᵀ (tr(I⁻¹) 𝟙 − I⁻¹) r`: the form's trace bounds the largest
/// eigenvalue of `[r]×ᵀ I⁻¹ [r]×`, which has rank two, within a factor two. The form is convex,
/// so over the shape it is largest at a corner of its bounding box. It leaves out turning about
/// the axis through the point itself: a plank's spin about its length does not move its ends.
pub(crate) fn turning_sweep(shape: &dyn Shape, center: DVec3, inertia: DMat3) -> f64 {
    if shape.as_ball().is_some() || inertia.determinant() <= 0.0 {
        return 0.0;
    }
    let inverse = inertia.inverse();
    let form = DMat3::from_diagonal(DVec3::splat(inverse.x_axis.x + inverse.y_axis.y + inverse.z_axis.z)) - inverse;
    let sweep = box_corners(shape, center).map(|r| r.dot(form * r)).fold(0.0, f64::max);
    if sweep.is_finite() { sweep } else { 0.0 }
}

/// The farthest a point of `shape` lies from `center`, m, to within its bounding box.
pub(crate) fn farthest(shape: &dyn Shape, center: DVec3) -> f64 {
    if shape.as_ball().is_some() {
        return 0.0;
    }
    box_corners(shape, center).map(DVec3::length).fold(0.0, f64::max)
}

/// The corners of `shape`'s bounding box in its frame, from `center`.
fn box_corners(shape: &dyn Shape, center: DVec3) -> impl Iterator<Item = DVec3> {
    let aabb = shape.compute_local_aabb();
    let (low, high) = (aabb.mins.as_dvec3() - center, aabb.maxs.as_dvec3() - center);
    (0..8).map(move |k| {
        DVec3::new(
            [low.x, high.x][k & 1],
            [low.y, high.y][(k >> 1) & 1],
            [low.z, high.z][k >> 2],
        )
    })
}

/// `a bᵀ`.
fn outer(a: DVec3, b: DVec3) -> DMat3 {
    DMat3::from_cols(a * b.x, a * b.y, a * b.z)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy_math::Vec3;
    use parry3d::shape::SharedShape;

    fn close(a: DMat3, b: DMat3, relative: f64) -> bool {
        let scale = b.to_cols_array().iter().fold(0.0_f64, |m, x| m.max(x.abs()));
        a.to_cols_array()
            .iter()
            .zip(b.to_cols_array())
            .all(|(x, y)| (x - y).abs() <= relative * scale)
    }

    fn prism(sides: usize, radius: f32, height: f32, turn: bevy_math::Quat) -> SharedShape {
        let corners: Vec<Vec3> = (0..2 * sides)
            .map(|k| {
                let angle = (k / 2) as f32 * std::f32::consts::TAU / sides as f32;
                turn * Vec3::new(radius * angle.cos(), [-0.5, 0.5][k % 2] * height, radius * angle.sin())
            })
            .collect();
        SharedShape::convex_hull(&corners).unwrap()
    }

    #[test]
    fn a_hull_of_a_box_has_the_boxs_closed_form() {
        let half = Vec3::new(0.5, 1.0, 1.5);
        let corners: Vec<Vec3> = (0..8)
            .map(|k| half * Vec3::new([-1.0, 1.0][k & 1], [-1.0, 1.0][(k >> 1) & 1], [-1.0, 1.0][k >> 2]))
            .collect();
        let hull = of(SharedShape::convex_hull(&corners).unwrap().as_ref(), 2.0);
        let cuboid = of(SharedShape::cuboid(half.x, half.y, half.z).as_ref(), 2.0);
        assert!((hull.mass - cuboid.mass).abs() < 1e-12 * cuboid.mass);
        assert!(hull.center.length() < 1e-12);
        assert!(
            close(hull.inertia, cuboid.inertia, 1e-7),
            "{:?} vs {:?}",
            hull.inertia,
            cuboid.inertia
        );
    }

    #[test]
    fn a_turned_prism_has_the_prisms_inertia_turned() {
        // A regular prism of n sides and circumradius R: about its axis m R² (1 + 2 cos²(π/n)) / 6.
        let (sides, radius, height) = (7, 0.3_f32, 0.3_f32);
        let upright = of(prism(sides, radius, height, bevy_math::Quat::IDENTITY).as_ref(), 1.0);
        let r = f64::from(radius);
        let cos = (std::f64::consts::PI / sides as f64).cos();
        let axial = upright.mass * r * r * (1.0 + 2.0 * cos * cos) / 6.0;
        assert!(
            (upright.inertia.y_axis.y - axial).abs() < 1e-6 * axial,
            "{:?}",
            upright.inertia
        );
        let turn = bevy_math::Quat::from_rotation_y(0.31) * bevy_math::Quat::from_rotation_x(1.2);
        let turned = of(prism(sides, radius, height, turn).as_ref(), 1.0);
        let m = DMat3::from_quat(turn.as_dquat());
        let expected = m * upright.inertia * m.transpose();
        assert!(
            close(turned.inertia, expected, 1e-6),
            "{:?} vs {expected:?}",
            turned.inertia
        );
    }

    #[test]
    fn a_compound_turns_and_moves_its_parts_inertia() {
        // A disc turned as a wheel lying along a heading, where parry's axes were wrong, and
        // two cubes side by side, which the parallel-axis theorem joins into a 2 × 1 × 1 box.
        let turn =
            bevy_math::Quat::from_rotation_y(0.31) * bevy_math::Quat::from_rotation_x(std::f32::consts::FRAC_PI_2);
        let disc = SharedShape::cylinder(0.15, 0.5);
        let wheel = of(
            SharedShape::compound(vec![(parry3d::math::Pose::from_parts(Vec3::ZERO, turn), disc.clone())]).as_ref(),
            1.0,
        );
        let m = DMat3::from_quat(turn.as_dquat());
        let expected = m * of(disc.as_ref(), 1.0).inertia * m.transpose();
        assert!(
            close(wheel.inertia, expected, 1e-6),
            "{:?} vs {expected:?}",
            wheel.inertia
        );

        let cube = SharedShape::cuboid(0.5, 0.5, 0.5);
        let at = |x: f32| {
            (
                parry3d::math::Pose::from_parts(Vec3::new(x, 0.0, 0.0), bevy_math::Quat::IDENTITY),
                cube.clone(),
            )
        };
        let pair = of(SharedShape::compound(vec![at(-0.5), at(0.5)]).as_ref(), 1.0);
        let bar = of(SharedShape::cuboid(1.0, 0.5, 0.5).as_ref(), 1.0);
        assert!((pair.mass - bar.mass).abs() < 1e-12);
        assert!(
            close(pair.inertia, bar.inertia, 1e-7),
            "{:?} vs {:?}",
            pair.inertia,
            bar.inertia
        );
    }
}
