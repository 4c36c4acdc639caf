//! Verifies an install tree without executing anything in it.
//!
//! - [`linkage`]: resolves every ELF file's DT_NEEDED closure as glibc's ld.so would (RPATH,
//!   RUNPATH, `$ORIGIN`, `LD_LIBRARY_PATH`, `/etc/ld.so.cache`, default directories, all inside an
//!   optional sysroot), then checks undefined symbols and symbol versions against the closure.
//! - [`cmake`]: evaluates enough of CMake to check the files package configs reference.
//! - [`toolchain`]: clang's resource directory and the AMDGPU device libraries.
//!
//! Every check returns [`Finding`]s with stable [`Code`]s; [`run`] runs the checks asked for
//! and gives one [`Report`].

pub mod cmake;
pub mod finding;

pub use finding::{Code, Finding, Severity};
pub use run::{Check, Report, run};
pub mod linkage;
pub mod run;
pub mod toolchain;
pub mod tree;
