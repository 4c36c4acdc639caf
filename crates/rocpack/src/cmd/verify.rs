//! `rocpack verify`: link closure, symbols, CMake configs and toolchain of an install, without
//! executing anything in it.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};
use rocpack_linkage::search::{Environment, Outcome};
use rocpack_scan::sysroot::Sysroot;
use rocpack_verify::run::{self as verify_run, Check, Options, Report};
use rocpack_verify::{Finding, Severity};
use serde_json::Value;

use crate::args::{Global, VerifyArgs};
use crate::output::{self, Exit, path_string};
use crate::records;

pub fn run(global: &Global, args: &VerifyArgs) -> Result<Exit> {
    let root = match &args.root {
        Some(r) if !r.is_dir() => bail!("--root {}: not a directory", r.display()),
        Some(r) => Some(r.clone()),
        None => None,
    };
    let paths = verify_run::input_paths(&args.paths, root.as_deref()).map_err(|e| anyhow!(e))?;
    let loader_env = verify_run::loader_env(&args.env).map_err(|e| anyhow!(e))?;
    if args.list_libs {
        let env = Environment::new(Sysroot::new(root.as_deref()), &loader_env);
        let (input, _) = rocpack_verify::tree::collect(&paths);
        return list_libs(global, &env, &input.files);
    }
    let opts = Options {
        paths,
        root,
        loader_env,
        checks: args.checks.iter().copied().collect(),
        allow: verify_run::allowed(&args.allow).map_err(|e| anyhow!(e))?,
        scan: global.scan_options(),
    };
    let progress = |files: usize| {
        if !global.quiet && io::IsTerminal::is_terminal(&io::stderr()) {
            eprint!("rocpack: resolving {files} ELF files…\r");
        }
    };
    let report = verify_run::run(&opts, &progress);
    let mut out = io::BufWriter::new(io::stdout().lock());
    if global.json {
        write_json(&mut out, &report)?;
    } else {
        write_text(&mut out, &report)?;
    }
    out.flush()?;
    Ok(report.exit())
}

fn write_json(out: &mut impl Write, report: &Report) -> Result<()> {
    for f in &report.findings {
        serde_json::to_writer(&mut *out, &finding_json(f))?;
        writeln!(out)?;
    }
    let c = &report.counts;
    let summary = records::VerifySummary {
        allowed: report.allowed,
        archives: c.archives,
        cmake_files: c.cmake_files,
        elf_files: c.elf_files,
        errors: report.count(Severity::Error),
        hip_toolchains: c.toolchains,
        infos: report.count(Severity::Info),
        symbols_checked: c.symbols,
        kind: "summary",
        warnings: report.count(Severity::Warning),
    };
    serde_json::to_writer(&mut *out, &summary)?;
    writeln!(out)?;
    Ok(())
}

fn write_text(out: &mut impl Write, report: &Report) -> io::Result<()> {
    for f in &report.findings {
        write_finding(out, f)?;
    }
    let c = &report.counts;
    let mut parts = Vec::new();
    if report.checks.contains(&Check::Linkage) {
        parts.push(format!(
            "{} ELF files ({} undefined symbols looked up), {} static archives",
            c.elf_files, c.symbols, c.archives
        ));
    }
    if report.checks.contains(&Check::Cmake) {
        parts.push(format!("{} CMake files evaluated", c.cmake_files));
    }
    if report.checks.contains(&Check::Toolchain) {
        parts.push(format!("{} HIP toolchains", c.toolchains));
    }
    if report.allowed > 0 {
        parts.push(format!("{} findings silenced by --allow", report.allowed));
    }
    writeln!(
        out,
        "rocpack verify: {}: {} errors, {} warnings, {} notes",
        parts.join("; "),
        report.count(Severity::Error),
        report.count(Severity::Warning),
        report.count(Severity::Info)
    )
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
fn list_libs(global: &Global, env: &Environment, files: &[PathBuf]) -> Result<Exit> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut status = Exit::Ok;
    for f in files {
        let c = match env.closure(f) {
            Ok(c) => c,
            Err(e) => {
                eprintln!(
                    "{}",
                    output::escape_text(&format!("error: {}: {e}", path_string(f)))
                );
                status = Exit::Error;
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
                    status = status.max(Exit::NoMatch);
                    // In trace mode glibc lists a missing name once: later requests match the
                    // placeholder it made for the first.
                    if !libs.iter().any(|(n, p, _)| *n == name && p.is_none()) {
                        libs.push((name, None, path_string(&c.objects[need.requester].path)));
                    }
                }
            }
        }
        if global.json {
            let v = records::LinkedFile {
                file: path_string(f),
                libraries: libs
                    .iter()
                    .map(|(name, path, by)| records::LinkedLibrary {
                        name,
                        needed_by: by,
                        path,
                    })
                    .collect(),
            };
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
