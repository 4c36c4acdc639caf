//! The CMake evaluator (rocpack-verify's cmake::project, which rocpack-derive runs over the
//! components' CMakeLists): the fuzzed bytes are a top-level CMakeLists.txt. Never panic, and
//! stop on any input (the evaluator bounds loops, recursion and output).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocpack_cmake::project::{ProjectOptions, evaluate_project};

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("rocpack-fuzz-cmake-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    if std::fs::write(dir.join("CMakeLists.txt"), data).is_err() {
        return;
    }
    let cache = [("GPU_TARGETS".to_owned(), "gfx1030;gfx1100".to_owned())];
    let _ = evaluate_project(&ProjectOptions {
        source_dir: &dir,
        cache: &cache,
        prelude: "",
        record: &["add_library", "target_compile_options"],
        watch: &["GPU_TARGETS", "AMDGPU_TARGETS"],
        undefined: &[],
    });
    let _ = std::fs::remove_dir_all(&dir);
});
