//! `list()` judged by CMake itself: one script of list operations, run by `cmake -P` and by
//! rocpack's interpreter, must leave every result variable with the same text. The cases
//! include what the interpreter reads on fast paths (APPEND and PREPEND on the string, GET and
//! FIND without splitting the whole list) next to the lists that need the full rules
//! (brackets, escaped `;`, empty elements), how `continue()` and `break()` in a macro act on
//! the loop around its call (RCCL's Generator.cmake relies on it), and `if()` over an unquoted
//! argument that expands to nothing (`$ENV{UNSET} MATCHES`, hipFFT's CMakeLists).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../../tests/support/cmake_script.rs"]
mod cmake_script;
use cmake_script::{run_cmake, run_cmake_script};

use std::path::Path;

use rocpack_cmake::project::{ProjectOptions, ProjectRun, evaluate_project};

/// (result variable, the commands that compute it). Each case starts from the same lists.
const CASES: &[(&str, &str)] = &[
    ("r_append", "set(r_append a b)\nlist(APPEND r_append c d)"),
    ("r_append_undef", "list(APPEND r_append_undef x)"),
    (
        "r_append_empty",
        "set(r_append_empty \"\")\nlist(APPEND r_append_empty x)",
    ),
    (
        "r_append_trailing",
        "set(r_append_trailing \"a;\")\nlist(APPEND r_append_trailing b)",
    ),
    (
        "r_append_escaped",
        "set(r_append_escaped \"a\\\\;b;c\")\nlist(APPEND r_append_escaped d)",
    ),
    (
        "r_append_bracket",
        "set(r_append_bracket \"x[1;2]y;z\")\nlist(APPEND r_append_bracket w)",
    ),
    (
        "r_append_many",
        "set(r_append_many a)\nforeach(i RANGE 1 40)\n  list(APPEND r_append_many \"e${i}\")\nendforeach()",
    ),
    ("r_prepend", "set(r_prepend c)\nlist(PREPEND r_prepend a b)"),
    (
        "r_prepend_empty",
        "set(r_prepend_empty \"\")\nlist(PREPEND r_prepend_empty a)",
    ),
    (
        "r_prepend_escaped",
        "set(r_prepend_escaped \"a\\\\;b\")\nlist(PREPEND r_prepend_escaped z)",
    ),
    ("r_get", "set(l a b c d e)\nlist(GET l 0 3 1 r_get)"),
    ("r_get_neg", "set(l a b c d e)\nlist(GET l -1 -5 r_get_neg)"),
    (
        "r_get_empty_el",
        "set(l \"a;;c\")\nset(r_get_empty_el unchanged)\nlist(GET l 1 r_get_empty_el)",
    ),
    (
        "r_get_last_empty",
        "set(l \"a;b;\")\nset(r_get_last_empty unchanged)\nlist(GET l 2 r_get_last_empty)",
    ),
    (
        "r_get_escaped",
        "set(l \"a\\\\;b;c\")\nlist(GET l 0 r_get_escaped)",
    ),
    (
        "r_get_bracket",
        "set(l \"p;x[1;2]y;z\")\nlist(GET l 1 2 r_get_bracket)",
    ),
    (
        "r_get_after_bracket",
        "set(l \"x[1;2]y;z;w\")\nlist(GET l 2 r_get_after_bracket)",
    ),
    (
        "r_get_space",
        "set(l a b c)\nlist(GET l \" 1\" r_get_space)",
    ),
    ("r_find", "set(l a b c b)\nlist(FIND l b r_find)"),
    ("r_find_none", "set(l a b c)\nlist(FIND l q r_find_none)"),
    (
        "r_find_empty_list",
        "set(l \"\")\nlist(FIND l a r_find_empty_list)",
    ),
    (
        "r_find_empty_el",
        "set(l \"a;;c\")\nlist(FIND l \"\" r_find_empty_el)",
    ),
    (
        "r_find_escaped",
        "set(l \"a\\\\;b;c\")\nlist(FIND l \"a;b\" r_find_escaped)",
    ),
    (
        "r_find_bracket",
        "set(l \"x[1;2]y;z\")\nlist(FIND l z r_find_bracket)",
    ),
    ("r_find_undef", "list(FIND r_undefined_list a r_find_undef)"),
    ("r_length", "set(l \"a;;c;\")\nlist(LENGTH l r_length)"),
    (
        "r_remove_at",
        "set(r_remove_at a b c d)\nlist(REMOVE_AT r_remove_at -1 0)",
    ),
    (
        "r_remove_item",
        "set(r_remove_item a b a c)\nlist(REMOVE_ITEM r_remove_item a)",
    ),
    ("r_insert", "set(r_insert a c)\nlist(INSERT r_insert 1 b)"),
    ("r_sublist", "set(l a b c d)\nlist(SUBLIST l 1 2 r_sublist)"),
    ("r_join", "set(l a b c)\nlist(JOIN l - r_join)"),
    (
        "r_tr_append",
        "set(r_tr_append a b c)\nlist(TRANSFORM r_tr_append APPEND \".S\")",
    ),
    (
        "r_tr_prepend_at",
        "set(r_tr_prepend_at a b c)\nlist(TRANSFORM r_tr_prepend_at PREPEND \"x-\" AT 0 -1)",
    ),
    (
        "r_tr_upper_for",
        "set(r_tr_upper_for a b c d e)\nlist(TRANSFORM r_tr_upper_for TOUPPER FOR 1 4 2)",
    ),
    (
        "r_tr_replace_regex",
        "set(r_tr_replace_regex foo.cpp bar.h baz.cpp)\n\
         list(TRANSFORM r_tr_replace_regex REPLACE \"\\\\.cpp$\" \".o\" REGEX \"^b\")",
    ),
    (
        "r_tr_replace_group",
        "set(r_tr_replace_group ab cd)\nlist(TRANSFORM r_tr_replace_group REPLACE \"(.)(.)\" \"\\\\2\\\\1\")",
    ),
    (
        "r_tr_output",
        "set(l \" a \" b)\nlist(TRANSFORM l STRIP OUTPUT_VARIABLE r_tr_output)",
    ),
    (
        "r_close_bracket_length",
        "set(l \"x];y;z\")\nlist(LENGTH l r_close_bracket_length)",
    ),
    (
        "r_close_bracket_get",
        "set(l \"x];y;z\")\nset(r_close_bracket_get unchanged)\nlist(GET l 0 r_close_bracket_get)",
    ),
    (
        "r_close_bracket_find",
        "set(l \"x];y;z\")\nlist(FIND l y r_close_bracket_find)",
    ),
    (
        "r_bracket_pair_length",
        "set(l \"[a;b];c\")\nlist(LENGTH l r_bracket_pair_length)",
    ),
    (
        "r_tr_at_twice",
        "set(r_tr_at_twice a b c)\nlist(TRANSFORM r_tr_at_twice APPEND \"_s\" AT 0 0 -3)",
    ),
    (
        "r_tr_strip_vt",
        "string(ASCII 11 vt)\nset(r_tr_strip_vt \"${vt} a ${vt}\" b)\nlist(TRANSFORM r_tr_strip_vt STRIP)",
    ),
    (
        "r_strip_vt",
        "string(ASCII 11 12 vt)\nstring(STRIP \"${vt} a ${vt}\" r_strip_vt)",
    ),
    (
        "r_if_not_matches_n",
        "set(r_if_not_matches_n no)\nif(NOT $ENV{ROCPACK_TEST_NEVER_SET} MATCHES \"N\")\n  \
         set(r_if_not_matches_n yes)\nendif()",
    ),
    (
        "r_if_matches_unset",
        "set(r_if_matches_unset no)\nif($ENV{ROCPACK_TEST_NEVER_SET} MATCHES \"y\")\n  \
         set(r_if_matches_unset yes)\nendif()",
    ),
    (
        "r_if_not_matches_unset",
        "set(r_if_not_matches_unset no)\nif(NOT $ENV{ROCPACK_TEST_NEVER_SET} MATCHES \"y\")\n  \
         set(r_if_not_matches_unset yes)\nendif()",
    ),
    (
        "r_if_matches_empty_unquoted",
        "set(e \"\")\nset(r_if_matches_empty_unquoted no)\nif(${e} MATCHES \"^$\")\n  \
         set(r_if_matches_empty_unquoted yes)\nendif()",
    ),
    (
        "r_if_matches_empty_quoted",
        "set(e \"\")\nset(r_if_matches_empty_quoted no)\nif(\"${e}\" MATCHES \"^$\")\n  \
         set(r_if_matches_empty_quoted yes)\nendif()",
    ),
    (
        "r_macro_continue",
        "macro(skip_b)\n  if(${item} STREQUAL \"b\")\n    continue()\n  endif()\nendmacro()\n\
         set(r_macro_continue \"\")\nforeach(item a b c)\n  list(APPEND r_macro_continue ${item})\n  \
         skip_b()\n  list(REMOVE_AT r_macro_continue -1)\nendforeach()",
    ),
    (
        "r_macro_flow",
        "macro(flow_in_macro)\n  continue()\n  list(APPEND r_macro_flow \"after-continue-${i}\")\n  \
         if(i EQUAL 3)\n    break()\n  endif()\nendmacro()\nset(r_macro_flow \"\")\n\
         foreach(i RANGE 1 5)\n  flow_in_macro()\n  list(APPEND r_macro_flow \"loop-${i}\")\nendforeach()",
    ),
];

/// rocpack's interpreter on the project in `dir`, with `-D` entries `cache`, watching `watch`.
fn evaluate(dir: &Path, cache: &[(String, String)], watch: &[&str]) -> ProjectRun {
    evaluate_project(&ProjectOptions {
        source_dir: dir,
        cache,
        prelude: "",
        record: &[],
        watch,
        undefined: &[],
    })
    .unwrap()
}

/// Policies as a project of today sets them (CMP0007: empty elements are elements).
fn script() -> String {
    let mut s = String::from("cmake_minimum_required(VERSION 3.16)\n");
    for (_, code) in CASES {
        s.push_str(code);
        s.push('\n');
    }
    s
}

#[test]
fn list_commands_leave_what_cmake_leaves() {
    let dir = tempfile::tempdir().unwrap();

    // CMake: each result written to its own file (a file keeps `;` and empty values).
    let mut cmake_script = script();
    for (var, _) in CASES {
        cmake_script.push_str(&format!(
            "file(WRITE \"{}/{var}.txt\" \"${{{var}}}\")\n",
            dir.path().display()
        ));
    }
    run_cmake_script(&dir.path().join("lists.cmake"), &cmake_script);

    // rocpack: the same commands as a project, the results watched.
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("CMakeLists.txt"), script()).unwrap();
    let watch: Vec<&str> = CASES.iter().map(|(var, _)| *var).collect();
    let run = evaluate(&project, &[], &watch);

    let mut differ = Vec::new();
    for (var, code) in CASES {
        let cmake = std::fs::read_to_string(dir.path().join(format!("{var}.txt"))).unwrap();
        let ours = match run.finals.get(*var) {
            Some(Some(v)) if v.unknown.is_none() => v.text.clone(),
            Some(Some(v)) => format!("<unknown: {}>", v.unknown.as_deref().unwrap_or("")),
            Some(None) | None => String::new(),
        };
        if ours != cmake {
            differ.push(format!(
                "{var}: cmake {cmake:?}, rocpack {ours:?}\n  {code}"
            ));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// What `project()` defines, judged by configuring the same project with CMake (a C project:
/// scripts/install-deps.sh installs gcc): the project's name, version, directories and
/// top-level flags; CMAKE_BUILD_TYPE is undefined before it and an empty cache entry after it, so a project's own default before `project()` (rocFFT's
/// `if(NOT DEFINED CMAKE_BUILD_TYPE) set(... Release CACHE ...)`) takes effect; a `-D` wins.
#[test]
fn project_defines_what_cmake_defines() {
    const PROJECT: &str = "cmake_minimum_required(VERSION 3.16)\n\
        if(DEFINED CMAKE_BUILD_TYPE)\n  set(r_before \"defined:${CMAKE_BUILD_TYPE}\")\n\
        else()\n  set(r_before undefined)\nendif()\n\
        if(NOT DEFINED CMAKE_CONFIGURATION_TYPES AND NOT DEFINED CMAKE_BUILD_TYPE AND DEFAULT_RELEASE)\n\
          set(CMAKE_BUILD_TYPE Release CACHE STRING \"\")\nendif()\n\
        project(t VERSION 1.2.3 LANGUAGES C)\n\
        if(DEFINED CMAKE_BUILD_TYPE)\n  set(r_after \"defined:${CMAKE_BUILD_TYPE}\")\n\
        else()\n  set(r_after undefined)\nendif()\n\
        set(r_project \"${PROJECT_NAME}|${CMAKE_PROJECT_NAME}|${PROJECT_VERSION}|\
        ${PROJECT_VERSION_MINOR}|${t_VERSION_PATCH}|${PROJECT_VERSION_TWEAK}|\
        ${PROJECT_IS_TOP_LEVEL}|${t_IS_TOP_LEVEL}|${PROJECT_SOURCE_DIR}|${t_SOURCE_DIR}\")\n";
    let watch = ["r_before", "r_after", "r_project"];
    for defines in [
        &[][..],
        &[("DEFAULT_RELEASE", "ON")][..],
        &[("CMAKE_BUILD_TYPE", "Debug")][..],
    ] {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir(&src).unwrap();
        let mut text = PROJECT.to_owned();
        for var in watch {
            text.push_str(&format!(
                "file(WRITE \"{}/{var}.txt\" \"${{{var}}}\")\n",
                dir.path().display()
            ));
        }
        std::fs::write(src.join("CMakeLists.txt"), &text).unwrap();
        let mut args: Vec<std::ffi::OsString> = vec![
            "-S".into(),
            src.clone().into(),
            "-B".into(),
            dir.path().join("build").into(),
        ];
        args.extend(defines.iter().map(|(k, v)| format!("-D{k}={v}").into()));
        run_cmake(args);
        let cache: Vec<(String, String)> = defines
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let run = evaluate(&src, &cache, &watch);
        for var in watch {
            let cmake = std::fs::read_to_string(dir.path().join(format!("{var}.txt"))).unwrap();
            let ours = match run.finals.get(var) {
                Some(Some(v)) if v.unknown.is_none() => v.text.clone(),
                other => format!("{other:?}"),
            };
            assert_eq!(ours, cmake, "{var} with {defines:?}");
        }
    }
}

/// Where CMake stops with an error or the input is hostile, the interpreter leaves the result
/// unknown instead: an empty regex match (CMake: "matched an empty string"), a list that would
/// grow past the value limit before it is joined, a lookup in a list whose value is unknown.
#[test]
fn what_cmake_refuses_or_cannot_know_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("CMakeLists.txt"),
        "set(r_empty_match a b)\nlist(TRANSFORM r_empty_match REPLACE \"x*\" \"-\")\n\
         string(REGEX REPLACE \"^\" \"-\" r_string_empty_match \"ab\")\n\
         string(REPEAT \";\" 1000000 r_huge)\nstring(REPEAT \"x\" 16384 op)\n\
         list(TRANSFORM r_huge APPEND \"${op}\")\n\
         string(REPEAT \"g\" 1000000 glue)\nset(l a b c d e f g h i j k l m n o p q r)\n\
         list(JOIN l \"${glue}\" r_join)\n\
         execute_process(COMMAND true OUTPUT_VARIABLE v)\n\
         set(r_get unchanged)\nlist(GET v 0 r_get)\nset(r_len unchanged)\nlist(LENGTH v r_len)\n",
    )
    .unwrap();
    let watch = [
        "r_empty_match",
        "r_string_empty_match",
        "r_huge",
        "r_join",
        "r_get",
        "r_len",
    ];
    let run = evaluate(dir.path(), &[], &watch);
    for var in watch {
        match run.finals.get(var) {
            Some(Some(v)) => assert!(v.unknown.is_some(), "{var} = {:?}", v.text),
            other => panic!("{var}: {other:?}"),
        }
    }
}
