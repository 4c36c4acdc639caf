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

use rocpack_scan::Mapped;

use crate::plan::{self, FilePlan, Limits};
use crate::sys;

/// What to do with a file that has other hard links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
/// that step (`after-write`, `after-verify`, `after-fsync`, `after-link`, `after-rename`), or
/// with `corrupt` changes a byte of the temporary file before it is checked.
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

/// The temporary name used for `dest`.
fn temp_name(dest: &Path, pid: u32) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    dest.with_file_name(format!(".{name}.rocpack-{pid}.tmp"))
}

/// Removes the temporary files killed rocpacks left in `dir` (those whose process is gone).
/// Call it once per destination directory before writing there; returns the names removed.
pub fn sweep(dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return removed;
    };
    for e in entries.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = n
            .strip_prefix('.')
            .and_then(|r| r.strip_suffix(".tmp"))
            .and_then(|r| r.rsplit_once(".rocpack-"))
            .and_then(|(_, p)| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !sys::rocpack_alive(pid) && std::fs::remove_file(e.path()).is_ok() {
            removed.push(e.path());
        }
    }
    removed
}

/// Writes `plan` of the file `src` (whose bytes are `old`) to `dest` (which may be `src`).
///
/// # Errors
/// [`WriteError`] when anything fails; `dest` is then as it was.
pub fn apply(
    src: &File,
    old: &[u8],
    plan: &FilePlan,
    dest: &Path,
    in_place: bool,
    opts: &WriteOptions,
) -> Result<Written, WriteError> {
    let err = |message: String| WriteError {
        path: dest.to_path_buf(),
        message,
    };
    let meta = sys::meta(src).map_err(|e| err(format!("cannot stat: {e}")))?;
    let mut notes = Vec::new();
    if in_place {
        if meta.mode & 0o200 == 0 {
            return Err(err(format!(
                "is read-only (mode {:04o}); not rewritten (make it writable first)",
                meta.mode
            )));
        }
        if meta.nlink > 1 {
            match opts.hard_links {
                HardLinks::Refuse => {
                    return Err(err(format!(
                        "has {} hard links; rewriting it would give this name new content and \
                         leave the others with the old; not rewritten (pass --hard-links=break \
                         to do that, or rewrite a copy)",
                        meta.nlink
                    )));
                }
                HardLinks::Break => notes.push(format!(
                    "had {} hard links: the other names keep the original content",
                    meta.nlink
                )),
            }
        }
    }
    let dir = match dest.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };

    let pid = std::process::id();
    let named = temp_name(dest, pid);
    let (tmp, is_named) = match sys::unnamed_temp(&dir) {
        Ok(Some(f)) => (f, false),
        Ok(None) => {
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&named)
                .map_err(|e| {
                    err(format!(
                        "cannot create a temporary file in {}: {e}",
                        dir.display()
                    ))
                })?;
            (f, true)
        }
        Err(e) => {
            return Err(err(format!(
                "cannot create a temporary file in {}: {e}",
                dir.display()
            )));
        }
    };
    let cleanup = |e: WriteError| {
        if is_named {
            let _ = std::fs::remove_file(&named);
        }
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

    fill(src, &tmp, plan).map_err(|e| cleanup(err(format!("writing the new file failed: {e}"))))?;
    fault("after-write");
    shrink_source_requested(src);
    unchanged().map_err(cleanup)?;
    if corrupt_requested() {
        corrupt(&tmp, plan);
    }
    check(&tmp, old, plan, opts.limits).map_err(|m| {
        cleanup(err(format!(
            "the new file failed verification, so the original was left as it is: {m}"
        )))
    })?;
    fault("after-verify");

    notes.extend(
        sys::keep_meta(&tmp, src, &meta, in_place)
            .map_err(|e| cleanup(err(format!("cannot keep the file's metadata: {e}"))))?,
    );
    sys::fsync(&tmp).map_err(|e| cleanup(err(format!("fsync failed: {e}"))))?;
    fault("after-fsync");

    unchanged().map_err(cleanup)?;
    if !is_named {
        sys::link_into(&tmp, &named).map_err(|e| {
            err(format!(
                "cannot name the temporary file {}: {e}",
                named.display()
            ))
        })?;
    }
    fault("after-link");
    let backup = if opts.backup && dest.exists() {
        let b = backup_path(dest);
        if let Err(e) = std::fs::hard_link(dest, &b) {
            let _ = std::fs::remove_file(&named);
            return Err(err(format!(
                "cannot keep the original as {}: {e}",
                b.display()
            )));
        }
        Some(b)
    } else {
        None
    };
    if let Err(e) = std::fs::rename(&named, dest) {
        let _ = std::fs::remove_file(&named);
        if let Some(b) = &backup {
            let _ = std::fs::remove_file(b);
        }
        return Err(err(format!("cannot replace the file: {e}")));
    }
    fault("after-rename");
    if let Ok(d) = sys::open_dir(&dir) {
        sys::fsync(d).map_err(|e| err(format!("fsync of {} failed: {e}", dir.display())))?;
    }
    let after = sys::meta(&tmp).map_err(|e| err(format!("cannot stat: {e}")))?;
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

fn fill(src: &File, tmp: &File, plan: &FilePlan) -> io::Result<()> {
    tmp.set_len(plan.new_len)?;
    if plan.whole {
        if let Some(r) = plan.rewrites.first() {
            tmp.write_all_at(&r.head, 0)?;
        }
        return Ok(());
    }
    let l = plan.layout();
    for (s, e) in &l.copy {
        sys::copy_range(src, tmp, *s, e - s)?;
    }
    for r in &l.heads {
        tmp.write_all_at(&r.head, r.offset)?;
    }
    // A filesystem without sparse files wrote the zeros; holes are punched where possible.
    for &(s, e) in &l.zero {
        if let Some((first, last)) = plan::whole_pages(s, e) {
            if !sys::data_extents(tmp, first, last).is_empty() {
                sys::punch_hole(tmp, first, last - first)?;
            }
        }
    }
    Ok(())
}

fn corrupt(tmp: &File, plan: &FilePlan) {
    // Change one byte of the first kept code object (or of the first head).
    let at = plan
        .rewrites
        .iter()
        .find_map(|r| r.keep.first().map(|(s, _)| *s))
        .or_else(|| {
            plan.rewrites
                .first()
                .map(|r| r.offset + r.head.len() as u64 / 2)
        });
    if let Some(at) = at {
        let mut b = [0u8; 1];
        if tmp.read_exact_at(&mut b, at).is_ok() {
            b[0] ^= 0x40;
            let _ = tmp.write_all_at(&b, at);
        }
    }
}

/// Reads the temporary file back and checks it against the plan and the original.
fn check(tmp: &File, old: &[u8], plan: &FilePlan, limits: Limits) -> Result<(), String> {
    let map = Mapped::from_file(tmp).map_err(|e| format!("cannot read it back: {e}"))?;
    let new: &[u8] = &map;
    if new.len() as u64 != plan.new_len {
        return Err(format!(
            "it has {} bytes, {} were intended",
            new.len(),
            plan.new_len
        ));
    }
    if plan.whole
        && plan
            .rewrites
            .first()
            .is_some_and(|r| r.head.as_slice() != new)
    {
        return Err("the new file's bytes are not the planned ones".into());
    }
    if !plan.whole {
        let l = plan.layout();
        for (s, e) in &l.copy {
            let (s, e) = (*s as usize, *e as usize);
            if new.get(s..e) != old.get(s..e) {
                let at = new
                    .get(s..e)
                    .unwrap_or_default()
                    .iter()
                    .zip(old.get(s..e).unwrap_or_default())
                    .position(|(a, b)| a != b)
                    .map_or(s, |p| s + p);
                return Err(format!(
                    "byte {at} should be unchanged from the original but is not"
                ));
            }
        }
        for r in &l.heads {
            let (s, e) = (r.offset as usize, r.offset as usize + r.head.len());
            if new.get(s..e) != Some(r.head.as_slice()) {
                return Err(format!(
                    "the new header of {} at byte {s} is wrong",
                    r.label
                ));
            }
        }
        for (s, e) in &l.zero {
            for (ds, de) in sys::data_extents(tmp, *s, *e) {
                let bytes = new.get(ds as usize..de as usize).unwrap_or_default();
                if let Some(p) = bytes.iter().position(|&b| b != 0) {
                    return Err(format!("byte {} should be zero but is not", ds + p as u64));
                }
            }
        }
    }
    for r in &plan.rewrites {
        plan::verify(r, new, old, limits)
            .map_err(|m| format!("{} at byte {}: {m}", r.label, r.offset))?;
    }
    Ok(())
}
