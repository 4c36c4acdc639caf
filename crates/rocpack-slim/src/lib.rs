//! Rewrites the GPU code in files without losing a byte: strips the code for GPUs that are not
//! wanted, compresses and decompresses offload bundles.
//!
//! [`plan::plan`] decides from a file's bytes what will change; [`write::apply`] writes it
//! atomically and verifies it before it replaces anything. See `docs/slim.md`.
#![forbid(unsafe_code)]

pub mod keep;
pub mod plan;
pub mod stream;
pub mod sys;
pub mod write;

pub use keep::{Keep, Reason};
pub use plan::{Compression, FilePlan, Form, Limits, Operation, Rewrite, Skip, plan};
pub use stream::Input;
pub use write::{
    HardLinks, Progress, Sizes, Step, WriteError, WriteOptions, Written, apply, measure,
    no_progress, render, sweep, verify_all,
};
