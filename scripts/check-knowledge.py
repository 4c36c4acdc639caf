#!/usr/bin/env python3
"""Validate the ROCm planning knowledge base in crates/rocpack-plan/data (docs/plan-knowledge.md).

Checks:
  * every fact-bearing table cites `sources`, and every cited key exists in sources.toml
    (and every source entry says where it was read and what it says);
  * each release's build_order lists each of its components exactly once and is a topological
    order of deps and optional_deps;
  * every referenced component, kernel family, TheRock snapshot, option and release exists;
  * every target is a processor or generic target of crates/rocpack-amdgpu/data/gpus.toml (or a
    TheRock special target), with only the target features (xnack, sramecc) that processor has;
  * enumerated fields hold known values; pitfall conditions and remedies are well formed.

Usage: scripts/check-knowledge.py [DATA_DIR]   (exit 0 when valid, 1 with a list of problems)

Self-test of the condition language (not a planner): evaluate every pitfall of a release for a
request, with every component planned, every target variable a component reads set to
requested ∩ supported, and options at their defaults unless overridden:

  scripts/check-knowledge.py --try --release 6.4 --gpu gfx1030 [--family NAME] [--emitter cmake]
                             [--set COMPONENT:OPTION=VALUE ...]

Standard library only (tomllib, Python 3.11+).
"""
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRY = "--try" in sys.argv
_positional = [a for a in sys.argv[1:] if not a.startswith("--")] if not TRY else []
DATA = Path(_positional[0]) if _positional else ROOT / "crates/rocpack-plan/data"
GPUS = ROOT / "crates/rocpack-amdgpu/data/gpus.toml"

CONFIDENCE = {"confirmed", "secondary", "approximate", "unconfirmed"}
SOURCE_KINDS = {"primary", "packaging", "binary", "secondary", "digest"}
KINDS = {"toolchain", "runtime", "library", "tool"}
DEVICE_CODE = {"compiled", "header-only", "host-only", "runtime", "none"}
LAYOUTS = {"rocm", "debian"}
ROLES = {"host-library", "device-library", "device-data", "static-library", "headers", "tool"}
PACKAGE_SYSTEMS = {"debian", "spack", "gentoo", "nixpkgs"}
SEVERITY = {"error", "warning", "info"}
EFFECTS = {"variable-ignored", "configure-error", "link-error", "targets-dropped", "fallback-target",
           "missing-library", "runtime-failure", "build-cost", "component-disabled", "unknown"}
EMITTERS = {"cmake", "spack", "gentoo", "nix", "therock", "json"}
UNKNOWN = {"dropped", "error"}
EMPTY = {"configure-error", "default", "first-default", "ok"}
AFFECTS = {"library", "tests-and-samples"}
FEATURES = {"kept", "stripped"}
TARGET_WORDS = {"all-planned", "outside-supported", "without-xdl-wmma"}
ACTIONS = {"set-option": {"component", "option", "value"},
           "unset-option": {"component", "option"},
           "set-variable": {"component", "variable", "value"},
           "drop-unsupported-targets": {"component"},
           "skip-component": {"component"},
           "add-target": {"component", "target"},
           "note": {"text"}}
TARGET_VARIABLES = {"AMDGPU_TARGETS", "GPU_TARGETS", "GPU_ARCHS", "CMAKE_HIP_ARCHITECTURES"}

errors: list[str] = []
warnings: list[str] = []
cited: set[str] = set()


def err(where: str, msg: str) -> None:
    errors.append(f"{where}: {msg}")


def load(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        err(path.name, f"cannot parse: {e}")
        return {}


# --------------------------------------------------------------------------------------------
# Reference data

gpus = load(GPUS)
PROCESSORS = {g["name"]: g for g in gpus.get("gpu", [])}
sources = load(DATA / "sources.toml")
components_file = load(DATA / "components.toml")
families = load(DATA / "families.toml")
pitfalls = load(DATA / "pitfalls.toml")
COMPONENTS = components_file.get("component", {})
FAMILIES = components_file.get("kernel_families", {})
SPECIAL = families.get("special_targets", {})
release_files = sorted(DATA.glob("rocm-*.toml"))
RELEASES = {}
for p in release_files:
    RELEASES[p.stem.removeprefix("rocm-")] = load(p)


def check_sources(where: str, table: dict, required: bool = True) -> None:
    keys = table.get("sources")
    if keys is None:
        if required:
            err(where, "no `sources`")
        return
    if not isinstance(keys, list) or not keys:
        err(where, "`sources` must be a non-empty list")
        return
    for k in keys:
        if k not in sources:
            err(where, f"unknown source key {k!r}")
        cited.add(k)


def check_confidence(where: str, table: dict, *fields: str) -> None:
    for f in ("confidence",) + fields:
        v = table.get(f)
        if v is not None and v not in CONFIDENCE:
            err(where, f"{f} = {v!r} is not one of {sorted(CONFIDENCE)}")


def check_target(where: str, target) -> None:
    if not isinstance(target, str):
        err(where, f"target {target!r} is not a string")
        return
    parts = target.split(":")
    proc = parts[0]
    if proc in SPECIAL:
        if len(parts) > 1:
            err(where, f"{target!r}: special target with features")
        return
    g = PROCESSORS.get(proc)
    if g is None:
        err(where, f"{target!r}: {proc!r} is not a processor of gpus.toml")
        return
    seen = set()
    for feat in parts[1:]:
        m = re.fullmatch(r"(xnack|sramecc)([+-])", feat)
        if not m:
            err(where, f"{target!r}: bad target feature {feat!r}")
            continue
        if m.group(1) in seen:
            err(where, f"{target!r}: feature {m.group(1)} given twice")
        seen.add(m.group(1))
        if not g.get(m.group(1), False):
            err(where, f"{target!r}: {proc} has no {m.group(1)} feature in gpus.toml")


def check_targets(where: str, value, words: bool = False) -> None:
    if isinstance(value, str):
        if value == "any" or (words and value in TARGET_WORDS):
            return
        err(where, f"expected a target list, 'any'{' or a keyword' if words else ''}, got {value!r}")
        return
    if not isinstance(value, list):
        err(where, f"expected a list of targets, got {value!r}")
        return
    if len(set(value)) != len(value):
        err(where, "duplicate targets")
    for t in value:
        check_target(where, t)


def check_component_ref(where: str, name) -> None:
    if name not in COMPONENTS:
        err(where, f"unknown component {name!r}")


# --------------------------------------------------------------------------------------------
# sources.toml

for key, s in sources.items():
    w = f"sources.toml [{key}]"
    if not isinstance(s, dict):
        err(w, "not a table")
        continue
    if s.get("kind") not in SOURCE_KINDS:
        err(w, f"kind {s.get('kind')!r} is not one of {sorted(SOURCE_KINDS)}")
    if not s.get("what"):
        err(w, "no `what`")
    located = ("repo" in s) or ("url" in s) or ("local" in s) or ("id" in s)
    if not located:
        err(w, "needs repo(+path), url, local or id")
    if "path" in s and "repo" not in s:
        err(w, "path without repo")
    if "commit" in s and not re.fullmatch(r"[0-9a-f]{40}", s["commit"]):
        err(w, f"commit {s['commit']!r} is not 40 hex digits")
    if "repo" in s and not re.fullmatch(r"[\w.-]+/[\w.-]+", s["repo"]):
        err(w, f"repo {s['repo']!r} is not owner/name")
    unknown = set(s) - {"kind", "repo", "path", "commit", "id", "url", "local", "what", "note"}
    if unknown:
        err(w, f"unknown fields {sorted(unknown)}")

# --------------------------------------------------------------------------------------------
# components.toml

for fam, f in FAMILIES.items():
    w = f"components.toml [kernel_families.{fam}]"
    check_sources(w, f)
    check_targets(w, f.get("hardware", []))
    if not f.get("description"):
        err(w, "no description")

ALIASES: dict[str, str] = {}
for name, c in COMPONENTS.items():
    w = f"components.toml [component.{name}]"
    check_sources(w, c)
    check_confidence(w, c)
    if c.get("kind") not in KINDS:
        err(w, f"kind {c.get('kind')!r} is not one of {sorted(KINDS)}")
    if c.get("device_code") not in DEVICE_CODE:
        err(w, f"device_code {c.get('device_code')!r} is not one of {sorted(DEVICE_CODE)}")
    if not c.get("description"):
        err(w, "no description")
    for alias in [name] + c.get("aliases", []):
        low = alias.lower()
        if low in ALIASES and ALIASES[low] != name:
            err(w, f"alias {alias!r} also names {ALIASES[low]!r}")
        ALIASES[low] = name
    for i, f in enumerate(c.get("files", [])):
        fw = f"{w} files[{i}]"
        if f.get("layout") not in LAYOUTS:
            err(fw, f"layout {f.get('layout')!r}")
        if f.get("role") not in ROLES:
            err(fw, f"role {f.get('role')!r}")
        if not f.get("glob") or f["glob"].startswith("/"):
            err(fw, "glob must be a relative pattern")
        elif f.get("layout") == "debian" and not f["glob"].startswith("usr/"):
            err(fw, "debian globs start with usr/")
        for r in f.get("releases", []):
            if r not in RELEASES:
                err(fw, f"unknown release {r!r}")
        check_confidence(fw, f)
        check_sources(fw, f, required=False)
    pk = c.get("packages", {})
    for system, names in pk.items():
        if system not in PACKAGE_SYSTEMS:
            err(f"{w} packages", f"unknown package system {system!r}")
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            err(f"{w} packages.{system}", "must be a list of names")
    if c.get("device_code") in {"compiled", "runtime"} and not any(
            f.get("role") in {"device-library", "device-data", "static-library"} for f in c.get("files", [])):
        err(w, "device-code component without device files")

# --------------------------------------------------------------------------------------------
# families.toml

for name, s in SPECIAL.items():
    check_sources(f"families.toml [special_targets.{name}]", s)
OTHER_PROJECTS = set(families.get("other_projects", []))
CNAMES = families.get("component_names", {})
for k, v in CNAMES.items():
    check_component_ref(f"families.toml component_names.{k}", v)
SNAPSHOTS = {}
for i, snap in enumerate(families.get("snapshot", [])):
    w = f"families.toml snapshot[{i}]"
    sid = snap.get("id")
    if not sid:
        err(w, "no id")
        continue
    w = f"families.toml snapshot {sid}"
    if sid in SNAPSHOTS:
        err(w, "duplicate id")
    SNAPSHOTS[sid] = snap
    check_sources(w, snap)
    check_confidence(w, snap)
    for fam, members in snap.get("families", {}).items():
        check_targets(f"{w} families.{fam}", members)
        if not members:
            err(f"{w} families.{fam}", "empty family")
    for table in ("exclude", "incompatible", "default_gpu_targets"):
        for proj, targets in snap.get(table, {}).items():
            pw = f"{w} {table}.{proj}"
            if proj not in COMPONENTS and proj not in CNAMES and proj not in OTHER_PROJECTS:
                err(pw, "unknown project (not a component, component_names key or other_projects entry)")
            check_targets(pw, targets)
    gate = snap.get("ck_gate")
    if gate:
        check_sources(f"{w} ck_gate", gate)
        check_targets(f"{w} ck_gate.supported", gate.get("supported", []))
        for c in gate.get("disables", []):
            check_component_ref(f"{w} ck_gate.disables", c)

# --------------------------------------------------------------------------------------------
# Release files

OPTIONS: dict[tuple[str, str], set[str]] = {}   # (release, component) -> option names


def option_names(rel: str, comp: str) -> set[str]:
    return OPTIONS.get((rel, comp), set())


for rel, data in RELEASES.items():
    f = f"rocm-{rel}.toml"
    r = data.get("release", {})
    if r.get("version") != rel:
        err(f, f"[release].version {r.get('version')!r} does not match the file name")
    check_sources(f"{f} [release]", r)
    for p in r.get("point_releases", []):
        if not p.startswith(rel + "."):
            err(f, f"point release {p!r} is not a {rel}.x release")
    if r.get("therock_snapshot") not in SNAPSHOTS:
        err(f, f"unknown therock_snapshot {r.get('therock_snapshot')!r}")
    if not isinstance(r.get("hip_generic_fallback"), bool):
        err(f, "hip_generic_fallback must be true or false")
    comp_tables = data.get("components", {})
    order = r.get("build_order", [])
    if len(set(order)) != len(order):
        err(f, "build_order lists a component twice")
    if set(order) != set(comp_tables):
        missing = sorted(set(comp_tables) - set(order))
        extra = sorted(set(order) - set(comp_tables))
        if missing:
            err(f, f"components not in build_order: {missing}")
        if extra:
            err(f, f"build_order entries without a [components] table: {extra}")
    compiler = r.get("compiler", {})
    check_sources(f"{f} [release.compiler]", compiler)
    check_targets(f"{f} [release.compiler].absent_targets", compiler.get("absent_targets", []))
    position = {name: i for i, name in enumerate(order)}
    for name, c in comp_tables.items():
        w = f"{f} [components.{name}]"
        check_component_ref(w, name)
        check_sources(w, c)
        check_confidence(w, c)
        deps = list(c.get("deps", []))
        for od in c.get("optional_deps", []):
            if not {"name", "option"} <= set(od):
                err(w, f"optional dependency {od!r} needs name and option")
                continue
            deps.append(od["name"])
            OPTIONS.setdefault((rel, name), set()).add(od["option"])
        for d in deps:
            check_component_ref(f"{w} deps", d)
            if d not in comp_tables:
                err(w, f"dependency {d!r} is not a component of this release")
            elif name in position and position[d] >= position[name]:
                err(w, f"dependency {d!r} comes after it in build_order")
            if d == name:
                err(w, "depends on itself")
        t = c.get("targets")
        if t is not None:
            tw = f"{w}.targets"
            check_sources(tw, t)
            check_confidence(tw, t, "variable_confidence", "default_confidence", "supported_confidence", "empty_confidence")
            for v in [t.get("variable")] + t.get("also", []):
                if v not in TARGET_VARIABLES:
                    err(tw, f"unknown target variable {v!r}")
            for x in t.get("extra", []):
                if not {"name", "how"} <= set(x):
                    err(tw, f"extra variable {x!r} needs name and how")
            if "default" in t:
                check_targets(f"{tw}.default", t["default"])
            if "supported" not in t:
                err(tw, "no `supported` (a list or 'any')")
            else:
                check_targets(f"{tw}.supported", t["supported"])
                if isinstance(t["supported"], list) and isinstance(t.get("default"), list):
                    base = {x.split(":")[0] for x in t["supported"]}
                    out = [x for x in t["default"] if x.split(":")[0] not in base]
                    if out:
                        warnings.append(f"{tw}: default targets outside supported: {out}")
            if t.get("unknown") is not None and t["unknown"] not in UNKNOWN:
                err(tw, f"unknown = {t['unknown']!r}")
            if t.get("empty") is not None and t["empty"] not in EMPTY:
                err(tw, f"empty = {t['empty']!r}")
            if t.get("affects") is not None and t["affects"] not in AFFECTS:
                err(tw, f"affects = {t['affects']!r}")
            if t.get("features") is not None and t["features"] not in FEATURES:
                err(tw, f"features = {t['features']!r}")
            if t.get("follows") is not None:
                check_component_ref(f"{tw}.follows", t["follows"])
        elif COMPONENTS.get(name, {}).get("device_code") == "compiled":
            err(w, "component compiles device code but has no [targets] table")
        for i, kf in enumerate(c.get("kernel_families", [])):
            kw = f"{w}.kernel_families[{i}]"
            check_sources(kw, kf)
            check_confidence(kw, kf)
            if kf.get("family") not in FAMILIES:
                err(kw, f"unknown kernel family {kf.get('family')!r}")
            check_targets(kw, kf.get("targets"), words=True)
        for i, lim in enumerate(c.get("limits", [])):
            lw = f"{w}.limits[{i}]"
            check_sources(lw, lim)
            check_confidence(lw, lim)
            check_targets(lw, lim.get("targets"), words=True)
            if lim.get("effect") not in EFFECTS:
                err(lw, f"effect {lim.get('effect')!r}")
        for i, o in enumerate(c.get("options", [])):
            ow = f"{w}.options[{i}]"
            check_sources(ow, o)
            check_confidence(ow, o)
            if not o.get("name") or "effect" not in o or "default" not in o:
                err(ow, "an option needs name, default and effect")
            else:
                OPTIONS.setdefault((rel, name), set()).add(o["name"])
    deb = data.get("debian")
    if deb is not None:
        dw = f"{f} [debian]"
        check_sources(dw, deb)
        check_targets(f"{dw}.targets", deb.get("targets", []))
        for k, lst in deb.get("other_lists", {}).items():
            check_targets(f"{dw}.other_lists.{k}", lst)
        for i, pkg in enumerate(deb.get("packages", [])):
            pw = f"{dw}.packages[{i}]"
            check_sources(pw, pkg)
            check_confidence(pw, pkg)
            check_component_ref(pw, pkg.get("component"))
            check_targets(pw, pkg.get("device_targets", []))
            deb_names = COMPONENTS.get(pkg.get("component"), {}).get("packages", {}).get("debian", [])
            if pkg.get("package") not in deb_names:
                err(pw, f"package {pkg.get('package')!r} is not among {pkg.get('component')}'s debian packages {deb_names}")
            if not re.fullmatch(r"\d+\.\d+", str(pkg.get("rocm", ""))):
                err(pw, "rocm must be a X.Y release line")

# --------------------------------------------------------------------------------------------
# pitfalls.toml

PRED_KEYS = {"all", "any", "not", "option", "option_passed", "variable_set", "variable_empty", "requested_any_of",
             "requested_none_of", "requested_any_outside", "requested_any_outside_supported",
             "effective_empty", "requested_unknown_to_compiler", "component_planned", "emitter",
             "target_unknown"}


def pred_component(where: str, value, comps: list[str]) -> list[str]:
    if value in (None, "self", True):
        return comps
    check_component_ref(where, value)
    return [value]


def check_pred(where: str, p, comps: list[str], releases: list[str]) -> None:
    if not isinstance(p, dict):
        err(where, f"predicate {p!r} is not a table")
        return
    main = [k for k in p if k not in ("component", "is")]
    if len(main) != 1 or main[0] not in PRED_KEYS:
        err(where, f"predicate {p!r} must have exactly one of {sorted(PRED_KEYS)}")
        return
    k = main[0]
    v = p[k]
    if k in ("all", "any"):
        if not isinstance(v, list) or not v:
            err(where, f"{k} needs a non-empty list")
            return
        for i, q in enumerate(v):
            check_pred(f"{where}.{k}[{i}]", q, comps, releases)
    elif k == "not":
        check_pred(f"{where}.not", v, comps, releases)
    elif k in ("option", "option_passed"):
        if "is" not in p:
            err(where, f"{k} predicate needs `is`")
        for c in pred_component(where, p.get("component"), comps):
            if not any(v in option_names(r, c) for r in releases):
                err(where, f"option {v!r} of {c} is not declared in any of the pitfall's releases")
    elif k in ("variable_set", "variable_empty"):
        if v not in TARGET_VARIABLES:
            err(where, f"{k}: unknown variable {v!r}")
        pred_component(where, p.get("component"), comps)
    elif k in ("requested_any_of", "requested_none_of", "requested_any_outside"):
        check_targets(where, v)
    elif k in ("requested_any_outside_supported", "effective_empty", "component_planned"):
        for c in pred_component(where, v, comps):
            for r in releases:
                t = RELEASES.get(r, {}).get("components", {}).get(c, {}).get("targets")
                if k != "component_planned" and (t is None or "supported" not in t):
                    err(where, f"{k}: {c} has no supported set in {r}")
    elif k == "requested_unknown_to_compiler":
        if v is not True:
            err(where, "requested_unknown_to_compiler must be true")
    elif k == "emitter":
        if v not in EMITTERS:
            err(where, f"unknown emitter {v!r}")
    elif k == "target_unknown":
        if v not in ("dropped", "error"):
            err(where, f"target_unknown must be dropped or error, not {v!r}")


ids = set()
for i, pf in enumerate(pitfalls.get("pitfall", [])):
    pid = pf.get("id") or f"#{i}"
    w = f"pitfalls.toml {pid}"
    if pid in ids:
        err(w, "duplicate id")
    ids.add(pid)
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", pid):
        err(w, "id must be kebab-case")
    check_sources(w, pf)
    check_confidence(w, pf)
    if pf.get("severity") not in SEVERITY:
        err(w, f"severity {pf.get('severity')!r}")
    if pf.get("effect") not in EFFECTS:
        err(w, f"effect {pf.get('effect')!r}")
    if not pf.get("message"):
        err(w, "no message")
    rels = pf.get("releases", [])
    if not rels:
        err(w, "no releases")
    for r in rels:
        if r not in RELEASES:
            err(w, f"unknown release {r!r}")
    comps = pf.get("components", [])
    if not comps:
        err(w, "no components")
    for c in comps:
        check_component_ref(w, c)
    if "when" not in pf:
        err(w, "no `when`")
    else:
        check_pred(f"{w} when", pf["when"], comps, [r for r in rels if r in RELEASES])
    for j, rem in enumerate(pf.get("remedies", [])):
        rw = f"{w} remedies[{j}]"
        act = rem.get("action")
        if act not in ACTIONS:
            err(rw, f"unknown action {act!r}")
            continue
        if set(rem) - {"action"} != ACTIONS[act]:
            err(rw, f"{act} takes {sorted(ACTIONS[act])}")
        targets = pred_component(rw, rem.get("component"), comps) if "component" in rem else []
        if "option" in rem:
            for c in targets:
                if not any(rem["option"] in option_names(r, c) for r in rels):
                    err(rw, f"option {rem['option']!r} of {c} is not declared in any of the pitfall's releases")
        if "variable" in rem and rem["variable"] not in TARGET_VARIABLES:
            err(rw, f"unknown variable {rem['variable']!r}")
        if "target" in rem:
            check_target(rw, rem["target"])

# --------------------------------------------------------------------------------------------
# emitters.toml (what Spack, Gentoo, nixpkgs and TheRock can express)

emitters = load(DATA / "emitters.toml")
KNOBS = {"spack": "variant", "gentoo": "flag", "nix": "argument", "therock": "variable"}
OPTION_KEYS = {"option", "component", "fixed", "fixed_when", "releases", "sources", "confidence", "note"}


def packaged(system: str, name: str) -> list[str]:
    """Components whose packages.<system> list names `name`."""
    return [c for c, info in COMPONENTS.items() if name in info.get("packages", {}).get(system, [])]


def check_tool_options(where: str, tool: str, options, comps: list[str]) -> None:
    if not isinstance(options, list):
        err(where, "option must be an array of tables")
        return
    for i, o in enumerate(options):
        ow = f"{where} option[{i}]"
        check_sources(ow, o)
        check_confidence(ow, o)
        unknown = set(o) - OPTION_KEYS - {KNOBS[tool]}
        if unknown:
            err(ow, f"unknown fields {sorted(unknown)} (the knob of {tool} is `{KNOBS[tool]}`)")
        name = o.get("option")
        if not name:
            err(ow, "no option")
            continue
        if KNOBS[tool] in o and "fixed" in o:
            err(ow, f"both `{KNOBS[tool]}` and `fixed`")
        if "fixed_when" in o:
            if "fixed" not in o:
                err(ow, "fixed_when without fixed")
            check_targets(ow, o["fixed_when"])
        rels = o.get("releases", list(RELEASES))
        for r in rels:
            if r not in RELEASES:
                err(ow, f"unknown release {r!r}")
        targets = [o["component"]] if tool == "therock" else comps
        if tool == "therock":
            check_component_ref(ow, o.get("component"))
        if not any(name in option_names(r, c) for r in rels for c in targets):
            err(ow, f"option {name!r} is not declared for {targets} in releases {rels}")


sp = emitters.get("spack", {})
check_sources("emitters.toml [spack]", sp)
for t in sp.get("amdgpu_target_values", []):
    check_target("emitters.toml [spack].amdgpu_target_values", t)
for name, p in sp.get("package", {}).items():
    w = f"emitters.toml [spack.package.{name}]"
    check_sources(w, p)
    check_confidence(w, p)
    comps = packaged("spack", name)
    if not comps:
        err(w, "not a Spack package of any component (components.toml packages.spack)")
    for t in p.get("amdgpu_target_values", []) + p.get("fixed_targets", []):
        check_target(w, t)
    for dep in p.get("propagates", []):
        if not packaged("spack", dep):
            err(w, f"propagates to {dep!r}, which is not a Spack package of any component")
    check_tool_options(w, "spack", p.get("option", []), comps)

ge = emitters.get("gentoo", {})
check_sources("emitters.toml [gentoo]", ge)
for rel, targets in ge.get("targets", {}).items():
    w = f"emitters.toml [gentoo.targets].{rel}"
    if rel not in RELEASES:
        err(w, "unknown release")
    check_targets(w, targets)
    if any(":" in t for t in targets):
        err(w, "Gentoo flags are processor names (no target features)")
for atom, p in ge.get("package", {}).items():
    w = f'emitters.toml [gentoo.package."{atom}"]'
    check_sources(w, p)
    check_confidence(w, p)
    comps = packaged("gentoo", atom)
    if not comps:
        err(w, "not a Gentoo atom of any component (components.toml packages.gentoo)")
    for rel, targets in p.get("targets", {}).items():
        if rel not in RELEASES:
            err(w, f"targets: unknown release {rel!r}")
        check_targets(f"{w}.targets.{rel}", targets)
    check_tool_options(w, "gentoo", p.get("option", []), comps)

nx = emitters.get("nix", {})
check_sources("emitters.toml [nix]", nx)
for attr, p in nx.get("package", {}).items():
    w = f"emitters.toml [nix.package.{attr}]"
    check_sources(w, p)
    check_confidence(w, p)
    comps = packaged("nixpkgs", attr)
    if not comps:
        err(w, "not a nixpkgs attribute of any component (components.toml packages.nixpkgs)")
    check_tool_options(w, "nix", p.get("option", []), comps)

tr = emitters.get("therock", {})
check_sources("emitters.toml [therock]", tr)
check_confidence("emitters.toml [therock]", tr)
features = tr.get("feature", {})
seen_components: dict[str, str] = {}
for name, f in features.items():
    w = f"emitters.toml [therock.feature.{name}]"
    check_sources(w, f)
    check_confidence(w, f)
    if not re.fullmatch(r"[A-Z0-9_]+", name):
        err(w, "feature names are THEROCK_ENABLE_<NAME> suffixes (upper case)")
    for c in f.get("components", []):
        check_component_ref(w, c)
        if c in seen_components:
            err(w, f"{c} is also built by feature {seen_components[c]}")
        seen_components[c] = name
    for r in f.get("requires", []):
        if r not in features:
            err(w, f"requires unknown feature {r!r}")
check_tool_options("emitters.toml [therock]", "therock", tr.get("option", []), [])

# --------------------------------------------------------------------------------------------

for key in sorted(set(sources) - cited):
    warnings.append(f"sources.toml [{key}] is never cited")

for w in warnings:
    print(f"warning: {w}")
if errors:
    for e in errors:
        print(f"error: {e}")
    print(f"check-knowledge: {len(errors)} error(s)")
    sys.exit(1)



def try_request(argv: list[str]) -> None:
    """Evaluate the pitfalls of one release for a request (see the module docstring)."""
    import argparse
    ap = argparse.ArgumentParser(prog="check-knowledge.py --try")
    ap.add_argument("--try", dest="try_", action="store_true")
    ap.add_argument("--release", required=True)
    ap.add_argument("--gpu", nargs="*", default=[])
    ap.add_argument("--family", nargs="*", default=[])
    ap.add_argument("--emitter", default="cmake")
    ap.add_argument("--set", nargs="*", default=[], dest="sets")
    a = ap.parse_args(argv)
    rel = RELEASES[a.release]
    snap = SNAPSHOTS[rel["release"]["therock_snapshot"]]
    requested = list(a.gpu)
    for fam in a.family:
        requested += snap["families"].get(fam, [fam])
    absent = set(rel["release"].get("compiler", {}).get("absent_targets", []))
    comps = rel["components"]
    proc = lambda t: t.split(":")[0]

    def supported(c):
        t = comps.get(c, {}).get("targets") or {}
        return t.get("supported", "any")

    def effective(c):
        sup = supported(c)
        known = [t for t in requested if proc(t) not in absent]
        if sup == "any":
            return known
        base = {proc(x) for x in sup}
        return [t for t in known if proc(t) in base]

    options = {}
    for c, d in comps.items():
        for o in d.get("options", []):
            options[(c, o["name"])] = o["default"]
        for od in d.get("optional_deps", []):
            options[(c, od["option"])] = od["default"]
    passed = {}
    for kv_ in a.sets:
        c, rest = kv_.split(":", 1)
        k, v = rest.split("=", 1)
        options[(c, k)] = v
        passed[(c, k)] = v

    def reads(c):
        t = comps.get(c, {}).get("targets") or {}
        return {t.get("variable")} | set(t.get("also", []))

    def holds(p, c):
        k = [x for x in p if x not in ("component", "is")][0]
        v = p[k]
        cc = c if p.get("component") in (None, "self") else p["component"]
        if k == "all":
            return all(holds(q, c) for q in v)
        if k == "any":
            return any(holds(q, c) for q in v)
        if k == "not":
            return not holds(v, c)
        if k == "option":
            return options.get((cc, v), "") == p["is"]
        if k == "option_passed":
            return passed.get((cc, v)) == p["is"]
        if k == "variable_set":
            return v in reads(cc) and bool(effective(cc))
        if k == "variable_empty":
            return v in reads(cc) and not effective(cc)
        if k == "requested_any_of":
            return any(proc(t) in v for t in requested)
        if k == "requested_none_of":
            return not any(proc(t) in v for t in requested)
        if k == "requested_any_outside":
            return any(proc(t) not in v for t in requested)
        if k == "requested_any_outside_supported":
            x = c if v in ("self", True) else v
            sup = supported(x)
            return sup != "any" and any(proc(t) not in {proc(s) for s in sup} for t in requested)
        if k == "effective_empty":
            x = c if v in ("self", True) else v
            return not effective(x)
        if k == "requested_unknown_to_compiler":
            return any(proc(t) in absent for t in requested)
        if k == "component_planned":
            return v in comps
        if k == "emitter":
            return v == a.emitter
        if k == "target_unknown":
            return ((comps.get(c, {}).get("targets") or {}).get("unknown")) == v
        raise ValueError(k)

    print(f"release {a.release}, requested {requested}, emitter {a.emitter}")
    for c in rel["release"]["build_order"]:
        if comps[c].get("targets"):
            print(f"  {c:18} {' '.join(effective(c)) or '(none)'}")
    for pf in pitfalls.get("pitfall", []):
        if a.release not in pf["releases"]:
            continue
        for c in pf["components"]:
            if c in comps and holds(pf["when"], c):
                print(f"{pf['severity']}: {pf['id']} [{c}]: {pf['message']}")
                for r in pf.get("remedies", []):
                    print(f"    -> {inline_remedy(r)}")


def inline_remedy(r: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in r.items())


if TRY and not errors:
    try_request(sys.argv[1:])
    sys.exit(0)

n_comp = sum(len(d.get("components", {})) for d in RELEASES.values())
print(f"check-knowledge: OK: {len(RELEASES)} releases ({', '.join(sorted(RELEASES))}), "
      f"{len(COMPONENTS)} components, {n_comp} release component entries, "
      f"{len(pitfalls.get('pitfall', []))} pitfalls, {len(SNAPSHOTS)} TheRock snapshots, "
      f"{len(sources)} sources, {len(PROCESSORS)} catalogue targets")
