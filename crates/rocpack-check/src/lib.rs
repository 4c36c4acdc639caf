//! Which GPUs each library, and a whole install, can run on.
//!
//! [`library::group`] turns scan results into libraries (a host ELF file, an archive, a code
//! object file, or a rocBLAS/hipBLASLt kernel directory); [`evaluate::evaluate`] gives the
//! verdict for one library on one GPU by the rules of `rocpack_amdgpu::compat`;
//! [`locations::default_paths`] lists where ROCm code usually lives.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::indexing_slicing, clippy::unwrap_used))]

pub mod evaluate;
pub mod label;
pub mod library;
pub mod locations;
pub mod matrix;

pub use evaluate::{Cell, Gpu, Rules, VerdictCounts, evaluate};
pub use library::{Inventory, Library, LibraryKind, group};
