//! `emitters.toml`: what Spack, Gentoo, nixpkgs and TheRock can express of a plan (variants,
//! USE flags, derivation arguments, THEROCK_* variables), read by [`crate::emit`].

use std::collections::BTreeMap;

use serde::Deserialize;

/// A plan option as one tool sees it (`[[...option]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOption {
    /// The plan's CMake option.
    pub option: String,
    /// TheRock only: the component the option belongs to.
    pub component: Option<String>,
    /// The tool's knob: Spack variant, Gentoo USE flag, nixpkgs argument or TheRock variable.
    #[serde(
        alias = "variant",
        alias = "flag",
        alias = "argument",
        alias = "variable"
    )]
    pub knob: Option<String>,
    /// The value the recipe always passes itself.
    pub fixed: Option<String>,
    /// With `fixed`: only when one of these targets is planned.
    #[serde(default)]
    pub fixed_when: Vec<String>,
    /// Release lines the entry holds for (`None`: all).
    pub releases: Option<Vec<String>>,
    /// Gentoo: the flag is allowed only when one of these targets is enabled (REQUIRED_USE
    /// `flag? ( || ( amdgpu_targets_... ) )`).
    #[serde(default)]
    pub requires_targets: Vec<String>,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
}

impl ToolOption {
    /// Whether the entry holds for a release line.
    pub fn holds_for(&self, release: &str) -> bool {
        self.releases
            .as_ref()
            .is_none_or(|r| r.iter().any(|x| x == release))
    }
}

/// The first entry for `option` that holds for `release`.
pub fn find_option<'a>(
    options: &'a [ToolOption],
    option: &str,
    release: &str,
) -> Option<&'a ToolOption> {
    options
        .iter()
        .find(|o| o.option == option && o.holds_for(release))
}

/// `[spack.package.<name>]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpackPackage {
    /// The recipe has an `amdgpu_target` variant that becomes the target list.
    #[serde(default)]
    pub amdgpu_target: bool,
    /// The variant's values when the recipe lists its own (else `[spack].amdgpu_target_values`).
    pub amdgpu_target_values: Option<Vec<String>>,
    /// Packages the recipe gives its own `amdgpu_target`, value by value.
    #[serde(default)]
    pub propagates: Vec<String>,
    /// The target list the recipe hard-codes (no variant).
    pub fixed_targets: Option<Vec<String>>,
    /// Newest version in the copy that was read.
    pub newest: Option<String>,
    /// `false`: not given as a spec of its own.
    pub root: Option<bool>,
    #[serde(default)]
    pub option: Vec<ToolOption>,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
}

/// `[spack]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpackInfo {
    /// `ROCmPackage.amdgpu_targets`.
    pub amdgpu_target_values: Vec<String>,
    /// The operator for "exactly these values" of a multi-valued variant (`:=`).
    pub exact_operator: String,
    pub sources: Vec<String>,
    pub note: Option<String>,
    #[serde(default)]
    pub package: BTreeMap<String, SpackPackage>,
}

/// `[gentoo.package."<atom>"]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GentooPackage {
    /// Release line -> the `amdgpu_targets_*` flags the ebuild declares, when not the eclass list.
    #[serde(default)]
    pub targets: BTreeMap<String, Vec<String>>,
    /// Release lines whose ebuild does not require a target (no ROCM_REQUIRED_USE).
    #[serde(default)]
    pub optional_targets: Vec<String>,
    #[serde(default)]
    pub option: Vec<ToolOption>,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
}

/// `[gentoo]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GentooInfo {
    /// The USE_EXPAND variable (`AMDGPU_TARGETS`).
    pub variable: String,
    /// ROCm release lines ::gentoo has ebuilds of (empty: not known).
    #[serde(default)]
    pub releases: Vec<String>,
    /// Release line -> the `amdgpu_targets_*` flags rocm.eclass declares.
    #[serde(default)]
    pub targets: BTreeMap<String, Vec<String>>,
    pub sources: Vec<String>,
    pub note: Option<String>,
    #[serde(default)]
    pub package: BTreeMap<String, GentooPackage>,
}

/// `[nix.package.<attr>]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NixPackage {
    /// The derivation takes the target-list argument.
    #[serde(default)]
    pub gpu_targets: bool,
    /// Attributes to override instead of the key, the first one present in the scope wins.
    #[serde(default)]
    pub attrs: Vec<String>,
    #[serde(default)]
    pub option: Vec<ToolOption>,
    /// Arguments nixpkgs only accepts on under a condition on another component's targets.
    #[serde(default)]
    pub requires: Vec<NixRequirement>,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
}

/// `[[nix.package.<attr>.requires]]`: `argument = true` only when `component` is built for a
/// target starting with `target_prefix` (nixpkgs marks the component broken otherwise).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NixRequirement {
    pub argument: String,
    /// The rocpack component (components.toml name).
    pub component: String,
    pub target_prefix: String,
    pub sources: Vec<String>,
    pub note: Option<String>,
}

/// `[nix]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NixInfo {
    /// The package set (`rocmPackages`).
    pub scope: String,
    /// The target-list argument (`gpuTargets`).
    pub argument: String,
    pub sources: Vec<String>,
    pub note: Option<String>,
    #[serde(default)]
    pub package: BTreeMap<String, NixPackage>,
}

/// `[therock.feature.<NAME>]`: `THEROCK_ENABLE_<NAME>`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TheRockFeature {
    /// Components the feature builds, together.
    pub components: Vec<String>,
    /// Features it requires (turned back on while it is on).
    #[serde(default)]
    pub requires: Vec<String>,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
}

/// `[therock]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TheRockInfo {
    /// `THEROCK_AMDGPU_FAMILIES`: every selection, targets included (each is a family of its
    /// own name).
    pub families_variable: String,
    /// `THEROCK_AMDGPU_DIST_BUNDLE_NAME`, required when more than one family or target is
    /// selected.
    pub bundle_variable: String,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
    pub note: Option<String>,
    #[serde(default)]
    pub feature: BTreeMap<String, TheRockFeature>,
    #[serde(default)]
    pub option: Vec<ToolOption>,
}

impl TheRockInfo {
    /// The feature that builds a component.
    pub fn feature_of(&self, component: &str) -> Option<(&str, &TheRockFeature)> {
        self.feature
            .iter()
            .find(|(_, f)| f.components.iter().any(|c| c == component))
            .map(|(n, f)| (n.as_str(), f))
    }
}

/// The whole of `emitters.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmitterKnowledge {
    pub spack: SpackInfo,
    pub gentoo: GentooInfo,
    pub nix: NixInfo,
    pub therock: TheRockInfo,
}

impl EmitterKnowledge {
    /// Every `sources` list in the file, with where it is, for the knowledge-base check.
    pub(crate) fn source_lists(&self) -> Vec<(String, &[String])> {
        let mut out: Vec<(String, &[String])> = Vec::new();
        out.push(("[spack]".to_owned(), &self.spack.sources));
        for (n, p) in &self.spack.package {
            out.push((format!("[spack.package.{n}]"), &p.sources));
            for o in &p.option {
                out.push((
                    format!("[spack.package.{n}] option {}", o.option),
                    &o.sources,
                ));
            }
        }
        out.push(("[gentoo]".to_owned(), &self.gentoo.sources));
        for (n, p) in &self.gentoo.package {
            out.push((format!("[gentoo.package.\"{n}\"]"), &p.sources));
            for o in &p.option {
                out.push((
                    format!("[gentoo.package.\"{n}\"] option {}", o.option),
                    &o.sources,
                ));
            }
        }
        out.push(("[nix]".to_owned(), &self.nix.sources));
        for (n, p) in &self.nix.package {
            out.push((format!("[nix.package.{n}]"), &p.sources));
            for o in &p.option {
                out.push((format!("[nix.package.{n}] option {}", o.option), &o.sources));
            }
            for r in &p.requires {
                out.push((
                    format!("[nix.package.{n}] requires {}", r.argument),
                    &r.sources,
                ));
            }
        }
        out.push(("[therock]".to_owned(), &self.therock.sources));
        for (n, f) in &self.therock.feature {
            out.push((format!("[therock.feature.{n}]"), &f.sources));
        }
        for o in &self.therock.option {
            out.push((format!("[[therock.option]] {}", o.option), &o.sources));
        }
        out
    }
}
