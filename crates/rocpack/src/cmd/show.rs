//! `rocpack show`: everything known about each container and code object.

use std::io::{self, Write};

use anyhow::Result;
use rocpack_offload::{CodeObject, ContainerKind, ImageFormat, Inspection};
use rocpack_scan::{ScanOptions, scan};
use serde::Serialize;

use crate::args::{Global, ShowArgs};
use crate::output::{self, Progress, Status, path_string, thousands};

/// One `show --json` record per file (docs/json.md).
#[derive(Serialize)]
struct FileRecord<'a> {
    file: String,
    size: u64,
    #[serde(flatten)]
    inspection: &'a Inspection,
}

pub fn run(global: &Global, args: &ShowArgs) -> Result<Status> {
    let opts = ScanOptions {
        metadata: args.kernels,
        decompress: true,
        max_decompressed: global.max_decompressed,
        max_member: global.max_member,
        ..ScanOptions::default()
    };
    let progress = Progress::new(global.quiet);
    let results = scan(&args.paths, &opts, |d, t| progress.update(d, t)).results;
    let mut out = io::BufWriter::new(io::stdout().lock());
    for r in &results {
        let Some(i) = &r.inspection else { continue };
        let file = path_string(&r.path);
        if global.json {
            serde_json::to_writer(
                &mut out,
                &FileRecord {
                    file,
                    size: r.size,
                    inspection: i,
                },
            )?;
            writeln!(out)?;
        } else {
            print_file(
                &mut out,
                &output::escape_text(&file),
                r.size,
                i,
                args.kernels,
            )?;
        }
    }
    out.flush()?;
    Ok(output::report_problems(&results))
}

fn print_file(
    out: &mut impl Write,
    file: &str,
    size: u64,
    i: &Inspection,
    kernels: bool,
) -> io::Result<()> {
    let devices = i.code_objects.iter().filter(|c| c.is_amd_gpu()).count();
    // SYCL, NVPTX and other foreign device entries are shown below but not counted as AMD GPU
    // code (the same rule as `list`).
    let foreign = i
        .code_objects
        .iter()
        .filter(|c| c.is_foreign_device_entry())
        .count();
    writeln!(
        out,
        "{file}: {} bytes, {devices} device code object{}{}",
        thousands(size),
        if devices == 1 { "" } else { "s" },
        match foreign {
            0 => String::new(),
            1 => ", 1 entry that is not AMD GPU code".to_owned(),
            n => format!(", {n} entries that are not AMD GPU code"),
        }
    )?;
    // Bare code objects have no container.
    for co in i.code_objects.iter().filter(|c| c.container.is_none()) {
        print_code_object(out, co, 1, kernels)?;
    }
    for c in i.containers.iter().filter(|c| c.parent.is_none()) {
        print_container(out, i, c.id, 1, kernels)?;
    }
    writeln!(out)
}

fn print_container(
    out: &mut impl Write,
    i: &Inspection,
    id: usize,
    depth: usize,
    kernels: bool,
) -> io::Result<()> {
    let Some(c) = i.containers.get(id) else {
        return Ok(());
    };
    let pad = "  ".repeat(depth);
    let at = match c.file_offset {
        Some(o) => format!(" at {o:#x}"),
        None if i.in_decompressed(id) => format!(" at {:#x} (decompressed)", c.offset),
        None => format!(" at {:#x} in the member's own file", c.offset),
    };
    let size = c
        .size
        .map_or(String::new(), |s| format!(", {} bytes", thousands(s)));
    let what = match &c.kind {
        ContainerKind::HostElf {
            e_type,
            e_machine,
            section_headers,
        } => {
            let t = match e_type {
                1 => "relocatable object",
                2 => "executable",
                3 => "shared object",
                _ => "ELF file",
            };
            let m = match e_machine {
                62 => "x86-64",
                183 => "AArch64",
                21 => "PowerPC64",
                _ => "other machine",
            };
            format!(
                "host ELF: {t}, {m}{}",
                if *section_headers {
                    ""
                } else {
                    ", no section headers"
                }
            )
        }
        ContainerKind::HostPe {
            machine,
            pe32_plus,
            dll,
        } => {
            let m = match machine {
                0x8664 => "x86-64",
                0xaa64 => "ARM64",
                0x14c => "i386",
                _ => "other machine",
            };
            format!(
                "host PE: {}, {m}, {}",
                if *dll { "DLL" } else { "executable" },
                if *pe32_plus { "PE32+" } else { "PE32" }
            )
        }
        ContainerKind::Section { name } => format!("section {name}"),
        ContainerKind::OffloadSections => "-fgpu-rdc offload sections".to_owned(),
        ContainerKind::Archive { thin } => format!("{}archive", if *thin { "thin " } else { "" }),
        ContainerKind::Member { name } => format!("member {name}"),
        ContainerKind::Bundle { entries, .. } => {
            format!("{}: offload bundle, {entries} entries", c.label())
        }
        ContainerKind::Ccob {
            fatbin_index,
            version,
            method,
            total_size,
            uncompressed_size,
            hash,
            hash_ok,
            ..
        } => format!(
            "{}compressed bundle v{version} {}, {} -> {} bytes, hash {hash}{}",
            fatbin_index.map_or(String::new(), |i| format!("bundle #{i}: ")),
            method.name(),
            total_size.map_or("?".into(), thousands),
            thousands(*uncompressed_size),
            match hash_ok {
                Some(true) => " (verified)",
                Some(false) => " (MISMATCH)",
                None => "",
            }
        ),
        ContainerKind::OffloadBinary { version, index } => {
            format!("OffloadBinary #{index}, version {version}")
        }
        ContainerKind::Embedded {
            section,
            symbol,
            symbol_table,
            ..
        } => format!(
            "embedded in {section}, {}, loaded as a module",
            match (symbol, symbol_table) {
                (Some(s), Some(t)) => format!("symbol {s} ({t})"),
                (None, Some(t)) => format!("no {t} symbol covers it"),
                _ => "no symbol table".to_owned(),
            }
        ),
    };
    let (at, size) = if matches!(
        c.kind,
        ContainerKind::HostElf { .. }
            | ContainerKind::HostPe { .. }
            | ContainerKind::Archive { .. }
    ) {
        (String::new(), String::new())
    } else {
        (at, size)
    };
    // Section and member names come from the file.
    writeln!(
        out,
        "{}",
        output::escape_text(&format!("{pad}{what}{at}{size}"))
    )?;
    for co in i.code_objects.iter().filter(|co| co.container == Some(id)) {
        print_code_object(out, co, depth + 1, kernels)?;
    }
    for child in i.containers.iter().filter(|x| x.parent == Some(id)) {
        print_container(out, i, child.id, depth + 1, kernels)?;
    }
    Ok(())
}

/// Template-heavy kernel names run to thousands of characters; --json has them whole.
const KERNEL_NAME_WIDTH: usize = 100;

fn print_code_object(
    out: &mut impl Write,
    co: &CodeObject,
    depth: usize,
    kernels: bool,
) -> io::Result<()> {
    let pad = "  ".repeat(depth);
    let idx = co.entry_index.map_or(String::new(), |i| format!("#{i} "));
    let id = co.entry_id.as_deref().unwrap_or("code object");
    let mut facts = Vec::new();
    match co.format {
        ImageFormat::Empty => facts.push("empty".to_owned()),
        ImageFormat::Bitcode if co.is_foreign_device_entry() => {
            facts.push("LLVM bitcode, not for an AMD GPU".to_owned())
        }
        ImageFormat::Bitcode => facts.push("LLVM bitcode".to_owned()),
        ImageFormat::Other if co.is_foreign_device_entry() => {
            facts.push("not AMD GPU code".to_owned())
        }
        ImageFormat::Other => facts.push("not device code".to_owned()),
        ImageFormat::CodeObject => {}
    }
    if let Some(t) = &co.target {
        facts.push(t.to_string());
    }
    if let Some(h) = &co.header {
        if let Some(v) = h.cov {
            facts.push(format!("code object v{v}"));
        }
        if let Some(g) = h.generic_version.filter(|&g| g > 0) {
            facts.push(format!("generic version {g}"));
        }
        facts.push(format!("e_flags {:#x}", h.e_flags));
    }
    if co.size > 0 {
        facts.push(format!("{} bytes", thousands(co.size)));
    }
    match co.file_offset {
        Some(o) if co.size > 0 => facts.push(format!("at {o:#x}")),
        _ if co.size > 0 && co.compressed => {
            facts.push(format!("at {:#x} (decompressed)", co.offset))
        }
        _ if co.size > 0 => facts.push(format!("at {:#x} in the member's own file", co.offset)),
        _ => {}
    }
    let line = format!("{pad}{idx}{id}: {}", facts.join(", "));
    writeln!(out, "{}", output::escape_text(&line))?;
    if kernels {
        if let Some(md) = &co.metadata {
            let rows: Vec<Vec<String>> = md
                .kernels
                .iter()
                .map(|k| {
                    let n = |v: Option<u64>| v.map_or("-".to_owned(), |v| v.to_string());
                    vec![
                        format!("{pad}    {}", n(k.sgpr_count)),
                        n(k.vgpr_count),
                        n(k.agpr_count),
                        format!("{}/{}", n(k.sgpr_spill_count), n(k.vgpr_spill_count)),
                        n(k.lds_size),
                        format!(
                            "{}{}",
                            n(k.scratch_size),
                            if k.uses_dynamic_stack == Some(true) {
                                "+"
                            } else {
                                ""
                            }
                        ),
                        n(k.wavefront_size),
                        n(k.max_flat_workgroup_size),
                        n(k.kernarg_size),
                        shorten(k.demangled.as_deref().unwrap_or(&k.name), KERNEL_NAME_WIDTH),
                    ]
                })
                .collect();
            output::table(
                out,
                &[
                    &format!("{pad}    SGPR"),
                    "VGPR",
                    "AGPR",
                    "SPILL S/V",
                    "LDS",
                    "SCRATCH",
                    "WAVE",
                    "MAX WG",
                    "KERNARG",
                    "KERNEL",
                ],
                &rows,
            )?;
        }
    }
    Ok(())
}

/// At most `width` characters, with an ellipsis when cut.
fn shorten(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_owned()
    } else {
        let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}
