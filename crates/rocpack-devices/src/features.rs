//! What the kernel says (and does not say) about a device's sramecc and xnack modes.
//!
//! **sramecc** is in sysfs. KFD sets `HSA_CAP_SRAM_EDCSUPPORTED` (bit 26, 0x04000000) of a node's
//! `capability` when RAS is enabled for the GFX block (`kfd_topology_add_device` in
//! `drivers/gpu/drm/amd/amdkfd/kfd_topology.c`; the bit is defined in
//! `include/uapi/linux/kfd_sysfs.h`). Bit 19 (0x00080000) is the old, deprecated position and is
//! always 0 ("old buggy user mode depends on this being 0"). ROCr builds the agent's ISA from this
//! bit: `sramecc+` when it is set, `sramecc-` when clear, unless `HSA_ENABLE_SRAMECC` overrides
//! (`GpuAgent::GpuAgent` in `src/core/runtime/amd_gpu_agent.cpp`).
//!
//! **xnack** is not in sysfs. It is a property of each process: KFD picks a default when the
//! process opens `/dev/kfd` (`kfd_process_xnack_mode(p, false)` in `kfd_process.c`), and a process
//! may ask for another with the `AMDKFD_IOC_SET_XNACK_MODE` ioctl, which ROCr does when `HSA_XNACK`
//! is `0` or `1` (`KfdDriver::BindXnackMode`), then reads the result back with
//! `hsaKmtGetXNACKMode`. The default is the same for every GPU in the process:
//! * GPUs before GFX9 are ignored;
//! * any GPU with GC IP 10.1.1 or newer (every GFX10, GFX11, GFX12 processor) makes it **off**,
//!   because those cannot preempt shaders during page faults;
//! * any GFX9 GPU whose `noretry` is set makes it **off**; otherwise it is **on**.
//!
//! `noretry` comes from the `amdgpu.noretry` module parameter
//! (`/sys/module/amdgpu/parameters/noretry`, default -1). At -1 the kernel picks per GC IP
//! (`amdgpu_gmc_noretry_set` in `amdgpu_gmc.c`): noretry=1 for GC 9.0.1 (gfx900), 9.4.0
//! (gfx906), 9.4.1 (gfx908), 9.4.2 (gfx90a), 9.4.3/9.4.4 (gfx940-942), 9.5.0 (gfx950) and
//! 10.3.0+; 0 for the Raven family (gfx902, gfx909) and Vega12 (gfx904). GC 9.3.0 (gfx90c,
//! Renoir) was noretry=1 for some kernel releases and 0 again after a fix, so its default is not
//! knowable from sysfs. Under SR-IOV without XNACK support the kernel forces noretry=1, which
//! sysfs does not show either.
//!
//! `HSA_XNACK=1` only succeeds when every GPU allows it, where gfx90a, gfx940-942 and gfx950 allow
//! it regardless of `noretry` (per-process XNACK, `KFD_SUPPORT_XNACK_PER_PROCESS`); `HSA_XNACK=0`
//! always succeeds. rocpack reports the default a new process gets and says how it was derived.

use serde::Serialize;

use rocpack_amdgpu::mach;

/// `HSA_CAP_SRAM_EDCSUPPORTED`.
pub const HSA_CAP_SRAM_EDCSUPPORTED: u64 = 0x0400_0000;
/// `HSA_CAP_FLAGS_COHERENTHOSTACCESS`.
pub const HSA_CAP_FLAGS_COHERENTHOSTACCESS: u64 = 0x1000_0000;

/// A feature's mode on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FeatureValue {
    On,
    Off,
    /// The processor has the feature but sysfs does not tell which mode it is in.
    Unknown,
    /// The processor does not have the feature (no `:xnack±`/`:sramecc±` in its target ID).
    Unsupported,
}

/// Where a [`FeatureState`] came from. Stable kebab-case codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FeatureSource {
    /// rocpack's processor table (LLVM's FEATURE_XNACK / FEATURE_SRAMECC) says the processor
    /// lacks it, or the processor is unknown.
    Processor,
    /// The node's `capability` (sramecc).
    KfdCapability,
    /// The node has no `capability` line (sramecc unknown).
    MissingCapability,
    /// KFD's per-process default, derived from the GPUs present and `amdgpu.noretry` (xnack).
    KfdProcessDefault,
}

/// A feature's mode and how rocpack knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FeatureState {
    pub state: FeatureValue,
    pub source: FeatureSource,
    /// One sentence for people: the evidence and what could change it.
    pub detail: String,
}

impl FeatureState {
    /// The target-ID setting: `On`/`Off` when known, `Any` otherwise.
    pub fn as_target_feature(&self) -> rocpack_amdgpu::Feature {
        match self.state {
            FeatureValue::On => rocpack_amdgpu::Feature::On,
            FeatureValue::Off => rocpack_amdgpu::Feature::Off,
            FeatureValue::Unknown | FeatureValue::Unsupported => rocpack_amdgpu::Feature::Any,
        }
    }
}

fn unsupported(processor: &str, feature: &str) -> FeatureState {
    let known = mach::by_name(processor).is_some();
    FeatureState {
        state: FeatureValue::Unsupported,
        source: FeatureSource::Processor,
        detail: if known {
            format!("{processor} has no {feature} target feature")
        } else {
            format!(
                "{processor} is not in rocpack's processor table, so its {feature} support is unknown"
            )
        },
    }
}

/// The sramecc mode from a node's `capability` value.
pub(crate) fn sramecc(processor: &str, capability: Option<u64>, cap_at: &str) -> FeatureState {
    if !mach::by_name(processor).is_some_and(|m| m.sramecc) {
        return unsupported(processor, "sramecc");
    }
    match capability {
        None => FeatureState {
            state: FeatureValue::Unknown,
            source: FeatureSource::MissingCapability,
            detail: format!("{cap_at} has no capability line"),
        },
        Some(cap) => {
            let on = cap & HSA_CAP_SRAM_EDCSUPPORTED != 0;
            FeatureState {
                state: if on {
                    FeatureValue::On
                } else {
                    FeatureValue::Off
                },
                source: FeatureSource::KfdCapability,
                detail: format!(
                    "capability {cap:#010x} in {cap_at} has HSA_CAP_SRAM_EDCSUPPORTED (0x04000000) {}: \
                     ROCr reports sramecc{} unless HSA_ENABLE_SRAMECC says otherwise",
                    if on { "set" } else { "clear" },
                    if on { "+" } else { "-" },
                ),
            }
        }
    }
}

/// Three-valued answer for "does this GPU let a new process start with XNACK on".
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Allows {
    /// Not a GFX9+ GPU: KFD leaves it out of the decision.
    Ignored,
    Yes(String),
    No(String),
    Unknown(String),
}

/// The kernel's default `noretry` for a GFX9 processor when `amdgpu.noretry=-1`, with the GC IP
/// version it stands for. `None` for gfx90c, whose default changed between kernel releases.
fn gfx9_noretry_default(processor: &str) -> Option<(bool, &'static str)> {
    Some(match processor {
        "gfx900" => (true, "GC 9.0.1"),
        "gfx902" | "gfx909" => (false, "Raven, GC 9.1.0/9.2.2"),
        "gfx904" => (false, "GC 9.2.1"),
        "gfx906" => (true, "GC 9.4.0"),
        "gfx908" => (true, "GC 9.4.1"),
        "gfx90a" => (true, "GC 9.4.2"),
        "gfx940" | "gfx941" | "gfx942" => (true, "GC 9.4.3/9.4.4"),
        "gfx950" => (true, "GC 9.5.0"),
        _ => return None,
    })
}

/// Processors that support per-process XNACK (`KFD_SUPPORT_XNACK_PER_PROCESS`: GC 9.4.2, 9.4.3,
/// 9.4.4, 9.5.0).
pub(crate) fn per_process_xnack(processor: &str) -> bool {
    matches!(
        processor,
        "gfx90a" | "gfx940" | "gfx941" | "gfx942" | "gfx950"
    )
}

/// How one GPU weighs in on the default XNACK mode of a new process.
pub(crate) fn allows_xnack(processor: &str, major: u32, noretry: Option<i32>) -> Allows {
    if major < 9 {
        return Allows::Ignored;
    }
    if major >= 10 {
        return Allows::No(format!(
            "{processor} is GFX10 or newer, and KFD never starts a process with XNACK on when such a GPU is present"
        ));
    }
    match noretry {
        None => Allows::Unknown(
            "/sys/module/amdgpu/parameters/noretry could not be read, so the kernel's retry setting is unknown".into(),
        ),
        Some(n) if n >= 0 => {
            if n == 0 {
                Allows::Yes(format!("amdgpu.noretry={n} enables retry on {processor}"))
            } else {
                Allows::No(format!("amdgpu.noretry={n} disables retry on {processor}"))
            }
        }
        Some(n) => match gfx9_noretry_default(processor) {
            Some((true, gc)) => Allows::No(format!(
                "amdgpu.noretry={n} (automatic) and the kernel's default for {processor} ({gc}) is noretry=1"
            )),
            Some((false, gc)) => Allows::Yes(format!(
                "amdgpu.noretry={n} (automatic) and the kernel's default for {processor} ({gc}) is noretry=0"
            )),
            None => Allows::Unknown(format!(
                "amdgpu.noretry={n} (automatic) and the kernel's default for {processor} differs between kernel releases"
            )),
        },
    }
}

/// The xnack state of `processor`, given how every GPU in the system weighs in
/// (`(node, processor, Allows)`).
pub(crate) fn xnack(processor: &str, node: u32, all: &[(u32, String, Allows)]) -> FeatureState {
    if !mach::by_name(processor).is_some_and(|m| m.xnack) {
        return unsupported(processor, "xnack");
    }
    let mine = all.iter().find(|(n, _, _)| *n == node);
    let hint = if per_process_xnack(processor) {
        format!(
            "; {processor} supports per-process XNACK, so HSA_XNACK=1 can turn it on for a process when every other GPU allows it"
        )
    } else {
        String::new()
    };
    let state = |state, detail: String| FeatureState {
        state,
        source: FeatureSource::KfdProcessDefault,
        detail: format!(
            "the kernel does not expose the XNACK mode in sysfs; it is chosen per process. {detail}{hint}; HSA_XNACK=0 turns it off"
        ),
    };
    // This GPU's own reason first; otherwise another GPU can force the whole process off.
    let mine = mine.map(|(_, _, a)| a);
    if !matches!(mine, Some(Allows::No(_)))
        && let Some((n, p, Allows::No(why))) = all
            .iter()
            .find(|(n, _, a)| *n != node && matches!(a, Allows::No(_)))
    {
        return state(
            FeatureValue::Off,
            format!("A new process gets XNACK off because of node {n} ({p}): {why}"),
        );
    }
    match mine {
        Some(Allows::No(why)) => state(
            FeatureValue::Off,
            format!("A new process gets XNACK off: {why}"),
        ),
        Some(Allows::Unknown(why)) => state(FeatureValue::Unknown, format!("{why}.")),
        Some(Allows::Yes(why)) => {
            if let Some((n, p, Allows::Unknown(w))) = all
                .iter()
                .find(|(n, _, a)| *n != node && matches!(a, Allows::Unknown(_)))
            {
                return state(
                    FeatureValue::Unknown,
                    format!("{why}, but node {n} ({p}) is undecided: {w}."),
                );
            }
            state(
                FeatureValue::On,
                format!("A new process gets XNACK on: {why} and no other GPU disables it"),
            )
        }
        Some(Allows::Ignored) | None => state(
            FeatureValue::Unknown,
            format!("{processor} is older than GFX9, outside KFD's XNACK selection."),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sramecc_from_capability_bit() {
        // MI210 capability from a real topology (k8s-device-plugin testdata).
        let s = sramecc("gfx90a", Some(746037888), "p");
        assert_eq!(s.state, FeatureValue::On);
        let s = sramecc("gfx90a", Some(746037888 & !HSA_CAP_SRAM_EDCSUPPORTED), "p");
        assert_eq!(s.state, FeatureValue::Off);
        assert_eq!(sramecc("gfx90a", None, "p").state, FeatureValue::Unknown);
        assert_eq!(
            sramecc("gfx1100", Some(!0), "p").state,
            FeatureValue::Unsupported
        );
    }

    #[test]
    fn xnack_follows_kfd_process_default() {
        let mi210 = |nr| vec![(2, "gfx90a".to_string(), allows_xnack("gfx90a", 9, nr))];
        assert_eq!(
            xnack("gfx90a", 2, &mi210(Some(-1))).state,
            FeatureValue::Off
        );
        assert_eq!(xnack("gfx90a", 2, &mi210(Some(0))).state, FeatureValue::On);
        assert_eq!(xnack("gfx90a", 2, &mi210(Some(1))).state, FeatureValue::Off);
        assert_eq!(
            xnack("gfx90a", 2, &mi210(None)).state,
            FeatureValue::Unknown
        );
        // An RDNA GPU in the same box turns the whole process off.
        let mut mixed = mi210(Some(0));
        mixed.push((3, "gfx1030".into(), allows_xnack("gfx1030", 10, Some(0))));
        let s = xnack("gfx90a", 2, &mixed);
        assert_eq!(s.state, FeatureValue::Off);
        assert!(s.detail.contains("node 3 (gfx1030)"), "{}", s.detail);
        // Raven defaults to retry on; gfx90c depends on the kernel release.
        let raven = vec![(1, "gfx902".to_string(), allows_xnack("gfx902", 9, Some(-1)))];
        assert_eq!(xnack("gfx902", 1, &raven).state, FeatureValue::On);
        let renoir = vec![(1, "gfx90c".to_string(), allows_xnack("gfx90c", 9, Some(-1)))];
        assert_eq!(xnack("gfx90c", 1, &renoir).state, FeatureValue::Unknown);
        // gfx1010 has the xnack feature but KFD never enables it there.
        let navi10 = vec![(
            1,
            "gfx1010".to_string(),
            allows_xnack("gfx1010", 10, Some(0)),
        )];
        assert_eq!(xnack("gfx1010", 1, &navi10).state, FeatureValue::Off);
        assert_eq!(
            xnack("gfx1100", 1, &navi10).state,
            FeatureValue::Unsupported
        );
    }
}
