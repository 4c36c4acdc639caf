//! The whole walk, as `rocpack list --json` and `rocpack extract` run it: every container kind,
//! full decompression (with a small ceiling so that one input stays fast) and kernel metadata,
//! thin archive members through a loader, and every accessor of the result.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocpack_offload::{Inspection, Options, ThinMemberLoader, inspect, inspect_with, sniff};

/// Ceiling for one decompressed bundle: small, so a zip bomb costs milliseconds, not seconds.
const MAX_DECOMPRESSED: u64 = 4 << 20;

/// Serves thin archive members: names starting with "e" fail, the rest get a minimal AMDGPU
/// code object header (not the input itself, which would nest without end).
struct Loader;

const CODE_OBJECT: [u8; 64] = {
    let mut h = [0u8; 64];
    h[0] = 0x7f;
    h[1] = b'E';
    h[2] = b'L';
    h[3] = b'F';
    h[4] = 2;
    h[5] = 1;
    h[7] = 64;
    h[8] = 3;
    h[18] = 224;
    h[48] = 0x3f;
    h
};

impl ThinMemberLoader for Loader {
    fn with_member(&self, name: &str, f: &mut dyn FnMut(&[u8])) -> Result<(), String> {
        if name.starts_with('e') {
            return Err("no such file".into());
        }
        f(&CODE_OBJECT);
        Ok(())
    }
}

fn touch(r: &Inspection) {
    for c in &r.containers {
        let _ = c.label();
        let _ = r.chain(Some(c.id));
    }
    for co in &r.code_objects {
        let _ = r.location(co.container);
        let _ = r.bundle_offset(co.container);
        if let Some(h) = &co.header {
            let _ = h.target().to_string();
            let _ = h.is_generic();
        }
        if let Some(t) = &co.target {
            let _ = t.to_string();
        }
    }
    let _ = r.has_errors();
    let _ = serde_json::to_vec(r).expect("an Inspection always serializes");
}

fuzz_target!(|data: &[u8]| {
    let _ = sniff(data);
    let full = Options {
        metadata: true,
        decompress: true,
        max_decompressed: MAX_DECOMPRESSED,
        thin_loader: Some(&Loader),
        ..Options::default()
    };
    let mut seen = 0usize;
    let mut sink = |r: &Inspection, co: &rocpack_offload::CodeObject, bytes: &[u8]| {
        // The sink gets complete entries only: their size is what the table said.
        assert_eq!(bytes.len() as u64, co.size);
        seen += bytes.len().min(1);
        let _ = r.location(co.container);
    };
    let r = inspect_with(data, &full, Some(&mut sink));
    touch(&r);
    let headers_only = Options {
        max_decompressed: MAX_DECOMPRESSED,
        ..Options::default()
    };
    let r = inspect(data, &headers_only);
    touch(&r);
});
