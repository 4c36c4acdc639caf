//! What a packager passes with `--set` is what CMake's own `-D` would give.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

fn derive(dir: &Path, sets: &[&str]) -> String {
    let out = dir.join("out.toml");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rocpack-derive"));
    cmd.arg(dir)
        .args(["--component", "t", "--origin", "test", "-o"])
        .arg(&out);
    for s in sets {
        cmd.args(["--set", s]);
    }
    assert!(cmd.status().unwrap().success());
    std::fs::read_to_string(out).unwrap()
}

/// CMake runs a `check_*` only when its result variable is not defined yet
/// (Modules/Internal/CheckSourceCompiles.cmake:11 in CMake 3.25: `if(NOT DEFINED "${_var}")`):
/// `-DHAS_HIP=ON` configures MIGraphX's GPU backend without compiling anything. Without it the
/// result is the configuring machine's, and the block stays unevaluated.
#[test]
fn a_check_result_given_on_the_command_line_stands() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.5)\nproject(t CXX)\n\
         include(CheckCXXCompilerFlag)\n\
         check_cxx_compiler_flag(\"--cuda-host-only -x hip\" HAS_HIP)\n\
         if(HAS_HIP)\n  option(GPU_ONLY \"x\" ON)\nendif()\n\
         include(CheckTypeSize)\ncheck_type_size(\"long\" SIZEOF_LONG)\n\
         if(SIZEOF_LONG)\n  option(SIZE_KNOWN \"x\" ON)\nendif()\n",
    )
    .unwrap();
    let given = derive(dir.path(), &["HAS_HIP=ON", "SIZEOF_LONG=8"]);
    assert!(
        given.contains("when = [\"HAS_HIP at CMakeLists.txt:5\"]"),
        "{given}"
    );
    // check_type_size keys its cache on HAVE_<VAR> (CheckTypeSize.cmake:277), so SIZEOF_LONG
    // alone does not stop the check.
    assert!(
        given.contains("if(SIZEOF_LONG) at line 10 was not evaluated"),
        "{given}"
    );
    let guessed = derive(dir.path(), &[]);
    assert!(!guessed.contains("when = [\"HAS_HIP at"), "{guessed}");
    assert!(
        guessed.contains("if(HAS_HIP) at line 5 was not evaluated"),
        "{guessed}"
    );
}
