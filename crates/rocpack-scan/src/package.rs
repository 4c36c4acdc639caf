//! Packages read in place, never unpacked to disk: Debian `.deb` files, wheels and other zip
//! files, and tarballs (`.tar`, `.tar.gz`, `.tar.xz`, `.tar.zst`).
//!
//! Members are streamed out of the package, read from the file with `pread`, so the
//! package's pages are not held by the process (stored zip members alone are inspected
//! through a map of the package, which touches only the pages the inspection reads). A member is kept only
//! when its first bytes show device code (an ELF file, an archive, a bundle) and then only up
//! to [`ScanOptions::max_member`]; every other member is skipped as it streams past. Members
//! that need no bytes at all, such as the per-architecture index files of rocBLAS and
//! hipBLASLt, are recorded by name and size.
//!
//! A kept member of up to [`IN_MEMORY_MAX`] bytes is held in memory; a larger one is written
//! to an anonymous temporary file in `$TMPDIR` (`O_TMPFILE`, or unlinked as soon as it is
//! created, so it is removed however the process ends), sparse where the member holds runs of
//! zeros, and then inspected exactly as a file on disk is: mapped, with small headers read by
//! `pread` ([`Options::file`]). Members kept at once are bounded by one set of limits for the
//! whole package, zip included: [`MEMORY_LIMIT`] bytes in memory and [`SPILL_LIMIT`] bytes
//! in temporary files (a single larger member is still read, alone). Each kept member is
//! inspected on a worker thread while the next one is decompressed.
//!
//! Decompression is bounded: a zip member must inflate to exactly the size its directory
//! record declares, and a compressed tar stream may not grow past
//! `max(`[`STREAM_FLOOR`]`, `[`STREAM_RATIO`]` x compressed size)`; either is an error naming
//! the package, the member and its offset. Zip members whose data lie at the same offset
//! (several central-directory records for one member) are read once and reported under every
//! name; a member whose data overlap another's (a zip-bomb construction) is an error.
//!
//! A member's result carries the path `PACKAGE!/MEMBER` (the member path without a leading
//! `./`), so a package reads like the tree it would unpack to.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use rocpack_bytes::{Budget, Bytes, Permit, lossless_string};
use rocpack_offload::{CodeObject, Inspection, Options, ReadAt, inspect_with, sniff};

use crate::map::Mapped;
use crate::{FileResult, ScanOptions, is_data_file};

/// Bytes of a member read to recognise it.
const SNIFF_LEN: usize = 64;
/// Largest member held in memory; larger ones are spilled to a temporary file.
pub const IN_MEMORY_MAX: u64 = 8 << 20;
/// Most bytes held in memory at once by members waiting for or under inspection.
pub const MEMORY_LIMIT: u64 = 32 << 20;
/// Most bytes held in temporary files at once by members waiting for or under inspection.
/// A single member larger than this is still read, alone.
pub const SPILL_LIMIT: u64 = 2 << 30;
/// A compressed tar stream may decompress to this many bytes whatever its size.
pub const STREAM_FLOOR: u64 = 4 << 30;
/// Beyond [`STREAM_FLOOR`], a compressed tar stream may decompress to this many times its
/// compressed size (real packages stay under 20; deflate cannot exceed 1032).
pub const STREAM_RATIO: u64 = 1024;
/// Memory liblzma's decoder threads may take between them (see [`decoder`]).
const XZ_THREADS_MEMORY: u64 = 64 << 20;
/// Memory an xz stream may need at all; a stream that needs more is refused.
const XZ_MEMORY_STOP: u64 = 128 << 20;
/// Most members read from one package.
const MAX_MEMBERS: usize = 1_000_000;
/// Largest zip central directory read (about 400,000 members with 100-byte names).
const MAX_CENTRAL_DIRECTORY: u64 = 64 << 20;
/// Bytes moved per read while spilling or checking a CRC.
const CHUNK: usize = 1 << 20;
/// Zero runs of this many aligned bytes are left as holes in a spilled member.
const HOLE: usize = 64 << 10;

/// Receives every complete code object found in a package member, with the member's path
/// (`PACKAGE!/MEMBER`) and its inspection so far. Called from worker threads.
pub type PackageSink<'s> = &'s (dyn Fn(&Path, &Inspection, &CodeObject, &[u8]) + Sync);

/// The kinds of package read in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackageKind {
    /// A Debian binary package: an `ar` archive holding `data.tar.*`.
    Deb,
    /// A zip file: Python wheels (`.whl`), `.zip`.
    Zip,
    /// A tar stream, possibly compressed.
    Tar(Compression),
}

/// How a tar stream is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Xz,
    Zstd,
}

impl Compression {
    fn from_suffix(name: &str) -> Option<Compression> {
        Some(if name.ends_with(".tar") {
            Compression::None
        } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
            Compression::Gzip
        } else if name.ends_with(".tar.xz") || name.ends_with(".txz") {
            Compression::Xz
        } else if name.ends_with(".tar.zst") || name.ends_with(".tzst") {
            Compression::Zstd
        } else {
            return None;
        })
    }
}

/// The package kind of a path, judged by its name: `.deb`/`.udeb`/`.ddeb`, `.whl`/`.zip`,
/// `.tar` and its compressed forms. Other files are `None` (a static library is an `ar`
/// archive too, but is read as one by the inspection).
pub fn package_kind(path: &Path) -> Option<PackageKind> {
    let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
    if name.ends_with(".deb") || name.ends_with(".udeb") || name.ends_with(".ddeb") {
        Some(PackageKind::Deb)
    } else if name.ends_with(".whl") || name.ends_with(".zip") {
        Some(PackageKind::Zip)
    } else {
        Compression::from_suffix(&name).map(PackageKind::Tar)
    }
}

/// The display path of a member: `PACKAGE!/MEMBER`.
pub fn member_path(package: &Path, member: &str) -> PathBuf {
    let mut s = package.as_os_str().to_owned();
    s.push("!/");
    s.push(member.trim_start_matches("./").trim_start_matches('/'));
    PathBuf::from(s)
}

/// Reads one package in place. Results come back in member order; a package that cannot be
/// read, or whose member table is broken part-way, adds a result for the package itself with
/// the error (after the members read before it). `progress` receives compressed bytes
/// consumed, as they are consumed; `examined` counts the regular-file members seen.
pub fn read_package(
    path: &Path,
    kind: PackageKind,
    opts: &ScanOptions,
    progress: &(dyn Fn(u64) + Sync),
    examined: &AtomicUsize,
) -> Vec<FileResult> {
    read_package_with(path, kind, opts, progress, examined, None)
}

/// [`read_package`], giving every complete code object's bytes to `sink` (to extract them).
/// A zip member read under several names reaches the sink once, under its first name.
pub fn read_package_with(
    path: &Path,
    kind: PackageKind,
    opts: &ScanOptions,
    progress: &(dyn Fn(u64) + Sync),
    examined: &AtomicUsize,
    sink: Option<PackageSink<'_>>,
) -> Vec<FileResult> {
    let mut out = Vec::new();
    let opened = crate::open_regular(path).and_then(|f| {
        let len = f.metadata()?.len();
        Ok((f, len))
    });
    let (file, len) = match opened {
        Ok(f) => f,
        Err(e) => {
            out.push(FileResult::from_io_error(path, &e));
            return out;
        }
    };
    let ctx = Ctx {
        path,
        opts,
        progress,
        examined,
        sink,
        limits: Limits::new(),
    };
    let pkg = Region {
        file: &file,
        base: 0,
        len,
    };
    let result = match kind {
        PackageKind::Deb => read_deb(&ctx, pkg, &mut out),
        PackageKind::Zip => read_zip(&ctx, pkg, &mut out),
        PackageKind::Tar(c) => read_tar_stream(&ctx, "", pkg, c, &mut out),
    };
    if let Err(e) = result {
        let mut r = FileResult::failed(path, e);
        r.size = len;
        out.push(r);
    }
    out
}

/// A package's own error, as text naming the container and byte offset.
type PackageError = String;

/// What every reader of one package needs.
struct Ctx<'a> {
    path: &'a Path,
    opts: &'a ScanOptions,
    progress: &'a (dyn Fn(u64) + Sync),
    examined: &'a AtomicUsize,
    sink: Option<PackageSink<'a>>,
    limits: Limits,
}

impl Ctx<'_> {
    /// Inspects a member's bytes, giving its code objects to the sink.
    fn inspect(&self, display: &Path, held: &Held) -> Inspection {
        let o = Options {
            file: held.file(),
            ..inspect_options(self.opts)
        };
        match self.sink {
            Some(sink) => {
                let mut each = |i: &Inspection, co: &CodeObject, b: &[u8]| sink(display, i, co, b);
                inspect_with(held.bytes(), &o, Some(&mut each))
            }
            None => inspect_with(held.bytes(), &o, None),
        }
    }
}

/// A byte range of an open file, read with `pread`.
#[derive(Clone, Copy)]
struct Region<'a> {
    file: &'a File,
    base: u64,
    len: u64,
}

impl<'a> Region<'a> {
    /// `len` bytes at `offset` into the region, or an error when the region holds fewer.
    fn read_vec(&self, offset: u64, len: u64) -> Result<Vec<u8>, String> {
        let short = || {
            format!(
                "{len} bytes at file offset {:#x} lie past the end of the file",
                self.base.saturating_add(offset)
            )
        };
        let end = offset.checked_add(len).ok_or_else(short)?;
        if end > self.len {
            return Err(short());
        }
        let n = usize::try_from(len).map_err(|_| short())?;
        let mut buf = vec![0u8; n];
        let at = self.base.checked_add(offset).ok_or_else(short)?;
        self.file
            .read_exact_at(&mut buf, at)
            .map_err(|e| format!("{len} bytes at file offset {at:#x}: {e}"))?;
        Ok(buf)
    }

    /// A reader from `offset` to the end of the region.
    fn reader(&self, offset: u64) -> RegionReader<'a> {
        RegionReader {
            file: self.file,
            pos: self.base.saturating_add(offset),
            end: self.base.saturating_add(self.len),
        }
    }
}

/// Sequential reads of a [`Region`].
struct RegionReader<'a> {
    file: &'a File,
    pos: u64,
    end: u64,
}

impl Read for RegionReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.end.saturating_sub(self.pos)).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        let Some(buf) = buf.get_mut(..want) else {
            return Ok(0);
        };
        if buf.is_empty() {
            return Ok(0);
        }
        let n = FileExt::read_at(self.file, buf, self.pos)?;
        self.pos = self.pos.saturating_add(n as u64);
        Ok(n)
    }
}

/// One member of an `ar` archive.
#[derive(Debug)]
struct ArMember {
    name: String,
    /// File offset of its data.
    offset: u64,
    /// Bytes of its data the file holds.
    len: u64,
    /// The size its header claims.
    claimed: u64,
    /// Bytes of it past the end of the file (a truncated archive).
    missing: u64,
}

fn read_deb(ctx: &Ctx<'_>, pkg: Region<'_>, out: &mut Vec<FileResult>) -> Result<(), PackageError> {
    let members = ar_members(pkg)?;
    match members.first() {
        Some(m) if m.name == "debian-binary" => {}
        _ => return Err("not a Debian package: first ar member is not debian-binary".into()),
    }
    let Some(ArMember {
        name,
        offset,
        len,
        claimed,
        missing,
    }) = members.iter().find(|m| m.name.starts_with("data.tar"))
    else {
        return Err("Debian package without a data.tar member".into());
    };
    let compression = match name.as_str() {
        "data.tar" => Compression::None,
        "data.tar.gz" => Compression::Gzip,
        "data.tar.xz" => Compression::Xz,
        "data.tar.zst" => Compression::Zstd,
        other => {
            return Err(format!(
                "ar member {other} at file offset {offset:#x}: compression not supported (gz, xz, zst and none are)"
            ));
        }
    };
    (ctx.progress)(*offset);
    let data = Region {
        file: pkg.file,
        base: *offset,
        len: *len,
    };
    let read = read_tar_stream(ctx, name, data, compression, out);
    if *missing > 0 {
        // The members read before the cut are kept; the truncation is the package's error.
        let cut = format!(
            "ar member {name} at file offset {offset:#x} claims {claimed} bytes, {missing} of them past the end of the file (truncated package)"
        );
        return Err(match read {
            Err(e) => format!("{cut}; {e}"),
            Ok(()) => cut,
        });
    }
    read
}

/// The members of an `ar` archive: name, offset of the data in the file, size. Read with the one
/// ar reader (`rocpack_offload::archive`) over a map of the package, which touches only the
/// pages of the member headers.
fn ar_members(pkg: Region<'_>) -> Result<Vec<ArMember>, PackageError> {
    let magic = pkg.read_vec(0, 8).unwrap_or_default();
    if magic != b"!<arch>\n" {
        return Err("not an ar archive (no !<arch> magic at file offset 0)".into());
    }
    let map = Mapped::from_file(pkg.file).map_err(|e| format!("cannot map the package: {e}"))?;
    let data = Bytes::new(&map).read_at_most(pkg.base, pkg.len);
    let mut out = Vec::new();
    let members = rocpack_offload::archive::members(data)
        .map_err(|e| format!("ar archive at file offset {:#x}: {}", pkg.base, e.message))?;
    for m in members {
        if out.len() >= MAX_MEMBERS {
            return Err(format!("ar archive: more than {MAX_MEMBERS} members"));
        }
        let m = m.map_err(|e| {
            format!(
                "ar archive: {} (file offset {:#x})",
                e.message,
                pkg.base.saturating_add(e.offset)
            )
        })?;
        // A truncated last member keeps the bytes that are there, so that what they hold can
        // still be read; the caller reports the truncation.
        let len = m.data(data).len() as u64;
        let missing = m.size - len;
        out.push(ArMember {
            name: m.name.trim_end_matches('/').to_owned(),
            offset: m.offset,
            len,
            claimed: m.size,
            missing,
        });
        if missing > 0 {
            break;
        }
    }
    map.check_unchanged(pkg.file)
        .map_err(|e| format!("ar archive: {e}"))?;
    Ok(out)
}

/// The limits on members kept at once, shared by every thread reading one package.
struct Limits {
    memory: Budget,
    spill: Budget,
}

impl Limits {
    fn new() -> Self {
        Limits {
            memory: Budget::new(MEMORY_LIMIT),
            spill: Budget::new(SPILL_LIMIT),
        }
    }

    /// Room for a member of `size` bytes, in memory or in a temporary file as its size says.
    fn acquire(&self, size: u64) -> Permit<'_> {
        if size <= IN_MEMORY_MAX {
            self.memory.acquire(size)
        } else {
            self.spill.acquire(size)
        }
    }
}

/// A member's bytes, kept for inspection.
enum Held {
    Memory(Vec<u8>),
    /// In an anonymous temporary file (no name, so removed when closed), mapped.
    Spilled {
        file: File,
        map: Mapped,
    },
}

impl Held {
    fn bytes(&self) -> &[u8] {
        match self {
            Held::Memory(v) => v,
            Held::Spilled { map, .. } => map,
        }
    }

    fn file(&self) -> Option<&dyn ReadAt> {
        match self {
            Held::Memory(_) => None,
            Held::Spilled { file, .. } => Some(file),
        }
    }
}

/// Reads the rest of a member of `size` bytes whose first bytes, `head`, were read already:
/// into memory up to [`IN_MEMORY_MAX`], else into a sparse temporary file. With `crc`, the
/// CRC-32 of the whole member is checked. `what` names the member and its offset for errors.
/// More bytes than `size` is an error (a decompression bomb), fewer too (a truncated member).
fn hold(
    head: &[u8],
    rest: &mut dyn Read,
    size: u64,
    crc: Option<u32>,
    what: &dyn Fn() -> String,
) -> Result<Held, String> {
    let mut sum = flate2::Crc::new();
    sum.update(head);
    let mut got = head.len() as u64;
    // One byte more than declared is enough to know the member is larger than it says.
    let mut rest = rest.take(size.saturating_sub(got).saturating_add(1));
    let held = if size <= IN_MEMORY_MAX {
        let mut buf = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        buf.extend_from_slice(head);
        rest.read_to_end(&mut buf)
            .map_err(|e| format!("{}: {e}", what()))?;
        sum.update(buf.get(head.len()..).unwrap_or_default());
        got = buf.len() as u64;
        Held::Memory(buf)
    } else {
        let file = tempfile::tempfile().map_err(|e| {
            format!(
                "{}: cannot create a temporary file in {} for a member of {size} bytes: {e}",
                what(),
                std::env::temp_dir().display()
            )
        })?;
        let write_err = |e: io::Error| {
            format!(
                "{}: cannot write a temporary file in {}: {e}",
                what(),
                std::env::temp_dir().display()
            )
        };
        file.write_all_at(head, 0).map_err(write_err)?;
        let mut chunk = vec![0u8; CHUNK];
        loop {
            let n = read_full(&mut rest, &mut chunk).map_err(|e| format!("{}: {e}", what()))?;
            let Some(data) = chunk.get(..n) else { break };
            if data.is_empty() {
                break;
            }
            sum.update(data);
            // Runs of zeros stay holes: a member of gigabytes of zeros costs no disk.
            let mut at = got;
            for piece in data.chunks(HOLE) {
                if piece.iter().any(|&b| b != 0) {
                    file.write_all_at(piece, at).map_err(write_err)?;
                }
                at = at.saturating_add(piece.len() as u64);
            }
            got = at;
        }
        file.set_len(got).map_err(write_err)?;
        let map = Mapped::from_file(&file)
            .map_err(|e| format!("{}: cannot map the temporary file: {e}", what()))?;
        Held::Spilled { file, map }
    };
    if got > size {
        return Err(format!(
            "{}: decompresses to more than the {size} bytes declared for it (decompression bomb); not inspected",
            what()
        ));
    }
    if got < size {
        return Err(format!("{} is truncated: {got} of {size} bytes", what()));
    }
    if let Some(expected) = crc {
        if sum.sum() != expected {
            return Err(format!(
                "{} fails its CRC-32 check ({:#010x}, expected {expected:#010x})",
                what(),
                sum.sum()
            ));
        }
    }
    Ok(held)
}

/// Fills `buf` as far as the reader goes; returns how many bytes were read.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while let Some(rest) = buf.get_mut(n..) {
        if rest.is_empty() {
            break;
        }
        match r.read(rest) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

fn inspect_options(opts: &ScanOptions) -> Options<'static> {
    Options {
        metadata: opts.metadata,
        decompress: opts.decompress,
        check_hashes: opts.check_hashes,
        max_decompressed: opts.max_decompressed,
        thin_loader: None,
        file: None,
        spill: Some(&crate::map::TempSpill),
        search_code: opts.search_code,
    }
}

/// Counts bytes read through it and reports them.
struct Counting<'a, R> {
    inner: R,
    progress: &'a (dyn Fn(u64) + Sync),
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        (self.progress)(n as u64);
        Ok(n)
    }
}

/// Refuses to give more than `left` bytes: the bound on a decompressed stream.
struct Ceiling<R> {
    inner: R,
    left: u64,
    limit: u64,
}

impl<R: Read> Read for Ceiling<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.left = self.left.checked_sub(n as u64).ok_or_else(|| {
            io::Error::other(format!(
                "the stream decompresses to more than {} bytes ({STREAM_RATIO} times its compressed size, at least {STREAM_FLOOR}): decompression bomb",
                self.limit
            ))
        })?;
        Ok(n)
    }
}

fn decoder<'a>(
    data: Region<'a>,
    compression: Compression,
    progress: &'a (dyn Fn(u64) + Sync),
) -> io::Result<Box<dyn Read + 'a>> {
    let raw = Counting {
        inner: data.reader(0),
        progress,
    };
    let decoded: Box<dyn Read + 'a> = match compression {
        Compression::None => return Ok(Box::new(io::BufReader::with_capacity(1 << 20, raw))),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(raw)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(raw)?),
        Compression::Xz => {
            // Multi-threaded decoding where the stream has several blocks (dpkg-deb writes
            // them); liblzma falls back to one thread otherwise.
            let threads = std::thread::available_parallelism()
                .map_or(1, |n| u32::try_from(n.get()).unwrap_or(1));
            // liblzma decodes on one thread unless `memlimit_threading` allows more (its
            // default, 0, means one). Each thread holds a whole block in and out (dpkg-deb's
            // blocks are 24 MiB: two threads took 150 MB), so the threads get 64 MiB between
            // them and liblzma runs as many as fit. `memlimit_stop` refuses a stream whose
            // dictionary would need more than 128 MiB (xz -9 needs 65 MiB; zstd's decoder has
            // the same default ceiling), so a hostile header cannot make it allocate more.
            let stream = liblzma::stream::MtStreamBuilder::new()
                .threads(threads)
                .memlimit_threading(XZ_THREADS_MEMORY)
                .memlimit_stop(XZ_MEMORY_STOP)
                .decoder()
                .map_err(io::Error::other)?;
            Box::new(liblzma::read::XzDecoder::new_stream(
                io::BufReader::with_capacity(1 << 20, raw),
                stream,
            ))
        }
    };
    let limit = data.len.saturating_mul(STREAM_RATIO).max(STREAM_FLOOR);
    Ok(Box::new(Ceiling {
        inner: decoded,
        left: limit,
        limit,
    }))
}

/// Reads a tar stream (`container` names it inside the package, e.g. `data.tar.xz`).
fn read_tar_stream(
    ctx: &Ctx<'_>,
    container: &str,
    data: Region<'_>,
    compression: Compression,
    out: &mut Vec<FileResult>,
) -> Result<(), PackageError> {
    let Ctx {
        path,
        opts,
        progress,
        examined,
        ..
    } = *ctx;
    let where_ = if container.is_empty() {
        "tar stream".to_owned()
    } else {
        container.to_owned()
    };
    let reader = decoder(data, compression, progress).map_err(|e| format!("{where_}: {e}"))?;
    let mut archive = tar::Archive::new(reader);
    let entries = archive.entries().map_err(|e| format!("{where_}: {e}"))?;
    let results: Mutex<Vec<(usize, FileResult)>> = Mutex::new(Vec::new());
    let push = |seq: usize, r: FileResult| {
        results
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((seq, r));
    };
    let mut failure = None;
    // In place: this thread decompresses; the pool inspects. (Called outside the pool, so
    // waiting on the limits never starves it.)
    rayon::in_place_scope(|scope| {
        for (seq, entry) in entries.enumerate() {
            if seq >= MAX_MEMBERS {
                failure = Some(format!("{where_}: more than {MAX_MEMBERS} members"));
                break;
            }
            let mut entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    failure = Some(format!("{where_}: member #{seq}: {e}"));
                    break;
                }
            };
            let header_at = entry.raw_header_position();
            let kind = entry.header().entry_type();
            if !(kind.is_file() || kind == tar::EntryType::Continuous || kind.is_gnu_sparse()) {
                continue;
            }
            examined.fetch_add(1, Ordering::Relaxed);
            let name = lossless_string(&entry.path_bytes());
            let display = member_path(path, &name);
            let size = entry.size();
            let what = || {
                format!(
                    "{where_}: member {name} (header at offset {header_at:#x} in the decompressed stream)"
                )
            };
            let mut head = Vec::with_capacity(SNIFF_LEN);
            if let Err(e) = (&mut entry).take(SNIFF_LEN as u64).read_to_end(&mut head) {
                failure = Some(format!("{}: {e}", what()));
                break;
            }
            if sniff(&head).is_none() {
                if is_data_file(Path::new(&name)) {
                    push(seq, FileResult::read(&display, size, Inspection::default()));
                }
                continue;
            }
            if size > opts.max_member {
                let mut r = FileResult::failed(
                    &display,
                    format!(
                        "member of {size} bytes is larger than the limit of {} bytes (--max-member); not inspected",
                        opts.max_member
                    ),
                );
                r.size = size;
                push(seq, r);
                continue;
            }
            let permit = ctx.limits.acquire(size);
            let held = match hold(&head, &mut entry, size, None, &what) {
                Ok(h) => h,
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            };
            let push = &push;
            scope.spawn(move |_| {
                let inspection = ctx.inspect(&display, &held);
                drop(held);
                drop(permit);
                push(seq, FileResult::read(&display, size, inspection));
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(seq, _)| *seq);
    out.extend(results.into_iter().map(|(_, mut r)| {
        r.package = Some(path.to_path_buf());
        r
    }));
    match failure {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

/// One member of a zip file, from its central directory.
#[derive(Debug, Clone)]
struct ZipMember {
    name: String,
    method: u16,
    flags: u16,
    crc: u32,
    compressed: u64,
    size: u64,
    local_header: u64,
    mode: u32,
}

const EOCD_SIG: u32 = 0x0605_4b50;
const ZIP64_LOCATOR_SIG: u32 = 0x0706_4b50;
const ZIP64_EOCD_SIG: u32 = 0x0606_4b50;
const CENTRAL_SIG: u32 = 0x0201_4b50;
const LOCAL_SIG: u32 = 0x0403_4b50;

/// The central directory of a zip file. Reads the end of the file and the directory itself,
/// nothing else.
fn zip_members(pkg: Region<'_>) -> Result<Vec<ZipMember>, PackageError> {
    let len = pkg.len;
    // The end record is 22 bytes plus a comment of up to 65,535; the zip64 locator takes
    // 20 bytes before it.
    let tail_at = len.saturating_sub(22 + 0xffff + 20);
    let tail = pkg.read_vec(tail_at, len - tail_at)?;
    let tail_bytes = Bytes::new(&tail);
    let eocd_in_tail = (0..=tail_bytes.len().saturating_sub(22))
        .rev()
        .find(|&p| tail_bytes.u32(p).ok() == Some(EOCD_SIG))
        .ok_or("zip: no end of central directory record (not a zip file, or truncated)")?;
    let eocd = tail_at + eocd_in_tail;
    let rd = |what: &str, r: Result<u64, rocpack_bytes::OutOfBounds>, at: u64| {
        r.map_err(|_| format!("zip: {what} at file offset {at:#x} is truncated"))
    };
    let t = eocd_in_tail;
    let mut entries = rd("end record", tail_bytes.u16(t + 10).map(u64::from), eocd)?;
    let mut cd_size = rd("end record", tail_bytes.u32(t + 12).map(u64::from), eocd)?;
    let mut cd_offset = rd("end record", tail_bytes.u32(t + 16).map(u64::from), eocd)?;
    if t >= 20 && tail_bytes.u32(t - 20).ok() == Some(ZIP64_LOCATOR_SIG) {
        let z = rd("zip64 locator", tail_bytes.u64(t - 12), eocd - 20)?;
        let rec = pkg.read_vec(z, 56).map_err(|_| {
            format!("zip: zip64 end record expected at file offset {z:#x}, not found")
        })?;
        let rec = Bytes::new(&rec);
        if rec.u32(0).ok() != Some(ZIP64_EOCD_SIG) {
            return Err(format!(
                "zip: zip64 end record expected at file offset {z:#x}, not found"
            ));
        }
        entries = rd("zip64 end record", rec.u64(32), z)?;
        cd_size = rd("zip64 end record", rec.u64(40), z)?;
        cd_offset = rd("zip64 end record", rec.u64(48), z)?;
    }
    if cd_offset.checked_add(cd_size).is_none_or(|end| end > len) {
        return Err(format!(
            "zip: central directory at file offset {cd_offset:#x} ({cd_size} bytes) lies past the end of the file"
        ));
    }
    if cd_size > MAX_CENTRAL_DIRECTORY {
        return Err(format!(
            "zip: central directory at file offset {cd_offset:#x} is {cd_size} bytes, more than the {MAX_CENTRAL_DIRECTORY} read"
        ));
    }
    // Each record takes at least 46 bytes, which bounds what the count may claim.
    if entries > cd_size / 46 + 1 {
        return Err(format!(
            "zip: end record claims {entries} members, more than a {cd_size}-byte central directory can hold"
        ));
    }
    let cd = pkg.read_vec(cd_offset, cd_size)?;
    let bytes = Bytes::new(&cd);
    let mut out = Vec::with_capacity(usize::try_from(entries).unwrap_or(0).min(MAX_MEMBERS));
    // Offsets below are into the directory; errors give file offsets.
    let mut p = 0u64;
    for i in 0..entries {
        if out.len() >= MAX_MEMBERS {
            return Err(format!("zip: more than {MAX_MEMBERS} members"));
        }
        let at = cd_offset + p;
        let bad =
            |_| format!("zip: central directory record #{i} at file offset {at:#x} is truncated");
        if bytes.u32(p).map_err(bad)? != CENTRAL_SIG {
            return Err(format!(
                "zip: central directory record #{i} at file offset {at:#x} has a bad signature"
            ));
        }
        let flags = bytes.u16(p + 8).map_err(bad)?;
        let method = bytes.u16(p + 10).map_err(bad)?;
        let crc = bytes.u32(p + 16).map_err(bad)?;
        let mut compressed = u64::from(bytes.u32(p + 20).map_err(bad)?);
        let mut size = u64::from(bytes.u32(p + 24).map_err(bad)?);
        let name_len = u64::from(bytes.u16(p + 28).map_err(bad)?);
        let extra_len = u64::from(bytes.u16(p + 30).map_err(bad)?);
        let comment_len = u64::from(bytes.u16(p + 32).map_err(bad)?);
        let mode = bytes.u32(p + 38).map_err(bad)? >> 16;
        let mut local_header = u64::from(bytes.u32(p + 42).map_err(bad)?);
        let name = lossless_string(bytes.read_at(p + 46, name_len).map_err(bad)?);
        // Zip64: the extra field holds the 64-bit values whose 32-bit fields are all ones.
        let extra = bytes.read_at(p + 46 + name_len, extra_len).map_err(bad)?;
        let mut x = 0u64;
        let extra = Bytes::new(extra);
        while x + 4 <= extra_len {
            let id = extra.u16(x).map_err(bad)?;
            let n = u64::from(extra.u16(x + 2).map_err(bad)?);
            if id == 1 {
                let mut q = x + 4;
                for field in [&mut size, &mut compressed, &mut local_header] {
                    if *field == 0xffff_ffff {
                        *field = extra.u64(q).map_err(bad)?;
                        q += 8;
                    }
                }
            }
            x += 4 + n;
        }
        out.push(ZipMember {
            name,
            method,
            flags,
            crc,
            compressed,
            size,
            local_header,
            mode,
        });
        p += 46 + name_len + extra_len + comment_len;
    }
    Ok(out)
}

/// Positional reads of one member stored uncompressed in a zip file.
struct Window<'a> {
    file: &'a File,
    base: u64,
}

impl ReadAt for Window<'_> {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let at = self
            .base
            .checked_add(offset)
            .ok_or_else(|| io::Error::other("offset overflow"))?;
        std::os::unix::fs::FileExt::read_at(self.file, buf, at)
    }
}

/// Where a zip member's data lie, from its local header; or why they cannot be found.
fn zip_data_start(pkg: Region<'_>, m: &ZipMember) -> Result<u64, String> {
    let at = m.local_header;
    let h = pkg
        .read_vec(at, 30)
        .map_err(|_| format!("zip: local header at file offset {at:#x} is truncated"))?;
    let h = Bytes::new(&h);
    let (Ok(sig), Ok(name_len), Ok(extra_len)) = (h.u32(0), h.u16(26), h.u16(28)) else {
        return Err(format!(
            "zip: local header at file offset {at:#x} is truncated"
        ));
    };
    if sig != LOCAL_SIG {
        return Err(format!(
            "zip: local header at file offset {at:#x} has a bad signature"
        ));
    }
    let start = at + 30 + u64::from(name_len) + u64::from(extra_len);
    if start
        .checked_add(m.compressed)
        .is_none_or(|end| end > pkg.len)
    {
        return Err(format!(
            "zip: member data at file offset {start:#x} ({} bytes) lies past the end of the file",
            m.compressed
        ));
    }
    Ok(start)
}

/// How one zip member is read.
enum ZipPlan {
    /// Not a file (a directory or a symbolic link).
    Skip,
    /// Read from `start`.
    Read(u64),
    /// Read under the name of member #i, whose data lie at the same offset.
    Same(usize),
    /// Not read, for this reason.
    Fail(String),
}

/// Plans each member: where its data lie, which members share data (read once), which
/// overlap another's data (an error).
fn plan_zip(pkg: Region<'_>, members: &[ZipMember]) -> Vec<ZipPlan> {
    const S_IFMT: u32 = 0o170_000;
    const S_IFLNK: u32 = 0o120_000;
    let mut plans: Vec<ZipPlan> = members
        .iter()
        .map(|m| {
            if m.name.ends_with('/') || m.mode & S_IFMT == S_IFLNK {
                ZipPlan::Skip
            } else {
                zip_data_start(pkg, m).map_or_else(ZipPlan::Fail, ZipPlan::Read)
            }
        })
        .collect();
    // Members with data, by where the data start (and, for equal starts, member order).
    let mut ranges: Vec<(u64, u64, usize)> = plans
        .iter()
        .zip(members)
        .enumerate()
        .filter_map(|(i, (p, m))| match p {
            ZipPlan::Read(start) if m.compressed > 0 => Some((*start, m.compressed, i)),
            _ => None,
        })
        .collect();
    ranges.sort_unstable();
    let mut first_at: HashMap<(u64, u64), usize> = HashMap::new();
    let mut reach: Option<(u64, usize)> = None;
    for (start, len, i) in ranges {
        let end = start.saturating_add(len);
        if let Some(&j) = first_at.get(&(start, len)) {
            let same = members.get(j).zip(members.get(i)).is_some_and(|(a, b)| {
                (a.method, a.crc, a.size, a.flags & 1) == (b.method, b.crc, b.size, b.flags & 1)
            });
            if let Some(p) = plans.get_mut(i) {
                *p = if same {
                    ZipPlan::Same(j)
                } else {
                    ZipPlan::Fail(format!(
                        "zip: member data at file offset {start:#x} are those of member {} with a different size, CRC or method; not inspected",
                        members.get(j).map_or("", |m| m.name.as_str())
                    ))
                };
            }
            continue;
        }
        if let Some((reach_end, j)) = reach {
            if start < reach_end {
                if let Some(p) = plans.get_mut(i) {
                    *p = ZipPlan::Fail(format!(
                        "zip: member data at file offset {start:#x} ({len} bytes) overlap those of member {} (overlapping members are a zip-bomb construction); not inspected",
                        members.get(j).map_or("", |m| m.name.as_str())
                    ));
                }
                continue;
            }
        }
        first_at.insert((start, len), i);
        if reach.is_none_or(|(e, _)| end > e) {
            reach = Some((end, i));
        }
    }
    plans
}

fn read_zip(ctx: &Ctx<'_>, pkg: Region<'_>, out: &mut Vec<FileResult>) -> Result<(), PackageError> {
    use rayon::prelude::*;
    let members = zip_members(pkg)?;
    let plans = plan_zip(pkg, &members);
    // Stored members are inspected straight from the mapped package, as a file on disk is:
    // only the pages the inspection touches are read.
    let map = Mapped::from_file(pkg.file).map_err(|e| format!("cannot map the file: {e}"))?;
    let mut results: Vec<Option<FileResult>> = members
        .par_iter()
        .zip(&plans)
        .map(|(m, plan)| {
            let r = match plan {
                ZipPlan::Skip => None,
                ZipPlan::Same(_) => {
                    ctx.examined.fetch_add(1, Ordering::Relaxed);
                    None
                }
                ZipPlan::Fail(e) => {
                    ctx.examined.fetch_add(1, Ordering::Relaxed);
                    let mut r = FileResult::failed(&member_path(ctx.path, &m.name), e.clone());
                    r.size = m.size;
                    Some(r)
                }
                ZipPlan::Read(start) => {
                    ctx.examined.fetch_add(1, Ordering::Relaxed);
                    read_zip_member(ctx, pkg, &map, m, *start)
                }
            };
            (ctx.progress)(m.compressed);
            r
        })
        .collect();
    // A member read under another's name gets that member's result under its own.
    for (i, plan) in plans.iter().enumerate() {
        if let (ZipPlan::Same(j), Some(m)) = (plan, members.get(i)) {
            let copy = results
                .get(*j)
                .and_then(Option::as_ref)
                .map(|r| FileResult {
                    path: member_path(ctx.path, &m.name),
                    explicit: r.explicit,
                    size: r.size,
                    inspection: r.inspection.clone(),
                    io_error: r.io_error.clone(),
                    io_error_code: r.io_error_code,
                    package: None,
                });
            if let Some(slot) = results.get_mut(i) {
                *slot = copy;
            }
        }
    }
    if let Err(e) = map.check_unchanged(pkg.file) {
        // The package shrank while stored members were read from its map: what was read
        // past the new end may be zeros, so keep only the error.
        out.push(FileResult::from_io_error(ctx.path, &e));
        return Ok(());
    }
    out.extend(results.into_iter().flatten().map(|mut r| {
        r.package = Some(ctx.path.to_path_buf());
        r
    }));
    Ok(())
}

fn read_zip_member(
    ctx: &Ctx<'_>,
    pkg: Region<'_>,
    map: &Mapped,
    m: &ZipMember,
    start: u64,
) -> Option<FileResult> {
    let display = member_path(ctx.path, &m.name);
    let fail = |msg: String| {
        let mut r = FileResult::failed(&display, msg);
        r.size = m.size;
        Some(r)
    };
    if m.flags & 1 != 0 {
        return fail("zip: member is encrypted; not inspected".into());
    }
    let data_file = is_data_file(Path::new(&m.name));
    let empty = |size| data_file.then(|| FileResult::read(&display, size, Inspection::default()));
    let what = || format!("zip: member {} (data at file offset {start:#x})", m.name);
    match m.method {
        0 => {
            let Ok(raw) = Bytes::new(map).read_at(start, m.compressed) else {
                return fail(format!(
                    "zip: member data at file offset {start:#x} ({} bytes) lies past the end of the file",
                    m.compressed
                ));
            };
            if sniff(raw).is_none() {
                return empty(m.size);
            }
            // The member's bytes are inspected in place; a damaged byte anywhere in them would go
            // unseen by the parsers, so check the CRC-32 over the whole member first (read with
            // pread, so that its pages are not mapped into the process).
            if let Err(e) = check_crc(pkg, start, m.compressed, m.crc) {
                return fail(e);
            }
            let window = Window {
                file: pkg.file,
                base: start,
            };
            let o = Options {
                file: Some(&window),
                ..inspect_options(ctx.opts)
            };
            let inspection = match ctx.sink {
                Some(sink) => {
                    let mut each =
                        |i: &Inspection, co: &CodeObject, b: &[u8]| sink(&display, i, co, b);
                    inspect_with(raw, &o, Some(&mut each))
                }
                None => inspect_with(raw, &o, None),
            };
            Some(FileResult::read(&display, m.size, inspection))
        }
        8 => {
            let mut head = Vec::with_capacity(SNIFF_LEN);
            let mut d = flate2::read::DeflateDecoder::new(
                Region {
                    file: pkg.file,
                    base: start,
                    len: m.compressed,
                }
                .reader(0),
            );
            if let Err(e) = (&mut d).take(SNIFF_LEN as u64).read_to_end(&mut head) {
                return fail(format!("zip: deflate data at file offset {start:#x}: {e}"));
            }
            if sniff(&head).is_none() {
                return empty(m.size);
            }
            if m.size > ctx.opts.max_member {
                return fail(format!(
                    "member of {} bytes is larger than the limit of {} bytes (--max-member); not inspected",
                    m.size, ctx.opts.max_member
                ));
            }
            let _permit = ctx.limits.acquire(m.size);
            let held = match hold(&head, &mut d, m.size, Some(m.crc), &what) {
                Ok(h) => h,
                Err(e) => return fail(e),
            };
            Some(FileResult::read(
                &display,
                m.size,
                ctx.inspect(&display, &held),
            ))
        }
        other => fail(format!(
            "zip: compression method {other} not supported (stored and deflate are); not inspected"
        )),
    }
}

/// Checks a stored zip member's bytes against the CRC-32 its directory record gives.
fn check_crc(pkg: Region<'_>, start: u64, len: u64, expected: u32) -> Result<(), String> {
    let mut crc = flate2::Crc::new();
    let mut r = Region {
        file: pkg.file,
        base: start,
        len,
    }
    .reader(0);
    let mut chunk = vec![0u8; CHUNK.min(usize::try_from(len).unwrap_or(CHUNK))];
    loop {
        let n = read_full(&mut r, &mut chunk)
            .map_err(|e| format!("zip: member data at file offset {start:#x}: {e}"))?;
        match chunk.get(..n) {
            Some(data) if !data.is_empty() => crc.update(data),
            _ => break,
        }
    }
    if crc.sum() == expected {
        Ok(())
    } else {
        Err(format!(
            "zip: member at file offset {start:#x} fails its CRC-32 check ({:#010x}, expected {expected:#010x})",
            crc.sum()
        ))
    }
}

/// `PACKAGE!/MEMBER` back into its parts; `None` for a plain path.
pub fn split_member_path(path: &Path) -> Option<(PathBuf, String)> {
    let bytes = path.as_os_str().as_bytes();
    let at = bytes.windows(2).position(|w| w == b"!/")?;
    let package = PathBuf::from(OsString::from_vec(bytes.get(..at)?.to_vec()));
    package_kind(&package)?;
    Some((package, lossless_string(bytes.get(at + 2..)?)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_name() {
        assert_eq!(
            package_kind(Path::new("a/x_1.0_amd64.deb")),
            Some(PackageKind::Deb)
        );
        assert_eq!(
            package_kind(Path::new("torch-2.5-cp311.whl")),
            Some(PackageKind::Zip)
        );
        assert_eq!(
            package_kind(Path::new("rocm.tar.ZST")),
            Some(PackageKind::Tar(Compression::Zstd))
        );
        assert_eq!(
            package_kind(Path::new("x.tgz")),
            Some(PackageKind::Tar(Compression::Gzip))
        );
        assert_eq!(package_kind(Path::new("libfoo.a")), None);
        assert_eq!(package_kind(Path::new("libfoo.so")), None);
    }

    #[test]
    fn member_paths_round_trip() {
        let p = member_path(Path::new("/d/x.deb"), "./usr/lib/libx.so");
        assert_eq!(p, Path::new("/d/x.deb!/usr/lib/libx.so"));
        assert_eq!(
            split_member_path(&p),
            Some((PathBuf::from("/d/x.deb"), "usr/lib/libx.so".to_owned()))
        );
        assert_eq!(split_member_path(Path::new("/d/x!/y")), None);
    }

    /// A file holding `bytes`, for the readers that take a file.
    fn file_with(bytes: &[u8]) -> File {
        use std::io::Write;
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(bytes).unwrap();
        f
    }

    fn region(f: &File) -> Region<'_> {
        Region {
            file: f,
            base: 0,
            len: f.metadata().unwrap().len(),
        }
    }

    #[test]
    fn ar_keeps_what_a_truncated_member_holds() {
        assert!(ar_members(region(&file_with(b"not ar"))).is_err());
        let mut a = b"!<arch>\n".to_vec();
        a.extend_from_slice(
            format!(
                "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
                "debian-binary", 0, 0, 0, 644, 999_999
            )
            .as_bytes(),
        );
        a.extend_from_slice(b"2.0\n");
        // The claim is not believed: the member holds the 4 bytes there are, and says how
        // many are missing; nothing is allocated for the claim.
        let f = file_with(&a);
        let members = ar_members(region(&f)).unwrap();
        assert_eq!(members.len(), 1);
        assert_eq!(members[0].offset, 68);
        assert_eq!(members[0].len, 4);
        assert_eq!(members[0].claimed, 999_999);
        assert_eq!(members[0].missing, 999_995);
    }

    #[test]
    fn zip_rejects_lies() {
        assert!(zip_members(region(&file_with(b"PK\x03\x04 not really"))).is_err());
        // An end record claiming a million members in an empty directory.
        let mut z = vec![0u8; 22];
        z[..4].copy_from_slice(&EOCD_SIG.to_le_bytes());
        z[10..12].copy_from_slice(&0xffffu16.to_le_bytes());
        let e = zip_members(region(&file_with(&z))).unwrap_err();
        assert!(e.contains("claims 65535 members"), "{e}");
    }
}
