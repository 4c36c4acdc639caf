//! nixpkgs: an overlay that overrides derivations of `rocmPackages` through `overrideScope`, so
//! every package of the set that depends on an overridden one gets the overridden one. Each
//! derivation with a target-list argument gets its planned list; options go to the derivation
//! arguments that carry them, except an argument nixpkgs only accepts under a condition on another
//! component's targets (`[[nix.package.*.requires]]`: MIOpen's `withComposableKernel` needs CK
//! built for a gfx9 target), which is then passed `false` with a comment. The overlay refuses
//! (throws) on a nixpkgs whose ROCm release differs from the plan's, or whose `rocmPackages` is no
//! scope; both guards sit outside `overrideScope`. Checked against nixpkgs by
//! `tests/engine_nix.rs` (facts) and `scripts/engines/nix/run.sh` (the real expressions).

use std::fmt::Write as _;

use super::{
    Emission, OptionUse, Tool, header_comments, knobless, option_use, push_comments, skip_reason,
};
use crate::kb::{Knowledge, NixInfo, NixPackage, NixRequirement, find_option};
use crate::model::{ComponentPlan, Plan};

/// One attribute override (or a choice between attributes, the first present).
struct Override {
    comments: Vec<String>,
    /// Attributes to try, in order.
    attrs: Vec<String>,
    /// `name = value;` pairs inside `.override { }`.
    args: Vec<(String, String)>,
    /// `-DNAME=VALUE` for options the plan moves away from the release's default and the
    /// derivation has no argument for, appended to its cmakeFlags with `overrideAttrs`: CMake
    /// takes the last definition, so they win over the derivation's own.
    flags: Vec<String>,
}

pub(super) fn emit(kb: &Knowledge, plan: &Plan) -> Emission {
    let nix = &kb.emitters.nix;
    let mut overrides: Vec<Override> = Vec::new();
    let mut loose: Vec<String> = Vec::new();
    for c in &plan.components {
        let attrs: &[String] = kb
            .components
            .get(&c.name)
            .map_or(&[], |i| &i.packages.nixpkgs);
        if !c.is_built() {
            let what = if attrs.is_empty() {
                String::new()
            } else {
                format!(
                    " ({}); not overridden: nixpkgs still builds it for a consumer that depends on it",
                    attrs
                        .iter()
                        .map(|a| format!("{}.{a}", nix.scope))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            loose.push(format!("{}: not built{what}: {}", c.name, skip_reason(c)));
            continue;
        }
        if attrs.is_empty() {
            if !c.settings.is_empty() {
                loose.push(format!(
                    "{}: no {} attribute known; its settings cannot be passed",
                    c.name, nix.scope
                ));
            }
            continue;
        }
        for attr in attrs {
            if let Some(o) = attr_override(kb, plan, c, attr, nix.package.get(attr)) {
                overrides.push(o);
            }
        }
    }

    let mut out = header_comments(plan, Tool::Nix);
    let mut about = vec![
        "Use as an overlay: nixpkgs.overlays = [ (import ./rocm-overlay.nix) ]; derivations not overridden here keep their defaults".to_owned(),
    ];
    about.extend(loose);
    push_comments(&mut out, "", &about);
    push_scope_overlay(&mut out, nix, &plan.release, &overrides);
    Emission {
        stdout: out.clone(),
        files: vec![("rocm-overlay.nix".to_owned(), out)],
    }
}

/// Writes the overlay: `rocmPackages` replaced by its `overrideScope`, behind two guards that are
/// evaluated outside the scope. Inside `overrideScope` the guard would read `rprev.clr`, which
/// `callPackage` builds from the scope being defined, and nixpkgs answers "infinite recursion".
fn push_scope_overlay(out: &mut String, nix: &NixInfo, release: &str, overrides: &[Override]) {
    let scope = nix_attr(&nix.scope);
    let prev = format!("prev.{scope}");
    // The release line, then any point release: "6.4" matches 6.4 and 6.4.3.
    let version_re = format!("{}(\\..*)?", regex_escape(release));
    out.push_str("final: prev: {\n");
    let _ = writeln!(out, "  {scope} =");
    let _ = writeln!(
        out,
        "    if builtins.match {} ({prev}.clr.version or \"\") == null then",
        nix_str(&version_re)
    );
    let _ = writeln!(
        out,
        "      throw (\"rocm-overlay.nix was planned for ROCm {} but this nixpkgs has {}.clr \" + ({prev}.clr.version or \"without a version\"))",
        nix_escape(release),
        nix_escape(&nix.scope)
    );
    let _ = writeln!(out, "    else if !({prev} ? overrideScope) then");
    let _ = writeln!(
        out,
        "      throw \"rocm-overlay.nix needs {} to be a scope with overrideScope (nixpkgs' ROCm 6.0 set is a plain attribute set)\"",
        nix_escape(&nix.scope)
    );
    out.push_str("    else\n");
    let _ = writeln!(out, "      {prev}.overrideScope (");
    out.push_str("        rfinal: rprev:\n        {\n");
    for o in overrides {
        if let [attr] = o.attrs.as_slice() {
            push_override(out, "          ", o, attr);
        }
    }
    out.push_str("        }");
    for o in overrides.iter().filter(|o| o.attrs.len() > 1) {
        out.push_str("\n        // (\n");
        for (i, attr) in o.attrs.iter().enumerate() {
            if i + 1 == o.attrs.len() {
                out.push_str("          else {\n");
            } else {
                let _ = writeln!(
                    out,
                    "          {}if rprev ? {} then {{",
                    if i == 0 { "" } else { "else " },
                    nix_attr(attr)
                );
            }
            push_override(out, "            ", o, attr);
            out.push_str("          }\n");
        }
        out.push_str("        )");
    }
    out.push_str("\n      );\n}\n");
}

/// Writes `attr = rprev.attr.override { ... };` with its comments, followed by
/// `.overrideAttrs (old: { cmakeFlags = ... ++ [ ... ]; })` when options have no argument.
fn push_override(out: &mut String, indent: &str, o: &Override, attr: &str) {
    push_comments(out, indent, &o.comments);
    if o.args.is_empty() && o.flags.is_empty() {
        return;
    }
    let a = nix_attr(attr);
    let mut base = format!("rprev.{a}");
    if !o.args.is_empty() {
        base = format!("{base}.override {{\n");
        for (k, v) in &o.args {
            let _ = writeln!(base, "{indent}  {} = {v};", nix_attr(k));
        }
        let _ = write!(base, "{indent}}}");
    }
    if o.flags.is_empty() {
        let _ = writeln!(out, "{indent}{a} = {base};");
        return;
    }
    if !o.args.is_empty() {
        base = format!("({base})");
    }
    let flags: Vec<String> = o.flags.iter().map(|f| nix_str(f)).collect();
    let _ = writeln!(out, "{indent}{a} = {base}.overrideAttrs (old: {{");
    let _ = writeln!(
        out,
        "{indent}  cmakeFlags = (old.cmakeFlags or [ ]) ++ [ {} ];",
        flags.join(" ")
    );
    let _ = writeln!(out, "{indent}}});");
}

/// The override of one attribute of a built component, if there is anything to say.
fn attr_override(
    kb: &Knowledge,
    plan: &Plan,
    c: &ComponentPlan,
    attr: &str,
    info: Option<&NixPackage>,
) -> Option<Override> {
    let nix = &kb.emitters.nix;
    let mut comments = vec![format!("{} ({}.{attr})", c.name, nix.scope)];
    let mut args = Vec::new();
    let mut flags = Vec::new();
    if let Some(planned) = &c.targets {
        match info {
            Some(i) if i.gpu_targets => {
                if planned.is_empty() {
                    comments.push(format!(
                        "no planned target: {} left at the derivation's default",
                        nix.argument
                    ));
                } else {
                    let list: Vec<String> = planned.iter().map(|t| nix_str(t)).collect();
                    args.push((nix.argument.clone(), format!("[ {} ]", list.join(" "))));
                }
            }
            _ => comments.push(format!(
                "no {} argument known: planned targets {} not passed",
                nix.argument,
                planned.join(" ")
            )),
        }
    }
    for s in c.option_settings() {
        let o = info.and_then(|i| find_option(&i.option, &s.name, &plan.release));
        let Some(o) = o else {
            let (pass, note) = knobless(
                kb,
                plan,
                c,
                s,
                "no derivation argument known",
                "derivation",
                "appended to cmakeFlags",
            );
            comments.push(note);
            if pass {
                flags.push(format!("-D{}={}", s.name, s.value));
            }
            continue;
        };
        match option_use(o, s, "derivation", |k| k.to_owned(), "no argument") {
            OptionUse::Switch(arg, b) => args.push((arg.to_owned(), b.to_string())),
            OptionUse::Note(n) => comments.push(n),
        }
    }
    for r in info.map_or(&[][..], |i| &i.requires) {
        apply_requirement(plan, r, &mut args, &mut comments);
    }
    if args.is_empty() && flags.is_empty() && comments.len() == 1 {
        return None;
    }
    let attrs = match info {
        Some(i) if !i.attrs.is_empty() => i.attrs.clone(),
        _ => vec![attr.to_owned()],
    };
    if attrs.len() > 1 {
        comments.push(format!(
            "overrides the first of {} present in this nixpkgs",
            attrs.join(", ")
        ));
    }
    Some(Override {
        comments,
        attrs,
        args,
        flags,
    })
}

/// Turns `argument = true` into `false` when the component it links is not built for any target
/// the derivation needs (nixpkgs would mark that component broken), and says why.
fn apply_requirement(
    plan: &Plan,
    r: &NixRequirement,
    args: &mut [(String, String)],
    comments: &mut Vec<String>,
) {
    let Some((_, value)) = args
        .iter_mut()
        .find(|(k, v)| *k == r.argument && v == "true")
    else {
        return;
    };
    let planned = plan
        .components
        .iter()
        .find(|c| c.name == r.component)
        .filter(|c| c.is_built())
        .and_then(|c| c.targets.as_ref());
    if planned.is_some_and(|t| t.iter().any(|t| t.starts_with(&r.target_prefix))) {
        return;
    }
    *value = "false".to_owned();
    let got = match planned {
        Some(t) if !t.is_empty() => format!("planned for {}", t.join(" ")),
        Some(_) => "planned for no target".to_owned(),
        None => "not built".to_owned(),
    };
    let mut why = format!(
        "{} = false, not as planned: {} is {got}, and nixpkgs marks it broken without a {}* target",
        r.argument, r.component, r.target_prefix
    );
    if let Some(n) = &r.note {
        why.push_str("; ");
        why.push_str(n);
    }
    comments.push(why);
}

/// A literal for a POSIX extended regular expression (`builtins.match`).
fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if r"\.^$|?*+()[]{}".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The body of a Nix double-quoted string: `\`, `"` and `${` escaped.
fn nix_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push_str(r"\\"),
            '"' => out.push_str("\\\""),
            '$' if chars.peek() == Some(&'{') => out.push_str(r"\$"),
            '\n' => out.push_str(r"\n"),
            '\r' => out.push_str(r"\r"),
            '\t' => out.push_str(r"\t"),
            c => out.push(c),
        }
    }
    out
}

/// A Nix string literal.
fn nix_str(s: &str) -> String {
    format!("\"{}\"", nix_escape(s))
}

/// An attribute name: bare when it is an identifier that is not a keyword, else quoted.
fn nix_attr(name: &str) -> String {
    const KEYWORDS: &[&str] = &[
        "assert", "else", "if", "in", "inherit", "let", "or", "rec", "then", "with",
    ];
    let mut chars = name.chars();
    let ident = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || "_'-".contains(c));
    if ident && !KEYWORDS.contains(&name) {
        name.to_owned()
    } else {
        nix_str(name)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn nix_strings_escape_interpolation_quotes_and_backslashes() {
        assert_eq!(nix_str("gfx90a:xnack-"), "\"gfx90a:xnack-\"");
        assert_eq!(nix_str(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(nix_str("${x} $y"), r#""\${x} $y""#);
        assert_eq!(nix_str("a;b\n"), r#""a;b\n""#);
    }

    #[test]
    fn release_lines_are_regex_literals() {
        assert_eq!(regex_escape("6.4"), r"6\.4");
        assert_eq!(regex_escape("a+(b)"), r"a\+\(b\)");
    }

    #[test]
    fn attribute_names_are_quoted_when_not_identifiers() {
        assert_eq!(nix_attr("rocblas"), "rocblas");
        assert_eq!(nix_attr("rocm-runtime"), "rocm-runtime");
        assert_eq!(nix_attr("composable_kernel"), "composable_kernel");
        assert_eq!(nix_attr("with"), "\"with\"");
        assert_eq!(nix_attr("6x"), "\"6x\"");
    }
}
