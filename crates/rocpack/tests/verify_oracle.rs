//! `rocpack verify --list-libs` against glibc's own dynamic loader in trace mode
//! (`/lib64/ld-linux-x86-64.so.2 --list FILE`, what `ldd` runs), on this machine's own, trusted
//! libraries and a few programs: the same libraries, found at the same paths, in the same load
//! order.
//!
//! The loader is run here only on the system's own files; rocpack never runs anything.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

const LIBDIR: &str = "/usr/lib/x86_64-linux-gnu";
const LOADER: &str = "/lib64/ld-linux-x86-64.so.2";

/// Programs to compare as well, where installed: some plain, some with a `DT_RUNPATH` (systemd's
/// and man-db's private directories, LLVM's `$ORIGIN/../lib`).
const PROGRAMS: &[&str] = &[
    "/usr/bin/bash",
    "/usr/bin/ls",
    "/usr/bin/tar",
    "/usr/bin/git",
    "/usr/bin/perl",
    "/usr/bin/python3",
    "/usr/bin/dpkg",
    "/usr/bin/xz",
    "/usr/bin/zstd",
    "/usr/bin/systemctl",
    "/usr/bin/journalctl",
    "/usr/bin/man",
    "/usr/lib/llvm-19/bin/clang",
    "/usr/lib/llvm-19/bin/llvm-readelf",
    "/usr/lib/llvm-19/bin/lld",
    "/usr/lib/llvm-19/bin/clang-offload-bundler",
];

/// The ELF type of a file if it is an x86-64 ELF file (`e_type`), from its header.
fn x86_64_elf_type(path: &Path) -> Option<u16> {
    let mut head = [0u8; 20];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    (head.starts_with(b"\x7fELF") && head[4] == 2 && le16(&head, 18) == 62).then(|| le16(&head, 16))
}

/// Every regular file (not a symlink) directly in /usr/lib/x86_64-linux-gnu that is an x86-64
/// ELF shared object (`ET_DYN`) with `.so` in its name, sorted by name; then the programs of
/// [`PROGRAMS`] that exist, symlinks resolved (python3 -> python3.11), without duplicates.
fn files() -> Vec<PathBuf> {
    let mut libs: Vec<PathBuf> = std::fs::read_dir(LIBDIR)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(".so"))
        .filter(|p| x86_64_elf_type(p) == Some(3))
        .collect();
    libs.sort();
    assert!(
        libs.len() >= 300,
        "only {} shared libraries in {LIBDIR}; this oracle test wants at least 300 \
         (scripts/install-deps.sh installs enough of them)",
        libs.len()
    );
    let mut programs: Vec<PathBuf> = PROGRAMS
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .filter(|p| matches!(x86_64_elf_type(p), Some(2 | 3)))
        .collect();
    programs.dedup();
    assert!(
        programs.len() >= 5,
        "only {programs:?} of {PROGRAMS:?} exist"
    );
    libs.extend(programs);
    libs
}

/// One object of a trace, as `ld.so --list` prints it: `NAME => PATH`, `NAME => not found`, or
/// just `PATH` for an object loaded by its path (the dynamic linker itself, or a `DT_NEEDED`
/// holding a slash).
fn entry(name: &str, path: Option<&str>) -> String {
    match path {
        None => format!("{name} => not found"),
        Some(p) if p == name || p == LOADER => p.to_owned(),
        Some(p) => format!("{name} => {p}"),
    }
}

/// `ld.so --list FILE`: the objects in load order, without linux-vdso.so.1 (the kernel's); a
/// library without `DT_NEEDED` is "statically linked" to it, which is an empty list. `Err` with
/// the loader's message when it refuses the file.
fn glibc_trace(file: &Path) -> Result<Vec<String>, String> {
    let mut cmd = Command::new(LOADER);
    // Cargo sets LD_LIBRARY_PATH for tests; the loader must see the system's configuration only.
    cmd.arg("--list")
        .arg(file)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("LD_PRELOAD")
        .env_remove("LD_AUDIT")
        .env_remove("GLIBC_TUNABLES");
    let out = output_of(&mut cmd);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{}: {}{}",
            out.status,
            stdout.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let mut v = Vec::new();
    for line in stdout.lines() {
        let l = line.trim();
        if l.is_empty() || l.starts_with("linux-vdso.so.") || l == "statically linked" {
            continue;
        }
        // Strip the load address " (0x...)".
        let l = match l.rfind(" (0x") {
            Some(i) if l.ends_with(')') => &l[..i],
            _ => l,
        };
        match l.split_once(" => ") {
            Some((name, "not found")) => v.push(entry(name, None)),
            Some((name, path)) => v.push(entry(name, Some(path))),
            None if l.starts_with('/') => v.push(l.to_owned()),
            None => panic!(
                "unexpected line in `{LOADER} --list {}`: {line:?}",
                file.display()
            ),
        }
    }
    Ok(v)
}

/// What a mismatch is about, for the message.
fn classify(g: &[String], r: &[String]) -> &'static str {
    let names = |v: &[String]| -> Vec<String> {
        let mut n: Vec<String> = v
            .iter()
            .map(|e| e.split(" => ").next().unwrap().to_owned())
            .collect();
        n.sort();
        n
    };
    let sorted = |v: &[String]| -> Vec<String> {
        let mut s = v.to_vec();
        s.sort();
        s
    };
    if names(g) != names(r) {
        "different libraries"
    } else if sorted(g) != sorted(r) {
        "same libraries, different paths"
    } else {
        "same libraries and paths, different load order"
    }
}

#[test]
fn list_libs_agrees_with_glibc_ld_so_list() {
    let files = files();
    let mut args: Vec<OsString> = vec!["verify".into(), "--list-libs".into(), "--json".into()];
    args.extend(files.iter().map(|p| p.as_os_str().to_os_string()));
    // Exit status 1 (some library not found) is an answer too; unreadable files print on stderr.
    let mut cmd = rocpack();
    cmd.args(&args);
    let out = output_of(&mut cmd);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{} exited with {}: {}",
        describe(&cmd),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = json_lines(&String::from_utf8(out.stdout).unwrap());
    let mut rocpack_of = std::collections::HashMap::new();
    for v in &listed {
        let libs: Vec<String> = v["libraries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| entry(get_str(l, "name"), opt_str(l, "path")))
            .collect();
        rocpack_of.insert(PathBuf::from(get_str(v, "file")), libs);
    }

    // Not a vacuous agreement: most files load several libraries.
    let objects: usize = rocpack_of.values().map(Vec::len).sum();
    assert!(
        objects >= 2 * files.len(),
        "only {objects} libraries listed for {} files",
        files.len()
    );

    let mut mismatches = Vec::new();
    let mut compared = 0;
    for f in &files {
        let g = glibc_trace(f);
        let r = rocpack_of.get(f);
        match (&g, r) {
            (Ok(g), Some(r)) if g == r => compared += 1,
            (Ok(g), Some(r)) => {
                let mut m = format!(
                    "{}: {}\n  ld.so --list:  {g:?}\n  rocpack:       {r:?}",
                    f.display(),
                    classify(g, r)
                );
                // Same files under another spelling (/lib/... against /usr/lib/...)?
                let canon = |v: &[String]| -> Vec<Option<PathBuf>> {
                    v.iter()
                        .map(|e| std::fs::canonicalize(e.rsplit(" => ").next().unwrap()).ok())
                        .collect()
                };
                if canon(g) == canon(r) {
                    m.push_str(
                        "\n  (the same files in the same order once paths are canonicalized)",
                    );
                }
                mismatches.push(m);
            }
            (Err(e), Some(r)) => mismatches.push(format!(
                "{}: the loader refused it ({e}), rocpack listed {r:?}",
                f.display()
            )),
            (Ok(g), None) => mismatches.push(format!(
                "{}: rocpack listed nothing (stderr: {}), the loader listed {g:?}",
                f.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            (Err(_), None) => compared += 1,
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} files differ between `{LOADER} --list` and `rocpack verify --list-libs`:\n{}",
        mismatches.len(),
        files.len(),
        mismatches.join("\n")
    );
    assert_eq!(compared, files.len());
}
