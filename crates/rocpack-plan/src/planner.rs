//! The planner: from requested targets and components to per-component targets, settings and
//! findings, with the consequences carried along the dependency graph.
//!
//! Every component is built for the requested targets it supports (after dropping what the
//! release's compiler or runtime cannot use). Then, until nothing changes, the pitfalls of the
//! knowledge base are evaluated against the plan, and for each one that holds the first remedy
//! that applies is taken; a component that is not built turns its consumers' optional
//! dependency off, or is not built either. What the user asked for explicitly (`--components`,
//! `--set`) is never undone by a remedy: such a conflict stays an open error.

use std::collections::{BTreeMap, BTreeSet};

use rocpack_amdgpu::target::TargetId;

use crate::kb::{
    DeviceCode, Knowledge, Pitfall, Predicate, Release, ReleaseComponent, Remedy, Severity,
    Supported, TargetSet,
};
use crate::model::{
    Addition, ComponentPlan, Exclusion, FamilyCoverage, FamilyExpansion, Finding, FindingStatus,
    OptionOverride, Plan, PlanCode, Request, SCHEMA, Setting, SettingKind, SettingOrigin, Status,
    Summary, Tool, processor, processors, unverified,
};

/// A request the knowledge base cannot plan.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("no knowledge of ROCm {0} (known: {1})")]
    UnknownRelease(String, String),
    #[error("{0}")]
    BadTarget(String),
    #[error("unknown family {name:?} for ROCm {release} (known: {known})")]
    UnknownFamily {
        name: String,
        release: String,
        known: String,
    },
    #[error("unknown component {0:?} (see `rocpack plan --list-components`)")]
    UnknownComponent(String),
    #[error("{component} is not part of ROCm {release}")]
    ComponentNotInRelease { component: String, release: String },
    #[error("nothing to plan: give --gpu or --family")]
    NoTargets,
    #[error("--set {0:?}: expected COMPONENT:OPTION=VALUE")]
    BadSet(String),
}

/// Parses `--set COMPONENT:OPTION=VALUE`, matching the component name like `--components`.
///
/// # Errors
/// A malformed argument or an unknown component.
pub fn parse_set(kb: &Knowledge, arg: &str) -> Result<OptionOverride, PlanError> {
    let (component, rest) = arg
        .split_once(':')
        .ok_or_else(|| PlanError::BadSet(arg.to_owned()))?;
    let (option, value) = rest
        .split_once('=')
        .ok_or_else(|| PlanError::BadSet(arg.to_owned()))?;
    if option.trim().is_empty() {
        return Err(PlanError::BadSet(arg.to_owned()));
    }
    let component = kb
        .component_named(component)
        .ok_or_else(|| PlanError::UnknownComponent(component.to_owned()))?;
    Ok(OptionOverride {
        component: component.to_owned(),
        option: option.trim().to_owned(),
        value: value.trim().to_owned(),
    })
}

/// The families a release accepts: TheRock's (its snapshot) and Debian's lists.
pub fn families(kb: &Knowledge, release: &str) -> Vec<FamilyExpansion> {
    let mut out = Vec::new();
    if let Some(rel) = kb.releases.get(release) {
        if let Some(snap) = kb.snapshot(&rel.release.therock_snapshot) {
            for (name, targets) in &snap.families {
                out.push(FamilyExpansion {
                    family: name.clone(),
                    targets: targets.clone(),
                    defined_by: format!("TheRock ({})", snap.id),
                });
            }
        }
    }
    for r in kb.releases.values() {
        let Some(d) = &r.debian else { continue };
        let lists = std::iter::once((&d.suite, &d.targets)).chain(d.other_lists.iter());
        for (suite, targets) in lists {
            out.push(FamilyExpansion {
                family: format!("debian-{suite}"),
                targets: targets.clone(),
                defined_by: format!("Debian pkg-rocm-tools build-targets/{suite}"),
            });
        }
    }
    out
}

/// Checks one requested target ID against the catalogue.
fn requested_target(id: &str) -> Result<String, PlanError> {
    let t = TargetId::parse(id.trim()).map_err(|e| PlanError::BadTarget(e.to_string()))?;
    let Some(gpu) = rocpack_amdgpu::catalogue::find(&t.processor) else {
        return Err(PlanError::BadTarget(format!(
            "{id:?} is not a GPU target rocpack knows (see `rocpack gpus`)"
        )));
    };
    // An alias (e.g. "tahiti") becomes the LLVM processor name.
    let t = TargetId {
        processor: gpu.name.clone(),
        ..t
    };
    t.validate()
        .map_err(|e| PlanError::BadTarget(e.to_string()))?;
    Ok(t.to_string())
}

/// Why a component is not built.
#[derive(Debug, Clone)]
struct Skip {
    reason: String,
}

/// The mutable state the pitfall loop works on.
#[derive(Debug, Default, Clone)]
struct State {
    /// (component, option) → (value, why, where it comes from).
    options: BTreeMap<(String, String), (String, String, SettingOrigin)>,
    skipped: BTreeMap<String, Skip>,
    /// component → extra variables to pass with the planned list.
    variables: BTreeMap<String, Vec<(String, String)>>,
    /// component → targets added, with why.
    added: BTreeMap<String, Vec<Addition>>,
    /// (pitfall id, component) → what was done.
    resolved: BTreeMap<(String, String), String>,
}

/// Inputs fixed for one plan.
struct Context<'a> {
    kb: &'a Knowledge,
    rel: &'a Release,
    tool: Tool,
    /// Requested targets (canonical target IDs).
    targets: Vec<String>,
    /// Components named with `--components` (protected from skip remedies).
    explicit: BTreeSet<String>,
    /// All components of the release in scope (`--components` closure or all).
    all: bool,
    /// Per component with a target table: requested ∩ usable targets and the exclusions. It
    /// depends only on the request, so it is computed once ([`Context::base_targets`]).
    base: BTreeMap<String, (Vec<String>, Vec<Exclusion>)>,
}

impl Context<'_> {
    fn component(&self, name: &str) -> Option<&ReleaseComponent> {
        self.rel.components.get(name)
    }

    fn option(&self, st: &State, component: &str, option: &str) -> String {
        if let Some((v, _, _)) = st.options.get(&(component.to_owned(), option.to_owned())) {
            return v.clone();
        }
        self.component(component)
            .and_then(|c| c.option_default(option))
            .unwrap_or_default()
            .to_owned()
    }

    /// The components of the plan in build order: the request and its dependencies under the
    /// current options.
    fn closure(&self, st: &State) -> Vec<String> {
        let mut want: BTreeSet<String> = if self.all {
            self.rel.release.build_order.iter().cloned().collect()
        } else {
            self.explicit.clone()
        };
        let mut stack: Vec<String> = want.iter().cloned().collect();
        while let Some(c) = stack.pop() {
            let Some(rc) = self.component(&c) else {
                continue;
            };
            for d in self.deps(st, &c, rc) {
                if want.insert(d.clone()) {
                    stack.push(d);
                }
            }
        }
        self.rel
            .release
            .build_order
            .iter()
            .filter(|c| want.contains(*c))
            .cloned()
            .collect()
    }

    /// Build dependencies under the current options.
    fn deps(&self, st: &State, name: &str, rc: &ReleaseComponent) -> Vec<String> {
        let mut deps = rc.deps.clone();
        for od in &rc.optional_deps {
            if self.option(st, name, &od.option) == "ON" && !deps.contains(&od.name) {
                deps.push(od.name.clone());
            }
        }
        deps
    }

    /// Requested targets this component can be built for, and the ones it cannot, with why:
    /// what the request alone decides, before the plan adds any target.
    fn base_targets(&self, name: &str) -> Option<(Vec<String>, Vec<Exclusion>)> {
        let t = self.component(name)?.targets.as_ref()?;
        let compiler = &self.rel.release.compiler;
        let snap = self.kb.snapshot(&self.rel.release.therock_snapshot);
        let therock_excluded = snap
            .filter(|_| self.tool == Tool::Therock)
            .and_then(|s| s.exclude.get(self.kb.therock_name(name)));
        let mut planned: Vec<String> = Vec::new();
        let mut excluded = Vec::new();
        for target in &self.targets {
            let proc_ = processor(target);
            let generic = proc_.ends_with("-generic");
            let (reason, sources) = if compiler.absent_targets.iter().any(|a| a == proc_) {
                let then = if t.unknown.as_deref() == Some("error") {
                    format!(
                        "{name} checks only its own default list, so the target would reach the compiler and stop the build"
                    )
                } else {
                    "rocm_check_target_ids would drop it without an error".to_owned()
                };
                (
                    format!(
                        "the ROCm {} compiler does not know {proc_}; {then}",
                        self.rel.release.version
                    ),
                    compiler.sources.clone(),
                )
            } else if generic && !self.rel.release.hip_generic_fallback {
                (
                    format!(
                        "the ROCm {} HIP runtime cannot load generic code objects (first in 6.4); list the processors instead",
                        self.rel.release.version
                    ),
                    self.rel.release.sources.clone(),
                )
            } else if let Supported::List(list) = t.supported() {
                if list.iter().any(|s| processor(s) == proc_) {
                    (String::new(), Vec::new())
                } else {
                    let how = t
                        .supported_confidence
                        .as_deref()
                        .map(|c| format!(" ({})", unverified(c)))
                        .unwrap_or_default();
                    (
                        format!(
                            "not among the targets {name} supports in ROCm {}{how}",
                            self.rel.release.version
                        ),
                        t.sources.clone(),
                    )
                }
            } else {
                (String::new(), Vec::new())
            };
            let (reason, sources) = match (reason.is_empty(), therock_excluded) {
                (true, Some(ex)) if ex.iter().any(|e| e == proc_) => (
                    format!(
                        "TheRock excludes {proc_} from {} (EXCLUDE_TARGET_PROJECTS, snapshot {})",
                        self.kb.therock_name(name),
                        self.rel.release.therock_snapshot
                    ),
                    snap.map(|s| s.sources.clone()).unwrap_or_default(),
                ),
                _ => (reason, sources),
            };
            if reason.is_empty() {
                let t_id = if t.features.as_deref() == Some("stripped") {
                    proc_.to_owned()
                } else {
                    target.clone()
                };
                if !planned.contains(&t_id) {
                    planned.push(t_id);
                }
            } else {
                excluded.push(Exclusion {
                    loses: self.loses(name, target),
                    target: target.clone(),
                    reason,
                    sources,
                });
            }
        }
        // A project that overwrites every target variable (RCCL 6.0) is built for its own
        // default list, whatever is requested: plan what it will build, so that the plan, its
        // settings and `plan verify` say what the build does. Its compiler check drops what the
        // release's compiler does not know.
        if t.ignored && !t.default.is_empty() && !planned.is_empty() {
            planned = t
                .default
                .iter()
                .filter(|d| !compiler.absent_targets.iter().any(|a| a == processor(d)))
                .cloned()
                .collect();
        }
        Some((planned, excluded))
    }

    /// The requested targets the component cannot be built for.
    fn excluded(&self, name: &str) -> &[Exclusion] {
        self.base.get(name).map_or(&[], |(_, e)| e.as_slice())
    }

    /// The targets the component is built for: its base targets, then what the plan added.
    fn planned(&self, st: &State, name: &str) -> Vec<String> {
        let mut planned = self
            .base
            .get(name)
            .map(|(p, _)| p.clone())
            .unwrap_or_default();
        for a in st.added.get(name).into_iter().flatten() {
            if !planned.contains(&a.target) {
                planned.push(a.target.clone());
            }
        }
        planned
    }

    /// What a user of `target` loses when `name` is built without it.
    fn loses(&self, name: &str, target: &str) -> String {
        let info = self.kb.components.get(name);
        let affects_tests = self
            .component(name)
            .and_then(|c| c.targets.as_ref())
            .and_then(|t| t.affects.as_deref())
            == Some("tests-and-samples");
        match info.map(|i| i.device_code) {
            _ if affects_tests => format!(
                "only {name}'s own tests and samples lack {target}; its installed headers are compiled by each consumer for the consumer's targets"
            ),
            Some(DeviceCode::Compiled) => {
                let users: Vec<&str> = self
                    .rel
                    .release
                    .build_order
                    .iter()
                    .filter(|c| {
                        self.component(c).is_some_and(|rc| {
                            rc.deps.iter().any(|d| d == name)
                                || rc.optional_deps.iter().any(|d| d.name == name)
                        })
                    })
                    .map(String::as_str)
                    .collect();
                let mut s = format!(
                    "{name} has no device code for {target}: its functions fail there (hipErrorNoBinaryForGpu or 'invalid device function')"
                );
                if !users.is_empty() {
                    s.push_str(&format!(
                        ", and so do the parts of {} that call it",
                        users.join(", ")
                    ));
                }
                s
            }
            Some(DeviceCode::Runtime) => format!(
                "{name}'s ahead-of-time kernels for {target} (run-time compiled kernels still work)"
            ),
            _ => format!("{name}'s support for {target}"),
        }
    }

    /// The variables the plan passes the target list in, with why.
    fn target_variables(&self, st: &State, name: &str) -> Vec<(String, String)> {
        let Some(t) = self.component(name).and_then(|c| c.targets.as_ref()) else {
            return Vec::new();
        };
        let v = &self.rel.release.version;
        let mut vars = vec![(
            t.variable.clone(),
            match &t.variable_confidence {
                Some(c) => format!(
                    "the target variable {name} reads first in ROCm {v} ({})",
                    unverified(c)
                ),
                None => format!("the target variable {name} reads first in ROCm {v}"),
            },
        )];
        for a in &t.also {
            vars.push((
                a.clone(),
                format!("{name} also reads it; set to the same list"),
            ));
        }
        for common in ["GPU_TARGETS", "AMDGPU_TARGETS"] {
            if !vars.iter().any(|(n, _)| n == common) {
                vars.push((
                    common.to_owned(),
                    "hip-config turns it into --offload-arch; the same list everywhere, as TheRock passes it".to_owned(),
                ));
            }
        }
        for (n, why) in st.variables.get(name).into_iter().flatten() {
            if !vars.iter().any(|(x, _)| x == n) {
                vars.push((n.clone(), why.clone()));
            }
        }
        vars
    }

    fn is_built(&self, st: &State, plan: &[String], name: &str) -> bool {
        plan.iter().any(|c| c == name) && !st.skipped.contains_key(name)
    }

    /// Whether a pitfall's condition holds for `this`.
    fn holds(&self, st: &State, plan: &[String], p: &Predicate, this: &str) -> bool {
        let requested = || self.targets.iter().map(|t| processor(t));
        match p {
            Predicate::All(l) => l.iter().all(|q| self.holds(st, plan, q, this)),
            Predicate::Any(l) => l.iter().any(|q| self.holds(st, plan, q, this)),
            Predicate::Not(q) => !self.holds(st, plan, q, this),
            Predicate::Option {
                component,
                name,
                is,
            } => self.option(st, component.resolve(this), name) == *is,
            Predicate::OptionPassed {
                component,
                name,
                is,
            } => st
                .options
                .get(&(component.resolve(this).to_owned(), name.clone()))
                .is_some_and(|(v, _, _)| v == is),
            Predicate::VariableSet { component, name } => {
                let c = component.resolve(this);
                self.target_variables(st, c).iter().any(|(n, _)| n == name)
                    && !self.planned(st, c).is_empty()
            }
            Predicate::VariableEmpty { component, name } => {
                let c = component.resolve(this);
                self.target_variables(st, c).iter().any(|(n, _)| n == name)
                    && self.planned(st, c).is_empty()
            }
            Predicate::RequestedAnyOf(l) => requested().any(|t| l.iter().any(|x| x == t)),
            Predicate::RequestedNoneOf(l) => !requested().any(|t| l.iter().any(|x| x == t)),
            Predicate::RequestedAnyOutside(l) => requested().any(|t| !l.iter().any(|x| x == t)),
            Predicate::RequestedAnyOutsideSupported(c) => {
                let c = c.resolve(this);
                match self
                    .component(c)
                    .and_then(|rc| rc.targets.as_ref())
                    .map(|t| t.supported())
                {
                    Some(Supported::List(list)) => {
                        requested().any(|t| !list.iter().any(|s| processor(s) == t))
                    }
                    _ => false,
                }
            }
            Predicate::EffectiveEmpty(c) => {
                let c = c.resolve(this);
                // requested ∩ supported, before anything the plan adds.
                self.base.get(c).is_some_and(|(p, _)| p.is_empty())
            }
            Predicate::RequestedUnknownToCompiler => requested().any(|t| {
                self.rel
                    .release
                    .compiler
                    .absent_targets
                    .iter()
                    .any(|a| a == t)
            }),
            Predicate::ComponentPlanned(c) => self.is_built(st, plan, c),
            Predicate::TargetUnknown(how) => self
                .component(this)
                .and_then(|c| c.targets.as_ref())
                .is_some_and(|t| t.unknown.as_deref() == Some(how.as_str())),
            Predicate::Emitter(e) => e == self.tool.as_str(),
        }
    }

    /// Whether the release has what the remedy acts on: an option of a component it declares,
    /// a component it has. A remedy of another release is never offered.
    fn offered(&self, r: &Remedy, this: &str) -> bool {
        let Some(c) = r.component(this) else {
            return true;
        };
        let Some(rc) = self.component(c) else {
            return false;
        };
        match r {
            Remedy::SetOption { option, .. } | Remedy::UnsetOption { option, .. } => {
                rc.option_default(option).is_some()
            }
            _ => true,
        }
    }

    /// Takes the first remedy that applies and changes something; `None` when none does.
    fn remedy(
        &self,
        st: &mut State,
        plan: &[String],
        pitfall: &Pitfall,
        this: &str,
    ) -> Option<String> {
        for r in &pitfall.remedies {
            let Some(c) = r.component(this) else { continue };
            if !self.is_built(st, plan, c) {
                continue;
            }
            let user_set = |st: &State, o: &str| {
                st.options
                    .get(&(c.to_owned(), o.to_owned()))
                    .is_some_and(|(_, _, origin)| *origin == SettingOrigin::User)
            };
            let declared = |o: &str| {
                self.component(c)
                    .and_then(|rc| rc.option_default(o))
                    .is_some()
            };
            let why = format!("{} ({})", pitfall.id, pitfall.message_head());
            let origin = || SettingOrigin::Remedy {
                pitfall: pitfall.id.clone(),
            };
            match r {
                Remedy::SetOption { option, value, .. } => {
                    // Passing a value that is also the default still counts: it pins the option
                    // against a recipe or packager that changes it.
                    let passed = st
                        .options
                        .get(&(c.to_owned(), option.clone()))
                        .is_some_and(|(v, _, _)| v == value);
                    if user_set(st, option) || !declared(option) || passed {
                        continue;
                    }
                    st.options.insert(
                        (c.to_owned(), option.clone()),
                        (value.clone(), why, origin()),
                    );
                    return Some(format!("{c}: {option}={value}"));
                }
                Remedy::UnsetOption { option, .. } => {
                    if user_set(st, option)
                        || !declared(option)
                        || self.option(st, c, option) == "OFF"
                    {
                        continue;
                    }
                    st.options.insert(
                        (c.to_owned(), option.clone()),
                        ("OFF".to_owned(), why, origin()),
                    );
                    return Some(format!("{c}: {option}=OFF"));
                }
                Remedy::SetVariable {
                    variable, value, ..
                } => {
                    let reads = self
                        .target_variables(st, c)
                        .iter()
                        .any(|(n, _)| n == variable);
                    if reads || !declared(variable) || value != "planned" {
                        continue;
                    }
                    st.variables
                        .entry(c.to_owned())
                        .or_default()
                        .push((variable.clone(), why));
                    return Some(format!("{c}: {variable} set to the planned list"));
                }
                Remedy::DropUnsupportedTargets { .. } => {
                    let (planned, excluded) = (self.planned(st, c), self.excluded(c));
                    if excluded.is_empty() {
                        continue;
                    }
                    let kept = if planned.is_empty() {
                        "nothing".to_owned()
                    } else {
                        planned.join(" ")
                    };
                    let dropped: Vec<&str> = excluded.iter().map(|e| e.target.as_str()).collect();
                    return Some(format!("{c} is passed {kept}; not {}", dropped.join(" ")));
                }
                Remedy::SkipComponent { .. } => {
                    if self.explicit.contains(c) {
                        continue;
                    }
                    st.skipped.insert(c.to_owned(), Skip { reason: why });
                    return Some(format!("{c} is not built"));
                }
                Remedy::AddTarget { target, .. } => {
                    if st
                        .added
                        .get(c)
                        .is_some_and(|a| a.iter().any(|x| &x.target == target))
                    {
                        continue;
                    }
                    st.added.entry(c.to_owned()).or_default().push(Addition {
                        target: target.clone(),
                        reason: why,
                    });
                    return Some(format!("{c} is also built for {target}"));
                }
                Remedy::Note { .. } => {}
            }
        }
        None
    }
}

impl Pitfall {
    /// The first sentence of the message, for `why` fields.
    fn message_head(&self) -> &str {
        let m = self.message.as_str();
        m.find(". ").or_else(|| m.find(": ")).map_or(m, |i| &m[..i])
    }
}

/// Plans `request` for ROCm `release` and `tool`.
///
/// # Errors
/// An unknown release, target, family or component: nothing is planned then.
pub fn plan(
    kb: &Knowledge,
    request: &Request,
    release: &str,
    tool: Tool,
) -> Result<Plan, PlanError> {
    let rel = kb.releases.get(release).ok_or_else(|| {
        PlanError::UnknownRelease(
            release.to_owned(),
            kb.releases.keys().cloned().collect::<Vec<_>>().join(", "),
        )
    })?;

    // Targets: --gpu then --family, in order, without duplicates.
    let mut targets: Vec<String> = Vec::new();
    let mut expansions = Vec::new();
    for g in &request.gpus {
        for one in g.split([',', ';']).filter(|s| !s.trim().is_empty()) {
            let t = requested_target(one)?;
            if !targets.contains(&t) {
                targets.push(t);
            }
        }
    }
    let known = families(kb, release);
    for f in &request.families {
        let fam = if let Some(fam) = known.iter().find(|k| k.family.eq_ignore_ascii_case(f)) {
            fam.clone()
        } else if let Ok(t) = requested_target(f) {
            // TheRock: every target is also a family of its own name.
            FamilyExpansion {
                family: f.clone(),
                targets: vec![t],
                defined_by: "the target itself".to_owned(),
            }
        } else {
            return Err(PlanError::UnknownFamily {
                name: f.clone(),
                release: release.to_owned(),
                known: known
                    .iter()
                    .map(|k| k.family.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        for t in &fam.targets {
            let t = requested_target(t)?;
            if !targets.contains(&t) {
                targets.push(t);
            }
        }
        expansions.push(fam);
    }
    if targets.is_empty() {
        return Err(PlanError::NoTargets);
    }

    let mut explicit = BTreeSet::new();
    if let Some(list) = &request.components {
        for c in list {
            let name = kb
                .component_named(c)
                .ok_or_else(|| PlanError::UnknownComponent(c.clone()))?;
            if !rel.components.contains_key(name) {
                return Err(PlanError::ComponentNotInRelease {
                    component: name.to_owned(),
                    release: release.to_owned(),
                });
            }
            explicit.insert(name.to_owned());
        }
    }
    let mut cx = Context {
        kb,
        rel,
        tool,
        targets,
        explicit,
        all: request.components.is_none(),
        base: BTreeMap::new(),
    };
    cx.base = rel
        .release
        .build_order
        .iter()
        .filter_map(|c| Some((c.clone(), cx.base_targets(c)?)))
        .collect();

    let mut st = State::default();
    for o in &request.set {
        st.options.insert(
            (o.component.clone(), o.option.clone()),
            (o.value.clone(), "--set".to_owned(), SettingOrigin::User),
        );
    }
    if tool == Tool::Therock {
        therock_rules(&cx, &mut st);
    }

    // Until nothing changes: skip what has nothing to build, carry skips to consumers, take the
    // first applicable remedy of the first pitfall that holds. Each step changes the state
    // monotonically (options only move away from defaults once, skips are never undone), so the
    // bound is never reached on a consistent knowledge base.
    let mut extra_findings: BTreeMap<(String, String), Finding> = BTreeMap::new();
    for _ in 0..256 {
        let comps = cx.closure(&st);
        if skip_empty(&cx, &mut st, &comps, &mut extra_findings)
            || propagate_skips(&cx, &mut st, &comps, &mut extra_findings)
        {
            continue;
        }
        let mut changed = false;
        'pitfalls: for c in &comps {
            if st.skipped.contains_key(c) {
                continue;
            }
            for p in kb
                .pitfalls
                .iter()
                .filter(|p| p.releases.iter().any(|r| r == release))
            {
                if !p.components.iter().any(|x| x == c) {
                    continue;
                }
                let key = (p.id.clone(), c.clone());
                if st.resolved.contains_key(&key) || !cx.holds(&st, &comps, &p.when, c) {
                    continue;
                }
                if let Some(done) = cx.remedy(&mut st, &comps, p, c) {
                    st.resolved.insert(key, done);
                    changed = true;
                    break 'pitfalls;
                }
            }
        }
        if !changed {
            break;
        }
    }

    Ok(assemble(&cx, &st, request, expansions, extra_findings))
}

/// TheRock's own rules for its sub-projects: the CK gate and the default list of a project that
/// exclusion left empty.
fn therock_rules(cx: &Context<'_>, st: &mut State) {
    let Some(snap) = cx.kb.snapshot(&cx.rel.release.therock_snapshot) else {
        return;
    };
    if let Some(gate) = &snap.ck_gate {
        let outside: Vec<&str> = cx
            .targets
            .iter()
            .map(|t| processor(t))
            .filter(|t| !gate.supported.iter().any(|s| s == t))
            .collect();
        if !outside.is_empty() {
            let why = format!(
                "TheRock's CK gate ({}): {} outside its composable_kernel list",
                snap.id,
                outside.join(" ")
            );
            for c in &gate.disables {
                st.skipped.insert(
                    c.clone(),
                    Skip {
                        reason: why.clone(),
                    },
                );
            }
            for (option, value) in &gate.sets {
                for (name, rc) in &cx.rel.components {
                    if rc.option_default(option).is_some() {
                        st.options.insert(
                            (name.clone(), option.clone()),
                            (value.clone(), why.clone(), SettingOrigin::Tool),
                        );
                    }
                }
            }
        }
    }
    for (project, defaults) in &snap.default_gpu_targets {
        let name = cx.kb.component_named(project).unwrap_or(project);
        if cx.planned(st, name).is_empty() && cx.component(name).is_some() {
            for t in defaults {
                st.added.entry(name.to_owned()).or_default().push(Addition {
                    target: t.clone(),
                    reason: format!(
                        "TheRock builds {project} for its DEFAULT_GPU_TARGETS when exclusion empties its list (snapshot {})",
                        snap.id
                    ),
                });
            }
        }
    }
}

/// A component with compiled device code and no target left is not built (or, when it was
/// asked for by name, is an open error). Returns whether the state changed.
fn skip_empty(
    cx: &Context<'_>,
    st: &mut State,
    comps: &[String],
    findings: &mut BTreeMap<(String, String), Finding>,
) -> bool {
    for c in comps {
        if st.skipped.contains_key(c)
            || cx.kb.components.get(c).map(|i| i.device_code) != Some(DeviceCode::Compiled)
        {
            continue;
        }
        let Some(t) = cx.component(c).and_then(|rc| rc.targets.as_ref()) else {
            continue;
        };
        if !cx.planned(st, c).is_empty() {
            continue;
        }
        let supported = match t.supported() {
            Supported::List(l) => l.join(" "),
            Supported::Any => "any the compiler knows".to_owned(),
        };
        let asked: Vec<&str> = cx.excluded(c).iter().map(|e| e.target.as_str()).collect();
        let message = format!(
            "{c} supports none of the requested targets ({}); it supports {supported}",
            asked.join(" ")
        );
        let key = (PlanCode::NoSupportedTarget.as_str().to_owned(), c.clone());
        if cx.explicit.contains(c) {
            findings.entry(key).or_insert_with(|| Finding {
                id: PlanCode::NoSupportedTarget.as_str().to_owned(),
                severity: PlanCode::NoSupportedTarget.severity(),
                component: c.clone(),
                effect: "configure-error".to_owned(),
                message: format!(
                    "{message}; it was asked for by name, so the plan cannot build it"
                ),
                status: FindingStatus::Open,
                resolution: None,
                remedies: vec![
                    "request a target it supports, or leave it out of --components".to_owned(),
                ],
                sources: t.sources.clone(),
                confidence: t.supported_confidence.clone(),
            });
            continue;
        }
        st.skipped.insert(
            c.clone(),
            Skip {
                reason: message.clone(),
            },
        );
        findings.insert(
            key,
            Finding {
                id: PlanCode::NoSupportedTarget.as_str().to_owned(),
                severity: Severity::Warning,
                component: c.clone(),
                effect: "component-disabled".to_owned(),
                message,
                status: FindingStatus::Resolved,
                resolution: Some(format!("{c} is not built")),
                remedies: Vec::new(),
                sources: t.sources.clone(),
                confidence: t.supported_confidence.clone(),
            },
        );
        return true;
    }
    false
}

/// Consumers of a component that is not built: an optional dependency is turned off; a hard one
/// means the consumer is not built either. Returns whether the state changed.
fn propagate_skips(
    cx: &Context<'_>,
    st: &mut State,
    comps: &[String],
    findings: &mut BTreeMap<(String, String), Finding>,
) -> bool {
    for c in comps {
        if st.skipped.contains_key(c) {
            continue;
        }
        let Some(rc) = cx.component(c) else { continue };
        for od in &rc.optional_deps {
            let Some(skip) = st.skipped.get(&od.name) else {
                continue;
            };
            if cx.option(st, c, &od.option) != "ON" {
                continue;
            }
            let key = (c.clone(), od.option.clone());
            if st
                .options
                .get(&key)
                .is_some_and(|(_, _, origin)| *origin == SettingOrigin::User)
            {
                findings
                    .entry((PlanCode::DependencyNotBuilt.as_str().to_owned(), c.clone()))
                    .or_insert_with(|| Finding {
                        id: PlanCode::DependencyNotBuilt.as_str().to_owned(),
                        severity: PlanCode::DependencyNotBuilt.severity(),
                        component: c.clone(),
                        effect: "configure-error".to_owned(),
                        message: format!(
                            "{c} is set to use {} ({}=ON by --set), which is not built: {}",
                            od.name, od.option, skip.reason
                        ),
                        status: FindingStatus::Open,
                        resolution: None,
                        remedies: vec![format!("drop --set {c}:{}=ON", od.option)],
                        sources: rc.sources.clone(),
                        confidence: None,
                    });
                continue;
            }
            let why = format!("{} is not built", od.name);
            st.options.insert(
                key,
                ("OFF".to_owned(), why.clone(), SettingOrigin::Dependency),
            );
            findings.insert(
                (
                    PlanCode::DependencyTurnedOff.as_str().to_owned(),
                    format!("{c}/{}", od.option),
                ),
                Finding {
                    id: PlanCode::DependencyTurnedOff.as_str().to_owned(),
                    severity: PlanCode::DependencyTurnedOff.severity(),
                    component: c.clone(),
                    effect: "component-disabled".to_owned(),
                    message: format!(
                        "{c} is configured without {} ({}=OFF) because {why}",
                        od.name, od.option
                    ),
                    status: FindingStatus::Resolved,
                    resolution: Some(format!("{c}: {}=OFF", od.option)),
                    remedies: Vec::new(),
                    sources: rc.sources.clone(),
                    confidence: rc.confidence.clone(),
                },
            );
            return true;
        }
        for d in &rc.deps {
            if !st.skipped.contains_key(d) {
                continue;
            }
            let reason = format!("needs {d}, which is not built");
            if cx.explicit.contains(c) {
                findings
                    .entry((PlanCode::DependencyNotBuilt.as_str().to_owned(), c.clone()))
                    .or_insert_with(|| Finding {
                        id: PlanCode::DependencyNotBuilt.as_str().to_owned(),
                        severity: PlanCode::DependencyNotBuilt.severity(),
                        component: c.clone(),
                        effect: "configure-error".to_owned(),
                        message: format!("{c} {reason}"),
                        status: FindingStatus::Open,
                        resolution: None,
                        remedies: vec![format!("request a target {d} supports")],
                        sources: rc.sources.clone(),
                        confidence: None,
                    });
                continue;
            }
            st.skipped.insert(c.clone(), Skip { reason });
            return true;
        }
    }
    false
}

/// The plan from the final state.
fn assemble(
    cx: &Context<'_>,
    st: &State,
    request: &Request,
    families: Vec<FamilyExpansion>,
    extra: BTreeMap<(String, String), Finding>,
) -> Plan {
    let comps = cx.closure(st);
    let mut out = Vec::new();
    for name in &comps {
        let Some(rc) = cx.component(name) else {
            continue;
        };
        let info = cx.kb.components.get(name);
        let device_code = info.map_or(DeviceCode::None, |i| i.device_code);
        let built = !st.skipped.contains_key(name);
        let why = if cx.explicit.contains(name) || cx.all {
            "requested".to_owned()
        } else {
            let users: Vec<&str> = comps
                .iter()
                .filter(|c| {
                    cx.component(c)
                        .is_some_and(|x| cx.deps(st, c, x).contains(name))
                })
                .map(String::as_str)
                .collect();
            format!("needed by {}", users.join(", "))
        };
        let t = rc.targets.as_ref();
        let (planned, excluded) = (cx.planned(st, name), cx.excluded(name).to_vec());
        let mut settings = Vec::new();
        if built {
            // An empty target list is never passed. A cache entry, even an empty one, is
            // already defined when the component's CMakeLists runs, so its own
            // `set(... CACHE ...)` default is not applied: with rocWMMA 6.2
            // (CMakeLists.txt:95-99 at rocm-6.2.0) `AMDGPU_TARGETS=""` stays empty, hip::device
            // gets no --offload-arch, and its tests and samples are still configured
            // (docs/plan.md, "Checked by the engines"). Unset, the component falls back to its
            // own default list, which is all "no planned target" can honestly ask of it.
            if t.is_some() && !planned.is_empty() {
                for (var, why) in cx.target_variables(st, name) {
                    settings.push(Setting {
                        name: var,
                        value: planned.join(";"),
                        kind: SettingKind::String,
                        why,
                        origin: SettingOrigin::Targets,
                    });
                }
            }
            let mut opts: Vec<(String, String, String, SettingOrigin)> = Vec::new();
            for od in &rc.optional_deps {
                let v = cx.option(st, name, &od.option);
                let (why, origin) = match st.options.get(&(name.clone(), od.option.clone())) {
                    Some((_, why, origin)) => (why.clone(), origin.clone()),
                    None => (
                        format!("{} default: build with {}", od.default, od.name),
                        SettingOrigin::Default,
                    ),
                };
                opts.push((od.option.clone(), v, why, origin));
            }
            for ((c, o), (v, why, origin)) in &st.options {
                if c == name && !opts.iter().any(|(n, ..)| n == o) {
                    opts.push((o.clone(), v.clone(), why.clone(), origin.clone()));
                }
            }
            for (o, v, why, origin) in opts {
                let kind = if matches!(v.as_str(), "ON" | "OFF") {
                    SettingKind::Bool
                } else {
                    SettingKind::String
                };
                settings.push(Setting {
                    name: o,
                    value: v,
                    kind,
                    why,
                    origin,
                });
            }
        }
        let kernel_families = rc
            .kernel_families
            .iter()
            .map(|kf| {
                let (with, without): (Vec<String>, Vec<String>) =
                    planned.iter().cloned().partition(|p| match &kf.targets {
                        TargetSet::Keyword(_) => true,
                        TargetSet::List(l) => l.iter().any(|x| x == processor(p)),
                    });
                let enabled = kf.family != "dl" || cx.option(st, name, "DL_KERNELS") == "ON";
                FamilyCoverage {
                    family: kf.family.clone(),
                    targets: if enabled { with.clone() } else { Vec::new() },
                    without: if enabled { without } else { planned.clone() },
                    requires: kf.requires.clone(),
                    enabled,
                }
            })
            .collect();
        let expect_device_code = if !built {
            Vec::new()
        } else {
            let follows = t.and_then(|t| t.follows.as_deref());
            match (device_code, follows) {
                (DeviceCode::Compiled, _) if t.and_then(|t| t.affects.as_deref()).is_none() => {
                    processors(&planned)
                }
                (DeviceCode::Runtime, Some(f)) => {
                    let linked = rc
                        .optional_deps
                        .iter()
                        .any(|d| d.name == f && cx.option(st, name, &d.option) == "ON");
                    if linked && comps.contains(&f.to_owned()) && !st.skipped.contains_key(f) {
                        processors(&cx.planned(st, f))
                    } else {
                        Vec::new()
                    }
                }
                _ => Vec::new(),
            }
        };
        let confidence = t.and_then(|t| {
            t.supported_confidence
                .clone()
                .or_else(|| t.confidence.clone())
                .or_else(|| t.variable_confidence.clone())
        });
        out.push(ComponentPlan {
            name: name.clone(),
            status: if built { Status::Build } else { Status::Skip },
            why,
            skip_reason: st.skipped.get(name).map(|s| s.reason.clone()),
            device_code,
            deps: cx.deps(st, name, rc),
            target_variable: t.map(|t| t.variable.clone()),
            targets: t.map(|_| planned.clone()),
            excluded,
            added: st.added.get(name).cloned().unwrap_or_default(),
            kernel_families,
            settings,
            expect_device_code,
            confidence,
            sources: rc.sources.clone(),
            derived: cx
                .kb
                .derived
                .iter()
                .filter(|f| f.release == cx.rel.release.version && f.component == *name)
                .filter(|f| f.derived.is_some())
                .map(|f| format!("{}: {}", f.fact, f.at))
                .collect(),
        });
    }

    // Findings: resolved pitfalls, pitfalls that still hold, planner findings; by build order.
    let mut findings: Vec<Finding> = Vec::new();
    let release = &cx.rel.release.version;
    for p in cx
        .kb
        .pitfalls
        .iter()
        .filter(|p| p.releases.iter().any(|r| r == release))
    {
        for c in &p.components {
            let key = (p.id.clone(), c.clone());
            let in_plan = comps.contains(c);
            let (status, resolution) = if let Some(done) = st.resolved.get(&key) {
                (FindingStatus::Resolved, Some(done.clone()))
            } else if in_plan && cx.holds(st, &comps, &p.when, c) {
                match st.skipped.get(c) {
                    Some(s) => (
                        FindingStatus::Resolved,
                        Some(format!("{c} is not built: {}", s.reason)),
                    ),
                    None => (FindingStatus::Open, None),
                }
            } else {
                continue;
            };
            findings.push(Finding {
                id: p.id.clone(),
                severity: p.severity,
                component: c.clone(),
                effect: p.effect.clone(),
                message: p.message.clone(),
                status,
                resolution,
                remedies: p
                    .remedies
                    .iter()
                    .filter(|r| cx.offered(r, c))
                    .map(remedy_text)
                    .collect(),
                sources: p.sources.clone(),
                confidence: p.confidence.clone(),
            });
        }
    }
    // An option the knowledge base does not declare is passed as given; say so, it may be a typo.
    for o in &request.set {
        let declared = cx
            .component(&o.component)
            .is_some_and(|rc| rc.option_default(&o.option).is_some())
            || cx
                .target_variables(st, &o.component)
                .iter()
                .any(|(n, _)| *n == o.option);
        if !declared && comps.contains(&o.component) {
            findings.push(Finding {
                id: PlanCode::UnknownOption.as_str().to_owned(),
                severity: PlanCode::UnknownOption.severity(),
                component: o.component.clone(),
                effect: "variable-ignored".to_owned(),
                message: format!(
                    "--set {}:{}={}: the knowledge base declares no option {} for {} in ROCm {}; it is passed as given",
                    o.component, o.option, o.value, o.option, o.component, release
                ),
                status: FindingStatus::Open,
                resolution: None,
                remedies: vec!["check the spelling against the project's CMakeLists.txt".to_owned()],
                sources: Vec::new(),
                confidence: None,
            });
        }
    }
    findings.extend(engine_lacks_release(cx, &out));
    // A component's own pitfall says more than the planner's generic "nothing to build".
    let covered: BTreeSet<String> = findings.iter().map(|f| f.component.clone()).collect();
    findings.extend(extra.into_values().filter(|f| {
        !(f.id == PlanCode::NoSupportedTarget.as_str() && covered.contains(&f.component))
    }));
    let order = |c: &str| {
        cx.rel
            .release
            .build_order
            .iter()
            .position(|x| x == c)
            .unwrap_or(usize::MAX)
    };
    findings.sort_by_key(|f| order(&f.component));

    let summary = Summary {
        components: out.len(),
        built: out.iter().filter(|c| c.is_built()).count(),
        skipped: out.iter().filter(|c| !c.is_built()).count(),
        errors: findings
            .iter()
            .filter(|f| f.status == FindingStatus::Open && f.severity == Severity::Error)
            .count(),
        warnings: findings
            .iter()
            .filter(|f| f.status == FindingStatus::Open && f.severity == Severity::Warning)
            .count(),
        resolved: findings
            .iter()
            .filter(|f| f.status == FindingStatus::Resolved)
            .count(),
    };
    Plan {
        schema: SCHEMA.to_owned(),
        rocpack: env!("CARGO_PKG_VERSION").to_owned(),
        release: release.clone(),
        point_releases: cx.rel.release.point_releases.clone(),
        tool: cx.tool,
        request: request.clone(),
        targets: cx.targets.clone(),
        families,
        components: out,
        findings,
        summary,
    }
}

/// The components the plan builds that the tool's own package collection has no package for at
/// this release (`engines/<tool>.toml`), as one finding naming the nearest releases it has.
fn engine_lacks_release(cx: &Context<'_>, comps: &[ComponentPlan]) -> Option<Finding> {
    let engine = cx.kb.engines.get(cx.tool.as_str())?;
    let release = cx.rel.release.version.as_str();
    let lacking: Vec<(&str, &crate::kb::EngineComponent)> = comps
        .iter()
        .filter(|c| c.is_built())
        .filter_map(|c| Some((c.name.as_str(), engine.components.get(&c.name)?)))
        .filter(|(_, e)| !e.has(release))
        .collect();
    let (first, _) = lacking.first()?;
    let mut nearest: BTreeSet<&str> = BTreeSet::new();
    let listed: Vec<String> = lacking
        .iter()
        .map(|(name, e)| {
            let near = e.nearest(release);
            nearest.extend(near.iter().copied());
            let near = if near.is_empty() {
                "no release at all".to_owned()
            } else {
                format!("nearest {}", near.join(", "))
            };
            format!("{name} ({}: {near})", e.package)
        })
        .collect();
    // Each repository once: at its commit, or how many commits it was read at.
    let mut by_repo: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in &engine.engine.repos {
        by_repo.entry(&r.repo).or_default().push(&r.commit);
    }
    let repos: Vec<String> = by_repo
        .iter()
        .map(|(repo, commits)| match commits.as_slice() {
            [one] => format!("{repo}@{}", one.get(..12).unwrap_or(one)),
            many => format!("{repo} at {} commits", many.len()),
        })
        .collect();
    let mut nearest: Vec<&str> = nearest.into_iter().collect();
    nearest.sort_by_key(|r| crate::kb::release_key(r));
    let built = comps.iter().filter(|c| c.is_built()).count();
    let tool = cx.tool.as_str();
    let repos = repos.join(", ");
    let message = if lacking.len() == built {
        format!(
            "{tool}'s packages ({repos}) have no ROCm {release}: none of the {built} components this plan builds is there (nearest release lines: {}).",
            nearest.join(", ")
        )
    } else {
        format!(
            "{tool}'s packages ({repos}) cannot build ROCm {release} of {} of the {built} components this plan builds (no such version, or none that resolves): {}.",
            lacking.len(),
            listed.join("; ")
        )
    };
    Some(Finding {
        id: PlanCode::EngineLacksRelease.as_str().to_owned(),
        severity: PlanCode::EngineLacksRelease.severity(),
        component: (*first).to_owned(),
        effect: "no-package".to_owned(),
        message,
        status: FindingStatus::Open,
        resolution: None,
        remedies: vec![format!(
            "plan for a release {} has: {}; or write the missing packages yourself",
            cx.tool.as_str(),
            nearest.join(", ")
        )],
        sources: Vec::new(),
        confidence: None,
    })
}

/// A remedy as one line of text.
pub fn remedy_text(r: &Remedy) -> String {
    match r {
        Remedy::SetOption {
            component,
            option,
            value,
        } => format!("set {component}: {option}={value}"),
        Remedy::UnsetOption { component, option } => format!("unset {component}: {option}"),
        Remedy::SetVariable {
            component,
            variable,
            value,
        } => format!("set {component}: {variable}={value}"),
        Remedy::DropUnsupportedTargets { component } => {
            format!("pass {component} only the targets it supports")
        }
        Remedy::SkipComponent { component } => format!("do not build {component}"),
        Remedy::AddTarget { component, target } => format!("also build {component} for {target}"),
        Remedy::Note { text } => text.clone(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The embedded knowledge base with one more file.
    fn kb_with(name: &'static str, text: &'static str) -> Knowledge {
        let mut files: Vec<(&str, &str)> = crate::kb::FILES.to_vec();
        files.retain(|(n, _)| *n != name);
        files.push((name, text));
        Knowledge::from_files(&files).unwrap()
    }

    fn gfx1030(kb: &Knowledge, release: &str, tool: Tool) -> Plan {
        let request = Request {
            gpus: vec!["gfx1030".into()],
            ..Request::default()
        };
        plan(kb, &request, release, tool).unwrap()
    }

    #[test]
    fn a_tool_without_the_release_is_an_open_error_naming_the_nearest() {
        let kb = kb_with(
            "engines/gentoo.toml",
            r#"
            [engine]
            tool = "gentoo"
            repos = [{ repo = "gentoo/gentoo", commit = "0123456789abcdef0123456789abcdef01234567" }]
            script = "scripts/engines/gentoo/extract.py"
            [components.rocBLAS]
            package = "sci-libs/rocBLAS"
            releases = ["6.1", "6.3", "6.4"]
            [components.rocRAND]
            package = "sci-libs/rocRAND"
            releases = ["6.1", "6.2", "6.4"]
            "#,
        );
        let p = gfx1030(&kb, "6.2", Tool::Gentoo);
        let f: Vec<&Finding> = p
            .findings
            .iter()
            .filter(|f| f.id == PlanCode::EngineLacksRelease.as_str())
            .collect();
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].status, FindingStatus::Open);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].message
                .contains("rocBLAS (sci-libs/rocBLAS: nearest 6.1, 6.3)"),
            "{}",
            f[0].message
        );
        assert!(!f[0].message.contains("rocRAND"), "{}", f[0].message);
        assert!(f[0].message.contains("gentoo/gentoo@0123456789ab"));
        assert_eq!(
            f[0].remedies[0],
            "plan for a release gentoo has: 6.1, 6.3; or write the missing packages yourself"
        );
        assert!(p.summary.errors >= 1);
        // Other tools, and a release the tool has, are not concerned.
        assert!(
            !gfx1030(&kb, "6.2", Tool::Cmake)
                .findings
                .iter()
                .any(|f| f.id == PlanCode::EngineLacksRelease.as_str())
        );
        assert!(
            !gfx1030(&kb, "6.4", Tool::Gentoo)
                .findings
                .iter()
                .any(|f| f.id == PlanCode::EngineLacksRelease.as_str())
        );
    }

    #[test]
    fn settings_say_where_they_come_from_and_no_empty_list_is_passed() {
        let kb = Knowledge::embedded().unwrap();
        let p = gfx1030(kb, "6.2", Tool::Cmake);
        let by_name = |c: &str| p.components.iter().find(|x| x.name == c).unwrap();
        // rocWMMA 6.2 supports no RDNA2 processor: planned for nothing, no target entry at all.
        let wmma = by_name("rocWMMA");
        assert_eq!(wmma.targets.as_deref(), Some(&[][..]));
        assert!(!wmma.settings.iter().any(|s| wmma.is_target_setting(s)));
        let ck = by_name("composable_kernel");
        let origin = |c: &ComponentPlan, n: &str| {
            c.settings
                .iter()
                .find(|s| s.name == n)
                .unwrap()
                .origin
                .clone()
        };
        assert_eq!(origin(ck, "GPU_TARGETS"), SettingOrigin::Targets);
        assert_eq!(
            origin(ck, "INSTANCES_ONLY"),
            SettingOrigin::Remedy {
                pitfall: "ck-instances-only-ignores-gpu-targets".into()
            }
        );
        let request = Request {
            gpus: vec!["gfx1030".into()],
            set: vec![parse_set(kb, "ck:INSTANCES_ONLY=OFF").unwrap()],
            ..Request::default()
        };
        let p = plan(kb, &request, "6.2", Tool::Cmake).unwrap();
        let ck = p
            .components
            .iter()
            .find(|x| x.name == "composable_kernel")
            .unwrap();
        assert_eq!(origin(ck, "INSTANCES_ONLY"), SettingOrigin::User);
        assert!(SettingOrigin::User.pins() && !SettingOrigin::Default.pins());
    }

    #[test]
    fn guards_pin_an_option_unless_the_user_sets_it() {
        let kb = Knowledge::embedded().unwrap();
        let p = gfx1030(kb, "6.2", Tool::Cmake);
        let ck = p
            .components
            .iter()
            .find(|c| c.name == "composable_kernel")
            .unwrap();
        assert!(
            ck.settings
                .iter()
                .any(|s| s.name == "INSTANCES_ONLY" && s.value == "OFF")
        );
        let f = p
            .findings
            .iter()
            .find(|f| f.id == "ck-instances-only-ignores-gpu-targets")
            .unwrap();
        assert_eq!(f.status, FindingStatus::Resolved);

        let request = Request {
            gpus: vec!["gfx1030".into()],
            set: vec![parse_set(kb, "ck:INSTANCES_ONLY=ON").unwrap()],
            ..Request::default()
        };
        let p = plan(kb, &request, "6.2", Tool::Cmake).unwrap();
        let f = p
            .findings
            .iter()
            .find(|f| f.id == "ck-instances-only-ignores-gpu-targets")
            .unwrap();
        assert_eq!(f.status, FindingStatus::Open);
        assert_eq!(f.remedies, ["set composable_kernel: INSTANCES_ONLY=OFF"]);
        // 6.0's CK does not override the list: nothing to guard against there.
        let p = gfx1030(kb, "6.0", Tool::Cmake);
        assert!(
            !p.findings
                .iter()
                .any(|f| f.id == "ck-instances-only-ignores-gpu-targets")
        );
    }
}

/// The seed case of issue 13: a NixOS packager moving gfx1030 (RX 6800) from ROCm 6.0.2 to 6.2.2
/// met four failures; each is flagged before any build, with a remedy 6.2 has, and 6.0 is not
/// claimed to behave like 6.2.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod seed_case {
    use super::*;

    fn all(release: &str, tool: Tool) -> Plan {
        let kb = Knowledge::embedded().unwrap();
        let request = Request {
            gpus: vec!["gfx1030".into()],
            ..Request::default()
        };
        plan(kb, &request, release, tool).unwrap()
    }

    fn setting<'a>(p: &'a Plan, component: &str, name: &str) -> Option<&'a str> {
        p.components
            .iter()
            .find(|c| c.name == component)?
            .settings
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.value.as_str())
    }

    fn finding<'a>(p: &'a Plan, id: &str) -> Option<&'a Finding> {
        p.findings.iter().find(|f| f.id == id)
    }

    #[test]
    fn the_four_failures_of_6_2_are_flagged_and_resolved_in_every_tool() {
        for tool in [
            Tool::Cmake,
            Tool::Spack,
            Tool::Gentoo,
            Tool::Nix,
            Tool::Therock,
        ] {
            let p = all("6.2", tool);
            let t = tool.as_str();
            // 1. INSTANCES_ONLY replaces GPU_TARGETS by CK's default list.
            let f = finding(&p, "ck-instances-only-ignores-gpu-targets").unwrap();
            assert_eq!(f.status, FindingStatus::Resolved, "{t}");
            let ck_built = p
                .components
                .iter()
                .any(|c| c.name == "composable_kernel" && c.is_built());
            assert!(ck_built, "{t}");
            if ck_built {
                assert_eq!(
                    setting(&p, "composable_kernel", "INSTANCES_ONLY"),
                    Some("OFF"),
                    "{t}"
                );
            }
            // 2. No conv/contraction instances for gfx1030: MIOpen without CK (under TheRock its own
            // CK gate has already turned MIOpen's use of CK off).
            if tool != Tool::Therock {
                let f = finding(&p, "ck-no-conv-contraction-instances-for-miopen-6.2").unwrap();
                assert_eq!(f.status, FindingStatus::Resolved, "{t}");
            }
            assert_eq!(
                setting(&p, "MIOpen", "MIOPEN_USE_COMPOSABLEKERNEL"),
                Some("OFF"),
                "{t}"
            );
            assert!(
                !p.components
                    .iter()
                    .find(|c| c.name == "MIOpen")
                    .unwrap()
                    .deps
                    .contains(&"composable_kernel".to_owned()),
                "{t}"
            );
            // 3. rocMLIR's static library leaves LLVMInitializeX86* undefined in libMIOpen.so.
            let f = finding(&p, "rocmlir-static-llvm-x86-undefined").unwrap();
            assert_eq!(f.status, FindingStatus::Resolved, "{t}");
            assert_eq!(setting(&p, "MIOpen", "MIOPEN_USE_MLIR"), Some("OFF"), "{t}");
            // 4. MIGraphX includes ck/host headers that a CK release never installs.
            {
                let f = finding(&p, "migraphx-needs-ck-jit-library").unwrap();
                assert_eq!(f.status, FindingStatus::Resolved, "{t}");
            }
            assert_eq!(
                setting(&p, "MIGraphX", "MIGRAPHX_USE_COMPOSABLEKERNEL"),
                Some("OFF"),
                "{t}"
            );
        }
    }

    #[test]
    fn six_zero_gets_its_own_rules_and_no_remedy_it_lacks() {
        let p = all("6.0", Tool::Cmake);
        // CK 6.0 does not override GPU_TARGETS, and builds one device_operations for any list.
        assert!(finding(&p, "ck-instances-only-ignores-gpu-targets").is_none());
        assert!(finding(&p, "ck-no-conv-contraction-instances-for-miopen-6.2").is_none());
        assert!(finding(&p, "ck-no-conv-instances-for-target-list").is_none());
        // MIGraphX 6.0 needs CK's jit_library with no option to avoid it: an open error whose
        // remedies never offer 6.2's MIGRAPHX_USE_COMPOSABLEKERNEL.
        assert!(finding(&p, "migraphx-needs-ck-jit-library").is_none());
        let f = finding(&p, "migraphx-6.0-requires-ck-jit-library").unwrap();
        assert_eq!(f.status, FindingStatus::Open);
        assert!(
            f.remedies.iter().all(|r| !r.starts_with("set ")),
            "{:?}",
            f.remedies
        );
        assert_eq!(
            setting(&p, "MIGraphX", "MIGRAPHX_USE_COMPOSABLEKERNEL"),
            None
        );
        assert!(
            p.findings
                .iter()
                .flat_map(|f| &f.remedies)
                .all(|r| !r.contains("set MIGraphX: MIGRAPHX_USE_COMPOSABLEKERNEL"))
        );
        assert_eq!(p.summary.errors, 1);
    }
}
