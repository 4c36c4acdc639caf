//! Every plan, on every fixture and on damaged copies of them, renders to a file that passes the
//! same verification a real write makes — and planning never panics on hostile bytes.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::path::PathBuf;

use rocpack_amdgpu::compat::{Device, Policy};
use rocpack_slim::plan::Limits;
use rocpack_slim::{Compression, Keep, Operation, plan};
use rocpack_slim::{Input, render, verify_all};

fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bin");
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    assert!(out.len() > 40);
    out
}

fn keep(targets: &[&str], policy: Policy) -> Keep {
    Keep {
        devices: targets.iter().map(|t| Device::parse(t).unwrap()).collect(),
        policy,
        override_version: None,
    }
}

fn operations(k: &Keep) -> Vec<Operation<'_>> {
    vec![
        Operation::Strip(k),
        Operation::Compress(Compression::default()),
        Operation::Compress(Compression {
            method: rocpack_offload::ccob::Method::Zlib,
            level: Some(1),
            version: Some(3),
        }),
        Operation::Decompress,
    ]
}

#[test]
fn every_plan_renders_to_a_verified_file() {
    let keeps = [
        keep(&["gfx1030"], Policy::Hip),
        keep(&["gfx90a"], Policy::Hip),
        keep(&["gfx1031", "gfx942"], Policy::HipLegacy),
        keep(&["gfx1100"], Policy::Debian),
    ];
    let mut rewrites = 0;
    for (name, data) in fixtures() {
        for k in &keeps {
            for op in operations(k) {
                let Ok(mut p) = plan(Input::bytes(&data), op, Limits::default()) else {
                    continue;
                };
                let new = render(&mut p, &data, Limits::default());
                assert_eq!(new.len() as u64, p.new_len, "{name} {op:?}");
                verify_all(&p, &new, &data, Limits::default())
                    .unwrap_or_else(|e| panic!("{name} {op:?}: {e}"));
                rewrites += p.rewrites.len();
                // Outside the rewritten places, nothing changed.
                if !p.whole {
                    let mut inside = vec![false; data.len()];
                    for r in &p.rewrites {
                        inside[r.offset as usize..(r.offset + r.slot) as usize].fill(true);
                    }
                    for (i, (a, b)) in data.iter().zip(&new).enumerate() {
                        assert!(inside[i] || a == b, "{name} {op:?}: byte {i:#x} changed");
                    }
                }
            }
        }
    }
    assert!(rewrites > 100, "only {rewrites} rewrites planned");
}

#[test]
fn damaged_inputs_never_panic_and_still_verify() {
    let k = keep(&["gfx1030"], Policy::Hip);
    for (name, data) in fixtures().into_iter().filter(|(_, d)| d.len() < 40_000) {
        // Every prefix at a coarse step, and single-byte changes through the headers.
        let mut variants: Vec<Vec<u8>> = (0..data.len())
            .step_by(97)
            .map(|n| data[..n].to_vec())
            .collect();
        for at in (0..data.len().min(4096)).step_by(7) {
            let mut d = data.clone();
            d[at] ^= 0xff;
            variants.push(d);
        }
        for d in &variants {
            for op in operations(&k) {
                if let Ok(mut p) = plan(Input::bytes(d), op, Limits::default()) {
                    let new = render(&mut p, d, Limits::default());
                    verify_all(&p, &new, d, Limits::default())
                        .unwrap_or_else(|e| panic!("{name} (damaged) {op:?}: {e}"));
                }
            }
        }
    }
}
