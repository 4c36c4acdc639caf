//! The coverage matrix of an install: libraries × GPU targets, with a verdict in each cell.

use std::collections::{BTreeMap, BTreeSet};

use rocpack_amdgpu::compat::Verdict;
use rocpack_amdgpu::{Feature, TargetId, mach};
use serde::Serialize;

use crate::evaluate::{Cell, Gpu, Rules, evaluate};
use crate::library::{Inventory, Library, LibraryKind};

/// One column: a GPU target.
#[derive(Debug, Clone, Serialize)]
pub struct Column {
    /// The GPU, as evaluated.
    #[serde(flatten)]
    pub gpu: Gpu,
    /// Libraries with a verdict other than `none` on it.
    pub runs: usize,
}

/// One row: a library.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The library.
    pub library: String,
    /// The package it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<String>,
    /// `elf`, `pe`, `archive`, `device-code` or `tensile-dir`.
    pub kind: &'static str,
    /// Size of its files in bytes.
    pub size: u64,
    /// Bundles holding device code.
    pub bundles: usize,
    /// Of those, bundles of module-loaded code (embedded in a host section, or files).
    pub module_bundles: usize,
    /// Places holding GPU code rocpack cannot classify.
    pub unclassified: usize,
    /// Bytes of device code per processor present.
    pub bytes_per_processor: BTreeMap<String, u64>,
    /// One cell per column.
    pub cells: Vec<Cell>,
    /// Whether reading it hit errors.
    pub read_errors: bool,
}

/// The whole matrix.
#[derive(Debug, Clone, Serialize)]
pub struct Matrix {
    /// The columns.
    pub columns: Vec<Column>,
    /// The rows, one per library with device code.
    pub rows: Vec<Row>,
}

/// One letter per verdict for a matrix cell: N native, G generic, P policy, O override,
/// `.` none.
pub fn letter(v: Verdict) -> char {
    match v {
        Verdict::Native => 'N',
        Verdict::Generic => 'G',
        Verdict::Policy => 'P',
        Verdict::Override => 'O',
        Verdict::None => '.',
    }
}

/// The kind as a short name.
pub fn kind_name(kind: &LibraryKind) -> &'static str {
    match kind {
        LibraryKind::Elf => "elf",
        LibraryKind::Pe => "pe",
        LibraryKind::Archive => "archive",
        LibraryKind::DeviceCode => "device-code",
        LibraryKind::TensileDir { .. } => "tensile-dir",
    }
}

/// The targets worth a column: every processor some library carries code for, and every
/// member of a generic target some library carries, by generation (gfx803 … gfx90a, gfx1010 …
/// gfx1201); generic targets themselves are not GPUs and get no column.
pub fn columns_for(inv: &Inventory) -> Vec<Gpu> {
    let mut names: BTreeSet<String> = BTreeSet::new();
    for lib in &inv.libraries {
        for b in &lib.bundles {
            for e in &b.entries {
                let p = &e.target.processor;
                match mach::by_name(p) {
                    Some(m) if m.generic => {
                        names.extend(mach::generic_members(p).iter().map(|s| (*s).to_owned()));
                    }
                    _ => {
                        names.insert(p.clone());
                    }
                }
            }
        }
    }
    // gfx + 3 characters before gfx + 4; within a length, gfx908 < gfx90a < gfx90c as text.
    let mut names: Vec<String> = names.into_iter().collect();
    names.sort_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    names
        .into_iter()
        .map(|p| Gpu {
            given: p.clone(),
            target: TargetId::new(p),
            name: None,
        })
        .collect()
}

/// Evaluates every library with device code on every GPU (in parallel over libraries).
pub fn build(inv: &Inventory, gpus: &[Gpu], rules: &Rules) -> Matrix {
    let rows: Vec<Row> = inv
        .libraries
        .iter()
        .filter(|l| l.has_device_code() || matches!(l.kind, LibraryKind::TensileDir { .. }))
        .map(|lib| row(lib, gpus, rules))
        .collect();
    let columns = gpus
        .iter()
        .enumerate()
        .map(|(i, g)| Column {
            gpu: g.clone(),
            runs: rows
                .iter()
                .filter(|r| r.cells.get(i).is_some_and(|c| c.verdict != Verdict::None))
                .count(),
        })
        .collect();
    Matrix { columns, rows }
}

/// A column is a processor, not one configured device: where its xnack or sramecc mode is left
/// open, the cell shows the best verdict over the modes the processor can run in (a
/// gfx90a:xnack+ library does run on a gfx90a, in xnack+ mode). `check` with a full target ID
/// judges one device's own modes instead.
fn best_over_modes(lib: &Library, gpu: &Gpu, rules: &Rules) -> Cell {
    let info = mach::by_name(&gpu.target.processor);
    let options = |given: Feature, supported: bool| -> Vec<Feature> {
        if given == Feature::Any && supported {
            vec![Feature::Off, Feature::On]
        } else {
            vec![given]
        }
    };
    let mut best: Option<Cell> = None;
    for sramecc in options(gpu.target.sramecc, info.is_some_and(|m| m.sramecc)) {
        for xnack in options(gpu.target.xnack, info.is_some_and(|m| m.xnack)) {
            let mut g = gpu.clone();
            g.target.sramecc = sramecc;
            g.target.xnack = xnack;
            let cell = evaluate(lib, &g, rules);
            if best.as_ref().is_none_or(|b| cell.verdict > b.verdict) {
                best = Some(cell);
            }
        }
    }
    best.unwrap_or_else(|| evaluate(lib, gpu, rules))
}

fn row(lib: &Library, gpus: &[Gpu], rules: &Rules) -> Row {
    Row {
        library: lib.path.clone(),
        package: lib.package.clone(),
        kind: kind_name(&lib.kind),
        size: lib.size,
        bundles: lib.bundles.iter().filter(|b| !b.entries.is_empty()).count(),
        module_bundles: lib
            .bundles
            .iter()
            .filter(|b| !b.entries.is_empty() && b.loading == rocpack_offload::Loading::Module)
            .count(),
        unclassified: lib.unclassified.len(),
        bytes_per_processor: lib.bytes_per_processor(),
        cells: gpus
            .iter()
            .map(|g| best_over_modes(lib, g, rules))
            .collect(),
        read_errors: lib.read_errors,
    }
}
