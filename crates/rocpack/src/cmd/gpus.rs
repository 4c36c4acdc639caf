//! `rocpack gpus`: the GPU catalogue.

use std::io::{self, Write};

use anyhow::Result;
use rocpack_amdgpu::catalogue::{self, Gpu};

use crate::args::{Global, GpusArgs};
use crate::output::{self, Exit};

pub fn run(global: &Global, args: &GpusArgs) -> Result<Exit> {
    let entries: Vec<&Gpu> = match args.filter.as_deref() {
        None => catalogue::all().iter().collect(),
        Some(f) => match catalogue::find(f) {
            // An exact processor name or alias means that entry alone.
            Some(one) => vec![one],
            None => catalogue::search(f),
        },
    };
    let mut out = io::BufWriter::new(io::stdout().lock());
    if entries.is_empty() {
        if let Some(f) = &args.filter {
            eprintln!("rocpack: no processor, generation or product matches {f:?}");
        }
        return Ok(Exit::NoMatch);
    }
    if global.json {
        for g in &entries {
            serde_json::to_writer(&mut out, g)?;
            writeln!(out)?;
        }
    } else if let [one] = entries.as_slice() {
        detail(&mut out, one)?;
    } else {
        table(&mut out, &entries)?;
    }
    out.flush()?;
    Ok(Exit::Ok)
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "-" }
}

fn table(out: &mut impl Write, entries: &[&Gpu]) -> Result<()> {
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|g| {
            let products: Vec<&str> = g
                .marketing
                .iter()
                .take(3)
                .map(|p| p.name.as_str())
                .collect();
            let more = g.marketing.len().saturating_sub(3);
            let mut products = products.join(", ");
            if more > 0 {
                products.push_str(&format!(" (+{more})"));
            }
            if g.is_generic() {
                products = format!(
                    "covers {}; HIP loads it since {}",
                    g.members.join(" "),
                    g.runtime_since.as_deref().unwrap_or("(no release yet)")
                );
            }
            vec![
                g.name.clone(),
                g.generation.clone(),
                g.architecture.clone().unwrap_or_default(),
                g.kind.map(|k| k.as_str().to_owned()).unwrap_or_default(),
                g.wavefront.to_string(),
                g.matrix.map(|m| m.as_str().to_owned()).unwrap_or_default(),
                yes(g.xnack).to_owned(),
                yes(g.sramecc).to_owned(),
                g.generic.clone().unwrap_or_else(|| "-".into()),
                products,
            ]
        })
        .collect();
    output::table(
        out,
        &[
            "PROCESSOR",
            "GEN",
            "ARCH",
            "KIND",
            "WAVE",
            "MATRIX",
            "XNACK",
            "SRAMECC",
            "GENERIC",
            "PRODUCTS",
        ],
        &rows,
    )?;
    Ok(())
}

fn detail(out: &mut impl Write, g: &Gpu) -> Result<()> {
    writeln!(out, "{}", g.name)?;
    let mut line = |k: &str, v: String| -> io::Result<()> {
        if v.is_empty() {
            Ok(())
        } else {
            writeln!(out, "  {k:<16}{v}")
        }
    };
    line("aliases", g.aliases.join(", "))?;
    line("mach", format!("{:#04x}", g.mach))?;
    line("generation", g.generation.clone())?;
    line("architecture", g.architecture.clone().unwrap_or_default())?;
    line(
        "kind",
        g.kind.map(|k| k.as_str().to_owned()).unwrap_or_default(),
    )?;
    line("wavefront", g.wavefront.to_string())?;
    line(
        "matrix cores",
        g.matrix.map(|m| m.as_str().to_owned()).unwrap_or_default(),
    )?;
    line(
        "features",
        match (g.xnack, g.sramecc) {
            (true, true) => "sramecc, xnack".into(),
            (true, false) => "xnack".into(),
            (false, true) => "sramecc".into(),
            (false, false) => "none (no :xnack or :sramecc in its target IDs)".into(),
        },
    )?;
    if let Some(generic) = &g.generic {
        line(
            "generic target",
            format!(
                "{generic} (version {} and later)",
                g.generic_version.unwrap_or(1)
            ),
        )?;
    }
    line("members", g.members.join(", "))?;
    if g.is_generic() {
        line(
            "HIP loads it",
            g.runtime_since.as_deref().map_or_else(
                || "in no ROCm release yet".to_owned(),
                |r| format!("since ROCm {r}"),
            ),
        )?;
        line("", g.runtime_since_note.clone().unwrap_or_default())?;
    }
    for (i, p) in g.marketing.iter().enumerate() {
        line(if i == 0 { "products" } else { "" }, p.name.clone())?;
    }
    line("note", g.note.clone().unwrap_or_default())?;
    for (i, s) in g.sources.iter().enumerate() {
        line(if i == 0 { "sources" } else { "" }, s.citation.clone())?;
    }
    Ok(())
}
