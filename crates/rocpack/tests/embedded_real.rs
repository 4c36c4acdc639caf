//! Embedded GPU code in real wheels from PyPI (network: `pip download --no-deps` once into
//! ~/.cache/rocpack-corpus/wheels), judged by an independent byte census (bench/census.py,
//! which does not use rocpack): every AMDGPU ELF header and every offload bundle header in
//! every member must be one rocpack reports, at the same offset, and nothing more.
//!
//! - tensorflow-rocm 2.14.0.600 (427 MB): libtensorflow_cc.so.2 holds 8,340 code objects,
//!   6,894 of them in 1,149 bundles in .rodata (`*_kernel_<n>_blob`, loaded as modules);
//! - mojolearn-amd 0.8.62: 4,502 bare gfx942 code objects in .rodata of six libraries, the
//!   only GPU code of the package: `check --gpu gfx1100` must say `none`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

/// The wheel `name==version`, downloaded once.
fn wheel(name: &str, version: &str, file_prefix: &str) -> PathBuf {
    let home = std::env::var_os("HOME").expect("HOME is not set");
    let dir = Path::new(&home).join(".cache/rocpack-corpus/wheels");
    std::fs::create_dir_all(&dir).unwrap();
    let find = || {
        std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(file_prefix) && n.ends_with(".whl"))
            })
    };
    if let Some(p) = find() {
        return p;
    }
    let out = Command::new("pip")
        .args(["download", "--no-deps", "--quiet", "-d"])
        .arg(&dir)
        .arg(format!("{name}=={version}"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run pip to download {name}=={version}: {e}"));
    assert!(
        out.status.success(),
        "network needed: `pip download --no-deps {name}=={version}` failed (is PyPI reachable?):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    find().unwrap_or_else(|| {
        panic!(
            "pip downloaded no {file_prefix}*.whl into {}",
            dir.display()
        )
    })
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    code_objects: BTreeSet<u64>,
    bundles: BTreeSet<u64>,
    ccobs: BTreeSet<u64>,
}

fn census(whl: &Path) -> BTreeMap<String, Counts> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/census.py");
    let out = run_ok(Command::new("python3").arg(script).arg("--json").arg(whl));
    let mut m = BTreeMap::new();
    for v in json_lines(&out) {
        let set = |k: &str| -> BTreeSet<u64> {
            v["offsets"][k]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect()
        };
        let c = Counts {
            code_objects: set("amdgpu_elf64"),
            bundles: set("bundle"),
            ccobs: set("ccob"),
        };
        if c != Counts::default() {
            m.insert(get_str(&v, "file").to_owned(), c);
        }
    }
    m
}

fn rocpack_counts(whl: &Path) -> BTreeMap<String, Counts> {
    let mut m: BTreeMap<String, Counts> = BTreeMap::new();
    for r in list_all(whl, false) {
        let c = m.entry(get_str(&r, "file").to_owned()).or_default();
        let container = get_str(&r, "container");
        let last = container.rsplit(" > ").next().unwrap_or_default();
        let last = last.trim_end_matches(" [module]");
        if get_str(&r, "format") == "code-object" && !get_bool(&r, "compressed") {
            c.code_objects.insert(get_u64(&r, "file_offset"));
        }
        if last.starts_with("bundle") && !get_bool(&r, "compressed") {
            c.bundles.insert(get_u64(&r, "bundle_offset"));
        }
        if last.contains("ccob") {
            c.ccobs.insert(get_u64(&r, "bundle_offset"));
        }
    }
    m.retain(|_, c| *c != Counts::default());
    m
}

fn census_agrees(whl: &Path) -> BTreeMap<String, Counts> {
    let ours = rocpack_counts(whl);
    let theirs = census(whl);
    // The census names members WHEEL!/member exactly as rocpack does (the same path given).
    for (file, c) in &theirs {
        let r = ours
            .get(file)
            .unwrap_or_else(|| panic!("rocpack reports nothing in {file}"));
        for (what, a, b) in [
            ("AMDGPU ELF headers", &c.code_objects, &r.code_objects),
            ("bundle headers", &c.bundles, &r.bundles),
            ("CCOB headers", &c.ccobs, &r.ccobs),
        ] {
            let missed: Vec<_> = a.difference(b).take(5).collect();
            let extra: Vec<_> = b.difference(a).take(5).collect();
            assert!(
                missed.is_empty() && extra.is_empty(),
                "{file}: {what}: census {} vs rocpack {}; missed at {missed:?}, extra at {extra:?}",
                a.len(),
                b.len()
            );
        }
    }
    let extra: Vec<&String> = ours.keys().filter(|f| !theirs.contains_key(*f)).collect();
    assert!(
        extra.is_empty(),
        "rocpack reports GPU code the census does not see in {extra:?}"
    );
    ours
}

#[test]
fn tensorflow_rocm_kernel_blobs_in_rodata_match_the_census() {
    let whl = wheel(
        "tensorflow-rocm",
        "2.14.0.600",
        "tensorflow_rocm-2.14.0.600-",
    );
    let ours = census_agrees(&whl);
    let total: usize = ours.values().map(|c| c.code_objects.len()).sum();
    eprintln!(
        "tensorflow-rocm: {total} code objects in {} files",
        ours.len()
    );
    let rows = list_all(&whl, false);
    let module = rows
        .iter()
        .filter(|r| get_str(r, "loading") == "module" && get_str(r, "format") == "code-object")
        .count();
    let kernel_blob = rows
        .iter()
        .filter(|r| {
            let symbol = get_str(r, "container")
                .split(" > ")
                .next()
                .unwrap_or_default();
            symbol.starts_with(".rodata:")
                && symbol.contains("_kernel")
                && symbol.ends_with("_blob")
        })
        .filter(|r| get_str(r, "format") == "code-object")
        .count();
    eprintln!(
        "tensorflow-rocm: {module} module-loaded, {kernel_blob} under .rodata *_kernel_<n>_blob symbols"
    );
    assert_eq!(
        module, kernel_blob,
        "module-loaded code outside .rodata *_kernel_<n>_blob symbols"
    );
}

#[test]
fn mojolearn_bare_code_objects_match_the_census_and_fail_on_gfx1100() {
    let whl = wheel("mojolearn-amd", "0.8.62", "mojolearn_amd-0.8.62-");
    let ours = census_agrees(&whl);
    assert!(!ours.is_empty());
    let out = Command::new(rocpack_bin())
        .args(["check", "--json", "--gpu", "gfx1100", "--gpu", "gfx942"])
        .arg(&whl)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "check must fail on gfx1100");
    let verdicts: Vec<Value> = json_lines(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .filter(|r| r["type"] == "verdict")
        .collect();
    assert_eq!(verdicts.len(), 2 * ours.len());
    for v in &verdicts {
        let want = if v["target"] == "gfx1100" {
            "none"
        } else {
            "native"
        };
        assert_eq!(v["verdict"], want, "{v}");
        assert_eq!(v["loading"], "module", "{v}");
        if want == "none" {
            // The reason names the code: module-loaded, and where (section and symbol).
            let reason = get_str(v, "reason");
            assert!(
                reason.starts_with("module-loaded code ") && reason.contains(" .rodata:"),
                "{v}"
            );
        }
    }
}
