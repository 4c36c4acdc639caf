//! `rocpack show`: everything known about each container and code object.
//!
//! With `--kernels`, a file on disk is read twice. The first reading finds its containers and
//! code objects (headers, and the decompression of compressed bundles), enough to print the
//! file's summary line and its tree; the second hands each code object's bytes over as the
//! walk reaches it, and its kernels are decoded and printed at once. So output starts before
//! the file is done and memory holds one code object's kernels at a time (plus any decoded
//! ahead of their place in the text tree, which in real files is none). Package members
//! (.deb, wheel, tar) are decoded in memory, as they are read.

use std::collections::BTreeMap;
use std::io::{self, Write};

use anyhow::Result;
use rocpack_amdgpu::metadata::{self, Demangler, Kernel, Metadata};
use rocpack_offload::{
    CodeObject, Container, ContainerKind, Diagnostic, ImageFormat, Inspection, ReadCode,
};
use rocpack_scan::{FileResult, ScanOptions, inspect_file, scan};
use serde::Serialize;

use crate::args::{Global, ShowArgs};
use crate::output::{self, Exit, Progress, path_string, thousands};

/// Bytes of kernel names remembered between code objects (see [`Demangler`]): well above one
/// bundle's names (a few hundred KB in the largest ROCm libraries), far below the memory the
/// command may use.
const NAME_MEMORY: usize = 8 << 20;

/// How the output is written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Text,
    /// One `show --json` record per file (docs/json.md).
    Json,
    /// `show --jsonl`: a record per file, container, code object, kernel and diagnostic.
    JsonLines,
}

pub fn run(global: &Global, args: &ShowArgs) -> Result<Exit> {
    let mode = if args.jsonl {
        Mode::JsonLines
    } else if global.json {
        Mode::Json
    } else {
        Mode::Text
    };
    let opts = ScanOptions {
        decompress: true,
        ..global.scan_options()
    };
    let progress = Progress::new(global.quiet);
    let mut results = scan(&args.paths, &opts, |d, t| progress.update(d, t)).results;
    if args.kernels {
        package_kernels(&mut results, &opts);
    }
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut names = Demangler::new(NAME_MEMORY);
    for r in &mut results {
        show_file(&mut out, r, mode, args.kernels, &opts, &mut names)?;
    }
    out.flush()?;
    Ok(output::report_problems(&results))
}

/// Package members cannot be read again one by one: read each package once more with kernel
/// metadata and take its members' inspections from there.
fn package_kernels(results: &mut [FileResult], opts: &ScanOptions) {
    let with_metadata = ScanOptions {
        metadata: true,
        ..opts.clone()
    };
    let mut read: BTreeMap<std::path::PathBuf, Vec<FileResult>> = BTreeMap::new();
    for r in results.iter_mut() {
        let Some(package) = &r.package else { continue };
        let members = read.entry(package.clone()).or_insert_with(|| {
            scan(std::slice::from_ref(package), &with_metadata, |_, _| ()).results
        });
        if let Some(m) = members.iter_mut().find(|m| m.path == r.path) {
            r.inspection = m.inspection.take();
        }
    }
}

/// Prints one file, decoding its kernels on the way when asked to; adds what the second
/// reading found wrong (malformed metadata, a file that changed) to `r`.
fn show_file(
    out: &mut impl Write,
    r: &mut FileResult,
    mode: Mode,
    kernels: bool,
    opts: &ScanOptions,
    names: &mut Demangler,
) -> io::Result<()> {
    let Some(i) = r.inspection.as_ref() else {
        return Ok(());
    };
    let file = path_string(&r.path);
    let mut p = Printer::new(mode, &file, r.size, i, kernels);
    p.start(out)?;
    // Diagnostics of the second reading, with the place each takes among the first's.
    let mut found: Vec<(usize, Diagnostic)> = Vec::new();
    let mut again = None;
    if kernels && r.package.is_none() {
        let mut write_error = None;
        // The notes of code objects lying in the file are read with pread: through the map,
        // each would fault in and keep the pages around it (hundreds of MB for a large
        // library).
        let file = rocpack_scan::open_regular(&r.path).ok();
        let mut sink = |so_far: &Inspection, co: &CodeObject, data: &[u8]| {
            if write_error.is_some() {
                return;
            }
            let src = FileBytes {
                file: file.as_ref().filter(|_| !co.compressed),
                base: co.file_offset,
                mapped: data,
            };
            let md = match decode(co, &src, names) {
                Ok(md) => md,
                Err(d) => {
                    found.push((so_far.diagnostics.len(), d));
                    None
                }
            };
            if let Err(e) = p.feed(out, so_far.code_objects.len(), md) {
                write_error = Some(e);
            }
        };
        // The first reading checked the CCOBs' hashes.
        let again_opts = ScanOptions {
            check_hashes: false,
            ..opts.clone()
        };
        again = Some(inspect_file(&r.path, &again_opts, Some(&mut sink)));
        if let Some(e) = write_error {
            return Err(e);
        }
    } else if kernels {
        for (index, co) in i.code_objects.iter().enumerate() {
            p.feed(out, index, co.metadata.clone())?;
        }
    }
    let diagnostics = merge(&i.diagnostics, found);
    p.finish(out, &diagnostics)?;
    if let Some(inspection) = r.inspection.as_mut() {
        inspection.diagnostics = diagnostics;
    }
    if let Some(again) = again.filter(|a| a.io_error.is_some()) {
        // The file changed between the readings: what was printed of it may be wrong.
        r.io_error = again.io_error;
        r.io_error_code = again.io_error_code;
    }
    Ok(())
}

/// The kernel metadata of a code object, or the `malformed-metadata` diagnostic the walk
/// would have recorded for it.
fn decode(
    co: &CodeObject,
    src: &FileBytes<'_>,
    names: &mut Demangler,
) -> Result<Option<Metadata>, Diagnostic> {
    if co.format != ImageFormat::CodeObject {
        return Ok(None);
    }
    metadata::read_from(src, names).map_err(|e| Diagnostic {
        severity: ReadCode::MalformedMetadata.severity(),
        code: ReadCode::MalformedMetadata,
        container: co.container,
        offset: Some(co.file_offset.unwrap_or(co.offset)),
        offset_in_file: co.file_offset.is_some(),
        message: format!("entry {}: {e}", co.entry_id.as_deref().unwrap_or("-")),
    })
}

/// A code object's bytes: read from the file at `base` with pread when they lie in it,
/// otherwise (and for large reads, which are rare) from the mapped or decompressed bytes.
struct FileBytes<'a> {
    file: Option<&'a std::fs::File>,
    base: Option<u64>,
    mapped: &'a [u8],
}

/// Largest read done with pread; note segments are a few hundred KB at most in real files.
const PREAD_LIMIT: u64 = 4 << 20;

impl metadata::Source for FileBytes<'_> {
    fn bytes(
        &self,
        offset: u64,
        len: u64,
    ) -> Result<std::borrow::Cow<'_, [u8]>, rocpack_bytes::OutOfBounds> {
        let in_map = rocpack_bytes::Bytes::new(self.mapped).read_at(offset, len)?;
        if let (Some(file), Some(base), true) = (self.file, self.base, len <= PREAD_LIMIT) {
            let mut buf = vec![0; in_map.len()];
            if let Some(at) = base.checked_add(offset) {
                if std::os::unix::fs::FileExt::read_exact_at(file, &mut buf, at).is_ok() {
                    return Ok(buf.into());
                }
            }
        }
        // A failed read falls back to the map, whose guard notices a file that shrank.
        Ok(in_map.into())
    }
}

/// `first` with each of `more` inserted at its place (a count of `first`'s diagnostics before
/// it), the order a single reading would have recorded them in.
fn merge(first: &[Diagnostic], more: Vec<(usize, Diagnostic)>) -> Vec<Diagnostic> {
    let mut out = Vec::with_capacity(first.len() + more.len());
    let mut rest = first.iter();
    let mut taken = 0;
    for (at, d) in more {
        while taken < at {
            let Some(x) = rest.next() else { break };
            out.push(x.clone());
            taken += 1;
        }
        out.push(d);
    }
    out.extend(rest.cloned());
    out
}

/// One line of the text tree, or one code object of the JSON output.
#[derive(Clone, Copy)]
enum Item {
    /// A container and its depth.
    Container(usize, usize),
    /// A code object (index in [`Inspection::code_objects`]) and its depth.
    CodeObject(usize, usize),
}

/// Writes one file's output in order as the code objects' kernels arrive.
struct Printer<'a> {
    mode: Mode,
    file: &'a str,
    size: u64,
    i: &'a Inspection,
    kernels: bool,
    order: Vec<Item>,
    /// The next item of `order` to write.
    next: usize,
    /// Every code object with a lower index has been decoded (or has no kernels).
    known: usize,
    /// Kernels decoded ahead of their turn.
    ahead: BTreeMap<usize, Metadata>,
    table: KernelTable,
}

impl<'a> Printer<'a> {
    fn new(mode: Mode, file: &'a str, size: u64, i: &'a Inspection, kernels: bool) -> Self {
        let order = match mode {
            Mode::Text => text_order(i),
            Mode::Json | Mode::JsonLines => (0..i.code_objects.len())
                .map(|index| Item::CodeObject(index, 0))
                .collect(),
        };
        Printer {
            mode,
            file,
            size,
            i,
            kernels,
            order,
            next: 0,
            known: if kernels { 0 } else { usize::MAX },
            ahead: BTreeMap::new(),
            table: KernelTable::default(),
        }
    }

    /// Writes what comes before the first code object.
    fn start(&mut self, out: &mut impl Write) -> io::Result<()> {
        let i = self.i;
        match self.mode {
            Mode::Text => {
                let devices = i.code_objects.iter().filter(|c| c.is_amd_gpu()).count();
                // SYCL, NVPTX and other foreign device entries are shown below but not counted
                // as AMD GPU code (the same rule as `list`).
                let foreign = i
                    .code_objects
                    .iter()
                    .filter(|c| c.is_foreign_device_entry())
                    .count();
                writeln!(
                    out,
                    "{}: {} bytes, {devices} device code object{}{}",
                    output::escape_text(self.file),
                    thousands(self.size),
                    if devices == 1 { "" } else { "s" },
                    match foreign {
                        0 => String::new(),
                        1 => ", 1 entry that is not AMD GPU code".to_owned(),
                        n => format!(", {n} entries that are not AMD GPU code"),
                    }
                )?;
            }
            Mode::Json => {
                out.write_all(b"{\"file\":")?;
                serde_json::to_writer(&mut *out, self.file)?;
                write!(out, ",\"size\":{},\"containers\":", self.size)?;
                serde_json::to_writer(&mut *out, &i.containers)?;
                out.write_all(b",\"code_objects\":[")?;
            }
            Mode::JsonLines => {
                record(
                    out,
                    &FileLine {
                        record: "file",
                        file: self.file,
                        size: self.size,
                    },
                )?;
                for c in &i.containers {
                    record(
                        out,
                        &ContainerLine {
                            record: "container",
                            file: self.file,
                            container: c,
                        },
                    )?;
                }
            }
        }
        self.drain(out)
    }

    /// Takes the kernels of code object `index` (`None`: it has none); every code object with
    /// a lower index that was not given has none either.
    fn feed(&mut self, out: &mut impl Write, index: usize, md: Option<Metadata>) -> io::Result<()> {
        if let Some(md) = md {
            self.ahead.insert(index, md);
        }
        self.known = self.known.max(index.saturating_add(1));
        self.drain(out)
    }

    /// Writes the rest, then what comes after the last code object.
    fn finish(&mut self, out: &mut impl Write, diagnostics: &[Diagnostic]) -> io::Result<()> {
        self.known = usize::MAX;
        self.drain(out)?;
        match self.mode {
            Mode::Text => writeln!(out),
            Mode::Json => {
                out.write_all(b"],\"diagnostics\":")?;
                serde_json::to_writer(&mut *out, diagnostics)?;
                out.write_all(b"}\n")
            }
            Mode::JsonLines => {
                for d in diagnostics {
                    record(
                        out,
                        &DiagnosticLine {
                            record: "diagnostic",
                            file: self.file,
                            diagnostic: d,
                        },
                    )?;
                }
                Ok(())
            }
        }
    }

    /// Writes items in order up to the first code object whose kernels are not decoded yet.
    fn drain(&mut self, out: &mut impl Write) -> io::Result<()> {
        while let Some(&item) = self.order.get(self.next) {
            match item {
                Item::Container(id, depth) => self.container(out, id, depth)?,
                Item::CodeObject(index, depth) => {
                    if index >= self.known {
                        return Ok(());
                    }
                    let md = self.ahead.remove(&index);
                    if let Some(co) = self.i.code_objects.get(index) {
                        match self.mode {
                            Mode::Text => self.text_code_object(out, co, depth, md.as_ref())?,
                            Mode::Json => {
                                if index > 0 {
                                    out.write_all(b",")?;
                                }
                                let mut co = co.clone();
                                co.metadata = md;
                                serde_json::to_writer(&mut *out, &co)?;
                            }
                            Mode::JsonLines => self.code_object_lines(out, index, co, md)?,
                        }
                    }
                }
            }
            self.next += 1;
        }
        Ok(())
    }

    fn container(&mut self, out: &mut impl Write, id: usize, depth: usize) -> io::Result<()> {
        let i = self.i;
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
            output::escape_text(&format!("{pad}{}{at}{size}", describe(c)))
        )
    }

    fn text_code_object(
        &mut self,
        out: &mut impl Write,
        co: &CodeObject,
        depth: usize,
        md: Option<&Metadata>,
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
        match md {
            Some(md) if self.kernels => self.table.write(out, &pad, &md.kernels),
            _ => Ok(()),
        }
    }

    fn code_object_lines(
        &mut self,
        out: &mut impl Write,
        index: usize,
        co: &CodeObject,
        md: Option<Metadata>,
    ) -> io::Result<()> {
        record(
            out,
            &CodeObjectLine {
                record: "code-object",
                file: self.file,
                index,
                container: co.container,
                entry_index: co.entry_index,
                entry_id: co.entry_id.as_deref(),
                offload_kind: co.offload_kind.as_deref(),
                host: co.host,
                offset: co.offset,
                file_offset: co.file_offset,
                size: co.size,
                compressed: co.compressed,
                format: co.format,
                header: co.header.as_ref(),
                target: co.target.as_ref(),
                loading: co.loading,
                metadata: md.as_ref().map(|m| MetadataLine {
                    format: m.format,
                    version: m.version,
                    target: m.target.as_deref(),
                    kernel_count: m.kernels.len(),
                }),
            },
        )?;
        for kernel in md.iter().flat_map(|m| &m.kernels) {
            record(
                out,
                &KernelLine {
                    record: "kernel",
                    file: self.file,
                    code_object: index,
                    target: co.target.as_ref(),
                    kernel,
                },
            )?;
        }
        Ok(())
    }
}

/// The text tree's order: bare code objects, then each top-level container followed by its
/// code objects and (recursively) its child containers.
fn text_order(i: &Inspection) -> Vec<Item> {
    let mut entries: Vec<Vec<usize>> = vec![Vec::new(); i.containers.len()];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); i.containers.len()];
    let mut order = Vec::new();
    for (index, co) in i.code_objects.iter().enumerate() {
        match co.container {
            None => order.push(Item::CodeObject(index, 1)),
            Some(c) => {
                if let Some(e) = entries.get_mut(c) {
                    e.push(index);
                }
            }
        }
    }
    let mut top = Vec::new();
    for c in &i.containers {
        match c.parent {
            None => top.push(c.id),
            Some(p) => {
                if let Some(ch) = children.get_mut(p) {
                    ch.push(c.id);
                }
            }
        }
    }
    fn visit(
        id: usize,
        depth: usize,
        entries: &[Vec<usize>],
        children: &[Vec<usize>],
        order: &mut Vec<Item>,
    ) {
        order.push(Item::Container(id, depth));
        for &index in entries.get(id).into_iter().flatten() {
            order.push(Item::CodeObject(index, depth + 1));
        }
        for &child in children.get(id).into_iter().flatten() {
            // Parents come before children, so this ends; the check keeps it so for any input.
            if child > id {
                visit(child, depth + 1, entries, children, order);
            }
        }
    }
    for id in top {
        visit(id, 1, &entries, &children, &mut order);
    }
    order
}

/// What a container is, in words.
fn describe(c: &Container) -> String {
    match &c.kind {
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
    }
}

/// Template-heavy kernel names run to thousands of characters; --json has them whole.
const KERNEL_NAME_WIDTH: usize = 100;

/// Writes a code object's kernels as an aligned table (the layout of [`output::table`]),
/// reusing its buffers from one code object to the next.
#[derive(Default)]
struct KernelTable {
    /// Every cell of every row, escaped, one after another.
    cells: String,
    /// Where each cell ends in `cells`, and its width in characters.
    ends: Vec<(usize, usize)>,
    line: String,
}

const COLUMNS: usize = 10;

impl KernelTable {
    fn write(&mut self, out: &mut impl Write, pad: &str, kernels: &[Kernel]) -> io::Result<()> {
        use std::fmt::Write as _;
        self.cells.clear();
        self.ends.clear();
        let first = format!("{pad}    SGPR");
        let header = [
            first.as_str(),
            "VGPR",
            "AGPR",
            "SPILL S/V",
            "LDS",
            "SCRATCH",
            "WAVE",
            "MAX WG",
            "KERNARG",
            "KERNEL",
        ];
        let mut widths = header.map(|h| h.chars().count());
        // Writing to a String cannot fail.
        let mut cell = |cells: &mut String, ends: &mut Vec<(usize, usize)>, start: usize| {
            let width = cells.get(start..).map_or(0, |c| c.chars().count());
            let column = ends.len() % COLUMNS;
            if let Some(w) = widths.get_mut(column) {
                *w = (*w).max(width);
            }
            ends.push((cells.len(), width));
        };
        let number = |cells: &mut String, v: Option<u64>| {
            let _ = match v {
                Some(v) => write!(cells, "{v}"),
                None => write!(cells, "-"),
            };
        };
        for k in kernels {
            let c = &mut self.cells;
            let e = &mut self.ends;
            let s = c.len();
            c.push_str(pad);
            c.push_str("    ");
            number(c, k.sgpr_count);
            cell(c, e, s);
            for v in [k.vgpr_count, k.agpr_count] {
                let s = c.len();
                number(c, v);
                cell(c, e, s);
            }
            let s = c.len();
            number(c, k.sgpr_spill_count);
            c.push('/');
            number(c, k.vgpr_spill_count);
            cell(c, e, s);
            let s = c.len();
            number(c, k.lds_size);
            cell(c, e, s);
            let s = c.len();
            number(c, k.scratch_size);
            if k.uses_dynamic_stack == Some(true) {
                c.push('+');
            }
            cell(c, e, s);
            for v in [k.wavefront_size, k.max_flat_workgroup_size, k.kernarg_size] {
                let s = c.len();
                number(c, v);
                cell(c, e, s);
            }
            let s = c.len();
            let name = shorten(k.demangled.as_deref().unwrap_or(&k.name), KERNEL_NAME_WIDTH);
            // Names come from the file: escaped, so that one cannot add a row.
            c.push_str(&output::escape_text(&name));
            cell(c, e, s);
        }
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        for (column, h) in header.iter().enumerate() {
            push_padded(&mut line, column, h, h.chars().count(), &widths);
        }
        end_line(out, &mut line)?;
        let mut start = 0;
        for (n, &(end, width)) in self.ends.iter().enumerate() {
            let text = self.cells.get(start..end).unwrap_or_default();
            start = end;
            let column = n % COLUMNS;
            push_padded(&mut line, column, text, width, &widths);
            if column + 1 == COLUMNS {
                end_line(out, &mut line)?;
            }
        }
        self.line = line;
        Ok(())
    }
}

/// Writes a table line without trailing blanks, and empties it.
fn end_line(out: &mut impl Write, line: &mut String) -> io::Result<()> {
    out.write_all(line.trim_end().as_bytes())?;
    out.write_all(b"\n")?;
    line.clear();
    Ok(())
}

/// A cell padded to its column's width and followed by two spaces, the last column as it is.
fn push_padded(line: &mut String, column: usize, text: &str, width: usize, widths: &[usize]) {
    line.push_str(text);
    if column + 1 < widths.len() {
        let w = widths.get(column).copied().unwrap_or(0);
        for _ in width..w + 2 {
            line.push(' ');
        }
    }
}

/// At most `width` characters, with an ellipsis when cut.
fn shorten(s: &str, width: usize) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(width) {
        None => s.into(),
        Some(_) => {
            let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
            out.push('…');
            out.into()
        }
    }
}

/// Writes one JSON Lines record.
fn record(out: &mut impl Write, r: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer(&mut *out, r)?;
    out.write_all(b"\n")
}

/// `show --jsonl` records (docs/json.md). `record` names the kind: `type` is taken by the
/// container's own type.
#[derive(Serialize)]
struct FileLine<'a> {
    record: &'static str,
    file: &'a str,
    size: u64,
}

#[derive(Serialize)]
struct ContainerLine<'a> {
    record: &'static str,
    file: &'a str,
    #[serde(flatten)]
    container: &'a Container,
}

/// A code object as in `show --json`, its kernels summarised: they follow as `kernel` records.
#[derive(Serialize)]
struct CodeObjectLine<'a> {
    record: &'static str,
    file: &'a str,
    index: usize,
    container: Option<usize>,
    entry_index: Option<usize>,
    entry_id: Option<&'a str>,
    offload_kind: Option<&'a str>,
    host: bool,
    offset: u64,
    file_offset: Option<u64>,
    size: u64,
    compressed: bool,
    format: ImageFormat,
    header: Option<&'a rocpack_amdgpu::CodeObjectHeader>,
    target: Option<&'a rocpack_amdgpu::TargetId>,
    loading: rocpack_offload::Loading,
    metadata: Option<MetadataLine<'a>>,
}

#[derive(Serialize)]
struct MetadataLine<'a> {
    format: metadata::MetadataFormat,
    version: Option<[u64; 2]>,
    target: Option<&'a str>,
    kernel_count: usize,
}

#[derive(Serialize)]
struct KernelLine<'a> {
    record: &'static str,
    file: &'a str,
    code_object: usize,
    target: Option<&'a rocpack_amdgpu::TargetId>,
    #[serde(flatten)]
    kernel: &'a Kernel,
}

#[derive(Serialize)]
struct DiagnosticLine<'a> {
    record: &'static str,
    file: &'a str,
    #[serde(flatten)]
    diagnostic: &'a Diagnostic,
}
