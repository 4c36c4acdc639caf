//! TheRock: the super-project's own cache variables. Every selection goes into
//! `THEROCK_AMDGPU_FAMILIES` (the requested families, and loose targets as the one-target family
//! TheRock makes of each), with `THEROCK_AMDGPU_DIST_BUNDLE_NAME` when there is more than one; a
//! component that is not built turns its `THEROCK_ENABLE_<FEATURE>` off when nothing else of that
//! feature is built and TheRock's feature resolution would not turn it back on. TheRock decides
//! each sub-project's list itself (its exclusions are in the plan when it was made for TheRock), so
//! per-component lists and most options are comments. tests/engine_therock.rs checks the result
//! against TheRock's own sources (data/engines/therock.toml).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::{
    Emission, Tool, agreement, bool_value, cmake_cache_set, cmake_define, header_comments,
    processor, processors, push_comments, skip_reason,
};
use crate::kb::{Knowledge, TheRockInfo};
use crate::model::{Plan, SettingKind};

pub(super) fn emit(kb: &Knowledge, plan: &Plan) -> Emission {
    let therock = &kb.emitters.therock;
    let mut notes: Vec<String> = Vec::new();
    // (name, value, kind, why)
    let mut vars: Vec<(String, String, SettingKind, String)> = Vec::new();

    // Targets.
    let snapshot = kb
        .releases
        .get(&plan.release)
        .and_then(|r| kb.snapshot(&r.release.therock_snapshot));
    let known: BTreeSet<&str> = snapshot
        .map(|s| {
            s.families
                .values()
                .flatten()
                .map(String::as_str)
                .chain(kb.special_targets.keys().map(String::as_str))
                .collect()
        })
        .unwrap_or_default();
    let families: Vec<&crate::model::FamilyExpansion> = plan
        .families
        .iter()
        .filter(|f| f.defined_by.starts_with("TheRock"))
        .collect();
    let covered: BTreeSet<&str> = families
        .iter()
        .flat_map(|f| f.targets.iter().map(|t| processor(t)))
        .collect();
    let global = processors(&plan.targets);
    let mut loose = Vec::new();
    for p in &global {
        if covered.contains(p.as_str()) {
            continue;
        }
        if !known.is_empty() && !known.contains(p.as_str()) {
            notes.push(format!(
                "{p}: TheRock (snapshot {}) has no such target; configuring with it stops with 'Unknown AMDGPU target', so it is left out",
                snapshot.map_or("?", |s| s.id.as_str())
            ));
            continue;
        }
        loose.push(p.clone());
    }
    if plan.targets.iter().any(|t| t.contains(':')) {
        notes.push("TheRock takes processor names only; :xnack/:sramecc dropped".to_owned());
    }
    // Every selection goes into the families list: TheRock makes each target a family of its own
    // name, and only THEROCK_AMDGPU_FAMILIES also becomes the distribution-wide list
    // (THEROCK_DIST_AMDGPU_FAMILIES falls back to it) that runtime and third-party sub-projects
    // build for; loose THEROCK_AMDGPU_TARGETS leave that list empty and configure stops at the
    // first such sub-project.
    let selections: Vec<String> = families
        .iter()
        .map(|f| f.family.clone())
        .chain(loose.iter().cloned())
        .collect();
    if !selections.is_empty() {
        vars.push((
            therock.families_variable.clone(),
            selections.join(";"),
            SettingKind::String,
            match (families.is_empty(), loose.is_empty()) {
                (false, true) => "the requested TheRock families",
                (true, _) => "the requested targets (each target is a TheRock family of its own name)",
                (false, false) => {
                    "the requested TheRock families and targets (each target is a family of its own name)"
                }
            }
            .to_owned(),
        ));
    }
    if selections.len() > 1 {
        vars.push((
            therock.bundle_variable.clone(),
            selections.join("-"),
            SettingKind::String,
            "more than one family or target selected: TheRock cannot infer the bundle name"
                .to_owned(),
        ));
    }
    if selections.is_empty() {
        notes.push("no requested target is one TheRock knows: nothing to build".to_owned());
    }

    // Features of components that are not built.
    let built: BTreeSet<&str> = plan
        .components
        .iter()
        .filter(|c| c.is_built())
        .map(|c| c.name.as_str())
        .collect();
    let in_plan: BTreeSet<&str> = plan.components.iter().map(|c| c.name.as_str()).collect();
    let mut off: BTreeSet<&str> = BTreeSet::new();
    for c in plan.components.iter().filter(|c| !c.is_built()) {
        let Some((feature, f)) = therock.feature_of(&c.name) else {
            notes.push(format!(
                "{}: not built: {}; no THEROCK_ENABLE_* switch known for it",
                c.name,
                skip_reason(c)
            ));
            continue;
        };
        let others: Vec<&str> = f
            .components
            .iter()
            .map(String::as_str)
            .filter(|x| built.contains(x))
            .collect();
        if others.is_empty() {
            notes.push(format!("{}: not built: {}", c.name, skip_reason(c)));
            off.insert(feature);
        } else {
            notes.push(format!(
                "{}: not built in the plan ({}), but TheRock builds it with THEROCK_ENABLE_{feature} together with {}, which are built: it has no switch of its own",
                c.name,
                skip_reason(c),
                others.join(", ")
            ));
        }
    }
    let dependents = feature_closure(therock, &built, &mut off, &mut notes);
    for feature in &off {
        let mine: Vec<String> = therock
            .feature
            .get(*feature)
            .map(|f| {
                f.components
                    .iter()
                    .filter(|c| in_plan.contains(c.as_str()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let why = match dependents.get(feature) {
            Some(required) => format!("it requires THEROCK_ENABLE_{required}, which is off"),
            None => format!(
                "components of this feature are not built: {}",
                mine.join(", ")
            ),
        };
        vars.push((
            format!("THEROCK_ENABLE_{feature}"),
            "OFF".to_owned(),
            SettingKind::Bool,
            why,
        ));
    }

    // Per-component lists and options.
    for c in plan.components.iter().filter(|c| c.is_built()) {
        if therock.feature_of(&c.name).is_none() {
            if !c.settings.is_empty() {
                notes.push(format!(
                    "{}: no THEROCK_ENABLE_* feature known to build it; its settings are not passed",
                    c.name
                ));
            }
            continue;
        }
        if let Some(planned) = &c.targets {
            let mine = processors(planned);
            if mine != global {
                let why = c
                    .excluded
                    .first()
                    .map(|e| format!(": {}", e.reason))
                    .unwrap_or_default();
                notes.push(format!(
                    "{}: planned for {} (TheRock derives each sub-project's list itself){why}",
                    c.name,
                    if mine.is_empty() {
                        "no target".to_owned()
                    } else {
                        mine.join(" ")
                    }
                ));
            }
        }
        for s in c.option_settings() {
            let o = therock.option.iter().find(|o| {
                o.component.as_deref() == Some(c.name.as_str())
                    && o.option == s.name
                    && o.holds_for(&plan.release)
            });
            match o {
                Some(crate::kb::ToolOption {
                    knob: Some(var), ..
                }) => match bool_value(s) {
                    Some(b) => vars.push((
                        var.clone(),
                        if b { "ON" } else { "OFF" }.to_owned(),
                        SettingKind::Bool,
                        format!("{}: {}={}: {}", c.name, s.name, s.value, s.why),
                    )),
                    None => notes.push(format!(
                        "{}: {}={}: not a boolean, so not passed as {var}",
                        c.name, s.name, s.value
                    )),
                },
                Some(o) => {
                    let fixed = o.fixed.as_deref().unwrap_or("?");
                    notes.push(format!(
                        "{}: {}={}: TheRock passes {}={fixed} itself ({})",
                        c.name,
                        s.name,
                        s.value,
                        s.name,
                        agreement(fixed, &s.value)
                    ));
                }
                None => notes.push(format!(
                    "{}: {}={}: no TheRock variable known; TheRock decides it",
                    c.name, s.name, s.value
                )),
            }
        }
    }

    let head = header_comments(plan, Tool::Therock);
    let mut stdout = head.clone();
    push_comments(&mut stdout, "", &notes);
    let args: Vec<String> = vars
        .iter()
        .map(|(n, v, k, _)| cmake_define(n, *k, v))
        .collect();
    if args.is_empty() {
        push_comments(&mut stdout, "", &["no argument to pass".to_owned()]);
    } else {
        let _ = writeln!(stdout, "{}", args.join(" "));
    }

    let mut cache = head;
    push_comments(
        &mut cache,
        "",
        &["Load with `cmake -C therock.cmake -B build -S <TheRock checkout>`".to_owned()],
    );
    push_comments(&mut cache, "", &notes);
    for (n, v, k, why) in &vars {
        let _ = writeln!(cache, "{}", cmake_cache_set(n, v, *k, why));
    }
    Emission {
        stdout,
        files: vec![("therock.cmake".to_owned(), cache)],
    }
}

/// Makes the `off` features what TheRock's `therock_finalize_features` will leave off: a feature
/// with no built component that requires an off feature goes off too (else TheRock would turn the
/// required one back on), and an off feature that a feature left on requires is taken out (TheRock
/// turns it back on; writing OFF would only mislead). Returns, for the features added, the off
/// feature each requires.
fn feature_closure<'a>(
    therock: &'a TheRockInfo,
    built: &BTreeSet<&str>,
    off: &mut BTreeSet<&'a str>,
    notes: &mut Vec<String>,
) -> BTreeMap<&'a str, &'a str> {
    let mut added = BTreeMap::new();
    loop {
        let mut changed = false;
        for (name, f) in &therock.feature {
            if off.contains(name.as_str())
                || f.components.iter().any(|c| built.contains(c.as_str()))
            {
                continue;
            }
            if let Some(r) = f.requires.iter().find(|r| off.contains(r.as_str())) {
                let Some((required, _)) = therock.feature.get_key_value(r) else {
                    continue;
                };
                off.insert(name.as_str());
                added.insert(name.as_str(), required.as_str());
                changed = true;
            }
        }
        let undone: Vec<(&'a str, &'a str)> = off
            .iter()
            .filter_map(|f| {
                therock
                    .feature
                    .iter()
                    .find(|(n, g)| !off.contains(n.as_str()) && g.requires.iter().any(|r| r == f))
                    .map(|(n, _)| (*f, n.as_str()))
            })
            .collect();
        for (f, by) in undone {
            off.remove(f);
            added.remove(f);
            notes.push(format!(
                "THEROCK_ENABLE_{f} stays ON: TheRock's therock_finalize_features turns it back on while THEROCK_ENABLE_{by} is on ({by} requires {f})"
            ));
            changed = true;
        }
        if !changed {
            break;
        }
    }
    for (f, r) in &added {
        notes.push(format!(
            "THEROCK_ENABLE_{f}=OFF as well: it requires {r}, which is off, and builds no planned component"
        ));
    }
    added
}
