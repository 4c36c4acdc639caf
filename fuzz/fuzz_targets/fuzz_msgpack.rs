//! The MessagePack reader of AMDGPU metadata notes: validation, then every lazy accessor of
//! the borrowed values (array iteration, map lookups, scalars).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocpack_amdgpu::msgpack::{self, Value};

/// Keys the metadata reader looks up.
const KEYS: [&str; 8] = [
    "amdhsa.kernels",
    "amdhsa.version",
    "amdhsa.target",
    ".name",
    ".symbol",
    ".sgpr_count",
    ".uses_dynamic_stack",
    "",
];

fn walk(v: Value<'_>, depth: u32) {
    // decode() refuses nesting past 64; the lazy readers must agree with it.
    assert!(depth <= 65, "nesting past the decoder's limit");
    let _ = v.as_u64();
    let _ = v.as_str();
    let _ = v.as_bool();
    match v {
        Value::Array(seq) => {
            let items = v.as_array().expect("an array has elements");
            let mut n = 0u64;
            for item in items {
                walk(item, depth + 1);
                n += 1;
            }
            // The validated length is exactly what iteration yields.
            assert_eq!(n, seq.len);
        }
        Value::Map(_) => {
            for key in KEYS {
                if let Some(child) = v.get(key) {
                    walk(child, depth + 1);
                }
            }
        }
        _ => assert!(v.get("amdhsa.kernels").is_none() && v.as_array().is_none()),
    }
}

fuzz_target!(|data: &[u8]| {
    match msgpack::decode(data) {
        Ok(v) => walk(v, 0),
        Err(e) => assert!(e.offset <= data.len() as u64, "{e}"),
    }
});
