//! `rocpack strip`, `rocpack compress`, `rocpack decompress`: rewrite the bundles of files,
//! atomically, verified before anything is replaced.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Result, bail};
use rocpack_amdgpu::compat::Device;
use rocpack_slim::plan::Limits;
use rocpack_slim::{Compression, FilePlan, Keep, Operation, Outcome, Target, WriteOptions};

use crate::args::{CompressArgs, DecompressArgs, Global, StripArgs, WriteArgs};
use crate::cmd::gpu_arg;
use crate::output::{Exit, Progress, escape_text, human_size, path_string, path_text, thousands};
use crate::records;

/// Which command.
enum Action {
    Strip(Keep),
    Compress(Compression),
    Decompress,
}

impl Action {
    fn name(&self) -> &'static str {
        match self {
            Action::Strip(_) => "strip",
            Action::Compress(_) => "compress",
            Action::Decompress => "decompress",
        }
    }

    fn operation(&self) -> Operation<'_> {
        match self {
            Action::Strip(k) => Operation::Strip(k),
            Action::Compress(c) => Operation::Compress(*c),
            Action::Decompress => Operation::Decompress,
        }
    }
}

pub fn strip(global: &Global, args: &StripArgs) -> Result<Exit> {
    let rules = gpu_arg::rules(&args.rules)?;
    let mut devices: Vec<Device> = args
        .keep
        .iter()
        .map(|g| gpu_arg::resolve(g).map(|g| Device::new(g.target)))
        .collect::<Result<_>>()?;
    if args.keep_detected {
        let found = gpu_arg::detected(args.sysfs_root.as_deref(), "--keep")?;
        if !global.quiet {
            eprintln!(
                "rocpack: keeping code for this machine's GPUs: {}",
                found
                    .iter()
                    .map(|g| g.target.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        devices.extend(found.into_iter().map(|g| Device::new(g.target)));
    }
    if devices.is_empty() {
        bail!("name the GPUs to keep with --keep TARGET_ID[,...] or --keep-detected");
    }
    let keep = Keep {
        devices,
        policy: rules.policy,
        override_version: rules.override_version,
    };
    run(global, &args.write, &args.paths, Action::Strip(keep))
}

pub fn compress(global: &Global, args: &CompressArgs) -> Result<Exit> {
    let method = args.method;
    let version = args.format_version.version();
    if let Some(l) = args.level {
        let ok = match method {
            rocpack_offload::ccob::Method::Zstd => (1..=22).contains(&l),
            rocpack_offload::ccob::Method::Zlib => (0..=9).contains(&l),
        };
        if !ok {
            bail!(
                "level {l} is out of range for {} (zstd 1–22, zlib 0–9)",
                args.method.name()
            );
        }
    }
    if !global.quiet {
        eprintln!(
            "rocpack: note: compressed bundles load only with ROCm 6.2 or later (comgr 2.8); \
             ROCm 6.1 and older, and Debian 13's rocm-hipamd 5.7.1, cannot read them; \
             clang-offload-bundler reads v2 from LLVM 19 and v3 from LLVM 20; v3 sizes are read \
             correctly by no released HIP runtime above 4 GiB (docs/slim.md)"
        );
    }
    run(
        global,
        &args.write,
        &args.paths,
        Action::Compress(Compression {
            method,
            level: args.level,
            version,
        }),
    )
}

pub fn decompress(global: &Global, args: &DecompressArgs) -> Result<Exit> {
    run(global, &args.write, &args.paths, Action::Decompress)
}

fn run(global: &Global, w: &WriteArgs, paths: &[PathBuf], action: Action) -> Result<Exit> {
    // Accepting it would promise code that the rewrite then leaves in place.
    if global.deep {
        bail!(
            "--deep is for the reading commands (list, show, extract, scan, check, verify, plan \
             verify): {} never rewrites executable sections, the only place --deep adds",
            action.name()
        );
    }
    if w.in_place && w.output.is_some() {
        bail!("--in-place and -o/--output exclude each other");
    }
    let target = match (&w.output, w.in_place) {
        _ if w.dry_run => Target::DryRun,
        (Some(out), _) => Target::Output(out.clone()),
        (None, true) => Target::InPlace,
        (None, false) => Target::DryRun,
    };
    let opts = WriteOptions {
        backup: w.backup,
        hard_links: w.hard_links,
        limits: Limits {
            max_decompressed: global.max_decompressed,
        },
    };
    let progress = Progress::new(global.quiet);
    let tree = rocpack_slim::rewrite(paths, &target, action.operation(), &opts, &|done, total| {
        progress.update(done, total)
    })
    .map_err(|e| anyhow::anyhow!(e))?;
    let (outcomes, walk_errors) = (&tree.outcomes, &tree.walk_errors);

    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut err = io::stderr().lock();
    for (p, e) in walk_errors {
        writeln!(err, "error: {}: {}", path_text(p), escape_text(e))?;
    }
    if global.json {
        for o in outcomes {
            serde_json::to_writer(&mut out, &json_record(&action, o))?;
            writeln!(out)?;
        }
    } else {
        for o in outcomes {
            print_text(&mut out, &mut err, &action, o)?;
        }
        summary(&mut out, &action, outcomes)?;
    }
    out.flush()?;
    Ok(if tree.failed() {
        Exit::Error
    } else if tree.bundles() == 0 && !matches!(action, Action::Strip(_)) {
        if !global.quiet {
            eprintln!("rocpack: no offload bundles found");
        }
        Exit::NoMatch
    } else {
        Exit::Ok
    })
}

fn print_text(
    out: &mut impl Write,
    err: &mut impl Write,
    action: &Action,
    o: &Outcome,
) -> io::Result<()> {
    let path = path_text(&o.path);
    let Some(p) = &o.plan else {
        if let Some(e) = &o.error {
            writeln!(err, "error: {path}: {}", escape_text(e))?;
        }
        return Ok(());
    };
    for s in &p.skipped {
        let at = s.offset.map(|o| format!(" at {o:#x}")).unwrap_or_default();
        let what = escape_text(&format!("{}{at}: {}", s.label, s.reason)).into_owned();
        if s.error {
            writeln!(err, "error: {path}: {what}")?;
        } else {
            writeln!(out, "{path}: {what}")?;
        }
    }
    if let Some((target, used)) = &p.code_object {
        writeln!(
            out,
            "{path}: code object for {target}: {}",
            if *used {
                "a kept GPU loads it"
            } else {
                "no kept GPU loads it (strip leaves whole files in place; delete it if unwanted)"
            }
        )?;
        return Ok(());
    }
    if !p.changes() {
        if p.bundles > 0 && o.error.is_none() {
            writeln!(
                out,
                "{path}: unchanged ({} bundle{})",
                p.bundles,
                plural(p.bundles)
            )?;
        }
    } else {
        let verb = if o.dry_run {
            "would rewrite"
        } else if o.written.is_some() {
            "rewrote"
        } else {
            "did not rewrite"
        };
        let mut line = format!(
            "{path}: {verb} {} of {} bundle{}",
            p.rewrites.len(),
            p.bundles,
            plural(p.bundles)
        );
        match action {
            Action::Strip(_) => {
                let (kept, total): (usize, usize) = p.rewrites.iter().fold((0, 0), |(k, t), r| {
                    (
                        k + r
                            .entries
                            .iter()
                            .filter(|e| e.reason.keeps() && e.reason != rocpack_slim::Reason::Host)
                            .count(),
                        t + r
                            .entries
                            .iter()
                            .filter(|e| e.reason != rocpack_slim::Reason::Host)
                            .count(),
                    )
                });
                let dropped: u64 = p.rewrites.iter().map(|r| r.dropped_bytes()).sum();
                line.push_str(&format!(
                    ", kept {kept} of {total} device entries, dropped {} of device code",
                    human_size(dropped)
                ));
            }
            Action::Compress(_) | Action::Decompress => {
                let before: u64 = p.rewrites.iter().map(|r| r.old_size).sum();
                let after: u64 = p.rewrites.iter().map(|r| r.new_size).sum();
                line.push_str(&format!(
                    ", {} → {}{}",
                    human_size(before),
                    human_size(after),
                    if after > 0 && before > after {
                        format!(" ({:.1}×)", before as f64 / after as f64)
                    } else {
                        String::new()
                    }
                ));
            }
        }
        writeln!(out, "{line}")?;
        for r in &p.rewrites {
            for n in &r.notes {
                let note = format!("{} at {:#x}: {n}", r.label, r.offset);
                writeln!(out, "  note: {}", escape_text(&note))?;
            }
        }
        if let Some(w) = &o.written {
            let to = if o.in_place {
                String::new()
            } else {
                format!(" → {}", path_text(&w.path))
            };
            writeln!(
                out,
                "  size {} → {}, allocated {} → {}{to}",
                thousands(w.before.apparent),
                thousands(w.after.apparent),
                human_size(w.before.allocated),
                human_size(w.after.allocated),
            )?;
            if let Some(b) = &w.backup {
                writeln!(out, "  original kept as {}", path_text(b))?;
            }
            for n in &w.notes {
                writeln!(out, "  note: {}", escape_text(n))?;
            }
        } else if o.dry_run {
            writeln!(
                out,
                "  size {} → {}, about {} would be deallocated",
                thousands(p.old_len),
                thousands(p.new_len),
                human_size(p.deallocated_estimate())
            )?;
        }
    }
    if let Some(e) = &o.error {
        writeln!(err, "error: {path}: {}", escape_text(e))?;
    }
    Ok(())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn summary(out: &mut impl Write, action: &Action, outcomes: &[Outcome]) -> io::Result<()> {
    let changed = outcomes
        .iter()
        .filter(|o| o.plan.as_ref().is_some_and(FilePlan::changes))
        .count();
    let failed = outcomes.iter().filter(|o| o.failed()).count();
    let dry = outcomes.iter().any(|o| o.dry_run);
    let (before, after) = outcomes
        .iter()
        .filter_map(|o| o.written.as_ref())
        .fold((0, 0), |(b, a), w| {
            (b + w.before.allocated, a + w.after.allocated)
        });
    let unused: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| {
            o.plan
                .as_ref()
                .and_then(|p| p.code_object.as_ref())
                .is_some_and(|(_, used)| !used)
        })
        .collect();
    if outcomes.len() > 1 || dry {
        let mut line = format!(
            "{} file{} {}{}",
            changed,
            plural(changed),
            if dry { "would change" } else { "changed" },
            if failed > 0 {
                format!(", {failed} failed")
            } else {
                String::new()
            }
        );
        if !dry && changed > 0 {
            line.push_str(&format!(
                ", allocated {} → {}",
                human_size(before),
                human_size(after)
            ));
        }
        if dry && changed > 0 {
            let freed: u64 = outcomes
                .iter()
                .filter_map(|o| o.plan.as_ref())
                .map(FilePlan::deallocated_estimate)
                .sum();
            line.push_str(&format!(
                ", about {} would be deallocated",
                human_size(freed)
            ));
            line.push_str(&format!(
                " (dry run: pass --in-place or -o DIR to {})",
                action.name()
            ));
        }
        writeln!(out, "{line}")?;
    }
    if !unused.is_empty() {
        let bytes: u64 = unused
            .iter()
            .filter_map(|o| o.plan.as_ref())
            .map(|p| p.old_len)
            .sum();
        writeln!(
            out,
            "{} code object file{} ({}) hold code no kept GPU loads; strip does not delete files",
            unused.len(),
            plural(unused.len()),
            human_size(bytes)
        )?;
    }
    Ok(())
}

fn json_record<'a>(action: &Action, o: &'a Outcome) -> records::SlimFile<'a> {
    let status = if o.error.is_some() {
        "failed"
    } else if o.plan.as_ref().is_some_and(FilePlan::has_errors) {
        "partial"
    } else if !o.plan.as_ref().is_some_and(FilePlan::changes) {
        "unchanged"
    } else if o.dry_run {
        "would-change"
    } else {
        "changed"
    };
    let p = o.plan.as_ref();
    let w = o.written.as_ref();
    records::SlimFile {
        action: action.name(),
        allocated_after: w.map(|w| w.after.allocated),
        allocated_before: w.map(|w| w.before.allocated),
        backup: w.and_then(|w| w.backup.as_ref()).map(|b| path_string(b)),
        bundles: p.map(|p| p.bundles),
        code_object: p.and_then(|p| p.code_object.as_ref()).map(|(t, used)| {
            records::CodeObjectUse {
                loaded: *used,
                target: t,
            }
        }),
        deallocated_estimate: p.map(FilePlan::deallocated_estimate),
        error: &o.error,
        notes: w.map(|w| w.notes.as_slice()),
        output: w.map(|w| path_string(&w.path)),
        path: path_string(&o.path),
        rewrites: p.map(|p| p.rewrites.as_slice()),
        size_after: p.map(|p| p.new_len),
        size_before: p.map(|p| p.old_len),
        skipped: p.map(|p| p.skipped.as_slice()),
        status,
    }
}
