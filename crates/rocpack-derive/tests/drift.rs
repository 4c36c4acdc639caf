//! The committed `crates/rocpack-plan/data/derived/debian/*.toml` are what rocpack-derive gives
//! on Debian sid's source packages today: scripts/derive-facts.sh downloads them (network, once,
//! into ~/.cache/rocpack-corpus/src, about 300 MB) and derives again into a temporary
//! directory with this build of the tool; any byte of difference fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn toml_names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect()
}

#[test]
fn committed_debian_facts_match_a_fresh_derivation() {
    let out = tempfile::tempdir().unwrap();
    let script = repo().join("scripts/derive-facts.sh");
    let run = Command::new("bash")
        .arg(&script)
        .arg("--out")
        .arg(out.path())
        .env("ROCPACK_DERIVE", env!("CARGO_BIN_EXE_rocpack-derive"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let stderr = String::from_utf8_lossy(&run.stderr);
    match run.status.code() {
        Some(0) => {}
        Some(3) => {
            panic!("network needed: cannot reach the Debian mirror (derive-facts.sh)\n{stderr}")
        }
        _ => panic!(
            "derive-facts.sh --out failed with {}:\n{stderr}",
            run.status
        ),
    }
    let committed_dir = repo().join("crates/rocpack-plan/data/derived/debian");
    let committed = toml_names(&committed_dir);
    let fresh = toml_names(out.path());
    assert!(
        !committed.is_empty(),
        "no committed facts in {}",
        committed_dir.display()
    );
    let mut drift = Vec::new();
    for name in committed.union(&fresh) {
        let a = std::fs::read_to_string(committed_dir.join(name)).ok();
        let b = std::fs::read_to_string(out.path().join(name)).ok();
        match (a, b) {
            (Some(a), Some(b)) if a == b => {}
            (Some(_), Some(b)) => {
                let first = a_b_first_difference(&committed_dir.join(name), &b);
                drift.push(format!("{name}: differs from a fresh derivation ({first})"));
            }
            (Some(_), None) => drift.push(format!(
                "{name}: committed, but its source package could not be derived now:\n{stderr}"
            )),
            (None, Some(_)) => drift.push(format!("{name}: derived now but not committed")),
            (None, None) => {}
        }
    }
    assert!(
        drift.is_empty(),
        "derived facts drifted; run scripts/derive-facts.sh and review the diff:\n{}",
        drift.join("\n")
    );
}

/// The first differing line, for the failure message.
fn a_b_first_difference(committed: &Path, fresh: &str) -> String {
    let old = std::fs::read_to_string(committed).unwrap_or_default();
    for (i, (a, b)) in old.lines().zip(fresh.lines()).enumerate() {
        if a != b {
            return format!("line {}: committed {a:?}, now {b:?}", i + 1);
        }
    }
    format!(
        "{} lines committed, {} now",
        old.lines().count(),
        fresh.lines().count()
    )
}

#[test]
fn deriving_twice_gives_the_same_bytes() {
    // A tree of the shape the tool reads, written here: the point is determinism, not facts.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.5)\nproject(t CXX)\n\
         option(BUILD_X \"x\" ON)\nset(Z_OPT 3 CACHE STRING \"z\")\nset(A_OPT 1 CACHE STRING \"a\")\n\
         rocm_check_target_ids(DEFAULT TARGETS \"gfx1100;gfx90a\")\n\
         if(NOT GPU_TARGETS)\n  set(GPU_TARGETS \"${DEFAULT}\" CACHE STRING \"\")\nendif()\n\
         if(BUILD_X)\n  find_package(foo REQUIRED)\nendif()\n",
    )
    .unwrap();
    let derive = |out: &Path| {
        let st = Command::new(env!("CARGO_BIN_EXE_rocpack-derive"))
            .arg(dir.path())
            .args(["--component", "t", "--origin", "test", "-o"])
            .arg(out)
            .status()
            .unwrap();
        assert!(st.success());
        std::fs::read(out).unwrap()
    };
    let a = derive(&dir.path().join("a.toml"));
    let b = derive(&dir.path().join("b.toml"));
    assert_eq!(a, b);
    let text = String::from_utf8(a).unwrap();
    let a_pos = text.find("name = \"A_OPT\"").unwrap();
    let z_pos = text.find("name = \"Z_OPT\"").unwrap();
    assert!(a_pos < z_pos, "options are sorted by name");
    // The default list is the checked one, cited where the project sets it.
    assert!(text.contains("at = \"CMakeLists.txt:8\""), "{text}");
}
