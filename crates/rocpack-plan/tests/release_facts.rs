//! Plans that follow from facts read in the components' sources at the release tags
//! (data/derived/, docs/plan-knowledge.md "Derived facts").
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rocpack_plan::{Knowledge, Request, Tool};

fn kb() -> &'static Knowledge {
    Knowledge::embedded().unwrap()
}

/// RCCL 6.0 overwrites its target variables with its default list (rocm-6.0.2 CMakeLists.txt:66-67,
/// FORCE): the plan builds it for that list when a requested target is in it, warns, and leaves it
/// out when none is.
#[test]
fn rccl_6_0_is_planned_for_the_list_it_builds() {
    let plan_for = |gpus: &[&str]| {
        let request = Request {
            gpus: gpus.iter().map(|g| (*g).to_owned()).collect(),
            ..Default::default()
        };
        rocpack_plan::plan(kb(), &request, "6.0", Tool::Cmake).unwrap()
    };
    let plan = plan_for(&["gfx1030", "gfx1151"]);
    let rccl = plan.components.iter().find(|c| c.name == "RCCL").unwrap();
    let targets = rccl.targets.clone().unwrap();
    assert_eq!(targets.len(), 13, "{targets:?}");
    assert!(
        targets.iter().any(|t| t == "gfx90a:xnack+") && !targets.iter().any(|t| t == "gfx1151")
    );
    assert!(
        plan.findings
            .iter()
            .any(|f| f.id == "rccl-6.0-ignores-gpu-targets"),
        "no warning"
    );
    let plan = plan_for(&["gfx1151"]);
    let rccl = plan.components.iter().find(|c| c.name == "RCCL").unwrap();
    assert!(!rccl.is_built());
}
