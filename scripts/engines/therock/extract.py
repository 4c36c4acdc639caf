#!/usr/bin/env python3
"""Extract TheRock's target-selection and feature facts at one commit into
crates/rocpack-plan/data/engines/therock.toml.

Usage: extract.py GIT_DIR [COMMIT...] [-o OUT]

GIT_DIR is a clone of ROCm/TheRock (for example the mirror the `fetch` tool makes,
/work/.mirror/ROCm+TheRock/repo). COMMITs default to the ones the knowledge base's TheRock
snapshots cite (families.toml: therock-02eb4a57 for 6.0-7.0, therock-f366a78c, TheRock main on
the day ROCm 7.1.0 was released); each gets its own [facts."therock-<8 hex>"] table. Nothing of
TheRock is copied into the output: only names, lists and the path:line each fact was read at.

What is read, all mechanically (a small CMake tokenizer, no hand-typed values):
  - cmake/therock_amdgpu_targets.cmake: every therock_add_amdgpu_target() call (target, product
    name, FAMILY and EXCLUDE_TARGET_PROJECTS as cmake_parse_arguments would split them: values
    before the first keyword are ignored by TheRock), the FATAL_ERROR checks of
    therock_validate_amdgpu_targets and the variables it reads;
  - CMakeLists.txt: the THEROCK_* cache variables and options it declares, manual
    therock_add_feature() calls;
  - BUILD_TOPOLOGY.toml through TheRock's own generator (build_tools/topology_to_cmake.py, run
    from a temporary export of the commit): the generated therock_add_feature() calls;
  - every CMakeLists.txt reached by add_subdirectory() from the top: each
    therock_cmake_subproject_declare() with the THEROCK_ENABLE_* conditions around it, its
    DEFAULT_GPU_TARGETS, whether it takes the per-architecture or the distribution target list,
    and its -D arguments;
  - ml-libs/CMakeLists.txt: the composable-kernel gate (the list MIOpen's use of CK is limited to).
Re-running on the same commit gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile
import tomllib

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
import tomlw  # noqa: E402  (scripts/engines/tomlw.py)

DEFAULT_COMMITS = [
    "02eb4a57fdf5a19809c807e51fcd6945b432ddc1",
    "f366a78cbf788333d1e08e0e1d85f89e519c6716",
]
REPO = "ROCm/TheRock"
SCRIPT = "scripts/engines/therock/extract.py"
ROOT = pathlib.Path(__file__).resolve().parents[3]
DATA = ROOT / "crates/rocpack-plan/data"


# --------------------------------------------------------------------------------------------
# A CMake command tokenizer: enough of the language for TheRock's own files (quoted and unquoted
# arguments, nested parentheses, line and bracket comments).


class Command:
    def __init__(self, name: str, args: list[str], line: int):
        self.name = name.lower()
        self.args = args
        self.line = line


def parse_cmake(text: str) -> list[Command]:
    out: list[Command] = []
    i, n, line = 0, len(text), 1
    ident = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            continue
        if c.isspace():
            i += 1
            continue
        if c == "#":
            i, line = skip_comment(text, i, line)
            continue
        m = ident.match(text, i)
        if not m:
            i += 1
            continue
        name, start_line = m.group(0), line
        i = m.end()
        while i < n and text[i] in " \t":
            i += 1
        if i >= n or text[i] != "(":
            continue
        i += 1
        args: list[str] = []
        depth = 0
        while i < n:
            c = text[i]
            if c == "\n":
                line += 1
                i += 1
            elif c.isspace():
                i += 1
            elif c == "#":
                i, line = skip_comment(text, i, line)
            elif c == ")":
                i += 1
                if depth == 0:
                    break
                depth -= 1
                args.append(")")
            elif c == "(":
                depth += 1
                args.append("(")
                i += 1
            elif c == '"':
                j = i + 1
                buf = []
                while j < n and text[j] != '"':
                    if text[j] == "\\" and j + 1 < n:
                        buf.append(text[j : j + 2])
                        j += 2
                        continue
                    if text[j] == "\n":
                        line += 1
                    buf.append(text[j])
                    j += 1
                args.append("".join(buf))
                i = j + 1
            else:
                j = i
                while j < n and not text[j].isspace() and text[j] not in '()#"':
                    j += 1
                args.append(text[i:j])
                i = j
        out.append(Command(name, args, start_line))
    return out


def skip_comment(text: str, i: int, line: int) -> tuple[int, int]:
    m = re.match(r"#\[(=*)\[", text[i:])
    if m:
        end = text.find("]" + m.group(1) + "]", i)
        end = len(text) if end < 0 else end + len(m.group(1)) + 2
        return end, line + text.count("\n", i, end)
    end = text.find("\n", i)
    return (len(text) if end < 0 else end), line


def split_keywords(args: list[str], options: set[str], one: set[str], multi: set[str]):
    """cmake_parse_arguments: values before the first keyword are 'unparsed'."""
    res: dict[str, object] = {}
    unparsed: list[str] = []
    cur = None
    for a in args:
        if a in options:
            res[a] = True
            cur = None
        elif a in one:
            res[a] = None
            cur = ("one", a)
        elif a in multi:
            res.setdefault(a, [])
            cur = ("multi", a)
        elif cur is None:
            unparsed.append(a)
        elif cur[0] == "one":
            res[cur[1]] = a
            cur = None
        else:
            res[cur[1]].append(a)  # type: ignore[union-attr]
    return res, unparsed


# --------------------------------------------------------------------------------------------


def git(git_dir: str, *args: str) -> str:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True
    ).stdout


def export(git_dir: str, commit: str, dest: pathlib.Path) -> None:
    archive = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", commit], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


def at(path: str, line: int) -> str:
    return f"{path}:{line}"


def targets_file(src: pathlib.Path):
    path = "cmake/therock_amdgpu_targets.cmake"
    cmds = parse_cmake((src / path).read_text())
    targets = {}
    for c in cmds:
        if c.name != "therock_add_amdgpu_target" or len(c.args) < 2:
            continue
        kw, unparsed = split_keywords(
            c.args[2:], set(), set(), {"FAMILY", "EXCLUDE_TARGET_PROJECTS"}
        )
        entry = {
            "name": c.args[1],
            "families": list(kw.get("FAMILY", [])),
            "exclude": list(kw.get("EXCLUDE_TARGET_PROJECTS", [])),
            "at": at(path, c.line),
        }
        if unparsed:
            entry["ignored_arguments"] = unparsed
        targets[c.args[0]] = entry
    # The checks of therock_validate_amdgpu_targets, as TheRock words them.
    checks = []
    inside = False
    reads = set()
    text = (src / path).read_text().splitlines()
    for c in cmds:
        if c.name == "function":
            inside = c.args[:1] == ["therock_validate_amdgpu_targets"]
        if not inside:
            continue
        if c.name == "message" and c.args[:1] == ["FATAL_ERROR"]:
            msg = "".join(a for a in c.args[1:] if not a.startswith("${_"))
            checks.append({"message": re.sub(r"\s+", " ", msg).strip(), "at": at(path, c.line)})
    start = end = None
    for i, l in enumerate(text, 1):
        if l.startswith("function(therock_validate_amdgpu_targets"):
            start = i
        elif start and end is None and l.startswith("endfunction"):
            end = i
    for l in text[(start or 1) - 1 : end or len(text)]:
        for v in re.findall(r"\$\{(THEROCK_[A-Z_]+)\}", l):
            reads.add(v)
    fams = {}
    for t, e in targets.items():
        for f in [t, *e["families"]]:
            fams.setdefault(f, []).append(t)
    return targets, fams, checks, sorted(reads), at(path, start or 0)


def top_cache(src: pathlib.Path):
    path = "CMakeLists.txt"
    cmds = parse_cmake((src / path).read_text())
    cache = {}
    features = {}
    # Local `set(_name ...)` values on Linux: branches on WIN32 are taken as on Linux, others as
    # written (TheRock's top level only switches list variables on the platform).
    local: dict[str, list[str]] = {}
    linux: list[bool] = []
    for c in cmds:
        a = c.args
        if c.name == "if":
            cond = " ".join(a)
            linux.append(cond != "WIN32")
            continue
        if c.name == "else" and linux:
            linux[-1] = not linux[-1]
            continue
        if c.name == "endif" and linux:
            linux.pop()
            continue
        if not all(linux):
            continue
        if c.name == "set" and a and a[0].startswith("_") and "CACHE" not in a:
            local[a[0]] = [x for v in a[1:] for x in local.get(v[2:-1], [v]) if v] if a[1:] else []
            continue
        a = [x for v in a for x in (local.get(v[2:-1], [v]) if v.startswith("${_") else [v])]
        if c.name == "set" and len(a) >= 4 and a[0].startswith("THEROCK_") and "CACHE" in a:
            k = a.index("CACHE")
            cache[a[0]] = {
                "kind": "cache",
                "type": a[k + 1] if k + 1 < len(a) else "",
                "default": a[1] if k > 1 else "",
                "at": at(path, c.line),
            }
        elif c.name == "option" and a and a[0].startswith("THEROCK_"):
            cache[a[0]] = {
                "kind": "option",
                "type": "BOOL",
                "default": a[2] if len(a) > 2 else "OFF",
                "at": at(path, c.line),
            }
        elif c.name == "cmake_dependent_option" and a and a[0].startswith("THEROCK_"):
            cache[a[0]] = {
                "kind": "cmake_dependent_option",
                "type": "BOOL",
                "default": a[2],
                "depends": a[3],
                "otherwise": a[4] if len(a) > 4 else "",
                "at": at(path, c.line),
            }
        elif c.name == "therock_add_feature" and a:
            features[a[0]] = feature_entry(a, at(path, c.line))
    return cache, features


def feature_entry(args: list[str], where: str) -> dict:
    kw, _ = split_keywords(
        args[1:], set(), {"DEFAULT", "GROUP", "DESCRIPTION"}, {"REQUIRES", "DISABLE_PLATFORMS"}
    )
    e = {"group": kw.get("GROUP") or "", "requires": list(kw.get("REQUIRES", [])), "at": where}
    if kw.get("DISABLE_PLATFORMS"):
        e["disable_platforms"] = list(kw["DISABLE_PLATFORMS"])
    return e


def topology_features(src: pathlib.Path):
    """Runs TheRock's own generator and reads the therock_add_feature() calls it writes."""
    if not (src / "build_tools/topology_to_cmake.py").exists():
        return {}
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "therock_topology.cmake"
        subprocess.run(
            [
                sys.executable,
                str(src / "build_tools/topology_to_cmake.py"),
                "--topology",
                str(src / "BUILD_TOPOLOGY.toml"),
                "--output",
                str(out),
            ],
            check=True,
            capture_output=True,
        )
        cmds = parse_cmake(out.read_text())
    topo = (src / "BUILD_TOPOLOGY.toml").read_text().splitlines()
    features = {}
    for c in cmds:
        if c.name != "therock_add_feature" or not c.args:
            continue
        kw, _ = split_keywords(c.args[1:], set(), {"DEFAULT", "GROUP", "DESCRIPTION"}, set())
        artifact = re.sub(r"^Enables ", "", kw.get("DESCRIPTION") or "")
        line = next(
            (i for i, l in enumerate(topo, 1) if l.strip() == f"[artifacts.{artifact}]"), 0
        )
        features[c.args[0]] = feature_entry(c.args, at("BUILD_TOPOLOGY.toml", line))
        features[c.args[0]]["artifact"] = artifact
    return features


def walk_subprojects(src: pathlib.Path):
    """Every therock_cmake_subproject_declare() reached from the top CMakeLists.txt, with the
    THEROCK_ENABLE_* variables its enclosing if() conditions test."""
    subprojects = {}
    gates = {}

    def visit(rel: str, outer: list[str]):
        f = src / rel / "CMakeLists.txt" if rel else src / "CMakeLists.txt"
        if not f.exists():
            return
        path = str(f.relative_to(src))
        stack: list[list[str]] = []
        local: dict[str, str] = {}
        for c in parse_cmake(f.read_text()):
            if c.name == "set" and len(c.args) == 2 and c.args[0].startswith("_"):
                local[c.args[0]] = c.args[1]
            if c.name == "if":
                stack.append(re.findall(r"\bTHEROCK_ENABLE_[A-Z0-9_]+", " ".join(c.args)))
            elif c.name in ("elseif", "else"):
                # The else branch runs when the if() test is false: its features do not guard it.
                if stack:
                    stack[-1] = []
            elif c.name == "endif":
                if stack:
                    stack.pop()
            elif c.name == "add_subdirectory" and c.args:
                sub = c.args[0]
                if "$" in sub:
                    continue
                visit(str(pathlib.PurePosixPath(rel) / sub) if rel else sub,
                      outer + [v for s in stack for v in s])
            elif c.name == "therock_cmake_subproject_declare" and c.args:
                kw, _ = split_keywords(
                    c.args[1:],
                    {"ACTIVATE", "USE_DIST_AMDGPU_TARGETS", "DISABLE_AMDGPU_TARGETS",
                     "EXCLUDE_FROM_ALL", "BACKGROUND_BUILD", "NO_MERGE_COMPILE_COMMANDS",
                     "OUTPUT_ON_FAILURE", "NO_INSTALL_RPATH", "FPRINT_SOURCE_HASH"},
                    {"EXTERNAL_SOURCE_DIR", "BINARY_DIR", "DIR_PREFIX", "INSTALL_DESTINATION",
                     "COMPILER_TOOLCHAIN", "LOGICAL_TARGET_NAME", "BUILD_TYPE"},
                    {"CMAKE_ARGS", "CMAKE_INCLUDES", "BUILD_DEPS", "RUNTIME_DEPS",
                     "DEFAULT_GPU_TARGETS", "INTERFACE_LINK_DIRS", "INTERFACE_PROGRAM_DIRS",
                     "INTERFACE_INSTALL_RPATH_DIRS", "INTERFACE_PKG_CONFIG_DIRS",
                     "INTERFACE_INCLUDE_DIRS", "EXTRA_DEPENDS", "INSTALL_RPATH_DIRS",
                     "INTERFACE_LINK_LIBRARIES"},
                )
                name = c.args[0]
                if name.startswith("${") and name[2:-1] in local:
                    name = local[name[2:-1]]
                if kw.get("DISABLE_AMDGPU_TARGETS"):
                    targets = "none"
                elif kw.get("USE_DIST_AMDGPU_TARGETS"):
                    targets = "dist"
                else:
                    targets = "per-arch"
                e = {
                    "features": sorted(set(outer + [v for s in stack for v in s])),
                    "targets": targets,
                    "at": at(path, c.line),
                }
                if kw.get("DEFAULT_GPU_TARGETS"):
                    e["default_gpu_targets"] = list(kw["DEFAULT_GPU_TARGETS"])
                defs = [a for a in kw.get("CMAKE_ARGS", []) if a.startswith("-D")]
                if defs:
                    e["cmake_args"] = defs
                subprojects.setdefault(name, e)
            elif c.name == "set" and c.args and re.fullmatch(r"_ck_(supported|unsupported)_gfx_targets", c.args[0]):
                gates[c.args[0]] = {"targets": c.args[1:], "at": at(path, c.line)}

    visit("", [])
    return subprojects, gates






def read_commit(git_dir: str, commit: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        src = pathlib.Path(tmp)
        export(git_dir, commit, src)
        version = json.loads((src / "version.json").read_text())["rocm-version"]
        targets, families, checks, reads, validate_at = targets_file(src)
        cache, manual = top_cache(src)
        features = topology_features(src)
        features.update(manual)
        subprojects, gates = walk_subprojects(src)
    return {
        "commit": commit,
        "date": git(git_dir, "log", "-1", "--format=%cs", commit).strip(),
        "version": version,
        "targets": targets,
        "families": families,
        "checks": checks,
        "reads": reads,
        "validate_at": validate_at,
        "cache": cache,
        "features": features,
        "subprojects": subprojects,
        "gates": gates,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("git_dir")
    ap.add_argument("commits", nargs="*", default=DEFAULT_COMMITS)
    ap.add_argument("-o", "--output", default=str(DATA / "engines/therock.toml"))
    a = ap.parse_args()
    commits = [git(a.git_dir, "rev-parse", c + "^{commit}").strip() for c in a.commits]
    comps = tomllib.loads((DATA / "components.toml").read_text())["component"]
    renames = tomllib.loads((DATA / "families.toml").read_text()).get("component_names", {})
    snaps = [read_commit(a.git_dir, c) for c in commits]

    lines = []
    w = lines.append
    w("# Generated by scripts/engines/therock/extract.py from ROCm/TheRock at the commits below; do")
    w("# not edit by hand (re-run the script). docs/plan-knowledge.md, section \"TheRock engine facts\",")
    w("# describes the tables.")
    w("")
    w("[engine]")
    w('tool = "therock"')
    w("repos = [")
    for sn in snaps:
        w(f"  {{ repo = {tomlw.value(REPO)}, commit = {tomlw.value(sn['commit'])}, date = {tomlw.value(sn['date'])} }},")
    w("]")
    w(f"script = {tomlw.value(SCRIPT)}")
    w('note = "TheRock builds the sources its submodules pin: one ROCm line per commit (version.json), so a component\'s releases are the lines of the commits read."')
    w("")
    w("# rocpack component -> TheRock sub-project, and the ROCm lines (version.json) of the commits read")
    w("# that declare it.")
    for comp in sorted(comps):
        name = next((k for k, v in renames.items() if v == comp), comp)
        lines_of = sorted(
            {".".join(sn["version"].split(".")[:2]) for sn in snaps if name in sn["subprojects"]},
            key=lambda v: tuple(int(x) for x in v.split(".")),
        )
        if not lines_of:
            continue
        w(f"[components.{tomlw.key(comp)}]")
        w(f"package = {tomlw.value(name)}")
        w(f"releases = {tomlw.value(lines_of)}")
    for sn in snaps:
        sid = "therock-" + sn["commit"][:8]
        t = f'facts."{sid}"'
        w("")
        w(f"[{t}]")
        w(f"commit = {tomlw.value(sn['commit'])}")
        w(f"rocm_version = {tomlw.value(sn['version'])}")
        w('rocm_version_at = "version.json"')
        w(f"validate_at = {tomlw.value(sn['validate_at'])}")
        w("# Variables therock_validate_amdgpu_targets reads.")
        w(f"validate_reads = {tomlw.value(sn['reads'])}")
        w("")
        w("# FATAL_ERROR checks of therock_validate_amdgpu_targets, in order.")
        for c in sn["checks"]:
            w(f"[[{t}.check]]")
            w(f"message = {tomlw.value(c['message'])}")
            w(f"at = {tomlw.value(c['at'])}")
        w("")
        w("# THEROCK_* cache variables and options of the top-level CMakeLists.txt.")
        w(f"[{t}.cache]")
        for k in sorted(sn["cache"]):
            w(f"{k} = {tomlw.value(sn['cache'][k])}")
        w("")
        w("# therock_add_amdgpu_target(): product name, families (besides the target's own name),")
        w("# sub-projects it is removed from.")
        w(f"[{t}.target]")
        for k in sorted(sn["targets"]):
            w(f"{k} = {tomlw.value(sn['targets'][k])}")
        w("")
        w("# Every selectable family (each target is also a family of its own name) -> its targets.")
        w(f"[{t}.family]")
        for k in sorted(sn["families"]):
            w(f"{tomlw.key(k)} = {tomlw.value(sn['families'][k])}")
        w("")
        w("# THEROCK_ENABLE_<NAME>: group, required features (therock_finalize_features turns them on).")
        w(f"[{t}.feature]")
        for k in sorted(sn["features"]):
            w(f"{k} = {tomlw.value(sn['features'][k])}")
        w("")
        w("# therock_cmake_subproject_declare(): the THEROCK_ENABLE_* tests around it, which target list")
        w("# it gets (per-arch THEROCK_AMDGPU_TARGETS, dist, or none), defaults and -D arguments.")
        w(f"[{t}.subproject]")
        for k in sorted(sn["subprojects"]):
            w(f"{tomlw.key(k)} = {tomlw.value(sn['subprojects'][k])}")
        w("")
        w("# The composable-kernel gate in ml-libs/CMakeLists.txt (`_ck_supported_gfx_targets`: a")
        w("# THEROCK_AMDGPU_TARGETS entry outside it turns THEROCK_MIOPEN_USE_COMPOSABLE_KERNEL off).")
        w(f"[{t}.ck_gate]")
        for k in sorted(sn["gates"]):
            w(f"{k} = {tomlw.value(sn['gates'][k])}")
    out = pathlib.Path(a.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
