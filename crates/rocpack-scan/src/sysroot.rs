//! Paths of the target system, mapped into an optional sysroot.
//!
//! Inside a sysroot, an absolute symlink (`libfoo.so.1 -> /usr/lib/libfoo.so.1.2`) means a path
//! of the target system, so symlinks are followed here component by component with the root as
//! `/`, never by the kernel, which would leave the root.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

/// At most this many symlinks are followed for one path, as Linux's `MAXSYMLINKS`.
pub const MAX_LINKS: usize = 40;

/// The target system's file tree: `/` or a sysroot directory.
#[derive(Debug, Clone, Default)]
pub struct Sysroot {
    root: Option<PathBuf>,
}

impl Sysroot {
    pub fn new(root: Option<&Path>) -> Self {
        Sysroot {
            root: root.map(Path::to_path_buf),
        }
    }

    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The host path of a target-system path (no symlinks followed).
    pub fn host(&self, target: &Path) -> PathBuf {
        match &self.root {
            None => target.to_path_buf(),
            Some(r) => r.join(target.strip_prefix("/").unwrap_or(target)),
        }
    }

    /// The target-system path of a host path inside the root (unchanged without a root, or when
    /// the path is outside it).
    pub fn target(&self, host: &Path) -> PathBuf {
        match &self.root {
            Some(r) => match host.strip_prefix(r) {
                Ok(rest) => Path::new("/").join(rest),
                Err(_) => host.to_path_buf(),
            },
            None => host.to_path_buf(),
        }
    }

    /// The host path of the file a target path names after following every symlink inside the
    /// root; `None` when a component is missing or the links loop.
    pub fn resolve(&self, target: &Path) -> Option<PathBuf> {
        match &self.root {
            Some(root) => resolve_in_root(root, target),
            None => std::fs::canonicalize(target).ok(),
        }
    }
}

/// Resolves `path`, a target-system path, to the file it names inside `root`, following
/// symbolic links component by component; an absolute link target is taken relative to `root`,
/// and `..` never climbs above it. `None` if some component does not exist, or after 40 links
/// (a loop).
pub fn resolve_in_root(root: &Path, path: &Path) -> Option<PathBuf> {
    resolve_components(root, path).map(|parts| {
        let mut p = root.to_path_buf();
        p.extend(parts);
        p
    })
}

/// [`resolve_in_root`] as the components under `root`.
pub fn resolve_components(root: &Path, path: &Path) -> Option<Vec<OsString>> {
    let mut resolved: Vec<OsString> = Vec::new();
    let mut pending: Vec<OsString> = Vec::new();
    push_components(&mut pending, path);
    let mut links = 0;
    while let Some(part) = pending.pop() {
        if part.as_bytes() == b".." {
            resolved.pop();
            continue;
        }
        let mut candidate = root.to_path_buf();
        candidate.extend(&resolved);
        candidate.push(&part);
        let meta = std::fs::symlink_metadata(&candidate).ok()?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return None;
            }
            let link = std::fs::read_link(&candidate).ok()?;
            if link.is_absolute() {
                resolved.clear();
            }
            push_components(&mut pending, &link);
        } else {
            resolved.push(part);
        }
    }
    Some(resolved)
}

/// `path` made absolute against the current directory and normalized lexically (`.` dropped,
/// `..` removing the previous component, never above `/`).
pub fn absolute(path: &Path) -> PathBuf {
    let p = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    Path::new("/").join(lexical(&p))
}

/// `path`'s components normalized lexically, as a relative path: `.` and the root dropped, `..`
/// removing the previous component and never going above the top (`/../../etc/x` → `etc/x`,
/// `a/b/../c` → `a/c`). Nothing on disk is looked at.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// Pushes a path's components onto a stack so that the first component is popped first.
fn push_components(stack: &mut Vec<OsString>, path: &Path) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_os_string()),
            Component::ParentDir => Some(OsString::from_vec(b"..".to_vec())),
            _ => None,
        })
        .collect();
    stack.extend(parts.into_iter().rev());
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn absolute_links_stay_inside_the_root() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        std::fs::create_dir_all(r.join("usr/lib")).unwrap();
        std::fs::write(r.join("usr/lib/libx.so.1.2"), b"x").unwrap();
        symlink("/usr/lib/libx.so.1.2", r.join("usr/lib/libx.so.1")).unwrap();
        symlink("usr/lib", r.join("lib")).unwrap();
        let s = Sysroot::new(Some(r));
        assert_eq!(
            s.resolve(Path::new("/lib/libx.so.1")),
            Some(r.join("usr/lib/libx.so.1.2"))
        );
        assert_eq!(s.resolve(Path::new("/lib/../usr/lib/nope")), None);
        symlink("loop", r.join("loop")).unwrap();
        assert_eq!(s.resolve(Path::new("/loop")), None);
        assert_eq!(s.target(&r.join("usr/lib")), PathBuf::from("/usr/lib"));
    }
}
