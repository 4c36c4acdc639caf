//! `rocpack extract`: write the code objects for one target, from files, directories and
//! packages read in place.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;

use anyhow::{Context, Result, bail};
use rocpack_amdgpu::{Feature, TargetId, TargetIdError};
use rocpack_offload::{CodeObject, ImageFormat, Inspection, ReadCode};
use rocpack_scan::package::read_package_with;
use rocpack_scan::{FileResult, ScanOptions, expand, inspect_file, package_kind};
use rocpack_slim::write::{Staged, stage};
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

/// The entries of one file (or package member) that `extract` keeps: per container the first
/// entry that matches the target exactly, else the first compatible one (one code object per
/// bundle and target, as the bundler gives). Each is written as the walk reaches it, into a
/// [`Staged`] file in the output directory, instead of being held in memory (hipBLASLt's
/// entries reach 171 MB); one that a later exact match displaces is removed. They are named and
/// renamed into place, in the order the walk found them, once the file is read.
#[derive(Default)]
struct Picks {
    offered: usize,
    by_container: HashMap<Option<usize>, Pick>,
}

struct Pick {
    /// Place among the compatible entries of the file, in walk order.
    order: usize,
    co: CodeObject,
    exact: bool,
    staged: std::io::Result<Staged>,
}

impl Picks {
    /// Whether `co`, a compatible entry, is to be written: nothing better is kept for its
    /// container yet ([`Picks::beaten`]). Counts it either way.
    fn wants(&mut self, co: &CodeObject, wanted: &TargetId) -> Option<(usize, bool)> {
        let order = self.offered;
        self.offered += 1;
        let exact = co.target.as_ref() == Some(wanted);
        (!self.beaten(co, order, exact)).then_some((order, exact))
    }

    /// Keeps `co`, written as `staged`, unless something better is kept for its container by
    /// now: two package members under one path are read on two threads and share this record,
    /// so another may have been kept since [`Picks::wants`]. What loses is removed as it drops.
    fn keep(
        &mut self,
        (order, exact): (usize, bool),
        co: &CodeObject,
        staged: std::io::Result<Staged>,
    ) {
        if self.beaten(co, order, exact) {
            return;
        }
        self.by_container.insert(
            co.container,
            Pick {
                order,
                co: co.clone(),
                exact,
                staged,
            },
        );
    }

    /// Whether what is kept for `co`'s container ranks before an entry offered `order`th with
    /// this exactness: exact before compatible, then the one offered first.
    fn beaten(&self, co: &CodeObject, order: usize, exact: bool) -> bool {
        let rank = |exact: bool, order: usize| (!exact, order);
        self.by_container
            .get(&co.container)
            .is_some_and(|kept| rank(kept.exact, kept.order) <= rank(exact, order))
    }

    fn in_walk_order(self) -> Vec<Pick> {
        let mut picks: Vec<Pick> = self.by_container.into_values().collect();
        picks.sort_by_key(|p| p.order);
        picks
    }
}

/// Where extracted code objects go, and what has been written so far.
struct Out<'a> {
    global: &'a Global,
    dir: &'a Path,
    written: usize,
    names: HashSet<String>,
    stdout: std::io::StdoutLock<'static>,
}

impl Out<'_> {
    /// Names the entries kept from one file (or package member) and puts them in place.
    fn write_file(&mut self, r: &FileResult, picks: Picks) -> Result<()> {
        // A file that shrank while it was read gave zeros for what it lost (rocpack_scan::map),
        // and a write straight from its map fails: nothing is written from it, and the file is
        // reported with the other problems.
        if r.io_error_code == Some(ReadCode::FileChanged) {
            return Ok(());
        }
        let picks = picks.in_walk_order();
        if picks.is_empty() {
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
        for Pick { co, staged, .. } in picks {
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
            let dest = self.dir.join(&name);
            let note = staged
                .and_then(|s| s.commit(&dest))
                .with_context(|| format!("cannot write {}", dest.display()))?;
            output::warn_note(note);
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
    // Each kept entry holds a descriptor until its file is read (rocpack_slim::write::stage,
    // which holds the bytes in memory instead when descriptors run short).
    rocpack_slim::write::raise_open_files_limit();
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
        global,
        dir: &args.output,
        written: 0,
        names: HashSet::new(),
        stdout: std::io::stdout().lock(),
    };
    let mut status = Exit::Ok;
    let mut results = Vec::new();
    let compatible_entry = |co: &CodeObject| {
        !co.host
            && co.format != ImageFormat::Empty
            && co.target.as_ref().is_some_and(|t| compatible(t, &wanted))
    };
    for (path, _) in &files {
        // A package is read in place by the same reader as `list` and `scan`; each member
        // that holds code is then written as the same file in the unpacked tree would be.
        let (read, mut picks): (Vec<FileResult>, HashMap<PathBuf, Picks>) = match package_kind(path)
        {
            Some(kind) => {
                // Members are read on several threads, each member on one.
                let picks = Mutex::new(HashMap::<PathBuf, Picks>::new());
                let lock = || picks.lock().unwrap_or_else(|e| e.into_inner());
                let sink = |member: &Path, _: &Inspection, co: &CodeObject, bytes: &[u8]| {
                    if !compatible_entry(co) {
                        return;
                    }
                    let Some(place) = lock()
                        .entry(member.to_path_buf())
                        .or_default()
                        .wants(co, &wanted)
                    else {
                        return;
                    };
                    let staged = stage(&args.output, bytes);
                    if let Some(p) = lock().get_mut(member) {
                        p.keep(place, co, staged);
                    }
                };
                let examined = AtomicUsize::new(0);
                let read = read_package_with(path, kind, &opts, &|_| {}, &examined, Some(&sink));
                (read, picks.into_inner().unwrap_or_else(|e| e.into_inner()))
            }
            None => {
                let mut picks = Picks::default();
                let mut sink = |_: &Inspection, co: &CodeObject, bytes: &[u8]| {
                    if !compatible_entry(co) {
                        return;
                    }
                    if let Some(place) = picks.wants(co, &wanted) {
                        picks.keep(place, co, stage(&args.output, bytes));
                    }
                };
                let r = inspect_file(path, &opts, Some(&mut sink));
                let picks = HashMap::from([(r.path.clone(), picks)]);
                (vec![r], picks)
            }
        };
        for r in &read {
            out.write_file(r, picks.remove(&r.path).unwrap_or_default())?;
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// Two package members under one path (a tar may hold a path twice) share one record, and
    /// their sink calls interleave on two threads: an exact match kept stays kept when a
    /// compatible entry offered before it finishes staging after it, as the bundler's choice
    /// (first exact, else first compatible) does not depend on which thread is slower.
    #[test]
    fn a_compatible_entry_staged_late_does_not_displace_an_exact_match() {
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/bin/tu2.hipfb"
        );
        let data = std::fs::read(fixture).unwrap();
        let i = rocpack_offload::inspect(&data, &rocpack_offload::Options::default());
        let co = i.code_objects.iter().find(|c| c.target.is_some()).unwrap();
        let wanted = TargetId::parse("gfx90a:xnack+").unwrap();
        let mut exact = co.clone();
        exact.target = Some(wanted.clone());
        let mut compatible = co.clone();
        compatible.target = Some(TargetId::parse("gfx90a").unwrap());
        let dir = tempfile::tempdir().unwrap();
        let mut picks = Picks::default();
        let first = picks.wants(&compatible, &wanted).unwrap();
        let second = picks.wants(&exact, &wanted).unwrap();
        picks.keep(second, &exact, stage(dir.path(), b"exact"));
        picks.keep(first, &compatible, stage(dir.path(), b"compatible"));
        let kept = picks.in_walk_order();
        assert_eq!(kept.len(), 1);
        assert!(kept[0].exact);
        let dest = dir.path().join("kept.co");
        let mut kept = kept;
        kept.pop().unwrap().staged.unwrap().commit(&dest).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"exact");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "the loser is removed"
        );
    }
}
