//! One `verify` run: which checks, over which paths, with which findings allowed — decided
//! here, so that the command line only parses options and renders the [`Report`].

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::finding::{Code, Finding, Severity};
use crate::{linkage, toolchain, tree};
use rocpack_linkage::search::{Environment, LoaderEnv};
use rocpack_scan::sysroot::Sysroot;

/// A part of `verify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Check {
    /// Every ELF file's link closure, undefined symbols and symbol versions ([`linkage`]).
    Linkage,
    /// The files CMake package configs reference ([`cmake`]).
    Cmake,
    /// clang's resource directory and the AMDGPU device libraries ([`toolchain`]).
    Toolchain,
}

impl Check {
    /// Every check, in the order they run.
    pub const ALL: [Check; 3] = [Check::Linkage, Check::Cmake, Check::Toolchain];
}

/// What to verify.
pub struct Options {
    /// Files and install prefixes, as given (see [`input_paths`]).
    pub paths: Vec<PathBuf>,
    /// The system tree the paths belong to (a sysroot, an unpacked image).
    pub root: Option<PathBuf>,
    /// `LD_LIBRARY_PATH` and `LD_PRELOAD` as the loader would see them.
    pub loader_env: LoaderEnv,
    /// The checks to run.
    pub checks: BTreeSet<Check>,
    /// Finding codes not to report.
    pub allow: BTreeSet<Code>,
    /// How GPU code is read when the toolchain check needs the processors the tree targets.
    pub scan: rocpack_scan::ScanOptions,
}

/// What a run counted.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// ELF files whose closure was resolved.
    pub elf_files: usize,
    /// Undefined symbols looked up.
    pub symbols: usize,
    /// Static archives read.
    pub archives: usize,
    /// Prefixes with a HIP toolchain.
    pub toolchains: usize,
    /// CMake files evaluated.
    pub cmake_files: usize,
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct Report {
    /// Findings, sorted by file, code and message, without duplicates or allowed codes.
    pub findings: Vec<Finding>,
    /// What was counted.
    pub counts: Counts,
    /// Findings left out by [`Options::allow`].
    pub allowed: usize,
    /// The checks that ran.
    pub checks: BTreeSet<Check>,
}

impl Report {
    /// Findings of this severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }

    /// Whether a file could not be read (exit status 2 rather than 1).
    pub fn unreadable(&self) -> bool {
        self.findings.iter().any(|f| {
            matches!(f.code, Code::UnreadableFile | Code::NotRegularFile)
                && f.severity == Severity::Error
        })
    }

    /// How `rocpack verify` ends: an error when a file could not be read, no match when a
    /// finding is an error (what was verified is broken), else ok.
    pub fn exit(&self) -> rocpack_finding::Exit {
        if self.unreadable() {
            rocpack_finding::Exit::Error
        } else if self.count(Severity::Error) > 0 {
            rocpack_finding::Exit::NoMatch
        } else {
            rocpack_finding::Exit::Ok
        }
    }
}

/// The paths to walk: as given, or the root; with a root, an absolute path outside it names a
/// path of the target system.
///
/// # Errors
/// No path and no root.
pub fn input_paths(given: &[PathBuf], root: Option<&Path>) -> Result<Vec<PathBuf>, String> {
    if given.is_empty() {
        return match root {
            Some(r) => Ok(vec![r.to_path_buf()]),
            None => Err("give an install prefix or ELF files to verify, or --root SYSROOT".into()),
        };
    }
    Ok(given
        .iter()
        .map(|p| match root {
            Some(r) if p.is_absolute() && !p.starts_with(r) => {
                r.join(p.strip_prefix("/").unwrap_or(p))
            }
            _ => p.clone(),
        })
        .collect())
}

/// The loader environment from `NAME=VALUE` pairs.
///
/// # Errors
/// A pair without `=`, or a variable that does not change how libraries are found.
pub fn loader_env(pairs: &[String]) -> Result<LoaderEnv, String> {
    let mut env = LoaderEnv::default();
    for p in pairs {
        let Some((name, value)) = p.split_once('=') else {
            return Err(format!("--env {p}: expected NAME=VALUE"));
        };
        match name {
            "LD_LIBRARY_PATH" => env.ld_library_path = Some(value.to_owned()),
            "LD_PRELOAD" => env.ld_preload = Some(value.to_owned()),
            _ => {
                return Err(format!(
                    "--env {name}: only LD_LIBRARY_PATH and LD_PRELOAD change how libraries are found"
                ));
            }
        }
    }
    Ok(env)
}

/// Finding codes from their names.
///
/// # Errors
/// An unknown code, with the list of codes.
pub fn allowed(codes: &[String]) -> Result<BTreeSet<Code>, String> {
    codes
        .iter()
        .map(|c| {
            Code::parse(c).ok_or_else(|| {
                let all: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
                format!("--allow {c}: unknown code; codes are {}", all.join(", "))
            })
        })
        .collect()
}

/// Runs the checks. `progress` is told how many ELF files the linkage check resolves.
pub fn run(opts: &Options, progress: &dyn Fn(usize)) -> Report {
    let root = opts.root.as_deref();
    let env = Environment::new(Sysroot::new(root), &opts.loader_env);
    let (input, mut findings) = tree::collect(&opts.paths);
    let mut counts = Counts {
        archives: input.archives.len(),
        ..Counts::default()
    };
    if opts.checks.contains(&Check::Linkage) {
        progress(input.files.len());
        let report = linkage::verify(&env, &input);
        counts.elf_files = report.files_checked;
        counts.symbols = report.symbols_checked;
        findings.extend(report.findings);
    }
    if opts.checks.contains(&Check::Cmake) {
        for prefix in opts.paths.iter().filter(|p| p.is_dir()) {
            let report = rocpack_cmake::check_prefix(&rocpack_cmake::CmakeOptions { prefix, root });
            counts.cmake_files += report.files_evaluated;
            findings.extend(report.findings.into_iter().map(|f| f.into_domain()));
        }
    }
    if opts.checks.contains(&Check::Toolchain) {
        for prefix in toolchain_prefixes(&opts.paths, root) {
            let report = toolchain_check(&prefix, root, &opts.paths, &opts.scan);
            counts.toolchains += usize::from(report.hip_toolchain);
            findings.extend(report.findings);
        }
    }
    let before = findings.len();
    findings.retain(|f| !opts.allow.contains(&f.code));
    let allowed = before - findings.len();
    findings.sort_by(|a, b| (&a.file, a.code, &a.message).cmp(&(&b.file, b.code, &b.message)));
    findings.dedup_by(|a, b| a.file == b.file && a.code == b.code && a.message == b.message);
    Report {
        findings,
        counts,
        allowed,
        checks: opts.checks.clone(),
    }
}

/// Install prefixes whose toolchain is checked: each directory given; for a whole root, its
/// `/usr`, `/usr/local` and `/opt/rocm*`.
fn toolchain_prefixes(paths: &[PathBuf], root: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths.iter().filter(|p| p.is_dir()) {
        if root.is_some_and(|r| r == p.as_path()) {
            out.push(p.join("usr"));
            out.push(p.join("usr/local"));
            if let Ok(rd) = std::fs::read_dir(p.join("opt")) {
                let mut rocm: Vec<PathBuf> = rd
                    .filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().starts_with("rocm"))
                    .map(|e| e.path())
                    .collect();
                rocm.sort();
                out.extend(rocm);
            }
        } else {
            out.push(p.clone());
        }
    }
    out.retain(|p| p.is_dir());
    out
}

/// The toolchain check of one prefix. The GPU processors the tree carries code for are only
/// collected (by reading the bundle headers of every file) when the prefix has a HIP toolchain.
fn toolchain_check(
    prefix: &Path,
    root: Option<&Path>,
    walked: &[PathBuf],
    scan: &rocpack_scan::ScanOptions,
) -> toolchain::ToolchainReport {
    let none = BTreeSet::new();
    let first = toolchain::check(&toolchain::ToolchainOptions {
        prefix,
        root,
        processors: &none,
    });
    if !first.hip_toolchain {
        return first;
    }
    let scanned = rocpack_scan::scan(walked, scan, |_, _| {});
    let processors: BTreeSet<String> = scanned
        .results
        .iter()
        .filter_map(|r| r.inspection.as_ref())
        .flat_map(|i| &i.code_objects)
        .filter(|c| c.is_amd_gpu())
        .filter_map(|c| c.target.as_ref().map(|t| t.processor.clone()))
        // A code object naming no processor, neither in its header nor in a V2 ISA note (an
        // HSA code object v1, as ROCr embeds for its own blit kernels: `unknown-mach-0x00`),
        // was not built by the toolchain being checked: it asks for no device library.
        .filter(|p| !p.starts_with(rocpack_amdgpu::UNKNOWN_MACH_PREFIX))
        .collect();
    toolchain::check(&toolchain::ToolchainOptions {
        prefix,
        root,
        processors: &processors,
    })
}
