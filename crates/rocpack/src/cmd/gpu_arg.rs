//! Turning what the user typed after `--gpu` into a GPU: a target ID, an alias, or a product.
//!
//! A processor is not a product: `gfx1100` (or `gfx90a:xnack+`, or the alias `navi31`) resolves
//! to a GPU without a product name, which reports label as a processor with all its products
//! (`Gpu::label`); only a product name (`"RX 7900 XTX"`) gives the GPU that product's name.

use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use rocpack_amdgpu::catalogue;
use rocpack_amdgpu::compat;
use rocpack_amdgpu::compat::Policy;
use rocpack_amdgpu::mach::GfxVersion;
use rocpack_check::{Gpu, Rules};

use crate::args::RuleArgs;

/// Resolves one `--gpu` value ([`catalogue::resolve`]): a target ID (its processor may be an
/// alias: navi21 is gfx1030), else a product name (`"RX 7900 XTX"`) naming exactly one
/// processor.
pub fn resolve(given: &str) -> Result<Gpu> {
    let r = catalogue::resolve(given).map_err(|e| anyhow!(e))?;
    Ok(Gpu {
        given: given.trim().to_owned(),
        target: r.target,
        name: r.name,
    })
}

/// The GPUs of this machine (or of the sysfs tree under `sysfs_root`), for `flag`'s
/// `--...-detected` form; an error naming `flag` when there is none.
pub fn detected(sysfs_root: Option<&Path>, flag: &str) -> Result<Vec<Gpu>> {
    let roots = match sysfs_root {
        Some(dir) => rocpack_devices::Roots::at(dir),
        None => rocpack_devices::Roots::system(),
    };
    let detection = rocpack_devices::detect(&roots)
        .with_context(|| format!("reading GPUs from {}", roots.sys.display()))?;
    if detection.devices.is_empty() {
        bail!(
            "no AMD GPU found in {} (no KFD GPU node); name the GPUs with {flag}, \
             e.g. {flag} gfx1030 or {flag} \"RX 7900 XTX\"",
            roots.sys.display()
        );
    }
    Ok(detection
        .devices
        .into_iter()
        .map(|d| Gpu {
            given: d.target.to_string(),
            target: d.target,
            name: d.marketing_name.map(|m| m.name),
        })
        .collect())
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
