//! `plan verify`'s text: the summary table (one line per component), then per component the
//! processors found, missing and unplanned with their bytes, then the problems and the result.
//! The report itself is `rocpack_plan::verify::Report` (its JSON is the report serialized).

use std::io::{self, Write};

use crate::output::{escape_text, human_size, table};
use rocpack_plan::kb::Layout;
use rocpack_plan::verify::{ComponentReport, ComponentState, Report};

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn layout_name(l: Layout) -> &'static str {
    match l {
        Layout::Rocm => "rocm",
        Layout::Debian => "debian",
    }
}

/// `gfx1030 160.2 MiB, gfx90a 12.0 MiB`
fn sized_list<'a>(items: impl Iterator<Item = (&'a str, u64)>) -> String {
    items
        .map(|(p, b)| format!("{p} {}", human_size(b)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Components not installed that nothing was expected from, and components whose files the
/// knowledge base cannot name, are listed after the table, not in it.
fn in_table(c: &ComponentReport) -> bool {
    match c.state {
        ComponentState::Installed | ComponentState::Absent => true,
        ComponentState::NotInstalled => false,
        ComponentState::UnknownFiles => !c.expected.is_empty(),
    }
}

/// Writes the report as text.
pub fn render_text(report: &Report, out: &mut impl Write) -> io::Result<()> {
    writeln!(
        out,
        "ROCm {} plan for {} checked against {} ({} layout, {})",
        report.release,
        if report.targets.is_empty() {
            "no targets".to_owned()
        } else {
            report.targets.join(" ")
        },
        if report.prefixes.len() == 1 {
            escape_text(&report.prefixes.join("")).into_owned()
        } else {
            plural(report.prefixes.len(), "prefix", "prefixes")
        },
        layout_name(report.layout),
        if report.layout_detected {
            "detected"
        } else {
            "given"
        }
    )?;
    writeln!(out)?;
    write_table(report, out)?;
    write_details(report, out)?;
    write_problems(report, out)?;
    write_result(report, out)
}

/// One line per component that is installed or should be.
fn write_table(report: &Report, out: &mut impl Write) -> io::Result<()> {
    let mut rows: Vec<Vec<String>> = Vec::new();
    for c in report.components.iter().filter(|c| in_table(c)) {
        let files = match c.state {
            ComponentState::Installed => format!("{}, {}", c.files, human_size(c.bytes)),
            ComponentState::Absent => "ABSENT".into(),
            ComponentState::NotInstalled | ComponentState::UnknownFiles => "-".into(),
        };
        let planned = match c.state {
            ComponentState::Absent => format!(
                "component absent: expected {}",
                plural(c.expected.len(), "target", "targets")
            ),
            ComponentState::UnknownFiles => format!(
                "not checked: no {} file names known",
                layout_name(report.layout)
            ),
            ComponentState::NotInstalled => String::new(),
            ComponentState::Installed if c.expected.is_empty() => {
                format!("none expected ({})", c.device_code.as_str())
            }
            ComponentState::Installed => {
                let mut s = format!(
                    "{}/{} found",
                    c.expected.len() - c.missing.len(),
                    c.expected.len()
                );
                if !c.missing.is_empty() {
                    s.push_str(&format!(", MISSING {}", c.missing.join(" ")));
                }
                s
            }
        };
        let mut unplanned = if c.unplanned.is_empty() {
            "-".to_owned()
        } else {
            format!(
                "{}, {}",
                plural(c.unplanned.len(), "target", "targets"),
                human_size(c.unplanned_bytes)
            )
        };
        if c.unreadable_files > 0 {
            unplanned.push_str(&format!(
                " ({} unreadable)",
                plural(c.unreadable_files, "file", "files")
            ));
        }
        rows.push(vec![c.name.clone(), files, planned, unplanned]);
    }
    table(
        out,
        &["COMPONENT", "FILES", "PLANNED DEVICE CODE", "UNPLANNED"],
        &rows,
    )
}

/// The components listed after the table, then per component the processors found, missing
/// and unplanned with their bytes.
fn write_details(report: &Report, out: &mut impl Write) -> io::Result<()> {
    let listed = |state: ComponentState| -> Vec<&str> {
        report
            .components
            .iter()
            .filter(|c| c.state == state && !in_table(c))
            .map(|c| c.name.as_str())
            .collect()
    };
    let not_installed = listed(ComponentState::NotInstalled);
    let unknown = listed(ComponentState::UnknownFiles);
    if !not_installed.is_empty() || !unknown.is_empty() {
        writeln!(out)?;
    }
    if !not_installed.is_empty() {
        writeln!(
            out,
            "not installed (no device code expected): {}",
            not_installed.join(", ")
        )?;
    }
    if !unknown.is_empty() {
        writeln!(
            out,
            "not checked (no {} file names known, no device code expected): {}",
            layout_name(report.layout),
            unknown.join(", ")
        )?;
    }

    for c in report.components.iter().filter(|c| {
        !c.found.is_empty()
            || !c.missing.is_empty()
            || c.shared_files > 0
            || c.state == ComponentState::Absent
    }) {
        writeln!(out)?;
        let mut head = format!("{} ({})", c.name, c.device_code.as_str());
        if c.compressed {
            head.push_str(", sizes of compressed device code are uncompressed");
        }
        writeln!(out, "{head}")?;
        if c.state == ComponentState::Absent {
            writeln!(
                out,
                "  absent      no installed file matches its {} file names; expected device code for {}",
                layout_name(report.layout),
                c.expected.join(" ")
            )?;
            continue;
        }
        // Planned processors in plan order.
        let found = sized_list(
            c.planned
                .iter()
                .filter_map(|p| c.found.get(p).map(|b| (p.as_str(), *b))),
        );
        writeln!(
            out,
            "  found       {}",
            if found.is_empty() {
                "-".into()
            } else {
                escape_text(&found)
            }
        )?;
        if !c.missing.is_empty() {
            writeln!(out, "  missing     {}", c.missing.join(" "))?;
        }
        if !c.unplanned.is_empty() {
            writeln!(
                out,
                "  unplanned   {} (total {})",
                escape_text(&sized_list(
                    c.unplanned.iter().map(|u| (u.processor.as_str(), u.bytes))
                )),
                human_size(c.unplanned_bytes)
            )?;
        }
        if c.shared_files > 0 {
            writeln!(
                out,
                "  shared      {}, {} (device data naming no target)",
                plural(c.shared_files, "file", "files"),
                human_size(c.shared_bytes)
            )?;
        }
    }

    Ok(())
}

/// The components the plan does not build, and the problems.
fn write_problems(report: &Report, out: &mut impl Write) -> io::Result<()> {
    if !report.skipped.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "not built by the plan (not checked): {}",
            report.skipped.join(", ")
        )?;
    }
    if !report.problems.is_empty() {
        writeln!(out)?;
        for p in &report.problems {
            let sev = p.severity.as_str();
            let mut at = String::new();
            if let Some(c) = &p.container {
                at.push_str(&format!(" {c},"));
            }
            if let Some(o) = p.offset {
                at.push_str(&if p.offset_in_file {
                    format!(" file offset {o:#x}:")
                } else {
                    format!(" offset {o:#x} in decompressed data:")
                });
            }
            let at = at.trim_end_matches(',');
            // Paths, member names and messages come from the install: one escaped line.
            let line = format!("{sev}[{}]: {}:{at} {}", p.code, p.path, p.message);
            writeln!(out, "{}", escape_text(&line))?;
        }
    }

    Ok(())
}

/// `clean: …`, `missing: …` or `unreadable: …`, with the counts.
fn write_result(report: &Report, out: &mut impl Write) -> io::Result<()> {
    writeln!(out)?;
    let s = &report.summary;
    let mut result = Vec::new();
    if s.with_missing > 0 {
        result.push(format!(
            "planned targets missing in {}",
            plural(s.with_missing, "component", "components")
        ));
    }
    if s.absent > 0 {
        result.push(format!(
            "{} absent",
            plural(s.absent, "planned component", "planned components")
        ));
    }
    if s.unreadable > 0 {
        result.push(format!(
            "{} unreadable",
            plural(s.unreadable, "file", "files")
        ));
    }
    if s.with_unplanned > 0 {
        result.push(format!(
            "{} of unplanned device code in {}",
            human_size(s.unplanned_bytes),
            plural(s.with_unplanned, "component", "components")
        ));
    }
    writeln!(
        out,
        "{}: {} of {} components installed, {} in {}{}{}",
        report.status().as_str(),
        s.installed,
        s.components,
        human_size(s.bytes),
        plural(s.files, "file", "files"),
        if result.is_empty() { "" } else { "; " },
        result.join("; ")
    )
}
