//! Facts derived from the components' own sources (`data/derived/`, written by
//! `scripts/derive-facts.sh` with rocpack-derive) laid over the hand-written release files.
//!
//! Where a derived file speaks for a release the knowledge base plans (Debian's 6.4.x source
//! packages for 6.4, an upstream `rocm-X.Y.Z` tag for X.Y), the planner uses the derived value:
//! the target variables a project reads and in which precedence, its default target list, what
//! a target the compiler does not know does, and every option's default. The hand-written value
//! stays only where the sources do not settle the fact (not derivable, a file not evaluated).
//! A value taken from the sources no longer carries the hand-written `confidence`, so no plan
//! line calls it unverified; every comparison is kept in [`Knowledge::derived`] for the test that
//! fails when a fact the release file states as confirmed disagrees with its sources.

use rocpack_cmake::{is_off, is_on};
use toml::{Table, Value};

use super::{KbError, ReleaseComponent, Supported, kb_error};

/// The target variable hip-config reads for every project that links hip::device.
const HIP_CONFIG_VARIABLE: &str = "GPU_TARGETS";

/// One fact compared between a release file and a derived file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DerivedFact {
    /// The release (`6.4`).
    pub release: String,
    pub component: String,
    /// Which fact: `targets.variable`, `targets.default`, `targets.unknown`, `option NAME`, ...
    pub fact: String,
    /// The value the release file had (`None`: it had none).
    pub typed: Option<String>,
    /// The value the sources give (`None`: they do not settle it; the typed value stays).
    pub derived: Option<String>,
    /// Whether the release file stated its value as confirmed (no `confidence` on it).
    pub typed_confirmed: bool,
    /// Where the derived value comes from: the origin and `path:line`, or why it is not derivable.
    pub at: String,
}

impl DerivedFact {
    /// Whether the release file and the sources disagree.
    pub fn disagrees(&self) -> bool {
        match (&self.typed, &self.derived) {
            (Some(t), Some(d)) => !same_value(t, d),
            _ => false,
        }
    }
}

/// Whether the scenario that set `variable` alone ended with a different value in it.
fn overwritten(targets: &Table, variable: &str) -> bool {
    let Some(scenarios) = targets.get("scenarios").and_then(Value::as_array) else {
        return false;
    };
    scenarios.iter().filter_map(Value::as_table).any(|sc| {
        let Some(set) = sc.get("set").and_then(Value::as_table) else {
            return false;
        };
        let Some(given) = set.get(variable).and_then(Value::as_str) else {
            return false;
        };
        if set.len() != 1 {
            return false;
        }
        let ended = sc
            .get("result")
            .and_then(Value::as_table)
            .and_then(|r| strings(r.get(variable)));
        ended.is_some_and(|e| !e.iter().map(String::as_str).eq(given.split(';')))
    })
}

/// The knowledge-base release a derived file's origin speaks for: Debian's `6.4.x` sources,
/// or an upstream `rocm-X.Y.Z` tag.
pub fn release_of(origin: &str) -> Option<String> {
    let version = if let Some(rest) = origin.strip_prefix("debian:") {
        rest.split_whitespace().nth(1)?.to_owned()
    } else {
        let tag = origin.split('@').nth(1)?.split_whitespace().next()?;
        tag.strip_prefix("rocm-")?.to_owned()
    };
    let mut parts = version.split(['.', '-', '+']);
    Some(format!("{}.{}", parts.next()?, parts.next()?))
}

/// One derived file: its facts, the release and the component it speaks for.
pub(super) struct DerivedFile {
    facts: Table,
    pub release: String,
    pub component: String,
}

/// Tables of a derived file the planner does not read: more than half of all derived lines,
/// skipped before parsing so that loading the knowledge base stays fast.
const UNREAD_TABLES: [&str; 2] = ["dependencies", "ck_instances"];

/// The text of a derived file without the tables in [`UNREAD_TABLES`]. The files are written by
/// rocpack-derive: a line starting with `[` in the first column is always a table header (its
/// arrays and strings are indented or quoted), so a table runs to the next such line.
fn planner_view(text: &str) -> String {
    let mut out = String::with_capacity(text.len() / 2);
    let mut keep = true;
    for line in text.split_inclusive('\n') {
        if line.starts_with('[') {
            let name = line.trim_start_matches('[');
            keep = !UNREAD_TABLES.iter().any(|t| {
                name.strip_prefix(t)
                    .is_some_and(|rest| rest.starts_with(['.', ']']))
            });
        }
        if keep {
            out.push_str(line);
        }
    }
    out
}

/// Reads a derived file (`name` for errors).
pub(super) fn read(name: &str, text: &str) -> Result<DerivedFile, KbError> {
    let facts: Table =
        toml::from_str(&planner_view(text)).map_err(|e| kb_error(name, e.to_string()))?;
    let str_of = |k: &str| facts.get(k).and_then(Value::as_str).map(str::to_owned);
    let component = str_of("component").ok_or_else(|| kb_error(name, "no component"))?;
    let origin = str_of("origin").ok_or_else(|| kb_error(name, "no origin"))?;
    let release = release_of(&origin).ok_or_else(|| {
        kb_error(
            name,
            format!("cannot tell the release of origin {origin:?}"),
        )
    })?;
    Ok(DerivedFile {
        facts,
        release,
        component,
    })
}

/// Lays a derived file over the release file's entry of its component and returns every fact
/// compared.
pub(super) fn apply(file: &DerivedFile, rc: &mut ReleaseComponent) -> Vec<DerivedFact> {
    let facts = &file.facts;
    let (release, component) = (&file.release, &file.component);
    let origin = facts
        .get("origin")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut fact = |fact: String,
                    typed: Option<String>,
                    derived: Option<String>,
                    typed_confirmed: bool,
                    at: String| {
        out.push(DerivedFact {
            release: release.clone(),
            component: component.clone(),
            fact,
            typed,
            derived,
            typed_confirmed,
            at: format!("{origin}, {at}"),
        });
    };
    // Absence is only established when the whole tree was evaluated.
    let complete = facts
        .get("not_evaluated")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty);
    if let (Some(t), Some(k)) = (
        facts.get("targets").and_then(Value::as_table),
        rc.targets.as_mut(),
    ) {
        let table_confirmed = k.confidence.is_none();
        let precedence = strings(t.get("precedence")).unwrap_or_default();
        // A project that reads no target variable and, given the typed one alone, ends with
        // another value in it overwrites the user's list (RCCL 6.0.2, CMakeLists.txt:66-67,
        // FORCE). Not reading it is not enough: hip-config may read it (MIOpen).
        let derived_ignored = precedence.is_empty() && overwritten(t, &k.variable);
        if k.ignored || derived_ignored {
            let say = |ignored: bool| {
                if ignored {
                    "ignored: every target variable is overwritten".to_owned()
                } else {
                    "read".to_owned()
                }
            };
            fact(
                "targets.ignored".into(),
                Some(say(k.ignored)),
                Some(say(derived_ignored)),
                table_confirmed && k.variable_confidence.is_none(),
                "the variables its CMakeLists reads, in precedence (none) and those it ignores"
                    .into(),
            );
        }
        if let Some((first, rest)) = precedence.split_first() {
            let mut typed = vec![k.variable.clone()];
            typed.extend(k.also.iter().cloned());
            let typed = typed;
            // hip::device compiles for GPU_TARGETS whatever the project read: hip-config seeds
            // it from AMDGPU_TARGETS only when it is not given (ROCm/clr
            // hipamd/hip-config-amd.cmake at 018eeb4c: `set(GPU_TARGETS "${AMDGPU_TARGETS}"
            // CACHE ...)`, then one --offload-arch per entry; Debian's 6.4.3 copy, :69-73 and
            // :168-172). A release file may list it for a project that never reads it itself;
            // the sources speak only for the project, so it is compared without it and kept.
            // Only when the release file lists it last, and the project leaves it as given
            // (the scenario that sets it alone ends with it unchanged).
            let by_hip_config = !precedence.iter().any(|v| v == HIP_CONFIG_VARIABLE)
                && typed.last().is_some_and(|v| v == HIP_CONFIG_VARIABLE)
                && typed.len() > 1
                && !overwritten(t, HIP_CONFIG_VARIABLE);
            let mut derived = precedence.clone();
            if by_hip_config {
                derived.push(HIP_CONFIG_VARIABLE.to_owned());
            }
            fact(
                "targets.variables".into(),
                Some(typed.join(" ")),
                Some(derived.join(" ")),
                table_confirmed && k.variable_confidence.is_none(),
                if by_hip_config {
                    "the variables its CMakeLists reads, in precedence, then GPU_TARGETS, which \
                     only hip-config reads"
                        .into()
                } else {
                    "the variables its CMakeLists reads, in precedence".into()
                },
            );
            k.variable = first.clone();
            k.also = rest.to_vec();
            if by_hip_config {
                k.also.push(HIP_CONFIG_VARIABLE.to_owned());
            }
            k.variable_confidence = None;
        }
        // The default list: the first-read variable's default, else the project's result
        // variable's, else the list rocm_check_target_ids checks.
        let default = t.get("default").and_then(Value::as_table);
        let result_var = t.get("result_variable").and_then(Value::as_str);
        let entry = default
            .and_then(|d| d.get(&k.variable))
            .or_else(|| result_var.and_then(|r| default.and_then(|d| d.get(r))))
            .and_then(Value::as_table)
            .or_else(|| last_checked(t));
        if let Some(e) = entry {
            let at = e.get("at").and_then(Value::as_str).unwrap_or_default();
            let typed = (!k.default.is_empty()).then(|| k.default.join(";"));
            let confirmed = table_confirmed && k.default_confidence.is_none();
            match (
                strings(e.get("list")),
                e.get("not_derivable").and_then(Value::as_str),
            ) {
                (Some(list), _) if !list.is_empty() => {
                    fact(
                        "targets.default".into(),
                        typed,
                        Some(list.join(";")),
                        confirmed,
                        at.to_owned(),
                    );
                    k.default = list;
                    k.default_confidence = None;
                }
                (_, Some(why)) => fact(
                    "targets.default".into(),
                    typed,
                    None,
                    confirmed,
                    format!("not derivable: {why}"),
                ),
                _ => {}
            }
        }
        // A supported set: only where the project intersects the user's list with its own (a
        // list it merely checks is a default).
        let outcomes = unknown_outcomes(t);
        if let (Some(Supported::List(typed)), Some(c)) = (k.supported.as_ref(), last_checked(t)) {
            let intersects = outcomes.iter().any(|(_, o, _)| o == "dropped-by-project");
            let list = strings(c.get("list")).unwrap_or_default();
            if intersects && !list.is_empty() {
                let at = c.get("at").and_then(Value::as_str).unwrap_or_default();
                fact(
                    "targets.supported".into(),
                    Some(processors(typed).join(";")),
                    Some(processors(&list).join(";")),
                    table_confirmed && k.supported_confidence.is_none(),
                    at.to_owned(),
                );
                // The typed list keeps its feature-qualified ids where it names the same
                // processors.
                if processors(typed) != processors(&list) {
                    k.supported = Some(Supported::List(list));
                }
                k.supported_confidence = None;
            }
        }
        // What a target the compiler does not know does, given in the first-read variable.
        let chosen = outcomes
            .iter()
            .find(|(v, _, _)| *v == k.variable)
            .or_else(|| outcomes.first());
        if let (Some((var, outcome, at)), Some(typed)) = (chosen, k.unknown.clone()) {
            // A target reaching the compiler is shown by the evaluated scenario itself (it is in
            // the --offload-arch list); a drop must be tied to the line that drops it, since a
            // target missing from a scenario's list may be lost in a part not evaluated.
            let derived = match outcome.as_str() {
                // The KB's word for a target that reaches the compiler.
                "reaches-compiler" => Some("error"),
                "dropped-by-compiler-check" | "dropped-by-project" if !at.is_empty() => {
                    Some("dropped")
                }
                _ => None,
            };
            fact(
                "targets.unknown".into(),
                Some(typed),
                derived.map(str::to_owned),
                table_confirmed,
                match (derived, at.is_empty()) {
                    (Some(_), true) => format!("{var}: {outcome} in the evaluated scenario"),
                    (None, true) => {
                        format!("{var}: {outcome}, at no line of the sources: not settled")
                    }
                    _ => format!("{var}: {outcome} at {at}"),
                },
            );
            if let Some(d) = derived {
                k.unknown = Some(d.to_owned());
            }
        }
    }
    // Options: every option the release file names, with the default its sources declare.
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
    let whole = rc.confidence.is_none();
    for o in &mut rc.options {
        let confirmed = whole && o.confidence.is_none();
        let typed = Some(o.default.clone());
        match find(&o.name) {
            Some(d) => {
                let at = d.get("at").and_then(Value::as_str).unwrap_or_default();
                match d.get("default") {
                    Some(Value::String(v)) => {
                        let v = cmake_bool(v);
                        fact(
                            format!("option {}", o.name),
                            typed.clone(),
                            Some(v.clone()),
                            confirmed,
                            at.to_owned(),
                        );
                        o.default = v;
                        o.confidence = None;
                    }
                    Some(Value::Table(nd)) => fact(
                        format!("option {}", o.name),
                        typed.clone(),
                        None,
                        confirmed,
                        format!(
                            "{at}: not derivable: {}",
                            nd.get("not_derivable")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                        ),
                    ),
                    _ => {}
                }
            }
            // An undeclared variable reads as unset (OFF); only a complete evaluation says so.
            None if complete => {
                fact(
                    format!("option {}", o.name),
                    typed,
                    Some(String::new()),
                    confirmed,
                    "no option()/set(CACHE) of that name in the evaluated sources".into(),
                );
                o.default = String::new();
                o.confidence = None;
            }
            None => {}
        }
    }
    for d in &mut rc.optional_deps {
        let Some(o) = find(&d.option) else {
            continue;
        };
        let at = o.get("at").and_then(Value::as_str).unwrap_or_default();
        if let Some(Value::String(v)) = o.get("default") {
            let v = cmake_bool(v);
            fact(
                format!("optional dependency {} ({})", d.name, d.option),
                Some(d.default.clone()),
                Some(v.clone()),
                whole,
                at.to_owned(),
            );
            d.default = v;
        }
    }
    out
}

/// `[[targets.unknown_target]]` as (variable, outcome, at).
fn unknown_outcomes(t: &Table) -> Vec<(String, String, String)> {
    t.get("unknown_target")
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
        .unwrap_or_default()
}

/// The last `[[targets.checked]]` list (what rocm_check_target_ids is given).
fn last_checked(t: &Table) -> Option<&Table> {
    t.get("checked")
        .and_then(Value::as_array)
        .and_then(|a| a.last())
        .and_then(Value::as_table)
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    Some(
        v?.as_array()?
            .iter()
            .filter_map(|x| x.as_str().map(str::to_owned))
            .collect(),
    )
}

/// Processors of target ids (`gfx90a:xnack-` -> `gfx90a`), sorted, once each.
fn processors(list: &[String]) -> Vec<String> {
    let mut p = crate::model::processors(list);
    p.sort();
    p
}

/// A CMake boolean constant spelled as the knowledge base and the planner spell it (`ON`/`OFF`),
/// by CMake's own rules (`cmIsOn`/`cmIsOff`, rocpack_cmake); an empty value (unset) and
/// anything else as it is.
fn cmake_bool(v: &str) -> String {
    if v.is_empty() {
        String::new()
    } else if is_on(v) {
        "ON".to_owned()
    } else if is_off(v) {
        "OFF".to_owned()
    } else {
        v.to_owned()
    }
}

/// CMake booleans compare by truth (an unset value is false), other values by text.
fn same_value(a: &str, b: &str) -> bool {
    let truth = |s: &str| {
        if is_on(s) {
            Some(true)
        } else if is_off(s) {
            Some(false)
        } else {
            None
        }
    };
    match (truth(a), truth(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Skipping the unread tables changes nothing the planner reads: every derived file gives
    /// the same top-level keys, targets and options as its full parse.
    #[test]
    fn the_planner_view_keeps_every_fact_read() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/derived");
        let mut files = 0;
        for sub in ["debian", "upstream"] {
            for e in std::fs::read_dir(dir.join(sub)).unwrap() {
                let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
                let full: Table = toml::from_str(&text).unwrap();
                let view: Table = toml::from_str(&planner_view(&text)).unwrap();
                for (k, v) in &full {
                    if UNREAD_TABLES.contains(&k.as_str()) {
                        assert!(!view.contains_key(k));
                    } else {
                        assert_eq!(view.get(k), Some(v), "{k}");
                    }
                }
                files += 1;
            }
        }
        assert!(files > 20);
    }
}
