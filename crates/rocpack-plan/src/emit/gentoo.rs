//! Gentoo: `AMDGPU_TARGETS` (rocm.eclass' USE_EXPAND, flags `amdgpu_targets_<gfx>`) for
//! `/etc/portage/make.conf`, and `/etc/portage/package.use/rocm` with a per-package list where a
//! package's planned list differs from the global one, and the USE flags that carry the plan's
//! options. Only processor names exist as flags, and only those an ebuild declares count.
//! Every USE flag that sets a planned CMake option is written out, on or off, whatever the
//! ebuild's IUSE default; a flag the ebuild's REQUIRED_USE forbids for the planned targets is
//! turned off and said to be NOT as planned, and a package whose REQUIRED_USE no planned target
//! can satisfy is marked "do not emerge". A setting no USE flag carries, pinned by the plan or
//! not the release's default, goes to `/etc/portage/package.env/rocm` and an `env/` file as
//! `MYCMAKEARGS`, which cmake.eclass appends to the ebuild's arguments. What the ebuilds declare is checked against ::gentoo's
//! metadata by tests/engine_gentoo.rs (data/engines/gentoo.toml).

use std::fmt::Write as _;

use super::{
    Emission, OptionUse, Tool, agreement, bool_value, cmake_define, fixed_note, header_comments,
    knobless, one_line, option_use, processors, push_comments, skip_reason,
};
use crate::kb::{GentooPackage, Knowledge, find_option, version_key};
use crate::model::{ComponentPlan, Plan, Setting, SettingKind, SettingOrigin};

pub(super) fn emit(kb: &Knowledge, plan: &Plan) -> Emission {
    let gentoo = &kb.emitters.gentoo;
    let variable = &gentoo.variable;
    let eclass = gentoo.targets.get(&plan.release);
    let has_release = gentoo.releases.is_empty() || gentoo.releases.contains(&plan.release);

    // make.conf
    let head = header_comments(plan, Tool::Gentoo);
    let mut make_conf = head.clone();
    let requested = processors(&plan.targets);
    let (global, dropped) = filter_flags(&requested, eclass);
    let mut notes: Vec<String> = Vec::new();
    if !has_release {
        notes.push(format!(
            "::gentoo has no ebuild of ROCm {} for any ROCm package (it has {}; nearest: {}): Portage cannot build this plan as it is",
            plan.release,
            gentoo.releases.join(" "),
            nearest(&gentoo.releases, &plan.release)
        ));
    }
    notes.extend(
        dropped
            .iter()
            .map(|t| flag_note(t, &plan.release, "rocm.eclass")),
    );
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
    // Components Portage refuses under this plan; their dependents cannot be emerged either
    // (plan.components is in build order, so a dependency comes first).
    let mut refused: Vec<&str> = Vec::new();
    // (atom, component, CMake arguments) for package.env.
    let mut env_files: Vec<(String, String, Vec<String>)> = Vec::new();
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
        let blocked: Vec<&str> = c
            .deps
            .iter()
            .map(String::as_str)
            .filter(|d| refused.contains(d))
            .collect();
        if !blocked.is_empty() {
            let lines: Vec<String> = atoms
                .iter()
                .map(|a| {
                    format!(
                        "{a} ({}): needs {}, which Portage refuses under this plan: do not emerge it",
                        c.name,
                        blocked.join(", ")
                    )
                })
                .collect();
            push_comments(&mut package_use, "", &lines);
            refused.push(&c.name);
            continue;
        }
        for atom in atoms {
            let (refuses, cmake_args) = package_lines(
                &mut package_use,
                kb,
                plan,
                c,
                atom,
                gentoo.package.get(atom),
                Lists {
                    eclass: eclass.filter(|_| has_release),
                    global: &global,
                    variable,
                },
            );
            if refuses && !refused.contains(&c.name.as_str()) {
                refused.push(&c.name);
            }
            if !refuses && !cmake_args.is_empty() {
                env_files.push((atom.clone(), c.name.clone(), cmake_args));
            }
        }
    }

    let mut stdout = String::new();
    let _ = writeln!(stdout, "# ---- /etc/portage/make.conf ----");
    stdout.push_str(&make_conf);
    let _ = writeln!(stdout, "# ---- /etc/portage/package.use/rocm ----");
    stdout.push_str(&package_use);
    let mut files = vec![
        ("make.conf".to_owned(), make_conf),
        ("package.use/rocm".to_owned(), package_use),
    ];
    if !env_files.is_empty() {
        let (package_env, envs) = package_env(plan, &env_files);
        let _ = writeln!(stdout, "# ---- /etc/portage/package.env/rocm ----");
        stdout.push_str(&package_env);
        files.push(("package.env/rocm".to_owned(), package_env));
        for (name, text) in envs {
            let _ = writeln!(stdout, "# ---- /etc/portage/env/{name} ----");
            stdout.push_str(&text);
            files.push((format!("env/{name}"), text));
        }
    }
    Emission { stdout, files }
}

/// `package.env/rocm` and one `env/` file per package, carrying the settings no USE flag passes
/// in `MYCMAKEARGS`. cmake.eclass (gentoo-mirror/gentoo 747db21d, eclass/cmake.eclass,
/// `cmake_src_configure`) reads it as `eval "local -a MYCMAKEARGS=( ${MYCMAKEARGS} )"` and
/// appends it after the ebuild's own `mycmakeargs`, so each value is one shell word and a later
/// `-D` of the same name wins over none of the ebuild's (the ebuild does not pass these).
fn package_env(
    plan: &Plan,
    packages: &[(String, String, Vec<String>)],
) -> (String, Vec<(String, String)>) {
    let head = header_comments(plan, Tool::Gentoo);
    let mut index = head.clone();
    push_comments(
        &mut index,
        "",
        &["Settings no USE flag carries, passed to cmake.eclass in MYCMAKEARGS; a MYCMAKEARGS of your own (make.conf) is replaced for these packages".to_owned()],
    );
    let mut envs = Vec::new();
    for (atom, component, args) in packages {
        let name = format!("rocpack-{}.conf", atom.replace('/', "_"));
        let _ = writeln!(index, "{atom} {name}");
        let mut text = head.clone();
        push_comments(&mut text, "", &[format!("{component} ({atom})")]);
        let _ = writeln!(text, "MYCMAKEARGS={}", shell_dq(&args.join(" ")));
        envs.push((name, text));
    }
    (index, envs)
}

/// The target lists a package's lines are made from.
struct Lists<'a> {
    /// rocm.eclass's flags at the release (`None`: not known, or no ebuild of the release).
    eclass: Option<&'a Vec<String>>,
    /// make.conf's list.
    global: &'a [String],
    variable: &'a str,
}

/// The lines of one package: its own target list when it differs, its USE flags, and comments
/// for what it cannot express. Returns whether Portage refuses the package (its REQUIRED_USE
/// needs a target none of the planned or global targets provides), and the CMake arguments
/// no USE flag carries (for MYCMAKEARGS).
fn package_lines(
    out: &mut String,
    kb: &Knowledge,
    plan: &Plan,
    c: &ComponentPlan,
    atom: &str,
    info: Option<&GentooPackage>,
    lists: Lists<'_>,
) -> (bool, Vec<String>) {
    let mut cmake_args = Vec::new();
    let release = &plan.release;
    let variable = lists.variable;
    let mut notes = Vec::new();
    let mut lines = Vec::new();
    let procs = processors(c.targets.as_deref().unwrap_or_default());
    let own = info.and_then(|i| i.targets.get(release));
    let (iuse, where_) = match own {
        Some(own) => (Some(own), "the ebuild"),
        None => (lists.eclass, "rocm.eclass"),
    };
    let required = !info.is_some_and(|i| i.optional_targets.contains(release));
    let mut refuses = false;
    if iuse.is_some() {
        // What the package gets: its planned list, or (no target selection, or none of the
        // planned targets declared) the global list's flags it declares.
        let (list, why) = match &c.targets {
            Some(planned) => {
                let (list, dropped) = filter_flags(&procs, iuse);
                notes.extend(dropped.iter().map(|t| flag_note(t, release, where_)));
                let why = if planned.is_empty() {
                    "no planned target".to_owned()
                } else {
                    format!(
                        "none of its planned targets ({}) is a flag of {where_}",
                        planned.join(" ")
                    )
                };
                (list, why)
            }
            None => (Vec::new(), "it selects no targets of its own".to_owned()),
        };
        if list.is_empty() {
            let (kept, _) = filter_flags(lists.global, iuse);
            if kept.is_empty() && required {
                refuses = true;
                notes.push(format!(
                    "{why}, nor is any of the global {variable} a flag of {where_} for ROCm {release}; its REQUIRED_USE needs one, so Portage refuses it: do not emerge it"
                ));
            } else if kept.is_empty() {
                notes.push(format!("{why}; it builds no device code"));
            } else if c.targets.is_some() {
                notes.push(format!(
                    "{why}; it keeps the flags of the global {variable} it declares ({})",
                    kept.join(" ")
                ));
            }
        } else if list != lists.global {
            lines.push(format!("{atom} {variable}: -* {}", list.join(" ")));
        }
    }
    let options = info.map(|i| i.option.as_slice()).unwrap_or_default();
    let defaults = kb
        .releases
        .get(release)
        .and_then(|r| r.components.get(&c.name));
    let planned_value = |name: &str| {
        c.setting(name)
            .or_else(|| defaults.and_then(|d| d.option_default(name)))
    };
    // Every flag that sets an option: the plan's value, set or by default.
    let mut flags = Vec::new();
    let mut passed = Vec::new();
    for o in options.iter().filter(|o| o.holds_for(release)) {
        let Some(flag) = &o.knob else { continue };
        passed.push(o.option.as_str());
        let Some(value) = planned_value(&o.option) else {
            continue;
        };
        let Some(on) = bool_value_str(value) else {
            notes.push(format!(
                "{}={value}: not a boolean, so not passed as USE={flag}",
                o.option
            ));
            continue;
        };
        if on
            && !o.requires_targets.is_empty()
            && !procs.iter().any(|p| o.requires_targets.contains(p))
        {
            flags.push(format!("-{flag}"));
            notes.push(format!(
                "{}={value}: the ebuild allows USE={flag} only with one of {} (REQUIRED_USE) and none is planned, so it builds {}=OFF (NOT as planned)",
                o.option,
                o.requires_targets.join(" "),
                o.option
            ));
            continue;
        }
        flags.push(if on { flag.clone() } else { format!("-{flag}") });
    }
    // The plan's other settings: passed by the ebuild itself, or not at all.
    for s in c
        .option_settings()
        .filter(|s| !passed.contains(&s.name.as_str()))
    {
        let Some(o) = find_option(options, &s.name, release) else {
            // The ebuild does not pass it: cmake.eclass appends MYCMAKEARGS after the
            // ebuild's own mycmakeargs, so it reaches CMake through package.env.
            let (pass, note) = knobless(
                kb,
                plan,
                c,
                s,
                "no USE flag",
                "ebuild",
                "passed in MYCMAKEARGS (package.env)",
            );
            notes.push(note);
            if pass {
                cmake_args.push(cmake_define(&s.name, s.kind, &s.value));
            }
            continue;
        };
        // An option the ebuild fixes only for some targets is explained below.
        if o.knob.is_none() && o.fixed.is_some() && !o.fixed_when.is_empty() {
            continue;
        }
        if let OptionUse::Note(n) =
            option_use(o, s, "ebuild", |f| format!("USE={f}"), "no USE flag")
        {
            notes.push(n);
        }
    }
    // Options the ebuild always fixes that the plan leaves at a different default.
    for o in options.iter().filter(|o| {
        o.holds_for(release)
            && o.knob.is_none()
            && o.fixed_when.is_empty()
            && c.setting(&o.option).is_none()
    }) {
        let (Some(fixed), Some(value)) = (&o.fixed, planned_value(&o.option)) else {
            continue;
        };
        if agreement(fixed, value) != "as planned" {
            notes.push(fixed_note(&o.option, value, fixed, "ebuild"));
        }
    }
    // Options the ebuild sets itself for some targets, whether or not the plan sets them.
    for o in options
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
        return (refuses, cmake_args);
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
    if !refuses {
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
    }
    (refuses, cmake_args)
}

/// A CMake boolean: `Some(true)` for ON, `Some(false)` for OFF (as a plan setting reads).
fn bool_value_str(value: &str) -> Option<bool> {
    bool_value(&Setting {
        name: String::new(),
        value: value.to_owned(),
        kind: SettingKind::Bool,
        why: String::new(),
        origin: SettingOrigin::Default,
    })
}

/// The release lines just below and above `release` among `lines`.
fn nearest(lines: &[String], release: &str) -> String {
    let key = version_key(release);
    let below = lines
        .iter()
        .filter(|l| version_key(l) < key)
        .max_by_key(|l| version_key(l));
    let above = lines
        .iter()
        .filter(|l| version_key(l) > key)
        .min_by_key(|l| version_key(l));
    let found: Vec<&str> = below.into_iter().chain(above).map(String::as_str).collect();
    if found.is_empty() {
        "none".to_owned()
    } else {
        found.join(", ")
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
