//! Which code object of one bundle the ROCm runtime loads on a device, and why.
//!
//! ```
//! use rocpack_amdgpu::TargetId;
//! use rocpack_amdgpu::compat::{Device, Entry, Policy, Verdict, select};
//!
//! let device = Device::parse("gfx1031").unwrap();
//! let ids = [TargetId::parse("gfx1030").unwrap(), TargetId::parse("gfx10-3-generic").unwrap()];
//! let entries = [Entry::new(&ids[0]), Entry::new(&ids[1]).with_generic_version(1)];
//!
//! let hip = select(&device, &entries, Policy::Hip, None).unwrap();
//! assert_eq!((hip.verdict, hip.entry), (Verdict::Generic, Some(1)));
//!
//! let debian = select(&device, &entries, Policy::Debian, None).unwrap();
//! assert_eq!((debian.verdict, debian.entry), (Verdict::Policy, Some(0)));
//! ```
//!
//! The rules, with the runtime sources they come from, are in `docs/compat.md`. In short:
//!
//! * [`Policy::Hip`]: the HIP runtime of ROCm 6.4 and later (clr
//!   `FatBinaryInfo::ExtractFatBinaryUsingCOMGR`). It asks comgr for the device's ISA, the
//!   device's generic target and SPIR-V, and takes native before generic before SPIR-V.
//!   Uncompressed bundles: comgr `lookUpCodeObject` gives each query the *first* compatible
//!   entry in file order (an exact string match is not preferred). Compressed bundles: comgr
//!   hands the query to clang-offload-bundler, which walks its hash table, so among several
//!   compatible entries the choice is not file order (a warning says so).
//! * [`Policy::HipLegacy`]: ROCm before 6.4: native code objects only.
//! * [`Policy::Debian`]: [`Policy::Hip`] plus the Debian "extended ISA compatibility" family
//!   rules and scoring, which never reach compressed bundles.
//!
//! `HSA_OVERRIDE_GFX_VERSION` ([`parse_override`]) is applied on top of any policy.

use std::fmt;
use std::str::FromStr;

use crate::mach::{self, GfxVersion};
use crate::target::{Feature, TargetId, TargetIdError};

/// Which runtime's selection rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Policy {
    /// The HIP runtime of ROCm 6.4 and later: native, else generic, else SPIR-V.
    #[default]
    Hip,
    /// HIP runtimes before ROCm 6.4: native code objects only, no generic fallback.
    HipLegacy,
    /// [`Policy::Hip`] plus Debian's extended ISA compatibility (gfx900, gfx1010 and gfx1030
    /// families) on uncompressed bundles.
    Debian,
}

impl Policy {
    /// Every policy, in the order `--help` lists them.
    pub const ALL: [Policy; 3] = [Policy::Hip, Policy::HipLegacy, Policy::Debian];

    fn name(self) -> &'static str {
        match self {
            Policy::Hip => "hip",
            Policy::HipLegacy => "hip-legacy",
            Policy::Debian => "debian",
        }
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A policy name other than `hip`, `hip-legacy` and `debian`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown compatibility policy {0:?} (known: hip, hip-legacy, debian)")]
pub struct PolicyError(pub String);

impl FromStr for Policy {
    type Err = PolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| PolicyError(s.to_owned()))
    }
}

/// One device code object of a bundle, as the selection sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The code object's target ID.
    pub target: &'a TargetId,
    /// Generic version from the ELF header (`e_flags` bits 24–31), when it was read.
    pub generic_version: Option<u8>,
    /// The entry sits in a compressed (CCOB) bundle. A bundle is compressed as a whole; if any
    /// entry says so, the bundle is treated as compressed.
    pub compressed: bool,
}

impl<'a> Entry<'a> {
    /// An uncompressed entry whose generic version was not read.
    pub fn new(target: &'a TargetId) -> Self {
        Entry {
            target,
            generic_version: None,
            compressed: false,
        }
    }

    /// The same entry with a generic version.
    pub fn with_generic_version(self, version: u8) -> Self {
        Entry {
            generic_version: Some(version),
            ..self
        }
    }

    /// The same entry, in a compressed bundle.
    pub fn compressed(self) -> Self {
        Entry {
            compressed: true,
            ..self
        }
    }
}

/// The GPU to check. Features given as `+`/`-` are the device's settings; a feature the
/// processor supports but the target ID leaves out is *unknown*: the selection is computed for
/// each setting and the weakest result is reported (the reason says when it matters).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Device {
    /// The device's target ID, e.g. `gfx90a:sramecc+:xnack-`.
    pub target: TargetId,
}

impl Device {
    /// A device with this target ID.
    pub fn new(target: TargetId) -> Self {
        Device { target }
    }

    /// Parses a device target ID such as `gfx90a:sramecc+:xnack-` or `gfx1031`.
    ///
    /// # Errors
    /// [`TargetIdError`] when `s` is not a target ID.
    pub fn parse(s: &str) -> Result<Self, TargetIdError> {
        TargetId::parse(s).map(Device::new)
    }
}

/// How a bundle's code runs on the device, weakest first (so `Ord` picks the weakest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Nothing the runtime would load.
    None,
    /// Loaded only because `HSA_OVERRIDE_GFX_VERSION` makes the device report another ISA.
    Override,
    /// Loaded only thanks to the chosen non-default policy's extra rules (Debian's families).
    Policy,
    /// A generic target (or SPIR-V) code object that covers the device.
    Generic,
    /// A code object built for the device's own processor.
    Native,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::None => "none",
            Verdict::Override => "override",
            Verdict::Policy => "policy",
            Verdict::Generic => "generic",
            Verdict::Native => "native",
        })
    }
}

/// The rule that decided a selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// The entry's target ID is the device's ISA name, features included.
    ExactMatch,
    /// Same processor; the entry leaves at least one of the device's features unpinned and pins
    /// the others to the device's settings.
    FeaturesUnpinned,
    /// The device's generic target (e.g. gfx10-3-generic for gfx1031).
    GenericFallback,
    /// SPIR-V (`amdgcnspirv`), compiled for the device when the code is loaded.
    SpirvJit,
    /// Debian's family rule: another processor of the device's family.
    DebianFamily,
    /// The runtime picks an entry but the ROCr loader refuses it (generic version too old).
    LoaderRejects,
    /// The (overridden) device names an ISA that ROCr does not know, so ROCr drops the GPU.
    UnknownIsa,
    /// No entry fits.
    NoMatch,
}

/// What the runtime does with one bundle on one device.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Selection {
    /// How the code runs.
    pub verdict: Verdict,
    /// Index of the chosen entry in the bundle (file order), if any.
    pub entry: Option<usize>,
    /// Target ID of the chosen entry.
    pub target: Option<TargetId>,
    /// The rule that decided.
    pub rule: Rule,
    /// Why, in a sentence or three: the rule, the entry, and for `none` every near miss.
    pub reason: String,
    /// Things worth knowing that do not change the verdict (risky override, ambiguous order,
    /// runtimes that behave differently).
    pub warnings: Vec<String>,
}

impl Selection {
    fn none(rule: Rule, reason: String) -> Self {
        Selection {
            verdict: Verdict::None,
            entry: None,
            target: None,
            rule,
            reason,
            warnings: Vec::new(),
        }
    }

    fn chosen(
        verdict: Verdict,
        index: usize,
        entry: &Entry<'_>,
        rule: Rule,
        reason: String,
    ) -> Self {
        Selection {
            verdict,
            entry: Some(index),
            target: Some(entry.target.clone()),
            rule,
            reason,
            warnings: Vec::new(),
        }
    }

    /// `native: entry 0 (gfx90a:xnack-)` or `none`.
    fn summary(&self) -> String {
        match (&self.entry, &self.target) {
            (Some(i), Some(t)) => format!("{}: entry {i} ({t})", self.verdict),
            _ => self.verdict.to_string(),
        }
    }
}

/// The weakest selection and its position, the first one on ties: the verdict of a library is
/// the weakest over its bundles. Bundles without device code have no selection ([`select`]
/// returns `None`), so they do not constrain it. `None` when there is no selection at all.
pub fn weakest<'s, I>(selections: I) -> Option<(usize, &'s Selection)>
where
    I: IntoIterator<Item = &'s Selection>,
{
    let mut best: Option<(usize, &Selection)> = None;
    for (i, s) in selections.into_iter().enumerate() {
        if best.is_none_or(|(_, b)| s.verdict < b.verdict) {
            best = Some((i, s));
        }
    }
    best
}

/// Why a string is not a valid `HSA_OVERRIDE_GFX_VERSION`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OverrideError {
    /// Not `major.minor.stepping` in decimal with nothing after it.
    #[error("HSA_OVERRIDE_GFX_VERSION {0:?} is not major.minor.stepping in decimal (e.g. 10.3.0)")]
    Malformed(String),
    /// A number above libhsakmt's limit.
    #[error("HSA_OVERRIDE_GFX_VERSION {value:?}: {field} must be at most {max}")]
    OutOfRange {
        value: String,
        field: &'static str,
        max: u32,
    },
}

/// Parses `HSA_OVERRIDE_GFX_VERSION` as libhsakmt does: `sscanf("%u.%u.%u%c")` must find exactly
/// three decimal numbers and nothing after them, with major ≤ 63, minor ≤ 255 and stepping ≤ 255
/// (`libhsakmt/src/topology.c`, `topology_sysfs_get_node_props`). Like `%u`, each number may be
/// preceded by blanks and a `+`; a `-` is refused here (libhsakmt wraps it to a huge value and
/// refuses it too, except for the odd `-0`).
///
/// # Errors
/// [`OverrideError`] for anything libhsakmt refuses; the real runtime then fails to initialise.
pub fn parse_override(s: &str) -> Result<GfxVersion, OverrideError> {
    let malformed = || OverrideError::Malformed(s.to_owned());
    let mut parts = s.split('.');
    let mut next = || -> Result<u64, OverrideError> {
        let part = parts.next().ok_or_else(malformed)?;
        let part = part.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
        let digits = part.strip_prefix('+').unwrap_or(part);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(malformed());
        }
        // strtoul saturates; any saturated value is over every limit.
        Ok(digits.bytes().fold(0u64, |n, b| {
            n.saturating_mul(10).saturating_add(u64::from(b - b'0'))
        }))
    };
    let (major, minor, stepping) = (next()?, next()?, next()?);
    if parts.next().is_some() {
        return Err(malformed());
    }
    let check = |v: u64, field, max: u32| {
        u32::try_from(v)
            .ok()
            .filter(|v| *v <= max)
            .ok_or_else(|| OverrideError::OutOfRange {
                value: s.to_owned(),
                field,
                max,
            })
    };
    Ok(GfxVersion {
        major: check(major, "major", 63)?,
        minor: check(minor, "minor", 255)?,
        stepping: check(stepping, "stepping", 255)?,
    })
}

// ROCR_ISAS (processors ROCr registers an ISA for; an override naming anything else makes ROCr
// drop the GPU) and RUNTIME_GENERIC (the HIP runtime's processor → generic map, narrower than
// LLVM's [`mach::GENERIC_MEMBERS`]) are derived from data/gpus.toml (`rocr_isa`,
// `runtime_generic`) by build.rs.
use crate::mach_table::{ROCR_ISAS, RUNTIME_GENERIC};

/// ROCr's minimum generic version, the same for every generic target
/// (`IsaRegistry::GetSupportedGenericVersions`).
const MIN_GENERIC_VERSION: u8 = 1;

/// No Debian release has both the family patches and the HIP 6.4 fallbacks.
const DEBIAN_NO_GENERIC: &str = "Debian 13's patched runtime (rocm-hipamd 5.7.1) has no generic \
                                 or SPIR-V fallback; Debian has them from rocm-hipamd 6.4.3, \
                                 which dropped the family patches";

/// The processor name of SPIR-V entries (`spirv64-amd-amdhsa--amdgcnspirv`).
const SPIRV: &str = "amdgcnspirv";

fn runtime_generic(processor: &str) -> Option<&'static str> {
    RUNTIME_GENERIC
        .iter()
        .find(|(p, _)| *p == processor)
        .map(|(_, g)| *g)
}

/// The generic target LLVM puts the processor in, for the risky-override check.
fn llvm_generic(processor: &str) -> Option<&'static str> {
    mach::GENERIC_MEMBERS
        .iter()
        .find(|(_, members)| members.contains(&processor))
        .map(|(g, _)| *g)
}

/// Debian's family rule (`getProcessorCompatibilityScore` in
/// `0026-extend-hip-isa-compatibility-check.patch`): may an agent of processor `agent` run code
/// built for `code`, another processor?
fn debian_family(code: &str, agent: &str) -> bool {
    fn matches(root: &str, suffixes: &str, s: &str) -> bool {
        s.strip_prefix(root)
            .is_some_and(|rest| rest.len() == 1 && suffixes.contains(rest))
    }
    if matches("gfx90", "0269c", agent) {
        matches("gfx90", "029c", code)
    } else if matches("gfx101", "0123", agent) {
        matches("gfx101", "0", code)
    } else if matches("gfx103", "0123456", agent) {
        matches("gfx103", "0123456", code)
    } else {
        false
    }
}

/// One feature of an agent ISA. `Unknown`: the processor has the feature but the device was
/// given without it, and no entry pins it, so its value cannot change the outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setting {
    Unsupported,
    On,
    Off,
    Unknown,
}

impl Setting {
    fn sign(self) -> &'static str {
        match self {
            Setting::On => "+",
            Setting::Off => "-",
            Setting::Unknown => "?",
            Setting::Unsupported => "",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Feat {
    Sramecc,
    Xnack,
}

impl Feat {
    const ALL: [Feat; 2] = [Feat::Sramecc, Feat::Xnack];

    fn name(self) -> &'static str {
        match self {
            Feat::Sramecc => "sramecc",
            Feat::Xnack => "xnack",
        }
    }

    fn of(self, t: &TargetId) -> Feature {
        match self {
            Feat::Sramecc => t.sramecc,
            Feat::Xnack => t.xnack,
        }
    }

    fn set(self, t: &mut TargetId, value: Feature) {
        match self {
            Feat::Sramecc => t.sramecc = value,
            Feat::Xnack => t.xnack = value,
        }
    }

    fn supported_by(self, info: &mach::MachInfo) -> bool {
        match self {
            Feat::Sramecc => info.sramecc,
            Feat::Xnack => info.xnack,
        }
    }

    /// Debian's bonus for pinning the feature to the agent's setting.
    fn bonus(self) -> u8 {
        match self {
            Feat::Sramecc => 1,
            Feat::Xnack => 2,
        }
    }
}

/// A device ISA as ROCr reports it: every feature the processor supports is on or off.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Agent {
    processor: String,
    sramecc: Setting,
    xnack: Setting,
}

impl Agent {
    fn get(&self, f: Feat) -> Setting {
        match f {
            Feat::Sramecc => self.sramecc,
            Feat::Xnack => self.xnack,
        }
    }

    /// The ISA name without the `amdgcn-amd-amdhsa--` prefix, e.g. `gfx90a:sramecc+:xnack-`.
    fn isa(&self) -> String {
        let mut s = self.processor.clone();
        for f in Feat::ALL {
            if self.get(f) != Setting::Unsupported {
                s.push_str(&format!(":{}{}", f.name(), self.get(f).sign()));
            }
        }
        s
    }
}

fn sign(f: Feature) -> &'static str {
    match f {
        Feature::On => "+",
        Feature::Off => "-",
        Feature::Any => "",
    }
}

/// A feature the entry pins to a value the agent does not have.
struct Mismatch {
    feat: Feat,
    pinned: Feature,
    device: Setting,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.feat.name();
        write!(f, "pins {name}{} while the device ", sign(self.pinned))?;
        match self.device {
            Setting::On | Setting::Off => write!(f, "runs {name}{}", self.device.sign()),
            Setting::Unsupported => write!(f, "has no {name} setting"),
            Setting::Unknown => write!(f, "was given without its {name} setting"),
        }
    }
}

/// comgr `isCompatibleIsaName` / clang `isCompatibleTargetID` on the features: every feature the
/// entry pins must equal the agent's (xnack is checked first, as comgr does). On success, the
/// Debian specialisation bonus.
fn check_pins(entry: &TargetId, agent: &Agent) -> Result<u8, Mismatch> {
    let mut bonus = 0;
    for feat in [Feat::Xnack, Feat::Sramecc] {
        let pinned = feat.of(entry);
        let device = agent.get(feat);
        let agrees = match pinned {
            Feature::Any => continue,
            Feature::On => device == Setting::On,
            Feature::Off => device == Setting::Off,
        };
        if !agrees {
            return Err(Mismatch {
                feat,
                pinned,
                device,
            });
        }
        bonus += feat.bonus();
    }
    Ok(bonus)
}

/// "leaves xnack unpinned" for a native match that is not exact.
fn unpinned_note(entry: &TargetId, agent: &Agent) -> String {
    let loose: Vec<String> = Feat::ALL
        .into_iter()
        .filter(|f| f.of(entry) == Feature::Any && agent.get(*f) != Setting::Unsupported)
        .map(|f| match agent.get(f) {
            Setting::Unknown => format!("{} (not given for the device)", f.name()),
            s => format!("{} (the device runs {}{})", f.name(), f.name(), s.sign()),
        })
        .collect();
    if loose.is_empty() {
        "pins the device's settings".to_owned()
    } else {
        format!("leaves {} unpinned", loose.join(" and "))
    }
}

/// The agent ISAs a device target ID stands for, and the unknown features that matter: a
/// feature the processor has but the target ID leaves out is tried both ways when an entry pins
/// it, and is `Unknown` otherwise.
fn agents_for(target: &TargetId, entries: &[Entry<'_>]) -> (Vec<Agent>, Vec<Feat>) {
    let info = mach::by_name(&target.processor);
    let mut agents = vec![Agent {
        processor: target.processor.clone(),
        sramecc: Setting::Unsupported,
        xnack: Setting::Unsupported,
    }];
    let mut unknown = Vec::new();
    for feat in Feat::ALL {
        let supported = info.is_none_or(|i| feat.supported_by(i));
        let values: &[Setting] = match (supported, feat.of(target)) {
            (false, _) => &[Setting::Unsupported],
            (true, Feature::On) => &[Setting::On],
            (true, Feature::Off) => &[Setting::Off],
            // An unknown processor: only what the target ID says is known to exist.
            (true, Feature::Any) if info.is_none() => &[Setting::Unsupported],
            (true, Feature::Any) if entries.iter().any(|e| feat.of(e.target) != Feature::Any) => {
                unknown.push(feat);
                // The usual setting first, so it is the one reported among equal verdicts:
                // ECC on (MI boards), xnack off (the default xnack mode).
                match feat {
                    Feat::Sramecc => &[Setting::On, Setting::Off],
                    Feat::Xnack => &[Setting::Off, Setting::On],
                }
            }
            (true, Feature::Any) => &[Setting::Unknown],
        };
        agents = agents
            .into_iter()
            .flat_map(|a| {
                values.iter().map(move |v| {
                    let mut a = a.clone();
                    match feat {
                        Feat::Sramecc => a.sramecc = *v,
                        Feat::Xnack => a.xnack = *v,
                    }
                    a
                })
            })
            .collect();
    }
    (agents, unknown)
}

/// Decides which entry of one bundle the runtime loads on `device` under `policy`, with
/// `HSA_OVERRIDE_GFX_VERSION` set to `override_` if given.
///
/// Returns `None` for a bundle without device entries (e.g. host only): it does not constrain
/// a library's verdict (see [`weakest`]).
pub fn select(
    device: &Device,
    entries: &[Entry<'_>],
    policy: Policy,
    override_: Option<GfxVersion>,
) -> Option<Selection> {
    if entries.is_empty() {
        return None;
    }
    let real = select_device(&device.target, entries, policy);
    let Some(version) = override_ else {
        return Some(real);
    };
    Some(with_override(
        &device.target,
        version,
        entries,
        policy,
        real,
    ))
}

/// Every entry the runtime could load on `device` under `policy`: the union of its choices
/// over each setting of the device's unknown features (a target ID without `xnack` stands for
/// both modes), and, with `override_`, its choice for the overridden ISA as well. Entries it
/// would pick but the loader refuses are not included. This is what `rocpack strip` keeps.
pub fn loadable(
    device: &Device,
    entries: &[Entry<'_>],
    policy: Policy,
    override_: Option<GfxVersion>,
) -> Vec<usize> {
    let (agents, _) = agents_for(&device.target, entries);
    let mut out: Vec<usize> = agents
        .iter()
        .map(|a| select_agent(a, entries, policy))
        .chain(override_.and_then(|v| select(device, entries, policy, Some(v))))
        .filter(|s| s.verdict != Verdict::None)
        .filter_map(|s| s.entry)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The selection for a device target ID, over every setting of its unknown features.
fn select_device(target: &TargetId, entries: &[Entry<'_>], policy: Policy) -> Selection {
    let (agents, unknown) = agents_for(target, entries);
    let results: Vec<(Agent, Selection)> = agents
        .into_iter()
        .map(|a| {
            let s = select_agent(&a, entries, policy);
            (a, s)
        })
        .collect();
    let Some(((_, first), rest)) = results.split_first() else {
        return Selection::none(Rule::NoMatch, "no device ISA".to_owned());
    };
    let agree = rest
        .iter()
        .all(|(_, s)| (s.verdict, s.entry, s.rule) == (first.verdict, first.entry, first.rule));
    if agree {
        let mut s = first.clone();
        if !unknown.is_empty() {
            s.reason.push_str(&format!(
                " The same holds for every {} setting; the device was given without it.",
                names(&unknown)
            ));
        }
        return s;
    }
    let Some((_, worst)) = results.iter().min_by_key(|(_, s)| s.verdict) else {
        return first.clone();
    };
    let cases: Vec<String> = results
        .iter()
        .map(|(a, s)| format!("as {} → {}", a.isa(), s.summary()))
        .collect();
    let mut s = worst.clone();
    let mixed = results.iter().any(|(_, r)| r.verdict != worst.verdict);
    s.reason = format!(
        "Depends on the device's {} setting, which was not given ({}); {}: {}",
        names(&unknown),
        cases.join("; "),
        if mixed {
            "the weakest case is reported"
        } else {
            "the verdict is the same, the entry differs; the usual setting is reported"
        },
        worst.reason
    );
    if mixed {
        s.warnings.push(format!(
            "the verdict depends on the device's {} setting; give the device's full ISA name as \
             rocminfo shows it (e.g. {})",
            names(&unknown),
            example_isa(target)
        ));
    }
    s
}

/// `gfx90a:sramecc+:xnack-`: the target with its missing features filled in with common values.
fn example_isa(target: &TargetId) -> String {
    let mut t = target.clone();
    if let Some(info) = mach::by_name(&target.processor) {
        for (feat, usual) in [(Feat::Sramecc, Feature::On), (Feat::Xnack, Feature::Off)] {
            if feat.supported_by(info) && feat.of(&t) == Feature::Any {
                feat.set(&mut t, usual);
            }
        }
    }
    t.to_string()
}

fn names(feats: &[Feat]) -> String {
    feats
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(" and ")
}

/// The runtime's choice for one concrete agent ISA.
fn select_agent(agent: &Agent, entries: &[Entry<'_>], policy: Policy) -> Selection {
    let compressed = entries.iter().any(|e| e.compressed);
    let mut warnings = Vec::new();
    if compressed && policy == Policy::HipLegacy {
        warnings.push(
            "compressed bundles need ROCm 6.2 or later (comgr 2.8); older runtimes cannot read \
             this bundle at all"
                .to_owned(),
        );
    }
    if compressed && policy == Policy::Debian {
        warnings.push(
            "Debian 13's patched runtime (rocm-hipamd 5.7.1) cannot read compressed bundles at \
             all; Debian's rocm-hipamd 6.4.3 can, but has no family patches"
                .to_owned(),
        );
    }

    // Native code objects (and, under Debian, the family rule on the same query).
    let native = if policy == Policy::Debian && !compressed {
        debian_native(agent, entries)
    } else {
        first_native(agent, entries, compressed, &mut warnings)
    };
    if let Some(mut s) = native {
        if s.verdict == Verdict::Policy {
            if let Some(g) = generic_choice(agent, entries, compressed) {
                s.reason.push_str(&format!(
                    " Upstream HIP (policy hip) would take generic entry {g} instead."
                ));
            }
        }
        s.warnings.extend(warnings);
        return s;
    }

    if policy != Policy::HipLegacy {
        if let Some(mut s) = generic_stage(agent, entries, compressed) {
            if policy == Policy::Debian && s.rule == Rule::GenericFallback {
                s.warnings.push(DEBIAN_NO_GENERIC.to_owned());
            }
            s.warnings.extend(warnings);
            return s;
        }
        if let Some((i, e)) = entries
            .iter()
            .enumerate()
            .find(|(_, e)| e.target.processor == SPIRV)
        {
            if policy == Policy::Debian {
                warnings.push(DEBIAN_NO_GENERIC.to_owned());
            }
            let mut s = Selection::chosen(
                Verdict::Generic,
                i,
                e,
                Rule::SpirvJit,
                format!(
                    "No native or generic code object for {}; the runtime compiles SPIR-V entry \
                     {i} ({}) for the device when it loads it (comgr \
                     COMPILE_SPIRV_TO_RELOCATABLE), so the first load is slower.",
                    agent.isa(),
                    e.target
                ),
            );
            s.warnings.extend(warnings);
            return s;
        }
    }

    let mut s = Selection::none(
        Rule::NoMatch,
        no_match_reason(agent, entries, policy, compressed),
    );
    s.warnings.extend(warnings);
    s
}

/// Hip and HipLegacy native lookup, and Debian's for compressed bundles: the first compatible
/// entry in file order (comgr `lookUpCodeObject`; the bundler for compressed bundles).
fn first_native(
    agent: &Agent,
    entries: &[Entry<'_>],
    compressed: bool,
    warnings: &mut Vec<String>,
) -> Option<Selection> {
    let isa = agent.isa();
    let compatible: Vec<(usize, &Entry<'_>)> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            e.target.processor == agent.processor && check_pins(e.target, agent).is_ok()
        })
        .collect();
    let (&(i, e), later) = compatible.split_first()?;
    let exact = e.target.to_string() == isa;
    let rule = if exact {
        Rule::ExactMatch
    } else {
        Rule::FeaturesUnpinned
    };
    let mut reason = if exact {
        format!(
            "Entry {i} ({}) is the device's ISA {isa} exactly.",
            e.target
        )
    } else {
        format!(
            "Entry {i} ({}) is built for {} and {}.",
            e.target,
            agent.processor,
            unpinned_note(e.target, agent)
        )
    };
    if compressed {
        if !later.is_empty() {
            warnings.push(format!(
                "{} entries fit the device; in a compressed bundle clang-offload-bundler takes the \
                 first compatible one in its hash-table order, not file order, so the runtime \
                 may load another of them than entry {i}",
                compatible.len()
            ));
        }
    } else if let Some((j, _)) = later
        .iter()
        .find(|(_, e)| !exact && e.target.to_string() == isa)
    {
        reason.push_str(&format!(
            " comgr takes the first compatible entry in file order, so the exact match at entry \
             {j} is not used."
        ));
    }
    Some(Selection::chosen(Verdict::Native, i, e, rule, reason))
}

/// Debian's scoring over an uncompressed bundle (HIP runtime unbundler as patched by
/// `0026-extend-hip-isa-compatibility-check.patch`): entries in file order, a higher score
/// replaces the candidate, and the search stops once a candidate scores `CS_PROCESSOR_MATCH`
/// (8) or more.
fn debian_native(agent: &Agent, entries: &[Entry<'_>]) -> Option<Selection> {
    const EXACT: u8 = 16;
    const PROCESSOR_MATCH: u8 = 8;
    const PROCESSOR_COMPATIBLE: u8 = 4;
    let isa = agent.isa();
    let mut best: Option<(usize, u8)> = None;
    for (i, e) in entries.iter().enumerate() {
        if best.is_some_and(|(_, s)| s >= PROCESSOR_MATCH) {
            break;
        }
        let t = e.target;
        let score = if t.to_string() == isa {
            EXACT
        } else {
            let base = if t.processor == agent.processor {
                PROCESSOR_MATCH
            } else if debian_family(&t.processor, &agent.processor) {
                PROCESSOR_COMPATIBLE
            } else {
                continue;
            };
            match check_pins(t, agent) {
                Ok(bonus) => base + bonus,
                Err(_) => continue,
            }
        };
        if best.is_none_or(|(_, s)| score > s) {
            best = Some((i, score));
        }
    }
    let (i, score) = best?;
    let e = entries.get(i)?;
    let s = if score == EXACT {
        Selection::chosen(
            Verdict::Native,
            i,
            e,
            Rule::ExactMatch,
            format!(
                "Entry {i} ({}) is the device's ISA {isa} exactly (Debian score 16).",
                e.target
            ),
        )
    } else if score >= PROCESSOR_MATCH {
        Selection::chosen(
            Verdict::Native,
            i,
            e,
            Rule::FeaturesUnpinned,
            format!(
                "Entry {i} ({}) is built for {} and {} (Debian score {score}).",
                e.target,
                agent.processor,
                unpinned_note(e.target, agent)
            ),
        )
    } else {
        Selection::chosen(
            Verdict::Policy,
            i,
            e,
            Rule::DebianFamily,
            format!(
                "No {} code object; Debian's family rule takes entry {i} ({}): {} (Debian score \
                 {score}).",
                agent.processor,
                e.target,
                family_sentence(&e.target.processor, &agent.processor)
            ),
        )
    };
    Some(s)
}

fn family_sentence(code: &str, agent: &str) -> String {
    let family = if code.starts_with("gfx90") {
        "gfx900, gfx902, gfx909 and gfx90c code runs on gfx900, gfx902, gfx906, gfx909 and gfx90c"
    } else if code.starts_with("gfx101") {
        "gfx1010 code runs on gfx1010 to gfx1013"
    } else {
        "gfx1030 to gfx1036 run each other's code"
    };
    format!("{family}, so {code} code runs on {agent}")
}

/// Index of the generic entry the runtime would take, ignoring the loader's version check.
fn generic_choice(agent: &Agent, entries: &[Entry<'_>], compressed: bool) -> Option<usize> {
    let g = runtime_generic(&agent.processor)?;
    if !compressed && comgr_refuses_generic_query(agent, g).is_some() {
        return None;
    }
    entries
        .iter()
        .position(|e| e.target.processor == g && check_pins(e.target, agent).is_ok())
}

/// clr builds the generic query by re-appending the device's features to the generic name
/// (`TargetToGeneric`). comgr's `parseTargetIdentifier` refuses a feature the generic target
/// does not have, so on the uncompressed (comgr lookup) path a gfx906 (`sramecc±`) never finds
/// its gfx9-generic code object. The bundler (compressed path) checks the format only.
fn comgr_refuses_generic_query(agent: &Agent, generic: &str) -> Option<Feat> {
    let info = mach::by_name(generic)?;
    Feat::ALL
        .into_iter()
        .find(|f| agent.get(*f) != Setting::Unsupported && !f.supported_by(info))
}

fn generic_stage(agent: &Agent, entries: &[Entry<'_>], compressed: bool) -> Option<Selection> {
    let g = runtime_generic(&agent.processor)?;
    if !compressed && comgr_refuses_generic_query(agent, g).is_some() {
        return None;
    }
    let i = generic_choice(agent, entries, compressed)?;
    let e = entries.get(i)?;
    match e.generic_version {
        Some(v) if v < MIN_GENERIC_VERSION => Some(Selection::none(
            Rule::LoaderRejects,
            format!(
                "No {} code object; the runtime takes entry {i} ({}), the device's generic \
                 target, but it has generic version {v} and ROCr's loader requires at least \
                 {MIN_GENERIC_VERSION} (Isa::IsCompatible), so loading fails.",
                agent.processor, e.target
            ),
        )),
        version => {
            let v = version.map_or_else(
                || "generic version not read; ROCr needs at least 1".to_owned(),
                |v| format!("generic version {v}"),
            );
            Some(Selection::chosen(
                Verdict::Generic,
                i,
                e,
                Rule::GenericFallback,
                format!(
                    "No {} code object; entry {i} ({}, {v}) is the device's generic target.",
                    agent.processor, e.target
                ),
            ))
        }
    }
}

/// `none`: what was there and why each entry does not fit.
fn no_match_reason(
    agent: &Agent,
    entries: &[Entry<'_>],
    policy: Policy,
    compressed: bool,
) -> String {
    const SHOWN: usize = 12;
    let misses: Vec<String> = entries
        .iter()
        .enumerate()
        .take(SHOWN)
        .map(|(i, e)| {
            format!(
                "entry {i} ({}) {}",
                e.target,
                near_miss(agent, e, policy, compressed)
            )
        })
        .collect();
    let more = entries.len().saturating_sub(SHOWN);
    let more = if more > 0 {
        format!("; and {more} more")
    } else {
        String::new()
    };
    let n = entries.len();
    format!(
        "No code object for {} among {n} {}: {}{more}.",
        agent.isa(),
        if n == 1 { "entry" } else { "entries" },
        misses.join("; ")
    )
}

fn near_miss(agent: &Agent, e: &Entry<'_>, policy: Policy, compressed: bool) -> String {
    let p = e.target.processor.as_str();
    let device = agent.processor.as_str();
    if p == device {
        return match check_pins(e.target, agent) {
            Err(m) => m.to_string(),
            Ok(_) => "fits but was not chosen".to_owned(),
        };
    }
    if p == SPIRV {
        return "is SPIR-V, which the legacy runtime does not look for".to_owned();
    }
    if mach::by_name(p).is_some_and(|m| m.generic) {
        return generic_miss(agent, e, policy, compressed);
    }
    let base = format!("is built for {p}, not {device}");
    match (policy, debian_family(p, device)) {
        (Policy::Debian, true) if compressed => format!(
            "{base}; Debian's family rule would take it, but a compressed bundle goes through \
             clang-offload-bundler, which requires the same processor"
        ),
        (Policy::Debian, true) => match check_pins(e.target, agent) {
            Err(m) => format!("is built for {p}, in {device}'s Debian family, but it {m}"),
            Ok(_) => format!("{base}; it is in the device's Debian family"),
        },
        (_, true) => format!("{base} (policy debian's family rule would take it)"),
        (Policy::Debian, false) if debian_family(device, p) => {
            format!("{base}; Debian's family rule works the other way only ({device} code on {p})")
        }
        _ => base,
    }
}

fn generic_miss(agent: &Agent, e: &Entry<'_>, policy: Policy, compressed: bool) -> String {
    let p = e.target.processor.as_str();
    let device = agent.processor.as_str();
    match runtime_generic(device) {
        Some(g) if g == p => {
            if policy == Policy::HipLegacy {
                return "is the device's generic target, but HIP runtimes before ROCm 6.4 do not \
                        look for generic code objects"
                    .to_owned();
            }
            if let (false, Some(f)) = (compressed, comgr_refuses_generic_query(agent, g)) {
                return format!(
                    "is the device's generic target, but the runtime asks comgr for {g}:{}{} \
                     (it re-appends the device's features) and comgr refuses {g} with {} because \
                     {g} has no such feature, so uncompressed bundles never yield it",
                    f.name(),
                    agent.get(f).sign(),
                    f.name(),
                );
            }
            match check_pins(e.target, agent) {
                Err(m) => format!("is the device's generic target but {m}"),
                Ok(_) => "is the device's generic target".to_owned(),
            }
        }
        rg => {
            if mach::generic_members(p).contains(&device) {
                format!(
                    "is a generic target LLVM lists {device} under, but the HIP runtime does not \
                     map {device} to it (clr TargetGenericMap)"
                )
            } else {
                match rg {
                    Some(g) => format!("does not cover {device} (its generic target is {g})"),
                    None => format!("does not cover {device}, which has no generic target"),
                }
            }
        }
    }
}

/// `HSA_OVERRIDE_GFX_VERSION`: the device reports the overridden ISA; compare with `real`, the
/// choice for the real ISA.
fn with_override(
    real_target: &TargetId,
    version: GfxVersion,
    entries: &[Entry<'_>],
    policy: Policy,
    real: Selection,
) -> Selection {
    let var = format!("HSA_OVERRIDE_GFX_VERSION={version}");
    let Some(processor) = version
        .processor()
        .filter(|p| ROCR_ISAS.contains(&p.as_str()))
    else {
        let what = version.processor().map_or_else(
            || "no processor (minor and stepping are one hex digit each in a gfx name)".to_owned(),
            |p| format!("{p}, which is not in ROCr's ISA registry"),
        );
        return Selection::none(
            Rule::UnknownIsa,
            format!(
                "{var} names {what}: ROCr finds no ISA {version} and drops the GPU (GpuAgent \
                 creation fails with HSA_STATUS_ERROR_INVALID_ISA, which DiscoverGpu ignores), \
                 so HIP sees no device. Without the override: {}.",
                real.summary()
            ),
        );
    };
    let (target, notes) = overridden_target(real_target, &processor);
    let mut o = select_device(&target, entries, policy);
    let prefix = format!(
        "{var} makes the {} report as {}{}.",
        real_target.processor,
        target,
        if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join("; "))
        }
    );
    let mut warnings = std::mem::take(&mut o.warnings);
    if let Some(w) = risky_override(&real_target.processor, &processor) {
        warnings.push(w);
    }
    let same_processor = processor == real_target.processor;
    let mut s = if o.verdict == Verdict::None {
        Selection {
            reason: format!(
                "{prefix} {} Without the override: {}.",
                o.reason,
                real.summary()
            ),
            ..o
        }
    } else if same_processor
        || (real.verdict != Verdict::None && (real.entry, real.rule) == (o.entry, o.rule))
    {
        Selection {
            reason: format!("{prefix} The override changes nothing here: {}", o.reason),
            ..o
        }
    } else {
        Selection {
            verdict: Verdict::Override,
            reason: format!(
                "{prefix} Loaded only because of the override: {} Without the override: {}.",
                o.reason,
                real.summary()
            ),
            ..o
        }
    };
    s.warnings = warnings;
    s
}

/// The device target ID under an override. ROCr builds the agent ISA from the overridden
/// version, with sramecc and xnack only if that ISA supports them, set from the real node
/// (sramecc from KFD's `SRAM_EDCSupport` or `HSA_*SRAMECC` flags, xnack from the process's xnack
/// mode), `amd_gpu_agent.cpp` `GpuAgent::GpuAgent`.
fn overridden_target(real: &TargetId, processor: &str) -> (TargetId, Vec<String>) {
    let mut t = TargetId::new(processor);
    let mut notes = Vec::new();
    let over = mach::by_name(processor);
    let real_info = mach::by_name(&real.processor);
    for feat in Feat::ALL {
        if !over.is_some_and(|i| feat.supported_by(i)) {
            continue;
        }
        let real_has = real_info.is_some_and(|i| feat.supported_by(i));
        let given = feat.of(real);
        let value = if real_has || given != Feature::Any {
            given
        } else {
            let source = match feat {
                Feat::Sramecc => "KFD reports no SRAM ECC for it",
                Feat::Xnack => "the process xnack mode is off unless HSA_XNACK=1",
            };
            notes.push(format!(
                "{} has no {}: {source}, so ROCr reports {}-",
                real.processor,
                feat.name(),
                feat.name()
            ));
            Feature::Off
        };
        feat.set(&mut t, value);
    }
    (t, notes)
}

/// A warning when the override crosses generic families or generations: code built for
/// another ISA generation is the "page faults and illegal instructions" folklore case.
fn risky_override(real: &str, over: &str) -> Option<String> {
    if real == over {
        return None;
    }
    match (llvm_generic(real), llvm_generic(over)) {
        (Some(a), Some(b)) if a == b => None,
        (a, b) => {
            let fam = |p: &str, g: Option<&str>| match g {
                Some(g) => format!("{p} ({g} family)"),
                None => format!("{p} (no generic family)"),
            };
            Some(format!(
                "the override makes a {} run code built for {}: another ISA family, so kernels \
                 may use instructions or encodings the hardware does not have (the \"page \
                 faults\" folklore case); only overrides within one generic family are \
                 reasonably safe",
                fam(real, a),
                fam(over, b)
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(major: u32, minor: u32, stepping: u32) -> GfxVersion {
        GfxVersion {
            major,
            minor,
            stepping,
        }
    }

    #[test]
    fn loadable_is_the_union_over_unknown_settings() {
        let ids: Vec<TargetId> = [
            "gfx90a:xnack-",
            "gfx90a:xnack+",
            "gfx1030",
            "gfx10-3-generic",
        ]
        .iter()
        .map(|s| TargetId::parse(s).unwrap())
        .collect();
        let entries: Vec<Entry<'_>> = ids
            .iter()
            .map(|t| {
                if t.processor.ends_with("generic") {
                    Entry::new(t).with_generic_version(1)
                } else {
                    Entry::new(t)
                }
            })
            .collect();
        let dev = |s: &str| Device::parse(s).unwrap();
        // Without xnack the device may run either mode: both entries are kept.
        assert_eq!(
            loadable(&dev("gfx90a"), &entries, Policy::Hip, None),
            [0, 1]
        );
        assert_eq!(
            loadable(&dev("gfx90a:xnack+"), &entries, Policy::Hip, None),
            [1]
        );
        assert_eq!(loadable(&dev("gfx1030"), &entries, Policy::Hip, None), [2]);
        // gfx1031 has no native entry: the generic one under hip, nothing under hip-legacy.
        assert_eq!(loadable(&dev("gfx1031"), &entries, Policy::Hip, None), [3]);
        assert!(loadable(&dev("gfx1031"), &entries, Policy::HipLegacy, None).is_empty());
        // The override adds the overridden ISA's choice to the device's own.
        let o = Some(v(10, 3, 0));
        assert_eq!(
            loadable(&dev("gfx1031"), &entries, Policy::HipLegacy, o),
            [2]
        );
        assert!(loadable(&dev("gfx1100"), &entries, Policy::Hip, None).is_empty());
    }

    #[test]
    fn parse_override_follows_libhsakmt() {
        assert_eq!(parse_override("10.3.0"), Ok(v(10, 3, 0)));
        assert_eq!(parse_override("9.0.10"), Ok(v(9, 0, 10)));
        assert_eq!(parse_override("63.255.255"), Ok(v(63, 255, 255)));
        assert_eq!(parse_override(" 11.+0. 0"), Ok(v(11, 0, 0)));
        assert_eq!(parse_override("010.03.00"), Ok(v(10, 3, 0)));
        for bad in [
            "", "10.3", "10.3.0.1", "10.3.0 ", "10.3.0\n", "gfx1030", "10.3.x", "10..3",
        ] {
            assert!(
                matches!(parse_override(bad), Err(OverrideError::Malformed(_))),
                "{bad:?}"
            );
        }
        assert!(matches!(
            parse_override("-1.0.0"),
            Err(OverrideError::Malformed(_))
        ));
        assert!(matches!(
            parse_override("64.0.0"),
            Err(OverrideError::OutOfRange {
                field: "major",
                max: 63,
                ..
            })
        ));
        assert!(matches!(
            parse_override("9.256.0"),
            Err(OverrideError::OutOfRange { field: "minor", .. })
        ));
        assert!(matches!(
            parse_override("9.0.99999999999999999999999"),
            Err(OverrideError::OutOfRange {
                field: "stepping",
                ..
            })
        ));
    }

    #[test]
    fn policy_names_round_trip() {
        for p in Policy::ALL {
            assert_eq!(p.to_string().parse::<Policy>(), Ok(p));
        }
        assert_eq!("hip-legacy".parse::<Policy>(), Ok(Policy::HipLegacy));
        assert_eq!(Policy::default(), Policy::Hip);
        assert!("Hip".parse::<Policy>().is_err());
        assert!("ubuntu".parse::<Policy>().is_err());
    }

    #[test]
    fn verdicts_order_weakest_first_and_serialise_lowercase() {
        assert!(Verdict::None < Verdict::Override);
        assert!(Verdict::Override < Verdict::Policy);
        assert!(Verdict::Policy < Verdict::Generic);
        assert!(Verdict::Generic < Verdict::Native);
        let names: Vec<String> = [
            Verdict::None,
            Verdict::Override,
            Verdict::Policy,
            Verdict::Generic,
            Verdict::Native,
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        assert_eq!(names, ["none", "override", "policy", "generic", "native"]);
    }

    #[test]
    fn debian_family_is_directional() {
        assert!(debian_family("gfx1030", "gfx1031"));
        assert!(debian_family("gfx1031", "gfx1030"));
        assert!(debian_family("gfx900", "gfx906"));
        assert!(!debian_family("gfx906", "gfx900"));
        assert!(debian_family("gfx1010", "gfx1012"));
        assert!(!debian_family("gfx1012", "gfx1010"));
        assert!(!debian_family("gfx900", "gfx904"));
        assert!(!debian_family("gfx90a", "gfx906"));
        assert!(!debian_family("gfx1100", "gfx1101"));
    }

    #[test]
    fn weakest_keeps_the_first_of_equals_and_skips_nothing() {
        let mk = |verdict| Selection {
            verdict,
            entry: None,
            target: None,
            rule: Rule::NoMatch,
            reason: String::new(),
            warnings: Vec::new(),
        };
        let all = [
            mk(Verdict::Native),
            mk(Verdict::Generic),
            mk(Verdict::Generic),
        ];
        assert_eq!(weakest(&all).map(|(i, _)| i), Some(1));
        assert!(weakest(&[]).is_none());
    }

    #[test]
    fn host_only_bundle_has_no_selection() {
        let device = Device::parse("gfx90a:sramecc+:xnack-").unwrap();
        assert!(select(&device, &[], Policy::Hip, None).is_none());
    }

    #[test]
    fn unknown_features_report_the_weakest_case() {
        let device = Device::parse("gfx90a").unwrap();
        let t = TargetId::parse("gfx90a:xnack+").unwrap();
        let s = select(&device, &[Entry::new(&t)], Policy::Hip, None).unwrap();
        assert_eq!(s.verdict, Verdict::None);
        assert!(s.reason.contains("xnack"), "{}", s.reason);
        assert!(!s.warnings.is_empty());
        let any = TargetId::parse("gfx90a").unwrap();
        let s = select(&device, &[Entry::new(&any)], Policy::Hip, None).unwrap();
        assert_eq!(s.verdict, Verdict::Native);
        assert!(s.warnings.is_empty());
    }
}
