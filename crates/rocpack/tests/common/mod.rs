//! Helpers shared by the oracle tests: running rocpack and LLVM's tools, parsing their output, and a few
//! byte-level readers written from the format descriptions (not from rocpack's code).
//!
//! Every LLVM tool used here is required: a missing tool panics with a message naming the Debian
//! package, so a test can never pass by skipping its oracle.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

pub const BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
pub const CCOB_MAGIC: &[u8] = b"CCOB";
/// `.hipFatBinSegment` wrapper magic 0x48495046, little-endian.
pub const HIPF_MAGIC: u32 = 0x4849_5046;

// ------------------------------------------------------------------------------------------------
// Paths and processes
// ------------------------------------------------------------------------------------------------

pub fn rocpack_bin() -> &'static str {
    env!("CARGO_BIN_EXE_rocpack")
}

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures")
}

pub fn fixtures_bin() -> PathBuf {
    fixtures_dir().join("bin")
}

pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("rocpack-oracle-")
        .tempdir()
        .expect("cannot create a temporary directory")
}

/// Which package provides a tool on Debian bookworm (for the panic message).
fn package_of(tool: &str) -> &'static str {
    match tool {
        "clang-offload-bundler-19" => "clang-tools-19",
        _ => "llvm-19",
    }
}

/// Absolute path of a required tool found in PATH; panics clearly when it is missing.
pub fn tool(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let p = dir.join(name);
        if p.is_file() {
            return p;
        }
    }
    panic!(
        "required tool `{name}` not found in PATH: install the Debian bookworm package `{}` \
         (the test suite's setup script does); these oracle tests cannot run without it",
        package_of(name)
    );
}

pub fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

pub fn output_of(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", describe(cmd)))
}

/// Runs a command that must succeed; returns its output.
#[allow(dead_code)] // Not every test binary that includes this module uses every helper.
pub fn run_checked(cmd: &mut Command) -> Output {
    let out = output_of(cmd);
    assert!(
        out.status.success(),
        "{} failed with {}\nstdout:\n{}\nstderr:\n{}",
        describe(cmd),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs a command that must succeed; returns stdout as text.
pub fn run_ok(cmd: &mut Command) -> String {
    String::from_utf8(run_checked(cmd).stdout).expect("tool output is not UTF-8")
}

pub fn llvm(name: &str) -> Command {
    Command::new(tool(name))
}

pub fn rocpack() -> Command {
    Command::new(rocpack_bin())
}

/// Runs rocpack with `args`; asserts exit 0 and an empty stderr; returns stdout.
pub fn rocpack_ok<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> String {
    let mut cmd = rocpack();
    cmd.args(args);
    let out = output_of(&mut cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{} exited with {}\nstderr:\n{stderr}",
        describe(&cmd),
        out.status
    );
    assert!(
        stderr.trim().is_empty(),
        "{} printed on stderr:\n{stderr}",
        describe(&cmd)
    );
    String::from_utf8(out.stdout).expect("rocpack output is not UTF-8")
}

pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

/// `rocpack list --json --all-entries [--verify] PATH`
pub fn list_all(path: &Path, verify: bool) -> Vec<Value> {
    let mut args = vec!["list", "--json", "--all-entries"];
    if verify {
        args.push("--verify");
    }
    let mut a: Vec<std::ffi::OsString> = args.into_iter().map(Into::into).collect();
    a.push(path.into());
    json_lines(&rocpack_ok(&a))
}

/// `rocpack show --json --kernels PATH` (one object).
pub fn show_kernels(path: &Path) -> Value {
    let a: Vec<std::ffi::OsString> = vec![
        "show".into(),
        "--json".into(),
        "--kernels".into(),
        path.into(),
    ];
    let v = json_lines(&rocpack_ok(&a));
    assert_eq!(v.len(), 1, "show --json printed {} objects", v.len());
    v.into_iter().next().unwrap()
}

/// `rocpack extract --json PATH --target T -o DIR`
pub fn extract(path: &Path, target: &str, dir: &Path) -> Vec<Value> {
    let a: Vec<std::ffi::OsString> = vec![
        "extract".into(),
        "--json".into(),
        path.into(),
        "--target".into(),
        target.into(),
        "-o".into(),
        dir.into(),
    ];
    json_lines(&rocpack_ok(&a))
}

// ------------------------------------------------------------------------------------------------
// JSON accessors
// ------------------------------------------------------------------------------------------------

pub fn opt_u64(v: &Value, key: &str) -> Option<u64> {
    match &v[key] {
        Value::Null => None,
        x => Some(
            x.as_u64()
                .unwrap_or_else(|| panic!("field {key} is not an integer in {v}")),
        ),
    }
}

pub fn get_u64(v: &Value, key: &str) -> u64 {
    opt_u64(v, key).unwrap_or_else(|| panic!("field {key} missing/null in {v}"))
}

pub fn opt_str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    match &v[key] {
        Value::Null => None,
        x => Some(
            x.as_str()
                .unwrap_or_else(|| panic!("field {key} is not a string in {v}")),
        ),
    }
}

pub fn get_str<'a>(v: &'a Value, key: &str) -> &'a str {
    opt_str(v, key).unwrap_or_else(|| panic!("field {key} missing/null in {v}"))
}

pub fn get_bool(v: &Value, key: &str) -> bool {
    v[key]
        .as_bool()
        .unwrap_or_else(|| panic!("field {key} is not a bool in {v}"))
}

// ------------------------------------------------------------------------------------------------
// Little-endian readers
// ------------------------------------------------------------------------------------------------

pub fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}
pub fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
pub fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

pub fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return Vec::new();
    }
    (0..=hay.len() - needle.len())
        .filter(|&i| &hay[i..i + needle.len()] == needle)
        .collect()
}

/// Reads `len` bytes at `offset` of a (possibly huge) file without reading the rest.
pub fn read_at(file: &mut File, offset: u64, len: usize) -> Vec<u8> {
    let mut buf = vec![0u8; len];
    file.seek(SeekFrom::Start(offset)).unwrap();
    file.read_exact(&mut buf)
        .unwrap_or_else(|e| panic!("cannot read {len} bytes at {offset:#x}: {e}"));
    buf
}

// ------------------------------------------------------------------------------------------------
// Clang offload bundle header (formats.md §1.1), parsed here independently of rocpack
// ------------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleEntry {
    pub offset: u64,
    pub size: u64,
    pub id: String,
}

/// Parses a bundle header from `head` (which must hold at least the whole entry table).
pub fn parse_bundle_header(head: &[u8]) -> Vec<BundleEntry> {
    assert!(head.starts_with(BUNDLE_MAGIC), "no bundle magic");
    let n = le64(head, 24) as usize;
    let mut pos = 32;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let offset = le64(head, pos);
        let size = le64(head, pos + 8);
        let idlen = le64(head, pos + 16) as usize;
        let id = String::from_utf8(head[pos + 24..pos + 24 + idlen].to_vec()).expect("id utf8");
        pos += 24 + idlen;
        out.push(BundleEntry { offset, size, id });
    }
    out
}

/// Like [`parse_bundle_header`], but `None` when `head` is too short for the whole entry table.
pub fn try_parse_bundle_header(head: &[u8]) -> Option<Vec<BundleEntry>> {
    if head.len() < 32 || !head.starts_with(BUNDLE_MAGIC) {
        return None;
    }
    let n = le64(head, 24) as usize;
    let mut pos = 32usize;
    for _ in 0..n {
        let idlen = le64(head.get(pos..pos + 24)?, 16) as usize;
        pos = pos.checked_add(24 + idlen)?;
        if pos > head.len() {
            return None;
        }
    }
    Some(parse_bundle_header(&head[..pos]))
}

/// End of a bundle = max(offset + size) over its entries.
pub fn bundle_end(entries: &[BundleEntry]) -> u64 {
    entries.iter().map(|e| e.offset + e.size).max().unwrap_or(0)
}

// ------------------------------------------------------------------------------------------------
// CCOB header (formats.md §2.1)
// ------------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CcobHeader {
    pub version: u16,
    pub method: u16,
    pub total_size: Option<u64>,
    pub uncompressed_size: u64,
    pub hash: u64,
    pub header_size: usize,
}

/// Parses a CCOB header if `b` starts with one of versions 1–3 and method 0/1.
pub fn parse_ccob_header(b: &[u8]) -> Option<CcobHeader> {
    if b.len() < 8 || !b.starts_with(CCOB_MAGIC) {
        return None;
    }
    let version = le16(b, 4);
    let method = le16(b, 6);
    if method > 1 {
        return None;
    }
    match version {
        1 if b.len() >= 20 => Some(CcobHeader {
            version,
            method,
            total_size: None,
            uncompressed_size: u64::from(le32(b, 8)),
            hash: le64(b, 12),
            header_size: 20,
        }),
        2 if b.len() >= 24 => Some(CcobHeader {
            version,
            method,
            total_size: Some(u64::from(le32(b, 8))),
            uncompressed_size: u64::from(le32(b, 12)),
            hash: le64(b, 16),
            header_size: 24,
        }),
        3 if b.len() >= 32 => Some(CcobHeader {
            version,
            method,
            total_size: Some(le64(b, 8)),
            uncompressed_size: le64(b, 16),
            hash: le64(b, 24),
            header_size: 32,
        }),
        _ => None,
    }
}

/// Rewrites a CCOB v3 blob as v2 (same payload) so that clang 19, which cannot read v3, can list it.
pub fn ccob_v3_as_v2(blob: &[u8]) -> Vec<u8> {
    let h = parse_ccob_header(blob).expect("not a CCOB");
    assert_eq!(h.version, 3);
    let payload = &blob[32..h.total_size.unwrap() as usize];
    let mut out = Vec::with_capacity(24 + payload.len());
    out.extend_from_slice(CCOB_MAGIC);
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&h.method.to_le_bytes());
    out.extend_from_slice(&u32::try_from(24 + payload.len()).unwrap().to_le_bytes());
    out.extend_from_slice(&u32::try_from(h.uncompressed_size).unwrap().to_le_bytes());
    out.extend_from_slice(&h.hash.to_le_bytes());
    out.extend_from_slice(payload);
    out
}

// ------------------------------------------------------------------------------------------------
// A tiny ELF64 section-header reader (seek based, for 1.6 GB libraries)
// ------------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub sh_type: String,
    pub addr: u64,
    pub offset: u64,
    pub size: u64,
}

#[derive(Debug, Clone)]
pub struct RawElf {
    pub e_type: u16,
    pub e_machine: u16,
    pub sections: Vec<Section>,
}

/// Reads the section headers of a little-endian ELF64 file; sh_type is printed as a number.
pub fn raw_elf_sections(path: &Path) -> RawElf {
    let mut f = File::open(path).unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    let h = read_at(&mut f, 0, 64);
    assert_eq!(&h[..4], b"\x7fELF", "{} is not ELF", path.display());
    assert_eq!(h[4], 2, "not ELF64");
    assert_eq!(h[5], 1, "not little-endian");
    let e_type = le16(&h, 16);
    let e_machine = le16(&h, 18);
    let shoff = le64(&h, 40);
    let shentsize = le16(&h, 58) as usize;
    let shnum = le16(&h, 60) as usize;
    let shstrndx = le16(&h, 62) as usize;
    assert_eq!(shentsize, 64);
    let table = read_at(&mut f, shoff, shnum * 64);
    let sh = |i: usize| &table[i * 64..i * 64 + 64];
    let strtab_hdr = sh(shstrndx);
    let strtab = read_at(&mut f, le64(strtab_hdr, 24), le64(strtab_hdr, 32) as usize);
    let mut sections = Vec::new();
    for i in 1..shnum {
        let s = sh(i);
        let name_off = le32(s, 0) as usize;
        let end = strtab[name_off..].iter().position(|&c| c == 0).unwrap();
        sections.push(Section {
            name: String::from_utf8_lossy(&strtab[name_off..name_off + end]).into_owned(),
            sh_type: le32(s, 4).to_string(),
            addr: le64(s, 16),
            offset: le64(s, 24),
            size: le64(s, 32),
        });
    }
    RawElf {
        e_type,
        e_machine,
        sections,
    }
}

// ------------------------------------------------------------------------------------------------
// llvm-readelf-19 output parsers
// ------------------------------------------------------------------------------------------------

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16)
        .unwrap_or_else(|e| panic!("not hex: {s:?}: {e}"))
}

/// `llvm-readelf-19 -S -W`: all sections but the null one.
pub fn readelf_sections(path: &Path) -> Vec<Section> {
    let text = run_ok(llvm("llvm-readelf-19").arg("-S").arg("-W").arg(path));
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if !t.starts_with('[') || t.starts_with("[Nr]") {
            continue;
        }
        let close = t.find(']').unwrap();
        let idx: usize = t[1..close].trim().parse().unwrap();
        if idx == 0 {
            continue;
        }
        let f: Vec<&str> = t[close + 1..].split_whitespace().collect();
        out.push(Section {
            name: f[0].to_owned(),
            sh_type: f[1].to_owned(),
            addr: hex(f[2]),
            offset: hex(f[3]),
            size: hex(f[4]),
        });
    }
    out
}

pub fn section<'a>(sections: &'a [Section], name: &str) -> Option<&'a Section> {
    let mut it = sections.iter().filter(|s| s.name == name);
    let s = it.next();
    assert!(it.next().is_none(), "two sections named {name}");
    s
}

/// `Type:` from `llvm-readelf-19 -h` (REL, DYN, EXEC).
pub fn readelf_type(path: &Path) -> String {
    let text = run_ok(llvm("llvm-readelf-19").arg("-h").arg(path));
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("Type:"))
        .expect("no Type line");
    line.split_whitespace().nth(1).unwrap().to_owned()
}

#[derive(Debug, Clone)]
pub struct Reloc {
    /// Relocation section, e.g. `.rela.dyn`, `.rela.hipFatBinSegment`, `.relr.dyn`.
    pub section: String,
    pub offset: u64,
    /// e.g. `R_X86_64_RELATIVE`; `RELR` for entries of an SHT_RELR section.
    pub rtype: String,
    pub sym_value: Option<u64>,
    pub sym_name: Option<String>,
    pub addend: i64,
}

/// `llvm-readelf-19 -r`: RELA entries and the addresses covered by RELR sections.
pub fn readelf_relocs(path: &Path) -> Vec<Reloc> {
    let text = run_ok(llvm("llvm-readelf-19").arg("-r").arg("-W").arg(path));
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Relocation section '") {
            cur = rest[..rest.find('\'').unwrap()].to_owned();
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        let is_hex = |s: &str| s.len() == 16 && s.chars().all(|c| c.is_ascii_hexdigit());
        if cur.contains("relr") {
            // "0000:  <entry> <address>  <symbolic>" or "        <address>  <symbolic>"
            let addr = if f[0].ends_with(':') && f.len() >= 3 {
                f[2]
            } else {
                f[0]
            };
            if is_hex(addr) {
                out.push(Reloc {
                    section: cur.clone(),
                    offset: hex(addr),
                    rtype: "RELR".into(),
                    sym_value: None,
                    sym_name: None,
                    addend: 0,
                });
            }
            continue;
        }
        if f.len() < 3 || !is_hex(f[0]) || !f[2].starts_with("R_") {
            continue;
        }
        let mut r = Reloc {
            section: cur.clone(),
            offset: hex(f[0]),
            rtype: f[2].to_owned(),
            sym_value: None,
            sym_name: None,
            addend: 0,
        };
        if f.len() == 4 {
            r.addend = hex(f[3]) as i64;
        } else if f.len() >= 7 {
            r.sym_value = Some(hex(f[3]));
            r.sym_name = Some(f[4].to_owned());
            let a = hex(f[6]) as i64;
            r.addend = if f[5] == "-" { -a } else { a };
        }
        out.push(r);
    }
    out
}

/// What `llvm-readelf-19 -h` says about an AMDGPU code object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmdgpuHeader {
    pub e_flags: u32,
    pub abi_version: u8,
    pub processor: String,
    /// processor plus the `sramecc±`/`xnack±` features readelf prints, sorted: the canonical target ID.
    pub target: String,
    /// `generic_vN`.
    pub generic_version: Option<u32>,
    pub machine: String,
    pub os_abi: String,
}

impl AmdgpuHeader {
    /// Code object version: EI_ABIVERSION 2, 3, 4 are code object v4, v5, v6.
    pub fn cov(&self) -> u8 {
        self.abi_version + 2
    }
}

pub fn parse_readelf_header(text: &str) -> AmdgpuHeader {
    let field = |name: &str| -> &str {
        text.lines()
            .find_map(|l| l.trim_start().strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in readelf -h output:\n{text}"))
            .trim()
    };
    let flags = field("Flags:");
    let toks: Vec<&str> = flags.split(',').map(str::trim).collect();
    let e_flags = u32::try_from(hex(toks[0])).unwrap();
    let processor = toks
        .get(1)
        .unwrap_or_else(|| panic!("no processor in Flags: {flags}"))
        .to_string();
    let mut feats: Vec<&str> = toks[2..]
        .iter()
        .copied()
        .filter(|t| t.ends_with('+') || t.ends_with('-'))
        .collect();
    feats.sort_unstable();
    let mut target = processor.clone();
    for f in feats {
        target.push(':');
        target.push_str(f);
    }
    let generic_version = toks[2..]
        .iter()
        .find_map(|t| t.strip_prefix("generic_v"))
        .map(|v| v.parse().unwrap());
    AmdgpuHeader {
        e_flags,
        abi_version: field("ABI Version:").parse().unwrap(),
        processor,
        target,
        generic_version,
        machine: field("Machine:").to_owned(),
        os_abi: field("OS/ABI:").to_owned(),
    }
}

pub fn readelf_amdgpu_header(path: &Path) -> AmdgpuHeader {
    parse_readelf_header(&run_ok(llvm("llvm-readelf-19").arg("-h").arg(path)))
}

/// One kernel of the `amdhsa.kernels` list printed by `llvm-readelf-19 --notes`: its scalar keys.
pub type NoteKernel = BTreeMap<String, String>;

#[derive(Debug, Clone, Default)]
pub struct Notes {
    pub kernels: Vec<NoteKernel>,
    pub target: Option<String>,
    pub version: Vec<u64>,
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    if s.len() >= 2 && (s.starts_with('\'') && s.ends_with('\'')) {
        s[1..s.len() - 1].replace("''", "'")
    } else if s.len() >= 2 && s.starts_with('"') && s.ends_with('"') {
        s[1..s.len() - 1].to_owned()
    } else {
        s.to_owned()
    }
}

/// Parses the YAML-ish AMDGPU metadata that `llvm-readelf-19 --notes` prints.
pub fn parse_notes(text: &str) -> Notes {
    let mut n = Notes::default();
    let mut block = "";
    for line in text.lines() {
        if !line.starts_with(' ') && !line.starts_with('-') && !line.starts_with('.') {
            if line.starts_with("amdhsa.kernels:") {
                block = "kernels";
            } else if let Some(t) = line.strip_prefix("amdhsa.target:") {
                n.target = Some(unquote(t));
                block = "";
            } else if line.starts_with("amdhsa.version:") {
                block = "version";
            } else {
                block = "";
            }
            continue;
        }
        match block {
            "kernels" => {
                let (new, rest) = if let Some(r) = line.strip_prefix("  - ") {
                    (true, r)
                } else if let Some(r) = line.strip_prefix("    ") {
                    if r.starts_with(' ') || r.starts_with('-') {
                        continue; // nested (.args entries)
                    }
                    (false, r)
                } else {
                    continue;
                };
                if new {
                    n.kernels.push(NoteKernel::new());
                }
                let Some((k, v)) = rest.split_once(':') else {
                    continue;
                };
                let v = v.trim();
                if !v.is_empty() {
                    n.kernels
                        .last_mut()
                        .unwrap()
                        .insert(k.trim().to_owned(), unquote(v));
                }
            }
            "version" => {
                if let Some(v) = line.trim().strip_prefix("- ") {
                    n.version.push(v.trim().parse().unwrap());
                }
            }
            _ => {}
        }
    }
    n
}

pub fn readelf_header_and_notes(path: &Path) -> (AmdgpuHeader, Notes) {
    let text = run_ok(llvm("llvm-readelf-19").arg("-h").arg("--notes").arg(path));
    (parse_readelf_header(&text), parse_notes(&text))
}

// ------------------------------------------------------------------------------------------------
// clang-offload-bundler-19
// ------------------------------------------------------------------------------------------------

/// `clang-offload-bundler-19 --list --type=o --input=F`: Ok(ids) or Err(stderr).
pub fn bundler_list(input: &Path) -> Result<BTreeSet<String>, String> {
    let mut cmd = llvm("clang-offload-bundler-19");
    cmd.arg("--list")
        .arg("--type=o")
        .arg(format!("--input={}", input.display()));
    let out = output_of(&mut cmd);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect())
}

pub fn bundler_list_ok(input: &Path) -> BTreeSet<String> {
    bundler_list(input).unwrap_or_else(|e| {
        panic!(
            "clang-offload-bundler-19 --list rejected {}: {e}",
            input.display()
        )
    })
}

/// `clang-offload-bundler-19 --unbundle --type=o --input=F --targets=ID --output=OUT`; returns the bytes.
pub fn bundler_unbundle(input: &Path, id: &str, out: &Path) -> Vec<u8> {
    run_ok(
        llvm("clang-offload-bundler-19")
            .arg("--unbundle")
            .arg("--type=o")
            .arg(format!("--input={}", input.display()))
            .arg(format!("--targets={id}"))
            .arg(format!("--output={}", out.display())),
    );
    std::fs::read(out).unwrap_or_else(|e| panic!("read {}: {e}", out.display()))
}

/// A file name made of safe characters only.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

// ------------------------------------------------------------------------------------------------
// Corpus
// ------------------------------------------------------------------------------------------------

/// Runs one of the scripts that fetch Debian sid packages (exit status 3: the mirror cannot be
/// reached) and returns the last line it printed, a directory.
fn run_fetch_script(script: &str, args: &[&str]) -> PathBuf {
    // Tests run in parallel threads; the scripts take a file lock around apt-get themselves, but
    // one fetch at a time also keeps two downloads of one package from racing.
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scripts")
        .join(script);
    let what = format!("{script} {}", args.join(" "));
    let mut cmd = Command::new("bash");
    cmd.arg(&path).args(args);
    let out = output_of(&mut cmd);
    match out.status.code() {
        Some(0) => {}
        Some(3) => panic!(
            "network needed: cannot reach the Debian mirror ({what})\n{}",
            String::from_utf8_lossy(&out.stderr)
        ),
        _ => panic!(
            "{what} failed with {}:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
    }
    let stdout = String::from_utf8(out.stdout).unwrap();
    let dir = stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_else(|| panic!("{what} printed no directory"));
    let dir = PathBuf::from(dir.trim());
    assert!(dir.is_dir(), "{} is not a directory", dir.display());
    dir
}

/// Runs scripts/fetch-corpus.sh for one package and returns its unpacked directory.
pub fn fetch_corpus(pkg: &str) -> PathBuf {
    run_fetch_script("fetch-corpus.sh", &[pkg])
}

/// Runs scripts/fetch-root.sh and returns the Debian sid root it built: `pkgs` and their whole
/// dependency closure unpacked into one directory; no packages means the script's ROCm set.
pub fn fetch_root(pkgs: &[&str]) -> PathBuf {
    let root = run_fetch_script("fetch-root.sh", pkgs);
    assert!(
        root.join(".complete").is_file(),
        "{} has no .complete marker",
        root.display()
    );
    root
}

/// Regular (non-symlink) files under `dir` whose name starts with `prefix` and contains `.so`.
pub fn shared_libs(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            let p = e.path();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with(prefix) && name.contains(".so") {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

/// Decompresses a CCOB with clang-offload-bundler-19: unbundling the host entry with
/// `--allow-missing-bundles` writes the whole (decompressed) input bundle. The result is checked to be a bundle.
pub fn bundler_decompress(input: &Path, out: &Path) -> Vec<u8> {
    run_ok(
        llvm("clang-offload-bundler-19")
            .arg("--unbundle")
            .arg("--type=o")
            .arg("--allow-missing-bundles")
            .arg(format!("--input={}", input.display()))
            .arg("--targets=host-x86_64-unknown-linux--")
            .arg(format!("--output={}", out.display())),
    );
    let d = std::fs::read(out).unwrap_or_else(|e| panic!("read {}: {e}", out.display()));
    assert!(
        d.starts_with(BUNDLE_MAGIC),
        "clang-offload-bundler-19 did not write a decompressed bundle for {}",
        input.display()
    );
    d
}

/// Asserts two byte strings are equal without printing them whole.
#[track_caller]
pub fn assert_same_bytes(a: &[u8], b: &[u8], what: &str) {
    if a == b {
        return;
    }
    let first = a.iter().zip(b).position(|(x, y)| x != y);
    panic!(
        "{what}: byte strings differ (lengths {} vs {}, first difference at {:?})",
        a.len(),
        b.len(),
        first.map(|i| format!("{i:#x}"))
    );
}

// ------------------------------------------------------------------------------------------------
// llvm-readobj-19 on PE images
// ------------------------------------------------------------------------------------------------

/// A PE section as `llvm-readobj-19 --sections` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeSection {
    pub name: String,
    pub rva: u64,
    pub virtual_size: u64,
    pub raw_offset: u64,
    pub raw_size: u64,
}

/// What `llvm-readobj-19 --file-headers --sections --coff-basereloc` says about a PE image.
#[derive(Debug, Clone)]
pub struct PeImage {
    pub image_base: u64,
    pub pe32_plus: bool,
    pub sections: Vec<PeSection>,
    /// Base relocations other than ABSOLUTE padding: (type name, RVA).
    pub base_relocs: Vec<(String, u64)>,
}

impl PeImage {
    pub fn section(&self, name: &str) -> Option<&PeSection> {
        self.sections.iter().find(|s| s.name == name)
    }
}

fn num(s: &str) -> u64 {
    if s.starts_with("0x") {
        hex(s)
    } else {
        s.parse()
            .unwrap_or_else(|e| panic!("not a number: {s:?}: {e}"))
    }
}

pub fn readobj_pe(path: &Path) -> PeImage {
    let text = run_ok(
        llvm("llvm-readobj-19")
            .arg("--file-headers")
            .arg("--sections")
            .arg("--coff-basereloc")
            .arg(path),
    );
    let mut image_base = None;
    let mut pe32_plus = None;
    let mut sections = Vec::new();
    let mut base_relocs = Vec::new();
    let mut cur: BTreeMap<String, String> = BTreeMap::new();
    let mut reloc_type = None;
    for line in text.lines() {
        let t = line.trim();
        let Some((k, v)) = t.split_once(": ") else {
            if t == "}" && cur.contains_key("Name") && cur.contains_key("PointerToRawData") {
                sections.push(PeSection {
                    name: cur["Name"].split(' ').next().unwrap().to_owned(),
                    rva: num(&cur["VirtualAddress"]),
                    virtual_size: num(&cur["VirtualSize"]),
                    raw_offset: num(&cur["PointerToRawData"]),
                    raw_size: num(&cur["RawDataSize"]),
                });
                cur.clear();
            }
            continue;
        };
        match k {
            "ImageBase" => image_base = Some(num(v)),
            "Magic" if v == "0x20B" => pe32_plus = Some(true),
            "Magic" if v == "0x10B" => pe32_plus = Some(false),
            "Type" => reloc_type = Some(v.to_owned()),
            "Address" => {
                let ty = reloc_type.take().expect("Address without Type");
                if ty != "ABSOLUTE" {
                    base_relocs.push((ty, num(v)));
                }
            }
            "Name" => {
                cur.clear();
                cur.insert(k.to_owned(), v.to_owned());
            }
            _ => {
                cur.insert(k.to_owned(), v.to_owned());
            }
        }
    }
    PeImage {
        image_base: image_base.expect("llvm-readobj printed no ImageBase"),
        pe32_plus: pe32_plus.expect("llvm-readobj printed no PE optional header magic"),
        sections,
        base_relocs,
    }
}

/// `list --json` rows of a package member read in place against the rows of the same file read
/// on its own: equal in everything but the file name and file offsets.
pub fn assert_same_rows_in_place(in_place: &[Value], alone: &[Value]) {
    assert_eq!(in_place.len(), alone.len(), "{in_place:?}\nvs\n{alone:?}");
    for (a, b) in in_place.iter().zip(alone) {
        for k in [
            "container",
            "entry_index",
            "entry_id",
            "target",
            "size",
            "offset",
            "compressed",
            "format",
            "host",
        ] {
            assert_eq!(a[k], b[k], "{k}: in place {a}\nvs alone {b}");
        }
    }
}

/// A wheel from PyPI, downloaded once with `pip download --no-deps NAME==VERSION` into
/// ~/.cache/rocpack-corpus/wheels (or $ROCPACK_CORPUS/wheels); `file` is the wheel's file name,
/// which pins the platform tag. Panics with "network needed" when pip cannot reach PyPI.
pub fn fetch_wheel(name: &str, version: &str, file: &str) -> PathBuf {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let cache = match std::env::var_os("ROCPACK_CORPUS") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").expect("HOME is set"))
            .join(".cache/rocpack-corpus"),
    };
    let dir = cache.join("wheels");
    let wheel = dir.join(file);
    if wheel.is_file() {
        return wheel;
    }
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("mkdir {}: {e}", dir.display()));
    // Into a scratch directory first, so an interrupted download never looks cached.
    let scratch = tempfile::tempdir_in(&dir).unwrap();
    let spec = format!("{name}=={version}");
    // The platform and Python tags come from the file name (NAME-VER-PY-ABI-PLATFORM.whl), so a
    // test can ask for a Windows wheel; a pure wheel ("any") is found for any platform.
    let tags: Vec<&str> = file.trim_end_matches(".whl").rsplit('-').take(3).collect();
    // A compressed tag set (`manylinux2014_x86_64.manylinux_2_17_x86_64`) names one per dot.
    let platform = match tags.first().and_then(|t| t.split('.').next()) {
        Some("any") | None => "manylinux_2_24_x86_64",
        Some(p) => p,
    };
    let mut cmd = Command::new("python3");
    cmd.args([
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--disable-pip-version-check",
    ])
    .args(["--only-binary", ":all:", "--platform", platform])
    .arg(&spec)
    .arg("-d")
    .arg(scratch.path());
    // cp311 → --python-version 3.11, for a wheel built for one CPython.
    if let Some(minor) = tags.get(2).and_then(|t| t.strip_prefix("cp3")) {
        cmd.args(["--python-version", &format!("3.{minor}")]);
    }
    let out = output_of(&mut cmd);
    let got = scratch.path().join(file);
    if !out.status.success() || !got.is_file() {
        panic!(
            "network needed: `pip download --no-deps {spec}` could not fetch {file} from PyPI \
             (exit {}); download it into {} by hand to run this test offline\n{}",
            out.status,
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::rename(&got, &wheel)
        .unwrap_or_else(|e| panic!("rename {} → {}: {e}", got.display(), wheel.display()));
    wheel
}

/// Undoes the HTML escaping of text or an attribute value (rocpack's report, or Chromium's
/// serialisation of it).
pub fn html_unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The commands `rocpack --help` lists (clap's `help` left out), from that help text.
#[allow(dead_code)]
pub fn commands_in_help(root_help: &str) -> Vec<String> {
    root_help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|c| c != "help")
        .collect()
}

/// Checks `show --kernels --jsonl` against `show --kernels --json` on `files` (run in `dir`):
/// the same exit status and stderr, and records that say exactly what the JSON objects say, in
/// the order and with the fields docs/json.md gives.
pub fn assert_jsonl_matches_json(dir: &Path, files: &[&str]) {
    let run = |format: &str| {
        let out = rocpack()
            .args(["show", "--kernels", format])
            .args(files)
            .current_dir(dir)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            out.stderr,
        )
    };
    let (json_code, json, json_err) = run("--json");
    let (jsonl_code, jsonl, jsonl_err) = run("--jsonl");
    assert_eq!(json_code, jsonl_code, "exit status");
    assert_eq!(json_err, jsonl_err, "stderr");
    let docs = std::fs::read_to_string(fixtures_dir().join("../../docs/json.md")).unwrap();
    let section = docs
        .split("## `rocpack show --jsonl`")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("docs/json.md documents show --jsonl");
    let documented = |v: &serde_json::Map<String, Value>, what: &str| {
        for key in v.keys() {
            assert!(
                section.contains(&format!("`{key}`")),
                "{what} field {key} is not in docs/json.md"
            );
        }
    };
    let mut records = jsonl
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap());
    let mut files_seen = 0;
    for f in json
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
    {
        files_seen += 1;
        let mut take = |record: &str| {
            let v = records
                .next()
                .unwrap_or_else(|| panic!("no {record} record"));
            let mut m = v.as_object().unwrap().clone();
            assert_eq!(m.remove("record"), Some(Value::from(record)), "{v}");
            assert_eq!(m.remove("file").as_ref(), Some(&f["file"]), "{v}");
            m
        };
        let file = take("file");
        documented(&file, "file");
        assert_eq!(Value::Object(file), serde_json::json!({"size": f["size"]}));
        for c in f["containers"].as_array().unwrap() {
            assert_eq!(&Value::Object(take("container")), c);
        }
        for (index, co) in f["code_objects"].as_array().unwrap().iter().enumerate() {
            let mut rec = take("code-object");
            documented(&rec, "code-object");
            assert_eq!(rec.remove("index"), Some(Value::from(index)));
            let summary = rec.remove("metadata").unwrap();
            let mut want = co.as_object().unwrap().clone();
            let metadata = want.remove("metadata").unwrap();
            assert_eq!(rec, want, "code object {index}");
            let kernels = match metadata.as_object() {
                None => {
                    assert_eq!(summary, Value::Null, "code object {index}");
                    continue;
                }
                Some(md) => md["kernels"].as_array().unwrap().clone(),
            };
            documented(summary.as_object().unwrap(), "metadata");
            assert_eq!(
                summary,
                serde_json::json!({
                    "format": metadata["format"],
                    "version": metadata["version"],
                    "target": metadata["target"],
                    "kernel_count": kernels.len(),
                })
            );
            for k in &kernels {
                let mut rec = take("kernel");
                documented(&rec, "kernel");
                assert_eq!(rec.remove("code_object"), Some(Value::from(index)));
                assert_eq!(rec.remove("target").as_ref(), Some(&co["target"]));
                assert_eq!(&Value::Object(rec), k);
            }
        }
        for d in f["diagnostics"].as_array().unwrap() {
            let rec = take("diagnostic");
            documented(&rec, "diagnostic");
            assert_eq!(&Value::Object(rec), d);
        }
    }
    assert!(files_seen > 0, "show --json printed nothing");
    assert!(records.next().is_none(), "records after the last file's");
}
