//! Snapshot tests of every command's text and JSON output on the committed fixtures, plus the
//! exit-status contract. Run `INSTA_UPDATE=always cargo test -p rocpack --test cli` after an
//! intended output change and review the diff of tests/snapshots/.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bin")
}

/// Runs rocpack in the fixtures directory so that paths in the output are short and stable.
fn rocpack(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocpack"))
        .args(args)
        .current_dir(fixtures())
        // The environment must not change verdicts or help texts.
        .env_remove("HSA_OVERRIDE_GFX_VERSION")
        .output()
        .expect("run rocpack")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 stdout")
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("utf-8 stderr")
}

#[test]
fn list_every_fixture() {
    let o = rocpack(&["list", "."]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    // The one warning: libunclassified.so's broken AMDGPU header.
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("warning[unclassified-gpu-code]: ./libunclassified.so:"),
        "{err}"
    );
    insta::assert_snapshot!(stdout(&o));
}

#[test]
fn list_all_entries_includes_host_entries() {
    let o = rocpack(&["list", "--all-entries", "tu1.o", "rdc1.o"]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    assert!(out.contains("host-x86_64-unknown-linux--"), "{out}");
    assert!(out.contains("host-x86_64-pc-linux-gnu-"), "{out}");
    insta::assert_snapshot!(out);
}

#[test]
fn list_json_lines() {
    let o = rocpack(&[
        "list",
        "--json",
        "lib3tu-mixed.so",
        "gfx9-generic-xnack-.co",
        "libnd.a",
        "ccob-v3-zlib.hipfb",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    for line in out.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
        for key in [
            "file",
            "container",
            "bundle_offset",
            "entry_id",
            "target",
            "cov",
            "size",
            "compressed",
        ] {
            assert!(v.get(key).is_some(), "{key} missing in {line}");
        }
    }
    insta::assert_snapshot!(out);
}

#[test]
fn list_verify_checks_ccob_hashes() {
    let o = rocpack(&[
        "list",
        "--verify",
        "ccob-v1-zstd.hipfb",
        "ccob-two-v2-zstd.hipfb",
        "lib2tu-compressed.so",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 1 + 2 + 4 + 3);
}

/// `show --kernels` reads a file twice and checks the CCOB hashes on the first reading only:
/// a wrong hash is reported once, as in plain `show`.
#[test]
fn show_kernels_reports_a_wrong_ccob_hash_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut data = std::fs::read(fixtures().join("ccob-v2-zstd.hipfb")).expect("fixture");
    data[16] ^= 0xff;
    let path = dir.path().join("bad-hash.hipfb");
    std::fs::write(&path, &data).expect("write");
    for args in [
        &["show", "--json"][..],
        &["show", "--kernels", "--json"][..],
    ] {
        let mut args = args.to_vec();
        args.push(path.to_str().expect("utf-8"));
        let o = rocpack(&args);
        let v: serde_json::Value =
            serde_json::from_str(stdout(&o).trim()).expect("one JSON object");
        assert_eq!(v["containers"][0]["hash_ok"], false, "{args:?}");
        let mismatches = v["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .filter(|d| d["code"] == "ccob-hash-mismatch")
            .count();
        assert_eq!(mismatches, 1, "{args:?}: {v}");
    }
}

#[test]
fn show_text() {
    let o = rocpack(&[
        "show",
        "lib3tu-mixed.so",
        "libhost-thin.a",
        "librdc.so",
        "nd-rdc1.o",
        "lib3tu-noshdr.so",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!(stdout(&o));
}

#[test]
fn show_kernels() {
    let o = rocpack(&["show", "--kernels", "tu1.o", "gfx90a-v4.co"]);
    assert_eq!(o.status.code(), Some(0));
    insta::assert_snapshot!(stdout(&o));
}

#[test]
fn show_json_has_containers_and_kernels() {
    let o = rocpack(&["show", "--json", "--kernels", "tu2-compressed.hipfb"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("one JSON object");
    let containers = v["containers"].as_array().expect("containers");
    assert_eq!(containers[0]["type"], "ccob");
    assert_eq!(containers[0]["hash_ok"], true);
    let cos = v["code_objects"].as_array().expect("code objects");
    let gfx906 = cos
        .iter()
        .find(|c| c["target"] == "gfx906:sramecc-:xnack-")
        .expect("gfx906 entry");
    assert!(
        !gfx906["metadata"]["kernels"]
            .as_array()
            .expect("kernels")
            .is_empty()
    );
    insta::assert_json_snapshot!(v);
}

/// `--help` of rocpack and of every command it lists (so a new command gets a snapshot).
#[test]
fn help_texts() {
    let root = rocpack(&["--help"]);
    assert_eq!(root.status.code(), Some(0));
    let root_text = stdout(&root);
    insta::assert_snapshot!("help-help", root_text);
    let commands = common::commands_in_help(&root_text);
    assert!(commands.len() >= 14, "{commands:?}");
    for c in &commands {
        let o = rocpack(&[c.as_str(), "--help"]);
        assert_eq!(o.status.code(), Some(0), "{c}");
        insta::assert_snapshot!(format!("help-{c}"), stdout(&o));
    }
}

#[test]
fn extract_writes_only_into_the_output_directory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out");
    let o = rocpack(&[
        "extract",
        "lib3tu-lld.so",
        "--target",
        "gfx906:sramecc-:xnack-",
        "-o",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let written: Vec<_> = std::fs::read_dir(&out)
        .expect("out dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("dir").count(),
        1,
        "nothing but the output directory"
    );
    // A feature the code object pins (sramecc-) must match: gfx906:sramecc+ finds nothing.
    let o = rocpack(&[
        "extract",
        "lib3tu-lld.so",
        "--target",
        "gfx906:sramecc+",
        "-o",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no code object for gfx906:sramecc+"));
}

#[test]
fn extract_rejects_a_malformed_target() {
    let o = rocpack(&["extract", "tu1.o", "--target", "gfx90a:xnack"]);
    assert_eq!(o.status.code(), Some(2));
    insta::assert_snapshot!(stderr(&o));
}

#[test]
fn missing_file_is_an_error_and_the_walk_goes_on() {
    let o = rocpack(&["list", "no-such-file.so", "tu3.o"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stdout(&o).contains("gfx942"),
        "the good file is still listed"
    );
    assert!(
        stderr(&o).starts_with("error: no-such-file.so: "),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_bad_file_in_a_directory_is_reported_with_container_and_offset() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::copy(fixtures().join("tu3.o"), dir.path().join("good.o")).expect("copy");
    let mut bad = std::fs::read(fixtures().join("tu1.hipfb")).expect("read");
    // Claim u64::MAX entries in the bundle header.
    bad[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(dir.path().join("bad.hipfb"), bad).expect("write");
    let o = Command::new(env!("CARGO_BIN_EXE_rocpack"))
        .args(["list", "."])
        .current_dir(dir.path())
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(2));
    assert!(stdout(&o).contains("./good.o"), "{}", stdout(&o));
    insta::assert_snapshot!(stderr(&o));
}

/// A sysfs fixture, relative to the fixtures directory rocpack runs in (so that paths in
/// snapshots do not depend on where the repository is).
fn sysfs(name: &str) -> String {
    format!("../../../crates/rocpack-devices/tests/fixtures/sysfs/{name}")
}

fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    stdout(o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn check_every_fixture_on_two_gpus() {
    let o = rocpack(&[
        "check",
        ".",
        "--gpu",
        "gfx1031",
        "--gpu",
        "gfx90a:sramecc+:xnack-",
    ]);
    // Most fixtures carry no gfx1031 code: exit 1, not an error.
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(&o));
    insta::assert_snapshot!(stdout(&o));
}

#[test]
fn check_json_records_have_the_documented_fields() {
    let o = rocpack(&[
        "check",
        "--json",
        "tu1.hipfb",
        "gfx10-3-generic.co",
        "gfx90a-xnack+.co",
        "--gpu",
        "gfx1031",
        "--gpu",
        "RX 6900 XT",
    ]);
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(&o));
    let records = json_lines(&o);
    let verdicts: Vec<_> = records.iter().filter(|r| r["type"] == "verdict").collect();
    assert_eq!(verdicts.len(), 6);
    for r in &verdicts {
        for field in ["file", "gpu", "verdict", "reason"] {
            assert!(!r[field].is_null(), "{field} missing in {r}");
        }
    }
    // `gpu` is exactly as given; `target` is the canonical processor behind an alias.
    assert!(
        verdicts
            .iter()
            .any(|r| r["gpu"] == "RX 6900 XT" && r["target"] == "gfx1030")
    );
    let find = |file: &str, gpu: &str| {
        verdicts
            .iter()
            .find(|r| r["file"] == file && r["gpu"] == gpu)
            .map(|r| r["verdict"].as_str().unwrap().to_owned())
            .unwrap()
    };
    assert_eq!(find("gfx10-3-generic.co", "gfx1031"), "generic");
    assert_eq!(find("gfx90a-xnack+.co", "gfx1031"), "none");
    assert_eq!(records.last().unwrap()["type"], "summary");
    insta::assert_snapshot!(stdout(&o));
}

#[test]
fn check_policy_and_override_verdicts() {
    // tu1.hipfb carries gfx1030 code (among others) in an uncompressed bundle.
    let hip = rocpack(&["check", "--json", "tu1-gfx1030.hipfb", "--gpu", "gfx1031"]);
    let debian = rocpack(&[
        "check",
        "--json",
        "tu1-gfx1030.hipfb",
        "--gpu",
        "gfx1031",
        "--policy",
        "debian",
    ]);
    let overridden = rocpack(&[
        "check",
        "--json",
        "tu1-gfx1030.hipfb",
        "--gpu",
        "gfx1031",
        "--hsa-override-gfx-version",
        "10.3.0",
    ]);
    let verdict = |o: &Output| json_lines(o)[1]["verdict"].as_str().unwrap().to_owned();
    assert_eq!(verdict(&hip), "none");
    assert_eq!(hip.status.code(), Some(1));
    assert_eq!(verdict(&debian), "policy");
    assert_eq!(debian.status.code(), Some(0));
    assert_eq!(verdict(&overridden), "override");
    assert_eq!(overridden.status.code(), Some(0));
    // The variable is read too, and a malformed value is refused as the runtime refuses it.
    let env = Command::new(env!("CARGO_BIN_EXE_rocpack"))
        .args(["check", "tu1-gfx1030.hipfb", "--gpu", "gfx1031"])
        .current_dir(fixtures())
        .env("HSA_OVERRIDE_GFX_VERSION", "10.3")
        .output()
        .unwrap();
    assert_eq!(env.status.code(), Some(2));
    assert!(stderr(&env).contains("10.3"), "{}", stderr(&env));
}

#[test]
fn check_rejects_gpus_that_are_not_gpus() {
    for (gpu, says) in [
        ("gfx1030:xnack+", "no xnack feature"),
        ("gfx10-3-generic", "generic target, not a GPU"),
        ("gfx4242", "unknown GPU"),
        ("Radeon", "matches several processors"),
    ] {
        let o = rocpack(&["check", "tu1.hipfb", "--gpu", gpu]);
        assert_eq!(o.status.code(), Some(2), "{gpu}");
        assert!(stderr(&o).contains(says), "{gpu}: {}", stderr(&o));
    }
    // A product name that names one processor is fine.
    let o = rocpack(&["check", "--json", "tu1.hipfb", "--gpu", "RX 7900 XTX"]);
    assert_eq!(json_lines(&o)[0]["target"], "gfx1100", "{}", stderr(&o));
}

#[test]
fn check_uses_the_detected_gpus() {
    let o = rocpack(&[
        "check",
        "--json",
        "tu1.hipfb",
        "--sysfs-root",
        &sysfs("raphael-7900gre"),
    ]);
    let gpus: Vec<String> = json_lines(&o)
        .iter()
        .filter(|r| r["type"] == "gpu")
        .map(|r| r["target"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(gpus, ["gfx1100", "gfx1036"], "{}", stderr(&o));
    let empty = tempfile::tempdir().unwrap();
    let o = rocpack(&[
        "check",
        "tu1.hipfb",
        "--sysfs-root",
        empty.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no AMD GPU found"), "{}", stderr(&o));
    assert!(stderr(&o).contains("--gpu"), "{}", stderr(&o));
}

#[test]
fn scan_matrix_text_and_json() {
    let o = rocpack(&["scan", "."]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    insta::assert_snapshot!("scan_text", stdout(&o));
    let o = rocpack(&["scan", "--json", "."]);
    let records = json_lines(&o);
    let targets: Vec<&str> = records
        .iter()
        .filter(|r| r["type"] == "target")
        .map(|r| r["gpu"].as_str().unwrap())
        .collect();
    // Members of the generic targets present get columns, generic targets themselves do not.
    assert!(targets.contains(&"gfx1031"), "{targets:?}");
    assert!(
        !targets.iter().any(|t| t.contains("generic")),
        "{targets:?}"
    );
    insta::assert_snapshot!("scan_json", stdout(&o));
}

#[test]
fn gpus_catalogue_views() {
    let o = rocpack(&["gpus", "rdna2"]);
    assert_eq!(o.status.code(), Some(0));
    insta::assert_snapshot!("gpus_rdna2", stdout(&o));
    let o = rocpack(&["gpus", "gfx10-3-generic"]);
    insta::assert_snapshot!("gpus_generic_detail", stdout(&o));
    let o = rocpack(&["gpus", "--json", "MI300"]);
    let records = json_lines(&o);
    assert!(records.iter().any(|r| r["name"] == "gfx942"), "{records:?}");
    let o = rocpack(&["gpus", "no-such-gpu"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn devices_from_a_sysfs_copy() {
    let o = rocpack(&[
        "devices",
        "--sysfs-root",
        &sysfs("mi210-xgmi"),
        "--amdgpu-ids",
        &sysfs("amdgpu.ids"),
    ]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("gfx90a:sramecc+:xnack-"), "{out}");
    insta::assert_snapshot!("devices_mi210", out);
}

#[test]
fn show_jsonl_says_what_show_json_says() {
    // A code object whose metadata note is corrupt adds a diagnostic record and an exit of 2.
    let dir = common::tempdir();
    let mut bad = std::fs::read(fixtures().join("gfx90a-v4.co")).unwrap();
    let note = common::find_all(&bad, b"AMDGPU\0\0")[0];
    bad[note + 8] = 0xc1;
    let bad_path = dir.path().join("bad-metadata.co");
    std::fs::write(&bad_path, bad).unwrap();
    common::assert_jsonl_matches_json(
        &fixtures(),
        &[
            "tu1.o",
            "tu2-compressed.hipfb",
            "lib3tu-mixed.so",
            "libhost-thin.a",
            "gfx90a-v4.co",
            bad_path.to_str().unwrap(),
        ],
    );
}

#[test]
fn show_jsonl_streams_a_file_in_records() {
    let o = rocpack(&["show", "--jsonl", "--kernels", "gfx90a-v4.co"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let kinds: Vec<String> = stdout(&o)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("one JSON object a line");
            v["record"].as_str().expect("record").to_owned()
        })
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("file"));
    assert_eq!(kinds.get(1).map(String::as_str), Some("code-object"));
    assert!(
        kinds[2..].iter().all(|k| k == "kernel") && kinds.len() > 2,
        "{kinds:?}"
    );
    let both = rocpack(&["show", "--jsonl", "--json", "gfx90a-v4.co"]);
    assert_eq!(
        both.status.code(),
        Some(2),
        "--jsonl and --json together are refused"
    );
}
