//! The GPU catalogue: every AMDGPU processor LLVM knows from gfx600 up, plus the generic
//! targets, with aliases, ISA generation, marketing names, and the sources behind each fact.
//!
//! ```
//! use rocpack_amdgpu::catalogue;
//!
//! assert_eq!(catalogue::find("tahiti").unwrap().name, "gfx600");
//! assert_eq!(catalogue::find("gfx90a:xnack+").unwrap().mach, 0x3f);
//! let rdna2 = catalogue::search("rdna2");
//! assert!(rdna2.iter().any(|gpu| gpu.name == "gfx1030"));
//! ```
//!
//! The data is `data/gpus.toml`, embedded at build time and parsed once on first use. Its
//! header explains the fields and the sources legend. The tests below hold it to
//! [`crate::mach::MACH_TABLE`] and [`crate::mach::GENERIC_MEMBERS`].

use std::collections::HashSet;
use std::sync::OnceLock;

use serde::Serialize;

use crate::gpus_schema::RawCatalogue;
pub use crate::gpus_schema::{Kind, Matrix};

use crate::TargetId;

/// The embedded catalogue text.
const DATA: &str = include_str!("../data/gpus.toml");

/// One product sold with a processor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Product {
    /// The product name as the source spells it, e.g. "Radeon RX 7900 XTX".
    pub name: String,
    /// Key of the source that names it; its citation is in the entry's [`Gpu::sources`].
    pub source: String,
}

/// A source behind catalogue facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    /// Short key used in the data file, e.g. "USAGE".
    pub key: String,
    /// Repository, path and commit, or a URL, with what was read there.
    pub citation: String,
}

/// One processor or generic target of the catalogue.
///
/// Field names are the JSON names (`rocpack gpus --json`); every field is always present, with
/// `null` or `[]` where the catalogue has nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Gpu {
    /// Processor name as LLVM spells it, e.g. "gfx90a" or "gfx10-3-generic".
    pub name: String,
    /// LLVM's alternative processor names, e.g. "tahiti" for gfx600.
    pub aliases: Vec<String>,
    /// EF_AMDGPU_MACH value (`e_flags & 0xff`) of its code objects.
    pub mach: u8,
    /// ISA generation, e.g. "GFX9", "GFX9.4", "GFX10.3", "GFX11.5".
    pub generation: String,
    /// Marketing architecture, e.g. "GCN5", "CDNA3", "RDNA3.5"; `None` where no source says.
    pub architecture: Option<String>,
    /// dGPU or APU; `None` for generic targets and where no source says.
    pub kind: Option<Kind>,
    /// Native wavefront size: 64 on gfx6 to gfx9, 32 on gfx10 and later.
    pub wavefront: u32,
    /// Matrix instructions; `None` where no source says.
    pub matrix: Option<Matrix>,
    /// The processor supports the xnack target feature.
    pub xnack: bool,
    /// The processor supports the sramecc target feature.
    pub sramecc: bool,
    /// The generic target that covers this processor.
    pub generic: Option<String>,
    /// The lowest generic code object version that runs on this processor.
    pub generic_version: Option<u32>,
    /// For a generic target: the processors it covers (empty otherwise).
    pub members: Vec<String>,
    /// For a generic target: the first ROCm release whose runtime loads it on a member GPU.
    pub runtime_since: Option<String>,
    /// Why `runtime_since` is what it is, and how sure that is.
    pub runtime_since_note: Option<String>,
    /// Products sold with this processor.
    pub marketing: Vec<Product>,
    /// PCI device IDs ("1002:XXXX") where a source ties them to this processor confidently.
    pub pci_ids: Vec<String>,
    /// The sources behind this entry, its products' sources included.
    pub sources: Vec<Source>,
    /// Anything else a reader should know.
    pub note: Option<String>,
}

impl Gpu {
    /// This is a generic target (gfx9-generic, ...).
    pub fn is_generic(&self) -> bool {
        self.name.ends_with("-generic")
    }

    /// The filter is already trimmed and lowercase.
    fn matches(&self, filter: &str) -> bool {
        self.name.contains(filter)
            || self
                .aliases
                .iter()
                .any(|a| a.to_ascii_lowercase().contains(filter))
            || family_matches(&self.generation, filter)
            || self
                .architecture
                .as_deref()
                .is_some_and(|a| family_matches(a, filter))
            || self
                .marketing
                .iter()
                .any(|p| p.name.to_ascii_lowercase().contains(filter))
    }
}

/// `filter` names the family `value`, or a family containing it: "rdna2" names RDNA2,
/// "rdna3" names RDNA3 and RDNA3.5, "rdna" names every RDNA, "gfx11" names GFX11.5, but
/// "gfx1" does not name GFX10.3.
fn family_matches(value: &str, filter: &str) -> bool {
    let value = value.to_ascii_lowercase();
    match value.strip_prefix(filter) {
        Some("") => true,
        Some(rest) => {
            rest.starts_with('.')
                || (rest.starts_with(|c: char| c.is_ascii_digit())
                    && !filter.ends_with(|c: char| c.is_ascii_digit()))
        }
        None => false,
    }
}

/// Why a catalogue text cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    /// Not TOML, or not the catalogue's schema (unknown or missing field, wrong type).
    #[error("GPU catalogue: {0}")]
    Toml(Box<toml::de::Error>),
    /// An entry or product cites a key that `[sources]` does not define.
    #[error("GPU catalogue entry {gpu:?} cites unknown source {key:?}")]
    UnknownSource { gpu: String, key: String },
    /// An entry cites no source at all.
    #[error("GPU catalogue entry {gpu:?} cites no source")]
    NoSource { gpu: String },
    /// Two entries share a name.
    #[error("GPU catalogue has two entries named {name:?}")]
    Duplicate { name: String },
}

impl From<toml::de::Error> for CatalogueError {
    fn from(e: toml::de::Error) -> Self {
        CatalogueError::Toml(Box::new(e))
    }
}

/// Parses a catalogue in the format of `data/gpus.toml`.
///
/// Errs when the text is not TOML of that schema, when an entry or product cites a source
/// key that `[sources]` lacks, when an entry cites no source, or when two entries share a
/// name. Consistency with the mach table is the tests' job, not this function's.
pub fn parse(text: &str) -> Result<Vec<Gpu>, CatalogueError> {
    let raw: RawCatalogue = toml::from_str(text)?;
    let mut names = HashSet::new();
    raw.gpu
        .into_iter()
        .map(|g| {
            if !names.insert(g.name.clone()) {
                return Err(CatalogueError::Duplicate { name: g.name });
            }
            if g.sources.is_empty() {
                return Err(CatalogueError::NoSource { gpu: g.name });
            }
            // The entry's own keys first, then any further keys its products cite.
            let mut keys: Vec<&str> = Vec::new();
            for key in g.sources.iter().chain(g.marketing.iter().map(|p| &p.src)) {
                if !keys.contains(&key.as_str()) {
                    keys.push(key);
                }
            }
            let sources = keys
                .into_iter()
                .map(|key| match raw.sources.get(key) {
                    Some(citation) => Ok(Source {
                        key: key.to_owned(),
                        citation: citation.clone(),
                    }),
                    None => Err(CatalogueError::UnknownSource {
                        gpu: g.name.clone(),
                        key: key.to_owned(),
                    }),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Gpu {
                name: g.name,
                aliases: g.aliases,
                mach: g.mach,
                generation: g.generation,
                architecture: g.architecture,
                kind: g.kind,
                wavefront: g.wavefront,
                matrix: g.matrix,
                xnack: g.xnack,
                sramecc: g.sramecc,
                generic: g.generic,
                generic_version: g.generic_version,
                members: g.members,
                runtime_since: g.runtime_since,
                runtime_since_note: g.runtime_since_note,
                marketing: g
                    .marketing
                    .into_iter()
                    .map(|p| Product {
                        name: p.name,
                        source: p.src,
                    })
                    .collect(),
                pci_ids: g.pci_ids,
                sources,
                note: g.note,
            })
        })
        .collect()
}

/// Every catalogue entry, in data-file order (by generation, generic targets last).
///
/// The embedded file is parsed on the first call. The tests prove it parses; should it ever
/// not, this returns an empty slice rather than panicking, and [`find`] finds nothing.
pub fn all() -> &'static [Gpu] {
    static CATALOGUE: OnceLock<Vec<Gpu>> = OnceLock::new();
    CATALOGUE.get_or_init(|| parse(DATA).unwrap_or_default())
}

/// The entry named `name_or_alias`: a processor name ("gfx600"), an LLVM alias ("tahiti"),
/// or a target ID whose features are ignored ("gfx90a:xnack+"). Case-insensitive.
pub fn find(name_or_alias: &str) -> Option<&'static Gpu> {
    let wanted = name_or_alias.trim().split(':').next().unwrap_or_default();
    all().iter().find(|g| {
        g.name.eq_ignore_ascii_case(wanted)
            || g.aliases.iter().any(|a| a.eq_ignore_ascii_case(wanted))
    })
}

/// The entries matching `filter`, case-insensitive, in catalogue order.
///
/// An entry matches when the filter is part of its name or of an alias ("gfx103",
/// "polaris"), names its generation or architecture or a family containing it ("gfx11",
/// "rdna2", "rdna3" for RDNA3 and RDNA3.5, "cdna"), or is part of a marketing name ("7900",
/// "MI300"). An empty filter matches everything.
pub fn search(filter: &str) -> Vec<&'static Gpu> {
    let filter = filter.trim().to_ascii_lowercase();
    all().iter().filter(|g| g.matches(&filter)).collect()
}

/// A GPU a user named: its target ID, and the product when a product name was given.
///
/// A processor is not a product: `gfx1100` (or `gfx90a:xnack+`, or the alias `navi31`)
/// resolves without a product name; only a product name (`"RX 7900 XTX"`) gives one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The target ID, processor canonical.
    pub target: TargetId,
    /// The product, when one was named.
    pub name: Option<String>,
}

/// Resolves what a user typed to name a GPU (`--gpu`, `--keep`). A target ID's processor may
/// be an alias (navi21 is gfx1030); anything that is not a target ID is looked up among
/// product names (`"RX 7900 XTX"`), and must name exactly one processor.
///
/// # Errors
/// A generic target, an unknown name, or a name that matches several processors; the message
/// says which and what to type instead.
pub fn resolve(given: &str) -> Result<Resolved, String> {
    let given = given.trim();
    if let Ok(mut target) = TargetId::parse(given) {
        if let Some(entry) = find(&target.processor) {
            if entry.is_generic() {
                return Err(format!(
                    "{given:?} is a generic target, not a GPU; name one of its processors: {}",
                    entry.members.join(", ")
                ));
            }
            target.processor = entry.name.clone();
            target.validate().map_err(|e| e.to_string())?;
            return Ok(Resolved { target, name: None });
        }
        if crate::mach::by_name(&target.processor).is_some() {
            target.validate().map_err(|e| e.to_string())?;
            return Ok(Resolved { target, name: None });
        }
    }
    let search =
        |q: &str| -> Vec<_> { search(q).into_iter().filter(|g| !g.is_generic()).collect() };
    let mut found = search(given);
    if found.is_empty() {
        // "AMD Radeon RX 6700 XT" as a user may write it; the catalogue says "Radeon RX 6700 XT".
        found = search(&bare_product(given));
    }
    // "RX 6800" is also part of "RX 6800 XT" and "RX 6800M": a product named exactly so wins.
    let exact: Vec<_> = found
        .iter()
        .copied()
        .filter(|g| {
            g.marketing
                .iter()
                .any(|p| bare_product(&p.name) == bare_product(given))
        })
        .collect();
    if !exact.is_empty() {
        found = exact;
    }
    match found.as_slice() {
        [one] => {
            // Name the product the user meant; a query that matched no product name (an
            // architecture such as "cdna2" naming one processor) names the processor.
            let wanted = bare_product(given);
            let name = one
                .marketing
                .iter()
                .find(|p| bare_product(&p.name).contains(&wanted))
                .map(|p| p.name.clone());
            Ok(Resolved {
                target: TargetId::new(one.name.clone()),
                name,
            })
        }
        [] => Err(format!(
            "unknown GPU {given:?}: not a target ID (such as gfx90a or gfx90a:sramecc+:xnack-), \
             and no processor or product in `rocpack gpus` matches it"
        )),
        many => Err(format!(
            "{given:?} matches several processors ({}); name one",
            many.iter()
                .map(|g| g.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// A product name without the maker's prefixes, lowercase: "AMD Radeon RX 6800" → "rx 6800".
fn bare_product(name: &str) -> String {
    let lower = name.trim().to_lowercase();
    let lower = lower.strip_prefix("amd ").unwrap_or(&lower);
    lower.strip_prefix("radeon ").unwrap_or(lower).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mach::{GENERIC_MEMBERS, MACH_TABLE};

    fn names(gpus: &[&Gpu]) -> Vec<String> {
        gpus.iter().map(|g| g.name.clone()).collect()
    }

    #[test]
    fn embedded_file_parses() {
        let parsed = parse(DATA).unwrap();
        assert!(parsed.len() > 60, "only {} entries", parsed.len());
        assert_eq!(all(), parsed.as_slice());
    }

    #[test]
    fn every_mach_table_processor_is_in_the_catalogue_with_the_same_facts() {
        for m in MACH_TABLE.iter().filter(|m| !m.r600) {
            let gpu = all()
                .iter()
                .find(|g| g.name == m.name)
                .unwrap_or_else(|| panic!("{} missing from the catalogue", m.name));
            assert_eq!(gpu.mach, m.mach, "{}: mach", m.name);
            assert_eq!(gpu.xnack, m.xnack, "{}: xnack", m.name);
            assert_eq!(gpu.sramecc, m.sramecc, "{}: sramecc", m.name);
            assert_eq!(gpu.is_generic(), m.generic, "{}: generic", m.name);
        }
    }

    #[test]
    fn every_catalogue_entry_is_in_the_mach_table() {
        for gpu in all() {
            let m = MACH_TABLE
                .iter()
                .find(|m| m.name == gpu.name)
                .unwrap_or_else(|| panic!("{} missing from MACH_TABLE", gpu.name));
            assert!(!m.r600, "{} is r600", gpu.name);
            assert_eq!(m.mach, gpu.mach, "{}: mach", gpu.name);
        }
    }

    #[test]
    fn generic_membership_matches_generic_members_both_ways() {
        for (generic, members) in GENERIC_MEMBERS {
            let gpu = find(generic).unwrap();
            let mut want: Vec<&str> = members.to_vec();
            let mut got: Vec<&str> = gpu.members.iter().map(String::as_str).collect();
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "{generic}: members");
            for member in *members {
                assert_eq!(
                    find(member).unwrap().generic.as_deref(),
                    Some(*generic),
                    "{member}: generic"
                );
            }
        }
        for gpu in all() {
            if let Some(generic) = &gpu.generic {
                let listed = GENERIC_MEMBERS
                    .iter()
                    .any(|(g, m)| g == generic && m.contains(&gpu.name.as_str()));
                assert!(listed, "{} -> {generic} not in GENERIC_MEMBERS", gpu.name);
            }
            if gpu.is_generic() {
                assert!(
                    GENERIC_MEMBERS.iter().any(|(g, _)| *g == gpu.name),
                    "{} not in GENERIC_MEMBERS",
                    gpu.name
                );
            }
        }
    }

    #[test]
    fn generic_members_point_back_and_carry_a_version() {
        for gpu in all() {
            if gpu.is_generic() {
                assert!(!gpu.members.is_empty(), "{} has no members", gpu.name);
                assert_eq!(gpu.generic, None, "{}", gpu.name);
                assert_eq!(gpu.kind, None, "{}", gpu.name);
                assert!(
                    gpu.runtime_since.is_some() || gpu.runtime_since_note.is_some(),
                    "{}: neither runtime_since nor a note",
                    gpu.name
                );
                for member in &gpu.members {
                    let m = find(member).unwrap_or_else(|| panic!("{member} unknown"));
                    assert_eq!(m.generic.as_ref(), Some(&gpu.name), "{member}");
                }
            } else {
                assert!(gpu.members.is_empty(), "{} lists members", gpu.name);
                assert_eq!(gpu.runtime_since, None, "{}", gpu.name);
            }
            // Every LLVM GenericVersion is still 1, so every member needs version 1.
            let want = gpu.generic.as_ref().map(|_| 1);
            assert_eq!(gpu.generic_version, want, "{}: generic_version", gpu.name);
        }
    }

    #[test]
    fn names_and_aliases_are_unique_and_never_collide() {
        let mut seen = HashSet::new();
        for gpu in all() {
            assert!(seen.insert(gpu.name.to_ascii_lowercase()), "{}", gpu.name);
        }
        for gpu in all() {
            for alias in &gpu.aliases {
                assert!(
                    seen.insert(alias.to_ascii_lowercase()),
                    "alias {alias} of {} repeats a name or alias",
                    gpu.name
                );
            }
        }
    }

    #[test]
    fn every_entry_has_a_source_and_products_cite_a_listed_one() {
        for gpu in all() {
            assert!(!gpu.sources.is_empty(), "{}", gpu.name);
            for product in &gpu.marketing {
                assert!(
                    gpu.sources.iter().any(|s| s.key == product.source),
                    "{}: {} cites {}",
                    gpu.name,
                    product.name,
                    product.source
                );
            }
        }
    }

    #[test]
    fn wavefront_is_64_before_gfx10_and_32_from_it() {
        for gpu in all() {
            let major: u32 = gpu
                .generation
                .trim_start_matches("GFX")
                .split('.')
                .next()
                .and_then(|m| m.parse().ok())
                .unwrap_or_else(|| panic!("{}: generation {}", gpu.name, gpu.generation));
            let want = if major < 10 { 64 } else { 32 };
            assert_eq!(gpu.wavefront, want, "{}", gpu.name);
        }
    }

    #[test]
    fn search_finds_families_products_and_name_prefixes() {
        let rdna2 = names(&search("rdna2"));
        for n in 1030..=1036 {
            assert!(
                rdna2.contains(&format!("gfx{n}")),
                "gfx{n} not in {rdna2:?}"
            );
        }
        assert!(!rdna2.contains(&"gfx1100".to_owned()));
        assert!(names(&search("MI300")).contains(&"gfx942".to_owned()));
        assert!(names(&search("7900")).contains(&"gfx1100".to_owned()));
        let gfx103 = names(&search("gfx103"));
        assert!(gfx103.contains(&"gfx1030".to_owned()) && gfx103.contains(&"gfx1036".to_owned()));
        assert!(names(&search("rdna3")).contains(&"gfx1151".to_owned()));
        assert!(!names(&search("gfx1")).contains(&"gfx900".to_owned()));
        assert_eq!(search("").len(), all().len());
        assert!(search("no such gpu").is_empty());
    }

    #[test]
    fn find_takes_names_aliases_and_target_ids() {
        assert_eq!(find("tahiti").unwrap().name, "gfx600");
        assert_eq!(find("Polaris10").unwrap().name, "gfx803");
        assert_eq!(find("GFX1030").unwrap().name, "gfx1030");
        assert_eq!(find("gfx90a:sramecc-:xnack+").unwrap().name, "gfx90a");
        assert_eq!(find("gfx10-3-generic").unwrap().members.len(), 7);
        assert!(find("r600").is_none());
        assert!(find("").is_none());
    }

    #[test]
    fn serialized_fields_use_the_documented_spellings() {
        // serde_json is not a dependency of this crate; toml's value serializer sees the same
        // field names and enum spellings (it leaves `None` fields out, JSON prints null).
        let value = toml::Value::try_from(find("gfx942").unwrap()).unwrap();
        let table = value.as_table().unwrap();
        assert_eq!(table["kind"].as_str(), Some("dGPU"));
        assert_eq!(table["matrix"].as_str(), Some("mfma"));
        assert_eq!(table["generic"].as_str(), Some("gfx9-4-generic"));
        assert_eq!(table["generic_version"].as_integer(), Some(1));
        assert_eq!(table["mach"].as_integer(), Some(0x4c));
        assert_eq!(table["pci_ids"].as_array().map(Vec::len), Some(0));
        let first_source = &table["sources"].as_array().unwrap()[0];
        assert!(first_source["citation"].as_str().unwrap().contains('@'));
        assert_eq!(
            table["marketing"].as_array().unwrap()[0]["source"].as_str(),
            Some("USAGE")
        );
    }

    #[test]
    fn unknown_source_key_is_an_error() {
        let text = r#"
            [sources]
            A = "a"
            [[gpu]]
            name = "gfx600"
            mach = 0x20
            generation = "GFX6"
            wavefront = 64
            xnack = false
            sramecc = false
            marketing = [{ name = "x", src = "B" }]
            sources = ["A"]
        "#;
        match parse(text) {
            Err(CatalogueError::UnknownSource { gpu, key }) => {
                assert_eq!((gpu.as_str(), key.as_str()), ("gfx600", "B"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn misspelt_field_and_missing_source_are_errors() {
        let base = "[sources]\nA = \"a\"\n[[gpu]]\nname = \"gfx600\"\nmach = 0x20\n\
                    generation = \"GFX6\"\nwavefront = 64\nxnack = false\nsramecc = false\n";
        assert!(matches!(
            parse(&format!("{base}sources = []\n")),
            Err(CatalogueError::NoSource { .. })
        ));
        assert!(matches!(
            parse(&format!("{base}sources = [\"A\"]\nxnak = true\n")),
            Err(CatalogueError::Toml(_))
        ));
        assert!(matches!(
            parse(&format!(
                "{base}sources = [\"A\"]\n[[gpu]]\nname = \"gfx600\"\n"
            )),
            Err(CatalogueError::Toml(_) | CatalogueError::Duplicate { .. })
        ));
    }
}
