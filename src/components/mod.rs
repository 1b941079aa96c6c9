//! The components users put on entities: what a body is, what shape it has, what it is made of,
//! how it moves and what pushes it. Plain data; the pipeline reads and writes them.

mod body;
mod collider;
mod forces;
mod joints;
mod mass;
mod material;

pub use body::{AngularVelocity, LinearVelocity, PreciseState, RigidBody};
pub use collider::{Collider, ColliderDensity, TriMeshFlags};
pub use forces::{ExternalForce, ExternalImpulse};
pub use joints::{
    FixedJoint, JointAnchors, JointDrive, JointLimits, JointState, PrismaticJoint, RevoluteJoint, SphericalJoint,
};
pub use mass::{CenterOfMass, Mass, PrincipalInertia};
pub use material::{CombineRule, Friction, Restitution, RollingFriction};
