//! Runs every case of `compat_cases.tsv` (its header documents the format) and reports all
//! failures at once. `COMPAT_PRINT=1 cargo test -p rocpack-amdgpu --test compat -- --nocapture`
//! prints every selection, reason and warnings included.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

use rocpack_amdgpu::TargetId;
use rocpack_amdgpu::compat::{Device, Entry, Policy, Rule, Selection, parse_override, select};

const CASES: &str = include_str!("compat_cases.tsv");

struct Case<'a> {
    line: usize,
    policy: &'a str,
    override_: &'a str,
    device: &'a str,
    entries: &'a str,
    verdict: &'a str,
    entry: &'a str,
    rule: &'a str,
    warn: &'a str,
}

fn cases() -> Vec<Case<'static>> {
    CASES
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(i, l)| {
            let c: Vec<&str> = l.split('\t').collect();
            assert!(
                c.len() >= 9,
                "line {}: {} columns, want 9: {l:?}",
                i + 1,
                c.len()
            );
            Case {
                line: i + 1,
                policy: c[0],
                override_: c[1],
                device: c[2],
                entries: c[3],
                verdict: c[4],
                entry: c[5],
                rule: c[6],
                warn: c[7],
            }
        })
        .collect()
}

/// `gfx10-3-generic@1!z` → target, generic version, compressed.
fn parse_entry(s: &str) -> (TargetId, Option<u8>, bool) {
    let (s, compressed) = match s.strip_suffix("!z") {
        Some(rest) => (rest, true),
        None => (s, false),
    };
    let (target, gv) = match s.split_once('@') {
        Some((t, v)) => (t, Some(v.parse().expect("generic version"))),
        None => (s, None),
    };
    (
        TargetId::parse(target).expect("entry target ID"),
        gv,
        compressed,
    )
}

fn rule_name(r: Rule) -> String {
    // Debug is CamelCase; the table uses the serialised snake_case name.
    let mut out = String::new();
    for (i, ch) in format!("{r:?}").chars().enumerate() {
        if ch.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(ch.to_ascii_lowercase());
        } else {
            out.push(ch);
        }
    }
    out
}

/// Checks one case; `Err` describes every mismatch.
fn run(c: &Case<'_>) -> Result<(), String> {
    let policy: Policy = c.policy.parse().map_err(|e| format!("{e}"))?;
    let device = Device::parse(c.device).map_err(|e| format!("device: {e}"))?;
    let override_ = match c.override_ {
        "-" => None,
        s => match parse_override(s) {
            Ok(v) => Some(v),
            Err(e) if c.verdict == "error" => {
                return if e.to_string().is_empty() {
                    Err("empty error message".into())
                } else {
                    Ok(())
                };
            }
            Err(e) => return Err(format!("override refused: {e}")),
        },
    };
    if c.verdict == "error" {
        return Err(format!("override {:?} was accepted", c.override_));
    }
    let parsed: Vec<(TargetId, Option<u8>, bool)> = match c.entries {
        "-" => Vec::new(),
        s => s.split(',').map(parse_entry).collect(),
    };
    let entries: Vec<Entry<'_>> = parsed
        .iter()
        .map(|(t, gv, z)| Entry {
            target: t,
            generic_version: *gv,
            compressed: *z,
        })
        .collect();
    let got = select(&device, &entries, policy, override_);
    let Some(s) = got else {
        return if c.verdict == "nocode" {
            Ok(())
        } else {
            Err("select returned None (no device code)".into())
        };
    };
    if c.verdict == "nocode" {
        return Err(format!("expected no selection, got {}", describe(&s)));
    }
    let mut problems = Vec::new();
    if s.verdict.to_string() != c.verdict {
        problems.push(format!("verdict {} (want {})", s.verdict, c.verdict));
    }
    let entry = s.entry.map_or_else(|| "-".to_owned(), |i| i.to_string());
    if c.entry != "*" && entry != c.entry {
        problems.push(format!("entry {entry} (want {})", c.entry));
    }
    if c.rule != "-" && rule_name(s.rule) != c.rule {
        problems.push(format!("rule {} (want {})", rule_name(s.rule), c.rule));
    }
    match (c.warn, s.warnings.is_empty()) {
        ("yes", true) => problems.push("no warning (want one)".into()),
        ("no", false) => problems.push(format!("unexpected warnings {:?}", s.warnings)),
        _ => {}
    }
    if s.reason.is_empty() {
        problems.push("empty reason".into());
    }
    if s.entry.is_some() != s.target.is_some() {
        problems.push("entry and target disagree".into());
    }
    if let (Some(i), Some(t)) = (s.entry, &s.target) {
        if parsed.get(i).map(|p| &p.0) != Some(t) {
            problems.push(format!("target {t} is not entry {i}"));
        }
    }
    // A `none` for lack of a match must say why each entry was rejected.
    if s.rule == Rule::NoMatch {
        for i in 0..entries.len().min(12) {
            if !s.reason.contains(&format!("entry {i} (")) {
                problems.push(format!("reason does not explain entry {i}"));
            }
        }
    }
    if std::env::var_os("COMPAT_PRINT").is_some() {
        println!("line {}: {}", c.line, describe(&s));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}; got {}", problems.join(", "), describe(&s)))
    }
}

fn describe(s: &Selection) -> String {
    format!(
        "{} entry {:?} rule {} — {} — warnings {:?}",
        s.verdict,
        s.entry,
        rule_name(s.rule),
        s.reason,
        s.warnings
    )
}

#[test]
fn every_case_in_the_table() {
    let cases = cases();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            run(c).err().map(|e| {
                format!(
                    "line {} [{} {} {} {}]: {e}",
                    c.line, c.policy, c.override_, c.device, c.entries
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn reasons_name_the_rule_and_entry() {
    let device = Device::parse("gfx90a:sramecc+:xnack-").unwrap();
    let plus = TargetId::parse("gfx90a:xnack+").unwrap();
    let s = select(&device, &[Entry::new(&plus)], Policy::Hip, None).unwrap();
    assert!(
        s.reason
            .contains("gfx90a:xnack+) pins xnack+ while the device runs xnack-"),
        "{}",
        s.reason
    );
    let gfx1030 = TargetId::parse("gfx1030").unwrap();
    let device = Device::parse("gfx1031").unwrap();
    let s = select(&device, &[Entry::new(&gfx1030)], Policy::Hip, None).unwrap();
    assert!(s.reason.contains("policy debian"), "{}", s.reason);
    let s = select(
        &device,
        &[Entry::new(&gfx1030).compressed()],
        Policy::Debian,
        None,
    )
    .unwrap();
    assert!(s.reason.contains("compressed"), "{}", s.reason);
}

#[test]
fn override_to_another_family_warns_about_page_faults() {
    let device = Device::parse("gfx1100").unwrap();
    let gfx1030 = TargetId::parse("gfx1030").unwrap();
    let v = parse_override("10.3.0").unwrap();
    let s = select(&device, &[Entry::new(&gfx1030)], Policy::Hip, Some(v)).unwrap();
    assert!(
        s.warnings.iter().any(|w| w.contains("page faults")),
        "{:?}",
        s.warnings
    );
    assert!(
        s.reason.contains("HSA_OVERRIDE_GFX_VERSION=10.3.0"),
        "{}",
        s.reason
    );
}
