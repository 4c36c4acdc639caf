//! The Linux calls a safe rewrite needs, through rustix: unnamed temporary files, sparse
//! copies, hole punching, and keeping a file's metadata.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{self as rfs, AtFlags, Mode, OFlags, SeekFrom, Timestamps, XattrFlags};

/// Opens an unnamed temporary file in `dir` (`O_TMPFILE`): it has no name until [`link_into`]
/// gives it one, so a process killed before that leaves nothing behind. `None` when the
/// filesystem does not support it.
pub fn unnamed_temp(dir: &Path, mode: u32) -> io::Result<Option<File>> {
    match rfs::open(
        dir,
        OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    ) {
        Ok(fd) => Ok(Some(File::from(fd))),
        Err(e)
            if e == rustix::io::Errno::OPNOTSUPP
                || e == rustix::io::Errno::ISDIR
                || e == rustix::io::Errno::INVAL =>
        {
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// Gives an unnamed temporary file the name `path` (which must not exist), through
/// `/proc/self/fd` so that no capability is needed.
pub fn link_into(file: &File, path: &Path) -> io::Result<()> {
    let fd_path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(file));
    rfs::linkat(
        rfs::CWD,
        fd_path.as_str(),
        rfs::CWD,
        path,
        AtFlags::SYMLINK_FOLLOW,
    )?;
    Ok(())
}

/// Opens a directory for `fsync`.
pub fn open_dir(dir: &Path) -> io::Result<OwnedFd> {
    Ok(rfs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// `fsync`.
pub fn fsync(fd: impl AsFd) -> io::Result<()> {
    Ok(rfs::fsync(fd)?)
}

/// The data extents of `file` within `[start, end)`, found with `SEEK_DATA`/`SEEK_HOLE`; the
/// whole range when the filesystem cannot tell.
pub fn data_extents(file: &File, start: u64, end: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut pos = start;
    while pos < end {
        let data = match rfs::seek(file, SeekFrom::Data(pos)) {
            Ok(d) => d,
            // ENXIO: no data at or after `pos`.
            Err(e) if e == rustix::io::Errno::NXIO => break,
            Err(_) => {
                out.push((pos, end));
                break;
            }
        };
        if data >= end {
            break;
        }
        let hole = rfs::seek(file, SeekFrom::Hole(data))
            .unwrap_or(end)
            .min(end);
        if hole <= data {
            out.push((data, end));
            break;
        }
        out.push((data, hole));
        pos = hole;
    }
    out
}

/// Copies `[offset, offset + len)` of `src` to the same offset of `dst`, skipping holes in
/// `src` (so they stay holes in `dst`) and copying in the kernel where it can.
pub fn copy_range(src: &File, dst: &File, offset: u64, len: u64) -> io::Result<()> {
    for (start, end) in data_extents(src, offset, offset + len) {
        copy_exact(src, dst, start, end - start)?;
    }
    Ok(())
}

fn copy_exact(src: &File, dst: &File, offset: u64, len: u64) -> io::Result<()> {
    let (mut off_in, mut off_out) = (offset, offset);
    let end = offset + len;
    while off_in < end {
        let chunk = usize::try_from((end - off_in).min(1 << 30)).unwrap_or(1 << 30);
        match rfs::copy_file_range(src, Some(&mut off_in), dst, Some(&mut off_out), chunk) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("source ended at byte {off_in}, before {end}"),
                ));
            }
            Ok(_) => {}
            Err(e)
                if e == rustix::io::Errno::XDEV
                    || e == rustix::io::Errno::NOSYS
                    || e == rustix::io::Errno::OPNOTSUPP
                    || e == rustix::io::Errno::INVAL =>
            {
                return copy_by_reading(src, dst, off_in, end - off_in);
            }
            Err(e) if e == rustix::io::Errno::INTR => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn copy_by_reading(src: &File, dst: &File, mut offset: u64, len: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    let end = offset + len;
    let mut buf = vec![0u8; 1 << 20];
    while offset < end {
        let want = usize::try_from((end - offset).min(buf.len() as u64)).unwrap_or(buf.len());
        let chunk = buf.get_mut(..want).unwrap_or_default();
        src.read_exact_at(chunk, offset)?;
        dst.write_all_at(chunk, offset)?;
        offset += want as u64;
    }
    Ok(())
}

/// Deallocates `[offset, offset + len)` (which must read as zeros afterwards). Returns
/// `false` when the filesystem cannot punch holes; the range is then left as written.
pub fn punch_hole(file: &File, offset: u64, len: u64) -> io::Result<bool> {
    if len == 0 {
        return Ok(true);
    }
    match rfs::fallocate(
        file,
        rfs::FallocateFlags::PUNCH_HOLE | rfs::FallocateFlags::KEEP_SIZE,
        offset,
        len,
    ) {
        Ok(()) => Ok(true),
        Err(e) if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::NOSYS => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// What of a file's metadata a rewrite keeps.
#[derive(Debug, Clone)]
pub struct Meta {
    /// Permission bits, including setuid/setgid/sticky.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Access time (seconds, nanoseconds).
    pub atime: (i64, i64),
    /// Modification time.
    pub mtime: (i64, i64),
    /// Hard link count.
    pub nlink: u64,
    /// Device and inode, to recognise the same file.
    pub dev_ino: (u64, u64),
    /// Bytes allocated on disk.
    pub allocated: u64,
    /// Apparent size.
    pub size: u64,
}

/// Reads the metadata a rewrite keeps.
pub fn meta(file: &File) -> io::Result<Meta> {
    let st = rfs::fstat(file)?;
    Ok(Meta {
        mode: st.st_mode & 0o7777,
        uid: st.st_uid,
        gid: st.st_gid,
        atime: (st.st_atime, st.st_atime_nsec as i64),
        mtime: (st.st_mtime, st.st_mtime_nsec as i64),
        nlink: st.st_nlink,
        dev_ino: (st.st_dev, st.st_ino),
        allocated: u64::try_from(st.st_blocks).unwrap_or(0) * 512,
        size: u64::try_from(st.st_size).unwrap_or(0),
    })
}

/// Gives `file` the owner, mode, extended attributes and timestamps in `meta` (copied from
/// `from`). Owner first: changing the owner clears setuid/setgid, which the mode restores.
///
/// # Errors
/// An owner that cannot be kept (not permitted) is an error when `owner_required` (a file
/// rewritten in place must never change hands); for a copy it is a note. Extended attributes the target filesystem does not support are reported in the returned notes instead.
pub fn keep_meta(
    file: &File,
    from: &File,
    meta: &Meta,
    owner_required: bool,
) -> io::Result<Vec<String>> {
    let mut notes = Vec::new();
    let current = rfs::fstat(file)?;
    if current.st_uid != meta.uid || current.st_gid != meta.gid {
        let chown = rfs::fchown(
            file,
            Some(rustix::fs::Uid::from_raw(meta.uid)),
            Some(rustix::fs::Gid::from_raw(meta.gid)),
        );
        match chown {
            Ok(()) => {}
            Err(e) if !owner_required => notes.push(format!(
                "owner {}:{} not kept ({e}); the copy belongs to this user",
                meta.uid, meta.gid
            )),
            Err(e) => {
                return Err(io::Error::new(
                    io::Error::from(e).kind(),
                    format!(
                        "cannot keep the owner {}:{} ({e}); run as that user or as root",
                        meta.uid, meta.gid
                    ),
                ));
            }
        }
    }
    copy_xattrs(from, file, &mut notes)?;
    rfs::fchmod(file, Mode::from_raw_mode(meta.mode))?;
    let ts = |(sec, nsec): (i64, i64)| rustix::fs::Timespec {
        tv_sec: sec,
        tv_nsec: nsec as _,
    };
    rfs::futimens(
        file,
        &Timestamps {
            last_access: ts(meta.atime),
            last_modification: ts(meta.mtime),
        },
    )?;
    Ok(notes)
}

fn copy_xattrs(from: &File, to: &File, notes: &mut Vec<String>) -> io::Result<()> {
    let mut names = vec![0u8; 64 << 10];
    let n = match rfs::flistxattr(from, &mut names[..]) {
        Ok(n) => n,
        Err(e) if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::NOSYS => {
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let mut value = vec![0u8; 64 << 10];
    for name in names.get(..n).unwrap_or_default().split(|&b| b == 0) {
        if name.is_empty() {
            continue;
        }
        let Ok(name) = std::ffi::CString::new(name) else {
            continue;
        };
        let len = rfs::fgetxattr(from, name.as_c_str(), &mut value[..])?;
        let v = value.get(..len).unwrap_or_default();
        if let Err(e) = rfs::fsetxattr(to, name.as_c_str(), v, XattrFlags::empty()) {
            if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::PERM {
                notes.push(format!(
                    "extended attribute {} not kept: {e}",
                    name.to_string_lossy()
                ));
            } else {
                return Err(e.into());
            }
        }
    }
    Ok(())
}

/// Marks `file` as in use by this process: an exclusive advisory lock (`flock`), which the
/// kernel drops when the process ends, however it ends.
///
/// # Errors
/// The lock is already held (another live run owns the file), or the filesystem refuses.
pub fn hold(file: &File) -> io::Result<()> {
    Ok(rfs::flock(
        file,
        rfs::FlockOperation::NonBlockingLockExclusive,
    )?)
}

/// Whether a live process holds `path` ([`hold`]): a temporary file in use, not a stale one.
/// A file that cannot be opened counts as held (it is left alone).
pub fn held(path: &Path) -> bool {
    match File::open(path) {
        Ok(f) => hold(&f).is_err(),
        Err(_) => true,
    }
}

/// Sends SIGKILL to this process: the fault-injection hook of the tests.
pub fn kill_self() -> ! {
    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    std::process::abort()
}
