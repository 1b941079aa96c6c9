//! Surface materials: friction and restitution, and how a pair combines them.

use bevy_ecs::prelude::*;
use bevy_reflect::prelude::*;

/// How the coefficients of two touching colliders make the pair's. When the two colliders ask
/// for different rules, the one listed last here wins (as in Rapier and Avian).
#[derive(Reflect, Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
#[reflect(Default, Debug, PartialEq)]
pub enum CombineRule {
    /// `(a + b) / 2`.
    #[default]
    Average,
    /// `min(a, b)`.
    Min,
    /// `a · b`.
    Multiply,
    /// `max(a, b)`.
    Max,
}

impl CombineRule {
    /// The pair's coefficient.
    pub fn combine(self, other: Self, a: f32, b: f32) -> f32 {
        match self.max(other) {
            Self::Average => 0.5 * (a + b),
            Self::Min => a.min(b),
            Self::Multiply => a * b,
            Self::Max => a.max(b),
        }
    }
}

/// Coulomb friction coefficient μ ≥ 0 of a collider's surface; a collider without one has 0.5.
#[derive(Component, Reflect, Clone, Copy, Debug, PartialEq)]
#[reflect(Component, Default, Debug, PartialEq)]
pub struct Friction {
    /// μ.
    pub coefficient: f32,
    /// How it combines with the other collider's.
    pub combine_rule: CombineRule,
}

impl Friction {
    /// μ with the default combine rule (average).
    pub fn new(coefficient: f32) -> Self {
        Self {
            coefficient,
            combine_rule: CombineRule::Average,
        }
    }

    /// The same friction combined by `rule`.
    pub fn with_combine_rule(self, rule: CombineRule) -> Self {
        Self {
            combine_rule: rule,
            ..self
        }
    }
}

impl Default for Friction {
    fn default() -> Self {
        Self::new(0.5)
    }
}

/// Coefficient of restitution ε ∈ [0, 1] of a collider's surface (default 0: no bounce). A
/// contact that closes at speed u rebounds at ε·u.
#[derive(Component, Reflect, Clone, Copy, Debug, Default, PartialEq)]
#[reflect(Component, Default, Debug, PartialEq)]
pub struct Restitution {
    /// ε.
    pub coefficient: f32,
    /// How it combines with the other collider's.
    pub combine_rule: CombineRule,
}

impl Restitution {
    /// ε with the default combine rule (average).
    pub fn new(coefficient: f32) -> Self {
        Self {
            coefficient,
            combine_rule: CombineRule::Average,
        }
    }
}

/// Rolling and torsional friction of a collider's surface, as MuJoCo's: lengths, m. Where two
/// colliders touch, the largest torque resisting rolling is `rolling · N` and the largest about
/// the contact normal `torsional · N`, `N` the normal force of their contact. A collider without
/// one counts as zero in the pair's combination; where both have none, balls roll and spin on
/// forever, as in Rapier and Avian.
///
/// A ball of radius `r` rolling on flat ground slows by `(5/7) g · rolling / r`, and holds still
/// on a slope up to `tan θ = rolling / r`.
///
/// ```
/// use bevy_canal::prelude::*;
///
/// // A billiard ball on cloth: about a millimetre.
/// let cloth = RollingFriction::new(1e-3, 5e-4);
/// assert_eq!(cloth.rolling, 1e-3);
/// ```
#[derive(Component, Reflect, Clone, Copy, Debug, Default, PartialEq)]
#[reflect(Component, Default, Debug, PartialEq)]
pub struct RollingFriction {
    /// Lever arm of the torque resisting rolling, m.
    pub rolling: f32,
    /// Lever arm of the torque resisting spin about the contact normal, m.
    pub torsional: f32,
    /// How both combine with the other collider's.
    pub combine_rule: CombineRule,
}

impl RollingFriction {
    /// Rolling and torsional coefficients with the default combine rule (average).
    pub fn new(rolling: f32, torsional: f32) -> Self {
        Self {
            rolling,
            torsional,
            combine_rule: CombineRule::Average,
        }
    }

    /// The same coefficients combined by `rule`.
    pub fn with_combine_rule(self, rule: CombineRule) -> Self {
        Self {
            combine_rule: rule,
            ..self
        }
    }
}
