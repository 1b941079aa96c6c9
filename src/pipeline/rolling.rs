//! Stage 4, rolling and torsional friction ([`RollingFriction`](crate::components::RollingFriction)):
//! one block of three angular rows, about the normal and the two tangents, per manifold whose
//! pair has a coefficient. The solver ties its bounds to the manifold's normal impulses
//! ([`RollingResistance`]).
//!
//! Owns building those blocks into an island's problem, after its contacts and joints, carrying
//! their impulses to the next step, and their torques for `Contacts`. It must not touch the contacts: the blocks only read
//! their sides, normals and manifolds.

use bevy_math::DVec3;
use bevy_platform::collections::HashMap;

use super::narrow_phase::GeneratedContact;
use super::solve::IslandSolver;
use crate::solver::cone::Cone;
use crate::solver::{ConstraintRows, RollingResistance, Solution, SolverConstraint, StepProblem};

/// Adds a resistance block for each run of `problem`'s contacts from one manifold whose pair
/// resists rolling or spin. `generated[sources[k]]` is the step's contact behind
/// `problem.contacts[k]`; `warm` holds last step's world torque impulses by manifold.
pub(crate) fn add_blocks(
    problem: &mut StepProblem,
    generated: &[GeneratedContact],
    sources: &[usize],
    warm: &HashMap<u64, DVec3>,
) {
    let mut start = 0;
    while start < problem.contacts.len() {
        let first = &generated[sources[start]];
        let end = start
            + sources[start..]
                .iter()
                .take_while(|&&c| generated[c].manifold == first.manifold)
                .count();
        if first.rolling > 0.0 || first.torsional > 0.0 {
            let contact = &problem.contacts[start];
            let (normal, t1, t2) = contact.frame();
            let axes = [normal, t1, t2];
            // Carried as a world vector: the tangents are rebuilt from this step's normal.
            let warm_impulse = warm
                .get(&first.manifold)
                .map(|w| DVec3::new(w.dot(normal), w.dot(t1), w.dot(t2)));
            let rows = ConstraintRows::Angular { axes, count: 3 };
            problem.rolling.push(RollingResistance {
                constraint: problem.constraints.len(),
                contacts: start..end,
                torsional: first.torsional,
                rolling: first.rolling,
            });
            problem.constraints.push(
                SolverConstraint::new(first.manifold, contact.body1, contact.body2, rows)
                    .with_cone(Cone::Resistance {
                        torsional: 0.0,
                        rolling: 0.0,
                    })
                    .with_warm_impulse(warm_impulse),
            );
        }
        start = end;
    }
}

/// Per step contact (`count` of them), the world torque impulse of the resistance block whose
/// first point it is, zero elsewhere; `torques` is left empty when no island has a block.
pub(crate) fn applied_torques(islands: &[IslandSolver], count: usize, torques: &mut Vec<DVec3>) {
    torques.clear();
    if islands.iter().all(|island| island.problem.rolling.is_empty()) {
        return;
    }
    torques.resize(count, DVec3::ZERO);
    for island in islands {
        for r in &island.problem.rolling {
            let Some(&first) = island.contacts.get(r.contacts.start) else {
                continue;
            };
            torques[first] = world_torque(
                &island.problem.constraints[r.constraint],
                island.solution.constraint_impulses[r.constraint],
            );
        }
    }
}

/// A resistance block's row impulses as a world vector.
fn world_torque(constraint: &SolverConstraint, rows: DVec3) -> DVec3 {
    match constraint.rows {
        ConstraintRows::Angular { axes, .. } => axes[0] * rows.x + axes[1] * rows.y + axes[2] * rows.z,
        ConstraintRows::Linear { .. } => DVec3::ZERO,
    }
}

/// Records the warm start of each of `problem`'s resistance blocks into `warm`, by manifold.
pub(crate) fn record(problem: &StepProblem, solution: &Solution, warm: &mut HashMap<u64, DVec3>) {
    for r in &problem.rolling {
        let constraint = &problem.constraints[r.constraint];
        warm.insert(
            constraint.id,
            world_torque(constraint, solution.warm_constraint_impulses[r.constraint]),
        );
    }
}
