//! A CMake interpreter that runs nothing, and the check of CMake package configs built on it:
//! evaluates every `*Config.cmake`, `*-config.cmake` and targets file of a prefix and checks the
//! files they reference ([`check_prefix`]); [`project`] evaluates a project's own CMakeLists
//! (what `rocpack-derive` reads build facts with). `rocpack verify` gathers the findings into its
//! own (`rocpack_verify::Code` has every [`CmakeCode`]).
//!
//! ```no_run
//! use std::path::Path;
//! use rocpack_cmake::{CmakeOptions, check_prefix};
//! let report = check_prefix(&CmakeOptions { prefix: Path::new("/opt/rocm"), root: None });
//! for f in &report.findings {
//!     println!("{} {}: {}", f.code, f.file.display(), f.message);
//! }
//! ```
//!
//! # What is evaluated
//! The interpreter follows CMake's language: bracket, quoted and unquoted arguments, escapes,
//! nested `${a_${b}}` references, list splitting, `if()` conditions with CMake's precedence,
//! loops, macros (textual substitution) and functions (own scope), `include()` (relative to
//! the including file), `block()`, `return()`, and the commands configs use (`set`, `list`,
//! `string`, `get_filename_component`, `file(GLOB)`, `math`, `cmake_path`,
//! `cmake_parse_arguments`, target commands). `CMAKE_CURRENT_LIST_DIR` and friends are
//! target-system paths; with a sysroot, paths are looked up inside it, links resolved inside it.
//!
//! # What is not
//! Nothing is guessed. What only the configuring machine knows (the output of
//! `execute_process`, what `find_library` finds, the calling project's directories, a
//! `find_package` dependency's variables) is an *unknown* value; a condition, loop or
//! `include()` that depends on one is skipped and reported as `cmake-not-evaluated` (info),
//! as are unknown commands (once per file), generator expressions that need the consuming
//! build, and `message(FATAL_ERROR)` reached on the evaluated path. `find_package` and
//! `find_dependency` are not followed: the dependency is assumed found, and its own config is
//! checked on its own. A loop over `<Pkg>_FIND_COMPONENTS` runs over the components the config
//! declares (the list it checks them against with `IN_LIST`). `if(TARGET x)` is what a first
//! `find_package` sees: the package's own targets exist once created; a target in the namespace
//! of a package the config asked for is unknown.
//!
//! # Entry files
//! [`check_prefix`] evaluates configs first, then targets files, then per-configuration
//! targets files (`FooTargets-release.cmake`); a file already evaluated because another
//! included it is not evaluated again on its own, and a hand-written module named like a
//! targets file next to a config (rocm-cmake's `ROCMInstallTargets.cmake`) is not an entry.
//! CMake's own `Modules` directory is skipped.
//!
//! # Findings
//! Each finding's `file` is the file that holds the command referencing the path (inside the
//! sysroot when there is one); `details.path` is the target-system path.
//! - `cmake-missing-file` (error): an `include()` (not `OPTIONAL`) of a file that does not
//!   exist; a `set_and_check()` path (reported at the call, and evaluation goes on past the
//!   macro's own `FATAL_ERROR`); a path in a target's `IMPORTED_LOCATION*`, `IMPORTED_IMPLIB*`,
//!   `IMPORTED_OBJECTS*`, `INTERFACE_INCLUDE_DIRECTORIES`, `INTERFACE_SYSTEM_INCLUDE_DIRECTORIES`
//!   or `INTERFACE_LINK_DIRECTORIES`; an absolute path in `INTERFACE_LINK_LIBRARIES` or
//!   `IMPORTED_LINK_*_LIBRARIES*`. `$<BUILD_INTERFACE:…>` is dropped; the content of
//!   `$<INSTALL_INTERFACE:…>`, `$<LINK_ONLY:…>` and conditional `$<$<…>:…>` is checked.
//!   Details: `path`, `line`, and `include`, `variable`, or `target` and `property`;
//!   `component` when the path was reached for one component.
//! - `cmake-path-outside-prefix`: such a path that is neither under the prefix nor under a
//!   system directory (`/usr`, `/lib*`, `/bin`, `/sbin`, `/etc`, `/opt`): an error if it does
//!   not exist (a build-machine path), a warning if it does. With the prefix `/` nothing is
//!   outside. Same details. A path is reported once per file.
//! - `cmake-not-evaluated` (info): what was skipped and why; details `line` and, as
//!   applicable, `condition` and `reason`, `command`, `target`, `property`, `expression`.
//! - `unreadable-file` (error): a file that cannot be read or is not valid CMake (`line`).
//!
//! # Limits
//! Each entry file gets 1,000,000 commands (loop iterations count), 256 MiB of expanded text,
//! values of at most 16 MiB, 100 levels of nested blocks, calls and includes, and 32 nested
//! includes; a file including itself a third time is an include cycle, cut and reported
//! (once is normal: CMake's `<name>-*.cmake` glob picks up `<name>-config.cmake`). Files larger
//! than 16 MiB are not read.

#![deny(clippy::indexing_slicing)]
#![cfg_attr(test, allow(clippy::indexing_slicing, clippy::unwrap_used))]

mod builtins;
mod checks;
mod cond;
mod consolidate;
mod eval;
pub mod lexer;
mod paths;
pub mod project;
mod regex;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use eval::{Evaluator, Loc, SourceFile};
use paths::{Fs, absolute};

pub use cond::{is_off, is_on};
pub use rocpack_finding::Severity;

rocpack_finding::codes! {
    /// What the config check finds. The names are `verify`'s (docs/diagnostics.md, "verify"),
    /// which gathers them: `rocpack_verify::Code` has a variant of the same name and severity
    /// for each.
    pub enum CmakeCode in "cmake" {
        /// A config includes or references a file that does not exist.
        CmakeMissingFile = ("cmake-missing-file", Error),
        /// A config references a path outside the prefix (often a build-machine path).
        CmakePathOutsidePrefix = ("cmake-path-outside-prefix", Error),
        /// Part of a config could not be evaluated; what it references was not checked.
        CmakeNotEvaluated = ("cmake-not-evaluated", Info),
        /// A file could not be read or is not valid CMake.
        UnreadableFile = ("unreadable-file", Error),
    }
}

/// The name the modules of this crate know their codes by.
use CmakeCode as Code;

/// A finding of the config check.
pub type Finding = rocpack_finding::Finding<CmakeCode>;
pub use paths::resolve_in_root;

/// What to check.
#[derive(Debug, Clone, Copy)]
pub struct CmakeOptions<'a> {
    /// The install prefix being verified (`/opt/rocm`, or a sysroot's `/`). With a sysroot it
    /// may be given inside it (`ROOT/opt/rocm`) or as the target-system path (`/opt/rocm`).
    pub prefix: &'a Path,
    /// The sysroot: absolute paths in configs name files of the target system, looked up
    /// under it.
    pub root: Option<&'a Path>,
}

/// The result of a check.
#[derive(Debug, Clone, Default)]
pub struct CmakeReport {
    /// Deduplicated, ordered by file and line.
    pub findings: Vec<Finding>,
    /// Distinct files read and evaluated (entry files and the files they include).
    pub files_evaluated: usize,
}

/// Largest file read.
const MAX_FILE: u64 = 16 << 20;

/// State shared by the evaluations of one check.
pub(crate) struct Session {
    pub fs: Fs,
    /// The prefix as a target-system path.
    pub prefix: String,
    cache: std::collections::HashMap<PathBuf, Rc<SourceFile>>,
    /// Host paths (links resolved) of the files evaluated.
    pub evaluated: HashSet<PathBuf>,
    pub findings: Vec<Finding>,
    /// `(file, path)` pairs already reported.
    pub reported: HashSet<(PathBuf, String)>,
    /// `(file, command)` pairs noted as unknown.
    pub noted_commands: HashSet<(PathBuf, String)>,
    /// `(file, target)` pairs noted as undefined.
    pub noted_targets: HashSet<(PathBuf, String)>,
    /// Project mode ([`project`]): a project's CMakeLists, not a package config.
    pub project: Option<Box<project::ProjectState>>,
}

impl Session {
    fn new(opts: &CmakeOptions) -> Session {
        let fs = Fs::new(opts.root);
        let p = absolute(opts.prefix);
        let prefix = match fs.target_of(&p) {
            Some(t) if fs.has_root => t,
            _ => p.to_string_lossy().into_owned(),
        };
        Session {
            fs,
            prefix,
            cache: std::collections::HashMap::new(),
            evaluated: HashSet::new(),
            findings: Vec::new(),
            reported: HashSet::new(),
            noted_commands: HashSet::new(),
            noted_targets: HashSet::new(),
            project: None,
        }
    }

    /// Reads and parses a file once per check.
    pub fn load(&mut self, host: &Path, target: &str) -> Result<Rc<SourceFile>, Finding> {
        if let Some(f) = self.cache.get(host) {
            return Ok(f.clone());
        }
        let unreadable = |message: String| {
            Finding::new(Code::UnreadableFile, host.to_path_buf(), message).detail("path", target)
        };
        let bytes = std::fs::metadata(host)
            .and_then(|m| {
                if m.len() > MAX_FILE {
                    Err(std::io::Error::other(format!(
                        "larger than {} MiB",
                        MAX_FILE >> 20
                    )))
                } else {
                    rocpack_scan::read_regular(host)
                }
            })
            .map_err(|e| unreadable(format!("cannot read CMake file {target}: {e}")))?;
        let nodes = lexer::parse(&bytes).map_err(|e| {
            unreadable(format!("{target} is not valid CMake: {e}"))
                .detail("line", e.line)
                .hint("CMake refuses the whole file: find_package() fails on it")
        })?;
        let file = Rc::new(SourceFile {
            host: host.to_path_buf(),
            target: target.to_owned(),
            nodes,
        });
        self.cache.insert(host.to_path_buf(), file.clone());
        Ok(file)
    }

    /// Evaluates one entry file.
    fn run_entry(&mut self, path: &Path) {
        let host = absolute(path);
        let target = match self.fs.target_of(&host) {
            Some(t) => t,
            None => host.to_string_lossy().into_owned(),
        };
        let name = host
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let package = package_name(&name);
        let entry = Rc::new(SourceFile {
            host: self.fs.host(&target),
            target: target.clone(),
            nodes: Vec::new(),
        });
        let loc = Loc {
            file: entry,
            line: 0,
        };
        let mut ev = Evaluator::new(self, &package);
        ev.eval_file(&target, &loc);
    }

    fn finish(mut self) -> CmakeReport {
        self.findings = consolidate::consolidate(std::mem::take(&mut self.findings), &self.fs);
        let mut seen = HashSet::new();
        self.findings.retain(|f| {
            let key = format!(
                "{}|{:?}|{}|{}|{}",
                f.code,
                f.severity,
                f.file.display(),
                f.message,
                serde_json::Value::Object(f.details.clone())
            );
            seen.insert(key)
        });
        let line = |f: &Finding| {
            f.details
                .get("line")
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0)
        };
        self.findings.sort_by(|a, b| {
            (&a.file, line(a), a.code, &a.message).cmp(&(&b.file, line(b), b.code, &b.message))
        });
        CmakeReport {
            findings: self.findings,
            files_evaluated: self.evaluated.len(),
        }
    }
}

/// The package name `find_package` would have used to load this file.
fn package_name(file_name: &str) -> String {
    for suffix in ["Config.cmake", "-config.cmake"] {
        if let Some(p) = file_name.strip_suffix(suffix) {
            return p.to_owned();
        }
    }
    for marker in ["-targets", "Targets"] {
        if let Some(i) = file_name.find(marker) {
            return file_name.get(..i).unwrap_or_default().to_owned();
        }
    }
    file_name
        .strip_suffix(".cmake")
        .unwrap_or(file_name)
        .to_owned()
}

/// Whether a file name is one `check_prefix` evaluates, and in which round: configs first,
/// then targets files, then per-configuration targets files (normally included by the
/// others, evaluated on their own only when nothing included them).
fn entry_rank(name: &str) -> Option<u8> {
    if name.ends_with("Config.cmake") || name.ends_with("-config.cmake") {
        Some(0)
    } else if name.ends_with("Targets.cmake") || name.ends_with("-targets.cmake") {
        Some(1)
    } else if name.ends_with(".cmake") && (name.contains("Targets") || name.contains("-targets")) {
        Some(2)
    } else {
        None
    }
}

/// Directory entries visited at most while looking for configs.
const MAX_WALK: usize = 5_000_000;

/// Finds entry files under a host directory, on the one walk (`rocpack_scan::walk`).
/// Directory links are not followed (the tree they point into is walked where it is); file
/// links are, inside the sysroot. Unreadable directories are passed over.
fn discover(fs: &Fs, dir: &Path, is_system_root: bool) -> Vec<(u8, PathBuf)> {
    use rocpack_scan::walk::{Kind, Visitor, WalkError, walk_tree};

    /// Where an entry is: its depth below `dir`, its name, and whether its parent is named
    /// like CMake's own directory (`cmake-3.31`).
    struct At {
        depth: u32,
        name: String,
        parent_is_cmake: bool,
    }

    struct Find<'a> {
        fs: &'a Fs,
        is_system_root: bool,
        visited: usize,
        out: Vec<(u8, PathBuf)>,
    }

    impl Visitor for Find<'_> {
        type State = At;

        fn name(&mut self, parent: &At, name: &std::ffi::OsStr) -> Option<At> {
            self.visited += 1;
            (self.visited <= MAX_WALK).then(|| At {
                depth: parent.depth + 1,
                name: name.to_string_lossy().into_owned(),
                parent_is_cmake: parent.name.starts_with("cmake"),
            })
        }

        fn enter(&mut self, at: &At) -> bool {
            let pseudo = self.is_system_root
                && at.depth == 1
                && matches!(at.name.as_str(), "proc" | "sys" | "dev" | "run");
            // CMake's own modules (`share/cmake-3.31/Modules/FindPkgConfig.cmake`) are not
            // package configs.
            let cmake_modules = at.name == "Modules" && at.parent_is_cmake;
            !pseudo && !cmake_modules
        }

        fn found(&mut self, at: At, path: PathBuf, kind: Kind) {
            let Some(rank) = entry_rank(&at.name) else {
                return;
            };
            let link_to_file = kind == Kind::Symlink
                && self
                    .fs
                    .target_of(&path)
                    .is_some_and(|p| self.fs.is_file(&p));
            if kind == Kind::File || link_to_file {
                self.out.push((rank, path));
            }
        }

        fn error(&mut self, _: PathBuf, _: WalkError) {}
    }

    let mut find = Find {
        fs,
        is_system_root,
        visited: 0,
        out: Vec::new(),
    };
    let top = At {
        depth: 0,
        name: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        parent_is_cmake: false,
    };
    walk_tree(dir, &top, &mut find);
    let mut out = find.out;
    out.sort();
    out
}

/// Whether a file is an export file written by CMake's `install(EXPORT)`.
fn is_generated_export(path: &Path) -> bool {
    use std::io::Read;
    let mut head = Vec::new();
    let ok = rocpack_scan::open_regular(path)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .is_ok();
    ok && String::from_utf8_lossy(&head).contains("Generated CMake target import file")
}

/// Finds every `*Config.cmake`, `*-config.cmake`, `*Targets*.cmake`/`*-targets*.cmake` under
/// `prefix` and checks them. A file already evaluated because another one included it is not
/// evaluated again on its own.
pub fn check_prefix(opts: &CmakeOptions) -> CmakeReport {
    let mut s = Session::new(opts);
    let host_prefix = s.fs.host(&s.prefix);
    let is_system_root = s.prefix == "/";
    let mut config_dirs = HashSet::new();
    for (rank, path) in discover(&s.fs, &host_prefix, is_system_root) {
        let target = s.fs.target_of(&absolute(&path)).unwrap_or_default();
        let key = s.fs.resolve(&target).unwrap_or_else(|| path.clone());
        if s.evaluated.contains(&key) {
            continue;
        }
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        if rank == 0 {
            config_dirs.insert(dir);
        } else if config_dirs.contains(&dir) && !is_generated_export(&path) {
            // A hand-written module named like a targets file (rocm-cmake's
            // ROCMInstallTargets.cmake) next to a package config is loaded through that config's
            // module path, not as an entry point.
            continue;
        }
        s.run_entry(&path);
    }
    s.finish()
}

/// Checks one config file (entry point; includes are followed).
pub fn check_file(path: &Path, opts: &CmakeOptions) -> CmakeReport {
    let mut s = Session::new(opts);
    s.run_entry(path);
    s.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names() {
        assert_eq!(package_name("rocblasConfig.cmake"), "rocblas");
        assert_eq!(package_name("rocblas-config.cmake"), "rocblas");
        assert_eq!(
            package_name("hsa-runtime64Targets-none.cmake"),
            "hsa-runtime64"
        );
        assert_eq!(package_name("hip-targets-release.cmake"), "hip");
    }

    #[test]
    fn ranks() {
        assert_eq!(entry_rank("FooConfig.cmake"), Some(0));
        assert_eq!(entry_rank("foo-config-version.cmake"), None);
        assert_eq!(entry_rank("FooConfigVersion.cmake"), None);
        assert_eq!(entry_rank("FooTargets.cmake"), Some(1));
        assert_eq!(entry_rank("FooTargets-release.cmake"), Some(2));
        assert_eq!(entry_rank("foo-targets-none.cmake"), Some(2));
    }
}
