//! `plan verify` on install trees built in a temporary directory
//! (tests/support/plan_verify_tree.rs holds the fixture install and its table of code objects).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::symlink;

use rocpack_plan::kb::Layout;
use rocpack_plan::verify::{
    Attribution, ComponentState, Report, Status, Unplanned, VerifyError, verify,
};
use rocpack_plan::{Knowledge, Plan, Request, Tool, plan};

#[path = "../../../tests/support/plan_verify_tree.rs"]
mod plan_verify_tree;
use plan_verify_tree::{COMPONENTS, GPUS, SET, fake, fixture, link, put, rocm_tree};

fn kb() -> &'static Knowledge {
    Knowledge::embedded().unwrap()
}

fn make_plan(gpus: &[&str], components: &[&str], set: &[&str]) -> Plan {
    let kb = kb();
    let request = Request {
        gpus: gpus.iter().map(|s| (*s).to_owned()).collect(),
        families: Vec::new(),
        components: Some(components.iter().map(|s| (*s).to_owned()).collect()),
        set: set
            .iter()
            .map(|s| rocpack_plan::planner::parse_set(kb, s).unwrap())
            .collect(),
    };
    plan(kb, &request, "6.4", Tool::Cmake).unwrap()
}

fn found(r: &Report, component: &str) -> BTreeMap<String, u64> {
    r.component(component).unwrap().found.clone()
}

fn unplanned(list: &[(&str, u64)]) -> Vec<Unplanned> {
    list.iter()
        .map(|(p, b)| Unplanned {
            processor: (*p).to_owned(),
            bytes: *b,
        })
        .collect()
}

fn map(list: &[(&str, u64)]) -> BTreeMap<String, u64> {
    list.iter().map(|(p, b)| ((*p).to_owned(), *b)).collect()
}

/// A /opt/rocm-style tree for a gfx1030 + gfx90a plan.
fn fixture_plan() -> Plan {
    make_plan(GPUS, COMPONENTS, SET)
}

/// The fixture plan checked against the install at `prefix`, layout detected.
fn verify_fixture(prefix: &std::path::Path) -> Report {
    verify(kb(), &fixture_plan(), &[prefix.to_path_buf()], None, None).unwrap()
}

#[test]
fn fixture_install_found_missing_unplanned_and_bytes() {
    let dir = tempfile::tempdir().unwrap();
    rocm_tree(dir.path());
    let report = verify_fixture(dir.path());
    assert_eq!(report.layout, Layout::Rocm);
    assert!(report.layout_detected);

    // rocRAND: links are the same file; gfx90a:xnack+ counts as gfx90a.
    let c = report.component("rocRAND").unwrap();
    assert_eq!(c.state, ComponentState::Installed);
    assert_eq!((c.files, c.bytes), (1, 64440));
    assert_eq!(c.paths.len(), 1);
    assert!(c.paths[0].path.ends_with("lib/librocrand.so.1.1"));
    assert_eq!(c.paths[0].links.len(), 2);
    assert_eq!(
        c.found,
        map(&[
            ("gfx1030", 6000),
            ("gfx90a", 6832),
            ("gfx1100", 4720),
            ("gfx906", 4248),
            ("gfx942", 6952)
        ])
    );
    assert!(c.missing.is_empty());
    assert_eq!(
        c.unplanned,
        unplanned(&[("gfx942", 6952), ("gfx1100", 4720), ("gfx906", 4248)])
    );
    assert_eq!(c.unplanned_bytes, 6952 + 4720 + 4248);

    // rocBLAS: code objects by their headers, .dat files by their names, the rest shared.
    let c = report.component("rocBLAS").unwrap();
    assert_eq!(c.files, 7);
    assert_eq!(c.bytes, 19120 + 7016 + 7016 + 6632 + 1000 + 500 + 300);
    assert_eq!(
        c.found,
        map(&[
            ("gfx1030", 6000 + 500),
            ("gfx90a", 6832 + 7016 + 7016 + 1000),
            ("gfx1100", 6632),
        ])
    );
    assert!(c.missing.is_empty());
    assert_eq!(c.unplanned, unplanned(&[("gfx1100", 6632)]));
    assert_eq!((c.shared_files, c.shared_bytes), (1, 300));
    let attribution = |suffix: &str| {
        c.paths
            .iter()
            .find(|f| f.path.ends_with(suffix))
            .unwrap()
            .attribution
    };
    assert_eq!(attribution("gfx90a.dat"), Attribution::FileName);
    assert_eq!(attribution("fallback.dat"), Attribution::Shared);
    assert_eq!(attribution("xnack-.hsaco"), Attribution::CodeObjects);
    assert!(!c.compressed);

    // rocSPARSE: built for gfx1030 only, gfx90a missing.
    let c = report.component("rocSPARSE").unwrap();
    assert_eq!(c.found, map(&[("gfx1030", 6000)]));
    assert_eq!(c.missing, ["gfx90a"]);
    assert!(c.unplanned.is_empty());

    // rocFFT: compressed bundles, sizes uncompressed.
    let c = report.component("rocFFT").unwrap();
    assert!(c.compressed);
    assert_eq!(
        found(&report, "rocFFT"),
        map(&[("gfx1030", 6000), ("gfx90a", 6832), ("gfx942", 6952)])
    );
    assert_eq!(c.unplanned, unplanned(&[("gfx942", 6952)]));

    // hipBLAS: host code, not read, nothing expected.
    let c = report.component("hipBLAS").unwrap();
    assert_eq!(
        (c.state, c.files, c.device_files),
        (ComponentState::Installed, 1, 0)
    );
    assert!(c.expected.is_empty() && c.found.is_empty());
    assert_eq!(c.paths[0].attribution, Attribution::NotRead);

    // hipBLASLt: planned for gfx90a, no file at all: absent, not "missing targets".
    let c = report.component("hipBLASLt").unwrap();
    assert_eq!(c.state, ComponentState::Absent);
    assert_eq!(c.expected, ["gfx90a"]);
    assert!(c.missing.is_empty());

    // A component without device code and without files is no finding.
    let c = report.component("ROCR-Runtime").unwrap();
    assert_eq!(c.state, ComponentState::NotInstalled);

    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.status(), Status::Missing);
    assert_eq!(report.status().exit().code(), 1);
    assert_eq!(report.summary.absent, 1);
    assert_eq!(report.summary.with_missing, 1);
    // rocRAND, rocBLAS (7), rocSPARSE, rocFFT, hipBLAS, composable_kernel; not libunrelated.so.
    assert_eq!(report.summary.files, 12);
}

/// composable_kernel's INSTANCES_ONLY builds ignored GPU_TARGETS (pitfall
/// `ck-instances-only-ignores-gpu-targets`): code for every default target comes back when one
/// was asked for. verify reports it as unplanned, with its cost.
/// Progress counts the bytes of the files that carry device code, up to their total.
#[test]
fn progress_counts_the_device_code_files_read() {
    let dir = tempfile::tempdir().unwrap();
    rocm_tree(dir.path());
    let calls = std::sync::Mutex::new(Vec::new());
    let report = rocpack_plan::verify::verify_with_progress(
        kb(),
        &fixture_plan(),
        &[dir.path().to_path_buf()],
        None,
        None,
        &rocpack_scan::ScanOptions::default(),
        &|done, total| calls.lock().unwrap().push((done, total)),
    )
    .unwrap();
    let calls = calls.into_inner().unwrap();
    let total = calls[0].1;
    assert_eq!(calls[0].0, 0);
    assert!(total >= 64440, "{calls:?}");
    assert!(
        calls.iter().all(|&(d, t)| t == total && d <= total),
        "{calls:?}"
    );
    assert_eq!(calls.iter().map(|c| c.0).max(), Some(total));
    // The bytes counted are at least the device-carrying files' the report lists.
    assert!(report.component("rocRAND").is_some());
}

#[test]
fn instances_only_trap_shows_as_unplanned_bytes() {
    let dir = tempfile::tempdir().unwrap();
    rocm_tree(dir.path());
    let report = verify_fixture(dir.path());
    let c = report.component("composable_kernel").unwrap();
    assert_eq!(c.paths[0].role, rocpack_plan::kb::FileRole::StaticLibrary);
    assert_eq!(c.found.get("gfx1030"), Some(&6000));
    assert_eq!(c.found.get("gfx90a"), Some(&6832));
    assert_eq!(
        c.unplanned,
        unplanned(&[("gfx1100", 4720), ("gfx906", 4248)])
    );
    assert_eq!(c.unplanned_bytes, 8968);
}

#[test]
fn unreadable_file_is_listed_and_the_walk_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    rocm_tree(dir.path());
    // A bundle cut short: its first entry runs past the end of the file.
    let bytes = std::fs::read(fixture("tu1.hipfb")).unwrap();
    std::fs::write(
        dir.path()
            .join("lib/rocblas/library/TensileLibrary_cut_gfx1030.co"),
        &bytes[..5000],
    )
    .unwrap();
    let report = verify_fixture(dir.path());
    assert_eq!(report.status(), Status::Unreadable);
    assert_eq!(report.status().exit().code(), 2);
    let p = &report.problems[0];
    assert!(p.path.ends_with("TensileLibrary_cut_gfx1030.co"), "{p:?}");
    assert_eq!(p.code.as_str(), "malformed-bundle");
    assert_eq!((p.offset, p.offset_in_file), (Some(0x53), true));
    assert!(p.message.contains("runs past"), "{}", p.message);
    let c = report.component("rocBLAS").unwrap();
    assert_eq!(c.unreadable_files, 1);
    // No code object was read from it: its name attributes its bytes, and every other file
    // still counts.
    assert_eq!(c.found.get("gfx1030"), Some(&(6000 + 500 + 5000)));
    assert_eq!(report.component("rocRAND").unwrap().found.len(), 5);
    // The text of this case: crates/rocpack/tests/plan_verify.rs.
}

/// Debian packages unpacked into separate directories are one install: a link in one package
/// may point at a file of another.
#[test]
fn debian_packages_in_separate_prefixes_are_one_install() {
    let dir = tempfile::tempdir().unwrap();
    let (runtime, dev, headers) = (
        dir.path().join("librocrand1"),
        dir.path().join("librocrand-dev"),
        dir.path().join("rocprim-dev"),
    );
    let libdir = "usr/lib/x86_64-linux-gnu";
    put(
        &runtime,
        &format!("{libdir}/librocrand.so.1.1"),
        "tu1.hipfb",
    );
    link(
        &dev,
        &format!("{libdir}/librocrand.so.1"),
        "librocrand.so.1.1",
    );
    link(&dev, &format!("{libdir}/librocrand.so.1.9"), "nowhere");
    fake(&headers, "usr/include/rocprim/rocprim.hpp", 100);
    // The rocm-layout glob must not match in a Debian install.
    put(&runtime, "lib/librocrand.so.1", "lib3tu-lld.so");
    let p = make_plan(&["gfx1030"], &["rocRAND", "rocPRIM"], &[]);
    let report = verify(kb(), &p, &[runtime, dev, headers], None, None).unwrap();
    assert_eq!(report.layout, Layout::Debian);
    let c = report.component("rocRAND").unwrap();
    assert_eq!((c.files, c.bytes), (1, 19120));
    assert_eq!(c.paths[0].links.len(), 1);
    assert_eq!(c.found, map(&[("gfx1030", 6000), ("gfx90a", 6832)]));
    assert_eq!(c.unplanned, unplanned(&[("gfx90a", 6832)]));
    let c = report.component("rocPRIM").unwrap();
    assert_eq!((c.state, c.files), (ComponentState::Installed, 1));
    // The dangling link is a warning, not an unreadable file.
    assert_eq!(report.problems.len(), 1);
    assert_eq!(report.problems[0].code.as_str(), "dangling-link");
    assert_eq!(report.status(), Status::Clean);
}

#[test]
fn usage_errors() {
    let p = make_plan(&["gfx1030"], &["rocRAND"], &[]);
    assert!(matches!(
        verify(kb(), &p, &[], None, None),
        Err(VerifyError::NoPrefixes)
    ));
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let e = verify(kb(), &p, &[missing], None, None).unwrap_err();
    assert!(matches!(e, VerifyError::Prefix { .. }), "{e}");
    let (deb, rocm) = (dir.path().join("deb"), dir.path().join("rocm"));
    std::fs::create_dir_all(deb.join("usr/lib/x86_64-linux-gnu")).unwrap();
    std::fs::create_dir_all(rocm.join("lib")).unwrap();
    let both = [deb, rocm];
    let e = verify(kb(), &p, &both, None, None).unwrap_err();
    assert!(matches!(e, VerifyError::MixedLayouts { .. }), "{e}");
    // Naming the layout settles it.
    let r = verify(kb(), &p, &both, Some(Layout::Rocm), None).unwrap();
    assert!(!r.layout_detected);
    assert_eq!(
        r.component("rocRAND").unwrap().state,
        ComponentState::Absent
    );
}

#[test]
fn json_of_a_fixture_install() {
    let dir = tempfile::tempdir().unwrap();
    rocm_tree(dir.path());
    let report = verify_fixture(dir.path());
    // The text: crates/rocpack/tests/plan_verify.rs.
    let json: serde_json::Value = serde_json::to_value(&report).unwrap();
    assert_eq!(json["schema"], "rocpack-plan-verify/1");
    assert_eq!(json["layout"], "rocm");
    assert_eq!(json["summary"]["status"], "missing");
    let comps = json["components"].as_array().unwrap();
    let blaslt = comps.iter().find(|c| c["name"] == "hipBLASLt").unwrap();
    assert_eq!(blaslt["state"], "absent");
    let rocblas = comps.iter().find(|c| c["name"] == "rocBLAS").unwrap();
    assert_eq!(rocblas["found"]["gfx90a"], 6832 + 7016 + 7016 + 1000);
    assert_eq!(rocblas["unplanned"][0]["processor"], "gfx1100");
    let dat = rocblas["paths"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"].as_str().unwrap().ends_with("gfx90a.dat"))
        .unwrap();
    assert_eq!(dat["attribution"], "file-name");
    assert_eq!(dat["role"], "device-data");
}

/// A Nix profile: a forest of absolute links into a store outside the prefix, whole directories
/// linked where one package provides them (as nixpkgs' buildEnv makes it). The loader follows
/// them, so `plan verify` does: every component is found as in the store itself. With `--root`,
/// links are followed inside that root only, and a store outside it is not reached.
#[test]
fn nix_profile_links_leave_the_prefix_unless_confined_to_a_root() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("nix/store/0abc-rocm-libs");
    rocm_tree(&store);
    let profile = dir.path().join("profile");
    std::fs::create_dir_all(profile.join("lib")).unwrap();
    for entry in std::fs::read_dir(store.join("lib")).unwrap() {
        let entry = entry.unwrap();
        symlink(entry.path(), profile.join("lib").join(entry.file_name())).unwrap();
    }
    symlink(store.join("include"), profile.join("include")).unwrap();
    // A directory link back to its parent: walked once, never forever.
    symlink(profile.join("lib"), store.join("lib/rocblas/library/loop")).unwrap();

    let plan = fixture_plan();
    let direct = verify(kb(), &plan, std::slice::from_ref(&store), None, None).unwrap();
    let linked = verify(kb(), &plan, std::slice::from_ref(&profile), None, None).unwrap();
    for c in COMPONENTS.iter().filter(|c| **c != "hipBLASLt") {
        let (d, l) = (direct.component(c).unwrap(), linked.component(c).unwrap());
        assert_eq!(l.state, d.state, "{c}");
        assert_eq!(l.found, d.found, "{c}");
        assert_eq!((l.files, l.bytes), (d.files, d.bytes), "{c}");
    }
    assert_eq!(found(&linked, "rocSPARSE"), map(&[("gfx1030", 6000)]));
    // Paths are shown as the install names them.
    let c = linked.component("rocBLAS").unwrap();
    assert!(
        c.paths
            .iter()
            .all(|p| p.path.starts_with(&*profile.to_string_lossy()))
    );
    let dangling: Vec<&str> = linked
        .problems
        .iter()
        .filter(|p| p.code.as_str() == "dangling-link")
        .map(|p| p.path.as_str())
        .collect();
    assert!(
        dangling.iter().all(|p| p.ends_with("library/loop")),
        "{dangling:?}"
    );

    // Confined to a root that holds the profile but not the store: nothing is reachable.
    let confined = verify(
        kb(),
        &plan,
        std::slice::from_ref(&profile),
        None,
        Some(&profile),
    )
    .unwrap();
    assert_eq!(
        confined.component("rocRAND").unwrap().state,
        ComponentState::Absent
    );
    assert!(
        confined
            .problems
            .iter()
            .any(|p| p.code.as_str() == "dangling-link"
                && p.path.ends_with("lib/librocrand.so.1.1")
                && p.message.contains("inside"))
    );

    // Confined to a root that holds both, absolute links are read inside it: written as the
    // target system names them (/nix/store/...), they resolve under the root.
    let root = dir.path();
    let sys_profile = root.join("sysprofile");
    std::fs::create_dir_all(sys_profile.join("lib")).unwrap();
    symlink(
        "/nix/store/0abc-rocm-libs/lib/librocsparse.so.1.0",
        sys_profile.join("lib/librocsparse.so.1.0"),
    )
    .unwrap();
    let rooted = verify(
        kb(),
        &plan,
        std::slice::from_ref(&sys_profile),
        None,
        Some(root),
    )
    .unwrap();
    assert_eq!(found(&rooted, "rocSPARSE"), map(&[("gfx1030", 6000)]));
    // ... and without the root the same link means this machine's /nix/store: dangling here.
    let unrooted = verify(kb(), &plan, std::slice::from_ref(&sys_profile), None, None).unwrap();
    assert_eq!(
        unrooted.component("rocSPARSE").unwrap().state,
        ComponentState::Absent
    );

    // A prefix outside --root is a usage error.
    let e = verify(kb(), &plan, &[store], None, Some(&profile)).unwrap_err();
    assert!(matches!(e, VerifyError::Prefix { .. }), "{e}");
}

/// A FIFO where the install has a library name: reported as not a regular file, never opened
/// (opening it for reading would wait for a writer forever), and the rest is read.
#[test]
fn a_fifo_with_a_library_name_is_reported_and_not_opened() {
    let dir = tempfile::tempdir().unwrap();
    rocm_tree(dir.path());
    let fifo = dir.path().join("lib/librocsparse.so.1.9");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let report = verify_fixture(dir.path());
    let p: Vec<_> = report
        .problems
        .iter()
        .filter(|p| p.path.ends_with("librocsparse.so.1.9"))
        .collect();
    assert_eq!(p.len(), 1, "{:?}", report.problems);
    assert_eq!(p[0].code.as_str(), "not-regular-file");
    assert!(p[0].message.contains("a FIFO"), "{}", p[0].message);
    assert_eq!(report.status(), Status::Unreadable);
    assert_eq!(found(&report, "rocSPARSE").get("gfx1030"), Some(&6000));
}
