//! The hand-written knowledge base (crates/rocpack-plan/data/rocm-*.toml) against the facts
//! derived from the components' sources (data/derived/debian for 6.4, data/derived/upstream for
//! the 6.0/6.2 tags). The knowledge base lays the derived facts over the release files when it
//! loads (rocpack_plan::kb::derived) and keeps every comparison; this test prints them all
//! (`--nocapture`) and fails on a disagreement with a fact a release file states as confirmed (no
//! `confidence` on the fact or its table): such a fact was typed wrong, and must be corrected
//! at its source, not silently replaced.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rocpack_plan::Knowledge;

#[test]
fn knowledge_base_agrees_with_derived_facts() {
    let kb = Knowledge::embedded().unwrap();
    assert!(
        kb.derived.len() > 50,
        "only {} facts compared: are the derived files loaded?",
        kb.derived.len()
    );
    for f in &kb.derived {
        let mark = match (&f.derived, f.disagrees()) {
            (None, _) => "not-derivable",
            (Some(_), true) if f.typed_confirmed => "CONFIRMED-FACT-DISAGREES",
            (Some(_), true) => "replaced",
            (Some(_), false) => "agrees",
        };
        println!(
            "{mark} {} {} {}: typed {:?}, derived {:?} ({})",
            f.release, f.component, f.fact, f.typed, f.derived, f.at
        );
    }
    let bad: Vec<String> = kb
        .derived
        .iter()
        .filter(|f| f.typed_confirmed && f.disagrees())
        .map(|f| {
            format!(
                "{} {} {}: typed {:?}, derived {:?} ({})",
                f.release, f.component, f.fact, f.typed, f.derived, f.at
            )
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{} disagreement(s) with facts the knowledge base states as confirmed:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
