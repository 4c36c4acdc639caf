//! `rocpack strip`, `compress` and `decompress`: what they write is checked with clang's own
//! bundler and with byte readers written from the format description, and what they must never
//! do (lose a byte, leave a half-written file, change a file that failed) is provoked with
//! SIGKILL at every step, a full filesystem, read-only files, hard links and damaged input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

fn copy_fixtures(names: &[&str], dir: &Path) {
    for n in names {
        std::fs::copy(fixtures_bin().join(n), dir.join(n)).unwrap();
    }
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

/// Runs rocpack; returns (exit code, stdout, stderr).
fn rocpack_run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = rocpack();
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = output_of(&mut cmd);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Files in `dir` (names), including hidden ones.
fn names_in(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn temp_files(dir: &Path) -> Vec<String> {
    names_in(dir)
        .into_iter()
        .filter(|n| n.contains(".rocpack-"))
        .collect()
}

/// `check --json` verdicts: (library, gpu) → verdict.
fn verdicts(paths: &[&Path], gpus: &str) -> BTreeMap<(String, String), String> {
    let mut cmd = rocpack();
    cmd.args(["check", "--json", "--gpu", gpus]).args(paths);
    let out = output_of(&mut cmd);
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{} failed: {}",
        describe(&cmd),
        String::from_utf8_lossy(&out.stderr)
    );
    json_lines(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .filter(|r| get_str(r, "type") == "verdict")
        .map(|r| {
            let lib = Path::new(get_str(&r, "file"))
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (
                (lib, get_str(&r, "gpu").to_owned()),
                get_str(&r, "verdict").to_owned(),
            )
        })
        .collect()
}

/// (processor of every device entry, entry ID) listed for `path`.
fn device_entries(path: &Path) -> Vec<(String, String)> {
    list_all(path, false)
        .into_iter()
        .filter(|r| !get_bool(r, "host"))
        .map(|r| {
            (
                opt_str(&r, "target").unwrap_or("").to_owned(),
                opt_str(&r, "entry_id").unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// File offsets of the bundles (plain or compressed) rocpack finds in `path`.
fn bundle_offsets(path: &Path) -> Vec<u64> {
    let show: Value =
        serde_json::from_str(&rocpack_ok(&["show", "--json", path.to_str().unwrap()])).unwrap();
    let files = show
        .as_array()
        .cloned()
        .unwrap_or_else(|| vec![show.clone()]);
    let mut out: Vec<u64> = files
        .iter()
        .flat_map(|f| f["containers"].as_array().cloned().unwrap_or_default())
        .filter(|c| matches!(c["type"].as_str(), Some("bundle" | "ccob")))
        .filter_map(|c| c["file_offset"].as_u64())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn allocated(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().blocks() * 512
}

// ------------------------------------------------------------------------------------------------
// strip
// ------------------------------------------------------------------------------------------------

const ELF_AND_BUNDLES: &[&str] = &[
    "tu1.o",
    "tu2.o",
    "tu1-compressed.o",
    "lib3tu-lld.so",
    "lib3tu-bfd.so",
    "lib2tu-compressed.so",
    "lib3tu-mixed.so",
    "lib3tu-relr.so",
    "lib3tu-noshdr.so",
    "librdc.so",
    "libnd.so",
    "exe-nopie",
    "libhost.a",
    "tu1.hipfb",
    "tu2.hipfb",
    "tu2-compressed.hipfb",
    "generic-v6.hipfb",
    "ccob-v1-zlib.hipfb",
    "ccob-v2-zstd.hipfb",
    "ccob-v3-zlib.hipfb",
];

#[test]
fn strip_keeps_exactly_what_the_kept_gpu_loads() {
    let tmp = tempdir();
    let dir = tmp.path();
    copy_fixtures(ELF_AND_BUNDLES, dir);
    let originals: BTreeMap<&str, Vec<u8>> = ELF_AND_BUNDLES
        .iter()
        .map(|n| (*n, read(&dir.join(n))))
        .collect();
    let gpus = "gfx1030,gfx1031,gfx90a:xnack+,gfx1100,gfx942";
    let before = verdicts(&[dir], gpus);

    let (code, out, err) = rocpack_run(
        &[
            "strip",
            "--keep",
            "gfx1030,gfx1031",
            "--in-place",
            dir.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "strip failed:\n{out}\n{err}");
    assert!(temp_files(dir).is_empty());

    // The kept GPUs run every library exactly as before.
    let after = verdicts(&[dir], gpus);
    for ((lib, gpu), v) in &before {
        let now = &after[&(lib.clone(), gpu.clone())];
        if gpu == "gfx1030" || gpu == "gfx1031" {
            assert_eq!(now, v, "{lib} on {gpu}: {v} before, {now} after strip");
        } else {
            assert!(
                now == "none" || v == "none",
                "{lib} on {gpu}: still {now} after stripping it"
            );
        }
    }
    // No device entry is left that neither kept GPU would load.
    for name in ELF_AND_BUNDLES {
        for (target, id) in device_entries(&dir.join(name)) {
            assert!(
                target.starts_with("gfx1030") || target.starts_with("gfx10-3-generic"),
                "{name}: entry {id} ({target}) survived"
            );
        }
    }
    // Host ELF files: every byte outside .hip_fatbin is unchanged.
    for name in ELF_AND_BUNDLES {
        let path = dir.join(name);
        let old = &originals[name];
        let new = read(&path);
        if !old.starts_with(b"\x7fELF") {
            continue;
        }
        // The copy without section headers has lib3tu-lld.so's layout.
        let layout = if *name == "lib3tu-noshdr.so" {
            "lib3tu-lld.so"
        } else {
            name
        };
        let sections = raw_elf_sections(&fixtures_bin().join(layout)).sections;
        let Some(fatbin) = sections.iter().find(|s| s.name == ".hip_fatbin") else {
            assert_eq!(&new, old, "{name} has no .hip_fatbin and must not change");
            continue;
        };
        assert_eq!(new.len(), old.len(), "{name}: size changed");
        let (s, e) = (
            fatbin.offset as usize,
            (fatbin.offset + fatbin.size) as usize,
        );
        assert_same_bytes(&new[..s], &old[..s], &format!("{name} before .hip_fatbin"));
        assert_same_bytes(&new[e..], &old[e..], &format!("{name} after .hip_fatbin"));
    }
}

#[test]
fn strip_in_place_rewrites_only_the_table_and_zeroes_the_rest() {
    let tmp = tempdir();
    let dir = tmp.path();
    copy_fixtures(&["lib3tu-lld.so"], dir);
    let path = dir.join("lib3tu-lld.so");
    let old = read(&path);
    let offsets = bundle_offsets(&path);
    assert_eq!(offsets.len(), 3);
    let alloc_before = allocated(&path);
    rocpack_ok(&[
        "strip",
        "-q",
        "--keep",
        "gfx1030",
        "-i",
        path.to_str().unwrap(),
    ]);
    let new = read(&path);
    assert_eq!(new.len(), old.len());

    let fatbin = section(&raw_elf_sections(&path).sections, ".hip_fatbin")
        .unwrap()
        .clone();
    let end = fatbin.offset + fatbin.size;
    for (i, &at) in offsets.iter().enumerate() {
        let slot_end = offsets.get(i + 1).copied().unwrap_or(end) as usize;
        let at = at as usize;
        let before = parse_bundle_header(&old[at..]);
        let after = parse_bundle_header(&new[at..]);
        // Same entries minus the dropped ones, at the same offsets and sizes.
        let expected: Vec<&BundleEntry> = before
            .iter()
            .filter(|e| e.id.starts_with("host-") || e.id.ends_with("--gfx1030"))
            .collect();
        assert_eq!(
            after.iter().collect::<Vec<_>>(),
            expected,
            "bundle at {at:#x}"
        );
        // Kept bytes identical; every other byte of the slot after the new table is zero.
        let mut keep = vec![false; slot_end - at];
        let table_end = 32 + after.iter().map(|e| 24 + e.id.len()).sum::<usize>();
        keep[..table_end].iter_mut().for_each(|k| *k = true);
        for e in &after {
            let (s, len) = (e.offset as usize, e.size as usize);
            assert_same_bytes(
                &new[at + s..at + s + len],
                &old[at + s..at + s + len],
                &e.id,
            );
            keep[s..s + len].iter_mut().for_each(|k| *k = true);
        }
        for (j, k) in keep.iter().enumerate() {
            assert!(*k || new[at + j] == 0, "byte {:#x} not zeroed", at + j);
        }
        // clang's bundler reads the new bundle and unbundles the kept entry unchanged.
        let b = dir.join(format!("b{i}"));
        std::fs::write(&b, &new[at..slot_end]).unwrap();
        let ids = bundler_list_ok(&b);
        assert_eq!(ids.len(), expected.len(), "bundler sees {ids:?}");
        if let Some(e) = after.iter().find(|e| e.id.ends_with("gfx1030")) {
            let got = bundler_unbundle(&b, &e.id, &dir.join(format!("u{i}")));
            assert_same_bytes(
                &got,
                &old[at + e.offset as usize..at + (e.offset + e.size) as usize],
                "bundler's gfx1030",
            );
        }
    }
    assert!(
        allocated(&path) < alloc_before,
        "allocated size did not fall: {alloc_before} → {}",
        allocated(&path)
    );
}

#[test]
fn strip_keeps_both_xnack_modes_unless_told_which_one() {
    let tmp = tempdir();
    let dir = tmp.path();
    copy_fixtures(&["tu1.hipfb"], dir);
    let path = dir.join("tu1.hipfb");
    // gfx90a without xnack could run xnack+ code: the gfx90a:xnack+ entry stays.
    let out = rocpack_ok(&["strip", "--keep", "gfx90a", path.to_str().unwrap()]);
    assert!(out.contains("kept 1 of 2 device entries"), "{out}");
    // A device pinned to xnack- loads nothing here: both entries go.
    let out = rocpack_ok(&["strip", "--keep", "gfx90a:xnack-", path.to_str().unwrap()]);
    assert!(out.contains("kept 0 of 2 device entries"), "{out}");
    // A dry run writes nothing.
    assert_eq!(read(&path), read(&fixtures_bin().join("tu1.hipfb")));
    assert_eq!(names_in(dir), BTreeSet::from(["tu1.hipfb".to_owned()]));
}

#[test]
fn strip_follows_the_policy_and_generic_targets() {
    let tmp = tempdir();
    let dir = tmp.path();
    copy_fixtures(&["generic-v6.hipfb"], dir);
    let path = dir.join("generic-v6.hipfb");
    let p = path.to_str().unwrap();
    // gfx1031 has no native entry: the HIP runtime takes gfx10-3-generic, which stays.
    let json = rocpack_ok(&["strip", "--json", "--keep", "gfx1031", p]);
    let rec = &json_lines(&json)[0];
    let entries = rec["rewrites"][0]["entries"].as_array().unwrap();
    let kept: Vec<&str> = entries
        .iter()
        .filter(|e| e["reason"] != "unused")
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert!(
        kept.iter().any(|id| id.ends_with("gfx10-3-generic")),
        "{kept:?}"
    );
    // A runtime before ROCm 6.4 loads no generic code: nothing for gfx1031 is kept.
    let json = rocpack_ok(&[
        "strip",
        "--json",
        "--policy",
        "hip-legacy",
        "--keep",
        "gfx1031",
        p,
    ]);
    let rec = &json_lines(&json)[0];
    assert!(
        rec["rewrites"][0]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["reason"] == "unused" || e["reason"] == "host"),
        "{rec}"
    );
}

// ------------------------------------------------------------------------------------------------
// compress / decompress
// ------------------------------------------------------------------------------------------------

const UNCOMPRESSED: &[&str] = &[
    "tu1.o",
    "tu2.o",
    "tu3.o",
    "lib3tu-lld.so",
    "lib3tu-bfd.so",
    "lib3tu-relr.so",
    "lib3tu-noshdr.so",
    "librdc.so",
    "libnd.so",
    "exe-nopie",
    "libhost.a",
    "tu1.hipfb",
    "tu1-gfx1030.hipfb",
    "tu2.hipfb",
    "generic-v6.hipfb",
];

#[test]
fn decompress_after_compress_is_the_identity() {
    for extra in [
        &[][..],
        &["--method", "zlib"][..],
        &["--format-version", "3", "--level", "19"][..],
    ] {
        let tmp = tempdir();
        let dir = tmp.path();
        copy_fixtures(UNCOMPRESSED, dir);
        let (c, d) = (dir.join("c"), dir.join("d"));
        let inputs: Vec<String> = UNCOMPRESSED
            .iter()
            .map(|n| dir.join(n).to_string_lossy().into_owned())
            .collect();
        let mut args = vec!["compress", "-q", "-o", c.to_str().unwrap()];
        args.extend(extra);
        args.extend(inputs.iter().map(String::as_str));
        rocpack_ok(&args);
        let compressed: Vec<String> = UNCOMPRESSED
            .iter()
            .map(|n| c.join(n).to_string_lossy().into_owned())
            .collect();
        let mut args = vec!["decompress", "-q", "-o", d.to_str().unwrap()];
        args.extend(compressed.iter().map(String::as_str));
        rocpack_ok(&args);
        for n in UNCOMPRESSED {
            assert_same_bytes(
                &read(&d.join(n)),
                &read(&dir.join(n)),
                &format!("{n} {extra:?}"),
            );
            // Every bundle is now compressed, and lists the same entries.
            let listed = list_all(&c.join(n), true);
            assert!(listed.iter().all(|r| get_bool(r, "compressed")), "{n}");
            let ids = |rows: Vec<Value>| -> BTreeSet<String> {
                rows.iter()
                    .map(|r| get_str(r, "entry_id").to_owned())
                    .collect()
            };
            assert_eq!(ids(listed), ids(list_all(&dir.join(n), false)), "{n}");
        }
    }
}

#[test]
fn compressed_bundles_are_read_by_clang_offload_bundler() {
    let tmp = tempdir();
    let dir = tmp.path();
    copy_fixtures(
        &[
            "tu1.hipfb",
            "tu2.hipfb",
            "generic-v6.hipfb",
            "lib3tu-lld.so",
        ],
        dir,
    );
    for n in ["tu1.hipfb", "tu2.hipfb", "generic-v6.hipfb"] {
        let out = dir.join(format!("{n}.ccob"));
        rocpack_ok(&[
            "compress",
            "-q",
            dir.join(n).to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        let blob = read(&out);
        let h = parse_ccob_header(&blob).expect("a CCOB");
        assert_eq!((h.version, h.method), (2, 1), "{n}: v2 zstd by default");
        assert_eq!(
            h.total_size,
            Some(blob.len() as u64),
            "{n}: total size field"
        );
        assert_eq!(bundler_list_ok(&out), bundler_list_ok(&dir.join(n)), "{n}");
        let plain = bundler_decompress(&out, &dir.join(format!("{n}.plain")));
        assert_same_bytes(&plain, &read(&dir.join(n)), n);
    }
    // Inside an ELF: each bundle's place now starts with a CCOB the bundler decompresses to
    // the original bundle.
    let lib = dir.join("lib3tu-lld.so");
    let old = read(&lib);
    let offsets = bundle_offsets(&lib);
    rocpack_ok(&["compress", "-q", "-i", lib.to_str().unwrap()]);
    let new = read(&lib);
    for (i, &at) in offsets.iter().enumerate() {
        let at = at as usize;
        let h = parse_ccob_header(&new[at..]).expect("CCOB in place of the bundle");
        let total = h.total_size.unwrap() as usize;
        let blob = dir.join(format!("in-elf-{i}.ccob"));
        std::fs::write(&blob, &new[at..at + total]).unwrap();
        let plain = bundler_decompress(&blob, &dir.join(format!("in-elf-{i}.plain")));
        let end = bundle_end(&parse_bundle_header(&old[at..])) as usize;
        assert_same_bytes(&plain, &old[at..at + end], &format!("bundle {i}"));
    }
}

/// A CCOB's header holds the MD5 of its bundle. When a file has many bundles rocpack hashes
/// them several at a time (the lanes of one vectorised computation, `md5::digest_each`):
/// clang-offload-bundler-19 -verbose recalculates the hash of every CCOB rocpack wrote and
/// says whether it matches.
#[test]
fn the_hashes_of_bundles_compressed_together_are_what_clang_recalculates() {
    let tmp = tempdir();
    let dir = tmp.path();
    // 12 bundles back to back, each at a 4096-byte boundary, as in a .hip_fatbin: enough for
    // more than three in each thread's lanes.
    let names = ["tu1.hipfb", "tu2.hipfb", "generic-v6.hipfb"];
    let mut fat = Vec::new();
    let mut offsets = Vec::new();
    for i in 0..12 {
        offsets.push(fat.len());
        fat.extend(read(&fixtures_bin().join(names[i % names.len()])));
        fat.resize(fat.len().next_multiple_of(4096), 0);
    }
    let input = dir.join("many.hipfb");
    let output = dir.join("many.ccob");
    std::fs::write(&input, &fat).unwrap();
    rocpack_ok(&[
        "compress",
        "-q",
        input.to_str().unwrap(),
        "-o",
        output.to_str().unwrap(),
    ]);
    let new = read(&output);
    for (i, &at) in offsets.iter().enumerate() {
        let h = parse_ccob_header(&new[at..]).expect("a CCOB in place of each bundle");
        let blob = dir.join(format!("{i}.ccob"));
        std::fs::write(&blob, &new[at..at + h.total_size.unwrap() as usize]).unwrap();
        let o = llvm("clang-offload-bundler-19")
            .args([
                "--unbundle",
                "--type=o",
                "--allow-missing-bundles",
                "-verbose",
            ])
            .arg(format!("--input={}", blob.display()))
            .arg("--targets=host-x86_64-unknown-linux--")
            .arg(format!(
                "--output={}",
                dir.join(format!("{i}.host")).display()
            ))
            .output()
            .unwrap();
        let said =
            String::from_utf8_lossy(&o.stderr).into_owned() + &String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "bundle {i}: {said}");
        assert!(
            said.contains(&format!("Stored hash: 0x{:x}", h.hash)),
            "bundle {i}: {said}"
        );
        assert!(said.contains("Hashes match: Yes"), "bundle {i}: {said}");
    }
}

#[test]
fn ccob_fixtures_decompress_as_clang_does_and_compress_back() {
    let tmp = tempdir();
    let dir = tmp.path();
    let names = [
        "ccob-v1-zlib.hipfb",
        "ccob-v1-zstd.hipfb",
        "ccob-v2-zlib.hipfb",
        "ccob-v2-zstd.hipfb",
        "tu2-compressed.hipfb",
    ];
    copy_fixtures(&names, dir);
    for n in names {
        let x = dir.join(n);
        let y = dir.join(format!("{n}.y"));
        let z = dir.join(format!("{n}.z"));
        let back = dir.join(format!("{n}.back"));
        rocpack_ok(&[
            "decompress",
            "-q",
            x.to_str().unwrap(),
            "-o",
            y.to_str().unwrap(),
        ]);
        let clang = bundler_decompress(&x, &dir.join(format!("{n}.clang")));
        assert_same_bytes(
            &read(&y),
            &clang,
            &format!("{n}: rocpack vs clang decompression"),
        );
        rocpack_ok(&[
            "compress",
            "-q",
            y.to_str().unwrap(),
            "-o",
            z.to_str().unwrap(),
        ]);
        rocpack_ok(&[
            "decompress",
            "-q",
            z.to_str().unwrap(),
            "-o",
            back.to_str().unwrap(),
        ]);
        assert_same_bytes(&read(&back), &read(&y), n);
    }
}

#[test]
fn decompressing_in_place_needs_room_and_says_so() {
    let tmp = tempdir();
    let dir = tmp.path();
    // clang packed these CCOBs tightly: the bundles cannot grow inside the ELF.
    copy_fixtures(&["lib2tu-compressed.so", "ccob-two-v2-zstd.hipfb"], dir);
    for n in ["lib2tu-compressed.so", "ccob-two-v2-zstd.hipfb"] {
        let p = dir.join(n);
        let before = read(&p);
        let (code, _, err) = rocpack_run(&["decompress", "-q", "-i", p.to_str().unwrap()], &[]);
        assert_eq!(code, 2, "{n}: {err}");
        assert!(err.contains("cannot grow without relinking"), "{n}: {err}");
        assert_eq!(read(&p), before, "{n} changed");
        assert!(temp_files(dir).is_empty());
    }
}

// ------------------------------------------------------------------------------------------------
// Safety
// ------------------------------------------------------------------------------------------------

/// A stripped copy made the normal way, to compare against.
fn stripped_reference(name: &str, dir: &Path) -> Vec<u8> {
    let out = dir.join(format!("{name}.reference"));
    rocpack_ok(&[
        "strip",
        "-q",
        "--keep",
        "gfx1030",
        fixtures_bin().join(name).to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let bytes = read(&out);
    std::fs::remove_file(out).unwrap();
    bytes
}

#[test]
fn sigkill_at_every_step_leaves_the_old_file_or_the_new_one() {
    let tmp = tempdir();
    let reference = stripped_reference("lib3tu-lld.so", tmp.path());
    let original = read(&fixtures_bin().join("lib3tu-lld.so"));
    for step in [
        "after-write",
        "after-verify",
        "after-fsync",
        "after-link",
        "after-rename",
    ] {
        let dir = tmp.path().join(step);
        std::fs::create_dir(&dir).unwrap();
        copy_fixtures(&["lib3tu-lld.so"], &dir);
        let p = dir.join("lib3tu-lld.so");
        let mut cmd = rocpack();
        cmd.args([
            "strip",
            "-q",
            "--keep",
            "gfx1030",
            "-i",
            p.to_str().unwrap(),
        ])
        .env("ROCPACK_FAULT", step);
        let out = output_of(&mut cmd);
        assert_eq!(out.status.signal(), Some(9), "{step}: not killed: {out:?}");
        let now = read(&p);
        if step == "after-rename" {
            assert_same_bytes(&now, &reference, step);
        } else {
            assert_same_bytes(&now, &original, step);
        }
        // Only the kill between naming and renaming leaves a temporary name behind...
        let temps = temp_files(&dir);
        assert_eq!(
            temps.len(),
            usize::from(step == "after-link"),
            "{step}: {temps:?}"
        );
        // ... and the next run removes it and finishes the job.
        rocpack_ok(&[
            "strip",
            "-q",
            "--keep",
            "gfx1030",
            "-i",
            p.to_str().unwrap(),
        ]);
        assert_same_bytes(&read(&p), &reference, &format!("{step}, rerun"));
        assert!(
            temp_files(&dir).is_empty(),
            "{step}: {:?}",
            temp_files(&dir)
        );
    }
}

#[test]
fn a_new_file_that_fails_verification_never_replaces_the_original() {
    let tmp = tempdir();
    let dir = tmp.path();
    copy_fixtures(&["lib3tu-lld.so", "tu1.hipfb", "lib2tu-compressed.so"], dir);
    for n in ["lib3tu-lld.so", "tu1.hipfb", "lib2tu-compressed.so"] {
        let p = dir.join(n);
        let before = read(&p);
        let (code, _, err) = rocpack_run(
            &[
                "strip",
                "-q",
                "--keep",
                "gfx1030",
                "-i",
                p.to_str().unwrap(),
            ],
            &[("ROCPACK_FAULT", "corrupt")],
        );
        assert_eq!(code, 2, "{n}: {err}");
        assert!(err.contains("failed verification"), "{n}: {err}");
        assert_eq!(read(&p), before, "{n} changed");
        assert!(temp_files(dir).is_empty());
    }
}

/// A source that shrinks while it is being rewritten (its map then reads zeros where the file
/// was cut) never yields a new file: neither in place nor with -o.
#[test]
fn a_source_that_shrinks_while_being_rewritten_yields_no_file() {
    let tmp = tempdir();
    let dir = tmp.path();
    copy_fixtures(&["lib3tu-lld.so"], dir);
    let p = dir.join("lib3tu-lld.so");
    let out = dir.join("out.so");
    let (code, _, err) = rocpack_run(
        &[
            "strip",
            "-q",
            "--keep",
            "gfx1030",
            "-o",
            out.to_str().unwrap(),
            p.to_str().unwrap(),
        ],
        &[("ROCPACK_FAULT", "shrink-source")],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("changed while it was being read"), "{err}");
    assert!(
        !out.exists(),
        "a new file was written from a shrinking source"
    );
    assert!(temp_files(dir).is_empty());
    // In place: the source is left as the other process left it, not replaced.
    copy_fixtures(&["lib3tu-lld.so"], dir);
    let (code, _, err) = rocpack_run(
        &[
            "strip",
            "-q",
            "--keep",
            "gfx1030",
            "-i",
            p.to_str().unwrap(),
        ],
        &[("ROCPACK_FAULT", "shrink-source")],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("changed while it was being rewritten"),
        "{err}"
    );
    let original = read(&fixtures_bin().join("lib3tu-lld.so"));
    assert_eq!(read(&p).len(), original.len() / 2);
    assert!(temp_files(dir).is_empty());
}

#[test]
fn read_only_files_hard_links_and_damaged_files_are_left_alone() {
    let tmp = tempdir();
    let dir = tmp.path();
    copy_fixtures(&["lib3tu-lld.so", "tu1.hipfb", "tu2.hipfb"], dir);
    // Read-only.
    let ro = dir.join("tu1.hipfb");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
    // Two names for one file.
    let linked = dir.join("tu2.hipfb");
    std::fs::hard_link(&linked, dir.join("other-name.hipfb")).unwrap();
    // A bundle cut short: its last entry runs past the end.
    let bad = dir.join("cut.hipfb");
    let whole = read(&fixtures_bin().join("tu1.hipfb"));
    std::fs::write(&bad, &whole[..whole.len() - 100]).unwrap();
    let snapshot: BTreeMap<String, Vec<u8>> = names_in(dir)
        .into_iter()
        .map(|n| (n.clone(), read(&dir.join(&n))))
        .collect();

    let (code, out, err) = rocpack_run(
        &[
            "strip",
            "-q",
            "--keep",
            "gfx1030",
            "-i",
            dir.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(err.contains("tu1.hipfb: is read-only (mode 0444)"), "{err}");
    assert!(err.contains("tu2.hipfb: has 2 hard links"), "{err}");
    assert!(
        err.contains("cut.hipfb: not rewritten, the file does not parse"),
        "{err}"
    );
    assert!(err.contains("byte"), "the error names an offset: {err}");
    // The good file was rewritten all the same; the others are untouched.
    assert_ne!(read(&dir.join("lib3tu-lld.so")), snapshot["lib3tu-lld.so"]);
    for n in ["tu1.hipfb", "tu2.hipfb", "other-name.hipfb", "cut.hipfb"] {
        assert_eq!(read(&dir.join(n)), snapshot[n], "{n} changed");
    }
    // Breaking the link on request: this name changes, the other keeps the original.
    let (code, _, err) = rocpack_run(
        &[
            "strip",
            "-q",
            "--keep",
            "gfx1030",
            "--hard-links=break",
            "-i",
            linked.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert_ne!(read(&linked), snapshot["tu2.hipfb"]);
    assert_eq!(
        read(&dir.join("other-name.hipfb")),
        snapshot["other-name.hipfb"]
    );
    assert!(temp_files(dir).is_empty());
}

#[test]
fn owner_mode_timestamps_xattrs_and_backups_are_kept() {
    let tmp = tempdir();
    let dir = tmp.path();
    copy_fixtures(&["lib3tu-lld.so"], dir);
    let p = dir.join("lib3tu-lld.so");
    let original = read(&p);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o751)).unwrap();
    run_ok(
        Command::new("touch")
            .args(["-d", "2001-02-03 04:05:06.123456789"])
            .arg(&p),
    );
    run_ok(Command::new("python3").args([
        "-c",
        "import os,sys; os.setxattr(sys.argv[1], 'user.rocpack-test', b'kept')",
        p.to_str().unwrap(),
    ]));
    let root = unsafe_free_is_root();
    if root {
        run_ok(Command::new("chown").args(["65534:65534"]).arg(&p));
    }
    let before = std::fs::metadata(&p).unwrap();
    rocpack_ok(&[
        "strip",
        "-q",
        "--keep",
        "gfx1030",
        "--backup",
        "-i",
        p.to_str().unwrap(),
    ]);
    let after = std::fs::metadata(&p).unwrap();
    assert_ne!(before.ino(), after.ino(), "a new inode replaced the file");
    assert_eq!(after.mode() & 0o7777, 0o751);
    assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
    assert_eq!(
        (after.mtime(), after.mtime_nsec()),
        (before.mtime(), before.mtime_nsec())
    );
    // Reading the file (relatime: its access time is older than a day) must not become the
    // new file's access time.
    assert_eq!(
        (after.atime(), after.atime_nsec()),
        (before.atime(), before.atime_nsec())
    );
    let xattr = run_ok(Command::new("python3").args([
        "-c",
        "import os,sys; print(os.getxattr(sys.argv[1], 'user.rocpack-test').decode())",
        p.to_str().unwrap(),
    ]));
    assert_eq!(xattr.trim(), "kept");
    // The backup is the original file.
    let backup = dir.join("lib3tu-lld.so.orig");
    assert_eq!(read(&backup), original);
    assert_eq!(std::fs::metadata(&backup).unwrap().ino(), before.ino());
    // A second run over the directory leaves the backup alone.
    rocpack_ok(&[
        "strip",
        "-q",
        "--keep",
        "gfx90a",
        "-i",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(read(&backup), original);
}

fn unsafe_free_is_root() -> bool {
    run_ok(Command::new("id").arg("-u")).trim() == "0"
}

#[test]
fn a_symbolic_link_is_followed_and_kept() {
    let tmp = tempdir();
    let dir = tmp.path();
    copy_fixtures(&["lib3tu-lld.so"], dir);
    let link = dir.join("lib3tu.so");
    std::os::unix::fs::symlink("lib3tu-lld.so", &link).unwrap();
    rocpack_ok(&[
        "strip",
        "-q",
        "--keep",
        "gfx1030",
        "-i",
        link.to_str().unwrap(),
    ]);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_ne!(
        read(&dir.join("lib3tu-lld.so")),
        read(&fixtures_bin().join("lib3tu-lld.so"))
    );
}

/// Runs `script` as root in a private mount namespace (`unshare`), so a tmpfs can be mounted
/// without touching the machine's mounts.
fn in_mount_namespace(script: &str) -> std::process::Output {
    let mut cmd = Command::new("unshare");
    if !unsafe_free_is_root() {
        cmd.arg("--map-root-user");
    }
    cmd.args(["--mount", "--propagation", "private", "sh", "-ec", script]);
    output_of(&mut cmd)
}

/// Mounts a tmpfs of `size` in a private mount namespace, copies `file` into it as `name`,
/// and runs `body` there (`$M` is the mount point, `$RP` rocpack); returns its stdout.
fn on_tmpfs(size: &str, file: &Path, name: &str, body: &str) -> String {
    let tmp = tempdir();
    let mnt = tmp.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let script = format!(
        "M={m}; RP={rp}\nmount -t tmpfs -o size={size} tmpfs $M\ncp {file} $M/{name}\n{body}",
        m = mnt.display(),
        rp = rocpack_bin(),
        file = file.display(),
    );
    let out = in_mount_namespace(&script);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the tmpfs test could not run: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn a_full_filesystem_fails_cleanly() {
    let lib = fixtures_bin().join("lib3tu-lld.so");
    // 128 KiB: the library (64 KiB) and a filler leave too little room for the new copy.
    let text = on_tmpfs(
        "128k",
        &lib,
        "lib.so",
        &format!(
            "head -c 49152 /dev/zero > $M/filler || true
             set +e
             $RP strip -q --keep gfx1030 -i $M/lib.so 2> $M/err
             echo \"exit=$?\"
             set -e
             cmp {} $M/lib.so && echo same
             ls -a $M
             cat $M/err",
            lib.display()
        ),
    );
    assert!(text.contains("exit=2"), "{text}");
    assert!(text.contains("No space left on device"), "{text}");
    assert!(text.contains("same"), "the original changed:\n{text}");
    assert!(
        !text.contains(".rocpack-"),
        "a temporary file was left:\n{text}"
    );
}

#[test]
fn a_read_only_filesystem_fails_cleanly() {
    let text = on_tmpfs(
        "1m",
        &fixtures_bin().join("tu1.hipfb"),
        "tu1.hipfb",
        "mount -o remount,ro $M
         set +e
         $RP strip -q --keep gfx1030 -i $M/tu1.hipfb 2>&1
         echo \"exit=$?\"",
    );
    assert!(text.contains("exit=2"), "{text}");
    assert!(text.contains("Read-only file system"), "{text}");
}

#[test]
fn output_directories_mirror_the_input_tree() {
    let tmp = tempdir();
    let src = tmp.path().join("src");
    std::fs::create_dir_all(src.join("lib/sub")).unwrap();
    std::fs::copy(
        fixtures_bin().join("tu1.hipfb"),
        src.join("lib/sub/tu1.hipfb"),
    )
    .unwrap();
    std::fs::copy(fixtures_bin().join("lib3tu-lld.so"), src.join("lib/l.so")).unwrap();
    let out = tmp.path().join("out");
    rocpack_ok(&[
        "strip",
        "-q",
        "--keep",
        "gfx1030",
        "-o",
        out.to_str().unwrap(),
        src.to_str().unwrap(),
    ]);
    assert!(out.join("lib/sub/tu1.hipfb").is_file());
    assert!(out.join("lib/l.so").is_file());
    // The sources are untouched.
    assert_eq!(
        read(&src.join("lib/l.so")),
        read(&fixtures_bin().join("lib3tu-lld.so"))
    );
}

// ------------------------------------------------------------------------------------------------
// Real Debian packages (network: fetched once into ~/.cache/rocpack-corpus)
// ------------------------------------------------------------------------------------------------

/// A copy of Debian sid's librocrand.so (15 bundles × 10 GPUs), on the same filesystem as the
/// test's temporary directory.
fn rocrand_copy(dir: &Path) -> (PathBuf, PathBuf) {
    let lib = shared_libs(&fetch_corpus("librocrand1"), "librocrand")
        .into_iter()
        .next()
        .expect("librocrand.so in the package");
    let copy = dir.join("librocrand.so");
    std::fs::copy(&lib, &copy).unwrap();
    (lib, copy)
}

#[test]
fn real_library_stripped_to_one_gpu_still_runs_on_it_and_shrinks() {
    let tmp = tempdir();
    let (orig, copy) = rocrand_copy(tmp.path());
    let before = verdicts(&[&copy], "gfx1030,gfx90a");
    let alloc_before = allocated(&copy);
    rocpack_ok(&[
        "strip",
        "-q",
        "--keep",
        "gfx1030",
        "-i",
        copy.to_str().unwrap(),
    ]);
    let after = verdicts(&[&copy], "gfx1030,gfx90a");
    let key = |g: &str| ("librocrand.so".to_owned(), g.to_owned());
    assert_eq!(before[&key("gfx1030")], "native");
    assert_eq!(after[&key("gfx1030")], "native");
    assert_eq!(before[&key("gfx90a")], "native");
    assert_eq!(after[&key("gfx90a")], "none");
    // Ten targets → one: the allocated size falls by the nine dropped code object sets.
    let alloc_after = allocated(&copy);
    assert!(
        alloc_after * 2 < alloc_before,
        "allocated {alloc_before} → {alloc_after}"
    );
    // Bytes outside .hip_fatbin identical; the kept code objects identical (clang's bundler
    // on the first bundle, rocpack extract on all).
    let (old, new) = (read(&orig), read(&copy));
    let fatbin = section(&raw_elf_sections(&orig).sections, ".hip_fatbin")
        .unwrap()
        .clone();
    let (s, e) = (
        fatbin.offset as usize,
        (fatbin.offset + fatbin.size) as usize,
    );
    assert_same_bytes(&new[..s], &old[..s], "before .hip_fatbin");
    assert_same_bytes(&new[e..], &old[e..], "after .hip_fatbin");
    let first = parse_bundle_header(&new[s..]);
    let b = tmp.path().join("first.hipfb");
    std::fs::write(&b, &new[s..s + bundle_end(&first) as usize]).unwrap();
    let id = first
        .iter()
        .find(|e| e.id.ends_with("gfx1030"))
        .unwrap()
        .id
        .clone();
    let got = bundler_unbundle(&b, &id, &tmp.path().join("u"));
    let want_entry = parse_bundle_header(&old[s..])
        .into_iter()
        .find(|e| e.id == id)
        .unwrap();
    assert_same_bytes(
        &got,
        &old[s + want_entry.offset as usize..s + (want_entry.offset + want_entry.size) as usize],
        "gfx1030 code object",
    );
    let (a, bdir) = (tmp.path().join("a"), tmp.path().join("b"));
    let ea = extract(&orig, "gfx1030", &a);
    let eb = extract(&copy, "gfx1030", &bdir);
    assert_eq!(ea.len(), 15);
    assert_eq!(ea.len(), eb.len());
    for (x, y) in ea.iter().zip(&eb) {
        assert_same_bytes(
            &read(Path::new(get_str(x, "output"))),
            &read(Path::new(get_str(y, "output"))),
            "extracted gfx1030",
        );
    }
}

#[test]
fn sigkill_at_random_moments_never_leaves_a_mix() {
    let tmp = tempdir();
    let (orig, copy) = rocrand_copy(tmp.path());
    let reference = tmp.path().join("reference.so");
    rocpack_ok(&[
        "strip",
        "-q",
        "--keep",
        "gfx1030",
        orig.to_str().unwrap(),
        "-o",
        reference.to_str().unwrap(),
    ]);
    let (old, new) = (read(&orig), read(&reference));
    std::fs::remove_file(&reference).unwrap();
    // How long one run takes, to spread the kills over it.
    let start = std::time::Instant::now();
    rocpack_ok(&[
        "strip",
        "-q",
        "--keep",
        "gfx1030",
        "-i",
        copy.to_str().unwrap(),
    ]);
    let span = start.elapsed().as_micros().max(2000) as u64;
    let mut outcomes = BTreeSet::new();
    for i in 0..16u64 {
        std::fs::copy(&orig, &copy).unwrap();
        let mut child = rocpack()
            .args([
                "strip",
                "-q",
                "--keep",
                "gfx1030",
                "-i",
                copy.to_str().unwrap(),
            ])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_micros(span * i / 12));
        let _ = child.kill();
        let status = child.wait().unwrap();
        let now = read(&copy);
        let which = if now == old {
            "old"
        } else if now == new {
            "new"
        } else {
            panic!(
                "after a kill at {}/12 of a run the file is neither old nor new",
                i
            );
        };
        outcomes.insert((which, status.success()));
        // Whatever the kill left, the next run cleans up.
        rocpack_ok(&[
            "strip",
            "-q",
            "--keep",
            "gfx1030",
            "-i",
            copy.to_str().unwrap(),
        ]);
        assert!(
            temp_files(tmp.path()).is_empty(),
            "{:?}",
            temp_files(tmp.path())
        );
        assert!(read(&copy) == new);
    }
    eprintln!("outcomes: {outcomes:?}");
}

#[test]
fn real_ccob_files_decompress_as_clang_does_and_round_trip() {
    let dir = fetch_corpus("libhipblaslt1");
    let mut cos: Vec<(u64, PathBuf)> = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "co") {
                cos.push((e.metadata().unwrap().len(), p));
            }
        }
    }
    cos.sort();
    assert!(cos.len() > 100, "hipBLASLt ships hundreds of .co files");
    let tmp = tempdir();
    // The eight smallest and the largest under 16 MB.
    let mut chosen: Vec<&PathBuf> = cos.iter().take(8).map(|(_, p)| p).collect();
    if let Some((_, p)) = cos.iter().rev().find(|(n, _)| *n < 16 << 20) {
        chosen.push(p);
    }
    for (i, x) in chosen.into_iter().enumerate() {
        let blob = read(x);
        let h = parse_ccob_header(&blob).unwrap_or_else(|| panic!("{} is not a CCOB", x.display()));
        let y = tmp.path().join(format!("{i}.bundle"));
        let z = tmp.path().join(format!("{i}.ccob"));
        let back = tmp.path().join(format!("{i}.back"));
        rocpack_ok(&[
            "decompress",
            "-q",
            x.to_str().unwrap(),
            "-o",
            y.to_str().unwrap(),
        ]);
        let clang = bundler_decompress(x, &tmp.path().join(format!("{i}.clang")));
        assert_same_bytes(&read(&y), &clang, &x.display().to_string());
        // Compressed again the way clang does it (same version and method): clang reads it and
        // it decompresses to the same bundle.
        let method = if h.method == 1 { "zstd" } else { "zlib" };
        let version = h.version.to_string();
        rocpack_ok(&[
            "compress",
            "-q",
            "--method",
            method,
            "--format-version",
            &version,
            y.to_str().unwrap(),
            "-o",
            z.to_str().unwrap(),
        ]);
        if h.version == 2 {
            assert_eq!(bundler_list_ok(&z), bundler_list_ok(x), "{}", x.display());
        }
        rocpack_ok(&[
            "decompress",
            "-q",
            z.to_str().unwrap(),
            "-o",
            back.to_str().unwrap(),
        ]);
        assert_same_bytes(&read(&back), &read(&y), &x.display().to_string());
    }
}

#[test]
fn keep_detected_reads_the_machines_gpus_and_json_says_what_happened() {
    let tmp = tempdir();
    let dir = tmp.path();
    copy_fixtures(&["tu1.hipfb", "tu2-compressed.hipfb", "gfx90a-v5.co"], dir);
    let sysfs = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rocpack-devices/tests/fixtures/sysfs/rx6800");
    let (code, out, err) = rocpack_run(
        &[
            "strip",
            "--json",
            "--keep-detected",
            "--sysfs-root",
            sysfs.to_str().unwrap(),
            dir.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("keeping code for this machine's GPUs: gfx1030"),
        "{err}"
    );
    let recs: BTreeMap<String, Value> = json_lines(&out)
        .into_iter()
        .map(|r| {
            let name = Path::new(get_str(&r, "path"))
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (name, r)
        })
        .collect();
    assert_eq!(recs["tu1.hipfb"]["status"], "would-change");
    assert_eq!(recs["tu1.hipfb"]["rewrites"][0]["after"]["form"], "bundle");
    // tu2 holds gfx906 and gfx1100 only: everything goes, the CCOB stays a CCOB.
    assert_eq!(
        recs["tu2-compressed.hipfb"]["rewrites"][0]["after"]["form"],
        "ccob"
    );
    assert_eq!(recs["gfx90a-v5.co"]["code_object"]["loaded"], false);
    assert!(
        recs.values().all(|r| r["output"].is_null()),
        "a dry run wrote something"
    );
    // Without a GPU in the sysfs copy, --keep-detected is an error.
    let empty = dir.join("no-sys");
    std::fs::create_dir(&empty).unwrap();
    let (code, _, err) = rocpack_run(
        &[
            "strip",
            "--keep-detected",
            "--sysfs-root",
            empty.to_str().unwrap(),
            dir.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 2);
    assert!(err.contains("no AMD GPU found"), "{err}");
}

/// `--deep` would promise code in executable sections that no rewrite touches: refused, and
/// the file is left as it was.
#[test]
fn rewrites_refuse_deep() {
    let tmp = tempdir();
    copy_fixtures(&["tu1.hipfb"], tmp.path());
    let p = tmp.path().join("tu1.hipfb");
    let before = read(&p);
    for args in [
        &["strip", "--deep", "--keep", "gfx1030", "-i"][..],
        &["compress", "--deep", "-i"][..],
        &["decompress", "--deep", "-i"][..],
    ] {
        let mut args = args.to_vec();
        args.push(p.to_str().unwrap());
        let (code, _, err) = rocpack_run(&args, &[]);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("--deep is for the reading commands"), "{err}");
        assert_eq!(read(&p), before);
    }
}

#[test]
fn compress_warns_which_runtimes_read_compressed_bundles() {
    let tmp = tempdir();
    copy_fixtures(&["tu1.hipfb"], tmp.path());
    let p = tmp.path().join("tu1.hipfb");
    let (code, _, err) = rocpack_run(&["compress", p.to_str().unwrap()], &[]);
    assert_eq!(code, 0);
    assert!(err.contains("ROCm 6.2 or later (comgr 2.8)"), "{err}");
    // Nothing to compress: exit 1.
    let c = tmp.path().join("c");
    rocpack_ok(&[
        "compress",
        "-q",
        p.to_str().unwrap(),
        "-o",
        c.to_str().unwrap(),
    ]);
    let (code, out, _) = rocpack_run(&["compress", "-q", c.to_str().unwrap()], &[]);
    assert_eq!(
        code, 0,
        "an already compressed bundle is not an error: {out}"
    );
    assert!(out.contains("already compressed"), "{out}");
    let (code, _, err) = rocpack_run(
        &[
            "decompress",
            fixtures_bin().join("gfx90a-v5.co").to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(code, 1, "{err}");
}

#[test]
fn output_naming_the_input_is_a_rewrite_in_place_with_its_checks() {
    let tmp = tempdir();
    let dir = tmp.path();
    copy_fixtures(&["lib3tu-lld.so"], dir);
    let p = dir.join("lib3tu-lld.so");
    let ps = p.to_str().unwrap();
    let original = read(&p);
    // Read-only: refused, as in place.
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o444)).unwrap();
    let (code, _, err) = rocpack_run(&["strip", "-q", "--keep", "gfx1030", "-o", ps, ps], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("read-only"), "{err}");
    assert_eq!(read(&p), original);
    // Another name for it: refused, as in place.
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    let other = dir.join("other-name.so");
    std::fs::hard_link(&p, &other).unwrap();
    let (code, _, err) = rocpack_run(&["strip", "-q", "--keep", "gfx1030", "-o", ps, ps], &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("hard links"), "{err}");
    assert_eq!(read(&p), original);
    std::fs::remove_file(&other).unwrap();
    // Alone and writable: rewritten.
    rocpack_ok(&["strip", "-q", "--keep", "gfx1030", "-o", ps, ps]);
    assert_ne!(read(&p), original);
}

#[test]
fn a_backup_left_by_an_interrupted_run_is_not_a_hard_link_to_refuse() {
    let tmp = tempdir();
    let dir = tmp.path();
    copy_fixtures(&["lib3tu-lld.so"], dir);
    let p = dir.join("lib3tu-lld.so");
    let original = read(&p);
    // What a run stopped between keeping the original and the rename leaves: NAME.orig as a
    // second name of NAME.
    let backup = dir.join("lib3tu-lld.so.orig");
    std::fs::hard_link(&p, &backup).unwrap();
    rocpack_ok(&[
        "strip",
        "-q",
        "--keep",
        "gfx1030",
        "--backup",
        "-i",
        p.to_str().unwrap(),
    ]);
    assert_ne!(read(&p), original);
    assert_eq!(read(&backup), original);
    assert!(
        !dir.join("lib3tu-lld.so.orig.1").exists(),
        "the left backup is reused, not doubled: {:?}",
        names_in(dir)
    );
}

#[test]
fn a_failed_directory_fsync_after_the_rename_is_a_note_not_a_failure() {
    let tmp = tempdir();
    let dir = tmp.path();
    copy_fixtures(&["lib3tu-lld.so"], dir);
    let p = dir.join("lib3tu-lld.so");
    let original = read(&p);
    let (code, out, err) = rocpack_run(
        &["strip", "--keep", "gfx1030", "-i", p.to_str().unwrap()],
        &[("ROCPACK_FAULT", "dir-fsync")],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_ne!(read(&p), original, "the new file is in place");
    assert!(out.contains("fsync of"), "the note says what failed: {out}");
}

#[test]
fn the_sweep_leaves_a_temporary_file_a_live_run_holds_whatever_its_name() {
    let tmp = tempdir();
    let dir = tmp.path();
    copy_fixtures(&["lib3tu-lld.so"], dir);
    // A live process that is not called rocpack holds one temporary file (as a rocpack
    // binary renamed, or run through another name, would); another is stale.
    let held = dir.join(".lib3tu-lld.so.rocpack-1.tmp");
    let stale = dir.join(".other.so.rocpack-2.tmp");
    std::fs::write(&held, b"in use").unwrap();
    std::fs::write(&stale, b"left").unwrap();
    let mut holder = Command::new("flock")
        .arg(&held)
        .args(["sleep", "60"])
        .spawn()
        .expect("flock(1) from util-linux");
    // Wait until the lock is taken.
    for _ in 0..100 {
        let probe = Command::new("flock")
            .args(["-n", held.to_str().unwrap(), "true"])
            .status()
            .unwrap();
        if !probe.success() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let p = dir.join("lib3tu-lld.so");
    rocpack_ok(&[
        "strip",
        "-q",
        "--keep",
        "gfx1030",
        "-i",
        p.to_str().unwrap(),
    ]);
    let left = temp_files(dir);
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(
        left.contains(&".lib3tu-lld.so.rocpack-1.tmp".to_owned()),
        "{left:?}"
    );
    assert!(
        !left.contains(&".other.so.rocpack-2.tmp".to_owned()),
        "{left:?}"
    );
    // And a walk never lists a temporary file as a library.
    std::fs::copy(&p, dir.join(".x.so.rocpack-3.tmp")).unwrap();
    let (_, listed, _) = rocpack_run(&["list", dir.to_str().unwrap()], &[]);
    assert!(!listed.contains(".rocpack-"), "{listed}");
    assert!(listed.contains("lib3tu-lld.so"), "{listed}");
}
