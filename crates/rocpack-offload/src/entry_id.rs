//! Bundle entry IDs: `<offload-kind>-<triple>[-<target-id>]`.

use rocpack_amdgpu::TargetId;

/// A parsed bundle entry ID such as `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryId {
    /// The ID exactly as stored (invalid UTF-8 escaped as `\xNN`).
    pub raw: String,
    /// Offload kind: `host`, `hip`, `hipv4`, `hcc`, `openmp`, ...
    pub kind: String,
    /// Target triple, e.g. `amdgcn-amd-amdhsa` or `x86_64-unknown-linux-gnu`.
    pub triple: String,
    /// The target ID part as written (empty for host entries).
    pub target: String,
}

impl EntryId {
    /// Splits an ID the way clang does (`split('-', 5)`: kind, four triple fields, target ID),
    /// and also accepts the 3-field triple spelling `hip-amdgcn-amd-amdhsa-gfx906` that older
    /// tools wrote.
    pub fn parse(raw: &str) -> EntryId {
        // Trailing NULs appear in some writers' IDs; comgr strips them too.
        let raw = raw.trim_end_matches('\0');
        let mut parts: Vec<&str> = raw.splitn(6, '-').collect();
        let kind = if parts.is_empty() {
            ""
        } else {
            parts.remove(0)
        };
        let (triple, target) = match parts.as_slice() {
            [arch, vendor, os, env, target] => {
                (join_triple(&[arch, vendor, os, env]), (*target).to_owned())
            }
            // amdgcn-amd-amdhsa-gfx906: the fourth field is a processor, not an environment.
            [arch, vendor, os, tid] if looks_like_processor(tid) => {
                (join_triple(&[arch, vendor, os]), (*tid).to_owned())
            }
            fields => (join_triple(fields), String::new()),
        };
        EntryId {
            raw: raw.to_owned(),
            kind: kind.to_owned(),
            triple,
            target,
        }
    }

    /// Whether this entry holds device code (not the host placeholder).
    pub fn is_device(&self) -> bool {
        self.kind != "host"
    }

    /// Whether the offload kind is one the HIP runtime loads (`hip`, `hipv4`, `hcc`).
    pub fn is_hip(&self) -> bool {
        matches!(self.kind.as_str(), "hip" | "hipv4" | "hcc")
    }

    /// Whether the entry's triple names an AMD GPU: architecture `amdgcn` (whatever vendor and
    /// OS fields follow), or AMD's SPIR-V (`spirv64-amd-…`, target `amdgcnspirv`), which the
    /// HIP runtime finalizes for the GPU at load time. Host entries, `nvptx64-nvidia-cuda`,
    /// Intel's `spir64`/`spir64_gen` (SYCL) and any other triple are not.
    pub fn is_amd_gpu(&self) -> bool {
        if !self.is_device() {
            return false;
        }
        let mut fields = self.triple.split('-');
        matches!(
            (fields.next(), fields.next()),
            (Some("amdgcn"), _) | (Some("spirv64"), Some("amd"))
        )
    }

    /// The target ID, when the entry names a parseable one.
    pub fn target_id(&self) -> Option<TargetId> {
        if self.target.is_empty() {
            return None;
        }
        TargetId::parse(&self.target).ok()
    }
}

fn join_triple(fields: &[&str]) -> String {
    // amdgcn-amd-amdhsa- (empty environment) is printed without the trailing dash.
    let mut fields = fields.to_vec();
    while fields.last().is_some_and(|f| f.is_empty()) {
        fields.pop();
    }
    fields.join("-")
}

fn looks_like_processor(s: &str) -> bool {
    s.starts_with("gfx") || s.starts_with("sm_") || s == "amdgcnspirv"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_seen_in_the_wild() {
        let cases = [
            (
                "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
                "hipv4",
                "amdgcn-amd-amdhsa",
                "gfx90a:xnack+",
            ),
            (
                "hip-amdgcn-amd-amdhsa--gfx1030",
                "hip",
                "amdgcn-amd-amdhsa",
                "gfx1030",
            ),
            (
                "hipv4-amdgcn-amd-amdhsa-unknown-gfx942",
                "hipv4",
                "amdgcn-amd-amdhsa-unknown",
                "gfx942",
            ),
            (
                "hip-amdgcn-amd-amdhsa-gfx906",
                "hip",
                "amdgcn-amd-amdhsa",
                "gfx906",
            ),
            (
                "hcc-amdgcn-amd-amdhsa--gfx803",
                "hcc",
                "amdgcn-amd-amdhsa",
                "gfx803",
            ),
            (
                "host-x86_64-unknown-linux-gnu-",
                "host",
                "x86_64-unknown-linux-gnu",
                "",
            ),
            (
                "host-x86_64-unknown-linux--",
                "host",
                "x86_64-unknown-linux",
                "",
            ),
            (
                "host-x86_64-pc-linux-gnu-",
                "host",
                "x86_64-pc-linux-gnu",
                "",
            ),
            (
                "hipv4-spirv64-amd-amdhsa--amdgcnspirv",
                "hipv4",
                "spirv64-amd-amdhsa",
                "amdgcnspirv",
            ),
            (
                "openmp-amdgcn-amd-amdhsa--gfx90a",
                "openmp",
                "amdgcn-amd-amdhsa",
                "gfx90a",
            ),
        ];
        for (raw, kind, triple, target) in cases {
            let id = EntryId::parse(raw);
            assert_eq!(
                (id.kind.as_str(), id.triple.as_str(), id.target.as_str()),
                (kind, triple, target),
                "{raw}"
            );
        }
        assert!(!EntryId::parse("host-x86_64-unknown-linux-gnu-").is_device());
        assert_eq!(
            EntryId::parse("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+:sramecc-\0")
                .target_id()
                .unwrap()
                .to_string(),
            "gfx90a:sramecc-:xnack+"
        );
        assert_eq!(EntryId::parse("garbage").kind, "garbage");
    }

    #[test]
    fn only_amdgcn_and_amd_spirv_triples_are_amd_gpu_entries() {
        for amd in [
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+",
            "hip-amdgcn-amd-amdhsa-gfx906",
            "hcc-amdgcn--amdhsa-gfx803",
            "openmp-amdgcn-amd-amdhsa--gfx90a",
            "hipv4-spirv64-amd-amdhsa--amdgcnspirv",
            "offload-amdgcn-amd-amdhsa--gfx1030",
        ] {
            assert!(EntryId::parse(amd).is_amd_gpu(), "{amd}");
        }
        for other in [
            "host-x86_64-unknown-linux-gnu-",
            "host-amdgcn-amd-amdhsa-",
            "sycl-spir64_gen",
            "sycl-spir64",
            "sycl-spir64-unknown-unknown",
            "openmp-spir64-unknown-unknown--",
            "openmp-nvptx64-nvidia-cuda--sm_70",
            "cuda-nvptx64-nvidia-cuda--sm_80",
            "garbage",
            "",
        ] {
            assert!(!EntryId::parse(other).is_amd_gpu(), "{other}");
        }
    }
}
