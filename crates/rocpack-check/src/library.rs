//! From files to libraries: what the loader sees as one unit of GPU code.
//!
//! A host ELF file, an archive or a code object file is one library, its bundles read by the
//! inspection. rocBLAS and hipBLASLt keep their kernels in a data directory instead
//! (`rocblas/library`, `hipblaslt/library`): per-architecture index files
//! (`TensileLibrary_lazy_gfx90a.dat`) and code object files (`…_gfx90a.co`,
//! `Kernels.so-000-gfx90a-xnack+.hsaco`); such a directory is one library. MIOpen's kernel
//! databases (`gfx90a_6e.kdb`) are recorded as the precompiled kernels they are: without one
//! MIOpen still runs, compiling its kernels at first use.

use std::collections::BTreeMap;
use std::path::Path;

use rocpack_amdgpu::TargetId;
use rocpack_offload::{CodeObject, ImageFormat, Inspection, Loading};
use rocpack_scan::FileResult;
use serde::Serialize;

/// What kind of library.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum LibraryKind {
    /// A host ELF file: shared library, executable or object.
    Elf,
    /// A Windows PE image: DLL or executable.
    Pe,
    /// A static archive (its code lands in whatever links it).
    Archive,
    /// A file that is itself device code: a code object, a bundle, a compressed bundle.
    DeviceCode,
    /// A rocBLAS or hipBLASLt kernel directory.
    TensileDir {
        /// `rocblas` or `hipblaslt`.
        component: String,
        /// Processors that have an index file (`TensileLibrary_lazy_<gfx>.dat`).
        indexed: Vec<String>,
        /// Whether a single all-architecture `TensileLibrary.dat` is present (non-lazy
        /// builds), which serves every architecture that has code object files.
        all_arch_index: bool,
    },
}

/// One entry of a bundle that is device code for a target.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// The target ID, canonical.
    pub target: TargetId,
    /// Generic version of a generic code object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generic_version: Option<u8>,
    /// Size in bytes (uncompressed).
    pub size: u64,
    /// LLVM bitcode (`-fgpu-rdc`): linked later, never loaded as is.
    pub bitcode: bool,
}

/// A set of code objects the loader chooses one from: a bundle, a bare code object file, or
/// in a Tensile directory the variants of one kernel file (`-xnack+`, `-xnack-`).
#[derive(Debug, Clone, Serialize)]
pub struct Bundle {
    /// Where it is: `.hip_fatbin > bundle #3`, or a file name.
    pub location: String,
    /// The file that holds it (differs from the library's path for Tensile directories).
    pub file: String,
    /// File offset of the bundle, when it lies in the file's own bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Whether it is a compressed bundle.
    pub compressed: bool,
    /// How it is loaded: `registered` (the fat binary the HIP runtime registers) or `module`
    /// (code the library loads itself, such as a bundle embedded in `.rodata`).
    pub loading: Loading,
    /// Whether it is embedded in a host file's data (`.rodata`, ...), not a file of its own.
    #[serde(skip)]
    pub embedded: bool,
    /// For Tensile files: the processor named in the file name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// Its device entries.
    pub entries: Vec<Entry>,
}

/// A MIOpen kernel database file.
#[derive(Debug, Clone, Serialize)]
pub struct KernelDb {
    /// The file.
    pub file: String,
    /// The processor in its name (`gfx90a_68.kdb` is gfx90a with 0x68 = 104 compute units).
    pub arch: Option<String>,
    /// Compute units in its name.
    pub cus: Option<u32>,
    /// Size in bytes.
    pub size: u64,
}

/// One unit of GPU code.
#[derive(Debug, Clone, Serialize)]
pub struct Library {
    /// The file, or the directory of a Tensile library; `PACKAGE!/MEMBER` inside packages.
    pub path: String,
    /// The package it was read from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// What it is.
    pub kind: LibraryKind,
    /// Size of its files in bytes.
    pub size: u64,
    /// Its bundles, in file order.
    pub bundles: Vec<Bundle>,
    /// Whether reading it hit errors (its verdicts may then be incomplete).
    pub read_errors: bool,
    /// Places whose bytes start like GPU code (a code object, bundle or CCOB header) that
    /// does not parse: GPU code rocpack cannot classify.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unclassified: Vec<Unclassified>,
}

/// GPU code rocpack cannot classify.
#[derive(Debug, Clone, Serialize)]
pub struct Unclassified {
    /// File offset, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// What looks like GPU code there and why it does not parse.
    pub message: String,
}

impl Library {
    /// Whether the library carries GPU code: a bundle with device entries, a bundle whose
    /// device entries are all gone (it fails on every GPU, so it is still a GPU library), or
    /// GPU code rocpack cannot classify.
    pub fn has_device_code(&self) -> bool {
        !self.bundles.is_empty() || !self.unclassified.is_empty()
    }

    /// Bytes of device code per processor (entries of several features summed).
    pub fn bytes_per_processor(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for b in &self.bundles {
            for e in &b.entries {
                *out.entry(e.target.processor.clone()).or_insert(0) += e.size;
            }
        }
        out
    }
}

/// The results grouped into libraries, plus MIOpen databases; files without device code
/// (and that are not Tensile data) are left out.
#[derive(Debug, Default, Serialize)]
pub struct Inventory {
    pub libraries: Vec<Library>,
    pub kernel_dbs: Vec<KernelDb>,
}

/// Groups scan results into libraries.
pub fn group(results: &[FileResult]) -> Inventory {
    let mut inv = Inventory::default();
    let mut tensile: BTreeMap<String, Library> = BTreeMap::new();
    for r in results {
        let path = path_string(&r.path);
        let package = r.package.as_deref().map(path_string);
        if r.path.extension().is_some_and(|e| e == "kdb") {
            let stem = r.path.file_stem().map(|s| s.to_string_lossy().into_owned());
            let (arch, cus) = stem.as_deref().map_or((None, None), kdb_name);
            inv.kernel_dbs.push(KernelDb {
                file: path,
                arch,
                cus,
                size: r.size,
            });
            continue;
        }
        let bundles = r
            .inspection
            .as_ref()
            .map(|i| bundles_of(i, &path))
            .unwrap_or_default();
        if let Some((dir, component)) = tensile_dir(&r.path) {
            let lib = tensile.entry(dir.clone()).or_insert_with(|| Library {
                path: dir,
                package: package.clone(),
                kind: LibraryKind::TensileDir {
                    component,
                    indexed: Vec::new(),
                    all_arch_index: false,
                },
                size: 0,
                bundles: Vec::new(),
                read_errors: false,
                unclassified: Vec::new(),
            });
            lib.size += r.size;
            lib.read_errors |= r.has_errors();
            let name = r
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if let LibraryKind::TensileDir {
                indexed,
                all_arch_index,
                ..
            } = &mut lib.kind
            {
                if let Some(arch) = tensile_index_arch(&name) {
                    indexed.push(arch);
                } else if name == "TensileLibrary.dat" || name == "TensileLibrary.yaml" {
                    *all_arch_index = true;
                }
            }
            if is_code_file(&name) {
                let (arch, variant) = tensile_arch(&name);
                // The -xnack+/-xnack- variants of one kernel file are one choice for the loader.
                let key = variant.map_or(name.clone(), |v| name.replacen(v, "", 1));
                let entries: Vec<Entry> = bundles.into_iter().flat_map(|b| b.entries).collect();
                match lib.bundles.iter_mut().find(|b| b.location == key) {
                    Some(b) => b.entries.extend(entries),
                    None => lib.bundles.push(Bundle {
                        location: key,
                        file: path.clone(),
                        offset: None,
                        compressed: false,
                        loading: Loading::Module,
                        embedded: false,
                        arch,
                        entries,
                    }),
                }
            }
            continue;
        }
        let Some(inspection) = &r.inspection else {
            // Unreadable files are reported as errors by the caller.
            continue;
        };
        let unclassified: Vec<Unclassified> = inspection
            .unclassified()
            .map(|d| Unclassified {
                offset: d.offset.filter(|_| d.offset_in_file),
                message: d.message.clone(),
            })
            .collect();
        if bundles.is_empty() && unclassified.is_empty() && !inspection.has_errors() {
            continue;
        }
        let kind = match inspection.containers.first().map(|c| &c.kind) {
            Some(rocpack_offload::ContainerKind::HostElf { .. }) => LibraryKind::Elf,
            Some(rocpack_offload::ContainerKind::HostPe { .. }) => LibraryKind::Pe,
            Some(rocpack_offload::ContainerKind::Archive { .. }) => LibraryKind::Archive,
            _ => LibraryKind::DeviceCode,
        };
        inv.libraries.push(Library {
            path,
            package,
            kind,
            size: r.size,
            bundles,
            read_errors: r.has_errors(),
            unclassified,
        });
    }
    for (_, mut lib) in tensile {
        if let LibraryKind::TensileDir { indexed, .. } = &mut lib.kind {
            indexed.sort();
            indexed.dedup();
        }
        inv.libraries.push(lib);
    }
    inv.libraries.sort_by(|a, b| a.path.cmp(&b.path));
    inv
}

impl Bundle {
    /// The bundle that holds `co`.
    fn of(i: &Inspection, co: &CodeObject, file: &str, entries: Vec<Entry>) -> Bundle {
        Bundle {
            location: i.location(co.container),
            file: file.to_owned(),
            offset: i.bundle_offset_of(co),
            compressed: co.compressed,
            loading: co.loading,
            embedded: i
                .chain(co.container)
                .iter()
                .any(|c| matches!(c.kind, rocpack_offload::ContainerKind::Embedded { .. })),
            arch: None,
            entries,
        }
    }
}

/// Whether `co` is a bare code object directly inside an embedded container.
fn embedded_directly(i: &Inspection, co: &CodeObject) -> bool {
    co.container
        .and_then(|c| i.containers.get(c))
        .is_some_and(|c| matches!(c.kind, rocpack_offload::ContainerKind::Embedded { .. }))
}

/// The bundles of one inspected file: code objects grouped by their innermost container.
fn bundles_of(i: &Inspection, file: &str) -> Vec<Bundle> {
    let mut out: Vec<(Option<usize>, Bundle)> = Vec::new();
    for co in &i.code_objects {
        if !co.is_amd_gpu() {
            continue;
        }
        let bitcode = match co.format {
            ImageFormat::CodeObject => false,
            ImageFormat::Bitcode => true,
            ImageFormat::Other | ImageFormat::Empty => continue,
        };
        let Some(target) = &co.target else { continue };
        let entry = Entry {
            target: target.clone(),
            generic_version: co.generic_version(),
            size: co.size,
            bitcode,
        };
        // Bare code objects embedded in the file's data are taken as one set the library
        // chooses from, as ROCr does with its per-ISA blit kernels (libhsa-runtime64 carries
        // 42, one per processor): which of them a program needs on which GPU is its own logic,
        // which rocpack cannot read. A bundle stays a unit of its own.
        let key = if co.entry_id.is_none() && embedded_directly(i, co) {
            Some(usize::MAX)
        } else {
            co.container
        };
        match out.iter_mut().find(|(c, _)| *c == key) {
            Some((_, b)) => b.entries.push(entry),
            None => out.push((key, Bundle::of(i, co, file, vec![entry]))),
        }
    }
    for (key, b) in &mut out {
        if *key == Some(usize::MAX) && b.entries.len() > 1 {
            b.location = format!(
                "{} code objects embedded in its data, the first {} (taken as one set: the \
                 library loads the one for the GPU)",
                b.entries.len(),
                b.location
            );
            b.offset = None;
        }
    }
    // A bundle with a host entry and no device entry at all (all stripped, or built for no
    // GPU): the runtime finds no code object in it for any GPU.
    let mut seen: std::collections::HashSet<Option<usize>> = i
        .code_objects
        .iter()
        .filter(|c| !c.host)
        .map(|c| c.container)
        .collect();
    for co in i.code_objects.iter().filter(|c| c.host) {
        if seen.insert(co.container) {
            out.push((co.container, Bundle::of(i, co, file, Vec::new())));
        }
    }
    out.into_iter().map(|(_, b)| b).collect()
}

fn path_string(p: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    rocpack_bytes::lossless_string(p.as_os_str().as_bytes())
}

/// The Tensile directory a file belongs to: its parent, when that is a `library` directory
/// below a `rocblas` or `hipblaslt` directory (`/opt/rocm/lib/rocblas/library`,
/// `/usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library`, `torch/lib/hipblaslt/library`).
fn tensile_dir(path: &Path) -> Option<(String, String)> {
    let parent = path.parent()?;
    if parent.file_name()? != "library" {
        return None;
    }
    let component = parent.ancestors().skip(1).take(3).find_map(|a| {
        let name = a.file_name()?.to_str()?.to_ascii_lowercase();
        (name == "rocblas" || name == "hipblaslt").then_some(name)
    })?;
    Some((path_string(parent), component))
}

fn is_code_file(name: &str) -> bool {
    name.ends_with(".co") || name.ends_with(".hsaco")
}

/// `TensileLibrary_lazy_gfx90a.dat` (or `TensileLibrary_gfx90a.dat`) → `gfx90a`.
fn tensile_index_arch(name: &str) -> Option<String> {
    let stem = name
        .strip_suffix(".dat")
        .or_else(|| name.strip_suffix(".yaml"))?;
    let arch = stem
        .strip_prefix("TensileLibrary_lazy_")
        .or_else(|| stem.strip_prefix("TensileLibrary_"))?;
    is_processor_name(arch).then(|| arch.to_owned())
}

/// The processor named in a Tensile file name (the last `gfx…` token) and its xnack variant
/// suffix (`-xnack+` / `-xnack-`) if any.
fn tensile_arch(name: &str) -> (Option<String>, Option<&'static str>) {
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    let variant = ["-xnack+", "-xnack-"]
        .into_iter()
        .find(|v| stem.ends_with(v));
    let stem = variant.map_or(stem, |v| stem.trim_end_matches(v));
    let arch = stem.rfind("gfx").and_then(|at| {
        let token: String = stem
            .get(at..)?
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        is_processor_name(&token).then_some(token)
    });
    (arch, variant)
}

fn is_processor_name(s: &str) -> bool {
    s.strip_prefix("gfx").is_some_and(|rest| {
        (3..=4).contains(&rest.len()) && rest.chars().all(|c| c.is_ascii_hexdigit())
    })
}

/// `gfx906_60` → (`gfx906`, 60); `gfx90a_6e` → (`gfx90a`, 110). MIOpen names its kernel
/// databases `<arch>_<CUs>.kdb`, the CU count in decimal up to 64 and in hex above
/// (`Handle::GetDbBasename` in MIOpen's `src/hip/handlehip.cpp`).
fn kdb_name(stem: &str) -> (Option<String>, Option<u32>) {
    let Some((arch, cus)) = stem.split_once('_') else {
        return (None, None);
    };
    if !is_processor_name(arch) {
        return (None, None);
    }
    let cus = match cus.parse::<u32>() {
        Ok(n) if n <= 64 => Some(n),
        _ => u32::from_str_radix(cus, 16).ok().filter(|&n| n > 64),
    };
    (Some(arch.to_owned()), cus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensile_names() {
        assert_eq!(
            tensile_index_arch("TensileLibrary_lazy_gfx90a.dat").as_deref(),
            Some("gfx90a")
        );
        assert_eq!(
            tensile_index_arch(
                "TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx90a.dat"
            ),
            None
        );
        assert_eq!(
            tensile_index_arch("TensileLibrary_gfx1030.dat").as_deref(),
            Some("gfx1030")
        );
        assert_eq!(
            tensile_arch("Kernels.so-000-gfx90a-xnack+.hsaco"),
            (Some("gfx90a".to_owned()), Some("-xnack+"))
        );
        assert_eq!(
            tensile_arch(
                "TensileLibrary_Type_BB_HPA_Contraction_l_Ailk_Bjlk_Cijk_Dijk_CU104_gfx90a.co"
            ),
            (Some("gfx90a".to_owned()), None)
        );
        assert_eq!(
            tensile_arch("extop_gfx1100.co"),
            (Some("gfx1100".to_owned()), None)
        );
        assert_eq!(tensile_arch("TensileManifest.txt"), (None, None));
        assert_eq!(
            tensile_dir(Path::new(
                "/usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library/x_gfx90a.co"
            )),
            Some((
                "/usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library".to_owned(),
                "rocblas".to_owned()
            ))
        );
        assert_eq!(
            tensile_dir(Path::new("/x.deb!/opt/rocm/lib/hipblaslt/library/a.dat")).map(|d| d.1),
            Some("hipblaslt".to_owned())
        );
        assert_eq!(tensile_dir(Path::new("/opt/rocm/lib/library/a.co")), None);
    }

    #[test]
    fn kdb_names() {
        assert_eq!(kdb_name("gfx90a_6e"), (Some("gfx90a".into()), Some(110)));
        assert_eq!(kdb_name("gfx906_60"), (Some("gfx906".into()), Some(60)));
        assert_eq!(kdb_name("gfx908_78"), (Some("gfx908".into()), Some(120)));
        assert_eq!(kdb_name("gfx1030_36"), (Some("gfx1030".into()), Some(36)));
        assert_eq!(kdb_name("readme"), (None, None));
    }
}
