//! Everything the commands print goes through here: stdout for results, stderr for
//! diagnostics, errors and progress.

use std::io::{self, IsTerminal, Write};
use std::path::Path;

use rocpack_offload::{Inspection, Severity};
use rocpack_scan::FileResult;

pub use rocpack_finding::Exit;

/// Prints `error: …` and its causes once, at the edge.
pub fn error(err: &anyhow::Error) {
    let mut e = io::stderr().lock();
    // Errors quote paths and names from files.
    let _ = writeln!(e, "error: {}", escape_text(&err.to_string()));
    for cause in err.chain().skip(1) {
        let _ = writeln!(e, "  caused by: {}", escape_text(&cause.to_string()));
    }
}

/// A path as text, lossless: bytes that are not UTF-8 appear as `\xNN`.
pub fn path_string(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    rocpack_bytes::lossless_string(path.as_os_str().as_bytes())
}

/// Prints the diagnostics of every result on stderr; returns the resulting status.
pub fn report_problems(results: &[FileResult]) -> Exit {
    let mut e = io::stderr().lock();
    let mut status = Exit::Ok;
    for r in results {
        let path = path_string(&r.path);
        if let Some(err) = &r.io_error {
            let line = match r.io_error_code {
                Some(code) => format!("error[{code}]: {path}: {err}"),
                None => format!("error: {path}: {err}"),
            };
            let _ = writeln!(e, "{}", escape_text(&line));
            status = Exit::Error;
        }
        if let Some(i) = &r.inspection {
            for d in &i.diagnostics {
                let _ = writeln!(e, "{}", escape_text(&diagnostic_line(&path, i, d)));
                if d.severity == Severity::Error {
                    status = Exit::Error;
                }
            }
        }
    }
    status
}

/// `warning[code]: file: location, offset 0x10 (in file): message`.
pub fn diagnostic_line(path: &str, i: &Inspection, d: &rocpack_offload::Diagnostic) -> String {
    let sev = d.severity.as_str();
    let offset = match (d.offset, d.offset_in_file) {
        (Some(o), true) => format!(", file offset {o:#x}"),
        (Some(o), false) => format!(", offset {o:#x} in decompressed data"),
        (None, _) => String::new(),
    };
    let location = i.location(d.container);
    let location = if location == "-" {
        String::new()
    } else {
        format!(" {location},")
    };
    let offset = offset.trim_start_matches(", ");
    format!(
        "{sev}[{}]: {path}:{location} {offset}: {}",
        d.code, d.message
    )
}

/// Progress on stderr, only when it is a terminal and not silenced.
pub struct Progress {
    enabled: bool,
}

/// Whether progress is shown: not with `--quiet`, and only on a terminal.
pub fn progress_shown(quiet: bool) -> bool {
    !quiet && io::stderr().is_terminal()
}

impl Progress {
    pub fn new(quiet: bool) -> Self {
        Progress {
            enabled: progress_shown(quiet),
        }
    }

    /// Shows `done` of `total` bytes as a bar with a percentage; clears it when complete.
    pub fn update(&self, done: u64, total: u64) {
        if !self.enabled || total == 0 {
            return;
        }
        const WIDTH: u64 = 30;
        let filled = (done.min(total) * WIDTH / total) as usize;
        let bar = format!(
            "{}{}",
            "#".repeat(filled),
            "-".repeat(WIDTH as usize - filled)
        );
        let _ = write!(
            io::stderr(),
            "\rrocpack: [{bar}] {:>3}% of {}",
            done.min(total) * 100 / total,
            human_size(total)
        );
        if done >= total {
            let _ = write!(io::stderr(), "\r\x1b[K");
        }
    }
}

/// A path for text output: lossless ([`path_string`]) and escaped ([`escape_text`]), so that a
/// name with a newline or a terminal escape sequence cannot forge or hide output.
pub fn path_text(path: &Path) -> String {
    escape_text(&path_string(path)).into_owned()
}

/// Formats a byte count with thousands separators.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Writes `bytes` as `dest` atomically (`rocpack_slim::write::write_file`: a temporary file
/// beside it, read back, synced, renamed over it, its permissions kept), so a reader never sees
/// a partial file and a failure leaves the old one. A directory that could not be synced after
/// the rename is a warning on stderr.
pub fn write_atomically(dest: &Path, bytes: &[u8]) -> io::Result<()> {
    warn_note(rocpack_slim::write::write_file(dest, bytes)?);
    Ok(())
}

/// The note of a file put in place in a directory that could not be synced, as a warning.
pub fn warn_note(note: Option<String>) {
    if let Some(note) = note {
        let _ = writeln!(io::stderr().lock(), "warning: {}", escape_text(&note));
    }
}

// ---- text helpers: escaping names from files, sizes, tables -------------------------------

/// Makes a name safe to print in text output, so that a file or member name cannot end a line,
/// move the cursor or colour the terminal (a fake row in a table, a hidden warning):
/// - `\n`, `\r` and `\t` as those two characters;
/// - any other C0 control character and DEL as `\xNN` (ESC is `\x1b`);
/// - C1 controls (U+0080–U+009F) and the invisible characters that reorder or break text
///   (U+061C, U+200B–U+200F, U+2028–U+202E, U+2060–U+2069, U+FEFF) as `\u{NNNN}`.
///
/// Everything else is kept, including backslashes, so that a name read through
/// `rocpack_bytes::lossless_string` (where a byte that is not UTF-8 is already `\xNN`) reads the same in
/// text as in JSON. A backslash in an escaped name is therefore ambiguous (a file may really
/// be called `a\n`); JSON output (`--json`) is exact.
pub fn escape_text(s: &str) -> std::borrow::Cow<'_, str> {
    // Printable ASCII, nearly every name: checked byte by byte, without decoding chars.
    if s.bytes().all(|b| (b' '..b'\x7f').contains(&b)) || !s.chars().any(needs_escape) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c < ' ' || c == '\x7f' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if needs_escape(c) => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// A byte count in binary units for people: `512 B`, `41.3 MiB`, `1.6 GiB`.
pub fn human_size(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    match UNITS.get(unit) {
        Some(u) if unit > 0 => format!("{v:.1} {u}"),
        _ => format!("{n} B"),
    }
}

/// Left-aligned text table with two spaces between columns; the last column is not padded and
/// trailing spaces are trimmed.
///
/// # Errors
/// Writing to `out` failed.
pub fn table(
    out: &mut impl std::io::Write,
    header: &[&str],
    rows: &[Vec<String>],
) -> std::io::Result<()> {
    // Cells hold names from files: escaped, so that one cannot add a row or colour the rest.
    let rows: Vec<Vec<std::borrow::Cow<'_, str>>> = rows
        .iter()
        .map(|r| r.iter().map(|c| escape_text(c)).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| text_width(h)).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(text_width(c));
        }
    }
    let mut line = String::new();
    table_line(
        out,
        &mut line,
        header.iter().map(|h| (*h, text_width(h))),
        &widths,
    )?;
    for r in &rows {
        table_line(
            out,
            &mut line,
            r.iter().map(|c| (c.as_ref(), text_width(c))),
            &widths,
        )?;
    }
    Ok(())
}

/// The width of a table cell, in chars (what `{:<w$}` pads by).
pub fn text_width(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.chars().count()
    }
}

/// One line of a [`table`], built in `line` (reused from line to line) and written with its
/// newline: each cell, given with its [`text_width`], but the last padded to its column's
/// width plus two spaces; trailing spaces trimmed. Cells past the last width are left out.
///
/// # Errors
/// Writing to `out` failed.
pub fn table_line<'c>(
    out: &mut impl std::io::Write,
    line: &mut String,
    cells: impl IntoIterator<Item = (&'c str, usize)>,
    widths: &[usize],
) -> std::io::Result<()> {
    line.clear();
    let last = widths.len().saturating_sub(1);
    for (i, ((c, n), w)) in cells.into_iter().zip(widths).enumerate() {
        line.push_str(c);
        if i < last {
            for _ in n..w + 2 {
                line.push(' ');
            }
        }
    }
    out.write_all(line.trim_end().as_bytes())?;
    out.write_all(b"\n")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use rocpack_bytes::lossless_string;

    #[test]
    fn escape_text_neutralises_control_characters() {
        assert_eq!(escape_text("libx.so"), "libx.so");
        assert!(matches!(
            escape_text("gfx90a:xnack+"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            escape_text("a\nb\x1b[31mred\t\r\x7f\u{85}\u{202e}é"),
            "a\\nb\\x1b[31mred\\t\\r\\x7f\\u{0085}\\u{202e}é"
        );
        // Backslashes are kept: a lossless string reads the same as in JSON.
        assert_eq!(escape_text(&lossless_string(b"a\xff\n")), "a\\xff\\n");
    }

    #[test]
    fn table_cells_cannot_add_rows() {
        let mut out = Vec::new();
        table(
            &mut out,
            &["FILE", "N"],
            &[vec!["a\nFAKE  ROW".into(), "1".into()]],
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "FILE          N\na\\nFAKE  ROW  1\n"
        );
    }
}
