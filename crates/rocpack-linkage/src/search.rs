//! Library search and load order, as glibc's elf/dl-load.c (`_dl_map_object`) and
//! elf/dl-deps.c (`_dl_map_object_deps`) do it.
//!
//! For a `DT_NEEDED` name without a slash, requested by object L in a process whose first object
//! is M, the directories are, in order:
//! 1. unless L has `DT_RUNPATH`: the `DT_RPATH` of L, of the object that loaded L, and so on up to
//!    M, then M's `DT_RPATH` if the chain did not pass through M (an object with `DT_RUNPATH` has
//!    its `DT_RPATH` ignored altogether, elf/get-dynamic-info.h);
//! 2. `LD_LIBRARY_PATH`;
//! 3. L's own `DT_RUNPATH` (never inherited);
//! 4. unless L has `DF_1_NODEFLIB`: `/etc/ld.so.cache`, then the default directories.
//!
//! Before searching, a name that matches an object already loaded (the name it was requested
//! by, its path, or its `DT_SONAME`) reuses that object, and a file that is already loaded under
//! another path (same device and inode) is not loaded twice. A candidate of another ELF class or
//! machine is skipped and the search goes on, as `open_verify` does; any other unusable candidate
//! (not ELF, too short, an executable) stops the search with an error, as it stops the loader
//! ("invalid ELF header", "cannot dynamically load position-independent executable").
//!
//! Not modelled: glibc-hwcaps and legacy hwcap subdirectories (which one the loader uses depends
//! on the CPU that runs the program; the baseline directory always exists as the fallback),
//! `DT_AUXILIARY`/`DT_FILTER`, and audit modules.

use std::collections::{HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use object::elf;

use crate::elf::{DynObject, Name, header_kind, read_head};
use crate::ldcache::{LdCache, abi_flags};
use rocpack_scan::sysroot::Sysroot;

/// Which ABI an object is built for: the loader only takes objects of the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Abi {
    pub machine: u16,
    pub is_64: bool,
}

/// The per-ABI parts of the loader's configuration on the target system.
#[derive(Debug)]
pub struct AbiPaths {
    /// `$LIB`.
    pub lib: String,
    /// `$PLATFORM`.
    pub platform: String,
    /// The compiled-in default directories (glibc's `SYSTEM_DIRS`).
    pub default_dirs: Vec<PathBuf>,
    /// The program interpreter a shared library is loaded with when it is the first object.
    pub interp: Option<PathBuf>,
    pub cache: CacheSource,
}

/// Where the cache step of the search comes from.
#[derive(Debug)]
pub enum CacheSource {
    /// `/etc/ld.so.cache`, parsed.
    Cache(LdCache),
    /// No cache (an unpacked root never ran ldconfig): the directories `/etc/ld.so.conf` lists,
    /// searched in order, which is what ldconfig would have put in the cache.
    Conf(Vec<PathBuf>),
    None(String),
}

/// A file's identity, to load it once whatever path it is reached by.
pub type FileId = (u64, u64);

/// One object of a closure.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The path the loader would report (target-system form).
    pub path: PathBuf,
    /// Where it is read from on this machine.
    pub host: PathBuf,
    pub id: FileId,
    pub obj: Arc<DynObject>,
    /// Names it was requested by.
    pub names: Vec<Name>,
    /// The object whose `DT_NEEDED` loaded it first.
    pub loader: Option<usize>,
}

/// How one `DT_NEEDED` entry was resolved.
#[derive(Debug, Clone)]
pub struct Need {
    pub requester: usize,
    pub name: Name,
    pub outcome: Outcome,
}

#[derive(Debug, Clone)]
pub enum Outcome {
    /// Index into [`Closure::objects`].
    Found(usize),
    NotFound {
        searched: Vec<Searched>,
        /// Candidates of another ELF class or machine, skipped as the loader skips them.
        skipped: Vec<(PathBuf, String)>,
        /// The candidate the loader would stop at with an error, and the error.
        stopped_at: Option<(PathBuf, String)>,
    },
}

/// One directory (or the cache) the search tried.
#[derive(Debug, Clone)]
pub struct Searched {
    /// `RPATH of /usr/lib/libx.so`, `LD_LIBRARY_PATH`, `RUNPATH`, `ld.so.cache`, `default`.
    pub source: String,
    pub dir: PathBuf,
}

/// The objects one program (or library as the first object) loads, in load order.
#[derive(Debug)]
pub struct Closure {
    pub objects: Vec<Loaded>,
    pub needs: Vec<Need>,
}

impl Closure {
    pub fn is_complete(&self) -> bool {
        self.needs
            .iter()
            .all(|n| matches!(n.outcome, Outcome::Found(_)))
    }

    /// The loaded object a name refers to, as `_dl_name_match_p` plus the soname check.
    pub fn find_by_name(&self, name: &[u8]) -> Option<usize> {
        self.objects.iter().position(|o| matches_name(o, name))
    }
}

fn matches_name(o: &Loaded, name: &[u8]) -> bool {
    o.names.iter().any(|n| &**n == name)
        || o.path.as_os_str().as_bytes() == name
        || o.obj.soname.as_deref() == Some(name)
}

type Parsed = Result<Arc<DynObject>, String>;

/// The loader's view of the target system, shared by every closure of a run. Parsed objects and
/// probed files are cached, so a library is read once however many programs load it.
pub struct Environment {
    pub sysroot: Sysroot,
    ld_library_path: Option<Name>,
    ld_preload: Vec<Name>,
    abis: Mutex<HashMap<Abi, Arc<AbiPaths>>>,
    objects: Mutex<HashMap<FileId, Arc<OnceLock<Parsed>>>>,
    probes: Mutex<HashMap<PathBuf, Option<Probe>>>,
}

/// What a look at one candidate path found.
#[derive(Debug, Clone)]
struct Probe {
    host: PathBuf,
    id: FileId,
    /// `(is_64, e_type, machine)`, or why the file is not usable.
    kind: Result<(bool, u16, u16), String>,
}

/// A per-run setting taken from `--env`.
#[derive(Debug, Clone, Default)]
pub struct LoaderEnv {
    pub ld_library_path: Option<String>,
    pub ld_preload: Option<String>,
}

impl Environment {
    pub fn new(sysroot: Sysroot, env: &LoaderEnv) -> Self {
        let ld_preload = env
            .ld_preload
            .as_deref()
            .map(|p| {
                p.split([' ', ':'])
                    .filter(|s| !s.is_empty())
                    .map(|s| Name::from(s.as_bytes()))
                    .collect()
            })
            .unwrap_or_default();
        Environment {
            sysroot,
            ld_library_path: env
                .ld_library_path
                .as_deref()
                .map(|s| Name::from(s.as_bytes())),
            ld_preload,
            abis: Mutex::new(HashMap::new()),
            objects: Mutex::new(HashMap::new()),
            probes: Mutex::new(HashMap::new()),
        }
    }

    /// The loader configuration for one ABI, read from the target system once.
    pub fn abi(&self, abi: Abi) -> Arc<AbiPaths> {
        if let Some(a) = lock(&self.abis).get(&abi) {
            return a.clone();
        }
        let paths = Arc::new(self.read_abi(abi));
        lock(&self.abis).entry(abi).or_insert(paths).clone()
    }

    fn read_abi(&self, abi: Abi) -> AbiPaths {
        let (triplet, platform, interp) = match (abi.machine, abi.is_64) {
            (elf::EM_X86_64, true) => (
                "x86_64-linux-gnu",
                "x86_64",
                Some("/lib64/ld-linux-x86-64.so.2"),
            ),
            (elf::EM_X86_64, false) => (
                "x86_64-linux-gnux32",
                "x86_64",
                Some("/libx32/ld-linux-x32.so.2"),
            ),
            (elf::EM_386, false) => ("i386-linux-gnu", "i686", Some("/lib/ld-linux.so.2")),
            (elf::EM_AARCH64, true) => (
                "aarch64-linux-gnu",
                "aarch64",
                Some("/lib/ld-linux-aarch64.so.1"),
            ),
            (elf::EM_PPC64, true) => (
                "powerpc64le-linux-gnu",
                "powerpc64le",
                Some("/lib64/ld64.so.2"),
            ),
            (elf::EM_S390, true) => ("s390x-linux-gnu", "s390x", Some("/lib/ld64.so.1")),
            (elf::EM_RISCV, true) => (
                "riscv64-linux-gnu",
                "riscv64",
                Some("/lib/ld-linux-riscv64-lp64d.so.1"),
            ),
            _ => ("", "", None),
        };
        let is_dir = |p: &str| {
            self.sysroot
                .resolve(Path::new(p))
                .is_some_and(|h| h.is_dir())
        };
        // Debian and Ubuntu build glibc with multiarch directories (`ld.so --help` there prints
        // /lib/<triplet>, /usr/lib/<triplet>, /lib, /usr/lib, and `$LIB` is lib/<triplet>);
        // other distributions use lib64 for 64-bit ABIs whose `SYSTEM_DIRS` say so.
        let multiarch = !triplet.is_empty()
            && (is_dir(&format!("/usr/lib/{triplet}")) || is_dir(&format!("/lib/{triplet}")));
        let (lib, default_dirs) = if multiarch {
            (
                format!("lib/{triplet}"),
                vec![
                    PathBuf::from(format!("/lib/{triplet}")),
                    PathBuf::from(format!("/usr/lib/{triplet}")),
                    PathBuf::from("/lib"),
                    PathBuf::from("/usr/lib"),
                ],
            )
        } else if abi.is_64 && is_dir("/usr/lib64") {
            (
                "lib64".to_owned(),
                vec![PathBuf::from("/lib64"), PathBuf::from("/usr/lib64")],
            )
        } else {
            (
                "lib".to_owned(),
                vec![PathBuf::from("/lib"), PathBuf::from("/usr/lib")],
            )
        };
        AbiPaths {
            lib,
            platform: platform.to_owned(),
            default_dirs,
            interp: interp.map(PathBuf::from),
            cache: self.read_cache(abi),
        }
    }

    fn read_cache(&self, abi: Abi) -> CacheSource {
        let path = Path::new("/etc/ld.so.cache");
        if let Some(host) = self.sysroot.resolve(path) {
            return match rocpack_scan::read_regular(&host) {
                Ok(data) => match LdCache::parse(&data, abi_flags(abi.machine, abi.is_64)) {
                    Ok(c) => CacheSource::Cache(c),
                    Err(e) => CacheSource::None(format!("{}: {e}", host.display())),
                },
                Err(e) => CacheSource::None(format!("{}: {e}", host.display())),
            };
        }
        let mut dirs = Vec::new();
        let mut seen = HashSet::new();
        self.read_conf(Path::new("/etc/ld.so.conf"), &mut dirs, &mut seen, 0);
        if dirs.is_empty() {
            CacheSource::None("no /etc/ld.so.cache and no /etc/ld.so.conf".to_owned())
        } else {
            CacheSource::Conf(dirs)
        }
    }

    /// Reads an ld.so.conf (with `include` globs of the form `dir/*.conf`, as Debian's).
    fn read_conf(
        &self,
        file: &Path,
        dirs: &mut Vec<PathBuf>,
        seen: &mut HashSet<PathBuf>,
        depth: usize,
    ) {
        if depth > 8 || !seen.insert(file.to_path_buf()) {
            return;
        }
        let Some(host) = self.sysroot.resolve(file) else {
            return;
        };
        let Ok(text) = rocpack_scan::read_regular_to_string(&host) else {
            return;
        };
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if let Some(pattern) = line.strip_prefix("include") {
                for pat in pattern.split_whitespace() {
                    for f in self.glob_conf(file, pat) {
                        self.read_conf(&f, dirs, seen, depth + 1);
                    }
                }
            } else if line.starts_with('/') {
                // ldconfig allows "dir=TYPE" from libc5 days.
                let dir = line.split('=').next().unwrap_or(line).trim();
                dirs.push(PathBuf::from(dir));
            }
        }
    }

    /// Expands an ld.so.conf `include` pattern whose last component may hold `*`.
    fn glob_conf(&self, from: &Path, pattern: &str) -> Vec<PathBuf> {
        let pattern = if pattern.starts_with('/') {
            PathBuf::from(pattern)
        } else {
            from.parent().unwrap_or(Path::new("/")).join(pattern)
        };
        let (Some(dir), Some(name)) = (pattern.parent(), pattern.file_name()) else {
            return Vec::new();
        };
        let name = name.to_string_lossy();
        let Some(host) = self.sysroot.resolve(dir) else {
            return Vec::new();
        };
        let Ok(rd) = std::fs::read_dir(host) else {
            return Vec::new();
        };
        let (pre, post) = name.split_once('*').unwrap_or((&name, ""));
        let exact = !name.contains('*');
        let mut out: Vec<PathBuf> = rd
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|f| {
                if exact {
                    *f == name
                } else {
                    f.len() >= pre.len() + post.len() && f.starts_with(pre) && f.ends_with(post)
                }
            })
            .map(|f| dir.join(f))
            .collect();
        out.sort();
        out
    }

    /// Reads and parses a file once per run; later requests for the same file get the same object.
    pub fn load(&self, host: &Path, id: FileId) -> Parsed {
        let cell = lock(&self.objects).entry(id).or_default().clone();
        cell.get_or_init(|| {
            rocpack_scan::Mapped::with_file(host, |data| DynObject::parse(data).map(Arc::new))
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())
        })
        .clone()
    }

    /// Looks at a candidate path: does it exist, what is it.
    fn probe(&self, target: &Path) -> Option<Probe> {
        if let Some(p) = lock(&self.probes).get(target) {
            return p.clone();
        }
        let probe = self.sysroot.resolve(target).and_then(|host| {
            let meta = std::fs::metadata(&host).ok()?;
            if !meta.is_file() {
                return None;
            }
            let kind = read_head(&host)
                .map_err(|e| e.to_string())
                .and_then(|head| header_kind(&head).ok_or_else(|| "not an ELF file".to_owned()));
            Some(Probe {
                host,
                id: (meta.dev(), meta.ino()),
                kind,
            })
        });
        lock(&self.probes)
            .entry(target.to_path_buf())
            .or_insert(probe)
            .clone()
    }

    /// The closure of one file, loaded as the first object.
    ///
    /// Errs when the file itself cannot be read or parsed.
    pub fn closure(&self, host: &Path) -> Result<Closure, String> {
        let meta = std::fs::metadata(host).map_err(|e| e.to_string())?;
        let id = (meta.dev(), meta.ino());
        let obj = self.load(host, id)?;
        let abi = Abi {
            machine: obj.machine,
            is_64: obj.is_64,
        };
        let paths = self.abi(abi);
        let target = self.sysroot.target(host);
        let mut c = Closure {
            objects: vec![Loaded {
                path: target.clone(),
                host: host.to_path_buf(),
                id,
                obj: obj.clone(),
                names: Vec::new(),
                loader: None,
            }],
            needs: Vec::new(),
        };
        // The dynamic linker itself is in the namespace from the start (matched by name or
        // soname when a library needs it), but joins the search order only where it is needed.
        let interp = obj
            .interp
            .as_deref()
            .map(|i| PathBuf::from(std::ffi::OsStr::from_bytes(i)))
            .or_else(|| paths.interp.clone());
        let mut rtld = interp.and_then(|p| {
            let probe = self.probe(&p)?;
            let parsed = self.load(&probe.host, probe.id).ok()?;
            Some(Loaded {
                path: p,
                host: probe.host,
                id: probe.id,
                obj: parsed,
                names: Vec::new(),
                loader: None,
            })
        });

        // LD_PRELOAD objects come right after the first object, then everyone's DT_NEEDED,
        // breadth-first.
        for name in &self.ld_preload {
            let outcome = self.map_object(&mut c, &mut rtld, &paths, abi, 0, name);
            c.needs.push(Need {
                requester: 0,
                name: name.clone(),
                outcome,
            });
        }
        let mut i = 0;
        while let Some(o) = c.objects.get(i) {
            let obj = o.obj.clone();
            for name in &obj.needed {
                let outcome = self.map_object(&mut c, &mut rtld, &paths, abi, i, name);
                c.needs.push(Need {
                    requester: i,
                    name: name.clone(),
                    outcome,
                });
            }
            i += 1;
        }
        Ok(c)
    }

    /// `_dl_map_object`: one name requested by one loaded object.
    fn map_object(
        &self,
        c: &mut Closure,
        rtld: &mut Option<Loaded>,
        paths: &AbiPaths,
        abi: Abi,
        loader: usize,
        name: &[u8],
    ) -> Outcome {
        if let Some(found) = c.find_by_name(name) {
            add_name(&mut c.objects[found], name);
            return Outcome::Found(found);
        }
        if let Some(r) = rtld.take_if(|r| matches_name(r, name)) {
            return join_rtld(c, r, loader, name);
        }
        let mut searched = Vec::new();
        let mut skipped = Vec::new();
        let found = if name.contains(&b'/') {
            let expanded = expand_dst(name, &c.objects[loader].path, paths);
            expanded.and_then(|p| {
                let p = PathBuf::from(std::ffi::OsStr::from_bytes(&p));
                searched.push(Searched {
                    source: "path".to_owned(),
                    dir: p.clone(),
                });
                self.try_file(&p, abi, &mut skipped)
            })
        } else {
            self.search(c, paths, abi, loader, name, &mut searched, &mut skipped)
        };
        let Some((path, probe)) = found else {
            return Outcome::NotFound {
                searched,
                skipped,
                stopped_at: None,
            };
        };
        if let Err(e) = &probe.kind {
            return Outcome::NotFound {
                searched,
                skipped,
                stopped_at: Some((path, e.clone())),
            };
        }
        // Same file under another name: the loader compares device and inode.
        if let Some(idx) = c.objects.iter().position(|o| o.id == probe.id) {
            add_name(&mut c.objects[idx], name);
            return Outcome::Found(idx);
        }
        if let Some(r) = rtld.take_if(|r| r.id == probe.id) {
            return join_rtld(c, r, loader, name);
        }
        let loaded = self.load(&probe.host, probe.id).and_then(|obj| {
            if obj.e_type == elf::ET_EXEC {
                Err("cannot dynamically load executable".to_owned())
            } else if obj.pie {
                Err("cannot dynamically load position-independent executable".to_owned())
            } else {
                Ok(obj)
            }
        });
        match loaded {
            Ok(obj) => {
                c.objects.push(Loaded {
                    path,
                    host: probe.host,
                    id: probe.id,
                    obj,
                    names: vec![name.into()],
                    loader: Some(loader),
                });
                Outcome::Found(c.objects.len() - 1)
            }
            Err(e) => Outcome::NotFound {
                searched,
                skipped,
                stopped_at: Some((path, e)),
            },
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        c: &Closure,
        paths: &AbiPaths,
        abi: Abi,
        loader: usize,
        name: &[u8],
        searched: &mut Vec<Searched>,
        skipped: &mut Vec<(PathBuf, String)>,
    ) -> Option<(PathBuf, Probe)> {
        let l = &c.objects[loader];
        let try_dirs = |source: &str,
                        list: &[u8],
                        origin_of: &Path,
                        seps: &[u8],
                        searched: &mut Vec<Searched>,
                        skipped: &mut Vec<(PathBuf, String)>| {
            for dir in split_path(list, seps) {
                let Some(dir) = expand_dst(dir, origin_of, paths) else {
                    continue;
                };
                let dir = PathBuf::from(std::ffi::OsStr::from_bytes(&dir));
                searched.push(Searched {
                    source: source.to_owned(),
                    dir: dir.clone(),
                });
                let candidate = dir.join(std::ffi::OsStr::from_bytes(name));
                if let Some(hit) = self.try_file(&candidate, abi, skipped) {
                    return Some(hit);
                }
            }
            None
        };
        if l.obj.runpath.is_none() {
            let mut did_main = false;
            let mut at = Some(loader);
            let mut hops = 0;
            while let Some(idx) = at {
                let o = &c.objects[idx];
                if let Some(rpath) = &o.obj.rpath {
                    let source = format!("RPATH of {}", o.path.display());
                    if let Some(hit) = try_dirs(&source, rpath, &o.path, b":", searched, skipped) {
                        return Some(hit);
                    }
                    did_main |= idx == 0;
                }
                at = o.loader;
                hops += 1;
                if hops > c.objects.len() {
                    break;
                }
            }
            let main = &c.objects[0];
            if !did_main && let Some(rpath) = &main.obj.rpath {
                let source = format!("RPATH of {}", main.path.display());
                if let Some(hit) = try_dirs(&source, rpath, &main.path, b":", searched, skipped) {
                    return Some(hit);
                }
            }
        }
        if let Some(llp) = &self.ld_library_path {
            // DSTs in LD_LIBRARY_PATH expand relative to the main program.
            let main = &c.objects[0].path;
            if let Some(hit) = try_dirs("LD_LIBRARY_PATH", llp, main, b":;", searched, skipped) {
                return Some(hit);
            }
        }
        if let Some(runpath) = &l.obj.runpath {
            let source = format!("RUNPATH of {}", l.path.display());
            if let Some(hit) = try_dirs(&source, runpath, &l.path, b":", searched, skipped) {
                return Some(hit);
            }
        }
        if l.obj.nodeflib {
            return None;
        }
        match &paths.cache {
            CacheSource::Cache(cache) => {
                if let Some(p) = cache.lookup(name) {
                    let p = PathBuf::from(std::ffi::OsStr::from_bytes(p));
                    searched.push(Searched {
                        source: "ld.so.cache".to_owned(),
                        dir: p.parent().map(Path::to_path_buf).unwrap_or_default(),
                    });
                    if let Some(hit) = self.try_file(&p, abi, skipped) {
                        return Some(hit);
                    }
                } else {
                    searched.push(Searched {
                        source: "ld.so.cache".to_owned(),
                        dir: PathBuf::from("/etc/ld.so.cache"),
                    });
                }
            }
            CacheSource::Conf(dirs) => {
                for dir in dirs {
                    searched.push(Searched {
                        source: "ld.so.conf (no ld.so.cache)".to_owned(),
                        dir: dir.clone(),
                    });
                    if let Some(hit) =
                        self.try_file(&dir.join(std::ffi::OsStr::from_bytes(name)), abi, skipped)
                    {
                        return Some(hit);
                    }
                }
            }
            CacheSource::None(_) => {}
        }
        for dir in &paths.default_dirs {
            searched.push(Searched {
                source: "default".to_owned(),
                dir: dir.clone(),
            });
            if let Some(hit) =
                self.try_file(&dir.join(std::ffi::OsStr::from_bytes(name)), abi, skipped)
            {
                return Some(hit);
            }
        }
        None
    }

    /// A candidate file: the one the loader takes (usable or not), or skipped for its class.
    fn try_file(
        &self,
        target: &Path,
        abi: Abi,
        skipped: &mut Vec<(PathBuf, String)>,
    ) -> Option<(PathBuf, Probe)> {
        let probe = self.probe(target)?;
        match &probe.kind {
            Ok((is_64, _, machine)) if *is_64 == abi.is_64 && *machine == abi.machine => {
                Some((target.to_path_buf(), probe))
            }
            Ok((is_64, _, machine)) => {
                skipped.push((
                    target.to_path_buf(),
                    format!(
                        "wrong ELF class or machine ({}-bit, e_machine {machine})",
                        if *is_64 { 64 } else { 32 }
                    ),
                ));
                None
            }
            // Not ELF at all: the loader opens it and fails; the caller reports that.
            Err(_) => Some((target.to_path_buf(), probe)),
        }
    }
}

/// The dynamic linker joins the search order where an object first needs it.
fn join_rtld(c: &mut Closure, mut rtld: Loaded, loader: usize, name: &[u8]) -> Outcome {
    add_name(&mut rtld, name);
    rtld.loader = Some(loader);
    c.objects.push(rtld);
    Outcome::Found(c.objects.len() - 1)
}

fn add_name(o: &mut Loaded, name: &[u8]) {
    if !o.names.iter().any(|n| &**n == name) {
        o.names.push(name.into());
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Splits a search path; an empty element means the current directory, as glibc's
/// `fillin_rpath` treats it.
fn split_path<'a>(list: &'a [u8], seps: &'a [u8]) -> impl Iterator<Item = &'a [u8]> {
    list.split(move |b| seps.contains(b))
        .map(|d| if d.is_empty() { &b"."[..] } else { d })
}

/// Expands `$ORIGIN`, `$LIB` and `$PLATFORM` (and their `${…}` forms) as glibc's
/// `_dl_dst_substitute` does; `origin_of` is the path of the object the string belongs to.
/// Unknown `$NAME`s are kept as they are. `None` when `$ORIGIN` cannot be known.
pub fn expand_dst(s: &[u8], origin_of: &Path, paths: &AbiPaths) -> Option<Vec<u8>> {
    if !s.contains(&b'$') {
        return Some(s.to_vec());
    }
    let origin = origin_of.parent()?.as_os_str().as_bytes();
    let origin = if origin.is_empty() { &b"."[..] } else { origin };
    let mut out = Vec::with_capacity(s.len() + 32);
    let mut rest = s;
    while let Some(pos) = rest.iter().position(|&b| b == b'$') {
        out.extend_from_slice(rest.get(..pos)?);
        let after = rest.get(pos + 1..)?;
        let (token, len) = dst_token(after);
        match token {
            Some(b"ORIGIN") => out.extend_from_slice(origin),
            Some(b"LIB") => out.extend_from_slice(paths.lib.as_bytes()),
            Some(b"PLATFORM") => out.extend_from_slice(paths.platform.as_bytes()),
            _ => out.push(b'$'),
        }
        rest = after.get(if token.is_some() { len } else { 0 }..)?;
    }
    out.extend_from_slice(rest);
    Some(out)
}

/// A DST name after `$`: `NAME` (ended by a non-identifier byte) or `{NAME}`; returns the name
/// if it is one of the three glibc knows and the bytes it spans.
fn dst_token(s: &[u8]) -> (Option<&'static [u8]>, usize) {
    for name in [&b"ORIGIN"[..], b"PLATFORM", b"LIB"] {
        if s.starts_with(name) {
            let next = s.get(name.len()).copied();
            if !next.is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return (Some(name), name.len());
            }
        }
        if s.first() == Some(&b'{')
            && s.get(1..).is_some_and(|r| r.starts_with(name))
            && s.get(1 + name.len()) == Some(&b'}')
        {
            return (Some(name), name.len() + 2);
        }
    }
    (None, 0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn paths() -> AbiPaths {
        AbiPaths {
            lib: "lib/x86_64-linux-gnu".into(),
            platform: "x86_64".into(),
            default_dirs: vec![],
            interp: None,
            cache: CacheSource::None(String::new()),
        }
    }

    #[test]
    fn dst_forms() {
        let p = paths();
        let o = Path::new("/opt/rocm/lib/libx.so");
        let e = |s: &str| String::from_utf8(expand_dst(s.as_bytes(), o, &p).unwrap()).unwrap();
        assert_eq!(e("$ORIGIN/../llvm/lib"), "/opt/rocm/lib/../llvm/lib");
        assert_eq!(
            e("${ORIGIN}/x:$LIB"),
            "/opt/rocm/lib/x:lib/x86_64-linux-gnu"
        );
        assert_eq!(e("/a/$PLATFORM/b"), "/a/x86_64/b");
        assert_eq!(e("$ORIGINAL/$FOO"), "$ORIGINAL/$FOO");
        assert_eq!(e("$"), "$");
    }
}
