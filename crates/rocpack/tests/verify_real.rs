//! `rocpack verify` on a real Debian sid root (network: scripts/fetch-root.sh downloads the ROCm
//! packages it names and their whole dependency closure once, about 390 MB of .debs, and unpacks
//! them with their merged-/usr symlinks into ~/.cache/rocpack-corpus/root-<hash>, 4.3 GB).
//!
//! The root was never "installed": no maintainer script ran, so there is no /etc/ld.so.cache and
//! rocpack searches the directories of the root's /etc/ld.so.conf (libc-bin) and
//! ld.so.conf.d/*.conf (libc-bin, libc6) instead. Nothing in the root is executed; facts the
//! tests compare with come from `llvm-readelf-19`.
//!
//! Variants of the root are hard-linked copies (`cp -al`) next to it, in which files are only
//! created, renamed or deleted — never written to, which would change the shared original.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::*;
use serde_json::Value;

const LIBDIR: &str = "usr/lib/x86_64-linux-gnu";

/// The root of scripts/fetch-root.sh's default ROCm set, fetched once per test binary.
fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| fetch_root(&[]))
}

/// `rocpack verify ARGS`: exit code and the JSON Lines it printed (split into findings and the
/// summary). Asserts stderr is empty: an unreadable file would be a finding, not a message.
fn verify_json(args: &[OsString]) -> (i32, Vec<Value>, Value) {
    let mut cmd = rocpack();
    cmd.arg("verify").args(args).arg("--json");
    let out = output_of(&mut cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.trim().is_empty(),
        "{} printed on stderr:\n{stderr}",
        describe(&cmd)
    );
    let mut lines = json_lines(&String::from_utf8(out.stdout).unwrap());
    let summary = lines.pop().expect("no summary line");
    assert_eq!(
        summary["type"], "summary",
        "last line is not the summary: {summary}"
    );
    assert!(lines.iter().all(|l| l["type"] == "finding"), "{lines:?}");
    (
        out.status.code().expect("killed by a signal"),
        lines,
        summary,
    )
}

fn os(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    args.iter().map(|a| a.as_ref().to_os_string()).collect()
}

fn errors(findings: &[Value]) -> Vec<&Value> {
    findings
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect()
}

/// A hard-linked copy of the root in a temporary directory beside it (the same file system,
/// which `cp -al` needs), removed when the guard drops.
fn copy_of_root() -> (tempfile::TempDir, PathBuf) {
    let root = root();
    let tmp = tempfile::Builder::new()
        .prefix("verify-real-")
        .tempdir_in(root.parent().unwrap())
        .unwrap();
    let copy = tmp.path().join("root");
    run_checked(Command::new("cp").arg("-al").arg(root).arg(&copy));
    (tmp, copy)
}

/// Regular files of `dir` whose name starts with `prefix` (not following symlinks) and the
/// symlinks with that prefix.
fn entries_with_prefix(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    v.sort();
    v
}

/// Host-machine (x86-64) ELF executables and shared objects under `dir`, by their header: what
/// a dynamic loader could load. GPU code objects (EM_AMDGPU) are not among them.
fn host_elf_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                let mut head = [0u8; 20];
                let mut f = std::fs::File::open(e.path()).unwrap();
                if f.read_exact(&mut head).is_ok()
                    && head.starts_with(b"\x7fELF")
                    && matches!(le16(&head, 16), 2 | 3)
                    && le16(&head, 18) == 62
                {
                    out.push(e.path());
                }
            }
        }
    }
    out.sort();
    out
}

/// `llvm-readelf-19 --needed-libs` over many files at once: file → DT_NEEDED names.
fn needed_libs(files: &[PathBuf]) -> BTreeMap<PathBuf, Vec<String>> {
    let mut map = BTreeMap::new();
    for chunk in files.chunks(200) {
        let text = run_ok(llvm("llvm-readelf-19").arg("--needed-libs").args(chunk));
        // With one input there is no "File:" line.
        let mut cur: Option<PathBuf> = None;
        if let [only] = chunk {
            cur = Some(only.clone());
            map.insert(only.clone(), Vec::new());
        }
        for line in text.lines() {
            if let Some(f) = line.strip_prefix("File: ") {
                cur = Some(PathBuf::from(f));
                map.insert(PathBuf::from(f), Vec::new());
            } else if let Some(c) = &cur {
                let l = line.trim();
                if !l.is_empty() && l != "]" && !l.starts_with("NeededLibraries") {
                    map.get_mut(c).unwrap().push(l.to_owned());
                }
            }
        }
    }
    assert_eq!(map.len(), files.len(), "llvm-readelf-19 skipped files");
    map
}

/// Non-weak undefined (`UND`, binding GLOBAL) and defined dynamic symbols, from
/// `llvm-readelf-19 --dyn-syms`, versions stripped.
fn dyn_syms(file: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let text = run_ok(
        llvm("llvm-readelf-19")
            .arg("--dyn-syms")
            .arg("-W")
            .arg(file),
    );
    let (mut undef, mut def) = (BTreeSet::new(), BTreeSet::new());
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // Num: Value Size Type Bind Vis Ndx Name
        if f.len() < 8 || !f[0].ends_with(':') {
            continue;
        }
        let name = f[7].split('@').next().unwrap().to_owned();
        if f[6] == "UND" {
            if f[4] == "GLOBAL" {
                undef.insert(name);
            }
        } else {
            def.insert(name);
        }
    }
    (undef, def)
}

/// A known property of the root: glibc's libthread_db.so.1 leaves the `proc_service` callbacks
/// (`ps_pdread`, `ps_lgetregs`, ...) undefined. By design: glibc's proc_service.h says the
/// debugger that dlopen()s libthread_db (gdb) must define them, so no library provides them,
/// and `ldd -r /usr/lib/x86_64-linux-gnu/libthread_db.so.1` on any Debian system says
/// "undefined symbol: ps_pdwrite" for the same eight. It has a SONAME, so it is no plugin; but
/// nothing in the root links it, so verify notes the symbols as the loading program's to define.
///
/// Returns the eight names, established with llvm-readelf: non-weak undefined in
/// libthread_db.so.1, whose only DT_NEEDED is libc.so.6, and defined neither by libc.so.6 nor by
/// the dynamic linker (the rest of its closure).
fn thread_db_callbacks(root: &Path) -> BTreeSet<String> {
    let lib = root.join(LIBDIR).join("libthread_db.so.1");
    let needed = needed_libs(std::slice::from_ref(&lib));
    assert_eq!(
        needed[&lib],
        ["libc.so.6"],
        "libthread_db.so.1's DT_NEEDED changed"
    );
    let (undef, _) = dyn_syms(&lib);
    let ps: BTreeSet<String> = undef.into_iter().filter(|s| s.starts_with("ps_")).collect();
    assert_eq!(
        ps.len(),
        8,
        "libthread_db.so.1's undefined ps_* callbacks: {ps:?}"
    );
    for provider in ["libc.so.6", "ld-linux-x86-64.so.2"] {
        let (_, def) = dyn_syms(&root.join(LIBDIR).join(provider));
        let both: Vec<&String> = ps.intersection(&def).collect();
        assert!(both.is_empty(), "{provider} defines {both:?}");
    }
    ps
}

/// Asserts `f` is exactly the known libthread_db finding.
#[track_caller]
fn assert_thread_db_finding(f: &Value, root: &Path, callbacks: &BTreeSet<String>) {
    assert_eq!(f["code"], "undefined-symbol", "{f}");
    assert_eq!(
        Path::new(get_str(f, "file")),
        root.join(LIBDIR).join("libthread_db.so.1"),
        "{f}"
    );
    let names: BTreeSet<String> = f["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| get_str(s, "name").to_owned())
        .collect();
    assert_eq!(&names, callbacks, "{f}");
    assert_eq!(f["plugin"], false, "{f}");
}

/// The error findings the whole root is known to have, each a real property of Debian's packages
/// established independently below: (file relative to the root, code).
const KNOWN_ERRORS: &[(&str, &str)] = &[
    // gprofng preloads its heap tracer together with its collector, which defines the symbol.
    (
        "usr/lib/x86_64-linux-gnu/gprofng/libgp-heap.so",
        "undefined-symbol",
    ),
    // rocm-device-libs-21's config derives its prefix five levels above itself, which is
    // /usr/lib where Debian installs it, so it names /usr/lib/amdgcn/bitcode/*.bc; the bitcode is
    // in clang's resource directory.
    (
        "usr/lib/llvm-21/lib/cmake/AMDDeviceLibs/AMDDeviceLibsConfig.cmake",
        "cmake-missing-file",
    ),
    // clang-21 ships ClangTargets*.cmake, whose static libraries are in libclang-21-dev, which
    // clang-21 does not depend on: find_package(Clang) stops at CMake's import check.
    (
        "usr/lib/llvm-21/lib/cmake/clang/ClangTargets-relwithdebinfo.cmake",
        "cmake-missing-file",
    ),
];

#[test]
fn the_root_verifies_clean_but_for_known_debian_problems() {
    let root = root();
    // The loader's configuration comes from the packages themselves (see fetch-root.sh).
    assert!(!root.join("etc/ld.so.cache").exists());
    for conf in [
        "etc/ld.so.conf",
        "etc/ld.so.conf.d/libc.conf",
        "etc/ld.so.conf.d/x86_64-linux-gnu.conf",
    ] {
        assert!(root.join(conf).is_file(), "{conf} is not in the root");
    }
    let (code, findings, summary) = verify_json(&os(&[&"--root", &root]));
    let errs = errors(&findings);
    let got: BTreeSet<(String, String)> = errs
        .iter()
        .map(|f| {
            let file = Path::new(get_str(f, "file")).strip_prefix(root).unwrap();
            (file.display().to_string(), get_str(f, "code").to_owned())
        })
        .collect();
    let want: BTreeSet<(String, String)> = KNOWN_ERRORS
        .iter()
        .map(|(f, c)| ((*f).to_owned(), (*c).to_owned()))
        .collect();
    assert_eq!(
        got,
        want,
        "errors:\n{}",
        errs.iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(errs.len(), KNOWN_ERRORS.len());
    assert_eq!(code, 1, "exit status with error findings");

    // gdb provides the ps_* callbacks libthread_db leaves undefined, and nothing in the root
    // links libthread_db (x86-64 and i386 copies): a note each, naming the eight, not an error.
    let callbacks = thread_db_callbacks(root);
    let notes: Vec<&Value> = findings
        .iter()
        .filter(|f| f["code"] == "undefined-symbol" && f["severity"] == "info")
        .collect();
    let thread_db = notes
        .iter()
        .find(|f| get_str(f, "file").ends_with("x86_64-linux-gnu/libthread_db.so.1"))
        .expect("a note for libthread_db.so.1");
    assert_thread_db_finding(thread_db, root, &callbacks);
    assert_eq!(thread_db["dlopen_only"], true, "{thread_db}");
    assert!(
        notes
            .iter()
            .any(|f| get_str(f, "file").ends_with("lib32/libthread_db.so.1")),
        "no note for the i386 copy"
    );
    // Every such note is a library nothing in the root links, whose symbols no file defines.
    for n in &notes {
        assert_eq!(n["dlopen_only"], true, "{n}");
        assert!(get_str(n, "hint").contains("dlopen()"), "{n}");
    }

    // The evidence for each known error, from the files themselves.
    let heap = errs
        .iter()
        .find(|f| get_str(f, "file").ends_with("libgp-heap.so"))
        .unwrap();
    assert_eq!(heap["symbol"], "__collector_util_funcs", "{heap}");
    assert!(
        get_str(heap, "hint").contains("gprofng/libgp-collector.so"),
        "{heap}"
    );
    let devlibs = errs
        .iter()
        .find(|f| get_str(f, "file").ends_with("AMDDeviceLibsConfig.cmake"))
        .unwrap();
    assert_eq!(devlibs["directory"], "/usr/lib/amdgcn/bitcode", "{devlibs}");
    assert!(!root.join("usr/lib/amdgcn").exists());
    assert!(
        root.join("usr/lib/llvm-21/lib/clang/21/amdgcn/bitcode/ocml.bc")
            .is_file()
    );
    let clang = errs
        .iter()
        .find(|f| get_str(f, "file").ends_with("ClangTargets-relwithdebinfo.cmake"))
        .unwrap();
    assert!(
        clang["targets"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "clangBasic"),
        "{clang}"
    );
    assert!(!root.join("usr/lib/llvm-21/lib/libclangBasic.a").exists());

    // Warnings are by design: plugins (no SONAME) whose host program provides their symbols, and
    // imports a config exempts from CMake's check.
    for w in findings.iter().filter(|f| f["severity"] == "warning") {
        let ok = (w["code"] == "undefined-symbol" && w["plugin"] == true)
            || (w["code"] == "cmake-missing-file" && w["exempted"] == true);
        assert!(ok, "{w}");
    }
    // Every host ELF file of the root was resolved (that each closure is complete is checked
    // file by file in every_library_of_the_root_resolves_inside_it).
    let elf = host_elf_files(root);
    assert!(elf.len() >= 300, "only {} ELF files in the root", elf.len());
    // (rocpack also checks the root's 32-bit i386 objects, which host_elf_files leaves out.)
    assert!(
        get_u64(&summary, "elf_files") >= elf.len() as u64,
        "{summary}"
    );
    assert!(get_u64(&summary, "symbols_checked") > 5000, "{summary}");
    // The configs of the ROCm -dev packages were evaluated, and hipcc's toolchain checked clean:
    // clang 21's resource directory and device libraries for every target the libraries carry.
    assert!(get_u64(&summary, "cmake_files") >= 20, "{summary}");
    assert_eq!(get_u64(&summary, "hip_toolchains"), 1, "{summary}");
}

#[test]
fn a_deleted_cmake_file_or_device_library_is_reported() {
    let (_tmp, copy) = copy_of_root();
    let (_, before, _) = verify_json(&os(&[&"--root", &copy, &"--checks", &"cmake,toolchain"]));
    let cmake = copy.join(LIBDIR).join("cmake/rocblas");
    std::fs::remove_file(cmake.join("rocblas-targets.cmake")).unwrap();
    let bitcode = copy.join("usr/lib/llvm-21/lib/clang/21/amdgcn/bitcode");
    std::fs::remove_file(bitcode.join("oclc_isa_version_1030.bc")).unwrap();

    let (code, after, _) = verify_json(&os(&[&"--root", &copy, &"--checks", &"cmake,toolchain"]));
    assert_eq!(code, 1);
    let new: Vec<&Value> = after
        .iter()
        .filter(|f| !before.contains(f) && f["severity"] == "error")
        .collect();
    assert_eq!(new.len(), 2, "{new:#?}");
    let inc = new
        .iter()
        .find(|f| f["code"] == "cmake-missing-file")
        .unwrap();
    assert_eq!(
        Path::new(get_str(inc, "file")),
        cmake.join("rocblas-config.cmake"),
        "{inc}"
    );
    // rocblas-config.cmake names it in set_and_check() before it include()s it: reported once,
    // at the first use.
    assert_eq!(inc["variable"], "rocblas_TARGET_FILE", "{inc}");
    assert!(
        get_str(inc, "path").ends_with("cmake/rocblas/rocblas-targets.cmake"),
        "{inc}"
    );
    let dl = new
        .iter()
        .find(|f| f["code"] == "missing-device-lib")
        .unwrap();
    assert_eq!(dl["target"], "gfx1030", "{dl}");
    assert_eq!(dl["library"], "oclc_isa_version_1030.bc", "{dl}");
}

#[test]
fn every_library_of_the_root_resolves_inside_it() {
    let root = root();
    let elf = host_elf_files(root);
    let mut args = os(&[&"verify", &"--root", &root, &"--list-libs", &"--json"]);
    args.extend(elf.iter().map(|p| p.as_os_str().to_os_string()));
    let listed = json_lines(&rocpack_ok(&args));
    assert_eq!(listed.len(), elf.len());
    let needed = needed_libs(&elf);
    let mut problems = Vec::new();
    for (entry, file) in listed.iter().zip(&elf) {
        assert_eq!(Path::new(get_str(entry, "file")), file);
        let libs = entry["libraries"].as_array().unwrap();
        let names: BTreeSet<&str> = libs.iter().map(|l| get_str(l, "name")).collect();
        // The file's own DT_NEEDED are all in its closure...
        for n in &needed[file] {
            if !names.contains(n.as_str()) {
                problems.push(format!("{}: DT_NEEDED {n} not listed", file.display()));
            }
        }
        // ...and every library is a path of the target system that exists in the root.
        for l in libs {
            match opt_str(l, "path") {
                None => problems.push(format!("{}: {} not found", file.display(), l["name"])),
                Some(p) => {
                    let inside = root.join(p.strip_prefix('/').unwrap());
                    if !p.starts_with('/') || !inside.exists() {
                        problems.push(format!("{}: {p} is not in the root", file.display()));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_deleted_library_is_reported_with_every_file_that_needs_it() {
    let (_tmp, copy) = copy_of_root();
    let lib = copy.join(LIBDIR);
    let hip_real = std::fs::canonicalize(lib.join("libamdhip64.so.6")).unwrap();
    // libhsa-runtime64.so, .so.1 and .so.1.15.0 (the real file).
    let deleted = entries_with_prefix(&lib, "libhsa-runtime64.so");
    assert!(deleted.len() >= 2, "{deleted:?}");
    for p in &deleted {
        std::fs::remove_file(p).unwrap();
    }

    let (code, findings, summary) = verify_json(&os(&[&"--root", &copy, &"--checks", &"linkage"]));
    assert_eq!(code, 1, "exit status; summary {summary}");
    let unresolved: Vec<&Value> = findings
        .iter()
        .filter(|f| f["code"] == "unresolved-library")
        .collect();
    // Who needs it, from llvm-readelf: every host ELF file with DT_NEEDED libhsa-runtime64.so.1.
    let needers: BTreeSet<PathBuf> = needed_libs(&host_elf_files(&copy))
        .into_iter()
        .filter(|(_, n)| n.iter().any(|n| n == "libhsa-runtime64.so.1"))
        .map(|(f, _)| f)
        .collect();
    assert!(needers.contains(&hip_real), "{needers:?}");
    let reported: BTreeSet<PathBuf> = unresolved
        .iter()
        .map(|f| {
            assert_eq!(f["severity"], "error", "{f}");
            assert_eq!(f["library"], "libhsa-runtime64.so.1", "{f}");
            assert!(
                get_str(f, "message").contains("libhsa-runtime64.so.1"),
                "{f}"
            );
            let searched: Vec<&str> = f["searched"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| get_str(s, "dir"))
                .collect();
            assert!(searched.contains(&"/usr/lib/x86_64-linux-gnu"), "{f}");
            // The file is where the problem lies: the library that needs the deleted one.
            let file = PathBuf::from(get_str(f, "file"));
            assert_eq!(
                std::fs::canonicalize(&file).unwrap(),
                std::fs::canonicalize(copy.join(get_str(f, "needed_by").trim_start_matches('/')))
                    .unwrap(),
                "{f}"
            );
            std::fs::canonicalize(file).unwrap()
        })
        .collect();
    assert_eq!(
        reported, needers,
        "files reported as needing libhsa-runtime64.so.1"
    );

    // Nothing else is an error but the known linkage findings of the whole root (libraries that
    // reach libhsa-runtime64 through libamdhip64 are reported once, at libamdhip64).
    let other: BTreeSet<String> = errors(&findings)
        .into_iter()
        .filter(|f| f["code"] != "unresolved-library")
        .map(|f| {
            let file = Path::new(get_str(f, "file")).strip_prefix(&copy).unwrap();
            file.display().to_string()
        })
        .collect();
    let known: BTreeSet<String> = KNOWN_ERRORS
        .iter()
        .filter(|(_, c)| *c == "undefined-symbol")
        .map(|(f, _)| (*f).to_owned())
        .collect();
    assert_eq!(other, known);

    // --list-libs says so too, and fails.
    let mut cmd = rocpack();
    cmd.args(["verify", "--list-libs", "--root"])
        .arg(&copy)
        .arg("/usr/lib/x86_64-linux-gnu/libamdhip64.so.6");
    let out = output_of(&mut cmd);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&cmd));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("\tlibhsa-runtime64.so.1 => not found\n"),
        "{text}"
    );
}

#[test]
fn list_libs_resolves_inside_the_root() {
    let root = root();
    let entry = |lib: &Value, name: &str| -> Value {
        lib["libraries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed: {lib}"))
            .clone()
    };
    // An absolute path with --root names a path of the target system.
    let listed = json_lines(&rocpack_ok(&os(&[
        &"verify",
        &"--root",
        &root,
        &"--list-libs",
        &"--json",
        &"/usr/lib/x86_64-linux-gnu/libamdhip64.so.6",
    ])));
    assert_eq!(listed.len(), 1);
    let hip = &listed[0];
    assert_eq!(
        Path::new(get_str(hip, "file")),
        root.join(LIBDIR).join("libamdhip64.so.6")
    );
    let hsa = entry(hip, "libhsa-runtime64.so.1");
    assert_eq!(
        hsa["path"], "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1",
        "{hsa}"
    );
    assert_eq!(
        hsa["needed_by"], "/usr/lib/x86_64-linux-gnu/libamdhip64.so.6",
        "{hsa}"
    );
    assert!(root.join(LIBDIR).join("libhsa-runtime64.so.1").exists());
    // The interpreter through the root's /lib64 -> usr/lib64 symlink (base-files).
    let ld = entry(hip, "ld-linux-x86-64.so.2");
    assert_eq!(ld["path"], "/lib64/ld-linux-x86-64.so.2", "{ld}");
    // libamdhip64's own DT_NEEDED come first, in their order; then what they need.
    let needed =
        needed_libs(&[std::fs::canonicalize(root.join(LIBDIR).join("libamdhip64.so.6")).unwrap()]);
    let direct: BTreeSet<String> = needed.into_values().next().unwrap().into_iter().collect();
    let names: Vec<&str> = hip["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| get_str(l, "name"))
        .collect();
    assert!(
        names.iter().position(|n| *n == "libelf.so.1")
            > names.iter().rposition(|n| direct.contains(*n)),
        "transitive libhsa-runtime64 dependencies before direct ones: {names:?}"
    );

    // The root's own loader configuration decides, not this machine's: move the HSA runtime to
    // a directory that only the root's ld.so.conf.d names and that does not exist here.
    assert!(!Path::new("/opt/rocpack-verify-test").exists());
    let (_tmp, copy) = copy_of_root();
    let moved = copy.join("opt/rocpack-verify-test/lib");
    std::fs::create_dir_all(&moved).unwrap();
    for p in entries_with_prefix(&copy.join(LIBDIR), "libhsa-runtime64.so") {
        std::fs::rename(&p, moved.join(p.file_name().unwrap())).unwrap();
    }
    std::fs::write(
        copy.join("etc/ld.so.conf.d/rocpack-verify-test.conf"),
        "/opt/rocpack-verify-test/lib\n",
    )
    .unwrap();
    let text = rocpack_ok(&os(&[
        &"verify",
        &"--root",
        &copy,
        &"--list-libs",
        &"/usr/lib/x86_64-linux-gnu/libamdhip64.so.6",
    ]));
    assert!(
        text.contains(
            "\tlibhsa-runtime64.so.1 => /opt/rocpack-verify-test/lib/libhsa-runtime64.so.1\n"
        ),
        "{text}"
    );
}

/// ROCr (libhsa-runtime64) embeds its blit and trap-handler kernels in `.data`: bare code
/// objects, one per processor, of which it loads the one for the GPU. They are found, taken as
/// one set, and the runtime is judged to run on each processor it carries code for (not "none"
/// because the other processors' objects lack it); objects naming no processor (HSA code object
/// v1) ask for no device library.
#[test]
fn rocr_embedded_kernels_are_one_set_it_chooses_from() {
    let lib = entries_with_prefix(
        &root().join("usr/lib/x86_64-linux-gnu"),
        "libhsa-runtime64.so.1.",
    )
    .into_iter()
    .find(|p| !p.is_symlink())
    .expect("libhsa-runtime64 in the root");
    let mut cmd = rocpack();
    cmd.args(["check", "--json", "--gpu", "gfx1100", "--gpu", "gfx90a"])
        .arg(&lib);
    let out = output_of(&mut cmd);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&cmd));
    let verdicts: Vec<Value> = json_lines(&String::from_utf8(out.stdout).unwrap())
        .into_iter()
        .filter(|v| v["type"] == "verdict")
        .collect();
    assert_eq!(verdicts.len(), 2);
    for v in &verdicts {
        assert_eq!(v["verdict"], "native", "{v}");
        assert_eq!(v["loading"], "module", "{v}");
        assert!(
            get_str(v, "bundle").contains("code objects embedded in its data"),
            "{v}"
        );
    }
}
