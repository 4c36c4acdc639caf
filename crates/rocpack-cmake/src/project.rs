//! A project's own `CMakeLists.txt`, evaluated as `cmake -S` would configure it, without a
//! compiler and without running anything: the interpreter of [`crate`] in *project mode*.
//!
//! ```no_run
//! use std::path::Path;
//! use rocpack_cmake::project::{ProjectOptions, evaluate_project};
//! let run = evaluate_project(&ProjectOptions {
//!     source_dir: Path::new("rocBLAS"),
//!     cache: &[("GPU_TARGETS".into(), "gfx1030".into())],
//!     prelude: "",
//!     record: &["find_package"],
//!     watch: &["GPU_TARGETS"],
//!     undefined: &[],
//! })?;
//! for c in &run.calls {
//!     println!("{}:{} {}", c.at.file, c.at.line, c.command);
//! }
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # What project mode adds
//! - The project's directories are known: `CMAKE_SOURCE_DIR`, `CMAKE_CURRENT_SOURCE_DIR`,
//!   `PROJECT_SOURCE_DIR` name the source tree; binary directories name a build directory that
//!   does not exist; `CMAKE_INSTALL_PREFIX` is `/usr/local`; `CMAKE_BUILD_TYPE` is undefined
//!   until `project()` or `enable_language()` enables a language, then empty unless given.
//! - A cache: entries given by the caller (`-D`), `set(… CACHE …)` (an existing entry stays unless
//!   `FORCE`; the normal binding in the current scope is removed, CMake's behaviour before policy
//!   CMP0126) and `option()` (a no-op when the variable is already defined, CMP0077).
//! - `add_subdirectory()` evaluates the directory's `CMakeLists.txt` in a child scope.
//! - `file(GLOB)` patterns are relative to the current source directory; `file(READ)` and
//!   `file(STRINGS)` read the file.
//! - `find_package(… REQUIRED)` is taken as found (configuring stops otherwise); without
//!   `REQUIRED`, `<Pkg>_FOUND` is unknown: it depends on the building machine.
//! - When a condition or loop cannot be evaluated, every variable its skipped body would assign
//!   (by a literal name) becomes unknown, so that nothing downstream is computed from a value the
//!   skipped block might have changed.
//! - Calls of the commands in [`ProjectOptions::record`] (built-in or defined by the project) are
//!   recorded with their expanded arguments, the conditions they sit under and the values of
//!   the watched variables at that point; `option()` and cache declarations are recorded; so are
//!   assignments of watched variables.
//!
//! Everything that is unknown stays unknown: compiler checks, `execute_process`, what
//! `find_package` sets, files generated at build time.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;

use super::eval::{Evaluator, Loc, Lookup, SourceFile, Val};
use super::paths::absolute;
use super::{CmakeOptions, Session};
use crate::Finding;

/// What to evaluate.
#[derive(Debug, Clone, Copy)]
pub struct ProjectOptions<'a> {
    /// The source tree: the directory holding the top-level `CMakeLists.txt`.
    pub source_dir: &'a Path,
    /// Cache entries, as `-DNAME=VALUE` gives them.
    pub cache: &'a [(String, String)],
    /// CMake code evaluated before the project, in its top-level scope: definitions standing in
    /// for modules the source tree does not hold. A definition in the project replaces it.
    pub prelude: &'a str,
    /// Commands whose calls are recorded (lower case).
    pub record: &'a [&'a str],
    /// Variables whose assignments are recorded and whose values are captured with each call.
    pub watch: &'a [&'a str],
    /// Variables known to be undefined although a `find_package()` result could set them.
    pub undefined: &'a [&'a str],
}

/// A value: its text, or why it is unknown.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Value {
    pub text: String,
    /// Why the value is unknown (`text` is then meaningless).
    pub unknown: Option<String>,
}

impl Value {
    fn of(v: &Val) -> Value {
        Value {
            text: v.text.clone(),
            unknown: v.unknown.as_ref().map(|r| r.to_string()),
        }
    }
}

/// Where something is: a path relative to the source tree (absolute when outside it) and a line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    pub file: String,
    pub line: u32,
}

/// An `if()`/`elseif()` branch being evaluated: its condition as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub text: String,
    /// Whether this is the `else()` of the condition (the branch taken when it is false).
    pub negated: bool,
    pub at: Place,
}

/// A recorded command call.
#[derive(Debug, Clone)]
pub struct Call {
    pub command: String,
    pub args: Vec<Value>,
    pub at: Place,
    /// The current source directory at the call (relative to the source tree; `.` at its
    /// top), which differs from `at`'s directory inside a function defined elsewhere.
    pub dir: String,
    /// Innermost last.
    pub conditions: Vec<Condition>,
    /// Watched variables at the call (`None`: undefined; empty when not evaluated).
    pub watched: BTreeMap<String, Option<Value>>,
    /// False for a call written in a block that was not evaluated (its condition depends on
    /// an unknown value): its arguments are as written, those with `${}` unknown.
    pub evaluated: bool,
}

/// How a cache entry was declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeclKind {
    Option,
    Cache,
}

/// An `option()` or `set(… CACHE …)`.
#[derive(Debug, Clone)]
pub struct Decl {
    pub kind: DeclKind,
    pub name: String,
    /// The default written in the project (before any `-D`).
    pub default: Value,
    /// `BOOL`, `STRING`, `PATH`, … (`BOOL` for options).
    pub cache_type: String,
    pub doc: String,
    pub force: bool,
    pub at: Place,
    pub conditions: Vec<Condition>,
}

/// An assignment of a watched variable.
#[derive(Debug, Clone)]
pub struct Assign {
    pub name: String,
    /// `None`: unset.
    pub value: Option<Value>,
    pub at: Place,
}

/// What evaluating the project gave.
#[derive(Debug, Clone, Default)]
pub struct ProjectRun {
    pub calls: Vec<Call>,
    pub decls: Vec<Decl>,
    pub assigns: Vec<Assign>,
    /// Watched variables at the end of the top-level `CMakeLists.txt` (normal binding first,
    /// then the cache).
    pub finals: BTreeMap<String, Option<Value>>,
    /// The final cache.
    pub cache: BTreeMap<String, Value>,
    /// Watched variables the project's code looks up (expands, tests or lists).
    pub reads: Vec<String>,
    /// What was not evaluated and why (`cmake-not-evaluated` findings), in order.
    pub notes: Vec<Finding>,
    /// Files evaluated.
    pub files_evaluated: usize,
}

/// Project-mode state of a session.
#[derive(Debug, Default)]
pub(crate) struct ProjectState {
    pub source_dir: String,
    pub cache: HashMap<String, Val>,
    pub record: HashSet<String>,
    pub watch: Vec<String>,
    pub calls: Vec<Call>,
    pub decls: Vec<Decl>,
    pub assigns: Vec<Assign>,
    /// Watched variables the project's code has looked up.
    pub reads: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

impl ProjectState {
    /// A path as facts cite it: relative to the source tree.
    pub fn place(&self, loc: &Loc) -> Place {
        let t = &loc.file.target;
        let rel = t
            .strip_prefix(self.source_dir.as_str())
            .and_then(|r| r.strip_prefix('/'))
            .unwrap_or(t);
        Place {
            file: rel.to_owned(),
            line: loc.line,
        }
    }
}

/// The name the prelude's definitions are cited under.
pub(crate) const PRELUDE: &str = "<prelude>";

/// The build directory project mode reports (never created, never read).
pub(crate) const BINARY_DIR: &str = "/nonexistent/rocpack-build";

/// Evaluates a project's top-level `CMakeLists.txt`.
///
/// # Errors
/// When the source directory or its `CMakeLists.txt` cannot be read, or the prelude is not
/// valid CMake.
pub fn evaluate_project(opts: &ProjectOptions) -> std::io::Result<ProjectRun> {
    let dir = absolute(opts.source_dir);
    let dir = std::fs::canonicalize(&dir)?;
    let top = dir.join("CMakeLists.txt");
    if !top.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{} has no CMakeLists.txt", dir.display()),
        ));
    }
    let source_dir = dir.to_string_lossy().into_owned();
    let prelude = super::lexer::parse(opts.prelude.as_bytes()).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("prelude line {}: {}", e.line, e.message),
        )
    })?;
    let mut s = Session::new(&CmakeOptions {
        prefix: &dir,
        root: None,
    });
    let mut state = ProjectState {
        source_dir: source_dir.clone(),
        record: opts.record.iter().map(|c| c.to_ascii_lowercase()).collect(),
        watch: opts.watch.iter().map(|w| (*w).to_owned()).collect(),
        ..ProjectState::default()
    };
    for (k, v) in opts.cache {
        state.cache.insert(k.clone(), Val::known(v.clone()));
    }
    s.project = Some(Box::new(state));
    let finals;
    {
        let mut ev = Evaluator::new(&mut s, "");
        let project_vars: &[(&str, &str)] = &[
            ("CMAKE_SOURCE_DIR", &source_dir),
            ("CMAKE_CURRENT_SOURCE_DIR", &source_dir),
            ("PROJECT_SOURCE_DIR", &source_dir),
            ("CMAKE_BINARY_DIR", BINARY_DIR),
            ("CMAKE_CURRENT_BINARY_DIR", BINARY_DIR),
            ("PROJECT_BINARY_DIR", BINARY_DIR),
            ("CMAKE_INSTALL_PREFIX", "/usr/local"),
        ];
        // Set in the cache, where a -D entry wins; the config-mode bindings Evaluator::new made
        // for them would hide it.
        for (k, v) in project_vars {
            ev.forget(k);
            ev.cache_default(k, Val::known(*v));
        }
        // Undefined until a language is enabled (builtins: `project`).
        ev.forget("CMAKE_BUILD_TYPE");
        for k in [
            "PROJECT_NAME",
            "CMAKE_PROJECT_NAME",
            "CMAKE_FIND_PACKAGE_NAME",
            "PACKAGE_FIND_VERSION",
        ] {
            ev.unset_var(k);
        }
        for k in [
            "CMAKE_C_COMPILER",
            "CMAKE_CXX_COMPILER",
            "CMAKE_HIP_COMPILER",
            "CMAKE_CXX_COMPILER_ID",
            "CMAKE_C_COMPILER_ID",
            "CMAKE_HIP_COMPILER_ID",
        ] {
            ev.forget(k);
            ev.cache_default(
                k,
                Val::unknown(format!("{k} is the compiler the packager chooses").into()),
            );
        }
        for k in opts.undefined {
            ev.unset_var(k);
        }
        let entry = Rc::new(SourceFile {
            host: top.clone(),
            target: top.to_string_lossy().into_owned(),
            nodes: Vec::new(),
        });
        let prelude_file = Rc::new(SourceFile {
            host: dir.join("<prelude>"),
            target: PRELUDE.into(),
            nodes: prelude,
        });
        let loc = Loc {
            file: entry,
            line: 0,
        };
        let nodes = prelude_file.nodes.clone();
        ev.exec_nodes(&nodes, &prelude_file);
        ev.eval_file(&top.to_string_lossy(), &loc);
        finals = ev.watched_values();
    }
    let state = s.project.take().unwrap_or_default();
    let report = s.finish();
    Ok(ProjectRun {
        calls: state.calls,
        decls: state.decls,
        assigns: state.assigns,
        finals,
        reads: state.reads.borrow().iter().cloned().collect(),
        cache: state
            .cache
            .iter()
            .map(|(k, v)| (k.clone(), Value::of(v)))
            .collect(),
        notes: report.findings,
        files_evaluated: report.files_evaluated,
    })
}

impl Evaluator<'_> {
    /// Whether this evaluation is a project's (not a package config's).
    pub(crate) fn project_mode(&self) -> bool {
        self.s.project.is_some()
    }

    /// Removes the current scope's binding of a variable (the cache shows through).
    fn forget(&mut self, name: &str) {
        if let Some(top) = self.scopes.last_mut() {
            top.remove(name);
        }
    }

    /// Sets a cache entry unless one exists.
    pub(crate) fn cache_default(&mut self, name: &str, v: Val) {
        if let Some(p) = self.s.project.as_mut() {
            p.cache.entry(name.to_owned()).or_insert(v);
        }
    }

    /// Records a call of a command the caller asked for.
    pub(crate) fn record_call(&mut self, name: &str, args: &[super::eval::Arg], loc: &Loc) {
        let Some(p) = self.s.project.as_ref() else {
            return;
        };
        if !p.record.contains(name) {
            return;
        }
        let watched = self.watched_values();
        let conditions = self.conditions.clone();
        let dir = self.relative_source_dir();
        let args = args
            .iter()
            .map(|a| Value {
                text: a.text.clone(),
                unknown: a.unknown.as_ref().map(|r| r.to_string()),
            })
            .collect();
        if let Some(p) = self.s.project.as_mut() {
            let at = p.place(loc);
            p.calls.push(Call {
                command: name.to_owned(),
                args,
                at,
                dir,
                conditions,
                watched,
                evaluated: true,
            });
        }
    }

    fn watched_values(&self) -> BTreeMap<String, Option<Value>> {
        let Some(p) = self.s.project.as_ref() else {
            return BTreeMap::new();
        };
        // Looking the values up here is not the project reading them.
        let reads = p.reads.borrow().clone();
        let out = p
            .watch
            .iter()
            .map(|w| {
                let v = match self.lookup(w) {
                    Lookup::Defined(v) => Some(Value::of(&v)),
                    Lookup::Undefined => None,
                    Lookup::Unknown(r) => Some(Value {
                        text: String::new(),
                        unknown: Some(r.to_string()),
                    }),
                };
                (w.clone(), v)
            })
            .collect();
        *p.reads.borrow_mut() = reads;
        out
    }

    /// The current source directory relative to the source tree.
    fn relative_source_dir(&self) -> String {
        let cur = self
            .get_text("CMAKE_CURRENT_SOURCE_DIR")
            .unwrap_or_default();
        let Some(p) = self.s.project.as_ref() else {
            return cur;
        };
        match cur.strip_prefix(p.source_dir.as_str()) {
            Some("") => ".".to_owned(),
            Some(rest) => rest.trim_start_matches('/').to_owned(),
            None => cur,
        }
    }

    /// Where something done by a prelude definition is cited: where the project calls it.
    pub(crate) fn cited<'l>(&'l self, loc: &'l Loc) -> &'l Loc {
        if loc.file.target != PRELUDE {
            return loc;
        }
        self.frames
            .iter()
            .rev()
            .map(|f| &f.call)
            .find(|l| l.file.target != PRELUDE)
            .unwrap_or(loc)
    }

    /// Records an assignment of a watched variable.
    pub(crate) fn record_assign(&mut self, name: &str, value: Option<&Val>, loc: &Loc) {
        let Some(p) = self.s.project.as_ref() else {
            return;
        };
        if !p.watch.iter().any(|w| w == name) {
            return;
        }
        let at = p.place(self.cited(loc));
        let Some(p) = self.s.project.as_mut() else {
            return;
        };
        p.assigns.push(Assign {
            name: name.to_owned(),
            value: value.map(Value::of),
            at,
        });
    }

    /// Records an `option()` or cache declaration.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record_decl(
        &mut self,
        kind: DeclKind,
        name: &str,
        default: &Val,
        cache_type: &str,
        doc: &str,
        force: bool,
        loc: &Loc,
    ) {
        let conditions = self.conditions.clone();
        let Some(p) = self.s.project.as_ref() else {
            return;
        };
        let at = p.place(self.cited(loc));
        let Some(p) = self.s.project.as_mut() else {
            return;
        };
        p.decls.push(Decl {
            kind,
            name: name.to_owned(),
            default: Value::of(default),
            cache_type: cache_type.to_owned(),
            doc: doc.to_owned(),
            force,
            at,
            conditions,
        });
    }

    /// `set(NAME value CACHE TYPE doc [FORCE])` in project mode.
    pub(crate) fn project_set_cache(
        &mut self,
        name: &str,
        value: Val,
        rest: &[super::eval::Arg],
        force: bool,
        loc: &Loc,
    ) {
        let cache_type = rest.get(1).map(|a| a.text.clone()).unwrap_or_default();
        let doc = rest.get(2).map(|a| a.text.clone()).unwrap_or_default();
        self.record_decl(DeclKind::Cache, name, &value, &cache_type, &doc, force, loc);
        let exists = self
            .s
            .project
            .as_ref()
            .is_some_and(|p| p.cache.contains_key(name));
        if force || !exists {
            self.record_assign(name, Some(&value), loc);
            if let Some(p) = self.s.project.as_mut() {
                p.cache.insert(name.to_owned(), value);
            }
        }
        // Before CMP0126, set(CACHE) removes the normal binding in the current scope.
        if let Some(top) = self.scopes.last_mut() {
            top.remove(name);
        }
    }

    /// `option(NAME doc [default])` in project mode.
    pub(crate) fn project_option(&mut self, args: &[super::eval::Arg], loc: &Loc) {
        let Some(n) = args.first() else { return };
        let default = args.get(2).map_or(Val::known("OFF"), |a| Val {
            text: a.text.clone(),
            unknown: a.unknown.clone(),
        });
        let doc = args.get(1).map(|a| a.text.clone()).unwrap_or_default();
        self.record_decl(
            DeclKind::Option,
            &n.text,
            &default,
            "BOOL",
            &doc,
            false,
            loc,
        );
        if matches!(self.lookup(&n.text), Lookup::Undefined) {
            self.record_assign(&n.text, Some(&default), loc);
            if let Some(p) = self.s.project.as_mut() {
                p.cache.insert(n.text.clone(), default);
            }
        }
    }

    /// `find_package(Pkg …)` in project mode.
    pub(crate) fn project_find_package(&mut self, args: &[super::eval::Arg]) {
        let Some(pkg) = args.first() else { return };
        if pkg.unknown.is_some() || pkg.text.is_empty() {
            return;
        }
        let required = args.iter().skip(1).any(|a| a.text == "REQUIRED");
        let found = format!("{}_FOUND", pkg.text);
        if required {
            self.set_var(&found, Val::known("1"));
        } else {
            self.set_var(
                &found,
                Val::unknown(
                    format!(
                        "whether find_package({}) finds it depends on the building machine",
                        pkg.text
                    )
                    .into(),
                ),
            );
        }
        if !self.found.contains(&pkg.text) {
            self.found.push(pkg.text.clone());
        }
    }

    /// `add_subdirectory(dir)`: the directory's `CMakeLists.txt` in a child scope.
    pub(crate) fn project_add_subdirectory(
        &mut self,
        args: &[super::eval::Arg],
        loc: &Loc,
    ) -> super::eval::Flow {
        use super::eval::Flow;
        use super::paths::{join, normalize};
        let Some(first) = args.first() else {
            return Flow::Next;
        };
        if let Some(r) = &first.unknown {
            self.note(
                loc,
                format!(
                    "add_subdirectory() at line {} was not followed: its path depends on an unknown value ({r})",
                    loc.line
                ),
                &[("reason", r.to_string().into())],
            );
            return Flow::Next;
        }
        let cur = self
            .get_text("CMAKE_CURRENT_SOURCE_DIR")
            .unwrap_or_default();
        let dir = if first.text.starts_with('/') {
            normalize(&first.text)
        } else {
            normalize(&join(&cur, &first.text))
        };
        let file = join(&dir, "CMakeLists.txt");
        if !self.s.fs.is_file(&file) {
            self.note(
                loc,
                format!(
                    "add_subdirectory({}) at line {}: {file} does not exist",
                    first.text, loc.line
                ),
                &[("path", file.clone().into())],
            );
            return Flow::Next;
        }
        let bin = join(BINARY_DIR, &first.text);
        self.scopes.push(HashMap::new());
        self.set_var("CMAKE_CURRENT_SOURCE_DIR", Val::known(dir));
        self.set_var("CMAKE_CURRENT_BINARY_DIR", Val::known(bin));
        let flow = self.eval_file(&file, loc);
        self.scopes.pop();
        match flow {
            Flow::Abort => Flow::Abort,
            _ => Flow::Next,
        }
    }

    /// `project(NAME [VERSION v] ...)`: the variables cmProjectCommand.cxx defines in the
    /// current scope (PROJECT_NAME, the project's directories, its version, whether it is the
    /// top level) and, in the top-level directory, CMAKE_PROJECT_NAME. Projects test them
    /// (rocWMMA declares its test and sample options only under
    /// `if(CMAKE_PROJECT_NAME STREQUAL "rocwmma")`).
    pub(crate) fn project_command(&mut self, args: &[super::eval::Arg]) {
        let Some(name) = args.first().map(|a| a.text.clone()) else {
            return;
        };
        let text = |ev: &Self, k: &str| ev.get_text(k).unwrap_or_default();
        let src = text(self, "CMAKE_CURRENT_SOURCE_DIR");
        let bin = text(self, "CMAKE_CURRENT_BINARY_DIR");
        let top = self.s.project.as_ref().is_some_and(|p| p.source_dir == src);
        let version = args
            .iter()
            .position(|a| a.text == "VERSION")
            .and_then(|i| args.get(i + 1))
            .map(|a| a.text.clone())
            .unwrap_or_default();
        let parts: Vec<&str> = if version.is_empty() {
            Vec::new()
        } else {
            version.split('.').collect()
        };
        let mut vars = vec![
            ("PROJECT_NAME".to_owned(), name.clone()),
            ("PROJECT_SOURCE_DIR".to_owned(), src.clone()),
            (format!("{name}_SOURCE_DIR"), src),
            ("PROJECT_BINARY_DIR".to_owned(), bin.clone()),
            (format!("{name}_BINARY_DIR"), bin),
            (
                "PROJECT_IS_TOP_LEVEL".to_owned(),
                if top { "ON" } else { "OFF" }.to_owned(),
            ),
            (
                format!("{name}_IS_TOP_LEVEL"),
                if top { "ON" } else { "OFF" }.to_owned(),
            ),
        ];
        for prefix in ["PROJECT".to_owned(), name.clone()] {
            vars.push((format!("{prefix}_VERSION"), version.clone()));
            for (i, part) in ["MAJOR", "MINOR", "PATCH", "TWEAK"].iter().enumerate() {
                let v = parts.get(i).copied().unwrap_or_default();
                vars.push((format!("{prefix}_VERSION_{part}"), v.to_owned()));
            }
        }
        if top {
            vars.push(("CMAKE_PROJECT_NAME".to_owned(), name));
        }
        for (k, v) in vars {
            self.set_var(&k, Val::known(v));
        }
    }

    /// Reads a file for `file(READ)`/`file(STRINGS)` in project mode.
    pub(crate) fn project_read(&self, path: &str) -> Result<String, String> {
        use super::paths::{join, normalize};
        let cur = self
            .get_text("CMAKE_CURRENT_SOURCE_DIR")
            .unwrap_or_default();
        let p = if path.starts_with('/') {
            normalize(path)
        } else {
            normalize(&join(&cur, path))
        };
        let host = self.s.fs.host(&p);
        match std::fs::metadata(&host) {
            Ok(m) if m.len() > super::MAX_FILE => {
                Err(format!("{p} is larger than {} MiB", super::MAX_FILE >> 20))
            }
            Ok(_) => rocpack_scan::read_regular(&host)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .map_err(|e| format!("cannot read {p}: {e}")),
            Err(e) => Err(format!("cannot read {p}: {e}")),
        }
    }

    /// The current source directory, for relative `file(GLOB)` patterns.
    pub(crate) fn project_source_dir(&self) -> Option<String> {
        if self.project_mode() {
            self.get_text("CMAKE_CURRENT_SOURCE_DIR")
        } else {
            None
        }
    }

    /// A block that was not evaluated: everything it would assign by a literal name becomes
    /// unknown, and the recorded commands written in it are recorded as not evaluated.
    pub(crate) fn taint_skipped(
        &mut self,
        bodies: &[&[super::lexer::Node]],
        reason: &str,
        loc: &Loc,
    ) {
        if !self.project_mode() {
            return;
        }
        let call_site = self.cited(loc).clone();
        let mut names = Vec::new();
        for body in bodies {
            assigned_names(body, &mut names);
        }
        names.sort();
        names.dedup();
        let why: super::eval::Reason =
            format!("set in a block that was not evaluated ({reason})").into();
        for n in names {
            self.set_var(&n, Val::unknown(why.clone()));
        }
        let mut conditions = self.conditions.clone();
        if let Some(p) = self.s.project.as_ref() {
            conditions.push(Condition {
                text: format!("(not evaluated: {reason})"),
                negated: false,
                at: p.place(&call_site),
            });
        }
        let dir = self.relative_source_dir();
        // Inside a prelude definition, what the block holds is cited at the project's call.
        let in_prelude = loc.file.target == PRELUDE;
        let place_of = |p: &ProjectState, line: u32| {
            if in_prelude {
                p.place(&call_site)
            } else {
                p.place(&Loc {
                    file: loc.file.clone(),
                    line,
                })
            }
        };
        let mut commands = Vec::new();
        for body in bodies {
            written_commands(body, &mut commands);
        }
        if let Some(p) = self.s.project.as_mut() {
            for c in &commands {
                // Declarations written in the block: their defaults as written.
                let name = c.args.first().map(|a| a.text.as_str()).unwrap_or_default();
                if name.is_empty() || name.contains('$') {
                    continue;
                }
                let written = |a: Option<&super::lexer::RawArg>, fallback: &str| {
                    let text = a.map_or(fallback.to_owned(), |a| a.text.clone());
                    Value {
                        unknown: text.contains("${").then(|| {
                            format!("{text} is not expanded: its block was not evaluated")
                        }),
                        text,
                    }
                };
                let cache_at = c
                    .args
                    .iter()
                    .position(|a| a.kind == super::lexer::ArgKind::Unquoted && a.text == "CACHE");
                let decl = match (c.name.as_str(), cache_at) {
                    ("option", _) => Some((
                        DeclKind::Option,
                        written(c.args.get(2), "OFF"),
                        "BOOL".to_owned(),
                        c.args.get(1),
                    )),
                    ("set", Some(i)) if i >= 1 => Some((
                        DeclKind::Cache,
                        written(c.args.get(1).filter(|_| i > 1), ""),
                        c.args
                            .get(i + 1)
                            .map(|a| a.text.clone())
                            .unwrap_or_default(),
                        c.args.get(i + 2),
                    )),
                    _ => None,
                };
                if let Some((kind, default, cache_type, doc)) = decl {
                    let at = place_of(p, c.line);
                    p.decls.push(Decl {
                        kind,
                        name: name.to_owned(),
                        default,
                        cache_type,
                        doc: doc.map(|d| d.text.clone()).unwrap_or_default(),
                        force: c.args.iter().any(|a| a.text == "FORCE"),
                        at,
                        conditions: conditions.clone(),
                    });
                }
            }
            for c in commands {
                if !p.record.contains(&c.name) {
                    continue;
                }
                let at = place_of(p, c.line);
                let args = c
                    .args
                    .iter()
                    .map(|a| Value {
                        text: a.text.clone(),
                        unknown: (a.kind != super::lexer::ArgKind::Bracket
                            && a.text.contains("${"))
                        .then(|| {
                            format!("{} is not expanded: its block was not evaluated", a.text)
                        }),
                    })
                    .collect();
                p.calls.push(Call {
                    command: c.name.clone(),
                    args,
                    at,
                    dir: dir.clone(),
                    conditions: conditions.clone(),
                    watched: BTreeMap::new(),
                    evaluated: false,
                });
            }
        }
    }
}

/// The commands written in `nodes` (not inside definitions), in order.
fn written_commands<'n>(nodes: &'n [super::lexer::Node], out: &mut Vec<&'n super::lexer::Command>) {
    use super::lexer::Node;
    for node in nodes {
        match node {
            Node::Command(c) => out.push(c),
            Node::If {
                branches,
                else_body,
            } => {
                for (_, _, body) in branches {
                    written_commands(body, out);
                }
                if let Some(b) = else_body {
                    written_commands(b, out);
                }
            }
            Node::Foreach { body, .. } | Node::While { body, .. } | Node::Block { body, .. } => {
                written_commands(body, out);
            }
            Node::Define { .. } => {}
        }
    }
}

/// Names assigned by literal name anywhere in `nodes` (not inside definitions).
fn assigned_names(nodes: &[super::lexer::Node], out: &mut Vec<String>) {
    let mut commands = Vec::new();
    written_commands(nodes, &mut commands);
    for c in commands {
        let first = c.args.first().map(|a| a.text.as_str());
        let pos = match (c.name.as_str(), first) {
            ("set" | "unset" | "option" | "get_filename_component", _) => Some(0),
            ("math", _) => Some(1),
            (
                "list" | "string",
                Some(
                    "APPEND" | "PREPEND" | "REMOVE_ITEM" | "REMOVE_AT" | "REMOVE_DUPLICATES"
                    | "FILTER" | "INSERT" | "SORT" | "REVERSE" | "TRANSFORM" | "POP_BACK"
                    | "POP_FRONT",
                ),
            ) => Some(1),
            // list(LENGTH|GET|FIND|JOIN|SUBLIST … <out>): the output comes last.
            ("list", Some("LENGTH" | "GET" | "FIND" | "JOIN" | "SUBLIST")) => {
                Some(c.args.len().saturating_sub(1))
            }
            // string(REGEX REPLACE … <out> <input>) and the like put the output elsewhere;
            // only the forms above are tainted.
            _ => None,
        };
        if let Some(a) = pos.and_then(|p| c.args.get(p)) {
            push_literal(&a.text, out);
        }
    }
}

fn push_literal(name: &str, out: &mut Vec<String>) {
    if !name.is_empty() && !name.contains('$') && !name.contains('{') {
        out.push(name.to_owned());
    }
}
