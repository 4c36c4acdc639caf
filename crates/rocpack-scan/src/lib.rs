//! Files and directories on disk: expand paths, map each file read-only, inspect files in
//! parallel, and keep going past files that cannot be read.
//!
//! ```no_run
//! use rocpack_scan::{scan, ScanOptions};
//! let results = scan(&["/usr/lib/x86_64-linux-gnu".into()], &ScanOptions::default(), |_, _| ()).results;
//! for r in &results {
//!     println!("{}: {} code objects", r.path.display(), r.inspection.as_ref().map_or(0, |i| i.code_objects.len()));
//! }
//! ```
#![deny(clippy::indexing_slicing)]

pub mod glob;
mod map;
pub mod own;
pub mod package;
pub mod sysroot;
pub mod walk;

use std::path::{Path, PathBuf};

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use rayon::prelude::*;
use rocpack_offload::{
    HEAD_LEN, Inspection, Options, ReadCode, ThinMemberLoader, inspect_head, inspect_with,
};

pub use map::{
    FileChanged, Mapped, NotRegular, TempSpill, open_regular, open_stated, read_regular,
    read_regular_to_string, release_pages,
};
pub use package::{PackageKind, package_kind, read_package};

/// How to scan.
#[derive(Clone)]
pub struct ScanOptions {
    /// Decode kernel metadata.
    pub metadata: bool,
    /// Fully decompress compressed bundles (hash check; needed to extract).
    pub decompress: bool,
    /// Check the hash of each fully decompressed bundle
    /// ([`rocpack_offload::Options::check_hashes`]).
    pub check_hashes: bool,
    /// Ceiling for one decompressed bundle.
    pub max_decompressed: u64,
    /// Report files that hold no GPU code too (otherwise only files with containers).
    pub include_empty: bool,
    /// Also report files that hold no GPU code but whose names mark them as GPU data:
    /// rocBLAS/hipBLASLt index files (`.dat`), MIOpen kernel databases (`.kdb`), code object
    /// files (`.co`, `.hsaco`) (see [`is_data_file`]).
    pub include_data_files: bool,
    /// Read `.deb`, wheel, zip and tar files in place (see [`package`]) instead of as plain
    /// files.
    pub open_packages: bool,
    /// Largest package member held in memory for inspection.
    pub max_member: u64,
    /// Also search executable sections for embedded GPU code
    /// ([`rocpack_offload::Options::search_code`]).
    pub search_code: bool,
    /// `stat` every file before reading any, for the byte total [`scan`]'s progress reports.
    /// Off (no progress shown), a file the directory walk already knows to be regular (its
    /// `d_type`) is opened without that `stat`: one system call fewer per file, and the total
    /// passed to the progress callback is 0.
    pub sizes_first: bool,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            metadata: false,
            decompress: false,
            check_hashes: true,
            max_decompressed: rocpack_offload::DEFAULT_MAX_DECOMPRESSED,
            include_empty: false,
            include_data_files: false,
            open_packages: true,
            max_member: DEFAULT_MAX_MEMBER,
            search_code: false,
            sizes_first: true,
        }
    }
}

/// Default for [`ScanOptions::max_member`]: 8 GiB, above any single ROCm library seen.
pub const DEFAULT_MAX_MEMBER: u64 = 8 << 30;

/// Whether a file's name marks it as GPU data that matters without device code in it: the
/// per-architecture index files of rocBLAS and hipBLASLt (`TensileLibrary_lazy_gfx90a.dat`),
/// MIOpen kernel databases (`gfx90a68.kdb`) and code object files (`.co`, `.hsaco`).
pub fn is_data_file(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "dat" | "kdb" | "co" | "hsaco"))
}

/// The result for one file.
#[derive(Debug)]
pub struct FileResult {
    /// The path as found (given, or below a given directory).
    pub path: PathBuf,
    /// Whether the path was named explicitly (not found by walking a directory).
    pub explicit: bool,
    /// File size in bytes.
    pub size: u64,
    /// What was found; `None` when the file could not be opened.
    pub inspection: Option<Inspection>,
    /// The I/O error, when the file could not be opened or mapped, or a package member could
    /// not be read.
    pub io_error: Option<String>,
    /// The package this is a member of (`path` is then `PACKAGE!/MEMBER`).
    pub package: Option<PathBuf>,
    /// The diagnostic code of `io_error` when it has one (docs/diagnostics.md):
    /// `not-regular-file` for a FIFO, socket or device skipped without opening it,
    /// `file-changed` for a file that shrank while it was read.
    pub io_error_code: Option<ReadCode>,
}

impl FileResult {
    /// A result for a file (or package member) that was read.
    pub fn read(path: &Path, size: u64, inspection: Inspection) -> Self {
        FileResult {
            path: path.to_path_buf(),
            explicit: false,
            size,
            inspection: Some(inspection),
            io_error: None,
            package: None,
            io_error_code: None,
        }
    }

    /// A result for a file that could not be read.
    pub fn failed(path: &Path, error: String) -> Self {
        FileResult {
            path: path.to_path_buf(),
            explicit: true,
            size: 0,
            inspection: None,
            io_error: Some(error),
            package: None,
            io_error_code: None,
        }
    }

    /// A result for a file that could not be read because of `error`, with the diagnostic code
    /// for a file that is not a regular file or that changed while being read.
    pub fn from_io_error(path: &Path, error: &std::io::Error) -> Self {
        let mut r = Self::failed(path, error.to_string());
        r.io_error_code = io_error_code(error);
        r
    }

    /// Whether reading this file hit an error (I/O or malformed content).
    pub fn has_errors(&self) -> bool {
        self.io_error.is_some() || self.inspection.as_ref().is_some_and(Inspection::has_errors)
    }
}

/// The diagnostic code for an I/O error that has one (see [`FileResult::io_error_code`]).
pub fn io_error_code(error: &std::io::Error) -> Option<ReadCode> {
    if NotRegular::of_error(error).is_some() {
        Some(ReadCode::NotRegularFile)
    } else if FileChanged::is(error) {
        Some(ReadCode::FileChanged)
    } else {
        None
    }
}

/// A path that could not be read, with the reason.
pub type PathError = (PathBuf, String);

/// Expands paths into files: files as given, directories walked recursively (symbolic links
/// inside directories are not followed, so `libx.so.1 -> libx.so.1.2` is read once), sorted
/// per directory for a stable order. Unreadable directories become errors in the result.
/// FIFOs, sockets and devices are listed like files, so that whoever opens them (through
/// [`open_regular`]) reports them as skipped; nothing here opens a file. rocpack's own
/// temporary files ([`own::is_temp`]) are not listed.
pub fn expand(paths: &[PathBuf]) -> (Vec<(PathBuf, bool)>, Vec<PathError>) {
    let (entries, errors) = expand_entries(paths);
    let files = entries.into_iter().map(|e| (e.path, e.explicit)).collect();
    (files, errors)
}

/// [`expand`], keeping what the walk knows of each file's type.
fn expand_entries(paths: &[PathBuf]) -> (Vec<walk::Entry>, Vec<PathError>) {
    let (entries, errors) = walk::walk(paths);
    let files = entries
        .into_iter()
        .filter(|e| e.kind != walk::Kind::Symlink)
        .collect();
    let errors = errors
        .into_iter()
        .map(|(p, e)| {
            let message = match e {
                walk::WalkError::Path(e)
                | walk::WalkError::Dir(e)
                | walk::WalkError::Listing(e)
                | walk::WalkError::Entry(e) => e.to_string(),
                walk::WalkError::TooDeep => "directory nesting deeper than 64".into(),
            };
            (p, message)
        })
        .collect();
    (files, errors)
}

struct DirLoader<'a> {
    dir: &'a Path,
}

impl ThinMemberLoader for DirLoader<'_> {
    fn with_member(&self, name: &str, f: &mut dyn FnMut(&[u8])) -> Result<(), String> {
        // Thin archives store member paths relative to the archive (GNU ar and llvm-ar).
        let path = self.dir.join(name);
        Mapped::with_file(&path, |bytes| f(bytes)).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// Inspects one file. `sink` receives every complete entry's bytes.
pub fn inspect_file(
    path: &Path,
    opts: &ScanOptions,
    sink: Option<rocpack_offload::Sink<'_>>,
) -> FileResult {
    let opened = open_regular(path).and_then(|file| {
        let len = file.metadata()?.len();
        Ok((file, len))
    });
    match opened {
        Ok((file, len)) => inspect_opened(path, &file, len, opts, sink),
        Err(e) => FileResult::from_io_error(path, &e),
    }
}

/// Files up to this size that their head does not decide are read whole with `pread` instead
/// of being mapped: a map costs mmap, madvise, page faults and an munmap whose TLB shootdown
/// interrupts the other threads, more than copying this much from the page cache.
const READ_WHOLE: u64 = 128 << 10;

thread_local! {
    /// This thread's buffer for files read whole and for file heads, reused from file to file.
    static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Inspects the open regular file `file` of `len` bytes: from its first bytes when they decide
/// it (a file that is no container, a code object: see [`rocpack_offload::inspect_head`]);
/// else read whole when small, mapped when large.
fn inspect_opened(
    path: &Path,
    file: &std::fs::File,
    len: u64,
    opts: &ScanOptions,
    mut sink: Option<rocpack_offload::Sink<'_>>,
) -> FileResult {
    #[cfg(debug_assertions)]
    shrink_for_test(path);
    let dir = path.parent().unwrap_or(Path::new("."));
    let loader = DirLoader { dir };
    let o = Options {
        metadata: opts.metadata,
        decompress: opts.decompress,
        check_hashes: opts.check_hashes,
        max_decompressed: opts.max_decompressed,
        thin_loader: Some(&loader),
        file: None,
        spill: Some(&map::TempSpill),
        search_code: opts.search_code,
    };
    let whole = len <= READ_WHOLE;
    if whole || sink.is_none() {
        // The head first: most files are decided by it (no container, a code object); a small
        // file that needs more is then read to its end, a large one mapped.
        let mut read = |buf: &mut Vec<u8>| -> Result<Option<Inspection>, std::io::Error> {
            let head = len.min(HEAD_LEN as u64);
            buf.clear();
            buf.resize(usize::try_from(head).map_err(std::io::Error::other)?, 0);
            let got = read_fully(file, buf, 0)?;
            if got < head {
                // The file is shorter than it was a moment ago.
                return Err(FileChanged::error(file, got));
            }
            if sink.is_none() {
                if let Some(i) = inspect_head(buf, len, &o) {
                    return Ok(Some(i));
                }
            }
            if !whole {
                return Ok(None);
            }
            buf.resize(usize::try_from(len).map_err(std::io::Error::other)?, 0);
            let got = read_fully(file, buf, head)?;
            if got < len {
                return Err(FileChanged::error(file, got));
            }
            Ok(Some(inspect_with(buf, &o, sink.take())))
        };
        let done = BUFFER.with(|b| match b.try_borrow_mut() {
            Ok(mut buf) => read(&mut buf),
            Err(_) => read(&mut Vec::new()),
        });
        match done {
            Ok(Some(inspection)) => {
                let mut r = FileResult::read(path, len, inspection);
                r.explicit = true;
                return r;
            }
            Ok(None) => {}
            Err(e) => {
                let mut r = FileResult::from_io_error(path, &e);
                r.size = len;
                return r;
            }
        }
    }
    let map = match Mapped::from_file_with_len(file, len) {
        Ok(m) => m,
        Err(e) => return FileResult::from_io_error(path, &e),
    };
    let file = GuardedFile {
        file,
        len,
        short_read: AtomicU64::new(NO_SHORT_READ),
    };
    let o = Options {
        file: Some(&file),
        ..o
    };
    let inspection = inspect_with(&map, &o, sink);
    let short = file.short_read.load(Ordering::Relaxed);
    let changed = map
        .fault_offset()
        .or((short != NO_SHORT_READ).then_some(short));
    if let Some(offset) = changed {
        // What was read may be zeros in place of the lost tail: discard it.
        let mut r = FileResult::from_io_error(path, &FileChanged::error(file.file, offset));
        r.size = len;
        return r;
    }
    let mut r = FileResult::read(path, len, inspection);
    r.explicit = true;
    r
}

/// Fills `buf` from offset `from` on with the bytes of `file` at the same offsets (fewer when
/// the file ends first); returns the offset where the bytes read end.
fn read_fully(file: &std::fs::File, buf: &mut [u8], from: u64) -> std::io::Result<u64> {
    let mut filled = usize::try_from(from).map_err(std::io::Error::other)?;
    while let Some(rest) = buf.get_mut(filled..).filter(|r| !r.is_empty()) {
        match std::os::unix::fs::FileExt::read_at(file, rest, filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled as u64)
}

/// Test hook, in debug builds only: `ROCPACK_TEST_SHRINK_AFTER_MAP=NAME:LEN` truncates the
/// file named NAME to LEN bytes right after it is mapped, so that a test can make a file shrink
/// under a read deterministically (another process doing it races with the read).
#[cfg(debug_assertions)]
fn shrink_for_test(path: &Path) {
    let Some(spec) = std::env::var_os("ROCPACK_TEST_SHRINK_AFTER_MAP") else {
        return;
    };
    let spec = spec.to_string_lossy();
    let Some((name, len)) = spec.rsplit_once(':') else {
        return;
    };
    if path.file_name().is_some_and(|n| n == name) {
        if let Ok(len) = len.parse() {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|f| f.set_len(len));
        }
    }
}

const NO_SHORT_READ: u64 = u64::MAX;

/// The inspected file's positional reads, noting a read that finds the file shorter than it
/// was mapped (the pread twin of the map's fault guard).
struct GuardedFile<'a> {
    file: &'a std::fs::File,
    len: u64,
    short_read: AtomicU64,
}

impl rocpack_offload::ReadAt for GuardedFile<'_> {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = std::os::unix::fs::FileExt::read_at(self.file, buf, offset)?;
        let wanted_end = offset.saturating_add(buf.len() as u64).min(self.len);
        let got_end = offset.saturating_add(n as u64);
        if got_end < wanted_end {
            let _ = self.short_read.compare_exchange(
                NO_SHORT_READ,
                got_end,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
        Ok(n)
    }
}

/// Inspects every file under `paths` in parallel; results come back in path order, package
/// members in member order after their package's place. `progress` is called (from worker
/// threads) with (bytes done, bytes total): a plain file counts its size once inspected, a
/// package its compressed bytes as they are consumed.
pub fn scan(paths: &[PathBuf], opts: &ScanOptions, progress: impl Fn(u64, u64) + Sync) -> Scanned {
    let (files, errors) = expand_entries(paths);
    // Stated on every thread: on a warm cache this loop is thousands of statx calls.
    // One file (`list lib.so`) is read on this thread: handing it to the pool costs thread
    // starts and wake-ups, which on a busy machine wait for a time slice each.
    let parallel = files.len() > 1;
    let open_packages = opts.open_packages;
    let sizes_first = opts.sizes_first;
    let stat = |f| stat_one(f, open_packages, sizes_first);
    let sized: Vec<(&PathBuf, bool, u64, Option<PackageKind>, bool)> = if parallel {
        files.par_iter().map(stat).collect()
    } else {
        files.iter().map(stat).collect()
    };
    let total: u64 = sized.iter().map(|f| f.2).sum();
    let done = AtomicU64::new(0);
    let examined = AtomicUsize::new(0);
    let advance = |n: u64| progress(done.fetch_add(n, Ordering::Relaxed) + n, total);
    let keep = |r: &FileResult| {
        opts.include_empty
            || r.explicit
            || r.io_error.is_some()
            || r.inspection
                .as_ref()
                .is_some_and(|i| !i.code_objects.is_empty() || !i.diagnostics.is_empty())
            || (opts.include_data_files && is_data_file(&r.path))
    };
    // Packages are read one at a time, each with its own parallelism inside; plain files in
    // parallel with each other.
    let inspect_one = |(path, explicit, size, kind, regular): &(
        &PathBuf,
        bool,
        u64,
        Option<PackageKind>,
        bool,
    )| {
        if kind.is_some() {
            return Vec::new();
        }
        // Stated just above as a regular file: open it without a second stat.
        let mut r = if *regular {
            match open_stated(path) {
                Ok((file, len)) => inspect_opened(path, &file, len, opts, None),
                Err(e) => FileResult::from_io_error(path, &e),
            }
        } else {
            inspect_file(path, opts, None)
        };
        r.explicit = *explicit;
        advance(*size);
        examined.fetch_add(1, Ordering::Relaxed);
        if keep(&r) { vec![r] } else { Vec::new() }
    };
    let mut per_file: Vec<Vec<FileResult>> = if parallel {
        sized.par_iter().map(inspect_one).collect()
    } else {
        sized.iter().map(inspect_one).collect()
    };
    for (slot, (path, explicit, size, kind, _)) in per_file.iter_mut().zip(&sized) {
        if let Some(kind) = kind {
            let members = read_package(path, *kind, opts, &advance, &examined);
            let mut members: Vec<FileResult> = members.into_iter().filter(|r| keep(r)).collect();
            if members.is_empty() && *explicit {
                // Say that the package was read, even when nothing in it holds GPU code.
                let mut r = FileResult::read(path, *size, Inspection::default());
                r.explicit = true;
                members.push(r);
            }
            *slot = members;
        }
    }
    let mut results: Vec<FileResult> = per_file.into_iter().flatten().collect();
    results.extend(
        errors
            .into_iter()
            .map(|(path, e)| FileResult::failed(&path, e)),
    );
    Scanned {
        results,
        examined: examined.into_inner(),
    }
}

/// A file found by [`expand_entries`], its size, the package kind it is read as and whether it
/// is a regular file, from one `stat`; without `sizes_first`, a file the walk found as a regular
/// file (not one named on the command line, which may be anything) is not stated, and its size
/// is left 0.
fn stat_one(
    e: &walk::Entry,
    open_packages: bool,
    sizes_first: bool,
) -> (&PathBuf, bool, u64, Option<PackageKind>, bool) {
    let p = &e.path;
    let (size, regular) = if !sizes_first && !e.explicit && e.kind == walk::Kind::File {
        (0, true)
    } else {
        let meta = std::fs::metadata(p).ok();
        let size = meta.as_ref().map_or(0, std::fs::Metadata::len);
        // A FIFO named `x.whl` is refused by `inspect_file`, not read as a package.
        (size, meta.is_some_and(|m| m.is_file()))
    };
    let kind = (open_packages && regular)
        .then(|| package_kind(p))
        .flatten();
    (p, e.explicit, size, kind, regular)
}

/// What [`scan`] found.
#[derive(Debug)]
pub struct Scanned {
    /// One result per file (or package member) kept.
    pub results: Vec<FileResult>,
    /// Files and package members examined, kept or not.
    pub examined: usize,
}
