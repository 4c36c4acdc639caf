//! Lookups in the EF_AMDGPU_MACH table.

pub use crate::mach_table::{APU_PROCESSORS, GENERIC_MEMBERS, MACH_TABLE, MachInfo};

/// The processor with this `e_flags & 0xff` value, if the value is assigned.
pub fn by_value(mach: u8) -> Option<&'static MachInfo> {
    MACH_TABLE.iter().find(|m| m.mach == mach)
}

/// The processor with this canonical name.
pub fn by_name(name: &str) -> Option<&'static MachInfo> {
    MACH_TABLE.iter().find(|m| m.name == name)
}

/// The processors a generic target covers (empty for a name that is not a generic target).
pub fn generic_members(generic: &str) -> &'static [&'static str] {
    GENERIC_MEMBERS
        .iter()
        .find(|(g, _)| *g == generic)
        .map_or(&[], |(_, m)| m)
}

/// A `gfx` version as KFD and HSA_OVERRIDE_GFX_VERSION give it: major, minor, stepping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GfxVersion {
    pub major: u32,
    pub minor: u32,
    pub stepping: u32,
}

impl GfxVersion {
    /// Decodes KFD's `gfx_target_version` property (`major * 10000 + minor * 100 + stepping`,
    /// e.g. 90010 for gfx90a, 100300 for gfx1030). Zero (a CPU node) gives `None`.
    pub fn from_kfd(value: u64) -> Option<Self> {
        if value == 0 {
            return None;
        }
        let major = u32::try_from(value / 10_000).ok()?;
        Some(GfxVersion {
            major,
            minor: u32::try_from(value / 100 % 100).ok()?,
            stepping: u32::try_from(value % 100).ok()?,
        })
    }

    /// The processor name the runtime derives: `gfx` + major in decimal + minor and stepping
    /// as one hex digit each (9.0.10 is gfx90a, 10.3.0 is gfx1030, 11.0.0 is gfx1100).
    /// `None` when minor or stepping does not fit one hex digit, which names no processor.
    pub fn processor(self) -> Option<String> {
        if self.minor > 0xf || self.stepping > 0xf {
            return None;
        }
        Some(format!(
            "gfx{}{:x}{:x}",
            self.major, self.minor, self.stepping
        ))
    }
}

impl std::fmt::Display for GfxVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.stepping)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique() {
        for pair in MACH_TABLE.windows(2) {
            assert!(pair[0].mach < pair[1].mach, "{:?} / {:?}", pair[0], pair[1]);
        }
        let mut names: Vec<_> = MACH_TABLE.iter().map(|m| m.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), MACH_TABLE.len());
    }

    #[test]
    fn well_known_values() {
        // Values verified on clang-19 output (formats.md §5.2) and LLVM's ELF.h.
        assert_eq!(by_value(0x3f).map(|m| m.name), Some("gfx90a"));
        assert_eq!(by_value(0x36).map(|m| m.name), Some("gfx1030"));
        assert_eq!(by_value(0x53).map(|m| m.name), Some("gfx10-3-generic"));
        assert_eq!(by_value(0x51).map(|m| m.name), Some("gfx9-generic"));
        assert_eq!(by_value(0x4c).map(|m| m.name), Some("gfx942"));
        assert!(by_value(0x00).is_none());
        let gfx90a = by_name("gfx90a").unwrap();
        assert!(gfx90a.xnack && gfx90a.sramecc && !gfx90a.generic);
        let gfx1030 = by_name("gfx1030").unwrap();
        assert!(!gfx1030.xnack && !gfx1030.sramecc);
        assert!(generic_members("gfx10-3-generic").contains(&"gfx1031"));
        let v = GfxVersion::from_kfd(90010).unwrap();
        assert_eq!(v.processor().as_deref(), Some("gfx90a"));
        assert_eq!(v.to_string(), "9.0.10");
        let v = GfxVersion::from_kfd(100300).unwrap();
        assert_eq!(v.processor().as_deref(), Some("gfx1030"));
        assert_eq!(
            GfxVersion::from_kfd(110501).unwrap().processor().as_deref(),
            Some("gfx1151")
        );
        assert_eq!(GfxVersion::from_kfd(0), None);
        for (generic, members) in GENERIC_MEMBERS {
            assert!(by_name(generic).is_some_and(|m| m.generic), "{generic}");
            for m in *members {
                assert!(by_name(m).is_some_and(|m| !m.generic), "{m} of {generic}");
            }
        }
    }
}
