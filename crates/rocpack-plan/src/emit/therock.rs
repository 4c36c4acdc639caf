//! TheRock: the super-project's own cache variables. Targets go in as TheRock families
//! (`THEROCK_AMDGPU_FAMILIES`) when the request named them, loose targets as
//! `THEROCK_AMDGPU_TARGETS`; a component that is not built turns its `THEROCK_ENABLE_<FEATURE>`
//! off when nothing else of that feature is built. TheRock decides each sub-project's list itself
//! (its exclusions are in the plan when it was made for TheRock), so per-component lists and most
//! options are comments.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::{
    Emission, Format, agreement, bool_value, cmake_cache_set, cmake_define, header_comments,
    processor, processors, push_comments, skip_reason,
};
use crate::kb::Knowledge;
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
    if !families.is_empty() {
        let names: Vec<&str> = families.iter().map(|f| f.family.as_str()).collect();
        vars.push((
            therock.families_variable.clone(),
            names.join(";"),
            SettingKind::String,
            "the requested TheRock families".to_owned(),
        ));
    }
    if !loose.is_empty() {
        vars.push((
            therock.targets_variable.clone(),
            loose.join(";"),
            SettingKind::String,
            "the requested targets that no requested TheRock family covers".to_owned(),
        ));
    }
    if families.is_empty() && loose.is_empty() {
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
    let mut off: Vec<&str> = Vec::new();
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
            notes.push(format!(
                "{}: not built: {} -> THEROCK_ENABLE_{feature}=OFF",
                c.name,
                skip_reason(c)
            ));
            if !off.contains(&feature) {
                off.push(feature);
            }
        } else {
            notes.push(format!(
                "{}: not built in the plan ({}), but TheRock builds it with THEROCK_ENABLE_{feature} together with {}, which are built: it has no switch of its own",
                c.name,
                skip_reason(c),
                others.join(", ")
            ));
        }
    }
    for feature in &off {
        vars.push((
            format!("THEROCK_ENABLE_{feature}"),
            "OFF".to_owned(),
            SettingKind::Bool,
            format!(
                "components of this feature are not built: {}",
                therock
                    .feature
                    .get(*feature)
                    .map(|f| {
                        f.components
                            .iter()
                            .filter(|c| in_plan.contains(c.as_str()))
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default()
            ),
        ));
        let required_by: Vec<&str> = therock
            .feature
            .iter()
            .filter(|(n, f)| !off.contains(&n.as_str()) && f.requires.iter().any(|r| r == feature))
            .map(|(n, _)| n.as_str())
            .collect();
        if !required_by.is_empty() {
            notes.push(format!(
                "THEROCK_ENABLE_{feature}=OFF is undone by TheRock's therock_finalize_features while {} is ON ({} requires {feature})",
                required_by
                    .iter()
                    .map(|r| format!("THEROCK_ENABLE_{r}"))
                    .collect::<Vec<_>>()
                    .join(" or "),
                required_by.join(", ")
            ));
        }
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

    let head = header_comments(plan, Format::Therock);
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
