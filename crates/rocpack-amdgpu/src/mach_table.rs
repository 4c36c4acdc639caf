//! EF_AMDGPU_MACH values (`e_flags & 0x0ff`) of AMDGPU ELF code objects, with the
//! target features each processor supports and the generic-target membership.
//!
//! Every row was checked against at least one real source (stored copies of the
//! public repositories, read by path and commit). Trailing tags on each row:
//!
//! * `ELF`: llvm/llvm-project `llvm/include/llvm/BinaryFormat/ELF.h`
//!   @ 008d0233ac9b38e92ee81a9d09c815d61fda1240 (enum up to 0x05f; 0x040 and 0x04b
//!   appear there as RESERVED because gfx940/gfx941 were removed).
//! * `OLD`: llvm/llvm-project `llvm/test/CodeGen/AMDGPU/elf-header-flags-mach.ll`
//!   @ 00983f8b92d6f16e365fa77e6d4f5e205516f144 (GFX940 = 0x40, GFX941 = 0x4B), plus
//!   `llvm/lib/TargetParser/TargetParser.cpp` @ 007351198737075a2566bac5ac765597f09ae62b
//!   (gfx940/gfx941 have FEATURE_XNACK and FEATURE_SRAMECC).
//! * `RELF`: ROCm/llvm-project `llvm/include/llvm/BinaryFormat/ELF.h`
//!   @ 06c62775e4cd479fbfde1c5863016e2665110136 (`AMDGPU_MACH_LIST`: 0x49 gfx1250,
//!   0x50 gfx1310, 0x5a gfx1251, 0x5b gfx12-5-generic, 0x5d gfx1170).
//! * `RT`: ROCm/llvm-project `llvm/test/CodeGen/AMDGPU/elf-header-flags-mach.ll`
//!   @ f3a0bebab35f3603f56adc4eeda76e6fcff829a2 (newest; adds 0x57 gfx1154,
//!   0x5c gfx1172, 0x5e gfx1171, 0x62 gfx11-7-generic, 0x63 gfx13-generic).
//!
//! The `xnack` and `sramecc` columns come from the FEATURE_XNACK and FEATURE_SRAMECC
//! flags of the AMDGCN GPU table in `llvm/include/llvm/TargetParser/AMDGPUTargetParser.def`:
//! llvm/llvm-project @ 12414c8f33f120ad68fc2a36c5be25b4bd5eb65f and the upstream mirror
//! sailfishos-mirror/llvm-project @ 0049cc39b33090c5d1af4822f973fc3be0e9acc3 (newest; it has
//! gfx11-7-generic and gfx13-generic). gfx940/gfx941 come from the old TargetParser.cpp above.
//! ROCm/llvm-project's .def (@ 06c62775 and @ 97c2c3ea) instead gives gfx1250/gfx1251
//! `FEATURE_XNACK_ALWAYS` without SRAMECC and gfx12-5-generic no XNACK. This table follows
//! upstream: gfx1250/gfx1251 have xnack and sramecc, gfx12-5-generic has xnack.
//!
//! Left out on purpose:
//! * reserved values 0x011..=0x01f, 0x027, 0x04d and 0x056, and 0x060/0x061, which no
//!   source assigns;
//! * 0x0eb, which only the ROCm fork assigns and under two names (`gfx125f` @ 06c62775,
//!   `gfx1250-strict` @ f3a0beb); upstream LLVM does not have it.

/// One processor known by its EF_AMDGPU_MACH value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MachInfo {
    /// Value of `e_flags & EF_AMDGPU_MACH` (0x0ff).
    pub mach: u8,
    /// Canonical processor name as LLVM prints it, e.g. "gfx90a", "gfx10-3-generic".
    pub name: &'static str,
    /// The processor supports the xnack target feature (may appear as :xnack+/- in a target ID).
    pub xnack: bool,
    /// The processor supports the sramecc target feature.
    pub sramecc: bool,
    /// This is a generic target (gfx9-generic, ...).
    pub generic: bool,
    /// true for ELF32 r600-family values (0x001..=0x01f).
    pub r600: bool,
}

#[rustfmt::skip]
pub const MACH_TABLE: &[MachInfo] = &[
    MachInfo { mach: 0x001, name: "r600", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x002, name: "r630", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x003, name: "rs880", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x004, name: "rv670", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x005, name: "rv710", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x006, name: "rv730", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x007, name: "rv770", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x008, name: "cedar", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x009, name: "cypress", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x00a, name: "juniper", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x00b, name: "redwood", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x00c, name: "sumo", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x00d, name: "barts", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x00e, name: "caicos", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x00f, name: "cayman", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x010, name: "turks", xnack: false, sramecc: false, generic: false, r600: true }, // ELF
    MachInfo { mach: 0x020, name: "gfx600", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x021, name: "gfx601", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x022, name: "gfx700", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x023, name: "gfx701", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x024, name: "gfx702", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x025, name: "gfx703", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x026, name: "gfx704", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x028, name: "gfx801", xnack: true, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x029, name: "gfx802", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x02a, name: "gfx803", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x02b, name: "gfx810", xnack: true, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x02c, name: "gfx900", xnack: true, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x02d, name: "gfx902", xnack: true, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x02e, name: "gfx904", xnack: true, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x02f, name: "gfx906", xnack: true, sramecc: true, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x030, name: "gfx908", xnack: true, sramecc: true, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x031, name: "gfx909", xnack: true, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x032, name: "gfx90c", xnack: true, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x033, name: "gfx1010", xnack: true, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x034, name: "gfx1011", xnack: true, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x035, name: "gfx1012", xnack: true, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x036, name: "gfx1030", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x037, name: "gfx1031", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x038, name: "gfx1032", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x039, name: "gfx1033", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x03a, name: "gfx602", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x03b, name: "gfx705", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x03c, name: "gfx805", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x03d, name: "gfx1035", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x03e, name: "gfx1034", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x03f, name: "gfx90a", xnack: true, sramecc: true, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x040, name: "gfx940", xnack: true, sramecc: true, generic: false, r600: false }, // OLD (removed from LLVM; RESERVED_0X40 in ELF)
    MachInfo { mach: 0x041, name: "gfx1100", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x042, name: "gfx1013", xnack: true, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x043, name: "gfx1150", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x044, name: "gfx1103", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x045, name: "gfx1036", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x046, name: "gfx1101", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x047, name: "gfx1102", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x048, name: "gfx1200", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x049, name: "gfx1250", xnack: true, sramecc: true, generic: false, r600: false }, // RELF, RT
    MachInfo { mach: 0x04a, name: "gfx1151", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x04b, name: "gfx941", xnack: true, sramecc: true, generic: false, r600: false }, // OLD (removed from LLVM; RESERVED_0X4B in ELF)
    MachInfo { mach: 0x04c, name: "gfx942", xnack: true, sramecc: true, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x04e, name: "gfx1201", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x04f, name: "gfx950", xnack: true, sramecc: true, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x050, name: "gfx1310", xnack: false, sramecc: false, generic: false, r600: false }, // RELF, RT
    MachInfo { mach: 0x051, name: "gfx9-generic", xnack: true, sramecc: false, generic: true, r600: false }, // ELF
    MachInfo { mach: 0x052, name: "gfx10-1-generic", xnack: true, sramecc: false, generic: true, r600: false }, // ELF
    MachInfo { mach: 0x053, name: "gfx10-3-generic", xnack: false, sramecc: false, generic: true, r600: false }, // ELF
    MachInfo { mach: 0x054, name: "gfx11-generic", xnack: false, sramecc: false, generic: true, r600: false }, // ELF
    MachInfo { mach: 0x055, name: "gfx1152", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x057, name: "gfx1154", xnack: false, sramecc: false, generic: false, r600: false }, // RT
    MachInfo { mach: 0x058, name: "gfx1153", xnack: false, sramecc: false, generic: false, r600: false }, // ELF
    MachInfo { mach: 0x059, name: "gfx12-generic", xnack: false, sramecc: false, generic: true, r600: false }, // ELF
    MachInfo { mach: 0x05a, name: "gfx1251", xnack: true, sramecc: true, generic: false, r600: false }, // RELF, RT
    MachInfo { mach: 0x05b, name: "gfx12-5-generic", xnack: true, sramecc: false, generic: true, r600: false }, // RELF, RT
    MachInfo { mach: 0x05c, name: "gfx1172", xnack: false, sramecc: false, generic: false, r600: false }, // RT
    MachInfo { mach: 0x05d, name: "gfx1170", xnack: false, sramecc: false, generic: false, r600: false }, // RELF, RT
    MachInfo { mach: 0x05e, name: "gfx1171", xnack: false, sramecc: false, generic: false, r600: false }, // RT
    MachInfo { mach: 0x05f, name: "gfx9-4-generic", xnack: true, sramecc: true, generic: true, r600: false }, // ELF
    MachInfo { mach: 0x062, name: "gfx11-7-generic", xnack: false, sramecc: false, generic: true, r600: false }, // RT
    MachInfo { mach: 0x063, name: "gfx13-generic", xnack: false, sramecc: false, generic: true, r600: false }, // RT
];

/// Generic target -> processors it covers (per AMDGPUUsage generic processor table and ROCr isa.cpp).
///
/// Sources: the "AMDGPU Generic Processors" table in `llvm/docs/AMDGPUUsage.rst` from
/// ROCm/llvm-project @ dce84f8c7b92e5fb9352a26c1e87a29e8f33786f (gfx9-4-generic lists gfx940,
/// gfx941, gfx942 and gfx950), ROCm/llvm-project @ 056c6fbd9aa20cb553d2c2bf834bfd98e658bb62
/// (gfx12-5-generic: gfx1250, gfx1251) and sailfishos-mirror/llvm-project
/// @ 07379fed0f9af4aa2b5b8f656074c2f897ba1ae3 (gfx11-generic adds gfx1154). ROCr's
/// `projects/rocr-runtime/runtime/hsa-runtime/core/runtime/isa.cpp` in ROCm/rocm-systems
/// @ 4ae93caeefe7331bff56bad4098a6aadf096c769 agrees for gfx9 to gfx12. It maps only gfx942 and
/// gfx950 to gfx9-4-generic because it no longer registers gfx940/gfx941.
/// No AMDGPUUsage or ROCr copy that was read lists gfx11-7-generic or gfx13-generic. Their
/// members come from LLVM's TargetParser.cpp, which is weaker evidence: the `AMDGPUSubArchNames`
/// family table, and the `fillAMDGCNFeatureMap` case groups gfx1170/1171/1172 with
/// gfx11-7-generic and gfx1310 with gfx13-generic.
#[rustfmt::skip]
pub const GENERIC_MEMBERS: &[(&str, &[&str])] = &[
    ("gfx9-generic", &["gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"]),
    ("gfx9-4-generic", &["gfx940", "gfx941", "gfx942", "gfx950"]),
    ("gfx10-1-generic", &["gfx1010", "gfx1011", "gfx1012", "gfx1013"]),
    (
        "gfx10-3-generic",
        &["gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"],
    ),
    (
        "gfx11-generic",
        &[
            "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
            "gfx1154",
        ],
    ),
    ("gfx11-7-generic", &["gfx1170", "gfx1171", "gfx1172"]),
    ("gfx12-generic", &["gfx1200", "gfx1201"]),
    ("gfx12-5-generic", &["gfx1250", "gfx1251"]),
    ("gfx13-generic", &["gfx1310"]),
];
