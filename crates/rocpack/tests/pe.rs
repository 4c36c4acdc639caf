//! Windows PE images end to end: `check`, `list`, `show` and `extract` on the DLLs and the
//! executable of tests/fixtures/pe (made by make-pe-fixtures.sh), damaged copies of them, and a
//! DLL read in place from a wheel. What the images hold is checked against LLVM's tools in
//! oracle.rs (`pe_images_match_llvm`); here the commands' behaviour is.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use serde_json::Value;

fn pe(name: &str) -> PathBuf {
    let p = fixtures_dir().join("pe").join(name);
    assert!(p.is_file(), "fixture {} missing", p.display());
    p
}

fn run(args: &[&std::ffi::OsStr]) -> Output {
    let mut cmd = rocpack();
    cmd.args(args).env_remove("HSA_OVERRIDE_GFX_VERSION");
    output_of(&mut cmd)
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

/// `check --json` verdict lines of `paths` for `gpus`: (file name, gpu target, verdict).
fn verdicts(paths: &[PathBuf], gpus: &[&str]) -> (Option<i32>, Vec<Value>) {
    let mut args: Vec<std::ffi::OsString> = vec!["check".into(), "--json".into()];
    for g in gpus {
        args.push("--gpu".into());
        args.push((*g).into());
    }
    args.extend(paths.iter().map(|p| p.clone().into_os_string()));
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let out = run(&refs);
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    let lines = json_lines(&text(&out.stdout))
        .into_iter()
        .filter(|v| v["type"] == "verdict")
        .collect();
    (out.status.code(), lines)
}

fn verdict_of<'a>(lines: &'a [Value], file: &str, target: &str) -> &'a Value {
    lines
        .iter()
        .find(|v| {
            Path::new(get_str(v, "file")).file_name() == Some(std::ffi::OsStr::new(file))
                && get_str(v, "target") == target
        })
        .unwrap_or_else(|| panic!("no verdict for {file} on {target} in {lines:?}"))
}

#[test]
fn check_reads_dlls_and_executables_as_pe_libraries() {
    let files: Vec<PathBuf> = [
        "two-arch.dll",
        "two-tu.dll",
        "gfx1100-pe32.dll",
        "fixed.exe",
    ]
    .iter()
    .map(|n| pe(n))
    .collect();
    let (code, lines) = verdicts(&files, &["gfx1100", "gfx1030", "gfx90a:xnack+"]);
    assert_eq!(code, Some(1), "{lines:?}");
    assert_eq!(lines.len(), 12, "{lines:?}");
    for v in &lines {
        assert_eq!(get_str(v, "library_kind"), "pe", "{v}");
    }
    for (file, target, want) in [
        ("two-arch.dll", "gfx1100", "native"),
        ("two-arch.dll", "gfx1030", "native"),
        ("two-arch.dll", "gfx90a:xnack+", "none"),
        // Two TUs, two fat binaries registered one by one: each GPU lacks one TU's kernels.
        ("two-tu.dll", "gfx1100", "none"),
        ("two-tu.dll", "gfx1030", "none"),
        ("two-tu.dll", "gfx90a:xnack+", "none"),
        ("gfx1100-pe32.dll", "gfx1100", "native"),
        ("gfx1100-pe32.dll", "gfx1030", "none"),
        ("fixed.exe", "gfx1100", "native"),
        ("fixed.exe", "gfx90a:xnack+", "none"),
    ] {
        let v = verdict_of(&lines, file, target);
        assert_eq!(get_str(v, "verdict"), want, "{file} on {target}: {v}");
        assert!(
            get_str(v, "bundle").starts_with(".hip_fat > bundle #"),
            "{file} on {target}: {v}"
        );
    }
    let two_tu = verdict_of(&lines, "two-tu.dll", "gfx1100");
    assert!(
        get_str(two_tu, "reason").starts_with("1 of 2 bundles have no code object"),
        "{two_tu}"
    );
    // The one-TU images all run on gfx1100: exit 0.
    let one_tu = [files[0].clone(), files[2].clone(), files[3].clone()];
    let (code, _) = verdicts(&one_tu, &["gfx1100"]);
    assert_eq!(code, Some(0));
}

#[test]
fn show_names_the_image_and_its_section() {
    let out = run(&["show".as_ref(), pe("gfx1100-pe32.dll").as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let s = text(&out.stdout);
    assert!(s.contains("host PE: DLL, i386, PE32\n"), "{s}");
    assert!(s.contains("section .hip_fat at 0xe00, 11,496 bytes"), "{s}");
    let exe = run(&[
        "show".as_ref(),
        "--json".as_ref(),
        pe("fixed.exe").as_os_str(),
    ]);
    let v = &json_lines(&text(&exe.stdout))[0];
    let c = &v["containers"][0];
    assert_eq!(c["type"], "host-pe", "{c}");
    assert_eq!(c["machine"], 0x8664, "{c}");
    assert_eq!(c["pe32_plus"], true, "{c}");
    assert_eq!(c["dll"], false, "{c}");
    assert_eq!(v["containers"][1]["name"], ".hip_fat");
}

/// Embedded code in an image is named by the export that starts where it does, as
/// llvm-readobj-19 --coff-exports lists them; code no export starts at has no name.
#[test]
fn embedded_code_is_named_by_the_export_llvm_lists() {
    let dll = pe("embedded.dll");
    let exports = Command::new("llvm-readobj-19")
        .arg("--coff-exports")
        .arg(&dll)
        .output()
        .unwrap();
    let listing = text(&exports.stdout);
    // Export { Ordinal: 1  Name: bundle_blob  RVA: 0x2000 }
    let mut named = Vec::new();
    let mut name = None;
    for line in listing.lines().map(str::trim) {
        if let Some(n) = line.strip_prefix("Name: ") {
            name = Some(n.to_owned());
        } else if let Some(rva) = line.strip_prefix("RVA: 0x") {
            named.push((u64::from_str_radix(rva, 16).unwrap(), name.take().unwrap()));
        }
    }
    assert_eq!(named.len(), 1, "{listing}");
    let out = run(&["show".as_ref(), "--json".as_ref(), dll.as_os_str()]);
    let v = &json_lines(&text(&out.stdout))[0];
    let headers = Command::new("llvm-readobj-19")
        .arg("--file-headers")
        .arg(&dll)
        .output()
        .unwrap();
    let image_base = text(&headers.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("ImageBase: 0x"))
        .map(|h| u64::from_str_radix(h, 16).unwrap())
        .expect("llvm-readobj-19 prints ImageBase");
    let embedded: Vec<&Value> = v["containers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "embedded")
        .collect();
    assert_eq!(embedded.len(), 2, "{v}");
    for c in embedded {
        assert_eq!(c["symbol_table"], "exports", "{c}");
        let rva = c["vaddr"].as_u64().unwrap() - image_base;
        let want = named
            .iter()
            .find(|(r, _)| *r == rva)
            .map(|(_, n)| n.as_str());
        assert_eq!(c["symbol"].as_str(), want, "{c}");
    }
}

#[test]
fn extract_writes_each_code_object_of_a_dll() {
    let tmp = tempdir();
    let dll = pe("two-tu.dll");
    let rows = list_all(&dll, false);
    for target in ["gfx1030", "gfx90a:xnack+", "gfx1100"] {
        let dir = tmp.path().join(sanitize(target));
        let outs = extract(&dll, target, &dir);
        assert_eq!(outs.len(), 1, "{target}: {outs:?}");
        let written = std::fs::read(get_str(&outs[0], "output")).unwrap();
        let row = rows
            .iter()
            .find(|r| opt_str(r, "target") == Some(target))
            .unwrap();
        assert_eq!(written.len() as u64, get_u64(row, "size"), "{target}");
        // Uncompressed entries are the file's own bytes; the CCOB's entry is checked by the oracle.
        if let Some(fo) = opt_u64(row, "file_offset") {
            let data = std::fs::read(&dll).unwrap();
            assert_same_bytes(
                &written,
                &data[fo as usize..fo as usize + written.len()],
                target,
            );
        } else {
            assert!(get_bool(row, "compressed"), "{row}");
        }
    }
}

/// A copy of a fixture with `patch` applied.
fn patched(tmp: &Path, name: &str, patch: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut d = std::fs::read(pe(name)).unwrap();
    patch(&mut d);
    let p = tmp.join(name);
    std::fs::write(&p, d).unwrap();
    p
}

#[test]
fn a_truncated_dll_is_an_error_naming_the_section_and_offset() {
    let tmp = tempdir();
    // gfx1100.dll: .hip_fat holds 10,728 bytes at 0x1000 (VirtualSize; its raw data is padded to
    // 10,752); cut inside its code object.
    let p = patched(tmp.path(), "gfx1100.dll", |d| d.truncate(0x2000));
    let out = run(&["list".as_ref(), p.as_os_str()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains("error[truncated-file]")
            && err.contains("file offset 0x1000: section .hip_fat (10728 bytes at offset 0x1000) runs past the end of the 8192-byte file"),
        "{err}"
    );
    // Cut inside the section table: the PE headers themselves are malformed.
    let p = patched(tmp.path(), "gfx1100.dll", |d| d.truncate(0x190));
    let out = run(&["list".as_ref(), p.as_os_str()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("error[malformed-pe]"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_wrapper_that_cannot_be_followed_falls_back_to_walking_the_section() {
    let tmp = tempdir();
    // gfx1100.dll: the wrapper is at file offset 0xe00; null its pointer (0xe08..0xe10).
    let p = patched(tmp.path(), "gfx1100.dll", |d| d[0xe08..0xe10].fill(0));
    let out = run(&["list".as_ref(), "--json".as_ref(), p.as_os_str()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("warning[wrapper-outside-fatbin]")
            && err.contains("wrapper #0: its pointer is null"),
        "{err}"
    );
    assert!(err.contains("warning[sequential-walk]"), "{err}");
    let rows = json_lines(&text(&out.stdout));
    assert_eq!(rows.len(), 1);
    assert_eq!(opt_str(&rows[0], "target"), Some("gfx1100"));
    // The same rows as the intact image.
    let intact = json_lines(&rocpack_ok(&[
        "list".as_ref(),
        "--json".as_ref(),
        pe("gfx1100.dll").as_os_str(),
    ]));
    for k in ["container", "entry_id", "file_offset", "size"] {
        assert_eq!(rows[0][k], intact[0][k], "{k}");
    }
    // A base relocation of the wrong kind at the field (HIGHLOW in a PE32+ image): same fallback.
    // gfx1100.dll's .reloc (file offset 0x3a00) has a block for page 0x6000 of 12 bytes whose
    // entry 0xa008 is the DIR64 at 0x6008; make it 0x3008.
    let p = patched(tmp.path(), "gfx1100.dll", |d| {
        let block = find_all(d, &[0, 0x60, 0, 0, 0x0c, 0, 0, 0])
            .into_iter()
            .find(|&o| o >= 0x3a00)
            .unwrap();
        assert_eq!(d[block + 8..block + 10], [0x08, 0xa0]);
        d[block + 9] = 0x30;
    });
    let out = run(&["list".as_ref(), p.as_os_str()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("has a base relocation of type 3, not 10"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_dll_in_a_wheel_is_read_in_place() {
    let tmp = tempdir();
    let wheel = tmp.path().join("pe_test-1.0-py3-none-win_amd64.whl");
    // One member deflated, one stored: both must be recognised from their first bytes.
    run_ok(
        Command::new("python3")
            .args([
                "-c",
                "import sys, zipfile\n\
                 with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
                 \x20   z.write(sys.argv[2], 'pe_test/two_arch.dll', zipfile.ZIP_DEFLATED)\n\
                 \x20   z.write(sys.argv[3], 'pe_test/fixed.exe', zipfile.ZIP_STORED)\n",
            ])
            .arg(&wheel)
            .arg(pe("two-arch.dll"))
            .arg(pe("fixed.exe")),
    );
    let in_place = list_all(&wheel, false);
    let mut alone = list_all(&pe("two-arch.dll"), false);
    alone.extend(list_all(&pe("fixed.exe"), false));
    assert_same_rows_in_place(&in_place, &alone);
    let (code, lines) = verdicts(&[wheel], &["gfx1100"]);
    assert_eq!(code, Some(0));
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines
            .iter()
            .all(|v| v["library_kind"] == "pe" && v["verdict"] == "native"),
        "{lines:?}"
    );
}
