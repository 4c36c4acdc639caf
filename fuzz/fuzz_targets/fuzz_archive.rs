//! The one ar reader (`rocpack_offload::archive`), which static libraries and `.deb` packages
//! share: every member's header, its data cut to the archive, and the error of a bad header.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocpack_offload::archive;

fuzz_target!(|data: &[u8]| {
    let Ok(members) = archive::members(data) else {
        return;
    };
    let mut failed = false;
    for m in members {
        assert!(!failed, "a member after the error");
        match m {
            Ok(m) => {
                let bytes = m.data(data);
                assert!(bytes.len() as u64 <= m.size);
                if !m.thin {
                    assert_eq!(m.complete(data.len() as u64), bytes.len() as u64 == m.size);
                }
            }
            // Its offset may lie past the end: where a member that claims too much ends.
            Err(_) => failed = true,
        }
    }
});
