//! The one directory walk: files given and the trees under directories given, in a stable
//! order, with every error kept. `expand` (scan, check, list, slim) and `verify` build on it.
//! Nothing here opens a file.

use std::io;
use std::path::{Path, PathBuf};

use crate::own;

/// Deepest directory nesting walked.
pub const MAX_DEPTH: u32 = 64;

/// What a name in the walk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file (or, given explicitly, anything that is not a directory).
    File,
    /// A FIFO, socket or device met in a directory: listed so that whoever would open it
    /// reports it ([`crate::open_regular`] refuses it without opening it for reading).
    Special,
    /// A symbolic link inside a walked directory: recorded, not followed (so
    /// `libx.so.1 -> libx.so.1.2` is read once).
    Symlink,
}

/// A name the walk met.
#[derive(Debug, Clone)]
pub struct Entry {
    pub path: PathBuf,
    pub kind: Kind,
    /// Given on the command line rather than found in a directory.
    pub explicit: bool,
}

/// Why part of a tree could not be walked.
#[derive(Debug)]
pub enum WalkError {
    /// A path given cannot be read.
    Path(io::Error),
    /// A directory cannot be listed.
    Dir(io::Error),
    /// An entry of a directory cannot be read (its type, or the listing failed part way).
    Entry(io::Error),
    /// Nesting deeper than [`MAX_DEPTH`]: not walked further.
    TooDeep,
}

/// Walks `paths`: a file given is an entry; a directory is walked recursively, sorted per
/// directory. rocpack's own temporary files ([`own::is_temp`]) are not entries: they are a
/// rewrite in progress, not files of the tree.
pub fn walk(paths: &[PathBuf]) -> (Vec<Entry>, Vec<(PathBuf, WalkError)>) {
    let mut entries = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => walk_dir(p, &mut entries, &mut errors, 0),
            Ok(_) => entries.push(Entry {
                path: p.clone(),
                kind: Kind::File,
                explicit: true,
            }),
            Err(e) => errors.push((p.clone(), WalkError::Path(e))),
        }
    }
    (entries, errors)
}

fn walk_dir(
    dir: &Path,
    entries: &mut Vec<Entry>,
    errors: &mut Vec<(PathBuf, WalkError)>,
    depth: u32,
) {
    if depth > MAX_DEPTH {
        errors.push((dir.to_path_buf(), WalkError::TooDeep));
        return;
    }
    let listing = match std::fs::read_dir(dir) {
        Ok(l) => l,
        Err(e) => {
            errors.push((dir.to_path_buf(), WalkError::Dir(e)));
            return;
        }
    };
    let mut children: Vec<_> = listing
        .filter_map(|e| {
            e.map_err(|err| errors.push((dir.to_path_buf(), WalkError::Entry(err))))
                .ok()
        })
        .collect();
    children.sort_by_key(|e| e.file_name());
    for child in children {
        let path = child.path();
        let kind = match child.file_type() {
            Ok(t) if t.is_dir() => {
                walk_dir(&path, entries, errors, depth + 1);
                continue;
            }
            Ok(t) if t.is_symlink() => Kind::Symlink,
            Ok(_) if own::is_temp(&path) => continue,
            Ok(t) if t.is_file() => Kind::File,
            Ok(_) => Kind::Special,
            Err(e) => {
                errors.push((path, WalkError::Entry(e)));
                continue;
            }
        };
        entries.push(Entry {
            path,
            kind,
            explicit: false,
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_sorted_links_recorded_temporaries_skipped_and_missing_paths_reported() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("sub/b.so"), b"b").unwrap();
        std::fs::write(d.join("a.so.1.2"), b"a").unwrap();
        std::os::unix::fs::symlink("a.so.1.2", d.join("a.so.1")).unwrap();
        std::fs::write(own::temp_name(&d.join("a.so.1.2"), 7), b"partial").unwrap();
        let missing = d.join("missing");
        let (entries, errors) = walk(&[d.to_path_buf(), missing.clone()]);
        let got: Vec<(String, Kind, bool)> = entries
            .iter()
            .map(|e| {
                let rel = e
                    .path
                    .strip_prefix(d)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                (rel, e.kind, e.explicit)
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a.so.1".to_owned(), Kind::Symlink, false),
                ("a.so.1.2".to_owned(), Kind::File, false),
                ("sub/b.so".to_owned(), Kind::File, false),
            ]
        );
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].0, missing);
        assert!(matches!(errors[0].1, WalkError::Path(_)));
    }
}
