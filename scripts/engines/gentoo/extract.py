#!/usr/bin/env python3
"""Write crates/rocpack-plan/data/engines/gentoo.toml from ::gentoo's own metadata.

Input (nothing here is fetched by the script; CI has no GitHub):
  * scripts/engines/gentoo/md5-cache.tsv: path, commit and md5 of each metadata/md5-cache entry
    of gentoo-mirror/gentoo that was read (with the search tool's read_file) into
    $ROCPACK_GENTOO_CACHE (default ~/.cache/rocpack-gentoo/gentoo). These entries are what
    Gentoo's egencache wrote from the real ebuilds and eclasses (rocm.eclass, llvm-r1.eclass,
    python-r1.eclass, ...): IUSE with the amdgpu_targets_* flags rocm.eclass adds for the
    version, REQUIRED_USE with ROCM_REQUIRED_USE expanded, the dependencies with SLOT and USE
    dependencies. Every file is checked against its md5 before it is used.
  * scripts/engines/gentoo/index.tsv: the ebuild and md5-cache paths the index lists for each
    package, for the release lines.
  * crates/rocpack-plan/data/components.toml: component -> Gentoo atom (packages.gentoo).

Re-running on the same input writes the same bytes. Exit 2 on a missing or altered input.
"""

import hashlib
import os
import re
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import tomlw  # noqa: E402  (scripts/engines/tomlw.py)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
CACHE = Path(os.environ.get("ROCPACK_GENTOO_CACHE", Path.home() / ".cache/rocpack-gentoo/gentoo"))
OUT = ROOT / "crates/rocpack-plan/data/engines/gentoo.toml"
MIRROR = "gentoo-mirror/gentoo"
# Dates of the mirror commits, read from metadata/timestamp.chk at that commit; the others
# could not be read at their commit.
COMMIT_DATES = {
    "0ce66987af2dacfa6dbfd785e309ce2166e0daa7": "2026-02-03",
    "5e542b5ae7850212e9c1c3f95869c096942e248c": "2026-02-08",
}
VERSION = re.compile(r"-(\d+(?:\.\d+)*[a-z]?(?:_(?:alpha|beta|pre|rc|p)\d*)*(?:-r\d+)?)$")
DEP_KEYS = ("DEPEND", "RDEPEND", "BDEPEND", "PDEPEND", "IDEPEND")


def die(msg):
    print(f"extract.py: {msg}", file=sys.stderr)
    sys.exit(2)


def read_tsv(path):
    rows = []
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            rows.append(line.split("\t"))
    return rows


def split_pf(name):
    """('miopen', '7.1.0-r1') from 'miopen-7.1.0-r1'."""
    m = VERSION.search(name)
    if not m:
        die(f"no version in {name!r}")
    return name[: m.start()], m.group(1)


def version_key(v):
    base, _, rev = v.partition("-r")
    return ([int(x) for x in re.findall(r"\d+", base)], int(rev or 0))


def release_of(v):
    parts = v.split("-")[0].split(".")
    return f"{parts[0]}.{parts[1]}" if len(parts) > 1 else parts[0]


def atoms_of_components():
    data = tomllib.loads((ROOT / "crates/rocpack-plan/data/components.toml").read_text())
    out = {}
    for name, comp in data.get("component", {}).items():
        for atom in comp.get("packages", {}).get("gentoo", []):
            out.setdefault(atom, []).append(name)
    return out


def read(path):
    try:
        return (CACHE / path).read_bytes()
    except OSError as e:
        die(f"{CACHE / path}: {e}")


MYCMAKEARGS = re.compile(r"^\tlocal mycmakeargs=\(\n(.*?)^\t\)", re.S | re.M)
USEX = re.compile(r'^-D(\w+)="?\$\(usex (\S+?)(?: (\S+) (\S+))?\)"?$')
FIXED = re.compile(r'^-D(\w+)=([A-Za-z0-9_.]+)$')


def cmake_facts(ebuild_files, path, cache_md5):
    """From the ebuild's `local mycmakeargs=( ... )` in src_configure: the CMake options it
    passes from a USE flag ($(usex flag ON OFF)) and those it passes as a constant. Only an
    ebuild whose md5 is the one its metadata-cache entry was generated from is used."""
    row = ebuild_files.get(path)
    if row is None:
        # Gentoo often copies an ebuild unchanged to the next version: a read ebuild of the same
        # package with the md5 the cache entry was generated from has exactly these bytes.
        same = [r for p, r in sorted(ebuild_files.items())
                if p.rsplit("/", 1)[0] == path.rsplit("/", 1)[0] and r[2] == cache_md5]
        if not same:
            return None
        row = same[0]
        path = row[0]
    _, commit, md5 = row
    if md5 != cache_md5:
        die(f"{path}: md5 {md5} is not the _md5_ {cache_md5} of its metadata-cache entry")
    text = read(path).decode()
    blocks = MYCMAKEARGS.findall(text)
    if len(blocks) != 1:
        die(f"{path}: expected one `local mycmakeargs=(` block, found {len(blocks)}")
    usex, fixed = [], []
    for raw in blocks[0].splitlines():
        arg = raw.strip()
        m = USEX.match(arg)
        if m:
            name, flag, on, off = m.groups()
            usex.append((name, flag, on or "yes", off or "no"))
            continue
        m = FIXED.match(arg)
        if m:
            fixed.append(m.groups())
    return dict(commit=commit, path=path, md5=md5, usex=usex, fixed=fixed)


def profile_facts(rows):
    """The USE flags profiles/base/make.defaults enables: its USE, and its USE_EXPAND
    variables as <var>_<value> flags (the layer Portage applies under make.conf)."""
    if len(rows) != 1:
        die("md5-cache.tsv must list profiles/base/make.defaults once")
    path, commit, md5 = rows[0]
    env = {}
    for line in read(path).decode().splitlines():
        m = re.match(r'^([A-Za-z_][A-Za-z0-9_]*)="(.*)"$', line)
        if m:
            env[m.group(1)] = re.sub(r"\$\{(\w+)\}", lambda v: env.get(v.group(1), ""), m.group(2))
    expand = env.get("USE_EXPAND", "").split()
    flags = env.get("USE", "").split()
    for var in expand:
        for v in env.get(var, "").split():
            flags.append(f"{var.lower()}_{v}")
    return dict(commit=commit, path=path, md5=md5, use_expand=expand, use=flags)


def tokens(s):
    return s.split()


def dep_atoms(value, rocm):
    """Every atom of a dependency string whose package is a ROCm one, with the USE conditionals
    around it (a flag, or !flag) and whether it sits under || ( )."""
    found = []
    stack = []  # entries: ('use', 'flag') or ('any', None) or ('all', None)
    pending = None
    for tok in tokens(value):
        if tok == "(":
            stack.append(pending if pending else ("all", None))
            pending = None
        elif tok == ")":
            if not stack:
                die(f"unbalanced ) in {value!r}")
            stack.pop()
        elif tok.endswith("?"):
            pending = ("use", tok[:-1])
        elif tok == "||":
            pending = ("any", None)
        else:
            atom = tok.lstrip("!<>=~")
            cp = re.sub(r"-\d.*$", "", re.split(r"[:\[]", atom)[0])
            if cp in rocm:
                when = [f for kind, f in stack if kind == "use"]
                any_of = any(kind == "any" for kind, _ in stack)
                found.append((tok, cp, when, any_of))
    if stack:
        die(f"unbalanced ( in {value!r}")
    return found






def main():
    comp_atoms = atoms_of_components()
    files = read_tsv(HERE / "md5-cache.tsv")
    for path, _, md5 in files:
        if hashlib.md5(read(path)).hexdigest() != md5:
            die(f"{CACHE / path}: md5 differs from md5-cache.tsv")
    manifest = [r for r in files if r[0].startswith("metadata/md5-cache/")]
    ebuild_files = {r[0]: r for r in files if r[0].endswith(".ebuild")}
    profile = [r for r in files if r[0].startswith("profiles/")]
    index = read_tsv(HERE / "index.tsv")

    # versions per atom, from the ebuild listing and the md5-cache paths
    versions = {}
    for repo, path, commit in index + [[MIRROR, p, c] for p, c, _ in manifest]:
        if path.startswith("metadata/md5-cache/"):
            cat, pf = path[len("metadata/md5-cache/"):].split("/")
            pn, v = split_pf(pf)
        elif path.endswith(".ebuild"):
            cat, pn, fname = path.split("/")
            pn2, v = split_pf(fname[: -len(".ebuild")])
            if pn2 != pn:
                die(f"{path}: file name does not match the package")
        else:
            die(f"{path}: neither an ebuild nor an md5-cache entry")
        versions.setdefault(f"{cat}/{pn}", {}).setdefault(v, (repo, path, commit))

    rocm = set(comp_atoms) | set(versions)
    ebuilds = []
    for path, commit, md5 in manifest:
        data = read(path)
        meta = {}
        for line in data.decode().splitlines():
            k, sep, v = line.partition("=")
            if sep:
                meta[k] = v
        cat, pf = path[len("metadata/md5-cache/"):].split("/")
        pn, v = split_pf(pf)
        iuse = tokens(meta.get("IUSE", ""))
        deps = []
        for key in DEP_KEYS:
            for tok, cp, when, any_of in dep_atoms(meta.get(key, ""), rocm):
                deps.append((key, tok, cp, when, any_of))
        ebuilds.append(
            dict(
                package=f"{cat}/{pn}",
                version=v,
                release=release_of(v),
                commit=commit,
                path=path,
                md5=md5,
                ebuild_md5=meta.get("_md5_", ""),
                eapi=meta.get("EAPI", ""),
                slot=meta.get("SLOT", ""),
                keywords=meta.get("KEYWORDS", ""),
                iuse=iuse,
                amdgpu_targets=[
                    t.lstrip("+-")[len("amdgpu_targets_"):]
                    for t in iuse
                    if t.lstrip("+-").startswith("amdgpu_targets_")
                ],
                required_use=" ".join(tokens(meta.get("REQUIRED_USE", ""))),
                deps=deps,
                cmake=cmake_facts(ebuild_files, f"{cat}/{pn}/{pf}.ebuild", meta.get("_md5_", "")),
            )
        )
    ebuilds.sort(key=lambda e: (e["package"], version_key(e["version"])))

    commits = sorted({c for _, c, _ in manifest + profile})
    out = []
    w = out.append
    w("# Generated by scripts/engines/gentoo/extract.py from ::gentoo's metadata cache (egencache")
    w("# output of the real ebuilds and eclasses) and the index of its ebuilds; do not edit.")
    w("# docs/plan-knowledge.md (section \"Gentoo engine facts\") describes the tables.")
    w("")
    w("[engine]")
    w('tool = "gentoo"')
    w("repos = [")
    for c in commits:
        w(f'  {{ repo = "{MIRROR}", commit = "{c}", date = "{COMMIT_DATES.get(c, "unverified")}" }},')
    w("]")
    w('script = "scripts/engines/gentoo/extract.py"')
    w("")
    w("# Per rocpack component: the Gentoo package and the ROCm release lines it has ebuilds for")
    w("# (versions the index lists in gentoo/gentoo or gentoo-mirror/gentoo's metadata cache).")
    for atom in sorted(versions):
        for comp in sorted(comp_atoms.get(atom, [])):
            vs = versions[atom]
            lines = sorted({release_of(v) for v in vs}, key=version_key)
            w("")
            w(f"[components.{tomlw.string(comp) if not re.fullmatch(r'[A-Za-z0-9_-]+', comp) else comp}]")
            w(f"package = {tomlw.string(atom)}")
            w(f"releases = {tomlw.strings(lines)}")
            w(f"note = {tomlw.string('versions seen: ' + ' '.join(sorted(vs, key=version_key)))}")
    pr = profile_facts(profile)
    w("")
    w("# profiles/base/make.defaults: the USE_EXPAND variables and the flags the profile enables.")
    w("[facts.profile]")
    w(f"source = {{ repo = {tomlw.string('gentoo-mirror/gentoo')}, commit = {tomlw.string(pr['commit'])}, path = {tomlw.string(pr['path'])}, md5 = {tomlw.string(pr['md5'])} }}")
    w(f"use_expand = {tomlw.strings(pr['use_expand'])}")
    w(f"use = {tomlw.strings(pr['use'])}")
    w("")
    w("# One entry per md5-cache file read: IUSE (+ marks a default-on flag), the amdgpu_targets")
    w("# flags among them, REQUIRED_USE exactly as Portage evaluates it, and every dependency on a")
    w("# ROCm package with the USE conditionals it sits under (`when`) and whether it is one")
    w("# choice of an || group.")
    for e in ebuilds:
        w("")
        w("[[facts.ebuild]]")
        for k in ("package", "version", "release"):
            w(f"{k} = {tomlw.string(e[k])}")
        w(f"source = {{ repo = {tomlw.string(MIRROR)}, commit = {tomlw.string(e['commit'])}, path = {tomlw.string(e['path'])}, md5 = {tomlw.string(e['md5'])} }}")
        for k in ("ebuild_md5", "eapi", "slot", "keywords"):
            w(f"{k} = {tomlw.string(e[k])}")
        w(f"iuse = {tomlw.strings(e['iuse'])}")
        w(f"amdgpu_targets = {tomlw.strings(e['amdgpu_targets'])}")
        w(f"required_use = {tomlw.string(e['required_use'])}")
        if e["deps"]:
            w("deps = [")
            for key, tok, cp, when, any_of in e["deps"]:
                w(f"  {{ kind = {tomlw.string(key)}, atom = {tomlw.string(tok)}, package = {tomlw.string(cp)}, when = {tomlw.strings(when)}, any_of = {'true' if any_of else 'false'} }},")
            w("]")
        else:
            w("deps = []")
        c = e["cmake"]
        if c:
            w(f"cmake = {{ repo = \"gentoo/gentoo\", commit = {tomlw.string(c['commit'])}, path = {tomlw.string(c['path'])}, md5 = {tomlw.string(c['md5'])} }}")
            w("cmake_usex = [")
            for name, flag, on, off in c["usex"]:
                w(f"  {{ option = {tomlw.string(name)}, flag = {tomlw.string(flag)}, on = {tomlw.string(on)}, off = {tomlw.string(off)} }},")
            w("]")
            w("cmake_fixed = [")
            for name, value in c["fixed"]:
                w(f"  {{ option = {tomlw.string(name)}, value = {tomlw.string(value)} }},")
            w("]")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(out) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(ebuilds)} ebuilds, {len(versions)} packages")


if __name__ == "__main__":
    main()
