//! What is checked: that the files a config references exist, and that it references nothing
//! outside the prefix it is installed in.

use serde_json::Value;

use super::eval::{Arg, Evaluator, Loc, Val};
use super::paths::normalize;
use crate::{Code, Finding, Severity};

/// Directories a package may reference outside its prefix without comment: the system's own.
/// `/opt` is here because vendor trees (`/opt/rocm`, `/opt/rocm-6.4.0`) reference each other.
pub(crate) const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/opt",
];

/// How a config uses a path.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Use<'a> {
    Include,
    SetAndCheck { var: &'a str },
    Property { target: &'a str, property: &'a str },
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum PropKind {
    /// A file the target is (`IMPORTED_LOCATION`).
    File,
    /// Directories (`INTERFACE_INCLUDE_DIRECTORIES`).
    Dir,
    /// Link items: only absolute paths are files; others are targets or flags.
    Link,
}

fn property_kind(p: &str) -> Option<PropKind> {
    if p.starts_with("IMPORTED_SONAME") || p.starts_with("IMPORTED_NO_SONAME") {
        None
    } else if p.starts_with("IMPORTED_LOCATION")
        || p.starts_with("IMPORTED_IMPLIB")
        || p.starts_with("IMPORTED_OBJECTS")
    {
        Some(PropKind::File)
    } else if matches!(
        p,
        "INTERFACE_INCLUDE_DIRECTORIES"
            | "INTERFACE_SYSTEM_INCLUDE_DIRECTORIES"
            | "INTERFACE_LINK_DIRECTORIES"
    ) {
        Some(PropKind::Dir)
    } else if p == "INTERFACE_LINK_LIBRARIES"
        || p == "INTERFACE_LINK_LIBRARIES_DIRECT"
        || p.starts_with("IMPORTED_LINK_INTERFACE_LIBRARIES")
        || p.starts_with("IMPORTED_LINK_DEPENDENT_LIBRARIES")
    {
        Some(PropKind::Link)
    } else {
        None
    }
}

/// One list element of a property after generator expressions are looked through.
#[derive(Debug, PartialEq)]
enum Item {
    Path(String),
    /// Used only at build time (`$<BUILD_INTERFACE:…>`) or never (`$<0:…>`).
    Skip,
    /// A generator expression whose value needs the consuming build.
    Genex(String),
}

/// Splits a property value into list elements, not inside `$<…>` or `[…]`.
fn split_property(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut genex = 0u32;
    let mut bracket = 0u32;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '$' if chars.peek() == Some(&'<') => {
                genex += 1;
                cur.push('$');
                cur.push('<');
                chars.next();
            }
            '>' if genex > 0 => {
                genex -= 1;
                cur.push('>');
            }
            '[' => {
                bracket += 1;
                cur.push('[');
            }
            ']' => {
                bracket = bracket.saturating_sub(1);
                cur.push(']');
            }
            ';' if genex == 0 && bracket == 0 => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The index of the `>` closing the `$<` at the start of `s`.
fn genex_end(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0u32;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'$' && b.get(i + 1) == Some(&b'<') {
            depth += 1;
            i += 2;
            continue;
        }
        if c == b'>' && depth > 0 {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
        i += 1;
    }
    None
}

/// Looks through the generator expressions whose content is a plain value used under some
/// condition: `$<INSTALL_INTERFACE:x>`, `$<LINK_ONLY:x>`, `$<$<cond>:x>`. If the condition
/// holds the path is used, so it has to exist. `$<BUILD_INTERFACE:x>` is never used by an
/// installed package. Anything else depends on the consuming build and is not evaluated.
fn resolve_item(item: &str, depth: u32) -> Vec<Item> {
    if !item.contains("$<") {
        return vec![Item::Path(item.to_owned())];
    }
    if depth > 8 || !item.starts_with("$<") || genex_end(item) != Some(item.len() - 1) {
        return vec![Item::Genex(item.to_owned())];
    }
    let inner = item.get(2..item.len() - 1).unwrap_or_default();
    // The head ends at the first ':' outside a nested expression.
    let mut split = None;
    let mut nest = 0u32;
    let b = inner.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'$' && b.get(i + 1) == Some(&b'<') {
            nest += 1;
            i += 2;
            continue;
        }
        if c == b'>' && nest > 0 {
            nest -= 1;
        } else if c == b':' && nest == 0 {
            split = Some(i);
            break;
        }
        i += 1;
    }
    let Some(at) = split else {
        return vec![Item::Genex(item.to_owned())];
    };
    let head = inner.get(..at).unwrap_or_default();
    let content = inner.get(at + 1..).unwrap_or_default();
    match head {
        "BUILD_INTERFACE" | "BUILD_LOCAL_INTERFACE" | "0" => vec![Item::Skip],
        "INSTALL_INTERFACE" | "LINK_ONLY" | "COMPILE_ONLY" | "1" => split_property(content)
            .iter()
            .flat_map(|c| resolve_item(c, depth + 1))
            .collect(),
        h if h.starts_with("$<") => split_property(content)
            .iter()
            .flat_map(|c| resolve_item(c, depth + 1))
            .collect(),
        _ => vec![Item::Genex(item.to_owned())],
    }
}

impl Evaluator<'_> {
    /// Whether a target-system path lies outside the prefix and the system directories.
    fn outside_prefix(&self, path: &str) -> bool {
        !super::paths::is_under(path, &self.s.prefix)
            && !SYSTEM_DIRS.iter().any(|d| super::paths::is_under(path, d))
    }

    /// Checks a path a config uses. Returns whether it is missing (whether or not a finding
    /// was added: each path is reported once per file).
    pub fn check_path(&mut self, path: &str, how: Use<'_>, loc: &Loc) -> bool {
        let exists = match how {
            Use::Include => self.s.fs.is_file(path),
            _ => self.s.fs.exists(path),
        };
        let outside = self.outside_prefix(path);
        if exists && !outside {
            return false;
        }
        if !self
            .s
            .reported
            .insert((loc.file.host.clone(), normalize(path)))
        {
            return !exists;
        }
        let file_name = loc
            .file
            .host
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let component = self
            .component
            .as_ref()
            .map(|c| format!(" (component {c})"))
            .unwrap_or_default();
        let mut details: Vec<(&str, Value)> =
            vec![("path", path.into()), ("line", loc.line.into())];
        let (what, hint) = match how {
            Use::Include => {
                details.push(("include", true.into()));
                (
                    format!("include() at line {} names {path}", loc.line),
                    format!(
                        "the package was built or installed without this file; install it, or drop the include from {file_name}"
                    ),
                )
            }
            Use::SetAndCheck { var } => {
                details.push(("variable", var.into()));
                (
                    format!("set_and_check({var}) at line {} names {path}", loc.line),
                    format!(
                        "find_package() stops with a fatal error here; install {path}, or drop it from {file_name}"
                    ),
                )
            }
            Use::Property { target, property } => {
                details.push(("target", target.into()));
                details.push(("property", property.into()));
                let hint = match property_kind(property) {
                    Some(PropKind::File) => format!(
                        "the library is not installed: install the package that ships it (often the runtime library package), or drop target {target} from {file_name}"
                    ),
                    Some(PropKind::Dir) => format!(
                        "the package was built without {path}; either install it or drop it from {file_name}"
                    ),
                    _ => format!(
                        "install {path}, or drop it from {target}'s {property} in {file_name}"
                    ),
                };
                (format!("{target} {property} names {path}"), hint)
            }
        };
        if let Some(c) = &self.component {
            details.push(("component", c.as_str().into()));
        }
        let prefix = self.s.prefix.clone();
        let finding = if outside {
            let (severity, message, hint) = if exists {
                (
                    Severity::Warning,
                    format!("{what}, outside the prefix {prefix}{component}"),
                    "the package depends on a file it does not ship; make sure every system it is installed on has it".to_owned(),
                )
            } else {
                (
                    Severity::Error,
                    format!("{what}, outside the prefix {prefix}, which does not exist (a path from the build machine?){component}"),
                    "the config must compute this path from its own location (${_IMPORT_PREFIX}, PACKAGE_PREFIX_DIR) instead of naming the build tree".to_owned(),
                )
            };
            Finding::with_severity(
                Code::CmakePathOutsidePrefix,
                severity,
                loc.file.host.clone(),
                message,
            )
            .hint(hint)
        } else {
            Finding::new(
                Code::CmakeMissingFile,
                loc.file.host.clone(),
                format!("{what}, which does not exist{component}"),
            )
            .hint(hint)
        };
        let mut finding = finding;
        for (k, v) in details {
            finding = finding.detail(k, v);
        }
        self.s.findings.push(finding);
        !exists
    }

    /// An `include()`d path: missing, or outside the prefix.
    pub fn check_include_path(&mut self, path: &str, loc: &Loc) {
        self.check_path(path, Use::Include, loc);
    }

    /// `set_and_check(var path)`: the path must exist. Returns whether it is missing, in
    /// which case the macro's own `message(FATAL_ERROR)` is the same problem, already reported.
    pub fn check_set_and_check(&mut self, var: &str, path: &Arg, loc: &Loc) -> bool {
        if path.unknown.is_some() || !path.text.starts_with('/') {
            return false;
        }
        self.check_path(&path.text, Use::SetAndCheck { var }, loc)
    }

    /// Checks the paths in a target property as set at `loc` (only the values set there).
    pub fn check_property(&mut self, target: &str, property: &str, value: &Val, loc: &Loc) {
        let Some(kind) = property_kind(property) else {
            return;
        };
        if let Some(r) = &value.unknown {
            self.note(
                loc,
                format!("{target} {property} at line {} was not checked: it depends on an unknown value ({r})", loc.line),
                &[("target", target.into()), ("property", property.into()), ("reason", r.to_string().into())],
            );
            return;
        }
        for element in split_property(&value.text) {
            for item in resolve_item(&element, 0) {
                match item {
                    Item::Skip => {}
                    Item::Genex(g) => self.note(
                        loc,
                        format!("{target} {property} at line {}: generator expression {g} is not evaluated; not checked", loc.line),
                        &[("target", target.into()), ("property", property.into()), ("expression", g.into())],
                    ),
                    Item::Path(p) => {
                        if p.starts_with('/') {
                            self.check_path(&p, Use::Property { target, property }, loc);
                        } else if kind == PropKind::File && !p.is_empty() {
                            self.note(
                                loc,
                                format!("{target} {property} at line {} is the relative path {p}; not checked", loc.line),
                                &[("target", target.into()), ("property", property.into())],
                            );
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_expressions() {
        assert_eq!(
            resolve_item("$<BUILD_INTERFACE:/build/x>", 0),
            vec![Item::Skip]
        );
        assert_eq!(
            resolve_item("$<INSTALL_INTERFACE:/usr/include>", 0),
            vec![Item::Path("/usr/include".into())]
        );
        assert_eq!(
            resolve_item("$<$<COMPILE_LANGUAGE:HIP>:/p/include>", 0),
            vec![Item::Path("/p/include".into())]
        );
        assert_eq!(
            resolve_item("$<$<LINK_LANGUAGE:CXX>:--a;--b>", 0),
            vec![Item::Path("--a".into()), Item::Path("--b".into())]
        );
        assert!(matches!(
            resolve_item("$<TARGET_FILE:x>", 0).as_slice(),
            [Item::Genex(_)]
        ));
        assert!(matches!(
            resolve_item("/a/$<CONFIG>/b", 0).as_slice(),
            [Item::Genex(_)]
        ));
        assert_eq!(
            split_property("a;$<$<X:1>:b;c>;d"),
            vec!["a", "$<$<X:1>:b;c>", "d"]
        );
    }
}
