//! rocpack against real Debian ROCm libraries (network: scripts/fetch-corpus.sh downloads them once into
//! ~/.cache/rocpack-corpus). The expected listing is computed here without rocpack's library: a tiny ELF
//! section-header reader, the `.hipFatBinSegment` wrappers (pointers cross-checked with the
//! `R_X86_64_RELATIVE` addends printed by `llvm-readelf-19 -r`), each bundle's header, and each code
//! object's ELF header, whose e_flags are turned into target IDs by `llvm-readelf-19 -h`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};

use common::*;
use serde_json::Value;

/// One row of the expected listing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Row {
    bundle_offset: u64,
    entry_index: u64,
    entry_id: String,
    size: u64,
    offset: u64,
    file_offset: u64,
    target: Option<String>,
    cov: Option<u64>,
    host: bool,
}

impl Row {
    fn from_json(v: &Value) -> Row {
        assert!(!get_bool(v, "compressed"), "compressed entry in {v}");
        Row {
            bundle_offset: get_u64(v, "bundle_offset"),
            entry_index: get_u64(v, "entry_index"),
            entry_id: get_str(v, "entry_id").to_owned(),
            size: get_u64(v, "size"),
            offset: get_u64(v, "offset"),
            file_offset: get_u64(v, "file_offset"),
            target: opt_str(v, "target").map(str::to_owned),
            cov: opt_u64(v, "cov"),
            host: get_bool(v, "host"),
        }
    }
}

struct Bundle {
    offset: u64,
    end: u64,
    entries: Vec<BundleEntry>,
}

struct Independent {
    bundles: Vec<Bundle>,
    rows: Vec<Row>,
}

/// The full expected listing of a host library, computed without rocpack.
fn independent_listing(lib: &Path, tmp: &Path) -> Independent {
    let name = lib.file_name().unwrap().to_string_lossy().into_owned();
    let elf = raw_elf_sections(lib);
    assert_eq!(elf.e_machine, 62, "{name}: not x86-64");
    let find = |n: &str| {
        elf.sections
            .iter()
            .find(|s| s.name == n)
            .unwrap_or_else(|| panic!("{name}: no {n} section"))
            .clone()
    };
    let fatbin = find(".hip_fatbin");
    let seg = find(".hipFatBinSegment");

    // The tiny reader agrees with llvm-readelf.
    let llvm_secs = readelf_sections(lib);
    for s in [&fatbin, &seg] {
        let l = section(&llvm_secs, &s.name).unwrap();
        assert_eq!(
            (l.addr, l.offset, l.size),
            (s.addr, s.offset, s.size),
            "{name}: {} per llvm-readelf vs the reader here",
            s.name
        );
    }

    let mut f = File::open(lib).unwrap();
    let segb = read_at(&mut f, seg.offset, seg.size as usize);
    assert_eq!(segb.len() % 24, 0, "{name}: .hipFatBinSegment size");

    // Relocations at the wrapper pointers.
    let relocs: BTreeMap<u64, Reloc> = readelf_relocs(lib)
        .into_iter()
        .filter(|r| r.rtype != "RELR")
        .map(|r| (r.offset, r))
        .collect();

    let mut starts = BTreeSet::new();
    for w in 0..segb.len() / 24 {
        let at = w * 24;
        assert_eq!(le32(&segb, at), HIPF_MAGIC, "{name}: wrapper {w} magic");
        assert_eq!(le32(&segb, at + 4), 1, "{name}: wrapper {w} version");
        let in_place = le64(&segb, at + 8);
        let addr = seg.addr + at as u64 + 8;
        let r = relocs.get(&addr).unwrap_or_else(|| {
            panic!("{name}: no dynamic relocation for wrapper {w} at {addr:#x}")
        });
        let ptr = match r.rtype.as_str() {
            "R_X86_64_RELATIVE" => {
                // GNU ld also writes the value in place.
                assert_eq!(
                    in_place, r.addend as u64,
                    "{name}: wrapper {w}: in-place pointer vs RELATIVE addend"
                );
                in_place
            }
            "R_X86_64_64" => (r.sym_value.unwrap() as i64 + r.addend) as u64,
            other => panic!("{name}: wrapper {w}: unexpected relocation {other}"),
        };
        assert!(
            ptr >= fatbin.addr && ptr < fatbin.addr + fatbin.size,
            "{name}: wrapper {w} points outside .hip_fatbin: {ptr:#x}"
        );
        starts.insert(fatbin.offset + (ptr - fatbin.addr));
    }

    // Bundle headers and code object ELF headers.
    let mut bundles = Vec::new();
    let mut heads: Vec<(u64, u64, Vec<u8>)> = Vec::new(); // (bundle offset, entry index, first 64 bytes)
    for &off in &starts {
        let fatbin_end = fatbin.offset + fatbin.size;
        let mut len = 4096u64;
        let entries = loop {
            let l = len.min(fatbin_end - off);
            let head = read_at(&mut f, off, l as usize);
            if head.starts_with(CCOB_MAGIC) {
                panic!(
                    "{name}: the bundle at {off:#x} is compressed (CCOB); this test's independent reader only \
                     handles uncompressed bundles"
                );
            }
            assert!(
                head.starts_with(BUNDLE_MAGIC),
                "{name}: no bundle magic at {off:#x}"
            );
            if let Some(e) = try_parse_bundle_header(&head) {
                break e;
            }
            assert!(
                l < fatbin_end - off,
                "{name}: bundle header at {off:#x} runs past .hip_fatbin"
            );
            len *= 4;
        };
        let end = off + bundle_end(&entries);
        assert!(
            end <= fatbin_end,
            "{name}: bundle at {off:#x} ends past .hip_fatbin"
        );
        for (i, e) in entries.iter().enumerate() {
            if e.size > 0 {
                heads.push((off, i as u64, read_at(&mut f, off + e.offset, 64)));
            }
        }
        bundles.push(Bundle {
            offset: off,
            end,
            entries,
        });
    }
    for w in bundles.windows(2) {
        assert!(
            w[0].end <= w[1].offset,
            "{name}: bundles at {:#x} and {:#x} overlap",
            w[0].offset,
            w[1].offset
        );
    }

    // e_flags -> target ID through llvm-readelf-19 -h on one whole code object per distinct (e_flags, ABI).
    let mut by_flags: BTreeMap<(u32, u8), AmdgpuHeader> = BTreeMap::new();
    let mut per_entry: BTreeMap<(u64, u64), (u32, u8)> = BTreeMap::new();
    for (off, i, h) in &heads {
        assert_eq!(
            &h[..4],
            b"\x7fELF",
            "{name}: bundle {off:#x} entry {i} is not ELF"
        );
        assert_eq!(
            le16(h, 18),
            224,
            "{name}: bundle {off:#x} entry {i} is not EM_AMDGPU"
        );
        assert_eq!(
            h[7], 64,
            "{name}: bundle {off:#x} entry {i}: EI_OSABI is not AMDGPU_HSA"
        );
        let key = (le32(h, 48), h[8]);
        per_entry.insert((*off, *i), key);
        if let std::collections::btree_map::Entry::Vacant(slot) = by_flags.entry(key) {
            let b = bundles.iter().find(|b| b.offset == *off).unwrap();
            let e = &b.entries[*i as usize];
            let bytes = read_at(&mut f, off + e.offset, e.size as usize);
            let p = tmp.join(format!("flags-{:x}-{}.co", key.0, key.1));
            std::fs::write(&p, bytes).unwrap();
            let rh = readelf_amdgpu_header(&p);
            assert_eq!(
                (rh.e_flags, rh.abi_version),
                key,
                "{name}: llvm-readelf vs raw header"
            );
            // Our understanding of the feature bits (code object v4+) agrees with llvm-readelf.
            let feat = |bits: u32, n: &str| match bits {
                2 => Some(format!("{n}-")),
                3 => Some(format!("{n}+")),
                _ => None,
            };
            let mut t = rh.processor.clone();
            for x in [
                feat((key.0 >> 10) & 3, "sramecc"),
                feat((key.0 >> 8) & 3, "xnack"),
            ]
            .into_iter()
            .flatten()
            {
                t.push(':');
                t.push_str(&x);
            }
            assert_eq!(
                t, rh.target,
                "{name}: e_flags {:#x} decoded here vs llvm-readelf",
                key.0
            );
            slot.insert(rh);
        }
    }

    let mut rows = Vec::new();
    for b in &bundles {
        for (i, e) in b.entries.iter().enumerate() {
            let h = per_entry.get(&(b.offset, i as u64)).map(|k| &by_flags[k]);
            rows.push(Row {
                bundle_offset: b.offset,
                entry_index: i as u64,
                entry_id: e.id.clone(),
                size: e.size,
                offset: e.offset,
                file_offset: b.offset + e.offset,
                target: h.map(|h| h.target.clone()),
                cov: h.map(|h| u64::from(h.cov())),
                host: e.id.starts_with("host-"),
            });
        }
    }
    Independent { bundles, rows }
}

fn the_library(pkg: &str, prefix: &str) -> (PathBuf, String) {
    let dir = fetch_corpus(pkg);
    let libs = shared_libs(&dir, prefix);
    assert_eq!(
        libs.len(),
        1,
        "{pkg}: expected one {prefix}*.so* file, found {libs:?}"
    );
    let version = dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .split_once('_')
        .map(|(_, v)| v.to_owned())
        .unwrap_or_default();
    (libs.into_iter().next().unwrap(), version)
}

/// rocpack's listing equals the independent one, row by row.
fn compare_with_rocpack(lib: &Path, ind: &Independent) -> Vec<Value> {
    let name = lib.file_name().unwrap().to_string_lossy().into_owned();
    let json = list_all(lib, false);
    let mut got: Vec<Row> = json.iter().map(Row::from_json).collect();
    got.sort();
    let mut want = ind.rows.clone();
    want.sort();
    assert_eq!(got.len(), want.len(), "{name}: number of entries");
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w, "{name}: rocpack row vs independent row");
    }
    json
}

/// clang-offload-bundler-19 --list on bundles cut out of the library agrees with both.
fn spot_check_with_bundler(
    lib: &Path,
    ind: &Independent,
    json: &[Value],
    which: &[usize],
    tmp: &Path,
) {
    let name = lib.file_name().unwrap().to_string_lossy().into_owned();
    let mut f = File::open(lib).unwrap();
    for &k in which {
        let b = &ind.bundles[k];
        let blob = read_at(&mut f, b.offset, (b.end - b.offset) as usize);
        let p = tmp.join(format!("bundle-{k}.hipfb"));
        std::fs::write(&p, &blob).unwrap();
        let llvm_ids = bundler_list_ok(&p);
        let mine: BTreeSet<String> = b.entries.iter().map(|e| e.id.clone()).collect();
        assert_eq!(
            llvm_ids, mine,
            "{name}: bundle {k} at {:#x}: bundler vs header parsed here",
            b.offset
        );
        let rocpack_ids: BTreeSet<String> = json
            .iter()
            .filter(|r| opt_u64(r, "bundle_offset") == Some(b.offset))
            .map(|r| get_str(r, "entry_id").to_owned())
            .collect();
        assert_eq!(
            llvm_ids, rocpack_ids,
            "{name}: bundle {k} at {:#x}: bundler vs rocpack",
            b.offset
        );
        // And one device entry unbundled by LLVM is the file slice rocpack points at.
        let e = b
            .entries
            .iter()
            .find(|e| !e.id.starts_with("host-"))
            .unwrap();
        let out = tmp.join(format!("bundle-{k}.co"));
        let bytes = bundler_unbundle(&p, &e.id, &out);
        let row = json
            .iter()
            .find(|r| {
                opt_u64(r, "bundle_offset") == Some(b.offset) && get_str(r, "entry_id") == e.id
            })
            .unwrap();
        let slice = read_at(
            &mut f,
            get_u64(row, "file_offset"),
            get_u64(row, "size") as usize,
        );
        assert_same_bytes(&bytes, &slice, &format!("{name}: bundle {k} {}", e.id));
        std::fs::remove_file(&p).unwrap();
    }
}

fn gpu_per_bundle(ind: &Independent) -> BTreeMap<u64, usize> {
    let mut m = BTreeMap::new();
    for r in &ind.rows {
        if !r.host && r.size > 0 {
            *m.entry(r.bundle_offset).or_insert(0) += 1;
        }
    }
    m
}

#[test]
fn librocsparse_matches_an_independent_reading() {
    let (lib, version) = the_library("librocsparse1", "librocsparse");
    let tmp = tempdir();
    let ind = independent_listing(&lib, tmp.path());
    let n = ind.bundles.len();
    assert!(n > 0, "no bundles found");
    if version == "6.4.3-3" {
        assert_eq!(n, 142, "librocsparse1 {version}: bundles");
        let per = gpu_per_bundle(&ind);
        assert_eq!(per.len(), 142);
        assert!(
            per.values().all(|&c| c == 10),
            "librocsparse1 {version}: GPU entries per bundle {per:?}"
        );
    } else {
        eprintln!(
            "note: librocsparse1 {version} is not 6.4.3-3; only the independent comparison applies"
        );
    }
    let json = compare_with_rocpack(&lib, &ind);
    spot_check_with_bundler(&lib, &ind, &json, &[0, n / 2, n - 1], tmp.path());
}

#[test]
fn librocrand_matches_an_independent_reading() {
    let (lib, version) = the_library("librocrand1", "librocrand");
    let tmp = tempdir();
    let ind = independent_listing(&lib, tmp.path());
    let n = ind.bundles.len();
    assert!(n > 0, "no bundles found");
    if version == "6.4.3-1" {
        assert_eq!(n, 15, "librocrand1 {version}: bundles");
    } else {
        eprintln!(
            "note: librocrand1 {version} is not 6.4.3-1; only the independent comparison applies"
        );
    }
    assert!(gpu_per_bundle(&ind).len() == n, "a bundle without GPU code");
    let json = compare_with_rocpack(&lib, &ind);
    spot_check_with_bundler(&lib, &ind, &json, &[0, n / 2, n - 1], tmp.path());

    // extract writes, for one target, the file slices of every bundle's matching entry.
    let target = ind.rows.iter().find_map(|r| r.target.clone()).unwrap();
    let out = tmp.path().join("extract");
    let written = extract(&lib, &target, &out);
    let expected: Vec<&Row> = ind
        .rows
        .iter()
        .filter(|r| r.target.as_deref() == Some(target.as_str()))
        .collect();
    assert_eq!(
        written.len(),
        expected.len(),
        "extract --target {target}: files"
    );
    let mut f = File::open(&lib).unwrap();
    for w in &written {
        let row = json
            .iter()
            .find(|r| r["container"] == w["container"] && r["entry_id"] == w["entry_id"])
            .unwrap();
        let bo = get_u64(row, "bundle_offset");
        let e = expected
            .iter()
            .find(|r| r.bundle_offset == bo && r.entry_id == get_str(w, "entry_id"))
            .unwrap_or_else(|| panic!("extract wrote an unexpected entry {w}"));
        let slice = read_at(&mut f, e.file_offset, e.size as usize);
        let bytes = std::fs::read(get_str(w, "output")).unwrap();
        assert_same_bytes(&bytes, &slice, &format!("extract {w}"));
    }
}

/// `show --jsonl`'s records against `show --json` on a real library (1,000s of kernels).
#[test]
fn librocrand_show_jsonl_says_what_show_json_says() {
    let (lib, _) = the_library("librocrand1", "librocrand");
    let name = lib.file_name().unwrap().to_str().unwrap();
    assert_jsonl_matches_json(lib.parent().unwrap(), &[name]);
}

/// `extract` stages every entry it keeps from a library in a file of its own, which holds a file
/// descriptor until the library is read (librocsparse: 142 bundles, one gfx1030 entry each).
/// Under a limit of 100 open files (fewer than the 142 it would hold, and than the 256 it
/// leaves to the walk) it holds them in memory instead: the same lines and the same files, and
/// nothing else in the directory.
#[test]
fn extract_writes_the_same_files_when_file_descriptors_are_few() {
    let (lib, _) = the_library("librocsparse1", "librocsparse");
    let tmp = tempdir();
    let run = |out: &Path, limit: Option<u32>| -> (Vec<String>, Vec<(String, Vec<u8>)>) {
        let mut cmd = std::process::Command::new("sh");
        let script = match limit {
            Some(n) => format!("ulimit -n {n} && exec \"$@\""),
            None => "exec \"$@\"".to_owned(),
        };
        cmd.args(["-c", &script, "sh", rocpack_bin(), "extract", "--json"])
            .args(["--target", "gfx1030", "-o"])
            .arg(out)
            .arg(&lib);
        let o = cmd.output().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let prefix = format!("{}/", out.display());
        let lines = String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(|l| l.replace(&prefix, "OUT/"))
            .collect();
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(out)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        files.sort();
        (lines, files)
    };
    let (lines, files) = run(&tmp.path().join("plenty"), None);
    let (few_lines, few_files) = run(&tmp.path().join("few"), Some(100));
    assert_eq!(lines.len(), 142, "{lines:?}");
    assert_eq!(files.len(), 142);
    assert_eq!(few_lines, lines);
    assert!(few_files == files, "the files written differ");
}
