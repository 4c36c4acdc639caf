//! docs/diagnostics.md lists every finding code of every domain, with the severity a finding of
//! that code has. The codes are read from the program's own tables (`rocpack_finding::codes!`
//! enums), so a code added without a row here, a row for a code that is gone, or a default
//! severity the page does not give fails this test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use rocpack_finding::{Code, Severity};

/// The `| code | severity | meaning |` rows under the heading that ends in "(`domain`)", up to
/// the next heading: code → severity cell.
fn documented(page: &str, domain: &str) -> BTreeMap<String, String> {
    let heading = format!("(`{domain}`)");
    let mut lines = page
        .lines()
        .skip_while(|l| !(l.starts_with('#') && l.ends_with(&heading)));
    assert!(
        lines.next().is_some(),
        "docs/diagnostics.md has no heading ending in {heading}"
    );
    let mut rows = BTreeMap::new();
    for line in lines.take_while(|l| !l.starts_with('#')) {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        let [code, severity, _meaning] = cells.as_slice() else {
            continue;
        };
        let Some(code) = code.strip_prefix('`').and_then(|c| c.strip_suffix('`')) else {
            continue;
        };
        let previous = rows.insert(code.to_owned(), (*severity).to_owned());
        assert!(previous.is_none(), "{domain}: `{code}` is listed twice");
    }
    rows
}

fn check<C: Code>(page: &str) {
    let rows = documented(page, C::DOMAIN);
    for &code in C::all() {
        let name = code.as_str();
        let Some(cell) = rows.get(name) else {
            panic!(
                "docs/diagnostics.md ({}): `{name}` is not listed",
                C::DOMAIN
            );
        };
        let default = code.severity().as_str();
        assert!(
            cell == default || cell.starts_with(&format!("{default} (")),
            "docs/diagnostics.md ({}): `{name}` is documented as {cell:?}; its severity is {default} \
             (a cell may add when it is another: \"{default} (warning when …)\")",
            C::DOMAIN
        );
    }
    for name in rows.keys() {
        assert!(
            C::parse(name).is_some(),
            "docs/diagnostics.md ({}): `{name}` is listed but the program has no such code",
            C::DOMAIN
        );
    }
}

fn page() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/diagnostics.md");
    std::fs::read_to_string(&path).unwrap()
}

#[test]
fn every_reading_code_is_documented() {
    check::<rocpack_offload::ReadCode>(&page());
}

#[test]
fn every_verify_code_is_documented() {
    check::<rocpack_verify::Code>(&page());
}

#[test]
fn the_cmake_check_reports_verify_codes_by_their_names_and_severities() {
    for &c in rocpack_cmake::CmakeCode::ALL {
        let v = rocpack_verify::Code::from(c);
        assert_eq!(v.as_str(), c.as_str());
        assert_eq!(v.severity(), c.severity(), "{c}");
    }
}

#[test]
fn every_plan_code_is_documented_and_no_pitfall_shares_one() {
    check::<rocpack_plan::PlanCode>(&page());
    let kb = rocpack_plan::Knowledge::embedded().unwrap();
    for p in &kb.pitfalls {
        assert!(
            rocpack_plan::PlanCode::parse(&p.id).is_none(),
            "pitfall {:?} has the id of a planner code",
            p.id
        );
    }
}

#[test]
fn every_device_code_is_documented() {
    check::<rocpack_devices::DeviceCode>(&page());
}

#[test]
fn a_missing_row_or_a_wrong_severity_fails() {
    let page = page();
    let without = page.replace("| `fatbin-garbage` |", "| `fatbin-garbag` |");
    assert!(std::panic::catch_unwind(|| check::<rocpack_offload::ReadCode>(&without)).is_err());
    let wrong = page.replace(
        "| `too-many-items` | error |",
        "| `too-many-items` | warning |",
    );
    assert!(std::panic::catch_unwind(|| check::<rocpack_offload::ReadCode>(&wrong)).is_err());
    assert_eq!(
        rocpack_offload::ReadCode::FatbinGarbage.severity(),
        Severity::Warning
    );
}
