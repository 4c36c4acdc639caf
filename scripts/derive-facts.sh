#!/usr/bin/env bash
# Derives each ROCm component's build facts (GPU target lists and precedence, options, dependencies,
# composable_kernel's instance directories) from its own sources with rocpack-derive, which evaluates
# the component's CMakeLists with rocpack's CMake interpreter.
#
#   scripts/derive-facts.sh                  download Debian sid's source packages, derive, write
#                                            crates/rocpack-plan/data/derived/debian/<component>.toml
#   scripts/derive-facts.sh --out DIR        the same, writing DIR/<component>.toml instead (the drift
#                                            test compares those with the committed files)
#   scripts/derive-facts.sh --download-only  only download and unpack them; prints one line per
#                                            package: "<component> <source>_<version> <dir>"
#   scripts/derive-facts.sh --upstream GIT_DIR TAG COMPONENT [OWNER/NAME]
#                                            derive from an upstream tag of a git directory (a bare
#                                            mirror is fine) into data/derived/upstream/<component>-<tag>.toml;
#                                            OWNER/NAME (cited in the origin) defaults to the remote's
#                                            URL or a mirror directory named OWNER+NAME
#
# Source packages go to ~/.cache/rocpack-corpus/src (ROCPACK_CORPUS overrides the cache), apt's
# state for them to ~/.cache/rocpack-apt-src (ROCPACK_APT_SRC_DIR). Exit status 3 means the Debian
# mirror could not be reached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
out_dir="$repo/crates/rocpack-plan/data/derived"

# Debian source package -> component name as rocpack's knowledge base spells it. Debian sid has
# no rocwmma or composable-kernel source package; those are derived from upstream tags only.
components=(
  rocblas:rocBLAS
  rocrand:rocRAND
  rocsparse:rocSPARSE
  rocfft:rocFFT
  rocsolver:rocSOLVER
  hipblaslt:hipBLASLt
  miopen:MIOpen
  migraphx:MIGraphX
  rocprim:rocPRIM
  hipcub:hipCUB
  rocthrust:rocThrust
  hipblas:hipBLAS
  hipsparse:hipSPARSE
  hiprand:hipRAND
  hipfft:hipFFT
  hipsolver:hipSOLVER
)

# What every derivation assumes about the build: the ROCm compiler (Debian's rules export
# CXX=hipcc; hipcc drives clang, so CMake reports the Clang compiler id).
common_sets=(--set CMAKE_CXX_COMPILER=/usr/bin/hipcc --set CMAKE_CXX_COMPILER_ID=Clang)

# Inputs packagers pass for one component (Spack's and Debian's recipes pass these).
component_sets() {
  case "$1" in
    # Its default backend comes from a compiler check (HAS_HIP), unknown here.
    MIOpen) echo --set MIOPEN_BACKEND=HIP ;;
    # check_cxx_compiler_flag("--cuda-host-only -x hip" HAS_HIP) compiles a test program; hipcc
    # (the compiler assumed above) accepts those flags, so the check passes and the GPU backend,
    # where GPU_TARGETS is read, is configured.
    MIGraphX) echo --set HAS_HIP=ON ;;
  esac
}

derive_bin() {
  if [ -n "${ROCPACK_DERIVE:-}" ]; then
    echo "$ROCPACK_DERIVE"
  else
    cargo build -q --release -p rocpack-derive --manifest-path "$repo/Cargo.toml" >&2
    echo "${CARGO_TARGET_DIR:-$repo/target}/release/rocpack-derive"
  fi
}

if [ "${1:-}" = "--upstream" ]; then
  [ $# -ge 4 ] && [ $# -le 5 ] || { echo "usage: $0 --upstream GIT_DIR TAG COMPONENT [OWNER/NAME]" >&2; exit 2; }
  git_dir=$2 tag=$3 component=$4 repo_name=${5:-}
  commit=$(git --git-dir="$git_dir" rev-parse "$tag^{commit}")
  [ -n "$repo_name" ] || repo_name=$(git --git-dir="$git_dir" config --get remote.origin.url 2>/dev/null |
    sed -E 's#.*github.com[:/]##; s#\.git$##' || true)
  if [ -z "$repo_name" ]; then
    mirror=$(basename "$(dirname "$(cd "$git_dir" && pwd)")")
    case "$mirror" in *+*) repo_name=${mirror/+//} ;; *) repo_name="ROCm/$component" ;; esac
  fi
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # Mirrors may lack their largest blobs (git archive then fails): write every blob present,
  # note how many are absent.
  absent=$(python3 - "$git_dir" "$commit" "$work" <<'PY'
import os, subprocess, sys
git_dir, commit, out = sys.argv[1:4]
git = ["git", "--git-dir=" + git_dir]
tree = subprocess.run(git + ["ls-tree", "-r", "-z", commit], check=True, capture_output=True).stdout
entries = []
for rec in tree.split(b"\0"):
    if not rec:
        continue
    meta, path = rec.split(b"\t", 1)
    mode, kind, sha = meta.split()
    if kind == b"blob" and mode != b"120000":
        entries.append((sha, path))
cat = subprocess.Popen(git + ["cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
absent = 0
for sha, path in entries:
    # One object at a time: writing every request first would fill both pipes.
    cat.stdin.write(sha + b"\n")
    cat.stdin.flush()
    header = cat.stdout.readline().split()
    if len(header) < 3 or header[1] == b"missing":
        absent += 1
        continue
    data = cat.stdout.read(int(header[2]))
    cat.stdout.read(1)
    dest = os.path.join(out.encode(), path)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "wb") as f:
        f.write(data)
cat.stdin.close()
cat.wait()
print(absent)
PY
)
  note=()
  [ "$absent" -gt 0 ] && note=(--note "$absent files of the tag are absent from the mirror used (its largest blobs); CMake files were all present unless listed in not_evaluated")
  mkdir -p "$out_dir/upstream"
  bin=$(derive_bin)
  "$bin" "$work" --component "$component" --origin "upstream:$repo_name@$tag $commit" "${note[@]}" "${common_sets[@]}" \
    $(component_sets "$component") \
    -o "$out_dir/upstream/$component-$tag.toml"
  exit 0
fi

download_only=false
debian_out="$out_dir/debian"
case "${1:-}" in
  --download-only) download_only=true ;;
  --out) [ $# -eq 2 ] || { echo "usage: $0 --out DIR" >&2; exit 2; }; debian_out=$2 ;;
  "") ;;
  *) echo "usage: $0 [--download-only | --out DIR | --upstream GIT_DIR TAG COMPONENT [OWNER/NAME]]" >&2; exit 2 ;;
esac

# Source packages need a deb-src line, in an apt state of their own (see apt-env.sh).
export ROCPACK_APT_DEB_SRC=1
export ROCPACK_APT_DIR=${ROCPACK_APT_SRC_DIR:-$HOME/.cache/rocpack-apt-src}
# shellcheck source=scripts/apt-env.sh
. "$here/apt-env.sh"
apt_lock
apt_refresh derive-facts
src="$corpus/src"
mkdir -p "$src"

lines=()
missing=()
for entry in "${components[@]}"; do
  pkg=${entry%%:*} component=${entry#*:}
  version=$(apt_source_version "$pkg")
  if [ -z "$version" ]; then
    echo "derive-facts: source package $pkg is not in Debian sid" >&2
    exit 1
  fi
  dir="$src/${pkg}_${version//:/%3a}"
  if [ ! -f "$dir/.complete" ]; then
    dl="$src/dl/${pkg}_${version//:/%3a}"
    mkdir -p "$dl"
    # The mirror may serve only some of a source package's files (the orig tarballs but not the
    # .dsc or the Debian tarball): apt-get keeps what it fetched and checked, and fails.
    (cd "$dl" && apt-get "${O[@]}" -qq source --download-only "$pkg=$version" > /dev/null 2>&1) || true
    rm -rf "$dir.tmp"
    dsc=$(ls "$dl"/*.dsc 2> /dev/null | head -n 1 || true)
    debian_tar=$(ls "$dl"/*.debian.tar.* 2> /dev/null | head -n 1 || true)
    if [ -n "$dsc" ] && [ -n "$debian_tar" ]; then
      dpkg-source --no-check -q -x "$dsc" "$dir.tmp" > /dev/null
    else
      orig=$(ls "$dl/${pkg}_"*.orig.tar.* 2> /dev/null | head -n 1 || true)
      if [ -z "$orig" ]; then
        echo "derive-facts: skipped $pkg $version: the Debian mirror served none of its source tarballs" >&2
        missing+=("$pkg")
        continue
      fi
      # What dpkg-source does for a 3.0 (quilt) package, without the Debian patches.
      mkdir -p "$dir.tmp"
      tar -xf "$orig" -C "$dir.tmp" --strip-components=1
      for extra in "$dl/${pkg}_"*.orig-*.tar.*; do
        [ -e "$extra" ] || continue
        name=${extra##*.orig-}
        name=${name%%.tar.*}
        mkdir -p "$dir.tmp/$name"
        tar -xf "$extra" -C "$dir.tmp/$name" --strip-components=1
      done
      echo "Debian patches not applied: the mirror did not serve ${pkg}_${version#*:}'s .dsc and Debian tarball; derived from $(basename "$orig")" \
        > "$dir.tmp/.rocpack-note"
    fi
    touch "$dir.tmp/.complete"
    rm -rf "$dir"
    mv "$dir.tmp" "$dir"
  fi
  lines+=("$component ${pkg}_$version $dir")
done

if [ ${#lines[@]} -eq 0 ]; then
  echo "derive-facts: cannot download any source package from the Debian mirror" >&2
  exit 3
fi

if $download_only; then
  printf '%s\n' "${lines[@]}"
  exit 0
fi

bin=$(derive_bin)
mkdir -p "$debian_out"
for line in "${lines[@]}"; do
  read -r component pv dir <<< "$line"
  note=()
  [ -f "$dir/.rocpack-note" ] && note=(--note "$(cat "$dir/.rocpack-note")")
  "$bin" "$dir" --component "$component" --origin "debian:${pv/_/ }" "${note[@]}" \
    "${common_sets[@]}" $(component_sets "$component") --set CMAKE_INSTALL_PREFIX=/usr \
    -o "$debian_out/$component.toml"
done
