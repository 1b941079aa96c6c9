//! Carrying impulses from one step to the next (design note §3, warm start): matched by contact
//! id; for a contact whose id is new, by position within its manifold; and a manifold that lost
//! a point hands that point's impulse to its nearest point left. A contact matched by id also
//! gets its impulse's change over the last step, its trend (`SolverSettings::warm_trend`).
//!
//! Both fallbacks are for box faces resting flush on box faces, where parry's clipped manifolds
//! are degenerate. Tilted by 1e-5 rad, such a face renames corners (a vertex-face point becomes
//! an edge-edge one at the same place) and drops or adds corners (4 points become 3, 2 or 5).
//! On the 210-box pyramid solved to 1e-4 m/s, 10–25 of its 1600 contacts missed by id every step,
//! and the lost impulses, up to the weight of 20 boxes, started each solve at an NCP residual of
//! about 1.5 m/s. With both fallbacks it starts at about 0.5 m/s; what is left is the load the
//! changed manifolds really redistribute.

use std::collections::HashMap;
use std::ops::Range;

use foldhash::fast::FixedState;
use glam::DVec3;

use super::problem::SolverContact;
use super::report::Solution;

/// How far a new contact may lie from an unclaimed contact of its manifold last step to inherit
/// its impulse, m (Bullet's contact breaking threshold is the same 2 cm).
pub const DEFAULT_MATCH_DISTANCE: f64 = 0.02;

#[derive(Clone, Copy, Debug)]
struct Remembered {
    manifold: Option<u64>,
    id: u64,
    point: DVec3,
    impulse: DVec3,
    /// How `impulse` changed over its step, where the contact had a warm start.
    trend: Option<DVec3>,
    /// Taken this step, by its own id or by a new contact nearby.
    claimed: bool,
}

/// The impulses of the last step. Keep one per world (not per island: islands merge and split
/// between steps, contact ids do not change).
#[derive(Clone, Debug)]
pub struct WarmStartCache {
    /// Greatest distance of a position match, m; 0 matches by id only.
    pub match_distance: f64,
    /// Last step's contacts, each manifold's contiguous, with their index by id and each
    /// manifold's range.
    entries: Vec<Remembered>,
    // SipHash, the std default, was 5% of a resting pyramid's step; contact ids are not
    // adversarial, and a fixed seed keeps runs identical.
    by_id: HashMap<u64, usize, FixedState>,
    manifolds: HashMap<u64, Range<usize>, FixedState>,
    /// Whether `by_id` indexes `entries`. Built on the first call that needs it: a resting
    /// scene's contacts come back in the order they were recorded, and building it every step
    /// was 4% of a resting 210-box pyramid's step.
    indexed: bool,
    /// Where in `entries` the next call to `apply` expects its contacts to begin.
    cursor: usize,
    next: Vec<Remembered>,
}

impl Default for WarmStartCache {
    fn default() -> Self {
        Self {
            match_distance: DEFAULT_MATCH_DISTANCE,
            entries: Vec::new(),
            by_id: HashMap::default(),
            manifolds: HashMap::default(),
            indexed: true,
            cursor: 0,
            next: Vec::new(),
        }
    }
}

impl WarmStartCache {
    /// Sets each contact's `warm_impulse` from the last step: the impulse of the contact with the
    /// same id, else that of the nearest contact of the same manifold within `match_distance`
    /// whose id is not seen again; a last-step contact claimed by neither adds its impulse to the
    /// nearest contact of its manifold. Call once per step and island, after every contact is
    /// built.
    pub fn apply(&mut self, contacts: &mut [SolverContact]) {
        if self.apply_in_order(contacts) {
            return;
        }
        self.index();
        for contact in contacts.iter_mut() {
            let entry = self.by_id.get(&contact.id).map(|&i| {
                self.entries[i].claimed = true;
                // The next call's contacts most likely follow the last one matched here.
                self.cursor = self.cursor.max(i + 1);
                self.entries[i]
            });
            contact.warm_impulse = entry.map(|e| e.impulse);
            contact.warm_trend = entry.and_then(|e| e.trend);
        }
        let reach = self.match_distance * self.match_distance;
        for contact in contacts.iter_mut().filter(|c| c.warm_impulse.is_none()) {
            let Some(range) = contact.manifold.and_then(|m| self.manifolds.get(&m)) else {
                continue;
            };
            let nearest = self.entries[range.clone()]
                .iter_mut()
                .filter(|e| !e.claimed)
                .map(|e| (e.point.distance_squared(contact.point), e))
                .filter(|(d2, _)| *d2 <= reach)
                .min_by(|a, b| a.0.total_cmp(&b.0));
            if let Some((_, entry)) = nearest {
                entry.claimed = true;
                contact.warm_impulse = Some(entry.impulse);
                contact.warm_trend = None;
            }
        }
        // A manifold that lost a point (four corners to three): its impulse goes to the nearest
        // point left, so the pair still carries its load. Rare, so the search is plain.
        let mut previous = None;
        for c in 0..contacts.len() {
            let manifold = contacts[c].manifold;
            if manifold.is_none() || manifold == previous {
                continue;
            }
            previous = manifold;
            let Some(range) = manifold.and_then(|m| self.manifolds.get(&m)) else {
                continue;
            };
            for entry in self.entries[range.clone()].iter_mut().filter(|e| !e.claimed) {
                let nearest = (c..contacts.len())
                    .filter(|&k| contacts[k].manifold == manifold)
                    .min_by(|&a, &b| {
                        let d = |k: usize| contacts[k].point.distance_squared(entry.point);
                        d(a).total_cmp(&d(b))
                    });
                if let Some(k) = nearest {
                    entry.claimed = true;
                    *contacts[k].warm_impulse.get_or_insert(DVec3::ZERO) += entry.impulse;
                }
            }
        }
    }

    /// The common case of [`Self::apply`]: the contacts are last step's entries from `cursor` on,
    /// id for id, and no manifold of theirs lost a point (its entries would then lie just outside
    /// that run, or break the match). Every contact then takes its own id's impulse, as the general
    /// path would give it. Returns false, changing nothing, when that is not so.
    fn apply_in_order(&mut self, contacts: &mut [SolverContact]) -> bool {
        let start = self.cursor;
        let Some(run) = self.entries.get(start..start + contacts.len()) else {
            return false;
        };
        // Each manifold's entries are one run (`finish_step`): a lost point of a manifold in the
        // window lies next to the window, or breaks the match inside it.
        let same_manifold = |entry: Option<&Remembered>, contact: Option<&SolverContact>| {
            matches!(
                (entry, contact),
                (Some(e), Some(c)) if c.manifold.is_some() && e.manifold == c.manifold
            )
        };
        let before = start.checked_sub(1).and_then(|i| self.entries.get(i));
        if run.iter().zip(contacts.iter()).any(|(e, c)| e.id != c.id)
            || same_manifold(before, contacts.first())
            || same_manifold(self.entries.get(start + contacts.len()), contacts.last())
        {
            return false;
        }
        let end = start + contacts.len();
        for (entry, contact) in self.entries[start..end].iter_mut().zip(contacts) {
            entry.claimed = true;
            contact.warm_impulse = Some(entry.impulse);
            contact.warm_trend = entry.trend;
        }
        self.cursor = end;
        true
    }

    /// Builds `by_id` if it is stale.
    fn index(&mut self) {
        if self.indexed {
            return;
        }
        self.indexed = true;
        self.by_id.clear();
        self.by_id
            .extend(self.entries.iter().enumerate().map(|(i, e)| (e.id, i)));
    }

    /// Records this step's warm impulses ([`Solution::warm_impulses`], or the impulses where a
    /// solution has none), and each one's change from the contact's warm start, for the next step
    /// (call once per island).
    pub fn record(&mut self, contacts: &[SolverContact], solution: &Solution) {
        self.next.extend(
            contacts
                .iter()
                .zip(&solution.impulses)
                .enumerate()
                .map(|(k, (contact, impulse))| {
                    let impulse = solution.warm_impulses.get(k).copied().unwrap_or(impulse.world);
                    Remembered {
                        manifold: contact.manifold,
                        id: contact.id,
                        point: contact.point,
                        impulse,
                        trend: contact.warm_impulse.map(|warm| impulse - warm),
                        claimed: false,
                    }
                }),
        );
    }

    /// Ends the step: what was recorded becomes what the next step applies; contacts not seen
    /// this step are forgotten.
    pub fn finish_step(&mut self) {
        std::mem::swap(&mut self.entries, &mut self.next);
        self.next.clear();
        // The pipeline records each manifold's points together; other callers may not, and then
        // a stable sort brings them together.
        if !self.index_manifolds() {
            self.entries.sort_by_key(|e| e.manifold);
            self.index_manifolds();
        }
        self.indexed = false;
        self.cursor = 0;
    }

    /// Indexes the runs of one manifold in `entries`; false if a manifold has two runs.
    fn index_manifolds(&mut self) -> bool {
        self.manifolds.clear();
        let mut start = 0;
        while start < self.entries.len() {
            let manifold = self.entries[start].manifold;
            let end = start
                + self.entries[start..]
                    .iter()
                    .take_while(|e| e.manifold == manifold)
                    .count();
            if let Some(m) = manifold
                && self.manifolds.insert(m, start..end).is_some()
            {
                return false;
            }
            start = end;
        }
        true
    }

    /// Number of contacts remembered from the last step.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
