//! Planning a strip, compress or decompress of arbitrary bytes: never panics, and every plan,
//! rendered in memory, passes the verification a real write makes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocpack_amdgpu::compat::{Device, Policy};
use rocpack_slim::plan::Limits;
use rocpack_slim::{Compression, Keep, Operation, plan};
use rocpack_slim::{Input, render, verify_all};

fuzz_target!(|data: &[u8]| {
    let keep = Keep {
        devices: vec![Device::parse("gfx1030").expect("a target ID")],
        policy: Policy::Hip,
        override_version: None,
    };
    let limits = Limits {
        max_decompressed: 16 << 20,
    };
    for op in [
        Operation::Strip(&keep),
        Operation::Compress(Compression::default()),
        Operation::Decompress,
    ] {
        if let Ok(mut p) = plan(Input::bytes(data), op, limits) {
            let new = render(&mut p, data, limits);
            assert_eq!(new.len() as u64, p.new_len);
            if let Err(e) = verify_all(&p, &new, data, limits) {
                panic!("{op:?}: planned rewrite does not verify: {e}");
            }
        }
    }
});
