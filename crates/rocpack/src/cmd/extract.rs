//! `rocpack extract`: write the code objects for one target.

use std::collections::HashSet;
use std::fs;
use std::io::Write;

use anyhow::{Context, Result, bail};
use rocpack_amdgpu::{Feature, TargetId, TargetIdError};
use rocpack_offload::{CodeObject, ImageFormat, Inspection};
use rocpack_scan::{ScanOptions, expand, inspect_file};
use serde::Serialize;

use crate::args::{ExtractArgs, Global};
use crate::output::{self, Status, path_string};

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

pub fn run(global: &Global, args: &ExtractArgs) -> Result<Status> {
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
        max_decompressed: global.max_decompressed,
        ..ScanOptions::default()
    };
    let mut written = 0usize;
    let mut status = Status::Ok;
    let mut stdout = std::io::stdout().lock();
    let mut names = HashSet::new();
    let mut results = Vec::new();
    for (path, _) in &files {
        let file = path_string(path);
        let base = slug(
            &path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "input".into()),
        );
        // Collect the compatible entries with their bytes, then take per container the exact
        // match if there is one, else the first compatible entry: one code object per bundle
        // and target, as the bundler gives.
        let mut candidates: Vec<(CodeObject, Vec<u8>)> = Vec::new();
        let mut sink = |_: &Inspection, co: &CodeObject, bytes: &[u8]| {
            if co.host || co.format == ImageFormat::Empty {
                return;
            }
            if co.target.as_ref().is_some_and(|t| compatible(t, &wanted)) {
                candidates.push((co.clone(), bytes.to_vec()));
            }
        };
        let r = inspect_file(path, &opts, Some(&mut sink));
        let empty = Inspection::default();
        let inspection = r.inspection.as_ref().unwrap_or(&empty);
        let mut taken: HashSet<Option<usize>> = HashSet::new();
        let exact: HashSet<Option<usize>> = candidates
            .iter()
            .filter(|(co, _)| co.target.as_ref() == Some(&wanted))
            .map(|(co, _)| co.container)
            .collect();
        for (co, bytes) in &candidates {
            let is_exact = co.target.as_ref() == Some(&wanted);
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
            let mut n = written;
            let name = loop {
                let name = format!("{base}.{n}.{}.{ext}", slug(&t));
                if names.insert(name.clone()) {
                    break name;
                }
                n += 1;
            };
            let dest = args.output.join(&name);
            output::write_atomically(&args.output, &dest, bytes)
                .with_context(|| format!("cannot write {}", dest.display()))?;
            written += 1;
            let w = Written {
                file: &file,
                container: inspection.location(co.container),
                entry_id: co.entry_id.as_deref(),
                target: Some(t),
                size: co.size,
                output: path_string(&dest),
            };
            if global.json {
                serde_json::to_writer(&mut stdout, &w)?;
                writeln!(stdout)?;
            } else {
                let line = format!(
                    "{} ({} {}) -> {}",
                    w.file,
                    w.container,
                    w.entry_id.unwrap_or("code object"),
                    w.output
                );
                writeln!(stdout, "{}", output::escape_text(&line))?;
            }
        }
        results.push(r);
    }
    status = status.max(output::report_problems(&results));
    for (p, e) in errors {
        eprintln!(
            "error: {}: {}",
            output::path_text(&p),
            output::escape_text(&e)
        );
        status = Status::Error;
    }
    if written == 0 {
        eprintln!(
            "rocpack: no code object for {wanted} in {}",
            args.path.display()
        );
        status = status.max(Status::NoMatch);
    }
    Ok(status)
}
