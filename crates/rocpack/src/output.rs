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

impl Progress {
    pub fn new(quiet: bool) -> Self {
        Progress {
            enabled: !quiet && io::stderr().is_terminal(),
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

pub use rocpack_bytes::{escape_text, human_size};

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

pub use rocpack_bytes::table;

/// Writes `bytes` as `dest` atomically (`rocpack_slim::write::write_file`: a temporary file
/// beside it, read back, synced, renamed over it, its permissions kept), so a reader never sees
/// a partial file and a failure leaves the old one. A directory that could not be synced after
/// the rename is a warning on stderr.
pub fn write_atomically(dest: &Path, bytes: &[u8]) -> io::Result<()> {
    if let Some(note) = rocpack_slim::write::write_file(dest, bytes)? {
        let _ = writeln!(io::stderr().lock(), "warning: {}", escape_text(&note));
    }
    Ok(())
}
