//! The schema of `data/gpus.toml`, the one source of rocpack's GPU facts, and its one reader:
//! the catalogue (`catalogue.rs`) parses the file at run time with it, and the build script
//! includes this same file (`#[path]`) to derive the constant tables (`MACH_TABLE`, …) from it.
//! It must therefore stand alone: serde and std only.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Whether a processor is a discrete GPU, an APU, or ships as both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Kind {
    /// Discrete GPU.
    #[serde(rename = "dGPU")]
    DGpu,
    /// Integrated in an APU.
    #[serde(rename = "APU")]
    Apu,
    /// Both, where AMDGPUUsage lists both.
    #[serde(rename = "dGPU+APU")]
    DGpuApu,
}

impl Kind {
    /// The spelling used in the data file and in JSON (`dGPU`, `APU`, `dGPU+APU`).
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::DGpu => "dGPU",
            Kind::Apu => "APU",
            Kind::DGpuApu => "dGPU+APU",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The matrix-multiply instructions a processor has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Matrix {
    /// MFMA (CDNA matrix cores).
    Mfma,
    /// WMMA (RDNA3 and later).
    Wmma,
    /// No matrix instructions.
    None,
}

impl Matrix {
    /// The spelling used in the data file and in JSON (`mfma`, `wmma`, `none`).
    pub fn as_str(self) -> &'static str {
        match self {
            Matrix::Mfma => "mfma",
            Matrix::Wmma => "wmma",
            Matrix::None => "none",
        }
    }
}

impl fmt::Display for Matrix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCatalogue {
    pub(crate) sources: BTreeMap<String, String>,
    pub(crate) gpu: Vec<RawGpu>,
    /// The r600-family mach values (only `MACH_TABLE` has them).
    #[serde(default)]
    #[allow(dead_code)] // Read by the build script only.
    pub(crate) r600: Vec<RawR600>,
}

/// A `[[gpu]]` table: the fields are documented in the file's header.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawGpu {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) aliases: Vec<String>,
    pub(crate) mach: u8,
    pub(crate) generation: String,
    pub(crate) architecture: Option<String>,
    pub(crate) kind: Option<Kind>,
    pub(crate) wavefront: u32,
    pub(crate) matrix: Option<Matrix>,
    pub(crate) xnack: bool,
    pub(crate) sramecc: bool,
    /// ROCr registers an ISA for it (`ROCR_ISAS`).
    #[serde(default)]
    #[allow(dead_code)] // Read by the build script only.
    pub(crate) rocr_isa: bool,
    /// The HIP runtime's generic target for it (`RUNTIME_GENERIC`).
    #[allow(dead_code)] // Read by the build script only.
    pub(crate) runtime_generic: Option<String>,
    pub(crate) generic: Option<String>,
    pub(crate) generic_version: Option<u32>,
    #[serde(default)]
    pub(crate) members: Vec<String>,
    pub(crate) runtime_since: Option<String>,
    pub(crate) runtime_since_note: Option<String>,
    #[serde(default)]
    pub(crate) marketing: Vec<RawProduct>,
    #[serde(default)]
    pub(crate) pci_ids: Vec<String>,
    pub(crate) sources: Vec<String>,
    pub(crate) note: Option<String>,
}

/// A `marketing` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawProduct {
    pub(crate) name: String,
    pub(crate) src: String,
}

/// An `[[r600]]` table.
#[derive(Debug, Deserialize)]
#[allow(dead_code)] // Read by the build script only.
#[serde(deny_unknown_fields)]
pub(crate) struct RawR600 {
    pub(crate) name: String,
    pub(crate) mach: u8,
}
