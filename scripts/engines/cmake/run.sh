#!/usr/bin/env bash
# Developer harness (not CI): configures components' real CMakeLists at the release with the
# initial caches `rocpack plan --format cmake -o DIR` writes, unchanged, and reports how far each
# configure gets and which target list it settles on, next to the planned one.
#
#   scripts/engines/cmake/run.sh [WORK_DIR]
#
# Sources: ROCm/<repo> clones at the rocm-X.Y.Z tag (MIRRORS, default /work/.mirror: the
# directories the `fetch` tool makes, <owner>+<repo>/repo) for 6.2, and Debian sid's source
# packages (orig tarballs, `apt-get source --download-only` through a private sid list with a
# deb-src line) for 6.4. Dependencies: Debian sid's binary packages, extracted with dpkg-deb -x
# into WORK_DIR/sysroot (never installed) and found through CMAKE_PREFIX_PATH. Compiler: clang++-19
# through rocpack-clang++ (see there), with libomp-19-dev and libgtest-dev installed. Nothing is
# compiled for a GPU: only configure runs.
#
# Each configure gets -DCMAKE_PROJECT_INCLUDE_BEFORE=report-targets.cmake (prints every change of
# AMDGPU_TARGETS/GPU_TARGETS and, at the end, the final lists, hip::device's --offload-arch flags
# and how many test/sample executables are configured), plus what the environment needs
# (compiler, HIP_PLATFORM=amd because Debian's hipconfig needs a newer glibc, prefix paths, a local
# googletest for FetchContent). The emitted cache itself is passed unchanged with -C.
set -uo pipefail

work=${1:-${TMPDIR:-/tmp}/rocpack-cmake}
mirrors=${MIRRORS:-/work/.mirror}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
mkdir -p "$work"/{debs,src,apt,emit,build}
sysroot=$work/sysroot
export ROCPACK_SYSROOT=$sysroot

rocpack=${ROCPACK:-}
if [ -z "$rocpack" ]; then
  (cd "$root" && cargo build -q -p rocpack) || exit 2
  rocpack=$root/target/debug/rocpack
fi

# A private apt state for Debian sid with deb-src (its own lists: the shared one may lack deb-src).
apt_dir=${ROCPACK_APT_DIR:-$HOME/.cache/rocpack-apt-engines}
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
printf '%s\n' \
  "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main" \
  "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main" \
  > "$apt_dir/sources.list"
O=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o Dir::Etc::sourceparts=-
   -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o APT::Sandbox::User=root)
if [ ! -e "$apt_dir/lists/.updated" ]; then
  flock "$apt_dir/.lock" apt-get "${O[@]}" update >/dev/null && touch "$apt_dir/lists/.updated"
fi

# Dependencies from Debian sid (6.4 libraries, rocm-cmake 10.1, hip 6.4.3).
debs=(libamdhip64-dev libamdhip64-6 libhiprtc-builtins6 libhiprtc6 libamd-comgr-dev libamd-comgr3
      libhsa-runtime-dev libhsa-runtime64-1 rocm-cmake hipcc rocm-device-libs-21 librocm-smi-dev
      librocm-smi64-1 librocblas-dev librocblas4 librocprim-dev librocrand-dev librocrand1
      libhiprand-dev libhiprand1 libhipblas-dev libhipblas2 libhipblas-common-dev librocsparse-dev
      librocsparse1)
if [ ! -e "$sysroot/.done" ]; then
  (cd "$work/debs" && apt-get "${O[@]}" download "${debs[@]}" >/dev/null) || exit 2
  for f in "$work"/debs/*.deb; do dpkg-deb -x "$f" "$sysroot"; done
  # CMake's HIP language looks for <ROCm root>/lib/cmake/hip-lang; Debian has it under the triplet.
  mkdir -p "$sysroot/usr/lib/cmake" && ln -sfn ../x86_64-linux-gnu/cmake/hip-lang "$sysroot/usr/lib/cmake/hip-lang"
  touch "$sysroot/.done"
fi
echo "sysroot: Debian sid $(for d in "$work"/debs/libamdhip64-dev_*.deb "$work"/debs/rocm-cmake_*.deb; do basename "$d" .deb; done | tr '\n' ' ')"
echo "compiler: $(${ROCPACK_CLANGXX:-clang++-19} --version | head -1); cmake: $(cmake --version | head -1)"

# request|component|source kind|repository or Debian source package|tag
components=(
  "a|rocWMMA|git|ROCm+rocWMMA|rocm-6.2.0"
  "a|composable_kernel|git|ROCm+composable_kernel|rocm-6.2.0"
  "a|rocRAND|git|ROCm+rocRAND|rocm-6.2.0"
  "a|rocFFT|git|ROCm+rocFFT|rocm-6.2.0"
  "a|rocSPARSE|git|ROCm+rocSPARSE|rocm-6.2.0"
  "a|rocBLAS|git|ROCm+rocBLAS|rocm-6.2.0"
  "a|rocSOLVER|git|ROCm+rocSOLVER|rocm-6.2.0"
  "a|MIOpen|git|ROCm+MIOpen|rocm-6.2.0"
  "b|rocRAND|deb|rocrand|"
  "b|rocFFT|deb|rocfft|"
  "b|rocSPARSE|deb|rocsparse|"
  "b|rocBLAS|deb|rocblas|"
  "b|rocSOLVER|deb|rocsolver|"
)
declare -A request=(
  [a]="--gpu gfx1030 --release 6.2"
  [b]="--gpu gfx1100 --gpu gfx90a --release 6.4"
  [c]="--gpu gfx1151 --gpu gfx1201 --release 7.1"
)
for r in "${!request[@]}"; do
  mkdir -p "$work/emit/$r"
  # shellcheck disable=SC2086
  "$rocpack" plan ${request[$r]} --all --format cmake -o "$work/emit/$r" >/dev/null 2>&1
  # shellcheck disable=SC2086
  "$rocpack" plan ${request[$r]} --all --format json > "$work/emit/$r/plan.json"
done

source_dir() {  # kind name tag -> prints the unpacked source directory
  local kind=$1 name=$2 tag=$3 dest
  if [ "$kind" = git ]; then
    dest=$work/src/$name-$tag
    if [ ! -e "$dest/.rocpack-missing" ]; then
      mkdir -p "$dest" && "$here/git-export.py" "$mirrors/$name/repo" "$tag" "$dest" || return 1
    fi
    echo "$dest ($name@$tag $(git --git-dir="$mirrors/$name/repo" rev-parse "$tag^{commit}"), $(wc -l < "$dest/.rocpack-missing") files absent from the mirror)"
  else
    (cd "$work/apt" && ls "$name"_*.orig.tar.* >/dev/null 2>&1 \
      || apt-get "${O[@]}" source --download-only "$name" >/dev/null 2>&1)
    local orig
    orig=$(ls "$work/apt/$name"_*.orig.tar.* 2>/dev/null | grep -v -- '-[a-z]*\.tar' | head -1)
    [ -n "$orig" ] || return 1
    dest=$work/src/$(basename "$orig" | sed 's/\.orig\.tar\..*//')
    if [ ! -e "$dest/CMakeLists.txt" ]; then
      mkdir -p "$dest" && tar -x -C "$dest" --strip-components=1 -f "$orig" || return 1
    fi
    echo "$dest (Debian sid $(basename "$orig"))"
  fi
}

prefix="$sysroot/usr;$sysroot/usr/lib/x86_64-linux-gnu/cmake;$sysroot/usr/share/rocm;$sysroot/usr/share/rocmcmakebuildtools"
for line in "${components[@]}"; do
  IFS='|' read -r r comp kind name tag <<<"$line"
  cache=$work/emit/$r/$comp.cmake
  echo
  echo "== ($r) $comp: rocpack plan ${request[$r]} --all --format cmake"
  if [ ! -e "$cache" ]; then
    echo "   no $comp.cmake emitted"
    continue
  fi
  grep -E '^# (Built for|Not for|'"$comp"': planned)' "$cache" | sed 's/^/   plan: /'
  grep -v '^#' "$cache" | grep -E 'TARGETS|ARCHS' | sed 's/^/   cache: /'
  if ! src=$(source_dir "$kind" "$name" "$tag"); then
    echo "   source: not available ($kind $name $tag)"
    continue
  fi
  echo "   source: $src"
  dir=${src%% *}
  build=$work/build/$r-$comp
  rm -rf "$build"
  env=()
  case "$comp" in
    rocBLAS)  # Tensile from a local clone at the same tag instead of GitHub (pip gets its deps)
      ttag=$tag
      [ "$kind" = deb ] && ttag=$(git --git-dir="$mirrors/ROCm+Tensile/repo" tag | grep -E '^rocm-6\.4\.[0-9]+$' | sort -V | tail -1)
      if [ -n "$ttag" ] && tensile=$(source_dir git ROCm+Tensile "$ttag"); then
        echo "   Tensile: ${tensile#* }"
        env+=(-DTensile_TEST_LOCAL_PATH="${tensile%% *}")
      fi ;;
    rocFFT) env+=(-DSQLITE_USE_SYSTEM_PACKAGE=ON) ;;  # sqlite.org is not reachable
  esac
  CXX="$here/rocpack-clang++" CC=cc timeout 900 cmake -S "$dir" -B "$build" -C "$cache" \
    -DCMAKE_PROJECT_INCLUDE_BEFORE="$here/report-targets.cmake" \
    -DCMAKE_CXX_COMPILER="$here/rocpack-clang++" -DHIP_PLATFORM=amd \
    -DCMAKE_HIP_COMPILER="$here/rocpack-clang++" -DCMAKE_HIP_COMPILER_ROCM_ROOT="$sysroot/usr" \
    -DCMAKE_PREFIX_PATH="$prefix" -DROCM_PATH="$sysroot/usr" \
    -DFETCHCONTENT_SOURCE_DIR_GOOGLETEST=/usr/src/googletest "${env[@]}" \
    > "$build.log" 2>&1
  rc=$?
  # What the cache holds after configure (written even when configure stops).
  grep -E '^(AMDGPU_TARGETS|GPU_TARGETS|GPU_ARCHS)(:[A-Z]+)?=' "$build/CMakeCache.txt" 2>/dev/null \
    | sed 's/^/   CMakeCache.txt: /' | tee -a "$build.log"
  echo "   configure: $([ $rc = 0 ] && echo OK || echo "stopped (exit $rc)")"
  grep -E 'rocpack-(watch|report)' "$build.log" | sed 's/^-- /   /' | uniq | head -14
  if [ $rc != 0 ]; then
    grep -E -A3 '^CMake Error' "$build.log" | head -6 | sed 's/^/   | /'
  fi
  python3 - "$work/emit/$r/plan.json" "$comp" "$build.log" <<'EOF'
import json, re, sys
plan = json.load(open(sys.argv[1]))
c = next(x for x in plan["components"] if x["name"] == sys.argv[2])
log = open(sys.argv[3]).read()
var = c.get("target_variable")
want = c.get("targets") or []
final = dict(re.findall(r"rocpack-report: (\w+)=\[(.*?)\]", log))
cached = dict(re.findall(r"CMakeCache.txt: (\w+)(?::\w+)?=(.*)", log))
def verdict(got):
    if got == want:
        return "the planned list"
    if not want:
        return "the component's default list (nothing planned, so nothing written)"
    return "NOT the planned list"
if var and var in final:
    got = [t for t in final[var].split(";") if t]
    print(f"   {var} after configure: {' '.join(got) or '(empty)'}: {verdict(got)} ({' '.join(want) or 'no target'})")
elif var and var in cached:
    got = [t for t in cached[var].split(";") if t]
    print(f"   {var} in the cache where configure stopped: {' '.join(got) or '(empty)'}: {verdict(got)} ({' '.join(want) or 'no target'})")
elif var:
    print(f"   {var}: not set when configure stopped; planned {' '.join(want) or 'no target'}")
EOF
done
