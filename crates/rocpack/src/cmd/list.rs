//! `rocpack list`: one row per AMD GPU entry (`CodeObject::is_amd_gpu`), or per entry of every
//! kind with `--all-entries`.

use std::fmt::Write as _;
use std::io::{self, Write};

use anyhow::Result;
use rocpack_amdgpu::TargetId;
use rocpack_offload::{CodeObject, ContainerKind, ImageFormat, Inspection, Loading};
use rocpack_scan::{ScanOptions, scan};
use serde::Serialize;

use crate::args::{Global, ListArgs};
use crate::output::{self, Exit, Progress, path_string};

/// One `list --json` record (docs/json.md, schema version 1).
#[derive(Serialize)]
struct Row<'a> {
    file: &'a str,
    container: &'a str,
    bundle_offset: Option<u64>,
    entry_index: Option<usize>,
    entry_id: Option<&'a str>,
    target: Option<&'a TargetId>,
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

fn row<'a>(file: &'a str, container: &'a str, i: &Inspection, co: &'a CodeObject) -> Row<'a> {
    Row {
        file,
        container,
        bundle_offset: i.bundle_offset_of(co),
        entry_index: co.entry_index,
        entry_id: co.entry_id.as_deref(),
        target: co.target.as_ref(),
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

/// The `CONTAINER` of each container of one file that holds a listed entry, built once per
/// container rather than once per entry (a fat binary has ten or so entries per bundle); for
/// text, escaped and with its width in chars.
struct Locations {
    by_id: Vec<Option<Cell>>,
}

/// A text cell, escaped as `output::table` escapes cells, and its width in chars.
struct Cell {
    text: String,
    width: usize,
}

impl Cell {
    fn new(s: &str) -> Cell {
        let text = output::escape_text(s).into_owned();
        Cell {
            width: output::text_width(&text),
            text,
        }
    }
}

impl Locations {
    fn new(i: &Inspection) -> Self {
        Locations {
            by_id: std::iter::repeat_with(|| None)
                .take(i.containers.len() + 1)
                .collect(),
        }
    }

    /// The location of `co`'s container; with `mark`, code embedded in a host section is
    /// marked `[module]`: the library loads it itself.
    fn of(&mut self, i: &Inspection, co: &CodeObject, mark: bool) -> Option<&Cell> {
        let slot = co
            .container
            .map_or(i.containers.len(), |c| c.min(i.containers.len()));
        self.by_id.get_mut(slot).map(|c| {
            &*c.get_or_insert_with(|| {
                let location = i.location(co.container);
                let embedded = mark
                    && i.ancestors(co.container)
                        .any(|c| matches!(c.kind, ContainerKind::Embedded { .. }));
                if embedded {
                    Cell::new(&format!("{location} [module]"))
                } else if mark {
                    Cell::new(&location)
                } else {
                    // JSON: the location as it is; the width is not used.
                    Cell {
                        text: location,
                        width: 0,
                    }
                }
            })
        })
    }
}

const HEADER: [&str; 7] = [
    "FILE",
    "CONTAINER",
    "ENTRY",
    "TARGET",
    "COV",
    "SIZE",
    "COMPRESSED",
];

/// The text cells of one row, written into reused buffers (no allocation per row): the seven
/// cells, escaped as `output::table` escapes them, with their widths in chars.
struct TextCells {
    target: String,
    cov: String,
    size: String,
}

impl TextCells {
    fn fill<'a>(
        &'a mut self,
        file: &'a Cell,
        container: Option<&'a Cell>,
        co: &'a CodeObject,
    ) -> [(std::borrow::Cow<'a, str>, usize); 7] {
        self.target.clear();
        match &co.target {
            Some(t) => {
                let _ = write!(self.target, "{t}");
            }
            None => self.target.push('-'),
        }
        self.cov.clear();
        match co.header.as_ref().and_then(|h| h.cov) {
            Some(c) => {
                let _ = write!(self.cov, "v{c}");
            }
            None => self.cov.push('-'),
        }
        self.size.clear();
        thousands_into(&mut self.size, co.size);
        let esc = |s: &'a str| {
            let text = output::escape_text(s);
            let w = output::text_width(&text);
            (text, w)
        };
        let given = |c: &'a Cell| (std::borrow::Cow::Borrowed(c.text.as_str()), c.width);
        [
            given(file),
            container.map_or((std::borrow::Cow::Borrowed("-"), 1), given),
            esc(co.entry_id.as_deref().unwrap_or("-")),
            esc(&self.target),
            esc(&self.cov),
            esc(&self.size),
            (
                std::borrow::Cow::Borrowed(if co.compressed { "yes" } else { "no" }),
                if co.compressed { 3 } else { 2 },
            ),
        ]
    }
}

/// `1,234,567`, as `output::thousands`, appended to `out`.
fn thousands_into(out: &mut String, n: u64) {
    let mut digits = [0u8; 20];
    let mut len = 0;
    let mut v = n;
    loop {
        if let Some(d) = digits.get_mut(len) {
            *d = b'0' + (v % 10) as u8;
        }
        len += 1;
        v /= 10;
        if v == 0 || len == digits.len() {
            break;
        }
    }
    for i in (0..len).rev() {
        out.push(char::from(digits.get(i).copied().unwrap_or(b'0')));
        if i > 0 && i % 3 == 0 {
            out.push(',');
        }
    }
}

pub fn run(global: &Global, args: &ListArgs) -> Result<Exit> {
    let opts = ScanOptions {
        decompress: args.verify,
        ..global.scan_options()
    };
    let progress = Progress::new(global.quiet);
    let scanned = scan(&args.paths, &opts, |d, t| progress.update(d, t));
    let results = scanned.results;
    let mut out = io::BufWriter::with_capacity(64 << 10, io::stdout().lock());
    // Device entries of other vendors that the filter hid, for the message when nothing is left.
    let mut foreign = 0usize;
    let listed = |co: &&CodeObject| args.all_entries || co.is_amd_gpu();
    // Text: the widths of the columns first, over every row, then the rows.
    let mut widths = HEADER.map(output::text_width);
    let mut cells = TextCells {
        target: String::new(),
        cov: String::new(),
        size: String::new(),
    };
    let mut rows = 0usize;
    let mut files: Vec<(Cell, Locations)> = Vec::new();
    for r in &results {
        let Some(i) = &r.inspection else {
            files.push((Cell::new(""), Locations { by_id: Vec::new() }));
            continue;
        };
        foreign += i
            .code_objects
            .iter()
            .filter(|co| co.is_foreign_device_entry())
            .count();
        let file = path_string(&r.path);
        let mut locations = Locations::new(i);
        if global.json {
            for co in i.code_objects.iter().filter(listed) {
                rows += 1;
                let container = locations.of(i, co, false).map_or("-", |c| c.text.as_str());
                serde_json::to_writer(&mut out, &row(&file, container, i, co))?;
                writeln!(out)?;
            }
            continue;
        }
        let file = Cell::new(&file);
        for co in i.code_objects.iter().filter(listed) {
            rows += 1;
            let container = locations.of(i, co, true);
            for (w, (_, c)) in widths.iter_mut().zip(cells.fill(&file, container, co)) {
                *w = (*w).max(c);
            }
        }
        files.push((file, locations));
    }
    if !global.json && rows == 0 {
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
        let mut line = String::new();
        write_line(
            &mut out,
            &mut line,
            &widths,
            HEADER.map(|h| (std::borrow::Cow::Borrowed(h), output::text_width(h))),
        )?;
        for (r, (file, locations)) in results.iter().zip(&mut files) {
            let Some(i) = &r.inspection else { continue };
            for co in i.code_objects.iter().filter(listed) {
                let container = locations.of(i, co, true);
                write_line(
                    &mut out,
                    &mut line,
                    &widths,
                    cells.fill(file, container, co),
                )?;
            }
        }
    }
    out.flush()?;
    Ok(output::report_problems(&results))
}

/// One table line of the seven cells, as `output::table` writes its lines.
fn write_line(
    out: &mut impl Write,
    line: &mut String,
    widths: &[usize; 7],
    cells: [(std::borrow::Cow<'_, str>, usize); 7],
) -> io::Result<()> {
    output::table_line(
        out,
        line,
        cells.iter().map(|(c, n)| (c.as_ref(), *n)),
        widths,
    )
}
