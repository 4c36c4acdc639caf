//! libdrm's `amdgpu.ids`: PCI device and revision to marketing name.
//!
//! The format (libdrm `data/amdgpu.ids`): `#` comment lines, then a version line such as
//! `1.0.0`, then one `device_id,<TAB>revision_id,<TAB>product_name` line per product, both IDs
//! in hex. libdrm's own reader (`amdgpu_asic_id.c`) splits on commas and skips whitespace, and the
//! real file has at least one line separated by spaces instead of tabs (`7481,   C7, ...`), so this
//! reader does the same. libdrm answers only an exact device+revision match; see
//! [`AmdgpuIds::lookup`] for the fallback rocpack adds.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::{DeviceCode, Diagnostic, Error, sysfs};

/// Where libdrm and the ROCm packages install `amdgpu.ids`, searched in this order by
/// [`crate::Roots::system`].
pub const AMDGPU_IDS_PATHS: &[&str] = &[
    "/usr/share/libdrm/amdgpu.ids",
    "/opt/amdgpu/share/libdrm/amdgpu.ids",
    "/opt/rocm/share/libdrm/amdgpu.ids",
];

/// The first of `candidates` that exists.
pub fn find_amdgpu_ids<P: AsRef<Path>>(candidates: &[P]) -> Option<PathBuf> {
    candidates
        .iter()
        .map(|p| p.as_ref())
        .find(|p| p.is_file())
        .map(Path::to_path_buf)
}

/// One parsed `amdgpu.ids` file.
#[derive(Debug, Clone, Default)]
pub struct AmdgpuIds {
    /// The version line (`1.0.0`), when present.
    pub version: Option<String>,
    entries: Vec<(u16, u8, String)>,
}

/// How a marketing name was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NameMatch {
    /// The device and revision both match a line, as libdrm requires.
    Exact,
    /// No line has this revision; the name is the one every line of this device agrees on.
    /// libdrm itself would give no name here, and the guess can be wrong: a desktop Raphael
    /// (164E rev CB) would be named after the laptop 610M lines.
    DeviceOnly,
}

/// A marketing name and how it matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MarketingName {
    pub name: String,
    #[serde(rename = "match")]
    pub matched: NameMatch,
}

impl AmdgpuIds {
    /// Parses the file's text. Lines that do not fit the format become warnings (with their line
    /// number) and are skipped; the rest of the file is still used.
    pub fn parse(path: &Path, text: &str, warnings: &mut Vec<Diagnostic>) -> AmdgpuIds {
        let mut ids = AmdgpuIds::default();
        let mut seen_version = false;
        for (index, raw) in text.lines().enumerate() {
            let line = index + 1;
            let trimmed = raw.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            if !seen_version {
                seen_version = true;
                if !trimmed.contains(',') {
                    ids.version = Some(trimmed.to_owned());
                    continue;
                }
                warnings.push(Diagnostic::at(
                    DeviceCode::AmdgpuIdsNoVersion,
                    path,
                    line,
                    "the first line after the comments should be a version such as 1.0.0",
                ));
            }
            match parse_entry(trimmed) {
                Some(entry) => ids.entries.push(entry),
                None => warnings.push(Diagnostic::at(
                    DeviceCode::AmdgpuIdsBadLine,
                    path,
                    line,
                    format!("expected `device_id, revision_id, product_name`, found {trimmed:?}"),
                )),
            }
        }
        ids
    }

    /// Reads and parses a file.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read, [`Error::TooLarge`] past 4 MiB (the real file
    /// is about 25 KB), [`Error::Malformed`] when it is not UTF-8.
    pub fn read(path: &Path, warnings: &mut Vec<Diagnostic>) -> Result<AmdgpuIds, Error> {
        let text = sysfs::read_capped(path, 4 * 1024 * 1024)?.ok_or_else(|| Error::Io {
            path: path.to_owned(),
            source: std::io::ErrorKind::NotFound.into(),
        })?;
        Ok(Self::parse(path, &text, warnings))
    }

    /// Number of product lines.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The name for `device` and `revision`: an exact line if there is one (as libdrm's
    /// `amdgpu_get_marketing_name`), else the device's name when all its lines agree on one
    /// ([`NameMatch::DeviceOnly`]), else `None`.
    pub fn lookup(&self, device: u16, revision: Option<u8>) -> Option<MarketingName> {
        if let Some(revision) = revision
            && let Some((_, _, name)) = self
                .entries
                .iter()
                .find(|(d, r, _)| *d == device && *r == revision)
        {
            return Some(MarketingName {
                name: name.clone(),
                matched: NameMatch::Exact,
            });
        }
        let mut names = self
            .entries
            .iter()
            .filter(|(d, _, _)| *d == device)
            .map(|(_, _, n)| n);
        let first = names.next()?;
        names.all(|n| n == first).then(|| MarketingName {
            name: first.clone(),
            matched: NameMatch::DeviceOnly,
        })
    }
}

fn parse_entry(line: &str) -> Option<(u16, u8, String)> {
    let mut parts = line.splitn(3, ',');
    let device = u16::from_str_radix(parts.next()?.trim(), 16).ok()?;
    let revision = u8::from_str_radix(parts.next()?.trim(), 16).ok()?;
    let name = parts.next()?.trim();
    (!name.is_empty()).then(|| (device, revision, name.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# List of AMDGPU IDs\n#\n# Syntax:\n# device_id,\trevision_id,\tproduct_name\n\n1.0.0\n164E,\tD8,\tAMD Radeon 610M\n164E,\tD9,\tAMD Radeon 610M\n73BF,\tC0,\tAMD Radeon RX 6900 XT\n73BF,\tC3,\tAMD Radeon RX 6800\n7481,   C7,     AMD Steam Machine\n";

    #[test]
    fn exact_then_device_only() {
        let mut w = Vec::new();
        let ids = AmdgpuIds::parse(Path::new("ids"), SAMPLE, &mut w);
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(ids.version.as_deref(), Some("1.0.0"));
        assert_eq!(ids.len(), 5);
        let n = ids.lookup(0x73bf, Some(0xc3)).unwrap();
        assert_eq!(
            (n.name.as_str(), n.matched),
            ("AMD Radeon RX 6800", NameMatch::Exact)
        );
        // Two names for 73BF: no guess.
        assert_eq!(ids.lookup(0x73bf, Some(0xc1)), None);
        let n = ids.lookup(0x164e, Some(0xcb)).unwrap();
        assert_eq!(n.matched, NameMatch::DeviceOnly);
        assert_eq!(
            ids.lookup(0x7481, Some(0xc7)).map(|n| n.name),
            Some("AMD Steam Machine".into())
        );
        assert_eq!(ids.lookup(0x1234, Some(0)), None);
    }

    #[test]
    fn bad_lines_are_warnings_with_line_numbers() {
        let mut w = Vec::new();
        let ids = AmdgpuIds::parse(
            Path::new("ids"),
            "1.0.0\n73BF,\tC3,\tAMD Radeon RX 6800\nZZZZ,\tC3,\tBad\n73BF C3\n",
            &mut w,
        );
        assert_eq!(ids.len(), 1);
        let lines: Vec<_> = w.iter().map(|d| d.line).collect();
        assert_eq!(lines, vec![Some(3), Some(4)]);
        let mut w = Vec::new();
        let ids = AmdgpuIds::parse(Path::new("ids"), "73BF,\tC3,\tAMD Radeon RX 6800\n", &mut w);
        assert_eq!(ids.len(), 1);
        assert_eq!(w[0].code, DeviceCode::AmdgpuIdsNoVersion);
    }
}
