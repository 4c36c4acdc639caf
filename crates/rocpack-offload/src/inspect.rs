//! The walk: find every container of device code in a file and every entry inside them.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use rocpack_amdgpu::{CodeObjectHeader, looks_like_code_object, metadata};
use rocpack_bytes::{Bytes, align_up, lossless_string};

use crate::bundle::{self, BundleHeader};
use crate::ccob::{self, CcobHeader};
use crate::elf::{self, Elf, RelocKind};
use crate::embedded::{self, Magic, NoSymbols, ScanRange, SymbolLookup};
use crate::entry_id::EntryId;
use crate::error::{FormatError, Kind};
use crate::model::{
    CodeObject, Container, ContainerKind, Diagnostic, ImageFormat, Inspection, ReadCode,
};

/// Most `unclassified-gpu-code` diagnostics recorded one by one for a file; the rest are
/// counted in one more.
const MAX_UNCLASSIFIED: usize = 64;
use crate::offload_binary;
use crate::pe::{self, Pe};

/// The magic of `.hipFatBinSegment` wrappers: u32 0x48495046, u32 version 1.
const WRAPPER_MAGIC: [u8; 8] = pe::WRAPPER_MAGIC;
const WRAPPER_SIZE: u64 = 24;
/// Largest read-only segment searched for wrappers when section headers are missing.
const READ_ONLY_SCAN_LIMIT: u64 = 64 << 20;
/// Entries of a compressed bundle that all start within this many decompressed bytes are read
/// without counting the zstd window against [`ccob::WINDOWS`]: the window's pages are touched
/// only as deep as the frame is decoded.
const SHALLOW_ENTRIES: u64 = 16 << 20;

/// How deep containers may nest (archive in archive, bundle in bundle entry ...).
const MAX_DEPTH: u32 = 8;
/// Most containers plus entries recorded for one file (librocsparse.so has about 1,700).
const MAX_ITEMS: usize = 1_000_000;
/// Bytes read at a bundle start: a bundle header is 32 bytes plus about 60 per entry, so 1 KiB
/// holds the whole table of a bundle of up to 16 entries.
const START_READ: u64 = 1024;
/// Bytes of each entry decoded from a compressed bundle when only headers are wanted.
const ENTRY_PREFIX: u64 = 4096;
/// Default ceiling for a fully decompressed bundle (the largest seen in ROCm 7.1 is 171 MB).
pub const DEFAULT_MAX_DECOMPRESSED: u64 = 1 << 30;

/// Loads the members of thin archives, which name other files.
pub trait ThinMemberLoader: Sync {
    /// Calls `f` with the bytes of the file a thin member names (relative to the archive).
    ///
    /// # Errors
    /// A message saying why the file could not be read.
    fn with_member(&self, name: &str, f: &mut dyn FnMut(&[u8])) -> Result<(), String>;
}

/// Positional reads from the file being inspected.
///
/// Given one, the walk reads the small headers deep inside a large file (bundle tables, each
/// code object's ELF header) with `pread` instead of through the memory map: touching a
/// mapped page costs a page fault that also maps the neighbouring cached pages, several
/// microseconds each, which dominated listing a 1.6 GB library.
pub trait ReadAt: Sync {
    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read.
    ///
    /// # Errors
    /// The I/O error.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize>;

    /// Fills every buffer of `reads` from its offset, setting `filled` for each one read
    /// completely. The walk asks for the small headers it is about to need all at once (each
    /// code object's ELF header in a fat binary), so an implementation may spread them over
    /// threads or submit them together; this one reads them in turn.
    fn read_many(&self, reads: &mut [Prefetch]) {
        for r in reads {
            r.filled = fill_at(|o, b| self.read_at(o, b), r.offset, &mut r.buf);
        }
    }
}

/// One read of [`ReadAt::read_many`].
#[derive(Debug, Clone)]
pub struct Prefetch {
    /// Where to read in the file.
    pub offset: u64,
    /// What to fill (its length is the length wanted).
    pub buf: Vec<u8>,
    /// Whether `buf` was filled completely.
    pub filled: bool,
}

/// Fills `buf` from `offset` with `read`; false when the file ends first or a read fails.
pub fn fill_at(
    mut read: impl FnMut(u64, &mut [u8]) -> std::io::Result<usize>,
    offset: u64,
    buf: &mut [u8],
) -> bool {
    let mut filled = 0;
    while filled < buf.len() {
        match read(
            offset.saturating_add(filled as u64),
            buf.get_mut(filled..).unwrap_or_default(),
        ) {
            Ok(0) | Err(_) => return false,
            Ok(n) => filled += n,
        }
    }
    true
}

impl ReadAt for std::fs::File {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        std::os::unix::fs::FileExt::read_at(self, buf, offset)
    }
}

/// Bytes in memory, read as a file of that length is.
impl ReadAt for [u8] {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let from = Bytes::new(self).tail(offset).unwrap_or_default();
        let n = from.len().min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), from.get(..n)) {
            dst.copy_from_slice(src);
        }
        Ok(n)
    }
}

impl<T: ReadAt + ?Sized> ReadAt for &T {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        (**self).read_at(offset, buf)
    }
}

/// `[start, start + len)` of a [`ReadAt`], read in order: a compressed payload decoded through
/// `pread` rather than through a map, so that its pages do not become part of the process.
pub struct ReadAtRange<R> {
    from: R,
    pos: u64,
    end: u64,
}

impl<R: ReadAt> ReadAtRange<R> {
    /// The range `[start, start + len)` of `from`.
    pub fn new(from: R, start: u64, len: u64) -> Self {
        ReadAtRange {
            from,
            pos: start,
            end: start.saturating_add(len),
        }
    }
}

impl<R: ReadAt> std::io::Read for ReadAtRange<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = (self.end.saturating_sub(self.pos)).min(buf.len() as u64) as usize;
        let n = self
            .from
            .read_at(self.pos, buf.get_mut(..n).unwrap_or_default())?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Fills `buf` from `offset` of `file`; false when the file ends first or a read fails.
pub(crate) fn read_exact_at(file: &dyn ReadAt, offset: u64, buf: &mut [u8]) -> bool {
    fill_at(|o, b| file.read_at(o, b), offset, buf)
}

/// What to read.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    /// Decode each code object's kernel metadata (needs the whole code object; decompresses
    /// CCOBs fully).
    pub metadata: bool,
    /// Fully decompress CCOBs (checks the size and hash; required to extract).
    pub decompress: bool,
    /// Compare the hash field of each fully decompressed CCOB with the MD5 of its bundle. A
    /// second reading of a file whose hashes the first checked turns it off: MD5 was more than
    /// half of the time of reading a file of 2.4 GB of compressed bundles (jax-rocm7-pjrt's
    /// plugin). Off, `hash_ok` stays `None`.
    pub check_hashes: bool,
    /// Ceiling for one fully decompressed bundle.
    pub max_decompressed: u64,
    /// Loader for thin archive members; without it they are reported as unreadable.
    pub thin_loader: Option<&'a dyn ThinMemberLoader>,
    /// The file whose bytes are being inspected, for reading small headers without faulting
    /// in mapped pages. It must hold the same bytes as the slice given to [`inspect`].
    pub file: Option<&'a dyn ReadAt>,
    /// Where a compressed bundle whose zstd window does not fit in [`ccob::WINDOWS`] is decoded
    /// while its headers are read; without it, the window is held in memory.
    pub spill: Option<&'a dyn ccob::Spill>,
    /// Also search the executable sections (host machine code) of ELF and PE files for
    /// embedded GPU code. Off by default: no toolchain puts data there, and reading a large
    /// library's code costs more than the rest of listing it (librocsparse's 45 MB of `.text`).
    pub search_code: bool,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            metadata: false,
            decompress: false,
            check_hashes: true,
            max_decompressed: DEFAULT_MAX_DECOMPRESSED,
            thin_loader: None,
            file: None,
            spill: None,
            search_code: false,
        }
    }
}

/// A callback given every code object whose bytes are complete, with the inspection so far.
pub type Sink<'s> = &'s mut dyn FnMut(&Inspection, &CodeObject, &[u8]);

/// What the start of a buffer looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sniff {
    /// `!<arch>\n`
    Archive,
    /// `!<thin>\n`
    ThinArchive,
    /// An AMDGPU ELF code object.
    CodeObject,
    /// Any other ELF file.
    HostElf,
    /// A Windows PE image (`MZ` and the `PE` signature).
    Pe,
    /// `__CLANG_OFFLOAD_BUNDLE__`
    Bundle,
    /// `CCOB`
    Ccob,
    /// OffloadBinary magic.
    OffloadBinary,
}

/// Recognises a container by its first bytes; `None` for anything else.
pub fn sniff(data: &[u8]) -> Option<Sniff> {
    if data.starts_with(b"!<arch>\n") {
        Some(Sniff::Archive)
    } else if data.starts_with(b"!<thin>\n") {
        Some(Sniff::ThinArchive)
    } else if looks_like_code_object(data) {
        Some(Sniff::CodeObject)
    } else if elf::is_elf(data) {
        Some(Sniff::HostElf)
    } else if pe::is_pe(data) {
        Some(Sniff::Pe)
    } else if data.starts_with(bundle::MAGIC) {
        Some(Sniff::Bundle)
    } else if data.starts_with(ccob::MAGIC) {
        Some(Sniff::Ccob)
    } else if data.starts_with(offload_binary::MAGIC) {
        Some(Sniff::OffloadBinary)
    } else {
        None
    }
}

/// Inspects a whole file held in memory (usually an mmap).
pub fn inspect(data: &[u8], opts: &Options<'_>) -> Inspection {
    inspect_with(data, opts, None)
}

/// As [`inspect`], calling `sink` with the bytes of every complete entry.
pub fn inspect_with(data: &[u8], opts: &Options<'_>, sink: Option<Sink<'_>>) -> Inspection {
    let mut w = Walker::new(opts, sink);
    if let Err(e) = w.any(data, FILE_START) {
        w.diag_err(None, Some(0), e);
    }
    w.finish()
}

/// Bytes of a file's start that [`inspect_head`] needs to decide (or the whole file when it is
/// shorter): every magic [`sniff`] checks, and a code object's ELF header, lie within them.
pub const HEAD_LEN: usize = 4096;

/// What [`inspect`] would find in a file of `size` bytes that starts with `head` (its first
/// [`HEAD_LEN`] bytes, or all of it when shorter), when the head alone decides it: a file that
/// holds no container (nothing), or an AMDGPU code object whose ELF header names its processor
/// (one entry, read from the header alone). `None` when more of the file is needed: any
/// container, a code object whose processor is in a note (code object v2), or kernel metadata
/// wanted (`opts.metadata`). Nothing is given to a sink: the entry's bytes are not all read.
pub fn inspect_head(head: &[u8], size: u64, opts: &Options<'_>) -> Option<Inspection> {
    if opts.metadata || (head.len() < HEAD_LEN && head.len() as u64 != size) {
        return None;
    }
    match sniff(head) {
        None => Some(Inspection::default()),
        Some(Sniff::CodeObject) => {
            // A header that does not parse is reported by the full walk; mach 0 needs the
            // note in the rest of the file.
            let h = CodeObjectHeader::parse(head).ok()?;
            if h.mach == 0 {
                return None;
            }
            let opts = Options {
                file: None,
                ..*opts
            };
            let mut w = Walker::new(&opts, None);
            w.depth = 1;
            w.entry(
                FILE_START,
                None,
                None,
                EntryBytes {
                    data: head,
                    complete: false,
                },
                size,
                0,
            );
            Some(w.finish())
        }
        Some(_) => None,
    }
}

/// The place of a whole file's bytes.
const FILE_START: Place = Place {
    parent: None,
    file_base: Some(0),
    compressed: false,
};

impl<'o, 's> Walker<'o, 's> {
    fn new(opts: &'o Options<'o>, sink: Option<Sink<'s>>) -> Self {
        Walker {
            opts,
            out: Inspection::default(),
            sink,
            nested_seen: HashSet::new(),
            exhausted: false,
            starts_read: std::cell::RefCell::new(HashMap::new()),
            heads_read: std::cell::RefCell::new(HashMap::new()),
            depth: 0,
            unclassified: 0,
        }
    }

    /// The inspection, with the count of census hits not reported one by one.
    fn finish(self) -> Inspection {
        let mut w = self;
        if w.unclassified > MAX_UNCLASSIFIED {
            let more = w.unclassified - MAX_UNCLASSIFIED;
            w.out.diagnostics.push(Diagnostic {
            severity: ReadCode::UnclassifiedGpuCode.severity(),
            code: ReadCode::UnclassifiedGpuCode,
            container: None,
            offset: None,
            offset_in_file: false,
            message: format!("{more} more places whose bytes look like GPU code headers but do not parse (not listed one by one)"),
        });
        }
        w.out
    }
}

/// Where a buffer sits: its container, its offset in the file (when it is file bytes) and
/// whether it came out of a compressed bundle.
#[derive(Clone, Copy)]
pub(crate) struct Place {
    parent: Option<usize>,
    file_base: Option<u64>,
    compressed: bool,
}

impl Place {
    /// The same parent, `offset` bytes further into the data.
    fn shifted(self, offset: u64) -> Place {
        Place {
            file_base: self.file_base.and_then(|b| b.checked_add(offset)),
            ..self
        }
    }

    fn at(self, parent: usize, offset: u64) -> Place {
        Place {
            parent: Some(parent),
            file_base: self.file_base.and_then(|b| b.checked_add(offset)),
            compressed: self.compressed,
        }
    }
}

pub(crate) struct Walker<'o, 's> {
    opts: &'o Options<'o>,
    /// Census hits that did not parse, in the whole file.
    unclassified: usize,
    out: Inspection,
    sink: Option<Sink<'s>>,
    depth: u32,
    /// Byte ranges (address, length) already read as nested containers: an entry that covers
    /// its own bundle (or one already read) is not read again, so hostile self-references
    /// cannot multiply the work.
    nested_seen: HashSet<(usize, usize)>,
    /// Set once MAX_ITEMS containers and entries were recorded; the walk then stops.
    exhausted: bool,
    /// The first bytes of each bundle start read so far (file offset -> bytes): the magic check
    /// when resolving a wrapper, the dispatch and the header parse then share one pread.
    starts_read: std::cell::RefCell<HashMap<u64, Vec<u8>>>,
    /// Code object headers read ahead in one batch (file offset -> bytes), for `peek`.
    heads_read: std::cell::RefCell<HashMap<u64, Vec<u8>>>,
}

/// Decodes the start of a compressed bundle, 16 KiB at a time through `read`, until its whole
/// table is in hand (at most `limit` bytes). Returns the bytes decoded (the table, and what
/// follows it in the last chunk) and the table's length.
fn read_bundle_table(
    limit: u64,
    mut read: impl FnMut(&mut [u8]) -> Result<usize, FormatError>,
) -> Result<(Vec<u8>, u64), FormatError> {
    let mut prefix = Vec::new();
    let mut scan = bundle::HeaderScan::default();
    loop {
        if let Some(n) = scan.advance(&prefix)? {
            return Ok((prefix, n));
        }
        if prefix.len() as u64 >= limit {
            return Err(FormatError::new(
                Kind::Ccob,
                0,
                format!("no complete bundle header in the first {limit} decompressed bytes"),
            ));
        }
        let have = prefix.len();
        prefix.resize(have + (16 << 10), 0);
        let n = read(prefix.get_mut(have..).unwrap_or_default())?;
        prefix.truncate(have + n);
        if n == 0 {
            return Err(FormatError::new(
                Kind::Ccob,
                0,
                format!("compressed data ends after {have} bytes, inside the bundle header"),
            ));
        }
    }
}

/// The decoder of a CCOB's payload: read with `pread` through [`Options::file`] when the CCOB
/// lies in the file's bytes (`at`), else from `data`. `budgeted`, its window is counted in
/// [`ccob::WINDOWS`] and decoded into [`Options::spill`] when the budget cannot hold it.
fn open_ccob<'x>(
    opts: &Options<'x>,
    h: &CcobHeader,
    data: &'x [u8],
    at: Option<u64>,
    budgeted: bool,
) -> Result<ccob::Stream<'x>, FormatError> {
    let (spill, budget) = if budgeted {
        (opts.spill, Some(&ccob::WINDOWS))
    } else {
        (None, None)
    };
    let payload = h.payload(data);
    match (opts.file, at) {
        (Some(file), Some(base)) => {
            let start = base + h.header_size;
            let range = ReadAtRange::new(file, start, payload.len() as u64);
            let reader: Box<dyn std::io::BufRead + 'x> =
                Box::new(std::io::BufReader::with_capacity(64 << 10, range));
            ccob::Stream::spilling(h.method, reader, h.uncompressed_size, spill, budget)
        }
        _ => ccob::Stream::spilling(h.method, payload, h.uncompressed_size, spill, budget),
    }
}

/// A CCOB's output read in order, with [`ccob::decompress`]'s error for output of another size
/// than declared.
struct Decoded<'x> {
    stream: ccob::Stream<'x>,
    /// The declared uncompressed size.
    limit: u64,
}

impl Decoded<'_> {
    /// Reads up to `buf.len()` bytes; fewer only where the stream ends.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, FormatError> {
        self.stream.read_full(buf).map_err(|e| self.sized(e))
    }

    /// Reads the output up to position `to`.
    fn skip_to(&mut self, to: u64) -> Result<(), FormatError> {
        match self.stream.skip_until(to) {
            Ok(true) => Ok(()),
            Ok(false) => Err(self.size_error()),
            Err(e) => Err(self.sized(e)),
        }
    }

    /// Appends the next `len - buf.len()` bytes of output to `buf`.
    fn read_into(&mut self, buf: &mut Vec<u8>, len: u64) -> Result<(), FormatError> {
        match self.stream.read_append(buf, len) {
            Ok(true) => Ok(()),
            Ok(false) => Err(self.size_error()),
            Err(e) => Err(self.sized(e)),
        }
    }

    /// `e`, or the size error when the output went past the declared size, however the decoder
    /// noticed it.
    fn sized(&self, e: FormatError) -> FormatError {
        if self.stream.position() > self.limit {
            self.size_error()
        } else {
            e
        }
    }

    /// The error for output of another size than declared.
    fn size_error(&self) -> FormatError {
        ccob::size_mismatch(self.stream.position(), self.limit)
    }
}

/// The error for an entry of a bundle decoded into a temporary file ([`ccob::Spill`]) when the
/// file failed under the walk: its bytes from the failure on read as zeros.
fn spill_failed(stream: &ccob::Stream<'_>, index: usize) -> FormatError {
    let at = stream
        .spill_fault()
        .map_or_else(String::new, |at| format!(" at {at} bytes"));
    FormatError::new(
        Kind::Ccob,
        0,
        format!(
            "the temporary file holding the decoded bundle failed{at} while entry {index} was \
             read from it (an I/O error in $TMPDIR?)"
        ),
    )
}

/// Bytes of one entry: all of them, or only a prefix (decoded from a compressed stream).
struct EntryBytes<'d> {
    data: &'d [u8],
    complete: bool,
}

impl Walker<'_, '_> {
    fn container(
        &mut self,
        parent: Option<usize>,
        kind: ContainerKind,
        offset: u64,
        file_offset: Option<u64>,
        size: Option<u64>,
    ) -> usize {
        let id = self.out.containers.len();
        self.out.containers.push(Container {
            id,
            parent,
            kind,
            file_offset,
            offset,
            size,
        });
        id
    }

    /// Up to `len` bytes at `offset` of `data`, which starts at file offset `base` when it is
    /// the file's own bytes: read with pread when the file is at hand, else from `data`.
    fn peek<'d>(&self, data: &'d [u8], base: Option<u64>, offset: u64, len: u64) -> Cow<'d, [u8]> {
        let slice = Bytes::new(data).read_at_most(offset, len);
        if let (Some(file), Some(at)) = (self.opts.file, base.and_then(|b| b.checked_add(offset))) {
            let mut heads = self.heads_read.borrow_mut();
            if heads.get(&at).is_some_and(|h| h.len() == slice.len()) {
                // Each header read ahead is asked for once: hand it over.
                if let Some(hit) = heads.remove(&at) {
                    return Cow::Owned(hit);
                }
            }
            drop(heads);
            let mut buf = vec![0u8; slice.len()];
            if read_exact_at(file, at, &mut buf) {
                return Cow::Owned(buf);
            }
        }
        Cow::Borrowed(slice)
    }

    /// The first [`START_READ`] bytes at a possible bundle start (fewer where `data` ends),
    /// read once per offset.
    fn peek_start<'d>(&self, data: &'d [u8], base: Option<u64>, offset: u64) -> Cow<'d, [u8]> {
        let Some(at) = base.and_then(|b| b.checked_add(offset)) else {
            return self.peek(data, base, offset, START_READ);
        };
        if let Some(hit) = self.starts_read.borrow().get(&at) {
            return Cow::Owned(hit.clone());
        }
        let head = self.peek(data, base, offset, START_READ);
        let mut cache = self.starts_read.borrow_mut();
        // Bounded: a hostile wrapper table cannot grow it past a few MiB.
        if cache.len() < 4096 {
            cache.insert(at, head.to_vec());
        }
        head
    }

    /// Whether a bundle or CCOB magic is at `offset` of `data`.
    fn bundle_magic_at(&self, data: &[u8], base: Option<u64>, offset: u64) -> bool {
        let head = self.peek_start(data, base, offset);
        head.starts_with(bundle::MAGIC) || head.starts_with(ccob::MAGIC)
    }

    /// Whether the walk has recorded as many items as one file may yield (reported once).
    fn over_budget(&mut self) -> bool {
        if !self.exhausted && self.out.containers.len() + self.out.code_objects.len() >= MAX_ITEMS {
            self.exhausted = true;
            self.out.diagnostics.push(Diagnostic {
                severity: ReadCode::TooManyItems.severity(),
                code: ReadCode::TooManyItems,
                container: None,
                offset: None,
                offset_in_file: false,
                message: format!("more than {MAX_ITEMS} containers and entries in one file; the rest was not read"),
            });
        }
        self.exhausted
    }

    fn diag(
        &mut self,
        code: ReadCode,
        container: Option<usize>,
        base: Option<u64>,
        offset: u64,
        message: String,
    ) {
        let (offset, offset_in_file) = match base.and_then(|b| b.checked_add(offset)) {
            Some(o) => (o, true),
            None => (offset, false),
        };
        self.out.diagnostics.push(Diagnostic {
            severity: code.severity(),
            code,
            container,
            offset: Some(offset),
            offset_in_file,
            message,
        });
    }

    fn diag_err(&mut self, container: Option<usize>, base: Option<u64>, e: FormatError) {
        let code = match e.kind {
            Kind::Bundle => ReadCode::MalformedBundle,
            Kind::Ccob => ReadCode::MalformedCcob,
            Kind::OffloadBinary => ReadCode::MalformedOffloadBinary,
            Kind::Elf => ReadCode::MalformedElf,
            Kind::Pe => ReadCode::MalformedPe,
            Kind::Archive => ReadCode::MalformedArchive,
            Kind::CodeObject => ReadCode::MalformedCodeObject,
        };
        self.diag(
            code,
            container,
            base,
            e.offset,
            format!("{}: {}", e.kind, e.message),
        );
    }

    /// Dispatches on the magic. Returns whether the buffer was a container at all.
    fn any(&mut self, data: &[u8], place: Place) -> Result<bool, FormatError> {
        if self.over_budget() {
            return Ok(false);
        }
        if self.depth >= MAX_DEPTH {
            return Err(FormatError::new(
                Kind::Bundle,
                0,
                format!("containers nested more than {MAX_DEPTH} deep"),
            ));
        }
        self.depth += 1;
        let r = match sniff(data) {
            None => Ok(false),
            Some(Sniff::Archive) => self.archive(data, place, false).map(|()| true),
            Some(Sniff::ThinArchive) => self.archive(data, place, true).map(|()| true),
            Some(Sniff::CodeObject) => {
                self.entry(
                    place,
                    None,
                    None,
                    EntryBytes {
                        data,
                        complete: true,
                    },
                    data.len() as u64,
                    0,
                );
                Ok(true)
            }
            // HIP host code is 64-bit little-endian; other ELF files (lib32, foreign
            // architectures) cannot carry .hip_fatbin wrappers we could follow.
            Some(Sniff::HostElf) if !elf::is_elf64_le(data) => Ok(false),
            Some(Sniff::HostElf) => self.host_elf(data, place).map(|()| true),
            Some(Sniff::Pe) => self.host_pe(data, place).map(|()| true),
            // A bundle file may hold several bundles or CCOBs back to back.
            Some(Sniff::Bundle | Sniff::Ccob) => {
                self.walk_sequentially(data, place);
                Ok(true)
            }
            Some(Sniff::OffloadBinary) => {
                self.offloading(data, place);
                Ok(true)
            }
        };
        self.depth -= 1;
        r
    }

    // ----- archives -------------------------------------------------------------------------

    fn archive(&mut self, data: &[u8], place: Place, thin: bool) -> Result<(), FormatError> {
        let id = self.container(
            place.parent,
            ContainerKind::Archive { thin },
            0,
            place.file_base,
            Some(data.len() as u64),
        );
        let mut members = 0usize;
        for member in crate::archive::members(data)? {
            members += 1;
            let member = match member {
                Ok(m) => m,
                Err(e) => {
                    self.diag(
                        ReadCode::MalformedArchive,
                        Some(id),
                        place.file_base,
                        e.offset,
                        format!(
                            "archive: {}; members after this point were not read",
                            e.message
                        ),
                    );
                    break;
                }
            };
            let (offset, size) = (member.offset, member.size);
            let name = member.name.clone();
            if member.thin {
                let mid = self.container(
                    Some(id),
                    ContainerKind::Member { name: name.clone() },
                    offset,
                    None,
                    Some(size),
                );
                let mplace = Place {
                    parent: Some(mid),
                    file_base: None,
                    compressed: place.compressed,
                };
                let Some(loader) = self.opts.thin_loader else {
                    self.diag(
                        ReadCode::ThinMemberUnread,
                        Some(mid),
                        None,
                        0,
                        format!("thin archive member {name} names another file; it was not read"),
                    );
                    continue;
                };
                let mut result = Ok(false);
                let loaded =
                    loader.with_member(&name, &mut |bytes| result = self.any(bytes, mplace));
                match (loaded, result) {
                    (Err(msg), _) => self.diag(
                        ReadCode::ThinMemberUnreadable,
                        Some(mid),
                        None,
                        0,
                        format!("thin archive member {name}: {msg}"),
                    ),
                    (Ok(()), Err(e)) => self.diag_err(Some(mid), None, e),
                    (Ok(()), Ok(_)) => {}
                }
                continue;
            }
            if !member.complete(data.len() as u64) {
                self.diag(
                    ReadCode::MalformedArchive,
                    Some(id),
                    place.file_base,
                    offset,
                    format!("member {name} runs past the end of the archive"),
                );
                continue;
            }
            let bytes = member.data(data);
            if sniff(bytes).is_none() {
                continue;
            }
            let mid = self.container(
                Some(id),
                ContainerKind::Member { name },
                offset,
                place.file_base.and_then(|b| b.checked_add(offset)),
                Some(size),
            );
            let mplace = place.at(mid, offset);
            if let Err(e) = self.any(
                bytes,
                Place {
                    parent: Some(mid),
                    ..mplace
                },
            ) {
                self.diag_err(Some(mid), mplace.file_base, e);
            }
        }
        if members == 0 && data.len() > 8 {
            // object reads an archive cut inside its symbol table as an empty archive.
            self.diag(
                ReadCode::MalformedArchive,
                Some(id),
                place.file_base,
                8,
                format!(
                    "archive: no member could be read from its {} bytes (truncated?)",
                    data.len()
                ),
            );
        }
        Ok(())
    }

    // ----- host ELF -------------------------------------------------------------------------

    fn host_elf(&mut self, data: &[u8], place: Place) -> Result<(), FormatError> {
        let elf = Elf::parse(data)?;
        for seg in &elf.truncated_segments {
            self.diag(
                ReadCode::TruncatedFile,
                place.parent,
                place.file_base,
                seg.offset,
                format!(
                    "a PT_LOAD segment ({} bytes at offset {:#x}) runs past the end of the {}-byte file: the file is truncated",
                    seg.filesz,
                    seg.offset,
                    data.len()
                ),
            );
        }
        let id = self.container(
            place.parent,
            ContainerKind::HostElf {
                e_type: elf.e_type,
                e_machine: elf.e_machine,
                section_headers: !elf.sections.is_empty(),
            },
            0,
            place.file_base,
            Some(data.len() as u64),
        );
        let place = Place {
            parent: Some(id),
            ..place
        };
        let fatbin = elf.section(b".hip_fatbin").cloned();
        let wrappers = elf.section(b".hipFatBinSegment").cloned();
        match (fatbin, elf.sections.is_empty()) {
            (Some(fb), _) => {
                if let Err(e) = self.fatbin_section(&elf, &fb, wrappers.as_ref(), place) {
                    self.diag_err(Some(id), place.file_base, e);
                }
            }
            // Section headers stripped (or a .hip_fatbin without its name): find the wrappers
            // in the writable segments and follow them.
            (None, true) => self.fatbin_from_segments(&elf, place),
            (None, false) if wrappers.is_some() => self.fatbin_from_segments(&elf, place),
            (None, false) => {}
        }
        self.rdc_sections(&elf, place);
        for s in elf
            .sections
            .iter()
            .filter(|s| s.sh_type == elf::SHT_LLVM_OFFLOADING || s.name == b".llvm.offloading")
        {
            match elf.section_data(s) {
                Ok(bytes) => {
                    let sid = self.container(
                        Some(id),
                        ContainerKind::Section {
                            name: lossless_string(s.name),
                        },
                        s.offset,
                        place.file_base.and_then(|b| b.checked_add(s.offset)),
                        Some(s.size),
                    );
                    self.offloading(bytes, place.at(sid, s.offset));
                }
                Err(e) => self.diag_err(Some(id), place.file_base, e),
            }
        }
        self.embedded_elf(&elf, id, place);
        Ok(())
    }

    // ----- host PE (Windows) ------------------------------------------------------------------

    /// A Windows image: its fat binary section read through the wrappers, as for ELF (see
    /// `pe.rs` for what clang and the linkers put there).
    fn host_pe(&mut self, data: &[u8], place: Place) -> Result<(), FormatError> {
        let image = Pe::parse(data)?;
        let id = self.container(
            place.parent,
            ContainerKind::HostPe {
                machine: image.machine,
                pe32_plus: image.pe32_plus,
                dll: image.dll,
            },
            0,
            place.file_base,
            Some(data.len() as u64),
        );
        let place = Place {
            parent: Some(id),
            ..place
        };
        for s in image.truncated_sections() {
            self.diag(
                ReadCode::TruncatedFile,
                Some(id),
                place.file_base,
                s.file_offset,
                format!(
                    "section {} ({} bytes at offset {:#x}) runs past the end of the {}-byte file: the file is truncated",
                    s.name,
                    s.file_size,
                    s.file_offset,
                    data.len()
                ),
            );
        }
        let fatbin = image.section_named(&pe::FATBIN_NAMES);
        let wrappers = image
            .section_named(&pe::WRAPPER_NAMES)
            .map(|ws| (ws.clone(), image.wrappers(ws)));
        if let Some((ws, w)) = &wrappers {
            if let Some(len) = w.ragged {
                self.diag(
                    ReadCode::WrapperTableSize,
                    Some(id),
                    place.file_base,
                    ws.file_offset,
                    format!(
                        "{} is {len} bytes, not a multiple of {}",
                        ws.name, w.record_size
                    ),
                );
            }
            for &(at, i) in &w.bad {
                self.diag(
                    ReadCode::BadWrapper,
                    Some(id),
                    place.file_base,
                    at,
                    format!(
                        "wrapper #{i} in {} lacks the HIPF magic and version 1; skipped",
                        ws.name
                    ),
                );
            }
            if let Some(e) = &w.reloc_error {
                self.diag_err(Some(id), place.file_base, e.clone());
            }
        }
        let records = wrappers.as_ref().map_or(&[][..], |(_, w)| &w.records[..]);
        let unresolved = |r: &pe::Wrapper, fatbin: &str| match &r.target {
            Ok((rva, _)) => format!(
                "wrapper #{} points to RVA {rva:#x}, outside {fatbin}",
                r.index
            ),
            Err(why) => format!("wrapper #{}: {why}", r.index),
        };
        if let Some(fb) = fatbin {
            let (bytes, _) = image.section_data(fb);
            let sid = self.container(
                Some(id),
                ContainerKind::Section {
                    name: fb.name.clone(),
                },
                fb.file_offset,
                place.file_base.and_then(|b| b.checked_add(fb.file_offset)),
                Some(fb.file_size),
            );
            let mut starts = BTreeSet::new();
            for r in records {
                match &r.target {
                    Ok((rva, _)) if fb.contains_rva(*rva) => {
                        starts.insert(rva - u64::from(fb.rva));
                    }
                    _ => self.diag(
                        ReadCode::WrapperOutsideFatbin,
                        Some(sid),
                        place.file_base,
                        r.file_offset,
                        unresolved(r, &fb.name),
                    ),
                }
            }
            let splace = place.at(sid, fb.file_offset);
            self.read_fatbin(bytes, &starts, !records.is_empty(), &fb.name, splace);
        } else {
            // No section by the fat binary's name (merged into another by the linker): read the
            // bundles where the wrappers point, section by section.
            let mut by_section: BTreeMap<usize, BTreeSet<u64>> = BTreeMap::new();
            for r in records {
                let hit = r.target.as_ref().ok().and_then(|&(rva, _)| {
                    let s = image.section_containing(rva)?;
                    Some((s.index, rva - u64::from(s.rva)))
                });
                match hit {
                    Some((index, off)) => {
                        by_section.entry(index).or_default().insert(off);
                    }
                    None => self.diag(
                        ReadCode::WrapperOutsideFatbin,
                        Some(id),
                        place.file_base,
                        r.file_offset,
                        unresolved(r, "every section"),
                    ),
                }
            }
            let via = wrappers.as_ref().map_or("", |(ws, _)| ws.name.as_str());
            for (index, starts) in by_section {
                let Some(s) = image.sections.get(index) else {
                    continue;
                };
                let (bytes, _) = image.section_data(s);
                let sid = self.container(
                    Some(id),
                    ContainerKind::Section {
                        name: format!("{} (found through {via})", s.name),
                    },
                    s.file_offset,
                    place.file_base.and_then(|b| b.checked_add(s.file_offset)),
                    Some(s.file_size),
                );
                self.bundles_at(bytes, &starts, place.at(sid, s.file_offset), false);
            }
        }
        // Code embedded anywhere else, named by the export that starts where it does.
        let read = self.read_ranges(id);
        let mut symbols = crate::pe::PeExports::new(&image);
        self.embedded(
            &image.embedded_ranges(self.opts.search_code),
            &read,
            &mut symbols,
            id,
            place,
        );
        Ok(())
    }

    /// Searches every other part of a host ELF file for embedded GPU code: the sections with
    /// file bytes that are not fat binary sections, or without section headers the PT_LOAD
    /// segments; ranges already read as containers are skipped.
    fn embedded_elf(&mut self, elf: &Elf<'_>, elf_id: usize, place: Place) {
        let mut ranges: Vec<ScanRange<'_>> = Vec::new();
        if elf.sections.is_empty() {
            for (i, (start, end)) in merged_ranges(
                &elf.segments
                    .iter()
                    .filter(|p| {
                        p.p_type == elf::PT_LOAD
                            && (self.opts.search_code || p.flags & elf::PF_X == 0)
                    })
                    .copied()
                    .collect::<Vec<_>>(),
            )
            .into_iter()
            .enumerate()
            {
                let data = elf.data.read_at_most(start, end - start);
                ranges.push(ScanRange {
                    name: "PT_LOAD".into(),
                    index: i,
                    file_offset: start,
                    vaddr: elf
                        .load_segment_at_offset(start)
                        .map(|p| p.vaddr.wrapping_add(start.saturating_sub(p.offset))),
                    data,
                });
            }
        } else {
            for s in &elf.sections {
                if s.index == 0
                    || s.size == 0
                    || s.sh_type == elf::SHT_LLVM_OFFLOADING
                    || s.name == b".hip_fatbin"
                    || s.name == b".llvm.offloading"
                    || s.name.starts_with(b"__CLANG_OFFLOAD_BUNDLE__")
                    || toolchain_section(s, self.opts.search_code)
                {
                    continue;
                }
                // A section outside the file is reported where it matters; here it is skipped.
                let Ok(data) = elf.section_data(s) else {
                    continue;
                };
                ranges.push(ScanRange {
                    name: lossless_string(s.name),
                    index: s.index,
                    file_offset: s.offset,
                    vaddr: (elf.e_type != elf::ET_REL && s.flags & SHF_ALLOC != 0)
                        .then_some(s.addr),
                    data,
                });
            }
            // Linkers never overlap sections with bytes, but a hostile file may: search each
            // byte once.
            ranges.sort_by_key(|r| r.file_offset);
            let mut end = 0u64;
            for r in &mut ranges {
                if r.file_offset < end {
                    let cut = end - r.file_offset;
                    r.data = Bytes::new(r.data).tail(cut).unwrap_or_default();
                    r.file_offset = end;
                    r.vaddr = r.vaddr.map(|v| v.wrapping_add(cut));
                }
                end = end.max(r.file_offset.saturating_add(r.data.len() as u64));
            }
            ranges.retain(|r| !r.data.is_empty());
        }
        let read = self.read_ranges(elf_id);
        let mut symbols: Box<dyn SymbolLookup + '_> = match ElfSymbols::new(elf) {
            Some(s) => Box::new(s),
            None => Box::new(NoSymbols),
        };
        self.embedded(&ranges, &read, symbols.as_mut(), elf_id, place);
    }

    /// The file ranges read so far as containers and entries below the host file `host_id`:
    /// the embedded search skips them, so nothing is counted twice.
    fn read_ranges(&self, host_id: usize) -> Vec<(u64, u64)> {
        let mut read: Vec<(u64, u64)> = Vec::new();
        for c in self.out.containers.iter().skip(host_id + 1) {
            if let (Some(at), Some(size), false) = (
                c.file_offset,
                c.size,
                matches!(
                    c.kind,
                    ContainerKind::HostElf { .. }
                        | ContainerKind::HostPe { .. }
                        | ContainerKind::Archive { .. }
                        | ContainerKind::Member { .. }
                ),
            ) {
                read.push((at, at.saturating_add(size)));
            }
        }
        for co in &self.out.code_objects {
            if let (Some(at), true) = (co.file_offset, co.container.is_some_and(|c| c > host_id)) {
                read.push((at, at.saturating_add(co.size)));
            }
        }
        read
    }

    /// Searches `ranges` (offsets relative to `place`'s data) for embedded bundles, CCOBs and
    /// code objects, skipping the `read` file ranges (absolute), and records each one that
    /// parses under an [`ContainerKind::Embedded`] child of `parent`. Used for ELF and PE.
    pub(crate) fn embedded(
        &mut self,
        ranges: &[ScanRange<'_>],
        read: &[(u64, u64)],
        symbols: &mut dyn SymbolLookup,
        parent: usize,
        place: Place,
    ) {
        let file = self.opts.file;
        for r in ranges {
            let base = place.file_base.and_then(|b| b.checked_add(r.file_offset));
            embedded::for_each_hit(r.data, base, file, &mut |kind, off, _head| {
                if self.over_budget() {
                    return u64::MAX;
                }
                let abs = base.and_then(|b| b.checked_add(off));
                if let Some(end) = abs.and_then(|a| {
                    read.iter()
                        .filter(|(s, e)| (*s..*e).contains(&a))
                        .map(|(_, e)| *e)
                        .max()
                }) {
                    return off.saturating_add(end - abs.unwrap_or(end));
                }
                let slice = Bytes::new(r.data).tail(off).unwrap_or_default();
                match self.embedded_valid(kind, slice, abs) {
                    Ok(extent) => {
                        let symbol = symbols.covering(r, off);
                        self.embedded_record(
                            kind,
                            slice,
                            extent,
                            r,
                            off,
                            symbol,
                            symbols.table(),
                            parent,
                            place,
                        );
                        off.saturating_add(extent.max(1))
                    }
                    Err(why) => {
                        self.unclassified += 1;
                        if self.unclassified <= MAX_UNCLASSIFIED {
                            self.diag(
                                ReadCode::UnclassifiedGpuCode,
                                Some(parent),
                                place.file_base,
                                r.file_offset.saturating_add(off),
                                format!("{}: bytes that start like the header of {} but do not parse: {why}", r.name, kind.name()),
                            );
                        }
                        off.saturating_add(1)
                    }
                }
            });
        }
    }

    /// The size of the container at the start of `slice` (at file offset `abs`), when it
    /// parses.
    fn embedded_valid(&self, kind: Magic, slice: &[u8], abs: Option<u64>) -> Result<u64, String> {
        match kind {
            Magic::Bundle => {
                let h = self.bundle_header(slice, abs).map_err(|e| e.to_string())?;
                if h.entries.is_empty() {
                    return Err("a bundle without entries".into());
                }
                Ok(h.end())
            }
            Magic::Ccob => {
                let h = CcobHeader::parse(slice).map_err(|e| e.to_string())?;
                let mut stream = ccob::Stream::new(
                    h.method,
                    h.payload(slice),
                    h.uncompressed_size.min(self.opts.max_decompressed),
                )
                .map_err(|e| e.to_string())?;
                let first = stream
                    .read_vec(bundle::MAGIC.len() as u64)
                    .map_err(|e| e.to_string())?;
                if !first.starts_with(bundle::MAGIC) {
                    return Err("its payload does not decompress to an offload bundle".into());
                }
                match h.total_size {
                    Some(n) => Ok(n),
                    None => ccob::v1_payload_len(&h, slice, self.opts.max_decompressed)
                        .and_then(|n| n.checked_add(h.header_size))
                        .ok_or_else(|| "the compressed stream does not end in the data".into()),
                }
            }
            Magic::CodeObject => {
                let read = |o: u64, l: u64| self.peek(slice, abs, o, l);
                embedded::code_object_extent(&read, slice.len() as u64)
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn embedded_record(
        &mut self,
        kind: Magic,
        slice: &[u8],
        extent: u64,
        r: &ScanRange<'_>,
        off: u64,
        symbol: Option<String>,
        table: Option<&str>,
        parent: usize,
        place: Place,
    ) {
        let at = r.file_offset.saturating_add(off);
        let eid = self.container(
            Some(parent),
            ContainerKind::Embedded {
                section: r.name.clone(),
                symbol,
                symbol_table: table.map(str::to_owned),
                vaddr: r.vaddr.and_then(|v| v.checked_add(off)),
            },
            at,
            place.file_base.and_then(|b| b.checked_add(at)),
            Some(extent),
        );
        let eplace = place.at(eid, at);
        let result = match kind {
            Magic::Bundle => self.bundle(slice, eplace, None).map(|_| ()),
            Magic::Ccob => self.ccob(slice, eplace, None).map(|_| ()),
            Magic::CodeObject => {
                let data = Bytes::new(slice).read_at_most(0, extent);
                self.entry(
                    eplace,
                    None,
                    None,
                    EntryBytes {
                        data,
                        complete: true,
                    },
                    extent,
                    0,
                );
                Ok(())
            }
        };
        if let Err(e) = result {
            self.diag_err(Some(eid), eplace.file_base, e);
        }
    }

    /// Resolves the pointer in wrapper field at virtual address `field_vaddr` (in-place value
    /// `in_place`), the way the dynamic loader would.
    fn resolve_pointer(
        elf: &Elf<'_>,
        relocs: &mut DynRelocs<'_>,
        field_vaddr: u64,
        in_place: u64,
        accept: &dyn Fn(u64) -> bool,
    ) -> Option<(u64, &'static str)> {
        // GNU ld also writes the addend of R_*_RELATIVE in place, and RELR stores it there: if
        // the in-place value already lands on a bundle, the relocation table need not be read.
        if in_place != 0 && accept(in_place) {
            return Some((in_place, "in-place"));
        }
        let (rela_at, relr) = relocs.get(elf);
        if let Some(rela) = rela_at.get(&field_vaddr) {
            return match elf::reloc_kind(elf.e_machine, rela.r_type)? {
                RelocKind::Relative => Some((rela.addend as u64, "rela-relative")),
                RelocKind::Absolute => {
                    let sym = elf.dynamic_symbol(rela.sym)?;
                    (sym.shndx != 0)
                        .then(|| (sym.value.wrapping_add(rela.addend as u64), "rela-symbol"))
                }
            };
        }
        (relr.contains(&field_vaddr) && in_place != 0).then_some((in_place, "relr"))
    }

    fn fatbin_section(
        &mut self,
        elf: &Elf<'_>,
        fb: &elf::Section<'_>,
        wrappers: Option<&elf::Section<'_>>,
        place: Place,
    ) -> Result<(), FormatError> {
        let data = elf.section_data(fb)?;
        let sid = self.container(
            place.parent,
            ContainerKind::Section {
                name: ".hip_fatbin".into(),
            },
            fb.offset,
            place.file_base.and_then(|b| b.checked_add(fb.offset)),
            Some(fb.size),
        );
        let splace = place.at(sid, fb.offset);

        let mut starts = BTreeSet::new();
        let mut had_wrappers = false;
        if let Some(ws) = wrappers {
            let wdata = Bytes::new(elf.section_data(ws)?);
            if wdata.len() % WRAPPER_SIZE != 0 {
                self.diag(
                    ReadCode::WrapperTableSize,
                    Some(sid),
                    place.file_base,
                    ws.offset,
                    format!(
                        ".hipFatBinSegment is {} bytes, not a multiple of {WRAPPER_SIZE}",
                        wdata.len()
                    ),
                );
            }
            let fields =
                (0..wdata.len() / WRAPPER_SIZE).map(|i| ws.addr.wrapping_add(i * WRAPPER_SIZE + 8));
            let mut relocs = DynRelocs::new(fields.collect(), self.opts.file.zip(place.file_base));
            let reloc_for_object =
                (elf.e_type == elf::ET_REL).then(|| object_relocs(elf, ws.index));
            for i in 0..wdata.len() / WRAPPER_SIZE {
                let at = i * WRAPPER_SIZE;
                let file_at = ws.offset.saturating_add(at);
                if !wdata.has_at(at, &WRAPPER_MAGIC) {
                    self.diag(ReadCode::BadWrapper, Some(sid), place.file_base, file_at, format!("wrapper #{i} in .hipFatBinSegment lacks the HIPF magic and version 1; skipped"));
                    continue;
                }
                had_wrappers = true;
                let in_place = wdata.u64(at + 8).unwrap_or(0);
                let target = match &reloc_for_object {
                    // A relocatable object: the pointer is a relocation against a symbol of .hip_fatbin.
                    Some(rel) => rel.get(&(at + 8)).and_then(|&(sym_table, sym, addend)| {
                        let s = elf.symbol(sym_table, sym)?;
                        (usize::from(s.shndx) == fb.index)
                            .then(|| fb.addr.wrapping_add(s.value).wrapping_add(addend as u64))
                    }),
                    None => {
                        let accept = |p: u64| {
                            p.checked_sub(fb.addr).is_some_and(|o| {
                                o < fb.size && self.bundle_magic_at(data, splace.file_base, o)
                            })
                        };
                        Self::resolve_pointer(
                            elf,
                            &mut relocs,
                            ws.addr.wrapping_add(at + 8),
                            in_place,
                            &accept,
                        )
                        .map(|(p, _)| p)
                    }
                };
                match target.and_then(|p| p.checked_sub(fb.addr).filter(|o| *o < fb.size)) {
                    Some(off) => {
                        starts.insert(off);
                    }
                    None => self.diag(
                        ReadCode::WrapperOutsideFatbin,
                        Some(sid),
                        place.file_base,
                        file_at,
                        match target {
                            Some(p) => format!("wrapper #{i} points to {p:#x}, outside .hip_fatbin [{:#x}, {:#x})", fb.addr, fb.addr.saturating_add(fb.size)),
                            None => format!("wrapper #{i}: its pointer could not be resolved (in-place value {in_place:#x}, no usable relocation)"),
                        },
                    ),
                }
            }
        }
        self.read_fatbin(data, &starts, had_wrappers, ".hip_fatbin", splace);
        Ok(())
    }

    /// Reads the fat binary section `data` from the bundles the wrappers point to, or bundle
    /// by bundle when no wrapper pointer could be used.
    fn read_fatbin(
        &mut self,
        data: &[u8],
        starts: &BTreeSet<u64>,
        had_wrappers: bool,
        name: &str,
        splace: Place,
    ) {
        if starts.is_empty() {
            if had_wrappers {
                self.diag(
                    ReadCode::SequentialWalk,
                    splace.parent,
                    splace.file_base,
                    0,
                    format!("no wrapper pointer could be used; walking {name} sequentially"),
                );
            }
            self.walk_sequentially(data, splace);
        } else {
            self.bundles_at(data, starts, splace, true);
        }
    }

    /// Reads the bundles starting at `starts` (offsets in `data`, which holds the fat binary
    /// region). When `probe` is set, looks at the 4096-aligned end of each bundle for a bundle
    /// no wrapper points to.
    fn bundles_at(&mut self, data: &[u8], starts: &BTreeSet<u64>, place: Place, probe: bool) {
        let b = Bytes::new(data);
        self.read_entry_heads(data, starts, place);
        // A deque: a hostile wrapper table gives one start per 24 bytes of the file, and taking
        // each from the front of a Vec would make the walk quadratic.
        let mut queue: VecDeque<u64> = starts.iter().copied().collect();
        let mut done = BTreeSet::new();
        let mut index = 0;
        while let Some(pos) = queue.pop_front() {
            if !done.insert(pos) {
                continue;
            }
            let limit = starts.range(pos + 1..).next().copied().unwrap_or(b.len());
            let slice = b
                .read_at(pos, limit.saturating_sub(pos))
                .unwrap_or_default();
            let end = self.bundle_or_ccob(slice, place, pos, index);
            index += 1;
            if let (true, Some(end)) = (probe, end) {
                let next = align_up(pos.saturating_add(end), 4096).unwrap_or(u64::MAX);
                if next < limit
                    && self.bundle_magic_at(data, place.file_base, next)
                    && !starts.contains(&next)
                {
                    self.diag(ReadCode::UnreferencedBundle, place.parent, place.file_base, next, "a bundle here is not referenced by any .hipFatBinSegment wrapper; read anyway".into());
                    queue.push_front(next);
                }
            }
        }
    }

    /// Reads the ELF header of every entry of the uncompressed bundles at `starts` in one batch
    /// ([`ReadAt::read_many`]), for [`Walker::entry`] to find in `heads_read`: exactly the
    /// bytes its `peek` would read one by one.
    fn read_entry_heads(&self, data: &[u8], starts: &BTreeSet<u64>, place: Place) {
        let (Some(file), Some(base)) = (self.opts.file, place.file_base) else {
            return;
        };
        let b = Bytes::new(data);
        let mut reads = Vec::new();
        for (n, &pos) in starts.iter().enumerate() {
            // Bounded like the cache of bundle starts: a hostile table cannot make it large.
            if n >= 4096 {
                break;
            }
            let limit = starts.range(pos + 1..).next().copied().unwrap_or(b.len());
            let slice = b
                .read_at(pos, limit.saturating_sub(pos))
                .unwrap_or_default();
            let bundle_base = base.checked_add(pos);
            let Ok(header) = self.bundle_header(slice, bundle_base) else {
                continue;
            };
            for e in &header.entries {
                let entry = Bytes::new(slice)
                    .read_at(e.offset, e.size)
                    .unwrap_or_default();
                let len = entry.len().min(64);
                if let Some(at) = bundle_base.and_then(|b| b.checked_add(e.offset)) {
                    if len > 0 && !self.heads_read.borrow().contains_key(&at) {
                        reads.push(Prefetch {
                            offset: at,
                            buf: vec![0; len],
                            filled: false,
                        });
                    }
                }
            }
        }
        reads.sort_unstable_by_key(|r| r.offset);
        reads.dedup_by_key(|r| r.offset);
        file.read_many(&mut reads);
        let mut heads = self.heads_read.borrow_mut();
        for r in reads.into_iter().filter(|r| r.filled) {
            heads.insert(r.offset, r.buf);
        }
    }

    /// Walks a fat binary region bundle by bundle, skipping zero padding.
    fn walk_sequentially(&mut self, data: &[u8], place: Place) {
        let b = Bytes::new(data);
        let mut pos = 0u64;
        let mut index = 0;
        loop {
            let rest = b.tail(pos).unwrap_or_default();
            let Some(skip) = rest.iter().position(|&c| c != 0) else {
                break;
            };
            pos += skip as u64;
            let slice = b.tail(pos).unwrap_or_default();
            if sniff(slice).is_none_or(|s| !matches!(s, Sniff::Bundle | Sniff::Ccob)) {
                self.diag(
                    ReadCode::FatbinGarbage,
                    place.parent,
                    place.file_base,
                    pos,
                    "bytes that are neither padding nor a bundle; the sequential walk stops here"
                        .into(),
                );
                break;
            }
            match self.bundle_or_ccob(slice, place, pos, index) {
                Some(end) if end > 0 => pos = pos.saturating_add(end),
                _ => break,
            }
            index += 1;
        }
    }

    /// Reads the bundle or CCOB at the start of `data` (at `offset` in the place's data);
    /// returns its size when known. Errors are reported here, with their offset in the place,
    /// and give `None` like an unknown size: either way a walk cannot go past it.
    fn bundle_or_ccob(
        &mut self,
        data: &[u8],
        place: Place,
        offset: u64,
        index: usize,
    ) -> Option<u64> {
        let head = self.peek_start(data, place.shifted(offset).file_base, 0);
        let result = if head.starts_with(ccob::MAGIC) {
            self.ccob(data, place.shifted(offset), Some(index))
        } else if head.starts_with(bundle::MAGIC) {
            self.bundle(data, place.shifted(offset), Some(index))
                .map(Some)
        } else {
            Err(FormatError::new(
                Kind::Bundle,
                0,
                "a wrapper points here, but there is no bundle or CCOB magic",
            ))
        };
        result.unwrap_or_else(|e| {
            let e = FormatError {
                offset: e.offset.saturating_add(offset),
                ..e
            };
            self.diag_err(place.parent, place.file_base, e);
            None
        })
    }

    fn fatbin_from_segments(&mut self, elf: &Elf<'_>, place: Place) {
        // Wrappers live in writable data, except in non-PIE executables, where nothing needs
        // relocating and the linker puts them in a read-only segment: look there second,
        // skipping segments so large that they must be the fat binary itself.
        let loads = elf
            .segments
            .iter()
            .filter(|p| p.p_type == elf::PT_LOAD && p.flags & elf::PF_X == 0);
        let writable: Vec<_> = loads
            .clone()
            .filter(|p| p.flags & elf::PF_W != 0)
            .copied()
            .collect();
        let read_only: Vec<_> = loads
            .filter(|p| p.flags & elf::PF_W == 0 && p.filesz <= READ_ONLY_SCAN_LIMIT)
            .copied()
            .collect();
        let mut starts: Vec<(u64, u64)> = Vec::new();
        for segs in [writable, read_only] {
            if !starts.is_empty() {
                break;
            }
            // (field vaddr, in-place value) of every 8-aligned wrapper magic, each file byte
            // scanned once however the segments overlap.
            let mut candidates = Vec::new();
            for (start, end) in merged_ranges(&segs) {
                let bytes = elf.data.read_at_most(start, end - start);
                let mut at = 0usize;
                while let Some(found) = bytes.get(at..).and_then(|r| find(r, &WRAPPER_MAGIC)) {
                    let pos = at + found;
                    at = pos + 8;
                    let file_pos = start + pos as u64;
                    let Some(seg) = segs
                        .iter()
                        .find(|p| file_pos >= p.offset && file_pos - p.offset < p.filesz)
                    else {
                        continue;
                    };
                    let field_vaddr = seg.vaddr.wrapping_add(file_pos - seg.offset + 8);
                    if field_vaddr % 8 == 0 {
                        candidates.push((
                            field_vaddr,
                            Bytes::new(bytes).u64(pos as u64 + 8).unwrap_or(0),
                        ));
                    }
                }
            }
            let mut relocs = DynRelocs::new(
                candidates.iter().map(|(f, _)| *f).collect(),
                self.opts.file.zip(place.file_base),
            );
            let accept = |p: u64| {
                elf.vaddr_to_offset(p)
                    .is_some_and(|o| self.bundle_magic_at(elf.data.as_slice(), place.file_base, o))
            };
            for (field_vaddr, in_place) in candidates {
                if let Some(off) =
                    Self::resolve_pointer(elf, &mut relocs, field_vaddr, in_place, &accept)
                        .and_then(|(p, _)| elf.vaddr_to_offset(p))
                        .filter(|&o| self.bundle_magic_at(elf.data.as_slice(), place.file_base, o))
                {
                    if let Some(seg) = elf.load_segment_at_offset(off) {
                        starts.push((off, seg.offset.saturating_add(seg.filesz)));
                    }
                }
            }
        }
        if starts.is_empty() {
            return;
        }
        // Treat the span from the first bundle to the end of its segment as the fat binary.
        starts.sort_unstable();
        starts.dedup();
        let (first, end) = starts.first().copied().unwrap_or_default();
        let region = elf.data.read_at_most(first, end.saturating_sub(first));
        let sid = self.container(
            place.parent,
            ContainerKind::Section {
                name: ".hip_fatbin (found through program headers)".into(),
            },
            first,
            place.file_base.and_then(|b| b.checked_add(first)),
            None,
        );
        let set: BTreeSet<u64> = starts
            .iter()
            .filter(|(o, _)| *o - first < region.len() as u64)
            .map(|(o, _)| o - first)
            .collect();
        self.bundles_at(region, &set, place.at(sid, first), false);
    }

    fn rdc_sections(&mut self, elf: &Elf<'_>, place: Place) {
        const PREFIX: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
        let sections: Vec<_> = elf
            .sections
            .iter()
            .filter(|s| s.name.starts_with(PREFIX))
            .collect();
        if sections.is_empty() {
            return;
        }
        let cid = self.container(place.parent, ContainerKind::OffloadSections, 0, None, None);
        for (index, s) in sections.into_iter().enumerate() {
            let id = EntryId::from_string(lossless_string(
                s.name.get(PREFIX.len()..).unwrap_or_default(),
            ));
            match elf.section_data(s) {
                Ok(bytes) => {
                    let eplace = Place {
                        parent: Some(cid),
                        file_base: place.file_base,
                        compressed: place.compressed,
                    };
                    self.entry(
                        eplace,
                        Some(index),
                        Some(id),
                        EntryBytes {
                            data: bytes,
                            complete: true,
                        },
                        s.size,
                        s.offset,
                    );
                }
                Err(e) => self.diag_err(Some(cid), place.file_base, e),
            }
        }
    }

    // ----- bundles ----------------------------------------------------------------------------

    fn bundle(
        &mut self,
        data: &[u8],
        place: Place,
        fatbin_index: Option<usize>,
    ) -> Result<u64, FormatError> {
        let header = self.bundle_header(data, place.file_base)?;
        let end = header.end();
        let bplace = self.bundle_container(&header, place, fatbin_index, Some(end));
        for e in header.entries {
            let bytes = Bytes::new(data)
                .read_at(e.offset, e.size)
                .unwrap_or_default();
            self.entry(
                bplace,
                Some(e.index),
                Some(e.id),
                EntryBytes {
                    data: bytes,
                    complete: true,
                },
                e.size,
                e.offset,
            );
        }
        Ok(end)
    }

    /// Records the bundle `header` describes at `place` (`size` bytes, where known) and its
    /// overlapping entries; returns the place of its entries.
    fn bundle_container(
        &mut self,
        header: &BundleHeader,
        place: Place,
        fatbin_index: Option<usize>,
        size: Option<u64>,
    ) -> Place {
        let cid = self.container(
            place.parent,
            ContainerKind::Bundle {
                entries: header.entries.len(),
                fatbin_index,
            },
            0,
            place.file_base,
            size,
        );
        self.check_overlaps(header, cid, place.file_base);
        // The container's own offset is relative to its parent; fix it up from the place.
        Place {
            parent: Some(cid),
            ..place
        }
    }

    /// Reads a bundle's header, touching only the header's bytes.
    fn bundle_header(&self, data: &[u8], base: Option<u64>) -> Result<BundleHeader, FormatError> {
        let mut scan = bundle::HeaderScan::default();
        let mut want = START_READ;
        loop {
            let head = if want == START_READ {
                self.peek_start(data, base, 0)
            } else {
                self.peek(data, base, 0, want)
            };
            if let Some(n) = scan.advance(&head)? {
                return bundle::parse_header(
                    head.get(..n as usize).unwrap_or_default(),
                    data.len() as u64,
                );
            }
            if (head.len() as u64) < want || want >= 16 << 20 {
                // The data ends inside the header, or the header is implausibly large: the
                // parser over the mapped bytes says where it goes wrong, copying nothing.
                return bundle::parse(data, true);
            }
            want = want.saturating_mul(4);
        }
    }

    /// Forgets the nested containers read from `buf`, a buffer of this walk about to be
    /// refilled or freed: `nested_seen` knows data by its address, and the next bytes at the
    /// same address (the next entry decoded into the buffer, or a later allocation reusing the
    /// memory) are other data.
    fn forget_nested_in(&mut self, buf: &[u8]) {
        if self.nested_seen.is_empty() {
            return;
        }
        let lo = buf.as_ptr() as usize;
        let hi = lo.saturating_add(buf.len());
        self.nested_seen.retain(|&(p, _)| !(lo..hi).contains(&p));
    }

    fn check_overlaps(&mut self, header: &BundleHeader, cid: usize, base: Option<u64>) {
        for (a, b) in bundle::overlaps(header) {
            self.diag(
                ReadCode::OverlappingEntries,
                Some(cid),
                base,
                0,
                format!("entries #{a} and #{b} overlap"),
            );
        }
    }

    fn ccob(
        &mut self,
        data: &[u8],
        place: Place,
        fatbin_index: Option<usize>,
    ) -> Result<Option<u64>, FormatError> {
        // The header from a read, not through the map: a touch of a mapped page maps the whole
        // folio of the page cache around it (up to 2 MiB), for 32 bytes.
        // What was read at this offset before may reach past `data` (a bundle start read for a
        // longer range): only `data`'s bytes count.
        let head = self.peek_start(data, place.file_base, 0);
        let head = head.get(..data.len()).unwrap_or(&head);
        let h = CcobHeader::parse_within(head, data.len() as u64)?;
        let cid = self.container(
            place.parent,
            ContainerKind::Ccob {
                version: h.version,
                method: h.method,
                total_size: h.total_size,
                uncompressed_size: h.uncompressed_size,
                hash: format!("{:016x}", h.hash),
                hash_ok: None,
                fatbin_index,
            },
            0,
            place.file_base,
            h.total_size,
        );
        let inner = Place {
            parent: Some(cid),
            file_base: None,
            compressed: true,
        };
        if self.opts.decompress || self.opts.metadata {
            let decoded = ccob::check_ceiling(&h, self.opts.max_decompressed).and_then(|()| {
                match self.ccob_in_order(&h, data, place.file_base, cid, inner) {
                    Some(walked) => walked,
                    None => self.ccob_whole(&h, data, place.file_base, cid, inner),
                }
            });
            if let Err(e) = decoded {
                // Report it, but keep the size so a walk can continue after this CCOB.
                self.diag_err(Some(cid), place.file_base, e);
                return Ok(h.total_size);
            }
        } else if let Err(e) = self.ccob_headers(&h, data, head, place.file_base, inner) {
            self.diag_err(Some(cid), None, e);
        }
        if h.total_size.is_some() {
            return Ok(h.total_size);
        }
        // Version 1 has no size field: its end is where the compressed stream ends.
        match ccob::v1_payload_len(&h, data, self.opts.max_decompressed) {
            Some(n) => Ok(Some(h.header_size + n)),
            None => {
                self.diag(
                    ReadCode::MalformedCcob,
                    Some(cid),
                    place.file_base,
                    h.header_size,
                    "version-1 compressed bundle whose compressed stream does not end within the data (truncated?); nothing after it can be located".into(),
                );
                Ok(None)
            }
        }
    }

    /// Decodes the whole of a CCOB into memory, then walks its bundle: the reading for any
    /// layout [`Walker::ccob_in_order`] does not take.
    fn ccob_whole(
        &mut self,
        h: &CcobHeader,
        data: &[u8],
        at: Option<u64>,
        cid: usize,
        inner: Place,
    ) -> Result<(), FormatError> {
        let bytes = ccob::decompress(h, data, self.opts.max_decompressed)?;
        let computed = self.opts.check_hashes.then(|| ccob::hash(&bytes));
        self.ccob_hash(h, at, cid, computed);
        if let Err(e) = self.bundle(&bytes, inner, None) {
            self.diag_err(Some(cid), None, e);
        }
        self.forget_nested_in(&bytes);
        Ok(())
    }

    /// Records the hash of a fully decoded CCOB (`None` when it was not computed).
    fn ccob_hash(&mut self, h: &CcobHeader, at: Option<u64>, cid: usize, computed: Option<u64>) {
        if let Some(ContainerKind::Ccob { hash_ok, .. }) =
            self.out.containers.get_mut(cid).map(|c| &mut c.kind)
        {
            *hash_ok = computed.map(|c| c == h.hash);
        }
        if let Some(computed) = computed.filter(|&c| c != h.hash) {
            self.diag(ReadCode::CcobHashMismatch, Some(cid), at, 16, format!("stored hash {:016x} differs from the MD5-based hash {computed:016x} of the decompressed bundle", h.hash));
        }
    }

    /// Decodes the whole of a CCOB as a stream and walks its bundle entry by entry as the
    /// decoder reaches each one, so that memory holds the entry being read, not the bundle:
    /// jax-rocm7-pjrt 0.12.0's plugin has frames of 114 MB whose code objects are 11 MB each.
    /// The frame's window is counted in [`ccob::WINDOWS`] and decoded into [`Options::spill`]
    /// past it, as [`Walker::ccob_headers`] does.
    ///
    /// It takes the layout every bundler writes: entries after the table, in the table's
    /// order, apart. For any other layout, or a table that does not parse, it records nothing
    /// and returns `None`: [`Walker::ccob_whole`] reads it, with the same findings as always.
    /// `Some(Err)` when the stream fails or ends early after the walk began (the entries read
    /// before are kept); the size and hash are checked as [`ccob::decompress`] checks them.
    fn ccob_in_order(
        &mut self,
        h: &CcobHeader,
        data: &[u8],
        at: Option<u64>,
        cid: usize,
        inner: Place,
    ) -> Option<Result<(), FormatError>> {
        let limit = h.uncompressed_size;
        let mut dec = Decoded {
            stream: open_ccob(self.opts, h, data, at, true).ok()?,
            limit,
        };
        if self.opts.check_hashes {
            dec.stream.hash_output();
        }
        let (prefix, header_len) = read_bundle_table(limit, |buf| dec.read(buf)).ok()?;
        let header =
            bundle::parse_header(prefix.get(..header_len as usize).unwrap_or_default(), limit)
                .ok()?;
        let mut end = header_len;
        for e in header.entries.iter().filter(|e| e.size > 0) {
            if e.offset < end {
                return None;
            }
            end = e.offset.checked_add(e.size).filter(|&x| x <= limit)?;
        }
        // From here on, as Walker::bundle over the decoded bytes.
        let first_diag = self.out.diagnostics.len();
        let bplace = self.bundle_container(&header, inner, None, Some(header.end()));
        let mut bytes = Vec::new();
        // A frame decoded into a temporary file holds each entry where the decoder wrote it:
        // the walk reads it there (hipBLASLt's entries reach 171 MB) instead of from a copy.
        let in_place = dec.stream.spilled();
        for e in &header.entries {
            let data: &[u8] = if e.size == 0 {
                &[]
            } else if in_place {
                let end = e.offset.saturating_add(e.size);
                if let Err(err) = dec.skip_to(end) {
                    return Some(Err(err));
                }
                match dec.stream.decoded(e.offset, end) {
                    Some(data) => data,
                    // The temporary file failed while an earlier entry was read from it.
                    None => return Some(Err(spill_failed(&dec.stream, e.index))),
                }
            } else {
                // Entries lie apart and in order: the start of one may still be in the
                // prefix read for the table, the rest comes from the stream.
                let from_prefix = Bytes::new(&prefix).read_at_most(e.offset, e.size);
                bytes.clear();
                bytes.extend_from_slice(from_prefix);
                let rest = e.offset.saturating_add(bytes.len() as u64);
                let read = dec
                    .skip_to(rest)
                    .and_then(|()| dec.read_into(&mut bytes, e.size));
                if let Err(err) = read {
                    return Some(Err(err));
                }
                &bytes
            };
            self.entry(
                bplace,
                Some(e.index),
                Some(e.id.clone()),
                EntryBytes {
                    data,
                    complete: true,
                },
                e.size,
                e.offset,
            );
            self.forget_nested_in(data);
            // A page of the temporary file that cannot be read back (an I/O error) reads as
            // zeros from there on: the entry just walked may hold them.
            if in_place && dec.stream.spill_fault().is_some() {
                return Some(Err(spill_failed(&dec.stream, e.index)));
            }
        }
        // The rest of the frame, for its size and hash: one byte more is an error.
        if let Err(err) = dec.skip_to(limit) {
            return Some(Err(err));
        }
        let mut probe = [0u8; 1];
        if dec.read(&mut probe).is_err() || dec.stream.position() != limit {
            return Some(Err(dec.size_error()));
        }
        let computed = dec.stream.output_hash();
        // Where the whole-buffer reading records it: before the bundle's own findings.
        let after = self.out.diagnostics.len();
        self.ccob_hash(h, at, cid, computed);
        if let Some(moved) = self.out.diagnostics.get_mut(first_diag..) {
            moved.rotate_left(after - first_diag);
        }
        Some(Ok(()))
    }

    /// Decodes a CCOB only as far as the entry table and the first bytes of each entry.
    /// `at` is the CCOB's offset in the file, when it lies in the file's bytes: its payload is
    /// then read through [`Options::file`] where one is given.
    fn ccob_headers(
        &mut self,
        h: &CcobHeader,
        data: &[u8],
        head: &[u8],
        at: Option<u64>,
        place: Place,
    ) -> Result<(), FormatError> {
        let payload_head = Bytes::new(head).tail(h.header_size).unwrap_or_default();
        let payload_head = payload_head
            .get(..h.payload(data).len())
            .unwrap_or(payload_head);
        ccob::check_frame_size(h, payload_head)?;
        let limit = h.uncompressed_size.min(self.opts.max_decompressed);
        // The window a frame needs is only touched as deep as it is decoded. So the bundle
        // header is read with no budget, and the stream is opened again with the shared window
        // budget (and a spill file past it) only when an entry lies deeper than
        // SHALLOW_ENTRIES: re-decoding the few kilobytes of header is cheaper than spilling a
        // frame whose entries are all near its start (hipBLASLt's .co files: one 126 MB entry).
        let open = |budgeted: bool| open_ccob(self.opts, h, data, at, budgeted);
        let mut stream = open(false)?;
        let (prefix, header_len) = read_bundle_table(limit, |buf| stream.read_full(buf))?;
        let header = bundle::parse(prefix.get(..header_len as usize).unwrap_or_default(), false)?;
        let bplace = self.bundle_container(&header, place, None, Some(h.uncompressed_size));
        let cid = bplace.parent;
        let mut order: Vec<_> = header.entries.iter().collect();
        order.sort_by_key(|e| e.offset);
        let deepest = order
            .iter()
            .filter(|e| e.size > 0)
            .map(|e| e.offset.saturating_add(e.size.min(ENTRY_PREFIX)))
            .max()
            .unwrap_or(0)
            .min(limit);
        if deepest > SHALLOW_ENTRIES {
            let at = stream.position();
            stream = open(true)?;
            stream.skip_to(at)?;
        }
        let mut pending: HashMap<usize, Vec<u8>> = HashMap::new();
        for e in order {
            let end = e.offset.checked_add(e.size);
            if end.is_none_or(|end| end > h.uncompressed_size) {
                self.diag(ReadCode::MalformedBundle, cid, None, e.offset, format!("entry #{} ({}): offset {} + size {} runs past the declared {} uncompressed bytes", e.index, e.id.raw(), e.offset, e.size, h.uncompressed_size));
                continue;
            }
            if e.size == 0 {
                pending.insert(e.index, Vec::new());
                continue;
            }
            if e.offset > limit {
                self.diag(
                    ReadCode::DecompressionLimit,
                    cid,
                    None,
                    e.offset,
                    format!(
                        "entry #{} starts past the decompression limit of {limit} bytes",
                        e.index
                    ),
                );
                continue;
            }
            let want = e.size.min(ENTRY_PREFIX);
            let bytes = if e.offset >= stream.position() {
                // Entries before the stream position are served from the prefix buffer.
                match stream
                    .skip_to(e.offset)
                    .and_then(|()| stream.read_vec(want))
                {
                    Ok(b) => b,
                    Err(err) => {
                        self.diag_err(cid, None, err);
                        break;
                    }
                }
            } else {
                Bytes::new(&prefix).read_at_most(e.offset, want).to_vec()
            };
            if (bytes.len() as u64) < want {
                self.diag(
                    ReadCode::MalformedCcob,
                    cid,
                    None,
                    e.offset,
                    format!("compressed data ends inside entry #{}", e.index),
                );
            }
            pending.insert(e.index, bytes);
        }
        for e in &header.entries {
            if let Some(bytes) = pending.remove(&e.index) {
                let complete = bytes.len() as u64 == e.size;
                self.entry(
                    bplace,
                    Some(e.index),
                    Some(e.id.clone()),
                    EntryBytes {
                        data: &bytes,
                        complete,
                    },
                    e.size,
                    e.offset,
                );
                self.forget_nested_in(&bytes);
            }
        }
        Ok(())
    }

    // ----- OffloadBinary ----------------------------------------------------------------------

    fn offloading(&mut self, data: &[u8], place: Place) {
        let (bins, err) = offload_binary::parse_all(data);
        for (index, (offset, bin)) in bins.into_iter().enumerate() {
            let bid = self.container(
                place.parent,
                ContainerKind::OffloadBinary {
                    version: bin.version,
                    index,
                },
                offset,
                place.file_base.and_then(|b| b.checked_add(offset)),
                Some(bin.size),
            );
            let bplace = place.at(bid, offset);
            let raw = Bytes::new(data).tail(offset).unwrap_or_default();
            if bin.compressed {
                match offload_binary::parse_compressed(raw, self.opts.max_decompressed) {
                    Ok((inflated_bin, inflated)) => {
                        let inner = Place {
                            parent: Some(bid),
                            file_base: None,
                            compressed: true,
                        };
                        self.offload_images(&inflated_bin, &inflated, inner);
                        self.forget_nested_in(&inflated);
                    }
                    Err(e) => self.diag_err(Some(bid), bplace.file_base, e),
                }
            } else {
                self.offload_images(&bin, raw, bplace);
            }
        }
        if let Some(e) = err {
            self.diag_err(place.parent, place.file_base, e);
        }
    }

    fn offload_images(&mut self, bin: &offload_binary::OffloadBinary, data: &[u8], place: Place) {
        let bytes_of = Bytes::new(data);
        for (i, img) in bin.images.iter().enumerate() {
            let kind = if img.is_hip(bin.version) {
                "hip"
            } else {
                "offload"
            };
            let raw = format!(
                "{kind}-{}--{}",
                img.string("triple").unwrap_or("unknown"),
                img.string("arch").unwrap_or("")
            );
            let id = EntryId::parse(&raw);
            let bytes = bytes_of
                .read_at(img.image_offset, img.image_size)
                .unwrap_or_default();
            let eb = EntryBytes {
                data: bytes,
                complete: true,
            };
            self.entry(
                place,
                Some(i),
                Some(id),
                eb,
                img.image_size,
                img.image_offset,
            );
        }
    }

    // ----- entries ----------------------------------------------------------------------------

    fn entry(
        &mut self,
        place: Place,
        index: Option<usize>,
        id: Option<EntryId>,
        bytes: EntryBytes<'_>,
        size: u64,
        offset: u64,
    ) {
        if self.over_budget() {
            return;
        }
        let host = id.as_ref().is_some_and(|i| !i.is_device());
        let data = bytes.data;
        let file_offset = place.file_base.and_then(|b| b.checked_add(offset));
        // The ELF header is all that listing needs of a code object.
        let head = self.peek(data, file_offset, 0, 64);
        let format = if size == 0 {
            ImageFormat::Empty
        } else if looks_like_code_object(&head) {
            ImageFormat::CodeObject
        } else if head.starts_with(b"BC\xc0\xde") || head.starts_with(&[0xde, 0xc0, 0x17, 0x0b]) {
            ImageFormat::Bitcode
        } else {
            ImageFormat::Other
        };
        let mut header = None;
        let mut target = None;
        if format == ImageFormat::CodeObject {
            match CodeObjectHeader::parse(&head) {
                Ok(h) => {
                    let mut t = h.target();
                    if h.mach == 0 && bytes.complete {
                        // Code object V2 from older compilers: the processor is in a note.
                        if let Some(p) = metadata::isa_version_processor(data) {
                            t.processor = p;
                        }
                    }
                    target = Some(t);
                    header = Some(h);
                }
                Err(e) => self.diag(
                    ReadCode::MalformedCodeObject,
                    place.parent,
                    place.file_base,
                    offset,
                    format!("entry {}: {e}", id.as_ref().map_or("-", |i| i.raw())),
                ),
            }
        } else if format == ImageFormat::Bitcode {
            target = id.as_ref().and_then(EntryId::target_id);
        }
        if let (Some(id), Some(t), true) = (&id, &target, format == ImageFormat::CodeObject) {
            if let Some(declared) = id.target_id() {
                if declared != *t {
                    self.diag(
                        ReadCode::EntryTargetMismatch,
                        place.parent,
                        place.file_base,
                        offset,
                        format!("entry ID {} names {declared}, but the code object's own header says {t}", id.raw()),
                    );
                }
            }
        }
        let mut md = None;
        if self.opts.metadata && format == ImageFormat::CodeObject && bytes.complete {
            match metadata::read(data) {
                Ok(m) => md = m,
                Err(e) => self.diag(
                    ReadCode::MalformedMetadata,
                    place.parent,
                    place.file_base,
                    offset,
                    format!("entry {}: {e}", id.as_ref().map_or("-", |i| i.raw())),
                ),
            }
        }
        let nested = format == ImageFormat::Other
            && matches!(
                sniff(&head),
                Some(Sniff::Bundle | Sniff::Ccob | Sniff::OffloadBinary)
            )
            && bytes.complete;
        let offload_kind = id.as_ref().map(|i| i.kind().to_owned());
        let co = CodeObject {
            container: place.parent,
            entry_index: index,
            entry_id: id.map(EntryId::into_raw),
            offload_kind,
            host,
            offset,
            file_offset,
            size,
            compressed: place.compressed,
            format,
            header,
            target,
            metadata: md,
            loading: self.out.loading(place.parent),
        };
        if bytes.complete {
            if let Some(sink) = self.sink.as_mut() {
                sink(&self.out, &co, data);
            }
        }
        self.out.code_objects.push(co);
        if nested
            && self
                .nested_seen
                .insert((data.as_ptr() as usize, data.len()))
        {
            let nplace = Place {
                parent: place.parent,
                file_base: file_offset,
                compressed: place.compressed,
            };
            if let Err(e) = self.any(data, nplace) {
                self.diag_err(place.parent, file_offset, e);
            }
        }
    }
}

/// Relocations of a relocatable object that apply to section `target`: offset in the section →
/// (symbol table section, symbol index, addend).
fn object_relocs(elf: &Elf<'_>, target: usize) -> HashMap<u64, (usize, u32, i64)> {
    let mut out = HashMap::new();
    for s in elf
        .sections
        .iter()
        .filter(|s| s.sh_type == elf::SHT_RELA && s.info as usize == target)
    {
        if let Ok(data) = elf.section_data(s) {
            elf::for_each_rela(data, |r| {
                if elf::reloc_kind(elf.e_machine, r.r_type) == Some(RelocKind::Absolute) {
                    out.insert(r.offset, (s.link as usize, r.sym, r.addend));
                }
            });
        }
    }
    out
}

/// The dynamic relocations at the addresses of interest, read once, on first need.
struct DynRelocs<'f> {
    wanted: HashSet<u64>,
    /// The file that holds the ELF, and where the ELF starts in it: the table is read from it.
    file: Option<(&'f dyn ReadAt, u64)>,
    read: Option<(HashMap<u64, elf::Rela>, HashSet<u64>)>,
}

impl<'f> DynRelocs<'f> {
    fn new(wanted: HashSet<u64>, file: Option<(&'f dyn ReadAt, u64)>) -> Self {
        DynRelocs {
            wanted,
            file,
            read: None,
        }
    }

    fn get(&mut self, elf: &Elf<'_>) -> &(HashMap<u64, elf::Rela>, HashSet<u64>) {
        let (wanted, file) = (&self.wanted, self.file);
        self.read
            .get_or_insert_with(|| elf.dynamic_relocations(wanted, file))
    }
}

const SHF_ALLOC: u64 = 2;
const SHF_EXECINSTR: u64 = 4;

/// Whether a section holds only what the toolchain writes there (machine code, symbol,
/// string, relocation and hash tables, unwind and debug information, notes), never bytes a
/// program addresses as its data: such sections are not searched for embedded GPU code.
/// Data a library embeds (an array, an `.incbin`) lands in `.rodata`, `.data`,
/// `.data.rel.ro`, `.lrodata` or a section of its own name, all of which are searched. Skipping
/// `.text` alone keeps listing a 1.6 GB library within 20 % of its time without the search
/// (bench/results/embedded-*.txt); with `search_code` (`--deep`), executable sections are
/// searched too.
fn toolchain_section(s: &elf::Section<'_>, search_code: bool) -> bool {
    const SKIP_NAMES: &[&[u8]] = &[
        b".eh_frame",
        b".eh_frame_hdr",
        b".gcc_except_table",
        b".sframe",
        b".comment",
        b".got",
        b".got.plt",
        b".gnu_debuglink",
        b".interp",
    ];
    let by_type = matches!(
        s.sh_type,
        elf::SHT_NOBITS
            | elf::SHT_SYMTAB
            | elf::SHT_DYNSYM
            | elf::SHT_RELA
            | elf::SHT_RELR
            | 3  // SHT_STRTAB
            | 5  // SHT_HASH
            | 6  // SHT_DYNAMIC
            | 7  // SHT_NOTE
            | 9  // SHT_REL
            | 14..=18 // init/fini/preinit arrays, groups, extended section indices
            | 0x6fff_fff6 // SHT_GNU_HASH
            | 0x6fff_fffd..=0x6fff_ffff // GNU symbol versions
    );
    by_type
        || (s.flags & SHF_EXECINSTR != 0 && !search_code)
        || SKIP_NAMES.contains(&s.name)
        || s.name.starts_with(b".debug")
        || s.name.starts_with(b".zdebug")
}
const STT_SECTION: u8 = 3;
const STT_FILE: u8 = 4;

/// The symbols of `.symtab` (else `.dynsym`) that have a size, read on first need: which one
/// covers embedded code.
struct ElfSymbols<'e, 'a> {
    /// The symbol table's bytes (24 per symbol) and its string table's.
    table: &'a [u8],
    strings: &'a [u8],
    name: String,
    /// Symbols are matched by address alone (a file without section headers, whose symbols
    /// name sections that cannot be read); else by section index and address.
    by_address: bool,
    /// The file's sections, for turning a range offset into an address.
    sections: &'e [elf::Section<'a>],
    /// (section index, st_value, st_size, st_name), sorted; read on first lookup.
    sorted: Option<Vec<(u16, u64, u64, u32)>>,
}

impl<'e, 'a> ElfSymbols<'e, 'a> {
    /// `.symtab`, else `.dynsym`; without section headers, the dynamic symbol table the
    /// dynamic section points to.
    fn new(elf: &'e Elf<'a>) -> Option<Self> {
        let sections = elf.sections.as_slice();
        if elf.sections.is_empty() {
            let (table, strings) = elf.dynamic_symbol_table()?;
            return (!table.is_empty()).then(|| ElfSymbols {
                table,
                strings,
                name: ".dynsym".into(),
                by_address: true,
                sections,
                sorted: None,
            });
        }
        let table = elf
            .sections
            .iter()
            .find(|s| s.sh_type == elf::SHT_SYMTAB && s.size > 0)
            .or_else(|| {
                elf.sections
                    .iter()
                    .find(|s| s.sh_type == elf::SHT_DYNSYM && s.size > 0)
            })?;
        let strings = elf
            .sections
            .get(table.link as usize)
            .and_then(|st| elf.section_data(st).ok())
            .unwrap_or_default();
        Some(ElfSymbols {
            table: elf.section_data(table).unwrap_or_default(),
            strings,
            name: lossless_string(table.name),
            by_address: false,
            sections,
            sorted: None,
        })
    }

    fn read(&self) -> Vec<(u16, u64, u64, u32)> {
        use object::LittleEndian as LE;
        let (symbols, _) = object::pod::slice_from_bytes::<object::elf::Sym64<LE>>(
            self.table,
            self.table.len() / 24,
        )
        .unwrap_or((&[], &[]));
        let mut out = Vec::new();
        for s in symbols {
            let info = s.st_info & 0xf;
            let size = s.st_size.get(LE);
            let shndx = s.st_shndx.get(LE);
            if size == 0 || shndx == 0 || info == STT_SECTION || info == STT_FILE {
                continue;
            }
            let key = if self.by_address { 0 } else { shndx };
            out.push((key, s.st_value.get(LE), size, s.st_name.get(LE)));
        }
        out.sort_unstable();
        out
    }
}

impl SymbolLookup for ElfSymbols<'_, '_> {
    fn table(&self) -> Option<&str> {
        Some(&self.name)
    }

    fn covering(&mut self, range: &ScanRange<'_>, offset: u64) -> Option<String> {
        // Symbol values are addresses in linked files and section offsets in objects (whose
        // section addresses are 0).
        let (shndx, addr) = if self.by_address {
            (0, range.vaddr?.checked_add(offset)?)
        } else {
            let base = self.sections.get(range.index)?.addr;
            (u16::try_from(range.index).ok()?, base.checked_add(offset)?)
        };
        if self.sorted.is_none() {
            self.sorted = Some(self.read());
        }
        let sorted = self.sorted.as_ref()?;
        let upto = sorted.partition_point(|&(sh, v, _, _)| (sh, v) <= (shndx, addr));
        // The innermost symbol starting at or before the address that still covers it.
        let &(_, _, _, name) = sorted
            .get(..upto)?
            .iter()
            .rev()
            .take_while(|&&(sh, _, _, _)| sh == shndx)
            .take(256)
            .find(|&&(_, v, size, _)| addr - v < size)?;
        elf::cstr_at(Bytes::new(self.strings), u64::from(name)).map(lossless_string)
    }
}

/// The file ranges of segments, sorted, with overlapping ones merged.
fn merged_ranges(segs: &[elf::Segment]) -> Vec<(u64, u64)> {
    let mut r: Vec<(u64, u64)> = segs
        .iter()
        .map(|p| (p.offset, p.offset.saturating_add(p.filesz)))
        .collect();
    r.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (s, e) in r {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CCOB header is read from its own range: bytes read earlier at the same offset for a
    /// longer range (a wrapper's pointer resolved over the whole section) do not count.
    #[test]
    fn a_ccob_header_is_parsed_from_its_own_range_only() {
        let bundle = bundle::tests::build(&[("hipv4-amdgcn-amd-amdhsa--gfx1030", b"abc")]);
        let blob = ccob::compress(&bundle, 3, ccob::Method::Zstd, 3).unwrap();
        let mut file = vec![0u8; 100];
        file.extend(&blob);
        let mem: &[u8] = &file;
        let opts = Options {
            file: Some(&mem),
            ..Options::default()
        };
        let mut w = Walker::new(&opts, None);
        // What a longer range read there first.
        let head = w.peek_start(&file, Some(0), 100).into_owned();
        assert!(head.len() > 32);
        let place = Place {
            parent: None,
            file_base: Some(100),
            compressed: false,
        };
        // The range given is 16 bytes: half a version-3 header.
        let e = w.ccob(&file[100..116], place, None).unwrap_err();
        assert_eq!(e.message, "truncated v3 header: 16 of 32 bytes");
        assert_eq!(e.offset, 0);
    }
}
