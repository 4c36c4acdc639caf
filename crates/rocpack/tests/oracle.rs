//! Oracle tests: rocpack's view of every committed fixture is compared with what LLVM 19's own tools
//! (clang-offload-bundler-19, llvm-readelf-19, llvm-objcopy-19, llvm-objdump-19, llvm-ar-19) say, and with byte
//! parsing done here from the format descriptions. Nothing here calls rocpack's library.
//!
//! How the bundles are found without rocpack: `.hip_fatbin` is dumped with `llvm-objcopy-19 --dump-section`,
//! the wrapper pointers of `.hipFatBinSegment` are resolved through `llvm-readelf-19 -r` (the RELA addend, the
//! symbol value plus addend, else the in-place value), and the resulting start offsets are checked against a
//! scan of the section for bundle/CCOB magics at 4096-aligned offsets. Each bundle is cut out (uncompressed: to
//! the largest offset plus size of its own header; CCOB v2/v3: to TotalFileSize; v1: to the next start) and
//! handed to clang-offload-bundler-19, which also decompresses CCOBs for the test (see `blob_group`).
//!
//! Known LLVM 19 quirks worked around here: `--unbundle` cannot write a host entry ("Can't find bundles for
//! host-…"), and it answers a request for `gfx10-3-generic` with the `gfx11-generic` entry. In both cases the
//! bytes come from the bundle header parsed here (and the ELF header of each code object is checked against its
//! entry ID with llvm-readelf).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

// ------------------------------------------------------------------------------------------------
// Manifest
// ------------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Fixture {
    /// Path relative to tests/fixtures, e.g. `bin/tu1.o`.
    rel: String,
    kind: String,
}

impl Fixture {
    fn path(&self) -> PathBuf {
        fixtures_dir().join(&self.rel)
    }
    fn name(&self) -> &str {
        self.rel.rsplit('/').next().unwrap()
    }
}

fn manifest() -> Vec<Fixture> {
    manifest_at("manifest.tsv")
}

/// The Windows images of tests/fixtures/pe (made by make-pe-fixtures.sh).
fn pe_manifest() -> Vec<Fixture> {
    manifest_at("pe/manifest.tsv")
}

fn manifest_at(rel: &str) -> Vec<Fixture> {
    let text = std::fs::read_to_string(fixtures_dir().join(rel)).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut f = l.split('\t');
            Fixture {
                rel: f.next().unwrap().to_owned(),
                kind: f.next().expect("manifest line without kind").to_owned(),
            }
        })
        .collect()
}

fn fixture(name: &str) -> PathBuf {
    let p = fixtures_bin().join(name);
    assert!(p.is_file(), "fixture {} missing", p.display());
    p
}

/// Kinds handled by `check_fixture`; the manifest must use no other.
const KNOWN_KINDS: &[&str] = &[
    "object",
    "host-elf",
    "executable",
    "stripped-shdr",
    "rdc-object",
    "new-driver-object",
    "archive",
    "thin-archive",
    "bundle",
    "ccob",
    "code-object",
    "pe",
    "pe-embedded",
    "embedded",
    "embedded-code",
    "unclassified",
];

// ------------------------------------------------------------------------------------------------
// Independent expectations
// ------------------------------------------------------------------------------------------------

/// How the rows of one group are recognised among rocpack's rows.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    /// Rows whose `bundle_offset` is this file offset.
    BundleOffset(u64),
    /// Rows whose `container` label is exactly this (used where no bundle offset applies).
    Label(String),
}

/// One entry as LLVM (or the byte parser here) sees it.
#[derive(Debug, Clone)]
struct Exp {
    id: String,
    bytes: Vec<u8>,
    /// Expected `file_offset` (None: must be null).
    file_offset: Option<u64>,
    entry_index: Option<u64>,
    /// Offset within the bundle, when known without decompressing.
    offset: Option<u64>,
}

/// The entries of one bundle / CCOB / section group / OffloadBinary.
#[derive(Debug, Clone)]
struct Group {
    what: String,
    key: Key,
    /// Every row of the group must have a container label starting with this (archive member prefix).
    label_prefix: String,
    /// For CCOBs: the label must end with `(ccob v<version> <method>)`.
    label_suffix: Option<String>,
    /// The label must contain this (`bundle #<i>`: index among the bundles of the `.hip_fatbin`).
    label_contains: Option<String>,
    compressed: bool,
    /// The set of entry IDs clang-offload-bundler-19 (or llvm-objdump) lists, host entries included.
    ids: BTreeSet<String>,
    entries: Vec<Exp>,
}

struct Ctx {
    tmp: tempfile::TempDir,
    n: usize,
}

impl Ctx {
    fn new() -> Self {
        Ctx {
            tmp: tempdir(),
            n: 0,
        }
    }
    /// A fresh path in the temporary directory.
    fn path(&mut self, hint: &str) -> PathBuf {
        self.n += 1;
        self.tmp
            .path()
            .join(format!("{:04}-{}", self.n, sanitize(hint)))
    }
    fn write(&mut self, hint: &str, bytes: &[u8]) -> PathBuf {
        let p = self.path(hint);
        std::fs::write(&p, bytes).unwrap();
        p
    }
}

/// Entries of one blob (a bundle or CCOB cut out of a file) as clang-offload-bundler-19 sees them.
///
/// Device entries come from `--unbundle`. clang 19 cannot unbundle the host entry of a binary bundle
/// ("Can't find bundles for host-…"); its bytes come from the header parsed here. A CCOB is decompressed by
/// the bundler itself: asked for the host entry with `--allow-missing-bundles`, it writes out the whole
/// (decompressed) input, which is then parsed like an uncompressed bundle.
fn blob_group(
    ctx: &mut Ctx,
    what: String,
    blob: &[u8],
    blob_file_offset: Option<u64>,
    label_prefix: &str,
) -> Group {
    let mut label_suffix = None;
    let ccob = parse_ccob_header(blob);
    let for_bundler: Vec<u8> = match ccob {
        Some(h) => {
            label_suffix = Some(format!(
                "(ccob v{} {})",
                h.version,
                if h.method == 0 { "zlib" } else { "zstd" }
            ));
            if h.version == 3 {
                // clang 19 cannot read v3; the same payload under a v2 header can be read.
                ccob_v3_as_v2(blob)
            } else {
                blob.to_vec()
            }
        }
        None => {
            assert!(
                blob.starts_with(BUNDLE_MAGIC),
                "{what}: neither bundle nor CCOB"
            );
            blob.to_vec()
        }
    };
    let input = ctx.write(&format!("{what}.blob"), &for_bundler);
    let ids = bundler_list_ok(&input);
    let bundle: Vec<u8> = match ccob {
        Some(h) => {
            let out = ctx.path(&format!("{what}.decompressed"));
            let d = bundler_decompress(&input, &out);
            assert_eq!(
                d.len() as u64,
                h.uncompressed_size,
                "{what}: decompressed size vs CCOB header"
            );
            d
        }
        None => blob.to_vec(),
    };
    let parsed = parse_bundle_header(&bundle);
    let mine: BTreeSet<String> = parsed.iter().map(|e| e.id.clone()).collect();
    assert_eq!(
        mine, ids,
        "{what}: the bundle header parsed here and clang-offload-bundler-19 --list disagree"
    );
    assert_eq!(
        mine.len(),
        parsed.len(),
        "{what}: duplicate IDs in the header"
    );
    let mut entries = Vec::new();
    for (i, e) in parsed.iter().enumerate() {
        let slice = bundle[e.offset as usize..(e.offset + e.size) as usize].to_vec();
        let bytes = if e.id.starts_with("host-") {
            slice
        } else {
            let out = ctx.path(&format!("{what}-{}.out", e.id));
            let b = bundler_unbundle(&input, &e.id, &out);
            if b != slice && e.id.contains("-generic") {
                // clang-offload-bundler-19 mis-matches generic targets: asked for gfx10-3-generic it writes
                // the gfx11-generic entry. Then LLVM's answer must be another entry of this bundle, and the
                // header slice (whose ELF header is checked against the entry ID later) is the oracle.
                assert!(
                    parsed.iter().any(|o| o.id != e.id
                        && bundle[o.offset as usize..(o.offset + o.size) as usize] == b[..]),
                    "{what}: {}: unbundled bytes are no entry of the bundle",
                    e.id
                );
                slice
            } else {
                assert_same_bytes(
                    &b,
                    &slice,
                    &format!(
                        "{what}: {}: unbundled bytes vs the header's offset/size",
                        e.id
                    ),
                );
                b
            }
        };
        entries.push(Exp {
            id: e.id.clone(),
            bytes,
            file_offset: if ccob.is_some() {
                None
            } else {
                blob_file_offset.map(|b| b + e.offset)
            },
            entry_index: Some(i as u64),
            offset: Some(e.offset),
        });
    }
    Group {
        what,
        key: Key::BundleOffset(blob_file_offset.expect("blob without file offset")),
        label_prefix: label_prefix.to_owned(),
        label_suffix,
        label_contains: None,
        compressed: ccob.is_some(),
        ids,
        entries,
    }
}

/// The `.hip_fatbin` bundles of a host ELF (object, library, executable), found through its wrappers.
///
/// `headers` is the file whose section/relocation tables are used (for `lib3tu-noshdr.so`, the
/// lld original it was cut from); `data` is the bytes of the file rocpack reads, `base` its offset in
/// the file rocpack was given (archive members).
fn fatbin_groups(
    ctx: &mut Ctx,
    headers: &Path,
    data: &[u8],
    base: u64,
    label_prefix: &str,
) -> Vec<Group> {
    let name = headers.file_name().unwrap().to_string_lossy().into_owned();
    let secs = readelf_sections(headers);
    let Some(fatbin) = section(&secs, ".hip_fatbin").cloned() else {
        return Vec::new();
    };
    let seg = section(&secs, ".hipFatBinSegment")
        .cloned()
        .unwrap_or_else(|| panic!("{name}: .hip_fatbin without .hipFatBinSegment"));

    // Dump both sections with llvm-objcopy.
    let fb_path = ctx.path(&format!("{name}.hip_fatbin"));
    let seg_path = ctx.path(&format!("{name}.hipFatBinSegment"));
    let junk = ctx.path("objcopy-out");
    run_ok(
        llvm("llvm-objcopy-19")
            .arg(format!("--dump-section=.hip_fatbin={}", fb_path.display()))
            .arg(format!(
                "--dump-section=.hipFatBinSegment={}",
                seg_path.display()
            ))
            .arg(headers)
            .arg(&junk),
    );
    let fb = std::fs::read(&fb_path).unwrap();
    let segb = std::fs::read(&seg_path).unwrap();
    assert_eq!(
        fb.len() as u64,
        fatbin.size,
        "{name}: dumped .hip_fatbin size"
    );
    let fo = fatbin.offset as usize;
    assert!(
        data.len() >= fo + fb.len() && data[fo..fo + fb.len()] == fb[..],
        "{name}: .hip_fatbin dumped by llvm-objcopy differs from the file bytes at sh_offset {fo:#x}"
    );

    // Resolve each wrapper's pointer.
    let e_type = readelf_type(headers);
    let relocs = readelf_relocs(headers);
    assert_eq!(segb.len() % 24, 0, "{name}: .hipFatBinSegment size");
    let mut starts = BTreeSet::new();
    for w in 0..segb.len() / 24 {
        let at = w * 24;
        assert_eq!(le32(&segb, at), HIPF_MAGIC, "{name}: wrapper {w} magic");
        assert_eq!(le32(&segb, at + 4), 1, "{name}: wrapper {w} version");
        let in_place = le64(&segb, at + 8);
        let sec_off = if e_type == "REL" {
            let r = relocs
                .iter()
                .find(|r| r.section == ".rela.hipFatBinSegment" && r.offset == (at + 8) as u64)
                .unwrap_or_else(|| panic!("{name}: no relocation for wrapper {w}"));
            assert_eq!(r.rtype, "R_X86_64_64", "{name}: wrapper {w}");
            assert_eq!(
                r.sym_name.as_deref(),
                Some(".hip_fatbin"),
                "{name}: wrapper {w}"
            );
            u64::try_from(r.sym_value.unwrap() as i64 + r.addend).unwrap()
        } else {
            let addr = seg.addr + (at + 8) as u64;
            let rela = relocs
                .iter()
                .find(|r| r.offset == addr && r.rtype != "RELR");
            let relr = relocs.iter().any(|r| r.offset == addr && r.rtype == "RELR");
            let ptr = match rela {
                Some(r) if r.rtype == "R_X86_64_RELATIVE" => r.addend as u64,
                Some(r) if r.rtype == "R_X86_64_64" => {
                    (r.sym_value.unwrap() as i64 + r.addend) as u64
                }
                Some(r) => panic!("{name}: wrapper {w}: unexpected relocation {r:?}"),
                None => {
                    if e_type == "DYN" {
                        assert!(
                            relr,
                            "{name}: wrapper {w} at {addr:#x} has neither RELA nor RELR"
                        );
                    }
                    in_place
                }
            };
            assert!(
                in_place == 0 || in_place == ptr,
                "{name}: wrapper {w}: in-place pointer {in_place:#x} vs relocation {ptr:#x}"
            );
            ptr.checked_sub(fatbin.addr)
                .unwrap_or_else(|| panic!("{name}: wrapper {w} points before .hip_fatbin"))
        };
        assert!(
            sec_off < fatbin.size,
            "{name}: wrapper {w} points past .hip_fatbin"
        );
        starts.insert(sec_off);
    }

    section_blobs(
        ctx,
        &name,
        ".hip_fatbin",
        &fb,
        &starts,
        base + fatbin.offset,
        label_prefix,
    )
}

/// The blobs of a dumped fat binary section `fb` (named `section`, at file offset `file_base`),
/// starting at the offsets the wrappers give: the start set is first checked against a scan for
/// bundle/CCOB magics at 4096-aligned offsets, then each blob is cut to its own length (bundle: its
/// header's largest offset + size; CCOB v2/v3: TotalFileSize; v1: the next start) and listed.
fn section_blobs(
    ctx: &mut Ctx,
    name: &str,
    section: &str,
    fb: &[u8],
    starts: &BTreeSet<u64>,
    file_base: u64,
    label_prefix: &str,
) -> Vec<Group> {
    let scanned: BTreeSet<u64> = (0..fb.len())
        .step_by(4096)
        .filter(|&o| fb[o..].starts_with(BUNDLE_MAGIC) || parse_ccob_header(&fb[o..]).is_some())
        .map(|o| o as u64)
        .collect();
    assert_eq!(
        *starts, scanned,
        "{name}: wrapper pointers and the 4096-aligned magic scan of {section} disagree"
    );
    let starts: Vec<u64> = starts.iter().copied().collect();
    let mut groups = Vec::new();
    for (i, &s) in starts.iter().enumerate() {
        let next = starts.get(i + 1).map_or(fb.len(), |&n| n as usize);
        let s = s as usize;
        let end = if fb[s..].starts_with(BUNDLE_MAGIC) {
            s + bundle_end(&parse_bundle_header(&fb[s..next])) as usize
        } else {
            let h = parse_ccob_header(&fb[s..]).unwrap();
            h.total_size.map_or(next, |t| s + t as usize)
        };
        assert!(end <= next, "{name}: bundle {i} overlaps the next one");
        let mut g = blob_group(
            ctx,
            format!("{name} {section}+{s:#x}"),
            &fb[s..end],
            Some(file_base + s as u64),
            label_prefix,
        );
        g.label_prefix = format!("{label_prefix}{section}");
        g.label_contains = Some(format!("bundle #{i}"));
        groups.push(g);
    }
    groups
}

/// `-fgpu-rdc` objects: one `__CLANG_OFFLOAD_BUNDLE__<id>` section per entry; the bundler reads the object.
fn rdc_groups(ctx: &mut Ctx, obj: &Path, data: &[u8], base: u64, label_prefix: &str) -> Vec<Group> {
    let name = obj.file_name().unwrap().to_string_lossy().into_owned();
    let secs = readelf_sections(obj);
    let bsecs: Vec<&Section> = secs
        .iter()
        .filter(|s| s.name.starts_with("__CLANG_OFFLOAD_BUNDLE__"))
        .collect();
    if bsecs.is_empty() {
        return Vec::new();
    }
    let ids = bundler_list_ok(obj);
    let from_sections: BTreeSet<String> = bsecs
        .iter()
        .map(|s| s.name["__CLANG_OFFLOAD_BUNDLE__".len()..].to_owned())
        .collect();
    assert_eq!(
        ids, from_sections,
        "{name}: bundler --list vs section names"
    );
    let mut entries = Vec::new();
    for (i, s) in bsecs.iter().enumerate() {
        let id = &s.name["__CLANG_OFFLOAD_BUNDLE__".len()..];
        let contents = data[s.offset as usize..(s.offset + s.size) as usize].to_vec();
        // clang 19 cannot unbundle a host entry; the section contents are the oracle then.
        let bytes = if id.starts_with("host-") {
            contents
        } else {
            let out = ctx.path(&format!("{name}-{id}.out"));
            let b = bundler_unbundle(obj, id, &out);
            assert_same_bytes(
                &b,
                &contents,
                &format!("{name}: {id}: unbundled bytes vs section contents"),
            );
            b
        };
        entries.push(Exp {
            id: id.to_owned(),
            bytes,
            file_offset: Some(base + s.offset),
            entry_index: Some(i as u64),
            offset: None,
        });
    }
    vec![Group {
        what: format!("{name} __CLANG_OFFLOAD_BUNDLE__ sections"),
        key: Key::Label(format!("{label_prefix}__CLANG_OFFLOAD_BUNDLE__ sections")),
        label_prefix: label_prefix.to_owned(),
        label_suffix: None,
        label_contains: None,
        compressed: false,
        ids,
        entries,
    }]
}

/// New-driver objects: OffloadBinaries in `.llvm.offloading`, parsed here and checked with llvm-objdump-19.
fn offloading_groups(obj: &Path, data: &[u8], base: u64, label_prefix: &str) -> Vec<Group> {
    let name = obj.file_name().unwrap().to_string_lossy().into_owned();
    let secs = readelf_sections(obj);
    let Some(sec) = section(&secs, ".llvm.offloading") else {
        return Vec::new();
    };
    let sd = &data[sec.offset as usize..(sec.offset + sec.size) as usize];

    // llvm-objdump-19 --offloading: kind / arch / triple / producer per image.
    let text = run_ok(llvm("llvm-objdump-19").arg("--offloading").arg(obj));
    let mut images: Vec<BTreeMap<String, String>> = Vec::new();
    for line in text.lines() {
        if line.starts_with("OFFLOADING IMAGE") {
            images.push(BTreeMap::new());
        } else if let Some(img) = images.last_mut() {
            let l = line.trim();
            if let Some((k, v)) = l.split_once(char::is_whitespace) {
                img.insert(k.to_owned(), v.trim().to_owned());
            }
        }
    }

    let mut groups = Vec::new();
    let mut pos = 0usize;
    let mut index = 0usize;
    while pos + 32 <= sd.len() {
        let b = &sd[pos..];
        assert_eq!(
            &b[..4],
            b"\x10\xff\x10\xad",
            "{name}: OffloadBinary magic at {pos:#x}"
        );
        assert_eq!(le32(b, 4), 1, "{name}: OffloadBinary version");
        let size = le64(b, 8) as usize;
        let e = le64(b, 16) as usize;
        let image_kind = le16(b, e);
        let offload_kind = le16(b, e + 2);
        let str_off = le64(b, e + 8) as usize;
        let nstr = le64(b, e + 16) as usize;
        let img_off = le64(b, e + 24);
        let img_size = le64(b, e + 32);
        let cstr = |o: usize| {
            let end = b[o..].iter().position(|&c| c == 0).unwrap();
            String::from_utf8(b[o..o + end].to_vec()).unwrap()
        };
        let mut strings = BTreeMap::new();
        for k in 0..nstr {
            let se = str_off + k * 16;
            strings.insert(cstr(le64(b, se) as usize), cstr(le64(b, se + 8) as usize));
        }
        let arch = strings["arch"].clone();
        let triple = strings["triple"].clone();
        let img = images
            .get(index)
            .unwrap_or_else(|| panic!("{name}: llvm-objdump shows fewer images than parsed"));
        assert_eq!(
            img["arch"], arch,
            "{name}: image {index} arch vs llvm-objdump"
        );
        assert_eq!(
            img["triple"], triple,
            "{name}: image {index} triple vs llvm-objdump"
        );
        assert_eq!(image_kind, 2, "{name}: image {index} is not bitcode");
        assert_eq!(img["kind"], "llvm ir", "{name}: image {index}");
        assert_eq!(offload_kind, 3, "{name}: image {index} is not HIP");
        assert_eq!(img["producer"], "hip", "{name}: image {index}");
        let bytes = b[img_off as usize..(img_off + img_size) as usize].to_vec();
        assert!(
            bytes.starts_with(b"BC\xc0\xde"),
            "{name}: image {index} not bitcode"
        );
        // A HIP OffloadBinary is bundled by clang-linker-wrapper under `hip-<triple>--<arch>` (libnd.so shows it).
        let id = format!("hip-{triple}--{arch}");
        let bo = base + sec.offset + pos as u64;
        groups.push(Group {
            what: format!("{name} .llvm.offloading+{pos:#x}"),
            key: Key::BundleOffset(bo),
            label_prefix: format!("{label_prefix}.llvm.offloading > offload binary #{index}"),
            label_suffix: None,
            label_contains: None,
            compressed: false,
            ids: [id.clone()].into(),
            entries: vec![Exp {
                id,
                bytes,
                file_offset: Some(bo + img_off),
                entry_index: Some(0),
                offset: Some(img_off),
            }],
        });
        pos = (pos + size).div_ceil(8) * 8;
        index += 1;
    }
    assert_eq!(images.len(), index, "{name}: image count vs llvm-objdump");
    groups
}

/// The bundles in `.hip_fat` of a Windows PE image, found through its `.hipFatB` wrappers.
///
/// Independently of rocpack: sections, image base and base relocations from `llvm-readobj-19`, both
/// sections dumped with `llvm-objcopy-19`, each wrapper pointer taken as the address at the preferred
/// image base (`pointer - ImageBase` is the RVA; the loader's base relocation, a DIR64 in PE32+ or a
/// HIGHLOW in PE32, must cover the field whenever the image has any), then [`section_blobs`].
fn pe_groups(ctx: &mut Ctx, path: &Path, data: &[u8]) -> Vec<Group> {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let img = readobj_pe(path);
    let Some(fatbin) = img.section(".hip_fat").cloned() else {
        return Vec::new();
    };
    let seg = img
        .section(".hipFatB")
        .cloned()
        .unwrap_or_else(|| panic!("{name}: .hip_fat without .hipFatB"));
    let fb_path = ctx.path(&format!("{name}.hip_fat"));
    let seg_path = ctx.path(&format!("{name}.hipFatB"));
    let junk = ctx.path("objcopy-out");
    run_ok(
        llvm("llvm-objcopy-19")
            .arg(format!("--dump-section=.hip_fat={}", fb_path.display()))
            .arg(format!("--dump-section=.hipFatB={}", seg_path.display()))
            .arg(path)
            .arg(&junk),
    );
    let fb = std::fs::read(&fb_path).unwrap();
    let segb = std::fs::read(&seg_path).unwrap();
    assert_eq!(
        fb.len() as u64,
        fatbin.virtual_size.min(fatbin.raw_size),
        "{name}: dumped .hip_fat size vs min(VirtualSize, RawDataSize)"
    );
    let fo = fatbin.raw_offset as usize;
    assert!(
        data.len() >= fo + fb.len() && data[fo..fo + fb.len()] == fb[..],
        "{name}: .hip_fat dumped by llvm-objcopy differs from the file bytes at PointerToRawData {fo:#x}"
    );
    let (record, reloc_type) = if img.pe32_plus {
        (24, "DIR64")
    } else {
        (16, "HIGHLOW")
    };
    assert_eq!(segb.len() % record, 0, "{name}: .hipFatB size");
    let mut starts = BTreeSet::new();
    for w in 0..segb.len() / record {
        let at = w * record;
        assert_eq!(le32(&segb, at), HIPF_MAGIC, "{name}: wrapper {w} magic");
        assert_eq!(le32(&segb, at + 4), 1, "{name}: wrapper {w} version");
        let ptr = if img.pe32_plus {
            le64(&segb, at + 8)
        } else {
            u64::from(le32(&segb, at + 8))
        };
        let field = seg.rva + (at + 8) as u64;
        let reloc = img.base_relocs.iter().find(|(_, a)| *a == field);
        if img.base_relocs.is_empty() {
            assert!(reloc.is_none(), "{name}: wrapper {w}");
        } else {
            assert_eq!(
                reloc.map(|(t, _)| t.as_str()),
                Some(reloc_type),
                "{name}: wrapper {w}: base relocation at RVA {field:#x}"
            );
        }
        let off = ptr
            .checked_sub(img.image_base + fatbin.rva)
            .unwrap_or_else(|| panic!("{name}: wrapper {w} points before .hip_fat"));
        assert!(
            off < fb.len() as u64,
            "{name}: wrapper {w} points past .hip_fat"
        );
        starts.insert(off);
    }
    section_blobs(ctx, &name, ".hip_fat", &fb, &starts, fatbin.raw_offset, "")
}

/// All groups of a relocatable/linked host ELF, whatever kind of device code it carries.
fn elf_groups(ctx: &mut Ctx, headers: &Path, data: &[u8], base: u64, prefix: &str) -> Vec<Group> {
    let mut g = fatbin_groups(ctx, headers, data, base, prefix);
    g.extend(rdc_groups(ctx, headers, data, base, prefix));
    g.extend(offloading_groups(headers, data, base, prefix));
    g
}

/// The CCOBs of a `.hipfb` file made of one or more CCOBs back to back.
fn ccob_groups(ctx: &mut Ctx, path: &Path, data: &[u8]) -> Vec<Group> {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let mut groups = Vec::new();
    let mut pos = 0usize;
    let mut i = 0;
    while pos < data.len() {
        let h = parse_ccob_header(&data[pos..])
            .unwrap_or_else(|| panic!("{name}: no CCOB header at {pos:#x}"));
        let end = match h.total_size {
            Some(t) => pos + t as usize,
            // v1 has no size: the next valid CCOB header delimits it (the only way to split v1 CCOBs).
            None => find_all(&data[pos + h.header_size..], CCOB_MAGIC)
                .into_iter()
                .map(|o| pos + h.header_size + o)
                .find(|&o| parse_ccob_header(&data[o..]).is_some())
                .unwrap_or(data.len()),
        };
        assert!(end <= data.len(), "{name}: CCOB {i} runs past the end");
        let mut g = blob_group(
            ctx,
            format!("{name} ccob {i}"),
            &data[pos..end],
            Some(pos as u64),
            "",
        );
        g.label_prefix = format!("bundle #{i}");
        groups.push(g);
        pos = end;
        i += 1;
    }
    groups
}

/// Members of a regular archive, extracted with llvm-ar-19, with their offsets in the archive.
fn archive_members(ctx: &mut Ctx, archive: &Path) -> Vec<(String, PathBuf, u64)> {
    let names: Vec<String> = run_ok(llvm("llvm-ar-19").arg("t").arg(archive))
        .lines()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect();
    let dir = ctx.path("members");
    std::fs::create_dir_all(&dir).unwrap();
    run_ok(
        llvm("llvm-ar-19")
            .current_dir(&dir)
            .arg("x")
            .arg(std::fs::canonicalize(archive).unwrap()),
    );
    let data = std::fs::read(archive).unwrap();
    names
        .into_iter()
        .map(|n| {
            let p = dir.join(&n);
            let m = std::fs::read(&p).unwrap();
            let at = find_all(&data, &m);
            assert_eq!(
                at.len(),
                1,
                "member {n} found {} times in the archive",
                at.len()
            );
            (n, p, at[0] as u64)
        })
        .collect()
}

// ------------------------------------------------------------------------------------------------
// Matching rocpack's rows against the groups
// ------------------------------------------------------------------------------------------------

/// Checks `rows` (list --json --all-entries) against `groups`; returns the LLVM bytes for each row.
fn match_groups(file: &str, data: &[u8], rows: &[Value], groups: &[Group]) -> Vec<Vec<u8>> {
    let mut bytes: Vec<Option<Vec<u8>>> = vec![None; rows.len()];
    for g in groups {
        let idx: Vec<usize> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| match &g.key {
                Key::BundleOffset(o) => opt_u64(r, "bundle_offset") == Some(*o),
                Key::Label(l) => get_str(r, "container") == l,
            })
            .map(|(i, _)| i)
            .collect();
        let what = format!("{file}: {}", g.what);
        let got: Vec<String> = idx
            .iter()
            .map(|&i| get_str(&rows[i], "entry_id").to_owned())
            .collect();
        let got_set: BTreeSet<String> = got.iter().cloned().collect();
        assert_eq!(
            got_set, g.ids,
            "{what}: rocpack's entry IDs (rows {idx:?}) vs clang-offload-bundler-19 --list"
        );
        assert_eq!(got.len(), got_set.len(), "{what}: an entry listed twice");
        let labels: BTreeSet<&str> = idx
            .iter()
            .map(|&i| get_str(&rows[i], "container"))
            .collect();
        assert_eq!(
            labels.len(),
            1,
            "{what}: rows with several container labels {labels:?}"
        );
        let label = *labels.iter().next().unwrap();
        assert!(
            label.starts_with(&g.label_prefix),
            "{what}: container label {label:?} should start with {:?}",
            g.label_prefix
        );
        if let Some(c) = &g.label_contains {
            assert!(
                label.contains(c.as_str()),
                "{what}: label {label:?} should contain {c:?}"
            );
        }
        if let Some(suf) = &g.label_suffix {
            assert!(
                label.ends_with(suf.as_str()),
                "{what}: label {label:?} should end with {suf:?}"
            );
        }
        for &i in &idx {
            let r = &rows[i];
            let id = get_str(r, "entry_id");
            let e = g.entries.iter().find(|e| e.id == id).unwrap();
            let w = format!("{what}: {id}");
            assert_eq!(get_u64(r, "size"), e.bytes.len() as u64, "{w}: size");
            assert_eq!(get_bool(r, "compressed"), g.compressed, "{w}: compressed");
            assert_eq!(opt_u64(r, "file_offset"), e.file_offset, "{w}: file_offset");
            if let Some(fo) = e.file_offset {
                assert_same_bytes(
                    &data[fo as usize..fo as usize + e.bytes.len()],
                    &e.bytes,
                    &format!("{w}: file bytes at file_offset vs LLVM's"),
                );
            }
            if let Some(ei) = e.entry_index {
                assert_eq!(opt_u64(r, "entry_index"), Some(ei), "{w}: entry_index");
            }
            if let Some(o) = e.offset {
                assert_eq!(get_u64(r, "offset"), o, "{w}: offset");
            }
            assert_eq!(
                get_bool(r, "host"),
                id.starts_with("host-"),
                "{w}: host flag"
            );
            let fmt = get_str(r, "format");
            let expect_fmt = if e.bytes.is_empty() {
                "empty"
            } else if e.bytes.starts_with(b"\x7fELF") && e.bytes.get(18) == Some(&224) {
                "code-object"
            } else if e.bytes.starts_with(b"BC\xc0\xde") {
                "bitcode"
            } else {
                "other"
            };
            assert_eq!(fmt, expect_fmt, "{w}: format");
            assert!(bytes[i].is_none(), "{w}: row {i} matched two groups");
            bytes[i] = Some(e.bytes.clone());
        }
    }
    bytes
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            b.unwrap_or_else(|| {
                panic!(
                    "{file}: rocpack row {i} matches nothing LLVM sees: {}",
                    rows[i]
                )
            })
        })
        .collect()
}

// ------------------------------------------------------------------------------------------------
// Per-file checks shared by every kind
// ------------------------------------------------------------------------------------------------

const KERNEL_KEYS: &[(&str, &str)] = &[
    ("name", ".name"),
    ("symbol", ".symbol"),
    ("sgpr_count", ".sgpr_count"),
    ("vgpr_count", ".vgpr_count"),
    ("agpr_count", ".agpr_count"),
    ("sgpr_spill_count", ".sgpr_spill_count"),
    ("vgpr_spill_count", ".vgpr_spill_count"),
    ("lds_size", ".group_segment_fixed_size"),
    ("scratch_size", ".private_segment_fixed_size"),
    ("uses_dynamic_stack", ".uses_dynamic_stack"),
    ("wavefront_size", ".wavefront_size"),
    ("max_flat_workgroup_size", ".max_flat_workgroup_size"),
    ("kernarg_size", ".kernarg_segment_size"),
];

fn json_scalar(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        other => Some(other.to_string()),
    }
}

/// A code object row against `llvm-readelf-19 -h --notes` of LLVM's bytes for it.
fn check_code_object(ctx: &mut Ctx, what: &str, row: &Value, shown: &Value, bytes: &[u8]) {
    let p = ctx.write(&format!("{what}.co"), bytes);
    let (h, notes) = readelf_header_and_notes(&p);
    assert_eq!(h.machine, "EM_AMDGPU", "{what}");
    // The entry ID's target ID names the same processor, and its pinned features are the code object's.
    if let Some(id) = opt_str(row, "entry_id") {
        let tid = id.split_once("--").map_or("", |(_, t)| t);
        let mut parts = tid.split(':');
        assert_eq!(
            parts.next(),
            Some(h.processor.as_str()),
            "{what}: entry ID {id} vs ELF processor"
        );
        let elf_feats: BTreeSet<&str> = h.target.split(':').skip(1).collect();
        for f in parts {
            assert!(
                elf_feats.contains(f),
                "{what}: entry ID {id} pins {f}, the ELF header says {}",
                h.target
            );
        }
    }
    assert_eq!(h.os_abi, "AMDGPU - HSA", "{what}");
    assert_eq!(
        opt_str(row, "target"),
        Some(h.target.as_str()),
        "{what}: list target vs llvm-readelf -h flags"
    );
    assert_eq!(
        opt_str(row, "processor"),
        Some(h.processor.as_str()),
        "{what}: processor"
    );
    assert_eq!(
        opt_u64(row, "cov"),
        Some(u64::from(h.cov())),
        "{what}: cov vs ABI Version {}",
        h.abi_version
    );
    assert_eq!(
        opt_u64(row, "generic_version"),
        h.generic_version.map(u64::from),
        "{what}: generic_version"
    );
    assert_eq!(
        opt_str(shown, "target"),
        Some(h.target.as_str()),
        "{what}: show target"
    );
    let hdr = &shown["header"];
    assert_eq!(
        opt_u64(hdr, "e_flags"),
        Some(u64::from(h.e_flags)),
        "{what}: show e_flags"
    );
    assert_eq!(
        opt_u64(hdr, "cov"),
        Some(u64::from(h.cov())),
        "{what}: show cov"
    );
    assert_eq!(
        opt_str(hdr, "processor"),
        Some(h.processor.as_str()),
        "{what}: show processor"
    );

    let md = &shown["metadata"];
    assert!(md.is_object(), "{what}: no metadata in show --kernels");
    assert_eq!(
        opt_str(md, "target"),
        notes.target.as_deref(),
        "{what}: amdhsa.target"
    );
    let version: Vec<u64> = md["version"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_u64().unwrap()).collect())
        .unwrap_or_default();
    assert_eq!(version, notes.version, "{what}: amdhsa.version");
    let kernels = md["kernels"].as_array().expect("kernels array");
    assert!(
        !notes.kernels.is_empty(),
        "{what}: llvm-readelf printed no kernels"
    );
    assert_eq!(kernels.len(), notes.kernels.len(), "{what}: kernel count");
    let by_name: BTreeMap<&str, &Value> = kernels.iter().map(|k| (get_str(k, "name"), k)).collect();
    assert_eq!(
        by_name.len(),
        kernels.len(),
        "{what}: duplicate kernel names"
    );
    for nk in &notes.kernels {
        let name = nk.get(".name").expect(".name");
        let k = by_name
            .get(name.as_str())
            .unwrap_or_else(|| panic!("{what}: kernel {name} (llvm-readelf) missing from rocpack"));
        for (ours, theirs) in KERNEL_KEYS {
            assert_eq!(
                json_scalar(&k[*ours]),
                nk.get(*theirs).cloned(),
                "{what}: kernel {name}: rocpack {ours} vs llvm-readelf {theirs}"
            );
        }
    }
}

/// Checks everything common to one fixture once its rows have LLVM bytes: code object headers
/// and kernels, `list --verify`, `show` consistency and `extract`.
fn check_rows(ctx: &mut Ctx, path: &Path, rows: &[Value], bytes: &[Vec<u8>]) {
    let file = path.file_name().unwrap().to_string_lossy().into_owned();

    // --verify decompresses everything and must list exactly the same rows.
    let verified = list_all(path, true);
    assert_eq!(verified, rows, "{file}: list --verify differs from list");

    // The default listing is the device rows of --all-entries.
    let device_only = json_lines(&rocpack_ok(&[
        std::ffi::OsStr::new("list"),
        "--json".as_ref(),
        path.as_os_str(),
    ]));
    let expected_device: Vec<&Value> = rows
        .iter()
        .filter(|r| !get_bool(r, "host") && get_str(r, "format") != "empty")
        .collect();
    assert_eq!(
        device_only.iter().collect::<Vec<_>>(),
        expected_device,
        "{file}: list without --all-entries"
    );

    // show: same entries in the same order.
    let shown = show_kernels(path);
    assert_eq!(
        shown["diagnostics"].as_array().map(Vec::len),
        Some(0),
        "{file}: diagnostics {}",
        shown["diagnostics"]
    );
    let cos = shown["code_objects"].as_array().expect("code_objects");
    assert_eq!(cos.len(), rows.len(), "{file}: show vs list entry count");
    for (i, (r, c)) in rows.iter().zip(cos).enumerate() {
        for k in [
            "entry_index",
            "entry_id",
            "offset",
            "file_offset",
            "size",
            "compressed",
            "format",
            "host",
            "target",
        ] {
            assert_eq!(r[k], c[k], "{file}: row {i} field {k}: list vs show");
        }
    }

    // Code objects against llvm-readelf.
    for (i, r) in rows.iter().enumerate() {
        if get_str(r, "format") == "code-object" {
            check_code_object(ctx, &format!("{file} row {i}"), r, &cos[i], &bytes[i]);
        } else {
            assert!(
                opt_u64(r, "cov").is_none(),
                "{file}: row {i}: cov on a non code object"
            );
        }
    }

    // extract: per target, the written files are LLVM's bytes.
    let targets: BTreeSet<&str> = rows
        .iter()
        .filter(|r| !get_bool(r, "host") && get_str(r, "format") != "empty")
        .filter_map(|r| opt_str(r, "target"))
        .collect();
    for t in targets {
        let dir = ctx.path(&format!("extract-{t}"));
        let outs = extract(path, t, &dir);
        let mut seen = BTreeSet::new();
        for o in &outs {
            let i = rows
                .iter()
                .position(|r| r["container"] == o["container"] && r["entry_id"] == o["entry_id"])
                .unwrap_or_else(|| {
                    panic!("{file}: extract --target {t} wrote {o}, which list does not show")
                });
            let written = std::fs::read(get_str(o, "output")).unwrap();
            assert!(
                Path::new(get_str(o, "output")).starts_with(&dir),
                "{file}: extract wrote outside -o"
            );
            assert_same_bytes(
                &written,
                &bytes[i],
                &format!("{file}: extract --target {t}: bytes of {o} vs LLVM's"),
            );
            assert_eq!(
                get_u64(o, "size"),
                bytes[i].len() as u64,
                "{file}: extract size"
            );
            assert_eq!(o["target"], rows[i]["target"], "{file}: extract target");
            seen.insert(i);
        }
        for (i, r) in rows.iter().enumerate() {
            if opt_str(r, "target") == Some(t) && !get_bool(r, "host") {
                assert!(
                    seen.contains(&i),
                    "{file}: extract --target {t} did not write row {i} {r}"
                );
            }
        }
        let files = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
        assert_eq!(
            files,
            outs.len(),
            "{file}: extract --target {t}: files written vs lines printed"
        );
    }
}

/// Full oracle check of one fixture; returns rocpack's rows and LLVM's bytes for each.
fn check_fixture(path: &Path, kind: &str) -> (Vec<Value>, Vec<Vec<u8>>) {
    let mut ctx = Ctx::new();
    let file = path.file_name().unwrap().to_string_lossy().into_owned();
    let data = std::fs::read(path).unwrap();
    let rows = if kind == "unclassified" {
        // The one documented warning, and no row.
        let mut cmd = rocpack();
        cmd.args(["list", "--json", "--all-entries"]).arg(path);
        let out = output_of(&mut cmd);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{}: {stderr}", describe(&cmd));
        assert_eq!(
            stderr.matches("warning[unclassified-gpu-code]").count(),
            stderr.lines().count(),
            "{}: {stderr}",
            describe(&cmd)
        );
        assert!(
            !stderr.is_empty(),
            "{}: no unclassified-gpu-code warning",
            describe(&cmd)
        );
        json_lines(&String::from_utf8(out.stdout).unwrap())
    } else if kind == "embedded-code" {
        // Code in an executable section: not searched by default, found with --deep.
        assert!(
            list_all(path, false).is_empty(),
            "{file}: .text searched without --deep"
        );
        let mut cmd = rocpack();
        cmd.args(["list", "--json", "--all-entries", "--deep"])
            .arg(path);
        let out = output_of(&mut cmd);
        assert_eq!(out.status.code(), Some(0), "{}", describe(&cmd));
        json_lines(&String::from_utf8(out.stdout).unwrap())
    } else {
        list_all(path, false)
    };
    assert!(
        !rows.is_empty() || kind == "unclassified",
        "{file}: rocpack lists nothing"
    );
    for r in &rows {
        assert_eq!(
            get_str(r, "file"),
            path.to_string_lossy(),
            "{file}: file field"
        );
    }

    let bytes = match kind {
        "object" | "host-elf" | "executable" | "rdc-object" | "new-driver-object" => {
            let groups = elf_groups(&mut ctx, path, &data, 0, "");
            assert!(
                !groups.is_empty(),
                "{file}: no device code found by the oracle"
            );
            match_groups(&file, &data, &rows, &groups)
        }
        "stripped-shdr" => {
            // lib3tu-noshdr.so is lib3tu-lld.so without its section header table: use the original's tables.
            let original = fixture("lib3tu-lld.so");
            let orig = std::fs::read(&original).unwrap();
            assert!(
                data.len() < orig.len() && orig[64..data.len()] == data[64..],
                "{file}: not lib3tu-lld.so cut short (outside the 64-byte ELF header)"
            );
            let secs = readelf_sections(&original);
            for s in [".hip_fatbin", ".hipFatBinSegment"] {
                let s = section(&secs, s).unwrap();
                assert!(
                    s.offset + s.size <= data.len() as u64,
                    "{file}: {} was cut off",
                    s.name
                );
            }
            let groups = elf_groups(&mut ctx, &original, &data, 0, "");
            match_groups(&file, &data, &rows, &groups)
        }
        "pe" => {
            let groups = pe_groups(&mut ctx, path, &data);
            assert!(
                !groups.is_empty(),
                "{file}: no device code found by the oracle"
            );
            match_groups(&file, &data, &rows, &groups)
        }
        "bundle" => {
            let g = blob_group(&mut ctx, file.clone(), &data, Some(0), "");
            assert_eq!(
                bundle_end(&parse_bundle_header(&data)),
                data.len() as u64,
                "{file}: bundle does not end at EOF"
            );
            match_groups(&file, &data, &rows, &[g])
        }
        "ccob" => {
            let groups = ccob_groups(&mut ctx, path, &data);
            match_groups(&file, &data, &rows, &groups)
        }
        "archive" => {
            let mut groups = Vec::new();
            for (name, member, base) in archive_members(&mut ctx, path) {
                let mdata = std::fs::read(&member).unwrap();
                let g = elf_groups(
                    &mut ctx,
                    &member,
                    &mdata,
                    base,
                    &format!("member {name} > "),
                );
                assert!(
                    !g.is_empty(),
                    "{file}: member {name}: no device code found by the oracle"
                );
                groups.extend(g);
            }
            match_groups(&file, &data, &rows, &groups)
        }
        "thin-archive" => {
            // Members are other files (relative to the archive): their rows, prefixed, with no file offsets.
            // llvm-ar prints thin members relative to the current directory: run it in the archive's.
            let dir = path.parent().unwrap();
            let names: Vec<String> = run_ok(
                llvm("llvm-ar-19")
                    .current_dir(dir)
                    .arg("t")
                    .arg(path.file_name().unwrap()),
            )
            .lines()
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty())
            .collect();
            let mut expected: Vec<(Value, Vec<u8>)> = Vec::new();
            for n in &names {
                let member = dir.join(n);
                let (mrows, mbytes) = check_fixture(&member, "object");
                for (mut r, b) in mrows.into_iter().zip(mbytes) {
                    r["container"] =
                        Value::String(format!("member {n} > {}", get_str(&r, "container")));
                    r["file"] = Value::String(path.to_string_lossy().into_owned());
                    r["bundle_offset"] = Value::Null;
                    r["file_offset"] = Value::Null;
                    expected.push((r, b));
                }
            }
            let (erows, ebytes): (Vec<Value>, Vec<Vec<u8>>) = expected.into_iter().unzip();
            assert_eq!(rows, erows, "{file}: rows vs its member files' rows");
            ebytes
        }
        "code-object" => {
            assert_eq!(rows.len(), 1, "{file}: a bare code object is one row");
            let r = &rows[0];
            assert_eq!(get_str(r, "container"), "-", "{file}");
            assert!(
                r["entry_id"].is_null()
                    && r["entry_index"].is_null()
                    && r["bundle_offset"].is_null(),
                "{file}: {r}"
            );
            assert_eq!(opt_u64(r, "file_offset"), Some(0), "{file}");
            assert_eq!(get_u64(r, "offset"), 0, "{file}");
            assert_eq!(get_u64(r, "size"), data.len() as u64, "{file}");
            assert!(!get_bool(r, "compressed") && !get_bool(r, "host"), "{file}");
            assert_eq!(get_str(r, "format"), "code-object", "{file}");
            vec![data.clone()]
        }
        // GPU code a library keeps in its own data (ELF .rodata/.data, PE .rdata): the oracle's
        // own census of the file finds each bundle, CCOB and bare AMDGPU code object; LLVM's
        // tools then read each one.
        "embedded" | "embedded-code" | "pe-embedded" | "unclassified" => {
            embedded_bytes(&mut ctx, &file, &data, &rows, kind == "unclassified")
        }
        other => panic!("{file}: manifest kind {other:?} has no oracle; add one to oracle.rs"),
    };
    // check_rows runs commands without --deep, which see no code in .text.
    if kind != "unclassified" && kind != "embedded-code" {
        check_rows(&mut ctx, path, &rows, &bytes);
    }
    (rows, bytes)
}

/// Embedded GPU code, found by a census of the whole file (no rocpack): every bundle magic, every
/// CCOB header, every ELF header with e_machine EM_AMDGPU (224), outside the extent of one found
/// before. Bundles and CCOBs are read by clang-offload-bundler-19 (`blob_group`); a bare code
/// object's extent is its section header table's end, its processor is what llvm-readelf-19 -h
/// says. A code object whose tables lie outside the file is unclassified: rocpack must list no row
/// for it (and, for `unclassified` fixtures, nothing at all). Returns the bytes of each row.
fn embedded_bytes(
    ctx: &mut Ctx,
    file: &str,
    data: &[u8],
    rows: &[Value],
    unclassified: bool,
) -> Vec<Vec<u8>> {
    let mut groups = Vec::new();
    let mut bare: Vec<(u64, Vec<u8>, String)> = Vec::new();
    let mut invalid = 0;
    let mut i = 0usize;
    while i + 64 <= data.len() {
        let rest = &data[i..];
        let skip_to = if rest.starts_with(BUNDLE_MAGIC) {
            let g = blob_group(ctx, format!("bundle at {i:#x}"), rest, Some(i as u64), "");
            groups.push(g);
            i + bundle_end(&parse_bundle_header(rest)) as usize
        } else if let Some(h) = parse_ccob_header(rest) {
            let total = h.total_size.expect("the fixtures' CCOBs are v2/v3") as usize;
            let mut g = blob_group(
                ctx,
                format!("CCOB at {i:#x}"),
                &rest[..total],
                Some(i as u64),
                "",
            );
            // Outside a fat binary a CCOB is labelled `ccob v2 zstd`, not `bundle #i (...)`.
            g.label_suffix = g
                .label_suffix
                .map(|l| l.trim_matches(['(', ')']).to_owned());
            groups.push(g);
            i + total
        } else if rest.starts_with(b"\x7fELF") && rest[4] == 2 && le16(rest, 18) == 224 {
            let end = le64(rest, 0x28) + u64::from(le16(rest, 0x3c)) * u64::from(le16(rest, 0x3a));
            if end > rest.len() as u64 {
                invalid += 1;
                i + 4
            } else {
                let co = rest[..end as usize].to_vec();
                let cut = ctx.write(&format!("co-{i:x}"), &co);
                let flags = run_ok(llvm("llvm-readelf-19").arg("-h").arg(&cut))
                    .lines()
                    .find(|l| l.trim_start().starts_with("Flags:"))
                    .unwrap_or_default()
                    .to_ascii_lowercase();
                bare.push((i as u64, co, flags));
                i + end as usize
            }
        } else {
            i + 1
        };
        i = skip_to.max(i + 1);
    }
    if unclassified {
        assert!(
            invalid > 0,
            "{file}: the oracle found no unparsable AMDGPU header"
        );
        assert!(
            rows.is_empty(),
            "{file}: rows for unclassified code: {rows:?}"
        );
        return Vec::new();
    }
    assert!(
        !groups.is_empty() || !bare.is_empty(),
        "{file}: no embedded code found by the oracle"
    );
    for r in rows {
        assert_eq!(get_str(r, "loading"), "module", "{file}: {r}");
    }
    // Bundle entries have an entry ID; a bare code object has none.
    let in_bundle: Vec<usize> = (0..rows.len())
        .filter(|&k| !rows[k]["entry_id"].is_null())
        .collect();
    let bundle_rows: Vec<Value> = in_bundle.iter().map(|&k| rows[k].clone()).collect();
    let bundle_bytes = match_groups(file, data, &bundle_rows, &groups);
    let mut out: Vec<Option<Vec<u8>>> = vec![None; rows.len()];
    for (k, b) in in_bundle.into_iter().zip(bundle_bytes) {
        out[k] = Some(b);
    }
    for (at, co, flags) in bare {
        let k = rows
            .iter()
            .position(|r| r["entry_id"].is_null() && opt_u64(r, "file_offset") == Some(at))
            .unwrap_or_else(|| panic!("{file}: no row for the code object at {at:#x}"));
        let r = &rows[k];
        assert_eq!(
            get_u64(r, "size"),
            co.len() as u64,
            "{file}: size at {at:#x}"
        );
        let processor = get_str(r, "processor");
        assert!(
            flags.contains(&processor.replace('-', "_")),
            "{file}: at {at:#x} rocpack says {processor}, llvm-readelf-19 -h says {flags:?}"
        );
        assert!(
            out[k].replace(co).is_none(),
            "{file}: row {k} matched twice"
        );
    }
    out.into_iter()
        .enumerate()
        .map(|(k, b)| {
            b.unwrap_or_else(|| panic!("{file}: row {k} found by no oracle: {}", rows[k]))
        })
        .collect()
}

/// Runs `check_fixture` over every manifest fixture of the given kinds; reports all failures at once.
fn check_kinds(kinds: &[&str]) {
    let fixtures: Vec<Fixture> = manifest()
        .into_iter()
        .filter(|f| kinds.contains(&f.kind.as_str()))
        .collect();
    assert!(!fixtures.is_empty(), "no fixtures of kinds {kinds:?}");
    check_all(&fixtures);
}

/// Runs `check_fixture` over `fixtures`; reports all failures at once.
fn check_all(fixtures: &[Fixture]) {
    let mut failures = Vec::new();
    for f in fixtures {
        let r = catch_unwind(AssertUnwindSafe(|| check_fixture(&f.path(), &f.kind)));
        if let Err(e) = r {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            failures.push(format!("{} ({}): {msg}", f.rel, f.kind));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures disagree with LLVM:\n\n{}",
        failures.len(),
        fixtures.len(),
        failures.join("\n\n")
    );
}

// ------------------------------------------------------------------------------------------------
// Tests: every fixture against LLVM
// ------------------------------------------------------------------------------------------------

#[test]
fn manifest_lists_every_fixture_with_a_known_kind() {
    let m = manifest();
    let listed: BTreeSet<String> = m.iter().map(|f| f.name().to_owned()).collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(fixtures_bin())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed, on_disk, "manifest.tsv vs tests/fixtures/bin");
    for f in &m {
        assert!(
            KNOWN_KINDS.contains(&f.kind.as_str()),
            "{}: unknown kind {}",
            f.rel,
            f.kind
        );
        assert!(f.path().is_file(), "{} missing", f.rel);
    }
}

#[test]
fn pe_manifest_lists_every_image() {
    let m = pe_manifest();
    let listed: BTreeSet<String> = m.iter().map(|f| f.name().to_owned()).collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(fixtures_dir().join("pe"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".dll") || n.ends_with(".exe"))
        .collect();
    assert_eq!(listed, on_disk, "pe/manifest.tsv vs tests/fixtures/pe");
    assert!(
        m.iter()
            .all(|f| ["pe", "pe-embedded"].contains(&f.kind.as_str())),
        "{m:?}"
    );
}

#[test]
fn pe_images_match_llvm() {
    check_all(&pe_manifest());
}

/// The Windows DLLs of a real wheel, each against the whole oracle, and `list` on the wheel in
/// place against the DLLs on their own. `dlls`: (member, the device targets it holds).
fn check_real_wheel_dlls(wheel: &Path, dlls: &[(&str, &[&str])]) {
    let ctx = &mut Ctx::new();
    let in_place = list_all(wheel, false);
    for (member, targets) in dlls {
        let dll = ctx.path(member);
        run_ok(
            Command::new("python3")
                .args([
                    "-c",
                    "import sys, zipfile\n\
                     open(sys.argv[3], 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))",
                ])
                .arg(wheel)
                .arg(member)
                .arg(&dll),
        );
        let (rows, _) = check_fixture(&dll, "pe");
        let device: Vec<&str> = rows
            .iter()
            .filter(|r| !get_bool(r, "host"))
            .map(|r| {
                assert_eq!(get_str(r, "container"), ".hip_fat > bundle #0", "{member}");
                get_str(r, "target")
            })
            .collect();
        assert_eq!(device, *targets, "{member}");
        let name = format!("{}!/{member}", wheel.display());
        let mine: Vec<Value> = in_place
            .iter()
            .filter(|r| get_str(r, "file") == name)
            .cloned()
            .collect();
        assert_same_rows_in_place(&mine, &rows);
    }
}

/// hip-quant 0.4.3 (PyPI, py3-none-any) ships `hip_quant/hip_quantize.dll`, a Windows DLL built
/// with the HIP SDK (link.exe: `.hip_fat`, `.hipFatB`, one gfx1201 code object).
#[test]
fn real_hip_quant_0_4_3_wheel_dll_matches_llvm() {
    let wheel = fetch_wheel("hip-quant", "0.4.3", "hip_quant-0.4.3-py3-none-any.whl");
    check_real_wheel_dlls(&wheel, &[("hip_quant/hip_quantize.dll", &["gfx1201"])]);
}

/// hip-quant 0.4.7's win_amd64 wheel: two DLLs (built against two ROCm releases), four and eight
/// targets in one bundle each.
#[test]
fn real_hip_quant_0_4_7_win_amd64_dlls_match_llvm() {
    let wheel = fetch_wheel(
        "hip-quant",
        "0.4.7",
        "hip_quant-0.4.7-cp311-cp311-win_amd64.whl",
    );
    let data = "hip_quant-0.4.7.data/purelib/hip_quant";
    check_real_wheel_dlls(
        &wheel,
        &[
            (
                &format!("{data}/hip_quantize.dll"),
                &["gfx1200", "gfx1201", "gfx90a", "gfx942"],
            ),
            (
                &format!("{data}/hip_quantize_rocm721.dll"),
                &[
                    "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1200", "gfx1201", "gfx90a",
                    "gfx942",
                ],
            ),
        ],
    );
}

#[test]
fn host_objects_and_libraries_match_llvm() {
    check_kinds(&["object", "host-elf", "executable", "stripped-shdr"]);
}

#[test]
fn rdc_and_new_driver_objects_match_llvm() {
    check_kinds(&["rdc-object", "new-driver-object"]);
}

#[test]
fn archives_match_llvm() {
    check_kinds(&["archive", "thin-archive"]);
}

#[test]
fn bundle_and_ccob_files_match_llvm() {
    check_kinds(&["bundle", "ccob"]);
}

#[test]
fn bare_code_objects_match_llvm_readelf() {
    check_kinds(&["code-object"]);
}

#[test]
fn embedded_and_unclassified_code_match_llvm() {
    check_kinds(&["embedded", "embedded-code", "unclassified"]);
}

// ------------------------------------------------------------------------------------------------
// Tests: specific expectations from the fixture README
// ------------------------------------------------------------------------------------------------

fn device_rows(rows: &[Value]) -> Vec<&Value> {
    rows.iter()
        .filter(|r| !get_bool(r, "host") && get_str(r, "format") != "empty")
        .collect()
}

fn bundle_offsets(rows: &[&Value]) -> BTreeSet<u64> {
    rows.iter().map(|r| get_u64(r, "bundle_offset")).collect()
}

#[test]
fn lib3tu_variants_give_the_same_five_code_objects_in_three_bundles() {
    let expected_targets: BTreeSet<&str> = [
        "gfx1030",
        "gfx90a:xnack+",
        "gfx906:sramecc-:xnack-",
        "gfx1100",
        "gfx942",
    ]
    .into();
    let mut reference: Option<Vec<(String, String, u64)>> = None;
    for name in [
        "lib3tu-lld.so",
        "lib3tu-bfd.so",
        "lib3tu-relr.so",
        "lib3tu-noshdr.so",
        "lib3tu-mixed.so",
    ] {
        let rows = list_all(&fixture(name), false);
        let dev = device_rows(&rows);
        assert_eq!(dev.len(), 5, "{name}: device code objects");
        assert_eq!(bundle_offsets(&dev).len(), 3, "{name}: bundles");
        let targets: BTreeSet<&str> = dev.iter().map(|r| get_str(r, "target")).collect();
        assert_eq!(targets, expected_targets, "{name}");
        let mut sig: Vec<(String, String, u64)> = dev
            .iter()
            .map(|r| {
                (
                    get_str(r, "entry_id").to_owned(),
                    get_str(r, "target").to_owned(),
                    get_u64(r, "size"),
                )
            })
            .collect();
        sig.sort();
        match &reference {
            None => reference = Some(sig),
            Some(r) => assert_eq!(&sig, r, "{name} vs lib3tu-lld.so"),
        }
    }
    // The lld, relr and noshdr variants share the layout: identical rows but for the file name.
    let strip = |name: &str| -> Vec<Value> {
        list_all(&fixture(name), false)
            .into_iter()
            .map(|mut r| {
                r["file"] = Value::Null;
                // noshdr says how its .hip_fatbin was found; the rest of the label must agree.
                let c = get_str(&r, "container").replace(" (found through program headers)", "");
                r["container"] = Value::String(c);
                r
            })
            .collect()
    };
    let lld = strip("lib3tu-lld.so");
    assert_eq!(strip("lib3tu-noshdr.so"), lld, "noshdr vs lld");
}

#[test]
fn librdc_so_has_one_bundle_for_two_wrappers() {
    let rows = list_all(&fixture("librdc.so"), false);
    let all: Vec<&Value> = rows.iter().collect();
    assert_eq!(bundle_offsets(&all).len(), 1, "librdc.so: {rows:?}");
    let dev = device_rows(&rows);
    let targets: BTreeSet<&str> = dev.iter().map(|r| get_str(r, "target")).collect();
    assert_eq!(targets, ["gfx1030", "gfx90a:xnack+"].into());
    assert_eq!(dev.len(), 2);
    // The two wrappers really exist (so the single bundle is a deduplication).
    let secs = readelf_sections(&fixture("librdc.so"));
    assert_eq!(section(&secs, ".hipFatBinSegment").unwrap().size, 48);
}

#[test]
fn two_ccob_files_give_two_entries_per_ccob() {
    for (name, second) in [
        ("ccob-two-v1-zlib.hipfb", 2913u64),
        ("ccob-two-v2-zstd.hipfb", 2961),
    ] {
        let rows = list_all(&fixture(name), false);
        let dev = device_rows(&rows);
        assert_eq!(dev.len(), 4, "{name}");
        assert_eq!(bundle_offsets(&dev), [0, second].into(), "{name}");
        for o in [0, second] {
            assert_eq!(
                dev.iter()
                    .filter(|r| get_u64(r, "bundle_offset") == o)
                    .count(),
                2,
                "{name} CCOB at {o}"
            );
        }
        // The first CCOB is exactly ccob-v{1,2}-*.hipfb (same generator, same input).
        let single = if name.contains("v1") {
            "ccob-v1-zlib.hipfb"
        } else {
            "ccob-v2-zstd.hipfb"
        };
        assert_eq!(
            std::fs::metadata(fixture(single)).unwrap().len(),
            second,
            "{single}"
        );
    }
}

/// The CCOB fixtures compress bundles that are also committed uncompressed: same entries, offsets, sizes.
#[test]
fn ccob_entries_equal_those_of_the_uncompressed_bundle() {
    let sig = |rows: &[Value]| -> Vec<Value> {
        rows.iter()
            .map(|r| {
                serde_json::json!([
                    r["entry_index"],
                    r["entry_id"],
                    r["target"],
                    r["offset"],
                    r["size"],
                    r["format"],
                    r["cov"]
                ])
            })
            .collect()
    };
    let tu1 = sig(&list_all(&fixture("tu1.hipfb"), false));
    let tu2 = sig(&list_all(&fixture("tu2.hipfb"), false));
    for name in [
        "ccob-v1-zlib.hipfb",
        "ccob-v1-zstd.hipfb",
        "ccob-v2-zlib.hipfb",
        "ccob-v2-zstd.hipfb",
        "ccob-v3-zlib.hipfb",
        "ccob-v3-zstd.hipfb",
    ] {
        assert_eq!(
            sig(&list_all(&fixture(name), true)),
            tu1,
            "{name} vs tu1.hipfb"
        );
    }
    assert_eq!(
        sig(&list_all(&fixture("tu2-compressed.hipfb"), true)),
        tu2,
        "tu2-compressed.hipfb vs tu2.hipfb"
    );
    for name in ["ccob-two-v1-zlib.hipfb", "ccob-two-v2-zstd.hipfb"] {
        let both: Vec<Value> = tu1.iter().chain(&tu2).cloned().collect();
        assert_eq!(
            sig(&list_all(&fixture(name), true)),
            both,
            "{name} vs tu1.hipfb + tu2.hipfb"
        );
    }
}

#[test]
fn archives_list_their_members() {
    for (name, members, device) in [
        ("libhost.a", ["tu1.o", "tu2.o"], 4),
        ("libhost-thin.a", ["tu1.o", "tu2.o"], 4),
        ("librdc.a", ["rdc1.o", "rdc2.o"], 4),
        ("libnd.a", ["nd-rdc1.o", "nd-rdc2.o"], 4),
    ] {
        let rows = list_all(&fixture(name), false);
        let dev = device_rows(&rows);
        assert_eq!(dev.len(), device, "{name}");
        let seen: BTreeSet<&str> = rows
            .iter()
            .map(|r| {
                let c = get_str(r, "container");
                c.strip_prefix("member ")
                    .and_then(|c| c.split(" > ").next())
                    .unwrap_or_else(|| panic!("{name}: {c}"))
            })
            .collect();
        assert_eq!(seen, members.into(), "{name}: members");
        // Each member lists what the member file lists on its own.
        for m in members {
            let own: Vec<(Value, Value, Value)> = list_all(&fixture(m), false)
                .into_iter()
                .map(|r| {
                    (
                        r["entry_id"].clone(),
                        r["target"].clone(),
                        r["size"].clone(),
                    )
                })
                .collect();
            let in_ar: Vec<(Value, Value, Value)> = rows
                .iter()
                .filter(|r| get_str(r, "container").starts_with(&format!("member {m} > ")))
                .map(|r| {
                    (
                        r["entry_id"].clone(),
                        r["target"].clone(),
                        r["size"].clone(),
                    )
                })
                .collect();
            assert_eq!(in_ar, own, "{name}: member {m}");
        }
    }
}

#[test]
fn thin_archive_lists_the_same_as_the_regular_one() {
    let norm = |name: &str| -> Vec<Value> {
        list_all(&fixture(name), false)
            .into_iter()
            .map(|mut r| {
                for k in ["file", "bundle_offset", "file_offset"] {
                    r[k] = Value::Null;
                }
                r
            })
            .collect()
    };
    let thin = norm("libhost-thin.a");
    assert_eq!(thin, norm("libhost.a"));
    // And extraction gives the same bytes.
    let tmp = tempdir();
    for t in [
        "gfx1030",
        "gfx90a:xnack+",
        "gfx906:sramecc-:xnack-",
        "gfx1100",
    ] {
        let a = extract(
            &fixture("libhost.a"),
            t,
            &tmp.path().join(format!("a-{}", sanitize(t))),
        );
        let b = extract(
            &fixture("libhost-thin.a"),
            t,
            &tmp.path().join(format!("b-{}", sanitize(t))),
        );
        assert_eq!(a.len(), 1, "{t}");
        assert_eq!(b.len(), 1, "{t}");
        assert_eq!(
            std::fs::read(get_str(&a[0], "output")).unwrap(),
            std::fs::read(get_str(&b[0], "output")).unwrap(),
            "{t}"
        );
    }
}

#[test]
fn listing_the_whole_fixture_directory_is_clean() {
    let dir = fixtures_bin();
    for extra in [&[][..], &["--all-entries"][..], &["--verify"][..]] {
        let mut args: Vec<std::ffi::OsString> = vec!["list".into(), "--json".into()];
        args.extend(extra.iter().map(Into::into));
        args.push(dir.clone().into_os_string());
        let mut cmd = rocpack();
        cmd.args(&args);
        let out = output_of(&mut cmd);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: stderr:\n{stderr}",
            describe(&cmd)
        );
        // Nothing but the documented warning for the unclassified fixture.
        let unclassified: Vec<String> = manifest()
            .into_iter()
            .filter(|f| f.kind == "unclassified")
            .map(|f| f.name().to_owned())
            .collect();
        for line in stderr.lines() {
            assert!(
                line.starts_with("warning[unclassified-gpu-code]: ")
                    && unclassified
                        .iter()
                        .any(|n| line.contains(&format!("/{n}: "))),
                "{}: stderr:\n{stderr}",
                describe(&cmd)
            );
        }
        let rows = json_lines(&String::from_utf8(out.stdout).unwrap());
        // Every fixture appears, with as many rows as when listed on its own.
        for f in manifest() {
            let n = rows
                .iter()
                .filter(|r| {
                    Path::new(get_str(r, "file")).file_name()
                        == Some(std::ffi::OsStr::new(f.name()))
                })
                .count();
            if f.kind == "unclassified" || f.kind == "embedded-code" {
                assert_eq!(
                    n, 0,
                    "{}: rows for unclassified code or code in .text",
                    f.rel
                );
                continue;
            }
            let mut one: Vec<std::ffi::OsString> = vec!["list".into(), "--json".into()];
            one.extend(extra.iter().map(Into::into));
            one.push(f.path().into_os_string());
            let alone = json_lines(&rocpack_ok(&one)).len();
            assert_eq!(
                n, alone,
                "{}: rows in the directory listing vs alone ({extra:?})",
                f.rel
            );
            assert!(alone > 0, "{}: no rows", f.rel);
        }
    }
    // The text listing too: nothing on stderr but the unclassified fixture's one warning.
    let mut cmd = rocpack();
    cmd.arg("list").arg(&dir);
    let out = output_of(&mut cmd);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.lines().count() == 1
            && stderr.starts_with("warning[unclassified-gpu-code]: ")
            && stderr.contains("/libunclassified.so: "),
        "{stderr}"
    );
}

/// `bundle_offset` is documented as the file offset of the innermost bundle/CCOB/section/member holding
/// the entry. For `-fgpu-rdc` objects each entry is held by its own `__CLANG_OFFLOAD_BUNDLE__<id>` section.
#[test]
fn rdc_bundle_offset_is_the_section_offset() {
    let ctx = &mut Ctx::new();
    // Standalone object.
    let obj = fixture("rdc1.o");
    let secs = readelf_sections(&obj);
    for r in list_all(&obj, false) {
        let s = section(
            &secs,
            &format!("__CLANG_OFFLOAD_BUNDLE__{}", get_str(&r, "entry_id")),
        )
        .unwrap();
        assert_eq!(opt_u64(&r, "bundle_offset"), Some(s.offset), "rdc1.o: {r}");
    }
    // The same object inside librdc.a.
    let ar = fixture("librdc.a");
    let rows = list_all(&ar, false);
    for (name, member, base) in archive_members(ctx, &ar) {
        let secs = readelf_sections(&member);
        for r in rows
            .iter()
            .filter(|r| get_str(r, "container").starts_with(&format!("member {name} > ")))
        {
            let s = section(
                &secs,
                &format!("__CLANG_OFFLOAD_BUNDLE__{}", get_str(r, "entry_id")),
            )
            .unwrap();
            assert_eq!(
                opt_u64(r, "bundle_offset"),
                Some(base + s.offset),
                "librdc.a: {r}"
            );
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Tests: extract's target matching against clang-offload-bundler-19's
// ------------------------------------------------------------------------------------------------

/// Target IDs valid for clang 19: sramecc/xnack only on processors that have them.
fn requested_targets() -> Vec<String> {
    let mut out = vec![
        "gfx1030".to_owned(),
        "gfx1100".to_owned(),
        "gfx1031".to_owned(),
    ];
    for p in ["gfx90a", "gfx906", "gfx908", "gfx942"] {
        for s in ["", ":sramecc+", ":sramecc-"] {
            for x in ["", ":xnack+", ":xnack-"] {
                out.push(format!("{p}{s}{x}"));
            }
        }
    }
    out
}

/// `rocpack extract --target T`: the files written (exit 0) or none (exit 1, nothing matched).
fn rocpack_extract_files(path: &Path, target: &str, dir: &Path) -> Vec<Vec<u8>> {
    let mut cmd = rocpack();
    cmd.args(["extract", "--json", "-q", "--target", target, "-o"])
        .arg(dir)
        .arg(path);
    let out = output_of(&mut cmd);
    match out.status.code() {
        Some(0) => json_lines(&String::from_utf8(out.stdout).unwrap())
            .iter()
            .map(|o| std::fs::read(get_str(o, "output")).unwrap())
            .collect(),
        Some(1) => {
            assert!(
                out.stdout.is_empty(),
                "{}: exit 1 but printed files",
                describe(&cmd)
            );
            Vec::new()
        }
        // A target ID with a feature its processor lacks is a usage error (as in clang).
        Some(2) if String::from_utf8_lossy(&out.stderr).contains("is not a valid target ID") => {
            assert!(
                out.stdout.is_empty(),
                "{}: exit 2 but printed files",
                describe(&cmd)
            );
            Vec::new()
        }
        _ => panic!(
            "{} exited with {}: {}",
            describe(&cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// clang-offload-bundler-19 --unbundle for one target: Some(bytes) or None ("Can't find bundles").
fn bundler_extract(input: &Path, target: &str, out: &Path) -> Option<Vec<u8>> {
    let mut cmd = llvm("clang-offload-bundler-19");
    cmd.arg("--unbundle")
        .arg("--type=o")
        .arg(format!("--input={}", input.display()))
        .arg(format!("--targets=hipv4-amdgcn-amd-amdhsa--{target}"))
        .arg(format!("--output={}", out.display()));
    let o = output_of(&mut cmd);
    if o.status.success() {
        Some(std::fs::read(out).unwrap())
    } else {
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains("Can't find bundles"), "{}: {e}", describe(&cmd));
        None
    }
}

#[test]
fn extract_matches_targets_as_clang_offload_bundler_does() {
    let tmp = tempdir();
    let mut n = 0;
    for f in [
        "tu1.hipfb",
        "tu1-gfx1030.hipfb",
        "tu2.hipfb",
        "tu2-compressed.hipfb",
        "ccob-v2-zstd.hipfb",
    ] {
        let path = fixture(f);
        for t in requested_targets() {
            n += 1;
            let llvm_out = tmp.path().join(format!("{n}.llvm"));
            let dir = tmp.path().join(format!("{n}.rocpack"));
            let theirs = bundler_extract(&path, &t, &llvm_out);
            let ours = rocpack_extract_files(&path, &t, &dir);
            match theirs {
                None => assert!(
                    ours.is_empty(),
                    "{f} --target {t}: clang-offload-bundler-19 finds no compatible entry, rocpack wrote {} file(s)",
                    ours.len()
                ),
                Some(b) => {
                    assert_eq!(
                        ours.len(),
                        1,
                        "{f} --target {t}: clang-offload-bundler-19 extracts one entry"
                    );
                    assert_same_bytes(&ours[0], &b, &format!("{f} --target {t}"));
                }
            }
        }
    }
}

/// clang's parseTargetID rejects a feature the processor does not have (gfx1030 and gfx1100 have no xnack),
/// so clang-offload-bundler-19 finds no compatible entry for `gfx1030:xnack+`.
#[test]
fn extract_does_not_match_features_the_processor_lacks() {
    let tmp = tempdir();
    for (f, t) in [
        ("tu1.hipfb", "gfx1030:xnack+"),
        ("tu1.hipfb", "gfx1030:sramecc-"),
        ("tu2.hipfb", "gfx1100:xnack-"),
    ] {
        let path = fixture(f);
        let llvm_out = tmp.path().join(format!("{}.llvm", sanitize(t)));
        assert!(
            bundler_extract(&path, t, &llvm_out).is_none(),
            "{f} {t}: clang-offload-bundler-19 extracted something"
        );
        let ours = rocpack_extract_files(&path, t, &tmp.path().join(sanitize(t)));
        assert!(
            ours.is_empty(),
            "{f} --target {t}: rocpack wrote {} file(s)",
            ours.len()
        );
    }
}

// ------------------------------------------------------------------------------------------------
// Tests: CCOB headers and hashes in `show`
// ------------------------------------------------------------------------------------------------

/// MD5 of a file with coreutils' md5sum, as the 16 digest bytes.
fn md5(path: &Path) -> [u8; 16] {
    let mut cmd = std::process::Command::new("md5sum");
    cmd.arg(path);
    let text = run_ok(&mut cmd);
    let hexd = text.split_whitespace().next().unwrap();
    let mut out = [0u8; 16];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hexd[2 * i..2 * i + 2], 16).unwrap();
    }
    out
}

#[test]
fn ccob_headers_and_hashes_in_show_match_the_bytes() {
    let mut ctx = Ctx::new();
    let mut seen = 0;
    for f in manifest().into_iter().filter(|f| f.kind != "unclassified") {
        let path = f.path();
        let data = std::fs::read(&path).unwrap();
        let shown = show_kernels(&path);
        for c in shown["containers"].as_array().unwrap() {
            if get_str(c, "type") != "ccob" {
                continue;
            }
            let Some(fo) = opt_u64(c, "file_offset") else {
                continue;
            };
            seen += 1;
            let what = format!("{} CCOB at {fo:#x}", f.rel);
            let b = &data[fo as usize..];
            let h = parse_ccob_header(b).unwrap_or_else(|| panic!("{what}: no CCOB header there"));
            assert_eq!(
                get_u64(c, "version"),
                u64::from(h.version),
                "{what}: version"
            );
            assert_eq!(
                get_str(c, "method"),
                if h.method == 0 { "zlib" } else { "zstd" },
                "{what}: method"
            );
            assert_eq!(opt_u64(c, "total_size"), h.total_size, "{what}: total_size");
            assert_eq!(
                get_u64(c, "uncompressed_size"),
                h.uncompressed_size,
                "{what}: uncompressed_size"
            );
            assert_eq!(
                get_str(c, "hash"),
                format!("{:016x}", h.hash),
                "{what}: hash"
            );
            // Decompress with the bundler and hash: the stored hash is LE u64 of MD5[0..8].
            let blob = match h.total_size {
                Some(t) => &b[..t as usize],
                None => b,
            };
            let blob = if h.version == 3 {
                ccob_v3_as_v2(blob)
            } else {
                blob.to_vec()
            };
            let input = ctx.write(&format!("{what}.ccob"), &blob);
            let out = ctx.path(&format!("{what}.bundle"));
            let d = bundler_decompress(&input, &out);
            assert_eq!(
                d.len() as u64,
                h.uncompressed_size,
                "{what}: decompressed size"
            );
            let digest = md5(&out);
            let computed = u64::from_le_bytes(digest[..8].try_into().unwrap());
            assert_eq!(computed, h.hash, "{what}: fixture's stored hash");
            if !c["hash_ok"].is_null() {
                assert_eq!(
                    get_bool(c, "hash_ok"),
                    computed == h.hash,
                    "{what}: hash_ok"
                );
            }
        }
    }
    // 6 single make-ccob files, 2 x 2 back-to-back ones, tu2-compressed.hipfb, tu1-compressed.o, 2 + 2 in libraries.
    assert!(seen >= 16, "only {seen} CCOBs seen");
}

#[test]
fn a_wrong_ccob_hash_is_reported() {
    let tmp = tempdir();
    let mut data = std::fs::read(fixture("ccob-v2-zstd.hipfb")).unwrap();
    data[16] ^= 0xff; // first byte of the v2 hash
    let p = tmp.path().join("bad-hash.hipfb");
    std::fs::write(&p, &data).unwrap();
    let mut cmd = rocpack();
    cmd.args(["show", "--json"]).arg(&p);
    let out = output_of(&mut cmd);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &v["containers"][0];
    assert_eq!(get_str(c, "type"), "ccob");
    assert_eq!(c["hash_ok"], Value::Bool(false), "{c}");
    assert!(
        v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| get_str(d, "code").contains("hash")),
        "no hash diagnostic: {}",
        v["diagnostics"]
    );
    // The entries are still listed, as clang (which ignores the hash) would unbundle them.
    let rows = json_lines(
        &String::from_utf8(
            output_of(rocpack().args(["list", "--json", "--verify", "-q"]).arg(&p)).stdout,
        )
        .unwrap(),
    );
    assert_eq!(rows.len(), 2);
}
