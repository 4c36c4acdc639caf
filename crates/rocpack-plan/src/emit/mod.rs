//! Emitters: a [`Plan`] written for a build tool.
//!
//! | format | stdout | files (`-o DIR`) |
//! |---|---|---|
//! | `cmake` | per component, one line of `-DNAME:TYPE=VALUE` arguments | `<Component>.cmake`, initial caches for `cmake -C` |
//! | `spack` | `spack.yaml`: an environment | `spack.yaml` |
//! | `gentoo` | `make.conf` fragment and `package.use` lines | `make.conf`, `package.use/rocm` |
//! | `nix` | an overlay overriding `rocmPackages` | `rocm-overlay.nix` |
//! | `therock` | CMake arguments for TheRock | `therock.cmake`, an initial cache |
//!
//! What a tool can express besides CMake settings (variants, USE flags, derivation arguments,
//! THEROCK_* switches) is knowledge-base data (`data/emitters.toml`). Whatever a tool cannot
//! express is written as a comment, never dropped silently: a skipped component, an option
//! without a knob, a target the tool has no value for. Output depends only on the plan and the
//! knowledge base, so it is stable for snapshot tests.
//!
//! ```
//! use rocpack_plan::{Knowledge, Request, Tool, emit::emit};
//! let kb = Knowledge::embedded().map_err(|e| e.to_string())?;
//! let request = Request { gpus: vec!["gfx1030".into()], ..Default::default() };
//! let plan = rocpack_plan::plan(kb, &request, "6.4", Tool::Cmake)?;
//! let out = emit(kb, &plan, Tool::Cmake);
//! assert!(out.stdout.contains("-DAMDGPU_TARGETS:STRING=gfx1030"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod cmake;
mod gentoo;
mod nix;
mod spack;
mod therock;

use std::fmt::Write as _;

use crate::kb::Knowledge;
use crate::model::{ComponentPlan, FindingStatus, Plan, Setting, SettingKind, Tool};

/// What an emitter produces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Emission {
    /// What `rocpack plan --emit` prints.
    pub stdout: String,
    /// `(file name relative to the -o directory, contents)`, in a stable order; a name may contain
    /// `/` (`package.use/rocm`).
    pub files: Vec<(String, String)>,
}

/// Writes `plan` for a build tool.
pub fn emit(kb: &Knowledge, plan: &Plan, tool: Tool) -> Emission {
    match tool {
        Tool::Cmake => cmake::emit(plan),
        Tool::Spack => spack::emit(kb, plan),
        Tool::Gentoo => gentoo::emit(kb, plan),
        Tool::Nix => nix::emit(kb, plan),
        Tool::Therock => therock::emit(kb, plan),
    }
}

/// What a tool does with one of the plan's option settings.
enum OptionUse<'a> {
    /// Pass it through this knob (variant, USE flag, derivation argument), on or off.
    Switch(&'a str, bool),
    /// It cannot be passed: say why in a comment.
    Note(String),
}

/// A setting the recipe has no knob for: whether to pass it around the recipe (`how`, e.g.
/// "appended to cmakeFlags"), and the comment saying so. It is passed when the plan pins it
/// (a remedy, `--set`, a tool rule: a recipe may pass another value) or it is not the release's
/// default; otherwise it is left to the recipe (`builder`). `none` names the missing knob.
fn knobless(
    kb: &Knowledge,
    plan: &Plan,
    c: &ComponentPlan,
    s: &Setting,
    none: &str,
    builder: &str,
    how: &str,
) -> (bool, String) {
    let default = kb
        .releases
        .get(&plan.release)
        .and_then(|r| r.components.get(&c.name))
        .and_then(|rc| rc.option_default(&s.name));
    if default == Some(s.value.as_str()) && !s.origin.pins() {
        (
            false,
            format!(
                "{}={}: {none}; the release's default, left to the {builder}",
                s.name, s.value
            ),
        )
    } else {
        (true, format!("{}={}: {none}; {how}", s.name, s.value))
    }
}

/// How the tool's knowledge (`emitters.toml`) turns `s` into a switch or a comment. `builder`
/// names what fixes values itself ("recipe", "ebuild", "derivation"), `knob` how a knob is
/// spelled in a comment, `none` what there is none of ("no variant").
fn option_use<'a>(
    o: &'a crate::kb::ToolOption,
    s: &Setting,
    builder: &str,
    knob: impl Fn(&str) -> String,
    none: &str,
) -> OptionUse<'a> {
    if let Some(k) = &o.knob {
        return match bool_value(s) {
            Some(b) => OptionUse::Switch(k, b),
            None => OptionUse::Note(format!(
                "{}={}: not a boolean, so not passed as {}",
                s.name,
                s.value,
                knob(k)
            )),
        };
    }
    if let Some(fixed) = &o.fixed {
        return OptionUse::Note(fixed_note(&s.name, &s.value, fixed, builder));
    }
    let why = o.note.clone().unwrap_or_else(|| none.to_owned());
    OptionUse::Note(format!("{}={}: {why}", s.name, s.value))
}

/// "X=Y: the recipe always passes X=Z (NOT as planned)".
fn fixed_note(name: &str, value: &str, fixed: &str, builder: &str) -> String {
    let agree = agreement(fixed, value);
    format!("{name}={value}: the {builder} always passes {name}={fixed} ({agree})")
}

/// Whether a value a tool fixes itself is the planned one.
fn agreement(fixed: &str, planned: &str) -> &'static str {
    if fixed.eq_ignore_ascii_case(planned) {
        "as planned"
    } else {
        "NOT as planned"
    }
}

/// A boolean setting's value by CMake's rules (`cmIsOn`/`cmIsOff`, rocpack_cmake):
/// `Some(true)` for ON, `Some(false)` for OFF; `None` for an empty value or any other text.
fn bool_value(s: &Setting) -> Option<bool> {
    if rocpack_cmake::is_on(&s.value) {
        Some(true)
    } else if !s.value.is_empty() && rocpack_cmake::is_off(&s.value) {
        Some(false)
    } else {
        None
    }
}

use crate::model::{processor, processors};

/// Text made safe for a one-line `#` comment.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Why a component is not built, for a comment.
fn skip_reason(c: &ComponentPlan) -> String {
    one_line(c.skip_reason.as_deref().unwrap_or("no reason recorded"))
}

/// Appends `# line` for each line.
fn push_comments(out: &mut String, indent: &str, lines: &[String]) {
    for l in lines {
        let _ = writeln!(out, "{indent}# {}", one_line(l));
    }
}

/// The header every output starts with: who made it, for which release and targets, and the
/// plan's open errors.
fn header(plan: &Plan, tool: Tool) -> Vec<String> {
    let mut lines = vec![format!(
        "Generated by `rocpack plan` for {}: ROCm {} ({})",
        tool.as_str(),
        plan.release,
        plan.point_releases.join(", ")
    )];
    lines.push(format!("Requested targets: {}", plan.targets.join(" ")));
    for f in &plan.families {
        lines.push(format!(
            "Family {} = {} (defined by {})",
            f.family,
            f.targets.join(" "),
            f.defined_by
        ));
    }
    lines.push(format!(
        "Components: {} planned, {} built, {} not built",
        plan.summary.components, plan.summary.built, plan.summary.skipped
    ));
    if plan.tool != tool {
        lines.push(format!(
            "WARNING: the plan was made for {}, not {}; pitfalls and TheRock's rules depend on the tool (plan again for {})",
            plan.tool.as_str(),
            tool.as_str(),
            tool.as_str()
        ));
    }
    if plan.summary.errors > 0 {
        lines.push(format!(
            "OPEN ERRORS: {}: this plan cannot be built as asked (see `rocpack plan`):",
            plan.summary.errors
        ));
        for f in plan
            .findings
            .iter()
            .filter(|f| f.status == FindingStatus::Open && f.severity == crate::kb::Severity::Error)
        {
            lines.push(format!("  {} [{}]", f.id, f.component));
        }
    }
    lines
}

/// The header as `# ` comment lines.
fn header_comments(plan: &Plan, tool: Tool) -> String {
    let mut out = String::new();
    push_comments(&mut out, "", &header(plan, tool));
    out
}

/// A release line's `X.Y` prefix of a version (`"7.0.2"` -> `[7, 0]`).
fn major_minor(v: &str) -> Vec<u32> {
    v.split('.')
        .take(2)
        .map(|p| p.parse().unwrap_or(0))
        .collect()
}

/// A CMake cache type suffix.
fn cmake_type(kind: SettingKind) -> &'static str {
    match kind {
        SettingKind::Bool => "BOOL",
        SettingKind::String => "STRING",
    }
}

/// A word for a POSIX shell: unquoted when it holds only characters the shell leaves alone,
/// else in single quotes (a `'` becomes `'\''`).
fn shell_word(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `-DNAME:TYPE=VALUE` as one shell word; the value part quoted when needed.
fn cmake_define(name: &str, kind: SettingKind, value: &str) -> String {
    let prefix = format!("-D{name}:{}=", cmake_type(kind));
    if shell_word(&prefix) != prefix {
        return shell_word(&format!("{prefix}{value}"));
    }
    if value.is_empty() {
        prefix
    } else {
        format!("{prefix}{}", shell_word(value))
    }
}

/// A CMake quoted argument: `"..."` with `\`, `"` and `$` escaped (so `${...}` is not expanded)
/// and control characters written as escape sequences.
fn cmake_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str(r"\\"),
            '"' => out.push_str("\\\""),
            '$' => out.push_str(r"\$"),
            '\n' => out.push_str(r"\n"),
            '\r' => out.push_str(r"\r"),
            '\t' => out.push_str(r"\t"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A CMake variable name as the first argument of `set()`: bare when it is a plain identifier.
fn cmake_name(name: &str) -> String {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.+-/".contains(c))
    {
        name.to_owned()
    } else {
        cmake_quoted(name)
    }
}

/// `set(NAME "value" CACHE TYPE "doc" FORCE)`.
fn cmake_cache_set(name: &str, value: &str, kind: SettingKind, doc: &str) -> String {
    format!(
        "set({} {} CACHE {} {} FORCE)",
        cmake_name(name),
        cmake_quoted(value),
        cmake_type(kind),
        cmake_quoted(&one_line(doc))
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_round_trip() {
        for t in Tool::ALL {
            assert_eq!(Tool::parse(t.as_str()), Some(t));
        }
        assert_eq!(Tool::parse("json"), None);
    }

    #[test]
    fn shell_words_quote_what_the_shell_would_split_or_expand() {
        assert_eq!(shell_word("gfx1030"), "gfx1030");
        assert_eq!(shell_word("gfx90a:xnack-"), "gfx90a:xnack-");
        assert_eq!(shell_word("gfx1100;gfx1101"), "'gfx1100;gfx1101'");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
        assert_eq!(shell_word(r"a\b"), r"'a\b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("\"q\""), "'\"q\"'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(
            cmake_define("GPU_TARGETS", SettingKind::String, "gfx1100;gfx1101"),
            "-DGPU_TARGETS:STRING='gfx1100;gfx1101'"
        );
        assert_eq!(
            cmake_define("AMDGPU_TARGETS", SettingKind::String, ""),
            "-DAMDGPU_TARGETS:STRING="
        );
        assert_eq!(
            cmake_define("BUILD_WITH_HIPBLASLT", SettingKind::Bool, "OFF"),
            "-DBUILD_WITH_HIPBLASLT:BOOL=OFF"
        );
        assert_eq!(
            cmake_define("A B", SettingKind::String, "x"),
            "'-DA B:STRING=x'"
        );
    }

    #[test]
    fn cmake_quoted_arguments_escape_backslash_quote_and_dollar() {
        assert_eq!(cmake_quoted("gfx1100;gfx1101"), "\"gfx1100;gfx1101\"");
        assert_eq!(cmake_quoted(r#"a"b"#), r#""a\"b""#);
        assert_eq!(cmake_quoted("${HOME}"), r#""\${HOME}""#);
        assert_eq!(cmake_quoted(r"C:\x;y"), r#""C:\\x;y""#);
        assert_eq!(cmake_quoted("a\nb"), r#""a\nb""#);
        assert_eq!(
            cmake_cache_set("X", "ON", SettingKind::Bool, "why \"so\" $x"),
            r#"set(X "ON" CACHE BOOL "why \"so\" \$x" FORCE)"#
        );
    }

    #[test]
    fn one_line_comments_have_no_line_breaks() {
        assert_eq!(one_line("a\nb\r\tc"), "a b  c");
    }
}
