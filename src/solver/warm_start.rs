//! Carrying impulses from one step to the next, matched by contact id (design note §3, warm start).

use std::collections::HashMap;

use glam::DVec3;

use super::problem::SolverContact;
use super::report::Solution;

/// The impulses of the last step, by contact id. Keep one per world (not per island: islands
/// merge and split between steps, contact ids do not change).
#[derive(Clone, Debug, Default)]
pub struct WarmStartCache {
    impulses: HashMap<u64, DVec3>,
    next: HashMap<u64, DVec3>,
}

impl WarmStartCache {
    /// Sets each contact's `warm_impulse` from the last step, where its id was seen then.
    pub fn apply(&self, contacts: &mut [SolverContact]) {
        for contact in contacts {
            contact.warm_impulse = self.impulses.get(&contact.id).copied();
        }
    }

    /// Records this step's impulses for the next step (call once per island).
    pub fn record(&mut self, contacts: &[SolverContact], solution: &Solution) {
        for (contact, impulse) in contacts.iter().zip(&solution.impulses) {
            self.next.insert(contact.id, impulse.world);
        }
    }

    /// Ends the step: what was recorded becomes what the next step applies; ids not seen this
    /// step are forgotten.
    pub fn finish_step(&mut self) {
        std::mem::swap(&mut self.impulses, &mut self.next);
        self.next.clear();
    }

    /// Number of contacts remembered from the last step.
    pub fn len(&self) -> usize {
        self.impulses.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.impulses.is_empty()
    }
}
