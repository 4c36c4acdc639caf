//! `/etc/ld.so.cache`, as glibc's elf/dl-cache.c reads it.
//!
//! Two layouts exist (sysdeps/generic/dl-cache.h): the old `ld.so-1.7.0` table, optionally followed
//! by the new table, and the new `glibc-ld.so.cache1.1` table alone (the default since glibc 2.32).
//! Entries carry flags naming the ABI (`FLAG_ELF_LIBC6` plus an architecture value) and a hwcap
//! word; glibc only takes an entry whose flags match the loading program's ABI. Entries for
//! glibc-hwcaps subdirectories (hwcap ≠ 0) are skipped: which of them the loader would pick
//! depends on the CPU of the machine that runs the program, which a static analysis does not know;
//! every such library also has a baseline entry.

use std::collections::HashMap;

use crate::elf::Name;

const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache";
const NEW_VERSION: &[u8] = b"1.1";
/// sizeof(struct cache_file_new): magic 17 + version 3 + nlibs 4 + len_strings 4 + flags 1 +
/// padding 3 + extension_offset 4 + unused 3×4.
const NEW_HEADER: usize = 48;
const NEW_ENTRY: usize = 24;
const OLD_HEADER: usize = 16;
const OLD_ENTRY: usize = 12;

const FLAG_ELF_LIBC6: i32 = 0x0003;

/// The library names a cache maps to paths, for one ABI.
#[derive(Debug, Default)]
pub struct LdCache {
    by_name: HashMap<Name, Name>,
    /// The file had the new format (else only the old one was found).
    pub new_format: bool,
    pub entries: usize,
}

/// Why a cache could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("not an ld.so.cache (no ld.so-1.7.0 or glibc-ld.so.cache1.1 magic)")]
    BadMagic,
    #[error("truncated at offset {0:#x}")]
    Truncated(usize),
}

/// The `flags` value glibc's `_dl_cache_check_flags` accepts for objects of this machine and
/// class (sysdeps/*/dl-cache.h, `_DL_CACHE_DEFAULT_ID`).
pub fn abi_flags(machine: u16, is_64: bool) -> i32 {
    use object::elf::*;
    let arch = match (machine, is_64) {
        (EM_X86_64, true) => 0x0300,
        (EM_X86_64, false) => 0x0800, // x32
        (EM_AARCH64, true) => 0x0a00,
        (EM_IA_64, true) => 0x0200,
        (EM_SPARCV9, true) => 0x0100,
        (EM_PPC64, true) => 0x0500,
        (EM_S390, true) => 0x0400,
        (EM_RISCV, true) => 0x1000,     // FLAG_RISCV_FLOAT_ABI_DOUBLE
        (EM_LOONGARCH, true) => 0x1200, // FLAG_LARCH_FLOAT_ABI_DOUBLE
        _ => 0,
    };
    FLAG_ELF_LIBC6 | arch
}

fn u32_at(data: &[u8], off: usize) -> Result<u32, CacheError> {
    let b = data.get(off..off + 4).ok_or(CacheError::Truncated(off))?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

fn u64_at(data: &[u8], off: usize) -> Result<u64, CacheError> {
    let lo = u32_at(data, off)?;
    let hi = u32_at(data, off + 4)?;
    Ok(u64::from(lo) | (u64::from(hi) << 32))
}

fn cstr(data: &[u8], off: usize) -> Option<&[u8]> {
    let rest = data.get(off..)?;
    let end = rest.iter().position(|&b| b == 0)?;
    rest.get(..end)
}

impl LdCache {
    /// Parses a cache file, keeping the entries for one ABI (see [`abi_flags`]).
    ///
    /// Errs when the file has neither magic or its table runs past the end. Entries whose strings
    /// lie outside the file are skipped, as they are unusable.
    pub fn parse(data: &[u8], flags: i32) -> Result<LdCache, CacheError> {
        let mut cache = LdCache::default();
        let new_start = if data.starts_with(NEW_MAGIC) {
            Some(0)
        } else if data.starts_with(OLD_MAGIC) {
            let n = u32_at(data, 12)? as usize;
            let end = n
                .checked_mul(OLD_ENTRY)
                .and_then(|s| s.checked_add(OLD_HEADER))
                .ok_or(CacheError::Truncated(12))?;
            if end > data.len() {
                return Err(CacheError::Truncated(data.len()));
            }
            // The new table follows, aligned to its own alignment (8 since glibc 2.32).
            let aligned = end.div_ceil(8) * 8;
            let next = [aligned, end]
                .into_iter()
                .find(|&o| data.get(o..).is_some_and(|d| d.starts_with(NEW_MAGIC)));
            if next.is_none() {
                // Old format only: offsets are relative to the string table after the entries.
                for i in 0..n {
                    let e = OLD_HEADER + i * OLD_ENTRY;
                    let f = u32_at(data, e)? as i32;
                    let key = u32_at(data, e + 4)? as usize;
                    let value = u32_at(data, e + 8)? as usize;
                    if f != flags {
                        continue;
                    }
                    cache.add(data, end + key, end + value);
                }
                return Ok(cache);
            }
            next
        } else {
            return Err(CacheError::BadMagic);
        };
        let Some(base) = new_start else {
            return Ok(cache);
        };
        let table = data.get(base..).ok_or(CacheError::Truncated(base))?;
        if table.get(NEW_MAGIC.len()..NEW_MAGIC.len() + 3) != Some(NEW_VERSION) {
            return Err(CacheError::BadMagic);
        }
        cache.new_format = true;
        let n = u32_at(table, 20)? as usize;
        let end = n
            .checked_mul(NEW_ENTRY)
            .and_then(|s| s.checked_add(NEW_HEADER))
            .ok_or(CacheError::Truncated(base + 20))?;
        if end > table.len() {
            return Err(CacheError::Truncated(data.len()));
        }
        for i in 0..n {
            let e = NEW_HEADER + i * NEW_ENTRY;
            let f = u32_at(table, e)? as i32;
            let key = u32_at(table, e + 4)? as usize;
            let value = u32_at(table, e + 8)? as usize;
            let hwcap = u64_at(table, e + 16)?;
            if f != flags || hwcap != 0 {
                continue;
            }
            // In the new format, string offsets are relative to the start of the new table.
            cache.add(table, key, value);
        }
        Ok(cache)
    }

    fn add(&mut self, data: &[u8], key: usize, value: usize) {
        let (Some(k), Some(v)) = (cstr(data, key), cstr(data, value)) else {
            return;
        };
        self.entries += 1;
        // glibc's lookup takes the first matching entry of a sorted table; keep the first.
        self.by_name.entry(k.into()).or_insert_with(|| v.into());
    }

    /// The path the cache gives for a library name.
    pub fn lookup(&self, name: &[u8]) -> Option<&[u8]> {
        self.by_name.get(name).map(|v| &**v)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn hostile_counts_are_errors() {
        let mut d = Vec::from(NEW_MAGIC);
        d.extend_from_slice(NEW_VERSION);
        d.extend_from_slice(&u32::MAX.to_le_bytes());
        d.resize(NEW_HEADER, 0);
        assert!(matches!(
            LdCache::parse(&d, 0x303),
            Err(CacheError::Truncated(_))
        ));
        let mut o = Vec::from(OLD_MAGIC);
        o.push(0);
        o.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(LdCache::parse(&o, 0x303).is_err());
        assert!(matches!(
            LdCache::parse(b"junk", 0x303),
            Err(CacheError::BadMagic)
        ));
    }
}
