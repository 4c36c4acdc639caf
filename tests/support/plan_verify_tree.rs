//! The fixture install `plan verify` is tested on, built in a temporary directory from the
//! repository's small code-object fixtures (tests/fixtures, built by
//! tests/fixtures/make-fixtures.sh; their code objects and sizes are listed in
//! tests/fixtures/listings.txt). One definition, compiled into the library's tests
//! (crates/rocpack-plan/tests/verify_fixtures.rs) and the command line's
//! (crates/rocpack/tests/plan_verify.rs) with `#[path]`:
//!
//! | fixture | device code (bytes) |
//! |---|---|
//! | `lib3tu-lld.so` | gfx1030 6000, gfx90a:xnack+ 6832, gfx1100 4720, gfx906:sramecc-:xnack- 4248, gfx942 6952 |
//! | `tu1.hipfb` | gfx1030 6000, gfx90a:xnack+ 6832 |
//! | `tu1-gfx1030.hipfb` | gfx1030 6000 |
//! | `lib2tu-compressed.so` | (CCOB v2 zstd) gfx1030 6000, gfx90a:xnack+ 6832, gfx942 6952 |
//! | `libhost.a` | gfx1030 6000, gfx90a:xnack+ 6832, gfx1100 4720, gfx906:sramecc-:xnack- 4248 |
//! | `gfx90a-xnack+.co`, `gfx90a-xnack-.co` | 7016 each |
//! | `gfx1100.hsaco` | gfx1100 6632 |

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/bin")
        .join(name)
}

/// Copies a fixture to `root/rel`, creating directories.
pub fn put(root: &Path, rel: &str, fixture_name: &str) {
    let to = root.join(rel);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(fixture(fixture_name), &to).unwrap();
}

/// Writes `len` bytes of fake data (a Tensile `.dat` is msgpack; its content does not matter).
pub fn fake(root: &Path, rel: &str, len: usize) {
    let to = root.join(rel);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::write(&to, vec![0x82u8; len]).unwrap();
}

pub fn link(root: &Path, rel: &str, target: &str) {
    let at = root.join(rel);
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    symlink(target, at).unwrap();
}

/// The install: rocRAND, rocBLAS (with Tensile data), rocSPARSE, rocFFT, hipBLAS,
/// composable_kernel, and a file no component owns, under `root` in the ROCm layout.
pub fn rocm_tree(root: &Path) {
    // rocRAND: the real file and its two links.
    put(root, "lib/librocrand.so.1.1", "lib3tu-lld.so");
    link(root, "lib/librocrand.so.1", "librocrand.so.1.1");
    link(root, "lib/librocrand.so", "librocrand.so.1");
    // rocBLAS: a library plus Tensile data, gfx90a split into xnack+ and xnack-.
    put(root, "lib/librocblas.so.4.4", "tu1.hipfb");
    let lib = "lib/rocblas/library";
    put(
        root,
        &format!("{lib}/Kernels.so-000-gfx90a-xnack+.hsaco"),
        "gfx90a-xnack+.co",
    );
    put(
        root,
        &format!("{lib}/Kernels.so-000-gfx90a-xnack-.hsaco"),
        "gfx90a-xnack-.co",
    );
    put(
        root,
        &format!("{lib}/TensileLibrary_Type_HH_Contraction_l_Alik_Bjlk_Cijk_Dijk_gfx1100.co"),
        "gfx1100.hsaco",
    );
    fake(
        root,
        &format!("{lib}/TensileLibrary_Type_HH_Contraction_l_Alik_Bjlk_Cijk_Dijk_gfx90a.dat"),
        1000,
    );
    fake(
        root,
        &format!("{lib}/TensileLibrary_Type_HH_Contraction_l_Alik_Bjlk_Cijk_Dijk_gfx1030.dat"),
        500,
    );
    fake(
        root,
        &format!("{lib}/TensileLibrary_Type_HH_Contraction_l_Alik_Bjlk_Cijk_Dijk_fallback.dat"),
        300,
    );
    // rocSPARSE built for gfx1030 only.
    put(root, "lib/librocsparse.so.1.0", "tu1-gfx1030.hipfb");
    // rocFFT with compressed bundles.
    put(root, "lib/librocfft.so.0.1", "lib2tu-compressed.so");
    // hipBLAS: host code (not read).
    fake(root, "lib/libhipblas.so.2.4", 4096);
    // composable_kernel instance library with code for every target of the fixture.
    put(root, "lib/libdevice_gemm_operations.a", "libhost.a");
    // Not matched by any glob.
    put(root, "lib/libunrelated.so", "lib3tu-lld.so");
    fake(root, "include/rocblas/rocblas.h", 10);
}

/// The components of the plan the fixture install is checked against.
pub const COMPONENTS: &[&str] = &[
    "rocRAND",
    "rocBLAS",
    "rocSPARSE",
    "rocFFT",
    "hipBLAS",
    "composable_kernel",
    "hipBLASLt",
];

/// The GPUs, and the one `--set`, of that plan (release 6.4).
pub const GPUS: &[&str] = &["gfx1030", "gfx90a"];
pub const SET: &[&str] = &["hipBLAS:BUILD_WITH_SOLVER=OFF"];
