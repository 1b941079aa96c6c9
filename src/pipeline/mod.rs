//! The physics step, one stage per file, in data-flow order:
//!
//! [`prepare`] (ECS → simulation bodies; `gyroscopic`, the term of Euler's equations the solver's
//! fixed inertia leaves out) → [`broad_phase`] (candidate pairs) → [`narrow_phase`]
//! (contact points; with `manifold_view`, parry's answers in world coordinates, `lost_contact`,
//! a mesh's triangles asked one by one when parry lost a touching pair, `valleys`, the triangle
//! beyond a concave edge read by its plane, `separation`, parry's normal checked against the
//! shapes' extremes, `caps`, a cylinder's cap on a face, `refine`,
//! exact lines of contact along cylinders and capsules and exact faces under GJK, `hull_faces`,
//! a hull's face of more than four corners read whole, `seams`, no contact through the cuts
//! between a compound's parts, and `reduction`, which points the solver gets) → [`solve`]
//! (islands, CANAL; `rolling`, rolling and torsional friction's blocks; `push_out`, remaining
//! penetration removed by a displacement, not a speed) →
//! [`integrate`] (poses) → [`write_back`] (simulation bodies → ECS, contacts, statistics).
//!
//! Stages communicate through the [`PhysicsWorld`] resource; only `prepare` and `write_back`
//! touch user components.

pub(crate) mod broad_phase;
mod caps;
mod gyroscopic;
mod hull_faces;
pub(crate) mod integrate;
pub(crate) mod joints;
mod lost_contact;
mod manifold_view;
pub(crate) mod narrow_phase;
pub(crate) mod prepare;
mod push_out;
mod reduction;
mod refine;
mod rolling;
pub(crate) mod seams;
mod separation;
mod shape_cache;
mod shape_mass;
pub(crate) mod solve;
mod valleys;
mod world;
pub(crate) mod write_back;

pub(crate) use world::PhysicsWorld;
