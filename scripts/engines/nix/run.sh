#!/usr/bin/env bash
# Developer harness (not CI: it needs the nixpkgs copies read with read_file and a fetched
# nix-community/nixpkgs.lib mirror). For each request it emits `rocpack plan --format nix` and
# evaluates the overlay unchanged with nix-instantiate --eval --strict against the real nixpkgs
# `lib` and the real rocm-modules files of each ROCm line in scripts/engines/nix/sources.toml
# (harness.nix says what is stubbed). Prints, per request and line, either the refusal nixpkgs
# gives (the overlay's guard, an evaluation error) or, per overridden attribute, the version and
# the cmakeFlags entries that carry targets and options.
#
#   scripts/engines/nix/run.sh            # the three requests of issue 13 and the added ones
#   ROCPACK=path/to/rocpack run.sh        # another rocpack binary (e.g. an older build)
#
# Environment: ROCPACK_NIXPKGS_CACHE (default ~/.cache/rocpack-nixpkgs/files),
# NIXPKGS_LIB_MIRROR (default /work/.mirror/nix-community+nixpkgs.lib/repo).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
cache=${ROCPACK_NIXPKGS_CACHE:-$HOME/.cache/rocpack-nixpkgs/files}
mirror=${NIXPKGS_LIB_MIRROR:-/work/.mirror/nix-community+nixpkgs.lib/repo}
rocpack=${ROCPACK:-$root/target/debug/rocpack}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The copies must be the ones the manifest records (extract.py checks every sha256).
python3 "$here/extract.py" --check

lib_commit=$(python3 -c 'import sys,tomllib; print(tomllib.load(open(sys.argv[1],"rb"))["lib"]["commit"])' "$here/sources.toml")
mkdir -p "$work/lib"
git --git-dir="$mirror" archive "$lib_commit" lib | tar -x -C "$work/lib"
echo "lib: nix-community/nixpkgs.lib $lib_commit"

# One tree per line that has a scope file (its own or a stand-in): "line<TAB>clr stand-in version".
python3 - "$here/sources.toml" "$cache" "$work" > "$work/trees.tsv" <<'EOF'
import shutil, sys, tomllib
from pathlib import Path
m = tomllib.load(open(sys.argv[1], "rb"))
cache, work = Path(sys.argv[2]), Path(sys.argv[3])
versions = {l["line"]: l["version"] for l in m["line"]}
for line in versions:
    files = [f for f in m["file"] if f["role"] != "rule"
             and (f["line"] == line or line in f.get("stand_in_for", []))]
    # Without a clr file the overlay's guard cannot be evaluated (the 6.0 set: scope only).
    if not any(f["role"] == "scope" for f in files) or not any(f["attr"] == "clr" for f in files):
        continue
    for f in files:
        dest = work / f"tree-{line}" / f["path"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cache / f["commit"] / f["path"], dest)
        how = f"stand-in from {f['line']}" if f["line"] != line else "read"
        print(f"# {line}: {f['path']} @ {f['commit']} ({how})", file=sys.stderr)
    clr = [f for f in files if f["attr"] == "clr"]
    stand_in = versions[line] if clr and clr[0]["line"] != line else ""
    scope = next(f for f in files if f["role"] == "scope")
    print(f"{line}\t{work / f'tree-{line}' / scope['path']}\t{stand_in}")
EOF

requests=(
  "a|--gpu gfx1030 --release 6.2"
  "b|--gpu gfx1100 --gpu gfx90a --release 6.4"
  "c|--gpu gfx1151 --gpu gfx1201 --release 7.1"
  "d|--gpu gfx1030 --release 6.4"
  "e|--gpu gfx90a --gpu gfx942 --release 6.4"
)
for r in "${requests[@]}"; do
  name=${r%%|*}
  args=${r#*|}
  overlay="$work/$name.nix"
  # shellcheck disable=SC2086
  # Exit 1 means the plan has an open error (e.g. nixpkgs has no such ROCm line); the overlay is
  # still written and evaluated: that is what nixpkgs is asked to refuse.
  "$rocpack" plan $args --all --format nix > "$overlay" || [ $? -eq 1 ]
  attrs=$(grep -oE '^ +[A-Za-z_][A-Za-z0-9_-]* = rprev\.' "$overlay" | sed -E 's/^ +//; s/ = rprev\.//' | sort -u | sed 's/.*/"&"/' | tr '\n' ' ')
  while IFS=$'\t' read -r line scope stand_in; do
    echo "== ($name) rocpack plan $args --all --format nix | nixpkgs $line"
    [ -n "$stand_in" ] && echo "   (clr file of an earlier line; its version set to $stand_in before the overlay runs)"
    extra=()
    [ -n "$stand_in" ] && extra=(--argstr clrVersion "$stand_in")
    if out=$(nix-instantiate --eval --strict --json "$here/harness.nix" \
        --arg libPath "$work/lib/lib" --arg scopeFile "$scope" --arg overlayFile "$overlay" \
        --arg attrs "[ $attrs ]" "${extra[@]}" 2>"$work/err"); then
      python3 - "$out" <<'EOF'
import json, re, sys
r = json.loads(sys.argv[1])
print(f"   evaluated; rocmPackages.clr.version = {r['clr']}")
for name, p in sorted(r["packages"].items()):
    if not p["evaluated"]:
        print(f"   {name}: not evaluated here (its file was not read)")
        continue
    keep = [f for f in p["cmakeFlags"] if re.search(r"TARGETS|ARCHS|COMPOSABLEKERNEL", f)]
    extra = {k: p[k] for k in ("anyGfx9Target", "anyMfmaTarget", "broken") if k in p}
    print(f"   {name} {p['version']}: {' '.join(keep)} {extra}")
EOF
    else
      grep -v "build-users-group" "$work/err" | sed -n '1,3s/^/   /p'
    fi
  done < "$work/trees.tsv"
done
