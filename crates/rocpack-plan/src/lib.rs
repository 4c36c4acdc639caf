//! GPU targets planned coherently across the ROCm stack.
//!
//! [`kb`] reads the knowledge base (`data/`, documented in docs/plan-knowledge.md); [`planner`]
//! turns a request (targets or families, components, release, build tool) into a [`model::Plan`]:
//! per component the targets it is built for, what excluded targets lose, the exact settings, and
//! the knowledge base's pitfalls, with their remedies carried along the dependency graph.

pub mod kb;
pub mod model;
pub mod planner;

pub use kb::Knowledge;
pub use model::{Plan, Request, Tool};
pub use planner::{PlanError, plan};
