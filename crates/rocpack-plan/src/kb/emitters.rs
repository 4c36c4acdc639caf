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

/// `[spack.package.<name>]`: what `data/engines/spack.toml` cannot say (which plan options are
/// variants, notes). Versions, the `amdgpu_target` variant and its propagation come from there.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpackPackage {
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
    /// The operator for "exactly these values" of a multi-valued variant (`:=`).
    pub exact_operator: String,
    pub sources: Vec<String>,
    pub note: Option<String>,
    #[serde(default)]
    pub package: BTreeMap<String, SpackPackage>,
}

/// `[facts]` of `engines/spack.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpackFacts {
    /// `amdgpu_target`.
    pub target_variant: String,
    /// Where ROCmPackage defines it (`path:line`).
    pub mixin: String,
    pub package: BTreeMap<String, SpackPackageFacts>,
    #[serde(default)]
    pub unsatisfiable: Vec<SpackUnsatisfiable>,
}

/// `[facts.package.<name>]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpackPackageFacts {
    /// package.py, relative to spack-packages.
    pub source: String,
    pub versions: Vec<String>,
    /// Release lines of `versions`.
    pub releases: Vec<String>,
    /// Definitions of `amdgpu_target`, `rocm` and the variants the emitter sets.
    #[serde(default)]
    pub variant: Vec<SpackVariant>,
    /// Dependencies that get the package's own `amdgpu_target` value by value.
    #[serde(default)]
    pub propagates: Vec<SpackPropagation>,
}

/// One `variant(...)` definition.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpackVariant {
    pub name: String,
    /// The `when=` spec ("" = always).
    pub when: String,
    pub source: String,
    pub default: String,
    pub multi: bool,
    pub sticky: bool,
    /// Disjoint value sets (`auto_or_any_combination_of`, `disjoint_sets`): values of two sets
    /// cannot be combined.
    #[serde(default)]
    pub sets: Vec<Vec<String>>,
    pub values: Option<Vec<String>>,
    /// Release lines with a version the definition's `when=` admits.
    pub releases: Vec<String>,
}

/// `depends_on("<dep> amdgpu_target=T", when="amdgpu_target=T <when>")` for every T.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpackPropagation {
    pub dep: String,
    /// The other conditions of `when=` ("+ck"; "" = none).
    pub when: String,
    /// `amdgpu_target=auto` propagates too.
    pub auto: bool,
    pub releases: Vec<String>,
    pub source: String,
}

/// A release line at which a package and a dependency of it pinned to the same line require
/// disjoint versions of a common dependency: Spack cannot concretize the package there.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpackUnsatisfiable {
    pub package: String,
    pub release: String,
    pub dep: String,
    pub common: String,
    pub package_requires: String,
    pub dep_requires: String,
    pub sources: Vec<String>,
}

/// The sentinel values of a target variant, which are not GPU targets.
const NOT_TARGETS: &[&str] = &["auto", "none"];

impl SpackPackageFacts {
    /// Whether a `when=` spec ("+rocm", "@6.3: ~ck", "") holds with the package's defaults; its
    /// version range is left to `releases`, anything else (`%cmake`, `key=value`) does not hold.
    fn condition_holds_by_default(&self, when: &str, release: &str) -> bool {
        when.split_whitespace().all(|c| {
            let (want, name) = match c.split_at_checked(1) {
                Some(("@", _)) => return true,
                Some(("+", n)) => ("True", n),
                Some(("~", n)) => ("False", n),
                _ => return false,
            };
            self.variant.iter().any(|v| {
                v.name == name && v.when.is_empty() && v.holds_for(release) && v.default == want
            })
        })
    }

    /// The definitions of `name` that apply at a release line with the package's defaults.
    pub fn variant_at(&self, name: &str, release: &str) -> Vec<&SpackVariant> {
        self.variant
            .iter()
            .filter(|v| {
                v.name == name
                    && v.holds_for(release)
                    && self.condition_holds_by_default(&v.when, release)
            })
            .collect()
    }

    /// The GPU targets `amdgpu_target` accepts at a release line (in every definition that
    /// applies), or `None` when the package has no such variant there.
    pub fn target_values(&self, variant: &str, release: &str) -> Option<Vec<&str>> {
        let defs = self.variant_at(variant, release);
        let (first, rest) = defs.split_first()?;
        let mut values: Vec<&str> = first.targets().collect();
        for d in rest {
            let other: Vec<&str> = d.targets().collect();
            values.retain(|v| other.contains(v));
        }
        Some(values)
    }

    /// The dependencies that get the package's `amdgpu_target` value by value at a release line.
    pub fn propagates_at(&self, release: &str) -> impl Iterator<Item = &SpackPropagation> {
        self.propagates
            .iter()
            .filter(move |p| p.releases.iter().any(|r| r == release))
    }
}

impl SpackVariant {
    fn holds_for(&self, release: &str) -> bool {
        self.releases.iter().any(|r| r == release)
    }

    /// Its values that are GPU targets (not `auto`/`none`).
    pub fn targets(&self) -> impl Iterator<Item = &str> {
        self.sets
            .iter()
            .flatten()
            .chain(self.values.iter().flatten())
            .map(String::as_str)
            .filter(|v| !NOT_TARGETS.contains(v))
    }
}

impl SpackFacts {
    /// Why Spack cannot concretize `package` at a release line, if the facts say it cannot.
    pub fn unsatisfiable(&self, package: &str, release: &str) -> Option<&SpackUnsatisfiable> {
        self.unsatisfiable
            .iter()
            .find(|u| u.package == package && u.release == release)
    }
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
