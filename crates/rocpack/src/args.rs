//! Command-line arguments, apart from the logic that uses them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Inspect the AMD GPU code inside ROCm libraries, executables, archives and bundles —
/// without a GPU, without ROCm, and without executing anything.
#[derive(Debug, Parser)]
#[command(name = "rocpack", version, about, max_term_width = 100)]
#[command(
    after_help = "Exit status: 0 success; 1 nothing matched (extract); 2 a file could not be read completely, or bad usage."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options shared by every command.
#[derive(Debug, Args)]
pub struct Global {
    /// Print JSON instead of text (see docs/json.md for the schema).
    #[arg(long, global = true)]
    pub json: bool,

    /// Largest size one compressed bundle may decompress to (e.g. 512M, 4G).
    #[arg(long, global = true, value_name = "SIZE", default_value = "1G", value_parser = parse_size)]
    pub max_decompressed: u64,

    /// Do not print progress on stderr.
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// One row per device code object: file, container, entry ID, target, code object version, size.
    List(ListArgs),
    /// Everything known about each container and code object, optionally with kernels.
    Show(ShowArgs),
    /// Write the code objects for one target, byte-identical to clang-offload-bundler --unbundle.
    Extract(ExtractArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Files or directories (walked recursively, in parallel).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Also list host entries and entries that are not device code.
    #[arg(long)]
    pub all_entries: bool,

    /// Decompress compressed bundles fully and check their hashes (slower).
    #[arg(long)]
    pub verify: bool,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Files or directories.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Decode each code object's kernels: registers, spills, LDS, scratch, wavefront size.
    #[arg(long, short)]
    pub kernels: bool,
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// A file (or a directory, walked recursively).
    #[arg(value_name = "PATH")]
    pub path: PathBuf,

    /// Target ID to extract, e.g. gfx90a:xnack+ (matched as clang-offload-bundler matches:
    /// same processor, and every feature the code object pins equals the target's).
    #[arg(long, short, required = true, value_name = "TARGET_ID")]
    pub target: String,

    /// Directory to write into (created if missing). Nothing is written anywhere else.
    #[arg(long, short, value_name = "DIR", default_value = ".")]
    pub output: PathBuf,
}

/// Parses `123`, `64K`, `512M`, `4G` (powers of 1024).
fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, 'k' | 'K')) => (&s[..i], 1u64 << 10),
        Some((i, 'm' | 'M')) => (&s[..i], 1 << 20),
        Some((i, 'g' | 'G')) => (&s[..i], 1 << 30),
        Some((i, 't' | 'T')) => (&s[..i], 1 << 40),
        _ => (s, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| format!("invalid size {s:?} (examples: 4096, 64K, 512M, 4G)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_suffixes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert!(parse_size("1X").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
