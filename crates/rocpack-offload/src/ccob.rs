//! Compressed offload bundles ("CCOB"), versions 1–3, zlib or zstd.
//!
//! Layout (clang's OffloadBundler.cpp, `CompressedBundleHeader::tryParse`): "CCOB", u16
//! version, u16 method (0 zlib, 1 zstd); v1: u32 uncompressed size, u64 hash; v2: u32 total
//! size, u32 uncompressed size, u64 hash; v3: u64 total size, u64 uncompressed size, u64 hash.
//! The payload is one zstd frame or zlib stream of an uncompressed bundle. The hash is the low
//! 64 bits of the MD5 of the uncompressed bundle.

use std::io::{BufRead, Read, Write};

use crate::md5::Md5;
use rocpack_bytes::Bytes;

use crate::error::{FormatError, Kind};

/// The CCOB magic.
pub const MAGIC: &[u8; 4] = b"CCOB";

/// Compression method of a CCOB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Method {
    /// `llvm::compression::Format::Zlib` (0).
    Zlib,
    /// `llvm::compression::Format::Zstd` (1).
    Zstd,
}

impl Method {
    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Zlib => "zlib",
            Method::Zstd => "zstd",
        }
    }
}

/// A CCOB header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CcobHeader {
    /// 1, 2 or 3.
    pub version: u16,
    /// Compression method.
    pub method: Method,
    /// Header size: 20, 24 or 32 bytes.
    pub header_size: u64,
    /// Size of the whole CCOB (header + payload); `None` for v1, which has no such field.
    pub total_size: Option<u64>,
    /// Declared size of the uncompressed bundle.
    pub uncompressed_size: u64,
    /// Declared hash (low 64 bits of the MD5 of the uncompressed bundle).
    pub hash: u64,
}

impl CcobHeader {
    /// Parses the header at the start of `data`.
    ///
    /// # Errors
    /// [`FormatError`] for a missing magic, an unknown version or method, a truncated header,
    /// or a total size smaller than the header or larger than `data`.
    pub fn parse(data: &[u8]) -> Result<Self, FormatError> {
        Self::parse_within(data, data.len() as u64)
    }

    /// Parses a header held in `data` (the header, or more) of a CCOB that has `available`
    /// bytes from its start: lets a caller read only the header of a large CCOB.
    ///
    /// # Errors
    /// As [`CcobHeader::parse`], with `available` in place of the length of `data`.
    pub fn parse_within(data: &[u8], available: u64) -> Result<Self, FormatError> {
        let b = Bytes::new(data);
        let err = |off, msg: String| FormatError::new(Kind::Ccob, off, msg);
        if !b.has_at(0, MAGIC) {
            return Err(err(0, "no CCOB magic".into()));
        }
        let version = b.u16(4).map_err(|_| err(4, "truncated version".into()))?;
        let method = match b.u16(6).map_err(|_| err(6, "truncated method".into()))? {
            0 => Method::Zlib,
            1 => Method::Zstd,
            m => return Err(err(6, format!("unknown compression method {m}"))),
        };
        let header_size = match version {
            1 => 20,
            2 => 24,
            3 => 32,
            v => return Err(err(4, format!("unknown CCOB version {v}"))),
        };
        if b.len() < header_size {
            return Err(err(
                0,
                format!(
                    "truncated v{version} header: {} of {header_size} bytes",
                    b.len()
                ),
            ));
        }
        let r = |off| b.u64(off).unwrap_or(0);
        let r32 = |off| u64::from(b.u32(off).unwrap_or(0));
        let (total_size, uncompressed_size, hash) = match version {
            1 => (None, r32(8), r(12)),
            2 => (Some(r32(8)), r32(12), r(16)),
            _ => (Some(r(8)), r(16), r(24)),
        };
        if let Some(total) = total_size {
            if total < header_size {
                return Err(err(
                    8,
                    format!("total size {total} is smaller than the {header_size}-byte header"),
                ));
            }
            if total > available {
                return Err(err(
                    8,
                    format!("total size {total} runs past the {available} bytes available"),
                ));
            }
        }
        Ok(CcobHeader {
            version,
            method,
            header_size,
            total_size,
            uncompressed_size,
            hash,
        })
    }

    /// The compressed payload: up to the total size (v2/v3) or to the end of `data` (v1).
    pub fn payload<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        let b = Bytes::new(data);
        let end = self.total_size.unwrap_or(b.len());
        b.read_at(self.header_size, end.saturating_sub(self.header_size))
            .unwrap_or(&[])
    }
}

/// Length of a version-1 payload, which has no size field: the zstd frame's compressed size
/// (from its block headers, without decoding), or the zlib stream's length (by decoding it,
/// discarding output, up to `ceiling` output bytes). `None` when it cannot be determined.
pub fn v1_payload_len(header: &CcobHeader, data: &[u8], ceiling: u64) -> Option<u64> {
    let payload = header.payload(data);
    match header.method {
        Method::Zstd => zstd::zstd_safe::find_frame_compressed_size(payload)
            .ok()
            .map(|n| n as u64),
        Method::Zlib => {
            let mut d = flate2::Decompress::new(true);
            let mut scratch = vec![0u8; 64 << 10];
            loop {
                let consumed = d.total_in() as usize;
                let input = payload.get(consumed..)?;
                let status = d
                    .decompress(input, &mut scratch, flate2::FlushDecompress::None)
                    .ok()?;
                if status == flate2::Status::StreamEnd {
                    return Some(d.total_in());
                }
                if d.total_out() > ceiling
                    || (input.is_empty() && status == flate2::Status::BufError)
                {
                    return None;
                }
            }
        }
    }
}

/// Checks the declared uncompressed size against the size a zstd frame header records (when
/// the writer put it there, as clang does), without decoding anything. `payload_head` is the
/// start of the payload: the frame header (at most 18 bytes) is all that is read.
///
/// # Errors
/// [`FormatError`] when the two differ.
pub fn check_frame_size(header: &CcobHeader, payload_head: &[u8]) -> Result<(), FormatError> {
    if header.method != Method::Zstd {
        return Ok(());
    }
    if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(payload_head) {
        if size != header.uncompressed_size {
            return Err(FormatError::new(
                Kind::Ccob,
                if header.version == 1 { 8 } else { 12 },
                format!(
                    "header declares {} uncompressed bytes, but its zstd frame holds {size}",
                    header.uncompressed_size
                ),
            ));
        }
    }
    Ok(())
}

thread_local! {
    /// Decompression contexts of this thread not in use: creating one (`ZSTD_createDCtx`)
    /// allocates and initialises about 160 KB, which cost more than decoding the few kilobytes
    /// of a bundle header. A context is taken for one frame and put back after it.
    static CONTEXTS: std::cell::RefCell<Vec<zstd::zstd_safe::DCtx<'static>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Contexts kept per thread: one per CCOB being read at once (a CCOB nested in a CCOB entry
/// takes a second one).
const CONTEXTS_KEPT: usize = 4;

/// A context that has grown beyond this (its window buffer: up to 2^27 bytes for a large
/// bundle read to the end) is freed rather than kept, unless it produced no more than
/// [`CONTEXT_KEPT_OUTPUT`]: the pool saves the setup of contexts that read headers, and must not
/// hold a large window per thread after a bundle is done (`slim` bounds the windows in flight,
/// not windows kept).
const CONTEXT_KEPT_BYTES: usize = 4 << 20;

/// A context whose frame produced no more than this is kept whatever its size, one per thread:
/// zstd sizes the window buffer from the frame header (clang's frames are one segment, so the
/// window is the whole bundle) but does not write it when it allocates it, and the decoder
/// writes it from the start for every frame, so only the pages of the output produced (and of
/// the block being decoded, at most 128 KiB) are written. Reading a bundle's table produces a
/// few KiB; freeing such a context cost a `munmap` (and its TLB shootdown on the other cores)
/// and the next frame a new context, `mmap` and page faults. A frame that failed is not counted
/// this way: its context is kept only if it is small. Only one such large context is kept per
/// thread: its buffer's address space (up to 2^27 bytes) counts in full under strict overcommit
/// (`vm.overcommit_memory=2`), and one is what the thread reserved anyway while it decoded the
/// frame, so keeping it does not raise the process's peak.
const CONTEXT_KEPT_OUTPUT: u64 = 1 << 20;

thread_local! {
    /// Windows this thread holds from a budget: a second one (a compressed bundle inside a
    /// compressed bundle) must not wait for room the first one takes.
    static HELD: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// A window held from a budget, counted in [`HELD`] while it lives.
struct Held {
    /// Given back to the budget when dropped.
    _permit: rocpack_bytes::Permit<'static>,
}

impl Held {
    /// Holds `window` bytes of `budget`, waiting for other threads' windows to be given back;
    /// `None`, without waiting, when the window is larger than the whole budget or this thread
    /// already holds one.
    fn new(budget: &'static rocpack_bytes::Budget, window: u64) -> Option<Held> {
        if window > budget.limit() || HELD.with(std::cell::Cell::get) > 0 {
            return None;
        }
        let permit = budget.acquire(window);
        HELD.with(|h| h.set(h.get() + 1));
        Some(Held { _permit: permit })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD.with(|h| h.set(h.get().saturating_sub(1)));
    }
}

/// The process's budget for zstd windows held in memory: 16 MiB. clang writes single-segment
/// frames whose window is the whole bundle: jax-rocm7-pjrt 0.12.0's plugin has 45 of them, the
/// largest 113,646,944 bytes, 31 over 16 MiB. A window the budget cannot hold is decoded into a
/// [`Spill`] buffer instead, which keeps mapped the last [`RELEASE_KEEP`] bytes of output (and
/// up to [`RELEASE_EVERY`] more between releases) besides the pages the decoder reads back.
/// Measured, not a bound: `show --kernels` on that plugin peaks at 55,648 KiB with this budget
/// (and its entries walked in the buffer, [`Stream::decoded`]) and at 107,332 KiB with the
/// earlier 96 MiB, which held windows of up to 82 MB, in about 12 % more time
/// (docs/benchmarks.md).
pub static WINDOWS: rocpack_bytes::Budget = rocpack_bytes::Budget::new(16 << 20);

/// Windows up to this size are not counted: a context that small is what reading the headers
/// of a typical bundle costs, and it may be pooled ([`CONTEXT_KEPT_BYTES`]).
pub const WINDOW_UNCOUNTED: u64 = 4 << 20;

/// Where a frame's output goes when its window does not fit in memory.
pub trait Spill {
    /// A zero-filled buffer of `len` bytes, or an error when none can be made (the window is
    /// then held in memory).
    ///
    /// # Errors
    /// When the buffer cannot be created (no temporary directory, no space).
    fn buffer(&self, len: usize) -> std::io::Result<Box<dyn SpillBuffer>>;
}

/// The output of one frame, written by the decoder and read back by it for matches.
pub trait SpillBuffer {
    /// The whole buffer.
    fn bytes(&mut self) -> &mut [u8];
    /// The whole buffer, to read.
    fn view(&self) -> &[u8];
    /// Gives back the memory of `..below`; its bytes must read the same afterwards (a file's
    /// pages are dropped from memory and read again from the file when touched).
    fn release(&mut self, below: usize);
    /// Where the buffer could not be written (its file found no space), if it could not: the
    /// bytes from there on are not the decoder's, and decoding must stop.
    fn fault(&self) -> Option<u64>;
}

/// A frame being decoded into a [`SpillBuffer`] (`ZSTD_d_stableOutBuffer`: the decoder keeps no
/// window of its own and reads matches from the buffer).
struct Spilled {
    buffer: Box<dyn SpillBuffer>,
    /// Output the decoder has written.
    produced: usize,
    /// Output handed to the reader.
    delivered: usize,
    /// What had been produced at the last release.
    released_at: usize,
}

/// Compressed bytes given to a spilling decoder at a time (see `read_spilled`). Small, because
/// a few hundred bytes of clang's frames can decode to megabytes (long-distance matches copy
/// one GPU's code object into the next): 4 KiB let the decoder run tens of megabytes ahead of
/// the reader, all of it resident until released.
const SPILL_FEED: usize = 512;

/// Release the output older than [`RELEASE_KEEP`] each time this much more of it has been
/// produced. Output not yet delivered stays in the file and comes back when the reader copies
/// it out. Often, because each match the decoder reads from further back maps the pages
/// around it again (the kernel's fault-around, 64 KiB): between two releases 8 MiB apart, the
/// jax plugin's frames mapped 20-30 MB back in.
const RELEASE_EVERY: usize = 512 << 10;

/// The most recent output kept mapped at a release: most matches reach only this far back,
/// and releasing them too would fault their pages in again at once.
const RELEASE_KEEP: usize = 4 << 20;

/// The window a zstd frame needs, read from its header (RFC 8878, 3.1.1.1): the frame content
/// size for a single-segment frame, else the window descriptor's size. `None` when `head` is
/// not the start of a zstd frame.
fn frame_window(head: &[u8]) -> Option<u64> {
    let b = Bytes::new(head);
    if b.u32(0).ok()? != 0xFD2F_B528 {
        return None;
    }
    let fhd = b.u8(4).ok()?;
    let single_segment = fhd & 0x20 != 0;
    if !single_segment {
        let wd = b.u8(5).ok()?;
        let log = 10 + u64::from(wd >> 3);
        let base = 1u64 << log;
        return Some(base + (base / 8) * u64::from(wd & 7));
    }
    let did_len = match fhd & 3 {
        0 => 0,
        1 => 1,
        2 => 2,
        _ => 4,
    };
    let at = 5 + did_len;
    match fhd >> 6 {
        0 => b.u8(at).ok().map(u64::from),
        1 => b.u16(at).ok().map(|v| u64::from(v) + 256),
        2 => b.u32(at).ok().map(u64::from),
        _ => b.u64(at).ok(),
    }
}

/// A CCOB payload's decoder: its output read in order, and, when the frame is decoded into a
/// [`SpillBuffer`], the output produced so far, where it was written.
trait Decoder: Read {
    /// The output produced so far, when it is all still readable in a spill buffer.
    fn produced(&self) -> Option<&[u8]> {
        None
    }
    /// Where the spill buffer failed, if it did.
    fn spill_fault(&self) -> Option<u64> {
        None
    }
}

impl<R: BufRead> Decoder for flate2::bufread::ZlibDecoder<R> {}

impl<R: BufRead> Decoder for ZstdFrame<R> {
    fn produced(&self) -> Option<&[u8]> {
        let sp = self.spilled.as_ref()?;
        // After a failed write the rest of the buffer is not the decoder's (the frame's next
        // read fails): nothing is handed out then.
        if sp.buffer.fault().is_some() {
            return None;
        }
        sp.buffer.view().get(..sp.produced)
    }

    fn spill_fault(&self) -> Option<u64> {
        self.spilled.as_ref()?.buffer.fault()
    }
}

/// The decoder of one zstd frame, on a context from this thread's pool. It reads as
/// `zstd::stream::read::Decoder::with_buffer(payload).single_frame()` with
/// `window_log_max(27)` does, the same output and the same errors.
struct ZstdFrame<R> {
    ctx: Option<zstd::zstd_safe::DCtx<'static>>,
    input: R,
    /// Set once the frame has ended: later reads return 0.
    finished: bool,
    /// Bytes of output read so far (decides whether the context is pooled).
    produced: u64,
    /// The output buffer, when the window did not fit in memory.
    spilled: Option<Spilled>,
    /// The window held from the budget: kept only to be given back when the frame drops.
    _held: Option<Held>,
}

impl<R: BufRead> ZstdFrame<R> {
    fn new(
        mut input: R,
        limit: u64,
        spill: Option<&dyn Spill>,
        budget: Option<&'static rocpack_bytes::Budget>,
    ) -> std::io::Result<Self> {
        use zstd::zstd_safe::{DCtx, DParameter, ResetDirective};
        // The decoder's buffer is the window, but never more than the output (zstd's
        // ZSTD_decodingBufferSize_min); `limit` is the declared output size.
        // Only a real frame header counts (anything else fails at its first bytes), and only
        // a window larger than a pooled context's.
        let window = frame_window(input.fill_buf()?)
            .map(|w| w.min(limit))
            .filter(|w| *w > WINDOW_UNCOUNTED);
        let mut held = None;
        let mut spilled = None;
        if let (Some(budget), Some(window)) = (budget, window) {
            held = Held::new(budget, window);
            if let (None, Some(spill)) = (&held, spill) {
                // The buffer must hold the whole frame (a frame longer than declared fails
                // with "Destination buffer is too small"); the file is sparse, so `limit`, a
                // size the header claims, costs nothing until output is written.
                if let Ok(len) = usize::try_from(limit) {
                    spilled = spill.buffer(len).ok().map(|buffer| Spilled {
                        buffer,
                        produced: 0,
                        delivered: 0,
                        released_at: 0,
                    });
                }
            }
        }
        let pooled = if spilled.is_some() {
            None
        } else {
            CONTEXTS.with(|c| c.try_borrow_mut().ok().and_then(|mut c| c.pop()))
        };
        let ctx = match pooled {
            Some(mut ctx) => {
                // Parameters (the window limit) survive a session reset.
                ctx.reset(ResetDirective::SessionOnly).map_err(zstd_error)?;
                ctx
            }
            None => {
                let mut ctx = DCtx::create();
                ctx.init().map_err(zstd_error)?;
                // clang writes frames with long-distance matching and a 2^27 window; refuse more.
                ctx.set_parameter(DParameter::WindowLogMax(27))
                    .map_err(zstd_error)?;
                if spilled.is_some() {
                    ctx.set_parameter(DParameter::StableOutBuffer(true))
                        .map_err(zstd_error)?;
                }
                ctx
            }
        };
        Ok(ZstdFrame {
            ctx: Some(ctx),
            input,
            finished: false,
            produced: 0,
            spilled,
            _held: held,
        })
    }
}

impl<R: BufRead> ZstdFrame<R> {
    /// [`Read::read`] for a frame decoded into its spill buffer: the decoder is given the
    /// whole buffer each time, at the position it left (as `ZSTD_d_stableOutBuffer` requires),
    /// and the reader copies out what it has produced.
    fn read_spilled(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use zstd::zstd_safe::{InBuffer, OutBuffer};
        let (Some(ctx), Some(sp)) = (self.ctx.as_mut(), self.spilled.as_mut()) else {
            return Ok(0);
        };
        while sp.delivered == sp.produced {
            if self.finished {
                return Ok(0);
            }
            let input = self.input.fill_buf()?;
            if input.is_empty() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "incomplete frame",
                ));
            }
            // The decoder writes all it can into the buffer it is given, which here is the
            // whole frame: fed a little input at a time, it decodes a few blocks (128 KiB each)
            // ahead of the reader instead of all the input allows (clang's bundles compress
            // 60:1 and more, so 64 KiB of input would be megabytes of pages written to the file
            // for a reader that wanted one header).
            let input = input.get(..SPILL_FEED).unwrap_or(input);
            let mut src = InBuffer::around(input);
            let mut dst = OutBuffer::around_pos(sp.buffer.bytes(), sp.produced);
            let hint = ctx.decompress_stream(&mut dst, &mut src).map_err(|code| {
                // The buffer is the declared size: a frame longer than that runs out of it.
                // (zstd returns an error as the negated ZSTD_ErrorCode.)
                let too_small =
                    zstd::zstd_safe::zstd_sys::ZSTD_ErrorCode::ZSTD_error_dstSize_tooSmall;
                if code == (too_small as usize).wrapping_neg() {
                    std::io::Error::other(Overrun)
                } else {
                    zstd_error(code)
                }
            })?;
            sp.produced = dst.pos();
            if let Some(at) = sp.buffer.fault() {
                return Err(std::io::Error::other(format!(
                    "the temporary file holding the decoded bundle could not be written at \
                     {at} bytes (no space in $TMPDIR?)"
                )));
            }
            let read = src.pos();
            self.input.consume(read);
            if hint == 0 {
                self.finished = true;
            }
        }
        let n = buf.len().min(sp.produced - sp.delivered);
        let n = {
            let src = sp.buffer.bytes();
            let src = src.get(sp.delivered..sp.delivered + n).unwrap_or_default();
            let dst = buf.get_mut(..src.len()).unwrap_or_default();
            dst.copy_from_slice(src);
            src.len()
        };
        sp.delivered += n;
        if sp.produced - sp.released_at >= RELEASE_EVERY {
            sp.buffer.release(sp.produced.saturating_sub(RELEASE_KEEP));
            sp.released_at = sp.produced;
        }
        Ok(n)
    }
}

/// A spilled frame produces more than its declared size, which is all its buffer holds.
#[derive(Debug)]
struct Overrun;

impl std::fmt::Display for Overrun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("more output than declared")
    }
}

impl std::error::Error for Overrun {}

/// The error the `zstd` crate gives for a zstd error code.
fn zstd_error(code: usize) -> std::io::Error {
    std::io::Error::other(zstd::zstd_safe::get_error_name(code).to_string())
}

impl<R: BufRead> Read for ZstdFrame<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use zstd::zstd_safe::{InBuffer, OutBuffer};
        if self.spilled.is_some() {
            return self.read_spilled(buf);
        }
        let Some(ctx) = self.ctx.as_mut() else {
            return Ok(0);
        };
        if self.finished || buf.is_empty() {
            return Ok(0);
        }
        // As the zstd crate's reader: first offer no input, to drain what the context holds,
        // then the input as it comes.
        let mut first = true;
        loop {
            let (read, written, hint) = {
                let input: &[u8] = if first { &[] } else { self.input.fill_buf()? };
                if !first && input.is_empty() {
                    // The input ended inside the frame.
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "incomplete frame",
                    ));
                }
                let mut src = InBuffer::around(input);
                let mut dst = OutBuffer::around(&mut *buf);
                let hint = match ctx.decompress_stream(&mut dst, &mut src) {
                    Ok(hint) => hint,
                    Err(code) => {
                        // The blocks decoded before the corrupt one are in the context's
                        // buffer but not counted in `dst`: the context is not pooled.
                        self.produced = u64::MAX;
                        return Err(zstd_error(code));
                    }
                };
                (src.pos(), dst.pos(), hint)
            };
            first = false;
            self.input.consume(read);
            if hint == 0 {
                self.finished = true;
            }
            if written > 0 {
                self.produced = self.produced.saturating_add(written as u64);
                return Ok(written);
            }
            if self.finished {
                return Ok(0);
            }
        }
    }
}

impl<R> Drop for ZstdFrame<R> {
    fn drop(&mut self) {
        // The window is given back when `held` drops, after the context below.
        // A context set for a spill buffer keeps ZSTD_d_stableOutBuffer: it is not pooled.
        if self.spilled.is_some() {
            return;
        }
        if let Some(ctx) = self.ctx.take() {
            CONTEXTS.with(|c| {
                if let Ok(mut c) = c.try_borrow_mut() {
                    let large = |x: &zstd::zstd_safe::DCtx<'_>| x.sizeof() > CONTEXT_KEPT_BYTES;
                    if c.len() < CONTEXTS_KEPT
                        && (!large(&ctx)
                            || (self.produced <= CONTEXT_KEPT_OUTPUT && !c.iter().any(large)))
                    {
                        c.push(ctx);
                    }
                }
            });
        }
    }
}

/// A streaming decoder over a CCOB payload that never produces more than the declared size,
/// and so never more than the caller's ceiling.
pub struct Stream<'a> {
    inner: Box<dyn Decoder + 'a>,
    pos: u64,
    limit: u64,
    /// Hashes the output as it is read, once asked ([`Stream::hash_output`]).
    hasher: Option<Hasher>,
    /// Room for output that is skipped, kept from one skip to the next.
    scratch: Vec<u8>,
}

impl<'a> Stream<'a> {
    /// Starts decoding. `limit` is the most output that will be accepted (the declared
    /// uncompressed size, already checked against the ceiling by the caller).
    ///
    /// # Errors
    /// [`FormatError`] when the zstd decoder cannot be created.
    pub fn new<R: BufRead + 'a>(
        method: Method,
        payload: R,
        limit: u64,
    ) -> Result<Self, FormatError> {
        Self::spilling(method, payload, limit, None, None)
    }

    /// [`Stream::new`], keeping the memory of a large zstd window bounded by `budget` (see
    /// [`rocpack_bytes::Budget`]: a window that does not fit waits for others to finish): a window the
    /// budget cannot give is decoded into a buffer from `spill`, a file, instead of memory.
    /// Without `spill`, or when it cannot give a buffer, the window is held in memory anyway.
    /// Without `budget`, windows are not counted ([`Stream::new`]; `slim` bounds its own).
    ///
    /// # Errors
    /// [`FormatError`] when the zstd decoder cannot be created.
    pub fn spilling<R: BufRead + 'a>(
        method: Method,
        payload: R,
        limit: u64,
        spill: Option<&dyn Spill>,
        budget: Option<&'static rocpack_bytes::Budget>,
    ) -> Result<Self, FormatError> {
        let inner: Box<dyn Decoder + 'a> = match method {
            Method::Zlib => Box::new(flate2::bufread::ZlibDecoder::new(payload)),
            Method::Zstd => Box::new(
                ZstdFrame::new(payload, limit, spill, budget)
                    .map_err(|e| FormatError::new(Kind::Ccob, 0, format!("zstd decoder: {e}")))?,
            ),
        };
        Ok(Stream {
            inner,
            pos: 0,
            limit,
            hasher: None,
            scratch: Vec::new(),
        })
    }

    /// Whether the frame is decoded into a spill buffer ([`Stream::decoded`] gives its output)
    /// that has not failed.
    pub fn spilled(&self) -> bool {
        self.inner.produced().is_some()
    }

    /// Where the spill buffer failed (no space, or an I/O error reading a page back), if the
    /// frame is decoded into one and it did: its bytes from there on read as zeros.
    pub fn spill_fault(&self) -> Option<u64> {
        self.inner.spill_fault()
    }

    /// The output in `from..to`, when the frame is decoded into a spill buffer ([`Spill`]) and
    /// has been read up to `to`: the bytes where the decoder wrote them, without a copy. They
    /// stay readable while the borrow lasts (released pages come back from the file).
    pub fn decoded(&self, from: u64, to: u64) -> Option<&[u8]> {
        if to > self.pos {
            return None;
        }
        let from = usize::try_from(from).ok()?;
        let to = usize::try_from(to).ok()?;
        self.inner.produced()?.get(from..to)
    }

    /// Hashes all output read (or skipped) from here on, as clang hashes a CCOB's bundle
    /// ([`hash`]); [`Stream::output_hash`] gives the hash so far.
    pub fn hash_output(&mut self) {
        self.hasher = Some(Hasher::default());
    }

    /// The [`hash`] of the output read since [`Stream::hash_output`], if that was called.
    pub fn output_hash(&self) -> Option<u64> {
        self.hasher.clone().map(Hasher::finish)
    }

    /// Bytes of output produced so far.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Reads up to `buf.len()` bytes; fewer only at the end of the stream.
    ///
    /// # Errors
    /// A [`FormatError`] for corrupt compressed data or output beyond the limit.
    pub fn read_full(&mut self, buf: &mut [u8]) -> Result<usize, FormatError> {
        let mut filled = 0;
        while filled < buf.len() {
            let rest = buf.get_mut(filled..).unwrap_or_default();
            match self.inner.read(rest) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.get_ref().is_some_and(|e| e.is::<Overrun>()) => {
                    // As when the output is counted past the limit below.
                    self.pos = self.limit.saturating_add(1);
                    return Err(self.overrun());
                }
                Err(e) => {
                    return Err(FormatError::new(
                        Kind::Ccob,
                        0,
                        format!(
                            "corrupt compressed data after {} output bytes: {e}",
                            self.pos + filled as u64
                        ),
                    ));
                }
            }
        }
        self.pos += filled as u64;
        if self.pos > self.limit {
            return Err(self.overrun());
        }
        if let Some(hasher) = &mut self.hasher {
            hasher.update(buf.get(..filled).unwrap_or_default());
        }
        Ok(filled)
    }

    fn overrun(&self) -> FormatError {
        FormatError::new(
            Kind::Ccob,
            0,
            format!(
                "decompresses to more than the declared {} bytes",
                self.limit
            ),
        )
    }

    /// Discards output up to position `to`.
    ///
    /// # Errors
    /// As [`Stream::read_full`]; also when the stream ends before `to`.
    pub fn skip_to(&mut self, to: u64) -> Result<(), FormatError> {
        if self.skip_until(to)? {
            return Ok(());
        }
        Err(FormatError::new(
            Kind::Ccob,
            0,
            format!(
                "compressed data ends at {} output bytes, before {to}",
                self.pos
            ),
        ))
    }

    /// Discards output up to position `to`: `false` when the stream ends before.
    ///
    /// # Errors
    /// As [`Stream::read_full`].
    pub fn skip_until(&mut self, to: u64) -> Result<bool, FormatError> {
        if self.pos >= to {
            return Ok(true);
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.resize(64 << 10, 0);
        let reached = (|| {
            while self.pos < to {
                let want = (to - self.pos).min(scratch.len() as u64) as usize;
                if self.read_full(scratch.get_mut(..want).unwrap_or_default())? < want {
                    return Ok(false);
                }
            }
            Ok(true)
        })();
        self.scratch = scratch;
        reached
    }

    /// Reads `len` bytes (fewer at the end of the stream) into a new buffer.
    ///
    /// # Errors
    /// As [`Stream::read_full`].
    pub fn read_vec(&mut self, len: u64) -> Result<Vec<u8>, FormatError> {
        self.read_vec_reserving(len, 0)
    }

    /// [`Stream::read_vec`], reserving `reserve` bytes up front (at most `len`): the caller
    /// bounds it by what the input can plausibly produce, since `len` comes from the file.
    ///
    /// # Errors
    /// As [`Stream::read_full`].
    pub fn read_vec_reserving(&mut self, len: u64, reserve: u64) -> Result<Vec<u8>, FormatError> {
        let mut out: Vec<u8> = Vec::with_capacity(usize::try_from(reserve.min(len)).unwrap_or(0));
        self.read_append(&mut out, len)?;
        Ok(out)
    }

    /// Appends output to `buf` until it holds `len` bytes: `false` when the stream ends before.
    /// On an error, `buf` holds what was appended before the failing read.
    /// Output is decoded straight into the buffer, which grows with the data produced (4 MiB at
    /// a time) rather than with `len`, which comes from the file.
    ///
    /// # Errors
    /// As [`Stream::read_full`].
    pub fn read_append(&mut self, buf: &mut Vec<u8>, len: u64) -> Result<bool, FormatError> {
        while (buf.len() as u64) < len {
            let at = buf.len();
            let want = (len - at as u64).min(4 << 20) as usize;
            buf.resize(at + want, 0);
            let read = self.read_full(buf.get_mut(at..).unwrap_or_default());
            // On an error too, `buf` keeps only the output counted in the position.
            let n = read.inspect_err(|_| buf.truncate(at))?;
            buf.truncate(at + n);
            if n < want {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// Why a CCOB could not be fully decompressed.
pub fn check_ceiling(header: &CcobHeader, ceiling: u64) -> Result<(), FormatError> {
    if header.uncompressed_size > ceiling {
        return Err(FormatError::new(
            Kind::Ccob,
            if header.version == 1 { 8 } else { 12 },
            format!(
                "declares {} uncompressed bytes, more than the decompression limit of {ceiling} (raise it with --max-decompressed)",
                header.uncompressed_size
            ),
        ));
    }
    Ok(())
}

/// Decompresses the whole payload, checking the declared size.
///
/// # Errors
/// [`FormatError`] when the declared size exceeds `ceiling`, the data is corrupt, or the output
/// size differs from the declared size.
pub fn decompress(header: &CcobHeader, data: &[u8], ceiling: u64) -> Result<Vec<u8>, FormatError> {
    check_ceiling(header, ceiling)?;
    let mut stream = Stream::new(
        header.method,
        header.payload(data),
        header.uncompressed_size,
    )?;
    // Reserve the declared size (already within the ceiling) when the payload could produce it
    // at a ratio of 1:256; beyond that, grow with the output.
    let plausible = (header.payload(data).len() as u64).saturating_mul(256);
    let out = stream.read_vec_reserving(header.uncompressed_size, plausible)?;
    // One more byte would mean the stream is longer than declared.
    let mut probe = [0u8; 1];
    if out.len() as u64 != header.uncompressed_size
        || stream.read_full(&mut probe).is_err()
        || stream.position() != header.uncompressed_size
    {
        return Err(size_mismatch(
            (out.len() as u64).max(stream.position()),
            header.uncompressed_size,
        ));
    }
    Ok(out)
}

/// The error for a bundle that decompressed to `produced` bytes where its header declares
/// `declared`.
pub fn size_mismatch(produced: u64, declared: u64) -> FormatError {
    FormatError::new(
        Kind::Ccob,
        0,
        format!("decompressed to {produced} bytes, header declares {declared}"),
    )
}

/// The hash clang stores: the first 8 bytes of the MD5 digest as a little-endian u64.
pub fn hash(data: &[u8]) -> u64 {
    let mut h = Hasher::default();
    h.update(data);
    h.finish()
}

/// [`hash`], computed over data that arrives in pieces.
#[derive(Default, Clone)]
pub struct Hasher(Md5);

impl Hasher {
    /// Adds the next piece.
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The hash of everything added.
    pub fn finish(self) -> u64 {
        truncated(self.0.finalize())
    }
}

/// The [`hash`] of each source, in order, computed several at a time
/// ([`crate::md5::digest_each`]: give the sources largest first). A source fills the buffer it
/// is given with its next bytes and returns how many; 0 ends it.
///
/// # Errors
/// The first error a source returns.
pub fn hash_each<F>(sources: impl IntoIterator<Item = F>) -> std::io::Result<Vec<u64>>
where
    F: FnMut(&mut [u8]) -> std::io::Result<usize>,
{
    Ok(crate::md5::digest_each(sources)?
        .into_iter()
        .map(truncated)
        .collect())
}

/// The first 8 bytes of a digest, little-endian.
fn truncated(digest: [u8; 16]) -> u64 {
    let [a, b, c, d, e, f, g, h, ..] = digest;
    u64::from_le_bytes([a, b, c, d, e, f, g, h])
}

/// Size of a version's header: 20, 24 or 32 bytes.
pub fn header_len(version: u16) -> u64 {
    match version {
        1 => 20,
        2 => 24,
        _ => 32,
    }
}

/// The header of a CCOB holding `payload_len` compressed bytes of a bundle of
/// `uncompressed_len` bytes whose [`hash`] is `hash`, as clang-offload-bundler writes it
/// (`CompressedOffloadBundle::compress`).
///
/// # Errors
/// An unknown version, or sizes the version's fields cannot hold.
pub fn header(
    version: u16,
    method: Method,
    payload_len: u64,
    uncompressed_len: u64,
    hash: u64,
) -> std::io::Result<Vec<u8>> {
    let too_big = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("bundle exceeds the CCOB v{version} size limit"),
        )
    };
    let u32_of = |v: u64| u32::try_from(v).map_err(|_| too_big());
    let mut out = MAGIC.to_vec();
    out.extend(version.to_le_bytes());
    out.extend((method as u16).to_le_bytes());
    match version {
        1 => out.extend(u32_of(uncompressed_len)?.to_le_bytes()),
        2 => {
            let total = payload_len.checked_add(24).ok_or_else(too_big)?;
            out.extend(u32_of(total)?.to_le_bytes());
            out.extend(u32_of(uncompressed_len)?.to_le_bytes());
        }
        3 => {
            let total = payload_len.checked_add(32).ok_or_else(too_big)?;
            out.extend(total.to_le_bytes());
            out.extend(uncompressed_len.to_le_bytes());
        }
        v => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("unknown CCOB version {v}"),
            ));
        }
    }
    out.extend(hash.to_le_bytes());
    Ok(out)
}

/// A streaming compressor writing a CCOB payload as clang does: zstd at `level` with
/// long-distance matching (LLVM's `zstd::compress` with `EnableLdm`: libzstd's defaults
/// otherwise, so a 2^27 window, the content size in the frame, no checksum), or zlib.
pub enum Encoder<W: Write> {
    /// zstd.
    Zstd(zstd::stream::write::Encoder<'static, W>),
    /// zlib.
    Zlib(flate2::write::ZlibEncoder<W>),
}

impl<W: Write> Encoder<W> {
    /// Starts a payload of exactly `len` uncompressed bytes. Single-threaded, as clang: the
    /// bytes depend only on the bundle and the settings (zstd's multithreaded mode would split
    /// the input into jobs and compress less well).
    ///
    /// # Errors
    /// When libzstd refuses a parameter.
    pub fn new(out: W, method: Method, level: i32, len: u64) -> std::io::Result<Self> {
        Ok(match method {
            Method::Zstd => {
                let mut enc = zstd::stream::write::Encoder::new(out, level)?;
                enc.long_distance_matching(true)?;
                enc.include_checksum(false)?;
                enc.include_contentsize(true)?;
                enc.set_pledged_src_size(Some(len))?;
                Encoder::Zstd(enc)
            }
            Method::Zlib => Encoder::Zlib(flate2::write::ZlibEncoder::new(
                out,
                flate2::Compression::new(level.clamp(0, 9) as u32),
            )),
        })
    }

    /// Compresses the next piece.
    ///
    /// # Errors
    /// As the underlying writer.
    pub fn write_all(&mut self, data: &[u8]) -> std::io::Result<()> {
        match self {
            Encoder::Zstd(e) => e.write_all(data),
            Encoder::Zlib(e) => e.write_all(data),
        }
    }

    /// Ends the payload and gives the writer back.
    ///
    /// # Errors
    /// As the underlying writer; zstd also when fewer or more bytes came than were pledged.
    pub fn finish(self) -> std::io::Result<W> {
        match self {
            Encoder::Zstd(e) => e.finish(),
            Encoder::Zlib(e) => e.finish(),
        }
    }
}

/// Writes a CCOB as clang-offload-bundler does (`CompressedOffloadBundle::compress`).
///
/// # Errors
/// As [`Encoder`] and [`header`].
pub fn compress(
    bundle: &[u8],
    version: u16,
    method: Method,
    level: i32,
) -> std::io::Result<Vec<u8>> {
    let mut enc = Encoder::new(Vec::new(), method, level, bundle.len() as u64)?;
    enc.write_all(bundle)?;
    let payload = enc.finish()?;
    let mut out = header(
        version,
        method,
        payload.len() as u64,
        bundle.len() as u64,
        hash(bundle),
    )?;
    out.extend(payload);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_version_and_method() {
        let bundle =
            crate::bundle::tests::build(&[("hipv4-amdgcn-amd-amdhsa--gfx1030", &[7u8; 5000])]);
        for version in 1..=3 {
            for method in [Method::Zlib, Method::Zstd] {
                let blob = compress(&bundle, version, method, 3).unwrap();
                let h = CcobHeader::parse(&blob).unwrap();
                assert_eq!((h.version, h.method), (version, method));
                assert_eq!(h.total_size.unwrap_or(blob.len() as u64), blob.len() as u64);
                assert_eq!(h.hash, hash(&bundle));
                assert_eq!(decompress(&h, &blob, 1 << 30).unwrap(), bundle);
                let mut s = Stream::new(h.method, h.payload(&blob), h.uncompressed_size).unwrap();
                assert_eq!(s.read_vec(32).unwrap(), bundle[..32]);
            }
        }
    }

    /// Output read, skipped and appended in any mix is hashed once, in order, as `hash` hashes
    /// the whole; an early end is told apart from reaching the position asked for.
    #[test]
    fn a_stream_hashes_what_it_reads_and_skips_and_says_where_it_ends() {
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let bundle = crate::bundle::tests::build(&[("hipv4-amdgcn-amd-amdhsa--gfx1030", &data)]);
        let len = bundle.len() as u64;
        for method in [Method::Zlib, Method::Zstd] {
            let blob = compress(&bundle, 3, method, 3).unwrap();
            let h = CcobHeader::parse(&blob).unwrap();
            let mut s = Stream::new(h.method, h.payload(&blob), h.uncompressed_size).unwrap();
            s.hash_output();
            let mut head = [0u8; 100];
            assert_eq!(s.read_full(&mut head).unwrap(), 100);
            assert!(s.skip_until(70_000).unwrap());
            assert!(s.skip_until(50).unwrap(), "already past: nothing to do");
            let mut buf = b"kept".to_vec();
            assert!(s.read_append(&mut buf, 4 + 100_000).unwrap());
            assert_eq!(&buf[4..], &bundle[70_000..170_000]);
            // Past the end: false, with everything there was read and hashed.
            assert!(!s.skip_until(len + 10).unwrap());
            assert_eq!(s.position(), len);
            let more = buf.len() as u64 + 1;
            assert!(!s.read_append(&mut buf, more).unwrap());
            assert_eq!(s.output_hash(), Some(hash(&bundle)));
            assert_eq!(h.hash, hash(&bundle));
            let err = s.skip_to(len + 1).unwrap_err();
            assert_eq!(
                err.message,
                format!(
                    "compressed data ends at {len} output bytes, before {}",
                    len + 1
                )
            );
            // Not asked: no hash.
            let mut s = Stream::new(h.method, h.payload(&blob), h.uncompressed_size).unwrap();
            assert!(s.skip_until(len).unwrap());
            assert_eq!(s.output_hash(), None);
        }
    }

    /// A context whose window buffer is large is kept for the next frame when it produced
    /// little (a bundle's table was read), and freed when the frame was read through.
    #[test]
    fn a_context_that_read_a_table_is_kept_and_one_that_read_a_bundle_is_not() {
        // 6 MiB that does not compress: a single-segment frame with a 6 MiB window.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let data: Vec<u8> = (0..6 << 20)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let bundle = crate::bundle::tests::build(&[("hipv4-amdgcn-amd-amdhsa--gfx1030", &data)]);
        let blob = compress(&bundle, 3, Method::Zstd, 3).unwrap();
        let h = CcobHeader::parse(&blob).unwrap();
        let pooled = || CONTEXTS.with(|c| c.borrow().len());
        let largest = || CONTEXTS.with(|c| c.borrow().iter().map(|c| c.sizeof()).max());
        CONTEXTS.with(|c| c.borrow_mut().clear());

        let mut s = Stream::new(h.method, h.payload(&blob), h.uncompressed_size).unwrap();
        assert_eq!(s.read_vec(4096).unwrap(), bundle[..4096]);
        drop(s);
        assert_eq!(pooled(), 1);
        assert!(largest().unwrap() > CONTEXT_KEPT_BYTES, "{:?}", largest());

        // The kept context reads the next frame, through to the end this time: then it goes.
        let mut s = Stream::new(h.method, h.payload(&blob), h.uncompressed_size).unwrap();
        assert_eq!(pooled(), 0);
        assert!(s.skip_until(bundle.len() as u64).unwrap());
        drop(s);
        assert_eq!(pooled(), 0);

        // Two tables read at once (a CCOB inside a CCOB): one large context is kept, not two.
        let mut a = Stream::new(h.method, h.payload(&blob), h.uncompressed_size).unwrap();
        let mut b = Stream::new(h.method, h.payload(&blob), h.uncompressed_size).unwrap();
        assert_eq!(a.read_vec(100).unwrap(), bundle[..100]);
        assert_eq!(b.read_vec(100).unwrap(), bundle[..100]);
        drop(a);
        drop(b);
        assert_eq!(pooled(), 1);

        // A frame that fails after decoding megabytes (a reserved block type in its 20th raw
        // block): zstd wrote them into the context's buffer without counting them, so the
        // context is not kept.
        let mut bad = blob.clone();
        let payload_at = blob.len() - h.payload(&blob).len();
        let block = 20 * (128 << 10);
        // Raw blocks hold the bundle's bytes as they are.
        let content = memchr::memmem::find(h.payload(&blob), &bundle[block..block + 64]).unwrap();
        bad[payload_at + content - 3] |= 0b110;
        CONTEXTS.with(|c| c.borrow_mut().clear());
        let mut s = Stream::new(h.method, h.payload(&bad), h.uncompressed_size).unwrap();
        let err = s.read_vec(4 << 20).unwrap_err();
        assert!(err.message.contains("corrupt"), "{}", err.message);
        drop(s);
        assert_eq!(pooled(), 0);
    }

    /// A spill buffer in memory that forgets nothing; `release` records where it was called.
    struct VecSpill;
    struct VecBuffer(Vec<u8>);
    static RELEASES: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
    impl Spill for VecSpill {
        fn buffer(&self, len: usize) -> std::io::Result<Box<dyn SpillBuffer>> {
            Ok(Box::new(VecBuffer(vec![0; len])))
        }
    }
    impl SpillBuffer for VecBuffer {
        fn bytes(&mut self) -> &mut [u8] {
            &mut self.0
        }
        fn view(&self) -> &[u8] {
            &self.0
        }
        fn release(&mut self, below: usize) {
            RELEASES.lock().unwrap().push(below);
        }
        fn fault(&self) -> Option<u64> {
            None
        }
    }

    /// 24 MiB of bytes with matches from far back (a single-segment frame's window is the
    /// whole output, so the decoder must read them from the spill buffer).
    fn far_matches() -> Vec<u8> {
        let mut block = vec![0u8; 1 << 20];
        let mut x = 0x2545_f491_4f6c_dd1d_u64;
        for b in &mut block {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        let mut out = Vec::new();
        for i in 0..24u8 {
            let mut b = block.clone();
            b[0] = i;
            out.extend_from_slice(&b);
        }
        out
    }

    #[test]
    fn a_window_over_the_budget_is_decoded_into_the_spill_buffer() {
        static NONE: rocpack_bytes::Budget = rocpack_bytes::Budget::new(0);
        static ROOM: rocpack_bytes::Budget = rocpack_bytes::Budget::new(64 << 20);
        let data = far_matches();
        let bundle = crate::bundle::tests::build(&[("hipv4-amdgcn-amd-amdhsa--gfx1030", &data)]);
        let blob = compress(&bundle, 3, Method::Zstd, 3).unwrap();
        let h = CcobHeader::parse(&blob).unwrap();
        let window = frame_window(h.payload(&blob)).unwrap();
        assert_eq!(
            window,
            bundle.len() as u64,
            "clang's frames are single-segment"
        );
        // Read in odd pieces, as the header reader does.
        let read_all = |s: &mut Stream<'_>| {
            let mut out = Vec::new();
            loop {
                let piece = s.read_vec(70_001).unwrap();
                if piece.is_empty() {
                    break out;
                }
                out.extend(piece);
            }
        };
        let mut spilled = Stream::spilling(
            h.method,
            h.payload(&blob),
            h.uncompressed_size,
            Some(&VecSpill),
            Some(&NONE),
        )
        .unwrap();
        assert_eq!(read_all(&mut spilled), bundle);
        drop(spilled);
        // Released as it goes, often, but never the most recent output the decoder reads
        // matches from.
        let releases = std::mem::take(&mut *RELEASES.lock().unwrap());
        // Here each feed decodes about 2.4 MiB (whole 1 MiB blocks matched from far back), so a
        // release follows each feed: 11 over 24 MiB (3 when released every 8 MiB).
        assert!(releases.len() >= 8, "released only at {releases:?}");
        let last = releases.iter().max().copied().unwrap_or(0);
        assert!(
            last >= 16 << 20,
            "released up to {last} of {}",
            bundle.len()
        );
        assert!(
            last <= bundle.len() - RELEASE_KEEP,
            "released up to {last} of {}: the last {RELEASE_KEEP} must stay",
            bundle.len()
        );
        // With room, the window is held in memory and given back when the frame is done.
        let mut held = Stream::spilling(
            h.method,
            h.payload(&blob),
            h.uncompressed_size,
            Some(&VecSpill),
            Some(&ROOM),
        )
        .unwrap();
        assert_eq!(ROOM.used(), window);
        assert_eq!(read_all(&mut held), bundle);
        drop(held);
        assert_eq!(ROOM.used(), 0);
        // Output beyond the declared size is the same error spilled (where the decoder runs
        // out of the buffer) as held, and a truncated frame is an error.
        let short = h.uncompressed_size - 1;
        for budget in [&NONE, &ROOM] {
            let mut s = Stream::spilling(
                h.method,
                h.payload(&blob),
                short,
                Some(&VecSpill),
                Some(budget),
            )
            .unwrap();
            let err = s.read_vec(h.uncompressed_size).unwrap_err();
            assert_eq!(
                err.message,
                format!("decompresses to more than the declared {short} bytes")
            );
            assert_eq!(s.position(), short + 1);
        }
        let payload = h.payload(&blob);
        let cut = payload.get(..payload.len() / 2).unwrap();
        let mut s = Stream::spilling(
            h.method,
            cut,
            h.uncompressed_size,
            Some(&VecSpill),
            Some(&NONE),
        )
        .unwrap();
        assert!(s.read_vec(h.uncompressed_size).is_err());
    }

    /// A window larger than the whole budget, or a second one on a thread that holds one, is
    /// refused without waiting (the waiting itself is rocpack_bytes::Budget's).
    #[test]
    fn a_window_is_refused_when_it_can_never_fit_or_would_wait_on_itself() {
        static B: rocpack_bytes::Budget = rocpack_bytes::Budget::new(64 << 20);
        assert!(Held::new(&B, 65 << 20).is_none());
        let first = Held::new(&B, 40 << 20).unwrap();
        assert!(Held::new(&B, 1 << 20).is_none());
        drop(first);
        assert_eq!(B.used(), 0);
        assert!(Held::new(&B, 1 << 20).is_some());
    }

    #[test]
    fn frame_windows_are_read_from_the_frame_header() {
        // Single segment, 4-byte content size 0x0100_0000.
        assert_eq!(
            frame_window(&[0x28, 0xb5, 0x2f, 0xfd, 0xa0, 0, 0, 0, 1]),
            Some(1 << 24)
        );
        // Window descriptor: exponent 17 (2^27), mantissa 0.
        assert_eq!(
            frame_window(&[0x28, 0xb5, 0x2f, 0xfd, 0x00, 17 << 3]),
            Some(1 << 27)
        );
        // Mantissa 4: 2^10 + 4 * 2^7.
        assert_eq!(
            frame_window(&[0x28, 0xb5, 0x2f, 0xfd, 0x00, 4]),
            Some(1024 + 512)
        );
        assert_eq!(frame_window(b"CCOB"), None);
        assert_eq!(frame_window(&[0x28, 0xb5, 0x2f, 0xfd, 0xa0, 0]), None);
    }

    #[test]
    fn declared_size_is_checked_against_ceiling_and_output() {
        let bundle =
            crate::bundle::tests::build(&[("hipv4-amdgcn-amd-amdhsa--gfx1030", &[1u8; 100])]);
        let mut blob = compress(&bundle, 2, Method::Zstd, 3).unwrap();
        let h = CcobHeader::parse(&blob).unwrap();
        assert!(
            decompress(&h, &blob, 10)
                .unwrap_err()
                .message
                .contains("decompression limit")
        );
        // Claim one byte fewer than the real output.
        blob[12..16].copy_from_slice(&(bundle.len() as u32 - 1).to_le_bytes());
        let h = CcobHeader::parse(&blob).unwrap();
        assert!(decompress(&h, &blob, 1 << 30).is_err());
        // Claim 2^40 bytes in a v3 header: refused by the ceiling, nothing allocated.
        let mut v3 = compress(&bundle, 3, Method::Zstd, 3).unwrap();
        v3[16..24].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let h = CcobHeader::parse(&v3).unwrap();
        assert!(decompress(&h, &v3, 1 << 30).is_err());
    }

    #[test]
    fn header_errors_name_the_field() {
        assert!(
            CcobHeader::parse(b"CCOB\x09\x00\x01\x00")
                .unwrap_err()
                .message
                .contains("version 9")
        );
        assert!(
            CcobHeader::parse(b"CCOB\x02\x00\x07\x00")
                .unwrap_err()
                .message
                .contains("method 7")
        );
        let mut h = compress(b"x", 2, Method::Zlib, 1).unwrap();
        h[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(
            CcobHeader::parse(&h)
                .unwrap_err()
                .message
                .contains("runs past")
        );
    }
}
