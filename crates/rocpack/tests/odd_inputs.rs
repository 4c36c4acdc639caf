//! Odd inputs: FIFOs, sockets and devices are reported and skipped without being opened (opening
//! a FIFO for reading would wait for a writer forever); a file that shrinks while it is read is
//! an error for that file and the run goes on; names with control characters cannot forge text
//! output.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/bin")
        .join(name)
}

/// Runs rocpack in `dir`. A run that has not ended after two minutes is killed and fails the
/// test: before the fix, a FIFO made every command wait forever.
fn rocpack_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rocpack"));
    cmd.args(args)
        .current_dir(dir)
        .env_remove("HSA_OVERRIDE_GFX_VERSION")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("run rocpack");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("rocpack {args:?} hung (still running after 120 s)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Asserts that `haystack` holds `needle`, showing all of it otherwise.
fn assert_has(haystack: &str, needle: &str) {
    assert!(haystack.contains(needle), "{needle:?} not in:\n{haystack}");
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

#[test]
fn a_fifo_given_as_a_path_is_skipped_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join("pipe"));
    // A FIFO with a package's name is not read as a package either.
    mkfifo(&dir.path().join("pipe.whl"));
    std::fs::copy(fixture("tu1.o"), dir.path().join("tu1.o")).unwrap();
    let runs: &[&[&str]] = &[
        &["list", "pipe", "pipe.whl", "tu1.o"],
        &["scan", "--gpu", "gfx1030", "pipe", "pipe.whl", "tu1.o"],
        &["show", "pipe", "pipe.whl", "tu1.o"],
        &["check", "--gpu", "gfx1030", "pipe", "pipe.whl", "tu1.o"],
        &["extract", "--target", "gfx1030", "-o", "out", "pipe"],
        &["strip", "--dry-run", "--keep", "gfx90a", "pipe", "tu1.o"],
        &["verify", "pipe", "pipe.whl", "tu1.o"],
    ];
    for args in runs {
        let o = rocpack_in(dir.path(), args, &[]);
        let err = text(&o.stderr);
        let out = text(&o.stdout);
        assert_eq!(o.status.code(), Some(2), "{args:?}\n{out}\n{err}");
        assert!(
            (err + &out).contains("pipe: a FIFO: skipped without opening it"),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
    // The file next to it was read.
    let o = rocpack_in(dir.path(), &["list", "pipe", "tu1.o"], &[]);
    assert!(text(&o.stdout).contains("gfx90a:xnack+"));
    assert!(text(&o.stderr).contains("error[not-regular-file]: pipe: a FIFO"));
}

#[test]
fn fifos_sockets_and_devices_met_in_a_walk_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    mkfifo(&tree.join("pipe"));
    let _socket = std::os::unix::net::UnixListener::bind(tree.join("sock")).unwrap();
    std::os::unix::fs::symlink("/dev/null", tree.join("null")).unwrap();
    std::fs::copy(fixture("tu1.o"), tree.join("tu1.o")).unwrap();
    let o = rocpack_in(dir.path(), &["list", "tree"], &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(text(&o.stdout).contains("tree/tu1.o"));
    assert_has(&err, "error[not-regular-file]: tree/pipe: a FIFO");
    assert_has(&err, "error[not-regular-file]: tree/sock: a socket");
    // Symbolic links inside a walked directory are not followed (as before).
    assert!(!err.contains("tree/null"), "{err}");
    // Named directly, the link leads to a character device, which is not opened either.
    let o = rocpack_in(dir.path(), &["list", "tree/null"], &[]);
    assert!(text(&o.stderr).contains("tree/null: a character device: skipped without opening it"));
    assert_eq!(o.status.code(), Some(2));

    let o = rocpack_in(dir.path(), &["verify", "tree"], &[]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert_has(&out, "error[not-regular-file]: tree/pipe: a FIFO");
    assert_has(&out, "error[not-regular-file]: tree/sock: a socket");
}

#[test]
fn a_thin_archive_member_that_is_a_fifo_does_not_hang_the_walk() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::copy(fixture("tu1.o"), tree.join("m.o")).unwrap();
    let ok = Command::new("llvm-ar-19")
        .args(["rcT", "libt.a", "m.o"])
        .current_dir(&tree)
        .status()
        .expect("llvm-ar-19 (scripts/install-deps.sh installs it)")
        .success();
    assert!(ok);
    std::fs::remove_file(tree.join("m.o")).unwrap();
    mkfifo(&tree.join("m.o"));
    let o = rocpack_in(dir.path(), &["list", "tree"], &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error[thin-member-unreadable]: tree/libt.a: member m.o")
            && err.contains("tree/m.o: a FIFO: skipped without opening it"),
        "{err}"
    );
    assert_has(&err, "error[not-regular-file]: tree/m.o: a FIFO");
}

#[test]
fn a_fifo_in_an_install_prefix_is_reported_by_plan_verify() {
    let dir = tempfile::tempdir().unwrap();
    let o = rocpack_in(
        dir.path(),
        &[
            "plan",
            "--release",
            "6.4",
            "--components",
            "rocRAND",
            "--family",
            "debian-sid",
            "--format",
            "json",
            "-q",
            "-o",
            "plan",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let lib = dir.path().join("pre/usr/lib/x86_64-linux-gnu");
    std::fs::create_dir_all(&lib).unwrap();
    mkfifo(&lib.join("librocrand.so.1"));
    let o = rocpack_in(
        dir.path(),
        &[
            "plan",
            "verify",
            "plan/plan.json",
            "pre",
            "--layout",
            "debian",
        ],
        &[],
    );
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{out}{}", text(&o.stderr));
    assert_has(
        &out,
        "error[not-regular-file]: pre/usr/lib/x86_64-linux-gnu/librocrand.so.1: a FIFO: skipped without opening it",
    );
}

/// `ROCPACK_TEST_SHRINK_AFTER_MAP` (debug builds) truncates the named file right after rocpack
/// maps it, so the read past the new end happens every time: before the fix the process died
/// with SIGBUS (exit 135).
#[test]
fn a_file_that_shrinks_while_read_is_an_error_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture("lib3tu-mixed.so"),
        dir.path().join("lib3tu-mixed.so"),
    )
    .unwrap();
    std::fs::copy(fixture("tu1.o"), dir.path().join("tu1.o")).unwrap();
    for cmd in ["list", "show"] {
        std::fs::copy(
            fixture("lib3tu-mixed.so"),
            dir.path().join("lib3tu-mixed.so"),
        )
        .unwrap();
        let o = rocpack_in(
            dir.path(),
            &[cmd, "--json", "lib3tu-mixed.so", "tu1.o"],
            &[("ROCPACK_TEST_SHRINK_AFTER_MAP", "lib3tu-mixed.so:8192")],
        );
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        assert!(
            err.contains(
                "error[file-changed]: lib3tu-mixed.so: changed size while being read (truncated to 8192 bytes at offset 0x"
            ),
            "{cmd}: {err}"
        );
        let out = text(&o.stdout);
        // Nothing read from the shrunken file is reported; the next file is.
        assert!(!out.contains("lib3tu-mixed.so"), "{cmd}: {out}");
        assert!(out.contains("tu1.o"), "{cmd}: {out}");
        assert_eq!(
            std::fs::metadata(dir.path().join("lib3tu-mixed.so"))
                .unwrap()
                .len(),
            8192
        );
    }
}

/// A minimal `ar` archive with one member under a short name (GNU format: `name/`).
fn ar_archive(name: &[u8], data: &[u8]) -> Vec<u8> {
    let mut out = b"!<arch>\n".to_vec();
    let mut header = Vec::new();
    header.extend_from_slice(name);
    header.push(b'/');
    header.resize(16, b' ');
    for (value, width) in [("0", 12), ("0", 6), ("0", 6), ("644", 8)] {
        header.extend_from_slice(format!("{value:<width$}").as_bytes());
    }
    header.extend_from_slice(format!("{:<10}", data.len()).as_bytes());
    header.extend_from_slice(b"`\n");
    assert_eq!(header.len(), 60);
    out.extend_from_slice(&header);
    out.extend_from_slice(data);
    if data.len() % 2 == 1 {
        out.push(b'\n');
    }
    out
}

/// `list` pads its columns by characters, as `output::table` does: names with multi-byte
/// characters, and escaped ones, line up with the header.
#[test]
fn list_columns_line_up_by_characters() {
    let dir = tempfile::tempdir().unwrap();
    let co = std::fs::read(fixture("gfx1100.hsaco")).unwrap();
    for name in ["é.co", "ab.co", "ünïcødé-long-name.co", "t\tab.co"] {
        std::fs::write(dir.path().join(name), &co).unwrap();
    }
    let o = rocpack_in(dir.path(), &["list", "."], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    // Where each column starts, in characters.
    let starts = |line: &str| -> Vec<usize> {
        let chars: Vec<char> = line.chars().collect();
        (1..chars.len())
            .filter(|&i| chars[i] != ' ' && chars[i - 1] == ' ' && i >= 2 && chars[i - 2] == ' ')
            .collect()
    };
    let header = starts(lines[0]);
    assert_eq!(header.len(), 6, "{out}");
    for line in &lines[1..] {
        assert_eq!(starts(line), header, "{out}");
    }
    assert!(out.contains(r"./t\tab.co"), "{out}");
    assert!(out.contains("./ünïcødé-long-name.co"), "{out}");
}

#[test]
fn control_characters_in_names_are_escaped_in_text_output() {
    let dir = tempfile::tempdir().unwrap();
    let co = std::fs::read(fixture("gfx1100.hsaco")).unwrap();
    // A file name that would start a fake row, and one that would colour the terminal.
    std::fs::write(dir.path().join("a\nFAKE ROW.co"), &co).unwrap();
    std::fs::write(dir.path().join("b\x1b[31mred.co"), &co).unwrap();
    // The same inside an ar archive and a tar package.
    std::fs::write(dir.path().join("lib.a"), ar_archive(b"c\x1b[31m.co", &co)).unwrap();
    let mut tar = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(co.len() as u64);
    h.set_mode(0o644);
    h.set_entry_type(tar::EntryType::Regular);
    tar.append_data(&mut h, "d\nFAKE\x1b[2J.co", co.as_slice())
        .unwrap();
    std::fs::write(dir.path().join("pkg.tar"), tar.into_inner().unwrap()).unwrap();

    let forged = |s: &str| s.contains('\x1b') || s.lines().any(|l| l.starts_with("FAKE"));
    for args in [
        &["list", "."][..],
        &["scan", "--gpu", "gfx1100", "."],
        &["check", "--gpu", "gfx1100", "."],
        &["show", "."],
    ] {
        let o = rocpack_in(dir.path(), args, &[]);
        let out = text(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
        assert!(!forged(&out), "{args:?}: {out}");
        assert!(out.contains(r"./a\nFAKE ROW.co"), "{args:?}: {out}");
        assert!(out.contains(r"./b\x1b[31mred.co"), "{args:?}: {out}");
        assert!(
            out.contains(r"pkg.tar!/d\nFAKE\x1b[2J.co"),
            "{args:?}: {out}"
        );
        if args[0] != "scan" && args[0] != "check" {
            // scan and check name libraries (the archive), list and show the member too.
            assert!(out.contains(r"c\x1b[31m.co"), "{args:?}: {out}");
        }
    }
    // JSON keeps the real characters (escaped by JSON itself).
    let o = rocpack_in(dir.path(), &["list", "--json", "."], &[]);
    assert!(text(&o.stdout).contains(r#""file":"./a\nFAKE ROW.co""#));

    // Diagnostics on stderr and verify findings are escaped too.
    mkfifo(&dir.path().join("p\nFAKE\x1b[31m"));
    let o = rocpack_in(dir.path(), &["list", "."], &[]);
    let err = text(&o.stderr);
    assert!(!forged(&err), "{err}");
    assert_has(&err, r"error[not-regular-file]: ./p\nFAKE\x1b[31m: a FIFO");
    let o = rocpack_in(dir.path(), &["verify", "."], &[]);
    let out = text(&o.stdout);
    assert!(!forged(&out), "{out}");
    assert_has(&out, r"error[not-regular-file]: ./p\nFAKE\x1b[31m: a FIFO");
}
