//! Spack: a `spack.yaml` environment. One spec per package of a built component, pinned to the
//! release line, with the variants that carry the plan's options and `amdgpu_target:=` for its
//! target list; `packages:<pkg>:require` repeats the list so that the same package pulled in as a
//! dependency gets it too. YAML is written by hand: every scalar is double-quoted.
//!
//! What the recipes accept (versions, the values of `amdgpu_target` at each release, which
//! dependencies get a package's own targets value by value, release lines that cannot concretize)
//! is `data/engines/spack.toml`, extracted from spack-packages; every package that has the
//! variant gets an explicit list, because its default (`auto`) cannot be combined with a target
//! that a dependent propagates to it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{
    Emission, OptionUse, Tool, header_comments, major_minor, option_use, processor, push_comments,
    skip_reason,
};
use crate::kb::{Knowledge, SpackFacts, SpackPackageFacts, find_option};
use crate::model::{ComponentPlan, Plan};

/// One package of a built component, as it will be written.
struct Entry<'a> {
    component: &'a str,
    name: &'a str,
    notes: Vec<String>,
    spec: Spec,
}

/// A package's spec, or why it is left out.
enum Spec {
    Line {
        text: String,
        /// Its `amdgpu_target` values, when it has the variant: as planned, then as narrowed to
        /// what the dependencies it propagates them to are planned with.
        targets: Option<Vec<String>>,
    },
    Left(String),
    /// A component without a spec of its own (not built, no Spack package): its notes only.
    Comment,
}

pub(super) fn emit(kb: &Knowledge, plan: &Plan) -> Emission {
    let spack = &kb.emitters.spack;
    let mut specs = String::new();
    let mut entries: Vec<Entry> = Vec::new();
    for c in &plan.components {
        let names = package_names(kb, &c.name);
        if !c.is_built() {
            let what = if names.is_empty() {
                String::new()
            } else {
                format!(" (Spack: {}, left out of the specs)", names.join(", "))
            };
            entries.push(Entry {
                component: &c.name,
                name: "",
                notes: vec![format!("{}: not built{what}: {}", c.name, skip_reason(c))],
                spec: Spec::Comment,
            });
            continue;
        }
        if names.is_empty() {
            if !c.settings.is_empty() {
                entries.push(Entry {
                    component: &c.name,
                    name: "",
                    notes: vec![format!(
                        "{}: no Spack package known; its settings cannot be passed",
                        c.name
                    )],
                    spec: Spec::Comment,
                });
            }
            continue;
        }
        for name in names {
            let (spec, notes) = package_spec(kb, plan, c, name);
            entries.push(Entry {
                component: &c.name,
                name,
                notes,
                spec,
            });
        }
    }
    narrow_to_propagation(&kb.spack_facts, &plan.release, &mut entries);

    let mut required: BTreeMap<&str, &[String]> = BTreeMap::new();
    let mut n_specs = 0usize;
    for e in &entries {
        if matches!(e.spec, Spec::Comment) {
            push_comments(&mut specs, "  ", &e.notes);
            continue;
        }
        let mut lines: Vec<String> = e
            .notes
            .iter()
            .map(|n| format!("{} ({}): {n}", e.component, e.name))
            .collect();
        match &e.spec {
            Spec::Line { text, targets } => {
                push_comments(&mut specs, "  ", &lines);
                let mut text = text.clone();
                if let Some(t) = targets {
                    let _ = write!(
                        text,
                        " {}{}{}",
                        kb.spack_facts.target_variant,
                        spack.exact_operator,
                        t.join(",")
                    );
                    required.insert(e.name, t);
                }
                let _ = writeln!(specs, "  - {}", yaml_str(&text));
                n_specs += 1;
            }
            Spec::Left(why) => {
                lines.push(format!(
                    "{} ({}): left out of the specs: {why}",
                    e.component, e.name
                ));
                push_comments(&mut specs, "  ", &lines);
            }
            Spec::Comment => {}
        }
    }

    let mut out = header_comments(plan, Tool::Spack);
    push_comments(
        &mut out,
        "",
        &[format!(
            "amdgpu_target{op}A,B means exactly these targets (amdgpu_target=A,B would mean at least these)",
            op = spack.exact_operator
        )],
    );
    if let Some(engine) = kb.engines.get("spack").map(|e| &e.engine) {
        let read: Vec<String> = engine
            .repos
            .iter()
            .map(|r| {
                format!(
                    "{}@{}",
                    r.repo,
                    r.commit.get(..12).unwrap_or(r.commit.as_str())
                )
            })
            .collect();
        push_comments(
            &mut out,
            "",
            &[format!(
                "Recipe facts read from {} ({})",
                read.join(", "),
                engine.script
            )],
        );
    }
    out.push_str("spack:\n");
    if n_specs == 0 {
        push_comments(&mut out, "  ", &["no package to build".to_owned()]);
        out.push_str("  specs: []\n");
        out.push_str(&specs);
    } else {
        out.push_str("  specs:\n");
        out.push_str(&specs);
    }
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
                    "{}{}{}",
                    kb.spack_facts.target_variant,
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

/// A component's Spack packages, as `components.toml` names them. The packages the extraction
/// found for the others (`[components]` of engines/spack.toml) are not added as specs: with
/// `rocm-device-libs@6.2` Spack fails ("'llvm-amdgpu' requires conflicting variant values
/// '~rocm-device-libs' and '+rocm-device-libs'"), llvm-amdgpu building the device libraries itself.
fn package_names<'a>(kb: &'a Knowledge, component: &str) -> Vec<&'a str> {
    kb.components
        .get(component)
        .map(|i| i.packages.spack.iter().map(String::as_str).collect())
        .unwrap_or_default()
}

/// The release line nearest to `release` among `lines` that `ok` accepts (the newer on a tie).
fn nearest_line<'a>(
    lines: &'a [String],
    release: &str,
    ok: impl Fn(&str) -> bool,
) -> Option<&'a str> {
    let key = |l: &str| {
        let v = major_minor(l);
        i64::from(v.first().copied().unwrap_or(0)) * 100 + i64::from(v.get(1).copied().unwrap_or(0))
    };
    let want = key(release);
    lines
        .iter()
        .map(String::as_str)
        .filter(|l| ok(l))
        .min_by_key(|l| ((key(l) - want).abs(), -key(l)))
}

/// The spec of one Spack package of a built component (targets not yet narrowed), and the
/// comments that go with it.
fn package_spec(kb: &Knowledge, plan: &Plan, c: &ComponentPlan, name: &str) -> (Spec, Vec<String>) {
    let release = &plan.release;
    let facts = &kb.spack_facts;
    let info = kb.emitters.spack.package.get(name);
    let mut notes = Vec::new();
    if let Some(i) = info {
        if i.root == Some(false) {
            let why = i
                .note
                .clone()
                .unwrap_or_else(|| "not a spec of its own".into());
            return (Spec::Left(why), notes);
        }
    }
    let Some(pf) = facts.package.get(name) else {
        return (
            Spec::Left(format!(
                "{name} is not among the recipes read from spack-packages (unverified)"
            )),
            notes,
        );
    };
    if !pf.releases.iter().any(|r| r == release) {
        let nearest = nearest_line(&pf.releases, release, |_| true).unwrap_or("none");
        return (
            Spec::Left(format!(
                "spack-packages has no {release} version of {name}; nearest release line: {nearest}"
            )),
            notes,
        );
    }
    if let Some(u) = facts.unsatisfiable(name, release) {
        let nearest = nearest_line(&pf.releases, release, |l| {
            facts.unsatisfiable(name, l).is_none()
        })
        .unwrap_or("none");
        return (
            Spec::Left(format!(
                "Spack cannot concretize {name}@{release}: it requires {} ({}) and its dependency {}@{release} requires {} ({}); nearest release line that concretizes: {nearest}",
                u.package_requires,
                u.sources.first().map_or("", String::as_str),
                u.dep,
                u.dep_requires,
                u.sources.get(1).map_or("", String::as_str),
            )),
            notes,
        );
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
                if pf.variant_at(variant, release).is_empty() {
                    notes.push(format!(
                        "{}={}: {name}@{release} has no variant {variant}; not passed",
                        s.name, s.value
                    ));
                } else {
                    let _ = write!(text, " {}{variant}", if on { '+' } else { '~' });
                }
            }
            OptionUse::Note(n) => notes.push(n),
        }
    }
    let Some(values) = pf.target_values(&facts.target_variant, release) else {
        if let Some(planned) = &c.targets {
            notes.push(format!(
                "no {} variant at {release}: planned targets {} cannot be passed",
                facts.target_variant,
                planned.join(" ")
            ));
        }
        return (
            Spec::Line {
                text,
                targets: None,
            },
            notes,
        );
    };
    // A package without device code of its own (a wrapper such as hipBLAS, headers such as
    // rocPRIM) still has the variant; it gets the requested targets, narrowed below to what the
    // packages it propagates them to are planned with.
    let planned = c.targets.as_deref().unwrap_or(&plan.targets);
    let (list, dropped) = spack_targets(planned, &values);
    notes.extend(dropped);
    if list.is_empty() {
        let why = format!(
            "none of the planned targets ({}) is a value of its {} variant at {release}; Spack cannot build it for no target",
            if planned.is_empty() {
                "none".to_owned()
            } else {
                planned.join(" ")
            },
            facts.target_variant
        );
        return (Spec::Left(why), notes);
    }
    (
        Spec::Line {
            text,
            targets: Some(list),
        },
        notes,
    )
}

/// Whether a propagation's other conditions ("+ck") hold for a spec text, with the package's
/// defaults for variants the text does not set.
fn condition_holds(pf: &SpackPackageFacts, when: &str, text: &str, release: &str) -> bool {
    when.split_whitespace().all(|cond| {
        if text.split_whitespace().any(|w| w == cond) {
            return true;
        }
        let Some(name) = cond.get(1..) else {
            return false;
        };
        let on = cond.starts_with('+');
        let set_other = text
            .split_whitespace()
            .any(|w| w.get(1..) == Some(name) && (w.starts_with('+') || w.starts_with('~')));
        if set_other {
            return false;
        }
        pf.variant_at(name, release)
            .first()
            .is_some_and(|v| (v.default == "True") == on)
    })
}

/// A package gives its own `amdgpu_target` values to some dependencies (`depends_on("dep
/// amdgpu_target=T", when="amdgpu_target=T")`), so each of its targets must be one of theirs:
/// narrow every list to the lists of those dependencies, to a fixed point, and say what was
/// dropped and why. A package left with no target is left out of the specs.
fn narrow_to_propagation(facts: &SpackFacts, release: &str, entries: &mut [Entry]) {
    // Bounded: each round removes at least one target or stops.
    let total: usize = entries
        .iter()
        .map(|e| match &e.spec {
            Spec::Line {
                targets: Some(t), ..
            } => t.len(),
            _ => 0,
        })
        .sum();
    for _ in 0..=total {
        let lists: BTreeMap<String, Vec<String>> = entries
            .iter()
            .filter_map(|e| match &e.spec {
                Spec::Line {
                    targets: Some(t), ..
                } => Some((e.name.to_owned(), t.clone())),
                _ => None,
            })
            .collect();
        let mut changed = false;
        for e in entries.iter_mut() {
            let Some(pf) = facts.package.get(e.name) else {
                continue;
            };
            let Spec::Line {
                text,
                targets: Some(list),
            } = &mut e.spec
            else {
                continue;
            };
            for p in pf.propagates_at(release) {
                if !condition_holds(pf, &p.when, text, release) {
                    continue;
                }
                let Some(dep_list) = lists.get(&p.dep) else {
                    continue;
                };
                let gone: Vec<String> = list
                    .iter()
                    .filter(|t| !dep_list.contains(t))
                    .cloned()
                    .collect();
                if gone.is_empty() {
                    continue;
                }
                list.retain(|t| dep_list.contains(t));
                changed = true;
                e.notes.push(format!(
                    "{} left out of its {}: {name} gives each of its targets to {dep} ({src}), which is planned without {them}",
                    gone.join(" "),
                    facts.target_variant,
                    name = e.name,
                    dep = p.dep,
                    src = p.source,
                    them = if gone.len() == 1 { "it" } else { "them" },
                ));
            }
            if list.is_empty() {
                e.spec = Spec::Left(format!(
                    "no target is left for its {} once narrowed to its dependencies",
                    facts.target_variant
                ));
            }
        }
        if !changed {
            break;
        }
    }
}

/// The planned targets as values of an `amdgpu_target` variant, with a note for each target that
/// has no value (a target ID with features falls back to its processor when that is a value).
fn spack_targets(planned: &[String], values: &[&str]) -> (Vec<String>, Vec<String>) {
    let mut list: Vec<String> = Vec::new();
    let mut notes = Vec::new();
    for t in planned {
        let v = if values.contains(&t.as_str()) {
            t.clone()
        } else if values.contains(&processor(t)) {
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
        let values = ["gfx90a", "gfx90a:xnack-", "gfx942"];
        let planned: Vec<String> = ["gfx90a:xnack-", "gfx942:sramecc+", "gfx1030"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (list, notes) = spack_targets(&planned, &values);
        assert_eq!(list, ["gfx90a:xnack-", "gfx942"]);
        assert_eq!(notes.len(), 2, "{notes:?}");
    }
}
