//! KFD's topology in sysfs: `<sys>/class/kfd/kfd/topology/{generation_id,nodes/<N>/...}`.
//!
//! The files are written by `node_show` and `mem_show` in the kernel's
//! `drivers/gpu/drm/amd/amdkfd/kfd_topology.c` and read by libhsakmt's `topology.c`. A node is a
//! GPU when its `simd_count` is non-zero (the kernel prints 0 for CPU nodes, and libhsakmt skips
//! nodes without `NumFComputeCores`); `gpu_id` is 0 for CPU nodes.

use std::path::{Path, PathBuf};

use crate::sysfs::{self, Properties};
use crate::{DeviceCode, Diagnostic, Error};

/// `HSA_MEM_HEAP_TYPE_FB_PUBLIC` and `_FB_PRIVATE`: device memory.
const HEAP_FB_PUBLIC: u64 = 1;
const HEAP_FB_PRIVATE: u64 = 2;

/// The topology directory below a sysfs root.
pub(crate) fn topology_dir(sys: &Path) -> PathBuf {
    sys.join("class/kfd/kfd/topology")
}

#[derive(Debug)]
pub(crate) struct Node {
    pub id: u32,
    pub props: Properties,
    pub gpu_id: Option<u32>,
    /// The `name` file, trimmed; `None` when missing or empty.
    pub name: Option<String>,
    /// Sum of the FB_PUBLIC/FB_PRIVATE banks, when there are any banks.
    pub vram_bytes: Option<u64>,
}

impl Node {
    pub(crate) fn is_gpu(&self) -> bool {
        self.props.get("simd_count").is_some_and(|n| n > 0)
    }
}

#[derive(Debug)]
pub(crate) struct Topology {
    pub generation_id: Option<u64>,
    pub nodes: Vec<Node>,
}

/// Reads the topology. `Ok(None)` when there is no KFD in this sysfs. A node whose files cannot
/// be read or parsed is left out with a warning.
///
/// # Errors
/// When the `nodes` directory exists but cannot be listed.
pub(crate) fn read(sys: &Path, warnings: &mut Vec<Diagnostic>) -> Result<Option<Topology>, Error> {
    let topo = topology_dir(sys);
    let nodes_dir = topo.join("nodes");
    let entries = match std::fs::read_dir(&nodes_dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(Error::Io {
                path: nodes_dir,
                source,
            });
        }
    };
    let generation_id = match sysfs::read_optional(&topo.join("generation_id")).and_then(|t| {
        t.map(|t| sysfs::parse_dec::<u64>(&topo.join("generation_id"), &t))
            .transpose()
    }) {
        Ok(g) => g,
        Err(e) => {
            warnings.push(Diagnostic::from_error(DeviceCode::KfdBadFile, &e));
            None
        }
    };
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| Error::Io {
            path: nodes_dir.clone(),
            source,
        })?;
        let name = entry.file_name();
        match name.to_str().and_then(|n| n.parse::<u32>().ok()) {
            Some(id) => ids.push(id),
            None => warnings.push(Diagnostic::new(
                DeviceCode::KfdUnexpectedEntry,
                Some(&entry.path()),
                "not a node number; ignored",
            )),
        }
    }
    ids.sort_unstable();
    let mut nodes = Vec::new();
    for id in ids {
        match read_node(&nodes_dir.join(id.to_string()), id, warnings) {
            Ok(node) => nodes.push(node),
            Err(e) => warnings.push(Diagnostic::from_error(DeviceCode::KfdBadNode, &e)),
        }
    }
    Ok(Some(Topology {
        generation_id,
        nodes,
    }))
}

fn read_node(dir: &Path, id: u32, warnings: &mut Vec<Diagnostic>) -> Result<Node, Error> {
    let props = Properties::read(&dir.join("properties"))?;
    let gpu_id_path = dir.join("gpu_id");
    let gpu_id = match sysfs::read_optional(&gpu_id_path)? {
        Some(t) => Some(sysfs::parse_dec::<u32>(&gpu_id_path, &t)?),
        None => None,
    };
    let name = sysfs::read_optional(&dir.join("name"))?
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty());
    let node = Node {
        id,
        props,
        gpu_id,
        name,
        vram_bytes: None,
    };
    if !node.is_gpu() {
        return Ok(node);
    }
    let vram_bytes = read_vram(&dir.join("mem_banks"), warnings);
    Ok(Node { vram_bytes, ..node })
}

/// Device memory from `mem_banks/*/properties`. Unreadable banks are warnings.
fn read_vram(banks: &Path, warnings: &mut Vec<Diagnostic>) -> Option<u64> {
    let entries = std::fs::read_dir(banks).ok()?;
    let mut total: Option<u64> = None;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path().join("properties")))
        .collect();
    paths.sort();
    for path in paths {
        let bank = match Properties::read(&path) {
            Ok(b) => b,
            Err(e) => {
                warnings.push(Diagnostic::from_error(DeviceCode::KfdBadMemBank, &e));
                continue;
            }
        };
        if matches!(
            bank.get("heap_type"),
            Some(HEAP_FB_PUBLIC | HEAP_FB_PRIVATE)
        ) {
            let size = bank.get("size_in_bytes").unwrap_or(0);
            total = Some(total.unwrap_or(0).saturating_add(size));
        }
    }
    total
}
