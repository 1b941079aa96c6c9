//! What one call of the solver takes: an island's bodies and contacts and the time step.
//!
//! Plain data in world coordinates, SI units, `f64`. No Bevy types: the plugin converts.

use glam::{DMat3, DVec3};

/// A dynamic body of the island, at the start of the step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolverBody {
    /// Mass, kg. Must be finite and positive.
    pub mass: f64,
    /// Inertia tensor about the centre of mass in world axes, kg·m². Must be symmetric positive
    /// definite.
    pub inertia: DMat3,
    /// Centre of mass, world frame, m. Lever arms of contacts are measured from it.
    pub center_of_mass: DVec3,
    /// Linear velocity at step start, m/s.
    pub linear_velocity: DVec3,
    /// Angular velocity at step start, rad/s.
    pub angular_velocity: DVec3,
    /// External linear impulse over the step (`h · force`, gravity included), N·s.
    pub linear_impulse: DVec3,
    /// External angular impulse over the step (`h · torque`, gyroscopic term included), N·m·s.
    pub angular_impulse: DVec3,
}

impl SolverBody {
    /// A body at rest at `center_of_mass` with the given mass and world inertia, no external load.
    pub fn new(mass: f64, inertia: DMat3, center_of_mass: DVec3) -> Self {
        Self {
            mass,
            inertia,
            center_of_mass,
            linear_velocity: DVec3::ZERO,
            angular_velocity: DVec3::ZERO,
            linear_impulse: DVec3::ZERO,
            angular_impulse: DVec3::ZERO,
        }
    }

    /// A solid box of full side lengths `size` and mass `mass`, axis-aligned.
    pub fn cuboid(mass: f64, size: DVec3, center_of_mass: DVec3) -> Self {
        let s = size * size;
        let inertia = DMat3::from_diagonal(DVec3::new(s.y + s.z, s.x + s.z, s.x + s.y) * (mass / 12.0));
        Self::new(mass, inertia, center_of_mass)
    }

    /// A solid ball of `radius` and mass `mass`.
    pub fn sphere(mass: f64, radius: f64, center_of_mass: DVec3) -> Self {
        Self::new(
            mass,
            DMat3::from_diagonal(DVec3::splat(0.4 * mass * radius * radius)),
            center_of_mass,
        )
    }

    /// The same body with a constant external force (gravity, say) applied over a step of `dt`.
    pub fn with_force(mut self, force: DVec3, dt: f64) -> Self {
        self.linear_impulse += force * dt;
        self
    }

    /// The same body with the given step-start velocities.
    pub fn with_velocity(mut self, linear: DVec3, angular: DVec3) -> Self {
        self.linear_velocity = linear;
        self.angular_velocity = angular;
        self
    }
}

/// One side of a contact.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ContactSide {
    /// A dynamic body of the island, by index into [`StepProblem::bodies`].
    Body(usize),
    /// A static or kinematic body: not solved for, but moving as given (world frame; zero for
    /// static geometry). A moving platform drags through `velocity`, a turntable or a spinning
    /// hub through `angular_velocity`.
    Fixed {
        /// Velocity of the fixed side's material point at the contact point (or a linear joint
        /// row's anchor), m/s: what contacts and linear rows read.
        velocity: DVec3,
        /// The fixed body's angular velocity, rad/s: what angular rows read (a joint's locked
        /// axes, a resistance block).
        angular_velocity: DVec3,
    },
}

impl ContactSide {
    /// Static geometry: a fixed side that does not move.
    pub const STATIC: Self = Self::Fixed {
        velocity: DVec3::ZERO,
        angular_velocity: DVec3::ZERO,
    };
}

/// One contact point between `body1` and `body2`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolverContact {
    /// Stable identity across steps (collider pair and feature ids), used to warm start.
    pub id: u64,
    /// The contact manifold this point belongs to (stable across steps, like `id`): a point whose
    /// id is new warm-starts from a nearby point of the same manifold. `None`: by id only.
    pub manifold: Option<u64>,
    /// The side the normal points towards.
    pub body1: ContactSide,
    /// The side the normal points away from.
    pub body2: ContactSide,
    /// Contact point, world frame, m.
    pub point: DVec3,
    /// Unit normal from `body2` to `body1`.
    pub normal: DVec3,
    /// Orthonormal tangents completing `normal` to a right-handed frame; `None` builds them from
    /// the normal alone (the cone is round, so any pair gives the same physics).
    pub tangents: Option<(DVec3, DVec3)>,
    /// Signed gap along the normal, m: negative is penetration.
    pub gap: f64,
    /// Coulomb friction coefficient μ ≥ 0 of the pair.
    pub friction: f64,
    /// Restitution coefficient ε ∈ [0, 1] of the pair.
    pub restitution: f64,
    /// The impulse this contact carried last step, world frame, N·s: the warm start.
    pub warm_impulse: Option<DVec3>,
    /// How `warm_impulse` changed over the last step, world frame, N·s. With
    /// [`SolverSettings::warm_trend`](super::SolverSettings::warm_trend) on, the solver also tries
    /// the warm start carried on by nine tenths of it, and starts from that where its residual is
    /// the smaller. `None`: the contact is new, or its history is unknown.
    pub warm_trend: Option<DVec3>,
    /// Normal velocity (m/s, negative when closing) with which this contact was struck, when the
    /// caller knows it better than the step-start velocity: a contact that was speculative last
    /// step, where the solver braked the bodies to touch exactly, had its true impact speed
    /// before that. Restitution then rebounds from this speed whatever the gap. `None`: a
    /// touching contact (gap ≤ 0) rebounds from its step-start normal velocity.
    pub impact_velocity: Option<f64>,
}

impl SolverContact {
    /// A touching contact (gap 0), μ = 0.5, no restitution, no warm start.
    pub fn new(id: u64, body1: ContactSide, body2: ContactSide, point: DVec3, normal: DVec3) -> Self {
        Self {
            id,
            manifold: None,
            body1,
            body2,
            point,
            normal,
            tangents: None,
            gap: 0.0,
            friction: 0.5,
            restitution: 0.0,
            warm_impulse: None,
            warm_trend: None,
            impact_velocity: None,
        }
    }

    /// The same contact as a point of manifold `manifold` (see [`SolverContact::manifold`]).
    pub fn with_manifold(mut self, manifold: u64) -> Self {
        self.manifold = Some(manifold);
        self
    }

    /// The same contact with signed gap `gap` (m).
    pub fn with_gap(mut self, gap: f64) -> Self {
        self.gap = gap;
        self
    }

    /// The same contact with friction coefficient `mu`.
    pub fn with_friction(mut self, mu: f64) -> Self {
        self.friction = mu;
        self
    }

    /// The same contact with explicit tangents (orthonormal to the normal and to each other).
    pub fn with_tangents(mut self, t1: DVec3, t2: DVec3) -> Self {
        self.tangents = Some((t1, t2));
        self
    }

    /// The same contact with a known impact velocity (see [`Self::impact_velocity`]).
    pub fn with_impact_velocity(mut self, impact_velocity: Option<f64>) -> Self {
        self.impact_velocity = impact_velocity;
        self
    }

    /// The same contact with restitution coefficient `restitution`.
    pub fn with_restitution(mut self, restitution: f64) -> Self {
        self.restitution = restitution;
        self
    }

    /// The tangent frame used for this contact: the given one or one built from the normal.
    pub fn frame(&self) -> (DVec3, DVec3, DVec3) {
        let (t1, t2) = self.tangents.unwrap_or_else(|| self.normal.any_orthonormal_pair());
        (self.normal, t1, t2)
    }
}

/// The rows of a [`SolverConstraint`]: up to three, unused rows zero.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConstraintRows {
    /// Rows on the relative velocity of two anchor points, `dₖ · (ṗ₁ − ṗ₂)`: a ball joint's three
    /// axes, a prismatic joint's two perpendicular axes, or its one slide axis (limit, drive).
    Linear {
        /// World anchor point on body 1, m.
        anchor1: DVec3,
        /// World anchor point on body 2, m.
        anchor2: DVec3,
        /// World unit directions `dₖ`; rows past `count` are ignored.
        directions: [DVec3; 3],
        /// Rows in use, 1 to 3.
        count: usize,
    },
    /// Rows on the relative angular velocity, `aₖ · (ω₁ − ω₂)`: a hinge's two locked axes, a fixed
    /// joint's three, or a hinge's own axis (limit, drive).
    Angular {
        /// World unit axes `aₖ`; rows past `count` are ignored.
        axes: [DVec3; 3],
        /// Rows in use, 1 to 3.
        count: usize,
    },
}

/// One block of joint rows between two sides, solved in the same augmented Lagrangian as the
/// contacts (design note §6): `w = J v + e` must lie in the dual of `cone`, the impulse in `cone`.
///
/// A [`ContactSide::Fixed`] side contributes its `velocity` to linear rows and its
/// `angular_velocity` to angular rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolverConstraint {
    /// Stable id for warm starting.
    pub id: u64,
    /// First side.
    pub body1: ContactSide,
    /// Second side.
    pub body2: ContactSide,
    /// The rows.
    pub rows: ConstraintRows,
    /// `e` per row, m/s or rad/s: a bilateral row ends the step at `J v = −e`; a position error `C`
    /// is removed in one step with `e = C / dt`.
    pub bias: DVec3,
    /// `Equality` (bilateral), `Lower` (a limit: `w₀ ≥ 0`, impulse ≥ 0) or `Bounded` (a motor).
    pub cone: super::cone::Cone,
    /// Last step's row impulses, if known.
    pub warm_impulse: Option<DVec3>,
}

impl SolverConstraint {
    /// A block of `rows` between `body1` and `body2`, bilateral, with no bias.
    pub fn new(id: u64, body1: ContactSide, body2: ContactSide, rows: ConstraintRows) -> Self {
        Self {
            id,
            body1,
            body2,
            rows,
            bias: DVec3::ZERO,
            cone: super::cone::Cone::Equality,
            warm_impulse: None,
        }
    }

    /// The three rows of a ball joint joining `anchor1` (on body 1) to `anchor2` (on body 2),
    /// biased to close their separation in one step of `dt`.
    pub fn ball(id: u64, body1: ContactSide, body2: ContactSide, anchor1: DVec3, anchor2: DVec3, dt: f64) -> Self {
        let rows = ConstraintRows::Linear {
            anchor1,
            anchor2,
            directions: [DVec3::X, DVec3::Y, DVec3::Z],
            count: 3,
        };
        Self::new(id, body1, body2, rows).with_bias((anchor1 - anchor2) / dt)
    }

    /// Sets the bias `e`.
    pub fn with_bias(mut self, bias: DVec3) -> Self {
        self.bias = bias;
        self
    }

    /// Sets the impulse set.
    pub fn with_cone(mut self, cone: super::cone::Cone) -> Self {
        self.cone = cone;
        self
    }

    /// Sets the warm-start row impulses.
    pub fn with_warm_impulse(mut self, impulse: Option<DVec3>) -> Self {
        self.warm_impulse = impulse;
        self
    }
}

/// Rolling and torsional friction of one contact manifold: the bounds of constraint
/// `constraint`, a [`Cone::Resistance`](super::cone::Cone::Resistance) block of three angular
/// rows about the manifold's normal and tangents, are `torsional · Σλ_n` and `rolling · Σλ_n`
/// over the normal impulses of `contacts`. The coefficients are lengths, m: the largest resisting
/// torque per newton of normal force, as MuJoCo's. The solver iterates the bounds to a fixed point
/// with the impulses (see [`Solver::solve`](super::Solver::solve)); the bounds given in the
/// constraint's cone are ignored.
#[derive(Clone, Debug, PartialEq)]
pub struct RollingResistance {
    /// Index into [`StepProblem::constraints`].
    pub constraint: usize,
    /// Indices into [`StepProblem::contacts`]: the points whose normal impulses load it.
    pub contacts: std::ops::Range<usize>,
    /// Torsional coefficient, m.
    pub torsional: f64,
    /// Rolling coefficient, m.
    pub rolling: f64,
}

/// One island's step: everything the solver reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepProblem {
    /// Dynamic bodies.
    pub bodies: Vec<SolverBody>,
    /// Contacts among them and against fixed geometry.
    pub contacts: Vec<SolverContact>,
    /// Joint rows among them and against fixed sides.
    pub constraints: Vec<SolverConstraint>,
    /// Constraints whose bounds scale with contacts' normal impulses: rolling and torsional
    /// friction.
    pub rolling: Vec<RollingResistance>,
    /// Time step, s.
    pub dt: f64,
}
