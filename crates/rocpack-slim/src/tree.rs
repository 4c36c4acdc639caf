//! Rewriting the files of a tree: every file given or found under a directory given, each to
//! its destination (itself, a mirror under an output directory, or nowhere in a dry run), in
//! parallel, continuing past files that cannot be done. The command line only renders the
//! [`Outcome`]s.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use rayon::prelude::*;
use rocpack_scan::PathError;

use crate::plan::{FilePlan, Operation, plan};
use crate::stream::Input;
use crate::write::{Progress, WriteOptions, Written};

/// Where the user asked the new files to go.
#[derive(Debug, Clone)]
pub enum Target {
    /// Nowhere: report what would change.
    DryRun,
    /// Replace each file.
    InPlace,
    /// Into this directory, mirroring the tree (or, for one file given, this file).
    Output(PathBuf),
}

/// Where each file goes.
#[derive(Debug, Clone)]
pub enum Dest {
    /// Nothing is written.
    DryRun,
    /// Replace the file.
    InPlace,
    /// Write to this path.
    To(PathBuf),
}

/// What happened to one file.
#[derive(Debug)]
pub struct Outcome {
    /// The file as found.
    pub path: PathBuf,
    /// Where it was written.
    pub dest: Option<PathBuf>,
    /// What the rewrite does (or would do).
    pub plan: Option<FilePlan>,
    /// What the write did.
    pub written: Option<Written>,
    /// Why it was not rewritten.
    pub error: Option<String>,
    /// Nothing was to be written.
    pub dry_run: bool,
    /// The file was to be replaced.
    pub in_place: bool,
}

impl Outcome {
    /// Whether the file could not be done as asked.
    pub fn failed(&self) -> bool {
        self.error.is_some() || self.plan.as_ref().is_some_and(FilePlan::has_errors)
    }
}

/// A tree rewritten.
#[derive(Debug)]
pub struct TreeOutcome {
    /// The files that hold something to report (bundles, a code object, a skip, an error), in
    /// walk order.
    pub outcomes: Vec<Outcome>,
    /// Paths the walk could not read.
    pub walk_errors: Vec<PathError>,
}

impl TreeOutcome {
    /// Bundles found in all files.
    pub fn bundles(&self) -> usize {
        self.outcomes
            .iter()
            .filter_map(|o| o.plan.as_ref())
            .map(|p| p.bundles)
            .sum()
    }

    /// Whether a path or a file failed.
    pub fn failed(&self) -> bool {
        !self.walk_errors.is_empty() || self.outcomes.iter().any(Outcome::failed)
    }
}

/// Rewrites `paths` (files, and directories walked) with `op`. Directory walks skip rocpack's
/// own temporary files and backups; temporary files killed runs left in the destination
/// directories are removed first. `progress(done, total)` counts bytes of the files, each
/// advancing per bundle as it is written and as it is checked.
///
/// # Errors
/// The output directory cannot be created.
pub fn rewrite(
    paths: &[PathBuf],
    target: &Target,
    op: Operation<'_>,
    opts: &WriteOptions,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<TreeOutcome, String> {
    let (files, walk_errors) = rocpack_scan::expand(paths);
    let files: Vec<(PathBuf, bool)> = files
        .into_iter()
        .filter(|(p, explicit)| *explicit || !is_ours(p))
        .collect();
    let dest_for = destinations(paths, &files, target)?;
    // Temporary files a killed run left: one look per destination directory.
    let dirs: BTreeSet<PathBuf> = files
        .iter()
        .zip(&dest_for)
        .filter_map(|((path, _), dest)| match dest {
            Dest::DryRun => None,
            Dest::InPlace => std::fs::canonicalize(path)
                .ok()?
                .parent()
                .map(Path::to_path_buf),
            Dest::To(d) => d.parent().map(Path::to_path_buf),
        })
        .collect();
    for d in &dirs {
        crate::write::sweep(if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        });
    }
    let sizes: Vec<u64> = files
        .iter()
        .map(|(p, _)| std::fs::metadata(p).map_or(0, |m| m.len()))
        .collect();
    let total: u64 = sizes.iter().sum();
    // Each bundle counts twice, when it is written and when it is checked, so that one large
    // file shows progress too (compressing a 1.6 GB library takes seconds).
    let done = AtomicU64::new(0);
    let advance = |n: u64| {
        let now = done.fetch_add(n, Relaxed) + n;
        progress(now / 2, total);
    };
    let outcomes: Vec<Outcome> = files
        .par_iter()
        .zip(dest_for.par_iter())
        .zip(sizes.par_iter())
        .map(|(((path, explicit), dest), size)| {
            let reported = AtomicU64::new(0);
            let per_bundle = |_: crate::write::Step, n: u64| {
                // Never more than the file's share.
                let before = reported.fetch_add(n, Relaxed);
                advance(n.min((2 * size).saturating_sub(before)));
            };
            let o = one_file(path, *explicit, dest, op, opts, &per_bundle);
            advance((2 * size).saturating_sub(reported.load(Relaxed)));
            o
        })
        .filter(|o| {
            o.error.is_some()
                || o.plan.as_ref().is_some_and(|p| {
                    p.bundles > 0 || p.code_object.is_some() || !p.skipped.is_empty()
                })
        })
        .collect();
    Ok(TreeOutcome {
        outcomes,
        walk_errors,
    })
}

/// Our backups, which a directory walk must not rewrite (the walk itself leaves out our
/// temporary files: [`rocpack_scan::own::is_temp`]).
fn is_ours(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.ends_with(".orig")
        || name
            .rsplit_once(".orig.")
            .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The destination of each file: itself (in place), a path under the output directory, or
/// nowhere (dry run).
fn destinations(
    paths: &[PathBuf],
    files: &[(PathBuf, bool)],
    target: &Target,
) -> Result<Vec<Dest>, String> {
    let out = match target {
        Target::DryRun => return Ok(files.iter().map(|_| Dest::DryRun).collect()),
        Target::InPlace => return Ok(files.iter().map(|_| Dest::InPlace).collect()),
        Target::Output(out) => out,
    };
    // One file to a path that is not a directory: write exactly there.
    let single_file = files.len() == 1 && paths.len() == 1 && files.first().is_some_and(|f| f.1);
    if single_file && !out.is_dir() {
        return Ok(vec![Dest::To(out.clone())]);
    }
    std::fs::create_dir_all(out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    Ok(files
        .iter()
        .map(|(f, explicit)| {
            let rel: PathBuf = if *explicit {
                f.file_name().map(PathBuf::from).unwrap_or_default()
            } else {
                paths
                    .iter()
                    .filter_map(|root| f.strip_prefix(root).ok())
                    .next()
                    .map(Path::to_path_buf)
                    .unwrap_or_else(|| f.file_name().map(PathBuf::from).unwrap_or_default())
            };
            Dest::To(out.join(rel))
        })
        .collect())
}

fn one_file(
    path: &Path,
    explicit: bool,
    dest: &Dest,
    op: Operation<'_>,
    opts: &WriteOptions,
    progress: &Progress<'_>,
) -> Outcome {
    let mut o = Outcome {
        path: path.to_path_buf(),
        dest: None,
        plan: None,
        written: None,
        error: None,
        dry_run: matches!(dest, Dest::DryRun),
        in_place: matches!(dest, Dest::InPlace),
    };
    if rocpack_scan::package_kind(path).is_some() && explicit {
        o.error = Some("is a package; rewriting inside packages is not supported (unpack it, rewrite the files, pack it again)".into());
        return o;
    }
    // In place, a symbolic link's target is rewritten and the link kept.
    let real = match dest {
        Dest::InPlace => match std::fs::canonicalize(path) {
            Ok(p) => p,
            Err(e) => {
                o.error = Some(e.to_string());
                return o;
            }
        },
        _ => path.to_path_buf(),
    };
    let file = match rocpack_scan::open_regular(&real) {
        Ok(f) => f,
        Err(e) => {
            o.error = Some(e.to_string());
            return o;
        }
    };
    // Before anything reads it: reading sets the access time, which the new file must not take.
    let before = match crate::sys::meta(&file) {
        Ok(m) => m,
        Err(e) => {
            o.error = Some(format!("cannot stat: {e}"));
            return o;
        }
    };
    let map = match rocpack_scan::Mapped::from_file(&file) {
        Ok(m) => m,
        Err(e) => {
            o.error = Some(e.to_string());
            return o;
        }
    };
    let input = Input::file(&map, &file);
    let mut p = match plan(input, op, opts.limits) {
        Ok(p) => p,
        Err(e) => {
            o.error = Some(format!("not rewritten, the file does not parse: {e}"));
            return o;
        }
    };
    if let Err(e) = map.check_unchanged(&file) {
        o.error = Some(format!("not rewritten: {e}"));
        return o;
    }
    // The plan read headers through the map; the bundles themselves are streamed with pread,
    // so the pages read so far need not stay part of this process.
    map.release();
    let target = match dest {
        Dest::DryRun => {
            crate::write::measure(&mut p, input, opts.limits, progress);
            None
        }
        Dest::InPlace => Some((real.clone(), true)),
        Dest::To(d) => Some((d.clone(), false)),
    };
    if let Some((d, in_place)) = target {
        if p.changes() {
            if let Some(parent) = d.parent().filter(|p| !p.as_os_str().is_empty()) {
                if let Err(e) = std::fs::create_dir_all(parent) {
                    o.error = Some(format!("creating {}: {e}", parent.display()));
                    o.plan = Some(p);
                    return o;
                }
            }
            match crate::write::apply(&file, &before, &map, &mut p, &d, in_place, opts, progress) {
                Ok(w) => o.written = Some(w),
                Err(e) => o.error = Some(e.message),
            }
            o.dest = Some(d);
        }
    }
    o.plan = Some(p);
    o
}
