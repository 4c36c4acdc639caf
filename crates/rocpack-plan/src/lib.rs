//! GPU targets planned coherently across the ROCm stack.
//!
//! [`kb`] reads the knowledge base (`data/`, documented in docs/plan-knowledge.md); [`planner`]
//! turns a request (targets or families, components, release, build tool) into a [`model::Plan`]:
//! per component the targets it is built for, what excluded targets lose, the exact settings, and
//! the knowledge base's pitfalls, with their remedies carried along the dependency graph;
//! [`emit`] prints a plan for CMake, Spack, Gentoo, Nix or TheRock; [`verify`] checks an
//! installed tree against a plan: the device code of every planned target present, none that
//! was not planned, every planned component installed.

pub mod emit;
pub mod kb;
pub mod model;
pub mod planner;
pub mod verify;

pub use kb::Knowledge;
pub use model::{Plan, PlanCode, Request, Tool};
pub use planner::{PlanError, plan};
