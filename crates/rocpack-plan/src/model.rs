//! The plan: what `rocpack plan` decides and every emitter prints, and what `plan verify` checks
//! an install against. It serializes as the documented JSON plan (docs/json.md, "plan"); the
//! field names below are that schema.

use serde::{Deserialize, Serialize};

use crate::kb::{DeviceCode, Severity};

/// The processor part of a target ID (`gfx90a:xnack-` -> `gfx90a`).
pub(crate) fn processor(target: &str) -> &str {
    target.split(':').next().unwrap_or(target)
}

/// Processors of a target list, in order, without duplicates.
pub(crate) fn processors(targets: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in targets {
        let p = processor(t);
        if !out.iter().any(|x| x == p) {
            out.push(p.to_owned());
        }
    }
    out
}

/// Variables that carry a target list; every other setting is an option.
const TARGET_VARIABLES: &[&str] = &[
    "AMDGPU_TARGETS",
    "GPU_TARGETS",
    "GPU_ARCHS",
    "CMAKE_HIP_ARCHITECTURES",
    "Tensile_ARCHITECTURE",
];

/// The JSON plan's schema identifier; bumped on any incompatible change.
pub const SCHEMA: &str = "rocpack-plan/1";

/// The build tool a plan is made for: pitfalls and TheRock's exclusions depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Tool {
    Cmake,
    Spack,
    Gentoo,
    Nix,
    Therock,
}

impl Tool {
    /// Every tool, in the order the emitters' table lists them.
    pub const ALL: [Tool; 5] = [
        Tool::Cmake,
        Tool::Spack,
        Tool::Gentoo,
        Tool::Nix,
        Tool::Therock,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Tool::Cmake => "cmake",
            Tool::Spack => "spack",
            Tool::Gentoo => "gentoo",
            Tool::Nix => "nix",
            Tool::Therock => "therock",
        }
    }

    pub fn parse(s: &str) -> Option<Tool> {
        Some(match s {
            "cmake" => Tool::Cmake,
            "spack" => Tool::Spack,
            "gentoo" => Tool::Gentoo,
            "nix" => Tool::Nix,
            "therock" => Tool::Therock,
            _ => return None,
        })
    }
}

/// How a fact's `confidence` (approximate, secondary, unconfirmed, …) is shown next to every plan
/// line that rests on it: such a fact was not read at the release it describes.
pub fn unverified(confidence: &str) -> String {
    format!("unverified: {confidence}")
}

/// What the user asked for, as given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// `--gpu` target IDs.
    pub gpus: Vec<String>,
    /// `--family` names (TheRock families, `debian-<suite>`).
    pub families: Vec<String>,
    /// `--components`, as spelled upstream after matching; `None` = all of the release.
    pub components: Option<Vec<String>>,
    /// `--set COMPONENT:OPTION=VALUE` overrides.
    pub set: Vec<OptionOverride>,
}

/// One `--set COMPONENT:OPTION=VALUE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OptionOverride {
    pub component: String,
    pub option: String,
    pub value: String,
}

/// A plan for one ROCm release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// [`SCHEMA`].
    pub schema: String,
    /// rocpack's version.
    pub rocpack: String,
    /// Release line, e.g. "6.4".
    pub release: String,
    /// The X.Y.Z releases the knowledge covers.
    pub point_releases: Vec<String>,
    pub tool: Tool,
    pub request: Request,
    /// Requested targets, families expanded, in request order without duplicates.
    pub targets: Vec<String>,
    /// Where each family came from, when families were named.
    pub families: Vec<FamilyExpansion>,
    /// Every component of the plan, in build order.
    pub components: Vec<ComponentPlan>,
    /// Pitfalls that fired and planner findings, in build order of their component.
    pub findings: Vec<Finding>,
    pub summary: Summary,
}

/// `--family NAME` → targets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FamilyExpansion {
    pub family: String,
    pub targets: Vec<String>,
    /// Where the family is defined (TheRock snapshot id, `debian-sid`, ...).
    pub defined_by: String,
}

/// Built or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Build,
    Skip,
}

/// One component of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComponentPlan {
    /// Spelled as upstream spells it.
    pub name: String,
    pub status: Status,
    /// Why it is in the plan: "requested", or "needed by X, Y".
    pub why: String,
    /// Why it is skipped (with `status = skip`).
    pub skip_reason: Option<String>,
    pub device_code: DeviceCode,
    /// Components it needs at build time under the planned options.
    pub deps: Vec<String>,
    /// The variable the project reads first (`None`: no target selection).
    pub target_variable: Option<String>,
    /// The targets it is built for (`None`: no target selection).
    pub targets: Option<Vec<String>>,
    /// Requested targets it is not built for, and what that costs.
    pub excluded: Vec<Exclusion>,
    /// Targets the plan adds beyond the request, and why.
    pub added: Vec<Addition>,
    /// Which planned targets get which kind of device code.
    pub kernel_families: Vec<FamilyCoverage>,
    /// The exact settings to pass (CMake cache entries), in emission order.
    pub settings: Vec<Setting>,
    /// Processors whose device code `plan verify` expects in the installed files.
    pub expect_device_code: Vec<String>,
    /// Knowledge-base confidence of the target facts ("approximate", "unconfirmed", ...).
    pub confidence: Option<String>,
    pub sources: Vec<String>,
    /// The facts read from the component's own sources at the release that the plan rests on
    /// (`data/derived/`): which fact, the origin and `path:line`.
    #[serde(default)]
    pub derived: Vec<String>,
}

impl ComponentPlan {
    /// The planned value of a setting.
    pub fn setting(&self, name: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.value.as_str())
    }

    pub fn is_built(&self) -> bool {
        self.status == Status::Build
    }

    /// Whether a setting passes the component's target list (rather than an option).
    pub fn is_target_setting(&self, s: &Setting) -> bool {
        self.targets.is_some()
            && (TARGET_VARIABLES.contains(&s.name.as_str())
                || self.target_variable.as_deref() == Some(s.name.as_str()))
    }

    /// The option settings (not target variables), in emission order.
    pub fn option_settings(&self) -> impl Iterator<Item = &Setting> {
        self.settings
            .iter()
            .filter(move |s| !self.is_target_setting(s))
    }
}

/// A requested target a component is not built for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exclusion {
    pub target: String,
    pub reason: String,
    /// What a user of that GPU loses.
    pub loses: String,
    pub sources: Vec<String>,
}

/// A target added beyond the request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Addition {
    pub target: String,
    pub reason: String,
}

/// A kernel family and the planned targets that get it or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FamilyCoverage {
    pub family: String,
    /// Planned targets that get it.
    pub targets: Vec<String>,
    /// Planned targets that do not.
    pub without: Vec<String>,
    /// What enables it.
    pub requires: Option<String>,
    /// `false` when an option turns it off (DL_KERNELS).
    pub enabled: bool,
}

/// The type of a CMake cache entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum SettingKind {
    Bool,
    String,
}

/// One CMake cache entry to pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    pub name: String,
    pub value: String,
    pub kind: SettingKind,
    /// Why this value.
    pub why: String,
    /// Where the value comes from (what `why` says in words).
    #[serde(default)]
    pub origin: SettingOrigin,
}

/// Where a setting's value comes from. An emitter that may leave a setting to the recipe's own
/// default asks this, not the wording of `why`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SettingOrigin {
    /// The planned target list.
    Targets,
    /// The release's default for an optional dependency, left as it is.
    #[default]
    Default,
    /// `--set` on the command line.
    User,
    /// The remedy of a pitfall the plan resolved.
    Remedy {
        /// The pitfall's id.
        pitfall: String,
    },
    /// A rule of the build tool the plan is for (a TheRock gate).
    Tool,
    /// The planner turned an option off because its dependency is not built.
    Dependency,
}

impl SettingOrigin {
    /// Passed on purpose, so pinned even where the value equals the release's default.
    pub fn pins(&self) -> bool {
        matches!(
            self,
            SettingOrigin::User | SettingOrigin::Remedy { .. } | SettingOrigin::Tool
        )
    }
}

/// Open or dealt with by the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FindingStatus {
    /// Still true of the plan.
    Open,
    /// The plan applied a remedy.
    Resolved,
}

rocpack_finding::codes! {
    /// What the planner itself finds (pitfalls carry their own ids and severities, from
    /// crates/rocpack-plan/data/pitfalls.toml), with the severity each has unless it says otherwise
    /// (docs/diagnostics.md, "plan").
    pub enum PlanCode in "plan" {
        /// A component supports none of the requested targets.
        NoSupportedTarget = ("no-supported-target", Error),
        /// A component needs a dependency the plan does not build.
        DependencyNotBuilt = ("dependency-not-built", Error),
        /// An optional dependency is off because the plan does not build it.
        DependencyTurnedOff = ("dependency-turned-off", Info),
        /// A `--set` names an option the component does not have at the release.
        UnknownOption = ("unknown-option", Warning),
        /// The engine asked for (`--for`) has no recipe at the release.
        EngineLacksRelease = ("engine-lacks-release", Error),
    }
}

/// A pitfall that fired, or a planner finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The pitfall id (pitfalls.toml) or a planner code.
    pub id: String,
    pub severity: Severity,
    pub component: String,
    pub effect: String,
    pub message: String,
    pub status: FindingStatus,
    /// What the plan did about it.
    pub resolution: Option<String>,
    /// Remedies the knowledge base lists, as text.
    pub remedies: Vec<String>,
    pub sources: Vec<String>,
    pub confidence: Option<String>,
}

/// Counts over the plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub components: usize,
    pub built: usize,
    pub skipped: usize,
    /// Open errors: the plan cannot be built as asked.
    pub errors: usize,
    pub warnings: usize,
    pub resolved: usize,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::kb::{Knowledge, Remedy};

    /// Every variable the planner passes a target list in is recognised as one by the emitters,
    /// so a new `also` or `set-variable` name cannot quietly become an "option".
    #[test]
    fn every_target_variable_of_the_knowledge_base_is_known() {
        let kb = Knowledge::embedded().unwrap();
        for (version, r) in &kb.releases {
            for (name, rc) in &r.components {
                let Some(t) = &rc.targets else { continue };
                for v in &t.also {
                    assert!(
                        TARGET_VARIABLES.contains(&v.as_str()) || *v == t.variable,
                        "{version} {name}: {v}"
                    );
                }
            }
        }
        for p in &kb.pitfalls {
            for r in &p.remedies {
                if let Remedy::SetVariable { variable, .. } = r {
                    assert!(
                        TARGET_VARIABLES.contains(&variable.as_str()),
                        "{}: {variable}",
                        p.id
                    );
                }
            }
        }
    }
}
