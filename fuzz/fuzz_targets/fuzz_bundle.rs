//! Uncompressed offload bundle headers and entry IDs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocpack_offload::{EntryId, bundle};

fn ids(id: &EntryId) {
    let _ = id.is_device();
    let _ = id.is_hip();
    if let Some(t) = id.target_id() {
        let _ = t.to_string();
    }
}

fuzz_target!(|data: &[u8]| {
    for complete in [false, true] {
        if let Ok(h) = bundle::parse(data, complete) {
            let end = h.end();
            assert!(end >= h.header_size);
            if complete {
                // A complete bundle's entries lie within the data.
                assert!(end <= data.len() as u64);
            }
            for (a, b) in bundle::overlaps(&h) {
                assert!(a < h.entries.len() && b < h.entries.len());
            }
            for e in &h.entries {
                ids(&e.id);
            }
        }
    }
    // The ID grammar on its own, on arbitrary text.
    let text = String::from_utf8_lossy(data);
    ids(&EntryId::parse(&text));
    let _ = rocpack_amdgpu::TargetId::parse(&text).map(|t| t.to_string());
});
