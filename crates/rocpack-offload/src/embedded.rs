//! GPU code embedded in a host file's ordinary data: offload bundles, compressed bundles and
//! bare AMDGPU code objects that a library keeps in `.rodata` (or any other section) and
//! loads itself with `hipModuleLoadData`, instead of the `.hip_fatbin` the runtime registers.
//!
//! The search knows nothing of ELF: it takes byte ranges (a section, or a PT_LOAD segment of a
//! file without section headers; a PE section for the PE reader) and reports *census hits*,
//! places whose first bytes look like a container header. Whether a hit really is one is
//! decided by [`code_object_extent`] and the bundle/CCOB parsers; a hit that fails is GPU
//! code rocpack cannot classify, which the walk reports as such.

use std::borrow::Cow;

use memchr::memmem;
use object::elf::{FileHeader64, ProgramHeader64, SectionHeader64};
use object::{LittleEndian as LE, pod};
use rocpack_amdgpu::code_object::EM_AMDGPU;
use rocpack_bytes::Bytes;

use crate::inspect::{ReadAt, read_exact_at};
use crate::{bundle, ccob};

/// One range of a file to search.
#[derive(Debug, Clone)]
pub struct ScanRange<'a> {
    /// The section's name (or a description such as `PT_LOAD segment 2`).
    pub name: String,
    /// An index the symbol lookup understands (the ELF section index; PE section number).
    pub index: usize,
    /// Offset of `data` in the file being inspected.
    pub file_offset: u64,
    /// The range's bytes.
    pub data: &'a [u8],
    /// The virtual address of `data`'s first byte, when it is mapped.
    pub vaddr: Option<u64>,
}

/// Names the symbol that covers embedded code.
pub trait SymbolLookup {
    /// The table symbols come from (`.symtab`, `.dynsym`), `None` when the file has none.
    fn table(&self) -> Option<&str>;
    /// The symbol covering `offset` in `range` (st_value ≤ address < st_value + st_size).
    fn covering(&mut self, range: &ScanRange<'_>, offset: u64) -> Option<String>;
}

/// A file without symbols.
pub struct NoSymbols;

impl SymbolLookup for NoSymbols {
    fn table(&self) -> Option<&str> {
        None
    }
    fn covering(&mut self, _: &ScanRange<'_>, _: u64) -> Option<String> {
        None
    }
}

/// What a census hit looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Magic {
    /// `__CLANG_OFFLOAD_BUNDLE__` followed by a plausible entry count.
    Bundle,
    /// `CCOB` followed by a known version and method.
    Ccob,
    /// A 64-bit little-endian ELF header with `e_machine` EM_AMDGPU.
    CodeObject,
}

impl Magic {
    /// `an offload bundle`, `a compressed offload bundle`, `an AMDGPU code object`.
    pub fn name(self) -> &'static str {
        match self {
            Magic::Bundle => "an offload bundle",
            Magic::Ccob => "a compressed offload bundle",
            Magic::CodeObject => "an AMDGPU code object",
        }
    }
}

/// `\x7fELF`, ELFCLASS64, ELFDATA2LSB, EV_CURRENT.
const ELF_NEEDLE: &[u8] = b"\x7fELF\x02\x01\x01";
/// Bytes of the searched data held in memory at a time (read with pread when the file is at
/// hand, so the pages are copied from the page cache instead of being faulted into the map).
const CHUNK: usize = 64 << 10;
/// Bytes a hit needs to be judged by [`census_hit`]; chunks overlap by this much.
pub const HEAD: usize = 64;
/// Most entries a bundle hit may claim to be counted (clang writes one per target plus host).
const MAX_CENSUS_ENTRIES: u64 = 4096;

/// Whether the bytes at a magic hit pass the census: the fixed fields after the magic hold
/// values a real header has. `head` starts at the hit.
pub fn census_hit(kind: Magic, head: &[u8]) -> bool {
    let b = Bytes::new(head);
    match kind {
        Magic::Bundle => b
            .u64(bundle::MAGIC.len() as u64)
            .is_ok_and(|n| (1..=MAX_CENSUS_ENTRIES).contains(&n)),
        Magic::Ccob => {
            b.u16(4).is_ok_and(|v| (1..=3).contains(&v)) && b.u16(6).is_ok_and(|m| m <= 1)
        }
        Magic::CodeObject => b.has_at(0, ELF_NEEDLE) && b.u16(18).is_ok_and(|m| m == EM_AMDGPU),
    }
}

/// Calls `f(kind, offset, head)` for every census hit in `data`, in order of offset; `head` is
/// up to [`HEAD`] bytes at the hit. `f` returns the offset to resume at (past the container
/// it read, or just past the hit), so the bytes of a container already read are neither
/// searched nor read again.
///
/// `base` is `data`'s offset in `file`; with both, the bytes are read with pread.
pub fn for_each_hit(
    data: &[u8],
    base: Option<u64>,
    file: Option<&dyn ReadAt>,
    f: &mut dyn FnMut(Magic, u64, &[u8]) -> u64,
) {
    let finders = [
        (Magic::Bundle, memmem::Finder::new(bundle::MAGIC)),
        (Magic::Ccob, memmem::Finder::new(ccob::MAGIC)),
        (Magic::CodeObject, memmem::Finder::new(ELF_NEEDLE)),
    ];
    let src = Bytes::new(data);
    let mut buf = Vec::new();
    let mut pos = 0u64;
    let mut hits: Vec<(u64, Magic)> = Vec::new();
    while pos < src.len() {
        let want = (CHUNK + HEAD) as u64;
        let chunk = read_chunk(data, pos, want, base, file, &mut buf);
        let searched_end = pos.saturating_add(CHUNK as u64).min(src.len());
        hits.clear();
        for (kind, finder) in &finders {
            for at in finder.find_iter(chunk) {
                let abs = pos + at as u64;
                if abs < searched_end {
                    hits.push((abs, *kind));
                }
            }
        }
        hits.sort_unstable_by_key(|h| h.0);
        let mut resume = pos;
        for &(abs, kind) in &hits {
            if abs < resume {
                continue;
            }
            let rel = (abs - pos) as usize;
            let head = chunk.get(rel..).unwrap_or_default();
            let head = head.get(..HEAD).unwrap_or(head);
            if census_hit(kind, head) {
                resume = f(kind, abs, head).max(abs + 1);
            }
        }
        pos = searched_end.max(resume);
    }
}

/// The bytes of `data` at `pos` (up to `want`): read with pread into `buf`, which is reused
/// from chunk to chunk, when the file is at hand; else the mapped bytes themselves.
fn read_chunk<'d>(
    data: &'d [u8],
    pos: u64,
    want: u64,
    base: Option<u64>,
    file: Option<&dyn ReadAt>,
    buf: &'d mut Vec<u8>,
) -> &'d [u8] {
    let slice = Bytes::new(data).read_at_most(pos, want);
    if let (Some(file), Some(at)) = (file, base.and_then(|b| b.checked_add(pos))) {
        buf.resize(slice.len(), 0);
        if read_exact_at(file, at, buf) {
            return buf;
        }
    }
    slice
}

/// The extent of the AMDGPU code object at the start of an `avail`-byte region: the end of its
/// furthest header table or section. `read(offset, len)` gives up to `len` bytes at `offset`
/// of the region.
///
/// # Errors
/// What makes it no code object: a header field out of range, a table or section outside the
/// region, or a table with nothing in it.
pub fn code_object_extent<'d>(
    read: &dyn Fn(u64, u64) -> Cow<'d, [u8]>,
    avail: u64,
) -> Result<u64, String> {
    let head = read(0, 64);
    let h = Bytes::new(&head);
    if h.len() < 64 {
        return Err(format!("{} bytes left, fewer than an ELF header", h.len()));
    }
    let Ok((fh, _)) = pod::from_bytes::<FileHeader64<LE>>(&head) else {
        return Err(format!("{} bytes left, fewer than an ELF header", h.len()));
    };
    let e_type = fh.e_type.get(LE);
    if !(1..=3).contains(&e_type) {
        return Err(format!("e_type {e_type} is not REL, EXEC or DYN"));
    }
    if fh.e_version.get(LE) != 1 {
        return Err("e_version is not 1".into());
    }
    let e_ehsize = fh.e_ehsize.get(LE);
    if e_ehsize != 64 {
        return Err(format!("e_ehsize {e_ehsize} is not 64"));
    }
    let (phoff, phentsize, phnum) = (
        fh.e_phoff.get(LE),
        u64::from(fh.e_phentsize.get(LE)),
        u64::from(fh.e_phnum.get(LE)),
    );
    let (shoff, shentsize, shnum, shstrndx) = (
        fh.e_shoff.get(LE),
        u64::from(fh.e_shentsize.get(LE)),
        u64::from(fh.e_shnum.get(LE)),
        u64::from(fh.e_shstrndx.get(LE)),
    );
    if phnum == 0 && shnum == 0 {
        return Err("neither program nor section headers".into());
    }
    let table_end = |off: u64, entsize: u64, count: u64, need: u64, what: &str| {
        if count == 0 {
            return Ok(0);
        }
        if entsize != need {
            return Err(format!("{what} entry size {entsize} is not {need}"));
        }
        match entsize
            .checked_mul(count)
            .and_then(|s| s.checked_add(off))
            .filter(|&end| off >= 64 && end <= avail)
        {
            Some(end) => Ok(end),
            None => Err(format!(
                "{what} ({count} × {entsize} bytes at {off:#x}) lies outside the {avail} bytes available"
            )),
        }
    };
    let mut extent = 64u64
        .max(table_end(
            phoff,
            phentsize,
            phnum,
            56,
            "program header table",
        )?)
        .max(table_end(
            shoff,
            shentsize,
            shnum,
            64,
            "section header table",
        )?);
    if shnum > 0 && shstrndx >= shnum {
        return Err(format!("e_shstrndx {shstrndx} ≥ e_shnum {shnum}"));
    }
    let grow = |extent: &mut u64, off: u64, size: u64, what: String| match off.checked_add(size) {
        Some(end) if end <= avail => {
            *extent = (*extent).max(end);
            Ok(())
        }
        _ => Err(format!(
            "{what} ({size} bytes at {off:#x}) lies outside the {avail} bytes available"
        )),
    };
    if phnum > 0 {
        let table = read(phoff, phnum * 56);
        let (headers, _) = pod::slice_from_bytes::<ProgramHeader64<LE>>(&table, phnum as usize)
            .map_err(|()| "program headers unreadable")?;
        for (i, p) in headers.iter().enumerate() {
            grow(
                &mut extent,
                p.p_offset.get(LE),
                p.p_filesz.get(LE),
                format!("segment {i}"),
            )?;
        }
    }
    if shnum > 0 {
        let table = read(shoff, shnum * 64);
        let (headers, _) = pod::slice_from_bytes::<SectionHeader64<LE>>(&table, shnum as usize)
            .map_err(|()| "section headers unreadable")?;
        for (i, s) in headers.iter().enumerate() {
            if s.sh_type.get(LE) == crate::elf::SHT_NOBITS {
                continue;
            }
            grow(
                &mut extent,
                s.sh_offset.get(LE),
                s.sh_size.get(LE),
                format!("section {i}"),
            )?;
        }
    }
    Ok(extent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(data: &[u8]) -> Vec<(Magic, u64)> {
        let mut out = Vec::new();
        for_each_hit(data, None, None, &mut |k, at, _| {
            out.push((k, at));
            at + 1
        });
        out
    }

    #[test]
    fn census_needs_plausible_fields() {
        let mut d = vec![0u8; 3 << 20];
        // A bundle magic followed by a string, as in the HIP runtime's own .rodata: no hit.
        d[100..124].copy_from_slice(bundle::MAGIC);
        d[124..132].copy_from_slice(b"\0hipv4-a");
        // One with a count of 2 across the first chunk boundary.
        let at = CHUNK - 10;
        d[at..at + 24].copy_from_slice(bundle::MAGIC);
        d[at + 24] = 2;
        // CCOB v2 zstd.
        d[5000..5008].copy_from_slice(b"CCOB\x02\x00\x01\x00");
        // CCOB with method 7: no hit.
        d[6000..6008].copy_from_slice(b"CCOB\x02\x00\x07\x00");
        // AMDGPU ELF header, and an x86-64 one (no hit).
        d[7000..7007].copy_from_slice(ELF_NEEDLE);
        d[7018] = 224;
        d[8000..8007].copy_from_slice(ELF_NEEDLE);
        d[8018] = 62;
        assert_eq!(
            run(&d),
            vec![
                (Magic::Ccob, 5000),
                (Magic::CodeObject, 7000),
                (Magic::Bundle, at as u64)
            ]
        );
    }

    #[test]
    fn resume_skips_a_container() {
        let mut d = vec![0u8; 4096];
        for at in [0usize, 100, 2000] {
            d[at..at + 4].copy_from_slice(b"CCOB");
            d[at + 4] = 3;
        }
        let mut seen = Vec::new();
        for_each_hit(&d, None, None, &mut |_, at, _| {
            seen.push(at);
            at + 1000
        });
        assert_eq!(seen, vec![0, 2000]);
    }

    #[test]
    fn extent_rejects_broken_tables() {
        let mut h = vec![0u8; 256];
        h[..7].copy_from_slice(ELF_NEEDLE);
        h[16] = 3;
        h[18] = 224;
        h[20] = 1;
        h[52] = 64;
        // One section header at 64, covering bytes 128..200, shstrndx 0.
        h[40] = 64;
        h[58] = 64;
        h[60] = 1;
        h[64 + 4] = 1;
        h[64 + 24] = 128;
        h[64 + 32] = 72;
        let read = |d: &[u8], o: u64, l: u64| Cow::Owned(Bytes::new(d).read_at_most(o, l).to_vec());
        let ok = h.clone();
        assert_eq!(code_object_extent(&|o, l| read(&ok, o, l), 256), Ok(200));
        assert!(code_object_extent(&|o, l| read(&ok, o, l), 150).is_err());
        let mut bad = h.clone();
        bad[60] = 0xff;
        bad[61] = 0xff;
        assert!(code_object_extent(&|o, l| read(&bad, o, l), 256).is_err());
        let mut bad = h;
        bad[62] = 5;
        assert!(code_object_extent(&|o, l| read(&bad, o, l), 256).is_err());
    }
}
