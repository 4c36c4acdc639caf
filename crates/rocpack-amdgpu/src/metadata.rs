//! Kernel metadata from the code object's notes: `NT_AMDGPU_METADATA` (msgpack, code object
//! V3 and later) and `NT_AMD_HSA_METADATA` (YAML, V2).

use std::borrow::Cow;

use object::elf::{FileHeader64, NoteHeader32, ProgramHeader64, SectionHeader64};
use object::{LittleEndian as LE, pod};
use rocpack_bytes::{Bytes, align_up, lossless_string};

use crate::msgpack::{self, Value};

use object::elf::{PT_NOTE, SHT_NOTE};

/// The `object::elf` layout `T` at the start of `data`, which the caller has bounded to its size.
fn layout<T: object::Pod>(data: &[u8]) -> Option<&T> {
    pod::from_bytes::<T>(data).ok().map(|(t, _)| t)
}
/// Note type of the msgpack metadata (owner "AMDGPU").
pub const NT_AMDGPU_METADATA: u32 = 32;
/// Note type of the YAML metadata of V2 code objects (owner "AMD").
pub const NT_AMD_HSA_METADATA: u32 = 10;
/// Note type of the V2 ISA version (owner "AMD").
pub const NT_AMD_HSA_ISA_VERSION: u32 = 3;
/// Largest metadata document decoded (the biggest seen in ROCm libraries are a few hundred KiB).
const MAX_METADATA: u64 = 64 << 20;

/// Why the notes of a code object could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    /// An ELF structure points outside the code object.
    #[error("{what} is outside the code object ({source})")]
    OutOfBounds {
        what: &'static str,
        source: rocpack_bytes::OutOfBounds,
    },
    /// The code object is not a 64-bit little-endian ELF.
    #[error("not a 64-bit little-endian ELF file")]
    NotElf64,
    /// The msgpack document is malformed.
    #[error("NT_AMDGPU_METADATA note at offset {note_offset}: {source}")]
    MsgPack {
        note_offset: u64,
        source: msgpack::DecodeError,
    },
    /// The YAML document is malformed.
    #[error("NT_AMD_HSA_METADATA note at offset {note_offset}: {message}")]
    Yaml { note_offset: u64, message: String },
    /// A document larger than rocpack decodes.
    #[error(
        "metadata note at offset {note_offset} is {size} bytes, more than the {MAX_METADATA}-byte limit"
    )]
    TooLarge { note_offset: u64, size: u64 },
}

/// One ELF note.
#[derive(Debug, Clone, Copy)]
pub struct Note<'a> {
    /// Offset of the note header in the code object.
    pub offset: u64,
    /// Owner name without its terminating NUL.
    pub name: &'a [u8],
    /// `n_type`.
    pub n_type: u32,
    /// Descriptor bytes.
    pub desc: &'a [u8],
}

/// Where a code object's bytes are read from: the bytes themselves, or (given by the caller)
/// positional reads of the file holding them, which reads the few KB of headers and notes
/// without mapping in the pages around them.
pub trait Source {
    /// `len` bytes at `offset` into the code object.
    ///
    /// # Errors
    /// [`rocpack_bytes::OutOfBounds`] when they run past the code object's end.
    fn bytes(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>, rocpack_bytes::OutOfBounds>;
}

impl Source for [u8] {
    fn bytes(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>, rocpack_bytes::OutOfBounds> {
        Bytes::new(self).read_at(offset, len).map(Cow::Borrowed)
    }
}

fn oob(what: &'static str) -> impl Fn(rocpack_bytes::OutOfBounds) -> MetadataError {
    move |source| MetadataError::OutOfBounds { what, source }
}

/// Every note of the code object: those in `PT_NOTE` segments, or when there are none (as in
/// relocatable objects), those in `SHT_NOTE` sections, as comgr reads them.
///
/// # Errors
/// [`MetadataError`] when the ELF tables or a note run outside the code object.
pub fn notes(data: &[u8]) -> Result<Vec<Note<'_>>, MetadataError> {
    let mut out = Vec::new();
    for (off, size, align) in note_ranges(data)? {
        let seg = Bytes::new(data)
            .read_at(off, size)
            .map_err(oob("note segment"))?;
        segment_notes(off, seg, align, &mut out)?;
    }
    Ok(out)
}

/// The (offset, size, alignment) of each note segment (or section), each byte range once.
fn note_ranges(src: &(impl Source + ?Sized)) -> Result<Vec<(u64, u64, u64)>, MetadataError> {
    // Everything the ELF header says is in its first 64 bytes.
    let head = match src.bytes(0, 64) {
        Ok(h) => h,
        Err(e) => src.bytes(0, e.size).map_err(oob("ELF header"))?,
    };
    let b = Bytes::new(&head);
    if !b.has_at(0, b"\x7fELF") || b.u8(4).ok() != Some(2) || b.u8(5).ok() != Some(1) {
        return Err(MetadataError::NotElf64);
    }
    let h = b.read_at(0, 64).map_err(oob("ELF header"))?;
    let h = layout::<FileHeader64<LE>>(h).ok_or(MetadataError::NotElf64)?;
    let mut ranges = Vec::new();
    let phoff = h.e_phoff.get(LE);
    let phentsize = u64::from(h.e_phentsize.get(LE));
    let phnum = u64::from(h.e_phnum.get(LE));
    for i in 0..phnum {
        let ph = src
            .bytes(phoff.saturating_add(i.saturating_mul(phentsize)), 56)
            .map_err(oob("program header"))?;
        let ph = layout::<ProgramHeader64<LE>>(&ph).ok_or(MetadataError::NotElf64)?;
        if ph.p_type.get(LE) == PT_NOTE {
            ranges.push((ph.p_offset.get(LE), ph.p_filesz.get(LE), ph.p_align.get(LE)));
        }
    }
    if ranges.is_empty() {
        let shoff = h.e_shoff.get(LE);
        let shentsize = u64::from(h.e_shentsize.get(LE));
        let shnum = u64::from(h.e_shnum.get(LE));
        for i in 0..shnum {
            let sh = src
                .bytes(shoff.saturating_add(i.saturating_mul(shentsize)), 64)
                .map_err(oob("section header"))?;
            let sh = layout::<SectionHeader64<LE>>(&sh).ok_or(MetadataError::NotElf64)?;
            if sh.sh_type.get(LE) == SHT_NOTE {
                ranges.push((
                    sh.sh_offset.get(LE),
                    sh.sh_size.get(LE),
                    sh.sh_addralign.get(LE),
                ));
            }
        }
    }
    // Read each byte range once: hostile files can point many PT_NOTEs at the same bytes.
    ranges.sort_unstable();
    let mut covered_to = 0u64;
    ranges.retain(|&(off, size, _)| {
        if off < covered_to {
            return false;
        }
        covered_to = off.saturating_add(size);
        true
    });
    Ok(ranges)
}

/// The notes of one segment, which starts at `off` in the code object.
fn segment_notes<'a>(
    off: u64,
    seg: &'a [u8],
    align: u64,
    out: &mut Vec<Note<'a>>,
) -> Result<(), MetadataError> {
    let seg = Bytes::new(seg);
    // Notes are 4-byte aligned; an 8-byte aligned note segment pads to 8 (gABI).
    let align = if align == 8 { 8 } else { 4 };
    let mut pos = 0u64;
    while pos < seg.len() {
        let header = seg.read_at(pos, 12).map_err(oob("note header"))?;
        let header = layout::<NoteHeader32<LE>>(header).ok_or(MetadataError::NotElf64)?;
        let namesz = u64::from(header.n_namesz.get(LE));
        let descsz = u64::from(header.n_descsz.get(LE));
        let n_type = header.n_type.get(LE);
        let name_at = pos + 12;
        let name = seg.read_at(name_at, namesz).map_err(oob("note name"))?;
        let desc_at = align_up(name_at + namesz, align).unwrap_or(u64::MAX);
        let desc = seg
            .read_at(desc_at, descsz)
            .map_err(oob("note descriptor"))?;
        let name = name.strip_suffix(&[0]).unwrap_or(name);
        out.push(Note {
            offset: off.saturating_add(pos),
            name,
            n_type,
            desc,
        });
        pos = align_up(desc_at + descsz, align).unwrap_or(u64::MAX);
    }
    Ok(())
}

/// Which note the metadata came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MetadataFormat {
    /// `NT_AMDGPU_METADATA`, code object V3+.
    MsgPack,
    /// `NT_AMD_HSA_METADATA`, code object V2.
    Yaml,
}

/// Resource use and interface of one kernel, as the compiler recorded it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Kernel {
    /// Kernel (function) name, usually mangled.
    pub name: String,
    /// The name demangled (Itanium C++ ABI), when it is a mangled name.
    pub demangled: Option<String>,
    /// Kernel descriptor symbol (`name.kd`; `name@kd` in V2).
    pub symbol: Option<String>,
    /// Scalar registers used.
    pub sgpr_count: Option<u64>,
    /// Vector registers used.
    pub vgpr_count: Option<u64>,
    /// Accumulation registers used (only on targets with MFMA).
    pub agpr_count: Option<u64>,
    /// Scalar registers spilled.
    pub sgpr_spill_count: Option<u64>,
    /// Vector registers spilled.
    pub vgpr_spill_count: Option<u64>,
    /// Static LDS (group segment) bytes.
    pub lds_size: Option<u64>,
    /// Scratch (private segment) bytes per work-item.
    pub scratch_size: Option<u64>,
    /// Whether the stack size is dynamic (recursion, indirect calls), making scratch a lower bound.
    pub uses_dynamic_stack: Option<bool>,
    /// Wavefront size, 32 or 64.
    pub wavefront_size: Option<u64>,
    /// Largest work-group the kernel can be launched with.
    pub max_flat_workgroup_size: Option<u64>,
    /// Bytes of kernel arguments.
    pub kernarg_size: Option<u64>,
}

/// The decoded metadata of one code object.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Metadata {
    /// Which note it came from.
    pub format: MetadataFormat,
    /// `amdhsa.version` / `Version`.
    pub version: Option<[u64; 2]>,
    /// `amdhsa.target` (V4+), e.g. `amdgcn-amd-amdhsa--gfx90a:xnack+`.
    pub target: Option<String>,
    /// The kernels, in document order.
    pub kernels: Vec<Kernel>,
}

/// Reads the kernel metadata of a code object. `Ok(None)` when it has no metadata note.
///
/// # Errors
/// [`MetadataError`] when the ELF tables or the note are malformed.
pub fn read(data: &[u8]) -> Result<Option<Metadata>, MetadataError> {
    read_with(data, &mut Demangler::new(0))
}

/// As [`read`], demangling kernel names through `names`, which remembers the names of the
/// code objects read before: the code objects of one bundle (one per GPU) mostly hold the same
/// kernels, so reading a bundle's code objects one after another demangles each name once.
///
/// # Errors
/// [`MetadataError`] when the ELF tables or the note are malformed.
pub fn read_with(data: &[u8], names: &mut Demangler) -> Result<Option<Metadata>, MetadataError> {
    read_from(data, names)
}

/// As [`read_with`], reading only the ELF header, the program (or section) headers and the
/// note segments from `src`.
///
/// # Errors
/// [`MetadataError`] when the ELF tables or the note are malformed.
pub fn read_from(
    src: &(impl Source + ?Sized),
    names: &mut Demangler,
) -> Result<Option<Metadata>, MetadataError> {
    // Read every segment, then check them in order: the first problem is reported, as when
    // the notes are read from the bytes themselves.
    let mut segments = Vec::new();
    let mut unreadable = None;
    for (off, size, align) in note_ranges(src)? {
        match src.bytes(off, size) {
            Ok(seg) => segments.push((off, seg, align)),
            Err(e) => {
                unreadable = Some(oob("note segment")(e));
                break;
            }
        }
    }
    let mut notes = Vec::new();
    for (off, seg, align) in &segments {
        segment_notes(*off, seg, *align, &mut notes)?;
    }
    if let Some(e) = unreadable {
        return Err(e);
    }
    for note in notes {
        let size = note.desc.len() as u64;
        let is_msgpack = note.name == b"AMDGPU" && note.n_type == NT_AMDGPU_METADATA;
        let is_yaml = note.name == b"AMD" && note.n_type == NT_AMD_HSA_METADATA;
        if (is_msgpack || is_yaml) && size > MAX_METADATA {
            return Err(MetadataError::TooLarge {
                note_offset: note.offset,
                size,
            });
        }
        if is_msgpack {
            return from_msgpack(note.desc, names).map(Some).map_err(|source| {
                MetadataError::MsgPack {
                    note_offset: note.offset,
                    source,
                }
            });
        }
        if is_yaml {
            return from_yaml(note.desc)
                .map(Some)
                .map_err(|message| MetadataError::Yaml {
                    note_offset: note.offset,
                    message,
                });
        }
    }
    Ok(None)
}

/// The processor named by a V2 `NT_AMD_HSA_ISA_VERSION` note, e.g. `gfx803`.
pub fn isa_version_processor(data: &[u8]) -> Option<String> {
    let note = notes(data)
        .ok()?
        .into_iter()
        .find(|n| n.name == b"AMD" && n.n_type == NT_AMD_HSA_ISA_VERSION)?;
    let d = Bytes::new(note.desc);
    let (major, minor, stepping) = (d.u32(4).ok()?, d.u32(8).ok()?, d.u32(12).ok()?);
    Some(format!("gfx{major}{minor:x}{stepping:x}"))
}

/// Demangles an Itanium C++ name; `None` for names that are not mangled or do not parse.
/// Names come from untrusted files, so recursion is limited.
pub fn demangle(name: &str) -> Option<String> {
    if !name.starts_with("_Z") || name.len() > 64 << 10 {
        return None;
    }
    let parse = cpp_demangle::ParseOptions::default().recursion_limit(256);
    let sym = cpp_demangle::Symbol::new_with_options(name, &parse).ok()?;
    sym.demangle_with_options(&cpp_demangle::DemangleOptions::new().recursion_limit(256))
        .ok()
}

/// Demangles kernel names, remembering up to a byte budget of recent names (see
/// [`read_with`]). When the budget is spent the memory is cleared and starts again, so it holds
/// at most about `budget` bytes of names whatever the input.
#[derive(Debug, Default)]
pub struct Demangler {
    seen: std::collections::HashMap<String, Option<String>>,
    held: usize,
    budget: usize,
}

impl Demangler {
    /// A demangler remembering about `budget` bytes of names (0: none).
    pub fn new(budget: usize) -> Self {
        Demangler {
            budget,
            ..Demangler::default()
        }
    }

    /// [`demangle`], answered from memory for a name seen recently.
    pub fn demangle(&mut self, name: &str) -> Option<String> {
        if let Some(d) = self.seen.get(name) {
            return d.clone();
        }
        let d = demangle(name);
        let cost = name.len() + d.as_ref().map_or(0, String::len);
        if cost <= self.budget {
            if self.held + cost > self.budget {
                self.seen.clear();
                self.held = 0;
            }
            self.held += cost;
            self.seen.insert(name.to_owned(), d.clone());
        }
        d
    }
}

/// Decodes the msgpack document in one pass: only `amdhsa.version`, `amdhsa.target` and the
/// kernels' own scalar fields are read; everything else (`.args`, other keys) is validated
/// and skipped as it is passed. For a key given twice the first occurrence counts (a kernel's
/// own keys: the last), as in a lookup over the decoded document. The whole document is
/// validated, so one malformed byte anywhere fails it, as [`msgpack::decode`] would.
fn from_msgpack(desc: &[u8], names: &mut Demangler) -> Result<Metadata, msgpack::DecodeError> {
    let mut md = Metadata {
        format: MetadataFormat::MsgPack,
        version: None,
        target: None,
        kernels: Vec::new(),
    };
    let mut c = msgpack::Cursor::new(desc);
    // Depths as `msgpack::decode` counts them: the document 0, its keys and values 1, the
    // kernels 2, a kernel's keys and values 3.
    let Some(pairs) = c.map_head(0)? else {
        return Ok(md);
    };
    let (mut version, mut target, mut kernels) = (false, false, false);
    for _ in 0..pairs {
        match c.value(1)? {
            Value::Str(b"amdhsa.kernels") if !kernels => {
                kernels = true;
                for _ in 0..c.array_head(1)?.unwrap_or(0) {
                    md.kernels.push(kernel(&mut c, names)?);
                }
            }
            Value::Str(b"amdhsa.version") if !version => {
                version = true;
                let v = c.value(1)?;
                md.version = v
                    .as_array()
                    .and_then(|mut a| Some([a.next()?.as_u64()?, a.next()?.as_u64()?]));
            }
            Value::Str(b"amdhsa.target") if !target => {
                target = true;
                md.target = c.value(1)?.as_str().map(|s| s.into_owned());
            }
            _ => {
                c.value(1)?;
            }
        }
    }
    Ok(md)
}

/// One element of `amdhsa.kernels`; an element that is not a map is a kernel with no fields.
fn kernel(
    c: &mut msgpack::Cursor<'_>,
    names: &mut Demangler,
) -> Result<Kernel, msgpack::DecodeError> {
    let mut kernel = Kernel::default();
    for _ in 0..c.map_head(2)?.unwrap_or(0) {
        let key = c.value(3)?;
        let v = c.value(3)?;
        let Value::Str(key) = key else { continue };
        let n = v.as_u64();
        match key {
            b".name" => kernel.name = v.as_str().map(|s| s.into_owned()).unwrap_or_default(),
            b".symbol" => kernel.symbol = v.as_str().map(|s| s.into_owned()),
            b".sgpr_count" => kernel.sgpr_count = n,
            b".vgpr_count" => kernel.vgpr_count = n,
            b".agpr_count" => kernel.agpr_count = n,
            b".sgpr_spill_count" => kernel.sgpr_spill_count = n,
            b".vgpr_spill_count" => kernel.vgpr_spill_count = n,
            b".group_segment_fixed_size" => kernel.lds_size = n,
            b".private_segment_fixed_size" => kernel.scratch_size = n,
            b".uses_dynamic_stack" => kernel.uses_dynamic_stack = v.as_bool(),
            b".wavefront_size" => kernel.wavefront_size = n,
            b".max_flat_workgroup_size" => kernel.max_flat_workgroup_size = n,
            b".kernarg_segment_size" => kernel.kernarg_size = n,
            _ => {}
        }
    }
    kernel.demangled = names.demangle(&kernel.name);
    Ok(kernel)
}

/// LLVM never writes YAML anchors into metadata, and the loader copies the anchored node at
/// every alias, so a few hundred bytes of nested aliases could expand to gigabytes: refuse them.
fn reject_aliases(text: &str) -> Result<(), String> {
    let mut parser = yaml_rust2::parser::Parser::new_from_str(text);
    loop {
        match parser.next_token() {
            Ok((yaml_rust2::parser::Event::StreamEnd, _)) => return Ok(()),
            Ok((yaml_rust2::parser::Event::Alias(_), mark)) => {
                return Err(format!(
                    "YAML alias at line {}: aliases are not used in code object metadata",
                    mark.line()
                ));
            }
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

fn from_yaml(desc: &[u8]) -> Result<Metadata, String> {
    use yaml_rust2::{Yaml, YamlLoader};
    let text = lossless_string(desc);
    let text = text.trim_end_matches('\0');
    reject_aliases(text)?;
    let docs = YamlLoader::load_from_str(text).map_err(|e| e.to_string())?;
    let doc = docs.first().ok_or("empty YAML document")?;
    let uint = |y: &Yaml| y.as_i64().and_then(|i| u64::try_from(i).ok());
    let version = doc["Version"].as_vec().and_then(|v| match v.as_slice() {
        [major, minor, ..] => Some([uint(major)?, uint(minor)?]),
        _ => None,
    });
    let kernels = doc["Kernels"]
        .as_vec()
        .map(|v| v.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|k| {
            let p = &k["CodeProps"];
            let n = |key: &str| uint(&p[key]);
            Kernel {
                name: k["Name"].as_str().unwrap_or_default().to_owned(),
                demangled: k["Name"].as_str().and_then(demangle),
                symbol: k["SymbolName"].as_str().map(str::to_owned),
                sgpr_count: n("NumSGPRs"),
                vgpr_count: n("NumVGPRs"),
                agpr_count: None,
                sgpr_spill_count: n("NumSpilledSGPRs"),
                vgpr_spill_count: n("NumSpilledVGPRs"),
                lds_size: n("GroupSegmentFixedSize"),
                scratch_size: n("PrivateSegmentFixedSize"),
                uses_dynamic_stack: p["IsDynamicCallStack"].as_bool(),
                wavefront_size: n("WavefrontSize"),
                max_flat_workgroup_size: n("MaxFlatWorkGroupSize"),
                kernarg_size: n("KernargSegmentSize"),
            }
        })
        .collect();
    Ok(Metadata {
        format: MetadataFormat::Yaml,
        version,
        target: None,
        kernels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_v2_metadata_is_read() {
        let doc = b"---\nVersion: [ 1, 0 ]\nKernels:\n  - Name: vadd\n    SymbolName: 'vadd@kd'\n    CodeProps:\n      KernargSegmentSize: 24\n      GroupSegmentFixedSize: 256\n      PrivateSegmentFixedSize: 0\n      WavefrontSize: 64\n      NumSGPRs: 16\n      NumVGPRs: 8\n      MaxFlatWorkGroupSize: 256\n...\n\0";
        let md = from_yaml(doc).unwrap();
        assert_eq!(md.version, Some([1, 0]));
        assert_eq!(md.kernels.len(), 1);
        let k = &md.kernels[0];
        assert_eq!(
            (k.name.as_str(), k.symbol.as_deref()),
            ("vadd", Some("vadd@kd"))
        );
        assert_eq!(
            (k.sgpr_count, k.vgpr_count, k.lds_size, k.kernarg_size),
            (Some(16), Some(8), Some(256), Some(24))
        );
    }

    #[test]
    fn kernel_names_demangle() {
        assert_eq!(
            demangle("_Z8tu1_fillPff").as_deref(),
            Some("tu1_fill(float*, float)")
        );
        assert_eq!(demangle("vadd"), None);
        assert_eq!(demangle("_Zgarbage"), None);
    }

    #[test]
    fn yaml_aliases_are_refused() {
        let doc = b"---\na: &x [1, 2]\nb: [*x, *x]\n...\n";
        assert!(from_yaml(doc).unwrap_err().contains("alias"));
    }

    /// A msgpack string (fixstr or str8).
    fn mp_str(s: &str) -> Vec<u8> {
        let mut v = if s.len() < 32 {
            vec![0xa0 | s.len() as u8]
        } else {
            vec![0xd9, s.len() as u8]
        };
        v.extend_from_slice(s.as_bytes());
        v
    }

    /// A map of string keys (fixmap), values already encoded.
    fn mp_map(pairs: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let mut v = vec![0x80 | pairs.len() as u8];
        for (k, val) in pairs {
            v.extend(mp_str(k));
            v.extend_from_slice(val);
        }
        v
    }

    fn mp_array(items: &[Vec<u8>]) -> Vec<u8> {
        let mut v = vec![0x90 | items.len() as u8];
        for i in items {
            v.extend_from_slice(i);
        }
        v
    }

    /// A metadata document with the shapes real ones have (`.args` arrays of maps) and the odd
    /// ones a hostile file may have: repeated keys, a kernel that is not a map, an unknown key.
    fn sample_document() -> Vec<u8> {
        let args = mp_array(&[
            mp_map(&[(".size", vec![8]), (".value_kind", mp_str("global_buffer"))]),
            mp_map(&[(".size", vec![4]), (".value_kind", mp_str("by_value"))]),
        ]);
        let k1 = mp_map(&[
            (".args", args),
            (".name", mp_str("_Z8tu1_fillPff")),
            (".symbol", mp_str("_Z8tu1_fillPff.kd")),
            (".sgpr_count", vec![0xcc, 200]),
            (".vgpr_count", vec![12]),
            (".vgpr_count", vec![13]),
            (".uses_dynamic_stack", vec![0xc3]),
            (".group_segment_fixed_size", vec![0xcd, 0x10, 0x00]),
        ]);
        let k2 = mp_str("not a map");
        let k3 = mp_map(&[(".name", mp_str("vadd")), (".wavefront_size", vec![64])]);
        mp_map(&[
            ("amdhsa.printf", mp_array(&[mp_str("1:4:%d")])),
            ("amdhsa.version", mp_array(&[vec![1], vec![2]])),
            ("amdhsa.version", mp_array(&[vec![9], vec![9]])),
            ("amdhsa.kernels", mp_array(&[k1, k2, k3])),
            ("amdhsa.kernels", mp_array(&[])),
            ("amdhsa.target", mp_str("amdgcn-amd-amdhsa--gfx90a")),
        ])
    }

    #[test]
    fn msgpack_metadata_is_read_in_one_pass() {
        let md = from_msgpack(&sample_document(), &mut Demangler::new(0)).unwrap();
        assert_eq!(md.version, Some([1, 2]), "the first amdhsa.version counts");
        assert_eq!(md.target.as_deref(), Some("amdgcn-amd-amdhsa--gfx90a"));
        assert_eq!(md.kernels.len(), 3, "the first amdhsa.kernels counts");
        let k = &md.kernels[0];
        assert_eq!(k.name, "_Z8tu1_fillPff");
        assert_eq!(k.demangled.as_deref(), Some("tu1_fill(float*, float)"));
        assert_eq!(k.symbol.as_deref(), Some("_Z8tu1_fillPff.kd"));
        assert_eq!((k.sgpr_count, k.vgpr_count), (Some(200), Some(13)));
        assert_eq!((k.lds_size, k.uses_dynamic_stack), (Some(4096), Some(true)));
        assert_eq!(md.kernels[1], Kernel::default());
        assert_eq!(md.kernels[2].name, "vadd");
        assert_eq!(md.kernels[2].wavefront_size, Some(64));
    }

    #[test]
    fn msgpack_metadata_fails_exactly_where_decoding_fails() {
        // Every truncation and every corrupted byte of a document: the one-pass reader must
        // accept what the validating decoder accepts and report the same error otherwise.
        let doc = sample_document();
        let mut cases: Vec<Vec<u8>> = (0..doc.len()).map(|n| doc[..n].to_vec()).collect();
        for i in 0..doc.len() {
            for b in [0xc1, 0xdd, 0xdf, 0x9f, 0x8f, 0xff] {
                let mut d = doc.clone();
                d[i] = b;
                cases.push(d);
            }
        }
        for d in cases {
            let got = from_msgpack(&d, &mut Demangler::new(0)).map(|_| ());
            let want = msgpack::decode(&d).map(|_| ());
            assert_eq!(got, want, "document {d:02x?}");
        }
    }

    #[test]
    fn remembered_names_match_fresh_demangling_and_stay_in_budget() {
        let mut names = Demangler::new(64);
        for _ in 0..3 {
            for n in ["_Z8tu1_fillPff", "vadd", "_Z3fooi", "_Zgarbage"] {
                assert_eq!(names.demangle(n), demangle(n));
                assert!(names.held <= 64);
            }
        }
        assert!(!names.seen.is_empty());
        let mut none = Demangler::new(0);
        assert_eq!(none.demangle("_Z3fooi").as_deref(), Some("foo(int)"));
        assert!(none.seen.is_empty());
    }

    #[test]
    fn non_elf_input_is_an_error() {
        assert_eq!(read(b"nope").unwrap_err(), MetadataError::NotElf64);
    }
}
