//! LLVM OffloadBinary (`.llvm.offloading`): one binary, a section of them, compressed v3.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocpack_offload::offload_binary::{self, OffloadBinary};

fn touch(b: &OffloadBinary, len: usize) {
    assert!(b.size <= len as u64 || b.compressed);
    for img in &b.images {
        let _ = img.string("triple");
        let _ = img.string("arch");
        let _ = img.image_kind_name();
        let _ = img.is_hip(b.version);
        for (k, v) in &img.strings {
            let _ = (k.len(), v.len());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(b) = offload_binary::parse(data) {
        touch(&b, data.len());
    }
    let (bins, _err) = offload_binary::parse_all(data);
    let mut last = None;
    for (off, b) in &bins {
        // Binaries come in file order without overlap.
        assert!(last.is_none_or(|l| *off > l));
        last = Some(*off);
        touch(b, data.len() - *off as usize);
    }
    if let Ok((b, inflated)) = offload_binary::parse_compressed(data, 16 << 20) {
        touch(&b, usize::MAX);
        assert!(inflated.len() as u64 <= 16 << 20);
    }
});
