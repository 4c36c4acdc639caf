//! Verdicts: does a library run on a GPU, under a policy and an optional override?
//!
//! A library runs on a GPU only if every bundle in it has a code object the loader takes; the
//! library's verdict is the weakest over its bundles, and its reason is that bundle's.

use rocpack_amdgpu::TargetId;
use rocpack_amdgpu::compat::{self, Device, Policy, Rule, Selection, Verdict};
use rocpack_amdgpu::mach::GfxVersion;
use rocpack_offload::Loading;
use serde::Serialize;

use crate::library::{Bundle, Library, LibraryKind};

/// A GPU to check against.
#[derive(Debug, Clone, Serialize)]
pub struct Gpu {
    /// Exactly as the user gave it (or as detected).
    pub given: String,
    /// Its target ID, canonical, features concrete where known.
    pub target: TargetId,
    /// A marketing name, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// How to decide.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// The loader's rules.
    pub policy: Policy,
    /// HSA_OVERRIDE_GFX_VERSION.
    pub override_version: Option<GfxVersion>,
}

/// The verdict for one library on one GPU.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// The verdict.
    pub verdict: Verdict,
    /// The rule that decided (for the weakest bundle); `None` when no bundle was judged.
    pub rule: Option<Rule>,
    /// Why, naming the rule and the entry (for the weakest bundle).
    pub reason: String,
    /// The bundle the verdict comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
    /// The entry chosen in that bundle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// The kind of code the verdict rests on (that bundle's): `registered` fat binary or
    /// `module`-loaded code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub loading: Option<Loading>,
    /// Bundles per verdict: native, generic, policy, override, none.
    pub bundles: VerdictCounts,
    /// Warnings, such as an override that crosses ISA families.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// How many bundles got each verdict.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct VerdictCounts {
    pub native: usize,
    pub generic: usize,
    pub policy: usize,
    #[serde(rename = "override")]
    pub override_: usize,
    pub none: usize,
}

impl VerdictCounts {
    /// Counts one more verdict.
    pub fn add(&mut self, v: Verdict) {
        match v {
            Verdict::Native => self.native += 1,
            Verdict::Generic => self.generic += 1,
            Verdict::Policy => self.policy += 1,
            Verdict::Override => self.override_ += 1,
            Verdict::None => self.none += 1,
        }
    }

    /// `3 native, 1 none`: the non-zero counts, strongest verdict first.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (n, name) in [
            (self.native, "native"),
            (self.generic, "generic"),
            (self.policy, "policy"),
            (self.override_, "override"),
            (self.none, "none"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {name}"));
            }
        }
        parts.join(", ")
    }

    /// Total bundles counted.
    pub fn total(&self) -> usize {
        self.native + self.generic + self.policy + self.override_ + self.none
    }
}

/// The verdict for `lib` on `gpu`.
pub fn evaluate(lib: &Library, gpu: &Gpu, rules: &Rules) -> Cell {
    let mut cell = match &lib.kind {
        LibraryKind::TensileDir {
            component,
            indexed,
            all_arch_index,
        } => evaluate_tensile(lib, component, indexed, *all_arch_index, gpu, rules),
        _ => evaluate_bundles(lib.bundles.iter(), gpu, rules),
    };
    if let Some(first) = lib.unclassified.first() {
        let at = first
            .offset
            .map_or(String::new(), |o| format!(" at file offset {o:#x}"));
        let what = format!(
            "unclassified GPU code{at} ({} place{} in all; {})",
            lib.unclassified.len(),
            if lib.unclassified.len() == 1 { "" } else { "s" },
            first.message
        );
        if cell.bundles.total() == 0 && cell.rule.is_none() {
            // Nothing classified to judge: the verdict cannot say it runs.
            cell.reason = format!("holds {what}; rocpack cannot tell which GPUs it runs on");
        } else {
            cell.warnings
                .push(format!("also holds {what}, not counted in this verdict"));
        }
    }
    cell
}

fn select(bundle: &Bundle, gpu: &Gpu, rules: &Rules) -> Option<Selection> {
    if bundle.entries.is_empty() {
        return Some(Selection {
            verdict: Verdict::None,
            entry: None,
            target: None,
            rule: compat::Rule::NoMatch,
            reason: "The bundle has a host entry and no device code object for any GPU (built \
                     for none, or stripped); the runtime reports hipErrorNoBinaryForGpu for it."
                .to_owned(),
            warnings: Vec::new(),
        });
    }
    let entries: Vec<compat::Entry<'_>> = bundle
        .entries
        .iter()
        .map(|e| compat::Entry {
            target: &e.target,
            generic_version: e.generic_version,
            compressed: bundle.compressed,
        })
        .collect();
    let device = Device {
        target: gpu.target.clone(),
    };
    compat::select(&device, &entries, rules.policy, rules.override_version)
}

/// Whether the runtime's choice is the same for both bundles on any device: the same entries
/// (target, generic version, in order) and the same compression. [`select`] depends on nothing
/// else of a bundle.
fn same_choice(a: &Bundle, b: &Bundle) -> bool {
    a.compressed == b.compressed
        && a.entries.len() == b.entries.len()
        && a.entries
            .iter()
            .zip(&b.entries)
            .all(|(x, y)| x.generic_version == y.generic_version && x.target == y.target)
}

/// Distinct entry lists whose selections are remembered in one evaluation: a library's bundles
/// nearly always share one or two (every bundle of a fat binary is built for the same
/// targets), so a few cover them, and a hostile file with all different ones costs at most
/// this many comparisons per bundle.
const SELECTIONS_KEPT: usize = 8;

fn evaluate_bundles<'a>(
    bundles: impl Iterator<Item = &'a Bundle>,
    gpu: &Gpu,
    rules: &Rules,
) -> Cell {
    let mut counts = VerdictCounts::default();
    let mut weakest: Option<(&Bundle, Selection)> = None;
    let mut warnings: Vec<String> = Vec::new();
    // Bundles already judged, with their selection: a bundle with the same entries gets the
    // same one without building its reason again.
    let mut seen: Vec<(&Bundle, Option<Selection>)> = Vec::new();
    for b in bundles {
        let i = match seen.iter().position(|(k, _)| same_choice(k, b)) {
            Some(i) => i,
            None => {
                if seen.len() == SELECTIONS_KEPT {
                    seen.remove(0);
                }
                seen.push((b, select(b, gpu, rules)));
                seen.len() - 1
            }
        };
        let Some(s) = seen.get(i).and_then(|(_, s)| s.as_ref()) else {
            continue;
        };
        counts.add(s.verdict);
        for w in &s.warnings {
            if !warnings.contains(w) {
                warnings.push(w.clone());
            }
        }
        if weakest.as_ref().is_none_or(|(_, w)| s.verdict < w.verdict) {
            weakest = Some((b, s.clone()));
        }
    }
    let Some((bundle, s)) = weakest else {
        return Cell {
            verdict: Verdict::None,
            rule: None,
            reason: "no device code objects".into(),
            bundle: None,
            entry: None,
            loading: None,
            bundles: counts,
            warnings,
        };
    };
    let total = counts.total();
    // Code embedded in a host file's data is named as such; a file of device code says
    // what it is by its name already.
    let kind = if bundle.embedded {
        format!("module-loaded code {}: ", bundle.location)
    } else {
        String::new()
    };
    let reason = if total == 1 {
        format!("{kind}{}", s.reason)
    } else if s.verdict == Verdict::None {
        format!(
            "{} of {total} bundles have no code object the loader takes; first: {}{}: {}",
            counts.none,
            if kind.is_empty() {
                ""
            } else {
                "module-loaded code "
            },
            bundle.location,
            s.reason
        )
    } else {
        format!(
            "{total} bundles: {}; weakest: {}{}: {}",
            counts.describe(),
            if kind.is_empty() {
                ""
            } else {
                "module-loaded code "
            },
            bundle.location,
            s.reason
        )
    };
    Cell {
        verdict: s.verdict,
        rule: Some(s.rule),
        reason,
        bundle: Some(bundle.location.clone()),
        entry: s
            .entry
            .and_then(|i| bundle.entries.get(i))
            .map(|e| e.target.to_string()),
        loading: Some(bundle.loading),
        bundles: counts,
        warnings,
    }
}

/// rocBLAS and hipBLASLt find their kernels by the device's processor name: the index file
/// `TensileLibrary_lazy_<gfx>.dat` first (without it: "Cannot read TensileLibrary… for GPU
/// arch"), then the code object files of that processor, each loaded by the HIP runtime's
/// rules. There is no generic or family fallback in this lookup; only an override changes the
/// name looked for.
fn evaluate_tensile(
    lib: &Library,
    component: &str,
    indexed: &[String],
    all_arch_index: bool,
    gpu: &Gpu,
    rules: &Rules,
) -> Cell {
    // Under an override the runtime reports the overridden processor, and that is the name
    // looked for; the real one is not tried.
    let arch = match rules.override_version.map(|v| (v, v.processor())) {
        Some((_, Some(name))) => name,
        Some((v, None)) => {
            return Cell {
                verdict: Verdict::None,
                rule: Some(Rule::UnknownIsa),
                reason: format!("HSA_OVERRIDE_GFX_VERSION={v} names no processor"),
                bundle: None,
                entry: None,
                loading: None,
                bundles: VerdictCounts::default(),
                warnings: Vec::new(),
            };
        }
        None => gpu.target.processor.clone(),
    };
    tensile_for(lib, component, indexed, all_arch_index, &arch, gpu, rules)
}

#[allow(clippy::too_many_arguments)]
fn tensile_for(
    lib: &Library,
    component: &str,
    indexed: &[String],
    all_arch_index: bool,
    arch: &str,
    gpu: &Gpu,
    rules: &Rules,
) -> Cell {
    let has_code = lib.bundles.iter().any(|b| b.arch.as_deref() == Some(arch));
    let has_index = indexed.iter().any(|a| a == arch) || (all_arch_index && has_code);
    if !has_index {
        let present = if indexed.is_empty() {
            "none".to_owned()
        } else {
            indexed.join(", ")
        };
        return Cell {
            verdict: Verdict::None,
            rule: Some(Rule::NoMatch),
            reason: format!(
                "{component} looks for TensileLibrary_lazy_{arch}.dat and it is not there \
                 (\"Cannot read TensileLibrary… for GPU arch {arch}\"); indexed: {present}"
            ),
            bundle: None,
            entry: None,
            loading: None,
            bundles: VerdictCounts::default(),
            warnings: Vec::new(),
        };
    }
    let mut cell = evaluate_bundles(
        lib.bundles
            .iter()
            .filter(|b| b.arch.as_deref() == Some(arch)),
        gpu,
        rules,
    );
    if cell.bundles.total() == 0 {
        cell.reason = format!("{component}: index for {arch} but no code object files for it");
    }
    cell
}
