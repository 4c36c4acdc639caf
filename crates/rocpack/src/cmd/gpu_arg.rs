//! Turning what the user typed after `--gpu` into a GPU: a target ID, an alias, or a product.
//!
//! A processor is not a product: `gfx1100` (or `gfx90a:xnack+`, or the alias `navi31`) resolves
//! to a GPU without a product name, which reports label as a processor with all its products
//! (`Gpu::label`); only a product name (`"RX 7900 XTX"`) gives the GPU that product's name.

use anyhow::{Result, bail};
use rocpack_amdgpu::catalogue;
use rocpack_amdgpu::compat::Policy;
use rocpack_amdgpu::mach::GfxVersion;
use rocpack_amdgpu::{TargetId, compat};
use rocpack_check::{Gpu, Rules};

use crate::args::RuleArgs;

/// Resolves one `--gpu` value. A target ID's processor may be an alias (navi21 is gfx1030);
/// anything that is not a target ID is looked up among product names (`"RX 7900 XTX"`), and
/// must name exactly one processor.
pub fn resolve(given: &str) -> Result<Gpu> {
    let given = given.trim();
    if let Ok(mut target) = TargetId::parse(given) {
        if let Some(entry) = catalogue::find(&target.processor) {
            if entry.is_generic() {
                bail!(
                    "{given:?} is a generic target, not a GPU; name one of its processors: {}",
                    entry.members.join(", ")
                );
            }
            target.processor = entry.name.clone();
            target.validate()?;
            return Ok(Gpu {
                given: given.to_owned(),
                target,
                name: None,
            });
        }
        if rocpack_amdgpu::mach::by_name(&target.processor).is_some() {
            target.validate()?;
            return Ok(Gpu {
                given: given.to_owned(),
                target,
                name: None,
            });
        }
    }
    let search = |q: &str| -> Vec<_> {
        catalogue::search(q)
            .into_iter()
            .filter(|g| !g.is_generic())
            .collect()
    };
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
            Ok(Gpu {
                given: given.to_owned(),
                target: TargetId::new(one.name.clone()),
                name,
            })
        }
        [] => bail!(
            "unknown GPU {given:?}: not a target ID (such as gfx90a or gfx90a:sramecc+:xnack-), \
             and no processor or product in `rocpack gpus` matches it"
        ),
        many => bail!(
            "{given:?} matches several processors ({}); name one",
            many.iter()
                .map(|g| g.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A product name without the maker's prefixes, lowercase: "AMD Radeon RX 6800" → "rx 6800".
fn bare_product(name: &str) -> String {
    let lower = name.trim().to_lowercase();
    let lower = lower.strip_prefix("amd ").unwrap_or(&lower);
    lower.strip_prefix("radeon ").unwrap_or(lower).to_owned()
}

/// The policy and override from the command line.
pub fn rules(args: &RuleArgs) -> Result<Rules> {
    let policy: Policy = args.policy;
    let override_version: Option<GfxVersion> = match args.hsa_override_gfx_version.as_deref() {
        None | Some("") => None,
        Some(v) => Some(compat::parse_override(v)?),
    };
    Ok(Rules {
        policy,
        override_version,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_exact_product_name_beats_longer_ones() {
        // "RX 6800" is part of "RX 6800 XT" (gfx1030) and "RX 6800M" (gfx1031).
        assert_eq!(resolve("RX 6800").unwrap().target.to_string(), "gfx1030");
        assert_eq!(resolve("RX 6800M").unwrap().target.to_string(), "gfx1031");
        assert_eq!(
            resolve("AMD Radeon RX 6700 XT").unwrap().target.to_string(),
            "gfx1031"
        );
        // Still ambiguous when no product is named exactly so.
        assert!(resolve("RX 68").is_err());
    }

    #[test]
    fn a_processor_is_not_labelled_as_a_product() {
        for given in ["gfx1100", "fiji", "gfx90a:xnack+", " gfx942 "] {
            let g = resolve(given).unwrap();
            assert_eq!(g.name, None, "{given}");
            assert!(
                g.label().contains("(processor; products: "),
                "{given}: {}",
                g.label()
            );
        }
        let g = resolve("AMD Radeon RX 7900 XTX").unwrap();
        assert_eq!(g.target.to_string(), "gfx1100");
        assert_eq!(g.name.as_deref(), Some("Radeon RX 7900 XTX"));
        assert_eq!(g.label(), "gfx1100 — Radeon RX 7900 XTX");
    }
}
