//! `plan verify` on real Debian sid packages (network: scripts/fetch-corpus.sh downloads them
//! once into ~/.cache/rocpack-corpus, about 1.3 GB of .debs, 5.6 GB unpacked, each package in
//! its own directory; the prefixes together are one install).
//!
//! Debian builds its ROCm 6.4 libraries for pkg-rocm-tools' sid list (ten targets); a plan of
//! the `debian-sid` family with the options Debian used must find every planned target, and a
//! plan for gfx1030 alone must report the nine others as unplanned, with what they cost.
//! Run with `--nocapture` to see the measured bytes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use rocpack_plan::kb::{FileRole, Layout};
use rocpack_plan::verify::{Attribution, ComponentState, Report, Status, verify};
use rocpack_plan::{Knowledge, Plan, Request, Tool, plan};

const PACKAGES: &[&str] = &[
    "librocrand1",
    "librocsparse1",
    "librocblas4",
    "librocfft0",
    "libhipblas2",
    "libhiprand1",
    "libhipfft0",
    "libhipsparse1",
    "libmiopen1",
];

/// The components those packages hold.
const COMPONENTS: &[&str] = &[
    "rocBLAS",
    "rocSPARSE",
    "rocRAND",
    "rocFFT",
    "hipBLAS",
    "hipRAND",
    "hipFFT",
    "hipSPARSE",
    "MIOpen",
];

/// The compiled libraries among them.
const COMPILED: &[&str] = &["rocBLAS", "rocSPARSE", "rocRAND", "rocFFT"];

/// How Debian configured them (readelf -d: libMIOpen needs neither CK nor hipBLASLt, librocblas
/// no hipBLASLt, libhipblas no rocSOLVER, librocsparse no rocBLAS).
const SET: &[&str] = &[
    "MIOpen:MIOPEN_USE_COMPOSABLEKERNEL=OFF",
    "MIOpen:MIOPEN_USE_HIPBLASLT=OFF",
    "rocBLAS:BUILD_WITH_HIPBLASLT=OFF",
    "hipBLAS:BUILD_WITH_SOLVER=OFF",
    "rocSPARSE:BUILD_WITH_ROCBLAS=OFF",
];

/// Runs scripts/fetch-corpus.sh for every package (exit status 3: the Debian mirror cannot be
/// reached) and returns the unpacked directories, one per package.
fn prefixes() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/fetch-corpus.sh");
        let what = format!("fetch-corpus.sh {}", PACKAGES.join(" "));
        let out = Command::new("bash")
            .arg(&script)
            .args(PACKAGES)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) => {}
            Some(3) => panic!("network needed: cannot reach the Debian mirror ({what})\n{stderr}"),
            _ => panic!("{what} failed with {}:\n{stderr}", out.status),
        }
        let dirs: Vec<PathBuf> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| PathBuf::from(l.trim()))
            .collect();
        assert_eq!(dirs.len(), PACKAGES.len(), "{what} printed {dirs:?}");
        for d in &dirs {
            assert!(d.is_dir(), "{} is not a directory", d.display());
        }
        dirs
    })
}

fn kb() -> &'static Knowledge {
    Knowledge::embedded().unwrap()
}

fn debian_plan(gpus: &[&str], families: &[&str]) -> Plan {
    let kb = kb();
    let request = Request {
        gpus: gpus.iter().map(|s| (*s).to_owned()).collect(),
        families: families.iter().map(|s| (*s).to_owned()).collect(),
        components: Some(COMPONENTS.iter().map(|s| (*s).to_owned()).collect()),
        set: SET
            .iter()
            .map(|s| rocpack_plan::planner::parse_set(kb, s).unwrap())
            .collect(),
    };
    plan(kb, &request, "6.4", Tool::Cmake).unwrap()
}

fn run(plan: &Plan) -> Report {
    let prefixes = prefixes();
    let started = std::time::Instant::now();
    let report = verify(kb(), plan, prefixes, None, None).unwrap();
    println!(
        "{}\n(verify took {:.2?})\n",
        serde_json::to_string(&report.summary).unwrap(),
        started.elapsed()
    );
    for c in &report.components {
        if c.state == ComponentState::Installed {
            println!(
                "{:10} files {:5} bytes {:>12} device {:>12} unplanned {:>12} found {:?}",
                c.name,
                c.files,
                c.bytes,
                c.found.values().sum::<u64>(),
                c.unplanned_bytes,
                c.found
            );
        }
    }
    report
}

const SID: &[&str] = &[
    "gfx803", "gfx900", "gfx906", "gfx908", "gfx90a", "gfx1010", "gfx1030", "gfx1100", "gfx1101",
    "gfx1102",
];

#[test]
fn debian_sid_plan_finds_every_planned_target() {
    let report = run(&debian_plan(&[], &["debian-sid"]));
    assert_eq!(report.layout, Layout::Debian);
    assert!(report.layout_detected);
    assert!(report.problems.is_empty(), "{:#?}", report.problems);
    for name in COMPONENTS {
        let c = report.component(name).unwrap();
        assert_eq!(c.state, ComponentState::Installed, "{name}");
        assert!(c.missing.is_empty(), "{name} misses {:?}", c.missing);
        assert!(c.unplanned.is_empty(), "{name}: {:?}", c.unplanned);
    }
    for c in &report.components {
        assert!(c.missing.is_empty(), "{} misses {:?}", c.name, c.missing);
        assert_ne!(c.state, ComponentState::Absent, "{}", c.name);
    }
    for name in COMPILED {
        let c = report.component(name).unwrap();
        let found: Vec<&str> = c.found.keys().map(String::as_str).collect();
        let mut sid = SID.to_vec();
        sid.sort_unstable();
        assert_eq!(found, sid, "{name}");
        assert!(c.found.values().all(|&b| b > 0), "{name}: {:?}", c.found);
    }
    // Host-only libraries and MIOpen without CK carry no device code.
    for name in ["hipBLAS", "hipRAND", "hipFFT", "hipSPARSE", "MIOpen"] {
        assert!(report.component(name).unwrap().found.is_empty(), "{name}");
    }

    // rocBLAS builds Tensile twice for gfx90a (xnack+ and xnack-): both count as gfx90a.
    let rocblas = report.component("rocBLAS").unwrap();
    let xnack: Vec<_> = rocblas
        .paths
        .iter()
        .filter(|f| f.path.contains("gfx90a-xnack"))
        .collect();
    assert!(xnack.len() >= 2, "no gfx90a-xnack± Tensile files");
    for f in &xnack {
        assert_eq!(f.role, FileRole::DeviceData, "{}", f.path);
        assert_eq!(f.attribution, Attribution::CodeObjects, "{}", f.path);
        assert_eq!(
            f.device.keys().collect::<Vec<_>>(),
            ["gfx90a"],
            "{}",
            f.path
        );
    }
    let xnack_bytes: u64 = xnack.iter().flat_map(|f| f.device.values()).sum();
    assert!(rocblas.found["gfx90a"] > xnack_bytes);
    // Tensile's per-architecture .dat indexes count by their names.
    assert!(
        rocblas
            .paths
            .iter()
            .any(|f| f.path.ends_with("_gfx90a.dat") && f.attribution == Attribution::FileName)
    );
    // The versioned soname link is the same file.
    let lib = rocblas
        .paths
        .iter()
        .find(|f| f.role == FileRole::DeviceLibrary)
        .unwrap();
    assert!(lib.path.ends_with("librocblas.so.4.4"), "{}", lib.path);
    assert!(lib.links.iter().any(|l| l.ends_with("librocblas.so.4")));
    assert_eq!(report.status(), Status::Clean);
}

#[test]
fn gfx1030_plan_reports_the_other_sid_targets_as_unplanned() {
    let report = run(&debian_plan(&["gfx1030"], &[]));
    assert!(report.problems.is_empty(), "{:#?}", report.problems);
    let mut others: Vec<&str> = SID.iter().copied().filter(|t| *t != "gfx1030").collect();
    others.sort_unstable();
    for name in COMPILED {
        let c = report.component(name).unwrap();
        assert!(c.missing.is_empty(), "{name} misses {:?}", c.missing);
        let mut unplanned: Vec<&str> = c.unplanned.iter().map(|u| u.processor.as_str()).collect();
        unplanned.sort_unstable();
        assert_eq!(unplanned, others, "{name}");
        assert!(c.unplanned.iter().all(|u| u.bytes > 0), "{name}");
    }
    let sparse = report.component("rocSPARSE").unwrap();
    assert_eq!(sparse.unplanned.len(), 9);
    // Nine of ten targets are most of the library.
    assert!(sparse.unplanned_bytes > 8 * sparse.found["gfx1030"]);
    assert!(sparse.unplanned_bytes < sparse.bytes);
    assert_eq!(report.status(), Status::Clean);
}
