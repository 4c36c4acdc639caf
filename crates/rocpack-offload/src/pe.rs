//! Windows PE/COFF images (executables and DLLs built with the HIP SDK for Windows): the fat
//! binary section, the wrappers that point into it, and the section list.
//!
//! What clang puts in a Windows host object is the same as on Linux (line numbers at
//! llvmorg-19.1.7, Debian's `llvm-toolchain-19_19.1.7.orig.tar.xz`):
//! - `clang/lib/CodeGen/CGCUDANV.cpp:758-759`: the fat binary goes to section `.hip_fatbin`, the
//!   wrapper to `.hipFatBinSegment`, whatever the object format;
//! - `CGCUDANV.cpp:767-769`: the fat binary is a constant array aligned to 4096;
//! - `CGCUDANV.cpp:720-722, 810-822`: the wrapper is `struct { int magic; int version; void
//!   *gpu_binary; void *dont_care; }` = `{0x48495046 ("HIPF"), 1, &fatbin, null}`, so 24 bytes
//!   on 64-bit Windows (LLP64: `int` is 4 bytes, pointers 8) and 16 on 32-bit;
//! - `clang/lib/Driver/ToolChains/HIPUtility.cpp:359-366`: a `-fgpu-rdc` link puts the bundle
//!   in `.hip_fatbin` too (flags `"dw"` for MSVC targets); the new offload driver's wrapper
//!   (`llvm/lib/Frontend/Offloading/OffloadWrapper.cpp:272-298`) uses the same two names.
//!
//! An image's section names are limited to 8 bytes. link.exe truncates longer ones, and lld-link
//! truncates every section mapped at run time (`lld/COFF/Writer.cpp:1361-1380`), so a DLL from
//! either linker has `.hip_fat` and `.hipFatB`; GNU ld (MinGW) keeps long names in the COFF
//! string table, which is read here too.
//!
//! The wrapper's pointer is written as an absolute address at the preferred image base, and the
//! linker adds a base relocation for it (`IMAGE_REL_BASED_DIR64` in PE32+, `HIGHLOW` in PE32).
//! The Windows loader adds the load delta to every such field when the image does not load at
//! its preferred base, so the pointer always names RVA `value - ImageBase`, the arithmetic used
//! here. A field without a base relocation is only right at the preferred base; it is followed
//! all the same (the image may be non-relocatable), but a relocation of another type at the
//! field makes the pointer unresolvable.
//!
//! Parsing uses the `object` crate; every size taken from the file is checked against the file
//! before use, and nothing is allocated from a count the file merely claims.

use std::collections::{BTreeSet, HashMap};

use object::LittleEndian as LE;
use object::pe;
use object::read::pe::{ImageNtHeaders, ImageOptionalHeader, PeFile32, PeFile64};
use rocpack_bytes::{Bytes, lossless_string};

use crate::embedded::ScanRange;
use crate::error::{FormatError, Kind};

/// Names of the fat binary section: as emitted, and as truncated to 8 bytes in an image.
pub const FATBIN_NAMES: [&[u8]; 2] = [b".hip_fatbin", b".hip_fat"];
/// Names of the wrapper section: as emitted, and as truncated to 8 bytes in an image.
pub const WRAPPER_NAMES: [&[u8]; 2] = [b".hipFatBinSegment", b".hipFatB"];
/// `"HIPF"` and version 1, the first 8 bytes of every wrapper (CGCUDANV.cpp:35, 812-814).
pub const WRAPPER_MAGIC: [u8; 8] = [0x46, 0x50, 0x49, 0x48, 1, 0, 0, 0];

/// `IMAGE_SCN_CNT_UNINITIALIZED_DATA`: a section with no bytes in the file.
const SCN_UNINITIALIZED: u32 = 0x80;
/// `IMAGE_SCN_MEM_EXECUTE`: machine code, not searched for embedded GPU code (as ELF's
/// executable sections are not).
const SCN_MEM_EXECUTE: u32 = 0x2000_0000;

fn err(offset: u64, message: impl Into<String>) -> FormatError {
    FormatError::new(Kind::Pe, offset, message)
}

/// Whether `data` starts like a PE image: `MZ`, and the `PE\0\0` signature where `e_lfanew`
/// says. A prefix too short to reach the signature (the 64 bytes a package walk sniffs) counts
/// when it holds the whole DOS header; reading the file then says whether it is one.
pub fn is_pe(data: &[u8]) -> bool {
    let b = Bytes::new(data);
    if !data.starts_with(b"MZ") {
        return false;
    }
    let Ok(lfanew) = b.u32(0x3c) else {
        return false;
    };
    match u64::from(lfanew).checked_add(4) {
        Some(end) if end <= b.len() => b.has_at(u64::from(lfanew), b"PE\0\0"),
        _ => true,
    }
}

/// One entry of the section table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Position in the section table (0-based).
    pub index: usize,
    /// Name: the 8-byte field, or the long name from the COFF string table (`/NNN`).
    pub name: String,
    /// Relative virtual address.
    pub rva: u32,
    /// `VirtualSize`: bytes in memory.
    pub virtual_size: u32,
    /// `PointerToRawData`.
    pub file_offset: u64,
    /// Bytes of the section that come from the file: `SizeOfRawData`, cut to `VirtualSize`
    /// (the rest of the raw data is file-alignment padding; the loader maps only
    /// `VirtualSize` bytes); 0 for uninitialized data.
    pub file_size: u64,
    /// `Characteristics`.
    pub characteristics: u32,
}

impl Section {
    /// Whether `rva` lies within the section's bytes from the file.
    pub fn contains_rva(&self, rva: u64) -> bool {
        rva.checked_sub(u64::from(self.rva))
            .is_some_and(|o| o < self.file_size)
    }
}

/// The headers of a PE image that matter for finding GPU code.
#[derive(Debug)]
pub struct Pe<'d> {
    data: &'d [u8],
    /// `IMAGE_FILE_HEADER.Machine` (0x8664 x86-64, 0xaa64 ARM64, 0x14c i386).
    pub machine: u16,
    /// PE32+ (64-bit) rather than PE32.
    pub pe32_plus: bool,
    /// `IMAGE_FILE_DLL` is set.
    pub dll: bool,
    /// Preferred load address.
    pub image_base: u64,
    /// The section table, in table order.
    pub sections: Vec<Section>,
    /// (RVA, index in `sections`) sorted by RVA, for address lookups in O(log n): a hostile
    /// image may have 65,535 sections and a wrapper per 24 bytes of its file.
    by_rva: Vec<(u32, usize)>,
    /// The base relocation directory (RVA, size), when present.
    base_relocs: Option<(u32, u32)>,
    /// Named exports that are addresses in the image (not forwarders): (RVA, name), by RVA.
    /// Read the first time [`Pe::exports`] asks: only naming embedded code needs them.
    exports: std::cell::OnceCell<Vec<(u32, String)>>,
}

/// How a wrapper's pointer was resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The field has a base relocation of the pointer's size.
    BaseRelocation,
    /// The field has no base relocation: the value is right at the preferred image base.
    ImageBase,
}

/// One wrapper record of the wrapper section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrapper {
    /// Index in the wrapper section.
    pub index: usize,
    /// File offset of the record.
    pub file_offset: u64,
    /// The pointer field as stored.
    pub in_place: u64,
    /// Where it points: an RVA, or why it cannot be followed.
    pub target: Result<(u64, Via), String>,
}

/// The wrapper section read record by record.
#[derive(Debug, Clone, Default)]
pub struct Wrappers {
    /// Records with the HIPF magic and version 1, in order.
    pub records: Vec<Wrapper>,
    /// (file offset, index) of records without the magic.
    pub bad: Vec<(u64, usize)>,
    /// Size of one record (24 in PE32+, 16 in PE32).
    pub record_size: u64,
    /// The section's size when it is not a whole number of records.
    pub ragged: Option<u64>,
    /// Why the base relocations could not be read, if so (the pointers were followed by image
    /// base arithmetic alone).
    pub reloc_error: Option<FormatError>,
}

impl<'d> Pe<'d> {
    /// Reads the headers and the section table.
    ///
    /// # Errors
    /// The DOS or NT headers or the section table are missing, out of the file or invalid.
    pub fn parse(data: &'d [u8]) -> Result<Pe<'d>, FormatError> {
        let magic = object::read::pe::optional_header_magic(data)
            .map_err(|e| err(0x3c, format!("PE headers: {e}")))?;
        if magic == pe::IMAGE_NT_OPTIONAL_HDR64_MAGIC {
            let f = PeFile64::parse(data).map_err(|e| err(0x3c, e.to_string()))?;
            Self::from_file(data, &f)
        } else {
            let f = PeFile32::parse(data).map_err(|e| err(0x3c, e.to_string()))?;
            Self::from_file(data, &f)
        }
    }

    fn from_file<H: ImageNtHeaders>(
        data: &'d [u8],
        f: &object::read::pe::PeFile<'d, H, &'d [u8]>,
    ) -> Result<Pe<'d>, FormatError> {
        let nt = f.nt_headers();
        let header = nt.file_header();
        // Long names (`/NNN`) need the COFF string table, which only MinGW images keep.
        let strings = nt.symbols(data).ok().map(|s| s.strings());
        let table = f.section_table();
        let mut sections = Vec::with_capacity(table.len());
        for (index, s) in table.iter().enumerate() {
            let name = match (s.name_offset(), strings) {
                (Ok(Some(_)), Some(st)) => s.name(st).unwrap_or(s.raw_name()),
                _ => s.raw_name(),
            };
            let characteristics = s.characteristics.get(LE);
            let raw = s.size_of_raw_data.get(LE);
            let virt = s.virtual_size.get(LE);
            // VirtualSize 0 (some linkers) means the raw size.
            let file_size = if characteristics & SCN_UNINITIALIZED != 0 {
                0
            } else if virt == 0 {
                raw
            } else {
                raw.min(virt)
            };
            sections.push(Section {
                index,
                name: lossless_string(name),
                rva: s.virtual_address.get(LE),
                virtual_size: virt,
                file_offset: u64::from(s.pointer_to_raw_data.get(LE)),
                file_size: u64::from(file_size),
                characteristics,
            });
        }
        let mut by_rva: Vec<(u32, usize)> = sections.iter().map(|s| (s.rva, s.index)).collect();
        by_rva.sort_unstable();
        let base_relocs = f
            .data_directory(pe::IMAGE_DIRECTORY_ENTRY_BASERELOC)
            .map(|d| d.address_range())
            .filter(|&(_, size)| size > 0);
        Ok(Pe {
            data,
            machine: header.machine.get(LE),
            pe32_plus: nt.is_type_64(),
            dll: header.characteristics.get(LE) & pe::IMAGE_FILE_DLL != 0,
            image_base: nt.optional_header().image_base(),
            sections,
            by_rva,
            base_relocs,
            exports: std::cell::OnceCell::new(),
        })
    }

    /// Named exports that are addresses in the image (not forwarders): (RVA, name), by RVA.
    /// Read on first use (a DLL can export thousands of names, and only an image with
    /// embedded code needs them).
    pub fn exports(&self) -> &[(u32, String)] {
        self.exports.get_or_init(|| {
            if self.pe32_plus {
                PeFile64::parse(self.data).map_or_else(|_| Vec::new(), |f| export_names(&f))
            } else {
                PeFile32::parse(self.data).map_or_else(|_| Vec::new(), |f| export_names(&f))
            }
        })
    }

    /// The first section with one of `names`, trying the names in order.
    pub fn section_named(&self, names: &[&[u8]]) -> Option<&Section> {
        names
            .iter()
            .find_map(|n| self.sections.iter().find(|s| s.name.as_bytes() == *n))
    }

    /// The section whose file-backed bytes hold `rva`: the one starting closest below it (the
    /// Windows loader requires sections in ascending, non-overlapping order).
    pub fn section_containing(&self, rva: u64) -> Option<&Section> {
        let after = self.by_rva.partition_point(|&(r, _)| u64::from(r) <= rva);
        let &(_, index) = self.by_rva.get(after.checked_sub(1)?)?;
        self.sections.get(index).filter(|s| s.contains_rva(rva))
    }

    /// The section's bytes present in the file, and whether they are all there.
    pub fn section_data(&self, s: &Section) -> (&'d [u8], bool) {
        let bytes = Bytes::new(self.data).read_at_most(s.file_offset, s.file_size);
        (bytes, bytes.len() as u64 == s.file_size)
    }

    /// Sections whose bytes run past the end of the file: (file offset, declared size).
    pub fn truncated_sections(&self) -> impl Iterator<Item = &Section> {
        self.sections.iter().filter(|s| !self.section_data(s).1)
    }

    /// The sections to search for embedded GPU code (`embedded.rs`): every section with bytes
    /// in the file except the fat binary and wrapper sections (read through the wrappers), and
    /// except executable code unless `search_code`; addresses at the preferred image base.
    pub fn embedded_ranges(&self, search_code: bool) -> Vec<ScanRange<'d>> {
        self.sections
            .iter()
            .filter(|s| {
                s.file_size > 0
                    && (search_code || s.characteristics & SCN_MEM_EXECUTE == 0)
                    && !FATBIN_NAMES.contains(&s.name.as_bytes())
                    && !WRAPPER_NAMES.contains(&s.name.as_bytes())
            })
            .map(|s| ScanRange {
                name: s.name.clone(),
                index: s.index,
                file_offset: s.file_offset,
                data: self.section_data(s).0,
                vaddr: Some(self.image_base.wrapping_add(u64::from(s.rva))),
            })
            .filter(|r| !r.data.is_empty())
            .collect()
    }

    /// The base relocations at the RVAs in `wanted`: RVA → `IMAGE_REL_BASED_*` type.
    ///
    /// # Errors
    /// The relocation directory lies outside the file or a block is malformed; the relocations
    /// read before that point are lost with it (the caller falls back to image base
    /// arithmetic).
    pub fn base_relocations_at(
        &self,
        wanted: &BTreeSet<u32>,
    ) -> Result<HashMap<u32, u16>, FormatError> {
        let mut out = HashMap::new();
        let Some((rva, size)) = self.base_relocs else {
            return Ok(out);
        };
        let Some(sec) = self.section_containing(u64::from(rva)) else {
            return Err(err(
                0,
                format!("base relocation directory at RVA {rva:#x} lies in no section's file data"),
            ));
        };
        let start = u64::from(rva - sec.rva);
        let at = sec.file_offset.saturating_add(start);
        let bytes = Bytes::new(self.section_data(sec).0)
            .read_at(start, u64::from(size))
            .map_err(|_| {
                err(
                    at,
                    format!(
                        "base relocation directory ({size} bytes at RVA {rva:#x}) runs past its section's data in the file"
                    ),
                )
            })?;
        for block in object::read::pe::RelocationBlockIterator::new(bytes) {
            let block = block.map_err(|e| err(at, format!("base relocations: {e}")))?;
            for r in block {
                if wanted.contains(&r.virtual_address) {
                    out.insert(r.virtual_address, r.typ);
                }
            }
        }
        Ok(out)
    }

    /// Reads the wrapper records of section `ws` and follows their pointers as the Windows
    /// loader would.
    pub fn wrappers(&self, ws: &Section) -> Wrappers {
        let (bytes, _) = self.section_data(ws);
        let w = Bytes::new(bytes);
        let ptr = if self.pe32_plus { 8u64 } else { 4 };
        let record_size = 8 + 2 * ptr;
        let count = w.len() / record_size;
        let mut out = Wrappers {
            record_size,
            ragged: (w.len() % record_size != 0).then_some(w.len()),
            ..Wrappers::default()
        };
        let field_rva = |i: u64| {
            u64::from(ws.rva)
                .checked_add(i * record_size + 8)
                .and_then(|v| u32::try_from(v).ok())
        };
        let wanted: BTreeSet<u32> = (0..count)
            .filter(|&i| w.has_at(i * record_size, &WRAPPER_MAGIC))
            .filter_map(field_rva)
            .collect();
        let relocs = match self.base_relocations_at(&wanted) {
            Ok(r) => r,
            Err(e) => {
                out.reloc_error = Some(e);
                HashMap::new()
            }
        };
        let want_type = if self.pe32_plus {
            pe::IMAGE_REL_BASED_DIR64
        } else {
            pe::IMAGE_REL_BASED_HIGHLOW
        };
        for i in 0..count {
            let at = i * record_size;
            let file_offset = ws.file_offset.saturating_add(at);
            let index = i as usize;
            if !w.has_at(at, &WRAPPER_MAGIC) {
                out.bad.push((file_offset, index));
                continue;
            }
            let in_place = if self.pe32_plus {
                w.u64(at + 8).unwrap_or(0)
            } else {
                w.u32(at + 8).map(u64::from).unwrap_or(0)
            };
            let reloc = field_rva(i).and_then(|f| relocs.get(&f).copied());
            let target = match reloc {
                Some(t) if t != want_type => Err(format!(
                    "its pointer field has a base relocation of type {t}, not {want_type}"
                )),
                _ if in_place == 0 => Err("its pointer is null".to_owned()),
                _ => match in_place.checked_sub(self.image_base) {
                    Some(rva) => Ok((
                        rva,
                        if reloc.is_some() {
                            Via::BaseRelocation
                        } else {
                            Via::ImageBase
                        },
                    )),
                    None => Err(format!(
                        "its pointer {in_place:#x} lies below the image base {:#x}",
                        self.image_base
                    )),
                },
            };
            out.records.push(Wrapper {
                index,
                file_offset,
                in_place,
                target,
            });
        }
        out
    }
}

/// The named exports of an image that are addresses in it, by RVA. The export table is the one
/// symbol table an image usually has. A damaged one names nothing (the rest of the image is
/// still read); its counts are checked against the file by the object crate before anything is
/// iterated.
fn export_names<'d, H: ImageNtHeaders>(
    f: &object::read::pe::PeFile<'d, H, &'d [u8]>,
) -> Vec<(u32, String)> {
    let mut exports = Vec::new();
    if let Ok(Some(t)) = f.export_table() {
        for (pointer, index) in t.name_iter() {
            if let (Ok(name), Ok(rva)) = (
                t.name_from_pointer(pointer),
                t.address_by_index(u32::from(index)),
            ) {
                if !t.is_forward(rva) {
                    exports.push((rva, lossless_string(name)));
                }
            }
        }
    }
    exports.sort_unstable();
    exports
}

/// Names embedded code in an image by its export table: an export whose address is where the
/// code starts. Exports carry no size, so "covers" can only mean "starts at" here.
pub struct PeExports<'p, 'd> {
    image: &'p Pe<'d>,
}

impl<'p, 'd> PeExports<'p, 'd> {
    /// The exports of `image` (read when a name is first asked for).
    pub fn new(image: &'p Pe<'d>) -> Self {
        PeExports { image }
    }
}

impl crate::embedded::SymbolLookup for PeExports<'_, '_> {
    fn table(&self) -> Option<&str> {
        (!self.image.exports().is_empty()).then_some("exports")
    }

    fn covering(&mut self, range: &ScanRange<'_>, offset: u64) -> Option<String> {
        let rva = range
            .vaddr?
            .checked_add(offset)?
            .checked_sub(self.image.image_base)?;
        let rva = u32::try_from(rva).ok()?;
        let exports = self.image.exports();
        let at = exports.partition_point(|(r, _)| *r < rva);
        exports
            .get(at)
            .filter(|(r, _)| *r == rva)
            .map(|(_, name)| name.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mz_without_pe_signature_is_not_pe() {
        let mut d = vec![0u8; 0x100];
        d[..2].copy_from_slice(b"MZ");
        d[0x3c] = 0x80;
        assert!(!is_pe(&d));
        d[0x80..0x84].copy_from_slice(b"PE\0\0");
        assert!(is_pe(&d));
        // A 64-byte prefix cannot reach the signature: it may be a PE image.
        assert!(is_pe(&d[..64]));
        assert!(!is_pe(&d[..60]));
    }

    fn fixture(name: &str) -> Vec<u8> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/pe")
            .join(name);
        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// Where the wrappers of a fixture point (its listings.txt shows the bytes and relocations).
    fn wrapper_targets(name: &str) -> Vec<Result<(u64, Via), String>> {
        let data = fixture(name);
        let image = Pe::parse(&data).unwrap();
        let ws = image.section_named(&WRAPPER_NAMES).unwrap();
        assert_eq!(ws.name, ".hipFatB");
        let w = image.wrappers(ws);
        assert!(w.bad.is_empty() && w.ragged.is_none() && w.reloc_error.is_none());
        w.records.into_iter().map(|r| r.target).collect()
    }

    #[test]
    fn wrappers_resolve_as_the_windows_loader_would() {
        // DIR64 base relocation at 0x6008, in place 0x180007000 = ImageBase + 0x7000.
        assert_eq!(
            wrapper_targets("gfx1100.dll"),
            [Ok((0x7000, Via::BaseRelocation))]
        );
        assert_eq!(
            wrapper_targets("two-tu.dll"),
            [
                Ok((0x7000, Via::BaseRelocation)),
                Ok((0xc000, Via::BaseRelocation))
            ]
        );
        // PE32: a 16-byte record, HIGHLOW at 0x5008, 0x10006000 = ImageBase 0x10000000 + 0x6000.
        assert_eq!(
            wrapper_targets("gfx1100-pe32.dll"),
            [Ok((0x6000, Via::BaseRelocation))]
        );
        // /fixed: no .reloc; 0x407000 = ImageBase 0x400000 + 0x7000.
        assert_eq!(wrapper_targets("fixed.exe"), [Ok((0x7000, Via::ImageBase))]);
    }

    #[test]
    fn embedded_ranges_are_the_data_sections_with_file_bytes() {
        let data = fixture("gfx1100.dll");
        let image = Pe::parse(&data).unwrap();
        assert!(image.pe32_plus && image.dll && image.machine == 0x8664);
        let ranges = image.embedded_ranges(false);
        let names: Vec<&str> = ranges.iter().map(|r| r.name.as_str()).collect();
        // Not .text (code), .hipFatB and .hip_fat (read through the wrappers); .data has no
        // raw data (RawDataSize 0).
        assert_eq!(names, [".rdata", ".pdata", ".CRT", ".reloc"]);
        let rdata = &ranges[0];
        let s = image.section_named(&[b".rdata"]).unwrap();
        assert_eq!(
            (rdata.file_offset, rdata.data.len() as u64, rdata.vaddr),
            (
                s.file_offset,
                s.file_size,
                Some(0x1_8000_0000 + u64::from(s.rva))
            )
        );
    }

    #[test]
    fn headers_outside_the_file_are_an_error() {
        let mut d = vec![0u8; 0x90];
        d[..2].copy_from_slice(b"MZ");
        d[0x3c] = 0x80;
        d[0x80..0x84].copy_from_slice(b"PE\0\0");
        let e = Pe::parse(&d).unwrap_err();
        assert_eq!(e.kind, Kind::Pe);
    }
}
