//! Which AMD GPUs this machine has, read from sysfs alone: no ROCm, no GPU access, no root.
//!
//! ```no_run
//! use rocpack_devices::{detect, Roots};
//! let found = detect(&Roots::system()).unwrap();
//! for d in &found.devices {
//!     println!("node {}: {} {:?}", d.node, d.target, d.marketing_name.as_ref().map(|n| &n.name));
//! }
//! for w in &found.warnings {
//!     eprintln!("warning: {w}");
//! }
//! ```
//!
//! Sources, all read-only: KFD's topology (`/sys/class/kfd/kfd/topology`), the DRM render nodes
//! (`/sys/class/drm/renderD*/device`), the `amdgpu.noretry` module parameter, libdrm's
//! `amdgpu.ids`, and (for [`Access`]) `/dev/kfd` and `/dev/dri/renderD*` opened read-write and
//! closed again. See `docs/devices.md` for what each field means and how xnack and sramecc are
//! decided.
#![forbid(unsafe_code)]
#![deny(clippy::indexing_slicing)]
#![cfg_attr(
    test,
    allow(clippy::indexing_slicing, clippy::unwrap_used, clippy::expect_used)
)]

pub mod access;
mod drm;
pub mod features;
pub mod ids;
mod kfd;
mod sysfs;

use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use serde::{Serialize, Serializer};

use rocpack_amdgpu::TargetId;
use rocpack_amdgpu::mach::{self, GfxVersion};

pub use access::{AccessStatus, Identity, NodeAccess, OwnerGroup};
pub use drm::{PCI_VENDOR_AMD, PciIds};
pub use features::{FeatureSource, FeatureState, FeatureValue};
pub use ids::{AMDGPU_IDS_PATHS, AmdgpuIds, MarketingName, NameMatch, find_amdgpu_ids};

/// Where to look: a sysfs root, a `/dev` root and an `amdgpu.ids` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// The sysfs mount (`/sys`), or a fixture tree shaped like it.
    pub sys: PathBuf,
    /// The device directory (`/dev`) for the access check; `None` skips the check.
    pub dev: Option<PathBuf>,
    /// libdrm's `amdgpu.ids`; `None` means no marketing names.
    pub amdgpu_ids: Option<PathBuf>,
}

impl Roots {
    /// This machine: `/sys`, `/dev`, and the first `amdgpu.ids` of [`AMDGPU_IDS_PATHS`].
    pub fn system() -> Roots {
        Roots {
            sys: PathBuf::from("/sys"),
            dev: Some(PathBuf::from("/dev")),
            amdgpu_ids: find_amdgpu_ids(AMDGPU_IDS_PATHS),
        }
    }

    /// A fixture tree: `sys` only, no access check, no marketing names (set the fields to add
    /// them).
    pub fn at(sys: impl Into<PathBuf>) -> Roots {
        Roots {
            sys: sys.into(),
            dev: None,
            amdgpu_ids: None,
        }
    }
}

/// Why detection could not run at all. Problems with single files are [`Diagnostic`]s instead.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}: {message}", path.display())]
    Malformed {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}: no `{key}` line", path.display())]
    MissingKey { path: PathBuf, key: &'static str },
    #[error("{}: larger than {limit} bytes, not a sysfs attribute", path.display())]
    TooLarge { path: PathBuf, limit: u64 },
}

impl Error {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Error::Io { path, .. }
            | Error::Malformed { path, .. }
            | Error::MissingKey { path, .. }
            | Error::TooLarge { path, .. } => path,
        }
    }
}

rocpack_finding::codes! {
    /// What detection notes (info) or warns about (docs/diagnostics.md, "devices").
    pub enum DeviceCode in "devices" {
        /// No KFD topology: the amdgpu driver is not loaded, or there is no AMD GPU.
        NoKfd = ("no-kfd", Info),
        /// KFD lists only CPU nodes.
        NoGpuNodes = ("no-gpu-nodes", Info),
        /// An AMD render node with no KFD node.
        DrmWithoutKfd = ("drm-without-kfd", Info),
        /// No `amdgpu.ids`, so no marketing names.
        NoAmdgpuIds = ("no-amdgpu-ids", Info),
        /// A node's `properties` is unreadable or malformed; the node is skipped.
        KfdBadNode = ("kfd-bad-node", Warning),
        /// A value does not fit the kernel's 32-bit field.
        KfdBadValue = ("kfd-bad-value", Warning),
        /// A GPU node without `gfx_target_version`; skipped.
        KfdNoGfxTargetVersion = ("kfd-no-gfx-target-version", Warning),
        /// Zero or undecodable `gfx_target_version`; skipped.
        KfdBadGfxTargetVersion = ("kfd-bad-gfx-target-version", Warning),
        /// A GPU node without `drm_render_minor`.
        KfdNoRenderMinor = ("kfd-no-render-minor", Warning),
        /// `generation_id` cannot be read or parsed.
        KfdBadFile = ("kfd-bad-file", Warning),
        /// A memory bank cannot be read or parsed.
        KfdBadMemBank = ("kfd-bad-mem-bank", Warning),
        /// A non-numeric entry under `nodes`.
        KfdUnexpectedEntry = ("kfd-unexpected-entry", Warning),
        /// `renderD<minor>/device` is missing or has no PCI `vendor`.
        DrmRenderNodeMissing = ("drm-render-node-missing", Warning),
        /// A DRM attribute that cannot be parsed.
        DrmBadFile = ("drm-bad-file", Warning),
        /// A DRM directory that cannot be read.
        DrmUnreadable = ("drm-unreadable", Warning),
        /// DRM's device ID or PCI slot disagrees with KFD's.
        DrmKfdMismatch = ("drm-kfd-mismatch", Warning),
        /// The processor is not in rocpack's table.
        UnknownProcessor = ("unknown-processor", Warning),
        /// `noretry` is not a number.
        BadModuleParameter = ("bad-module-parameter", Warning),
        /// A malformed line in `amdgpu.ids`.
        AmdgpuIdsBadLine = ("amdgpu-ids-bad-line", Warning),
        /// `amdgpu.ids` has no version line.
        AmdgpuIdsNoVersion = ("amdgpu-ids-no-version", Warning),
        /// `amdgpu.ids` cannot be read.
        AmdgpuIdsUnreadable = ("amdgpu-ids-unreadable", Warning),
    }
}

/// A note or warning: a stable kebab-case code, the file (and line) it is about, and a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub code: DeviceCode,
    #[serde(serialize_with = "ser_opt_path")]
    pub path: Option<PathBuf>,
    pub line: Option<usize>,
    pub message: String,
}

impl Diagnostic {
    fn new(code: DeviceCode, path: Option<&Path>, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            path: path.map(Path::to_path_buf),
            line: None,
            message: message.into(),
        }
    }

    fn at(code: DeviceCode, path: &Path, line: usize, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            path: Some(path.to_owned()),
            line: Some(line),
            message: message.into(),
        }
    }

    fn from_error(code: DeviceCode, e: &Error) -> Diagnostic {
        let (line, message) = match e {
            Error::Malformed { line, message, .. } => (Some(*line), message.clone()),
            Error::Io { source, .. } => (None, format!("cannot read: {source}")),
            Error::MissingKey { key, .. } => (None, format!("no `{key}` line")),
            Error::TooLarge { limit, .. } => (
                None,
                format!("larger than {limit} bytes, not a sysfs attribute"),
            ),
        };
        Diagnostic {
            code,
            path: Some(e.path().to_owned()),
            line,
            message,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.path, self.line) {
            (Some(p), Some(l)) => write!(f, "{}:{l}: ", p.display())?,
            (Some(p), None) => write!(f, "{}: ", p.display())?,
            _ => {}
        }
        write!(f, "{} [{}]", self.message, self.code)
    }
}

/// Discrete GPU or APU (GPU sharing the CPU's memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Dgpu,
    Apu,
    Unknown,
}

/// Processors built only as APUs: `kind = "APU"` in rocpack's GPU catalogue (LLVM's
/// AMDGPUUsage processor table, "Type" column). Every other processor there is a dGPU, except
/// that gfx940 and gfx942 also exist as the MI300A APU.
use rocpack_amdgpu::mach::APU_PROCESSORS;

/// Whether the current process may open the device files ROCm needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Access {
    pub kfd: NodeAccess,
    /// `None` when the device has no render node.
    pub render: Option<NodeAccess>,
}

/// One GPU: a KFD topology node with its DRM render node.
#[derive(Debug, Clone, Serialize)]
pub struct Device {
    /// KFD node number (the directory name under `topology/nodes`).
    pub node: u32,
    /// KFD's `gpu_id`, when the file is there.
    pub gpu_id: Option<u32>,
    /// KFD's `name` file: the ASIC name in lower case (`aldebaran`), or `ip discovery` for GPUs
    /// the driver finds through IP discovery.
    pub kfd_name: Option<String>,
    /// Processor and the xnack/sramecc modes that are known.
    pub target: TargetId,
    /// `gfx_target_version` decoded (`9.0.10`).
    #[serde(serialize_with = "ser_display")]
    pub gfx_version: GfxVersion,
    pub xnack: FeatureState,
    pub sramecc: FeatureState,
    pub marketing_name: Option<MarketingName>,
    /// Vendor and device from KFD; revision and subsystem from DRM.
    pub pci: PciIds,
    /// `0000:03:00.0`, from DRM's `uevent`, else from KFD's `location_id` and `domain`.
    pub pci_slot: Option<String>,
    pub drm_render_minor: Option<u32>,
    /// `/dev/dri/renderD<minor>` (under [`Roots::dev`] when set).
    #[serde(serialize_with = "ser_opt_path")]
    pub render_node: Option<PathBuf>,
    pub simd_count: u32,
    /// `simd_count / simd_per_cu`.
    pub cu_count: Option<u32>,
    pub wavefront_size: Option<u32>,
    /// Accelerator complexes (XCCs) in this node; 1 except on partitionable GPUs like MI300.
    pub num_xcc: Option<u32>,
    /// Device memory KFD offers: the node's FB_PUBLIC and FB_PRIVATE banks. On APUs this is the
    /// carve-out, or on newer kernels the GTT size.
    pub vram_bytes: Option<u64>,
    pub kind: Kind,
    /// The evidence for `kind`.
    pub kind_reason: String,
    /// KFD's `unique_id` (the `GPU-<hex>` UUID ROCm prints), when non-zero.
    pub unique_id: Option<u64>,
    /// `None` when [`Roots::dev`] is `None`.
    pub access: Option<Access>,
}

/// An AMD render node with no KFD node: a GPU compute cannot use (KFD not loaded, the GPU
/// unsupported by KFD, or hidden from this container).
#[derive(Debug, Clone, Serialize)]
pub struct RenderNode {
    pub minor: u32,
    pub pci: PciIds,
    pub pci_slot: Option<String>,
    pub marketing_name: Option<MarketingName>,
}

/// Which `amdgpu.ids` was used.
#[derive(Debug, Clone, Serialize)]
pub struct IdsFile {
    #[serde(serialize_with = "ser_path")]
    pub path: PathBuf,
    pub version: Option<String>,
    pub entries: usize,
}

/// Everything [`detect`] found.
#[derive(Debug, Clone, Serialize)]
pub struct Detection {
    pub devices: Vec<Device>,
    pub drm_only: Vec<RenderNode>,
    /// KFD's `topology/generation_id` (changes when GPUs come and go).
    pub kfd_generation_id: Option<u64>,
    /// `/sys/module/amdgpu/parameters/noretry` (-1 = automatic).
    pub amdgpu_noretry: Option<i32>,
    pub amdgpu_ids: Option<IdsFile>,
    /// Facts worth knowing that are not problems.
    pub notes: Vec<Diagnostic>,
    /// Files that were missing, unreadable or malformed; detection went on without them.
    pub warnings: Vec<Diagnostic>,
}

/// Detects the GPUs below `roots`.
///
/// Missing or malformed files become warnings naming the file (and line), and the walk goes on;
/// a system without `class/kfd` gives no devices and a `no-kfd` note.
///
/// # Errors
/// [`Error::Io`] when `roots.sys` is not a readable directory or KFD's `nodes` directory exists
/// but cannot be listed.
pub fn detect(roots: &Roots) -> Result<Detection, Error> {
    std::fs::read_dir(&roots.sys).map_err(|source| Error::Io {
        path: roots.sys.clone(),
        source,
    })?;
    let mut notes = Vec::new();
    let mut warnings = Vec::new();

    let (ids, ids_file) = load_ids(roots, &mut notes, &mut warnings);
    let noretry = read_noretry(&roots.sys, &mut warnings);
    let topology = kfd::read(&roots.sys, &mut warnings)?;
    let identity = roots.dev.as_ref().map(|_| Identity::current());

    let mut devices = Vec::new();
    let mut claimed_minors = Vec::new();
    let kfd_generation_id = topology.as_ref().and_then(|t| t.generation_id);
    match &topology {
        None => notes.push(Diagnostic::new(
            DeviceCode::NoKfd,
            Some(&kfd::topology_dir(&roots.sys)),
            "no KFD (amdgpu driver not loaded or no AMD GPU)",
        )),
        Some(t) => {
            let gpus: Vec<_> = t.nodes.iter().filter(|n| n.is_gpu()).collect();
            if gpus.is_empty() {
                notes.push(Diagnostic::new(
                    DeviceCode::NoGpuNodes,
                    Some(&kfd::topology_dir(&roots.sys).join("nodes")),
                    "KFD is loaded but lists no GPU nodes",
                ));
            }
            // The default XNACK mode of a process depends on every GPU, so weigh them all first.
            let weights: Vec<_> = gpus
                .iter()
                .filter_map(|n| {
                    let v = GfxVersion::from_kfd(n.props.get("gfx_target_version")?)?;
                    let p = v.processor()?;
                    let a = features::allows_xnack(&p, v.major, noretry);
                    Some((n.id, p, a))
                })
                .collect();
            for node in gpus {
                let device = build_device(
                    node,
                    roots,
                    ids.as_ref(),
                    &weights,
                    identity.as_ref(),
                    &mut warnings,
                );
                if let Some(d) = device {
                    if let Some(m) = d.drm_render_minor {
                        claimed_minors.push(m);
                    }
                    devices.push(d);
                }
            }
        }
    }

    let mut drm_only = Vec::new();
    for minor in drm::render_minors(&roots.sys, &mut warnings) {
        if claimed_minors.contains(&minor) {
            continue;
        }
        match drm::read_render(&roots.sys, minor) {
            Ok(Some(r)) if r.ids.vendor == PCI_VENDOR_AMD => {
                notes.push(Diagnostic::new(
                    DeviceCode::DrmWithoutKfd,
                    Some(&r.dir),
                    format!(
                        "renderD{minor} ({:04x}:{:04x}) has no KFD node, so ROCm cannot use it",
                        r.ids.vendor, r.ids.device
                    ),
                ));
                drm_only.push(RenderNode {
                    minor,
                    marketing_name: ids
                        .as_ref()
                        .and_then(|i| i.lookup(r.ids.device, r.ids.revision)),
                    pci: r.ids,
                    pci_slot: r.slot,
                });
            }
            Ok(_) => {}
            Err(e) => warnings.push(Diagnostic::from_error(DeviceCode::DrmBadFile, &e)),
        }
    }

    // Which list a diagnostic is in follows its code's severity, whichever list the code that
    // found it pushed it to: one source for it (each list keeps its order).
    let (notes, warnings): (Vec<Diagnostic>, Vec<Diagnostic>) = notes
        .into_iter()
        .chain(warnings)
        .partition(|d| d.code.severity() == rocpack_finding::Severity::Info);
    Ok(Detection {
        devices,
        drm_only,
        kfd_generation_id,
        amdgpu_noretry: noretry,
        amdgpu_ids: ids_file,
        notes,
        warnings,
    })
}

fn load_ids(
    roots: &Roots,
    notes: &mut Vec<Diagnostic>,
    warnings: &mut Vec<Diagnostic>,
) -> (Option<AmdgpuIds>, Option<IdsFile>) {
    let Some(path) = &roots.amdgpu_ids else {
        notes.push(Diagnostic::new(
            DeviceCode::NoAmdgpuIds,
            None,
            format!(
                "no amdgpu.ids (looked for {}), so no marketing names",
                AMDGPU_IDS_PATHS.join(", ")
            ),
        ));
        return (None, None);
    };
    match AmdgpuIds::read(path, warnings) {
        Ok(ids) => {
            let file = IdsFile {
                path: path.clone(),
                version: ids.version.clone(),
                entries: ids.len(),
            };
            (Some(ids), Some(file))
        }
        Err(e) => {
            warnings.push(Diagnostic::from_error(DeviceCode::AmdgpuIdsUnreadable, &e));
            (None, None)
        }
    }
}

fn read_noretry(sys: &Path, warnings: &mut Vec<Diagnostic>) -> Option<i32> {
    let path = sys.join("module/amdgpu/parameters/noretry");
    match sysfs::read_optional(&path)
        .and_then(|t| t.map(|t| sysfs::parse_dec::<i32>(&path, &t)).transpose())
    {
        Ok(v) => v,
        Err(e) => {
            warnings.push(Diagnostic::from_error(DeviceCode::BadModuleParameter, &e));
            None
        }
    }
}

fn build_device(
    node: &kfd::Node,
    roots: &Roots,
    ids: Option<&AmdgpuIds>,
    weights: &[(u32, String, features::Allows)],
    identity: Option<&Identity>,
    warnings: &mut Vec<Diagnostic>,
) -> Option<Device> {
    let props = &node.props;
    let path = props.path();
    let u32_of = |key: &str, warnings: &mut Vec<Diagnostic>| match props.get_u32(key) {
        Ok(v) => v,
        Err(e) => {
            warnings.push(Diagnostic::from_error(DeviceCode::KfdBadValue, &e));
            None
        }
    };
    let Some(gfx) = props.get("gfx_target_version") else {
        warnings.push(Diagnostic::new(
            DeviceCode::KfdNoGfxTargetVersion,
            Some(path),
            format!(
                "GPU node {} has no gfx_target_version (kernels before 5.14 do not publish it; libhsakmt then falls back to its own device-ID table, rocpack does not): skipped",
                node.id
            ),
        ));
        return None;
    };
    let Some(gfx_version) = GfxVersion::from_kfd(gfx) else {
        warnings.push(Diagnostic::at(
            DeviceCode::KfdBadGfxTargetVersion,
            path,
            props.line_of("gfx_target_version").unwrap_or(0),
            format!("GPU node {} has gfx_target_version {gfx}: skipped", node.id),
        ));
        return None;
    };
    let Some(processor) = gfx_version.processor() else {
        warnings.push(Diagnostic::at(
            DeviceCode::KfdBadGfxTargetVersion,
            path,
            props.line_of("gfx_target_version").unwrap_or(0),
            format!("gfx_target_version {gfx} ({gfx_version}) names no processor: skipped"),
        ));
        return None;
    };
    if mach::by_name(&processor).is_none() {
        warnings.push(Diagnostic::new(
            DeviceCode::UnknownProcessor,
            Some(path),
            format!("{processor} is not in rocpack's processor table (newer than rocpack?)"),
        ));
    }

    let cap_at = path.display().to_string();
    let sramecc = features::sramecc(&processor, props.get("capability"), &cap_at);
    let xnack = features::xnack(&processor, node.id, weights);
    let mut target = TargetId::new(processor.clone());
    target.sramecc = sramecc.as_target_feature();
    target.xnack = xnack.as_target_feature();

    let simd_count = u32_of("simd_count", warnings).unwrap_or(0);
    let simd_per_cu = u32_of("simd_per_cu", warnings).filter(|&n| n > 0);
    let cu_count = simd_per_cu.map(|s| simd_count / s);
    let vendor_kfd = u32_of("vendor_id", warnings).and_then(|v| u16::try_from(v).ok());
    let device_kfd = u32_of("device_id", warnings).and_then(|v| u16::try_from(v).ok());
    // KFD prints the int32 minor with %u; -1 (no DRM node) comes out as 4294967295.
    let minor = u32_of("drm_render_minor", warnings).filter(|&m| m > 0 && m <= i32::MAX as u32);
    let kfd_slot = match (u32_of("domain", warnings), u32_of("location_id", warnings)) {
        (Some(d), Some(l)) if l != 0 => Some(drm::slot_from_location(d, l)),
        (None, Some(l)) if l != 0 => Some(drm::slot_from_location(0, l)),
        _ => None,
    };

    let render = match minor {
        None => {
            warnings.push(Diagnostic::new(
                DeviceCode::KfdNoRenderMinor,
                Some(path),
                format!("GPU node {} has no drm_render_minor", node.id),
            ));
            None
        }
        Some(m) => match drm::read_render(&roots.sys, m) {
            Ok(Some(r)) => Some(r),
            Ok(None) => {
                warnings.push(Diagnostic::new(
                    DeviceCode::DrmRenderNodeMissing,
                    Some(&drm::render_dir(&roots.sys, m)),
                    format!(
                        "KFD node {} names render minor {m}, but renderD{m}/device is missing or not a PCI device",
                        node.id
                    ),
                ));
                None
            }
            Err(e) => {
                warnings.push(Diagnostic::from_error(DeviceCode::DrmBadFile, &e));
                None
            }
        },
    };
    if let Some(r) = &render {
        if device_kfd.is_some_and(|d| d != r.ids.device) {
            warnings.push(Diagnostic::new(
                DeviceCode::DrmKfdMismatch,
                Some(&r.dir.join("device")),
                format!(
                    "renderD{} is PCI device {:04x}, but KFD node {} says {:04x}",
                    r.minor,
                    r.ids.device,
                    node.id,
                    device_kfd.unwrap_or(0)
                ),
            ));
        }
        if let (Some(a), Some(b)) = (&r.slot, &kfd_slot)
            && !drm::same_device(a, b)
        {
            warnings.push(Diagnostic::new(
                DeviceCode::DrmKfdMismatch,
                Some(&r.dir.join("uevent")),
                format!(
                    "renderD{} is at {a}, but KFD node {}'s location_id says {b}",
                    r.minor, node.id
                ),
            ));
        }
    }

    let pci = PciIds {
        vendor: vendor_kfd
            .or(render.as_ref().map(|r| r.ids.vendor))
            .unwrap_or(0),
        device: device_kfd
            .or(render.as_ref().map(|r| r.ids.device))
            .unwrap_or(0),
        revision: render.as_ref().and_then(|r| r.ids.revision),
        subsystem_vendor: render.as_ref().and_then(|r| r.ids.subsystem_vendor),
        subsystem_device: render.as_ref().and_then(|r| r.ids.subsystem_device),
    };
    let marketing_name = ids.and_then(|i| i.lookup(pci.device, pci.revision));
    let (kind, kind_reason) = kind_of(&processor, props);
    let render_node = minor.map(|m| {
        roots
            .dev
            .as_deref()
            .unwrap_or(Path::new("/dev"))
            .join(format!("dri/renderD{m}"))
    });
    let access = match (&roots.dev, identity) {
        (Some(dev), Some(id)) => Some(Access {
            kfd: access::check(&dev.join("kfd"), id),
            render: render_node.as_deref().map(|p| access::check(p, id)),
        }),
        _ => None,
    };

    Some(Device {
        node: node.id,
        gpu_id: node.gpu_id,
        kfd_name: node.name.clone(),
        target,
        gfx_version,
        xnack,
        sramecc,
        marketing_name,
        pci,
        pci_slot: render.as_ref().and_then(|r| r.slot.clone()).or(kfd_slot),
        drm_render_minor: minor,
        render_node,
        simd_count,
        cu_count,
        wavefront_size: u32_of("wave_front_size", warnings),
        num_xcc: u32_of("num_xcc", warnings),
        vram_bytes: node
            .vram_bytes
            .or_else(|| props.get("local_mem_size").filter(|&s| s > 0)),
        kind,
        kind_reason,
        unique_id: props.get("unique_id").filter(|&u| u != 0),
        access,
    })
}

/// dGPU or APU, with the evidence.
///
/// Modern kernels give an APU's GPU a node of its own with `cpu_cores_count 0` (the log even says
/// "Add dGPU node" for a Raphael iGPU), memory banks look alike (the carve-out or GTT is reported
/// as FB_PUBLIC, like a large-BAR dGPU), and the flag ROCm uses (`AMDGPU_IDS_FLAGS_FUSION`) comes
/// from a DRM ioctl, not sysfs. So the processor decides, with two sysfs signals first.
fn kind_of(processor: &str, props: &sysfs::Properties) -> (Kind, String) {
    if props.get("cpu_cores_count").is_some_and(|c| c > 0) {
        return (
            Kind::Apu,
            "the node has CPU cores as well as SIMDs (an APU described by the BIOS CRAT table)"
                .into(),
        );
    }
    let coherent = props
        .get("capability")
        .is_some_and(|c| c & features::HSA_CAP_FLAGS_COHERENTHOSTACCESS != 0);
    if matches!(processor, "gfx940" | "gfx942") {
        return if coherent {
            (
                Kind::Apu,
                format!("{processor} with HSA_CAP_FLAGS_COHERENTHOSTACCESS: the MI300A APU"),
            )
        } else {
            (
                Kind::Dgpu,
                format!("{processor} without coherent host access: an MI300X-class dGPU"),
            )
        };
    }
    if APU_PROCESSORS.contains(&processor) {
        return (
            Kind::Apu,
            format!("{processor} is only built as an APU (LLVM AMDGPUUsage processor table)"),
        );
    }
    match mach::by_name(processor) {
        Some(m) if !m.generic => (
            Kind::Dgpu,
            format!("{processor} is a discrete GPU (LLVM AMDGPUUsage processor table)"),
        ),
        _ => (
            Kind::Unknown,
            format!("{processor} is not in rocpack's processor table"),
        ),
    }
}

/// Serializes a path as a string, with bytes that are not UTF-8 written as `\xNN`.
pub(crate) fn ser_path<S: Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rocpack_bytes::lossless_string(p.as_os_str().as_bytes()))
}

fn ser_opt_path<S: Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
    match p {
        Some(p) => ser_path(p, s),
        None => s.serialize_none(),
    }
}

fn ser_display<T: fmt::Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}
