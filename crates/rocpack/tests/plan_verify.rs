//! `rocpack plan verify` as text, on the fixture install of tests/support/plan_verify_tree.rs
//! (the library's tests check the report's data on the same install).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::*;

#[path = "../../../tests/support/plan_verify_tree.rs"]
mod plan_verify_tree;
use plan_verify_tree::{COMPONENTS, GPUS, SET, fixture, rocm_tree};

/// The plan the install is checked against, written by `rocpack plan --format json`.
fn plan_file(dir: &Path) -> PathBuf {
    let mut args: Vec<String> = vec![
        "plan".into(),
        "--release".into(),
        "6.4".into(),
        "--gpu".into(),
        GPUS.join(","),
        "--components".into(),
        COMPONENTS.join(","),
        "--format".into(),
        "json".into(),
    ];
    for s in SET {
        args.push("--set".into());
        args.push((*s).to_owned());
    }
    let path = dir.join("plan.json");
    std::fs::write(&path, rocpack_ok(&args)).unwrap();
    path
}

fn verify_text(plan: &Path, prefix: &Path) -> (Option<i32>, String) {
    let mut cmd = rocpack();
    cmd.args(["plan", "verify", "-q"]).arg(plan).arg(prefix);
    let out = output_of(&mut cmd);
    let text = String::from_utf8(out.stdout)
        .unwrap()
        .replace(&prefix.display().to_string(), "[PREFIX]");
    (out.status.code(), text)
}

#[test]
fn text_of_the_fixture_install() {
    let dir = tempdir();
    let prefix = dir.path().join("rocm");
    rocm_tree(&prefix);
    let (code, text) = verify_text(&plan_file(dir.path()), &prefix);
    assert_eq!(code, Some(1), "planned targets are missing: {text}");
    insta::assert_snapshot!("fixture_install_text", text);
}

#[test]
fn an_unreadable_file_is_listed_with_its_offset_and_ends_in_unreadable() {
    let dir = tempdir();
    let prefix = dir.path().join("rocm");
    rocm_tree(&prefix);
    // A bundle cut short: its first entry runs past the end of the file.
    let bytes = std::fs::read(fixture("tu1.hipfb")).unwrap();
    std::fs::write(
        prefix.join("lib/rocblas/library/TensileLibrary_cut_gfx1030.co"),
        &bytes[..5000],
    )
    .unwrap();
    let (code, text) = verify_text(&plan_file(dir.path()), &prefix);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("error[malformed-bundle]: ")
            && text.contains("TensileLibrary_cut_gfx1030.co: file offset 0x53: offload bundle"),
        "{text}"
    );
    assert!(
        text.lines().last().unwrap().starts_with("unreadable: "),
        "{text}"
    );
}

/// The global reading limits reach plan verify's reads: a decompression limit below the
/// compressed bundles' entries (lib/librocfft.so.0.1, CCOB v2) makes them unreadable.
#[test]
fn the_reading_limits_apply() {
    let dir = tempdir();
    let prefix = dir.path().join("rocm");
    rocm_tree(&prefix);
    let plan = plan_file(dir.path());
    let mut cmd = rocpack();
    cmd.args(["plan", "verify", "-q", "--max-decompressed", "100"])
        .arg(&plan)
        .arg(&prefix);
    let out = output_of(&mut cmd);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("error[decompression-limit]: ") && text.contains("librocfft.so.0.1"),
        "{text}"
    );
    let (code, text) = verify_text(&plan, &prefix);
    assert_eq!(code, Some(1), "{text}");
    assert!(!text.contains("decompression-limit"), "{text}");
}
