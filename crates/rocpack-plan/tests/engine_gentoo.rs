//! Gentoo: every emitted `make.conf` and `package.use/rocm` checked against ::gentoo's own
//! metadata, as Portage would read them. The facts are data/engines/gentoo.toml, written by
//! scripts/engines/gentoo/extract.py from Gentoo's metadata cache (IUSE with rocm.eclass's
//! `amdgpu_targets_*`, REQUIRED_USE, dependencies) and from the ebuilds' `mycmakeargs` (which
//! CMake option a USE flag sets, which the ebuild fixes). For each request the test computes the
//! USE flags Portage gives every package the plan builds (IUSE defaults, the profile, make.conf
//! with AMDGPU_TARGETS replacing the defaults, package.use: config.regenerate's layers) and
//! requires that
//! - REQUIRED_USE holds (evaluated exactly: `||`, `^^`, `??`, `flag? ( )`, `!flag? ( )`, groups,
//!   EAPI 8's empty-group rules, a flag outside IUSE an error);
//! - the enabled `amdgpu_targets_*` are the planned targets the ebuild declares, and every planned
//!   target it does not declare is named in a comment;
//! - every option the ebuild takes from a USE flag gets the planned value (the plan's setting, else
//!   the release default), and every option it fixes to another value is said to be NOT as
//!   planned;
//! - no enabled dependency pulls in a package the output says not to emerge, and USE
//!   dependencies hold;
//! - a package ::gentoo has no ebuild of at the release is said to have none.
//!   `scripts/engines/gentoo/run.sh` feeds the same output to real Portage (developer harness).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use rocpack_plan::Tool;
use rocpack_plan::emit::emit;
use rocpack_plan::model::Plan;
use rocpack_plan::{Knowledge, Request};
use serde::Deserialize;

const ENGINE: &str = include_str!("../data/engines/gentoo.toml");

/// Issue 13's requests (a)-(c), gfx1030 on the nearest line Gentoo has, a CK-capable 7.1 plan, a
/// target only the newer 6.4 ebuilds declare, and the 7.0 line.
const REQUESTS: &[(&str, &str, &[&str])] = &[
    ("a", "6.2", &["gfx1030"]),
    ("b", "6.4", &["gfx1100", "gfx90a"]),
    ("c", "7.1", &["gfx1151", "gfx1201"]),
    ("d", "6.4", &["gfx1030"]),
    ("e", "7.1", &["gfx90a", "gfx942"]),
    ("f", "6.4", &["gfx1151"]),
    ("g", "7.0", &["gfx1151", "gfx1201"]),
    ("h", "7.0", &["gfx1030"]),
];

#[derive(Deserialize)]
struct Engine {
    components: BTreeMap<String, EngineComponent>,
    facts: Facts,
}

#[derive(Deserialize)]
struct EngineComponent {
    package: String,
    releases: Vec<String>,
}

#[derive(Deserialize)]
struct Facts {
    profile: Profile,
    ebuild: Vec<Ebuild>,
}

#[derive(Deserialize)]
struct Profile {
    use_expand: Vec<String>,
    #[serde(rename = "use")]
    flags: Vec<String>,
}

#[derive(Deserialize)]
struct Ebuild {
    package: String,
    version: String,
    release: String,
    iuse: Vec<String>,
    amdgpu_targets: Vec<String>,
    required_use: String,
    deps: Vec<Dep>,
    #[serde(default)]
    cmake_usex: Vec<Usex>,
    #[serde(default)]
    cmake_fixed: Vec<Fixed>,
}

#[derive(Deserialize)]
struct Dep {
    atom: String,
    package: String,
    when: Vec<String>,
    any_of: bool,
}

#[derive(Deserialize)]
struct Usex {
    option: String,
    flag: String,
}

#[derive(Deserialize)]
struct Fixed {
    option: String,
    value: String,
}

impl Ebuild {
    fn iuse_names(&self) -> BTreeSet<&str> {
        self.iuse
            .iter()
            .map(|f| f.trim_start_matches(['+', '-']))
            .collect()
    }
}

fn engine() -> Engine {
    toml::from_str(ENGINE).expect("data/engines/gentoo.toml parses")
}

fn kb() -> &'static Knowledge {
    Knowledge::embedded().unwrap()
}

/// The newest ebuild of `package` in the release line.
fn ebuild_for<'a>(e: &'a Engine, package: &str, release: &str) -> Option<&'a Ebuild> {
    e.facts
        .ebuild
        .iter()
        .filter(|x| x.package == package && x.release == release)
        .max_by_key(|x| version_key(&x.version))
}

fn version_key(v: &str) -> (Vec<u32>, u32) {
    let (base, rev) = v.split_once("-r").unwrap_or((v, "0"));
    (
        base.split('.').map(|p| p.parse().unwrap_or(0)).collect(),
        rev.parse().unwrap_or(0),
    )
}

// ---- REQUIRED_USE: Portage's check_required_use, EAPI 8 -------------------------------------

#[derive(Debug)]
enum Node {
    Flag {
        name: String,
        negated: bool,
    },
    /// `||`, `^^`, `??`, `flag?`/`!flag?` or a plain `( )` group.
    Group {
        op: Op,
        children: Vec<Node>,
    },
}

#[derive(Debug)]
enum Op {
    AnyOf,
    ExactlyOne,
    AtMostOne,
    AllOf,
    If { flag: String, negated: bool },
}

fn parse_required_use(s: &str) -> Result<Vec<Node>, String> {
    let tokens: Vec<&str> = s.split_whitespace().collect();
    let mut pos = 0;
    let nodes = parse_seq(&tokens, &mut pos)?;
    if pos != tokens.len() {
        return Err(format!("unexpected ')' at token {pos} of {s:?}"));
    }
    Ok(nodes)
}

fn parse_seq(t: &[&str], pos: &mut usize) -> Result<Vec<Node>, String> {
    let mut out = Vec::new();
    while let Some(&tok) = t.get(*pos) {
        if tok == ")" {
            break;
        }
        *pos += 1;
        let op = match tok {
            "||" => Some(Op::AnyOf),
            "^^" => Some(Op::ExactlyOne),
            "??" => Some(Op::AtMostOne),
            "(" => {
                *pos -= 1;
                Some(Op::AllOf)
            }
            _ if tok.ends_with('?') => {
                let f = &tok[..tok.len() - 1];
                let (negated, flag) = f.strip_prefix('!').map_or((false, f), |x| (true, x));
                if flag.is_empty() {
                    return Err(format!("empty conditional flag in {tok:?}"));
                }
                Some(Op::If {
                    flag: flag.to_owned(),
                    negated,
                })
            }
            _ => None,
        };
        match op {
            None => {
                let (negated, name) = tok.strip_prefix('!').map_or((false, tok), |x| (true, x));
                if name.is_empty() || name.contains(['(', ')', '?']) {
                    return Err(format!("bad flag {tok:?}"));
                }
                out.push(Node::Flag {
                    name: name.to_owned(),
                    negated,
                });
            }
            Some(op) => {
                if t.get(*pos) != Some(&"(") {
                    return Err(format!("{tok:?} not followed by '('"));
                }
                *pos += 1;
                let children = parse_seq(t, pos)?;
                if t.get(*pos) != Some(&")") {
                    return Err("unclosed '('".to_owned());
                }
                *pos += 1;
                out.push(Node::Group { op, children });
            }
        }
    }
    Ok(out)
}

/// Portage's evaluation; a flag outside IUSE is an error, as `is_active` raises.
fn eval(nodes: &[Node], use_: &BTreeSet<String>, iuse: &BTreeSet<&str>) -> Result<bool, String> {
    let mut all = true;
    for n in nodes {
        all &= eval_node(n, use_, iuse)?;
    }
    Ok(all)
}

fn active(
    flag: &str,
    negated: bool,
    use_: &BTreeSet<String>,
    iuse: &BTreeSet<&str>,
) -> Result<bool, String> {
    if !iuse.contains(flag) {
        return Err(format!("USE flag '{flag}' is not in IUSE"));
    }
    Ok(use_.contains(flag) != negated)
}

fn eval_node(n: &Node, use_: &BTreeSet<String>, iuse: &BTreeSet<&str>) -> Result<bool, String> {
    match n {
        Node::Flag { name, negated } => active(name, *negated, use_, iuse),
        Node::Group { op, children } => {
            let vals = children
                .iter()
                .map(|c| eval_node(c, use_, iuse))
                .collect::<Result<Vec<bool>, String>>()?;
            let n_true = vals.iter().filter(|v| **v).count();
            Ok(match op {
                // EAPI >= 7: an empty || or ^^ group is false, an empty ?? true.
                Op::AnyOf => n_true > 0,
                Op::ExactlyOne => n_true == 1,
                Op::AtMostOne => n_true <= 1,
                Op::AllOf => n_true == vals.len(),
                Op::If { flag, negated } => {
                    !active(flag, *negated, use_, iuse)? || n_true == vals.len()
                }
            })
        }
    }
}

// ---- USE dependencies (PMS 8.3.4) ------------------------------------------------------------

/// Whether `[...]` of an atom holds for the dependency's USE, given the depending package's USE.
fn use_dep_holds(
    atom: &str,
    parent: &BTreeSet<String>,
    dep_use: &BTreeSet<String>,
    dep_iuse: &BTreeSet<&str>,
) -> Result<bool, String> {
    let Some(start) = atom.find('[') else {
        return Ok(true);
    };
    let inner = atom[start + 1..].trim_end_matches(']');
    for item in inner.split(',') {
        let (rest, suffix) = match item.strip_suffix('?') {
            Some(r) => (r, Some('?')),
            None => item
                .strip_suffix('=')
                .map_or((item, None), |r| (r, Some('='))),
        };
        let (rest, default) = match (rest.strip_suffix("(+)"), rest.strip_suffix("(-)")) {
            (Some(r), _) => (r, Some(true)),
            (_, Some(r)) => (r, Some(false)),
            _ => (rest, None),
        };
        let (neg, flag) = match (rest.strip_prefix('!'), rest.strip_prefix('-')) {
            (Some(f), _) | (_, Some(f)) => (true, f),
            _ => (false, rest),
        };
        let on = if dep_iuse.contains(flag) {
            dep_use.contains(flag)
        } else {
            match default {
                Some(d) => d,
                None => return Err(format!("{atom}: '{flag}' not in the dependency's IUSE")),
            }
        };
        let p = parent.contains(flag);
        let ok = match (suffix, neg) {
            (None, false) => on,
            (None, true) => !on,
            (Some('?'), false) => !p || on,
            (Some('?'), true) => p || !on,
            (Some('='), false) => on == p,
            (Some('='), true) => on != p,
            _ => return Err(format!("{atom}: cannot read '{item}'")),
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

// ---- the emitted files, read as Portage reads them ------------------------------------------

/// `NAME="value"` assignments of make.conf (last one wins), values unescaped.
fn make_conf_vars(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (name, value) = line
            .split_once('=')
            .expect("make.conf line is NAME=\"value\"");
        let v = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .expect("make.conf value in double quotes");
        let mut s = String::new();
        let mut chars = v.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                s.extend(chars.next());
            } else {
                s.push(c);
            }
        }
        out.insert(name.to_owned(), s);
    }
    out
}

/// package.use lines for `atom`, as USE tokens (`AMDGPU_TARGETS: -* a` -> `-amdgpu_targets_*
/// amdgpu_targets_a`).
fn package_use_tokens(text: &str, atom: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        if words.next() != Some(atom) {
            continue;
        }
        let mut prefix = String::new();
        for w in words {
            if let Some(var) = w.strip_suffix(':') {
                prefix = format!("{}_", var.to_ascii_lowercase());
                continue;
            }
            let (neg, v) = w.strip_prefix('-').map_or(("", w), |v| ("-", v));
            out.push(format!("{neg}{prefix}{v}"));
        }
    }
    out
}

/// The USE Portage gives `eb`: IUSE defaults, the profile, make.conf, package.use, then IUSE.
fn effective_use(
    eb: &Ebuild,
    profile: &Profile,
    make_conf: &BTreeMap<String, String>,
    package_use: &str,
) -> BTreeSet<String> {
    let mut flags: BTreeSet<String> = eb
        .iuse
        .iter()
        .filter_map(|f| f.strip_prefix('+'))
        .map(str::to_owned)
        .collect();
    flags.extend(profile.flags.iter().cloned());
    for var in &profile.use_expand {
        if let Some(v) = make_conf.get(var) {
            // A USE_EXPAND variable is not incremental: make.conf replaces the lower layers.
            let p = format!("{}_", var.to_ascii_lowercase());
            flags.retain(|f| !f.starts_with(&p));
            for x in v.split_whitespace() {
                match x.strip_prefix('-') {
                    Some(x) => flags.remove(&format!("{p}{x}")),
                    None => flags.insert(format!("{p}{x}")),
                };
            }
        }
    }
    for t in make_conf
        .get("USE")
        .map(|u| u.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(package_use_tokens(package_use, &eb.package))
    {
        if let Some(f) = t.strip_prefix('-') {
            match f.strip_suffix('*') {
                Some(p) => flags.retain(|x| !x.starts_with(p)),
                None => {
                    flags.remove(f);
                }
            }
        } else {
            flags.insert(t);
        }
    }
    let iuse = eb.iuse_names();
    flags.retain(|f| iuse.contains(f.as_str()));
    flags
}

/// Atoms a comment says not to emerge.
fn not_emerged(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with('#') && l.contains("do not emerge"))
        .filter_map(|l| l.split_whitespace().find(|w| w.contains('/')))
        .map(|w| w.trim_end_matches(':').to_owned())
        .collect()
}

fn comment_with(text: &str, words: &[&str]) -> bool {
    text.lines()
        .any(|l| l.starts_with('#') && words.iter().all(|w| l.contains(w)))
}

fn bool_of(v: &str) -> Option<bool> {
    match v.to_ascii_uppercase().as_str() {
        "ON" | "TRUE" | "YES" | "1" => Some(true),
        "OFF" | "FALSE" | "NO" | "0" => Some(false),
        _ => None,
    }
}

fn plan_for(release: &str, gpus: &[&str]) -> Plan {
    let request = Request {
        gpus: gpus.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    rocpack_plan::plan(kb(), &request, release, Tool::Gentoo).unwrap()
}

/// Everything wrong with one request's output, one line each.
fn problems(e: &Engine, name: &str, release: &str, gpus: &[&str]) -> Vec<String> {
    let plan = plan_for(release, gpus);
    let out = emit(kb(), &plan, Tool::Gentoo);
    let file = |n: &str| {
        out.files
            .iter()
            .find(|(p, _)| p == n)
            .map(|(_, t)| t.clone())
            .unwrap_or_default()
    };
    let (make_conf_text, package_use) = (file("make.conf"), file("package.use/rocm"));
    let all = format!("{make_conf_text}{package_use}");
    let make_conf = make_conf_vars(&make_conf_text);
    let skip = not_emerged(&package_use);
    let mut bad = Vec::new();
    let mut uses: BTreeMap<&str, (BTreeSet<String>, &Ebuild)> = BTreeMap::new();

    for c in plan.components.iter().filter(|c| c.is_built()) {
        let atoms = kb()
            .components
            .get(&c.name)
            .map_or(&[][..], |i| &i.packages.gentoo[..]);
        for atom in atoms.iter().filter(|a| !skip.contains(*a)) {
            let Some(eb) = ebuild_for(e, atom, release) else {
                let lines = e.components.values().find(|x| &x.package == atom);
                if lines.is_some_and(|l| !l.releases.iter().any(|r| r == release))
                    && !comment_with(&all, &[&format!("no ebuild of ROCm {release}")])
                {
                    bad.push(format!(
                        "{name}: {atom} has no ebuild of ROCm {release} in ::gentoo and the output does not say so"
                    ));
                }
                continue;
            };
            let use_ = effective_use(eb, &e.facts.profile, &make_conf, &package_use);
            let iuse = eb.iuse_names();
            let who = format!("{name}: {atom}-{}", eb.version);
            match parse_required_use(&eb.required_use).and_then(|n| eval(&n, &use_, &iuse)) {
                Ok(true) => {}
                Ok(false) => bad.push(format!(
                    "{who}: REQUIRED_USE \"{}\" fails with USE \"{}\"",
                    eb.required_use,
                    use_.iter().cloned().collect::<Vec<_>>().join(" ")
                )),
                Err(err) => bad.push(format!("{who}: REQUIRED_USE: {err}")),
            }
            // Targets.
            if let Some(planned) = c.targets.as_ref().filter(|t| !t.is_empty()) {
                let procs: BTreeSet<&str> = planned
                    .iter()
                    .map(|t| t.split(':').next().unwrap_or(t))
                    .collect();
                let declared: BTreeSet<&str> =
                    eb.amdgpu_targets.iter().map(String::as_str).collect();
                let enabled: BTreeSet<&str> = use_
                    .iter()
                    .filter_map(|f| f.strip_prefix("amdgpu_targets_"))
                    .collect();
                let expected: BTreeSet<&str> = procs.intersection(&declared).copied().collect();
                if enabled != expected {
                    bad.push(format!(
                        "{who}: amdgpu_targets {enabled:?}, planned and declared {expected:?}"
                    ));
                }
                for t in procs.difference(&declared) {
                    if !comment_with(&all, &[atom, t, "not an amdgpu_targets flag"]) {
                        bad.push(format!(
                            "{who}: planned {t} is not in IUSE and no comment says so"
                        ));
                    }
                }
            }
            // Options.
            let default = |opt: &str| {
                kb().releases
                    .get(release)
                    .and_then(|r| r.components.get(&c.name))
                    .and_then(|rc| rc.option_default(opt))
            };
            for u in eb.cmake_usex.iter().filter(|u| u.flag != "test") {
                let Some(want) = c
                    .setting(&u.option)
                    .or_else(|| default(&u.option))
                    .and_then(bool_of)
                else {
                    continue;
                };
                if use_.contains(&u.flag) != want
                    && !comment_with(&all, &[atom, &u.option, "NOT as planned"])
                {
                    bad.push(format!(
                        "{who}: USE={}{} gives {}={} but the plan has {}",
                        if want { "-" } else { "" },
                        u.flag,
                        u.option,
                        if want { "OFF" } else { "ON" },
                        if want { "ON" } else { "OFF" }
                    ));
                }
            }
            for f in &eb.cmake_fixed {
                let Some(want) = c.setting(&f.option).or_else(|| default(&f.option)) else {
                    continue;
                };
                let same = match (bool_of(want), bool_of(&f.value)) {
                    (Some(a), Some(b)) => a == b,
                    _ => want == f.value,
                };
                if !same && !comment_with(&all, &[atom, &f.option, "NOT as planned"]) {
                    bad.push(format!(
                        "{who}: the ebuild fixes {}={} (plan: {want}) and no comment says NOT as planned",
                        f.option, f.value
                    ));
                }
            }
            uses.insert(atom.as_str(), (use_, eb));
        }
    }
    // Dependencies between the packages: nothing the output keeps out is pulled back in, and
    // USE dependencies hold.
    for (atom, (use_, eb)) in &uses {
        for d in eb.deps.iter().filter(|d| !d.any_of) {
            let on = d.when.iter().all(|w| match w.strip_prefix('!') {
                Some(f) => !use_.contains(f),
                None => use_.contains(w.as_str()),
            });
            if !on {
                continue;
            }
            if skip.contains(&d.package) {
                bad.push(format!(
                    "{name}: {atom} pulls in {} ({}), which the output says not to emerge",
                    d.package, d.atom
                ));
            }
            if let Some((dep_use, dep_eb)) = uses.get(d.package.as_str()) {
                match use_dep_holds(&d.atom, use_, dep_use, &dep_eb.iuse_names()) {
                    Ok(true) => {}
                    Ok(false) => {
                        bad.push(format!("{name}: {atom}: USE dependency {} fails", d.atom))
                    }
                    Err(err) => bad.push(format!("{name}: {atom}: {err}")),
                }
            }
        }
    }
    bad
}

#[test]
fn gentoo_output_satisfies_the_ebuilds_of_its_release() {
    let e = engine();
    let bad: Vec<String> = REQUESTS
        .iter()
        .flat_map(|(name, release, gpus)| problems(&e, name, release, gpus))
        .collect();
    assert!(
        bad.is_empty(),
        "{} problem(s):\n{}",
        bad.len(),
        bad.join("\n")
    );
}

#[test]
fn required_use_evaluator_follows_portage() {
    let iuse: BTreeSet<&str> = ["a", "b", "c", "ck"].into_iter().collect();
    let set = |s: &str| {
        s.split_whitespace()
            .map(str::to_owned)
            .collect::<BTreeSet<_>>()
    };
    let ev = |expr: &str, use_: &str| eval(&parse_required_use(expr).unwrap(), &set(use_), &iuse);
    assert_eq!(ev("|| ( a b )", "b"), Ok(true));
    assert_eq!(ev("|| ( a b )", ""), Ok(false));
    assert_eq!(ev("^^ ( a b c )", "a c"), Ok(false));
    assert_eq!(ev("^^ ( a b c )", "c"), Ok(true));
    assert_eq!(ev("?? ( a b )", ""), Ok(true));
    assert_eq!(ev("?? ( a b )", "a b"), Ok(false));
    assert_eq!(ev("ck? ( || ( a b ) )", "ck c"), Ok(false));
    assert_eq!(ev("ck? ( || ( a b ) )", "c"), Ok(true));
    assert_eq!(ev("!ck? ( c )", ""), Ok(false));
    assert_eq!(ev("!a b", "b"), Ok(true));
    assert_eq!(ev("( a b ) c", "a b c"), Ok(true));
    assert_eq!(ev("|| ( )", ""), Ok(false));
    assert_eq!(ev("?? ( )", ""), Ok(true));
    assert!(ev("|| ( a zz )", "a").is_err());
    assert!(parse_required_use("|| a b").is_err());
    assert!(parse_required_use("|| ( a b").is_err());
    assert!(parse_required_use("a )").is_err());
}

#[test]
fn use_dependencies_follow_pms() {
    let set = |s: &str| {
        s.split_whitespace()
            .map(str::to_owned)
            .collect::<BTreeSet<_>>()
    };
    let iuse: BTreeSet<&str> = ["x", "y"].into_iter().collect();
    let h =
        |atom: &str, parent: &str, dep: &str| use_dep_holds(atom, &set(parent), &set(dep), &iuse);
    assert_eq!(h("c/p[x]", "", "x"), Ok(true));
    assert_eq!(h("c/p[x]", "", ""), Ok(false));
    assert_eq!(h("c/p[-x]", "", "x"), Ok(false));
    assert_eq!(h("c/p[x?]", "x", ""), Ok(false));
    assert_eq!(h("c/p[x?]", "", ""), Ok(true));
    assert_eq!(h("c/p[!x?]", "", "x"), Ok(false));
    assert_eq!(h("c/p[x=]", "x", "x"), Ok(true));
    assert_eq!(h("c/p[x=]", "", "x"), Ok(false));
    assert_eq!(h("c/p[!x=]", "x", ""), Ok(true));
    assert_eq!(h("c/p[z(-)?]", "z", ""), Ok(false));
    assert_eq!(h("c/p[z(+)?]", "z", ""), Ok(true));
    assert!(h("c/p[z]", "", "").is_err());
}

#[test]
fn portage_layers_replace_use_expand_defaults() {
    let e = engine();
    let eb = ebuild_for(&e, "sci-libs/miopen", "7.1").expect("miopen 7.1 facts");
    let conf = make_conf_vars("AMDGPU_TARGETS=\"gfx1100\"\n");
    let pu = "sci-libs/miopen -rocblas\nsci-libs/miopen AMDGPU_TARGETS: -* gfx90a\n";
    let u = effective_use(eb, &e.facts.profile, &conf, pu);
    assert!(u.contains("amdgpu_targets_gfx90a") && !u.contains("amdgpu_targets_gfx1100"));
    assert!(
        !u.contains("amdgpu_targets_gfx908"),
        "make.conf replaces the IUSE defaults"
    );
    assert!(!u.contains("rocblas") && u.contains("hipblaslt"));
}

/// `flag? ( || ( amdgpu_targets_... ) )` of a REQUIRED_USE: the targets the flag needs one of.
fn flag_requires(nodes: &[Node], flag: &str) -> Option<BTreeSet<String>> {
    nodes.iter().find_map(|n| match n {
        Node::Group {
            op: Op::If {
                flag: f,
                negated: false,
            },
            children,
        } if f == flag => children.iter().find_map(|c| match c {
            Node::Group {
                op: Op::AnyOf,
                children,
            } => Some(
                children
                    .iter()
                    .filter_map(|x| match x {
                        Node::Flag { name, .. } => {
                            name.strip_prefix("amdgpu_targets_").map(str::to_owned)
                        }
                        Node::Group { .. } => None,
                    })
                    .collect(),
            ),
            _ => None,
        }),
        Node::Group { children, .. } => flag_requires(children, flag),
        Node::Flag { .. } => None,
    })
}

#[test]
fn emitters_toml_gentoo_facts_match_the_ebuilds() {
    let e = engine();
    let g = &kb().emitters.gentoo;
    let mut bad = Vec::new();
    // The release lines.
    let lines: BTreeSet<&str> = e
        .components
        .values()
        .flat_map(|c| c.releases.iter().map(String::as_str))
        .collect();
    let listed: BTreeSet<&str> = g.releases.iter().map(String::as_str).collect();
    if lines != listed {
        bad.push(format!(
            "[gentoo] releases {listed:?}, the ebuilds' {lines:?}"
        ));
    }
    let released: BTreeSet<&str> = e.facts.ebuild.iter().map(|x| x.release.as_str()).collect();
    let no_targets = make_conf_vars("AMDGPU_TARGETS=\"\"\n");
    for atom in e.components.values().map(|c| c.package.as_str()) {
        let info = g.package.get(atom);
        for release in &released {
            let Some(eb) = ebuild_for(&e, atom, release) else {
                continue;
            };
            let who = format!("{atom}-{}", eb.version);
            // Targets: the package's own list, else rocm.eclass's.
            let declared: BTreeSet<&str> = eb.amdgpu_targets.iter().map(String::as_str).collect();
            let listed = info
                .and_then(|i| i.targets.get(*release))
                .or_else(|| g.targets.get(*release));
            let listed: BTreeSet<&str> = listed.into_iter().flatten().map(String::as_str).collect();
            if declared != listed {
                bad.push(format!(
                    "{who}: IUSE targets {declared:?}, emitters.toml {listed:?}"
                ));
            }
            // Whether an empty target list passes REQUIRED_USE.
            let use_ = effective_use(eb, &e.facts.profile, &no_targets, "");
            let optional = parse_required_use(&eb.required_use)
                .and_then(|n| eval(&n, &use_, &eb.iuse_names()))
                .unwrap_or(false);
            let said = info.is_some_and(|i| i.optional_targets.iter().any(|r| r == release));
            if optional != said {
                bad.push(format!(
                    "{who}: needs no target: {optional}, optional_targets says {said}"
                ));
            }
            // Flags REQUIRED_USE ties to targets.
            let nodes = parse_required_use(&eb.required_use).unwrap_or_default();
            for o in info.map(|i| i.option.as_slice()).unwrap_or_default() {
                let Some(flag) = o.knob.as_deref().filter(|_| o.holds_for(release)) else {
                    continue;
                };
                let need = flag_requires(&nodes, flag).unwrap_or_default();
                let said: BTreeSet<String> = o.requires_targets.iter().cloned().collect();
                if need != said {
                    bad.push(format!(
                        "{who}: USE={flag} needs one of {need:?}, requires_targets {said:?}"
                    ));
                }
                if !eb.iuse_names().contains(flag) {
                    bad.push(format!(
                        "{who}: emitters.toml maps {} to USE={flag}, not in IUSE",
                        o.option
                    ));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Settings no USE flag carries reach CMake through package.env: each env file's MYCMAKEARGS,
/// split into words by bash exactly as cmake.eclass's cmake_src_configure does
/// (`eval "local -a MYCMAKEARGS=( ${MYCMAKEARGS} )"`, gentoo-mirror/gentoo 747db21d), is the
/// plan's value of every setting the output says it passes there, and nothing else.
/// (scripts/engines/gentoo/run.sh checks the same with Portage's own package.env reading.)
#[test]
fn package_env_passes_the_settings_no_use_flag_carries() {
    let mut checked = 0;
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("6.2", &["gfx1030"], &[]),
        ("6.4", &["gfx1030"], &["rocSOLVER:BUILD_WITH_SPARSE=ON"]),
    ];
    for (release, gpus, sets) in cases {
        let request = Request {
            gpus: gpus.iter().map(|s| s.to_string()).collect(),
            set: sets
                .iter()
                .map(|s| rocpack_plan::planner::parse_set(kb(), s).unwrap())
                .collect(),
            ..Default::default()
        };
        let plan = rocpack_plan::plan(kb(), &request, release, Tool::Gentoo).unwrap();
        let out = emit(kb(), &plan, Tool::Gentoo);
        let file = |n: &str| {
            out.files
                .iter()
                .find(|(p, _)| p == n)
                .map(|(_, t)| t.as_str())
        };
        let index = file("package.env/rocm").expect("a package.env");
        for line in index.lines().filter(|l| !l.starts_with('#')) {
            let (atom, env) = line.split_once(' ').unwrap();
            let text = file(&format!("env/{env}")).unwrap();
            let value = text
                .lines()
                .find_map(|l| l.strip_prefix("MYCMAKEARGS="))
                .unwrap();
            // make.conf syntax: one double-quoted value (bash reads it the same way).
            let words = std::process::Command::new("bash")
                .args([
                    "-c",
                    r#"eval "v=$1"; f() { eval "local -a MYCMAKEARGS=( ${v} )"; printf '%s\n' "${MYCMAKEARGS[@]}"; }; f"#,
                    "_",
                    value,
                ])
                .output()
                .unwrap();
            assert!(words.status.success());
            let words: Vec<String> = String::from_utf8(words.stdout)
                .unwrap()
                .lines()
                .map(str::to_owned)
                .collect();
            let c = plan
                .components
                .iter()
                .find(|c| {
                    kb().components[&c.name]
                        .packages
                        .gentoo
                        .iter()
                        .any(|a| a == atom)
                })
                .unwrap();
            let promised: Vec<&str> = out
                .stdout
                .lines()
                .filter(|l| {
                    l.starts_with(&format!("# {atom}: "))
                        && l.ends_with("passed in MYCMAKEARGS (package.env)")
                })
                .map(|l| l[format!("# {atom}: ").len()..].split('=').next().unwrap())
                .collect();
            assert_eq!(
                words.len(),
                promised.len(),
                "{release} {atom}: {words:?} vs {promised:?}"
            );
            for (w, name) in words.iter().zip(&promised) {
                let s = c.settings.iter().find(|s| s.name == *name).unwrap();
                let kind = match s.kind {
                    rocpack_plan::model::SettingKind::Bool => "BOOL",
                    rocpack_plan::model::SettingKind::String => "STRING",
                };
                assert_eq!(
                    w,
                    &format!("-D{}:{kind}={}", s.name, s.value),
                    "{release} {atom}"
                );
                checked += 1;
            }
        }
    }
    // 6.2's three remedies (CK INSTANCES_ONLY, MIOpen's CK and MLIR) and the --set one.
    assert!(checked >= 4, "{checked}");
}
