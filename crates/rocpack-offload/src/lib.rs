//! Finds and decodes every container of AMD GPU code in a file: clang offload bundles
//! (plain and compressed), `.hip_fatbin` sections of host ELF files and Windows PE images,
//! `-fgpu-rdc` offload sections, `.llvm.offloading` OffloadBinaries, static archives and bare
//! code objects.
//!
//! ```
//! use rocpack_offload::{inspect, Options};
//! let report = inspect(b"not a GPU file", &Options::default());
//! assert!(report.code_objects.is_empty());
//! ```
//!
//! Everything works on a byte slice (usually an mmap) and reads only what the question needs:
//! listing a 1.6 GB library touches its ELF headers, the wrapper table and the bundle
//! headers.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::indexing_slicing, clippy::unwrap_used))]

pub mod archive;
pub mod bundle;
pub mod ccob;
pub mod elf;
pub mod embedded;
pub mod entry_id;
pub mod error;
mod inspect;
pub mod md5;
pub mod model;
pub mod offload_binary;
pub mod pe;

pub use entry_id::EntryId;
pub use error::{FormatError, Kind};
pub use inspect::{
    DEFAULT_MAX_DECOMPRESSED, HEAD_LEN, Options, Prefetch, ReadAt, ReadAtRange, Sink, Sniff,
    ThinMemberLoader, fill_at, inspect, inspect_head, inspect_with, sniff,
};
pub use model::{
    CodeObject, Container, ContainerKind, Diagnostic, ImageFormat, Inspection, Loading, ReadCode,
    Severity,
};
