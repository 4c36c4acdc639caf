//! Toolchain checks on synthetic install trees built here, and on a Debian sid HIP toolchain
//! made of real packages (`debian_sid_hip_toolchain_*`, which needs the network the first time).
//!
//! Every fake clang is a shell script that would create a marker file if it were ever run; each
//! test asserts the marker never appears, so the checker provably reads and never executes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

use rocpack_verify::toolchain::{ToolchainOptions, ToolchainReport, check, isa_library_name};
use rocpack_verify::{Code, Finding, Severity};

// ------------------------------------------------------------------------------------------------
// Building trees
// ------------------------------------------------------------------------------------------------

struct Tree {
    dir: tempfile::TempDir,
}

impl Tree {
    fn new() -> Self {
        Tree {
            dir: tempfile::Builder::new()
                .prefix("rocpack-toolchain-")
                .tempdir()
                .unwrap(),
        }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    /// A path of the installed system (`/opt/rocm/...`) inside the root.
    fn p(&self, abs: &str) -> PathBuf {
        self.root().join(abs.trim_start_matches('/'))
    }

    fn marker(&self) -> PathBuf {
        self.root().join("EXECUTED")
    }

    fn file(&self, abs: &str, contents: &[u8]) -> PathBuf {
        let p = self.p(abs);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, contents).unwrap();
        p
    }

    /// An executable that leaves the marker when run, carrying `text` (e.g. a version string).
    fn program(&self, abs: &str, text: &str) -> PathBuf {
        let script = format!("#!/bin/sh\ntouch '{}'\n# {text}\n", self.marker().display());
        let p = self.file(abs, script.as_bytes());
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    fn clang(&self, abs: &str, version: &str) -> PathBuf {
        self.program(abs, &format!("clang version {version} (fake, never run)"))
    }

    fn link(&self, abs: &str, target: &str) {
        let p = self.p(abs);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        symlink(target, p).unwrap();
    }

    /// A resource directory with clang's headers.
    fn resource(&self, abs: &str) {
        self.file(&format!("{abs}/include/stddef.h"), b"/* stddef */\n");
        self.file(
            &format!("{abs}/include/__clang_hip_runtime_wrapper.h"),
            b"/* hip wrapper */\n",
        );
        self.file(&format!("{abs}/include/__clang_cuda_math.h"), b"/* */\n");
    }

    /// Device-library bitcode for the given ISA suffixes (`90a`, `1030`, `9-generic`).
    fn bitcode(&self, abs: &str, isas: &[&str]) {
        for name in [
            "ocml",
            "ockl",
            "oclc_wavefrontsize64_on",
            "oclc_finite_only_off",
        ] {
            self.file(&format!("{abs}/{name}.bc"), b"BC\xc0\xde");
        }
        for isa in isas {
            self.file(&format!("{abs}/oclc_isa_version_{isa}.bc"), b"BC\xc0\xde");
        }
    }

    fn hip_configs(&self, cmake: &str, hip: Option<&str>, lang: Option<&str>) {
        for (pkg, v) in [("hip", hip), ("hip-lang", lang)] {
            let Some(v) = v else { continue };
            self.file(
                &format!("{cmake}/{pkg}/{pkg}-config.cmake"),
                b"set(HIP_COMPILER \"clang\")\n",
            );
            self.file(
                &format!("{cmake}/{pkg}/{pkg}-config-version.cmake"),
                format!("set(PACKAGE_VERSION \"{v}\")\n").as_bytes(),
            );
        }
    }

    fn check(&self, prefix: &str, processors: &[&str]) -> ToolchainReport {
        let procs: BTreeSet<String> = processors.iter().map(|s| (*s).to_owned()).collect();
        let prefix = self.p(prefix);
        let report = check(&ToolchainOptions {
            prefix: &prefix,
            root: Some(self.root()),
            processors: &procs,
        });
        assert!(
            !self.marker().exists(),
            "the checker executed a program of the tree"
        );
        report
    }
}

/// ROCm ≥ 6.2: the real clang in lib/llvm/bin, `llvm -> lib/llvm`, amdclang++ and hipcc in bin,
/// device libraries in the resource directory's lib/amdgcn/bitcode.
fn rocm_6_2(t: &Tree, isas: &[&str]) {
    t.clang("/opt/rocm/lib/llvm/bin/clang-18", "18.0.0");
    t.link("/opt/rocm/lib/llvm/bin/clang", "clang-18");
    t.link("/opt/rocm/lib/llvm/bin/clang++", "clang");
    t.link("/opt/rocm/lib/llvm/bin/amdclang++", "clang");
    t.link("/opt/rocm/llvm", "lib/llvm");
    t.link("/opt/rocm/bin/amdclang++", "../lib/llvm/bin/amdclang++");
    t.program("/opt/rocm/bin/hipcc", "hipcc (fake)");
    t.resource("/opt/rocm/lib/llvm/lib/clang/18");
    t.bitcode("/opt/rocm/lib/llvm/lib/clang/18/lib/amdgcn/bitcode", isas);
    t.hip_configs("/opt/rocm/lib/cmake", Some("6.2.41133"), Some("6.2.41133"));
    t.file("/opt/rocm/.info/version", b"6.2.0-66\n");
}

fn describe(r: &ToolchainReport) -> String {
    r.findings
        .iter()
        .map(|f| {
            format!(
                "{} {}: {}\n    hint: {}",
                f.severity.as_str(),
                f.code,
                f.message,
                f.hint
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[track_caller]
fn assert_clean(r: &ToolchainReport) {
    assert!(
        r.findings.is_empty(),
        "expected no findings:\n{}",
        describe(r)
    );
}

#[track_caller]
fn only_finding(r: &ToolchainReport, code: Code) -> &Finding {
    assert_eq!(
        r.findings.len(),
        1,
        "expected one {code} finding:\n{}",
        describe(r)
    );
    let f = &r.findings[0];
    assert_eq!(f.code, code, "{}", describe(r));
    f
}

// ------------------------------------------------------------------------------------------------
// Clean trees
// ------------------------------------------------------------------------------------------------

#[test]
fn rocm_6_2_layout_is_clean_and_described() {
    let t = Tree::new();
    rocm_6_2(&t, &["90a", "1030", "942"]);
    let r = t.check(
        "/opt/rocm",
        &["gfx90a", "gfx1030", "gfx942:sramecc+:xnack-"],
    );
    assert_clean(&r);
    assert!(r.hip_toolchain);
    assert_eq!(r.rocm_version.as_deref(), Some("6.2.0-66"));
    assert_eq!(r.hipcc, vec![t.p("/opt/rocm/bin/hipcc")]);
    assert_eq!(r.clangs.len(), 1, "{:#?}", r.clangs);
    let c = &r.clangs[0];
    assert_eq!(c.binary, t.p("/opt/rocm/lib/llvm/bin/clang-18"));
    assert_eq!(c.version.unwrap().full().as_deref(), Some("18.0.0"));
    assert_eq!(c.version_source.as_deref(), Some(c.binary.as_path()));
    assert!(c.rocm && c.run_by_hipcc && c.hip && c.resource_dir_ok);
    // Reached through llvm/bin (a link to lib/llvm), lib/llvm/bin, bin/amdclang++ and hipcc.
    for d in [
        "/opt/rocm/llvm/bin/clang",
        "/opt/rocm/lib/llvm/bin/clang",
        "/opt/rocm/bin/amdclang++",
    ] {
        assert!(
            c.drivers.contains(&t.p(d)),
            "{d} missing in {:?}",
            c.drivers
        );
    }
    assert_eq!(
        c.resource_dir.as_deref(),
        Some(t.p("/opt/rocm/lib/llvm/lib/clang/18").as_path())
    );
    let bitcode = t.p("/opt/rocm/lib/llvm/lib/clang/18/lib/amdgcn/bitcode");
    assert_eq!(c.device_lib_search.first(), Some(&bitcode));
    assert_eq!(c.device_lib_dir.as_ref(), Some(&bitcode));
    assert_eq!(r.device_lib_dirs, vec![bitcode]);
    assert_eq!(r.hip_configs.len(), 2);
    assert!(
        r.hip_configs
            .iter()
            .all(|h| h.version.as_deref() == Some("6.2.41133"))
    );
}

#[test]
fn generic_targets_need_their_generic_isa_library() {
    assert_eq!(
        isa_library_name("gfx90a").as_deref(),
        Some("oclc_isa_version_90a.bc")
    );
    assert_eq!(
        isa_library_name("gfx1030").as_deref(),
        Some("oclc_isa_version_1030.bc")
    );
    assert_eq!(
        isa_library_name("gfx942:xnack+").as_deref(),
        Some("oclc_isa_version_942.bc")
    );
    assert_eq!(
        isa_library_name("gfx9-4-generic").as_deref(),
        Some("oclc_isa_version_9-4-generic.bc")
    );
    assert_eq!(isa_library_name("sm_80"), None);

    let t = Tree::new();
    rocm_6_2(&t, &["9-generic", "1030"]);
    assert_clean(&t.check("/opt/rocm", &["gfx9-generic", "gfx1030"]));
    let r = t.check("/opt/rocm", &["gfx9-generic", "gfx10-3-generic"]);
    let f = only_finding(&r, Code::MissingDeviceLib);
    assert_eq!(f.details["library"], "oclc_isa_version_10-3-generic.bc");
    assert_eq!(f.details["target"], "gfx10-3-generic");
}

/// A distribution layout like Debian's: the versioned LLVM tree, hipcc naming `lib/llvm-19/bin`
/// inside itself, device libraries in the resource directory (not its lib/).
#[test]
fn distribution_hipcc_runs_the_clang_it_names_and_finds_bitcode_in_the_resource_dir() {
    let t = Tree::new();
    t.file(
        "/usr/bin/hipcc",
        b"\x7fELF....\0HIP_CLANG_PATH\0lib/llvm-19/bin\0clang.exe\0",
    );
    t.clang("/usr/lib/llvm-19/bin/clang", "19.1.7");
    t.link("/usr/lib/llvm-19/bin/clang++", "clang");
    t.link("/usr/bin/clang-19", "../lib/llvm-19/bin/clang");
    t.resource("/usr/lib/llvm-19/lib/clang/19");
    t.bitcode(
        "/usr/lib/llvm-19/lib/clang/19/amdgcn/bitcode",
        &["90a", "1100"],
    );
    t.hip_configs(
        "/usr/lib/x86_64-linux-gnu/cmake",
        Some("6.4.43484"),
        Some("6.4.43484"),
    );
    let r = t.check("/usr", &["gfx90a", "gfx1100"]);
    assert_clean(&r);
    assert_eq!(r.clangs.len(), 1);
    let c = &r.clangs[0];
    assert!(
        c.drivers.contains(&t.p("/usr/lib/llvm-19/bin/clang++")),
        "{:?}",
        c.drivers
    );
    assert!(
        c.drivers.contains(&t.p("/usr/bin/clang-19")),
        "{:?}",
        c.drivers
    );
    assert_eq!(
        c.device_lib_dir.as_deref(),
        Some(
            t.p("/usr/lib/llvm-19/lib/clang/19/amdgcn/bitcode")
                .as_path()
        )
    );
}

#[test]
fn absolute_symlinks_resolve_inside_the_root() {
    let t = Tree::new();
    rocm_6_2(&t, &["90a"]);
    fs::remove_file(t.p("/opt/rocm/bin/amdclang++")).unwrap();
    t.link("/opt/rocm/bin/amdclang++", "/opt/rocm/lib/llvm/bin/clang");
    let r = t.check("/opt/rocm", &["gfx90a"]);
    assert_clean(&r);
    assert_eq!(r.clangs.len(), 1);
}

#[test]
fn version_is_read_from_the_cmake_package_when_the_binary_has_none() {
    let t = Tree::new();
    rocm_6_2(&t, &["90a"]);
    t.program("/opt/rocm/lib/llvm/bin/clang-18", "no version here");
    t.file(
        "/opt/rocm/lib/llvm/lib/cmake/clang/ClangConfigVersion.cmake",
        b"set(PACKAGE_VERSION \"18.0.0git\")\n",
    );
    let r = t.check("/opt/rocm", &["gfx90a"]);
    assert_clean(&r);
    let c = &r.clangs[0];
    assert_eq!(c.version.unwrap().to_string(), "18.0.0");
    assert_eq!(
        c.version_source.as_deref(),
        Some(
            t.p("/opt/rocm/lib/llvm/lib/cmake/clang/ClangConfigVersion.cmake")
                .as_path()
        )
    );
}

// ------------------------------------------------------------------------------------------------
// Check 1: resource directory
// ------------------------------------------------------------------------------------------------

#[test]
fn full_version_resource_dir_is_the_major_version_trap() {
    let t = Tree::new();
    t.clang("/usr/lib/llvm-17/bin/clang", "17.0.6");
    t.link("/usr/bin/clang-17", "../lib/llvm-17/bin/clang");
    t.resource("/usr/lib/llvm-17/lib/clang/17.0.6");
    let r = t.check("/usr", &[]);
    let f = only_finding(&r, Code::ClangResourceDir);
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(f.file, t.p("/usr/lib/llvm-17/bin/clang"));
    assert!(
        f.message.ends_with("lib/clang/17, which does not exist"),
        "{}",
        f.message
    );
    assert!(f.hint.contains("lib/clang/17.0.6 exists"), "{}", f.hint);
    assert!(f.hint.contains("since LLVM 16"), "{}", f.hint);
    assert_eq!(f.details["version"], "17.0.6");
    assert!(!r.clangs[0].resource_dir_ok);
}

/// ROCm ≤ 6.1: the real LLVM in `llvm/`, bitcode in `<rocm>/amdgcn/bitcode` (found through the
/// ROCm root clang deduces from `llvm/bin`). ROCm's fork of LLVM 17 is accepted with either
/// resource-directory name, since the release where it followed upstream is not pinned down.
#[test]
fn rocm_6_0_layout_with_llvm_17_fork_accepts_either_resource_dir_name() {
    let t = Tree::new();
    t.clang("/opt/rocm-6.0.2/llvm/bin/clang", "17.0.0");
    t.link("/opt/rocm-6.0.2/bin/amdclang++", "../llvm/bin/clang");
    t.program("/opt/rocm-6.0.2/bin/hipcc", "hipcc.pl: $ROCM_PATH/llvm/bin");
    t.resource("/opt/rocm-6.0.2/llvm/lib/clang/17.0.0");
    t.bitcode("/opt/rocm-6.0.2/amdgcn/bitcode", &["90a", "1030"]);
    t.hip_configs(
        "/opt/rocm-6.0.2/lib/cmake",
        Some("6.0.32831"),
        Some("6.0.32831"),
    );
    let r = t.check("/opt/rocm-6.0.2", &["gfx90a", "gfx1030"]);
    assert_clean(&r);
    let c = &r.clangs[0];
    assert!(c.rocm);
    assert_eq!(
        c.device_lib_dir.as_deref(),
        Some(t.p("/opt/rocm-6.0.2/amdgcn/bitcode").as_path())
    );
    fs::rename(
        t.p("/opt/rocm-6.0.2/llvm/lib/clang/17.0.0"),
        t.p("/opt/rocm-6.0.2/llvm/lib/clang/17"),
    )
    .unwrap();
    assert_clean(&t.check("/opt/rocm-6.0.2", &["gfx90a", "gfx1030"]));
}

#[test]
fn clang_before_16_wants_the_full_version() {
    let t = Tree::new();
    t.clang("/usr/lib/llvm-15/bin/clang", "15.0.7");
    t.resource("/usr/lib/llvm-15/lib/clang/15.0.7");
    assert_clean(&t.check("/usr", &[]));
    fs::rename(
        t.p("/usr/lib/llvm-15/lib/clang/15.0.7"),
        t.p("/usr/lib/llvm-15/lib/clang/15"),
    )
    .unwrap();
    let r = t.check("/usr", &[]);
    let f = only_finding(&r, Code::ClangResourceDir);
    assert!(f.message.contains("lib/clang/15.0.7"), "{}", f.message);
    assert!(f.hint.contains("major-version-only"), "{}", f.hint);
}

#[test]
fn resource_dir_without_include_is_reported() {
    let t = Tree::new();
    rocm_6_2(&t, &["90a"]);
    fs::remove_dir_all(t.p("/opt/rocm/lib/llvm/lib/clang/18/include")).unwrap();
    let r = t.check("/opt/rocm", &["gfx90a"]);
    let f = only_finding(&r, Code::ClangResourceDir);
    assert!(f.message.contains("has no include/"), "{}", f.message);
    assert_eq!(f.file, t.p("/opt/rocm/lib/llvm/bin/clang-18"));
}

#[test]
fn hip_clang_needs_the_hip_runtime_wrapper_header() {
    let t = Tree::new();
    rocm_6_2(&t, &["90a"]);
    fs::remove_file(t.p("/opt/rocm/lib/llvm/lib/clang/18/include/__clang_hip_runtime_wrapper.h"))
        .unwrap();
    let r = t.check("/opt/rocm", &["gfx90a"]);
    let f = only_finding(&r, Code::ClangResourceDir);
    assert!(
        f.message.contains("include/__clang_hip_runtime_wrapper.h"),
        "{}",
        f.message
    );
}

/// ROCm ≤ 6.1 kept its LLVM in a real `llvm/`; a tree whose clang moved to `lib/llvm/bin` while
/// the headers stayed in `llvm/lib/clang/18` is broken, and the hint says where they are.
#[test]
fn resource_dir_at_the_other_rocm_llvm_location_is_named_in_the_hint() {
    let t = Tree::new();
    t.clang("/opt/rocm/lib/llvm/bin/clang", "18.0.0");
    t.resource("/opt/rocm/llvm/lib/clang/18");
    t.bitcode("/opt/rocm/amdgcn/bitcode", &["90a"]);
    let r = t.check("/opt/rocm", &["gfx90a"]);
    let f = only_finding(&r, Code::ClangResourceDir);
    assert!(
        f.message
            .contains("lib/llvm/lib/clang/18, which does not exist"),
        "{}",
        f.message
    );
    let other = t.p("/opt/rocm/llvm/lib/clang/18");
    assert!(
        f.hint.contains(&format!("{} exists", other.display())),
        "{}",
        f.hint
    );
    assert!(f.hint.contains("real path of its binary"), "{}", f.hint);
}

#[test]
fn unknown_version_is_a_warning_not_a_guess() {
    let t = Tree::new();
    t.program("/opt/rocm/lib/llvm/bin/clang", "nothing to read");
    t.resource("/opt/rocm/lib/llvm/lib/clang/18");
    t.bitcode("/opt/rocm/amdgcn/bitcode", &["90a"]);
    let r = t.check("/opt/rocm", &["gfx90a"]);
    let f = only_finding(&r, Code::ClangResourceDir);
    assert_eq!(f.severity, Severity::Warning);
    assert!(r.clangs[0].version.is_none());
}

#[test]
fn dangling_driver_is_reported() {
    let t = Tree::new();
    rocm_6_2(&t, &["90a"]);
    t.link("/opt/rocm/bin/amdclang", "../lib/llvm/bin/amdclang-gone");
    let r = t.check("/opt/rocm", &["gfx90a"]);
    let f = only_finding(&r, Code::UnreadableFile);
    assert_eq!(f.file, t.p("/opt/rocm/bin/amdclang"));
}

// ------------------------------------------------------------------------------------------------
// Check 2: device libraries
// ------------------------------------------------------------------------------------------------

#[test]
fn missing_isa_library_for_a_carried_target_is_reported() {
    let t = Tree::new();
    rocm_6_2(&t, &["90a", "1030"]);
    let r = t.check("/opt/rocm", &["gfx90a", "gfx1030", "gfx942"]);
    let f = only_finding(&r, Code::MissingDeviceLib);
    assert_eq!(f.severity, Severity::Error);
    assert_eq!(f.details["target"], "gfx942");
    assert_eq!(f.details["library"], "oclc_isa_version_942.bc");
    let dir = t.p("/opt/rocm/lib/llvm/lib/clang/18/lib/amdgcn/bitcode");
    assert!(
        f.message.contains(&dir.display().to_string()),
        "{}",
        f.message
    );
    assert!(f.message.contains("gfx942"), "{}", f.message);
}

/// Old Debian packaging put bitcode in /usr/share/amdgcn (ROCm-Device-Libs#79); clang never
/// searches there.
#[test]
fn bitcode_only_where_clang_does_not_look_is_reported_with_its_location() {
    let t = Tree::new();
    rocm_6_2(&t, &[]);
    fs::remove_dir_all(t.p("/opt/rocm/lib/llvm/lib/clang/18/lib")).unwrap();
    t.bitcode("/opt/rocm/share/amdgcn/bitcode", &["90a"]);
    let r = t.check("/opt/rocm", &["gfx90a"]);
    let f = only_finding(&r, Code::MissingDeviceLib);
    assert!(
        f.message
            .contains("finds no AMDGPU device-library directory"),
        "{}",
        f.message
    );
    let there = t.p("/opt/rocm/share/amdgcn/bitcode");
    assert!(
        f.hint.contains("only where this clang does not look"),
        "{}",
        f.hint
    );
    assert!(f.hint.contains(&there.display().to_string()), "{}", f.hint);
    assert!(r.device_lib_dirs.contains(&there));
    assert!(r.clangs[0].device_lib_dir.is_none());
}

/// Clang links from the first accepted directory only: an ISA library in a later one is unused.
#[test]
fn isa_library_in_a_directory_clang_passes_over_is_named_in_the_hint() {
    let t = Tree::new();
    rocm_6_2(&t, &["90a"]);
    t.bitcode("/opt/rocm/amdgcn/bitcode", &["90a", "942"]);
    let r = t.check("/opt/rocm", &["gfx90a", "gfx942"]);
    let f = only_finding(&r, Code::MissingDeviceLib);
    assert_eq!(f.details["target"], "gfx942");
    let other = t.p("/opt/rocm/amdgcn/bitcode");
    assert!(
        f.hint.contains(&format!("{} has it", other.display())),
        "{}",
        f.hint
    );
    assert_eq!(r.device_lib_dirs.len(), 2);
}

#[test]
fn prefix_without_hip_toolchain_needs_no_device_libraries() {
    let t = Tree::new();
    t.clang("/usr/lib/llvm-19/bin/clang", "19.1.7");
    t.resource("/usr/lib/llvm-19/lib/clang/19");
    let r = t.check("/usr", &["gfx90a"]);
    assert_clean(&r);
    assert!(!r.hip_toolchain);
    assert!(!r.clangs[0].hip);
}

/// Debian's libamdhip64-dev without hipcc: HIP's CMake support, no compiler, no bitcode. One
/// warning saying what is missing, not an error per target.
#[test]
fn hip_configs_without_any_compiler_are_one_warning() {
    let t = Tree::new();
    t.hip_configs(
        "/usr/lib/x86_64-linux-gnu/cmake",
        Some("6.4.43484"),
        Some("6.4.43484"),
    );
    let r = t.check("/usr", &["gfx90a", "gfx1030"]);
    assert!(r.hip_toolchain);
    let f = only_finding(&r, Code::MissingDeviceLib);
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.message.contains("gfx1030, gfx90a"), "{}", f.message);
}

// ------------------------------------------------------------------------------------------------
// Check 3: hip configs
// ------------------------------------------------------------------------------------------------

#[test]
fn hip_and_hip_lang_version_mismatch_is_reported() {
    let t = Tree::new();
    rocm_6_2(&t, &["90a"]);
    t.hip_configs("/opt/rocm/lib/cmake", Some("6.2.41133"), Some("6.1.40091"));
    let r = t.check("/opt/rocm", &["gfx90a"]);
    let f = only_finding(&r, Code::HipConfigMismatch);
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.message.contains("6.2.41133") && f.message.contains("6.1.40091"),
        "{}",
        f.message
    );
}

#[test]
fn hip_without_hip_lang_is_reported() {
    let t = Tree::new();
    rocm_6_2(&t, &["90a"]);
    fs::remove_dir_all(t.p("/opt/rocm/lib/cmake/hip-lang")).unwrap();
    let r = t.check("/opt/rocm", &["gfx90a"]);
    let f = only_finding(&r, Code::HipConfigMismatch);
    assert!(
        f.message.contains("no hip-lang/hip-lang-config.cmake"),
        "{}",
        f.message
    );
}

/// ROCm 5.x's hip-lang-config.cmake globbed `${_IMPORT_PREFIX}/../llvm/lib/clang/*/include`.
const HIP_LANG_5X: &str = r#"
get_filename_component(_DIR "${CMAKE_CURRENT_LIST_FILE}" REALPATH)
get_filename_component(_IMPORT_PREFIX "${_DIR}/../../../" ABSOLUTE)
if(NOT WIN32)
  set(_IMPORT_PREFIX "/somewhere/else")
endif()
file(GLOB HIP_CLANG_INCLUDE_SEARCH_PATHS "${_IMPORT_PREFIX}/../llvm/lib/clang/*/include")
find_path(HIP_CLANG_INCLUDE_PATH __clang_cuda_math.h
    HINTS ${HIP_CLANG_INCLUDE_SEARCH_PATHS}
    NO_DEFAULT_PATH)
"#;

#[test]
fn hip_lang_clang_header_search_is_evaluated() {
    let t = Tree::new();
    rocm_6_2(&t, &["90a"]);
    t.file(
        "/opt/rocm/lib/cmake/hip-lang/hip-lang-config.cmake",
        HIP_LANG_5X.as_bytes(),
    );
    // llvm -> lib/llvm, so the glob finds lib/llvm/lib/clang/18/include: clean.
    assert_clean(&t.check("/opt/rocm", &["gfx90a"]));

    // Without the compatibility link the glob finds nothing.
    fs::remove_file(t.p("/opt/rocm/llvm")).unwrap();
    let r = t.check("/opt/rocm", &["gfx90a"]);
    let f = only_finding(&r, Code::HipConfigMismatch);
    assert!(f.message.starts_with("line 7:"), "{}", f.message);
    assert!(f.message.contains("__clang_cuda_math.h"), "{}", f.message);
    assert!(f.hint.contains("lib/llvm/lib/clang/18"), "{}", f.hint);

    // Headers of another clang: found, but not the resource directory of the prefix's clang.
    t.resource("/opt/rocm/llvm/lib/clang/17.0.0");
    let r = t.check("/opt/rocm", &["gfx90a"]);
    let f = only_finding(&r, Code::HipConfigMismatch);
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.message.contains("17.0.0/include"), "{}", f.message);
}

// ------------------------------------------------------------------------------------------------
// Real packages: Debian sid's HIP toolchain
// ------------------------------------------------------------------------------------------------

/// hipcc, the clang it runs (with the libclang-cpp it needs and its headers), the device
/// libraries, and the HIP runtime's development package.
const DEBIAN_TOOLCHAIN: &[&str] = &[
    "hipcc",
    "rocm-device-libs-21",
    "libamdhip64-dev",
    "clang-21",
    "libclang-common-21-dev",
    "libclang-cpp21",
];

/// Downloads (never installs) the packages with scripts/fetch-corpus.sh, which caches them in
/// ~/.cache/rocpack-corpus; returns their unpacked directories. Needs the network the first time:
/// panics saying so when the Debian mirror cannot be reached.
fn fetch_debian(pkgs: &[&str]) -> Vec<PathBuf> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/fetch-corpus.sh");
    let out = Command::new("bash")
        .arg(script)
        .args(pkgs)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {script}: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => {}
        Some(3) => panic!(
            "network needed: cannot reach the Debian mirror to fetch {}\n{stderr}",
            pkgs.join(" ")
        ),
        _ => panic!(
            "fetch-corpus.sh {} failed with {}:\n{stderr}",
            pkgs.join(" "),
            out.status
        ),
    }
    let dirs: Vec<PathBuf> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(PathBuf::from)
        .collect();
    assert_eq!(dirs.len(), pkgs.len(), "fetch-corpus.sh printed {dirs:?}");
    dirs
}

/// One root made of the unpacked packages, hard-linked (so deleting in it leaves the cache
/// alone) into a directory beside the cache.
fn merged_root(dirs: &[PathBuf]) -> tempfile::TempDir {
    let cache = dirs[0].parent().unwrap();
    let root = tempfile::Builder::new()
        .prefix("merged-toolchain-")
        .tempdir_in(cache)
        .unwrap();
    for d in dirs {
        let usr = d.join("usr");
        let st = Command::new("cp")
            .arg("-al")
            .arg(&usr)
            .arg(root.path())
            .status()
            .unwrap();
        assert!(st.success(), "cp -al {} failed", usr.display());
    }
    root
}

#[test]
fn debian_sid_hip_toolchain_is_clean_and_breakages_are_found() {
    // Panics, saying the network is needed, when the Debian mirror cannot be reached.
    let dirs = fetch_debian(DEBIAN_TOOLCHAIN);
    let root = merged_root(&dirs);
    let prefix = root.path().join("usr");
    let procs: BTreeSet<String> = ["gfx90a", "gfx1030", "gfx942", "gfx1100", "gfx9-generic"]
        .map(String::from)
        .into();
    let run = || {
        check(&ToolchainOptions {
            prefix: &prefix,
            root: Some(root.path()),
            processors: &procs,
        })
    };

    let r = run();
    eprintln!("clangs: {:#?}", r.clangs);
    eprintln!("device_lib_dirs: {:#?}", r.device_lib_dirs);
    eprintln!("hip_configs: {:#?}", r.hip_configs);
    assert_clean(&r);
    assert!(r.hip_toolchain);
    assert_eq!(r.hipcc, vec![prefix.join("bin/hipcc")]);
    assert_eq!(r.clangs.len(), 1, "{:#?}", r.clangs);
    let c = &r.clangs[0];
    assert_eq!(c.binary, prefix.join("lib/llvm-21/bin/clang"));
    assert_eq!(c.version.unwrap().major, 21);
    // Debian's own clang, not ROCm's fork, checked as a HIP compiler because hipcc runs it.
    assert!(!c.rocm && c.run_by_hipcc && c.hip);
    // The driver binary is small and carries no version; libclang-cpp does.
    assert!(
        c.version_source
            .as_ref()
            .is_some_and(|s| s.to_string_lossy().contains("libclang-cpp.so.21")),
        "{:?}",
        c.version_source
    );
    assert!(
        c.drivers.contains(&prefix.join("bin/clang-21")),
        "{:?}",
        c.drivers
    );
    assert!(
        c.drivers.contains(&prefix.join("lib/llvm-21/bin/clang++")),
        "{:?}",
        c.drivers
    );
    let resource = prefix.join("lib/llvm-21/lib/clang/21");
    assert_eq!(c.resource_dir.as_ref(), Some(&resource));
    let bitcode = resource.join("amdgcn/bitcode");
    assert_eq!(c.device_lib_dir.as_ref(), Some(&bitcode));
    assert_eq!(r.device_lib_dirs, vec![bitcode.clone()]);
    let hip: Vec<_> = r
        .hip_configs
        .iter()
        .map(|h| (h.package, h.version.clone()))
        .collect();
    assert_eq!(hip.len(), 2, "{hip:?}");
    assert_eq!(hip[0].1, hip[1].1);

    // One ISA library gone: exactly that target is reported.
    fs::remove_file(bitcode.join("oclc_isa_version_90a.bc")).unwrap();
    let r = run();
    eprintln!("after deleting oclc_isa_version_90a.bc:\n{}", describe(&r));
    let f = only_finding(&r, Code::MissingDeviceLib);
    assert_eq!(f.details["target"], "gfx90a");
    assert!(
        f.message.contains(&bitcode.display().to_string()),
        "{}",
        f.message
    );

    // clang's headers gone as well.
    fs::remove_dir_all(resource.join("include")).unwrap();
    let r = run();
    eprintln!(
        "after deleting {}:\n{}",
        resource.join("include").display(),
        describe(&r)
    );
    let codes: Vec<Code> = r.findings.iter().map(|f| f.code).collect();
    assert_eq!(
        codes,
        vec![Code::ClangResourceDir, Code::MissingDeviceLib],
        "{}",
        describe(&r)
    );
    assert!(
        r.findings[0].message.contains("has no include/"),
        "{}",
        describe(&r)
    );
}
