//! The plain result of inspecting one file: containers, code objects, diagnostics.

use rocpack_amdgpu::{CodeObjectHeader, Metadata, TargetId};
use serde::Serialize;

use crate::ccob::Method;

/// What a container is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ContainerKind {
    /// A host ELF file (shared library, executable, relocatable object).
    HostElf {
        /// `e_type`: 1 relocatable, 2 executable, 3 shared object / PIE.
        e_type: u16,
        /// `e_machine`.
        e_machine: u16,
        /// Whether the file has section headers.
        section_headers: bool,
    },
    /// A Windows PE image (executable or DLL).
    HostPe {
        /// `IMAGE_FILE_HEADER.Machine`: 0x8664 (34404) x86-64, 0xaa64 ARM64, 0x14c i386.
        machine: u16,
        /// PE32+ (64-bit) rather than PE32.
        pe32_plus: bool,
        /// A DLL (`IMAGE_FILE_DLL`) rather than an executable.
        dll: bool,
    },
    /// An ELF or PE section that holds device code.
    Section {
        /// Section name.
        name: String,
    },
    /// The `-fgpu-rdc` per-target `__CLANG_OFFLOAD_BUNDLE__<id>` sections of an object.
    OffloadSections,
    /// A static archive.
    Archive {
        /// Whether it is a thin archive (members are paths to other files).
        thin: bool,
    },
    /// An archive member.
    Member {
        /// Member name.
        name: String,
    },
    /// An uncompressed clang offload bundle.
    Bundle {
        /// Number of entries in its table.
        entries: usize,
        /// Index among the bundles of the enclosing `.hip_fatbin`, if any.
        fatbin_index: Option<usize>,
    },
    /// A compressed offload bundle.
    Ccob {
        /// Format version 1–3.
        version: u16,
        /// Compression method.
        method: Method,
        /// Total size (v2/v3).
        total_size: Option<u64>,
        /// Declared uncompressed size.
        uncompressed_size: u64,
        /// Declared hash.
        hash: String,
        /// Whether the hash matched (`None` when the payload was not fully decompressed).
        hash_ok: Option<bool>,
        /// Index among the bundles of the enclosing `.hip_fatbin`, if any.
        fatbin_index: Option<usize>,
    },
    /// A bundle, CCOB or code object embedded in another section of a host file (`.rodata`,
    /// `.data`, ...), found by searching its bytes; code a library loads itself
    /// (`hipModuleLoadData`).
    Embedded {
        /// The section (or segment, without section headers) it lies in.
        section: String,
        /// The symbol covering it, when a symbol table names one.
        symbol: Option<String>,
        /// The table symbols were looked up in (`.symtab`, `.dynsym`); `None`: the file has no
        /// symbol table.
        symbol_table: Option<String>,
        /// Its virtual address, when the section is mapped.
        vaddr: Option<u64>,
    },
    /// One LLVM OffloadBinary.
    OffloadBinary {
        /// Format version 1–3.
        version: u32,
        /// Index within its section.
        index: usize,
    },
}

/// One container found in the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Container {
    /// Index in [`Inspection::containers`].
    pub id: usize,
    /// The enclosing container.
    pub parent: Option<usize>,
    /// What it is.
    #[serde(flatten)]
    pub kind: ContainerKind,
    /// Offset in the file, when the container lies in the file's own bytes (not inside
    /// decompressed data).
    pub file_offset: Option<u64>,
    /// Offset within the parent's (possibly decompressed) data.
    pub offset: u64,
    /// Size in bytes, when known.
    pub size: Option<u64>,
}

impl Container {
    /// A short label such as `.hip_fatbin[3]` or `ccob-v2-zstd`.
    pub fn label(&self) -> String {
        match &self.kind {
            ContainerKind::HostElf { .. } => "elf".into(),
            ContainerKind::HostPe { .. } => "pe".into(),
            ContainerKind::Section { name } => name.clone(),
            ContainerKind::OffloadSections => "__CLANG_OFFLOAD_BUNDLE__ sections".into(),
            ContainerKind::Archive { thin: true } => "thin archive".into(),
            ContainerKind::Archive { thin: false } => "archive".into(),
            ContainerKind::Member { name } => format!("member {name}"),
            ContainerKind::Bundle {
                fatbin_index: Some(i),
                ..
            } => format!("bundle #{i}"),
            ContainerKind::Bundle { .. } => "bundle".into(),
            ContainerKind::Ccob {
                version,
                method,
                fatbin_index,
                ..
            } => match fatbin_index {
                Some(i) => format!("bundle #{i} (ccob v{version} {})", method.name()),
                None => format!("ccob v{version} {}", method.name()),
            },
            ContainerKind::OffloadBinary { index, .. } => format!("offload binary #{index}"),
            ContainerKind::Embedded {
                section, symbol, ..
            } => match (symbol, self.file_offset) {
                (Some(sym), _) => format!("{section}:{sym}"),
                (None, Some(at)) => format!("{section}@{at:#x}"),
                (None, None) => format!("{section}@+{:#x}", self.offset),
            },
        }
    }
}

/// What the bytes of an entry are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImageFormat {
    /// An AMDGPU ELF code object.
    CodeObject,
    /// LLVM bitcode (`-fgpu-rdc`, new-driver objects).
    Bitcode,
    /// A host ELF object or something else that is not device code.
    Other,
    /// No bytes (the host placeholder of HIP bundles).
    Empty,
}

/// How a program gets code to the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Loading {
    /// Part of a host file's fat binary (`.hip_fatbin`, `-fgpu-rdc` sections,
    /// `.llvm.offloading`), which the HIP runtime registers when the file is loaded.
    Registered,
    /// Bytes a program loads itself with `hipModuleLoad`/`hipModuleLoadData`: a code object or
    /// bundle file, or code embedded in another section of a host file.
    Module,
}

impl Loading {
    /// `registered` or `module`.
    pub fn name(self) -> &'static str {
        match self {
            Loading::Registered => "registered",
            Loading::Module => "module",
        }
    }
}

/// One entry of a bundle / OffloadBinary / section, or a bare code object.
#[derive(Debug, Clone, Serialize)]
pub struct CodeObject {
    /// The innermost container; `None` for a bare code object file.
    pub container: Option<usize>,
    /// Index of the entry within its container.
    pub entry_index: Option<usize>,
    /// Bundle entry ID as stored (or synthesized from OffloadBinary strings).
    pub entry_id: Option<String>,
    /// Offload kind from the entry ID (`hipv4`, `hip`, `host`, ...).
    pub offload_kind: Option<String>,
    /// Whether this is a host entry (listed only on request).
    pub host: bool,
    /// Offset of the entry's bytes within its container's data.
    pub offset: u64,
    /// Offset in the file, when the entry lies in the file's own bytes.
    pub file_offset: Option<u64>,
    /// Size of the entry in bytes.
    pub size: u64,
    /// Whether the entry was inside a compressed bundle.
    pub compressed: bool,
    /// What the bytes are.
    pub format: ImageFormat,
    /// The code object's ELF header, when it is one.
    pub header: Option<CodeObjectHeader>,
    /// Canonical target ID: from the code object's own header, else (bitcode) from the entry ID.
    pub target: Option<TargetId>,
    /// Kernel metadata, when requested and present.
    pub metadata: Option<Metadata>,
    /// How it is loaded.
    pub loading: Loading,
}

impl CodeObject {
    /// The generic version of a generic code object (`None` for others and when unknown).
    pub fn generic_version(&self) -> Option<u8> {
        self.header
            .as_ref()
            .and_then(|h| h.generic_version)
            .filter(|&v| v > 0)
    }

    /// Whether this entry is AMD GPU code, the rows `list` shows and the entries `show`, `check`
    /// and `scan` count: not a host entry, not empty, and either an AMDGPU ELF code object
    /// (whatever its entry ID says) or an entry whose ID names an AMD GPU triple
    /// ([`EntryId::is_amd_gpu`]: bitcode for amdgcn, AMD SPIR-V). SYCL `spir64`/`spir64_gen`,
    /// `nvptx64` and other foreign entries are not.
    pub fn is_amd_gpu(&self) -> bool {
        if self.host || self.format == ImageFormat::Empty {
            return false;
        }
        self.format == ImageFormat::CodeObject
            || self
                .entry_id
                .as_deref()
                .is_some_and(crate::EntryId::is_amd_gpu_id)
    }

    /// Whether this is a device entry with bytes that is not AMD GPU code (SYCL, NVPTX, …):
    /// what `list` hides and `show` counts apart.
    pub fn is_foreign_device_entry(&self) -> bool {
        !self.host && self.format != ImageFormat::Empty && !self.is_amd_gpu()
    }
}

pub use rocpack_finding::Severity;

rocpack_finding::codes! {
    /// What reading a file can find: the "Reading files" codes of docs/diagnostics.md, each
    /// with its severity.
    pub enum ReadCode in "read" {
        /// A host ELF header table runs outside the file, or the ELF class is unsupported.
        MalformedElf = ("malformed-elf", Error),
        /// A PE image's headers, section table or base relocation directory are unusable.
        MalformedPe = ("malformed-pe", Error),
        /// An offload bundle's table is truncated, claims too many entries, or points outside.
        MalformedBundle = ("malformed-bundle", Error),
        /// A compressed bundle's header is invalid, or its data corrupt or of another size.
        MalformedCcob = ("malformed-ccob", Error),
        /// A compressed bundle declares more than `--max-decompressed` bytes.
        DecompressionLimit = ("decompression-limit", Error),
        /// An OffloadBinary's header, entries or strings point outside it.
        MalformedOffloadBinary = ("malformed-offload-binary", Error),
        /// An archive member header is invalid or runs past the archive.
        MalformedArchive = ("malformed-archive", Error),
        /// An entry looks like an AMDGPU ELF but its header is not readable.
        MalformedCodeObject = ("malformed-code-object", Error),
        /// A code object's notes or its metadata document are malformed.
        MalformedMetadata = ("malformed-metadata", Error),
        /// A PT_LOAD segment (ELF) or a section's raw data (PE) runs past the end of the file.
        TruncatedFile = ("truncated-file", Error),
        /// More than 1,000,000 containers and entries in one file; the rest was not read.
        TooManyItems = ("too-many-items", Error),
        /// A thin archive names a file that cannot be read.
        ThinMemberUnreadable = ("thin-member-unreadable", Error),
        /// A FIFO, socket or device where a file was expected: skipped without opening it.
        NotRegularFile = ("not-regular-file", Error),
        /// The file shrank while it was being read.
        FileChanged = ("file-changed", Error),
        /// A file could not be opened or read.
        UnreadableFile = ("unreadable-file", Error),
        /// A directory of a walked tree could not be listed.
        UnreadableDirectory = ("unreadable-directory", Error),
        /// A walked tree nests deeper than the walk goes.
        TooDeep = ("too-deep", Error),
        /// A symbolic link that leads to no file (dangling, a loop or a directory).
        DanglingLink = ("dangling-link", Warning),
        /// A thin archive member was not read (library use without a loader).
        ThinMemberUnread = ("thin-member-unread", Warning),
        /// The stored hash differs from the MD5-based hash of the decompressed bundle.
        CcobHashMismatch = ("ccob-hash-mismatch", Warning),
        /// The bundle entry ID names another target than the code object's ELF header.
        EntryTargetMismatch = ("entry-target-mismatch", Warning),
        /// Two entries of one bundle overlap.
        OverlappingEntries = ("overlapping-entries", Warning),
        /// A fat binary wrapper lacks the HIPF magic or version 1.
        BadWrapper = ("bad-wrapper", Warning),
        /// The wrapper section is not a whole number of wrappers.
        WrapperTableSize = ("wrapper-table-size", Warning),
        /// A wrapper's pointer does not resolve into the fat binary section.
        WrapperOutsideFatbin = ("wrapper-outside-fatbin", Warning),
        /// No wrapper could be used; the fat binary was walked bundle by bundle.
        SequentialWalk = ("sequential-walk", Warning),
        /// A bundle in the fat binary that no wrapper points to (read anyway).
        UnreferencedBundle = ("unreferenced-bundle", Warning),
        /// Bytes outside the fat binary start like GPU code but do not parse as it.
        UnclassifiedGpuCode = ("unclassified-gpu-code", Warning),
        /// Bytes in the fat binary that are neither padding nor a bundle; the walk stops.
        FatbinGarbage = ("fatbin-garbage", Warning),
    }
}

/// Something found wrong while reading.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Warning or error: the code's severity.
    pub severity: Severity,
    /// Stable kebab-case code.
    pub code: ReadCode,
    /// The container it concerns.
    pub container: Option<usize>,
    /// Byte offset in the file when known, else within the container's data.
    pub offset: Option<u64>,
    /// Whether `offset` is a file offset.
    pub offset_in_file: bool,
    /// What is wrong.
    pub message: String,
}

/// Everything read from one file.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Inspection {
    /// Containers, parents before children.
    pub containers: Vec<Container>,
    /// Code objects (and other entries), in file order.
    pub code_objects: Vec<CodeObject>,
    /// Problems found.
    pub diagnostics: Vec<Diagnostic>,
}

impl Inspection {
    /// The chain of containers from the outermost to `id`.
    pub fn chain(&self, id: Option<usize>) -> Vec<&Container> {
        let mut out: Vec<&Container> = self.ancestors(id).collect();
        out.reverse();
        out
    }

    /// Container `id` and the containers around it, innermost first: [`Inspection::chain`]
    /// in reverse, without collecting it. Bounded by the number of containers, so a parent
    /// link that loops ends.
    pub fn ancestors(&self, id: Option<usize>) -> impl Iterator<Item = &Container> {
        let mut cur = id;
        std::iter::from_fn(move || {
            let c = cur.and_then(|i| self.containers.get(i))?;
            cur = c.parent;
            Some(c)
        })
        .take(self.containers.len() + 1)
    }

    /// A readable location such as `member k.o > .hip_fatbin > bundle #3`.
    pub fn location(&self, id: Option<usize>) -> String {
        let chain = self.chain(id);
        let labels: Vec<String> = chain
            .iter()
            .filter(|c| match c.kind {
                ContainerKind::HostElf { .. }
                | ContainerKind::HostPe { .. }
                | ContainerKind::Archive { .. } => false,
                // The bundle inside a CCOB is named by the CCOB's label already.
                ContainerKind::Bundle { .. } => !c
                    .parent
                    .and_then(|p| self.containers.get(p))
                    .is_some_and(|p| matches!(p.kind, ContainerKind::Ccob { .. })),
                _ => true,
            })
            .map(|c| c.label())
            .collect();
        if labels.is_empty() {
            "-".into()
        } else {
            labels.join(" > ")
        }
    }

    /// File offset of the innermost bundle (or CCOB, member, section) holding container `id`.
    pub fn bundle_offset(&self, id: Option<usize>) -> Option<u64> {
        self.chain(id).into_iter().rev().find_map(|c| {
            c.file_offset.filter(|_| {
                !matches!(
                    c.kind,
                    ContainerKind::HostElf { .. }
                        | ContainerKind::HostPe { .. }
                        | ContainerKind::Archive { .. }
                )
            })
        })
    }

    /// File offset of the bundle (or CCOB, section, member) that holds a code object: for the
    /// per-target `__CLANG_OFFLOAD_BUNDLE__` sections of `-fgpu-rdc` objects, the entry's own
    /// section; `None` for a bare code object or bytes outside the file.
    pub fn bundle_offset_of(&self, co: &CodeObject) -> Option<u64> {
        let container = self.containers.get(co.container?)?;
        if matches!(container.kind, ContainerKind::OffloadSections) {
            return co.file_offset;
        }
        self.bundle_offset(co.container)
    }

    /// Whether container `id` lies inside decompressed data (below a CCOB or a compressed
    /// OffloadBinary) rather than in another file (a thin archive member).
    pub fn in_decompressed(&self, id: usize) -> bool {
        self.chain(Some(id))
            .iter()
            .any(|c| matches!(c.kind, ContainerKind::Ccob { .. }) && c.id != id)
            || self
                .code_objects
                .iter()
                .any(|co| co.container == Some(id) && co.compressed)
    }

    /// How code in container `id` is loaded: `module` below an embedded container or outside
    /// any host file section, `registered` in a fat binary section.
    pub fn loading(&self, id: Option<usize>) -> Loading {
        if self
            .ancestors(id)
            .any(|c| matches!(c.kind, ContainerKind::Embedded { .. }))
        {
            Loading::Module
        } else if self.ancestors(id).any(|c| {
            matches!(
                c.kind,
                ContainerKind::Section { .. } | ContainerKind::OffloadSections
            )
        }) {
            Loading::Registered
        } else {
            Loading::Module
        }
    }

    /// File offsets of census hits that did not parse as any container (the
    /// `unclassified-gpu-code` diagnostics).
    pub fn unclassified(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.code == ReadCode::UnclassifiedGpuCode)
    }

    /// Whether any error-level diagnostic was recorded.
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}
