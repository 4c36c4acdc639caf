//! Lookups in the EF_AMDGPU_MACH table.

pub use crate::mach_table::{GENERIC_MEMBERS, MACH_TABLE, MachInfo};

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
        for (generic, members) in GENERIC_MEMBERS {
            assert!(by_name(generic).is_some_and(|m| m.generic), "{generic}");
            for m in *members {
                assert!(by_name(m).is_some_and(|m| !m.generic), "{m} of {generic}");
            }
        }
    }
}
