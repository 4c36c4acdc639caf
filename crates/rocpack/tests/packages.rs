//! Reading a package in place gives exactly what its unpacked tree gives.
//!
//! Each test lays out a small install tree from the committed fixtures (shared libraries, an
//! archive, compressed and uncompressed bundles, a bare code object, a rocBLAS-style Tensile
//! directory, a MIOpen kernel database, a symbolic link and a file without GPU code), packs it
//! with the ordinary tools (`dpkg-deb`, `tar` with gzip/xz/zstd, Python's `zipfile`) and runs
//! `rocpack list|check|scan --json` on the package and on the tree: the records must be the same
//! once `PACKAGE!/` and `TREE/` are written alike. Damaged packages must end in exit status 2 with
//! an error naming the package and where it broke, keep the members read before the damage, and
//! never panic. The last test does the same comparison on a real Debian package (librocrand1,
//! fetched once by scripts/fetch-corpus.sh).
//!
//! Every packing tool is required: a missing one fails the test with a message naming
//! scripts/install-deps.sh, so no comparison is ever skipped.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{describe, fetch_corpus, fixtures_bin, json_lines, output_of, run_checked};
use serde_json::Value;

/// Where the fixtures go inside the tree.
const LIB: &str = "usr/lib/x86_64-linux-gnu";
/// The GPUs `check` is asked about.
const GPUS: [&str; 4] = ["--gpu", "gfx90a", "--gpu", "gfx1030"];
/// What every relative path is rewritten to, for packages and trees alike.
const ROOT: &str = "<ROOT>/";

// ------------------------------------------------------------------------------------------------
// Tools and processes
// ------------------------------------------------------------------------------------------------

/// Absolute path of a required packing tool; fails the test when it is missing.
fn need(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "required tool `{name}` not found in PATH: run scripts/install-deps.sh, which \
                 installs it; the package tests build or read their packages with it and \
                 cannot run without it"
            )
        })
}

/// What one rocpack run printed, and how it ended.
struct Run {
    command: String,
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn records(&self) -> Vec<Value> {
        json_lines(&self.stdout)
    }
}

/// Runs rocpack; a panic (or any death by signal) fails the test whatever the caller expects.
fn rocpack<S: AsRef<OsStr>>(args: &[S]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rocpack"));
    cmd.args(args).env_remove("HSA_OVERRIDE_GFX_VERSION");
    let out = output_of(&mut cmd);
    let command = describe(&cmd);
    let stdout = String::from_utf8(out.stdout).expect("rocpack stdout is not UTF-8");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !stderr.contains("panicked"),
        "{command} panicked:\n{stderr}"
    );
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("{command} was killed ({}):\n{stderr}", out.status));
    Run {
        command,
        code,
        stdout,
        stderr,
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}

// ------------------------------------------------------------------------------------------------
// The tree and its packages
// ------------------------------------------------------------------------------------------------

/// Fixtures copied into `usr/lib/x86_64-linux-gnu/`, as (fixture, name in the tree).
const LIBRARIES: &[(&str, &str)] = &[
    // Shared library, three uncompressed bundles.
    ("lib3tu-lld.so", "libthree.so.1.0"),
    // Shared library whose bundles are compressed (CCOB v2 zstd).
    ("lib2tu-compressed.so", "libcompressed.so.2"),
    // Static archives: host objects with bundles, and RDC bitcode.
    ("libhost.a", "libhost.a"),
    ("librdc.a", "librdc.a"),
    // Device code files: a compressed bundle, an uncompressed one with generic targets, and a
    // bare code object.
    ("tu2-compressed.hipfb", "kernels-compressed.hipfb"),
    ("generic-v6.hipfb", "kernels-generic.hipfb"),
    ("gfx1100.hsaco", "gfx1100.hsaco"),
];

/// The rocBLAS kernel directory, relative to `LIB`.
const TENSILE: &str = "rocblas/library";

/// Lays out the install tree under `root`.
fn make_tree(root: &Path) {
    let lib = root.join(LIB);
    let tensile = lib.join(TENSILE);
    std::fs::create_dir_all(&tensile).unwrap();
    for (fixture, name) in LIBRARIES {
        std::fs::copy(fixtures_bin().join(fixture), lib.join(name)).unwrap();
    }
    // The runtime's view of a library: a symbolic link to it, which must not be read twice.
    std::os::unix::fs::symlink("libthree.so.1.0", lib.join("libthree.so.1")).unwrap();
    for (fixture, name) in [
        ("gfx90a-xnack+.co", "Kernels.so-000-gfx90a-xnack+.hsaco"),
        ("gfx90a-xnack-.co", "Kernels.so-000-gfx90a-xnack-.hsaco"),
    ] {
        std::fs::copy(fixtures_bin().join(fixture), tensile.join(name)).unwrap();
    }
    // Index files hold no device code; only their names matter.
    std::fs::write(
        tensile.join("TensileLibrary_lazy_gfx90a.dat"),
        b"\x82\xa7rocpack\xa4test",
    )
    .unwrap();
    let miopen = root.join("usr/share/miopen/db");
    std::fs::create_dir_all(&miopen).unwrap();
    std::fs::write(
        miopen.join("gfx90a_68.kdb"),
        b"SQLite format 3\0 (not really)",
    )
    .unwrap();
    let doc = root.join("usr/share/doc/rocpack-test");
    std::fs::create_dir_all(&doc).unwrap();
    std::fs::write(doc.join("README"), b"no GPU code here\n").unwrap();
}

/// The package formats built from the tree.
#[derive(Debug, Clone, Copy)]
enum Kind {
    DebXz,
    DebZstd,
    DebGzip,
    Wheel,
    Tar,
    TarGz,
    TarXz,
    TarZst,
}

impl Kind {
    fn file_name(self) -> &'static str {
        match self {
            Kind::DebXz => "rocpack-test_1.0_amd64.deb",
            Kind::DebZstd => "rocpack-test-zstd_1.0_amd64.deb",
            Kind::DebGzip => "rocpack-test-gzip_1.0_amd64.deb",
            Kind::Wheel => "rocpack_test-1.0-py3-none-linux_x86_64.whl",
            Kind::Tar => "rocpack-test.tar",
            Kind::TarGz => "rocpack-test.tar.gz",
            Kind::TarXz => "rocpack-test.tar.xz",
            Kind::TarZst => "rocpack-test.tar.zst",
        }
    }
}

/// A tree and the packages built from it, in one temporary directory.
struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("rocpack-packages-")
            .tempdir()
            .expect("cannot create a temporary directory");
        make_tree(&dir.path().join("tree"));
        Workspace { dir }
    }

    fn tree(&self) -> PathBuf {
        self.dir.path().join("tree")
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Builds the package of `kind` from the tree; returns its path.
    fn build(&self, kind: Kind) -> PathBuf {
        let out = self.path(kind.file_name());
        match kind {
            Kind::DebXz => self.deb(&out, "xz"),
            Kind::DebZstd => self.deb(&out, "zstd"),
            Kind::DebGzip => self.deb(&out, "gzip"),
            Kind::Wheel => self.wheel(&out),
            Kind::Tar => self.tar(&out, None),
            Kind::TarGz => self.tar(&out, Some("gzip")),
            Kind::TarXz => self.tar(&out, Some("xz")),
            Kind::TarZst => self.tar(&out, Some("zstd")),
        }
        out
    }

    fn deb(&self, out: &Path, compressor: &str) {
        let dpkg_deb = need("dpkg-deb");
        // A staging copy of the tree with DEBIAN/control: the tree itself must not hold it,
        // since it is not part of data.tar.
        let stage = self.path(&format!("stage-{compressor}"));
        copy_tree(&self.tree(), &stage);
        std::fs::create_dir_all(stage.join("DEBIAN")).unwrap();
        std::fs::write(
            stage.join("DEBIAN/control"),
            "Package: rocpack-test\nVersion: 1.0\nArchitecture: amd64\n\
             Maintainer: rocpack tests <tests@rocpack.invalid>\n\
             Description: fixtures for rocpack's package tests\n",
        )
        .unwrap();
        run_checked(
            Command::new(dpkg_deb)
                .args(["--build", "--root-owner-group"])
                .arg(format!("-Z{compressor}"))
                .arg(&stage)
                .arg(out),
        );
        std::fs::remove_dir_all(&stage).unwrap();
    }

    fn tar(&self, out: &Path, compressor: Option<&str>) {
        let tar = need("tar");
        let mut cmd = Command::new(tar);
        cmd.args(["--sort=name", "--owner=0", "--group=0", "--format=gnu"]);
        if let Some(c) = compressor {
            // tar runs the compressor by name.
            need(c);
            cmd.arg(format!("--use-compress-program={c}"));
        }
        cmd.arg("-cf").arg(out).arg("-C").arg(self.tree()).arg(".");
        run_checked(&mut cmd);
    }

    /// A wheel (zip) with members in the tree's walk order: some stored, some deflated,
    /// directory entries, and the symbolic link as a link.
    fn wheel(&self, out: &Path) {
        let python = need("python3");
        run_checked(
            Command::new(python)
                .arg("-c")
                .arg(WHEEL_SCRIPT)
                .arg(self.tree())
                .arg(out),
        );
    }
}

/// `python3 -c WHEEL_SCRIPT TREE OUT`. Stored: the shared library with uncompressed bundles
/// (which `zip_stored_member_with_a_bad_crc_is_an_error` damages), the static archive and one
/// Tensile code object; everything else deflated.
const WHEEL_SCRIPT: &str = r#"
import os, stat, sys, zipfile
root, out = sys.argv[1], sys.argv[2]
STORED = {"libthree.so.1.0", "libhost.a", "Kernels.so-000-gfx90a-xnack+.hsaco"}
methods = set()
def add(z, d):
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        rel = os.path.relpath(p, root)
        if os.path.islink(p):
            info = zipfile.ZipInfo(rel)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, os.readlink(p))
        elif os.path.isdir(p):
            z.writestr(rel + "/", b"")
            add(z, p)
        else:
            method = zipfile.ZIP_STORED if name in STORED else zipfile.ZIP_DEFLATED
            methods.add(method)
            z.write(p, rel, compress_type=method)
with zipfile.ZipFile(out, "w") as z:
    add(z, root)
assert methods == {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}, methods
"#;

/// Copies a directory tree, keeping symbolic links as links.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let t = e.file_type().unwrap();
        if t.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src).unwrap(), &dst).unwrap();
        } else if t.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Normalised records
// ------------------------------------------------------------------------------------------------

/// Rewrites `prefix` (`PKG!/` or `TREE/`) to [`ROOT`] in every string, after checking that each
/// `package` field names `package` (null for a tree) and blanking it.
fn normalise(v: &mut Value, prefix: &str, package: Option<&str>, context: &str) {
    match v {
        Value::String(s) if s.contains(prefix) => *s = s.replace(prefix, ROOT),
        Value::Array(a) => a
            .iter_mut()
            .for_each(|x| normalise(x, prefix, package, context)),
        Value::Object(o) => {
            if let Some(p) = o.get_mut("package") {
                assert_eq!(
                    p.as_str(),
                    package,
                    "{context}: the package field of a record"
                );
                *p = Value::Null;
            }
            o.values_mut()
                .for_each(|x| normalise(x, prefix, package, context));
        }
        _ => {}
    }
}

/// The records of a run on a package, normalised.
fn package_records(run: &Run, pkg: &Path) -> Vec<Value> {
    let prefix = format!("{}!/", path_str(pkg));
    let mut recs = run.records();
    for r in &mut recs {
        normalise(r, &prefix, Some(path_str(pkg)), &run.command);
    }
    recs
}

/// The records of a run on a tree, normalised.
fn tree_records(run: &Run, tree: &Path) -> Vec<Value> {
    let prefix = format!("{}/", path_str(tree));
    let mut recs = run.records();
    for r in &mut recs {
        normalise(r, &prefix, None, &run.command);
    }
    recs
}

/// The member (path below the root) a normalised record is about, if any.
fn member_of(record: &Value) -> Option<String> {
    record["file"]
        .as_str()
        .and_then(|f| f.strip_prefix(ROOT))
        .map(str::to_owned)
}

/// Normalised records grouped by member, in order.
fn by_member(records: &[Value]) -> BTreeMap<String, Vec<Value>> {
    let mut m: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for r in records {
        let member = member_of(r).unwrap_or_else(|| panic!("record without a member path: {r}"));
        m.entry(member).or_default().push(r.clone());
    }
    m
}

/// Asserts two record lists are equal, naming the first difference.
fn assert_same_records(pkg: &[Value], tree: &[Value], what: &str) {
    for (i, (p, t)) in pkg.iter().zip(tree).enumerate() {
        assert_eq!(
            p, t,
            "{what}: record #{i} differs (left: package, right: tree)"
        );
    }
    assert_eq!(
        pkg.len(),
        tree.len(),
        "{what}: {} records from the package, {} from the tree",
        pkg.len(),
        tree.len()
    );
}

/// Asserts a run ended in exit status 2 with an `error:` line naming `pkg` and either a byte
/// offset or a member.
fn assert_error_names_package(run: &Run, pkg: &Path) {
    assert_eq!(
        run.code, 2,
        "{}: exit status (stderr:\n{})",
        run.command, run.stderr
    );
    let pkg = path_str(pkg);
    let named = run.stderr.lines().any(|l| {
        l.starts_with("error")
            && l.contains(pkg)
            && (l.contains("offset 0x") || l.contains("member"))
    });
    assert!(
        named,
        "{}: no error line names {pkg} and a byte offset or member; stderr:\n{}",
        run.command, run.stderr
    );
}

// ------------------------------------------------------------------------------------------------
// Packages read like their trees
// ------------------------------------------------------------------------------------------------

/// The tree's listing really holds what the comparison is meant to cover.
fn assert_listing_covers_the_formats(list: &[Value]) {
    let has = |what: &str, f: &dyn Fn(&Value) -> bool| {
        assert!(
            list.iter().any(f),
            "the tree's listing has no {what}, so the comparison would not cover it"
        );
    };
    let container = |r: &Value| r["container"].as_str().unwrap().to_owned();
    has("compressed bundle", &|r| r["compressed"] == true);
    has("archive member", &|r| container(r).starts_with("member "));
    has("shared library bundle", &|r| {
        container(r).starts_with(".hip_fatbin")
    });
    has("Tensile code object", &|r| {
        member_of(r).is_some_and(|m| m.contains("/rocblas/library/Kernels.so-"))
    });
}

/// `list`, `check` and `scan` give the same records for the package and for the tree.
fn assert_reads_like_tree(kind: Kind) {
    let ws = Workspace::new();
    let pkg = ws.build(kind);
    let tree = ws.tree();
    let commands: [(&str, Vec<&str>); 3] = [
        ("list", vec!["list", "--json"]),
        ("check", [&["check", "--json"][..], &GPUS[..]].concat()),
        ("scan", vec!["scan", "--json"]),
    ];
    for (name, args) in commands {
        let on = |p: &Path| {
            let mut a: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
            a.push(p.as_os_str());
            rocpack(&a)
        };
        let (t, p) = (on(&tree), on(&pkg));
        for r in [&t, &p] {
            assert!(
                r.code == 0 || (name == "check" && r.code == 1),
                "{}: exit status {}; stderr:\n{}",
                r.command,
                r.code,
                r.stderr
            );
            assert_eq!(r.stderr, "", "{}: stderr", r.command);
        }
        assert_eq!(p.code, t.code, "{name}: exit status, package vs tree");
        let tree_recs = tree_records(&t, &tree);
        let pkg_recs = package_records(&p, &pkg);
        match name {
            "list" => assert_listing_covers_the_formats(&tree_recs),
            "check" => assert!(
                tree_recs.iter().any(|r| r["library_kind"] == "tensile-dir"),
                "check saw no Tensile directory in the tree"
            ),
            _ => assert!(
                tree_recs.iter().any(|r| r["type"] == "kernel-db"),
                "scan saw no MIOpen kernel database in the tree"
            ),
        }
        assert_same_records(&pkg_recs, &tree_recs, &format!("{kind:?}: rocpack {name}"));
    }
}

#[test]
fn deb_xz_reads_like_its_tree() {
    assert_reads_like_tree(Kind::DebXz);
}

#[test]
fn deb_zstd_reads_like_its_tree() {
    assert_reads_like_tree(Kind::DebZstd);
}

#[test]
fn deb_gzip_reads_like_its_tree() {
    assert_reads_like_tree(Kind::DebGzip);
}

#[test]
fn wheel_with_stored_and_deflated_members_reads_like_its_tree() {
    assert_reads_like_tree(Kind::Wheel);
}

#[test]
fn tar_reads_like_its_tree() {
    assert_reads_like_tree(Kind::Tar);
}

#[test]
fn tar_gz_reads_like_its_tree() {
    assert_reads_like_tree(Kind::TarGz);
}

#[test]
fn tar_xz_reads_like_its_tree() {
    assert_reads_like_tree(Kind::TarXz);
}

#[test]
fn tar_zst_reads_like_its_tree() {
    assert_reads_like_tree(Kind::TarZst);
}

// ------------------------------------------------------------------------------------------------
// Extract
// ------------------------------------------------------------------------------------------------

/// `rocpack extract --json --target TARGET -o OUT PATH`.
fn extract_run(path: &Path, target: &str, out: &Path) -> Run {
    rocpack(&[
        OsStr::new("extract"),
        OsStr::new("--json"),
        OsStr::new("--target"),
        OsStr::new(target),
        OsStr::new("-o"),
        out.as_os_str(),
        path.as_os_str(),
    ])
}

/// What an extract run wrote: each record, its `file` rewritten from `prefix` to [`ROOT`] and
/// its `output` cut to the file name, with the bytes of that file.
fn extracted(run: &Run, prefix: &str) -> Vec<(Value, Vec<u8>)> {
    assert_eq!(
        run.code, 0,
        "{}: exit status; stderr:\n{}",
        run.command, run.stderr
    );
    assert_eq!(run.stderr, "", "{}: stderr", run.command);
    run.records()
        .into_iter()
        .map(|mut r| {
            let out = PathBuf::from(r["output"].as_str().unwrap());
            let bytes = std::fs::read(&out).unwrap();
            r["output"] = Value::from(out.file_name().unwrap().to_string_lossy().into_owned());
            let file = r["file"].as_str().unwrap().replace(prefix, ROOT);
            r["file"] = Value::from(file);
            (r, bytes)
        })
        .collect()
}

/// `extract` from the package writes the same files with the same bytes as from `tree`, for
/// every target; returns how many code objects were compared.
fn assert_extracts_like_tree(pkg: &Path, tree: &Path, targets: &[&str], scratch: &Path) -> usize {
    let mut compared = 0;
    for target in targets {
        let slug = target.replace(':', "_");
        let (t_out, p_out) = (
            scratch.join(format!("tree-{slug}")),
            scratch.join(format!("pkg-{slug}")),
        );
        let t = extracted(
            &extract_run(tree, target, &t_out),
            &format!("{}/", path_str(tree)),
        );
        let p = extracted(
            &extract_run(pkg, target, &p_out),
            &format!("{}!/", path_str(pkg)),
        );
        assert!(
            !t.is_empty(),
            "nothing extracted for {target} from {}",
            tree.display()
        );
        for (i, ((pr, pb), (tr, tb))) in p.iter().zip(&t).enumerate() {
            assert_eq!(pr, tr, "{target}: record #{i} (left: package, right: tree)");
            assert!(
                pb == tb,
                "{target}: {} differs from the tree's bytes",
                pr["output"]
            );
        }
        assert_eq!(
            p.len(),
            t.len(),
            "{target}: code objects from the package and from the tree"
        );
        compared += t.len();
    }
    compared
}

const EXTRACT_TARGETS: [&str; 4] = [
    "gfx90a:xnack+",
    "gfx1030",
    "gfx906:sramecc-:xnack-",
    "gfx942",
];

#[test]
fn extract_from_a_wheel_gives_the_bytes_of_its_tree() {
    let ws = Workspace::new();
    let pkg = ws.build(Kind::Wheel);
    assert!(assert_extracts_like_tree(&pkg, &ws.tree(), &EXTRACT_TARGETS, ws.dir.path()) > 0);
}

#[test]
fn extract_from_a_deb_gives_the_bytes_of_its_tree() {
    let ws = Workspace::new();
    let pkg = ws.build(Kind::DebXz);
    assert!(assert_extracts_like_tree(&pkg, &ws.tree(), &EXTRACT_TARGETS, ws.dir.path()) > 0);
}

#[test]
fn extract_from_a_tarball_gives_the_bytes_of_its_tree() {
    let ws = Workspace::new();
    let pkg = ws.build(Kind::TarZst);
    assert!(assert_extracts_like_tree(&pkg, &ws.tree(), &EXTRACT_TARGETS, ws.dir.path()) > 0);
}

/// The wheel of issue 14, where `extract` said "no code object for gfx1100" while `list` showed
/// it (network: downloaded once from PyPI). The tree is the wheel unpacked by Python's zipfile.
#[test]
fn extract_from_the_gafime_rocm_wheel_gives_the_bytes_of_its_tree() {
    let wheel = common::fetch_wheel(
        "gafime-rocm",
        "0.4.7",
        "gafime_rocm-0.4.7-cp311-cp311-manylinux_2_28_x86_64.whl",
    );
    let scratch = common::tempdir();
    let tree = scratch.path().join("tree");
    run_checked(
        Command::new(need("python3"))
            .arg("-c")
            .arg("import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])")
            .arg(&wheel)
            .arg(&tree),
    );
    let n = assert_extracts_like_tree(&wheel, &tree, &["gfx1100"], scratch.path());
    assert!(n > 0);
}

// ------------------------------------------------------------------------------------------------
// Damaged packages
// ------------------------------------------------------------------------------------------------

/// Reads a NUL-terminated field of a tar header.
fn tar_field(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// The regular-file members whose data lies wholly within `stream`, a tar stream that may be
/// cut short; paths without a leading `./`. Written from the tar format (ustar and the GNU
/// long-name extension), not from rocpack.
fn complete_members(stream: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    let mut long_name: Option<String> = None;
    while pos + 512 <= stream.len() {
        let h = &stream[pos..pos + 512];
        if h.iter().all(|&b| b == 0) {
            break;
        }
        let size_field = tar_field(&h[124..136]);
        let size = usize::from_str_radix(size_field.trim(), 8)
            .unwrap_or_else(|e| panic!("tar header at {pos:#x}: size {size_field:?}: {e}"));
        let data = pos + 512;
        let end = data + size;
        let mut name = tar_field(&h[0..100]);
        if &h[257..263] == b"ustar\0" {
            let prefix = tar_field(&h[345..500]);
            if !prefix.is_empty() {
                name = format!("{prefix}/{name}");
            }
        }
        match h[156] {
            b'L' if end <= stream.len() => {
                long_name = Some(tar_field(&stream[data..end]));
            }
            t => {
                let name = long_name.take().unwrap_or(name);
                if (t == b'0' || t == 0) && end <= stream.len() {
                    out.push(name.trim_start_matches("./").to_owned());
                }
            }
        }
        pos = data + size.div_ceil(512) * 512;
    }
    out
}

/// Decompresses a stream that was cut short with the compressor's own tool: what it decodes
/// before the cut.
fn decode_partial(tool: &str, file: &Path) -> Vec<u8> {
    let mut cmd = Command::new(need(tool));
    cmd.arg("-dc").arg(file);
    let out = output_of(&mut cmd);
    assert!(
        !out.status.success(),
        "{} accepted a stream that was cut short",
        describe(&cmd)
    );
    assert!(
        !out.stdout.is_empty(),
        "{} decoded nothing before the cut:\n{}",
        describe(&cmd),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Offset and declared size of the data of an `ar` member.
fn ar_member(archive: &[u8], wanted: &str) -> (usize, usize) {
    assert!(archive.starts_with(b"!<arch>\n"), "not an ar archive");
    let mut pos = 8;
    while pos + 60 <= archive.len() {
        let h = &archive[pos..pos + 60];
        let name = String::from_utf8_lossy(&h[..16])
            .trim()
            .trim_end_matches('/')
            .to_owned();
        let size: usize = String::from_utf8_lossy(&h[48..58]).trim().parse().unwrap();
        if name == wanted {
            return (pos + 60, size);
        }
        pos += 60 + size + size % 2;
    }
    panic!("no ar member {wanted}");
}

/// `rocpack list --json` on the tree, normalised and grouped by member.
fn tree_listing(ws: &Workspace) -> BTreeMap<String, Vec<Value>> {
    let run = rocpack(&[
        OsStr::new("list"),
        OsStr::new("--json"),
        ws.tree().as_os_str(),
    ]);
    assert_eq!(run.code, 0, "{}: {}", run.command, run.stderr);
    by_member(&tree_records(&run, &ws.tree()))
}

/// Every member a run reports for `pkg` is reported exactly as the tree reports it: damage never
/// turns into wrong records.
fn assert_reported_members_match_tree(
    got: &BTreeMap<String, Vec<Value>>,
    tree: &BTreeMap<String, Vec<Value>>,
    what: &str,
) {
    for (member, recs) in got {
        let want = tree
            .get(member)
            .unwrap_or_else(|| panic!("{what}: reports {member}, which the tree does not have"));
        assert_same_records(recs, want, &format!("{what}: {member}"));
    }
}

/// The members of `pkg` found whole before the damage (`intact`) that hold device code are
/// all reported, as the tree reports them.
fn assert_members_before_damage_reported(ws: &Workspace, pkg: &Path, intact: &[String]) {
    let tree = tree_listing(ws);
    let run = rocpack(&[OsStr::new("list"), OsStr::new("--json"), pkg.as_os_str()]);
    assert_eq!(
        run.code, 2,
        "{}: exit status; stderr:\n{}",
        run.command, run.stderr
    );
    let got = by_member(&package_records(&run, pkg));
    assert_reported_members_match_tree(&got, &tree, &run.command);
    let expected: Vec<&String> = intact.iter().filter(|m| tree.contains_key(*m)).collect();
    assert!(
        !expected.is_empty(),
        "the damage leaves no member with device code whole; move the cut ({intact:?})"
    );
    let missing: Vec<&&String> = expected.iter().filter(|m| !got.contains_key(**m)).collect();
    assert!(
        missing.is_empty(),
        "{}: members stored whole before the damage are not reported: {missing:?}\n\
         (reported: {:?})\nstderr:\n{}",
        run.command,
        got.keys().collect::<Vec<_>>(),
        run.stderr
    );
}

/// A Debian package cut in the middle of its data.tar.xz, and the tar stream `xz` still
/// decodes from the part that is left.
fn truncated_deb(ws: &Workspace) -> (PathBuf, Vec<u8>) {
    let deb = std::fs::read(ws.build(Kind::DebXz)).unwrap();
    let (start, size) = ar_member(&deb, "data.tar.xz");
    assert_eq!(
        start + size + size % 2,
        deb.len(),
        "data.tar.xz is not the last member"
    );
    let cut = start + size / 2;
    let path = ws.path("truncated_1.0_amd64.deb");
    std::fs::write(&path, &deb[..cut]).unwrap();
    let data = ws.path("truncated-data.tar.xz");
    std::fs::write(&data, &deb[start..cut]).unwrap();
    let stream = decode_partial("xz", &data);
    (path, stream)
}

/// Runs `list --json` and `scan --json` on a damaged package: both must end in exit status 2
/// with an error naming it.
fn assert_damage_reported(pkg: &Path) {
    for cmd in ["list", "scan"] {
        let run = rocpack(&[OsStr::new(cmd), OsStr::new("--json"), pkg.as_os_str()]);
        assert_error_names_package(&run, pkg);
    }
}

#[test]
fn truncated_deb_is_an_error_naming_the_package() {
    let ws = Workspace::new();
    let (deb, _) = truncated_deb(&ws);
    assert_damage_reported(&deb);
}

#[test]
fn truncated_deb_still_reports_the_members_before_the_cut() {
    let ws = Workspace::new();
    let (deb, stream) = truncated_deb(&ws);
    assert_members_before_damage_reported(&ws, &deb, &complete_members(&stream));
}

#[test]
fn tar_gz_cut_short_reports_the_members_before_the_cut_and_an_error() {
    let ws = Workspace::new();
    let whole = std::fs::read(ws.build(Kind::TarGz)).unwrap();
    let cut = ws.path("cut.tar.gz");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    assert_damage_reported(&cut);
    let stream = decode_partial("gzip", &cut);
    assert_members_before_damage_reported(&ws, &cut, &complete_members(&stream));
}

/// Offset of a zip file's end of central directory record.
fn zip_end_record(zip: &[u8]) -> usize {
    (0..=zip.len() - 22)
        .rev()
        .find(|&p| zip[p..p + 4] == [0x50, 0x4b, 0x05, 0x06])
        .expect("no end of central directory record")
}

#[test]
fn zip_whose_central_directory_lies_past_the_end_is_an_error() {
    let ws = Workspace::new();
    let mut zip = std::fs::read(ws.build(Kind::Wheel)).unwrap();
    let eocd = zip_end_record(&zip);
    let past = u32::try_from(zip.len() + 4096).unwrap();
    zip[eocd + 16..eocd + 20].copy_from_slice(&past.to_le_bytes());
    let bad = ws.path("bad_directory-1.0-py3-none-any.whl");
    std::fs::write(&bad, &zip).unwrap();
    assert_damage_reported(&bad);
    let run = rocpack(&[OsStr::new("list"), OsStr::new("--json"), bad.as_os_str()]);
    let got = by_member(&package_records(&run, &bad));
    assert_reported_members_match_tree(&got, &tree_listing(&ws), &run.command);
}

/// Where a zip member's data starts, from its central directory record (found by name).
fn zip_member_data(zip: &[u8], name: &str) -> (usize, usize, u16) {
    let le16 = |at: usize| usize::from(u16::from_le_bytes([zip[at], zip[at + 1]]));
    let le32 = |at: usize| u32::from_le_bytes(zip[at..at + 4].try_into().unwrap()) as usize;
    let eocd = zip_end_record(zip);
    let mut p = le32(eocd + 16);
    for _ in 0..le16(eocd + 10) {
        assert_eq!(le32(p), 0x0201_4b50, "central directory record at {p:#x}");
        let method = u16::try_from(le16(p + 10)).unwrap();
        let size = le32(p + 20);
        let (n, x, c) = (le16(p + 28), le16(p + 30), le16(p + 32));
        if &zip[p + 46..p + 46 + n] == name.as_bytes() {
            let local = le32(p + 42);
            let start = local + 30 + le16(local + 26) + le16(local + 28);
            return (start, size, method);
        }
        p += 46 + n + x + c;
    }
    panic!("no member {name} in the zip file");
}

#[test]
fn zip_stored_member_with_a_bad_crc_is_an_error() {
    let ws = Workspace::new();
    let mut zip = std::fs::read(ws.build(Kind::Wheel)).unwrap();
    let member = format!("{LIB}/libthree.so.1.0");
    let (start, size, method) = zip_member_data(&zip, &member);
    assert_eq!(method, 0, "{member} is not stored");
    // A byte in the middle of the .hip_fatbin section: nothing but the CRC can tell.
    zip[start + size / 2] ^= 0x5a;
    let bad = ws.path("bad_crc-1.0-py3-none-any.whl");
    std::fs::write(&bad, &zip).unwrap();
    assert_damage_reported(&bad);
    let run = rocpack(&[OsStr::new("list"), OsStr::new("--json"), bad.as_os_str()]);
    assert!(
        run.stderr
            .lines()
            .any(|l| l.starts_with("error") && l.contains(&member)),
        "{}: no error names the damaged member {member}; stderr:\n{}",
        run.command,
        run.stderr
    );
    // The other members are read all the same.
    let mut tree = tree_listing(&ws);
    let mut got = by_member(&package_records(&run, &bad));
    got.remove(&member);
    tree.remove(&member);
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        tree.keys().collect::<Vec<_>>(),
        "{}: members reported besides the damaged one",
        run.command
    );
    assert_reported_members_match_tree(&got, &tree, &run.command);
}

#[test]
fn directory_with_a_good_and_a_bad_package_reports_the_good_one_and_fails() {
    let ws = Workspace::new();
    let good = ws.build(Kind::TarZst);
    let (bad, _) = truncated_deb(&ws);
    let dir = ws.path("downloads");
    std::fs::create_dir(&dir).unwrap();
    let (good_in, bad_in) = (dir.join("good.tar.zst"), dir.join("bad_1.0_amd64.deb"));
    std::fs::rename(&good, &good_in).unwrap();
    std::fs::rename(&bad, &bad_in).unwrap();
    let good_prefix = format!("{}!/", path_str(&good_in));
    let tree = tree_listing(&ws);

    let run = rocpack(&[OsStr::new("list"), OsStr::new("--json"), dir.as_os_str()]);
    assert_error_names_package(&run, &bad_in);
    let mut recs: Vec<Value> = run
        .records()
        .into_iter()
        .filter(|r| r["file"].as_str().unwrap().starts_with(&good_prefix))
        .collect();
    for r in &mut recs {
        normalise(r, &good_prefix, Some(path_str(&good_in)), &run.command);
    }
    let got = by_member(&recs);
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        tree.keys().collect::<Vec<_>>(),
        "{}: members of the good package",
        run.command
    );
    assert_reported_members_match_tree(&got, &tree, &run.command);

    // scan: the good package's libraries, as scanning the good package alone gives them.
    let library_records = |run: &Run| -> Vec<Value> {
        let mut v: Vec<Value> = run
            .records()
            .into_iter()
            .filter(|r| r["type"] == "library" && r["package"] == path_str(&good_in))
            .collect();
        // The columns depend on everything scanned; compare the cells of the good package's own
        // processors only.
        for r in &mut v {
            r.as_object_mut().unwrap().remove("verdicts");
        }
        v
    };
    let both = rocpack(&[OsStr::new("scan"), OsStr::new("--json"), dir.as_os_str()]);
    assert_error_names_package(&both, &bad_in);
    let alone = rocpack(&[
        OsStr::new("scan"),
        OsStr::new("--json"),
        good_in.as_os_str(),
    ]);
    assert_eq!(alone.code, 0, "{}: {}", alone.command, alone.stderr);
    let (b, a) = (library_records(&both), library_records(&alone));
    assert!(!a.is_empty(), "{}: no libraries", alone.command);
    assert_same_records(&b, &a, "scan of the directory vs of the good package alone");
}

// ------------------------------------------------------------------------------------------------
// A real Debian package
// ------------------------------------------------------------------------------------------------

/// The .deb that scripts/fetch-corpus.sh unpacked into `dir`.
fn corpus_deb(dir: &Path) -> PathBuf {
    // fetch-corpus.sh links it as DIR/.deb; older caches may lack the link, so fall back to the
    // download directory (debs/NAME_VERSION_ARCH.deb next to DIR).
    if let Ok(p) = std::fs::canonicalize(dir.join(".deb")) {
        return p;
    }
    let stem = dir.file_name().unwrap().to_string_lossy().into_owned();
    let debs = dir.parent().unwrap().join("debs");
    std::fs::read_dir(&debs)
        .unwrap_or_else(|e| panic!("{}: {e}", debs.display()))
        .map(|e| e.unwrap().path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with(&format!("{stem}_")) && n.ends_with(".deb")
        })
        .unwrap_or_else(|| panic!("no .deb for {} in {}", dir.display(), debs.display()))
}

/// Regular files below `dir`, symbolic links not followed (as rocpack walks).
fn regular_files(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        if t.is_dir() {
            n += regular_files(&e.path());
        } else if t.is_file() {
            n += 1;
        }
    }
    n
}

#[test]
fn librocrand1_deb_read_in_place_checks_like_its_unpacked_tree() {
    let dpkg_deb = need("dpkg-deb");
    // Panics, saying the network is needed, when the Debian mirror cannot be reached.
    let dir = fetch_corpus("librocrand1");
    let deb = corpus_deb(&dir);
    let args = |p: &Path| -> Vec<std::ffi::OsString> {
        let mut a: Vec<std::ffi::OsString> = vec!["check".into(), "--json".into()];
        a.extend(["--gpu", "gfx1030", "--gpu", "gfx90a"].map(Into::into));
        a.push(p.into());
        a
    };
    let t = rocpack(&args(&dir));
    let p = rocpack(&args(&deb));
    for r in [&t, &p] {
        assert!(
            r.code <= 1,
            "{}: exit {}; stderr:\n{}",
            r.command,
            r.code,
            r.stderr
        );
        assert_eq!(r.stderr, "", "{}: stderr", r.command);
    }
    assert_eq!(p.code, t.code, "exit status, package vs tree");
    let mut tree = tree_records(&t, &dir);
    let mut pkg = package_records(&p, &deb);
    assert!(
        tree.iter()
            .any(|r| r["type"] == "verdict" && r["library_kind"] == "elf"),
        "{}: no verdict for a shared library",
        t.command
    );
    // The unpacked directory also holds fetch-corpus.sh's bookkeeping (.complete, the .deb
    // link), so the files examined differ by exactly those; each count is checked on its own.
    let examined = |recs: &mut Vec<Value>| {
        let s = recs
            .iter_mut()
            .find(|r| r["type"] == "summary")
            .expect("no summary record");
        s.as_object_mut()
            .unwrap()
            .remove("files_examined")
            .and_then(|v| v.as_u64())
            .expect("files_examined")
    };
    let (tree_examined, pkg_examined) = (examined(&mut tree), examined(&mut pkg));
    let contents = run_checked(Command::new(dpkg_deb).arg("--contents").arg(&deb));
    let regular_members = String::from_utf8_lossy(&contents.stdout)
        .lines()
        .filter(|l| l.starts_with('-'))
        .count();
    assert_eq!(
        pkg_examined as usize, regular_members,
        "{}: files examined vs regular files in dpkg-deb --contents",
        p.command
    );
    assert_eq!(
        tree_examined as usize,
        regular_files(&dir),
        "{}: files examined vs regular files in the tree",
        t.command
    );
    assert_same_records(&pkg, &tree, "librocrand1: check --json");
}

/// Every command that reads packages honours `--max-member` (the option the size error names):
/// with a limit below the fixtures' sizes, each member with device code is reported as not
/// inspected instead of being read.
#[test]
fn every_package_command_honours_max_member() {
    let ws = Workspace::new();
    let pkg = ws.build(Kind::Wheel);
    let commands: [Vec<&str>; 5] = [
        vec!["list"],
        [&["check"][..], &GPUS[..]].concat(),
        vec!["scan"],
        vec!["show"],
        vec!["extract", "--target", "gfx1030", "-o"],
    ];
    let out = ws.dir.path().join("extract-out");
    for args in commands {
        let mut a: Vec<&OsStr> = vec![OsStr::new("--max-member"), OsStr::new("100")];
        a.extend(args.iter().map(OsStr::new));
        if args[0] == "extract" {
            a.push(out.as_os_str());
        }
        a.push(pkg.as_os_str());
        let r = rocpack(&a);
        assert!(
            r.stderr.contains("--max-member"),
            "{}: exit {}, no member refused by --max-member 100; stderr:\n{}",
            r.command,
            r.code,
            r.stderr
        );
        assert_ne!(
            r.code, 0,
            "{}: a refused member must show in the exit status",
            r.command
        );
    }
}
