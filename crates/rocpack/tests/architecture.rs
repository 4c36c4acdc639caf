//! ARCHITECTURE.md stays true. Of what it writes in backticks:
//! - a repository path (`crates/…`, `docs/…`, `tests/…`, `fuzz/…`, `bench/…`, `scripts/…`) exists,
//!   and in `PATH::NAME` form, NAME occurs as a word in that file;
//! - a bare file or directory name (`mach_table.rs`, `emit/mod.rs`, `linkage/`) is the end of a
//!   path in the repository;
//! - a Rust name (`KNOWN_KINDS`, `Walker::diag_err`, a test's name) occurs, each `::` segment as a
//!   word, in the code (crates/, fuzz/, scripts/, tests/, bench/).
//!
//! Every crate of `crates/` and every page of `docs/` is on its map, and README.md links it. A
//! rename that forgets the document fails here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Where a repository path may start: the top-level directories the document describes.
const ROOTS: &[&str] = &["crates/", "docs/", "tests/", "fuzz/", "bench/", "scripts/"];

/// Directories holding code, whose text Rust names are looked up in.
const CODE: &[&str] = &["crates/", "fuzz/", "scripts/", "tests/", "bench/"];

/// Extensions of the repository's own files; a bare name with another one (`ELF.h`) is LLVM's.
const OWN_EXTENSIONS: &[&str] = &[
    "rs", "toml", "py", "sh", "md", "snap", "tsv", "txt", "dict", "ids",
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The repository's files and directories (relative, `/`-separated, directories with a trailing
/// `/`), and the text of its code files. Build output, git and fuzzing corpora are left out.
struct Tree {
    paths: BTreeSet<String>,
    code: String,
}

fn tree() -> Tree {
    fn walk(root: &Path, rel: &str, t: &mut Tree) {
        for entry in std::fs::read_dir(root.join(rel)).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = format!("{rel}{name}");
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                if ["target", ".git", "corpus", "artifacts", "__pycache__"].contains(&name.as_str())
                {
                    continue;
                }
                t.paths.insert(format!("{path}/"));
                walk(root, &format!("{path}/"), t);
            } else {
                if CODE.iter().any(|c| path.starts_with(c))
                    && let Ok(text) = std::fs::read_to_string(entry.path())
                {
                    t.code.push_str(&text);
                    t.code.push('\n');
                }
                t.paths.insert(path);
            }
        }
    }
    let mut t = Tree {
        paths: BTreeSet::new(),
        code: String::new(),
    };
    walk(&repo(), "", &mut t);
    t
}

/// The text of every `inline code` span outside fenced blocks; a span may go on over a line
/// break, which becomes a space, as in Markdown.
fn code_spans(text: &str) -> Vec<String> {
    let mut prose = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    prose
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|span| span.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

fn is_path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_.-/".contains(c)
}

fn is_ident(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// What a span names.
#[derive(Debug, PartialEq)]
enum Named<'a> {
    /// A path from the repository root, and the item after `::`, if any.
    Repository(&'a str, Option<&'a str>),
    /// The end of some path: `mach_table.rs`, `emit/mod.rs`, `linkage/`.
    Tail(&'a str),
    /// A Rust name, possibly with `::` segments.
    Rust(&'a str),
    /// Anything else (`<tool>`, options, commands, TOML keys): prose.
    Prose,
}

fn classify(span: &str) -> Named<'_> {
    if span.split("::").all(is_ident) {
        return Named::Rust(span);
    }
    let (path, item) = match span.split_once("::") {
        Some((p, i)) => (p, Some(i)),
        None => (span, None),
    };
    if path.is_empty() || !path.chars().all(is_path_char) || !item.is_none_or(is_ident) {
        return Named::Prose;
    }
    if ROOTS.iter().any(|r| path.starts_with(r)) || ["README.md", "Cargo.toml"].contains(&path) {
        return Named::Repository(path, item);
    }
    let own_file = path
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && OWN_EXTENSIONS.contains(&ext));
    if item.is_none() && !path.starts_with(['.', '-']) && (own_file || path.ends_with('/')) {
        return Named::Tail(path);
    }
    Named::Prose
}

/// Whether `word` occurs in `text` with no identifier character on either side.
fn has_word(text: &str, word: &str) -> bool {
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    text.match_indices(word).any(|(at, _)| {
        !ident(text[..at].chars().next_back()) && !ident(text[at + word.len()..].chars().next())
    })
}

#[test]
fn every_path_and_name_it_writes_exists() {
    let doc = read("ARCHITECTURE.md");
    let root = repo();
    let tree = tree();
    let mut counts = [0usize; 3];
    let mut wrong = Vec::new();
    for span in code_spans(&doc) {
        match classify(&span) {
            Named::Repository(path, item) => {
                counts[0] += 1;
                let full = root.join(path);
                if !full.exists() {
                    wrong.push(format!("{span}: no such path"));
                } else if let Some(item) = item {
                    match std::fs::read_to_string(&full) {
                        Ok(text) if has_word(&text, item) => {}
                        Ok(_) => wrong.push(format!("{span}: {path} does not mention {item}")),
                        Err(e) => wrong.push(format!("{span}: {e}")),
                    }
                }
            }
            Named::Tail(tail) => {
                counts[1] += 1;
                let suffix = format!("/{tail}");
                if !tree.paths.iter().any(|p| p == tail || p.ends_with(&suffix)) {
                    wrong.push(format!("{span}: no path in the repository ends so"));
                }
            }
            Named::Rust(name) => {
                counts[2] += 1;
                for segment in name.split("::") {
                    if !has_word(&tree.code, segment) {
                        wrong.push(format!("{span}: {segment} is nowhere in the code"));
                    }
                }
            }
            Named::Prose => {}
        }
    }
    // The document writes well over a hundred paths and names; far fewer means the extraction broke.
    assert!(
        counts[0] > 100 && counts[1] > 20 && counts[2] > 100,
        "only {counts:?} repository paths, file names and Rust names found in ARCHITECTURE.md"
    );
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md is out of date:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_crate_and_doc_page_is_on_the_map() {
    let doc = read("ARCHITECTURE.md");
    let spans = code_spans(&doc);
    let named = |rel: &str| spans.iter().any(|s| s == rel);
    let mut absent = Vec::new();
    for dir in ["crates", "docs"] {
        for entry in std::fs::read_dir(repo().join(dir)).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let wanted = if dir == "crates" {
                entry.path().join("Cargo.toml").is_file()
            } else {
                name.ends_with(".md")
            };
            if wanted && !named(&format!("{dir}/{name}")) {
                absent.push(format!("{dir}/{name}"));
            }
        }
    }
    assert!(
        absent.is_empty(),
        "not on the map in ARCHITECTURE.md: {absent:?}"
    );
}

#[test]
fn readme_links_it() {
    assert!(read("README.md").contains("(ARCHITECTURE.md)"));
}

#[test]
fn spans_are_told_apart() {
    assert_eq!(
        classify("crates/rocpack-amdgpu/src/compat.rs::ROCR_ISAS"),
        Named::Repository("crates/rocpack-amdgpu/src/compat.rs", Some("ROCR_ISAS"))
    );
    assert_eq!(classify("docs/"), Named::Repository("docs/", None));
    assert_eq!(classify("emit/mod.rs"), Named::Tail("emit/mod.rs"));
    assert_eq!(classify("linkage/"), Named::Tail("linkage/"));
    assert_eq!(
        classify("Walker::diag_err"),
        Named::Rust("Walker::diag_err")
    );
    for prose in [
        "scripts/engines/<tool>/run.sh",
        "ELF.h",
        ".deb",
        "--allow",
        "[[gpu]]",
        "cargo test",
    ] {
        assert_eq!(classify(prose), Named::Prose, "{prose}");
    }
    assert_eq!(
        code_spans("a `x` b `y\n z`\n```\n`q`\n```\n`w`"),
        ["x", "y z", "w"]
    );
    assert!(has_word("const ROCR_ISAS: &[&str]", "ROCR_ISAS"));
    assert!(!has_word("fn rocr_isas_x()", "rocr_isas"));
}
