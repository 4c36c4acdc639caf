//! The interpreter: variables and scopes, `${}` expansion, control flow, `include()`, macros
//! and functions. Commands themselves are in `builtins`, `if()` conditions in `cond`, and what
//! is checked about paths in `checks`.
//!
//! Values that only the configuring machine could know (the output of `execute_process`, what
//! `find_library` finds, the caller's source directory) are *unknown*: they carry the reason
//! with them through every variable they flow into, and a condition, loop or `include()` that
//! depends on one is skipped and reported as not evaluated instead of being guessed.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::rc::Rc;

use serde_json::Value;

use super::Session;
use super::lexer::{ArgKind, Node, RawArg};
use super::paths::{dirname, join, normalize};
use crate::{Code, Finding};

/// Why a value is unknown, shown in findings.
pub(crate) type Reason = Rc<str>;

/// Commands evaluated for one entry file (loop iterations count too).
pub(crate) const MAX_COMMANDS: u64 = 1_000_000;
/// Bytes produced by expansion and substitution for one entry file, all together.
pub(crate) const MAX_BYTES: u64 = 256 << 20;
/// Largest value of one variable or argument.
pub(crate) const MAX_VALUE: usize = 16 << 20;
/// Nesting of blocks, calls and includes while evaluating.
pub(crate) const MAX_DEPTH: u32 = 100;
/// Nested `include()`s.
pub(crate) const MAX_INCLUDE_DEPTH: usize = 32;

/// A variable's value.
#[derive(Debug, Clone)]
pub(crate) struct Val {
    pub text: String,
    pub unknown: Option<Reason>,
}

impl Val {
    pub fn known(text: impl Into<String>) -> Val {
        Val {
            text: text.into(),
            unknown: None,
        }
    }

    pub fn unknown(reason: Reason) -> Val {
        Val {
            text: String::new(),
            unknown: Some(reason),
        }
    }
}

/// An expanded command argument.
#[derive(Debug, Clone)]
pub(crate) struct Arg {
    pub text: String,
    /// Quoted or bracket: never a keyword or a variable name in `if()`.
    pub quoted: bool,
    pub unknown: Option<Reason>,
}

/// The result of looking a variable up.
pub(crate) enum Lookup {
    Defined(Val),
    Undefined,
    Unknown(Reason),
}

/// A parsed file, with its two names.
#[derive(Debug)]
pub(crate) struct SourceFile {
    pub host: PathBuf,
    pub target: String,
    pub nodes: Vec<Node>,
}

/// Where a command is: the file it is written in and its line.
#[derive(Debug, Clone)]
pub(crate) struct Loc {
    pub file: Rc<SourceFile>,
    pub line: u32,
}

/// A `macro()` or `function()` definition.
#[derive(Debug)]
pub(crate) struct Def {
    pub name: String,
    pub is_macro: bool,
    pub params: Vec<String>,
    pub body: Rc<Vec<Node>>,
    pub file: Rc<SourceFile>,
}

/// A target created by `add_library`/`add_executable`.
#[derive(Debug, Default)]
pub(crate) struct Target {
    /// `TYPE` as CMake reports it (`SHARED_LIBRARY`, …).
    pub kind: String,
    pub imported: bool,
    pub alias_of: Option<String>,
    pub props: HashMap<String, Val>,
}

/// One active macro or function call.
#[derive(Debug)]
pub(crate) struct Frame {
    /// A failing `message(FATAL_ERROR)` inside this call is about a path already reported.
    pub suppress_fatal: bool,
    /// Where the call is.
    pub call: Loc,
}

/// How evaluation continues after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    Next,
    Break,
    Continue,
    Return,
    /// `message(FATAL_ERROR)` or a limit: the entry file stops.
    Abort,
}

/// The evaluation of one entry file (a config and everything it includes).
pub(crate) struct Evaluator<'s> {
    pub s: &'s mut Session,
    pub scopes: Vec<HashMap<String, Option<Val>>>,
    pub defs: HashMap<String, Rc<Def>>,
    pub targets: HashMap<String, Target>,
    /// Packages `find_package`/`find_dependency` were asked for (not followed).
    pub found: Vec<String>,
    pub env: HashMap<String, String>,
    pub include_stack: Vec<PathBuf>,
    pub guarded: HashSet<PathBuf>,
    pub frames: Vec<Frame>,
    pub commands_left: u64,
    pub bytes_left: u64,
    pub depth: u32,
    pub hidden: u64,
    pub line: u32,
    /// The component a `foreach` over `<Pkg>_FIND_COMPONENTS` is evaluating.
    pub component: Option<String>,
    /// Targets the files loaded so far create by name (`add_library(Foo::foo …)`): this
    /// package's own, absent until created, whatever dependencies were asked for.
    pub own_targets: HashSet<String>,
    /// Project mode: the `if()` branches being evaluated, innermost last.
    pub conditions: Vec<super::project::Condition>,
}

/// Variables CMake defines that this checker does not know, because they belong to the
/// project calling `find_package`.
const CALLER_VARIABLES: &[&str] = &[
    "CMAKE_CURRENT_SOURCE_DIR",
    "CMAKE_CURRENT_BINARY_DIR",
    "CMAKE_SOURCE_DIR",
    "CMAKE_BINARY_DIR",
    "PROJECT_SOURCE_DIR",
    "PROJECT_BINARY_DIR",
    "PROJECT_NAME",
    "CMAKE_PROJECT_NAME",
    "CMAKE_INSTALL_PREFIX",
    "CMAKE_BUILD_TYPE",
    "CMAKE_SYSTEM_PROCESSOR",
    "CMAKE_HOST_SYSTEM_PROCESSOR",
    "CMAKE_LIBRARY_ARCHITECTURE",
    "CMAKE_CXX_COMPILER_VERSION",
    "CMAKE_C_COMPILER_VERSION",
];

impl<'s> Evaluator<'s> {
    pub fn new(s: &'s mut Session, package: &str) -> Self {
        let mut ev = Evaluator {
            s,
            scopes: vec![HashMap::new()],
            defs: HashMap::new(),
            targets: HashMap::new(),
            found: Vec::new(),
            env: HashMap::new(),
            include_stack: Vec::new(),
            guarded: HashSet::new(),
            frames: Vec::new(),
            commands_left: MAX_COMMANDS,
            bytes_left: MAX_BYTES,
            depth: 0,
            hidden: 0,
            line: 0,
            component: None,
            own_targets: HashSet::new(),
            conditions: Vec::new(),
        };
        let known: &[(&str, &str)] = &[
            ("CMAKE_VERSION", "3.31.0"),
            ("CMAKE_MAJOR_VERSION", "3"),
            ("CMAKE_MINOR_VERSION", "31"),
            ("CMAKE_PATCH_VERSION", "0"),
            ("CMAKE_TWEAK_VERSION", "0"),
            ("CMAKE_ROOT", "/usr/share/cmake-3.31"),
            ("CMAKE_COMMAND", "/usr/bin/cmake"),
            ("CMAKE_SIZEOF_VOID_P", "8"),
            ("CMAKE_SYSTEM_NAME", "Linux"),
            ("CMAKE_HOST_SYSTEM_NAME", "Linux"),
            ("CMAKE_IMPORT_LIBRARY_SUFFIX", ""),
            ("CMAKE_IMPORT_LIBRARY_PREFIX", ""),
            ("CMAKE_SHARED_LIBRARY_PREFIX", "lib"),
            ("CMAKE_SHARED_LIBRARY_SUFFIX", ".so"),
            ("CMAKE_STATIC_LIBRARY_PREFIX", "lib"),
            ("CMAKE_STATIC_LIBRARY_SUFFIX", ".a"),
            ("CMAKE_EXECUTABLE_SUFFIX", ""),
            ("UNIX", "1"),
            ("LINUX", "1"),
            ("CMAKE_HOST_UNIX", "1"),
            ("CMAKE_HOST_LINUX", "1"),
            ("CMAKE_C_COMPILER", ""),
            ("CMAKE_CXX_COMPILER", ""),
            ("CMAKE_HIP_COMPILER", ""),
            ("CMAKE_CUDA_COMPILER", ""),
            ("CMAKE_Fortran_COMPILER", ""),
            ("PACKAGE_FIND_VERSION", ""),
        ];
        for (k, v) in known {
            ev.set_var(k, Val::known(*v));
        }
        for k in CALLER_VARIABLES {
            ev.set_var(
                k,
                Val::unknown(format!("{k} belongs to the project calling find_package()").into()),
            );
        }
        ev.set_var("CMAKE_FIND_PACKAGE_NAME", Val::known(package));
        ev
    }

    // ---- variables -------------------------------------------------------------------------

    pub fn lookup(&self, name: &str) -> Lookup {
        if let Some(p) = self.s.project.as_ref() {
            if p.watch.iter().any(|w| w == name) {
                p.reads.borrow_mut().insert(name.to_owned());
            }
        }
        if name == "CMAKE_CURRENT_LIST_LINE" {
            return Lookup::Defined(Val::known(self.line.to_string()));
        }
        for scope in self.scopes.iter().rev() {
            if let Some(entry) = scope.get(name) {
                return match entry {
                    Some(v) => Lookup::Defined(v.clone()),
                    None => Lookup::Undefined,
                };
            }
        }
        if let Some(v) = self.s.project.as_ref().and_then(|p| p.cache.get(name)) {
            return Lookup::Defined(v.clone());
        }
        // After find_package(Foo), Foo's own variables (Foo_INCLUDE_DIRS, FOO_LIBRARIES, …)
        // are whatever Foo's config set; this checker does not follow it.
        for pkg in &self.found {
            let upper = pkg.to_ascii_uppercase();
            let under = name
                .strip_prefix(pkg.as_str())
                .or_else(|| name.strip_prefix(upper.as_str()));
            if under.is_some_and(|rest| rest.starts_with('_')) {
                return Lookup::Unknown(
                    format!("{name} would be set by find_package({pkg}), which is not followed")
                        .into(),
                );
            }
        }
        Lookup::Undefined
    }

    /// The value as text; undefined and unknown are empty.
    pub fn get_text(&self, name: &str) -> Option<String> {
        match self.lookup(name) {
            Lookup::Defined(v) => Some(v.text),
            _ => None,
        }
    }

    pub fn set_var(&mut self, name: &str, val: Val) {
        if let Some(top) = self.scopes.last_mut() {
            top.insert(name.to_owned(), Some(val));
        }
    }

    pub fn unset_var(&mut self, name: &str) {
        if let Some(top) = self.scopes.last_mut() {
            top.insert(name.to_owned(), None);
        }
    }

    /// `set(… PARENT_SCOPE)`: the parent sees the new value, this scope keeps its own.
    pub fn set_parent(&mut self, name: &str, val: Option<Val>) {
        let n = self.scopes.len();
        if n < 2 {
            return;
        }
        let current = match self.lookup(name) {
            Lookup::Defined(v) => Some(v),
            _ => None,
        };
        if let Some(top) = self.scopes.last_mut() {
            top.entry(name.to_owned()).or_insert(current);
        }
        if let Some(parent) = self.scopes.get_mut(n - 2) {
            parent.insert(name.to_owned(), val);
        }
    }

    // ---- budget and findings ---------------------------------------------------------------

    /// Spends one command; false (after a note) when the budget is gone.
    pub fn tick(&mut self, loc: &Loc) -> bool {
        if self.commands_left == 0 {
            return false;
        }
        self.commands_left -= 1;
        if self.commands_left == 0 {
            self.note(
                loc,
                format!("evaluation stopped after {MAX_COMMANDS} commands"),
                &[],
            );
            return false;
        }
        true
    }

    pub fn spend_bytes(&mut self, n: usize, loc: &Loc) -> bool {
        let n = n as u64;
        if self.bytes_left < n {
            if self.bytes_left != 0 {
                self.bytes_left = 0;
                self.commands_left = 0;
                self.note(
                    loc,
                    format!(
                        "evaluation stopped after producing {} MiB of text",
                        MAX_BYTES >> 20
                    ),
                    &[],
                );
            }
            return false;
        }
        self.bytes_left -= n;
        true
    }

    /// A `cmake-not-evaluated` (info) finding at `loc`.
    pub fn note(&mut self, loc: &Loc, message: String, details: &[(&str, Value)]) {
        let mut f = Finding::new(Code::CmakeNotEvaluated, loc.file.host.clone(), message)
            .detail("line", loc.line);
        for (k, v) in details {
            f = f.detail(k, v.clone());
        }
        self.s.findings.push(f);
    }

    /// Records an unknown command once per file.
    pub fn note_unknown_command(&mut self, name: &str, loc: &Loc) {
        if self
            .s
            .noted_commands
            .insert((loc.file.host.clone(), name.to_owned()))
        {
            self.note(
                loc,
                format!("unknown command {name}() at line {} was skipped; anything it sets is not known", loc.line),
                &[("command", name.into())],
            );
        }
    }

    // ---- expansion -------------------------------------------------------------------------

    /// Expands escapes and `${}`/`$ENV{}`/`$CACHE{}` references in a raw argument.
    pub fn expand(&mut self, raw: &str, quoted: bool, loc: &Loc) -> Result<Val, String> {
        #[derive(Clone, Copy, PartialEq)]
        enum Ref {
            Var,
            Env,
        }
        let mut out = String::new();
        let mut open: Vec<(Ref, String)> = Vec::new();
        let mut unknown: Option<Reason> = None;
        let mut chars = raw.char_indices().peekable();
        let push = |open: &mut Vec<(Ref, String)>, out: &mut String, s: &str| match open.last_mut()
        {
            Some((_, buf)) => buf.push_str(s),
            None => out.push_str(s),
        };
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    None => push(&mut open, &mut out, "\\"),
                    Some((_, 't')) => push(&mut open, &mut out, "\t"),
                    Some((_, 'n')) => push(&mut open, &mut out, "\n"),
                    Some((_, 'r')) => push(&mut open, &mut out, "\r"),
                    Some((_, ';')) => push(&mut open, &mut out, "\\;"),
                    Some((_, '\n')) if quoted => {}
                    Some((_, e)) if e.is_ascii_alphanumeric() => {
                        return Err(format!("invalid escape sequence \\{e}"));
                    }
                    Some((_, e)) => push(&mut open, &mut out, e.encode_utf8(&mut [0; 4])),
                },
                '$' => {
                    let rest = raw.get(i + 1..).unwrap_or_default();
                    let (kind, skip) = if rest.starts_with('{') {
                        (Some(Ref::Var), 1)
                    } else if rest.starts_with("ENV{") {
                        (Some(Ref::Env), 4)
                    } else if rest.starts_with("CACHE{") {
                        (Some(Ref::Var), 6)
                    } else {
                        (None, 0)
                    };
                    match kind {
                        Some(k) => {
                            for _ in 0..skip {
                                chars.next();
                            }
                            open.push((k, String::new()));
                        }
                        None => push(&mut open, &mut out, "$"),
                    }
                }
                '}' if !open.is_empty() => {
                    let Some((kind, name)) = open.pop() else {
                        break;
                    };
                    let value = match kind {
                        Ref::Env => self.env.get(&name).cloned().unwrap_or_default(),
                        Ref::Var => match self.lookup(&name) {
                            Lookup::Defined(v) => {
                                if unknown.is_none() {
                                    unknown = v.unknown;
                                }
                                v.text
                            }
                            Lookup::Undefined => String::new(),
                            Lookup::Unknown(r) => {
                                if unknown.is_none() {
                                    unknown = Some(r);
                                }
                                String::new()
                            }
                        },
                    };
                    push(&mut open, &mut out, &value);
                }
                c if !open.is_empty() => {
                    if !(c.is_ascii_alphanumeric() || "/_.+-".contains(c)) {
                        return Err(format!("invalid character {c:?} in a variable name"));
                    }
                    push(&mut open, &mut out, c.encode_utf8(&mut [0; 4]));
                }
                c => out.push(c),
            }
            let len = out.len() + open.iter().map(|(_, b)| b.len()).sum::<usize>();
            if len > MAX_VALUE {
                // Charged, so that a loop retrying the same expansion runs out of budget.
                self.spend_bytes(len, loc);
                return Err(format!("a value grows beyond {} MiB", MAX_VALUE >> 20));
            }
        }
        if !open.is_empty() {
            return Err("unterminated variable reference".into());
        }
        if !self.spend_bytes(out.len(), loc) {
            return Err("text budget exhausted".into());
        }
        Ok(Val { text: out, unknown })
    }

    /// Expands a command's arguments; unquoted ones are split into list elements.
    pub fn expand_args(&mut self, raw: &[RawArg], loc: &Loc) -> Result<Vec<Arg>, String> {
        let mut out = Vec::with_capacity(raw.len());
        for a in raw {
            match a.kind {
                ArgKind::Bracket => out.push(Arg {
                    text: a.text.clone(),
                    quoted: true,
                    unknown: None,
                }),
                ArgKind::Quoted => {
                    let v = self.expand(&a.text, true, loc)?;
                    out.push(Arg {
                        text: v.text,
                        quoted: true,
                        unknown: v.unknown,
                    });
                }
                ArgKind::Unquoted => {
                    let v = self.expand(&a.text, false, loc)?;
                    let items = split_list(&v.text, false);
                    if items.is_empty() && v.unknown.is_some() {
                        // An unknown list may have had elements: keep the taint.
                        out.push(Arg {
                            text: String::new(),
                            quoted: false,
                            unknown: v.unknown.clone(),
                        });
                    }
                    for item in items {
                        out.push(Arg {
                            text: item,
                            quoted: false,
                            unknown: v.unknown.clone(),
                        });
                    }
                }
            }
        }
        Ok(out)
    }

    // ---- control flow ----------------------------------------------------------------------

    fn enter(&mut self, loc: &Loc) -> bool {
        if self.depth >= MAX_DEPTH {
            self.note(
                loc,
                format!(
                    "evaluation stopped: blocks, calls and includes nested deeper than {MAX_DEPTH}"
                ),
                &[],
            );
            self.commands_left = 0;
            return false;
        }
        self.depth += 1;
        true
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    pub fn exec_nodes(&mut self, nodes: &[Node], file: &Rc<SourceFile>) -> Flow {
        for node in nodes {
            let flow = self.exec_node(node, file);
            if flow != Flow::Next {
                return flow;
            }
        }
        Flow::Next
    }

    pub fn nested(&mut self, nodes: &[Node], loc: &Loc) -> Flow {
        if !self.enter(loc) {
            return Flow::Abort;
        }
        let flow = self.exec_nodes(nodes, &loc.file);
        self.leave();
        flow
    }

    /// A branch body, with its condition on the project-mode condition stack. `negated`: the
    /// `else()` of a single `if()`; an `else()` after `elseif()`s is recorded as unconditional.
    fn nested_under(&mut self, cond: &[RawArg], negated: bool, body: &[Node], loc: &Loc) -> Flow {
        if !self.project_mode() || (cond.is_empty() && !negated) {
            return self.nested(body, loc);
        }
        let text = cond
            .iter()
            .map(RawArg::display)
            .collect::<Vec<_>>()
            .join(" ");
        let at = self.s.project.as_ref().map(|p| p.place(loc));
        let pushed = match at {
            // A prelude definition's own branches are not the project's conditions.
            Some(_) if loc.file.target == super::project::PRELUDE => false,
            Some(at) if negated || !cond.is_empty() => {
                self.conditions
                    .push(super::project::Condition { text, negated, at });
                true
            }
            _ => false,
        };
        let flow = self.nested(body, loc);
        if pushed {
            self.conditions.pop();
        }
        flow
    }

    fn exec_node(&mut self, node: &Node, file: &Rc<SourceFile>) -> Flow {
        let line = match node {
            Node::Command(c) => c.line,
            Node::If { branches, .. } => branches.first().map_or(0, |b| b.1),
            Node::Foreach { line, .. }
            | Node::While { line, .. }
            | Node::Define { line, .. }
            | Node::Block { line, .. } => *line,
        };
        let loc = Loc {
            file: file.clone(),
            line,
        };
        if !self.tick(&loc) {
            return Flow::Abort;
        }
        self.line = line;
        match node {
            Node::Command(cmd) => self.exec_command(&cmd.name, &cmd.args, &loc),
            Node::If {
                branches,
                else_body,
            } => {
                for (cond, line, body) in branches {
                    let loc = Loc {
                        file: file.clone(),
                        line: *line,
                    };
                    self.line = *line;
                    let verdict = match self.expand_args(cond, &loc) {
                        Ok(args) => self.condition(&args),
                        Err(e) => Err(e),
                    };
                    match verdict {
                        Ok(true) => {
                            return self.nested_under(cond, false, body, &loc);
                        }
                        Ok(false) => {}
                        Err(reason) => {
                            let text = cond
                                .iter()
                                .map(RawArg::display)
                                .collect::<Vec<_>>()
                                .join(" ");
                            self.note(
                                &loc,
                                format!("if({text}) at line {line} was not evaluated ({reason}); its block was skipped"),
                                &[("condition", text.clone().into()), ("reason", reason.clone().into())],
                            );
                            let mut bodies: Vec<&[Node]> =
                                branches.iter().map(|b| b.2.as_slice()).collect();
                            if let Some(e) = else_body {
                                bodies.push(e);
                            }
                            self.taint_skipped(&bodies, &reason, &loc);
                            return Flow::Next;
                        }
                    }
                }
                match else_body {
                    Some(body) => {
                        let first = branches.first().map(|b| b.0.as_slice()).unwrap_or_default();
                        self.nested_under(first, branches.len() == 1, body, &loc)
                    }
                    None => Flow::Next,
                }
            }
            Node::Foreach { args, body, .. } => self.exec_foreach(args, body, &loc),
            Node::While { args, body, .. } => self.exec_while(args, body, &loc),
            Node::Define {
                is_macro,
                args,
                body,
                ..
            } => {
                match self.expand_args(args, &loc) {
                    Ok(a)
                        if a.first()
                            .is_some_and(|n| n.unknown.is_none() && !n.text.is_empty()) =>
                    {
                        let mut it = a.into_iter();
                        let name = it
                            .next()
                            .map(|n| n.text.to_ascii_lowercase())
                            .unwrap_or_default();
                        let params = it.map(|p| p.text).collect();
                        let def = Def {
                            name: name.clone(),
                            is_macro: *is_macro,
                            params,
                            body: body.clone(),
                            file: file.clone(),
                        };
                        self.defs.insert(name, Rc::new(def));
                    }
                    Ok(_) => self.note(
                        &loc,
                        "macro/function definition without a known name was skipped".into(),
                        &[],
                    ),
                    Err(e) => self.note(
                        &loc,
                        format!("definition at line {line} was skipped: {e}"),
                        &[],
                    ),
                }
                Flow::Next
            }
            Node::Block { args, body, .. } => self.exec_block(args, body, &loc),
        }
    }

    fn exec_command(&mut self, name: &str, raw: &[RawArg], loc: &Loc) -> Flow {
        let args = match self.expand_args(raw, loc) {
            Ok(a) => a,
            Err(e) => {
                self.note(
                    loc,
                    format!("{name}() at line {} was skipped: {e}", loc.line),
                    &[("command", name.into())],
                );
                return Flow::Next;
            }
        };
        self.record_call(name, &args, loc);
        // A user definition replaces a built-in command of the same name, as in CMake.
        if let Some(def) = self.defs.get(name).cloned() {
            return self.call(&def, args, loc);
        }
        self.builtin(name, args, loc)
    }

    fn exec_foreach(&mut self, raw: &[RawArg], body: &[Node], loc: &Loc) -> Flow {
        let args = match self.expand_args(raw, loc) {
            Ok(a) => a,
            Err(e) => {
                self.note(
                    loc,
                    format!("foreach() at line {} was skipped: {e}", loc.line),
                    &[],
                );
                return Flow::Next;
            }
        };
        let Some(var) = args
            .first()
            .filter(|v| v.unknown.is_none())
            .map(|v| v.text.clone())
        else {
            self.note(
                loc,
                format!(
                    "foreach() at line {} without a known loop variable was skipped",
                    loc.line
                ),
                &[],
            );
            return Flow::Next;
        };
        let rest = args.get(1..).unwrap_or_default();
        if rest.first().is_some_and(|a| !a.quoted && a.text == "RANGE") {
            return self.foreach_range(&var, rest.get(1..).unwrap_or_default(), body, loc);
        }
        let mut items: Vec<Arg> = Vec::new();
        if rest.first().is_some_and(|a| !a.quoted && a.text == "IN") {
            let mut mode = "";
            for a in rest.get(1..).unwrap_or_default() {
                if !a.quoted && matches!(a.text.as_str(), "LISTS" | "ITEMS" | "ZIP_LISTS") {
                    mode = if a.text == "LISTS" {
                        "LISTS"
                    } else if a.text == "ITEMS" {
                        "ITEMS"
                    } else {
                        "ZIP"
                    };
                    continue;
                }
                match mode {
                    "ITEMS" => items.push(a.clone()),
                    "LISTS" => match self.lookup(&a.text) {
                        Lookup::Defined(Val {
                            text,
                            unknown: None,
                        }) => items.extend(split_list(&text, false).into_iter().map(|t| Arg {
                            text: t,
                            quoted: false,
                            unknown: None,
                        })),
                        Lookup::Undefined => {}
                        Lookup::Defined(Val {
                            unknown: Some(r), ..
                        })
                        | Lookup::Unknown(r) => items.push(Arg {
                            text: String::new(),
                            quoted: false,
                            unknown: Some(r),
                        }),
                    },
                    _ => {
                        self.note(
                            loc,
                            format!(
                                "foreach(… IN {}) at line {} is not evaluated",
                                a.text, loc.line
                            ),
                            &[],
                        );
                        return Flow::Next;
                    }
                }
            }
        } else {
            items = rest.to_vec();
        }
        if let Some(r) = items.iter().find_map(|a| a.unknown.clone()) {
            self.note(
                loc,
                format!(
                    "foreach() at line {} was not evaluated ({r}); its body was skipped",
                    loc.line
                ),
                &[("reason", r.to_string().into())],
            );
            self.taint_skipped(&[body], &r, loc);
            return Flow::Next;
        }
        let mut components = None;
        if items.is_empty() {
            components = self.component_domain(&var, raw, body, loc);
        }
        let saved = self.lookup(&var);
        let outer_component = self.component.clone();
        let list: Vec<String> = match &components {
            Some(c) => c.clone(),
            None => items.into_iter().map(|a| a.text).collect(),
        };
        let mut flow = Flow::Next;
        for item in list {
            if !self.tick(loc) {
                flow = Flow::Abort;
                break;
            }
            if components.is_some() {
                self.component = Some(item.clone());
            }
            self.set_var(&var, Val::known(item));
            match self.nested(body, loc) {
                Flow::Break => break,
                Flow::Next | Flow::Continue => {}
                other => {
                    flow = other;
                    break;
                }
            }
        }
        self.component = outer_component;
        self.restore(&var, saved);
        flow
    }

    fn restore(&mut self, var: &str, saved: Lookup) {
        match saved {
            Lookup::Defined(v) => self.set_var(var, v),
            _ => self.unset_var(var),
        }
    }

    fn foreach_range(&mut self, var: &str, args: &[Arg], body: &[Node], loc: &Loc) -> Flow {
        if let Some(r) = args.iter().find_map(|a| a.unknown.clone()) {
            self.note(
                loc,
                format!(
                    "foreach(RANGE) at line {} was not evaluated ({r})",
                    loc.line
                ),
                &[],
            );
            return Flow::Next;
        }
        let nums: Option<Vec<i64>> = args
            .iter()
            .map(|a| a.text.trim().parse::<i64>().ok())
            .collect();
        let (start, stop, step) = match nums.as_deref() {
            Some([stop]) => (0, *stop, 1),
            Some([start, stop]) => (*start, *stop, 1),
            Some([start, stop, step]) => (*start, *stop, *step),
            _ => {
                self.note(
                    loc,
                    format!("foreach(RANGE) at line {} has invalid arguments", loc.line),
                    &[],
                );
                return Flow::Next;
            }
        };
        if step <= 0 || stop < start {
            return Flow::Next;
        }
        let saved = self.lookup(var);
        let mut i = start;
        let mut flow = Flow::Next;
        while i <= stop {
            if !self.tick(loc) {
                flow = Flow::Abort;
                break;
            }
            self.set_var(var, Val::known(i.to_string()));
            match self.nested(body, loc) {
                Flow::Break => break,
                Flow::Next | Flow::Continue => {}
                other => {
                    flow = other;
                    break;
                }
            }
            match i.checked_add(step) {
                Some(n) => i = n,
                None => break,
            }
        }
        self.restore(var, saved);
        flow
    }

    /// A loop over `<Pkg>_FIND_COMPONENTS`, which the caller of `find_package` sets, runs here
    /// over every component the config itself declares: the list its body checks the loop
    /// variable against with `IN_LIST` (the convention of CMake's documentation, and
    /// composable_kernel's config). That is how a config that includes
    /// `<Pkg><component>Targets.cmake` for a component it promises but does not ship is caught.
    fn component_domain(
        &mut self,
        var: &str,
        raw: &[RawArg],
        body: &[Node],
        loc: &Loc,
    ) -> Option<Vec<String>> {
        let source = match raw {
            [_, a] if a.kind == ArgKind::Unquoted => a
                .text
                .strip_prefix("${")
                .and_then(|t| t.strip_suffix('}'))?
                .to_owned(),
            [_, i, l, a] if i.text == "IN" && l.text == "LISTS" => a.text.clone(),
            _ => return None,
        };
        let name = self.expand(&source, false, loc).ok()?;
        if name.unknown.is_some() || !name.text.ends_with("_FIND_COMPONENTS") {
            return None;
        }
        if !matches!(self.lookup(&name.text), Lookup::Undefined) {
            return None;
        }
        let list_name = find_in_list_check(var, body)?;
        let list_name = self.expand(&list_name, false, loc).ok()?;
        match self.lookup(&list_name.text) {
            Lookup::Defined(v) if v.unknown.is_none() => Some(split_list(&v.text, false)),
            _ => None,
        }
    }

    fn exec_while(&mut self, raw: &[RawArg], body: &[Node], loc: &Loc) -> Flow {
        loop {
            if !self.tick(loc) {
                return Flow::Abort;
            }
            let verdict = match self.expand_args(raw, loc) {
                Ok(args) => self.condition(&args),
                Err(e) => Err(e),
            };
            match verdict {
                Ok(true) => match self.nested(body, loc) {
                    Flow::Break => return Flow::Next,
                    Flow::Next | Flow::Continue => {}
                    other => return other,
                },
                Ok(false) => return Flow::Next,
                Err(reason) => {
                    let text = raw
                        .iter()
                        .map(RawArg::display)
                        .collect::<Vec<_>>()
                        .join(" ");
                    self.note(
                        loc,
                        format!("while({text}) at line {} was not evaluated ({reason}); the loop was skipped", loc.line),
                        &[("condition", text.into()), ("reason", reason.clone().into())],
                    );
                    self.taint_skipped(&[body], &reason, loc);
                    return Flow::Next;
                }
            }
        }
    }

    fn exec_block(&mut self, raw: &[RawArg], body: &[Node], loc: &Loc) -> Flow {
        let args = self.expand_args(raw, loc).unwrap_or_default();
        let mut scope_vars = true;
        let mut propagate = Vec::new();
        let mut mode = "";
        for a in &args {
            match a.text.as_str() {
                "SCOPE_FOR" | "PROPAGATE" => {
                    mode = if a.text == "SCOPE_FOR" {
                        "scope"
                    } else {
                        "propagate"
                    };
                    if mode == "scope" {
                        scope_vars = false;
                    }
                }
                "VARIABLES" if mode == "scope" => scope_vars = true,
                _ if mode == "propagate" => propagate.push(a.text.clone()),
                _ => {}
            }
        }
        if !scope_vars {
            return self.nested(body, loc);
        }
        self.scopes.push(HashMap::new());
        let flow = self.nested(body, loc);
        let values: Vec<(String, Lookup)> = propagate
            .into_iter()
            .map(|p| {
                let v = self.lookup(&p);
                (p, v)
            })
            .collect();
        self.scopes.pop();
        for (name, v) in values {
            self.restore(&name, v);
        }
        flow
    }

    // ---- calls -----------------------------------------------------------------------------

    pub fn call(&mut self, def: &Rc<Def>, args: Vec<Arg>, loc: &Loc) -> Flow {
        if args.len() < def.params.len() {
            self.note(
                loc,
                format!(
                    "{}() at line {} was called with fewer arguments than it declares; skipped",
                    def.name, loc.line
                ),
                &[],
            );
            return Flow::Next;
        }
        let mut suppress_fatal = false;
        if def.name == "set_and_check" {
            if let (Some(var), Some(path)) = (args.first(), args.get(1)) {
                suppress_fatal = self.check_set_and_check(&var.text, path, loc);
            }
        }
        if !self.enter(loc) {
            return Flow::Abort;
        }
        self.frames.push(Frame {
            suppress_fatal,
            call: loc.clone(),
        });
        let flow = if def.is_macro {
            let body = self.substitute_macro(def, &args, loc);
            match body {
                // CMake (3.25, checked with cmake -P in tests/cmake_semantics.rs): `break()` and
                // `return()` in a macro act on the caller, `continue()` does not: it ends the
                // block it is in, and the macro goes on with its next command.
                Some(body) => {
                    let mut flow = Flow::Next;
                    for node in &body {
                        match self.exec_node(node, &def.file) {
                            Flow::Next | Flow::Continue => {}
                            other => {
                                flow = other;
                                break;
                            }
                        }
                    }
                    flow
                }
                None => Flow::Abort,
            }
        } else {
            self.scopes.push(HashMap::new());
            let all = join_args(&args);
            let extra = join_args(args.get(def.params.len()..).unwrap_or_default());
            self.set_var("ARGC", Val::known(args.len().to_string()));
            self.set_var("ARGV", all);
            self.set_var("ARGN", extra);
            for (i, a) in args.iter().enumerate() {
                self.set_var(
                    &format!("ARGV{i}"),
                    Val {
                        text: a.text.clone(),
                        unknown: a.unknown.clone(),
                    },
                );
            }
            for (p, a) in def.params.iter().zip(&args) {
                self.set_var(
                    p,
                    Val {
                        text: a.text.clone(),
                        unknown: a.unknown.clone(),
                    },
                );
            }
            self.set_var("CMAKE_CURRENT_FUNCTION", Val::known(def.name.clone()));
            self.set_var(
                "CMAKE_CURRENT_FUNCTION_LIST_FILE",
                Val::known(def.file.target.clone()),
            );
            self.set_var(
                "CMAKE_CURRENT_FUNCTION_LIST_DIR",
                Val::known(dirname(&def.file.target)),
            );
            let flow = self.exec_nodes(&def.body, &def.file);
            self.scopes.pop();
            match flow {
                Flow::Abort => Flow::Abort,
                _ => Flow::Next,
            }
        };
        self.frames.pop();
        self.leave();
        flow
    }

    /// A macro body with `${param}`, `${ARGC}`, `${ARGV}`, `${ARGN}` and `${ARGVn}` replaced
    /// textually, as CMake does. An unknown argument is substituted as a reference to a hidden
    /// variable holding it, so that the unknown travels on.
    fn substitute_macro(&mut self, def: &Def, args: &[Arg], loc: &Loc) -> Option<Vec<Node>> {
        let mut values = Vec::with_capacity(args.len());
        for a in args {
            match &a.unknown {
                None => values.push(a.text.clone()),
                Some(r) => {
                    self.hidden += 1;
                    let name = format!("__rocpack_unknown_{}", self.hidden);
                    self.set_var(
                        &name,
                        Val {
                            text: a.text.clone(),
                            unknown: Some(r.clone()),
                        },
                    );
                    values.push(format!("${{{name}}}"));
                }
            }
        }
        let mut reps: Vec<(String, String)> = Vec::new();
        for (p, v) in def.params.iter().zip(&values) {
            reps.push((format!("${{{p}}}"), v.clone()));
        }
        reps.push(("${ARGC}".into(), values.len().to_string()));
        reps.push(("${ARGV}".into(), values.join(";")));
        reps.push((
            "${ARGN}".into(),
            values.get(def.params.len()..).unwrap_or_default().join(";"),
        ));
        for (i, v) in values.iter().enumerate() {
            reps.push((format!("${{ARGV{i}}}"), v.clone()));
        }
        let mut budget = 0usize;
        let body = substitute_nodes(&def.body, &reps, &mut budget);
        if !self.spend_bytes(budget, loc) {
            return None;
        }
        Some(body)
    }

    // ---- include ---------------------------------------------------------------------------

    pub fn include(&mut self, args: &[Arg], loc: &Loc) -> Flow {
        let Some(first) = args.first() else {
            self.note(
                loc,
                format!("include() without arguments at line {}", loc.line),
                &[],
            );
            return Flow::Next;
        };
        let mut optional = false;
        let mut result_var: Option<String> = None;
        let mut it = args.iter().skip(1);
        while let Some(a) = it.next() {
            match a.text.as_str() {
                "OPTIONAL" => optional = true,
                "RESULT_VARIABLE" => result_var = it.next().map(|v| v.text.clone()),
                _ => {}
            }
        }
        let set_result = |ev: &mut Self, v: Val| {
            if let Some(r) = &result_var {
                ev.set_var(r, v);
            }
        };
        if let Some(r) = &first.unknown {
            self.note(
                loc,
                format!("include() at line {} was not followed: its path depends on an unknown value ({r})", loc.line),
                &[("reason", r.to_string().into())],
            );
            set_result(self, Val::unknown(r.clone()));
            return Flow::Next;
        }
        let name = first.text.clone();
        if name.is_empty() {
            self.note(loc, format!("include(\"\") at line {}", loc.line), &[]);
            return Flow::Next;
        }
        let mut path = None;
        if !name.contains('/') {
            // A module name: CMAKE_MODULE_PATH first, then CMake's own modules.
            let module_path = self.get_text("CMAKE_MODULE_PATH").unwrap_or_default();
            for dir in split_list(&module_path, false) {
                let candidate = normalize(&join(&dir, &format!("{name}.cmake")));
                if candidate.starts_with('/') && self.s.fs.is_file(&candidate) {
                    path = Some(candidate);
                    break;
                }
            }
            if path.is_none() && !name.ends_with(".cmake") {
                if is_cmake_module(&name) {
                    set_result(
                        self,
                        Val::known(format!("/usr/share/cmake-3.31/Modules/{name}.cmake")),
                    );
                } else {
                    self.note(
                        loc,
                        format!("include({name}) at line {}: not one of CMake's modules and not in CMAKE_MODULE_PATH; not followed", loc.line),
                        &[("module", name.clone().into())],
                    );
                    set_result(self, Val::unknown(format!("whether module {name} is found depends on the caller's CMAKE_MODULE_PATH").into()));
                }
                return Flow::Next;
            }
        }
        let path = match path {
            Some(p) => p,
            None if name.starts_with('/') => normalize(&name),
            // CMake itself resolves a relative include() against the caller's source
            // directory; a config means its own directory, and that is what is checked.
            None => {
                let dir = self
                    .get_text("CMAKE_CURRENT_LIST_DIR")
                    .unwrap_or_else(|| "/".into());
                normalize(&join(&dir, &name))
            }
        };
        if !self.s.fs.is_file(&path) {
            set_result(self, Val::known("NOTFOUND"));
            if !optional {
                self.check_include_path(&path, loc);
            }
            return Flow::Next;
        }
        set_result(self, Val::known(path.clone()));
        // An existing file may still lie outside the prefix.
        self.check_include_path(&path, loc);
        self.eval_file(&path, loc)
    }

    /// Evaluates a file in the current scope, as `include()` does.
    pub fn eval_file(&mut self, target: &str, loc: &Loc) -> Flow {
        let host = self.s.fs.host(target);
        let key = self.s.fs.resolve(target).unwrap_or_else(|| host.clone());
        // A file may include itself again once (CMake's generated `<name>-*.cmake` glob picks
        // up `<name>-config.cmake`; its guard makes the second pass return). A third time is a
        // cycle.
        if self.include_stack.iter().filter(|k| **k == key).count() >= 2 {
            let chain = self
                .include_stack
                .iter()
                .map(|p| p.display().to_string())
                .chain([key.display().to_string()])
                .collect::<Vec<_>>()
                .join(" -> ");
            self.note(
                loc,
                format!(
                    "include cycle at line {}: {chain}; not followed again",
                    loc.line
                ),
                &[("path", target.into())],
            );
            return Flow::Next;
        }
        if self.include_stack.len() >= MAX_INCLUDE_DEPTH {
            self.note(
                loc,
                format!(
                    "includes nested deeper than {MAX_INCLUDE_DEPTH} at line {}; not followed",
                    loc.line
                ),
                &[("path", target.into())],
            );
            return Flow::Next;
        }
        let file = match self.s.load(&host, target) {
            Ok(f) => f,
            Err(f) => {
                self.s.findings.push(f);
                return Flow::Next;
            }
        };
        self.s.evaluated.insert(key.clone());
        collect_own_targets(&file.nodes, &mut self.own_targets);
        if !self.enter(loc) {
            return Flow::Abort;
        }
        self.include_stack.push(key);
        let saved_file = self.lookup("CMAKE_CURRENT_LIST_FILE");
        let saved_dir = self.lookup("CMAKE_CURRENT_LIST_DIR");
        let saved_parent = self.lookup("CMAKE_PARENT_LIST_FILE");
        if let Lookup::Defined(v) = &saved_file {
            self.set_var("CMAKE_PARENT_LIST_FILE", v.clone());
        }
        self.set_var("CMAKE_CURRENT_LIST_FILE", Val::known(target));
        self.set_var("CMAKE_CURRENT_LIST_DIR", Val::known(dirname(target)));
        let saved_line = self.line;
        let flow = self.exec_nodes(&file.nodes, &file);
        self.line = saved_line;
        self.restore("CMAKE_CURRENT_LIST_FILE", saved_file);
        self.restore("CMAKE_CURRENT_LIST_DIR", saved_dir);
        self.restore("CMAKE_PARENT_LIST_FILE", saved_parent);
        self.include_stack.pop();
        self.leave();
        match flow {
            Flow::Abort => Flow::Abort,
            _ => Flow::Next,
        }
    }

    /// `message(FATAL_ERROR)`: stops the entry file, unless it is a `set_and_check` failing
    /// on a path already reported.
    pub fn fatal(&mut self, text: &str, loc: &Loc) -> Flow {
        if self.frames.iter().any(|f| f.suppress_fatal) {
            return Flow::Next;
        }
        let first = text.lines().next().unwrap_or_default().trim();
        let first: String = first.chars().take(200).collect();
        self.note(
            loc,
            format!(
                "message(FATAL_ERROR) at line {} stops the evaluation: {first}",
                loc.line
            ),
            &[("reason", "fatal-error".into())],
        );
        Flow::Abort
    }
}

/// Joins argument values into a list value; unknown if any is.
fn join_args(args: &[Arg]) -> Val {
    Val {
        text: args
            .iter()
            .map(|a| a.text.as_str())
            .collect::<Vec<_>>()
            .join(";"),
        unknown: args.iter().find_map(|a| a.unknown.clone()),
    }
}

/// Deep copy of a macro body with textual replacements (bracket arguments untouched).
fn substitute_nodes(nodes: &[Node], reps: &[(String, String)], bytes: &mut usize) -> Vec<Node> {
    let sub_args = |args: &[RawArg], bytes: &mut usize| -> Vec<RawArg> {
        args.iter()
            .map(|a| {
                let mut text = a.text.clone();
                if a.kind != ArgKind::Bracket && text.contains("${") {
                    for (from, to) in reps {
                        if text.contains(from.as_str()) {
                            text = text.replace(from.as_str(), to);
                        }
                    }
                }
                *bytes += text.len();
                RawArg { kind: a.kind, text }
            })
            .collect()
    };
    nodes
        .iter()
        .map(|n| match n {
            Node::Command(c) => Node::Command(super::lexer::Command {
                name: c.name.clone(),
                args: sub_args(&c.args, bytes),
                line: c.line,
            }),
            Node::If {
                branches,
                else_body,
            } => Node::If {
                branches: branches
                    .iter()
                    .map(|(cond, line, body)| {
                        (
                            sub_args(cond, bytes),
                            *line,
                            substitute_nodes(body, reps, bytes),
                        )
                    })
                    .collect(),
                else_body: else_body.as_ref().map(|b| substitute_nodes(b, reps, bytes)),
            },
            Node::Foreach { args, line, body } => Node::Foreach {
                args: sub_args(args, bytes),
                line: *line,
                body: substitute_nodes(body, reps, bytes),
            },
            Node::While { args, line, body } => Node::While {
                args: sub_args(args, bytes),
                line: *line,
                body: substitute_nodes(body, reps, bytes),
            },
            Node::Define {
                is_macro,
                args,
                line,
                body,
            } => Node::Define {
                is_macro: *is_macro,
                args: sub_args(args, bytes),
                line: *line,
                body: Rc::new(substitute_nodes(body, reps, bytes)),
            },
            Node::Block { args, line, body } => Node::Block {
                args: sub_args(args, bytes),
                line: *line,
                body: substitute_nodes(body, reps, bytes),
            },
        })
        .collect()
}

/// Names of targets created with a literal name (no `${}`) anywhere in `nodes`.
fn collect_own_targets(nodes: &[Node], out: &mut HashSet<String>) {
    for node in nodes {
        match node {
            Node::Command(c) if c.name == "add_library" || c.name == "add_executable" => {
                if let Some(a) = c.args.first().filter(|a| !a.text.contains('$')) {
                    out.insert(a.text.clone());
                }
            }
            Node::Command(_) | Node::Define { .. } => {}
            Node::If {
                branches,
                else_body,
            } => {
                for (_, _, body) in branches {
                    collect_own_targets(body, out);
                }
                if let Some(body) = else_body {
                    collect_own_targets(body, out);
                }
            }
            Node::Foreach { body, .. } | Node::While { body, .. } | Node::Block { body, .. } => {
                collect_own_targets(body, out);
            }
        }
    }
}

/// In a loop body, the list a `<var> IN_LIST <list>` condition checks the loop variable
/// against (the raw name of the list).
fn find_in_list_check(var: &str, body: &[Node]) -> Option<String> {
    let refs = [var.to_owned(), format!("${{{var}}}")];
    for node in body {
        if let Node::If {
            branches,
            else_body,
        } = node
        {
            for (cond, _, inner) in branches {
                for w in cond.windows(3) {
                    if let [a, op, list] = w {
                        if op.kind == ArgKind::Unquoted
                            && op.text == "IN_LIST"
                            && refs.contains(&a.text)
                        {
                            return Some(list.text.clone());
                        }
                    }
                }
                if let Some(found) = find_in_list_check(var, inner) {
                    return Some(found);
                }
            }
            if let Some(found) = else_body.as_ref().and_then(|b| find_in_list_check(var, b)) {
                return Some(found);
            }
        }
    }
    None
}

/// CMake's list splitting (`cmExpandList`): `;` separates except inside `[]`, `\;` is a
/// literal `;`. Empty elements are dropped unless `keep_empty`.
pub(crate) fn split_list(s: &str, keep_empty: bool) -> Vec<String> {
    split_items(s, keep_empty)
        .into_iter()
        .map(Cow::into_owned)
        .collect()
}

/// Whether every `;` of a list separates elements: no bracket (`[`, `]`) nests, no
/// backslash escapes. Such a list is split by the fast paths without copying.
pub(crate) fn is_plain_list(s: &str) -> bool {
    !s.bytes().any(|b| matches!(b, b'[' | b']' | b'\\'))
}

/// [`split_list`], borrowing every element it can: a list without brackets or backslashes
/// is split on its `;` with no copy, so a lookup in a long list (`list(FIND)` in a loop)
/// allocates one vector, not one string per element.
pub(crate) fn split_items(s: &str, keep_empty: bool) -> Vec<Cow<'_, str>> {
    let mut out = Vec::new();
    if s.is_empty() {
        return out;
    }
    if is_plain_list(s) {
        out.extend(
            s.split(';')
                .filter(|item| keep_empty || !item.is_empty())
                .map(Cow::Borrowed),
        );
        return out;
    }
    let mut cur = String::new();
    // Signed, as cmExpandList's squareNesting: a `]` with no `[` before it goes below zero,
    // and no later `;` splits (`x];y` is one element).
    let mut depth = 0i64;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '[' => {
                depth += 1;
                cur.push(c);
            }
            ']' => {
                depth -= 1;
                cur.push(c);
            }
            '\\' => match chars.peek() {
                Some(';') => {
                    cur.push(';');
                    chars.next();
                }
                _ => cur.push('\\'),
            },
            ';' if depth == 0 => {
                if keep_empty || !cur.is_empty() {
                    out.push(Cow::Owned(std::mem::take(&mut cur)));
                }
            }
            c => cur.push(c),
        }
    }
    if keep_empty || !cur.is_empty() {
        out.push(Cow::Owned(cur));
    }
    out
}

/// CMake's own modules (`include(Name)` that need no file from the package). Not
/// exhaustive: a module missing here is reported as not followed, which is honest.
fn is_cmake_module(name: &str) -> bool {
    const MODULES: &[&str] = &[
        "AndroidTestUtilities",
        "BundleUtilities",
        "CheckCCompilerFlag",
        "CheckCSourceCompiles",
        "CheckCSourceRuns",
        "CheckCXXCompilerFlag",
        "CheckCXXSourceCompiles",
        "CheckCXXSourceRuns",
        "CheckCXXSymbolExists",
        "CheckCompilerFlag",
        "CheckFortranCompilerFlag",
        "CheckFortranFunctionExists",
        "CheckFortranSourceCompiles",
        "CheckFunctionExists",
        "CheckIPOSupported",
        "CheckIncludeFile",
        "CheckIncludeFileCXX",
        "CheckIncludeFiles",
        "CheckLanguage",
        "CheckLibraryExists",
        "CheckLinkerFlag",
        "CheckPIESupported",
        "CheckPrototypeDefinition",
        "CheckSourceCompiles",
        "CheckSourceRuns",
        "CheckStructHasMember",
        "CheckSymbolExists",
        "CheckTypeSize",
        "CheckVariableExists",
        "CMakeDependentOption",
        "CMakeFindDependencyMacro",
        "CMakePackageConfigHelpers",
        "CMakeParseArguments",
        "CMakePrintHelpers",
        "CMakePushCheckState",
        "CPack",
        "CTest",
        "ExternalProject",
        "FeatureSummary",
        "FetchContent",
        "FindPackageHandleStandardArgs",
        "FindPackageMessage",
        "GenerateExportHeader",
        "GetPrerequisites",
        "GNUInstallDirs",
        "GoogleTest",
        "InstallRequiredSystemLibraries",
        "ProcessorCount",
        "SelectLibraryConfigurations",
        "TestBigEndian",
        "WriteBasicConfigVersionFile",
        "FindThreads",
        "FindOpenMP",
        "FindPython3",
        "FindPkgConfig",
        "CMakeFindFrameworks",
        "FindZLIB",
        "FindBoost",
        "CheckCCompilerFlag",
        "CMakeDetermineCompilerId",
        "Documentation",
        "FindCUDAToolkit",
    ];
    MODULES.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_splitting() {
        assert_eq!(split_list("a;b;;c", false), vec!["a", "b", "c"]);
        assert_eq!(split_list("a;b;;c", true), vec!["a", "b", "", "c"]);
        assert_eq!(split_list("a\\;b;[c;d]", false), vec!["a;b", "[c;d]"]);
        assert!(split_list("", true).is_empty());
    }
}
