//! Turns many findings with one cause into one finding that names the cause.
//!
//! - **Exempted imports.** CMake's generated per-configuration file appends each imported file to
//!   `_cmake_import_check_files_for_<target>` (`_IMPORT_CHECK_FILES_FOR_<target>` before CMake
//!   3.24), and the targets file stops `find_package` if one is missing. Debian comments those
//!   lines out for targets whose files live in optional packages (clang's and LLVM's exports):
//!   `find_package` then succeeds and only a build that links such a target fails. Those missing
//!   files are one warning per config file, listing the targets.
//! - **A missing directory.** When several imported files of one config lie in the same directory
//!   and that directory does not exist, the config computes the wrong prefix (or the package that
//!   fills the directory is not installed): one error naming the directory.
//! - **Many missing imports.** Three or more other missing imported files of one config are one
//!   error listing the targets (typically the config ships in one package and the files in
//!   another that is not installed).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::paths::Fs;
use crate::{Code, Finding, Severity};

/// Applies both rules; other findings pass through unchanged.
pub(crate) fn consolidate(findings: Vec<Finding>, fs: &Fs) -> Vec<Finding> {
    let mut texts: HashMap<PathBuf, String> = HashMap::new();
    let mut out = Vec::new();
    let mut exempted: BTreeMap<PathBuf, Vec<Finding>> = BTreeMap::new();
    let mut by_dir: BTreeMap<(PathBuf, String), Vec<Finding>> = BTreeMap::new();
    let mut rest_early: BTreeMap<PathBuf, Vec<Finding>> = BTreeMap::new();
    for f in findings {
        let target = str_detail(&f, "target");
        let is_import = f.code == Code::CmakeMissingFile
            && str_detail(&f, "property").is_some_and(|p| {
                p.starts_with("IMPORTED_LOCATION") || p.starts_with("IMPORTED_IMPLIB")
            });
        let (Some(target), true) = (target, is_import) else {
            out.push(f);
            continue;
        };
        let text = texts
            .entry(f.file.clone())
            .or_insert_with(|| rocpack_scan::read_regular_to_string(&f.file).unwrap_or_default());
        if is_exempted(text, &target) {
            exempted.entry(f.file.clone()).or_default().push(f);
            continue;
        }
        let dir = str_detail(&f, "path").and_then(|p| {
            Path::new(&p)
                .parent()
                .map(|d| d.to_string_lossy().into_owned())
        });
        match dir {
            Some(d) if !fs.is_dir(&d) => by_dir.entry((f.file.clone(), d)).or_default().push(f),
            _ => rest_early.entry(f.file.clone()).or_default().push(f),
        }
    }
    for (file, group) in exempted {
        let targets = list(&group, "target");
        let name = file_name(&file);
        out.push(
            Finding::with_severity(
                Code::CmakeMissingFile,
                Severity::Warning,
                &file,
                format!(
                    "{} imported targets name files that are not installed ({}); the config exempts them from CMake's import check, so find_package() succeeds and a build that links one of them fails",
                    group.len(),
                    preview(&targets)
                ),
            )
            .hint(format!(
                "{name} comments out their _cmake_import_check_files_for_* lines (as Debian does for targets shipped by optional packages); install the packages that ship them before linking them"
            ))
            .detail("targets", targets)
            .detail("paths", list(&group, "path"))
            .detail("exempted", true),
        );
    }
    let mut rest: BTreeMap<PathBuf, Vec<Finding>> = BTreeMap::new();
    for ((file, dir), group) in by_dir {
        if group.len() < 2 {
            rest.entry(file).or_default().extend(group);
            continue;
        }
        let message = format!(
            "{} imported targets name files in {dir}, which does not exist ({})",
            group.len(),
            preview(&list(&group, "target"))
        );
        let hint = format!(
            "the directory {} computes for its files is not where the package installs them (or the package that fills it is not installed); derive it from the config's own location so that it matches the install layout",
            file_name(&file)
        );
        out.push(
            grouped(&file, &group, message, hint)
                .detail("path", dir.clone())
                .detail("directory", dir),
        );
    }
    for (file, mut group) in rest_early {
        rest.entry(file).or_default().append(&mut group);
    }
    for (file, group) in rest {
        if group.len() < 3 {
            out.extend(group);
            continue;
        }
        let message = format!(
            "{} imported targets name files that do not exist ({}); CMake's import check stops find_package() at the first",
            group.len(),
            preview(&list(&group, "target"))
        );
        let hint = format!(
            "the package that ships these files is not installed, or {} lists targets its package does not ship; install it (and make the package of this config depend on it), or drop the targets",
            file_name(&file)
        );
        out.push(grouped(&file, &group, message, hint));
    }
    out
}

/// One error standing for a group of missing-import findings of one file.
fn grouped(file: &Path, group: &[Finding], message: String, hint: String) -> Finding {
    Finding::new(Code::CmakeMissingFile, file, message)
        .hint(hint)
        .detail(
            "line",
            group.first().and_then(|f| f.details.get("line").cloned()),
        )
        .detail("targets", list(group, "target"))
        .detail("paths", list(group, "path"))
}

/// Is `target`'s file check commented out in a generated per-configuration file?
fn is_exempted(text: &str, target: &str) -> bool {
    let wanted = [
        format!("_cmake_import_check_files_for_{target} "),
        format!("_IMPORT_CHECK_FILES_FOR_{target} "),
    ];
    let mut commented = false;
    for line in text.lines() {
        let t = line.trim_start();
        if !wanted.iter().any(|w| t.contains(w.as_str())) {
            continue;
        }
        if t.starts_with('#') {
            commented = true;
        } else {
            return false;
        }
    }
    commented
}

fn str_detail(f: &Finding, key: &str) -> Option<String> {
    f.details
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn list(group: &[Finding], key: &str) -> Vec<String> {
    group.iter().filter_map(|f| str_detail(f, key)).collect()
}

fn preview(items: &[String]) -> String {
    if items.len() <= 4 {
        items.join(", ")
    } else {
        let head: Vec<&str> = items.iter().take(4).map(String::as_str).collect();
        format!("{}, … ({} more)", head.join(", "), items.len() - 4)
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_commented_check_lines_exempt() {
        let debian = "list(APPEND _cmake_import_check_targets clang-format )\n#list(APPEND _cmake_import_check_files_for_clang-format \"${_IMPORT_PREFIX}/bin/clang-format\" )\n";
        assert!(is_exempted(debian, "clang-format"));
        let upstream = "list(APPEND _cmake_import_check_files_for_roc::rocblas \"x\" )\n";
        assert!(!is_exempted(upstream, "roc::rocblas"));
        assert!(!is_exempted("", "x"));
    }
}
