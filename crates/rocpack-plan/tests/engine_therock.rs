//! The TheRock output checked against TheRock itself, as far as CI can without its sources:
//! `data/engines/therock.toml` holds what scripts/engines/therock/extract.py read from ROCm/TheRock
//! at the commits the knowledge base's TheRock snapshots cite (`[facts."therock-<8 hex>"]`); each
//! plan is checked against the snapshot its release names. Each emitted `therock.cmake` is run
//! through what TheRock's configure does with it up to target and feature resolution
//! (therock_validate_amdgpu_targets, therock_finalize_features, the lazy per-sub-project target
//! checks, the composable-kernel gate), with the families, targets, features and sub-projects of
//! that commit. scripts/engines/therock/run.sh runs the real configure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use rocpack_plan::Tool;
use rocpack_plan::emit::emit;
use rocpack_plan::model::Plan;
use rocpack_plan::{Knowledge, Request};
use toml::Value;

/// Issue 13's requests, and two more: a family request and a target the snapshot does not have.
const REQUESTS: &[(&str, &str, &[&str], &[&str])] = &[
    ("a", "6.2", &["gfx1030"], &[]),
    ("b", "6.4", &["gfx1100", "gfx90a"], &[]),
    ("c", "7.1", &["gfx1151", "gfx1201"], &[]),
    ("family", "7.1", &[], &["gfx110X-dgpu"]),
    (
        "family+target",
        "6.4",
        &["gfx942", "gfx1250"],
        &["gfx120X-all"],
    ),
];

fn kb() -> &'static Knowledge {
    Knowledge::embedded().unwrap()
}

fn all_facts() -> Value {
    let text = include_str!("../data/engines/therock.toml");
    match toml::from_str::<toml::Table>(text) {
        Ok(t) => Value::Table(t),
        Err(e) => panic!("data/engines/therock.toml: {}", e.message()),
    }
}

/// The snapshot a release cites (`therock_snapshot`).
fn snapshot_of(release: &str) -> String {
    kb().releases[release].release.therock_snapshot.clone()
}

/// The facts read at the commit of a snapshot, shaped as `{ "facts": ... }` for the checks below.
fn facts_of(snapshot: &str) -> Value {
    let all = all_facts();
    let f = all["facts"]
        .get(snapshot)
        .unwrap_or_else(|| {
            panic!("no facts extracted for {snapshot} (re-run extract.py with its commit)")
        })
        .clone();
    Value::Table(toml::Table::from_iter([("facts".to_owned(), f)]))
}

/// The snapshot whose features `emitters.toml` describes (the one 6.0-7.0 cite).
const EMITTER_SNAPSHOT: &str = "therock-02eb4a57";

fn plan(release: &str, gpus: &[&str], families: &[&str]) -> Plan {
    let request = Request {
        gpus: gpus.iter().map(|s| s.to_string()).collect(),
        families: families.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    rocpack_plan::plan(kb(), &request, release, Tool::Therock).unwrap()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect()
}

/// `set(NAME "VALUE" CACHE TYPE "doc" FORCE)` lines of an initial cache.
fn cache_entries(script: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in script.lines().filter(|l| l.starts_with("set(")) {
        let rest = &line[4..];
        let (name, rest) = rest.split_once(' ').unwrap();
        let rest = rest.strip_prefix('"').unwrap();
        let end = rest.find("\" CACHE ").unwrap();
        out.insert(name.to_owned(), rest[..end].replace("\\\"", "\""));
    }
    out
}

fn list(v: Option<&String>) -> Vec<String> {
    v.map(|s| {
        s.split(';')
            .filter(|x| !x.is_empty())
            .map(str::to_owned)
            .collect()
    })
    .unwrap_or_default()
}

/// What TheRock at the extracted commit makes of one cache: the per-architecture and distribution
/// target lists and the features left on, or the configure error it stops with.
struct Resolved {
    per_arch: Vec<String>,
    dist: Vec<String>,
    features: BTreeMap<String, bool>,
}

fn resolve(f: &Value, cache: &BTreeMap<String, String>) -> Result<Resolved, String> {
    let known_cache = f["facts"]["cache"].as_table().unwrap();
    let features_t = f["facts"]["feature"].as_table().unwrap();
    for name in cache.keys() {
        let is_feature = name
            .strip_prefix("THEROCK_ENABLE_")
            .is_some_and(|x| features_t.contains_key(x));
        let read = strings(&f["facts"]["validate_reads"]).contains(name);
        if !(known_cache.contains_key(name) || is_feature || read) {
            return Err(format!("{name}: TheRock has no such variable"));
        }
    }
    let families = f["facts"]["family"].as_table().unwrap();
    let targets = f["facts"]["target"].as_table().unwrap();
    let fams = list(cache.get("THEROCK_AMDGPU_FAMILIES"));
    let loose = list(cache.get("THEROCK_AMDGPU_TARGETS"));
    let mut per_arch = expand(families, &fams, "THEROCK_AMDGPU_FAMILIES")?;
    per_arch.extend(loose.iter().cloned());
    dedup(&mut per_arch);
    if let Some(t) = per_arch.iter().find(|t| !targets.contains_key(t.as_str())) {
        return Err(format!("Unknown AMDGPU target '{t}'"));
    }
    let dist_fams = match list(cache.get("THEROCK_DIST_AMDGPU_FAMILIES")) {
        d if d.is_empty() => fams.clone(),
        d => d,
    };
    let mut dist = expand(families, &dist_fams, "THEROCK_DIST_AMDGPU_FAMILIES")?;
    dedup(&mut dist);
    if per_arch.is_empty() && dist.is_empty() {
        return Err("No AMDGPU target selected".to_owned());
    }
    let selections = fams.len() + loose.len();
    if selections > 1
        && cache
            .get("THEROCK_AMDGPU_DIST_BUNDLE_NAME")
            .is_none_or(|v| v.is_empty())
    {
        return Err(format!(
            "More than one AMDGPU target bundle selected ({}): THEROCK_AMDGPU_DIST_BUNDLE_NAME must be set explicitly",
            [fams.clone(), loose.clone()].concat().join(";")
        ));
    }

    // Features: the group's option gives the default, the cache overrides it, and
    // therock_finalize_features turns every required feature on.
    let group_default = |group: &str| -> bool {
        let Some(e) = known_cache.get(&format!("THEROCK_ENABLE_{group}")) else {
            return false;
        };
        match e["default"].as_str().unwrap() {
            "ON" => true,
            "${THEROCK_ENABLE_ALL}" => cache.get("THEROCK_ENABLE_ALL").is_none_or(|v| v == "ON"),
            _ => false,
        }
    };
    let mut on: BTreeMap<String, bool> = features_t
        .iter()
        .map(|(n, e)| {
            let group = e["group"].as_str().unwrap();
            let v = match cache.get(&format!("THEROCK_ENABLE_{n}")) {
                Some(v) => v == "ON",
                None => group.is_empty() || group_default(group),
            };
            (n.clone(), v)
        })
        .collect();
    loop {
        let mut changed = false;
        for (n, e) in features_t {
            if on[n] {
                for r in strings(&e["requires"]) {
                    if on.get(&r) == Some(&false) {
                        on.insert(r, true);
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    // The lazy checks of _therock_cmake_subproject_setup_toolchain: a sub-project that is
    // configured needs its list.
    for (name, s) in f["facts"]["subproject"].as_table().unwrap() {
        let active = strings(&s["features"])
            .iter()
            .all(|x| on.get(x.trim_start_matches("THEROCK_ENABLE_")) != Some(&false));
        let empty = match s["targets"].as_str().unwrap() {
            "per-arch" => per_arch.is_empty(),
            "dist" => dist.is_empty(),
            _ => false,
        };
        if active && empty {
            return Err(format!(
                "Subproject {name} requires {} AMDGPU targets but none were set",
                s["targets"].as_str().unwrap()
            ));
        }
    }
    Ok(Resolved {
        per_arch,
        dist,
        features: on,
    })
}

/// The targets of the families named in `var`, or TheRock's error for an unknown one.
fn expand(families: &toml::Table, names: &[String], var: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for fam in names {
        let members = families
            .get(fam)
            .ok_or_else(|| format!("{var} value '{fam}' unknown"))?;
        out.extend(strings(members));
    }
    Ok(out)
}

fn dedup(v: &mut Vec<String>) {
    let mut seen = BTreeSet::new();
    v.retain(|x| seen.insert(x.clone()));
}

/// TheRock's sub-project name of a component.
fn subproject(component: &str) -> &str {
    kb().therock_names
        .iter()
        .find(|(_, v)| v.as_str() == component)
        .map_or(component, |(k, _)| k.as_str())
}

#[test]
fn therock_configures_every_emitted_cache_as_planned() {
    for (name, release, gpus, families) in REQUESTS {
        let f = facts_of(&snapshot_of(release));
        let gate = strings(&f["facts"]["ck_gate"]["_ck_supported_gfx_targets"]["targets"]);
        let plan = plan(release, gpus, families);
        let out = emit(kb(), &plan, Tool::Therock);
        let cache = cache_entries(&out.files[0].1);
        let r = resolve(&f, &cache).unwrap_or_else(|e| panic!("({name}) TheRock stops: {e}"));

        // The targets TheRock builds are the planned ones it knows.
        let known = f["facts"]["target"].as_table().unwrap();
        let mut want: Vec<String> = plan
            .targets
            .iter()
            .map(|t| t.split(':').next().unwrap_or(t).to_owned())
            .filter(|t| known.contains_key(t))
            .collect();
        dedup(&mut want);
        let mut got = r.per_arch.clone();
        got.sort();
        want.sort();
        assert_eq!(got, want, "({name}) per-architecture targets");
        assert!(!r.dist.is_empty(), "({name}) no distribution targets");

        // Every THEROCK_ENABLE_*=OFF written stays off, and every planned component is built.
        for (var, v) in &cache {
            if let Some(feat) = var.strip_prefix("THEROCK_ENABLE_") {
                assert_eq!(
                    r.features.get(feat),
                    Some(&(v == "ON")),
                    "({name}) {var}={v} is not what TheRock ends with"
                );
            }
        }
        let subs = f["facts"]["subproject"].as_table().unwrap();
        for c in plan.components.iter().filter(|c| c.is_built()) {
            let Some(s) = subs.get(subproject(&c.name)) else {
                continue;
            };
            for feat in strings(&s["features"]) {
                let feat = feat.trim_start_matches("THEROCK_ENABLE_");
                assert_eq!(
                    r.features.get(feat),
                    Some(&true),
                    "({name}) {} is planned but THEROCK_ENABLE_{feat} ends OFF",
                    c.name
                );
            }
        }

        // MIOpen's use of CK: ON is overridden by the gate in ml-libs/CMakeLists.txt when any
        // per-architecture target is outside it.
        if cache
            .get("THEROCK_MIOPEN_USE_COMPOSABLE_KERNEL")
            .is_some_and(|v| v == "ON")
        {
            let outside: Vec<&String> = r.per_arch.iter().filter(|t| !gate.contains(t)).collect();
            assert!(
                outside.is_empty(),
                "({name}) THEROCK_MIOPEN_USE_COMPOSABLE_KERNEL=ON, but TheRock turns it off for {outside:?} (gate {gate:?} at {})",
                f["facts"]["ck_gate"]["_ck_supported_gfx_targets"]["at"]
                    .as_str()
                    .unwrap_or("?")
            );
        }
    }
}

/// The unfixed emitter's caches (loose THEROCK_AMDGPU_TARGETS, no bundle name) are what the real
/// configure rejected; the simulation must reject them the same way, or it proves nothing.
#[test]
fn resolution_rejects_what_therock_rejected() {
    let f = facts_of(EMITTER_SNAPSHOT);
    let one = BTreeMap::from([("THEROCK_AMDGPU_TARGETS".to_owned(), "gfx1030".to_owned())]);
    let e = resolve(&f, &one).err().unwrap();
    assert!(e.contains("requires dist AMDGPU targets"), "{e}");
    let two = BTreeMap::from([(
        "THEROCK_AMDGPU_TARGETS".to_owned(),
        "gfx1100;gfx90a".to_owned(),
    )]);
    let e = resolve(&f, &two).err().unwrap();
    assert!(
        e.contains("THEROCK_AMDGPU_DIST_BUNDLE_NAME must be set"),
        "{e}"
    );
    let fam = BTreeMap::from([("THEROCK_AMDGPU_FAMILIES".to_owned(), "gfx1250".to_owned())]);
    assert!(resolve(&f, &fam).is_err());
    // And the rules simulated are TheRock's, at the extracted commit.
    let checks: Vec<String> = f["facts"]["check"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["message"].as_str().unwrap().to_owned())
        .collect();
    for m in [
        "THEROCK_AMDGPU_DIST_BUNDLE_NAME must be set explicitly",
        "No AMDGPU target selected",
        "Unknown AMDGPU target",
    ] {
        assert!(
            checks.iter().any(|c| c.contains(m)),
            "{m} not among {checks:?}"
        );
    }
}

/// `emitters.toml`'s TheRock features and fixed options are the ones at the extracted commit.
#[test]
fn emitter_knowledge_matches_therock() {
    let f = facts_of(EMITTER_SNAPSHOT);
    let features = f["facts"]["feature"].as_table().unwrap();
    let subs = f["facts"]["subproject"].as_table().unwrap();
    let therock = &kb().emitters.therock;
    for (name, feat) in &therock.feature {
        let e = features
            .get(name)
            .unwrap_or_else(|| panic!("THEROCK_ENABLE_{name}: no such feature in TheRock"));
        let listed: Vec<String> = strings(&e["requires"])
            .into_iter()
            .filter(|r| therock.feature.contains_key(r))
            .collect();
        assert_eq!(
            feat.requires, listed,
            "{name}: REQUIRES (of the listed features)"
        );
        for c in &feat.components {
            let s = subs
                .get(subproject(c))
                .unwrap_or_else(|| panic!("{name}: {c} is no TheRock sub-project"));
            assert!(
                strings(&s["features"]).contains(&format!("THEROCK_ENABLE_{name}")),
                "{name}: {c} is not guarded by it ({})",
                s["at"].as_str().unwrap_or("?")
            );
        }
    }
    // Every feature that requires a listed one is listed (else turning the listed one off would
    // be undone unseen).
    for (name, e) in features {
        if therock.feature.contains_key(name) {
            continue;
        }
        for r in strings(&e["requires"]) {
            assert!(
                !therock.feature.contains_key(&r) || e["group"].as_str() == Some("IREE_LIBS"),
                "THEROCK_ENABLE_{name} requires {r} but is not in emitters.toml"
            );
        }
    }
    // Every component TheRock builds is listed under one of the features that guard it.
    for (sub, s) in subs {
        let comp = kb()
            .therock_names
            .get(sub)
            .map_or(sub.as_str(), String::as_str);
        if !kb().components.contains_key(comp) {
            continue;
        }
        let guards: Vec<String> = strings(&s["features"])
            .iter()
            .map(|g| g.trim_start_matches("THEROCK_ENABLE_").to_owned())
            .filter(|g| therock.feature.contains_key(g))
            .collect();
        if guards.is_empty() {
            continue;
        }
        assert!(
            guards
                .iter()
                .any(|g| therock.feature[g].components.iter().any(|c| c == comp)),
            "{comp}: built under {guards:?}, listed under none"
        );
    }
    for o in &therock.option {
        let (Some(c), Some(fixed)) = (&o.component, &o.fixed) else {
            continue;
        };
        let s = &subs[subproject(c)];
        let args = s.get("cmake_args").map(strings).unwrap_or_default();
        let arg = args
            .iter()
            .find(|a| a.starts_with(&format!("-D{}=", o.option)))
            .unwrap_or_else(|| panic!("{c}: TheRock passes no -D{}", o.option));
        let v = arg.split_once('=').map(|(_, v)| v).unwrap_or_default();
        // A variable (platform-dependent in TheRock) cannot be checked here; a literal must match.
        if !v.starts_with("${") {
            assert_eq!(v, fixed, "{c}: {arg}");
        }
    }
}

/// The knowledge base's TheRock snapshot (data/families.toml) says what TheRock says at the commit
/// it cites: families, per-project exclusions, and the composable-kernel gate.
#[test]
fn snapshot_matches_therock_at_its_commit() {
    let all = all_facts();
    let mut checked = 0;
    for snap in &kb().snapshots {
        let Some(raw) = all["facts"].get(&snap.id) else {
            continue;
        };
        checked += 1;
        let f = Value::Table(toml::Table::from_iter([("facts".to_owned(), raw.clone())]));
        check_snapshot(snap, &f);
    }
    assert!(
        checked > 0,
        "no snapshot of families.toml has extracted facts"
    );
}

fn check_snapshot(snap: &rocpack_plan::kb::Snapshot, f: &Value) {
    let commit = f["facts"]["commit"].as_str().unwrap();
    let targets = f["facts"]["target"].as_table().unwrap();
    let families = f["facts"]["family"].as_table().unwrap();
    for (fam, members) in &snap.families {
        assert_eq!(
            Some(members),
            families.get(fam).map(strings).as_ref(),
            "{}: family {fam}",
            snap.id
        );
    }
    let mut exclude: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (t, e) in targets {
        for p in strings(&e["exclude"]) {
            exclude.entry(p).or_default().push(t.clone());
        }
    }
    for (project, ts) in &snap.exclude {
        let mut want = exclude.get(project).cloned().unwrap_or_default();
        let mut got = ts.clone();
        want.sort();
        got.sort();
        assert_eq!(got, want, "{}: exclusions of {project}", snap.id);
    }
    let gate = &f["facts"]["ck_gate"]["_ck_supported_gfx_targets"];
    if let Some(g) = &snap.ck_gate {
        assert_eq!(
            g.supported,
            strings(&gate["targets"]),
            "{}: CK gate; TheRock at {commit} has it at {} and it limits MIOpen's use of CK only",
            snap.id,
            gate["at"].as_str().unwrap_or("?")
        );
        assert!(
            g.disables.is_empty(),
            "{}: at {commit} the gate disables no sub-project ({}); it only sets THEROCK_MIOPEN_USE_COMPOSABLE_KERNEL off, but the snapshot says it disables {:?}",
            snap.id,
            gate["at"].as_str().unwrap_or("?"),
            g.disables
        );
    }
}
