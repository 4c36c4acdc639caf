//! The Nix overlay checked against facts extracted from nixpkgs' own rocm-modules files
//! (data/engines/nix.toml, written by scripts/engines/nix/extract.py; docs/plan-knowledge.md,
//! "Nix engine facts").
//!
//! nix-instantiate evaluates every emitted overlay unchanged over a `rocmPackages` built from those
//! facts, once per nixpkgs ROCm line:
//! - the set is a scope with `overrideScope` exactly when the line's scope file uses
//!   `lib.makeScope` (6.0's is a plain `rec` set), and its packages come from a `callPackage`
//!   that, like nixpkgs' `callPackageWith`, reads the scope's attribute names
//!   (`builtins.intersectAttrs`), so a guard that reads the scope inside `overrideScope` recurses
//!   as it does in nixpkgs;
//! - `.override` accepts exactly the function arguments of the package's file at that line;
//! - the target-carrying cmakeFlags are the ones the file builds from `gpuTargets`, after the
//!   file's own intersection with its supported list;
//! - `composable_kernel` is broken without a target of the rule's prefix (gfx9), and MIOpen with
//!   `withComposableKernel = true` links it.
//!
//! The developer harness scripts/engines/nix/run.sh evaluates the same overlays against the real
//! nixpkgs lib and the real files; CI has neither, hence these facts.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use rocpack_plan::Tool;
use rocpack_plan::emit::emit;
use rocpack_plan::model::Plan;
use rocpack_plan::{Knowledge, Request};
use serde_json::{Value, json};

const FACTS: &str = include_str!("../data/engines/nix.toml");

/// (name, release, --gpu): the three requests of issue 13, then added ones.
const REQUESTS: &[(&str, &str, &[&str])] = &[
    ("a", "6.2", &["gfx1030"]),
    ("b", "6.4", &["gfx1100", "gfx90a"]),
    ("c", "7.1", &["gfx1151", "gfx1201"]),
    ("d", "6.4", &["gfx1030"]),
    ("e", "6.4", &["gfx90a", "gfx942"]),
    ("f", "6.0", &["gfx1030"]),
];

fn kb() -> &'static Knowledge {
    Knowledge::embedded().unwrap()
}

fn facts() -> Value {
    let v: toml::Value = toml::from_str(FACTS).unwrap();
    serde_json::to_value(v).unwrap()
}

fn plan_for(release: &str, gpus: &[&str]) -> Plan {
    let request = Request {
        gpus: gpus.iter().map(|s| s.to_string()).collect(),
        // `--all`: every component of the release.
        components: None,
        ..Default::default()
    };
    rocpack_plan::plan(kb(), &request, release, Tool::Nix).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("engine-nix")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The evaluation over the facts of one nixpkgs line. `packages` maps every attribute the
/// overlay overrides to its facts at the line, or to null when the line's file was not read
/// (then any argument is accepted and the result is reported as unverified).
const FACT_SCOPE: &str = r#"
{ factsFile, overlayFile }:
let
  facts = builtins.fromJSON (builtins.readFile factsFile);
  # lib.fix and lib.extends as nixpkgs' lib/fixed-points.nix defines them.
  fix = f: let x = f x; in x;
  extends = g: f: self: let super = f self; in super // g self super;
  hasPrefix = p: s: builtins.substring 0 (builtins.stringLength p) s == p;
  anyPrefix = ts: builtins.any (hasPrefix facts.ckRulePrefix) ts;
  # callPackageWith: automatic arguments are read from the scope's attribute set.
  callPackageWith = auto: fn: args:
    fn (builtins.intersectAttrs (builtins.functionArgs fn) auto // args);
  pkg = name: p: self:
    let
      make = args:
        let
          bad = builtins.filter (a: !(builtins.elem a p.args)) (builtins.attrNames args);
          targets = args.gpuTargets or null;
          kept =
            if targets == null then null
            else if p ? supported_targets then builtins.filter (t: builtins.elem t p.supported_targets) targets
            else targets;
          ck = args.withComposableKernel or null;
          ckFlags =
            if p ? ck_flag && ck != null then [ "-D${p.ck_flag}=${if ck then "ON" else "OFF"}" ] else [ ];
        in
        if bad != [ ] then
          throw "${name}.override: unexpected argument(s) ${toString bad} (not in ${p.path} at ${p.commit})"
        else if ck == true && self.composable_kernel.broken then
          throw "${name}: withComposableKernel = true links composable_kernel, which nixpkgs marks broken (no ${facts.ckRulePrefix} target in ${toString self.composable_kernel_base.gpuTargets})"
        else
          {
            inherit (p) version;
            verified = true;
            gpuTargets = targets;
            cmakeFlags =
              (if kept == null then [ ] else map (f: "-D${f}=${builtins.concatStringsSep ";" kept}") (p.target_flags or [ ]))
              ++ ckFlags;
            override = newArgs: make (args // newArgs);
            overrideAttrs = f: let old = make args; in old // (f old);
          };
    in
    make { };
  unread = name: _self:
    let
      make = args: {
        version = "unread";
        verified = false;
        gpuTargets = args.gpuTargets or null;
        cmakeFlags = [ ];
        override = newArgs: make (args // newArgs);
        overrideAttrs = f: let old = make args; in old // (f old);
      };
    in
    make { };
  scopeFn = self:
    let callPackage = callPackageWith self; in
    {
      clr = callPackage ({ rocm-core ? null }: { version = facts.version; }) { };
      # Built from composable_kernel_base (nixpkgs: overrideAttrs of it), broken by the rule.
      composable_kernel = callPackage ({ composable_kernel_base }: unread "composable_kernel" self // {
        broken = let t = composable_kernel_base.gpuTargets; in t != null && !(anyPrefix t);
      }) { };
    }
    // builtins.mapAttrs (
      n: p: callPackage ({ clr }: (if p == null then unread n self else pkg n p self)) { }
    ) (builtins.removeAttrs facts.packages [ "clr" "composable_kernel" ]);
  makeScope = f: let self = f self // { overrideScope = g: makeScope (extends g f); }; in self;
  rocmPackages = if facts.kind == "makeScope" then makeScope scopeFn else fix scopeFn;
  pkgs = fix (extends (import overlayFile) (_: { inherit rocmPackages; }));
in
{
  clr = pkgs.rocmPackages.clr.version;
  packages = builtins.mapAttrs (n: _: {
    inherit (pkgs.rocmPackages.${n}) version verified gpuTargets cmakeFlags;
  }) facts.packages;
}
"#;

/// Attributes the overlay overrides (`name = rprev.name.override {`).
fn overridden(overlay: &str) -> Vec<String> {
    let mut out: Vec<String> = overlay
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let (name, rest) = l.split_once(" = rprev.")?;
            rest.starts_with(name).then(|| name.to_owned())
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The facts of one line, as the Nix above reads them.
fn line_input(facts: &Value, line: &str, attrs: &[String]) -> Value {
    let l = &facts["facts"]["line"][line];
    let scope_line = l["scope_from"].as_str().unwrap_or(line);
    let kind = facts["facts"]["line"][scope_line]["package"]["rocmPackages"]["kind"].clone();
    let mut packages = serde_json::Map::new();
    for a in attrs {
        packages.insert(a.clone(), l["package"][a.as_str()].clone());
    }
    json!({
        "version": l["version"],
        "kind": kind,
        "ckRulePrefix": facts["facts"]["rule"]["composable_kernel"]["broken"]
            .as_str()
            .and_then(|b| (b == "!anyGfx9Target").then_some("gfx9"))
            .unwrap(),
        "packages": packages,
    })
}

fn evaluate(dir: &Path, input: &Value, overlay: &str) -> Result<Value, String> {
    std::fs::write(dir.join("facts.json"), input.to_string()).unwrap();
    std::fs::write(dir.join("rocm-overlay.nix"), overlay).unwrap();
    std::fs::write(dir.join("scope.nix"), FACT_SCOPE).unwrap();
    let out = Command::new("nix-instantiate")
        .args(["--eval", "--strict", "--json"])
        .arg(dir.join("scope.nix"))
        .arg("--arg")
        .arg("factsFile")
        .arg(dir.join("facts.json"))
        .arg("--arg")
        .arg("overlayFile")
        .arg(dir.join("rocm-overlay.nix"))
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run nix-instantiate: {e}; install it with scripts/install-deps.sh")
        });
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Lines of the facts that have a scope to evaluate (their own or an earlier line's).
fn lines(facts: &Value) -> Vec<String> {
    facts["facts"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .filter(|l| {
            let line = &facts["facts"]["line"][l.as_str()];
            let scope = line["scope_from"].as_str().unwrap_or(l);
            facts["facts"]["line"][scope]["package"]["rocmPackages"].is_object()
        })
        .collect()
}

#[test]
fn every_overlay_evaluates_over_nixpkgs_facts_or_is_refused_by_its_release_guard() {
    let facts = facts();
    let lines = lines(&facts);
    assert!(lines.len() >= 3, "facts give too few lines: {lines:?}");
    let mut unverified = Vec::new();
    for (name, release, gpus) in REQUESTS {
        let plan = plan_for(release, gpus);
        let overlay = emit(kb(), &plan, Tool::Nix).stdout;
        let attrs = overridden(&overlay);
        assert!(!attrs.is_empty(), "({name}) overrides nothing");
        for line in &lines {
            let version = facts["facts"]["line"][line.as_str()]["version"]
                .as_str()
                .unwrap();
            let input = line_input(&facts, line, &attrs);
            let dir = scratch(&format!("{name}-{line}"));
            let got = evaluate(&dir, &input, &overlay);
            let what = format!("({name}) {release} {gpus:?} over nixpkgs {line}");
            if line != release {
                let err = got.expect_err(&what);
                let refusal = format!(
                    "planned for ROCm {release} but this nixpkgs has rocmPackages.clr {version}"
                );
                assert!(err.contains(&refusal), "{what}: {err}");
                continue;
            }
            if input["kind"] != "makeScope" {
                let err = got.expect_err(&what);
                assert!(
                    err.contains("to be a scope with overrideScope"),
                    "{what}: {err}"
                );
                continue;
            }
            let got = got.unwrap_or_else(|e| panic!("{what}: {e}"));
            for c in plan.components.iter().filter(|c| c.is_built()) {
                let Some(t) = c.targets.as_ref().filter(|t| !t.is_empty()) else {
                    continue;
                };
                for attr in &kb().components[&c.name].packages.nixpkgs {
                    let info = &kb().emitters.nix.package.get(attr.as_str());
                    let target_attr = info
                        .and_then(|i| i.attrs.first())
                        .map_or(attr.as_str(), |a| a.as_str());
                    let p = &got["packages"][target_attr];
                    if p.is_null() {
                        continue;
                    }
                    if p["verified"] != true {
                        unverified.push(format!("{line}:{target_attr}"));
                        continue;
                    }
                    let f = &input["packages"][target_attr];
                    let kept: Vec<&str> = t
                        .iter()
                        .map(String::as_str)
                        .filter(|x| {
                            f["supported_targets"]
                                .as_array()
                                .is_none_or(|s| s.iter().any(|y| y == x))
                        })
                        .collect();
                    for flag in f["target_flags"].as_array().unwrap() {
                        let want = format!("-D{}={}", flag.as_str().unwrap(), kept.join(";"));
                        assert!(
                            p["cmakeFlags"]
                                .as_array()
                                .unwrap()
                                .iter()
                                .any(|x| *x == want),
                            "{what}: {target_attr} lacks {want}: {}",
                            p["cmakeFlags"]
                        );
                    }
                }
            }
        }
    }
    unverified.sort();
    unverified.dedup();
    eprintln!(
        "engine_nix: overridden attributes whose nixpkgs file was not read (arguments unverified): {}",
        unverified.join(" ")
    );
}

#[test]
fn miopen_never_links_a_composable_kernel_nixpkgs_marks_broken() {
    // Evaluated above (the fact scope throws); this checks the emitted value directly for every
    // request, including those whose release nixpkgs never had.
    let facts = facts();
    let prefix = match facts["facts"]["rule"]["composable_kernel"]["broken"].as_str() {
        Some("!anyGfx9Target") => "gfx9",
        other => panic!("unexpected composable_kernel rule {other:?}"),
    };
    for (name, release, gpus) in REQUESTS {
        let plan = plan_for(release, gpus);
        let overlay = emit(kb(), &plan, Tool::Nix).stdout;
        let ck = plan
            .components
            .iter()
            .find(|c| c.name == "composable_kernel")
            .filter(|c| c.is_built())
            .and_then(|c| c.targets.clone())
            .unwrap_or_default();
        let on = overlay.contains("withComposableKernel = true;");
        if on {
            assert!(
                ck.iter().any(|t| t.starts_with(prefix)),
                "({name}) MIOpen links composable_kernel planned for {ck:?}, broken in nixpkgs"
            );
        }
    }
}

#[test]
fn release_lines_are_the_ones_nixpkgs_carried() {
    let facts = facts();
    let lines: Vec<&str> = facts["facts"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    for l in ["6.1", "6.2"] {
        assert!(!lines.contains(&l), "nixpkgs never merged a {l} set");
    }
    for (name, c) in facts["components"].as_object().unwrap() {
        for r in c["releases"].as_array().unwrap() {
            assert!(lines.contains(&r.as_str().unwrap()), "{name}: {r}");
        }
        assert!(
            kb().components[name.as_str()]
                .packages
                .nixpkgs
                .iter()
                .any(|a| c["package"] == a.as_str()),
            "{name}: package {} is not its nixpkgs attribute",
            c["package"]
        );
    }
    // The 6.0 set predates hipBLASLt in nixpkgs and is not a scope.
    assert_eq!(
        facts["facts"]["line"]["6.0"]["package"]["rocmPackages"]["kind"],
        "rec"
    );
    assert!(
        !facts["components"]["hipBLASLt"]["releases"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "6.0")
    );
}

#[test]
fn every_knob_the_emitter_knows_is_an_argument_of_each_nixpkgs_file_read() {
    let facts = facts();
    let nix = &kb().emitters.nix;
    let mut checked = 0;
    for (line, l) in facts["facts"]["line"].as_object().unwrap() {
        let Some(packages) = l["package"].as_object() else {
            continue;
        };
        for (attr, p) in packages {
            let Some(info) = nix.package.get(attr.as_str()).or_else(|| {
                nix.package
                    .values()
                    .find(|i| i.attrs.iter().any(|a| a == attr))
            }) else {
                continue;
            };
            let args = p["args"].as_array().unwrap();
            let mut knobs: Vec<&str> = info
                .option
                .iter()
                .filter_map(|o| o.knob.as_deref())
                .collect();
            knobs.extend(info.requires.iter().map(|r| r.argument.as_str()));
            if info.gpu_targets {
                knobs.push(nix.argument.as_str());
            }
            for k in knobs {
                assert!(
                    args.iter().any(|a| a == k),
                    "nixpkgs {line} {attr} ({} at {}) has no argument {k}",
                    p["path"],
                    p["commit"]
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 6, "only {checked} knobs checked");
}

#[test]
fn values_emitters_toml_calls_fixed_are_the_ones_the_nixpkgs_files_pass() {
    let facts = facts();
    let mut checked = 0;
    for (line, l) in facts["facts"]["line"].as_object().unwrap() {
        let Some(packages) = l["package"].as_object() else {
            continue;
        };
        for (attr, p) in packages {
            let Some(info) = kb().emitters.nix.package.get(attr.as_str()) else {
                continue;
            };
            for o in &info.option {
                let (Some(fixed), true) = (&o.fixed, o.holds_for(line)) else {
                    continue;
                };
                let got = &p["fixed_flags"][o.option.as_str()];
                assert_eq!(
                    got,
                    fixed.as_str(),
                    "nixpkgs {line} {attr} ({} at {}) passes {}={got}, emitters.toml says {fixed}",
                    p["path"],
                    p["commit"],
                    o.option
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 3, "only {checked} fixed values checked");
}
