//! What a rewrite will do to one file, computed from its bytes before anything is written.
//!
//! A bundle or compressed bundle (CCOB) that is the whole file is rewritten compactly. One that
//! sits inside a larger file (a host ELF's `.hip_fatbin`, an archive member) is rewritten in
//! its *slot*: the bytes from its start to its end plus the zeros that follow it, up to the next
//! bundle or the end of its section. Nothing outside a slot moves or changes; inside it, the
//! new container starts where the old one did, and every byte it does not use becomes zero.

use std::sync::Arc;

use rocpack_bytes::Bytes;
use rocpack_offload::bundle::{self, BundleHeader};
use rocpack_offload::ccob::{self, CcobHeader, Method};
use rocpack_offload::{Container, ContainerKind, EntryId, Options, Severity};
use serde::Serialize;

use crate::keep::{EntryFacts, Keep, Reason};

/// How a bundle is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "form", rename_all = "kebab-case")]
pub enum Form {
    /// An uncompressed `__CLANG_OFFLOAD_BUNDLE__`.
    Bundle,
    /// A CCOB.
    Ccob {
        /// Format version.
        version: u16,
        /// Compression method.
        method: Method,
    },
}

impl std::fmt::Display for Form {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Form::Bundle => f.write_str("uncompressed"),
            Form::Ccob { version, method } => write!(f, "ccob v{version} {}", method.name()),
        }
    }
}

/// How to compress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compression {
    /// zstd (the default, as clang's) or zlib.
    pub method: Method,
    /// Level; `None` for clang's default (zstd 3 with long-distance matching, zlib 6).
    pub level: Option<i32>,
    /// CCOB version; `None` chooses v2, or v3 when the sizes need 64 bits.
    pub version: Option<u16>,
}

impl Default for Compression {
    fn default() -> Self {
        Compression {
            method: Method::Zstd,
            level: None,
            version: None,
        }
    }
}

impl Compression {
    /// The level used.
    pub fn level(&self) -> i32 {
        self.level.unwrap_or(match self.method {
            Method::Zstd => 3,
            Method::Zlib => 6,
        })
    }
}

/// What to do to every bundle.
#[derive(Debug, Clone, Copy)]
pub enum Operation<'a> {
    /// Keep only the entries these GPUs load. A compressed bundle is decompressed, stripped
    /// and compressed again with its own version and method.
    Strip(&'a Keep),
    /// Compress uncompressed bundles.
    Compress(Compression),
    /// Decompress compressed bundles.
    Decompress,
}

/// One entry of a rewritten bundle.
#[derive(Debug, Clone, Serialize)]
pub struct EntryChange {
    /// The stored ID.
    pub id: String,
    /// Canonical target ID, when known.
    pub target: Option<String>,
    /// Size in bytes.
    pub size: u64,
    /// Why it stays or goes.
    pub reason: Reason,
}

/// Where the bytes of an entry the new container must hold come from.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// The original file, at this offset.
    File(u64),
    /// A decompressed bundle, at this offset.
    Buffer(Arc<Vec<u8>>, u64),
}

/// An entry the new container must hold, in order.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    pub(crate) id: Vec<u8>,
    pub(crate) size: u64,
    pub(crate) source: Source,
}

/// One bundle rewritten.
#[derive(Debug, Clone, Serialize)]
pub struct Rewrite {
    /// File offset of the bundle (and of its replacement).
    pub offset: u64,
    /// `bundle #3`, `ccob v2 zstd`, ...
    pub label: String,
    /// Bytes the old container took.
    pub old_size: u64,
    /// Bytes the new one takes.
    pub new_size: u64,
    /// Bytes available in place: the old container and the zeros after it.
    pub slot: u64,
    /// Storage before.
    pub before: Form,
    /// Storage after.
    pub after: Form,
    /// Every entry of the old bundle, with what happens to it (strip), or every entry (compress,
    /// decompress).
    pub entries: Vec<EntryChange>,
    /// Things worth knowing about the new container.
    pub notes: Vec<String>,
    /// Bytes written at `offset` (shared with the decompressed source when decompressing).
    #[serde(skip)]
    pub(crate) head: Arc<Vec<u8>>,
    /// For a new CCOB: the bundle it must decompress to (empty: the old bundle in the original
    /// file) and the hash written for it.
    #[serde(skip)]
    pub(crate) inner: Option<(Arc<Vec<u8>>, u64)>,
    /// Absolute file ranges inside the slot that keep their bytes (kept code objects).
    #[serde(skip)]
    pub(crate) keep: Vec<(u64, u64)>,
    /// What the new container must hold.
    #[serde(skip)]
    pub(crate) expect: Vec<Expected>,
}

impl Rewrite {
    /// Bytes of device code dropped (strip).
    pub fn dropped_bytes(&self) -> u64 {
        self.entries
            .iter()
            .filter(|e| !e.reason.keeps())
            .map(|e| e.size)
            .sum()
    }
}

/// A container left as it is, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skip {
    /// File offset, when the container lies in the file's bytes.
    pub offset: Option<u64>,
    /// What it is.
    pub label: String,
    /// Why it is left alone.
    pub reason: String,
    /// Whether this is an error (the operation was asked for and cannot be done) rather than
    /// nothing to do.
    pub error: bool,
}

/// Everything a rewrite of one file will do.
#[derive(Debug, Clone, Serialize)]
pub struct FilePlan {
    /// Size of the file now.
    pub old_len: u64,
    /// Size after.
    pub new_len: u64,
    /// The file is one bundle or CCOB, rewritten compactly.
    pub whole: bool,
    /// Bundles rewritten.
    pub rewrites: Vec<Rewrite>,
    /// Containers left alone.
    pub skipped: Vec<Skip>,
    /// Bundles found (rewritten or not).
    pub bundles: usize,
    /// A bare code object file: its target, and whether a kept GPU would load it (strip).
    pub code_object: Option<(String, bool)>,
}

/// Ranges of a file rewritten in place, and what fills them.
pub(crate) struct Layout<'a> {
    /// `[start, end)` ranges that keep the original's bytes.
    pub(crate) copy: Vec<(u64, u64)>,
    /// The rewrites, in file order: each writes its head at its offset.
    pub(crate) heads: Vec<&'a Rewrite>,
    /// `[start, end)` ranges that become zero.
    pub(crate) zero: Vec<(u64, u64)>,
}

/// The whole pages inside `[start, end)`: what can become a hole.
pub(crate) fn whole_pages(start: u64, end: u64) -> Option<(u64, u64)> {
    let (first, last) = (start.next_multiple_of(4096), end - end % 4096);
    (last > first).then_some((first, last))
}

impl FilePlan {
    /// How the new file is made from the old one when it is rewritten in place (not `whole`).
    pub(crate) fn layout(&self) -> Layout<'_> {
        let mut heads: Vec<&Rewrite> = self.rewrites.iter().collect();
        heads.sort_by_key(|r| r.offset);
        let mut copy = Vec::new();
        let mut zero = Vec::new();
        let mut pos = 0u64;
        for r in &heads {
            if r.offset > pos {
                copy.push((pos, r.offset));
            }
            let mut at = r.offset + r.head.len() as u64;
            let mut keep = r.keep.clone();
            keep.sort_unstable();
            for (s, e) in keep {
                if s > at {
                    zero.push((at, s));
                }
                copy.push((s.max(at), e));
                at = at.max(e);
            }
            let end = r.offset + r.slot;
            if end > at {
                zero.push((at, end));
            }
            pos = end;
        }
        if self.old_len > pos {
            copy.push((pos, self.old_len));
        }
        copy.retain(|(s, e)| e > s);
        Layout { copy, heads, zero }
    }

    /// Bytes the rewrite turns into holes: the whole pages of the ranges that become zero (for a
    /// compact rewrite, the bytes by which the file shrinks).
    pub fn deallocated_estimate(&self) -> u64 {
        if self.whole {
            return self.old_len.saturating_sub(self.new_len);
        }
        self.layout()
            .zero
            .iter()
            .filter_map(|&(s, e)| whole_pages(s, e))
            .map(|(a, b)| b - a)
            .sum()
    }

    /// Whether the file changes.
    pub fn changes(&self) -> bool {
        !self.rewrites.is_empty()
    }

    /// Whether anything asked for could not be done.
    pub fn has_errors(&self) -> bool {
        self.skipped.iter().any(|s| s.error)
    }
}

/// Why a file cannot be planned at all: it does not parse.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{container} at byte {offset}: {message}")]
pub struct PlanError {
    /// The container that is wrong.
    pub container: String,
    /// Byte offset in the file (or in the container's decompressed data).
    pub offset: u64,
    /// What is wrong.
    pub message: String,
}

/// Limits for planning.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest bundle a CCOB may decompress to.
    pub max_decompressed: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_decompressed: rocpack_offload::DEFAULT_MAX_DECOMPRESSED,
        }
    }
}

/// Plans `op` on a file's bytes. Nothing is written.
///
/// # Errors
/// [`PlanError`] when the file has a malformed container (the file must then be left alone).
pub fn plan(data: &[u8], op: Operation<'_>, limits: Limits) -> Result<FilePlan, PlanError> {
    let opts = Options {
        metadata: false,
        decompress: false,
        max_decompressed: limits.max_decompressed,
        thin_loader: None,
        file: None,
    };
    let inspection = rocpack_offload::inspect(data, &opts);
    if let Some(d) = inspection
        .diagnostics
        .iter()
        .find(|d| d.severity == Severity::Error)
    {
        return Err(PlanError {
            container: d
                .container
                .and_then(|c| inspection.containers.get(c))
                .map_or_else(|| "file".to_owned(), Container::label),
            offset: d.offset.unwrap_or(0),
            message: d.message.clone(),
        });
    }
    let len = data.len() as u64;
    let mut out = FilePlan {
        old_len: len,
        new_len: len,
        whole: false,
        rewrites: Vec::new(),
        skipped: Vec::new(),
        bundles: 0,
        code_object: None,
    };
    let containers = &inspection.containers;
    if containers.is_empty() {
        if let (Some(co), Operation::Strip(keep)) = (inspection.code_objects.first(), op) {
            if let Some(t) = &co.target {
                let facts = EntryFacts::new(
                    EntryId::parse(&format!("hipv4-amdgcn-amd-amdhsa--{t}")),
                    data,
                );
                let used = keep.decide(&[facts], false).first() == Some(&Reason::Loaded);
                out.code_object = Some((t.to_string(), used));
            }
        }
        return Ok(out);
    }

    let targets: Vec<&Container> = containers
        .iter()
        .filter(|c| {
            matches!(
                c.kind,
                ContainerKind::Bundle { .. } | ContainerKind::Ccob { .. }
            ) && c.file_offset.is_some()
        })
        .collect();
    for c in containers {
        match c.kind {
            ContainerKind::OffloadSections => out.skipped.push(Skip {
                offset: c.file_offset,
                label: c.label(),
                reason: "per-target -fgpu-rdc sections are not bundles; left as they are".into(),
                error: false,
            }),
            ContainerKind::OffloadBinary { .. } if c.file_offset.is_some() => {
                out.skipped.push(Skip {
                    offset: c.file_offset,
                    label: c.label(),
                    reason: "LLVM OffloadBinary (new offload driver object) is not a bundle; left as it is"
                        .into(),
                    error: false,
                });
            }
            ContainerKind::Archive { thin: true } => out.skipped.push(Skip {
                offset: c.file_offset,
                label: c.label(),
                reason: "a thin archive's members are other files; rewrite those".into(),
                error: false,
            }),
            _ => {}
        }
    }
    out.bundles = targets.len();

    let results: Vec<Result<Option<Rewrite>, Skip>> = {
        use rayon::prelude::*;
        targets
            .par_iter()
            .map(|c| {
                let place = slot_of(c, containers, data)?;
                rewrite_one(data, c, place, op, limits)
            })
            .collect()
    };
    for r in results {
        match r {
            Ok(Some(rw)) => out.rewrites.push(rw),
            Ok(None) => {}
            Err(skip) => out.skipped.push(skip),
        }
    }
    // A bundle inside another's entry is rewritten with it.
    out.rewrites.sort_by_key(|r| r.offset);
    let mut end = 0;
    out.rewrites.retain(|r| {
        let inside = r.offset < end;
        end = end.max(r.offset + r.slot);
        !inside
    });
    out.whole = out.rewrites.len() == 1
        && out
            .rewrites
            .first()
            .is_some_and(|r| r.offset == 0 && r.old_size == len && targets.len() == 1);
    if out.whole {
        if let Some(r) = out.rewrites.first_mut() {
            r.slot = r.new_size;
            r.keep.clear();
            out.new_len = r.new_size;
        }
    }
    Ok(out)
}

/// Where a container lies: its offset, its size and its slot.
#[derive(Debug, Clone, Copy)]
struct Place {
    offset: u64,
    size: u64,
    slot: u64,
    whole: bool,
}

fn slot_of(c: &Container, all: &[Container], data: &[u8]) -> Result<Place, Skip> {
    let offset = c.file_offset.unwrap_or(0);
    let skip = |reason: String| Skip {
        offset: Some(offset),
        label: c.label(),
        reason,
        error: true,
    };
    let size = match (&c.kind, c.size) {
        (_, Some(s)) => s,
        (ContainerKind::Ccob { .. }, None) => {
            let rest = data.get(offset as usize..).unwrap_or_default();
            let h = CcobHeader::parse(rest).map_err(|e| skip(e.to_string()))?;
            let payload = ccob::v1_payload_len(&h, rest, u64::MAX).ok_or_else(|| {
                skip("the end of this version-1 CCOB cannot be determined".into())
            })?;
            h.header_size + payload
        }
        _ => return Err(skip("size unknown".into())),
    };
    let parent = c.parent.and_then(|p| all.get(p));
    let parent_end = parent
        .and_then(|p| Some(p.file_offset? + p.size?))
        .unwrap_or(data.len() as u64);
    let next = all
        .iter()
        .filter(|o| o.parent == c.parent && o.id != c.id)
        .filter_map(|o| o.file_offset)
        .filter(|&o| o > offset)
        .min()
        .unwrap_or(parent_end)
        .min(parent_end);
    let end = offset + size;
    // The slot takes the zeros after the container, never a byte that is not zero.
    let tail = data.get(end as usize..next as usize).unwrap_or_default();
    let zeros = tail.iter().position(|&b| b != 0).unwrap_or(tail.len()) as u64;
    Ok(Place {
        offset,
        size,
        slot: size + zeros,
        whole: parent.is_none() && offset == 0 && end == data.len() as u64,
    })
}

fn rewrite_one(
    data: &[u8],
    c: &Container,
    place: Place,
    op: Operation<'_>,
    limits: Limits,
) -> Result<Option<Rewrite>, Skip> {
    let skip = |reason: String, error: bool| Skip {
        offset: Some(place.offset),
        label: c.label(),
        reason,
        error,
    };
    let bytes = Bytes::new(data)
        .read_at(place.offset, place.size)
        .map_err(|_| skip("runs past the end of the file".into(), true))?;
    let (form, bundle_bytes): (Form, Arc<Vec<u8>>) = match c.kind {
        ContainerKind::Ccob { .. } => {
            let h = CcobHeader::parse(bytes).map_err(|e| skip(e.to_string(), true))?;
            let form = Form::Ccob {
                version: h.version,
                method: h.method,
            };
            match op {
                Operation::Compress(_) => {
                    return Err(skip("already compressed".into(), false));
                }
                Operation::Strip(_) | Operation::Decompress => {}
            }
            let inner = ccob::decompress(&h, bytes, limits.max_decompressed)
                .map_err(|e| skip(format!("cannot decompress: {e}"), true))?;
            (form, Arc::new(inner))
        }
        _ => {
            if matches!(op, Operation::Decompress) {
                return Err(skip("not compressed".into(), false));
            }
            (Form::Bundle, Arc::new(Vec::new()))
        }
    };
    let compressed = form != Form::Bundle;
    let bundle: &[u8] = if compressed { &bundle_bytes } else { bytes };
    let header = bundle::parse(bundle, true).map_err(|e| skip(e.to_string(), true))?;
    let source = |e: &bundle::BundleEntry| {
        if compressed {
            Source::Buffer(Arc::clone(&bundle_bytes), e.offset)
        } else {
            Source::File(place.offset + e.offset)
        }
    };
    let facts: Vec<EntryFacts> = header
        .entries
        .iter()
        .map(|e| {
            let head = Bytes::new(bundle).read_at_most(e.offset, 64.min(e.size));
            EntryFacts::new(e.id.clone(), head)
        })
        .collect();
    let reasons: Vec<Reason> = match op {
        Operation::Strip(keep) => keep.decide(&facts, compressed),
        _ => vec![Reason::Loaded; facts.len()],
    };
    let entries: Vec<EntryChange> = header
        .entries
        .iter()
        .zip(&facts)
        .zip(&reasons)
        .map(|((e, f), r)| EntryChange {
            id: e.id.raw.clone(),
            target: f.target.as_ref().map(ToString::to_string),
            size: e.size,
            reason: *r,
        })
        .collect();
    let kept: Vec<&bundle::BundleEntry> = header
        .entries
        .iter()
        .zip(&reasons)
        .filter(|(_, r)| r.keeps())
        .map(|(e, _)| e)
        .collect();
    if matches!(op, Operation::Strip(_)) && kept.len() == header.entries.len() {
        return Ok(None);
    }
    let expect: Vec<Expected> = kept
        .iter()
        .map(|e| Expected {
            id: stored_id(bundle, e).to_vec(),
            size: e.size,
            source: source(e),
        })
        .collect();

    let mut rw = Rewrite {
        offset: place.offset,
        label: c.label(),
        old_size: place.size,
        new_size: 0,
        slot: place.slot,
        before: form,
        after: form,
        entries,
        notes: Vec::new(),
        head: Arc::new(Vec::new()),
        inner: None,
        keep: Vec::new(),
        expect,
    };
    match (op, form) {
        (Operation::Strip(_), Form::Bundle) if !place.whole => {
            // In place: a shorter table, the kept entries where they are.
            rw.head = Arc::new(table(
                kept.iter()
                    .map(|e| (stored_id(bundle, e), e.offset, e.size)),
            ));
            rw.keep = kept
                .iter()
                .filter(|e| e.size > 0)
                .map(|e| (place.offset + e.offset, place.offset + e.offset + e.size))
                .collect();
            rw.new_size = kept
                .iter()
                .map(|e| e.offset + e.size)
                .max()
                .unwrap_or(0)
                .max(rw.head.len() as u64);
        }
        (Operation::Strip(_), Form::Bundle) => {
            rw.head = Arc::new(compact(bundle, &header, &kept));
            rw.new_size = rw.head.len() as u64;
        }
        (Operation::Strip(_), Form::Ccob { version, method }) => {
            let inner = compact(bundle, &header, &kept);
            let settings = Compression {
                method,
                level: None,
                version: Some(version.max(2)),
            };
            rw.after = Form::Ccob {
                version: version.max(2),
                method,
            };
            let (head, hash) =
                compress(&inner, settings, &mut rw.notes).map_err(|e| skip(e, true))?;
            rw.head = Arc::new(head);
            rw.inner = Some((Arc::new(inner), hash));
            rw.new_size = rw.head.len() as u64;
        }
        (Operation::Compress(settings), _) => {
            let version = settings
                .version
                .unwrap_or(if needs_v3(bundle.len()) { 3 } else { 2 });
            let settings = Compression {
                version: Some(version),
                ..settings
            };
            rw.after = Form::Ccob {
                version,
                method: settings.method,
            };
            let (head, hash) =
                compress(bundle, settings, &mut rw.notes).map_err(|e| skip(e, true))?;
            rw.head = Arc::new(head);
            rw.inner = Some((Arc::new(Vec::new()), hash));
            rw.new_size = rw.head.len() as u64;
        }
        (Operation::Decompress, _) => {
            rw.after = Form::Bundle;
            rw.head = Arc::clone(&bundle_bytes);
            rw.new_size = rw.head.len() as u64;
        }
    }
    if !place.whole && rw.new_size > rw.slot {
        return Err(skip(
            format!(
                "the new {} bundle takes {} bytes and its place in the file has {}; it cannot \
                 grow without relinking",
                rw.after, rw.new_size, rw.slot
            ),
            true,
        ));
    }
    Ok(Some(rw))
}

/// Whether a bundle of `len` bytes needs CCOB v3: v2 stores the uncompressed size and the
/// total size in 32 bits, and the compressed size is not known before compressing; a bundle
/// that could not compress below 4 GiB needs v3.
fn needs_v3(len: usize) -> bool {
    len as u64 > u64::from(u32::MAX) - (1 << 20)
}

/// Compresses as clang does. Tools that find the next CCOB by searching for its magic (LLVM's
/// `--list` and `llvm-objdump --offloading` before LLVM PR 206745) cut a bundle short where the
/// compressed bytes happen to contain "CCOB"; a payload that does is compressed again at the
/// next levels, and a note says so if it still does.
fn compress(
    bundle: &[u8],
    c: Compression,
    notes: &mut Vec<String>,
) -> Result<(Vec<u8>, u64), String> {
    let version = c.version.unwrap_or(2);
    for (attempt, level) in (c.level()..).take(3).enumerate() {
        let out = ccob::compress(bundle, version, c.method, level)
            .map_err(|e| format!("cannot compress: {e}"))?;
        let payload = out.get(ccob_header_len(version)..).unwrap_or_default();
        let Some(at) = payload.windows(4).position(|w| w == ccob::MAGIC) else {
            if attempt > 0 {
                notes.push(format!(
                    "compressed at level {level}: at level {} the compressed bytes contained \
                     \"CCOB\", which tools that scan for the magic would take for a new bundle",
                    c.level()
                ));
            }
            return with_hash(out);
        };
        if attempt == 2 || (c.method == Method::Zlib && level >= 9) || level >= 22 {
            notes.push(format!(
                "the compressed bytes contain \"CCOB\" at payload offset {at}; tools that find \
                 bundles by scanning for the magic instead of reading the size field may cut \
                 this bundle short"
            ));
            return with_hash(out);
        }
    }
    Err("cannot compress".into())
}

/// A new CCOB and the hash its header carries (computed once, by [`ccob::compress`]).
fn with_hash(out: Vec<u8>) -> Result<(Vec<u8>, u64), String> {
    let hash = CcobHeader::parse(&out)
        .map_err(|e| format!("cannot compress: {e}"))?
        .hash;
    Ok((out, hash))
}

fn ccob_header_len(version: u16) -> usize {
    match version {
        1 => 20,
        2 => 24,
        _ => 32,
    }
}

/// A bundle table: magic, count, then per entry offset, size, ID length and ID.
fn table<'a>(entries: impl Iterator<Item = (&'a [u8], u64, u64)> + Clone) -> Vec<u8> {
    let mut out = bundle::MAGIC.to_vec();
    out.extend((entries.clone().count() as u64).to_le_bytes());
    for (id, offset, size) in entries {
        out.extend(offset.to_le_bytes());
        out.extend(size.to_le_bytes());
        out.extend((id.len() as u64).to_le_bytes());
        out.extend(id);
    }
    out
}

/// An entry's ID exactly as stored.
pub(crate) fn stored_id<'a>(bundle: &'a [u8], e: &bundle::BundleEntry) -> &'a [u8] {
    Bytes::new(bundle)
        .read_at(e.id_offset, e.id_len)
        .unwrap_or_default()
}

/// The alignment the original writer used for entries: the largest power of two up to 4096
/// that divides every non-empty entry's offset (clang's HIP driver passes `-bundle-align=4096`).
fn alignment(header: &BundleHeader) -> u64 {
    let mut align = 4096u64;
    for e in header.entries.iter().filter(|e| e.size > 0) {
        while align > 1 && e.offset % align != 0 {
            align /= 2;
        }
    }
    align
}

/// A new bundle holding `kept` entries of `bundle`, in their order, laid out as the original
/// writer did.
fn compact(bundle: &[u8], header: &BundleHeader, kept: &[&bundle::BundleEntry]) -> Vec<u8> {
    let align = alignment(header);
    let table_len = 32
        + kept
            .iter()
            .map(|e| 24 + stored_id(bundle, e).len() as u64)
            .sum::<u64>();
    let mut at = table_len;
    let mut layout = Vec::with_capacity(kept.len());
    for e in kept {
        if e.size > 0 {
            at = at.next_multiple_of(align);
        }
        layout.push((stored_id(bundle, e), at, e.size));
        at += e.size;
    }
    let mut out = table(layout.iter().copied());
    for (e, (_, offset, size)) in kept.iter().zip(&layout) {
        if *size == 0 {
            continue;
        }
        out.resize(*offset as usize, 0);
        out.extend_from_slice(
            Bytes::new(bundle)
                .read_at(e.offset, e.size)
                .unwrap_or_default(),
        );
    }
    out
}

/// Checks that the container now at `rw.offset` of `new` is what the plan intended: its form,
/// its size, and its entries, in order, with IDs and bytes identical to the originals in
/// `old`. Reads the new file's bytes only; does not trust anything the writer did.
pub(crate) fn verify(rw: &Rewrite, new: &[u8], old: &[u8], limits: Limits) -> Result<(), String> {
    let at = Bytes::new(new)
        .read_at(rw.offset, rw.new_size)
        .map_err(|_| format!("the new file ends before byte {}", rw.offset + rw.new_size))?;
    let decompressed;
    let bundle: &[u8] = match rw.after {
        Form::Bundle => at,
        Form::Ccob { version, method } => {
            let h = CcobHeader::parse(at).map_err(|e| format!("new CCOB: {e}"))?;
            if (h.version, h.method) != (version, method) {
                return Err(format!(
                    "new CCOB is v{} {}, v{version} {} was intended",
                    h.version,
                    h.method.name(),
                    method.name()
                ));
            }
            if h.total_size != Some(rw.new_size) {
                return Err(format!(
                    "new CCOB declares {:?} bytes in all, it takes {}",
                    h.total_size, rw.new_size
                ));
            }
            decompressed =
                ccob::decompress(&h, at, limits.max_decompressed.max(h.uncompressed_size))
                    .map_err(|e| format!("new CCOB does not decompress: {e}"))?;
            // The hash was computed once, over the intended bundle, when it was compressed: the
            // new CCOB must carry it and decompress to exactly that bundle.
            let (inner, hash) = rw
                .inner
                .as_ref()
                .ok_or("a new CCOB without its intended bundle")?;
            if h.hash != *hash {
                return Err("new CCOB's hash field is not the MD5 of the intended bundle".into());
            }
            let intended: &[u8] = if inner.is_empty() {
                Bytes::new(old)
                    .read_at(rw.offset, rw.old_size)
                    .map_err(|_| "the original bundle is not in the original file")?
            } else {
                inner
            };
            if decompressed.as_slice() != intended {
                return Err("new CCOB does not decompress to the intended bundle".into());
            }
            &decompressed
        }
    };
    let header = bundle::parse(bundle, true).map_err(|e| format!("new bundle: {e}"))?;
    // A decompressed bundle may carry bytes after its last entry (padding); they are written
    // and compared as they are, but the entries must end within it.
    if rw.after == Form::Bundle && header.end() > rw.new_size {
        return Err(format!(
            "new bundle ends at {}, {} was intended",
            header.end(),
            rw.new_size
        ));
    }
    if header.entries.len() != rw.expect.len() {
        return Err(format!(
            "new bundle has {} entries, {} were intended",
            header.entries.len(),
            rw.expect.len()
        ));
    }
    for (e, want) in header.entries.iter().zip(&rw.expect) {
        if stored_id(bundle, e) != want.id.as_slice() || e.size != want.size {
            return Err(format!(
                "entry #{} is {} ({} bytes), {} ({} bytes) was intended",
                e.index,
                e.id.raw,
                e.size,
                String::from_utf8_lossy(&want.id),
                want.size
            ));
        }
        let got = Bytes::new(bundle)
            .read_at(e.offset, e.size)
            .unwrap_or_default();
        let original = match &want.source {
            Source::File(off) => Bytes::new(old).read_at(*off, want.size),
            Source::Buffer(buf, off) => Bytes::new(buf).read_at(*off, want.size),
        }
        .unwrap_or_default();
        if got != original {
            return Err(format!(
                "entry #{} ({}) differs from the original code object",
                e.index, e.id.raw
            ));
        }
    }
    Ok(())
}

/// The new file's bytes, built in memory: what [`crate::write::apply`] writes to disk through a
/// temporary file, for tests and fuzzing (a real rewrite never holds a whole file).
pub fn render(plan: &FilePlan, old: &[u8]) -> Vec<u8> {
    if plan.whole {
        return plan
            .rewrites
            .first()
            .map(|r| r.head.to_vec())
            .unwrap_or_default();
    }
    let mut new = old.to_vec();
    let l = plan.layout();
    for &(s, e) in &l.zero {
        if let Some(z) = new.get_mut(s as usize..e as usize) {
            z.fill(0);
        }
    }
    for r in &l.heads {
        if let Some(dst) = new.get_mut(r.offset as usize..r.offset as usize + r.head.len()) {
            dst.copy_from_slice(&r.head);
        }
    }
    new
}

/// Checks every rewrite of `plan` in `new` against `old` (see [`crate::write`] for the checks a
/// real write makes).
///
/// # Errors
/// The first rewrite that is not as planned, and why.
pub fn verify_all(plan: &FilePlan, new: &[u8], old: &[u8], limits: Limits) -> Result<(), String> {
    for r in &plan.rewrites {
        verify(r, new, old, limits)
            .map_err(|m| format!("{} at byte {}: {m}", r.label, r.offset))?;
    }
    Ok(())
}
