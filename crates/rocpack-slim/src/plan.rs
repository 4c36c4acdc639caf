//! What a rewrite will do to one file, computed from its bytes before anything is written.
//!
//! A bundle or compressed bundle (CCOB) that is the whole file is rewritten compactly. One that
//! sits inside a larger file (a host ELF's `.hip_fatbin`, an archive member) is rewritten in
//! its *slot*: the bytes from its start to its end plus the zeros that follow it, up to the next
//! bundle or the end of its section. Nothing outside a slot moves or changes; inside it, the
//! new container starts where the old one did, and every byte it does not use becomes zero.

use rocpack_bytes::Bytes;
use rocpack_offload::bundle::{self, BundleHeader};
use rocpack_offload::ccob::{self, CcobHeader, Method};
use rocpack_offload::{Container, ContainerKind, EntryId, Options, Severity};
use serde::Serialize;

use crate::keep::{EntryFacts, Keep, Reason};
use crate::stream::{Base, BaseReader, Compact, Inner, Input, Output};

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

/// One bundle rewritten.
#[derive(Debug, Clone, Serialize)]
pub struct Rewrite {
    /// File offset of the bundle (and of its replacement).
    pub offset: u64,
    /// `bundle #3`, `ccob v2 zstd`, ...
    pub label: String,
    /// Bytes the old container took.
    pub old_size: u64,
    /// Bytes the new one takes (for a new CCOB, known once it has been compressed: see
    /// [`crate::write::measure`] and [`crate::write::apply`]).
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
    /// What is written at `offset`.
    #[serde(skip)]
    pub(crate) output: Output,
    /// For a new CCOB: the hash written for its bundle (known once it is written).
    #[serde(skip)]
    pub(crate) hash: Option<u64>,
    /// The most bytes written at `offset` (a first compression attempt may have been longer).
    #[serde(skip)]
    pub(crate) written: u64,
    /// Absolute file ranges inside the slot that keep their bytes (kept code objects).
    #[serde(skip)]
    pub(crate) keep: Vec<(u64, u64)>,
    /// `(stored ID, offset in the new bundle, size)` of each entry the new bundle must list.
    #[serde(skip)]
    pub(crate) expect: Vec<(Vec<u8>, u64, u64)>,
}

impl Rewrite {
    /// Bytes written at `offset`: the new container, or, for a bundle stripped in place, its
    /// new table (the kept entries stay where they are).
    pub(crate) fn head_len(&self) -> u64 {
        match &self.output {
            Output::Table(head) => head.len() as u64,
            _ => self.new_size,
        }
    }

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
pub(crate) struct Layout {
    /// `[start, end)` ranges that keep the original's bytes.
    pub(crate) copy: Vec<(u64, u64)>,
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
    pub(crate) fn layout(&self) -> Layout {
        let mut heads: Vec<&Rewrite> = self.rewrites.iter().collect();
        heads.sort_by_key(|r| r.offset);
        let mut copy = Vec::new();
        let mut zero = Vec::new();
        let mut pos = 0u64;
        for r in &heads {
            if r.offset > pos {
                copy.push((pos, r.offset));
            }
            let mut at = r.offset + r.head_len();
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
        Layout { copy, zero }
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
pub fn plan(input: Input<'_>, op: Operation<'_>, limits: Limits) -> Result<FilePlan, PlanError> {
    let data = input.map();
    let opts = Options {
        metadata: false,
        decompress: false,
        check_hashes: true,
        max_decompressed: limits.max_decompressed,
        thin_loader: None,
        file: input.open_file().map(|f| f as &dyn rocpack_offload::ReadAt),
        spill: Some(&rocpack_scan::TempSpill),
        search_code: false,
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

    // A compressed bundle is decompressed to read its entries, within the memory budget.
    let cost = |c: &&Container| {
        c.file_offset
            .and_then(|at| {
                CcobHeader::parse_within(data.get(at as usize..).unwrap_or_default(), u64::MAX).ok()
            })
            .map_or(0, |h| crate::stream::window_cost(h.uncompressed_size))
    };
    let results: Vec<Result<Option<Rewrite>, Skip>> =
        crate::stream::bounded_par(&targets, cost, crate::stream::Others::Cheapest, |c| {
            let place = slot_of(c, containers, input)?;
            rewrite_one(input, c, place, op, limits)
        });
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

fn slot_of(c: &Container, all: &[Container], input: Input<'_>) -> Result<Place, Skip> {
    let data = input.map();
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
    let next = next.min(data.len() as u64);
    let zeros = if next > end {
        input.zeros_at(end, next)
    } else {
        0
    };
    Ok(Place {
        offset,
        size,
        slot: size + zeros,
        whole: parent.is_none() && offset == 0 && end == data.len() as u64,
    })
}

fn rewrite_one(
    input: Input<'_>,
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
    let bytes = Bytes::new(input.map())
        .read_at(place.offset, place.size)
        .map_err(|_| skip("runs past the end of the file".into(), true))?;
    let (form, base) = match c.kind {
        ContainerKind::Ccob { .. } => {
            let h = CcobHeader::parse(bytes).map_err(|e| skip(e.to_string(), true))?;
            if matches!(op, Operation::Compress(_)) {
                return Err(skip("already compressed".into(), false));
            }
            ccob::check_ceiling(&h, limits.max_decompressed)
                .map_err(|e| skip(format!("cannot decompress: {e}"), true))?;
            let form = Form::Ccob {
                version: h.version,
                method: h.method,
            };
            let base = Base::Ccob {
                offset: place.offset,
                len: place.size,
                header: h,
            };
            (form, base)
        }
        _ => {
            if matches!(op, Operation::Decompress) {
                return Err(skip("not compressed".into(), false));
            }
            let base = Base::File {
                offset: place.offset,
                len: place.size,
            };
            (Form::Bundle, base)
        }
    };
    let compressed = form != Form::Bundle;
    let cannot = |e: std::io::Error| {
        if compressed {
            skip(format!("cannot decompress: {e}"), true)
        } else {
            skip(e.to_string(), true)
        }
    };
    let mut reader = BaseReader::new(base, input, limits);
    let total = match base {
        Base::File { len, .. } => len,
        Base::Ccob { header, .. } => header.uncompressed_size,
    };
    let (header, table) = read_table(&mut reader, total).map_err(|e| match e {
        TableError::Io(e) => cannot(e),
        TableError::Format(e) => skip(e.to_string(), true),
    })?;
    // What the decision needs from each entry's first bytes, read in file order (a compressed
    // bundle is decompressed once).
    let mut heads: Vec<Vec<u8>> = vec![Vec::new(); header.entries.len()];
    let mut order: Vec<usize> = (0..header.entries.len()).collect();
    order.sort_by_key(|&i| header.entries.get(i).map_or(0, |e| e.offset));
    for i in order {
        let (Some(e), Some(head)) = (header.entries.get(i), heads.get_mut(i)) else {
            continue;
        };
        head.resize(64.min(e.size) as usize, 0);
        reader.read_exact_at(head, e.offset).map_err(cannot)?;
    }
    let facts: Vec<EntryFacts> = header
        .entries
        .iter()
        .zip(&heads)
        .map(|(e, head)| EntryFacts::new(e.id.clone(), head))
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
            id: e.id.raw().to_owned(),
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
    let same = |e: &&bundle::BundleEntry| (stored_id(&table, e).to_vec(), e.offset, e.size);

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
        output: Output::Table(Vec::new()),
        hash: None,
        written: 0,
        keep: Vec::new(),
        expect: kept.iter().map(same).collect(),
    };
    match (op, form) {
        (Operation::Strip(_), Form::Bundle) if !place.whole => {
            // In place: a shorter table, the kept entries where they are.
            let head = table_bytes(
                kept.iter()
                    .map(|e| (stored_id(&table, e), e.offset, e.size)),
            );
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
                .max(head.len() as u64);
            rw.output = Output::Table(head);
        }
        (Operation::Strip(_), Form::Bundle) => {
            let c = compact(&table, &header, &kept);
            rw.expect = expect_of(&c, &table, &kept);
            rw.new_size = c.len;
            rw.output = Output::Plain(Inner {
                base,
                compact: Some(c),
            });
        }
        (Operation::Strip(_), Form::Ccob { version, method }) => {
            let c = compact(&table, &header, &kept);
            rw.expect = expect_of(&c, &table, &kept);
            rw.after = Form::Ccob {
                version: version.max(2),
                method,
            };
            rw.output = Output::Ccob {
                inner: Inner {
                    base,
                    compact: Some(c),
                },
                settings: Compression {
                    method,
                    level: None,
                    version: Some(version.max(2)),
                },
            };
        }
        (Operation::Compress(settings), _) => {
            let version = crate::stream::version_for(settings, place.size);
            rw.after = Form::Ccob {
                version,
                method: settings.method,
            };
            rw.output = Output::Ccob {
                inner: Inner {
                    base,
                    compact: None,
                },
                settings: Compression {
                    version: Some(version),
                    ..settings
                },
            };
        }
        (Operation::Decompress, _) => {
            rw.after = Form::Bundle;
            rw.new_size = total;
            rw.output = Output::Plain(Inner {
                base,
                compact: None,
            });
        }
    }
    if !place.whole && rw.new_size > rw.slot {
        return Err(skip(too_large(&rw), true));
    }
    Ok(Some(rw))
}

/// Why a new container does not fit in its slot.
pub(crate) fn too_large(rw: &Rewrite) -> String {
    format!(
        "the new {} bundle takes {} bytes and its place in the file has {}; it cannot grow \
         without relinking",
        rw.after,
        if rw.new_size > rw.slot {
            rw.new_size.to_string()
        } else {
            format!("more than {}", rw.slot)
        },
        rw.slot
    )
}

enum TableError {
    Io(std::io::Error),
    Format(rocpack_offload::FormatError),
}

/// Reads a bundle's table (magic, count, entries with their IDs) from the start of `reader`,
/// a bundle of `total` bytes, one record at a time: nothing is allocated that the bytes read so
/// far do not justify.
fn read_table(
    reader: &mut BaseReader<'_>,
    total: u64,
) -> Result<(BundleHeader, Vec<u8>), TableError> {
    let format = |e| TableError::Format(e);
    let mut table = vec![0u8; 32.min(total) as usize];
    reader
        .read_exact_at(&mut table, 0)
        .map_err(TableError::Io)?;
    if let Some(count) = Bytes::new(&table)
        .u64(24)
        .ok()
        .filter(|_| table.starts_with(bundle::MAGIC))
    {
        for _ in 0..count.min(total.saturating_sub(32) / 24) {
            let at = table.len() as u64;
            if at + 24 > total {
                break;
            }
            table.resize(at as usize + 24, 0);
            reader
                .read_exact_at(table.get_mut(at as usize..).unwrap_or_default(), at)
                .map_err(TableError::Io)?;
            let id_len = Bytes::new(&table).u64(at + 16).unwrap_or(u64::MAX);
            if id_len > total - (at + 24) {
                break;
            }
            table.resize(at as usize + 24 + id_len as usize, 0);
            reader
                .read_exact_at(
                    table.get_mut(at as usize + 24..).unwrap_or_default(),
                    at + 24,
                )
                .map_err(TableError::Io)?;
        }
    }
    let header = bundle::parse_header(&table, total).map_err(format)?;
    Ok((header, table))
}

/// The entries a compacted bundle must list: `(stored ID, new offset, size)`.
fn expect_of(c: &Compact, table: &[u8], kept: &[&bundle::BundleEntry]) -> Vec<(Vec<u8>, u64, u64)> {
    kept.iter()
        .zip(&c.offsets)
        .map(|(e, &at)| (stored_id(table, e).to_vec(), at, e.size))
        .collect()
}

/// A bundle table: magic, count, then per entry offset, size, ID length and ID.
fn table_bytes<'a>(entries: impl Iterator<Item = (&'a [u8], u64, u64)> + Clone) -> Vec<u8> {
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

/// An entry's ID exactly as stored (`table` holds the bundle's table).
pub(crate) fn stored_id<'a>(table: &'a [u8], e: &bundle::BundleEntry) -> &'a [u8] {
    Bytes::new(table)
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

/// A new bundle holding `kept` entries, in their order, laid out as the original writer did.
fn compact(table: &[u8], header: &BundleHeader, kept: &[&bundle::BundleEntry]) -> Compact {
    let align = alignment(header);
    let table_len = 32
        + kept
            .iter()
            .map(|e| 24 + stored_id(table, e).len() as u64)
            .sum::<u64>();
    let mut at = table_len;
    let mut layout = Vec::with_capacity(kept.len());
    for e in kept {
        if e.size > 0 {
            at = at.next_multiple_of(align);
        }
        layout.push((stored_id(table, e), at, e.size));
        at += e.size;
    }
    Compact {
        table: table_bytes(layout.iter().copied()),
        pieces: kept
            .iter()
            .zip(&layout)
            .filter(|(e, _)| e.size > 0)
            .map(|(e, &(_, new, size))| (new, e.offset, size))
            .collect(),
        offsets: layout.iter().map(|&(_, new, _)| new).collect(),
        len: at.max(table_len),
    }
}
