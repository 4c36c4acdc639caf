#!/usr/bin/env bash
# Benchmark: `rocpack list` and `rocpack scan` reading the largest packages in place — the .debs
# of librocsparse1 and librocblas4 (Debian sid) and the wheels tensorflow-rocm 2.14.0.600 and
# jax-rocm7-pjrt — with a baseline binary (BASE, default `main`) and this checkout's, in one run.
#
# Reports per package, command and binary: peak RSS and wall time (GNU /usr/bin/time -v, warm
# cache, one run each), and whether the JSON output of the two binaries is byte-identical (the
# run fails if it is not: reading in bounded memory must not change what is read).
#
#   bench/packages.sh [BASE]    results also written to bench/results/packages-<date>.txt
#
# ROCPACK_BASE_BIN=path uses an already built baseline binary instead of building BASE.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-main}
scripts/install-deps.sh
corpus=${ROCPACK_CORPUS:-$HOME/.cache/rocpack-corpus}
work=$(mktemp -d "${TMPDIR:-/tmp}/rocpack-bench-packages.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The baseline is built from `git archive BASE` with this checkout's target directory, so the
# dependencies are compiled once; the binary is copied out before this checkout is built.
if [ -n "${ROCPACK_BASE_BIN:-}" ]; then
  cp "$ROCPACK_BASE_BIN" "$work/rocpack-base"
  base_desc="$ROCPACK_BASE_BIN"
else
  mkdir "$work/src"
  git archive "$base" | tar -x -C "$work/src"
  (cd "$work/src" && CARGO_TARGET_DIR="$OLDPWD/target" cargo build --release --locked --quiet -p rocpack)
  cp target/release/rocpack "$work/rocpack-base"
  base_desc="$base ($(git rev-parse --short "$base"))"
fi
cargo build --release --locked --quiet -p rocpack
cp target/release/rocpack "$work/rocpack-new"

# The packages: Debian .debs through the corpus script, wheels through pip.
debs=()
for pkg in librocsparse1 librocblas4; do
  dir=$(scripts/fetch-corpus.sh "$pkg")
  version=${dir##*/"${pkg}"_}
  debs+=("$(ls "$corpus/debs/${pkg}_${version}"_*.deb)")
done
wheels=()
mkdir -p "$corpus/wheels"
for spec in tensorflow-rocm==2.14.0.600 jax-rocm7-pjrt; do
  name=${spec%%==*}
  glob="${name//-/_}-${spec#*==}"
  [ "$spec" = "$name" ] && glob="${name//-/_}-"
  if ! ls "$corpus/wheels/$glob"*.whl >/dev/null 2>&1; then
    pip download --quiet --no-deps "$spec" -d "$corpus/wheels" >&2
  fi
  wheels+=("$(ls "$corpus/wheels/$glob"*.whl | sort -V | tail -n 1)")
done

out=bench/results/packages-$(date -u +%Y-%m-%d).txt
mkdir -p bench/results
exec > >(tee "$out") 2>&1
echo "# rocpack packages benchmark, $(date -u +%FT%TZ), $(nproc) cores, $(uname -r), $(free -g | awk '/^Mem/{print $2}') GiB RAM"
echo "# baseline: $base_desc; new: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo ' + uncommitted changes')"
echo "# TMPDIR=${TMPDIR:-/tmp} ($(df -h --output=fstype,avail "${TMPDIR:-/tmp}" | tail -n 1 | xargs))"
echo
printf '%-58s %-5s %-5s %12s %10s %5s\n' package cmd bin max_rss_kib wall_s exit
status=0
for pkg in "${debs[@]}" "${wheels[@]}"; do
  cat "$pkg" > /dev/null  # warm cache for both binaries alike
  for cmd in list scan; do
    for bin in base new; do
      json="$work/$bin-$cmd-$(basename "$pkg").json"
      set +e
      /usr/bin/time -v -o "$work/time.txt" "$work/rocpack-$bin" "$cmd" --json -q "$pkg" > "$json" 2> "$work/stderr.txt"
      code=$?
      set -e
      rss=$(awk -F': ' '/Maximum resident set size/{print $2}' "$work/time.txt")
      wall=$(awk -F': ' '/Elapsed \(wall clock\)/{print $2}' "$work/time.txt" |
        awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.1f", s }')
      printf '%-58s %-5s %-5s %12s %10s %5s\n' "$(basename "$pkg")" "$cmd" "$bin" "$rss" "$wall" "$code"
      grep -v '^$' "$work/stderr.txt" | head -n 3 | sed 's/^/    stderr: /' || true
    done
    if cmp -s "$work/base-$cmd-$(basename "$pkg").json" "$work/new-$cmd-$(basename "$pkg").json"; then
      echo "    $cmd --json: identical ($(wc -l < "$work/new-$cmd-$(basename "$pkg").json") lines)"
    else
      echo "    $cmd --json: DIFFERENT"
      diff "$work/base-$cmd-$(basename "$pkg").json" "$work/new-$cmd-$(basename "$pkg").json" | head -n 10 || true
      status=1
    fi
  done
done
exit $status
