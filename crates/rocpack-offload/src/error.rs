//! Errors of the container parsers.

use std::fmt;

/// The format a [`FormatError`] is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Uncompressed clang offload bundle.
    Bundle,
    /// Compressed offload bundle.
    Ccob,
    /// `.llvm.offloading` OffloadBinary.
    OffloadBinary,
    /// Host ELF file.
    Elf,
    /// Windows PE image.
    Pe,
    /// Static archive.
    Archive,
    /// AMDGPU code object.
    CodeObject,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Bundle => "offload bundle",
            Kind::Ccob => "compressed offload bundle",
            Kind::OffloadBinary => "OffloadBinary",
            Kind::Elf => "ELF",
            Kind::Pe => "PE",
            Kind::Archive => "archive",
            Kind::CodeObject => "code object",
        })
    }
}

/// A malformed structure: what, and where relative to the start of the container.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind}: {message} (at offset {offset})")]
pub struct FormatError {
    /// Which format.
    pub kind: Kind,
    /// Offset of the bad field from the start of the container.
    pub offset: u64,
    /// What is wrong.
    pub message: String,
}

impl FormatError {
    pub(crate) fn new(kind: Kind, offset: u64, message: impl Into<String>) -> Self {
        FormatError {
            kind,
            offset,
            message: message.into(),
        }
    }
}
