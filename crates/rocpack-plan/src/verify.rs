//! `plan verify`: does an installed tree hold the device code a [`Plan`] asked for, and only
//! that?
//!
//! ```no_run
//! use rocpack_plan::{Knowledge, Request, Tool, plan, verify};
//! let kb = Knowledge::embedded().map_err(|e| e.to_string())?;
//! let request = Request { gpus: vec!["gfx1030".into()], ..Request::default() };
//! let p = plan(kb, &request, "6.4", Tool::Cmake)?;
//! let report = verify::verify(kb, &p, &["/opt/rocm".into()], None, None)?;
//! println!("{}", serde_json::to_string(&report)?);
//! std::process::exit(report.status().exit().code().into());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! One install may be several prefixes (Debian packages unpacked into separate directories);
//! they are searched as one tree. The layout — [`Layout::Rocm`] (`/opt/rocm`: `lib/`,
//! `include/`) or [`Layout::Debian`] (`/`: `usr/lib/x86_64-linux-gnu/`) — is given or detected:
//! a prefix holding `usr/lib/x86_64-linux-gnu` votes Debian, one holding `lib/`, `include/` or
//! `bin/` (and no `usr/lib/x86_64-linux-gnu`) votes ROCm, any other (a headers-only package)
//! does not vote; Debian wins when only it has votes, conflicting votes are an error.
//!
//! For every component the plan builds, in plan order, its files are the ones matched by the
//! knowledge base's `files` globs of the layout whose `releases` include the plan's release
//! (`*` within one path component, `**` any number of them). Each prefix is walked once, and
//! only into directories some glob can still match. A symbolic link to a file counts as that
//! file (Debian's `libx.so.1 -> libx.so.1.2` is one file); its target is read as a path of the
//! whole install, in its own prefix first, then in the others. Where that finds nothing, the link
//! is followed as the loader would follow it: on this machine (a Nix profile is a forest of links
//! into `/nix/store`), or, given a root (`--root`), inside that root only, an absolute target
//! meaning a path under it. Links to directories are walked where they lead, each directory once.
//!
//! Files whose role carries device code (`device-library`, `device-data`, `static-library`)
//! are read with [`rocpack_scan::inspect_file`] (mapped, never executed; in parallel): every
//! device code object (and `-fgpu-rdc` bitcode) counts its size for its processor — features
//! ignored, so `gfx90a:xnack+` and `gfx90a:xnack-` are both gfx90a. Sizes inside compressed
//! bundles are uncompressed sizes (the component's `compressed` flag says so). A `device-data`
//! file without code objects (Tensile `.dat` indexes, MIOpen `.kdb` databases) counts its whole
//! size for the processor its name ends with (`…_gfx90a.dat`, `gfx906_60.kdb`), or as `shared`
//! when its name names none.
//!
//! Per component the report gives the files (count, bytes), device code `found` per processor,
//! the planned processors with no device code (`missing`), device code for processors the plan
//! does not build the component for (`unplanned`, with what it costs: the INSTANCES_ONLY trap of
//! composable_kernel, where ten GPUs' code comes back when one was asked for, shows here), and
//! whether the component is installed at all: a component the plan expects device code from and
//! of which no file exists is `absent` — not "missing targets" but a missing component.
//! Components without expected device code and no files are `not-installed`, which is no
//! finding. A component for which the knowledge base knows no file names in the layout is
//! `unknown-files`: nothing could be checked, and that is said, not counted as a finding.
//!
//! A file that cannot be read, or whose containers are malformed, does not stop the walk: it is
//! listed with the reader's error (file, container, byte offset) and the device code read
//! before the error still counts.
//!
//! Exit status of `rocpack plan verify` ([`Status::exit_code`]): **0** every planned target's
//! device code is installed and every file was read; **1** a planned target's device code is
//! missing or a planned component is absent; **2** a file or directory could not be read (this
//! wins over 1), or the command could not run (a [`VerifyError`], bad arguments). Unplanned
//! device code is reported with its cost but does not change the status.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use rocpack_bytes::lossless_string;
use rocpack_finding::Exit;
use rocpack_offload::{ImageFormat, ReadCode, Severity};
use rocpack_scan::sysroot::Sysroot;
use rocpack_scan::walk::{Kind, MAX_DEPTH, WalkError};
use rocpack_scan::{ScanOptions, inspect_file};
use serde::Serialize;

use crate::kb::{DeviceCode, FileRole, Knowledge, Layout};
use crate::model::{ComponentPlan, Plan, processors};

/// The JSON report's schema identifier; bumped on any incompatible change.
pub const SCHEMA: &str = "rocpack-plan-verify/1";

/// Why verification could not start.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("no install prefix given")]
    NoPrefixes,
    #[error("{path}: {error}")]
    Prefix { path: String, error: String },
    #[error(
        "the prefixes mix layouts (Debian: {debian}; ROCm: {rocm}); name the layout explicitly"
    )]
    MixedLayouts { debian: String, rocm: String },
    #[error("the plan is for ROCm {0}, which this knowledge base does not know")]
    UnknownRelease(String),
    #[error("the plan names component {0:?}, which this knowledge base does not know")]
    UnknownComponent(String),
}

/// The overall outcome, in increasing order of severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every planned target's device code is installed and every file was read.
    Clean,
    /// A planned target's device code is missing, or a planned component is absent.
    Missing,
    /// A file or directory could not be read completely.
    Unreadable,
}

impl Status {
    /// How `rocpack plan verify` ends (exit status 0, 1, 2).
    pub fn exit(self) -> Exit {
        match self {
            Status::Clean => Exit::Ok,
            Status::Missing => Exit::NoMatch,
            Status::Unreadable => Exit::Error,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Clean => "clean",
            Status::Missing => "missing",
            Status::Unreadable => "unreadable",
        }
    }
}

/// Whether a component's files were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ComponentState {
    /// At least one file matched.
    Installed,
    /// No file matched, and the plan expects device code from it: a finding.
    Absent,
    /// No file matched; no device code is expected from it.
    NotInstalled,
    /// The knowledge base names no files of this layout (for this release): not checked.
    UnknownFiles,
}

/// How a file's bytes were attributed to processors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Attribution {
    /// By the code objects read from it.
    CodeObjects,
    /// Device data without code objects, by the processor its name ends with.
    FileName,
    /// Device data without code objects whose name names no processor.
    Shared,
    /// Its role carries device code, but it holds none (a host-only build).
    NoDeviceCode,
    /// Its role carries no device code; not read.
    NotRead,
}

/// One installed file of a component.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    /// The path found (a regular file's path rather than a link's, when both matched).
    pub path: String,
    /// Other matched paths that are the same file (symbolic or hard links).
    pub links: Vec<String>,
    pub role: FileRole,
    /// File size in bytes.
    pub size: u64,
    pub attribution: Attribution,
    /// Processor → bytes of device code (or of the file, attributed by name).
    pub device: BTreeMap<String, u64>,
    /// Some code objects came out of compressed bundles (their sizes are uncompressed).
    pub compressed: bool,
    /// Reading it hit an error (listed in [`Report::problems`]).
    pub unreadable: bool,
}

/// Device code for a processor the plan does not build the component for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unplanned {
    pub processor: String,
    pub bytes: u64,
}

/// What was found of one component.
#[derive(Debug, Clone, Serialize)]
pub struct ComponentReport {
    /// Spelled as upstream spells it.
    pub name: String,
    pub state: ComponentState,
    pub device_code: DeviceCode,
    /// Processors the plan builds it for (its `targets`, features dropped).
    pub planned: Vec<String>,
    /// Processors whose device code the plan expects in its files (`expect_device_code`).
    pub expected: Vec<String>,
    /// Files found.
    pub files: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Files read for device code.
    pub device_files: usize,
    /// Processor → bytes of device code, every processor found (planned or not).
    pub found: BTreeMap<String, u64>,
    /// Expected processors with no device code in its files.
    pub missing: Vec<String>,
    /// Processors found that are not planned, with their bytes, largest first.
    pub unplanned: Vec<Unplanned>,
    /// Sum of `unplanned` bytes.
    pub unplanned_bytes: u64,
    /// Device-data files attributed to no processor.
    pub shared_files: usize,
    pub shared_bytes: u64,
    /// Some sizes in `found` are uncompressed sizes from compressed bundles.
    pub compressed: bool,
    /// Files whose reading hit an error.
    pub unreadable_files: usize,
    /// The files, by path.
    pub paths: Vec<FileReport>,
}

/// A file or directory that could not be read (completely), or a dangling link.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    pub path: String,
    /// `error` makes the report [`Status::Unreadable`]; `warning` does not.
    pub severity: Severity,
    /// Stable kebab-case code, of the reading domain (docs/diagnostics.md).
    pub code: ReadCode,
    /// Where in the file, e.g. `.hip_fatbin > bundle #3`; `null` for the whole file.
    pub container: Option<String>,
    /// Byte offset in the file (or in decompressed data, see `offset_in_file`).
    pub offset: Option<u64>,
    pub offset_in_file: bool,
    pub message: String,
}

/// Counts over the report.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct VerifySummary {
    /// Components the plan builds (all checked).
    pub components: usize,
    pub installed: usize,
    pub absent: usize,
    pub not_installed: usize,
    pub unknown_files: usize,
    /// Components with missing planned targets.
    pub with_missing: usize,
    /// Components with unplanned device code.
    pub with_unplanned: usize,
    pub unplanned_bytes: u64,
    /// Distinct files found across components, and their bytes.
    pub files: usize,
    pub bytes: u64,
    /// Files and directories that could not be read (completely).
    pub unreadable: usize,
    pub status: Status,
}

/// The result of [`verify`]; serializes as the documented JSON report (docs/json.md,
/// "plan verify").
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: &'static str,
    pub rocpack: &'static str,
    /// The plan's release line.
    pub release: String,
    /// The plan's requested targets.
    pub targets: Vec<String>,
    pub prefixes: Vec<String>,
    pub layout: Layout,
    /// The layout was detected, not given.
    pub layout_detected: bool,
    /// Components the plan builds, in plan order.
    pub components: Vec<ComponentReport>,
    /// Components the plan does not build (not checked).
    pub skipped: Vec<String>,
    pub problems: Vec<Problem>,
    pub summary: VerifySummary,
}

impl Report {
    /// Unreadable beats missing beats clean.
    pub fn status(&self) -> Status {
        if self.problems.iter().any(|p| p.severity == Severity::Error) {
            Status::Unreadable
        } else if self
            .components
            .iter()
            .any(|c| c.state == ComponentState::Absent || !c.missing.is_empty())
        {
            Status::Missing
        } else {
            Status::Clean
        }
    }

    /// A component by name.
    pub fn component(&self, name: &str) -> Option<&ComponentReport> {
        self.components.iter().find(|c| c.name == name)
    }
}

// ------------------------------------------------------------------------------------------------
// Globs
// ------------------------------------------------------------------------------------------------

/// One path component of a glob.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seg {
    /// `**`: any number of components.
    AnyDepth,
    /// A component; `*` matches any run of bytes within it.
    Name(Vec<u8>),
}

/// A compiled glob and what a match means.
#[derive(Debug)]
struct Glob {
    segs: Vec<Seg>,
    /// Index into the plan's checked components.
    component: usize,
    role: FileRole,
}

fn compile(glob: &str) -> Vec<Seg> {
    glob.split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .map(|s| {
            if s == "**" {
                Seg::AnyDepth
            } else {
                Seg::Name(s.as_bytes().to_vec())
            }
        })
        .collect()
}

/// A position in a glob: (glob, number of segments matched).
type GlobState = (usize, usize);

/// All globs matched at once while walking: the set of positions reached so far, advanced one
/// path component at a time (a small NFA; `**` stays in place or moves on).
struct Matcher {
    globs: Vec<Glob>,
}

impl Matcher {
    fn seg(&self, (g, s): GlobState) -> Option<&Seg> {
        self.globs.get(g).and_then(|glob| glob.segs.get(s))
    }

    fn start(&self) -> Vec<GlobState> {
        let mut states: Vec<GlobState> = (0..self.globs.len()).map(|g| (g, 0)).collect();
        self.close(&mut states);
        states
    }

    /// Adds the positions after each `**` (it may match no component).
    fn close(&self, states: &mut Vec<GlobState>) {
        let mut i = 0;
        while let Some(&(g, s)) = states.get(i) {
            if self.seg((g, s)) == Some(&Seg::AnyDepth) && !states.contains(&(g, s + 1)) {
                states.push((g, s + 1));
            }
            i += 1;
        }
    }

    fn step(&self, states: &[GlobState], name: &[u8]) -> Vec<GlobState> {
        let mut next = Vec::new();
        for &st in states {
            let moved = match self.seg(st) {
                Some(Seg::AnyDepth) => Some(st),
                Some(Seg::Name(p)) if rocpack_scan::glob::component_matches(p, name) => {
                    Some((st.0, st.1 + 1))
                }
                _ => None,
            };
            if let Some(m) = moved.filter(|m| !next.contains(m)) {
                next.push(m);
            }
        }
        self.close(&mut next);
        next
    }

    /// Globs fully matched.
    fn accepted(&self, states: &[GlobState]) -> Vec<usize> {
        states
            .iter()
            .filter(|&&(g, s)| self.globs.get(g).is_some_and(|glob| glob.segs.len() == s))
            .map(|&(g, _)| g)
            .collect()
    }

    /// Some glob can match something below.
    fn can_descend(&self, states: &[GlobState]) -> bool {
        states.iter().any(|&st| self.seg(st).is_some())
    }
}

// ------------------------------------------------------------------------------------------------
// Walking
// ------------------------------------------------------------------------------------------------

/// A path some glob matched.
struct Hit {
    prefix: usize,
    /// Relative to the prefix, as the install names it.
    rel: PathBuf,
    /// Where the entry itself is (differs from `prefix/rel` below a linked directory).
    path: PathBuf,
    globs: Vec<usize>,
    symlink: bool,
}

fn path_string(p: &Path) -> String {
    lossless_string(p.as_os_str().as_bytes())
}

fn problem(path: &Path, code: ReadCode, message: String) -> Problem {
    Problem {
        path: path_string(path),
        severity: code.severity(),
        code,
        container: None,
        offset: None,
        offset_in_file: false,
        message,
    }
}

struct Walk<'a> {
    matcher: &'a Matcher,
    prefixes: &'a [PathBuf],
    prefix: usize,
    root: &'a Sysroot,
    hits: Vec<Hit>,
    problems: Vec<Problem>,
}

/// What the walk carries to an entry: the path the install names it by, and the positions
/// the globs have reached there.
type WalkState = (PathBuf, Vec<GlobState>);

impl rocpack_scan::walk::Visitor for Walk<'_> {
    type State = WalkState;
    /// Linked directories are followed: each directory is walked once.
    const ONCE_PER_DIRECTORY: bool = true;

    /// Only names some glob can still match are looked at.
    fn name(&mut self, (rel, states): &WalkState, name: &OsStr) -> Option<WalkState> {
        let next = self.matcher.step(states, name.as_bytes());
        (!next.is_empty()).then(|| (rel.join(name), next))
    }

    fn enter(&mut self, (_, next): &WalkState) -> bool {
        self.matcher.can_descend(next)
    }

    /// A linked directory (a Nix profile links whole directories into the store) is walked
    /// where the link leads, as the loader would reach it.
    fn follow(&mut self, (child, next): &WalkState, path: &Path) -> Option<PathBuf> {
        if !self.matcher.can_descend(next) {
            return None;
        }
        resolve_link(self.prefixes, self.prefix, child, path, self.root)
            .filter(|(_, m)| m.is_dir())
            .map(|(to, _)| to)
    }

    fn found(&mut self, (child, next): WalkState, path: PathBuf, kind: Kind) {
        let globs = self.matcher.accepted(&next);
        if globs.is_empty() {
            return;
        }
        match kind {
            Kind::Special => {
                // A FIFO, socket or device where the install should have a file: never opened.
                let odd = std::fs::symlink_metadata(&path)
                    .ok()
                    .and_then(|m| rocpack_scan::NotRegular::of_type(m.file_type()));
                let message = match odd {
                    Some(odd) => rocpack_scan::NotRegular::error(odd).to_string(),
                    None => "not a regular file".to_owned(),
                };
                self.problems
                    .push(problem(&path, ReadCode::NotRegularFile, message));
            }
            Kind::File | Kind::Symlink => self.hits.push(Hit {
                prefix: self.prefix,
                rel: child,
                path,
                globs,
                symlink: kind == Kind::Symlink,
            }),
        }
    }

    fn error(&mut self, path: PathBuf, error: WalkError) {
        let (code, message) = match error {
            WalkError::TooDeep => (
                ReadCode::TooDeep,
                format!("directory nesting deeper than {MAX_DEPTH}; not walked further"),
            ),
            WalkError::Dir(e) | WalkError::Listing(e) => {
                (ReadCode::UnreadableDirectory, e.to_string())
            }
            WalkError::Entry(e) | WalkError::Path(e) => (ReadCode::UnreadableFile, e.to_string()),
        };
        self.problems.push(problem(&path, code, message));
    }
}

/// Where a symbolic link found at `rel` in prefix `own` (at host path `path`) leads: a regular
/// file or a directory, with its metadata. `None`: dangling or a loop.
///
/// The prefixes are one install: first the link is followed inside them, an absolute target
/// relative to the install's root and each step looked up in the link's own prefix first, then in
/// the others (a `-dev` package's `libx.so -> libx.so.1` points into the runtime package).
/// Where that finds nothing, the link is followed as the loader would: by the kernel on this
/// machine (a Nix profile's links into `/nix/store`), or, with `--root`, inside that root only.
fn resolve_link(
    prefixes: &[PathBuf],
    own: usize,
    rel: &Path,
    path: &Path,
    root: &Sysroot,
) -> Option<(PathBuf, std::fs::Metadata)> {
    if let Some(found) = resolve_in_install(prefixes, own, rel) {
        return Some(found);
    }
    let real = root.resolve(&root.target(path))?;
    let meta = std::fs::metadata(&real).ok()?;
    (meta.is_file() || meta.is_dir()).then_some((real, meta))
}

/// [`resolve_link`] inside the prefixes only.
fn resolve_in_install(
    prefixes: &[PathBuf],
    own: usize,
    rel: &Path,
) -> Option<(PathBuf, std::fs::Metadata)> {
    let mut at = own;
    let mut logical = rel.to_path_buf();
    for _ in 0..rocpack_scan::sysroot::MAX_LINKS {
        let target = std::fs::read_link(prefixes.get(at)?.join(&logical)).ok()?;
        let joined = if target.is_absolute() {
            target
        } else {
            logical.parent().unwrap_or(Path::new("")).join(target)
        };
        // `..` above the top stays at the top: the install's root.
        logical = rocpack_scan::sysroot::lexical(&joined);
        let order = std::iter::once(at).chain((0..prefixes.len()).filter(|&i| i != at));
        let mut next = None;
        for i in order {
            let Some(p) = prefixes.get(i).map(|p| p.join(&logical)) else {
                continue;
            };
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_file() || m.is_dir() => return Some((p, m)),
                Ok(m) if m.file_type().is_symlink() => {
                    next = Some(i);
                    break;
                }
                Ok(_) => return None,
                Err(_) => {}
            }
        }
        at = next?;
    }
    None
}

/// One distinct file (by device and inode) with every path that matched it.
struct Record {
    /// The path shown: a regular file's when one matched, else the first link's.
    path: PathBuf,
    /// Where its bytes are read (the link's target for a link).
    read: PathBuf,
    regular: bool,
    links: Vec<PathBuf>,
    size: u64,
    /// Component → role (a device-carrying role wins over another).
    claims: BTreeMap<usize, FileRole>,
}

/// What reading one file found.
#[derive(Default)]
struct Read {
    /// Processor → bytes of device code.
    code: BTreeMap<String, u64>,
    compressed: bool,
    problems: Vec<Problem>,
}

fn read_device_code(record: &Record, scan: &ScanOptions) -> Read {
    let result = inspect_file(&record.read, scan, None);
    let mut read = Read::default();
    let shown = &record.path;
    if let Some(e) = &result.io_error {
        read.problems.push(problem(
            shown,
            result.io_error_code.unwrap_or(ReadCode::UnreadableFile),
            e.clone(),
        ));
    }
    let Some(i) = &result.inspection else {
        return read;
    };
    for co in &i.code_objects {
        if !co.is_amd_gpu() || !matches!(co.format, ImageFormat::CodeObject | ImageFormat::Bitcode)
        {
            continue;
        }
        let Some(t) = &co.target else { continue };
        *read.code.entry(t.processor.clone()).or_insert(0) += co.size;
        read.compressed |= co.compressed;
    }
    for d in &i.diagnostics {
        let location = i.location(d.container);
        read.problems.push(Problem {
            path: path_string(shown),
            severity: d.severity,
            code: d.code,
            container: (location != "-").then_some(location),
            offset: d.offset,
            offset_in_file: d.offset_in_file,
            message: d.message.clone(),
        });
    }
    read
}

/// The processor a file's name ends with: the last `gfx…` in it that the catalogue knows
/// (`…_gfx90a.dat`, `Kernels.so-000-gfx90a-xnack+.hsaco`, `gfx906_60.kdb`, `…gfx10-3-generic.co`).
pub fn processor_in_name(name: &str) -> Option<String> {
    let known = |s: &str| {
        rocpack_amdgpu::catalogue::find(s)
            .filter(|g| g.name.eq_ignore_ascii_case(s))
            .map(|g| g.name.clone())
    };
    let lower = name.to_ascii_lowercase();
    let mut end = lower.len();
    while let Some(at) = lower.get(..end).and_then(|s| s.rfind("gfx")) {
        let rest = lower.get(at..).unwrap_or_default();
        // Generic targets have dashes: take the longest `gfx…-generic`.
        let generic = rest
            .match_indices("-generic")
            .map(|(i, g)| i + g.len())
            .filter_map(|e| rest.get(..e))
            .filter(|t| t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
            .filter_map(known)
            .last();
        if generic.is_some() {
            return generic;
        }
        // Otherwise the longest alphanumeric run that is a processor (`gfx90a68` → gfx90a).
        let run = rest.bytes().take_while(u8::is_ascii_alphanumeric).count();
        if let Some(p) = (4..=run).rev().find_map(|n| rest.get(..n).and_then(known)) {
            return Some(p);
        }
        end = at;
    }
    None
}

fn detect_layout(prefixes: &[PathBuf]) -> Result<Layout, VerifyError> {
    let mut debian = Vec::new();
    let mut rocm = Vec::new();
    for p in prefixes {
        if p.join("usr/lib/x86_64-linux-gnu").is_dir() {
            debian.push(path_string(p));
        } else if ["lib", "include", "bin"].iter().any(|d| p.join(d).is_dir()) {
            rocm.push(path_string(p));
        }
    }
    match (debian.is_empty(), rocm.is_empty()) {
        (false, false) => Err(VerifyError::MixedLayouts {
            debian: debian.join(", "),
            rocm: rocm.join(", "),
        }),
        (false, true) => Ok(Layout::Debian),
        _ => Ok(Layout::Rocm),
    }
}

/// Checks the installed files under `prefixes` (one install) against `plan`.
///
/// # Errors
/// No prefix; a prefix that is not a readable directory; prefixes whose layouts disagree when
/// `layout` is `None`; a plan for a release or naming a component the knowledge base does not
/// know. Unreadable files are not errors: they are [`Report::problems`]. Files are read with
/// the default [`ScanOptions`].
pub fn verify(
    kb: &Knowledge,
    plan: &Plan,
    prefixes: &[PathBuf],
    layout: Option<Layout>,
    root: Option<&Path>,
) -> Result<Report, VerifyError> {
    verify_with_progress(
        kb,
        plan,
        prefixes,
        layout,
        root,
        &ScanOptions::default(),
        &|_, _| {},
    )
}

/// [`verify`], reading device code with `scan` (the limits and `--deep` of the command line)
/// and calling `progress(done, total)` as the files that carry device code are read: bytes of
/// those files read so far, and in all (from any thread; first with `done` 0).
///
/// # Errors
/// As [`verify`].
pub fn verify_with_progress(
    kb: &Knowledge,
    plan: &Plan,
    prefixes: &[PathBuf],
    layout: Option<Layout>,
    root: Option<&Path>,
    scan: &ScanOptions,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Report, VerifyError> {
    if prefixes.is_empty() {
        return Err(VerifyError::NoPrefixes);
    }
    if let Some(r) = root {
        if let Some(p) = prefixes.iter().find(|p| !p.starts_with(r)) {
            return Err(VerifyError::Prefix {
                path: path_string(p),
                error: format!("not inside --root {}", path_string(r)),
            });
        }
    }
    let root = Sysroot::new(root);
    for p in prefixes {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(VerifyError::Prefix {
                    path: path_string(p),
                    error: "not a directory".into(),
                });
            }
            Err(e) => {
                return Err(VerifyError::Prefix {
                    path: path_string(p),
                    error: e.to_string(),
                });
            }
        }
    }
    if !kb.releases.contains_key(&plan.release) {
        return Err(VerifyError::UnknownRelease(plan.release.clone()));
    }
    let layout_detected = layout.is_none();
    let layout = match layout {
        Some(l) => l,
        None => detect_layout(prefixes)?,
    };

    let built: Vec<&ComponentPlan> = plan.components.iter().filter(|c| c.is_built()).collect();
    let (matcher, has_globs) = matcher_for(kb, &built, &plan.release, layout)?;

    // One walk per prefix.
    let walks: Vec<(Vec<Hit>, Vec<Problem>)> = prefixes
        .par_iter()
        .enumerate()
        .map(|(i, prefix)| {
            let mut w = Walk {
                matcher: &matcher,
                prefixes,
                prefix: i,
                root: &root,
                hits: Vec::new(),
                problems: Vec::new(),
            };
            rocpack_scan::walk::walk_tree(prefix, &(PathBuf::new(), matcher.start()), &mut w);
            (w.hits, w.problems)
        })
        .collect();
    let mut problems = Vec::new();
    let mut hits = Vec::new();
    for (h, p) in walks {
        hits.extend(h);
        problems.extend(p);
    }
    let records = distinct_files(prefixes, hits, &matcher, &root, &mut problems);

    // Device code, read in parallel.
    let carries = |r: &Record| r.claims.values().any(|role| role.carries_device_code());
    let total: u64 = records.iter().filter(|r| carries(r)).map(|r| r.size).sum();
    let done = std::sync::atomic::AtomicU64::new(0);
    progress(0, total);
    let reads: Vec<Option<Read>> = records
        .par_iter()
        .map(|r| {
            carries(r).then(|| {
                let read = read_device_code(r, scan);
                let now = done.fetch_add(r.size, std::sync::atomic::Ordering::Relaxed) + r.size;
                progress(now, total);
                read
            })
        })
        .collect();

    // Per component, its records in path order.
    let mut of_component: Vec<Vec<usize>> = vec![Vec::new(); built.len()];
    for (ri, r) in records.iter().enumerate() {
        for &ci in r.claims.keys() {
            if let Some(v) = of_component.get_mut(ci) {
                v.push(ri);
            }
        }
    }
    let components: Vec<ComponentReport> = built
        .iter()
        .zip(&of_component)
        .enumerate()
        .map(|(ci, (c, mine))| {
            let has = has_globs.get(ci).copied().unwrap_or(false);
            component_report(ci, c, has, &records, &reads, mine)
        })
        .collect();

    // Problems of the files read, in path order, after the walk's.
    for read in reads.into_iter().flatten() {
        problems.extend(read.problems);
    }

    let count = |s: ComponentState| components.iter().filter(|c| c.state == s).count();
    let unreadable_paths: BTreeSet<&str> = problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .map(|p| p.path.as_str())
        .collect();
    let summary = VerifySummary {
        components: components.len(),
        installed: count(ComponentState::Installed),
        absent: count(ComponentState::Absent),
        not_installed: count(ComponentState::NotInstalled),
        unknown_files: count(ComponentState::UnknownFiles),
        with_missing: components.iter().filter(|c| !c.missing.is_empty()).count(),
        with_unplanned: components
            .iter()
            .filter(|c| !c.unplanned.is_empty())
            .count(),
        unplanned_bytes: components.iter().map(|c| c.unplanned_bytes).sum(),
        files: records.len(),
        bytes: records.iter().map(|r| r.size).sum(),
        unreadable: unreadable_paths.len(),
        status: Status::Clean,
    };
    let mut report = Report {
        schema: SCHEMA,
        rocpack: env!("CARGO_PKG_VERSION"),
        release: plan.release.clone(),
        targets: plan.targets.clone(),
        prefixes: prefixes.iter().map(|p| path_string(p)).collect(),
        layout,
        layout_detected,
        components,
        skipped: plan
            .components
            .iter()
            .filter(|c| !c.is_built())
            .map(|c| c.name.clone())
            .collect(),
        problems,
        summary,
    };
    report.summary.status = report.status();
    Ok(report)
}

/// The globs of every built component for the layout and release, and which components have
/// any.
fn matcher_for(
    kb: &Knowledge,
    built: &[&ComponentPlan],
    release: &str,
    layout: Layout,
) -> Result<(Matcher, Vec<bool>), VerifyError> {
    let mut globs = Vec::new();
    let mut has_globs = vec![false; built.len()];
    for (ci, c) in built.iter().enumerate() {
        let info = kb
            .components
            .get(&c.name)
            .ok_or_else(|| VerifyError::UnknownComponent(c.name.clone()))?;
        let applies = |f: &&crate::kb::FileGlob| {
            f.layout == layout
                && f.releases
                    .as_ref()
                    .is_none_or(|r| r.iter().any(|r| r == release))
        };
        for f in info.files.iter().filter(applies) {
            globs.push(Glob {
                segs: compile(&f.glob),
                component: ci,
                role: f.role,
            });
            if let Some(h) = has_globs.get_mut(ci) {
                *h = true;
            }
        }
    }
    Ok((Matcher { globs }, has_globs))
}

/// The distinct files (by device and inode) behind the paths matched, sorted by path: links
/// and hard links are one file, a link's target is read.
fn distinct_files(
    prefixes: &[PathBuf],
    hits: Vec<Hit>,
    matcher: &Matcher,
    root: &Sysroot,
    problems: &mut Vec<Problem>,
) -> Vec<Record> {
    let mut records: Vec<Record> = Vec::new();
    let mut by_inode: HashMap<(u64, u64), usize> = HashMap::new();
    for hit in hits {
        let Some(prefix) = prefixes.get(hit.prefix) else {
            continue;
        };
        let path = prefix.join(&hit.rel);
        let (read, meta) = if hit.symlink {
            let Some(found) = resolve_link(prefixes, hit.prefix, &hit.rel, &hit.path, root)
                .filter(|(_, m)| m.is_file())
            else {
                let within = match root.root() {
                    Some(r) => format!("inside {}", path_string(r)),
                    None => "on this machine".to_owned(),
                };
                problems.push(problem(
                    &path,
                    ReadCode::DanglingLink,
                    format!(
                        "symbolic link that leads to no file, in the install or {within} \
                         (dangling, a loop or a directory); not counted"
                    ),
                ));
                continue;
            };
            found
        } else {
            match std::fs::metadata(&hit.path) {
                Ok(m) => (path.clone(), m),
                Err(e) => {
                    problems.push(problem(&path, ReadCode::UnreadableFile, e.to_string()));
                    continue;
                }
            }
        };
        let idx = *by_inode.entry((meta.dev(), meta.ino())).or_insert_with(|| {
            records.push(Record {
                path: path.clone(),
                read: read.clone(),
                regular: !hit.symlink,
                links: Vec::new(),
                size: meta.len(),
                claims: BTreeMap::new(),
            });
            records.len() - 1
        });
        let Some(rec) = records.get_mut(idx) else {
            continue;
        };
        if rec.path != path {
            if !rec.regular && !hit.symlink {
                // Show the file under its own name, the link as a link.
                let link = std::mem::replace(&mut rec.path, path);
                rec.links.push(link);
                rec.read = read;
                rec.regular = true;
            } else {
                rec.links.push(path);
            }
        }
        for g in hit.globs.iter().filter_map(|&g| matcher.globs.get(g)) {
            let role = rec.claims.entry(g.component).or_insert(g.role);
            if !role.carries_device_code() && g.role.carries_device_code() {
                *role = g.role;
            }
        }
    }
    records.sort_by(|a, b| a.path.cmp(&b.path));
    records
}

/// What was found of built component `ci`.
fn component_report(
    ci: usize,
    c: &ComponentPlan,
    has_globs: bool,
    records: &[Record],
    reads: &[Option<Read>],
    mine: &[usize],
) -> ComponentReport {
    let planned = processors(c.targets.as_deref().unwrap_or_default());
    let mut report = ComponentReport {
        name: c.name.clone(),
        state: ComponentState::Installed,
        device_code: c.device_code,
        planned,
        expected: c.expect_device_code.clone(),
        files: 0,
        bytes: 0,
        device_files: 0,
        found: BTreeMap::new(),
        missing: Vec::new(),
        unplanned: Vec::new(),
        unplanned_bytes: 0,
        shared_files: 0,
        shared_bytes: 0,
        compressed: false,
        unreadable_files: 0,
        paths: Vec::new(),
    };
    for &ri in mine {
        let (Some(rec), Some(read)) = (records.get(ri), reads.get(ri)) else {
            continue;
        };
        let Some(&role) = rec.claims.get(&ci) else {
            continue;
        };
        report.files += 1;
        report.bytes += rec.size;
        let mut file = FileReport {
            path: path_string(&rec.path),
            links: rec.links.iter().map(|p| path_string(p)).collect(),
            role,
            size: rec.size,
            attribution: Attribution::NotRead,
            device: BTreeMap::new(),
            compressed: false,
            unreadable: false,
        };
        if let (true, Some(read)) = (role.carries_device_code(), read) {
            report.device_files += 1;
            file.compressed = read.compressed;
            file.unreadable = read.problems.iter().any(|p| p.severity == Severity::Error);
            if !read.code.is_empty() {
                file.attribution = Attribution::CodeObjects;
                file.device = read.code.clone();
            } else if role == FileRole::DeviceData {
                let name = rec
                    .path
                    .file_name()
                    .map(|n| lossless_string(n.as_bytes()))
                    .unwrap_or_default();
                if let Some(p) = processor_in_name(&name) {
                    file.attribution = Attribution::FileName;
                    file.device.insert(p, rec.size);
                } else {
                    file.attribution = Attribution::Shared;
                    report.shared_files += 1;
                    report.shared_bytes += rec.size;
                }
            } else {
                file.attribution = Attribution::NoDeviceCode;
            }
            for (p, b) in &file.device {
                *report.found.entry(p.clone()).or_insert(0) += b;
            }
            report.compressed |= file.compressed;
            report.unreadable_files += usize::from(file.unreadable);
        }
        report.paths.push(file);
    }
    report.state = match (report.files, has_globs, report.expected.is_empty()) {
        (0, false, _) => ComponentState::UnknownFiles,
        (0, true, false) => ComponentState::Absent,
        (0, true, true) => ComponentState::NotInstalled,
        _ => ComponentState::Installed,
    };
    if report.state == ComponentState::Installed {
        report.missing = report
            .expected
            .iter()
            .filter(|p| !report.found.contains_key(*p))
            .cloned()
            .collect();
    }
    report.unplanned = report
        .found
        .iter()
        .filter(|(p, _)| !report.planned.contains(p))
        .map(|(p, &bytes)| Unplanned {
            processor: p.clone(),
            bytes,
        })
        .collect();
    report
        .unplanned
        .sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.processor.cmp(&b.processor)));
    report.unplanned_bytes = report.unplanned.iter().map(|u| u.bytes).sum();
    report
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn matches(glob: &str, path: &str) -> bool {
        let m = Matcher {
            globs: vec![Glob {
                segs: compile(glob),
                component: 0,
                role: FileRole::Tool,
            }],
        };
        let mut states = m.start();
        for c in path.split('/') {
            states = m.step(&states, c.as_bytes());
        }
        !m.accepted(&states).is_empty()
    }

    #[test]
    fn globs_match_within_and_across_components() {
        assert!(matches("lib/librocrand.so*", "lib/librocrand.so"));
        assert!(matches("lib/librocrand.so*", "lib/librocrand.so.1.1"));
        assert!(!matches("lib/librocrand.so*", "lib/x/librocrand.so"));
        assert!(!matches("lib/libhipblas.so*", "lib/libhipblaslt.so.0"));
        assert!(matches(
            "usr/lib/x86_64-linux-gnu/rocblas/*/library/*",
            "usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library/TensileLibrary_gfx90a.dat"
        ));
        assert!(!matches(
            "usr/lib/x86_64-linux-gnu/rocblas/*/library/*",
            "usr/lib/x86_64-linux-gnu/rocblas/library/x.dat"
        ));
        assert!(matches("include/rocprim/**", "include/rocprim/a.h"));
        assert!(matches("include/rocprim/**", "include/rocprim/d/e/a.h"));
        assert!(!matches("include/rocprim/**", "include/hipcub/a.h"));
        assert!(matches("**/x.a", "x.a"));
        assert!(matches("a/**/b/**/c", "a/b/c"));
        assert!(matches("a/**/b/**/c", "a/1/b/2/3/c"));
        assert!(matches(
            "lib/libdevice_*_operations.a",
            "lib/libdevice_gemm_operations.a"
        ));
        assert!(!matches(
            "lib/libdevice_*_operations.a",
            "lib/libdevice_operations.a"
        ));
        assert!(matches("lib/*a*b*", "lib/xaybz"));
        assert!(!matches("lib/*a*b", "lib/xaybz"));
    }

    #[test]
    fn processors_in_file_names() {
        let p = |n: &str| processor_in_name(n);
        assert_eq!(
            p("TensileLibrary_Type_HH_Contraction_l_Alik_Bjlk_Cijk_Dijk_gfx90a.dat").as_deref(),
            Some("gfx90a")
        );
        assert_eq!(
            p("Kernels.so-000-gfx90a-xnack+.hsaco").as_deref(),
            Some("gfx90a")
        );
        assert_eq!(p("gfx906_60.kdb").as_deref(), Some("gfx906"));
        assert_eq!(p("gfx90a68.kdb").as_deref(), Some("gfx90a"));
        assert_eq!(p("extop_gfx1100.co").as_deref(), Some("gfx1100"));
        assert_eq!(
            p("kernels_gfx10-3-generic.co").as_deref(),
            Some("gfx10-3-generic")
        );
        assert_eq!(p("TensileLibrary_Type_HH_fallback.dat"), None);
        assert_eq!(p("TensileManifest.txt"), None);
        assert_eq!(p("gfxzzz.dat"), None);
    }

    #[test]
    fn normalize_stays_in_the_install() {
        let normalize = rocpack_scan::sysroot::lexical;
        assert_eq!(normalize(Path::new("a/b/../c")), PathBuf::from("a/c"));
        assert_eq!(normalize(Path::new("/../../etc/x")), PathBuf::from("etc/x"));
    }
}
