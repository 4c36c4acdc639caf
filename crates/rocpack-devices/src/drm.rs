//! DRM render nodes: `<sys>/class/drm/renderD<minor>/device/` is the PCI device, with `vendor`,
//! `device`, `revision`, `subsystem_vendor`, `subsystem_device` (hex) and `uevent`
//! (`PCI_SLOT_NAME=0000:03:00.0`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::sysfs;
use crate::{DeviceCode, Diagnostic, Error};

/// The AMD/ATI PCI vendor ID.
pub const PCI_VENDOR_AMD: u16 = 0x1002;

/// PCI identity of a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PciIds {
    pub vendor: u16,
    pub device: u16,
    /// From DRM's `revision`; KFD does not publish it.
    pub revision: Option<u8>,
    pub subsystem_vendor: Option<u16>,
    pub subsystem_device: Option<u16>,
}

/// What one render node's PCI device says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RenderDevice {
    pub minor: u32,
    pub ids: PciIds,
    pub slot: Option<String>,
    pub dir: PathBuf,
}

pub(crate) fn render_dir(sys: &Path, minor: u32) -> PathBuf {
    sys.join(format!("class/drm/renderD{minor}"))
}

/// Reads `renderD<minor>/device`. `Ok(None)` when the render node is not there, or is not
/// backed by a PCI device (the render nodes of MI300 partitions belong to `amdgpu_xcp` platform
/// devices, which have no `vendor` file).
pub(crate) fn read_render(sys: &Path, minor: u32) -> Result<Option<RenderDevice>, Error> {
    let dir = render_dir(sys, minor).join("device");
    if !dir.join("vendor").exists() {
        return Ok(None);
    }
    let hex = |name: &str| -> Result<Option<u64>, Error> {
        let path = dir.join(name);
        sysfs::read_optional(&path)?
            .map(|t| sysfs::parse_hex(&path, &t))
            .transpose()
    };
    let narrow = |name: &str, v: Option<u64>, max: u64| -> Result<Option<u64>, Error> {
        match v {
            Some(v) if v > max => Err(Error::Malformed {
                path: dir.join(name),
                line: 1,
                message: format!("{v:#x} does not fit a PCI {name}"),
            }),
            v => Ok(v),
        }
    };
    let vendor = narrow("vendor", hex("vendor")?, 0xffff)?.ok_or_else(|| Error::Io {
        path: dir.join("vendor"),
        source: std::io::ErrorKind::NotFound.into(),
    })?;
    let device = narrow("device", hex("device")?, 0xffff)?.ok_or_else(|| Error::Io {
        path: dir.join("device"),
        source: std::io::ErrorKind::NotFound.into(),
    })?;
    let revision = narrow("revision", hex("revision")?, 0xff)?;
    let subsystem_vendor = narrow("subsystem_vendor", hex("subsystem_vendor")?, 0xffff)?;
    let subsystem_device = narrow("subsystem_device", hex("subsystem_device")?, 0xffff)?;
    let slot = match sysfs::read_optional(&dir.join("uevent"))? {
        Some(text) => text
            .lines()
            .find_map(|l| l.strip_prefix("PCI_SLOT_NAME="))
            .map(|s| s.trim().to_owned()),
        // Without uevent, the device link's target is named after the slot.
        None => std::fs::read_link(&dir).ok().and_then(|t| {
            t.file_name()
                .and_then(|n| n.to_str())
                .filter(|n| looks_like_slot(n))
                .map(str::to_owned)
        }),
    };
    #[allow(clippy::cast_possible_truncation)] // checked by `narrow`
    Ok(Some(RenderDevice {
        minor,
        ids: PciIds {
            vendor: vendor as u16,
            device: device as u16,
            revision: revision.map(|r| r as u8),
            subsystem_vendor: subsystem_vendor.map(|v| v as u16),
            subsystem_device: subsystem_device.map(|v| v as u16),
        },
        slot,
        dir,
    }))
}

fn looks_like_slot(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 12 && b.get(4) == Some(&b':') && b.get(7) == Some(&b':') && b.get(10) == Some(&b'.')
}

/// Minors of every `renderD<N>` under `<sys>/class/drm`, sorted.
pub(crate) fn render_minors(sys: &Path, warnings: &mut Vec<Diagnostic>) -> Vec<u32> {
    let dir = sys.join("class/drm");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut minors: Vec<u32> = Vec::new();
    for entry in entries {
        match entry {
            Ok(e) => {
                if let Some(m) = e
                    .file_name()
                    .to_str()
                    .and_then(|n| n.strip_prefix("renderD"))
                    .and_then(|n| n.parse().ok())
                {
                    minors.push(m);
                }
            }
            Err(source) => warnings.push(Diagnostic::from_error(
                DeviceCode::DrmUnreadable,
                &Error::Io {
                    path: dir.clone(),
                    source,
                },
            )),
        }
    }
    minors.sort_unstable();
    minors
}

/// `domain:bus:device.function` from KFD's `location_id` (`pci_dev_id`: bus << 8 | devfn) and
/// `domain`. On partitioned GPUs KFD ORs the partition number into `location_id`, so the
/// function number can be off; [`same_device`] compares without it.
pub(crate) fn slot_from_location(domain: u32, location_id: u32) -> String {
    let bus = (location_id >> 8) & 0xff;
    let devfn = location_id & 0xff;
    format!("{domain:04x}:{bus:02x}:{:02x}.{}", devfn >> 3, devfn & 7)
}

/// Whether two slots name the same PCI device, ignoring the function number.
pub(crate) fn same_device(a: &str, b: &str) -> bool {
    let stem = |s: &str| {
        s.rsplit_once('.')
            .map_or(s.to_owned(), |(d, _)| d.to_owned())
    };
    stem(a) == stem(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_id_to_slot() {
        assert_eq!(slot_from_location(0, 768), "0000:03:00.0");
        assert_eq!(slot_from_location(0, 49408), "0000:c1:00.0");
        assert_eq!(slot_from_location(1, 0x0912), "0001:09:02.2");
        assert!(looks_like_slot("0000:03:00.0"));
        assert!(!looks_like_slot("card0"));
        assert!(same_device("0000:03:00.0", "0000:03:00.3"));
        assert!(!same_device("0000:03:00.0", "0000:04:00.0"));
    }
}
