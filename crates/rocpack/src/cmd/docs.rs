//! `rocpack completions` and `rocpack man`: shell completions and manual pages generated from
//! the clap definitions in `args.rs`, so they can never disagree with the options.

use std::io::{self, Write};

use anyhow::{Context, Result};
use clap::CommandFactory;

use crate::args::{Cli, CompletionsArgs, ManArgs};
use crate::output::{Exit, write_atomically};

/// Prints the completion script for one shell.
pub fn completions(args: &CompletionsArgs) -> Result<Exit> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "rocpack", &mut out);
    io::stdout().lock().write_all(&out)?;
    Ok(Exit::Ok)
}

/// Writes rocpack.1 to stdout, or every page into a directory.
pub fn man(args: &ManArgs) -> Result<Exit> {
    let mut cmd = Cli::command();
    // Builds the tree, which copies the global options (--json, --max-member, ...) into every
    // command, so each command's page lists all it accepts.
    cmd.build();
    let Some(dir) = &args.out_dir else {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut out)?;
        io::stdout().lock().write_all(&out)?;
        return Ok(Exit::Ok);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut pages = vec![("rocpack.1".to_owned(), render(cmd.clone())?)];
    // clap's own `help` command has no page of its own.
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let name = format!("rocpack-{}", sub.get_name());
        let page = sub
            .clone()
            .display_name(name.clone())
            .bin_name(format!("rocpack {}", sub.get_name()));
        pages.push((format!("{name}.1"), render(page)?));
    }
    for (file, text) in &pages {
        let dest = dir.join(file);
        write_atomically(&dest, text).with_context(|| format!("writing {}", dest.display()))?;
        println!("{}", dest.display());
    }
    Ok(Exit::Ok)
}

fn render(cmd: clap::Command) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out)?;
    Ok(out)
}
