#!/usr/bin/env bash
# Benchmark: `rocpack plan --all` for every release and output format, against the target of
# issue 13 (a whole-stack plan under 100 ms). The requests are the three of the issue: gfx1030 at
# 6.2, gfx1100 + gfx90a at 6.4, gfx1151 + gfx1201 at 7.1, plus gfx1030 at 6.0 and 7.0.
#
# hyperfine, warm (the binary and its embedded knowledge base are one file), output discarded,
# --ignore-failure (a plan with an open error exits 1). Results go to bench/results/plan.md with
# the mean, and the verdict against 100 ms.
#
#   bench/plan.sh [RUNS]     RUNS defaults to 20
set -euo pipefail
bench_name=bench/plan.sh
. "$(dirname "$0")/lib.sh"
runs=${1:-20}
bench_need hyperfine:hyperfine jq:jq

work=$(mktemp -d /tmp/rocpack-bench-plan.XXXXXX)
trap 'rm -rf "$work"' EXIT
bench_build_current "$work/rocpack"

requests=(
  "--gpu gfx1030 --release 6.0"
  "--gpu gfx1030 --release 6.2"
  "--gpu gfx1100 --gpu gfx90a --release 6.4"
  "--gpu gfx1030 --release 7.0"
  "--gpu gfx1151 --gpu gfx1201 --release 7.1"
)
formats=(text json cmake spack gentoo nix therock)
out=bench/results/plan.md
{
  echo "# rocpack plan --all: mean wall time (hyperfine, $runs runs, warm), $(date -u +%F)"
  echo
  echo "Target: under 100 ms for every request and format (issue 13). \`$(uname -m)\`, $(nproc) cores."
  echo
  echo "| request | format | mean | max | verdict |"
  echo "|---|---|---|---|---|"
} > "$out"
worst=0
for r in "${requests[@]}"; do
  for f in "${formats[@]}"; do
    arg="--format $f"
    [ "$f" = text ] && arg=""
    hyperfine --shell=none --ignore-failure --warmup 3 --runs "$runs" --style none \
      --export-json "$work/h.json" "$work/rocpack plan $r --all $arg" >/dev/null
    mean=$(jq '.results[0].mean * 1000' "$work/h.json")
    max=$(jq '.results[0].max * 1000' "$work/h.json")
    verdict=$(awk -v m="$max" 'BEGIN { print (m < 100 ? "met" : "MISSED") }')
    printf '| `%s --all` | %s | %.1f ms | %.1f ms | %s |\n' "$r" "$f" "$mean" "$max" "$verdict" >> "$out"
    worst=$(awk -v a="$worst" -v b="$max" 'BEGIN { print (b > a ? b : a) }')
  done
done
printf '\nSlowest single run: %.1f ms.\n' "$worst" >> "$out"
cat "$out"
