//! Uncompressed clang offload bundles (`__CLANG_OFFLOAD_BUNDLE__`).
//!
//! No crate reads them, so this reader is ours. Layout (clang's OffloadBundler.cpp,
//! `BinaryFileHandler::ReadHeader`): 24-byte magic, u64 entry count, then per entry u64 offset,
//! u64 size, u64 ID length and the ID; all offsets are relative to the bundle start.

use rocpack_bytes::{Bytes, lossless_string};

use crate::entry_id::EntryId;
use crate::error::{FormatError, Kind};

/// The bundle magic.
pub const MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";

/// One entry of a bundle's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleEntry {
    /// Position in the table (file order).
    pub index: usize,
    /// Offset of the entry's bytes from the bundle start.
    pub offset: u64,
    /// Size of the entry's bytes.
    pub size: u64,
    /// The parsed ID.
    pub id: EntryId,
    /// Where the stored ID bytes are, from the bundle start (a rewrite copies them exactly).
    pub id_offset: u64,
    /// Length of the stored ID bytes.
    pub id_len: u64,
}

/// A bundle's header: its entries in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleHeader {
    /// Entries in file order.
    pub entries: Vec<BundleEntry>,
    /// Bytes taken by the magic, count and entry table.
    pub header_size: u64,
}

impl BundleHeader {
    /// End of the bundle relative to its start: the largest `offset + size` (the header end
    /// for a bundle without entries). There is no size field; the HIP runtime computes it
    /// the same way.
    pub fn end(&self) -> u64 {
        self.entries
            .iter()
            .map(|e| e.offset.saturating_add(e.size))
            .max()
            .unwrap_or(0)
            .max(self.header_size)
    }
}

/// Reads the header of the bundle at the start of `data`.
///
/// Entries whose bytes fall outside `data` are errors only when `data` is known to hold the
/// whole bundle (`complete`); a prefix (as decoded from a compressed bundle) is checked for
/// the table only.
///
/// # Errors
/// [`FormatError`] with the offset (relative to `data`) of the field that is wrong.
pub fn parse(data: &[u8], complete: bool) -> Result<BundleHeader, FormatError> {
    parse_impl(data, complete.then_some(data.len() as u64))
}

/// Parses a bundle header held in `header` (exactly the header, or more) for a bundle of
/// `total` bytes: entries must lie within `total`. Lets a caller read only the header of a
/// large bundle.
///
/// # Errors
/// As [`parse`].
pub fn parse_header(header: &[u8], total: u64) -> Result<BundleHeader, FormatError> {
    parse_impl(header, Some(total))
}

fn parse_impl(data: &[u8], total: Option<u64>) -> Result<BundleHeader, FormatError> {
    let b = Bytes::new(data);
    if !b.has_at(0, MAGIC) {
        return Err(FormatError::new(
            Kind::Bundle,
            0,
            "no __CLANG_OFFLOAD_BUNDLE__ magic",
        ));
    }
    let count = b
        .u64(24)
        .map_err(|_| FormatError::new(Kind::Bundle, 24, "truncated entry count"))?;
    // Each entry takes at least 24 bytes, so the buffer bounds the count before anything is
    // allocated for it.
    let max_entries = b.len().saturating_sub(32) / 24;
    if count > max_entries {
        return Err(FormatError::new(
            Kind::Bundle,
            24,
            format!(
                "entry count {count} cannot fit in the {} bytes available",
                b.len()
            ),
        ));
    }
    let mut entries = Vec::new();
    let mut pos = 32u64;
    for index in 0..count as usize {
        let field = |what: &'static str, at: u64| {
            b.u64(at).map_err(|_| {
                FormatError::new(
                    Kind::Bundle,
                    at,
                    format!("entry #{index}: truncated {what}"),
                )
            })
        };
        let offset = field("offset", pos)?;
        let size = field("size", pos + 8)?;
        let id_len = field("ID length", pos + 16)?;
        let id = b.read_at(pos + 24, id_len).map_err(|_| {
            FormatError::new(
                Kind::Bundle,
                pos + 16,
                format!("entry #{index}: ID length {id_len} runs past the data"),
            )
        })?;
        if let Some(total) = total {
            let end = offset.checked_add(size);
            if end.is_none_or(|end| end > total) {
                return Err(FormatError::new(
                    Kind::Bundle,
                    pos,
                    format!(
                        "entry #{index} ({}): offset {offset} + size {size} runs past the bundle's {} bytes",
                        lossless_string(id),
                        total
                    ),
                ));
            }
        }
        entries.push(BundleEntry {
            index,
            offset,
            size,
            id: EntryId::from_string(lossless_string(id)),
            id_offset: pos + 24,
            id_len,
        });
        pos += 24 + id_len;
    }
    Ok(BundleHeader {
        entries,
        header_size: pos,
    })
}

/// Finds the length of a bundle header in a growing prefix (as decoded from a compressed
/// bundle), resuming where the previous call stopped so that the total work is linear in the
/// header size however small the steps.
#[derive(Debug, Default)]
pub(crate) struct HeaderScan {
    /// Position of the next entry descriptor (0 before the magic was checked).
    pos: u64,
    /// Entries still to be walked.
    left: u64,
}

impl HeaderScan {
    /// `Ok(Some(len))` once the whole header is in `data`, `Ok(None)` while more is needed.
    pub(crate) fn advance(&mut self, data: &[u8]) -> Result<Option<u64>, FormatError> {
        let b = Bytes::new(data);
        if self.pos == 0 {
            if b.len() < 32 {
                return Ok(None);
            }
            if !b.has_at(0, MAGIC) {
                return Err(FormatError::new(
                    Kind::Bundle,
                    0,
                    "no __CLANG_OFFLOAD_BUNDLE__ magic",
                ));
            }
            self.left = b.u64(24).unwrap_or(0);
            self.pos = 32;
        }
        while self.left > 0 {
            let Ok(id_len) = b.u64(self.pos + 16) else {
                return Ok(None);
            };
            let next = self
                .pos
                .checked_add(24)
                .and_then(|p| p.checked_add(id_len))
                .ok_or_else(|| {
                    FormatError::new(Kind::Bundle, self.pos + 16, "entry ID length overflows")
                })?;
            if next > b.len() {
                return Ok(None);
            }
            self.pos = next;
            self.left -= 1;
        }
        Ok(Some(self.pos))
    }
}

/// Finds overlapping entries (a hostile or corrupt table); returns pairs of entry indexes.
pub fn overlaps(header: &BundleHeader) -> Vec<(usize, usize)> {
    let mut spans: Vec<_> = header
        .entries
        .iter()
        .filter(|e| e.size > 0)
        .map(|e| (e.offset, e.offset.saturating_add(e.size), e.index))
        .collect();
    spans.sort_unstable();
    spans
        .windows(2)
        .filter_map(|w| match w {
            [a, b] if b.0 < a.1 => Some((a.2, b.2)),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn build(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut header = MAGIC.to_vec();
        header.extend((entries.len() as u64).to_le_bytes());
        let table: u64 = entries.iter().map(|(id, _)| 24 + id.len() as u64).sum();
        let mut at = (32 + table).next_multiple_of(16);
        let mut body = Vec::new();
        for (id, data) in entries {
            header.extend(at.to_le_bytes());
            header.extend((data.len() as u64).to_le_bytes());
            header.extend((id.len() as u64).to_le_bytes());
            header.extend(id.as_bytes());
            body.push((at, *data));
            at = (at + data.len() as u64).next_multiple_of(16);
        }
        for (off, data) in body {
            header.resize(off as usize, 0);
            header.extend(data);
        }
        header
    }

    #[test]
    fn parses_a_bundle_in_file_order() {
        let data = build(&[
            ("host-x86_64-unknown-linux-gnu-", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", b"abc"),
        ]);
        let h = parse(&data, true).unwrap();
        assert_eq!(h.entries.len(), 2);
        assert_eq!(h.entries[1].id.target(), "gfx1030");
        assert_eq!(h.end(), data.len() as u64);
        let mut scan = HeaderScan::default();
        assert_eq!(scan.advance(&data[..40]).unwrap(), None);
        assert_eq!(scan.advance(&data).unwrap(), Some(h.header_size));
    }

    #[test]
    fn huge_count_is_refused_before_allocation() {
        let mut data = build(&[("hip-amdgcn-amd-amdhsa--gfx1030", b"x")]);
        data[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(
            parse(&data, true)
                .unwrap_err()
                .to_string()
                .contains("cannot fit")
        );
    }

    #[test]
    fn entry_past_the_end_is_an_error_only_for_complete_data() {
        let mut data = build(&[("hip-amdgcn-amd-amdhsa--gfx1030", b"x")]);
        data[40..48].copy_from_slice(&(1u64 << 40).to_le_bytes());
        assert!(parse(&data, true).is_err());
        assert!(parse(&data, false).is_ok());
    }
}
