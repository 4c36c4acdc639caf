//! `rocpack verify` on small trees of gcc-built libraries, each reproducing one failure class,
//! with glibc's own loader (`ld.so --list`, `ldd -r`) as the oracle on these test-built files.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;

use common::{json_lines, output_of, rocpack, run_checked};
use serde_json::Value;

const LDSO: &str = "/lib64/ld-linux-x86-64.so.2";

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Runs gcc (or g++) in `dir` with the given arguments.
fn cc(tool: &str, dir: &Path, args: &[&str]) {
    run_checked(Command::new(tool).current_dir(dir).args(args));
}

/// Builds `lib<name>.so` (soname `lib<name>.so.1` unless `soname` is false) from C source.
fn shared_lib(dir: &Path, out: &str, source: &str, extra: &[&str]) {
    let src = dir.join(format!("{out}.c"));
    write(&src, source);
    let mut args = vec!["-shared", "-fPIC", "-o", out, src.to_str().unwrap()];
    args.extend_from_slice(extra);
    cc("gcc", dir, &args);
}

/// `rocpack verify --json ARGS`: exit code and the finding records.
fn verify(args: &[&str]) -> (i32, Vec<Value>) {
    let out = output_of(rocpack().arg("verify").arg("--json").args(args));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let records = json_lines(&stdout);
    let summary = records.last().expect("a summary record");
    assert_eq!(summary["type"], "summary", "{stdout}");
    let findings = records
        .into_iter()
        .filter(|r| r["type"] == "finding")
        .collect();
    (out.status.code().unwrap(), findings)
}

/// `name => path` pairs (path `None` when not found) in load order, from glibc's loader in
/// trace mode (`ldd`, which runs `ld.so` with LD_TRACE_LOADED_OBJECTS=1 so that a missing
/// library is listed rather than fatal), on the test's own fixtures.
fn ldso_list(file: &Path, env: &[(&str, &str)]) -> Vec<(String, Option<String>)> {
    let mut cmd = Command::new("ldd");
    cmd.arg(file).env_remove("LD_LIBRARY_PATH");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = output_of(&mut cmd);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.trim().split_once(" => ")?;
            let path = rest.split(" (0x").next().unwrap().trim();
            Some((
                name.to_owned(),
                (path != "not found").then(|| path.to_owned()),
            ))
        })
        .filter(|(n, _)| !n.starts_with("linux-vdso") && !n.starts_with("ld-linux"))
        .collect()
}

/// The same pairs from `rocpack verify --list-libs --json`.
fn rocpack_list(file: &Path, extra: &[&str]) -> Vec<(String, Option<String>)> {
    let out = output_of(
        rocpack()
            .args(["verify", "--list-libs", "--json"])
            .args(extra)
            .arg(file),
    );
    let records = json_lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(records.len(), 1, "{records:?}");
    records[0]["libraries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["name"].as_str().unwrap().to_owned(),
                l["path"].as_str().map(str::to_owned),
            )
        })
        .filter(|(n, _)| !n.starts_with("ld-linux"))
        .collect()
}

fn codes(findings: &[Value]) -> Vec<String> {
    findings
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_owned())
        .collect()
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A library nothing in the tree links is loaded with dlopen(): a symbol no file defines is the
/// loading program's to provide (glibc's libthread_db and its debugger), noted, not an error.
/// The same library, once something in the tree links it, is an error again: the loader would
/// refuse the program that links it (glibc's ldd -r says so for both).
#[test]
fn undefined_symbols_of_a_library_nothing_links_are_the_loaders_to_provide() {
    let t = tmp();
    let lib = t.path().join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    shared_lib(
        &lib,
        "libcallbacks.so.1",
        "int ps_host_read(int);\nint td_ta_new(int x) { return ps_host_read(x); }\n",
        &["-Wl,-soname,libcallbacks.so.1"],
    );
    let (code, findings) = verify(&[s(t.path())]);
    assert_eq!(code, 0, "{findings:#?}");
    assert_eq!(codes(&findings), ["undefined-symbol"], "{findings:#?}");
    let f = &findings[0];
    assert_eq!(f["severity"], "info", "{f}");
    assert_eq!(f["symbol"], "ps_host_read");
    assert_eq!(f["dlopen_only"], true);
    assert!(f["hint"].as_str().unwrap().contains("dlopen()"), "{f}");

    // Now a library of the tree links it: the same symbol is an error.
    shared_lib(
        &lib,
        "libuser.so.1",
        "int td_ta_new(int);\nint use(void) { return td_ta_new(1); }\n",
        &["-Wl,-soname,libuser.so.1", "-L.", "-l:libcallbacks.so.1"],
    );
    let (code, findings) = verify(&[s(t.path())]);
    assert_eq!(code, 1, "{findings:#?}");
    let errs: Vec<&Value> = findings
        .iter()
        .filter(|f| f["severity"] == "error" && f["code"] == "undefined-symbol")
        .collect();
    assert!(
        errs.iter()
            .any(|f| f["file"].as_str().unwrap().ends_with("libcallbacks.so.1")),
        "{findings:#?}"
    );
}

#[test]
fn undefined_symbol_names_the_static_archive_that_was_not_linked() {
    let t = tmp();
    let lib = t.path().join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    write(
        &t.path().join("X86TargetInfo.c"),
        "int LLVMInitializeX86Target(void) { return 86; }\n",
    );
    cc(
        "gcc",
        t.path(),
        &["-c", "-fPIC", "X86TargetInfo.c", "-o", "X86TargetInfo.o"],
    );
    cc(
        "ar",
        t.path(),
        &["rcs", "lib/libLLVMX86CodeGen.a", "X86TargetInfo.o"],
    );
    shared_lib(
        &lib,
        "librockCompiler.so",
        "int LLVMInitializeX86Target(void);\nint rock(void) { return LLVMInitializeX86Target(); }\n",
        &["-Wl,-soname,librockCompiler.so"],
    );
    // The oracle: glibc's ldd -r reports the same symbol.
    let ldd = output_of(
        Command::new("ldd")
            .arg("-r")
            .arg(lib.join("librockCompiler.so")),
    );
    assert!(
        String::from_utf8_lossy(&ldd.stderr).contains("undefined symbol: LLVMInitializeX86Target")
            || String::from_utf8_lossy(&ldd.stdout)
                .contains("undefined symbol: LLVMInitializeX86Target"),
        "{ldd:?}"
    );

    let (code, findings) = verify(&[s(t.path())]);
    assert_eq!(code, 1, "{findings:#?}");
    assert_eq!(codes(&findings), ["undefined-symbol"], "{findings:#?}");
    let f = &findings[0];
    assert!(
        f["file"]
            .as_str()
            .unwrap()
            .ends_with("lib/librockCompiler.so")
    );
    assert_eq!(f["severity"], "error");
    assert_eq!(f["symbol"], "LLVMInitializeX86Target");
    let hint = f["hint"].as_str().unwrap();
    assert!(
        hint.contains("lib/libLLVMX86CodeGen.a(X86TargetInfo.o), which was not linked into")
            && hint.contains("librockCompiler.so"),
        "{hint}"
    );

    // Silenced, it is clean; the text form says the same in words.
    let (code, findings) = verify(&["--allow", "undefined-symbol", s(t.path())]);
    assert_eq!((code, findings.len()), (0, 0));
    let text = output_of(rocpack().arg("verify").arg(t.path()));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("error[undefined-symbol]") && text.contains("LLVMInitializeX86Target"),
        "{text}"
    );
}

#[test]
fn runpath_with_origin_resolves_and_a_moved_library_is_reported() {
    let t = tmp();
    let (bin, lib) = (t.path().join("bin"), t.path().join("lib"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&lib).unwrap();
    shared_lib(
        &lib,
        "libdep.so.1",
        "int dep(void) { return 1; }\n",
        &["-Wl,-soname,libdep.so.1"],
    );
    write(
        &bin.join("app.c"),
        "int dep(void);\nint main(void) { return dep(); }\n",
    );
    cc(
        "gcc",
        &bin,
        &[
            "app.c",
            "-o",
            "app",
            "-L../lib",
            "-l:libdep.so.1",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../lib",
        ],
    );
    let app = bin.join("app");
    let ours = rocpack_list(&app, &[]);
    assert_eq!(ours, ldso_list(&app, &[]));
    assert!(ours.iter().any(|(n, p)| n == "libdep.so.1"
        && p.as_deref() == Some(&*format!("{}/../lib/libdep.so.1", bin.display()))));
    let (code, findings) = verify(&[s(t.path())]);
    assert_eq!((code, findings.len()), (0, 0), "{findings:#?}");

    std::fs::create_dir_all(lib.join("private")).unwrap();
    std::fs::rename(lib.join("libdep.so.1"), lib.join("private/libdep.so.1")).unwrap();
    assert_eq!(rocpack_list(&app, &[]), ldso_list(&app, &[]));
    let (code, findings) = verify(&[s(t.path())]);
    assert_eq!(code, 1);
    assert_eq!(codes(&findings), ["unresolved-library"], "{findings:#?}");
    let f = &findings[0];
    assert_eq!(f["library"], "libdep.so.1");
    assert!(f["file"].as_str().unwrap().ends_with("bin/app"));
    let searched = f["searched"].as_array().unwrap();
    assert_eq!(searched[0]["dir"], format!("{}/../lib", bin.display()));
    assert!(
        searched[0]["source"]
            .as_str()
            .unwrap()
            .starts_with("RUNPATH of ")
    );
    assert!(searched.iter().any(|d| d["source"] == "default"));
    assert!(
        f["hint"]
            .as_str()
            .unwrap()
            .contains("lib/private/libdep.so.1"),
        "{}",
        f["hint"]
    );

    // The loader environment can fix it, as LD_LIBRARY_PATH would.
    let llp = format!("LD_LIBRARY_PATH={}", lib.join("private").display());
    let (code, findings) = verify(&["--env", &llp, s(t.path())]);
    assert_eq!((code, findings.len()), (0, 0), "{findings:#?}");
    assert_eq!(
        rocpack_list(&app, &["--env", &llp]),
        ldso_list(&app, &[("LD_LIBRARY_PATH", s(&lib.join("private")))])
    );
}

/// DT_RPATH applies to the loads of everything the object loads; DT_RUNPATH only to its own.
#[test]
fn rpath_is_inherited_and_runpath_is_not() {
    for (dtags, inherited) in [("--disable-new-dtags", true), ("--enable-new-dtags", false)] {
        let t = tmp();
        let priv_ = t.path().join("priv");
        std::fs::create_dir_all(&priv_).unwrap();
        shared_lib(
            &priv_,
            "libb.so",
            "int b(void) { return 2; }\n",
            &["-Wl,-soname,libb.so"],
        );
        shared_lib(
            &priv_,
            "liba.so",
            "int b(void);\nint a(void) { return b(); }\n",
            &["-Wl,-soname,liba.so", "-L.", "-lb"],
        );
        write(
            &t.path().join("app.c"),
            "int a(void);\nint main(void) { return a(); }\n",
        );
        let flags = format!("-Wl,{dtags},-rpath,$ORIGIN/priv");
        cc(
            "gcc",
            t.path(),
            &[
                "app.c",
                "-o",
                "app",
                "-Lpriv",
                "-la",
                "-Wl,--allow-shlib-undefined",
                &flags,
            ],
        );
        let app = t.path().join("app");
        let ours = rocpack_list(&app, &[]);
        assert_eq!(ours, ldso_list(&app, &[]), "{dtags}");
        let b = ours.iter().find(|(n, _)| n == "libb.so").unwrap();
        assert_eq!(b.1.is_some(), inherited, "{dtags}: {ours:?}");
        let (code, findings) = verify(&[s(&app)]);
        if inherited {
            assert_eq!((code, findings.len()), (0, 0), "{findings:#?}");
        } else {
            assert_eq!(code, 1);
            assert_eq!(codes(&findings), ["unresolved-library"]);
            assert_eq!(findings[0]["library"], "libb.so");
            assert!(
                findings[0]["file"]
                    .as_str()
                    .unwrap()
                    .ends_with("priv/liba.so")
            );
            assert!(
                findings[0]["message"]
                    .as_str()
                    .unwrap()
                    .contains("needed by")
            );
        }
    }
}

#[test]
fn missing_symbol_version_names_the_version_and_the_newest_defined() {
    let t = tmp();
    let d = t.path();
    write(
        &d.join("new.map"),
        "V_1 { global: f1; local: *; };\nV_2 { global: f2; } V_1;\n",
    );
    write(&d.join("old.map"), "V_1 { global: f1; local: *; };\n");
    write(
        &d.join("new.c"),
        "int f1(void) { return 1; }\nint f2(void) { return 2; }\n",
    );
    write(&d.join("old.c"), "int f1(void) { return 1; }\n");
    std::fs::create_dir_all(d.join("lib")).unwrap();
    cc(
        "gcc",
        d,
        &[
            "-shared",
            "-fPIC",
            "new.c",
            "-o",
            "lib/libv.so.1",
            "-Wl,-soname,libv.so.1",
            "-Wl,--version-script=new.map",
        ],
    );
    write(
        &d.join("app.c"),
        "int f2(void);\nint main(void) { return f2(); }\n",
    );
    cc(
        "gcc",
        d,
        &[
            "app.c",
            "-o",
            "lib/app",
            "lib/libv.so.1",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN",
        ],
    );
    let (code, findings) = verify(&[s(&d.join("lib"))]);
    assert_eq!((code, findings.len()), (0, 0), "{findings:#?}");

    // The library is replaced by an older build that lacks V_2.
    cc(
        "gcc",
        d,
        &[
            "-shared",
            "-fPIC",
            "old.c",
            "-o",
            "lib/libv.so.1",
            "-Wl,-soname,libv.so.1",
            "-Wl,--version-script=old.map",
        ],
    );
    let ldso = output_of(Command::new(LDSO).arg("--list").arg(d.join("lib/app")));
    let oracle = String::from_utf8_lossy(&ldso.stdout) + String::from_utf8_lossy(&ldso.stderr);
    assert!(oracle.contains("version `V_2' not found"), "{oracle}");
    let (code, findings) = verify(&[s(&d.join("lib"))]);
    assert_eq!(code, 1);
    assert_eq!(
        codes(&findings),
        ["missing-symbol-version"],
        "{findings:#?}"
    );
    let f = &findings[0];
    assert_eq!(f["version"], "V_2");
    assert_eq!(f["library"], "libv.so.1");
    assert_eq!(f["newest"], "V_1");
    assert_eq!(f["symbols"], 1);
    assert!(f["file"].as_str().unwrap().ends_with("lib/app"));
}

#[test]
fn two_llvms_in_one_closure_are_a_duplicate_definition() {
    let t = tmp();
    let d = t.path();
    let mut llvm = String::from("namespace llvm {\n");
    for i in 0..30 {
        llvm.push_str(&format!("int pass{i}(int x) {{ return x + {i}; }}\n"));
    }
    llvm.push_str("}\n");
    write(&d.join("llvm.cpp"), &llvm);
    write(
        &d.join("small.cpp"),
        "namespace util { int helper(int x) { return x; } }\n",
    );
    for (out, src) in [
        ("libLLVM-17.so", "llvm.cpp"),
        ("libamd_comgr.so.2", "llvm.cpp"),
        ("libone.so", "small.cpp"),
        ("libtwo.so", "small.cpp"),
    ] {
        let soname = format!("-Wl,-soname,{out}");
        cc("g++", d, &["-shared", "-fPIC", src, "-o", out, &soname]);
    }
    write(&d.join("app.c"), "int main(void) { return 0; }\n");
    cc(
        "gcc",
        d,
        &[
            "app.c",
            "-o",
            "app",
            "-Wl,--no-as-needed",
            "./libLLVM-17.so",
            "./libamd_comgr.so.2",
            "./libone.so",
            "./libtwo.so",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN",
        ],
    );
    let (code, findings) = verify(&[s(&d.join("app"))]);
    assert_eq!(code, 1, "{findings:#?}");
    assert_eq!(codes(&findings), ["duplicate-definition"], "{findings:#?}");
    let f = &findings[0];
    assert_eq!(f["severity"], "error");
    assert_eq!(f["count"], 30);
    assert!(f["first"].as_str().unwrap().ends_with("libLLVM-17.so"));
    assert!(f["file"].as_str().unwrap().ends_with("libamd_comgr.so.2"));
    assert!(f["examples"][0].as_str().unwrap().starts_with("llvm::pass"));
}

/// The loader's cache and configuration inside a sysroot: `ldconfig -r ROOT` writes the cache
/// from the root's ld.so.conf, as a package install would.
#[test]
fn sysroot_cache_and_conf_are_the_roots_own() {
    let t = tmp();
    let root = t.path();
    let opt = root.join("opt/vendor/lib");
    std::fs::create_dir_all(&opt).unwrap();
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::create_dir_all(root.join("usr/bin")).unwrap();
    shared_lib(
        &opt,
        "libvendor.so.3",
        "int v(void) { return 3; }\n",
        &["-Wl,-soname,libvendor.so.3"],
    );
    write(
        &root.join("usr/bin/tool.c"),
        "int v(void);\nint main(void) { return v(); }\n",
    );
    cc(
        "gcc",
        &root.join("usr/bin"),
        &[
            "tool.c",
            "-o",
            "tool",
            "-L../../opt/vendor/lib",
            "-l:libvendor.so.3",
            "-Wl,--allow-shlib-undefined",
        ],
    );
    std::fs::remove_file(root.join("usr/bin/tool.c")).unwrap();
    // Only the vendor library: libc comes from the host in the list-libs comparison below.
    write(
        &root.join("etc/ld.so.conf"),
        "include /etc/ld.so.conf.d/*.conf\n",
    );
    write(
        &root.join("etc/ld.so.conf.d/vendor.conf"),
        "# vendor\n/opt/vendor/lib\n",
    );
    let tool = root.join("usr/bin/tool");
    let list = |args: &[&str]| -> Vec<(String, Option<String>)> {
        let mut a = vec!["--root", s(root)];
        a.extend_from_slice(args);
        rocpack_list(&tool, &a)
    };
    // No cache: ld.so.conf's directories stand in for it.
    let l = list(&[]);
    assert_eq!(
        l[0],
        (
            "libvendor.so.3".into(),
            Some("/opt/vendor/lib/libvendor.so.3".into())
        )
    );
    let out = output_of(rocpack().args(["verify", "--root", s(root), "--checks", "linkage"]));
    let text = String::from_utf8_lossy(&out.stdout);
    // libc.so.6 is not in this root: reported, with the root's own search order.
    assert!(text.contains("libc.so.6 is not found"), "{text}");
    assert!(
        text.contains("/opt/vendor/lib (ld.so.conf (no ld.so.cache))"),
        "{text}"
    );
    assert!(!text.contains("libvendor.so.3 is not found"), "{text}");

    // With a real cache written by glibc's ldconfig for this root.
    run_checked(Command::new("/sbin/ldconfig").arg("-r").arg(root));
    assert!(root.join("etc/ld.so.cache").is_file());
    std::fs::remove_file(root.join("etc/ld.so.conf.d/vendor.conf")).unwrap();
    let l = list(&[]);
    assert_eq!(
        l[0],
        (
            "libvendor.so.3".into(),
            Some("/opt/vendor/lib/libvendor.so.3".into())
        )
    );
    let out =
        output_of(rocpack().args(["verify", "--json", "--root", s(root), "--checks", "linkage"]));
    let records = json_lines(&String::from_utf8_lossy(&out.stdout));
    let libc = records
        .iter()
        .find(|r| r["library"] == "libc.so.6")
        .expect("libc.so.6 unresolved in the bare root");
    let sources: Vec<&str> = libc["searched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["source"].as_str().unwrap())
        .collect();
    assert!(sources.contains(&"ld.so.cache"), "{sources:?}");
}

/// Only a candidate of another ELF class is skipped; anything else the loader finds first under
/// the name stops it with an error, and later directories are not searched.
#[test]
fn the_first_candidate_wins_unless_its_elf_class_differs() {
    let t = tmp();
    let (a, b) = (t.path().join("a"), t.path().join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    shared_lib(
        &b,
        "libdep.so.1",
        "int dep(void) { return 1; }\n",
        &["-Wl,-soname,libdep.so.1"],
    );
    write(
        &t.path().join("app.c"),
        "int dep(void);\nint main(void) { return dep(); }\n",
    );
    cc(
        "gcc",
        t.path(),
        &[
            "app.c",
            "-o",
            "app",
            "b/libdep.so.1",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN/a:$ORIGIN/b",
        ],
    );
    let app = t.path().join("app");
    let in_b = Some(format!("{}/b/libdep.so.1", t.path().display()));

    // A 32-bit ELF header: skipped (the loader's "wrong ELF class"), found in b.
    let mut elf32 = b"\x7fELF\x01\x01\x01".to_vec();
    elf32.resize(4096, 0);
    std::fs::write(a.join("libdep.so.1"), &elf32).unwrap();
    let ours = rocpack_list(&app, &[]);
    assert_eq!(ours, ldso_list(&app, &[]));
    assert_eq!(ours[0].1, in_b);
    let (code, findings) = verify(&[s(&app)]);
    assert_eq!((code, findings.len()), (0, 0), "{findings:#?}");

    // Not ELF, or an executable: the loader stops there ("invalid ELF header", "cannot
    // dynamically load position-independent executable").
    for (bad, why) in [
        (
            std::fs::read("/bin/true").unwrap(),
            "position-independent executable",
        ),
        (vec![0x55; 4096], "not an ELF file"),
    ] {
        std::fs::write(a.join("libdep.so.1"), &bad).unwrap();
        let oracle = output_of(Command::new(LDSO).arg("--list").arg(&app));
        assert!(
            !oracle.status.success(),
            "glibc loaded {app:?} past a bad candidate"
        );
        let (code, findings) = verify(&[s(&app)]);
        assert_eq!(code, 1);
        assert_eq!(codes(&findings), ["unresolved-library"], "{findings:#?}");
        let f = &findings[0];
        assert!(
            f["message"]
                .as_str()
                .unwrap()
                .contains("the loader stops at"),
            "{f:#}"
        );
        assert!(
            f["stopped_at"]["reason"].as_str().unwrap().contains(why),
            "{f:#}"
        );
        assert_eq!(
            f["stopped_at"]["path"],
            format!("{}/a/libdep.so.1", t.path().display())
        );
    }
}

/// Nothing rocpack reads is ever run: not the program, not its interpreter, not a library's
/// constructor. Each would leave a marker file.
#[test]
fn no_inspected_file_is_executed() {
    let t = tmp();
    let d = t.path();
    let marker = |n: &str| d.join(format!("marker-{n}"));
    // An interpreter that leaves a marker if the kernel ever starts it (as old ldd did).
    write(
        &d.join("interp.c"),
        &format!(
            "#include <stdio.h>\nint main(void) {{ FILE *f = fopen(\"{}\", \"w\"); if (f) fclose(f); return 0; }}\n",
            marker("interp").display()
        ),
    );
    cc("gcc", d, &["-static", "interp.c", "-o", "interp"]);
    write(&d.join("prog.c"), "int main(void) { return 0; }\n");
    let interp = format!("-Wl,--dynamic-linker={}", d.join("interp").display());
    cc("gcc", d, &["prog.c", "-o", "prog", &interp]);
    // A library whose constructor leaves a marker if it is ever loaded.
    shared_lib(
        d,
        "libctor.so",
        &format!(
            "#include <stdio.h>\n__attribute__((constructor)) static void c(void) {{ FILE *f = fopen(\"{}\", \"w\"); if (f) fclose(f); }}\nint ctor(void) {{ return 1; }}\n",
            marker("ctor").display()
        ),
        &["-Wl,-soname,libctor.so"],
    );
    // A "library" that is a shell script.
    write(
        &d.join("libscript.so"),
        &format!("#!/bin/sh\ntouch {}\n", marker("script").display()),
    );
    use std::os::unix::fs::PermissionsExt;
    for f in ["libscript.so", "libctor.so", "prog", "interp"] {
        std::fs::set_permissions(d.join(f), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // Sanity: the markers do work when the files are run.
    run_checked(&mut Command::new(d.join("interp")));
    assert!(marker("interp").exists());
    std::fs::remove_file(marker("interp")).unwrap();

    for args in [
        vec!["verify"],
        vec!["verify", "--list-libs"],
        vec!["verify", "--json"],
    ] {
        output_of(rocpack().args(&args).arg(d));
        for f in ["prog", "libctor.so", "libscript.so"] {
            output_of(rocpack().args(&args).arg(d.join(f)));
        }
    }
    for m in ["interp", "ctor", "script"] {
        assert!(!marker(m).exists(), "{m} was executed");
    }
    // prog's interpreter is found and read (it is the first object's PT_INTERP), not run.
    let (_, findings) = verify(&[s(&d.join("prog"))]);
    assert!(
        findings.iter().all(|f| f["code"] != "unreadable-file"),
        "{findings:#?}"
    );
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        vec!["verify"],
        vec!["verify", "--allow", "no-such-code", "."],
        vec!["verify", "--env", "LD_BIND_NOW=1", "."],
        vec!["verify", "--checks", "everything", "."],
        vec!["verify", "--root", "/nonexistent-root"],
    ] {
        let out = output_of(rocpack().args(&args));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).starts_with("error: "),
            "{args:?}"
        );
    }
}
