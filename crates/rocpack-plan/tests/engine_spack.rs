//! Every emitted spack.yaml against what Spack's recipes accept: `data/engines/spack.toml`,
//! extracted from spack-packages with Spack's own Python (scripts/engines/spack/extract.py). The
//! facts are read here with the TOML parser directly, not through the planner's types, so the
//! check does not share the emitter's reading of them. The real concretizer runs in
//! scripts/engines/spack/run.sh (needs the repositories; not CI).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use rocpack_plan::Tool;
use rocpack_plan::emit::emit;
use rocpack_plan::model::Plan;
use rocpack_plan::{Knowledge, Request};
use toml::Value;

/// The requests of issue 13, (a)-(c), and two more: (label, release, --gpu).
const REQUESTS: &[(&str, &str, &[&str])] = &[
    ("a", "6.2", &["gfx1030"]),
    ("b", "6.4", &["gfx1100", "gfx90a"]),
    ("c", "7.1", &["gfx1151", "gfx1201"]),
    ("d", "7.0", &["gfx942"]),
    ("e", "6.0", &["gfx1030"]),
];

const FACTS: &str = include_str!("../data/engines/spack.toml");
const TARGET_VARIANT: &str = "amdgpu_target";

fn kb() -> &'static Knowledge {
    Knowledge::embedded().unwrap()
}

fn facts() -> Value {
    toml::from_str(FACTS).unwrap()
}

fn plan_for(release: &str, gpus: &[&str]) -> Plan {
    let request = Request {
        gpus: gpus.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    rocpack_plan::plan(kb(), &request, release, Tool::Spack).unwrap()
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn has_release(v: &Value, release: &str) -> bool {
    strs(&v["releases"]).iter().any(|r| r == release)
}

/// A package's variant definitions named `name` that apply at `release` with the package's own
/// defaults for the variants their `when=` names ("+rocm").
fn definitions<'a>(pkg: &'a Value, name: &str, release: &str) -> Vec<&'a Value> {
    let all: &[Value] = pkg
        .get("variant")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let default_of = |v: &str| {
        all.iter()
            .find(|d| {
                d["name"].as_str() == Some(v)
                    && d["when"].as_str() == Some("")
                    && has_release(d, release)
            })
            .and_then(|d| d["default"].as_str())
    };
    all.iter()
        .filter(|d| d["name"].as_str() == Some(name) && has_release(d, release))
        .filter(|d| {
            d["when"]
                .as_str()
                .unwrap()
                .split_whitespace()
                .all(|c| match c.split_at(1) {
                    ("@", _) => true,
                    ("+", v) => default_of(v) == Some("True"),
                    ("~", v) => default_of(v) == Some("False"),
                    _ => false,
                })
        })
        .collect()
}

/// The values of a definition that are GPU targets.
fn targets_of(def: &Value) -> Vec<String> {
    let mut out: Vec<String> = def
        .get("sets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(strs)
        .collect();
    out.extend(def.get("values").map(strs).unwrap_or_default());
    out.retain(|v| v != "auto" && v != "none");
    out
}

/// The specs (`pkg@X.Y ...`) and the `packages:<pkg>:require` lists of an emitted spack.yaml,
/// read from the layout the emitter writes (double-quoted scalars, two-space indents).
fn read_env(text: &str) -> (Vec<String>, BTreeMap<String, Vec<String>>) {
    let unquote = |s: &str| s.trim().trim_matches('"').to_owned();
    let mut specs = Vec::new();
    let mut require = BTreeMap::new();
    let mut section = "";
    let mut current = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        match line {
            "  specs:" | "  specs: []" => section = "specs",
            "  packages:" | "  packages: {}" => section = "packages",
            "  concretizer:" => section = "",
            _ => {}
        }
        if section == "specs" {
            if let Some(s) = line.strip_prefix("  - ") {
                specs.push(unquote(s));
            }
        } else if section == "packages" {
            if let Some(p) = line.strip_prefix("    ").filter(|p| !p.starts_with(' ')) {
                current = unquote(p.trim_end_matches(':'));
            } else if let Some(r) = line.strip_prefix("      - ") {
                require.insert(current.clone(), vec![unquote(r)]);
            }
        }
    }
    (specs, require)
}

/// Everything that is wrong with one emitted environment, as messages.
fn violations(plan: &Plan, text: &str) -> Vec<String> {
    let facts = facts();
    let packages = &facts["facts"]["package"];
    let release = plan.release.as_str();
    let (specs, require) = read_env(text);
    let mut bad = Vec::new();
    // package -> its amdgpu_target list in the specs
    let mut lists: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for spec in &specs {
        let mut words = spec.split_whitespace();
        let head = words.next().unwrap_or_default();
        let (name, version) = head.split_once('@').unwrap_or((head, ""));
        if version != release {
            bad.push(format!("{spec}: not pinned to {release}"));
        }
        if let Some(list) = words
            .clone()
            .find_map(|w| w.strip_prefix(&format!("{TARGET_VARIANT}:=")))
        {
            lists.insert(
                name.to_owned(),
                list.split(',').map(str::to_owned).collect(),
            );
        }
        let Some(pkg) = packages.get(name) else {
            bad.push(format!("{spec}: {name} is not a package of spack-packages"));
            continue;
        };
        if !has_release(pkg, release) {
            bad.push(format!("{spec}: spack-packages has no {release} version"));
        }
        let broken = facts["facts"]
            .get("unsatisfiable")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|u| u["package"].as_str() == Some(name) && u["release"].as_str() == Some(release));
        if broken {
            bad.push(format!("{spec}: Spack cannot concretize {name}@{release}"));
        }
        for w in words.clone() {
            if let Some(v) = w.strip_prefix('+').or_else(|| w.strip_prefix('~')) {
                if definitions(pkg, v, release).is_empty() {
                    bad.push(format!("{spec}: {name}@{release} has no variant {v}"));
                }
            }
        }
        let defs = definitions(pkg, TARGET_VARIANT, release);
        let list = lists.get(name);
        match (defs.is_empty(), list) {
            (true, Some(_)) => bad.push(format!("{spec}: no {TARGET_VARIANT} variant at {release}")),
            (false, None) => bad.push(format!(
                "{spec}: {TARGET_VARIANT} left at its default ({}), which no dependent's propagated target can join",
                defs[0]["default"].as_str().unwrap_or("?")
            )),
            (false, Some(list)) => {
                if list.is_empty() || list.iter().any(String::is_empty) {
                    bad.push(format!("{spec}: empty {TARGET_VARIANT}"));
                }
                for d in &defs {
                    let values = targets_of(d);
                    for t in list {
                        if !values.contains(t) {
                            bad.push(format!(
                                "{spec}: {t} is not a value of {TARGET_VARIANT} ({})",
                                d["source"].as_str().unwrap_or("?")
                            ));
                        }
                    }
                }
                let req = require.get(name).cloned().unwrap_or_default();
                let want = vec![format!("{TARGET_VARIANT}:={}", list.join(","))];
                if req != want {
                    bad.push(format!("{spec}: packages:{name}:require is {req:?}, not {want:?}"));
                }
            }
            (true, None) => {}
        }
    }
    // Propagation: each target of a package must be in the list of every dependency that gets it.
    for spec in &specs {
        let mut words = spec.split_whitespace();
        let name = words
            .next()
            .unwrap_or_default()
            .split('@')
            .next()
            .unwrap_or_default();
        let (Some(pkg), Some(list)) = (packages.get(name), lists.get(name)) else {
            continue;
        };
        let props = pkg
            .get("propagates")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for p in props.iter().filter(|p| has_release(p, release)) {
            let cond = p["when"].as_str().unwrap_or_default();
            let holds = cond.split_whitespace().all(|c| {
                let (sign, v) = c.split_at(1);
                let other = if sign == "+" {
                    format!("~{v}")
                } else {
                    format!("+{v}")
                };
                if words.clone().any(|w| w == c) {
                    return true;
                }
                if words.clone().any(|w| w == other) {
                    return false;
                }
                definitions(pkg, v, release)
                    .first()
                    .and_then(|d| d["default"].as_str())
                    == Some(if sign == "+" { "True" } else { "False" })
            });
            let dep = p["dep"].as_str().unwrap_or_default();
            if !holds {
                continue;
            }
            if let Some(dep_list) = lists.get(dep) {
                for t in list {
                    if !dep_list.contains(t) {
                        bad.push(format!(
                            "{spec}: gives {t} to {dep} ({}), which is planned without it",
                            p["source"].as_str().unwrap_or("?")
                        ));
                    }
                }
            }
        }
    }
    // Every planned target that the variant accepts is in the list, unless a comment says that
    // a dependency it propagates to is planned without it; a package left out while the recipe
    // could take some of its targets says why.
    for c in plan.components.iter().filter(|c| c.is_built()) {
        let planned = c.targets.as_ref().unwrap_or(&plan.targets);
        for name in &kb().components[&c.name].packages.spack {
            let Some(pkg) = packages.get(name.as_str()) else {
                continue;
            };
            let defs = definitions(pkg, TARGET_VARIANT, release);
            // Not a spec of its own by design (Tensile, fetched by rocblas as a resource).
            let not_root = kb()
                .emitters
                .spack
                .package
                .get(name)
                .is_some_and(|p| p.root == Some(false));
            if defs.is_empty() || not_root {
                continue;
            }
            let accepted: Vec<String> = planned
                .iter()
                .filter_map(|t| {
                    let p = t.split(':').next().unwrap_or(t);
                    [t.as_str(), p]
                        .into_iter()
                        .find(|v| defs.iter().all(|d| targets_of(d).iter().any(|x| x == v)))
                        .map(str::to_owned)
                })
                .collect();
            let narrowed = |t: &str| {
                text.lines().any(|l| {
                    l.contains(&format!("({name}): "))
                        && l.contains(&format!("left out of its {TARGET_VARIANT}"))
                        && l.split_whitespace().any(|w| w == t)
                })
            };
            match lists.get(name.as_str()) {
                Some(list) => {
                    for t in accepted
                        .iter()
                        .filter(|t| !list.contains(t) && !narrowed(t))
                    {
                        bad.push(format!(
                            "{name}: planned target {t} is a value of {TARGET_VARIANT} but not in the list {}",
                            list.join(",")
                        ));
                    }
                }
                None if specs
                    .iter()
                    .any(|s| s.split('@').next() == Some(name.as_str())) =>
                {
                    // in the specs without a list: reported above
                }
                None => {
                    let said = text.lines().any(|l| {
                        l.contains(&format!("({name}): left out of the specs"))
                            && (l.contains("nearest release line")
                                || l.contains("no target is left"))
                    });
                    if !accepted.is_empty() && !said {
                        bad.push(format!(
                            "{name}: left out although {TARGET_VARIANT} accepts {}",
                            accepted.join(" ")
                        ));
                    }
                }
            }
        }
    }
    // A built component whose package cannot be had at this release is said so, with the
    // nearest release line, and a plan finding names it.
    for c in plan.components.iter().filter(|c| c.is_built()) {
        for name in &kb().components[&c.name].packages.spack {
            let Some(pkg) = packages.get(name.as_str()) else {
                continue;
            };
            let comp = &facts["components"][c.name.as_str()];
            let buildable = comp
                .get("releases")
                .is_some_and(|_| has_release(comp, release));
            let in_specs = specs
                .iter()
                .any(|s| s.split('@').next() == Some(name.as_str()));
            if buildable || in_specs && has_release(pkg, release) {
                continue;
            }
            if !text.contains(&format!("{} ({name}): left out of the specs", c.name))
                || !text.contains("nearest release line")
            {
                bad.push(format!(
                    "{}: Spack cannot build {name}@{release}, and the output does not say so with the nearest release line",
                    c.name
                ));
            }
        }
    }
    bad
}

#[test]
fn emitted_environments_respect_the_recipes_of_spack_packages() {
    let mut all = Vec::new();
    for (label, release, gpus) in REQUESTS {
        let plan = plan_for(release, gpus);
        let out = emit(kb(), &plan, Tool::Spack);
        for v in violations(&plan, &out.stdout) {
            all.push(format!("({label}) {release} {}: {v}", gpus.join(",")));
        }
    }
    assert!(
        all.is_empty(),
        "{} violation(s):\n{}",
        all.len(),
        all.join("\n")
    );
}

#[test]
fn migraphx_at_a_release_spack_cannot_concretize_is_a_finding_with_the_nearest_release() {
    let facts = facts();
    let broken: Vec<String> = facts["facts"]["unsatisfiable"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["package"].as_str() == Some("migraphx"))
        .map(|u| u["release"].as_str().unwrap().to_owned())
        .collect();
    // spack-packages at the extracted commit: migraphx@:6.2 needs half@2:, miopen-hip half@1.
    assert!(broken.iter().any(|r| r == "6.2"), "{broken:?}");
    for (_, release, gpus) in REQUESTS.iter().filter(|r| broken.iter().any(|b| b == r.1)) {
        let plan = plan_for(release, gpus);
        let finding = plan
            .findings
            .iter()
            .find(|f| f.component == "MIGraphX" && f.id.starts_with("spack-"));
        let f = finding.unwrap_or_else(|| panic!("{release}: no Spack finding for MIGraphX"));
        assert!(f.message.contains("6.3"), "{release}: {}", f.message);
        let out = emit(kb(), &plan, Tool::Spack);
        assert!(
            !out.stdout.contains("\"migraphx@"),
            "{release}: migraphx in the specs"
        );
    }
}

#[test]
fn the_reader_of_this_test_sees_specs_and_requires() {
    let text = "spack:\n  specs:\n  # c\n  - \"rocblas@6.4 +hipblaslt amdgpu_target:=gfx90a\"\n  packages:\n    \"rocblas\":\n      require:\n      - \"amdgpu_target:=gfx90a\"\n  concretizer:\n    unify: true\n";
    let (specs, require) = read_env(text);
    assert_eq!(specs, ["rocblas@6.4 +hipblaslt amdgpu_target:=gfx90a"]);
    assert_eq!(require["rocblas"], ["amdgpu_target:=gfx90a"]);
}
