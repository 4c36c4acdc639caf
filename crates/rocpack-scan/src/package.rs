//! Packages read in place, never unpacked to disk: Debian `.deb` files, wheels and other zip
//! files, and tarballs (`.tar`, `.tar.gz`, `.tar.xz`, `.tar.zst`).
//!
//! Members are streamed out of the package. A member is held in memory only when its first
//! bytes show device code (an ELF file, an archive, a bundle) and then only up to
//! [`ScanOptions::max_member`]; every other member is skipped as it streams past. Members that
//! need no bytes at all, such as the per-architecture index files of rocBLAS and hipBLASLt,
//! are recorded by name and size. Each member in memory is inspected on a worker thread while
//! the next one is decompressed.
//!
//! A member's result carries the path `PACKAGE!/MEMBER` (the member path without a leading
//! `./`), so a package reads like the tree it would unpack to.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};

use rocpack_bytes::{Bytes, lossless_string};
use rocpack_offload::{Inspection, Options, ReadAt, inspect, sniff};

use crate::map::Mapped;
use crate::{FileResult, ScanOptions, is_data_file};

/// Bytes of a member read to recognise it.
const SNIFF_LEN: usize = 64;
/// Most bytes held in memory at once by members waiting for or under inspection. A single
/// member larger than this is still read, alone.
const IN_FLIGHT_LIMIT: u64 = 2 << 30;
/// Most members read from one package.
const MAX_MEMBERS: usize = 1_000_000;

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
    let mut out = Vec::new();
    let file = match crate::open_regular(path) {
        Ok(f) => f,
        Err(e) => {
            out.push(FileResult::from_io_error(path, &e));
            return out;
        }
    };
    let map = match Mapped::from_file_sequential(&file) {
        Ok(m) => m,
        Err(e) => {
            out.push(FileResult::failed(path, e.to_string()));
            return out;
        }
    };
    let ctx = Ctx {
        path,
        opts,
        progress,
        examined,
    };
    let result = match kind {
        PackageKind::Deb => read_deb(&ctx, &map, &mut out),
        PackageKind::Zip => read_zip(&ctx, &file, &map, &mut out),
        PackageKind::Tar(c) => read_tar_stream(&ctx, "", &map, c, &mut out),
    };
    if let Err(e) = result {
        let mut r = FileResult::failed(path, e);
        r.size = map.len() as u64;
        out.push(r);
    }
    if let Err(e) = map.check_unchanged(&file) {
        // What was read after the package shrank may be zeros: keep only the error.
        out = vec![FileResult::from_io_error(path, &e)];
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
}

/// One member of an `ar` archive.
#[derive(Debug)]
struct ArMember<'a> {
    name: String,
    /// File offset of its data.
    offset: u64,
    /// Its data, as far as the file holds it.
    data: &'a [u8],
    /// The size its header claims.
    claimed: u64,
    /// Bytes of it past the end of the file (a truncated archive).
    missing: u64,
}

fn read_deb(ctx: &Ctx<'_>, data: &[u8], out: &mut Vec<FileResult>) -> Result<(), PackageError> {
    let members = ar_members(data)?;
    match members.first() {
        Some(m) if m.name == "debian-binary" => {}
        _ => return Err("not a Debian package: first ar member is not debian-binary".into()),
    }
    let Some(ArMember {
        name,
        offset,
        data: bytes,
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
    let read = read_tar_stream(ctx, name, bytes, compression, out);
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

/// The members of an `ar` archive: name, offset of the data in the file, data.
fn ar_members(data: &[u8]) -> Result<Vec<ArMember<'_>>, PackageError> {
    if !data.starts_with(b"!<arch>\n") {
        return Err("not an ar archive (no !<arch> magic at file offset 0)".into());
    }
    let mut out = Vec::new();
    let mut pos = 8u64;
    let bytes = Bytes::new(data);
    while pos < data.len() as u64 {
        let header = bytes
            .read_at(pos, 60)
            .map_err(|_| format!("ar member header at file offset {pos:#x} is truncated"))?;
        if header.get(58..60) != Some(b"`\n") {
            return Err(format!(
                "ar member header at file offset {pos:#x} has a bad terminator"
            ));
        }
        let field = |r: std::ops::Range<usize>| {
            header
                .get(r)
                .map(|b| String::from_utf8_lossy(b).trim().to_owned())
                .unwrap_or_default()
        };
        let name = field(0..16).trim_end_matches('/').to_owned();
        let size: u64 = field(48..58).parse().map_err(|_| {
            format!("ar member header at file offset {pos:#x} has a bad size field")
        })?;
        let start = pos + 60;
        // A truncated last member keeps the bytes that are there, so that what they hold can
        // still be read; the caller reports the truncation.
        let body = bytes.read_at_most(start, size);
        let missing = size - body.len() as u64;
        out.push(ArMember {
            name,
            offset: start,
            data: body,
            claimed: size,
            missing,
        });
        if missing > 0 {
            break;
        }
        pos = start + size + (size & 1);
    }
    Ok(out)
}

/// Hands members to worker threads without holding more than [`IN_FLIGHT_LIMIT`] bytes.
struct Budget {
    used: Mutex<u64>,
    freed: Condvar,
}

impl Budget {
    fn new() -> Self {
        Budget {
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    fn acquire(&self, n: u64) {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        while *used > 0 && *used + n > IN_FLIGHT_LIMIT {
            used = self.freed.wait(used).unwrap_or_else(|e| e.into_inner());
        }
        *used += n;
    }

    fn release(&self, n: u64) {
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        *used = used.saturating_sub(n);
        self.freed.notify_all();
    }
}

fn inspect_options(opts: &ScanOptions) -> Options<'static> {
    Options {
        metadata: opts.metadata,
        decompress: opts.decompress,
        max_decompressed: opts.max_decompressed,
        thin_loader: None,
        file: None,
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

fn decoder<'a>(
    data: &'a [u8],
    compression: Compression,
    progress: &'a (dyn Fn(u64) + Sync),
) -> io::Result<Box<dyn Read + 'a>> {
    let raw = Counting {
        inner: data,
        progress,
    };
    Ok(match compression {
        Compression::None => Box::new(raw),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(raw)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::new(raw)?),
        Compression::Xz => {
            // Multi-threaded decoding where the stream has several blocks (dpkg-deb writes
            // them); liblzma falls back to one thread otherwise.
            let threads = std::thread::available_parallelism()
                .map_or(1, |n| u32::try_from(n.get()).unwrap_or(1));
            // liblzma decodes on one thread unless `memlimit_threading` allows more (its
            // default, 0, means one); `memlimit_stop` refuses a stream whose dictionary would
            // need more than 1 GiB (xz -9 needs 65 MiB), so a hostile header cannot make the
            // decoder allocate without bound.
            let stream = liblzma::stream::MtStreamBuilder::new()
                .threads(threads)
                .memlimit_threading(1 << 30)
                .memlimit_stop(1 << 30)
                .decoder()
                .map_err(io::Error::other)?;
            Box::new(liblzma::read::XzDecoder::new_stream(
                io::BufReader::with_capacity(1 << 20, raw),
                stream,
            ))
        }
    })
}

/// Reads a tar stream (`container` names it inside the package, e.g. `data.tar.xz`).
fn read_tar_stream(
    ctx: &Ctx<'_>,
    container: &str,
    data: &[u8],
    compression: Compression,
    out: &mut Vec<FileResult>,
) -> Result<(), PackageError> {
    let Ctx {
        path,
        opts,
        progress,
        examined,
    } = *ctx;
    let where_ = if container.is_empty() {
        "tar stream".to_owned()
    } else {
        container.to_owned()
    };
    let reader = decoder(data, compression, progress).map_err(|e| format!("{where_}: {e}"))?;
    let mut archive = tar::Archive::new(reader);
    let entries = archive.entries().map_err(|e| format!("{where_}: {e}"))?;
    let budget = Budget::new();
    let results: Mutex<Vec<(usize, FileResult)>> = Mutex::new(Vec::new());
    let o = inspect_options(opts);
    let push = |seq: usize, r: FileResult| {
        results
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((seq, r));
    };
    let mut failure = None;
    // In place: this thread decompresses; the pool inspects. (Called outside the pool, so
    // waiting on the budget never starves it.)
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
            if !(kind.is_file() || kind == tar::EntryType::Continuous) {
                continue;
            }
            examined.fetch_add(1, Ordering::Relaxed);
            let name = lossless_string(&entry.path_bytes());
            let display = member_path(path, &name);
            let size = entry.size();
            let mut head = Vec::with_capacity(SNIFF_LEN);
            if let Err(e) = (&mut entry).take(SNIFF_LEN as u64).read_to_end(&mut head) {
                failure = Some(format!(
                    "{where_}: member {name} (header at offset {header_at:#x} in the decompressed stream): {e}"
                ));
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
            budget.acquire(size);
            // The header's size is a claim: reserve only part of it up front and let the
            // vector grow with the bytes actually there.
            let mut buf = Vec::with_capacity(usize::try_from(size.min(64 << 20)).unwrap_or(0));
            buf.extend_from_slice(&head);
            let read = entry.read_to_end(&mut buf);
            if let Err(e) = read {
                budget.release(size);
                failure = Some(format!(
                    "{where_}: member {name} (header at offset {header_at:#x} in the decompressed stream): {e}"
                ));
                break;
            }
            if buf.len() as u64 != size {
                budget.release(size);
                failure = Some(format!(
                    "{where_}: member {name} (header at offset {header_at:#x} in the decompressed stream) is truncated: {} of {size} bytes",
                    buf.len()
                ));
                break;
            }
            let (budget, push) = (&budget, &push);
            scope.spawn(move |_| {
                let inspection = inspect(&buf, &o);
                drop(buf);
                budget.release(size);
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

fn zip_members(data: &[u8]) -> Result<Vec<ZipMember>, PackageError> {
    let bytes = Bytes::new(data);
    let len = data.len() as u64;
    // The end record is 22 bytes plus a comment of up to 65,535.
    let search_from = len.saturating_sub(22 + 0xffff);
    let eocd = (search_from..=len.saturating_sub(22))
        .rev()
        .find(|&p| bytes.u32(p).ok() == Some(EOCD_SIG))
        .ok_or("zip: no end of central directory record (not a zip file, or truncated)")?;
    let rd = |what: &str, r: Result<u64, rocpack_bytes::OutOfBounds>, at: u64| {
        r.map_err(|_| format!("zip: {what} at file offset {at:#x} is truncated"))
    };
    let mut entries = rd("end record", bytes.u16(eocd + 10).map(u64::from), eocd)?;
    let mut cd_size = rd("end record", bytes.u32(eocd + 12).map(u64::from), eocd)?;
    let mut cd_offset = rd("end record", bytes.u32(eocd + 16).map(u64::from), eocd)?;
    if eocd >= 20 && bytes.u32(eocd - 20).ok() == Some(ZIP64_LOCATOR_SIG) {
        let z = rd("zip64 locator", bytes.u64(eocd - 12), eocd - 20)?;
        if bytes.u32(z).ok() != Some(ZIP64_EOCD_SIG) {
            return Err(format!(
                "zip: zip64 end record expected at file offset {z:#x}, not found"
            ));
        }
        entries = rd("zip64 end record", bytes.u64(z + 32), z)?;
        cd_size = rd("zip64 end record", bytes.u64(z + 40), z)?;
        cd_offset = rd("zip64 end record", bytes.u64(z + 48), z)?;
    }
    if cd_offset.checked_add(cd_size).is_none_or(|end| end > len) {
        return Err(format!(
            "zip: central directory at file offset {cd_offset:#x} ({cd_size} bytes) lies past the end of the file"
        ));
    }
    // Each record takes at least 46 bytes, which bounds what the count may claim.
    if entries > cd_size / 46 + 1 {
        return Err(format!(
            "zip: end record claims {entries} members, more than a {cd_size}-byte central directory can hold"
        ));
    }
    let mut out = Vec::with_capacity(usize::try_from(entries).unwrap_or(0).min(MAX_MEMBERS));
    let mut p = cd_offset;
    for i in 0..entries {
        if out.len() >= MAX_MEMBERS {
            return Err(format!("zip: more than {MAX_MEMBERS} members"));
        }
        let bad =
            |_| format!("zip: central directory record #{i} at file offset {p:#x} is truncated");
        if bytes.u32(p).map_err(bad)? != CENTRAL_SIG {
            return Err(format!(
                "zip: central directory record #{i} at file offset {p:#x} has a bad signature"
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

fn read_zip(
    ctx: &Ctx<'_>,
    file: &File,
    data: &[u8],
    out: &mut Vec<FileResult>,
) -> Result<(), PackageError> {
    use rayon::prelude::*;
    let Ctx {
        path,
        opts,
        progress,
        examined,
    } = *ctx;
    let members = zip_members(data)?;
    let bytes = Bytes::new(data);
    let results: Vec<Option<FileResult>> = members
        .par_iter()
        .map(|m| {
            let r = read_zip_member(path, file, &bytes, m, opts, examined);
            progress(m.compressed);
            r
        })
        .collect();
    out.extend(results.into_iter().flatten().map(|mut r| {
        r.package = Some(path.to_path_buf());
        r
    }));
    Ok(())
}

fn read_zip_member(
    path: &Path,
    file: &File,
    bytes: &Bytes<'_>,
    m: &ZipMember,
    opts: &ScanOptions,
    examined: &AtomicUsize,
) -> Option<FileResult> {
    const S_IFMT: u32 = 0o170_000;
    const S_IFLNK: u32 = 0o120_000;
    if m.name.ends_with('/') || m.mode & S_IFMT == S_IFLNK {
        return None;
    }
    examined.fetch_add(1, Ordering::Relaxed);
    let display = member_path(path, &m.name);
    let fail = |msg: String| {
        let mut r = FileResult::failed(&display, msg);
        r.size = m.size;
        Some(r)
    };
    let at = m.local_header;
    let local = |off: u64| bytes.u16(at + off).map(u64::from);
    let (Ok(sig), Ok(name_len), Ok(extra_len)) = (bytes.u32(at), local(26), local(28)) else {
        return fail(format!(
            "zip: local header at file offset {at:#x} is truncated"
        ));
    };
    if sig != LOCAL_SIG {
        return fail(format!(
            "zip: local header at file offset {at:#x} has a bad signature"
        ));
    }
    let start = at + 30 + name_len + extra_len;
    let Ok(raw) = bytes.read_at(start, m.compressed) else {
        return fail(format!(
            "zip: member data at file offset {start:#x} ({} bytes) lies past the end of the file",
            m.compressed
        ));
    };
    if m.flags & 1 != 0 {
        return fail("zip: member is encrypted; not inspected".into());
    }
    let o = inspect_options(opts);
    let data_file = is_data_file(Path::new(&m.name));
    let empty = |size| data_file.then(|| FileResult::read(&display, size, Inspection::default()));
    match m.method {
        0 => {
            if sniff(raw).is_none() {
                return empty(m.size);
            }
            // The member's bytes are inspected in place; a damaged byte anywhere in them would go
            // unseen by the parsers, so check the CRC-32 over the whole member first.
            if let Err(e) = check_crc(raw, m.crc, start) {
                return fail(e);
            }
            let window = Window { file, base: start };
            let o = Options {
                file: Some(&window),
                ..o
            };
            Some(FileResult::read(&display, m.size, inspect(raw, &o)))
        }
        8 => {
            let mut head = Vec::with_capacity(SNIFF_LEN);
            let mut d = flate2::read::DeflateDecoder::new(raw);
            if let Err(e) = (&mut d).take(SNIFF_LEN as u64).read_to_end(&mut head) {
                return fail(format!("zip: deflate data at file offset {start:#x}: {e}"));
            }
            if sniff(&head).is_none() {
                return empty(m.size);
            }
            if m.size > opts.max_member {
                return fail(format!(
                    "member of {} bytes is larger than the limit of {} bytes (--max-member); not inspected",
                    m.size, opts.max_member
                ));
            }
            let mut buf = Vec::with_capacity(usize::try_from(m.size.min(64 << 20)).unwrap_or(0));
            buf.extend_from_slice(&head);
            let limit = m.size.saturating_add(1).saturating_sub(head.len() as u64);
            if let Err(e) = d.take(limit).read_to_end(&mut buf) {
                return fail(format!("zip: deflate data at file offset {start:#x}: {e}"));
            }
            if buf.len() as u64 != m.size {
                return fail(format!(
                    "zip: member at file offset {start:#x} inflates to {} bytes, the directory says {}",
                    buf.len(),
                    m.size
                ));
            }
            if let Err(e) = check_crc(&buf, m.crc, start) {
                return fail(e);
            }
            Some(FileResult::read(&display, m.size, inspect(&buf, &o)))
        }
        other => fail(format!(
            "zip: compression method {other} not supported (stored and deflate are); not inspected"
        )),
    }
}

/// Checks a zip member's bytes against the CRC-32 its directory record gives.
fn check_crc(data: &[u8], expected: u32, start: u64) -> Result<(), String> {
    let mut crc = flate2::Crc::new();
    crc.update(data);
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

    #[test]
    fn ar_keeps_what_a_truncated_member_holds() {
        assert!(ar_members(b"not ar").is_err());
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
        let members = ar_members(&a).unwrap();
        assert_eq!(members.len(), 1);
        assert_eq!(members[0].data, b"2.0\n");
        assert_eq!(members[0].claimed, 999_999);
        assert_eq!(members[0].missing, 999_995);
    }

    #[test]
    fn zip_rejects_lies() {
        assert!(zip_members(b"PK\x03\x04 not really").is_err());
        // An end record claiming a million members in an empty directory.
        let mut z = vec![0u8; 22];
        z[..4].copy_from_slice(&EOCD_SIG.to_le_bytes());
        z[10..12].copy_from_slice(&0xffffu16.to_le_bytes());
        let e = zip_members(&z).unwrap_err();
        assert!(e.contains("claims 65535 members"), "{e}");
    }
}
