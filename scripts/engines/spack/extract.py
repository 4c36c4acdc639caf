"""Extract what rocpack's Spack emitter must respect from spack-packages, with Spack's own Python.

Run it with the interpreter of the Spack instance whose `builtin` repository is the
spack-packages checkout to read (scripts/engines/spack/run.sh sets that up):

    spack python scripts/engines/spack/extract.py \
        --spack-commit <40 hex> --packages-commit <40 hex> --packages-date YYYY-MM-DD \
        --packages-root <checkout of spack-packages> \
        --out crates/rocpack-plan/data/engines/spack.toml

The facts are read from the package classes that Spack itself builds from the package.py files
(versions, variants with their value sets, defaults, stickiness and `when=` conditions,
dependencies), so they are exactly what the concretizer sees. Line numbers are found with
python's ast in the same files. The output is deterministic: re-running on the same commits gives
the same bytes.
"""

import argparse
import ast
import os
import sys
import tomllib

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tomlw  # noqa: E402  (scripts/engines/tomlw.py)

try:
    import spack.repo
    import spack.version
except ImportError:
    sys.exit("extract.py: run it with `spack python` (Spack's own interpreter and modules)")

# rocpack components whose Spack package components.toml does not name: the spack-packages
# directory that holds them (checked to exist below, else the run fails).
EXTRA_PACKAGES = {
    "rocm-device-libs": "rocm-device-libs",
    "hipcc": "hipcc",
    "ROCT-Thunk-Interface": "hsakmt-roct",
    "hipify": "hipify-clang",
    "hipFFT": "hipfft",
}

# The target variant; its definitions are recorded for every package that has it, together with
# the variants the emitter may set (emitters.toml `variant = ...`) and `rocm`, on which some
# definitions of amdgpu_target depend (`when="+rocm"`).
TARGET_VARIANT = "amdgpu_target"
CONDITION_VARIANTS = ["rocm"]

# Release lines rocpack plans for, plus any other X.Y a package has.
PLANNED_LINES = ["6.0", "6.2", "6.4", "7.0", "7.1"]






def line_key(v):
    """'6.4' for 6.4.3; None for versions that are not ROCm release numbers (develop, master)."""
    parts = str(v).split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    return f"{parts[0]}.{parts[1]}"


def sort_lines(lines):
    return sorted(lines, key=lambda s: tuple(int(x) for x in s.split(".")))


def directive_calls(path, directive):
    """The `directive(...)` calls with a first argument in a file, as ast nodes."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == directive
            and node.args
        ):
            yield node


def variant_calls(path):
    """name -> sorted line numbers of `variant("name", ...)` calls in a file."""
    out = {}
    for node in directive_calls(path, "variant"):
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            out.setdefault(first.value, []).append(node.lineno)
    return {name: sorted(lines) for name, lines in out.items()}


def depends_calls(path, dep):
    """Sorted line numbers of `depends_on(...)` calls whose spec names `dep`."""
    lines = set()
    for node in directive_calls(path, "depends_on"):
        # the spec text starts with the package name, possibly inside an f-string
        text = ast.unparse(node.args[0]).lstrip("f'\"")
        rest = text[len(dep) :]
        if text.startswith(dep) and not (rest[:1].isalnum() or rest[:1] in ("-", "_")):
            lines.add(node.lineno)
    return sorted(lines)


def rel(path, root):
    return os.path.relpath(path, root).replace(os.sep, "/")


def versions_in_line(cls, line):
    return [v for v in cls.versions if line_key(v) == line]


def when_holds_for_version(when, v):
    """Whether a `when=` spec's version range admits version v (other constraints ignored)."""
    return when.versions.intersects(spack.version.ver(str(v)))


def cond_without(when, drop):
    """The `when=` spec's variant conditions as text, without version and the variants in drop."""
    parts = []
    for name, val in sorted(when.variants.items()):
        if name in drop:
            continue
        parts.append(str(val))
    return " ".join(parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spack-commit", required=True)
    ap.add_argument("--packages-commit", required=True)
    ap.add_argument("--packages-date", required=True)
    ap.add_argument("--packages-root", required=True)
    ap.add_argument("--components", default="crates/rocpack-plan/data/components.toml")
    ap.add_argument("--emitters", default="crates/rocpack-plan/data/emitters.toml")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    with open(args.components, "rb") as f:
        comps = tomllib.load(f)["component"]
    with open(args.emitters, "rb") as f:
        emitters = tomllib.load(f)
    set_variants = sorted(
        {
            o["variant"]
            for p in emitters["spack"]["package"].values()
            for o in p.get("option", [])
            if "variant" in o
        }
        | set(CONDITION_VARIANTS)
    )

    component_pkgs = {}
    for name, info in comps.items():
        pkgs = info.get("packages", {}).get("spack")
        if pkgs:
            component_pkgs[name] = list(pkgs)
        elif name in EXTRA_PACKAGES:
            component_pkgs[name] = [EXTRA_PACKAGES[name]]

    repo = spack.repo.PATH
    root = args.packages_root
    mixin = os.path.join(root, "repos/spack_repo/builtin/build_systems/rocm.py")
    mixin_lines = variant_calls(mixin)

    out = []
    w = out.append
    w("# Generated by scripts/engines/spack/extract.py from spack-packages with Spack's own Python")
    w("# (package classes as the concretizer sees them; line numbers found with python's ast).")
    w("# Do not edit: re-run the script (scripts/engines/spack/run.sh extract). Read by")
    w("# crates/rocpack-plan/tests/engine_spack.rs; fields in docs/plan-knowledge.md (Spack engine).")
    w("")
    w("[engine]")
    w('tool = "spack"')
    w(
        "repos = [{ repo = %s, commit = %s, date = %s }, { repo = %s, commit = %s }]"
        % (
            tomlw.string("spack/spack-packages"),
            tomlw.string(args.packages_commit),
            tomlw.string(args.packages_date),
            tomlw.string("spack/spack"),
            tomlw.string(args.spack_commit),
        )
    )
    w('script = "scripts/engines/spack/extract.py"')
    w("")

    classes = {}
    for comp in sorted(component_pkgs):
        for pkg in component_pkgs[comp]:
            if not repo.exists(pkg):
                sys.exit(f"extract.py: {comp}: no package {pkg} in the repository")
            classes[pkg] = repo.get_pkg_class(pkg)

    # Release lines at which Spack cannot concretize a package (below); they are not lines the
    # engine can build.
    broken = {}
    for pkg in sorted(classes):
        cls = classes[pkg]
        for line in sort_lines({line_key(v) for v in cls.versions if line_key(v)}):
            found = unsatisfiable(cls, line, classes)
            if found:
                broken[(pkg, line)] = found

    # [components]: the release lines the engine can build (a version exists and concretizes)
    for comp in sorted(component_pkgs):
        pkgs = component_pkgs[comp]
        lines = set()
        for pkg in pkgs:
            lines |= {
                line_key(v)
                for v in classes[pkg].versions
                if line_key(v) and (pkg, line_key(v)) not in broken
            }
        if len(pkgs) != 1:
            sys.exit(f"extract.py: {comp}: [components] takes one package, not {pkgs}")
        w(f"[components.{tomlw.string(comp)}]")
        w(f"package = {tomlw.string(pkgs[0])}")
        w(f"releases = {tomlw.strings(sort_lines(lines))}")
        w("")

    # [facts]
    w("[facts]")
    w(f"target_variant = {tomlw.string(TARGET_VARIANT)}")
    w(f"mixin = {tomlw.string(rel(mixin, root) + ':' + str(mixin_lines.get(TARGET_VARIANT, [0])[0]))}")
    w("")
    for pkg in sorted(classes):
        cls = classes[pkg]
        path = cls.module.__file__
        src = rel(path, root)
        own_lines = variant_calls(path)
        w(f"[facts.package.{tomlw.string(pkg)}]")
        w(f"source = {tomlw.string(src)}")
        vers = sorted(cls.versions)
        w(f"versions = {tomlw.strings(str(v) for v in vers)}")
        w(f"releases = {tomlw.strings(sort_lines({line_key(v) for v in vers if line_key(v)}))}")
        for when, vs in sorted(cls.variants.items(), key=lambda kv: str(kv[0])):
            for vname in sorted(vs):
                if vname != TARGET_VARIANT and vname not in set_variants:
                    continue
                var = vs[vname]
                if vname in own_lines:
                    where = src + ":" + ",".join(str(n) for n in own_lines[vname])
                elif vname in mixin_lines:
                    where = rel(mixin, root) + ":" + ",".join(str(n) for n in mixin_lines[vname])
                else:
                    where = src
                w(f"[[facts.package.{tomlw.string(pkg)}.variant]]")
                w(f"name = {tomlw.string(vname)}")
                w(f"when = {tomlw.string(str(when))}")
                w(f"source = {tomlw.string(where)}")
                d = var.default
                w(f"default = {tomlw.string(str(d))}")
                w(f"multi = {'true' if var.multi else 'false'}")
                w(f"sticky = {'true' if var.sticky else 'false'}")
                vals = var.values
                if hasattr(vals, "sets"):
                    sets = sorted((sorted(s) for s in vals.sets), key=lambda s: (len(s), s))
                    w("sets = [" + ", ".join(tomlw.strings(s) for s in sets) + "]")
                elif vals is not None:
                    w(f"values = {tomlw.strings(sorted(str(x) for x in vals))}")
                # which release lines the definition applies to
                w(
                    "releases = "
                    + tomlw.strings(
                        sort_lines(
                            {
                                line_key(v)
                                for v in vers
                                if line_key(v) and when_holds_for_version(when, v)
                            }
                        )
                    )
                )
        # dependencies that receive the package's own amdgpu_target value by value
        prop = {}
        for when, deps in cls.dependencies.items():
            wt = when.variants.get(TARGET_VARIANT)
            if wt is None:
                continue
            for dname, dep in deps.items():
                dt = dep.spec.variants.get(TARGET_VARIANT)
                if dt is None or tuple(dt.value) != tuple(wt.value):
                    continue
                cond = cond_without(when, {TARGET_VARIANT})
                key = (dname, cond)
                entry = prop.setdefault(key, {"lines": set(), "auto": False})
                if tuple(wt.value) == ("auto",):
                    entry["auto"] = True
                for v in vers:
                    if line_key(v) and when_holds_for_version(when, v):
                        entry["lines"].add(line_key(v))
        for (dname, cond), entry in sorted(prop.items()):
            w(f"[[facts.package.{tomlw.string(pkg)}.propagates]]")
            w(f"dep = {tomlw.string(dname)}")
            w(f"when = {tomlw.string(cond)}")
            w(f"auto = {'true' if entry['auto'] else 'false'}")
            w(f"releases = {tomlw.strings(sort_lines(entry['lines']))}")
            w(f"source = {tomlw.string(src + ':' + ','.join(str(n) for n in depends_calls(path, dname)))}")
        w("")

    # Release lines at which a package and one of its dependencies (same line) constrain a
    # common dependency to disjoint version ranges: no spec at that line can concretize.
    w("# A package and a dependency of it constrain a common dependency to disjoint versions at")
    w("# every version of the line: Spack cannot concretize the package at that release line.")
    for (pkg, line), found in sorted(broken.items()):
        cls = classes[pkg]
        dname, common, a, b, la, lb = found
        w("[[facts.unsatisfiable]]")
        w(f"package = {tomlw.string(pkg)}")
        w(f"release = {tomlw.string(line)}")
        w(f"dep = {tomlw.string(dname)}")
        w(f"common = {tomlw.string(common)}")
        w(f"package_requires = {tomlw.string(a)}")
        w(f"dep_requires = {tomlw.string(b)}")
        w(
            "sources = "
            + tomlw.strings(
                [
                    rel(cls.module.__file__, root) + ":" + ",".join(map(str, la)),
                    rel(classes[dname].module.__file__, root) + ":" + ",".join(map(str, lb)),
                ]
            )
        )
        w("")

    text = "\n".join(out).rstrip("\n") + "\n"
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)


def unconditional_deps_at(cls, v):
    """name -> list of version constraints the package puts on its dependencies at version v,
    counting `when=` conditions that are a version range, possibly with an amdgpu_target value
    (some value always holds, and these recipes pin the same versions for each)."""
    out = {}
    for when, deps in cls.dependencies.items():
        if set(when.variants) - {TARGET_VARIANT} or when.compiler_flags or when.architecture:
            continue
        if not when_holds_for_version(when, v):
            continue
        for dname, dep in deps.items():
            out.setdefault(dname, []).append(dep.spec.versions)
    return out


def admits(constraints, candidate_versions):
    """Whether some candidate version satisfies every constraint."""
    for c in candidate_versions:
        if all(vl.intersects(spack.version.ver(str(c))) for vl in constraints):
            return True
    return False


def unsatisfiable(cls, line, classes):
    """(dep, common, pkg's constraint, dep's constraint, lines, dep lines) when at every version of
    `line` the package and a dependency it pins to that line disagree on a common dependency's
    version with no version of the common package in between; else None."""
    versions = versions_in_line(cls, line)
    if not versions:
        return None
    witness = None
    for v in versions:
        mine = unconditional_deps_at(cls, v)
        broken = None
        for dname in sorted(mine):
            if dname not in classes or dname == cls.name:
                continue
            dcls = classes[dname]
            dvers = [
                d
                for d in dcls.versions
                if all(c.intersects(spack.version.ver(str(d))) for c in mine[dname])
            ]
            if not dvers:
                continue
            for common in sorted(mine):
                if (
                    common == dname
                    or spack.repo.PATH.is_virtual(common)
                    or not spack.repo.PATH.exists(common)
                ):
                    continue
                ccls = spack.repo.PATH.get_pkg_class(common)
                if not ccls.versions:
                    continue
                # every version of the dependency the package admits requires `common` too,
                # and no version of `common` satisfies both
                if all(
                    common in unconditional_deps_at(dcls, d)
                    and not admits(
                        mine[common] + unconditional_deps_at(dcls, d)[common],
                        list(ccls.versions),
                    )
                    for d in dvers
                ):
                    a = " ".join(f"{common}@{c}" for c in mine[common] if str(c) != ":")
                    b = " ".join(
                        sorted(
                            {
                                f"{common}@{c}"
                                for d in dvers
                                for c in unconditional_deps_at(dcls, d).get(common, [])
                                if str(c) != ":"
                            }
                        )
                    )
                    broken = (
                        dname,
                        common,
                        a,
                        b,
                        depends_calls(cls.module.__file__, common),
                        depends_calls(dcls.module.__file__, common),
                    )
                    break
            if broken:
                break
        if broken is None:
            return None
        witness = broken
    return witness


if __name__ == "__main__":
    main()
