//! GPU code a library keeps in its own data (issue 14): the clang-19 fixtures
//! `libembedded.so` (a bundle and a bare code object in `.rodata`, a CCOB in `.data`), its
//! stripped copy and `libunclassified.so`, judged by llvm-readelf-19 (symbols, sections, code
//! object headers) and clang-offload-bundler-19 (the IDs of each blob cut at its symbol).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::*;
use serde_json::Value;

/// A `*_blob` object symbol and where llvm-readelf-19 puts it.
#[derive(Debug)]
struct Blob {
    name: String,
    section: String,
    file_offset: u64,
    size: u64,
}

fn blobs(lib: &Path) -> Vec<Blob> {
    let sections: Vec<(String, u64, u64, u64)> =
        run_ok(llvm("llvm-readelf-19").arg("-SW").arg(lib))
            .lines()
            .filter_map(|l| {
                let l = l.trim_start();
                let rest = l.strip_prefix('[')?.split_once(']')?.1;
                let f: Vec<&str> = rest.split_whitespace().collect();
                let hex = |s: &str| u64::from_str_radix(s, 16).ok();
                Some((
                    f.first()?.to_string(),
                    hex(f.get(2)?)?,
                    hex(f.get(3)?)?,
                    hex(f.get(4)?)?,
                ))
            })
            .collect();
    let mut out: Vec<Blob> = Vec::new();
    for l in run_ok(llvm("llvm-readelf-19").arg("-sW").arg(lib)).lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 8 || f[3] != "OBJECT" || !f[7].ends_with("_blob") {
            continue;
        }
        let value = u64::from_str_radix(f[1], 16).unwrap();
        let size: u64 = f[2].parse().unwrap();
        if out.iter().any(|b| b.name == f[7]) {
            continue;
        }
        let (section, addr, off, _) = sections
            .iter()
            .find(|(_, a, _, s)| (*a..a + s).contains(&value))
            .unwrap_or_else(|| panic!("no section holds {}", f[7]));
        out.push(Blob {
            name: f[7].to_owned(),
            section: section.clone(),
            file_offset: off + value - addr,
            size,
        });
    }
    out
}

/// The entry IDs clang-offload-bundler-19 lists for the bytes of `blob`.
fn bundler_ids(lib: &Path, blob: &Blob) -> BTreeSet<String> {
    let data = std::fs::read(lib).unwrap();
    let tmp = tempdir();
    let cut = tmp.path().join("blob");
    let start = blob.file_offset as usize;
    std::fs::write(&cut, &data[start..start + blob.size as usize]).unwrap();
    run_ok(
        llvm("clang-offload-bundler-19")
            .args(["--list", "--type=o"])
            .arg(format!("--input={}", cut.display())),
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

fn show(lib: &Path) -> Value {
    let v = json_lines(&run_ok(rocpack().args(["show", "--json"]).arg(lib)));
    v.into_iter().next().unwrap()
}

fn embedded_containers(v: &Value) -> Vec<&Value> {
    v["containers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "embedded")
        .collect()
}

#[test]
fn embedded_code_is_found_where_llvm_says_and_named_by_its_symbol() {
    let lib = fixtures_bin().join("libembedded.so");
    let blobs = blobs(&lib);
    assert_eq!(blobs.len(), 3, "{blobs:?}");
    let v = show(&lib);
    let embedded = embedded_containers(&v);
    assert_eq!(embedded.len(), 3);
    let rows = list_all(&lib, false);
    for b in &blobs {
        let c = embedded
            .iter()
            .find(|c| get_u64(c, "file_offset") == b.file_offset)
            .unwrap_or_else(|| panic!("no embedded container at {b:?}"));
        assert_eq!(c["symbol"], b.name.as_str());
        assert_eq!(c["symbol_table"], ".symtab");
        assert_eq!(c["section"], b.section.as_str());
        assert_eq!(get_u64(c, "size"), b.size, "{b:?}");
        let here: Vec<&Value> = rows
            .iter()
            .filter(|r| get_str(r, "container").starts_with(&format!("{}:{}", b.section, b.name)))
            .collect();
        assert!(here.iter().all(|r| get_str(r, "loading") == "module"));
        if b.name == "co_blob" {
            // llvm-readelf-19 -h on the cut bytes says gfx90a too (tests/fixtures/listings.txt).
            assert_eq!(here.len(), 1);
            assert_eq!(get_u64(here[0], "file_offset"), b.file_offset);
            assert_eq!(get_str(here[0], "target"), "gfx90a");
        } else {
            let ids: BTreeSet<String> = here
                .iter()
                .map(|r| get_str(r, "entry_id").to_owned())
                .collect();
            assert_eq!(ids, bundler_ids(&lib, b), "{}", b.name);
        }
    }
}

#[test]
fn stripped_library_names_what_dynsym_covers_and_says_so_for_the_rest() {
    let lib = fixtures_bin().join("libembedded-stripped.so");
    let v = show(&lib);
    let embedded = embedded_containers(&v);
    assert_eq!(embedded.len(), 3);
    let named: Vec<&str> = embedded
        .iter()
        .filter_map(|c| c["symbol"].as_str())
        .collect();
    assert_eq!(named, ["bundle_blob"]);
    assert!(embedded.iter().all(|c| c["symbol_table"] == ".dynsym"));
    // The same code as the unstripped library, at the same offsets.
    let full = list_all(&fixtures_bin().join("libembedded.so"), false);
    let stripped = list_all(&lib, false);
    let key = |r: &Value| {
        (
            opt_u64(r, "file_offset"),
            opt_str(r, "entry_id").map(str::to_owned),
        )
    };
    assert_eq!(
        full.iter().map(key).collect::<BTreeSet<_>>(),
        stripped.iter().map(key).collect::<BTreeSet<_>>()
    );
}

#[test]
fn unclassified_gpu_code_is_reported_never_as_no_gpu_code() {
    let lib = fixtures_bin().join("libunclassified.so");
    let blob = &blobs(&lib)[0];
    let v = show(&lib);
    assert!(v["code_objects"].as_array().unwrap().is_empty());
    let d: Vec<&Value> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "unclassified-gpu-code")
        .collect();
    assert_eq!(d.len(), 1);
    assert_eq!(get_u64(d[0], "offset"), blob.file_offset);
    let out = output_of(
        rocpack()
            .args(["check", "--json", "--gpu", "gfx1100"])
            .arg(&lib),
    );
    assert_eq!(out.status.code(), Some(1));
    let verdict = json_lines(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .find(|r| r["type"] == "verdict")
        .expect("a verdict for the library");
    assert_eq!(verdict["verdict"], "none");
    assert!(get_str(&verdict, "reason").contains("unclassified GPU code"));
    assert_eq!(
        get_u64(&verdict["unclassified"][0], "offset"),
        blob.file_offset
    );
}

#[test]
fn check_judges_module_loaded_code_and_says_so() {
    let lib = fixtures_bin().join("libembedded.so");
    let out = output_of(
        rocpack()
            .args([
                "check",
                "--json",
                "--gpu",
                "gfx1100",
                "--gpu",
                "gfx90a:xnack+",
            ])
            .arg(&lib),
    );
    assert_eq!(out.status.code(), Some(1));
    let verdicts: Vec<Value> = json_lines(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .filter(|r| r["type"] == "verdict")
        .collect();
    let on = |t: &str| verdicts.iter().find(|v| v["target"] == t).unwrap();
    assert_eq!(on("gfx1100")["verdict"], "none");
    assert_eq!(on("gfx1100")["loading"], "module");
    assert!(get_str(on("gfx1100"), "reason").contains("module-loaded code .rodata:bundle_blob"));
    assert_eq!(on("gfx90a:xnack+")["verdict"], "native");
}

/// Code in `.text` (tests/fixtures/src/embedded-text.S) is not searched by default, and the
/// library reads as holding no GPU code; `--deep` finds it, named by its symbol, and `check`
/// judges by it.
#[test]
fn code_in_an_executable_section_is_found_with_deep() {
    let lib = fixtures_bin().join("libembedded-text.so");
    let check = |deep: bool| {
        let mut cmd = rocpack();
        cmd.args([
            "check",
            "--json",
            "--gpu",
            "gfx90a:xnack+",
            "--gpu",
            "gfx1100",
        ]);
        if deep {
            cmd.arg("--deep");
        }
        let out = output_of(cmd.arg(&lib));
        let verdicts: Vec<Value> = json_lines(&String::from_utf8_lossy(&out.stdout))
            .into_iter()
            .filter(|r| r["type"] == "verdict")
            .collect();
        (out.status.code(), verdicts)
    };
    let (_, plain) = check(false);
    assert!(plain.iter().all(|v| v["verdict"] != "native"), "{plain:?}");
    let (code, deep) = check(true);
    assert_eq!(code, Some(1), "{deep:?}");
    let on = |t: &str| deep.iter().find(|v| v["target"] == t).unwrap();
    assert_eq!(on("gfx90a:xnack+")["verdict"], "native", "{deep:?}");
    assert_eq!(on("gfx1100")["verdict"], "none", "{deep:?}");
    assert!(
        get_str(on("gfx1100"), "reason").contains(".text:text_bundle_blob"),
        "{deep:?}"
    );
}

/// A library without section headers (cut by a tool such as sstrip) is searched segment by
/// segment; embedded code is named through the dynamic symbol table the dynamic section points
/// to, as GNU readelf -D -s reads it from the same place (llvm-readelf-19 lists no dynamic symbols
/// without section headers when the file has DT_GNU_HASH but no DT_HASH).
#[test]
fn without_section_headers_code_is_named_through_the_dynamic_table() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("libembedded-noshdr.so");
    let mut bytes = std::fs::read(fixtures_bin().join("libembedded.so")).unwrap();
    bytes[0x28..0x30].fill(0); // e_shoff
    bytes[0x3c..0x40].fill(0); // e_shnum, e_shstrndx
    std::fs::write(&lib, &bytes).unwrap();
    let out = std::process::Command::new("readelf")
        .args(["-W", "-D", "-s"])
        .arg(&lib)
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&out.stdout);
    //    Num:    Value          Size Type    Bind   Vis      Ndx Name
    //      1: 0000000000001000 19120 OBJECT  GLOBAL DEFAULT    5 bundle_blob
    let (value, size) = listing
        .lines()
        .find(|l| l.trim_end().ends_with(" bundle_blob"))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (
                u64::from_str_radix(f[1], 16).unwrap(),
                f[2].parse::<u64>().unwrap(),
            )
        })
        .unwrap_or_else(|| panic!("readelf -D -s lists no bundle_blob:\n{listing}"));
    let v = show(&lib);
    let embedded = embedded_containers(&v);
    assert_eq!(embedded.len(), 3, "{v}");
    for c in embedded {
        assert_eq!(c["section"], "PT_LOAD", "{c}");
        assert_eq!(c["symbol_table"], ".dynsym", "{c}");
        let at = get_u64(c, "vaddr");
        if (value..value + size).contains(&at) {
            assert_eq!(c["symbol"], "bundle_blob", "{c}");
        } else {
            assert!(c["symbol"].is_null(), "{c}");
        }
    }
}
