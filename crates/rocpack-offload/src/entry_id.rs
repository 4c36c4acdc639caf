//! Bundle entry IDs: `<offload-kind>-<triple>[-<target-id>]`.

use rocpack_amdgpu::TargetId;

/// A parsed bundle entry ID such as `hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+`.
///
/// The ID is kept once, as stored; its kind, triple and target ID are ranges of it. A fat
/// binary has one ID per code object and the walk meets each of them, so parsing one costs one
/// allocation rather than one per part.
#[derive(Clone, PartialEq, Eq)]
pub struct EntryId {
    raw: String,
    spans: Spans,
}

/// Where the kind, triple and target ID lie in an ID (trailing NULs already trimmed).
#[derive(Clone, PartialEq, Eq)]
struct Spans {
    kind: std::ops::Range<usize>,
    triple: std::ops::Range<usize>,
    target: std::ops::Range<usize>,
}

/// Splits an ID the way clang does (`split('-', 5)`: kind, four triple fields, target ID), and
/// also accepts the 3-field triple spelling `hip-amdgcn-amd-amdhsa-gfx906` that older tools
/// wrote. The triple is the fields between kind and target ID, joined by `-` as they stand in
/// the ID, without trailing empty fields (`amdgcn-amd-amdhsa-` is `amdgcn-amd-amdhsa`): so it
/// is always one range of the ID.
fn spans(raw: &str) -> Spans {
    // Field ranges, at most six (`splitn(6, '-')`).
    let mut fields = [0..0, 0..0, 0..0, 0..0, 0..0, 0..0];
    let mut n = 0;
    let mut start = 0;
    // '-' is ASCII, so a byte equal to it is the character, never inside another.
    for (i, c) in raw.bytes().enumerate() {
        if c == b'-' && n + 1 < fields.len() {
            if let Some(f) = fields.get_mut(n) {
                *f = start..i;
            }
            n += 1;
            start = i + 1;
        }
    }
    if let Some(f) = fields.get_mut(n) {
        *f = start..raw.len();
    }
    n += 1;
    let field = |i: usize| fields.get(i).cloned().unwrap_or(0..0);
    let kind = field(0);
    let rest = n.saturating_sub(1);
    let (triple_fields, target) = match rest {
        5 => (4, field(5)),
        4 if looks_like_processor(raw.get(field(4)).unwrap_or_default()) => (3, field(4)),
        _ => (rest, raw.len()..raw.len()),
    };
    // Trailing empty fields are not part of the triple.
    let mut last = triple_fields;
    while last > 0 && field(last).is_empty() {
        last -= 1;
    }
    let triple = if last == 0 {
        raw.len()..raw.len()
    } else {
        field(1).start..field(last).end
    };
    Spans {
        kind,
        triple,
        target,
    }
}

impl EntryId {
    /// Parses an ID (see [`spans`]); trailing NULs, which some writers leave and comgr strips,
    /// are dropped.
    pub fn parse(raw: &str) -> EntryId {
        EntryId::from_string(raw.trim_end_matches('\0').to_owned())
    }

    /// [`EntryId::parse`], keeping `raw`'s own buffer.
    pub fn from_string(mut raw: String) -> EntryId {
        let len = raw.trim_end_matches('\0').len();
        raw.truncate(len);
        let spans = spans(&raw);
        EntryId { raw, spans }
    }

    /// The ID exactly as stored (invalid UTF-8 escaped as `\xNN`), without trailing NULs.
    pub fn raw(&self) -> &str {
        &self.raw
    }

    /// The ID as stored, given up by value.
    pub fn into_raw(self) -> String {
        self.raw
    }

    /// Offload kind: `host`, `hip`, `hipv4`, `hcc`, `openmp`, ...
    pub fn kind(&self) -> &str {
        self.raw.get(self.spans.kind.clone()).unwrap_or_default()
    }

    /// Target triple, e.g. `amdgcn-amd-amdhsa` or `x86_64-unknown-linux-gnu`.
    pub fn triple(&self) -> &str {
        self.raw.get(self.spans.triple.clone()).unwrap_or_default()
    }

    /// The target ID part as written (empty for host entries).
    pub fn target(&self) -> &str {
        self.raw.get(self.spans.target.clone()).unwrap_or_default()
    }

    /// Whether this entry holds device code (not the host placeholder).
    pub fn is_device(&self) -> bool {
        self.kind() != "host"
    }

    /// Whether the offload kind is one the HIP runtime loads (`hip`, `hipv4`, `hcc`).
    pub fn is_hip(&self) -> bool {
        matches!(self.kind(), "hip" | "hipv4" | "hcc")
    }

    /// Whether the entry's triple names an AMD GPU: architecture `amdgcn` (whatever vendor and
    /// OS fields follow), or AMD's SPIR-V (`spirv64-amd-…`, target `amdgcnspirv`), which the
    /// HIP runtime finalizes for the GPU at load time. Host entries, `nvptx64-nvidia-cuda`,
    /// Intel's `spir64`/`spir64_gen` (SYCL) and any other triple are not.
    pub fn is_amd_gpu(&self) -> bool {
        is_amd_gpu(self.kind(), self.triple())
    }

    /// [`EntryId::is_amd_gpu`] of the ID `raw`, without keeping a copy of it.
    pub fn is_amd_gpu_id(raw: &str) -> bool {
        let raw = raw.trim_end_matches('\0');
        let s = spans(raw);
        is_amd_gpu(
            raw.get(s.kind).unwrap_or_default(),
            raw.get(s.triple).unwrap_or_default(),
        )
    }

    /// The target ID, when the entry names a parseable one.
    pub fn target_id(&self) -> Option<TargetId> {
        if self.target().is_empty() {
            return None;
        }
        TargetId::parse(self.target()).ok()
    }
}

impl std::fmt::Debug for EntryId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntryId")
            .field("raw", &self.raw())
            .field("kind", &self.kind())
            .field("triple", &self.triple())
            .field("target", &self.target())
            .finish()
    }
}

fn is_amd_gpu(kind: &str, triple: &str) -> bool {
    if kind == "host" {
        return false;
    }
    let mut fields = triple.split('-');
    matches!(
        (fields.next(), fields.next()),
        (Some("amdgcn"), _) | (Some("spirv64"), Some("amd"))
    )
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
                (id.kind(), id.triple(), id.target()),
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
        assert_eq!(EntryId::parse("garbage").kind(), "garbage");
    }

    /// The ranges give what splitting and joining the fields gives (the former
    /// implementation, kept here as the reference), over every ID built from up to seven
    /// pieces of a small alphabet of fields and separators.
    #[test]
    fn ranges_agree_with_splitting_and_joining() {
        fn reference(raw: &str) -> (String, String, String) {
            let raw = raw.trim_end_matches('\0');
            let mut parts: Vec<&str> = raw.splitn(6, '-').collect();
            let kind = if parts.is_empty() {
                ""
            } else {
                parts.remove(0)
            };
            let join = |fields: &[&str]| {
                let mut fields = fields.to_vec();
                while fields.last().is_some_and(|f| f.is_empty()) {
                    fields.pop();
                }
                fields.join("-")
            };
            let (triple, target) = match parts.as_slice() {
                [a, v, o, e, t] => (join(&[a, v, o, e]), (*t).to_owned()),
                [a, v, o, t] if looks_like_processor(t) => (join(&[a, v, o]), (*t).to_owned()),
                fields => (join(fields), String::new()),
            };
            (kind.to_owned(), triple, target)
        }
        let pieces = ["-", "", "amdgcn", "gfx90a:xnack+", "sm_70", "\0", "é"];
        let mut ids = vec![String::new()];
        let mut frontier = vec![String::new()];
        for _ in 0..7 {
            let mut next = Vec::new();
            for id in &frontier {
                for p in pieces {
                    next.push(format!("{id}{p}"));
                }
            }
            ids.extend(next.iter().cloned());
            frontier = next;
        }
        assert!(ids.len() > 900_000);
        for raw in &ids {
            let id = EntryId::parse(raw);
            let (kind, triple, target) = reference(raw);
            assert_eq!(
                (id.kind(), id.triple(), id.target()),
                (kind.as_str(), triple.as_str(), target.as_str()),
                "{raw:?}"
            );
            assert_eq!(id.raw(), raw.trim_end_matches('\0'));
            assert_eq!(EntryId::from_string(raw.clone()), id);
            assert_eq!(EntryId::is_amd_gpu_id(raw), id.is_amd_gpu(), "{raw:?}");
        }
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
