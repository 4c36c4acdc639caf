//! Hostile input: truncated fixtures, huge counts and sizes, pointers out of range, overlapping
//! and self-referential containers, deep nesting, random byte flips.
//!
//! The contract under test: `inspect()` never panics, returns within a time budget and never
//! allocates far beyond what the input justifies; broken input shows up as diagnostics.
//!
//! Every `inspect()` runs on a watchdog thread (see [`Guard`]): a panic is reported with the input
//! that caused it, and a call that does not return within [`BUDGET`] fails the test instead of
//! hanging it.
//!
//! The `bug_*` and `gap_*` tests reproduce defects found while this file was written (they were
//! `#[ignore]`d until fixed): exponential or quadratic work and memory from small inputs, and
//! truncations that lost code objects without an error. Tests that measure memory or may hang
//! run in a child process of their own (see [`isolated`]).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::collections::BTreeSet;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread;
use std::time::{Duration, Instant};

use rocpack_offload::elf::Elf;
use rocpack_offload::{ContainerKind, Inspection, Options, Severity, bundle, ccob, inspect, sniff};

/// Longest a single `inspect()` of a fixture-sized input may take.
const BUDGET: Duration = Duration::from_secs(2);
/// Ceiling for full decompression in the "full" option set.
const FULL_MAX: u64 = 16 << 20;

// ----- fixtures -------------------------------------------------------------------------------

fn fixture_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bin")
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixture_dir().join(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// Every fixture, sorted by name.
fn fixtures() -> Vec<(String, Arc<[u8]>)> {
    let mut out: Vec<(String, Arc<[u8]>)> = std::fs::read_dir(fixture_dir())
        .expect("tests/fixtures/bin")
        .filter_map(|e| {
            let p = e.ok()?.path();
            p.is_file().then(|| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    Arc::from(std::fs::read(&p).unwrap()),
                )
            })
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(
        out.len() >= 40,
        "expected the fixture set, found {} files",
        out.len()
    );
    out
}

// ----- options and the watchdog ---------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Opts {
    /// `Options::default()`: headers and prefixes only.
    Default,
    /// Metadata + full decompression with a 16 MiB ceiling.
    Full,
    /// Metadata + full decompression with no ceiling at all (`u64::MAX`): only the data itself
    /// may bound the work.
    Unbounded,
}

impl Opts {
    fn options(self) -> Options<'static> {
        match self {
            Opts::Default => Options::default(),
            Opts::Full => Options {
                metadata: true,
                decompress: true,
                max_decompressed: FULL_MAX,
                ..Options::default()
            },
            Opts::Unbounded => Options {
                metadata: true,
                decompress: true,
                max_decompressed: u64::MAX,
                ..Options::default()
            },
        }
    }
}

struct Job {
    data: Arc<[u8]>,
    len: usize,
    opts: Opts,
}

type Reply = Result<Inspection, String>;

/// A worker thread that runs `inspect()` calls one at a time while the test thread waits with
/// a timeout. On a timeout the worker is abandoned (it dies with the test process).
struct Guard {
    jobs: Sender<Job>,
    replies: Receiver<Reply>,
}

impl Guard {
    fn new() -> Guard {
        let (jobs, job_rx) = channel::<Job>();
        let (reply_tx, replies) = channel::<Reply>();
        thread::Builder::new()
            .name("inspect-worker".into())
            .spawn(move || {
                for job in job_rx {
                    let opts = job.opts.options();
                    let r = catch_unwind(AssertUnwindSafe(|| {
                        let r = inspect(&job.data[..job.len], &opts);
                        touch(&r);
                        r
                    }))
                    .map_err(|p| {
                        p.downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                            .unwrap_or_else(|| "non-string panic".into())
                    });
                    if reply_tx.send(r).is_err() {
                        break;
                    }
                }
            })
            .expect("spawn worker");
        Guard { jobs, replies }
    }

    /// Inspects `data[..len]`; panics (failing the test) with `what` on a panic or a timeout.
    fn inspect(
        &self,
        what: &dyn Fn() -> String,
        data: &Arc<[u8]>,
        len: usize,
        opts: Opts,
    ) -> Inspection {
        self.inspect_within(what, data, len, opts, BUDGET)
    }

    fn inspect_within(
        &self,
        what: &dyn Fn() -> String,
        data: &Arc<[u8]>,
        len: usize,
        opts: Opts,
        budget: Duration,
    ) -> Inspection {
        self.jobs
            .send(Job {
                data: Arc::clone(data),
                len,
                opts,
            })
            .expect("worker alive");
        match self.replies.recv_timeout(budget) {
            Ok(Ok(r)) => r,
            Ok(Err(msg)) => panic!("inspect() panicked on {} ({opts:?}): {msg}", what()),
            Err(RecvTimeoutError::Timeout) => {
                panic!(
                    "inspect() did not return within {budget:?} on {} ({opts:?})",
                    what()
                )
            }
            Err(RecvTimeoutError::Disconnected) => panic!("worker died on {}", what()),
        }
    }
}

/// Calls the lazy accessors of the result, as the CLI does when printing it.
fn touch(r: &Inspection) {
    for c in &r.containers {
        let _ = c.label();
    }
    for co in &r.code_objects {
        let _ = r.location(co.container);
        let _ = r.bundle_offset(co.container);
        if let Some(h) = &co.header {
            let _ = h.target().to_string();
        }
    }
    let _ = r.has_errors();
}

fn arc(v: Vec<u8>) -> Arc<[u8]> {
    Arc::from(v)
}

fn codes(r: &Inspection) -> Vec<&'static str> {
    r.diagnostics.iter().map(|d| d.code.as_str()).collect()
}

fn has(r: &Inspection, severity: Severity, code: &str) -> bool {
    r.diagnostics
        .iter()
        .any(|d| d.severity == severity && d.code.as_str() == code)
}

// ----- memory ---------------------------------------------------------------------------------

const ISOLATED: &str = "ROCPACK_HOSTILE_ISOLATED";

/// Whether the calling test should run its body here. Memory measurements need a fresh
/// process: memory that earlier tests freed stays resident in the allocator and would hide
/// a new peak. So the first call re-runs the test binary for just this test (`name`) and checks
/// its outcome (returning `false`); inside that child process it returns `true`.
fn isolated(name: &str) -> bool {
    if std::env::var(ISOLATED).is_ok_and(|v| v == name) {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            name,
            "--exact",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ISOLATED, name)
        .output()
        .expect("re-run the test binary");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("1 passed") || !out.status.success(),
        "the child process did not run {name}:\n{text}"
    );
    assert!(
        out.status.success(),
        "{name} failed in its own process:\n{text}"
    );
    false
}

fn status_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Runs `f` and returns how far the process's peak resident set (VmHWM) rose, in bytes. The
/// peak is reset first (`/proc/self/clear_refs` 5) where the kernel allows it. `None` where
/// /proc is unavailable.
fn peak_growth<R>(f: impl FnOnce() -> R) -> (R, Option<u64>) {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = status_kib("VmHWM:");
    let r = f();
    let after = status_kib("VmHWM:");
    (
        r,
        before.zip(after).map(|(b, a)| a.saturating_sub(b) * 1024),
    )
}

const MIB: u64 = 1 << 20;

// ----- little writers -------------------------------------------------------------------------

fn put_u16(d: &mut [u8], at: usize, v: u16) {
    d[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(d: &mut [u8], at: usize, v: u32) {
    d[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(d: &mut [u8], at: usize, v: u64) {
    d[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn get_u64(d: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(d[at..at + 8].try_into().unwrap())
}

/// A GNU archive holding `members` (name, bytes); no symbol table.
fn ar(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = b"!<arch>\n".to_vec();
    for (name, data) in members {
        let header = format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            format!("{name}/"),
            0,
            0,
            0,
            644,
            data.len()
        );
        assert_eq!(header.len(), 60);
        out.extend(header.as_bytes());
        out.extend(*data);
        if out.len() % 2 == 1 {
            out.push(b'\n');
        }
    }
    out
}

/// A 64-bit little-endian ELF header with `phnum` program headers right after it.
fn elf_header(e_type: u16, machine: u16, phnum: u16) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = 2;
    h[5] = 1;
    h[6] = 1;
    put_u16(&mut h, 16, e_type);
    put_u16(&mut h, 18, machine);
    put_u64(&mut h, 32, 64);
    put_u16(&mut h, 52, 64);
    put_u16(&mut h, 54, 56);
    put_u16(&mut h, 56, phnum);
    h
}

fn phdr(p_type: u32, flags: u32, offset: u64, vaddr: u64, filesz: u64) -> Vec<u8> {
    let mut p = vec![0u8; 56];
    put_u32(&mut p, 0, p_type);
    put_u32(&mut p, 4, flags);
    put_u64(&mut p, 8, offset);
    put_u64(&mut p, 16, vaddr);
    put_u64(&mut p, 32, filesz);
    put_u64(&mut p, 40, filesz);
    p
}

/// A bare AMDGPU code object (HSA, code object v5, gfx90a) with one PT_NOTE holding one note.
fn code_object_with_note(owner: &[u8], n_type: u32, desc: &[u8]) -> Vec<u8> {
    let mut note = Vec::new();
    note.extend((owner.len() as u32 + 1).to_le_bytes());
    note.extend((desc.len() as u32).to_le_bytes());
    note.extend(n_type.to_le_bytes());
    note.extend(owner);
    note.push(0);
    note.resize(note.len().next_multiple_of(4), 0);
    note.extend(desc);
    note.resize(note.len().next_multiple_of(4), 0);
    let mut d = elf_header(3, 224, 1);
    d[7] = 64; // ELFOSABI_AMDGPU_HSA
    d[8] = 3; // code object v5
    put_u32(&mut d, 48, 0x3f); // EF_AMDGPU_MACH_AMDGCN_GFX90A
    d.extend(phdr(4, 4, 120, 0, note.len() as u64));
    d.extend(note);
    d
}

// ----- truncation -----------------------------------------------------------------------------

/// Offsets at which to cut a fixture: every byte of a small file; for a larger one 2000 spread
/// offsets, the first 4 KiB, and a window around every container and code object the clean
/// inspection found (their headers are where truncation changes the parse).
fn cut_points(data: &[u8], clean: &[&Inspection]) -> Vec<usize> {
    let len = data.len();
    if len < 16 << 10 {
        return (0..len).collect();
    }
    let mut at = BTreeSet::new();
    at.extend(0..4096.min(len));
    at.extend((0..2000).map(|i| i * len / 2000));
    let mut around = |o: u64, before: u64, after: u64| {
        let lo = o.saturating_sub(before) as usize;
        let hi = (o.saturating_add(after) as usize).min(len);
        at.extend(lo..hi);
    };
    for r in clean {
        for c in &r.containers {
            if let Some(o) = c.file_offset {
                around(o, 64, 512);
                if let Some(s) = c.size {
                    around(o.saturating_add(s), 64, 64);
                }
            }
        }
        for co in &r.code_objects {
            if let Some(o) = co.file_offset {
                around(o, 64, 512);
                around(o.saturating_add(co.size), 64, 64);
            }
        }
    }
    at.into_iter().filter(|&n| n < len).collect()
}

/// Truncations after which losing code objects without an error is correct, not a gap:
/// * the cut leaves less than the top-level magic, or an ELF identification that is not
///   64-bit little-endian (`inspect` ignores other ELF files): the prefix is not a GPU file;
/// * the cut is right after an archive's magic or exactly at an archive member's header, or
///   inside the magic of a bundle/CCOB that follows another at top level: the prefix is a
///   well-formed shorter file.
struct CleanCuts {
    at: BTreeSet<usize>,
}

impl CleanCuts {
    fn new(clean: &Inspection) -> CleanCuts {
        let mut at = BTreeSet::new();
        for c in &clean.containers {
            match (&c.kind, c.file_offset, c.parent) {
                // Only the magic left: an empty archive.
                (ContainerKind::Archive { .. }, Some(0), None) => {
                    at.insert(8);
                }
                (ContainerKind::Member { .. }, Some(o), _) => {
                    at.insert(o as usize - 60);
                }
                (ContainerKind::Bundle { .. }, Some(o), None) if o > 0 => {
                    at.extend(o as usize..o as usize + bundle::MAGIC.len());
                }
                (ContainerKind::Ccob { .. }, Some(o), None) if o > 0 => {
                    at.extend(o as usize..o as usize + ccob::MAGIC.len());
                }
                _ => {}
            }
        }
        CleanCuts { at }
    }
}

fn truncation_sweep(files: &[(String, Arc<[u8]>)]) {
    let guard = Guard::new();
    let mut failures = Vec::new();
    let mut calls = 0usize;
    for (name, data) in files {
        let clean: Vec<Inspection> = [Opts::Default, Opts::Full]
            .iter()
            .map(|&o| guard.inspect(&|| format!("{name} (whole)"), data, data.len(), o))
            .collect();
        for (o, r) in [Opts::Default, Opts::Full].iter().zip(&clean) {
            assert!(
                !r.has_errors(),
                "{name} {o:?}: clean fixture has errors: {:?}",
                r.diagnostics
            );
        }
        let points = cut_points(data, &clean.iter().collect::<Vec<_>>());
        for (opts, base) in [Opts::Default, Opts::Full].into_iter().zip(&clean) {
            let clean_cuts = CleanCuts::new(base);
            for &n in &points {
                calls += 1;
                let r = guard.inspect(&|| format!("{name} truncated to {n} bytes"), data, n, opts);
                let (got, want) = (r.code_objects.len(), base.code_objects.len());
                if got > want {
                    failures.push(format!(
                        "{name} cut at {n} ({opts:?}): {got} code objects, more than the {want} of the whole file"
                    ));
                    continue;
                }
                if got == want || r.has_errors() {
                    continue;
                }
                let unrecognised = r.containers.is_empty() && r.diagnostics.is_empty() && n <= 64;
                if sniff(&data[..n]) != sniff(data) || unrecognised || clean_cuts.at.contains(&n) {
                    continue;
                }
                failures.push(format!(
                    "{name} cut at {n} ({opts:?}): {got} of {want} code objects and no error diagnostic ({:?})",
                    codes(&r)
                ));
            }
        }
    }
    eprintln!(
        "truncation: {calls} inspect() calls over {} files",
        files.len()
    );
    assert!(
        failures.is_empty(),
        "{} truncations broke the invariant, first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}

/// The Windows images of tests/fixtures/pe (made by make-pe-fixtures.sh).
fn pe_fixtures() -> Vec<(String, Arc<[u8]>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pe");
    let mut out: Vec<(String, Arc<[u8]>)> = std::fs::read_dir(&dir)
        .expect("tests/fixtures/pe")
        .filter_map(|e| {
            let p = e.ok()?.path();
            let name = p.file_name()?.to_string_lossy().into_owned();
            (name.ends_with(".dll") || name.ends_with(".exe"))
                .then(|| (name, Arc::from(std::fs::read(&p).unwrap())))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(out.len(), 7, "expected the seven PE fixtures");
    out
}

#[test]
fn truncated_pe_images() {
    truncation_sweep(&pe_fixtures());
}

#[test]
fn random_mutations_pe_images() {
    flip_run(0x2545_f491_4f6c_dd1d, 6_000, &pe_fixtures());
}

#[test]
fn truncated_small_fixtures() {
    let files: Vec<_> = fixtures()
        .into_iter()
        .filter(|(_, d)| d.len() < 16 << 10)
        .collect();
    truncation_sweep(&files);
}

#[test]
fn truncated_large_fixtures() {
    let files: Vec<_> = fixtures()
        .into_iter()
        .filter(|(_, d)| d.len() >= 16 << 10)
        .collect();
    truncation_sweep(&files);
}

// ----- huge counts and sizes ------------------------------------------------------------------

const HUGE: [u64; 4] = [u64::MAX, 1 << 40, 1 << 63, (1 << 63) - 1];

/// One hostile variant of a fixture, with what must show up in its inspection.
struct Case {
    what: String,
    data: Vec<u8>,
    /// (options, severity, diagnostic code) that must appear.
    expect: Vec<(Opts, Vec<(Severity, &'static str)>)>,
}

impl Case {
    fn new(what: impl Into<String>, data: Vec<u8>) -> Case {
        Case {
            what: what.into(),
            data,
            expect: Vec::new(),
        }
    }
    fn expect(self, opts: &[Opts], severity: Severity, code: &'static str) -> Case {
        self.expect_one_of(opts, &[(severity, code)])
    }
    fn expect_one_of(mut self, opts: &[Opts], any: &[(Severity, &'static str)]) -> Case {
        self.expect.extend(opts.iter().map(|&o| (o, any.to_vec())));
        self
    }
}

const ALL: &[Opts] = &[Opts::Default, Opts::Full, Opts::Unbounded];
const DECOMPRESSING: &[Opts] = &[Opts::Full, Opts::Unbounded];

/// File offsets of the fields of each entry of the bundle at `base`: (offset, size, ID length).
fn bundle_fields(data: &[u8], base: usize) -> Vec<(usize, usize, usize)> {
    let h = bundle::parse(&data[base..], false).unwrap();
    let mut pos = base + 32;
    h.entries
        .iter()
        .map(|e| {
            let f = (pos, pos + 8, pos + 16);
            pos += 24 + e.id.raw().len();
            f
        })
        .collect()
}

fn bundle_cases() -> Vec<Case> {
    let mut out = Vec::new();
    let tu1 = fixture("tu1.hipfb");
    for v in HUGE {
        let mut d = tu1.clone();
        put_u64(&mut d, 24, v);
        out.push(
            Case::new(format!("tu1.hipfb entry count {v:#x}"), d).expect(
                ALL,
                Severity::Error,
                "malformed-bundle",
            ),
        );
        for (i, (off, size, idlen)) in bundle_fields(&tu1, 0).into_iter().enumerate() {
            for (field, at) in [("offset", off), ("size", size), ("ID length", idlen)] {
                let mut d = tu1.clone();
                put_u64(&mut d, at, v);
                out.push(
                    Case::new(format!("tu1.hipfb entry #{i} {field} {v:#x}"), d).expect(
                        ALL,
                        Severity::Error,
                        "malformed-bundle",
                    ),
                );
            }
        }
    }
    // The same inside a .hip_fatbin section, reached through the wrapper.
    let o = fixture("tu1.o");
    let fb = {
        let elf = Elf::parse(&o).unwrap();
        elf.section(b".hip_fatbin").unwrap().offset as usize
    };
    for (i, (off, size, idlen)) in bundle_fields(&o, fb).into_iter().enumerate() {
        for (field, at) in [("offset", off), ("size", size), ("ID length", idlen)] {
            let mut d = o.clone();
            put_u64(&mut d, at, 1 << 40);
            out.push(
                Case::new(format!("tu1.o bundle entry #{i} {field} 2^40"), d).expect(
                    ALL,
                    Severity::Error,
                    "malformed-bundle",
                ),
            );
        }
    }
    // Overlapping entries: entry #2 (gfx90a) made to start where entry #1 (gfx1030) starts.
    let f = bundle_fields(&tu1, 0);
    let mut d = tu1.clone();
    let first = get_u64(&d, f[1].0);
    put_u64(&mut d, f[2].0, first);
    out.push(Case::new("tu1.hipfb entries #1 and #2 overlap", d).expect(
        ALL,
        Severity::Warning,
        "overlapping-entries",
    ));
    // The same inside a CCOB (the overlap is seen in the decompressed table).
    let mut b = tu1.clone();
    put_u64(&mut b, f[2].0, first);
    for version in 1..=3 {
        let d = ccob::compress(&b, version, ccob::Method::Zstd, 3).unwrap();
        out.push(
            Case::new(
                format!("CCOB v{version} of a bundle with overlapping entries"),
                d,
            )
            .expect(ALL, Severity::Warning, "overlapping-entries"),
        );
    }
    out
}

fn ccob_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (name, version) in [
        ("ccob-v1-zlib.hipfb", 1),
        ("ccob-v1-zstd.hipfb", 1),
        ("ccob-v2-zlib.hipfb", 2),
        ("ccob-v2-zstd.hipfb", 2),
        ("ccob-v3-zlib.hipfb", 3),
        ("ccob-v3-zstd.hipfb", 3),
    ] {
        let base = fixture(name);
        let mut set = |field: &str, at: usize, wide: bool, v: u64, expect: &[Opts]| {
            let mut d = base.clone();
            if wide {
                put_u64(&mut d, at, v);
            } else {
                put_u32(&mut d, at, v as u32);
            }
            out.push(Case::new(format!("{name} {field} {v:#x}"), d).expect(
                expect,
                Severity::Error,
                "malformed-ccob",
            ));
        };
        match version {
            1 => {
                // A wrong uncompressed size is only noticed by a full decompression.
                for v in [u64::from(u32::MAX), 1 << 31, 0] {
                    set("uncompressed size", 8, false, v, DECOMPRESSING);
                }
            }
            2 => {
                for v in [u64::from(u32::MAX), 1 << 31, 0, 23] {
                    set("total size", 8, false, v, ALL);
                }
                for v in [u64::from(u32::MAX), 1 << 31, 0] {
                    set("uncompressed size", 12, false, v, DECOMPRESSING);
                }
            }
            _ => {
                for v in HUGE.into_iter().chain([base.len() as u64 + 1, 0, 31]) {
                    set("total size", 8, true, v, ALL);
                }
                // 2^40 declared: refused by the ceiling (Full) or by the real output size
                // (Unbounded), never allocated.
                for v in HUGE.into_iter().chain([0]) {
                    set("uncompressed size", 16, true, v, DECOMPRESSING);
                }
            }
        }
    }
    // A CCOB inside a host ELF section, declaring 2^40 bytes: v2 has a u32 field, so make a v3.
    let bundle = fixture("tu1.hipfb");
    let mut v3 = ccob::compress(&bundle, 3, ccob::Method::Zlib, 6).unwrap();
    put_u64(&mut v3, 16, 1 << 40);
    out.push(
        Case::new("CCOB v3 declaring 2^40 uncompressed bytes", v3).expect(
            DECOMPRESSING,
            Severity::Error,
            "malformed-ccob",
        ),
    );
    // A real v2 inside tu1-compressed.o with its uncompressed size maxed.
    let o = fixture("tu1-compressed.o");
    let fb = Elf::parse(&o)
        .unwrap()
        .section(b".hip_fatbin")
        .unwrap()
        .offset as usize;
    let mut d = o.clone();
    put_u32(&mut d, fb + 12, u32::MAX);
    out.push(
        Case::new("tu1-compressed.o CCOB uncompressed size u32::MAX", d).expect(
            DECOMPRESSING,
            Severity::Error,
            "malformed-ccob",
        ),
    );
    let mut d = o.clone();
    put_u32(&mut d, fb + 8, u32::MAX);
    out.push(
        Case::new("tu1-compressed.o CCOB total size u32::MAX", d).expect(
            ALL,
            Severity::Error,
            "malformed-ccob",
        ),
    );
    out
}

fn elf_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for name in [
        "tu1.o",
        "lib3tu-lld.so",
        "lib3tu-bfd.so",
        "exe-nopie",
        "tu1-compressed.o",
    ] {
        let base = fixture(name);
        let elf = Elf::parse(&base).unwrap();
        let mut one = |what: String, f: &dyn Fn(&mut Vec<u8>), code: &'static str| {
            let mut d = base.clone();
            f(&mut d);
            out.push(Case::new(format!("{name} {what}"), d).expect(ALL, Severity::Error, code));
        };
        one(
            "e_shnum 0xffff".into(),
            &|d| put_u16(d, 60, 0xffff),
            "malformed-elf",
        );
        one(
            "e_phnum 0xffff".into(),
            &|d| put_u16(d, 56, 0xffff),
            "malformed-elf",
        );
        one(
            "e_shentsize 0xffff".into(),
            &|d| put_u16(d, 58, 0xffff),
            "malformed-elf",
        );
        for v in HUGE {
            one(
                format!("e_shoff {v:#x}"),
                &|d| put_u64(d, 40, v),
                "malformed-elf",
            );
        }
        if !elf.segments.is_empty() {
            one(
                "e_phentsize 0xffff".into(),
                &|d| put_u16(d, 54, 0xffff),
                "malformed-elf",
            );
            for v in HUGE {
                one(
                    format!("e_phoff {v:#x}"),
                    &|d| put_u64(d, 32, v),
                    "malformed-elf",
                );
            }
        }
        // Extended section numbering: e_shnum 0, section 0's sh_size holds the count.
        let shoff = get_u64(&base, 40) as usize;
        for v in HUGE {
            one(
                format!("extended e_shnum {v:#x}"),
                &|d| {
                    put_u16(d, 60, 0);
                    put_u64(d, shoff + 32, v);
                },
                "malformed-elf",
            );
        }
        for sec in [&b".hip_fatbin"[..], b".hipFatBinSegment"] {
            let s = elf.section(sec).unwrap();
            let h = s.header_offset as usize;
            let label = String::from_utf8_lossy(sec).into_owned();
            for v in HUGE.into_iter().chain([base.len() as u64]) {
                one(
                    format!("{label} sh_size {v:#x}"),
                    &|d| put_u64(d, h + 32, v),
                    "malformed-elf",
                );
                one(
                    format!("{label} sh_offset {v:#x}"),
                    &|d| put_u64(d, h + 24, v),
                    "malformed-elf",
                );
            }
        }
        // A section name index past the string table: the sections lose their names, nothing
        // is found, nothing breaks.
        let mut d = base.clone();
        put_u16(&mut d, 62, 0xfffe);
        out.push(Case::new(format!("{name} e_shstrndx 0xfffe"), d));
    }
    out
}

/// Wrapper pointers rewritten to land outside `.hip_fatbin`: in place (GNU ld, non-PIE, RELR),
/// as RELA addends (lld, relocatable objects).
fn wrapper_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for name in [
        "lib3tu-bfd.so",
        "lib3tu-lld.so",
        "lib3tu-relr.so",
        "exe-nopie",
        "librdc.so",
        "tu1.o",
    ] {
        let base = fixture(name);
        let elf = Elf::parse(&base).unwrap();
        let fb = elf.section(b".hip_fatbin").unwrap().clone();
        let ws = elf.section(b".hipFatBinSegment").unwrap().clone();
        let wrappers = ws.size as usize / 24;
        let outside = [
            fb.addr.wrapping_add(fb.size),
            fb.addr.wrapping_sub(1),
            u64::MAX,
            1 << 63,
            fb.addr.wrapping_add(8), // inside, but no bundle there
        ];
        let rela_secs: Vec<_> = elf
            .sections
            .iter()
            .filter(|s| s.sh_type == rocpack_offload::elf::SHT_RELA)
            .cloned()
            .collect();
        for p in outside {
            let mut d = base.clone();
            let mut patched = 0;
            for i in 0..wrappers {
                let field_off = ws.offset as usize + 24 * i + 8;
                // In place.
                put_u64(&mut d, field_off, p);
                patched += 1;
                // Every RELA entry for this field: dynamic (r_offset = vaddr) or, in an object,
                // relative to the section.
                let target = if elf.e_type == rocpack_offload::elf::ET_REL {
                    24 * i as u64 + 8
                } else {
                    ws.addr + 24 * i as u64 + 8
                };
                for s in &rela_secs {
                    if elf.e_type == rocpack_offload::elf::ET_REL && s.info as usize != ws.index {
                        continue;
                    }
                    for r in 0..s.size as usize / 24 {
                        let at = s.offset as usize + 24 * r;
                        if get_u64(&base, at) == target {
                            // A relative relocation's addend is the pointer; in an object the
                            // addend is relative to the section symbol.
                            let v = if elf.e_type == rocpack_offload::elf::ET_REL {
                                p.wrapping_sub(fb.addr)
                            } else {
                                p
                            };
                            put_u64(&mut d, at + 16, v);
                        }
                    }
                }
            }
            assert!(patched > 0);
            out.push(
                // A pointer into the section where there is no bundle is an error about that
                // bundle, unless it is dropped as unresolvable (non-PIE: no relocation to fall
                // back on), which walks the section sequentially instead.
                Case::new(format!("{name}: every wrapper points to {p:#x}"), d).expect_one_of(
                    ALL,
                    &[
                        (Severity::Warning, "wrapper-outside-fatbin"),
                        (Severity::Error, "malformed-bundle"),
                    ],
                ),
            );
        }
        // Wrapper magic destroyed: skipped with a warning, the section is walked anyway.
        let mut d = base.clone();
        for i in 0..wrappers {
            d[ws.offset as usize + 24 * i] ^= 0xff;
        }
        out.push(
            Case::new(format!("{name}: wrapper magic broken"), d).expect(
                ALL,
                Severity::Warning,
                "bad-wrapper",
            ),
        );
        // Wrapper table not a multiple of 24 bytes.
        let mut d = base.clone();
        put_u64(&mut d, ws.header_offset as usize + 32, ws.size - 1);
        out.push(
            Case::new(format!("{name}: .hipFatBinSegment 1 byte short"), d).expect(
                ALL,
                Severity::Warning,
                "wrapper-table-size",
            ),
        );
    }
    // No section headers: the wrappers are found in the writable segments; point them away.
    let base = fixture("lib3tu-noshdr.so");
    let magic = [0x46u8, 0x50, 0x49, 0x48, 1, 0, 0, 0];
    let mut d = base.clone();
    let mut i = 0;
    while let Some(p) = d[i..].windows(8).position(|w| w == magic) {
        let at = i + p;
        put_u64(&mut d, at + 8, u64::MAX);
        i = at + 8;
    }
    out.push(Case::new("lib3tu-noshdr.so: wrapper pointers u64::MAX", d));
    out
}

fn offload_binary_cases() -> Vec<Case> {
    let mut out = Vec::new();
    let base = fixture("nd-rdc1.o");
    let elf = Elf::parse(&base).unwrap();
    let s = elf.section(b".llvm.offloading").unwrap();
    let o = s.offset as usize;
    let entries = o + get_u64(&base, o + 16) as usize;
    let strings = o + get_u64(&base, entries + 8) as usize;
    let mut fields: Vec<(&str, usize)> = vec![
        ("size", o + 8),
        ("entries offset", o + 16),
        ("entry size", o + 24),
        ("string offset", entries + 8),
        ("string count", entries + 16),
        ("image offset", entries + 24),
        ("image size", entries + 32),
    ];
    for k in 0..get_u64(&base, entries + 16) as usize {
        fields.push(("string key offset", strings + 16 * k));
        fields.push(("string value offset", strings + 16 * k + 8));
    }
    for (what, at) in fields {
        for v in HUGE {
            let mut d = base.clone();
            put_u64(&mut d, at, v);
            out.push(
                Case::new(format!("nd-rdc1.o OffloadBinary {what} {v:#x}"), d).expect(
                    ALL,
                    Severity::Error,
                    "malformed-offload-binary",
                ),
            );
        }
    }
    // Version 2 (entry count instead of entry size) and version 3 with an inflated size.
    for (version, at, v, code) in [
        (2u32, o + 24, u64::MAX, Some("malformed-offload-binary")),
        (2, o + 24, 1 << 40, Some("malformed-offload-binary")),
        (3, o + 32, 1 << 40, None),
        (3, o + 32, u64::MAX, None),
    ] {
        let mut d = base.clone();
        put_u32(&mut d, o + 4, version);
        put_u64(&mut d, at, v);
        let c = Case::new(
            format!(
                "nd-rdc1.o OffloadBinary as v{version}, u64 at +{} = {v:#x}",
                at - o
            ),
            d,
        );
        out.push(match code {
            Some(code) => c.expect(ALL, Severity::Error, code),
            None => c,
        });
    }
    out
}

fn metadata_cases() -> Vec<Case> {
    let mut out = Vec::new();
    let base = fixture("gfx90a-v5.co");
    let (desc_at, desc_len) = {
        let notes = rocpack_amdgpu::metadata::notes(&base).unwrap();
        let n = notes
            .iter()
            .find(|n| {
                n.name == b"AMDGPU" && n.n_type == rocpack_amdgpu::metadata::NT_AMDGPU_METADATA
            })
            .expect("metadata note");
        (
            n.desc.as_ptr() as usize - base.as_ptr() as usize,
            n.desc.len(),
        )
    };
    let heads: [(&str, &[u8]); 6] = [
        ("array32 with 2^32-1 elements", b"\xdd\xff\xff\xff\xff"),
        ("map32 with 2^32-1 entries", b"\xdf\xff\xff\xff\xff"),
        ("str32 of 2^32-1 bytes", b"\xdb\xff\xff\xff\xff"),
        ("bin32 of 2^32-1 bytes", b"\xc6\xff\xff\xff\xff"),
        ("ext32 of 2^32-1 bytes", b"\xc9\xff\xff\xff\xff"),
        ("array16 with 65535 elements", b"\xdc\xff\xff"),
    ];
    for (what, head) in heads {
        let mut d = base.clone();
        d[desc_at..desc_at + head.len()].copy_from_slice(head);
        out.push(
            Case::new(format!("gfx90a-v5.co metadata: {what}"), d).expect(
                DECOMPRESSING,
                Severity::Error,
                "malformed-metadata",
            ),
        );
    }
    // The same document nested: every byte an array of one element.
    let mut d = base.clone();
    d[desc_at..desc_at + desc_len].fill(0x91);
    out.push(
        Case::new("gfx90a-v5.co metadata: nested fixarrays", d).expect(
            DECOMPRESSING,
            Severity::Error,
            "malformed-metadata",
        ),
    );
    // Huge note sizes.
    let note_hdr = desc_at - 12 - 8; // "AMDGPU\0" padded to 8, after the 12-byte header
    for (what, at) in [("namesz", note_hdr), ("descsz", note_hdr + 4)] {
        let mut d = base.clone();
        put_u32(&mut d, at, u32::MAX);
        out.push(
            Case::new(format!("gfx90a-v5.co metadata note {what} u32::MAX"), d).expect(
                DECOMPRESSING,
                Severity::Error,
                "malformed-metadata",
            ),
        );
    }
    // A synthetic code object whose note is a bare array32 claiming 2^32-1 elements.
    let d = code_object_with_note(b"AMDGPU", 32, b"\xdd\xff\xff\xff\xff\x01\x02");
    out.push(
        Case::new("synthetic code object: msgpack array32 of 2^32-1", d).expect(
            DECOMPRESSING,
            Severity::Error,
            "malformed-metadata",
        ),
    );
    // A deeply nested YAML (V2) document.
    let mut yaml = "[".repeat(100_000).into_bytes();
    yaml.push(0);
    let d = code_object_with_note(b"AMD", 10, &yaml);
    out.push(
        Case::new("synthetic code object: YAML nested 100000 deep", d).expect(
            DECOMPRESSING,
            Severity::Error,
            "malformed-metadata",
        ),
    );
    out
}

fn run_cases(cases: Vec<Case>) {
    let guard = Guard::new();
    let mut failures = Vec::new();
    for c in &cases {
        let data = arc(c.data.clone());
        for opts in [Opts::Default, Opts::Full, Opts::Unbounded] {
            let r = guard.inspect(&|| c.what.clone(), &data, data.len(), opts);
            for (o, any) in &c.expect {
                if *o == opts && !any.iter().any(|(severity, code)| has(&r, *severity, code)) {
                    failures.push(format!(
                        "{} ({opts:?}): none of {any:?}; got {:?}",
                        c.what,
                        r.diagnostics
                            .iter()
                            .map(|d| (d.severity, d.code, &d.message))
                            .collect::<Vec<_>>()
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} expectations failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn huge_counts_and_sizes_are_errors_without_big_allocations() {
    if !isolated("huge_counts_and_sizes_are_errors_without_big_allocations") {
        return;
    }
    let mut cases = bundle_cases();
    cases.extend(ccob_cases());
    cases.extend(elf_cases());
    cases.extend(offload_binary_cases());
    cases.extend(metadata_cases());
    let n = cases.len();
    let ((), growth) = peak_growth(|| run_cases(cases));
    eprintln!(
        "{n} hostile variants, peak RSS growth {:?} MiB",
        growth.map(|g| g / MIB)
    );
    if let Some(g) = growth {
        assert!(g < 256 * MIB, "peak RSS grew by {} MiB", g / MIB);
    }
}

#[test]
fn wrapper_pointers_outside_the_section_are_warnings() {
    run_cases(wrapper_cases());
}

#[test]
fn ccob_declaring_2_pow_40_bytes_allocates_nothing_near_it() {
    if !isolated("ccob_declaring_2_pow_40_bytes_allocates_nothing_near_it") {
        return;
    }
    let bundle = fixture("tu1.hipfb");
    let guard = Guard::new();
    let ((), growth) = peak_growth(|| {
        for version in [1u16, 2, 3] {
            for method in [ccob::Method::Zlib, ccob::Method::Zstd] {
                let mut d = ccob::compress(&bundle, version, method, 3).unwrap();
                let at = if version == 3 {
                    16
                } else if version == 2 {
                    12
                } else {
                    8
                };
                if version == 3 {
                    put_u64(&mut d, at, 1 << 40);
                } else {
                    put_u32(&mut d, at, u32::MAX);
                }
                // The low-level API: the ceiling refuses it, and without a ceiling the stream
                // stops at the real size.
                let h = ccob::CcobHeader::parse(&d).unwrap();
                assert!(ccob::decompress(&h, &d, 1 << 30).is_err());
                assert!(ccob::decompress(&h, &d, u64::MAX).is_err());
                let mut s =
                    ccob::Stream::new(h.method, h.payload(&d), h.uncompressed_size).unwrap();
                let v = s.read_vec(h.uncompressed_size).unwrap();
                assert_eq!(v.len(), bundle.len());
                drop(s);
                let data = arc(d);
                for opts in [Opts::Default, Opts::Full, Opts::Unbounded] {
                    let r = guard.inspect(
                        &|| format!("v{version} {method:?} 2^40"),
                        &data,
                        data.len(),
                        opts,
                    );
                    if opts != Opts::Default {
                        assert!(
                            has(&r, Severity::Error, "malformed-ccob"),
                            "{version} {method:?} {opts:?}: {:?}",
                            codes(&r)
                        );
                    }
                }
            }
        }
    });
    if let Some(g) = growth {
        assert!(g < 256 * MIB, "peak RSS grew by {} MiB", g / MIB);
    }
}

// ----- nesting --------------------------------------------------------------------------------

#[test]
fn archives_nested_20_deep_are_an_error_not_a_stack_overflow() {
    let mut data = fixture("tu1.o");
    for level in 0..20 {
        let name = format!("l{level}.a");
        data = ar(&[(&name, &data)]);
    }
    let data = arc(data);
    let guard = Guard::new();
    for opts in [Opts::Default, Opts::Full] {
        let r = guard.inspect(&|| "archive nested 20 deep".into(), &data, data.len(), opts);
        assert!(r.has_errors(), "{opts:?}: {:?}", codes(&r));
        assert!(
            r.diagnostics.iter().any(|d| d.message.contains("nested")),
            "{opts:?}: {:?}",
            r.diagnostics
        );
        assert!(r.code_objects.is_empty());
    }
    // Two levels are fine.
    let two = arc(ar(&[("a.a", &ar(&[("tu1.o", &fixture("tu1.o"))]))]));
    let r = guard.inspect(
        &|| "archive nested 2 deep".into(),
        &two,
        two.len(),
        Opts::Default,
    );
    assert!(!r.has_errors(), "{:?}", r.diagnostics);
    assert_eq!(r.code_objects.len(), 3);
}

#[test]
fn bundles_nested_in_bundle_entries_stop_at_the_depth_limit() {
    // Each level: a bundle with one entry holding the previous level.
    let mut data = fixture("tu1-gfx1030.hipfb");
    for _ in 0..20 {
        let id = b"hip-amdgcn-amd-amdhsa--gfx1030";
        let mut b = bundle::MAGIC.to_vec();
        b.extend(1u64.to_le_bytes());
        let at = 32 + 24 + id.len() as u64;
        b.extend(at.to_le_bytes());
        b.extend((data.len() as u64).to_le_bytes());
        b.extend((id.len() as u64).to_le_bytes());
        b.extend(id);
        b.extend(&data);
        data = b;
    }
    let data = arc(data);
    let guard = Guard::new();
    for opts in [Opts::Default, Opts::Full] {
        let r = guard.inspect(&|| "bundle nested 20 deep".into(), &data, data.len(), opts);
        assert!(
            r.diagnostics.iter().any(|d| d.message.contains("nested")),
            "{:?}",
            r.diagnostics
        );
    }
}

// ----- random byte flips ----------------------------------------------------------------------

/// xorshift64*: deterministic, no dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const INTERESTING: [u64; 10] = [
    0,
    1,
    0x7f,
    0xff,
    0xffff,
    0xffff_ffff,
    1 << 31,
    1 << 40,
    1 << 63,
    u64::MAX,
];

/// Where mutations matter: the first 4 KiB and the headers of everything a clean inspection
/// found.
fn hot_offsets(data: &[u8], clean: &Inspection) -> Vec<usize> {
    let mut at: BTreeSet<usize> = (0..4096.min(data.len())).collect();
    let mut around = |o: u64, n: usize| {
        let o = o as usize;
        at.extend(o..(o + n).min(data.len()));
    };
    for c in &clean.containers {
        if let Some(o) = c.file_offset {
            around(o, 512);
        }
    }
    for co in &clean.code_objects {
        if let Some(o) = co.file_offset {
            around(o, 256);
        }
    }
    at.into_iter().collect()
}

fn mutate(rng: &mut Rng, d: &mut [u8], hot: &[usize]) -> String {
    let mut log = Vec::new();
    for _ in 0..1 + rng.below(4) {
        let at = if rng.below(4) > 0 && !hot.is_empty() {
            hot[rng.below(hot.len())]
        } else {
            rng.below(d.len())
        };
        match rng.below(4) {
            0 => {
                let bit = rng.below(8);
                d[at] ^= 1 << bit;
                log.push(format!("flip bit {bit} at {at}"));
            }
            1 => {
                let v = rng.next() as u8;
                d[at] = v;
                log.push(format!("byte {v:#x} at {at}"));
            }
            _ => {
                let v = INTERESTING[rng.below(INTERESTING.len())];
                let width = [1usize, 2, 4, 8][rng.below(4)];
                let at = at.min(d.len().saturating_sub(width));
                let bytes = v.to_le_bytes();
                let n = width.min(d.len() - at);
                d[at..at + n].copy_from_slice(&bytes[..n]);
                log.push(format!(
                    "{:#x} as {width} bytes at {at}",
                    &bytes[..n]
                        .iter()
                        .rev()
                        .fold(0u64, |a, b| a << 8 | u64::from(*b))
                ));
            }
        }
    }
    log.join(", ")
}

fn flip_run(seed: u64, total: usize, files: &[(String, Arc<[u8]>)]) {
    let guard = Guard::new();
    let mut rng = Rng(seed);
    let per_file = total.div_ceil(files.len());
    let started = Instant::now();
    let mut slowest = (Duration::ZERO, String::new());
    for (name, data) in files {
        let clean = guard.inspect(&|| name.clone(), data, data.len(), Opts::Default);
        let hot = hot_offsets(data, &clean);
        for i in 0..per_file {
            let mut d = data.to_vec();
            let log = mutate(&mut rng, &mut d, &hot);
            let d = arc(d);
            let opts = if i % 2 == 0 {
                Opts::Default
            } else {
                Opts::Full
            };
            let t = Instant::now();
            let what = || format!("{name} mutated #{i} (seed {seed:#x}): {log}");
            guard.inspect(&what, &d, d.len(), opts);
            let dt = t.elapsed();
            if dt > slowest.0 {
                slowest = (dt, what());
            }
        }
    }
    eprintln!(
        "flips: {} mutations in {:?}; slowest inspect {:?} on {}",
        per_file * files.len(),
        started.elapsed(),
        slowest.0,
        slowest.1
    );
}

#[test]
fn random_mutations_small_fixtures() {
    let files: Vec<_> = fixtures()
        .into_iter()
        .filter(|(_, d)| d.len() < 16 << 10)
        .collect();
    flip_run(0x9e37_79b9_7f4a_7c15, 10_000, &files);
}

#[test]
fn random_mutations_large_fixtures() {
    let files: Vec<_> = fixtures()
        .into_iter()
        .filter(|(_, d)| d.len() >= 16 << 10)
        .collect();
    flip_run(0xd1b5_4a32_d192_ed03, 10_000, &files);
}

// ----- known bugs -----------------------------------------------------------------------------

/// A bundle whose `n` entries all span the whole bundle (offset 0, size = its length).
fn self_referential_bundle(n: usize) -> Vec<u8> {
    let id = b"hip-amdgcn-amd-amdhsa--gfx1030";
    let len = 32 + n * (24 + id.len());
    let mut d = bundle::MAGIC.to_vec();
    d.extend((n as u64).to_le_bytes());
    for _ in 0..n {
        d.extend(0u64.to_le_bytes());
        d.extend((len as u64).to_le_bytes());
        d.extend((id.len() as u64).to_le_bytes());
        d.extend(id);
    }
    d
}

#[test]
fn bug_self_referential_bundle_entries_explode_exponentially() {
    if !isolated("bug_self_referential_bundle_entries_explode_exponentially") {
        return;
    }
    // 248 bytes, 4 entries: 4 + 16 + ... + 4^8 = 87,380 code objects, 131,071 diagnostics.
    // With 8 entries (464 bytes) it is 19 million code objects and gigabytes.
    let data = arc(self_referential_bundle(4));
    let guard = Guard::new();
    let r = guard.inspect(
        &|| "self-referential bundle".into(),
        &data,
        data.len(),
        Opts::Default,
    );
    let produced = r.code_objects.len() + r.containers.len() + r.diagnostics.len();
    assert!(
        produced <= data.len(),
        "{} input bytes produced {} code objects, {} containers, {} diagnostics",
        data.len(),
        r.code_objects.len(),
        r.containers.len(),
        r.diagnostics.len()
    );
}

/// A minimal PE32+ image: `sections` as (name, RVA, raw data), laid out after the headers with
/// no base relocations, ImageBase 0x180000000.
fn pe_image(sections: &[(&[u8], u32, Vec<u8>)]) -> Vec<u8> {
    let n = sections.len();
    let headers = 0x40 + 4 + 20 + 0xf0 + 40 * n;
    let mut d = vec![0u8; headers];
    d[..2].copy_from_slice(b"MZ");
    put_u32(&mut d, 0x3c, 0x40);
    d[0x40..0x44].copy_from_slice(b"PE\0\0");
    put_u16(&mut d, 0x44, 0x8664);
    put_u16(&mut d, 0x46, u16::try_from(n).unwrap());
    put_u16(&mut d, 0x54, 0xf0); // SizeOfOptionalHeader
    put_u16(&mut d, 0x56, 0x2022); // executable image, large address aware, DLL
    let opt = 0x58;
    put_u16(&mut d, opt, 0x20b);
    put_u64(&mut d, opt + 24, 0x1_8000_0000);
    put_u32(&mut d, opt + 32, 0x1000); // SectionAlignment
    put_u32(&mut d, opt + 36, 0x200); // FileAlignment
    put_u32(&mut d, opt + 108, 16); // NumberOfRvaAndSizes
    let mut raw = Vec::new();
    for (i, (name, rva, bytes)) in sections.iter().enumerate() {
        let h = opt + 0xf0 + 40 * i;
        d[h..h + name.len()].copy_from_slice(name);
        put_u32(&mut d, h + 8, u32::try_from(bytes.len()).unwrap());
        put_u32(&mut d, h + 12, *rva);
        put_u32(&mut d, h + 16, u32::try_from(bytes.len()).unwrap());
        put_u32(&mut d, h + 20, u32::try_from(headers + raw.len()).unwrap());
        put_u32(&mut d, h + 36, 0x4000_0040); // initialized data, readable
        raw.extend_from_slice(bytes);
    }
    d.extend(raw);
    d
}

/// PE without `.hip_fat`: every wrapper is followed into the section holding its target. 100,000
/// wrappers and 60,000 sections must not cost a section search per wrapper.
#[test]
fn bug_pe_wrapper_targets_searched_per_section_are_quadratic() {
    let sections_n = 60_000u32;
    let wrappers_n = 100_000u32;
    let mut wrappers = Vec::new();
    for i in 0..wrappers_n {
        wrappers.extend(pe_wrapper_magic());
        // Each points into one of the last sections, which hold no bundle.
        let rva = 0x1000 * (sections_n - 1 - i % 16) + 8;
        wrappers.extend((0x1_8000_0000u64 + u64::from(rva)).to_le_bytes());
        wrappers.extend([0u8; 8]);
    }
    let mut secs: Vec<(&[u8], u32, Vec<u8>)> = vec![(b".hipFatB", 0x1000, wrappers)];
    for i in 1..sections_n {
        secs.push((b".rdata", 0x1000 * (i + 1), vec![1u8; 16]));
    }
    let data = arc(pe_image(&secs));
    let guard = Guard::new();
    let r = guard.inspect(
        &|| format!("{}-byte PE with {sections_n} sections", data.len()),
        &data,
        data.len(),
        Opts::Default,
    );
    assert!(r.has_errors(), "{:?}", codes(&r).first());
}

/// 200,000 wrappers pointing at 200,000 places of `.hip_fat`, none holding a bundle: each start
/// is read once and reported, in linear time.
#[test]
fn bug_pe_many_wrapper_starts_are_quadratic() {
    let n = 200_000u32;
    let mut wrappers = Vec::new();
    for i in 0..n {
        wrappers.extend(pe_wrapper_magic());
        wrappers.extend((0x1_8000_0000u64 + 0x10_0000 + u64::from(i) * 16).to_le_bytes());
        wrappers.extend([0u8; 8]);
    }
    let fatbin = vec![0x55u8; n as usize * 16];
    let data = arc(pe_image(&[
        (b".hipFatB", 0x1000, wrappers),
        (b".hip_fat", 0x10_0000, fatbin),
    ]));
    let guard = Guard::new();
    let r = guard.inspect(
        &|| format!("{}-byte PE with {n} wrappers", data.len()),
        &data,
        data.len(),
        Opts::Default,
    );
    assert!(r.has_errors());
    assert!(r.code_objects.is_empty());
}

fn pe_wrapper_magic() -> [u8; 8] {
    rocpack_offload::pe::WRAPPER_MAGIC
}

#[test]
fn bug_ccob_header_scan_is_quadratic() {
    if !isolated("bug_ccob_header_scan_is_quadratic") {
        return;
    }
    // Bundle magic, entry count u64::MAX, then zeros: every 24 zero bytes are an entry with an
    // empty ID, so the header never ends. 16 MiB of zeros compress to a few hundred bytes.
    let mut b = bundle::MAGIC.to_vec();
    b.extend(u64::MAX.to_le_bytes());
    b.resize(32 + (16 << 20), 0);
    let data = arc(ccob::compress(&b, 2, ccob::Method::Zstd, 3).unwrap());
    assert!(data.len() < 4096);
    let guard = Guard::new();
    let r = guard.inspect(
        &|| format!("{}-byte CCOB", data.len()),
        &data,
        data.len(),
        Opts::Default,
    );
    assert!(r.has_errors());
}

#[test]
fn bug_many_writable_segments_scan_is_quadratic() {
    if !isolated("bug_many_writable_segments_scan_is_quadratic") {
        return;
    }
    let n = 16_000u16;
    let mut d = elf_header(3, 62, n);
    let total = 64 + 56 * u64::from(n);
    for _ in 0..n {
        d.extend(phdr(1, 6, 0, 0, total));
    }
    let data = arc(d);
    let guard = Guard::new();
    guard.inspect(
        &|| "ELF with 16000 RW PT_LOADs".into(),
        &data,
        data.len(),
        Opts::Default,
    );
}

#[test]
fn bug_overlapping_note_segments_allocate_quadratically() {
    if !isolated("bug_overlapping_note_segments_allocate_quadratically") {
        return;
    }
    let (n, zeros) = (256u16, 120_000u64);
    let mut d = elf_header(3, 224, n);
    let start = 64 + 56 * u64::from(n);
    for _ in 0..n {
        d.extend(phdr(4, 4, start, 0, zeros));
    }
    d.resize((start + zeros) as usize, 0);
    let data = arc(d);
    let guard = Guard::new();
    let (_, growth) = peak_growth(|| {
        guard.inspect(
            &|| "code object with 256 PT_NOTEs".into(),
            &data,
            data.len(),
            Opts::Default,
        )
    });
    let g = growth.unwrap_or(0);
    assert!(
        g < 64 * MIB,
        "{} input bytes: peak RSS grew by {} MiB",
        data.len(),
        g / MIB
    );
}

#[test]
fn bug_offload_binary_v2_strings_allocate_quadratically() {
    if !isolated("bug_offload_binary_v2_strings_allocate_quadratically") {
        return;
    }
    let size = 64u64 << 10;
    let mut d = rocpack_offload::offload_binary::MAGIC.to_vec();
    d.extend(2u32.to_le_bytes());
    d.extend(size.to_le_bytes());
    d.extend(32u64.to_le_bytes()); // entries offset
    d.extend(1u64.to_le_bytes()); // entry count
    let n = (size - 72) / 24;
    d.extend(1u16.to_le_bytes());
    d.extend(4u16.to_le_bytes());
    d.extend(0u32.to_le_bytes());
    d.extend(72u64.to_le_bytes()); // string table offset
    d.extend(n.to_le_bytes()); // string count
    d.extend(0u64.to_le_bytes()); // image offset
    d.extend(0u64.to_le_bytes()); // image size
    for _ in 0..n {
        d.extend(0u64.to_le_bytes()); // key: offset 0 ("\x10\xff\x10\xad\x02" up to a NUL)
        d.extend(0u64.to_le_bytes()); // value offset 0
        d.extend(size.to_le_bytes()); // value size: the whole binary
    }
    d.resize(size as usize, 0);
    let data = arc(d);
    let guard = Guard::new();
    let (_, growth) = peak_growth(|| {
        guard.inspect(
            &|| "64 KiB OffloadBinary v2".into(),
            &data,
            data.len(),
            Opts::Default,
        )
    });
    let g = growth.unwrap_or(0);
    assert!(
        g < 64 * MIB,
        "{} input bytes: peak RSS grew by {} MiB",
        data.len(),
        g / MIB
    );
}

#[test]
fn bug_yaml_metadata_alias_expansion() {
    if !isolated("bug_yaml_metadata_alias_expansion") {
        return;
    }
    let mut y = String::from("---\nVersion: [ 1, 0 ]\nL0: &a0 [");
    y += &["x"; 10].join(", ");
    y += "]\n";
    for l in 1..6 {
        y += &format!(
            "L{l}: &a{l} [{}]\n",
            vec![format!("*a{}", l - 1); 10].join(", ")
        );
    }
    y += "...\n";
    let data = arc(code_object_with_note(b"AMD", 10, y.as_bytes()));
    let guard = Guard::new();
    let (_, growth) =
        peak_growth(|| guard.inspect(&|| "YAML alias bomb".into(), &data, data.len(), Opts::Full));
    let g = growth.unwrap_or(0);
    assert!(
        g < 64 * MIB,
        "{} input bytes: peak RSS grew by {} MiB",
        data.len(),
        g / MIB
    );
}

#[test]
fn bug_relr_bitmaps_amplify_memory() {
    if !isolated("bug_relr_bitmaps_amplify_memory") {
        return;
    }
    // ET_DYN, no section headers: PT_LOAD RW over the whole file at vaddr 0, PT_DYNAMIC with
    // DT_RELR/DT_RELRSZ, one wrapper whose in-place pointer is 0, then the RELR table: one
    // address and 131072 all-ones bitmaps.
    let entries = 131_072u64;
    let mut d = elf_header(3, 62, 2);
    let dyn_off = 64 + 2 * 56;
    let wrapper = dyn_off + 48;
    let table = wrapper + 24;
    let table_len = 8 * (entries + 1);
    d.extend(phdr(1, 6, 0, 0, table + table_len));
    d.extend(phdr(2, 6, dyn_off, dyn_off, 48));
    for (tag, val) in [(36u64, table), (35, table_len), (0, 0)] {
        d.extend(tag.to_le_bytes());
        d.extend(val.to_le_bytes());
    }
    d.extend([0x46, 0x50, 0x49, 0x48, 1, 0, 0, 0]);
    d.extend([0u8; 16]);
    d.extend(0x1000u64.to_le_bytes());
    for _ in 0..entries {
        d.extend(u64::MAX.to_le_bytes());
    }
    let data = arc(d);
    let guard = Guard::new();
    let (_, growth) =
        peak_growth(|| guard.inspect(&|| "RELR bitmaps".into(), &data, data.len(), Opts::Default));
    let g = growth.unwrap_or(0);
    assert!(
        g < 64 * MIB,
        "{} input bytes: peak RSS grew by {} MiB",
        data.len(),
        g / MIB
    );
}

#[test]
fn bug_dynamic_symbol_lookup_is_quadratic() {
    if !isolated("bug_dynamic_symbol_lookup_is_quadratic") {
        return;
    }
    // ET_DYN, no section headers: PT_LOAD RW over the whole file at vaddr 0 and PT_DYNAMIC
    // with 20000 filler entries (DT_DEBUG) before DT_RELA/DT_RELASZ/DT_SYMTAB; 20000 wrappers,
    // each with an R_X86_64_64 relocation against symbol 1.
    let (w, filler) = (20_000u64, 20_000u64);
    let mut d = elf_header(3, 62, 2);
    let dyn_off = 64 + 2 * 56;
    let dyn_len = 16 * (filler + 4);
    let sym_off = dyn_off + dyn_len;
    let wrappers = sym_off + 48;
    let rela = wrappers + 24 * w;
    let total = rela + 24 * w;
    d.extend(phdr(1, 6, 0, 0, total));
    d.extend(phdr(2, 6, dyn_off, dyn_off, dyn_len));
    for _ in 0..filler {
        d.extend(21u64.to_le_bytes());
        d.extend(0u64.to_le_bytes());
    }
    for (tag, val) in [(7u64, rela), (8, 24 * w), (6, sym_off), (0, 0)] {
        d.extend(tag.to_le_bytes());
        d.extend(val.to_le_bytes());
    }
    d.extend([0u8; 24]);
    let mut sym = [0u8; 24];
    sym[6] = 1; // st_shndx 1: defined
    sym[8] = 0x10; // st_value
    d.extend(sym);
    for _ in 0..w {
        d.extend([0x46, 0x50, 0x49, 0x48, 1, 0, 0, 0]);
        d.extend([0u8; 16]);
    }
    for i in 0..w {
        d.extend((wrappers + 24 * i + 8).to_le_bytes());
        d.extend(((1u64 << 32) | 1).to_le_bytes());
        d.extend(0u64.to_le_bytes());
    }
    assert_eq!(d.len() as u64, total);
    let data = arc(d);
    let guard = Guard::new();
    guard.inspect(
        &|| {
            format!(
                "{}-byte ELF, 20000 wrappers x 20000 dynamic entries",
                data.len()
            )
        },
        &data,
        data.len(),
        Opts::Default,
    );
}

// Diagnostic gaps: truncations that lose code objects without any error.

#[test]
fn gap_truncated_archive_symbol_table_is_silent() {
    let data = arc(fixture("libhost.a"));
    let guard = Guard::new();
    let r = guard.inspect(&|| "libhost.a cut at 200".into(), &data, 200, Opts::Default);
    assert!(r.code_objects.is_empty());
    assert!(
        r.has_errors(),
        "no error for a truncated archive: {:?}",
        r.diagnostics
    );
}

#[test]
fn gap_truncated_segments_are_silent() {
    let data = arc(fixture("lib3tu-noshdr.so"));
    let guard = Guard::new();
    let r = guard.inspect(
        &|| "lib3tu-noshdr.so cut at 30000".into(),
        &data,
        30_000,
        Opts::Default,
    );
    // The wrappers are cut off; what the search of the remaining segment bytes finds is
    // reported as embedded code, never as the registered fat binary.
    assert!(r.code_objects.iter().all(|co| {
        r.chain(co.container)
            .iter()
            .any(|c| matches!(c.kind, rocpack_offload::ContainerKind::Embedded { .. }))
    }));
    assert!(
        r.has_errors(),
        "no error for a truncated library: {:?}",
        r.diagnostics
    );
}

#[test]
fn gap_ccob_v1_unknown_length_stops_walk_silently() {
    // Two v1 zlib CCOBs back to back (6 code objects); the first ends at 2913. Cut at 2800:
    // inside the first one's zlib stream.
    let data = arc(fixture("ccob-two-v1-zlib.hipfb"));
    let guard = Guard::new();
    let r = guard.inspect(
        &|| "ccob-two-v1-zlib.hipfb cut at 2800".into(),
        &data,
        2800,
        Opts::Default,
    );
    assert_eq!(r.code_objects.len(), 3);
    assert!(
        r.has_errors(),
        "3 of 6 code objects and no error: {:?}",
        r.diagnostics
    );
}
