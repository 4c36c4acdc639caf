//! The hand-written knowledge base (crates/rocpack-plan/data/rocm-*.toml, read through
//! rocpack_plan's kb) against the facts derived from the components' sources
//! (data/derived/debian for 6.4, data/derived/upstream for the 6.0/6.2 tags). Every disagreement
//! is printed (`--nocapture`); the test fails only on disagreements about facts the knowledge base
//! states as confirmed (no `confidence` on the fact or its table).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use rocpack_plan::Knowledge;
use rocpack_plan::kb::{ReleaseComponent, Supported};
use toml::{Table, Value};

struct Disagreement {
    confirmed: bool,
    text: String,
}

/// The KB release a derived file speaks for: Debian's 6.4.x sources, or an upstream rocm-X.Y.Z tag.
fn release_of(origin: &str) -> Option<String> {
    let version = if let Some(rest) = origin.strip_prefix("debian:") {
        rest.split_whitespace().nth(1)?.to_owned()
    } else {
        let tag = origin.split('@').nth(1)?.split_whitespace().next()?;
        tag.strip_prefix("rocm-")?.to_owned()
    };
    let mut parts = version.split(['.', '-', '+']);
    Some(format!("{}.{}", parts.next()?, parts.next()?))
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    Some(
        v?.as_array()?
            .iter()
            .filter_map(|x| x.as_str().map(str::to_owned))
            .collect(),
    )
}

/// Processor of a target id (`gfx90a:xnack-` -> `gfx90a`), as the KB compares supported sets.
fn processors(list: &[String]) -> Vec<String> {
    let mut p: Vec<String> = list
        .iter()
        .map(|t| t.split(':').next().unwrap_or(t).to_owned())
        .collect();
    p.sort();
    p.dedup();
    p
}

fn compare(
    file: &str,
    facts: &Table,
    kb: &ReleaseComponent,
    release: &str,
    out: &mut Vec<Disagreement>,
) {
    let component = facts["component"].as_str().unwrap_or_default();
    let origin = facts["origin"].as_str().unwrap_or_default();
    let mut say = |confirmed: bool, what: String| {
        out.push(Disagreement {
            confirmed,
            text: format!("{component} {release} ({origin}; {file}): {what}"),
        })
    };
    let targets = facts.get("targets").and_then(Value::as_table);
    if let (Some(t), Some(k)) = (targets, kb.targets.as_ref()) {
        let table_confirmed = k.confidence.is_none();
        if let Some(Value::Array(prec)) = t.get("precedence") {
            let derived: Vec<String> = prec
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            if let Some(first) = derived.first() {
                if *first != k.variable {
                    say(
                        table_confirmed && k.variable_confidence.is_none(),
                        format!(
                            "targets.variable: KB {:?}, derived precedence {:?}",
                            k.variable, derived
                        ),
                    );
                }
            }
            let mut kb_all = vec![k.variable.clone()];
            kb_all.extend(k.also.iter().cloned());
            kb_all.sort();
            let mut d = derived.clone();
            d.sort();
            if !derived.is_empty() && kb_all != d {
                say(
                    table_confirmed && k.variable_confidence.is_none(),
                    format!("target variables read: KB {kb_all:?}, derived {d:?}"),
                );
            }
        }
        // The default list: a target variable's default, else the list rocm_check_target_ids
        // checks (projects that keep the default in a private variable).
        let result_var = t.get("result_variable").and_then(Value::as_str);
        let default = t.get("default").and_then(Value::as_table);
        // The variable the KB names first, else the project's result variable.
        let derived_default = default
            .and_then(|d| d.get(&k.variable))
            .or_else(|| result_var.and_then(|r| default.and_then(|d| d.get(r))))
            .and_then(Value::as_table)
            .map(|d| {
                (
                    strings(d.get("list")),
                    d.get("at").and_then(Value::as_str).map(str::to_owned),
                    d.get("not_derivable")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                )
            });
        let checked = t
            .get("checked")
            .and_then(Value::as_array)
            .and_then(|a| a.last())
            .and_then(Value::as_table)
            .map(|c| {
                (
                    strings(c.get("list")),
                    c.get("at").and_then(Value::as_str).map(str::to_owned),
                    None,
                )
            });
        if let Some((list, at, not_derivable)) = derived_default.or(checked) {
            let confirmed = table_confirmed && k.default_confidence.is_none();
            match (list, not_derivable) {
                (Some(list), _) if !k.default.is_empty() && list != k.default => say(
                    confirmed,
                    format!(
                        "targets.default: KB {:?}, derived {:?} at {}",
                        k.default,
                        list,
                        at.unwrap_or_default()
                    ),
                ),
                (_, Some(r)) => say(false, format!("targets.default not derivable: {r}")),
                _ => {}
            }
        }
        if let (Some(Supported::List(kb_sup)), Some(c)) = (
            k.supported.as_ref(),
            t.get("checked")
                .and_then(Value::as_array)
                .and_then(|a| a.last())
                .and_then(Value::as_table),
        ) {
            let list = strings(c.get("list")).unwrap_or_default();
            let at = c.get("at").and_then(Value::as_str).unwrap_or_default();
            // Only when the project intersects the user's list with its own: a list it merely
            // checks is a default, not a supported set.
            let intersects = t
                .get("unknown_target")
                .and_then(Value::as_array)
                .is_some_and(|a| {
                    a.iter().any(|u| {
                        u.get("outcome").and_then(Value::as_str) == Some("dropped-by-project")
                    })
                });
            if intersects && processors(&list) != processors(kb_sup) {
                say(
                    table_confirmed && k.supported_confidence.is_none(),
                    format!("targets.supported: KB {kb_sup:?}, derived {list:?} at {at}"),
                );
            }
        }
        // What an unknown target does when given in the variable the KB says is read first.
        let outcomes: Vec<(String, String, String)> = t
            .get("unknown_target")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_table)
                    .map(|u| {
                        let g = |k: &str| {
                            u.get(k)
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned()
                        };
                        (g("variable"), g("outcome"), g("at"))
                    })
                    .collect()
            })
            .unwrap_or_default();
        if let Some(kb_unknown) = k.unknown.as_deref() {
            let chosen = outcomes
                .iter()
                .find(|(v, _, _)| *v == k.variable)
                .or_else(|| outcomes.first());
            if let Some((var, outcome, at)) = chosen {
                let agrees = match outcome.as_str() {
                    "dropped-by-compiler-check" | "dropped-by-project" => kb_unknown == "dropped",
                    "reaches-compiler" => kb_unknown != "dropped",
                    _ => true,
                };
                if !agrees {
                    let all: Vec<String> = outcomes
                        .iter()
                        .map(|(v, o, a)| {
                            if a.is_empty() {
                                format!("{v}: {o}")
                            } else {
                                format!("{v}: {o} at {a}")
                            }
                        })
                        .collect();
                    say(
                        table_confirmed,
                        format!(
                            "targets.unknown: KB {kb_unknown:?}, derived {outcome:?} for {var}{} (all: {})",
                            if at.is_empty() {
                                String::new()
                            } else {
                                format!(" at {at}")
                            },
                            all.join("; ")
                        ),
                    );
                }
            }
        }
    }
    // Options: every KB option the sources declare, with its default.
    let options: Vec<&Table> = facts
        .get("options")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_table).collect())
        .unwrap_or_default();
    let find = |name: &str| {
        options
            .iter()
            .find(|o| o.get("name").and_then(Value::as_str) == Some(name))
    };
    // Absence is only established when the whole tree was evaluated: a skipped block may add a
    // subdirectory that declares it.
    let complete = facts
        .get("not_evaluated")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty);
    for o in &kb.options {
        let confirmed = kb.confidence.is_none() && o.confidence.is_none();
        match find(&o.name) {
            // An undeclared variable reads as unset: a KB default of OFF or "" agrees.
            None if same_default("", &o.default) => {}
            None => say(
                confirmed && complete,
                format!(
                    "option {}: KB default {:?}, but the evaluated sources declare no option()/set(CACHE) of that name (an unset variable reads as OFF)",
                    o.name, o.default
                ),
            ),
            Some(d) => {
                let at = d.get("at").and_then(Value::as_str).unwrap_or_default();
                match d.get("default") {
                    Some(Value::String(v)) if !same_default(v, &o.default) => say(
                        confirmed,
                        format!(
                            "option {}: KB default {:?}, derived {:?} at {at}",
                            o.name, o.default, v
                        ),
                    ),
                    Some(Value::Table(nd)) => say(
                        false,
                        format!(
                            "option {}: KB default {:?}, derived default not derivable ({}) at {at}",
                            o.name,
                            o.default,
                            nd.get("not_derivable")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                        ),
                    ),
                    _ => {}
                }
            }
        }
    }
    for d in &kb.optional_deps {
        let confirmed = kb.confidence.is_none();
        match find(&d.option) {
            None => say(
                confirmed && complete,
                format!(
                    "optional dependency {} via option {}: the evaluated sources declare no such option",
                    d.name, d.option
                ),
            ),
            Some(o) => {
                let at = o.get("at").and_then(Value::as_str).unwrap_or_default();
                if let Some(Value::String(v)) = o.get("default") {
                    if !same_default(v, &d.default) {
                        say(
                            confirmed,
                            format!(
                                "optional dependency {} option {}: KB default {:?}, derived {:?} at {at}",
                                d.name, d.option, d.default, v
                            ),
                        );
                    }
                }
            }
        }
    }
}

/// CMake booleans compare by truth; other values by text.
fn same_default(a: &str, b: &str) -> bool {
    let truth = |s: &str| match s.to_ascii_uppercase().as_str() {
        "ON" | "1" | "YES" | "TRUE" | "Y" => Some(true),
        "OFF" | "0" | "NO" | "FALSE" | "N" | "" => Some(false),
        _ => None,
    };
    match (truth(a), truth(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

#[test]
fn knowledge_base_agrees_with_derived_facts() {
    let kb = Knowledge::embedded().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rocpack-plan/data/derived");
    let mut files = Vec::new();
    for sub in ["debian", "upstream"] {
        let dir = root.join(sub);
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "toml") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(!files.is_empty());
    let mut found = Vec::new();
    let mut compared = 0;
    for p in &files {
        let text = std::fs::read_to_string(p).unwrap();
        let facts: Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let origin = facts["origin"].as_str().unwrap_or_default();
        let component = facts["component"].as_str().unwrap_or_default();
        let Some(release) = release_of(origin) else {
            panic!(
                "{}: cannot tell the release of origin {origin:?}",
                p.display()
            );
        };
        let Some(kb_comp) = kb
            .releases
            .get(&release)
            .and_then(|r| r.components.get(component))
        else {
            println!(
                "{component} {release}: not in the knowledge base ({})",
                p.display()
            );
            continue;
        };
        compared += 1;
        let name = format!(
            "{}/{}",
            p.parent()
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
        compare(&name, &facts, kb_comp, &release, &mut found);
    }
    assert!(
        compared > 0,
        "no derived file matched a knowledge-base component"
    );
    for d in &found {
        println!(
            "{} {}",
            if d.confirmed {
                "CONFIRMED-FACT"
            } else {
                "unconfirmed"
            },
            d.text
        );
    }
    let confirmed: Vec<&str> = found
        .iter()
        .filter(|d| d.confirmed)
        .map(|d| d.text.as_str())
        .collect();
    assert!(
        confirmed.is_empty(),
        "{} disagreement(s) with facts the knowledge base states as confirmed:\n{}",
        confirmed.len(),
        confirmed.join("\n")
    );
}
