//! Collects what a verify run looks at from the paths given: ELF objects, static archives and
//! every name in the tree. Only file headers are read here.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::linkage::Input;
use crate::{Code, Finding};

/// The kind of one file, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A host ELF executable or shared object.
    Dynamic,
    Archive,
    Other,
}

/// Walks the given files and directories with the one walk of the file layer
/// ([`rocpack_scan::walk`]: symlinks inside directories are recorded by name but not followed).
/// Paths and directories that cannot be read, and entries that cannot, become
/// `unreadable-file` findings.
pub fn collect(paths: &[PathBuf]) -> (Input, Vec<Finding>) {
    use rocpack_scan::walk::{Kind as Entry, WalkError};
    let (entries, errors) = rocpack_scan::walk::walk(paths);
    let mut findings: Vec<Finding> = errors
        .into_iter()
        .map(|(p, e)| {
            let message = match e {
                WalkError::Path(e) | WalkError::Listing(e) | WalkError::Entry(e) => {
                    format!("cannot read: {e}")
                }
                WalkError::Dir(e) => format!("cannot read directory: {e}"),
                WalkError::TooDeep => format!(
                    "directory nesting deeper than {}; not walked further",
                    rocpack_scan::walk::MAX_DEPTH
                ),
            };
            Finding::new(Code::UnreadableFile, &p, message)
        })
        .collect();
    // Every name ld.so could be given (files, and links by their names); every file to read
    // (a FIFO, socket or device too: `kind` reports it without opening it).
    let all: Vec<PathBuf> = entries
        .iter()
        .filter(|e| e.explicit || e.kind != Entry::Special)
        .map(|e| e.path.clone())
        .collect();
    let files: Vec<PathBuf> = entries
        .into_iter()
        .filter(|e| e.kind != Entry::Symlink)
        .map(|e| e.path)
        .collect();
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
            Err(e) if rocpack_scan::NotRegular::of_error(&e).is_some() => {
                findings.push(Finding::new(Code::NotRegularFile, &f, e.to_string()))
            }
            Err(e) => findings.push(Finding::new(
                Code::UnreadableFile,
                &f,
                format!("cannot read: {e}"),
            )),
        }
    }
    (input, findings)
}

fn kind(path: &Path) -> std::io::Result<Kind> {
    let head = rocpack_linkage::elf::read_head(path)?;
    if head.starts_with(b"!<arch>\n") || head.starts_with(b"!<thin>\n") {
        return Ok(Kind::Archive);
    }
    match rocpack_linkage::elf::header_kind(&head) {
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
