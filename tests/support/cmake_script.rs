//! Runs the real `cmake`: the judge of the tests that hold rocpack's CMake semantics (glob
//! matching, list commands, a project's configure) to CMake's own. Included with `#[path]`.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

/// Runs `cmake` with `args`; panics with CMake's stderr if it fails.
#[allow(dead_code)] // Not every test crate that includes this file configures a project.
pub fn run_cmake<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) {
    let out = Command::new("cmake")
        .args(args)
        .output()
        .expect("cmake (scripts/install-deps.sh installs it)");
    assert!(
        out.status.success(),
        "cmake failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes `script` to `path` and runs it with `cmake -P`.
pub fn run_cmake_script(path: &Path, script: &str) {
    std::fs::write(path, script).expect("write the CMake script");
    run_cmake([OsStr::new("-P"), path.as_os_str()]);
}
