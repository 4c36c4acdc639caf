//! Detection over miniature sysfs trees copied from real machines (see
//! `tests/fixtures/sysfs/README.md` for the sources), and over broken copies of them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use rocpack_devices::{
    AccessStatus, Detection, FeatureSource, FeatureValue, Identity, Kind, NameMatch, Roots, detect,
};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs")
}

fn roots(name: &str) -> Roots {
    let mut r = Roots::at(fixtures().join(name));
    r.amdgpu_ids = Some(fixtures().join("amdgpu.ids"));
    r
}

fn run(name: &str) -> Detection {
    detect(&roots(name)).unwrap()
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            fs::copy(entry.path(), dest).unwrap();
        }
    }
}

/// A writable copy of a fixture, with `amdgpu.ids` beside it.
fn scratch(name: &str) -> (tempfile::TempDir, Roots) {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixtures().join(name), &dir.path().join("sys"));
    fs::copy(fixtures().join("amdgpu.ids"), dir.path().join("amdgpu.ids")).unwrap();
    let mut r = Roots::at(dir.path().join("sys"));
    r.amdgpu_ids = Some(dir.path().join("amdgpu.ids"));
    (dir, r)
}

fn codes(d: &[rocpack_devices::Diagnostic]) -> Vec<&'static str> {
    d.iter().map(|d| d.code.as_str()).collect()
}

#[test]
fn rdna2_rx6800() {
    let d = run("rx6800");
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert!(d.notes.is_empty(), "{:?}", d.notes);
    assert_eq!(d.kfd_generation_id, Some(2));
    let [g] = d.devices.as_slice() else {
        panic!("{:?}", d.devices)
    };
    assert_eq!(g.node, 1);
    assert_eq!(g.gpu_id, None);
    assert_eq!(g.target.to_string(), "gfx1030");
    assert_eq!(g.gfx_version.to_string(), "10.3.0");
    let name = g.marketing_name.as_ref().unwrap();
    assert_eq!(
        (name.name.as_str(), name.matched),
        ("AMD Radeon RX 6800", NameMatch::Exact)
    );
    assert_eq!(
        (g.pci.vendor, g.pci.device, g.pci.revision),
        (0x1002, 0x73bf, Some(0xc3))
    );
    assert_eq!(g.pci_slot.as_deref(), Some("0000:09:00.0"));
    assert_eq!(g.kind, Kind::Dgpu);
    assert_eq!(
        (g.simd_count, g.cu_count, g.wavefront_size),
        (120, Some(60), Some(32))
    );
    assert_eq!(g.vram_bytes, Some(16760832 * 1024));
    assert_eq!(g.unique_id, Some(0x6200dec08b9272cf));
    assert_eq!(
        g.render_node.as_deref(),
        Some(Path::new("/dev/dri/renderD128"))
    );
    assert_eq!(g.xnack.state, FeatureValue::Unsupported);
    assert_eq!(g.sramecc.state, FeatureValue::Unsupported);
    assert!(g.access.is_none());
}

#[test]
fn rdna3_rx7900xtx() {
    let d = run("rx7900xtx");
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    let [g] = d.devices.as_slice() else { panic!() };
    assert_eq!(g.target.to_string(), "gfx1100");
    assert_eq!(
        g.marketing_name.as_ref().unwrap().name,
        "AMD Radeon RX 7900 XTX"
    );
    assert_eq!((g.cu_count, g.num_xcc), (Some(96), Some(1)));
    assert_eq!(g.pci_slot.as_deref(), Some("0000:86:00.0"));
    assert_eq!(g.kind, Kind::Dgpu);
    assert!(g.kind_reason.contains("discrete"), "{}", g.kind_reason);
}

#[test]
fn cdna2_mi210_hive_has_sramecc_on_and_xnack_off() {
    let d = run("mi210-xgmi");
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(d.amdgpu_noretry, Some(-1));
    assert_eq!(d.devices.len(), 4);
    let nodes: Vec<_> = d
        .devices
        .iter()
        .map(|g| (g.node, g.drm_render_minor))
        .collect();
    assert_eq!(
        nodes,
        vec![
            (2, Some(128)),
            (3, Some(129)),
            (4, Some(130)),
            (5, Some(131))
        ]
    );
    for g in &d.devices {
        assert_eq!(g.target.to_string(), "gfx90a:sramecc+:xnack-");
        assert_eq!(
            g.marketing_name.as_ref().unwrap().name,
            "AMD Instinct MI210"
        );
        assert_eq!(g.cu_count, Some(104));
        assert_eq!(g.kind, Kind::Dgpu);
        assert_eq!(g.vram_bytes, None, "the dump has no mem_banks");
        assert_eq!(g.sramecc.source, FeatureSource::KfdCapability);
        assert_eq!(g.xnack.source, FeatureSource::KfdProcessDefault);
        assert!(g.xnack.detail.contains("noretry=1"), "{}", g.xnack.detail);
        assert!(
            !g.xnack.detail.contains("because of node"),
            "{}",
            g.xnack.detail
        );
        assert!(g.xnack.detail.contains("HSA_XNACK=1"), "{}", g.xnack.detail);
    }
    assert_eq!(d.devices[2].pci_slot.as_deref(), Some("0000:03:00.0"));
}

#[test]
fn mi210_xnack_follows_the_noretry_parameter() {
    let (dir, r) = scratch("mi210-xgmi");
    let param = r.sys.join("module/amdgpu/parameters/noretry");
    fs::write(&param, "0\n").unwrap();
    let d = detect(&r).unwrap();
    assert!(
        d.devices
            .iter()
            .all(|g| g.target.to_string() == "gfx90a:sramecc+:xnack+"),
        "{:?}",
        d.devices
            .iter()
            .map(|g| g.target.to_string())
            .collect::<Vec<_>>()
    );
    fs::remove_file(&param).unwrap();
    let d = detect(&r).unwrap();
    assert_eq!(d.devices[0].xnack.state, FeatureValue::Unknown);
    assert_eq!(d.devices[0].target.to_string(), "gfx90a:sramecc+");
    fs::write(&param, "auto\n").unwrap();
    let d = detect(&r).unwrap();
    assert_eq!(codes(&d.warnings), vec!["bad-module-parameter"]);
    assert_eq!(d.warnings[0].path.as_deref(), Some(param.as_path()));
    drop(dir);
}

#[test]
fn mi210_next_to_an_rdna_gpu_gets_xnack_off() {
    let (_dir, r) = scratch("mi210-xgmi");
    fs::write(r.sys.join("module/amdgpu/parameters/noretry"), "0\n").unwrap();
    // Turn node 5 into an RX 6800 (gfx1030): KFD then starts every process with XNACK off.
    let p = r.sys.join("class/kfd/kfd/topology/nodes/5/properties");
    let text = fs::read_to_string(&p)
        .unwrap()
        .replace("gfx_target_version 90010", "gfx_target_version 100300");
    fs::write(&p, text).unwrap();
    let d = detect(&r).unwrap();
    let g = &d.devices[0];
    assert_eq!(g.target.to_string(), "gfx90a:sramecc+:xnack-");
    assert!(
        g.xnack.detail.contains("node 5 (gfx1030)"),
        "{}",
        g.xnack.detail
    );
}

#[test]
fn apu_framework_7840u() {
    let d = run("framework13-7840u");
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    let [g] = d.devices.as_slice() else { panic!() };
    assert_eq!(g.target.to_string(), "gfx1103");
    assert_eq!(g.kind, Kind::Apu);
    assert_eq!(
        g.marketing_name.as_ref().unwrap().name,
        "AMD Radeon 780M Graphics"
    );
    assert_eq!(g.cu_count, Some(12));
    assert_eq!(g.pci_slot.as_deref(), Some("0000:c1:00.0"));
}

#[test]
fn igpu_and_dgpu_raphael_with_rx7900gre() {
    let d = run("raphael-7900gre");
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert!(d.drm_only.is_empty());
    let [gre, igpu] = d.devices.as_slice() else {
        panic!()
    };
    assert_eq!((gre.node, igpu.node), (1, 2));
    assert_eq!(gre.target.to_string(), "gfx1100");
    assert_eq!(gre.kind, Kind::Dgpu);
    assert_eq!(gre.drm_render_minor, Some(129));
    let name = gre.marketing_name.as_ref().unwrap();
    assert_eq!(
        (name.name.as_str(), name.matched),
        ("AMD Radeon RX 7900 GRE", NameMatch::Exact)
    );
    assert_eq!(
        (gre.pci.subsystem_vendor, gre.pci.subsystem_device),
        (Some(0x1eae), Some(0x790a))
    );
    assert_eq!(igpu.target.to_string(), "gfx1036");
    assert_eq!(igpu.kind, Kind::Apu);
    assert_eq!(igpu.cu_count, Some(2));
    assert_eq!(igpu.pci_slot.as_deref(), Some("0000:12:00.0"));
    // amdgpu.ids has no 164E revision CB: the device-only guess is flagged as such.
    let name = igpu.marketing_name.as_ref().unwrap();
    assert_eq!(
        (name.name.as_str(), name.matched),
        ("AMD Radeon 610M", NameMatch::DeviceOnly)
    );
}

#[test]
fn drm_only_system_lists_render_nodes_and_notes_missing_kfd() {
    let d = run("drm-only-raphael-7900gre");
    assert!(d.devices.is_empty());
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    assert_eq!(
        codes(&d.notes),
        vec!["no-kfd", "drm-without-kfd", "drm-without-kfd"]
    );
    assert!(
        d.notes[0]
            .message
            .contains("no KFD (amdgpu driver not loaded or no AMD GPU)")
    );
    let minors: Vec<_> = d.drm_only.iter().map(|r| (r.minor, r.pci.device)).collect();
    assert_eq!(minors, vec![(128, 0x164e), (129, 0x744c)]);
    assert_eq!(
        d.drm_only[1].marketing_name.as_ref().unwrap().name,
        "AMD Radeon RX 7900 GRE"
    );
}

#[test]
fn empty_sysfs_has_no_devices_and_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let d = detect(&Roots::at(dir.path())).unwrap();
    assert!(d.devices.is_empty() && d.drm_only.is_empty() && d.warnings.is_empty());
    assert_eq!(codes(&d.notes), vec!["no-amdgpu-ids", "no-kfd"]);
}

#[test]
fn missing_sysfs_root_is_an_error_naming_it() {
    let err = detect(&Roots::at("/nonexistent/rocpack-sys")).unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent/rocpack-sys"),
        "{err}"
    );
}

#[test]
fn malformed_properties_skip_the_node_with_a_warning_naming_file_and_line() {
    let (_dir, r) = scratch("raphael-7900gre");
    let p = r.sys.join("class/kfd/kfd/topology/nodes/1/properties");
    let text = fs::read_to_string(&p)
        .unwrap()
        .replace("simd_count 160", "simd_count many");
    fs::write(&p, text).unwrap();
    let d = detect(&r).unwrap();
    assert_eq!(codes(&d.warnings), vec!["kfd-bad-node"]);
    let w = &d.warnings[0];
    assert_eq!(w.path.as_deref(), Some(p.as_path()));
    assert_eq!(w.line, Some(2));
    assert!(w.to_string().contains("properties:2:"), "{w}");
    // The other GPU is still there, and the orphaned render node is reported.
    assert_eq!(d.devices.len(), 1);
    assert_eq!(d.devices[0].target.to_string(), "gfx1036");
    assert_eq!(d.drm_only.len(), 1);
}

#[test]
fn hostile_and_missing_files_are_warnings_not_panics() {
    let (_dir, r) = scratch("rx6800");
    let topo = r.sys.join("class/kfd/kfd/topology");
    let node = topo.join("nodes/1/properties");
    let original = fs::read_to_string(&node).unwrap();

    // No gfx_target_version (kernels before 5.14).
    fs::write(&node, original.replace("gfx_target_version 100300\n", "")).unwrap();
    let d = detect(&r).unwrap();
    assert_eq!(codes(&d.warnings), vec!["kfd-no-gfx-target-version"]);
    assert!(d.devices.is_empty());

    // A value too large for the kernel's 32-bit field, a duplicated key, and a huge file.
    for (bad, code) in [
        (
            original.replace("simd_count 120", "simd_count 99999999999999"),
            "kfd-bad-value",
        ),
        (format!("{original}simd_count 4\n"), "kfd-bad-node"),
        ("x 1\n".repeat(40_000), "kfd-bad-node"),
    ] {
        fs::write(&node, bad).unwrap();
        let d = detect(&r).unwrap();
        assert_eq!(codes(&d.warnings)[0], code, "{:?}", d.warnings);
    }
    fs::write(&node, &original).unwrap();

    // A stray entry, an unreadable generation_id, a bad revision file, a missing render node.
    fs::create_dir_all(topo.join("nodes/readme")).unwrap();
    fs::write(topo.join("generation_id"), "two\n").unwrap();
    let rev = r.sys.join("class/drm/renderD128/device/revision");
    fs::write(&rev, "zz\n").unwrap();
    let d = detect(&r).unwrap();
    let mut got = codes(&d.warnings);
    got.sort_unstable();
    assert_eq!(
        got,
        vec!["drm-bad-file", "kfd-bad-file", "kfd-unexpected-entry"]
    );
    let w = d
        .warnings
        .iter()
        .find(|w| w.code.as_str() == "drm-bad-file")
        .unwrap();
    assert_eq!(w.path.as_deref(), Some(rev.as_path()));
    assert_eq!(d.devices.len(), 1, "the GPU is still reported");
    assert_eq!(d.devices[0].pci.revision, None);

    fs::remove_dir_all(r.sys.join("class/drm/renderD128")).unwrap();
    let d = detect(&r).unwrap();
    assert!(codes(&d.warnings).contains(&"drm-render-node-missing"));
    assert_eq!(
        d.devices[0].pci.device, 0x73bf,
        "KFD still names the device"
    );
    assert_eq!(
        d.devices[0].pci_slot.as_deref(),
        Some("0000:09:00.0"),
        "from location_id"
    );
}

#[test]
fn drm_and_kfd_disagreeing_is_a_warning() {
    let (_dir, r) = scratch("rx6800");
    fs::write(r.sys.join("class/drm/renderD128/device/device"), "0x73df\n").unwrap();
    fs::write(
        r.sys.join("class/drm/renderD128/device/uevent"),
        "PCI_SLOT_NAME=0000:0a:00.0\n",
    )
    .unwrap();
    let d = detect(&r).unwrap();
    assert_eq!(
        codes(&d.warnings),
        vec!["drm-kfd-mismatch", "drm-kfd-mismatch"]
    );
}

#[test]
fn bad_amdgpu_ids_lines_are_warnings_with_line_numbers() {
    let (dir, r) = scratch("rx6800");
    let ids = dir.path().join("amdgpu.ids");
    let text = fs::read_to_string(&ids).unwrap() + "73BF;C3;broken\n";
    fs::write(&ids, text).unwrap();
    let d = detect(&r).unwrap();
    assert_eq!(codes(&d.warnings), vec!["amdgpu-ids-bad-line"]);
    assert_eq!(d.warnings[0].line, Some(25));
    assert_eq!(
        d.devices[0].marketing_name.as_ref().unwrap().name,
        "AMD Radeon RX 6800"
    );
    assert_eq!(
        d.amdgpu_ids.as_ref().unwrap().version.as_deref(),
        Some("1.0.0")
    );

    let mut r = r;
    r.amdgpu_ids = Some(dir.path().join("missing.ids"));
    let d = detect(&r).unwrap();
    assert_eq!(codes(&d.warnings), vec!["amdgpu-ids-unreadable"]);
    assert!(d.devices[0].marketing_name.is_none());
}

fn dev_root(mode: u32) -> tempfile::TempDir {
    let dev = tempfile::tempdir().unwrap();
    fs::create_dir_all(dev.path().join("dri")).unwrap();
    for f in ["kfd", "dri/renderD128"] {
        let p = dev.path().join(f);
        fs::write(&p, "").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
    }
    dev
}

#[test]
fn access_ok_for_nodes_we_own() {
    let dev = dev_root(0o600);
    let mut r = roots("rx6800");
    r.dev = Some(dev.path().to_owned());
    let d = detect(&r).unwrap();
    let a = d.devices[0].access.as_ref().unwrap();
    assert_eq!(a.kfd.status, AccessStatus::Ok);
    assert_eq!(a.kfd.mode, Some(0o600));
    let render = a.render.as_ref().unwrap();
    assert_eq!(render.status, AccessStatus::Ok);
    assert_eq!(render.path, dev.path().join("dri/renderD128"));
    assert_eq!(
        d.devices[0].render_node.as_deref(),
        Some(dev.path().join("dri/renderD128").as_path())
    );
}

#[test]
fn access_denied_unless_root() {
    let dev = dev_root(0o000);
    let mut r = roots("rx6800");
    r.dev = Some(dev.path().to_owned());
    let d = detect(&r).unwrap();
    let kfd = &d.devices[0].access.as_ref().unwrap().kfd;
    // CI runs as root, which may open anything: test the decision either way.
    if Identity::current().uid == 0 {
        assert_eq!(kfd.status, AccessStatus::Ok);
        assert!(kfd.detail.as_deref().unwrap().contains("root"));
    } else {
        assert_eq!(kfd.status, AccessStatus::PermissionDenied);
        let detail = kfd.detail.as_deref().unwrap();
        assert!(detail.contains("cannot read or write"), "{detail}");
    }
    assert_eq!(kfd.mode, Some(0));
    assert!(kfd.group.is_some());
}

#[test]
fn access_reports_a_missing_kfd_node() {
    let dev = tempfile::tempdir().unwrap();
    let mut r = roots("rx6800");
    r.dev = Some(dev.path().to_owned());
    let d = detect(&r).unwrap();
    let a = d.devices[0].access.as_ref().unwrap();
    assert_eq!(a.kfd.status, AccessStatus::Missing);
    assert!(a.kfd.detail.as_deref().unwrap().contains("does not exist"));
    assert_eq!(a.render.as_ref().unwrap().status, AccessStatus::Missing);
}

#[test]
fn json_shape() {
    let d = run("mi210-xgmi");
    let v = serde_json::to_value(&d).unwrap();
    let g = &v["devices"][0];
    assert_eq!(g["target"], "gfx90a:sramecc+:xnack-");
    assert_eq!(g["gfx_version"], "9.0.10");
    assert_eq!(g["xnack"]["state"], "off");
    assert_eq!(g["xnack"]["source"], "kfd-process-default");
    assert_eq!(g["sramecc"]["source"], "kfd-capability");
    assert_eq!(g["marketing_name"]["match"], "exact");
    assert_eq!(g["kind"], "dgpu");
    assert_eq!(g["pci"]["revision"], 2);
    assert_eq!(v["amdgpu_noretry"], -1);
    assert!(v["warnings"].as_array().unwrap().is_empty());
}
