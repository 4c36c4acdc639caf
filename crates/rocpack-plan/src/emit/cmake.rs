//! Plain CMake: per component, the `-D` arguments to configure it with, and an initial-cache
//! script (`cmake -C <Component>.cmake`) carrying the same entries with their reasons.
//!
//! An empty target list is never written. A cache entry, even an empty one, is already defined
//! when the component's CMakeLists runs, so its `set(... CACHE ...)` default is not applied: with
//! rocWMMA 6.2 (CMakeLists.txt:95-99 at rocm-6.2.0) `AMDGPU_TARGETS=""` stays empty, hip::device
//! gets no `--offload-arch`, and its tests and samples (on by default) are still configured, 36
//! executables (docs/plan.md, "Checked by the engines"). Left unset, the component falls back to
//! its own default list, which is what "no planned target" can honestly ask of it.

use std::fmt::Write as _;

use super::{
    Emission, Format, cmake_cache_set, cmake_define, header_comments, one_line, push_comments,
    skip_reason,
};
use crate::kb::DeviceCode;
use crate::model::{ComponentPlan, Plan, Setting};

pub(super) fn emit(plan: &Plan) -> Emission {
    let head = header_comments(plan, Format::Cmake);
    let mut stdout = head.clone();
    let mut files = Vec::new();
    for c in &plan.components {
        if !c.is_built() {
            push_comments(
                &mut stdout,
                "",
                &[format!("{}: not built: {}", c.name, skip_reason(c))],
            );
            continue;
        }
        if c.settings.is_empty() {
            continue;
        }
        let _ = writeln!(stdout, "# {}", one_line(&c.name));
        let args: Vec<String> = written(c)
            .map(|s| cmake_define(&s.name, s.kind, &s.value))
            .collect();
        if args.is_empty() {
            push_comments(&mut stdout, "", &[empty_list_note(c)]);
        } else {
            let _ = writeln!(stdout, "{}", args.join(" "));
        }
        files.push((format!("{}.cmake", c.name), cache_script(&head, c)));
    }
    Emission { stdout, files }
}

/// The initial cache of one component.
fn cache_script(head: &str, c: &ComponentPlan) -> String {
    let mut out = head.to_owned();
    let mut about = vec![format!(
        "{}: load with `cmake -C {}.cmake` when configuring it",
        c.name, c.name
    )];
    if let Some(t) = &c.targets {
        about.push(if t.is_empty() {
            "Built for: no target".to_owned()
        } else {
            format!("Built for: {}", t.join(" "))
        });
    }
    for e in &c.excluded {
        about.push(format!("Not for {}: {}", e.target, e.reason));
    }
    if c.targets.as_ref().is_some_and(Vec::is_empty) {
        about.push(empty_list_note(c));
    }
    push_comments(&mut out, "", &about);
    for s in written(c) {
        let _ = writeln!(
            out,
            "{}",
            cmake_cache_set(&s.name, &s.value, s.kind, &s.why)
        );
    }
    out
}

/// The settings written: all but target variables that would be set to an empty list.
fn written(c: &ComponentPlan) -> impl Iterator<Item = &Setting> {
    c.settings
        .iter()
        .filter(move |s| !(s.value.is_empty() && c.is_target_setting(s)))
}

/// Why a component planned for no target gets no target variable.
fn empty_list_note(c: &ComponentPlan) -> String {
    let vars: Vec<&str> = c
        .settings
        .iter()
        .filter(|s| s.value.is_empty() && c.is_target_setting(s))
        .map(|s| s.name.as_str())
        .collect();
    let clients = if c.device_code == DeviceCode::HeaderOnly {
        "; its device code is only in its tests and samples, which then build for that list: turn them off, or do not build it"
    } else {
        ""
    };
    format!(
        "{}: planned for no target: {} not written (an empty cache entry blocks its default list while the rest of the build goes on); it configures with its own default list{clients}",
        c.name,
        if vars.is_empty() {
            "no target variable".to_owned()
        } else {
            vars.join(", ")
        }
    )
}
