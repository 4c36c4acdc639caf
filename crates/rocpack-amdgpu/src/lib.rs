//! AMDGPU code objects: what their own ELF header and notes say.
//!
//! ```
//! use rocpack_amdgpu::TargetId;
//! let t = TargetId::parse("gfx90a:xnack+:sramecc-").unwrap();
//! assert_eq!(t.to_string(), "gfx90a:sramecc-:xnack+");
//! ```
//!
//! [`CodeObjectHeader::parse`] needs only the first 64 bytes of a code object;
//! [`metadata::read`] needs the code object's program headers and notes.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::indexing_slicing, clippy::unwrap_used))]

pub mod catalogue;
pub mod code_object;
pub mod compat;
mod gpus_schema;
pub mod mach;
mod mach_table;
pub mod metadata;
pub mod msgpack;
pub mod target;

pub use code_object::{CodeObjectHeader, HeaderError, UNKNOWN_MACH_PREFIX, looks_like_code_object};
pub use metadata::{Kernel, Metadata, MetadataError};
pub use target::{Feature, TargetId, TargetIdError};
