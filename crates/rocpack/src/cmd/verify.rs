//! `rocpack verify`: link closure, symbols, CMake configs and toolchain of an install, without
//! executing anything in it.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use rocpack_verify::linkage::search::{Environment, LoaderEnv, Outcome};
use rocpack_verify::sysroot::Sysroot;
use rocpack_verify::{Code, Finding, Severity, cmake, linkage, toolchain, tree};
use serde_json::{Value, json};

use crate::args::{Global, VerifyArgs};
use crate::output::{self, Status, path_string};

/// Which parts of verify run.
#[derive(Debug, Clone, Copy, Default)]
struct Checks {
    linkage: bool,
    cmake: bool,
    toolchain: bool,
}

/// What one run counted, for the summary.
#[derive(Debug, Default)]
struct Counts {
    elf_files: usize,
    symbols: usize,
    archives: usize,
    toolchains: usize,
    cmake_files: usize,
}

pub fn run(global: &Global, args: &VerifyArgs) -> Result<Status> {
    let root = match &args.root {
        Some(r) if !r.is_dir() => bail!("--root {}: not a directory", r.display()),
        Some(r) => Some(r.clone()),
        None => None,
    };
    let paths = input_paths(&args.paths, root.as_deref())?;
    let loader_env = loader_env(&args.env)?;
    let allow = allowed(&args.allow)?;
    let checks = checks(&args.checks)?;
    let sysroot = Sysroot::new(root.as_deref());
    let env = Environment::new(sysroot, &loader_env);

    let (input, mut findings) = tree::collect(&paths);
    if args.list_libs {
        return list_libs(global, &env, &input.files);
    }
    let mut counts = Counts {
        archives: input.archives.len(),
        ..Counts::default()
    };
    if checks.linkage {
        if !global.quiet && io::IsTerminal::is_terminal(&io::stderr()) {
            eprint!("rocpack: resolving {} ELF files…\r", input.files.len());
        }
        let report = linkage::verify(&env, &input);
        counts.elf_files = report.files_checked;
        counts.symbols = report.symbols_checked;
        findings.extend(report.findings);
    }
    if checks.cmake {
        for prefix in paths.iter().filter(|p| p.is_dir()) {
            let report = cmake::check_prefix(&cmake::CmakeOptions {
                prefix,
                root: root.as_deref(),
            });
            counts.cmake_files += report.files_evaluated;
            findings.extend(report.findings);
        }
    }
    if checks.toolchain {
        for prefix in toolchain_prefixes(&paths, root.as_deref()) {
            let report = toolchain_check(global, &prefix, root.as_deref(), &paths);
            counts.toolchains += usize::from(report.hip_toolchain);
            findings.extend(report.findings);
        }
    }

    let before = findings.len();
    findings.retain(|f| !allow.contains(&f.code));
    let silenced = before - findings.len();
    findings.sort_by(|a, b| (&a.file, a.code, &a.message).cmp(&(&b.file, b.code, &b.message)));
    findings.dedup_by(|a, b| a.file == b.file && a.code == b.code && a.message == b.message);

    let mut out = io::BufWriter::new(io::stdout().lock());
    let by = |s: Severity| findings.iter().filter(|f| f.severity == s).count();
    let (errors, warnings, infos) = (
        by(Severity::Error),
        by(Severity::Warning),
        by(Severity::Info),
    );
    if global.json {
        for f in &findings {
            serde_json::to_writer(&mut out, &finding_json(f))?;
            writeln!(out)?;
        }
        let summary = json!({
            "type": "summary",
            "hip_toolchains": counts.toolchains,
            "cmake_files": counts.cmake_files,
            "elf_files": counts.elf_files,
            "symbols_checked": counts.symbols,
            "archives": counts.archives,
            "errors": errors,
            "warnings": warnings,
            "infos": infos,
            "allowed": silenced,
        });
        serde_json::to_writer(&mut out, &summary)?;
        writeln!(out)?;
    } else {
        for f in &findings {
            write_finding(&mut out, f)?;
        }
        let mut parts = Vec::new();
        if checks.linkage {
            parts.push(format!(
                "{} ELF files ({} undefined symbols looked up), {} static archives",
                counts.elf_files, counts.symbols, counts.archives
            ));
        }
        if checks.cmake {
            parts.push(format!("{} CMake files evaluated", counts.cmake_files));
        }
        if checks.toolchain {
            parts.push(format!("{} HIP toolchains", counts.toolchains));
        }
        if silenced > 0 {
            parts.push(format!("{silenced} findings silenced by --allow"));
        }
        writeln!(
            out,
            "rocpack verify: {}: {errors} errors, {warnings} warnings, {infos} notes",
            parts.join("; ")
        )?;
    }
    out.flush()?;
    let unreadable = findings.iter().any(|f| {
        matches!(f.code, Code::UnreadableFile | Code::NotRegularFile)
            && f.severity == Severity::Error
    });
    Ok(if unreadable {
        Status::Error
    } else if errors > 0 {
        Status::NoMatch
    } else {
        Status::Ok
    })
}

/// Install prefixes whose toolchain is checked: each directory given; for a whole root, its
/// `/usr`, `/usr/local` and `/opt/rocm*`.
fn toolchain_prefixes(paths: &[PathBuf], root: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths.iter().filter(|p| p.is_dir()) {
        if root.is_some_and(|r| r == p.as_path()) {
            out.push(p.join("usr"));
            out.push(p.join("usr/local"));
            if let Ok(rd) = std::fs::read_dir(p.join("opt")) {
                let mut rocm: Vec<PathBuf> = rd
                    .filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().starts_with("rocm"))
                    .map(|e| e.path())
                    .collect();
                rocm.sort();
                out.extend(rocm);
            }
        } else {
            out.push(p.clone());
        }
    }
    out.retain(|p| p.is_dir());
    out
}

/// The toolchain check of one prefix. The GPU processors the tree carries code for are only
/// collected (by reading the bundle headers of every file) when the prefix has a HIP toolchain.
fn toolchain_check(
    global: &Global,
    prefix: &Path,
    root: Option<&Path>,
    walked: &[PathBuf],
) -> toolchain::ToolchainReport {
    let none = BTreeSet::new();
    let first = toolchain::check(&toolchain::ToolchainOptions {
        prefix,
        root,
        processors: &none,
    });
    if !first.hip_toolchain {
        return first;
    }
    let opts = rocpack_scan::ScanOptions {
        max_decompressed: global.max_decompressed,
        max_member: global.max_member,
        ..rocpack_scan::ScanOptions::default()
    };
    let scanned = rocpack_scan::scan(walked, &opts, |_, _| {});
    let processors: BTreeSet<String> = scanned
        .results
        .iter()
        .filter_map(|r| r.inspection.as_ref())
        .flat_map(|i| &i.code_objects)
        .filter(|c| c.is_amd_gpu())
        .filter_map(|c| c.target.as_ref().map(|t| t.processor.clone()))
        // A code object naming no processor, neither in its header nor in a V2 ISA note (an
        // HSA code object v1, as ROCr embeds for its own blit kernels: `unknown-mach-0x00`),
        // was not built by the toolchain being checked: it asks for no device library.
        .filter(|p| !p.starts_with(rocpack_amdgpu::UNKNOWN_MACH_PREFIX))
        .collect();
    toolchain::check(&toolchain::ToolchainOptions {
        prefix,
        root,
        processors: &processors,
    })
}

/// The paths to walk: as given, or the root; with a root, an absolute path outside it names a
/// path of the target system.
fn input_paths(given: &[PathBuf], root: Option<&Path>) -> Result<Vec<PathBuf>> {
    if given.is_empty() {
        return match root {
            Some(r) => Ok(vec![r.to_path_buf()]),
            None => bail!("give an install prefix or ELF files to verify, or --root SYSROOT"),
        };
    }
    Ok(given
        .iter()
        .map(|p| match root {
            Some(r) if p.is_absolute() && !p.starts_with(r) => {
                r.join(p.strip_prefix("/").unwrap_or(p))
            }
            _ => p.clone(),
        })
        .collect())
}

fn loader_env(pairs: &[String]) -> Result<LoaderEnv> {
    let mut env = LoaderEnv::default();
    for p in pairs {
        let Some((name, value)) = p.split_once('=') else {
            bail!("--env {p}: expected NAME=VALUE");
        };
        match name {
            "LD_LIBRARY_PATH" => env.ld_library_path = Some(value.to_owned()),
            "LD_PRELOAD" => env.ld_preload = Some(value.to_owned()),
            _ => bail!(
                "--env {name}: only LD_LIBRARY_PATH and LD_PRELOAD change how libraries are found"
            ),
        }
    }
    Ok(env)
}

fn allowed(codes: &[String]) -> Result<BTreeSet<Code>> {
    codes
        .iter()
        .map(|c| {
            Code::parse(c).ok_or_else(|| {
                let all: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
                anyhow::anyhow!("--allow {c}: unknown code; codes are {}", all.join(", "))
            })
        })
        .collect()
}

fn checks(names: &[String]) -> Result<Checks> {
    let mut c = Checks::default();
    for n in names {
        match n.as_str() {
            "linkage" => c.linkage = true,
            "cmake" => c.cmake = true,
            "toolchain" => c.toolchain = true,
            _ => bail!("--checks {n}: expected linkage, cmake or toolchain"),
        }
    }
    Ok(c)
}

fn finding_json(f: &Finding) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("type".into(), "finding".into());
    m.insert("code".into(), f.code.as_str().into());
    m.insert("severity".into(), f.severity.as_str().into());
    m.insert("file".into(), path_string(&f.file).into());
    m.insert("message".into(), f.message.clone().into());
    m.insert("hint".into(), f.hint.clone().into());
    for (k, v) in &f.details {
        m.entry(k.clone()).or_insert_with(|| v.clone());
    }
    Value::Object(m)
}

fn write_finding(out: &mut impl Write, f: &Finding) -> io::Result<()> {
    // Messages quote file, library and symbol names: each line escaped as a whole.
    let esc = output::escape_text;
    let head = format!(
        "{}[{}]: {}: {}",
        f.severity.as_str(),
        f.code,
        path_string(&f.file),
        f.message
    );
    writeln!(out, "{}", esc(&head))?;
    if let Some(Value::Array(dirs)) = f.details.get("search_order") {
        let dirs: Vec<&str> = dirs.iter().filter_map(Value::as_str).collect();
        if dirs.is_empty() {
            writeln!(out, "  searched: nothing (no search path applies)")?;
        } else {
            writeln!(out, "  searched: {}", esc(&dirs.join(", ")))?;
        }
    }
    if !f.hint.is_empty() {
        writeln!(out, "  hint: {}", esc(&f.hint))?;
    }
    Ok(())
}

/// `--list-libs`: each file's closure in load order.
fn list_libs(global: &Global, env: &Environment, files: &[PathBuf]) -> Result<Status> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut status = Status::Ok;
    for f in files {
        let c = match env.closure(f) {
            Ok(c) => c,
            Err(e) => {
                eprintln!(
                    "{}",
                    output::escape_text(&format!("error: {}: {e}", path_string(f)))
                );
                status = Status::Error;
                continue;
            }
        };
        let mut libs = Vec::new();
        for need in &c.needs {
            let name = rocpack_bytes::lossless_string(&need.name);
            match &need.outcome {
                Outcome::Found(i) if *i != 0 => {
                    // Each object once, where it was first loaded.
                    let o = &c.objects[*i];
                    if o.names.first().is_some_and(|n| **n == *need.name)
                        && !libs
                            .iter()
                            .any(|(_, p, _): &(String, Option<String>, String)| {
                                p.as_deref() == Some(&*path_string(&o.path))
                            })
                    {
                        libs.push((
                            name,
                            Some(path_string(&o.path)),
                            path_string(&c.objects[need.requester].path),
                        ));
                    }
                }
                Outcome::Found(_) => {}
                Outcome::NotFound { .. } => {
                    status = status.max(Status::NoMatch);
                    // In trace mode glibc lists a missing name once: later requests match the
                    // placeholder it made for the first.
                    if !libs.iter().any(|(n, p, _)| *n == name && p.is_none()) {
                        libs.push((name, None, path_string(&c.objects[need.requester].path)));
                    }
                }
            }
        }
        if global.json {
            let v = json!({
                "file": path_string(f),
                "libraries": libs.iter().map(|(n, p, by)| json!({"name": n, "path": p, "needed_by": by})).collect::<Vec<_>>(),
            });
            serde_json::to_writer(&mut out, &v)?;
            writeln!(out)?;
        } else {
            let esc = output::escape_text;
            writeln!(out, "{}:", output::path_text(f))?;
            for (n, p, _) in &libs {
                match p {
                    Some(p) => writeln!(out, "\t{} => {}", esc(n), esc(p))?,
                    None => writeln!(out, "\t{} => not found", esc(n))?,
                }
            }
        }
    }
    out.flush()?;
    Ok(status)
}
