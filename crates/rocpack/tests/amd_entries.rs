//! Which entries are AMD GPU code: `list` shows only those unless `--all-entries`, `show` counts
//! only those, `check` and `scan` judge only those. Tested on a clang-19 bundle that mixes AMD,
//! NVPTX and SPIR entries (tests/fixtures/foreign/make-foreign.sh) and on a real wheel whose SYCL
//! library carries Intel `sycl-spir64_gen`/`sycl-spir64` entries (bitsandbytes 0.48.2 from PyPI,
//! downloaded once into ~/.cache/rocpack-corpus/wheels). clang-offload-bundler-19 is the oracle
//! for the entry IDs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn foreign_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/foreign")
}

/// rocpack run in the fixture's directory, so that paths in the output are short and stable.
fn run(args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(rocpack_bin());
    cmd.args(args)
        .current_dir(foreign_dir())
        .env_remove("HSA_OVERRIDE_GFX_VERSION");
    output_of(&mut cmd)
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

/// The AMD entries of the fixture, by the triple of their ID as the bundler lists them.
fn amd_ids(ids: &BTreeSet<String>) -> BTreeSet<String> {
    ids.iter()
        .filter(|id| id.starts_with("hip-amdgcn-") || id.starts_with("hipv4-amdgcn-"))
        .cloned()
        .collect()
}

#[test]
fn list_shows_only_amd_gpu_entries_of_a_mixed_bundle() {
    let fixture = foreign_dir().join("foreign-entries.hipfb");
    let bundler = bundler_list_ok(&fixture);
    assert_eq!(bundler.len(), 5, "{bundler:?}");
    let o = run(&["list", "--json", "foreign-entries.hipfb"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let rows = json_lines(&text(&o.stdout));
    let listed: BTreeSet<String> = rows
        .iter()
        .map(|r| get_str(r, "entry_id").to_owned())
        .collect();
    assert_eq!(listed, amd_ids(&bundler));
    assert!(rows.iter().all(|r| get_bool(r, "amd_gpu")));

    // --all-entries: every entry the bundler lists, each marked.
    let all = list_all(&fixture, false);
    let ids: BTreeSet<String> = all
        .iter()
        .map(|r| get_str(r, "entry_id").trim_end_matches('-').to_owned())
        .collect();
    let want: BTreeSet<String> = bundler
        .iter()
        .map(|id| id.trim_end_matches('-').to_owned())
        .collect();
    assert_eq!(ids, want);
    for r in &all {
        let id = get_str(r, "entry_id");
        assert_eq!(
            get_bool(r, "amd_gpu"),
            amd_ids(&bundler).contains(id),
            "{r}"
        );
    }

    let text_out = run(&["list", "foreign-entries.hipfb"]);
    insta::assert_snapshot!(text(&text_out.stdout));
}

#[test]
fn show_counts_only_amd_gpu_entries() {
    let o = run(&["show", "foreign-entries.hipfb"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("2 device code objects, 2 entries that are not AMD GPU code"),
        "{out}"
    );
    insta::assert_snapshot!(out);
}

#[test]
fn scan_and_check_judge_no_foreign_target() {
    let o = run(&["scan", "--json", "foreign-entries.hipfb"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let recs = json_lines(&text(&o.stdout));
    let targets: BTreeSet<&str> = recs
        .iter()
        .filter(|r| get_str(r, "type") == "target")
        .map(|r| get_str(r, "target"))
        .collect();
    assert_eq!(targets, BTreeSet::from(["gfx1100", "gfx90a"]));
    let bytes: Vec<&serde_json::Value> = recs
        .iter()
        .filter_map(|r| r.get("bytes_per_processor"))
        .collect();
    for b in &bytes {
        let keys: BTreeSet<&str> = b.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, BTreeSet::from(["gfx1100", "gfx90a"]), "{b}");
    }
    assert!(!bytes.is_empty(), "no library record in {recs:?}");
}

/// bitsandbytes 0.48.2 ships Intel SYCL code in libbitsandbytes_xpu.so and no AMD GPU code.
const BNB: (&str, &str, &str) = (
    "bitsandbytes",
    "0.48.2",
    "bitsandbytes-0.48.2-py3-none-manylinux_2_24_x86_64.whl",
);
const XPU: &str = "bitsandbytes/libbitsandbytes_xpu.so";

/// The member unpacked with Python's zipfile (not rocpack's reader), for the bundler.
fn unzip_member(wheel: &Path, member: &str, out: &Path) {
    let script = "import sys, zipfile\n\
                  open(sys.argv[3], 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))";
    run_ok(
        Command::new("python3")
            .args(["-c", script])
            .arg(wheel)
            .arg(member)
            .arg(out),
    );
}

#[test]
fn sycl_entries_of_a_real_wheel_are_not_listed_as_amd_gpu_code() {
    let (name, version, file) = BNB;
    let wheel = fetch_wheel(name, version, file);
    let tmp = tempdir();
    let so = tmp.path().join("xpu.so");
    unzip_member(&wheel, XPU, &so);
    let bundler = bundler_list_ok(&so);
    assert_eq!(
        bundler,
        BTreeSet::from(["sycl-spir64".to_owned(), "sycl-spir64_gen".to_owned()])
    );

    let mut cmd = Command::new(rocpack_bin());
    cmd.arg("list").arg(&wheel);
    let o = output_of(&mut cmd);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "", "list printed rows");
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("(2 entries that are not AMD GPU code; --all-entries lists them)"),
        "{stderr}"
    );

    // --all-entries shows them, marked, with the IDs the bundler reads from the unpacked member.
    let all = list_all(&wheel, false);
    let member = format!("{}!/{XPU}", wheel.display());
    let ids: BTreeSet<String> = all
        .iter()
        .filter(|r| get_str(r, "file") == member)
        .map(|r| get_str(r, "entry_id").to_owned())
        .collect();
    assert_eq!(ids, bundler);
    assert!(all.iter().all(|r| !get_bool(r, "amd_gpu")), "{all:?}");

    let mut cmd = Command::new(rocpack_bin());
    cmd.args(["show", "--json"]).arg(&wheel);
    let shown = json_lines(&text(&output_of(&mut cmd).stdout));
    assert!(shown.iter().any(|s| get_str(s, "file") == member));

    let mut cmd = Command::new(rocpack_bin());
    cmd.arg("show").arg(&wheel);
    let out = text(&output_of(&mut cmd).stdout);
    assert!(
        out.contains(&format!(
            "{member}: 280,120 bytes, 0 device code objects, 2 entries that are not AMD GPU code"
        )),
        "{out}"
    );

    let mut cmd = Command::new(rocpack_bin());
    cmd.args(["scan", "--json"]).arg(&wheel);
    let o = output_of(&mut cmd);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let recs = json_lines(&text(&o.stdout));
    assert!(
        recs.iter()
            .all(|r| !matches!(get_str(r, "type"), "target" | "library")),
        "{recs:?}"
    );
}
