//! Behaviours of the walk on doctored copies of the clang-19 fixtures: each test changes a
//! few bytes the way a corrupt or unusual file would and checks the exact diagnostic.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::Path;

use rocpack_offload::{Inspection, Options, Severity, ccob, inspect};

fn fixture(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/bin")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn codes(i: &Inspection) -> Vec<&'static str> {
    i.diagnostics.iter().map(|d| d.code.as_str()).collect()
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("needle present")
}

fn device_targets(i: &Inspection) -> Vec<String> {
    i.code_objects
        .iter()
        .filter(|c| !c.host)
        .filter_map(|c| c.target.as_ref().map(ToString::to_string))
        .collect()
}

#[test]
fn entry_id_that_disagrees_with_the_elf_header_is_reported() {
    let mut data = fixture("tu1.hipfb");
    // Rename the gfx1030 entry to gfx1031 (same length); the code object still says gfx1030.
    let at = find(&data, b"hipv4-amdgcn-amd-amdhsa--gfx1030");
    data[at + 31] = b'1';
    let i = inspect(&data, &Options::default());
    assert_eq!(codes(&i), ["entry-target-mismatch"]);
    let d = &i.diagnostics[0];
    assert_eq!(d.severity, Severity::Warning);
    assert!(
        d.message.contains("names gfx1031") && d.message.contains("says gfx1030"),
        "{}",
        d.message
    );
    assert!(
        device_targets(&i).contains(&"gfx1030".to_owned()),
        "the target comes from the header"
    );
}

#[test]
fn ccob_hash_mismatch_is_a_warning_not_an_error() {
    let mut data = fixture("ccob-v2-zstd.hipfb");
    data[16] ^= 0xff;
    let full = Options {
        decompress: true,
        ..Options::default()
    };
    let i = inspect(&data, &full);
    assert_eq!(codes(&i), ["ccob-hash-mismatch"]);
    assert_eq!(device_targets(&i).len(), 2);
    // Without full decompression the hash is not checked (clang does not check it at all).
    assert!(inspect(&data, &Options::default()).diagnostics.is_empty());
    // Nor when a reading asks not to (`show --kernels`'s second reading of a file).
    let unchecked = inspect(
        &data,
        &Options {
            check_hashes: false,
            ..full
        },
    );
    assert!(unchecked.diagnostics.is_empty());
    assert_eq!(device_targets(&unchecked).len(), 2);
    let hash_ok = |i: &rocpack_offload::Inspection| {
        i.containers.iter().find_map(|c| match c.kind {
            rocpack_offload::ContainerKind::Ccob { hash_ok, .. } => Some(hash_ok),
            _ => None,
        })
    };
    assert_eq!(hash_ok(&i), Some(Some(false)));
    assert_eq!(hash_ok(&unchecked), Some(None));
    // The hash's finding comes before those of the bundle inside, though the hash is known
    // only once the stream has been read past every entry.
    let mut bundle = fixture("tu1.hipfb");
    let at = find(&bundle, b"hipv4-amdgcn-amd-amdhsa--gfx1030");
    bundle[at + 31] = b'1';
    let mut data = ccob::compress(&bundle, 3, ccob::Method::Zstd, 3).unwrap();
    data[24] ^= 0xff;
    let i = inspect(&data, &full);
    assert_eq!(codes(&i), ["ccob-hash-mismatch", "entry-target-mismatch"]);
}

#[test]
fn ccob_declaring_more_than_the_ceiling_is_refused() {
    let data = fixture("ccob-v3-zstd.hipfb");
    let h = ccob::CcobHeader::parse(&data).expect("header");
    let tight = Options {
        decompress: true,
        max_decompressed: h.uncompressed_size - 1,
        ..Options::default()
    };
    let i = inspect(&data, &tight);
    assert!(i.has_errors());
    assert!(
        i.diagnostics[0].message.contains("decompression limit"),
        "{:?}",
        i.diagnostics
    );
    let mut claimed = data.clone();
    claimed[16..24].copy_from_slice(&(1u64 << 40).to_le_bytes());
    for opts in [
        Options::default(),
        Options {
            decompress: true,
            ..Options::default()
        },
    ] {
        let i = inspect(&claimed, &opts);
        assert!(i.has_errors(), "{:?}", i.diagnostics);
    }
}

#[test]
fn consecutive_ccobs_are_delimited_by_their_sizes() {
    for name in ["ccob-two-v2-zstd.hipfb", "ccob-two-v1-zlib.hipfb"] {
        let i = inspect(&fixture(name), &Options::default());
        assert!(i.diagnostics.is_empty(), "{name}: {:?}", i.diagnostics);
        assert_eq!(
            device_targets(&i),
            [
                "gfx1030",
                "gfx90a:xnack+",
                "gfx1100",
                "gfx906:sramecc-:xnack-"
            ],
            "{name}"
        );
    }
}

#[test]
fn bundle_no_wrapper_points_to_is_found_and_reported() {
    let mut data = fixture("lib3tu-bfd.so");
    // Break the magic of the last wrapper: its bundle is then found by the aligned-end probe.
    let seg = find(&data, &[0x46, 0x50, 0x49, 0x48, 1, 0, 0, 0]);
    let third = seg + 2 * 24;
    assert_eq!(&data[third..third + 4], &[0x46, 0x50, 0x49, 0x48]);
    data[third] = 0;
    let i = inspect(&data, &Options::default());
    assert_eq!(codes(&i), ["bad-wrapper", "unreferenced-bundle"]);
    assert_eq!(device_targets(&i).len(), 5, "all bundles still read");
}

#[test]
fn without_wrappers_the_fat_binary_is_walked_sequentially() {
    let mut data = fixture("lib3tu-bfd.so");
    let seg = find(&data, &[0x46, 0x50, 0x49, 0x48, 1, 0, 0, 0]);
    for w in 0..3 {
        data[seg + w * 24] = 0;
    }
    let i = inspect(&data, &Options::default());
    assert_eq!(codes(&i), ["bad-wrapper", "bad-wrapper", "bad-wrapper"]);
    assert_eq!(device_targets(&i).len(), 5);
}

#[test]
fn relocations_are_used_when_the_in_place_pointer_is_zero() {
    // lld leaves the in-place value 0 and puts the pointer in R_X86_64_RELATIVE addends.
    let data = fixture("lib3tu-lld.so");
    let i = inspect(&data, &Options::default());
    assert!(i.diagnostics.is_empty(), "{:?}", i.diagnostics);
    assert_eq!(device_targets(&i).len(), 5);
    // The same with the file at hand: the relocation table is then read with pread.
    let mem: &[u8] = &data;
    let opts = Options {
        file: Some(&mem),
        ..Options::default()
    };
    let i = inspect(&data, &opts);
    assert!(i.diagnostics.is_empty(), "{:?}", i.diagnostics);
    assert_eq!(device_targets(&i).len(), 5);
}

#[test]
fn rdc_library_wrappers_are_deduplicated() {
    let i = inspect(&fixture("librdc.so"), &Options::default());
    assert!(i.diagnostics.is_empty(), "{:?}", i.diagnostics);
    let bundles = i
        .containers
        .iter()
        .filter(|c| matches!(c.kind, rocpack_offload::ContainerKind::Bundle { .. }))
        .count();
    assert_eq!(bundles, 1);
}

#[test]
fn overlapping_entries_are_reported() {
    let mut data = fixture("tu1.hipfb");
    // Point entry #2's offset at entry #1's bytes.
    let entries = 32;
    let first_len =
        u64::from_le_bytes(data[entries + 16..entries + 24].try_into().expect("8")) as usize;
    let second = entries + 24 + first_len;
    let third = second
        + 24
        + u64::from_le_bytes(data[second + 16..second + 24].try_into().expect("8")) as usize;
    let second_offset = data[second..second + 8].to_vec();
    data[third..third + 8].copy_from_slice(&second_offset);
    let i = inspect(&data, &Options::default());
    assert!(
        codes(&i).contains(&"overlapping-entries"),
        "{:?}",
        i.diagnostics
    );
}

#[test]
fn stripped_non_pie_executable_is_read_through_read_only_wrappers() {
    let mut data = fixture("exe-nopie");
    // Drop the section headers: e_shoff, e_shnum, e_shstrndx = 0.
    data[40..48].fill(0);
    data[60..64].fill(0);
    let i = inspect(&data, &Options::default());
    assert!(i.diagnostics.is_empty(), "{:?}", i.diagnostics);
    assert_eq!(device_targets(&i), ["gfx1030"]);
}

fn pe_fixture(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/pe")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A zip member stored at an odd offset hands the walk a slice at an odd address: the PE headers
/// must be read without alignment (they are in `object` only with its `unaligned` feature).
#[test]
fn pe_image_at_an_odd_address_reads_the_same() {
    let data = pe_fixture("two-tu.dll");
    let mut shifted = vec![0u8; data.len() + 1];
    shifted[1..].copy_from_slice(&data);
    let a = inspect(&data, &Options::default());
    let b = inspect(&shifted[1..], &Options::default());
    assert!(a.diagnostics.is_empty(), "{:?}", a.diagnostics);
    assert!(b.diagnostics.is_empty(), "{:?}", b.diagnostics);
    assert_eq!(device_targets(&a), ["gfx1030", "gfx90a:xnack+", "gfx1100"]);
    assert_eq!(device_targets(&a), device_targets(&b));
}

/// The wrapper section of a PE32 image holds 16-byte records; one cut short is reported and the
/// pointer of the whole record before it is still followed.
#[test]
fn pe32_wrappers_are_16_bytes() {
    let mut data = pe_fixture("gfx1100-pe32.dll");
    let i = inspect(&data, &Options::default());
    assert!(i.diagnostics.is_empty(), "{:?}", i.diagnostics);
    assert_eq!(device_targets(&i), ["gfx1100"]);
    // .hipFatB: VirtualSize 0x10 in the section header; make it 0x14.
    let hdr = find(&data, b".hipFatB");
    assert_eq!(data[hdr + 8..hdr + 12], [0x10, 0, 0, 0]);
    data[hdr + 8] = 0x14;
    let i = inspect(&data, &Options::default());
    assert_eq!(codes(&i), ["wrapper-table-size"]);
    assert_eq!(device_targets(&i), ["gfx1100"]);
}

/// Without `.hip_fat` (a linker that merged it into another section), the bundles are read where
/// the wrappers point.
#[test]
fn pe_wrappers_are_followed_into_another_section() {
    let mut data = pe_fixture("two-tu.dll");
    let hdr = find(&data, b".hip_fat");
    data[hdr..hdr + 8].copy_from_slice(b".rdata2\0");
    let i = inspect(&data, &Options::default());
    assert!(i.diagnostics.is_empty(), "{:?}", i.diagnostics);
    assert_eq!(device_targets(&i), ["gfx1030", "gfx90a:xnack+", "gfx1100"]);
    assert_eq!(
        i.location(i.code_objects[0].container),
        ".rdata2 (found through .hipFatB) > bundle #0"
    );
}

/// A bundle with each entry at the offset given (the table as clang writes it, then zeros up to
/// each entry).
fn bundle_at(entries: &[(&str, &[u8], u64)]) -> Vec<u8> {
    let mut out = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    out.extend((entries.len() as u64).to_le_bytes());
    for (id, data, at) in entries {
        out.extend(at.to_le_bytes());
        out.extend((data.len() as u64).to_le_bytes());
        out.extend((id.len() as u64).to_le_bytes());
        out.extend(id.as_bytes());
    }
    for (_, data, at) in entries {
        let at = *at as usize;
        if out.len() < at + data.len() {
            out.resize(at + data.len(), 0);
        }
        out[at..at + data.len()].copy_from_slice(data);
    }
    out
}

/// A spill buffer in memory (rocpack-scan's is a temporary file): frames whose window does not
/// fit the window budget are decoded into it, and their entries read from it in place.
/// It counts the buffers it made; with `fail`, each reports a fault once `FAIL` is set (as a
/// page of a temporary file that cannot be read back would).
struct MemSpill {
    made: std::sync::atomic::AtomicUsize,
    fail: bool,
}
struct MemBuffer(Vec<u8>, bool);
static FAIL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
impl MemSpill {
    fn new(fail: bool) -> Self {
        MemSpill {
            made: 0.into(),
            fail,
        }
    }
}
impl ccob::Spill for MemSpill {
    fn buffer(&self, len: usize) -> std::io::Result<Box<dyn ccob::SpillBuffer>> {
        self.made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Box::new(MemBuffer(vec![0; len], self.fail)))
    }
}
impl ccob::SpillBuffer for MemBuffer {
    fn bytes(&mut self) -> &mut [u8] {
        &mut self.0
    }
    fn view(&self) -> &[u8] {
        &self.0
    }
    fn release(&mut self, _below: usize) {}
    fn fault(&self) -> Option<u64> {
        (self.1 && FAIL.load(std::sync::atomic::Ordering::Relaxed)).then_some(12_345)
    }
}

/// What a full reading hands the sink: (entry ID, the entry's bytes), in the order given.
fn entries_seen(
    data: &[u8],
    file: Option<&dyn rocpack_offload::ReadAt>,
) -> (Inspection, Vec<(String, Vec<u8>)>) {
    entries_seen_spilling(data, file, None)
}

fn entries_seen_spilling(
    data: &[u8],
    file: Option<&dyn rocpack_offload::ReadAt>,
    spill: Option<&dyn ccob::Spill>,
) -> (Inspection, Vec<(String, Vec<u8>)>) {
    let opts = Options {
        metadata: true,
        decompress: true,
        file,
        spill,
        ..Options::default()
    };
    let mut seen = Vec::new();
    let mut sink = |_: &Inspection, c: &rocpack_offload::CodeObject, bytes: &[u8]| {
        seen.push((c.entry_id.clone().unwrap_or_default(), bytes.to_vec()));
    };
    let i = rocpack_offload::inspect_with(data, &opts, Some(&mut sink));
    (i, seen)
}

/// The code objects of tu1.hipfb (clang-19, gfx1030 and gfx90a) with their entry IDs.
fn tu1_entries() -> Vec<(String, Vec<u8>)> {
    let data = fixture("tu1.hipfb");
    let h = rocpack_offload::bundle::parse(&data, true).unwrap();
    h.entries
        .iter()
        .map(|e| {
            let (o, s) = (e.offset as usize, e.size as usize);
            (e.id.raw().to_owned(), data[o..o + s].to_vec())
        })
        .collect()
}

#[test]
fn a_ccob_read_whole_hands_over_every_entry_in_any_layout() {
    let entries = tu1_entries();
    let ids: Vec<&str> = entries.iter().map(|(id, _)| id.as_str()).collect();
    let (a, b) = (&entries[1].1, &entries[2].1);
    assert!(a.len() > 1000 && b.len() > 1000, "two real code objects");
    let tu1 = fixture("tu1.hipfb");
    // The compressed reading decodes the table from a 16 KiB prefix: an entry inside it, one
    // across its end, one far beyond; in the table's order, reversed, and overlapping.
    let layouts: Vec<(&str, Vec<u8>)> = vec![
        ("as clang writes it", fixture("tu1.hipfb")),
        (
            "across the prefix's end",
            bundle_at(&[
                (ids[0], b"", 0),
                (ids[1], a, 4096),
                (ids[2], b, (16 << 10) - 100),
            ]),
        ),
        (
            "deep, with a gap",
            bundle_at(&[(ids[0], b"", 0), (ids[1], a, 4096), (ids[2], b, 3 << 20)]),
        ),
        // A window over the 16 MiB budget (ccob::WINDOWS): with a spill buffer, the frame is
        // decoded into it and the entries are read where they were decoded.
        (
            "past the window budget",
            bundle_at(&[(ids[0], b"", 0), (ids[1], a, 4096), (ids[2], b, 20 << 20)]),
        ),
        (
            "in reverse order",
            bundle_at(&[(ids[0], b"", 0), (ids[1], a, 1 << 20), (ids[2], b, 4096)]),
        ),
        (
            "overlapping",
            bundle_at(&[(ids[0], b"", 0), (ids[1], a, 4096), (ids[2], b, 4096 + 64)]),
        ),
        // Two entries that are the same bundle, of the same length: each is walked (the
        // walk knows nested data by its address, and one buffer takes entry after entry).
        (
            "entries that are bundles",
            bundle_at(&[
                (ids[0], b"", 0),
                (ids[1], &tu1, 4096),
                (
                    ids[2],
                    &tu1,
                    (4096 + tu1.len() as u64).next_multiple_of(4096),
                ),
            ]),
        ),
    ];
    for (what, plain) in &layouts {
        let (want_i, want) = entries_seen(plain, None);
        for version in [2, 3] {
            let ccob = ccob::compress(plain, version, ccob::Method::Zstd, 3).unwrap();
            let mem: &[u8] = &ccob;
            let pread: &dyn rocpack_offload::ReadAt = &mem;
            let mem_spill = MemSpill::new(false);
            let spill: &dyn ccob::Spill = &mem_spill;
            for (how, file, spill) in [
                ("from memory", None, None),
                ("with pread", Some(pread), None),
                ("from memory with a spill buffer", None, Some(spill)),
                ("with pread and a spill buffer", Some(pread), Some(spill)),
            ] {
                let (i, got) = entries_seen_spilling(&ccob, file, spill);
                let ctx = format!("{what}, CCOB v{version}, {how}");
                assert_eq!(got.len(), want.len(), "{ctx}");
                for ((gid, gb), (wid, wb)) in got.iter().zip(&want) {
                    assert_eq!(gid, wid, "{ctx}");
                    assert!(gb == wb, "{ctx}: the bytes of {gid} differ");
                }
                assert_eq!(codes(&i), codes(&want_i), "{ctx}");
                assert_eq!(device_targets(&i), device_targets(&want_i), "{ctx}");
                let hash_ok = i.containers.iter().find_map(|c| match &c.kind {
                    rocpack_offload::ContainerKind::Ccob { hash_ok, .. } => Some(*hash_ok),
                    _ => None,
                });
                assert_eq!(hash_ok, Some(Some(true)), "{ctx}");
            }
            // Only the frame past the budget (20 MiB, single-segment) was decoded into it, once
            // from memory and once with pread.
            let spilled = mem_spill.made.swap(0, std::sync::atomic::Ordering::Relaxed);
            let want = if *what == "past the window budget" {
                2
            } else {
                0
            };
            assert_eq!(spilled, want, "{what}, CCOB v{version}");
        }
    }
}

/// A temporary file that fails under the walk (a page that cannot be read back reads as zeros
/// from there on) is an error for the bundle, even when the entry being read is its last.
#[test]
fn a_spill_file_that_fails_under_the_walk_stops_the_bundle_with_an_error() {
    let entries = tu1_entries();
    let ids: Vec<&str> = entries.iter().map(|(id, _)| id.as_str()).collect();
    let (a, b) = (&entries[1].1, &entries[2].1);
    let plain = bundle_at(&[(ids[0], b"", 0), (ids[1], a, 4096), (ids[2], b, 20 << 20)]);
    let ccob = ccob::compress(&plain, 3, ccob::Method::Zstd, 3).unwrap();
    let mem: &[u8] = &ccob;
    let spill = MemSpill::new(true);
    let opts = Options {
        metadata: true,
        decompress: true,
        file: Some(&mem),
        spill: Some(&spill),
        ..Options::default()
    };
    let mut seen = Vec::new();
    let mut sink = |_: &Inspection, c: &rocpack_offload::CodeObject, _: &[u8]| {
        let id = c.entry_id.clone().unwrap_or_default();
        // The file fails while the last entry is walked: nothing reads the stream after it.
        if id == ids[2] {
            FAIL.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        seen.push(id);
    };
    let i = rocpack_offload::inspect_with(&ccob, &opts, Some(&mut sink));
    FAIL.store(false, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(spill.made.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert_eq!(seen, ids);
    assert!(
        i.diagnostics.iter().any(|d| d.severity == Severity::Error
            && d.message.contains(
                "temporary file holding the decoded bundle failed at 12345 bytes while entry 2"
            )),
        "{:?}",
        i.diagnostics
    );
}

#[test]
fn a_ccob_that_breaks_after_its_first_entry_keeps_that_entry_and_says_why() {
    let entries = tu1_entries();
    let ids: Vec<&str> = entries.iter().map(|(id, _)| id.as_str()).collect();
    let (a, b) = (&entries[1].1, &entries[2].1);
    // The second entry 8 MiB further on: its frame is incompressible random bytes, whose
    // blocks are stored raw, so a cut lands after the first entry was produced.
    let mut noise = vec![0u8; 8 << 20];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for v in noise.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.copy_from_slice(&x.to_le_bytes()[..v.len()]);
    }
    let noise_at = (4096 + a.len()).next_multiple_of(4096);
    let b_at = (noise_at + noise.len() + 4096) as u64;
    let mut plain = bundle_at(&[(ids[0], b"", 0), (ids[1], a, 4096), (ids[2], b, b_at)]);
    plain[noise_at..noise_at + noise.len()].copy_from_slice(&noise);
    let mut ccob = ccob::compress(&plain, 3, ccob::Method::Zstd, 3).unwrap();
    // Cut the frame in the middle of the noise (a CCOB v3's total size is at offset 8).
    let half = ccob.len() / 2;
    ccob.truncate(half);
    ccob[8..16].copy_from_slice(&(half as u64).to_le_bytes());
    let (i, got) = entries_seen(&ccob, None);
    assert!(codes(&i).contains(&"malformed-ccob"), "{:?}", codes(&i));
    assert!(
        i.diagnostics.iter().any(|d| d.severity == Severity::Error && d.message.contains("corrupt compressed data")),
        "{:?}",
        i.diagnostics
    );
    let got_ids: Vec<&str> = got.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        got_ids,
        [ids[0], ids[1]],
        "the (empty host) entries before the break, complete"
    );
    assert!(got[1].1 == *a);
    let hash_ok = i.containers.iter().find_map(|c| match &c.kind {
        rocpack_offload::ContainerKind::Ccob { hash_ok, .. } => Some(*hash_ok),
        _ => None,
    });
    assert_eq!(
        hash_ok,
        Some(None),
        "no hash for a frame that does not decode"
    );
}
