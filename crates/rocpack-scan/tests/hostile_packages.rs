//! Hostile packages read in bounded memory: zip members that inflate to gigabytes, a member
//! named by eight central-directory records, a member that inflates past its declared size,
//! members whose data overlap, and a tar with huge sparse members. Every package is built here
//! at run time and is small on disk (the zeros are deflate runs or holes).
//!
//! Each member starts with a real HIP library (tests/fixtures/bin/lib3tu-lld.so) followed by
//! zeros, so it is kept for inspection and must give exactly the code objects of the library
//! itself. Memory is judged by the peak resident size of this test process (`VmHWM`), which
//! must stay under 128 MiB however many of these tests run at once; before the bound, the zip
//! test alone reached 6 GB.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

use flate2::{Compress, Compression, FlushCompress, Status};
use rocpack_scan::package::read_package_with;
use rocpack_scan::{FileResult, ScanOptions, inspect_file, package_kind};

const GIB: u64 = 1 << 30;
/// Each member is built from chunks of this size.
const CHUNK: usize = 1 << 20;
/// The most this process may ever hold resident.
const RSS_LIMIT_KIB: u64 = 128 * 1024;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bin/lib3tu-lld.so")
}

/// The code objects of the fixture read as a file, to compare members with.
fn fixture_code_objects() -> Vec<rocpack_offload::CodeObject> {
    let r = inspect_file(&fixture(), &ScanOptions::default(), None);
    let i = r.inspection.expect("fixture inspected");
    assert!(!i.code_objects.is_empty(), "the fixture holds code objects");
    i.code_objects
}

/// Peak resident size of this process so far, in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/self/status");
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn assert_bounded_memory(what: &str) {
    let peak = peak_rss_kib();
    assert!(
        peak <= RSS_LIMIT_KIB,
        "{what}: peak RSS {peak} KiB, over the {RSS_LIMIT_KIB} KiB bound"
    );
}

/// A member: the fixture, then zeros up to `size` bytes, as a raw deflate stream built from
/// fully flushed 1 MiB chunks (a chunk of zeros compresses to the same bytes every time, so
/// gigabytes cost one compression), with the member's CRC-32.
struct Deflated {
    data: Vec<u8>,
    crc: u32,
    size: u64,
}

fn deflate_chunk(c: &mut Compress, input: &[u8], flush: FlushCompress) -> Vec<u8> {
    let mut out = Vec::new();
    let start = c.total_in();
    loop {
        out.reserve(256 << 10);
        let taken = usize::try_from(c.total_in() - start).unwrap();
        let status = c.compress_vec(&input[taken..], &mut out, flush).unwrap();
        let taken = usize::try_from(c.total_in() - start).unwrap();
        // Done when all input is taken and the flush fitted in the room left.
        if taken == input.len() && (out.len() < out.capacity() || status == Status::StreamEnd) {
            return out;
        }
    }
}

fn deflated_member(size: u64) -> Deflated {
    let head = std::fs::read(fixture()).unwrap();
    assert!(head.len() < CHUNK);
    let mut first = head.clone();
    first.resize(CHUNK, 0);
    let zeros = vec![0u8; CHUNK];
    let mut c = Compress::new(Compression::best(), false);
    let mut data = deflate_chunk(&mut c, &first, FlushCompress::Full);
    let zero_chunk = deflate_chunk(&mut c, &zeros, FlushCompress::Full);
    let mut crc = flate2::Crc::new();
    crc.update(&first);
    let chunks = size / CHUNK as u64;
    assert_eq!(size % CHUNK as u64, 0);
    for _ in 1..chunks {
        data.extend_from_slice(&zero_chunk);
        crc.update(&zeros);
    }
    data.extend_from_slice(&deflate_chunk(&mut c, &[], FlushCompress::Finish));
    Deflated {
        data,
        crc: crc.sum(),
        size,
    }
}

/// A zip file written by hand, so that its records can lie.
#[derive(Default)]
struct Zip {
    bytes: Vec<u8>,
    central: Vec<u8>,
    records: u16,
}

impl Zip {
    /// Writes a local header and data; returns the header's offset.
    fn local(&mut self, name: &str, method: u16, crc: u32, data: &[u8], size: u64) -> u32 {
        let at = u32::try_from(self.bytes.len()).unwrap();
        let b = &mut self.bytes;
        b.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        b.extend_from_slice(&20u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&method.to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&crc.to_le_bytes());
        b.extend_from_slice(&u32::try_from(data.len()).unwrap().to_le_bytes());
        b.extend_from_slice(&u32::try_from(size).unwrap().to_le_bytes());
        b.extend_from_slice(&u16::try_from(name.len()).unwrap().to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(name.as_bytes());
        b.extend_from_slice(data);
        at
    }

    /// Adds a central-directory record.
    fn record(
        &mut self,
        name: &str,
        method: u16,
        crc: u32,
        compressed: u64,
        size: u64,
        local: u32,
    ) {
        let c = &mut self.central;
        c.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        c.extend_from_slice(&0x031eu16.to_le_bytes());
        c.extend_from_slice(&20u16.to_le_bytes());
        c.extend_from_slice(&0u16.to_le_bytes());
        c.extend_from_slice(&method.to_le_bytes());
        c.extend_from_slice(&[0; 4]);
        c.extend_from_slice(&crc.to_le_bytes());
        c.extend_from_slice(&u32::try_from(compressed).unwrap().to_le_bytes());
        c.extend_from_slice(&u32::try_from(size).unwrap().to_le_bytes());
        c.extend_from_slice(&u16::try_from(name.len()).unwrap().to_le_bytes());
        c.extend_from_slice(&[0; 8]);
        c.extend_from_slice(&(0o100_644u32 << 16).to_le_bytes());
        c.extend_from_slice(&local.to_le_bytes());
        c.extend_from_slice(name.as_bytes());
        self.records += 1;
    }

    /// A member written whole: local header, data, directory record.
    fn member(&mut self, name: &str, m: &Deflated) {
        let at = self.local(name, 8, m.crc, &m.data, m.size);
        self.record(name, 8, m.crc, m.data.len() as u64, m.size, at);
    }

    fn finish(mut self, path: &Path) {
        let cd_offset = u32::try_from(self.bytes.len()).unwrap();
        let cd_size = u32::try_from(self.central.len()).unwrap();
        self.bytes.extend_from_slice(&self.central);
        let b = &mut self.bytes;
        b.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&self.records.to_le_bytes());
        b.extend_from_slice(&self.records.to_le_bytes());
        b.extend_from_slice(&cd_size.to_le_bytes());
        b.extend_from_slice(&cd_offset.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        std::fs::write(path, &self.bytes).unwrap();
    }
}

/// Reads a package in place; returns its results and how many code objects reached the sink.
fn read(path: &Path, opts: &ScanOptions) -> (Vec<FileResult>, usize) {
    let kind = package_kind(path).expect("a package name");
    let sunk = Mutex::new(0usize);
    let sink =
        |_: &Path, _: &rocpack_offload::Inspection, _: &rocpack_offload::CodeObject, _: &[u8]| {
            *sunk.lock().unwrap() += 1;
        };
    let examined = AtomicUsize::new(0);
    let results = read_package_with(path, kind, opts, &|_| {}, &examined, Some(&sink));
    (results, sunk.into_inner().unwrap())
}

fn error_of(r: &FileResult) -> &str {
    r.io_error.as_deref().unwrap_or("")
}

fn assert_reads_as_fixture(r: &FileResult, size: u64, expected: &[rocpack_offload::CodeObject]) {
    assert!(
        r.io_error.is_none(),
        "{}: {}",
        r.path.display(),
        error_of(r)
    );
    assert_eq!(r.size, size, "{}", r.path.display());
    let i = r.inspection.as_ref().unwrap();
    // CodeObject has no PartialEq; its Debug form shows every field.
    assert_eq!(
        format!("{:?}", i.code_objects),
        format!("{expected:?}"),
        "{}",
        r.path.display()
    );
}

fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("rocpack-hostile-")
        .tempdir()
        .unwrap()
}

#[test]
fn zip_members_inflating_to_gigabytes_are_read_in_bounded_memory() {
    let dir = temp_dir();
    let wheel = dir.path().join("bomb-1.0-py3-none-any.whl");
    let member = deflated_member(2 * GIB);
    let mut zip = Zip::default();
    for n in 0..3 {
        zip.member(&format!("big{n}.so"), &member);
    }
    zip.finish(&wheel);
    assert!(std::fs::metadata(&wheel).unwrap().len() < 64 << 20);
    let expected = fixture_code_objects();
    let (results, sunk) = read(&wheel, &ScanOptions::default());
    assert_eq!(results.len(), 3);
    for r in &results {
        assert_reads_as_fixture(r, 2 * GIB, &expected);
    }
    assert_eq!(sunk, 3 * expected.len());
    assert_bounded_memory("three 2 GiB zip members");
}

#[test]
fn zip_member_named_by_eight_directory_records_is_read_once() {
    let dir = temp_dir();
    let wheel = dir.path().join("dup-1.0-py3-none-any.whl");
    let member = deflated_member(GIB);
    let mut zip = Zip::default();
    let at = zip.local("lib0.so", 8, member.crc, &member.data, member.size);
    for n in 0..8 {
        let name = format!("lib{n}.so");
        zip.record(
            &name,
            8,
            member.crc,
            member.data.len() as u64,
            member.size,
            at,
        );
    }
    zip.finish(&wheel);
    let expected = fixture_code_objects();
    let (results, sunk) = read(&wheel, &ScanOptions::default());
    // Every name is reported, with the same result ...
    let names: Vec<String> = results
        .iter()
        .map(|r| r.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let want: Vec<String> = (0..8).map(|n| format!("lib{n}.so")).collect();
    assert_eq!(names, want);
    for r in &results {
        assert_reads_as_fixture(r, GIB, &expected);
    }
    // ... but the data were inflated and inspected once: the sink saw one member's code.
    assert_eq!(sunk, expected.len());
    assert_bounded_memory("eight records for one member");
}

#[test]
fn zip_member_inflating_past_its_declared_size_is_an_error() {
    let dir = temp_dir();
    let wheel = dir.path().join("liar-1.0-py3-none-any.whl");
    let member = deflated_member(64 << 20);
    let mut zip = Zip::default();
    // The records say 1 MiB; the data inflate to 64 MiB.
    let at = zip.local("liar.so", 8, member.crc, &member.data, 1 << 20);
    zip.record(
        "liar.so",
        8,
        member.crc,
        member.data.len() as u64,
        1 << 20,
        at,
    );
    zip.finish(&wheel);
    let (results, sunk) = read(&wheel, &ScanOptions::default());
    assert_eq!(results.len(), 1);
    let e = error_of(&results[0]);
    assert!(e.contains("decompression bomb"), "{e}");
    assert!(e.contains("liar.so") && e.contains("file offset 0x"), "{e}");
    assert!(
        results[0]
            .path
            .to_string_lossy()
            .contains("liar-1.0-py3-none-any.whl!/liar.so")
    );
    assert_eq!(sunk, 0);
}

#[test]
fn zip_members_whose_data_overlap_are_errors() {
    let dir = temp_dir();
    let wheel = dir.path().join("overlap-1.0-py3-none-any.whl");
    let inner = deflated_member(1 << 20);
    // Member B (deflated) lies inside the stored data of member A, as in an overlapping zip
    // bomb: A's data are B's local header and data.
    let mut b_zip = Zip::default();
    b_zip.local("b.so", 8, inner.crc, &inner.data, inner.size);
    let a_data = b_zip.bytes;
    let mut a_crc = flate2::Crc::new();
    a_crc.update(&a_data);
    let mut zip = Zip::default();
    let a_at = zip.local("a.bin", 0, a_crc.sum(), &a_data, a_data.len() as u64);
    let b_at = a_at + 30 + 5;
    zip.record(
        "a.bin",
        0,
        a_crc.sum(),
        a_data.len() as u64,
        a_data.len() as u64,
        a_at,
    );
    zip.record(
        "b.so",
        8,
        inner.crc,
        inner.data.len() as u64,
        inner.size,
        b_at,
    );
    zip.finish(&wheel);
    let (results, _) = read(&wheel, &ScanOptions::default());
    let b = results
        .iter()
        .find(|r| r.path.to_string_lossy().ends_with("!/b.so"))
        .expect("b.so reported");
    let e = error_of(b);
    assert!(e.contains("overlap") && e.contains("a.bin"), "{e}");
}

/// A GNU tar holding `members` (name, size) as sparse files: the fixture, then a hole.
fn sparse_tar(dir: &Path, members: &[(&str, u64)]) -> PathBuf {
    let tree = dir.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let head = std::fs::read(fixture()).unwrap();
    for (name, size) in members {
        let mut f = std::fs::File::create(tree.join(name)).unwrap();
        f.write_all(&head).unwrap();
        f.set_len(*size).unwrap();
    }
    let out = dir.join("sparse.tar");
    let status = Command::new("tar")
        .args(["--sparse", "--format=gnu", "--sort=name", "-cf"])
        .arg(&out)
        .arg("-C")
        .arg(&tree)
        .arg(".")
        .status()
        .expect("GNU tar (scripts/install-deps.sh installs it)");
    assert!(status.success());
    std::fs::remove_dir_all(&tree).unwrap();
    out
}

#[test]
fn tar_with_huge_sparse_members_is_read_in_bounded_memory() {
    let dir = temp_dir();
    let tar = sparse_tar(dir.path(), &[("a.so", 3 * GIB), ("b.so", 64 * GIB)]);
    assert!(std::fs::metadata(&tar).unwrap().len() < 16 << 20);
    let expected = fixture_code_objects();
    let (results, _) = read(&tar, &ScanOptions::default());
    let find = |n: &str| {
        results
            .iter()
            .find(|r| r.path.to_string_lossy().ends_with(n))
            .unwrap_or_else(|| panic!("{n} reported: {results:?}"))
    };
    // Under --max-member: read (spilled to a sparse temporary file) and inspected as the
    // library itself.
    assert_reads_as_fixture(find("!/a.so"), 3 * GIB, &expected);
    // Over it: reported with the option to raise, not read.
    let e = error_of(find("!/b.so"));
    assert!(e.contains("--max-member"), "{e}");
    assert_bounded_memory("a tar with 3 GiB and 64 GiB sparse members");
}
