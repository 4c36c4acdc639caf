//! Collects what a verify run looks at from the paths given: ELF objects, static archives and
//! every name in the tree. Only file headers are read here.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::linkage::Input;
use crate::{Code, Finding, Severity};

/// The kind of one file, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A host ELF executable or shared object.
    Dynamic,
    Archive,
    Other,
}

/// Walks the given files and directories (symlinks inside directories are recorded by name but
/// not followed). Unreadable directories and files become `unreadable-file` findings.
pub fn collect(paths: &[PathBuf]) -> (Input, Vec<Finding>) {
    let mut files = Vec::new();
    let mut all = Vec::new();
    let mut findings = Vec::new();
    for p in paths {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => walk(p, &mut files, &mut all, &mut findings, 0),
            Ok(_) => {
                files.push(p.clone());
                all.push(p.clone());
            }
            Err(e) => findings.push(Finding::new(
                Code::UnreadableFile,
                Severity::Error,
                p,
                format!("cannot read: {e}"),
            )),
        }
    }
    let kinds: Vec<std::io::Result<Kind>> = files.par_iter().map(|f| kind(f)).collect();
    let mut input = Input {
        all_paths: all,
        ..Input::default()
    };
    for (f, k) in files.into_iter().zip(kinds) {
        match k {
            Ok(Kind::Dynamic) => input.files.push(f),
            Ok(Kind::Archive) => input.archives.push(f),
            Ok(Kind::Other) => {}
            Err(e) if rocpack_scan::NotRegular::of_error(&e).is_some() => findings.push(
                Finding::new(Code::NotRegularFile, Severity::Error, &f, e.to_string()),
            ),
            Err(e) => findings.push(Finding::new(
                Code::UnreadableFile,
                Severity::Error,
                &f,
                format!("cannot read: {e}"),
            )),
        }
    }
    (input, findings)
}

fn walk(
    dir: &Path,
    files: &mut Vec<PathBuf>,
    all: &mut Vec<PathBuf>,
    findings: &mut Vec<Finding>,
    depth: u32,
) {
    if depth > 64 {
        findings.push(Finding::new(
            Code::UnreadableFile,
            Severity::Error,
            dir,
            "directory nesting deeper than 64; not walked further".into(),
        ));
        return;
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            findings.push(Finding::new(
                Code::UnreadableFile,
                Severity::Error,
                dir,
                format!("cannot read directory: {e}"),
            ));
            return;
        }
    };
    let mut children: Vec<_> = entries.filter_map(Result::ok).collect();
    children.sort_by_key(|e| e.file_name());
    for entry in children {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => walk(&path, files, all, findings, depth + 1),
            Ok(t) if t.is_file() => {
                all.push(path.clone());
                files.push(path);
            }
            Ok(t) if t.is_symlink() => all.push(path),
            // A FIFO, socket or device: `kind` reports it without opening it.
            Ok(_) => files.push(path),
            Err(_) => {}
        }
    }
}

fn kind(path: &Path) -> std::io::Result<Kind> {
    let head = crate::linkage::elf::read_head(path)?;
    if head.starts_with(b"!<arch>\n") || head.starts_with(b"!<thin>\n") {
        return Ok(Kind::Archive);
    }
    match crate::linkage::elf::header_kind(&head) {
        // GPU code objects (EM_AMDGPU) are loaded by the HIP runtime, not by ld.so.
        Some((_, e_type, machine))
            if (e_type == object::elf::ET_DYN || e_type == object::elf::ET_EXEC)
                && machine != object::elf::EM_AMDGPU =>
        {
            Ok(Kind::Dynamic)
        }
        _ => Ok(Kind::Other),
    }
}
