//! Just enough of 64-bit little-endian ELF to find GPU code in host files: section and program
//! headers, the dynamic section, RELA/RELR relocations and symbols.
//!
//! The layouts are `object`'s (`object::elf`'s `FileHeader64`, `ProgramHeader64`,
//! `SectionHeader64`, `Dyn64`, `Rela64`, `Relr64`, `Sym64`), read from slices this module has
//! bounded first: every table is checked against the file before it is
//! read, with an error that names the header field and offset, and only the headers asked for
//! are read, which keeps a 1.6 GB library's walk at a few hundred kilobytes. RELR and the
//! DT_GNU_HASH chain walk are decoded here with checked arithmetic (`object`'s `RelrIterator`
//! and `GnuHashTable::symbol_table_length` add without a check, and a hostile table must not
//! overflow).

use std::collections::{HashMap, HashSet};

use object::elf::{Dyn64, FileHeader64, ProgramHeader64, Rela64, Relr64, SectionHeader64, Sym64};
use object::{LittleEndian as LE, pod};
use rocpack_bytes::Bytes;

use crate::error::{FormatError, Kind};

pub use object::elf::{
    ET_DYN, ET_EXEC, ET_REL, PF_W, PF_X, PT_DYNAMIC, PT_LOAD, SHT_DYNSYM, SHT_NOBITS, SHT_RELA,
    SHT_RELR, SHT_SYMTAB,
};
/// LLVM's offloading section type (`.llvm.offloading`), not in `object::elf`.
pub const SHT_LLVM_OFFLOADING: u32 = 0x6fff_4c0b;
// Dynamic tags, as the u64 `d_tag` holds them.
const DT_NULL: u64 = object::elf::DT_NULL as u64;
const DT_HASH: u64 = object::elf::DT_HASH as u64;
const DT_STRTAB: u64 = object::elf::DT_STRTAB as u64;
const DT_SYMTAB: u64 = object::elf::DT_SYMTAB as u64;
const DT_STRSZ: u64 = object::elf::DT_STRSZ as u64;
const DT_GNU_HASH: u64 = object::elf::DT_GNU_HASH as u64;
const DT_RELA: u64 = object::elf::DT_RELA as u64;
const DT_RELASZ: u64 = object::elf::DT_RELASZ as u64;
/// `DT_RELRSZ` and `DT_RELR` (gABI), not in `object::elf`.
const DT_RELRSZ: u64 = 35;
const DT_RELR: u64 = 36;

/// A value of `object::elf` type `T` at the start of `data` (which is long enough: callers
/// bound it first).
fn read<T: object::Pod>(data: &[u8]) -> Option<&T> {
    pod::from_bytes::<T>(data).ok().map(|(t, _)| t)
}

fn err(offset: u64, message: impl Into<String>) -> FormatError {
    FormatError::new(Kind::Elf, offset, message)
}

/// A section header.
#[derive(Debug, Clone)]
pub struct Section<'a> {
    pub index: usize,
    pub name: &'a [u8],
    pub sh_type: u32,
    pub flags: u64,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
    pub link: u32,
    pub info: u32,
    pub header_offset: u64,
}

/// A program header.
#[derive(Debug, Clone, Copy)]
pub struct Segment {
    pub p_type: u32,
    pub flags: u32,
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
}

/// A relocation with an addend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rela {
    pub offset: u64,
    pub r_type: u32,
    pub sym: u32,
    pub addend: i64,
}

/// A symbol table entry (the fields used here).
#[derive(Debug, Clone, Copy)]
pub struct Symbol {
    pub shndx: u16,
    pub value: u64,
}

/// A parsed 64-bit little-endian ELF file.
#[derive(Debug)]
pub struct Elf<'a> {
    pub data: Bytes<'a>,
    pub e_type: u16,
    pub e_machine: u16,
    pub sections: Vec<Section<'a>>,
    pub segments: Vec<Segment>,
    /// Entries of the dynamic section (tag, value), up to DT_NULL; read once.
    pub dynamic: Vec<(u64, u64)>,
    /// PT_LOAD segments whose file range runs past the end of the file (a truncated file).
    pub truncated_segments: Vec<Segment>,
}

/// Whether `data` starts with the ELF magic.
pub fn is_elf(data: &[u8]) -> bool {
    data.starts_with(b"\x7fELF")
}

/// Whether `data` is a 64-bit little-endian ELF file (the only kind HIP host code comes in).
pub fn is_elf64_le(data: &[u8]) -> bool {
    data.starts_with(b"\x7fELF") && data.get(4) == Some(&2) && data.get(5) == Some(&1)
}

impl<'a> Elf<'a> {
    /// Reads the file header, the section headers (if any) and the program headers.
    ///
    /// # Errors
    /// [`FormatError`] for a 32-bit or big-endian file, or header tables outside the file.
    pub fn parse(data: &'a [u8]) -> Result<Self, FormatError> {
        let b = Bytes::new(data);
        if !b.has_at(0, b"\x7fELF") {
            return Err(err(0, "no ELF magic"));
        }
        let (class, encoding) = (b.u8(4).unwrap_or(0), b.u8(5).unwrap_or(0));
        if class != 2 || encoding != 1 {
            return Err(err(
                4,
                format!(
                    "only 64-bit little-endian ELF is supported (class {class}, data {encoding})"
                ),
            ));
        }
        if b.len() < 64 {
            return Err(err(
                0,
                format!("file is {} bytes, shorter than an ELF header", b.len()),
            ));
        }
        let h = read::<FileHeader64<LE>>(data)
            .ok_or_else(|| err(0, "file is shorter than an ELF header"))?;
        let e_type = h.e_type.get(LE);
        let e_machine = h.e_machine.get(LE);
        let (phoff, shoff) = (h.e_phoff.get(LE), h.e_shoff.get(LE));
        let (phentsize, phnum) = (
            u64::from(h.e_phentsize.get(LE)),
            u64::from(h.e_phnum.get(LE)),
        );
        let (shentsize, mut shnum, shstrndx) = (
            u64::from(h.e_shentsize.get(LE)),
            u64::from(h.e_shnum.get(LE)),
            u64::from(h.e_shstrndx.get(LE)),
        );

        let mut segments = Vec::new();
        if phnum > 0 {
            if phentsize < 56 {
                return Err(err(
                    54,
                    format!("e_phentsize {phentsize} is smaller than 56"),
                ));
            }
            check_table(b, phoff, phentsize, phnum, 32, "program header table")?;
            for i in 0..phnum {
                let at = phoff + i * phentsize;
                let p = b
                    .read_at(at, 56)
                    .ok()
                    .and_then(read::<ProgramHeader64<LE>>)
                    .ok_or_else(|| err(at, "program header outside the file"))?;
                segments.push(Segment {
                    p_type: p.p_type.get(LE),
                    flags: p.p_flags.get(LE),
                    offset: p.p_offset.get(LE),
                    vaddr: p.p_vaddr.get(LE),
                    filesz: p.p_filesz.get(LE),
                });
            }
        }

        let mut sections = Vec::new();
        if shoff != 0 {
            if shentsize < 64 {
                return Err(err(
                    58,
                    format!("e_shentsize {shentsize} is smaller than 64"),
                ));
            }
            if shnum == 0 {
                // Extended numbering: the real count is in section 0's sh_size.
                // Only `sh_size` is read: section 0 may be cut short after it.
                shnum = b
                    .u64(shoff.saturating_add(32))
                    .map_err(|_| err(40, "e_shoff points outside the file"))?;
            }
            check_table(b, shoff, shentsize, shnum, 40, "section header table")?;
            let mut raw = Vec::new();
            for i in 0..shnum {
                let at = shoff + i * shentsize;
                let s = b
                    .read_at(at, 64)
                    .ok()
                    .and_then(read::<SectionHeader64<LE>>)
                    .ok_or_else(|| err(at, "section header outside the file"))?;
                raw.push((at, s));
            }
            let strtab = raw
                .get(shstrndx as usize)
                .and_then(|(_, s)| b.sub(s.sh_offset.get(LE), s.sh_size.get(LE)).ok());
            for (index, (at, s)) in raw.into_iter().enumerate() {
                let name_off = u64::from(s.sh_name.get(LE));
                let name = strtab
                    .and_then(|t| cstr_at(t, name_off))
                    .unwrap_or_default();
                sections.push(Section {
                    index,
                    name,
                    sh_type: s.sh_type.get(LE),
                    flags: s.sh_flags.get(LE),
                    addr: s.sh_addr.get(LE),
                    offset: s.sh_offset.get(LE),
                    size: s.sh_size.get(LE),
                    link: s.sh_link.get(LE),
                    info: s.sh_info.get(LE),
                    header_offset: at,
                });
            }
        }
        let truncated_segments = segments
            .iter()
            .copied()
            .filter(|p| {
                p.p_type == PT_LOAD
                    && p.offset
                        .checked_add(p.filesz)
                        .is_none_or(|end| end > b.len())
            })
            .collect();
        let dynamic = read_dynamic(b, &segments);
        Ok(Elf {
            data: b,
            e_type,
            e_machine,
            sections,
            segments,
            dynamic,
            truncated_segments,
        })
    }

    /// The first section with this name.
    pub fn section(&self, name: &[u8]) -> Option<&Section<'a>> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// The bytes of a section (empty for SHT_NOBITS).
    ///
    /// # Errors
    /// [`FormatError`] when the section runs outside the file.
    pub fn section_data(&self, s: &Section<'_>) -> Result<&'a [u8], FormatError> {
        if s.sh_type == SHT_NOBITS {
            return Ok(&[]);
        }
        self.data.read_at(s.offset, s.size).map_err(|_| {
            err(
                s.header_offset,
                format!(
                    "section {} (offset {}, size {}) runs outside the file",
                    rocpack_bytes::lossless_string(s.name),
                    s.offset,
                    s.size
                ),
            )
        })
    }

    /// File offset of a virtual address, through the PT_LOAD segments.
    pub fn vaddr_to_offset(&self, vaddr: u64) -> Option<u64> {
        self.segments
            .iter()
            .filter(|p| p.p_type == PT_LOAD)
            .find_map(|p| {
                let delta = vaddr.checked_sub(p.vaddr)?;
                (delta < p.filesz)
                    .then(|| p.offset.checked_add(delta))
                    .flatten()
            })
    }

    /// The PT_LOAD segment holding a file offset, as (segment start offset, its file size).
    pub fn load_segment_at_offset(&self, offset: u64) -> Option<Segment> {
        self.segments
            .iter()
            .copied()
            .filter(|p| p.p_type == PT_LOAD)
            .find(|p| offset >= p.offset && offset - p.offset < p.filesz)
    }

    /// The dynamic relocations (RELA) that patch one of the `wanted` addresses, and the
    /// `wanted` addresses that RELR relocates, as the dynamic section describes them; works
    /// without section headers. Only wanted addresses are kept, so a hostile table cannot make
    /// this allocate more than the caller asked about.
    ///
    /// With `file` (the file that holds this ELF from offset `base`), the RELA table is read
    /// with `pread`, 64 KiB at a time, instead of through the map: jax-rocm7-pjrt's plugin has
    /// 9.4 MB of it, which would stay mapped in the process.
    pub fn dynamic_relocations(
        &self,
        wanted: &HashSet<u64>,
        file: Option<(&dyn crate::ReadAt, u64)>,
    ) -> (HashMap<u64, Rela>, HashSet<u64>) {
        let get = |tag| self.dynamic_value(tag);
        // The table's place in this ELF's bytes, cut to them.
        let place = |addr: Option<u64>, size: Option<u64>| -> Option<(u64, u64)> {
            let off = self.vaddr_to_offset(addr?)?;
            let len = self.data.read_at_most(off, size?).len() as u64;
            Some((off, len))
        };
        let mut rela = HashMap::new();
        let mut keep = |r: Rela| {
            if wanted.contains(&r.offset) {
                rela.insert(r.offset, r);
            }
        };
        match (place(get(DT_RELA), get(DT_RELASZ)), file) {
            (Some((off, len)), Some((file, base))) => {
                // Whole entries per read: 2,730 of 24 bytes. Where a read fails or finds the
                // file shorter, the table ends, as through the map over the same bytes.
                if let Some(from) = base.checked_add(off) {
                    for_each_rela_read(file, from, len, 65_520, &mut keep);
                }
            }
            (Some((off, len)), None) => {
                for_each_rela(self.data.read_at_most(off, len), &mut keep);
            }
            (None, _) => {}
        }
        let mut relr = HashSet::new();
        let relr_table = place(get(DT_RELR), get(DT_RELRSZ))
            .map(|(off, len)| self.data.read_at_most(off, len))
            .unwrap_or_default();
        for_each_relr(relr_table, |addr| {
            if wanted.contains(&addr) {
                relr.insert(addr);
            }
        });
        (rela, relr)
    }

    /// The value of dynamic tag `tag`, if the dynamic section has it.
    fn dynamic_value(&self, tag: u64) -> Option<u64> {
        self.dynamic
            .iter()
            .find(|(t, _)| *t == tag)
            .map(|(_, v)| *v)
    }

    /// The dynamic symbol table found through the dynamic section, as the loader finds it when
    /// there are no section headers: DT_SYMTAB and DT_STRTAB/DT_STRSZ, with the symbol count
    /// from DT_HASH's `nchain`, else from walking DT_GNU_HASH's chains (the highest symbol any
    /// bucket reaches). Returns the table's bytes (24 per symbol, cut to the file) and the
    /// string table's.
    pub fn dynamic_symbol_table(&self) -> Option<(&'a [u8], &'a [u8])> {
        let at = |tag| {
            self.dynamic_value(tag)
                .and_then(|v| self.vaddr_to_offset(v))
        };
        let symtab = at(DT_SYMTAB)?;
        let strtab = at(DT_STRTAB)?;
        let strings = self
            .data
            .read_at_most(strtab, self.dynamic_value(DT_STRSZ)?);
        // Ours, not `object`'s HashTable/GnuHashTable: those need the whole table inside the
        // file, give no count for a table whose buckets are all empty, and add to a u32 without
        // a check while walking a chain a hostile file never ends.
        let count = if let Some(hash) = at(DT_HASH) {
            u64::from(self.data.u32(hash.checked_add(4)?).ok()?)
        } else {
            self.gnu_hash_count(at(DT_GNU_HASH)?)?
        };
        let table = self.data.read_at_most(symtab, count.checked_mul(24)?);
        Some((table, strings))
    }

    /// Symbols counted by a DT_GNU_HASH table at `off`: one past the last index a chain ends at.
    fn gnu_hash_count(&self, off: u64) -> Option<u64> {
        let b = self.data;
        let nbuckets = u64::from(b.u32(off).ok()?);
        let symoffset = u64::from(b.u32(off.checked_add(4)?).ok()?);
        let bloom = u64::from(b.u32(off.checked_add(8)?).ok()?);
        let buckets = off.checked_add(16)?.checked_add(bloom.checked_mul(8)?)?;
        let chains = buckets.checked_add(nbuckets.checked_mul(4)?)?;
        // Every bucket is read from the file: a count the file merely claims allocates nothing.
        let mut last = None;
        for i in 0..nbuckets {
            let v = u64::from(b.u32(buckets.checked_add(i * 4)?).ok()?);
            last = last.max((v >= symoffset).then_some(v));
        }
        let Some(mut index) = last else {
            return Some(symoffset);
        };
        // Walk the last chain to its end (its entry with the low bit set).
        loop {
            let entry = b
                .u32(chains.checked_add(index.checked_sub(symoffset)?.checked_mul(4)?)?)
                .ok()?;
            index += 1;
            if entry & 1 == 1 {
                return Some(index);
            }
        }
    }

    /// Symbol `index` of the dynamic symbol table (DT_SYMTAB).
    pub fn dynamic_symbol(&self, index: u32) -> Option<Symbol> {
        let symtab = self.dynamic_value(DT_SYMTAB)?;
        let off = self
            .vaddr_to_offset(symtab)?
            .checked_add(u64::from(index).checked_mul(24)?)?;
        symbol_at(self.data, off)
    }

    /// Symbol `index` of the symbol table in section `table`.
    pub fn symbol(&self, table: usize, index: u32) -> Option<Symbol> {
        let s = self.sections.get(table)?;
        let rel = u64::from(index).checked_mul(24)?;
        if rel.checked_add(24)? > s.size {
            return None;
        }
        symbol_at(self.data, s.offset.checked_add(rel)?)
    }
}

fn symbol_at(b: Bytes<'_>, off: u64) -> Option<Symbol> {
    let s = read::<Sym64<LE>>(b.read_at(off, 24).ok()?)?;
    Some(Symbol {
        shndx: s.st_shndx.get(LE),
        value: s.st_value.get(LE),
    })
}

fn check_table(
    b: Bytes<'_>,
    off: u64,
    entsize: u64,
    count: u64,
    field: u64,
    what: &str,
) -> Result<(), FormatError> {
    let size = entsize.checked_mul(count);
    if size
        .and_then(|s| off.checked_add(s))
        .is_none_or(|end| end > b.len())
    {
        return Err(err(
            field,
            format!(
                "{what} ({count} entries of {entsize} bytes at offset {off}) runs past the end of the {}-byte file",
                b.len()
            ),
        ));
    }
    Ok(())
}

/// The NUL-terminated string at `off` of a string table, without its NUL.
pub(crate) fn cstr_at(t: Bytes<'_>, off: u64) -> Option<&[u8]> {
    let tail = t.tail(off).ok()?;
    tail.get(..tail.iter().position(|&c| c == 0)?)
}

/// [`for_each_rela`] over the `len` bytes of `file` from `from`, read `chunk` bytes (a multiple
/// of 24) at a time; a read that fails or finds the file shorter ends the table there.
fn for_each_rela_read(
    file: &dyn crate::ReadAt,
    from: u64,
    len: u64,
    chunk: usize,
    mut f: impl FnMut(Rela),
) {
    let mut buf = vec![0u8; len.min(chunk as u64) as usize];
    let mut at = 0u64;
    while at < len {
        let n = (len - at).min(buf.len() as u64) as usize;
        let piece = buf.get_mut(..n).unwrap_or_default();
        if !from
            .checked_add(at)
            .is_some_and(|o| crate::inspect::read_exact_at(file, o, piece))
        {
            break;
        }
        for_each_rela(piece, &mut f);
        at += n as u64;
    }
}

/// Calls `f` with each RELA entry of `data` (24 bytes each; a partial one at the end is not
/// read).
pub fn for_each_rela(data: &[u8], mut f: impl FnMut(Rela)) {
    let (table, _) =
        pod::slice_from_bytes::<Rela64<LE>>(data, data.len() / 24).unwrap_or((&[], &[]));
    for r in table {
        f(Rela {
            offset: r.r_offset.get(LE),
            r_type: r.r_type(LE, false),
            sym: r.r_sym(LE, false),
            addend: r.r_addend.get(LE),
        });
    }
}

/// Calls `f` with every address an SHT_RELR table relocates (the gABI encoding: an even entry
/// is an address, an odd one a bitmap of the 63 words after the previous run).
pub fn for_each_relr(data: &[u8], mut f: impl FnMut(u64)) {
    let (table, _) =
        pod::slice_from_bytes::<Relr64<LE>>(data, data.len() / 8).unwrap_or((&[], &[]));
    let mut base: Option<u64> = None;
    for r in table {
        let entry = r.0.get(LE);
        if entry & 1 == 0 {
            f(entry);
            base = entry.checked_add(8);
        } else if let Some(b) = base {
            let mut bits = entry >> 1;
            let mut i = 0u64;
            while bits != 0 {
                if bits & 1 != 0 {
                    if let Some(addr) = b.checked_add(i * 8) {
                        f(addr);
                    }
                }
                bits >>= 1;
                i += 1;
            }
            base = b.checked_add(63 * 8);
        }
    }
}

/// The addresses an SHT_RELR table relocates.
pub fn parse_relr(data: &[u8]) -> Vec<u64> {
    let mut out = Vec::new();
    for_each_relr(data, |a| out.push(a));
    out
}

fn read_dynamic(b: Bytes<'_>, segments: &[Segment]) -> Vec<(u64, u64)> {
    let Some(dynseg) = segments.iter().find(|p| p.p_type == PT_DYNAMIC) else {
        return Vec::new();
    };
    let d = b.read_at_most(dynseg.offset, dynseg.filesz);
    let (entries, _) = pod::slice_from_bytes::<Dyn64<LE>>(d, d.len() / 16).unwrap_or((&[], &[]));
    entries
        .iter()
        .map(|e| (e.d_tag.get(LE), e.d_val.get(LE)))
        .take_while(|&(tag, _)| tag != DT_NULL)
        .collect()
}

/// Relocation types that store `B + A` (relative) or `S + A` (absolute 64-bit), per machine.
pub fn reloc_kind(e_machine: u16, r_type: u32) -> Option<RelocKind> {
    match (e_machine, r_type) {
        // x86-64
        (62, 8) | (183, 1027) | (21, 22) => Some(RelocKind::Relative),
        (62, 1) | (183, 257) | (21, 38) => Some(RelocKind::Absolute),
        _ => None,
    }
}

/// How a pointer-sized relocation computes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelocKind {
    /// Load base + addend.
    Relative,
    /// Symbol value + addend.
    Absolute,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rela_table_read_in_pieces_gives_every_entry_once() {
        let mut table = Vec::new();
        for i in 0..100u64 {
            table.extend((0x1000 + 8 * i).to_le_bytes());
            table.extend(8u64.to_le_bytes()); // R_X86_64_RELATIVE, symbol 0
            table.extend((0x2000 + i).to_le_bytes());
        }
        let mut whole = Vec::new();
        for_each_rela(&table, |r| whole.push((r.offset, r.addend)));
        assert_eq!(whole.len(), 100);
        // The table 13 bytes into the file, read in pieces of one, two, seven and 2,730 entries.
        let pad = 13;
        let mut file = vec![0xee; pad];
        file.extend(&table);
        for chunk in [24, 48, 24 * 7, 65_520] {
            let mut read = Vec::new();
            for_each_rela_read(
                &file.as_slice(),
                pad as u64,
                table.len() as u64,
                chunk,
                |r| {
                    read.push((r.offset, r.addend));
                },
            );
            assert_eq!(read, whole, "chunk {chunk}");
        }
        // A file that ends inside the table: the whole pieces before its end.
        let cut = &file[..pad + 24 * 40 + 5];
        let mut read = Vec::new();
        for_each_rela_read(&cut, pad as u64, table.len() as u64, 48, |r| {
            read.push(r.offset);
        });
        assert_eq!(read.len(), 40);
    }

    #[test]
    fn relr_bitmaps_expand_to_addresses() {
        let mut t = Vec::new();
        t.extend(0x1000u64.to_le_bytes());
        t.extend(((0b101u64 << 1) | 1).to_le_bytes());
        assert_eq!(parse_relr(&t), vec![0x1000, 0x1008, 0x1018]);
        // A bitmap with no preceding address is ignored; addresses near u64::MAX do not overflow.
        let mut t = Vec::new();
        t.extend(u64::MAX.to_le_bytes());
        t.extend((u64::MAX - 7).to_le_bytes());
        t.extend(u64::MAX.to_le_bytes());
        assert_eq!(parse_relr(&t), vec![u64::MAX - 7]);
    }

    /// An `Elf` over `data` alone, for the table readers that take offsets.
    fn bare(data: &[u8]) -> Elf<'_> {
        Elf {
            data: Bytes::new(data),
            e_type: ET_DYN,
            e_machine: 62,
            sections: Vec::new(),
            segments: Vec::new(),
            dynamic: Vec::new(),
            truncated_segments: Vec::new(),
        }
    }

    fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn gnu_hash_counts_to_the_end_of_the_last_chain_and_survives_hostile_tables() {
        // nbuckets 2, symoffset 1, no bloom words, shift 0; buckets 1 and 3; chain values for
        // symbols 1, 2, 3: symbol 2 ends bucket 0's chain, symbol 3 ends bucket 1's.
        let t = words(&[2, 1, 0, 0, 1, 3, 2, 5, 7]);
        assert_eq!(bare(&t).gnu_hash_count(0), Some(4));
        // Every bucket empty (a program that only imports): the symbols below symoffset.
        let t = words(&[2, 5, 0, 0, 0, 0]);
        assert_eq!(bare(&t).gnu_hash_count(0), Some(5));
        // A bucket near u32::MAX and a chain that never ends: no count, no overflow.
        let t = words(&[1, 0xffff_fff0, 0, 0, 0xffff_ffff, 2, 2, 2]);
        assert_eq!(bare(&t).gnu_hash_count(0), None);
        let t = words(&[1, 0, 0, 0, u32::MAX, 2, 2]);
        assert_eq!(bare(&t).gnu_hash_count(0), None);
        // A table cut short.
        assert_eq!(bare(&words(&[3, 1])).gnu_hash_count(0), None);
    }

    #[test]
    fn short_or_foreign_files_are_errors() {
        assert!(Elf::parse(b"\x7fELF\x02\x01").is_err());
        assert!(Elf::parse(b"\x7fELF\x01\x01\0\0\0\0\0\0\0\0\0\0").is_err());
        let mut h = vec![0u8; 64];
        h[..6].copy_from_slice(b"\x7fELF\x02\x01");
        h[40..48].copy_from_slice(&64u64.to_le_bytes());
        h[58..60].copy_from_slice(&64u16.to_le_bytes());
        h[60..62].copy_from_slice(&u16::MAX.to_le_bytes());
        assert!(
            Elf::parse(&h)
                .unwrap_err()
                .message
                .contains("section header table")
        );
    }
}
