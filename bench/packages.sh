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
bench_name=bench/packages.sh
. "$(dirname "$0")/lib.sh"
base=${1:-main}
scripts/install-deps.sh
corpus=${ROCPACK_CORPUS:-$HOME/.cache/rocpack-corpus}
work=$(mktemp -d "${TMPDIR:-/tmp}/rocpack-bench-packages.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The baseline is built in a worktree of its own (bench/lib.sh: cached, one build per commit).
if [ -n "${ROCPACK_BASE_BIN:-}" ]; then
  cp "$ROCPACK_BASE_BIN" "$work/rocpack-base"
  base_desc="$ROCPACK_BASE_BIN"
else
  bench_build_rev "$base" "$work/rocpack-base"
  base_desc="$base ($(git rev-parse --short "$base"))"
fi
bench_build_current "$work/rocpack-new"

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

bench_results packages
bench_header "rocpack packages benchmark"
echo "# baseline: $base_desc; new: $(bench_tree_desc)"
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
