//! CMake's regular expressions (`MATCHES`, `string(REGEX …)`, `list(FILTER … REGEX)`),
//! translated to the `regex` crate.
//!
//! CMake's engine (Henry Spencer's) knows `^ $ . [] [^] * + ? | ()` and `\x` for a literal `x`;
//! there are no counted repetitions, so `{` is literal, and `\d` is a `d`. Every literal is
//! emitted as `\x{..}` so that nothing is special to the `regex` crate by accident. A pattern
//! that does not translate (for example `[[:alpha:]]`) is reported as not evaluable instead of
//! being guessed. The `regex` crate runs in linear time, so hostile patterns cannot stall.

use regex::{Regex, RegexBuilder};

/// Compiled-size ceiling for one pattern.
const SIZE_LIMIT: usize = 1 << 20;

/// Translates and compiles; `Err` says why the pattern is not supported.
pub(crate) fn compile(pattern: &str) -> Result<Regex, String> {
    let translated = translate(pattern)?;
    RegexBuilder::new(&translated)
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(SIZE_LIMIT)
        .build()
        .map_err(|e| format!("regular expression `{pattern}` is not supported: {e}"))
}

fn lit(out: &mut String, c: char) {
    if c.is_ascii_alphanumeric() || c == '_' {
        out.push(c);
    } else {
        out.push_str(&format!("\\x{{{:x}}}", c as u32));
    }
}

fn translate(pattern: &str) -> Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    // `.` matches a newline in CMake's engine.
    let mut out = String::from("(?s)");
    let mut i = 0usize;
    let mut depth = 0u32;
    while let Some(&c) = chars.get(i) {
        match c {
            '\\' => {
                let Some(&next) = chars.get(i + 1) else {
                    return Err(format!(
                        "regular expression `{pattern}` ends with a backslash"
                    ));
                };
                lit(&mut out, next);
                i += 2;
            }
            '[' => {
                i += 1;
                out.push('[');
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                let mut first = true;
                loop {
                    let Some(&ch) = chars.get(i) else {
                        return Err(format!(
                            "regular expression `{pattern}` has an unterminated `[`"
                        ));
                    };
                    if ch == ']' && !first {
                        out.push(']');
                        i += 1;
                        break;
                    }
                    if ch == '[' && chars.get(i + 1) == Some(&':') {
                        return Err(format!(
                            "character classes in `{pattern}` are not supported"
                        ));
                    }
                    first = false;
                    lit(&mut out, ch);
                    if chars.get(i + 1) == Some(&'-') && chars.get(i + 2).is_some_and(|&e| e != ']')
                    {
                        out.push('-');
                        if let Some(&end) = chars.get(i + 2) {
                            lit(&mut out, end);
                        }
                        i += 3;
                    } else {
                        i += 1;
                    }
                }
            }
            '(' => {
                depth += 1;
                out.push('(');
                i += 1;
            }
            ')' => {
                if depth == 0 {
                    return Err(format!(
                        "regular expression `{pattern}` has an unmatched `)`"
                    ));
                }
                depth -= 1;
                out.push(')');
                i += 1;
            }
            '^' | '$' | '.' | '|' | '*' | '+' | '?' => {
                out.push(c);
                i += 1;
            }
            other => {
                lit(&mut out, other);
                i += 1;
            }
        }
    }
    if depth != 0 {
        return Err(format!(
            "regular expression `{pattern}` has an unmatched `(`"
        ));
    }
    Ok(out)
}

/// `string(REGEX REPLACE)` and `list(TRANSFORM … REPLACE)` as cmStringCommand.cxx does them:
/// every match replaced (`\\1` … in `repl` are groups); a match of the empty string is an error
/// there ("matched an empty string"), and here; so is a result longer than `limit` bytes,
/// found while it is built.
pub(crate) fn replace_all(
    re: &Regex,
    pattern: &str,
    input: &str,
    repl: &str,
    limit: usize,
) -> Result<String, String> {
    let template = replacement(repl);
    let mut out = String::new();
    let mut last = 0;
    for caps in re.captures_iter(input) {
        let Some(m) = caps.get(0) else { continue };
        if m.is_empty() {
            return Err(format!("regex \"{pattern}\" matched an empty string"));
        }
        out.push_str(input.get(last..m.start()).unwrap_or_default());
        caps.expand(&template, &mut out);
        last = m.end();
        if out.len() > limit {
            return Err(format!("the replacement grows beyond {} MiB", limit >> 20));
        }
    }
    out.push_str(input.get(last..).unwrap_or_default());
    if out.len() > limit {
        return Err(format!("the replacement grows beyond {} MiB", limit >> 20));
    }
    Ok(out)
}

/// Translates a `string(REGEX REPLACE)` replacement: `\0`…`\9` are groups, `\x` is `x`.
pub(crate) fn replacement(repl: &str) -> String {
    let mut out = String::new();
    let mut chars = repl.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(d) if d.is_ascii_digit() => out.push_str(&format!("${{{d}}}")),
                Some('$') => out.push_str("$$"),
                Some(other) => out.push(other),
                None => out.push('\\'),
            },
            '$' => out.push_str("$$"),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmake_syntax() {
        assert!(compile("^gfx9[0-9a-f]+$").unwrap().is_match("gfx90a"));
        assert!(
            compile(".*clang\\+\\+")
                .unwrap()
                .is_match("/usr/bin/clang++")
        );
        assert!(compile("a{2}").unwrap().is_match("a{2}"));
        assert!(compile("\\d").unwrap().is_match("d"));
        assert!(compile("[]x]").unwrap().is_match("]"));
        assert!(compile("(a|b").is_err());
        assert!(compile("[[:alpha:]]").is_err());
        assert!(compile("*a").is_err());
    }

    #[test]
    fn replacements() {
        let re = compile("([a-z]+)-([0-9]+)").unwrap();
        assert_eq!(
            re.replace_all("ab-12", replacement("\\2_\\1$").as_str()),
            "12_ab$"
        );
    }
}
