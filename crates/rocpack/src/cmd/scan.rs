//! `rocpack scan`: the inventory and coverage matrix (library × GPU target) of an install,
//! packages or wheels, as text, JSON Lines, or a self-contained HTML report.

use std::io::{self, Write};
use std::path::Path;

use crate::html::{ReportInfo, render};
use anyhow::{Context, Result};
use rocpack_check::matrix::{Matrix, build, columns_for, letter};
use rocpack_check::{Gpu, group};
use rocpack_scan::{ScanOptions, scan};

use crate::args::{Global, ScanArgs};
use crate::cmd::gpu_arg;
use crate::output::{self, Exit, Progress, human_size, path_string};
use crate::records;

pub fn run(global: &Global, args: &ScanArgs) -> Result<Exit> {
    let rules = gpu_arg::rules(&args.rules)?;
    let extra = args
        .gpus
        .iter()
        .map(|g| gpu_arg::resolve(g))
        .collect::<Result<Vec<_>>>()?;
    let opts = ScanOptions {
        include_data_files: true,
        ..global.scan_options()
    };
    let progress = Progress::new(global.quiet);
    let scanned = scan(&args.paths, &opts, |d, t| progress.update(d, t));
    let problems = output::report_problems(&scanned.results);
    let errors = scanned.results.iter().filter(|r| r.has_errors()).count();
    let inventory = group(&scanned.results);
    // Columns are processors found in the files, labelled as such (with their products).
    let mut gpus: Vec<Gpu> = columns_for(&inventory);
    for g in extra {
        match gpus.iter_mut().find(|c| c.target == g.target) {
            // `--gpu "RX 7900 XTX"` names the gfx1100 column found in the files.
            Some(column) => {
                if g.name.is_some() {
                    column.name = g.name;
                }
            }
            None => gpus.push(g),
        }
    }
    let matrix = build(&inventory, &gpus, &rules);
    if let Some(report) = &args.report {
        let info = ReportInfo {
            inputs: args.paths.iter().map(|p| path_string(p)).collect(),
            policy: rules.policy.to_string(),
            override_version: rules.override_version.map(|v| v.to_string()),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            examined: scanned.examined,
            errors,
        };
        write_report(report, &render(&matrix, &info))?;
        if !global.quiet {
            eprintln!("rocpack: wrote {}", report.display());
        }
    }
    let mut out = io::BufWriter::new(io::stdout().lock());
    if global.json {
        print_json(&mut out, &matrix, &inventory.kernel_dbs)?;
    } else {
        print_text(&mut out, &matrix, &inventory.kernel_dbs)?;
    }
    out.flush()?;
    if matrix.rows.is_empty() && !global.json {
        eprintln!(
            "rocpack: no GPU code in {} file{}",
            scanned.examined,
            if scanned.examined == 1 { "" } else { "s" }
        );
    }
    Ok(problems)
}

/// Writes the report atomically, so a reader never sees half a file.
fn write_report(path: &Path, html: &str) -> Result<()> {
    crate::output::write_atomically(path, html.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

fn print_text(
    out: &mut impl Write,
    m: &Matrix,
    dbs: &[rocpack_check::library::KernelDb],
) -> Result<()> {
    if m.rows.is_empty() {
        return Ok(());
    }
    // Column headers written vertically, one character per line, above one-letter cells.
    let width = m
        .rows
        .iter()
        .map(|r| output::escape_text(&r.library).chars().count())
        .max()
        .unwrap_or(0);
    let size_w = 10;
    let tall = m
        .columns
        .iter()
        .map(|c| c.gpu.given.len())
        .max()
        .unwrap_or(0);
    for line in 0..tall {
        let mut s = format!("{:width$}  {:>size_w$}  ", "", "");
        for c in &m.columns {
            let label = &c.gpu.given;
            // Bottom-aligned: short names start lower.
            let skip = tall - label.len();
            s.push(if line >= skip {
                label.chars().nth(line - skip).unwrap_or(' ')
            } else {
                ' '
            });
            s.push(' ');
        }
        writeln!(out, "{}", s.trim_end())?;
    }
    for r in &m.rows {
        let cells: String = r
            .cells
            .iter()
            .map(|c| format!("{} ", letter(c.verdict)))
            .collect();
        writeln!(
            out,
            "{:width$}  {:>size_w$}  {}",
            output::escape_text(&r.library),
            human_size(r.size),
            cells.trim_end()
        )?;
    }
    let runs: String = m
        .columns
        .iter()
        .map(|c| format!("{} ", if c.runs == m.rows.len() { '=' } else { '!' }))
        .collect();
    writeln!(out, "{:width$}  {:>size_w$}  {}", "", "", runs.trim_end())?;
    writeln!(
        out,
        "\nN native  G generic  P only under the policy  O only with the override  . does not run\n\
         = every library runs on that target  ! some do not"
    )?;
    let total: u64 = m.rows.iter().map(|r| r.size).sum();
    let code: u64 = m
        .rows
        .iter()
        .map(|r| r.bytes_per_processor.values().sum::<u64>())
        .sum();
    writeln!(
        out,
        "{} libraries with GPU code, {} of files, {} of device code (uncompressed), {} GPU targets",
        m.rows.len(),
        human_size(total),
        human_size(code),
        m.columns.len()
    )?;
    if !dbs.is_empty() {
        let mut archs: Vec<String> = dbs.iter().filter_map(|d| d.arch.clone()).collect();
        archs.sort();
        archs.dedup();
        writeln!(
            out,
            "MIOpen kernel databases: {} files for {}",
            dbs.len(),
            archs.join(", ")
        )?;
    }
    Ok(())
}

fn print_json(
    out: &mut impl Write,
    m: &Matrix,
    dbs: &[rocpack_check::library::KernelDb],
) -> Result<()> {
    for c in &m.columns {
        let record = records::Gpu {
            gpu: &c.gpu.given,
            libraries_running: Some(c.runs),
            name: c.gpu.name.as_deref(),
            products: c.gpu.products(),
            target: c.gpu.target.to_string(),
            kind: "target",
        };
        serde_json::to_writer(&mut *out, &record)?;
        writeln!(out)?;
    }
    for r in &m.rows {
        let verdicts = m
            .columns
            .iter()
            .zip(&r.cells)
            .map(|(c, cell)| (c.gpu.given.as_str(), records::ScanCell::of(cell)))
            .collect();
        serde_json::to_writer(&mut *out, &records::ScanLibrary::of(r, verdicts))?;
        writeln!(out)?;
    }
    for d in dbs {
        let record = records::KernelDb {
            arch: &d.arch,
            cus: d.cus,
            file: &d.file,
            size: d.size,
            kind: "kernel-db",
        };
        serde_json::to_writer(&mut *out, &record)?;
        writeln!(out)?;
    }
    Ok(())
}
