//! The CMake output against what the components' real CMakeLists do with it
//! (scripts/engines/cmake/run.sh configures them; docs/plan.md, "Checked by the engines", has the
//! results). What CI can check without those sources: no initial cache writes an empty target list.
//! An empty cache entry is already defined when a CMakeLists runs, so its
//! `set(AMDGPU_TARGETS "${DEFAULT_AMDGPU_TARGETS}" CACHE STRING ...)` does nothing: rocWMMA 6.2
//! (rocm-6.2.0, 677b441c, CMakeLists.txt:95-99) then configured with `AMDGPU_TARGETS=[]`, no
//! --offload-arch on hip::device, and its 36 test and sample executables still in the build.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rocpack_plan::Tool;
use rocpack_plan::emit::emit;
use rocpack_plan::{Knowledge, Request};

/// Issue 13's requests, and the golden-plan cases of the other tests.
const REQUESTS: &[(&str, &[&str], &[&str])] = &[
    ("6.2", &["gfx1030"], &[]),
    ("6.4", &["gfx1100", "gfx90a"], &[]),
    ("7.1", &["gfx1151", "gfx1201"], &[]),
    ("6.0", &["gfx1030"], &[]),
    ("6.4", &["gfx1030"], &[]),
    ("7.1", &[], &["gfx110X-dgpu"]),
    ("6.4", &[], &["debian-sid"]),
];

fn kb() -> &'static Knowledge {
    Knowledge::embedded().unwrap()
}

#[test]
fn no_cache_writes_an_empty_target_list() {
    let mut empty_planned = 0;
    for (release, gpus, families) in REQUESTS {
        let request = Request {
            gpus: gpus.iter().map(|s| s.to_string()).collect(),
            families: families.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        let plan = rocpack_plan::plan(kb(), &request, release, Tool::Cmake).unwrap();
        let out = emit(kb(), &plan, Tool::Cmake);
        for var in ["GPU_TARGETS", "AMDGPU_TARGETS", "GPU_ARCHS", "GPU_TARGET"] {
            for (file, script) in &out.files {
                assert!(
                    !script.contains(&format!("set({var} \"\" CACHE")),
                    "{release} {gpus:?} {families:?}: {file} writes {var} empty"
                );
            }
            assert!(
                !out.stdout.contains(&format!("-D{var}:STRING= "))
                    && !out.stdout.contains(&format!("-D{var}:STRING=\n")),
                "{release} {gpus:?}: an empty -D{var} on the argument line"
            );
        }
        for c in plan
            .components
            .iter()
            .filter(|c| c.is_built() && c.targets.as_ref().is_some_and(Vec::is_empty))
        {
            empty_planned += 1;
            assert!(
                !c.settings.iter().any(|s| c.is_target_setting(s)),
                "{release} {gpus:?}: {} plans a target entry for no target",
                c.name
            );
            let note = format!("# {}: planned for no target", c.name);
            assert!(
                out.stdout.contains(&note),
                "{release} {gpus:?}: says nothing about {}'s empty plan",
                c.name
            );
            if let Some((_, script)) = out
                .files
                .iter()
                .find(|(f, _)| *f == format!("{}.cmake", c.name))
            {
                assert!(script.contains(&note), "{}.cmake: no note", c.name);
            }
        }
    }
    // rocWMMA 6.2 for gfx1030 is such a case: the check above is not vacuous.
    assert!(empty_planned > 0);
}

/// rocWMMA planned for no target at 6.0/6.2 configures with its own default list, and its tests
/// and samples (ROCWMMA_BUILD_TESTS/SAMPLES, ON, rocm-6.2.0 CMakeLists.txt:51-52) would then build
/// for nine GPUs nobody asked for: the plan turns both off, and the cache says so.
#[test]
fn rocwmma_for_no_target_turns_its_tests_and_samples_off() {
    for release in ["6.0", "6.2"] {
        let request = Request {
            gpus: vec!["gfx1030".into()],
            ..Default::default()
        };
        let plan = rocpack_plan::plan(kb(), &request, release, Tool::Cmake).unwrap();
        let wmma = plan
            .components
            .iter()
            .find(|c| c.name == "rocWMMA")
            .unwrap();
        assert!(wmma.targets.as_ref().is_some_and(Vec::is_empty));
        for option in ["ROCWMMA_BUILD_TESTS", "ROCWMMA_BUILD_SAMPLES"] {
            assert!(
                wmma.settings
                    .iter()
                    .any(|s| s.name == option && s.value == "OFF"),
                "{release}: {option} not turned off: {:?}",
                wmma.settings
            );
        }
        let out = emit(kb(), &plan, Tool::Cmake);
        assert!(
            out.stdout
                .contains("which the settings below turn off\n-DROCWMMA_BUILD_SAMPLES:BOOL=OFF -DROCWMMA_BUILD_TESTS:BOOL=OFF"),
            "{release}: {}",
            out.stdout
        );
    }
    // With a target rocWMMA supports, its tests build for it and stay on.
    let request = Request {
        gpus: vec!["gfx1100".into()],
        ..Default::default()
    };
    let plan = rocpack_plan::plan(kb(), &request, "6.2", Tool::Cmake).unwrap();
    let wmma = plan
        .components
        .iter()
        .find(|c| c.name == "rocWMMA")
        .unwrap();
    assert!(
        !wmma
            .settings
            .iter()
            .any(|s| s.name == "ROCWMMA_BUILD_TESTS")
    );
}
