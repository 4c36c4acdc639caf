//! The Windows PE reader: headers and section table, every section's bytes, the ranges the embedded-code search reads, RVA
//! lookups, base relocations and the wrapper records with their resolved pointers.
#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use rocpack_offload::pe::{self, Pe};

fuzz_target!(|data: &[u8]| {
    let _ = pe::is_pe(data);
    let Ok(image) = Pe::parse(data) else {
        return;
    };
    let _ = image.section_named(&pe::FATBIN_NAMES);
    for s in &image.sections {
        let (bytes, complete) = image.section_data(s);
        assert!(bytes.len() as u64 <= s.file_size);
        assert_eq!(complete, bytes.len() as u64 == s.file_size);
        let _ = image.section_containing(u64::from(s.rva));
    }
    let _ = image.truncated_sections().count();
    for r in image.embedded_ranges(true) {
        assert!(r.data.len() as u64 <= data.len() as u64);
        let _ = (r.name.len(), r.index, r.file_offset, r.vaddr);
    }
    // Relocations at the start of every section and at wrapper-like fields, as the walk asks.
    let wanted: BTreeSet<u32> = image
        .sections
        .iter()
        .flat_map(|s| (0..16u32).map(move |i| s.rva.wrapping_add(24 * i + 8)))
        .collect();
    if let Ok(found) = image.base_relocations_at(&wanted) {
        assert!(found.keys().all(|a| wanted.contains(a)));
    }
    for s in &image.sections {
        let w = image.wrappers(s);
        assert!(w.records.len() + w.bad.len() <= s.file_size as usize / 16 + 1);
        for r in &w.records {
            if let Ok((rva, _)) = r.target {
                let _ = image.section_containing(rva);
            }
        }
    }
});
