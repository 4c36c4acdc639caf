//! Shell completions and manual pages, judged by the programs that read them: bash completes
//! with the generated script, groff (as man(1) runs it, with preconv) formats every page without
//! a warning, and every command and long option appears where it belongs.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::*;

/// The subcommands, from `rocpack --help` (what a user sees).
fn commands() -> Vec<String> {
    commands_in_help(&rocpack_ok(&["--help"]))
}

/// What bash's programmable completion offers for `words` with the cursor on the last word.
fn bash_complete(words: &[&str]) -> BTreeSet<String> {
    let script = rocpack_ok(&["completions", "bash"]);
    let dir = tempdir();
    let path = dir.path().join("rocpack.bash");
    std::fs::write(&path, script).unwrap();
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let line = words.join(" ");
    let prog = format!(
        "source '{}' && complete -p rocpack >/dev/null && COMP_WORDS=({}) && COMP_CWORD={} && \
         COMP_LINE='{line}' && COMP_POINT={} && _rocpack rocpack '{}' '{}' && \
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        path.display(),
        quoted.join(" "),
        words.len() - 1,
        line.len(),
        words[words.len() - 1],
        words[words.len() - 2],
    );
    let out = run_checked(Command::new("bash").args(["--norc", "-c", &prog]));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn bash_completes_commands_and_options() {
    let all = bash_complete(&["rocpack", ""]);
    for c in commands() {
        assert!(all.contains(&c), "bash does not offer {c}: {all:?}");
    }
    assert_eq!(
        bash_complete(&["rocpack", "ch"]),
        BTreeSet::from(["check".to_owned()])
    );
    let opts = bash_complete(&["rocpack", "check", "--po"]);
    assert_eq!(opts, BTreeSet::from(["--policy".to_owned()]));
}

#[test]
fn every_shell_gets_a_script() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let s = rocpack_ok(&["completions", shell]);
        assert!(s.contains("rocpack"), "{shell}");
        assert!(s.contains("check") && s.contains("max-member"), "{shell}");
    }
    // An unknown shell is a usage error.
    let mut cmd = rocpack();
    cmd.args(["completions", "tcsh"]);
    assert_eq!(output_of(&mut cmd).status.code(), Some(2));
}

#[test]
fn man_pages_format_cleanly_and_cover_every_command_and_option() {
    let dir = tempdir();
    let listed = rocpack_ok(&["man", "-o", dir.path().to_str().unwrap()]);
    let cmds = commands();
    assert_eq!(listed.lines().count(), cmds.len() + 1, "{listed}");
    let mut pages = vec![("rocpack".to_owned(), dir.path().join("rocpack.1"))];
    pages.extend(
        cmds.iter()
            .map(|c| (c.clone(), dir.path().join(format!("rocpack-{c}.1")))),
    );
    for (name, page) in &pages {
        // man(1) runs groff with preconv (-k) for UTF-8 input; -ww enables every warning.
        let out = run_checked(
            Command::new("groff")
                .args(["-k", "-man", "-z", "-ww"])
                .arg(page),
        );
        assert!(
            out.stderr.is_empty(),
            "{}: {}",
            page.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(page).unwrap();
        assert!(text.contains(".TH "), "{name}: no title");
        if name == "rocpack" {
            for c in &cmds {
                assert!(
                    text.contains(&format!("rocpack\\-{c}(1)")),
                    "rocpack.1 lacks {c}"
                );
            }
            continue;
        }
        // Every long option `rocpack NAME --help` lists is in its page (roff escapes '-').
        let help = rocpack_ok(&[name.as_str(), "--help"]);
        for opt in help
            .split_whitespace()
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .map(|w| w.trim_end_matches([',', '.', ')']))
            .filter(|w| {
                w.chars()
                    .skip(2)
                    .all(|c| c.is_ascii_alphanumeric() || c == '-')
            })
        {
            let roff = opt.replace('-', "\\-");
            assert!(text.contains(&roff), "rocpack-{name}.1 lacks {opt}");
        }
    }
    // Without -o: rocpack.1 on stdout.
    assert!(rocpack_ok(&["man"]).starts_with(".ie"));
}
