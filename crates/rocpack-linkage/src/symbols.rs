//! Symbol checks over one closure: undefined symbols, required versions, duplicate definitions.

use std::collections::HashMap;

use crate::elf::{DynObject, Name};
use crate::search::Closure;

/// A required version the library that should provide it does not define.
#[derive(Debug, Clone)]
pub struct MissingVersion {
    /// The library name the requirement names (`libstdc++.so.6`).
    pub library: Name,
    pub version: Name,
    /// Index of the object that was loaded for `library`.
    pub provider: usize,
    pub weak: bool,
    /// Undefined symbols bound to this version.
    pub symbols: Vec<Name>,
}

/// A non-weak undefined symbol no object of the closure defines.
#[derive(Debug, Clone)]
pub struct Unresolved {
    pub name: Name,
    pub version: Option<Name>,
}

/// What the first object of a closure lacks.
#[derive(Debug, Default)]
pub struct SymbolCheck {
    pub missing_versions: Vec<MissingVersion>,
    pub undefined: Vec<Unresolved>,
    /// Undefined non-weak symbols looked up.
    pub checked: usize,
}

/// Checks the first object's version requirements and undefined symbols against its closure,
/// in load order, as glibc's `_dl_check_map_versions` and `_dl_lookup_symbol_x` would.
pub fn check_first(c: &Closure) -> SymbolCheck {
    let mut out = SymbolCheck::default();
    let Some(first) = c.objects.first() else {
        return out;
    };
    let obj = &first.obj;
    let mut missing_ndx: HashMap<u16, usize> = HashMap::new();
    let mut reqs: Vec<(&u16, &crate::elf::Requirement)> = obj.verneeds.iter().collect();
    reqs.sort_by_key(|(ndx, _)| **ndx);
    for (ndx, req) in reqs {
        // A library that was not found is reported as unresolved; its versions cannot be checked.
        let Some(provider) = c.find_by_name(&req.file) else {
            continue;
        };
        let p = &c.objects[provider].obj;
        // An object without version definitions accepts any requirement (glibc only checks
        // objects that have them: `match_version` returns early without verdef).
        if p.verdefs.is_empty() || p.defines_version(&req.name) {
            continue;
        }
        missing_ndx.insert(*ndx, out.missing_versions.len());
        out.missing_versions.push(MissingVersion {
            library: req.file.clone(),
            version: req.name.clone(),
            provider,
            weak: req.weak,
            symbols: Vec::new(),
        });
    }
    for u in &obj.undefined {
        if u.weak {
            continue;
        }
        out.checked += 1;
        if let Some(&m) = u.version.and_then(|v| missing_ndx.get(&v)) {
            out.missing_versions[m]
                .symbols
                .push(obj.name(&u.name).into());
            continue;
        }
        let wanted = u
            .version
            .and_then(|v| obj.verneeds.get(&v))
            .map(|r| &*r.name);
        let name = obj.name(&u.name);
        if !c.objects.iter().any(|o| o.obj.satisfies(name, wanted)) {
            out.undefined.push(Unresolved {
                name: name.into(),
                version: wanted.map(Name::from),
            });
        }
    }
    out
}

/// Strong definitions of the names that two copies of one big C++ library would share.
pub fn duplicate_candidates(obj: &DynObject) -> Vec<&[u8]> {
    let mut v: Vec<&[u8]> = obj
        .definitions()
        .filter(|(name, d)| {
            (name.starts_with(b"_Z") || name.starts_with(b"LLVM"))
                && !d.weak
                && !d.unique
                && !d.hidden
        })
        .map(|(n, _)| n)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Is this an LLVM symbol (the C++ namespace `llvm::` or the C API)?
pub fn is_llvm(name: &[u8]) -> bool {
    name.starts_with(b"_ZN4llvm") || name.starts_with(b"_ZNK4llvm") || name.starts_with(b"LLVM")
}

/// The names both sorted lists hold.
pub fn intersect(a: &[&[u8]], b: &[&[u8]]) -> Vec<Name> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        match x.cmp(y) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                out.push(Name::from(*x));
                i += 1;
                j += 1;
            }
        }
    }
    out
}

/// Compares version names like `GLIBCXX_3.4.30` by their numbers.
pub fn version_key(v: &[u8]) -> (Vec<u8>, Vec<u64>) {
    let split = v.iter().position(u8::is_ascii_digit).unwrap_or(v.len());
    let (prefix, rest) = v.split_at(split);
    let nums = rest
        .split(|b| !b.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.iter().fold(0u64, |a, &d| {
                a.saturating_mul(10).saturating_add(u64::from(d - b'0'))
            })
        })
        .collect();
    (prefix.to_vec(), nums)
}

/// The newest version a library defines with the same prefix as `wanted` (`GLIBCXX_3.4.30`
/// for a missing `GLIBCXX_3.4.32`).
pub fn newest_like(obj: &DynObject, wanted: &[u8]) -> Option<Name> {
    let (prefix, _) = version_key(wanted);
    obj.verdefs
        .values()
        .filter(|v| version_key(v).0 == prefix)
        .max_by_key(|v| version_key(v).1)
        .cloned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_number() {
        assert!(version_key(b"GLIBCXX_3.4.9").1 < version_key(b"GLIBCXX_3.4.30").1);
        assert_eq!(version_key(b"GLIBC_2.34").0, b"GLIBC_".to_vec());
    }
}
