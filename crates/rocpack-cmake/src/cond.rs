//! `if()`/`elseif()`/`while()` conditions, reduced level by level as CMake's
//! `cmConditionEvaluator` does: parentheses, unary tests, binary tests, `NOT`, `AND`, `OR`.
//!
//! The logic is three-valued: a test on an unknown value is unknown, `FALSE AND unknown` is
//! false, `TRUE OR unknown` is true, and a condition that stays unknown is not evaluated.

use super::eval::{Arg, Evaluator, Lookup, Reason, Val};
use super::regex;

#[derive(Debug, Clone)]
enum Tri {
    T,
    F,
    U(Reason),
}

impl Tri {
    fn of(b: bool) -> Tri {
        if b { Tri::T } else { Tri::F }
    }
}

#[derive(Debug, Clone)]
enum Tok {
    Arg(Arg),
    Val(Tri),
}

impl Tok {
    fn keyword(&self) -> Option<&str> {
        match self {
            Tok::Arg(a) if !a.quoted && a.unknown.is_none() => Some(a.text.as_str()),
            _ => None,
        }
    }

    fn is(&self, kw: &str) -> bool {
        self.keyword() == Some(kw)
    }
}

const UNARY: &[&str] = &[
    "EXISTS",
    "COMMAND",
    "DEFINED",
    "IS_DIRECTORY",
    "IS_SYMLINK",
    "IS_ABSOLUTE",
    "IS_READABLE",
    "IS_WRITABLE",
    "IS_EXECUTABLE",
    "POLICY",
    "TARGET",
    "TEST",
];

const BINARY: &[&str] = &[
    "MATCHES",
    "LESS",
    "GREATER",
    "EQUAL",
    "LESS_EQUAL",
    "GREATER_EQUAL",
    "STRLESS",
    "STRGREATER",
    "STREQUAL",
    "STRLESS_EQUAL",
    "STRGREATER_EQUAL",
    "VERSION_LESS",
    "VERSION_GREATER",
    "VERSION_EQUAL",
    "VERSION_LESS_EQUAL",
    "VERSION_GREATER_EQUAL",
    "IN_LIST",
    "PATH_EQUAL",
    "IS_NEWER_THAN",
];

/// Deepest parenthesis nesting evaluated.
const MAX_PARENS: u32 = 32;

/// CMake's true constants (`cmIsOn`).
pub fn is_on(s: &str) -> bool {
    ["1", "ON", "YES", "TRUE", "Y"]
        .iter()
        .any(|c| s.eq_ignore_ascii_case(c))
}

/// CMake's false constants (`cmIsOff`), the empty string included.
pub fn is_off(s: &str) -> bool {
    s.is_empty()
        || ["0", "OFF", "NO", "FALSE", "N", "IGNORE", "NOTFOUND"]
            .iter()
            .any(|c| s.eq_ignore_ascii_case(c))
        || s.len() >= 9
            && s.get(s.len() - 9..)
                .is_some_and(|t| t.eq_ignore_ascii_case("-NOTFOUND"))
}

/// The number at the start of `s`, as C's `%lg` reads it (leading spaces skipped).
fn leading_number(s: &str) -> Option<f64> {
    let t = s.trim_start();
    let b = t.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let int_start = i;
    while b.get(i).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    let mut digits = i - int_start;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let frac_start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        digits += i - frac_start;
    }
    if digits == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let exp_start = j;
        while b.get(j).is_some_and(u8::is_ascii_digit) {
            j += 1;
        }
        if j > exp_start {
            i = j;
        }
    }
    t.get(..i)?.parse().ok()
}

/// CMake's `VersionCompare`: numeric components split by `.`; missing ones are 0.
fn version_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn component(s: &[u8], i: &mut usize) -> u64 {
        let mut v: u64 = 0;
        while let Some(c) = s.get(*i).filter(|c| c.is_ascii_digit()) {
            v = v.saturating_mul(10).saturating_add(u64::from(c - b'0'));
            *i += 1;
        }
        v
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0usize, 0usize);
    while a.get(i).is_some_and(u8::is_ascii_digit) || b.get(j).is_some_and(u8::is_ascii_digit) {
        let x = component(a, &mut i);
        let y = component(b, &mut j);
        if x != y {
            return x.cmp(&y);
        }
        if a.get(i) == Some(&b'.') {
            i += 1;
        }
        if b.get(j) == Some(&b'.') {
            j += 1;
        }
    }
    std::cmp::Ordering::Equal
}

impl Evaluator<'_> {
    /// Evaluates a condition: `Ok(bool)`, or `Err(why)` when it cannot be decided.
    pub fn condition(&mut self, args: &[Arg]) -> Result<bool, String> {
        let toks = args.iter().cloned().map(Tok::Arg).collect();
        match self.reduce(toks, 0)? {
            Tri::T => Ok(true),
            Tri::F => Ok(false),
            Tri::U(r) => Err(r.to_string()),
        }
    }

    fn reduce(&mut self, mut toks: Vec<Tok>, depth: u32) -> Result<Tri, String> {
        if depth > MAX_PARENS {
            return Err("parentheses nested too deeply".into());
        }
        if toks.is_empty() {
            return Ok(Tri::F);
        }
        // Parentheses, innermost first.
        while let Some(close) = toks.iter().position(|t| t.is(")")) {
            let Some(open) = toks
                .get(..close)
                .and_then(|head| head.iter().rposition(|t| t.is("(")))
            else {
                return Err("unbalanced parentheses".into());
            };
            let inner: Vec<Tok> = toks.get(open + 1..close).unwrap_or_default().to_vec();
            let v = self.reduce(inner, depth + 1)?;
            toks.splice(open..=close, [Tok::Val(v)]);
        }
        if toks.iter().any(|t| t.is("(")) {
            return Err("unbalanced parentheses".into());
        }
        // Unary tests.
        let mut i = 0;
        while i + 1 < toks.len() {
            if let Some(kw) = toks
                .get(i)
                .and_then(Tok::keyword)
                .filter(|k| UNARY.contains(k))
                .map(str::to_owned)
            {
                let operand = toks.get(i + 1).cloned().unwrap_or(Tok::Val(Tri::F));
                let v = self.unary(&kw, &operand)?;
                toks.splice(i..=i + 1, [Tok::Val(v)]);
            }
            i += 1;
        }
        // Binary tests. A MATCHES with no left operand (`if($ENV{UNSET} MATCHES "x")`: the
        // empty unquoted argument is gone) is false with its right operand, as CMake's
        // cmConditionEvaluator::HandleLevel2 makes it "0"; checked with cmake -P in
        // tests/cmake_semantics.rs.
        let mut i = 0;
        while i + 1 < toks.len() {
            let binary = toks
                .get(i + 1)
                .and_then(Tok::keyword)
                .filter(|k| BINARY.contains(k))
                .map(str::to_owned);
            match (binary, toks.get(i), toks.get(i + 2)) {
                (Some(kw), Some(l), Some(r)) => {
                    let (l, r) = (l.clone(), r.clone());
                    let v = self.binary(&kw, &l, &r)?;
                    toks.splice(i..=i + 2, [Tok::Val(v)]);
                }
                _ if toks.get(i).is_some_and(|t| t.is("MATCHES")) => {
                    toks.splice(i..=i + 1, [Tok::Val(Tri::F)]);
                }
                _ => i += 1,
            }
        }
        // NOT, innermost (rightmost) first so that `NOT NOT x` works.
        let mut i = toks.len();
        while i > 0 {
            i -= 1;
            if toks.get(i).is_some_and(|t| t.is("NOT")) && i + 1 < toks.len() {
                let operand = toks.get(i + 1).cloned().unwrap_or(Tok::Val(Tri::F));
                let v = match self.truth(&operand) {
                    Tri::T => Tri::F,
                    Tri::F => Tri::T,
                    u => u,
                };
                toks.splice(i..=i + 1, [Tok::Val(v)]);
            }
        }
        for (op, is_and) in [("AND", true), ("OR", false)] {
            let mut i = 0;
            while i + 2 < toks.len() {
                if toks.get(i + 1).is_some_and(|t| t.is(op)) {
                    let l = toks.get(i).cloned().map_or(Tri::F, |t| self.truth(&t));
                    let r = toks.get(i + 2).cloned().map_or(Tri::F, |t| self.truth(&t));
                    let v = match (is_and, l, r) {
                        (true, Tri::F, _) | (true, _, Tri::F) => Tri::F,
                        (false, Tri::T, _) | (false, _, Tri::T) => Tri::T,
                        (_, Tri::U(r), _) | (_, _, Tri::U(r)) => Tri::U(r),
                        (true, _, _) => Tri::T,
                        (false, _, _) => Tri::F,
                    };
                    toks.splice(i..=i + 2, [Tok::Val(v)]);
                } else {
                    i += 1;
                }
            }
        }
        match toks.as_slice() {
            [one] => Ok(self.truth(one)),
            _ => {
                let words: Vec<String> = toks
                    .iter()
                    .map(|t| match t {
                        Tok::Arg(a) => a.text.clone(),
                        Tok::Val(_) => "<result>".into(),
                    })
                    .collect();
                Err(format!("not a valid condition: {}", words.join(" ")))
            }
        }
    }

    /// The truth of a lone argument: constants, numbers, else a variable (unquoted only).
    fn truth(&self, t: &Tok) -> Tri {
        let a = match t {
            Tok::Val(v) => return v.clone(),
            Tok::Arg(a) => a,
        };
        if let Some(r) = &a.unknown {
            return Tri::U(r.clone());
        }
        let s = a.text.as_str();
        if is_on(s) {
            return Tri::T;
        }
        if is_off(s) {
            return Tri::F;
        }
        if let Ok(n) = s.trim_start().parse::<f64>() {
            return Tri::of(n != 0.0);
        }
        if a.quoted {
            return Tri::F;
        }
        match self.lookup(s) {
            Lookup::Defined(Val {
                unknown: Some(r), ..
            })
            | Lookup::Unknown(r) => Tri::U(r),
            Lookup::Defined(v) => Tri::of(!is_off(&v.text)),
            Lookup::Undefined => Tri::F,
        }
    }

    /// An operand of a binary test: an unquoted name of a defined variable is its value.
    fn operand(&self, t: &Tok) -> Result<String, Reason> {
        match t {
            Tok::Val(Tri::T) => Ok("1".into()),
            Tok::Val(Tri::F) => Ok("0".into()),
            Tok::Val(Tri::U(r)) => Err(r.clone()),
            Tok::Arg(a) => {
                if let Some(r) = &a.unknown {
                    return Err(r.clone());
                }
                if a.quoted {
                    return Ok(a.text.clone());
                }
                match self.lookup(&a.text) {
                    Lookup::Defined(Val {
                        unknown: Some(r), ..
                    })
                    | Lookup::Unknown(r) => Err(r),
                    Lookup::Defined(v) => Ok(v.text),
                    Lookup::Undefined => Ok(a.text.clone()),
                }
            }
        }
    }

    /// The literal text of an argument (no dereference).
    fn literal(t: &Tok) -> Result<String, Reason> {
        match t {
            Tok::Val(Tri::T) => Ok("1".into()),
            Tok::Val(Tri::F) => Ok("0".into()),
            Tok::Val(Tri::U(r)) => Err(r.clone()),
            Tok::Arg(a) => match &a.unknown {
                Some(r) => Err(r.clone()),
                None => Ok(a.text.clone()),
            },
        }
    }

    fn unary(&mut self, kw: &str, operand: &Tok) -> Result<Tri, String> {
        let s = match Self::literal(operand) {
            Ok(s) => s,
            Err(r) => return Ok(Tri::U(r)),
        };
        let path_test = |ev: &Self, f: &dyn Fn(&Self, &str) -> bool| -> Tri {
            if s.is_empty() {
                Tri::F
            } else if !s.starts_with('/') {
                Tri::U(format!("{kw} {s}: a relative path depends on the working directory").into())
            } else {
                Tri::of(f(ev, &s))
            }
        };
        Ok(match kw {
            "EXISTS" | "IS_READABLE" => path_test(self, &|ev, p| ev.s.fs.exists(p)),
            "IS_DIRECTORY" => path_test(self, &|ev, p| ev.s.fs.is_dir(p)),
            "IS_SYMLINK" => path_test(self, &|ev, p| ev.s.fs.is_symlink(p)),
            "IS_EXECUTABLE" => path_test(self, &|ev, p| ev.s.fs.is_executable(p)),
            "IS_WRITABLE" => Tri::U("IS_WRITABLE depends on who configures".into()),
            "IS_ABSOLUTE" => Tri::of(s.starts_with('/') || s.starts_with('~')),
            "DEFINED" => {
                if let Some(name) = s.strip_prefix("ENV{").and_then(|n| n.strip_suffix('}')) {
                    Tri::of(self.env.contains_key(name))
                } else {
                    let name = s
                        .strip_prefix("CACHE{")
                        .and_then(|n| n.strip_suffix('}'))
                        .unwrap_or(&s);
                    match self.lookup(name) {
                        Lookup::Defined(_) => Tri::T,
                        Lookup::Undefined => Tri::F,
                        Lookup::Unknown(r) => Tri::U(r),
                    }
                }
            }
            "COMMAND" => Tri::of(
                self.defs.contains_key(&s.to_ascii_lowercase())
                    || super::builtins::is_builtin(&s.to_ascii_lowercase()),
            ),
            "POLICY" => Tri::of(
                s.strip_prefix("CMP")
                    .and_then(|n| n.parse::<u32>().ok())
                    .is_some_and(|n| n <= 180),
            ),
            "TARGET" => self.target_test(&s),
            _ => Tri::F,
        })
    }

    /// `TARGET name`: targets created in this evaluation exist; the package's own targets
    /// (created by name in a file loaded so far) do not exist before that, as on a first
    /// `find_package`. Other targets are absent too, unless they look like a target of a
    /// package this config asked for with `find_package`/`find_dependency` (`hip::host` after
    /// `find_dependency(hip)`), which this checker does not follow: those are unknown.
    fn target_test(&self, name: &str) -> Tri {
        if self.targets.contains_key(name) {
            return Tri::T;
        }
        if self.own_targets.contains(name) {
            return Tri::F;
        }
        let namespace = name.split("::").next().unwrap_or(name);
        if self
            .found
            .iter()
            .any(|p| p.eq_ignore_ascii_case(namespace) || p.eq_ignore_ascii_case(name))
        {
            return Tri::U(
                format!("target {name} would come from a dependency, which is not followed").into(),
            );
        }
        Tri::F
    }

    fn binary(&mut self, kw: &str, l: &Tok, r: &Tok) -> Result<Tri, String> {
        if kw == "IS_NEWER_THAN" {
            return Err("IS_NEWER_THAN is not evaluated".into());
        }
        let lv = match self.operand(l) {
            Ok(v) => v,
            Err(reason) => return Ok(Tri::U(reason)),
        };
        if kw == "MATCHES" {
            let pattern = match Self::literal(r) {
                Ok(p) => p,
                Err(reason) => return Ok(Tri::U(reason)),
            };
            let re = regex::compile(&pattern)?;
            for i in 0..10 {
                self.unset_var(&format!("CMAKE_MATCH_{i}"));
            }
            self.set_var("CMAKE_MATCH_COUNT", Val::known("0"));
            return Ok(match re.captures(&lv) {
                Some(caps) => {
                    let count = caps.len().saturating_sub(1);
                    for (i, m) in caps.iter().enumerate().take(10) {
                        self.set_var(
                            &format!("CMAKE_MATCH_{i}"),
                            Val::known(m.map_or("", |m| m.as_str())),
                        );
                    }
                    self.set_var("CMAKE_MATCH_COUNT", Val::known(count.to_string()));
                    Tri::T
                }
                None => Tri::F,
            });
        }
        if kw == "IN_LIST" {
            let name = match Self::literal(r) {
                Ok(n) => n,
                Err(reason) => return Ok(Tri::U(reason)),
            };
            return Ok(match self.lookup(&name) {
                Lookup::Defined(Val {
                    unknown: Some(r), ..
                })
                | Lookup::Unknown(r) => Tri::U(r),
                Lookup::Defined(v) => Tri::of(super::eval::split_list(&v.text, true).contains(&lv)),
                Lookup::Undefined => Tri::F,
            });
        }
        let rv = match self.operand(r) {
            Ok(v) => v,
            Err(reason) => return Ok(Tri::U(reason)),
        };
        use std::cmp::Ordering::*;
        let num = || match (leading_number(&lv), leading_number(&rv)) {
            (Some(a), Some(b)) => a.partial_cmp(&b),
            _ => None,
        };
        Ok(Tri::of(match kw {
            "LESS" => num() == Some(Less),
            "GREATER" => num() == Some(Greater),
            "EQUAL" => num() == Some(Equal),
            "LESS_EQUAL" => matches!(num(), Some(Less | Equal)),
            "GREATER_EQUAL" => matches!(num(), Some(Greater | Equal)),
            "STRLESS" => lv < rv,
            "STRGREATER" => lv > rv,
            "STREQUAL" => lv == rv,
            "STRLESS_EQUAL" => lv <= rv,
            "STRGREATER_EQUAL" => lv >= rv,
            "VERSION_LESS" => version_cmp(&lv, &rv) == Less,
            "VERSION_GREATER" => version_cmp(&lv, &rv) == Greater,
            "VERSION_EQUAL" => version_cmp(&lv, &rv) == Equal,
            "VERSION_LESS_EQUAL" => version_cmp(&lv, &rv) != Greater,
            "VERSION_GREATER_EQUAL" => version_cmp(&lv, &rv) != Less,
            "PATH_EQUAL" => normalize_slashes(&lv) == normalize_slashes(&rv),
            _ => return Err(format!("{kw} is not evaluated")),
        }))
    }
}

/// `PATH_EQUAL` compares component-wise without resolving `.` or `..`.
fn normalize_slashes(p: &str) -> String {
    let abs = p.starts_with('/');
    let parts: Vec<&str> = p.split('/').filter(|s| !s.is_empty()).collect();
    format!("{}{}", if abs { "/" } else { "" }, parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants() {
        assert!(is_on("yes") && is_on("1") && is_on("Y"));
        assert!(is_off("") && is_off("Foo-NOTFOUND") && is_off("ignore") && is_off("notfound"));
        assert!(!is_off("foo"));
    }

    #[test]
    fn numbers_and_versions() {
        assert_eq!(leading_number("3.31abc"), Some(3.31));
        assert_eq!(leading_number("2.8"), Some(2.8));
        assert_eq!(leading_number("x"), None);
        assert_eq!(version_cmp("3.31.0", "3.28"), std::cmp::Ordering::Greater);
        assert_eq!(version_cmp("2.8.12", "2.8.12.0"), std::cmp::Ordering::Equal);
        assert_eq!(version_cmp("1.10", "1.9"), std::cmp::Ordering::Greater);
    }
}
