#!/usr/bin/env bash
# Developer harness (not CI: it needs a clone of ROCm/TheRock): emits the TheRock initial cache for
# each request of issue 13 and configures TheRock's real top-level CMakeLists with it, unchanged,
# at the commit of the TheRock snapshot the request's release cites (rocm-X.Y.toml
# `therock_snapshot`, whose commit data/engines/therock.toml records). Then it compares what TheRock settled
# on with the plan: the per-architecture targets, each planned component's GPU_TARGETS (from the
# toolchain file TheRock writes per sub-project) and MIOpen's -DMIOPEN_USE_COMPOSABLEKERNEL.
#
#   scripts/engines/therock/run.sh THEROCK_GIT_DIR [WORK_DIR]
#
# THEROCK_GIT_DIR: a clone (or bare mirror) of ROCm/TheRock. WORK_DIR (default
# ${TMPDIR:-/tmp}/rocpack-therock): where the checkout and build trees go.
#
# Without submodules: the sub-project source trees are empty directories, as in a fresh clone.
# TheRock's configure reads one file from a submodule before target selection,
# rocm-systems/projects/hip/VERSION (only for a status line and the HIP version it passes on); it
# is written from version.json. Needs cmake >= 3.25, ninja, python3, patchelf and meson (TheRock
# checks for the last two with THEROCK_BUNDLE_SYSDEPS=ON, its default).
set -euo pipefail

git_dir=${1:?usage: run.sh THEROCK_GIT_DIR [WORK_DIR]}
work=${2:-${TMPDIR:-/tmp}/rocpack-therock}
root=$(cd "$(dirname "$0")/../../.." && pwd)
facts=$root/crates/rocpack-plan/data/engines/therock.toml

# The commit of the snapshot a release cites.
commit_of() {
  local sid
  sid=$(sed -n 's/^therock_snapshot = "\(.*\)"$/\1/p' "$root/crates/rocpack-plan/data/rocm-$1.toml")
  sed -n "/^\[facts.\"$sid\"\]$/,/^commit = /s/^commit = \"\([0-9a-f]\{40\}\)\"$/\1/p" "$facts"
}

rocpack=${ROCPACK:-}
if [ -z "$rocpack" ]; then
  (cd "$root" && cargo build -q -p rocpack)
  rocpack=$root/target/debug/rocpack
fi

# An export of TheRock at a commit, without submodules: the sub-project source directories are
# empty; rocm-systems/projects/hip/VERSION, read before target selection, is written from
# version.json.
checkout() {
  local commit=$1 src=$work/therock-${1:0:8}
  if [ ! -e "$src/CMakeLists.txt" ]; then
    mkdir -p "$src" && git --git-dir="$git_dir" archive "$commit" | tar -x -C "$src"
  fi
  if [ ! -e "$src/rocm-systems/projects/hip/VERSION" ]; then
    local v major minor patch
    v=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["rocm-version"])' "$src/version.json")
    IFS=. read -r major minor patch <<<"$v"
    mkdir -p "$src/rocm-systems/projects/hip"
    printf '#HIP_VERSION_MAJOR\n%s\n#HIP_VERSION_MINOR\n%s\n#HIP_VERSION_PATCH\n%s\n' \
      "$major" "$minor" "${patch:-0}" > "$src/rocm-systems/projects/hip/VERSION"
  fi
  echo "$src"
}

echo "cmake: $(cmake --version | head -1)"

requests=(
  "a|--gpu gfx1030 --release 6.2"
  "b|--gpu gfx1100 --gpu gfx90a --release 6.4"
  "c|--gpu gfx1151 --gpu gfx1201 --release 7.1"
)
[ -n "${ROCPACK_EXTRA_REQUESTS:-}" ] && IFS=';' read -r -a extra <<<"$ROCPACK_EXTRA_REQUESTS" && requests+=("${extra[@]}")

status=0
for r in "${requests[@]}"; do
  name=${r%%|*}
  args=${r#*|}
  out=$work/$name
  release=$(sed -n 's/.*--release \([0-9.]*\).*/\1/p' <<<"$args")
  commit=$(commit_of "$release")
  [ -n "$commit" ] || { echo "run.sh: no extracted commit for ROCm $release's snapshot" >&2; exit 2; }
  src=$(checkout "$commit")
  rm -rf "$out"
  mkdir -p "$out/emit"
  # shellcheck disable=SC2086
  "$rocpack" plan $args --all --format therock -o "$out/emit" >/dev/null
  # shellcheck disable=SC2086
  "$rocpack" plan $args --all --for therock --format json > "$out/plan.json"
  echo
  echo "== ($name) rocpack plan $args --all --format therock"
  grep -v '^#' "$out/emit/therock.cmake" | sed 's/^/   cache: /'
  echo "   TheRock $commit ($(git --git-dir="$git_dir" log -1 --format=%cs "$commit"), version.json $(tr -d ' \n' < "$src/version.json"))"
  echo "   \$ cmake -G Ninja -C therock.cmake -S <TheRock@${commit:0:8}> -B build"
  if cmake -G Ninja -C "$out/emit/therock.cmake" -S "$src" -B "$out/build" > "$out/configure.log" 2>&1; then
    echo "   configure: OK ($(tail -1 "$out/configure.log"))"
  else
    echo "   configure: FAILED"
    status=1
  fi
  grep -E -A1 'CMake (Error|Warning) at' "$out/configure.log" | grep -v '^--$' | sed 's/^/   | /' | head -20
  sed -n '/Configured AMDGPU Targets:/,/Dist bundle/p;/Implicitly enabled features/p' "$out/configure.log" | sed 's/^/   | /'
  python3 - "$out" <<'EOF'
import json, pathlib, re, sys
out = pathlib.Path(sys.argv[1])
plan = json.loads((out / "plan.json").read_text())
build = out / "build"
toolchains = {p.parent.name: p for p in build.rglob("_toolchain.cmake")}
renames = {"RCCL": "rccl", "clr": "hip-clr", "llvm": "amd-llvm", "comgr": "amd-comgr"}
bad = 0
for c in plan["components"]:
    sub = renames.get(c["name"], c["name"])
    tc = toolchains.get(sub)
    if tc is None:
        continue
    m = re.search(r"^set\(GPU_TARGETS (.*?) CACHE", tc.read_text(), re.M)
    got = sorted(set((m.group(1) if m else "").split(";")) - {""})
    if c.get("status") != "build":
        bad += 1
        print(f"   differs: {c['name']}: plan: not built; TheRock configures it, GPU_TARGETS {' '.join(got) or '(none)'}")
        continue
    if c.get("targets") is None:
        continue
    want = sorted({t.split(":")[0] for t in c["targets"]})
    if got != want:
        bad += 1
        print(f"   differs: {c['name']}: plan {' '.join(want) or '(none)'}, TheRock GPU_TARGETS {' '.join(got) or '(none)'}")
ninja = (build / "build.ninja").read_text() if (build / "build.ninja").exists() else ""
ck = sorted(set(re.findall(r"-DMIOPEN_USE_COMPOSABLEKERNEL=(\w+)", ninja)))
planned = [s["value"] for c in plan["components"] if c["name"] == "MIOpen"
           for s in c.get("settings", []) if s["name"] == "MIOPEN_USE_COMPOSABLEKERNEL"]
same = "same" if planned == ck else "differs"
print(f"   MIOpen: plan MIOPEN_USE_COMPOSABLEKERNEL={','.join(planned) or '-'}, TheRock passes {','.join(ck) or '-'} ({same})")
print(f"   per-component GPU_TARGETS: {len([1 for _ in toolchains])} toolchain files, {bad} components differ from the plan")
EOF
done
exit $status
