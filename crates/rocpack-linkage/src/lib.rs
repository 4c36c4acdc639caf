//! glibc's dynamic loader, emulated without running anything: which file `ld.so` loads for each
//! `DT_NEEDED` name, and which object of a closure defines each symbol.
//!
//! - [`elf`]: an ELF file's dynamic section, symbols and versions, through `object`.
//! - [`ldcache`]: `/etc/ld.so.cache` (the new format glibc 2.32+ writes).
//! - [`search`]: the loader's search order (RPATH, `LD_LIBRARY_PATH`, RUNPATH with `$ORIGIN`,
//!   the cache, the ABI's default directories), inside an optional sysroot, and the closure
//!   it loads in order.
//! - [`index`], [`symbols`]: definitions by name over a closure, and the lookups that find them.
//!
//! The checks built on it (undefined symbols, missing versions, duplicate definitions) are
//! `rocpack-verify`'s; this crate decides nothing about what is wrong.

pub mod elf;
pub mod index;
pub mod ldcache;
pub mod search;
pub mod symbols;
