//! Plain CMake: per component, the `-D` arguments to configure it with, and an initial-cache
//! script (`cmake -C <Component>.cmake`) carrying the same entries with their reasons.
//!
//! A component planned for no target carries no target variable (the planner never passes an
//! empty list, see `planner::plan`): it configures with its own default list, and the output
//! says so.

use std::fmt::Write as _;

use super::{
    Emission, Tool, cmake_cache_set, cmake_define, header_comments, one_line, push_comments,
    skip_reason,
};
use crate::kb::DeviceCode;
use crate::model::{ComponentPlan, Plan, SettingOrigin};

pub(super) fn emit(plan: &Plan) -> Emission {
    let head = header_comments(plan, Tool::Cmake);
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
        if c.settings.is_empty() && !planned_for_nothing(c) {
            continue;
        }
        let _ = writeln!(stdout, "# {}", one_line(&c.name));
        let args: Vec<String> = c
            .settings
            .iter()
            .map(|s| cmake_define(&s.name, s.kind, &s.value))
            .collect();
        if planned_for_nothing(c) {
            push_comments(&mut stdout, "", &[empty_list_note(c)]);
        }
        if !args.is_empty() {
            let _ = writeln!(stdout, "{}", args.join(" "));
        }
        if !c.settings.is_empty() {
            files.push((format!("{}.cmake", c.name), cache_script(&head, c)));
        }
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
    if planned_for_nothing(c) {
        about.push(empty_list_note(c));
    }
    push_comments(&mut out, "", &about);
    for s in &c.settings {
        let _ = writeln!(
            out,
            "{}",
            cmake_cache_set(&s.name, &s.value, s.kind, &s.why)
        );
    }
    out
}

fn planned_for_nothing(c: &ComponentPlan) -> bool {
    c.targets.as_ref().is_some_and(Vec::is_empty)
}

/// Why a component planned for no target gets no target variable.
fn empty_list_note(c: &ComponentPlan) -> String {
    // A remedy (rocWMMA 6.0/6.2: ROCWMMA_BUILD_TESTS/SAMPLES=OFF) may already turn them off.
    let remedied = c
        .settings
        .iter()
        .any(|s| matches!(s.origin, SettingOrigin::Remedy { .. }) && s.value == "OFF");
    let clients = match (c.device_code == DeviceCode::HeaderOnly, remedied) {
        (false, _) => "",
        (true, true) => {
            "; its device code is only in its tests and samples, which the settings below turn off"
        }
        (true, false) => {
            "; its device code is only in its tests and samples, which then build for that list: turn them off, or do not build it"
        }
    };
    format!(
        "{}: planned for no target: {} not written (an empty cache entry blocks its default list while the rest of the build goes on); it configures with its own default list{clients}",
        c.name,
        c.target_variable.as_deref().unwrap_or("no target variable")
    )
}
