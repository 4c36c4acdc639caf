//! The commands package configs use, each with CMake's semantics as far as a config can
//! observe them. A command that would consult the configuring machine (`execute_process`,
//! `find_library`, `try_compile`) sets its outputs to unknown values. Commands with side effects
//! only (`install`, `file(WRITE)`, `configure_file`) are never performed.

use std::borrow::Cow;

use super::eval::{
    Arg, Evaluator, Flow, Loc, Lookup, MAX_VALUE, Reason, Target, Val, is_plain_list, split_items,
    split_list,
};
use super::paths::{self, basename, dirname, join, normalize};
use super::regex;

/// Commands handled here.
const HANDLED: &[&str] = &[
    "set",
    "unset",
    "option",
    "list",
    "string",
    "math",
    "get_filename_component",
    "cmake_path",
    "file",
    "include",
    "include_guard",
    "message",
    "return",
    "break",
    "continue",
    "add_library",
    "add_executable",
    "set_target_properties",
    "set_property",
    "get_target_property",
    "get_property",
    "target_link_libraries",
    "target_include_directories",
    "target_link_directories",
    "find_package",
    "find_dependency",
    "execute_process",
    "find_program",
    "find_library",
    "find_path",
    "find_file",
    "try_compile",
    "try_run",
    "cmake_parse_arguments",
    "separate_arguments",
    "get_cmake_property",
    "get_directory_property",
    "get_source_file_property",
    "get_test_property",
    "site_name",
    "cmake_host_system_information",
    "find_package_handle_standard_args",
    "select_library_configurations",
    "cmake_language",
];

/// Commands that change nothing a config check can see (or only the build, never performed).
const NO_EFFECT: &[&str] = &[
    "cmake_policy",
    "cmake_minimum_required",
    "mark_as_advanced",
    "enable_language",
    "project",
    "add_definitions",
    "add_compile_definitions",
    "add_compile_options",
    "add_link_options",
    "include_directories",
    "link_directories",
    "link_libraries",
    "remove_definitions",
    "target_compile_definitions",
    "target_compile_options",
    "target_compile_features",
    "target_link_options",
    "target_precompile_headers",
    "target_sources",
    "set_source_files_properties",
    "set_directory_properties",
    "set_tests_properties",
    "define_property",
    "add_dependencies",
    "add_custom_command",
    "add_custom_target",
    "install",
    "export",
    "configure_file",
    "variable_watch",
    "source_group",
    "enable_testing",
    "add_test",
    "write_basic_package_version_file",
    "configure_package_config_file",
    "feature_summary",
    "set_package_properties",
    "add_feature_info",
    "cmake_push_check_state",
    "cmake_pop_check_state",
    "cmake_reset_check_state",
    "cmake_print_variables",
    "cmake_print_properties",
    "find_package_message",
    "include_regular_expression",
];

/// Module functions that run a compile or a check: their result variable is unknown.
/// The number is the position of the result variable among the arguments.
const CHECKS: &[(&str, usize)] = &[
    ("check_c_compiler_flag", 1),
    ("check_cxx_compiler_flag", 1),
    ("check_fortran_compiler_flag", 1),
    ("check_compiler_flag", 2),
    ("check_linker_flag", 2),
    ("check_include_file", 1),
    ("check_include_file_cxx", 1),
    ("check_include_files", 1),
    ("check_symbol_exists", 2),
    ("check_cxx_symbol_exists", 2),
    ("check_function_exists", 1),
    ("check_variable_exists", 1),
    ("check_library_exists", 3),
    ("check_c_source_compiles", 1),
    ("check_cxx_source_compiles", 1),
    ("check_c_source_runs", 1),
    ("check_cxx_source_runs", 1),
    ("check_source_compiles", 2),
    ("check_source_runs", 2),
    ("check_type_size", 1),
    ("check_struct_has_member", 3),
    ("check_prototype_definition", 4),
];

pub(crate) fn is_builtin(name: &str) -> bool {
    HANDLED.contains(&name) || NO_EFFECT.contains(&name) || CHECKS.iter().any(|(n, _)| *n == name)
}

fn any_unknown(args: &[Arg]) -> Option<Reason> {
    args.iter().find_map(|a| a.unknown.clone())
}

fn concat(args: &[Arg]) -> String {
    args.iter().map(|a| a.text.as_str()).collect()
}

/// `items` joined with `glue`, sized before it is built: a long glue between many elements
/// must not allocate past [`MAX_VALUE`].
fn bounded_join<S: AsRef<str>>(items: &[S], glue: &str) -> Result<String, String> {
    let len = items
        .iter()
        .map(|i| i.as_ref().len())
        .sum::<usize>()
        .saturating_add(glue.len().saturating_mul(items.len().saturating_sub(1)));
    if len > MAX_VALUE {
        return Err(format!("the joined value would be {len} bytes"));
    }
    let mut out = String::with_capacity(len);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(glue);
        }
        out.push_str(item.as_ref());
    }
    Ok(out)
}

fn texts(args: &[Arg]) -> Vec<String> {
    args.iter().map(|a| a.text.clone()).collect()
}

fn tail(args: &[Arg], from: usize) -> &[Arg] {
    args.get(from..).unwrap_or_default()
}

/// A list index as CMake reads it (negative counts from the end).
fn list_index(s: &str, len: usize) -> Option<usize> {
    let i: i64 = s.trim().parse().ok()?;
    let len = i64::try_from(len).ok()?;
    let idx = if i < 0 { len + i } else { i };
    if (0..len).contains(&idx) {
        usize::try_from(idx).ok()
    } else {
        None
    }
}

/// Element `n` of a list whose text up to that element has neither a bracket nor a
/// backslash, found without splitting the rest: `Some(None)` when the list is shorter, `None`
/// when the full rules of [`split_items`] are needed.
fn plain_list_item(list: &str, n: usize) -> Option<Option<&str>> {
    if list.is_empty() {
        return Some(None);
    }
    let (mut index, mut start) = (0, 0);
    for (at, b) in list.bytes().enumerate() {
        match b {
            b'[' | b']' | b'\\' => return None,
            b';' => {
                if index == n {
                    return Some(list.get(start..at));
                }
                index += 1;
                start = at + 1;
            }
            _ => {}
        }
    }
    Some(if index == n { list.get(start..) } else { None })
}

/// Whether `project(...)` or `enable_language(...)` enables a language: `project(NAME)` enables
/// C and CXX, `NONE` enables none.
fn enables_a_language(command: &str, args: &[Arg]) -> bool {
    let langs: Vec<&str> = if command == "project" {
        let rest = tail(args, 1);
        let mut langs = Vec::new();
        let mut skip_value = false;
        let mut keyword = false;
        for a in rest {
            let t = a.text.as_str();
            if skip_value {
                skip_value = false;
            } else if matches!(t, "VERSION" | "DESCRIPTION" | "HOMEPAGE_URL") {
                skip_value = true;
            } else if t == "LANGUAGES" {
                keyword = true;
            } else {
                langs.push(t);
            }
        }
        // Without any language named, C and CXX; `LANGUAGES` with none names none.
        if langs.is_empty() {
            return !keyword;
        }
        langs
    } else {
        args.iter().map(|a| a.text.as_str()).collect()
    };
    langs.iter().any(|l| *l != "NONE" && *l != "OPTIONAL")
}

/// `list(TRANSFORM <list> <ACTION> [<SELECTOR>])` on the split list, as cmListCommand.cxx:
/// `args` is what follows the list's name, without `OUTPUT_VARIABLE`.
fn transform(items: &mut [Cow<'_, str>], args: &[Arg]) -> Result<(), String> {
    let word = |i: usize| args.get(i).map(|a| a.text.as_str());
    let action = word(0).ok_or("no action")?;
    let operands = match action {
        "APPEND" | "PREPEND" => 1,
        "REPLACE" => 2,
        "TOLOWER" | "TOUPPER" | "STRIP" | "GENEX_STRIP" => 0,
        other => return Err(format!("unknown action {other}")),
    };
    let operand =
        |i: usize| word(1 + i).ok_or_else(|| format!("{action} needs {operands} operand(s)"));
    // Which elements: all, or a selector's.
    let len = items.len();
    let selector = args.get(1 + operands..).unwrap_or_default();
    // Which elements, in the order the action applies to them: all, or a selector's (an index
    // listed twice under AT is transformed twice, as in CMake).
    let mut chosen: Vec<usize> = if selector.is_empty() {
        (0..len).collect()
    } else {
        Vec::new()
    };
    match selector.first().map(|a| a.text.as_str()) {
        None => {}
        Some("AT") => {
            for a in selector.get(1..).unwrap_or_default() {
                let i = list_index(&a.text, len)
                    .ok_or_else(|| format!("index {} out of range", a.text))?;
                chosen.push(i);
            }
        }
        Some("FOR") => {
            let num = |i: usize| -> Result<i64, String> {
                let t = selector.get(i).ok_or("FOR needs a start and a stop")?;
                t.text
                    .trim()
                    .parse()
                    .map_err(|_| format!("{} is not a number", t.text))
            };
            let (start, stop) = (num(1)?, num(2)?);
            let step = if selector.len() > 3 { num(3)? } else { 1 };
            let at = |i: i64| list_index(&i.to_string(), len);
            let (Some(start), Some(stop)) = (at(start), at(stop)) else {
                return Err("FOR range out of range".into());
            };
            if step <= 0 || start > stop {
                return Err("FOR needs start <= stop and a positive step".into());
            }
            let step = usize::try_from(step).map_err(|e| e.to_string())?;
            chosen.extend((start..=stop).step_by(step));
        }
        Some("REGEX") => {
            let re = regex::compile(&selector.get(1).ok_or("REGEX needs a pattern")?.text)?;
            chosen.extend((0..len).filter(|&i| items.get(i).is_some_and(|item| re.is_match(item))));
        }
        Some(other) => return Err(format!("unknown selector {other}")),
    }
    let replace = if action == "REPLACE" {
        Some((regex::compile(operand(0)?)?, operand(0)?, operand(1)?))
    } else {
        None
    };
    // The list as it will be joined, counted as it grows: a hostile list of empty elements
    // with a long operand must not be built whole before the size check.
    let mut total = items.iter().map(|i| i.len() + 1).sum::<usize>();
    for i in chosen {
        let Some(item) = items.get_mut(i) else {
            continue;
        };
        let new = match action {
            "APPEND" => format!("{item}{}", operand(0)?),
            "PREPEND" => format!("{}{item}", operand(0)?),
            "TOLOWER" => item.to_ascii_lowercase(),
            "TOUPPER" => item.to_ascii_uppercase(),
            "STRIP" => cmake_trim(item).to_owned(),
            "GENEX_STRIP" => return Err("GENEX_STRIP is not evaluated".into()),
            _ => match &replace {
                Some((re, pattern, repl)) => {
                    regex::replace_all(re, pattern, item, repl, MAX_VALUE)?
                }
                None => item.to_string(),
            },
        };
        total = (total + new.len()).saturating_sub(item.len());
        if total > MAX_VALUE {
            return Err(format!("the list grows beyond {} MiB", MAX_VALUE >> 20));
        }
        *item = Cow::Owned(new);
    }
    Ok(())
}

fn cmake_trim(s: &str) -> &str {
    s.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r'))
}

fn bool_text(b: bool) -> &'static str {
    if b { "1" } else { "0" }
}

impl Evaluator<'_> {
    /// Sets a variable from a command's result, within the size limit.
    fn store(&mut self, name: &str, text: String, unknown: Option<Reason>, loc: &Loc) {
        if text.len() > MAX_VALUE {
            self.note(
                loc,
                format!(
                    "value of {name} grows beyond {} MiB at line {}; left unknown",
                    MAX_VALUE >> 20,
                    loc.line
                ),
                &[],
            );
            self.set_var(name, Val::unknown("value too large".into()));
            return;
        }
        if !self.spend_bytes(text.len(), loc) {
            return;
        }
        let v = Val { text, unknown };
        self.record_assign(name, Some(&v), loc);
        self.set_var(name, v);
    }

    fn set_unknown(&mut self, name: &str, reason: String) {
        self.set_var(name, Val::unknown(reason.into()));
    }

    /// A command that could not be evaluated (CMake would stop, or the value would pass the
    /// size limit): its output becomes unknown, and a note says why.
    fn not_evaluated(&mut self, command: &str, out: &str, reason: String, loc: &Loc) {
        self.note(
            loc,
            format!("{command} at line {}: {reason}", loc.line),
            &[],
        );
        self.set_unknown(out, reason);
    }

    pub fn builtin(&mut self, name: &str, args: Vec<Arg>, loc: &Loc) -> Flow {
        match name {
            "set" => self.cmd_set(&args, loc),
            "unset" => {
                if let Some(n) = args.first() {
                    let parent = args.get(1).is_some_and(|a| a.text == "PARENT_SCOPE");
                    if let Some(e) = n
                        .text
                        .strip_prefix("ENV{")
                        .and_then(|e| e.strip_suffix('}'))
                    {
                        self.env.remove(e);
                    } else if parent {
                        self.set_parent(&n.text, None);
                    } else if self.project_mode() && args.get(1).is_some_and(|a| a.text == "CACHE")
                    {
                        if let Some(p) = self.s.project.as_mut() {
                            p.cache.remove(&n.text);
                        }
                    } else {
                        self.record_assign(&n.text, None, loc);
                        self.unset_var(&n.text);
                    }
                }
            }
            // Enabling a language defines CMAKE_BUILD_TYPE (an empty cache entry unless given):
            // before it, a project's `if(NOT DEFINED CMAKE_BUILD_TYPE)` sees it undefined, as
            // with CMake 3.25 (checked with a project(t NONE) and a project(t CXX)).
            "project" | "enable_language" if self.project_mode() => {
                if name == "project" {
                    self.project_command(&args);
                }
                if enables_a_language(name, &args) {
                    self.cache_default("CMAKE_BUILD_TYPE", Val::known(""));
                }
            }
            "option" if self.project_mode() => self.project_option(&args, loc),
            "option" => {
                if let Some(n) = args.first() {
                    if matches!(self.lookup(&n.text), Lookup::Undefined) {
                        let v = args.get(2).map_or("OFF".to_owned(), |a| a.text.clone());
                        self.set_var(&n.text, Val::known(v));
                    }
                }
            }
            "list" => self.cmd_list(&args, loc),
            "string" => self.cmd_string(&args, loc),
            "math" => self.cmd_math(&args, loc),
            "get_filename_component" => self.cmd_get_filename_component(&args, loc),
            "cmake_path" => self.cmd_cmake_path(&args, loc),
            "file" => self.cmd_file(&args, loc),
            "include" => return self.include(&args, loc),
            "include_guard" => {
                if !self.guarded.insert(loc.file.host.clone()) {
                    return Flow::Return;
                }
            }
            "message" => {
                let mode = args.first().map(|a| a.text.as_str()).unwrap_or_default();
                match mode {
                    "FATAL_ERROR" => return self.fatal(&concat(tail(&args, 1)), loc),
                    "SEND_ERROR" => {
                        let text = concat(tail(&args, 1));
                        let first: String = text
                            .lines()
                            .next()
                            .unwrap_or_default()
                            .chars()
                            .take(200)
                            .collect();
                        self.note(
                            loc,
                            format!(
                                "message(SEND_ERROR) at line {}: configuring would fail: {first}",
                                loc.line
                            ),
                            &[],
                        );
                    }
                    _ => {}
                }
            }
            "return" => return Flow::Return,
            "break" => return Flow::Break,
            "continue" => return Flow::Continue,
            "add_library" | "add_executable" => {
                self.cmd_add_target(name == "add_executable", &args, loc)
            }
            "set_target_properties" => self.cmd_set_target_properties(&args, loc),
            "set_property" => self.cmd_set_property(&args, loc),
            "get_target_property" => {
                if let (Some(var), Some(t), Some(p)) = (args.first(), args.get(1), args.get(2)) {
                    let v = self.target_property(&t.text, &p.text);
                    match v {
                        Some(Some(v)) => self.set_var(&var.text, v),
                        Some(None) => {
                            self.set_var(&var.text, Val::known(format!("{}-NOTFOUND", var.text)))
                        }
                        None => self.set_unknown(
                            &var.text,
                            format!("target {} is not defined here", t.text),
                        ),
                    }
                }
            }
            "get_property" => self.cmd_get_property(&args),
            "target_link_libraries" | "target_include_directories" | "target_link_directories" => {
                self.cmd_target_usage(name, &args, loc)
            }
            "find_package" | "find_dependency" if self.project_mode() => {
                self.project_find_package(&args)
            }
            "add_subdirectory" if self.project_mode() => {
                return self.project_add_subdirectory(&args, loc);
            }
            "find_package" | "find_dependency" => {
                if let Some(pkg) = args.first() {
                    if pkg.unknown.is_none() && !pkg.text.is_empty() {
                        // Every config in the prefix is checked on its own; here the dependency
                        // is assumed found so that the rest of this config is evaluated.
                        self.set_var(&format!("{}_FOUND", pkg.text), Val::known("1"));
                        if !self.found.contains(&pkg.text) {
                            self.found.push(pkg.text.clone());
                        }
                    }
                }
            }
            "execute_process" => {
                let mut it = args.iter();
                while let Some(a) = it.next() {
                    if matches!(
                        a.text.as_str(),
                        "OUTPUT_VARIABLE"
                            | "ERROR_VARIABLE"
                            | "RESULT_VARIABLE"
                            | "RESULTS_VARIABLE"
                    ) {
                        if let Some(v) = it.next() {
                            self.set_unknown(
                                &v.text,
                                format!(
                                    "{} is set by execute_process() at line {}, which is not run",
                                    v.text, loc.line
                                ),
                            );
                        }
                    }
                }
            }
            "find_program" | "find_library" | "find_path" | "find_file" => {
                if let Some(var) = args.first() {
                    let already = matches!(self.lookup(&var.text), Lookup::Defined(v) if v.unknown.is_none() && !super::cond::is_off(&v.text));
                    if !already {
                        self.set_unknown(
                            &var.text,
                            format!("{} is set by {name}() at line {}, which searches the configuring machine", var.text, loc.line),
                        );
                    }
                }
            }
            "try_compile" | "try_run" => {
                let n = if name == "try_run" { 2 } else { 1 };
                for v in args.iter().take(n) {
                    self.set_unknown(
                        &v.text,
                        format!("{} is set by {name}() at line {}", v.text, loc.line),
                    );
                }
            }
            "cmake_parse_arguments" => self.cmd_parse_arguments(&args, loc),
            "separate_arguments"
            | "get_cmake_property"
            | "get_directory_property"
            | "get_source_file_property"
            | "get_test_property"
            | "site_name" => {
                if let Some(v) = args.first() {
                    self.set_unknown(
                        &v.text,
                        format!(
                            "{} is set by {name}() at line {}, which is not evaluated",
                            v.text, loc.line
                        ),
                    );
                }
            }
            "cmake_host_system_information" => {
                if let Some(v) = args.get(1) {
                    self.set_unknown(
                        &v.text,
                        format!("{} describes the configuring machine", v.text),
                    );
                }
            }
            "find_package_handle_standard_args" => {
                if let Some(p) = args.first() {
                    let reason = format!(
                        "{}_FOUND is decided by find_package_handle_standard_args()",
                        p.text
                    );
                    self.set_unknown(&format!("{}_FOUND", p.text), reason.clone());
                    self.set_unknown(&format!("{}_FOUND", p.text.to_ascii_uppercase()), reason);
                }
            }
            "select_library_configurations" => {
                if let Some(p) = args.first() {
                    for suffix in ["_LIBRARY", "_LIBRARIES"] {
                        self.set_unknown(
                            &format!("{}{suffix}", p.text),
                            format!("set by select_library_configurations({})", p.text),
                        );
                    }
                }
            }
            "cmake_language" => return self.cmd_cmake_language(args, loc),
            n if NO_EFFECT.contains(&n) => {}
            n => match CHECKS.iter().find(|(c, _)| *c == n) {
                Some((_, i)) => {
                    if let Some(v) = args.get(*i) {
                        // CMake runs a check only when its result variable is not defined yet
                        // (Modules/Internal/CheckSourceCompiles.cmake:11, CheckIncludeFile.cmake:49,
                        // CheckLibraryExists.cmake:46 in CMake 3.25: `if(NOT DEFINED "${_var}")`),
                        // so a result the packager passes with -D stands. check_type_size keys
                        // on HAVE_<VAR> instead (CheckTypeSize.cmake:277).
                        let result = if n == "check_type_size" {
                            format!("HAVE_{}", v.text)
                        } else {
                            v.text.clone()
                        };
                        let given = matches!(self.lookup(&result), Lookup::Defined(ref d) if d.unknown.is_none());
                        if !given {
                            self.set_unknown(&v.text, format!("{} is set by {n}() at line {}, which compiles on the configuring machine", v.text, loc.line));
                        }
                    }
                }
                None => self.note_unknown_command(n, loc),
            },
        }
        Flow::Next
    }

    fn cmd_set(&mut self, args: &[Arg], loc: &Loc) {
        let Some(name) = args.first() else { return };
        if let Some(r) = &name.unknown {
            self.note(
                loc,
                format!(
                    "set() at line {} of a variable whose name is unknown ({r}) was skipped",
                    loc.line
                ),
                &[],
            );
            return;
        }
        let mut vals = tail(args, 1);
        let mut parent = false;
        if let Some((last, rest)) = vals.split_last() {
            if last.text == "PARENT_SCOPE" {
                parent = true;
                vals = rest;
            }
        }
        let mut cache = false;
        let mut force = false;
        let mut cache_rest: &[Arg] = &[];
        if let Some(pos) = vals.iter().position(|a| !a.quoted && a.text == "CACHE") {
            cache = true;
            force = tail(vals, pos).iter().any(|a| a.text == "FORCE");
            cache_rest = tail(vals, pos);
            vals = vals.get(..pos).unwrap_or_default();
        }
        if let Some(e) = name
            .text
            .strip_prefix("ENV{")
            .and_then(|e| e.strip_suffix('}'))
        {
            match vals.first() {
                Some(v) => {
                    self.env.insert(e.to_owned(), v.text.clone());
                }
                None => {
                    self.env.remove(e);
                }
            }
            return;
        }
        let text = vals
            .iter()
            .map(|a| a.text.as_str())
            .collect::<Vec<_>>()
            .join(";");
        let unknown = any_unknown(vals);
        if parent {
            let v = if vals.is_empty() {
                None
            } else {
                Some(Val { text, unknown })
            };
            self.record_assign(&name.text, v.as_ref(), loc);
            self.set_parent(&name.text, v);
        } else if cache && self.project_mode() {
            self.project_set_cache(&name.text, Val { text, unknown }, cache_rest, force, loc);
        } else if cache {
            // A cache entry does not replace a variable that is already set (CMP0126), and an
            // existing entry stays unless FORCE; both read the same here.
            if force || matches!(self.lookup(&name.text), Lookup::Undefined) {
                self.store(&name.text, text, unknown, loc);
            }
        } else if vals.is_empty() {
            self.record_assign(&name.text, None, loc);
            self.unset_var(&name.text);
        } else {
            self.store(&name.text, text, unknown, loc);
        }
    }

    fn cmd_list(&mut self, args: &[Arg], loc: &Loc) {
        let (Some(sub), Some(var)) = (args.first(), args.get(1)) else {
            return;
        };
        let rest = tail(args, 2);
        let (cur, cur_unknown) = match self.lookup(&var.text) {
            Lookup::Defined(v) => (v.text, v.unknown),
            Lookup::Undefined => (String::new(), None),
            Lookup::Unknown(r) => (String::new(), Some(r)),
        };
        let taint = cur_unknown.clone().or_else(|| any_unknown(rest));
        if matches!(sub.text.as_str(), "APPEND" | "PREPEND") {
            // As cmListCommand.cxx does it, on the string: the elements already there are
            // neither split nor re-joined (an escaped `\;` in them stays escaped), and a loop
            // that appends one item at a time stays linear.
            if rest.is_empty() {
                if matches!(self.lookup(&var.text), Lookup::Undefined) {
                    return;
                }
                self.store(&var.text, cur, taint, loc);
                return;
            }
            let added = texts(rest).join(";");
            let text = if cur.is_empty() {
                added
            } else if sub.text == "APPEND" {
                cur + ";" + &added
            } else {
                added + ";" + &cur
            };
            self.store(&var.text, text, taint, loc);
            return;
        }
        // A list whose value is unknown gives unknown answers: its elements, length and
        // positions are not known (the list itself, for the mutating subcommands, stays
        // unknown through `taint`).
        if let Some(reason) = &cur_unknown {
            let outs: Vec<&Arg> = match sub.text.as_str() {
                "GET" => rest.last().into_iter().collect(),
                "FIND" | "JOIN" => rest.get(1).into_iter().collect(),
                "LENGTH" => rest.first().into_iter().collect(),
                "SUBLIST" => rest.get(2).into_iter().collect(),
                "POP_BACK" | "POP_FRONT" => rest.iter().collect(),
                _ => Vec::new(),
            };
            for out in outs {
                self.set_unknown(&out.text, reason.to_string());
            }
            if matches!(
                sub.text.as_str(),
                "GET" | "FIND" | "JOIN" | "LENGTH" | "SUBLIST"
            ) {
                return;
            }
        }
        if sub.text == "FIND" && is_plain_list(&cur) {
            // The common case in a loop over a long list, without splitting it first: the
            // elements are the text between `;`s, and the search stops at the first match.
            if let (Some(value), Some(out)) = (rest.first(), rest.get(1)) {
                let i = if cur.is_empty() {
                    None
                } else {
                    cur.split(';').position(|v| v == value.text)
                };
                let i = i.map_or(-1, |i| i as i64);
                self.store(&out.text, i.to_string(), taint, loc);
            }
            return;
        }
        let vname = var.text.clone();
        let out_of_range = |ev: &mut Self| {
            ev.note(
                loc,
                format!(
                    "list({}) at line {}: index out of range; skipped",
                    sub.text, loc.line
                ),
                &[],
            );
        };
        if sub.text == "GET" {
            // `list(GET L 0 3)` on a long list, as in a loop: the elements asked for are read
            // off its start, unless a bracket or backslash there needs the full rules.
            if let Some((out, idx)) = rest.split_last() {
                let got: Option<Option<Vec<&str>>> = idx
                    .iter()
                    .map(|a| {
                        let i = a.text.trim().parse::<usize>().ok()?;
                        plain_list_item(&cur, i)
                    })
                    .collect();
                if let Some(got) = got {
                    match got {
                        Some(got) => self.store(&out.text, got.join(";"), taint, loc),
                        None => out_of_range(self),
                    }
                    return;
                }
            }
        }
        let mut items = split_items(&cur, true);
        match sub.text.as_str() {
            "INSERT" => {
                let Some(at) = rest.first() else { return };
                let len = items.len();
                let idx = if at.text.trim() == len.to_string() {
                    Some(len)
                } else {
                    list_index(&at.text, len)
                };
                let Some(idx) = idx else {
                    return out_of_range(self);
                };
                let new = tail(rest, 1).iter().map(|a| Cow::Borrowed(a.text.as_str()));
                items.splice(idx..idx, new);
                self.store(&vname, items.join(";"), taint, loc);
            }
            "REMOVE_ITEM" => {
                items.retain(|i| !rest.iter().any(|r| r.text == *i));
                self.store(&vname, items.join(";"), taint, loc);
            }
            "REMOVE_AT" => {
                let mut drop = Vec::new();
                for a in rest {
                    match list_index(&a.text, items.len()) {
                        Some(i) => drop.push(i),
                        None => return out_of_range(self),
                    }
                }
                let kept: Vec<Cow<str>> = items
                    .into_iter()
                    .enumerate()
                    .filter(|(i, _)| !drop.contains(i))
                    .map(|(_, v)| v)
                    .collect();
                self.store(&vname, kept.join(";"), taint, loc);
            }
            "REMOVE_DUPLICATES" => {
                let mut seen = std::collections::HashSet::new();
                items.retain(|i| seen.insert(i.clone()));
                self.store(&vname, items.join(";"), taint, loc);
            }
            "REVERSE" => {
                items.reverse();
                self.store(&vname, items.join(";"), taint, loc);
            }
            "SORT" => {
                items.sort();
                self.store(&vname, items.join(";"), taint, loc);
            }
            "POP_BACK" | "POP_FRONT" => {
                let outs = texts(rest);
                let n = outs.len().max(1);
                let mut popped = Vec::new();
                for _ in 0..n {
                    let v = if sub.text == "POP_BACK" {
                        items.pop()
                    } else if items.is_empty() {
                        None
                    } else {
                        Some(items.remove(0))
                    };
                    match v {
                        Some(v) => popped.push(v),
                        None => break,
                    }
                }
                for (o, v) in outs.iter().zip(popped) {
                    self.store(o, v.into_owned(), taint.clone(), loc);
                }
                self.store(&vname, items.join(";"), taint, loc);
            }
            "LENGTH" => {
                if let Some(out) = rest.first() {
                    self.store(&out.text, items.len().to_string(), taint, loc);
                }
            }
            "GET" => {
                let Some((out, idx)) = rest.split_last() else {
                    return;
                };
                let mut got = Vec::new();
                for a in idx {
                    match list_index(&a.text, items.len()).and_then(|i| items.get(i)) {
                        Some(v) => got.push(v.clone()),
                        None => return out_of_range(self),
                    }
                }
                self.store(&out.text, got.join(";"), taint, loc);
            }
            "FIND" => {
                if let (Some(value), Some(out)) = (rest.first(), rest.get(1)) {
                    let i = items
                        .iter()
                        .position(|v| *v == value.text)
                        .map_or(-1, |i| i as i64);
                    self.store(&out.text, i.to_string(), taint, loc);
                }
            }
            "JOIN" => {
                if let (Some(glue), Some(out)) = (rest.first(), rest.get(1)) {
                    match bounded_join(&items, &glue.text) {
                        Ok(v) => self.store(&out.text, v, taint, loc),
                        Err(e) => self.not_evaluated("list(JOIN)", &out.text, e, loc),
                    }
                }
            }
            "SUBLIST" => {
                if let (Some(b), Some(l), Some(out)) = (rest.first(), rest.get(1), rest.get(2)) {
                    let (Ok(b), Ok(l)) =
                        (b.text.trim().parse::<usize>(), l.text.trim().parse::<i64>())
                    else {
                        return;
                    };
                    let sub: Vec<Cow<str>> = if l < 0 {
                        items.into_iter().skip(b).collect()
                    } else {
                        items
                            .into_iter()
                            .skip(b)
                            .take(usize::try_from(l).unwrap_or(0))
                            .collect()
                    };
                    self.store(&out.text, sub.join(";"), taint, loc);
                }
            }
            "FILTER" => {
                let (Some(mode), Some(re)) = (rest.first(), rest.get(2)) else {
                    return;
                };
                match regex::compile(&re.text) {
                    Ok(re) => {
                        let include = mode.text == "INCLUDE";
                        items.retain(|i| re.is_match(i) == include);
                        self.store(&vname, items.join(";"), taint, loc);
                    }
                    Err(e) => self.not_evaluated("list(FILTER)", &vname, e, loc),
                }
            }
            "TRANSFORM" => {
                let (out, rest) = match rest.iter().position(|a| a.text == "OUTPUT_VARIABLE") {
                    Some(i) => (
                        rest.get(i + 1).map_or(vname.clone(), |a| a.text.clone()),
                        rest.get(..i).unwrap_or_default(),
                    ),
                    None => (vname.clone(), rest),
                };
                match transform(&mut items, rest) {
                    Ok(()) => self.store(&out, items.join(";"), taint, loc),
                    Err(e) => self.not_evaluated("list(TRANSFORM)", &out, e, loc),
                }
            }
            other => {
                let out = rest
                    .iter()
                    .position(|a| a.text == "OUTPUT_VARIABLE")
                    .and_then(|i| rest.get(i + 1))
                    .map_or(vname, |a| a.text.clone());
                self.note_unknown_command(&format!("list({other})"), loc);
                self.set_unknown(
                    &out,
                    format!("set by list({other}), which is not evaluated"),
                );
            }
        }
    }

    fn cmd_string(&mut self, args: &[Arg], loc: &Loc) {
        let Some(sub) = args.first() else { return };
        let taint = any_unknown(tail(args, 1));
        let a = |i: usize| args.get(i).map(|a| a.text.clone());
        match sub.text.as_str() {
            "REPLACE" => {
                let (Some(m), Some(r), Some(out)) = (a(1), a(2), a(3)) else {
                    return;
                };
                let input = concat(tail(args, 4));
                let v = if m.is_empty() {
                    input
                } else {
                    input.replace(&m, &r)
                };
                self.store(&out, v, taint, loc);
            }
            "TOLOWER" | "TOUPPER" => {
                let (Some(input), Some(out)) = (a(1), a(2)) else {
                    return;
                };
                let v = if sub.text == "TOLOWER" {
                    input.to_ascii_lowercase()
                } else {
                    input.to_ascii_uppercase()
                };
                self.store(&out, v, taint, loc);
            }
            "REGEX" => {
                let (Some(mode), Some(pattern)) = (a(1), a(2)) else {
                    return;
                };
                let (out, input) = if mode == "REPLACE" {
                    (a(4), concat(tail(args, 5)))
                } else {
                    (a(3), concat(tail(args, 4)))
                };
                let Some(out) = out else { return };
                let re = match regex::compile(&pattern) {
                    Ok(re) => re,
                    Err(e) => {
                        self.not_evaluated(&format!("string(REGEX {mode})"), &out, e, loc);
                        return;
                    }
                };
                let v = match mode.as_str() {
                    "MATCH" => {
                        let caps = re.captures(&input);
                        for i in 0..10 {
                            let m = caps
                                .as_ref()
                                .and_then(|c| c.get(i))
                                .map_or("", |m| m.as_str())
                                .to_owned();
                            if caps.is_some() {
                                self.set_var(&format!("CMAKE_MATCH_{i}"), Val::known(m));
                            } else {
                                self.unset_var(&format!("CMAKE_MATCH_{i}"));
                            }
                        }
                        caps.and_then(|c| c.get(0))
                            .map_or(String::new(), |m| m.as_str().to_owned())
                    }
                    "MATCHALL" => re
                        .find_iter(&input)
                        .map(|m| m.as_str())
                        .collect::<Vec<_>>()
                        .join(";"),
                    "REPLACE" => {
                        let repl = a(3).unwrap_or_default();
                        match regex::replace_all(&re, &pattern, &input, &repl, MAX_VALUE) {
                            Ok(v) => v,
                            Err(e) => {
                                self.not_evaluated("string(REGEX REPLACE)", &out, e, loc);
                                return;
                            }
                        }
                    }
                    other => {
                        self.note_unknown_command(&format!("string(REGEX {other})"), loc);
                        self.set_unknown(
                            &out,
                            format!("set by string(REGEX {other}), which is not evaluated"),
                        );
                        return;
                    }
                };
                self.store(&out, v, taint, loc);
            }
            "SUBSTRING" => {
                let (Some(s), Some(b), Some(l), Some(out)) = (a(1), a(2), a(3), a(4)) else {
                    return;
                };
                let (Ok(b), Ok(l)) = (b.trim().parse::<usize>(), l.trim().parse::<i64>()) else {
                    return;
                };
                let bytes = s.as_bytes();
                if b > bytes.len() {
                    self.note(
                        loc,
                        format!(
                            "string(SUBSTRING) at line {}: begin out of range; skipped",
                            loc.line
                        ),
                        &[],
                    );
                    return;
                }
                let end = if l < 0 {
                    bytes.len()
                } else {
                    b.saturating_add(usize::try_from(l).unwrap_or(0))
                        .min(bytes.len())
                };
                let v = String::from_utf8_lossy(bytes.get(b..end).unwrap_or_default()).into_owned();
                self.store(&out, v, taint, loc);
            }
            "LENGTH" => {
                if let (Some(s), Some(out)) = (a(1), a(2)) {
                    self.store(&out, s.len().to_string(), taint, loc);
                }
            }
            "STRIP" => {
                if let (Some(s), Some(out)) = (a(1), a(2)) {
                    self.store(&out, cmake_trim(&s).to_owned(), taint, loc);
                }
            }
            "APPEND" | "PREPEND" => {
                let Some(var) = a(1) else { return };
                let (cur, cur_unknown) = match self.lookup(&var) {
                    Lookup::Defined(v) => (v.text, v.unknown),
                    Lookup::Undefined => (String::new(), None),
                    Lookup::Unknown(r) => (String::new(), Some(r)),
                };
                let add = concat(tail(args, 2));
                let v = if sub.text == "APPEND" {
                    cur + &add
                } else {
                    add + &cur
                };
                self.store(&var, v, cur_unknown.or(taint), loc);
            }
            "FIND" => {
                let (Some(s), Some(needle), Some(out)) = (a(1), a(2), a(3)) else {
                    return;
                };
                let reverse = a(4).is_some_and(|r| r == "REVERSE");
                let pos = if reverse {
                    s.rfind(&needle)
                } else {
                    s.find(&needle)
                };
                self.store(&out, pos.map_or(-1, |p| p as i64).to_string(), taint, loc);
            }
            "COMPARE" => {
                let (Some(op), Some(x), Some(y), Some(out)) = (a(1), a(2), a(3), a(4)) else {
                    return;
                };
                let r = match op.as_str() {
                    "EQUAL" => x == y,
                    "NOTEQUAL" => x != y,
                    "LESS" => x < y,
                    "GREATER" => x > y,
                    "LESS_EQUAL" => x <= y,
                    "GREATER_EQUAL" => x >= y,
                    _ => return,
                };
                self.store(&out, bool_text(r).into(), taint, loc);
            }
            "CONCAT" => {
                if let Some(out) = a(1) {
                    self.store(&out, concat(tail(args, 2)), taint, loc);
                }
            }
            "JOIN" => {
                if let (Some(glue), Some(out)) = (a(1), a(2)) {
                    match bounded_join(&texts(tail(args, 3)), &glue) {
                        Ok(v) => self.store(&out, v, taint, loc),
                        Err(e) => self.not_evaluated("string(JOIN)", &out, e, loc),
                    }
                }
            }
            "ASCII" => {
                let Some((out, codes)) = tail(args, 1).split_last() else {
                    return;
                };
                // ASCII only: codes 128-255 are bytes no String holds.
                let text: Option<String> = codes
                    .iter()
                    .map(|c| {
                        c.text
                            .trim()
                            .parse::<u8>()
                            .ok()
                            .filter(u8::is_ascii)
                            .map(char::from)
                    })
                    .collect();
                match text {
                    Some(t) => self.store(&out.text, t, taint, loc),
                    None => self.set_unknown(
                        &out.text,
                        "string(ASCII) of a code outside 0-127 is not evaluated".into(),
                    ),
                }
            }
            "REPEAT" => {
                let (Some(s), Some(n), Some(out)) = (a(1), a(2), a(3)) else {
                    return;
                };
                let Ok(n) = n.trim().parse::<usize>() else {
                    return;
                };
                if s.len().saturating_mul(n) > MAX_VALUE {
                    self.note(
                        loc,
                        format!(
                            "string(REPEAT) at line {} grows beyond {} MiB; left unknown",
                            loc.line,
                            MAX_VALUE >> 20
                        ),
                        &[],
                    );
                    self.set_unknown(&out, "value too large".into());
                    return;
                }
                self.store(&out, s.repeat(n), taint, loc);
            }
            "MAKE_C_IDENTIFIER" => {
                let (Some(s), Some(out)) = (a(1), a(2)) else {
                    return;
                };
                let mut v: String = s
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect();
                if v.starts_with(|c: char| c.is_ascii_digit()) {
                    v.insert(0, '_');
                }
                self.store(&out, v, taint, loc);
            }
            "GENEX_STRIP" => {
                let (Some(s), Some(out)) = (a(1), a(2)) else {
                    return;
                };
                self.store(&out, strip_genex(&s), taint, loc);
            }
            other => {
                let out = args.last().map(|a| a.text.clone()).unwrap_or_default();
                self.note_unknown_command(&format!("string({other})"), loc);
                self.set_unknown(
                    &out,
                    format!("set by string({other}), which is not evaluated"),
                );
            }
        }
    }

    fn cmd_math(&mut self, args: &[Arg], loc: &Loc) {
        let (Some(mode), Some(out), Some(expr)) = (args.first(), args.get(1), args.get(2)) else {
            return;
        };
        if mode.text != "EXPR" {
            return;
        }
        if let Some(r) = any_unknown(tail(args, 2)) {
            self.set_var(&out.text, Val::unknown(r));
            return;
        }
        let hex = args.get(4).is_some_and(|f| f.text == "HEXADECIMAL");
        match eval_math(&expr.text) {
            Ok(v) => {
                let text = if hex {
                    if v < 0 {
                        format!("-0x{:x}", v.unsigned_abs())
                    } else {
                        format!("0x{v:x}")
                    }
                } else {
                    v.to_string()
                };
                self.set_var(&out.text, Val::known(text));
            }
            Err(e) => {
                self.note(
                    loc,
                    format!(
                        "math(EXPR \"{}\") at line {}: {e}; left unknown",
                        expr.text, loc.line
                    ),
                    &[],
                );
                self.set_unknown(
                    &out.text,
                    format!("math(EXPR) at line {} failed: {e}", loc.line),
                );
            }
        }
    }

    /// An absolute path: relative ones are taken against `base` or, like CMake, against the
    /// caller's source directory (unknown).
    fn absolute_path(&self, path: &str, base: Option<&Arg>) -> Result<String, Reason> {
        if path.starts_with('/') {
            return Ok(normalize(path));
        }
        match base {
            Some(b) => match &b.unknown {
                Some(r) => Err(r.clone()),
                None if b.text.starts_with('/') => Ok(normalize(&join(&b.text, path))),
                None => Err(format!("{path} is relative to a relative base {}", b.text).into()),
            },
            None => {
                Err(format!("{path} is relative to the calling project's source directory").into())
            }
        }
    }

    fn cmd_get_filename_component(&mut self, args: &[Arg], loc: &Loc) {
        let (Some(var), Some(file), Some(mode)) = (args.first(), args.get(1), args.get(2)) else {
            return;
        };
        let base = args
            .iter()
            .position(|a| a.text == "BASE_DIR")
            .and_then(|i| args.get(i + 1));
        let taint = file
            .unknown
            .clone()
            .or_else(|| base.and_then(|b| b.unknown.clone()));
        let p = file.text.as_str();
        let name = basename(p);
        let v = match mode.text.as_str() {
            "DIRECTORY" | "PATH" => dirname(p),
            "NAME" => name.to_owned(),
            "EXT" => name.find('.').map_or(String::new(), |i| {
                name.get(i..).unwrap_or_default().to_owned()
            }),
            "NAME_WE" => name.find('.').map_or(name.to_owned(), |i| {
                name.get(..i).unwrap_or_default().to_owned()
            }),
            "LAST_EXT" => name.rfind('.').map_or(String::new(), |i| {
                name.get(i..).unwrap_or_default().to_owned()
            }),
            "NAME_WLE" => name.rfind('.').map_or(name.to_owned(), |i| {
                name.get(..i).unwrap_or_default().to_owned()
            }),
            "ABSOLUTE" | "REALPATH" => {
                if let Some(r) = taint {
                    self.set_var(&var.text, Val::unknown(r));
                    return;
                }
                match self.absolute_path(p, base) {
                    Ok(abs) if mode.text == "REALPATH" => self.s.fs.realpath(&abs).unwrap_or(abs),
                    Ok(abs) => abs,
                    Err(r) => {
                        self.set_var(&var.text, Val::unknown(r));
                        return;
                    }
                }
            }
            "PROGRAM" => {
                self.set_unknown(&var.text, format!("get_filename_component(PROGRAM) at line {} searches the configuring machine", loc.line));
                return;
            }
            other => {
                self.note_unknown_command(&format!("get_filename_component({other})"), loc);
                self.set_unknown(
                    &var.text,
                    format!("get_filename_component({other}) is not evaluated"),
                );
                return;
            }
        };
        self.store(&var.text, v, taint, loc);
    }

    fn cmd_cmake_path(&mut self, args: &[Arg], loc: &Loc) {
        let Some(sub) = args.first() else { return };
        let a = |i: usize| args.get(i).map(|a| a.text.clone());
        let output = args
            .iter()
            .position(|x| x.text == "OUTPUT_VARIABLE")
            .and_then(|i| a(i + 1));
        let var_value = |ev: &Self, name: &str| -> (String, Option<Reason>) {
            match ev.lookup(name) {
                Lookup::Defined(v) => (v.text, v.unknown),
                Lookup::Undefined => (String::new(), None),
                Lookup::Unknown(r) => (String::new(), Some(r)),
            }
        };
        match sub.text.as_str() {
            "SET" => {
                let Some(var) = a(1) else { return };
                let normalize_it = a(2).is_some_and(|x| x == "NORMALIZE");
                let input = args.get(if normalize_it { 3 } else { 2 });
                let Some(input) = input else { return };
                let v = if normalize_it {
                    normalize(&input.text)
                } else {
                    input.text.clone()
                };
                self.store(&var, v, input.unknown.clone(), loc);
            }
            "GET" => {
                let (Some(var), Some(what)) = (a(1), a(2)) else {
                    return;
                };
                let last_only = a(3).is_some_and(|x| x == "LAST_ONLY");
                let Some(out) = a(if last_only { 4 } else { 3 }) else {
                    return;
                };
                let (p, taint) = var_value(self, &var);
                let file = basename(&p);
                let ext_pos = |s: &str| -> Option<usize> {
                    if s == "." || s == ".." {
                        return None;
                    }
                    let start = usize::from(s.starts_with('.'));
                    let t = s.get(start..)?;
                    let i = if last_only { t.rfind('.') } else { t.find('.') }?;
                    Some(i + start)
                };
                let v = match what.as_str() {
                    "ROOT_NAME" => String::new(),
                    "ROOT_DIRECTORY" | "ROOT_PATH" => {
                        if p.starts_with('/') {
                            "/".into()
                        } else {
                            String::new()
                        }
                    }
                    "FILENAME" => file.to_owned(),
                    "EXTENSION" => ext_pos(file)
                        .and_then(|i| file.get(i..))
                        .unwrap_or_default()
                        .to_owned(),
                    "STEM" => ext_pos(file)
                        .and_then(|i| file.get(..i))
                        .unwrap_or(file)
                        .to_owned(),
                    "RELATIVE_PART" => p.trim_start_matches('/').to_owned(),
                    "PARENT_PATH" => match p.rfind('/') {
                        Some(0) => "/".into(),
                        Some(i) => p.get(..i).unwrap_or_default().to_owned(),
                        None => String::new(),
                    },
                    _ => {
                        self.set_unknown(&out, format!("cmake_path(GET {what}) is not evaluated"));
                        return;
                    }
                };
                self.store(&out, v, taint, loc);
            }
            "APPEND" => {
                let Some(var) = a(1) else { return };
                let (mut p, mut taint) = var_value(self, &var);
                for x in args
                    .iter()
                    .skip(2)
                    .take_while(|x| x.text != "OUTPUT_VARIABLE")
                {
                    taint = taint.or_else(|| x.unknown.clone());
                    p = if x.text.starts_with('/') || p.is_empty() {
                        x.text.clone()
                    } else {
                        join(&p, &x.text)
                    };
                }
                let out = output.unwrap_or(var);
                self.store(&out, p, taint, loc);
            }
            "NORMAL_PATH" => {
                let Some(var) = a(1) else { return };
                let (p, taint) = var_value(self, &var);
                let out = output.unwrap_or(var);
                self.store(&out, normalize(&p), taint, loc);
            }
            "ABSOLUTE_PATH" => {
                let Some(var) = a(1) else { return };
                let (p, taint) = var_value(self, &var);
                let base = args
                    .iter()
                    .position(|x| x.text == "BASE_DIRECTORY")
                    .and_then(|i| args.get(i + 1));
                let out = output.unwrap_or(var);
                match (taint, self.absolute_path(&p, base)) {
                    (Some(r), _) | (None, Err(r)) => self.set_var(&out, Val::unknown(r)),
                    (None, Ok(abs)) => self.store(&out, abs, None, loc),
                }
            }
            "IS_ABSOLUTE" => {
                let (Some(var), Some(out)) = (a(1), a(2)) else {
                    return;
                };
                let (p, taint) = var_value(self, &var);
                self.store(&out, bool_text(p.starts_with('/')).into(), taint, loc);
            }
            other => {
                let out = output
                    .or_else(|| args.last().map(|x| x.text.clone()))
                    .unwrap_or_default();
                self.note_unknown_command(&format!("cmake_path({other})"), loc);
                self.set_unknown(&out, format!("cmake_path({other}) is not evaluated"));
            }
        }
    }

    fn cmd_file(&mut self, args: &[Arg], loc: &Loc) {
        let Some(sub) = args.first() else { return };
        let a = |i: usize| args.get(i).map(|a| a.text.clone());
        match sub.text.as_str() {
            "GLOB" | "GLOB_RECURSE" => {
                let Some(var) = a(1) else { return };
                let recurse = sub.text == "GLOB_RECURSE";
                let mut list_dirs = !recurse;
                let mut relative: Option<String> = None;
                let mut follow = false;
                let mut globs = Vec::new();
                let mut it = tail(args, 2).iter();
                while let Some(x) = it.next() {
                    match x.text.as_str() {
                        "LIST_DIRECTORIES" => {
                            list_dirs = it.next().is_some_and(|v| super::cond::is_on(&v.text))
                        }
                        "RELATIVE" => relative = it.next().map(|v| v.text.clone()),
                        "CONFIGURE_DEPENDS" => {}
                        "FOLLOW_SYMLINKS" => follow = true,
                        _ => globs.push(x.clone()),
                    }
                }
                if let Some(r) = any_unknown(tail(args, 2)) {
                    self.set_var(&var, Val::unknown(r));
                    return;
                }
                let mut out = Vec::new();
                let base = self.project_source_dir();
                for g in &mut globs {
                    if let (false, Some(b)) = (g.text.starts_with('/'), base.as_ref()) {
                        // CMake reads a relative pattern against the current source directory
                        // and lists its matches as absolute paths.
                        g.text = join(b, &g.text);
                    }
                    if !g.text.starts_with('/') {
                        self.set_unknown(&var, format!("file({}) of {} is relative to the calling project's source directory", sub.text, g.text));
                        return;
                    }
                    out.extend(paths::glob(&self.s.fs, &g.text, recurse, list_dirs, follow));
                }
                out.sort();
                out.dedup();
                if let Some(rel) = relative {
                    out = out.iter().map(|p| relative_path(&rel, p)).collect();
                }
                self.store(&var, out.join(";"), None, loc);
            }
            "TO_CMAKE_PATH" | "TO_NATIVE_PATH" => {
                let (Some(p), Some(var)) = (args.get(1), a(2)) else {
                    return;
                };
                let v = if sub.text == "TO_CMAKE_PATH" {
                    p.text.replace('\\', "/").replace(':', ";")
                } else {
                    p.text.clone()
                };
                self.store(&var, v, p.unknown.clone(), loc);
            }
            "REAL_PATH" => {
                let (Some(p), Some(var)) = (args.get(1), a(2)) else {
                    return;
                };
                let base = args
                    .iter()
                    .position(|x| x.text == "BASE_DIRECTORY")
                    .and_then(|i| args.get(i + 1));
                match (p.unknown.clone(), self.absolute_path(&p.text, base)) {
                    (Some(r), _) | (None, Err(r)) => self.set_var(&var, Val::unknown(r)),
                    (None, Ok(abs)) => {
                        let v = self.s.fs.realpath(&abs).unwrap_or(abs);
                        self.store(&var, v, None, loc);
                    }
                }
            }
            "RELATIVE_PATH" => {
                let (Some(var), Some(dir), Some(file)) = (a(1), args.get(2), args.get(3)) else {
                    return;
                };
                let taint = dir.unknown.clone().or_else(|| file.unknown.clone());
                self.store(&var, relative_path(&dir.text, &file.text), taint, loc);
            }
            "READ" | "STRINGS" if self.project_mode() => {
                let (Some(p), Some(var)) = (args.get(1), a(2)) else {
                    return;
                };
                if let Some(r) = &p.unknown {
                    self.set_var(&var, Val::unknown(r.clone()));
                    return;
                }
                match self.project_read(&p.text) {
                    Ok(text) if sub.text == "READ" => self.store(&var, text, None, loc),
                    Ok(text) => {
                        // file(STRINGS): lines, without options (REGEX, LIMIT_COUNT, …) honoured
                        // only when none is given.
                        if args.len() > 3 {
                            self.set_unknown(
                                &var,
                                format!(
                                    "file(STRINGS) options at line {} are not evaluated",
                                    loc.line
                                ),
                            );
                        } else {
                            let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
                            self.store(&var, lines.join(";"), None, loc);
                        }
                    }
                    Err(e) => self.set_unknown(&var, e),
                }
            }
            "READ" | "STRINGS" | "TIMESTAMP" | "SIZE" | "READ_SYMLINK" | "MD5" | "SHA1"
            | "SHA224" | "SHA256" | "SHA384" | "SHA512" | "SHA3_224" | "SHA3_256" | "SHA3_384"
            | "SHA3_512" => {
                if let Some(var) = a(2) {
                    self.set_unknown(
                        &var,
                        format!(
                            "{var} is set by file({}) at line {}, which is not evaluated",
                            sub.text, loc.line
                        ),
                    );
                }
            }
            // WRITE, APPEND, MAKE_DIRECTORY, REMOVE, COPY, DOWNLOAD, …: never performed.
            _ => {}
        }
    }

    fn cmd_add_target(&mut self, executable: bool, args: &[Arg], loc: &Loc) {
        let Some(name) = args.first() else { return };
        if name.unknown.is_some() {
            self.note(
                loc,
                format!(
                    "target with an unknown name at line {} was skipped",
                    loc.line
                ),
                &[],
            );
            return;
        }
        let rest = texts(tail(args, 1));
        if self.targets.contains_key(&name.text) {
            self.note(
                loc,
                format!(
                    "target {} is created again at line {}; CMake stops here",
                    name.text, loc.line
                ),
                &[("target", name.text.clone().into())],
            );
            return;
        }
        if let Some(i) = rest.iter().position(|r| r == "ALIAS") {
            let of = rest.get(i + 1).cloned().unwrap_or_default();
            let kind = self
                .targets
                .get(&of)
                .map(|t| t.kind.clone())
                .unwrap_or_default();
            self.targets.insert(
                name.text.clone(),
                Target {
                    kind,
                    alias_of: Some(of),
                    ..Target::default()
                },
            );
            return;
        }
        let kind = if executable {
            "EXECUTABLE".to_owned()
        } else {
            rest.iter()
                .find_map(|r| match r.as_str() {
                    "STATIC" | "SHARED" | "MODULE" | "UNKNOWN" | "OBJECT" | "INTERFACE" => {
                        Some(format!("{r}_LIBRARY"))
                    }
                    _ => None,
                })
                .unwrap_or_else(|| "STATIC_LIBRARY".into())
        };
        let imported = rest.iter().any(|r| r == "IMPORTED");
        self.targets.insert(
            name.text.clone(),
            Target {
                kind,
                imported,
                ..Target::default()
            },
        );
    }

    /// The real target behind an alias.
    fn target_name(&self, name: &str) -> Option<String> {
        let t = self.targets.get(name)?;
        Some(t.alias_of.clone().unwrap_or_else(|| name.to_owned()))
    }

    /// A target's property: `None` if the target is unknown, `Some(None)` if it is not set.
    fn target_property(&self, target: &str, prop: &str) -> Option<Option<Val>> {
        let real = self.target_name(target)?;
        let t = self.targets.get(&real)?;
        Some(match prop {
            "TYPE" => Some(Val::known(t.kind.clone())),
            "IMPORTED" => Some(Val::known(if t.imported { "TRUE" } else { "FALSE" })),
            "NAME" => Some(Val::known(real)),
            "ALIASED_TARGET" => t.alias_of.clone().map(Val::known),
            _ => t.props.get(prop).cloned(),
        })
    }

    /// Notes once per file and target that properties of an undefined target are not checked.
    fn unknown_target(&mut self, command: &str, target: &str, loc: &Loc) {
        if self
            .s
            .noted_targets
            .insert((loc.file.host.clone(), target.to_owned()))
        {
            self.note(
                loc,
                format!("{command}() at line {} names target {target}, which is not defined here (CMake stops with an error); its properties were not checked", loc.line),
                &[("target", target.into())],
            );
        }
    }

    fn set_prop(&mut self, target: &str, prop: &str, value: Val, mode: Append, loc: &Loc) {
        let Some(real) = self.target_name(target) else {
            return;
        };
        let Some(t) = self.targets.get_mut(&real) else {
            return;
        };
        let new = match (mode, t.props.get(prop)) {
            (Append::List, Some(old)) if !old.text.is_empty() => Val {
                text: format!("{};{}", old.text, value.text),
                unknown: old.unknown.clone().or_else(|| value.unknown.clone()),
            },
            (Append::String, Some(old)) => Val {
                text: format!("{}{}", old.text, value.text),
                unknown: old.unknown.clone().or_else(|| value.unknown.clone()),
            },
            _ => value.clone(),
        };
        if new.text.len() > MAX_VALUE {
            return;
        }
        t.props.insert(prop.to_owned(), new);
        self.check_property(target, prop, &value, loc);
    }

    fn cmd_set_target_properties(&mut self, args: &[Arg], loc: &Loc) {
        let Some(pos) = args.iter().position(|a| a.text == "PROPERTIES") else {
            return;
        };
        let pairs = tail(args, pos + 1);
        for t in args.get(..pos).unwrap_or_default() {
            if self.target_name(&t.text).is_none() {
                self.unknown_target("set_target_properties", &t.text, loc);
                continue;
            }
            for pair in pairs.chunks(2) {
                if let [k, v] = pair {
                    self.set_prop(
                        &t.text,
                        &k.text,
                        Val {
                            text: v.text.clone(),
                            unknown: v.unknown.clone(),
                        },
                        Append::No,
                        loc,
                    );
                }
            }
        }
    }

    fn cmd_set_property(&mut self, args: &[Arg], loc: &Loc) {
        if args.first().is_none_or(|a| a.text != "TARGET") {
            return;
        }
        let mut targets = Vec::new();
        let mut mode = Append::No;
        let mut i = 1;
        while let Some(a) = args.get(i) {
            match a.text.as_str() {
                "APPEND" => mode = Append::List,
                "APPEND_STRING" => mode = Append::String,
                "PROPERTY" => break,
                _ => targets.push(a.text.clone()),
            }
            i += 1;
        }
        let Some(prop) = args.get(i + 1) else { return };
        let values = tail(args, i + 2);
        let value = Val {
            text: values
                .iter()
                .map(|a| a.text.as_str())
                .collect::<Vec<_>>()
                .join(";"),
            unknown: any_unknown(values),
        };
        for t in targets {
            if self.target_name(&t).is_none() {
                self.unknown_target("set_property", &t, loc);
                continue;
            }
            self.set_prop(&t, &prop.text, value.clone(), mode, loc);
        }
    }

    fn cmd_get_property(&mut self, args: &[Arg]) {
        let Some(var) = args.first() else { return };
        let scope = args.get(1).map(|a| a.text.as_str()).unwrap_or_default();
        let prop_pos = args.iter().position(|a| a.text == "PROPERTY");
        let prop = prop_pos
            .and_then(|i| args.get(i + 1))
            .map(|a| a.text.clone());
        let flag = prop_pos
            .and_then(|i| args.get(i + 2))
            .map(|a| a.text.clone());
        if scope == "TARGET" {
            if let (Some(t), Some(p)) = (args.get(2), prop) {
                match (self.target_property(&t.text, &p), flag.as_deref()) {
                    (Some(v), Some("SET")) => {
                        self.set_var(&var.text, Val::known(bool_text(v.is_some())))
                    }
                    (Some(Some(v)), None) => self.set_var(&var.text, v),
                    (Some(None), None) => self.unset_var(&var.text),
                    _ => self.set_unknown(
                        &var.text,
                        format!("property {p} of target {} is not known here", t.text),
                    ),
                }
                return;
            }
        }
        self.set_unknown(&var.text, format!("get_property({scope}) is not evaluated"));
    }

    fn cmd_target_usage(&mut self, name: &str, args: &[Arg], loc: &Loc) {
        let Some(t) = args.first() else { return };
        if self.target_name(&t.text).is_none() {
            self.unknown_target(name, &t.text, loc);
            return;
        }
        let prop = match name {
            "target_link_libraries" => "INTERFACE_LINK_LIBRARIES",
            "target_include_directories" => "INTERFACE_INCLUDE_DIRECTORIES",
            _ => "INTERFACE_LINK_DIRECTORIES",
        };
        let mut public = name == "target_link_libraries";
        let mut items = Vec::new();
        for a in tail(args, 1) {
            match a.text.as_str() {
                "INTERFACE" | "PUBLIC" | "LINK_PUBLIC" | "LINK_INTERFACE_LIBRARIES" => {
                    public = true
                }
                "PRIVATE" | "LINK_PRIVATE" => public = false,
                "SYSTEM" | "BEFORE" | "AFTER" | "debug" | "optimized" | "general" => {}
                _ if public => items.push(a.clone()),
                _ => {}
            }
        }
        if items.is_empty() {
            return;
        }
        let value = Val {
            text: items
                .iter()
                .map(|a| a.text.as_str())
                .collect::<Vec<_>>()
                .join(";"),
            unknown: any_unknown(&items),
        };
        self.set_prop(&t.text, prop, value, Append::List, loc);
    }

    fn cmd_parse_arguments(&mut self, args: &[Arg], loc: &Loc) {
        let (prefix, opts, one, multi, input): (String, &Arg, &Arg, &Arg, Vec<Arg>) =
            if args.first().is_some_and(|a| a.text == "PARSE_ARGV") {
                let (Some(n), Some(p), Some(o), Some(s), Some(m)) = (
                    args.get(1),
                    args.get(2),
                    args.get(3),
                    args.get(4),
                    args.get(5),
                ) else {
                    return;
                };
                let Ok(start) = n.text.trim().parse::<usize>() else {
                    return;
                };
                let argc = self
                    .get_text("ARGC")
                    .and_then(|c| c.parse::<usize>().ok())
                    .unwrap_or(0);
                let input = (start..argc)
                    .map(|i| match self.lookup(&format!("ARGV{i}")) {
                        Lookup::Defined(v) => Arg {
                            text: v.text,
                            quoted: true,
                            unknown: v.unknown,
                        },
                        _ => Arg {
                            text: String::new(),
                            quoted: true,
                            unknown: None,
                        },
                    })
                    .collect();
                (p.text.clone(), o, s, m, input)
            } else {
                let (Some(p), Some(o), Some(s), Some(m)) =
                    (args.first(), args.get(1), args.get(2), args.get(3))
                else {
                    return;
                };
                (p.text.clone(), o, s, m, tail(args, 4).to_vec())
            };
        let opts = split_list(&opts.text, false);
        let one = split_list(&one.text, false);
        let multi = split_list(&multi.text, false);
        let mut values: std::collections::HashMap<String, Vec<Arg>> =
            std::collections::HashMap::new();
        let mut seen_opts = std::collections::HashSet::new();
        let mut unparsed = Vec::new();
        let mut missing = Vec::new();
        let mut current: Option<(String, bool)> = None;
        for a in input {
            if opts.contains(&a.text) {
                seen_opts.insert(a.text.clone());
                current = None;
            } else if one.contains(&a.text) || multi.contains(&a.text) {
                if let Some((k, _)) = &current {
                    if values.get(k).is_none_or(Vec::is_empty) {
                        missing.push(k.clone());
                    }
                }
                values.insert(a.text.clone(), Vec::new());
                current = Some((a.text.clone(), one.contains(&a.text)));
            } else {
                match &mut current {
                    Some((k, single)) => {
                        let v = values.entry(k.clone()).or_default();
                        v.push(a);
                        if *single {
                            current = None;
                        }
                    }
                    None => unparsed.push(a),
                }
            }
        }
        if let Some((k, _)) = current {
            if values.get(&k).is_none_or(Vec::is_empty) {
                missing.push(k);
            }
        }
        for o in &opts {
            self.set_var(
                &format!("{prefix}_{o}"),
                Val::known(if seen_opts.contains(o) {
                    "TRUE"
                } else {
                    "FALSE"
                }),
            );
        }
        for k in one.iter().chain(&multi) {
            let name = format!("{prefix}_{k}");
            match values.get(k).filter(|v| !v.is_empty()) {
                Some(v) => {
                    let text = v
                        .iter()
                        .map(|a| a.text.as_str())
                        .collect::<Vec<_>>()
                        .join(";");
                    self.store(&name, text, any_unknown(v), loc);
                }
                None => self.unset_var(&name),
            }
        }
        let name = format!("{prefix}_UNPARSED_ARGUMENTS");
        if unparsed.is_empty() {
            self.unset_var(&name);
        } else {
            let text = unparsed
                .iter()
                .map(|a| a.text.as_str())
                .collect::<Vec<_>>()
                .join(";");
            self.store(&name, text, any_unknown(&unparsed), loc);
        }
        let name = format!("{prefix}_KEYWORDS_MISSING_VALUES");
        if missing.is_empty() {
            self.unset_var(&name);
        } else {
            self.set_var(&name, Val::known(missing.join(";")));
        }
    }

    fn cmd_cmake_language(&mut self, args: Vec<Arg>, loc: &Loc) -> Flow {
        let mode = args.first().map(|a| a.text.clone()).unwrap_or_default();
        match mode.as_str() {
            "CALL" => {
                let Some(cmd) = args.get(1) else {
                    return Flow::Next;
                };
                if cmd.unknown.is_some() {
                    self.note(
                        loc,
                        format!(
                            "cmake_language(CALL) at line {} of an unknown command was skipped",
                            loc.line
                        ),
                        &[],
                    );
                    return Flow::Next;
                }
                let name = cmd.text.to_ascii_lowercase();
                let rest = tail(&args, 2).to_vec();
                if let Some(def) = self.defs.get(&name).cloned() {
                    return self.call(&def, rest, loc);
                }
                self.builtin(&name, rest, loc)
            }
            "EVAL" => {
                if let Some(r) = any_unknown(&args) {
                    self.note(
                        loc,
                        format!(
                            "cmake_language(EVAL) at line {} of unknown code ({r}) was skipped",
                            loc.line
                        ),
                        &[],
                    );
                    return Flow::Next;
                }
                let code = texts(tail(&args, 2)).join(" ");
                match super::lexer::parse(code.as_bytes()) {
                    // Counted as a level of nesting: code may evaluate itself.
                    Ok(mut nodes) => {
                        super::lexer::set_lines(&mut nodes, loc.line);
                        self.nested(&nodes, loc)
                    }
                    Err(e) => {
                        self.note(
                            loc,
                            format!("cmake_language(EVAL) at line {}: {e}", loc.line),
                            &[],
                        );
                        Flow::Next
                    }
                }
            }
            _ => {
                self.note_unknown_command(&format!("cmake_language({mode})"), loc);
                Flow::Next
            }
        }
    }
}

#[derive(Clone, Copy)]
enum Append {
    No,
    List,
    String,
}

/// `file(RELATIVE_PATH)`: `to` relative to the directory `from`, lexically.
fn relative_path(from: &str, to: &str) -> String {
    let f = normalize(from);
    let t = normalize(to);
    let fp: Vec<&str> = f.split('/').filter(|s| !s.is_empty()).collect();
    let tp: Vec<&str> = t.split('/').filter(|s| !s.is_empty()).collect();
    let common = fp.iter().zip(&tp).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = std::iter::repeat_n("..", fp.len().saturating_sub(common)).collect();
    parts.extend(tp.iter().skip(common));
    parts.join("/")
}

/// `string(GENEX_STRIP)`: removes every `$<…>`.
fn strip_genex(s: &str) -> String {
    let mut out = String::new();
    let mut depth = 0u32;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek() == Some(&'<') {
            chars.next();
            depth += 1;
        } else if c == '>' && depth > 0 {
            depth -= 1;
        } else if depth == 0 {
            out.push(c);
        }
    }
    out
}

/// `math(EXPR)`: 64-bit integers with C's operators and precedence.
fn eval_math(expr: &str) -> Result<i64, String> {
    struct P<'a> {
        s: &'a [u8],
        i: usize,
        depth: u32,
    }
    impl P<'_> {
        fn ws(&mut self) {
            while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
                self.i += 1;
            }
        }
        fn eat(&mut self, tok: &str) -> bool {
            self.ws();
            if self
                .s
                .get(self.i..)
                .is_some_and(|r| r.starts_with(tok.as_bytes()))
            {
                self.i += tok.len();
                true
            } else {
                false
            }
        }
        fn binary(&mut self, level: usize) -> Result<i64, String> {
            const LEVELS: &[&[&str]] = &[
                &["|"],
                &["^"],
                &["&"],
                &["<<", ">>"],
                &["+", "-"],
                &["*", "/", "%"],
            ];
            let Some(ops) = LEVELS.get(level) else {
                return self.unary();
            };
            let mut v = self.binary(level + 1)?;
            'outer: loop {
                for op in *ops {
                    if self.eat(op) {
                        let r = self.binary(level + 1)?;
                        v = match *op {
                            "|" => v | r,
                            "^" => v ^ r,
                            "&" => v & r,
                            "<<" => v.wrapping_shl(u32::try_from(r).unwrap_or(64).min(63)),
                            ">>" => v.wrapping_shr(u32::try_from(r).unwrap_or(64).min(63)),
                            "+" => v.wrapping_add(r),
                            "-" => v.wrapping_sub(r),
                            "*" => v.wrapping_mul(r),
                            "/" => v.checked_div(r).ok_or("division by zero")?,
                            _ => v.checked_rem(r).ok_or("division by zero")?,
                        };
                        continue 'outer;
                    }
                }
                return Ok(v);
            }
        }
        fn unary(&mut self) -> Result<i64, String> {
            self.depth += 1;
            if self.depth > 64 {
                return Err("expression nested too deeply".into());
            }
            let v = if self.eat("-") {
                self.unary()?.wrapping_neg()
            } else if self.eat("+") {
                self.unary()?
            } else if self.eat("~") {
                !self.unary()?
            } else if self.eat("(") {
                let v = self.binary(0)?;
                if !self.eat(")") {
                    return Err("missing )".into());
                }
                v
            } else {
                self.ws();
                let start = self.i;
                let hex = self.eat("0x") || self.eat("0X");
                let digits_start = self.i;
                while self.s.get(self.i).is_some_and(|c| {
                    if hex {
                        c.is_ascii_hexdigit()
                    } else {
                        c.is_ascii_digit()
                    }
                }) {
                    self.i += 1;
                }
                let digits =
                    std::str::from_utf8(self.s.get(digits_start..self.i).unwrap_or_default())
                        .unwrap_or_default();
                if digits.is_empty() {
                    return Err(format!("expected a number at offset {start}"));
                }
                let radix = if hex { 16 } else { 10 };
                u64::from_str_radix(digits, radix)
                    .map(|u| u as i64)
                    .map_err(|e| e.to_string())?
            };
            self.depth -= 1;
            Ok(v)
        }
    }
    let mut p = P {
        s: expr.as_bytes(),
        i: 0,
        depth: 0,
    };
    let v = p.binary(0)?;
    p.ws();
    if p.i != expr.len() {
        return Err(format!("unexpected text at offset {}", p.i));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn math() {
        assert_eq!(eval_math("1 + 2 * 3"), Ok(7));
        assert_eq!(eval_math("(1 + 2) * 3"), Ok(9));
        assert_eq!(eval_math("0x10 | 1"), Ok(17));
        assert_eq!(eval_math("-5 / 2"), Ok(-2));
        assert_eq!(eval_math("1 << 4 >> 2"), Ok(4));
        assert!(eval_math("1 / 0").is_err());
        assert!(eval_math("1 +").is_err());
        assert!(eval_math(&"(".repeat(10_000)).is_err());
    }

    #[test]
    fn relative() {
        assert_eq!(relative_path("/a/b", "/a/c/d"), "../c/d");
        assert_eq!(relative_path("/a", "/a/x"), "x");
    }

    #[test]
    fn genex_strip() {
        assert_eq!(strip_genex("a$<$<CONFIG:Debug>:x>b"), "ab");
    }
}
