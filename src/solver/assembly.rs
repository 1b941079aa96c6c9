//! Problem assembly: from a [`StepProblem`] to the matrices of design note §1.
//!
//! Builds the block-diagonal `A`, the right-hand side `b`, each contact's 3×6 Jacobian blocks (as
//! row directions and lever arms), its bias `e` (speculative gap, capped push-out, restitution,
//! the fixed side's velocity), its effective normal mass, and the list of body pairs that couple
//! the Newton systems, and applies `J`, `Jᵀ` and `A⁻¹` for the stages downstream. Joint blocks
//! become the same kind of 3-row block with their own set `K` (design note §6), so everything
//! downstream treats contacts and joints alike. Validates the input on the way. Knows nothing of
//! iterations or factorizations.

use glam::DVec3;
use nalgebra::{DVector, Matrix3, Matrix3x6, Vector3, Vector6};

use super::cone::Cone;
use super::problem::{ConstraintRows, ContactSide, SolverConstraint, StepProblem};
use super::report::InvalidInput;
use super::settings::SolverSettings;

fn v3(v: DVec3) -> Vector3<f64> {
    Vector3::new(v.x, v.y, v.z)
}

/// A dynamic body's blocks of `A` and `A⁻¹`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BodyBlocks {
    pub mass: f64,
    pub inertia: Matrix3<f64>,
    pub inv_mass: f64,
    pub inv_inertia: Matrix3<f64>,
}

/// How one side's rows act on its body's velocity `(v, ω)`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Lever {
    /// A material point at lever arm `r` from the centre of mass: row `k` is `[dₖ, r × dₖ]`.
    Point(DVec3),
    /// Rotation only (an angular joint block): row `k` is `[0, dₖ]`.
    Angular,
}

/// One side of an assembled block: the body index and how the block's rows `dₖ`
/// ([`AssembledContact::frame`]) act on it. Kept as a lever arm, not as the 3×6 matrix: a resting
/// step passes over every contact several times (residuals, smoothing sweeps, `Jᵀλ`), and with
/// the arm those passes take fewer instructions and a third of the bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JacobianBlock {
    pub body: usize,
    /// +1 on the first side (the normal points towards it), −1 on the second.
    pub sign: f64,
    pub lever: Lever,
}

impl JacobianBlock {
    /// This side's `J v` for its body's linear and angular velocity.
    #[inline]
    pub fn times(&self, frame: &[DVec3; 3], linear: DVec3, angular: DVec3) -> Vector3<f64> {
        let u = match self.lever {
            Lever::Point(r) => linear + angular.cross(r),
            Lever::Angular => angular,
        };
        Vector3::new(frame[0].dot(u), frame[1].dot(u), frame[2].dot(u)) * self.sign
    }

    /// One row's `dᵀ J v` for row direction `d`.
    #[inline]
    pub fn row_times(&self, d: DVec3, linear: DVec3, angular: DVec3) -> f64 {
        let u = match self.lever {
            Lever::Point(r) => linear + angular.cross(r),
            Lever::Angular => angular,
        };
        self.sign * d.dot(u)
    }

    /// This side's `Jᵀ f`, as the linear and angular impulse on its body.
    #[inline]
    pub fn transpose_times(&self, frame: &[DVec3; 3], f: &Vector3<f64>) -> (DVec3, DVec3) {
        let force = (frame[0] * f.x + frame[1] * f.y + frame[2] * f.z) * self.sign;
        match self.lever {
            Lever::Point(r) => (force, r.cross(force)),
            Lever::Angular => (DVec3::ZERO, force),
        }
    }

    /// Row `k` as a 6-vector (linear then angular).
    #[inline]
    pub fn row(&self, frame: &[DVec3; 3], k: usize) -> Vector6<f64> {
        let d = frame[k] * self.sign;
        let (linear, angular) = match self.lever {
            Lever::Point(r) => (d, r.cross(d)),
            Lever::Angular => (DVec3::ZERO, d),
        };
        Vector6::new(linear.x, linear.y, linear.z, angular.x, angular.y, angular.z)
    }

    /// The whole 3×6 block, for assembling `H`.
    pub fn matrix(&self, frame: &[DVec3; 3]) -> Matrix3x6<f64> {
        let mut jac = Matrix3x6::zeros();
        for k in 0..3 {
            jac.set_row(k, &self.row(frame, k).transpose());
        }
        jac
    }
}

/// A joint block's sides, its row directions and the fixed sides' contribution to `w`.
type ConstraintSides = ([Option<JacobianBlock>; 2], [DVec3; 3], Vector3<f64>);

/// Where an assembled block came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// Index in the problem's contacts.
    Contact(usize),
    /// Index in the problem's constraints.
    Constraint(usize),
}

/// A 3-row block: a contact or a joint block.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AssembledContact {
    pub sides: [Option<JacobianBlock>; 2],
    /// Bias `e` of `w = J v + e`, before the de Saxcé shift.
    pub bias: Vector3<f64>,
    /// The set the block's impulse lies in.
    pub cone: Cone,
    /// Effective mass of the first row `1 / (J₀ A⁻¹ J₀ᵀ)`, kg (kg·m² on angular rows).
    pub mass: f64,
    /// World directions `dₖ` of the rows: `(n, t₁, t₂)` of a contact, a joint block's directions
    /// or axes (zero for rows it does not use).
    pub frame: [DVec3; 3],
    /// Index into [`Assembled::pairs`] when both sides are dynamic.
    pub pair: Option<usize>,
    /// The problem's contact or constraint (blocks between two fixed sides are dropped).
    pub source: Source,
}

impl AssembledContact {
    /// A contact's world impulse in its rows `(n, t₁, t₂)`.
    pub fn rows_of(&self, world: DVec3) -> Vector3<f64> {
        Vector3::new(
            world.dot(self.frame[0]),
            world.dot(self.frame[1]),
            world.dot(self.frame[2]),
        )
    }
}

/// The assembled step, reused across solves to keep the hot loop allocation-free.
#[derive(Debug, Default)]
pub(crate) struct Assembled {
    pub bodies: Vec<BodyBlocks>,
    pub rhs: DVector<f64>,
    pub contacts: Vec<AssembledContact>,
    /// Distinct dynamic body pairs `(a, b)`, `a < b`: as the blocks arrived after
    /// [`Self::assemble`], sorted and each block's [`AssembledContact::pair`] set only after
    /// [`Self::index_pairs`].
    pub pairs: Vec<(usize, usize)>,
}

impl Assembled {
    pub fn dofs(&self) -> usize {
        6 * self.bodies.len()
    }

    /// A fingerprint of what a factorization of `H` is laid out by: the bodies, and each block's
    /// bodies and pair. Equal fingerprints let one step solve with another's factorization.
    pub fn pattern(&self) -> u64 {
        let mix = |hash: u64, value: u64| (hash ^ value).wrapping_mul(0x100_0000_01b3);
        let side = |side: &Option<JacobianBlock>| side.map_or(u64::MAX, |s| s.body as u64);
        let start = mix(
            mix(0xcbf2_9ce4_8422_2325, self.bodies.len() as u64),
            self.contacts.len() as u64,
        );
        self.contacts.iter().fold(start, |hash, c| {
            let pair = c.pair.map_or(u64::MAX, |p| p as u64);
            mix(mix(mix(hash, side(&c.sides[0])), side(&c.sides[1])), pair)
        })
    }

    /// Fills `self` from `problem`; `velocity` receives the step-start velocities. The pairs are
    /// left to [`Self::index_pairs`].
    pub fn assemble(
        &mut self,
        problem: &StepProblem,
        settings: &SolverSettings,
        velocity: &mut DVector<f64>,
    ) -> Result<(), InvalidInput> {
        let dt = problem.dt;
        if !(dt.is_finite() && dt > 0.0) {
            return Err(InvalidInput::TimeStep);
        }
        let n = 6 * problem.bodies.len();
        self.bodies.clear();
        self.rhs = std::mem::take(&mut self.rhs).resize_vertically(n, 0.0);
        *velocity = std::mem::take(velocity).resize_vertically(n, 0.0);
        for (i, body) in problem.bodies.iter().enumerate() {
            let inertia = Matrix3::from_column_slice(&body.inertia.to_cols_array());
            let finite = body.mass.is_finite()
                && inertia.iter().all(|x| x.is_finite())
                && [body.center_of_mass, body.linear_velocity, body.angular_velocity]
                    .iter()
                    .chain([body.linear_impulse, body.angular_impulse].iter())
                    .all(|v| v.is_finite());
            let symmetric = (inertia - inertia.transpose()).abs().max() <= 1e-9 * inertia.abs().max();
            // Positive definite by its leading minors (Sylvester), then the closed-form 3×3
            // inverse: a Cholesky factor's inverse was a tenth of a resting stack's assembly.
            let minor = inertia[(0, 0)] * inertia[(1, 1)] - inertia[(0, 1)] * inertia[(1, 0)];
            let definite = inertia[(0, 0)] > 0.0 && minor > 0.0 && inertia.determinant() > 0.0;
            let inv_inertia = inertia.try_inverse().filter(|_| symmetric && definite);
            let (true, Some(inv_inertia)) = (finite && body.mass > 0.0, inv_inertia) else {
                return Err(InvalidInput::Body(i));
            };
            self.bodies.push(BodyBlocks {
                mass: body.mass,
                inertia,
                inv_mass: 1.0 / body.mass,
                inv_inertia,
            });
            let v = Vector6::new(
                body.linear_velocity.x,
                body.linear_velocity.y,
                body.linear_velocity.z,
                body.angular_velocity.x,
                body.angular_velocity.y,
                body.angular_velocity.z,
            );
            velocity.fixed_rows_mut::<6>(6 * i).copy_from(&v);
            let (p, l) = (v3(body.linear_impulse), v3(body.angular_impulse));
            let rhs = self.apply_block(i, &v) + Vector6::new(p.x, p.y, p.z, l.x, l.y, l.z);
            self.rhs.fixed_rows_mut::<6>(6 * i).copy_from(&rhs);
        }

        self.contacts.clear();
        self.pairs.clear();
        for (ci, contact) in problem.contacts.iter().enumerate() {
            let (n, t1, t2) = contact.frame();
            // Tangents built from a unit normal are orthonormal to it: only given ones are checked.
            let frame_ok = n.is_finite()
                && (n.length() - 1.0).abs() < 1e-6
                && (contact.tangents.is_none()
                    || (t1.is_finite()
                        && t2.is_finite()
                        && n.dot(t1).abs() < 1e-6
                        && n.dot(t2).abs() < 1e-6
                        && t1.dot(t2).abs() < 1e-6));
            let scalars_ok = contact.point.is_finite()
                && contact.gap.is_finite()
                && contact.friction.is_finite()
                && contact.friction >= 0.0
                && (0.0..=1.0).contains(&contact.restitution)
                && contact.impact_velocity.is_none_or(f64::is_finite);
            if !(frame_ok && scalars_ok) {
                return Err(InvalidInput::Contact(ci));
            }
            let frame = [n, t1, t2];
            let mut sides = [None, None];
            let mut fixed_velocity = Vector3::zeros();
            for (k, (side, sign)) in [(contact.body1, 1.0), (contact.body2, -1.0)].into_iter().enumerate() {
                match side {
                    ContactSide::Body(b) => {
                        let Some(body) = problem.bodies.get(b) else {
                            return Err(InvalidInput::Contact(ci));
                        };
                        sides[k] = Some(JacobianBlock {
                            body: b,
                            sign,
                            lever: Lever::Point(contact.point - body.center_of_mass),
                        });
                    }
                    ContactSide::Fixed { velocity, .. } => {
                        if !velocity.is_finite() {
                            return Err(InvalidInput::Contact(ci));
                        }
                        fixed_velocity += sign * Vector3::new(n.dot(velocity), t1.dot(velocity), t2.dot(velocity));
                    }
                }
            }
            if let [Some(a), Some(b)] = &sides
                && a.body == b.body
            {
                return Err(InvalidInput::Contact(ci));
            }
            let inv_mass = self.first_row_inverse_mass(&sides, &frame);
            if inv_mass == 0.0 {
                // Both sides fixed: the contact constrains nothing this solver moves.
                continue;
            }
            let gap = contact.gap;
            let mut e_n = settings.gap_bias(gap, dt);
            // Only a bouncing contact needs the speed it closes at.
            if contact.restitution > 0.0 {
                let approach = contact.impact_velocity.or_else(|| {
                    (gap <= 0.0).then(|| {
                        sides.iter().flatten().fold(fixed_velocity.x, |approach, side| {
                            let b = velocity.fixed_rows::<6>(6 * side.body);
                            approach + side.row_times(n, DVec3::new(b[0], b[1], b[2]), DVec3::new(b[3], b[4], b[5]))
                        })
                    })
                });
                if let Some(approach) = approach {
                    e_n += contact.restitution * approach.min(0.0);
                }
            }
            self.push_block(AssembledContact {
                sides,
                bias: fixed_velocity + Vector3::new(e_n, 0.0, 0.0),
                cone: Cone::Coulomb { mu: contact.friction },
                mass: 1.0 / inv_mass,
                frame,
                pair: None,
                source: Source::Contact(ci),
            });
        }
        for (ji, constraint) in problem.constraints.iter().enumerate() {
            let Some((sides, frame, fixed_velocity)) = self.constraint_sides(problem, constraint) else {
                return Err(InvalidInput::Constraint(ji));
            };
            let inv_mass = self.first_row_inverse_mass(&sides, &frame);
            if inv_mass == 0.0 {
                continue;
            }
            self.push_block(AssembledContact {
                sides,
                bias: fixed_velocity + v3(constraint.bias),
                cone: constraint.cone,
                mass: 1.0 / inv_mass,
                frame,
                pair: None,
                source: Source::Constraint(ji),
            });
        }
        Ok(())
    }

    /// `J₀ A⁻¹ J₀ᵀ` of a block's first row.
    fn first_row_inverse_mass(&self, sides: &[Option<JacobianBlock>; 2], frame: &[DVec3; 3]) -> f64 {
        sides
            .iter()
            .flatten()
            .map(|side| {
                let body = &self.bodies[side.body];
                let (linear, angular) = match side.lever {
                    Lever::Point(r) => (frame[0].length_squared() * body.inv_mass, v3(r.cross(frame[0]))),
                    Lever::Angular => (0.0, v3(frame[0])),
                };
                linear + angular.dot(&(body.inv_inertia * angular))
            })
            .sum()
    }

    fn push_block(&mut self, block: AssembledContact) {
        if let [Some(a), Some(b)] = &block.sides {
            let pair = (a.body.min(b.body), a.body.max(b.body));
            // A manifold's points arrive together: skipping the repeats here keeps the sort
            // below to about one entry per manifold.
            if self.pairs.last() != Some(&pair) {
                self.pairs.push(pair);
            }
        }
        self.contacts.push(block);
    }

    /// A joint block's Jacobian sides, row directions and the fixed sides' contribution to `w`;
    /// `None` when the block is malformed (non-finite or non-unit rows, a missing body, a body
    /// joined to itself).
    fn constraint_sides(&self, problem: &StepProblem, constraint: &SolverConstraint) -> Option<ConstraintSides> {
        let (directions, count, anchors) = match constraint.rows {
            ConstraintRows::Linear {
                anchor1,
                anchor2,
                directions,
                count,
            } => (directions, count, Some([anchor1, anchor2])),
            ConstraintRows::Angular { axes, count } => (axes, count, None),
        };
        let unit = |d: &DVec3| d.is_finite() && (d.length() - 1.0).abs() < 1e-6;
        let cone_ok = match constraint.cone {
            Cone::Coulomb { .. } => false,
            Cone::Bounded { max } => max.is_finite() && max >= 0.0,
            Cone::Drive { gain, max } => gain.is_finite() && gain > 0.0 && max >= 0.0 && !max.is_nan(),
            Cone::Resistance { torsional, rolling } => {
                torsional.is_finite() && torsional >= 0.0 && rolling.is_finite() && rolling >= 0.0
            }
            Cone::Equality | Cone::Lower => true,
        };
        let ok = (1..=3).contains(&count)
            && directions[..count].iter().all(unit)
            && anchors.is_none_or(|a| a.iter().all(|p| p.is_finite()))
            && constraint.bias.is_finite()
            && cone_ok;
        if !ok {
            return None;
        }
        let mut rows = [DVec3::ZERO; 3];
        rows[..count].copy_from_slice(&directions[..count]);
        let mut sides = [None, None];
        let mut fixed_velocity = Vector3::zeros();
        for (k, (side, sign)) in [(constraint.body1, 1.0), (constraint.body2, -1.0)]
            .into_iter()
            .enumerate()
        {
            match side {
                ContactSide::Body(b) => {
                    let body = problem.bodies.get(b)?;
                    let lever = match anchors {
                        Some(points) => Lever::Point(points[k] - body.center_of_mass),
                        None => Lever::Angular,
                    };
                    sides[k] = Some(JacobianBlock { body: b, sign, lever });
                }
                ContactSide::Fixed {
                    velocity,
                    angular_velocity,
                } => {
                    let moving = if anchors.is_some() { velocity } else { angular_velocity };
                    if !moving.is_finite() {
                        return None;
                    }
                    fixed_velocity +=
                        sign * Vector3::new(rows[0].dot(moving), rows[1].dot(moving), rows[2].dot(moving));
                }
            }
        }
        if let [Some(a), Some(b)] = &sides
            && a.body == b.body
        {
            return None;
        }
        Some((sides, rows, fixed_velocity))
    }

    /// Sorts and deduplicates the coupled body pairs, then points each contact at its pair: what
    /// the Newton systems and [`Self::pattern`] are laid out by. Not part of [`Self::assemble`]:
    /// a step whose warm start is accepted never needs it, and it was an eighth of such a step's
    /// assembly on the resting 210-box pyramid.
    pub fn index_pairs(&mut self) {
        self.pairs.sort_unstable();
        self.pairs.dedup();
        let mut last: Option<((usize, usize), Option<usize>)> = None;
        for contact in &mut self.contacts {
            if let [Some(a), Some(b)] = &contact.sides {
                let key = (a.body.min(b.body), a.body.max(b.body));
                let pair = match last {
                    Some((previous, pair)) if previous == key => pair,
                    _ => self.pairs.binary_search(&key).ok(),
                };
                last = Some((key, pair));
                contact.pair = pair;
            }
        }
    }

    /// Block `i` of `A` applied to a 6-vector.
    pub fn apply_block(&self, i: usize, v: &Vector6<f64>) -> Vector6<f64> {
        let b = &self.bodies[i];
        let lin = v.fixed_rows::<3>(0) * b.mass;
        let ang = b.inertia * v.fixed_rows::<3>(3);
        Vector6::new(lin.x, lin.y, lin.z, ang.x, ang.y, ang.z)
    }

    /// Block `i` of `A⁻¹` applied to a 6-vector.
    pub fn apply_inverse_block(&self, i: usize, v: &Vector6<f64>) -> Vector6<f64> {
        let b = &self.bodies[i];
        let lin = v.fixed_rows::<3>(0) * b.inv_mass;
        let ang = b.inv_inertia * v.fixed_rows::<3>(3);
        Vector6::new(lin.x, lin.y, lin.z, ang.x, ang.y, ang.z)
    }

    /// `out = A v`.
    pub fn apply_a(&self, v: &DVector<f64>, out: &mut DVector<f64>) {
        for i in 0..self.bodies.len() {
            let r = self.apply_block(i, &v.fixed_rows::<6>(6 * i).into_owned());
            out.fixed_rows_mut::<6>(6 * i).copy_from(&r);
        }
    }

    /// `out = A⁻¹ r`.
    pub fn apply_a_inverse(&self, r: &DVector<f64>, out: &mut DVector<f64>) {
        for i in 0..self.bodies.len() {
            let x = self.apply_inverse_block(i, &r.fixed_rows::<6>(6 * i).into_owned());
            out.fixed_rows_mut::<6>(6 * i).copy_from(&x);
        }
    }

    /// `J_c v`, the contact's relative velocity without bias.
    // Always inline: every pass over the contacts calls it, and left to the compiler the
    // residuals called it, its 3-vector went through memory, and a resting 210-box pyramid's
    // accepted solve took 151 µs instead of 135.
    #[inline(always)]
    pub fn jacobian_times(&self, c: usize, v: &DVector<f64>) -> Vector3<f64> {
        let contact = &self.contacts[c];
        let mut w = Vector3::zeros();
        for side in contact.sides.iter().flatten() {
            let b = v.fixed_rows::<6>(6 * side.body);
            let linear = DVec3::new(b[0], b[1], b[2]);
            let angular = DVec3::new(b[3], b[4], b[5]);
            w += side.times(&contact.frame, linear, angular);
        }
        w
    }

    /// `out += J_cᵀ f`.
    // Always inline, as `jacobian_times`: the same passes call it. (Alone it measured no
    // different; the bench figures of the CHANGELOG were taken with it.)
    #[inline(always)]
    pub fn add_jacobian_transpose(&self, c: usize, f: &Vector3<f64>, out: &mut DVector<f64>) {
        let contact = &self.contacts[c];
        for side in contact.sides.iter().flatten() {
            let (linear, angular) = side.transpose_times(&contact.frame, f);
            let mut b = out.fixed_rows_mut::<6>(6 * side.body);
            for k in 0..3 {
                b[k] += linear[k];
                b[3 + k] += angular[k];
            }
        }
    }

    /// `v += A⁻¹ J_cᵀ f`: block `c`'s impulse change `f` applied to its bodies' velocities.
    pub fn apply_impulse(&self, c: usize, f: &Vector3<f64>, v: &mut DVector<f64>) {
        let contact = &self.contacts[c];
        for side in contact.sides.iter().flatten() {
            let (linear, angular) = side.transpose_times(&contact.frame, f);
            let impulse = Vector6::new(linear.x, linear.y, linear.z, angular.x, angular.y, angular.z);
            let mut block = v.fixed_rows_mut::<6>(6 * side.body);
            block += self.apply_inverse_block(side.body, &impulse);
        }
    }

    /// Block `c`'s Delassus block `W_cc = Σ_sides J A⁻¹ Jᵀ` (3 × 3, in the block's frame).
    pub fn delassus_block(&self, c: usize) -> Matrix3<f64> {
        let contact = &self.contacts[c];
        let mut w = Matrix3::zeros();
        for side in contact.sides.iter().flatten() {
            for a in 0..3 {
                let moved = self.apply_inverse_block(side.body, &side.row(&contact.frame, a));
                for b in 0..3 {
                    w[(a, b)] += side.row(&contact.frame, b).dot(&moved);
                }
            }
        }
        w
    }

    /// `out = A⁻¹ (b + Jᵀ λ)`: the velocities that the impulses `lambda` alone would give.
    pub fn velocities_for(&self, lambda: &[Vector3<f64>], scratch: &mut DVector<f64>, out: &mut DVector<f64>) {
        scratch.copy_from(&self.rhs);
        for (c, l) in lambda.iter().enumerate() {
            self.add_jacobian_transpose(c, l, scratch);
        }
        self.apply_a_inverse(scratch, out);
    }
}
