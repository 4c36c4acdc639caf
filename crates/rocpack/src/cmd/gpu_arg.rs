//! Turning what the user typed after `--gpu` into a GPU: a target ID, an alias, or a product.

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
                name: product_name(entry),
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
    let found: Vec<_> = catalogue::search(given)
        .into_iter()
        .filter(|g| !g.is_generic())
        .collect();
    match found.as_slice() {
        [one] => {
            // Name the product the user meant, not just the processor's first product.
            let wanted = given.to_lowercase();
            let name = one
                .marketing
                .iter()
                .find(|p| p.name.to_lowercase().contains(&wanted))
                .map(|p| p.name.clone())
                .or_else(|| product_name(one));
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

/// The first product name of a catalogue entry.
pub fn product_name(entry: &catalogue::Gpu) -> Option<String> {
    entry.marketing.first().map(|p| p.name.clone())
}

/// The policy and override from the command line.
pub fn rules(args: &RuleArgs) -> Result<Rules> {
    let policy: Policy = args.policy.parse()?;
    let override_version: Option<GfxVersion> = match args.hsa_override_gfx_version.as_deref() {
        None | Some("") => None,
        Some(v) => Some(compat::parse_override(v)?),
    };
    Ok(Rules {
        policy,
        override_version,
    })
}
