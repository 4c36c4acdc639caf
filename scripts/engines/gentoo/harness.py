#!/usr/bin/env python3
"""Run real Portage (`emerge --pretend`) on one `rocpack plan --format gentoo` output.

Developer harness, not CI. Usage:
  harness.py PLAN_JSON PLAN_DIR WORK_DIR
PLAN_JSON is `rocpack plan --format json` of the same request (which components are built);
PLAN_DIR holds the emitted make.conf and package.use/rocm (`rocpack plan --format gentoo -o`).

The repository Portage resolves against is built in WORK_DIR from ::gentoo's metadata cache
(gentoo-mirror/gentoo metadata/md5-cache, listed with md5 in md5-cache.tsv, read into
$ROCPACK_GENTOO_CACHE): each entry becomes an ebuild that sets exactly the metadata Gentoo's
egencache computed from the real ebuild and eclasses (IUSE, REQUIRED_USE, SLOT, KEYWORDS and
the five dependency variables) and nothing else. The eclasses themselves are not carried: the
index does not store an EAPI-8 xdg-utils.eclass, which cmake.eclass inherits, so the ebuilds
cannot be sourced; dependency resolution reads only this metadata. Packages without a cache
entry here (dev-util/hip, llvm-core/clang, dev-libs/boost, ...) go into package.provided, and
the harness prints them. The profile is ::gentoo's profiles/base/make.defaults (USE_EXPAND with
AMDGPU_TARGETS, PYTHON_TARGETS) plus ARCH=amd64. The plan's files are used unchanged:
make.conf is one file of a make.conf directory, package.use/rocm is copied as it is.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("ROCPACK_GENTOO_CACHE", Path.home() / ".cache/rocpack-gentoo/gentoo"))
EMERGE = os.environ.get("ROCPACK_EMERGE", "emerge")
KEYS = ("EAPI", "SLOT", "KEYWORDS", "IUSE", "REQUIRED_USE", "LICENSE", "RESTRICT",
        "DEPEND", "RDEPEND", "BDEPEND", "PDEPEND", "IDEPEND", "DESCRIPTION", "HOMEPAGE")
VERSION = re.compile(r"-(\d+(?:\.\d+)*[a-z]?(?:_(?:alpha|beta|pre|rc|p)\d*)*(?:-r\d+)?)$")


def read_meta(path):
    meta = {}
    for line in path.read_text().splitlines():
        k, sep, v = line.partition("=")
        if sep:
            meta[k] = v
    return meta


def sh_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def main():
    plan_json, plan_dir, work = (Path(a) for a in sys.argv[1:4])
    plan = json.loads(plan_json.read_text())
    release = plan["release"]
    import tomllib

    comps = tomllib.loads((HERE.parents[2] / "crates/rocpack-plan/data/components.toml").read_text())
    atom_of = {n: c.get("packages", {}).get("gentoo", []) for n, c in comps["component"].items()}

    shutil.rmtree(work, ignore_errors=True)
    repo = work / "repo"
    (repo / "profiles/harness").mkdir(parents=True)
    (repo / "metadata").mkdir()
    (repo / "profiles/repo_name").write_text("gentoo\n")
    (repo / "metadata/layout.conf").write_text("masters =\nthin-manifests = true\nprofile-formats = portage-2\n")
    (repo / "profiles/base").mkdir()
    shutil.copy(CACHE / "profiles/base/make.defaults", repo / "profiles/base/make.defaults")
    (repo / "profiles/harness/parent").write_text("../base\n")
    (repo / "profiles/harness/make.defaults").write_text('ARCH="amd64"\nACCEPT_KEYWORDS="amd64"\nCHOST="x86_64-pc-linux-gnu"\n')
    (repo / "profiles/harness/eapi").write_text("8\n")

    carried = {}
    cats = set()
    for line in (HERE / "md5-cache.tsv").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        path = line.split("\t")[0]
        if not path.startswith("metadata/md5-cache/"):
            continue
        cat, pf = path[len("metadata/md5-cache/"):].split("/")
        pn = pf[: VERSION.search(pf).start()]
        meta = read_meta(CACHE / path)
        d = repo / cat / pn
        d.mkdir(parents=True, exist_ok=True)
        body = "".join(f"{k}={sh_quote(meta[k])}\n" for k in KEYS if k in meta and k != "EAPI")
        (d / f"{pf}.ebuild").write_text(f"EAPI={meta.get('EAPI', '8')}\n{body}")
        carried.setdefault(f"{cat}/{pn}", []).append(meta)
        cats.add(cat)
    (repo / "profiles/categories").write_text("\n".join(sorted(cats)) + "\n")

    # Atoms to emerge: every built component's package that the repository carries, at the
    # plan's release line.
    # ... except those the emitted package.use says not to emerge.
    keep_out = set()
    pu = plan_dir / "package.use/rocm"
    for line in (pu.read_text().splitlines() if pu.exists() else []):
        if line.startswith("#") and "do not emerge" in line:
            words = [w.rstrip(":") for w in line.split() if "/" in w]
            keep_out.update(words[:1])
    targets = []
    for c in plan["components"]:
        if c["status"] != "build":
            continue
        for atom in atom_of.get(c["name"], []):
            if atom not in keep_out and any(m["SLOT"].endswith(f"/{release}") for m in carried.get(atom, [])):
                targets.append(f"={atom}-{release}*")
    # package.provided: every other package the carried ebuilds depend on, at a version that
    # satisfies all their atoms (checked with Portage's own matcher).
    from portage.dep import Atom, match_from_list, use_reduce

    need = {}
    for metas in carried.values():
        for meta in metas:
            for k in ("DEPEND", "RDEPEND", "BDEPEND", "PDEPEND", "IDEPEND"):
                for tok in use_reduce(meta.get(k, ""), matchall=True, flat=True, eapi="8"):
                    if tok in ("||",) or not isinstance(tok, Atom) and not re.match(r"[!<>=~]*[a-z0-9-]+/", str(tok)):
                        continue
                    a = Atom(str(tok).lstrip("!")) if str(tok).startswith("!") else Atom(str(tok))
                    if str(tok).startswith("!") or a.cp in carried:
                        continue
                    need.setdefault(a.cp, []).append(a)
    provided = []
    for cp, atoms in sorted(need.items()):
        cands = [a.version for a in atoms if a.version] + ["7.1.0", "6.4.3", "20", "1"]
        for v in cands:
            cpv = f"{cp}-{v}"
            if all(match_from_list(a.without_use.without_slot if a.slot else a.without_use, [cpv]) for a in atoms):
                provided.append(cpv)
                break
        else:
            provided.append(f"{cp}-{cands[0]}")

    eprefix = os.environ.get("ROCPACK_PORTAGE_EPREFIX", "")
    cfg = work / "cfg"
    etc = cfg / eprefix.lstrip("/") / "etc/portage"
    (etc / "make.conf").mkdir(parents=True)
    (etc / "repos.conf").mkdir()
    (etc / "profile").mkdir()
    (etc / "package.use").mkdir()
    os.symlink(repo / "profiles/harness", etc / "make.profile")
    (etc / "repos.conf/gentoo.conf").write_text(f"[DEFAULT]\nmain-repo = gentoo\n\n[gentoo]\nlocation = {repo}\n")
    (etc / "make.conf/00-harness").write_text(
        'ACCEPT_KEYWORDS="~amd64"\nACCEPT_LICENSE="*"\nFEATURES="-news -sandbox -usersandbox -userpriv -userfetch"\n'
        'PORTAGE_USERNAME="root"\nPORTAGE_GRPNAME="root"\n'
    )
    shutil.copy(plan_dir / "make.conf", etc / "make.conf/50-rocpack")
    if (plan_dir / "package.use/rocm").exists():
        shutil.copy(plan_dir / "package.use/rocm", etc / "package.use/rocm")
    for d in ("package.env", "env"):
        if (plan_dir / d).is_dir():
            shutil.copytree(plan_dir / d, etc / d)
    (etc / "profile/package.provided").write_text("\n".join(provided) + "\n")
    (work / "root").mkdir()

    print(f"# release {release}; package.provided: {' '.join(provided)}")
    if keep_out:
        print(f"# not emerged (the plan says so): {' '.join(sorted(keep_out))}")
    if not targets:
        print(f"# no ebuild of ROCm {release} in the repository: nothing for Portage to resolve")
        sys.exit(3)
    cmd = [EMERGE, "--pretend", "--verbose", "--color=n", "--nospinner", "--autounmask=n", *targets]
    print("# " + " ".join(cmd))
    env = dict(os.environ, PORTAGE_CONFIGROOT=str(cfg))
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    sys.stdout.write(r.stderr)
    print(f"# exit status {r.returncode}")
    status = r.returncode
    if status == 0 and (plan_dir / "package.env/rocm").exists():
        status = check_package_env(plan, plan_dir, cfg, env)
    sys.exit(status)


def check_package_env(plan, plan_dir, cfg, env):
    """For each package.env entry: the MYCMAKEARGS Portage's own config gives the package
    (portage.config.setcpv reads package.env and env/ as emerge does), split into words the way
    cmake.eclass's cmake_src_configure does (`eval "local -a MYCMAKEARGS=( ${MYCMAKEARGS} )"`,
    run by bash here), must be exactly the plan's -D arguments for those settings."""
    code = r"""
import os, sys, json, portage
settings = portage.config(config_root=os.environ["PORTAGE_CONFIGROOT"])
db = portage.db[settings["EROOT"]]["porttree"].dbapi
out = {}
for atom in sys.argv[1:]:
    cpv = db.xmatch("bestmatch-visible", atom)
    settings.setcpv(cpv, mydb=db)
    out[atom] = [cpv, settings.get("MYCMAKEARGS", "")]
print(json.dumps(out))
"""
    atoms = []
    for line in (plan_dir / "package.env/rocm").read_text().splitlines():
        if line and not line.startswith("#"):
            atoms.append(line.split()[0])
    release = plan["release"]
    r = subprocess.run([sys.executable, "-c", code, *(f"={a}-{release}*" for a in atoms)],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stdout.write(r.stderr)
        print("# package.env: portage.config failed")
        return 1
    got = json.loads(r.stdout)
    comps = tomllib_load()
    status = 0
    for query, (cpv, value) in got.items():
        atom = query[1:].rsplit("-", 1)[0]
        words = subprocess.run(
            ["bash", "-c", 'f() { eval "local -a MYCMAKEARGS=( ${1} )"; printf "%s\\n" "${MYCMAKEARGS[@]}"; }; f "$1"', "_", value],
            capture_output=True, text=True, check=True,
        ).stdout.splitlines()
        component = next(n for n, c in comps.items() if atom in c.get("packages", {}).get("gentoo", []))
        c = next(c for c in plan["components"] if c["name"] == component)
        want = {s["name"]: s["value"] for s in c["settings"]}
        for w in words:
            m = re.fullmatch(r"-D([^:=]+)(?::[A-Z]+)?=(.*)", w, re.S)
            ok = bool(m) and want.get(m.group(1)) == m.group(2)
            print(f"# package.env {cpv or atom}: cmake gets {w!r}: {'as planned' if ok else 'NOT as planned'}")
            if not ok:
                status = 1
        if not words:
            print(f"# package.env {cpv or atom}: no MYCMAKEARGS reaches the package")
            status = 1
    return status


def tomllib_load():
    import tomllib

    return tomllib.loads((HERE.parents[2] / "crates/rocpack-plan/data/components.toml").read_text())["component"]


if __name__ == "__main__":
    main()
