//! Prints every fact of the release files compared with the facts derived from the sources
//! (`cargo run -p rocpack-plan --example derived_report`): `=` agree, `+` the release file does
//! not say and the sources fill it in, `!` disagree (the derived value is used), `?` not
//! derivable (the typed value stays).
fn main() {
    let kb = match rocpack_plan::Knowledge::embedded() {
        Ok(kb) => kb,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    for f in &kb.derived {
        let mark = match (&f.derived, f.disagrees()) {
            (None, _) => '?',
            (Some(_), true) => '!',
            (Some(_), false) if f.typed.is_none() => '+',
            (Some(_), false) => '=',
        };
        println!(
            "{mark} {} {} {}: typed {:?}{} derived {:?} ({})",
            f.release,
            f.component,
            f.fact,
            f.typed,
            if f.typed_confirmed {
                " (confirmed)"
            } else {
                ""
            },
            f.derived,
            f.at
        );
    }
}
