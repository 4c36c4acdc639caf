//! `rocpack_scan::glob` judged by CMake itself: for each pattern, `file(GLOB)` in `cmake -P` over
//! a directory of odd names, against the names `component_matches` accepts. CMake's syntax is
//! the one the matcher claims (`cmGlob::PatternToRegex`), and CMake configs are what it reads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../tests/support/cmake_script.rs"]
mod cmake_script;
use cmake_script::run_cmake_script;

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use rocpack_scan::glob::component_matches;

const NAMES: &[&[u8]] = &[
    b"abc",
    b"abd",
    b"axc",
    b"a]c",
    b"a-c",
    b"a^c",
    b"a!c",
    b"a[c",
    b"a[b",
    b"ab",
    b"b",
    b"]",
    b"a?c",
    b"lib.so",
    b"lib.so.1",
    b"libx.so.1.2",
    "é".as_bytes(),
    "éa".as_bytes(),
    b"\xff",
    b"a\xffc",
];

const PATTERNS: &[&str] = &[
    "*", "?", "??", "a?c", "a*c", "a[b-c]c", "a[!b]c", "a[^b]c", "a[]]c", "a[-]c", "a[b", "*[",
    "[a-b]*", "lib*.so*", "lib?.so*", "*.so", "a[!]]c", "[]a]*",
];

#[test]
fn matches_what_cmake_file_glob_matches() {
    let dir = tempfile::tempdir().unwrap();
    for name in NAMES {
        std::fs::write(dir.path().join(OsStr::from_bytes(name)), b"").unwrap();
    }
    // One cmake run: for pattern i, write the matched names, newline-separated, to out-i.txt.
    // The `;` of CMake's list become newlines by string(REPLACE): list(JOIN) and foreach() would
    // not split inside `[...]`, and no name here contains `;`.
    let mut script = String::new();
    for (i, p) in PATTERNS.iter().enumerate() {
        script.push_str(&format!(
            "file(GLOB r RELATIVE \"{d}\" \"{d}/{p}\")\nstring(REPLACE \";\" \"\\n\" r \"${{r}}\")\nfile(WRITE \"{d}/../out-{i}.txt\" \"${{r}}\")\n",
            d = dir.path().join("names").display()
        ));
    }
    let names = dir.path().join("names");
    std::fs::create_dir(&names).unwrap();
    for name in NAMES {
        std::fs::rename(
            dir.path().join(OsStr::from_bytes(name)),
            names.join(OsStr::from_bytes(name)),
        )
        .unwrap();
    }
    run_cmake_script(&dir.path().join("glob.cmake"), &script);
    for (i, p) in PATTERNS.iter().enumerate() {
        let text = std::fs::read(dir.path().join(format!("out-{i}.txt"))).unwrap();
        let cmake: BTreeSet<Vec<u8>> = text
            .split(|&b| b == b'\n')
            .filter(|n| !n.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        let ours: BTreeSet<Vec<u8>> = NAMES
            .iter()
            .filter(|n| component_matches(p.as_bytes(), n))
            .map(|n| n.to_vec())
            .collect();
        let show = |s: &BTreeSet<Vec<u8>>| -> Vec<String> {
            s.iter()
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .collect()
        };
        assert_eq!(
            ours,
            cmake,
            "pattern {p:?}: rocpack {:?}, cmake {:?}",
            show(&ours),
            show(&cmake)
        );
    }
}
