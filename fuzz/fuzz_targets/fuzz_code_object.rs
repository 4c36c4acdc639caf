//! AMDGPU code objects: the ELF header's target, the notes, kernel metadata (msgpack or YAML),
//! the V2 ISA note, and demangling of kernel names.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocpack_amdgpu::{CodeObjectHeader, looks_like_code_object, metadata};

fuzz_target!(|data: &[u8]| {
    let _ = looks_like_code_object(data);
    if let Ok(h) = CodeObjectHeader::parse(data) {
        let _ = h.target().to_string();
        let _ = h.is_generic();
        let _ = serde_json::to_vec(&h).expect("header serializes");
    }
    if let Ok(notes) = metadata::notes(data) {
        for n in &notes {
            assert!(n.desc.len() <= data.len() && n.name.len() <= data.len());
        }
    }
    let _ = metadata::isa_version_processor(data);
    match metadata::read(data) {
        Ok(Some(md)) => {
            for k in &md.kernels {
                let _ = metadata::demangle(&k.name);
            }
            let _ = serde_json::to_vec(&md).expect("metadata serializes");
        }
        Ok(None) => {}
        Err(e) => {
            let _ = e.to_string();
        }
    }
    if let Ok(name) = std::str::from_utf8(data) {
        let _ = metadata::demangle(name);
    }
});
