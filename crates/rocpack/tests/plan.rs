//! `rocpack plan`: golden plans for representative requests, each checked against what the
//! knowledge base's sources say (the comments name them), and the command's errors.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{output_of, rocpack, rocpack_ok};
use serde_json::Value;

/// The JSON plan for `args`, which must plan without an open error.
fn plan_json(args: &[&str]) -> Value {
    let mut all = vec!["plan", "--format", "json"];
    all.extend_from_slice(args);
    serde_json::from_str(&rocpack_ok(&all)).unwrap()
}

fn component<'a>(plan: &'a Value, name: &str) -> &'a Value {
    plan["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not in the plan"))
}

fn in_plan(plan: &Value, name: &str) -> bool {
    plan["components"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["name"] == name)
}

fn setting<'a>(plan: &'a Value, comp: &str, name: &str) -> Option<&'a str> {
    component(plan, comp)["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .and_then(|s| s["value"].as_str())
}

fn targets(plan: &Value, comp: &str) -> Vec<String> {
    strings(&component(plan, comp)["targets"])
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

fn finding<'a>(plan: &'a Value, id: &str, comp: &str) -> Option<&'a Value> {
    plan["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id && f["component"] == comp)
}

fn built(plan: &Value, comp: &str) -> bool {
    component(plan, comp)["status"] == "build"
}

/// RX 6800/6900 (RDNA2) on ROCm 6.4.
#[test]
fn golden_rdna2_desktop() {
    let args = ["--release", "6.4", "--gpu", "gfx1030"];
    let p = plan_json(&args);
    assert_eq!(p["targets"], serde_json::json!(["gfx1030"]));
    assert_eq!(p["summary"]["errors"], 0);
    // hipBLASLt 6.4 has no gfx1030 (Gentoo's hipBLASLt-6.4.3 IUSE, PyTorch's list), and cannot be
    // configured with an empty list (TheRock): not built, and its consumers turn it off.
    assert!(!built(&p, "hipBLASLt"));
    assert_eq!(setting(&p, "rocBLAS", "BUILD_WITH_HIPBLASLT"), Some("OFF"));
    assert_eq!(setting(&p, "MIOpen", "MIOPEN_USE_HIPBLASLT"), Some("OFF"));
    assert_eq!(
        setting(&p, "MIGraphX", "MIGRAPHX_USE_HIPBLASLT"),
        Some("OFF")
    );
    // CK has no XDL/WMMA instances for gfx1030 and DL kernels are off from 6.4.1 (CK's instance
    // CMake, CK#1646, Gentoo): MIOpen is configured without CK, as TheRock and nixpkgs do.
    let ck = finding(
        &p,
        "ck-no-conv-instances-for-target-list",
        "composable_kernel",
    )
    .unwrap();
    assert_eq!(ck["status"], "resolved");
    assert_eq!(ck["resolution"], "MIOpen: MIOPEN_USE_COMPOSABLEKERNEL=OFF");
    assert_eq!(
        setting(&p, "MIOpen", "MIOPEN_USE_COMPOSABLEKERNEL"),
        Some("OFF")
    );
    assert_eq!(
        component(&p, "MIOpen")["expect_device_code"],
        serde_json::json!([])
    );
    // CK 1.2.0 reads GPU_ARCHS first; the libraries read AMDGPU_TARGETS and GPU_TARGETS.
    assert_eq!(
        setting(&p, "composable_kernel", "GPU_ARCHS"),
        Some("gfx1030")
    );
    for c in ["rocBLAS", "rocSPARSE", "rocRAND", "rocFFT", "rocSOLVER"] {
        assert_eq!(targets(&p, c), ["gfx1030"], "{c}");
        assert_eq!(setting(&p, c, "AMDGPU_TARGETS"), Some("gfx1030"), "{c}");
        assert_eq!(setting(&p, c, "GPU_TARGETS"), Some("gfx1030"), "{c}");
    }
    // MIGraphX's CK path needs CK's JIT library, which no distribution builds.
    assert_eq!(
        setting(&p, "MIGraphX", "MIGRAPHX_USE_COMPOSABLEKERNEL"),
        Some("OFF")
    );
    insta::assert_snapshot!(rocpack_ok(&[
        "plan",
        "--release",
        "6.4",
        "--gpu",
        "gfx1030"
    ]));
}

/// Only MIOpen is asked for: CK, which MIOpen would no longer use, is not pulled in, and
/// hipBLASLt (no gfx1030) is dropped from the closure with the options that needed it.
#[test]
fn rdna2_miopen_alone_leaves_ck_and_hipblaslt_out() {
    let p = plan_json(&[
        "--release",
        "6.4",
        "--gpu",
        "gfx1030",
        "--components",
        "miopen",
    ]);
    assert!(!in_plan(&p, "composable_kernel"));
    assert!(!in_plan(&p, "hipBLASLt"));
    assert!(in_plan(&p, "rocBLAS") && built(&p, "rocBLAS"));
    // MIOpen needs rocBLAS directly and through hipBLAS (and hipBLAS through rocSOLVER);
    // rocSOLVER 6.4 needs rocSPARSE only with BUILD_WITH_SPARSE, OFF for shared builds.
    assert_eq!(
        component(&p, "rocBLAS")["why"],
        "needed by rocSOLVER, hipBLAS, MIOpen"
    );
    assert!(!in_plan(&p, "rocSPARSE"));
    assert_eq!(setting(&p, "rocBLAS", "BUILD_WITH_HIPBLASLT"), Some("OFF"));
    assert_eq!(p["summary"]["errors"], 0);
}

/// DL kernels give CK conv instances for gfx1030, but MIOpen 6.4 also links
/// device_mha_operations, which needs gfx90a/gfx94x (Gentoo's MIOpen patch): still no CK.
#[test]
fn rdna2_with_dl_kernels_still_lacks_mha_instances() {
    let p = plan_json(&[
        "--release",
        "6.4",
        "--gpu",
        "gfx1030",
        "--set",
        "composable_kernel:DL_KERNELS=ON",
    ]);
    assert!(
        finding(
            &p,
            "ck-no-conv-instances-for-target-list",
            "composable_kernel"
        )
        .is_none()
    );
    let mha = finding(
        &p,
        "ck-no-mha-instances-for-miopen-6.4",
        "composable_kernel",
    )
    .unwrap();
    assert_eq!(mha["status"], "resolved");
    assert_eq!(
        setting(&p, "MIOpen", "MIOPEN_USE_COMPOSABLEKERNEL"),
        Some("OFF")
    );
    assert_eq!(setting(&p, "composable_kernel", "DL_KERNELS"), Some("ON"));
    let dl = component(&p, "composable_kernel")["kernel_families"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["family"] == "dl")
        .unwrap()
        .clone();
    assert_eq!(dl["enabled"], true);
    assert_eq!(dl["targets"], serde_json::json!(["gfx1030"]));
}

/// Asking for hipBLASLt by name on a GPU it does not support is an open error, exit 1.
#[test]
fn a_component_asked_for_by_name_is_never_dropped() {
    let mut cmd = rocpack();
    cmd.args([
        "plan",
        "--release",
        "6.4",
        "--gpu",
        "gfx1030",
        "--components",
        "hipblaslt",
    ]);
    let out = output_of(&mut cmd);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("1 open error(s)"), "{text}");
    assert!(
        text.contains("error hipblaslt-empty-target-list [hipBLASLt]"),
        "{text}"
    );
}

/// RX 7900 XTX (RDNA3) on ROCm 7.1.
#[test]
fn golden_rdna3_desktop() {
    let p = plan_json(&["--release", "7.1", "--gpu", "gfx1100"]);
    assert_eq!(p["summary"]["errors"], 0);
    // hipBLASLt 7.x TensileLite supports gfx1100 (tensilelite_supported_architectures.cmake).
    assert_eq!(targets(&p, "hipBLASLt"), ["gfx1100"]);
    assert_eq!(setting(&p, "rocBLAS", "BUILD_WITH_HIPBLASLT"), Some("ON"));
    // CK builds WMMA instances for gfx11; MIOpen links them, so libMIOpen carries gfx1100 code.
    let ck = &component(&p, "composable_kernel")["kernel_families"];
    let wmma = ck
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["family"] == "wmma")
        .unwrap();
    assert_eq!(wmma["targets"], serde_json::json!(["gfx1100"]));
    assert_eq!(
        setting(&p, "MIOpen", "MIOPEN_USE_COMPOSABLEKERNEL"),
        Some("ON")
    );
    assert_eq!(
        component(&p, "MIOpen")["expect_device_code"],
        serde_json::json!(["gfx1100"])
    );
    // hipSPARSELt is MI300-only.
    assert!(!built(&p, "hipSPARSELt"));
    insta::assert_snapshot!(rocpack_ok(&[
        "plan",
        "--release",
        "7.1",
        "--gpu",
        "gfx1100"
    ]));
}

/// The same desktop built with TheRock: gfx110X is outside TheRock's CK gate, so MIOpen is
/// configured without CK (ml-libs/CMakeLists.txt:59-72 at f366a78c, TheRock on 7.1.0's release
/// day); composable_kernel itself is still built.
#[test]
fn rdna3_with_therock_hits_the_ck_gate() {
    let p = plan_json(&[
        "--release",
        "7.1",
        "--family",
        "gfx110X-dgpu",
        "--for",
        "therock",
    ]);
    assert_eq!(p["tool"], "therock");
    assert_eq!(
        p["targets"],
        serde_json::json!(["gfx1100", "gfx1101", "gfx1102"])
    );
    assert!(built(&p, "composable_kernel"));
    assert_eq!(
        setting(&p, "MIOpen", "MIOPEN_USE_COMPOSABLEKERNEL"),
        Some("OFF")
    );
    // TheRock excludes gfx1102 from hipBLASLt (EXCLUDE_TARGET_PROJECTS in f366a78c).
    assert_eq!(targets(&p, "hipBLASLt"), ["gfx1100", "gfx1101"]);
    let ex = &component(&p, "hipBLASLt")["excluded"][0];
    assert_eq!(ex["target"], "gfx1102");
    assert!(
        ex["reason"]
            .as_str()
            .unwrap()
            .contains("EXCLUDE_TARGET_PROJECTS")
    );
}

/// An MI250X + MI300X cluster (CDNA2 + CDNA3) on ROCm 7.1.
#[test]
fn golden_cdna_cluster() {
    let p = plan_json(&["--release", "7.1", "--gpu", "gfx90a,gfx942"]);
    assert_eq!(p["summary"]["errors"], 0);
    // hipSPARSELt: gfx942 only (hipsparselt_supported_architectures.cmake).
    assert_eq!(targets(&p, "hipSPARSELt"), ["gfx942"]);
    assert_eq!(
        component(&p, "hipSPARSELt")["excluded"][0]["target"],
        "gfx90a"
    );
    // CK: XDL and MHA for both, native FP8 only on gfx942 (CK_USE_GFX94).
    let fams = component(&p, "composable_kernel")["kernel_families"]
        .as_array()
        .unwrap()
        .clone();
    let fam = |n: &str| fams.iter().find(|f| f["family"] == n).unwrap()["targets"].clone();
    assert_eq!(fam("xdl"), serde_json::json!(["gfx90a", "gfx942"]));
    assert_eq!(fam("mha"), serde_json::json!(["gfx90a", "gfx942"]));
    assert_eq!(fam("fp8_xdl"), serde_json::json!(["gfx942"]));
    assert_eq!(fam("wmma"), serde_json::json!([]));
    // rocBLAS builds two Tensile sets for gfx90a (xnack±).
    assert!(finding(&p, "rocblas-gfx90a-two-tensile-builds", "rocBLAS").is_some());
    assert_eq!(
        setting(&p, "MIOpen", "MIOPEN_USE_COMPOSABLEKERNEL"),
        Some("ON")
    );
    insta::assert_snapshot!(rocpack_ok(&[
        "plan",
        "--release",
        "7.1",
        "--gpu",
        "gfx90a,gfx942"
    ]));
}

/// A Ryzen AI Max (Strix Halo, gfx1151) APU on ROCm 7.1, with the TheRock view of RCCL.
#[test]
fn golden_apu() {
    let p = plan_json(&["--release", "7.1", "--gpu", "gfx1151"]);
    assert_eq!(p["summary"]["errors"], 0);
    assert_eq!(targets(&p, "hipBLASLt"), ["gfx1151"]);
    assert!(!built(&p, "hipSPARSELt"));
    assert_eq!(targets(&p, "RCCL"), ["gfx1151"]);
    // TheRock builds RCCL without the gfx115X iGPUs (#150): with --for therock RCCL has no
    // target left and is not built.
    let t = plan_json(&["--release", "7.1", "--gpu", "gfx1151", "--for", "therock"]);
    assert!(!built(&t, "RCCL"));
    assert!(finding(&t, "rccl-igpu-excluded-by-therock", "RCCL").is_some());
    insta::assert_snapshot!(rocpack_ok(&[
        "plan",
        "--release",
        "7.1",
        "--gpu",
        "gfx1151"
    ]));
}

/// Everything Debian sid ships (pkg-rocm-tools build-targets/sid) on ROCm 6.4: the plan's
/// target lists equal what the Debian packages carry (data/rocm-6.4.toml [[debian.packages]],
/// read with rocpack list).
#[test]
fn golden_debian_sid() {
    let p = plan_json(&["--release", "6.4", "--family", "debian-sid"]);
    assert_eq!(p["summary"]["errors"], 0);
    assert_eq!(p["families"][0]["family"], "debian-sid");
    let sid = [
        "gfx803", "gfx900", "gfx906", "gfx908", "gfx90a", "gfx1010", "gfx1030", "gfx1100",
        "gfx1101", "gfx1102",
    ];
    assert_eq!(strings(&p["targets"]), sid);
    // Debian's 6.4 libraries with device code, as scanned.
    for c in ["rocBLAS", "rocSPARSE", "rocRAND", "rocFFT", "rocSOLVER"] {
        assert_eq!(targets(&p, c), sid, "{c}");
        assert_eq!(strings(&component(&p, c)["expect_device_code"]), sid, "{c}");
    }
    // hipBLASLt's 6.4 set drops the pre-MI100 and RDNA1/2 targets.
    assert_eq!(
        targets(&p, "hipBLASLt"),
        ["gfx908", "gfx90a", "gfx1100", "gfx1101", "gfx1102"]
    );
    // CK (nixpkgs' MIOpen 6.4.3 list): no gfx803, no gfx1010.
    let ck_ex: Vec<String> = component(&p, "composable_kernel")["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["target"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ck_ex, ["gfx803", "gfx1010"]);
    insta::assert_snapshot!(rocpack_ok(&[
        "plan",
        "--release",
        "6.4",
        "--family",
        "debian-sid"
    ]));
}

/// Generic targets before 6.4: the runtime cannot load them, so no library is built for them.
#[test]
fn generic_targets_need_rocm_6_4() {
    let p = plan_json(&[
        "--release",
        "6.2",
        "--gpu",
        "gfx1030,gfx11-generic",
        "--components",
        "rocblas",
    ]);
    assert_eq!(targets(&p, "rocBLAS"), ["gfx1030"]);
    let ex = &component(&p, "rocBLAS")["excluded"][0];
    assert_eq!(ex["target"], "gfx11-generic");
    assert!(
        ex["reason"]
            .as_str()
            .unwrap()
            .contains("ROCm 6.2 compiler does not know gfx11-generic")
    );
    let f = finding(&p, "generic-target-without-runtime-fallback", "rocBLAS").unwrap();
    assert_eq!(f["status"], "resolved");
    let p = plan_json(&[
        "--release",
        "6.4",
        "--gpu",
        "gfx1030,gfx11-generic",
        "--components",
        "rocblas",
    ]);
    assert_eq!(targets(&p, "rocBLAS"), ["gfx1030", "gfx11-generic"]);
}

/// The INSTANCES_ONLY trap (CK 6.0/6.2) is an open error when the user forces it.
#[test]
fn instances_only_with_gpu_targets_is_an_open_error() {
    let mut cmd = rocpack();
    cmd.args([
        "plan",
        "--release",
        "6.2",
        "--gpu",
        "gfx1100",
        "--components",
        "ck",
        "--set",
        "composable_kernel:INSTANCES_ONLY=ON",
        "--format",
        "json",
    ]);
    let out = output_of(&mut cmd);
    assert_eq!(out.status.code(), Some(1));
    let p: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = finding(
        &p,
        "ck-instances-only-ignores-gpu-targets",
        "composable_kernel",
    )
    .unwrap();
    assert_eq!(f["status"], "open");
    assert_eq!(f["severity"], "error");
}

/// Product names and aliases work like elsewhere in rocpack.
#[test]
fn gpus_by_product_name_and_alias() {
    let p = plan_json(&[
        "--release",
        "6.4",
        "--gpu",
        "RX 6800",
        "--components",
        "rocrand",
    ]);
    assert_eq!(p["targets"], serde_json::json!(["gfx1030"]));
}

#[test]
fn bad_requests_are_usage_errors() {
    for (args, says) in [
        (vec!["--gpu", "gfx9999"], "gfx9999"),
        (
            vec!["--gpu", "gfx1030", "--release", "5.7"],
            "no knowledge of ROCm 5.7",
        ),
        (
            vec!["--family", "gfx999X-all"],
            "unknown family \"gfx999X-all\"",
        ),
        (
            vec!["--gpu", "gfx1030", "--components", "rocFOO"],
            "unknown component \"rocFOO\"",
        ),
        (
            vec!["--gpu", "gfx1030", "--set", "rocblas"],
            "COMPONENT:OPTION=VALUE",
        ),
        (vec![], "give --gpu or --family"),
        (
            vec!["--gpu", "gfx1030", "--format", "yaml"],
            "invalid value 'yaml' for '--format <FORMAT>'",
        ),
        (
            vec!["--gpu", "gfx1030", "--for", "cmak"],
            "invalid value 'cmak' for '--for <TOOL>'",
        ),
        (
            vec!["--gpu", "gfx1030", "--for", "spack", "--format", "nix"],
            "--for spack contradicts --format nix",
        ),
    ] {
        let mut cmd = rocpack();
        cmd.arg("plan").args(&args);
        let out = output_of(&mut cmd);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[test]
fn lists_components_and_families() {
    let out = rocpack_ok(&["plan", "--release", "6.4", "--list-components"]);
    assert!(out.contains("37 components in build order"), "{out}");
    assert!(out.contains("composable_kernel"), "{out}");
    let out = rocpack_ok(&["plan", "--release", "7.1", "--list-families"]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("gfx110X-dgpu") && l.ends_with("gfx1100 gfx1101 gfx1102")),
        "{out}"
    );
    assert!(out.lines().any(|l| l.starts_with("debian-sid ")), "{out}");
}

/// `-o DIR` writes each emitter's files (Gentoo's into a subdirectory) and nothing on stdout;
/// the JSON plan written there is the one `plan verify` reads.
#[test]
fn output_directory_gets_each_emitters_files() {
    let dir = tempfile::tempdir().unwrap();
    for (format, files) in [
        (
            "cmake",
            vec!["rocBLAS.cmake", "MIOpen.cmake", "composable_kernel.cmake"],
        ),
        ("spack", vec!["spack.yaml"]),
        ("gentoo", vec!["make.conf", "package.use/rocm"]),
        ("nix", vec!["rocm-overlay.nix"]),
        ("therock", vec!["therock.cmake"]),
        ("json", vec!["plan.json"]),
    ] {
        let out = dir.path().join(format);
        let stdout = rocpack_ok(&[
            "plan",
            "--release",
            "6.4",
            "--gpu",
            "gfx1030",
            "--format",
            format,
            "-q",
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(stdout, "", "{format}");
        for f in files {
            let text = std::fs::read_to_string(out.join(f))
                .unwrap_or_else(|e| panic!("{format}: {f}: {e}"));
            assert!(!text.is_empty(), "{format}: {f}");
        }
    }
    // hipBLASLt is not built for gfx1030: no initial cache for it.
    assert!(!dir.path().join("cmake/hipBLASLt.cmake").exists());
    let cache = std::fs::read_to_string(dir.path().join("cmake/rocBLAS.cmake")).unwrap();
    assert!(
        cache.contains("set(BUILD_WITH_HIPBLASLT \"OFF\" CACHE BOOL"),
        "{cache}"
    );
    let plan: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("json/plan.json")).unwrap())
            .unwrap();
    assert_eq!(plan["schema"], "rocpack-plan/1");
    // stdout JSON is one line (JSON Lines, like every --json).
    let line = rocpack_ok(&["plan", "--release", "6.4", "--gpu", "gfx1030", "--json"]);
    assert_eq!(line.lines().count(), 1);
    let from_stdout: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(from_stdout, plan);
}

/// `plan verify` on Debian sid's rocRAND 6.4.3 (network: fetched into the corpus cache): clean
/// against Debian's own list, nine targets' code unplanned against gfx1030 alone.
#[test]
fn plan_verify_on_debian_rocrand() {
    let tree = common::fetch_corpus("librocrand1");
    let dir = tempfile::tempdir().unwrap();
    let plan = |args: &[&str], name: &str| {
        let out = dir.path().join(name);
        let mut all = vec![
            "plan",
            "--release",
            "6.4",
            "--components",
            "rocRAND",
            "--format",
            "json",
            "-q",
            "-o",
        ];
        all.push(out.to_str().unwrap());
        all.extend_from_slice(args);
        rocpack_ok(&all);
        out.join("plan.json")
    };
    let sid = plan(&["--family", "debian-sid"], "sid");
    let report: Value = serde_json::from_str(&rocpack_ok(&[
        "plan",
        "verify",
        sid.to_str().unwrap(),
        tree.to_str().unwrap(),
        "--json",
    ]))
    .unwrap();
    let rocrand = report["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "rocRAND")
        .unwrap();
    assert_eq!(rocrand["missing"], serde_json::json!([]));
    assert_eq!(rocrand["unplanned"], serde_json::json!([]));
    assert_eq!(rocrand["found"].as_object().unwrap().len(), 10);

    let one = plan(&["--gpu", "gfx1030"], "one");
    let mut cmd = rocpack();
    cmd.args([
        "plan",
        "verify",
        one.to_str().unwrap(),
        tree.to_str().unwrap(),
    ]);
    let out = output_of(&mut cmd);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("1/1 found") && text.contains("9 targets"),
        "{text}"
    );

    // A plan for a GPU Debian does not build for: missing, exit 1.
    let other = plan(&["--gpu", "gfx942"], "other");
    let mut cmd = rocpack();
    cmd.args([
        "plan",
        "verify",
        other.to_str().unwrap(),
        tree.to_str().unwrap(),
    ]);
    let out = output_of(&mut cmd);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("gfx942"));
}
