//! LLVM OffloadBinary (`.llvm.offloading`), versions 1–3.
//!
//! Layout (llvm/Object/OffloadBinary.h): magic 10 FF 10 AD, u32 version, u64 size,
//! u64 entries offset, u64 entry size (v1) or entry count (v2+), and in v3 a u64 inflated size.
//! Entries are 40 bytes: u16 image kind, u16 offload kind, u32 flags, u64 string offset,
//! u64 string count, u64 image offset, u64 image size. Offsets are relative to the binary.

use rocpack_bytes::{Bytes, align_up, lossless_string};

use crate::error::{FormatError, Kind};

/// Most bytes of string-map keys and values kept for one binary (LLVM writes a few dozen).
const MAX_STRING_BYTES: usize = 1 << 20;

/// The OffloadBinary magic.
pub const MAGIC: &[u8; 4] = b"\x10\xff\x10\xad";

/// One image of an OffloadBinary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadImage {
    /// 0 none, 1 object, 2 bitcode, 3 cubin, 4 fatbinary, 5 PTX, 6 SPIR-V.
    pub image_kind: u16,
    /// Offload kind; HIP is 3 in binaries of LLVM ≤ 20 and 4 (a bit mask) in newer ones.
    pub offload_kind: u16,
    /// Entry flags.
    pub flags: u32,
    /// String map (`triple`, `arch`, ...).
    pub strings: Vec<(String, String)>,
    /// Image offset relative to the binary (or to the inflated data for compressed v3).
    pub image_offset: u64,
    /// Image size.
    pub image_size: u64,
}

impl OffloadImage {
    /// A value of the string map.
    pub fn string(&self, key: &str) -> Option<&str> {
        self.strings
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Name of the image kind.
    pub fn image_kind_name(&self) -> &'static str {
        match self.image_kind {
            0 => "none",
            1 => "object",
            2 => "bitcode",
            3 => "cubin",
            4 => "fatbinary",
            5 => "ptx",
            6 => "spirv",
            _ => "unknown",
        }
    }

    /// Whether the offload kind is HIP (3 before LLVM 21's bit mask, 4 after).
    pub fn is_hip(&self, version: u32) -> bool {
        let triple = self.string("triple").unwrap_or_default();
        match self.offload_kind {
            4 => true,
            // 3 meant HIP in the enum of version-1 binaries; in the bit mask it is OpenMP|CUDA,
            // which no HIP writer produces, so read it as HIP for AMD triples.
            3 => version == 1 || triple.starts_with("amdgcn") || triple.starts_with("spirv64-amd"),
            _ => false,
        }
    }
}

/// One OffloadBinary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadBinary {
    /// 1, 2 or 3.
    pub version: u32,
    /// Total size of this binary in bytes.
    pub size: u64,
    /// Whether the entries are compressed (v3 with a non-zero inflated size).
    pub compressed: bool,
    /// The images.
    pub images: Vec<OffloadImage>,
}

/// Parses the OffloadBinary at the start of `data`.
///
/// # Errors
/// [`FormatError`] for a bad magic or version, or fields that point outside the binary.
/// Compressed v3 binaries are reported with `compressed = true` and no images.
pub fn parse(data: &[u8]) -> Result<OffloadBinary, FormatError> {
    parse_impl(data, false)
}

fn parse_impl(data: &[u8], inflated: bool) -> Result<OffloadBinary, FormatError> {
    let b = Bytes::new(data);
    let err = |off, msg: String| FormatError::new(Kind::OffloadBinary, off, msg);
    if !b.has_at(0, MAGIC) {
        return Err(err(0, "no OffloadBinary magic".into()));
    }
    let field = |off: u64, what: &str| {
        b.u64(off)
            .map_err(|_| err(off, format!("truncated {what}")))
    };
    let version = b.u32(4).map_err(|_| err(4, "truncated version".into()))?;
    if version == 0 || version > 3 {
        return Err(err(4, format!("unknown OffloadBinary version {version}")));
    }
    let size = if inflated { b.len() } else { field(8, "size")? };
    if size > b.len() {
        return Err(err(
            8,
            format!("size {size} runs past the {} bytes available", b.len()),
        ));
    }
    let bin = b.sub(0, size).map_err(|_| err(8, "bad size".into()))?;
    let entries_offset = field(16, "entries offset")?;
    let (count, entry_size) = if version == 1 {
        (1, field(24, "entry size")?)
    } else {
        (field(24, "entry count")?, 40)
    };
    if entry_size < 40 {
        return Err(err(
            24,
            format!("entry size {entry_size} is smaller than 40"),
        ));
    }
    if version >= 3 && field(32, "inflated size")? != 0 && !inflated {
        return Ok(OffloadBinary {
            version,
            size,
            compressed: true,
            images: Vec::new(),
        });
    }
    let max = bin.len().saturating_sub(entries_offset) / entry_size;
    if count > max {
        return Err(err(
            24,
            format!("{count} entries cannot fit in {size} bytes"),
        ));
    }
    let string_entry = if version == 1 { 16 } else { 24 };
    let mut string_bytes = 0usize;
    let mut images = Vec::new();
    for i in 0..count {
        let at = entries_offset.saturating_add(i * entry_size);
        let e = bin
            .sub(at, 40)
            .map_err(|_| err(at, format!("entry #{i} runs past the binary")))?;
        let r = |off| e.u64(off).unwrap_or(0);
        let (string_offset, num_strings, image_offset, image_size) = (r(8), r(16), r(24), r(32));
        if bin.read_at(image_offset, image_size).is_err() {
            return Err(err(
                at + 24,
                format!(
                    "entry #{i}: image offset {image_offset} + size {image_size} runs past the binary"
                ),
            ));
        }
        if num_strings > bin.len().saturating_sub(string_offset) / string_entry {
            return Err(err(
                at + 16,
                format!("entry #{i}: {num_strings} strings cannot fit in the binary"),
            ));
        }
        let mut strings = Vec::new();
        for s in 0..num_strings {
            let sat = string_offset + s * string_entry;
            let key = cstr(bin, bin.u64(sat).unwrap_or(u64::MAX), None)
                .ok_or_else(|| err(sat, format!("entry #{i}: string #{s} key is out of bounds")))?;
            let value_size = (version >= 2).then(|| bin.u64(sat + 16).unwrap_or(u64::MAX));
            let value =
                cstr(bin, bin.u64(sat + 8).unwrap_or(u64::MAX), value_size).ok_or_else(|| {
                    err(
                        sat + 8,
                        format!("entry #{i}: string #{s} value is out of bounds"),
                    )
                })?;
            // Values are copied, and each may name the whole binary: keep them short so that
            // memory stays linear in the input.
            string_bytes = string_bytes.saturating_add(key.len() + value.len());
            if string_bytes > MAX_STRING_BYTES {
                return Err(err(
                    sat,
                    format!("string map holds more than {MAX_STRING_BYTES} bytes"),
                ));
            }
            strings.push((key, value));
        }
        images.push(OffloadImage {
            image_kind: e.u16(0).unwrap_or(0),
            offload_kind: e.u16(2).unwrap_or(0),
            flags: e.u32(4).unwrap_or(0),
            strings,
            image_offset,
            image_size,
        });
    }
    Ok(OffloadBinary {
        version,
        size,
        compressed: false,
        images,
    })
}

/// Decompresses a compressed version-3 binary (everything after the entries offset is one zstd
/// frame or zlib stream) and parses the result; `ceiling` bounds the inflated size.
///
/// # Errors
/// [`FormatError`] for a bad header, an inflated size over `ceiling`, corrupt data or a size
/// other than declared.
pub fn parse_compressed(
    data: &[u8],
    ceiling: u64,
) -> Result<(OffloadBinary, Vec<u8>), FormatError> {
    use std::io::Read;
    let b = Bytes::new(data);
    let err = |off, msg: String| FormatError::new(Kind::OffloadBinary, off, msg);
    let size = b.u64(8).map_err(|_| err(8, "truncated size".into()))?;
    let entries_offset = b
        .u64(16)
        .map_err(|_| err(16, "truncated entries offset".into()))?;
    let inflated = b
        .u64(32)
        .map_err(|_| err(32, "truncated inflated size".into()))?;
    if inflated > ceiling {
        return Err(err(
            32,
            format!("inflated size {inflated} is over the decompression limit of {ceiling}"),
        ));
    }
    let head = b.read_at(0, entries_offset).map_err(|_| {
        err(
            16,
            format!("entries offset {entries_offset} runs past the binary"),
        )
    })?;
    let payload = b
        .read_at(entries_offset, size.saturating_sub(entries_offset))
        .map_err(|_| err(8, format!("size {size} runs past the binary")))?;
    let want = inflated.checked_sub(entries_offset).ok_or_else(|| {
        err(
            32,
            format!("inflated size {inflated} is smaller than the entries offset {entries_offset}"),
        )
    })?;
    let mut out = head.to_vec();
    let reader: Box<dyn Read> = if payload.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Box::new(
            zstd::stream::read::Decoder::with_buffer(payload)
                .map_err(|e| err(entries_offset, format!("zstd: {e}")))?,
        )
    } else {
        Box::new(flate2::bufread::ZlibDecoder::new(payload))
    };
    reader
        .take(want.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| err(entries_offset, format!("corrupt compressed entries: {e}")))?;
    if out.len() as u64 != inflated {
        return Err(err(
            32,
            format!(
                "entries inflate to {} bytes, header declares {want}",
                (out.len() as u64).saturating_sub(entries_offset)
            ),
        ));
    }
    let mut bin = parse_impl(&out, true)?;
    bin.size = size;
    bin.compressed = true;
    Ok((bin, out))
}

fn cstr(b: Bytes<'_>, off: u64, len: Option<u64>) -> Option<String> {
    let bytes = match len {
        Some(len) => b.read_at(off, len).ok()?,
        None => {
            let tail = b.tail(off).ok()?;
            tail.get(..tail.iter().position(|&c| c == 0)?)?
        }
    };
    Some(lossless_string(bytes))
}

/// Every OffloadBinary in a `.llvm.offloading` section with its offset; the next binary starts
/// at the previous one's size rounded up to 8. Stops at the first error, which is returned
/// with the binaries read before it.
pub fn parse_all(data: &[u8]) -> (Vec<(u64, OffloadBinary)>, Option<FormatError>) {
    let b = Bytes::new(data);
    let mut out = Vec::new();
    let mut pos = 0u64;
    while pos < b.len() {
        let rest = b.tail(pos).unwrap_or_default();
        if rest.iter().all(|&c| c == 0) {
            break;
        }
        match parse(rest) {
            Ok(bin) => {
                let next = align_up(pos.saturating_add(bin.size.max(1)), 8).unwrap_or(u64::MAX);
                out.push((pos, bin));
                pos = next;
            }
            Err(mut e) => {
                e.offset = e.offset.saturating_add(pos);
                return (out, Some(e));
            }
        }
    }
    (out, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version-1 binary as clang 19 writes it (formats.md §3.2).
    pub(crate) fn build_v1(image: &[u8], arch: &str) -> Vec<u8> {
        let strtab = format!("triple\0amdgcn-amd-amdhsa\0arch\0{arch}\0");
        let str_off = 32 + 40;
        let table_off = str_off + 2 * 16;
        let image_off = (table_off + strtab.len() as u64).next_multiple_of(8);
        let size = (image_off + image.len() as u64).next_multiple_of(8);
        let mut d = MAGIC.to_vec();
        d.extend(1u32.to_le_bytes());
        d.extend(size.to_le_bytes());
        d.extend(32u64.to_le_bytes());
        d.extend(40u64.to_le_bytes());
        d.extend(2u16.to_le_bytes());
        d.extend(3u16.to_le_bytes());
        d.extend(0u32.to_le_bytes());
        d.extend(str_off.to_le_bytes());
        d.extend(2u64.to_le_bytes());
        d.extend(image_off.to_le_bytes());
        d.extend((image.len() as u64).to_le_bytes());
        let triple_val = table_off + 7;
        let arch_key = triple_val + "amdgcn-amd-amdhsa\0".len() as u64;
        for (k, v) in [(table_off, triple_val), (arch_key, arch_key + 5)] {
            d.extend(k.to_le_bytes());
            d.extend(v.to_le_bytes());
        }
        d.extend(strtab.as_bytes());
        d.resize(image_off as usize, 0);
        d.extend(image);
        d.resize(size as usize, 0);
        d
    }

    #[test]
    fn parses_concatenated_v1_binaries() {
        let mut section = build_v1(b"BC\xc0\xde1234", "gfx1030");
        section.extend(build_v1(b"BC\xc0\xde5678", "gfx90a:xnack+"));
        let (bins, err) = parse_all(&section);
        assert!(err.is_none());
        assert_eq!(bins.len(), 2);
        let img = &bins[1].1.images[0];
        assert_eq!(img.string("arch"), Some("gfx90a:xnack+"));
        assert_eq!(img.string("triple"), Some("amdgcn-amd-amdhsa"));
        assert!(img.is_hip(1));
        assert_eq!(img.image_kind_name(), "bitcode");
    }

    /// A version-3 binary with one image (24-byte string entries, 40-byte header).
    fn build_v3(image: &[u8], arch: &str) -> Vec<u8> {
        let strtab = format!("triple\0amdgcn-amd-amdhsa\0arch\0{arch}\0");
        let (entries_off, str_off) = (40u64, 80u64);
        let table_off = str_off + 2 * 24;
        let image_off = (table_off + strtab.len() as u64).next_multiple_of(8);
        let size = (image_off + image.len() as u64).next_multiple_of(8);
        let mut d = MAGIC.to_vec();
        d.extend(3u32.to_le_bytes());
        d.extend(size.to_le_bytes());
        d.extend(entries_off.to_le_bytes());
        d.extend(1u64.to_le_bytes());
        d.extend(0u64.to_le_bytes());
        d.extend(1u16.to_le_bytes());
        d.extend(4u16.to_le_bytes());
        d.extend(0u32.to_le_bytes());
        d.extend(str_off.to_le_bytes());
        d.extend(2u64.to_le_bytes());
        d.extend(image_off.to_le_bytes());
        d.extend((image.len() as u64).to_le_bytes());
        let triple_val = table_off + 7;
        let arch_key = triple_val + 18;
        for (k, v, n) in [
            (table_off, triple_val, 17u64),
            (arch_key, arch_key + 5, arch.len() as u64),
        ] {
            d.extend(k.to_le_bytes());
            d.extend(v.to_le_bytes());
            d.extend(n.to_le_bytes());
        }
        d.extend(strtab.as_bytes());
        d.resize(image_off as usize, 0);
        d.extend(image);
        d.resize(size as usize, 0);
        d
    }

    #[test]
    fn parses_v3_plain_and_compressed() {
        let plain = build_v3(b"\x7fELFimage", "gfx942");
        let bin = parse(&plain).unwrap();
        assert_eq!(bin.images[0].string("arch"), Some("gfx942"));
        assert!(bin.images[0].is_hip(3));
        // Compress everything after the entries offset, as LLVM's writer does.
        let payload = zstd::encode_all(&plain[40..], 3).unwrap();
        let mut c = plain[..40].to_vec();
        c[8..16].copy_from_slice(&(40 + payload.len() as u64).to_le_bytes());
        c[32..40].copy_from_slice(&(plain.len() as u64).to_le_bytes());
        c.extend(&payload);
        assert!(parse(&c).unwrap().compressed);
        let (bin, inflated) = parse_compressed(&c, 1 << 20).unwrap();
        assert_eq!(bin.images[0].string("arch"), Some("gfx942"));
        let img = &bin.images[0];
        assert_eq!(
            &inflated[img.image_offset as usize..][..img.image_size as usize],
            b"\x7fELFimage"
        );
        assert!(parse_compressed(&c, 10).is_err());
    }

    #[test]
    fn hostile_counts_are_errors() {
        let mut d = build_v1(b"x", "gfx1030");
        d[48..56].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse(&d).is_err());
        let mut d = build_v1(b"x", "gfx1030");
        d[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse(&d).is_err());
    }
}
