//! Command-line arguments, apart from the logic that uses them.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use rocpack_amdgpu::compat::Policy;
use rocpack_offload::ccob::Method;
use rocpack_plan::kb::Layout;
use rocpack_plan::model::Tool;
use rocpack_slim::HardLinks;
use rocpack_verify::Check;

/// Inspect the AMD GPU code inside ROCm libraries, executables, archives, bundles and packages,
/// and check which GPUs it runs on — without a GPU, without ROCm, and without executing
/// anything.
#[derive(Debug, Parser)]
#[command(name = "rocpack", version, about, max_term_width = 100)]
#[command(
    after_help = "Exit status: 0 success; 1 nothing matched (extract, gpus, devices; compress and decompress found no bundle) or a library cannot run on a requested GPU (check); 2 a file could not be read completely or rewritten, or bad usage."
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

    /// Largest package member (.deb, wheel, tar) read for inspection (e.g. 512M, 16G); a larger
    /// member is reported, not read. Members over 8 MiB are read into a temporary file in
    /// $TMPDIR, removed at once.
    #[arg(long, global = true, value_name = "SIZE", default_value = "8G", value_parser = parse_size)]
    pub max_member: u64,

    /// Also search executable sections (host machine code) of ELF and PE files for embedded GPU
    /// code. No toolchain puts code objects there, and it is slower: reading librocsparse's
    /// 45 MB of .text costs more than the rest of listing it. For the reading commands (list,
    /// show, extract, scan, check, verify, plan verify); strip, compress and decompress refuse it.
    #[arg(long, global = true)]
    pub deep: bool,

    /// Do not print progress on stderr.
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

impl Global {
    /// The reading options every command shares: the global limits and `--deep`. A command
    /// sets only what is its own on top (`..global.scan_options()`).
    pub fn scan_options(&self) -> rocpack_scan::ScanOptions {
        rocpack_scan::ScanOptions {
            max_decompressed: self.max_decompressed,
            max_member: self.max_member,
            search_code: self.deep,
            // Without a progress bar, no byte total is needed before reading.
            sizes_first: crate::output::progress_shown(self.quiet),
            ..rocpack_scan::ScanOptions::default()
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// One row per device code object: file, container, entry ID, target, code object version, size.
    List(ListArgs),
    /// Everything known about each container and code object, optionally with kernels.
    Show(ShowArgs),
    /// Write the code objects for one target, byte-identical to clang-offload-bundler --unbundle.
    Extract(ExtractArgs),
    /// Which GPUs each library can run on, by the HIP runtime's rules (exit 1 if one cannot).
    Check(CheckArgs),
    /// Inventory and coverage matrix (library × GPU target) of an install, packages or wheels.
    Scan(ScanArgs),
    /// The GPU catalogue: processors, generic targets, features, products.
    Gpus(GpusArgs),
    /// The AMD GPUs of this machine, read from sysfs (no ROCm needed).
    Devices(DevicesArgs),
    /// Drop the code for GPUs you do not have from every bundle (a dry run unless --in-place or -o).
    Strip(StripArgs),
    /// Check an install without running it: link closure, symbols and versions as ld.so resolves
    /// them, CMake package configs, and the HIP toolchain layout (exit 1 on an error finding).
    Verify(VerifyArgs),
    /// Plan GPU targets across a ROCm release and emit them for CMake, Spack, Gentoo, Nix or
    /// TheRock (exit 1 on an open error); `plan verify` checks a built install against a plan.
    Plan(PlanArgs),
    /// Compress offload bundles (CCOB), in bundle files and inside host ELF files.
    Compress(CompressArgs),
    /// Decompress offload bundles, in bundle files and inside host ELF files.
    Decompress(DecompressArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) on stdout.
    Completions(CompletionsArgs),
    /// Write the manual pages (roff), generated from these very options: rocpack.1 on stdout, or
    /// rocpack.1 and one rocpack-COMMAND.1 per command into a directory.
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell, e.g. `rocpack completions bash > /etc/bash_completion.d/rocpack`.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write rocpack.1 and rocpack-COMMAND.1 (one per command) into this directory instead.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// Where rewritten files go: shared by strip, compress and decompress.
#[derive(Debug, Args)]
pub struct WriteArgs {
    /// Replace each file (atomically, after verifying the new one).
    #[arg(long, short = 'i')]
    pub in_place: bool,

    /// Write to this directory (or, for one input file, this file) instead.
    #[arg(long, short, value_name = "PATH")]
    pub output: Option<PathBuf>,

    /// Only report what would change (the default without --in-place or -o).
    #[arg(long, short = 'n')]
    pub dry_run: bool,

    /// Keep each original as NAME.orig (a hard link: no copy is made).
    #[arg(long)]
    pub backup: bool,

    /// A file with several hard links: refuse (default), or break: rewrite this name and leave
    /// the other names with the original.
    #[arg(long, value_enum, value_name = "refuse|break", default_value_t = HardLinks::Refuse, hide_possible_values = true)]
    pub hard_links: HardLinks,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Install prefixes (walked recursively) or ELF files. With --root and no path, the whole
    /// root; paths not inside the root are taken as paths of the target system.
    #[arg(value_name = "PREFIX|FILE")]
    pub paths: Vec<PathBuf>,

    /// Resolve everything inside this sysroot: its /etc/ld.so.cache (or ld.so.conf), default
    /// directories, and absolute symlinks.
    #[arg(long, value_name = "SYSROOT")]
    pub root: Option<PathBuf>,

    /// Loader environment, e.g. --env LD_LIBRARY_PATH=/opt/rocm/lib (LD_LIBRARY_PATH and
    /// LD_PRELOAD are honoured; repeat for several).
    #[arg(long, value_name = "NAME=VALUE")]
    pub env: Vec<String>,

    /// Do not report findings with this code (repeat, or separate with commas).
    #[arg(long, value_name = "CODE", value_delimiter = ',')]
    pub allow: Vec<String>,

    /// Which checks to run.
    #[arg(
        long,
        value_name = "CHECK",
        value_delimiter = ',',
        default_value = "linkage,cmake,toolchain",
        value_enum,
        hide_possible_values = true
    )]
    pub checks: Vec<Check>,

    /// Print each ELF file's resolved libraries in load order (like `ld.so --list`, without
    /// running anything) instead of the findings.
    #[arg(long)]
    pub list_libs: bool,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct PlanArgs {
    #[command(subcommand)]
    pub command: Option<PlanCommand>,

    /// GPU targets to plan for: target IDs (gfx90a:xnack-, gfx11-generic), aliases or product
    /// names (repeat, or separate with commas).
    #[arg(long, value_name = "TARGET_ID", value_delimiter = ',')]
    pub gpu: Vec<String>,

    /// Groups of targets: TheRock families of the release (gfx110X-dgpu, dcgpu-all, ...) or a
    /// Debian suite's list (debian-sid, debian-experimental); see --list-families.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    pub family: Vec<String>,

    /// ROCm release line (6.0, 6.2, 6.4, 7.0, 7.1); default: the newest known.
    #[arg(long, value_name = "X.Y")]
    pub release: Option<String>,

    /// Components to plan, as upstream spells them (rocBLAS, composable_kernel, MIOpen, ...;
    /// case-insensitive, aliases accepted); their build dependencies come along.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        conflicts_with = "all"
    )]
    pub components: Vec<String>,

    /// Plan every component of the release (the default without --components).
    #[arg(long)]
    pub all: bool,

    /// Fix a CMake option of one component, e.g. composable_kernel:DL_KERNELS=ON; the plan never
    /// overrides it (repeat for several).
    #[arg(long = "set", value_name = "COMPONENT:OPTION=VALUE")]
    pub set: Vec<String>,

    /// Output: text (default), json (the plan, docs/json.md), or settings for cmake, spack,
    /// gentoo, nix or therock.
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        default_value = "text",
        hide_possible_values = true
    )]
    pub format: PlanFormat,

    /// With text or json: the build tool the plan is for (cmake, spack, gentoo, nix, therock);
    /// the other formats imply it.
    #[arg(
        long = "for",
        value_enum,
        value_name = "TOOL",
        hide_possible_values = true
    )]
    pub for_tool: Option<Tool>,

    /// Write the output into this directory instead of stdout (cmake: one <component>.cmake
    /// initial-cache file per component, for `cmake -C`).
    #[arg(short = 'o', long, value_name = "DIR")]
    pub output: Option<PathBuf>,

    /// List the components of the release with their names, aliases and kind.
    #[arg(long)]
    pub list_components: bool,

    /// List the families the release accepts and their targets.
    #[arg(long)]
    pub list_families: bool,
}

/// What `plan --format` writes: the plan itself (text or JSON), or the settings for one build
/// tool ([`Tool`], the one output-kind enum; this adds only the two renderings of the plan).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanFormat {
    Text,
    Json,
    Tool(Tool),
}

impl ValueEnum for PlanFormat {
    fn value_variants<'a>() -> &'a [Self] {
        const ALL: [PlanFormat; 2 + Tool::ALL.len()] = {
            let mut all = [PlanFormat::Text; 2 + Tool::ALL.len()];
            all[1] = PlanFormat::Json;
            let mut i = 0;
            while i < Tool::ALL.len() {
                all[2 + i] = PlanFormat::Tool(Tool::ALL[i]);
                i += 1;
            }
            all
        };
        &ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(match self {
            PlanFormat::Text => "text",
            PlanFormat::Json => "json",
            PlanFormat::Tool(t) => t.as_str(),
        }))
    }
}

#[derive(Debug, Subcommand)]
pub enum PlanCommand {
    /// Check a built install against a JSON plan: per component the planned targets missing and
    /// the targets built but not planned, with their bytes (exit 1 when something is missing).
    Verify(PlanVerifyArgs),
}

#[derive(Debug, Args)]
pub struct PlanVerifyArgs {
    /// A plan written by `rocpack plan --format json`.
    #[arg(value_name = "PLAN.json")]
    pub plan: PathBuf,

    /// Install prefixes (/opt/rocm, or Debian packages unpacked into directories).
    #[arg(required = true, value_name = "PREFIX")]
    pub prefixes: Vec<PathBuf>,

    /// Layout of the prefixes: rocm (/opt/rocm) or debian (/usr, multiarch); default: detected.
    #[arg(long, value_enum, value_name = "LAYOUT", hide_possible_values = true)]
    pub layout: Option<Layout>,

    /// The prefixes belong to the system tree under DIR (a sysroot, an unpacked image): symbolic
    /// links are followed inside DIR only. Without it, a link that leaves the prefixes is
    /// followed on this machine (a Nix profile's links into /nix/store).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct StripArgs {
    /// Files or directories (walked recursively). Packages are not rewritten.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// GPUs to keep: target IDs (gfx90a:xnack-), aliases or product names (repeat, or separate
    /// with commas). Without xnack/sramecc, code for every setting is kept.
    #[arg(long, value_name = "TARGET_ID", value_delimiter = ',')]
    pub keep: Vec<String>,

    /// Keep code for this machine's GPUs (read from sysfs).
    #[arg(long)]
    pub keep_detected: bool,

    /// Read GPUs from this directory instead of /sys (with --keep-detected).
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,

    #[command(flatten)]
    pub rules: RuleArgs,

    #[command(flatten)]
    pub write: WriteArgs,
}

#[derive(Debug, Args)]
pub struct CompressArgs {
    /// Bundle files, CCOB files, host ELF files or directories.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// zstd (default, as clang) or zlib.
    #[arg(long, value_enum, value_name = "METHOD", default_value_t = Method::Zstd, hide_possible_values = true)]
    pub method: Method,

    /// Compression level (default: clang's, zstd 3 with long-distance matching, zlib 6).
    #[arg(long, value_name = "N")]
    pub level: Option<i32>,

    /// CCOB format version: 2 (read by LLVM 19 and later), 3 (LLVM 20 and later; 64-bit
    /// sizes), or auto (2, or 3 when a bundle needs 64-bit sizes).
    #[arg(long, value_enum, value_name = "2|3|auto", default_value_t = FormatVersion::Auto, hide_possible_values = true)]
    pub format_version: FormatVersion,

    #[command(flatten)]
    pub write: WriteArgs,
}

#[derive(Debug, Args)]
pub struct DecompressArgs {
    /// CCOB files, bundle files, host ELF files or directories.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    #[command(flatten)]
    pub write: WriteArgs,
}

/// How to decide whether code runs: shared by check and scan.
#[derive(Debug, Args)]
pub struct RuleArgs {
    /// Loader rules: hip (current HIP runtime: native, then generic), hip-legacy (ROCm 6.3 and
    /// older: no generic fallback), debian (Debian/Solus extended ISA compatibility patches).
    #[arg(long, value_enum, value_name = "POLICY", default_value_t = Policy::Hip, hide_possible_values = true)]
    pub policy: Policy,

    /// Report the device as another processor, as the runtime does for this variable
    /// (e.g. 10.3.0 for gfx1030). Taken from HSA_OVERRIDE_GFX_VERSION when set.
    #[arg(long, value_name = "X.Y.Z", env = "HSA_OVERRIDE_GFX_VERSION")]
    pub hsa_override_gfx_version: Option<String>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Files, directories, .deb, .whl/.zip or .tar(.gz|.xz|.zst) packages. Default: the usual
    /// install locations (/opt/rocm*, /usr/lib/<multiarch>, /usr/lib64, Python packages such
    /// as torch and jaxlib).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// GPU to check for: a target ID (gfx90a:sramecc+:xnack-), a processor alias or a product
    /// name from `rocpack gpus` (repeat, or separate with commas). Default: this machine's GPUs.
    /// A target ID or alias is reported as a processor with all its products; a product name
    /// as that product.
    #[arg(long = "gpu", value_name = "TARGET_ID", value_delimiter = ',')]
    pub gpus: Vec<String>,

    #[command(flatten)]
    pub rules: RuleArgs,

    /// Read GPUs from this directory instead of /sys (for tests and for other machines' dumps).
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,

    /// Also list libraries that run natively, with their reasons.
    #[arg(long, short)]
    pub verbose: bool,
}

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Files, directories, .deb, .whl/.zip or .tar(.gz|.xz|.zst) packages.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Write the coverage report as one self-contained HTML file.
    #[arg(long, value_name = "FILE.html")]
    pub report: Option<PathBuf>,

    /// Columns for these GPUs too (by default: every processor with code in the input, and the
    /// members of each generic target present). Columns are processors, labelled with their
    /// products; a product name given here names its column.
    #[arg(long = "gpu", value_name = "TARGET_ID", value_delimiter = ',')]
    pub gpus: Vec<String>,

    #[command(flatten)]
    pub rules: RuleArgs,
}

#[derive(Debug, Args)]
pub struct GpusArgs {
    /// Show only entries matching this: a processor or alias (gfx90a, navi21), a generation or
    /// architecture (gfx11, rdna3), or part of a product name (7900, MI300).
    #[arg(value_name = "FILTER")]
    pub filter: Option<String>,
}

#[derive(Debug, Args)]
pub struct DevicesArgs {
    /// Read this directory as /sys (a copy of another machine's topology, or a test fixture).
    /// Device-node access is then not checked.
    #[arg(long, value_name = "DIR")]
    pub sysfs_root: Option<PathBuf>,

    /// libdrm's amdgpu.ids to name the GPUs (default: the usual libdrm locations).
    #[arg(long, value_name = "FILE")]
    pub amdgpu_ids: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Files or directories (walked recursively, in parallel).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Also list entries that are not AMD GPU code: host entries, empty entries, other vendors'
    /// device code (SYCL spir64/spir64_gen, NVPTX) and bytes that are not device code. Without
    /// it, a row is an AMDGPU code object or an entry whose triple is amdgcn or AMD SPIR-V.
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

    /// Write JSON Lines records, each as soon as it is known: one per file, container, code
    /// object, kernel and diagnostic (docs/json.md).
    #[arg(long, conflicts_with = "json")]
    pub jsonl: bool,
}

#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// A file, a directory (walked recursively), or a package (.deb, wheel, tarball) read in
    /// place.
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

/// `--format-version` of compress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatVersion {
    /// CCOB v2 (LLVM 19 and later).
    #[value(name = "2")]
    V2,
    /// CCOB v3 (LLVM 20 and later; 64-bit sizes).
    #[value(name = "3")]
    V3,
    /// v2, or v3 when a bundle needs 64-bit sizes.
    Auto,
}

impl FormatVersion {
    /// The version to write, `None` for the choice per bundle.
    pub fn version(self) -> Option<u16> {
        match self {
            FormatVersion::V2 => Some(2),
            FormatVersion::V3 => Some(3),
            FormatVersion::Auto => None,
        }
    }
}
