//! Spack: a `spack.yaml` environment. One spec per package of a built component, pinned to the
//! release line, with the variants that carry the plan's options and `amdgpu_target:=` for its
//! target list; `packages:<pkg>:require` repeats the list so that the same package pulled in as a
//! dependency gets it too. YAML is written by hand: every scalar is double-quoted.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{
    Emission, Format, OptionUse, header_comments, major_minor, option_use, processor,
    push_comments, skip_reason,
};
use crate::kb::{Knowledge, SpackPackage, find_option};
use crate::model::{ComponentPlan, Plan};

pub(super) fn emit(kb: &Knowledge, plan: &Plan) -> Emission {
    let spack = &kb.emitters.spack;
    let mut specs = String::new();
    // package -> its amdgpu_target values, for `require` and the propagation check.
    let mut required: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut n_specs = 0usize;
    for c in &plan.components {
        let names: &[String] = kb
            .components
            .get(&c.name)
            .map_or(&[], |i| &i.packages.spack);
        if !c.is_built() {
            let what = if names.is_empty() {
                String::new()
            } else {
                format!(" (Spack: {}, left out of the specs)", names.join(", "))
            };
            push_comments(
                &mut specs,
                "  ",
                &[format!("{}: not built{what}: {}", c.name, skip_reason(c))],
            );
            continue;
        }
        if names.is_empty() {
            if !c.settings.is_empty() {
                push_comments(
                    &mut specs,
                    "  ",
                    &[format!(
                        "{}: no Spack package known; its settings cannot be passed",
                        c.name
                    )],
                );
            }
            continue;
        }
        for name in names {
            let info = spack.package.get(name);
            let (spec, notes) = package_spec(kb, plan, c, name, info);
            let mut lines: Vec<String> = notes
                .iter()
                .map(|n| format!("{} ({name}): {n}", c.name))
                .collect();
            match spec {
                Spec::Line { text, targets } => {
                    push_comments(&mut specs, "  ", &lines);
                    let _ = writeln!(specs, "  - {}", yaml_str(&text));
                    n_specs += 1;
                    if let Some(t) = targets {
                        required.insert(name.clone(), t);
                    }
                }
                Spec::Left(why) => {
                    lines.push(format!("{} ({name}): left out of the specs: {why}", c.name));
                    push_comments(&mut specs, "  ", &lines);
                }
            }
        }
    }
    let mut warnings = Vec::new();
    for (name, targets) in &required {
        let Some(info) = spack.package.get(name) else {
            continue;
        };
        for dep in &info.propagates {
            let Some(dep_targets) = required.get(dep) else {
                continue;
            };
            let missing: Vec<&str> = targets
                .iter()
                .filter(|t| !dep_targets.contains(t))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                warnings.push(format!(
                    "WARNING: {name} requires {dep} with each of its own targets (depends_on {dep} amdgpu_target=T), but {dep} is planned without {}: Spack cannot concretize this as planned",
                    missing.join(" ")
                ));
            }
        }
    }

    let mut out = header_comments(plan, Format::Spack);
    push_comments(
        &mut out,
        "",
        &[format!(
            "amdgpu_target{op}A,B means exactly these targets (amdgpu_target=A,B would mean at least these)",
            op = spack.exact_operator
        )],
    );
    out.push_str("spack:\n");
    if n_specs == 0 {
        push_comments(&mut out, "  ", &["no package to build".to_owned()]);
        out.push_str("  specs: []\n");
        out.push_str(&specs);
    } else {
        out.push_str("  specs:\n");
        out.push_str(&specs);
    }
    push_comments(&mut out, "  ", &warnings);
    if required.is_empty() {
        out.push_str("  packages: {}\n");
    } else {
        out.push_str("  packages:\n");
        for (name, targets) in &required {
            let _ = writeln!(out, "    {}:", yaml_str(name));
            out.push_str("      require:\n");
            let _ = writeln!(
                out,
                "      - {}",
                yaml_str(&format!(
                    "amdgpu_target{}{}",
                    spack.exact_operator,
                    targets.join(",")
                ))
            );
        }
    }
    out.push_str("  concretizer:\n    unify: true\n");
    Emission {
        stdout: out.clone(),
        files: vec![("spack.yaml".to_owned(), out)],
    }
}

/// A package's spec, or why it is left out.
enum Spec {
    Line {
        text: String,
        /// Its `amdgpu_target` values, when it has the variant.
        targets: Option<Vec<String>>,
    },
    Left(String),
}

/// The spec of one Spack package of a built component, and the comments that go with it.
fn package_spec(
    kb: &Knowledge,
    plan: &Plan,
    c: &ComponentPlan,
    name: &str,
    info: Option<&SpackPackage>,
) -> (Spec, Vec<String>) {
    let release = &plan.release;
    let mut notes = Vec::new();
    if let Some(i) = info {
        if i.root == Some(false) {
            let why = i
                .note
                .clone()
                .unwrap_or_else(|| "not a spec of its own".into());
            return (Spec::Left(why), notes);
        }
        if let Some(newest) = &i.newest {
            if major_minor(newest) < major_minor(release) {
                notes.push(format!(
                    "the copy of the recipe that was read has no ROCm {release} version (newest {newest}); concretizing needs a spack-packages that has it"
                ));
            }
        }
    }
    let mut text = format!("{name}@{release}");
    for s in c.option_settings() {
        let o = info.and_then(|i| find_option(&i.option, &s.name, release));
        let Some(o) = o else {
            notes.push(format!(
                "{}={}: no variant known in {name}; not passed",
                s.name, s.value
            ));
            continue;
        };
        match option_use(o, s, "recipe", |v| format!("+{v}/~{v}"), "no variant") {
            OptionUse::Switch(variant, on) => {
                let _ = write!(text, " {}{variant}", if on { '+' } else { '~' });
            }
            OptionUse::Note(n) => notes.push(n),
        }
    }
    let mut targets = None;
    if let Some(planned) = &c.targets {
        match info {
            Some(i) if i.amdgpu_target => {
                let values = i
                    .amdgpu_target_values
                    .as_ref()
                    .unwrap_or(&kb.emitters.spack.amdgpu_target_values);
                let (list, dropped) = spack_targets(planned, values);
                notes.extend(dropped);
                if list.is_empty() {
                    let why = format!(
                        "none of the planned targets ({}) is a value of its amdgpu_target variant ({}); Spack cannot build it for no target",
                        if planned.is_empty() {
                            "none".to_owned()
                        } else {
                            planned.join(" ")
                        },
                        values.join(" ")
                    );
                    return (Spec::Left(why), notes);
                }
                let _ = write!(
                    text,
                    " amdgpu_target{}{}",
                    kb.emitters.spack.exact_operator,
                    list.join(",")
                );
                targets = Some(list);
            }
            Some(i) => {
                if let Some(fixed) = &i.fixed_targets {
                    let agree = if fixed == planned {
                        "as planned"
                    } else {
                        "NOT as planned"
                    };
                    notes.push(format!(
                        "no amdgpu_target variant: the recipe passes GPU_TARGETS={} itself ({agree}: {})",
                        fixed.join(";"),
                        planned.join(";")
                    ));
                } else if let Some(note) = &i.note {
                    notes.push(note.clone());
                } else {
                    notes.push(format!(
                        "no amdgpu_target variant: planned targets {} cannot be passed",
                        planned.join(" ")
                    ));
                }
            }
            None => notes.push(format!(
                "no amdgpu_target variant known: planned targets {} not passed",
                planned.join(" ")
            )),
        }
    }
    (Spec::Line { text, targets }, notes)
}

/// The planned targets as values of an `amdgpu_target` variant, with a note for each target that
/// has no value (a target ID with features falls back to its processor when that is a value).
fn spack_targets(planned: &[String], values: &[String]) -> (Vec<String>, Vec<String>) {
    let mut list: Vec<String> = Vec::new();
    let mut notes = Vec::new();
    for t in planned {
        let v = if values.iter().any(|v| v == t) {
            t.clone()
        } else if values.iter().any(|v| v == processor(t)) {
            notes.push(format!(
                "amdgpu_target has no value {t}; {} used (any xnack/sramecc mode)",
                processor(t)
            ));
            processor(t).to_owned()
        } else {
            notes.push(format!(
                "amdgpu_target has no value {t}: left out of its target list"
            ));
            continue;
        };
        if !list.contains(&v) {
            list.push(v);
        }
    }
    (list, notes)
}

/// A YAML double-quoted scalar.
fn yaml_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str(r"\\"),
            '\n' => out.push_str(r"\n"),
            '\t' => out.push_str(r"\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32 & 0xff);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn yaml_scalars_are_quoted_and_escaped() {
        assert_eq!(
            yaml_str("rocblas@6.4 ~hipblaslt"),
            "\"rocblas@6.4 ~hipblaslt\""
        );
        assert_eq!(yaml_str(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(yaml_str("a\nb;$x"), r#""a\nb;$x""#);
    }

    #[test]
    fn targets_fall_back_to_the_processor_or_are_noted() {
        let values: Vec<String> = ["gfx90a", "gfx90a:xnack-", "gfx942"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let planned: Vec<String> = ["gfx90a:xnack-", "gfx942:sramecc+", "gfx1030"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (list, notes) = spack_targets(&planned, &values);
        assert_eq!(list, ["gfx90a:xnack-", "gfx942"]);
        assert_eq!(notes.len(), 2, "{notes:?}");
    }
}
