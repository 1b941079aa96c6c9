//! Stage 2: candidate pairs from a bounding-volume hierarchy (parry3d's `Bvh`), kept across
//! steps: each collider's leaf is updated in place, the tree refitted and incrementally
//! re-optimised, then traversed against itself — O(n log n), not O(n²).
//!
//! Owns the tree and the leaf of each entity; knows nothing of contacts.

use bevy_platform::collections::HashMap;
use std::time::Instant;

use bevy_ecs::prelude::*;
use parry3d::bounding_volume::BoundingVolume;
use parry3d::partitioning::{Bvh, BvhWorkspace};

use super::PhysicsWorld;
use crate::resources::PhysicsSettings;

#[derive(Default)]
pub(crate) struct BroadPhase {
    bvh: Bvh,
    workspace: BvhWorkspace,
    leaf_of: HashMap<Entity, u32>,
    free_leaves: Vec<u32>,
    /// Body index of each leaf this step, `usize::MAX` for leaves no longer in use.
    body_of_leaf: Vec<usize>,
    live: Vec<bool>,
}

impl BroadPhase {
    fn leaf(&mut self, entity: Entity) -> u32 {
        if let Some(&leaf) = self.leaf_of.get(&entity) {
            return leaf;
        }
        let leaf = self.free_leaves.pop().unwrap_or(self.body_of_leaf.len() as u32);
        if leaf as usize >= self.body_of_leaf.len() {
            self.body_of_leaf.resize(leaf as usize + 1, usize::MAX);
            self.live.resize(leaf as usize + 1, false);
        }
        self.leaf_of.insert(entity, leaf);
        leaf
    }
}

pub(crate) fn broad_phase(mut world: ResMut<PhysicsWorld>, settings: Res<PhysicsSettings>) {
    let start = Instant::now();
    let world = &mut *world;
    let dt = world.dt as f32;
    let broad = &mut world.broad_phase;
    broad.live.fill(false);
    for (index, body) in world.bodies.iter().enumerate() {
        let Some(collider) = &body.collider else { continue };
        let leaf = broad.leaf(body.entity);
        broad.body_of_leaf[leaf as usize] = index;
        broad.live[leaf as usize] = true;
        // Enlarged by the contact margin and by how far the body can travel in one step, so
        // that speculative contacts are found before the shapes meet.
        let reach = settings.contact_margin
            + dt * (body.linear_velocity.length() as f32
                + body.angular_velocity.length() as f32
                    * collider.shape().compute_local_aabb().half_extents().length());
        let aabb = collider.shape().compute_aabb(&body.pose()).loosened(reach);
        broad.bvh.insert_or_update_partially(aabb, leaf, 0.0);
    }
    // Entities gone (despawned, collider removed, left out this step) leave the tree.
    let BroadPhase {
        bvh,
        leaf_of,
        free_leaves,
        body_of_leaf,
        live,
        ..
    } = &mut *broad;
    leaf_of.retain(|_, leaf| {
        let keep = live[*leaf as usize];
        if !keep {
            bvh.remove(*leaf);
            body_of_leaf[*leaf as usize] = usize::MAX;
            free_leaves.push(*leaf);
        }
        keep
    });
    broad.bvh.refit(&mut broad.workspace);
    broad.bvh.optimize_incremental(&mut broad.workspace);
    world.pairs.clear();
    let (bodies, pairs, body_of_leaf) = (&world.bodies, &mut world.pairs, &broad.body_of_leaf);
    broad
        .bvh
        .traverse_bvtt_single_tree::<false>(&mut broad.workspace, &mut |l1, l2| {
            let (a, b) = (body_of_leaf[l1 as usize], body_of_leaf[l2 as usize]);
            if a == usize::MAX || b == usize::MAX || a == b {
                return;
            }
            if bodies[a].kind.is_dynamic() || bodies[b].kind.is_dynamic() {
                pairs.push((a.min(b), a.max(b)));
            }
        });
    pairs.sort_unstable();
    pairs.dedup();
    world.times.broad_phase = start.elapsed();
}
