//! The HIP toolchain of an install prefix, checked without executing anything in it: where each
//! clang looks for its resource directory, where it looks for the AMDGPU device libraries, and
//! whether the hip and hip-lang CMake configs agree with each other and with what is installed.
//!
//! ```no_run
//! use std::collections::BTreeSet;
//! use std::path::Path;
//! use rocpack_verify::toolchain::{check, ToolchainOptions};
//!
//! let processors: BTreeSet<String> = ["gfx90a".to_owned(), "gfx1030".to_owned()].into();
//! let report = check(&ToolchainOptions {
//!     prefix: Path::new("/opt/rocm"),
//!     root: None,
//!     processors: &processors,
//! });
//! for f in &report.findings {
//!     println!("{}: {} ({})", f.code, f.message, f.file.display());
//! }
//! ```
//!
//! # The rules, and where they come from
//!
//! Everything below was read from LLVM's and ROCm's sources; the functions are named so that a
//! reader can check them against a newer release.
//!
//! - **What clang takes as its own path.** `clang/tools/driver/driver.cpp` `GetExecutablePath`:
//!   unless `-no-canonical-prefixes` is given it returns `llvm::sys::fs::getMainExecutable`, which
//!   on Linux is `realpath(readlink("/proc/self/exe"))` — the real binary with every symlink
//!   resolved, not the name it was invoked by. So `bin/amdclang++ -> ../lib/llvm/bin/clang` computes
//!   everything from `lib/llvm/bin`. Only with `-no-canonical-prefixes` is the invoked path used;
//!   this checker models the default.
//! - **The resource directory.** `clang/lib/Driver/Driver.cpp` `Driver::GetResourcesPath`: `<dir of
//!   the binary>/../lib/clang/<CLANG_VERSION_MAJOR_STRING>` unless the build set
//!   `CLANG_RESOURCE_DIR` (a path relative to the binary's directory; no distribution we know of sets
//!   it). Before LLVM 16 the last component was `CLANG_VERSION_STRING` (`15.0.7`); LLVM 16 switched
//!   to the major version only (D125860). ROCm's fork of LLVM 16/17 (ROCm 5.5–6.1) followed at a
//!   release we could not pin down, so for those both names are accepted. `lib` is
//!   `CLANG_INSTALL_LIBDIR_BASENAME` (`lib64` on builds with `LLVM_LIBDIR_SUFFIX=64`).
//! - **Where device libraries are looked for.** `clang/lib/Driver/ToolChains/AMDGPU.cpp`
//!   `RocmInstallationDetector::detectDeviceLibrary` and `getInstallationPathCandidates` (upstream
//!   main, 2025): without `--rocm-device-lib-path`, `HIP_DEVICE_LIB_PATH`, `--rocm-path` or
//!   `ROCM_PATH`, clang tries `<resource dir>/lib/amdgcn/bitcode`, then `<candidate>/amdgcn/bitcode`
//!   for the candidates: the ROCm root deduced from the binary's directory (`bin/..`, and one more
//!   level for `llvm`/`aomp*`, and one more for `lib` — the `lib/llvm/bin` layout of ROCm ≥ 6.2,
//!   llvm/llvm-project#138928), the clang root `bin/..`, the resource directory, `/opt/rocm`, the
//!   newest `/opt/rocm-*`, `/usr/local`, `/usr` (all under `--sysroot`). It uses the *first*
//!   directory that holds the generic libraries (`ocml.bc`, `ockl.bc`, …) and at least one
//!   `oclc_isa_version_*.bc` (`CheckDeviceLib`, `allGenericLibsValid`), and later errors when that
//!   directory has no `oclc_isa_version_<gfx>.bc` for a target.
//! - **Which file a processor needs.** `RocmInstallationDetector::scanLibDevicePath` maps
//!   `oclc_isa_version_<X>.bc` to the processor `gfx<X>`, so `gfx90a` needs
//!   `oclc_isa_version_90a.bc` and the generic `gfx9-generic` needs
//!   `oclc_isa_version_9-generic.bc` (Debian's `rocm-device-libs-21` ships both). Target-ID
//!   features (`:xnack+`) do not change the file.
//! - **Which clang hipcc runs.** ROCm's `amd/hipcc/src/hipBin_amd.h`
//!   `HipBinAmd::constructCompilerPath`: `$HIP_CLANG_PATH`, else `<ROCM_PATH>/lib/llvm/bin` when it
//!   exists, else the build-time `HIPCC_DEFAULT_HIP_CLANG_PATH` (Debian's hipcc carries
//!   `lib/llvm-21/bin`); `getHipCC` runs `clang++` there, or `clang` when `clang++` is missing.
//!   The old Perl hipcc used `$ROCM_PATH/llvm/bin`.
//! - **Where the device libraries are installed** (checked against packages): ROCm ≤ 6.1
//!   `<rocm>/amdgcn/bitcode`; ROCm ≥ 6.2 `<rocm>/lib/llvm/lib/clang/<N>/lib/amdgcn/bitcode` (with
//!   `llvm -> lib/llvm` left as a compatibility link); TheRock `<rocm>/lib/llvm/amdgcn/bitcode`;
//!   Debian sid `rocm-device-libs-21` `/usr/lib/llvm-21/lib/clang/21/amdgcn/bitcode` (the resource
//!   directory itself, found through the resource-directory candidate); Fedora
//!   `/usr/lib/clang/<N>/amdgcn/bitcode`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::finding::{Code, Finding, Severity};
use rocpack_scan::sysroot::{absolute, resolve_in_root};

/// What to check.
#[derive(Debug, Clone, Copy)]
pub struct ToolchainOptions<'a> {
    /// The install prefix as a path on this machine (`/opt/rocm-6.4.0`, or `<root>/usr`).
    pub prefix: &'a Path,
    /// The system root the prefix is installed in, when it is not `/`: absolute symlink targets
    /// and the system directories clang searches (`/opt/rocm`, `/usr`) are taken inside it.
    pub root: Option<&'a Path>,
    /// GPU processors the prefix's libraries carry code for, e.g. "gfx1030", "gfx90a",
    /// "gfx9-generic" (the caller collects them). Target-ID features after a `:` are ignored.
    pub processors: &'a BTreeSet<String>,
}

/// What the checks found: problems, and what is installed, for the text report.
#[derive(Debug, Clone, Default)]
pub struct ToolchainReport {
    pub findings: Vec<Finding>,
    /// Every clang binary the prefix's drivers lead to, one per real binary.
    pub clangs: Vec<ClangInstall>,
    /// Directories that hold AMDGPU device-library bitcode (`*.bc`), wherever they are.
    pub device_lib_dirs: Vec<PathBuf>,
    /// hip and hip-lang CMake packages, one entry per package found.
    pub hip_configs: Vec<HipConfig>,
    /// `bin/hipcc` (and `bin/hipconfig` is not listed: it is the same program).
    pub hipcc: Vec<PathBuf>,
    /// The ROCm release from `<prefix>/.info/version`, when present.
    pub rocm_version: Option<String>,
    /// Whether the prefix holds a HIP toolchain (hipcc, a hip-lang config, or ROCm's own clang):
    /// only then are device libraries required.
    pub hip_toolchain: bool,
}

/// One clang binary and what it will look for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClangInstall {
    /// The paths that lead to it: drivers in the prefix (`bin/amdclang++`, `lib/llvm/bin/clang`)
    /// and, for hipcc, the compiler hipcc runs.
    pub drivers: Vec<PathBuf>,
    /// The binary with every symlink resolved: the path clang computes everything from.
    pub binary: PathBuf,
    pub version: Option<ClangVersion>,
    /// The file (or directory name) the version was read from.
    pub version_source: Option<PathBuf>,
    /// Whether it is ROCm's own clang (ROCm's `llvm/` or `lib/llvm/` layout, an `amdclang*` name).
    pub rocm: bool,
    /// Whether the prefix's hipcc runs it.
    pub run_by_hipcc: bool,
    /// Whether it is checked as a HIP compiler (device libraries required).
    pub hip: bool,
    /// The resource directory it computes (whether or not it exists), when the version is known.
    pub resource_dir: Option<PathBuf>,
    /// Whether that directory and its headers are there.
    pub resource_dir_ok: bool,
    /// Where it looks for device libraries, in its order.
    pub device_lib_search: Vec<PathBuf>,
    /// The first of those it accepts, which is the one it links from.
    pub device_lib_dir: Option<PathBuf>,
}

/// A clang version as far as it is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ClangVersion {
    pub major: u32,
    /// Minor and patch, when known (`17.0.6`); a directory name such as `llvm-17` gives only the major.
    pub minor_patch: Option<(u32, u32)>,
}

impl ClangVersion {
    /// `X.Y.Z`, when minor and patch are known.
    pub fn full(&self) -> Option<String> {
        self.minor_patch
            .map(|(minor, patch)| format!("{}.{minor}.{patch}", self.major))
    }
}

impl std::fmt::Display for ClangVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.full() {
            Some(full) => f.write_str(&full),
            None => write!(f, "{}", self.major),
        }
    }
}

/// One hip or hip-lang CMake package.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HipConfig {
    /// `hip` or `hip-lang`.
    pub package: &'static str,
    /// The package's directory (`lib/cmake/hip-lang`).
    pub dir: PathBuf,
    /// `<package>-config.cmake`, when present.
    pub config: Option<PathBuf>,
    /// `PACKAGE_VERSION` of `<package>-config-version.cmake`, when present.
    pub version: Option<String>,
}

/// Runs the three checks.
///
/// Never fails: a file that cannot be read becomes a finding and the rest goes on.
pub fn check(opts: &ToolchainOptions) -> ToolchainReport {
    let tree = Tree::new(opts.root);
    let prefix = absolute(opts.prefix);
    let mut report = ToolchainReport {
        rocm_version: read_first_line(&prefix.join(".info/version")),
        ..ToolchainReport::default()
    };

    let hipcc = prefix.join("bin/hipcc");
    let has_hipcc = tree.real(&hipcc).is_some_and(|p| p.is_file());
    if has_hipcc {
        report.hipcc.push(hipcc.clone());
    }
    let cmake_dirs = cmake_dirs(&tree, &prefix);
    report.hip_configs = hip_configs(&cmake_dirs);
    let has_hip_lang = report
        .hip_configs
        .iter()
        .any(|c| c.package == "hip-lang" && c.config.is_some());

    let drivers = find_drivers(
        &tree,
        &prefix,
        has_hipcc.then_some(hipcc.as_path()),
        &mut report,
    );
    for (binary, ds) in drivers {
        report.clangs.push(describe_clang(&tree, binary, ds));
    }

    report.hip_toolchain = has_hipcc || has_hip_lang || report.clangs.iter().any(|c| c.rocm);
    // Device libraries are required of ROCm's clangs and of the one hipcc runs; when the prefix
    // has a HIP toolchain but neither (only a hip-lang config), of every clang found.
    let any_hip = report.clangs.iter().any(|c| c.rocm || c.run_by_hipcc);
    for c in &mut report.clangs {
        c.hip = c.rocm || c.run_by_hipcc || (report.hip_toolchain && !any_hip);
    }

    for i in 0..report.clangs.len() {
        let findings = check_resource_dir(&tree, &prefix, &mut report.clangs, i);
        report.findings.extend(findings);
    }
    for c in &mut report.clangs {
        c.device_lib_search = device_lib_search(&tree, c);
        c.device_lib_dir = c
            .device_lib_search
            .iter()
            .find(|d| accepted_device_lib_dir(&tree, d))
            .cloned();
    }
    report.device_lib_dirs = discover_bitcode_dirs(&tree, &prefix, &report.clangs);
    if report.hip_toolchain {
        let findings = check_device_libs(&tree, &prefix, &report, opts.processors);
        report.findings.extend(findings);
    }
    let findings = check_hip_configs(&tree, &prefix, &cmake_dirs, &report);
    report.findings.extend(findings);
    report
}

// ------------------------------------------------------------------------------------------------
// Paths inside an optional root
// ------------------------------------------------------------------------------------------------

/// The file system as the installed system sees it: absolute symlink targets and system
/// directories are taken inside `root`.
struct Tree {
    root: PathBuf,
}

impl Tree {
    fn new(root: Option<&Path>) -> Self {
        Tree {
            root: root.map_or_else(|| PathBuf::from("/"), absolute),
        }
    }

    /// A system path (`/opt/rocm`) inside the root.
    fn sys(&self, abs: &str) -> PathBuf {
        self.root.join(abs.trim_start_matches('/'))
    }

    /// `path` with every symlink resolved, like realpath(3), absolute targets re-rooted and `..`
    /// kept inside the root. `None` when a component is missing or the links loop.
    fn real(&self, path: &Path) -> Option<PathBuf> {
        let Ok(rel) = path.strip_prefix(&self.root) else {
            // Outside the root (a prefix given beside it): the host resolves it.
            return fs::canonicalize(path).ok();
        };
        resolve_in_root(&self.root, &Path::new("/").join(rel))
    }

    fn is_dir(&self, path: &Path) -> bool {
        self.real(path).is_some_and(|p| p.is_dir())
    }

    fn is_file(&self, path: &Path) -> bool {
        self.real(path).is_some_and(|p| p.is_file())
    }

    /// Whether a directory entry of that name exists, even as a dangling symlink.
    fn has_entry(&self, path: &Path) -> bool {
        match (path.parent().and_then(|d| self.real(d)), path.file_name()) {
            (Some(dir), Some(name)) => fs::symlink_metadata(dir.join(name)).is_ok(),
            _ => false,
        }
    }

    /// Entry names of a directory, sorted; empty when it cannot be read.
    fn entries(&self, dir: &Path) -> Vec<String> {
        let Some(real) = self.real(dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = fs::read_dir(real)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        names
    }
}

/// `..` and `.` removed lexically, as CMake's `get_filename_component(... ABSOLUTE)` does.
fn normalize(path: &Path) -> PathBuf {
    let lexical = rocpack_scan::sysroot::lexical(path);
    if path.has_root() {
        Path::new("/").join(lexical)
    } else {
        lexical
    }
}

fn read_first_line(path: &Path) -> Option<String> {
    let text = rocpack_scan::read_regular_to_string(path).ok()?;
    let line = text.lines().next()?.trim();
    (!line.is_empty()).then(|| line.to_owned())
}

// ------------------------------------------------------------------------------------------------
// Finding the clangs
// ------------------------------------------------------------------------------------------------

/// `clang`, `clang++`, `clang-17`, `clang++-17`, `amdclang`, `amdclang++`.
fn is_clang_driver_name(name: &str) -> bool {
    let name = name.strip_prefix("amd").unwrap_or(name);
    let Some(rest) = name.strip_prefix("clang") else {
        return false;
    };
    let rest = rest.strip_prefix("++").unwrap_or(rest);
    match rest.strip_prefix('-') {
        None => rest.is_empty(),
        Some(num) => !num.is_empty() && num.bytes().all(|b| b.is_ascii_digit()),
    }
}

/// The LLVM trees a prefix may hold: ROCm's `llvm/` (≤ 6.1, a link to `lib/llvm` after) and
/// `lib/llvm/` (≥ 6.2, TheRock), Debian's `lib/llvm-NN/`, and the prefix itself (a plain LLVM
/// install, Fedora's `/usr`).
fn llvm_roots(tree: &Tree, prefix: &Path) -> Vec<(PathBuf, bool)> {
    let mut roots = vec![(prefix.join("llvm"), true), (prefix.join("lib/llvm"), true)];
    for name in tree.entries(&prefix.join("lib")) {
        if name
            .strip_prefix("llvm-")
            .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        {
            roots.push((prefix.join("lib").join(name), false));
        }
    }
    roots.push((prefix.to_path_buf(), false));
    roots
}

/// Drivers grouped by the real binary they lead to, in the order first seen. ROCm layouts first,
/// so that a binary reached through both `bin/amdclang++` and `lib/llvm/bin/clang` is described
/// from its layout.
fn find_drivers(
    tree: &Tree,
    prefix: &Path,
    hipcc: Option<&Path>,
    report: &mut ToolchainReport,
) -> Vec<(PathBuf, Vec<Driver>)> {
    let mut found: Vec<Driver> = Vec::new();
    for (root, rocm_layout) in llvm_roots(tree, prefix) {
        if root == prefix {
            continue;
        }
        for name in ["clang", "clang++"] {
            let p = root.join("bin").join(name);
            if tree.has_entry(&p) {
                found.push(Driver {
                    path: p,
                    rocm: rocm_layout,
                    hipcc: false,
                });
            }
        }
    }
    let bin = prefix.join("bin");
    for name in tree.entries(&bin) {
        if is_clang_driver_name(&name) {
            found.push(Driver {
                path: bin.join(&name),
                rocm: name.starts_with("amd"),
                hipcc: false,
            });
        }
    }
    if let Some(hipcc) = hipcc {
        match hipcc_clang(tree, prefix, hipcc) {
            Some(p) => found.push(Driver {
                path: p,
                rocm: false,
                hipcc: true,
            }),
            None => report.findings.push(
                Finding::new(
                    Code::ClangResourceDir,
                    hipcc,
                    "hipcc has no clang to run: none of the directories it takes clang from holds clang++ or clang".to_owned(),
                )
                .hint(format!(
                    "hipcc runs <ROCM_PATH>/lib/llvm/bin/clang++ when that directory exists, else its built-in HIP_CLANG_PATH ({}); set HIP_CLANG_PATH or install the clang it expects",
                    hipcc_clang_dirs(tree, prefix, hipcc)
                        .iter()
                        .map(|d| d.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            ),
        }
    }

    let mut groups: Vec<(PathBuf, Vec<Driver>)> = Vec::new();
    for d in found {
        let Some(real) = tree.real(&d.path).filter(|p| p.is_file()) else {
            report.findings.push(
                Finding::new(
                    Code::UnreadableFile,
                    &d.path,
                    format!("clang driver {} does not lead to a file", d.path.display()),
                )
                .hint("a dangling symlink, or a link loop: the compiler cannot be run through this name"),
            );
            continue;
        };
        match groups.iter_mut().find(|(b, _)| *b == real) {
            Some((_, ds)) => match ds.iter_mut().find(|x| x.path == d.path) {
                Some(x) => {
                    x.rocm |= d.rocm;
                    x.hipcc |= d.hipcc;
                }
                None => ds.push(d),
            },
            None => groups.push((real, vec![d])),
        }
    }
    groups
}

struct Driver {
    path: PathBuf,
    /// Reached through a ROCm layout or an `amdclang*` name.
    rocm: bool,
    /// The compiler hipcc runs.
    hipcc: bool,
}

/// The directories hipcc takes clang from, in its order (see the module docs).
fn hipcc_clang_dirs(tree: &Tree, prefix: &Path, hipcc: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![prefix.join("lib/llvm/bin")];
    if let Some(real) = tree.real(hipcc) {
        for s in embedded_clang_dirs(&real) {
            let p = if s.starts_with('/') {
                tree.sys(&s)
            } else {
                prefix.join(&s)
            };
            if !dirs.contains(&p) {
                dirs.push(p);
            }
        }
    }
    let legacy = prefix.join("llvm/bin");
    if !dirs.contains(&legacy) {
        dirs.push(legacy);
    }
    dirs
}

/// The clang hipcc would run: a symlink straight to a clang, else `clang++` (or `clang`) in the
/// first of its directories that exists.
fn hipcc_clang(tree: &Tree, prefix: &Path, hipcc: &Path) -> Option<PathBuf> {
    if let Ok(target) = fs::read_link(hipcc) {
        if target
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(is_clang_driver_name)
        {
            return Some(hipcc.to_path_buf());
        }
    }
    for dir in hipcc_clang_dirs(tree, prefix, hipcc) {
        if !tree.is_dir(&dir) {
            continue;
        }
        // hipBin_amd.h getHipCC: clang++, or clang when clang++ is missing.
        for name in ["clang++", "clang"] {
            let p = dir.join(name);
            if tree.is_file(&p) {
                return Some(p);
            }
        }
        return None;
    }
    None
}

/// Largest hipcc we read for its built-in clang directory.
const MAX_HIPCC_BYTES: usize = 64 << 20;

/// `llvm-NN/bin` directories named inside hipcc (a C++ binary built with
/// `HIPCC_DEFAULT_HIP_CLANG_PATH`, or a Perl script): the whole NUL-, quote- or space-delimited
/// string around each `llvm-` that is followed by digits and `/bin`.
fn embedded_clang_dirs(hipcc: &Path) -> Vec<String> {
    // A file cut short while it is read gives no directories rather than zeros read as bytes.
    rocpack_scan::Mapped::with_file(hipcc, |map| {
        clang_dirs_in(map.get(..map.len().min(MAX_HIPCC_BYTES)).unwrap_or(&[]))
    })
    .unwrap_or_default()
}

fn clang_dirs_in(data: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    for at in memchr::memmem::find_iter(data, b"llvm-") {
        let is_path_byte = |b: &u8| b.is_ascii_graphic() && !matches!(b, b'"' | b'\'' | b';');
        let start = data
            .get(..at)
            .and_then(|head| head.iter().rposition(|b| !is_path_byte(b)))
            .map_or(0, |p| p + 1);
        let end = data
            .get(at..)
            .and_then(|tail| tail.iter().position(|b| !is_path_byte(b)))
            .map_or(data.len(), |p| at + p);
        let Some(s) = data
            .get(start..end)
            .and_then(|b| std::str::from_utf8(b).ok())
        else {
            continue;
        };
        let s = s.trim_end_matches('/');
        let Some(tail) = s.split("llvm-").last() else {
            continue;
        };
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail.get(digits..) == Some("/bin") && !s.contains('$') {
            let s = s.to_owned();
            if !out.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

fn describe_clang(tree: &Tree, binary: PathBuf, drivers: Vec<Driver>) -> ClangInstall {
    let rocm = drivers.iter().any(|d| d.rocm);
    let run_by_hipcc = drivers.iter().any(|d| d.hipcc);
    let (version, version_source) = match clang_version(tree, &binary) {
        Some((v, s)) => (Some(v), Some(s)),
        None => (None, None),
    };
    ClangInstall {
        drivers: drivers.into_iter().map(|d| d.path).collect(),
        binary,
        version,
        version_source,
        rocm,
        run_by_hipcc,
        hip: false,
        resource_dir: None,
        resource_dir_ok: false,
        device_lib_search: Vec::new(),
        device_lib_dir: None,
    }
}

// ------------------------------------------------------------------------------------------------
// Versions, from files only
// ------------------------------------------------------------------------------------------------

/// Largest file searched for a version string (a static ROCm clang is about 150 MiB).
const MAX_SCAN_BYTES: usize = 1 << 30;

/// The version of the clang at `binary` (real path), and where it was read: the binary, the
/// libclang-cpp it needs, the CMake package of its LLVM tree, or a `llvm-NN` directory name.
fn clang_version(tree: &Tree, binary: &Path) -> Option<(ClangVersion, PathBuf)> {
    if let Some(v) = scan_version(binary) {
        return Some((v, binary.to_path_buf()));
    }
    for lib in needed_libclang(tree, binary) {
        if let Some(v) = scan_version(&lib) {
            return Some((v, lib));
        }
    }
    let llvm_root = binary.parent()?.parent()?;
    for lib in ["lib", "lib64"] {
        let cmake = llvm_root.join(lib).join("cmake");
        for (file, key) in [
            ("clang/ClangConfigVersion.cmake", "PACKAGE_VERSION"),
            ("llvm/LLVMConfig.cmake", "LLVM_PACKAGE_VERSION"),
            ("clang/ClangConfig.cmake", "LLVM_VERSION"),
        ] {
            let f = cmake.join(file);
            if let Some(v) = cmake_set_value(&f, key).as_deref().and_then(parse_version) {
                return Some((v, f));
            }
        }
    }
    // /usr/lib/llvm-17/bin/clang: the major version only.
    let mut dir = binary.parent();
    while let Some(d) = dir {
        if let Some(major) = d
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("llvm-"))
            .and_then(|n| n.parse().ok())
        {
            return Some((
                ClangVersion {
                    major,
                    minor_patch: None,
                },
                d.to_path_buf(),
            ));
        }
        dir = d.parent();
    }
    None
}

/// `X`, `X.Y` or `X.Y.Z` at the start of `s` (anything after is ignored: `17.0.0git`, `21.1.8-14`).
fn parse_version(s: &str) -> Option<ClangVersion> {
    let s = s.trim().trim_matches('"');
    let mut nums = s.split('.').map(|part| {
        let digits = part.bytes().take_while(u8::is_ascii_digit).count();
        part.get(..digits).and_then(|d| d.parse::<u32>().ok())
    });
    let major = nums.next()??;
    let minor = nums.next().flatten();
    let patch = nums.next().flatten();
    Some(ClangVersion {
        major,
        minor_patch: minor.map(|m| (m, patch.unwrap_or(0))),
    })
}

/// Searches a binary for the version strings clang's sources spell out whole: "clang version X.Y.Z"
/// (`getClangFullVersion` builds it at run time, but builds that define `CLANG_VENDOR` or link the
/// driver statically often carry it) and "clang -cc1 version X.Y.Z" (a literal in
/// `clang/lib/Frontend`, present in every libclang-cpp; Debian's 21.1.8 has it).
fn scan_version(path: &Path) -> Option<ClangVersion> {
    // A file cut short while it is read gives no version rather than zeros read as bytes.
    rocpack_scan::Mapped::with_file(path, |map| {
        version_in(map.get(..map.len().min(MAX_SCAN_BYTES))?)
    })
    .ok()
    .flatten()
}

fn version_in(data: &[u8]) -> Option<ClangVersion> {
    for needle in [&b"clang version "[..], b"clang -cc1 version "] {
        for at in memchr::memmem::find_iter(data, needle) {
            let tail = data.get(at + needle.len()..)?;
            let len = tail
                .iter()
                .take(32)
                .take_while(|b| b.is_ascii_digit() || **b == b'.')
                .count();
            let text = tail.get(..len).and_then(|t| std::str::from_utf8(t).ok());
            if let Some(v) = text.filter(|t| t.contains('.')).and_then(parse_version) {
                return Some(v);
            }
        }
    }
    None
}

/// The libclang shared libraries the binary loads, found by the library search of
/// [`rocpack_linkage::search`] (glibc's: RPATH, RUNPATH with `$ORIGIN`, `ld.so.cache`, the
/// default directories, all inside the root), in load order.
fn needed_libclang(tree: &Tree, binary: &Path) -> Vec<PathBuf> {
    use rocpack_linkage::search::{Environment, LoaderEnv};
    let root = (tree.root != Path::new("/")).then_some(tree.root.as_path());
    let env = Environment::new(
        rocpack_scan::sysroot::Sysroot::new(root),
        &LoaderEnv::default(),
    );
    let Ok(closure) = env.closure(binary) else {
        return Vec::new();
    };
    closure
        .objects
        .iter()
        .skip(1)
        .filter(|o| {
            o.path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("libclang"))
        })
        .map(|o| o.host.clone())
        .collect()
}

/// The value of the first `set(KEY value)` in a CMake file.
fn cmake_set_value(path: &Path, key: &str) -> Option<String> {
    let text = rocpack_scan::read_regular_to_string(path).ok()?;
    cmake_statements(&text).into_iter().find_map(|st| {
        let mut args = st.args.iter();
        (st.command == "set" && args.next().map(String::as_str) == Some(key))
            .then(|| args.next().cloned())
            .flatten()
    })
}

// ------------------------------------------------------------------------------------------------
// Check 1: the resource directory
// ------------------------------------------------------------------------------------------------

/// The names a resource directory may have for a version, most expected first.
fn resource_dir_names(c: &ClangInstall) -> Vec<String> {
    let Some(v) = c.version else {
        return Vec::new();
    };
    let major = v.major.to_string();
    // Upstream LLVM ≥ 16 (and ROCm's fork from LLVM 18, ROCm 6.2): the major version only
    // (Driver::GetResourcesPath).
    if v.major >= 18 || (v.major >= 16 && !c.rocm) {
        return vec![major];
    }
    match (v.major >= 16, v.full()) {
        // ROCm's fork of LLVM 16/17 switched at a release we could not pin: accept either.
        (true, Some(full)) => vec![major, full],
        (true, None) => vec![major],
        // Before 16, the full version.
        (false, Some(full)) => vec![full],
        // Before 16 with only the major known: not decidable.
        (false, None) => Vec::new(),
    }
}

fn check_resource_dir(
    tree: &Tree,
    prefix: &Path,
    clangs: &mut [ClangInstall],
    i: usize,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some(c) = clangs.get(i) else {
        return out;
    };
    let clang_name = c.binary.display().to_string();
    let Some(version) = c.version else {
        out.push(
            Finding::with_severity(
                Code::ClangResourceDir,
                Severity::Warning,
                &c.binary,
                format!("cannot tell the version of {clang_name}; its resource directory was not checked"),
            )
            .hint("no \"clang version X.Y.Z\" in the binary or the libclang-cpp it needs, no ClangConfigVersion.cmake or LLVMConfig.cmake beside it, no llvm-NN directory")
            .detail("clang", clang_name),
        );
        return out;
    };
    let Some(llvm_root) = c.binary.parent().and_then(Path::parent) else {
        return out;
    };
    let names = resource_dir_names(c);
    if names.is_empty() {
        out.push(
            Finding::with_severity(
                Code::ClangResourceDir,
                Severity::Warning,
                &c.binary,
                format!("only the major version of {clang_name} is known ({version}); clang before 16 names its resource directory by the full version, so it was not checked"),
            )
            .detail("clang", clang_name),
        );
        return out;
    }
    let Some(wanted) = names.first().cloned() else {
        return out;
    };
    let base = llvm_root.join("lib/clang");
    let lib64 = llvm_root.join("lib64/clang");
    let expected = base.join(&wanted);
    let found = names
        .iter()
        .flat_map(|n| [base.join(n), lib64.join(n)])
        .find(|d| tree.is_dir(d));
    let rule = if wanted.contains('.') {
        "clang before 16 uses lib/clang/<full version>"
    } else {
        "clang 16 and later use lib/clang/<major version> (LLVM D125860)"
    };
    let version_text = version.to_string();

    let (dir, problem) = match found {
        None => (
            expected.clone(),
            format!(
                "{clang_name} (clang {version_text}) computes its resource directory as {}, which does not exist",
                expected.display()
            ),
        ),
        Some(dir) => {
            let include = dir.join("include");
            let mut required = vec!["stddef.h"];
            if c.hip && version.major >= 12 {
                required.push("__clang_hip_runtime_wrapper.h");
            }
            if !tree.is_dir(&include) {
                (
                    dir.clone(),
                    format!(
                        "the resource directory {} of {clang_name} has no include/ (clang's own headers: stddef.h, the HIP wrapper headers)",
                        dir.display()
                    ),
                )
            } else {
                let missing: Vec<&str> = required
                    .into_iter()
                    .filter(|h| !tree.is_file(&include.join(h)))
                    .collect();
                if missing.is_empty() {
                    if let Some(c) = clangs.get_mut(i) {
                        c.resource_dir = Some(dir);
                        c.resource_dir_ok = true;
                    }
                    return out;
                }
                (
                    dir.clone(),
                    format!(
                        "the resource directory {} of {clang_name} lacks {}",
                        dir.display(),
                        missing
                            .iter()
                            .map(|h| format!("include/{h}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            }
        }
    };

    // Hints: the version-naming trap, and the directory somewhere clang does not look.
    let mut hints = Vec::new();
    let major = version.major.to_string();
    let wanted = wanted.as_str();
    for entry in tree.entries(&base) {
        if entry == wanted || !tree.is_dir(&base.join(&entry).join("include")) {
            continue;
        }
        if !wanted.contains('.') && entry.starts_with(&format!("{major}.")) {
            hints.push(format!(
                "{} exists: a full-version name, but {rule}; the major-version-only name is used since LLVM 16 (link {wanted} -> {entry})",
                base.join(&entry).display()
            ));
        } else if wanted.contains('.') && entry == major {
            hints.push(format!(
                "{} exists: a major-version-only name, but {rule} (link {wanted} -> {entry})",
                base.join(&entry).display()
            ));
        }
    }
    let real_llvm_root = tree.real(llvm_root);
    let mut elsewhere = Vec::new();
    for (root, _) in llvm_roots(tree, prefix)
        .into_iter()
        .chain([(tree.sys("/usr"), false), (tree.sys("/usr/local"), false)])
    {
        if tree.real(&root).is_none() || tree.real(&root) == real_llvm_root {
            continue;
        }
        for n in &names {
            let cand = root.join("lib/clang").join(n);
            if tree.is_dir(&cand.join("include")) && !elsewhere.contains(&cand) {
                elsewhere.push(cand);
            }
        }
    }
    for cand in &elsewhere {
        hints.push(format!(
            "{} exists, but clang computes its resource directory from the real path of its binary ({}), so it never looks there (Driver::GetResourcesPath); move or link it to {}, or pass -resource-dir",
            cand.display(),
            c.binary.display(),
            dir.display()
        ));
    }
    if hints.is_empty() {
        hints.push(format!(
            "{rule}; install clang's headers there (Debian: libclang-common-{major}-dev)"
        ));
    }
    let mut f = Finding::new(Code::ClangResourceDir, &c.binary, problem)
        .hint(hints.join("; "))
        .detail("clang", clang_name)
        .detail("version", version_text)
        .detail("resource_dir", dir.display().to_string());
    if !elsewhere.is_empty() {
        f = f.detail(
            "found_elsewhere",
            elsewhere
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>(),
        );
    }
    out.push(f);
    if let Some(c) = clangs.get_mut(i) {
        c.resource_dir = Some(dir);
    }
    out
}

// ------------------------------------------------------------------------------------------------
// Check 2: device libraries
// ------------------------------------------------------------------------------------------------

/// Where this clang looks for device libraries, in order (see the module docs).
fn device_lib_search(tree: &Tree, c: &ClangInstall) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut push = |p: PathBuf| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    let Some(bin) = c.binary.parent() else {
        return Vec::new();
    };
    // The resource directory clang computes, whether or not it exists.
    let resource = c.resource_dir.clone().or_else(|| {
        resource_dir_names(c)
            .first()
            .and_then(|n| bin.parent().map(|r| r.join("lib/clang").join(n)))
    });
    if let Some(r) = &resource {
        push(r.join("lib/amdgcn/bitcode"));
    }
    let mut candidates = vec![deduce_rocm_path(bin)];
    if let Some(clang_root) = bin.parent() {
        candidates.push(clang_root.to_path_buf());
    }
    if let Some(r) = resource {
        candidates.push(r);
    }
    candidates.push(tree.sys("/opt/rocm"));
    if let Some(latest) = latest_opt_rocm(tree) {
        candidates.push(latest);
    }
    candidates.push(tree.sys("/usr/local"));
    candidates.push(tree.sys("/usr"));
    for cand in candidates {
        push(cand.join("amdgcn/bitcode"));
    }
    out
}

/// `getInstallationPathCandidates`' `DeduceROCmPath`: `bin/..`; one more level up from `llvm` or
/// `aomp*`, and one more from the `lib` of `lib/llvm`.
fn deduce_rocm_path(bin: &Path) -> PathBuf {
    let name = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_owned()
    };
    let mut dir = bin.to_path_buf();
    if name(&dir) == "bin" {
        dir.pop();
    }
    let n = name(&dir);
    if n == "llvm" || n.starts_with("aomp") {
        dir.pop();
        if name(&dir) == "lib" {
            dir.pop();
        }
    }
    dir
}

/// The newest `/opt/rocm-X.Y.Z` in the root, as clang picks it.
fn latest_opt_rocm(tree: &Tree) -> Option<PathBuf> {
    let opt = tree.sys("/opt");
    tree.entries(&opt)
        .into_iter()
        .filter_map(|n| {
            let v: Vec<u32> = n
                .strip_prefix("rocm-")?
                .split(['.', '-'])
                .map_while(|p| p.parse().ok())
                .collect();
            Some((v, n))
        })
        .max()
        .map(|(_, n)| opt.join(n))
}

/// Whether clang accepts a directory as its device-library directory: the generic libraries and
/// at least one ISA library (`CheckDeviceLib`; `allGenericLibsValid` also wants the oclc_* control
/// libraries, which every device-libs build installs together with ocml and ockl).
fn accepted_device_lib_dir(tree: &Tree, dir: &Path) -> bool {
    tree.is_file(&dir.join("ocml.bc"))
        && tree.is_file(&dir.join("ockl.bc"))
        && tree
            .entries(dir)
            .iter()
            .any(|n| n.starts_with("oclc_isa_version_") && n.ends_with(".bc"))
}

/// Every directory holding device-library bitcode, in the places ROCm releases and distributions
/// install it, plus every place a clang of the prefix searches. Deduplicated by real path.
fn discover_bitcode_dirs(tree: &Tree, prefix: &Path, clangs: &[ClangInstall]) -> Vec<PathBuf> {
    // The clangs' own search paths first, so that a directory reached through a link
    // (`llvm -> lib/llvm`) is named as clang names it.
    let mut cands: Vec<PathBuf> = clangs
        .iter()
        .flat_map(|c| c.device_lib_search.iter().cloned())
        .collect();
    cands.extend([
        prefix.join("amdgcn/bitcode"),
        prefix.join("lib/amdgcn/bitcode"),
        prefix.join("lib64/amdgcn/bitcode"),
        prefix.join("share/amdgcn/bitcode"),
    ]);
    for name in tree.entries(&prefix.join("lib")) {
        if name.contains("-linux-") {
            cands.push(prefix.join("lib").join(name).join("amdgcn/bitcode"));
        }
    }
    for (root, _) in llvm_roots(tree, prefix) {
        if root != prefix {
            cands.push(root.join("amdgcn/bitcode"));
        }
        let clang_dir = root.join("lib/clang");
        for v in tree.entries(&clang_dir) {
            cands.push(clang_dir.join(&v).join("lib/amdgcn/bitcode"));
            cands.push(clang_dir.join(&v).join("amdgcn/bitcode"));
        }
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for d in cands {
        let Some(real) = tree.real(&d).filter(|r| r.is_dir()) else {
            continue;
        };
        let has_bc = tree.entries(&d).iter().any(|n| n.ends_with(".bc"));
        if has_bc && seen.insert(real) {
            out.push(d);
        }
    }
    out
}

/// `gfx90a:xnack+` -> `oclc_isa_version_90a.bc`; `gfx9-generic` -> `oclc_isa_version_9-generic.bc`.
pub fn isa_library_name(processor: &str) -> Option<String> {
    let proc_name = processor.split(':').next()?;
    let suffix = proc_name.strip_prefix("gfx")?;
    (!suffix.is_empty()).then(|| format!("oclc_isa_version_{suffix}.bc"))
}

fn display_list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn path_strings(paths: &[PathBuf]) -> Vec<String> {
    paths.iter().map(|p| p.display().to_string()).collect()
}

fn check_device_libs(
    tree: &Tree,
    prefix: &Path,
    report: &ToolchainReport,
    processors: &BTreeSet<String>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    // What each processor needs, by target; unparseable names are reported once.
    let mut needs: BTreeMap<String, String> = BTreeMap::new();
    for p in processors {
        match isa_library_name(p) {
            Some(lib) => {
                let name = p.split(':').next().unwrap_or(p).to_owned();
                needs.insert(name, lib);
            }
            None => out.push(
                Finding::with_severity(
                    Code::MissingDeviceLib,
                    Severity::Warning,
                    prefix,
                    format!(
                        "{p:?} is not a gfx processor name; no device library can be checked for it"
                    ),
                )
                .detail("target", p.as_str()),
            ),
        }
    }
    let targets_text = needs.keys().cloned().collect::<Vec<_>>().join(", ");
    let hip_clangs: Vec<&ClangInstall> = report.clangs.iter().filter(|c| c.hip).collect();
    let mut reported: BTreeSet<(PathBuf, String)> = BTreeSet::new();

    if hip_clangs.is_empty() && report.device_lib_dirs.is_empty() {
        // HIP's CMake support (or hipcc) without any compiler or bitcode: nothing in the prefix
        // would use device libraries, but nothing can compile HIP either. One warning, not one
        // error per target.
        out.push(
            Finding::with_severity(
                Code::MissingDeviceLib,
                Severity::Warning,
                prefix,
                format!(
                    "the prefix has HIP's build support but no HIP-capable clang and no device libraries: compiling HIP code ({}) needs both",
                    if targets_text.is_empty() { "for any target".to_owned() } else { format!("for {targets_text}") }
                ),
            )
            .hint("install the HIP compiler with its device libraries (Debian: hipcc, which brings clang and the device libraries; ROCm: rocm-llvm and rocm-device-libs)")
            .detail("targets", needs.keys().cloned().collect::<Vec<_>>()),
        );
        return out;
    }
    if hip_clangs.is_empty() {
        // A HIP toolchain without its clang in the prefix: the bitcode must be somewhere.
        let dirs = &report.device_lib_dirs;
        let searched = if dirs.is_empty() {
            vec![prefix.join("amdgcn/bitcode")]
        } else {
            dirs.clone()
        };
        let has = |f: &str| dirs.iter().any(|d| tree.is_file(&d.join(f)));
        for generic in ["ocml.bc", "ockl.bc"] {
            if !has(generic) {
                out.push(missing_lib(
                    prefix,
                    generic,
                    None,
                    &searched,
                    "no clang was found in the prefix, so every bitcode directory was searched"
                        .to_owned(),
                ));
            }
        }
        for (target, lib) in &needs {
            if !has(lib) {
                out.push(missing_lib(
                    prefix,
                    lib,
                    Some(target),
                    &searched,
                    "no clang was found in the prefix, so every bitcode directory was searched"
                        .to_owned(),
                ));
            }
        }
        return out;
    }

    for c in hip_clangs {
        let clang_name = c.binary.display().to_string();
        let not_searched: Vec<PathBuf> = report
            .device_lib_dirs
            .iter()
            .filter(|d| {
                let real = tree.real(d);
                !c.device_lib_search.iter().any(|s| tree.real(s) == real)
            })
            .cloned()
            .collect();
        let Some(dir) = &c.device_lib_dir else {
            let mut hint = "clang uses the first of these that holds ocml.bc, ockl.bc and oclc_isa_version_*.bc (RocmInstallationDetector::detectDeviceLibrary)".to_owned();
            if !not_searched.is_empty() {
                hint = format!(
                    "bitcode exists only where this clang does not look: {}; move or link it to {}, or pass --rocm-device-lib-path; {hint}",
                    display_list(&not_searched),
                    c.device_lib_search
                        .first()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                );
            }
            out.push(
                Finding::new(
                    Code::MissingDeviceLib,
                    &c.binary,
                    format!(
                        "{clang_name} finds no AMDGPU device-library directory; every HIP compile{} fails with \"cannot find ROCm device library\"",
                        if targets_text.is_empty() { String::new() } else { format!(" for {targets_text}") }
                    ),
                )
                .hint(hint)
                .detail("clang", clang_name)
                .detail("searched", path_strings(&c.device_lib_search))
                .detail("found_elsewhere", path_strings(&not_searched)),
            );
            continue;
        };
        for (target, lib) in &needs {
            if tree.is_file(&dir.join(lib)) || !reported.insert((dir.clone(), lib.clone())) {
                continue;
            }
            let elsewhere: Vec<PathBuf> = report
                .device_lib_dirs
                .iter()
                .filter(|d| tree.real(d) != tree.real(dir) && tree.is_file(&d.join(lib)))
                .cloned()
                .collect();
            let hint = if elsewhere.is_empty() {
                format!(
                    "install device libraries that support {target} (they must match clang {}'s LLVM major version), or drop {target} from the build",
                    c.version.map(|v| v.major.to_string()).unwrap_or_default()
                )
            } else {
                format!(
                    "{} has it, but {clang_name} links from {} (the first directory in its search order that holds ocml.bc, ockl.bc and an ISA library) and never reads the other",
                    display_list(&elsewhere),
                    dir.display()
                )
            };
            out.push(
                missing_lib(
                    &c.binary,
                    lib,
                    Some(target),
                    std::slice::from_ref(dir),
                    hint,
                )
                .detail("clang", clang_name.as_str())
                .detail("found_elsewhere", path_strings(&elsewhere)),
            );
        }
    }
    out
}

fn missing_lib(
    file: &Path,
    lib: &str,
    target: Option<&String>,
    searched: &[PathBuf],
    hint: String,
) -> Finding {
    let what = match target {
        Some(t) => format!("device library {lib} for {t} is missing"),
        None => format!("device library {lib} (needed by every target) is missing"),
    };
    let mut f = Finding::new(
        Code::MissingDeviceLib,
        file,
        format!("{what}: not in {}", display_list(searched)),
    )
    .hint(hint)
    .detail("library", lib)
    .detail("searched", path_strings(searched));
    if let Some(t) = target {
        f = f.detail("target", t.as_str());
    }
    f
}

// ------------------------------------------------------------------------------------------------
// Check 3: hip and hip-lang CMake configs
// ------------------------------------------------------------------------------------------------

/// The CMake package directories of a prefix: `lib/cmake`, `lib64/cmake`, Debian's
/// `lib/<triplet>/cmake`.
fn cmake_dirs(tree: &Tree, prefix: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![prefix.join("lib/cmake"), prefix.join("lib64/cmake")];
    for name in tree.entries(&prefix.join("lib")) {
        if name.contains("-linux-") {
            dirs.push(prefix.join("lib").join(name).join("cmake"));
        }
    }
    dirs.retain(|d| tree.is_dir(d));
    dirs
}

fn hip_configs(cmake_dirs: &[PathBuf]) -> Vec<HipConfig> {
    let mut out = Vec::new();
    for d in cmake_dirs {
        for package in ["hip", "hip-lang"] {
            let dir = d.join(package);
            if !dir.is_dir() {
                continue;
            }
            let config = dir.join(format!("{package}-config.cmake"));
            let version_file = dir.join(format!("{package}-config-version.cmake"));
            out.push(HipConfig {
                package,
                config: config.is_file().then_some(config),
                version: cmake_set_value(&version_file, "PACKAGE_VERSION"),
                dir,
            });
        }
    }
    out
}

fn check_hip_configs(
    tree: &Tree,
    prefix: &Path,
    cmake_dirs: &[PathBuf],
    report: &ToolchainReport,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in cmake_dirs {
        let get = |pkg: &str| {
            report
                .hip_configs
                .iter()
                .find(|c| c.package == pkg && c.dir.parent() == Some(d.as_path()))
        };
        let (hip, lang) = (get("hip"), get("hip-lang"));
        let hip_cfg = hip.and_then(|c| c.config.clone());
        let lang_cfg = lang.and_then(|c| c.config.clone());
        match (&hip_cfg, &lang_cfg) {
            (None, None) => continue,
            (Some(h), None) => out.push(
                Finding::new(
                    Code::HipConfigMismatch,
                    h,
                    format!("{} has the hip package but no hip-lang/hip-lang-config.cmake", d.display()),
                )
                .hint("CMake's HIP language (enable_language(HIP), project(... LANGUAGES HIP)) loads hip-lang; both come from the same HIP runtime package and must be installed together"),
            ),
            (None, Some(l)) => out.push(
                Finding::new(
                    Code::HipConfigMismatch,
                    l,
                    format!("{} has the hip-lang package but no hip/hip-config.cmake", d.display()),
                )
                .hint("find_package(hip) needs hip-config.cmake; both come from the same HIP runtime package and must be installed together"),
            ),
            (Some(h), Some(_)) => {
                let hv = hip.and_then(|c| c.version.clone());
                let lv = lang.and_then(|c| c.version.clone());
                match (&hv, &lv) {
                    (Some(a), Some(b)) if a != b => out.push(
                        Finding::new(
                            Code::HipConfigMismatch,
                            h,
                            format!("hip is version {a} but hip-lang beside it is {b}"),
                        )
                        .hint("the two configs come from one HIP runtime build; a mix of two releases links HIP code against one runtime and compiles it with the other's settings")
                        .detail("hip_version", a.as_str())
                        .detail("hip_lang_version", b.as_str()),
                    ),
                    (Some(_), Some(_)) => {}
                    _ => out.push(
                        Finding::with_severity(
                            Code::HipConfigMismatch,
                            Severity::Warning,
                            h,
                            format!(
                                "{} has no PACKAGE_VERSION, so hip and hip-lang versions cannot be compared",
                                if hv.is_none() { "hip/hip-config-version.cmake" } else { "hip-lang/hip-lang-config-version.cmake" }
                            ),
                        )
                        .hint("find_package(hip VERSION) and find_package(hip-lang VERSION) fail without the version file"),
                    ),
                }
            }
        }
        for cfg in [hip, lang].into_iter().flatten() {
            for file in tree.entries(&cfg.dir) {
                if file.ends_with(".cmake") && file.starts_with(cfg.package) {
                    out.extend(check_clang_globs(tree, prefix, &cfg.dir.join(file), report));
                }
            }
        }
    }
    out
}

/// A CMake command: name (lower case), arguments (quotes removed), and its line.
struct Statement {
    command: String,
    args: Vec<String>,
    line: usize,
    /// Nesting depth of if() blocks around it.
    depth: usize,
}

/// Splits CMake text into commands with the CMake evaluator's lexer (as CMake's own
/// `cmListFileLexer`), with each command's nesting depth in `if`, `foreach`, `function` and
/// `macro` blocks. A file that does not lex gives no commands.
fn cmake_statements(text: &str) -> Vec<Statement> {
    let Ok(commands) = rocpack_cmake::lexer::tokenize(text.as_bytes()) else {
        return Vec::new();
    };
    let mut depth = 0usize;
    commands
        .into_iter()
        .map(|c| {
            let name = c.name;
            if matches!(
                name.as_str(),
                "endif" | "endforeach" | "endfunction" | "endmacro"
            ) {
                depth = depth.saturating_sub(1);
            }
            let st = Statement {
                args: c.args.into_iter().map(|a| a.text).collect(),
                line: c.line as usize,
                depth,
                command: name,
            };
            if matches!(st.command.as_str(), "if" | "foreach" | "function" | "macro") {
                depth += 1;
            }
            st
        })
        .collect()
}

/// Expands `${VAR}` from `vars`; `None` when a variable is unknown.
fn expand(s: &str, vars: &BTreeMap<String, String>) -> Option<String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("${") {
        out.push_str(rest.get(..at)?);
        let after = rest.get(at + 2..)?;
        let end = after.find('}')?;
        out.push_str(vars.get(after.get(..end)?)?);
        rest = after.get(end + 1..)?;
    }
    out.push_str(rest);
    Some(out)
}

/// Checks the `file(GLOB <var> .../lib/clang/*/include)` searches older hip and hip-lang configs
/// (ROCm 5.x, Gentoo's patched ones) use to find clang's headers: each must find a directory with
/// the header its `find_path` wants, and that directory should be a clang's resource directory.
/// Only statements outside if() blocks are evaluated, with the variables a config computes from
/// its own location; a pattern with other variables (HIP_CLANG_ROOT from running the compiler)
/// is left alone.
fn check_clang_globs(
    tree: &Tree,
    prefix: &Path,
    file: &Path,
    report: &ToolchainReport,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let Ok(text) = rocpack_scan::read_regular_to_string(file) else {
        return out;
    };
    if !text.contains("lib/clang") {
        return out;
    }
    let statements = cmake_statements(&text);
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    let prefix_s = prefix.display().to_string();
    for v in [
        "PACKAGE_PREFIX_DIR",
        "ROCM_PATH",
        "HIP_PATH",
        "HIP_PACKAGE_PREFIX_DIR",
    ] {
        vars.insert(v.to_owned(), prefix_s.clone());
    }
    vars.insert(
        "CMAKE_CURRENT_LIST_FILE".to_owned(),
        file.display().to_string(),
    );
    if let Some(dir) = file.parent() {
        vars.insert(
            "CMAKE_CURRENT_LIST_DIR".to_owned(),
            dir.display().to_string(),
        );
    }
    let header = statements
        .iter()
        .find(|s| {
            s.command == "find_path" && s.args.first().is_some_and(|a| a.contains("CLANG_INCLUDE"))
        })
        .and_then(|s| s.args.get(1).cloned())
        .unwrap_or_else(|| "stddef.h".to_owned());
    let resource_dirs: Vec<PathBuf> = report
        .clangs
        .iter()
        .filter_map(|c| {
            c.resource_dir
                .as_ref()
                .and_then(|r| tree.real(&r.join("include")))
        })
        .collect();

    for st in &statements {
        if st.depth > 0 {
            continue;
        }
        match st.command.as_str() {
            "set" => {
                if let (Some(k), Some(v)) = (st.args.first(), st.args.get(1)) {
                    match expand(v, &vars) {
                        Some(v) => vars.insert(k.clone(), v),
                        None => vars.remove(k),
                    };
                }
            }
            "get_filename_component" => {
                let (Some(k), Some(v), Some(mode)) =
                    (st.args.first(), st.args.get(1), st.args.get(2))
                else {
                    continue;
                };
                let Some(v) = expand(v, &vars) else {
                    vars.remove(k);
                    continue;
                };
                let p = Path::new(&v);
                let value = match mode.as_str() {
                    "ABSOLUTE" => Some(normalize(p)),
                    "REALPATH" => tree.real(&normalize(p)),
                    "DIRECTORY" | "PATH" => p.parent().map(Path::to_path_buf),
                    _ => None,
                };
                match value {
                    Some(val) => vars.insert(k.clone(), val.display().to_string()),
                    None => vars.remove(k),
                };
            }
            "file" if st.args.first().map(String::as_str) == Some("GLOB") => {
                let Some(pattern) = st.args.get(2).filter(|p| p.contains("lib/clang")) else {
                    continue;
                };
                let Some(expanded) = expand(pattern, &vars) else {
                    continue;
                };
                // Variables hold paths on this machine; a literal absolute path (Gentoo writes
                // its resource directory in) is a path of the installed system.
                let host = if pattern.starts_with("${") {
                    PathBuf::from(&expanded)
                } else {
                    tree.sys(&expanded)
                };
                let matches = glob(tree, &normalize(&host));
                let with_header: Vec<PathBuf> = matches
                    .into_iter()
                    .filter(|m| tree.is_file(&m.join(&header)))
                    .collect();
                let line = st.line;
                if with_header.is_empty() {
                    let known: Vec<String> = report
                        .clangs
                        .iter()
                        .filter_map(|c| {
                            c.resource_dir
                                .as_ref()
                                .map(|r| format!("{} uses {}", c.binary.display(), r.display()))
                        })
                        .collect();
                    out.push(
                        Finding::new(
                            Code::HipConfigMismatch,
                            file,
                            format!(
                                "line {line}: the search for clang's headers ({pattern}, here {}) finds no directory with {header}",
                                host.display()
                            ),
                        )
                        .hint(if known.is_empty() {
                            "HIP targets from this config get no clang include directory".to_owned()
                        } else {
                            format!("HIP targets from this config get no clang include directory; {}", known.join("; "))
                        })
                        .detail("line", line)
                        .detail("pattern", pattern.as_str()),
                    );
                } else if !resource_dirs.is_empty()
                    && !with_header
                        .iter()
                        .any(|m| tree.real(m).is_some_and(|r| resource_dirs.contains(&r)))
                {
                    out.push(
                        Finding::with_severity(
                            Code::HipConfigMismatch,
                            Severity::Warning,
                            file,
                            format!(
                                "line {line}: the search for clang's headers finds {}, which is not the resource directory of any clang in the prefix",
                                display_list(&with_header)
                            ),
                        )
                        .hint(format!(
                            "HIP targets would compile with another clang's headers; the clangs use {}",
                            display_list(&resource_dirs)
                        ))
                        .detail("line", line)
                        .detail("pattern", pattern.as_str()),
                    );
                }
            }
            _ => {}
        }
    }
    out
}

/// Expands the glob components (`rocpack_scan::glob`) of a pattern such as
/// `.../lib/clang/*/include`, in sorted order.
fn glob(tree: &Tree, pattern: &Path) -> Vec<PathBuf> {
    let mut current = vec![PathBuf::from("/")];
    for c in pattern.components() {
        let Component::Normal(part) = c else { continue };
        let mut next = Vec::new();
        for base in &current {
            if rocpack_scan::glob::has_wildcard(part.as_bytes()) {
                for e in tree.entries(base) {
                    if rocpack_scan::glob::component_matches(part.as_bytes(), e.as_bytes()) {
                        next.push(base.join(e));
                    }
                }
            } else {
                let p = base.join(part);
                if tree.has_entry(&p) {
                    next.push(p);
                }
            }
        }
        current = next;
        if current.len() > 4096 {
            break;
        }
    }
    current
}
