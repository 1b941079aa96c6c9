//! Solver settings with their units and defaults (design note §3, §7).

/// Tolerances, budgets and penalty parameters of the CANAL solver.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolverSettings {
    /// Stop when both the NCP and the feasibility residual are at or below this, m/s.
    pub tolerance: f64,
    /// Nonsmooth Gauss–Seidel sweeps (the `gauss_seidel` stage's contact steps) given first to a
    /// warm start that misses the acceptance level by at most `smoothing_max_ratio`; if they bring
    /// it within that level it is the answer. 0 disables them. On a resting 210-box pyramid,
    /// before the held factorization took these near misses, three sweeps cost about 0.2 ms, a
    /// third of one Newton step, and (with the step size of `1 / tr W` the sweeps had then, over
    /// steps 150–600 at 1e-8 m/s, mean Newton iterations per step, ms per step): no sweeps 1.03,
    /// 1.48 ms; one 0.93, 1.46 ms; two 0.30, 0.91 ms; three 0.01, 0.66 ms; five 0.16, 0.90 ms.
    pub smoothing_sweeps: u32,
    /// Most smoothing sweeps a near miss is given in all. When the first `smoothing_sweeps` leave
    /// it outside the acceptance level, the sweeps go on, checked every ten, until the pair is
    /// within the headroom target or the budget is spent, and the pair is kept if it is then
    /// within the acceptance level. At `smoothing_sweeps` or below, the first check decides.
    ///
    /// A settled pile whose answers leave contacts slipping cannot use the held factorization
    /// (`held_steps`). Poured 125-ball pen, steps 700–1200 (windows of 100 steps, through the
    /// plugin), when the sweeps stepped each contact by `1 / tr W`: three sweeps alone accepted
    /// 12–18 steps in 100, at 8.4–9.2 Newton iterations and 4.1–5.5 ms a step; a budget of 60
    /// accepted 40–55, at 6.0–7.7 Newton iterations and 3.2–4.1 ms (150 and 400 did no
    /// better). With the Gauss–Seidel stage's steps and `smoothing_max_ratio` at 100, every
    /// step was accepted without a Newton iteration, at 0.59–1.07 ms. A budget of 200 then
    /// gained the pens nothing and made the settled heap of `falling_boxes` 1.5–2.3 ms a step
    /// instead of 0.24–0.52: boxes sweep slowly towards the headroom target. The resting
    /// pyramid and stacks, whose near misses the held factorization corrects, were not
    /// affected.
    pub smoothing_budget: u32,
    /// Most solves with the factorization an earlier solve of the island left (the `held_step`
    /// stage), tried before the smoothing sweeps on the same near misses while the island keeps
    /// that solve's bodies and blocks; 0 disables them. Each gains about a factor of ten: on the
    /// resting 210-box pyramid over steps 30–3030, with three, 2741 steps were accepted as given
    /// and 259 corrected; before the stage (4 December 2026), 1727 accepted, 1258 smoothed and 15
    /// iterated.
    pub held_steps: u32,
    /// Largest ratio of a warm start's initial residual to the level it would be accepted at,
    /// `min(tolerance, warm_start_accept)`, at which it is smoothed. Settled pens of 96 and 108
    /// balls missed a ratio of 10 in 95–100 of every 100 steps and iterated, at 4–11 Newton
    /// iterations a step; at 100 the sweeps accepted 86–100 of them (steps 700–1200).
    pub smoothing_max_ratio: f64,
    /// Largest residual, m/s, at which a warm start, as given or after the smoothing sweeps, is
    /// accepted without iterating (it must also be within `tolerance`); otherwise the outer loop
    /// solves the step from the warm start as given.
    ///
    /// Why: an accepted warm start is not driven further, so a resting scene accepted step after
    /// step at residual `r` creeps at about `r`. At 1e-6 m/s that is a few µm in a few seconds,
    /// enough to cross `gap_slop` and churn the contact biases: a loose tolerance made a resting
    /// pyramid slower, not faster. On the 210-box pyramid over steps 30–600 at a tolerance of
    /// 1e-6 m/s (mean Newton iterations per step, ms per step): warm starts accepted up to the
    /// tolerance, smoothed ones too, 17.2, 17.7 ms; smoothed ones only up to 1e-8 m/s, 8.7,
    /// 8.6 ms; both only up to 1e-8 m/s, 0.32, 1.09 ms. At 1e-4 m/s 16.7 → 14.4 Newton
    /// iterations per step, at 1e-8 and below nothing changes.
    pub warm_start_accept: f64,
    /// Fraction of the warm-start acceptance level, `min(tolerance, warm_start_accept)`, that a
    /// solve that had to iterate aims for once it is within the tolerance, in (0, 1]; 1 turns the
    /// headroom off at tolerances up to `warm_start_accept`. It takes at most
    /// [`headroom_budget`](Self::headroom_budget) more outer iterations, and only while each
    /// costs at most one Newton step, so a solve whose active set is still moving stops at the
    /// tolerance as before. A solve that began near its answer, reached the tolerance within a
    /// few outer iterations and has every contact sticking does not count the iteration that
    /// reached it: from other loads the same solve paid for its last change of active set one
    /// iteration later, and stopped at 7.0e-9 m/s instead of 4.7e-11.
    ///
    /// Why: a resting scene solved just to the tolerance leaves the next step's warm start (the
    /// same impulses, re-applied to velocities they have already corrected) just outside it, so
    /// every other step had to iterate. Over steps 30–600 (ms per step, without → with, two
    /// headroom iterations then, no smoothing sweeps): 100 three-box stacks 0.61 → 0.51, ten-box
    /// stack 0.030 → 0.018, the 210-box pyramid at 1e-6 m/s 16.1 → 2.0 but at 1e-8 m/s 1.12 →
    /// 1.73; with the smoothing sweeps (and one headroom iteration) the pyramid at 1e-8 m/s
    /// takes 0.64 ms.
    ///
    /// Why the acceptance level and not the tolerance: at a tolerance looser than
    /// `warm_start_accept` a warm start is not accepted at the tolerance, so a solve that stopped
    /// near it left every next step to iterate again, and a loose tolerance was slower than a
    /// tight one on a resting scene. Steps 30–150 through the plugin, median ms a step, aiming at
    /// the tolerance → at the acceptance level: the 210-box pyramid at 1e-4 m/s 2.7 → 0.37, at
    /// 1e-6 m/s 0.59 → 0.37; the ten-box stack at 1e-2 m/s 0.031 → 0.012.
    pub headroom: f64,
    /// Most outer iterations spent on `headroom` after the tolerance is reached, plus two for each
    /// decade the tolerance lies above `warm_start_accept` if the solve reached the tolerance
    /// within a few outer iterations (a resting scene's); at 1e-4 m/s one a decade left the
    /// 210-box pyramid at 2.6 ms a step, two took it to 0.38. Each costs a Newton step (about
    /// 1 ms on the 210-box pyramid) also in a solve whose next warm start is far off anyway: one
    /// instead of two took a pyramid warm-started 1% off from 6.6 to 5.7 ms and left the long
    /// runs as they were (steps 30–600 at 1e-8 m/s: pyramid 0.85 → 0.78 ms, 100 stacks and the
    /// ten-box stack unchanged at 0 Newton iterations). Such a solve that also began near its
    /// answer and ends with no contact sliding may spend three more (a resting scene's warm starts
    /// then hold for many steps: the 210-box pyramid over steps 30–3030 iterated 15 times instead
    /// of 351).
    pub headroom_iterations: u32,
    /// Most nonsmooth Gauss–Seidel sweeps (the `gauss_seidel` stage) run before the outer loop by
    /// a solve at a tolerance looser than `warm_start_accept` that begins far from its answer (a
    /// cold start, or a warm start above three times `warm_penalty_max_residual`: one just above
    /// it is a resting scene's, which the outer loop settles); 0 disables them. They
    /// stop once their pair is within `min(tolerance, warm_penalty_max_residual)`, which is then
    /// the answer, or as soon as their rate of contraction says the budget will not get there;
    /// the outer loop then starts from their pair if it is nearer the answer than the start was.
    ///
    /// Why: a sweep costs about as much per contact as one evaluation of the residuals, a Newton
    /// iteration a sparse factorization. On the landing 125-ball pen (steps 60–120, median ms a
    /// step) the solve at 1e-2 m/s went from 22.6 to 2.7 ms, at 1e-1 m/s from 6.8 to 2.3.
    ///
    /// Why not at `warm_start_accept` and below: the sweeps do not get a pile there, and as the
    /// outer loop's start their pair saved nothing (the same captured pen problems, steps 60–240
    /// at 1e-8 m/s: 127.5k Newton iterations against 126.5k), while on resting scenes the answers
    /// they did reach, just inside the tolerance, kept the next steps from being accepted.
    ///
    /// Why their answer only within `warm_penalty_max_residual` at a looser tolerance: accepted at
    /// 1e-1 m/s, a resting 210-box pyramid was never again near its answer, swept every step and
    /// took 3.8 ms a step instead of 0.54.
    pub gauss_seidel_sweeps: u32,
    /// Most augmented-Lagrangian (outer) iterations per solve.
    pub max_outer_iterations: u32,
    /// Most Newton iterations per outer iteration.
    pub max_newton_iterations: u32,
    /// Inexact inner solves for a run that did not begin near its answer (a cold start, or a warm
    /// start above `warm_penalty_max_residual`, or a retry): while the last outer iteration's
    /// residual `r` lies above 100× the tolerance, Newton stops once its gradient, in m/s, is
    /// within `inner_forcing · r`. The velocities are then recomputed from the multipliers, so
    /// every iterate judged, and the answer returned, satisfies the dynamics to round-off. 0 (the
    /// default) always solves to the design note's inner tolerance.
    ///
    /// Why it is off: on 24 poured sphere pens (`cargo bench --bench pen_seeds`, 5 December 2026)
    /// four variants of 0.1 took 5–17% fewer Newton iterations than exact solves (0.7–1.9
    /// standard errors of the difference), and every one left more steps above 1e-6 m/s (+9 to
    /// +32 of 4320, within one or so standard error each): 0.1 as first landed took 3.07M against
    /// 3.58M iterations and left 206 steps above 1e-6 m/s against 197. A saving that size is not
    /// worth a hint of a worse tail in a solver sold on reaching its tolerance. Also, a loose cold
    /// solve settles a statically indeterminate pile on other loads (the same velocities), and
    /// from those two solves of a 10-row pyramid by different paths end with velocities
    /// 1.06e-7 m/s apart, where a test of the default
    /// (`a_solve_returns_the_loads_nearest_its_warm_start_whatever_its_path`) asserts 1e-7. See
    /// `docs/sphere-pen.md`.
    pub inner_forcing: f64,
    /// Dynamic bodies from which an island's Newton directions are first sought by conjugate
    /// gradients on the Newton matrix `H`, preconditioned by the factorization an earlier Newton
    /// iteration left, and `H` is refactored only when CG misses
    /// [`cg_direction_forcing`](Self::cg_direction_forcing) within
    /// [`cg_direction_iterations`](Self::cg_direction_iterations); only while the solve is far
    /// from its answer (it did not begin near it, and its last residual is above 100× the
    /// tolerance), so that warm-started solves near their answer keep exact directions. On large
    /// piles the sparse Cholesky's numeric factorization costs many solves with it. Cold solves
    /// of stirred ball lattices (`scenes::stirred_sphere_pile`, `cargo bench --bench solver`,
    /// 6 December 2026, retries off) took 35% less time at 1000 balls (17.4 against 26.8 s) and
    /// 37% less at 512, 4% less at 343 and 2–4% at 125 and 216, each with 3–15% more (cheaper)
    /// Newton iterations and the same residual. On the 125-ball pen's captured steps, with the
    /// bound lowered to reach them, it saved nothing (`docs/sphere-pen.md`).
    ///
    /// ```
    /// use bevy_canal::solver::{scenes, Solution, Solver, SolverSettings};
    ///
    /// // 64 balls mid-impact, the bound lowered so that so small a pile takes CG directions.
    /// let problem = scenes::stirred_sphere_pile(4, 0.5, 1.0 / 60.0);
    /// let settings = SolverSettings { cg_direction_min_bodies: 0, ..Default::default() };
    /// let report = Solver::new(settings).solve(&problem, &mut Solution::default());
    /// assert!(report.converged && report.cg_directions > 0);
    /// assert!(report.cg_directions <= report.newton_iterations);
    /// ```
    pub cg_direction_min_bodies: usize,
    /// Most CG iterations per Newton direction before `H` is refactored
    /// ([`cg_direction_min_bodies`](Self::cg_direction_min_bodies)).
    pub cg_direction_iterations: u32,
    /// The largest forcing `η` of a CG direction `d`: `‖H d + ∇Φ‖_{A⁻¹} ≤ η ‖∇Φ‖_{A⁻¹}`, with
    /// `η` also at most the inner solve's gradient relative to its first, so that the directions
    /// grow exact as Newton converges and keep its fast local rate
    /// ([`cg_direction_min_bodies`](Self::cg_direction_min_bodies)).
    pub cg_direction_forcing: f64,
    /// Most evaluations of `φ'(α)` per line search.
    pub max_line_search_iterations: u32,
    /// Fraction of a penetration pushed out per step, in (0, 1].
    pub erp: f64,
    /// Cap on the speed at which penetration is pushed out, m/s: deep overlaps separate without
    /// launching bodies.
    pub max_push_out_speed: f64,
    /// Gaps this close to zero count as exact contact (bias 0), m. parry computes contact
    /// geometry in `f32`, so a resting contact's gap is round-off of up to about 1e-6 m a few
    /// metres from the origin. Divided by the step, that noise makes the biases of a body's
    /// redundant contacts disagree by about 1e-6 m/s; the exact answer is then a slow creep that
    /// takes the solver hundreds of iterations to find. Over steps 60–180 of the 125-ball pen,
    /// slops of 0, 1e-6, 3e-6 and 1e-5 m took 144k, 102k, 64k and 77k Newton iterations, and
    /// left 58, 33, 13 and 27 of the 120 steps above the tolerance.
    pub gap_slop: f64,
    /// Initial dimensionless penalty κ; each contact's penalty is `κ` times its effective normal mass.
    pub initial_penalty: f64,
    /// Initial κ when the solve is warm started. Near the solution the active set is already
    /// right and a stiffer penalty makes the multiplier update converge in fewer outer
    /// iterations; too stiff and Newton needs more steps per outer iteration. On 1%-off warm
    /// starts at 1e-6 m/s, κ₀ = 300 took 3 outer iterations on a 210-box pyramid (5.9 ms) and a
    /// 1000-sphere pile (81 ms) where κ₀ = 10 took 6 (14.9 ms, 135 ms) and κ₀ = 1000 took 3
    /// with more Newton steps (6.3 ms, 144 ms).
    pub warm_initial_penalty: f64,
    /// Largest initial residual, m/s, at which a warm-started solve begins with
    /// `warm_initial_penalty`; above it the warm start is far off (a body struck, a contact set
    /// that changed) and the solve begins with `initial_penalty` as a cold one does. Impulses 1%
    /// off leave about 1.6e-3 m/s at 60 Hz (where κ₀ = 300 pays, see above); the 125-sphere
    /// pen's warm starts, with spheres still landing, leave 0.05–3 m/s. On three sets of 60
    /// captured pen steps, starting these far warm starts at κ₀ = 10 took 15.9k, 13.5k and 21.7k
    /// Newton iterations where κ₀ = 300 took 20.0k, 22.0k and 29.5k, and left 1, 0 and 4 steps
    /// above the tolerance where that left 1, 1 and 3. A solve that began within it also hands
    /// the next step the impulses that hold its end velocities
    /// ([`Solution::warm_impulses`](super::Solution::warm_impulses)).
    pub warm_penalty_max_residual: f64,
    /// Largest κ the penalty rule may reach.
    pub max_penalty: f64,
    /// Factor by which κ is raised when the primal residual stalls.
    pub penalty_growth: f64,
    /// Anderson acceleration memory of the outer fixed point (0 disables it).
    pub anderson_memory: usize,
    /// Outer iterations without a new best residual before falling back to a damped shift update.
    pub patience: u32,
    /// Semismooth Newton steps on the whole step (see the `polish` stage) after the outer loop
    /// has spent `max_outer_iterations` without converging; 0 disables them.
    pub polish_iterations: u32,
    /// A solve that spends its outer budget and polish and still ends above
    /// `tolerance × retry_above` is run again, up to `max_retries` times while it stays there, and
    /// the best answer is kept. The runs start from the warm start at κ₀ = `retry_penalty`, then
    /// from zero impulses at `initial_penalty`, then from zero impulses at `retry_penalty`; a start
    /// that repeats an earlier run is skipped. On the sphere pen such a solve sits at a fixed point
    /// of the de Saxcé shift iteration that does not contract, and which one it reaches depends on
    /// the path. On 408 captured pen island solves (three pens, six windows of 60 steps), one run
    /// left 27 above 1e-6 m/s, one retry 14 and three retries 7, for 25% and 49% more Newton
    /// iterations. A solve that converges is never retried, so a typical step costs the same.
    pub retry_above: f64,
    /// Most retries per solve; 0 disables them.
    pub max_retries: u32,
    /// Initial κ of the retries that use it.
    pub retry_penalty: f64,
    /// Most whole solves of a step with rolling or torsional friction
    /// ([`StepProblem::rolling`](super::StepProblem::rolling)). Within a solve the outer loop
    /// moves the bounds with its loads; a round after the first is spent only on an answer still
    /// off the bounds of its own loads, by more than the tolerance and more than its own solve's
    /// residual. The rounds also stop once two in a row have not halved the best residual: in a
    /// pile of balls whose loads are not unique, each solve may share them out differently, and
    /// the rounds then wander instead of settling.
    pub max_rolling_rounds: u32,
    /// Largest number of dynamic bodies solved with a dense Cholesky; larger islands use the
    /// sparse Cholesky with a fill-reducing ordering. `benches/solver.rs` measured the two equal
    /// at 6 bodies (pyramid of 3 rows, 0.15 ms each), dense 10–20% faster below, sparse ahead
    /// from 8 bodies on and 6× ahead at 32.
    pub dense_max_bodies: usize,
    /// Sliding contacts from which the `k × k` systems of the shift Newton step and the polish
    /// (one rank-one term per sliding contact) are solved by BiCGSTAB, one solve with the Newton
    /// matrix per product, instead of being formed column by column and factored densely (`k`
    /// solves, `k²` products, a dense LU), on islands of at least
    /// [`krylov_min_bodies`](Self::krylov_min_bodies). Timed on the same iterates, the two cost
    /// the same near 90–100 sliding contacts on pens of 512 and 1000 balls; at 500–550 the Krylov
    /// path took 27 ms against 107 (scratch harnesses, 5 December 2026). Where BiCGSTAB does not
    /// converge, the polish solves its system densely after all; the shift Newton step, after 100
    /// iterations, is refused instead (its system is then nearly singular).
    pub krylov_min_sliding: usize,
    /// Dynamic bodies an island needs for [`krylov_min_sliding`](Self::krylov_min_sliding) to
    /// apply. On the 125-ball pen the dense path was the faster at every count of sliding
    /// contacts met (up to 100: 1.8 against 2.8 ms for the shift Newton step, 1.8 against 3.4
    /// for a polish step); islands between 125 and 512 bodies were not measured.
    pub krylov_min_bodies: usize,
    /// After a solve that iterated and converged, move its impulses, along the directions that
    /// change no velocity, to the admissible ones nearest the start (the warm start, or zero when
    /// cold), keeping the move only if the residuals stay within the tolerance and within twice
    /// the answer's or [`headroom_target`](Self::headroom_target). On a statically
    /// indeterminate island (a box on four corners, a pyramid) the velocities fix the loads only
    /// up to such directions, and without this the answer among them depends on the solver's
    /// path: on a 10-row pyramid warm-started 5% off, the outer loop and the polish after one
    /// outer iteration ended 0.039 N·s apart, and 4e-7 N·s apart with it. For a robot reading
    /// contact forces off a grasp or a stance. Costs one to six factorizations of the Newton
    /// matrix per such solve.
    ///
    /// Off by default: it changes the next step's warm start, and on four poured sphere pens
    /// (steps 60–240) that left more steps unconverged, 130 against 82 (one chaotic trajectory
    /// each; two earlier forms of it gave 89 and 95); over 24 pen trajectories
    /// (`cargo bench --bench pen_seeds`) 790 against 660. A resting pyramid almost never
    /// iterates, so there it changes nothing.
    pub nearest_impulses: bool,
    /// Use the contacts' warm-start impulses.
    pub warm_start: bool,
    /// Also try the warm start carried on by nine tenths of each contact's
    /// [`warm_trend`](super::SolverContact::warm_trend), and start from it where its residual is
    /// the smaller. Off by default.
    ///
    /// A pile whose loads shift steadily, as under balls rolling through it, then starts nearer
    /// its answer. The bench's poured 125-ball pen never comes to rest: three balls keep rolling
    /// on the floor. Its steps 800–830, replayed on the same captured problems, took 754 Newton
    /// iterations with it against 1054 without, 11.2 against 15.5 ms a step
    /// (`SCENES=pen SETTLE=800 MEASURE=30 cargo bench --bench replay -- nomatch`, 7 December
    /// 2026). An impact's loads do not shift steadily: on steps 60–120 the plain warm start was
    /// always the nearer, and nothing changed.
    ///
    /// Why it is off: it sends poured piles elsewhere, and the poured-cylinder test's counts swing
    /// by a factor of two and more from one draw of 24 pours to the next. First judged on two
    /// draws (thirty-eighth session), it left 141 pair-steps deeper than 1 mm, over the test's
    /// bound of 130, and 41; the code without it 68 and 171. Judged again on four draws, with the
    /// narrow phase's fixes of the thirty-ninth session, it left 301 against 233 in all, and 150
    /// on one draw, over the bound (`docs/sphere-pen.md`).
    pub warm_trend: bool,
    /// Record a per-Newton-iteration trace in the solver (for convergence studies).
    pub record_trace: bool,
}

/// Most decades of tolerance above `warm_start_accept` that earn extra headroom iterations.
const MAX_HEADROOM_DECADES: f64 = 16.0;

impl SolverSettings {
    /// The residual a solve that had to iterate aims for once within the tolerance (see
    /// [`headroom`](Self::headroom)), m/s.
    pub fn headroom_target(&self) -> f64 {
        self.warm_start_level() * self.headroom
    }

    /// The residual within which a warm start is accepted without iterating,
    /// `min(tolerance, warm_start_accept)`, m/s.
    pub(crate) fn warm_start_level(&self) -> f64 {
        self.tolerance.min(self.warm_start_accept)
    }

    /// Most outer iterations spent on the headroom by a solve that reached the tolerance within a
    /// few outer iterations (see [`headroom_iterations`](Self::headroom_iterations)); a longer
    /// solve spends at most `headroom_iterations`.
    pub fn headroom_budget(&self) -> u32 {
        let decades = (self.tolerance / self.warm_start_accept).log10().ceil();
        // NaN (a NaN setting) falls to zero.
        self.headroom_iterations + 2 * decades.clamp(0.0, MAX_HEADROOM_DECADES) as u32
    }

    /// The count of sliding contacts from which an island of `bodies` dynamic bodies solves the
    /// shift Newton step's and the polish's systems by BiCGSTAB: `krylov_min_sliding`, or never
    /// below `krylov_min_bodies`.
    pub(crate) fn krylov_from(&self, bodies: usize) -> usize {
        if bodies >= self.krylov_min_bodies {
            self.krylov_min_sliding
        } else {
            usize::MAX
        }
    }

    /// A contact's normal bias `e_n` for signed gap `gap` (m) over a step `dt` (s), before
    /// restitution, m/s: `gap/dt` when open (the gap may close within the step, no further),
    /// `erp·gap/dt` capped at `max_push_out_speed` when penetrating (design note §1).
    pub fn gap_bias(&self, gap: f64, dt: f64) -> f64 {
        if gap.abs() <= self.gap_slop {
            0.0
        } else if gap >= 0.0 {
            gap / dt
        } else {
            (self.erp * gap / dt).max(-self.max_push_out_speed)
        }
    }
}

impl Default for SolverSettings {
    fn default() -> Self {
        Self {
            tolerance: 1e-8,
            smoothing_sweeps: 3,
            smoothing_budget: 60,
            held_steps: 3,
            smoothing_max_ratio: 100.0,
            warm_start_accept: 1e-8,
            headroom: 0.01,
            headroom_iterations: 1,
            gauss_seidel_sweeps: 200,
            max_outer_iterations: 200,
            max_newton_iterations: 50,
            inner_forcing: 0.0,
            cg_direction_min_bodies: 300,
            cg_direction_iterations: 12,
            cg_direction_forcing: 0.03,
            max_line_search_iterations: 50,
            erp: 0.2,
            max_push_out_speed: 1.0,
            gap_slop: 3e-6,
            initial_penalty: 10.0,
            warm_initial_penalty: 300.0,
            warm_penalty_max_residual: 1e-2,
            max_penalty: 1e6,
            penalty_growth: 10.0,
            anderson_memory: 5,
            patience: 8,
            polish_iterations: 30,
            retry_above: 100.0,
            max_retries: 3,
            retry_penalty: 300.0,
            max_rolling_rounds: 8,
            nearest_impulses: false,
            dense_max_bodies: 6,
            krylov_min_sliding: 100,
            krylov_min_bodies: 500,
            warm_start: true,
            warm_trend: false,
            record_trace: false,
        }
    }
}
