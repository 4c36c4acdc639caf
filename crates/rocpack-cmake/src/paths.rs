//! Paths as the configs see them (target-system paths, strings) and as this machine reads them
//! (host paths, under the sysroot when there is one).

use std::path::{Path, PathBuf};

pub(crate) use rocpack_scan::sysroot::absolute;
use rocpack_scan::sysroot::resolve_components;
pub use rocpack_scan::sysroot::resolve_in_root;

/// The file system the configs are evaluated against.
#[derive(Debug, Clone)]
pub(crate) struct Fs {
    /// The sysroot, or `/`.
    pub root: PathBuf,
    /// Whether a sysroot was given (only changes how paths are printed and mapped back).
    pub has_root: bool,
}

impl Fs {
    pub fn new(root: Option<&Path>) -> Fs {
        match root {
            Some(r) => Fs {
                root: absolute(r),
                has_root: true,
            },
            None => Fs {
                root: PathBuf::from("/"),
                has_root: false,
            },
        }
    }

    /// The host path of a target path, without resolving links.
    pub fn host(&self, target: &str) -> PathBuf {
        let mut p = self.root.clone();
        p.push(target.trim_start_matches('/'));
        p
    }

    /// The target path of a host path: strips the sysroot. `None` if the path is not inside it.
    pub fn target_of(&self, host: &Path) -> Option<String> {
        let host = absolute(host);
        let rel = host
            .strip_prefix(&self.root)
            .ok()?
            .to_string_lossy()
            .into_owned();
        Some(if rel.is_empty() {
            "/".into()
        } else {
            format!("/{rel}")
        })
    }

    /// The host file a target path names, links resolved; `None` if it does not exist.
    pub fn resolve(&self, target: &str) -> Option<PathBuf> {
        if !target.starts_with('/') {
            return None;
        }
        resolve_in_root(&self.root, Path::new(target))
    }

    pub fn exists(&self, target: &str) -> bool {
        self.resolve(target).is_some()
    }

    pub fn is_dir(&self, target: &str) -> bool {
        self.resolve(target).is_some_and(|p| p.is_dir())
    }

    pub fn is_file(&self, target: &str) -> bool {
        self.resolve(target).is_some_and(|p| p.is_file())
    }

    pub fn is_symlink(&self, target: &str) -> bool {
        let norm = normalize(target);
        let (parent, name) = match norm.rsplit_once('/') {
            Some((p, n)) if !n.is_empty() => (if p.is_empty() { "/" } else { p }, n),
            _ => return false,
        };
        self.resolve(parent)
            .and_then(|p| std::fs::symlink_metadata(p.join(name)).ok())
            .is_some_and(|m| m.file_type().is_symlink())
    }

    pub fn is_executable(&self, target: &str) -> bool {
        use std::os::unix::fs::PermissionsExt;
        self.resolve(target)
            .and_then(|p| std::fs::metadata(p).ok())
            .is_some_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }

    /// The target path with every link resolved inside the root, as CMake's `REALPATH`; `None`
    /// if it does not exist.
    pub fn realpath(&self, target: &str) -> Option<String> {
        if !target.starts_with('/') {
            return None;
        }
        let parts = resolve_components(&self.root, Path::new(target))?;
        let mut s = String::new();
        for p in &parts {
            s.push('/');
            s.push_str(&p.to_string_lossy());
        }
        if s.is_empty() {
            s.push('/');
        }
        Some(s)
    }

    /// Entries of a directory (target path): `(name, is_dir)`, sorted by name. Links are
    /// followed for `is_dir`; unreadable directories are empty.
    pub fn read_dir(&self, target: &str) -> Vec<(String, bool, bool)> {
        let Some(dir) = self.resolve(target) else {
            return Vec::new();
        };
        let Ok(rd) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        let mut out: Vec<(String, bool, bool)> = rd
            .filter_map(Result::ok)
            .take(MAX_DIR_ENTRIES)
            .map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let is_link = e.file_type().is_ok_and(|t| t.is_symlink());
                let path = join(target, &name);
                let is_dir = if is_link {
                    self.is_dir(&path)
                } else {
                    e.file_type().is_ok_and(|t| t.is_dir())
                };
                (name, is_dir, is_link)
            })
            .collect();
        out.sort();
        out
    }
}

/// Entries read from one directory at most.
const MAX_DIR_ENTRIES: usize = 200_000;

/// Joins a directory and a name with one `/`.
pub(crate) fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// Lexical normalization as CMake's `CollapseFullPath` does it for an absolute path: `.` and
/// empty components dropped, `..` removes the previous component (never above `/`), no
/// trailing slash. Relative paths stay relative.
pub(crate) fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    if absolute {
        format!("/{joined}")
    } else if joined.is_empty() {
        ".".into()
    } else {
        joined
    }
}

/// Whether `path` is `dir` or inside it, comparing normalized components.
pub(crate) fn is_under(path: &str, dir: &str) -> bool {
    let p = normalize(path);
    let d = normalize(dir);
    if d == "/" {
        return p.starts_with('/');
    }
    p == d || p.strip_prefix(&d).is_some_and(|rest| rest.starts_with('/'))
}

/// CMake's `GetFilenamePath` (`get_filename_component(DIRECTORY)`): everything before the last
/// slash, after dropping a trailing one; `/` for a path directly under the root.
pub(crate) fn dirname(path: &str) -> String {
    let p = if path.len() > 1 {
        path.trim_end_matches('/')
    } else {
        path
    };
    match p.rfind('/') {
        Some(0) => "/".into(),
        Some(i) => p.get(..i).unwrap_or_default().to_owned(),
        None => String::new(),
    }
}

/// CMake's `GetFilenameName`: everything after the last slash.
pub(crate) fn basename(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => path.get(i + 1..).unwrap_or_default(),
        None => path,
    }
}

/// Matches one path component against a glob, with CMake's syntax (`rocpack_scan::glob`).
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    rocpack_scan::glob::component_matches(pattern.as_bytes(), name.as_bytes())
}

fn has_wildcard(s: &str) -> bool {
    rocpack_scan::glob::has_wildcard(s.as_bytes())
}

/// Limits of one `file(GLOB_RECURSE)`.
const MAX_GLOB_DEPTH: usize = 32;
const MAX_GLOB_RESULTS: usize = 100_000;

/// `file(GLOB)` / `file(GLOB_RECURSE)` of an absolute target-path pattern; results are target
/// paths, sorted as CMake sorts them.
pub(crate) fn glob(
    fs: &Fs,
    pattern: &str,
    recurse: bool,
    list_dirs: bool,
    follow: bool,
) -> Vec<String> {
    let parts: Vec<&str> = pattern.split('/').filter(|p| !p.is_empty()).collect();
    let Some((last, dirs)) = parts.split_last() else {
        return Vec::new();
    };
    let mut bases = vec![String::from("/")];
    for part in dirs {
        let mut next = Vec::new();
        for b in &bases {
            if *part == ".." || *part == "." || !has_wildcard(part) {
                next.push(join(b, part));
            } else {
                for (name, is_dir, _) in fs.read_dir(b) {
                    if is_dir && glob_match(part, &name) {
                        next.push(join(b, &name));
                    }
                }
            }
            if next.len() > MAX_GLOB_RESULTS {
                break;
            }
        }
        bases = next;
    }
    let mut out = Vec::new();
    for b in &bases {
        if recurse {
            walk_glob(fs, b, last, list_dirs, follow, 0, &mut out);
        } else if !has_wildcard(last) {
            let p = join(b, last);
            if fs.exists(&p) && (list_dirs || !fs.is_dir(&p)) {
                out.push(p);
            }
        } else {
            for (name, is_dir, _) in fs.read_dir(b) {
                if glob_match(last, &name) && (list_dirs || !is_dir) {
                    out.push(join(b, &name));
                }
            }
        }
        if out.len() > MAX_GLOB_RESULTS {
            break;
        }
    }
    out.sort();
    out.dedup();
    out
}

fn walk_glob(
    fs: &Fs,
    dir: &str,
    pat: &str,
    list_dirs: bool,
    follow: bool,
    depth: usize,
    out: &mut Vec<String>,
) {
    if depth > MAX_GLOB_DEPTH || out.len() > MAX_GLOB_RESULTS {
        return;
    }
    for (name, is_dir, is_link) in fs.read_dir(dir) {
        let path = join(dir, &name);
        if is_dir && (!is_link || follow) {
            if list_dirs && glob_match(pat, &name) {
                out.push(path.clone());
            }
            walk_glob(fs, &path, pat, list_dirs, follow, depth + 1, out);
        } else if glob_match(pat, &name) {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_paths() {
        assert_eq!(normalize("/a/b/../c/./d/"), "/a/c/d");
        assert_eq!(normalize("/../.."), "/");
        assert_eq!(normalize("/usr/lib/cmake/x/../../../../"), "/");
        assert_eq!(normalize("a/../../b"), "../b");
    }

    #[test]
    fn dirname_as_cmake() {
        assert_eq!(dirname("/usr/lib/x.cmake"), "/usr/lib");
        assert_eq!(dirname("/usr"), "/");
        assert_eq!(dirname("/"), "/");
        assert_eq!(dirname("x"), "");
        assert_eq!(dirname("a/b/"), "a");
    }

    #[test]
    fn globbing() {
        assert!(glob_match("FooTargets-*.cmake", "FooTargets-release.cmake"));
        assert!(!glob_match("FooTargets-*.cmake", "FooTargets.cmake"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a?c", "abc"));
        assert!(glob_match("[a-c]x", "bx"));
        assert!(!glob_match("[!a-c]x", "bx"));
        assert!(glob_match("*a*b*c*", "xxaxxbxxcxx"));
    }

    #[test]
    fn under() {
        assert!(is_under("/opt/rocm/lib", "/opt/rocm"));
        assert!(!is_under("/opt/rocm-6/lib", "/opt/rocm"));
        assert!(is_under("/x", "/"));
        assert!(!is_under("/opt/rocm/../x", "/opt/rocm"));
    }
}
