//! The one ar reader (`rocpack_offload::archive`), which static libraries and `.deb` packages
//! share: every member's header, its data cut to the archive, and the error of a bad header.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rocpack_offload::archive::check_invariants(data));
