//! ELF link closure and symbol checks, as glibc's dynamic loader would do them, without running it
//! (the loader's rules are `rocpack_linkage`'s).
//!
//! Each ELF file given is loaded as the first object of its own process (what `ld.so --list FILE`
//! and `ldd -r FILE` do), its `DT_NEEDED` closure resolved with [`search`]'s rules, and its own
//! undefined symbols and version requirements checked against that closure in load order.
//! Objects outside the verified set (system libraries a closure reaches) are providers only.

use std::collections::{HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;

use rocpack_linkage::elf::{DynObject, Name};
use rocpack_linkage::index::{Provider, SymbolIndex};
use rocpack_linkage::search::{Closure, Environment, FileId, Outcome};
use rocpack_linkage::{search, symbols};

use crate::{Code, Finding, Severity};

/// A directory the search tried, in `searched` of `unresolved-library` (docs/json.md).
#[derive(Serialize)]
struct SearchedDir<'a> {
    dir: String,
    source: &'a str,
}

/// A candidate file the loader would skip or stop at, with why (`skipped`, `stopped_at`).
#[derive(Serialize)]
struct Candidate<'a> {
    path: String,
    reason: &'a str,
}

/// One symbol of `symbols` in `undefined-symbol`.
#[derive(Serialize)]
struct UndefinedSymbol {
    defined_in: Vec<String>,
    demangled: Option<String>,
    name: String,
    version: Option<String>,
}

/// A detail record as JSON: through `serde_json::Value`, whose maps order keys as they have
/// always appeared.
fn record(r: impl Serialize) -> Value {
    serde_json::to_value(r).unwrap_or(Value::Null)
}

/// What to verify.
#[derive(Debug, Default)]
pub struct Input {
    /// ELF files (host paths), each checked as the first object of a process.
    pub files: Vec<PathBuf>,
    /// Static archives (host paths) whose symbol indexes can explain a missing symbol.
    pub archives: Vec<PathBuf>,
    /// Every file and symlink of the tree (host paths), to say where a missing library is.
    pub all_paths: Vec<PathBuf>,
}

/// The result of [`verify`].
#[derive(Debug, Default)]
pub struct LinkReport {
    pub findings: Vec<Finding>,
    /// ELF files whose closure was resolved.
    pub files_checked: usize,
    /// Undefined non-weak symbols looked up, over all files.
    pub symbols_checked: usize,
}

/// Two libraries with this many strong LLVM definitions in common are two LLVMs in one process.
pub const LLVM_DUPLICATES_ERROR: usize = 20;
/// Other C++ libraries: this many common strong definitions make a warning.
pub const CXX_DUPLICATES_WARNING: usize = 100;

struct RootResult {
    host: PathBuf,
    closure: Result<Closure, String>,
    symbols: symbols::SymbolCheck,
}

/// Resolves every file's closure and checks its symbols. Parallel over files.
pub fn verify(env: &Environment, input: &Input) -> LinkReport {
    let roots: Vec<RootResult> = input
        .files
        .par_iter()
        .map(|host| {
            let closure = env.closure(host);
            let symbols = match &closure {
                Ok(c) if c.is_complete() => symbols::check_first(c),
                _ => symbols::SymbolCheck::default(),
            };
            RootResult {
                host: host.clone(),
                closure,
                symbols,
            }
        })
        .collect();

    let mut report = LinkReport::default();
    let mut seen_needs: HashSet<(FileId, Name)> = HashSet::new();
    // Built at the first unresolved library only: a clean tree never needs it.
    let names = std::cell::OnceCell::new();
    let mut wanted: HashSet<Name> = HashSet::new();
    for r in &roots {
        wanted.extend(r.symbols.undefined.iter().map(|u| u.name.clone()));
    }
    let index = if wanted.is_empty() {
        SymbolIndex::default()
    } else {
        let shared: Vec<(PathBuf, Arc<DynObject>)> = roots
            .iter()
            .filter_map(|r| {
                let c = r.closure.as_ref().ok()?;
                let first = c.objects.first()?;
                Some((first.path.clone(), first.obj.clone()))
            })
            .collect();
        let archives: Vec<(PathBuf, PathBuf)> = input
            .archives
            .iter()
            .map(|h| (h.clone(), env.sysroot.target(h)))
            .collect();
        SymbolIndex::build(&wanted, &shared, &archives)
    };
    // The names some object of the verified tree asks the loader for (DT_NEEDED).
    let linked: HashSet<&[u8]> = roots
        .iter()
        .filter_map(|r| r.closure.as_ref().ok()?.objects.first())
        .flat_map(|o| o.obj.needed.iter().map(|n| &n[..]))
        .collect();
    for (path, e) in &index.unreadable {
        report.findings.push(Finding::with_severity(
            Code::UnreadableFile,
            Severity::Warning,
            env.sysroot.host(path),
            format!("the symbol index of this archive could not be read: {e}"),
        ));
    }

    for r in &roots {
        let c = match &r.closure {
            Ok(c) => c,
            Err(e) => {
                report.findings.push(Finding::new(
                    Code::UnreadableFile,
                    &r.host,
                    format!("not a readable ELF file: {e}"),
                ));
                continue;
            }
        };
        report.files_checked += 1;
        report.symbols_checked += r.symbols.checked;
        let unchecked = r
            .closure
            .as_ref()
            .ok()
            .filter(|c| !c.is_complete())
            .map(|c| c.objects.first().map_or(0, |o| o.obj.undefined.len()));
        for need in &c.needs {
            let Outcome::NotFound {
                searched,
                skipped,
                stopped_at,
            } = &need.outcome
            else {
                continue;
            };
            let requester = &c.objects[need.requester];
            if !seen_needs.insert((requester.id, need.name.clone())) {
                continue;
            }
            report.findings.push(unresolved_finding(
                env,
                c,
                need.requester,
                &need.name,
                (searched, skipped, stopped_at.as_ref()),
                names.get_or_init(|| tree_names(env, input)),
                unchecked,
            ));
        }
        for m in &r.symbols.missing_versions {
            let provider = &c.objects[m.provider];
            let newest = symbols::newest_like(&provider.obj, &m.version);
            let mut message = format!(
                "requires version {} of {}, which {} does not define",
                lossy(&m.version),
                lossy(&m.library),
                provider.path.display()
            );
            if let Some(n) = &newest {
                message.push_str(&format!(" (its newest is {})", lossy(n)));
            }
            let examples: Vec<String> = m.symbols.iter().take(5).map(|s| lossy(s)).collect();
            let severity = if m.weak {
                Severity::Warning
            } else {
                Severity::Error
            };
            report.findings.push(
                Finding::with_severity(Code::MissingSymbolVersion, severity, &r.host, message)
                    .hint(format!(
                        "the loader refuses to start it: \"version `{}' not found\"; build against the {} that ships here, or ship a newer one",
                        lossy(&m.version),
                        lossy(&m.library)
                    ))
                    .detail("version", lossy(&m.version))
                    .detail("library", lossy(&m.library))
                    .detail("provider", path_str(&provider.path))
                    .detail("newest", newest.as_deref().map(lossy))
                    .detail("symbols", m.symbols.len())
                    .detail("examples", examples),
            );
        }
        report.findings.extend(undefined_findings(
            &r.host,
            c,
            &r.symbols.undefined,
            &index,
            &linked,
        ));
    }
    report.findings.extend(duplicates(&roots));
    report
}

/// File name → paths in the tree with that name or soname, for "exists elsewhere" hints.
fn tree_names(env: &Environment, input: &Input) -> HashMap<Vec<u8>, Vec<PathBuf>> {
    let mut m: HashMap<Vec<u8>, Vec<PathBuf>> = HashMap::new();
    for p in &input.all_paths {
        if let Some(n) = p.file_name() {
            m.entry(n.as_bytes().to_vec())
                .or_default()
                .push(env.sysroot.target(p));
        }
    }
    m
}

/// What a failed search tried: directories, skipped candidates, and where the loader stopped.
type Attempt<'a> = (
    &'a [search::Searched],
    &'a [(PathBuf, String)],
    Option<&'a (PathBuf, String)>,
);

#[allow(clippy::too_many_arguments)]
fn unresolved_finding(
    env: &Environment,
    c: &Closure,
    requester: usize,
    name: &[u8],
    (searched, skipped, stopped_at): Attempt<'_>,
    names: &HashMap<Vec<u8>, Vec<PathBuf>>,
    unchecked: Option<usize>,
) -> Finding {
    let r = &c.objects[requester];
    let first = &c.objects[0];
    let mut message = match stopped_at {
        Some((p, why)) => format!(
            "{} cannot be loaded: the loader stops at {}: {why}",
            lossy(name),
            p.display()
        ),
        None => format!("{} is not found", lossy(name)),
    };
    if requester != 0 {
        message.push_str(&format!(
            " (needed by {}, loaded by {})",
            r.path.display(),
            first.path.display()
        ));
    }
    let dirs: Vec<String> = searched
        .iter()
        .map(|s| format!("{} ({})", s.dir.display(), s.source))
        .collect();
    let elsewhere: Vec<&PathBuf> = names
        .get(name)
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    let hint = if let Some((p, _)) = stopped_at {
        format!(
            "the loader takes the first file named {} on its search path and does not look further: remove or rename {}, or put the right directory first",
            lossy(name),
            p.display()
        )
    } else if let Some(p) = elsewhere.first() {
        let dir = p.parent().unwrap_or(Path::new("/"));
        format!(
            "{} exists at {}, which is not on the search path: add {} to the RUNPATH of {} (e.g. $ORIGIN-relative) or to the loader's configuration",
            lossy(name),
            p.display(),
            dir.display(),
            r.path.display()
        )
    } else if !skipped.is_empty() {
        format!(
            "candidates were skipped: {}",
            skipped
                .iter()
                .map(|(p, why)| format!("{}: {why}", p.display()))
                .collect::<Vec<_>>()
                .join("; ")
        )
    } else {
        format!(
            "install the package that provides {}, or add its directory to the RUNPATH of {}",
            lossy(name),
            r.path.display()
        )
    };
    let mut f = Finding::new(Code::UnresolvedLibrary, env.sysroot.host(&r.path), message)
        .hint(hint)
        .detail("library", lossy(name))
        .detail("needed_by", path_str(&r.path))
        .detail("closure_of", path_str(&first.path))
        .detail(
            "searched",
            searched
                .iter()
                .map(|s| {
                    record(SearchedDir {
                        dir: path_str(&s.dir),
                        source: &s.source,
                    })
                })
                .collect::<Vec<Value>>(),
        )
        .detail(
            "skipped",
            skipped
                .iter()
                .map(|(p, why)| {
                    record(Candidate {
                        path: path_str(p),
                        reason: why,
                    })
                })
                .collect::<Vec<Value>>(),
        )
        .detail(
            "stopped_at",
            stopped_at.map(|(p, why)| {
                record(Candidate {
                    path: path_str(p),
                    reason: why,
                })
            }),
        )
        .detail(
            "found_elsewhere",
            elsewhere.iter().map(|p| path_str(p)).collect::<Vec<_>>(),
        );
    if requester == 0
        && let Some(n) = unchecked
    {
        f = f.detail("symbols_unchecked", n);
    }
    // The line is complete without the search path; the text renderer prints `dirs` below it.
    f.details.insert("search_order".into(), Value::from(dirs));
    f
}

/// One finding per file and place of definition: the symbols a missing `-lfoo` would have
/// provided are one problem, not dozens.
fn undefined_findings(
    host: &Path,
    c: &Closure,
    undefined: &[symbols::Unresolved],
    index: &SymbolIndex,
    linked: &HashSet<&[u8]>,
) -> Vec<Finding> {
    let first = &c.objects[0];
    // A shared library that nothing in the verified tree links against (no DT_NEEDED names its
    // SONAME or file name) is loaded with dlopen(), and a symbol no file here defines is then
    // expected from the program that loads it: glibc's libthread_db.so.1 leaves the
    // proc_service callbacks (ps_pdread, ...) to the debugger by design (proc_service.h). Such
    // symbols are noted, not errors. A library something here links keeps its errors, and so
    // does a symbol a file here defines (a missing -lfoo, as LLVMInitializeX86* from
    // libLLVMX86CodeGen.a in libMIOpen).
    let file_name = first
        .path
        .file_name()
        .map(std::os::unix::ffi::OsStrExt::as_bytes);
    let loaded_only = first.obj.e_type == object::elf::ET_DYN
        && first.obj.interp.is_none()
        && first
            .obj
            .soname
            .as_ref()
            .is_some_and(|s| !linked.contains(&s[..]))
        && file_name.is_none_or(|n| !linked.contains(n));
    // A shared object without a SONAME or interpreter is a plugin: the program that dlopen()s it
    // provides what it leaves undefined (Perl and Python modules, tc's qdiscs, ...).
    let plugin = first.obj.soname.is_none()
        && first.obj.interp.is_none()
        && first.obj.e_type == object::elf::ET_DYN;
    let mut groups: std::collections::BTreeMap<Option<Provider>, Vec<&symbols::Unresolved>> =
        std::collections::BTreeMap::new();
    for u in undefined {
        groups
            .entry(index.providers(&u.name).first().cloned())
            .or_default()
            .push(u);
    }
    let mut out = Vec::new();
    for (provider, syms) in groups {
        let shown: Vec<String> = syms
            .iter()
            .map(|u| {
                let mut s = lossy(&u.name);
                if let Some(v) = &u.version {
                    s = format!("{s}@{}", lossy(v));
                }
                if let Some(d) = demangle(&u.name) {
                    s = format!("{s} ({d})");
                }
                s
            })
            .collect();
        let list = if shown.len() <= 3 {
            shown.join(", ")
        } else {
            let head: Vec<&str> = shown.iter().take(3).map(String::as_str).collect();
            format!("{}, … ({} more)", head.join(", "), shown.len() - 3)
        };
        let message = if syms.len() == 1 {
            format!(
                "undefined symbol {list}: no object of its load closure ({} objects) defines it",
                c.objects.len()
            )
        } else {
            format!(
                "{} undefined symbols {list}: no object of its load closure ({} objects) defines them",
                syms.len(),
                c.objects.len()
            )
        };
        let what = if syms.len() == 1 {
            lossy(&syms[0].name)
        } else {
            "they are".to_owned()
        };
        let is = if syms.len() == 1 { " is" } else { "" };
        let mut hint = match &provider {
            Some(Provider::Archive { archive, member }) => format!(
                "{what}{is} defined in {}({member}), which was not linked into {}",
                archive.display(),
                first.path.display()
            ),
            Some(Provider::Shared(p)) => format!(
                "{what}{is} defined in {}, which {} does not load: link it (DT_NEEDED)",
                p.display(),
                first.path.display()
            ),
            Some(Provider::Program(p)) => format!(
                "{what}{is} defined in {}, a program or plugin, not a library to link",
                p.display()
            ),
            None => format!(
                "no file in the verified tree defines {}: a library is missing from the link line, or the symbol was removed from the library it comes from",
                if syms.len() == 1 { "it" } else { "them" }
            ),
        };
        let severity = if plugin {
            hint.push_str("; this object has no SONAME, so it may be a plugin whose host program provides these");
            Severity::Warning
        } else if loaded_only && provider.is_none() {
            hint = format!(
                "nothing in the verified tree links this library (no DT_NEEDED names it), so it is loaded with dlopen(); the program that loads it must define {} (as gdb defines libthread_db's proc_service callbacks)",
                if syms.len() == 1 { "it" } else { "them" }
            );
            Severity::Info
        } else {
            Severity::Error
        };
        let mut defined_in: Vec<String> = syms
            .iter()
            .flat_map(|u| index.providers(&u.name).iter().map(Provider::describe))
            .collect();
        defined_in.sort();
        defined_in.dedup();
        out.push(
            Finding::with_severity(Code::UndefinedSymbol, severity, host, message)
                .hint(hint)
                .detail("symbol", lossy(&syms[0].name))
                .detail(
                    "symbols",
                    syms.iter()
                        .map(|u| {
                            record(UndefinedSymbol {
                                defined_in: index
                                    .providers(&u.name)
                                    .iter()
                                    .map(Provider::describe)
                                    .collect(),
                                demangled: demangle(&u.name),
                                name: lossy(&u.name),
                                version: u.version.as_deref().map(lossy),
                            })
                        })
                        .collect::<Vec<Value>>(),
                )
                .detail("defined_in", defined_in)
                .detail("plugin", plugin)
                .detail("dlopen_only", loaded_only && provider.is_none()),
        );
    }
    out
}

/// Pairs of objects in one closure that define the same strong C++ (or LLVM C API) symbols.
fn duplicates(roots: &[RootResult]) -> Vec<Finding> {
    let mut objects: HashMap<FileId, Arc<DynObject>> = HashMap::new();
    let mut pairs: Vec<(FileId, FileId, usize, usize, usize)> = Vec::new();
    let mut seen: HashSet<(FileId, FileId)> = HashSet::new();
    for (ri, r) in roots.iter().enumerate() {
        let Ok(c) = &r.closure else { continue };
        for o in &c.objects {
            objects.entry(o.id).or_insert_with(|| o.obj.clone());
        }
        for (i, a) in c.objects.iter().enumerate() {
            for (j, b) in c.objects.iter().enumerate().skip(i + 1) {
                let key = if a.id < b.id {
                    (a.id, b.id)
                } else {
                    (b.id, a.id)
                };
                if a.id != b.id && seen.insert(key) {
                    pairs.push((a.id, b.id, ri, i, j));
                }
            }
        }
    }
    let candidates: HashMap<FileId, Vec<&[u8]>> = objects
        .par_iter()
        .map(|(id, o)| (*id, symbols::duplicate_candidates(o)))
        .collect();
    let found: Vec<(usize, usize, usize, Vec<Name>)> = pairs
        .par_iter()
        .filter_map(|(a, b, ri, i, j)| {
            let (ca, cb) = (candidates.get(a)?, candidates.get(b)?);
            if ca.is_empty() || cb.is_empty() {
                return None;
            }
            let common = symbols::intersect(ca, cb);
            (!common.is_empty()).then_some((*ri, *i, *j, common))
        })
        .collect();
    let mut out = Vec::new();
    for (ri, i, j, common) in found {
        let Ok(c) = &roots[ri].closure else { continue };
        let llvm: Vec<&Name> = common.iter().filter(|n| symbols::is_llvm(n)).collect();
        let severity = if llvm.len() >= LLVM_DUPLICATES_ERROR {
            Severity::Error
        } else if common.len() >= CXX_DUPLICATES_WARNING || !llvm.is_empty() {
            Severity::Warning
        } else {
            continue;
        };
        let (first, second) = (&c.objects[i], &c.objects[j]);
        let what = if llvm.is_empty() {
            "C++ symbols"
        } else {
            "LLVM symbols"
        };
        let shown = if llvm.is_empty() {
            common.len()
        } else {
            llvm.len()
        };
        let examples: Vec<String> = (if llvm.is_empty() {
            common.iter().take(5).collect::<Vec<_>>()
        } else {
            llvm.iter().take(5).copied().collect()
        })
        .into_iter()
        .map(|n| demangle(n).unwrap_or_else(|| lossy(n)))
        .collect();
        out.push(
            Finding::with_severity(
                Code::DuplicateDefinition,
                severity,
                &second.host,
                format!(
                    "defines {shown} {what} that {} also defines; both are loaded by {}",
                    first.path.display(),
                    c.objects[0].path.display()
                ),
            )
            .hint(if llvm.is_empty() {
                "two copies of one C++ library in a process: the first definition wins for every caller, so each copy's state and types are mixed; link one copy".to_owned()
            } else {
                "two LLVMs in one process: LLVM's global option registry aborts (\"Option ... registered more than once\") or calls cross between versions; link both against one shared LLVM, or hide the static copy's symbols (-Wl,--exclude-libs,ALL)".to_owned()
            })
            .detail("first", path_str(&first.path))
            .detail("second", path_str(&second.path))
            .detail("closure_of", path_str(&c.objects[0].path))
            .detail("count", shown)
            .detail("examples", examples),
        );
    }
    out
}

fn demangle(name: &[u8]) -> Option<String> {
    if !name.starts_with(b"_Z") {
        return None;
    }
    let sym = cpp_demangle::Symbol::new(name).ok()?;
    let opts = cpp_demangle::DemangleOptions::new().no_params();
    sym.demangle_with_options(&opts).ok()
}

fn lossy(b: &[u8]) -> String {
    rocpack_bytes::lossless_string(b)
}

fn path_str(p: &Path) -> String {
    rocpack_bytes::lossless_string(p.as_os_str().as_bytes())
}
