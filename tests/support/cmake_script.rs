//! Runs a script with the real `cmake -P`: the judge of the tests that hold rocpack's CMake
//! semantics (glob matching, list commands) to CMake's own. Included with `#[path]`.

use std::path::Path;
use std::process::Command;

/// Writes `script` to `path` and runs it with `cmake -P`; panics with CMake's stderr if it fails.
pub fn run_cmake_script(path: &Path, script: &str) {
    std::fs::write(path, script).expect("write the CMake script");
    let out = Command::new("cmake")
        .arg("-P")
        .arg(path)
        .output()
        .expect("cmake (scripts/install-deps.sh installs it)");
    assert!(
        out.status.success(),
        "cmake -P failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
