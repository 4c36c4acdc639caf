//! `rocpack list`: one row per AMD GPU entry (`CodeObject::is_amd_gpu`), or per entry of every
//! kind with `--all-entries`.

use std::io::{self, Write};

use anyhow::Result;
use rocpack_offload::{CodeObject, ContainerKind, ImageFormat, Inspection, Loading};
use rocpack_scan::{ScanOptions, scan};
use serde::Serialize;

use crate::args::{Global, ListArgs};
use crate::output::{self, Progress, Status, path_string};

/// One `list --json` record (docs/json.md, schema version 1).
#[derive(Serialize)]
struct Row<'a> {
    file: &'a str,
    container: String,
    bundle_offset: Option<u64>,
    entry_index: Option<usize>,
    entry_id: Option<&'a str>,
    target: Option<String>,
    processor: Option<&'a str>,
    cov: Option<u8>,
    generic_version: Option<u8>,
    size: u64,
    offset: u64,
    file_offset: Option<u64>,
    compressed: bool,
    format: ImageFormat,
    host: bool,
    amd_gpu: bool,
    loading: Loading,
}

fn row<'a>(file: &'a str, i: &Inspection, co: &'a CodeObject) -> Row<'a> {
    Row {
        file,
        container: i.location(co.container),
        bundle_offset: i.bundle_offset_of(co),
        entry_index: co.entry_index,
        entry_id: co.entry_id.as_deref(),
        target: co.target.as_ref().map(ToString::to_string),
        processor: co.header.as_ref().and_then(|h| h.processor),
        cov: co.header.as_ref().and_then(|h| h.cov),
        generic_version: co.generic_version(),
        size: co.size,
        offset: co.offset,
        file_offset: co.file_offset,
        compressed: co.compressed,
        format: co.format,
        host: co.host,
        amd_gpu: co.is_amd_gpu(),
        loading: co.loading,
    }
}

pub fn run(global: &Global, args: &ListArgs) -> Result<Status> {
    let opts = ScanOptions {
        decompress: args.verify,
        max_decompressed: global.max_decompressed,
        max_member: global.max_member,
        ..ScanOptions::default()
    };
    let progress = Progress::new(global.quiet);
    let scanned = scan(&args.paths, &opts, |d, t| progress.update(d, t));
    let results = scanned.results;
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut rows = Vec::new();
    // Device entries of other vendors that the filter hid, for the message when nothing is left.
    let mut foreign = 0usize;
    for r in &results {
        let Some(i) = &r.inspection else { continue };
        foreign += i
            .code_objects
            .iter()
            .filter(|co| co.is_foreign_device_entry())
            .count();
        let file = path_string(&r.path);
        for co in i
            .code_objects
            .iter()
            .filter(|co| args.all_entries || co.is_amd_gpu())
        {
            let row = row(&file, i, co);
            if global.json {
                serde_json::to_writer(&mut out, &row)?;
                writeln!(out)?;
            } else {
                // Code embedded in a host section is marked: the library loads it itself.
                let embedded = i
                    .chain(co.container)
                    .iter()
                    .any(|c| matches!(c.kind, ContainerKind::Embedded { .. }));
                rows.push(vec![
                    file.clone(),
                    if embedded {
                        format!("{} [module]", row.container)
                    } else {
                        row.container
                    },
                    row.entry_id.unwrap_or("-").to_owned(),
                    row.target.unwrap_or_else(|| "-".into()),
                    row.cov.map_or("-".into(), |c| format!("v{c}")),
                    output::thousands(row.size),
                    if row.compressed { "yes" } else { "no" }.to_owned(),
                ]);
            }
        }
    }
    if !global.json && rows.is_empty() {
        let files = scanned.examined;
        let hidden = match foreign {
            0 => String::new(),
            1 => " (1 entry that is not AMD GPU code; --all-entries lists it)".to_owned(),
            n => format!(" ({n} entries that are not AMD GPU code; --all-entries lists them)"),
        };
        eprintln!(
            "rocpack: no device code objects in {files} file{}{hidden}",
            if files == 1 { "" } else { "s" }
        );
    } else if !global.json {
        output::table(
            &mut out,
            &[
                "FILE",
                "CONTAINER",
                "ENTRY",
                "TARGET",
                "COV",
                "SIZE",
                "COMPRESSED",
            ],
            &rows,
        )?;
    }
    out.flush()?;
    Ok(output::report_problems(&results))
}
