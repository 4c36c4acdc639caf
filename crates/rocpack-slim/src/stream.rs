//! The bytes a rewrite writes, produced and checked piece by piece: no bundle, compressed or
//! not, is ever held whole in memory, so a rewrite of a 1.6 GB library with a 302 MB bundle
//! runs in a few hundred KiB of buffers plus, for zstd, the compressor's or decompressor's
//! window.
//!
//! A new container holds an [`Inner`] bundle: the bytes of a *base* (a range of the original
//! file, or what a CCOB in it decompresses to), either as they are or compacted to the kept
//! entries. [`produce`] writes a container at an offset of a [`Sink`]; [`check`] reads it back
//! from the new file and compares it with the same bundle made again from the original.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use rocpack_offload::bundle;
use rocpack_offload::ccob::{self, CcobHeader, Method};

use crate::plan::{Compression, Form, Limits};

/// Size of the buffers bytes move through.
pub(crate) const CHUNK: usize = 1 << 20;

/// Memory the zstd windows of the bundles in flight may take together. One bundle that needs
/// more (a window is at most 2^27 bytes, plus its long-distance-matching tables) runs alone.
pub(crate) const WINDOW_BUDGET: u64 = 160 << 20;

/// What compressing or decompressing a bundle of `len` bytes allocates, roughly: a window of
/// the bundle's size up to 2^27 bytes, and an eighth more for tables.
pub(crate) fn window_cost(len: u64) -> u64 {
    let w = len.min(1 << 27);
    w + w / 8
}

/// The windows in flight, for the whole process: files rewritten in parallel share it.
static WINDOWS: rocpack_bytes::Budget = rocpack_bytes::Budget::new(WINDOW_BUDGET);

/// How the workers of [`bounded_par`] other than the first choose their next item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Others {
    /// The cheapest left: beside the first worker's large items they run small ones, and two
    /// large ones meet only at the end. For items that decode: a decoder's window leaves the
    /// allocator's heap larger after it, which the budget does not see (decompressing
    /// librocsparse: 255,632–257,468 KiB of maximum RSS with `LargestFit`, 198,280–229,640 KiB
    /// with this, five runs each in `bench/results/slim-order-2026-11-26.txt`).
    Cheapest,
    /// The costliest that fits: each worker's items shrink, so each window fits where the last
    /// one was freed (compressing librocsparse took about 0.2 s less than with `Cheapest`).
    /// For rewrites that decode nothing of the original.
    LargestFit,
}

/// The next of the `pending` items (costliest first: `(cost, index)`) a worker takes, with
/// `room` bytes free of a budget of `limit`: the first worker the costliest, the others as
/// `others` says, but nothing while the costliest is over the whole budget (it runs alone, when
/// nothing else is held: the others would keep it waiting to the end).
fn next_item(
    pending: &mut std::collections::VecDeque<(u64, usize)>,
    first: bool,
    others: Others,
    room: u64,
    limit: u64,
) -> rocpack_bytes::Pick<usize> {
    use rocpack_bytes::Pick;
    if pending.is_empty() {
        return Pick::Done;
    }
    if !first && pending.front().is_some_and(|&(c, _)| c > limit) {
        return Pick::Wait;
    }
    let fits = |item: Option<&(u64, usize)>| item.is_some_and(|&(c, _)| c <= room);
    let at = match (first, others) {
        (true, _) => Some(0).filter(|_| fits(pending.front())),
        (false, Others::Cheapest) => Some(pending.len() - 1).filter(|_| fits(pending.back())),
        (false, Others::LargestFit) => pending.iter().position(|&(c, _)| c <= room),
    };
    match at.and_then(|k| pending.remove(k)) {
        Some((c, i)) => Pick::Took(c, i),
        None => Pick::Wait,
    }
}

/// Runs `each` on every item on all cores, never letting the items in flight together (in
/// this call and every other) cost more than [`WINDOW_BUDGET`]; an item that costs more runs
/// alone. The first worker takes the items from the costliest down, so that none is left to run
/// alone at the end; the others as `others` says, so that they have work that fits beside it
/// (while a 288 MB bundle holds 144 of the 160 MiB, the other core works through the small
/// ones). `each` must not wait for other work. Results are in the items' order.
pub(crate) fn bounded_par<T: Sync, U: Send>(
    items: &[T],
    cost: impl Fn(&T) -> u64 + Sync,
    others: Others,
    each: impl Fn(&T) -> U + Sync,
) -> Vec<U> {
    let mut order: Vec<(u64, usize)> = items.iter().map(&cost).zip(0..).collect();
    order.sort_by_key(|&(c, i)| (std::cmp::Reverse(c), i));
    let pending = Mutex::new(std::collections::VecDeque::from(order));
    let done = Mutex::new(Vec::with_capacity(items.len()));
    let work = |first: bool| {
        let take = |room: u64| {
            let mut pending = pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            next_item(&mut pending, first, others, room, WINDOWS.limit())
        };
        // Never held across the wait for another item: `each` must not wait for other work.
        while let Some((i, _held)) = WINDOWS.acquire_with(take) {
            if let Some(t) = items.get(i) {
                let u = each(t);
                done.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((i, u));
            }
        }
    };
    let workers = rayon::current_num_threads().clamp(1, items.len().max(1));
    rayon::scope(|s| {
        for _ in 1..workers {
            s.spawn(|_| work(false));
        }
        work(true);
    });
    let mut done = done
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, u)| u).collect()
}

/// The original file: its bytes as a slice (the memory map, for headers), and where it can be
/// read without mapping (the open file, for bulk data: reading a 1.6 GB library through its map
/// would make every page part of the process's memory).
#[derive(Clone, Copy)]
pub struct Input<'a> {
    bytes: &'a [u8],
    file: Option<&'a File>,
}

impl<'a> Input<'a> {
    /// Bytes in memory (tests, fuzzing).
    pub fn bytes(bytes: &'a [u8]) -> Self {
        Input { bytes, file: None }
    }

    /// A file and its memory map: bulk data is read from the file.
    pub fn file(map: &'a [u8], file: &'a File) -> Self {
        Input {
            bytes: map,
            file: Some(file),
        }
    }

    /// The mapped bytes.
    pub fn map(&self) -> &'a [u8] {
        self.bytes
    }

    /// The file, when the bytes are one.
    pub fn open_file(&self) -> Option<&'a File> {
        self.file
    }

    /// Fills `buf` from `offset`.
    ///
    /// # Errors
    /// An I/O error, or `UnexpectedEof` past the end.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self.file {
            Some(f) => f.read_exact_at(buf, offset),
            None => {
                let src = usize::try_from(offset)
                    .ok()
                    .and_then(|o| self.bytes.get(o..)?.get(..buf.len()))
                    .ok_or_else(|| eof(offset))?;
                buf.copy_from_slice(src);
                Ok(())
            }
        }
    }

    /// How many zero bytes `[start, end)` begins with. A file's holes are zeros and are not
    /// read; its data is read through the file, not the map (the zeros after a compressed
    /// bundle can be most of a library).
    pub(crate) fn zeros_at(&self, start: u64, end: u64) -> u64 {
        let mut buf = vec![0u8; CHUNK.min(end.saturating_sub(start) as usize)];
        let mut first_nonzero = |s: u64, e: u64| -> Option<u64> {
            let mut at = s;
            while at < e {
                let n = (e - at).min(buf.len() as u64) as usize;
                let b = buf.get_mut(..n).unwrap_or_default();
                if self.read_exact_at(b, at).is_err() {
                    return Some(at);
                }
                if let Some(p) = b.iter().position(|&x| x != 0) {
                    return Some(at + p as u64);
                }
                at += n as u64;
            }
            None
        };
        let extents = match self.file {
            Some(f) => crate::sys::data_extents(f, start, end),
            None => vec![(start, end.min(self.bytes.len() as u64))],
        };
        extents
            .into_iter()
            .find_map(|(s, e)| first_nonzero(s, e))
            .unwrap_or(end)
            .saturating_sub(start)
    }
}

fn eof(offset: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("the file ends before byte {offset}"),
    )
}

/// Positioned reads of the original or new file, for [`rocpack_offload::ReadAtRange`].
impl rocpack_offload::ReadAt for Input<'_> {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        match self.file {
            Some(f) => rocpack_offload::ReadAt::read_at(f, offset, buf),
            None => {
                let rest = usize::try_from(offset)
                    .ok()
                    .and_then(|o| self.bytes.get(o..))
                    .unwrap_or_default();
                let n = rest.len().min(buf.len());
                if let (Some(d), Some(s)) = (buf.get_mut(..n), rest.get(..n)) {
                    d.copy_from_slice(s);
                }
                Ok(n)
            }
        }
    }
}

/// Where new bytes go: the temporary file, or memory (tests, fuzzing). Writes at disjoint
/// offsets may come from several threads.
pub trait Sink: Sync {
    /// Writes all of `buf` at `offset`.
    ///
    /// # Errors
    /// As the file system.
    fn put_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
}

impl Sink for File {
    fn put_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        FileExt::write_all_at(self, buf, offset)
    }
}

impl Sink for Mutex<Vec<u8>> {
    fn put_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut v = self
            .lock()
            .map_err(|_| io::Error::other("a writer panicked"))?;
        let start = usize::try_from(offset).map_err(|_| eof(offset))?;
        let end = start.checked_add(buf.len()).ok_or_else(|| eof(offset))?;
        if v.len() < end {
            v.resize(end, 0);
        }
        v.get_mut(start..end)
            .ok_or_else(|| eof(offset))?
            .copy_from_slice(buf);
        Ok(())
    }
}

/// Counts bytes and writes nothing: a dry run learns the sizes a rewrite would have.
pub(crate) struct Discard;

impl Sink for Discard {
    fn put_at(&self, _: &[u8], _: u64) -> io::Result<()> {
        Ok(())
    }
}

/// Where the bytes of an inner bundle come from.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Base {
    /// The original file's `[offset, offset + len)`.
    File { offset: u64, len: u64 },
    /// What the CCOB at `offset` (of `len` bytes) of the original file decompresses to.
    Ccob {
        offset: u64,
        len: u64,
        header: CcobHeader,
    },
}

impl Base {
    fn len(&self) -> u64 {
        match self {
            Base::File { len, .. } => *len,
            Base::Ccob { header, .. } => header.uncompressed_size,
        }
    }
}

/// A new bundle holding some entries of the base, laid out as the original writer did.
#[derive(Debug, Clone)]
pub(crate) struct Compact {
    /// The new table.
    pub(crate) table: Vec<u8>,
    /// `(new offset, base offset, size)` of each kept entry with bytes, by new offset.
    pub(crate) pieces: Vec<(u64, u64, u64)>,
    /// The new offset of each kept entry.
    pub(crate) offsets: Vec<u64>,
    /// Size of the new bundle.
    pub(crate) len: u64,
}

/// The bundle a new container holds.
#[derive(Debug, Clone)]
pub(crate) struct Inner {
    pub(crate) base: Base,
    /// `None`: the base as it is.
    pub(crate) compact: Option<Compact>,
}

impl Inner {
    pub(crate) fn len(&self) -> u64 {
        self.compact.as_ref().map_or(self.base.len(), |c| c.len)
    }

    /// Its bytes, in order.
    pub(crate) fn reader<'a>(&'a self, input: Input<'a>, limits: Limits) -> InnerReader<'a> {
        InnerReader {
            inner: self,
            base: BaseReader::new(self.base, input, limits),
            pos: 0,
        }
    }
}

/// The decompressed bytes of a CCOB, or a file range, read at increasing offsets (a CCOB read
/// at an offset before the last one starts decompressing again).
pub(crate) struct BaseReader<'a> {
    base: Base,
    input: Input<'a>,
    limits: Limits,
    stream: Option<ccob::Stream<'a>>,
}

impl<'a> BaseReader<'a> {
    pub(crate) fn new(base: Base, input: Input<'a>, limits: Limits) -> Self {
        BaseReader {
            base,
            input,
            limits,
            stream: None,
        }
    }

    /// Fills `buf` from `offset` of the base.
    pub(crate) fn read_exact_at(&mut self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        match self.base {
            Base::File { offset: at, len } => {
                let end = offset
                    .checked_add(buf.len() as u64)
                    .ok_or_else(|| eof(offset))?;
                if end > len {
                    return Err(eof(at + offset));
                }
                self.input.read_exact_at(buf, at + offset)
            }
            Base::Ccob {
                offset: at,
                len,
                header,
            } => {
                if self.stream.as_ref().is_none_or(|s| s.position() > offset) {
                    ccob::check_ceiling(&header, self.limits.max_decompressed).map_err(invalid)?;
                    let payload = rocpack_offload::ReadAtRange::new(
                        self.input,
                        at + header.header_size,
                        len.saturating_sub(header.header_size),
                    );
                    let reader: Box<dyn BufRead + 'a> =
                        Box::new(BufReader::with_capacity(1 << 16, payload));
                    self.stream = Some(
                        ccob::Stream::new(header.method, reader, header.uncompressed_size)
                            .map_err(invalid)?,
                    );
                }
                let s = self.stream.as_mut().ok_or_else(|| eof(offset))?;
                s.skip_to(offset).map_err(invalid)?;
                let n = s.read_full(buf).map_err(invalid)?;
                if n < buf.len() {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "the compressed bundle at byte {at} ends after {} bytes",
                            s.position()
                        ),
                    ));
                }
                Ok(())
            }
        }
    }

    /// For a CCOB base: whether the stream ends exactly at its declared size.
    fn check_end(&mut self) -> io::Result<()> {
        if let (Base::Ccob { header, .. }, Some(s)) = (self.base, self.stream.as_mut()) {
            let mut probe = [0u8; 1];
            if s.read_full(&mut probe).map_err(invalid)? != 0
                || s.position() != header.uncompressed_size
            {
                return Err(invalid(format!(
                    "decompressed to {} bytes, header declares {}",
                    s.position(),
                    header.uncompressed_size
                )));
            }
        }
        Ok(())
    }
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}

/// An [`Inner`] bundle's bytes, in order.
pub(crate) struct InnerReader<'a> {
    inner: &'a Inner,
    base: BaseReader<'a>,
    pos: u64,
}

impl InnerReader<'_> {
    /// Fills `buf` with the next bytes; fewer only at the end.
    pub(crate) fn read_next(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let len = self.inner.len();
        let n = (len - self.pos).min(buf.len() as u64) as usize;
        let out = buf.get_mut(..n).unwrap_or_default();
        match &self.inner.compact {
            None => self.base.read_exact_at(out, self.pos)?,
            Some(c) => {
                out.fill(0);
                let (start, end) = (self.pos, self.pos + n as u64);
                copy_overlap(out, start, &c.table, 0);
                for &(new, old, size) in &c.pieces {
                    let (s, e) = (new.max(start), (new + size).min(end));
                    if s < e {
                        let dst = out
                            .get_mut((s - start) as usize..(e - start) as usize)
                            .unwrap_or_default();
                        self.base.read_exact_at(dst, old + (s - new))?;
                    }
                }
            }
        }
        self.pos += n as u64;
        if self.pos == len && self.inner.compact.is_none() {
            self.base.check_end()?;
        }
        Ok(n)
    }
}

/// Copies the part of `src` (which starts at `src_at`) that overlaps `out` (which starts at
/// `out_at`).
fn copy_overlap(out: &mut [u8], out_at: u64, src: &[u8], src_at: u64) {
    let s = out_at.max(src_at);
    let e = (out_at + out.len() as u64).min(src_at + src.len() as u64);
    if s < e {
        if let (Some(d), Some(from)) = (
            out.get_mut((s - out_at) as usize..(e - out_at) as usize),
            src.get((s - src_at) as usize..(e - src_at) as usize),
        ) {
            d.copy_from_slice(from);
        }
    }
}

/// What a new container is.
#[derive(Debug, Clone)]
pub(crate) enum Output {
    /// Known bytes: the shorter table of a bundle stripped in place.
    Table(Vec<u8>),
    /// An uncompressed bundle.
    Plain(Inner),
    /// A CCOB of a bundle.
    Ccob { inner: Inner, settings: Compression },
}

impl Output {
    pub(crate) fn inner(&self) -> Option<&Inner> {
        match self {
            Output::Table(_) => None,
            Output::Plain(i) | Output::Ccob { inner: i, .. } => Some(i),
        }
    }

    /// Whether writing it decodes nothing of the original (a table, or a bundle of the
    /// original's bytes, compressed or not).
    pub(crate) fn only_compresses(&self) -> bool {
        self.inner()
            .is_none_or(|i| matches!(i.base, Base::File { .. }))
    }

    /// The memory compressing or decompressing it takes ([`window_cost`]).
    pub(crate) fn cost(&self) -> u64 {
        let Some(i) = self.inner() else { return 0 };
        let mut c = 0;
        if matches!(self, Output::Ccob { .. }) {
            c += window_cost(i.len());
        }
        if let Base::Ccob { header, .. } = i.base {
            c += window_cost(header.uncompressed_size);
        }
        c
    }
}

/// A container written.
#[derive(Debug, Clone, Default)]
pub(crate) struct Produced {
    /// Its size.
    pub(crate) size: u64,
    /// The most bytes written at its offset (more than `size` when a first attempt was longer).
    pub(crate) written: u64,
    /// A CCOB's hash field.
    pub(crate) hash: Option<u64>,
    /// Things worth knowing.
    pub(crate) notes: Vec<String>,
}

/// Why a container could not be written.
#[derive(Debug)]
pub(crate) enum ProduceError {
    /// It does not fit in its room.
    TooLarge,
    /// Reading, compressing or writing failed.
    Io(io::Error),
}

impl From<io::Error> for ProduceError {
    fn from(e: io::Error) -> Self {
        ProduceError::Io(e)
    }
}

/// Writes bytes at `at` of a sink, refusing to pass `room`, and watches for the CCOB magic in
/// what it writes after the header.
struct Placed<'s> {
    sink: &'s dyn Sink,
    at: u64,
    pos: u64,
    room: u64,
    tail: [u8; 3],
    magic_at: Option<u64>,
}

impl Write for Placed<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let end = self.pos + buf.len() as u64;
        if end > self.room {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "no room"));
        }
        if self.magic_at.is_none() {
            // Across the end of the last write, then in this one.
            let head = buf.get(..buf.len().min(3)).unwrap_or_default();
            let mut joined = [0u8; 6];
            let (t, h) = joined.split_at_mut(3);
            t.copy_from_slice(&self.tail);
            h.iter_mut().zip(head).for_each(|(d, s)| *d = *s);
            let joined = joined.get(..3 + head.len()).unwrap_or_default();
            let found = memchr::memmem::find(joined, ccob::MAGIC)
                .map(|p| self.pos + p as u64 - 3)
                .or_else(|| memchr::memmem::find(buf, ccob::MAGIC).map(|p| self.pos + p as u64));
            self.magic_at = found;
            let keep = buf.len().min(3);
            self.tail.rotate_left(keep);
            if let (Some(dst), Some(src)) =
                (self.tail.get_mut(3 - keep..), buf.get(buf.len() - keep..))
            {
                dst.copy_from_slice(src);
            }
        }
        self.sink.put_at(buf, self.at + self.pos)?;
        self.pos = end;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The hashes of the new CCOBs among `outputs`, computed before they are compressed: MD5 runs
/// at one stream's latency, and [`ccob::hash_each`] runs [`rocpack_offload::md5::LANES`]
/// streams at once in about half the time per byte. Only bundles that are ranges of the
/// original file are hashed here (reading them again costs a copy from the page cache; a
/// compressed base would be decompressed twice), and only when there are enough to fill lanes.
/// One so large that it would hold its lane long after the others end (more than its share of
/// all lanes of all threads, and more than 8 MiB) is hashed alone, beside the lanes, so that its compression does
/// not also wait for its hash. `None`: hashed while compressed, as is every bundle of a thread
/// whose reading failed (the compression then reports the error).
///
/// The hash is read in one pass and the bytes compressed in another, and the check reads them a
/// third time: if the original changed between the first two reads and not after, the hash
/// would not be the compressed bundle's. As against every other change to the original during a
/// rewrite, the guard is its size, modification time and inode, compared before the rename.
pub(crate) fn hashes_ahead(
    outputs: &[&Output],
    input: Input<'_>,
    limits: Limits,
) -> Vec<Option<u64>> {
    use rayon::prelude::*;
    let lanes = rocpack_offload::md5::LANES as u64;
    let mut cheap: Vec<(u64, usize)> = outputs
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match o {
            Output::Ccob { inner, .. } if matches!(inner.base, Base::File { .. }) => {
                Some((inner.len(), i))
            }
            _ => None,
        })
        .collect();
    let mut out = vec![None; outputs.len()];
    // Lanes run no faster than one stream until four are busy: at least four bundles a thread.
    let threads = rayon::current_num_threads().min(cheap.len() / 4);
    if threads == 0 {
        return out;
    }
    cheap.sort_by_key(|&(len, i)| (std::cmp::Reverse(len), i));
    // A bundle of a few MiB delays the others by milliseconds at most, wherever it is hashed.
    let share = (cheap.iter().map(|c| c.0).sum::<u64>() / (threads as u64 * lanes)).max(8 << 20);
    // Each thread's bundles hashed alone and in lanes, with its time in lane-bytes (a stream
    // alone takes about twice as long per byte): the largest first, each to the least busy.
    let mut work: Vec<(u64, Vec<usize>, Vec<usize>)> = vec![(0, Vec::new(), Vec::new()); threads];
    for (len, i) in cheap {
        if let Some(w) = work.iter_mut().min_by_key(|w| w.0) {
            if len > share {
                w.0 += 2 * len;
                w.1.push(i);
            } else {
                w.0 += len;
                w.2.push(i);
            }
        }
    }
    let hash = |members: &[usize]| -> Vec<(usize, u64)> {
        let (indices, sources): (Vec<usize>, Vec<_>) = members
            .iter()
            .filter_map(|&i| {
                let mut r = outputs.get(i)?.inner()?.reader(input, limits);
                Some((i, move |buf: &mut [u8]| r.read_next(buf)))
            })
            .unzip();
        let hashes = ccob::hash_each(sources).unwrap_or_default();
        indices.into_iter().zip(hashes).collect()
    };
    let done: Vec<(usize, u64)> = work
        .par_iter()
        .with_max_len(1)
        .flat_map_iter(|(_, alone, in_lanes)| {
            let mut done: Vec<(usize, u64)> = alone.iter().flat_map(|&i| hash(&[i])).collect();
            done.extend(hash(in_lanes));
            done
        })
        .collect();
    for (i, h) in done {
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(h);
        }
    }
    out
}

/// Writes `out` at `at` of `sink`, in at most `room` bytes (`u64::MAX`: the whole file). A new
/// CCOB's `hash`, when it is known ([`hashes_ahead`]), is not computed again.
pub(crate) fn produce(
    out: &Output,
    input: Input<'_>,
    sink: &dyn Sink,
    at: u64,
    room: u64,
    limits: Limits,
    hash: Option<u64>,
) -> Result<Produced, ProduceError> {
    let mut buf = vec![0u8; CHUNK];
    match out {
        Output::Table(head) => {
            if head.len() as u64 > room {
                return Err(ProduceError::TooLarge);
            }
            sink.put_at(head, at)?;
            Ok(Produced {
                size: head.len() as u64,
                written: head.len() as u64,
                ..Produced::default()
            })
        }
        Output::Plain(inner) => {
            if inner.len() > room {
                return Err(ProduceError::TooLarge);
            }
            let mut r = inner.reader(input, limits);
            let mut pos = 0u64;
            loop {
                let n = r.read_next(&mut buf)?;
                if n == 0 {
                    break;
                }
                sink.put_at(buf.get(..n).unwrap_or_default(), at + pos)?;
                pos += n as u64;
            }
            Ok(Produced {
                size: pos,
                written: pos,
                ..Produced::default()
            })
        }
        Output::Ccob { inner, settings } => produce_ccob(
            inner, *settings, input, sink, at, room, limits, hash, &mut buf,
        ),
    }
}

/// A version 1 CCOB cannot say how long it is; a bundle that could not compress below 4 GiB
/// needs version 3 (version 2 stores both sizes in 32 bits, and the compressed size is not known
/// before compressing).
pub(crate) fn version_for(settings: Compression, len: u64) -> u16 {
    settings
        .version
        .unwrap_or(if len > u64::from(u32::MAX) - (1 << 20) {
            3
        } else {
            2
        })
}

/// Compresses as clang does. Tools that find the next CCOB by searching for its magic (LLVM's
/// `--list` and `llvm-objdump --offloading` before LLVM PR 206745) cut a bundle short where the
/// compressed bytes happen to contain "CCOB"; a payload that does is compressed again at the
/// next levels, and a note says so if it still does.
#[allow(clippy::too_many_arguments)]
fn produce_ccob(
    inner: &Inner,
    settings: Compression,
    input: Input<'_>,
    sink: &dyn Sink,
    at: u64,
    room: u64,
    limits: Limits,
    known_hash: Option<u64>,
    buf: &mut [u8],
) -> Result<Produced, ProduceError> {
    let version = version_for(settings, inner.len());
    let header_len = ccob::header_len(version);
    let mut produced = Produced::default();
    // Hashed once: a second attempt at the next level compresses the same bytes.
    let mut known_hash = known_hash;
    for (attempt, level) in (settings.level()..).take(3).enumerate() {
        let placed = Placed {
            sink,
            at: at + header_len,
            pos: 0,
            room: room.saturating_sub(header_len),
            tail: [0; 3],
            magic_at: None,
        };
        let mut enc = ccob::Encoder::new(placed, settings.method, level, inner.len())?;
        let mut hasher = known_hash.is_none().then(ccob::Hasher::default);
        let mut r = inner.reader(input, limits);
        let written = loop {
            let n = r.read_next(buf)?;
            if n == 0 {
                break enc.finish();
            }
            let piece = buf.get(..n).unwrap_or_default();
            if let Some(h) = hasher.as_mut() {
                h.update(piece);
            }
            if let Err(e) = enc.write_all(piece) {
                break Err(e);
            }
        };
        let placed = match written {
            Ok(p) => p,
            Err(e) if e.kind() == io::ErrorKind::StorageFull => {
                return Err(ProduceError::TooLarge);
            }
            Err(e) => return Err(ProduceError::Io(e)),
        };
        let hash = match hasher {
            Some(h) => h.finish(),
            None => known_hash.unwrap_or_default(),
        };
        known_hash = Some(hash);
        let head = ccob::header(version, settings.method, placed.pos, inner.len(), hash)?;
        sink.put_at(&head, at)?;
        produced.size = header_len + placed.pos;
        produced.written = produced.written.max(produced.size);
        produced.hash = Some(hash);
        let Some(magic) = placed.magic_at else {
            if attempt > 0 {
                produced.notes.push(format!(
                    "compressed at level {level}: at level {} the compressed bytes contained \
                     \"CCOB\", which tools that scan for the magic would take for a new bundle",
                    settings.level()
                ));
            }
            return Ok(produced);
        };
        if attempt == 2 || (settings.method == Method::Zlib && level >= 9) || level >= 22 {
            produced.notes.push(format!(
                "the compressed bytes contain \"CCOB\" at payload offset {magic}; tools that find \
                 bundles by scanning for the magic instead of reading the size field may cut \
                 this bundle short"
            ));
            return Ok(produced);
        }
    }
    Err(ProduceError::Io(io::Error::other("cannot compress")))
}

/// What the container at `at` of the new file must be, and the entries its bundle must list.
pub(crate) struct Intent<'p> {
    pub(crate) output: &'p Output,
    pub(crate) form: Form,
    pub(crate) size: u64,
    pub(crate) hash: Option<u64>,
    /// `(stored ID, offset in the bundle, size)` of each entry, in order.
    pub(crate) entries: Vec<(&'p [u8], u64, u64)>,
}

/// Checks the container at `at` of `new` against `intent`: its form and size, its header, its
/// bundle's table (read from the new bytes), and every byte of its bundle against the same
/// bundle made again from the original. Reads the new file's bytes only; does not trust
/// anything the writer did.
pub(crate) fn check(
    intent: &Intent<'_>,
    new: Input<'_>,
    at: u64,
    old: Input<'_>,
    limits: Limits,
) -> Result<(), String> {
    let io = |e: io::Error| e.to_string();
    let Some(inner) = intent.output.inner() else {
        if let Output::Table(head) = intent.output {
            let mut got = vec![0u8; head.len()];
            new.read_exact_at(&mut got, at).map_err(io)?;
            if &got != head {
                return Err("the new bundle table is not the planned one".into());
            }
        }
        return Ok(());
    };
    let mut stream = match intent.form {
        Form::Bundle => BaseReader::new(
            Base::File {
                offset: at,
                len: intent.size,
            },
            new,
            limits,
        ),
        Form::Ccob { version, method } => {
            let mut head = [0u8; 32];
            let n = (ccob::header_len(version) as usize).min(intent.size as usize);
            new.read_exact_at(head.get_mut(..n).unwrap_or_default(), at)
                .map_err(io)?;
            let h = CcobHeader::parse_within(head.get(..n).unwrap_or_default(), intent.size)
                .map_err(|e| format!("new CCOB: {e}"))?;
            if (h.version, h.method) != (version, method) {
                return Err(format!(
                    "new CCOB is v{} {}, v{version} {} was intended",
                    h.version,
                    h.method.name(),
                    method.name()
                ));
            }
            if h.total_size != Some(intent.size) {
                return Err(format!(
                    "new CCOB declares {:?} bytes in all, it takes {}",
                    h.total_size, intent.size
                ));
            }
            // The hash the writer computed over the intended bundle (`hashes_ahead`, or while
            // compressing): not recomputed here from the bytes read back.
            if Some(h.hash) != intent.hash {
                return Err("new CCOB's hash field is not the MD5 of the intended bundle".into());
            }
            if h.uncompressed_size != inner.len() {
                return Err(format!(
                    "new CCOB declares {} bytes of bundle, {} were intended",
                    h.uncompressed_size,
                    inner.len()
                ));
            }
            BaseReader::new(
                Base::Ccob {
                    offset: at,
                    len: intent.size,
                    header: h,
                },
                new,
                Limits {
                    max_decompressed: limits.max_decompressed.max(h.uncompressed_size),
                },
            )
        }
    };
    // Every byte, against the bundle made again from the original; the table as read back.
    let table_len = 32
        + intent
            .entries
            .iter()
            .map(|(id, _, _)| 24 + id.len() as u64)
            .sum::<u64>();
    let mut table = Vec::new();
    let mut intended = inner.reader(old, limits);
    let (mut got, mut want) = (vec![0u8; CHUNK], vec![0u8; CHUNK]);
    let mut pos = 0u64;
    loop {
        let n = intended.read_next(&mut want).map_err(io)?;
        if n == 0 {
            break;
        }
        let g = got.get_mut(..n).unwrap_or_default();
        stream
            .read_exact_at(g, pos)
            .map_err(|e| format!("new {}: {e}", intent.form))?;
        if g != want.get(..n).unwrap_or_default() {
            let off = g.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0) as u64;
            return Err(format!(
                "the new bundle differs from the intended one at its byte {}",
                pos + off
            ));
        }
        if (table.len() as u64) < table_len {
            let more = (table_len - table.len() as u64).min(n as u64) as usize;
            table.extend_from_slice(g.get(..more).unwrap_or_default());
        }
        pos += n as u64;
    }
    stream
        .check_end()
        .map_err(|e| format!("new {}: {e}", intent.form))?;
    let header =
        bundle::parse_header(&table, inner.len()).map_err(|e| format!("new bundle: {e}"))?;
    if header.entries.len() != intent.entries.len() {
        return Err(format!(
            "new bundle has {} entries, {} were intended",
            header.entries.len(),
            intent.entries.len()
        ));
    }
    for (e, (id, offset, size)) in header.entries.iter().zip(&intent.entries) {
        let stored = table
            .get(e.id_offset as usize..(e.id_offset + e.id_len) as usize)
            .unwrap_or_default();
        if stored != *id || e.size != *size || (e.size > 0 && e.offset != *offset) {
            return Err(format!(
                "entry #{} is {} ({} bytes at {}), {} ({size} bytes at {offset}) was intended",
                e.index,
                e.id.raw(),
                e.size,
                e.offset,
                String::from_utf8_lossy(id),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// Every item runs once, the results come back in the items' order, and the items in
    /// flight never cost more than the budget together (but for one that costs more, alone).
    #[test]
    fn bounded_par_stays_within_the_budget_in_both_orders() {
        use std::sync::atomic::{AtomicU64, Ordering};
        const MIB: u64 = 1 << 20;
        let mut costs: Vec<u64> = (0..60).map(|i| (i * 37 % 23) * MIB).collect();
        costs.extend([144 * MIB, 92 * MIB, 83 * MIB, 200 * MIB]);
        for others in [Others::Cheapest, Others::LargestFit] {
            let in_flight = AtomicU64::new(0);
            let most = AtomicU64::new(0);
            let out = bounded_par(
                &costs,
                |&c| c,
                others,
                |&c| {
                    let now = in_flight.fetch_add(c, Ordering::SeqCst) + c;
                    most.fetch_max(now, Ordering::SeqCst);
                    // The 200 MiB item, over the budget, has only items that cost nothing beside it.
                    assert!(now <= WINDOW_BUDGET || now == 200 * MIB, "{now} in flight");
                    std::thread::sleep(std::time::Duration::from_millis(c / MIB / 8));
                    in_flight.fetch_sub(c, Ordering::SeqCst);
                    c
                },
            );
            assert_eq!(out, costs, "{others:?}");
            assert_eq!(most.load(Ordering::SeqCst), 200 * MIB, "{others:?}");
        }
    }

    #[test]
    fn each_worker_takes_its_end_of_the_queue() {
        use rocpack_bytes::Pick;
        let queue = || std::collections::VecDeque::from([(144, 0), (92, 1), (15, 2), (3, 3)]);
        let took = |first, others, room| match next_item(&mut queue(), first, others, room, 160) {
            Pick::Took(c, i) => Some((c, i)),
            Pick::Wait => None,
            Pick::Done => Some((0, usize::MAX)),
        };
        for others in [Others::Cheapest, Others::LargestFit] {
            assert_eq!(took(true, others, u64::MAX), Some((144, 0)));
            assert_eq!(
                took(true, others, 100),
                None,
                "the first waits for the costliest"
            );
            assert_eq!(took(false, others, 2), None);
        }
        assert_eq!(took(false, Others::Cheapest, 100), Some((3, 3)));
        assert_eq!(took(false, Others::LargestFit, 100), Some((92, 1)));
        assert_eq!(took(false, Others::LargestFit, 16), Some((15, 2)));
        let mut empty = std::collections::VecDeque::new();
        assert!(matches!(
            next_item(&mut empty, false, Others::Cheapest, 1, 160),
            Pick::Done
        ));
        // Over the whole budget: the others leave room for it to run alone, first.
        let mut over = std::collections::VecDeque::from([(200, 0), (3, 1)]);
        for others in [Others::Cheapest, Others::LargestFit] {
            for room in [u64::MAX, 100] {
                assert!(matches!(
                    next_item(&mut over, false, others, room, 160),
                    Pick::Wait
                ));
            }
        }
        assert!(matches!(
            next_item(&mut over, true, Others::Cheapest, u64::MAX, 160),
            Pick::Took(200, 0)
        ));
        assert!(matches!(
            next_item(&mut over, false, Others::Cheapest, 0, 160),
            Pick::Wait
        ));
    }

    fn placed() -> Placed<'static> {
        Placed {
            sink: &Discard,
            at: 0,
            pos: 0,
            room: u64::MAX,
            tail: [0; 3],
            magic_at: None,
        }
    }

    /// The first "CCOB" in what was written, wherever the writes split it.
    #[test]
    fn the_magic_is_found_across_writes_of_any_size() {
        for at in [0usize, 1, 5, 62, 63, 64, 65, 127, 200] {
            let mut data = vec![b'C'; 256]; // "CCC…" holds no "CCOB" until one is placed
            data[at..at + 4].copy_from_slice(b"CCOB");
            data[at + 100.min(251 - at)..][..4].copy_from_slice(b"CCOB"); // a second one
            for piece in [1usize, 2, 3, 4, 5, 64, 256] {
                let mut p = placed();
                for chunk in data.chunks(piece) {
                    p.write_all(chunk).unwrap();
                }
                assert_eq!(p.magic_at, Some(at as u64), "at {at}, pieces of {piece}");
            }
        }
        let mut p = placed();
        for chunk in b"CCO".iter().chain(b"bCCOx") {
            p.write_all(std::slice::from_ref(chunk)).unwrap();
        }
        assert_eq!(p.magic_at, None);
    }
}
