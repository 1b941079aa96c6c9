//! What `prepare` derives from an entity's shape components — whether its collider can be
//! simulated, and a dynamic body's mass properties — kept until those components change.
//!
//! Both are pure functions of `Collider`, `ColliderDensity`, `Mass`, `PrincipalInertia` and
//! `CenterOfMass`, but not cheap: a convex hull or a triangle mesh is scanned vertex by vertex
//! and its mass integrated over its faces. Recomputed every step, they made the prepare stage of
//! 50 free convex hulls of 200 points 0.54 ms a step, 85% of the whole step; cached, 0.004 ms.
//! On the 210-box pyramid the stage went from 0.024 to 0.019 ms.
//!
//! Owns the cache and its invalidation (a component changed, was added or was removed, or the
//! entity was not seen last step). It does not decide what a result means for the step.

use bevy_ecs::change_detection::{DetectChanges, Ref};
use bevy_ecs::entity::Entity;
use bevy_math::{DMat3, DVec3};
use bevy_platform::collections::HashMap;

/// A dynamic body's mass, centre of mass and inertia about it (body frame), and how far its
/// turning can sweep its shape (`shape_mass::turning_sweep`), or why it has none.
pub(crate) type MassProperties = Result<(f64, DVec3, DMat3, f64), String>;

/// Which of an entity's shape components exist, and whether any changed since the last step.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShapeStamp {
    present: u8,
    changed: bool,
}

impl ShapeStamp {
    /// The stamp of the given optional components, in a fixed order.
    pub fn of<const N: usize>(components: [Option<bool>; N]) -> Self {
        let mut stamp = Self {
            present: 0,
            changed: false,
        };
        for (k, component) in components.into_iter().enumerate() {
            if let Some(changed) = component {
                stamp.present |= 1 << k;
                stamp.changed |= changed;
            }
        }
        stamp
    }
}

/// `Some(is_changed)` for a present component.
pub(crate) fn changed<T>(component: &Option<Ref<T>>) -> Option<bool> {
    component.as_ref().map(DetectChanges::is_changed)
}

struct Entry {
    present: u8,
    /// `Some(None)`: checked, valid.
    invalid: Option<Option<String>>,
    mass: Option<MassProperties>,
    step: u64,
}

#[derive(Default)]
pub(crate) struct ShapeCache {
    entries: HashMap<Entity, Entry>,
    step: u64,
}

impl ShapeCache {
    pub fn begin_step(&mut self) {
        self.step += 1;
    }

    /// Why the entity's collider cannot be simulated, computed by `check` unless cached.
    pub fn invalid_reason(
        &mut self,
        entity: Entity,
        stamp: ShapeStamp,
        check: impl FnOnce() -> Option<String>,
    ) -> Option<String> {
        self.entry(entity, stamp).invalid.get_or_insert_with(check).clone()
    }

    /// The entity's mass properties, computed by `compute` unless cached.
    pub fn mass_properties(
        &mut self,
        entity: Entity,
        stamp: ShapeStamp,
        compute: impl FnOnce() -> MassProperties,
    ) -> MassProperties {
        self.entry(entity, stamp).mass.get_or_insert_with(compute).clone()
    }

    /// Drops the entries of entities not seen this step (despawned, or no longer bodies).
    pub fn end_step(&mut self) {
        let step = self.step;
        self.entries.retain(|_, entry| entry.step == step);
    }

    fn entry(&mut self, entity: Entity, stamp: ShapeStamp) -> &mut Entry {
        let step = self.step;
        let entry = self.entries.entry(entity).or_insert_with(|| Entry {
            present: stamp.present,
            invalid: None,
            mass: None,
            step,
        });
        // `end_step` dropped the entries of entities missing last step, so a change made while
        // an entity was not a body cannot be missed here.
        if stamp.changed || entry.present != stamp.present {
            entry.present = stamp.present;
            entry.invalid = None;
            entry.mass = None;
        }
        entry.step = step;
        entry
    }
}
