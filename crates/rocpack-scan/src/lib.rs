//! Files and directories on disk: expand paths, map each file read-only, inspect files in
//! parallel, and keep going past files that cannot be read.
//!
//! ```no_run
//! use rocpack_scan::{scan, ScanOptions};
//! let results = scan(&["/usr/lib/x86_64-linux-gnu".into()], &ScanOptions::default(), |_, _| ());
//! for r in &results {
//!     println!("{}: {} code objects", r.path.display(), r.inspection.as_ref().map_or(0, |i| i.code_objects.len()));
//! }
//! ```
#![deny(clippy::indexing_slicing)]

mod map;

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use rocpack_offload::{Inspection, Options, ThinMemberLoader, inspect_with};

pub use map::Mapped;

/// How to scan.
#[derive(Clone)]
pub struct ScanOptions {
    /// Decode kernel metadata.
    pub metadata: bool,
    /// Fully decompress compressed bundles (hash check; needed to extract).
    pub decompress: bool,
    /// Ceiling for one decompressed bundle.
    pub max_decompressed: u64,
    /// Report files that hold no GPU code too (otherwise only files with containers).
    pub include_empty: bool,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            metadata: false,
            decompress: false,
            max_decompressed: rocpack_offload::DEFAULT_MAX_DECOMPRESSED,
            include_empty: false,
        }
    }
}

/// The result for one file.
#[derive(Debug)]
pub struct FileResult {
    /// The path as found (given, or below a given directory).
    pub path: PathBuf,
    /// Whether the path was named explicitly (not found by walking a directory).
    pub explicit: bool,
    /// File size in bytes.
    pub size: u64,
    /// What was found; `None` when the file could not be opened.
    pub inspection: Option<Inspection>,
    /// The I/O error, when the file could not be opened or mapped.
    pub io_error: Option<String>,
}

impl FileResult {
    /// Whether reading this file hit an error (I/O or malformed content).
    pub fn has_errors(&self) -> bool {
        self.io_error.is_some() || self.inspection.as_ref().is_some_and(Inspection::has_errors)
    }
}

/// A path that could not be read, with the reason.
pub type PathError = (PathBuf, String);

/// Expands paths into files: files as given, directories walked recursively (symbolic links
/// inside directories are not followed, so `libx.so.1 -> libx.so.1.2` is read once), sorted
/// per directory for a stable order. Unreadable directories become errors in the result.
pub fn expand(paths: &[PathBuf]) -> (Vec<(PathBuf, bool)>, Vec<PathError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => walk_dir(p, &mut files, &mut errors, 0),
            Ok(_) => files.push((p.clone(), true)),
            Err(e) => errors.push((p.clone(), e.to_string())),
        }
    }
    (files, errors)
}

fn walk_dir(dir: &Path, files: &mut Vec<(PathBuf, bool)>, errors: &mut Vec<PathError>, depth: u32) {
    if depth > 64 {
        errors.push((dir.to_path_buf(), "directory nesting deeper than 64".into()));
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            errors.push((dir.to_path_buf(), e.to_string()));
            return;
        }
    };
    let mut children: Vec<_> = entries
        .filter_map(|e| {
            e.map_err(|err| errors.push((dir.to_path_buf(), err.to_string())))
                .ok()
        })
        .collect();
    children.sort_by_key(|e| e.file_name());
    for entry in children {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => walk_dir(&path, files, errors, depth + 1),
            Ok(t) if t.is_file() => files.push((path, false)),
            Ok(_) => {}
            Err(e) => errors.push((path, e.to_string())),
        }
    }
}

struct DirLoader<'a> {
    dir: &'a Path,
}

impl ThinMemberLoader for DirLoader<'_> {
    fn with_member(&self, name: &str, f: &mut dyn FnMut(&[u8])) -> Result<(), String> {
        // Thin archives store member paths relative to the archive (GNU ar and llvm-ar).
        let path = self.dir.join(name);
        let map = Mapped::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        f(&map);
        Ok(())
    }
}

/// Inspects one file. `sink` receives every complete entry's bytes.
pub fn inspect_file(
    path: &Path,
    opts: &ScanOptions,
    sink: Option<rocpack_offload::Sink<'_>>,
) -> FileResult {
    let mut result = FileResult {
        path: path.to_path_buf(),
        explicit: true,
        size: 0,
        inspection: None,
        io_error: None,
    };
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            result.io_error = Some(e.to_string());
            return result;
        }
    };
    let map = match Mapped::from_file(&file) {
        Ok(m) => m,
        Err(e) => {
            result.io_error = Some(e.to_string());
            return result;
        }
    };
    result.size = map.len() as u64;
    let dir = path.parent().unwrap_or(Path::new("."));
    let loader = DirLoader { dir };
    let o = Options {
        metadata: opts.metadata,
        decompress: opts.decompress,
        max_decompressed: opts.max_decompressed,
        thin_loader: Some(&loader),
        file: Some(&file),
    };
    result.inspection = Some(inspect_with(&map, &o, sink));
    result
}

/// Inspects every file under `paths` in parallel; results come back in path order. `progress`
/// is called (from worker threads) after each file with (files done, files total).
pub fn scan(
    paths: &[PathBuf],
    opts: &ScanOptions,
    progress: impl Fn(usize, usize) + Sync,
) -> Vec<FileResult> {
    let (files, errors) = expand(paths);
    let total = files.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<FileResult> = files
        .par_iter()
        .map(|(path, explicit)| {
            let mut r = inspect_file(path, opts, None);
            r.explicit = *explicit;
            progress(
                done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
                total,
            );
            r
        })
        .filter(|r| {
            opts.include_empty
                || r.explicit
                || r.io_error.is_some()
                || r.inspection
                    .as_ref()
                    .is_some_and(|i| !i.code_objects.is_empty() || !i.diagnostics.is_empty())
        })
        .collect();
    results.extend(errors.into_iter().map(|(path, e)| FileResult {
        path,
        explicit: true,
        size: 0,
        inspection: None,
        io_error: Some(e),
    }));
    results
}
