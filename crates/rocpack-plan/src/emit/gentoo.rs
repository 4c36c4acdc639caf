//! Gentoo: `AMDGPU_TARGETS` (rocm.eclass' USE_EXPAND, flags `amdgpu_targets_<gfx>`) for
//! `/etc/portage/make.conf`, and `/etc/portage/package.use/rocm` with a per-package list where a
//! package's planned list differs from the global one, and the USE flags that carry the plan's
//! options. Only processor names exist as flags, and only those an ebuild declares count.

use std::fmt::Write as _;

use super::{
    Emission, Format, OptionUse, header_comments, one_line, option_use, processors, push_comments,
    skip_reason,
};
use crate::kb::{GentooPackage, Knowledge, find_option};
use crate::model::{ComponentPlan, Plan};

pub(super) fn emit(kb: &Knowledge, plan: &Plan) -> Emission {
    let gentoo = &kb.emitters.gentoo;
    let variable = &gentoo.variable;
    let eclass = gentoo.targets.get(&plan.release);

    // make.conf
    let head = header_comments(plan, Format::Gentoo);
    let mut make_conf = head.clone();
    let requested = processors(&plan.targets);
    let (global, dropped) = filter_flags(&requested, eclass);
    let mut notes: Vec<String> = dropped
        .iter()
        .map(|t| flag_note(t, &plan.release, "rocm.eclass"))
        .collect();
    if eclass.is_none() {
        notes.push(format!(
            "no rocm.eclass target list known for ROCm {}; every requested processor is kept",
            plan.release
        ));
    }
    if plan.targets.iter().any(|t| t.contains(':')) {
        notes.push(
            "rocm.eclass has no flags for :xnack/:sramecc; only processor names are set".to_owned(),
        );
    }
    push_comments(&mut make_conf, "", &notes);
    let _ = writeln!(make_conf, "{variable}={}", shell_dq(&global.join(" ")));

    // package.use/rocm
    let mut package_use = head;
    for c in &plan.components {
        let atoms: &[String] = kb
            .components
            .get(&c.name)
            .map_or(&[], |i| &i.packages.gentoo);
        if !c.is_built() {
            let lines: Vec<String> = if atoms.is_empty() {
                vec![format!("{}: not built: {}", c.name, skip_reason(c))]
            } else {
                atoms
                    .iter()
                    .map(|a| {
                        format!(
                            "{a} ({}): not built: {}; do not emerge it",
                            c.name,
                            skip_reason(c)
                        )
                    })
                    .collect()
            };
            push_comments(&mut package_use, "", &lines);
            continue;
        }
        if atoms.is_empty() {
            if !c.settings.is_empty() {
                push_comments(
                    &mut package_use,
                    "",
                    &[format!(
                        "{}: no Gentoo package known; its settings cannot be passed",
                        c.name
                    )],
                );
            }
            continue;
        }
        for atom in atoms {
            package_lines(
                &mut package_use,
                plan,
                c,
                atom,
                gentoo.package.get(atom),
                eclass,
                &global,
                variable,
            );
        }
    }

    let mut stdout = String::new();
    let _ = writeln!(stdout, "# ---- /etc/portage/make.conf ----");
    stdout.push_str(&make_conf);
    let _ = writeln!(stdout, "# ---- /etc/portage/package.use/rocm ----");
    stdout.push_str(&package_use);
    Emission {
        stdout,
        files: vec![
            ("make.conf".to_owned(), make_conf),
            ("package.use/rocm".to_owned(), package_use),
        ],
    }
}

/// The lines of one package: its own target list when it differs, its USE flags, and comments
/// for what it cannot express.
#[allow(clippy::too_many_arguments)]
fn package_lines(
    out: &mut String,
    plan: &Plan,
    c: &ComponentPlan,
    atom: &str,
    info: Option<&GentooPackage>,
    eclass: Option<&Vec<String>>,
    global: &[String],
    variable: &str,
) {
    let release = &plan.release;
    let mut notes = Vec::new();
    let mut lines = Vec::new();
    let procs = processors(c.targets.as_deref().unwrap_or_default());
    if let Some(planned) = &c.targets {
        let (iuse, where_) = match info.and_then(|i| i.targets.get(release)) {
            Some(own) => (Some(own), "the ebuild"),
            None => (eclass, "rocm.eclass"),
        };
        let (list, dropped) = filter_flags(&procs, iuse);
        notes.extend(dropped.iter().map(|t| flag_note(t, release, where_)));
        if planned.is_empty() {
            notes.push(format!(
                "no planned target; the ebuild needs at least one (ROCM_REQUIRED_USE), so it keeps the global {variable}"
            ));
        } else if list.is_empty() {
            notes.push(format!(
                "none of its planned targets ({}) is a flag of {where_}; it keeps the global {variable}",
                planned.join(" ")
            ));
        } else if list != global {
            lines.push(format!("{atom} {variable}: -* {}", list.join(" ")));
        }
    }
    let mut flags = Vec::new();
    for s in c.option_settings() {
        let o = info.and_then(|i| find_option(&i.option, &s.name, release));
        let Some(o) = o else {
            notes.push(format!(
                "{}={}: no USE flag known; not passed",
                s.name, s.value
            ));
            continue;
        };
        // An option the ebuild fixes only for some targets is explained below.
        if o.knob.is_none() && o.fixed.is_some() && !o.fixed_when.is_empty() {
            continue;
        }
        match option_use(o, s, "ebuild", |f| format!("USE={f}"), "no USE flag") {
            OptionUse::Switch(flag, on) => flags.push(if on {
                flag.to_owned()
            } else {
                format!("-{flag}")
            }),
            OptionUse::Note(n) => notes.push(n),
        }
    }
    // Options the ebuild sets itself for some targets, whether or not the plan sets them.
    for o in info
        .map(|i| i.option.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|o| o.holds_for(release) && !o.fixed_when.is_empty())
    {
        let hit: Vec<&str> = procs
            .iter()
            .filter(|p| o.fixed_when.contains(p))
            .map(String::as_str)
            .collect();
        if hit.is_empty() {
            continue;
        }
        let value = c.setting(&o.option).unwrap_or("its default");
        notes.push(format!(
            "the ebuild sets {}={} itself for {} (plan: {value})",
            o.option,
            o.fixed.as_deref().unwrap_or("?"),
            hit.join(" ")
        ));
    }
    if !flags.is_empty() {
        lines.push(format!("{atom} {}", flags.join(" ")));
    }
    if notes.is_empty() && lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "# {}", one_line(&c.name));
    push_comments(
        out,
        "",
        &notes
            .iter()
            .map(|n| format!("{atom}: {n}"))
            .collect::<Vec<_>>(),
    );
    for l in lines {
        let _ = writeln!(out, "{l}");
    }
}

/// Why a processor is not a flag.
fn flag_note(target: &str, release: &str, where_: &str) -> String {
    format!(
        "{target} is not an amdgpu_targets flag of {where_} for ROCm {release}; Portage would ignore it"
    )
}

/// The processors that are flags of `iuse` (all when it is unknown), and those that are not.
fn filter_flags(procs: &[String], iuse: Option<&Vec<String>>) -> (Vec<String>, Vec<String>) {
    match iuse {
        None => (procs.to_vec(), Vec::new()),
        Some(list) => procs.iter().cloned().partition(|p| list.contains(p)),
    }
}

/// A double-quoted shell (make.conf) value.
fn shell_dq(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if matches!(c, '"' | '\\' | '$' | '`') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn make_conf_values_are_escaped() {
        assert_eq!(shell_dq("gfx1030 gfx1100"), "\"gfx1030 gfx1100\"");
        assert_eq!(shell_dq(r#"a"$b`\"#), r#""a\"\$b\`\\""#);
    }
}
