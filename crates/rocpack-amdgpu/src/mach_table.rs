//! EF_AMDGPU_MACH values (`e_flags & 0x0ff`) of AMDGPU ELF code objects, with the
//! target features each processor supports and the generic-target membership.
//!
//! The tables are derived from `data/gpus.toml` by the build script (`build.rs`): the file is
//! the one source of these facts. What follows records where its values were checked.
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
//!
//! Generic membership (`GENERIC_MEMBERS`):
//! Generic target -> processors it covers (per AMDGPUUsage generic processor table and ROCr isa.cpp).
//!
//! Sources: the "AMDGPU Generic Processors" table in `llvm/docs/AMDGPUUsage.rst` from
//! ROCm/llvm-project @ dce84f8c7b92e5fb9352a26c1e87a29e8f33786f (gfx9-4-generic lists gfx940,
//! gfx941, gfx942 and gfx950), ROCm/llvm-project @ 056c6fbd9aa20cb553d2c2bf834bfd98e658bb62
//! (gfx12-5-generic: gfx1250, gfx1251) and sailfishos-mirror/llvm-project
//! @ 07379fed0f9af4aa2b5b8f656074c2f897ba1ae3 (gfx11-generic adds gfx1154). ROCr's
//! `projects/rocr-runtime/runtime/hsa-runtime/core/runtime/isa.cpp` in ROCm/rocm-systems
//! @ 4ae93caeefe7331bff56bad4098a6aadf096c769 agrees for gfx9 to gfx12. It maps only gfx942 and
//! gfx950 to gfx9-4-generic because it no longer registers gfx940/gfx941.
//! No AMDGPUUsage or ROCr copy that was read lists gfx11-7-generic or gfx13-generic. Their
//! members come from LLVM's TargetParser.cpp, which is weaker evidence: the `AMDGPUSubArchNames`
//! family table, and the `fillAMDGCNFeatureMap` case groups gfx1170/1171/1172 with
//! gfx11-7-generic and gfx1310 with gfx13-generic.

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

include!(concat!(env!("OUT_DIR"), "/gpu_tables.rs"));
