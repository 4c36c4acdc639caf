//! What the dynamic loader needs from one ELF file: its dynamic section, dynamic symbols and
//! symbol versions. Read through `object`'s bounds-checked ELF reader; nothing is executed.

use std::collections::HashMap;
use std::ops::Range;

use object::elf;
use object::read::elf::{Dyn, FileHeader, ProgramHeader, SectionHeader, Sym};
use object::{Endianness, FileKind};

/// A symbol or library name as the file spells it (ELF strings need not be UTF-8).
pub type Name = Box<[u8]>;

/// One dynamic ELF object, reduced to what symbol and library resolution needs.
#[derive(Debug, Default)]
pub struct DynObject {
    pub is_64: bool,
    pub machine: u16,
    /// `ET_EXEC` or `ET_DYN`.
    pub e_type: u16,
    /// `PT_INTERP`, when present.
    pub interp: Option<Name>,
    pub soname: Option<Name>,
    /// `DT_NEEDED`, in order.
    pub needed: Vec<Name>,
    /// `DT_RPATH`; already dropped when `DT_RUNPATH` is present, as glibc's get-dynamic-info.h does.
    pub rpath: Option<Name>,
    pub runpath: Option<Name>,
    /// `DF_1_NODEFLIB`: skip ld.so.cache and the default directories for this object's needs.
    pub nodeflib: bool,
    /// `DF_1_PIE`: a position-independent executable, which glibc refuses to load as a library.
    pub pie: bool,
    /// Undefined dynamic symbols.
    pub undefined: Vec<Undefined>,
    /// Defined dynamic symbols, sorted by name hash then name, so that one name's definitions
    /// (one per version) are adjacent. One vector and one copy of the string table instead of an
    /// allocation per symbol: a closure can hold hundreds of thousands of them.
    defined: Vec<Definition>,
    /// The dynamic string table, which symbol names point into.
    strings: Box<[u8]>,
    /// Version names this object defines (`SHT_GNU_verdef`), by version index.
    pub verdefs: HashMap<u16, Name>,
    /// Version requirements (`SHT_GNU_verneed`), by version index.
    pub verneeds: HashMap<u16, Requirement>,
    /// The object has a `SHT_GNU_versym` table at all.
    pub has_versym: bool,
}

/// An undefined dynamic symbol.
#[derive(Debug, Clone)]
pub struct Undefined {
    /// Where its name lies in the string table ([`DynObject::name`]).
    pub name: Range<u32>,
    pub weak: bool,
    /// Index into [`DynObject::verneeds`], when the reference is versioned.
    pub version: Option<u16>,
}

/// One definition of a dynamic symbol.
#[derive(Debug, Clone)]
pub struct Definition {
    hash: u32,
    /// Where its name lies in the string table ([`DynObject::name`]).
    pub name: Range<u32>,
    /// The version index (`0` local, `1` global/unversioned, `2..` from verdef).
    pub version: u16,
    /// The hidden bit of versym: a non-default version (`name@VER`, not `name@@VER`).
    pub hidden: bool,
    pub weak: bool,
    pub unique: bool,
}

/// A required version: `name` from the library named `file`.
#[derive(Debug, Clone)]
pub struct Requirement {
    pub file: Name,
    pub name: Name,
    pub weak: bool,
}

/// Why a file is not a dynamic object we can use.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("not an ELF file")]
    NotElf,
    #[error("{0}")]
    Malformed(String),
}

impl From<object::Error> for ElfError {
    fn from(e: object::Error) -> Self {
        ElfError::Malformed(e.to_string())
    }
}

/// The first 64 bytes of a file (fewer if it is shorter): enough for [`header_kind`] and for an
/// archive's magic.
pub fn read_head(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut head = Vec::with_capacity(64);
    rocpack_scan::open_regular(path)?
        .take(64)
        .read_to_end(&mut head)?;
    Ok(head)
}

/// The identity fields of an ELF header, read without parsing the rest: enough for the loader's
/// "wrong ELF class" check.
pub fn header_kind(data: &[u8]) -> Option<(bool, u16, u16)> {
    let is_64 = match FileKind::parse(data).ok()? {
        FileKind::Elf32 => false,
        FileKind::Elf64 => true,
        _ => return None,
    };
    let endian = if *data.get(5)? == elf::ELFDATA2LSB {
        Endianness::Little
    } else {
        Endianness::Big
    };
    // e_type and e_machine sit at the same offsets in both classes; the 32-bit layout is the
    // shorter one to read them through.
    let (h, _) = object::pod::from_bytes::<elf::FileHeader32<Endianness>>(data).ok()?;
    Some((is_64, h.e_type.get(endian), h.e_machine.get(endian)))
}

impl DynObject {
    /// Parses the dynamic parts of an ELF file.
    ///
    /// Errs when the file is not ELF or its section or dynamic tables run outside the file.
    pub fn parse(data: &[u8]) -> Result<DynObject, ElfError> {
        match FileKind::parse(data).map_err(|_| ElfError::NotElf)? {
            FileKind::Elf32 => parse_as::<elf::FileHeader32<Endianness>>(data, false),
            FileKind::Elf64 => parse_as::<elf::FileHeader64<Endianness>>(data, true),
            _ => Err(ElfError::NotElf),
        }
    }

    /// A symbol name by its range in the string table.
    pub fn name(&self, r: &Range<u32>) -> &[u8] {
        self.strings
            .get(r.start as usize..r.end as usize)
            .unwrap_or_default()
    }

    /// Every definition, in no useful order.
    pub fn definitions(&self) -> impl Iterator<Item = (&[u8], &Definition)> {
        self.defined.iter().map(|d| (self.name(&d.name), d))
    }

    /// The definitions of one name (one per version).
    pub fn lookup(&self, name: &[u8]) -> impl Iterator<Item = &Definition> {
        let h = hash(name);
        let start = self.defined.partition_point(|d| d.hash < h);
        self.defined
            .get(start..)
            .unwrap_or_default()
            .iter()
            .take_while(move |d| d.hash == h)
            .filter(move |d| self.name(&d.name) == name)
    }

    /// Does this object define `version` (by name) in its verdef?
    pub fn defines_version(&self, version: &[u8]) -> bool {
        self.verdefs.values().any(|v| &**v == version)
    }

    /// Does a definition of `name` satisfy a reference with the given version requirement?
    ///
    /// Mirrors `check_match` in glibc's elf/dl-lookup.c: an unversioned definition satisfies any
    /// reference; a versioned reference needs the same version name unless the definition is
    /// global (index 1) and not hidden; an unversioned reference takes any non-hidden definition,
    /// or a hidden one at index 1 or 2 (the base version).
    pub fn satisfies(&self, name: &[u8], wanted: Option<&[u8]>) -> bool {
        self.lookup(name).any(|d| {
            if !self.has_versym {
                return true;
            }
            match wanted {
                Some(v) => {
                    let dv = self.verdefs.get(&d.version).map(|n| &**n);
                    dv == Some(v) || (d.version <= 1 && !d.hidden)
                }
                None => !d.hidden || d.version < 3,
            }
        })
    }
}

fn parse_as<H: FileHeader<Endian = Endianness>>(
    data: &[u8],
    is_64: bool,
) -> Result<DynObject, ElfError> {
    let header = H::parse(data)?;
    let endian = header.endian()?;
    let mut obj = DynObject {
        is_64,
        machine: header.e_machine(endian),
        e_type: header.e_type(endian),
        ..DynObject::default()
    };
    for ph in header.program_headers(endian, data)? {
        if let Some(interp) = ph.interpreter(endian, data)? {
            obj.interp = Some(interp.into());
        }
    }
    let sections = header.sections(endian, data)?;
    let Some((dynamic, link)) = sections.dynamic(endian, data)? else {
        return Ok(obj);
    };
    let strings = sections.strings(endian, data, link)?;
    let string = |v: u64| -> Result<Name, ElfError> {
        let off =
            u32::try_from(v).map_err(|_| ElfError::Malformed("dynamic string offset".into()))?;
        Ok(strings
            .get(off)
            .map_err(|_| ElfError::Malformed("dynamic string outside .dynstr".into()))?
            .into())
    };
    let mut rpath = None;
    for d in dynamic {
        let tag = d.tag32(endian);
        let val: u64 = d.d_val(endian).into();
        match tag {
            Some(elf::DT_NULL) => break,
            Some(elf::DT_NEEDED) => obj.needed.push(string(val)?),
            Some(elf::DT_SONAME) => obj.soname = Some(string(val)?),
            Some(elf::DT_RPATH) => rpath = Some(string(val)?),
            Some(elf::DT_RUNPATH) => obj.runpath = Some(string(val)?),
            Some(elf::DT_FLAGS_1) => {
                obj.nodeflib |= val & u64::from(elf::DF_1_NODEFLIB) != 0;
                obj.pie |= val & u64::from(elf::DF_1_PIE) != 0;
            }
            _ => {}
        }
    }
    if obj.runpath.is_none() {
        obj.rpath = rpath;
    }

    let versyms = sections.gnu_versym(endian, data)?.map(|(v, _)| v);
    obj.has_versym = versyms.is_some();
    if let Some((mut verdefs, link)) = sections.gnu_verdef(endian, data)? {
        let strings = sections.strings(endian, data, link)?;
        while let Some((verdef, mut aux)) = verdefs.next()? {
            if let Some(first) = aux.next()? {
                let ndx = verdef.vd_ndx.get(endian) & elf::VERSYM_VERSION;
                obj.verdefs.insert(ndx, first.name(endian, strings)?.into());
            }
        }
    }
    if let Some((mut verneeds, link)) = sections.gnu_verneed(endian, data)? {
        let strings = sections.strings(endian, data, link)?;
        while let Some((verneed, mut aux)) = verneeds.next()? {
            let file: Name = verneed.file(endian, strings)?.into();
            while let Some(a) = aux.next()? {
                let ndx = a.vna_other.get(endian) & elf::VERSYM_VERSION;
                obj.verneeds.insert(
                    ndx,
                    Requirement {
                        file: file.clone(),
                        name: a.name(endian, strings)?.into(),
                        weak: a.vna_flags.get(endian) & elf::VER_FLG_WEAK != 0,
                    },
                );
            }
        }
    }

    let symbols = sections.symbols(endian, data, elf::SHT_DYNSYM)?;
    let symstrings = symbols.strings();
    let strtab = sections
        .section(symbols.string_section())
        .ok()
        .and_then(|sh| sh.data(endian, data).ok())
        .unwrap_or_default();
    obj.strings = strtab.into();
    let range = |sym: &H::Sym| -> Option<Range<u32>> {
        let start = sym.st_name(endian);
        let len = strtab.get(start as usize..)?.iter().position(|&b| b == 0)?;
        Some(start..start.checked_add(u32::try_from(len).ok()?)?)
    };
    for (index, sym) in symbols.enumerate() {
        if index.0 == 0 {
            continue;
        }
        let bind = sym.st_bind();
        if bind == elf::STB_LOCAL {
            continue;
        }
        let name = sym.name(endian, symstrings)?;
        if name.is_empty() {
            continue;
        }
        let Some(name_range) = range(sym) else {
            continue;
        };
        let versym = versyms
            .and_then(|v| v.get(index.0))
            .map_or(1, |v| v.0.get(endian));
        let version = versym & elf::VERSYM_VERSION;
        if sym.st_shndx(endian) == elf::SHN_UNDEF {
            obj.undefined.push(Undefined {
                name: name_range,
                weak: bind == elf::STB_WEAK,
                version: (version > 1).then_some(version),
            });
            continue;
        }
        // glibc's do_lookup_x skips definitions with value 0 (except TLS) and types it does not
        // bind to (sections, files).
        let st_type = sym.st_type();
        if sym.st_value(endian).into() == 0 && st_type != elf::STT_TLS {
            continue;
        }
        if !matches!(
            st_type,
            elf::STT_NOTYPE
                | elf::STT_OBJECT
                | elf::STT_FUNC
                | elf::STT_COMMON
                | elf::STT_TLS
                | elf::STT_GNU_IFUNC
        ) {
            continue;
        }
        if version == 0 {
            // VER_NDX_LOCAL: not exported.
            continue;
        }
        obj.defined.push(Definition {
            hash: hash(name),
            name: name_range,
            version,
            hidden: versym & elf::VERSYM_HIDDEN != 0,
            weak: bind == elf::STB_WEAK,
            unique: bind == elf::STB_GNU_UNIQUE,
        });
    }
    let strings = &obj.strings;
    obj.defined.sort_unstable_by(|a, b| {
        a.hash.cmp(&b.hash).then_with(|| {
            let n = |r: &Range<u32>| strings.get(r.start as usize..r.end as usize);
            n(&a.name).cmp(&n(&b.name))
        })
    });
    Ok(obj)
}

/// The ELF GNU hash of a name (dl-new-hash.h): cheap, and only used to order and find names.
fn hash(name: &[u8]) -> u32 {
    name.iter().fold(5381u32, |h, &b| {
        h.wrapping_mul(33).wrapping_add(u32::from(b))
    })
}
