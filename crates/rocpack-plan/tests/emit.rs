//! The emitters' output, read back by the real tools: CMake loads every initial cache, a POSIX
//! shell splits every argument line, PyYAML parses spack.yaml, nix-instantiate evaluates the
//! overlay against a stand-in `rocmPackages`, bash sources make.conf. A missing tool fails the
//! test (install them with scripts/install-deps.sh).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rocpack_plan::Tool;
use rocpack_plan::emit::{Emission, emit};
use rocpack_plan::model::{Plan, SettingKind};
use rocpack_plan::{Knowledge, Request};
use serde_json::Value;

/// The plans every format is checked with: (name, release, --gpu, --family).
const CASES: &[(&str, &str, &[&str], &[&str])] = &[
    ("6.4-gfx1030", "6.4", &["gfx1030"], &[]),
    ("6.4-gfx1100-gfx1101", "6.4", &["gfx1100", "gfx1101"], &[]),
    ("7.1-gfx90a-gfx942", "7.1", &["gfx90a", "gfx942"], &[]),
    ("6.4-debian-sid", "6.4", &[], &["debian-sid"]),
    ("7.1-gfx110X-dgpu", "7.1", &[], &["gfx110X-dgpu"]),
];

fn kb() -> &'static Knowledge {
    Knowledge::embedded().unwrap()
}

fn plan_for(release: &str, gpus: &[&str], families: &[&str], format: Tool) -> Plan {
    let request = Request {
        gpus: gpus.iter().map(|s| s.to_string()).collect(),
        families: families.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    rocpack_plan::plan(kb(), &request, release, format).unwrap()
}

/// Every case planned and emitted for `format`.
fn cases(format: Tool) -> Vec<(&'static str, Plan, Emission)> {
    CASES
        .iter()
        .map(|(name, release, gpus, families)| {
            let plan = plan_for(release, gpus, families, format);
            let out = emit(kb(), &plan, format);
            (*name, plan, out)
        })
        .collect()
}

/// Fails with a pointer to the install script when a tool is missing.
fn require_tool(program: &str, args: &[&str]) {
    let ok = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "`{program} {}` failed: the emitter tests need it; install it with scripts/install-deps.sh",
        args.join(" ")
    );
}

/// A fresh directory under the test target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("emit")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs a command, failing the test with its output when it fails; returns stdout.
fn run(cmd: &mut Command, stdin: Option<&str>) -> String {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| {
        panic!("cannot run {cmd:?}: {e}; install the tools with scripts/install-deps.sh")
    });
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Loads an initial-cache script with `cmake -C` into an empty project and reads every cache
/// entry it set back: name -> (type, value).
fn cmake_cache(dir: &Path, script: &str) -> BTreeMap<String, (String, String)> {
    let names: Vec<String> = script
        .lines()
        .filter_map(|l| l.strip_prefix("set("))
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("init.cmake"), script).unwrap();
    let mut lists = String::from(
        "cmake_minimum_required(VERSION 3.16)\nproject(emitted NONE)\nset(out \"\")\n",
    );
    for n in &names {
        lists.push_str(&format!(
            "get_property(t CACHE {n} PROPERTY TYPE)\nstring(APPEND out \"{n}\\t${{t}}\\t${{{n}}}\\n\")\n"
        ));
    }
    lists.push_str("file(WRITE \"${CMAKE_BINARY_DIR}/cache.txt\" \"${out}\")\n");
    std::fs::write(dir.join("src/CMakeLists.txt"), lists).unwrap();
    run(
        Command::new("cmake")
            .arg("-C")
            .arg(dir.join("init.cmake"))
            .arg("-S")
            .arg(dir.join("src"))
            .arg("-B")
            .arg(dir.join("build")),
        None,
    );
    let text = std::fs::read_to_string(dir.join("build/cache.txt")).unwrap();
    text.lines()
        .map(|l| {
            let mut f = l.splitn(3, '\t');
            let n = f.next().unwrap().to_owned();
            let t = f.next().unwrap().to_owned();
            let v = f.next().unwrap().to_owned();
            (n, (t, v))
        })
        .collect()
}

/// The words a POSIX shell makes of a line.
fn shell_split(line: &str) -> Vec<String> {
    let out = run(
        Command::new("sh")
            .arg("-c")
            .arg(format!("printf '%s\\n' {line}")),
        None,
    );
    out.lines().map(str::to_owned).collect()
}

fn kind_name(k: SettingKind) -> &'static str {
    match k {
        SettingKind::Bool => "BOOL",
        SettingKind::String => "STRING",
    }
}

/// The lines that are not comments.
fn code_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .collect()
}

fn processors(targets: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in targets {
        let p = t.split(':').next().unwrap().to_owned();
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

fn check_header(plan: &Plan, text: &str, format: Tool) {
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with(&format!(
            "# Generated by `rocpack plan` for {}: ROCm {}",
            format.as_str(),
            plan.release
        )),
        "{first}"
    );
    assert!(
        text.contains(&format!("# Requested targets: {}", plan.targets.join(" "))),
        "no requested targets in the header"
    );
}

// ------------------------------------------------------------------------------------------------
// CMake

/// The settings a CMake cache writes: all of them; the planner never plans an empty target list
/// (an empty cache entry blocks the component's own default, tests/engine_cmake.rs).
fn cmake_written(c: &rocpack_plan::model::ComponentPlan) -> Vec<&rocpack_plan::model::Setting> {
    assert!(
        !c.settings
            .iter()
            .any(|s| s.value.is_empty() && c.is_target_setting(s)),
        "{}: an empty target list is planned",
        c.name
    );
    c.settings.iter().collect()
}

#[test]
fn cmake_initial_caches_load_into_cmake_with_the_planned_values_and_types() {
    require_tool("cmake", &["--version"]);
    for (name, plan, out) in cases(Tool::Cmake) {
        check_header(&plan, &out.stdout, Tool::Cmake);
        let built: Vec<_> = plan
            .components
            .iter()
            .filter(|c| c.is_built() && !c.settings.is_empty())
            .collect();
        assert_eq!(out.files.len(), built.len(), "{name}");
        for ((file, script), c) in out.files.iter().zip(&built) {
            assert_eq!(file, &format!("{}.cmake", c.name));
            check_header(&plan, script, Tool::Cmake);
            let cache = cmake_cache(&scratch(&format!("cmake-{name}-{}", c.name)), script);
            let written = cmake_written(c);
            assert_eq!(cache.len(), written.len(), "{name} {file}: {cache:?}");
            for s in written {
                let (t, v) = &cache[&s.name];
                assert_eq!(t, kind_name(s.kind), "{name} {file} {}", s.name);
                assert_eq!(v, &s.value, "{name} {file} {}", s.name);
            }
        }
        for c in plan.components.iter().filter(|c| !c.is_built()) {
            assert!(
                out.stdout.contains(&format!("# {}: not built: ", c.name)),
                "{name}: skipped {} not visible",
                c.name
            );
        }
    }
}

#[test]
fn cmake_argument_lines_split_into_the_planned_definitions() {
    for (name, plan, out) in cases(Tool::Cmake) {
        let lines = code_lines(&out.stdout);
        let built: Vec<_> = plan
            .components
            .iter()
            .filter(|c| c.is_built() && !cmake_written(c).is_empty())
            .collect();
        assert_eq!(lines.len(), built.len(), "{name}");
        for (line, c) in lines.iter().zip(&built) {
            let want: Vec<String> = cmake_written(c)
                .into_iter()
                .map(|s| format!("-D{}:{}={}", s.name, kind_name(s.kind), s.value))
                .collect();
            assert_eq!(shell_split(line), want, "{name} {}", c.name);
        }
    }
}

#[test]
fn cmake_values_with_quotes_dollars_backslashes_and_semicolons_survive_cmake_and_sh() {
    require_tool("cmake", &["--version"]);
    let mut plan = plan_for("6.4", &["gfx1030"], &[], Tool::Cmake);
    let weird = r#"a"b $HOME ${CMAKE_COMMAND} back\slash;semi 'single'"#;
    let c = plan
        .components
        .iter_mut()
        .find(|c| c.name == "rocBLAS")
        .unwrap();
    c.settings[0].value = weird.to_owned();
    c.settings[0].why = r#"why with "quotes", $dollar and \backslash"#.to_owned();
    let out = emit(kb(), &plan, Tool::Cmake);
    let (_, script) = out
        .files
        .iter()
        .find(|(f, _)| f == "rocBLAS.cmake")
        .unwrap();
    let cache = cmake_cache(&scratch("cmake-weird"), script);
    let name = &plan
        .components
        .iter()
        .find(|c| c.name == "rocBLAS")
        .unwrap()
        .settings[0]
        .name;
    assert_eq!(cache[name].1, weird);
    let line = code_lines(&out.stdout)
        .into_iter()
        .find(|l| l.contains("BUILD_WITH_HIPBLASLT"))
        .unwrap();
    assert_eq!(shell_split(line)[0], format!("-D{name}:STRING={weird}"));
}

#[test]
fn header_counts_open_errors() {
    let request = Request {
        gpus: vec!["gfx1030".into()],
        components: Some(vec!["hipBLASLt".into()]),
        ..Default::default()
    };
    let plan = rocpack_plan::plan(kb(), &request, "6.4", rocpack_plan::Tool::Cmake).unwrap();
    assert!(plan.summary.errors > 0, "{:?}", plan.summary);
    for format in Tool::ALL {
        let out = emit(kb(), &plan, format);
        assert!(
            out.stdout
                .contains(&format!("# OPEN ERRORS: {}:", plan.summary.errors)),
            "{}: {}",
            format.as_str(),
            out.stdout
        );
    }
    // A plan made for another tool says so.
    let out = emit(kb(), &plan, Tool::Spack);
    assert!(
        out.stdout
            .contains("WARNING: the plan was made for cmake, not spack")
    );
}

#[test]
fn output_is_deterministic() {
    for format in Tool::ALL {
        let a = cases(format);
        let b = cases(format);
        for ((_, _, x), (_, _, y)) in a.iter().zip(&b) {
            assert_eq!(x, y);
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Spack

fn yaml_to_json(text: &str) -> Value {
    let out = run(
        Command::new("python3").args([
            "-c",
            "import yaml,sys,json; print(json.dumps(yaml.safe_load(sys.stdin)))",
        ]),
        Some(text),
    );
    serde_json::from_str(&out).unwrap()
}

#[test]
fn spack_environment_parses_with_the_planned_targets_and_without_skipped_components() {
    require_tool("python3", &["-c", "import yaml"]);
    let facts = &kb().spack_facts;
    for (name, plan, out) in cases(Tool::Spack) {
        check_header(&plan, &out.stdout, Tool::Spack);
        assert_eq!(
            out.files,
            vec![("spack.yaml".to_owned(), out.stdout.clone())]
        );
        let doc = yaml_to_json(&out.stdout);
        let env = &doc["spack"];
        assert_eq!(env["concretizer"]["unify"], Value::Bool(true), "{name}");
        let specs: Vec<&str> = env["specs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        let spec_of = |pkg: &str| {
            specs
                .iter()
                .find(|s| s.split('@').next() == Some(pkg))
                .copied()
        };
        for c in &plan.components {
            let pkgs = &kb().components[&c.name].packages.spack;
            for pkg in pkgs {
                let spec = spec_of(pkg);
                if !c.is_built() {
                    assert!(spec.is_none(), "{name}: skipped {} in specs", c.name);
                    assert!(out.stdout.contains(&format!("# {}: not built", c.name)));
                    continue;
                }
                let Some(spec) = spec else {
                    assert!(
                        out.stdout
                            .contains(&format!("# {} ({pkg}): left out", c.name)),
                        "{name}: {pkg} neither in specs nor explained"
                    );
                    continue;
                };
                assert!(
                    spec.starts_with(&format!("{pkg}@{}", plan.release)),
                    "{spec}"
                );
                let values = facts
                    .package
                    .get(pkg.as_str())
                    .and_then(|f| f.target_values("amdgpu_target", &plan.release));
                let Some(values) = values else {
                    assert!(!spec.contains("amdgpu_target"), "{name}: {spec}");
                    continue;
                };
                let planned = c.targets.as_ref().unwrap_or(&plan.targets);
                let list = spec
                    .split(' ')
                    .find_map(|w| w.strip_prefix("amdgpu_target:="))
                    .unwrap_or_else(|| panic!("{name}: no amdgpu_target in {spec}"));
                let list: Vec<String> = list.split(',').map(str::to_owned).collect();
                for t in &list {
                    assert!(values.contains(&t.as_str()), "{name}: {t} in {spec}");
                    let p = t.split(':').next().unwrap();
                    assert!(processors(planned).iter().any(|x| x == p), "{name}: {t}");
                }
                let require = &env["packages"][pkg.as_str()]["require"];
                assert_eq!(
                    require,
                    &serde_json::json!([format!("amdgpu_target:={}", list.join(","))]),
                    "{name}: {pkg}"
                );
            }
        }
        // Options with a variant are in the spec.
        if let Some(rocblas) = spec_of("rocblas") {
            let c = plan
                .components
                .iter()
                .find(|c| c.name == "rocBLAS")
                .unwrap();
            if let Some(v) = c.setting("BUILD_WITH_HIPBLASLT") {
                let want = if v == "ON" {
                    "+hipblaslt"
                } else {
                    "~hipblaslt"
                };
                assert!(rocblas.split(' ').any(|w| w == want), "{name}: {rocblas}");
            }
        }
    }
}

#[test]
fn spack_yaml_quoting_survives_pyyaml() {
    require_tool("python3", &["-c", "import yaml"]);
    let mut plan = plan_for("6.4", &["gfx1030"], &[], Tool::Spack);
    plan.release = r#"6.4 #"quoted" \back: x"#.to_owned();
    let out = emit(kb(), &plan, Tool::Spack);
    // spack-packages has no such release: nothing is specified, and the comments that quote it
    // do not break the document.
    let doc = yaml_to_json(&out.stdout);
    assert_eq!(doc["spack"]["specs"], serde_json::json!([]));
    assert!(out.stdout.contains(&format!(
        "spack-packages has no {} version of llvm-amdgpu",
        plan.release
    )));
}

// ------------------------------------------------------------------------------------------------
// Nix

/// Evaluates the overlay against a stand-in `rocmPackages` whose derivations record the
/// arguments of `.override`; returns attribute -> arguments (null when not overridden).
fn eval_overlay(dir: &Path, overlay: &str, clr_version: &str) -> Result<Value, String> {
    std::fs::write(dir.join("rocm-overlay.nix"), overlay).unwrap();
    let mut names: Vec<String> = kb()
        .components
        .values()
        .flat_map(|c| c.packages.nixpkgs.iter().cloned())
        .chain(
            kb().emitters
                .nix
                .package
                .values()
                .flat_map(|p| p.attrs.iter().cloned()),
        )
        .collect();
    names.sort();
    names.dedup();
    let list: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    let harness = format!(
        r#"let
  overlay = import ./rocm-overlay.nix;
  mk = name: {{ override = args: {{ inherit name; overridden = args; overrideAttrs = f: {{ inherit name; overridden = args // {{ appended = (f {{ }}).cmakeFlags; }}; }}; }}; overrideAttrs = f: {{ inherit name; overridden = {{ appended = (f {{ }}).cmakeFlags; }}; }}; }};
  base = builtins.listToAttrs (map (n: {{ name = n; value = mk n; }}) [ {} ])
    // {{ clr = {{ version = "{clr_version}"; }}; }};
  prev = {{ rocmPackages = base // {{ overrideScope = f: base // (f base base); }}; }};
  result = (overlay {{ }} prev).rocmPackages;
in builtins.mapAttrs (n: v: v.overridden or null) (removeAttrs result [ "clr" "overrideScope" ])
"#,
        list.join(" ")
    );
    std::fs::write(dir.join("eval.nix"), harness).unwrap();
    let out = Command::new("nix-instantiate")
        .args(["--eval", "--strict", "--json"])
        .arg(dir.join("eval.nix"))
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run nix-instantiate: {e}; install it with scripts/install-deps.sh")
        });
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(serde_json::from_slice(&out.stdout).unwrap())
}

#[test]
fn nix_overlay_parses_and_overrides_each_derivation_with_its_planned_targets() {
    require_tool("nix-instantiate", &["--version"]);
    for (name, plan, out) in cases(Tool::Nix) {
        check_header(&plan, &out.stdout, Tool::Nix);
        assert_eq!(
            out.files,
            vec![("rocm-overlay.nix".to_owned(), out.stdout.clone())]
        );
        let dir = scratch(&format!("nix-{name}"));
        std::fs::write(dir.join("rocm-overlay.nix"), &out.stdout).unwrap();
        run(
            Command::new("nix-instantiate")
                .arg("--parse")
                .arg(dir.join("rocm-overlay.nix")),
            None,
        );
        let version = format!("{}.3", plan.release);
        let got = eval_overlay(&dir, &out.stdout, &version).unwrap();
        for c in &plan.components {
            for attr in &kb().components[&c.name].packages.nixpkgs {
                let Some(info) = kb().emitters.nix.package.get(attr) else {
                    continue;
                };
                let args = info
                    .attrs
                    .first()
                    .map_or(&got[attr.as_str()], |a| &got[a.as_str()]);
                match &c.targets {
                    Some(t) if c.is_built() && info.gpu_targets && !t.is_empty() => {
                        assert_eq!(args["gpuTargets"], serde_json::json!(t), "{name}: {attr}");
                    }
                    _ if !c.is_built() => {
                        assert_eq!(args, &Value::Null, "{name}: skipped {attr} overridden")
                    }
                    _ => assert!(args.get("gpuTargets").is_none(), "{name}: {attr}"),
                }
                for o in &info.option {
                    let (Some(arg), Some(v)) = (&o.knob, c.setting(&o.option)) else {
                        continue;
                    };
                    if c.is_built() {
                        // A requirement nixpkgs sets (CK built for a gfx9 target) can turn it off.
                        let unmet = info.requires.iter().any(|r| {
                            r.argument == *arg
                                && !plan.components.iter().any(|d| {
                                    d.name == r.component
                                        && d.is_built()
                                        && d.targets.as_ref().is_some_and(|t| {
                                            t.iter().any(|t| t.starts_with(&r.target_prefix))
                                        })
                                })
                        });
                        let want = v == "ON" && !unmet;
                        assert_eq!(args[arg.as_str()], Value::Bool(want), "{name}: {arg}");
                    }
                }
            }
        }
    }
}

#[test]
fn nix_overlay_refuses_a_nixpkgs_of_another_rocm_release() {
    require_tool("nix-instantiate", &["--version"]);
    let plan = plan_for("6.4", &["gfx1030"], &[], Tool::Nix);
    let out = emit(kb(), &plan, Tool::Nix);
    let err = eval_overlay(&scratch("nix-wrong-release"), &out.stdout, "7.1.0").unwrap_err();
    assert!(
        err.contains("planned for ROCm 6.4 but this nixpkgs has rocmPackages.clr 7.1.0"),
        "{err}"
    );
}

#[test]
fn nix_strings_with_interpolation_and_quotes_survive_evaluation() {
    require_tool("nix-instantiate", &["--version"]);
    let mut plan = plan_for("6.4", &["gfx1030"], &[], Tool::Nix);
    let weird = r#"gfx"1030 ${builtins.abort "x"} \back $y"#;
    let c = plan
        .components
        .iter_mut()
        .find(|c| c.name == "rocBLAS")
        .unwrap();
    c.targets = Some(vec![weird.to_owned()]);
    let out = emit(kb(), &plan, Tool::Nix);
    let got = eval_overlay(&scratch("nix-weird"), &out.stdout, "6.4.3").unwrap();
    assert_eq!(got["rocblas"]["gpuTargets"], serde_json::json!([weird]));
}

// ------------------------------------------------------------------------------------------------
// Gentoo

/// Checks one package.use line against Portage's grammar: an atom, then USE flags
/// (`flag`/`-flag`), optionally `AMDGPU_TARGETS: -* gfx...`.
fn package_use_line_ok(line: &str) -> bool {
    let mut words = line.split(' ');
    let Some(atom) = words.next() else {
        return false;
    };
    let name_ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+_.-".contains(c))
    };
    let Some((cat, pkg)) = atom.split_once('/') else {
        return false;
    };
    if !name_ok(cat) || !name_ok(pkg) {
        return false;
    }
    let rest: Vec<&str> = words.collect();
    if rest.is_empty() {
        return false;
    }
    if rest[0] == "AMDGPU_TARGETS:" {
        return rest.len() >= 3
            && rest[1] == "-*"
            && rest[2..].iter().all(|t| {
                t.strip_prefix("gfx")
                    .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_alphanumeric()))
            });
    }
    rest.iter().all(|f| {
        let f = f.strip_prefix('-').unwrap_or(f);
        f.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && f.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+_@-".contains(c))
    })
}

#[test]
fn gentoo_make_conf_sources_in_bash_and_package_use_follows_the_grammar() {
    require_tool("bash", &["--version"]);
    for (name, plan, out) in cases(Tool::Gentoo) {
        let files: BTreeMap<&str, &str> = out
            .files
            .iter()
            .map(|(n, t)| (n.as_str(), t.as_str()))
            .collect();
        assert_eq!(
            files.keys().copied().collect::<Vec<_>>(),
            ["make.conf", "package.use/rocm"]
        );
        let dir = scratch(&format!("gentoo-{name}"));
        let make_conf = dir.join("make.conf");
        std::fs::write(&make_conf, files["make.conf"]).unwrap();
        check_header(&plan, files["make.conf"], Tool::Gentoo);
        run(Command::new("bash").arg("-n").arg(&make_conf), None);
        let value = run(
            Command::new("bash")
                .arg("-c")
                .arg("set -eu; source \"$1\"; printf '%s' \"$AMDGPU_TARGETS\"")
                .arg("bash")
                .arg(&make_conf),
            None,
        );
        let eclass = &kb().emitters.gentoo.targets[&plan.release];
        let want: Vec<String> = processors(&plan.targets)
            .into_iter()
            .filter(|p| eclass.contains(p))
            .collect();
        assert_eq!(value, want.join(" "), "{name}");

        let package_use = files["package.use/rocm"];
        for line in code_lines(package_use) {
            assert!(
                package_use_line_ok(line),
                "{name}: bad package.use line {line:?}"
            );
        }
        for c in &plan.components {
            for atom in &kb().components[&c.name].packages.gentoo {
                if !c.is_built() {
                    assert!(
                        package_use.contains(&format!("# {atom} ({}): not built", c.name)),
                        "{name}: skipped {atom} not visible"
                    );
                    continue;
                }
                let targets_line = code_lines(package_use)
                    .into_iter()
                    .find(|l| l.starts_with(&format!("{atom} AMDGPU_TARGETS:")));
                if let Some(l) = targets_line {
                    let listed: Vec<&str> = l.split(' ').skip(3).collect();
                    let planned = processors(c.targets.as_ref().unwrap());
                    assert!(listed.iter().all(|t| planned.iter().any(|p| p == t)), "{l}");
                    assert_ne!(listed, want, "{name}: {l} repeats the global list");
                }
            }
        }
        assert!(out.stdout.contains(files["make.conf"]));
        assert!(out.stdout.contains(package_use));
    }
}

#[test]
fn gentoo_options_become_use_flags() {
    let plan = plan_for("6.4", &["gfx1030"], &[], Tool::Gentoo);
    let out = emit(kb(), &plan, Tool::Gentoo);
    let lines = code_lines(&out.files[1].1);
    // Every flag that carries an option is written out: rocBLAS 6.4.3-r1 builds Tensile only
    // with VIDEO_CARDS=amdgpu, MIOpen 6.4.3-r1 declares rocblas off by default.
    assert!(
        lines.contains(&"sci-libs/rocBLAS -hipblaslt video_cards_amdgpu"),
        "{lines:?}"
    );
    assert!(
        lines.contains(&"sci-libs/miopen -composable-kernel -hipblaslt rocblas"),
        "{lines:?}"
    );
}

// ------------------------------------------------------------------------------------------------
// TheRock

#[test]
fn therock_cache_loads_into_cmake_and_turns_off_what_is_not_built() {
    require_tool("cmake", &["--version"]);
    for (name, plan, out) in cases(Tool::Therock) {
        check_header(&plan, &out.stdout, Tool::Therock);
        let (file, script) = &out.files[0];
        assert_eq!(file, "therock.cmake");
        let cache = cmake_cache(&scratch(&format!("therock-{name}")), script);
        let therock_families: Vec<&str> = plan
            .families
            .iter()
            .filter(|f| f.defined_by.starts_with("TheRock"))
            .map(|f| f.family.as_str())
            .collect();
        // Loose targets join the families list (each target is a TheRock family of its own
        // name); THEROCK_AMDGPU_TARGETS is never written.
        assert!(!cache.contains_key("THEROCK_AMDGPU_TARGETS"), "{name}");
        let (t, v) = &cache["THEROCK_AMDGPU_FAMILIES"];
        assert_eq!(t, "STRING");
        let listed: Vec<&str> = v.split(';').collect();
        assert!(
            therock_families.iter().all(|f| listed.contains(f)),
            "{name}: {v}"
        );
        let targets = processors(&plan.targets);
        assert!(
            listed
                .iter()
                .all(|x| therock_families.contains(x) || targets.iter().any(|t| t == x)),
            "{name}: {v}"
        );
        assert_eq!(
            cache.contains_key("THEROCK_AMDGPU_DIST_BUNDLE_NAME"),
            listed.len() > 1,
            "{name}: a bundle name is needed exactly when more than one selection is made"
        );
        for (var, (t, v)) in &cache {
            if let Some(feature) = var.strip_prefix("THEROCK_ENABLE_") {
                assert_eq!((t.as_str(), v.as_str()), ("BOOL", "OFF"), "{name}: {var}");
                let f = &kb().emitters.therock.feature[feature];
                assert!(
                    f.components.iter().all(|c| plan
                        .components
                        .iter()
                        .all(|p| &p.name != c || !p.is_built())),
                    "{name}: {var}=OFF though a component of it is built"
                );
                // Not one that TheRock's therock_finalize_features turns back on.
                for (other, g) in &kb().emitters.therock.feature {
                    let other_off = cache
                        .get(&format!("THEROCK_ENABLE_{other}"))
                        .is_some_and(|(_, v)| v == "OFF");
                    assert!(
                        other_off || !g.requires.iter().any(|r| r == feature),
                        "{name}: {var}=OFF is undone while THEROCK_ENABLE_{other} is on"
                    );
                }
            }
        }
        // The argument line says the same as the cache.
        let line = code_lines(&out.stdout)[0];
        let words = shell_split(line);
        assert_eq!(words.len(), cache.len(), "{name}: {words:?}");
        for w in words {
            let (lhs, v) = w.strip_prefix("-D").unwrap().split_once('=').unwrap();
            let (n, t) = lhs.split_once(':').unwrap();
            assert_eq!(cache[n], (t.to_owned(), v.to_owned()), "{name}: {w}");
        }
        for c in plan.components.iter().filter(|c| !c.is_built()) {
            assert!(
                out.stdout.contains(&format!("# {}: not built", c.name)),
                "{name}: skipped {} not visible",
                c.name
            );
        }
    }
}

#[test]
fn therock_family_request_uses_families_and_switches_miopen_ck_off() {
    // TheRock at ROCm 7.1's release (snapshot therock-f366a78c) gates only MIOpen's use of CK:
    // composable_kernel itself is still built for gfx110X.
    let plan = plan_for("7.1", &[], &["gfx110X-dgpu"], Tool::Therock);
    let out = emit(kb(), &plan, Tool::Therock);
    let line = code_lines(&out.stdout)[0];
    assert!(
        line.starts_with("-DTHEROCK_AMDGPU_FAMILIES:STRING=gfx110X-dgpu "),
        "{line}"
    );
    // MIOpen (built) requires COMPOSABLE_KERNEL: TheRock would turn it back on, so it is not
    // written OFF; MIOpen's use of CK is.
    assert!(!line.contains("THEROCK_ENABLE_COMPOSABLE_KERNEL"), "{line}");
    assert!(
        line.contains("-DTHEROCK_MIOPEN_USE_COMPOSABLE_KERNEL:BOOL=OFF"),
        "{line}"
    );
    assert!(!line.contains("THEROCK_AMDGPU_TARGETS"), "{line}");
    assert!(!line.contains("THEROCK_AMDGPU_DIST_BUNDLE_NAME"), "{line}");
}

/// The seed case of issue 13 in Nix: what the plan changes and nixpkgs has no argument for
/// (MIOPEN_USE_MLIR, CK's pinned INSTANCES_ONLY) is appended to the derivation's cmakeFlags,
/// and MIOpen does not link CK; evaluated by nix-instantiate against the stand-in scope.
#[test]
fn nix_overlay_appends_the_settings_a_derivation_has_no_argument_for() {
    require_tool("nix-instantiate", &["--version"]);
    let plan = plan_for("6.2", &["gfx1030"], &[], Tool::Nix);
    let out = emit(kb(), &plan, Tool::Nix);
    let got = eval_overlay(&scratch("nix-seed-6.2"), &out.stdout, "6.2.4").unwrap();
    let miopen = &got["miopen"];
    assert_eq!(miopen["withComposableKernel"], Value::Bool(false), "{got}");
    assert_eq!(
        miopen["appended"],
        serde_json::json!(["-DMIOPEN_USE_MLIR=OFF"]),
        "{got}"
    );
    let ck = &got["composable_kernel_base"];
    assert_eq!(
        ck["appended"],
        serde_json::json!(["-DINSTANCES_ONLY=OFF"]),
        "{got}"
    );
    // A default the plan does not touch is left to the derivation.
    assert!(
        got["migraphx"].get("appended").is_none(),
        "MIGRAPHX_ENABLE_MLIR stays nixpkgs' choice: {got}"
    );
}
