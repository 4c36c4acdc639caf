//! Writing a planned rewrite so that the file is, at every moment, either the old one or the
//! new one, and the new one is known good before it replaces the old.
//!
//! 1. The new content goes to an unnamed temporary file (`O_TMPFILE`) in the destination's
//!    directory (a named `.NAME.rocpack-PID.tmp` where the filesystem has no `O_TMPFILE`).
//!    Bytes that do not change are copied by the kernel, skipping holes; bytes that become zero
//!    are never written, so they are holes.
//! 2. The temporary file is read back and checked: everything outside the rewritten bundles
//!    identical to the original, every rewritten bundle holding exactly the intended entries
//!    with bytes identical to the originals (decompressing a new CCOB and checking its hash),
//!    every other byte of a bundle's place zero.
//! 3. Owner, mode, extended attributes and timestamps are copied; the file is fsynced, given
//!    its temporary name, renamed over the destination, and the directory is fsynced.
//!
//! A process killed before step 3's rename leaves the original untouched and, with
//! `O_TMPFILE`, nothing else; a temporary name left by a kill between link and rename is
//! removed by the next run ([`sweep`], once per destination directory).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::plan::{self, FilePlan, Limits, Rewrite, Skip};
use crate::stream::{self, Discard, Input, Intent, Output, ProduceError, Produced, Sink};
use crate::sys;

/// What to do with a file that has other hard links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum HardLinks {
    /// Refuse to rewrite it (the default): a rename would split it from its other names.
    #[default]
    Refuse,
    /// Rewrite this name; the other names keep the original content.
    Break,
}

/// How to write.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// Keep the original as `NAME.orig` (a hard link to the old inode, so it costs nothing).
    pub backup: bool,
    /// Hard link handling.
    pub hard_links: HardLinks,
    /// Planning limits (also used to check new CCOBs).
    pub limits: Limits,
}

/// Apparent and allocated size of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Sizes {
    /// `st_size`.
    pub apparent: u64,
    /// `st_blocks * 512`.
    pub allocated: u64,
}

/// What a write did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Written {
    /// The file written.
    pub path: PathBuf,
    /// Sizes of the original.
    pub before: Sizes,
    /// Sizes of the new file.
    pub after: Sizes,
    /// Where the original was kept (`--backup`).
    pub backup: Option<PathBuf>,
    /// Things worth knowing (extended attributes not kept, hard links broken).
    pub notes: Vec<String>,
}

/// A failed write: the destination is untouched.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct WriteError {
    /// The file that was to be written.
    pub path: PathBuf,
    /// What went wrong, with the step.
    pub message: String,
}

/// Fault injection for the tests: `ROCPACK_FAULT=<step>` kills the process with SIGKILL at
/// that step (`after-write`, `after-verify`, `after-fsync`, `after-link`, `after-rename`); with
/// `corrupt` changes a byte of the temporary file before it is checked; with `dir-fsync` makes
/// the directory's fsync after the rename fail.
fn fault(step: &str) {
    if std::env::var("ROCPACK_FAULT").is_ok_and(|f| f == step) {
        sys::kill_self();
    }
}

/// Test hook: `ROCPACK_FAULT=shrink-source` truncates the source to half its size once the new
/// file is written, as another process might while rocpack reads it.
fn shrink_source_requested(src: &File) {
    if std::env::var("ROCPACK_FAULT").is_ok_and(|f| f == "shrink-source") {
        use std::os::fd::AsRawFd;
        let fd = format!("/proc/self/fd/{}", src.as_raw_fd());
        if let (Ok(f), Ok(m)) = (
            std::fs::OpenOptions::new().write(true).open(fd),
            src.metadata(),
        ) {
            let _ = f.set_len(m.len() / 2);
        }
    }
}

fn corrupt_requested() -> bool {
    std::env::var("ROCPACK_FAULT").is_ok_and(|f| f == "corrupt")
}

/// Removes the temporary files killed rocpacks left in `dir`: those no live process holds (a
/// rewrite holds its temporary file with `flock` from creation to rename, so a run is recognised
/// whatever its program is called). Call it once per destination directory before writing
/// there; returns the names removed.
pub fn sweep(dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return removed;
    };
    for e in entries.flatten() {
        let path = e.path();
        if !rocpack_scan::own::is_temp(&path) || sys::held(&path) {
            continue;
        }
        if std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// Writes `plan` of the file `src` (whose bytes are `old`) to `dest` (which may be `src`).
///
/// # Errors
/// [`WriteError`] when anything fails; `dest` is then as it was.
///
/// `before` is `src`'s metadata taken when it was opened, before anything read it (reading
/// updates the access time, which the new file must not take). A `dest` that is `src` itself
/// (`-o` naming the input) is rewritten in place, with every check that implies.
#[allow(clippy::too_many_arguments)]
pub fn apply(
    src: &File,
    before: &sys::Meta,
    old: &[u8],
    plan: &mut FilePlan,
    dest: &Path,
    in_place: bool,
    opts: &WriteOptions,
    progress: &Progress<'_>,
) -> Result<Written, WriteError> {
    let err = |message: String| WriteError {
        path: dest.to_path_buf(),
        message,
    };
    let meta = before.clone();
    let in_place = in_place || same_file(dest, meta.dev_ino);
    let mut notes = Vec::new();
    // A backup a run left when it was stopped between keeping the original and renaming the
    // new file over it: the original's second name is its own backup, not a hard link to keep.
    let left_backup = if in_place {
        existing_backup(dest, meta.dev_ino)
    } else {
        None
    };
    if let (Some(b), false) = (&left_backup, opts.backup) {
        notes.push(format!(
            "{} (left by an interrupted run) keeps the original",
            b.display()
        ));
    }
    if in_place {
        if meta.mode & 0o200 == 0 {
            return Err(err(format!(
                "is read-only (mode {:04o}); not rewritten (make it writable first)",
                meta.mode
            )));
        }
        let links = meta.nlink - u64::from(left_backup.is_some());
        if links > 1 {
            match opts.hard_links {
                HardLinks::Refuse => {
                    return Err(err(format!(
                        "has {} hard links; rewriting it would give this name new content and \
                         leave the others with the old; not rewritten (pass --hard-links=break \
                         to do that, or rewrite a copy)",
                        links
                    )));
                }
                HardLinks::Break => notes.push(format!(
                    "had {links} hard links: the other names keep the original content"
                )),
            }
        }
    }
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };

    let new = NewFile::create(dest, 0o600).map_err(|e| {
        err(format!(
            "cannot create a temporary file in {}: {e}",
            dir.display()
        ))
    })?;
    let tmp = &new.file;
    let cleanup = |e: WriteError| {
        new.discard();
        e
    };

    // The source must not have changed under us: a file that shrank while it was read gives
    // zeros from its map (rocpack_scan::map), which the new file must not carry, whether it
    // replaces the source or goes to -o. Checked before the new file is verified against the
    // source's bytes (so the error says what happened) and again just before the rename.
    let unchanged = || -> Result<(), WriteError> {
        let now = sys::meta(src).map_err(|e| err(format!("cannot stat: {e}")))?;
        let same_inode = !in_place
            || std::fs::metadata(dest).ok().is_some_and(|m| {
                use std::os::unix::fs::MetadataExt;
                (m.dev(), m.ino()) == meta.dev_ino
            });
        if now.size != meta.size || now.mtime != meta.mtime || !same_inode {
            return Err(err(if in_place {
                "changed while it was being rewritten; not replaced".into()
            } else {
                "its source changed while it was being read; not written".into()
            }));
        }
        Ok(())
    };

    let input = Input::file(old, src);
    fill(input, src, tmp, plan, opts.limits, progress)
        .map_err(|e| cleanup(err(format!("writing the new file failed: {e}"))))?;
    if !plan.changes() {
        let why = plan
            .skipped
            .iter()
            .rfind(|s| s.error)
            .map_or_else(String::new, |s| format!(": {}", s.reason));
        return Err(cleanup(err(format!("not rewritten{why}"))));
    }
    fault("after-write");
    shrink_source_requested(src);
    unchanged().map_err(cleanup)?;
    if corrupt_requested() {
        corrupt(tmp, plan);
    }
    let new_len = tmp
        .metadata()
        .map_err(|e| cleanup(err(format!("cannot stat the new file: {e}"))))?
        .len();
    if new_len != plan.new_len {
        return Err(cleanup(err(format!(
            "the new file failed verification, so the original was left as it is: it has \
             {new_len} bytes, {} were intended",
            plan.new_len
        ))));
    }
    // The disk writes the new bytes while they are checked, so that the fsync below has little
    // left to wait for. An error here fails the rewrite: a later fsync may not report it again.
    // (A failed check still waits for the sync of a file about to be discarded: rare, and
    // harmless.)
    let (early_sync, checked) = std::thread::scope(|s| {
        let early = s.spawn(|| tmp.sync_data());
        let checked = check(Input::file(&[], tmp), input, plan, opts.limits, progress);
        (early.join(), checked)
    });
    checked.map_err(|m| {
        cleanup(err(format!(
            "the new file failed verification, so the original was left as it is: {m}"
        )))
    })?;
    match early_sync {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(cleanup(err(format!("fsync failed: {e}")))),
        Err(_) => return Err(cleanup(err("fsync failed: its thread panicked".into()))),
    }
    fault("after-verify");

    notes.extend(
        sys::keep_meta(tmp, src, &meta, in_place)
            .map_err(|e| cleanup(err(format!("cannot keep the file's metadata: {e}"))))?,
    );
    sys::fsync(tmp).map_err(|e| cleanup(err(format!("fsync failed: {e}"))))?;
    fault("after-fsync");

    unchanged().map_err(cleanup)?;
    let named = new.name().map_err(|e| {
        err(format!(
            "cannot name the temporary file {}: {e}",
            new.named.display()
        ))
    })?;
    fault("after-link");
    let backup = if let (true, Some(b)) = (opts.backup, &left_backup) {
        Some(b.clone())
    } else if opts.backup && dest.exists() {
        let b = backup_path(dest);
        if let Err(e) = std::fs::hard_link(dest, &b) {
            let _ = std::fs::remove_file(named);
            return Err(err(format!(
                "cannot keep the original as {}: {e}",
                b.display()
            )));
        }
        Some(b)
    } else {
        None
    };
    if let Err(e) = std::fs::rename(named, dest) {
        let _ = std::fs::remove_file(named);
        if let Some(b) = &backup {
            let _ = std::fs::remove_file(b);
        }
        return Err(err(format!("cannot replace the file: {e}")));
    }
    fault("after-rename");
    // The new file is in place from here on: a failure now is reported, not an error.
    let synced = sync_dir(&dir);
    if let Err(e) = synced {
        notes.push(format!(
            "the new file is in place, but fsync of {} failed ({e}): a crash before the \
             system writes the directory may bring back the old file",
            dir.display()
        ));
    }
    let after = sys::meta(tmp).map_err(|e| err(format!("cannot stat: {e}")))?;
    Ok(Written {
        path: dest.to_path_buf(),
        before: Sizes {
            apparent: meta.size,
            allocated: meta.allocated,
        },
        after: Sizes {
            apparent: after.size,
            allocated: after.allocated,
        },
        backup,
        notes,
    })
}

/// A new file being written beside its destination, out of sight until it is named and renamed
/// over it: an unnamed temporary (`O_TMPFILE`) where the filesystem has them, else the name
/// `rocpack_scan::own::temp_name` gives (which walks skip and sweeps recognise). It is locked
/// while this process runs, so a sweep by another run leaves it alone. Every file rocpack
/// writes goes through it: [`apply`] (a rewritten binary) and [`write_file`] (anything else).
pub struct NewFile {
    /// The file to write.
    pub file: File,
    /// The directory it is in (the destination's).
    pub dir: PathBuf,
    named: PathBuf,
    /// Whether the file has its temporary name (from the start, or given by [`NewFile::name`]).
    is_named: std::cell::Cell<bool>,
}

impl NewFile {
    /// A new file in `dest`'s directory, created with `mode` (less the umask).
    ///
    /// # Errors
    /// The directory does not take a new file, or the file cannot be locked.
    pub fn create(dest: &Path, mode: u32) -> io::Result<NewFile> {
        NewFile::open(dest, mode, true)
    }

    /// A new file with its temporary name from the start (no `O_TMPFILE`, so nothing needs
    /// `/proc` to name it): for small files, where a killed run leaving a temporary matters
    /// less than writing from a chroot or sandbox.
    ///
    /// # Errors
    /// As [`NewFile::create`].
    pub fn named(dest: &Path, mode: u32) -> io::Result<NewFile> {
        NewFile::open(dest, mode, false)
    }

    fn open(dest: &Path, mode: u32, unnamed: bool) -> io::Result<NewFile> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let named = rocpack_scan::own::temp_name(dest, std::process::id());
        let temp = if unnamed {
            sys::unnamed_temp(&dir, mode)?
        } else {
            None
        };
        let (file, is_named) = match temp {
            Some(f) => (f, false),
            None => {
                let create = || {
                    std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .create_new(true)
                        .mode(mode)
                        .open(&named)
                };
                let f = match create() {
                    // Left by a killed run whose process ID this one now has: nobody holds
                    // it, so it is stale.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists && !sys::held(&named) => {
                        std::fs::remove_file(&named)?;
                        create()?
                    }
                    other => other?,
                };
                (f, true)
            }
        };
        let new = NewFile {
            file,
            dir,
            named,
            is_named: std::cell::Cell::new(is_named),
        };
        // Held until this process ends: a sweep by another run leaves it alone.
        if let Err(e) = sys::hold(&new.file) {
            new.discard();
            return Err(e);
        }
        Ok(new)
    }

    /// Removes the file (an unnamed one goes with its descriptor; a named one is unlinked).
    pub fn discard(&self) {
        if self.is_named.get() {
            let _ = std::fs::remove_file(&self.named);
        }
    }

    /// The file's temporary name, given to it now if it has none: what is renamed over the
    /// destination.
    ///
    /// # Errors
    /// The name cannot be made (linking through `/proc/self/fd`).
    pub fn name(&self) -> io::Result<&Path> {
        if !self.is_named.get() {
            sys::link_into(&self.file, &self.named)?;
            self.is_named.set(true);
        }
        Ok(&self.named)
    }
}

/// `fsync` of a directory, after a rename in it (`ROCPACK_FAULT=dir-fsync` makes it fail).
///
/// # Errors
/// The directory cannot be opened or synced.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    let d = sys::open_dir(dir)?;
    if std::env::var("ROCPACK_FAULT").is_ok_and(|f| f == "dir-fsync") {
        return Err(io::Error::other("injected failure"));
    }
    sys::fsync(d)
}

/// Writes `bytes` as `dest`, atomically: into a [`NewFile::named`], read back and compared,
/// synced, then renamed over `dest`, whose permission bits it keeps (not setuid, setgid or
/// sticky; a new file gets `0o666` less the umask). On
/// any failure before the rename, `dest` is as it was. Returns a note when the file is in place
/// but its directory could not be synced.
///
/// # Errors
/// What failed before the rename.
pub fn write_file(dest: &Path, bytes: &[u8]) -> io::Result<Option<String>> {
    let new = NewFile::named(dest, 0o666)?;
    let put = fill_verified(&new.file, bytes).and_then(|()| put_in_place(&new, dest));
    if put.is_err() {
        new.discard();
    }
    put
}

/// Gives `new`, written and verified, `dest`'s permission bits (when `dest` exists), syncs it
/// and renames it over `dest`; returns the note of a directory that could not be synced.
fn put_in_place(new: &NewFile, dest: &Path) -> io::Result<Option<String>> {
    if let Some(p) = kept_permissions(dest) {
        new.file.set_permissions(p)?;
    }
    sys::fsync(&new.file)?;
    std::fs::rename(new.name()?, dest)?;
    Ok(dir_sync_note(new, dest))
}

/// A file written, read back and compared under a temporary name beside its future one: for
/// a writer that learns which files to keep only after writing them (`extract` keeps,
/// per bundle, the entry that matches a target exactly, else the first compatible one, and
/// writes each as the walk reaches it instead of holding it in memory). [`Staged::commit`]
/// renames it over its destination, in the directory it was staged in; dropped uncommitted,
/// it is removed.
///
/// Each staged file holds a file descriptor until it is committed. When this process is short
/// of them (fewer than [`RESERVED_FDS`] would be left), the bytes are held in memory instead
/// and written by [`write_file`] at commit, so that staging many entries never makes the walk
/// fail to open its next file.
pub struct Staged {
    held: Held,
    committed: bool,
}

enum Held {
    File(NewFile, OpenStaged),
    Bytes(Vec<u8>),
}

/// Descriptors [`stage`] leaves to the rest of the process (the walk's files, maps, spill files
/// and package readers on every thread).
pub const RESERVED_FDS: u64 = 256;

/// Staged files open now.
static OPEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One of [`OPEN`], given back when its staged file goes.
struct OpenStaged;

impl OpenStaged {
    /// Takes one if the soft limit on open files leaves [`RESERVED_FDS`] beside the staged
    /// files.
    fn take() -> Option<OpenStaged> {
        use std::sync::atomic::Ordering;
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(u64::MAX);
        let room = limit.saturating_sub(RESERVED_FDS);
        OPEN.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < room).then_some(n + 1)
        })
        .ok()
        .map(|_| OpenStaged)
    }
}

impl Drop for OpenStaged {
    fn drop(&mut self) {
        OPEN.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// Raises this process's soft limit on open files to its hard limit, as the Go runtime does at
/// start: for a command that stages many files at once. Returns the soft limit in force.
pub fn raise_open_files_limit() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut l = getrlimit(Resource::Nofile);
    if l.current < l.maximum {
        l.current = l.maximum;
        let _ = setrlimit(Resource::Nofile, l);
    }
    getrlimit(Resource::Nofile).current
}

/// Writes `bytes` as a [`Staged`] file in `dir`: a temporary named `.staged-N.rocpack-PID.tmp`
/// (which walks skip and sweeps recognise; held locked while this process runs), written and
/// read back a piece at a time; it is synced when it is committed. Pieces of `bytes` that lie
/// in a file map are given back to the page cache once written and once compared
/// ([`rocpack_scan::release_pages`]), so an entry read in place from a library or a spill file
/// does not stay resident whole. Short of descriptors (see [`Staged`]), the bytes are copied
/// and held instead.
///
/// # Errors
/// The directory does not take a new file, a write or read fails, or the file does not read
/// back as written; nothing is left behind.
pub fn stage(dir: &Path, bytes: &[u8]) -> io::Result<Staged> {
    static STAGED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let held = |held| Staged {
        held,
        committed: false,
    };
    let Some(slot) = OpenStaged::take() else {
        return Ok(held(Held::Bytes(bytes.to_vec())));
    };
    let n = STAGED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // Named from the start, as write_file's: naming an unnamed file at commit would need
    // `/proc`, which a chroot or sandbox may lack.
    let new = match NewFile::named(&dir.join(format!("staged-{n}")), 0o666) {
        Ok(new) => new,
        // Fewer descriptors than the limit said (another part of the process holds them).
        Err(e)
            if matches!(
                rustix::io::Errno::from_io_error(&e),
                Some(rustix::io::Errno::MFILE | rustix::io::Errno::NFILE)
            ) =>
        {
            return Ok(held(Held::Bytes(bytes.to_vec())));
        }
        Err(e) => return Err(e),
    };
    if let Err(e) = fill_verified(&new.file, bytes) {
        new.discard();
        return Err(e);
    }
    Ok(held(Held::File(new, slot)))
}

impl Staged {
    /// Syncs the file and renames it over `dest`, which must be in the directory it was staged
    /// in, keeping `dest`'s permission bits as [`write_file`] does (bytes held in memory are
    /// written by [`write_file`] now). Returns a note when the file is in place but its
    /// directory could not be synced.
    ///
    /// # Errors
    /// What failed before the rename; `dest` is then as it was and the file is removed.
    pub fn commit(mut self, dest: &Path) -> io::Result<Option<String>> {
        let new = match &self.held {
            Held::Bytes(bytes) => {
                let note = write_file(dest, bytes)?;
                self.committed = true;
                return Ok(note);
            }
            Held::File(new, _) => new,
        };
        // Synced only now: a staged file that a better one displaces is never synced.
        let note = put_in_place(new, dest)?;
        self.committed = true;
        Ok(note)
    }

    /// Whether the bytes were held in memory for want of file descriptors.
    pub fn in_memory(&self) -> bool {
        matches!(self.held, Held::Bytes(_))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let (false, Held::File(new, _)) = (self.committed, &self.held) {
            new.discard();
        }
    }
}

/// The permission bits of an existing `dest`, for the file that replaces it: setuid, setgid
/// and sticky are never copied onto a file this process creates.
fn kept_permissions(dest: &Path) -> Option<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(dest)
        .ok()
        .map(|m| std::fs::Permissions::from_mode(m.permissions().mode() & 0o777))
}

/// Writes `bytes` to the empty `file` and reads it back and compares, a piece at a time: an
/// extracted code object may be large. Each piece lying in a file map is released after it is
/// written and after it is compared. The caller syncs the file before it renames it.
fn fill_verified(file: &File, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    for piece in pieces(bytes) {
        (&*file).write_all(piece)?;
        rocpack_scan::release_pages(piece);
    }
    let mut back = vec![0u8; bytes.len().min(PIECE)];
    let mut same = file.metadata()?.len() == bytes.len() as u64;
    let mut at = 0u64;
    for want in pieces(bytes) {
        let got = back.get_mut(..want.len()).unwrap_or_default();
        file.read_exact_at(got, at)?;
        same &= got == want;
        rocpack_scan::release_pages(want);
        at += want.len() as u64;
    }
    if !same {
        return Err(io::Error::other(
            "the new file does not read back as written; the old one was left as it is",
        ));
    }
    Ok(())
}

/// The piece [`fill_verified`] writes and compares at a time.
const PIECE: usize = 1 << 20;

/// `bytes` cut at addresses that are multiples of [`PIECE`] (so at page boundaries, which a
/// release needs to give back every page), each piece at most `PIECE` long.
fn pieces(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let to_boundary = PIECE - (rest.as_ptr() as usize) % PIECE;
        let (piece, more) = rest.split_at(to_boundary.min(rest.len()));
        rest = more;
        Some(piece)
    })
}

/// The warning for a file renamed into place in a directory that could not be synced.
fn dir_sync_note(new: &NewFile, dest: &Path) -> Option<String> {
    sync_dir(&new.dir).err().map(|e| {
        format!(
            "{} is in place, but fsync of {} failed ({e}): a crash before the system writes the \
             directory may bring back the old file",
            dest.display(),
            new.dir.display()
        )
    })
}

/// Whether `path` names the file with this device and inode.
fn same_file(path: &Path, dev_ino: (u64, u64)) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == dev_ino)
}

/// A backup name of `dest` (`NAME.orig`, `NAME.orig.N`) that is another name of the file
/// itself.
fn existing_backup(dest: &Path, dev_ino: (u64, u64)) -> Option<PathBuf> {
    let base = dest.as_os_str().to_string_lossy().into_owned();
    std::iter::once(PathBuf::from(format!("{base}.orig")))
        .chain((1..).map(|n| PathBuf::from(format!("{base}.orig.{n}"))))
        .take_while(|p| p.symlink_metadata().is_ok())
        .find(|p| same_file(p, dev_ino))
}

/// `NAME.orig`, or `NAME.orig.N` if taken.
fn backup_path(dest: &Path) -> PathBuf {
    let base = dest.as_os_str().to_string_lossy().into_owned();
    let first = PathBuf::from(format!("{base}.orig"));
    if !first.exists() {
        return first;
    }
    (1..)
        .map(|n| PathBuf::from(format!("{base}.orig.{n}")))
        .find(|p| !p.exists())
        .unwrap_or(first)
}

/// Reports bytes of the original done, for progress on stderr: called with the old size of
/// each bundle when it has been written, and again when it has been checked.
pub type Progress<'a> = dyn Fn(Step, u64) + Sync + 'a;

/// What a progress report counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// A bundle written (or, in a dry run, measured).
    Written,
    /// A bundle read back and checked.
    Checked,
}

/// No progress reports.
pub fn no_progress(_: Step, _: u64) {}

/// Runs `each` on every rewrite on all cores, within the memory budget of zstd windows.
fn each_rewrite<T: Send>(rewrites: &[Rewrite], each: impl Fn(&Rewrite) -> T + Sync) -> Vec<T> {
    stream::bounded_par(rewrites, |r| r.output.cost(), others(rewrites), each)
}

/// How [`stream::bounded_par`]'s other workers choose, for a file's rewrites: the costliest
/// that fits when none decodes a bundle of the original (the windows are compressors', which
/// the budget counts as they are, and the new CCOBs read back), else the cheapest.
fn others(rewrites: &[Rewrite]) -> stream::Others {
    if rewrites.iter().all(|r| r.output.only_compresses()) {
        stream::Others::LargestFit
    } else {
        stream::Others::Cheapest
    }
}

/// Writes every rewrite of `plan` into `sink` at its offset. Fills the sizes and hashes of new
/// CCOBs; a rewrite that cannot be written (it does not fit, or its compressed bundle is
/// corrupt) becomes an error in `plan.skipped`, and its slot `[offset, offset + slot)` is
/// returned for the caller to restore.
fn execute(
    plan: &mut FilePlan,
    old: Input<'_>,
    sink: &dyn Sink,
    limits: Limits,
    dry_run: bool,
    progress: &Progress<'_>,
) -> Vec<(u64, u64)> {
    let whole = plan.whole;
    let outputs: Vec<&Output> = plan.rewrites.iter().map(|r| &r.output).collect();
    let hashes = if dry_run {
        vec![None; outputs.len()] // sizes only: nothing to read twice for
    } else {
        stream::hashes_ahead(&outputs, old, limits)
    };
    let indexed: Vec<(&Rewrite, Option<u64>)> = plan.rewrites.iter().zip(hashes).collect();
    let results = stream::bounded_par(
        &indexed,
        |(r, _)| r.output.cost(),
        others(&plan.rewrites),
        |&(r, hash)| {
            let needed = !dry_run
                || match &r.output {
                    Output::Table(_) => false,
                    Output::Ccob { .. } => true,
                    Output::Plain(inner) => matches!(inner.base, stream::Base::Ccob { .. }),
                };
            let room = if whole { u64::MAX } else { r.slot };
            let result = if needed {
                stream::produce(&r.output, old, sink, r.offset, room, limits, hash).map(Some)
            } else {
                Ok(None)
            };
            progress(Step::Written, r.old_size);
            result
        },
    );
    let mut failed = Vec::new();
    let mut kept = Vec::with_capacity(plan.rewrites.len());
    for (mut r, result) in std::mem::take(&mut plan.rewrites).into_iter().zip(results) {
        match result {
            Ok(p) => {
                if let Some(Produced {
                    size,
                    written,
                    hash,
                    notes,
                }) = p
                {
                    if !matches!(r.output, Output::Table(_)) {
                        r.new_size = size;
                    }
                    r.written = written;
                    r.hash = hash;
                    r.notes.extend(notes);
                }
                kept.push(r);
            }
            Err(e) => {
                let reason = match e {
                    ProduceError::TooLarge => plan::too_large(&r),
                    ProduceError::Io(e) if r.before != crate::Form::Bundle => {
                        format!("cannot decompress: {e}")
                    }
                    ProduceError::Io(e) => format!("cannot rewrite: {e}"),
                };
                failed.push((r.offset, r.offset + if whole { r.written } else { r.slot }));
                plan.skipped.push(Skip {
                    offset: Some(r.offset),
                    label: r.label.clone(),
                    reason,
                    error: true,
                });
            }
        }
    }
    plan.rewrites = kept;
    if whole {
        if let Some(r) = plan.rewrites.first_mut() {
            r.slot = r.new_size;
            plan.new_len = r.new_size;
        }
    }
    failed
}

/// Completes a plan without writing anything: compresses (into nothing) every bundle a new
/// CCOB will hold, to learn its size, and decompresses every compressed bundle that will be
/// rewritten, to find corrupt ones. A bundle that would not fit becomes an error in
/// `plan.skipped`, as it would in [`apply`].
pub fn measure(plan: &mut FilePlan, old: Input<'_>, limits: Limits, progress: &Progress<'_>) {
    execute(plan, old, &Discard, limits, true, progress);
}

fn fill(
    old: Input<'_>,
    src: &File,
    tmp: &File,
    plan: &mut FilePlan,
    limits: Limits,
    progress: &Progress<'_>,
) -> io::Result<()> {
    if !plan.whole {
        tmp.set_len(plan.new_len)?;
        for (s, e) in &plan.layout().copy {
            sys::copy_range(src, tmp, *s, e - s)?;
        }
    }
    let failed = execute(plan, old, tmp, limits, false, progress);
    if plan.whole {
        tmp.set_len(plan.new_len)?;
        return Ok(());
    }
    // A bundle that could not be rewritten keeps its original bytes.
    for (s, e) in failed {
        sys::copy_range(src, tmp, s, e - s)?;
    }
    // Bytes a longer first compression attempt left after a new CCOB.
    let zeros = vec![0u8; stream::CHUNK];
    for r in &plan.rewrites {
        let mut at = r.offset + r.head_len();
        while at < r.offset + r.written {
            let n = (r.offset + r.written - at).min(zeros.len() as u64);
            tmp.write_all_at(zeros.get(..n as usize).unwrap_or_default(), at)?;
            at += n;
        }
    }
    // A filesystem without sparse files wrote the zeros; holes are punched where possible.
    for &(s, e) in &plan.layout().zero {
        if let Some((first, last)) = plan::whole_pages(s, e) {
            if !sys::data_extents(tmp, first, last).is_empty() {
                sys::punch_hole(tmp, first, last - first)?;
            }
        }
    }
    Ok(())
}

fn corrupt(tmp: &File, plan: &FilePlan) {
    // Change one byte of the first kept code object (or of the middle of the first new
    // container).
    let at = plan
        .rewrites
        .iter()
        .find_map(|r| r.keep.first().map(|(s, _)| *s))
        .or_else(|| plan.rewrites.first().map(|r| r.offset + r.head_len() / 2));
    if let Some(at) = at {
        let mut b = [0u8; 1];
        if tmp.read_exact_at(&mut b, at).is_ok() {
            b[0] ^= 0x40;
            let _ = tmp.write_all_at(&b, at);
        }
    }
}

/// Whether `[s, e)` of `new` and `old` hold the same bytes; the first that differs.
fn first_difference(new: Input<'_>, old: Input<'_>, s: u64, e: u64) -> io::Result<Option<u64>> {
    let (mut a, mut b) = (vec![0u8; stream::CHUNK], vec![0u8; stream::CHUNK]);
    let mut at = s;
    while at < e {
        let n = (e - at).min(a.len() as u64) as usize;
        let (x, y) = (
            a.get_mut(..n).unwrap_or_default(),
            b.get_mut(..n).unwrap_or_default(),
        );
        new.read_exact_at(x, at)?;
        old.read_exact_at(y, at)?;
        if x != y {
            let p = x
                .iter()
                .zip(y.iter())
                .position(|(p, q)| p != q)
                .unwrap_or(0);
            return Ok(Some(at + p as u64));
        }
        at += n as u64;
    }
    Ok(None)
}

/// Reads the new file back and checks it against the plan and the original: everything
/// outside the new containers as it was, every byte of a slot they do not use zero, and every
/// new container as intended ([`stream::check`]).
fn check(
    new: Input<'_>,
    old: Input<'_>,
    plan: &FilePlan,
    limits: Limits,
    progress: &Progress<'_>,
) -> Result<(), String> {
    let io = |e: io::Error| format!("cannot read it back: {e}");
    if !plan.whole {
        let l = plan.layout();
        for &(s, e) in &l.copy {
            if let Some(at) = first_difference(new, old, s, e).map_err(io)? {
                return Err(format!(
                    "byte {at} should be unchanged from the original but is not"
                ));
            }
        }
        // Holes are zeros: only the new file's data in these ranges is read.
        for &(s, e) in &l.zero {
            let zeros = new.zeros_at(s, e);
            if zeros < e - s {
                return Err(format!("byte {} should be zero but is not", s + zeros));
            }
        }
    }
    let results = each_rewrite(&plan.rewrites, |r| {
        let intent = Intent {
            output: &r.output,
            form: r.after,
            size: r.new_size,
            hash: r.hash,
            entries: r
                .expect
                .iter()
                .map(|(id, at, size)| (id.as_slice(), *at, *size))
                .collect(),
        };
        let result = stream::check(&intent, new, r.offset, old, limits)
            .map_err(|m| format!("{} at byte {}: {m}", r.label, r.offset));
        progress(Step::Checked, r.old_size);
        result
    });
    results.into_iter().collect()
}

/// The new file's bytes, built in memory with the same code [`apply`] writes to disk with, for
/// tests and fuzzing (a real rewrite never holds a whole file). Completes `plan` as
/// [`apply`] does.
pub fn render(plan: &mut FilePlan, old: &[u8], limits: Limits) -> Vec<u8> {
    let sink = Mutex::new(if plan.whole { Vec::new() } else { old.to_vec() });
    let failed = execute(plan, Input::bytes(old), &sink, limits, false, &no_progress);
    let mut new = sink.into_inner().unwrap_or_default();
    if plan.whole {
        new.resize(plan.new_len as usize, 0);
        return new;
    }
    for (s, e) in failed {
        if let (Some(d), Some(o)) = (
            new.get_mut(s as usize..e as usize),
            old.get(s as usize..e as usize),
        ) {
            d.copy_from_slice(o);
        }
    }
    for (s, e) in plan.layout().zero {
        if let Some(z) = new.get_mut(s as usize..e as usize) {
            z.fill(0);
        }
    }
    new
}

/// Checks `new` against `plan` and `old` as [`apply`] checks the file it wrote.
///
/// # Errors
/// The first thing that is not as planned, and why.
pub fn verify_all(plan: &FilePlan, new: &[u8], old: &[u8], limits: Limits) -> Result<(), String> {
    if new.len() as u64 != plan.new_len {
        return Err(format!(
            "it has {} bytes, {} were intended",
            new.len(),
            plan.new_len
        ));
    }
    check(
        Input::bytes(new),
        Input::bytes(old),
        plan,
        limits,
        &no_progress,
    )
}
