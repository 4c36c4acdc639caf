#!/usr/bin/env bash
# Benchmark: the cost of searching host ELF files for embedded GPU code (issue 14, part 1).
# Runs a baseline rocpack binary (main) and this tree's in the same run, on the Debian corpus
# of bench/list.sh and bench/scan.sh:
#   1. `rocpack list librocsparse.so.1.0` (1.6 GB; 142 bundles in .hip_fatbin, 3 MB .rodata);
#   2. `rocpack scan -q` over the six unpacked packages of bench/scan.sh (about 6.6 GB);
#   3. `rocpack list` of the same six directories.
# Wall time (hyperfine, warm cache, the two binaries alternating) and CPU time (perf stat
# task-clock, which a machine shared with other jobs disturbs less than wall time).
#
#   bench/embedded.sh BASELINE_BINARY [RUNS]    results also written to
#                                               bench/results/embedded-<date>.txt
set -euo pipefail
bench_name=bench/embedded.sh
. "$(dirname "$0")/lib.sh"
base=${1:?usage: bench/embedded.sh BASELINE_BINARY [RUNS]}
runs=${2:-20}
bench_need hyperfine:hyperfine perf:linux-perf
new=$(mktemp /tmp/rocpack-embedded.XXXXXX)
trap 'rm -f "$new"' EXIT
bench_build_current "$new"
mapfile -t dirs < <(scripts/fetch-corpus.sh "${BENCH_SCAN_PKGS[@]}")
lib=$(bench_corpus_lib)
bench_results embedded

bench_header "embedded-code search benchmark"
echo "# baseline: $base ($(sha256sum "$base" | cut -c1-12)); new: rocpack $(bench_tree_desc)"
echo "# list file: $lib"
printf '# scan dirs:'; printf ' %s' "${dirs[@]}"; echo
echo
echo "## what each finds"
for b in "$base" "$new"; do
  echo "$(basename "$b"): list librocsparse: $("$b" list --json "$lib" | wc -l) rows;" \
    "list of the six dirs: $("$b" list -q --json "${dirs[@]}" | wc -l) rows"
done
bench_warm "$lib"
echo
echo "## 1. list librocsparse.so.1.0, wall time ($runs runs each)"
bench_hyperfine -N --warmup 3 --runs "$runs" -n main "$base list $lib" -n new "$new list $lib"
echo "## 1. CPU time (perf stat -r $runs)"
for b in "$base" "$new"; do
  perf stat -e task-clock -r "$runs" "$b" list "$lib" 2>&1 >/dev/null | grep -E 'task-clock|elapsed' | sed "s|^|$(basename "$b"): |"
done
echo
srun=$(( runs / 4 > 3 ? runs / 4 : 3 ))
echo "## 2. scan -q of the six directories, wall time ($srun runs each)"
bench_hyperfine -N --warmup 1 --runs "$srun" -n main "$base scan -q ${dirs[*]}" -n new "$new scan -q ${dirs[*]}"
echo "## 2. CPU time (perf stat -r $srun)"
for b in "$base" "$new"; do
  perf stat -e task-clock -r "$srun" "$b" scan -q "${dirs[@]}" 2>&1 >/dev/null | grep -E 'task-clock|elapsed' | sed "s|^|$(basename "$b"): |"
done
echo
echo "## 3. list -q of the six directories, wall time ($srun runs each)"
bench_hyperfine -N --warmup 1 --runs "$srun" -n main "$base list -q ${dirs[*]}" -n new "$new list -q ${dirs[*]}"
echo "## 3. CPU time (perf stat -r $srun)"
for b in "$base" "$new"; do
  perf stat -e task-clock -r "$srun" "$b" list -q "${dirs[@]}" 2>&1 >/dev/null | grep -E 'task-clock|elapsed' | sed "s|^|$(basename "$b"): |"
done
