//! The AMDGPU code object's own ELF header: processor, features, code object version.

use object::elf::{FileHeader32, FileHeader64};
use object::read::elf::FileHeader;
use object::{LittleEndian as LE, pod};
use rocpack_bytes::Bytes;

/// How the processor of a code object whose `e_flags` name no known machine is spelled:
/// `unknown-mach-0xNN`.
pub const UNKNOWN_MACH_PREFIX: &str = "unknown-mach-";

use crate::mach;
use crate::target::{Feature, TargetId};

/// `e_machine` of AMDGPU code objects.
pub const EM_AMDGPU: u16 = 224;
/// `EI_OSABI` of HSA code objects (the ones ROCm loads).
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `EI_OSABI` of PAL code objects.
pub const ELFOSABI_AMDGPU_PAL: u8 = 65;
/// `EI_OSABI` of Mesa code objects.
pub const ELFOSABI_AMDGPU_MESA3D: u8 = 66;

const EF_AMDGPU_MACH: u32 = 0x0ff;
const EF_AMDGPU_FEATURE_XNACK_V3: u32 = 0x100;
const EF_AMDGPU_FEATURE_SRAMECC_V3: u32 = 0x200;
const EF_AMDGPU_FEATURE_XNACK_V4: u32 = 0x300;
const EF_AMDGPU_FEATURE_SRAMECC_V4: u32 = 0xc00;
const EF_AMDGPU_GENERIC_VERSION_OFFSET: u32 = 24;

/// Why bytes are not an AMDGPU code object header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// Fewer bytes than an ELF header.
    #[error("code object is {0} bytes, shorter than an ELF header")]
    Truncated(u64),
    /// No `\x7fELF` magic.
    #[error("not an ELF file (no \\x7fELF magic)")]
    NotElf,
    /// `EI_CLASS` is neither 1 nor 2, or `EI_DATA` is not little-endian.
    #[error("unsupported ELF class {class} / data encoding {data}")]
    Unsupported { class: u8, data: u8 },
    /// An ELF file for another machine.
    #[error("ELF e_machine is {0}, not AMDGPU ({EM_AMDGPU})")]
    NotAmdgpu(u16),
}

/// Everything the 64-byte ELF header says about an AMDGPU code object.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CodeObjectHeader {
    /// 32 or 64.
    pub elf_class: u8,
    /// `EI_OSABI`: 64 HSA, 65 PAL, 66 Mesa.
    pub os_abi: u8,
    /// `EI_ABIVERSION`.
    pub abi_version: u8,
    /// Code object version (2–6 for HSA; `None` for other OS ABIs).
    pub cov: Option<u8>,
    /// `e_type` (2 executable, 3 shared object = loadable, 1 relocatable).
    pub e_type: u16,
    /// Raw `e_flags`.
    pub e_flags: u32,
    /// `e_flags & EF_AMDGPU_MACH`.
    pub mach: u8,
    /// Processor name, `None` when the MACH value is unknown or 0.
    pub processor: Option<&'static str>,
    /// xnack setting the code object was compiled for.
    pub xnack: Feature,
    /// sramecc setting the code object was compiled for.
    pub sramecc: Feature,
    /// Generic version (V6 and later; 0 for non-generic code objects).
    pub generic_version: Option<u8>,
}

impl CodeObjectHeader {
    /// Decodes the ELF header at the start of `data` (at least 52 or 64 bytes).
    ///
    /// An unknown MACH value is not an error: [`CodeObjectHeader::processor`] is `None` and
    /// [`CodeObjectHeader::target`] names the raw value.
    ///
    /// # Errors
    /// [`HeaderError`] when `data` is not a little-endian AMDGPU ELF header.
    pub fn parse(data: &[u8]) -> Result<Self, HeaderError> {
        let b = Bytes::new(data);
        if b.len() < 16 {
            return Err(HeaderError::Truncated(b.len()));
        }
        if !b.has_at(0, b"\x7fELF") {
            return Err(HeaderError::NotElf);
        }
        let class = b.u8(4).map_err(|_| HeaderError::Truncated(b.len()))?;
        let encoding = b.u8(5).map_err(|_| HeaderError::Truncated(b.len()))?;
        // The header through `object`'s layouts, once the file is known to hold one.
        let (elf_class, ident, e_type, e_machine, e_flags) = match (class, encoding) {
            (2, 1) => header_fields::<FileHeader64<LE>>(data, 64, b.len())?,
            (1, 1) => header_fields::<FileHeader32<LE>>(data, 32, b.len())?,
            _ => {
                return Err(HeaderError::Unsupported {
                    class,
                    data: encoding,
                });
            }
        };
        let (os_abi, abi_version) = (ident.os_abi, ident.abi_version);
        if e_machine != EM_AMDGPU {
            return Err(HeaderError::NotAmdgpu(e_machine));
        }
        let mach = (e_flags & EF_AMDGPU_MACH) as u8;
        let info = mach::by_value(mach);
        // LLVM's AMDGPUTargetELFStreamer: HSA V2/V3 and every PAL/Mesa object use the V3
        // layout; HSA V4 and later use two-bit feature fields, V6 adds the generic version.
        let cov = (os_abi == ELFOSABI_AMDGPU_HSA).then(|| abi_version.saturating_add(2));
        let (xnack, sramecc, generic_version) = match cov {
            Some(v) if v >= 4 => {
                let generic =
                    (v >= 6).then_some((e_flags >> EF_AMDGPU_GENERIC_VERSION_OFFSET) as u8);
                (
                    v4_feature(e_flags & EF_AMDGPU_FEATURE_XNACK_V4, 8),
                    v4_feature(e_flags & EF_AMDGPU_FEATURE_SRAMECC_V4, 10),
                    generic,
                )
            }
            _ => {
                let (sup_x, sup_s) = info.map_or((false, false), |i| (i.xnack, i.sramecc));
                (
                    v3_feature(e_flags & EF_AMDGPU_FEATURE_XNACK_V3 != 0, sup_x),
                    v3_feature(e_flags & EF_AMDGPU_FEATURE_SRAMECC_V3 != 0, sup_s),
                    None,
                )
            }
        };
        Ok(CodeObjectHeader {
            elf_class,
            os_abi,
            abi_version,
            cov,
            e_type,
            e_flags,
            mach,
            processor: info.map(|i| i.name),
            xnack,
            sramecc,
            generic_version,
        })
    }

    /// The target ID the code object was compiled for, in canonical form. An unknown MACH value
    /// appears as `unknown-mach-0xNN`.
    pub fn target(&self) -> TargetId {
        let processor = match self.processor {
            Some(p) => p.to_owned(),
            None => format!("{UNKNOWN_MACH_PREFIX}{:#04x}", self.mach),
        };
        TargetId {
            processor,
            sramecc: self.sramecc,
            xnack: self.xnack,
        }
    }

    /// Whether this is a generic code object (gfx9-generic, ...).
    pub fn is_generic(&self) -> bool {
        mach::by_value(self.mach).is_some_and(|m| m.generic)
    }
}

/// ELF class, `e_ident`, `e_type`, `e_machine` and `e_flags` of a header of layout `H` (64- or
/// 32-bit, little-endian) at the start of `data`.
fn header_fields<H: FileHeader<Endian = LE>>(
    data: &[u8],
    class: u8,
    len: u64,
) -> Result<(u8, object::elf::Ident, u16, u16, u32), HeaderError> {
    let (h, _) = pod::from_bytes::<H>(data).map_err(|_| HeaderError::Truncated(len))?;
    Ok((
        class,
        *h.e_ident(),
        h.e_type(LE),
        h.e_machine(LE),
        h.e_flags(LE),
    ))
}

fn v4_feature(bits: u32, shift: u32) -> Feature {
    match bits >> shift {
        0b11 => Feature::On,
        0b10 => Feature::Off,
        // 0b01 = any, 0b00 = unsupported: both are omitted from the canonical target ID.
        _ => Feature::Any,
    }
}

/// V2/V3 have one bit per feature: set means on; clear means off on processors that support
/// the feature (the runtime's legacy loader reads it that way) and nothing otherwise.
fn v3_feature(set: bool, supported: bool) -> Feature {
    match (set, supported) {
        (true, _) => Feature::On,
        (false, true) => Feature::Off,
        (false, false) => Feature::Any,
    }
}

/// Whether `data` starts like an AMDGPU ELF file (magic and `e_machine`), without decoding more.
pub fn looks_like_code_object(data: &[u8]) -> bool {
    let b = Bytes::new(data);
    b.has_at(0, b"\x7fELF") && b.u16(18).is_ok_and(|m| m == EM_AMDGPU)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(abi_version: u8, e_flags: u32) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 2;
        h[5] = 1;
        h[7] = ELFOSABI_AMDGPU_HSA;
        h[8] = abi_version;
        h[16] = 3;
        h[18..20].copy_from_slice(&EM_AMDGPU.to_le_bytes());
        h[48..52].copy_from_slice(&e_flags.to_le_bytes());
        h
    }

    #[test]
    fn decodes_values_seen_on_clang_19_output() {
        // formats.md §5.2: values read off clang-19 objects.
        let h = CodeObjectHeader::parse(&header(4, 0xb3f)).unwrap();
        assert_eq!(h.cov, Some(6));
        assert_eq!(h.target().to_string(), "gfx90a:sramecc-:xnack+");
        assert_eq!(h.generic_version, Some(0));
        let h = CodeObjectHeader::parse(&header(3, 0x53f)).unwrap();
        assert_eq!(
            (h.cov, h.target().to_string()),
            (Some(5), "gfx90a".to_owned())
        );
        let h = CodeObjectHeader::parse(&header(4, 0x100_0053)).unwrap();
        assert_eq!(h.target().to_string(), "gfx10-3-generic");
        assert_eq!(h.generic_version, Some(1));
        assert!(h.is_generic());
        let h = CodeObjectHeader::parse(&header(4, 0x100_0251)).unwrap();
        assert_eq!(h.target().to_string(), "gfx9-generic:xnack-");
    }

    #[test]
    fn v3_bits_mean_off_only_where_supported() {
        let h = CodeObjectHeader::parse(&header(1, 0x3f | 0x100)).unwrap();
        assert_eq!(h.target().to_string(), "gfx90a:sramecc-:xnack+");
        let h = CodeObjectHeader::parse(&header(1, 0x36)).unwrap();
        assert_eq!(h.target().to_string(), "gfx1030");
    }

    #[test]
    fn unknown_mach_is_reported_not_rejected() {
        let h = CodeObjectHeader::parse(&header(4, 0xfe)).unwrap();
        assert_eq!(h.processor, None);
        assert_eq!(h.target().to_string(), "unknown-mach-0xfe");
    }

    #[test]
    fn rejects_non_amdgpu_input() {
        assert_eq!(
            CodeObjectHeader::parse(b"\x7fELF"),
            Err(HeaderError::Truncated(4))
        );
        assert_eq!(
            CodeObjectHeader::parse(&[0u8; 64]),
            Err(HeaderError::NotElf)
        );
        let mut h = header(4, 0);
        h[18] = 62;
        h[19] = 0;
        assert_eq!(CodeObjectHeader::parse(&h), Err(HeaderError::NotAmdgpu(62)));
        h[5] = 2;
        assert!(matches!(
            CodeObjectHeader::parse(&h),
            Err(HeaderError::Unsupported { .. })
        ));
    }
}
