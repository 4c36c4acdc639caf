//! Opening and mapping files: the one place in rocpack that needs `unsafe`.
//!
//! Every file rocpack reads because a user named it (or a walk, a thin archive or an install
//! tree led to it) is opened here, by [`open_regular`]:
//! - it is `stat`ed first, and a FIFO, socket, device or directory is refused without being
//!   opened: opening a FIFO for reading blocks until a writer appears, and opening a device can
//!   have side effects (a watchdog arms, a tape rewinds);
//! - a regular file is opened with `O_NONBLOCK | O_NOCTTY` and `fstat`ed again, so a path
//!   swapped for a FIFO between the two calls is refused too instead of hanging.
//!
//! A refused path is an [`io::Error`] whose inner error is a [`NotRegular`]
//! ([`NotRegular::of_error`] finds it).
//!
//! [`Mapped`] maps a file read-only. A mapped file that another process truncates makes every
//! read of a page past the new end raise `SIGBUS`, which would end the whole run. So the first
//! map installs a process-wide `SIGBUS` handler and every live map is entered in a fixed table
//! of atomics; a fault inside a registered map is answered by mapping anonymous zero pages over
//! the rest of that map, recording where it happened, and returning, so the read sees zeros and
//! the run goes on. After reading, the owner asks [`Mapped::check_unchanged`] and reports the
//! file as changed instead of trusting what was read. A fault anywhere else goes to the
//! handler that was installed before (Rust's stack-overflow handler) or to the default action.

#![allow(unsafe_code)]

use std::fs::{File, FileType, OpenOptions};
use std::io::{self, Read};
use std::ops::Deref;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What a path is, when it is not a regular file and so is not opened for reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotRegular {
    /// A named pipe.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A directory (where a file was expected).
    Directory,
    /// Anything else that is not a regular file.
    Other,
}

impl NotRegular {
    /// What `t` is, or `None` for a regular file.
    pub fn of_type(t: FileType) -> Option<Self> {
        if t.is_file() {
            None
        } else if t.is_fifo() {
            Some(NotRegular::Fifo)
        } else if t.is_socket() {
            Some(NotRegular::Socket)
        } else if t.is_char_device() {
            Some(NotRegular::CharDevice)
        } else if t.is_block_device() {
            Some(NotRegular::BlockDevice)
        } else if t.is_dir() {
            Some(NotRegular::Directory)
        } else {
            Some(NotRegular::Other)
        }
    }

    /// The kind behind an error from [`open_regular`] (or anything built on it), if that is
    /// why it failed.
    pub fn of_error(e: &io::Error) -> Option<Self> {
        e.get_ref()?.downcast_ref::<NotRegularError>().map(|n| n.0)
    }

    /// The error [`open_regular`] returns for a path of this kind.
    pub fn error(self) -> io::Error {
        io::Error::other(NotRegularError(self))
    }
}

impl std::fmt::Display for NotRegular {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NotRegular::Fifo => "a FIFO",
            NotRegular::Socket => "a socket",
            NotRegular::CharDevice => "a character device",
            NotRegular::BlockDevice => "a block device",
            NotRegular::Directory => "a directory",
            NotRegular::Other => "not a regular file",
        })
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}: skipped without opening it")]
struct NotRegularError(NotRegular);

/// A mapped file that shrank while it was being read.
#[derive(Debug, thiserror::Error)]
#[error("changed size while being read (truncated to {} at offset {offset:#x})", size_text(*.size))]
pub struct FileChanged {
    /// The file's size after the change, when it could be asked.
    pub size: Option<u64>,
    /// The offset whose read failed.
    pub offset: u64,
}

fn size_text(size: Option<u64>) -> String {
    size.map_or_else(|| "an unknown size".into(), |s| format!("{s} bytes"))
}

impl FileChanged {
    /// The error for `file`, whose read at `offset` found it shorter than mapped.
    pub fn error(file: &File, offset: u64) -> io::Error {
        io::Error::other(FileChanged {
            size: file.metadata().ok().map(|m| m.len()),
            offset,
        })
    }

    /// Whether `e` says that a file changed size while being read.
    pub fn is(e: &io::Error) -> bool {
        e.get_ref().is_some_and(|e| e.is::<FileChanged>())
    }
}

/// Opens `path` for reading if it is a regular file (symbolic links followed), never blocking
/// and never opening anything else (see the module docs).
///
/// # Errors
/// The I/O error of `stat` or `open`, or a [`NotRegular`] error for a FIFO, socket, device or
/// directory.
pub fn open_regular(path: &Path) -> io::Result<File> {
    if let Some(kind) = NotRegular::of_type(std::fs::metadata(path)?.file_type()) {
        return Err(kind.error());
    }
    open_checked(path)
}

/// Opens `path`, which the caller has just `stat`ed as a regular file (a directory walk does),
/// without stating it again; the open itself refuses a path swapped since for a FIFO, socket
/// or device, as [`open_regular`] does. Returns the file and its size.
///
/// # Errors
/// As [`open_regular`].
pub fn open_stated(path: &Path) -> io::Result<(File, u64)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if let Some(kind) = NotRegular::of_type(meta.file_type()) {
        return Err(kind.error());
    }
    Ok((file, meta.len()))
}

/// The open half of [`open_regular`]: what happens when the path was swapped after the stat.
fn open_checked(path: &Path) -> io::Result<File> {
    // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
    // O_NOCTTY: a terminal device never becomes the controlling terminal.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    // The path may have been replaced between the stat and the open.
    if let Some(kind) = NotRegular::of_type(file.metadata()?.file_type()) {
        return Err(kind.error());
    }
    Ok(file)
}

/// The whole of the regular file `path` (see [`open_regular`]); for small text files such as
/// CMake scripts and `ld.so.conf`.
///
/// # Errors
/// As [`open_regular`], or the I/O error of reading.
pub fn read_regular(path: &Path) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    open_regular(path)?.read_to_end(&mut out)?;
    Ok(out)
}

/// The whole of the regular file `path` as UTF-8 text.
///
/// # Errors
/// As [`read_regular`], or invalid UTF-8.
pub fn read_regular_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read_regular(path)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// A file's bytes, mapped read-only (or empty for an empty file), and guarded against the
/// file shrinking underneath (see the module docs).
pub struct Mapped {
    map: Option<memmap2::Mmap>,
    slot: Option<&'static Slot>,
}

impl Mapped {
    /// Maps the regular file `path` read-only (opened with [`open_regular`]), advising the
    /// kernel that access is random so that reading a few headers of a large library does not
    /// read ahead through gigabytes. Callers that keep the map after reading should check
    /// [`Mapped::fault_offset`]; [`Mapped::with_file`] does both.
    ///
    /// # Errors
    /// The I/O error of opening or mapping the file.
    pub fn open(path: &Path) -> io::Result<Self> {
        Self::from_file(&open_regular(path)?)
    }

    /// Opens and maps `path`, calls `f` with the bytes, and fails with a [`FileChanged`] error
    /// when the file shrank while `f` read it.
    ///
    /// # Errors
    /// As [`Mapped::open`], or [`FileChanged`].
    pub fn with_file<T>(path: &Path, f: impl FnOnce(&[u8]) -> T) -> io::Result<T> {
        let file = open_regular(path)?;
        let map = Self::from_file(&file)?;
        let out = f(&map);
        map.check_unchanged(&file)?;
        Ok(out)
    }

    /// Maps an open file.
    ///
    /// # Errors
    /// The I/O error of mapping it.
    pub fn from_file(file: &File) -> io::Result<Self> {
        Self::map(file, memmap2::Advice::Random)
    }

    /// Maps an open file that will be read from start to end (a package being streamed),
    /// so the kernel reads ahead.
    ///
    /// # Errors
    /// The I/O error of mapping it.
    pub fn from_file_sequential(file: &File) -> io::Result<Self> {
        Self::map(file, memmap2::Advice::Sequential)
    }

    /// Maps an open file whose size the caller has just asked (`fstat`), without asking again.
    ///
    /// # Errors
    /// The I/O error of mapping it.
    pub fn from_file_with_len(file: &File, len: u64) -> io::Result<Self> {
        Self::map_len(file, len, memmap2::Advice::Random)
    }

    fn map(file: &File, advice: memmap2::Advice) -> io::Result<Self> {
        Self::map_len(file, file.metadata()?.len(), advice)
    }

    fn map_len(file: &File, len: u64, advice: memmap2::Advice) -> io::Result<Self> {
        if len == 0 {
            return Ok(Mapped {
                map: None,
                slot: None,
            });
        }
        let len = usize::try_from(len).map_err(io::Error::other)?;
        install_handler();
        // Safety: the map is read-only (memmap2's `map` maps the file shared; every map in the
        // registry is a shared map of a file, which `release_pages` relies on), and it is
        // entered in the registry below before any byte of it is read: if another process
        // truncates the file, a read past the new end faults, and the SIGBUS handler maps
        // zero pages over the rest of the map and records the fault, so the read returns zeros
        // instead of ending the process; the owner then discards what was read
        // (`check_unchanged`). Bytes rewritten in place are just more untrusted input, which
        // every parser handles.
        // The length is given so that memmap2 does not ask the kernel for it a second time.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(file)? };
        let slot = register(map.as_ptr() as usize, len, false)?;
        let _ = map.advise(advice);
        Ok(Mapped {
            map: Some(map),
            slot: Some(slot),
        })
    }

    /// Gives back the memory of the pages read so far: they leave this process's resident set
    /// (a later read maps them again from the page cache or the file). For a caller that has
    /// read what it needs from the map and goes on to stream the file's bulk through `pread`.
    pub fn release(&self) {
        release_pages(self);
    }

    /// The offset of the first read that found the file shorter than mapped, if any.
    pub fn fault_offset(&self) -> Option<u64> {
        let fault = self.slot?.fault.load(Ordering::Acquire);
        (fault != NO_FAULT).then_some(fault as u64)
    }

    /// Fails when a read of the map found `file` (the file mapped) shorter than mapped.
    ///
    /// # Errors
    /// A [`FileChanged`] error.
    pub fn check_unchanged(&self, file: &File) -> io::Result<()> {
        match self.fault_offset() {
            Some(offset) => Err(FileChanged::error(file, offset)),
            None => Ok(()),
        }
    }
}

/// Where a zstd frame whose window does not fit in memory is decoded
/// ([`rocpack_offload::ccob::Spill`]): an unnamed temporary file in `$TMPDIR` (`O_TMPFILE`, or
/// unlinked at once), sparse and mapped shared. The decoder writes the frame's output into the
/// map and reads its matches back from it; the pages the reader is done with are dropped from
/// this process's resident set, and come back from the page cache or the file if a match
/// reaches them again. The file takes only the space of the output written (nothing is
/// allocated for the size a header claims), and goes when the buffer is dropped.
///
/// A write that finds `$TMPDIR` full raises `SIGBUS`: the map is entered in the same registry
/// as [`Mapped`], so the handler maps writable zero pages over the rest of it and records where,
/// and the decoder's next step fails with an error naming the temporary file's limit.
#[derive(Debug, Clone, Copy, Default)]
pub struct TempSpill;

impl rocpack_offload::ccob::Spill for TempSpill {
    fn buffer(&self, len: usize) -> io::Result<Box<dyn rocpack_offload::ccob::SpillBuffer>> {
        if len == 0 {
            return Err(io::Error::other("an empty spill buffer"));
        }
        let file = tempfile::tempfile()?;
        file.set_len(u64::try_from(len).map_err(io::Error::other)?)?;
        Ok(Box::new(SpillMap::new(file, len)?))
    }
}

/// A [`TempSpill`] buffer.
struct SpillMap {
    map: memmap2::MmapMut,
    slot: &'static Slot,
    _file: File,
}

impl SpillMap {
    /// Maps the first `len` bytes of `file`, this process's alone, shared and writable.
    fn new(file: File, len: usize) -> io::Result<Self> {
        install_handler();
        // Safety: the file is this process's alone (it has no name, or lost it at once), so no
        // other writer or truncation can change it under the map; a fault for want of space
        // is answered by the SIGBUS handler once the map is registered below, before the
        // decoder touches it.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map_mut(&file)? };
        let slot = register(map.as_ptr() as usize, len, true)?;
        Ok(SpillMap {
            map,
            slot,
            _file: file,
        })
    }
}

impl rocpack_offload::ccob::SpillBuffer for SpillMap {
    fn bytes(&mut self) -> &mut [u8] {
        &mut self.map
    }

    fn view(&self) -> &[u8] {
        &self.map
    }

    fn release(&mut self, below: usize) {
        // Not after a fault, whose anonymous pages a release would zero: release_pages checks.
        release_pages(self.map.get(..below).unwrap_or(&self.map));
    }

    fn fault(&self) -> Option<u64> {
        let fault = self.slot.fault.load(Ordering::Acquire);
        (fault != NO_FAULT).then_some(fault as u64)
    }
}

impl Drop for SpillMap {
    fn drop(&mut self) {
        // Leave the registry before the map is unmapped (fields drop after this).
        self.slot.state.store(FREE, Ordering::Release);
    }
}

impl Deref for Mapped {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // Leave the registry before the map itself is unmapped (fields drop after this).
        if let Some(slot) = self.slot.take() {
            slot.state.store(FREE, Ordering::Release);
        }
    }
}

/// Maps live at once; the parallel walk holds one per thread, plus one per thin-archive member
/// being read and one per package.
const SLOTS: usize = 4096;
const FREE: usize = 0;
const CLAIMED: usize = 1;
const LIVE: usize = 2;
const NO_FAULT: usize = usize::MAX;

/// One live map, readable from the signal handler (atomics only: no locks, no allocation).
struct Slot {
    state: AtomicUsize,
    start: AtomicUsize,
    len: AtomicUsize,
    fault: AtomicUsize,
    /// A spill map, written through: its zero pages must be writable too.
    writable: std::sync::atomic::AtomicBool,
    /// Odd while `start` and `len` are being written: a reader that sees it change, or odd,
    /// read a mix of two registrations ([`Slot::live_range`]).
    seq: AtomicUsize,
}

impl Slot {
    /// The `(start, len)` of the live map in this slot, read as one registration (a seqlock:
    /// without it, a slot freed and claimed again between two loads could give one map's start
    /// and another's length). Atomics only: safe in the signal handler.
    fn live_range(&self) -> Option<(usize, usize)> {
        let before = self.seq.load(Ordering::Acquire);
        if before % 2 == 1 || self.state.load(Ordering::Acquire) != LIVE {
            return None;
        }
        let start = self.start.load(Ordering::Relaxed);
        let len = self.len.load(Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Acquire);
        (self.seq.load(Ordering::Relaxed) == before).then_some((start, len))
    }
}

static REGISTRY: [Slot; SLOTS] = [const {
    Slot {
        state: AtomicUsize::new(FREE),
        start: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        fault: AtomicUsize::new(NO_FAULT),
        writable: std::sync::atomic::AtomicBool::new(false),
        seq: AtomicUsize::new(0),
    }
}; SLOTS];

fn register(start: usize, len: usize, writable: bool) -> io::Result<&'static Slot> {
    if start.checked_add(len).is_none() {
        return Err(io::Error::other("mapping wraps the address space"));
    }
    for slot in &REGISTRY {
        if slot
            .state
            .compare_exchange(FREE, CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            slot.seq.fetch_add(1, Ordering::AcqRel);
            slot.start.store(start, Ordering::Relaxed);
            slot.len.store(len, Ordering::Relaxed);
            slot.fault.store(NO_FAULT, Ordering::Relaxed);
            slot.writable.store(writable, Ordering::Relaxed);
            slot.seq.fetch_add(1, Ordering::Release);
            slot.state.store(LIVE, Ordering::Release);
            return Ok(slot);
        }
    }
    Err(io::Error::other(format!(
        "more than {SLOTS} files mapped at once"
    )))
}

static PAGE_SIZE: AtomicUsize = AtomicUsize::new(0);
/// The SIGBUS action before ours, to which faults outside rocpack's maps go.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

fn install_handler() {
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        // Safety: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        PAGE_SIZE.store(usize::try_from(page).unwrap_or(4096), Ordering::Relaxed);
        // Safety: a zeroed sigaction is a valid value (empty mask, no flags, SIG_DFL); the
        // query writes into `previous` only; `on_sigbus` has the signature SA_SIGINFO
        // requires and uses only atomics and async-signal-safe calls.
        unsafe {
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut previous) != 0 {
                return;
            }
            let _ = PREVIOUS.set(previous);
            let mut action: libc::sigaction = std::mem::zeroed();
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                on_sigbus;
            action.sa_sigaction = handler as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
        }
    });
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // Safety: the kernel passes a valid siginfo_t for a handler installed with SA_SIGINFO.
    let addr = if info.is_null() {
        0
    } else {
        unsafe { (*info).si_addr() as usize }
    };
    if addr != 0 && zero_fill(addr) {
        return;
    }
    // Safety: `PREVIOUS` holds the action the kernel gave us, whose handler (if any) expects
    // exactly these arguments; restoring the default action and raising the signal again ends
    // the process as if no handler had been installed.
    unsafe {
        if let Some(previous) = PREVIOUS.get() {
            let handler = previous.sa_sigaction;
            if handler != libc::SIG_DFL && handler != libc::SIG_IGN {
                if previous.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        std::mem::transmute(handler);
                    f(sig, info, ctx);
                } else {
                    let f: extern "C" fn(libc::c_int) = std::mem::transmute(handler);
                    f(sig);
                }
                return;
            }
        }
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(sig, &default, std::ptr::null_mut());
        libc::raise(sig);
    }
}

/// Gives back the memory of the whole pages of `bytes` when they lie in one of this process's
/// file maps (a [`Mapped`] file or a spill buffer): the pages leave the resident set, and a
/// later read maps them again, with the same bytes, from the page cache or the file. Anything
/// else (a buffer on the heap, a map that has faulted) is left as it is.
///
/// For a writer that streams a large slice out piece by piece (an extracted code object of
/// 171 MB read in place from its file or spill file), so that it does not hold the whole
/// slice resident at the end; and the one place that releases pages ([`Mapped::release`], the
/// spill buffer's release).
pub fn release_pages(bytes: &[u8]) {
    let page = PAGE_SIZE.load(Ordering::Relaxed);
    if page == 0 || bytes.is_empty() {
        // No map was ever made (install_handler sets the page size), so none holds `bytes`.
        return;
    }
    let lo = (bytes.as_ptr() as usize)
        .div_ceil(page)
        .saturating_mul(page);
    let hi = (bytes.as_ptr() as usize).saturating_add(bytes.len()) / page * page;
    if lo >= hi {
        return;
    }
    let inside = REGISTRY.iter().find(|slot| {
        slot.live_range().is_some_and(|(start, len)| {
            start <= lo
                && hi <= start.saturating_add(len)
                && slot.fault.load(Ordering::Acquire) == NO_FAULT
        })
    });
    if inside.is_none() {
        return;
    }
    // Safety: [lo, hi) is whole pages inside a map that was live when its registration was
    // read whole (Slot::live_range). `bytes` existed all along, so it was that map's memory
    // then (memory cannot be a live map and a heap block at once), and it borrows from the map,
    // so the map is not unmapped meanwhile. Every registered map is a shared map of a file, so
    // MADV_DONTNEED only unmaps the pages, whose bytes stay in the page cache and the file,
    // and the next access maps them again with the same contents. A map that has faulted has
    // anonymous pages over its rest, which this would zero: it is skipped. (Should it fault
    // between the check and this call, the pages zeroed are the fault's zero pages of a
    // read-only map, which read as zeros again, or those of a spill file that has failed, whose
    // owner reports the failure and discards what was decoded.)
    let _ = unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_DONTNEED) };
}

/// If `addr` lies in a registered map, maps zero pages from its page to the end of that map,
/// records the fault and returns true. Runs inside the signal handler.
fn zero_fill(addr: usize) -> bool {
    let page = PAGE_SIZE.load(Ordering::Relaxed);
    if page == 0 {
        return false;
    }
    for slot in &REGISTRY {
        let Some((start, len)) = slot.live_range() else {
            continue;
        };
        let Some(offset) = addr.checked_sub(start).filter(|o| *o < len) else {
            continue;
        };
        let first = addr & !(page - 1);
        // `start + len` was checked at registration; the kernel maps whole pages.
        let end = (start + len).div_ceil(page).saturating_mul(page);
        let prot = if slot.writable.load(Ordering::Relaxed) {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // Safety: [first, end) lies within the live map of this slot (mmap returns
        // page-aligned addresses and maps whole pages); replacing those pages with anonymous
        // zero pages keeps the range mapped, accessible as before and owned by the same
        // `Mapped` or spill buffer, whose drop unmaps the whole range. mmap is a plain system
        // call, safe in a signal handler.
        let r = unsafe {
            libc::mmap(
                first as *mut libc::c_void,
                end - first,
                prot,
                libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if r == libc::MAP_FAILED {
            return false;
        }
        let _ = slot
            .fault
            .compare_exchange(NO_FAULT, offset, Ordering::AcqRel, Ordering::Relaxed);
        return true;
    }
    false
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A spill file that cannot take a write (here: cut short under the map, as a full disk
    /// would refuse the page) raises SIGBUS; the handler maps writable zero pages in its place,
    /// the write lands, and the buffer reports where it failed.
    #[test]
    fn a_spill_file_that_cannot_be_written_is_reported_not_fatal() {
        use rocpack_offload::ccob::SpillBuffer;
        let file = tempfile::tempfile().unwrap();
        file.set_len(1 << 20).unwrap();
        let cut = file.try_clone().unwrap();
        let mut buf = SpillMap::new(file, 1 << 20).unwrap();
        buf.bytes()[100] = 7;
        assert_eq!(buf.fault(), None);
        cut.set_len(8192).unwrap();
        buf.bytes()[512 << 10] = 9;
        assert_eq!(buf.bytes()[512 << 10], 9);
        assert_eq!(buf.fault(), Some(512 << 10));
        assert_eq!(buf.bytes()[100], 7);
        // The pages past the fault are anonymous now: releasing them would zero them, so a
        // release after a fault gives back nothing.
        buf.release(1 << 20);
        assert_eq!(buf.bytes()[512 << 10], 9);
        assert_eq!(buf.bytes()[100], 7);
    }

    /// A frame whose window does not fit decodes through the temporary file to the same bytes,
    /// its pages leaving the resident set as they are read.
    #[test]
    fn a_large_window_decodes_through_a_temporary_file() {
        use rocpack_offload::ccob::{self, CcobHeader, Method, Stream};
        static NONE: rocpack_bytes::Budget = rocpack_bytes::Budget::new(0);
        // The buffer is made (else the stream would fall back to memory, unseen).
        assert!(ccob::Spill::buffer(&TempSpill, 1 << 20).is_ok());
        let mut data = vec![0u8; 40 << 20];
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for (i, b) in data.iter_mut().enumerate() {
            if i % (1 << 20) == 0 {
                x = x.wrapping_mul(0x5851_f42d_4c95_7f2d).wrapping_add(1);
            }
            // Every MiB repeats one of eight patterns: matches reach back up to 40 MiB.
            *b = (x % 8) as u8 ^ (i % 251) as u8;
        }
        let blob = ccob::compress(&data, 3, Method::Zstd, 3).unwrap();
        let h = CcobHeader::parse(&blob).unwrap();
        let mut s = Stream::spilling(
            h.method,
            h.payload(&blob),
            h.uncompressed_size,
            Some(&TempSpill),
            Some(&NONE),
        )
        .unwrap();
        let mut out = Vec::new();
        let mut piece = vec![0u8; 1 << 20];
        loop {
            let n = s.read_full(&mut piece).unwrap();
            out.extend_from_slice(&piece[..n]);
            if n < piece.len() {
                break;
            }
        }
        assert!(out == data, "decoded bytes differ");
    }

    /// The resident size, in KiB, of this process's mapping that starts at `addr`
    /// (`/proc/self/smaps`).
    fn rss_kib_at(addr: usize) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut lines = smaps.lines();
        while let Some(line) = lines.next() {
            let start = line.split('-').next().unwrap_or("");
            if usize::from_str_radix(start, 16).ok() != Some(addr) {
                continue;
            }
            for l in lines.by_ref() {
                if let Some(v) = l.strip_prefix("Rss:") {
                    return v.trim().trim_end_matches("kB").trim().parse().unwrap();
                }
            }
        }
        panic!("no mapping at {addr:#x}");
    }

    /// `release_pages` gives back the whole pages of a slice of a file map, which read
    /// the same afterwards, in a read-only map and in a spill map written through.
    #[test]
    fn release_pages_gives_back_the_whole_pages_of_a_mapped_slice() {
        use rocpack_offload::ccob::SpillBuffer;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pages");
        let pattern = |i: usize| (i % 253) as u8;
        std::fs::write(&path, (0..4 << 20).map(pattern).collect::<Vec<u8>>()).unwrap();
        let map = Mapped::open(&path).unwrap();
        let page = PAGE_SIZE.load(Ordering::Relaxed);
        assert_eq!(page, 4096, "the sizes below assume 4 KiB pages");
        let read = |m: &[u8]| m.iter().enumerate().all(|(i, &b)| b == pattern(i));
        assert!(read(&map));
        let addr = map.as_ptr() as usize;
        let before = rss_kib_at(addr);
        assert_eq!(before, 4096, "every page read is resident");
        // From byte 1 to 1 MiB + 1: the pages from 4 KiB to 1 MiB are whole, 255 of them.
        // (The kernel may give back more: a large folio mapped whole is unmapped whole.)
        release_pages(&map[1..(1 << 20) + 1]);
        assert!(rss_kib_at(addr) <= before - 255 * 4);
        release_pages(&map);
        assert_eq!(rss_kib_at(addr), 0);
        assert!(read(&map), "released pages read the file's bytes again");

        let file = tempfile::tempfile().unwrap();
        file.set_len(2 << 20).unwrap();
        let mut spill = SpillMap::new(file, 2 << 20).unwrap();
        for (i, b) in spill.bytes().iter_mut().enumerate() {
            *b = pattern(i);
        }
        let addr = spill.view().as_ptr() as usize;
        assert_eq!(rss_kib_at(addr), 2048);
        release_pages(spill.view());
        assert_eq!(rss_kib_at(addr), 0);
        assert!(read(spill.view()), "what was written stays in the file");
        assert!(spill.fault().is_none());
    }

    /// Memory that is not one of the registered file maps, or a map that has faulted, is never
    /// touched: releasing its pages would zero them.
    #[test]
    fn release_pages_leaves_other_memory_alone() {
        // A map exists, so the page size is known and the registry is searched.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("one");
        std::fs::write(&path, [1u8; 8192]).unwrap();
        let _map = Mapped::open(&path).unwrap();
        let heap = vec![0xa5u8; 4 << 20];
        release_pages(&heap);
        assert!(heap.iter().all(|&b| b == 0xa5));
        let mut anon = memmap2::MmapMut::map_anon(1 << 20).unwrap();
        anon.fill(0x5a);
        release_pages(&anon);
        assert!(anon.iter().all(|&b| b == 0x5a));
        // A spill file that took none of the writes (here: of length 0, as a full disk): the
        // handler put anonymous pages under the map, which hold what was written.
        use rocpack_offload::ccob::SpillBuffer;
        let mut spill = SpillMap::new(tempfile::tempfile().unwrap(), 1 << 20).unwrap();
        spill.bytes().fill(0x3c);
        assert_eq!(spill.fault(), Some(0));
        release_pages(spill.view());
        assert!(spill.view().iter().all(|&b| b == 0x3c));
    }

    #[test]
    fn a_file_truncated_while_mapped_reads_as_zeros_and_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shrinks");
        let mut f = File::create(&path).unwrap();
        f.write_all(&vec![0xabu8; 1 << 20]).unwrap();
        drop(f);
        let file = open_regular(&path).unwrap();
        let map = Mapped::from_file(&file).unwrap();
        assert_eq!(map[100], 0xab);
        assert!(map.fault_offset().is_none());
        OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(4096)
            .unwrap();
        // Without the handler this read ends the test process with SIGBUS.
        let tail = map[(1 << 20) - 1];
        assert_eq!(tail, 0);
        assert_eq!(map[(1 << 20) - 2], 0);
        let offset = map.fault_offset().unwrap();
        assert!((4096..1 << 20).contains(&offset), "{offset}");
        let err = map.check_unchanged(&file).unwrap_err();
        assert!(FileChanged::is(&err));
        assert_eq!(
            err.to_string(),
            format!(
                "changed size while being read (truncated to 4096 bytes at offset {offset:#x})"
            )
        );
        drop(map);
        // The slot is free again and a new map of the same file is clean.
        let again = Mapped::open(&path).unwrap();
        assert_eq!(again.len(), 4096);
        assert!(again.fault_offset().is_none());
    }

    #[test]
    fn fifos_sockets_and_devices_are_refused_without_opening() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // Safety: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Opening a FIFO with no writer would block forever.
        let e = open_regular(&fifo).unwrap_err();
        assert_eq!(NotRegular::of_error(&e), Some(NotRegular::Fifo));
        assert_eq!(e.to_string(), "a FIFO: skipped without opening it");
        assert!(Mapped::open(&fifo).is_err());
        let sock = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = open_regular(&sock).unwrap_err();
        assert_eq!(NotRegular::of_error(&e), Some(NotRegular::Socket));
        let e = open_regular(Path::new("/dev/null")).unwrap_err();
        assert_eq!(NotRegular::of_error(&e), Some(NotRegular::CharDevice));
        let e = read_regular(dir.path()).unwrap_err();
        assert_eq!(NotRegular::of_error(&e), Some(NotRegular::Directory));
        // A path that became a FIFO after the stat: the open returns at once and the fstat
        // refuses it.
        let e = open_checked(&fifo).unwrap_err();
        assert_eq!(NotRegular::of_error(&e), Some(NotRegular::Fifo));
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"abc").unwrap();
        assert_eq!(read_regular(&plain).unwrap(), b"abc");
    }
}
