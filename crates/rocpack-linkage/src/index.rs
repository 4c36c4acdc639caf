//! Where else in the tree a missing symbol or library exists: the hint of a finding.
//!
//! Built only when something is missing, and only for the names that are: shared objects'
//! dynamic symbol tables (already parsed) and static archives' symbol indexes (the archive's
//! first member; the object files themselves are not read).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::read::archive::ArchiveFile;
use rayon::prelude::*;

use crate::elf::{DynObject, Name};

/// A place a symbol is defined.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Provider {
    /// A shared library (it has a SONAME): sorts before programs and plugins.
    Shared(PathBuf),
    /// An executable or plugin (no SONAME) that defines it: a host program, not something to link.
    Program(PathBuf),
    /// A static archive and the member that defines it.
    Archive { archive: PathBuf, member: String },
}

impl Provider {
    pub fn describe(&self) -> String {
        match self {
            Provider::Shared(p) | Provider::Program(p) => p.display().to_string(),
            Provider::Archive { archive, member } => format!("{}({member})", archive.display()),
        }
    }
}

/// An archive's definitions of the wanted names, or why its index is unreadable.
type ArchiveDefs = Result<Vec<(Name, Provider)>, (PathBuf, String)>;

/// Symbol name → where it is defined.
#[derive(Debug, Default)]
pub struct SymbolIndex {
    by_name: HashMap<Name, Vec<Provider>>,
    /// Archives whose symbol index could not be read, with the reason.
    pub unreadable: Vec<(PathBuf, String)>,
}

impl SymbolIndex {
    /// Indexes the definitions of `wanted` in the given shared objects and static archives.
    pub fn build(
        wanted: &HashSet<Name>,
        shared: &[(PathBuf, Arc<DynObject>)],
        archives: &[(PathBuf, PathBuf)],
    ) -> SymbolIndex {
        let mut index = SymbolIndex::default();
        if wanted.is_empty() {
            return index;
        }
        for (path, obj) in shared {
            for name in wanted {
                if obj.lookup(name).any(|d| !d.hidden) {
                    index
                        .by_name
                        .entry(name.clone())
                        .or_default()
                        .push(if obj.soname.is_some() {
                            Provider::Shared(path.clone())
                        } else {
                            Provider::Program(path.clone())
                        });
                }
            }
        }
        let found: Vec<ArchiveDefs> = archives
            .par_iter()
            .map(|(host, shown)| archive_defs(host, shown, wanted).map_err(|e| (shown.clone(), e)))
            .collect();
        for r in found {
            match r {
                Ok(defs) => {
                    for (name, p) in defs {
                        index.by_name.entry(name).or_default().push(p);
                    }
                }
                Err(e) => index.unreadable.push(e),
            }
        }
        for v in index.by_name.values_mut() {
            v.sort();
            v.dedup();
        }
        index
    }

    pub fn providers(&self, name: &[u8]) -> &[Provider] {
        self.by_name.get(name).map_or(&[], Vec::as_slice)
    }
}

fn archive_defs(
    host: &Path,
    shown: &Path,
    wanted: &HashSet<Name>,
) -> Result<Vec<(Name, Provider)>, String> {
    rocpack_scan::Mapped::with_file(host, |data| archive_defs_in(data, shown, wanted))
        .map_err(|e| e.to_string())?
}

fn archive_defs_in(
    data: &[u8],
    shown: &Path,
    wanted: &HashSet<Name>,
) -> Result<Vec<(Name, Provider)>, String> {
    let archive = ArchiveFile::parse(data).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let Some(symbols) = archive.symbols().map_err(|e| e.to_string())? else {
        return Ok(out);
    };
    for sym in symbols {
        let sym = sym.map_err(|e| e.to_string())?;
        if !wanted.contains(sym.name()) {
            continue;
        }
        let member = archive
            .member(sym.offset())
            .ok()
            .map(|m| {
                String::from_utf8_lossy(m.name())
                    .trim_end_matches('/')
                    .to_owned()
            })
            .unwrap_or_else(|| format!("member at {:#x}", sym.offset().0));
        out.push((
            sym.name().into(),
            Provider::Archive {
                archive: shown.to_path_buf(),
                member,
            },
        ));
    }
    Ok(out)
}
