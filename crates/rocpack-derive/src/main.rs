//! `rocpack-derive SRC_DIR --component NAME --origin ORIGIN [--set VAR=VALUE]... [-o OUT.toml]`:
//! derives a ROCm component's build facts from its source tree (see the library's docs) and
//! writes them as TOML. Exit status: 0 written, 2 error.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Parser;

/// Derives a ROCm component's build facts by evaluating its own CMakeLists.
#[derive(Debug, Parser)]
#[command(name = "rocpack-derive", version)]
struct Args {
    /// The component's source tree (the directory holding its top-level CMakeLists.txt).
    source_dir: PathBuf,
    /// The component's name in rocpack's knowledge base (rocBLAS, composable_kernel, ...).
    #[arg(long)]
    component: String,
    /// Where the sources come from: "upstream:ROCm/rocBLAS@rocm-6.2.0 <commit>" or
    /// "debian:rocblas 6.4.4-4".
    #[arg(long)]
    origin: String,
    /// A remark recorded with the facts (for example that Debian's patches are not applied).
    #[arg(long)]
    note: Option<String>,
    /// A cache entry every evaluation starts from, as -D would give it.
    #[arg(long = "set", value_name = "VAR=VALUE")]
    sets: Vec<String>,
    /// composable_kernel: GPU_TARGETS values to evaluate the instance libraries for.
    #[arg(long = "ck-target", value_name = "TARGETS", default_values_t = ["gfx1030".to_owned(), "gfx1100".to_owned(), "gfx90a".to_owned(), "gfx942".to_owned()])]
    ck_targets: Vec<String>,
    /// Where to write the TOML (standard output when absent).
    #[arg(short, long)]
    output: Option<PathBuf>,
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("Caused by: {cause}");
            }
            std::process::ExitCode::from(2)
        }
    }
}

fn run() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut sets = Vec::new();
    for s in &args.sets {
        let Some((k, v)) = s.split_once('=') else {
            bail!("--set {s}: expected VAR=VALUE");
        };
        sets.push((k.to_owned(), v.to_owned()));
    }
    let inputs = rocpack_derive::Inputs {
        source_dir: &args.source_dir,
        component: args.component.clone(),
        origin: args.origin.clone(),
        note: args.note.clone(),
        sets,
        ck_targets: args.ck_targets.clone(),
    };
    let facts = rocpack_derive::derive(&inputs).with_context(|| {
        format!(
            "deriving {} from {}",
            args.component,
            args.source_dir.display()
        )
    })?;
    let text = facts.to_toml()?;
    match &args.output {
        Some(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            std::fs::write(path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        None => print!("{text}"),
    }
    Ok(())
}
