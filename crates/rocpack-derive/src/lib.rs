//! Derives a ROCm component's build facts from its own sources: its `CMakeLists.txt` is evaluated
//! with rocpack's CMake interpreter ([`rocpack_cmake::project`]) once per input scenario,
//! and the facts are read off what the evaluations did.
//!
//! ```no_run
//! use std::path::Path;
//! use rocpack_derive::{Inputs, derive};
//! let facts = derive(&Inputs {
//!     source_dir: Path::new("rocblas-6.4.4"),
//!     component: "rocBLAS".into(),
//!     origin: "debian:rocblas 6.4.4-4".into(),
//!     note: None,
//!     sets: vec![],
//!     ck_targets: vec![],
//! })?;
//! print!("{}", facts.to_toml()?);
//! # Ok::<(), rocpack_derive::Error>(())
//! ```
//!
//! # Scenarios
//! - `defaults`: only the caller's `--set` entries. Gives the default target lists, the options
//!   and cache variables with their defaults, the lists `rocm_check_target_ids` checks, and the
//!   dependencies found with the default options.
//! - one per target variable ([`TARGET_VARIABLES`]) set to `gfx1030;gfx9999` (`gfx9999` stands
//!   for a target no compiler knows): whether the project reads the variable, and whether an
//!   unknown target is dropped or reaches the compiler.
//! - one per pair of variables it reads, set to different targets: which one wins.
//! - `all-options-on`: every `BOOL` option ON, to find the dependencies options enable.
//! - for composable_kernel, one per `--ck-target`: the instance directories and libraries built.
//!
//! # Stand-ins
//! `cmake_dependent_option` is CMake's own module (CMakeDependentOption), written out in the
//! prelude as the module defines it (without its cache bookkeeping). rocm-cmake's
//! `rocm_check_target_ids` (not part of a component's tree) keeps the targets the
//! compiler accepts, one `check_cxx_compiler_flag` each; here it keeps every target but
//! `gfx9999`. A project's own definition replaces the stand-in. Nothing else is assumed: what
//! the evaluator cannot know (compiler checks, `execute_process`, optional `find_package`
//! results) is unknown, and every fact that depends on it says so instead of giving a value.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rocpack_cmake::project::{Call, DeclKind, ProjectOptions, ProjectRun, Value, evaluate_project};
use serde::Serialize;

/// The target variables whose precedence is derived.
pub const TARGET_VARIABLES: &[&str] = &[
    "GPU_TARGETS",
    "AMDGPU_TARGETS",
    "GPU_ARCHS",
    "CMAKE_HIP_ARCHITECTURES",
    "Tensile_ARCHITECTURE",
];

/// The stand-in for a target no compiler knows.
pub const UNKNOWN_TARGET: &str = "gfx9999";
/// The known target of the probes.
const PROBE: &str = "gfx1030";
/// The second target of the precedence probes.
const PROBE_B: &str = "gfx1100";

/// Variables a `find_package()` could set that are undefined for a distribution build:
/// rocm-cmake sets `ROCM_PLATFORM_VERSION` only when the install prefix or its own path
/// contains `rocm-<version>`.
const UNDEFINED: &[&str] = &["ROCM_PLATFORM_VERSION"];

/// Where composable_kernel's instance directories are.
pub const CK_INSTANCE_DIR: &str = "library/src/tensor_operation_instance/gpu";

/// Commands whose calls are recorded.
const RECORD: &[&str] = &[
    "find_package",
    "find_dependency",
    "rocm_package_add_dependencies",
    "rocm_check_target_ids",
    "add_library",
    "add_subdirectory",
    "set_source_files_properties",
    "target_compile_options",
    "add_compile_options",
    "target_link_libraries",
    "set_target_properties",
    "set_property",
    "project",
    "enable_language",
];

const PRELUDE: &str = r#"
function(rocm_check_target_ids VAR)
  cmake_parse_arguments(PARSE "" "" "TARGETS" ${ARGN})
  set(_rocpack_kept)
  foreach(_rocpack_t IN LISTS PARSE_TARGETS)
    if(NOT _rocpack_t MATCHES "^gfx9999")
      list(APPEND _rocpack_kept "${_rocpack_t}")
    endif()
  endforeach()
  set(${VAR} "${_rocpack_kept}" PARENT_SCOPE)
endfunction()
macro(cmake_dependent_option option doc default depends force)
  set(_rocpack_available 1)
  foreach(_rocpack_d ${depends})
    string(REGEX REPLACE " +" ";" _rocpack_dep "${_rocpack_d}")
    if(${_rocpack_dep})
    else()
      set(_rocpack_available 0)
    endif()
  endforeach()
  if(_rocpack_available)
    option(${option} "${doc}" "${default}")
  else()
    set(${option} "${force}")
  endif()
endmacro()
"#;

/// What to derive from.
#[derive(Debug, Clone)]
pub struct Inputs<'a> {
    pub source_dir: &'a Path,
    /// The component as rocpack's knowledge base names it.
    pub component: String,
    /// `upstream:ROCm/rocBLAS@rocm-6.2.0 <commit>` or `debian:rocblas 6.4.4-4`.
    pub origin: String,
    /// A remark about the source (for example Debian patches that could not be applied).
    pub note: Option<String>,
    /// Cache entries every scenario starts from (`-D`).
    pub sets: Vec<(String, String)>,
    /// composable_kernel: the `GPU_TARGETS` values to evaluate the instance libraries for.
    pub ck_targets: Vec<String>,
}

/// Why deriving failed as a whole.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot evaluate {path}: {source}")]
    Evaluate {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write the facts as TOML: {0}")]
    Toml(#[from] toml::ser::Error),
}

/// A value that may not be derivable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Derived<T> {
    Value(T),
    NotDerivable { not_derivable: String },
}

/// The facts of one component, as written to `data/derived`.
#[derive(Debug, Clone, Serialize)]
pub struct Facts {
    pub schema: u32,
    pub component: String,
    pub origin: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The `--set` entries every scenario started from.
    pub inputs: Vec<String>,
    pub targets: TargetFacts,
    pub options: Vec<OptionFact>,
    pub dependencies: Vec<DependencyFact>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ck_instances: Vec<CkBuild>,
    /// What the default evaluation could not follow (one line each, first 40).
    pub not_evaluated: Vec<String>,
}

/// Target-list facts.
#[derive(Debug, Clone, Serialize)]
pub struct TargetFacts {
    /// Target variables the project's own CMake code looks up and whose value changes what it
    /// ends with (hip's config, outside the tree, may read them too).
    pub reads: Vec<String>,
    /// The target variable the project assigns last with none given: its result list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_variable: Option<String>,
    /// The variables it reads, first wins when several are set (decided on the result list).
    pub precedence: Derived<Vec<String>>,
    /// Target variables the project never looks at.
    pub ignores: Vec<String>,
    /// What a target no compiler knows does when given in each variable the project reads.
    pub unknown_target: Vec<UnknownTarget>,
    /// Values with no target variable given: variable -> list and where it was last set.
    pub default: BTreeMap<String, Derived<ListAt>>,
    /// The lists `rocm_check_target_ids` is given with no target variable set.
    pub checked: Vec<ListAt>,
    /// The targets reaching `--offload-arch`/`HIP_ARCHITECTURES`, with no variable set.
    pub offload_arch_default: Vec<String>,
    pub scenarios: Vec<Scenario>,
}

/// `gfx9999` in one target variable: `dropped-by-compiler-check` (through
/// `rocm_check_target_ids`), `dropped-by-project` (the project's own list removed it) or
/// `reaches-compiler`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnknownTarget {
    pub variable: String,
    pub outcome: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// A list and the place that produced it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListAt {
    pub list: Vec<String>,
    pub at: String,
}

/// One evaluation with target variables set.
#[derive(Debug, Clone, Serialize)]
pub struct Scenario {
    pub set: BTreeMap<String, String>,
    /// Target variables at the end (undefined ones left out).
    pub result: BTreeMap<String, Derived<Vec<String>>>,
    pub offload_arch: Vec<String>,
}

/// An `option()` or cache variable.
#[derive(Debug, Clone, Serialize)]
pub struct OptionFact {
    pub name: String,
    /// `option` or `cache`.
    pub kind: String,
    #[serde(rename = "type")]
    pub cache_type: String,
    pub default: Derived<String>,
    pub at: String,
    /// The conditions the declaration sits under, innermost last.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub when: Vec<String>,
}

/// A package the project looks for.
#[derive(Debug, Clone, Serialize)]
pub struct DependencyFact {
    pub package: String,
    /// `find_package`, `find_dependency` or `rocm_package_add_dependencies`.
    pub how: String,
    pub required: bool,
    /// Required, reached with the default options, under no condition on an option.
    pub hard: bool,
    /// Reached when evaluating with the default options.
    pub with_defaults: bool,
    /// False when written in a block whose condition could not be evaluated (see `when`).
    pub evaluated: bool,
    /// The options in the conditions it sits under.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub enabled_by: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub when: Vec<String>,
    pub at: String,
}

/// composable_kernel built for one `GPU_TARGETS` value.
#[derive(Debug, Clone, Serialize)]
pub struct CkBuild {
    pub gpu_targets: String,
    /// Instance directories `add_subdirectory()` enters.
    pub directories: Derived<Vec<String>>,
    /// `device_*_operations` libraries created (installed).
    pub libraries: Vec<String>,
    pub instances: Vec<CkInstance>,
}

/// One instance library (an `OBJECT` library of an instance directory).
#[derive(Debug, Clone, Serialize)]
pub struct CkInstance {
    pub name: String,
    pub directory: String,
    /// Kernel kind (`xdl`, `wmma`, `dl`, `dpp`, `mha`, `fp8`, `other`) -> targets its sources
    /// are compiled for.
    pub kinds: BTreeMap<String, Vec<String>>,
    /// `per-source COMPILE_FLAGS` (the project's own choice per kernel kind) or
    /// `GPU_TARGETS at the call (hip::device)` (no per-source flags; hip's config adds one
    /// `--offload-arch` per target, outside the tree).
    pub targets_from: String,
    pub at: String,
}

impl Facts {
    /// The facts as TOML, stable: every list sorted or in evaluation order, maps sorted.
    ///
    /// # Errors
    /// When serialization fails (it does not for these types).
    pub fn to_toml(&self) -> Result<String, Error> {
        let body = toml::to_string_pretty(self)?;
        Ok(format!(
            "# Derived by rocpack-derive (scripts/derive-facts.sh) from the component's own CMakeLists;\n\
             # docs/plan-knowledge.md, \"Derived facts\", describes every field. Do not edit.\n{body}"
        ))
    }
}

/// One evaluation.
struct Run {
    run: ProjectRun,
    source_dir: String,
}

impl Run {
    fn strip(&self, s: &str) -> String {
        s.replace(&format!("{}/", self.source_dir), "")
            .replace(&self.source_dir, ".")
    }

    fn value_list(&self, v: &Value) -> Derived<Vec<String>> {
        match &v.unknown {
            Some(r) => Derived::NotDerivable {
                not_derivable: self.strip(r),
            },
            None => Derived::Value(split(&v.text)),
        }
    }

    /// Whether the project assigns the variable.
    fn assigned(&self, var: &str) -> bool {
        self.run.assigns.iter().any(|a| a.name == var)
    }

    fn finals(&self) -> BTreeMap<String, Derived<Vec<String>>> {
        self.run
            .finals
            .iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), self.value_list(v))))
            .collect()
    }

    /// Targets reaching the compiler: `--offload-arch=`/`--amdgpu-target=` arguments,
    /// `HIP_ARCHITECTURES` properties, and `CMAKE_HIP_ARCHITECTURES` when HIP is enabled.
    fn offload_arch(&self) -> Vec<String> {
        let mut out = BTreeSet::new();
        let mut hip = false;
        for c in self.run.calls.iter().filter(|c| c.evaluated) {
            if matches!(c.command.as_str(), "project" | "enable_language")
                && c.args.iter().any(|a| a.text == "HIP")
            {
                hip = true;
            }
            if c.command == "set_source_files_properties" {
                continue;
            }
            let mut prev_hip_prop = false;
            for a in &c.args {
                if a.unknown.is_some() {
                    prev_hip_prop = false;
                    continue;
                }
                for word in a.text.split_whitespace() {
                    for flag in ["--offload-arch=", "--amdgpu-target="] {
                        if let Some(t) = word.strip_prefix(flag) {
                            out.insert(t.to_owned());
                        }
                    }
                }
                if prev_hip_prop {
                    out.extend(split(&a.text));
                }
                prev_hip_prop = a.text == "HIP_ARCHITECTURES";
            }
        }
        if hip {
            if let Some(Some(v)) = self.run.finals.get("CMAKE_HIP_ARCHITECTURES") {
                if v.unknown.is_none() {
                    out.extend(split(&v.text));
                }
            }
        }
        out.into_iter().collect()
    }
}

fn split(s: &str) -> Vec<String> {
    s.split(';')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

fn place(at: &rocpack_cmake::project::Place) -> String {
    format!("{}:{}", at.file, at.line)
}

fn evaluate(inputs: &Inputs, extra: &[(String, String)]) -> Result<Run, Error> {
    let mut cache = inputs.sets.clone();
    for (k, v) in extra {
        cache.retain(|(n, _)| n != k);
        cache.push((k.clone(), v.clone()));
    }
    let run = evaluate_project(&ProjectOptions {
        source_dir: inputs.source_dir,
        cache: &cache,
        prelude: PRELUDE,
        record: RECORD,
        watch: TARGET_VARIABLES,
        undefined: UNDEFINED,
    })
    .map_err(|source| Error::Evaluate {
        path: inputs.source_dir.to_path_buf(),
        source,
    })?;
    let source_dir = std::fs::canonicalize(inputs.source_dir)
        .unwrap_or_else(|_| inputs.source_dir.to_path_buf())
        .to_string_lossy()
        .into_owned();
    Ok(Run { run, source_dir })
}

/// Derives the facts of one component.
///
/// # Errors
/// When the source tree has no readable top-level `CMakeLists.txt`.
pub fn derive(inputs: &Inputs) -> Result<Facts, Error> {
    let defaults = evaluate(inputs, &[])?;
    let targets = target_facts(inputs, &defaults)?;
    let options = option_facts(&defaults);
    let on: Vec<(String, String)> = options
        .iter()
        .filter(|o| o.kind == "option")
        .filter(|o| !inputs.sets.iter().any(|(k, _)| *k == o.name))
        .map(|o| (o.name.clone(), "ON".to_owned()))
        .collect();
    let all_on = evaluate(inputs, &on)?;
    let option_names: BTreeSet<&str> = options.iter().map(|o| o.name.as_str()).collect();
    let dependencies = dependency_facts(&defaults, &all_on, &option_names);
    let ck_instances = if inputs.source_dir.join(CK_INSTANCE_DIR).is_dir() {
        ck_facts(inputs)?
    } else {
        Vec::new()
    };
    let mut not_evaluated: Vec<String> = defaults
        .run
        .notes
        .iter()
        .map(|f| {
            let file = defaults.strip(&f.file.to_string_lossy());
            let line = f
                .details
                .get("line")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0);
            format!("{file}:{line}: {}", defaults.strip(&f.message))
        })
        .collect();
    not_evaluated.truncate(40);
    Ok(Facts {
        schema: 1,
        component: inputs.component.clone(),
        origin: inputs.origin.clone(),
        note: inputs.note.clone(),
        inputs: inputs
            .sets
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect(),
        targets,
        options,
        dependencies,
        ck_instances,
        not_evaluated,
    })
}

fn contains(d: &Derived<Vec<String>>, t: &str) -> bool {
    matches!(d, Derived::Value(l) if l.iter().any(|x| x == t || x.split(':').next() == Some(t)))
}

fn target_facts(inputs: &Inputs, defaults: &Run) -> Result<TargetFacts, Error> {
    let default_finals = defaults.finals();
    let mut default = BTreeMap::new();
    for (var, v) in &defaults.run.finals {
        let Some(v) = v else { continue };
        let at = defaults
            .run
            .assigns
            .iter()
            .rev()
            .find(|a| a.name == *var)
            .map(|a| place(&a.at))
            .unwrap_or_else(|| "cache (--set)".to_owned());
        default.insert(
            var.clone(),
            match defaults.value_list(v) {
                Derived::Value(list) => Derived::Value(ListAt { list, at }),
                Derived::NotDerivable { not_derivable } => Derived::NotDerivable { not_derivable },
            },
        );
    }
    let checked = check_calls(defaults);
    // The project's result list: the target variable it assigns last with no variable given.
    let result_var: Option<String> = defaults
        .run
        .assigns
        .iter()
        .rev()
        .find(|a| a.value.as_ref().is_some_and(|v| v.unknown.is_none()))
        .map(|a| a.name.clone());
    let mut scenarios = Vec::new();
    let mut reads = Vec::new();
    let mut ignores = Vec::new();
    let mut unknown_target = Vec::new();
    for var in TARGET_VARIABLES {
        if inputs.sets.iter().any(|(k, _)| k == var) {
            continue;
        }
        let probe = format!("{PROBE};{UNKNOWN_TARGET}");
        let run = evaluate(inputs, &[((*var).to_owned(), probe.clone())])?;
        let result = run.finals();
        let offload = run.offload_arch();
        // The variable is read when the probe changes what the project ends with: another
        // target variable, the targets reaching the compiler, or the variable itself
        // rewritten from the value given.
        let default_offload = defaults.offload_arch();
        let changed = result.iter().any(|(k, v)| default_finals.get(k) != Some(v))
            || default_finals.keys().any(|k| !result.contains_key(k))
            || offload != default_offload;
        let changed = changed && run.run.reads.iter().any(|r| r == var);
        if changed {
            reads.push((*var).to_owned());
            let outputs: Vec<&Derived<Vec<String>>> = match &result_var {
                Some(r) => result.get(r).into_iter().collect(),
                None => result.values().collect(),
            };
            let reaches = outputs.iter().any(|v| contains(v, UNKNOWN_TARGET))
                || offload.iter().any(|t| t == UNKNOWN_TARGET);
            let checked_here = check_calls(&run)
                .into_iter()
                .find(|c| c.list.iter().any(|t| t == UNKNOWN_TARGET));
            let (outcome, at) = if reaches {
                ("reaches-compiler", None)
            } else if let Some(c) = checked_here {
                ("dropped-by-compiler-check", Some(c.at))
            } else {
                ("dropped-by-project", first_drop(&run))
            };
            unknown_target.push(UnknownTarget {
                variable: (*var).to_owned(),
                outcome: outcome.to_owned(),
                at,
            });
        } else {
            ignores.push((*var).to_owned());
        }
        scenarios.push(Scenario {
            set: BTreeMap::from([((*var).to_owned(), probe)]),
            result,
            offload_arch: offload,
        });
    }
    // Pairwise precedence: the winner's target is the one the project ends with.
    let mut wins: BTreeMap<String, usize> = reads.iter().map(|r| (r.clone(), 0)).collect();
    let mut precedence_unknown = None;
    for (i, a) in reads.iter().enumerate() {
        for b in reads.iter().skip(i + 1) {
            let set = [
                (a.clone(), PROBE.to_owned()),
                (b.clone(), PROBE_B.to_owned()),
            ];
            let run = evaluate(inputs, &set)?;
            let result = run.finals();
            // The result is what the project writes: the variables it assigns, and the others
            // that are not the two inputs.
            let outputs: Vec<&Derived<Vec<String>>> = match &result_var {
                Some(r) => result.get(r).into_iter().collect(),
                None => result
                    .iter()
                    .filter(|(k, _)| (*k != a && *k != b) || run.assigned(k))
                    .map(|(_, v)| v)
                    .collect(),
            };
            let offload = run.offload_arch();
            let has =
                |t: &str| outputs.iter().any(|v| contains(v, t)) || offload.iter().any(|o| o == t);
            let a_wins = has(PROBE) && !has(PROBE_B);
            let b_wins = has(PROBE_B) && !has(PROBE);
            if a_wins {
                *wins.entry(a.clone()).or_default() += 1;
            } else if b_wins {
                *wins.entry(b.clone()).or_default() += 1;
            } else {
                precedence_unknown.get_or_insert_with(|| {
                    format!(
                        "with {a}={PROBE} and {b}={PROBE_B} neither list alone reaches the result"
                    )
                });
            }
            scenarios.push(Scenario {
                set: set.into_iter().collect(),
                result,
                offload_arch: offload,
            });
        }
    }
    let precedence = match precedence_unknown {
        Some(r) => Derived::NotDerivable { not_derivable: r },
        None => {
            let mut order: Vec<(usize, usize, String)> = reads
                .iter()
                .enumerate()
                .map(|(i, r)| (usize::MAX - wins.get(r).copied().unwrap_or(0), i, r.clone()))
                .collect();
            order.sort();
            Derived::Value(order.into_iter().map(|(_, _, r)| r).collect())
        }
    };
    Ok(TargetFacts {
        result_variable: result_var,
        reads,
        precedence,
        ignores,
        unknown_target,
        default,
        checked,
        offload_arch_default: defaults.offload_arch(),
        scenarios,
    })
}

/// The `TARGETS` lists of `rocm_check_target_ids` calls.
fn check_calls(run: &Run) -> Vec<ListAt> {
    let mut out: Vec<ListAt> = Vec::new();
    for c in run
        .run
        .calls
        .iter()
        .filter(|c| c.evaluated && c.command == "rocm_check_target_ids")
    {
        let mut list = Vec::new();
        let mut on = false;
        for a in c.args.iter().skip(1) {
            if a.text == "TARGETS" {
                on = true;
            } else if on {
                list.extend(split(&a.text));
            }
        }
        let item = ListAt {
            list,
            at: place(&c.at),
        };
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// Where a watched variable that held the unknown target first lost it.
fn first_drop(run: &Run) -> Option<String> {
    let mut had: BTreeMap<&str, bool> = BTreeMap::new();
    for a in &run.run.assigns {
        let has = a.value.as_ref().is_some_and(|v| {
            v.unknown.is_none() && split(&v.text).iter().any(|t| t == UNKNOWN_TARGET)
        });
        if had.get(a.name.as_str()).copied().unwrap_or(false) && !has {
            return Some(place(&a.at));
        }
        had.insert(&a.name, has);
    }
    None
}

fn option_facts(run: &Run) -> Vec<OptionFact> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for d in &run.run.decls {
        // The first declaration is the one whose default counts.
        if !seen.insert(d.name.clone()) {
            continue;
        }
        out.push(OptionFact {
            name: d.name.clone(),
            kind: match d.kind {
                DeclKind::Option => "option",
                DeclKind::Cache => "cache",
            }
            .to_owned(),
            cache_type: d.cache_type.clone(),
            default: match &d.default.unknown {
                Some(r) => Derived::NotDerivable {
                    not_derivable: run.strip(r),
                },
                None => Derived::Value(run.strip(&d.default.text)),
            },
            at: place(&d.at),
            when: d.conditions.iter().map(condition_text).collect(),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name).then(a.at.cmp(&b.at)));
    out
}

fn condition_text(c: &rocpack_cmake::project::Condition) -> String {
    if c.negated {
        format!("NOT ({}) at {}", c.text, place(&c.at))
    } else {
        format!("{} at {}", c.text, place(&c.at))
    }
}

fn dependency_facts(defaults: &Run, all_on: &Run, options: &BTreeSet<&str>) -> Vec<DependencyFact> {
    let mut out: BTreeMap<(String, String), DependencyFact> = BTreeMap::new();
    let in_defaults: BTreeSet<String> = dep_calls(defaults)
        .map(|(p, _, c)| format!("{p}@{}", place(&c.at)))
        .collect();
    // Both evaluations: the all-on one may stop early (a FATAL_ERROR for a combination of
    // options), and the default one is what a packager gets.
    for (package, how, call) in dep_calls(defaults).chain(dep_calls(all_on)) {
        let at = place(&call.at);
        let enabled_by: Vec<String> = options
            .iter()
            .filter(|o| {
                call.conditions.iter().any(|c| {
                    c.text
                        .split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                        .any(|w| w == **o)
                })
            })
            .map(|o| (*o).to_owned())
            .collect();
        let required = how == "rocm_package_add_dependencies"
            || call.args.iter().any(|a| a.text == "REQUIRED");
        let reached_by_default = in_defaults.contains(&format!("{package}@{at}"));
        let fact = DependencyFact {
            package: package.clone(),
            how: how.clone(),
            required,
            hard: required && reached_by_default && enabled_by.is_empty() && call.evaluated,
            with_defaults: reached_by_default,
            evaluated: call.evaluated,
            enabled_by,
            when: call.conditions.iter().map(condition_text).collect(),
            at: at.clone(),
        };
        out.entry((package, at)).or_insert(fact);
    }
    out.into_values().collect()
}

/// `(package, command, call)` for every dependency declaration.
fn dep_calls(run: &Run) -> impl Iterator<Item = (String, String, &Call)> {
    run.run.calls.iter().flat_map(|c| {
        let mut v = Vec::new();
        match c.command.as_str() {
            "find_package" | "find_dependency" => {
                if let Some(p) = c.args.first().filter(|a| a.unknown.is_none()) {
                    v.push((p.text.clone(), c.command.clone(), c));
                }
            }
            "rocm_package_add_dependencies" => {
                let mut on = false;
                for a in &c.args {
                    if matches!(
                        a.text.as_str(),
                        "DEPENDS" | "SHARED_DEPENDS" | "STATIC_DEPENDS"
                    ) {
                        on = true;
                    } else if on && a.unknown.is_none() {
                        let name = a
                            .text
                            .split(|ch: char| {
                                ch.is_whitespace()
                                    || ch == '('
                                    || ch == '>'
                                    || ch == '='
                                    || ch == '<'
                            })
                            .next()
                            .unwrap_or_default()
                            .to_owned();
                        if !name.is_empty() {
                            v.push((name, c.command.clone(), c));
                        }
                    }
                }
            }
            _ => {}
        }
        v
    })
}

fn ck_facts(inputs: &Inputs) -> Result<Vec<CkBuild>, Error> {
    let mut out = Vec::new();
    for t in &inputs.ck_targets {
        let run = evaluate(inputs, &[("GPU_TARGETS".to_owned(), t.clone())])?;
        out.push(ck_build(&run, t));
    }
    Ok(out)
}

fn kinds_of(source: &str, directory: &str) -> Vec<&'static str> {
    let s = source.to_ascii_lowercase();
    let mut k = Vec::new();
    if s.contains("_xdl") {
        k.push("xdl");
    }
    if s.contains("_wmma") {
        k.push("wmma");
    }
    if s.contains("_dl_") || s.contains("_dl.") || s.contains("_dlops") {
        k.push("dl");
    }
    if s.contains("_dpp") {
        k.push("dpp");
    }
    if directory.contains("mha") || s.contains("mha") {
        k.push("mha");
    }
    if s.contains("_f8") || s.contains("fp8") || s.contains("_bf8") {
        k.push("fp8");
    }
    if k.is_empty() {
        k.push("other");
    }
    k
}

fn ck_build(run: &Run, gpu_targets: &str) -> CkBuild {
    let gpu_dir = CK_INSTANCE_DIR;
    let mut directories = Vec::new();
    let mut unknown = None;
    let mut flags: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    let mut instances = Vec::new();
    let mut libraries = BTreeSet::new();
    for c in run.run.calls.iter().filter(|c| c.evaluated) {
        let file = c.at.file.as_str();
        match c.command.as_str() {
            "add_subdirectory" if file == format!("{gpu_dir}/CMakeLists.txt") => {
                match c.args.first() {
                    Some(a) if a.unknown.is_none() => directories.push(a.text.clone()),
                    Some(a) => {
                        unknown.get_or_insert_with(|| {
                            run.strip(a.unknown.as_deref().unwrap_or_default())
                        });
                    }
                    None => {}
                }
            }
            "set_source_files_properties" if c.dir.starts_with(gpu_dir) => {
                let dir = c.dir.clone();
                let Some(pos) = c.args.iter().position(|a| a.text == "PROPERTIES") else {
                    continue;
                };
                let mut arches = Vec::new();
                let mut is_flags = false;
                for a in c.args.iter().skip(pos + 1) {
                    if a.text == "COMPILE_FLAGS" || a.text == "COMPILE_OPTIONS" {
                        is_flags = true;
                        continue;
                    }
                    if is_flags {
                        for w in a.text.split_whitespace() {
                            if let Some(t) = w.strip_prefix("--offload-arch=") {
                                arches.push(t.to_owned());
                            }
                        }
                    }
                }
                if !is_flags {
                    continue;
                }
                for src in c.args.iter().take(pos) {
                    flags.insert((dir.clone(), src.text.clone()), arches.clone());
                }
            }
            "add_library" if c.dir.starts_with(gpu_dir) => {
                let Some(name) = c.args.first() else { continue };
                let rest: Vec<&str> = c.args.iter().skip(1).map(|a| a.text.as_str()).collect();
                if rest.first() == Some(&"OBJECT") {
                    let dir = c.dir.clone();
                    let directory = dir
                        .strip_prefix(gpu_dir)
                        .unwrap_or(&dir)
                        .trim_start_matches('/')
                        .to_owned();
                    let mut kinds: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
                    // Without per-source flags an object library gets hip::device's
                    // --offload-arch list: GPU_TARGETS as the call sees it.
                    let at_call = c
                        .watched
                        .get("GPU_TARGETS")
                        .and_then(Option::as_ref)
                        .filter(|v| v.unknown.is_none())
                        .map(|v| split(&v.text));
                    let mut from_call = false;
                    for src in rest.iter().skip(1) {
                        let arches = match flags.get(&(dir.clone(), (*src).to_owned())) {
                            Some(a) => a.clone(),
                            None => {
                                from_call = true;
                                at_call.clone().unwrap_or_default()
                            }
                        };
                        for k in kinds_of(src, &directory) {
                            kinds
                                .entry(k.to_owned())
                                .or_default()
                                .extend(arches.iter().cloned());
                        }
                    }
                    instances.push(CkInstance {
                        name: name.text.clone(),
                        targets_from: if from_call {
                            "GPU_TARGETS at the call (hip::device)"
                        } else {
                            "per-source COMPILE_FLAGS"
                        }
                        .to_owned(),
                        directory,
                        kinds: kinds
                            .into_iter()
                            .map(|(k, v)| (k, v.into_iter().collect()))
                            .collect(),
                        at: place(&c.at),
                    });
                } else if name.text.starts_with("device_")
                    && name.text.ends_with("_operations")
                    && !rest.contains(&"ALIAS")
                    && !rest.contains(&"INTERFACE")
                {
                    libraries.insert(name.text.clone());
                }
            }
            _ => {}
        }
    }
    instances.sort_by(|a, b| a.directory.cmp(&b.directory).then(a.name.cmp(&b.name)));
    directories.sort();
    CkBuild {
        gpu_targets: gpu_targets.to_owned(),
        directories: match unknown {
            Some(r) => Derived::NotDerivable { not_derivable: r },
            None => Derived::Value(directories),
        },
        libraries: libraries.into_iter().collect(),
        instances,
    }
}
