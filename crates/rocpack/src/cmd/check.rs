//! `rocpack check`: which GPUs each library, and a whole install, can run on.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use rocpack_amdgpu::compat::Verdict;
use rocpack_check::{
    Cell, Gpu, Library, LibraryKind, Rules, VerdictCounts, evaluate, group, locations,
};
use rocpack_scan::{ScanOptions, scan};

use crate::args::{CheckArgs, Global};
use crate::cmd::gpu_arg;
use crate::output::{self, Exit, Progress};
use crate::records;

pub fn run(global: &Global, args: &CheckArgs) -> Result<Exit> {
    let rules = gpu_arg::rules(&args.rules)?;
    let gpus = if args.gpus.is_empty() {
        gpu_arg::detected(args.sysfs_root.as_deref(), "--gpu")?
    } else {
        args.gpus
            .iter()
            .map(|g| gpu_arg::resolve(g))
            .collect::<Result<Vec<_>>>()?
    };
    let paths: Vec<PathBuf> = if args.paths.is_empty() {
        let found = locations::default_paths(Path::new("/"));
        if found.is_empty() {
            bail!(
                "no ROCm install in the usual places (/opt/rocm*, /usr/lib/<multiarch>, /usr/lib64, \
                 Python packages); name the paths to check"
            );
        }
        if !global.quiet {
            eprintln!(
                "rocpack: checking {}",
                found
                    .iter()
                    .map(|p| output::path_text(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        found
    } else {
        args.paths.clone()
    };
    let opts = ScanOptions {
        include_data_files: true,
        ..global.scan_options()
    };
    let progress = Progress::new(global.quiet);
    let scanned = scan(&paths, &opts, |d, t| progress.update(d, t));
    let problems = output::report_problems(&scanned.results);
    let inventory = group(&scanned.results);
    let libraries: Vec<&Library> = inventory
        .libraries
        .iter()
        .filter(|l| l.has_device_code() || matches!(l.kind, LibraryKind::TensileDir { .. }))
        .collect();
    let cells: Vec<Vec<Cell>> = libraries
        .iter()
        .map(|lib| gpus.iter().map(|g| evaluate(lib, g, &rules)).collect())
        .collect();
    let all_run = cells
        .iter()
        .all(|row| row.iter().all(|c| c.verdict != Verdict::None));
    let mut out = io::BufWriter::new(io::stdout().lock());
    if global.json {
        print_json(
            &mut out,
            &gpus,
            &rules,
            &libraries,
            &cells,
            scanned.examined,
        )?;
    } else {
        print_text(&mut out, &gpus, &rules, &libraries, &cells, args.verbose)?;
    }
    out.flush()?;
    if libraries.is_empty() && !global.json {
        eprintln!(
            "rocpack: no GPU code in {} file{}",
            scanned.examined,
            if scanned.examined == 1 { "" } else { "s" }
        );
    }
    Ok(if problems == Exit::Error {
        Exit::Error
    } else if all_run {
        Exit::Ok
    } else {
        Exit::NoMatch
    })
}

fn print_text(
    out: &mut impl Write,
    gpus: &[Gpu],
    rules: &Rules,
    libraries: &[&Library],
    cells: &[Vec<Cell>],
    verbose: bool,
) -> Result<()> {
    for (i, g) in gpus.iter().enumerate() {
        let given = if g.given == g.target.to_string() {
            String::new()
        } else {
            format!(" (given as {:?})", g.given)
        };
        writeln!(out, "GPU {}: {}{given}", i + 1, g.label())?;
    }
    write!(out, "policy: {}", rules.policy)?;
    if let Some(v) = rules.override_version {
        write!(out, ", HSA_OVERRIDE_GFX_VERSION={v}")?;
    }
    writeln!(out)?;
    if libraries.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    let mut header = vec!["LIBRARY".to_owned()];
    header.extend(gpus.iter().map(|g| g.given.clone()));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let rows: Vec<Vec<String>> = libraries
        .iter()
        .zip(cells)
        .map(|(lib, row)| {
            let mut r = vec![lib.path.clone()];
            r.extend(row.iter().map(|c| c.verdict.to_string()));
            r
        })
        .collect();
    output::table(out, &header, &rows)?;
    let mut first = true;
    for (lib, row) in libraries.iter().zip(cells) {
        for (g, c) in gpus.iter().zip(row) {
            if c.verdict == Verdict::Native && !verbose && c.warnings.is_empty() {
                continue;
            }
            if first {
                writeln!(out)?;
                first = false;
            }
            // Paths, entry IDs and member names come from the files.
            let esc = output::escape_text;
            writeln!(
                out,
                "{} on {}: {}",
                esc(&lib.path),
                esc(&g.given),
                c.verdict
            )?;
            writeln!(out, "  {}", esc(&c.reason))?;
            for w in &c.warnings {
                writeln!(out, "  warning: {}", esc(w))?;
            }
        }
    }
    writeln!(out)?;
    for (i, g) in gpus.iter().enumerate() {
        let mut counts = VerdictCounts::default();
        for c in cells.iter().filter_map(|row| row.get(i)) {
            counts.add(c.verdict);
        }
        let runs = cells.len() - counts.none;
        let detail = VerdictCounts { none: 0, ..counts }.describe();
        writeln!(
            out,
            "{}: {runs} of {} libraries run{}{}",
            g.given,
            cells.len(),
            if detail.is_empty() {
                String::new()
            } else {
                format!(" ({detail})")
            },
            if counts.none > 0 {
                format!("; {} do not", counts.none)
            } else {
                String::new()
            }
        )?;
    }
    Ok(())
}

fn print_json(
    out: &mut impl Write,
    gpus: &[Gpu],
    rules: &Rules,
    libraries: &[&Library],
    cells: &[Vec<Cell>],
    examined: usize,
) -> Result<()> {
    for g in gpus {
        let record = records::Gpu {
            gpu: &g.given,
            libraries_running: None,
            name: g.name.as_deref(),
            products: g.products(),
            target: g.target.to_string(),
            kind: "gpu",
        };
        serde_json::to_writer(&mut *out, &record)?;
        writeln!(out)?;
    }
    for (lib, row) in libraries.iter().zip(cells) {
        for (g, c) in gpus.iter().zip(row) {
            let record = records::CheckVerdict {
                bundle: &c.bundle,
                bundles: &c.bundles,
                entry: &c.entry,
                file: &lib.path,
                gpu: &g.given,
                library_kind: rocpack_check::matrix::kind_name(&lib.kind),
                loading: &c.loading,
                package: &lib.package,
                read_errors: lib.read_errors,
                reason: &c.reason,
                rule: &c.rule,
                target: g.target.to_string(),
                kind: "verdict",
                unclassified: &lib.unclassified,
                verdict: c.verdict,
                warnings: &c.warnings,
            };
            serde_json::to_writer(&mut *out, &record)?;
            writeln!(out)?;
        }
    }
    let runs_everywhere = cells
        .iter()
        .filter(|row| row.iter().all(|c| c.verdict != Verdict::None))
        .count();
    let summary = records::CheckSummary {
        files_examined: examined,
        gpus: gpus.len(),
        hsa_override_gfx_version: rules.override_version.map(|v| v.to_string()),
        libraries: libraries.len(),
        libraries_running_on_every_gpu: runs_everywhere,
        policy: rules.policy,
        kind: "summary",
    };
    serde_json::to_writer(&mut *out, &summary)?;
    writeln!(out)?;
    Ok(())
}
