//! Which entries of a bundle a set of GPUs needs.

use rocpack_amdgpu::compat::{self, Device, Entry, Policy};
use rocpack_amdgpu::mach::GfxVersion;
use rocpack_amdgpu::{CodeObjectHeader, TargetId};
use rocpack_offload::EntryId;

/// The GPUs to keep code for and the rules that decide what they load.
#[derive(Debug, Clone)]
pub struct Keep {
    /// The kept GPUs.
    pub devices: Vec<Device>,
    /// The runtime's selection rules.
    pub policy: Policy,
    /// `HSA_OVERRIDE_GFX_VERSION` the GPUs will run with, if any: the overridden ISA's code
    /// is kept as well.
    pub override_version: Option<GfxVersion>,
}

/// What an entry is, for the decision.
#[derive(Debug, Clone)]
pub struct EntryFacts {
    /// The stored ID.
    pub id: EntryId,
    /// Target from the code object header, else from the ID.
    pub target: Option<TargetId>,
    /// Generic version from the header.
    pub generic_version: Option<u8>,
    /// The bytes are an AMDGPU code object (not bitcode or anything else).
    pub code_object: bool,
}

impl EntryFacts {
    /// Reads what the decision needs from an entry's ID and first bytes.
    pub fn new(id: EntryId, bytes: &[u8]) -> Self {
        let header = CodeObjectHeader::parse(bytes).ok();
        let target = header
            .as_ref()
            .map(CodeObjectHeader::target)
            .or_else(|| id.target_id());
        EntryFacts {
            generic_version: header
                .as_ref()
                .and_then(|h| h.generic_version)
                .filter(|&v| v > 0),
            code_object: header.is_some(),
            target,
            id,
        }
    }
}

/// Why an entry stays or goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// The host entry, which every bundle keeps.
    Host,
    /// A kept GPU loads it.
    Loaded,
    /// Bitcode or another non-code-object entry for a kept GPU's processor (what the device
    /// linker would pick).
    Linkable,
    /// Not a HIP entry for amdgcn (OpenMP, another triple): left alone.
    NotHip,
    /// Its target could not be read: kept rather than guessed at.
    UnknownTarget,
    /// No kept GPU loads it.
    Unused,
}

impl Reason {
    /// Whether the entry stays.
    pub fn keeps(self) -> bool {
        self != Reason::Unused
    }
}

impl Keep {
    /// Decides every entry of one bundle (file order). Code objects are kept when a kept GPU
    /// would load them under the policy ([`compat::loadable`], over every setting of features
    /// the GPU was given without); other device entries (bitcode of `-fgpu-rdc` objects) when
    /// they are for a kept GPU's processor with compatible features, as the device linker
    /// picks them.
    pub fn decide(&self, entries: &[EntryFacts], compressed: bool) -> Vec<Reason> {
        let mut reasons: Vec<Reason> = entries
            .iter()
            .map(|e| {
                if !e.id.is_device() {
                    Reason::Host
                } else if !e.id.is_hip() || !e.id.triple().starts_with("amdgcn") {
                    Reason::NotHip
                } else if e.target.is_none() {
                    Reason::UnknownTarget
                } else {
                    Reason::Unused
                }
            })
            .collect();
        // The runtime selects among code objects only; bitcode is matched by processor.
        let candidates: Vec<(usize, Entry<'_>)> = entries
            .iter()
            .enumerate()
            .filter(|(i, e)| reasons.get(*i) == Some(&Reason::Unused) && e.code_object)
            .filter_map(|(i, e)| {
                let t = e.target.as_ref()?;
                let mut entry = Entry::new(t);
                if let Some(v) = e.generic_version {
                    entry = entry.with_generic_version(v);
                }
                if compressed {
                    entry = entry.compressed();
                }
                Some((i, entry))
            })
            .collect();
        let list: Vec<Entry<'_>> = candidates.iter().map(|(_, e)| *e).collect();
        for device in &self.devices {
            for k in compat::loadable(device, &list, self.policy, self.override_version) {
                if let Some((i, _)) = candidates.get(k) {
                    if let Some(r) = reasons.get_mut(*i) {
                        *r = Reason::Loaded;
                    }
                }
            }
        }
        for (i, e) in entries.iter().enumerate() {
            if e.code_object || reasons.get(i) != Some(&Reason::Unused) {
                continue;
            }
            let Some(t) = &e.target else { continue };
            let entry = [Entry::new(t)];
            if self.devices.iter().any(|d| {
                !compat::loadable(d, &entry, Policy::HipLegacy, self.override_version).is_empty()
            }) {
                if let Some(r) = reasons.get_mut(i) {
                    *r = Reason::Linkable;
                }
            }
        }
        reasons
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn facts(id: &str) -> EntryFacts {
        EntryFacts::new(EntryId::parse(id), b"")
    }

    #[test]
    fn host_and_foreign_entries_stay_and_bitcode_matches_by_processor() {
        let keep = Keep {
            devices: vec![Device::parse("gfx1030").unwrap()],
            policy: Policy::Hip,
            override_version: None,
        };
        let entries = [
            facts("host-x86_64-unknown-linux-gnu-"),
            facts("hip-amdgcn-amd-amdhsa--gfx1030"),
            facts("hip-amdgcn-amd-amdhsa--gfx90a"),
            facts("openmp-amdgcn-amd-amdhsa--gfx90a"),
            facts("hipv4-amdgcn-amd-amdhsa--"),
        ];
        assert_eq!(
            keep.decide(&entries, false),
            [
                Reason::Host,
                Reason::Linkable,
                Reason::Unused,
                Reason::NotHip,
                Reason::UnknownTarget
            ]
        );
    }
}
