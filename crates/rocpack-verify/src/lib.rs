//! Verifies an install tree without executing anything in it.
//!
//! - [`linkage`]: resolves every ELF file's DT_NEEDED closure as glibc's ld.so would (RPATH,
//!   RUNPATH, `$ORIGIN`, `LD_LIBRARY_PATH`, `/etc/ld.so.cache`, default directories, all inside an
//!   optional sysroot), then checks undefined symbols and symbol versions against the closure.
//! - CMake package configs: `rocpack_cmake`'s interpreter checks the files they reference; its
//!   findings are gathered here ([`Code`] has every `rocpack_cmake::CmakeCode`).
//! - [`toolchain`]: clang's resource directory and the AMDGPU device libraries.
//!
//! Every check returns [`Finding`]s with stable [`Code`]s; [`run`] runs the checks asked for
//! and gives one [`Report`].

pub mod finding;

pub use finding::{Code, Finding, Severity};
pub use run::{Check, Report, run};
pub mod linkage;
pub mod run;
pub mod toolchain;
pub mod tree;
