//! `rocpack extract`: write the code objects for one target, from files, directories and
//! packages read in place.

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

use anyhow::{Context, Result, bail};
use rocpack_amdgpu::{Feature, TargetId, TargetIdError};
use rocpack_offload::{CodeObject, ImageFormat, Inspection};
use rocpack_scan::package::read_package_with;
use rocpack_scan::{FileResult, ScanOptions, expand, inspect_file, package_kind};
use serde::Serialize;

use crate::args::{ExtractArgs, Global};
use crate::output::{self, Exit, path_string};

#[derive(Serialize)]
struct Written<'a> {
    file: &'a str,
    container: String,
    entry_id: Option<&'a str>,
    target: Option<String>,
    size: u64,
    output: String,
}

/// clang-offload-bundler's `isCodeObjectCompatible` for one device: the same processor, and
/// every feature the code object pins equals the requested setting.
fn compatible(code: &TargetId, wanted: &TargetId) -> bool {
    let ok = |c: Feature, w: Feature| c == Feature::Any || c == w;
    code.processor == wanted.processor
        && ok(code.xnack, wanted.xnack)
        && ok(code.sramecc, wanted.sramecc)
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A compatible code object found in a file or package member: its path, the entry, its bytes.
type Candidate = (PathBuf, CodeObject, Vec<u8>);

/// Where extracted code objects go, and what has been written so far.
struct Out<'a> {
    args: &'a ExtractArgs,
    global: &'a Global,
    wanted: &'a TargetId,
    written: usize,
    names: HashSet<String>,
    stdout: std::io::StdoutLock<'static>,
}

impl Out<'_> {
    /// Writes the code objects of one file (or package member) from its compatible entries:
    /// per container the exact match if there is one, else the first compatible entry (one
    /// code object per bundle and target, as the bundler gives).
    fn write_file(&mut self, r: &FileResult, candidates: Vec<Candidate>) -> Result<()> {
        if candidates.is_empty() {
            return Ok(());
        }
        let file = path_string(&r.path);
        let base = slug(
            &r.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "input".into()),
        );
        let empty = Inspection::default();
        let inspection = r.inspection.as_ref().unwrap_or(&empty);
        let mut taken: HashSet<Option<usize>> = HashSet::new();
        let exact: HashSet<Option<usize>> = candidates
            .iter()
            .filter(|(_, co, _)| co.target.as_ref() == Some(self.wanted))
            .map(|(_, co, _)| co.container)
            .collect();
        for (_, co, bytes) in &candidates {
            let is_exact = co.target.as_ref() == Some(self.wanted);
            if (exact.contains(&co.container) && !is_exact) || !taken.insert(co.container) {
                continue;
            }
            let t = co
                .target
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            let ext = if co.format == ImageFormat::Bitcode {
                "bc"
            } else {
                "co"
            };
            let mut n = self.written;
            let name = loop {
                let name = format!("{base}.{n}.{}.{ext}", slug(&t));
                if self.names.insert(name.clone()) {
                    break name;
                }
                n += 1;
            };
            let dest = self.args.output.join(&name);
            output::write_atomically(&dest, bytes)
                .with_context(|| format!("cannot write {}", dest.display()))?;
            self.written += 1;
            let w = Written {
                file: &file,
                container: inspection.location(co.container),
                entry_id: co.entry_id.as_deref(),
                target: Some(t),
                size: co.size,
                output: path_string(&dest),
            };
            if self.global.json {
                serde_json::to_writer(&mut self.stdout, &w)?;
                writeln!(self.stdout)?;
            } else {
                let line = format!(
                    "{} ({} {}) -> {}",
                    w.file,
                    w.container,
                    w.entry_id.unwrap_or("code object"),
                    w.output
                );
                writeln!(self.stdout, "{}", output::escape_text(&line))?;
            }
        }
        Ok(())
    }
}

pub fn run(global: &Global, args: &ExtractArgs) -> Result<Exit> {
    let wanted =
        TargetId::parse(&args.target).with_context(|| format!("--target {}", args.target))?;
    match wanted.validate() {
        Ok(()) => {}
        // A processor newer than rocpack's table may still be in the files: match it literally.
        Err(e @ TargetIdError::UnknownProcessor { .. }) => {
            eprintln!("warning: {e}; matching it literally")
        }
        Err(e) => return Err(anyhow::Error::new(e).context(format!("--target {}", args.target))),
    }
    fs::create_dir_all(&args.output)
        .with_context(|| format!("cannot create output directory {}", args.output.display()))?;
    let (files, errors) = expand(std::slice::from_ref(&args.path));
    if files.is_empty() && !errors.is_empty() {
        bail!(
            "{}: {}",
            args.path.display(),
            errors
                .iter()
                .map(|(_, e)| e.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    let opts = ScanOptions {
        decompress: true,
        ..global.scan_options()
    };
    let mut out = Out {
        args,
        global,
        wanted: &wanted,
        written: 0,
        names: HashSet::new(),
        stdout: std::io::stdout().lock(),
    };
    let mut status = Exit::Ok;
    let mut results = Vec::new();
    let wanted_entry = |co: &CodeObject| {
        !co.host
            && co.format != ImageFormat::Empty
            && co.target.as_ref().is_some_and(|t| compatible(t, &wanted))
    };
    for (path, _) in &files {
        // A package is read in place by the same reader as `list` and `scan`; each member
        // that holds code is then written as the same file in the unpacked tree would be.
        let (read, mut found): (Vec<FileResult>, Vec<Candidate>) = match package_kind(path) {
            Some(kind) => {
                let found = Mutex::new(Vec::new());
                let sink = |member: &Path, _: &Inspection, co: &CodeObject, bytes: &[u8]| {
                    if wanted_entry(co) {
                        found.lock().unwrap_or_else(|e| e.into_inner()).push((
                            member.to_path_buf(),
                            co.clone(),
                            bytes.to_vec(),
                        ));
                    }
                };
                let examined = AtomicUsize::new(0);
                let read = read_package_with(path, kind, &opts, &|_| {}, &examined, Some(&sink));
                (read, found.into_inner().unwrap_or_else(|e| e.into_inner()))
            }
            None => {
                let mut found = Vec::new();
                let mut sink = |_: &Inspection, co: &CodeObject, bytes: &[u8]| {
                    if wanted_entry(co) {
                        found.push((path.clone(), co.clone(), bytes.to_vec()));
                    }
                };
                let r = inspect_file(path, &opts, Some(&mut sink));
                (vec![r], found)
            }
        };
        for r in &read {
            let (mine, rest) = found.into_iter().partition(|(p, _, _)| *p == r.path);
            found = rest;
            out.write_file(r, mine)?;
        }
        results.extend(read);
    }
    let written = out.written;
    status = status.max(output::report_problems(&results));
    for (p, e) in errors {
        eprintln!(
            "error: {}: {}",
            output::path_text(&p),
            output::escape_text(&e)
        );
        status = Exit::Error;
    }
    if written == 0 {
        eprintln!(
            "rocpack: no code object for {wanted} in {}",
            args.path.display()
        );
        status = status.max(Exit::NoMatch);
    }
    Ok(status)
}
