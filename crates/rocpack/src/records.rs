//! The JSON Lines records the commands write with `--json`, as types: the schema of
//! docs/json.md in one place, checked by the compiler instead of spelled out in `json!` maps.
//!
//! Fields are declared in alphabetical order, the order these records have always had on the
//! wire (they were `serde_json` maps, which sort their keys): the output stays byte for byte
//! what it was. A new field goes where the alphabet puts it. `None` is written as `null`. A
//! library type nested in a record (`bundles` of a verdict, `rewrites` of a slimmed file) is
//! written through [`sorted`], which gives its keys the same order.

use std::collections::BTreeMap;

use rocpack_amdgpu::compat::Policy;
use rocpack_amdgpu::compat::{Rule, Verdict};
use rocpack_check::evaluate::{Cell, VerdictCounts};
use rocpack_check::library::Unclassified;
use rocpack_check::matrix::Row;
use rocpack_offload::Loading;
use rocpack_slim::plan::{Rewrite, Skip};
use serde::{Serialize, Serializer};

/// Writes `value` with its object keys sorted, at every depth (through `serde_json::Value`,
/// whose maps are sorted): how a nested library type has always appeared in these records.
fn sorted<T: Serialize, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(value)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}

/// `{"type": "gpu"}` of `check --json`, and `{"type": "target"}` of `scan --json --gpu` (which
/// adds `libraries_running`).
#[derive(Serialize)]
pub struct Gpu<'a> {
    pub gpu: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub libraries_running: Option<usize>,
    pub name: Option<&'a str>,
    pub products: Vec<String>,
    pub target: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// `{"type": "verdict"}` of `check --json`: one library on one GPU.
#[derive(Serialize)]
pub struct CheckVerdict<'a> {
    pub bundle: &'a Option<String>,
    #[serde(serialize_with = "sorted")]
    pub bundles: &'a VerdictCounts,
    pub entry: &'a Option<String>,
    pub file: &'a str,
    pub gpu: &'a str,
    pub library_kind: &'static str,
    pub loading: &'a Option<Loading>,
    pub package: &'a Option<String>,
    pub read_errors: bool,
    pub reason: &'a str,
    pub rule: &'a Option<Rule>,
    pub target: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(serialize_with = "sorted")]
    pub unclassified: &'a [Unclassified],
    pub verdict: Verdict,
    pub warnings: &'a [String],
}

/// `{"type": "summary"}` of `check --json`.
#[derive(Serialize)]
pub struct CheckSummary {
    pub files_examined: usize,
    pub gpus: usize,
    pub hsa_override_gfx_version: Option<String>,
    pub libraries: usize,
    pub libraries_running_on_every_gpu: usize,
    pub policy: Policy,
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// One GPU's cell in `{"type": "library"}` of `scan --json --gpu`.
#[derive(Serialize)]
pub struct ScanCell<'a> {
    pub loading: &'a Option<Loading>,
    pub reason: &'a str,
    pub rule: &'a Option<Rule>,
    pub verdict: Verdict,
}

impl<'a> ScanCell<'a> {
    pub fn of(c: &'a Cell) -> Self {
        ScanCell {
            loading: &c.loading,
            reason: &c.reason,
            rule: &c.rule,
            verdict: c.verdict,
        }
    }
}

/// `{"type": "library"}` of `scan --json`.
#[derive(Serialize)]
pub struct ScanLibrary<'a> {
    pub bundles: usize,
    pub bytes_per_processor: &'a BTreeMap<String, u64>,
    pub file: &'a str,
    pub library_kind: &'static str,
    pub module_bundles: usize,
    pub package: &'a Option<String>,
    pub read_errors: bool,
    pub size: u64,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub unclassified: usize,
    /// By the GPU as given.
    pub verdicts: BTreeMap<&'a str, ScanCell<'a>>,
}

impl<'a> ScanLibrary<'a> {
    pub fn of(r: &'a Row, verdicts: BTreeMap<&'a str, ScanCell<'a>>) -> Self {
        ScanLibrary {
            bundles: r.bundles,
            bytes_per_processor: &r.bytes_per_processor,
            file: &r.library,
            library_kind: r.kind,
            module_bundles: r.module_bundles,
            package: &r.package,
            read_errors: r.read_errors,
            size: r.size,
            kind: "library",
            unclassified: r.unclassified,
            verdicts,
        }
    }
}

/// `{"type": "kernel-db"}` of `scan --json`: a MIOpen kernel database.
#[derive(Serialize)]
pub struct KernelDb<'a> {
    pub arch: &'a Option<String>,
    pub cus: Option<u32>,
    pub file: &'a str,
    pub size: u64,
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// What `strip`/`compress`/`decompress --json` write per file.
#[derive(Serialize)]
pub struct SlimFile<'a> {
    pub action: &'static str,
    pub allocated_after: Option<u64>,
    pub allocated_before: Option<u64>,
    pub backup: Option<String>,
    pub bundles: Option<usize>,
    pub code_object: Option<CodeObjectUse<'a>>,
    pub deallocated_estimate: Option<u64>,
    pub error: &'a Option<String>,
    pub notes: Option<&'a [String]>,
    pub output: Option<String>,
    pub path: String,
    #[serde(serialize_with = "sorted")]
    pub rewrites: Option<&'a [Rewrite]>,
    pub size_after: Option<u64>,
    pub size_before: Option<u64>,
    #[serde(serialize_with = "sorted")]
    pub skipped: Option<&'a [Skip]>,
    pub status: &'static str,
}

/// A bare code object's target, and whether a kept GPU loads it.
#[derive(Serialize)]
pub struct CodeObjectUse<'a> {
    pub loaded: bool,
    pub target: &'a str,
}

/// `{"type": "summary"}` of `verify --json`.
#[derive(Serialize)]
pub struct VerifySummary {
    pub allowed: usize,
    pub archives: usize,
    pub cmake_files: usize,
    pub elf_files: usize,
    pub errors: usize,
    pub hip_toolchains: usize,
    pub infos: usize,
    pub symbols_checked: usize,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub warnings: usize,
}

/// A file of `verify --list-libs --json`, with the libraries it loads.
#[derive(Serialize)]
pub struct LinkedFile<'a> {
    pub file: String,
    pub libraries: Vec<LinkedLibrary<'a>>,
}

/// One library of [`LinkedFile`]: the name asked for, where the loader finds it (`null`: not
/// found), and the file that asks for it.
#[derive(Serialize)]
pub struct LinkedLibrary<'a> {
    pub name: &'a str,
    pub needed_by: &'a str,
    pub path: &'a Option<String>,
}

/// A component of `plan --list-components --json`.
#[derive(Serialize)]
pub struct PlanComponent<'a> {
    pub aliases: &'a [String],
    pub deps: &'a [String],
    pub device_code: &'static str,
    pub kind: &'a str,
    pub name: &'a str,
    pub optional_deps: Vec<PlanOptionalDep<'a>>,
    pub target_variable: Option<&'a str>,
}

/// An optional dependency of [`PlanComponent`], and the option that turns it on.
#[derive(Serialize)]
pub struct PlanOptionalDep<'a> {
    pub default: &'a str,
    pub name: &'a str,
    pub option: &'a str,
}
