//! The loader-side readers of untrusted files: an ELF file's dynamic section, symbols and
//! versions, and an ld.so.cache. Never panic; every lookup on a parsed object works.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocpack_linkage::elf::DynObject;
use rocpack_linkage::ldcache::LdCache;

fuzz_target!(|data: &[u8]| {
    if let Ok(obj) = DynObject::parse(data) {
        for u in &obj.undefined {
            let wanted = u
                .version
                .and_then(|v| obj.verneeds.get(&v))
                .map(|r| &*r.name);
            let _ = obj.satisfies(obj.name(&u.name), wanted);
        }
        for (name, _) in obj.definitions() {
            assert!(obj.lookup(name).next().is_some());
            let _ = obj.satisfies(name, None);
        }
        for v in obj.verdefs.values() {
            assert!(obj.defines_version(v));
        }
    }
    for flags in [0x0303, 0x0003, 0x0a03] {
        if let Ok(cache) = LdCache::parse(data, flags) {
            let _ = cache.lookup(b"libc.so.6");
        }
    }
});
