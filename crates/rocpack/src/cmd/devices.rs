//! `rocpack devices`: this machine's AMD GPUs, from sysfs.

use std::io::{self, Write};

use anyhow::{Context, Result};
use rocpack_devices::{
    AccessStatus, Detection, Device, FeatureState, FeatureValue, NodeAccess, Roots, detect,
};

use crate::args::{DevicesArgs, Global};
use crate::output::{Exit, human_size};

pub fn run(global: &Global, args: &DevicesArgs) -> Result<Exit> {
    let mut roots = match &args.sysfs_root {
        Some(dir) => Roots::at(dir),
        None => Roots::system(),
    };
    if let Some(ids) = &args.amdgpu_ids {
        roots.amdgpu_ids = Some(ids.clone());
    }
    let detection = detect(&roots).with_context(|| format!("reading {}", roots.sys.display()))?;
    let mut out = io::BufWriter::new(io::stdout().lock());
    if global.json {
        serde_json::to_writer(&mut out, &detection)?;
        writeln!(out)?;
    } else {
        print_text(&mut out, &detection)?;
    }
    out.flush()?;
    for w in &detection.warnings {
        eprintln!("warning: {w}");
    }
    Ok(if detection.devices.is_empty() {
        Exit::NoMatch
    } else {
        Exit::Ok
    })
}

fn feature(f: &FeatureState) -> String {
    let state = match f.state {
        FeatureValue::On => "on",
        FeatureValue::Off => "off",
        FeatureValue::Unknown => "unknown",
        FeatureValue::Unsupported => "not a feature of this processor",
    };
    format!("{state} — {}", f.detail)
}

fn access(a: &NodeAccess) -> String {
    let status = match a.status {
        AccessStatus::Ok => "ok",
        AccessStatus::Missing => "missing",
        AccessStatus::PermissionDenied => "permission denied",
        AccessStatus::Error => "cannot open",
    };
    let mut s = format!("{}: {status}", a.path.display());
    if let Some(d) = &a.detail {
        s.push_str(" — ");
        s.push_str(d);
    }
    s
}

fn device(out: &mut impl Write, d: &Device) -> io::Result<()> {
    let name = d
        .marketing_name
        .as_ref()
        .map(|m| format!("  {}", m.name))
        .unwrap_or_default();
    writeln!(out, "node {}: {}{name}", d.node, d.target)?;
    let mut line = |k: &str, v: String| writeln!(out, "  {k:<13}{v}");
    line(
        "kind",
        format!(
            "{} ({})",
            match d.kind {
                rocpack_devices::Kind::Dgpu => "dGPU",
                rocpack_devices::Kind::Apu => "APU",
                rocpack_devices::Kind::Unknown => "unknown",
            },
            d.kind_reason
        ),
    )?;
    line("gfx version", d.gfx_version.to_string())?;
    line("xnack", feature(&d.xnack))?;
    line("sramecc", feature(&d.sramecc))?;
    let mut pci = format!("{:04x}:{:04x}", d.pci.vendor, d.pci.device);
    if let Some(r) = d.pci.revision {
        pci.push_str(&format!(" rev {r:02x}"));
    }
    if let Some(slot) = &d.pci_slot {
        pci = format!("{slot}  {pci}");
    }
    line("PCI", pci)?;
    let mut compute = Vec::new();
    if let Some(cu) = d.cu_count {
        compute.push(format!("{cu} CUs"));
    }
    compute.push(format!("{} SIMDs", d.simd_count));
    if let Some(w) = d.wavefront_size {
        compute.push(format!("wavefront {w}"));
    }
    if let Some(x) = d.num_xcc.filter(|&x| x > 1) {
        compute.push(format!("{x} XCCs"));
    }
    if let Some(v) = d.vram_bytes {
        compute.push(format!("{} memory", human_size(v)));
    }
    line("compute", compute.join(", "))?;
    if let Some(r) = &d.render_node {
        line("render node", r.display().to_string())?;
    }
    if let Some(a) = &d.access {
        line("access", access(&a.kfd))?;
        if let Some(r) = &a.render {
            line("", access(r))?;
        }
    }
    Ok(())
}

fn print_text(out: &mut impl Write, det: &Detection) -> io::Result<()> {
    for (i, d) in det.devices.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        device(out, d)?;
    }
    for r in &det.drm_only {
        writeln!(
            out,
            "render node renderD{} ({:04x}:{:04x}{}): no KFD node — ROCm cannot use it here",
            r.minor,
            r.pci.vendor,
            r.pci.device,
            r.marketing_name
                .as_ref()
                .map(|m| format!(", {}", m.name))
                .unwrap_or_default()
        )?;
    }
    for n in &det.notes {
        writeln!(out, "note: {n}")?;
    }
    if det.devices.is_empty() && det.drm_only.is_empty() && det.notes.is_empty() {
        writeln!(out, "no AMD GPU found")?;
    }
    Ok(())
}
