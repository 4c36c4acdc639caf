//! The knowledge base: the TOML files of `data/`, embedded in the binary and read into typed
//! tables. `docs/plan-knowledge.md` describes every field; `scripts/check-knowledge.py` holds the
//! files to their rules (sources cited, build order consistent, targets in the catalogue).
//! [`Knowledge::from_files`] checks again what the planner relies on, so a broken edit is an
//! error, never a panic or a silently wrong plan.

use std::collections::BTreeMap;

use serde::Deserialize;

mod derived;
mod emitters;
mod engines;

pub use derived::{DerivedFact, release_of};
pub use emitters::{
    EmitterKnowledge, GentooInfo, GentooPackage, NixInfo, NixPackage, NixRequirement, SpackFacts,
    SpackInfo, SpackPackage, SpackPackageFacts, SpackPropagation, SpackUnsatisfiable, SpackVariant,
    TheRockFeature, TheRockInfo, ToolOption, find_option,
};
pub use engines::{EngineComponent, EngineFacts, EngineInfo, EngineRepo, release_key};

/// The embedded data files, by name.
pub(crate) const FILES: &[(&str, &str)] = &[
    ("components.toml", include_str!("../data/components.toml")),
    ("emitters.toml", include_str!("../data/emitters.toml")),
    ("families.toml", include_str!("../data/families.toml")),
    ("pitfalls.toml", include_str!("../data/pitfalls.toml")),
    ("sources.toml", include_str!("../data/sources.toml")),
    ("rocm-6.0.toml", include_str!("../data/rocm-6.0.toml")),
    ("rocm-6.2.toml", include_str!("../data/rocm-6.2.toml")),
    ("rocm-6.4.toml", include_str!("../data/rocm-6.4.toml")),
    ("rocm-7.0.toml", include_str!("../data/rocm-7.0.toml")),
    ("rocm-7.1.toml", include_str!("../data/rocm-7.1.toml")),
    (
        "engines/gentoo.toml",
        include_str!("../data/engines/gentoo.toml"),
    ),
    // TheRock's engines/therock.toml is not here: TheRock builds its own development line at each
    // commit (7.10, 7.11), not the ROCm releases the knowledge base plans; its snapshot of a
    // release is the commit of that release's day, and tests/engine_therock.rs reads the file.
    ("engines/nix.toml", include_str!("../data/engines/nix.toml")),
    (
        "engines/spack.toml",
        include_str!("../data/engines/spack.toml"),
    ), // Facts derived from the components' sources (kb::derived; tests check this list is every
    // file of data/derived).
    (
        "derived/debian/hipCUB.toml",
        include_str!("../data/derived/debian/hipCUB.toml"),
    ),
    (
        "derived/debian/hipFFT.toml",
        include_str!("../data/derived/debian/hipFFT.toml"),
    ),
    (
        "derived/debian/hipSOLVER.toml",
        include_str!("../data/derived/debian/hipSOLVER.toml"),
    ),
    (
        "derived/debian/hipSPARSE.toml",
        include_str!("../data/derived/debian/hipSPARSE.toml"),
    ),
    (
        "derived/debian/rocBLAS.toml",
        include_str!("../data/derived/debian/rocBLAS.toml"),
    ),
    (
        "derived/debian/rocFFT.toml",
        include_str!("../data/derived/debian/rocFFT.toml"),
    ),
    (
        "derived/debian/rocPRIM.toml",
        include_str!("../data/derived/debian/rocPRIM.toml"),
    ),
    (
        "derived/debian/rocRAND.toml",
        include_str!("../data/derived/debian/rocRAND.toml"),
    ),
    (
        "derived/debian/rocSOLVER.toml",
        include_str!("../data/derived/debian/rocSOLVER.toml"),
    ),
    (
        "derived/debian/rocSPARSE.toml",
        include_str!("../data/derived/debian/rocSPARSE.toml"),
    ),
    (
        "derived/debian/rocThrust.toml",
        include_str!("../data/derived/debian/rocThrust.toml"),
    ),
    (
        "derived/upstream/MIGraphX-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/MIGraphX-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/MIGraphX-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/MIGraphX-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/MIGraphX-rocm-6.4.3.toml",
        include_str!("../data/derived/upstream/MIGraphX-rocm-6.4.3.toml"),
    ),
    (
        "derived/upstream/MIGraphX-rocm-7.0.2.toml",
        include_str!("../data/derived/upstream/MIGraphX-rocm-7.0.2.toml"),
    ),
    (
        "derived/upstream/MIGraphX-rocm-7.1.1.toml",
        include_str!("../data/derived/upstream/MIGraphX-rocm-7.1.1.toml"),
    ),
    (
        "derived/upstream/MIOpen-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/MIOpen-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/MIOpen-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/MIOpen-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/RCCL-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/RCCL-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/RCCL-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/RCCL-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/composable_kernel-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/composable_kernel-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/composable_kernel-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/composable_kernel-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/hipBLAS-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/hipBLAS-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/hipBLAS-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/hipBLAS-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/hipBLASLt-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/hipBLASLt-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/hipBLASLt-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/hipBLASLt-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/hipCUB-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/hipCUB-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/hipCUB-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/hipCUB-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/hipFFT-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/hipFFT-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/hipFFT-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/hipFFT-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/hipRAND-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/hipRAND-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/hipRAND-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/hipRAND-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/hipSOLVER-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/hipSOLVER-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/hipSOLVER-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/hipSOLVER-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/hipSPARSE-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/hipSPARSE-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/hipSPARSE-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/hipSPARSE-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/hipSPARSELt-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/hipSPARSELt-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/hipSPARSELt-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/hipSPARSELt-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/rocALUTION-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/rocALUTION-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/rocALUTION-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/rocALUTION-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/rocBLAS-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/rocBLAS-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/rocBLAS-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/rocBLAS-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/rocFFT-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/rocFFT-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/rocFFT-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/rocFFT-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/rocPRIM-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/rocPRIM-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/rocPRIM-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/rocPRIM-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/rocRAND-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/rocRAND-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/rocRAND-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/rocRAND-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/rocSOLVER-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/rocSOLVER-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/rocSOLVER-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/rocSOLVER-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/rocSPARSE-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/rocSPARSE-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/rocSPARSE-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/rocSPARSE-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/rocThrust-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/rocThrust-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/rocThrust-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/rocThrust-rocm-6.2.0.toml"),
    ),
    (
        "derived/upstream/rocWMMA-rocm-6.0.2.toml",
        include_str!("../data/derived/upstream/rocWMMA-rocm-6.0.2.toml"),
    ),
    (
        "derived/upstream/rocWMMA-rocm-6.2.0.toml",
        include_str!("../data/derived/upstream/rocWMMA-rocm-6.2.0.toml"),
    ),
];

/// A knowledge-base file that does not parse or breaks a rule the planner relies on.
#[derive(Debug, thiserror::Error)]
#[error("knowledge base {file}: {message}")]
pub struct KbError {
    /// The data file.
    pub file: String,
    /// What is wrong, naming the table.
    pub message: String,
}

fn kb_error(file: &str, message: impl Into<String>) -> KbError {
    KbError {
        file: file.to_owned(),
        message: message.into(),
    }
}

/// One entry of `sources.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// primary, packaging, binary, secondary or digest.
    pub kind: String,
    pub repo: Option<String>,
    pub path: Option<String>,
    pub commit: Option<String>,
    pub id: Option<String>,
    pub url: Option<String>,
    pub local: Option<String>,
    /// What the source says that the data relies on.
    pub what: String,
}

impl Source {
    /// Where to read it: `repo/path@commit`, the URL, or what was read locally.
    pub fn location(&self) -> String {
        if let Some(repo) = &self.repo {
            let mut s = repo.clone();
            if let Some(path) = &self.path {
                s.push('/');
                s.push_str(path);
            }
            if let Some(commit) = &self.commit {
                s.push('@');
                s.push_str(commit.get(..12).unwrap_or(commit));
            } else if let Some(id) = &self.id {
                s.push_str(" (stored copy ");
                s.push_str(id);
                s.push(')');
            }
            return s;
        }
        self.url
            .clone()
            .or_else(|| self.local.clone())
            .unwrap_or_default()
    }
}

/// `[kernel_families.<id>]` of `components.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelFamilyInfo {
    pub description: String,
    #[serde(default)]
    pub hardware: Vec<String>,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
}

/// What a component's installed files hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceCode {
    /// Device code for the planned targets is compiled into the installed files.
    Compiled,
    /// Headers only: consumers compile the device code.
    HeaderOnly,
    /// Host code only.
    HostOnly,
    /// Compiles kernels at run time (MIOpen: except what it links from composable_kernel).
    Runtime,
    /// Not a GPU-code component.
    None,
}

impl DeviceCode {
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceCode::Compiled => "compiled",
            DeviceCode::HeaderOnly => "header-only",
            DeviceCode::HostOnly => "host-only",
            DeviceCode::Runtime => "runtime",
            DeviceCode::None => "none",
        }
    }
}

/// How an installed file matters to `plan verify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileRole {
    HostLibrary,
    /// Host ELF with embedded device code.
    DeviceLibrary,
    /// Code objects or kernel databases loaded at run time.
    DeviceData,
    /// Device code linked into consumers.
    StaticLibrary,
    Headers,
    Tool,
}

impl FileRole {
    /// Files of this role carry per-target code.
    pub fn carries_device_code(self) -> bool {
        matches!(
            self,
            FileRole::DeviceLibrary | FileRole::DeviceData | FileRole::StaticLibrary
        )
    }
}

/// Install layout a file glob is relative to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Layout {
    /// Relative to `/opt/rocm[-X.Y.Z]`.
    Rocm,
    /// Relative to `/`, Debian multiarch.
    Debian,
}

/// `[[component.<Name>.files]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileGlob {
    pub layout: Layout,
    pub role: FileRole,
    /// `*` within a path component, `**` any depth.
    pub glob: String,
    /// Only these releases (all when absent).
    pub releases: Option<Vec<String>>,
    pub confidence: Option<String>,
    pub sources: Option<Vec<String>>,
    pub note: Option<String>,
}

/// `[component.<Name>.packages]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Packages {
    #[serde(default)]
    pub debian: Vec<String>,
    #[serde(default)]
    pub spack: Vec<String>,
    #[serde(default)]
    pub gentoo: Vec<String>,
    #[serde(default)]
    pub nixpkgs: Vec<String>,
    pub sources: Option<Vec<String>>,
    pub note: Option<String>,
}

/// `[[component.<Name>.upstream]]`.
#[derive(Debug, Clone, Deserialize)]
pub struct Upstream {
    pub releases: Option<Vec<String>>,
    pub repo: Option<String>,
    pub path: Option<String>,
    pub sources: Option<Vec<String>>,
    pub note: Option<String>,
}

/// `[component.<Name>]` of `components.toml`: what does not change between releases.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComponentInfo {
    /// toolchain, runtime, library or tool.
    pub kind: String,
    pub device_code: DeviceCode,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub description: String,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
    #[serde(default)]
    pub upstream: Vec<Upstream>,
    #[serde(default)]
    pub files: Vec<FileGlob>,
    #[serde(default)]
    pub packages: Packages,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ComponentsFile {
    kernel_families: BTreeMap<String, KernelFamilyInfo>,
    component: BTreeMap<String, ComponentInfo>,
}

/// `supported`: a list of targets or `"any"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Supported {
    /// No restriction beyond the compiler.
    Any,
    /// Only these targets (compared by processor).
    List(Vec<String>),
}

impl<'de> Deserialize<'de> for Supported {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Word(String),
            List(Vec<String>),
        }
        match Raw::deserialize(d)? {
            Raw::Word(w) if w == "any" => Ok(Supported::Any),
            Raw::Word(w) => Err(serde::de::Error::custom(format!(
                "expected a list of targets or \"any\", found {w:?}"
            ))),
            Raw::List(l) => Ok(Supported::List(l)),
        }
    }
}

/// A list of targets or one keyword (`all-planned`, `outside-supported`, `without-xdl-wmma`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum TargetSet {
    Keyword(String),
    List(Vec<String>),
}

/// `extra = [{ name, how }]`: a variable the project derives from its list.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Derived {
    pub name: String,
    pub how: String,
}

/// `[components.<Name>.targets]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Targets {
    /// The variable the project reads first in this release.
    pub variable: String,
    /// Other target variables it reads.
    #[serde(default)]
    pub also: Vec<String>,
    /// The project overwrites every target variable with its own list (RCCL 6.0): what the
    /// plan passes has no effect, and `supported` is that list.
    #[serde(default)]
    pub ignored: bool,
    #[serde(default)]
    pub extra: Vec<Derived>,
    #[serde(default)]
    pub all_keyword: bool,
    /// Used when no list is given (empty: not read).
    #[serde(default)]
    pub default: Vec<String>,
    pub supported: Option<Supported>,
    /// `tests-and-samples` when the installed files carry no device code.
    pub affects: Option<String>,
    /// Component whose targets decide this one's device code.
    pub follows: Option<String>,
    /// `stripped` when the project drops `:xnack±`/`:sramecc±`.
    pub features: Option<String>,
    /// What an empty list does.
    pub empty: Option<String>,
    /// What a target the compiler rejects does.
    pub unknown: Option<String>,
    pub variable_confidence: Option<String>,
    pub default_confidence: Option<String>,
    pub supported_confidence: Option<String>,
    pub empty_confidence: Option<String>,
    pub confidence: Option<String>,
    pub sources: Vec<String>,
    pub note: Option<String>,
}

impl Targets {
    pub fn supported(&self) -> &Supported {
        static ANY: Supported = Supported::Any;
        self.supported.as_ref().unwrap_or(&ANY)
    }
}

/// `optional_deps = [{ name, option, default }]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptionalDep {
    pub name: String,
    pub option: String,
    pub default: String,
}

/// `[[components.<Name>.kernel_families]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelFamilyUse {
    pub family: String,
    pub targets: TargetSet,
    pub requires: Option<String>,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
}

/// `[[components.<Name>.limits]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limit {
    pub targets: TargetSet,
    pub effect: String,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
}

/// `[[components.<Name>.options]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptionInfo {
    pub name: String,
    /// CMake spelling; empty = not read or empty.
    pub default: String,
    pub effect: String,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
}

/// `[components.<Name>]` of a release file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseComponent {
    pub deps: Vec<String>,
    #[serde(default)]
    pub optional_deps: Vec<OptionalDep>,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
    pub targets: Option<Targets>,
    #[serde(default)]
    pub kernel_families: Vec<KernelFamilyUse>,
    #[serde(default)]
    pub limits: Vec<Limit>,
    #[serde(default)]
    pub options: Vec<OptionInfo>,
}

impl ReleaseComponent {
    /// The release-file default of an option (`options` or `optional_deps`), if declared.
    pub fn option_default(&self, name: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|o| o.name == name)
            .map(|o| o.default.as_str())
            .or_else(|| {
                self.optional_deps
                    .iter()
                    .find(|d| d.option == name)
                    .map(|d| d.default.as_str())
            })
    }
}

/// `[release.compiler]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compiler {
    #[serde(default)]
    pub absent_targets: Vec<String>,
    #[serde(default)]
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
}

/// `[release]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseInfo {
    pub version: String,
    pub point_releases: Vec<String>,
    pub build_order: Vec<String>,
    pub therock_snapshot: String,
    pub hip_generic_fallback: bool,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
    #[serde(default)]
    pub compiler: Compiler,
}

/// `[[debian.packages]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DebianPackage {
    pub component: String,
    pub package: String,
    pub version: String,
    pub rocm: String,
    pub device_targets: Vec<String>,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
}

/// `[debian]`: the target list a Debian suite builds for, and what its packages contain.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Debian {
    pub suite: String,
    pub targets: Vec<String>,
    #[serde(default)]
    pub other_lists: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub packages: Vec<DebianPackage>,
    pub sources: Vec<String>,
    pub note: Option<String>,
}

/// One `rocm-X.Y.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Release {
    pub release: ReleaseInfo,
    pub components: BTreeMap<String, ReleaseComponent>,
    pub debian: Option<Debian>,
}

/// `[snapshot.ck_gate]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CkGate {
    pub supported: Vec<String>,
    pub disables: Vec<String>,
    #[serde(default)]
    pub sets: BTreeMap<String, String>,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
}

/// One `[[snapshot]]` of TheRock's target table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    pub id: String,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
    #[serde(default)]
    pub families: BTreeMap<String, Vec<String>>,
    /// Sub-project (TheRock's name) → targets removed from its list.
    #[serde(default)]
    pub exclude: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub incompatible: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub default_gpu_targets: BTreeMap<String, Vec<String>>,
    pub ck_gate: Option<CkGate>,
}

/// `[special_targets.<name>]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecialTarget {
    pub description: String,
    pub sources: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FamiliesFile {
    #[serde(default)]
    other_projects: Vec<String>,
    #[serde(default)]
    component_names: BTreeMap<String, String>,
    #[serde(default)]
    special_targets: BTreeMap<String, SpecialTarget>,
    snapshot: Vec<Snapshot>,
}

/// A condition of a pitfall (`when`), see docs/plan-knowledge.md.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Predicate {
    All(Vec<Predicate>),
    Any(Vec<Predicate>),
    Not(Box<Predicate>),
    /// The option's planned value (or its release default) is `is`.
    Option {
        component: Subject,
        name: String,
        is: String,
    },
    /// The plan passes the option explicitly with value `is` (by `--set` or a remedy): a
    /// default that happens to be right does not count, since recipes and packagers change it.
    OptionPassed {
        component: Subject,
        name: String,
        is: String,
    },
    /// The plan passes this variable non-empty.
    VariableSet {
        component: Subject,
        name: String,
    },
    /// The plan passes this variable empty.
    VariableEmpty {
        component: Subject,
        name: String,
    },
    RequestedAnyOf(Vec<String>),
    RequestedNoneOf(Vec<String>),
    RequestedAnyOutside(Vec<String>),
    RequestedAnyOutsideSupported(Subject),
    EffectiveEmpty(Subject),
    RequestedUnknownToCompiler,
    ComponentPlanned(String),
    Emitter(String),
    /// What the component does with a target the compiler rejects (`targets.unknown`).
    TargetUnknown(String),
}

/// The component a predicate is about: the one being evaluated, or a named one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    This,
    Named(String),
}

impl Subject {
    fn from_name(name: Option<&str>) -> Subject {
        match name {
            None | Some("self") => Subject::This,
            Some(n) => Subject::Named(n.to_owned()),
        }
    }

    /// The component name, given the one being evaluated.
    pub fn resolve<'a>(&'a self, this: &'a str) -> &'a str {
        match self {
            Subject::This => this,
            Subject::Named(n) => n,
        }
    }
}

fn strings(v: &toml::Value, what: &str) -> Result<Vec<String>, String> {
    let list = v
        .as_array()
        .ok_or_else(|| format!("{what} must be a list of strings"))?;
    list.iter()
        .map(|s| {
            s.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("{what} must be a list of strings"))
        })
        .collect()
}

impl Predicate {
    fn parse(v: &toml::Value) -> Result<Predicate, String> {
        let table = v.as_table().ok_or("a predicate must be a table")?;
        let component = match table.get("component") {
            None => None,
            Some(c) => Some(c.as_str().ok_or("`component` must be a string")?),
        };
        let keys: Vec<&str> = table
            .keys()
            .map(String::as_str)
            .filter(|k| !matches!(*k, "component" | "is"))
            .collect();
        let [key] = keys.as_slice() else {
            return Err(format!(
                "a predicate has exactly one key besides `component`, found {keys:?}"
            ));
        };
        let value = &table[*key];
        let text = || {
            value
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("`{key}` must be a string"))
        };
        let is = |what: &str| {
            table
                .get("is")
                .and_then(toml::Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| format!("`{what}` needs `is`"))
        };
        let list = |what| -> Result<Vec<Predicate>, String> {
            value
                .as_array()
                .ok_or_else(|| format!("`{what}` must be a list of predicates"))?
                .iter()
                .map(Predicate::parse)
                .collect()
        };
        Ok(match *key {
            "all" => Predicate::All(list("all")?),
            "any" => Predicate::Any(list("any")?),
            "not" => Predicate::Not(Box::new(Predicate::parse(value)?)),
            "option" => Predicate::Option {
                component: Subject::from_name(component),
                name: text()?,
                is: is("option")?,
            },
            "option_passed" => Predicate::OptionPassed {
                component: Subject::from_name(component),
                name: text()?,
                is: is("option_passed")?,
            },
            "variable_set" => Predicate::VariableSet {
                component: Subject::from_name(component),
                name: text()?,
            },
            "variable_empty" => Predicate::VariableEmpty {
                component: Subject::from_name(component),
                name: text()?,
            },
            "requested_any_of" => Predicate::RequestedAnyOf(strings(value, key)?),
            "requested_none_of" => Predicate::RequestedNoneOf(strings(value, key)?),
            "requested_any_outside" => Predicate::RequestedAnyOutside(strings(value, key)?),
            "requested_any_outside_supported" => {
                Predicate::RequestedAnyOutsideSupported(Subject::from_name(Some(&text()?)))
            }
            "effective_empty" => Predicate::EffectiveEmpty(Subject::from_name(Some(&text()?))),
            "requested_unknown_to_compiler" => Predicate::RequestedUnknownToCompiler,
            "component_planned" => Predicate::ComponentPlanned(text()?),
            "emitter" => Predicate::Emitter(text()?),
            "target_unknown" => Predicate::TargetUnknown(text()?),
            other => return Err(format!("unknown predicate `{other}`")),
        })
    }

    /// Components a predicate names explicitly.
    fn named_components<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Predicate::All(l) | Predicate::Any(l) => l.iter().for_each(|p| p.named_components(out)),
            Predicate::Not(p) => p.named_components(out),
            Predicate::Option {
                component: Subject::Named(c),
                ..
            }
            | Predicate::OptionPassed {
                component: Subject::Named(c),
                ..
            }
            | Predicate::VariableSet {
                component: Subject::Named(c),
                ..
            }
            | Predicate::VariableEmpty {
                component: Subject::Named(c),
                ..
            }
            | Predicate::RequestedAnyOutsideSupported(Subject::Named(c))
            | Predicate::EffectiveEmpty(Subject::Named(c))
            | Predicate::ComponentPlanned(c) => out.push(c),
            _ => {}
        }
    }
}

/// What a planner can do about a pitfall.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "action", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Remedy {
    SetOption {
        component: String,
        option: String,
        value: String,
    },
    UnsetOption {
        component: String,
        option: String,
    },
    /// `value = "planned"`: the planned list.
    SetVariable {
        component: String,
        variable: String,
        value: String,
    },
    DropUnsupportedTargets {
        component: String,
    },
    SkipComponent {
        component: String,
    },
    AddTarget {
        component: String,
        target: String,
    },
    Note {
        text: String,
    },
}

impl Remedy {
    /// The component the remedy acts on, `self` resolved.
    pub fn component<'a>(&'a self, this: &'a str) -> Option<&'a str> {
        let c = match self {
            Remedy::SetOption { component, .. }
            | Remedy::UnsetOption { component, .. }
            | Remedy::SetVariable { component, .. }
            | Remedy::DropUnsupportedTargets { component }
            | Remedy::SkipComponent { component }
            | Remedy::AddTarget { component, .. } => component.as_str(),
            Remedy::Note { .. } => return None,
        };
        Some(if c == "self" { this } else { c })
    }
}

pub use rocpack_finding::Severity;

/// One `[[pitfall]]`.
#[derive(Debug, Clone)]
pub struct Pitfall {
    pub id: String,
    pub severity: Severity,
    pub releases: Vec<String>,
    pub components: Vec<String>,
    pub when: Predicate,
    pub effect: String,
    pub message: String,
    pub remedies: Vec<Remedy>,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPitfall {
    id: String,
    severity: Severity,
    releases: Vec<String>,
    components: Vec<String>,
    when: toml::Value,
    effect: String,
    message: String,
    #[serde(default)]
    remedies: Vec<Remedy>,
    sources: Vec<String>,
    confidence: Option<String>,
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PitfallsFile {
    pitfall: Vec<RawPitfall>,
}

/// The whole knowledge base.
#[derive(Debug)]
pub struct Knowledge {
    pub sources: BTreeMap<String, Source>,
    pub kernel_families: BTreeMap<String, KernelFamilyInfo>,
    pub components: BTreeMap<String, ComponentInfo>,
    /// By version ("6.4"), in ascending order.
    pub releases: BTreeMap<String, Release>,
    pub snapshots: Vec<Snapshot>,
    /// TheRock sub-project name → component, where they differ.
    pub therock_names: BTreeMap<String, String>,
    pub therock_other_projects: Vec<String>,
    pub special_targets: BTreeMap<String, SpecialTarget>,
    pub pitfalls: Vec<Pitfall>,
    /// What each build tool can express (`emitters.toml`).
    pub emitters: EmitterKnowledge,
    /// Tool name → what its package collection holds (`engines/<tool>.toml`).
    pub engines: BTreeMap<String, EngineFacts>,
    /// Spack's `[facts]` (`engines/spack.toml`), typed: what its recipes accept.
    pub spack_facts: SpackFacts,
    /// Every fact of a release file compared with the one derived from the component's sources
    /// (`derived/`); the derived value is the one the planner uses.
    pub derived: Vec<DerivedFact>,
}

fn parse<T: serde::de::DeserializeOwned>(file: &str, text: &str) -> Result<T, KbError> {
    toml::from_str(text).map_err(|e| kb_error(file, e.to_string()))
}

impl Knowledge {
    /// The embedded knowledge base, read once.
    ///
    /// # Errors
    /// A data file that does not parse or breaks a rule (see [`Knowledge::from_files`]).
    pub fn embedded() -> Result<&'static Knowledge, &'static KbError> {
        static KB: std::sync::OnceLock<Result<Knowledge, KbError>> = std::sync::OnceLock::new();
        KB.get_or_init(|| Knowledge::from_files(FILES)).as_ref()
    }

    /// Reads the knowledge base from `(file name, text)` pairs (the names of `data/`).
    ///
    /// # Errors
    /// A missing file, a file that does not parse, an unknown component, source, kernel family or
    /// snapshot named anywhere, a release whose build order lists a component before its
    /// dependencies.
    pub fn from_files(files: &[(&str, &str)]) -> Result<Knowledge, KbError> {
        let get = |name: &str| {
            files
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, t)| *t)
                .ok_or_else(|| kb_error(name, "missing"))
        };
        let sources: BTreeMap<String, Source> = parse("sources.toml", get("sources.toml")?)?;
        let comps: ComponentsFile = parse("components.toml", get("components.toml")?)?;
        let fams: FamiliesFile = parse("families.toml", get("families.toml")?)?;
        let pits: PitfallsFile = parse("pitfalls.toml", get("pitfalls.toml")?)?;
        let emitters: EmitterKnowledge = parse("emitters.toml", get("emitters.toml")?)?;
        // `(file, text, key)` for the files named `<prefix><key>.toml`.
        let family = |prefix: &'static str| {
            files.iter().filter_map(move |(name, text)| {
                let key = name.strip_prefix(prefix)?.strip_suffix(".toml")?;
                Some((*name, *text, key))
            })
        };
        let mut releases = BTreeMap::new();
        for (name, text, version) in family("rocm-") {
            let release: Release = parse(name, text)?;
            if release.release.version != version {
                return Err(kb_error(
                    name,
                    format!("[release].version is {:?}", release.release.version),
                ));
            }
            releases.insert(version.to_owned(), release);
        }
        let mut derived = Vec::new();
        for (name, text, _) in family("derived/") {
            let file = derived::read(name, text)?;
            if let Some(rc) = releases
                .get_mut(&file.release)
                .and_then(|r: &mut Release| r.components.get_mut(&file.component))
            {
                derived.extend(derived::apply(&file, rc));
            }
        }
        let mut engines = BTreeMap::new();
        for (name, text, tool) in family("engines/") {
            let facts: EngineFacts = parse(name, text)?;
            facts.check(tool).map_err(|e| kb_error(name, e))?;
            engines.insert(tool.to_owned(), facts);
        }
        let spack_facts: SpackFacts = engines
            .get("spack")
            .and_then(|e: &EngineFacts| e.facts.clone())
            .ok_or_else(|| kb_error("engines/spack.toml", "missing, or without [facts]"))?
            .try_into()
            .map_err(|e: toml::de::Error| kb_error("engines/spack.toml", e.to_string()))?;
        let mut pitfalls = Vec::new();
        for raw in pits.pitfall {
            let when = Predicate::parse(&raw.when)
                .map_err(|e| kb_error("pitfalls.toml", format!("pitfall {}: {e}", raw.id)))?;
            pitfalls.push(Pitfall {
                id: raw.id,
                severity: raw.severity,
                releases: raw.releases,
                components: raw.components,
                when,
                effect: raw.effect,
                message: raw.message,
                remedies: raw.remedies,
                sources: raw.sources,
                confidence: raw.confidence,
                note: raw.note,
            });
        }
        let kb = Knowledge {
            sources,
            kernel_families: comps.kernel_families,
            components: comps.component,
            releases,
            snapshots: fams.snapshot,
            therock_names: fams.component_names,
            therock_other_projects: fams.other_projects,
            special_targets: fams.special_targets,
            pitfalls,
            emitters,
            spack_facts,
            engines,
            derived,
        };
        kb.check()?;
        Ok(kb)
    }

    /// The rules the planner relies on (the Python checker holds the rest).
    fn check(&self) -> Result<(), KbError> {
        let source = |file: &str, at: &str, keys: &[String]| {
            for k in keys {
                if !self.sources.contains_key(k) {
                    return Err(kb_error(file, format!("{at}: unknown source {k:?}")));
                }
            }
            Ok(())
        };
        for (name, c) in &self.components {
            source("components.toml", &format!("component {name}"), &c.sources)?;
        }
        for (version, r) in &self.releases {
            let file = format!("rocm-{version}.toml");
            source(&file, "[release]", &r.release.sources)?;
            if self.snapshot(&r.release.therock_snapshot).is_none() {
                return Err(kb_error(
                    &file,
                    format!("unknown snapshot {:?}", r.release.therock_snapshot),
                ));
            }
            let mut seen = Vec::new();
            for name in &r.release.build_order {
                let Some(rc) = r.components.get(name) else {
                    return Err(kb_error(
                        &file,
                        format!("build_order names {name:?}, which has no [components.{name}]"),
                    ));
                };
                if !self.components.contains_key(name) {
                    return Err(kb_error(
                        &file,
                        format!("{name:?} is not in components.toml"),
                    ));
                }
                let at = format!("components.{name}");
                source(&file, &at, &rc.sources)?;
                let deps = rc
                    .deps
                    .iter()
                    .chain(rc.optional_deps.iter().map(|d| &d.name));
                for dep in deps {
                    if !seen.contains(&dep) {
                        return Err(kb_error(
                            &file,
                            format!("{at}: dependency {dep:?} is not built before it"),
                        ));
                    }
                }
                if let Some(t) = &rc.targets {
                    source(&file, &format!("{at}.targets"), &t.sources)?;
                    if let Some(f) = &t.follows {
                        if !r.components.contains_key(f) {
                            return Err(kb_error(
                                &file,
                                format!("{at}.targets follows unknown {f:?}"),
                            ));
                        }
                    }
                }
                for kf in &rc.kernel_families {
                    if !self.kernel_families.contains_key(&kf.family) {
                        return Err(kb_error(
                            &file,
                            format!("{at}: unknown kernel family {:?}", kf.family),
                        ));
                    }
                }
                seen.push(name);
            }
            if r.components.len() != r.release.build_order.len() {
                return Err(kb_error(&file, "a component is missing from build_order"));
            }
        }
        for p in &self.pitfalls {
            source("pitfalls.toml", &format!("pitfall {}", p.id), &p.sources)?;
            let mut named = Vec::new();
            p.when.named_components(&mut named);
            let remedies = p.remedies.iter().filter_map(|r| r.component("self"));
            for c in p
                .components
                .iter()
                .map(String::as_str)
                .chain(named)
                .chain(remedies)
            {
                if c != "self" && !self.components.contains_key(c) {
                    return Err(kb_error(
                        "pitfalls.toml",
                        format!("pitfall {}: unknown component {c:?}", p.id),
                    ));
                }
            }
            for r in &p.releases {
                if !self.releases.contains_key(r) {
                    return Err(kb_error(
                        "pitfalls.toml",
                        format!("pitfall {}: unknown release {r:?}", p.id),
                    ));
                }
            }
        }
        for (at, keys) in self.emitters.source_lists() {
            source("emitters.toml", &at, keys)?;
        }
        for (tool, facts) in &self.engines {
            if let Some(c) = facts
                .components
                .keys()
                .find(|c| !self.components.contains_key(*c))
            {
                return Err(kb_error(
                    &format!("engines/{tool}.toml"),
                    format!("[components.{c}]: not in components.toml"),
                ));
            }
        }
        let therock = &self.emitters.therock;
        let named = therock
            .feature
            .values()
            .flat_map(|f| f.components.iter())
            .chain(therock.option.iter().filter_map(|o| o.component.as_ref()));
        for c in named {
            if !self.components.contains_key(c) {
                return Err(kb_error(
                    "emitters.toml",
                    format!("[therock]: unknown component {c:?}"),
                ));
            }
        }
        Ok(())
    }

    /// A TheRock snapshot by id.
    pub fn snapshot(&self, id: &str) -> Option<&Snapshot> {
        self.snapshots.iter().find(|s| s.id == id)
    }

    /// The component a user's name means: the key or an alias, case-insensitively.
    pub fn component_named(&self, name: &str) -> Option<&str> {
        let n = name.trim();
        self.components
            .iter()
            .find(|(key, info)| {
                key.eq_ignore_ascii_case(n)
                    || info.aliases.iter().any(|a| a.eq_ignore_ascii_case(n))
            })
            .map(|(key, _)| key.as_str())
            .or_else(|| {
                self.therock_names
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(n))
                    .map(|(_, v)| v.as_str())
            })
    }

    /// The newest release (the default of `plan --release`).
    pub fn newest_release(&self) -> Option<&str> {
        self.releases
            .keys()
            .max_by_key(|v| version_key(v))
            .map(String::as_str)
    }

    /// TheRock's sub-project name for a component.
    pub fn therock_name<'a>(&'a self, component: &'a str) -> &'a str {
        self.therock_names
            .iter()
            .find(|(_, c)| c.as_str() == component)
            .map(|(k, _)| k.as_str())
            .unwrap_or(component)
    }
}

/// "6.10" sorts after "6.4".
pub fn version_key(v: &str) -> Vec<u32> {
    v.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_derived_file_is_embedded() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/derived");
        let mut on_disk = Vec::new();
        for sub in ["debian", "upstream"] {
            for e in std::fs::read_dir(dir.join(sub)).unwrap() {
                let name = e.unwrap().file_name().to_string_lossy().into_owned();
                if name.ends_with(".toml") {
                    on_disk.push(format!("derived/{sub}/{name}"));
                }
            }
        }
        on_disk.sort();
        let mut embedded: Vec<String> = FILES
            .iter()
            .filter(|(n, _)| n.starts_with("derived/"))
            .map(|(n, _)| (*n).to_owned())
            .collect();
        embedded.sort();
        assert_eq!(on_disk, embedded);
    }

    #[test]
    fn embedded_knowledge_base_loads() {
        let kb = Knowledge::embedded().unwrap();
        assert_eq!(
            kb.releases.keys().collect::<Vec<_>>(),
            ["6.0", "6.2", "6.4", "7.0", "7.1"]
        );
        assert_eq!(kb.newest_release(), Some("7.1"));
        assert!(
            kb.pitfalls
                .iter()
                .any(|p| p.id == "ck-instances-only-ignores-gpu-targets")
        );
        assert_eq!(kb.component_named("miopen"), Some("MIOpen"));
        assert_eq!(kb.component_named("CK"), Some("composable_kernel"));
        assert_eq!(kb.component_named("hip-clr"), Some("clr"));
        assert_eq!(kb.therock_name("RCCL"), "rccl");
    }

    #[test]
    fn broken_edits_are_errors() {
        let files: Vec<(&str, String)> = FILES.iter().map(|(n, t)| (*n, (*t).to_owned())).collect();
        let with = |file: &str, from: &str, to: &str| {
            let edited: Vec<(&str, String)> = files
                .iter()
                .map(|(n, t)| {
                    (
                        *n,
                        if *n == file {
                            t.replacen(from, to, 1)
                        } else {
                            t.clone()
                        },
                    )
                })
                .collect();
            let refs: Vec<(&str, &str)> = edited.iter().map(|(n, t)| (*n, t.as_str())).collect();
            Knowledge::from_files(&refs).unwrap_err().to_string()
        };
        let e = with(
            "rocm-6.4.toml",
            "deps = [\"rocPRIM\", \"clr\"]",
            "deps = [\"rocPRIM\", \"MIOpen\"]",
        );
        assert!(
            e.contains("rocm-6.4.toml") && e.contains("\"MIOpen\" is not built before it"),
            "{e}"
        );
        let e = with(
            "pitfalls.toml",
            "when = { all = [{ requested_unknown_to_compiler = true }",
            "when = { all = [{ requested_sometimes = true }",
        );
        assert!(e.contains("unknown predicate `requested_sometimes`"), "{e}");
        let e = with("rocm-7.1.toml", "version = \"7.1\"", "version = \"7.2\"");
        assert!(e.contains("[release].version"), "{e}");
    }
}
