//! The one directory walk: files given and the trees under directories given, in a stable
//! order, with every error kept. [`walk_tree`] is the walk itself, steered by a [`Visitor`]
//! (`plan verify` prunes it with its install globs and follows linked directories); [`walk`],
//! which lists everything, is what `expand` (scan, check, list, slim) and `verify` use. Nothing
//! here opens a file.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io;
use std::os::unix::fs::MetadataExt;
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
    /// The listing of a directory failed part way (the error is about the directory).
    Listing(io::Error),
    /// An entry's type cannot be read (the error is about the entry).
    Entry(io::Error),
    /// Nesting deeper than [`MAX_DEPTH`]: not walked further.
    TooDeep,
}

/// What [`walk_tree`] asks as it goes. `State` is what the visitor carries down the tree: the
/// path it names a directory by, a matcher's position, or nothing.
pub trait Visitor {
    /// Carried from a directory to its entries.
    type State;

    /// Walk each directory once, by device and inode: a visitor that follows links needs it
    /// (a directory reached again through a link is not walked again, a link loop ends). A
    /// walk that follows none leaves it off, so a bind mount or a filesystem whose inode
    /// numbers repeat (overlayfs without `xino`, some FUSE and CIFS mounts) is still walked.
    const ONCE_PER_DIRECTORY: bool = false;

    /// A name in a directory being walked, before anything else is looked up about it: `None`
    /// passes it by (its type is not even read), `Some` gives the entry's state.
    fn name(&mut self, parent: &Self::State, name: &OsStr) -> Option<Self::State>;

    /// A directory: whether to walk it.
    fn enter(&mut self, state: &Self::State) -> bool;

    /// A symbolic link at `path`: a directory to walk in its place (a linked directory, as the
    /// visitor resolves it), or `None` to meet it as a link in [`Visitor::found`].
    fn follow(&mut self, state: &Self::State, path: &Path) -> Option<PathBuf> {
        let _ = (state, path);
        None
    }

    /// Anything that is not walked into: a file, a link, a FIFO, socket or device.
    fn found(&mut self, state: Self::State, path: PathBuf, kind: Kind);

    /// Part of the tree that could not be walked; the walk goes on.
    fn error(&mut self, path: PathBuf, error: WalkError);
}

/// Walks the directory `dir` with `state`: entries sorted by name per directory, at most
/// [`MAX_DEPTH`] deep, each directory once when the visitor asks
/// ([`Visitor::ONCE_PER_DIRECTORY`]).
pub fn walk_tree<V: Visitor>(dir: &Path, state: &V::State, visitor: &mut V) {
    let mut entered = HashSet::new();
    walk_dir(dir, state, visitor, &mut entered, 0);
}

fn walk_dir<V: Visitor>(
    dir: &Path,
    state: &V::State,
    v: &mut V,
    entered: &mut HashSet<(u64, u64)>,
    depth: u32,
) {
    if depth > MAX_DEPTH {
        v.error(dir.to_path_buf(), WalkError::TooDeep);
        return;
    }
    if V::ONCE_PER_DIRECTORY {
        if let Ok(m) = std::fs::metadata(dir) {
            if !entered.insert((m.dev(), m.ino())) {
                return;
            }
        }
    }
    let listing = match std::fs::read_dir(dir) {
        Ok(l) => l,
        Err(e) => {
            v.error(dir.to_path_buf(), WalkError::Dir(e));
            return;
        }
    };
    let mut children = Vec::new();
    for entry in listing {
        match entry {
            Ok(e) => children.push(e),
            Err(e) => v.error(dir.to_path_buf(), WalkError::Listing(e)),
        }
    }
    children.sort_by_key(|e| e.file_name());
    for child in children {
        let name = child.file_name();
        let Some(child_state) = v.name(state, &name) else {
            continue;
        };
        let path = dir.join(&name);
        let kind = match child.file_type() {
            Ok(t) => t,
            Err(e) => {
                v.error(path, WalkError::Entry(e));
                continue;
            }
        };
        if kind.is_dir() {
            if v.enter(&child_state) {
                walk_dir(&path, &child_state, v, entered, depth + 1);
            }
            continue;
        }
        if kind.is_symlink() {
            if let Some(real) = v.follow(&child_state, &path) {
                walk_dir(&real, &child_state, v, entered, depth + 1);
                continue;
            }
        }
        let kind = if kind.is_symlink() {
            Kind::Symlink
        } else if kind.is_file() {
            Kind::File
        } else {
            Kind::Special
        };
        v.found(child_state, path, kind);
    }
}

/// Walks `paths`: a file given is an entry; a directory is walked recursively, sorted per
/// directory, links recorded and not followed. rocpack's own temporary files
/// ([`own::is_temp`]) are not entries: they are a rewrite in progress, not files of the tree.
pub fn walk(paths: &[PathBuf]) -> (Vec<Entry>, Vec<(PathBuf, WalkError)>) {
    struct All {
        entries: Vec<Entry>,
        errors: Vec<(PathBuf, WalkError)>,
    }
    impl Visitor for All {
        type State = ();
        fn name(&mut self, _: &(), _: &OsStr) -> Option<()> {
            Some(())
        }
        fn enter(&mut self, _: &()) -> bool {
            true
        }
        fn found(&mut self, _: (), path: PathBuf, kind: Kind) {
            if kind != Kind::Symlink && own::is_temp(&path) {
                return;
            }
            self.entries.push(Entry {
                path,
                kind,
                explicit: false,
            });
        }
        fn error(&mut self, path: PathBuf, error: WalkError) {
            self.errors.push((path, error));
        }
    }
    let mut all = All {
        entries: Vec::new(),
        errors: Vec::new(),
    };
    for p in paths {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => walk_tree(p, &(), &mut all),
            Ok(_) => all.entries.push(Entry {
                path: p.clone(),
                kind: Kind::File,
                explicit: true,
            }),
            Err(e) => all.errors.push((p.clone(), WalkError::Path(e))),
        }
    }
    (all.entries, all.errors)
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

    /// A visitor that takes names starting with `keep`, follows links named `into`, and
    /// records what it meets.
    struct Pick {
        seen: Vec<(String, Kind)>,
        names_asked: Vec<String>,
        errors: usize,
    }

    impl Visitor for Pick {
        type State = String;
        const ONCE_PER_DIRECTORY: bool = true;
        fn name(&mut self, parent: &String, name: &OsStr) -> Option<String> {
            let name = name.to_string_lossy().into_owned();
            self.names_asked.push(name.clone());
            (name.starts_with("keep") || name.starts_with("into") || name == "sub")
                .then(|| format!("{parent}/{name}"))
        }
        fn enter(&mut self, _: &String) -> bool {
            true
        }
        fn follow(&mut self, state: &String, path: &Path) -> Option<PathBuf> {
            state
                .rsplit('/')
                .next()
                .is_some_and(|n| n.starts_with("into"))
                .then(|| std::fs::canonicalize(path).unwrap())
        }
        fn found(&mut self, state: String, _: PathBuf, kind: Kind) {
            self.seen.push((state, kind));
        }
        fn error(&mut self, _: PathBuf, _: WalkError) {
            self.errors += 1;
        }
    }

    #[test]
    fn a_visitor_prunes_by_name_follows_linked_directories_once_and_ends_loops() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("sub/deep")).unwrap();
        std::fs::write(d.join("sub/keep.so"), b"k").unwrap();
        std::fs::write(d.join("sub/skip.so"), b"s").unwrap();
        std::fs::write(d.join("sub/deep/keep.a"), b"k").unwrap();
        // A link into the tree's own directory and a link to its parent: each directory is
        // walked once, so neither repeats what was seen nor loops.
        std::os::unix::fs::symlink(d.join("sub"), d.join("into-sub")).unwrap();
        std::os::unix::fs::symlink("..", d.join("sub/into-up")).unwrap();
        std::os::unix::fs::symlink("keep.so", d.join("sub/keep-link")).unwrap();
        let mut v = Pick {
            seen: Vec::new(),
            names_asked: Vec::new(),
            errors: 0,
        };
        walk_tree(d, &String::new(), &mut v);
        assert_eq!(
            v.seen,
            [
                ("/into-sub/keep-link".to_owned(), Kind::Symlink),
                ("/into-sub/keep.so".to_owned(), Kind::File),
            ],
            "the linked directory is walked where it leads, first in name order; `sub` is the \
             same directory and is not walked again; `deep` is not a wanted name"
        );
        assert!(v.names_asked.contains(&"skip.so".to_owned()));
        assert_eq!(v.errors, 0);
    }
}
