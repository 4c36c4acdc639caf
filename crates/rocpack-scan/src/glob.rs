//! The one matcher of a path component against a glob, for every caller that looks up files by
//! pattern: `plan verify`'s install globs, CMake's `file(GLOB)` in the evaluator, and the
//! toolchain check's `lib/clang/*/include`.
//!
//! The syntax is CMake's (`cmGlob::PatternToRegex`): `*` any run of bytes, `?` one byte, `[...]`
//! a class with ranges (`a-z`), negated by a leading `!` or `^`, with a `]` first in the class
//! taken literally; an unterminated `[` matches itself. Everything else matches itself. CMake's
//! regular expressions compare bytes, and so does this: a name that is not UTF-8 is matched as
//! it is, not through a lossy conversion. `/` is never special; callers split paths into
//! components (and give `**` its meaning, where they have one).

/// Whether the name matches the pattern, both single path components.
///
/// ```
/// use rocpack_scan::glob::component_matches;
/// assert!(component_matches(b"libamd_comgr.so*", b"libamd_comgr.so.3"));
/// assert!(component_matches(b"lib?.so", b"libx.so"));
/// assert!(component_matches(b"gfx[0-9]*", b"gfx1030"));
/// assert!(!component_matches(b"gfx[!0-9]*", b"gfx1030"));
/// assert!(component_matches(b"a[b", b"a[b"));
/// ```
pub fn component_matches(pattern: &[u8], name: &[u8]) -> bool {
    let (mut p, mut n) = (0usize, 0usize);
    // Where the last `*` was and how much of the name it has eaten: on a mismatch, let it eat
    // one byte more (at most pattern × name steps, never exponential).
    let mut star: Option<(usize, usize)> = None;
    while let Some(&here) = name.get(n) {
        let step = match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
                continue;
            }
            Some(b'?') => Some(1),
            Some(b'[') => match class(pattern, p, here) {
                Some((true, len)) => Some(len),
                Some((false, _)) => None,
                None => (here == b'[').then_some(1),
            },
            Some(&c) => (c == here).then_some(1),
            None => None,
        };
        match (step, star) {
            (Some(len), _) => {
                p += len;
                n += 1;
            }
            (None, Some((sp, sn))) => {
                p = sp + 1;
                n = sn + 1;
                star = Some((sp, sn + 1));
            }
            (None, None) => return false,
        }
    }
    pattern
        .get(p..)
        .is_some_and(|rest| rest.iter().all(|&c| c == b'*'))
}

/// At `pattern[start] == b'['`: whether `c` is in the class, and the class's length in the
/// pattern. `None` when the class is not terminated.
fn class(pattern: &[u8], start: usize, c: u8) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negate = matches!(pattern.get(i), Some(b'!' | b'^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let ch = *pattern.get(i)?;
        if ch == b']' && !first {
            return Some((matched != negate, i + 1 - start));
        }
        first = false;
        match (pattern.get(i + 1), pattern.get(i + 2)) {
            (Some(b'-'), Some(&end)) if end != b']' => {
                matched |= (ch..=end).contains(&c);
                i += 3;
            }
            _ => {
                matched |= ch == c;
                i += 1;
            }
        }
    }
}

/// Whether a component holds a glob character (`*`, `?`, `[`).
pub fn has_wildcard(component: &[u8]) -> bool {
    component.iter().any(|c| matches!(c, b'*' | b'?' | b'['))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_questions_and_classes() {
        let yes = [
            ("*", ""),
            ("*", "abc"),
            ("lib*.so*", "libamdhip64.so.6"),
            ("a*b*c", "aXbYbZc"),
            ("clang*", "clang"),
            ("?", "x"),
            ("[abc]", "b"),
            ("[]]", "]"),
            ("[!a]", "b"),
            ("[^a]", "b"),
            ("x[a-c]y", "xby"),
            ("x[-a]y", "x-y"),
            ("a[b", "a[b"),
        ];
        for (p, n) in yes {
            assert!(component_matches(p.as_bytes(), n.as_bytes()), "{p} ~ {n}");
        }
        let no = [
            ("?", ""),
            ("a*b", "ac"),
            ("lib*.so", "libx.so.1"),
            ("[abc]", "d"),
            ("[!a]", "a"),
            ("x[a-c]y", "xdy"),
            ("a[b", "ab"),
            ("abc", "ab"),
            ("", "a"),
        ];
        for (p, n) in no {
            assert!(!component_matches(p.as_bytes(), n.as_bytes()), "{p} !~ {n}");
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_match_as_bytes() {
        assert!(component_matches(b"lib*.so", b"lib\xff\xfe.so"));
        assert!(component_matches(b"lib?.so", b"lib\xff.so"));
        // One byte of a two-byte character: `?` is a byte, as in CMake's byte regexes.
        assert!(!component_matches(b"?", "é".as_bytes()));
        assert!(component_matches(b"??", "é".as_bytes()));
    }

    #[test]
    fn many_stars_stay_polynomial() {
        let pattern = "*a".repeat(20) + "b";
        let name = "a".repeat(200);
        assert!(!component_matches(pattern.as_bytes(), name.as_bytes()));
    }
}
